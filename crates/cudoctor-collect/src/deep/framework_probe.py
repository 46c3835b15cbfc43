"""cudoctor's runtime probe of one framework other than torch: can it use the GPU?

Run by `cudoctor check --deep` as `python -I -c <this file> FRAMEWORK`, one process per framework
(the names of PROBES, at the end), so a framework that crashes or hangs on import cannot take
the others with it, and a timeout bounds each. It imports the framework, asks it which devices it
uses, runs one tiny computation on its default device and checks the result, and keeps the
framework's own words (exceptions, warnings, log records) when it falls back to the CPU.

Output protocol, as the torch probe's: stdout carries only `@@cudoctor-probe@@ {json}` lines:
  {"event": "stage", "name": ...}          a stage starts (where it hung, if it hangs)
  {"event": "framework", "data": {...}}    the report (written once, at the end)
Anything the process prints itself goes to stderr.

Works with Python 3.8+.
"""

import json
import logging
import math
import os
import re
import sys
import time
import warnings

TAG = "@@cudoctor-probe@@"
MAX_TEXT = 1500
MAX_MESSAGES = 12


def _reserve_stdout():
    try:
        fd = os.dup(1)
        os.dup2(2, 1)
        out = os.fdopen(fd, "w", buffering=1)
        sys.stdout = sys.stderr
        return out
    except (OSError, ValueError):
        return sys.stdout


_OUT = _reserve_stdout()


def emit(event, **fields):
    fields["event"] = event
    try:
        line = json.dumps(fields, allow_nan=False, default=str)
    except (TypeError, ValueError) as e:
        line = json.dumps({"event": "framework", "data": {"error": "unserialisable report: %s" % e}})
    _OUT.write("\n" + TAG + " " + line + "\n")
    _OUT.flush()


def text(e):
    return ("%s: %s" % (type(e).__name__, e))[:MAX_TEXT]


