//! Hostile machines and inputs, end to end: tools that hang or leave children behind, roots whose
//! programs must never run, values that must be quoted, redacted or escaped.

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The binary on the live machine (no `--root`), with `dir` first on PATH.
fn live(dir: &Path, args: &[&str]) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .args(args)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .env("NO_COLOR", "1")
        .output()
        .expect("run cudoctor");
    (out, started.elapsed())
}

fn script(path: &Path, body: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn an_nvidia_smi_that_leaves_a_child_holding_stdout_does_not_stretch_check() {
    // The reproducer: `sleep 1000 &` keeps the pipe open long after nvidia-smi has answered.
    let dir = tempfile::tempdir().unwrap();
    script(&dir.path().join("nvidia-smi"), "sleep 1000 &\necho x");
    let (out, took) = live(dir.path(), &["check", "--timeout", "3", "--format", "json"]);
    assert!(took < Duration::from_secs(15), "check took {took:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(v["snapshot"]["driver"]["attempts"].is_array());
}

#[test]
fn an_nvidia_smi_that_ignores_sigterm_and_forks_is_killed_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    script(
        &dir.path().join("bin/nvidia-smi"),
        &format!(
            "trap '' TERM\nsleep 1000 &\necho $! >> '{}'\nwhile :; do sleep 1; done",
            pids.display()
        ),
    );
    let (out, took) = live(
        &dir.path().join("bin"),
        &["check", "--timeout", "1", "--format", "json"],
    );
    assert!(took < Duration::from_secs(15), "check took {took:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let attempts = v["snapshot"]["driver"]["attempts"].as_array().unwrap();
    assert!(
        attempts.iter().any(|a| a["outcome"] == "timed_out"),
        "{attempts:#?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    for pid in fs::read_to_string(&pids).unwrap().lines() {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        assert!(
            stat.is_empty() || state.starts_with('Z'),
            "nvidia-smi's child {pid} outlived the timeout: {stat}"
        );
    }
}

#[test]
fn the_timeout_message_states_the_range_it_accepts() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["0", "-1", "3600.5", "nan"] {
        let (out, _) = live(dir.path(), &["check", &format!("--timeout={bad}")]);
        assert_eq!(out.status.code(), Some(2), "--timeout {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("more than 0 and at most 3600 seconds"),
            "--timeout {bad}: {err}"
        );
    }
    let (out, _) = live(
        dir.path(),
        &["check", "--timeout", "3600", "--format", "json"],
    );
    assert_ne!(out.status.code(), Some(2), "3600 is in the stated range");
}
