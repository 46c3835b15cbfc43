//! The driver probe end to end: the real binary asks stand-ins of the driver's libraries
//! (tests/fixtures/fake-driver, answering as the captured 2×H200 machine), loaded by the real
//! dynamic loader through LD_LIBRARY_PATH, in its child process and in its own process, and
//! reports a hung or crashing driver instead of hanging or crashing itself.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use cudoctor_testkit::skip_missing_tool;
use serde_json::Value;

mod support;
use support::findings;

/// Builds libnvidia-ml.so.1 and libcuda.so.1 from the fixture's C files into a temp dir.
fn fake_driver(test: &str) -> Option<tempfile::TempDir> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-driver");
    let dir = tempfile::tempdir().unwrap();
    for (source, library) in [("nvml.c", "libnvidia-ml.so.1"), ("cuda.c", "libcuda.so.1")] {
        let built = Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(dir.path().join(library))
            .arg(fixtures.join(source))
            .status();
        match built {
            Ok(s) if s.success() => {}
            Ok(s) => panic!("cc {source}: {s}"),
            Err(e) => {
                skip_missing_tool(test, &format!("no C compiler (cc: {e})"));
                return None;
            }
        }
    }
    Some(dir)
}

struct Checked {
    report: Value,
    code: Option<i32>,
    took: Duration,
}

/// `cudoctor check --format json` with the fake driver first on the library path.
fn check(libs: &Path, nvml_mode: &str, in_this_process: bool, timeout_s: &str) -> Checked {
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args(["check", "--format", "json", "--timeout", timeout_s])
        .env("LD_LIBRARY_PATH", libs)
        .env("CUDOCTOR_TEST_NVML", nvml_mode)
        .env_remove("CUDOCTOR_DRIVER_PROBE");
    if in_this_process {
        cmd.env("CUDOCTOR_DRIVER_PROBE", "this-process");
    }
    let started = Instant::now();
    let out = cmd.output().expect("run cudoctor");
    let took = started.elapsed();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}); status {:?}, stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Checked {
        report,
        code: out.status.code(),
        took,
    }
}

fn attempt<'a>(report: &'a Value, source: &str) -> &'a Value {
    report["snapshot"]["driver"]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["source"] == source)
        .unwrap_or_else(|| panic!("no {source} attempt in {}", report["snapshot"]["driver"]))
}

fn libs(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().to_path_buf()
}

#[test]
fn the_child_reads_the_driver_exactly_as_the_process_itself() {
    let Some(dir) = fake_driver("the_child_reads_the_driver_exactly_as_the_process_itself") else {
        return;
    };
    let child = check(&libs(&dir), "h200x2", false, "10");
    let here = check(&libs(&dir), "h200x2", true, "10");
    let s = &child.report["snapshot"];
    assert_eq!(s["driver"], here.report["snapshot"]["driver"]);
    assert_eq!(
        s["multigpu"]["topology"],
        here.report["snapshot"]["multigpu"]["topology"]
    );
    assert_eq!(
        s["multigpu"]["attempts"],
        here.report["snapshot"]["multigpu"]["attempts"]
    );
    // The captured machine's facts, through the real loader and the pipe.
    assert_eq!(s["driver"]["version"]["value"], "580.159.04");
    assert_eq!(s["driver"]["version"]["source"], "nvml");
    assert_eq!(s["driver"]["max_cuda"]["value"], "13.0");
    let gpus = s["driver"]["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[1]["uuid"], "GPU-59ceb5ce-cb0b-54f6-2d8a-5fed0e2d6f77");
    assert_eq!(gpus[1]["bus_id"], "00000000:00:07.0");
    assert_eq!(gpus[0]["compute_capability"], "9.0");
    assert_eq!(gpus[0]["memory_total_mib"], 143771);
    let pairs = s["multigpu"]["topology"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0]["nvlinks"], 18);
    assert!(s["driver"].get("libraries_failed").is_none());
    assert!(findings(&child.report, "DRV007").is_empty());
    assert_eq!(attempt(&child.report, "nvidia-smi")["outcome"], "skipped");
}

#[test]
fn a_hung_driver_is_reported_within_the_time_limit() {
    let Some(dir) = fake_driver("a_hung_driver_is_reported_within_the_time_limit") else {
        return;
    };
    for in_this_process in [false, true] {
        let run = check(&libs(&dir), "hang", in_this_process, "1");
        assert!(
            run.took < Duration::from_secs(6),
            "took {:?} (in this process: {in_this_process})",
            run.took
        );
        let r = &run.report;
        assert_eq!(attempt(r, "nvml")["outcome"], "timed_out");
        assert_eq!(attempt(r, "libcuda")["outcome"], "ok", "asked before NVML");
        assert_eq!(attempt(r, "nvidia-smi")["outcome"], "skipped");
        let drv007 = findings(r, "DRV007");
        assert_eq!(drv007.len(), 1, "{}", r["findings"]);
        assert_eq!(
            drv007[0]["title"],
            "The NVIDIA driver does not answer: NVML hung for 1 s"
        );
        assert!(findings(r, "DRV001").is_empty(), "unknown is not absent");
        assert_eq!(run.code, Some(1));
    }
}

#[test]
fn a_crashing_driver_library_is_a_finding_not_a_crash() {
    let Some(dir) = fake_driver("a_crashing_driver_library_is_a_finding_not_a_crash") else {
        return;
    };
    let run = check(&libs(&dir), "crash", false, "10");
    let r = &run.report;
    let nvml = attempt(r, "nvml");
    assert_eq!(nvml["outcome"], "failed");
    assert!(
        nvml["detail"]
            .as_str()
            .unwrap()
            .contains("signal 11 (SIGSEGV)"),
        "{nvml}"
    );
    assert_eq!(
        r["snapshot"]["driver"]["libraries_failed"],
        serde_json::json!({"library": "nvml", "how": {"kind": "crashed", "signal": 11}})
    );
    let drv007 = findings(r, "DRV007");
    assert_eq!(drv007.len(), 1, "{}", r["findings"]);
    assert!(drv007[0]["title"]
        .as_str()
        .unwrap()
        .contains("crashed (SIGSEGV)"));
    assert_eq!(run.code, Some(1));
}

#[test]
fn nvmls_error_code_crosses_from_the_child() {
    let Some(dir) = fake_driver("nvmls_error_code_crosses_from_the_child") else {
        return;
    };
    let run = check(&libs(&dir), "mismatch", false, "10");
    let drv003 = findings(&run.report, "DRV003");
    assert_eq!(drv003.len(), 1, "{}", run.report["findings"]);
    assert!(drv003[0]["evidence"][0]
        .as_str()
        .unwrap()
        .contains("NVML_ERROR_LIB_RM_VERSION_MISMATCH"));
    assert!(findings(&run.report, "DRV007").is_empty());
}
