//! `cudoctor plan`'s text: the answer first (the command to run), the reasoning behind
//! `--verbose`; and the reverse answer (which drivers and GPUs run a build).

use std::fmt::Write;

use cudoctor_plan::{Installer, Plan, ReverseAnswer};
use cudoctor_types::inert::{self, line};

use crate::layout::{command_lines, width, wrap};

/// One line of prose, wrapped at 120 columns; continuation lines start with `rest`.
fn prose(out: &mut String, first: &str, rest: &str, text: &str) {
    let _ = writeln!(out, "{}", wrap(first, rest, text, width()));
}

/// A command, continued with ` \` past 120 columns (its later lines 4 columns further in).
fn command(out: &mut String, first: &str, cmd: &str) {
    let rest = format!("{}    ", " ".repeat(first.chars().count()));
    for l in command_lines(first, &rest, &inert::text(cmd)) {
        let _ = writeln!(out, "{l}");
    }
}

/// A command of the plan on its platform: a POSIX shell's, continued with ` \` past 120
/// columns; on Windows PowerShell's, after its prompt (`PS> `) on one line, as check prints
/// PowerShell (PowerShell does not continue a line with `\`).
fn platform_command(out: &mut String, p: &Plan, first: &str, cmd: &str) {
    if p.platform == cudoctor_kb::Platform::Windows {
        let _ = writeln!(out, "{first}PS> {}", inert::line(cmd));
    } else {
        command(out, first, cmd);
    }
}

/// The answer first (the command to run), then the few lines that matter; the reasoning, what
/// to avoid and the other installers' commands only with `--verbose`. Every value is shown on
/// its own line as check's text shows it ([`line`]): a version, name or path from the machine
/// that holds a newline or an escape sequence shows as `\n`/`\e`, never as a forged line.
pub fn render_plan_text(p: &Plan, installer: Option<Installer>, verbose: bool) -> String {
    let mut out = String::new();
    gpu_unreachable(&mut out, p);
    frameworks_section(&mut out, p);
    remedy_section(&mut out, p);
    required_driver(&mut out, p);
    chosen_build(&mut out, p);
    let preferred = preferred_command(&mut out, p, installer);
    if let Some(cmd) = preferred {
        let _ = writeln!(out);
        platform_command(&mut out, p, "  ", cmd);
    }
    optional_driver(&mut out, p);
    current_env(&mut out, p);
    if !verbose {
        if !p.reasons.is_empty() || !p.avoid.is_empty() || !p.warnings.is_empty() {
            let _ = writeln!(
                out,
                "\nWhy, what to avoid and other installers: cudoctor plan --verbose"
            );
        }
        return out;
    }
    other_installers(&mut out, p, preferred);
    section(&mut out, "Why", &p.reasons);
    avoid_and_upgrade(&mut out, p);
    if let Some(b) = &p.build {
        build_section(&mut out, p, b);
    }
    section(&mut out, "Warnings", &p.warnings);
    out
}

/// The machine's own problem first: no torch build runs on a GPU the process cannot reach.
fn gpu_unreachable(out: &mut String, p: &Plan) {
    if let Some(first) = &p.first {
        prose(
            out,
            "",
            "  ",
            &format!(
                "First: {} {} (cudoctor check explains it)",
                line(&first.code),
                line(&first.title)
            ),
        );
        steps(out, &first.fix);
        prose(
            out,
            "",
            "  ",
            if p.keeps_installed {
                "Until the GPU is reachable no other build can be judged: keep the torch this environment has, and run cudoctor plan again once the GPU is reachable."
            } else {
                "Until the GPU is reachable no build can be judged here: run cudoctor plan again once the GPU is reachable."
            },
        );
        let _ = writeln!(out);
    }
}

/// The frameworks beside torch first: when torch moves, these run before its own fix.
fn frameworks_section(out: &mut String, p: &Plan) {
    if let Some(m) = p.frameworks.as_ref().filter(|m| !m.steps.is_empty()) {
        let names: Vec<String> = m
            .frameworks
            .iter()
            .map(|f| line(&f.build).into_owned())
            .collect();
        prose(
            out,
            "",
            "  ",
            &format!(
                "This environment: one CUDA major (CUDA {}) for {}",
                m.keep,
                match (m.torch, names.is_empty()) {
                    (true, true) => "torch and its CUDA wheels".to_string(),
                    (true, false) => format!("torch and {}", names.join(", ")),
                    (false, _) => names.join(", "),
                }
            ),
        );
        steps(out, &m.steps);
    }
}

/// This environment's remedy: torch kept (its companions paired) or moved, and the steps.
fn remedy_section(out: &mut String, p: &Plan) {
    if let Some(r) = &p.remedy {
        if r.torch.is_empty() {
            prose(out, "", "  ", "This environment: no torch build fits it");
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
            prose(out, "", "  ", &format!("This environment: {what}"));
        }
        steps(out, &r.steps);
    }
}