class Messages(logging.Handler):
    """The framework's own warnings and log records (WARNING and above), in order, deduplicated;
    of a multi-line record (a traceback) the first and the last line, which names the error."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.items = []

    def add(self, line):
        line = line.strip()
        if line and line not in self.items and len(self.items) < MAX_MESSAGES:
            self.items.append(line[:MAX_TEXT])

    def emit(self, record):
        try:
            lines = [l for l in record.getMessage().splitlines() if l.strip()]
        except Exception:
            return
        if lines:
            self.add(lines[0])
            self.add(lines[-1])
        if record.exc_info and record.exc_info[1] is not None:
            self.add(text(record.exc_info[1]))


_CAUGHT = {"warnings": []}


def warned(pattern):
    """The first line of the first warning issued so far (in this probe) that `pattern` finds:
    a framework that says why it has no GPU only in a warning at import."""
    for w in _CAUGHT["warnings"]:
        line = str(w.message).strip().split("\n")[0]
        if re.search(pattern, line):
            return line[:MAX_TEXT]
    return None


def timed_ok(fn):
    """Runs the computation twice (the first compiles or loads kernels) and times the second."""
    fn()
    t = time.perf_counter()
    ok = fn()
    return bool(ok), (time.perf_counter() - t) * 1000.0


# -- an exception between two installed distributions ---------------------------------------------

_NO_ATTRIBUTE = re.compile(r"^module '([\w.]+)' has no attribute '(\w+)'")
_CANNOT_IMPORT = re.compile(r"^cannot import name '(\w+)' from '([\w.]+)'")


def _owners(top, cache={}):
    """The distributions that install the top-level module `top` (importlib.metadata, 3.10+)."""
    if "map" not in cache:
        try:
            from importlib.metadata import packages_distributions

            cache["map"] = packages_distributions()
        except Exception:
            cache["map"] = {}
    return sorted(set(cache["map"].get(top, ())))


def _top_level_of(path):
    """The top-level module a file belongs to: its first folder under the sys.path entry it is in."""
    path = os.path.abspath(path)
    best = None
    for entry in sys.path:
        entry = os.path.abspath(entry or ".")
        if path.startswith(entry + os.sep) and (best is None or len(entry) > len(best)):
            best = entry
    if best is None:
        return None
    first = path[len(best) + 1 :].split(os.sep)[0]
    return first[:-3] if first.endswith(".py") else first


def api_gap(e):
    """What one distribution's code asked of another's module that it does not have: the name,
    the module, the file and line that asked, and the distributions owning each side (None when
    the exception is not of that kind). Read from the exception and its traceback, not guessed."""
    message = str(e)
    if isinstance(e, AttributeError):
        m = _NO_ATTRIBUTE.match(message)
        obj = getattr(e, "obj", None)  # 3.10+, where the interpreter raised it
        if m:
            module, missing = m.group(1), m.group(2)
        elif isinstance(obj, type(os)) and getattr(e, "name", None):
            module, missing = obj.__name__, e.name
        else:
            return None
    elif isinstance(e, ImportError) and not isinstance(e, ModuleNotFoundError):
        m = _CANNOT_IMPORT.match(message)
        if not m:
            return None
        missing, module = m.group(1), m.group(2)
    else:
        return None
    frames = []
    tb = e.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    # The innermost frame outside the module's own package: numpy's module __getattr__ raises
    # for a name it no longer has, but the code that asked for it is the caller's.
    module_top = module.split(".")[0]
    asking = [(f, n) for f, n in frames if _top_level_of(f) != module_top]
    if not asking:
        return None
    filename, line = asking[-1]
    user_top = _top_level_of(filename)
    gap = {
        "missing": missing,
        "module": module,
        "module_distributions": _owners(module_top),
        "raised_in": "%s:%d" % (filename, line),
        "raised_in_distributions": _owners(user_top) if user_top else [],
    }
    return gap


# -- JAX ------------------------------------------------------------------------------------------


def probe_jax(report):
    import jax

    report["version"] = jax.__version__
    emit("stage", name="jax devices")
    report["platform"] = jax.default_backend()
    report["devices"] = [str(getattr(d, "device_kind", d)) for d in jax.devices() if getattr(d, "platform", "") != "cpu"]
    if report["platform"] == "cpu":
        try:
            jax.devices("cuda")
        except Exception as e:
            report["gpu_error"] = text(e)
    import jax.numpy as jnp

    def compute():
        x = jnp.arange(16.0, dtype=jnp.float32).reshape(4, 4)
        return float((x @ jnp.eye(4, dtype=jnp.float32)).sum().block_until_ready()) == 120.0

    emit("stage", name="jax computation")
    report["computation_ok"], report["computation_ms"] = timed_ok(compute)


# -- CuPy -----------------------------------------------------------------------------------------


def _cuda_version(n):
    return "%d.%d" % (n // 1000, (n % 1000) // 10) if n else None


def probe_cupy(report):
    import cupy

    report["version"] = cupy.__version__
    rt = cupy.cuda.runtime
    emit("stage", name="cupy devices")
    try:
        report["runtime"] = _cuda_version(rt.runtimeGetVersion())
    except Exception:
        pass
    try:
        count = rt.getDeviceCount()
    except Exception as e:
        report["platform"] = "none"
        report["gpu_error"] = text(e)
        return
    report["platform"] = "cuda" if count else "none"
    for i in range(count):
        name = rt.getDeviceProperties(i).get("name", b"?")
        report["devices"].append(name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name))
    if not count:
        return

    def compute():
        # cuBLAS (the product) and a reduction kernel that NVRTC compiles at first use.
        x = cupy.arange(16, dtype=cupy.float32).reshape(4, 4)
        return float((x @ cupy.eye(4, dtype=cupy.float32)).sum().get()) == 120.0

    emit("stage", name="cupy computation")
    report["computation_ok"], report["computation_ms"] = timed_ok(compute)


# -- ONNX Runtime ---------------------------------------------------------------------------------


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number, payload):
    """One protobuf field: a varint, or length-delimited bytes or text."""
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def add_model():
    """The ONNX model y = x + x over float32[4], encoded by hand (no onnx package needed):
    ModelProto{ir_version 7, graph{Add(x, x) -> y}, opset_import{version 13}}."""
    tensor = _field(1, 1) + _field(2, _field(1, _field(1, 4)))  # elem_type FLOAT, shape [4]

    def value(name):
        return _field(1, name) + _field(2, _field(1, tensor))

    node = _field(1, "x") + _field(1, "x") + _field(2, "y") + _field(4, "Add")
    graph = _field(1, node) + _field(2, "cudoctor") + _field(11, value("x")) + _field(12, value("y"))
    return _field(1, 7) + _field(7, graph) + _field(8, _field(2, 13))


class NativeStderr:
    """Captures what native code writes to fd 2 inside the block (and writes it on to stderr):
    the lines that `pattern` matches (group 1 the severity letter, empty for a line that has
    none; group 2 the text), in `found` as (severity, text), and those with a severity in
    `lines` as "E: text" / "W: text", without colours and timestamps."""

    # ONNX Runtime: "[E:onnxruntime:Default, provider_bridge_ort.cc:2251 TryGetProviderInfo_CUDA] …".
    ONNX_RUNTIME = r"\[([EWF]):onnxruntime:[^\]]*\]\s*(.*)$"
    # glog (PaddlePaddle): "E1205 04:45:33.138350 20169 place.cc:443] text".
    GLOG = r"^([EWF])\d{4} [\d:.]+\s+\d+ [^\]]+\]\s*(.*)$"

    def __init__(self, pattern):
        self.pattern = pattern

    def __enter__(self):
        import tempfile

        self.re = re.compile(self.pattern)
        self.ansi = re.compile(r"\x1b\[[0-9;]*m")
        self.found = []
        self.lines = []
        self.file = tempfile.TemporaryFile()
        sys.stderr.flush()
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        raw = self.file.read().decode("utf-8", "replace")
        self.file.close()
        sys.stderr.write(raw)
        for line in self.ansi.sub("", raw).splitlines():
            m = self.re.search(line)
            if m and len(self.found) < MAX_MESSAGES:
                # ONNX Runtime's "<source file>:<line> <function> [ONNXRuntimeError] : 1 : FAIL : <what>"
                what = m.group(2).strip().split(" : FAIL : ")[-1][:MAX_TEXT]
                self.found.append((m.group(1), what))
                if m.group(1):
                    self.lines.append(("%s: %s" % (m.group(1), what))[:MAX_TEXT])
        return False

    def errors(self):
        """The texts of its error lines, in order."""
        return [t for sev, t in self.found if sev in ("E", "F")]


def probe_onnxruntime(report):
    import onnxruntime as ort

    report["version"] = ort.__version__
    available = list(ort.get_available_providers())
    report["providers_available"] = available
    if "CUDAExecutionProvider" not in available:
        report["platform"] = "cpu"
        report["gpu_error"] = "CUDAExecutionProvider is not among this build's providers %s" % available
    import numpy as np

    options = ort.SessionOptions()
    options.log_severity_level = 2
    wanted = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in available]
    emit("stage", name="onnxruntime session")
    # ONNX Runtime says why a provider failed only in its own log, on fd 2.
    with NativeStderr(NativeStderr.ONNX_RUNTIME) as native:
        session = ort.InferenceSession(add_model(), sess_options=options, providers=wanted)
    report["native_messages"] = native.lines
    used = list(session.get_providers())
    report["providers_used"] = used
    if "CUDAExecutionProvider" in available:
        report["platform"] = "cuda" if "CUDAExecutionProvider" in used else "cpu"
        if report["platform"] == "cpu":
            errors = native.errors()
            report["gpu_error"] = errors[0] if errors else "the session asked for CUDAExecutionProvider and got %s" % used
    x = np.arange(4, dtype=np.float32)

    def compute():
        (y,) = session.run(None, {"x": x})
        return [float(v) for v in y] == [0.0, 2.0, 4.0, 6.0]

    report["computation_ok"], report["computation_ms"] = timed_ok(compute)


# -- TensorFlow -----------------------------------------------------------------------------------


def probe_tensorflow(report):
    import tensorflow as tf

    report["version"] = tf.__version__
    try:
        report["runtime"] = tf.sysconfig.get_build_info().get("cuda_version")
    except Exception:
        pass
    emit("stage", name="tensorflow devices")
    gpus = tf.config.list_physical_devices("GPU")
    report["devices"] = [d.name for d in gpus]
    report["platform"] = "cuda" if gpus else "cpu"
    device = "/GPU:0" if gpus else "/CPU:0"

    def compute():
        with tf.device(device):
            x = tf.reshape(tf.range(16, dtype=tf.float32), (4, 4))
            return float(tf.reduce_sum(tf.matmul(x, tf.eye(4))).numpy()) == 120.0

    emit("stage", name="tensorflow computation")
    report["computation_ok"], report["computation_ms"] = timed_ok(compute)


# -- CTranslate2 ----------------------------------------------------------------------------------


def probe_ctranslate2(report):
    import ctranslate2

    report["version"] = ctranslate2.__version__
    emit("stage", name="ctranslate2 devices")
    # Its own count: 0 where its CUDA runtime finds no device or no driver (it raises nothing).
    count = ctranslate2.get_cuda_device_count()
    report["platform"] = "cuda" if count else "none"
    report["devices"] = ["cuda:%d" % i for i in range(count)]
    if not count:
        report["gpu_error"] = "ctranslate2.get_cuda_device_count() is 0"
        return
    # Its CUDA kernels are reached through a model; what it supports there is its own answer.
    emit("stage", name="ctranslate2 compute types")
    ctranslate2.get_supported_compute_types("cuda")


# -- numba-cuda -----------------------------------------------------------------------------------


def probe_numba_cuda(report):
    import numba
    from numba import cuda

    try:
        import numba_cuda

        report["version"] = numba_cuda.__version__
    except (ImportError, AttributeError):
        report["version"] = numba.__version__
    emit("stage", name="numba-cuda devices")
    if not cuda.is_available():
        report["platform"] = "none"
        # numba's own reason: the driver or device error it met.
        try:
            cuda.cudadrv.driver.driver.get_device_count()
            report["gpu_error"] = "numba.cuda.is_available() is False"
        except Exception as e:
            # Its message spans lines ("Error at driver init: \n\nCUDA driver library cannot be
            # found..."): kept as one.
            report["gpu_error"] = " ".join(text(e).split())
        return
    report["platform"] = "cuda"
    report["devices"] = [str(g.name.decode() if isinstance(g.name, bytes) else g.name) for g in cuda.gpus]
    import numpy as np

    @cuda.jit
    def double(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] *= 2.0

    def compute():
        d = cuda.to_device(np.arange(4, dtype=np.float32))
        double[1, 4](d)
        return [float(v) for v in d.copy_to_host()] == [0.0, 2.0, 4.0, 6.0]

    emit("stage", name="numba-cuda computation")
    report["computation_ok"], report["computation_ms"] = timed_ok(compute)


# -- PaddlePaddle ---------------------------------------------------------------------------------


def probe_paddle(report):
    import paddle

    report["version"] = paddle.__version__
    emit("stage", name="paddle devices")
    compiled = bool(paddle.device.is_compiled_with_cuda())
    if compiled:
        try:
            # "12.6" on a CUDA build ("False" on a CPU build).
            report["runtime"] = str(paddle.version.cuda())
        except Exception:
            pass
    count = paddle.device.cuda.device_count() if compiled else 0
    for i in range(count):
        report["devices"].append(str(paddle.device.cuda.get_device_name(i)))
    if count:
        paddle.set_device("gpu:0")
    elif compiled:
        # A place on a GPU that is not there ends the process (Paddle logs "Cannot use GPU
        # because there is no GPU detected on your machine." and exits): not asked. Its reason
        # is the warning its import gave, when it gave one.
        said = warned(r"GPU|CUDA")
        report["gpu_error"] = said or "paddle.device.cuda.device_count() is 0"
    else:
        # A CPU build says why when a GPU place is asked for: an exception, and its own log
        # line on fd 2 ("Cannot use GPU because you have installed CPU version PaddlePaddle.").
        with NativeStderr(NativeStderr.GLOG) as native:
            try:
                paddle.CUDAPlace(0)
                asked = "paddle.device.is_compiled_with_cuda() is False"
            except Exception as e:
                asked = text(e)
        report["native_messages"] = native.lines
        errors = native.errors()
        report["gpu_error"] = errors[0] if errors else asked
    # Its own name for the device it computes on: "gpu:0" or "cpu".
    report["platform"] = str(paddle.device.get_device()).split(":")[0]

    def compute():
        x = paddle.reshape(paddle.arange(16, dtype="float32"), [4, 4])
        return float(paddle.matmul(x, paddle.eye(4, dtype="float32")).sum().numpy()) == 120.0

    emit("stage", name="paddle computation")
    report["computation_ok"], report["computation_ms"] = timed_ok(compute)


# -- RAPIDS ---------------------------------------------------------------------------------------


def _optional(name):
    """The module `name`, or None when it (or a package above it) is not installed; any other
    failure of its import is raised."""
    import importlib

    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and (name == e.name or name.startswith(e.name + ".")):
            return None
        raise


def probe_rapids(report):
    # Every RAPIDS Python library allocates through RMM; cuDF is the one a probe can compute
    # with. Either may be absent (a RAPIDS C++ library wheel alone, kvikio): what is not
    # installed is not asked.
    rmm = _optional("rmm")
    cudf = _optional("cudf")
    gpu = _optional("rmm._cuda.gpu") if rmm else None
    if rmm is None and cudf is None:
        report["platform"] = "unknown"
        report["computation_skipped"] = "neither RMM nor cuDF is installed: no RAPIDS API to ask"
        return
    report["version"] = (cudf or rmm).__version__
    emit("stage", name="rapids devices")
    if gpu is not None:
        try:
            report["runtime"] = _cuda_version(gpu.runtimeGetVersion())
        except Exception:
            pass
        try:
            count = gpu.getDeviceCount()
        except Exception as e:
            # RMM's own error: "cudaErrorInsufficientDriver: CUDA driver version is insufficient...".
            report["platform"] = "none"
            report["gpu_error"] = text(e)
            return
        report["platform"] = "cuda" if count else "none"
        report["devices"] = [str(gpu.deviceGetName(i)) for i in range(count)]
        if not count:
            report["gpu_error"] = "rmm: the CUDA runtime counts 0 devices"
            return
    emit("stage", name="rapids computation")
    if cudf is not None:

        def compute():
            return float(cudf.Series(list(range(16)), dtype="float32").sum()) == 120.0

    else:
        report["computation_skipped"] = "cuDF is not installed: 16 bytes through an RMM device buffer instead"

        def compute():
            data = bytes(range(16))
            return bytes(rmm.DeviceBuffer.to_device(data).copy_to_host()) == data

    report["computation_ok"], report["computation_ms"] = timed_ok(compute)
    if gpu is None:
        # No device query in this RMM: the computation, which only runs on a GPU, answered; it
        # ran on the current device, 0 in a fresh process.
        report["platform"] = "cuda"
        report["devices"] = ["cuda:0"]


# -- DALI -----------------------------------------------------------------------------------------


def probe_dali(report):
    import nvidia.dali as dali
    from nvidia.dali import backend

    report["version"] = dali.__version__
    emit("stage", name="dali devices")
    report["computation_skipped"] = (
        "a DALI pipeline is too heavy for a probe: its backend's CUDA device count stands for it"
    )
    if not hasattr(backend, "GetCUDADeviceCount"):
        # A DALI without the count: where it computes is not known without a pipeline.
        report["platform"] = "unknown"
        return
    # Its own count: 0 where its CUDA runtime finds no device or no driver (it raises nothing).
    count = backend.GetCUDADeviceCount()
    report["platform"] = "cuda" if count else "none"
    report["devices"] = ["cuda:%d" % i for i in range(count)]
    if count:
        return
    try:
        # Asking for the current device is what says why: "CUDA runtime API error
        # cudaErrorInsufficientDriver (35): ...".
        backend.GetCUDACurrentDevice()
        report["gpu_error"] = "nvidia.dali.backend.GetCUDADeviceCount() is 0"
    except Exception as e:
        report["gpu_error"] = " ".join(text(e).split())


# -- TensorRT -------------------------------------------------------------------------------------


def probe_tensorrt(report):
    import tensorrt as trt

    report["version"] = trt.__version__

    class Logger(trt.ILogger):
        """TensorRT's own log, kept: why a builder could not be made is written only there."""

        def __init__(self):
            trt.ILogger.__init__(self)
            self.errors = []
            self.lines = []

        def log(self, severity, msg):
            if severity in (trt.ILogger.Severity.INTERNAL_ERROR, trt.ILogger.Severity.ERROR):
                self.errors.append(str(msg)[:MAX_TEXT])
                self.lines.append(("E: %s" % msg)[:MAX_TEXT])
            elif severity == trt.ILogger.Severity.WARNING:
                self.lines.append(("W: %s" % msg)[:MAX_TEXT])

    logger = Logger()
    emit("stage", name="tensorrt builder")
    # Making a builder initialises CUDA on the current device; building an engine would take
    # seconds more and is left out.
    report["computation_skipped"] = (
        "building an engine takes seconds: a builder made on the GPU stands for it"
    )
    try:
        builder = trt.Builder(logger)
        failed = None if builder is not None else "tensorrt.Builder() returned None"
    except Exception as e:
        builder, failed = None, text(e)
    report["native_messages"] = logger.lines[:MAX_MESSAGES]
    if builder is None:
        report["platform"] = "none"
        report["gpu_error"] = logger.errors[0] if logger.errors else failed
        return
    report["platform"] = "cuda"
    # A builder is made on the process's current device, device 0 of a fresh process.
    report["devices"] = ["cuda:0"]


