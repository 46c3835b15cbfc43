# cudoctor run observer. `cudoctor run -- CMD` writes this file as sitecustomize.py into a private
# directory put first on PYTHONPATH, so every Python process of the command (torchrun ranks,
# subprocesses) loads it without a change to the user's code. It chains to the sitecustomize it
# shadows, waits for torch to be imported (it never imports torch itself), wraps a few entry
# points, aggregates in-process and writes one JSON file per process at exit. It never raises into
# the program: every failure is recorded in "errors".
import os
import sys

_DIR = os.environ.get("CUDOCTOR_RUN_DIR")
_HERE = os.path.dirname(os.path.abspath(__file__))
_CHAINED = None
_CHAINED_MODULE = None

MAX_GROUPS = 64
MAX_SAMPLES = 200
RESAMPLE_EVERY = 1000
# The steady attention path times itself on its first TIMED_FIRST calls, then on one call in
# TIME_EVERY (a power of two), counted TIME_EVERY times: two clock reads per call were a
# large part of what it cost (more where the clock is slow, as in some VMs), and a steady
# call's cost does not change from one call to the next. Every call is still counted.
TIMED_FIRST = 256
TIME_EVERY = 64
MAX_SERIES = 4096
# The allocator's counters (one read builds a dict of every counter: tens of µs on a GPU) are
# read at the first steps, then at most once per this many seconds of the program's time, so
# their cost per step falls as steps get shorter. The peaks stay exact: the peak counter is
# reset only when it is read, so a read gives the peak of every step since the last one.
MEMORY_PERIOD_S = 0.05
MEMORY_FIRST_STEPS = 5
MAX_REASON = 600
MAX_FAILURE_MESSAGE = 4000
MAX_MAPPED = 4000


def _chain_sitecustomize():
    """Runs the sitecustomize this file shadows, as Python would have."""
    try:
        import importlib.machinery
        import importlib.util

        paths = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", paths)
        if spec is None or spec.loader is None:
            return
        global _CHAINED
        _CHAINED = str(spec.origin)
        module = importlib.util.module_from_spec(spec)
        # sys.modules["sitecustomize"] stays this module: dynamo's guards name the globals of the
        # observer's wrappers by module name, and a program compiling them would fail them.
        global _CHAINED_MODULE
        _CHAINED_MODULE = module
        spec.loader.exec_module(module)
    except Exception as e:  # the shadowed file's own error, as Python would print it
        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n" % (type(e).__name__, e))


def _short(e, limit=MAX_REASON):
    return ("%s: %s" % (type(e).__name__, e))[:limit]


class _State:
    def __init__(self):
        import time

        self.time = time
        self.t0 = time.perf_counter()
        self.written = False
        self.errors = []
        self.torch = None
        self.sdpa_calls = 0
        self.sdpa_ungrouped = 0
        self.groups = {}
        self.samples = 0
        self.extensions = {}
        self.compile_requests = {}
        self.compilations = 0
        self.recompilations = 0
        self.recompile_events = 0
        self.recompile_reasons = {}
        self.compile_start = {}
        self.compile_s = 0.0
        self.step_source = ""
        self.step_owner = None
        self.steps = 0
        self.last_step_t = None
        self.durations = []
        self.dur_stride = 1
        self.memory = []
        self.mem_stride = 1
        self.mem_reads = 0
        self.last_mem_t = None
        self.step_floor = 0
        self.user_alloc = self.user_reserved = 0
        self.process_alloc = self.process_reserved = 0
        self.forward_depth = 0
        self.forward_owner = None
        self.forward_hooks = []
        self.api_collectives = {}
        self.nccl_seen = {}
        self.nccl_note = None
        self.profile_step = int(os.environ.get("CUDOCTOR_RUN_PROFILE_STEP") or 0)
        self.profile = None
        self.profiler = None
        self.compare = os.environ.get("CUDOCTOR_RUN_NO_COST") != "1"
        self.clock = time.perf_counter_ns
        # The observer's own time on the program's threads, by where it was spent: [calls, ns].
        self.own = {site: [0, 0] for site in _OWN_SITES}
        # Time inside a timed site that belongs to another (the profiled step inside the step).
        self.step_excluded_ns = 0
        self.profile_seen_ns = 0
        # The uncaught exception the process ends on, with what was mapped then.
        self.failure = None

    def error(self, where, e):
        if len(self.errors) < 50:
            self.errors.append("%s: %s" % (where, _short(e, 400)))

    def now(self):
        return self.time.perf_counter() - self.t0


_S = None

# Where the observer spends time on the program's threads (the "observer_cost" of the report).
_OWN_SITES = ("attention", "attention_sampled", "step", "profile", "forward_pre_hook", "forward_post_hook", "collectives", "extensions")


def _own(site, t0):
    """Counts the observer's time since `t0` (perf_counter_ns) against `site`."""
    c = _S.own[site]
    c[0] += 1
    c[1] += _S.clock() - t0


# -- the import hook: patch a module once it has finished importing ------------------------------


class _AfterImport:
    def __init__(self, hooks):
        self.hooks = hooks
        self.busy = set()

    def find_spec(self, name, path=None, target=None):
        hook = self.hooks.get(name)
        if hook is None or name in self.busy:
            return None
        self.busy.add(name)
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        finally:
            self.busy.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_then_hook(module, _exec=exec_module, _hook=hook):
            _exec(module)
            try:
                _hook(module)
            except Exception as e:
                _S.error("hook " + name, e)

        try:
            loader.exec_module = exec_then_hook
        except Exception:
            return spec
        return spec


# -- torch ---------------------------------------------------------------------------------------


