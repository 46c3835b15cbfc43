//! `check --format prometheus`, `diff` and `fleet` end to end with the real binary, on the real
//! snapshots of docs/device-runs.

use std::path::PathBuf;
use std::process::Command;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn cudoctor(args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
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
    assert!(out.stderr.contains("only available for `cudoctor check`"));
}
