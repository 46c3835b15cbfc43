//! Choosing the build: the newest release with a variant that this driver runs, whose kernels
//! reach every GPU, for this Python; then what to avoid, and the driver upgrade that would give a
//! better stack.

use cudoctor_kb::{DriverSupport, DriverVersion, Kb, Platform, TorchRelease, TorchVersion};

use crate::fit::Fit;
use crate::model::{Avoid, Commands, DriverUpgrade, Plan, PlanInput, ResolvedGpu};
use crate::{build, current, resolve_gpus, PlanError};

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
    let platform = input.platform;
    let range = crate::platform::driver_range(gpus);
    // A driver that does not drive these GPUs constrains nothing: the driver has to change, and
    // the build is chosen for a driver the GPUs work with (at most their last branch).
    let driver = driver.filter(|d| range.rejects(kb, platform, d).is_none());
    let capped = driver.is_none() && range.last.is_some();
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
        let on_platform = match crate::platform::variants(kb, platform, release) {
            Ok(v) => v,
            Err(why) => {
                skipped.push(why);
                continue;
            }
        };
        let fits: Vec<Fit<'k>> = on_platform
            .into_iter()
            .filter(|v| input.cuda.is_none_or(|c| v.cuda == c))
            .map(|v| Fit::new(kb, platform, release, v, driver, gpus))
            .collect();
        let cap = |f: &Fit| {
            capped
                .then(|| range.caps(kb, platform, f.release, f.variant))
                .flatten()
        };
        let best = fits
            .iter()
            .filter(|f| f.rejection(driver).is_none() && cap(f).is_none())
            .max_by_key(|f| f.preference());
        if let Some(best) = best {
            return Search {
                chosen: Some(best.clone()),
                skipped,
            };
        }
        let mut why: Vec<String> = fits
            .iter()
            .filter_map(|f| f.rejection(driver).or_else(|| cap(f)))
            .collect();
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
        platform: input.platform,
        ..Plan::default()
    };
    // Jetson modules named on another platform: their software comes with JetPack.
    let all_jetson = !gpus.is_empty() && gpus.iter().all(|g| g.branches.jetson);
    let jetson_input;
    let input = if all_jetson && input.platform != Platform::Jetson {
        plan.warnings.push(format!(
            "{} named for {}: a Jetson module runs JetPack, so the plan is for Jetson (--platform jetson)",
            gpus.iter().map(gpu_label).collect::<Vec<_>>().join(", "),
            input.platform.describe()
        ));
        plan.platform = Platform::Jetson;
        jetson_input = PlanInput {
            platform: Platform::Jetson,
            ..input.clone()
        };
        &jetson_input
    } else {
        input
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
    if input.platform == Platform::Jetson {
        jetson_plan(&gpus, &mut plan);
    } else if let Some(first) = input.first.as_ref().filter(|_| cpu_only) {
        unreachable_plan(kb, input, first, &mut plan);
    } else if cpu_only {
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
    env_command(kb, input, &mut plan);
    plan.remedy = crate::remedy::remedy(kb, input)?;
    plan.frameworks = frameworks(kb, input, &plan);
    if let Some(cur) = &input.current {
        plan.current = Some(current::judge(kb, cur, input, &gpus, &plan));
    }
    if let Some(f) = &input.first {
        // Whether the environment's build runs on the GPU waits for the fix; what is wrong with
        // the environment whatever the GPU (two CUDA majors, a companion of another release)
        // stays.
        if let Some(c) = plan.current.as_mut() {
            c.ok = false;
            c.findings.insert(
                0,
                crate::CurrentLine::GpuUnreachable(cudoctor_report::FindingRef::from(f)),
            );
        }
        plan.first = Some(f.clone());
    }
    Ok(plan)
}

/// The chosen build as the command for the environment being judged (`plan --python`): its
/// own installer naming its interpreter, never a bare `pip install` that lands in whatever pip
/// is first on PATH.
fn env_command(kb: &Kb, input: &PlanInput, plan: &mut Plan) {
    let (Some(target), Some(torch), Some(tag)) = (&input.target, &plan.torch, &plan.variant) else {
        return;
    };
    let Some(release) = kb.torch(torch) else {
        return;
    };
    // aarch64's one CUDA build is PyPI's own (no index, no label); elsewhere the variant's
    // index and label name exactly one wheel (on Windows, never PyPI's CPU build).
    let pypi_only = plan.platform == Platform::LinuxAarch64;
    let mut pins = vec![if pypi_only {
        format!("torch=={}", release.version)
    } else {
        format!("torch=={}+{tag}", release.version)
    }];
    // The companions paired with it (one with none paired is the remedy's to judge).
    for (name, v) in [
        ("torchvision", &release.torchvision),
        ("torchaudio", &release.torchaudio),
    ] {
        if let Some(v) = v {
            pins.push(format!("{name}=={v}"));
        }
    }
    let index = (!pypi_only).then(|| format!("{}/{tag}", crate::PYTORCH_INDEX));
    // The installer asked for (`--installer`) writes the command for this environment too:
    // uv can install into any interpreter, pip runs as the environment's own; conda only into
    // a conda environment.
    let mut target = target.clone();
    if input.installer_given && input.installer != target.installer {
        use crate::Installer::*;
        match (input.installer, target.installer) {
            (Conda, _) => plan.commands.notes.push(
                "no conda command for this environment: it is not a conda environment (no conda-meta); the command is its own installer's".into(),
            ),
            (Pip, Uv) => plan.commands.notes.push(
                "no pip command for this environment: it was made by uv and has no pip; the command is uv's".into(),
            ),
            (asked, _) => target.installer = asked,
        }
    }
    if let Some(n) = target.project_note(&crate::Install::pins(pins.clone()).index(index.clone())) {
        plan.commands.notes.push(n.text().to_string());
    }
    let (step, note) = target.install_build(pins, index, plan.commands.conda.as_deref());
    plan.commands.env = Some(step);
    if let Some(n) = note {
        plan.commands.notes.push(n);
    }
}

/// The plan while the machine's GPU is out of reach (a container without GPU access, no
/// driver where torch expects one): it shows no driver and no GPU, which says nothing of the
/// build the environment needs, so no CPU build is chosen over a CUDA one. The installed CUDA
/// build is the plan (kept; judged once the GPU is reachable); without one, no build is chosen.
fn unreachable_plan(kb: &Kb, input: &PlanInput, first: &cudoctor_report::Finding, plan: &mut Plan) {
    let installed = input.current.as_ref().and_then(|cur| {
        let text = cur.torch.as_deref()?;
        let v: TorchVersion = text.parse().ok()?;
        let tag = current::build_tag(&v, cur.torch_cuda)?;
        Some((text.to_string(), v, tag))
    });
    match installed {
        Some((text, v, tag)) if tag != "cpu" => match kb.torch(&v.public()) {
            Some(release) if release.variant(&tag).is_some() => {
                set_release(plan, release, &tag);
                plan.keeps_installed = true;
                plan.reasons.push(format!(
                    "the GPU is out of reach here ({}: {}): this machine shows no driver and no GPU, so no other build can be judged; the plan keeps the torch installed in this environment, torch {text} ({tag}), and judges it once the GPU is reachable",
                    first.code, first.title
                ));
                plan.commands = crate::platform::commands(kb, input.platform, release, &tag);
            }
            _ => plan.reasons.push(format!(
                "the GPU is out of reach here ({}: {}), and the installed torch {text} ({tag}) is not a build in the knowledge base: no build is chosen until the GPU is reachable",
                first.code, first.title
            )),
        },
        Some((text, _, _)) => plan.reasons.push(format!(
            "the GPU is out of reach here ({}: {}): the installed torch {text} is a CPU build, and which CUDA build this machine needs cannot be judged until the GPU is reachable (or name it: --gpu and --driver)",
            first.code, first.title
        )),
        None => plan.reasons.push(format!(
            "the GPU is out of reach here ({}: {}): which torch build this machine needs cannot be judged until the GPU is reachable (or name it: --gpu and --driver)",
            first.code, first.title
        )),
    }
}

/// The frameworks beside torch on the CUDA major torch ends at: its remedy's (or its own
/// build's) for the environment, the chosen build's for a what-if machine.
fn frameworks(kb: &Kb, input: &PlanInput, plan: &Plan) -> Option<crate::OneMajor> {
    let cur = input.current.as_ref()?;
    let (keep, target) = match &input.target {
        Some(t) => {
            let driver_major = input
                .driver
                .as_ref()
                .and_then(|d| kb.driver_max_cuda(d))
                .map(|c| c.major);
            (
                crate::kept_major(cur, plan.remedy.as_ref(), driver_major)?,
                t.clone(),
            )
        }
        None => (
            crate::frameworks::variant_major(plan.variant.as_deref()?)?,
            crate::TargetEnv::generic(),
        ),
    };
    // torch alone moving to another major: the wheels of the major it leaves go first (they
    // share folders with the new major's, and torch would preload them), as check's repair.
    let torch_leaves =
        plan.remedy.as_ref().is_some_and(|r| r.moves_torch()) && cur.has_wheels_beside(keep);
    if cur.others.is_empty() && !torch_leaves {
        return None;
    }
    Some(crate::one_major(
        kb,
        cur,
        input.python.as_deref(),
        &target,
        keep,
        plan.remedy.as_ref(),
    ))
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
        let default = kb.pypi_build(input.platform, &newest.version);
        if let Some(default) = default.filter(|d| *d != "cpu") {
            plan.avoid.push(Avoid {
                what: format!("plain `pip install torch` on {}", input.platform.describe()),
                why: format!(
                    "PyPI's {} wheel of torch {} is the {default} CUDA build: gigabytes of CUDA libraries this machine cannot use",
                    input.platform.describe(),
                    newest.version
                ),
            });
        }
    }
    plan.commands = crate::platform::commands(kb, input.platform, release, "cpu");
}

