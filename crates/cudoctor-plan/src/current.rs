//! The environment as it is, against the plan: already right, or exactly what to change.

use cudoctor_kb::{CudaVersion, Kb, TorchVersion};

use crate::fit::Fit;
use crate::model::{CurrentEnv, CurrentLine, CurrentVerdict, Plan, PlanInput, ResolvedGpu};
use crate::remedy::Remedy;

/// The build tag of an installed torch: its local version ("cu130", "cpu"), else the CUDA of
/// torch/version.py (PyPI wheels carry no local version), else "cpu" when version.py says none.
pub(crate) fn build_tag(v: &TorchVersion, cuda: Option<CudaVersion>) -> Option<String> {
    if let Some(local) = &v.local {
        return Some(local.clone());
    }
    cuda.map(|c| c.tag())
}

pub(crate) fn judge(
    kb: &Kb,
    cur: &CurrentEnv,
    input: &PlanInput,
    gpus: &[ResolvedGpu],
    plan: &Plan,
) -> CurrentVerdict {
    let mut findings = Vec::new();
    let mut problems = Vec::new();
    let Some(torch_text) = &cur.torch else {
        return without_torch(cur, plan);
    };
    let Ok(tv) = torch_text.parse::<TorchVersion>() else {
        return CurrentVerdict {
            ok: false,
            findings: vec![CurrentLine::Problem(format!(
                "torch {torch_text} is a pre-release or unreadable version: no table describes it"
            ))],
            changes: headline(plan),
        };
    };
    let tag = build_tag(&tv, cur.torch_cuda);
    let release = kb.torch(&tv.public());
    let installed = Installed {
        text: torch_text,
        release,
        tag: tag.as_deref(),
    };
    installed_build_fit(kb, input, gpus, &installed, &mut findings, &mut problems);
    if let Some(r) = release {
        companions_and_upgrade(kb, cur, plan, r, &installed, &mut findings, &mut problems);
    }
    let torch_problem = !problems.is_empty();
    let mixed = frameworks_verdict(plan, &mut findings, &mut problems);
    let ok = problems.is_empty();
    let mut changes = Vec::new();
    if let Some(m) = mixed.filter(|_| !ok) {
        changes.extend(m.steps.iter().map(|s| s.text().to_string()));
    }
    if torch_problem {
        torch_changes(plan, &mut changes);
    }
    CurrentVerdict {
        ok,
        findings: lines(findings, problems),
        changes,
    }
}

/// The verdict's lines: what is right, then the problems.
fn lines(facts: Vec<String>, problems: Vec<String>) -> Vec<CurrentLine> {
    facts
        .into_iter()
        .map(CurrentLine::Fact)
        .chain(problems.into_iter().map(CurrentLine::Problem))
        .collect()
}

/// The installed torch as the plan reads it: its version text, its release in the knowledge
/// base and its build tag ("cu130", "cpu").
struct Installed<'a> {
    text: &'a str,
    release: Option<&'a cudoctor_kb::TorchRelease>,
    tag: Option<&'a str>,
}

/// The plan's headline install command, as the change to make.
fn headline(plan: &Plan) -> Vec<String> {
    plan.commands
        .headline(None)
        .iter()
        .map(|c| c.to_string())
        .collect()
}

/// An environment without torch: the other frameworks' one CUDA major, else torch to install.
fn without_torch(cur: &CurrentEnv, plan: &Plan) -> CurrentVerdict {
    let mut findings = Vec::new();
    let mut problems = Vec::new();
    if !cur.others.is_empty() {
        // Other frameworks without torch: their one CUDA major is what this env needs.
        findings.push("torch is not installed here (the build above is for adding it)".into());
        let mixed = frameworks_verdict(plan, &mut findings, &mut problems);
        return CurrentVerdict {
            ok: problems.is_empty(),
            findings: lines(findings, problems),
            changes: mixed
                .map(|m| m.steps.iter().map(|s| s.text().to_string()).collect())
                .unwrap_or_default(),
        };
    }
    CurrentVerdict {
        ok: false,
        findings: vec![CurrentLine::Problem("torch is not installed".into())],
        changes: headline(plan),
    }
}

