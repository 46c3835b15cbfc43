//! Test support shared by the workspace's tests.
//!
//! - The real outputs captured on a 2×H200 machine live inside the repository
//!   (`tests/fixtures/real/`), so a fresh clone tests them; a missing file fails the test.
//! - A test whose tool is missing (python3, nvcc, an `ldconfig` that writes a cache with `-r`)
//!   is skipped loudly — a `SKIPPED` line on stderr, past the harness's capture — and fails
//!   instead where `CUDOCTOR_REQUIRE_TOOLS=1` (or `CUDOCTOR_REQUIRE_CUDA_TOOLS=1`), as in CI.
//! - A test that is off unless asked for (network, a 1 GB log) says how to turn it on.
//! - [`fake::FakeRoot`]: a machine laid out under a temp dir (driver, GPUs, toolkits, venvs)
//!   for a `--root`.

// Unix only: it lays out symbolic links and executable scripts.
#[cfg(unix)]
pub mod fake;

use std::io::Write;
use std::path::{Path, PathBuf};

/// The repository's root (this crate sits at `crates/cudoctor-testkit`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The captures of the 2×H200 machine (driver 580.159.04, torch 2.11.0+cu130): its directory.
pub fn h200x2_dir() -> PathBuf {
    repo_root().join("tests/fixtures/real/h200x2-torch2.11-cu130")
}

/// One capture of the 2×H200 machine, e.g. `smi.txt`; panics when it is not in the repository.
pub fn h200x2(name: &str) -> String {
    let path = h200x2_dir().join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("fixture {} cannot be read: {e}", path.display()))
}

/// Whether every tool a test needs must be present (CI): then a missing tool fails the test.
pub fn tools_required() -> bool {
    ["CUDOCTOR_REQUIRE_TOOLS", "CUDOCTOR_REQUIRE_CUDA_TOOLS"]
        .iter()
        .any(|v| std::env::var(v).as_deref() == Ok("1"))
}

/// Writes past the test harness's output capture, so a skip is seen even when tests pass.
pub fn loud(msg: &str) {
    let _ = writeln!(std::io::stderr(), "\n{msg}\n");
}

/// A test cannot run here because `missing` is not installed: reported as skipped, or a failure
/// where tools are required. Call it and `return` from the test.
pub fn skip_missing_tool(test: &str, missing: &str) {
    if tools_required() {
        panic!("{test}: {missing}, and CUDOCTOR_REQUIRE_TOOLS=1 requires it");
    }
    loud(&format!(
        "*** SKIPPED {test}: {missing} (CUDOCTOR_REQUIRE_TOOLS=1 makes this a failure) ***"
    ));
}

/// The test running on this thread, as the harness names it (its thread's name).
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("this test")
        .to_string()
}

/// Whether `var` is set to `1` (CI's requirement switches: `CUDOCTOR_REQUIRE_REAL_ENVS`,
/// `CUDOCTOR_REALENV_FULL`, `CUDOCTOR_REQUIRE_TOOLS`).
pub fn required_by(var: &str) -> bool {
    std::env::var(var).as_deref() == Ok("1")
}

/// A test cannot run here because its input (a real environment, a cached wheel) is missing:
/// reported as skipped, or a failure where `var=1` requires the input (CI). Call it and
/// `return` from the test. A fresh clone with nothing beside it skips, never panics.
pub fn skip_missing_input(missing: &str, var: &str) {
    let test = current_test();
    if required_by(var) {
        panic!("{test}: {missing}, and {var}=1 requires it");
    }
    loud(&format!(
        "*** SKIPPED {test}: {missing} ({var}=1 makes this a failure) ***"
    ));
}

/// A test cannot run because the machine lacks a resource no install provides (free disk for
/// a copy of a multi-gigabyte environment): reported as skipped with both figures, under every
/// requirement switch too. The caller checks the shortage itself before calling it.
pub fn skip_short_of(test: &str, shortage: &str) {
    loud(&format!("*** SKIPPED {test}: {shortage} ***"));
}

/// A test that is off unless asked for: reported as skipped with how to turn it on.
pub fn skip_opt_in(test: &str, how: &str) {
    loud(&format!("*** SKIPPED {test}: off unless {how} ***"));
}

/// The width the CLI tests lay text reports out for (`COLUMNS`): their snapshots' width. The
/// binary's own default is the terminal's width, or 80 when piped as under a test.
pub const TEST_COLUMNS: &str = "120";

/// The cudoctor binary `bin` (`env!("CARGO_BIN_EXE_cudoctor")`) as a CLI test runs it: text
/// reports laid out for [`TEST_COLUMNS`]. A test that clears the environment sets it again.
pub fn cudoctor_command(bin: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin);
    cmd.env("COLUMNS", TEST_COLUMNS);
    cmd
}

