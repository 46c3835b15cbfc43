//! `cudoctor plan`: the torch build for this driver, these GPUs and this Python, as commands.

use std::fmt::Write;
use std::str::FromStr;

use anyhow::Context as _;
use cudoctor_collect::Options;
use cudoctor_kb::{CudaVersion, DriverVersion};
use cudoctor_plan::{BuildInput, InstalledToolkit, Installer, Plan, PlanInput, ReverseAnswer};
use cudoctor_snapshot::Snapshot;

use cudoctor_types::inert::{self, line};

use crate::cli::{Format, PlanArgs};
use crate::output::{host, knowledge_base};
use crate::Outcome;

pub fn run(args: &PlanArgs) -> anyhow::Result<Outcome> {
    crate::output::text_json_or_markdown(args.format)?;
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
            Format::Json => crate::outln!("{}", serde_json::to_string_pretty(&answer)?),
            Format::Markdown => crate::out!("{}", markdown(&reverse_text(&answer))),
            _ => crate::out!("{}", reverse_text(&answer)),
        }
        return Ok(Outcome::Healthy);
    }
    let snap = if args.no_detect {
        None
    } else {
        let host = host(&args.machine)?;
        Some(cudoctor_collect::collect(
            &host,
            &Options {
                skip_kernel_scan: true,
                ..Default::default()
            },
            env!("CARGO_PKG_VERSION"),
        ))
    };
    let input = input(&kb, args, snap.as_ref(), cuda)?;
    let plan = cudoctor_plan::plan(&kb, &input)?;
    match args.format {
        Format::Json => crate::outln!("{}", serde_json::to_string_pretty(&plan)?),
        Format::Markdown => crate::out!(
            "{}",
            markdown(&plan_text(&plan, input.installer, args.verbose))
        ),
        _ => crate::out!("{}", plan_text(&plan, input.installer, args.verbose)),
    }
    let change_needed = plan.current.as_ref().is_some_and(|c| !c.ok);
    Ok(if change_needed {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}

fn input(
    kb: &cudoctor_kb::Kb,
    args: &PlanArgs,
    snap: Option<&Snapshot>,
    cuda: Option<CudaVersion>,
) -> anyhow::Result<PlanInput> {
    let driver = match &args.driver {
        Some(d) => Some(DriverVersion::from_str(d).with_context(|| format!("--driver {d}"))?),
        None => snap
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
    let env = snap.and_then(|s| s.primary_env());
    let python = args
        .python
        .clone()
        .or_else(|| env.and_then(|e| e.python_version.clone()));
    let current = env.and_then(|e| {
        Some(cudoctor_analyse::context::current_env(
            e,
            e.torch.as_ref()?,
            false,
        ))
    });
    // What-if planning (--gpu, --driver) asks about another machine: no remedy for this env.
    let what_if = !args.gpu.is_empty() || args.driver.is_some();
    let target = env
        .filter(|_| !what_if)
        .map(cudoctor_analyse::context::target_env);
    let build = snap.map(|s| BuildInput {
        memory_gib: s.host.memory_total_mib.map(|m| m as f64 / 1024.0),
        cores: s.host.cpu_count,
        toolkits: s
            .toolkit
            .toolkits
            .iter()
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
        installer: cudoctor_plan::parse_installer(&args.installer)?,
        current,
        build,
        target,
        platform,
    })
}

/// The answer first (the command to run), then the few lines that matter; the reasoning, what
/// to avoid and the other installers' commands only with `--verbose`. Every value is shown on
/// its own line as check's text shows it ([`line`]): a version, name or path from the machine
/// that holds a newline or an escape sequence shows as `\n`/`\e`, never as a forged line.
fn plan_text(p: &Plan, installer: Installer, verbose: bool) -> String {
    let mut out = String::new();
    if let Some(r) = &p.remedy {
        if r.torch.is_empty() {
            let _ = writeln!(out, "This environment: no torch build fits it");
        } else {
            let what = if r.keeps_torch {
                format!(
                    "keep torch {} ({}), pair its companions",
                    line(&r.torch),
                    line(&r.variant)
                )
            } else {
                format!("move to torch {} ({})", line(&r.torch), line(&r.variant))
            };
            let _ = writeln!(out, "This environment: {what}");
        }
        for s in &r.steps {
            match s {
                // A command's own lines stay (a heredoc); its values are quoted on one line.
                cudoctor_plan::FixStep::Shell(c) => {
                    let _ = writeln!(out, "\n  {}", inert::text(c));
                }
                cudoctor_plan::FixStep::Prose(t) => {
                    let _ = writeln!(out, "  {}", line(t));
                }
            }
        }
        let _ = writeln!(out);
    }
    if let Some(u) = p.driver_upgrade.as_ref().filter(|u| u.required) {
        let _ = writeln!(
            out,
            "First change the driver to {}: {}\n",
            line(
                u.branch
                    .as_deref()
                    .unwrap_or("a branch that drives these GPUs")
            ),
            line(&u.why)
        );
    }
    match (&p.torch, &p.variant) {
        (Some(t), Some(v)) => {
            let companions: Vec<String> = [
                ("torchvision", &p.torchvision),
                ("torchaudio", &p.torchaudio),
            ]
            .iter()
            .filter_map(|(n, v)| v.as_ref().map(|v| format!("{n} {}", line(v))))
            .collect();
            let fresh = if p.remedy.is_some() {
                "For a new environment: install"
            } else {
                "Install"
            };
            let _ = writeln!(out, "{fresh} torch {} ({})", line(t), line(v));
            if !companions.is_empty() {
                let _ = writeln!(out, "  with {}", companions.join(", "));
            }
        }
        _ if p.platform == cudoctor_kb::Platform::Jetson => {
            let _ = writeln!(
                out,
                "Jetson: install NVIDIA's PyTorch wheel for your JetPack release (JetPack builds are not in the knowledge base, so no command is printed)"
            );
        }
        _ => {
            let _ = writeln!(out, "No torch build fits these constraints.");
        }
    }
    let preferred = p.commands.preferred(installer);
    if let Some(cmd) = preferred {
        let _ = writeln!(out, "\n  {}", inert::text(cmd));
    }
    if let Some(u) = p.driver_upgrade.as_ref().filter(|u| !u.required) {
        let _ = writeln!(
            out,
            "\nA newer driver allows more: {} ({}) for torch {} {}",
            line(u.branch.as_deref().unwrap_or("a newer branch")),
            u.min_driver
                .as_ref()
                .or(u.min_driver_compat.as_ref())
                .map(|d| format!("driver >= {d}"))
                .unwrap_or_else(|| "driver minimum unknown".into()),
            line(&u.torch),
            line(&u.variant),
        );
    }
    if let Some(c) = &p.current {
        let _ = writeln!(
            out,
            "\nThis environment: {}",
            if c.ok {
                "already right"
            } else {
                "needs changes"
            }
        );
        for f in &c.findings {
            let _ = writeln!(out, "  - {}", line(f));
        }
    }
    if !verbose {
        if !p.reasons.is_empty() || !p.avoid.is_empty() || !p.warnings.is_empty() {
            let _ = writeln!(
                out,
                "\nWhy, what to avoid and other installers: cudoctor plan --verbose"
            );
        }
        return out;
    }
    for (label, cmd) in [
        ("pip", &p.commands.pip),
        ("uv", &p.commands.uv),
        ("conda", &p.commands.conda),
        ("pip (PyPI)", &p.commands.pip_pypi),
    ] {
        if let Some(c) = cmd {
            if Some(c.as_str()) != preferred {
                let _ = writeln!(out, "  {label}: {}", inert::text(c));
            }
        }
    }
    for n in &p.commands.notes {
        let _ = writeln!(out, "  note: {}", line(n));
    }
    section(&mut out, "Why", &p.reasons);
    if !p.avoid.is_empty() {
        let _ = writeln!(out, "\nAvoid");
        for a in &p.avoid {
            let _ = writeln!(out, "  - {}: {}", line(&a.what), line(&a.why));
        }
    }
    if let Some(u) = p.driver_upgrade.as_ref().filter(|u| !u.required) {
        let _ = writeln!(out, "\nOr upgrade the driver");
        let _ = writeln!(out, "  - {}", line(&u.why));
    }
    if let Some(b) = &p.build {
        let _ = writeln!(out, "\nBuilding CUDA extensions");
        if let Some(a) = &b.torch_cuda_arch_list {
            let _ = writeln!(out, "  export TORCH_CUDA_ARCH_LIST=\"{}\"", line(a));
        }
        if let Some(j) = b.max_jobs {
            let _ = writeln!(out, "  export MAX_JOBS={j}");
        }
        if let Some(h) = &b.cuda_home {
            let _ = writeln!(
                out,
                "  {}",
                inert::text(&cudoctor_analyse::context::export_cuda_home(h))
            );
        }
        if let Some(t) = &b.install_toolkit {
            let _ = writeln!(
                out,
                "  install CUDA Toolkit {t} (no installed toolkit matches torch's CUDA major)"
            );
        }
        for n in &b.notes {
            let _ = writeln!(out, "  note: {}", line(n));
        }
    }
    section(&mut out, "Warnings", &p.warnings);
    out
}

/// The text answer as Markdown: one code block (fenced longer than any backtick run inside), so
/// it reads as it does on a terminal and nothing from the machine becomes markup.
fn markdown(text: &str) -> String {
    let fence = inert::markdown_fence(text);
    format!("## cudoctor plan\n\n{fence}text\n{text}{fence}\n")
}

fn section(out: &mut String, title: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}");
    for l in lines {
        let _ = writeln!(out, "  - {}", line(l));
    }
}

fn reverse_text(a: &ReverseAnswer) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "torch {}", a.torch);
    if let Some(v) = &a.torchvision {
        let _ = writeln!(out, "  torchvision {v}");
    }
    if let Some(v) = &a.torchaudio {
        let _ = writeln!(out, "  torchaudio {v}");
    }
    if !a.python.is_empty() {
        let _ = writeln!(out, "  Python {}", a.python.join(", "));
    }
    for v in &a.variants {
        let _ = writeln!(
            out,
            "\n{} (CUDA {}){}",
            v.variant,
            v.cuda,
            if v.pypi_default {
                ", the build plain `pip install torch` gets"
            } else {
                ""
            }
        );
        let native = v
            .min_driver
            .as_ref()
            .map_or("unknown".to_string(), |d| d.to_string());
        let floor = v
            .min_driver_compat
            .as_ref()
            .map_or("unknown".to_string(), |d| d.to_string());
        let _ = writeln!(
            out,
            "  Linux driver: >= {native} natively; >= {floor} through minor-version compatibility"
        );
        if let Some(w) = &v.min_driver_windows {
            let _ = writeln!(out, "  Windows driver: >= {w}");
        }
        let _ = writeln!(out, "  GPUs: {}", v.gpus);
        if let Some(pip) = &v.commands.pip {
            let _ = writeln!(out, "  {pip}");
        }
    }
    for s in &a.sources {
        let _ = writeln!(out, "source: {s}");
    }
    out
}
