//! `cudoctor rule CODE` and `cudoctor rules`.

use anyhow::bail;
use cudoctor_analyse::{rule_by_code, RULES};

use crate::cli::Format;
use crate::Outcome;

pub fn show(code: &str) -> anyhow::Result<Outcome> {
    let Some(rule) = rule_by_code(code) else {
        // The rules of `cudoctor run`, over an observed program.
        if let Some(r) = cudoctor_run::run_rule_by_code(code) {
            crate::outln!("# {} ({})\n", r.code, r.name);
            crate::outln!("{}\n", r.summary);
            crate::outln!(
                "Layer: {} (cudoctor run). Default severity: {}.\n",
                r.layer.name(),
                r.severity.name()
            );
            crate::out!("{}", r.docs);
            return Ok(Outcome::Healthy);
        }
        bail!("no rule {code:?}; `cudoctor rules` lists them");
    };
    crate::outln!("# {} ({})\n", rule.code, rule.name);
    crate::outln!("{}\n", rule.summary);
    crate::outln!(
        "Layer: {}. Default severity: {}.\n",
        rule.layer.name(),
        rule.severity.name()
    );
    crate::out!("{}", rule.docs);
    Ok(Outcome::Healthy)
}

pub fn list(format: Format) -> anyhow::Result<Outcome> {
    crate::output::text_json_or_markdown(format)?;
    match format {
        Format::Json => {
            let mut rows: Vec<serde_json::Value> = RULES
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "code": r.code, "name": r.name, "layer": r.layer.name(),
                        "severity": r.severity.name(), "summary": r.summary,
                    })
                })
                .collect();
            rows.extend(cudoctor_run::RUN_RULES.iter().map(|r| {
                serde_json::json!({
                    "code": r.code, "name": r.name, "layer": r.layer.name(),
                    "severity": r.severity.name(), "summary": r.summary, "command": "run",
                })
            }));
            crate::outln!("{}", serde_json::to_string_pretty(&rows)?);
        }
        Format::Text | Format::Markdown | Format::Html | Format::Prometheus => {
            for r in RULES {
                crate::outln!(
                    "{:7} {:12} {:8} {}",
                    r.code,
                    r.layer.name(),
                    r.severity.name(),
                    r.summary
                );
            }
            for r in cudoctor_run::RUN_RULES {
                crate::outln!(
                    "{:7} {:12} {:8} {}",
                    r.code,
                    r.layer.name(),
                    r.severity.name(),
                    r.summary
                );
            }
        }
    }
    Ok(Outcome::Healthy)
}
