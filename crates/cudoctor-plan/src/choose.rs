//! Choosing the build: the newest release with a variant that this driver runs, whose kernels
//! reach every GPU, for this Python; then what to avoid, and the driver upgrade that would give a
//! better stack.

use cudoctor_kb::{DriverSupport, DriverVersion, Kb, TorchRelease, TorchVersion};

use crate::fit::Fit;
use crate::model::{Avoid, DriverUpgrade, Plan, PlanInput, ResolvedGpu};
use crate::{build, commands, current, resolve_gpus, PlanError};

/// How many skipped newer releases the reasons spell out.
const SKIPPED_SHOWN: usize = 4;

/// Releases to consider, newest first: all, or those matching the wanted release / series.
fn candidate_releases<'k>(
    kb: &'k Kb,
    wanted: Option<&str>,
) -> Result<Vec<&'k TorchRelease>, PlanError> {
    let all = kb.torch_releases().iter().rev();
    let Some(w) = wanted else {
        return Ok(all.collect());
    };
    let parsed: TorchVersion = w
        .parse()
        .map_err(|_| PlanError::UnknownTorch(w.to_string()))?;
    let out: Vec<_> = all
        .filter(|r| {
            r.parsed_version().is_some_and(|v| {
                if parsed.parts.len() == 2 {
                    v.series() == parsed.series()
                } else {
                    v.parts == parsed.parts
                }
            })
        })
        .collect();
    if out.is_empty() {
        return Err(PlanError::UnknownTorch(w.to_string()));
    }
    Ok(out)
}

/// The outcome of a search over releases.
pub(crate) struct Search<'k> {
    pub(crate) chosen: Option<Fit<'k>>,
    /// Newer releases passed over, with why.
    skipped: Vec<String>,
}

pub(crate) fn search<'k>(
    kb: &'k Kb,
    releases: &[&'k TorchRelease],
    input: &PlanInput,
    driver: Option<&DriverVersion>,
    gpus: &[ResolvedGpu],
) -> Search<'k> {
    let mut skipped = Vec::new();
    for release in releases {
        if let Some(py) = &input.python {
            if !release.supports_python_stack(py) {
                skipped.push(format!(
                    "torch {} and its companions have no wheels for Python {} together (they do for {})",
                    release.version,
                    cudoctor_kb::python_series(py),
                    release.stack_python().join(", ")
                ));
                continue;
            }
        }
        let fits: Vec<Fit<'k>> = release
            .variants
            .iter()
            .filter(|v| input.cuda.is_none_or(|c| v.cuda == c))
            .map(|v| Fit::new(kb, release, v, driver, gpus))
            .collect();
        let best = fits
            .iter()
            .filter(|f| f.rejection(driver).is_none())
            .max_by_key(|f| f.preference());
        if let Some(best) = best {
            return Search {
                chosen: Some(best.clone()),
                skipped,
            };
        }
        let mut why: Vec<String> = fits.iter().filter_map(|f| f.rejection(driver)).collect();
        if release.variants_incomplete {
            why.push(format!(
                "(only some CUDA variants of torch {} are in the knowledge base; another variant may fit)",
                release.version
            ));
        }
        if why.is_empty() {
            skipped.push(format!(
                "torch {} has no {} build",
                release.version,
                input.cuda.map(|c| format!("CUDA {c}")).unwrap_or_default()
            ));
        } else {
            skipped.push(why.join("; "));
        }
    }
    Search {
        chosen: None,
        skipped,
    }
}

