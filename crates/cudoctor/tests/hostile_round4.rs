//! Hostile input, fourth round: every input a command reads and every output it writes, with
//! values chosen to hurt — secrets that must not be echoed, streams that never end, lines that
//! never end, names that must stay inert and quoted.
//!
//! Every run goes through [`bounded`]: a command that outlives its limit is killed and the test
//! fails, so a regression is a failure, never a hung suite.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_cudoctor");

use cudoctor_testkit::{run_bounded, Ran};

/// Runs cudoctor in `dir` with `env` (nothing else inherited), `stdin` written to it, and kills
/// it after `limit`: a command still running then fails the test.
fn bounded(dir: &Path, args: &[&str], env: &[(&str, &str)], stdin: &[u8], limit: Duration) -> Ran {
    let mut cmd = cudoctor_testkit::bare_command(BIN, args, env);
    cmd.current_dir(dir);
    run_bounded(cmd, Some(stdin.to_vec()), limit, &format!("{args:?}"))
}

/// Secrets a log or a command line may carry, and the words that show one leaked.
const LOG_WITH_SECRETS: &str = "\
+ export HF_TOKEN=hf_LEAKEDaBcDeFgHiJkLmNoPqRsTuVwXyZ0123
+ curl -H \"Authorization: Bearer LEAKEDbearer0123456789\" https://alice:LEAKEDpass@pypi.corp/simple
RuntimeError: CUDA error: no kernel image is available for execution on the device token=ghp_LEAKED0123456789abcdefghijklmnopqrstu
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB; see https://bob:LEAKEDpw@mirror.corp/x --api-key LEAKEDkey123
";

#[test]
fn explain_echoes_no_secret_of_the_log_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("job.log"), LOG_WITH_SECRETS).unwrap();
    for format in ["text", "json"] {
        // From a file and from standard input, as a person pastes it.
        for (args, stdin) in [
            (
                vec!["explain", "--no-machine", "--format", format, "job.log"],
                &b""[..],
            ),
            (
                vec!["explain", "--no-machine", "--format", format],
                LOG_WITH_SECRETS.as_bytes(),
            ),
        ] {
            let r = bounded(dir.path(), &args, &[], stdin, Duration::from_secs(60));
            assert!(matches!(r.code, Some(0 | 1)), "{args:?}: {}", r.stderr);
            assert!(
                r.stdout.contains("no kernel image") || r.stdout.contains("kernel image"),
                "{args:?} explained nothing: {}",
                r.stdout
            );
            for out in [&r.stdout, &r.stderr] {
                assert!(!out.contains("LEAKED"), "{args:?} echoes a secret:\n{out}");
            }
        }
    }
}

#[test]
fn run_reports_keep_no_secret_of_the_observed_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let r = bounded(
        dir.path(),
        &[
            "run",
            "--out",
            "r.json",
            "--",
            "/bin/sh",
            "-c",
            "exit 0",
            "sh",
            "--hf-token",
            "LEAKEDtoken",
            "--password=LEAKEDpw",
            "https://carol:LEAKEDurl@pypi.corp/simple",
        ],
        &[],
        b"",
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for report in ["r.json", "r.md", "r.html"] {
        let text = fs::read_to_string(dir.path().join(report)).unwrap();
        assert!(!text.contains("LEAKED"), "{report} holds a secret:\n{text}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    // The command is still there, its words in place.
    assert_eq!(json["facts"]["command"][4], "--hf-token");
    assert_eq!(json["facts"]["command"][5], "<redacted>");
    assert!(!r.stdout.contains("LEAKED") && !r.stderr.contains("LEAKED"));
}

/// The peak resident memory of a running process, in KiB (Linux).
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[test]
fn an_mcp_request_line_that_never_ends_costs_one_line_of_memory() {
    if !Path::new("/proc/self/status").exists() {
        cudoctor_testkit::skip_missing_tool(
            "an_mcp_request_line_that_never_ends_costs_one_line_of_memory",
            "/proc",
        );
        return;
    }
    let mut child = Command::new(BIN)
        .arg("mcp")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut input = child.stdin.take().unwrap();
    let mut output = std::io::BufReader::new(child.stdout.take().unwrap());
    let started = Instant::now();
    // 400 MB on one line (past the 32 MB a request may hold), then a ping.
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..400 {
        input.write_all(&chunk).unwrap();
    }
    input
        .write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n")
        .unwrap();
    input.flush().unwrap();
    let mut answers = String::new();
    for _ in 0..2 {
        std::io::BufRead::read_line(&mut output, &mut answers).unwrap();
    }
    let peak = peak_rss_kib(pid);
    drop(input);
    let status = child.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(120));
    assert!(answers.contains("too long"), "{answers}");
    assert!(
        answers.contains("\"id\":7"),
        "the next request is answered: {answers}"
    );
    assert_eq!(status.code(), Some(0));
    let peak = peak.expect("VmHWM");
    assert!(
        peak < 160 * 1024,
        "a 400 MB line kept {peak} KiB resident (a request holds 32 MB)"
    );
}

#[test]
fn an_error_quoting_a_huge_hostile_input_stays_a_short_message() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    fs::create_dir(&kb).unwrap();
    // One line of 400 KB that the TOML parser quotes whole in its error.
    let nested = format!("x = {}{}\n", "[".repeat(200_000), "]".repeat(200_000));
    fs::write(kb.join("gpus.toml"), nested).unwrap();
    let r = bounded(
        dir.path(),
        &["check", "--kb", "kb", "--format", "json", "--timeout", "2"],
        &[],
        b"",
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("gpus.toml"), "{}", r.stderr);
    assert!(
        r.stderr.len() < 8 * 1024,
        "the error message is {} bytes",
        r.stderr.len()
    );
    assert!(r.stderr.contains("more characters)"), "{}", r.stderr);
}
