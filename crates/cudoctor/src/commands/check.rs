//! `cudoctor check`: collect (or load) a snapshot, judge it, render it.

use cudoctor_analyse::{analyse, Severity};
use cudoctor_collect::Options;
use cudoctor_render::{render_json, render_markdown, render_text, Report};

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
                ..Default::default()
            };
            cudoctor_collect::collect(&host, &options, env!("CARGO_PKG_VERSION"))
        }
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
    };
    print!("{text}");
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