def _on_torch(torch):
    _S.torch = torch
    import atexit

    atexit.register(_write, "atexit")
    _find_is_compiling(torch)
    for install in (_wrap_sdpa, _hook_optimizer, _hook_forward, _wrap_compile, _wrap_memory_queries, _hook_dynamo, _wrap_distributed):
        try:
            install(torch)
        except Exception as e:
            _S.error(install.__name__, e)


def _not_compiling():
    return False


# torch.compiler.is_compiling (torch >= 2.3) or, before it, torch._dynamo.is_compiling once dynamo
# is imported (nothing compiles before that); dynamo folds either to True while it traces.
_is_compiling = _not_compiling


def _find_is_compiling(torch):
    global _is_compiling
    fn = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    if fn is None:
        dynamo = sys.modules.get("torch._dynamo")
        fn = getattr(dynamo, "is_compiling", None) if dynamo is not None else None
    if fn is not None:
        _is_compiling = fn


def _sdpa_switch_getters(torch):
    """The four backend switches as torch's own C getters (one call each), or None."""
    getters = []
    for c_name, py_name in (("_get_flash_sdp_enabled", "flash_sdp_enabled"), ("_get_mem_efficient_sdp_enabled", "mem_efficient_sdp_enabled"), ("_get_cudnn_sdp_enabled", "cudnn_sdp_enabled"), ("_get_math_sdp_enabled", "math_sdp_enabled")):
        fn = getattr(torch._C, c_name, None) or getattr(torch.backends.cuda, py_name, None)
        if fn is None:
            return None
        getters.append(fn)
    return tuple(getters)


def _wrap_sdpa(torch):
    import functools

    F = torch.nn.functional
    original = F.scaled_dot_product_attention
    getters = _sdpa_switch_getters(torch)
    if getters is None:
        flash_on = mem_on = cudnn_on = math_on = _not_compiling
    else:
        flash_on, mem_on, cudnn_on, math_on = getters
    grad_enabled = torch.is_grad_enabled
    S = _S
    groups = S.groups
    clock = S.clock
    # The steady path's own count, kept here rather than looked up per call (_own's counter).
    own = S.own["attention"]
    resample_every = RESAMPLE_EVERY
    timed_first, time_mask, time_every = TIMED_FIRST, TIME_EVERY - 1, TIME_EVERY

    @functools.wraps(original)
    def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *args, **kwargs):
        if _is_compiling():
            return original(query, key, value, attn_mask, dropout_p, is_causal, *args, **kwargs)
        calls = S.sdpa_calls = S.sdpa_calls + 1
        # How many calls this one's time stands for (0: not timed; TIME_EVERY's comment).
        weight = 1 if calls <= timed_first else (0 if calls & time_mask else time_every)
        t0 = clock() if weight else 0
        # The steady state: one key lookup and a count. Everything else happens once per group.
        try:
            gqa = bool(kwargs.get("enable_gqa", False)) if kwargs else False
            grad = grad_enabled() and (query.requires_grad or key.requires_grad or value.requires_grad)
            k = (query.device, query.dtype, query.shape, key.shape, value.shape, None if attn_mask is None else (attn_mask.dtype, attn_mask.shape), dropout_p > 0, bool(is_causal), gqa, grad, flash_on(), mem_on(), cudnn_on(), math_on())
            g = groups.get(k)
            if g is not None:
                n = g["calls"] = g["calls"] + 1
                if n % resample_every or S.samples >= MAX_SAMPLES:
                    own[0] += 1
                    if weight:
                        own[1] += (clock() - t0) * weight
                    if args or kwargs:
                        return original(query, key, value, attn_mask, dropout_p, is_causal, *args, **kwargs)
                    # No tuple and dict built for the call (the usual case).
                    return original(query, key, value, attn_mask, dropout_p, is_causal)
            else:
                if len(groups) >= MAX_GROUPS:
                    _S.sdpa_ungrouped += 1
                    own[0] += 1
                    if weight:
                        own[1] += (clock() - t0) * weight
                    return original(query, key, value, attn_mask, dropout_p, is_causal, *args, **kwargs)
                g = groups[k] = _new_group(torch, k, attn_mask, getters is not None)
                g["calls"] = 1
            _S.samples += 1
            if not weight:
                # A sampled call is always timed (from here: its key is a steady call's cost).
                t0 = clock()
            try:
                # A sampled call counts whole, the program's own attention call included: an
                # upper bound of what sampling costs.
                return _sampled_call(torch, original, g, query, key, value, attn_mask, dropout_p, is_causal, args, kwargs)
            finally:
                _own("attention_sampled", t0)
        except Exception as e:
            _S.error("sdpa", e)
        return original(query, key, value, attn_mask, dropout_p, is_causal, *args, **kwargs)

    scaled_dot_product_attention.__cudoctor_original__ = original
    F.scaled_dot_product_attention = scaled_dot_product_attention


def _new_group(torch, k, attn_mask, have_switches):
    device, dtype, q, kk, v, mask, dropout, causal, gqa, grad = k[:10]
    sw = k[10:]
    mask_name = "none" if mask is None else ("bool" if mask[0] == torch.bool else str(mask[0]).replace("torch.", ""))
    return {
        "device": str(device), "dtype": str(dtype).replace("torch.", ""), "query": list(q), "key": list(kk), "value": list(v),
        "mask": mask_name, "mask_shape": [] if mask is None else list(mask[1]), "dropout": dropout, "causal": causal, "gqa": gqa, "grad": grad,
        "enabled": {"flash": bool(sw[0]), "mem_efficient": bool(sw[1]), "cudnn": bool(sw[2]), "math": bool(sw[3])} if have_switches else None,
        "calls": 0, "dispatched_ops": [], "sampled": 0, "other_dispatch": [], "rejections": [],
    }


