//! `--verify`'s lines: how each printed fix stands once applied (to the facts, or to a copy of
//! the environment).

use cudoctor_plan::verify::{Change, Status, Verification};

use crate::layout::{width, wrap};

/// The verify block of the text report (and of Markdown's, in a list): one line per fix.
pub fn render_verify_text(verifications: &[Verification]) -> String {
    let mut out = String::from(if verifications.iter().any(|v| v.method == "install") {
        "Verify (each printed fix run in a temporary copy of the environment, which is checked):\n"
    } else {
        "Verify (each printed fix applied to this environment's facts, then checked again):\n"
    });
    if verifications.is_empty() {
        out.push_str("  no fix with a command to verify\n");
        return out;
    }
    for v in verifications {
        out.push_str(&wrap("  - ", "      ", &verify_line(v), width()));
        out.push('\n');
    }
    out
}

/// One fix's line: "FW002 verified: post-fix verdict: ...; it installs ...".
pub fn verify_line(v: &Verification) -> String {
    let name = match v.alternative {
        Some(n) => format!("{} (alternative {n})", v.code),
        None => v.code.clone(),
    };
    let how = if v.method == "install" {
        " in a copy of the environment"
    } else {
        ""
    };
    let verdict = post_verdict(v);
    let mut line = match v.status {
        Status::Verified => format!("{name} verified{how}: post-fix verdict: {verdict}"),
        Status::VerifiedAssuming => format!(
            "{name} verified{how}, assuming the index's release of {}: post-fix verdict: {verdict}",
            v.assumed.join(", ")
        ),
        Status::NotVerified => {
            let stays = v
                .remaining
                .iter()
                .find(|j| j.code == v.code)
                .map(|j| format!("{} {} would remain", j.code, j.title.trim_end_matches('.')));
            let brings: Vec<String> = v
                .introduced
                .iter()
                .map(|j| format!("{} {}", j.code, j.title.trim_end_matches('.')))
                .collect();
            let finding = match (stays, brings.is_empty()) {
                (Some(s), true) => s,
                (Some(s), false) => format!("{s}, and so would {}", brings.join("; ")),
                (None, false) => format!("after it: {}", brings.join("; ")),
                (None, true) => v
                    .note
                    .clone()
                    .unwrap_or_else(|| format!("{} would remain", v.code)),
            };
            format!("{name} not verified{how}: {finding}")
        }
        Status::NotVerifiable => format!(
            "{name} not verifiable: {}",
            v.note.as_deref().unwrap_or("nothing to apply")
        ),
    };
    let changes = changes(&v.changes);
    if !changes.is_empty() && v.status != Status::NotVerifiable {
        line.push_str(&format!(" (its commands: {changes})"));
    }
    if let (Some(note), true) = (
        &v.note,
        matches!(v.status, Status::Verified | Status::VerifiedAssuming),
    ) {
        line.push_str(&format!("; {note}"));
    }
    cudoctor_types::inert::line(&line).into_owned()
}

/// "0 errors" or "1 error: PLT001 (another root cause)".
fn post_verdict(v: &Verification) -> String {
    let n = v.remaining.len();
    if n == 0 {
        return "0 errors".into();
    }
    let codes: Vec<String> = v
        .remaining
        .iter()
        .map(|j| {
            if j.code == v.code {
                j.code.clone()
            } else {
                format!("{} (another root cause)", j.code)
            }
        })
        .collect();
    format!(
        "{n} {}: {}",
        if n == 1 { "error" } else { "errors" },
        codes.join(", ")
    )
}

fn changes(changes: &[Change]) -> String {
    changes
        .iter()
        .map(|c| match c {
            Change::Install {
                name,
                version: Some(v),
                ..
            } => format!("{name} {v}"),
            Change::Install { requirement, .. } => format!("{requirement} at the index's version"),
            Change::Reinstall { name, version } => match version {
                Some(v) => format!("{name} {v} reinstalled"),
                None => format!("{name} reinstalled"),
            },
            Change::Remove { name } => format!("{name} removed"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
