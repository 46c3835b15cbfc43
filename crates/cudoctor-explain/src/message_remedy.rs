//! Fixes the message's own facts call for, chosen by the one build chooser (`cudoctor-plan`),
//! whatever machine `explain` runs on: the message says which machine it came from.

use crate::category::Category;
use cudoctor_kb::{CudaVersion, Kb};
use cudoctor_plan::{torch_index_url, FixStep, Install, TargetEnv};
use std::collections::BTreeMap;

/// Extra fixes for a message of `category` with `fields`, commands written for `target`.
pub(crate) fn fixes(
    kb: &Kb,
    category: Category,
    fields: &BTreeMap<String, String>,
    target: &TargetEnv,
) -> Vec<FixStep> {
    match category {
        Category::DriverTooOld => keep_the_driver(kb, fields, target).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// "found version 11040" names the CUDA the driver supports, so its branch: the oldest whose
/// highest CUDA that is. NVIDIA's minor-version compatibility lets that driver run every build of
/// its CUDA major, so "a build for an older CUDA than the driver's" is too strict; the build to
/// keep the driver with is the one `cudoctor plan --driver R` chooses.
fn keep_the_driver(
    kb: &Kb,
    fields: &BTreeMap<String, String>,
    target: &TargetEnv,
) -> Option<Vec<FixStep>> {
    let found: CudaVersion = fields.get("found_cuda")?.parse().ok()?;
    let branch = kb
        .driver_branches()
        .iter()
        .filter(|b| b.max_cuda == Some(found))
        .map(|b| b.branch)
        .min()?;
    let input = cudoctor_plan::PlanInput {
        driver: Some(branch.to_string().parse().ok()?),
        ..Default::default()
    };
    let plan = cudoctor_plan::plan(kb, &input).ok()?;
    let (torch, variant) = (plan.torch?, plan.variant?);
    let mut pins = vec![format!("torch=={torch}")];
    pins.extend(plan.torchvision.map(|v| format!("torchvision=={v}")));
    pins.extend(plan.torchaudio.map(|v| format!("torchaudio=={v}")));
    let install = Install::pins(pins).index(torch_index_url(Some(&variant)));
    let compat = kb
        .minor_compat_floor(found.major)
        .map(|f| {
            format!(
                " (NVIDIA's minor-version compatibility: any CUDA {}.x build on a driver >= {f})",
                found.major
            )
        })
        .unwrap_or_default();
    Some(vec![
        FixStep::Prose(format!(
            "Keep the driver (R{branch}, CUDA {found}){compat} and install torch {torch} ({variant}), as `cudoctor plan --driver {branch}` chooses:"
        )),
        target.step(target.install(&install)),
    ])
}

/// The title, cause and fix of a name one installed package asks of another that the other's
/// release lacks (`clause::api_gap`, with the package whose frame raised): the two releases
/// were not made for each other, so one of them is changed to the other's.
pub(crate) fn api_gap(fields: &BTreeMap<String, String>) -> Option<(String, String, Vec<String>)> {
    let module = fields.get("api_module")?;
    let name = fields.get("api_name")?;
    let caller = fields.get("api_caller")?;
    Some((
        format!("{caller} and {module} are releases that do not fit together"),
        format!(
            "{caller} uses '{name}' from {module}, and the installed {module} has no such name: {caller} was made for another {module} release (one that still had it, if {module} removed it, or a newer one that added it)."
        ),
        vec![
            format!(
                "See which {module} release {caller} was made for ('pip show {caller} {module}', its requirements or release notes), and align the two: upgrade {caller} to a release made for the installed {module}, or install the {module} release it needs (for a name {module} removed, pin {module} below the release that removed it, '{module}<X' with X that release)."
            ),
        ],
    ))
}
