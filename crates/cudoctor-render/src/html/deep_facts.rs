//! The facts of the acceleration and multi-GPU layers: one line per runtime probe and what it
//! measured, the GPU pairs' links, NCCL copies and settings, and the all-reduce bandwidth.

use cudoctor_analyse::Layer;
use cudoctor_snapshot::{FrameworkProbe, ProbeEnding, ProbeRun, Snapshot};

use crate::facts::{fact, Fact};

/// Facts of the acceleration and multi-GPU layers (the runtime probes and the topology), for
/// every renderer that lists facts per layer.
pub fn deep_layer_facts(layer: Layer, s: &Snapshot) -> Vec<Fact> {
    match layer {
        Layer::Acceleration => acceleration_facts(s),
        Layer::Multigpu => multigpu_facts(s),
        _ => Vec::new(),
    }
}

/// Each runtime probe and what it measured, the frameworks' probes, how long they took.
fn acceleration_facts(s: &Snapshot) -> Vec<Fact> {
    let mut out = Vec::new();
    let Some(deep) = &s.deep else {
        return out;
    };
    for run in &deep.runs {
        probe_run_facts(run, &mut out);
    }
    for p in &deep.frameworks {
        out.push(fact(p.framework.name(), framework_line(p)));
    }
    if let Some(wall) = deep.wall_s {
        out.push(fact("probes", probes_line(deep, wall)));
    }
    out
}

/// One torch probe: its outcome, then torch, CUDA, each GPU, TF32, attention, the extensions
/// and torch.compile as it saw them.
fn probe_run_facts(run: &ProbeRun, out: &mut Vec<Fact>) {
    out.push(fact("probe", probe_line(run)));
    let Some(r) = &run.result else { return };
    if let Some(t) = &r.torch {
        out.push(fact("  torch", torch_line(t)));
    }
    if let Some(c) = &r.cuda {
        let v = if c.available {
            format!("available, {} device(s)", c.device_count.unwrap_or(0))
        } else {
            format!(
                "not available: {}",
                c.unavailable_reason.as_deref().unwrap_or("no reason given")
            )
        };
        out.push(fact("  CUDA", v));
    }
    for d in &r.devices {
        out.push(fact(format!("  GPU {}", d.index), device_line(d)));
    }
    if let Some(st) = &r.settings {
        let b = |x: Option<bool>| x.map_or("?", |v| if v { "on" } else { "off" });
        out.push(fact(
            "  TF32",
            format!(
                "matmul {}, cuDNN {}, float32 matmul precision {}",
                b(st.matmul_allow_tf32),
                b(st.cudnn_allow_tf32),
                st.float32_matmul_precision.as_deref().unwrap_or("?")
            ),
        ));
    }
    if let Some(sdpa) = &r.sdpa {
        out.push(fact("  attention", attention_line(sdpa)));
    }
    for e in &r.extensions {
        let state = match (e.imported, e.call_ok) {
            (false, _) => "import fails",
            (true, Some(false)) => "call fails",
            (true, Some(true)) => "works",
            (true, None) => "imports",
        };
        out.push(fact(
            format!("  {}", e.name),
            format!("{} {state}", e.version.as_deref().unwrap_or("")),
        ));
    }
    if let Some(c) = &r.compile {
        compile_facts(run, c, out);
    }
}

/// torch's version and the CUDA, cuDNN and NCCL it reports.
fn torch_line(t: &cudoctor_snapshot::TorchInfo) -> String {
    let mut line = t.version.clone();
    if let Some(c) = &t.cuda {
        line.push_str(&format!(", CUDA {c}"));
    }
    if let Some(c) = t.cudnn {
        line.push_str(&format!(", cuDNN {c}"));
    }
    if let Some(n) = &t.nccl {
        line.push_str(&format!(", NCCL {n}"));
    }
    line
}