/// Makes the plan. Errors only for inputs it cannot read (unknown GPU name, unknown release).
pub fn plan(kb: &Kb, input: &PlanInput) -> Result<Plan, PlanError> {
    let gpus = resolve_gpus(kb, &input.gpus)?;
    let releases = candidate_releases(kb, input.torch.as_deref())?;
    if let (Some(t), Some(c)) = (&input.torch, input.cuda) {
        if !releases
            .iter()
            .any(|r| r.variants.iter().any(|v| v.cuda == c))
        {
            let variants = releases
                .iter()
                .flat_map(|r| r.variants.iter().map(|v| v.tag.clone()))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
                .join(", ");
            return Err(PlanError::NoSuchVariant {
                torch: t.clone(),
                cuda: c.to_string(),
                variants,
            });
        }
    }
    let mut plan = Plan {
        gpus: gpus.clone(),
        ..Plan::default()
    };
    if input.python.is_none() {
        plan.warnings.push(
            "Python version not given: the chosen release's Python support was not checked".into(),
        );
    }
    // GPU floors of torch features (knowledge base): said, not chosen around.
    for floor in kb.torch_floors() {
        for g in gpus
            .iter()
            .filter(|g| floor.min_cc.is_some_and(|min| g.cc < min))
        {
            plan.warnings.push(format!(
                "{} ({}): {} ({})",
                g.given, g.cc, floor.what, floor.source
            ));
        }
    }
    let cpu_only = gpus.is_empty() && input.driver.is_none() && input.cuda.is_none();
    if cpu_only {
        cpu_plan(kb, &releases, input, &mut plan);
    } else {
        gpu_plan(kb, &releases, input, &gpus, &mut plan);
    }
    if input.installer == crate::Installer::Conda
        && plan.variant.is_some()
        && plan.commands.conda.is_none()
    {
        plan.warnings.push(
            "no conda command for this build (see the notes under the commands): run the pip command inside the conda env".into(),
        );
    }
    plan.remedy = crate::remedy::remedy(kb, input)?;
    if let Some(cur) = &input.current {
        plan.current = Some(current::judge(kb, cur, input, &gpus, &plan));
    }
    Ok(plan)
}

fn cpu_plan(kb: &Kb, releases: &[&TorchRelease], input: &PlanInput, plan: &mut Plan) {
    plan.reasons
        .push("no NVIDIA GPU and no driver given: the CPU build of PyTorch".into());
    let chosen = releases.iter().find(|r| {
        input
            .python
            .as_ref()
            .is_none_or(|py| r.supports_python_stack(py))
    });
    let Some(release) = chosen else {
        plan.reasons.push(format!(
            "no release in the knowledge base has wheels for Python {}",
            input.python.as_deref().unwrap_or("?")
        ));
        return;
    };
    set_release(plan, release, "cpu");
    plan.reasons.push(format!(
        "torch {} is the newest release{} in the knowledge base",
        release.version,
        python_clause(input)
    ));
    if let Some(newest) = releases.first() {
        if let Some(default) = &newest.pypi_default {
            plan.avoid.push(Avoid {
                what: "plain `pip install torch` on Linux".into(),
                why: format!(
                    "PyPI's Linux wheel of torch {} is the {default} CUDA build: gigabytes of CUDA libraries this machine cannot use",
                    newest.version
                ),
            });
        }
    }
    plan.commands = commands::commands(release, "cpu");
    let _ = kb;
}

fn python_clause(input: &PlanInput) -> String {
    input
        .python
        .as_ref()
        .map(|p| format!(" with wheels for Python {}", cudoctor_kb::python_series(p)))
        .unwrap_or_default()
}

fn set_release(plan: &mut Plan, release: &TorchRelease, tag: &str) {
    plan.variant = Some(tag.to_string());
    plan.torch = Some(release.version.clone());
    plan.torchvision = release.torchvision.clone();
    plan.torchaudio = release.torchaudio.clone();
}

fn gpu_plan(
    kb: &Kb,
    releases: &[&TorchRelease],
    input: &PlanInput,
    gpus: &[ResolvedGpu],
    plan: &mut Plan,
) {
    let driver = input.driver.as_ref();
    driver_reasons(kb, driver, gpus, plan);
    let found = search(kb, releases, input, driver, gpus);

    if let Some(fit) = &found.chosen {
        set_release(plan, fit.release, &fit.variant.tag);
        chosen_reasons(kb, fit, driver, input, plan);
        plan.commands = commands::commands(fit.release, &fit.variant.tag);
        if let Some(b) = &input.build {
            plan.build = Some(build::plan(kb, fit, gpus, b));
        }
    } else {
        plan.reasons
            .push("no release in the knowledge base fits every constraint".into());
    }
    let shown = found.skipped.len().min(SKIPPED_SHOWN);
    for s in found.skipped.iter().take(shown) {
        plan.reasons.push(format!("passed over: {s}"));
    }
    if found.skipped.len() > shown {
        plan.reasons.push(format!(
            "passed over {} more release(s) for the same reasons",
            found.skipped.len() - shown
        ));
    }

    avoid(kb, releases, found.chosen.as_ref(), driver, gpus, plan);

    if let Some(d) = driver {
        plan.driver_upgrade = driver_upgrade(kb, releases, input, d, gpus, found.chosen.as_ref());
    }
    if let Some(fit) = &found.chosen {
        if driver.is_none() && !gpus.is_empty() {
            let c = fit.variant.cuda;
            let need = kb
                .toolkit_min_driver(c)
                .map(|m| format!(">= {m} (R{} or newer)", m.branch()))
                .unwrap_or_else(|| {
                    "a driver for this CUDA (minimum not in the knowledge base)".into()
                });
            plan.warnings.push(format!(
                "no NVIDIA driver given: {} needs driver {need}",
                fit.variant.tag
            ));
        }
    }
}

