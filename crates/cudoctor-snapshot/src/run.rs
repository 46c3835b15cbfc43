//! Facts from `cudoctor run -- CMD`: what the observer saw inside each Python process of the
//! user's own program (every torchrun rank, every Python child), and how the program ended.
//!
//! [`ProcessRecord`] is the observer's JSON, typed; every field is optional or defaulted so a
//! record cut short (a process killed half-way) or written by an older observer still loads.
//! The observer records raw facts only — the aten operators torch dispatched, torch's warnings,
//! counters — and the rules judge them.

use serde::{Deserialize, Serialize};

use crate::SdpaBackend;

/// Version of the observer's output format.
pub const OBSERVER_VERSION: u32 = 1;

/// One observed run of a user's command.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunFacts {
    /// The command as given after `--`.
    pub command: Vec<String>,
    /// Seconds since the Unix epoch when the command started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<u64>,
    /// Wall time of the whole command.
    #[serde(default)]
    pub wall_s: f64,
    #[serde(default)]
    pub exit: ChildExit,
    /// One record per Python process that loaded the observer, sorted by rank then pid.
    #[serde(default)]
    pub processes: Vec<ProcessRecord>,
    /// Observer files that could not be read, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
    /// A sitecustomize that was already on the path and that the observer ran after itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chained_sitecustomize: Option<String>,
    /// Read after the run when a process ended on an exception: the kernel images of the
    /// shared objects it had mapped (those with CUDA code) and of those its message names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failure_libraries: Vec<FailureLibrary>,
    /// The machine's GPUs' compute capabilities (`9.0`), read after a failed run when the
    /// failing process did not say its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_capabilities: Vec<String>,
}

/// A shared object a failing process had mapped or named, read after the run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FailureLibrary {
    /// Its kernel images (path, SASS, PTX), or why they could not be read.
    pub images: crate::LibraryImages,
    /// The file exists (a library a failed load names may not).
    #[serde(default)]
    pub exists: bool,
    /// The torch JIT build directory it was built in (`<root>/<name>/<name>.so` beside torch's
    /// `build.ninja`), when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit_build_dir: Option<String>,
}

/// The uncaught exception a process ended on, and the shared objects mapped into it then
/// (`/proc/self/maps`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ObservedFailure {
    /// The exception's type (`RuntimeError`, `torch.AcceleratorError`, `ImportError`).
    #[serde(default)]
    pub exception: String,
    /// Its message, cut at a few kilobytes.
    #[serde(default)]
    pub message: String,
    /// Shared objects mapped when it was raised, each once, in map order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mapped: Vec<String>,
}

impl RunFacts {
    /// Processes that imported torch.
    pub fn torch_processes(&self) -> impl Iterator<Item = &ProcessRecord> {
        self.processes.iter().filter(|p| p.torch.is_some())
    }
}

/// How the user's command ended.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ChildExit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal that ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Signals cudoctor received and passed on to the command's process group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forwarded_signals: Vec<i32>,
}

/// What the observer saw in one Python process.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProcessRecord {
    #[serde(default)]
    pub observer_version: u32,
    pub pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ppid: Option<u32>,
    #[serde(default)]
    pub argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    /// RANK / LOCAL_RANK / WORLD_SIZE as torchrun (or torch.distributed) set them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_rank: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_size: Option<u32>,
    #[serde(default)]
    pub wall_s: f64,
    /// How the record was written: `atexit`, `sigterm`, `destroy_process_group`.
    #[serde(default)]
    pub written_at: String,
    /// torch, when the process imported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<ObservedTorch>,
    #[serde(default)]
    pub sdpa: SdpaObservation,
    /// flash_attn and xFormers entry points called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<ExtensionCalls>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile: Option<CompileObservation>,
    #[serde(default)]
    pub steps: StepObservation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryObservation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collectives: Option<CollectiveObservation>,
    /// One profiled step (`--profile-step`): CUDA kernels torch's profiler saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileWindow>,
    /// The sitecustomize the observer shadowed and ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chained_sitecustomize: Option<String>,
    /// The observer's own failures; it never raises into the program.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The uncaught exception the process ended on, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<ObservedFailure>,
    /// The observer's own time on the program's threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer_cost: Option<ObserverCost>,
}