def _dispatch_recorder(torch):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            try:
                name = func.overloadpacket.__name__
            except Exception:
                name = str(func)
            if name not in self.ops and len(self.ops) < 40:
                self.ops.append(name)
            return func(*args, **(kwargs or {}))

    return Recorder()


_FUSED_OPS = ("_flash_attention", "_efficient_attention", "_cudnn_attention")


def _sampled_call(torch, original, g, query, key, value, attn_mask, dropout_p, is_causal, args, kwargs):
    """One call under a dispatch recorder: the operators torch really dispatched name the backend."""
    recorder = _dispatch_recorder(torch)
    with recorder:
        out = original(query, key, value, attn_mask, dropout_p, is_causal, *args, **kwargs)
    first = g["sampled"] == 0
    g["sampled"] += 1
    if first:
        g["dispatched_ops"] = recorder.ops
    elif recorder.ops != g["dispatched_ops"] and len(g["other_dispatch"]) < 3:
        g["other_dispatch"].append(recorder.ops)
    ran_math = not any(f in o for o in recorder.ops for f in _FUSED_OPS)
    if first and ran_math:
        try:
            _reasons(torch, original, g, query, key, value, attn_mask, dropout_p, is_causal, args, kwargs)
        except Exception as e:
            _S.error("sdpa reasons", e)
        if _S.compare and query.is_cuda:
            try:
                g["cost"] = _cost(torch, original, query, key, value, attn_mask, dropout_p, is_causal, kwargs)
            except Exception as e:
                g["cost"] = {"fused_dtype": "", "fused_ops": [], "error": _short(e)}
    return out


# The warning that heads each backend's reasons when torch finds no kernel ("Flash attention kernel
# not used because:"), by backend.
_REASON_HEADS = (("flash", "FLASH_ATTENTION"), ("memory efficient", "EFFICIENT_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"))


def _reasons(torch, original, g, query, key, value, attn_mask, dropout_p, is_causal, args, kwargs):
    """torch's own reasons for refusing each fused backend. With the math path switched off, torch
    finds no kernel for these inputs and warns, backend by backend, why each one refused them,
    then raises; the same call, on the same tensors, under the program's other switches."""
    import re
    import warnings

    cuda = torch.backends.cuda
    if not cuda.math_sdp_enabled():
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cuda.enable_math_sdp(False)
        raised = None
        try:
            original(query, key, value, attn_mask, dropout_p, is_causal, *args, **kwargs)
            return  # a fused kernel took them after all: no refusal to report
        except RuntimeError as e:
            raised = _short(e)
        finally:
            cuda.enable_math_sdp(True)
    by_backend = {}
    current = None
    for w in caught:
        text = re.sub(r"\s*\(Triggered internally at [^)]*\)\s*$", "", str(w.message).strip())
        head = re.match(r"^(.*) kernel not used because:?$", text, re.IGNORECASE)
        if head:
            current = next((b for needle, b in _REASON_HEADS if needle in head.group(1).lower()), None)
            if current is not None:
                by_backend.setdefault(current, [])
            continue
        if current is None:
            continue
        for line in text.splitlines():
            line = line.strip()
            if line and line not in by_backend[current]:
                by_backend[current].append(line[:MAX_REASON])
    for backend, reasons in by_backend.items():
        g["rejections"].append({"backend": backend, "reasons": reasons[:6]})
    if not by_backend:
        g["reasons_unavailable"] = raised


