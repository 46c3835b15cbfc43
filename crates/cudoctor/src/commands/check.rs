//! `cudoctor check`: collect (or load) a snapshot, judge it, render it.

use std::time::Duration;

use anyhow::bail;
use cudoctor_analyse::{analyse, Severity};
use cudoctor_collect::deep::DeepOptions;
use cudoctor_collect::Options;
use cudoctor_render::{
    render_html, render_json, render_markdown, render_prometheus, render_text, Report,
};

use crate::cli::{CheckArgs, CheckFormat};
use crate::output::{host, knowledge_base, read_snapshot, style, write_file};
use crate::progress::Spinner;
use crate::Outcome;

pub fn run(args: &CheckArgs) -> anyhow::Result<Outcome> {
    let started = std::time::Instant::now();
    if args.verify.is_some() && matches!(args.format, CheckFormat::Html | CheckFormat::Prometheus) {
        bail!("--verify goes with --format text, markdown or json");
    }
    // A --save target the writer would refuse (a planted link) is said before any work.
    if let Some(path) = &args.save {
        crate::output::check_output_path(path)?;
    }
    // Parsing the knowledge base costs about a fifth of a collection's CPU time: it runs beside
    // the collection instead of before it.
    let timings = cudoctor_collect::timings::global();
    let (kb, snapshot) = std::thread::scope(|s| {
        let kb = s.spawn(|| timings.time("kb", || knowledge_base(&args.machine)));
        let snapshot = timings.time("collect", || collect_or_load(args));
        let kb = kb
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("reading the knowledge base failed")));
        (kb, snapshot)
    });
    let (kb, snapshot) = (kb?, snapshot?);
    // The machine as found is what --save keeps; --gpu is a what-if judged from it.
    if let Some(path) = &args.save {
        let json = serde_json::to_string_pretty(&snapshot)?;
        write_file(path, &(json + "\n"))?;
    }
    let snapshot = cudoctor_analyse::what_if::with_gpus(snapshot, &args.gpu, &kb)
        .map_err(|e| anyhow::anyhow!("--gpu: {e}"))?;
    let findings = timings.time("judge", || analyse(&snapshot, &kb));
    let report = Report {
        snapshot: &snapshot,
        findings: &findings,
    };
    let text = timings.time("render", || match args.format {
        CheckFormat::Text => render_text(&report, style()),
        CheckFormat::Json => crate::build_info::with_build_header(&render_json(&report)),
        CheckFormat::Markdown if args.redact => cudoctor_render::render_issue_markdown(
            &report,
            &format!("cudoctor {}", crate::build_info::version_line()),
        ),
        CheckFormat::Markdown => render_markdown(&report),
        CheckFormat::Html => render_html(&report),
        CheckFormat::Prometheus => render_prometheus(&report, started.elapsed().as_secs_f64()),
    });
    let verified = args.verify.map(|mode| {
        timings.time("verify", || {
            crate::commands::verify::verify_all(
                &snapshot,
                &findings,
                &kb,
                mode,
                args.snapshot.is_none() && args.machine.root.is_none(),
            )
        })
    });
    let text = match &verified {
        None => text,
        Some(v) => with_verify(text, args.format, v),
    };
    let text = if args.redact {
        redactions(args, &snapshot).apply(&text)
    } else {
        text
    };
    timings.time("write", || crate::out!("{text}"));
    let worst = findings.iter().map(|f| f.severity).min();
    let failing = match worst {
        Some(Severity::Error) => true,
        Some(Severity::Warning) => args.strict,
        _ => false,
    };
    // What the check built is freed before the process ends (timed: on a large machine it
    // is a measurable part of the run).
    timings.time("teardown", move || drop((text, findings, snapshot, kb)));
    Ok(if failing {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}

/// The report with `--verify`'s lines: after the text report, as a Markdown section, or as the
/// JSON report's `verify` list.
fn with_verify(
    text: String,
    format: CheckFormat,
    verified: &[cudoctor_plan::verify::Verification],
) -> String {
    match format {
        CheckFormat::Json => crate::commands::verify::with_json_list(&text, "verify", verified),
        CheckFormat::Markdown => {
            let lines: Vec<String> = verified
                .iter()
                .map(|v| format!("- {}", cudoctor_render::verify_line(v)))
                .collect();
            format!("{text}\n## Verify\n\n{}\n", lines.join("\n"))
        }
        _ => format!("{text}\n{}", cudoctor_render::render_verify_text(verified)),
    }
}

fn check_deep_timeout(seconds: f64) -> anyhow::Result<()> {
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 3600.0) {
        bail!("--deep-timeout must be more than 0 and at most 3600 seconds, got {seconds}");
    }
    Ok(())
}

