//! `cudoctor diff A B`: the semantic comparison of two snapshots (cudoctor-fleet), rendered.

use std::path::Path;

use cudoctor_analyse::analyse;
use cudoctor_render::{render_diff_html, render_diff_json, render_diff_markdown, render_diff_text};

use crate::cli::{MachineArgs, ReportFormat};
use crate::output::{knowledge_base, read_snapshot};
use crate::Outcome;

pub fn run(
    before: &Path,
    after: &Path,
    format: ReportFormat,
    verbose: bool,
) -> anyhow::Result<Outcome> {
    let a = read_snapshot(before)?;
    let b = read_snapshot(after)?;
    let kb = knowledge_base(&MachineArgs {
        root: None,
        timeout: 5.0,
        kb: None,
    })?;
    let (fa, fb) = (analyse(&a, &kb), analyse(&b, &kb));
    let report = cudoctor_fleet::diff(
        (&before.display().to_string(), &a, &fa),
        (&after.display().to_string(), &b, &fb),
    );
    let text = match format {
        ReportFormat::Json => crate::build_info::with_build_header(&render_diff_json(&report)),
        ReportFormat::Markdown => render_diff_markdown(&report, verbose),
        ReportFormat::Html => render_diff_html(&report, verbose),
        ReportFormat::Text => render_diff_text(&report, verbose),
    };
    crate::out!("{text}");
    Ok(if report.changed() {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}
