//! `check --deep` runs its probe processes at once: torch's probe and its compile test (and each
//! other framework's probe) in parallel child processes, each with its own budget. With a real
//! torch (the CPU build CI uses: scripts/ci/run-observer-test.sh --env), the probes' own times
//! must add up to more than the whole deep collection's wall time: they overlapped. A ratio, not
//! an absolute time, so a slow or loaded machine judges the same.

use serde_json::Value;

use cudoctor_testkit::torch_python;

#[test]
fn the_deep_probes_overlap_and_each_reports_its_time() {
    let Some(py) = torch_python("the_deep_probes_overlap_and_each_reports_its_time") else {
        return;
    };
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args([
            "check",
            "--deep",
            "--deep-timeout",
            "300",
            "--format",
            "json",
            "--python",
        ])
        .arg(&py)
        .output()
        .expect("cudoctor runs");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let deep = &report["snapshot"]["deep"];
    let run = deep["runs"]
        .as_array()
        .and_then(|r| r.first())
        .unwrap_or_else(|| panic!("no probe run: {deep}"));
    assert_eq!(run["status"], "ok", "{run}");
    // Each probe process's own time, in the report.
    let main = run["elapsed_s"].as_f64().expect("the torch probe's time");
    let compile = run["compile_elapsed_s"]
        .as_f64()
        .expect("the compile test's own process and its time");
    let frameworks: f64 = deep["frameworks"]
        .as_array()
        .map(|f| f.iter().filter_map(|p| p["elapsed_s"].as_f64()).sum())
        .unwrap_or(0.0);
    let wall = deep["wall_s"].as_f64().expect("the probes' wall time");
    let sum = main + compile + frameworks;
    // One after another, the sum could not exceed the wall time; at once, it does (two processes
    // that each import torch: about twice on an idle machine).
    assert!(
        sum > 1.2 * wall,
        "the probes did not overlap: {main:.2} s + {compile:.2} s + {frameworks:.2} s against {wall:.2} s wall"
    );
    // The compile test ran in its own process and came back into the run.
    let result = &run["result"];
    assert!(result["compile"].is_object(), "{result}");
    assert!(
        result["stages"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["name"] == "compile")),
        "{result}"
    );
    // Every stage of the torch probe once: the compile process's own import is not repeated.
    let imports = result["stages"]
        .as_array()
        .map(|s| s.iter().filter(|s| s["name"] == "import torch").count());
    assert_eq!(imports, Some(1), "{result}");
    // The text gives the times too.
    let dir = tempfile::tempdir().expect("temp dir");
    let saved = dir.path().join("report.json");
    std::fs::write(&saved, &out.stdout).expect("report written");
    let text = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--snapshot"])
        .arg(&saved)
        .env("NO_COLOR", "1")
        .output()
        .expect("cudoctor check --snapshot");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("processes at once:"), "{text}");
}
