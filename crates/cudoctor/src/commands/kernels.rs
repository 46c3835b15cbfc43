//! `cudoctor kernels [PATH..]`: the GPU architectures each CUDA library carries, and for each
//! GPU (present, or named with --gpu) whether it runs natively, through PTX JIT, or not at all.

use std::path::PathBuf;

use anyhow::bail;
use cudoctor_collect::{driver, kernels, python};
use cudoctor_fatbin::compat::CudaVersion;
use cudoctor_fatbin::report::{kernels_report, GpuTarget};
use cudoctor_fatbin::{default_threads, scan_many};
use cudoctor_render::render_kernels_text;

use crate::cli::{IssueFormat, KernelsArgs};
use crate::output::{host, knowledge_base};
use crate::Outcome;

pub fn run(args: &KernelsArgs) -> anyhow::Result<Outcome> {
    let host = host(&args.machine)?;
    let pythons = crate::output::check_pythons(&host, &args.python)?;
    let kb = knowledge_base(&args.machine)?;
    let envs = if args.paths.is_empty() {
        python::collect(&host, &pythons)
    } else {
        Vec::new()
    };
    let machine_paths: Vec<String> = if args.paths.is_empty() {
        if envs.is_empty() {
            bail!("no Python environment found; name libraries or directories to scan");
        }
        envs.iter()
            .flat_map(|e| {
                e.site_packages
                    .iter()
                    .flat_map(|sp| kernels::expand(&host, sp))
            })
            .collect()
    } else {
        let mut out = Vec::new();
        for p in &args.paths {
            let abs = crate::output::absolute_machine_path(p)?;
            if !host.exists(&abs) {
                bail!("{p}: no such file or directory");
            }
            crate::output::check_input_path(p, &host.fs_path(&abs))?;
            out.extend(kernels::expand(&host, &abs));
        }
        out
    };
    let mut targets = Vec::new();
    let mut driver_cuda = None;
    if args.gpu.is_empty() {
        let facts = driver::collect(&host);
        driver_cuda = facts
            .max_cuda
            .as_ref()
            .and_then(|c| c.value.parse::<CudaVersion>().ok());
        for g in &facts.gpus {
            let cc = kb.reported_gpu_cc(g.compute_capability.as_deref(), &g.name);
            if let Some((cc, _)) = cc {
                targets.push(GpuTarget {
                    index: Some(g.index),
                    name: Some(g.name.clone()),
                    compute_capability: cc,
                });
            }
        }
    } else {
        for g in &args.gpu {
            let named = kb
                .resolve_gpu(g)
                .map_err(|e| anyhow::anyhow!("--gpu: {e}"))?;
            targets.push(GpuTarget {
                index: None,
                name: Some(g.clone()),
                compute_capability: named.cc,
            });
        }
    }
    let real: Vec<PathBuf> = machine_paths.iter().map(|p| host.fs_path(p)).collect();
    let scans: Vec<(PathBuf, _)> = scan_many(&real, default_threads())
        .into_iter()
        .zip(&machine_paths)
        .map(|((_, r), m)| (cudoctor_types::os_text::to_path(m), r))
        .collect();
    let mut report = kernels_report(&scans, &targets, driver_cuda);
    // Libraries without device code say nothing about GPUs; keep them out of the listing.
    report
        .libraries
        .retain(|l| l.error.is_some() || !l.sass.is_empty() || !l.ptx.is_empty());
    let keep: Vec<String> = report.libraries.iter().map(|l| l.path.clone()).collect();
    for g in &mut report.gpus {
        g.libraries.retain(|l| keep.contains(&l.path));
    }
    mark_unloaded_bitsandbytes(&host, &envs, &keep, &mut report);
    let failing = report
        .gpus
        .iter()
        .any(|g| g.libraries.iter().any(|l| !l.verdict.runs()));
    match args.format {
        IssueFormat::Json => crate::outln!(
            "{}",
            crate::build_info::with_build_header(&serde_json::to_string_pretty(&report)?)
        ),
        IssueFormat::Text => crate::out!("{}", render_kernels_text(&report)),
        IssueFormat::Markdown => {
            crate::out!("{}", cudoctor_render::render_kernels_markdown(&report))
        }
    }
    // Inputs named on the command line of which none could be read: nothing was judged, and
    // the report (which names each error) must not pass for a healthy one.
    let unreadable = !args.paths.is_empty()
        && !report.libraries.is_empty()
        && report.libraries.iter().all(|l| l.error.is_some());
    Ok(if failing || unreadable {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}

/// bitsandbytes loads the one build of its library that torch's CUDA (or BNB_CUDA_VERSION)
/// chooses: the others are judged for no GPU, as check leaves them out of KRN002.
fn mark_unloaded_bitsandbytes(
    host: &cudoctor_collect::host::Host,
    envs: &[cudoctor_snapshot::PythonEnv],
    paths: &[String],
    report: &mut cudoctor_fatbin::report::KernelsReport,
) {
    use cudoctor_analyse::bitsandbytes::{unloaded, OVERRIDE_VAR};
    let override_value = host.var(OVERRIDE_VAR).filter(|v| !v.is_empty());
    for env in envs {
        let torch = env.torch.as_ref();
        let torch_cuda = torch.and_then(cudoctor_snapshot::TorchBuild::cuda_version);
        let (skipped, loaded) = unloaded(
            env,
            paths.iter().map(String::as_str),
            torch_cuda,
            override_value,
        );
        let why = match (loaded, override_value) {
            (Some(c), Some(v)) => format!(
                "never loaded: {OVERRIDE_VAR}={v} makes bitsandbytes load its CUDA {c} build"
            ),
            (Some(c), None) => format!(
                "never loaded: bitsandbytes loads its CUDA {c} build for torch {}",
                torch.map_or("", |t| t.version.as_str())
            ),
            (None, _) => match torch {
                Some(t) if torch_cuda.is_some() => format!(
                    "never loaded: bitsandbytes loads none of its CUDA builds for torch {} (none it would choose is installed)",
                    t.version
                ),
                Some(t) => format!(
                    "never loaded: torch {} has no CUDA, so bitsandbytes loads none of its CUDA builds",
                    t.version
                ),
                None => "never loaded: without torch, bitsandbytes does not import".to_string(),
            },
        };
        for path in skipped {
            report.not_judged(path, why.clone());
        }
    }
}