def _cost(torch, original, query, key, value, attn_mask, dropout_p, is_causal, kwargs):
    """The math call against the fused backends, on copies without autograd. Each is called once
    to warm up (kernel selection, cuDNN's plan building), then timed with CUDA events; the peak is
    that of the timed calls. The program's own peak for the step is kept."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fused_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    cost = {"fused_dtype": str(fused_dtype).replace("torch.", ""), "fused_ops": []}
    gqa = {"enable_gqa": True} if kwargs.get("enable_gqa") else {}
    q, k, v = query.detach(), key.detach(), value.detach()
    repeats = 3

    def measure(fn):
        del_out = fn()
        del del_out
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        _S.original_reset_peak()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            out = fn()
            del out
        end.record()
        end.synchronize()
        peak = (_S.original_max_allocated() - base) / 2**20
        return peak, start.elapsed_time(end) / repeats

    torch.cuda.synchronize()
    program_peak = _S.original_max_allocated()
    try:
        with torch.no_grad():
            cost["math_peak_mib"], cost["math_ms"] = measure(lambda: original(q, k, v, attn_mask, dropout_p, is_causal, **gqa))
            fq, fk, fv = q.to(fused_dtype), k.to(fused_dtype), v.to(fused_dtype)
            fmask = attn_mask if attn_mask is None or attn_mask.dtype == torch.bool else attn_mask.to(fused_dtype)
            recorder = _dispatch_recorder(torch)
            try:
                with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]):
                    with recorder:
                        original(fq, fk, fv, fmask, dropout_p, is_causal, **gqa)
                    cost["fused_peak_mib"], cost["fused_ms"] = measure(lambda: original(fq, fk, fv, fmask, dropout_p, is_causal, **gqa))
                cost["fused_ops"] = recorder.ops
            except Exception as e:
                cost["error"] = "no fused backend runs these inputs in %s either: %s" % (cost["fused_dtype"], _short(e, 300))
            del fq, fk, fv
    finally:
        # What these measurements allocated is not the program's: its step keeps its own peak.
        _S.step_floor = max(_S.step_floor, program_peak)
        _S.original_reset_peak()
    return cost


# -- steps and memory ----------------------------------------------------------------------------


def _thin(series, stride_attr):
    """Keeps a series bounded: past MAX_SERIES points, every other one is dropped."""
    if len(series) > MAX_SERIES:
        del series[1::2]
        setattr(_S, stride_attr, getattr(_S, stride_attr) * 2)


def _step_done(torch, source, now_ns):
    """A step ends now (`now_ns`, the hook's own perf_counter_ns read: the same clock as
    perf_counter, read once for both)."""
    now = now_ns * 1e-9
    if _S.step_source != source:
        if _S.step_source == "optimizer":
            return
        # An optimizer outranks forward detection: start over with optimizer steps.
        _S.step_source = source
        _S.steps = 0
        _S.durations = []
        _S.memory = []
        _S.last_step_t = None
        _S.last_mem_t = None
        _S.mem_reads = 0
        _S.dur_stride = _S.mem_stride = 1
    _S.steps += 1
    if _S.last_step_t is not None and _S.steps % _S.dur_stride == 0:
        _S.durations.append((now - _S.last_step_t) * 1000.0)
        _thin(_S.durations, "dur_stride")
    _S.last_step_t = now
    if _S.steps <= MEMORY_FIRST_STEPS or _S.last_mem_t is None or now - _S.last_mem_t >= MEMORY_PERIOD_S:
        _S.last_mem_t = now
        try:
            _step_memory(torch)
        except Exception as e:
            _S.error("memory", e)
    if _S.profile_step:
        # Asked for (--profile-step), and bounded: counted apart from the step's own cost.
        t0 = _S.clock()
        _profile_tick(torch)
        _own("profile", t0)
        _S.step_excluded_ns += _S.own["profile"][1] - _S.profile_seen_ns
        _S.profile_seen_ns = _S.own["profile"][1]
    if _S.steps % 10 == 0:
        _harvest_nccl(torch)


def _hook_optimizer(torch):
    from torch.optim.optimizer import register_optimizer_step_post_hook

    def after_step(optimizer, args, kwargs):
        if _is_compiling():
            return
        t0 = _S.clock()
        # Several optimizers may step per iteration: the first one seen marks the iterations.
        if _S.step_owner is None:
            _S.step_owner = id(optimizer)
            _drop_forward_hooks()
        if id(optimizer) == _S.step_owner:
            _step_done(torch, "optimizer", t0)
        _own("step", t0 + _S.step_excluded_ns)
        _S.step_excluded_ns = 0

    register_optimizer_step_post_hook(after_step)


def _hook_forward(torch):
    """Without an optimizer, an iteration is one call of the outermost module."""
    from torch.nn.modules import module as m

    def pre(mod, args):
        if _is_compiling():  # dynamo folds it: no guard on _S
            return
        t0 = _S.clock()
        if _S.step_owner is None:
            _S.forward_depth += 1
            if _S.forward_depth == 1:
                if _S.forward_owner is None:
                    _S.forward_owner = id(mod)
                if id(mod) == _S.forward_owner:
                    _step_done(torch, "forward", t0)
        t0 += _S.step_excluded_ns
        _S.step_excluded_ns = 0
        # Counted even once an optimizer marks the steps: the hooks stay where dynamo compiled
        # something, and every module call still pays nn.Module's slow path for them.
        _own("forward_pre_hook", t0)

    def post(mod, args, out):
        if _is_compiling():  # dynamo folds it: no guard on _S
            return
        t0 = _S.clock()
        if _S.step_owner is None:
            _S.forward_depth = max(0, _S.forward_depth - 1)
        _own("forward_post_hook", t0)

    # Global module hooks put every module call of the program on nn.Module's slow path; the first
    # optimizer step drops them (_drop_forward_hooks).
    _S.forward_hooks = [m.register_module_forward_pre_hook(pre)]
    try:
        _S.forward_hooks.append(m.register_module_forward_hook(post, always_call=True))
    except TypeError:
        _S.forward_hooks.append(m.register_module_forward_hook(post))


def _dynamo_compiled_anything():
    if _S.compilations or _S.compile_requests:
        return True
    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None) if utils is not None else None
    try:
        return bool(counters and counters["frames"]["total"])
    except Exception:
        return True


def _drop_forward_hooks():
    """Once an optimizer marks the steps, the forward hooks only cost time. They stay where dynamo
    has compiled something already: its guards cover the global hooks, and taking them away would
    recompile the program."""
    if not _S.forward_hooks or _dynamo_compiled_anything():
        return
    for handle in _S.forward_hooks:
        handle.remove()
    _S.forward_hooks = []


def _wrap_memory_queries(torch):
    """The observer resets CUDA's peak counter at each step to get per-step peaks; the program's
    own max_memory_allocated / max_memory_reserved keep answering the peak since its own last
    reset, as if nothing had been reset."""
    import functools

    cuda = torch.cuda
    _S.original_max_allocated = cuda.max_memory_allocated
    _S.original_max_reserved = cuda.max_memory_reserved
    _S.original_reset_peak = cuda.reset_peak_memory_stats

    @functools.wraps(cuda.max_memory_allocated)
    def max_memory_allocated(device=None):
        return max(_S.original_max_allocated(device), _S.step_floor, _S.user_alloc)

    @functools.wraps(cuda.max_memory_reserved)
    def max_memory_reserved(device=None):
        return max(_S.original_max_reserved(device), _S.user_reserved)

    @functools.wraps(cuda.reset_peak_memory_stats)
    def reset_peak_memory_stats(device=None):
        _S.process_alloc = max(_S.process_alloc, _S.original_max_allocated(device), _S.step_floor)
        _S.process_reserved = max(_S.process_reserved, _S.original_max_reserved(device))
        _S.user_alloc = _S.user_reserved = _S.step_floor = 0
        return _S.original_reset_peak(device)

    cuda.max_memory_allocated = max_memory_allocated
    cuda.max_memory_reserved = max_memory_reserved
    cuda.reset_peak_memory_stats = reset_peak_memory_stats


def _step_memory(torch):
    """Records the peak since the last read (the steps since then) and starts the next count."""
    if not torch.cuda.is_initialized():
        return
    # One read of the allocator's counters (max_memory_allocated and its kin each flatten them all).
    stats = torch.cuda.memory_stats_as_nested_dict()
    allocated, reserved_now = stats["allocated_bytes"]["all"], stats["reserved_bytes"]["all"]
    alloc = max(allocated["peak"], _S.step_floor)
    reserved = reserved_now["peak"]
    _S.mem_reads += 1
    if _S.mem_reads % _S.mem_stride == 0:
        _S.memory.append({"step": _S.steps, "t_s": round(_S.now(), 4), "allocated_mib": allocated["current"] / 2**20, "reserved_mib": reserved_now["current"] / 2**20, "peak_mib": alloc / 2**20})
        _thin(_S.memory, "mem_stride")
    _S.user_alloc = max(_S.user_alloc, alloc)
    _S.user_reserved = max(_S.user_reserved, reserved)
    _S.process_alloc = max(_S.process_alloc, alloc)
    _S.process_reserved = max(_S.process_reserved, reserved)
    _S.step_floor = 0
    _S.original_reset_peak()


def _profile_tick(torch):
    """Profiles step N+1 (kernels on the GPU) when asked to with CUDOCTOR_RUN_PROFILE_STEP=N."""
    try:
        if _S.profiler is None and _S.steps == _S.profile_step and _S.profile is None:
            from torch.profiler import ProfilerActivity, profile

            _S.profiler = profile(activities=[ProfilerActivity.CUDA])
            _S.profiler.__enter__()
            _S.profile = {"step": _S.steps + 1, "kernels": []}
        elif _S.profiler is not None:
            torch.cuda.synchronize()
            p, _S.profiler = _S.profiler, None
            p.__exit__(None, None, None)
            kernels = {}
            for e in p.events():
                name = str(getattr(e, "name", ""))[:300]
                k = kernels.setdefault(name, [0, 0.0])
                k[0] += 1
                k[1] += float(getattr(e, "device_time_total", 0.0) or getattr(e, "cuda_time_total", 0.0) or 0.0)
            top = sorted(kernels.items(), key=lambda kv: -kv[1][1])[:60]
            _S.profile["kernels"] = [{"name": n, "count": c, "total_us": t} for n, (c, t) in top]
    except Exception as e:
        _S.profile = {"step": _S.steps, "kernels": [], "error": _short(e)}
        _S.profiler = None


# -- torch.compile -------------------------------------------------------------------------------


def _wrap_compile(torch):
    import functools

    original = torch.compile

    @functools.wraps(original)
    def compile(*args, **kwargs):
        try:
            backend = kwargs.get("backend", "inductor")
            if not isinstance(backend, str):
                backend = getattr(backend, "__name__", type(backend).__name__)
            key = (backend, kwargs.get("mode"))
            _S.compile_requests[key] = _S.compile_requests.get(key, 0) + 1
        except Exception as e:
            _S.error("compile", e)
        return original(*args, **kwargs)

    torch.compile = compile


def _hook_dynamo(torch):
    """Compilations and recompilations through dynamo's callbacks, and why frames recompiled."""
    # torch._dynamo is imported by torch.compile anyway; hooks go in when it arrives.
    def install(dynamo):
        _find_is_compiling(torch)
        try:
            cb = dynamo.callback

            def start(*a):
                cid = str(getattr(a[0], "compile_id", "")) if a else ""
                _S.compile_start[cid] = _S.time.perf_counter()

            def end(*a):
                cid = str(getattr(a[0], "compile_id", "")) if a else ""
                t = _S.compile_start.pop(cid, None)
                if t is not None:
                    _S.compile_s += _S.time.perf_counter() - t
                _S.compilations += 1
                # "frame/frame_compile_id": a second compile of one frame is a recompilation.
                parts = cid.strip("[]").split("/")
                if len(parts) >= 2 and parts[1].split("_")[0].isdigit() and int(parts[1].split("_")[0]) > 0:
                    _S.recompilations += 1

            cb.on_compile_start(start)
            cb.on_compile_end(end)
        except Exception as e:
            _S.error("dynamo callbacks", e)
        try:
            import torch._dynamo.convert_frame as cf

            for name in ("get_and_maybe_log_recompilation_reasons", "get_and_maybe_log_recompilation_reason"):
                original = getattr(cf, name, None)
                if original is None:
                    continue

                def reasons(*a, _original=original, **k):
                    out = _original(*a, **k)
                    try:
                        if out:
                            _S.recompile_events += 1
                        for r in (out if isinstance(out, (list, tuple)) else [out]):
                            text = str(r).strip().splitlines()[0][:MAX_REASON] if r else ""
                            if text:
                                _S.recompile_reasons[text] = _S.recompile_reasons.get(text, 0) + 1
                    except Exception as e:
                        _S.error("recompile reasons", e)
                    return out

                setattr(cf, name, reasons)
                break
        except Exception as e:
            _S.error("recompile reasons", e)

    if "torch._dynamo" in sys.modules:
        install(sys.modules["torch._dynamo"])
    else:
        _HOOK.hooks["torch._dynamo"] = install