/// A driver change that the chosen build cannot do without.
fn required_driver(out: &mut String, p: &Plan) {
    if let Some(u) = p.driver_upgrade.as_ref().filter(|u| u.required) {
        prose(
            out,
            "",
            "  ",
            &format!(
                "First change the driver to {}: {}",
                line(
                    u.branch
                        .as_deref()
                        .unwrap_or("a branch that drives these GPUs")
                ),
                line(&u.why)
            ),
        );
        let _ = writeln!(out);
    }
}

/// The torch build chosen (or kept) with its companions, or why none is.
fn chosen_build(out: &mut String, p: &Plan) {
    match (&p.torch, &p.variant) {
        (Some(t), Some(v)) if p.keeps_installed => {
            prose(
                out,
                "",
                "  ",
                &format!(
                    "Keep torch {} ({}), the build installed in this environment: nothing to install before the GPU is reachable",
                    line(t),
                    line(v)
                ),
            );
        }
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
            } else if p.frameworks.as_ref().is_some_and(|m| !m.torch) {
                "To add torch: install"
            } else {
                "Install"
            };
            prose(
                out,
                "",
                "  ",
                &format!("{fresh} torch {} ({})", line(t), line(v)),
            );
            if !companions.is_empty() {
                prose(out, "  with ", "       ", &companions.join(", "));
            }
        }
        _ if p.platform == cudoctor_kb::Platform::Jetson => {
            prose(
                out,
                "",
                "  ",
                "Jetson: install NVIDIA's PyTorch wheel for your JetPack release (JetPack builds are not in the knowledge base, so no command is printed)",
            );
        }
        _ if p.first.is_some() => {
            let _ = writeln!(
                out,
                "No torch build is chosen: this machine shows no GPU, and a CPU build would replace what the GPU needs."
            );
        }
        _ => {
            let _ = writeln!(out, "No torch build fits these constraints.");
        }
    }
}

/// The headline command for `installer`: none while the installed build is kept. Where the
/// installer asked for (`--installer`) has no command of its own, the reason is written first.
fn preferred_command<'p>(
    out: &mut String,
    p: &'p Plan,
    installer: Option<Installer>,
) -> Option<&'p str> {
    // With the GPU out of reach the installed build is kept: an install line would only
    // reinstall it (the commands stay under --verbose, for a new environment).
    let preferred = p
        .commands
        .headline(installer)
        .filter(|_| !p.keeps_installed);
    // The installer asked for (`--installer`) has no command of its own here: say why.
    if let (Some(i), Some(_), false) = (installer, &p.variant, p.keeps_installed) {
        let own = match i {
            Installer::Conda => preferred.is_some_and(|c| c.starts_with("conda ")),
            Installer::Uv => preferred.is_some_and(|c| c.starts_with("uv ")),
            Installer::Pip => preferred.is_some_and(|c| c.contains("pip install")),
        };
        let why: Vec<&String> = p
            .commands
            .notes
            .iter()
            .filter(|n| n.starts_with(&format!("no {} command", i.name())))
            .collect();
        if !own || !why.is_empty() {
            let _ = writeln!(out);
            for n in why {
                prose(out, "  ", "    ", &line(n));
            }
        }
    }
    match installer {
        // No conda command anywhere: the environment's own (or pip's) after the reason.
        Some(Installer::Conda) => preferred.or(p.commands.pip.as_deref()),
        _ => preferred,
    }
    .filter(|_| !p.keeps_installed)
}

/// A newer driver that allows more, when none is required.
fn optional_driver(out: &mut String, p: &Plan) {
    if let Some(u) = p.driver_upgrade.as_ref().filter(|u| !u.required) {
        let _ = writeln!(out);
        prose(
            out,
            "",
            "  ",
            &format!(
                "A newer driver allows more: {} ({}) for torch {} {}",
                line(u.branch.as_deref().unwrap_or("a newer branch")),
                u.min_driver
                    .as_ref()
                    .or(u.min_driver_compat.as_ref())
                    .map(|d| format!("driver >= {d}"))
                    .unwrap_or_else(|| "driver minimum unknown".into()),
                line(&u.torch),
                line(&u.variant),
            ),
        );
    }
}

/// What this environment has, judged against the plan.
fn current_env(out: &mut String, p: &Plan) {
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
            prose(out, "  - ", "    ", &line(&f.to_string()));
        }
    }
}

/// The other installers' commands and the commands' notes (`--verbose`).
fn other_installers(out: &mut String, p: &Plan, preferred: Option<&str>) {
    for (label, cmd) in [
        ("pip", &p.commands.pip),
        ("uv", &p.commands.uv),
        ("conda", &p.commands.conda),
        ("pip (PyPI)", &p.commands.pip_pypi),
    ] {
        if let Some(c) = cmd {
            if Some(c.as_str()) != preferred {
                platform_command(out, p, &format!("  {label}: "), c);
            }
        }
    }
    for n in &p.commands.notes {
        prose(out, "  note: ", "        ", &line(n));
    }
}

