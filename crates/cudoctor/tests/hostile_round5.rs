//! Hostile input, fifth round: the kernel log and DCGM results of a hostile root, the RECORD of
//! a framework pointing out of its environment, `check --verify=install` over a hostile
//! environment, `plan` over hostile project files, the Windows tree readers, and explain on
//! pathological logs.
//!
//! Every run goes through [`bounded`]: a command that outlives its limit is killed and the test
//! fails, so a regression is a failure, never a hung suite.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cudoctor_testkit::{run_bounded, Ran};

const BIN: &str = env!("CARGO_BIN_EXE_cudoctor");

/// Runs cudoctor in `dir` with `env` (nothing else inherited) and kills it after `limit`: a
/// command still running then fails the test.
fn bounded(dir: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Ran {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_bounded(cmd, None, limit, &format!("{args:?}"))
}

/// A root's `/dev/kmsg` (a file, as in a saved image) of 4 MB of short records: each line
/// shifted the rest of the buffer, 26 s of a `--timeout 2` check before (quadratic).
#[test]
fn a_root_kernel_log_of_many_short_lines_is_read_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("dev")).unwrap();
    let mut log = "6,1,2,-;x\n".repeat(300_000);
    log.push_str(&"\n".repeat(1_000_000));
    log.push_str("4,2,3,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n");
    fs::write(root.join("dev/kmsg"), log).unwrap();
    let r = bounded(
        dir.path(),
        &[
            "check",
            "--root",
            "root",
            "--timeout",
            "2",
            "--format",
            "json",
        ],
        &[],
        Duration::from_secs(20),
    );
    assert!(matches!(r.code, Some(0 | 1)), "{}", r.stderr);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let xids = &json["snapshot"]["health"]["kernel_log"]["xids"];
    assert_eq!(xids[0]["xid"], 79, "{xids}");
}
