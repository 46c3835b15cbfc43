//! `cudoctor kernels`'s text: the verdict first, the architectures each library carries, then
//! per GPU the libraries grouped by verdict (one line per kind of verdict, not one per library),
//! and the verdict again last.

use std::fmt::Write;

use cudoctor_fatbin::compat::Verdict;
use cudoctor_fatbin::report::{GpuReport, KernelsReport};

use cudoctor_types::inert::line;

use crate::layout::{common_dir, width, wrap, Legend};

pub fn render_kernels_text(r: &KernelsReport) -> String {
    let mut legend = Legend::default();
    if let Some(dir) = common_dir(r.libraries.iter().map(|l| l.path.as_str())) {
        legend.add("<dir>", &dir);
    }
    let mut out = String::new();
    let verdict = wrap("", "    ", &kernels_verdict(r), width());
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
                    wrap("    error: ", "           ", &line(e), width())
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "{}",
                    wrap("    SASS  ", "          ", &join(&lib.sass), width())
                );
                let _ = writeln!(
                    out,
                    "{}",
                    wrap("    PTX   ", "          ", &join(&lib.ptx), width())
                );
            }
        }
        if let Some(n) = r.not_judged.iter().find(|n| n.path == lib.path) {
            let _ = writeln!(
                out,
                "{}",
                wrap("    not judged: ", "          ", &line(&n.why), width())
            );
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
            let _ = writeln!(out, "{}", wrap(&head, &pad, &names.join(" "), width()));
        }
    }
    for n in &r.notes {
        let _ = writeln!(out, "\n{}", wrap("note: ", "    ", &line(n), width()));
    }
    let _ = writeln!(out, "\n{verdict}");
    out
}

/// The kernels report as Markdown: the verdict, a table of the architectures each library
/// carries, and per GPU a table of the libraries by verdict.
pub fn render_kernels_markdown(r: &KernelsReport) -> String {
    use crate::doc::{code, text, Block, Tone};
    let mut blocks = vec![
        Block::Title(text("cudoctor kernels")),
        Block::Summary(kernels_verdict(r)),
    ];
    let rows = r
        .libraries
        .iter()
        .map(|lib| {
            let (sass, ptx) = match &lib.error {
                Some(e) => (text(format!("error: {}", line(e))), text("")),
                None => (text(join(&lib.sass)), text(join(&lib.ptx))),
            };
            let note = r
                .not_judged
                .iter()
                .find(|n| n.path == lib.path)
                .map(|n| format!("not judged: {}", line(&n.why)))
                .unwrap_or_default();
            vec![code(lib.path.clone()), sass, ptx, text(note)]
        })
        .collect();
    for n in &r.notes {
        blocks.push(Block::Summary(format!("Note: {}", line(n))));
    }
    if !r.libraries.is_empty() {
        blocks.push(Block::table(
            "Libraries",
            Tone::Plain,
            vec!["library", "SASS", "PTX", "note"],
            rows,
        ));
    }
    for g in &r.gpus {
        let groups = grouped(g);
        if groups.is_empty() {
            continue;
        }
        let tone = if groups.iter().any(|(k, _)| k.starts_with("CANNOT")) {
            Tone::Error
        } else {
            Tone::Plain
        };
        let rows = groups
            .into_iter()
            .map(|(kind, libs)| {
                let names: Vec<String> = libs
                    .iter()
                    .map(|p| line(p.rsplit('/').next().unwrap_or(p)).into_owned())
                    .collect();
                vec![text(kind), text(names.join(", "))]
            })
            .collect();
        blocks.push(Block::table(
            gpu_name(g),
            tone,
            vec!["verdict", "libraries"],
            rows,
        ));
    }
    crate::doc::markdown(&blocks)
}

