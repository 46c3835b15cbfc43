//! `cudoctor explain`'s text: the title with category and confidence, the cause, the log lines
//! that matched, the machine's verdict, the evidence and the fix, laid out for 120 columns as
//! check's report is (prose wrapped with a hanging indent, commands continued with ` \`).

use std::fmt::Write;

use cudoctor_explain::{Explanation, Verdict};
use cudoctor_plan::FixStep;
use cudoctor_types::inert::{line, text};

use crate::layout::{command_lines, width, wrap};

/// A human-readable report, no colour. Lines quoted from the log and values taken from it are
/// shown inert: a log line can never move the cursor or forge a line of the report. A quoted
/// log line is not wrapped (it is evidence, as the log has it).
pub fn render_explain_text(e: &Explanation) -> String {
    let mut out = String::new();
    let mut head = format!("{} [{}", line(&e.title), e.category);
    if e.is_known() {
        let _ = write!(head, ", confidence {:.2}", e.confidence);
    }
    head.push(']');
    let _ = writeln!(out, "{}\n", wrap("", "    ", &head, width()));
    let _ = writeln!(out, "{}", paragraphs("Cause: ", "       ", &text(&e.cause)));
    if !e.matched.is_empty() {
        out.push_str("\nMatched:\n");
        for m in &e.matched {
            let rank = m.rank.map(|r| format!(" [rank {r}]")).unwrap_or_default();
            let _ = writeln!(out, "  line {}{rank}: {}", m.line_no, line(&m.text));
        }
    }
    if let Some(check) = &e.machine {
        let verdict = verdict_words(check.verdict);
        let _ = writeln!(out, "\nMachine: {verdict}");
    }
    if !e.evidence.is_empty() {
        out.push_str("\nEvidence:\n");
        for ev in &e.evidence {
            let _ = writeln!(out, "{}", wrap("  - ", "    ", &line(ev), width()));
        }
    }
    if !e.fix.is_empty() {
        out.push_str("\nFix:\n");
        steps(&mut out, &e.fix);
    }
    if !e.fix_elsewhere.is_empty() {
        out.push_str("\nFix, on the machine that wrote the log:\n");
        steps(&mut out, &e.fix_elsewhere);
    }
    // A line past the scanner's cap was read only in part: what it held past that is not in
    // this explanation (an unknown answer may be there), and the reader is told.
    let cut = e.stats.truncated_lines;
    if cut > 0 {
        let kib = cudoctor_explain::scanner::MAX_LINE_BYTES / 1024;
        let lines = if cut == 1 { "line was" } else { "lines were" };
        let _ = writeln!(
            out,
            "\n{}",
            wrap(
                "",
                "  ",
                &format!("Read in part: {cut} {lines} longer than {kib} KiB; only the first {kib} KiB of each was read."),
                width()
            )
        );
    }
    if !e.looked_for.is_empty() {
        out.push_str("\nLooked for:\n");
        for l in &e.looked_for {
            let head = format!("  {}: ", l.category);
            let _ = writeln!(
                out,
                "{}",
                wrap(&head, "      ", &l.signatures.join("; "), width())
            );
        }
    }
    out
}

