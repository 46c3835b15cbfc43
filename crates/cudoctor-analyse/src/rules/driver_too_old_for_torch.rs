use cudoctor_kb::{CudaVersion, DriverSupport, DriverVersion};
use cudoctor_plan::DriverFor;

use crate::context::TorchEnv;
use crate::frameworks::FrameworkView;
use crate::{Confidence, Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "DRV004",
    name: "driver-too-old-for-torch",
    layer: Layer::Driver,
    severity: Severity::Error,
    summary: "The driver cannot run the CUDA runtime of an installed framework build (torch, JAX, CuPy, ONNX Runtime, TensorFlow, vLLM)",
    docs: r#"## What it checks
The CUDA version each framework build was made for against the driver: torch's
(`torch/version.py`, the `+cuXXX` of the wheel), JAX's CUDA plugin (`jax-cuda12-plugin`, the
minor from the CUDA runtime wheel it loads), CuPy's wheel (`cupy-cuda12x`), ONNX Runtime's and
TensorFlow's build info, a vLLM build's `+cuXXX`. Judged by NVIDIA's rules: a driver runs a CUDA runtime natively when it is at least that
toolkit's minimum driver; since CUDA 11.1 it also runs any newer runtime *of the same major*
through minor-version compatibility when it is at least the major's floor (450.80.02 for 11.x,
525.60.13 for 12.x, 580 for 13.x). The often-quoted rule "torch's CUDA must be <= the CUDA Version
nvidia-smi shows" is stricter than NVIDIA's: this rule says which case applies.

## Why it matters
A runtime the driver cannot carry fails at the first CUDA call: "The NVIDIA driver on your
system is too old (found version 11040)", or `torch.cuda.is_available()` is False with "CUDA
driver version is insufficient for CUDA runtime version". Through minor-version compatibility
most code runs, but PTX newer than the driver cannot be JIT-compiled.

Where only the major is fixed (`cupy-cuda12x` loads whichever CUDA 12 runtime it finds), the
build is judged by its major's floor.

## How to fix
Either upgrade the driver to the branch the report names, or install the framework's build for
a CUDA version this driver carries (the report prints the command in the environment's
installer: the torch build the chooser picks, `jax[cuda12]`, `cupy-cuda12x`).
"#,
    check,
};

/// A driver that does not drive the GPUs (DRV006) is why a torch's CUDA finds no driver when
/// the driver is all this finding changes (it is about the driver): that driver change first.
pub static FOLLOWS: crate::rule::Follows = crate::rule::Follows {
    rule: &RULE,
    cause: &super::driver_not_for_gpu::RULE,
    sharing: crate::rule::Sharing::Driver,
};

/// Its findings are about one environment's torch build, whose chooser's command set repairs them: rank 1 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::TorchBuild,
    rank: 1,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(driver) = ctx.driver_version() else {
        return Vec::new();
    };
    let max = ctx.driver_max_cuda();
    let mut out: Vec<Finding> = ctx
        .torch_envs()
        .into_iter()
        .filter_map(|t| judge(ctx, &driver, max.as_ref(), t))
        .collect();
    // Every other framework build: the same rules, its own remedy.
    out.extend(
        ctx.other_frameworks()
            .into_iter()
            .filter_map(|v| judge_framework(ctx, &driver, max.as_ref(), v)),
    );
    out
}

