use cudoctor_kb::DriverSupport;

use crate::context::{cuda_home_step, cuda_of};
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
    let Some(version) = build.cuda() else {
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
    // The installed toolkits the driver runs natively, in the machine's shell (PowerShell for
    // a Windows machine's toolkits).
    let older: Vec<_> = ctx
        .toolkits_with_nvcc()
        .into_iter()
        .filter(|(_, v)| {
            v.as_deref()
                .and_then(cuda_of)
                .is_some_and(|v| ctx.driver_support(&driver, v) == DriverSupport::Native)
        })
        .collect();
    for (root, v) in older {
        f = f
            .prose(format!(
                "or select the installed toolkit {}:",
                v.as_deref().unwrap_or("?")
            ))
            .steps([cuda_home_step(&root, None)]);
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

    /// A Windows machine (a tree under --root) selecting CUDA 13.0 on driver 560.94: the
    /// installed 12.4 the driver runs is offered in PowerShell, never as POSIX `export`.
    #[test]
    fn a_windows_machine_is_offered_its_older_toolkit_in_powershell() {
        use cudoctor_snapshot::windows::{WinPath, WindowsFacts, WindowsToolkit};
        let mut s = machine(None, &[]);
        s.host.os = "windows".into();
        s.driver.version = Some(cudoctor_snapshot::Sourced::new(
            "560.94".into(),
            r"C:\Windows\System32\nvml.dll",
        ));
        let base = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA";
        let toolkit = |v: &str, full: &str| WindowsToolkit {
            path: WinPath::new(&format!(r"{base}\{v}")),
            version: Some(full.into()),
            nvcc: true,
            named_by: vec![],
            missing: false,
        };
        s.windows = Some(WindowsFacts {
            windows_dir: Some(WinPath::new(r"C:\Windows")),
            toolkits: vec![toolkit("v12.4", "12.4.131"), toolkit("v13.0", "13.0.88")],
            ..Default::default()
        });
        s.env.insert("CUDA_PATH".into(), format!(r"{base}\v13.0"));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].severity, Severity::Warning);
        let step = f[0]
            .fix
            .iter()
            .find(|s| s.is_command())
            .expect("a command selecting the older toolkit");
        assert_eq!(
            step,
            &cudoctor_plan::FixStep::PowerShell(format!(
                r"$env:CUDA_HOME = '{base}\v12.4'; $env:Path = '{base}\v12.4\bin' + ';' + $env:Path"
            ))
        );
        assert!(
            f[0].fix.iter().all(|s| !s.contains("export")),
            "{:#?}",
            f[0].fix
        );
    }
}
