use cudoctor_snapshot::{FrameworkError, FrameworkProbe, ProbeEnding};

use super::deep_support::first_line;
use crate::views::explained::with_explanation;
use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "ACC011",
    name: "framework-gpu-unusable",
    layer: Layer::Acceleration,
    severity: Severity::Error,
    summary:
        "A CUDA build of a framework other than torch runs on the CPU, finds no GPU, fails, or crashes",
    docs: r#"## What it checks
With `--deep`, each framework other than torch that has a CUDA build installed is imported in
its own child process (`python -I -X faulthandler`, with the deep timeout), asked for its
devices, and given one tiny computation on its default device whose result is checked: JAX's
backend and devices, CuPy's device count (cuBLAS and an NVRTC-compiled reduction), an ONNX
Runtime session asking for the CUDA provider (the providers it got, and ONNX Runtime's own log
of why the CUDA provider failed), TensorFlow's GPUs, CTranslate2's CUDA device count, numba-cuda's
devices (and a kernel it compiles) or the driver error it met, PaddlePaddle's device count and a
4x4 product on its device (its own log line or import warning when it has none), RAPIDS' device
count through RMM and a cuDF sum, DALI's device count (no pipeline: too heavy for a probe),
TensorRT's builder (its logger's error when it cannot make one), llama-cpp-python's GPU offload
support and what its CUDA back-end logged at start-up (no model, so no computation), and
Transformer Engine's `te.Linear` on the GPU where torch has one (torch's reason where not). A
computation a probe leaves out is said in the report (`computation_skipped`). Where a probe
cannot tell where the framework computes without more than it may do (llama-cpp-python whose
back-end named no device, RAPIDS without RMM or cuDF, Transformer Engine without torch), the
platform is `unknown`, which is not judged. `--deep-skip frameworks` leaves them out.

## Why it matters
These frameworks fall back to the CPU with a log line, not an error: JAX says "Falling back to
cpu", ONNX Runtime quietly runs the session on its CPU provider. The program works, hundreds of
times slower. A framework whose process crashes on import or on its first device query takes
every program of the environment with it.

