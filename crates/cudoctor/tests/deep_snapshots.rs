//! The acceleration (ACC*) and multi-GPU (MGPU*) rules end to end. The runtime probe needs a
//! GPU, so these go through `cudoctor check --snapshot`: the whole JSON report of the real
//! 2xH200 machine's `--deep` run (docs/device-runs), with its probe run replaced by one built
//! from the recorded probe outputs (crates/cudoctor-collect/tests/deep_fixtures) the way the
//! collector builds it, and edited where a case needs another fact.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{json, Value};

const TAG: &str = "@@cudoctor-probe@@";
const ENV: &str = "/opt/torch/.venv";
const PYTHON: &str = "/opt/torch/.venv/bin/python3";

fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// The real machine's `check --deep --format json` report (read once).
fn baseline() -> Value {
    static BASELINE: OnceLock<Value> = OnceLock::new();
    BASELINE
        .get_or_init(|| {
            let path = repo_file("docs/device-runs/2026-11-30-h200x2/deep/baseline.json");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            serde_json::from_str(&text).expect("baseline report is JSON")
        })
        .clone()
}

/// The last stage started and the last report of a recorded probe output, read as the
/// collector reads it (tagged lines only; other output ignored).
fn probe_output(fixture: &str) -> (Option<String>, Option<Value>) {
    let path = repo_file(&format!(
        "crates/cudoctor-collect/tests/deep_fixtures/{fixture}.out"
    ));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut stage = None;
    let mut result = None;
    for line in text.lines() {
        let Some(at) = line.find(TAG) else { continue };
        let event: Value = serde_json::from_str(line[at + TAG.len()..].trim())
            .unwrap_or_else(|e| panic!("{fixture}: damaged probe line ({e}): {line}"));
        match event["event"].as_str() {
            Some("stage") => stage = event["name"].as_str().map(str::to_string),
            Some("result") => result = Some(event["data"].clone()),
            _ => {}
        }
    }
    (stage, result)
}

/// How the child process ended, as the collector records it.
enum Ending {
    Ok,
    Signal(i32, &'static str),
    TimedOut(u32),
    ImportFailed,
}

/// A probe run as `cudoctor check --deep` records it for `fixture`.
fn run_of(fixture: &str, ending: Ending) -> Value {
    let (stage, result) = probe_output(fixture);
    let mut run = json!({
        "interpreter": PYTHON,
        "env_prefix": ENV,
        "elapsed_s": 20.5,
    });
    if let Some(s) = &stage {
        run["last_stage"] = json!(s);
    }
    let during = stage
        .as_deref()
        .map(|s| format!(" during stage \"{s}\""))
        .unwrap_or_default();
    match ending {
        Ending::Ok => {
            run["status"] = json!("ok");
            run["exit_code"] = json!(0);
        }
        Ending::Signal(sig, name) => {
            run["status"] = json!("crashed");
            run["signal"] = json!(sig);
            run["detail"] = json!(format!("killed by signal {sig} ({name}){during}"));
            run["stderr_tail"] = json!("Fatal Python error: Segmentation fault");
        }
        Ending::TimedOut(after) => {
            run["status"] = json!("timed_out");
            run["detail"] = json!(format!("no answer in {after} s; stopped{during}"));
        }
        Ending::ImportFailed => {
            let err = &result.as_ref().expect("a report")["torch_import_error"];
            run["status"] = json!("import_failed");
            run["exit_code"] = json!(0);
            run["detail"] = json!(format!(
                "{}: {}",
                err["kind"].as_str().unwrap(),
                err["message"].as_str().unwrap()
            ));
        }
    }
    if let Some(r) = result {
        run["result"] = r;
    }
    run
}

/// The real machine's report with `run` as its only probe run.
fn report_with(run: Value) -> Value {
    let mut report = baseline();
    report["snapshot"]["deep"]["runs"] = json!([run]);
    report
}

struct Checked {
    code: i32,
    report: Value,
}

impl Checked {
    fn all(&self, code: &str) -> Vec<&Value> {
        self.report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["code"] == code)
            .collect()
    }

    /// The one finding with `code`.
    fn one(&self, code: &str) -> &Value {
        let found = self.all(code);
        assert_eq!(
            found.len(),
            1,
            "expected one {code}: {:#}",
            self.report["findings"]
        );
        found[0]
    }

    fn none(&self, code: &str) {
        assert!(
            self.all(code).is_empty(),
            "unexpected {code}: {:#}",
            self.report["findings"]
        );
    }
}

