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

use cudoctor_testkit::{run_bounded, Ran};

const BIN: &str = env!("CARGO_BIN_EXE_cudoctor");

/// Runs cudoctor in `dir` with `env` (nothing else inherited) and kills it after `limit`: a
/// command still running then fails the test.
fn bounded(dir: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Ran {
    let mut cmd = cudoctor_testkit::bare_command(BIN, args, env);
    cmd.current_dir(dir);
    run_bounded(cmd, None, limit, &format!("{args:?}"))
}

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