/// One GPU as the probe saw it: capability, bf16, its matmul's time and result, its error.
fn device_line(d: &cudoctor_snapshot::DeviceProbe) -> String {
    let mut line = d.name.clone();
    if let Some(c) = &d.capability {
        line.push_str(&format!("  cc {c}"));
    }
    if let Some(b) = d.bf16_supported {
        line.push_str(if b { "  bf16" } else { "  no bf16" });
    }
    if let Some(ms) = d.matmul_ms {
        line.push_str(&format!("  matmul {ms:.3} ms"));
    }
    if d.matmul_ok == Some(false) {
        line.push_str("  WRONG RESULT");
    }
    if let Some(e) = &d.error {
        line.push_str(&format!("  error: {e}"));
    }
    line
}

/// The attention backend the default picks and those that work.
fn attention_line(sdpa: &cudoctor_snapshot::SdpaProbe) -> String {
    let picked = sdpa
        .default
        .as_ref()
        .and_then(|d| d.picked)
        .map_or("could not tell", |b| b.short());
    let works: Vec<&str> = sdpa
        .backends
        .iter()
        .map(|b| if b.available { b.backend.short() } else { "" })
        .filter(|x| !x.is_empty())
        .collect();
    format!(
        "default runs {picked}; working: {}{}",
        works.join(", "),
        if sdpa.forced_fallback {
            " (fused backends forced off for the test)"
        } else {
            ""
        }
    )
}

/// torch.compile: whether its Triton kernel ran (and how long it took), or why it fell back.
fn compile_facts(run: &ProbeRun, c: &cudoctor_snapshot::CompileProbe, out: &mut Vec<Fact>) {
    let v = match (&c.skipped, c.ok) {
        (Some(why), _) => format!("skipped: {why}"),
        (None, true) => format!(
            "Triton kernel ran{}",
            match (c.compile_s, run.compile_elapsed_s) {
                (Some(t), Some(p)) => {
                    format!(" (first call {t:.1} s; its own probe {p:.1} s)")
                }
                (Some(t), None) => format!(" (first call {t:.1} s)"),
                (None, Some(p)) => format!(" (its own probe {p:.1} s)"),
                (None, None) => String::new(),
            }
        ),
        (None, false) => format!(
            "falls back: {}",
            c.fallback_reason.as_deref().unwrap_or("?")
        ),
    };
    out.push(fact("  torch.compile", v));
    if c.skipped.is_none() && !c.not_tested.is_empty() {
        out.push(fact("  not tested", c.not_tested.join(", ")));
    }
}

