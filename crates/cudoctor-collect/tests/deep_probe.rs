//! The runtime probe: parsing of recorded output, classification of how a run ended, and the
//! real probe script run in this machine's Python (with no torch, and with a stand-in torch that
//! imitates a GPU build so every stage's code runs).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cudoctor_collect::deep::parse::{classify, Ending, ProbeOutput};
use cudoctor_collect::deep::{run_probe, DeepOptions};
use cudoctor_snapshot::{ProbeRun, ProbeStage, ProbeStatus, SdpaBackend};

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/deep_fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn classify_fixture(name: &str, ending: Ending) -> ProbeRun {
    classify(
        "/opt/torch/.venv/bin/python3",
        Some("/opt/torch/.venv"),
        ending,
        ProbeOutput::from_stdout(&fixture(name)),
        "",
        1.0,
    )
}

#[test]
fn the_h200_report_parses_with_its_real_numbers() {
    let run = classify_fixture("h200x2_ok.out", Ending::Exited(0));
    assert_eq!(run.status, ProbeStatus::Ok, "{}", run.detail);
    let r = run.result.expect("a report");
    assert!(r.complete);
    let torch = r.torch.expect("torch");
    assert_eq!(torch.version, "2.11.0+cu130");
    assert_eq!(torch.nccl.as_deref(), Some("2.28.9"));
    assert_eq!(torch.cudnn, Some(91900));
    assert_eq!(r.devices.len(), 2);
    assert_eq!(r.devices[1].capability.as_deref(), Some("9.0"));
    let sdpa = r.sdpa.expect("sdpa");
    let default = sdpa.default.clone().expect("default");
    assert_eq!(default.picked, Some(SdpaBackend::CudnnAttention));
    let math = sdpa.backend(SdpaBackend::Math).expect("math");
    let at16k = math.run_at(16384).expect("16k");
    assert_eq!(at16k.ms, Some(100.489));
    assert_eq!(at16k.peak_mib, Some(38400.3));
    assert_eq!(sdpa.working_fused().len(), 3);
    let ar = r.all_reduce.expect("all-reduce");
    assert_eq!(ar.world, 2);
    assert_eq!(ar.largest().and_then(|x| x.busbw_gbps), Some(327.1));
}

#[test]
fn a_forced_fallback_shows_math_despite_library_noise() {
    let run = classify_fixture("h200x2_forced_fallback.out", Ending::Exited(0));
    assert_eq!(run.status, ProbeStatus::Ok);
    let sdpa = run.result.and_then(|r| r.sdpa).expect("sdpa");
    assert!(sdpa.forced_fallback);
    assert_eq!(
        sdpa.default.clone().and_then(|d| d.picked),
        Some(SdpaBackend::Math)
    );
}

#[test]
fn a_hang_keeps_the_partial_report_and_names_the_stage() {
    let run = classify_fixture(
        "h200x2_hang_in_all_reduce.out",
        Ending::TimedOut { after_s: 120.0 },
    );
    assert_eq!(run.status, ProbeStatus::TimedOut);
    assert_eq!(run.last_stage, Some(ProbeStage::AllReduce));
    assert!(run.detail.contains("all-reduce"), "{}", run.detail);
    let r = run.result.expect("partial report");
    assert!(!r.complete);
    assert!(r.sdpa.is_some(), "stages before the hang are kept");
}

#[test]
fn a_crash_on_import_is_a_crash_with_its_signal() {
    let run = classify_fixture("crash_in_import.out", Ending::Signalled(11));
    assert_eq!(run.status, ProbeStatus::Crashed);
    assert_eq!(run.signal, Some(11));
    assert_eq!(run.last_stage, Some(ProbeStage::ImportTorch));
}