/// The explanation as Markdown to paste into an issue: the title and cause, the quoted log lines
/// in a code block, the machine's verdict, the evidence, and the fix with its commands in `sh`
/// blocks. Everything taken from the log is inert (escaped, or inside a fence longer than any
/// backtick run it holds).
pub fn render_explain_markdown(e: &Explanation) -> String {
    use cudoctor_types::inert::{markdown as md, markdown_fence};
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## cudoctor explain: {}
",
        md(&e.title)
    );
    let mut head = format!("Category: **{}**", e.category);
    if e.is_known() {
        let _ = write!(head, ", confidence {:.2}", e.confidence);
    }
    let _ = writeln!(out, "{head}\n");
    for l in text(&e.cause).lines() {
        let _ = writeln!(out, "{}", md(l));
    }
    if !e.matched.is_empty() {
        let body: String = e
            .matched
            .iter()
            .map(|m| {
                let rank = m.rank.map(|r| format!(" [rank {r}]")).unwrap_or_default();
                format!("line {}{rank}: {}\n", m.line_no, line(&m.text))
            })
            .collect();
        let fence = markdown_fence(&body);
        let _ = writeln!(out, "\n### Matched\n\n{fence}text\n{body}{fence}");
    }
    if let Some(check) = &e.machine {
        let verdict = verdict_words(check.verdict);
        let _ = writeln!(out, "\n### Machine\n\n{verdict}");
    }
    if !e.evidence.is_empty() {
        out.push_str("\n### Evidence\n\n");
        for ev in &e.evidence {
            let _ = writeln!(out, "- {}", md(ev));
        }
    }
    let fix_md = |out: &mut String, title: &str, fix: &[FixStep]| {
        if fix.is_empty() {
            return;
        }
        let _ = writeln!(out, "\n### {title}\n");
        for (i, f) in fix.iter().enumerate() {
            match f {
                FixStep::Shell(c) | FixStep::PowerShell(c) => {
                    let lang = if matches!(f, FixStep::Shell(_)) {
                        "sh"
                    } else {
                        "powershell"
                    };
                    let body = format!("{}\n", text(c));
                    let fence = markdown_fence(&body);
                    let _ = writeln!(out, "{}. run:\n\n   {fence}{lang}", i + 1);
                    for l in body.lines() {
                        let _ = writeln!(out, "   {l}");
                    }
                    let _ = writeln!(out, "   {fence}");
                }
                FixStep::Prose(p) => {
                    let _ = writeln!(out, "{}. {}", i + 1, md(&line(p)));
                }
            }
        }
    };
    fix_md(&mut out, "Fix", &e.fix);
    fix_md(
        &mut out,
        "Fix, on the machine that wrote the log",
        &e.fix_elsewhere,
    );
    if !e.looked_for.is_empty() {
        out.push_str("\n### Looked for\n\n");
        for l in &e.looked_for {
            let _ = writeln!(out, "- {}: {}", l.category, md(&l.signatures.join("; ")));
        }
    }
    out
}

/// Numbered fix steps: a command after a `$ ` prompt, as `check` shows one; prose without.
fn steps(out: &mut String, fix: &[FixStep]) {
    {
        for (i, f) in fix.iter().enumerate() {
            let number = format!("  {}. ", i + 1);
            let pad = " ".repeat(number.len());
            match f {
                FixStep::Shell(c) => {
                    let first = format!("{number}$ ");
                    for l in command_lines(&first, &format!("{pad}    "), &text(c)) {
                        let _ = writeln!(out, "{l}");
                    }
                }
                FixStep::Prose(p) => {
                    let _ = writeln!(out, "{}", paragraphs(&number, &pad, &text(p)));
                }
                FixStep::PowerShell(c) => {
                    let _ = writeln!(out, "{number}PS> {}", line(c));
                }
            }
        }
    }
}

/// Prose of one or more lines, each wrapped; lines after the first start with `rest`.
fn paragraphs(first: &str, rest: &str, text: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| wrap(if i == 0 { first } else { rest }, rest, l, width()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the machine check says of the explanation, in words (text and Markdown alike).
fn verdict_words(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Consistent => "this machine fits the explanation",
        Verdict::Contradicts => {
            "this machine contradicts the message (it was probably produced elsewhere)"
        }
        Verdict::Inconclusive => "not enough facts to confirm on this machine",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_explain::explain_str;

    #[test]
    fn title_category_and_confidence_share_the_first_line() {
        let text = render_explain_text(&explain_str(
            "AssertionError: Torch not compiled with CUDA enabled",
        ));
        assert!(text.contains("Cause:") && text.contains("Fix:") && text.contains("line 1"));
        assert_eq!(
            text.lines().next(),
            Some("A CPU-only build of PyTorch is installed [cpu_only_wheel, confidence 0.95]")
        );
    }

    #[test]
    fn prose_and_commands_fit_120_columns() {
        for message in [
            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
            "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.2 GiB is free.",
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
        ] {
            let text = render_explain_text(&explain_str(message));
            let mut quoted = false;
            for l in text.lines() {
                // The log's own lines are quoted as they are.
                if l == "Matched:" {
                    quoted = true;
                } else if l.is_empty() {
                    quoted = false;
                }
                if quoted || l.trim().split(' ').count() == 1 {
                    continue;
                }
                assert!(
                    crate::layout::visible_len(l) <= width(),
                    "{} columns: {l}\n{text}",
                    l.chars().count()
                );
            }
        }
    }
}
