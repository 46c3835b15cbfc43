//! The command line end to end: formats, saved snapshots, bad input, hung and garbage tools.

mod support;

use support::{FakeMachine, Gpu};

#[test]
fn text_report_of_the_h200_machine() {
    let m = FakeMachine::h200();
    let r = m.run(&["check"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!("h200_text", r.stdout);
}

#[test]
fn markdown_report_of_a_broken_machine() {
    let mut m = FakeMachine::with_driver("535.104.05", "12.2", &[Gpu::a100()]);
    m.torch("2.11.0+cu130", &[("torchvision", "0.25.0")]);
    let r = m.run(&["check", "--format", "markdown"]);
    assert_eq!(r.code, 1);
    insta::assert_snapshot!("broken_markdown", r.stdout);
}

#[test]
fn json_report_has_the_documented_shape() {
    let (v, code) = FakeMachine::h200().json();
    assert_eq!(code, 0);
    assert_eq!(v["schema_version"], 3);
    for f in v["findings"].as_array().unwrap() {
        for key in [
            "code", "layer", "severity", "title", "evidence", "cause", "fix",
        ] {
            assert!(f.get(key).is_some(), "finding lacks {key}: {f}");
        }
        let layer = f["layer"].as_str().unwrap();
        assert!([
            "driver",
            "toolkit",
            "framework",
            "kernels",
            "libraries",
            "acceleration",
            "multigpu",
            "platform"
        ]
        .contains(&layer));
        assert!(["error", "warning", "info"].contains(&f["severity"].as_str().unwrap()));
    }
}

#[test]
fn a_saved_snapshot_gives_the_same_report() {
    let m = FakeMachine::h200();
    let saved = m.root().join("snap.json");
    let live = m.run(&[
        "check",
        "--format",
        "json",
        "--save",
        saved.to_str().unwrap(),
    ]);
    let replay = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args([
            "check",
            "--format",
            "json",
            "--snapshot",
            saved.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let a: serde_json::Value = serde_json::from_str(&live.stdout).unwrap();
    let b: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
    assert_eq!(a["findings"], b["findings"]);
    assert_eq!(a["snapshot"]["driver"], b["snapshot"]["driver"]);
}

/// `--gpu` is a what-if judged from the machine as found: `--save` keeps the GPUs found, and
/// the report's snapshot marks the named ones as what-if, not as observed.
#[test]
fn a_what_if_gpu_is_never_saved_as_the_machines() {
    let m = FakeMachine::h200();
    let saved = m.root().join("snap.json");
    let r = m.run(&[
        "check",
        "--gpu",
        "GTX 1080",
        "--format",
        "json",
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let report: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let judged = report["snapshot"]["driver"]["gpus"].as_array().unwrap();
    assert_eq!(judged.len(), 1, "{judged:?}");
    assert_eq!(judged[0]["what_if"], true);
    assert_eq!(judged[0]["compute_capability"], "6.1");
    let snap: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let found = snap["driver"]["gpus"].as_array().unwrap();
    assert_eq!(found.len(), 2, "{found:?}");
    for g in found {
        assert_eq!(g["name"], "NVIDIA H200");
        assert_ne!(g["compute_capability"], "6.1");
        assert!(g.get("what_if").is_none(), "{g}");
    }
    // The saved machine, judged again, is the healthy H200 machine.
    let replay = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--snapshot", saved.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0), "{replay:?}");
}

#[test]
fn strict_fails_on_warnings() {
    let mut m = FakeMachine::new();
    m.driver(
        "580.159.04",
        "13.0",
        &[Gpu {
            name: "NVIDIA L4",
            cc: "8.9",
            total_mib: 23034,
            used_mib: 22000,
        }],
    );
    // The memory in use (a warning) is nvidia-smi's to tell: it runs as this machine's tool.
    assert_eq!(m.run_live(&["check"]).code, 0);
    assert_eq!(m.run_live(&["check", "--strict"]).code, 1);
}

#[test]
fn a_hung_nvidia_smi_is_abandoned_at_the_timeout() {
    let m = FakeMachine::new();
    m.script("/usr/bin/nvidia-smi", "sleep 30");
    let started = std::time::Instant::now();
    let r = m.run_live(&["check", "--timeout", "0.5", "--format", "json"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let attempts = v["snapshot"]["driver"]["attempts"].as_array().unwrap();
    assert!(
        attempts.iter().any(|a| a["outcome"] == "timed_out"),
        "{attempts:#?}"
    );
}

#[test]
fn garbage_from_nvidia_smi_is_recorded_not_fatal() {
    let m = FakeMachine::new();
    m.script("/usr/bin/nvidia-smi", "head -c 3000 /dev/urandom; exit 0");
    let r = m.run_live(&["check", "--format", "json"]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    // Random bytes differ each run: a failure shows what cudoctor printed for them.
    let v: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout, r.stderr));
    assert!(v["snapshot"]["driver"]["gpus"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn nvidia_smi_failing_with_an_error_is_recorded() {
    let m = FakeMachine::new();
    m.script(
        "/usr/bin/nvidia-smi",
        "echo 'Failed to initialize NVML: Driver/library version mismatch'; exit 18",
    );
    let r = m.run_live(&["check", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let codes = cudoctor_testkit::finding_codes(&v);
    assert!(codes.contains(&"DRV003"), "{codes:?}");
    // The mismatch is a fact of the snapshot, not only words in an attempt.
    assert_eq!(
        v["snapshot"]["driver"]["library_mismatch"]["value"],
        "Failed to initialize NVML: Driver/library version mismatch"
    );
}

#[test]
fn saved_schema_1_reports_of_the_gpu_machine_still_load() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/device-runs/");
    let m = FakeMachine::new();
    for rel in [
        "2026-11-30-h200x2/check.json",
        "2026-11-30-h200x2/deep/baseline.json",
        "2026-11-30-h200x1/deep.json",
    ] {
        let path = format!("{dir}{rel}");
        let r = m.run(&["check", "--snapshot", &path, "--format", "json"]);
        assert!(r.code == 0 || r.code == 1, "{rel}: {} {}", r.code, r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["snapshot"]["schema_version"], 3, "{rel}");
        assert_eq!(
            v["snapshot"]["driver"]["gpus"][0]["mig_enabled"], false,
            "{rel}"
        );
        let codes = cudoctor_testkit::finding_codes(&v);
        // A healthy H200 machine: its module and libraries agree, no all-reduce failed.
        assert!(
            !codes.contains(&"DRV003") && !codes.contains(&"MGPU005"),
            "{rel}: {codes:?}"
        );
    }
}

#[test]
fn bad_inputs_exit_2_with_a_message() {
    let m = FakeMachine::new();
    m.file("/bad.json", "{not json");
    m.file("/other.json", "{\"hello\": 1}");
    m.file("/future.json", "{\"schema_version\": 99}");
    for (file, says) in [
        ("/bad.json", "not JSON"),
        ("/other.json", "not a cudoctor snapshot"),
        ("/future.json", "schema 99"),
        ("/missing.json", "cannot read"),
    ] {
        let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
            .args(["check", "--snapshot"])
            .arg(m.real(file))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{file}: {err}");
    }
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--root", "/definitely/not/here"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["--no-such-flag"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn non_utf8_paths_do_not_panic() {
    use std::os::unix::ffi::OsStrExt;
    let m = FakeMachine::new();
    let weird = std::ffi::OsStr::from_bytes(b"/tmp/\xff\xfe-snapshot.json");
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--snapshot"])
        .arg(weird)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // A site-packages entry whose name is not UTF-8.
    let sp = m.real("/opt/venv/lib/python3.12/site-packages");
    std::fs::create_dir_all(&sp).unwrap();
    std::fs::create_dir(sp.join(std::ffi::OsStr::from_bytes(b"\xff\xfe-1.0.dist-info"))).unwrap();
    m.file("/opt/venv/pyvenv.cfg", "version = 3.12.1\n");
    let mut m = m;
    m.var("VIRTUAL_ENV", "/opt/venv");
    let r = m.run(&["check"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn rule_documentation_and_listing() {
    let run = |args: &[&str]| {
        cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["rule", "DRV004"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("minor-version compatibility"), "{text}");
    let out = run(&["rule", "NOPE01"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["rules", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.as_array().unwrap().len() >= 16);
}

#[test]
fn diff_names_what_changed_after_an_upgrade() {
    let mut before = FakeMachine::with_driver("535.104.05", "12.2", &[Gpu::a100()]);
    before.torch("2.11.0+cu130", &[]);
    let a = before.root().join("a.json");
    before.run(&["check", "--save", a.to_str().unwrap()]);
    let mut after = FakeMachine::with_driver("580.159.04", "13.0", &[Gpu::a100()]);
    after.torch("2.11.0+cu130", &[]);
    let b = before.root().join("b.json");
    after.run(&["check", "--save", b.to_str().unwrap()]);
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["diff", a.to_str().unwrap(), b.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // What matters first: the driver, then the finding the upgrade resolved.
    let lines: Vec<&str> = text.lines().collect();
    // The headline takes a second line when the two file names are long.
    let driver = usize::from(lines[1].starts_with("    ")) + 1;
    assert_eq!(lines[driver], "Driver", "{text}");
    assert_eq!(
        lines[driver + 1],
        "  ~ driver version: 535.104.05 -> 580.159.04",
        "{text}"
    );
    let gone = text
        .find("Findings that went away")
        .expect("a finding went away");
    assert!(text[gone..].contains(" DRV004 "), "{text}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn fleet_marks_the_odd_node() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (i, driver) in ["580.159.04", "580.159.04", "570.86.15"].iter().enumerate() {
        let mut m = FakeMachine::new();
        m.driver(
            driver,
            if driver.starts_with("580") {
                "13.0"
            } else {
                "12.8"
            },
            &[Gpu::h100()],
        );
        m.torch("2.11.0+cu130", &[]);
        let p = dir.path().join(format!("node{i}.json"));
        m.run(&["check", "--save", p.to_str().unwrap()]);
        paths.push(p);
    }
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .arg("fleet")
        .args(&paths)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("      570.86.15  on 1: node2"), "{text}");
    assert!(
        text.contains("3 nodes reported, 0 failed; 1 with errors"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn the_readme_names_every_rule() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["rules", "--format", "json"])
        .output()
        .unwrap();
    let rules: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for r in rules.as_array().unwrap() {
        let code = r["code"].as_str().unwrap();
        assert!(readme.contains(code), "README.md does not mention {code}");
    }
}

#[test]
fn gpu_what_if_judges_the_stack_for_another_gpu() {
    let m = FakeMachine::h200();
    assert_eq!(m.run(&["check"]).code, 0);
    let r = m.run(&[
        "check",
        "--gpu",
        "NVIDIA GeForce GTX 1080 Ti",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let krn = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "KRN001")
        .expect("KRN001");
    assert!(
        krn["evidence"][0].as_str().unwrap().contains("what-if"),
        "{krn:#}"
    );
    let bad = m.run(&["check", "--gpu", "no such gpu"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("--gpu"), "{}", bad.stderr);
}

#[test]
fn a_user_knowledge_base_directory_is_used_and_checked() {
    let m = FakeMachine::h200();
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../cudoctor-kb/data");
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(data).unwrap() {
        let entry = entry.unwrap();
        if entry.path().extension().is_some_and(|e| e == "toml") {
            std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
        }
    }
    let kb = dir.path().to_str().unwrap();
    assert_eq!(m.run(&["check", "--kb", kb]).code, 0);
    // A broken table is refused with its name, not used half-read.
    std::fs::write(dir.path().join("drivers.toml"), "this is [not toml").unwrap();
    let r = m.run(&["check", "--kb", kb]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("drivers.toml"), "{}", r.stderr);
}

/// `cudoctor ARGS` on this machine (no `--root`), run in `dir`.
fn cudoctor_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(args)
        .current_dir(dir)
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .output()
        .expect("cudoctor runs")
}

#[test]
fn a_relative_python_is_read_from_the_current_directory() {
    // Debian's interpreter, named as a user in /usr would type it.
    let Some(python) = ["/usr/bin/python3"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        panic!("/usr/bin/python3 is needed (Debian's python3)");
    };
    let out = cudoctor_in(
        std::path::Path::new("/usr"),
        &["check", "--format", "json", "--python", "bin/python3"],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    let envs = v["snapshot"]["python_envs"].as_array().unwrap();
    let given = envs
        .iter()
        .find(|e| {
            e["found_via"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v == "--python")
        })
        .unwrap_or_else(|| panic!("no env via --python ({python}): {envs:#?}"));
    assert_eq!(given["prefix"], "/usr", "{given:#}");
}

#[test]
fn a_python_that_is_neither_interpreter_nor_env_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not python").unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    for (arg, says) in [
        (
            "/nope/typo-venv",
            "--python /nope/typo-venv: no such file or directory",
        ),
        ("typo-venv", "--python typo-venv: no such file or directory"),
        ("notes.txt", "--python notes.txt: not a Python interpreter"),
        ("empty", "--python empty: not a Python environment"),
    ] {
        for cmd in ["check", "kernels", "libs", "explain"] {
            let mut args = vec![cmd, "--python", arg];
            if cmd == "explain" {
                args.push("CUDA error: no kernel image is available for execution on the device");
            }
            let out = cudoctor_in(dir.path(), &args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd} {arg}: {stderr}");
            assert!(stderr.contains(says), "{cmd} {arg}: {stderr}");
            assert!(
                out.stdout.is_empty(),
                "{cmd} {arg}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
}