/// What the observer itself cost the program: timed in place where it works (per site), plus
/// what that timing cannot see, measured per call in the process at exit.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ObserverCost {
    #[serde(default)]
    pub sites: Vec<ObserverSite>,
    /// Per-call costs outside the timed parts: `attention_call_us` (entering the attention
    /// wrapper), `module_call_us` (nn.Module's slow path under the global hooks).
    #[serde(default)]
    pub untimed: std::collections::BTreeMap<String, f64>,
    /// Every site but the sampled attention calls, with the untimed per-call costs: what the
    /// program pays over its steps.
    #[serde(default)]
    pub steady_ms: f64,
    /// Attention calls run under the dispatch recorder (the first of each group and a few more),
    /// the program's own call included: a bounded, one-time cost.
    #[serde(default)]
    pub sampled_ms: f64,
    /// The profiled step (`--profile-step`), asked for and bounded: not part of `steady_ms`.
    #[serde(default)]
    pub profile_ms: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ObserverSite {
    /// `attention`, `attention_sampled`, `step`, `profile`, `forward_pre_hook`, `forward_post_hook`,
    /// `collectives`, `extensions`.
    pub site: String,
    #[serde(default)]
    pub calls: u64,
    #[serde(default)]
    pub ms: f64,
}

impl ProcessRecord {
    /// "rank 1 (pid 4242)" or "pid 4242".
    pub fn label(&self) -> String {
        match self.rank {
            Some(r) => format!("rank {r} (pid {})", self.pid),
            None => format!("pid {}", self.pid),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ObservedTorch {
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<String>,
    /// The current CUDA device's name and capability, when CUDA was initialised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
}

/// Every `torch.nn.functional.scaled_dot_product_attention` call, grouped by its inputs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SdpaObservation {
    /// Calls seen by the wrapper (eager calls; calls inside compiled graphs are not).
    #[serde(default)]
    pub calls: u64,
    #[serde(default)]
    pub groups: Vec<SdpaGroup>,
    /// Calls beyond the group limit, counted without their inputs.
    #[serde(default)]
    pub ungrouped_calls: u64,
}

/// Calls with the same device, dtype, shapes, mask and backend switches: torch dispatches them
/// all the same way, so the backend is read from the first call (and re-read now and then).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SdpaGroup {
    /// `cuda:0`, `cpu`.
    pub device: String,
    /// `float32`, `bfloat16`...
    pub dtype: String,
    #[serde(default)]
    pub query: Vec<u64>,
    #[serde(default)]
    pub key: Vec<u64>,
    #[serde(default)]
    pub value: Vec<u64>,
    /// `none`, `bool` or the mask's float dtype.
    #[serde(default)]
    pub mask: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mask_shape: Vec<u64>,
    #[serde(default)]
    pub dropout: bool,
    #[serde(default)]
    pub causal: bool,
    #[serde(default)]
    pub gqa: bool,
    /// Autograd was recording (a training call).
    #[serde(default)]
    pub grad: bool,
    /// torch.backends.cuda.*_sdp_enabled() at the call: flash, mem_efficient, cudnn, math.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<SdpaSwitches>,
    pub calls: u64,
    /// The aten operators torch dispatched inside sampled calls, in order, deduplicated
    /// (`_scaled_dot_product_flash_attention`, or `bmm`, `_safe_softmax` for the math path).
    #[serde(default)]
    pub dispatched_ops: Vec<String>,
    /// How many calls of the group were dispatched under observation.
    #[serde(default)]
    pub sampled: u32,
    /// Different sampled calls of one group dispatched differently (ops as seen later).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_dispatch: Vec<Vec<String>>,
    /// torch's own reasons for refusing each fused backend (`can_use_*(debug=True)` warnings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejections: Vec<SdpaRejection>,
    /// torch gave no per-backend reason: what the call raised with the math path off instead
    /// (torch 2.11 on CUDA raises "Invalid backend" for fp32 grouped-query inputs, warning nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasons_unavailable: Option<String>,
    /// For a group that ran math on a GPU: the same call measured against a fused backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<SdpaCost>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SdpaSwitches {
    pub flash: bool,
    pub mem_efficient: bool,
    pub cudnn: bool,
    pub math: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SdpaRejection {
    pub backend: SdpaBackend,
    /// torch's warnings, one reason each ("Expected query, key and value to all be of dtype ...").
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// The math path's cost for one group, measured by the observer on copies of the call's inputs
/// without autograd: math as called, then the fused backends with the inputs in `dtype`; each
/// warmed up by one call first, then timed with CUDA events (`*_ms`: one call's mean).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SdpaCost {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub math_peak_mib: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub math_ms: Option<f64>,
    /// The dtype the fused call was given (`bfloat16`).
    #[serde(default)]
    pub fused_dtype: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fused_peak_mib: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fused_ms: Option<f64>,
    /// The aten operators the fused call dispatched.
    #[serde(default)]
    pub fused_ops: Vec<String>,
    /// Why the comparison could not be made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Calls of one flash_attn / xFormers entry point with one dtype.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ExtensionCalls {
    /// `flash_attn`, `xformers`.
    pub library: String,
    pub function: String,
    #[serde(default)]
    pub dtype: String,
    pub calls: u64,
    /// Calls that raised.
    #[serde(default)]
    pub errors: u64,
}

/// `torch.compile` as dynamo and inductor counted it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CompileObservation {
    /// `torch.compile(...)` calls, by backend and mode.
    #[serde(default)]
    pub requests: Vec<CompileRequest>,
    /// Frames dynamo tried to convert, and those it converted.
    #[serde(default)]
    pub frames_total: u64,
    #[serde(default)]
    pub frames_ok: u64,
    /// Graphs captured.
    #[serde(default)]
    pub unique_graphs: u64,
    /// Compilations that ended (compile ids), and those that were recompilations of a frame.
    #[serde(default)]
    pub compilations: u64,
    #[serde(default)]
    pub recompilations: u64,
    /// Why frames were recompiled (failed guards), by reason.
    #[serde(default)]
    pub recompile_reasons: Vec<Counted>,
    /// Graph breaks by reason (dynamo's `counters["graph_break"]`).
    #[serde(default)]
    pub graph_breaks: Vec<Counted>,
    /// Kernels inductor generated (Triton on GPU, C++ on CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_kernels: Option<u64>,
    /// Seconds spent compiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_s: Option<f64>,
    /// What switched compilation off: `TORCH_COMPILE_DISABLE=1`, `torch._dynamo.config.disable`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_by: Vec<String>,
    /// Whether dynamo suppressed compile errors (falling back to eager).
    #[serde(default)]
    pub suppress_errors: bool,
}

impl CompileObservation {
    pub fn graph_break_count(&self) -> u64 {
        self.graph_breaks.iter().map(|b| b.count).sum()
    }