/// What to install on a Jetson, whose torch builds this knowledge base does not list: what
/// plan warns and what check's JetPack finding says.
pub const JETSON_INSTALL: &str = "the JetPack builds of torch are not in the knowledge base; install the wheel NVIDIA lists for your JetPack release (`cat /etc/nv_tegra_release` names the L4T release)";

/// Jetson: NVIDIA's JetPack builds, which this knowledge base does not list by version.
fn jetson_plan(gpus: &[ResolvedGpu], plan: &mut Plan) {
    plan.reasons.push(format!(
        "Jetson{}: the GPU is driven by JetPack (L4T), and torch's wheels on PyPI and PyTorch's index are not built for it; NVIDIA publishes PyTorch wheels per JetPack release — {}",
        if gpus.is_empty() {
            String::new()
        } else {
            format!(" ({})", gpus.iter().map(gpu_label).collect::<Vec<_>>().join(", "))
        },
        crate::platform::JETSON_SOURCE
    ));
    plan.warnings
        .push(format!("no install command: {JETSON_INSTALL}"));
    plan.commands = Commands {
        notes: vec![format!("Jetson: {}", crate::platform::JETSON_SOURCE)],
        ..Commands::default()
    };
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
    let platform = input.platform;
    let range = crate::platform::driver_range(gpus);
    let given_driver = input.driver.as_ref();
    driver_reasons(kb, platform, given_driver, gpus, plan);
    let out_of_range = given_driver.and_then(|d| range.rejects(kb, platform, d));
    if let Some(why) = &out_of_range {
        plan.reasons.push(format!(
            "{why} ({}); the build below is for a driver these GPUs work with",
            range.sources.join("; ")
        ));
    } else if let Some((last, who)) = &range.last {
        plan.reasons.push(format!(
            "R{last} is the last driver branch for {who} ({})",
            range.sources.join("; ")
        ));
    }
    // The driver the build is judged against: none when the present one cannot drive the GPUs.
    let driver = given_driver.filter(|_| out_of_range.is_none());
    if platform != Platform::LinuxX86_64 {
        plan.reasons.push(format!(
            "platform {}: only the builds this knowledge base records for it are considered",
            platform.describe()
        ));
    }
    let found = search(kb, releases, input, driver, gpus);

    if let Some(fit) = &found.chosen {
        set_release(plan, fit.release, &fit.variant.tag);
        chosen_reasons(kb, fit, driver, input, plan);
        plan.commands = crate::platform::commands(kb, platform, fit.release, &fit.variant.tag);
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

    avoid(
        kb,
        platform,
        releases,
        found.chosen.as_ref(),
        driver,
        gpus,
        plan,
    );

    if let (Some(d), Some(why)) = (given_driver, &out_of_range) {
        plan.driver_upgrade = Some(required_driver(
            kb,
            platform,
            &range,
            d,
            why,
            found.chosen.as_ref(),
        ));
    } else if let Some(d) = driver {
        plan.driver_upgrade = driver_upgrade(kb, releases, input, d, gpus, found.chosen.as_ref());
    }
    if let Some(fit) = &found.chosen {
        if given_driver.is_none() && !gpus.is_empty() {
            let c = fit.variant.cuda;
            let need = kb
                .least_driver_for(platform, c)
                .map(|m| {
                    let branches = range
                        .branch_for(kb, platform, Some(&m))
                        .unwrap_or_else(|| format!("R{} or newer", m.branch()));
                    format!(">= {m} ({branches})")
                })
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

fn driver_reasons(
    kb: &Kb,
    platform: Platform,
    driver: Option<&DriverVersion>,
    gpus: &[ResolvedGpu],
    plan: &mut Plan,
) {
    if let Some(d) = driver {
        let branch_ceiling = (platform != Platform::Windows)
            .then(|| kb.driver_max_cuda(d))
            .flatten();
        let line = match branch_ceiling {
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
            None if platform == Platform::Windows => format!(
                "Windows driver {d}: each build is checked against its toolkit's Windows minimum driver and NVIDIA's Windows minor-version floors"
            ),
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
    if kb.pypi_build(input.platform, &r.version) == Some(v.tag.as_str()) {
        plan.reasons.push(format!(
            "{} is also the build PyPI serves for torch {} on {}",
            v.tag,
            r.version,
            input.platform.describe()
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
    platform: Platform,
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
        let Ok(on_platform) = crate::platform::variants(kb, platform, release) else {
            continue;
        };
        for v in on_platform {
            let f = Fit::new(kb, platform, release, v, driver, gpus);
            if let Some(why) = f.rejection(driver) {
                push_avoid(plan, format!("torch {} {}", release.version, v.tag), why);
            }
        }
    }
    let Some(newest) = releases.first() else {
        return;
    };
    // What a plain PyPI install gets.
    let pypi = kb
        .pypi_build(platform, &newest.version)
        .and_then(|tag| newest.variant(tag));
    if let Some(v) = pypi {
        let f = Fit::new(kb, platform, newest, v, driver, gpus);
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
    if let (Some(d), Platform::LinuxX86_64) = (driver, platform) {
        let auto = newest
            .variants
            .iter()
            .rev()
            .find(|v| kb.driver_support(d, v.cuda).runs() == Some(true));
        if let Some(v) = auto {
            let f = Fit::new(kb, platform, newest, v, driver, gpus);
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
    let platform = input.platform;
    let range = crate::platform::driver_range(gpus);
    let target = crate::platform::variants(kb, platform, free.release)
        .ok()?
        .into_iter()
        .filter(|v| input.cuda.is_none_or(|c| v.cuda == c))
        .map(|v| Fit::new(kb, platform, free.release, v, None, gpus))
        .filter(|f| {
            f.rejection(None).is_none() && range.caps(kb, platform, f.release, f.variant).is_none()
        })
        .min_by_key(|f| f.variant.cuda)?;
    let cuda = target.variant.cuda;
    let min = if platform == Platform::Windows {
        kb.toolkit_min_driver_windows(cuda)
    } else {
        kb.toolkit_min_driver(cuda)
    };
    let compat = kb
        .least_driver_for(platform, cuda)
        .filter(|l| min.as_ref() != Some(l));
    // The least branch that runs it at all, capped at the GPUs' last branch; the native
    // minimum is reported beside it.
    let least = compat.as_ref().or(min.as_ref());
    let branch = range.branch_for(kb, platform, least);
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
        required: false,
    })
}

/// The driver change a plan needs when the present driver does not drive the GPUs (with or
/// without a torch build for them).
fn required_driver(
    kb: &Kb,
    platform: Platform,
    range: &crate::platform::DriverRange,
    d: &DriverVersion,
    why: &str,
    fit: Option<&Fit<'_>>,
) -> DriverUpgrade {
    let cuda = fit.map(|f| f.variant.cuda);
    let least = cuda.and_then(|c| kb.least_driver_for(platform, c));
    let min = cuda.and_then(|c| {
        if platform == Platform::Windows {
            kb.toolkit_min_driver_windows(c)
        } else {
            kb.toolkit_min_driver(c)
        }
    });
    // The newest branch the GPUs allow is the one to install; without a last branch, the
    // least that both the GPUs and the build need.
    let branch = match &range.last {
        Some((last, _)) => Some(format!("R{last}")),
        None => range.branch_for(kb, platform, least.as_ref()),
    };
    let to = branch
        .as_deref()
        .unwrap_or("a driver branch that drives them");
    let why = match fit {
        Some(f) => format!(
            "{why}; {to} runs torch {} {}{}",
            f.release.version,
            f.variant.tag,
            least
                .as_ref()
                .map(|l| format!(" (it needs driver >= {l})"))
                .unwrap_or_default(),
        ),
        None => format!(
            "{why}; even on {to}, no torch build in the knowledge base has code for these GPUs (driver {d} is not the only obstacle)"
        ),
    };
    DriverUpgrade {
        why,
        min_driver: min,
        min_driver_compat: least,
        branch,
        torch: fit.map(|f| f.release.version.clone()).unwrap_or_default(),
        variant: fit.map(|f| f.variant.tag.clone()).unwrap_or_default(),
        required: true,
    }
}
