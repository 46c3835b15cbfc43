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
    let mut found = cudoctor_snapshot::BinaryDiscovery::default();
    let machine_paths: Vec<String> = if args.paths.is_empty() {
        if envs.is_empty() {
            bail!("no Python environment found; name libraries or directories to scan");
        }
        let mut paths: Vec<String> = envs
            .iter()
            .flat_map(|e| {
                e.site_packages
                    .iter()
                    .flat_map(|sp| kernels::expand(&host, sp))
            })
            .collect();
        // The CUDA binaries outside the site directories' packages too: torch's extension
        // cache, editable source trees, PYTHONPATH, the project in the current directory.
        let project = if args.machine.root.is_none() {
            std::env::current_dir().ok().and_then(|cwd| {
                cudoctor_collect::discovery::project_of_cwd(
                    &host,
                    &cudoctor_types::os_text::from_path(&cwd),
                )
            })
        } else {
            None
        };
        found = cudoctor_collect::discovery::collect(&host, &envs, project.as_ref());
        let mut seen: std::collections::HashSet<String> = paths.iter().cloned().collect();
        for b in &found.binaries {
            if seen.insert(b.path.clone()) {
                paths.push(b.path.clone());
            }
        }
        paths
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
    // In batches, each begun only before the deadline (--timeout): thousands of libraries,
    // or a few of many GB, end there; those not read are said as not judged.
    let batch = default_threads() * 4;
    let mut scanned = Vec::with_capacity(real.len());
    for chunk in real.chunks(batch) {
        if host.deadline().passed() {
            break;
        }
        scanned.extend(scan_many(chunk, default_threads()));
    }
    let unread = &machine_paths[scanned.len()..];
    let scans: Vec<(PathBuf, _)> = scanned
        .into_iter()
        .zip(&machine_paths)
        .map(|((_, r), m)| (cudoctor_types::os_text::to_path(m), r))
        .collect();
    let mut report = kernels_report(&scans, &targets, driver_cuda);
    if let Some(first) = unread.first() {
        let budget = host.deadline().budget_s().unwrap_or(0.0);
        report.not_judged.push(cudoctor_fatbin::report::NotJudged {
            path: first.clone(),
            why: format!(
                "stopped early: the time budget of {budget} s (--timeout) was spent; this and {} more libraries not read",
                unread.len() - 1
            ),
        });
    }
    // Libraries without device code say nothing about GPUs; keep them out of the listing.
    report
        .libraries
        .retain(|l| l.error.is_some() || !l.sass.is_empty() || !l.ptx.is_empty());
    let keep: Vec<String> = report.libraries.iter().map(|l| l.path.clone()).collect();
    for g in &mut report.gpus {
        g.libraries.retain(|l| keep.contains(&l.path));
    }
    mark_unloaded_bitsandbytes(&host, &envs, &keep, &mut report);
    mark_stale_jit_builds(&found, &keep, &mut report);
    mark_optional_backends(&host, &envs, &mut report);
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

/// JIT builds in the folder of another Python or torch build are loaded by no environment
/// found: judged for no GPU, as check leaves them out of KRN002 (KRN006 names them).
fn mark_stale_jit_builds(
    found: &cudoctor_snapshot::BinaryDiscovery,
    paths: &[String],
    report: &mut cudoctor_fatbin::report::KernelsReport,
) {
    for b in &found.binaries {
        let cudoctor_snapshot::BinaryOrigin::TorchExtensionCache {
            from_env_var: false,
            build_folder,
            ..
        } = &b.origin
        else {
            continue;
        };
        if b.env_prefix.is_some() || !paths.contains(&b.path) {
            continue;
        }
        report.not_judged(
            &b.path,
            match build_folder {
                Some(f) => format!(
                    "never loaded: a JIT build in torch's folder {f}, which no Python environment found here builds and loads in"
                ),
                None => "never loaded: a JIT build from a torch release before the build folders".to_string(),
            },
        );
    }
}

/// Architecture-specific modules that their package imports only conditionally (vLLM's FA3 and
/// FlashMLA modules, sm_90a only) and that a target GPU has no code in: optional backends, judged
/// for no GPU here as check makes them information (KRN002), with the import that shows it.
fn mark_optional_backends(
    host: &cudoctor_collect::host::Host,
    envs: &[cudoctor_snapshot::PythonEnv],
    report: &mut cudoctor_fatbin::report::KernelsReport,
) {
    if envs.is_empty() {
        return;
    }
    let mut images = cudoctor_snapshot::KernelImages {
        scope: String::new(),
        libraries: report
            .libraries
            .iter()
            .filter(|l| l.error.is_none())
            .map(|l| cudoctor_snapshot::LibraryImages {
                path: l.path.clone(),
                sass: l.sass.clone(),
                ptx: l.ptx.clone(),
                ..Default::default()
            })
            .collect(),
    };
    python::dispatch::mark_optional(host, envs, &mut images);
    for lib in &images.libraries {
        let Some(c) = &lib.loaded_if else { continue };
        let fails = report.gpus.iter().any(|g| {
            g.libraries
                .iter()
                .any(|l| l.path == lib.path && !l.verdict.runs())
        });
        if fails {
            report.not_judged(
                &lib.path,
                format!(
                    "an optional backend: {} is {} ({}); on a GPU it has no code for, its package uses another",
                    c.module,
                    c.how.describe(),
                    c.at
                ),
            );
        }
    }
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