fn judge_framework(
    ctx: &Context,
    driver: &DriverVersion,
    max: Option<&(CudaVersion, String)>,
    v: FrameworkView,
) -> Option<Finding> {
    let cuda = v.cuda_least()?;
    let minor_known = v.build.cuda.as_ref()?.minor.is_some();
    let label = v.build.cuda.as_ref()?.label();
    if max.is_some_and(|(m, _)| *m >= cuda) {
        return None;
    }
    let name = v.build.framework.name();
    let mut f = Finding::new(&RULE, "")
        .evidence(ctx.driver_evidence())
        .evidence(v.cuda_evidence()?)
        .about(Subject::Package {
            env: v.env.prefix.clone(),
            name: v.build.package.clone(),
        });
    if let Some((c, src)) = max {
        f = f.evidence(format!("driver's highest CUDA: {c} (from {src})"));
    }
    match ctx.driver_support(driver, cuda) {
        DriverSupport::Native => None,
        // Only the major fixed: any minor of it runs at or above the major's floor.
        DriverSupport::MinorVersionCompat { .. } if !minor_known => None,
        DriverSupport::MinorVersionCompat { floor } => {
            let mut f = f.severity(Severity::Info).cause(format!(
                "CUDA {cuda} is newer than this driver's own CUDA, but the driver is at or above the CUDA {}.x floor ({floor}), so NVIDIA's minor-version compatibility runs it. Limits: PTX newer than the driver cannot be JIT-compiled, and a few newer APIs are missing.",
                cuda.major
            ));
            f.title = format!(
                "{name}'s CUDA {label} runs on driver {driver} through minor-version compatibility"
            );
            Some(f.prose(format!(
                "Nothing required. For full native support, upgrade the driver to {} or newer.",
                native_min(ctx, cuda)
            )))
        }
        DriverSupport::TooOld {
            needed_native,
            needed_floor,
        } => {
            let least = needed_floor.clone().or(needed_native.clone());
            let mut f = f.cause(match &needed_floor {
                Some(floor) => format!(
                    "{name} here is built for CUDA {label}. This driver is below the CUDA {}.x minor-version-compatibility floor ({floor}), so its CUDA runtime refuses the driver: the first CUDA call fails (\"CUDA driver version is insufficient for CUDA runtime version\", CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) or the framework falls back to the CPU.",
                    cuda.major
                ),
                None => format!("{name} here is built for CUDA {label}, which needs a newer driver than {driver}."),
            });
            f.title = format!("Driver {driver} is too old for {}", v.label());
            let (mut f, upgradable) = driver_upgrade(ctx, f, cuda, least);
            // Keeping the driver: the environment on the CUDA major it keeps (the one this
            // driver runs, or torch's), every framework build moved to it at once, as FW020
            // and `plan` write it; a root whose fix moves this build is its cause.
            let runs = max.map(|(m, _)| m.major).filter(|m| *m < cuda.major);
            let (cur, remedy, keep) = ctx.env_cuda_major(v.env);
            let keep = keep.filter(|k| runs.is_some_and(|r| *k <= r));
            if let Some(keep) = keep {
                let moves = remedy.as_ref().filter(|r| r.moves_torch());
                let (one, moved) = ctx.env_on_major(v.env, &cur, keep, moves);
                let label = crate::context::other_build(v.env, v.build).map(|b| b.label());
                let fits = one
                    .frameworks
                    .iter()
                    .find(|fit| Some(&fit.build) == label.as_ref());
                match fits.and_then(|fit| fit.separate.clone()) {
                    Some(why) => f = f.prose(why),
                    None if !one.steps.is_empty() => {
                        f = f.prose(format!(
                            "{} move the environment to CUDA {keep}, {name} with it:",
                            if upgradable {
                                "or keep the driver and"
                            } else {
                                "Keep the driver and"
                            }
                        ));
                        f = f.steps(one.steps);
                        for n in moved {
                            f = f.about(Subject::MovesFramework {
                                env: v.env.prefix.clone(),
                                name: n,
                            });
                        }
                    }
                    None => {}
                }
            }
            Some(f)
        }
        DriverSupport::Unknown => {
            let mut f = f
                .severity(Severity::Warning)
                .confidence(Confidence::Unsure)
                .cause(format!("The knowledge base has no minimum driver for CUDA {cuda}, and the driver's highest CUDA is lower. It may not run; this cannot be decided from known facts."));
            f.title = format!("Unsure whether driver {driver} runs {name}'s CUDA {label}");
            Some(f)
        }
    }
}

