//! Hostile input, sixth round (a battery the earlier rounds had not seen; docs/hostile-input.md):
//! secrets inside the values of recorded variables, many large RECORDs in one environment, a
//! copy of `check --verify=install` left by a SIGKILL, reads that block in the kernel, and the
//! error messages of refused inputs.
//!
//! Every run goes through [`bounded`]: a command that outlives its limit is killed and the test
//! fails, so a regression is a failure, never a hung suite.

mod support;

use std::fs;
use std::path::Path;
use std::time::Duration;

use cudoctor_testkit::run_bounded;

const BIN: &str = env!("CARGO_BIN_EXE_cudoctor");

use support::bounded;

/// Secrets where no variable's name says so: a token in an index URL's query, a `--token=` or
/// a bearer header inside a CUDA or torch variable. They were written as they were into the
/// JSON report and the saved snapshot (security).
#[test]
fn secrets_inside_recorded_variables_reach_no_report_and_no_saved_snapshot() {
    let m = support::FakeMachine::h100_cu130();
    let root = m.root().display().to_string();
    let out = tempfile::tempdir().unwrap();
    let saved = out.path().join("snap.json");
    let saved_arg = saved.display().to_string();
    let env = [
        ("VIRTUAL_ENV", "/opt/venv"),
        (
            "PIP_INDEX_URL",
            "https://idx.corp/simple/?private_token=SEKRIT1",
        ),
        (
            "UV_EXTRA_INDEX_URL",
            "https://idx.corp/simple?token=SEKRIT2",
        ),
        ("CUDA_LAUNCH_FLAGS", "--token=SEKRIT3 -v"),
        ("TORCH_HUB_HEADERS", "Authorization: Bearer SEKRIT4"),
    ];
    for format in ["json", "text", "markdown", "html"] {
        let r = bounded(
            out.path(),
            &[
                "check",
                "--root",
                &root,
                "--timeout",
                "5",
                "--format",
                format,
                "--save",
                &saved_arg,
            ],
            &env,
            Duration::from_secs(60),
        );
        assert!(matches!(r.code, Some(0 | 1)), "{}", r.stderr);
        assert!(!r.stdout.contains("SEKRIT"), "{format}: {}", r.stdout);
        let snap = fs::read_to_string(&saved).unwrap();
        assert!(!snap.contains("SEKRIT"), "saved snapshot: {snap}");
        assert!(
            snap.contains("private_token"),
            "the variable is still recorded"
        );
    }
}