## How to fix
The framework's own words are the evidence. They are run through the explain engine: when it
knows the message, its cause and fixes are added. When no GPU or driver is visible at all, this
finding follows from that one (shown under it). A missing CUDA library of the framework is
usually named by FW023 too, whose fix installs it. An exception where one installed package's
code asks another's module for a name it does not have (`module 'numpy' has no attribute
'row_stack'`, `cannot import name 'X' from 'M'`) is judged from the probe's traceback as the
two releases not fitting: the frame that asked, both packages and versions, and a release of
the asked package older than the installed minor to try (said to be a try: which release
dropped the name is not known), or one of the asking package made for it. A crash is reported as it happened, with the
fault handler's last frame; cudoctor does not guess its cause: the command given reproduces it.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(deep) = &ctx.snap.deep else {
        return Vec::new();
    };
    deep.frameworks
        .iter()
        .filter_map(|p| judge(ctx, p))
        .collect()
}

fn judge(ctx: &Context, p: &FrameworkProbe) -> Option<Finding> {
    let env = ctx.env_at(&p.env_prefix);
    let build = env.and_then(|e| e.frameworks.iter().find(|b| b.framework == p.framework));
    // A CPU build computing on the CPU is what it was installed for.
    let cuda_build = build.is_some_and(|b| b.cuda.is_some());
    let name = p.framework.name();
    let place = &p.env_prefix;
    let python = cudoctor_plan::quote(&p.interpreter);
    let reproduce = format!(
        "{python} -X faulthandler -c {}",
        cudoctor_plan::quote(&reproduce_script(p.framework))
    );
    let mut f = match &p.ending {
        ProbeEnding::NotRunUnderRoot | ProbeEnding::NotStarted { .. } => return None,
        ProbeEnding::Crashed { .. } => {
            let how = p.ending.describe();
            let stage = p.last_stage.as_deref().unwrap_or("start-up");
            let mut f = Finding::new(&RULE, format!("{name} crashes during \"{stage}\" in {place}"))
                .evidence(format!("{}: {how}", p.interpreter))
                .cause(format!("The interpreter died inside {name} (its import or its first look for devices): every program of this environment that uses {name} dies the same way. The crash alone does not say which library is at fault; the command below reproduces it with Python's fault handler."))
                .shell(reproduce);
            for frame in last_frames(p.stderr_tail.as_deref().unwrap_or(""), 2) {
                f = f.evidence(format!("fault handler: {frame}"));
            }
            f
        }
        ProbeEnding::TimedOut { after_s } => {
            let stage = p.last_stage.as_deref().unwrap_or("start-up");
            Finding::new(&RULE, format!("{name} hangs during \"{stage}\" in {place}"))
                .evidence(format!("no answer in {after_s:.0} s; stopped"))
                .cause(format!("{name} did not finish its import, device query or tiny computation in time; programs doing the same will hang."))
                .prose("Run cudoctor check --deep with a larger --deep-timeout, to tell slow from hung")
        }
        ProbeEnding::BadOutput => return None,
        ProbeEnding::Reported => {
            let r = p.result.as_ref()?;
            if let Some(error) = &r.error {
                if !cuda_build && r.error_kind == Some(FrameworkError::ModuleNotFound) {
                    return None;
                }
                let f = Finding::new(
                    &RULE,
                    format!("{name} fails in {place}: {}", first_line(error)),
                )
                .evidence(format!("{}: {error}", p.interpreter));
                match r.api_gap.as_ref().and_then(|g| api_gap(ctx, place, g)) {
                    Some(gap) => gap.explain(f, name, &ctx.target(place)),
                    None => with_explanation(
                        f.cause(format!("{name} is installed but stops with this error before it computes anything; every program using it fails the same way."))
                            .shell(cudoctor_plan::heredoc("cudoctor explain", error)),
                        error,
                        &ctx.target(place),
                    ),
                }
            } else if r.computation_ok == Some(false) {
                Finding::new(&RULE, format!("{name} computes a wrong result in {place}"))
                    .evidence(format!("a 4x4 float32 product on {} did not sum to 120", r.platform.as_deref().unwrap_or("its default device")))
                    .cause("A tiny known computation came out wrong: a broken library or a faulty GPU. Nothing this framework computes here can be trusted until it is found.")
                    .shell(reproduce)
            } else if cuda_build && !r.uses_gpu() && r.platform.as_deref() != Some("unknown") {
                let why = r
                    .gpu_error
                    .clone()
                    .or_else(|| r.messages.last().cloned())
                    .unwrap_or_else(|| format!("{name} gave no reason"));
                let title = match r.platform.as_deref() {
                    Some("none") | None => format!("{name} finds no GPU in {place}"),
                    Some(p) => format!(
                        "{name} runs on the {} in {place}, not on a GPU",
                        p.to_uppercase()
                    ),
                };
                let mut f = Finding::new(&RULE, title)
                    .evidence(format!(
                        "{} {} ({}), a CUDA build",
                        name,
                        r.version.as_deref().unwrap_or("?"),
                        p.package
                    ))
                    .evidence(format!(
                        "{name} says: {}",
                        why.lines().next().unwrap_or_default().trim()
                    ))
                    .evidence(format!(
                        "GPUs the driver reports: {}",
                        ctx.snap.driver.gpus.len()
                    ));
                for m in r.messages.iter().filter(|m| **m != why).take(3) {
                    f = f.evidence(format!("{name} logged: {}", first_line(m)));
                }
                if let Some(skipped) = &r.computation_skipped {
                    f = f.evidence(format!("not computed: {skipped}"));
                }
                f = f
                    .cause(format!("{name}'s CUDA build could not use a GPU in this process and fell back without an error: its programs run, far slower."))
                    .shell(cudoctor_plan::heredoc("cudoctor explain", &why));
                with_explanation(f, &why, &ctx.target(place))
            } else {
                return None;
            }
        }
    };
    // What the framework reported follows from the static layers when they explain it (no
    // driver, a library nowhere); a crash or a hang is linked to nothing: its cause is not known.
    if p.ending == ProbeEnding::Reported {
        f = f.about(Subject::Runtime {
            env: place.to_string(),
        });
    }
    Some(f.about(Subject::Package {
        env: place.to_string(),
        name: p.package.clone(),
    }))
}

/// Two installed distributions whose releases do not fit: `user`'s code asks `provider`'s module
/// for a name the installed `provider` does not have.
struct InstalledGap<'a> {
    gap: &'a cudoctor_snapshot::ApiGap,
    user: &'a cudoctor_snapshot::Package,
    provider: &'a cudoctor_snapshot::Package,
}

/// The probe's API gap, with both sides installed in the environment as different distributions.
fn api_gap<'a>(
    ctx: &Context<'a>,
    place: &str,
    gap: &'a cudoctor_snapshot::ApiGap,
) -> Option<InstalledGap<'a>> {
    let env = ctx.env_at(place)?;
    let installed = |names: &[String]| -> Option<&'a cudoctor_snapshot::Package> {
        let [one] = names else { return None };
        env.package(&cudoctor_types::requirement::normalise_name(one))
    };
    let user = installed(&gap.raised_in_distributions)?;
    let provider = installed(&gap.module_distributions)?;
    (user.name != provider.name).then_some(InstalledGap {
        gap,
        user,
        provider,
    })
}

impl InstalledGap<'_> {
    /// The cause and fixes: a `provider` older than the installed minor (the release that
    /// dropped the name is not known, so the fix is said to be one to try), or a `user`
    /// release made for the installed `provider`.
    fn explain(&self, f: Finding, name: &str, target: &cudoctor_plan::TargetEnv) -> Finding {
        let (g, user, provider) = (self.gap, self.user, self.provider);
        let asked = format!("{}.{}", g.module, g.missing);
        let below: Vec<&str> = provider.version.split('.').take(2).collect();
        let mut f = f
            .evidence(format!(
                "{} {} asks for `{asked}` at {}",
                user.name, user.version, g.raised_in
            ))
            .evidence(format!(
                "{} {} is installed, and its `{}` has no `{}`",
                provider.name, provider.version, g.module, g.missing
            ))
            .cause(format!(
                "{name} stops in the code of {} {}, which uses `{asked}`; the installed {} {} does not have it (removed or renamed in a release newer than the one {} was written for, or not yet added). The two releases do not fit together; the CUDA stack is not at fault.",
                user.name, user.version, provider.name, provider.version, user.name
            ))
            .confidence(crate::Confidence::Likely)
            .about(Subject::Package {
                env: target.prefix.clone(),
                name: provider.name.clone(),
            });
        if let [major, minor] = below[..] {
            if major.parse::<u32>().is_ok() && minor.parse::<u32>().is_ok() {
                let pin = format!("{}<{major}.{minor}", provider.name);
                f = f
                    .command(target, target.install(&cudoctor_plan::Install::pins([pin])))
                    .prose(format!(
                        "cudoctor does not know which {} release dropped `{}`: the newest one older than {major}.{minor} is the first to try (`cudoctor check --deep --verify=install` tries it in a copy of the environment first)",
                        provider.name, g.missing
                    ));
            }
        }
        f.prose(format!(
            "Or install a {} release made for {} {}, when there is one",
            user.name, provider.name, provider.version
        ))
    }
}

/// The smallest program that does what the probe did first: import and list devices.
fn reproduce_script(framework: cudoctor_snapshot::Framework) -> String {
    use cudoctor_snapshot::Framework as F;
    match framework {
        F::Jax => "import jax; print(jax.devices())",
        F::Cupy => "import cupy; print(cupy.cuda.runtime.getDeviceCount())",
        F::OnnxRuntime => "import onnxruntime as ort; print(ort.get_available_providers())",
        F::Tensorflow => "import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))",
        F::Torch | F::Vllm | F::Sglang => "import torch; print(torch.cuda.is_available())",
        F::TransformerEngine => {
            "import torch, transformer_engine.pytorch; print(torch.cuda.is_available())"
        }
        F::Paddle => "import paddle; print(paddle.device.cuda.device_count())",
        F::TensorRt => "import tensorrt as trt; print(trt.Builder(trt.Logger()))",
        F::CTranslate2 => "import ctranslate2; print(ctranslate2.get_cuda_device_count())",
        F::Rapids => "from rmm._cuda import gpu; print(gpu.getDeviceCount())",
        F::LlamaCpp => "import llama_cpp; print(llama_cpp.llama_supports_gpu_offload())",
        F::NumbaCuda => "from numba import cuda; cuda.detect()",
        F::Dali => {
            "from nvidia.dali import backend; print(backend.GetCUDADeviceCount(), backend.GetCUDACurrentDevice())"
        }
    }
    .to_string()
}

/// The innermost frames of Python's fault handler output (`File "...", line N in fn`).
fn last_frames(stderr: &str, n: usize) -> Vec<String> {
    stderr
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("File \""))
        .take(n)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::run;
    use cudoctor_snapshot::{
        CudaBinding, DeepFacts, Framework, FrameworkBuild, FrameworkProbeResult, PythonEnv,
    };

    fn with_probe(p: FrameworkProbe, cuda: bool) -> cudoctor_snapshot::Snapshot {
        let mut s = crate::testing::h200();
        let build = FrameworkBuild {
            framework: p.framework,
            package: p.package.clone(),
            version: "0.10.2".into(),
            cuda: cuda.then(|| CudaBinding {
                major: 13,
                ..Default::default()
            }),
            ..Default::default()
        };
        match s.python_envs.iter_mut().find(|e| e.prefix == p.env_prefix) {
            Some(e) => e.frameworks.push(build),
            None => s.python_envs.push(PythonEnv {
                prefix: p.env_prefix.clone(),
                frameworks: vec![build],
                ..Default::default()
            }),
        }
        s.deep = Some(DeepFacts {
            frameworks: vec![p],
            ..Default::default()
        });
        s
    }

    fn jax(ending: ProbeEnding, result: Option<FrameworkProbeResult>) -> FrameworkProbe {
        FrameworkProbe {
            framework: Framework::Jax,
            package: "jax-cuda13-plugin".into(),
            interpreter: "/opt/jax/bin/python".into(),
            env_prefix: "/opt/jax".into(),
            ending,
            result,
            ..Default::default()
        }
    }

    // The jax[cuda13] env's own report on a machine where the plugin cannot start.
    fn fell_back() -> FrameworkProbeResult {
        FrameworkProbeResult {
            version: Some("0.10.2".into()),
            platform: Some("cpu".into()),
            gpu_error: Some("RuntimeError: Unknown backend cuda. Available backends are ['cpu']".into()),
            computation_ok: Some(true),
            messages: vec![
                "Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda13.initialize()".into(),
                "RuntimeError: Unable to load cuPTI. Is it installed?".into(),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn a_cuda_build_on_the_cpu_is_an_error_with_the_frameworks_words() {
        let f = run(
            &RULE,
            &with_probe(jax(ProbeEnding::Reported, Some(fell_back())), true),
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].title.starts_with("JAX runs on the CPU in /opt/jax"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.contains("Unable to load cuPTI")),
            "{:?}",
            f[0].evidence
        );
        assert!(f[0].about.contains(&Subject::Package {
            env: "/opt/jax".into(),
            name: "jax-cuda13-plugin".into()
        }));
    }

    /// The H200's venv of docs/device-runs/2026-12-05-h200x1: numba-cuda 0.30.4 asks numpy 2.5.2
    /// for `row_stack` at its first kernel compile.
    #[test]
    fn a_name_one_package_asks_of_another_is_judged_as_the_pair_with_a_fix_to_try() {
        let gap = cudoctor_snapshot::ApiGap {
            missing: "row_stack".into(),
            module: "numpy".into(),
            module_distributions: vec!["numpy".into()],
            raised_in: "/opt/torch/.venv/lib/python3.12/site-packages/numba_cuda/numba/cuda/np/arrayobj.py:6860".into(),
            raised_in_distributions: vec!["numba_cuda".into()],
        };
        let probe = FrameworkProbe {
            framework: Framework::NumbaCuda,
            package: "numba-cuda".into(),
            interpreter: "/opt/torch/.venv/bin/python".into(),
            env_prefix: "/opt/torch/.venv".into(),
            ending: ProbeEnding::Reported,
            result: Some(FrameworkProbeResult {
                error: Some("AttributeError: module 'numpy' has no attribute 'row_stack'".into()),
                error_kind: Some(FrameworkError::Raised),
                api_gap: Some(gap.clone()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut s = with_probe(probe.clone(), true);
        let env = s
            .python_envs
            .iter_mut()
            .find(|e| e.prefix == "/opt/torch/.venv")
            .unwrap();
        for (name, version) in [
            ("numba-cuda", "0.30.4"),
            ("numpy", "2.5.2"),
            ("numba", "0.68.0"),
        ] {
            env.packages.push(cudoctor_snapshot::Package {
                name: name.into(),
                version: version.into(),
                location: "/opt/torch/.venv/lib/python3.12/site-packages".into(),
            });
        }
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        let f = &f[0];
        assert!(
            f.cause
                .contains("numba-cuda 0.30.4, which uses `numpy.row_stack`"),
            "{}",
            f.cause
        );
        assert!(
            f.evidence.iter().any(|e| e.ends_with("arrayobj.py:6860")),
            "{:?}",
            f.evidence
        );
        assert_eq!(f.confidence, crate::Confidence::Likely);
        let fix = format!("{:?}", f.fix);
        assert!(fix.contains("numpy<2.5"), "{fix}");
        assert!(!fix.contains("cudoctor explain"), "{fix}");
        assert!(f.about.contains(&Subject::Package {
            env: "/opt/torch/.venv".into(),
            name: "numpy".into()
        }));

        // Without its owners (a Python older than 3.10 names none) the error is explained as before.
        let mut bare = probe;
        bare.result.as_mut().unwrap().api_gap = Some(cudoctor_snapshot::ApiGap {
            raised_in_distributions: vec![],
            ..gap
        });
        let f = run(&RULE, &with_probe(bare, true));
        assert!(format!("{:?}", f[0].fix).contains("cudoctor explain"));
    }

    /// A probe of `framework` in /opt/env, installed as `package`, that reported `result`.
    fn reported(framework: Framework, package: &str, result: &str) -> FrameworkProbe {
        FrameworkProbe {
            framework,
            package: package.into(),
            interpreter: "/opt/env/bin/python".into(),
            env_prefix: "/opt/env".into(),
            ending: ProbeEnding::Reported,
            result: Some(serde_json::from_str(result).unwrap()),
            ..Default::default()
        }
    }

    /// The reports the new probes wrote on a machine without a GPU or driver (the real-env tier's
    /// paddlepaddle-gpu, cudf-cu12 and dali-cuda120): each CUDA build is an error titled by what
    /// it did, with the framework's own words and what it did not compute.
    #[test]
    fn the_cuda_builds_without_a_gpu_are_judged_in_their_own_words() {
        let cases = [
            (
                Framework::Paddle,
                "paddlepaddle-gpu",
                r#"{"framework": "paddle", "devices": [], "version": "2.6.2", "runtime": "11.8", "gpu_error": "You are using GPU version Paddle, but your CUDA device is not set properly. CPU device will be used by default.", "platform": "cpu", "computation_ok": true, "computation_ms": 0.188, "messages": ["You are using GPU version Paddle, but your CUDA device is not set properly. CPU device will be used by default."], "elapsed_ms": 827.1}"#,
                "PaddlePaddle runs on the CPU in /opt/env, not on a GPU",
                "PaddlePaddle says: You are using GPU version Paddle, but your CUDA device is not set properly.",
            ),
            (
                Framework::Rapids,
                "cudf-cu12",
                r#"{"framework": "rapids", "devices": [], "version": "26.10.02", "runtime": "12.9", "platform": "none", "gpu_error": "CUDARuntimeError: cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version", "messages": [], "elapsed_ms": 3869.0}"#,
                "RAPIDS finds no GPU in /opt/env",
                "RAPIDS says: CUDARuntimeError: cudaErrorInsufficientDriver",
            ),
            (
                Framework::Dali,
                "nvidia-dali-cuda120",
                r#"{"framework": "dali", "devices": [], "version": "2.4.0", "platform": "none", "computation_skipped": "a DALI pipeline is too heavy for a probe: its backend's CUDA device count stands for it", "gpu_error": "RuntimeError: CUDA runtime API error cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version", "messages": [], "elapsed_ms": 1379.0}"#,
                "DALI finds no GPU in /opt/env",
                "not computed: a DALI pipeline is too heavy",
            ),
        ];
        for (framework, package, result, title, evidence) in cases {
            let f = run(
                &RULE,
                &with_probe(reported(framework, package, result), true),
            );
            assert_eq!(f.len(), 1, "{f:?}");
            assert_eq!(f[0].title, title);
            assert_eq!(f[0].severity, Severity::Error);
            assert!(
                f[0].evidence.iter().any(|e| e.starts_with(evidence)),
                "{evidence}: {:?}",
                f[0].evidence
            );
            // Its CPU build computing on the CPU is what it was installed for.
            assert!(run(
                &RULE,
                &with_probe(reported(framework, package, result), false)
            )
            .is_empty());
        }
    }

    /// llama-cpp-python with GPU offload whose CUDA back-end named no device (no model was
    /// loaded): where it computes is not known, and nothing is claimed.
    #[test]
    fn a_platform_the_probe_could_not_know_is_not_judged() {
        let unknown = r#"{"framework": "llama_cpp", "devices": [], "version": "0.3.16", "platform": "unknown", "computation_skipped": "no model to run", "messages": []}"#;
        let p = reported(Framework::LlamaCpp, "llama-cpp-python", unknown);
        assert!(run(&RULE, &with_probe(p, true)).is_empty());
        let none = r#"{"framework": "llama_cpp", "devices": [], "version": "0.3.16", "platform": "none", "gpu_error": "CUDA driver version is insufficient for CUDA runtime version", "messages": []}"#;
        let p = reported(Framework::LlamaCpp, "llama-cpp-python", none);
        let f = run(&RULE, &with_probe(p, true));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].title, "llama-cpp-python finds no GPU in /opt/env");
    }

    #[test]
    fn a_cpu_build_on_the_cpu_and_a_gpu_build_on_the_gpu_are_silent() {
        assert!(run(
            &RULE,
            &with_probe(jax(ProbeEnding::Reported, Some(fell_back())), false)
        )
        .is_empty());
        let on_gpu = FrameworkProbeResult {
            platform: Some("gpu".into()),
            devices: vec!["NVIDIA H200".into()],
            computation_ok: Some(true),
            ..Default::default()
        };
        assert!(run(
            &RULE,
            &with_probe(jax(ProbeEnding::Reported, Some(on_gpu)), true)
        )
        .is_empty());
    }

    #[test]
    fn a_crash_names_its_stage_and_the_fault_handlers_frame_without_guessing() {
        let mut p = jax(
            ProbeEnding::Crashed {
                signal: Some(11),
                exit_code: None,
            },
            None,
        );
        p.last_stage = Some("import jax".into());
        // The fault handler's output of the torch + jax[cuda13] + cupy env on this machine.
        p.stderr_tail = Some("Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f92a5255b80 (most recent call first):\n  File \"/opt/jax/lib/python3.11/site-packages/jax_plugins/xla_cuda13/__init__.py\", line 201 in _version_check\n  File \"/opt/jax/lib/python3.11/site-packages/jax_plugins/xla_cuda13/__init__.py\", line 258 in _check_cuda_versions\n".into());
        let f = run(&RULE, &with_probe(p, true));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].title, "JAX crashes during \"import jax\" in /opt/jax");
        assert!(f[0].evidence.iter().any(|e| e.contains("SIGSEGV")));
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("line 201 in _version_check")));
        assert!(f[0]
            .fix
            .iter()
            .any(|x| format!("{x:?}").contains("faulthandler")));
    }

    #[test]
    fn a_missing_module_of_a_cpu_build_is_silent_but_an_import_error_of_a_cuda_build_is_not() {
        let missing = FrameworkProbeResult {
            error: Some("ImportError: libcublasLt.so.13: cannot open shared object file: No such file or directory".into()),
            ..Default::default()
        };
        let f = run(
            &RULE,
            &with_probe(jax(ProbeEnding::Reported, Some(missing)), true),
        );
        assert_eq!(f.len(), 1);
        assert!(f[0].title.starts_with("JAX fails in /opt/jax: ImportError"));

        let no_module = FrameworkProbeResult {
            error: Some("ModuleNotFoundError: No module named 'jaxlib'".into()),
            error_kind: Some(FrameworkError::ModuleNotFound),
            ..Default::default()
        };
        let probe = || jax(ProbeEnding::Reported, Some(no_module.clone()));
        assert!(run(&RULE, &with_probe(probe(), false)).is_empty());
        assert_eq!(run(&RULE, &with_probe(probe(), true)).len(), 1);
    }
}