/// Whether the installed build runs on this driver and reaches every GPU.
fn installed_build_fit(
    kb: &Kb,
    input: &PlanInput,
    gpus: &[ResolvedGpu],
    installed: &Installed,
    findings: &mut Vec<String>,
    problems: &mut Vec<String>,
) {
    let torch_text = installed.text;
    match (installed.release, installed.tag) {
        (None, _) => findings.push(format!(
            "torch {torch_text} is not a release in the knowledge base; its fit cannot be judged"
        )),
        (Some(_), None) => findings.push(format!(
            "the CUDA build of torch {torch_text} is unknown (no +cuXXX suffix and no CUDA version from torch/version.py)"
        )),
        (Some(r), Some("cpu")) => {
            if gpus.is_empty() && input.driver.is_none() {
                findings.push(format!("torch {} CPU build on a machine without NVIDIA GPUs", r.version));
            } else {
                problems.push(format!(
                    "torch {torch_text} is a CPU-only build on a machine with NVIDIA GPUs: torch.cuda.is_available() is False"
                ));
            }
        }
        (Some(r), Some(t)) => match r.variant(t) {
            None => findings.push(format!(
                "torch {} has no {t} build in the knowledge base (known: {})",
                r.version,
                r.variants.iter().map(|v| v.tag.as_str()).collect::<Vec<_>>().join(", ")
            )),
            Some(v) => {
                let fit = Fit::new(kb, input.platform, r, v, input.driver.as_ref(), gpus);
                match fit.rejection(input.driver.as_ref()) {
                    Some(why) => problems.push(why),
                    None => findings.push(match (gpus.is_empty(), input.driver.is_some()) {
                        (false, _) => format!(
                            "torch {torch_text} ({t}) runs on this driver and reaches every GPU"
                        ),
                        (true, true) => format!(
                            "torch {torch_text} ({t}) runs on this driver (no GPU given, so kernel coverage was not judged)"
                        ),
                        (true, false) => format!(
                            "torch {torch_text} ({t}): no driver or GPU given, so whether it runs here was not judged"
                        ),
                    }),
                }
                for g in &fit.gpus {
                    if matches!(g, crate::fit::GpuFit::Unknown { .. }) {
                        findings.push(g.text().to_string());
                    }
                }
            }
        },
    }
}

/// torchvision and torchaudio against the installed torch, and a newer build that fits.
fn companions_and_upgrade(
    kb: &Kb,
    cur: &CurrentEnv,
    plan: &Plan,
    r: &cudoctor_kb::TorchRelease,
    installed: &Installed,
    findings: &mut Vec<String>,
    problems: &mut Vec<String>,
) {
    let (torch_text, tag) = (installed.text, installed.tag);
    for name in ["torchvision", "torchaudio"] {
        let Some(installed) = cur.companion(name) else {
            continue;
        };
        let fit = crate::companion_fit(kb, name, installed, cur.requires_of(name), &r.version, tag);
        let line = fit.describe(name, installed, torch_text);
        match fit {
            f if f.is_wrong() => problems.push(line),
            crate::CompanionFit::Paired => {}
            _ => findings.push(line),
        }
    }
    // A CPU build is never an upgrade of a CUDA one: it is what a machine that shows no
    // driver and no GPU gets, which says nothing of the build this environment needs.
    let cpu_for_cuda = plan.variant.as_deref() == Some("cpu") && tag != Some("cpu");
    if plan.torch.as_deref().is_some_and(|p| p != r.version) && problems.is_empty() && !cpu_for_cuda
    {
        findings.push(format!(
            "a newer build fits this machine: torch {} {} (optional upgrade)",
            plan.torch.as_deref().unwrap_or_default(),
            plan.variant.as_deref().unwrap_or_default()
        ));
    }
}

/// What to change for the torch problem: the remedy's steps, else the plan's install.
fn torch_changes(plan: &Plan, changes: &mut Vec<String>) {
    match (
        &plan.remedy,
        plan.commands.headline(None),
        &plan.torch,
        &plan.variant,
    ) {
        (Some(r), ..) => changes.extend(r.steps.iter().map(|s| s.text().to_string())),
        (None, Some(cmd), Some(t), Some(v)) => {
            changes.push(format!("install torch {t} {v} and its companions: {cmd}"));
        }
        _ => changes.push("no build in the knowledge base fits; see the plan's reasons".into()),
    }
}

/// The frameworks beside torch (or without it) on the environment's one CUDA major: a line for
/// each, and the problem when builds or wheels of another major are installed. Returns the
/// environment's move to one major when it has steps.
fn frameworks_verdict<'p>(
    plan: &'p Plan,
    findings: &mut Vec<String>,
    problems: &mut Vec<String>,
) -> Option<&'p crate::OneMajor> {
    let m = plan.frameworks.as_ref()?;
    let with = if m.torch { "torch" } else { "the environment" };
    for f in &m.frameworks {
        findings.push(match (&f.separate, f.install.first()) {
            _ if f.shares(m.keep) => format!(
                "{} (CUDA {}) shares CUDA {} with {with}",
                f.build, f.cuda_major, m.keep
            ),
            (Some(why), _) => format!(
                "{} (CUDA {}) has no build for CUDA {} here: {why}",
                f.build, f.cuda_major, m.keep
            ),
            (None, Some(i)) => format!(
                "{} (CUDA {}) moves to CUDA {}: {i}",
                f.build, f.cuda_major, m.keep
            ),
            (None, None) => format!("{} (CUDA {})", f.build, f.cuda_major),
        });
    }
    if m.steps.is_empty() {
        return None;
    }
    if !m.torch && m.frameworks.iter().all(|f| !f.shares(m.keep)) {
        problems.push(format!(
            "every framework build here is for a CUDA major this driver does not run: the environment moves to CUDA {}, the one it runs",
            m.keep
        ));
        return Some(m);
    }
    let moves = plan.remedy.as_ref().is_some_and(Remedy::moves_torch);
    problems.push(format!(
        "framework builds or nvidia-* wheels of another CUDA major than CUDA {}, the one {}, are installed here: one major's libraries end up in the other's process",
        m.keep,
        match (m.torch, moves) {
            (false, _) => "the environment keeps",
            (true, true) => "torch moves to",
            (true, false) => "torch keeps",
        }
    ));
    Some(m)
}
