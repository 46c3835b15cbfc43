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
    let json_path = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("cudoctor-run.json"));
    let options = RunOptions {
        profile_step: args.profile_step,
        no_cost: args.no_cost,
    };
    let facts = run_observed(&args.command, &options)?;
    let exit = facts.exit.clone();
    let r = report(facts, env!("CARGO_PKG_VERSION"), baseline.as_ref());
    let text = cudoctor_render::render_run_text(&r);
    eprint!("{}", cudoctor_types::inert::text(&text));
    match write_reports(&r, &json_path) {
        Ok(paths) => eprintln!("  reports: {}", paths.join(", ")),
        Err(e) => eprintln!("cudoctor run: error: {e:#}"),
    }
    exit_as(&exit)
}

/// Writes FILE (JSON) and, beside it, FILE with .md and .html.
fn write_reports(r: &RunReport, json: &Path) -> anyhow::Result<Vec<String>> {
    let md = json.with_extension("md");
    let html = json.with_extension("html");
    let body = crate::build_info::with_build_header(&serde_json::to_string_pretty(r)?);
    std::fs::write(json, body + "\n").with_context(|| format!("writing {}", json.display()))?;
    std::fs::write(&md, cudoctor_render::render_run_markdown(r))
        .with_context(|| format!("writing {}", md.display()))?;
    std::fs::write(&html, cudoctor_render::render_run_html(r))
        .with_context(|| format!("writing {}", html.display()))?;
    Ok([json, md.as_path(), html.as_path()]
        .iter()
        .map(|p| p.display().to_string())
        .collect())
}

/// Reads a saved `cudoctor run` report, with a clear message for every way it can be wrong.
pub fn read_run_report(path: &Path) -> anyhow::Result<RunReport> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read the baseline {}", path.display()))?;
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