def _compile_facts():
    # torch imports dynamo itself: only a program that compiled something gets these facts.
    if "torch._dynamo" not in sys.modules or not (_S.compile_requests or _S.compilations):
        return None
    torch = _S.torch
    try:
        from torch._dynamo.utils import counters
    except Exception as e:
        _S.error("dynamo counters", e)
        return None
    frames = counters.get("frames", {})
    stats = counters.get("stats", {})
    breaks = counters.get("graph_break", {})
    out = {
        "requests": [{"backend": b, "mode": m, "count": c} for (b, m), c in _S.compile_requests.items()],
        "frames_total": int(frames.get("total", 0)), "frames_ok": int(frames.get("ok", 0)),
        "unique_graphs": int(stats.get("unique_graphs", 0)),
        "compilations": _S.compilations, "recompilations": max(_S.recompilations, _S.recompile_events),
        "recompile_reasons": [{"reason": r, "count": c} for r, c in sorted(_S.recompile_reasons.items(), key=lambda kv: -kv[1])[:20]],
        "graph_breaks": [{"reason": str(r)[:MAX_REASON], "count": int(c)} for r, c in sorted(breaks.items(), key=lambda kv: -kv[1])[:30]],
        "compile_s": round(_S.compile_s, 3) if _S.compilations else None,
        "disabled_by": [], "suppress_errors": False,
    }
    for var in ("TORCH_COMPILE_DISABLE", "TORCHDYNAMO_DISABLE"):
        if os.environ.get(var) not in (None, "", "0"):
            out["disabled_by"].append("%s=%s" % (var, os.environ[var]))
    try:
        cfg = torch._dynamo.config
        if getattr(cfg, "disable", False):
            out["disabled_by"].append("torch._dynamo.config.disable")
        out["suppress_errors"] = bool(getattr(cfg, "suppress_errors", False))
    except Exception:
        pass
    metrics = sys.modules.get("torch._inductor.metrics")
    if metrics is not None:
        out["generated_kernels"] = int(getattr(metrics, "generated_kernel_count", 0))
    return out