#[test]
fn an_import_error_keeps_the_text_for_the_explain_engine() {
    let run = classify_fixture("import_failed.out", Ending::Exited(0));
    assert_eq!(run.status, ProbeStatus::ImportFailed);
    assert_eq!(
        run.detail,
        "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    );
}

#[test]
fn no_torch_and_cpu_torch_are_told_apart() {
    let run = classify_fixture("no_torch.out", Ending::Exited(0));
    assert_eq!(run.status, ProbeStatus::NoTorch);
    let run = classify_fixture("cpu_torch.out", Ending::Exited(0));
    assert_eq!(run.status, ProbeStatus::Ok);
    let cuda = run.result.and_then(|r| r.cuda).expect("cuda");
    assert!(!cuda.available);
    assert!(cuda
        .unavailable_reason
        .unwrap_or_default()
        .contains("no CUDA support"));
}

// -- the real script, in real interpreters ---------------------------------------------------------

fn python3() -> Option<String> {
    let ok = Command::new("python3")
        .arg("-c")
        .arg("import sys; print(sys.executable)")
        .output()
        .ok()?;
    ok.status
        .success()
        .then(|| String::from_utf8_lossy(&ok.stdout).trim().to_string())
}

fn quick() -> DeepOptions {
    DeepOptions {
        timeout: Duration::from_secs(60),
        seq_lens: Some(vec![1024, 4096]),
        sizes_mib: Some(vec![1, 64]),
        ..Default::default()
    }
}

#[test]
fn the_probe_reports_cleanly_in_this_machines_python() {
    let Some(py) = python3() else {
        cudoctor_testkit::skip_missing_tool(
            "the_probe_reports_cleanly_in_this_machines_python",
            "no python3 (with venv) here",
        );
        return;
    };
    let run = run_probe(&py, None, &quick());
    let has_torch = Command::new(&py)
        .args(["-I", "-c", "import torch"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if has_torch {
        // CI has no GPU: torch must import, and the probe must say there is no GPU.
        assert_eq!(run.status, ProbeStatus::Ok, "{run:?}");
        let r = run.result.expect("report");
        assert!(r.complete);
        assert!(!r.cuda.expect("cuda").available);
        assert!(r
            .stages
            .iter()
            .any(|s| s.name == "sdpa" && s.skipped.as_deref() == Some("no GPU")));
    } else {
        assert_eq!(run.status, ProbeStatus::NoTorch, "{run:?}");
        let r = run.result.expect("report");
        assert!(r.complete);
        assert!(r.errors.is_empty(), "{:?}", r.errors);
    }
}

/// A throw-away venv holding the stand-in torch. `python -I` still sees a venv's own
/// site-packages, so the probe and its NCCL workers import the stand-in.
struct FakeTorchEnv {
    _dir: tempfile::TempDir,
    python: String,
}

fn fake_torch_env() -> Option<FakeTorchEnv> {
    let py = python3()?;
    let dir = tempfile::tempdir().ok()?;
    let venv = dir.path().join("venv");
    let made = Command::new(&py)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .ok()?;
    assert!(made.success(), "python3 -m venv failed");
    let site = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .ok()?;
    let site = PathBuf::from(String::from_utf8_lossy(&site.stdout).trim());
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/deep_fixtures/fake_torch");
    for pkg in ["torch", "triton"] {
        std::fs::create_dir_all(site.join(pkg)).ok()?;
        std::fs::copy(
            src.join(pkg).join("__init__.py"),
            site.join(pkg).join("__init__.py"),
        )
        .ok()?;
    }
    Some(FakeTorchEnv {
        python: venv.join("bin/python").to_string_lossy().into_owned(),
        _dir: dir,
    })
}

fn with_env(mut o: DeepOptions, vars: &[(&str, &str)]) -> DeepOptions {
    o.extra_env = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    o
}

#[test]
fn every_stage_runs_against_a_gpu_build() {
    let Some(env) = fake_torch_env() else {
        cudoctor_testkit::skip_missing_tool(
            "every_stage_runs_against_a_gpu_build",
            "no python3 (with venv) here",
        );
        return;
    };
    let run = run_probe(
        &env.python,
        None,
        &with_env(quick(), &[("FAKE_TORCH_GPUS", "2")]),
    );
    assert_eq!(run.status, ProbeStatus::Ok, "{run:?}");
    let r = run.result.expect("report");
    assert!(r.errors.is_empty(), "stage errors: {:?}", r.errors);
    assert_eq!(r.devices.len(), 2);
    assert_eq!(r.devices[0].matmul_ok, Some(true));
    let sdpa = r.sdpa.expect("sdpa");
    assert_eq!(sdpa.backends.len(), 4);
    assert!(sdpa.backends.iter().all(|b| b.available));
    let default = sdpa.default.clone().expect("default");
    assert_eq!(default.picked, Some(SdpaBackend::CudnnAttention));
    assert_eq!(default.runs.len(), 2);
    let compile = r.compile.expect("compile");
    assert!(compile.ok, "{compile:?}");
    assert_eq!(compile.triton_kernels_ran, Some(1));
    let ar = r.all_reduce.expect("all-reduce");
    assert_eq!(ar.error, None);
    assert_eq!(ar.world, 2);
    assert_eq!(ar.results.len(), 2);
    assert_eq!(ar.nccl_version.as_deref(), Some("2.28.9"));
}

#[test]
fn forced_fallback_and_broken_pieces_are_reported() {
    let Some(env) = fake_torch_env() else {
        cudoctor_testkit::skip_missing_tool(
            "forced_fallback_and_broken_pieces_are_reported",
            "no python3 (with venv) here",
        );
        return;
    };
    let mut o = with_env(
        quick(),
        &[
            ("FAKE_TORCH_GPUS", "2"),
            ("FAKE_TORCH_NO_FLASH", "1"),
            ("FAKE_TORCH_NO_TRITON", "1"),
            ("FAKE_TORCH_NCCL_FAIL", "1"),
        ],
    );
    o.disable_fused = true;
    let run = run_probe(&env.python, None, &o);
    assert_eq!(run.status, ProbeStatus::Ok, "{run:?}");
    let r = run.result.expect("report");
    let sdpa = r.sdpa.expect("sdpa");
    assert!(sdpa.forced_fallback);
    assert_eq!(
        sdpa.default.clone().and_then(|d| d.picked),
        Some(SdpaBackend::Math)
    );
    let flash = sdpa.backend(SdpaBackend::FlashAttention).expect("flash");
    assert!(!flash.available);
    assert!(flash
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("Flash attention kernel not used because"));
    let compile = r.compile.expect("compile");
    assert!(!compile.ok);
    assert!(compile.fallback_reason.is_some());
    let ar = r.all_reduce.expect("all-reduce");
    assert!(ar.error.unwrap_or_default().contains("NCCL error"));
}

#[test]
fn a_cpu_build_reports_no_gpu() {
    let Some(env) = fake_torch_env() else {
        cudoctor_testkit::skip_missing_tool(
            "a_cpu_build_reports_no_gpu",
            "no python3 (with venv) here",
        );
        return;
    };
    let run = run_probe(
        &env.python,
        None,
        &with_env(quick(), &[("FAKE_TORCH_GPUS", "0")]),
    );
    assert_eq!(run.status, ProbeStatus::Ok, "{run:?}");
    let r = run.result.expect("report");
    assert!(!r.cuda.expect("cuda").available);
    assert!(r.sdpa.is_none());
    assert_eq!(
        r.all_reduce.and_then(|a| a.skipped).as_deref(),
        Some("no GPU")
    );
}

#[test]
fn a_native_abort_mid_probe_is_a_crash_in_that_stage() {
    let Some(env) = fake_torch_env() else {
        cudoctor_testkit::skip_missing_tool(
            "a_native_abort_mid_probe_is_a_crash_in_that_stage",
            "no python3 (with venv) here",
        );
        return;
    };
    let run = run_probe(
        &env.python,
        None,
        &with_env(
            quick(),
            &[("FAKE_TORCH_GPUS", "1"), ("FAKE_TORCH_CRASH_AT", "sdpa")],
        ),
    );
    assert_eq!(run.status, ProbeStatus::Crashed, "{run:?}");
    assert_eq!(run.signal, Some(6));
    assert_eq!(run.last_stage, Some(ProbeStage::Sdpa));
    assert!(run.result.is_some_and(|r| r.devices.len() == 1));
}

// -- interpreters that misbehave ---------------------------------------------------------------------

fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn a_hung_interpreter_is_killed_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let py = script(
        dir.path(),
        "python",
        "echo '@@cudoctor-probe@@ {\"event\":\"stage\",\"name\":\"import torch\"}'; exec sleep 30",
    );
    let o = DeepOptions {
        timeout: Duration::from_millis(800),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let run = run_probe(&py, None, &o);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(run.status, ProbeStatus::TimedOut, "{run:?}");
    assert_eq!(run.last_stage, Some(ProbeStage::ImportTorch));
}

#[test]
fn missing_and_failing_interpreters() {
    let run = run_probe("/nonexistent/bin/python", None, &quick());
    assert_eq!(run.status, ProbeStatus::NotStarted);
    let dir = tempfile::tempdir().unwrap();
    let py = script(
        dir.path(),
        "python",
        "echo 'Fatal Python error: init_fs_encoding' >&2; exit 3",
    );
    let run = run_probe(&py, None, &quick());
    assert_eq!(run.status, ProbeStatus::Crashed);
    assert_eq!(run.exit_code, Some(3));
    assert!(run.detail.contains("init_fs_encoding"), "{}", run.detail);
}

#[test]
fn progress_reports_each_stage() {
    use std::sync::{Arc, Mutex};
    let Some(py) = python3() else {
        cudoctor_testkit::skip_missing_tool(
            "progress_reports_each_stage",
            "no python3 (with venv) here",
        );
        return;
    };
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&seen);
    let mut o = quick();
    o.progress = Some(Arc::new(move |p| {
        if let Ok(mut v) = sink.lock() {
            v.push(p.stage.to_string());
        }
    }));
    run_probe(&py, None, &o);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.first().map(String::as_str), Some("python"));
    assert!(seen.iter().any(|s| s == "import torch"));
}

#[test]
fn a_compiler_abort_in_its_own_process_is_the_runs_crash_in_the_compile_stage() {
    let Some(env) = fake_torch_env() else {
        cudoctor_testkit::skip_missing_tool(
            "a_compiler_abort_in_its_own_process_is_the_runs_crash_in_the_compile_stage",
            "no python3 (with venv) here",
        );
        return;
    };
    let run = run_probe(
        &env.python,
        None,
        &with_env(
            quick(),
            &[("FAKE_TORCH_GPUS", "1"), ("FAKE_TORCH_CRASH_AT", "compile")],
        ),
    );
    // As when the compile test ran last in the one process: a crash in that stage, with
    // everything the other stages found.
    assert_eq!(run.status, ProbeStatus::Crashed, "{run:?}");
    assert_eq!(run.signal, Some(6));
    assert_eq!(run.last_stage, Some(ProbeStage::Compile));
    assert!(run.compile_elapsed_s.is_some());
    let r = run.result.expect("report");
    assert_eq!(r.devices.len(), 1);
    assert!(r.sdpa.is_some());
}
