//! `cudoctor plan`: the torch build for this driver, these GPUs and this Python, as commands.

use std::str::FromStr;

use anyhow::Context as _;
use cudoctor_collect::Options;
use cudoctor_kb::{CudaVersion, DriverVersion};
use cudoctor_plan::snapshot::Asked;
use cudoctor_plan::PlanInput;
use cudoctor_render::{render_plan_markdown, render_plan_text, render_reverse_text};

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
    let asked = asked(args, cuda, old_version)?;
    let mut input = PlanInput::from_snapshot(&kb, snap.as_ref(), &asked);
    // What-if planning is about another machine: this one's GPU access is not.
    input.first = snap
        .as_ref()
        .filter(|s| !asked.what_if(Some(s)))
        .and_then(|s| cudoctor_analyse::gpu_out_of_reach(s, &kb));
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

/// The options of `plan`, read: what the user asked beside the machine detected.
fn asked(
    args: &PlanArgs,
    cuda: Option<CudaVersion>,
    old_version: Option<String>,
) -> anyhow::Result<Asked> {
    Ok(Asked {
        driver: args
            .driver
            .as_deref()
            .map(|d| DriverVersion::from_str(d).with_context(|| format!("--driver {d}")))
            .transpose()?,
        platform: args
            .platform
            .as_deref()
            .map(str::parse::<cudoctor_kb::Platform>)
            .transpose()?,
        installer: args
            .installer
            .as_deref()
            .map(cudoctor_plan::parse_installer)
            .transpose()?,
        gpus: args.gpu.clone(),
        python_version: args.python_version.clone().or(old_version),
        torch: args.torch.clone(),
        cuda,
    })
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
