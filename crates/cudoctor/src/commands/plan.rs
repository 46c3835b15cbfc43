//! `cudoctor plan`: the torch build for this driver, these GPUs and this Python, as commands.

use std::str::FromStr;

use anyhow::Context as _;
use cudoctor_collect::Options;
use cudoctor_kb::{CudaVersion, DriverVersion};
use cudoctor_plan::{BuildInput, InstalledToolkit, PlanInput};
use cudoctor_render::{render_plan_markdown, render_plan_text, render_reverse_text};
use cudoctor_snapshot::Snapshot;

use crate::cli::{IssueFormat, PlanArgs};
use crate::output::{host, knowledge_base};
use crate::Outcome;

pub fn run(args: &PlanArgs) -> anyhow::Result<Outcome> {
    let kb = knowledge_base(&args.machine)?;
    let cuda = args
        .cuda
        .as_deref()
        .map(|c| {
            CudaVersion::from_str(c.trim_start_matches("cu")).with_context(|| format!("--cuda {c}"))
        })
        .transpose()?;
    // The reverse question: which drivers and GPUs run this build?
    if let (Some(torch), Some(_), None, true) =
        (&args.torch, cuda, &args.driver, args.gpu.is_empty())
    {
        let answer = cudoctor_plan::reverse(&kb, torch, cuda)?;
        match args.format {
            IssueFormat::Json => crate::outln!(
                "{}",
                crate::build_info::with_build_header(&serde_json::to_string_pretty(&answer)?)
            ),
            IssueFormat::Markdown => {
                crate::out!("{}", render_plan_markdown(&render_reverse_text(&answer)))
            }
            IssueFormat::Text => crate::out!("{}", render_reverse_text(&answer)),
        }
        return Ok(Outcome::Healthy);
    }
    let (interpreter, old_version) = python_arg(args);
    if let (Some(given), true) = (&interpreter, args.no_detect) {
        anyhow::bail!(
            "--python {given} names an environment of this machine, which --no-detect ignores: give --python-version X.Y instead"
        );
    }
    let snap = if args.no_detect {
        None
    } else {
        let host = host(&args.machine)?;
        let snap = cudoctor_collect::collect(
            &host,
            &Options {
                skip_kernel_scan: true,
                python: interpreter.iter().cloned().collect(),
                ..Default::default()
            },
            env!("CARGO_PKG_VERSION"),
        );
        if let (Some(given), false) = (
            &interpreter,
            snap.python_envs.iter().any(|e| e.named_by_option()),
        ) {
            anyhow::bail!("--python {given}: no Python environment there");
        }
        Some(snap)
    };
    let mut input = input(&kb, args, snap.as_ref(), cuda, old_version)?;
    // What-if planning is about another machine: this one's GPU access is not.
    input.first = snap
        .as_ref()
        .filter(|s| !what_if(args, Some(s)))
        .and_then(|s| first_fix(s, &kb));
    let plan = cudoctor_plan::plan(&kb, &input)?;
    let verified = args.verify.map(|mode| {
        let live = args.machine.root.is_none();
        snap.as_ref()
            .and_then(|s| plan.remedy.as_ref().map(|r| (s, r)))
            .map(|(s, r)| crate::commands::verify::verify_remedy(s, &r.steps, &kb, mode, live))
            .unwrap_or_default()
    });
    match args.format {
        IssueFormat::Json => {
            let mut json = serde_json::to_string_pretty(&plan)?;
            if let Some(v) = &verified {
                json = crate::commands::verify::with_json_list(&json, "verify", v);
            }
            crate::outln!("{}", crate::build_info::with_build_header(json.trim_end()))
        }
        IssueFormat::Markdown => crate::out!(
            "{}",
            render_plan_markdown(&render_plan_text(
                &plan,
                input.installer_given.then_some(input.installer),
                args.verbose
            ))
        ),
        IssueFormat::Text => {
            crate::out!(
                "{}",
                render_plan_text(
                    &plan,
                    input.installer_given.then_some(input.installer),
                    args.verbose
                )
            )
        }
    }
    if let (Some(v), false) = (&verified, args.format == IssueFormat::Json) {
        crate::out!("\n{}", cudoctor_render::render_verify_text(v));
    }
    let change_needed = plan.current.as_ref().is_some_and(|c| !c.ok);
    Ok(if change_needed {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}

/// check's root finding that keeps the machine's GPU out of reach (a container started without
/// GPU access, no driver where a GPU is expected), with its fix, word for word: it comes before
/// any torch build, and until it is fixed the current build is not judged here.
fn first_fix(snap: &Snapshot, kb: &cudoctor_kb::Kb) -> Option<cudoctor_analyse::Finding> {
    use cudoctor_analyse::{Severity, Subject};
    let findings = cudoctor_analyse::analyse(snap, kb);
    findings.into_iter().find(|f| {
        f.caused_by.is_none()
            && f.severity == Severity::Error
            && f.about.contains(&Subject::Driver)
            && !f
                .about
                .iter()
                .any(|s| matches!(s, Subject::TorchBuild { .. }))
    })
}

fn input(
    kb: &cudoctor_kb::Kb,
    args: &PlanArgs,
    snap: Option<&Snapshot>,
    cuda: Option<CudaVersion>,
    old_version: Option<String>,
) -> anyhow::Result<PlanInput> {
    // For another platform this machine's environment is neither judged nor fixed: its
    // interpreter path and commands are this machine's (a Linux venv's under a Windows plan),
    // and so are its driver (a Linux driver's number is no Windows driver's: they are numbered
    // apart), its Python version and its toolkits. Only what --driver and --python say is taken
    // then; the GPUs, memory and cores stay (the same hardware under another system).
    let other_platform = other_platform(args, snap);
    let this_machine = snap.filter(|_| !other_platform);
    let driver = match &args.driver {
        Some(d) => Some(DriverVersion::from_str(d).with_context(|| format!("--driver {d}"))?),
        None => this_machine
            .and_then(|s| s.driver.version.as_ref())
            .and_then(|v| v.value.parse().ok()),
    };
    let mut gpus: Vec<String> = if args.gpu.is_empty() {
        snap.map(|s| {
            s.driver
                .gpus
                .iter()
                .map(|g| cudoctor_plan::gpu_key(kb, &g.name, g.compute_capability.as_deref()))
                .collect()
        })
        .unwrap_or_default()
    } else {
        args.gpu.clone()
    };
    // The plan depends on the set of GPU kinds; eight identical GPUs need one line, not eight.
    let mut seen: Vec<String> = Vec::new();
    gpus.retain(|g| {
        let new = !seen.contains(g);
        seen.push(g.clone());
        new
    });
    // The environment named with --python, else the first found (the active one).
    let env = snap.and_then(|s| {
        s.python_envs
            .iter()
            .find(|e| e.named_by_option())
            .or(s.primary_env())
    });
    let python = args.python_version.clone().or(old_version).or_else(|| {
        env.filter(|_| !other_platform)
            .and_then(|e| e.python_version.clone())
    });
    // Without torch, the environment's other frameworks are still judged (their one CUDA major).
    let current =
        env.filter(|_| !other_platform)
            .and_then(|e| match &e.torch {
                Some(t) => Some(cudoctor_analyse::context::current_env(e, t, false)),
                None => Some(cudoctor_analyse::context::frameworks_env(e))
                    .filter(|c| !c.others.is_empty()),
            });
    // What-if planning asks about another machine: no remedy for this env.
    let target = env
        .filter(|_| !what_if(args, snap))
        .map(cudoctor_analyse::context::target_env);
    let build = snap.map(|s| BuildInput {
        memory_gib: s.host.memory_total_mib.map(|m| m as f64 / 1024.0),
        cores: s.host.cpu_count,
        // This machine's toolkits are no other platform's (a Linux /usr/local/cuda under a
        // Windows plan): none is installed there as far as the plan knows.
        toolkits: this_machine
            .into_iter()
            .flat_map(|s| s.toolkit.toolkits.iter())
            .filter(|t| t.nvcc.is_some())
            .filter_map(|t| {
                Some(InstalledToolkit {
                    version: t.version.as_deref()?.parse().ok()?,
                    path: t.root.clone(),
                })
            })
            .collect(),
    });
    let platform = match &args.platform {
        Some(p) => p.parse::<cudoctor_kb::Platform>()?,
        None => snap
            .map(|s| cudoctor_analyse::context::host_platform(&s.host))
            .unwrap_or_default(),
    };
    Ok(PlanInput {
        driver,
        gpus,
        python,
        torch: args.torch.clone(),
        cuda,
        installer: match &args.installer {
            Some(i) => cudoctor_plan::parse_installer(i)?,
            None => Default::default(),
        },
        installer_given: args.installer.is_some(),
        current,
        build,
        target,
        platform,
        first: None,
    })
}

/// Whether the plan is a what-if for another machine: other GPUs (--gpu), another driver
/// (--driver) or another platform than the detected machine's (--platform). This machine's
/// environment then gets no remedy, and its GPU access is not the plan's question.
fn what_if(args: &PlanArgs, snap: Option<&Snapshot>) -> bool {
    !args.gpu.is_empty() || args.driver.is_some() || other_platform(args, snap)
}

/// --platform names another platform than the detected machine's (`plan --platform windows`
/// on Linux). Without detection there is no machine to differ from.
fn other_platform(args: &PlanArgs, snap: Option<&Snapshot>) -> bool {
    let (Some(given), Some(snap)) = (&args.platform, snap) else {
        return false;
    };
    // An unknown name is refused where the platform is read (`input`).
    given
        .parse::<cudoctor_kb::Platform>()
        .is_ok_and(|p| p != cudoctor_analyse::context::host_platform(&snap.host))
}

/// `--python` as (an interpreter or prefix, a Python version in the old spelling): an X.Y that
/// names no file was `plan --python X.Y` before `--python-version` took that meaning.
fn python_arg(args: &PlanArgs) -> (Option<String>, Option<String>) {
    let Some(given) = &args.python else {
        return (None, None);
    };
    let looks_like_version = given.split('.').count() == 2
        && given
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if looks_like_version && !std::path::Path::new(given).exists() {
        crate::output::note(
            "cudoctor: warning: `plan --python X.Y` is now `plan --python-version X.Y` (--python names an interpreter, as in the other commands)\n",
        );
        return (None, Some(given.clone()));
    }
    (Some(given.clone()), None)
}