/// Runs `cmd` to its end (killed after `limit`), polling its peak resident memory: (exit
/// code, seconds, peak KiB). `None` where /proc does not say.
fn with_peak_memory(
    mut cmd: std::process::Command,
    limit: Duration,
) -> (Option<i32>, f64, Option<u64>) {
    let started = std::time::Instant::now();
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut peak = None;
    loop {
        let status = fs::read_to_string(format!("/proc/{}/status", child.id())).ok();
        if let Some(kib) = status.as_deref().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak = Some(peak.unwrap_or(0).max(kib));
        }
        if let Some(s) = child.try_wait().unwrap() {
            return (s.code(), started.elapsed().as_secs_f64(), peak);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Eight `nvidia-*` distributions of a planted environment, each with a RECORD of 40 MB (one
/// path listed again and again): each was read to 64 MiB and parsed, 2.1 GB and 24 s of a
/// `--timeout 2` check. Now the environment's RECORDs are read to a total (PLT040 says where
/// it stopped), and a path a RECORD lists again is one claim.
#[test]
fn many_large_records_in_one_environment_cost_bounded_memory_and_time() {
    let m = support::FakeMachine::h100_cu130();
    let sp = "/opt/venv/lib/python3.12/site-packages";
    let line = "nvidia/x/lib/libx.so.1,sha256=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,12\n";
    let big = m.real("/opt/RECORD.big");
    fs::write(&big, line.repeat((40 << 20) / line.len())).unwrap();
    for i in 0..8 {
        let info = format!("{sp}/nvidia_x{i}_cu13-1.0.dist-info");
        m.file(
            &format!("{info}/METADATA"),
            &format!("Metadata-Version: 2.1\nName: nvidia-x{i}-cu13\nVersion: 1.0\n"),
        );
        fs::hard_link(&big, m.real(&format!("{info}/RECORD"))).unwrap();
    }
    let mut cmd = m.command(&["check", "--timeout", "2", "--format", "json"]);
    cmd.env("VIRTUAL_ENV", "/opt/venv");
    let (code, secs, peak) = with_peak_memory(cmd, Duration::from_secs(120));
    assert!(matches!(code, Some(0 | 1)), "exit {code:?}");
    assert!(secs < 10.0, "{secs:.1} s for a --timeout 2 check");
    match peak {
        Some(kib) => assert!(kib < 700 << 10, "peak {} MiB", kib >> 10),
        None => cudoctor_testkit::loud(
            "*** SKIPPED the memory half of many_large_records_in_one_environment_cost_bounded_memory_and_time: no /proc/PID/status ***",
        ),
    }
    // The planted files read as damaged (their RECORD lists files that are not there): the
    // suite's one-cause invariant of `m.run` does not hold, so the command is run as is.
    let out = m
        .command(&["check", "--timeout", "2", "--format", "json"])
        .env("VIRTUAL_ENV", "/opt/venv")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stops = v["snapshot"]["stopped_early"].to_string();
    assert!(stops.contains("33554432"), "{stops}");
}

/// `check --verify=install` killed by SIGKILL (nothing can catch it) left its copy of the
/// environment in the temporary directory, gigabytes each time. The next `--verify=install`
/// now removes the copies whose owner is dead, and nothing else: not a link named as a copy,
/// not the copy of a live process, not a name that only looks like one.
#[test]
fn a_copy_left_by_a_sigkill_is_removed_by_the_next_verify_install() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let fast = dir.path().join("fast");
    let pid_file = dir.path().join("uv-pid");
    let env = support::fw002_env(
        dir.path(),
        &format!(
            "[ -e {} ] && exit 0\necho $$ > {}\nexec sleep 60",
            fast.display(),
            pid_file.display()
        ),
    );
    let tmp = dir.path().join("tmp");
    let path = format!("{}:/usr/bin:/bin", dir.path().join("bin").display());
    let verify = || {
        let mut cmd = std::process::Command::new(BIN);
        cmd.args([
            "check",
            "--format",
            "json",
            "--timeout",
            "5",
            "--verify=install",
            "--python",
        ])
        .arg(&env)
        .env_clear()
        .env("PATH", &path)
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
        cmd
    };
    let mut child = verify().spawn().unwrap();
    let started = std::time::Instant::now();
    while !pid_file.exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "uv never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let copies = |tmp: &Path| -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(tmp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let left = copies(&tmp);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].starts_with("cudoctor-verify-"), "{left:?}");
    // Beside it: a link named as a copy (to a directory of the user's), the copy of a live
    // process (this test's, made by no cudoctor: no lock file), a lookalike name, and an older
    // cudoctor's copy of a process long gone (no lock file).
    let victim = dir.path().join("victim");
    fs::create_dir_all(&victim).unwrap();
    fs::write(victim.join("keep"), "x").unwrap();
    symlink(&victim, tmp.join("cudoctor-verify-1-0")).unwrap();
    let live = format!("cudoctor-verify-{}-7", std::process::id());
    fs::create_dir_all(tmp.join(&live)).unwrap();
    fs::create_dir_all(tmp.join("cudoctor-verify-notes")).unwrap();
    fs::create_dir_all(tmp.join("cudoctor-verify-4194303-3/env")).unwrap();
    fs::write(&fast, "").unwrap();
    let out = verify().output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    assert_eq!(
        copies(&tmp),
        vec![
            "cudoctor-verify-1-0".to_string(),
            live,
            "cudoctor-verify-notes".to_string()
        ]
    );
    assert!(victim.join("keep").exists());
}

/// Mounts a FUSE file system that never answers (a hung network mount, as its reader sees it)
/// at argv[1], runs argv[2:], prints `RC <code> SECONDS <s>`. Run inside `unshare -m`, so the
/// mount ends with it.
const HUNG_MOUNT: &str = r#"
import ctypes, os, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/dev/fuse", os.O_RDWR)
opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()
if libc.mount(b"hung", sys.argv[1].encode(), b"fuse", 0, opts) != 0:
    print("MOUNT-FAILED", ctypes.get_errno(), flush=True)
    sys.exit(77)
t = time.time()
p = subprocess.Popen(sys.argv[2:])
try:
    rc = p.wait(timeout=90)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "killed"
print("RC", rc, "SECONDS", round(time.time() - t, 1), flush=True)
"#;

/// Runs cudoctor with `args` (and `env`) while a FUSE mount that never answers sits at
/// `mount`: (its exit code, seconds, stderr). `None` (and SKIPPED said for `test`) without
/// root, /dev/fuse or `unshare -m`.
fn under_hung_mount(
    test: &str,
    mount: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Option<(String, f64, String)> {
    let root_user = fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:\t0\t")));
    let unshare = std::process::Command::new("unshare")
        .args(["-m", "--propagation", "private", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !root_user || !Path::new("/dev/fuse").exists() || !unshare {
        cudoctor_testkit::skip_missing_tool(test, "root, /dev/fuse and unshare -m");
        return None;
    }
    let mut cmd = std::process::Command::new("unshare");
    cmd.args([
        "-m",
        "--propagation",
        "private",
        "python3",
        "-c",
        HUNG_MOUNT,
    ])
    .arg(mount)
    .arg(BIN)
    .args(args)
    .env_clear()
    .env("PATH", "/usr/bin:/bin");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let r = run_bounded(cmd, None, Duration::from_secs(150), test);
    if r.stdout.contains("MOUNT-FAILED") {
        cudoctor_testkit::skip_missing_tool(test, "a FUSE mount (mount(2) refused)");
        return None;
    }
    let (code, secs) = r
        .stdout
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix("RC ")?;
            let (code, secs) = rest.split_once(" SECONDS ")?;
            Some((code.to_string(), secs.trim().parse::<f64>().ok()?))
        })
        .unwrap_or_else(|| panic!("{}\n{}", r.stdout, r.stderr));
    Some((code, secs, r.stderr))
}

/// A read the kernel blocks in (a FUSE mount that never answers, standing for a hung NFS
/// mount) under an environment's torch: `check --timeout 0.5` hung forever (the deadline is
/// checked between reads, never inside one). Now a watchdog ends it with exit 2 and a message
/// naming where it is blocked. Needs root, /dev/fuse and `unshare`: SKIPPED without them.
#[test]
fn a_read_blocked_in_the_kernel_ends_check_with_a_message() {
    let m = support::FakeMachine::h100_cu130();
    let torch = m.real("/opt/venv/lib/python3.12/site-packages/torch");
    let root = m.root().display().to_string();
    let Some((code, secs, stderr)) = under_hung_mount(
        "a_read_blocked_in_the_kernel_ends_check_with_a_message",
        &torch,
        &[
            "check",
            "--format",
            "json",
            "--timeout",
            "0.5",
            "--root",
            &root,
        ],
        &[("VIRTUAL_ENV", "/opt/venv")],
    ) else {
        return;
    };
    assert_eq!(code, "2", "{stderr}");
    assert!(secs < 60.0, "{secs} s");
    assert!(
        stderr.contains("reading this machine did not end: blocked at ")
            && stderr.contains("site-packages/torch"),
        "{stderr}"
    );
}

/// The same for an input file named on the command line: a snapshot on a hung mount.
#[test]
fn a_snapshot_on_a_hung_mount_ends_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("hung");
    fs::create_dir_all(&mount).unwrap();
    let snapshot = mount.join("s.json").display().to_string();
    let Some((code, secs, stderr)) = under_hung_mount(
        "a_snapshot_on_a_hung_mount_ends_with_a_message",
        &mount,
        &["check", "--snapshot", &snapshot],
        &[],
    ) else {
        return;
    };
    assert_eq!(code, "2", "{stderr}");
    assert!(secs < 60.0, "{secs} s");
    assert!(
        stderr.contains("reading snapshot ") && stderr.contains("did not end: blocked at "),
        "{stderr}"
    );
}

/// A refused `--kb` file (a link to a device, a missing directory, bytes that are not UTF-8)
/// said its reason twice ("...: it is a device, not a regular file (nothing is read from it):
/// it is a device, not a regular file (nothing is read from it)"): each reason once now.
#[test]
fn a_refused_input_says_its_reason_once() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let device = dir.path().join("device");
    fs::create_dir_all(&device).unwrap();
    symlink("/dev/zero", device.join("drivers.toml")).unwrap();
    let binary = dir.path().join("binary");
    fs::create_dir_all(&binary).unwrap();
    fs::write(binary.join("drivers.toml"), b"\xff\xfe").unwrap();
    for (kb, reason) in [
        ("device", "it is a device, not a regular file"),
        ("missing", "No such file or directory"),
        ("binary", "invalid utf-8"),
    ] {
        let r = bounded(
            dir.path(),
            &["check", "--root", "/nonexistent-root", "--kb", kb],
            &[],
            Duration::from_secs(30),
        );
        assert_eq!(r.code, Some(2), "{kb}: {}", r.stderr);
        assert_eq!(r.stderr.matches(reason).count(), 1, "{kb}: {}", r.stderr);
    }
}
