//! What the README promises about the binary: the snapshot schema it writes, an exit status for
//! every command, `--format markdown` for every report command, and what `--version` names.

use std::process::Command;

fn readme() -> String {
    std::fs::read_to_string(cudoctor_testkit::repo_root().join("README.md")).expect("README.md")
}

fn cudoctor(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .current_dir(cudoctor_testkit::repo_root())
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("run cudoctor");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The commands `cudoctor --help` lists.
fn subcommands() -> Vec<String> {
    let (_, help, _) = cudoctor(&["--help"]);
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn the_readme_names_the_snapshot_schema_the_binary_writes() {
    let want = format!(
        "`schema_version` (now {})",
        cudoctor_snapshot::SCHEMA_VERSION
    );
    assert!(readme().contains(&want), "README.md lacks {want}");
}

#[test]
fn every_command_has_its_exit_status_in_the_readme() {
    let text = readme();
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "## Exit status")
        .take_while(|l| !l.starts_with("## What"))
        .filter(|l| l.starts_with("| `"))
        .collect();
    for c in subcommands() {
        let named = format!("`{c}`");
        let alone = format!("`{c} ");
        assert!(
            table.iter().any(|row| {
                let first = row.split('|').nth(1).unwrap_or("");
                first.contains(&named) || first.contains(&alone)
            }),
            "the README's exit-status table has no row for `{c}`"
        );
    }
}

#[test]
fn every_report_command_takes_markdown() {
    let snapshot = "docs/device-runs/2026-11-30-h200x2/deep/baseline.json";
    let log = "docs/device-runs/2026-11-30-h200x2/explain/oom.log";
    for args in [
        vec!["explain", "--snapshot", snapshot, log],
        vec!["kernels", "--gpu", "sm_90", "crates/cudoctor/src"],
        vec!["rule", "KRN001"],
        vec!["rules"],
    ] {
        let mut with = args.clone();
        with.extend(["--format", "markdown"]);
        let (code, out, err) = cudoctor(&with);
        assert!(code == 0 || code == 1, "{with:?}: exit {code}: {err}");
        assert!(
            out.starts_with("## ") || out.starts_with("# "),
            "{with:?}:\n{out}"
        );
    }
}

#[test]
fn version_names_commit_build_date_and_knowledge_base() {
    let (code, out, _) = cudoctor(&["--version"]);
    assert_eq!(code, 0);
    let line = out.trim();
    assert!(
        line.starts_with(&format!("cudoctor {}", env!("CARGO_PKG_VERSION"))),
        "{line}"
    );
    for part in ["(commit ", ", built ", ", knowledge base 20"] {
        assert!(line.contains(part), "{line} lacks {part:?}");
    }
    let (_, json, _) = cudoctor(&["rule", "KRN001", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("rule JSON");
    assert_eq!(v["build"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(v["build"]["knowledge_base"]
        .as_str()
        .unwrap()
        .starts_with("20"));
    assert_eq!(v["code"], "KRN001");
}

/// `check --format markdown --redact`: a collapsed block for an issue, the verdict on its
/// summary line, the layers inside, and no home owner or host name left.
#[test]
fn redacted_markdown_is_a_collapsed_block_without_names() {
    let root = cudoctor_testkit::repo_root();
    let text =
        std::fs::read_to_string(root.join("docs/device-runs/2026-11-30-h200x2/deep/baseline.json"))
            .unwrap()
            .replace("/opt/torch/.venv", "/home/alice/.venv");
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let snap = if v.get("snapshot").is_some() {
        &mut v["snapshot"]
    } else {
        &mut v
    };
    snap["host"]["hostname"] = "gpu-node-07".into();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.json");
    std::fs::write(&file, serde_json::to_string(&v).unwrap()).unwrap();
    let path = file.to_str().unwrap();
    let (code, out, err) = cudoctor(&[
        "check",
        "--snapshot",
        path,
        "--gpu",
        "sm_61",
        "--format",
        "markdown",
        "--redact",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.starts_with("<details>\n<summary><b>cudoctor check</b>: 1 error"),
        "{out}"
    );
    assert!(out.trim_end().ends_with("</details>"), "{out}");
    assert!(out.contains("### Kernel images"), "{out}");
    assert!(out.contains("/home/[user]/.venv"), "{out}");
    for name in ["alice", "gpu-node-07"] {
        assert!(!out.contains(name), "{name} left in:\n{out}");
    }
    let (_, text, _) = cudoctor(&["check", "--snapshot", path, "--gpu", "sm_61", "--redact"]);
    assert!(
        text.contains("[host]") && !text.contains("gpu-node-07"),
        "{text}"
    );
    assert!(!text.contains("alice"), "{text}");
}

/// The README's route for a ComfyUI portable install is the one CI runs: the wheel installed
/// with the portable's own pip, cudoctor.exe from its Scripts folder (scripts/ci/windows.sh).
#[test]
fn the_comfyui_route_in_the_readme_is_the_one_ci_runs() {
    let text = readme();
    for line in [
        r"python_embeded\python.exe -m pip install cudoctor-VERSION-py3-none-win_amd64.whl",
        r"python_embeded\Scripts\cudoctor.exe check",
        "scripts/build-wheels.sh windows",
    ] {
        assert!(text.contains(line), "README.md lacks {line}");
    }
    let ci = std::fs::read_to_string(cudoctor_testkit::repo_root().join("scripts/ci/windows.sh"))
        .expect("scripts/ci/windows.sh");
    assert!(ci.contains("scripts/build-wheels.sh --profile dev --out \"$work/wheels\" windows"));
    assert!(ci.contains("python_embeded/Scripts/cudoctor.exe check"));
    assert!(ci.contains("the Python cudoctor.exe is installed in"));
}
