//! The reverse question: given a torch release (and optionally a CUDA variant), which drivers,
//! GPUs and Pythons can run it.

use serde::Serialize;

use cudoctor_kb::{ArchListBasis, CudaVersion, DriverVersion, Kb};

use crate::model::Commands;
use crate::PlanError;

/// What one variant of a release needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VariantRequirements {
    pub variant: String,
    pub cuda: CudaVersion,
    /// Least Linux driver that runs it natively (the toolkit's GA minimum).
    pub min_driver: Option<DriverVersion>,
    /// Least Linux driver that runs it at all (NVIDIA's minor-version compatibility floor).
    pub min_driver_compat: Option<DriverVersion>,
    pub min_driver_windows: Option<DriverVersion>,
    /// TORCH_CUDA_ARCH_LIST of the build, None when unknown.
    pub arch_list: Option<Vec<String>>,
    pub arch_list_basis: Option<ArchListBasis>,
    /// "sm_75 .. sm_120 (machine code); newer through PTX of sm_120" or why unknown.
    pub gpus: String,
    pub commands: Commands,
    pub pypi_default: bool,
}

/// Everything needed to run one release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReverseAnswer {
    pub torch: String,
    pub torchvision: Option<String>,
    pub torchaudio: Option<String>,
    pub python: Vec<String>,
    pub variants: Vec<VariantRequirements>,
    pub sources: Vec<String>,
}

/// Which drivers and GPUs can run `torch` (a release "2.7.1" or a series "2.7": its newest
/// release), in every variant or only in CUDA `cuda`.
pub fn reverse(
    kb: &Kb,
    torch: &str,
    cuda: Option<CudaVersion>,
) -> Result<ReverseAnswer, PlanError> {
    let r = kb
        .torch(torch)
        .ok_or_else(|| PlanError::UnknownTorch(torch.to_string()))?;
    let variants: Vec<VariantRequirements> = r
        .variants
        .iter()
        .filter(|v| cuda.is_none_or(|c| v.cuda == c))
        .map(|v| {
            let compat = if v.cuda >= CudaVersion::new(11, 1) {
                kb.minor_compat_floor(v.cuda.major)
            } else {
                None
            };
            VariantRequirements {
                variant: v.tag.clone(),
                cuda: v.cuda,
                min_driver: kb.toolkit_min_driver(v.cuda),
                min_driver_compat: compat,
                min_driver_windows: kb.toolkit_min_driver_windows(v.cuda),
                arch_list: v.arch_list.clone(),
                arch_list_basis: v.arch_list_basis,
                gpus: gpu_summary(v),
                commands: crate::commands::commands(r, &v.tag),
                pypi_default: r.pypi_default.as_deref() == Some(v.tag.as_str()),
            }
        })
        .collect();
    if variants.is_empty() {
        return Err(PlanError::NoSuchVariant {
            torch: r.version.clone(),
            cuda: cuda.map(|c| c.to_string()).unwrap_or_default(),
            variants: r
                .variants
                .iter()
                .map(|v| v.tag.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(ReverseAnswer {
        torch: r.version.clone(),
        torchvision: r.torchvision.clone(),
        torchaudio: r.torchaudio.clone(),
        python: r.python.clone(),
        variants,
        sources: r.sources.clone(),
    })
}

fn gpu_summary(v: &cudoctor_kb::TorchVariant) -> String {
    let Some(archs) = v.archs() else {
        return "arch list unknown: which GPUs it supports is not confirmed".into();
    };
    let sass: Vec<String> = archs.iter().map(|a| a.cc.sm()).collect();
    let mut s = format!("machine code for {}", sass.join(", "));
    if let Some(first) = archs.first() {
        s.push_str(&format!(
            "; runs on compute capability {} and newer minors of each listed major",
            first.cc
        ));
    }
    match archs.iter().rev().find(|a| a.ptx) {
        Some(p) => s.push_str(&format!(
            "; newer GPUs through PTX of {} (JIT at first use)",
            p.cc.sm()
        )),
        None => s.push_str("; no PTX, so no GPU newer than the list"),
    }
    if let Some(b) = v.arch_list_basis {
        s.push_str(&format!(" (list {})", b.describe()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reverse_torch_2_5_cu124() {
        let kb = Kb::embedded();
        let a = reverse(kb, "2.5", Some("12.4".parse().unwrap())).unwrap();
        assert_eq!(a.torch, "2.5.1");
        let [v] = a.variants.as_slice() else {
            panic!("one variant expected")
        };
        assert_eq!(v.min_driver.as_ref().unwrap().to_string(), "550.54.14");
        assert_eq!(
            v.min_driver_compat.as_ref().unwrap().to_string(),
            "525.60.13"
        );
        assert!(v.pypi_default);
        assert!(v.gpus.contains("sm_50"));
        assert!(reverse(kb, "2.5", Some("13.0".parse().unwrap())).is_err());
        assert!(reverse(kb, "0.1", None).is_err());
    }
}