# -- torch.distributed ---------------------------------------------------------------------------


def _wrap_distributed(torch):
    def install(dist):
        import functools

        for name in ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "broadcast", "reduce", "all_to_all", "all_to_all_single", "barrier"):
            original = getattr(dist, name, None)
            if original is None:
                continue

            def wrapper(*a, _original=original, _name=name, **k):
                if _is_compiling():
                    return _original(*a, **k)
                t = _S.time.perf_counter()
                try:
                    return _original(*a, **k)
                finally:
                    t0 = _S.clock()
                    try:
                        c = _S.api_collectives.setdefault(_name, [0, 0, 0.0])
                        c[0] += 1
                        x = a[0] if a else None
                        if hasattr(x, "element_size"):
                            c[1] += x.element_size() * x.numel()
                        c[2] += (_S.time.perf_counter() - t) * 1000.0
                    except Exception:
                        pass
                    _own("collectives", t0)

            setattr(dist, name, functools.wraps(original)(wrapper))
        destroy = getattr(dist, "destroy_process_group", None)
        if destroy is not None:
            @functools.wraps(destroy)
            def destroy_process_group(*a, **k):
                _harvest_nccl(torch)
                return destroy(*a, **k)

            dist.destroy_process_group = destroy_process_group

    if "torch.distributed" in sys.modules and hasattr(sys.modules["torch.distributed"], "all_reduce"):
        install(sys.modules["torch.distributed"])
    else:
        _HOOK.hooks["torch.distributed"] = install


def _harvest_nccl(torch):
    """Reads torch's flight recorder (every NCCL collective, timed), keeping what is new."""
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return
    try:
        if not (dist.is_available() and dist.is_initialized()):
            return
        _S.backend = str(dist.get_backend())
        if "nccl" not in _S.backend:
            return
        import pickle

        dump = getattr(torch._C._distributed_c10d, "_dump_nccl_trace", None)
        if dump is None:
            _S.nccl_note = "this torch has no flight recorder (_dump_nccl_trace)"
            return
        try:
            raw = dump(True, False, False)
        except TypeError:
            raw = dump()
        entries = pickle.loads(raw).get("entries", [])
        if not entries and not _S.nccl_seen:
            _S.nccl_note = "the flight recorder holds no entries (TORCH_NCCL_TRACE_BUFFER_SIZE unset?)"
        for e in entries:
            rid = (e.get("pg_id"), e.get("record_id"), e.get("collective_seq_id"))
            if e.get("state") != "completed" or rid in _S.nccl_seen:
                continue
            size = 0
            for dims, dtype in zip(e.get("input_sizes") or [], e.get("input_dtypes") or []):
                n = 1
                for d in dims:
                    n *= int(d)
                size += n * {"Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Long": 8, "Int": 4, "Byte": 1, "Char": 1, "Bool": 1}.get(str(dtype), 4)
            _S.nccl_seen[rid] = (str(e.get("profiling_name", "?")), size, e.get("duration_ms"))
        if len(_S.nccl_seen) > 200000:
            _S.nccl_note = "more than 200000 collectives: later ones not counted"
    except Exception as e:
        _S.nccl_note = "flight recorder: " + _short(e, 300)


def _collective_facts():
    if not _S.api_collectives and not _S.nccl_seen and getattr(_S, "backend", None) is None:
        return None
    by_op = {}
    for op, size, ms in _S.nccl_seen.values():
        c = by_op.setdefault(op, [0, 0, None])
        c[0] += 1
        c[1] += size
        if ms is not None:
            c[2] = (c[2] or 0.0) + float(ms)
    return {
        "backend": getattr(_S, "backend", ""),
        "api": [{"op": op, "calls": c, "bytes": b, "total_ms": round(ms, 3)} for op, (c, b, ms) in sorted(_S.api_collectives.items())],
        "nccl": [{"op": op, "calls": c, "bytes": b, "total_ms": None if ms is None else round(ms, 3)} for op, (c, b, ms) in sorted(by_op.items())],
        "nccl_unavailable": None if _S.nccl_seen else _S.nccl_note,
    }


# -- flash_attn, xFormers ------------------------------------------------------------------------


