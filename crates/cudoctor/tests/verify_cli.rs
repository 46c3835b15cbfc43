//! `check --verify` end to end, on saved snapshots of real broken envs (a companion of another
//! release, a CUDA-12 CuPy beside a CUDA-13 torch; both made by scripts/realenv/make-envs.sh and
//! saved with `check --save` in a container without GPUs).

use std::process::Command;

use serde_json::Value;

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/verify/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn check(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .arg("check")
        .args(args)
        .env("COLUMNS", "100")
        .output()
        .unwrap()
}

#[test]
fn the_text_report_ends_with_one_verify_line_per_fix() {
    let out = check(&[
        "--snapshot",
        &fixture("companion-wrong-release"),
        "--verify",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let verify: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Verify ("))
        .collect();
    let joined = verify
        .iter()
        .flat_map(|l| l.split_whitespace())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        joined.starts_with("Verify (each printed fix applied to this environment's facts"),
        "{text}"
    );
    assert!(
        joined.contains(
            "FW002 verified: post-fix verdict: 1 error: PLT001 (another root cause) (its commands: torchvision 0.22.1)"
        ),
        "{joined}"
    );
    // Without --verify, nothing of it.
    let out = check(&["--snapshot", &fixture("companion-wrong-release")]);
    assert!(!String::from_utf8(out.stdout).unwrap().contains("Verify ("));
}

#[test]
fn the_json_report_carries_the_verify_list_after_its_keys() {
    let out = check(&[
        "--snapshot",
        &fixture("cupy-cuda12x-beside-torch"),
        "--verify",
        "--format",
        "json",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let v = &json["verify"][0];
    assert_eq!(v["code"], "FW020");
    assert_eq!(v["status"], "verified_assuming");
    assert_eq!(v["assumed"][0], "cupy-cuda13x[ctk]");
    assert_eq!(v["changes"][0]["op"], "remove");
    // The report's own keys keep their order; `verify` comes last.
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert!(text.find("\"summary\"").unwrap() < text.find("\"verify\"").unwrap());
    assert!(keys.iter().any(|k| *k == "snapshot"));
    // Markdown: a section of its own.
    let out = check(&[
        "--snapshot",
        &fixture("cupy-cuda12x-beside-torch"),
        "--verify",
        "--format",
        "markdown",
    ]);
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.contains("\n## Verify\n\n- FW020 verified, assuming"),
        "{md}"
    );
}

#[test]
fn verify_refuses_formats_without_a_place_for_it() {
    for format in ["html", "prometheus"] {
        let out = check(&[
            "--snapshot",
            &fixture("companion-wrong-release"),
            "--verify",
            "--format",
            format,
        ]);
        assert_eq!(out.status.code(), Some(2), "{format}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("--verify goes with"), "{err}");
    }
    // `--verify install` is not `--verify=install`: the value needs its `=`.
    let out = check(&[
        "--snapshot",
        &fixture("companion-wrong-release"),
        "--verify=copy",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// The conda environment fixture copied to a temporary directory (with an environment file
/// beside it when `environment_yml` is given); returns the directory and the env's prefix.
fn conda_env(environment_yml: Option<&str>) -> (tempfile::TempDir, String) {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            let dst = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &dst);
            } else {
                std::fs::copy(e.path(), dst).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    copy(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conda-env/w"),
        &dir.path().join("w"),
    );
    if let Some(text) = environment_yml {
        std::fs::write(dir.path().join("w/environment.yml"), text).unwrap();
    }
    let prefix = dir.path().join("w/env").to_string_lossy().into_owned();
    (dir, prefix)
}

fn fw002_fix(json: &Value) -> Vec<Value> {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "FW002")
        .expect("FW002")["fix"]
        .as_array()
        .unwrap()
        .clone()
}

/// The `--verify` entry of FW002's fix.
fn fw002_verification(json: &Value) -> &Value {
    json["verify"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["code"] == "FW002")
        .expect("a verification of FW002")
}

#[test]
fn a_conda_pytorchs_companion_is_fixed_with_conda_and_verified() {
    let (_dir, prefix) = conda_env(None);
    let out = check(&["--python", &prefix, "--format", "json", "--verify"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fix = fw002_fix(&json);
    assert_eq!(
        fix[0]["shell"],
        format!("conda install -p {prefix} pytorch==2.5.1 torchvision==0.20.1")
    );
    // No pip command over conda's packages.
    assert!(
        !serde_json::to_string(&fix).unwrap().contains("pip"),
        "{fix:?}"
    );
    let v = fw002_verification(&json);
    assert_eq!(v["status"], "verified", "{v:#}");
}

#[test]
fn a_conda_env_made_from_an_environment_file_is_fixed_in_the_file() {
    let (dir, prefix) = conda_env(Some(
        "name: ml\nchannels:\n  - pytorch\n  - nvidia\ndependencies:\n  - python=3.12\n  - pytorch==2.5.1\n  - pytorch-cuda=12.4\n  - torchvision==0.19.0\n",
    ));
    let out = check(&["--python", &prefix, "--format", "json", "--verify"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let file = dir.path().join("w/environment.yml");
    let file = file.to_string_lossy();
    let fix = fw002_fix(&json);
    let note = fix[0]["prose"].as_str().unwrap();
    assert!(
        note.contains(&*file)
            && note.contains("`pytorch==2.5.1`, `torchvision==0.20.1` in its `dependencies`"),
        "{note}"
    );
    assert_eq!(
        fix[1]["shell"],
        format!("conda env update -p {prefix} -f {file}")
    );
    assert!(
        !serde_json::to_string(&fix).unwrap().contains("pip install"),
        "{fix:?}"
    );
    assert_eq!(
        json["snapshot"]["python_envs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["prefix"] == prefix.as_str())
            .unwrap()["project"]["kind"],
        "conda"
    );
    // The file is edited by hand: --verify says it cannot apply that, and why.
    let v = fw002_verification(&json);
    assert_eq!(v["status"], "not_verifiable", "{v:#}");
}

fn explain(log: &str, args: &[&str]) -> std::process::Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .arg("explain")
        .args(args)
        .env("COLUMNS", "100")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(log.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

const TORCHVISION_LOG: &str = "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    import torchvision\nRuntimeError: operator torchvision::nms does not exist\n";

/// explain --verify proves the fix this machine confirmed: the confirming finding's (FW002's),
/// judged against every finding of the check (PLT001 stays, as another root cause).
#[test]
fn explain_verifies_the_fix_the_machine_confirms() {
    let snap = fixture("companion-wrong-release");
    let out = explain(TORCHVISION_LOG, &["--snapshot", &snap, "--verify"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        joined.contains(
            "FW002 verified: post-fix verdict: 1 error: PLT001 (another root cause) (its commands: torchvision 0.22.1)"
        ),
        "{text}"
    );
    let out = explain(
        TORCHVISION_LOG,
        &["--snapshot", &snap, "--verify", "--format", "json"],
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = json["verify"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{json:#}");
    assert_eq!(list[0]["code"], "FW002");
    assert_eq!(list[0]["status"], "verified");
    // Without --verify, no list.
    let out = explain(TORCHVISION_LOG, &["--snapshot", &snap, "--format", "json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json.get("verify").is_none());
}

/// A fix read from the message alone, with nothing on the machine to confirm it, is said to be
/// unverified, never called verified.
#[test]
fn explain_says_a_fix_from_the_message_alone_is_not_verified() {
    let snap = fixture("companion-wrong-release");
    let out = explain(
        "AssertionError: Torch not compiled with CUDA enabled\n",
        &["--snapshot", &snap, "--verify"],
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains(" verified:"), "{text}");
    assert!(
        text.contains("no fix with a command to verify")
            && text.contains("comes from the message alone"),
        "{text}"
    );
}
