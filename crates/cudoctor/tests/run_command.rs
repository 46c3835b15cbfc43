//! `cudoctor run -- CMD` end to end: the real binary runs real Python programs (tests/run_programs)
//! with the observer. Without torch: exit codes, signals, stdin/stdout/stderr pass through, and
//! the observer chains to an existing sitecustomize and follows child processes. With torch (on
//! the CPU): the attention backends torch dispatched, optimizer steps, torch.compile's graph
//! breaks and recompilations.
//!
//! The torch tests take their interpreter from CUDOCTOR_TORCH_PYTHON, else the stock real-env
//! one when present. Without one they report a skip, and fail where CUDOCTOR_REQUIRE_TOOLS=1 (CI).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn cudoctor() -> Command {
    cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
}

fn program(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/run_programs")
        .join(name)
        .display()
        .to_string()
}

/// This machine's python3 (the tests without torch need only Python), or None: a reported skip.
fn python3(test: &str) -> Option<String> {
    let out = Command::new("python3")
        .arg("-c")
        .arg("import sys; print(sys.executable)")
        .output()
        .ok()
        .filter(|o| o.status.success());
    match out {
        Some(o) => Some(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        None => {
            cudoctor_testkit::skip_missing_tool(test, "no python3 here");
            None
        }
    }
}

use cudoctor_testkit::torch_python;

/// Runs `cudoctor run --out DIR/run.json -- CMD` and returns its output and the JSON report.
fn observed(dir: &Path, command: &[&str], stdin: &str) -> (Output, Value) {
    let out = dir.join("run.json");
    let mut child = cudoctor()
        .arg("run")
        .arg("--out")
        .arg(&out)
        .arg("--")
        .args(command)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let report = std::fs::read(&out)
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or_else(|e| {
            panic!(
                "no report at {}: {e}\n{}",
                out.display(),
                String::from_utf8_lossy(&output.stderr)
            )
        });
    (output, report)
}

fn codes(report: &Value) -> Vec<&str> {
    cudoctor_testkit::finding_codes(report)
}

#[test]
fn exit_codes_and_standard_streams_pass_through() {
    let Some(python3) = python3("exit_codes_and_standard_streams_pass_through") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for code in ["0", "3"] {
        let (out, report) = observed(
            dir.path(),
            &[&python3, &program("echo_exit.py"), code],
            "hello\n",
        );
        assert_eq!(out.status.code(), Some(code.parse().unwrap()));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "got: hello\n");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("to stderr\n"), "{err}");
        assert!(err.contains(&format!("exit {code}")), "{err}");
        assert_eq!(
            report["facts"]["exit"]["code"],
            code.parse::<i64>().unwrap()
        );
        // One Python process, without torch: said so, as a note.
        assert_eq!(report["facts"]["processes"].as_array().unwrap().len(), 1);
        assert_eq!(codes(&report), ["RUN005"]);
        assert_eq!(report["findings"][0]["severity"], "info");
    }
    assert!(dir.path().join("run.md").exists());
    let html = std::fs::read_to_string(dir.path().join("run.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
}

#[test]
fn a_command_without_python_is_reported_as_unobserved() {
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = observed(dir.path(), &["sh", "-c", "exit 7"], "");
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(codes(&report), ["RUN005"]);
    assert_eq!(report["findings"][0]["severity"], "warning");
}

#[test]
fn a_program_killed_by_a_signal_kills_cudoctor_with_it() {
    let Some(python3) = python3("a_program_killed_by_a_signal_kills_cudoctor_with_it") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = observed(
        dir.path(),
        &[
            &python3,
            "-c",
            "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
        ],
        "",
    );
    assert_eq!(out.status.signal(), Some(15), "{:?}", out.status);
    assert_eq!(report["facts"]["exit"]["signal"], 15);
    // The observer wrote its record before the signal's default action.
    assert_eq!(report["facts"]["processes"][0]["written_at"], "sigterm");
}

#[test]
fn signals_sent_to_cudoctor_reach_the_program() {
    let Some(python3) = python3("signals_sent_to_cudoctor_reach_the_program") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (signal, name) in [(15, "TERM"), (2, "INT")] {
        let out = dir.path().join(format!("sig{signal}.json"));
        let mut child = cudoctor()
            .arg("run")
            .arg("--out")
            .arg(&out)
            .arg("--")
            .arg(&python3)
            .arg(program("sleeps.py"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n");
        let started = Instant::now();
        let kill = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(kill.success());
        let status = child.wait().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the program did not stop"
        );
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        let report: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(report["facts"]["exit"]["forwarded_signals"][0], signal);
        assert_eq!(report["facts"]["exit"]["signal"], signal);
    }
}

#[test]
fn the_observer_chains_to_an_existing_sitecustomize_and_follows_children() {
    let Some(python3) =
        python3("the_observer_chains_to_an_existing_sitecustomize_and_follows_children")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("user-site");
    std::fs::create_dir(&site).unwrap();
    let marker = dir.path().join("marker");
    std::fs::write(
        site.join("sitecustomize.py"),
        format!(
            "import os\nwith open({:?}, 'a') as f:\n    f.write('ran %d\\n' % os.getpid())\n",
            marker.display().to_string()
        ),
    )
    .unwrap();
    let out = dir.path().join("run.json");
    let output = cudoctor()
        .arg("run")
        .arg("--out")
        .arg(&out)
        .arg("--")
        .arg(&python3)
        .arg(program("spawns_child.py"))
        .env("PYTHONPATH", &site)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "child ran\n");
    let report: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let procs = report["facts"]["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2, "parent and child: {procs:?}");
    // The user's sitecustomize ran in both processes, and the report names it.
    let ran = std::fs::read_to_string(&marker).unwrap();
    assert_eq!(ran.lines().count(), 2, "{ran}");
    assert_eq!(
        report["facts"]["chained_sitecustomize"],
        site.join("sitecustomize.py").display().to_string()
    );
}

#[test]
fn a_bad_baseline_is_refused_before_the_program_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"schema_version\": 1}").unwrap();
    let marker = dir.path().join("ran");
    let output = cudoctor()
        .arg("run")
        .arg("--baseline")
        .arg(&bad)
        .arg("--")
        .arg("touch")
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is not a `cudoctor run` report"));
    assert!(!marker.exists());
}