def _wrap_calls(module, library, names):
    import functools

    for name in names:
        original = getattr(module, name, None)
        if original is None or getattr(original, "__cudoctor_original__", None) is not None:
            continue

        def wrapper(*a, _original=original, _name=name, **k):
            torch = _S.torch
            if _is_compiling():
                return _original(*a, **k)
            t0 = _S.clock()
            dtype = str(getattr(a[0], "dtype", "")).replace("torch.", "") if a else ""
            c = _S.extensions.setdefault((library, _name, dtype), [0, 0])
            c[0] += 1
            _own("extensions", t0)
            try:
                return _original(*a, **k)
            except Exception:
                c[1] += 1
                raise

        w = functools.wraps(original)(wrapper)
        w.__cudoctor_original__ = original
        setattr(module, name, w)


_FLASH = ("flash_attn_func", "flash_attn_varlen_func", "flash_attn_qkvpacked_func", "flash_attn_kvpacked_func", "flash_attn_varlen_qkvpacked_func", "flash_attn_varlen_kvpacked_func", "flash_attn_with_kvcache")


def _on_flash_attn(module):
    _wrap_calls(module, "flash_attn", _FLASH)
    iface = sys.modules.get("flash_attn.flash_attn_interface")
    if iface is not None:
        _wrap_calls(iface, "flash_attn", _FLASH)


def _on_xformers_ops(module):
    _wrap_calls(module, "xformers", ("memory_efficient_attention", "memory_efficient_attention_forward"))


# -- the observer's own cost ---------------------------------------------------------------------


def _per_call_ns(fn, n):
    """The fastest of three timings of n calls of fn, per call."""
    clock = _S.clock
    best = None
    for _ in range(3):
        t = clock()
        for _ in range(n):
            fn()
        dt = clock() - t
        best = dt if best is None else min(best, dt)
    return best / n


def _attention_shell_ns():
    """What each attention call pays outside the timed part: entering the wrapper, the
    is_compiling() test and the clock itself. A replica of the wrapper's shell around a function
    that does nothing, against that function called directly."""
    scratch = [0, 0]
    clock = _S.clock
    # The wrapper's counter and timing choice, as they stand in a steady program.
    state = [TIMED_FIRST]
    time_mask, time_every = TIME_EVERY - 1, TIME_EVERY

    def bare(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *args, **kwargs):
        return None

    def shell(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *args, **kwargs):
        if _is_compiling():
            return bare(query, key, value, attn_mask, dropout_p, is_causal, *args, **kwargs)
        calls = state[0] = state[0] + 1
        weight = 1 if calls <= 0 else (0 if calls & time_mask else time_every)
        t0 = clock() if weight else 0
        scratch[0] += 1
        if weight:
            scratch[1] += (clock() - t0) * weight
        if args or kwargs:
            return bare(query, key, value, attn_mask, dropout_p, is_causal, *args, **kwargs)
        return bare(query, key, value, attn_mask, dropout_p, is_causal)

    n = 20000
    direct = _per_call_ns(lambda: bare(1, 2, 3, None, 0.0, True), n)
    wrapped = _per_call_ns(lambda: shell(1, 2, 3, None, 0.0, True), n)
    timed = scratch[1] / max(scratch[0], 1)
    return max(0.0, wrapped - direct - timed)


def _module_hooks_ns(torch):
    """What each module call pays for the observer's two global hooks outside their timed bodies:
    nn.Module's slow path and the calls of the hooks. A module call with two replica hooks
    against the same call with no global hooks; the program's own global hooks are put back."""
    from torch.nn.modules import module as m

    pre_hooks, post_hooks = m._global_forward_pre_hooks, m._global_forward_hooks
    saved = (dict(pre_hooks), dict(post_hooks))
    mod, x = torch.nn.Identity(), torch.zeros(1)
    n = 2000
    try:
        pre_hooks.clear()
        post_hooks.clear()
        fast = _per_call_ns(lambda: mod(x), n)

        def pre(module, args):
            if _is_compiling():
                return

        def post(module, args, out):
            if _is_compiling():
                return

        handles = [m.register_module_forward_pre_hook(pre), m.register_module_forward_hook(post)]
        try:
            slow = _per_call_ns(lambda: mod(x), n)
        finally:
            for h in handles:
                h.remove()
    finally:
        pre_hooks.clear()
        post_hooks.clear()
        pre_hooks.update(saved[0])
        post_hooks.update(saved[1])
    return max(0.0, slow - fast)


def _observer_cost():
    """The observer's own time on the program's threads: timed in place where it works, plus,
    per call, what the timing cannot see (measured here, at exit, on this machine)."""
    sites = [{"site": site, "calls": c, "ms": ns / 1e6} for site, (c, ns) in _S.own.items() if c]
    untimed = {}
    try:
        if _S.own["attention"][0] or _S.own["attention_sampled"][0]:
            untimed["attention_call_us"] = _attention_shell_ns() / 1e3
        if _S.own["forward_pre_hook"][0] and _S.torch is not None:
            untimed["module_call_us"] = _module_hooks_ns(_S.torch) / 1e3
    except Exception as e:
        _S.error("observer cost", e)
    attention_calls = _S.own["attention"][0] + _S.own["attention_sampled"][0]
    module_calls = _S.own["forward_pre_hook"][0]
    steady = sum(x["ms"] for x in sites if x["site"] not in ("attention_sampled", "profile"))
    steady += attention_calls * untimed.get("attention_call_us", 0.0) / 1e3
    steady += module_calls * untimed.get("module_call_us", 0.0) / 1e3
    sampled = sum(x["ms"] for x in sites if x["site"] == "attention_sampled")
    profiled = sum(x["ms"] for x in sites if x["site"] == "profile")
    return {"sites": sites, "untimed": untimed, "steady_ms": steady, "sampled_ms": sampled, "profile_ms": profiled}