fn judge(
    ctx: &Context,
    driver: &DriverVersion,
    max: Option<&(CudaVersion, String)>,
    t: TorchEnv,
) -> Option<Finding> {
    let cuda = t.cuda()?;
    let torch_ev = format!("{} built for CUDA {cuda} (torch/version.py)", t.label());
    let max_ev = max.map(|(c, src)| format!("driver's highest CUDA: {c} (from {src})"));
    // The driver's own answer is final when it covers the runtime.
    if max.is_some_and(|(m, _)| *m >= cuda) {
        return None;
    }
    let support = ctx.driver_support(driver, cuda);
    let mut f = Finding::new(&RULE, "")
        .evidence(ctx.driver_evidence())
        .evidence(torch_ev);
    if let Some(m) = max_ev {
        f = f.evidence(m);
    }
    match support {
        DriverSupport::Native => None,
        DriverSupport::MinorVersionCompat { floor } => {
            let mut f = f
                .severity(Severity::Info)
                .cause(format!(
                    "CUDA {cuda} is newer than this driver's own CUDA, but the driver is at or above the CUDA {}.x floor ({floor}), so NVIDIA's minor-version compatibility runs it. The tutorial rule \"torch CUDA <= nvidia-smi CUDA\" is too strict here. Limits: PTX newer than the driver cannot be JIT-compiled, and a few newer APIs are missing.",
                    cuda.major
                ));
            f.title = format!(
                "torch's CUDA {cuda} runs on driver {driver} through minor-version compatibility"
            );
            f = f.prose(format!(
                "Nothing required. For full native support, upgrade the driver to {} or newer.",
                native_min(ctx, cuda)
            ));
            Some(f)
        }
        DriverSupport::TooOld {
            needed_native,
            needed_floor,
        } => {
            let least = needed_floor.clone().or(needed_native.clone());
            let mut f = f.cause(match &needed_floor {
                Some(floor) => format!(
                    "torch bundles the CUDA {cuda} runtime. This driver is below the CUDA {}.x minor-version-compatibility floor ({floor}), so the runtime refuses it: CUDA calls fail with \"driver too old\" / \"CUDA driver version is insufficient\".",
                    cuda.major
                ),
                None => format!("torch bundles the CUDA {cuda} runtime, which needs a newer driver than {driver}."),
            });
            f.title = format!("Driver {driver} is too old for {}", t.label());
            let (mut f, upgradable) = driver_upgrade(ctx, f, cuda, least);
            match ctx.torch_remedy(t) {
                Some(r) => {
                    f = f.prose(if upgradable {
                        "or keep the driver and install a torch build it runs:"
                    } else {
                        "Keep the driver and install a torch build it runs:"
                    });
                    f = ctx.with_torch_repair(f, t, r);
                }
                // The build stays: the driver is the one thing to change, so the finding is
                // about the driver too (a driver that does not drive the GPUs is its cause).
                None if upgradable => f = f.about(Subject::Driver),
                None => {}
            }
            f = f.about(Subject::TorchBuild {
                env: t.env.prefix.clone(),
            });
            Some(f)
        }
        DriverSupport::Unknown => {
            let mut f = f
                .severity(Severity::Warning)
                .confidence(Confidence::Unsure)
                .cause(format!("The knowledge base has no minimum driver for CUDA {cuda}, and the driver's highest CUDA is lower. It may not run; this cannot be decided from known facts."));
            f.title = format!("Unsure whether driver {driver} runs torch's CUDA {cuda}");
            Some(f)
        }
    }
}

/// The driver-upgrade step of a runtime the driver refuses, by the GPUs' driver branches (the
/// chooser's): the branch range to install, or, when the GPUs' last branch is older than the
/// least driver for `cuda`, the reason no driver upgrade can run it. Returns whether an upgrade
/// is a way out.
fn driver_upgrade(
    ctx: &Context,
    f: Finding,
    cuda: CudaVersion,
    least: Option<DriverVersion>,
) -> (Finding, bool) {
    match ctx.driver_for_cuda(cuda) {
        Some(DriverFor::PastLastBranch {
            least,
            last,
            gpu,
            sources,
        }) => {
            let mut f = f.evidence(format!(
                "R{last} is the last driver branch for {gpu} ({})",
                sources.join("; ")
            ));
            f = f.prose(format!(
                "No driver upgrade runs CUDA {cuda} on {gpu}: it needs driver {least} or newer, and R{last} is the last branch that drives this GPU"
            ));
            (f, false)
        }
        Some(DriverFor::Upgrade {
            least, branches, ..
        }) => (
            f.prose(format!(
                "Upgrade the NVIDIA driver to {least} or newer ({branches}), then reboot"
            )),
            true,
        ),
        None => match least {
            Some(least) => (
                f.prose(format!(
                    "Upgrade the NVIDIA driver to {least} or newer (branch R{} or later), then reboot",
                    cudoctor_plan::branch_of(ctx.kb, ctx.platform(), &least)
                )),
                true,
            ),
            None => (f, false),
        },
    }
}