/// Writes `report` to a temp file and runs `cudoctor check --snapshot FILE --format FORMAT`.
fn run_check(report: &Value, format: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    std::fs::write(&path, serde_json::to_vec(report).unwrap()).unwrap();
    cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--format", format, "--snapshot"])
        .arg(&path)
        .env("NO_COLOR", "1")
        .output()
        .expect("run cudoctor")
}

/// `cudoctor check --snapshot` on `report`, as JSON.
fn check(report: &Value) -> Checked {
    let out = run_check(report, "json");
    let parsed: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Checked {
        code: out.status.code().unwrap_or(-1),
        report: parsed,
    }
}

/// The text report of `report`, and its exit code.
fn check_text(report: &Value) -> (String, i32) {
    let out = run_check(report, "text");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn evidence(f: &Value) -> String {
    f["evidence"].to_string()
}

fn fixes(f: &Value) -> String {
    f["fix"].to_string()
}

// ACC010 (compile/AMP floors, no probe needed) and MGPU010-MGPU014 (multi-node readiness) are exercised in
// the rule tests, in seeds_netns.rs and seeds_rules.rs;
// here they must stay silent on the healthy runs.
const DEEP_CODES: [&str; 20] = [
    "ACC001", "ACC002", "ACC003", "ACC004", "ACC005", "ACC006", "ACC007", "ACC010", "ACC011",
    "MGPU001", "MGPU002", "MGPU003", "MGPU004", "MGPU005", "MGPU006", "MGPU010", "MGPU011",
    "MGPU012", "MGPU013", "MGPU014",
];

#[test]
fn the_real_deep_run_and_the_recorded_healthy_probe_are_clean() {
    let c = check(&baseline());
    assert_eq!(c.code, 0, "{:#}", c.report["findings"]);
    for code in DEEP_CODES {
        c.none(code);
    }
    let (text, code) = check_text(&baseline());
    assert_eq!(code, 0);
    assert!(text.contains("attention      default runs cuDNN"), "{text}");
    assert!(text.contains("1024 MiB 330.9 GB/s"), "{text}");

    let c = check(&report_with(run_of("h200x2_ok", Ending::Ok)));
    assert_eq!(c.code, 0, "{:#}", c.report["findings"]);
    for code in DEEP_CODES {
        c.none(code);
    }
    // The report keeps the run it was given.
    assert_eq!(c.report["snapshot"]["deep"]["runs"][0]["status"], "ok");
}

#[test]
fn acc001_forced_fallback_to_math_is_caught_and_explained() {
    let c = check(&report_with(run_of("h200x2_forced_fallback", Ending::Ok)));
    let f = c.one("ACC001");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["layer"], "acceleration");
    assert_eq!(
        f["title"],
        "attention falls back to the math kernel in torch 2.11.0+cu130 in /opt/torch/.venv although flash, mem-efficient, cuDNN work"
    );
    let ev = evidence(f);
    assert!(
        ev.contains("forced one at a time, these ran: flash, mem-efficient, cuDNN"),
        "{ev}"
    );
    // Math at 16k tokens against the fastest fused backend measured there (cuDNN, 1.71 ms).
    assert!(ev.contains("cost at 16384 tokens: math"), "{ev}");
    assert!(ev.contains("cuDNN 1.7 ms"), "{ev}");
    assert!(
        f["cause"]
            .as_str()
            .unwrap()
            .contains("The probe itself switched the fused backends off"),
        "{f:#}"
    );
    assert!(fixes(f).contains("CUDOCTOR_PROBE_DISABLE_FUSED"), "{f:#}");
    assert_eq!(c.code, 1);
    let (text, code) = check_text(&report_with(run_of("h200x2_forced_fallback", Ending::Ok)));
    assert_eq!(code, 1);
    assert!(text.contains("error[ACC001]"), "{text}");
}

#[test]
fn acc001_backends_switched_off_at_start_up() {
    let mut run = run_of("h200x2_forced_fallback", Ending::Ok);
    run["result"]["sdpa"]["forced_fallback"] = json!(false);
    run["result"]["settings"]["flash_sdp_enabled"] = json!(false);
    run["result"]["settings"]["cudnn_sdp_enabled"] = json!(false);
    let c = check(&report_with(run));
    let f = c.one("ACC001");
    let ev = evidence(f);
    assert!(
        ev.contains("switched off when the process starts: torch.backends.cuda.enable_flash_sdp, torch.backends.cuda.enable_cudnn_sdp"),
        "{ev}"
    );
    assert!(fixes(f).contains("grep -rn"), "{f:#}");
    assert!(fixes(f).contains(ENV), "{f:#}");

    // Nothing switched off: torch's own dispatch chose math.
    let mut run = run_of("h200x2_forced_fallback", Ending::Ok);
    run["result"]["sdpa"]["forced_fallback"] = json!(false);
    let c = check(&report_with(run));
    let f = c.one("ACC001");
    assert!(
        f["cause"]
            .as_str()
            .unwrap()
            .contains("dispatcher chose the math kernel"),
        "{f:#}"
    );
}