# -- llama-cpp-python -----------------------------------------------------------------------------

# ggml's CUDA back-end, when it starts: "ggml_cuda_init: found 1 CUDA devices:", then
# "  Device 0: NVIDIA H200, compute capability 9.0, VMM: yes", or
# "ggml_cuda_init: failed to initialize CUDA: <cudaGetErrorString>".
_GGML_FOUND = re.compile(r"ggml_cuda_init: found (\d+) CUDA devices")
_GGML_DEVICE = re.compile(r"^\s*Device (\d+): ([^,]+),")
_GGML_FAILED = re.compile(r"ggml_cuda_init: failed to initialize CUDA: (.*)$")


def probe_llama_cpp(report):
    import llama_cpp

    report["version"] = llama_cpp.__version__
    emit("stage", name="llama_cpp offload")
    # The GPU back-end starts when offload support is first asked for, and writes what it
    # found to fd 2 (through llama-cpp-python's log callback or ggml's own).
    with NativeStderr(r"^()(ggml_cuda_init: .*|\s*Device \d+: .*)$") as native:
        offload = bool(llama_cpp.llama_supports_gpu_offload())
    report["computation_skipped"] = (
        "no model to run: llama_supports_gpu_offload() and the CUDA back-end's start-up log"
        " stand for it"
    )
    found = failed = None
    for _, line in native.found:
        m = _GGML_FOUND.search(line)
        if m:
            found = int(m.group(1))
        m = _GGML_DEVICE.match(line)
        if m:
            report["devices"].append(m.group(2).strip())
        m = _GGML_FAILED.search(line)
        if m:
            failed = m.group(1).strip()
    if not offload:
        report["platform"] = "cpu"
        report["gpu_error"] = failed or "llama_cpp.llama_supports_gpu_offload() is False"
    elif failed is not None or found == 0:
        report["platform"] = "none"
        report["gpu_error"] = failed or "ggml_cuda_init found 0 CUDA devices"
    elif report["devices"]:
        report["platform"] = "cuda"
    else:
        # Offload is supported, but the back-end said nothing of its devices here: not known.
        report["platform"] = "unknown"


