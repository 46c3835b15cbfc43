//! Plain-text rendering of an explanation (the CLI adds colour and other formats).

use crate::explanation::Explanation;
use crate::explanation::Verdict;
use cudoctor_plan::FixStep;
use std::fmt::Write;

/// A human-readable report, no colour.
pub fn to_text(e: &Explanation) -> String {
    // Lines quoted from the log and values taken from it are shown inert: a log line can never
    // move the cursor or forge a line of the report.
    use cudoctor_types::inert::{line, text};
    let mut out = String::new();
    let _ = write!(out, "{} [{}", line(&e.title), e.category);
    if e.is_known() {
        let _ = write!(out, ", confidence {:.2}", e.confidence);
    }
    out.push_str("]\n\n");
    let _ = writeln!(out, "Cause: {}", text(&e.cause));
    if !e.matched.is_empty() {
        out.push_str("\nMatched:\n");
        for m in &e.matched {
            let rank = m.rank.map(|r| format!(" [rank {r}]")).unwrap_or_default();
            let _ = writeln!(out, "  line {}{rank}: {}", m.line_no, line(&m.text));
        }
    }
    if let Some(check) = &e.machine {
        let verdict = match check.verdict {
            Verdict::Consistent => "this machine fits the explanation",
            Verdict::Contradicts => {
                "this machine contradicts the message (it was probably produced elsewhere)"
            }
            Verdict::Inconclusive => "not enough facts to confirm on this machine",
        };
        let _ = writeln!(out, "\nMachine: {verdict}");
    }
    if !e.evidence.is_empty() {
        out.push_str("\nEvidence:\n");
        for ev in &e.evidence {
            let _ = writeln!(out, "  - {}", line(ev));
        }
    }
    if !e.fix.is_empty() {
        out.push_str("\nFix:\n");
        // A command after a `$ ` prompt, as `check` shows one; prose without.
        for (i, f) in e.fix.iter().enumerate() {
            match f {
                FixStep::Shell(c) => {
                    let _ = writeln!(out, "  {}. $ {}", i + 1, text(c));
                }
                FixStep::Prose(p) => {
                    let _ = writeln!(out, "  {}. {}", i + 1, text(p));
                }
            }
        }
    }
    if !e.looked_for.is_empty() {
        out.push_str("\nLooked for:\n");
        for l in &e.looked_for {
            let _ = writeln!(out, "  {}: {}", l.category, l.signatures.join("; "));
        }
    }
    out
}

/// Stable JSON (the CLI's `--format json`).
pub fn to_json(e: &Explanation) -> String {
    serde_json::to_string_pretty(e).unwrap_or_else(|err| format!("{{\"error\": \"{err}\"}}"))
}
