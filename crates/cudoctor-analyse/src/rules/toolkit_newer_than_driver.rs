use cudoctor_kb::DriverSupport;

use crate::context::{cuda_of, export_cuda_home};
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK004",
    name: "toolkit-newer-than-driver",
    layer: Layer::Toolkit,
    severity: Severity::Warning,
    summary: "The selected CUDA Toolkit is newer than the driver can run",
    docs: r#"## What it checks
The version of the toolkit builds would use against the driver, by NVIDIA's compatibility rules.

## Why it matters
Programs and extensions built with a toolkit the driver cannot carry fail at their first CUDA
call with "CUDA driver version is insufficient for CUDA runtime version" (error 35), or, for
PTX, "the provided PTX was compiled with an unsupported toolchain" (error 222).

## How to fix
Upgrade the driver to the branch the report names, or select an older installed toolkit.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let (Some(driver), Some(build)) = (ctx.driver_version(), ctx.build_toolkit()) else {
        return Vec::new();
    };
    let Some(version) = build.version.as_deref().and_then(cuda_of) else {
        return Vec::new();
    };
    if ctx.driver_max_cuda().is_some_and(|(max, _)| max >= version) {
        return Vec::new();
    }
    let base = Finding::new(&RULE, "")
        .evidence(ctx.driver_evidence())
        .evidence(format!(
            "{} = {} -> CUDA Toolkit {}",
            build.chosen_by,
            build.home,
            build.version.as_deref().unwrap_or("?")
        ));
    let mut f = match ctx.driver_support(&driver, version) {
        DriverSupport::Native => return Vec::new(),
        DriverSupport::MinorVersionCompat { floor } => base
            .severity(Severity::Info)
            .cause(format!("Programs built with CUDA {version} run on this driver through minor-version compatibility (driver >= {floor}), except JIT-compiled PTX of the newer toolkit: build with SASS for your GPUs (TORCH_CUDA_ARCH_LIST / -gencode) rather than PTX only.")),
        DriverSupport::TooOld { needed_native, needed_floor } => {
            let least = needed_floor.or(needed_native);
            let mut f = base.cause(format!("Anything built with CUDA {version} fails on driver {driver}: \"CUDA driver version is insufficient for CUDA runtime version\"."));
            if let Some(least) = least {
                f = f.prose(format!("Upgrade the driver to {least} or newer (R{} or later)", least.branch()));
            }
            f
        }
        DriverSupport::Unknown => return Vec::new(),
    };
    f.title = format!("CUDA Toolkit {version} is newer than driver {driver} supports natively");
    let older: Vec<_> = ctx
        .snap
        .toolkit
        .toolkits
        .iter()
        .filter(|t| t.nvcc.is_some())
        .filter(|t| {
            t.version
                .as_deref()
                .and_then(cuda_of)
                .is_some_and(|v| ctx.driver_support(&driver, v) == DriverSupport::Native)
        })
        .collect();
    for t in older {
        f = f
            .prose(format!(
                "or select the installed toolkit {}:",
                t.version.as_deref().unwrap_or("?")
            ))
            .shell(export_cuda_home(&t.root));
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn a_13_toolkit_on_a_12_driver_is_a_warning() {
        let mut s = h200();
        s.driver.version = Some(cudoctor_snapshot::Sourced::new("550.54.14".into(), "nvml"));
        s.driver.max_cuda = Some(cudoctor_snapshot::Sourced::new("12.4".into(), "libcuda"));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].fix[0].contains("580"));
        assert!(run(&RULE, &h200()).is_empty());
    }
}
