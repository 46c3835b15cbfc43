//! `cudoctor kernels`'s text: the verdict first, the architectures each library carries, then
//! per GPU the libraries grouped by verdict (one line per kind of verdict, not one per library),
//! and the verdict again last.

use std::fmt::Write;

use cudoctor_fatbin::compat::Verdict;
use cudoctor_fatbin::report::{GpuReport, KernelsReport};

use cudoctor_types::inert::line;

use crate::layout::{common_dir, wrap, Legend, WIDTH};

pub fn render_kernels_text(r: &KernelsReport) -> String {
    let mut legend = Legend::default();
    if let Some(dir) = common_dir(r.libraries.iter().map(|l| l.path.as_str())) {
        legend.add("<dir>", &dir);
    }
    let mut out = String::new();
    let verdict = kernels_verdict(r);
    let _ = writeln!(out, "{verdict}");
    for l in legend.lines(r.libraries.iter().map(|l| l.path.as_str())) {
        let _ = writeln!(out, "{l}");
    }
    for lib in &r.libraries {
        let _ = writeln!(out, "\n{}", legend.shorten(&lib.path));
        match &lib.error {
            Some(e) => {
                let _ = writeln!(
                    out,
                    "{}",
                    wrap("    error: ", "           ", &line(e), WIDTH)
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "{}",
                    wrap("    SASS  ", "          ", &join(&lib.sass), WIDTH)
                );
                let _ = writeln!(
                    out,
                    "{}",
                    wrap("    PTX   ", "          ", &join(&lib.ptx), WIDTH)
                );
            }
        }
    }
    for g in &r.gpus {
        let _ = writeln!(out, "\n{}", gpu_name(g));
        for (kind, libs) in grouped(g) {
            let names: Vec<String> = libs
                .iter()
                .map(|p| line(p.rsplit('/').next().unwrap_or(p)).into_owned())
                .collect();
            let head = format!("    {kind} ({}): ", libs.len());
            let pad = " ".repeat(8);
            let _ = writeln!(out, "{}", wrap(&head, &pad, &names.join(" "), WIDTH));
        }
    }
    let _ = writeln!(out, "\n{verdict}");
    out
}

/// One sentence: how many libraries cannot run on which GPU and what to run next, or that all
/// run, or that there was nothing to judge for.
pub fn kernels_verdict(r: &KernelsReport) -> String {
    let total = r.libraries.len();
    let unreadable = r.libraries.iter().filter(|l| l.error.is_some()).count();
    let mut parts = Vec::new();
    for g in &r.gpus {
        let failing = g.libraries.iter().filter(|l| !l.verdict.runs()).count();
        if failing > 0 {
            let sm = g.gpu.compute_capability.sm();
            parts.push(format!(
                "{failing} of {} libraries cannot run on {} → cudoctor plan --gpu {sm}",
                g.libraries.len(),
                gpu_name(g)
            ));
        }
    }
    let mut s = if !parts.is_empty() {
        parts.join("; ")
    } else if r.gpus.is_empty() {
        format!(
            "{total} libraries with CUDA kernels; no GPU to judge for: none found (use --gpu sm_XX for a what-if)"
        )
    } else {
        let gpus: Vec<String> = r.gpus.iter().map(gpu_name).collect();
        format!(
            "All {} libraries with CUDA kernels run on {}",
            total - unreadable,
            gpus.join(", ")
        )
    };
    if unreadable > 0 {
        let _ = write!(s, "; {unreadable} of {total} could not be read");
    }
    s.push('.');
    s
}

fn gpu_name(g: &GpuReport) -> String {
    let sm = g.gpu.compute_capability.sm();
    match (g.gpu.index, &g.gpu.name) {
        (Some(i), Some(n)) => format!("GPU {i} {} ({sm})", line(n)),
        (None, Some(n)) if n.eq_ignore_ascii_case(&sm) => sm,
        (_, Some(n)) => format!("{} ({sm})", line(n)),
        _ => sm,
    }
}

/// The libraries of one GPU by the kind of verdict, in a fixed order: what cannot run first.
fn grouped(g: &GpuReport) -> Vec<(String, Vec<&str>)> {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for l in &g.libraries {
        let kind = match &l.verdict {
            Verdict::NoImage => "CANNOT RUN: no kernel image".to_string(),
            Verdict::PtxTooNewForDriver {
                via,
                needs_cuda,
                driver_cuda,
                ..
            } => format!("CANNOT RUN: PTX {via} needs CUDA {needs_cuda}, driver has {driver_cuda}"),
            Verdict::PtxJit { via } => {
                format!("runs through PTX JIT from {via} (slow first launch)")
            }
            Verdict::Native { .. } => "runs natively".to_string(),
        };
        match groups.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, v)) => v.push(&l.path),
            None => groups.push((kind, vec![&l.path])),
        }
    }
    groups.sort_by_key(|(k, _)| {
        if k.starts_with("CANNOT") {
            0
        } else if k.starts_with("runs through") {
            1
        } else {
            2
        }
    });
    groups
}

fn join(v: &[String]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.join(" ")
    }
}
