//! The explanation as JSON. Its text is rendered by cudoctor-render
//! (`render_explain_text`), laid out as every other report.

use crate::explanation::Explanation;

/// Stable JSON (the CLI's `--format json`).
pub fn to_json(e: &Explanation) -> String {
    serde_json::to_string_pretty(e).unwrap_or_else(|err| format!("{{\"error\": \"{err}\"}}"))
}