#[test]
fn acc001_is_silent_when_no_fused_backend_works() {
    let mut run = run_of("h200x2_forced_fallback", Ending::Ok);
    for b in run["result"]["sdpa"]["backends"].as_array_mut().unwrap() {
        if b["backend"] != "MATH" {
            b["available"] = json!(false);
            b["error"] = json!("No available kernel. Aborting execution.");
            b["runs"] = json!([]);
        }
    }
    let c = check(&report_with(run));
    // Math is then the only choice: that is ACC002's finding, not a fallback.
    c.none("ACC001");
    let f = c.one("ACC002");
    assert_eq!(f["severity"], "warning");
    assert!(
        f["title"].as_str().unwrap().starts_with(
            "no fused attention backend runs on GPU 0 (NVIDIA H200, compute capability 9.0)"
        ),
        "{f:#}"
    );
}

#[test]
fn acc002_one_fused_backend_refuses_the_gpu() {
    let mut run = run_of("h200x2_ok", Ending::Ok);
    let flash = run["result"]["sdpa"]["backends"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|b| b["backend"] == "FLASH_ATTENTION")
        .unwrap();
    flash["available"] = json!(false);
    flash["runs"] = json!([]);
    flash["error"] = json!(
        "Flash attention only supports gpu architectures in the range [sm80, sm90]\nmore detail"
    );
    let c = check(&report_with(run));
    let f = c.one("ACC002");
    assert_eq!(f["severity"], "info");
    assert_eq!(
        f["title"],
        "flash attention unavailable on GPU 0 (NVIDIA H200, compute capability 9.0); mem-efficient, cuDNN works"
    );
    let ev = evidence(f);
    assert!(
        ev.contains(
            "flash: Flash attention only supports gpu architectures in the range [sm80, sm90]"
        ),
        "{ev}"
    );
    assert!(!ev.contains("more detail"), "only the first line: {ev}");
    assert_eq!(c.code, 0);
}

#[test]
fn acc003_compile_without_triton() {
    let mut run = run_of("h200x2_ok", Ending::Ok);
    run["result"]["compile"] = json!({
        "ok": false,
        "kernels_generated": 0,
        "triton_kernels_ran": 0,
        "fallback_reason": "BackendCompilerFailed: backend='inductor' raised:\nModuleNotFoundError: No module named 'triton'",
        "graph_breaks": []
    });
    let c = check(&report_with(run));
    let f = c.one("ACC003");
    assert_eq!(f["severity"], "warning");
    assert!(
        evidence(f).contains("reason: BackendCompilerFailed: backend='inductor' raised:"),
        "{f:#}"
    );
    assert!(
        fixes(f).contains(
            // The machine's torch came from PyPI: its dist-info says 2.11.0 (version.py
            // 2.11.0+cu130), so the pin that keeps it names no other index.
            "/opt/torch/.venv/bin/python -m pip install torch==2.11.0   # torch is kept"
        ),
        "{f:#}"
    );
    assert!(fixes(f).contains("TORCH_LOGS=+dynamo,+inductor"), "{f:#}");
}

#[test]
fn acc003_wrong_results_are_an_error_and_skips_are_silent() {
    let mut run = run_of("h200x2_ok", Ending::Ok);
    run["result"]["compile"] = json!({
        "ok": false,
        "triton_version": "3.6.0",
        "kernels_generated": 1,
        "triton_kernels_ran": 1,
        "correct": false,
        "fallback_reason": "the compiled result differs from eager",
        "graph_breaks": ["Unsupported: call_function builtin"]
    });
    let c = check(&report_with(run));
    let f = c.one("ACC003");
    assert_eq!(f["severity"], "error");
    let ev = evidence(f);
    assert!(ev.contains("triton 3.6.0"), "{ev}");
    assert!(ev.contains("graph break: Unsupported"), "{ev}");
    assert_eq!(c.code, 1);

    // A CPU-only torch skips the test: nothing to say about compile.
    let c = check(&report_with(run_of("cpu_torch", Ending::Ok)));
    c.none("ACC003");
}

