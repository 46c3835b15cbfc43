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

mod support;

const BIN: &str = env!("CARGO_BIN_EXE_cudoctor");

use support::bounded;

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

/// A venv at `dir/env` holding onnxruntime-gpu, whose RECORD lists its one library inside the
/// env and two outside it: `../` past the env's root and an absolute path. Both outside ones
/// are FIFOs nobody writes to (a plain open of either blocks forever). The env's path.
fn env_whose_record_points_out(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::symlink;
    let env = dir.join("env");
    let sp = env.join("lib/python3.12/site-packages");
    let outside = dir.join("outside");
    fs::create_dir_all(sp.join("onnxruntime/capi")).unwrap();
    fs::create_dir_all(sp.join("onnxruntime_gpu-1.20.0.dist-info")).unwrap();
    fs::create_dir_all(env.join("bin")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(
        env.join("pyvenv.cfg"),
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n",
    )
    .unwrap();
    symlink("/usr/bin/python3", env.join("bin/python3")).unwrap();
    symlink("python3", env.join("bin/python")).unwrap();
    fs::write(
        sp.join("onnxruntime_gpu-1.20.0.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: onnxruntime-gpu\nVersion: 1.20.0\n",
    )
    .unwrap();
    fs::write(
        sp.join("onnxruntime/capi/build_and_package_info.py"),
        "package_name = 'onnxruntime-gpu'\n__version__ = '1.20.0'\ncuda_version = '12.4'\ncudnn_version = '9.1'\n",
    )
    .unwrap();
    fs::copy("/bin/true", sp.join("onnxruntime/capi/libinside.so")).unwrap();
    for name in ["escaped.so", "absolute.so"] {
        let fifo = outside.join(name);
        let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
    }
    fs::write(
        sp.join("onnxruntime_gpu-1.20.0.dist-info/RECORD"),
        format!(
            "onnxruntime/capi/libinside.so,,\n../../../../outside/escaped.so,,\n{},,\nonnxruntime_gpu-1.20.0.dist-info/RECORD,,\n",
            outside.join("absolute.so").display()
        ),
    )
    .unwrap();
    env
}

/// A framework's RECORD naming libraries out of its environment (`../` past its root, an
/// absolute path; the fix of round four had no test): they are not listed as what it ships,
/// and no command opens them — FIFOs that would block, and under strace no `open` of them.
#[test]
fn a_record_naming_libraries_out_of_its_env_opens_none_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_whose_record_points_out(dir.path());
    let env_arg = env.display().to_string();
    let commands: [&[&str]; 3] = [
        &[
            "check",
            "--format",
            "json",
            "--timeout",
            "5",
            "--python",
            &env_arg,
        ],
        &["kernels", "--format", "json", "--python", &env_arg],
        &["libs", "--format", "json", "--python", &env_arg],
    ];
    for args in commands {
        let r = bounded(dir.path(), args, &[], Duration::from_secs(60));
        assert!(matches!(r.code, Some(0 | 1)), "{args:?}: {}", r.stderr);
        assert!(!r.stdout.contains("outside/"), "{args:?}: {}", r.stdout);
        if args[0] == "check" {
            let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
            let env_json = &json["snapshot"]["python_envs"][0];
            let ships = env_json["frameworks"]
                .as_array()
                .and_then(|f| f.iter().find(|b| b["framework"] == "onnx_runtime"))
                .map(|b| b["ships"].clone())
                .unwrap_or_else(|| panic!("no onnxruntime build: {env_json:#}"));
            assert_eq!(ships.as_array().unwrap().len(), 1, "{ships}");
            assert!(ships[0].as_str().unwrap().ends_with("capi/libinside.so"));
        }
    }
    let strace_ok = Command::new("strace")
        .args(["-f", "-e", "trace=openat", "-o", "/dev/null", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !strace_ok {
        cudoctor_testkit::loud(
            "*** SKIPPED the strace half of a_record_naming_libraries_out_of_its_env_opens_none_of_them: strace cannot trace here (the FIFOs and the report still checked) ***",
        );
        return;
    }
    for args in commands {
        let trace = dir.path().join("trace");
        let mut cmd = Command::new("strace");
        cmd.args([
            "-f",
            "-qq",
            "-e",
            "trace=open,openat,openat2,stat,statx,newfstatat,readlink,readlinkat",
            "-o",
        ])
        .arg(&trace)
        .arg(BIN)
        .args(args)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1");
        let r = run_bounded(
            cmd,
            None,
            Duration::from_secs(120),
            &format!("strace {args:?}"),
        );
        assert!(matches!(r.code, Some(0 | 1)), "{args:?}: {}", r.stderr);
        let text = fs::read_to_string(&trace).unwrap();
        let touched: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("escaped.so") || l.contains("absolute.so"))
            .collect();
        assert!(
            touched.is_empty(),
            "{args:?} looked at:\n{}",
            touched.join("\n")
        );
    }
}

// ------------------------------------------------------------------ check --verify=install
//
// A venv whose torchvision belongs to another torch (FW002, fixed by `uv pip install ...`),
// installed by uv. PATH's `uv` is a script of the test standing for the installer: it writes
// what an installer writes (a package's files under the copy's site-packages), records its
// `VIRTUAL_ENV`, and does what the test asks.

/// `check --verify=install --python ENV --format json` with the test's PATH and TMPDIR.
fn verify_install(dir: &Path, env: &Path) -> (Ran, serde_json::Value) {
    verify_install_with(dir, env, &[])
}

/// [`verify_install`] with more variables.
fn verify_install_with(dir: &Path, env: &Path, vars: &[(&str, &str)]) -> (Ran, serde_json::Value) {
    let path = format!("{}:/usr/bin:/bin", dir.join("bin").display());
    let tmp = dir.join("tmp").display().to_string();
    let mut all = vec![("PATH", path.as_str()), ("TMPDIR", tmp.as_str())];
    all.extend_from_slice(vars);
    let env_arg = env.display().to_string();
    let r = bounded(
        dir,
        &[
            "check",
            "--format",
            "json",
            "--timeout",
            "5",
            "--verify=install",
            "--python",
            &env_arg,
        ],
        &all,
        Duration::from_secs(120),
    );
    assert!(matches!(r.code, Some(0 | 1)), "{}", r.stderr);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let v = json["verify"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["code"] == "FW002"))
        .cloned()
        .unwrap_or_else(|| panic!("no verification of FW002: {json:#}"));
    assert_eq!(v["method"], "install", "{v:#}");
    (r, v)
}

/// A link planted in the env pointing out of it (a directory of the person who runs the
/// check): the copy recreated it as it was and the installer wrote through it, outside the
/// scratch directory. Now the copy is refused, saying which link; nothing is written.
#[test]
fn verify_install_never_writes_through_a_link_out_of_the_env() {
    let dir = tempfile::tempdir().unwrap();
    let env = support::fw002_env(
        dir.path(),
        "echo pwned > \"$SP/planted/__init__.py\"\necho pwned > \"$SP/planted_file.py\"",
    );
    let victim = dir.path().join("victim");
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("file.py"), "mine\n").unwrap();
    let sp = env.join("lib/python3.12/site-packages");
    std::os::unix::fs::symlink(&victim, sp.join("planted")).unwrap();
    std::os::unix::fs::symlink(victim.join("file.py"), sp.join("planted_file.py")).unwrap();
    let (_, v) = verify_install(dir.path(), &env);
    assert_eq!(fs::read_dir(&victim).unwrap().count(), 1, "written outside");
    assert_eq!(
        fs::read_to_string(victim.join("file.py")).unwrap(),
        "mine\n"
    );
    assert!(
        v["note"]
            .as_str()
            .unwrap()
            .contains("is a link out of the environment"),
        "{v:#}"
    );
    assert!(!dir.path().join("uv-ran").exists(), "the installer ran");
    assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
}