# -- the report ----------------------------------------------------------------------------------


def _int_env(name):
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def _report(how):
    torch = _S.torch
    rec = {
        "observer_version": 1, "pid": os.getpid(), "ppid": os.getppid(), "argv": list(sys.argv)[:50], "executable": sys.executable,
        "rank": _int_env("RANK"), "local_rank": _int_env("LOCAL_RANK"), "world_size": _int_env("WORLD_SIZE"),
        "wall_s": round(_S.now(), 4), "written_at": how, "errors": _S.errors, "chained_sitecustomize": _CHAINED,
        "sdpa": {"calls": _S.sdpa_calls, "groups": list(_S.groups.values()), "ungrouped_calls": _S.sdpa_ungrouped},
        "extensions": [{"library": l, "function": f, "dtype": d, "calls": c, "errors": e} for (l, f, d), (c, e) in sorted(_S.extensions.items())],
        "steps": {"source": _S.step_source, "count": _S.steps, "durations_ms": [round(x, 4) for x in _S.durations], "memory": _S.memory},
    }
    try:
        rec["observer_cost"] = _observer_cost()
    except Exception as e:
        _S.error("observer cost", e)
    if _S.failure is not None:
        rec["failure"] = _S.failure
    if torch is None:
        return rec
    info = {"version": str(torch.__version__), "cuda": torch.version.cuda}
    try:
        if torch.cuda.is_initialized():
            dev = torch.cuda.current_device()
            info["device_name"] = torch.cuda.get_device_name(dev)
            info["capability"] = "%d.%d" % torch.cuda.get_device_capability(dev)
            stats = torch.cuda.memory_stats(dev)
            peak_alloc = max(_S.process_alloc, _S.original_max_allocated(dev), _S.step_floor)
            peak_res = max(_S.process_reserved, _S.original_max_reserved(dev))
            rec["memory"] = {
                "device": "cuda:%d" % dev, "peak_allocated_mib": peak_alloc / 2**20, "peak_reserved_mib": peak_res / 2**20,
                "total_mib": torch.cuda.get_device_properties(dev).total_memory / 2**20, "ooms": int(stats.get("num_ooms", 0)),
            }
    except Exception as e:
        _S.error("cuda facts", e)
    rec["torch"] = info
    try:
        rec["compile"] = _compile_facts()
    except Exception as e:
        _S.error("compile facts", e)
    try:
        _harvest_nccl(torch)
        rec["collectives"] = _collective_facts()
    except Exception as e:
        _S.error("collectives", e)
    if _S.profile is not None:
        rec["profile"] = _S.profile
    dist = sys.modules.get("torch.distributed")
    try:
        if rec["rank"] is None and dist is not None and dist.is_available() and dist.is_initialized():
            rec["rank"], rec["world_size"] = dist.get_rank(), dist.get_world_size()
    except Exception:
        pass
    return rec


def _write(how):
    if _S.written or not _DIR:
        return
    _S.written = True
    try:
        import json

        rec = _report(how)
        path = os.path.join(_DIR, "proc-%d.json" % os.getpid())
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(rec, f, default=str)
        os.replace(tmp, path)
    except Exception as e:
        try:
            sys.stderr.write("cudoctor run: the observer could not write its report: %s\n" % _short(e))
        except Exception:
            pass


def _on_sigterm():
    """A SIGTERM that would kill the process outright first lets the report be written."""
    import signal

    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def handler(signum, frame):
        _write("sigterm")
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:
        pass


def _mapped_objects():
    """The shared objects mapped into this process now, each once, in map order."""
    out, seen = [], set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                if not path.startswith("/") or ".so" not in path.rsplit("/", 1)[-1]:
                    continue
                if path.endswith(" (deleted)"):
                    path = path[: -len(" (deleted)")]
                if path not in seen:
                    seen.add(path)
                    out.append(path)
                    if len(out) >= MAX_MAPPED:
                        break
    except OSError:
        pass
    return out


def _record_failure(etype, value):
    """Keeps the exception the process ends on and what is mapped at that moment."""
    name = getattr(etype, "__qualname__", None) or getattr(etype, "__name__", "Exception")
    module = getattr(etype, "__module__", "builtins")
    if module and module != "builtins":
        name = "%s.%s" % (module, name)
    try:
        message = str(value)
    except Exception:
        message = ""
    _S.failure = {"exception": name, "message": message[:MAX_FAILURE_MESSAGE], "mapped": _mapped_objects()}


_PREVIOUS_EXCEPTHOOK = None


def _excepthook(etype, value, tb):
    try:
        if _S is not None and _S.failure is None and not issubclass(etype, (KeyboardInterrupt, SystemExit)):
            _record_failure(etype, value)
    except Exception as e:
        _S.error("failure", e)
    (_PREVIOUS_EXCEPTHOOK or sys.__excepthook__)(etype, value, tb)


_HOOK = None


def _install():
    global _S, _HOOK
    _S = _State()
    _HOOK = _AfterImport({"torch": _on_torch, "flash_attn": _on_flash_attn, "xformers.ops": _on_xformers_ops})
    sys.meta_path.insert(0, _HOOK)
    global _PREVIOUS_EXCEPTHOOK
    _PREVIOUS_EXCEPTHOOK = sys.excepthook
    sys.excepthook = _excepthook
    import atexit

    atexit.register(_write, "atexit")
    _on_sigterm()


if _DIR and os.path.isdir(_DIR):
    try:
        _install()
    except Exception as e:
        sys.stderr.write("cudoctor run: observer not installed: %s\n" % _short(e))
_chain_sitecustomize()