fn native_min(ctx: &Context, cuda: CudaVersion) -> String {
    ctx.toolkit_min_driver(cuda)
        .map(|d| d.to_string())
        .unwrap_or_else(|| "the driver that ships with it".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn with_torch(driver: &str, max: &str, torch: &str, cuda: &str) -> Vec<Finding> {
        let mut s = machine(Some((driver, max)), &[("NVIDIA A100-SXM4-80GB", "8.0")]);
        s.python_envs.push(torch_env("/v", torch, Some(cuda), &[]));
        run(&RULE, &s)
    }

    /// A Windows tree's driver, read from its DLLs: a version, no highest CUDA, no GPUs.
    fn windows_with_torch(driver: &str, torch: &str, cuda: &str) -> Vec<Finding> {
        let mut s = machine(Some((driver, "")), &[]);
        s.host.os = "windows".into();
        s.host.arch = "x86_64".into();
        s.driver.max_cuda = None;
        s.python_envs.push(torch_env("/v", torch, Some(cuda), &[]));
        run(&RULE, &s)
    }

    #[test]
    fn a_windows_driver_is_judged_by_the_windows_minimums_and_floors() {
        // 560.94 runs CUDA 12.9 through the 12.x Windows floor (528.33); natively from 576.02,
        // CUDA 12.9's Windows minimum (Linux's are 525.60.13 and 575.51.03).
        let f = windows_with_torch("560.94", "2.9.0+cu129", "12.9");
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].cause.contains("(528.33)"), "{}", f[0].cause);
        assert!(
            f[0].fix.iter().any(|s| s.contains("576.02")),
            "{:?}",
            f[0].fix
        );
        // 526.98 is above Linux's 12.x floor but below Windows's: CUDA 12.1 does not run.
        let f = windows_with_torch("526.98", "2.1.0+cu121", "12.1");
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].cause.contains("(528.33)"), "{}", f[0].cause);
        // Windows numbers run past their branch: 528.33 is an R525 driver, there is no R528.
        let fix = format!("{:?}", f[0].fix);
        assert!(fix.contains("R525"), "{fix}");
        assert!(!fix.contains("R528"), "{fix}");
        // CUDA 12.6 runs natively on 560.94 (Windows minimum 560.76).
        assert!(windows_with_torch("560.94", "2.9.0+cu126", "12.6").is_empty());
    }

    #[test]
    fn a_driver_that_covers_the_runtime_is_silent() {
        assert!(run(&RULE, &h200()).is_empty());
        assert!(with_torch("550.54.14", "12.4", "2.5.1+cu121", "12.1").is_empty());
    }

    #[test]
    fn a_newer_minor_of_the_same_major_runs_through_minor_version_compatibility() {
        let f = with_torch("535.104.05", "12.2", "2.7.0+cu128", "12.8");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].cause.contains("minor-version compatibility"));
    }

    #[test]
    fn a_newer_major_is_an_error_with_both_fixes() {
        let f = with_torch("535.104.05", "12.2", "2.11.0+cu130", "13.0");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].fix[0].contains("580"), "{:?}", f[0].fix);
        assert!(
            f[0].fix
                .iter()
                .any(|x| x.contains("--index-url https://download.pytorch.org/whl/cu12")),
            "{:?}",
            f[0].fix
        );
    }

    #[test]
    fn a_gpu_whose_last_branch_is_older_gets_no_driver_upgrade() {
        // Kepler: R470 is its last branch, CUDA 13 needs R580.
        let mut s = machine(Some(("470.256.02", "11.4")), &[("Tesla K80", "3.7")]);
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        let fix: Vec<&str> = f[0].fix.iter().map(|x| x.text()).collect();
        assert!(
            fix.iter().all(|x| !x.contains("Upgrade the NVIDIA driver")),
            "{fix:?}"
        );
        assert!(
            fix[0].contains("R470 is the last branch that drives this GPU"),
            "{fix:?}"
        );
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.starts_with("R470 is the last driver branch for")),
            "{:?}",
            f[0].evidence
        );
        assert!(
            fix.iter().all(|x| !x.starts_with("or keep")),
            "no alternative to an impossible upgrade: {fix:?}"
        );
        // Volta on R535 with a CUDA 13 torch: R580 is both the least and its last branch.
        let mut s = machine(
            Some(("535.274.02", "12.2")),
            &[("Tesla V100-SXM2-32GB", "7.0")],
        );
        s.python_envs
            .push(torch_env("/v", "2.11.0+cu130", Some("13.0"), &[]));
        let f = run(&RULE, &s);
        assert!(
            f[0].fix[0].text().contains("or newer (R580), then reboot"),
            "{:?}",
            f[0].fix
        );
    }

    #[test]
    fn below_the_major_floor_is_an_error() {
        let f = with_torch("470.82.01", "11.4", "2.1.0+cu121", "12.1");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].fix[0].contains("525.60.13"), "{:?}", f[0].fix);
    }

    #[test]
    fn cpu_torch_is_not_judged_here() {
        let mut s = machine(Some(("470.82.01", "11.4")), &[]);
        s.python_envs.push(torch_env("/v", "2.5.1+cpu", None, &[]));
        assert!(run(&RULE, &s).is_empty());
    }
}

