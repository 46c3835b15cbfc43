//! The runtime probe of each framework other than torch (`--deep`): a second script, run once
//! per framework in its own child process, at the same time as the torch probes and each other
//! (each with its own budget), so one framework that crashes or hangs on import takes none of
//! the others with it, and `--deep` waits for the slowest probe rather than for their sum.

use cudoctor_snapshot::{Framework, FrameworkProbe, FrameworkProbeResult, ProbeEnding, PythonEnv};
use serde_json::Value;

use super::parse::TAG;
use super::DeepOptions;
use crate::runner;

/// The framework probe script, run as `python -I -X faulthandler -c SCRIPT NAME`.
pub const FRAMEWORK_PROBE_SCRIPT: &str = include_str!("framework_probe.py");

/// The `--deep-skip` value that leaves the framework probes out.
pub const SKIP: &str = "frameworks";

const MAX_STDOUT: usize = 1 << 20;
const MAX_STDERR: usize = 64 << 10;

/// The script's name for a framework it probes; `None` for those it does not (torch has its own
/// probe; vLLM and SGLang run on torch; Transformer Engine is probed for its own layer).
pub fn script_name(framework: Framework) -> Option<&'static str> {
    match framework {
        Framework::Jax => Some("jax"),
        Framework::Cupy => Some("cupy"),
        Framework::OnnxRuntime => Some("onnxruntime"),
        Framework::Tensorflow => Some("tensorflow"),
        Framework::CTranslate2 => Some("ctranslate2"),
        Framework::NumbaCuda => Some("numba_cuda"),
        Framework::Paddle => Some("paddle"),
        Framework::Rapids => Some("rapids"),
        Framework::Dali => Some("dali"),
        Framework::TensorRt => Some("tensorrt"),
        Framework::LlamaCpp => Some("llama_cpp"),
        Framework::TransformerEngine => Some("transformer_engine"),
        Framework::Torch | Framework::Vllm | Framework::Sglang => None,
    }
}

/// What to probe: each environment's frameworks with a probe, once per framework.
pub fn targets(envs: &[PythonEnv]) -> Vec<(&PythonEnv, Framework, &str)> {
    let mut out: Vec<(&PythonEnv, Framework, &str)> = Vec::new();
    for env in envs.iter().filter(|e| e.interpreter.is_some()) {
        for build in &env.frameworks {
            if script_name(build.framework).is_some()
                && !out
                    .iter()
                    .any(|(e, f, _)| e.prefix == env.prefix && *f == build.framework)
            {
                out.push((env, build.framework, build.package.as_str()));
            }
        }
    }
    out
}