fn driver_reasons(kb: &Kb, driver: Option<&DriverVersion>, gpus: &[ResolvedGpu], plan: &mut Plan) {
    if let Some(d) = driver {
        let line = match kb.driver_max_cuda(d) {
            Some(max) => {
                let mut s = format!("driver {d} (R{}) runs CUDA up to {max} natively", d.branch());
                if let Some(floor) = kb.minor_compat_floor(max.major) {
                    if d >= &floor {
                        s.push_str(&format!(
                            ", and newer {}.x builds through NVIDIA's minor-version compatibility (floor {floor})",
                            max.major
                        ));
                    }
                }
                s
            }
            None => format!(
                "driver {d}: the highest CUDA of branch R{} is not in the knowledge base; each build is checked against its toolkit's minimum driver and NVIDIA's minor-version floors",
                d.branch()
            ),
        };
        plan.reasons.push(line);
    }
    if gpus.is_empty() {
        plan.warnings
            .push("no GPUs given: kernel-image coverage was not checked".into());
    }
}

fn chosen_reasons(
    kb: &Kb,
    fit: &Fit<'_>,
    driver: Option<&DriverVersion>,
    input: &PlanInput,
    plan: &mut Plan,
) {
    let (r, v) = (fit.release, fit.variant);
    if let (Some(support), Some(d)) = (&fit.driver, driver) {
        let min = kb.toolkit_min_driver(v.cuda);
        plan.reasons.push(match support {
            DriverSupport::Native => format!(
                "{} (CUDA {}) runs natively on driver {d}{}",
                v.tag,
                v.cuda,
                min.map(|m| format!(" (needs >= {m})")).unwrap_or_default()
            ),
            DriverSupport::MinorVersionCompat { floor } => format!(
                "{} (CUDA {}) runs on driver {d} through NVIDIA's minor-version compatibility: the driver is below CUDA {}'s own minimum{} but at or above the {}.x floor {floor} (PTX JIT is unavailable in this mode; this build needs none for these GPUs)",
                v.tag,
                v.cuda,
                v.cuda,
                min.map(|m| format!(" {m}")).unwrap_or_default(),
                v.cuda.major
            ),
            // Not chosen otherwise.
            DriverSupport::TooOld { .. } | DriverSupport::Unknown => String::new(),
        });
    }
    for (gpu, g) in plan.gpus.clone().iter().zip(&fit.gpus) {
        let name = gpu_label(gpu);
        plan.reasons.push(format!("{name}: {}", g.text()));
        if matches!(g, crate::fit::GpuFit::Unknown { .. }) {
            plan.warnings.push(format!(
                "{name}: kernel coverage of torch {} {} is not confirmed; after installing, `python -c \"import torch; print(torch.cuda.get_arch_list())\"` shows it",
                r.version, v.tag
            ));
        }
    }
    if input.python.is_some() {
        plan.reasons.push(format!(
            "torch {} has wheels for Python {}",
            r.version,
            input
                .python
                .as_deref()
                .map(cudoctor_kb::python_series)
                .unwrap_or_default()
        ));
    }
    plan.reasons.push(match &input.torch {
        Some(t) => format!(
            "torch {} is the newest release matching the requested {t} that fits",
            r.version
        ),
        None => format!(
            "torch {} is the newest release in the knowledge base that fits",
            r.version
        ),
    });
    if r.pypi_default.as_deref() == Some(v.tag.as_str()) {
        plan.reasons.push(format!(
            "{} is also the build PyPI serves for torch {} on Linux",
            v.tag, r.version
        ));
    }
    for note in &r.notes {
        plan.warnings.push(format!("torch {}: {note}", r.version));
    }
}

pub(crate) fn gpu_label(gpu: &ResolvedGpu) -> String {
    let sm = gpu.cc.sm();
    if gpu.given.eq_ignore_ascii_case(&sm) || gpu.given == gpu.cc.to_string() {
        match &gpu.architecture {
            Some(a) => format!("{sm} ({a})"),
            None => sm,
        }
    } else {
        format!("{} ({sm})", gpu.given)
    }
}

