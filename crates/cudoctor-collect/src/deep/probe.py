"""cudoctor's runtime probe: does the fast path really run in this Python environment?

Run by `cudoctor check --deep` in the target interpreter as `python -I -c <this file>`, never
inside cudoctor itself. It imports torch, initialises each GPU, measures the attention backends,
tries torch.compile and an NCCL all-reduce, and reports as JSON.

Output protocol: stdout carries only lines of the form `@@cudoctor-probe@@ {json}` (anything else
the process prints, Python or C, is sent to stderr). Events:
  {"event": "stage", "name": ...}         a stage starts (where it hung, if it hangs)
  {"event": "result", "data": {...}}       the report so far; the last one has data.complete = true
Exit status is 0 whenever a report was written, whatever it says.

Options (arguments): --budget-s SECONDS, --seq-lens 1024,4096,16384, --sizes-mib 1,64,1024,
--skip STAGE[,STAGE] (sdpa, extensions, compile, all-reduce), --disable-fused, --only compile
(the compile test alone, after importing torch and asking for CUDA: cudoctor runs it as a second
process beside the others, each with its own budget).
CUDOCTOR_PROBE_SKIP=stage,stage adds to --skip. The environment variable
CUDOCTOR_PROBE_DISABLE_FUSED=1 does what --disable-fused does: it switches
off the flash, memory-efficient and cuDNN attention backends before the default dispatch is
measured, so a report shows (and the rules catch) a math fallback. It exists to test cudoctor.

Works with Python 3.8+, torch 2.0+, with a CPU-only torch, and with no torch at all.
"""

import json
import math
import os
import sys
import time
import traceback
import warnings

TAG = "@@cudoctor-probe@@"
PROBE_VERSION = 1
MIB = 1 << 20

# Attention shape: one sequence, 16 heads of 128, causal, as in a typical LLM layer.
SDPA_BATCH = 1
SDPA_HEADS = 16
SDPA_HEAD_DIM = 128
# The math backend materialises the B*H*L*L score matrix several times (upcasts, softmax, mask):
# measured on an H200 at 37.5 GiB for L=16k in bf16, 4.7 times one bf16 score matrix. We budget 6.
MATH_MEMORY_FACTOR = 6
# Skip a measurement that would need more than this share of free memory.
MEMORY_SHARE = 0.4
BACKENDS = ["FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"]
# What the compile test leaves out to stay small (reported with its result).
COMPILE_NOT_TESTED = [
    "backward graphs (AOTAutograd)",
    "matmul and convolution templates and max-autotune",
    "CUDA graphs (mode=reduce-overhead)",
    "dynamic shapes and recompilation",
    "the Inductor and FX graph caches (off, so Triton and ptxas run)",
    "parallel compile workers (one thread)",
]


def _reserve_stdout():
    """Keep the real stdout for report lines and point fd 1 (and sys.stdout) at stderr, so prints
    from imported libraries, Python or native, cannot corrupt the report."""
    try:
        fd = os.dup(1)
        os.dup2(2, 1)
        out = os.fdopen(fd, "w", buffering=1)
        sys.stdout = sys.stderr
        return out
    except (OSError, ValueError):
        return sys.stdout


_OUT = _reserve_stdout()


def _die_with_parent():
    """Ask Linux to kill this process when its parent dies, so a killed probe leaves no worker."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:
        pass


def clean(value):
    """JSON-safe copy: NaN and infinities become null, floats are rounded."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        return round(value, 4)
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def emit(event, **fields):
    fields["event"] = event
    try:
        line = json.dumps(clean(fields), allow_nan=False)
    except (TypeError, ValueError) as e:
        line = json.dumps({"event": "error", "message": "unserialisable report: %s" % e})
    _OUT.write("\n" + TAG + " " + line + "\n")
    _OUT.flush()


def error_text(e, limit=2000):
    text = "%s: %s" % (type(e).__name__, e)
    return text[:limit]