#[test]
fn acc004_cuda_build_without_cuda_at_run_time() {
    let mut run = run_of("h200x2_ok", Ending::Ok);
    let reason = "CUDA driver initialization failed, you might not have a CUDA gpu.";
    run["result"]["cuda"] = json!({
        "available": false,
        "device_count": 0,
        "unavailable_reason": reason,
        "warnings": [],
        "visible_devices": ""
    });
    run["result"]["devices"] = json!([]);
    let mut report = report_with(run);
    report["snapshot"]["env"]["CUDA_VISIBLE_DEVICES"] = json!("");
    let c = check(&report);
    let f = c.one("ACC004");
    assert_eq!(f["severity"], "error");
    assert_eq!(
        f["title"],
        "torch.cuda.is_available() is False in torch 2.11.0+cu130 in /opt/torch/.venv"
    );
    let ev = evidence(f);
    assert!(ev.contains(&format!("torch says: {reason}")), "{ev}");
    assert!(ev.contains("GPUs the driver reports: 2"), "{ev}");
    assert!(ev.contains("CUDA_VISIBLE_DEVICES"), "{ev}");
    assert!(fixes(f).contains("cudoctor explain"), "{f:#}");
    assert!(fixes(f).contains("unset CUDA_VISIBLE_DEVICES"), "{f:#}");
    assert_eq!(c.code, 1);
}

#[test]
fn acc004_not_for_a_cpu_build() {
    let c = check(&report_with(run_of("cpu_torch", Ending::Ok)));
    c.none("ACC004");
    c.none("ACC005");
}

#[test]
fn acc005_import_torch_fails() {
    let c = check(&report_with(run_of("import_failed", Ending::ImportFailed)));
    let f = c.one("ACC005");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["title"], "import torch fails in /opt/torch/.venv");
    assert!(
        evidence(f).contains(
            "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
        ),
        "{f:#}"
    );
    assert!(fixes(f).contains("cudoctor explain"), "{f:#}");
    assert_eq!(c.code, 1);
}

#[test]
fn acc005_crash_while_importing_torch() {
    let c = check(&report_with(run_of(
        "crash_in_import",
        Ending::Signal(11, "SIGSEGV"),
    )));
    let f = c.one("ACC005");
    assert_eq!(
        f["title"],
        "Python crashed during \"import torch\" in /opt/torch/.venv"
    );
    let ev = evidence(f);
    assert!(
        ev.contains("killed by signal 11 (SIGSEGV) during stage \\\"import torch\\\""),
        "{ev}"
    );
    assert!(
        ev.contains("stderr ends: Fatal Python error: Segmentation fault"),
        "{ev}"
    );
    assert!(
        f["cause"]
            .as_str()
            .unwrap()
            .contains("while importing torch"),
        "{f:#}"
    );
    assert!(fixes(f).contains("-X faulthandler"), "{f:#}");
}

#[test]
fn acc005_hang_in_the_all_reduce() {
    let c = check(&report_with(run_of(
        "h200x2_hang_in_all_reduce",
        Ending::TimedOut(120),
    )));
    let f = c.one("ACC005");
    assert_eq!(
        f["title"],
        "the probe hung during \"all-reduce\" in /opt/torch/.venv"
    );
    assert!(evidence(f).contains("no answer in 120 s"), "{f:#}");
    assert!(fixes(f).contains("NCCL_DEBUG=INFO"), "{f:#}");
    assert_eq!(c.code, 1);
}

#[test]
fn acc005_silent_without_torch_and_for_probes_not_run_under_a_root() {
    let mut run = run_of("no_torch", Ending::Ok);
    run["status"] = json!("no_torch");
    run["detail"] = json!("torch is not installed in this environment");
    let c = check(&report_with(run));
    c.none("ACC005");

    let run = json!({
        "interpreter": PYTHON,
        "env_prefix": ENV,
        "status": "not_run_under_root",
        "detail": ""
    });
    let c = check(&report_with(run));
    c.none("ACC005");

    let run = json!({
        "interpreter": PYTHON,
        "env_prefix": ENV,
        "status": "not_started",
        "detail": "/opt/torch/.venv/bin/python3 could not be started: No such file or directory (os error 2)"
    });
    let c = check(&report_with(run));
    assert_eq!(c.one("ACC005")["severity"], "warning");
}

