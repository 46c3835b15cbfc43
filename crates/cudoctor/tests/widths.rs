//! Text reports fit the terminal: laid out for `COLUMNS` (80, 100, 120 here; the terminal's own
//! width on a tty, 80 when piped), never wider except for one unbreakable token on its own line,
//! and never a word cut: the words at every width are the words at 120 (a long command gains
//! only its ` \` continuations). One snapshot of `check` per width.

use std::process::Command;

const H200X2: &str = "docs/device-runs/2026-11-30-h200x2/deep/baseline.json";
const H200X1: &str = "docs/device-runs/2026-11-30-h200x1/deep.json";
const H200X2_CHECK: &str = "docs/device-runs/2026-11-30-h200x2/check.json";
const OOM_LOG: &str = "docs/device-runs/2026-11-30-h200x2/explain/oom.log";

/// The binary from the repository root with `COLUMNS` as given (None: unset, output piped).
fn run(args: &[&str], columns: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.current_dir(cudoctor_testkit::repo_root())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .args(args);
    if let Some(c) = columns {
        cmd.env("COLUMNS", c);
    }
    let out = cmd.output().expect("run cudoctor");
    let code = out.status.code().unwrap_or(-1);
    assert!(code == 0 || code == 1, "{args:?}: exit {code}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn reports() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        (
            "check",
            vec!["check", "--snapshot", H200X2, "--gpu", "sm_61"],
        ),
        ("diff", vec!["diff", H200X1, H200X2]),
        ("fleet", vec!["fleet", H200X1, H200X2, H200X2_CHECK]),
        (
            "explain",
            vec!["explain", "--snapshot", H200X2, "--gpu", "sm_61", OOM_LOG],
        ),
        (
            "plan",
            vec![
                "plan",
                "--no-detect",
                "--gpu",
                "H200",
                "--gpu",
                "GTX 1080",
                "--driver",
                "580.159.04",
                "--python-version",
                "3.12",
                "--verbose",
            ],
        ),
        ("rules", vec!["rules"]),
    ]
}

/// Lines wider than `width` that hold more than one token (a path or command word alone on its
/// line cannot be broken), leaving out the log lines explain quotes as they are.
fn over(text: &str, width: usize) -> Vec<String> {
    let mut quoting = false;
    let mut over = Vec::new();
    for l in text.lines() {
        match l {
            "Matched:" => quoting = true,
            "" => quoting = false,
            _ => {}
        }
        let n = l.chars().count();
        if n > width && !quoting && l.split_whitespace().count() > 1 {
            over.push(format!("{n}: {l}"));
        }
    }
    over
}

/// The words of a report, a command's continuation marks left out.
fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().filter(|w| *w != "\\").collect()
}

#[test]
fn every_text_report_fits_80_100_and_120_columns_without_a_cut_word() {
    for (name, args) in reports() {
        let wide = run(&args, Some("120"));
        for width in [80usize, 100, 120] {
            let text = run(&args, Some(&width.to_string()));
            let o = over(&text, width);
            assert!(o.is_empty(), "{name} at {width}:\n{}", o.join("\n"));
            assert_eq!(
                words(&text),
                words(&wide),
                "{name} at {width}: a word was cut or lost"
            );
        }
    }
}

#[test]
fn check_text_at_80_100_and_120_columns() {
    let args = ["check", "--snapshot", H200X2, "--gpu", "sm_61"];
    for width in ["80", "100", "120"] {
        insta::assert_snapshot!(format!("check_text_{width}"), run(&args, Some(width)));
    }
}

/// Piped (no terminal) and without `COLUMNS`, text is laid out for 80 columns; a `COLUMNS`
/// wider than 120 still gets 120, and one that is not a number is ignored.
#[test]
fn piped_output_is_80_columns_and_columns_is_bounded() {
    let args = ["check", "--snapshot", H200X2, "--gpu", "sm_61"];
    assert_eq!(run(&args, None), run(&args, Some("80")));
    assert_eq!(run(&args, Some("300")), run(&args, Some("120")));
    assert_eq!(run(&args, Some("wide")), run(&args, Some("80")));
}
