use cudoctor_kb::CudaVersion;

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PLT002",
    name: "require-cuda-unmet",
    layer: Layer::Platform,
    severity: Severity::Error,
    summary: "The image's NVIDIA_REQUIRE_CUDA asks for a newer CUDA than the host driver runs",
    docs: r#"## What it checks
`NVIDIA_REQUIRE_CUDA` (set by NVIDIA's CUDA images, e.g. `cuda>=13.0 brand=tesla,driver>=535,...`)
against the highest CUDA the host driver supports, and whether the image's cuda-compat
forward-compatibility libraries are there to bridge the gap.

## Why it matters
The NVIDIA container runtime refuses such a container ("requirement error: unsatisfied
condition: cuda>=13.0"), or, when the check is disabled (NVIDIA_DISABLE_REQUIRE), the CUDA
runtime inside fails with "CUDA driver version is insufficient". cuda-compat bridges the gap
only on data-center GPUs with a supported driver branch.

## How to fix
Upgrade the host driver, or use an image built for an older CUDA (a tag matching the driver's
"CUDA Version").
"#,
    check,
};

/// `cuda>=13.0` from the variable's first clause.
pub fn required_cuda(value: &str) -> Option<CudaVersion> {
    value
        .split_whitespace()
        .find_map(|c| c.strip_prefix("cuda>="))
        .and_then(|v| v.parse().ok())
}

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(req) = ctx.var("NVIDIA_REQUIRE_CUDA") else {
        return Vec::new();
    };
    let (Some(needed), Some((max, source))) = (required_cuda(req), ctx.driver_max_cuda()) else {
        return Vec::new();
    };
    if max >= needed {
        return Vec::new();
    }
    let compat = &ctx.snap.platform.cuda_compat_paths;
    let mut f = Finding::new(
        &RULE,
        format!("The image requires CUDA {needed}; the host driver runs up to {max}"),
    )
    .evidence(format!("NVIDIA_REQUIRE_CUDA starts with cuda>={needed}"))
    .evidence(format!("driver's highest CUDA {max} (from {source})"))
    .evidence(ctx.driver_evidence());
    if compat.is_empty() {
        f = f.cause("The CUDA runtime inside the image is newer than the host driver and no forward-compatibility libraries are present.");
    } else {
        f = f
            .severity(Severity::Warning)
            .evidence(format!("cuda-compat libraries at {}", compat.join(", ")))
            .cause("The image carries cuda-compat forward-compatibility libraries, which work only on data-center GPUs with a supported driver branch; on other GPUs the runtime still fails.");
    }
    vec![f
        .fix(format!(
            "Upgrade the host driver to one that supports CUDA {needed}"
        ))
        .fix(format!("or use an image built for CUDA {max} or older"))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn an_image_newer_than_the_driver() {
        let mut s = machine(Some(("550.54.14", "12.4")), &[("NVIDIA L4", "8.9")]);
        s.env.insert(
            "NVIDIA_REQUIRE_CUDA".into(),
            "cuda>=13.0 brand=tesla,driver>=535,driver<536".into(),
        );
        assert_eq!(run(&RULE, &s)[0].severity, Severity::Error);
        s.platform.cuda_compat_paths = vec!["/usr/local/cuda-13.0/compat".into()];
        assert_eq!(run(&RULE, &s)[0].severity, Severity::Warning);
    }

    #[test]
    fn the_real_h200_container_is_fine() {
        let mut s = h200();
        s.env.insert(
            "NVIDIA_REQUIRE_CUDA".into(),
            "cuda>=13.0 brand=unknown,driver>=535,driver<536".into(),
        );
        assert!(run(&RULE, &s).is_empty());
        assert_eq!(
            required_cuda("cuda>=12.4 brand=tesla"),
            Some(CudaVersion::new(12, 4))
        );
        assert_eq!(required_cuda("garbage"), None);
    }
}
