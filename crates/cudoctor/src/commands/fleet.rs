//! `cudoctor fleet`: the fleet report over snapshot files, or over snapshots collected through
//! Slurm (`fleet collect --slurm`) or read from a log; `fleet node` is what each node runs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _};
use cudoctor_analyse::analyse;
use cudoctor_fleet::frames;
use cudoctor_fleet::slurm::{self, SrunRequest};
use cudoctor_fleet::{FailureKind, FleetBuilder, FleetReport, NodeSummary};
use cudoctor_kb::Kb;
use cudoctor_render::{
    render_fleet_html, render_fleet_json, render_fleet_markdown, render_fleet_text,
};

use crate::cli::{
    FleetArgs, FleetCollectArgs, FleetCommand, FleetNodeArgs, MachineArgs, ReportFormat,
};
use crate::output::{host, knowledge_base, read_snapshot, snapshot_from_json, write_file};
use crate::Outcome;

pub fn run(args: &FleetArgs) -> anyhow::Result<Outcome> {
    match &args.command {
        Some(FleetCommand::Collect(c)) => collect(c),
        Some(FleetCommand::Node(n)) => node(n),
        None => files(&args.snapshots, args.format),
    }
}

fn builtin_kb() -> anyhow::Result<Kb> {
    knowledge_base(&MachineArgs {
        root: None,
        timeout: 5.0,
        kb: None,
    })
}