/// A link inside the env written as an absolute path (to the env's own directory): recreated
/// as it was, it pointed the copy back into the env, and the installer changed the env. Now it
/// points into the copy. A FIFO in the env (a plain open blocks) is left out of the copy.
#[test]
fn verify_install_points_links_inside_the_env_into_the_copy() {
    let dir = tempfile::tempdir().unwrap();
    let env = support::fw002_env(
        dir.path(),
        "echo new > \"$SP/vision_link/new.py\"\nls \"$SP/torchvision\" > /dev/null",
    );
    let sp = env.join("lib/python3.12/site-packages");
    std::os::unix::fs::symlink(sp.join("torchvision"), sp.join("vision_link")).unwrap();
    let made = Command::new("mkfifo")
        .arg(sp.join("torchvision/pipe.py"))
        .status()
        .unwrap();
    assert!(made.success());
    let (_, v) = verify_install(dir.path(), &env);
    let copy = fs::read_to_string(dir.path().join("uv-ran")).unwrap();
    assert!(copy
        .trim()
        .starts_with(&dir.path().join("tmp").display().to_string()));
    assert!(
        !sp.join("torchvision/new.py").exists(),
        "the installer wrote into the env: {v:#}"
    );
    assert!(
        v["note"].as_str().unwrap().contains("ran in a copy"),
        "{v:#}"
    );
    assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
}