def warning_texts(caught, limit=20):
    out = []
    for w in caught[:limit]:
        text = str(w.message).strip()
        if text and text not in out:
            out.append(text[:2000])
    return out


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return None
    mid = n // 2
    return xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2.0


def parse_args(argv):
    opts = {
        "budget_s": 110.0,
        "seq_lens": [1024, 4096, 16384],
        "sizes_mib": [1, 64, 1024],
        "skip": set(x.strip() for x in os.environ.get("CUDOCTOR_PROBE_SKIP", "").split(",") if x.strip()),
        "disable_fused": os.environ.get("CUDOCTOR_PROBE_DISABLE_FUSED", "") not in ("", "0"),
        "only": None,
    }
    it = iter(argv)
    for arg in it:
        try:
            if arg == "--budget-s":
                opts["budget_s"] = max(1.0, float(next(it)))
            elif arg == "--seq-lens":
                opts["seq_lens"] = [int(x) for x in next(it).split(",") if x.strip()]
            elif arg == "--sizes-mib":
                opts["sizes_mib"] = [int(x) for x in next(it).split(",") if x.strip()]
            elif arg == "--skip":
                opts["skip"].update(x.strip() for x in next(it).split(",") if x.strip())
            elif arg == "--disable-fused":
                opts["disable_fused"] = True
            elif arg == "--only":
                opts["only"] = next(it).strip()
        except (StopIteration, ValueError):
            pass
    return opts