#[test]
fn acc006_a_gpu_fails_or_computes_wrong_numbers() {
    let mut run = run_of("h200x2_ok", Ending::Ok);
    run["result"]["devices"][0]["matmul_ok"] = json!(false);
    run["result"]["devices"][1]["error"] =
        json!("CUDA error: uncorrectable ECC error encountered\nCompile with TORCH_USE_CUDA_DSA");
    let c = check(&report_with(run));
    let found = c.all("ACC006");
    assert_eq!(found.len(), 2, "{:#}", c.report["findings"]);
    let wrong = found
        .iter()
        .find(|f| f["title"].as_str().unwrap().contains("wrong matmul"))
        .expect("wrong matmul finding");
    assert!(
        wrong["title"]
            .as_str()
            .unwrap()
            .starts_with("GPU 0 (NVIDIA H200)"),
        "{wrong:#}"
    );
    assert!(fixes(wrong).contains("ECC"), "{wrong:#}");
    let failing = found
        .iter()
        .find(|f| f["title"].as_str().unwrap().contains("fails in torch"))
        .expect("failing GPU finding");
    assert!(fixes(failing).contains("nvidia-smi -r -i 1"), "{failing:#}");
    assert!(
        evidence(failing).contains("uncorrectable ECC error"),
        "{failing:#}"
    );
    assert_eq!(c.code, 1);
}

#[test]
fn acc007_attention_extensions_that_fail() {
    let mut run = run_of("h200x2_ok", Ending::Ok);
    run["result"]["extensions"] = json!([
        {
            "name": "flash_attn",
            "version": "2.7.4.post1",
            "imported": false,
            "error": "ImportError: /opt/torch/.venv/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"
        },
        {
            "name": "xformers",
            "version": "0.0.30",
            "imported": true,
            "call_ok": false,
            "error": "NotImplementedError: No operator found for `memory_efficient_attention_forward`"
        },
        {"name": "sageattention", "version": "2.2.0", "imported": true, "call_ok": true}
    ]);
    let c = check(&report_with(run));
    let found = c.all("ACC007");
    assert_eq!(found.len(), 2, "{:#}", c.report["findings"]);
    let flash = found
        .iter()
        .find(|f| f["title"].as_str().unwrap().starts_with("flash_attn"))
        .unwrap();
    assert_eq!(
        flash["title"],
        "flash_attn 2.7.4.post1 fails to import in torch 2.11.0+cu130 in /opt/torch/.venv"
    );
    assert!(
        flash["cause"]
            .as_str()
            .unwrap()
            .contains("built against another torch"),
        "{flash:#}"
    );
    assert!(
        fixes(flash).contains("--force-reinstall --no-deps --no-build-isolation --no-binary flash-attn --no-cache-dir flash-attn   # rebuilds it against torch 2.11.0+cu130"),
        "{flash:#}"
    );
    let xf = found
        .iter()
        .find(|f| f["title"].as_str().unwrap().starts_with("xformers"))
        .unwrap();
    assert_eq!(
        xf["title"],
        "xformers 0.0.30 fails to run in torch 2.11.0+cu130 in /opt/torch/.venv"
    );
    assert_eq!(xf["severity"], "warning");
}

/// The real topology with the GPUs joined through the CPUs' interconnect instead of NVLink.
fn across_sockets(report: &mut Value) {
    let topo = &mut report["snapshot"]["multigpu"]["topology"];
    for g in topo["gpus"].as_array_mut().unwrap() {
        g["nvlinks"] = json!([]);
    }
    topo["pairs"] = json!([{
        "a": 0, "b": 1, "level": "system", "nvlinks": 0,
        "p2p_read": "topology_not_supported", "p2p_write": "topology_not_supported"
    }]);
}

/// The probe's all-reduce replaced by `results` (size MiB, busbw GB/s), run with `env`.
fn all_reduce(run: &mut Value, results: &[(u64, f64)], env: Value) {
    let rows: Vec<Value> = results
        .iter()
        .map(|(size, bw)| {
            json!({"size_mib": size, "ms": (*size as f64) * 1.048_576 / bw, "algbw_gbps": bw, "busbw_gbps": bw})
        })
        .collect();
    run["result"]["all_reduce"]["results"] = json!(rows);
    run["result"]["all_reduce"]["env"] = env;
}

#[test]
fn mgpu001_all_reduce_far_below_nvlink() {
    let mut run = run_of("h200x2_ok", Ending::Ok);
    all_reduce(
        &mut run,
        &[(1, 2.1), (64, 11.0), (1024, 12.4)],
        json!({"NCCL_P2P_DISABLE": "1"}),
    );
    let c = check(&report_with(run));
    let f = c.one("MGPU001");
    assert_eq!(f["severity"], "warning");
    assert_eq!(
        f["title"],
        "all-reduce over 2 GPUs reaches 12.4 GB/s, below the 180 GB/s the links should give at least"
    );
    let ev = evidence(f);
    assert!(ev.contains("at 1024 MiB"), "{ev}");
    assert!(ev.contains("18 active links per GPU"), "{ev}");
    assert!(ev.contains("NCCL_P2P_DISABLE=1"), "{ev}");
    assert!(fixes(f).contains("unset NCCL_P2P_DISABLE"), "{f:#}");
    // The workers' environment also names the cause for MGPU002.
    c.one("MGPU002");
    assert_eq!(c.code, 0, "warnings only");
}

