//! Advice for compiling CUDA extensions (flash-attn, DeepSpeed ops, vLLM from source) against
//! the chosen torch: which architectures, how many parallel jobs, which toolkit.

use std::collections::BTreeSet;

use cudoctor_kb::{ComputeCapability, Kb};

use crate::fit::Fit;
use crate::model::{BuildInput, BuildPlan, InstalledToolkit, ResolvedGpu};

/// Memory one parallel nvcc job may take. A heuristic: heavy template code (flash-attn,
/// cutlass) takes several GiB per job; flash-attn's README advises MAX_JOBS=4 below 96 GB.
const GIB_PER_JOB: f64 = 4.0;

pub(crate) fn plan(kb: &Kb, fit: &Fit<'_>, gpus: &[ResolvedGpu], input: &BuildInput) -> BuildPlan {
    let mut out = BuildPlan::default();
    let ccs: BTreeSet<ComputeCapability> = gpus.iter().map(|g| g.cc).collect();
    if !ccs.is_empty() {
        out.torch_cuda_arch_list = Some(
            ccs.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(";"),
        );
    }
    out.max_jobs = max_jobs(input, &mut out.notes);

    let want = fit.variant.cuda;
    match pick_toolkit(&input.toolkits, want) {
        Some(t) => {
            out.cuda_home = Some(t.path.clone());
            if t.version != want {
                out.notes.push(format!(
                    "CUDA_HOME={} is CUDA {} while torch was built with {want}: same major, so extension builds work (PyTorch warns about the minor difference)",
                    t.path, t.version
                ));
            }
            for cc in &ccs {
                match kb.nvcc_arch_range(t.version).and_then(|r| r.can_target(*cc)) {
                    Some(true) => {}
                    Some(false) => out.notes.push(format!(
                        "nvcc {} cannot compile for {}: build extensions for this GPU with an older toolkit of the same major, or not at all",
                        t.version,
                        cc.sm()
                    )),
                    None => out.notes.push(format!(
                        "whether nvcc {} can compile for {} is not confirmed",
                        t.version,
                        cc.sm()
                    )),
                }
            }
        }
        None => {
            out.install_toolkit = Some(want);
            let have = if input.toolkits.is_empty() {
                "none is installed".to_string()
            } else {
                format!(
                    "installed: {}",
                    input
                        .toolkits
                        .iter()
                        .map(|t| t.version.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            out.notes.push(format!(
                "no installed CUDA toolkit has torch's major version {} ({have}): install CUDA {want} and point CUDA_HOME at it, or extension builds fail with \"The detected CUDA version mismatches the version that was used to compile PyTorch\"",
                want.major
            ));
        }
    }
    out
}

/// Same major as torch's CUDA is required; the same minor is preferred, then the closest minor.
fn pick_toolkit(
    toolkits: &[InstalledToolkit],
    want: cudoctor_kb::CudaVersion,
) -> Option<&InstalledToolkit> {
    toolkits
        .iter()
        .filter(|t| t.version.major == want.major)
        .min_by_key(|t| {
            (
                t.version.minor.abs_diff(want.minor),
                std::cmp::Reverse(t.version),
            )
        })
}

fn max_jobs(input: &BuildInput, notes: &mut Vec<String>) -> Option<u32> {
    let by_memory = input
        .memory_gib
        .filter(|m| m.is_finite() && *m > 0.0)
        .map(|m| ((m / GIB_PER_JOB).floor() as u32).max(1));
    let jobs = match (by_memory, input.cores.filter(|c| *c > 0)) {
        (Some(m), Some(c)) => m.min(c),
        (Some(m), None) => m,
        (None, Some(c)) => {
            notes.push(format!(
                "memory unknown: MAX_JOBS={c} (one per core) may exhaust memory on heavy extensions"
            ));
            c
        }
        (None, None) => return None,
    };
    notes.push(format!(
        "MAX_JOBS={jobs}: at most one job per core and about {GIB_PER_JOB} GiB of memory per job (a heuristic)"
    ));
    Some(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_kb::CudaVersion;

    fn tk(v: &str) -> InstalledToolkit {
        InstalledToolkit {
            version: v.parse().unwrap(),
            path: format!("/usr/local/cuda-{v}"),
        }
    }

    #[test]
    fn toolkit_choice_prefers_same_minor_then_closest() {
        let all = [tk("11.8"), tk("12.4"), tk("12.8"), tk("13.0")];
        let pick =
            |v: &str| pick_toolkit(&all, v.parse::<CudaVersion>().unwrap()).map(|t| t.path.clone());
        assert_eq!(pick("12.8").as_deref(), Some("/usr/local/cuda-12.8"));
        assert_eq!(pick("12.6").as_deref(), Some("/usr/local/cuda-12.8"));
        assert_eq!(pick("13.2").as_deref(), Some("/usr/local/cuda-13.0"));
        assert_eq!(pick("10.2"), None);
    }

    #[test]
    fn max_jobs_fits_memory_and_cores() {
        let mut notes = Vec::new();
        let b = |m: Option<f64>, c: Option<u32>| BuildInput {
            memory_gib: m,
            cores: c,
            toolkits: vec![],
        };
        assert_eq!(max_jobs(&b(Some(64.0), Some(32)), &mut notes), Some(16));
        assert_eq!(max_jobs(&b(Some(512.0), Some(32)), &mut notes), Some(32));
        assert_eq!(max_jobs(&b(Some(2.0), Some(8)), &mut notes), Some(1));
        assert_eq!(max_jobs(&b(None, Some(8)), &mut notes), Some(8));
        assert_eq!(max_jobs(&b(Some(f64::NAN), None), &mut notes), None);
        assert_eq!(max_jobs(&b(None, None), &mut notes), None);
    }
}