fn push_avoid(plan: &mut Plan, what: String, why: String) {
    if !plan.avoid.iter().any(|a| a.what == what) {
        plan.avoid.push(Avoid { what, why });
    }
}

fn avoid(
    kb: &Kb,
    releases: &[&TorchRelease],
    chosen: Option<&Fit<'_>>,
    driver: Option<&DriverVersion>,
    gpus: &[ResolvedGpu],
    plan: &mut Plan,
) {
    // Every other variant of the chosen release (and of the newest release) that cannot work.
    let mut looked_at: Vec<&TorchRelease> = Vec::new();
    if let Some(f) = chosen {
        looked_at.push(f.release);
    }
    if let Some(newest) = releases.first() {
        if !looked_at.iter().any(|r| r.version == newest.version) {
            looked_at.push(newest);
        }
    }
    for release in &looked_at {
        for v in &release.variants {
            let f = Fit::new(kb, release, v, driver, gpus);
            if let Some(why) = f.rejection(driver) {
                push_avoid(plan, format!("torch {} {}", release.version, v.tag), why);
            }
        }
    }
    let Some(newest) = releases.first() else {
        return;
    };
    // What a plain PyPI install gets.
    if let Some(v) = newest.pypi_default_variant() {
        let f = Fit::new(kb, newest, v, driver, gpus);
        if let Some(why) = f.rejection(driver) {
            push_avoid(
                plan,
                format!(
                    "plain `pip install torch` (torch {}, PyPI's {} build)",
                    newest.version, v.tag
                ),
                why,
            );
        }
    }
    // uv's automatic backend picks the newest CUDA the driver runs, ignoring the GPUs.
    if let Some(d) = driver {
        let auto = newest
            .variants
            .iter()
            .rev()
            .find(|v| kb.driver_support(d, v.cuda).runs() == Some(true));
        if let Some(v) = auto {
            let f = Fit::new(kb, newest, v, driver, gpus);
            if let Some(why) = f.rejection(driver) {
                push_avoid(
                    plan,
                    format!("`uv pip install torch --torch-backend=auto` (picks {} for this driver)", v.tag),
                    format!("uv chooses the backend from the driver version only, not from the GPUs' compute capability: {why}"),
                );
            }
        }
    }
}

fn driver_upgrade(
    kb: &Kb,
    releases: &[&TorchRelease],
    input: &PlanInput,
    d: &DriverVersion,
    gpus: &[ResolvedGpu],
    chosen: Option<&Fit<'_>>,
) -> Option<DriverUpgrade> {
    let free = search(kb, releases, input, None, gpus).chosen?;
    let better = match chosen {
        None => true,
        Some(c) => free.release.parsed_version() > c.release.parsed_version(),
    };
    if !better {
        return None;
    }
    // Of that release's fitting variants, the one that needs the least driver.
    let target = free
        .release
        .variants
        .iter()
        .filter(|v| input.cuda.is_none_or(|c| v.cuda == c))
        .map(|v| Fit::new(kb, free.release, v, None, gpus))
        .filter(|f| f.rejection(None).is_none())
        .min_by_key(|f| f.variant.cuda)?;
    let cuda = target.variant.cuda;
    let min = kb.toolkit_min_driver(cuda);
    let compat = if cuda.minor > 0 {
        kb.minor_compat_floor(cuda.major)
    } else {
        None
    };
    // The least branch that runs it at all; the native minimum is reported beside it.
    let branch = compat
        .as_ref()
        .or(min.as_ref())
        .map(|m| format!("R{} or newer", m.branch()));
    let need = match (&compat, &min) {
        (Some(f), Some(m)) => format!(
            "driver >= {f} runs CUDA {cuda} through minor-version compatibility, >= {m} natively"
        ),
        (None, Some(m)) => format!("driver >= {m} runs CUDA {cuda}"),
        (Some(f), None) => {
            format!("driver >= {f} runs CUDA {cuda} through minor-version compatibility")
        }
        (None, None) => format!("the driver minimum for CUDA {cuda} is not in the knowledge base"),
    };
    let why = match chosen {
        None => format!(
            "driver {d} runs no build that fits; {need}, which allows torch {} {}",
            free.release.version, target.variant.tag
        ),
        Some(c) => format!(
            "driver {d} limits you to torch {}; {need}, which allows torch {} {}",
            c.release.version, free.release.version, target.variant.tag
        ),
    };
    Some(DriverUpgrade {
        min_driver: min,
        min_driver_compat: compat,
        branch,
        torch: free.release.version.clone(),
        variant: target.variant.tag.clone(),
        why,
    })
}
