//! `cudoctor plan`: the right torch / torchvision / torchaudio build and CUDA variant for a
//! driver, a set of GPUs and a Python version, as install commands, with the reasoning.
//!
//! Pure: every fact comes from the inputs and the knowledge base (`cudoctor-kb`); no I/O.
//!
//! ```
//! use cudoctor_kb::Kb;
//! use cudoctor_plan::{plan, PlanInput};
//! let input = PlanInput {
//!     driver: Some("535.104.05".parse().unwrap()),
//!     gpus: vec!["NVIDIA GeForce RTX 3090".into()],
//!     python: Some("3.11".into()),
//!     ..PlanInput::default()
//! };
//! let p = plan(Kb::embedded(), &input).unwrap();
//! assert!(p.variant.unwrap().starts_with("cu12"));
//! ```

mod build;
mod choose;
mod commands;
pub mod companions;
mod current;
mod fit;
pub mod fix;
pub(crate) mod frameworks;
pub mod install;
mod model;
mod platform;
mod remedy;
mod reverse;
pub mod snapshot;
pub mod verify;

pub use choose::{plan, JETSON_INSTALL};
pub use commands::{commands, parse_pip, ParsedPip, PYTORCH_INDEX};
pub use companions::{companion_fit, CompanionFit};
pub use fix::{
    comment, heredoc, powershell_set_env, quote, quote_bytes, quote_powershell,
    quote_powershell_path, FixStep,
};
pub use frameworks::{
    build_for_major, kept_major, one_major, wheel_major, FrameworkFit, MajorWheel, OneMajor,
    OtherBuild,
};
pub use install::{torch_index_url, Install};
pub use model::{
    parse_installer, Avoid, BuildInput, BuildPlan, Commands, CurrentEnv, CurrentLine,
    CurrentVerdict, DriverUpgrade, InstalledToolkit, Installer, Plan, PlanInput, ResolvedGpu,
    TargetEnv,
};
pub use platform::{branch_of, driver_for_cuda, DriverFor};
pub use remedy::{remedy, Remedy};
pub use reverse::{reverse, ReverseAnswer, VariantRequirements};

use cudoctor_kb::{ComputeCapability, Kb};

/// Why no plan could be made from the inputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The one refusal of a `--gpu` spelling, the same for check, kernels, plan and explain.
    #[error(transparent)]
    UnknownGpu(#[from] cudoctor_kb::UnknownGpu),
    #[error("torch {0:?} is not a release in the knowledge base")]
    UnknownTorch(String),
    #[error("torch {torch} has no CUDA {cuda} build (its variants: {variants})")]
    NoSuchVariant {
        torch: String,
        cuda: String,
        variants: String,
    },
    #[error("unknown installer {0:?}: use pip, uv or conda")]
    UnknownInstaller(String),
}

/// Reads each GPU as a compute capability ("sm_86", "8.6") or a product name ("RTX 3090").
pub fn resolve_gpus(kb: &Kb, gpus: &[String]) -> Result<Vec<ResolvedGpu>, PlanError> {
    gpus.iter()
        .map(|g| {
            let named = kb.resolve_gpu(g)?;
            Ok(ResolvedGpu {
                branches: kb.gpu_branches(named.cc, named.model),
                given: named.given,
                cc: named.cc,
                architecture: match named.model {
                    Some(m) => Some(m.architecture.clone()),
                    None => architecture_of(kb, named.cc),
                },
            })
        })
        .collect()
}

/// How a detected GPU enters a plan, the same for `check` and `plan`: by its product name when
/// the knowledge base knows the product (and the driver's capability, if any, agrees), so that
/// product facts such as its driver branches apply; else by the capability the driver reported.
pub fn gpu_key(kb: &Kb, name: &str, reported_cc: Option<&str>) -> String {
    let reported = reported_cc.and_then(|c| c.parse::<ComputeCapability>().ok());
    match (kb.gpu(name), reported) {
        (Some(m), Some(cc)) if m.cc == cc => name.to_string(),
        (Some(_), None) | (None, None) => name.to_string(),
        (_, Some(cc)) => cc.to_string(),
    }
}

/// The architecture name of a capability, when every product of that capability shares one.
fn architecture_of(kb: &Kb, cc: ComputeCapability) -> Option<String> {
    let mut names = kb
        .gpus()
        .iter()
        .filter(|g| g.cc == cc)
        .map(|g| g.architecture.as_str());
    let first = names.next()?;
    names.all(|n| n == first).then(|| first.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_resolve_by_name_or_capability() {
        let kb = Kb::embedded();
        let got = resolve_gpus(
            kb,
            &[
                "sm_61".into(),
                "RTX 4090".into(),
                "12.0".into(),
                "NVIDIA H200".into(),
            ],
        )
        .unwrap();
        let ccs: Vec<String> = got.iter().map(|g| g.cc.to_string()).collect();
        assert_eq!(ccs, ["6.1", "8.9", "12.0", "9.0"]);
        assert_eq!(got[0].architecture.as_deref(), Some("Pascal"));
        assert_eq!(
            resolve_gpus(kb, &["NVIDIA B100".into()]),
            Err(PlanError::UnknownGpu(cudoctor_kb::UnknownGpu::Name(
                "NVIDIA B100".into()
            )))
        );
    }

    #[test]
    fn installer_parses() {
        assert_eq!(parse_installer("UV").unwrap(), Installer::Uv);
        assert!(parse_installer("poetry").is_err());
    }
}
