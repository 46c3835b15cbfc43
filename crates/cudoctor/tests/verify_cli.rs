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
            "FW002 verified: post-fix verdict: 1 error: PLT001 (another root cause) (its commands: torch 2.7.1, torchvision 0.22.1)"
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