fn deep_options(args: &CheckArgs, spinner: Option<&Spinner>) -> anyhow::Result<DeepOptions> {
    let progress = spinner.map(Spinner::callback);
    Ok(DeepOptions {
        timeout: Duration::from_secs_f64(args.deep_timeout),
        disable_fused: args.deep_disable_fused,
        skip: args.deep_skip.clone(),
        progress,
        ..Default::default()
    })
}

/// The project directory searched for CUDA binaries: the one named, which must be a
/// directory, else the current directory when it is a Python project's root (on this machine
/// only: under `--root` the current directory is not the inspected machine's).
fn project_dir(
    args: &CheckArgs,
    host: &cudoctor_collect::Host,
) -> anyhow::Result<Option<cudoctor_collect::discovery::ProjectDir>> {
    if let Some(p) = &args.project {
        let abs = crate::output::absolute_machine_path(p)?;
        if !host.is_dir(&abs) {
            bail!("{p}: not a directory (name a project directory to search for CUDA binaries)");
        }
        return Ok(Some(cudoctor_collect::discovery::ProjectDir::Named(abs)));
    }
    Ok(crate::output::project_of_cwd(host, &args.machine))
}

/// The snapshot to judge: `--snapshot`'s, or this machine's (or `--root`'s), collected now.
fn collect_or_load(args: &CheckArgs) -> anyhow::Result<cudoctor_snapshot::Snapshot> {
    Ok(match &args.snapshot {
        Some(path) => read_snapshot(path)?,
        None => {
            let host = host(&args.machine)?;
            let pythons = crate::output::check_pythons(&host, &args.python)?;
            if args.deep {
                check_deep_timeout(args.deep_timeout)?;
            }
            let project = project_dir(args, &host)?;
            let spinner = args.deep.then(Spinner::start).flatten();
            let options = Options {
                project,
                python: pythons,
                deep: args
                    .deep
                    .then(|| deep_options(args, spinner.as_ref()))
                    .transpose()?,
                wheel_hashing: if args.verify_wheels {
                    cudoctor_collect::python::record::Hashing::Full
                } else {
                    Default::default()
                },
                ..Default::default()
            };
            let snapshot = cudoctor_collect::collect(&host, &options, env!("CARGO_PKG_VERSION"));
            if let Some(s) = spinner {
                s.finish();
            }
            snapshot
        }
    })
}

/// What `--redact` replaces: the running user's home and name on this machine (none for a saved
/// snapshot: its homes' owners are still replaced), and the machine's host name.
fn redactions(
    args: &CheckArgs,
    snapshot: &cudoctor_snapshot::Snapshot,
) -> cudoctor_render::redact::Redactions {
    let live = args.snapshot.is_none();
    let var = |k: &str| live.then(|| std::env::var(k).ok()).flatten();
    let user = var("USER").or_else(|| var("LOGNAME"));
    cudoctor_render::redact::Redactions::new(
        var("HOME").as_deref(),
        user.as_deref(),
        snapshot.host.hostname.as_deref(),
    )
}
