//! `check --format prometheus`, `diff` and `fleet` end to end with the real binary, on the real
//! snapshots of docs/device-runs.

use std::path::PathBuf;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn cudoctor(args: &[&str]) -> Out {
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run cudoctor");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A real snapshot recorded on a GPU machine, inside this repository.
fn device_run(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/device-runs")
        .join(rel);
    assert!(p.is_file(), "missing fixture {}", p.display());
    p.to_string_lossy().into_owned()
}

#[test]
fn prometheus_exposition_of_the_real_h200_snapshot() {
    let snap = device_run("2026-11-30-h200x2/check.json");
    let out = cudoctor(&["check", "--snapshot", &snap, "--format", "prometheus"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for line in [
        "# TYPE cudoctor_findings gauge",
        "cudoctor_findings_by_severity{severity=\"error\"} 0",
        "cudoctor_stack_info{driver=\"580.159.04\",max_cuda=\"13.0\",kernel_module=\"open\",tool_version=\"0.1.0\"} 1",
        "cudoctor_torch_info{env=\"/opt/torch/.venv\",version=\"2.11.0+cu130\",cuda=\"13.0\",variant=\"cu130\"} 1",
        "cudoctor_gpus 2",
        "cudoctor_probe_failures 0",
    ] {
        assert!(
            out.stdout.lines().any(|l| l == line),
            "no line {line:?} in\n{}",
            out.stdout
        );
    }
    assert!(out.stdout.contains("cudoctor_check_duration_seconds "));
}

#[test]
fn prometheus_is_only_for_check() {
    let snap = device_run("2026-11-30-h200x2/check.json");
    let out = cudoctor(&["diff", &snap, &snap, "--format", "prometheus"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("invalid value 'prometheus'"),
        "{}",
        out.stderr
    );
}

/// Runs the binary in `dir` (so file names in reports are short and stable).
fn cudoctor_in(dir: &std::path::Path, args: &[&str]) -> Out {
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("run cudoctor");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The real 2xH200 snapshot as a bare snapshot value.
fn h200() -> serde_json::Value {
    let text = std::fs::read_to_string(device_run("2026-11-30-h200x2/check.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["snapshot"].take()
}

fn set_package(snap: &mut serde_json::Value, name: &str, version: &str) {
    for p in snap["python_envs"][0]["packages"].as_array_mut().unwrap() {
        if p["name"] == name {
            p["version"] = version.into();
        }
    }
}

fn write(dir: &std::path::Path, name: &str, v: &serde_json::Value) {
    std::fs::write(dir.join(name), serde_json::to_string(v).unwrap()).unwrap();
}

#[test]
fn diff_of_one_package_shows_that_change_first_in_under_20_lines() {
    let dir = tempfile::tempdir().unwrap();
    let a = h200();
    let mut b = a.clone();
    set_package(&mut b, "torchvision", "0.27.0");
    write(dir.path(), "before.json", &a);
    write(dir.path(), "after.json", &b);
    let out = cudoctor_in(dir.path(), &["diff", "before.json", "after.json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines.len() < 20, "{} lines:\n{}", lines.len(), out.stdout);
    // The first line under the headline is the change.
    assert_eq!(lines[1], "Packages");
    assert_eq!(
        lines[2],
        "  ~ torchvision in torch/.venv (Python 3.12): 0.26.0 -> 0.27.0"
    );
    insta::assert_snapshot!("diff_one_package_text", out.stdout);

    let verbose = cudoctor_in(
        dir.path(),
        &["diff", "before.json", "after.json", "--verbose"],
    );
    assert!(verbose.stdout.contains(
        "~ python_envs[/opt/torch/.venv].packages[torchvision].version: 0.26.0 -> 0.27.0"
    ));

    let json = cudoctor_in(
        dir.path(),
        &["diff", "before.json", "after.json", "--format", "json"],
    );
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["changes"].as_array().unwrap().len(), 1);
    assert_eq!(v["changes"][0]["after"], "0.27.0");
    for format in ["markdown", "html"] {
        let r = cudoctor_in(
            dir.path(),
            &["diff", "before.json", "after.json", "--format", format],
        );
        assert_eq!(r.code, 1);
        assert!(
            r.stdout
                .contains("torchvision in torch/.venv (Python 3.12)"),
            "{format}"
        );
    }
}

#[test]
fn diff_of_a_snapshot_with_itself_exits_0() {
    let snap = device_run("2026-11-30-h200x2/check.json");
    let out = cudoctor(&["diff", &snap, &snap]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("Nothing changed."));
}

#[test]
fn diff_refuses_a_directory_and_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let snap = device_run("2026-11-30-h200x2/check.json");
    let d = dir.path().to_string_lossy().into_owned();
    let out = cudoctor(&["diff", &d, &snap]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
    let out = cudoctor(&["diff", "/nonexistent.json", &snap]);
    assert_eq!(out.code, 2);
}

#[test]
fn fleet_report_names_the_odd_node_and_the_unreadable_one_first() {
    let dir = tempfile::tempdir().unwrap();
    let a = h200();
    let mut odd = a.clone();
    odd["driver"]["version"]["value"] = "570.86.15".into();
    for n in ["node1", "node2", "node3"] {
        write(dir.path(), &format!("{n}.json"), &a);
    }
    write(dir.path(), "node10.json", &odd);
    std::fs::write(dir.path().join("node4.json"), "{ not json").unwrap();
    let files = [
        "node1.json",
        "node2.json",
        "node3.json",
        "node10.json",
        "node4.json",
    ];
    let mut args = vec!["fleet"];
    args.extend(files);
    let out = cudoctor_in(dir.path(), &args);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let text = &out.stdout;
    let failed = text
        .find("Nodes that did not report")
        .expect("failed section");
    let drift = text.find("Facts that differ").expect("drift section");
    assert!(failed < drift);
    assert!(text.contains("node4  unreadable"), "{text}");
    assert!(text.contains("      570.86.15  on 1: node10"), "{text}");
    insta::assert_snapshot!("fleet_text", text);

    args.extend(["--format", "json"]);
    let json = cudoctor_in(dir.path(), &args);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["reported"], 4);
    assert_eq!(v["failed"][0]["node"], "node4");
    let driver = v["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "driver version")
        .unwrap();
    assert_eq!(driver["majority"], "580.159.04");
    assert_eq!(driver["others"][0]["nodes"][0], "node10");
    for format in ["markdown", "html"] {
        let mut a = args[..args.len() - 2].to_vec();
        a.extend(["--format", format]);
        let r = cudoctor_in(dir.path(), &a);
        assert_eq!(r.code, 1);
        assert!(r.stdout.contains("570.86.15"), "{format}");
    }
}

#[test]
fn identical_nodes_exit_0() {
    let snap = device_run("2026-11-30-h200x2/check.json");
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("other.json");
    std::fs::copy(&snap, &b).unwrap();
    let out = cudoctor(&["fleet", &snap, &b.to_string_lossy()]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out
        .stdout
        .starts_with("cudoctor fleet: 2 nodes reported, 0 failed;"));
}

#[test]
fn fleet_node_frames_come_back_through_from_log_and_a_cut_node_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let r = root.to_string_lossy().into_owned();
    let a = cudoctor(&["fleet", "node", "--node", "gpu01", "--root", &r]);
    assert_eq!(a.code, 0, "{}", a.stderr);
    assert!(a
        .stdout
        .lines()
        .all(|l| l.starts_with("cudoctor-fleet/1 gpu01 ")));
    let b = cudoctor(&["fleet", "node", "--node", "gpu02", "--root", &r]);
    // gpu02's output is cut before its end: a node that broke off.
    let cut: String = b.stdout.lines().take(2).map(|l| format!("{l}\n")).collect();
    // As kubectl logs --prefix shows them.
    let log: String = a
        .stdout
        .lines()
        .map(|l| format!("[pod/cudoctor-abc/cudoctor] {l}\n"))
        .chain(
            cut.lines()
                .map(|l| format!("[pod/cudoctor-def/cudoctor] {l}\n")),
        )
        .collect();
    std::fs::write(dir.path().join("log.txt"), log).unwrap();
    let out = cudoctor_in(
        dir.path(),
        &[
            "fleet",
            "collect",
            "--from-log",
            "log.txt",
            "--out",
            "snaps",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["reported"], 1);
    assert_eq!(v["failed"][0]["node"], "gpu02");
    assert_eq!(v["failed"][0]["kind"], "failed");
    assert!(dir.path().join("snaps/gpu01.json").is_file());
    assert!(dir.path().join("snaps/fleet.json").is_file());
    let check = cudoctor(&[
        "check",
        "--snapshot",
        &dir.path().join("snaps/gpu01.json").to_string_lossy(),
    ]);
    assert!(check.code <= 1, "{}", check.stderr);
}

#[test]
fn fleet_collect_without_a_source_or_srun_is_a_clear_error() {
    let out = cudoctor(&["fleet", "collect"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--slurm"), "{}", out.stderr);
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["fleet", "collect", "--timeout", "5", "--slurm", "-N", "2"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run srun"));
}