#[test]
fn mgpu001_judges_large_messages_only_and_pcie_by_a_pcie_floor() {
    // Slow at 1 MiB is latency, not bandwidth.
    let mut run = run_of("h200x2_ok", Ending::Ok);
    all_reduce(&mut run, &[(1, 0.5)], json!({}));
    check(&report_with(run)).none("MGPU001");

    // 12 GB/s is fine across PCIe/SYS (floor 5 GB/s), 3 GB/s is not.
    let mut run = run_of("h200x2_ok", Ending::Ok);
    all_reduce(&mut run, &[(64, 11.0), (1024, 12.0)], json!({}));
    let mut report = report_with(run.clone());
    across_sockets(&mut report);
    check(&report).none("MGPU001");
    all_reduce(&mut run, &[(64, 2.5), (1024, 3.0)], json!({}));
    let mut report = report_with(run);
    across_sockets(&mut report);
    let c = check(&report);
    let f = c.one("MGPU001");
    assert!(
        evidence(f).contains("PCIe (SYS between some GPUs)"),
        "{f:#}"
    );
}

#[test]
fn mgpu002_p2p_switched_off_on_nvlink() {
    let mut report = baseline();
    report["snapshot"]["env"]["NCCL_P2P_LEVEL"] = json!("LOC");
    report["snapshot"]["env"]["NCCL_SHM_DISABLE"] = json!("1");
    let c = check(&report);
    let f = c.one("MGPU002");
    assert_eq!(f["severity"], "warning");
    let ev = evidence(f);
    assert!(ev.contains("GPU 0-GPU 1 NVSwitch"), "{ev}");
    assert!(ev.contains("NCCL_P2P_LEVEL=LOC"), "{ev}");
    assert!(ev.contains("NCCL_SHM_DISABLE=1"), "{ev}");
    let fx = fixes(f);
    assert!(fx.contains("unset NCCL_P2P_LEVEL"), "{fx}");
    assert!(fx.contains("unset NCCL_SHM_DISABLE"), "{fx}");

    // The same settings on GPUs without NVLink change nothing NCCL could use.
    let mut report = baseline();
    report["snapshot"]["env"]["NCCL_P2P_DISABLE"] = json!("1");
    across_sockets(&mut report);
    check(&report).none("MGPU002");
    // NCCL_P2P_DISABLE=0 switches nothing off.
    let mut report = baseline();
    report["snapshot"]["env"]["NCCL_P2P_DISABLE"] = json!("0");
    check(&report).none("MGPU002");
}

#[test]
fn mgpu003_visible_devices() {
    let with = |value: &str| {
        let mut report = baseline();
        report["snapshot"]["env"]["CUDA_VISIBLE_DEVICES"] = json!(value);
        check(&report)
    };
    let c = with("1");
    let f = c.one("MGPU003");
    assert_eq!(f["severity"], "info");
    assert_eq!(f["title"], "CUDA_VISIBLE_DEVICES shows 1 of 2 GPUs");

    let c = with("");
    let f = c.one("MGPU003");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["title"], "CUDA_VISIBLE_DEVICES hides all 2 GPUs");

    // CUDA stops at the first entry that names no GPU.
    let c = with("0,5,1");
    let f = c.one("MGPU003");
    assert_eq!(f["severity"], "warning");
    assert_eq!(
        f["title"],
        "CUDA_VISIBLE_DEVICES entry \"5\" names no GPU: 1 of 2 visible"
    );

    // A unique UUID prefix names a GPU.
    assert_eq!(
        with("GPU-29e3d265").one("MGPU003")["title"],
        "CUDA_VISIBLE_DEVICES shows 1 of 2 GPUs"
    );
    with("0,1").none("MGPU003");
    with("GPU-34644956-e8c7-748c-63cf-299cd9614f76,1").none("MGPU003");
}

