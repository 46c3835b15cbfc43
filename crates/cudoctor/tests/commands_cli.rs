//! `cudoctor plan`, `cudoctor explain` and `check --format html` end to end, with the real
//! binary: flags, output shapes, exit codes and bad input.

mod support;

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::{FakeMachine, Gpu};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the binary with `args` (no machine root), feeding `stdin`.
fn cudoctor(args: &[&str], stdin: &[u8]) -> Out {
    let mut child = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cudoctor");
    let mut input = child.stdin.take().expect("stdin");
    // A reader that exits early closes the pipe: that is not this test's concern.
    let _ = input.write_all(stdin);
    drop(input);
    let out = child.wait_with_output().expect("wait");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn json(out: &Out) -> Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", out.stdout, out.stderr))
}

const PLAN_470: [&str; 9] = [
    "plan",
    "--driver",
    "470.82.01",
    "--gpu",
    "sm_86",
    "--python",
    "3.10",
    "--no-detect",
    "--format",
];

// ---------------------------------------------------------------- plan

#[test]
fn plan_for_an_old_driver_and_an_ampere_gpu() {
    let r = cudoctor(&PLAN_470[..8], b"");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // R470 runs CUDA 11.x only: the newest torch with a cu118 build and Python 3.10 wheels.
    assert!(
        r.stdout.starts_with("Install torch 2.7.1 (cu118)\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(
            "pip install torch==2.7.1+cu118 torchvision==0.22.1 torchaudio==2.7.1 --index-url "
        ),
        "{}",
        r.stdout
    );
    // The reasoning stays behind --verbose; the answer comes without it.
    assert!(!r.stdout.contains("\nWhy\n"), "{}", r.stdout);
    let mut verbose = PLAN_470[..8].to_vec();
    verbose.push("--verbose");
    let r = cudoctor(&verbose, b"");
    assert_eq!(r.code, 0);
    for section in ["\nWhy\n", "\nAvoid\n"] {
        assert!(r.stdout.contains(section), "{section:?}: {}", r.stdout);
    }
    assert!(
        r.stdout.contains("minor-version compatibility"),
        "{}",
        r.stdout
    );
}