/// The user's installer variables that send an install elsewhere (their own Python, a target
/// directory, the user site) were passed to the installer run in the copy. Not any more.
#[test]
fn verify_install_passes_no_variable_that_installs_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("uv-env");
    let env = support::fw002_env(
        dir.path(),
        &format!(
            "echo \"[$PIP_TARGET][$PIP_USER][$UV_SYSTEM_PYTHON][$UV_PYTHON][$PYTHONUSERBASE]\" > {}",
            seen.display()
        ),
    );
    let (_, v) = verify_install_with(
        dir.path(),
        &env,
        &[
            ("PIP_TARGET", "/elsewhere"),
            ("PIP_USER", "1"),
            ("UV_SYSTEM_PYTHON", "1"),
            ("UV_PYTHON", "/usr/bin/python3"),
            ("PYTHONUSERBASE", "/elsewhere"),
        ],
    );
    assert_eq!(fs::read_to_string(&seen).unwrap(), "[][][][][]\n", "{v:#}");
}

/// The installer runs the environment's interpreter, whose code may start a daemon that leaves
/// its process group and session (`setsid`): it outlived cudoctor. Now found and killed, as
/// under --deep.
#[test]
fn verify_install_leaves_no_daemon_of_the_installer_behind() {
    if !Path::new("/usr/bin/setsid").exists() {
        cudoctor_testkit::skip_missing_tool(
            "verify_install_leaves_no_daemon_of_the_installer_behind",
            "setsid",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("daemon-pid");
    let env = support::fw002_env(
        dir.path(),
        &format!(
            "/usr/bin/setsid /bin/sh -c 'echo $$ > {}; exec sleep 120' < /dev/null > /dev/null 2>&1 &\nsleep 1",
            pid_file.display()
        ),
    );
    let _ = verify_install(dir.path(), &env);
    let pid = fs::read_to_string(&pid_file).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let alive = Path::new(&format!("/proc/{}", pid.trim())).exists();
    if alive {
        let _ = Command::new("kill").args(["-9", pid.trim()]).status();
    }
    assert!(!alive, "the installer's daemon outlived cudoctor");
}

/// Ctrl-C (SIGINT) or SIGTERM while the installer runs in the copy: the copy was left in the
/// temporary directory (gigabytes of a torch env each time). Now the installer's group is
/// killed and the copy removed before cudoctor ends as the signal asks.
#[test]
fn verify_install_removes_its_copy_when_interrupted() {
    use std::os::unix::process::ExitStatusExt;
    for signal in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let env = support::fw002_env(
            dir.path(),
            &format!("echo $$ > {}/uv-pid\nexec sleep 60", dir.path().display()),
        );
        let path = format!("{}:/usr/bin:/bin", dir.path().join("bin").display());
        let mut child = Command::new(BIN)
            .args([
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
            .env("TMPDIR", dir.path().join("tmp"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid_file = dir.path().join("uv-pid");
        let started = std::time::Instant::now();
        while !pid_file.exists() {
            assert!(started.elapsed() < Duration::from_secs(60), "uv never ran");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(200));
        let killed = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if started.elapsed() > Duration::from_secs(90) {
                let _ = child.kill();
                panic!("cudoctor did not end on SIG{signal}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let expected = if signal == "INT" { 2 } else { 15 };
        assert_eq!(status.signal(), Some(expected), "{status:?}");
        let left: Vec<_> = fs::read_dir(dir.path().join("tmp"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "SIG{signal} left {left:?}");
        let uv_pid = fs::read_to_string(&pid_file).unwrap();
        // Killed is dead: gone, or a zombie its new parent has not reaped yet (init reaps
        // orphans when it gets to them, later on a loaded machine).
        let alive = || {
            fs::read_to_string(format!("/proc/{}/status", uv_pid.trim())).is_ok_and(|s| {
                !s.lines()
                    .any(|l| l.starts_with("State:") && (l.contains('Z') || l.contains('X')))
            })
        };
        let waited = std::time::Instant::now();
        while alive() && waited.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!alive(), "the installer outlived cudoctor");
    }
}

// ------------------------------------------------------------------ explain, pathological logs

/// A log of one 64 MB line whose error is at its end, NUL bytes, and a Windows PowerShell
/// redirect (UTF-16 with a cut surrogate pair): read within a bounded time and memory. The long
/// line is read only in part, and the text report now says so (it answered "No known error"
/// without a word about the cut).
#[test]
fn explain_reads_pathological_logs_within_bounds_and_says_a_line_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    let error =
        "RuntimeError: CUDA error: no kernel image is available for execution on the device";
    let mut long = vec![b'x'; 64 << 20];
    long.extend_from_slice(format!(" {error}\n").as_bytes());
    fs::write(dir.path().join("long.log"), long).unwrap();
    // The NUL block a crash leaves in a log file, then the lines written after it.
    let mut nul = b"step 1\n".repeat(20);
    nul.extend_from_slice(&vec![0u8; 1 << 20]);
    nul.extend_from_slice(format!("\n{error}\n").as_bytes());
    fs::write(dir.path().join("nul.log"), &nul).unwrap();
    // Nothing but NUL bytes around the line: refused as binary, with a message.
    let mut binary = vec![0u8; 1 << 20];
    binary.extend_from_slice(format!("{error}\n").as_bytes());
    binary.extend_from_slice(&[0, 0]);
    fs::write(dir.path().join("binary.log"), binary).unwrap();
    let r = bounded(
        dir.path(),
        &["explain", "--no-machine", "binary.log"],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("binary data"), "{}", r.stderr);
    let mut utf16 = vec![0xff, 0xfe];
    for u in format!("Traceback (most recent call last):\r\n{error}\r\n").encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    utf16.extend_from_slice(&[0x00, 0xd8, 0x00, 0xd8, 0x41]);
    fs::write(dir.path().join("ps.log"), utf16).unwrap();
    let r = bounded(
        dir.path(),
        &["explain", "--no-machine", "long.log"],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout
            .contains("Read in part: 1 line was longer than 64 KiB"),
        "{}",
        r.stdout
    );
    for log in ["nul.log", "ps.log"] {
        let r = bounded(
            dir.path(),
            &["explain", "--no-machine", log],
            &[],
            Duration::from_secs(60),
        );
        assert!(matches!(r.code, Some(0 | 1)), "{log}: {}", r.stderr);
        assert!(r.stdout.contains("no_kernel_image"), "{log}: {}", r.stdout);
        // The NUL block is one line of 1 MB, read in part; the PowerShell log is whole.
        assert_eq!(
            r.stdout.contains("Read in part"),
            log == "nul.log",
            "{log}: {}",
            r.stdout
        );
    }
}