    /// Frames dynamo gave up on: they ran eagerly.
    pub fn eager_frames(&self) -> u64 {
        self.frames_total.saturating_sub(self.frames_ok)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CompileRequest {
    /// `inductor`, `eager`, `aot_eager`, `cudagraphs`, or a callable's name.
    pub backend: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    pub count: u64,
}

/// A reason with how often it occurred.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Counted {
    pub reason: String,
    pub count: u64,
}

/// Training or inference steps.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StepObservation {
    /// `optimizer` (an optimizer's step), `forward` (top-level module calls), or empty.
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub count: u64,
    /// Milliseconds between consecutive steps (thinned evenly past a few thousand).
    #[serde(default)]
    pub durations_ms: Vec<f64>,
    /// CUDA memory at the end of steps.
    #[serde(default)]
    pub memory: Vec<MemorySample>,
}

impl StepObservation {
    /// The median step time, leaving out the first `warmup` steps when there are enough.
    pub fn median_ms(&self) -> Option<f64> {
        let skip = if self.durations_ms.len() > 4 {
            (self.durations_ms.len() / 10).max(1)
        } else {
            0
        };
        median(self.durations_ms.get(skip..).unwrap_or(&[]))
    }
}

/// The median of a list of numbers, `None` when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MemorySample {
    pub step: u64,
    /// Seconds since the process started.
    pub t_s: f64,
    pub allocated_mib: f64,
    pub reserved_mib: f64,
    /// The highest allocation during the step.
    pub peak_mib: f64,
}