/// What to avoid, and the driver upgrade that is not required (`--verbose`).
fn avoid_and_upgrade(out: &mut String, p: &Plan) {
    if !p.avoid.is_empty() {
        let _ = writeln!(out, "\nAvoid");
        for a in &p.avoid {
            prose(
                out,
                "  - ",
                "    ",
                &format!("{}: {}", line(&a.what), line(&a.why)),
            );
        }
    }
    if let Some(u) = p.driver_upgrade.as_ref().filter(|u| !u.required) {
        let _ = writeln!(out, "\nOr upgrade the driver");
        prose(out, "  - ", "    ", &line(&u.why));
    }
}

/// How to build CUDA extensions against the chosen build (`--verbose`).
fn build_section(out: &mut String, p: &Plan, b: &cudoctor_plan::BuildPlan) {
    let _ = writeln!(out, "\nBuilding CUDA extensions");
    if p.platform == cudoctor_kb::Platform::Windows {
        // PowerShell's variables of the session, which the build it starts inherits.
        if let Some(a) = &b.torch_cuda_arch_list {
            platform_command(
                out,
                p,
                "  ",
                &cudoctor_plan::powershell_set_env("TORCH_CUDA_ARCH_LIST", a),
            );
        }
        if let Some(j) = b.max_jobs {
            platform_command(
                out,
                p,
                "  ",
                &cudoctor_plan::powershell_set_env("MAX_JOBS", &j.to_string()),
            );
        }
        // A toolkit of this machine's, when it is a Windows one (a what-if plan for Windows
        // made on Linux knows no Windows toolkit).
        if let Some(h) = b
            .cuda_home
            .as_deref()
            .filter(|h| cudoctor_snapshot::windows::WinPath::new(h).is_absolute())
        {
            platform_command(
                out,
                p,
                "  ",
                cudoctor_analyse::context::cuda_home_step(h, None).text(),
            );
        }
    } else {
        if let Some(a) = &b.torch_cuda_arch_list {
            let _ = writeln!(out, "  export TORCH_CUDA_ARCH_LIST=\"{}\"", line(a));
        }
        if let Some(j) = b.max_jobs {
            let _ = writeln!(out, "  export MAX_JOBS={j}");
        }
        // A toolkit of this machine's, when it is a POSIX one (the step would be
        // PowerShell's for a Windows toolkit, which a POSIX plan cannot run).
        if let Some(h) = b
            .cuda_home
            .as_deref()
            .filter(|h| !cudoctor_snapshot::windows::WinPath::new(h).is_absolute())
        {
            command(
                out,
                "  ",
                cudoctor_analyse::context::cuda_home_step(h, None).text(),
            );
        }
    }
    if let Some(t) = &b.install_toolkit {
        prose(
            out,
            "  ",
            "    ",
            &format!("install CUDA Toolkit {t} (no installed toolkit matches torch's CUDA major)"),
        );
    }
    for n in &b.notes {
        prose(out, "  note: ", "        ", &line(n));
    }
}

/// The text answer as Markdown: one code block (fenced longer than any backtick run inside), so
/// it reads as it does on a terminal and nothing from the machine becomes markup.
pub fn render_plan_markdown(text: &str) -> String {
    let fence = inert::markdown_fence(text);
    format!("## cudoctor plan\n\n{fence}text\n{text}{fence}\n")
}

/// A fix's steps: commands set apart on their own lines, prose indented.
fn steps(out: &mut String, steps: &[cudoctor_plan::FixStep]) {
    for s in steps {
        match s {
            // A command's own lines stay (a heredoc); its values are quoted on one line.
            cudoctor_plan::FixStep::Shell(c) => {
                let _ = writeln!(out);
                command(out, "  ", c);
            }
            cudoctor_plan::FixStep::PowerShell(c) => {
                let _ = writeln!(out, "\n  PS> {}", inert::line(c));
            }
            cudoctor_plan::FixStep::Prose(t) => prose(out, "  ", "    ", &line(t)),
        }
    }
    let _ = writeln!(out);
}

fn section(out: &mut String, title: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}");
    for l in lines {
        prose(out, "  - ", "    ", &line(l));
    }
}

pub fn render_reverse_text(a: &ReverseAnswer) -> String {
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
        prose(&mut out, "  GPUs: ", "        ", &v.gpus);
        if let Some(pip) = &v.commands.pip {
            command(&mut out, "  ", pip);
        }
    }
    for s in &a.sources {
        let _ = writeln!(out, "source: {s}");
    }
    out
}