/// plan's text speaks to people: none of its JSON keys with an underscore (`driver_upgrade`,
/// `min_driver_compat`, ...) appears in it, with or without --verbose, for old and new GPUs,
/// Windows, aarch64 and Jetson.
#[test]
fn plan_text_names_no_internal_field() {
    fn keys(v: &Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k.contains('_') {
                        out.insert(k.clone());
                    }
                    keys(x, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
            _ => {}
        }
    }
    let cases: [&[&str]; 5] = [
        &[
            "--driver",
            "470.82.01",
            "--gpu",
            "sm_86",
            "--python",
            "3.10",
        ],
        &["--driver", "590.44.01", "--gpu", "GTX 1080"],
        &["--driver", "560.35.03", "--gpu", "RTX 5090"],
        &[
            "--platform",
            "windows",
            "--driver",
            "581.42",
            "--gpu",
            "H100",
        ],
        &["--platform", "jetson", "--gpu", "sm_87"],
    ];
    let mut checked = 0;
    for case in cases {
        let mut args = vec!["plan", "--no-detect"];
        args.extend_from_slice(case);
        let mut j = args.clone();
        j.extend(["--format", "json"]);
        let r = cudoctor(&j, b"");
        assert_eq!(r.code, 0, "{case:?}: {}{}", r.stdout, r.stderr);
        let mut names = std::collections::BTreeSet::new();
        keys(&json(&r), &mut names);
        assert!(!names.is_empty(), "{case:?}");
        for verbose in [false, true] {
            let mut t = args.clone();
            if verbose {
                t.push("--verbose");
            }
            let r = cudoctor(&t, b"");
            assert_eq!(r.code, 0, "{case:?}: {}{}", r.stdout, r.stderr);
            for k in &names {
                assert!(
                    !r.stdout.contains(k.as_str()),
                    "{case:?} (verbose {verbose}): the text names the field {k}:\n{}",
                    r.stdout
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 10);
}

#[test]
fn a_plan_for_windows_prints_powershell() {
    // An empty machine (--root): no environment to fix, but the extension-build advice.
    let root = tempfile::tempdir().unwrap();
    let root = root.path().to_str().unwrap();
    let r = cudoctor(
        &[
            "plan",
            "--root",
            root,
            "--platform",
            "windows",
            "--driver",
            "560.94",
            "--gpu",
            "RTX 4090",
            "--gpu",
            "RTX 3090",
            "--verbose",
        ],
        b"",
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let ps: Vec<&str> = r
        .stdout
        .lines()
        .filter_map(|l| l.split_once("PS> ").map(|(_, c)| c))
        .collect();
    // The install commands, pip's first, and the extension build's variables, each on one line
    // (PowerShell continues no line with a backslash), quoted as PowerShell reads them.
    assert!(
        ps.first()
            .is_some_and(|c| c.starts_with("pip install torch==")
                && c.contains(" --index-url https://download.pytorch.org/whl/cu")),
        "{}",
        r.stdout
    );
    assert!(ps.iter().any(|c| c.starts_with("uv pip install torch==")));
    assert!(
        ps.contains(&"$env:TORCH_CUDA_ARCH_LIST = '8.6;8.9'"),
        "{}",
        r.stdout
    );
    for c in &ps {
        support::powershell_is_quoted(c);
        assert!(!c.ends_with('\\'), "{c}");
    }
    assert!(!r.stdout.contains("export "), "{}", r.stdout);
    // Linux's plan keeps its shell.
    let r = cudoctor(
        &[
            "plan",
            "--root",
            root,
            "--driver",
            "560.35.03",
            "--gpu",
            "RTX 4090",
            "--verbose",
        ],
        b"",
    );
    assert!(
        !r.stdout.contains("PS> ") && r.stdout.contains("export TORCH_CUDA_ARCH_LIST=\"8.9\""),
        "{}",
        r.stdout
    );
}

#[test]
fn plan_json_has_the_documented_keys() {
    let mut args = PLAN_470.to_vec();
    args.push("json");
    let r = cudoctor(&args, b"");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = json(&r);
    for key in [
        "variant",
        "torch",
        "torchvision",
        "torchaudio",
        "commands",
        "reasons",
        "avoid",
    ] {
        assert!(v.get(key).is_some(), "plan lacks {key}: {v:#}");
    }
    assert_eq!(v["variant"], "cu118");
    assert_eq!(v["torch"], "2.7.1");
    assert_eq!(v["torchvision"], "0.22.1");
    assert_eq!(v["torchaudio"], "2.7.1");
    let commands = &v["commands"];
    for key in ["pip", "uv", "conda"] {
        assert!(
            commands.get(key).is_some(),
            "commands lacks {key}: {commands:#}"
        );
    }
    assert!(
        commands["pip"]
            .as_str()
            .unwrap()
            .starts_with("pip install torch==2.7.1+cu118"),
        "{commands:#}"
    );
    assert!(
        commands["uv"]
            .as_str()
            .unwrap()
            .contains("--torch-backend=cu118"),
        "{commands:#}"
    );
    // PyTorch publishes no conda packages of this release: no command rather than a wrong one.
    assert!(commands["conda"].is_null(), "{commands:#}");
    let reasons = v["reasons"].as_array().unwrap();
    assert!(!reasons.is_empty());
    assert!(
        reasons
            .iter()
            .all(|r| r.as_str().is_some_and(|s| !s.is_empty())),
        "{reasons:#?}"
    );
    // Every variant the driver cannot run is named with why.
    let avoid = v["avoid"].as_array().unwrap();
    assert!(
        avoid.iter().any(|a| a["what"] == "torch 2.7.1 cu126"
            && a["why"].as_str().unwrap().contains("470.82.01")),
        "{avoid:#?}"
    );
}

#[test]
fn plan_the_reverse_question_which_drivers_a_build_needs() {
    let r = cudoctor(
        &["plan", "--torch", "2.7", "--cuda", "12.8", "--no-detect"],
        b"",
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with("torch 2.7.1\n"), "{}", r.stdout);
    assert!(r.stdout.contains("cu128 (CUDA 12.8)"), "{}", r.stdout);
    assert!(r.stdout.contains(">= 570.26 natively"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("pip install torch==2.7.1+cu128 torchvision==0.22.1 torchaudio==2.7.1"),
        "{}",
        r.stdout
    );
    let r = cudoctor(
        &[
            "plan",
            "--torch",
            "2.7",
            "--cuda",
            "12.8",
            "--no-detect",
            "--format",
            "json",
        ],
        b"",
    );
    let v = json(&r);
    assert_eq!(v["torch"], "2.7.1");
    let variants = v["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 1, "{v:#}");
    assert_eq!(variants[0]["variant"], "cu128");
    assert_eq!(variants[0]["min_driver"], "570.26");
}

#[test]
fn plan_rejects_bad_input_with_exit_2() {
    let r = cudoctor(&["plan", "--driver", "garbage", "--no-detect"], b"");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--driver garbage"), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);

    let r = cudoctor(&["plan", "--torch", "9.9", "--no-detect"], b"");
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("9.9"), "{}", r.stderr);

    let r = cudoctor(&["plan", "--gpu", "banana", "--no-detect"], b"");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);

    let r = cudoctor(&["plan", "--no-detect", "--format", "html"], b"");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
}

#[test]
fn plan_detects_the_fake_machine() {
    let m = FakeMachine::with_driver("470.82.01", "11.4", &[Gpu::rtx3090()]);
    let r = m.run(&["plan", "--python-version", "3.10", "--format", "json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["variant"], "cu118", "{v:#}");
    assert_eq!(v["torch"], "2.7.1", "{v:#}");
    assert_eq!(v["gpus"][0]["cc"], "8.6", "{v:#}");
    // The old spelling still works, with a warning, and gives the same plan.
    let old = m.run(&["plan", "--python", "3.10", "--format", "json"]);
    assert_eq!(old.code, 0, "{}", old.stderr);
    assert!(old.stderr.contains("--python-version"), "{}", old.stderr);
    assert_eq!(old.stdout, r.stdout);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    let help = m.run(&["plan", "--help"]);
    assert!(help.stdout.contains("--python-version"), "{}", help.stdout);
    assert!(help.stdout.contains("--python <PATH>"), "{}", help.stdout);
}

#[test]
fn plan_python_names_the_environment_to_plan_for() {
    let mut m = FakeMachine::with_driver("470.82.01", "11.4", &[Gpu::rtx3090()]);
    // Two envs; the active one (the last made) has a build this driver cannot run.
    m.venv("/opt/fits", "2.7.1+cu118", Some("11.8"), &[]);
    m.venv("/opt/too-new", "2.7.1+cu126", Some("12.6"), &[]);
    let plan = |extra: &[&str]| {
        let mut args = vec!["plan", "--format", "json"];
        args.extend_from_slice(extra);
        let r = m.run(&args);
        let v: Value = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", r.stdout, r.stderr));
        (r.code, v["current"]["findings"].to_string())
    };
    let (code, found) = plan(&[]);
    assert!(code == 1 && found.contains("2.7.1 cu126"), "{code} {found}");
    let (code, found) = plan(&["--python", "/opt/fits"]);
    assert!(code == 0 && found.contains("2.7.1+cu118"), "{code} {found}");
    let (code, found) = plan(&["--python", "/opt/too-new/bin/python3"]);
    assert!(code == 1 && found.contains("2.7.1 cu126"), "{code} {found}");
    let r = m.run(&["plan", "--python", "/opt/nowhere"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("/opt/nowhere"), "{}", r.stderr);
    let r = m.run(&["plan", "--no-detect", "--python", "/opt/fits"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--python-version"), "{}", r.stderr);
}

/// plan's headline command installs into the environment it plans for, in that environment's
/// own installer: never a bare `pip install` that lands in whatever pip is first on PATH.
#[test]
fn plan_writes_its_command_for_the_environment_in_its_own_installer() {
    let mut m = FakeMachine::with_driver("580.95.05", "13.0", &[Gpu::rtx3090()]);
    m.venv("/opt/uv env", "2.11.0+cu130", Some("13.0"), &[]);
    m.file(
        "/opt/uv env/pyvenv.cfg",
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\nuv = 0.9.0\n",
    );
    let r = m.run(&["plan", "--python", "/opt/uv env"]);
    assert!(
        r.stdout
            .contains("uv pip install --python '/opt/uv env/bin/python' torch=="),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("pip install")),
        "{}",
        r.stdout
    );
    let v: Value = serde_json::from_str(
        &m.run(&["plan", "--python", "/opt/uv env", "--format", "json"])
            .stdout,
    )
    .unwrap();
    assert!(
        v["commands"]["env"]["shell"]
            .as_str()
            .is_some_and(|c| c.starts_with("uv pip install --python")),
        "{v:#}"
    );
    // --installer pip on an env without pip: uv's command, and why.
    let r = m.run(&["plan", "--python", "/opt/uv env", "--installer", "pip"]);
    assert!(r.stdout.contains("has no pip"), "{}", r.stdout);
    // --installer conda: a command or the reason there is none, never nothing.
    let r = m.run(&["plan", "--python", "/opt/uv env", "--installer", "conda"]);
    assert!(r.stdout.contains("no conda command"), "{}", r.stdout);
    assert!(r.stdout.contains("uv pip install --python"), "{}", r.stdout);
}

// ---------------------------------------------------------------- explain

const NO_KERNEL_IMAGE: &str = "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nRuntimeError: CUDA error: no kernel image is available for execution on the device\nCUDA kernel errors might be asynchronously reported at some other API call.\n";

#[test]
fn explain_a_log_file_and_stdin_alike() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    std::fs::write(&log, NO_KERNEL_IMAGE).unwrap();
    let from_file = cudoctor(
        &[
            "explain",
            "--no-machine",
            "--format",
            "json",
            log.to_str().unwrap(),
        ],
        b"",
    );
    let from_stdin = cudoctor(
        &["explain", "--no-machine", "--format", "json", "-"],
        NO_KERNEL_IMAGE.as_bytes(),
    );
    // No argument reads standard input too.
    let default_stdin = cudoctor(
        &["explain", "--no-machine", "--format", "json"],
        NO_KERNEL_IMAGE.as_bytes(),
    );
    assert_eq!(
        from_file.code, 1,
        "a known cause exits 1: {}",
        from_file.stderr
    );
    assert_eq!(from_stdin.code, 1);
    let (a, b, c) = (json(&from_file), json(&from_stdin), json(&default_stdin));
    assert_eq!(a, b);
    assert_eq!(a, c);
    for key in ["category", "confidence", "cause", "fix", "matched"] {
        assert!(a.get(key).is_some(), "explanation lacks {key}: {a:#}");
    }
    assert_eq!(a["category"], "no_kernel_image");
    let confidence = a["confidence"].as_f64().unwrap();
    assert!((0.5..=1.0).contains(&confidence), "{confidence}");
    assert!(!a["fix"].as_array().unwrap().is_empty());
    assert_eq!(a["matched"][0]["line_no"], 3);
    assert!(a["matched"][0]["text"]
        .as_str()
        .unwrap()
        .contains("no kernel image is available"));
    // --no-machine: nothing about this machine.
    assert!(a["machine"].is_null(), "{a:#}");
}

#[test]
fn explain_text_names_the_cause_and_the_fix() {
    let r = cudoctor(&["explain", "--no-machine"], NO_KERNEL_IMAGE.as_bytes());
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("\nCause: "), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("line 3: RuntimeError: CUDA error: no kernel image"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("\nFix:\n  1. "), "{}", r.stdout);
}

#[test]
fn explain_text_header_is_one_line() {
    let r = cudoctor(&["explain", "--no-machine"], NO_KERNEL_IMAGE.as_bytes());
    let first = r.stdout.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "A library has no code for this GPU's architecture [no_kernel_image, confidence 0.90]"
    );
    let r = cudoctor(&["explain", "--no-machine"], b"");
    assert_eq!(
        r.stdout.lines().next().unwrap_or_default(),
        "Nothing to explain [unknown]"
    );
}

#[test]
fn explain_empty_input_is_unknown_and_binary_garbage_is_refused() {
    let r = cudoctor(&["explain", "--no-machine", "--format", "json"], b"");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v = json(&r);
    assert_eq!(v["category"], "unknown");
    assert!(v["cause"].as_str().unwrap().contains("empty"), "{v:#}");
    assert!(v["matched"].as_array().unwrap().is_empty());

    // Bytes of every value, NULs, invalid UTF-8 and one huge line.
    let mut garbage: Vec<u8> = (0..=255u8).cycle().take(64 * 1024).collect();
    garbage.extend(std::iter::repeat_n(b'x', 2 * 1024 * 1024));
    garbage.extend_from_slice(b"\xff\xfe\n\0\0\n");
    for format in ["json", "text"] {
        let r = cudoctor(&["explain", "--no-machine", "--format", format], &garbage);
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        assert!(
            r.stderr
                .contains("standard input is binary data, not a text log"),
            "{}",
            r.stderr
        );
    }

    // A known message buried in garbage is still found.
    let mut mixed = garbage.clone();
    mixed.extend_from_slice(NO_KERNEL_IMAGE.as_bytes());
    let r = cudoctor(&["explain", "--no-machine", "--format", "json"], &mixed);
    assert_eq!(json(&r)["category"], "no_kernel_image");
}

#[test]
fn explain_refuses_a_directory_and_a_device() {
    let dir = std::env::temp_dir();
    let dir = dir.to_string_lossy();
    let r = cudoctor(&["explain", "--no-machine", &dir], b"");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("is a directory, not a log file"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    if std::path::Path::new("/dev/zero").exists() {
        let r = cudoctor(&["explain", "--no-machine", "/dev/zero"], b"");
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains("is a device"), "{}", r.stderr);
    }
}

#[test]
fn explain_refuses_nul_bytes_as_binary_input_not_an_empty_log() {
    // 200 MB of NUL bytes, as a file (the reproducer of the hostile-input probe).
    let path = std::env::temp_dir().join(format!("cudoctor-nul-{}.bin", std::process::id()));
    let f = std::fs::File::create(&path).expect("temp file");
    f.set_len(200 * 1024 * 1024).expect("sparse 200 MB file");
    drop(f);
    let r = cudoctor(
        &[
            "explain",
            "--no-machine",
            "--format",
            "json",
            &path.to_string_lossy(),
        ],
        b"",
    );
    let _ = std::fs::remove_file(&path);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr.contains(&format!(
            "{} is binary data, not a text log (209715200 bytes",
            path.display()
        )),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("empty"), "{}", r.stderr);
}

#[test]
fn explain_a_missing_file_exits_2() {
    let r = cudoctor(
        &["explain", "--no-machine", "/definitely/not/here.log"],
        b"",
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("cannot read /definitely/not/here.log"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let r = cudoctor(&["explain", "--no-machine", "--format", "html"], b"x");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
}

const DRIVER_TOO_OLD: &str = "RuntimeError: The NVIDIA driver on your system is too old (found version 12020). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver.\n";

#[test]
fn explain_cross_checks_with_the_machine() {
    // The machine the message came from: driver 535 (CUDA 12.2) and a cu130 torch.
    let mut m = FakeMachine::with_driver("535.104.05", "12.2", &[Gpu::a100()]);
    m.torch("2.11.0+cu130", &[]);
    let mut cmd = m.command(&["explain", "--format", "json", "-"]);
    let v = feed(&mut cmd, DRIVER_TOO_OLD);
    assert_eq!(v["category"], "driver_too_old");
    assert_eq!(v["machine"]["verdict"], "consistent", "{v:#}");
    assert!(
        v["machine"]["evidence"].to_string().contains("535.104.05"),
        "{v:#}"
    );

    // A machine whose driver runs CUDA 13.0 did not print this message.
    let m = FakeMachine::h200();
    let mut cmd = m.command(&["explain", "--format", "json", "-"]);
    let v = feed(&mut cmd, DRIVER_TOO_OLD);
    assert_eq!(v["category"], "driver_too_old");
    assert_eq!(v["machine"]["verdict"], "contradicts", "{v:#}");
}

#[test]
fn explain_gives_no_fix_the_machine_already_has() {
    let m = FakeMachine::h200();
    let mut cmd = m.command(&["explain", "--format", "json", "-"]);
    let v = feed(&mut cmd, DRIVER_TOO_OLD);
    assert_eq!(v["machine"]["verdict"], "contradicts", "{v:#}");
    let fixes = format!("{} {}", v["fix"], v["machine"]["fixes"]);
    assert!(
        !fixes.contains("Update the NVIDIA driver to 580 or newer"),
        "the driver is 580.159.04 already: {fixes}"
    );
    assert!(
        !fixes.contains("install the cu130 build"),
        "torch 2.11.0+cu130 is installed already: {fixes}"
    );
}

const DRIVER_R470: &str =
    "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n";

/// The shell steps of an explanation's fix list, each checked to parse as shell.
fn explain_commands(v: &Value) -> Vec<String> {
    let steps = v["fix"].as_array().expect("fix is a list");
    let mut shell = Vec::new();
    for step in steps {
        if let Some(p) = step["prose"].as_str() {
            assert!(!p.contains("pip install"), "a command inside prose: {p}");
            continue;
        }
        let cmd = step["shell"].as_str().expect("a step is shell or prose");
        support::shell_parses(cmd);
        shell.push(cmd.to_string());
    }
    shell
}

/// explain's own fixes are commands of the one install writer: for the `--python` env in its
/// own installer (uv in a uv-made venv), else for the `python` on PATH through its pip.
#[test]
fn explain_writes_its_commands_for_the_named_env_or_the_python_on_path() {
    let mut m = FakeMachine::with_driver("470.256.02", "11.4", &[Gpu::new("Tesla T4", "7.5")]);
    m.venv("/opt/uv env", "2.11.0+cu130", Some("13.0"), &[]);
    m.file(
        "/opt/uv env/pyvenv.cfg",
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\nuv = 0.9.0\n",
    );
    let mut cmd = m.command(&[
        "explain",
        "--python",
        "/opt/uv env",
        "--format",
        "json",
        "-",
    ]);
    let v = feed(&mut cmd, DRIVER_R470);
    let cmds = explain_commands(&v);
    let head = "uv pip install --python '/opt/uv env/bin/python' torch==";
    assert!(cmds.iter().any(|c| c.starts_with(head)), "{cmds:#?}\n{v:#}");
    assert!(
        cmds.iter()
            .all(|c| !c.starts_with("pip ") && !c.starts_with("python -m pip")),
        "{cmds:#?}"
    );

    let r = cudoctor(
        &["explain", "--no-machine", "--format", "json"],
        DRIVER_R470.as_bytes(),
    );
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    let cmds = explain_commands(&v);
    assert!(
        cmds.iter()
            .any(|c| c.starts_with("python -m pip install torch==")),
        "{cmds:#?}"
    );
    // The text shows the same steps, commands after a prompt.
    let r = cudoctor(&["explain", "--no-machine"], DRIVER_R470.as_bytes());
    assert!(
        r.stdout.contains(". $ python -m pip install torch=="),
        "{}",
        r.stdout
    );
}

/// `explain --kb DIR` chooses and confirms with that knowledge base, as `check --kb` judges:
/// without the driver branch the message names, the knowledge base cannot say which build
/// that driver keeps, so no such fix is offered.
#[test]
fn explain_uses_the_knowledge_base_given() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../cudoctor-kb/data");
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(data).unwrap() {
        let entry = entry.unwrap();
        if entry.path().extension().is_some_and(|e| e == "toml") {
            std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
        }
    }
    let kb = dir.path().to_str().unwrap();
    let keeps = |kb: Option<&str>| {
        let mut args = vec!["explain", "--no-machine", "--format", "json"];
        args.extend(kb.map(|k| ["--kb", k]).into_iter().flatten());
        let r = cudoctor(&args, DRIVER_R470.as_bytes());
        assert_eq!(r.code, 1, "{}", r.stderr);
        let v: Value = serde_json::from_str(&r.stdout).expect("json");
        v["fix"].to_string().contains("Keep the driver (R470")
    };
    assert!(keeps(None));
    assert!(keeps(Some(kb)));
    let drivers = std::fs::read_to_string(dir.path().join("drivers.toml")).unwrap();
    let row = "[[branch]]\nbranch = 470\nmax_cuda = \"11.4\"\n";
    assert!(drivers.contains(row), "drivers.toml changed its layout");
    std::fs::write(
        dir.path().join("drivers.toml"),
        drivers.replace(row, "[[branch]]\nbranch = 470\n"),
    )
    .unwrap();
    assert!(!keeps(Some(kb)), "explain ignored --kb");
}

fn feed(cmd: &mut Command, input: &str) -> Value {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cudoctor");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

// ---------------------------------------------------------------- html

/// The values of every link-like attribute (`src`, `href`, ...) of every tag in `html`, quoted
/// or not. Text between tags is not looked at: escaped text (`&lt;img src=...`) is no tag.
fn link_attributes(html: &str) -> Vec<String> {
    const NAMES: [&str; 6] = ["src", "href", "xlink:href", "action", "srcset", "poster"];
    let mut out = Vec::new();
    for tag in html.split('<').skip(1).filter_map(|t| t.split('>').next()) {
        let mut rest = tag;
        // Skip the tag name, then read `name=value` pairs.
        while let Some(ws) = rest.find(char::is_whitespace) {
            rest = rest[ws..].trim_start();
            let Some(eq) = rest.find('=') else { break };
            let name = rest[..eq].trim().to_ascii_lowercase();
            let after = rest[eq + 1..].trim_start();
            let (value, tail) = match after.chars().next() {
                Some(q @ ('"' | '\'')) => {
                    let body = &after[1..];
                    let end = body.find(q).unwrap_or(body.len());
                    (&body[..end], body.get(end + 1..).unwrap_or(""))
                }
                _ => {
                    let end = after.find(char::is_whitespace).unwrap_or(after.len());
                    (&after[..end], &after[end..])
                }
            };
            if NAMES.contains(&name.as_str()) {
                out.push(value.trim().to_string());
            }
            rest = if tail.is_empty() { "" } else { tail };
            if !rest.starts_with(char::is_whitespace) {
                rest = match rest.find(char::is_whitespace) {
                    Some(i) => &rest[i..],
                    None => "",
                };
            }
        }
    }
    out
}

#[test]
fn link_attributes_reads_tags_only() {
    let html = "<a href=\"https://x\">t</a><img  src='//y' alt=\"a b\"> src=https://text &lt;img src=https://z&gt;<use xlink:href=#p />";
    assert_eq!(link_attributes(html), ["https://x", "//y", "#p"]);
}

fn assert_self_contained(html: &str) {
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "{}",
        &html[..200.min(html.len())]
    );
    assert!(html.trim_end().ends_with("</html>"));
    for value in link_attributes(html) {
        let v = value.to_ascii_lowercase();
        assert!(
            !(v.starts_with("http:") || v.starts_with("https:") || v.starts_with("//")),
            "external resource: {value}"
        );
    }
    let lower = html.to_ascii_lowercase();
    for pattern in ["url(http", "url(\"http", "url('http", "url(//", "@import"] {
        assert!(!lower.contains(pattern), "external resource: {pattern}");
    }
}

#[test]
fn html_report_of_a_broken_machine_is_self_contained() {
    let mut m = FakeMachine::with_driver("535.104.05", "12.2", &[Gpu::a100()]);
    m.torch("2.11.0+cu130", &[("torchvision", "0.25.0")]);
    let r = m.run(&["check", "--format", "html"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_self_contained(&r.stdout);
    // The fixes carry index URLs as text; the report may show them, never load them.
    assert!(r.stdout.contains("DRV004"), "DRV004 missing");
    assert!(r.stdout.contains("535.104.05"));
}

#[test]
fn html_report_of_the_real_deep_run_has_plots_and_no_external_resources() {
    let baseline = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/device-runs/2026-11-30-h200x2/deep/baseline.json");
    let r = cudoctor(
        &[
            "check",
            "--format",
            "html",
            "--snapshot",
            baseline.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_self_contained(&r.stdout);
    assert!(r.stdout.contains("<svg"), "no plot in the deep report");
}

#[test]
fn html_escapes_what_the_machine_reports() {
    let m = FakeMachine::new();
    let hostile = "<script>alert(1)</script><img src=https://example.invalid/x.png>";
    let mut m = m;
    m.driver("580.159.04", "13.0", &[Gpu::new(hostile, "9.0")]);
    let r = m.run(&["check", "--format", "html"]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    assert!(!r.stdout.contains("<script>alert(1)"), "unescaped GPU name");
    assert!(!r.stdout.contains("<img src=https"), "unescaped GPU name");
    assert!(
        r.stdout.contains("&lt;script&gt;"),
        "the name is shown, escaped"
    );
    assert_self_contained(&r.stdout);
}

/// Each command's `--help` offers exactly the formats it renders, and the parser refuses the
/// others (exit 2) before anything is collected.
#[test]
fn every_command_offers_exactly_the_formats_it_renders() {
    let all = ["text", "json", "markdown", "html", "prometheus"];
    let report = ["text", "json", "markdown", "html"];
    let tables = ["text", "json", "markdown"];
    // (the command with its required arguments, the formats it renders)
    let cases: &[(&[&str], &[&str])] = &[
        (&["check"], &all),
        (&["diff", "a", "b"], &report),
        (&["fleet", "a"], &report),
        (&["fleet", "collect"], &report),
        (&["kernels"], &tables),
        (&["libs"], &tables),
        (&["plan"], &tables),
        (&["explain"], &tables),
        (&["rule", "KRN001"], &tables),
        (&["rules"], &tables),
    ];
    for (cmd, formats) in cases {
        let help_args: Vec<&str> = cmd
            .iter()
            .copied()
            .filter(|a| *a != "a" && *a != "b")
            .collect();
        let offered = support::offered_formats(&help_args);
        assert_eq!(&offered, formats, "{help_args:?} -h");
        for f in all.iter().filter(|f| !formats.contains(f)) {
            let mut args: Vec<&str> = cmd.to_vec();
            args.extend(["--format", f]);
            let r = cudoctor(&args, b"");
            assert_eq!(r.code, 2, "{args:?}: {}{}", r.stdout, r.stderr);
            assert!(r.stderr.contains("invalid value"), "{args:?}: {}", r.stderr);
            assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
        }
    }
}

// ---------------------------------------------------------------- pipes

#[test]
fn a_closed_stdout_pipe_ends_quietly() {
    let baseline = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/device-runs/2026-11-30-h200x2/deep/baseline.json");
    // The JSON report is larger than a pipe's buffer, so writing it must meet the closed end.
    let mut child = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--format", "json", "--snapshot"])
        .arg(&baseline)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 16];
    let mut stdout = child.stdout.take().unwrap();
    stdout.read_exact(&mut head).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("internal error"), "{stderr}");
}

/// A Jetson root, from real file contents: the release line a Jetson AGX Xavier on JetPack
/// 5.1.2 prints for `cat /etc/nv_tegra_release` (L4T R35.4.1; the file's first line, as
/// NVIDIA's Jetson Linux guide reads it with `head -n 1`), and the board model the Linux
/// kernel's device tree for that developer kit declares (arch/arm64/boot/dts/nvidia/
/// tegra194-p2972-0000.dts: `model = "NVIDIA Jetson AGX Xavier Developer Kit";`), which
/// /proc/device-tree/model holds as a NUL-terminated string.
fn jetson_xavier() -> FakeMachine {
    let mut m = FakeMachine::new();
    m.file(
        "/etc/nv_tegra_release",
        "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, DATE: Tue Aug  1 19:57:35 UTC 2023\n# KERNEL_VARIANT: oot\n",
    );
    m.file(
        "/proc/device-tree/model",
        "NVIDIA Jetson AGX Xavier Developer Kit\0",
    );
    // PyPI's torch 2.11.0 (its aarch64 wheel is the CUDA 13.0 build), not a JetPack build.
    m.venv("/opt/venv", "2.11.0", Some("13.0"), &[]);
    m
}

/// check, explain and plan judge a Jetson root as Jetson (not as a generic linux-aarch64
/// host): plan plans for the Jetson platform, and check's (and so explain's) finding for the
/// missing discrete-GPU driver gives plan's Jetson answer, not a driver install.
#[test]
fn check_explain_and_plan_plan_a_jetson_as_jetson() {
    let m = jetson_xavier();
    let r = m.run(&["plan", "--format", "json"]);
    let plan: Value = serde_json::from_str(&r.stdout).expect("plan json");
    assert_eq!(plan["platform"], "jetson", "{plan:#}");
    let jetpack = plan["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|w| w.contains("JetPack"))
        .expect("plan's Jetson answer")
        .trim_start_matches("no install command: ")
        .to_string();

    let (v, code) = m.json();
    assert_eq!(code, 1);
    assert!(
        v["snapshot"]["host"]["l4t_release"]
            .as_str()
            .is_some_and(|l| l.starts_with("# R35 (release), REVISION: 4.1")),
        "{:#}",
        v["snapshot"]["host"]
    );
    let drv = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "DRV001")
        .expect("DRV001");
    assert_eq!(drv["severity"], "error", "{drv:#}");
    let fix = drv["fix"].to_string();
    assert!(fix.contains(&jetpack), "{fix}\nplan: {jetpack}");
    assert!(!fix.contains("ubuntu-drivers"), "{fix}");
    let text = m.run(&["check"]).stdout;
    assert!(
        text.contains("NVIDIA Jetson AGX Xavier Developer Kit (R35 (release), REVISION: 4.1"),
        "{text}"
    );

    // explain confirms "no driver" with the same finding, and gives its fix.
    let mut cmd = m.command(&["explain", "--format", "json", "-"]);
    let e = feed(
        &mut cmd,
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n",
    );
    assert_eq!(e["machine"]["verdict"], "consistent", "{e:#}");
    assert!(
        e["machine"]["fixes"].to_string().contains(&jetpack),
        "{e:#}"
    );

    // The same root without the Jetson files is a generic host with a missing driver.
    let m = FakeMachine::new();
    let (v, _) = m.json();
    assert!(v["snapshot"]["host"].get("l4t_release").is_none());
}

// ---------------------------------------------------------------- --gpu, one reading

/// check, kernels, plan and explain read `--gpu` through the one parser: each spelling is taken
/// by all four or refused by all four, with the same message.
#[test]
fn every_command_reads_gpu_spellings_alike() {
    let m = FakeMachine::h200();
    let log =
        b"RuntimeError: CUDA error: no kernel image is available for execution on the device\n";
    let library = env!("CARGO_BIN_EXE_cudoctor");
    let run_all = |g: &str| -> Vec<(&str, Out)> {
        let check = m.run(&["check", "--gpu", g]);
        vec![
            (
                "check",
                Out {
                    code: check.code,
                    stdout: check.stdout,
                    stderr: check.stderr,
                },
            ),
            ("kernels", cudoctor(&["kernels", "--gpu", g, library], b"")),
            (
                "plan",
                cudoctor(
                    &["plan", "--gpu", g, "--driver", "580.65.06", "--no-detect"],
                    b"",
                ),
            ),
            ("explain", cudoctor(&["explain", "--gpu", g, "-"], log)),
        ]
    };
    for g in [
        "sm_90",
        "SM_90",
        "sm_90a",
        "sm_100f",
        "compute_90",
        "9.0",
        "90",
        "120",
        "H200",
        "NVIDIA H200",
    ] {
        for (command, out) in run_all(g) {
            assert_ne!(out.code, 2, "{command} --gpu {g:?} refused: {}", out.stderr);
        }
    }
    // sm_900 reads as 90.0 and 9.9 parses: no GPU has either.
    for g in ["sm_9x", "banana", "9.00", "9", "sm_", "", "sm_900", "9.9"] {
        let mut messages = Vec::new();
        for (command, out) in run_all(g) {
            assert_eq!(
                out.code, 2,
                "{command} --gpu {g:?} accepted: {}",
                out.stdout
            );
            let message = out
                .stderr
                .lines()
                .find_map(|l| l.split_once("unknown GPU ").map(|(_, m)| m.to_string()))
                .unwrap_or_else(|| panic!("{command} --gpu {g:?}: {}", out.stderr));
            messages.push(message);
        }
        messages.dedup();
        assert_eq!(messages.len(), 1, "--gpu {g:?}: {messages:#?}");
    }
}
