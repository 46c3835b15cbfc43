//! `cudoctor check`: collect (or load) a snapshot, judge it, render it.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use cudoctor_analyse::{analyse, Severity};
use cudoctor_collect::deep::{DeepOptions, ProbeProgress};
use cudoctor_collect::Options;
use cudoctor_render::{render_html, render_json, render_markdown, render_text, Report};

use crate::cli::{CheckArgs, Format};
use crate::output::{host, knowledge_base, read_snapshot, style, write_file};
use crate::Outcome;

pub fn run(args: &CheckArgs) -> anyhow::Result<Outcome> {
    let kb = knowledge_base(&args.machine)?;
    let snapshot = match &args.snapshot {
        Some(path) => read_snapshot(path)?,
        None => {
            let host = host(&args.machine)?;
            let options = Options {
                python: args.python.clone(),
                deep: args.deep.then(|| deep_options(args)).transpose()?,
                ..Default::default()
            };
            let snapshot = cudoctor_collect::collect(&host, &options, env!("CARGO_PKG_VERSION"));
            if args.deep && std::io::stderr().is_terminal() {
                // Clear the progress line before the report.
                eprint!("\r\x1b[2K");
            }
            snapshot
        }
    };
    let snapshot = if args.gpu.is_empty() {
        snapshot
    } else {
        what_if(snapshot, &args.gpu, &kb)?
    };
    if let Some(path) = &args.save {
        let json = serde_json::to_string_pretty(&snapshot)?;
        write_file(path, &(json + "\n"))?;
    }
    let findings = analyse(&snapshot, &kb);
    let report = Report {
        snapshot: &snapshot,
        findings: &findings,
    };
    let text = match args.format {
        Format::Text => render_text(&report, style()),
        Format::Json => render_json(&report),
        Format::Markdown => render_markdown(&report),
        Format::Html => render_html(&report),
    };
    crate::out!("{text}");
    let worst = findings.iter().map(|f| f.severity).min();
    let failing = match worst {
        Some(Severity::Error) => true,
        Some(Severity::Warning) => args.strict,
        _ => false,
    };
    Ok(if failing {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}

fn deep_options(args: &CheckArgs) -> anyhow::Result<DeepOptions> {
    if !(args.deep_timeout.is_finite() && args.deep_timeout > 0.0 && args.deep_timeout <= 3600.0) {
        bail!(
            "--deep-timeout must be between 0 and 3600 seconds, got {}",
            args.deep_timeout
        );
    }
    // Stage names on a terminal only; nothing on a pipe.
    let progress: Option<cudoctor_collect::deep::ProgressFn> =
        std::io::stderr().is_terminal().then(|| {
            Arc::new(|p: &ProbeProgress| {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K  probing {}: {} ...", p.interpreter, p.stage);
                let _ = err.flush();
            }) as cudoctor_collect::deep::ProgressFn
        });
    Ok(DeepOptions {
        timeout: Duration::from_secs_f64(args.deep_timeout),
        disable_fused: args.deep_disable_fused,
        progress,
        ..Default::default()
    })
}

/// The snapshot with its GPUs replaced by the ones named on the command line, so every rule
/// judges the stack for them. Memory and processes of the real GPUs are dropped with them.
fn what_if(
    mut snap: cudoctor_snapshot::Snapshot,
    gpus: &[String],
    kb: &cudoctor_kb::Kb,
) -> anyhow::Result<cudoctor_snapshot::Snapshot> {
    let mut replaced = Vec::new();
    for (index, given) in gpus.iter().enumerate() {
        let (name, cc) = match given.parse::<cudoctor_kb::ComputeCapability>() {
            Ok(cc) => (format!("what-if {}", cc.sm()), cc),
            Err(_) => match kb.gpu(given) {
                Some(m) => (given.clone(), m.cc),
                None => bail!("--gpu {given:?}: not a compute capability (sm_90, 9.0) or a GPU the knowledge base knows"),
            },
        };
        replaced.push(cudoctor_snapshot::Gpu {
            index: index as u32,
            name,
            compute_capability: Some(cc.to_string()),
            source: "--gpu (what-if)".to_string(),
            ..Default::default()
        });
    }
    snap.driver.gpus = replaced;
    snap.driver.processes.clear();
    Ok(snap)
}