/// Probes every target, in parallel (each its own process, each bounded by the timeout).
pub fn probe_all(envs: &[PythonEnv], options: &DeepOptions, live: bool) -> Vec<FrameworkProbe> {
    if options.skip.iter().any(|s| s == SKIP) {
        return Vec::new();
    }
    let targets = targets(envs);
    std::thread::scope(|scope| {
        let handles: Vec<_> = targets
            .into_iter()
            .map(|(env, framework, package)| {
                scope.spawn(move || {
                    let interpreter = env.interpreter.as_deref().unwrap_or_default();
                    let mut probe = FrameworkProbe {
                        framework,
                        package: package.to_string(),
                        interpreter: interpreter.to_string(),
                        env_prefix: env.prefix.clone(),
                        ending: ProbeEnding::NotRunUnderRoot,
                        ..Default::default()
                    };
                    if live {
                        run(&mut probe, options);
                    }
                    probe
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    })
}

fn run(probe: &mut FrameworkProbe, options: &DeepOptions) {
    let Some(name) = script_name(probe.framework) else {
        return;
    };
    let mut cmd = options.python(&probe.interpreter);
    cmd.args(["-X", "faulthandler", "-c", FRAMEWORK_PROBE_SCRIPT, name]);
    // JAX takes most of every GPU's memory at start unless told not to.
    cmd.env("XLA_PYTHON_CLIENT_PREALLOCATE", "false");
    // TensorFlow's C++ logs, which go to stderr, at warnings and above.
    cmd.env("TF_CPP_MIN_LOG_LEVEL", "1");
    let limits = options.limits(MAX_STDOUT, MAX_STDERR);
    let mut output = Output::default();
    let mut on_line = |line: &str| output.apply(line);
    let done = runner::run(cmd, &limits, Some(&mut on_line));
    probe.elapsed_s = Some(done.elapsed.as_secs_f64());
    probe.last_stage = output.last_stage;
    probe.result = output.result;
    probe.ending = match done.ending {
        runner::Ending::NotStarted(e) => ProbeEnding::NotStarted { error: e },
        runner::Ending::TimedOut => ProbeEnding::TimedOut {
            after_s: options.timeout.as_secs_f64(),
        },
        runner::Ending::Signalled(sig) => ProbeEnding::Crashed {
            signal: Some(sig),
            exit_code: None,
        },
        runner::Ending::Exited(_) if probe.result.is_some() => ProbeEnding::Reported,
        runner::Ending::Exited(0) => ProbeEnding::BadOutput,
        runner::Ending::Exited(code) => ProbeEnding::Crashed {
            signal: None,
            exit_code: Some(code),
        },
    };
    if probe.ending != ProbeEnding::Reported {
        let stderr = String::from_utf8_lossy(&done.stderr);
        let tail = super::parse::tail_of(&stderr, 30, 3000);
        if !tail.is_empty() {
            probe.stderr_tail = Some(tail);
        }
    }
}

/// What was read from the script's stdout.
#[derive(Debug, Default)]
struct Output {
    last_stage: Option<String>,
    result: Option<FrameworkProbeResult>,
}

impl Output {
    fn apply(&mut self, line: &str) {
        let Some(json) = line.find(TAG).and_then(|at| line.get(at + TAG.len()..)) else {
            return;
        };
        let Ok(value) = serde_json::from_str::<Value>(json.trim()) else {
            return;
        };
        match value.get("event").and_then(Value::as_str) {
            Some("stage") => {
                self.last_stage = value
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            }
            Some("framework") => {
                self.result = value
                    .get("data")
                    .cloned()
                    .and_then(|d| serde_json::from_value(d).ok())
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_line_is_read_and_other_lines_ignored() {
        let mut o = Output::default();
        o.apply("jax prints this");
        o.apply(&format!(
            "{TAG} {{\"event\": \"stage\", \"name\": \"import jax\"}}"
        ));
        assert_eq!(o.last_stage.as_deref(), Some("import jax"));
        // The script's own line, as the jax[cuda13] env here (no GPU) wrote it.
        o.apply(&format!(
            "{TAG} {}",
            r#"{"data": {"framework": "jax", "devices": [], "version": "0.10.2", "platform": "cpu", "gpu_error": "RuntimeError: Unknown backend cuda. Available backends are ['cpu']", "computation_ok": true, "computation_ms": 1.678, "messages": ["Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda13.initialize()"], "elapsed_ms": 4159.27}, "event": "framework"}"#
        ));
        let r = o.result.unwrap();
        assert_eq!(r.version.as_deref(), Some("0.10.2"));
        assert_eq!(r.platform.as_deref(), Some("cpu"));
        assert!(!r.uses_gpu());
        assert_eq!(r.computation_ok, Some(true));
        assert_eq!(r.messages.len(), 1);
    }

    /// A real interpreter runs the real script on a venv where one distribution's code asks
    /// another's module for a name it does not have (numba-cuda 0.30.4 asking numpy 2.5.2 for
    /// `row_stack`, as on the H200 of docs/device-runs/2026-12-05-h200x1): the gap, the frame
    /// that asked and both owners come back.
    #[test]
    fn a_name_one_distribution_asks_of_another_is_read_from_the_traceback() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("venv");
        let site = cudoctor_testkit::real_venv(&venv).join("site-packages");
        let write = |rel: &str, text: &str| {
            let path = site.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        // numpy 2's module __getattr__ raises for a name it no longer has.
        write(
            "gapnp/__init__.py",
            "def __getattr__(attr):\n    raise AttributeError(\"module {!r} has no attribute {!r}\".format(__name__, attr))\n",
        );
        write(
            "gapnp-2.5.2.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: gapnp\nVersion: 2.5.2\n",
        );
        write("gapnp-2.5.2.dist-info/top_level.txt", "gapnp\n");
        write(
            "numba/__init__.py",
            "import gapnp\n\nstack = gapnp.row_stack\n",
        );
        write(
            "numba_cuda-0.30.4.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: numba-cuda\nVersion: 0.30.4\n",
        );
        write("numba_cuda-0.30.4.dist-info/top_level.txt", "numba\n");
        let out = std::process::Command::new(venv.join("bin/python"))
            .args([
                "-I",
                "-X",
                "faulthandler",
                "-c",
                FRAMEWORK_PROBE_SCRIPT,
                "numba_cuda",
            ])
            .output()
            .unwrap();
        let mut o = Output::default();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            o.apply(line);
        }
        let r = o.result.expect("the probe's report");
        assert_eq!(
            r.error.as_deref(),
            Some("AttributeError: module 'gapnp' has no attribute 'row_stack'")
        );
        let gap = r.api_gap.expect("the gap");
        assert_eq!(gap.missing, "row_stack");
        assert_eq!(gap.module, "gapnp");
        assert_eq!(gap.module_distributions, ["gapnp"]);
        assert_eq!(gap.raised_in_distributions, ["numba-cuda"]);
        assert!(
            gap.raised_in.ends_with("site-packages/numba/__init__.py:3"),
            "{}",
            gap.raised_in
        );
    }

    /// The framework probe's report of `framework`, run by the interpreter `python`.
    fn probe_with(python: &std::path::Path, framework: &str) -> FrameworkProbeResult {
        let out = std::process::Command::new(python)
            .args([
                "-I",
                "-X",
                "faulthandler",
                "-c",
                FRAMEWORK_PROBE_SCRIPT,
                framework,
            ])
            .output()
            .unwrap();
        let mut o = Output::default();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            o.apply(line);
        }
        o.result.unwrap_or_else(|| {
            panic!(
                "no report from the {framework} probe ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// PaddlePaddle's CPU build (make-envs.sh paddlepaddle-cpu) says in its own log why it has
    /// no GPU when a GPU place is asked for, and computes on the CPU.
    #[test]
    fn paddles_cpu_build_says_so_in_its_own_words() {
        let Some(python) = cudoctor_testkit::extended_realenv("paddlepaddle-cpu") else {
            return;
        };
        let r = probe_with(&python, "paddle");
        assert_eq!(r.error, None, "{r:?}");
        assert_eq!(r.platform.as_deref(), Some("cpu"));
        assert_eq!(
            r.gpu_error.as_deref(),
            Some("Cannot use GPU because you have installed CPU version PaddlePaddle.")
        );
        assert_eq!(r.runtime, None, "a CPU build has no CUDA runtime");
        assert_eq!(r.computation_ok, Some(true));
        assert!(!r.uses_gpu());
    }

    /// PaddlePaddle's CUDA build on this machine (no GPU, no driver; make-envs.sh
    /// paddlepaddle-gpu): no device, the warning its import gave as its reason, the product
    /// computed on the CPU, and the process alive (a GPU place asked for here ends it).
    #[test]
    fn paddles_cuda_build_without_a_gpu_gives_the_reason_its_import_gave() {
        let Some(python) = cudoctor_testkit::extended_realenv("paddlepaddle-gpu") else {
            return;
        };
        let r = probe_with(&python, "paddle");
        assert_eq!(r.error, None, "{r:?}");
        assert_eq!(r.platform.as_deref(), Some("cpu"));
        assert!(r.devices.is_empty());
        assert!(
            r.runtime.as_deref().is_some_and(|v| v.contains('.')),
            "{r:?}"
        );
        let said = r.gpu_error.as_deref().unwrap_or_default();
        assert!(said.contains("CUDA device is not set properly"), "{said}");
        assert_eq!(r.computation_ok, Some(true));
    }

    /// RAPIDS (cudf-cu12, with RMM) on this machine: RMM's own CUDA error, the CUDA runtime of
    /// its wheels, no device, and no computation tried.
    #[test]
    fn rapids_names_rmms_own_cuda_error() {
        let Some(python) = cudoctor_testkit::extended_realenv("cudf-cu12") else {
            return;
        };
        let r = probe_with(&python, "rapids");
        assert_eq!(r.error, None, "{r:?}");
        assert_eq!(r.platform.as_deref(), Some("none"));
        assert_eq!(
            r.runtime.as_deref(),
            Some("12.9"),
            "nvidia-cuda-runtime-cu12 12.9"
        );
        assert_eq!(
            r.gpu_error.as_deref(),
            Some("CUDARuntimeError: cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")
        );
        assert_eq!(r.computation_ok, None);
    }

    /// DALI (nvidia-dali-cuda120) on this machine: its backend counts 0 devices without a word;
    /// the current-device query gives its reason; the skipped pipeline is said.
    #[test]
    fn dali_counts_no_device_and_its_runtime_says_why() {
        let Some(python) = cudoctor_testkit::extended_realenv("dali-cuda120") else {
            return;
        };
        let r = probe_with(&python, "dali");
        assert_eq!(r.error, None, "{r:?}");
        assert_eq!(r.platform.as_deref(), Some("none"));
        assert!(r.devices.is_empty());
        assert_eq!(
            r.gpu_error.as_deref(),
            Some("RuntimeError: CUDA runtime API error cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version")
        );
        assert!(r
            .computation_skipped
            .as_deref()
            .is_some_and(|s| s.contains("pipeline")));
    }

    /// A venv whose site-packages holds `files` (path, text): stand-ins for a framework that
    /// cannot be installed here (no wheel, or a wheel only on its maker's own index), which say
    /// what the framework's API would, to check what the probe makes of it. Returns its python.
    fn stub_env(dir: &std::path::Path, files: &[(&str, &str)]) -> std::path::PathBuf {
        let venv = dir.join("venv");
        let site = cudoctor_testkit::real_venv(&venv).join("site-packages");
        for (rel, text) in files {
            let path = site.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        venv.join("bin/python")
    }

    /// TensorRT writes why it cannot make a builder only to its logger, then its binding raises
    /// a TypeError that says nothing: the logger's error is the reason kept.
    #[test]
    fn tensorrts_reason_is_its_loggers_error_not_the_bindings_exception() {
        let dir = tempfile::tempdir().unwrap();
        let stub = r#"
__version__ = "10.0.0-stub"

class ILogger:
    class Severity:
        INTERNAL_ERROR, ERROR, WARNING, INFO, VERBOSE = range(5)

    def __init__(self):
        pass

class Builder:
    def __init__(self, logger):
        logger.log(ILogger.Severity.INFO, "stub info")
        logger.log(ILogger.Severity.WARNING, "stub warning")
        logger.log(ILogger.Severity.ERROR, "stub: CUDA initialization failure with error: 35")
        raise TypeError("pybind11::init(): factory function returned nullptr")
"#;
        let python = stub_env(dir.path(), &[("tensorrt/__init__.py", stub)]);
        let r = probe_with(&python, "tensorrt");
        assert_eq!(r.error, None, "{r:?}");
        assert_eq!(r.version.as_deref(), Some("10.0.0-stub"));
        assert_eq!(r.platform.as_deref(), Some("none"));
        assert_eq!(
            r.gpu_error.as_deref(),
            Some("stub: CUDA initialization failure with error: 35")
        );
        assert_eq!(
            r.messages,
            [
                "W: stub warning",
                "E: stub: CUDA initialization failure with error: 35"
            ]
        );
        assert!(r.computation_skipped.is_some());
        assert!(!r.uses_gpu());
    }

    /// llama-cpp-python without a model: its offload support, and what ggml's CUDA back-end
    /// wrote when it started (the lines as ggml-cuda's ggml_cuda_init writes them).
    #[test]
    fn llama_cpps_offload_and_its_cuda_back_ends_own_lines_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let stub = r#"
import os, sys

__version__ = "0.3.16-stub"
LOG = {
    "failed": "ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version\n",
    "found": "ggml_cuda_init: found 1 CUDA devices (Total VRAM: 143771 MiB):\n"
    "  Device 0: NVIDIA H200, compute capability 9.0, VMM: yes, VRAM: 143771 MiB\n",
    "silent": "",
    "cpu": "",
}

def llama_supports_gpu_offload():
    sys.stderr.write(LOG[os.environ["STUB_CASE"]])
    return os.environ["STUB_CASE"] != "cpu"
"#;
        let python = stub_env(dir.path(), &[("llama_cpp/__init__.py", stub)]);
        let probe = |case: &str| {
            let out = std::process::Command::new(&python)
                .args(["-I", "-c", FRAMEWORK_PROBE_SCRIPT, "llama_cpp"])
                .env("STUB_CASE", case)
                .output()
                .unwrap();
            let mut o = Output::default();
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                o.apply(line);
            }
            o.result.unwrap()
        };
        let failed = probe("failed");
        assert_eq!(failed.error, None, "{failed:?}");
        assert_eq!(failed.platform.as_deref(), Some("none"));
        assert_eq!(
            failed.gpu_error.as_deref(),
            Some("CUDA driver version is insufficient for CUDA runtime version")
        );
        let found = probe("found");
        assert_eq!(found.platform.as_deref(), Some("cuda"));
        assert_eq!(found.devices, ["NVIDIA H200"]);
        assert!(found.uses_gpu());
        // Offload supported, and nothing said of its devices: not known, not "no GPU".
        let silent = probe("silent");
        assert_eq!(silent.platform.as_deref(), Some("unknown"));
        assert_eq!(silent.gpu_error, None);
        let cpu = probe("cpu");
        assert_eq!(cpu.platform.as_deref(), Some("cpu"));
        assert_eq!(
            cpu.gpu_error.as_deref(),
            Some("llama_cpp.llama_supports_gpu_offload() is False")
        );
        for r in [failed, found, silent, cpu] {
            assert_eq!(r.error, None, "{r:?}");
            assert_eq!(r.computation_ok, None);
            assert!(r.computation_skipped.is_some());
        }
    }

    /// Transformer Engine runs its layer only where torch has a GPU; without one, torch's own
    /// reason is kept and the skipped layer is said.
    #[test]
    fn transformer_engine_without_a_gpu_keeps_torchs_reason() {
        let dir = tempfile::tempdir().unwrap();
        let cuda = r#"
def is_available():
    return False

def init():
    raise RuntimeError("stub: Found no NVIDIA driver on your system.\nPlease check.")
"#;
        let python = stub_env(
            dir.path(),
            &[
                ("torch/__init__.py", "from . import cuda\n"),
                ("torch/cuda.py", cuda),
                (
                    "transformer_engine/__init__.py",
                    "__version__ = \"2.8.0-stub\"\n",
                ),
                ("transformer_engine/pytorch/__init__.py", ""),
            ],
        );
        let r = probe_with(&python, "transformer_engine");
        assert_eq!(r.error, None, "{r:?}");
        assert_eq!(r.version.as_deref(), Some("2.8.0-stub"));
        assert_eq!(r.platform.as_deref(), Some("none"));
        assert_eq!(
            r.gpu_error.as_deref(),
            Some("RuntimeError: stub: Found no NVIDIA driver on your system. Please check.")
        );
        assert!(r
            .computation_skipped
            .as_deref()
            .is_some_and(|s| s.contains("te.Linear")));

        // Transformer Engine without torch (its JAX layer alone): where it computes is not
        // known to this probe, and no error is made of torch's absence.
        let dir = tempfile::tempdir().unwrap();
        let python = stub_env(
            dir.path(),
            &[(
                "transformer_engine/__init__.py",
                "__version__ = \"2.8.0-stub\"\n",
            )],
        );
        let r = probe_with(&python, "transformer_engine");
        assert_eq!(r.error, None, "{r:?}");
        assert_eq!(r.platform.as_deref(), Some("unknown"));
        assert!(r.computation_skipped.is_some());
    }

    /// Every framework of the layer, for the tests that go through all of them.
    const ALL: [Framework; 15] = [
        Framework::Torch,
        Framework::Jax,
        Framework::Cupy,
        Framework::Tensorflow,
        Framework::OnnxRuntime,
        Framework::Vllm,
        Framework::Sglang,
        Framework::Paddle,
        Framework::TensorRt,
        Framework::CTranslate2,
        Framework::Rapids,
        Framework::LlamaCpp,
        Framework::NumbaCuda,
        Framework::Dali,
        Framework::TransformerEngine,
    ];

    #[test]
    fn every_framework_with_a_probe_is_named_in_the_script() {
        let mut probed = 0;
        for f in ALL {
            let Some(name) = script_name(f) else {
                continue;
            };
            assert!(
                FRAMEWORK_PROBE_SCRIPT.contains(&format!("\"{name}\": probe_{name},")),
                "{name}"
            );
            probed += 1;
        }
        // The script's own table has one entry per framework probed, and no other.
        let table = FRAMEWORK_PROBE_SCRIPT
            .split("PROBES = {")
            .nth(1)
            .and_then(|t| t.split('}').next())
            .unwrap();
        assert_eq!(table.matches(": probe_").count(), probed, "{table}");
    }
}
