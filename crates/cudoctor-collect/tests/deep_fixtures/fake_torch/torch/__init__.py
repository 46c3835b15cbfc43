"""A stand-in for torch, for testing cudoctor's probe script without a GPU or a real torch.

It imitates only the API surface the probe touches, with made-up but plausible numbers. Behaviour
is set by environment variables:
  FAKE_TORCH_GPUS=N        N fake H200s (0: a CPU-only build, torch.version.cuda is None)
  FAKE_TORCH_NO_FLASH=1    the flash backend refuses, with a warning giving the reason
  FAKE_TORCH_NO_TRITON=1   torch.compile runs eagerly (no Triton kernel)
  FAKE_TORCH_NCCL_FAIL=1   init_process_group raises like a broken NCCL
  FAKE_TORCH_CRASH_AT=stage  os.abort() when the probe reaches that stage ("sdpa", "compile")
This package is test data, never shipped.
"""

import math
import os
import sys
import types
import warnings

__version__ = "2.11.0+cu130" if int(os.environ.get("FAKE_TORCH_GPUS", "0")) > 0 else "2.11.0+cpu"
_GPUS = int(os.environ.get("FAKE_TORCH_GPUS", "0"))


def _module(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m


def _maybe_crash(stage):
    if os.environ.get("FAKE_TORCH_CRASH_AT") == stage:
        os.abort()


# -- tensors ------------------------------------------------------------------------------------

float32, float16, bfloat16 = "float32", "float16", "bfloat16"
_PROFILING = []  # lists collecting event names while a profiler is active


def _record(name, device_type="DeviceType.CUDA"):
    for events in _PROFILING:
        events.append(_Event(name, device_type))


class Tensor:
    def __init__(self, value, shape=(1,), dtype=float32):
        self.value = value
        self.shape = tuple(shape)
        self.dtype = dtype

    def __matmul__(self, other):
        _record("ampere_sgemm_128x64_nn")
        return Tensor(self.value * other.value * self.shape[-1], self.shape, self.dtype)

    def __eq__(self, other):
        v = other.value if isinstance(other, Tensor) else other
        return Tensor(self.value == v, self.shape, "bool")

    def __mul__(self, other):
        v = other.value if isinstance(other, Tensor) else other
        return Tensor(self.value * v, self.shape, self.dtype)

    def __add__(self, other):
        v = other.value if isinstance(other, Tensor) else other
        return Tensor(self.value + v, self.shape, self.dtype)

    __hash__ = object.__hash__

    def item(self):
        return self.value

    def fill_(self, v):
        self.value = v
        return self


def _shape(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def ones(*shape, device=None, dtype=float32):
    return Tensor(1.0, _shape(shape), dtype)


def randn(*shape, device=None, dtype=float32):
    return Tensor(0.5, _shape(shape), dtype)


def tensor(values, device=None, dtype=float32):
    return Tensor(float(values[0]), (len(values),), dtype)


def all(t):  # noqa: A001 - torch's name
    return Tensor(bool(t.value), (1,), "bool")


def allclose(a, b, atol=0.0, rtol=0.0):
    return abs(a.value - b.value) <= atol + rtol * abs(b.value)


def sin(t):
    return Tensor(math.sin(t.value), t.shape, t.dtype)


def cos(t):
    return Tensor(math.cos(t.value), t.shape, t.dtype)


class device:  # noqa: N801 - torch's name
    def __init__(self, kind, index=None):
        self.kind, self.index = kind, index


def get_float32_matmul_precision():
    return "highest"


# -- torch.version, backends -----------------------------------------------------------------------

version = _module("torch.version")
version.cuda = "13.0" if _GPUS else None
version.hip = None

backends = _module("torch.backends")
backends.cudnn = _module("torch.backends.cudnn")
backends.cudnn.version = lambda: 91900 if _GPUS else None
backends.cudnn.enabled = True
backends.cudnn.allow_tf32 = True
backends.cudnn.is_available = lambda: bool(_GPUS)
backends.cuda = _module("torch.backends.cuda")
backends.cuda.matmul = types.SimpleNamespace(allow_tf32=False)
_SDP = {"flash": True, "mem_efficient": True, "cudnn": True, "math": True}
for _name in list(_SDP):
    setattr(backends.cuda, "%s_sdp_enabled" % _name, (lambda n: lambda: _SDP[n])(_name))
    setattr(backends.cuda, "enable_%s_sdp" % _name, (lambda n: lambda on: _SDP.__setitem__(n, bool(on)))(_name))


# -- torch.cuda -------------------------------------------------------------------------------------

cuda = _module("torch.cuda")
cuda.nccl = _module("torch.cuda.nccl")


def _nccl_version():
    if not _GPUS:
        raise RuntimeError("torch.cuda.nccl is not available in a CPU build")
    return (2, 28, 9)


cuda.nccl.version = _nccl_version


def _is_available():
    if not _GPUS:
        return False
    return True


cuda.is_available = _is_available
cuda.device_count = lambda: _GPUS
cuda.get_arch_list = lambda: ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"] if _GPUS else []


def _init():
    if not _GPUS:
        raise AssertionError("Torch not compiled with CUDA enabled")


cuda.init = _init
cuda.get_device_properties = lambda i: types.SimpleNamespace(
    name="NVIDIA H200", major=9, minor=0, total_memory=150754820096
)
cuda.mem_get_info = lambda i=0: (148000000000, 150754820096)
cuda.synchronize = lambda device=None: None
cuda.empty_cache = lambda: None
cuda.set_device = lambda i: None
cuda.memory_allocated = lambda: 0
_PEAK = [0]
cuda.reset_peak_memory_stats = lambda: _PEAK.__setitem__(0, 0)
cuda.max_memory_allocated = lambda: _PEAK[0]


class _DeviceContext:
    def __init__(self, dev):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


cuda.device = _DeviceContext


class _CudaEvent:
    _last_ms = [0.05]

    def __init__(self, enable_timing=False):
        pass

    def record(self):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return _CudaEvent._last_ms[0]


cuda.Event = _CudaEvent


# -- attention --------------------------------------------------------------------------------------

nn = _module("torch.nn")
nn.functional = _module("torch.nn.functional")
nn.attention = _module("torch.nn.attention")


class SDPBackend:
    ERROR, MATH, FLASH_ATTENTION, EFFICIENT_ATTENTION, CUDNN_ATTENTION, OVERRIDEABLE = (
        "ERROR", "MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "OVERRIDEABLE",
    )


nn.attention.SDPBackend = SDPBackend
_ALLOWED = [None]  # the backends an sdpa_kernel context allows, or None for the global switches


class sdpa_kernel:  # noqa: N801 - torch's name
    def __init__(self, backends):
        self.backends = list(backends)

    def __enter__(self):
        self.saved = _ALLOWED[0]
        _ALLOWED[0] = self.backends
        return self

    def __exit__(self, *exc):
        _ALLOWED[0] = self.saved
        return False


nn.attention.sdpa_kernel = sdpa_kernel

_SWITCH = {"FLASH_ATTENTION": "flash", "EFFICIENT_ATTENTION": "mem_efficient", "CUDNN_ATTENTION": "cudnn", "MATH": "math"}
_OP = {
    "FLASH_ATTENTION": ("aten::_scaled_dot_product_flash_attention", "pytorch_flash::flash_fwd_kernel"),
    "EFFICIENT_ATTENTION": ("aten::_scaled_dot_product_efficient_attention", "fmha_cutlassF_bf16_aligned_64x128_rf_sm80"),
    "CUDNN_ATTENTION": ("aten::_scaled_dot_product_cudnn_attention", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16"),
    "MATH": ("aten::_scaled_dot_product_attention_math", "ampere_bf16_s16816gemm_bf16_128x64"),
}
_MS = {"FLASH_ATTENTION": 0.3, "EFFICIENT_ATTENTION": 0.5, "CUDNN_ATTENTION": 0.15, "MATH": 6.7}


def scaled_dot_product_attention(q, k, v, is_causal=False):
    _maybe_crash("sdpa")
    allowed = _ALLOWED[0]
    order = ["CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"]
    for backend in order:
        if allowed is not None and backend not in allowed:
            continue
        if allowed is None and not _SDP[_SWITCH[backend]]:
            continue
        if backend == "FLASH_ATTENTION" and os.environ.get("FAKE_TORCH_NO_FLASH"):
            warnings.warn("Flash attention kernel not used because: the fake GPU has no flash kernels")
            continue
        op, kernel = _OP[backend]
        _record("aten::scaled_dot_product_attention", "DeviceType.CPU")
        _record(op, "DeviceType.CPU")
        _record(kernel)
        if backend == "MATH":
            _record("softmax_warp_forward")
        seq = q.shape[2]
        scale = (seq / 1024.0) ** (2 if backend == "MATH" else 1)
        _CudaEvent._last_ms[0] = _MS[backend] * scale
        per_elem = 6 * 2 * seq if backend == "MATH" else 2 * 128
        _PEAK[0] = q.shape[0] * q.shape[1] * seq * per_elem
        return Tensor(0.5, q.shape, q.dtype)
    raise RuntimeError("No available kernel. Aborting execution.")


nn.functional.scaled_dot_product_attention = scaled_dot_product_attention


# -- profiler ---------------------------------------------------------------------------------------

profiler = _module("torch.profiler")
profiler.ProfilerActivity = types.SimpleNamespace(CPU="CPU", CUDA="CUDA")


class _Event:
    def __init__(self, name, device_type):
        self.name = name
        self.device_type = device_type


class profile:  # noqa: N801 - torch's name
    def __init__(self, activities=None):
        self._events = []

    def __enter__(self):
        _PROFILING.append(self._events)
        return self

    def __exit__(self, *exc):
        _PROFILING.remove(self._events)
        return False

    def events(self):
        return list(self._events)


profiler.profile = profile


# -- compile ----------------------------------------------------------------------------------------

_dynamo = _module("torch._dynamo")
_dynamo.reset = lambda: None
_dynamo.config = types.SimpleNamespace(suppress_errors=False)
_dynamo.utils = _module("torch._dynamo.utils")
_dynamo.utils.counters = {}
_inductor = _module("torch._inductor")
_inductor.config = _module("torch._inductor.config")
_inductor.config.compile_threads = 8
_inductor.config.fx_graph_cache = True
_inductor.metrics = _module("torch._inductor.metrics")
_inductor.metrics.generated_kernel_count = 0


def _reset_metrics():
    _inductor.metrics.generated_kernel_count = 0


_inductor.metrics.reset = _reset_metrics


def compile(fn, backend="inductor"):  # noqa: A001 - torch's name
    _maybe_crash("compile")
    eager = bool(os.environ.get("FAKE_TORCH_NO_TRITON"))

    def compiled(*args):
        if not eager:
            _inductor.metrics.generated_kernel_count = 1
            _record("triton_poi_fused_add_cos_mul_sin_0")
        return fn(*args)

    return compiled


# -- distributed ------------------------------------------------------------------------------------

distributed = _module("torch.distributed")
distributed.is_available = lambda: True
distributed.is_nccl_available = lambda: bool(_GPUS)
distributed.ReduceOp = types.SimpleNamespace(SUM="sum", MAX="max")
_WORLD = [1]


def _init_process_group(backend, init_method=None, rank=0, world_size=1, timeout=None):
    if os.environ.get("FAKE_TORCH_NCCL_FAIL"):
        raise RuntimeError("NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details)")
    _WORLD[0] = world_size


def _all_reduce(t, op="sum"):
    if op == "sum":
        t.value = t.value * _WORLD[0]
    _CudaEvent._last_ms[0] = 0.003 * max(1, t.shape[0] // 262144)


distributed.init_process_group = _init_process_group
distributed.all_reduce = _all_reduce
distributed.barrier = lambda: None
distributed.destroy_process_group = lambda: None
