//! `cudoctor rules` and `cudoctor rule CODE`: the machine rules and `cudoctor run`'s rules, from
//! their one registry each.

use cudoctor_analyse::{rule_by_code, Rule, RULES};
use cudoctor_run::{run_rule_by_code, RUN_RULES};

/// One line per rule: code, layer, default severity, summary.
pub fn render_rules_text() -> String {
    let mut out = String::new();
    // A long summary continues under itself, past the three columns.
    let pad = " ".repeat(7 + 1 + 12 + 1 + 8 + 1);
    let mut row = |code: &str, layer: &str, severity: &str, summary: &str| {
        let head = format!("{code:7} {layer:12} {severity:8} ");
        out.push_str(&crate::layout::wrap(
            &head,
            &pad,
            summary,
            crate::layout::width(),
        ));
        out.push('\n');
    };
    for r in RULES {
        row(r.code, r.layer.name(), r.severity.name(), r.summary);
    }
    for r in RUN_RULES {
        row(r.code, r.layer.name(), r.severity.name(), r.summary);
    }
    out
}

/// The same list as JSON; `cudoctor run`'s rules carry `"command": "run"`.
pub fn render_rules_json() -> String {
    fn row<C>(r: &Rule<C>, command: Option<&str>) -> serde_json::Value {
        let mut v = serde_json::json!({
            "code": r.code, "name": r.name, "layer": r.layer.name(),
            "severity": r.severity.name(), "summary": r.summary,
        });
        if let Some(c) = command {
            v["command"] = c.into();
        }
        v
    }
    let rows: Vec<serde_json::Value> = RULES
        .iter()
        .map(|r| row(r, None))
        .chain(RUN_RULES.iter().map(|r| row(r, Some("run"))))
        .collect();
    serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n"
}

/// The list as a Markdown table: code, layer, default severity, summary.
pub fn render_rules_markdown() -> String {
    use cudoctor_types::inert::markdown as md;
    let mut out = String::from(
        "## cudoctor rules\n\n| code | layer | severity | summary |\n|---|---|---|---|\n",
    );
    let mut row = |code: &str, layer: &str, severity: &str, summary: &str| {
        out.push_str(&format!(
            "| {code} | {layer} | {severity} | {} |\n",
            md(summary)
        ));
    };
    for r in RULES {
        row(r.code, r.layer.name(), r.severity.name(), r.summary);
    }
    for r in RUN_RULES {
        row(
            r.code,
            &format!("{} (run)", r.layer.name()),
            r.severity.name(),
            r.summary,
        );
    }
    out
}

/// One rule as JSON: code, name, layer, default severity, summary and its documentation
/// (Markdown); `None` for an unknown code.
pub fn render_rule_json(code: &str) -> Option<String> {
    fn doc<C>(r: &Rule<C>, command: Option<&str>) -> serde_json::Value {
        let mut v = serde_json::json!({
            "code": r.code, "name": r.name, "layer": r.layer.name(),
            "severity": r.severity.name(), "summary": r.summary, "docs": r.docs,
        });
        if let Some(c) = command {
            v["command"] = c.into();
        }
        v
    }
    let v = match rule_by_code(code) {
        Some(r) => doc(r, None),
        None => doc(run_rule_by_code(code)?, Some("run")),
    };
    Some(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n")
}

/// The documentation of one rule (a machine rule, else a run rule); `None` for an unknown code.
/// It is Markdown already: `rule CODE --format markdown` prints it as it is.
pub fn render_rule_doc(code: &str) -> Option<String> {
    fn doc<C>(r: &Rule<C>, command: &str) -> String {
        format!(
            "# {} ({})\n\n{}\n\nLayer: {}{command}. Default severity: {}.\n\n{}",
            r.code,
            r.name,
            r.summary,
            r.layer.name(),
            r.severity.name(),
            r.docs
        )
    }
    match rule_by_code(code) {
        Some(r) => Some(doc(r, "")),
        None => run_rule_by_code(code).map(|r| doc(r, " (cudoctor run)")),
    }
}