/// One sentence: how many libraries cannot run on which GPU and what to run next, or that all
/// run, or that there was nothing to judge for.
pub fn kernels_verdict(r: &KernelsReport) -> String {
    let total = r.libraries.len();
    let unreadable = r.libraries.iter().filter(|l| l.error.is_some()).count();
    let mut parts = Vec::new();
    for g in &r.gpus {
        let failing: Vec<&str> = g
            .libraries
            .iter()
            .filter(|l| !l.verdict.runs())
            .map(|l| l.path.as_str())
            .collect();
        if failing.is_empty() {
            continue;
        }
        let sm = g.gpu.compute_capability.sm();
        let torchs = failing.iter().filter(|p| of_torch(p)).count();
        // `plan` chooses torch builds: it is the next step only for torch's own libraries.
        let next = match (torchs, failing.len() - torchs) {
            (_, 0) => format!("→ cudoctor plan --gpu {sm}"),
            (0, _) => format!("(none is torch's: rebuild them for {sm})"),
            (_, 1) => format!("→ cudoctor plan --gpu {sm} for torch's; rebuild the other one"),
            (_, others) => {
                format!("→ cudoctor plan --gpu {sm} for torch's; rebuild the other {others}")
            }
        };
        parts.push(format!(
            "{} of {} libraries cannot run on {} {next}",
            failing.len(),
            g.libraries.len(),
            gpu_name(g)
        ));
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
            total - unreadable - r.not_judged.len(),
            gpus.join(", ")
        )
    };
    if unreadable > 0 {
        let _ = write!(s, "; {unreadable} of {total} could not be read");
    }
    if !r.not_judged.is_empty() && !r.gpus.is_empty() {
        let _ = write!(s, "; {} not judged (below each)", r.not_judged.len());
    }
    s.push('.');
    s
}

/// A library of torch, torchvision or torchaudio (their package directory, or the `.libs`
/// directory their wheels vendor libraries into), the builds `cudoctor plan` chooses.
fn of_torch(path: &str) -> bool {
    let mut parts = path.split(['/', '\\']);
    while let Some(part) = parts.next() {
        if part == "site-packages" || part == "dist-packages" {
            let package = parts.next().unwrap_or("");
            let package = package.strip_suffix(".libs").unwrap_or(package);
            return matches!(package, "torch" | "torchvision" | "torchaudio");
        }
    }
    false
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

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_fatbin::compat::{ComputeCapability, Verdict};
    use cudoctor_fatbin::report::{GpuTarget, LibraryReport, LibraryVerdict};

    fn report(failing: &[&str]) -> KernelsReport {
        let all: Vec<&str> = failing
            .iter()
            .copied()
            .chain(["/env/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13"])
            .collect();
        KernelsReport {
            libraries: all
                .iter()
                .map(|p| LibraryReport {
                    path: p.to_string(),
                    sass: vec!["sm_90".into()],
                    ..Default::default()
                })
                .collect(),
            gpus: vec![GpuReport {
                gpu: GpuTarget {
                    index: None,
                    name: Some("sm_61".into()),
                    compute_capability: ComputeCapability::new(6, 1),
                },
                libraries: all
                    .iter()
                    .map(|p| LibraryVerdict {
                        path: p.to_string(),
                        verdict: if failing.contains(p) {
                            Verdict::NoImage
                        } else {
                            Verdict::PtxJit {
                                via: "compute_50".into(),
                            }
                        },
                    })
                    .collect(),
            }],
            driver_cuda: None,
            not_judged: Vec::new(),
            notes: Vec::new(),
        }
    }

    const TORCH: &str = "/env/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so";
    const VISION: &str = "/env/lib/python3.12/site-packages/torchvision.libs/libnvjpeg.so.13";
    const FLASH: &str = "/env/lib/python3.12/site-packages/flash_attn_2_cuda.so";

    #[test]
    fn plan_is_the_next_step_only_for_torchs_libraries() {
        assert_eq!(
            kernels_verdict(&report(&[TORCH, VISION])),
            "2 of 3 libraries cannot run on sm_61 → cudoctor plan --gpu sm_61."
        );
        assert_eq!(
            kernels_verdict(&report(&[FLASH])),
            "1 of 2 libraries cannot run on sm_61 (none is torch's: rebuild them for sm_61)."
        );
        assert_eq!(
            kernels_verdict(&report(&[TORCH, FLASH])),
            "2 of 3 libraries cannot run on sm_61 → cudoctor plan --gpu sm_61 for torch's; rebuild the other one."
        );
    }
}