#[test]
fn attention_backends_come_from_what_torch_dispatched() {
    let Some(py) = torch_python("attention_backends_come_from_what_torch_dispatched") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out_json = dir.path().join("run.json");
    let out = cudoctor()
        .arg("run")
        .arg("--out")
        .arg(&out_json)
        .arg("--baseline")
        .arg(program("baseline_all_fused.json"))
        .arg("--")
        .arg(&py)
        .arg(program("attention_cpu.py"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&std::fs::read(&out_json).unwrap()).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The observer's global module hooks went with the first optimizer step.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "trained, 0 global forward hooks\n"
    );
    let p = &report["facts"]["processes"][0];
    assert!(p.get("errors").is_none(), "{}", p["errors"]);
    assert_eq!(p["sdpa"]["calls"], 7);
    let groups = p["sdpa"]["groups"].as_array().unwrap();
    let by_dropout = |d: bool, grad: bool| {
        groups
            .iter()
            .find(|g| g["dropout"] == d && g["grad"] == grad)
            .unwrap_or_else(|| panic!("no group dropout={d} grad={grad}: {groups:?}"))
    };
    let fused = by_dropout(false, true);
    assert_eq!(fused["calls"], 3);
    assert!(fused["dispatched_ops"][0]
        .as_str()
        .unwrap()
        .starts_with("_scaled_dot_product_flash_attention"));
    let math = by_dropout(true, true);
    assert_eq!(math["calls"], 3);
    let ops: Vec<&str> = math["dispatched_ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert!(
        ops.contains(&"bmm") && ops.iter().any(|o| o.contains("softmax")),
        "{ops:?}"
    );
    // torch's own reason, from the warnings it gives when no kernel but math takes the inputs.
    assert_eq!(
        math["rejections"][0]["reasons"][0], "Both fused kernels do not support non-zero dropout.",
        "{math}"
    );
    assert!(fused
        .get("rejections")
        .and_then(Value::as_array)
        .is_none_or(|r| r.is_empty()));
    assert_eq!(by_dropout(false, false)["calls"], 1);
    assert_eq!(p["steps"]["source"], "optimizer");
    assert_eq!(p["steps"]["count"], 6);
    assert_eq!(p["steps"]["durations_ms"].as_array().unwrap().len(), 5);
    // The observer's own time, where it was spent: 4 attention calls counted, 3 sampled (the
    // first of each group), 6 optimizer steps, the module calls of the first step under the
    // global hooks; and the per-call costs its timing cannot see, measured at exit.
    let cost = &p["observer_cost"];
    let site = |name: &str| {
        cost["sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["site"] == name)
            .unwrap_or_else(|| panic!("no observer site {name}: {cost}"))
    };
    assert_eq!(site("attention")["calls"], 4, "{cost}");
    assert_eq!(site("attention_sampled")["calls"], 3, "{cost}");
    assert_eq!(site("step")["calls"], 6, "{cost}");
    assert_eq!(site("forward_pre_hook")["calls"], 2, "{cost}");
    // Each is a difference of two timings clamped at 0: on a loaded machine the noise can take
    // it to 0, so only its presence and sign are certain.
    for untimed in ["attention_call_us", "module_call_us"] {
        let us = cost["untimed"][untimed].as_f64();
        assert!(us.is_some_and(|us| us >= 0.0 && us.is_finite()), "{cost}");
    }
    let steady = cost["steady_ms"].as_f64().unwrap();
    let sampled = cost["sampled_ms"].as_f64().unwrap();
    assert!(steady > 0.0 && sampled > 0.0, "{cost}");
    let per_step = report["summary"]["observer_ms_per_step"].as_f64().unwrap();
    assert!(
        (per_step - steady / 6.0).abs() < 1e-9,
        "{}",
        report["summary"]
    );
    assert!(
        report["summary"]["observer_share_of_step"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("of its own per step ("),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 3 of 7 ran math on the CPU: a note, with its share.
    let f = &report["findings"][0];
    assert_eq!(f["code"], "RUN001");
    assert_eq!(f["severity"], "info");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .starts_with("43% of attention calls ran math"),
        "{f}"
    );
    assert!(
        f["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e
                == "torch: flash refused: Both fused kernels do not support non-zero dropout."),
        "{f}"
    );
    let shares = report["summary"]["backends"].as_array().unwrap();
    assert_eq!(shares[0]["backend"], "FLASH_ATTENTION");
    assert_eq!(shares[0]["calls"], 4);
    // Against a baseline whose every call was fused: regressed, by the math share.
    let cmp = &report["comparison"];
    assert_eq!(cmp["verdict"], "regressed", "{cmp}");
    assert!(
        cmp["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "attention on math 0% -> 43%"),
        "{cmp}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("REGRESSED"));
}

#[test]
fn compile_graph_breaks_and_recompilations_are_reported() {
    let Some(py) = torch_python("compile_graph_breaks_and_recompilations_are_reported") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.json");
    let (out, report) = observed(dir.path(), &[&py, &program("compile_cpu.py")], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::copy(dir.path().join("run.json"), &first).unwrap();
    let c = &report["facts"]["processes"][0]["compile"];
    assert_eq!(c["requests"][0]["backend"], "inductor");
    // Exactly the print's break: the observer's attention wrapper adds none.
    let breaks = c["graph_breaks"].as_array().unwrap();
    assert_eq!(breaks.len(), 1, "{breaks:?}");
    assert_eq!(breaks[0]["count"], 1);
    assert!(
        breaks[0]["reason"].as_str().unwrap().contains("print"),
        "{breaks:?}"
    );
    assert!(c["recompilations"].as_u64().unwrap() >= 1, "{c}");
    assert!(
        c["recompile_reasons"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("size"),
        "{c}"
    );
    assert!(c["generated_kernels"].as_u64().unwrap() > 0, "{c}");
    let found = codes(&report);
    assert!(found.contains(&"RUN002"), "{found:?}");
    assert!(found.contains(&"RUN003"), "{found:?}");
    // Asked for a backend that generates nothing: said so.
    let eager = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "RUN004")
        .expect("RUN004");
    assert!(
        eager["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().contains("1× backend=eager")),
        "{eager}"
    );
}

#[test]
fn a_program_compiled_before_its_first_step_keeps_the_observers_hooks_and_is_not_recompiled() {
    let Some(py) = torch_python(
        "a_program_compiled_before_its_first_step_keeps_the_observers_hooks_and_is_not_recompiled",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = observed(dir.path(), &[&py, &program("compile_train_cpu.py")], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // (after the program's own "a graph break" prints)
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with("trained, 2 global forward hooks\n"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let p = &report["facts"]["processes"][0];
    assert!(p.get("errors").is_none(), "{}", p["errors"]);
    assert_eq!(p["steps"]["source"], "optimizer");
    assert_eq!(p["steps"]["count"], 3);
    assert_eq!(p["compile"]["recompilations"], 0, "{}", p["compile"]);
}