# -- Transformer Engine ---------------------------------------------------------------------------


def probe_transformer_engine(report):
    torch = _optional("torch")
    if torch is None:
        # Transformer Engine for JAX alone: its PyTorch layer is not what this env uses.
        import transformer_engine

        report["version"] = getattr(transformer_engine, "__version__", None)
        report["platform"] = "unknown"
        report["computation_skipped"] = "torch is not installed: te.Linear was not run"
        return
    import transformer_engine
    import transformer_engine.pytorch as te

    report["version"] = getattr(transformer_engine, "__version__", None)
    emit("stage", name="transformer_engine devices")
    if not torch.cuda.is_available():
        report["platform"] = "none"
        try:
            # torch's own reason ("Found no NVIDIA driver on your system...").
            torch.cuda.init()
            report["gpu_error"] = "torch.cuda.is_available() is False"
        except Exception as e:
            report["gpu_error"] = " ".join(text(e).split())
        report["computation_skipped"] = "torch sees no CUDA device: te.Linear was not run"
        return
    report["platform"] = "cuda"
    report["runtime"] = torch.version.cuda
    report["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    layer = te.Linear(16, 16, bias=True).cuda()
    with torch.no_grad():
        layer.weight.copy_(torch.eye(16))
        layer.bias.zero_()
    x = torch.arange(256, dtype=torch.float32, device="cuda").reshape(16, 16)

    def compute():
        with torch.no_grad():
            y = layer(x)
        torch.cuda.synchronize()
        return bool(torch.equal(y.float().cpu(), x.cpu()))

    emit("stage", name="transformer_engine computation")
    report["computation_ok"], report["computation_ms"] = timed_ok(compute)

PROBES = {
    "jax": probe_jax,
    "cupy": probe_cupy,
    "onnxruntime": probe_onnxruntime,
    "tensorflow": probe_tensorflow,
    "ctranslate2": probe_ctranslate2,
    "numba_cuda": probe_numba_cuda,
    "paddle": probe_paddle,
    "rapids": probe_rapids,
    "dali": probe_dali,
    "tensorrt": probe_tensorrt,
    "llama_cpp": probe_llama_cpp,
    "transformer_engine": probe_transformer_engine,
}


def main(argv):
    name = argv[1] if len(argv) > 1 else ""
    report = {"framework": name, "devices": []}
    probe = PROBES.get(name)
    if probe is None:
        report["error"] = "no probe for %r (known: %s)" % (name, ", ".join(sorted(PROBES)))
        report["error_kind"] = "raised"
        emit("framework", data=report)
        return 0
    messages = Messages()
    logging.getLogger().addHandler(messages)
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # The list the warnings module appends to, which probes read with warned().
        _CAUGHT["warnings"] = caught
        emit("stage", name="import " + name)
        try:
            probe(report)
        except BaseException as e:  # ImportError, the framework's RuntimeError, SystemExit
            report["error"] = text(e)
            report["error_kind"] = "module_not_found" if isinstance(e, ModuleNotFoundError) else "raised"
            try:
                gap = api_gap(e)
            except Exception:
                gap = None
            if gap:
                report["api_gap"] = gap
    for w in caught:
        lines = str(w.message).strip().splitlines()
        if lines:
            messages.add(lines[0])
    for line in report.pop("native_messages", []):
        messages.add(line)
    report["messages"] = messages.items
    report["elapsed_ms"] = (time.perf_counter() - t) * 1000.0
    for k in ("computation_ms", "elapsed_ms"):
        if isinstance(report.get(k), float) and not math.isfinite(report[k]):
            report[k] = None
    emit("framework", data=report)
    return 0


sys.exit(main(sys.argv))
