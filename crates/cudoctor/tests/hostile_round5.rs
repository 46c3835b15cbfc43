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

/// `run`'s record files, written by the observed program's processes: a program that writes
/// 4,200 records and one of 40 MB (each read whole before, without a bound on their number):
/// 4,096 are read, the rest counted, the big one named with its size, all said in the summary.
#[test]
fn run_reads_a_bounded_number_and_size_of_records_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"cd "$CUDOCTOR_RUN_DIR" || exit 9
i=1000; while [ $i -lt 5200 ]; do printf '{"pid":%d}' $i > proc-$i.json; i=$((i+1)); done
head -c 41943040 /dev/zero | tr '\0' ' ' > proc-0999.json"#;
    let r = bounded(
        dir.path(),
        &["run", "--out", "r.json", "--", "/bin/sh", "-c", script],
        &[],
        Duration::from_secs(120),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let processes = json["facts"]["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 4096);
    let unreadable: Vec<&str> = json["facts"]["unreadable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    assert!(
        unreadable[0].starts_with("proc-0999.json: it is 41943040 bytes"),
        "{unreadable:?}"
    );
    assert_eq!(
        unreadable[1],
        "104 more records not read: at most 4096 records and 512 MiB of them are read"
    );
    assert!(r.stderr.contains("not read"), "{}", r.stderr);
}