/// CUDA memory over the whole process (the caching allocator's counters).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MemoryObservation {
    pub device: String,
    pub peak_allocated_mib: f64,
    pub peak_reserved_mib: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_mib: Option<f64>,
    /// Allocations that failed (`num_ooms`).
    #[serde(default)]
    pub ooms: u64,
}

/// torch.distributed collectives.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CollectiveObservation {
    /// The process group backend (`nccl`, `gloo`).
    #[serde(default)]
    pub backend: String,
    /// Calls through the torch.distributed Python API.
    #[serde(default)]
    pub api: Vec<CollectiveCalls>,
    /// NCCL's own record of every collective (torch's flight recorder, timing on), including
    /// those DDP and FSDP issue from C++.
    #[serde(default)]
    pub nccl: Vec<CollectiveCalls>,
    /// Why the flight recorder gave nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_unavailable: Option<String>,
}

impl CollectiveObservation {
    /// Milliseconds NCCL spent in collectives, as the flight recorder timed them.
    pub fn nccl_ms(&self) -> Option<f64> {
        let t: Vec<f64> = self.nccl.iter().filter_map(|c| c.total_ms).collect();
        (!t.is_empty()).then(|| t.iter().sum())
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CollectiveCalls {
    /// `all_reduce`, `nccl:all_reduce`...
    pub op: String,
    pub calls: u64,
    #[serde(default)]
    pub bytes: u64,
    /// Time: device time for NCCL records, wall time of the call for API calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<f64>,
}

/// One step profiled with torch's profiler: the GPU kernels that ran.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProfileWindow {
    pub step: u64,
    #[serde(default)]
    pub kernels: Vec<ProfiledKernel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProfiledKernel {
    pub name: String,
    pub count: u64,
    #[serde(default)]
    pub total_us: f64,
}

impl SdpaBackend {
    /// The backend an SDPA call ran, from the aten operators torch dispatched inside it: each
    /// fused backend has its own operator; the math path dispatches matmuls and a softmax.
    pub fn from_dispatched_ops(ops: &[String]) -> Option<SdpaBackend> {
        let has = |needle: &str| ops.iter().any(|o| o.contains(needle));
        if has("_cudnn_attention") {
            Some(SdpaBackend::CudnnAttention)
        } else if has("_flash_attention") {
            Some(SdpaBackend::FlashAttention)
        } else if has("_efficient_attention") {
            Some(SdpaBackend::EfficientAttention)
        } else if has("_scaled_dot_product_attention_math")
            || has("softmax") && (has("bmm") || has("matmul") || has("baddbmm"))
        {
            Some(SdpaBackend::Math)
        } else {
            None
        }
    }

    /// The backend a CUDA kernel name belongs to, for the profiler's cross-check.
    pub fn from_kernel_name(name: &str) -> Option<SdpaBackend> {
        let n = name.to_ascii_lowercase();
        // cuDNN's kernels may contain "flash" too ("cudnn_generated_..._sdpa_..._flash_fprop").
        if n.contains("cudnn") && (n.contains("sdpa") || n.contains("fprop") || n.contains("fmha"))
        {
            Some(SdpaBackend::CudnnAttention)
        } else if n.contains("flash_fwd") || n.contains("flash_bwd") || n.contains("flash::") {
            Some(SdpaBackend::FlashAttention)
        } else if n.contains("fmha") || n.contains("mem_efficient") || n.contains("attentionkernel")
        {
            Some(SdpaBackend::EfficientAttention)
        } else {
            None
        }
    }
}

impl SdpaGroup {
    /// The backend the sampled calls ran.
    pub fn backend(&self) -> Option<SdpaBackend> {
        SdpaBackend::from_dispatched_ops(&self.dispatched_ops)
    }

    pub fn on_gpu(&self) -> bool {
        self.device.starts_with("cuda")
    }

    /// "float32 [8, 12, 1024, 64], bool mask, causal".
    pub fn describe(&self) -> String {
        let mut s = format!("{} {:?}", self.dtype, self.query);
        if self.mask != "none" && !self.mask.is_empty() {
            s.push_str(&format!(", {} mask", self.mask));
        }
        if self.causal {
            s.push_str(", causal");
        }
        if self.dropout {
            s.push_str(", dropout");
        }
        if self.gqa {
            s.push_str(", gqa");
        }
        s.push_str(&format!(" on {}", self.device));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_backend_is_read_from_the_dispatched_operators() {
        // As dispatched by torch 2.15 on CPU (captured with a TorchDispatchMode).
        assert_eq!(
            SdpaBackend::from_dispatched_ops(&ops(&[
                "_scaled_dot_product_flash_attention_for_cpu",
                "detach"
            ])),
            Some(SdpaBackend::FlashAttention)
        );
        assert_eq!(
            SdpaBackend::from_dispatched_ops(&ops(&[
                "mul",
                "transpose",
                "bmm",
                "_unsafe_view",
                "_safe_softmax",
                "bernoulli_",
                "bmm"
            ])),
            Some(SdpaBackend::Math)
        );
        assert_eq!(
            SdpaBackend::from_dispatched_ops(&ops(&["_scaled_dot_product_cudnn_attention"])),
            Some(SdpaBackend::CudnnAttention)
        );
        assert_eq!(
            SdpaBackend::from_dispatched_ops(&ops(&["_scaled_dot_product_efficient_attention"])),
            Some(SdpaBackend::EfficientAttention)
        );
        assert_eq!(SdpaBackend::from_dispatched_ops(&ops(&["detach"])), None);
    }

    #[test]
    fn kernel_names_cross_check() {
        assert_eq!(
            SdpaBackend::from_kernel_name(
                "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3"
            ),
            Some(SdpaBackend::CudnnAttention)
        );
        assert_eq!(
            SdpaBackend::from_kernel_name("void pytorch_flash::flash_fwd_kernel<...>"),
            Some(SdpaBackend::FlashAttention)
        );
        assert_eq!(
            SdpaBackend::from_kernel_name("fmha_cutlassF_bf16_aligned_64x64_rf_sm80"),
            Some(SdpaBackend::EfficientAttention)
        );
        assert_eq!(
            SdpaBackend::from_kernel_name("ampere_sgemm_128x64_nn"),
            None
        );
    }

    #[test]
    fn median_skips_warmup() {
        let s = StepObservation {
            durations_ms: vec![900.0, 10.0, 11.0, 12.0, 10.0, 11.0],
            ..Default::default()
        };
        assert_eq!(s.median_ms(), Some(11.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn a_minimal_record_loads() {
        let r: ProcessRecord = serde_json::from_str(r#"{"pid": 7}"#).unwrap();
        assert_eq!(r.label(), "pid 7");
        assert!(r.torch.is_none());
    }
}