#[test]
fn mgpu004_gpus_without_a_peer_to_peer_path() {
    let mut report = baseline();
    across_sockets(&mut report);
    let c = check(&report);
    let f = c.one("MGPU004");
    assert_eq!(f["severity"], "info");
    assert_eq!(f["title"], "1 GPU pair(s) have no peer-to-peer path");
    assert!(
        evidence(f).contains("GPU 0 - GPU 1: SYS (topology not supported)"),
        "{f:#}"
    );
    // The real machine's NVSwitch pair has P2P.
    check(&baseline()).none("MGPU004");
}

#[test]
fn mgpu005_all_reduce_fails() {
    let mut run = run_of("h200x2_ok", Ending::Ok);
    run["result"]["all_reduce"] = json!({
        "world": 2,
        "nccl_version": "2.28.9",
        "results": [],
        "env": {},
        "error": "rank 0: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3690, unhandled system error (run with NCCL_DEBUG=INFO for details)\nError while creating shared memory segment /dev/shm/nccl-abc (size 9637888)"
    });
    let c = check(&report_with(run));
    let f = c.one("MGPU005");
    assert_eq!(f["severity"], "error");
    assert_eq!(
        f["title"],
        "the NCCL all-reduce across 2 GPUs fails in torch 2.11.0+cu130 in /opt/torch/.venv"
    );
    let ev = evidence(f);
    assert!(ev.contains("unhandled system error"), "{ev}");
    assert!(ev.contains("NCCL 2.28.9"), "{ev}");
    // The real machine is a Docker container: shared memory is the usual culprit there.
    assert!(fixes(f).contains("--ipc=host"), "{f:#}");
    assert_eq!(c.code, 1);

    let mut run = run_of("h200x2_ok", Ending::Ok);
    run["result"]["all_reduce"]["error"] = json!("the all-reduce did not finish in 60 s");
    let c = check(&report_with(run));
    let f = c.one("MGPU005");
    assert!(
        fixes(f).contains("NCCL_P2P_DISABLE=1 cudoctor check --deep"),
        "{f:#}"
    );
    assert!(!fixes(f).contains("--ipc=host"), "{f:#}");
}

#[test]
fn mgpu006_torch_runs_the_systems_nccl_instead_of_the_wheels() {
    let mut run = run_of("h200x2_ok", Ending::Ok);
    run["result"]["torch"]["nccl"] = json!("2.28.3");
    let mut report = report_with(run);
    report["snapshot"]["env"]["LD_PRELOAD"] = json!("/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3");
    let c = check(&report);
    let f = c.one("MGPU006");
    assert_eq!(f["severity"], "warning");
    assert_eq!(
        f["title"],
        "torch loads NCCL 2.28.3, but nvidia-nccl-cu13 in /opt/torch/.venv is 2.28.9"
    );
    let ev = evidence(f);
    assert!(
        ev.contains("a copy of NCCL 2.28.3: /usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3 (system)"),
        "{ev}"
    );
    assert!(
        ev.contains("LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3"),
        "{ev}"
    );

    // The recorded probe reports the wheel's own NCCL.
    check(&report_with(run_of("h200x2_ok", Ending::Ok))).none("MGPU006");
}