#[cfg(test)]
mod framework_tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{CompanionPin, CudaBinding, Framework, FrameworkBuild, PythonEnv};

    /// An env with one framework build (what the collector reads from the real wheels).
    fn env_with(build: FrameworkBuild, packages: &[(&str, &str)]) -> PythonEnv {
        PythonEnv {
            frameworks: vec![build],
            ..packages_env("3.12", "3.12.3", packages)
        }
    }

    fn jax13() -> FrameworkBuild {
        FrameworkBuild {
            framework: Framework::Jax,
            version: "0.10.2".into(),
            package: "jax-cuda13-plugin".into(),
            cuda: Some(CudaBinding {
                major: 13,
                minor: Some(0),
                read: "cuda13".into(),
                source: "distribution name jax-cuda13-plugin".into(),
            }),
            companions: vec![CompanionPin {
                required_by: "jax 0.10.2".into(),
                requirement: r#"jax-cuda12-plugin[with-cuda]<=0.10.2,>=0.10.2; extra == "cuda12""#
                    .into(),
                name: "jax-cuda12-plugin".into(),
                installed: None,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_jax_for_cuda13_on_an_r550_driver_is_an_error_with_the_cuda12_build_as_fix() {
        let mut s = machine(
            Some(("550.54.14", "12.4")),
            &[("NVIDIA H100 80GB HBM3", "9.0")],
        );
        s.python_envs.push(env_with(
            jax13(),
            &[
                ("jax", "0.10.2"),
                ("jax-cuda13-plugin", "0.10.2"),
                ("jax-cuda13-pjrt", "0.10.2"),
            ],
        ));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].title.contains("JAX 0.10.2"), "{}", f[0].title);
        assert!(f[0].fix[0].contains("580"), "{:?}", f[0].fix);
        assert!(
            f[0].fix.iter().any(|x| x.text()
                == "/v/bin/python -m pip uninstall -y jax-cuda13-plugin jax-cuda13-pjrt"),
            "{:?}",
            f[0].fix
        );
        assert!(
            f[0].fix
                .iter()
                .any(|x| x.text() == "/v/bin/python -m pip install 'jax[cuda12]==0.10.2'"),
            "{:?}",
            f[0].fix
        );
        // A driver that carries CUDA 13: silent.
        s.driver = machine(Some(("580.95.05", "13.0")), &[]).driver;
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn a_major_only_build_is_judged_by_its_major_floor() {
        let cupy = |major: u32| FrameworkBuild {
            framework: Framework::Cupy,
            version: "14.2.0".into(),
            package: format!("cupy-cuda{major}x"),
            cuda: Some(CudaBinding {
                major,
                minor: None,
                read: format!("{major}.x"),
                source: format!("distribution name cupy-cuda{major}x"),
            }),
            ..Default::default()
        };
        // R535 carries 12.2 natively and every 12.x through minor-version compatibility.
        let mut s = machine(Some(("535.104.05", "12.2")), &[]);
        s.python_envs
            .push(env_with(cupy(12), &[("cupy-cuda12x", "14.2.0")]));
        assert!(run(&RULE, &s).is_empty());
        // R470 is below the CUDA 12 floor.
        s.driver = machine(Some(("470.82.01", "11.4")), &[]).driver;
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.contains("CUDA 12.x (distribution name cupy-cuda12x)")),
            "{:?}",
            f[0].evidence
        );
        assert!(f[0].fix[0].contains("525.60.13"), "{:?}", f[0].fix);
    }
}