class Probe:
    def __init__(self, opts):
        self.opts = opts
        self.started = time.monotonic()
        self.torch = None
        self.report = {
            "probe_version": PROBE_VERSION,
            "complete": False,
            "devices": [],
            "extensions": [],
            "stages": [],
            "errors": [],
        }

    # -- plumbing -------------------------------------------------------------------------------

    def remaining(self):
        return self.opts["budget_s"] - (time.monotonic() - self.started)

    def stage(self, name, fn, needs_s=0.0):
        """Runs one stage, timing it; an exception is recorded, never raised."""
        if self.remaining() < needs_s:
            why = "not enough time left (%.0f s of the probe's budget)" % max(0.0, self.remaining())
            self.report["stages"].append({"name": name, "skipped": why})
            return why
        emit("stage", name=name)
        t0 = time.monotonic()
        skipped = None
        try:
            skipped = fn()
        except Exception as e:
            self.report["errors"].append("%s: %s" % (name, error_text(e)))
        entry = {"name": name, "seconds": time.monotonic() - t0}
        if isinstance(skipped, str):
            entry["skipped"] = skipped
        self.report["stages"].append(entry)
        emit("result", data=self.report)
        return skipped

    def gpu_ready(self):
        cuda = self.report.get("cuda") or {}
        return self.torch is not None and cuda.get("available") and cuda.get("device_count", 0) > 0

    # -- stages ---------------------------------------------------------------------------------

    def python_info(self):
        self.report["python"] = {
            "version": "%d.%d.%d" % sys.version_info[:3],
            "executable": sys.executable,
            "prefix": sys.prefix,
        }

    def import_torch(self):
        t0 = time.monotonic()
        try:
            import torch
        except BaseException as e:  # noqa: B902 - SystemExit from a broken package too
            err = {"kind": type(e).__name__, "message": str(e)[:4000]}
            tb = traceback.format_exc().strip().splitlines()
            err["traceback"] = "\n".join(tb[-12:])[:4000]
            self.report["torch_import_error"] = err
            return "torch could not be imported"
        self.torch = torch
        info = {"version": str(torch.__version__), "import_s": time.monotonic() - t0}
        version = getattr(torch, "version", None)
        info["cuda"] = getattr(version, "cuda", None)
        info["hip"] = getattr(version, "hip", None)
        info["file"] = getattr(torch, "__file__", None)
        try:
            info["cudnn"] = torch.backends.cudnn.version()
        except Exception:
            pass
        try:
            v = torch.cuda.nccl.version()
            info["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
        except Exception:
            pass
        try:
            info["arch_list"] = list(torch.cuda.get_arch_list())
        except Exception:
            info["arch_list"] = []
        self.report["torch"] = info
        return None

    def settings(self):
        torch = self.torch
        s = {}

        def read(key, fn):
            try:
                s[key] = fn()
            except Exception:
                pass

        read("matmul_allow_tf32", lambda: bool(torch.backends.cuda.matmul.allow_tf32))
        read("cudnn_allow_tf32", lambda: bool(torch.backends.cudnn.allow_tf32))
        read("float32_matmul_precision", lambda: str(torch.get_float32_matmul_precision()))
        read("cudnn_enabled", lambda: bool(torch.backends.cudnn.enabled))
        read("cudnn_available", lambda: bool(torch.backends.cudnn.is_available()))
        read("flash_sdp_enabled", lambda: bool(torch.backends.cuda.flash_sdp_enabled()))
        read("mem_efficient_sdp_enabled", lambda: bool(torch.backends.cuda.mem_efficient_sdp_enabled()))
        read("cudnn_sdp_enabled", lambda: bool(torch.backends.cuda.cudnn_sdp_enabled()))
        read("math_sdp_enabled", lambda: bool(torch.backends.cuda.math_sdp_enabled()))
        self.report["settings"] = s

    def cuda_runtime(self):
        torch = self.torch
        cuda = {}
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is not None:
            cuda["visible_devices"] = visible
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            available = bool(torch.cuda.is_available())
            try:
                count = int(torch.cuda.device_count())
            except Exception:
                count = 0
        cuda["available"] = available
        cuda["device_count"] = count
        cuda["warnings"] = warning_texts(caught)
        if not available:
            reasons = list(cuda["warnings"])
            if getattr(torch.version, "cuda", None) is None and getattr(torch.version, "hip", None) is None:
                reasons.append("this torch build has no CUDA support (torch.version.cuda is None)")
            else:
                # A forced initialisation raises with the driver's own words.
                try:
                    torch.cuda.init()
                except Exception as e:
                    reasons.append(error_text(e))
            if not reasons and count == 0:
                reasons.append("torch.cuda.device_count() is 0: no GPU is visible to this process")
            cuda["unavailable_reason"] = "\n".join(reasons) if reasons else None
        self.report["cuda"] = cuda

    def devices(self):
        if not self.gpu_ready():
            return "no GPU"
        torch = self.torch
        for i in range(self.report["cuda"]["device_count"]):
            d = {"index": i}
            try:
                props = torch.cuda.get_device_properties(i)
                d["name"] = str(props.name)
                d["capability"] = "%d.%d" % (props.major, props.minor)
                d["total_mib"] = int(props.total_memory) // MIB
                free, _total = torch.cuda.mem_get_info(i)
                d["free_mib"] = int(free) // MIB
                d["bf16_supported"] = props.major >= 8
                d.update(self.matmul(i))
            except Exception as e:
                d["error"] = error_text(e)
            self.report["devices"].append(d)

    def matmul(self, index):
        """A 1024x1024 fp32 matmul of ones: every element must be exactly 1024."""
        torch = self.torch
        dev = torch.device("cuda", index)
        a = torch.ones((1024, 1024), device=dev, dtype=torch.float32)
        c = a @ a
        torch.cuda.synchronize(dev)
        ok = bool(torch.all(c == 1024.0).item())
        times = []
        with torch.cuda.device(dev):
            for _ in range(5):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                c = a @ a
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
        return {"matmul_ok": ok, "matmul_ms": median(times)}

    # -- attention ------------------------------------------------------------------------------

    def sdpa_context(self, backend):
        """A context manager allowing only `backend`, on new and old torch."""
        torch = self.torch
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            return sdpa_kernel([getattr(SDPBackend, backend)])
        except ImportError:
            pass
        if backend == "CUDNN_ATTENTION":
            raise RuntimeError("this torch has no cuDNN attention backend")
        return torch.backends.cuda.sdp_kernel(
            enable_flash=backend == "FLASH_ATTENTION",
            enable_mem_efficient=backend == "EFFICIENT_ATTENTION",
            enable_math=backend == "MATH",
        )

    def sdpa_inputs(self, seq_len, dtype):
        torch = self.torch
        shape = (SDPA_BATCH, SDPA_HEADS, seq_len, SDPA_HEAD_DIM)
        return [torch.randn(shape, device="cuda:0", dtype=dtype) for _ in range(3)]

    def sdpa_call(self, q, k, v):
        return self.torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    def measure(self, q, k, v, budget_s=0.5):
        """Median ms and peak MiB the call adds. Runs once to warm up."""
        torch = self.torch
        out = self.sdpa_call(q, k, v)
        torch.cuda.synchronize()
        del out
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        out = self.sdpa_call(q, k, v)
        end.record()
        end.synchronize()
        peak = (torch.cuda.max_memory_allocated() - base) / MIB
        del out
        first_ms = start.elapsed_time(end)
        iterations = int(max(3, min(20, (budget_s * 1000.0) / max(first_ms, 0.001))))
        times = [first_ms]
        for _ in range(iterations - 1):
            start.record()
            out = self.sdpa_call(q, k, v)
            end.record()
            end.synchronize()
            del out
            times.append(start.elapsed_time(end))
        return {"ms": median(times), "peak_mib": peak}

    def math_too_big(self, seq_len, elem_bytes):
        torch = self.torch
        need = MATH_MEMORY_FACTOR * SDPA_BATCH * SDPA_HEADS * seq_len * seq_len * elem_bytes
        free, _total = torch.cuda.mem_get_info(0)
        if need > MEMORY_SHARE * free:
            return "skipped: the math backend would need about %.1f GiB, more than %d%% of the %.1f GiB free" % (
                need / (1 << 30),
                int(MEMORY_SHARE * 100),
                free / (1 << 30),
            )
        return None

    def run_lengths(self, ctx_factory, dtype, elem_bytes, math_like):
        torch = self.torch
        runs = []
        for seq_len in self.opts["seq_lens"]:
            run = {"seq_len": seq_len}
            if self.remaining() < 15:
                run["skipped"] = "skipped: the probe's time budget is spent"
                runs.append(run)
                continue
            if math_like:
                why = self.math_too_big(seq_len, elem_bytes)
                if why:
                    run["skipped"] = why
                    runs.append(run)
                    continue
            try:
                q, k, v = self.sdpa_inputs(seq_len, dtype)
                with ctx_factory():
                    run.update(self.measure(q, k, v))
                del q, k, v
            except Exception as e:
                run["error"] = error_text(e, 600)
            torch.cuda.empty_cache()
            runs.append(run)
        return runs

    def sdpa(self):
        if not self.gpu_ready():
            return "no GPU"
        torch = self.torch
        dev0 = (self.report["devices"] or [{}])[0]
        bf16 = dev0.get("bf16_supported", True)
        dtype = torch.bfloat16 if bf16 else torch.float16
        probe = {
            "device": 0,
            "dtype": "bfloat16" if bf16 else "float16",
            "batch": SDPA_BATCH,
            "heads": SDPA_HEADS,
            "head_dim": SDPA_HEAD_DIM,
            "causal": True,
            "forced_fallback": bool(self.opts["disable_fused"]),
            "backends": [],
        }
        self.report["sdpa"] = probe
        smallest = min(self.opts["seq_lens"] or [1024])
        for backend in BACKENDS:
            entry = {"backend": backend, "available": False, "runs": []}
            probe["backends"].append(entry)
            # Availability: one small call with only this backend allowed. torch explains a
            # refusal in warnings ("Flash attention kernel not used because: ...").
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    q, k, v = self.sdpa_inputs(smallest, dtype)
                    with self.sdpa_context(backend):
                        self.sdpa_call(q, k, v)
                    torch.cuda.synchronize()
                    entry["available"] = True
                    del q, k, v
                except Exception as e:
                    reasons = warning_texts(caught) + [error_text(e, 1000)]
                    entry["error"] = "\n".join(reasons)
            if entry["available"]:
                entry["runs"] = self.run_lengths(
                    lambda b=backend: self.sdpa_context(b), dtype, 2, backend == "MATH"
                )
            emit("result", data=self.report)
        probe["default"] = self.sdpa_default(dtype)

    def sdpa_default(self, dtype):
        torch = self.torch
        saved = {}
        if self.opts["disable_fused"]:
            for name in ("flash", "mem_efficient", "cudnn"):
                enable = getattr(torch.backends.cuda, "enable_%s_sdp" % name, None)
                state = getattr(torch.backends.cuda, "%s_sdp_enabled" % name, None)
                if enable is not None and state is not None:
                    saved[name] = state()
                    enable(False)
        try:
            default = {"runs": [], "kernels": [], "ops": [], "warnings": []}
            smallest = min(self.opts["seq_lens"] or [1024])
            q, k, v = self.sdpa_inputs(smallest, dtype)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.sdpa_call(q, k, v)
                torch.cuda.synchronize()
                kernels, ops = self.profile_names(q, k, v)
            default["warnings"] = warning_texts(caught)
            default["kernels"] = kernels
            default["ops"] = ops
            default["picked"] = classify_dispatch(ops, kernels)
            del q, k, v
            # The default may be the math backend: give it the same memory guard.
            picked_math = default.get("picked") == "MATH"
            default["runs"] = self.run_lengths(_NullContext, dtype, 2, picked_math)
            return default
        finally:
            for name, was in saved.items():
                getattr(torch.backends.cuda, "enable_%s_sdp" % name)(was)

    def profile_names(self, q, k, v):
        torch = self.torch
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            self.sdpa_call(q, k, v)
            torch.cuda.synchronize()
        ops, kernels = [], []
        for e in prof.events():
            name = str(getattr(e, "name", ""))
            device_type = str(getattr(e, "device_type", ""))
            if name.startswith("aten::"):
                if name not in ops:
                    ops.append(name)
            elif device_type.endswith("CUDA") and name not in kernels:
                kernels.append(name[:300])
        return kernels[:40], ops[:40]

    # -- extensions, compile ----------------------------------------------------------------------

    def extensions(self):
        import importlib
        import importlib.util

        for name in ("flash_attn", "xformers"):
            try:
                if importlib.util.find_spec(name) is None:
                    continue
            except Exception:
                continue
            ext = {"name": name, "imported": False}
            self.report["extensions"].append(ext)
            try:
                mod = importlib.import_module(name)
                ext["imported"] = True
                ext["version"] = str(getattr(mod, "__version__", "") or "") or None
            except BaseException as e:  # noqa: B902
                ext["error"] = error_text(e)
                continue
            if not self.gpu_ready():
                continue
            try:
                self.extension_call(name)
                ext["call_ok"] = True
            except Exception as e:
                ext["call_ok"] = False
                ext["error"] = error_text(e)

    def extension_call(self, name):
        torch = self.torch
        dtype = torch.float16
        shape = (1, 1024, SDPA_HEADS, SDPA_HEAD_DIM)  # (batch, seq, heads, dim) for both
        q, k, v = [torch.randn(shape, device="cuda:0", dtype=dtype) for _ in range(3)]
        if name == "flash_attn":
            from flash_attn import flash_attn_func

            flash_attn_func(q, k, v, causal=True)
        else:
            import xformers.ops

            xformers.ops.memory_efficient_attention(q, k, v)
        torch.cuda.synchronize()

    def compile_smoke(self):
        """The smallest graph that proves Triton runs: one elementwise function of one small
        tensor, which inductor fuses into one Triton kernel, compiled once with the caches off
        (the compiler toolchain, Triton and ptxas, must run), then one profiled call to see that
        kernel run. What a real model's compile also does is left out and said so."""
        report = {"ok": False, "not_tested": list(COMPILE_NOT_TESTED)}
        self.report["compile"] = report
        if not self.gpu_ready():
            report["skipped"] = "no GPU"
            return "no GPU"
        torch = self.torch
        try:
            import triton

            report["triton_version"] = str(getattr(triton, "__version__", "")) or None
        except Exception as e:
            missing = isinstance(e, ModuleNotFoundError) and getattr(e, "name", None) == "triton"
            report["fallback_causes"] = ["triton_missing" if missing else "triton_broken"]
            report["fallback_reason"] = "triton cannot be imported: %s" % error_text(e)
            return None
        import torch._dynamo
        import torch._inductor.config as inductor_config

        try:
            from torch._inductor import metrics
        except Exception:
            metrics = None
        try:
            from torch._dynamo.utils import counters
        except Exception:
            counters = None
        # One compile thread: no pool of worker processes to leave behind. No caches: a cache hit
        # would skip the compiler toolchain (Triton, ptxas) that this test exists to exercise.
        for key, value in (("compile_threads", 1), ("force_disable_caches", True), ("fx_graph_cache", False)):
            try:
                if hasattr(inductor_config, key):
                    setattr(inductor_config, key, value)
            except Exception:
                pass
        torch._dynamo.reset()
        if metrics is not None:
            metrics.reset()
        if counters is not None:
            counters.clear()

        def f(x):
            return torch.sin(x) * 2.0 + torch.cos(x)

        x = torch.randn(4096, device="cuda:0")
        t0 = time.monotonic()
        try:
            compiled = torch.compile(f, backend="inductor")
            y = compiled(x)
            torch.cuda.synchronize()
        except Exception as e:
            report["compile_s"] = time.monotonic() - t0
            report["fallback_reason"] = error_text(e, 3000)
            return None
        report["compile_s"] = time.monotonic() - t0
        report["correct"] = bool(torch.allclose(y, f(x), atol=1e-5, rtol=1e-4))
        count = getattr(metrics, "generated_kernel_count", None) if metrics is not None else None
        if count is not None:
            report["kernels_generated"] = int(count)
        # The proof that a Triton kernel ran: the profiler sees inductor's `triton_*` kernels.
        triton_ran = None
        try:
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                compiled(x)
                torch.cuda.synchronize()
            names = sorted({str(e.name) for e in prof.events() if "triton" in str(e.name).lower()})
            triton_ran = len(names)
            report["triton_kernels"] = [n[:200] for n in names[:5]]
            report["triton_kernels_ran"] = triton_ran
        except Exception as e:
            self.report["errors"].append("compile: profiler: %s" % error_text(e, 300))
        breaks = []
        if counters is not None:
            try:
                breaks = [str(k)[:300] for k in counters.get("graph_break", {}).keys()]
            except Exception:
                breaks = []
        report["graph_breaks"] = breaks[:10]
        if triton_ran is not None:
            generated = triton_ran > 0
        else:
            generated = count is None or count > 0
        report["ok"] = bool(generated and report["correct"])
        if not generated:
            switches = [
                k
                for k in ("TORCH_COMPILE_DISABLE", "TORCHDYNAMO_DISABLE", "TORCHDYNAMO_SUPPRESS_ERRORS")
                if os.environ.get(k)
            ]
            report["disabled_by"] = switches
            hints = ["%s=%s" % (k, os.environ[k]) for k in switches]
            why = "no Triton kernel ran: the compiled call fell back to eager"
            if hints:
                why += " (set: %s)" % ", ".join(hints)
            if breaks:
                why += "; graph breaks: %s" % "; ".join(breaks[:3])
            report["fallback_reason"] = why
        elif not report["correct"]:
            report["fallback_reason"] = "the compiled function's result differs from eager"
        return None

    # -- all-reduce -----------------------------------------------------------------------------

    def all_reduce(self):
        probe = {"world": 0, "results": []}
        probe["env"] = {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}
        self.report["all_reduce"] = probe
        if not self.gpu_ready():
            probe["skipped"] = "no GPU"
            return "no GPU"
        world = int(self.report["cuda"]["device_count"])
        probe["world"] = world
        if world < 2:
            probe["skipped"] = "one GPU visible: nothing to all-reduce across"
            return probe["skipped"]
        try:
            import torch.distributed as dist

            if not dist.is_available() or not dist.is_nccl_available():
                probe["error"] = "this torch has no NCCL support (torch.distributed.is_nccl_available() is False)"
                return None
        except Exception as e:
            probe["error"] = error_text(e)
            return None
        free = min(d.get("free_mib", 0) for d in self.report["devices"]) if self.report["devices"] else 0
        sizes = [s for s in self.opts["sizes_mib"] if s * 4 <= free] or [1]
        timeout_s = max(10.0, min(150.0, self.remaining() - 10.0))
        probe.update(run_workers(world, sizes, timeout_s))
        return None

    # -- driver ---------------------------------------------------------------------------------

    def run(self):
        self.stage("python", self.python_info)
        if self.opts.get("only") == "compile":
            # The compile test in a process of its own: torch, CUDA's answer, the compile.
            if "compile" not in self.opts["skip"] and self.stage("import torch", self.import_torch) is None:
                self.stage("cuda", self.cuda_runtime)
                self.stage("compile", self.compile_smoke, needs_s=30)
        elif self.stage("import torch", self.import_torch) is None:
            self.stage("settings", self.settings)
            self.stage("cuda", self.cuda_runtime)
            self.stage("devices", self.devices)
            skip = self.opts["skip"]
            if "sdpa" not in skip:
                self.stage("sdpa", self.sdpa, needs_s=20)
            if "extensions" not in skip:
                self.stage("extensions", self.extensions, needs_s=10)
            if "all-reduce" not in skip:
                self.stage("all-reduce", self.all_reduce, needs_s=25)
            if "compile" not in skip:
                self.stage("compile", self.compile_smoke, needs_s=30)
        self.report["complete"] = True
        emit("result", data=self.report)


class _NullContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def classify_dispatch(ops, kernels):
    """Which backend ran: the aten op names say it plainly; kernel names are the fallback."""
    joined = " ".join(ops)
    if "_scaled_dot_product_cudnn_attention" in joined or "_cudnn_attention" in joined:
        return "CUDNN_ATTENTION"
    if "_scaled_dot_product_flash_attention" in joined or "_flash_attention_forward" in joined:
        return "FLASH_ATTENTION"
    if "_scaled_dot_product_efficient_attention" in joined or "_efficient_attention_forward" in joined:
        return "EFFICIENT_ATTENTION"
    if "_scaled_dot_product_attention_math" in joined:
        return "MATH"
    names = " ".join(kernels).lower()
    # cuDNN's kernels may contain "flash" too ("cudnn_generated_..._sdpa_..._flash_fprop"): test first.
    if "cudnn" in names and ("sdpa" in names or "fprop" in names or "fmha" in names):
        return "CUDNN_ATTENTION"
    if "flash_fwd" in names or "flash::" in names:
        return "FLASH_ATTENTION"
    if "fmha" in names or "mem_efficient" in names or "attentionkernel" in names:
        return "EFFICIENT_ATTENTION"
    if "softmax" in names and ("gemm" in names or "bmm" in names):
        return "MATH"
    return None


# One NCCL worker per GPU, started as `python -I -c WORKER_SOURCE <json>`: no pickling, no
# dependence on how this script was started.
WORKER_SOURCE = r'''
import json, os, sys, time
TAG = "@@cudoctor-probe@@"
try:
    import ctypes, signal
    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))
except Exception:
    pass
args = json.loads(sys.argv[1])
rank, world = args["rank"], args["world"]
out = {"rank": rank, "results": []}
try:
    import datetime
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=args["init"], rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args["timeout_s"]))
    try:
        v = torch.cuda.nccl.version()
        out["nccl_version"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception:
        pass
    check = torch.ones(1024, device="cuda")
    dist.all_reduce(check)
    torch.cuda.synchronize()
    out["correct"] = bool(torch.all(check == float(world)).item())
    for mib in args["sizes_mib"]:
        n = mib * (1 << 20) // 4
        x = torch.ones(n, device="cuda", dtype=torch.float32)
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        iters = 20 if mib <= 64 else 8
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        dist.barrier()
        start.record()
        for _ in range(iters):
            dist.all_reduce(x)
        end.record()
        end.synchronize()
        ms = torch.tensor([start.elapsed_time(end) / iters], device="cuda")
        dist.all_reduce(ms, op=dist.ReduceOp.MAX)
        ms = float(ms.item())
        nbytes = n * 4
        algbw = nbytes / (ms / 1000.0) / 1e9
        busbw = algbw * 2.0 * (world - 1) / world
        out["results"].append({"size_mib": mib, "ms": ms, "algbw_gbps": algbw, "busbw_gbps": busbw})
        del x
        torch.cuda.empty_cache()
    dist.destroy_process_group()
except BaseException as e:
    out["error"] = "%s: %s" % (type(e).__name__, str(e)[:2000])
sys.stdout.write("\n" + TAG + " " + json.dumps(out) + "\n")
sys.stdout.flush()
'''


def run_workers(world, sizes, timeout_s):
    """Starts one worker per GPU, waits up to `timeout_s`, and kills them all if they hang."""
    import subprocess
    import tempfile

    tmp = tempfile.mkdtemp(prefix="cudoctor-nccl-")
    init = "file://" + os.path.join(tmp, "rendezvous")
    procs = []
    result = {"results": []}
    try:
        for rank in range(world):
            args = json.dumps(
                {"rank": rank, "world": world, "init": init, "sizes_mib": sizes, "timeout_s": int(timeout_s)}
            )
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-I", "-c", WORKER_SOURCE, args],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
            )
        deadline = time.monotonic() + timeout_s
        outputs = []
        hung = False
        for p in procs:
            try:
                outputs.append(p.communicate(timeout=max(0.1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                hung = True
                break
        if hung:
            for p in procs:
                if p.poll() is None:
                    p.kill()
            tails = []
            for p in procs:
                try:
                    _o, e = p.communicate(timeout=5)
                    tails.append(e.decode("utf-8", "replace").strip()[-800:])
                except Exception:
                    pass
            result["failure"] = "hang"
            result["error"] = "the all-reduce did not finish in %.0f s and was stopped (NCCL hang?)%s" % (
                timeout_s,
                ("; worker stderr: " + " | ".join(t for t in tails if t)) if any(tails) else "",
            )
            return result
        reports = []
        for rank, (o, e) in enumerate(outputs):
            rep = None
            for line in o.decode("utf-8", "replace").splitlines():
                at = line.find(TAG)
                if at >= 0:
                    try:
                        rep = json.loads(line[at + len(TAG):])
                    except ValueError:
                        pass
            if rep is None:
                rep = {
                    "rank": rank,
                    "error": "worker %d exited with status %s and no report: %s"
                    % (rank, procs[rank].returncode, e.decode("utf-8", "replace").strip()[-800:]),
                }
            reports.append(rep)
        errors = [r["error"] for r in reports if r.get("error")]
        if errors:
            result["error"] = errors[0]
        first = reports[0] if reports else {}
        result["results"] = first.get("results", [])
        result["nccl_version"] = first.get("nccl_version")
        if first.get("correct") is False:
            result["failure"] = "wrong_sum"
            result["error"] = "the all-reduce gave a wrong sum"
        return result
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        try:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
        except Exception:
            pass


def main(argv):
    _die_with_parent()
    Probe(parse_args(argv)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