/// `fleet FILES..`: each file one node. A file that cannot be read is a node that failed, not
/// the end of the report; only when none can be read is it an error.
fn files(paths: &[PathBuf], format: ReportFormat) -> anyhow::Result<Outcome> {
    let kb = builtin_kb()?;
    let names = node_names(paths);
    let mut builder = FleetBuilder::new();
    let mut first_error = None;
    // Parsing and judging are independent per node: spread over the cores, in bounded batches
    // so at most one batch of snapshots is in memory.
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let jobs: Vec<(&PathBuf, &String)> = paths.iter().zip(&names).collect();
    for batch in jobs.chunks(workers * 4) {
        let results: Vec<Result<NodeSummary, (String, String)>> = std::thread::scope(|s| {
            let kb = &kb;
            let parts: Vec<_> = batch
                .chunks(batch.len().div_ceil(workers))
                .map(|part| {
                    s.spawn(move || {
                        part.iter()
                            .map(|(path, name)| match read_snapshot(path) {
                                Ok(snap) => Ok(NodeSummary::of(name, &snap, &analyse(&snap, kb))),
                                Err(e) => Err(((*name).clone(), crate::output::error_text(&e))),
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            parts
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
        for r in results {
            match r {
                Ok(summary) => builder.add_summary(summary),
                Err((name, e)) => {
                    first_error.get_or_insert_with(|| e.clone());
                    builder.add_failure(&name, FailureKind::Unreadable, e);
                }
            }
        }
    }
    let report = builder.finish();
    if report.reported == 0 {
        bail!(
            "no snapshot could be read: {}",
            first_error.unwrap_or_default()
        );
    }
    emit(&report, format);
    Ok(outcome(&report))
}

/// Node names from file names: `gpu07.json` -> `gpu07`; the path where two stems collide.
fn node_names(paths: &[PathBuf]) -> Vec<String> {
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string())
    };
    let mut count: HashMap<String, usize> = HashMap::new();
    for p in paths {
        *count.entry(stem(p)).or_default() += 1;
    }
    paths
        .iter()
        .map(|p| {
            let s = stem(p);
            if count[&s] > 1 {
                p.display().to_string()
            } else {
                s
            }
        })
        .collect()
}

fn emit(report: &FleetReport, format: ReportFormat) {
    let text = match format {
        ReportFormat::Json => crate::build_info::with_build_header(&render_fleet_json(report)),
        ReportFormat::Markdown => render_fleet_markdown(report),
        ReportFormat::Html => render_fleet_html(report),
        ReportFormat::Text => render_fleet_text(report),
    };
    crate::out!("{text}");
}

fn outcome(report: &FleetReport) -> Outcome {
    if report.has_problems() {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    }
}

fn seconds(name: &str, v: f64, max: f64) -> anyhow::Result<Duration> {
    if !(v.is_finite() && v > 0.0 && v <= max) {
        bail!("{name} must be between 0 and {max} seconds, got {v}");
    }
    Ok(Duration::from_secs_f64(v))
}

/// `fleet collect`: through srun, or from a log of frames.
fn collect(args: &FleetCollectArgs) -> anyhow::Result<Outcome> {
    let timeout = seconds("--timeout", args.timeout, 86_400.0)?;
    seconds("--node-timeout", args.node_timeout, 3600.0)?;
    let (gathered, mut failures) = match (&args.slurm, &args.from_log) {
        (Some(srun_args), _) => {
            let exe = std::env::current_exe().context("cannot find this cudoctor binary")?;
            let req = SrunRequest {
                srun: "srun".into(),
                user_args: srun_args.clone(),
                exe,
                node_args: vec!["--timeout".into(), args.node_timeout.to_string()],
                timeout,
                scontrol: "scontrol".into(),
            };
            let out = slurm::collect(&req).map_err(anyhow::Error::msg)?;
            (out.gathered, out.failures)
        }
        (None, Some(log)) => if log.as_os_str() == "-" {
            slurm::gather_from_log(std::io::stdin().lock(), "scontrol")
        } else {
            // Through the one opener of inputs: a FIFO or a device is refused at once; the
            // file itself is read as a stream, line by line.
            let file = cudoctor_types::regular_file::open_input(log, u64::MAX)
                .map_err(|e| anyhow::anyhow!("cannot read the log {}: {e}", log.display()))?;
            slurm::gather_from_log(std::io::BufReader::new(file), "scontrol")
        }
        .with_context(|| format!("cannot read {}", log.display()))?,
        (None, None) => {
            bail!("say where the snapshots come from: --slurm [SRUN ARGS..] or --from-log FILE")
        }
    };
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let kb = builtin_kb()?;
    let mut builder = FleetBuilder::new();
    for (node, json) in &gathered.snapshots {
        match snapshot_from_json(json.as_bytes(), &format!("the snapshot of {node}")) {
            Ok(snap) => {
                if let Some(dir) = &args.out {
                    let path = dir.join(format!("{}.json", file_safe(node)));
                    write_file(&path, &(serde_json::to_string_pretty(&snap)? + "\n"))?;
                }
                builder.add_node(node, &snap, &analyse(&snap, &kb));
            }
            Err(e) => {
                failures.insert(
                    node.clone(),
                    (FailureKind::Unreadable, crate::output::error_text(&e)),
                );
            }
        }
    }
    for (node, (kind, detail)) in &failures {
        builder.add_failure(node, *kind, detail.clone());
    }
    let report = builder.finish();
    if let Some(dir) = &args.out {
        write_file(&dir.join("fleet.json"), &render_fleet_json(&report))?;
    }
    emit(&report, args.format);
    Ok(outcome(&report))
}

/// A node name as a file name: anything but letters, digits, `.`, `-`, `_` becomes `_`.
fn file_safe(node: &str) -> String {
    let s: String = node
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

/// `fleet node`: this machine's snapshot, as frames on standard output.
fn node(args: &FleetNodeArgs) -> anyhow::Result<Outcome> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let name = args
        .node
        .clone()
        .or_else(|| var("SLURMD_NODENAME"))
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "unknown".into());
    let nodelist = var("SLURM_STEP_NODELIST").or_else(|| var("SLURM_JOB_NODELIST"));
    let host = match host(&args.machine) {
        Ok(h) => h,
        Err(e) => {
            crate::out!(
                "{}",
                frames::encode_failure(&name, &crate::output::error_text(&e))
            );
            return Err(e);
        }
    };
    let pythons = match crate::output::check_pythons(&host, &args.python) {
        Ok(p) => p,
        Err(e) => {
            crate::out!(
                "{}",
                frames::encode_failure(&name, &crate::output::error_text(&e))
            );
            return Err(e);
        }
    };
    let options = cudoctor_collect::Options {
        python: pythons,
        ..Default::default()
    };
    let snapshot = cudoctor_collect::collect(&host, &options, env!("CARGO_PKG_VERSION"));
    let json = serde_json::to_string(&snapshot)?;
    crate::out!("{}", frames::encode(&name, nodelist.as_deref(), &json));
    Ok(Outcome::Healthy)
}