#[test]
fn every_deep_rule_is_covered_here() {
    // Guards this file against a new ACC/MGPU rule appearing untested.
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["rules", "--format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut listed: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_string())
        .filter(|c| c.starts_with("ACC") || c.starts_with("MGPU"))
        .collect();
    listed.sort();
    let mut ours: Vec<String> = DEEP_CODES.iter().map(|c| c.to_string()).collect();
    ours.sort();
    assert_eq!(listed, ours);
}

/// A framework probe built from a recorded output of the framework probe script (its last
/// stage and its `framework` report), the way the collector builds it.
fn framework_probe(fixture: &str, framework: &str, package: &str) -> Value {
    let path = repo_file(&format!(
        "crates/cudoctor-collect/tests/deep_fixtures/{fixture}.out"
    ));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut stage = Value::Null;
    let mut result = Value::Null;
    for line in text.lines() {
        let Some(json) = line.strip_prefix(TAG) else {
            continue;
        };
        let v: Value = serde_json::from_str(json.trim()).unwrap();
        match v["event"].as_str() {
            Some("stage") => stage = v["name"].clone(),
            Some("framework") => result = v["data"].clone(),
            _ => {}
        }
    }
    assert!(!result.is_null(), "{fixture}: no framework report");
    json!({
        "framework": framework, "package": package, "interpreter": PYTHON, "env_prefix": ENV,
        "ending": {"kind": "reported"}, "last_stage": stage, "result": result,
    })
}

/// The real machine's report with a CUDA build of `framework` installed in its env and that
/// framework's probe.
fn report_with_framework(build: Value, probe: Value) -> Value {
    let mut report = baseline();
    let env = report["snapshot"]["python_envs"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|e| e["prefix"] == ENV)
        .unwrap();
    // The recorded report predates framework builds in the snapshot.
    match env["frameworks"].as_array_mut() {
        Some(list) => list.push(build),
        None => env["frameworks"] = json!([build]),
    }
    report["snapshot"]["deep"]["frameworks"] = json!([probe]);
    report
}

fn jax_cuda13_build() -> Value {
    json!({
        "framework": "jax", "version": "0.10.2", "package": "jax-cuda13-plugin",
        "location": "/opt/torch/.venv/lib/python3.12/site-packages",
        "cuda": {"major": 13, "read": "cuda13", "source": "distribution name jax-cuda13-plugin"},
    })
}

#[test]
fn acc011_a_cuda_build_of_jax_on_the_cpu_beside_two_gpus() {
    let probe = framework_probe("framework_jax_cuda13_no_gpu", "jax", "jax-cuda13-plugin");
    let c = check(&report_with_framework(jax_cuda13_build(), probe.clone()));
    let f = c.one("ACC011");
    assert_eq!(f["severity"], "error");
    assert!(f["caused_by"].is_null(), "{f:#}");
    assert_eq!(
        f["title"],
        "JAX runs on the CPU in /opt/torch/.venv, not on a GPU"
    );
    let ev = evidence(f);
    assert!(ev.contains("GPUs the driver reports: 2"), "{ev}");
    assert!(
        ev.contains("RuntimeError: Unable to load cuPTI. Is it installed?"),
        "{ev}"
    );
    assert!(fixes(f).contains("cudoctor explain"), "{f:#}");
    assert_eq!(c.code, 1);
    let (text, _) = check_text(&report_with_framework(jax_cuda13_build(), probe));
    assert!(
        text.contains("JAX") && text.contains("0.10.2, cpu (RuntimeError: Unknown backend cuda"),
        "{text}"
    );
}

#[test]
fn acc011_silent_for_a_framework_on_the_gpu_and_for_a_cpu_build() {
    // JAX and CuPy on the H200 machine (docs/device-runs/2026-12-01-h200x1/late).
    let probe = framework_probe("framework_jax_h200", "jax", "jax-cuda13-plugin");
    let c = check(&report_with_framework(jax_cuda13_build(), probe.clone()));
    c.none("ACC011");
    let (text, _) = check_text(&report_with_framework(jax_cuda13_build(), probe));
    assert!(
        text.contains("0.11.2, gpu: NVIDIA H200; computation right in"),
        "{text}"
    );
    let cupy = json!({
        "framework": "cupy", "version": "14.2.0", "package": "cupy-cuda13x",
        "location": "/opt/torch/.venv/lib/python3.12/site-packages",
        "cuda": {"major": 13, "read": "13.x", "source": "distribution name cupy-cuda13x"},
    });
    let probe = framework_probe("framework_cupy_h200", "cupy", "cupy-cuda13x");
    check(&report_with_framework(cupy, probe)).none("ACC011");
    let mut cpu_build = jax_cuda13_build();
    cpu_build["package"] = json!("jaxlib");
    cpu_build.as_object_mut().unwrap().remove("cuda");
    let probe = framework_probe("framework_jax_cuda13_no_gpu", "jax", "jaxlib");
    check(&report_with_framework(cpu_build, probe)).none("ACC011");
}

#[test]
fn acc011_onnxruntime_without_its_cuda_libraries_follows_from_fw023() {
    let site = "/opt/torch/.venv/lib/python3.12/site-packages";
    let provider = format!("{site}/onnxruntime/capi/libonnxruntime_providers_cuda.so");
    let build = json!({
        "framework": "onnx_runtime", "version": "1.31.1", "package": "onnxruntime-gpu",
        "location": site,
        "cuda": {"major": 13, "read": "13.0", "source": "onnxruntime/capi/build_and_package_info.py"},
        "ships": [provider],
        "unresolved": [{"needed_by": provider, "soname": "libcublasLt.so.13"}],
    });
    let probe = framework_probe(
        "framework_onnxruntime_no_cuda_wheels",
        "onnx_runtime",
        "onnxruntime-gpu",
    );
    let c = check(&report_with_framework(build, probe));
    let f = c.one("ACC011");
    assert_eq!(f["caused_by"], "FW023", "{f:#}");
    assert!(f["fix"].as_array().unwrap().is_empty(), "{f:#}");
    assert!(evidence(f).contains("libcublasLt.so.13: cannot open shared object file"));
    assert!(c.one("FW023")["caused_by"].is_null());
}
