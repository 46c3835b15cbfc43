//! `cudoctor kernels`: the kernel images a collection read, judged for each GPU present (or
//! named with `--gpu`): natively, through PTX JIT, or not at all. The libraries an
//! environment's import never loads are judged for no GPU, as check leaves them out of KRN002.

use cudoctor_fatbin::report::{judged, GpuTarget, KernelsReport, LibraryReport, NotJudged};
use cudoctor_kb::{Kb, UnknownGpu};
use cudoctor_snapshot::{BinaryOrigin, ScanKind, Snapshot, TorchBuild};
use cudoctor_types::CudaVersion;

use crate::bitsandbytes::{unloaded, OVERRIDE_VAR};
use crate::Context;

/// The report of `snap`'s kernel images for the GPUs `named` (`--gpu`), else for the GPUs the
/// driver reports (with its CUDA version for the PTX checks).
pub fn report(snap: &Snapshot, kb: &Kb, named: &[String]) -> Result<KernelsReport, UnknownGpu> {
    let mut targets = Vec::new();
    let mut driver_cuda = None;
    if named.is_empty() {
        driver_cuda = snap
            .driver
            .max_cuda
            .as_ref()
            .and_then(|c| c.value.parse::<CudaVersion>().ok());
        for g in &snap.driver.gpus {
            if let Some((cc, _)) = kb.reported_gpu_cc(g.compute_capability.as_deref(), &g.name) {
                targets.push(GpuTarget {
                    index: Some(g.index),
                    name: Some(g.name.clone()),
                    compute_capability: cc,
                });
            }
        }
    } else {
        for g in named {
            targets.push(GpuTarget {
                index: None,
                name: Some(g.clone()),
                compute_capability: kb.resolve_gpu(g)?.cc,
            });
        }
    }
    // Libraries without device code say nothing about GPUs; they are left out of the listing.
    let libraries: Vec<LibraryReport> = snap
        .kernel_images
        .iter()
        .flat_map(|k| &k.libraries)
        .filter(|l| l.error.is_some() || !l.sass.is_empty() || !l.ptx.is_empty())
        .map(|l| LibraryReport {
            path: l.path.clone(),
            sass: l.sass.clone(),
            ptx: l.ptx.clone(),
            lto: l.lto.clone(),
            ptx_isa: l.ptx_isa.clone(),
            error: l.error.clone(),
        })
        .collect();
    let mut report = judged(libraries, &targets, driver_cuda);
    // A scan the deadline or a cap stopped: what it did not read is not judged.
    for stop in snap
        .stopped_early
        .iter()
        .filter(|s| s.scan == ScanKind::KernelImages)
    {
        report.not_judged.push(NotJudged {
            path: stop.place.clone(),
            why: format!(
                "stopped early: {}; the libraries from here on were not read",
                stop.why
            ),
        });
    }
    let cx = Context::new(snap, kb);
    mark_unloaded_bitsandbytes(&cx, &mut report);
    mark_stale_jit_builds(snap, &mut report);
    mark_optional_backends(snap, &mut report);
    for env in snap.python_envs.iter().filter(|e| e.windows) {
        let torch = env
            .torch
            .as_ref()
            .map_or_else(String::new, |t| format!(" (torch {})", t.version));
        report.notes.push(format!(
            "{}{torch} is a Windows environment: the kernel images of its DLLs are not read (cudoctor reads the fat binaries of ELF libraries)",
            env.prefix
        ));
    }
    Ok(report)
}

/// True when some GPU's verdict on a library says it cannot run.
pub fn failing(report: &KernelsReport) -> bool {
    report
        .gpus
        .iter()
        .any(|g| g.libraries.iter().any(|l| !l.verdict.runs()))
}

/// JIT builds in the folder of another Python or torch build are loaded by no environment
/// found: judged for no GPU, as check leaves them out of KRN002 (KRN006 names them).
fn mark_stale_jit_builds(snap: &Snapshot, report: &mut KernelsReport) {
    let Some(found) = &snap.binaries else { return };
    for b in &found.binaries {
        let BinaryOrigin::TorchExtensionCache {
            from_env_var: false,
            build_folder,
            ..
        } = &b.origin
        else {
            continue;
        };
        if b.env_prefix.is_some() || !report.libraries.iter().any(|l| l.path == b.path) {
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
fn mark_optional_backends(snap: &Snapshot, report: &mut KernelsReport) {
    let Some(images) = &snap.kernel_images else {
        return;
    };
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
fn mark_unloaded_bitsandbytes(cx: &Context, report: &mut KernelsReport) {
    let override_value = cx.var(OVERRIDE_VAR);
    let paths: Vec<String> = report.libraries.iter().map(|l| l.path.clone()).collect();
    for env in &cx.snap.python_envs {
        let torch = env.torch.as_ref();
        let torch_cuda = torch.and_then(TorchBuild::cuda_version);
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