/// Asserts that `cmd` parses as POSIX shell (`sh -n`: the command is read, not run).
pub fn shell_parses(cmd: &str) {
    let mut child = std::process::Command::new("sh")
        .arg("-n")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sh");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(cmd.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("sh -n");
    assert!(
        out.status.success(),
        "fix is not valid shell: {cmd}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What a bounded run ([`run_bounded`]) printed and how long it took.
#[derive(Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: std::time::Duration,
}

/// Runs `cmd` with `stdin` written to it (none: stdin closed) and kills it after `limit`: a
/// command still running then fails the test (`what` names it), so a regression of a bound is
/// a failure, never a hung suite. Its output is read as it comes, so a full pipe never blocks it.
pub fn run_bounded(
    mut cmd: std::process::Command,
    stdin: Option<Vec<u8>>,
    limit: std::time::Duration,
    what: &str,
) -> Ran {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let started = std::time::Instant::now();
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run the command");
    let writer = stdin.map(|data| {
        let mut input = child.stdin.take().expect("stdin piped");
        std::thread::spawn(move || {
            let _ = input.write_all(&data);
        })
    });
    let mut out = child.stdout.take().expect("stdout piped");
    let mut err = child.stderr.take().expect("stderr piped");
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the command") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let took = started.elapsed();
    if let Some(w) = writer {
        let _ = w.join();
    }
    Ran {
        code: status.code(),
        stdout: String::from_utf8_lossy(&out_reader.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned(),
        took,
    }
}

/// The CUDA compiler the real-binary tests build with: `CUDOCTOR_NVCC`, else NVIDIA's pip nvcc
/// that scripts/ci/install-cuda-tools.sh puts in the repository's `.venv-ci`; reported as a
/// skipped `test` (a failure where tools are required) when neither is there.
pub fn ci_nvcc(test: &str) -> Option<std::path::PathBuf> {
    let from_env = std::env::var_os("CUDOCTOR_NVCC")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from);
    let found = from_env.or_else(|| {
        let lib = repo_root().join(".venv-ci/lib");
        std::fs::read_dir(lib)
            .ok()?
            .flatten()
            .map(|e| e.path().join("site-packages/nvidia/cu13/bin/nvcc"))
            .find(|p| p.is_file())
    });
    let found = found.filter(|p| p.is_file());
    if found.is_none() {
        skip_missing_tool(
            test,
            "no nvcc (CUDOCTOR_NVCC, or scripts/ci/install-cuda-tools.sh)",
        );
    }
    found
}

/// An interpreter with torch for the tests that run one: `CUDOCTOR_TORCH_PYTHON`, else the
/// real-env tier's stock-current env; reported as a skipped `test` (a failure where tools are
/// required) when neither is there.
pub fn torch_python(test: &str) -> Option<String> {
    let from_env = std::env::var("CUDOCTOR_TORCH_PYTHON")
        .ok()
        .filter(|p| !p.is_empty());
    let stock = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/cudoctor-realenv/stock-current/bin/python"))
        .filter(|p| p.exists())
        .map(|p| p.display().to_string());
    let found = from_env.or(stock);
    if found.is_none() {
        skip_missing_tool(
            test,
            "no interpreter with torch (CUDOCTOR_TORCH_PYTHON; scripts/ci/run-observer-test.sh makes one)",
        );
    }
    found
}

/// `bin` with `args` in a cleared environment — `PATH=/usr/bin:/bin`, `NO_COLOR=1`,
/// `COLUMNS=100` — and `env` on top: how the hostile-input tests run the binary, so nothing of
/// the caller's environment reaches it. Run it with [`run_bounded`].
pub fn bare_command(bin: &str, args: &[&str], env: &[(&str, &str)]) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin);
    cmd.args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// A real venv at `at`, made by this machine's `python3 -m venv --without-pip` (a test that
/// calls it needs python3: it panics without one); returns its `lib/pythonX.Y` directory.
pub fn real_venv(at: &Path) -> PathBuf {
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(at)
        .output()
        .expect("python3 must be installed to run this test");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    lib_python(at)
}

/// The directory of the real-env tier's environments (scripts/realenv/make-envs.sh):
/// CUDOCTOR_REALENV_DIR, else `cudoctor-realenv` under the user cache directory.
pub fn realenv_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CUDOCTOR_REALENV_DIR") {
        return PathBuf::from(d);
    }
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        })
        .join("cudoctor-realenv")
}

/// The interpreter of the real-env tier's environment `name`, an extended one (`make-envs.sh
/// --full`, or `make-envs.sh NAME`), or None after reporting the test SKIPPED (a failure under
/// CUDOCTOR_REALENV_FULL=1).
pub fn extended_realenv(name: &str) -> Option<PathBuf> {
    let dir = realenv_dir().join(name);
    if dir.join(".cudoctor-spec").exists() && dir.join("bin/python").exists() {
        return Some(dir.join("bin/python"));
    }
    skip_missing_input(
        &format!(
            "real env {name} not found under {} (run scripts/realenv/make-envs.sh {name})",
            realenv_dir().display()
        ),
        "CUDOCTOR_REALENV_FULL",
    );
    None
}

/// The `lib/pythonX.Y` directory of the venv at `venv`.
pub fn lib_python(venv: &Path) -> PathBuf {
    std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

/// The codes of a JSON report's findings (`check --format json`), in the report's order; panics
/// on a report without findings or a finding without a code.
pub fn finding_codes(report: &serde_json::Value) -> Vec<&str> {
    codes_where(report, |_| true)
}

/// The codes of a JSON report's findings at one of `severities`, in the report's order.
pub fn codes_at<'a>(report: &'a serde_json::Value, severities: &[&str]) -> Vec<&'a str> {
    codes_where(report, |f| severities.iter().any(|s| f["severity"] == *s))
}

fn codes_where(report: &serde_json::Value, keep: impl Fn(&serde_json::Value) -> bool) -> Vec<&str> {
    report["findings"]
        .as_array()
        .unwrap_or_else(|| panic!("no findings in the report: {report}"))
        .iter()
        .filter(|f| keep(f))
        .map(|f| {
            f["code"]
                .as_str()
                .unwrap_or_else(|| panic!("a finding without a code: {f}"))
        })
        .collect()
}