/// The GPU pairs' links, the NCCL copies and settings, the all-reduce bandwidth.
fn multigpu_facts(s: &Snapshot) -> Vec<Fact> {
    let mut out = Vec::new();
    if let Some(m) = &s.multigpu {
        if let Some(t) = &m.topology {
            for p in &t.pairs {
                out.push(fact(
                    format!("GPU {} - GPU {}", p.a, p.b),
                    format!(
                        "{}{}",
                        p.label(),
                        match p.p2p_ok() {
                            Some(true) => ", P2P ok",
                            Some(false) => ", no P2P",
                            None => "",
                        }
                    ),
                ));
            }
        }
        for lib in &m.nccl_libraries {
            out.push(fact(
                "NCCL",
                format!(
                    "{} {}  [{}]",
                    lib.version.as_deref().unwrap_or("?"),
                    lib.path,
                    lib.origin
                ),
            ));
        }
    }
    for (k, v) in s
        .env
        .iter()
        .filter(|(k, _)| k.starts_with("NCCL_") || *k == "CUDA_VISIBLE_DEVICES")
    {
        out.push(fact(k, v.clone()));
    }
    if let Some(deep) = &s.deep {
        for (_, r) in deep.results() {
            let Some(ar) = &r.all_reduce else { continue };
            let v = if let Some(e) = &ar.error {
                format!("fails: {e}")
            } else if let Some(why) = &ar.skipped {
                format!("skipped: {why}")
            } else {
                ar.results
                    .iter()
                    .filter_map(|x| {
                        x.busbw_gbps
                            .map(|b| format!("{} MiB {b:.1} GB/s", x.size_mib))
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.push(fact(format!("all-reduce ({} GPUs)", ar.world), v));
        }
    }
    out
}

fn probe_line(run: &ProbeRun) -> String {
    let mut line = format!("{}: {}", run.interpreter, run.status.name());
    if let Some(t) = run.elapsed_s {
        line.push_str(&format!(" in {t:.1} s"));
    }
    if !run.detail.is_empty() {
        line.push_str(&format!(" — {}", run.detail));
    }
    line
}

/// How long the probes took together: their processes run at once, so the wall time is about
/// the slowest one's.
fn probes_line(deep: &cudoctor_snapshot::DeepFacts, wall: f64) -> String {
    let times: Vec<f64> = deep
        .runs
        .iter()
        .flat_map(|r| [r.elapsed_s, r.compile_elapsed_s])
        .chain(deep.frameworks.iter().map(|f| f.elapsed_s))
        .flatten()
        .collect();
    let sum: f64 = times.iter().sum();
    match times.len() {
        0 | 1 => format!("{wall:.1} s"),
        n => format!("{n} processes at once: {wall:.1} s wall, {sum:.1} s one after another"),
    }
}

/// One framework's probe in a line: where it computes and how the tiny computation went, or how
/// its process ended.
fn framework_line(p: &FrameworkProbe) -> String {
    let r = match (&p.ending, &p.result) {
        (ProbeEnding::Reported, Some(r)) => r,
        (ProbeEnding::NotRunUnderRoot, _) => {
            return "not run (interpreter of the inspected root)".to_string()
        }
        (
            ProbeEnding::Crashed {
                signal: Some(s), ..
            },
            _,
        ) => {
            return format!(
                "crashed (signal {s}) during \"{}\"",
                p.last_stage.as_deref().unwrap_or("start-up")
            )
        }
        (ProbeEnding::Crashed { exit_code, .. }, _) => {
            return format!(
                "exited with status {} without a report",
                exit_code.unwrap_or(-1)
            )
        }
        (ProbeEnding::TimedOut { after_s }, _) => {
            return format!(
                "no answer in {after_s:.0} s during \"{}\"",
                p.last_stage.as_deref().unwrap_or("start-up")
            )
        }
        (ProbeEnding::NotStarted { error }, _) => return format!("not started: {error}"),
        _ => return "no readable report".to_string(),
    };
    let mut line = r.version.clone().unwrap_or_default();
    if let Some(e) = &r.error {
        line.push_str(&format!(" fails: {e}"));
        return line.trim_start().to_string();
    }
    if r.uses_gpu() {
        line.push_str(&format!(
            ", {}: {}",
            r.platform.as_deref().unwrap_or("?"),
            r.devices.join(", ")
        ));
    } else {
        line.push_str(&format!(
            ", {}{}",
            match r.platform.as_deref() {
                Some("none") | None => "no device".to_string(),
                Some(p) => p.to_string(),
            },
            r.gpu_error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        ));
    }
    match (r.computation_ok, r.computation_ms) {
        (Some(true), Some(ms)) => line.push_str(&format!("; computation right in {ms:.2} ms")),
        (Some(true), None) => line.push_str("; computation right"),
        (Some(false), _) => line.push_str("; computation WRONG"),
        (None, _) => {
            if let Some(skipped) = &r.computation_skipped {
                line.push_str(&format!("; not computed: {skipped}"));
            }
        }
    }
    if let Some(t) = p.elapsed_s {
        line.push_str(&format!(" (probe {t:.1} s)"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DALI's report on a machine without a GPU (the real-env tier's dali-cuda120): no device,
    /// its reason, and the computation it did not try said as such.
    #[test]
    fn a_framework_line_says_what_the_probe_did_not_compute() {
        let p = FrameworkProbe {
            framework: cudoctor_snapshot::Framework::Dali,
            ending: ProbeEnding::Reported,
            elapsed_s: Some(1.4),
            result: Some(serde_json::from_str(r#"{"devices": [], "version": "2.4.0", "platform": "none", "computation_skipped": "a DALI pipeline is too heavy for a probe: its backend's CUDA device count stands for it", "gpu_error": "RuntimeError: CUDA runtime API error cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version", "messages": []}"#).unwrap()),
            ..Default::default()
        };
        assert_eq!(
            framework_line(&p),
            "2.4.0, no device (RuntimeError: CUDA runtime API error cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version); not computed: a DALI pipeline is too heavy for a probe: its backend's CUDA device count stands for it (probe 1.4 s)"
        );
    }
}
