//! `cudoctor run -- CMD`: the user's own program, observed; the summary at its end, reports
//! written, and cudoctor exits as the program did.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use cudoctor_collect::run::{exit_as, run_observed, RunOptions};
use cudoctor_run::{report, RunReport, RUN_REPORT_VERSION};

use crate::cli::RunArgs;

pub fn run(args: &RunArgs) -> anyhow::Result<crate::Outcome> {
    // A bad baseline is said before the program runs, not after an hour of training.
    let baseline = args.baseline.as_deref().map(read_run_report).transpose()?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("cudoctor-run.json"));
    let targets = report_paths(&out);
    // So is an output path the writer would refuse (a planted link).
    for (path, _) in &targets {
        crate::output::check_output_path(path)?;
    }
    let options = RunOptions {
        profile_step: args.profile_step,
        no_cost: args.no_cost,
    };
    let facts = run_observed(&args.command, &options)?;
    let exit = facts.exit.clone();
    let r = report(facts, env!("CARGO_PKG_VERSION"), baseline.as_ref());
    // The reports are on disk before anything is printed: a standard error that cannot be
    // written loses the summary, never the reports.
    let written = write_reports(&r, &targets);
    let text = cudoctor_render::render_run_text(&r);
    crate::output::note(&cudoctor_types::inert::text(&text));
    match written {
        Ok(paths) => crate::output::note(&format!("  reports: {}\n", paths.join(", "))),
        Err(e) => crate::output::note(&format!(
            "cudoctor run: error: {}\n",
            cudoctor_types::inert::text(&crate::output::error_text(&e))
        )),
    }
    exit_as(&exit)
}

/// A report's form, chosen by its file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReportKind {
    Json,
    Markdown,
    Html,
}

/// Where `run --out FILE` writes: FILE ending in `.md` gets the Markdown report alone, `.html`
/// (or `.htm`) the HTML report alone; any other FILE (`.json`, the default
/// `cudoctor-run.json`) gets the JSON report, with the Markdown and HTML reports beside it
/// (FILE with `.md` and `.html`).
fn report_paths(out: &Path) -> Vec<(PathBuf, ReportKind)> {
    let ext = out
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("md" | "markdown") => vec![(out.to_path_buf(), ReportKind::Markdown)],
        Some("html" | "htm") => vec![(out.to_path_buf(), ReportKind::Html)],
        _ => vec![
            (out.to_path_buf(), ReportKind::Json),
            (out.with_extension("md"), ReportKind::Markdown),
            (out.with_extension("html"), ReportKind::Html),
        ],
    }
}

/// Writes each report through the atomic writer; the paths written, for the summary.
fn write_reports(r: &RunReport, targets: &[(PathBuf, ReportKind)]) -> anyhow::Result<Vec<String>> {
    let mut written = Vec::new();
    for (path, kind) in targets {
        let body = match kind {
            ReportKind::Json => {
                crate::build_info::with_build_header(&serde_json::to_string_pretty(r)?) + "\n"
            }
            ReportKind::Markdown => cudoctor_render::render_run_markdown(r),
            ReportKind::Html => cudoctor_render::render_run_html(r),
        };
        crate::output::write_file(path, &body)
            .with_context(|| format!("writing the run report {}", path.display()))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// Largest run report read as a baseline (real ones are tens of KB).
const MAX_RUN_REPORT: u64 = 64 << 20;

/// Reads a saved `cudoctor run` report, with a clear message for every way it can be wrong.
pub fn read_run_report(path: &Path) -> anyhow::Result<RunReport> {
    let bytes = crate::output::read_input("the baseline", path, MAX_RUN_REPORT)?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not JSON", path.display()))?;
    match value.get("run_report_version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(RUN_REPORT_VERSION) => {}
        Some(v) => bail!(
            "{} is a run report of version {v}; this cudoctor reads version {RUN_REPORT_VERSION}",
            path.display()
        ),
        None => bail!(
            "{} is not a `cudoctor run` report (no run_report_version); write one with cudoctor run --out FILE",
            path.display()
        ),
    }
    serde_json::from_value(value)
        .with_context(|| format!("{} is not a valid run report", path.display()))
}
