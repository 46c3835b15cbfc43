use cudoctor_snapshot::windows::VisualStudio;

use crate::{Context, Finding, FixStep, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK019",
    name: "msvc-missing",
    layer: Layer::Toolkit,
    severity: Severity::Warning,
    summary: "An extension build on Windows would find no MSVC: no cl.exe on PATH and no Visual Studio with the C++ tools",
    docs: r#"## What it checks
On Windows, where a CUDA torch and a toolkit to build with are installed: whether an
extension build can find MSVC's `cl.exe`, the compiler of every C++ source and nvcc's host
compiler. Read from files: `cl.exe` in a PATH directory (a Native Tools prompt), and the
Visual Studio and Build Tools installations the installer records in its state files
(`%ProgramData%\Microsoft\VisualStudio\Packages\_Instances\<id>\state.json`, what
`vswhere.exe` reports), each with its `VC\Tools\MSVC\<version>\bin\Hostx64\x64\cl.exe` and
`VC\Auxiliary\Build\vcvarsall.bat`.

An installation with the C++ tools is enough: torch's `cpp_extension` (JIT `load` and
`load_inline`) and setuptools' `build_ext` (`pip install` of an sdist) run its
`vcvarsall.bat` themselves when the shell has not (torch then only warns "Error checking
compiler version for cl"). So only a machine with neither is reported.

Unless `DISTUTILS_USE_SDK` is set (to anything): setuptools' `_get_vc_env` then returns the
shell's environment as it is and runs no `vcvarsall.bat` (torch's ninja builds go through it
too), so an installation with the C++ tools is never set up and `cl.exe` must already be on
PATH. That variable belongs in a Native Tools prompt; set in a plain shell (a CI recipe, a
saved user variable), every build fails to start `cl`: ninja's "CreateProcess failed: The
system cannot find the file specified.", nvcc's "Cannot find compiler 'cl.exe' in PATH",
setuptools' "[WinError 2]".

## Why it matters
Windows has no C++ compiler until Visual Studio or its Build Tools are installed with the
C++ workload, and Visual Studio installed for other work often lacks it. torch first logs
"Error checking compiler version for cl" (`[WinError 2] The system cannot find the file
specified`), then the build stops with setuptools' "Microsoft Visual C++ 14.0 or greater is
required. Get it with "Microsoft C++ Build Tools"".

Running installed wheels is not affected: a warning about builds, as TK013.

## How to fix
Install the Build Tools for Visual Studio with the C++ workload
(`winget install --id Microsoft.VisualStudio.2022.BuildTools --override "--quiet --wait
--add Microsoft.VisualStudio.Workload.VCTools --includeRecommended"`), or add the workload
to the Visual Studio already installed (the Visual Studio Installer's `modify`). Then build
from the "x64 Native Tools Command Prompt" (or after `vcvars64.bat`), or let torch and
setuptools set it up. With `DISTUTILS_USE_SDK` set outside such a prompt, unset it
(`Remove-Item Env:DISTUTILS_USE_SDK`, and from the user's saved variables), or build from the
Native Tools prompt it is meant for.
"#,
    check,
};

/// Visual Studio's installer, where it installs itself.
const INSTALLER: &str = r"C:\Program Files (x86)\Microsoft Visual Studio\Installer\setup.exe";

/// The predicted failure where DISTUTILS_USE_SDK leaves MSVC's setup to the shell: ninja's
/// start of `cl` (torch's JIT `load`/`load_inline` and ninja builds of `BuildExtension`),
/// nvcc's look for its host compiler, setuptools' own start of `cl.exe` without ninja.
const SDK_PREDICTED: &str = "predicted: ninja's \"CreateProcess failed: The system cannot find the file specified.\" for torch's cl commands, nvcc's \"nvcc fatal   : Cannot find compiler 'cl.exe' in PATH\", setuptools' \"error: [WinError 2] The system cannot find the file specified\" (older: \"error: command 'cl.exe' failed: No such file or directory\")";

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(msvc) = ctx.snap.windows.as_ref().and_then(|w| w.msvc.as_ref()) else {
        return Vec::new();
    };
    if msvc.cl_on_path.is_some() {
        return Vec::new();
    }
    // setuptools' `_get_vc_env` returns the shell's environment as it is, without running any
    // vcvarsall.bat, whenever DISTUTILS_USE_SDK is set to anything (`os.getenv`), and torch's
    // ninja builds call it: an installed MSVC is then never set up.
    let sdk = ctx
        .snap
        .env
        .iter()
        .find(|(k, v)| k.eq_ignore_ascii_case("DISTUTILS_USE_SDK") && !v.is_empty())
        .map(|(_, v)| v.clone());
    let with_cpp = msvc.installations.iter().find(|vs| vs.has_cpp());
    if with_cpp.is_some() && sdk.is_none() {
        return Vec::new();
    }
    // Only where an extension build could otherwise run: a toolkit torch would build with.
    let Some(build) = ctx.build_toolkit().filter(|b| b.exists) else {
        return Vec::new();
    };
    let torch: Vec<String> = ctx
        .torch_envs()
        .iter()
        .filter(|t| t.cuda().is_some())
        .map(|t| t.label())
        .collect();
    if torch.is_empty() {
        return Vec::new();
    }
    let toolkit = format!(
        "{} = {} -> toolkit {}",
        build.chosen_by,
        build.home,
        build.version.as_deref().unwrap_or("?")
    );
    if let (Some(value), Some(vs)) = (sdk.as_deref(), with_cpp) {
        return vec![sdk_without_cl(value, vs, &torch, toolkit)];
    }
    let mut f = Finding::new(
        &RULE,
        format!(
            "An extension build would find no C++ compiler: no cl.exe on PATH and no Visual Studio with the C++ tools ({})",
            torch.join(", ")
        ),
    )
    .evidence("no cl.exe in any PATH directory");
    if msvc.installations.is_empty() {
        f = f.evidence("no Visual Studio or Build Tools installation recorded (ProgramData\\Microsoft\\VisualStudio\\Packages\\_Instances)");
    }
    for vs in &msvc.installations {
        f = f.evidence(format!(
            "{} {} at {} ({}): no VC\\Tools\\MSVC\\*\\bin\\Hostx64\\x64\\cl.exe{}",
            product_name(vs),
            vs.line.as_deref().unwrap_or("?"),
            vs.path,
            vs.state_file,
            if vs.vcvarsall.is_none() {
                ", no VC\\Auxiliary\\Build\\vcvarsall.bat"
            } else {
                ""
            }
        ));
    }
    f = f.evidence(toolkit);
    f = match &sdk {
        // setuptools never looks for an installation: its "14.0 or greater" error is not
        // reached, the start of cl.exe fails instead.
        Some(v) => f
            .evidence(format!("DISTUTILS_USE_SDK={v}: setuptools and torch take this shell's environment as MSVC's and run no vcvarsall.bat"))
            .evidence(SDK_PREDICTED),
        None => f.evidence("predicted: torch's \"Error checking compiler version for cl\" ([WinError 2] The system cannot find the file specified), then \"Microsoft Visual C++ 14.0 or greater is required. Get it with \"Microsoft C++ Build Tools\"\""),
    }
    .cause("Windows has no C++ compiler of its own: torch's extension builds and nvcc need MSVC's cl.exe, which comes with Visual Studio or its Build Tools only when the C++ workload is selected.");
    let mut steps = Vec::new();
    if let Some(vs) = msvc.installations.first() {
        // Visual Studio is there without C++: its installer adds the workload.
        let workload = if vs.product.as_deref() == Some("Microsoft.VisualStudio.Product.BuildTools")
        {
            "Microsoft.VisualStudio.Workload.VCTools"
        } else {
            "Microsoft.VisualStudio.Workload.NativeDesktop"
        };
        steps.push(FixStep::PowerShell(format!(
            "& {} modify --installPath {} --add {workload} --includeRecommended --passive",
            cudoctor_plan::quote_powershell_path(INSTALLER),
            cudoctor_plan::quote_powershell_path(vs.path.as_str())
        )));
    } else {
        steps.push(FixStep::PowerShell(
            "winget install --id Microsoft.VisualStudio.2022.BuildTools --override \"--quiet --wait --add Microsoft.VisualStudio.Workload.VCTools --includeRecommended\"".into(),
        ));
    }
    steps.push(FixStep::Prose(
        "Then build from the \"x64 Native Tools Command Prompt for VS\" (or after running its vcvars64.bat); torch and setuptools also find the installation themselves through vswhere".into(),
    ));
    if sdk.is_some() {
        steps.push(FixStep::PowerShell(UNSET_SDK.into()));
    }
    vec![f.steps(steps)]
}

/// Unsets DISTUTILS_USE_SDK in this PowerShell and in the user's saved environment.
const UNSET_SDK: &str = "Remove-Item Env:DISTUTILS_USE_SDK; [Environment]::SetEnvironmentVariable('DISTUTILS_USE_SDK', $null, 'User')";

/// DISTUTILS_USE_SDK set, an installation with the C++ tools, and no cl.exe on PATH: the
/// installation is never set up, and every build fails to start cl.
fn sdk_without_cl(value: &str, vs: &VisualStudio, torch: &[String], toolkit: String) -> Finding {
    let cl = vs
        .cl_x64
        .last()
        .map_or_else(|| "cl.exe".to_string(), |c| c.as_str().to_string());
    let vcvars64 = format!(r"{}\VC\Auxiliary\Build\vcvars64.bat", vs.path);
    Finding::new(
        &RULE,
        format!(
            "An extension build would not find MSVC: DISTUTILS_USE_SDK is set but no cl.exe is on PATH, so {} {} is never set up ({})",
            product_name(vs),
            vs.line.as_deref().unwrap_or(""),
            torch.join(", ")
        ),
    )
    .evidence(format!("DISTUTILS_USE_SDK={value}: setuptools' _get_vc_env returns this shell's environment as it is, without running vcvarsall.bat; torch's ninja builds call it too"))
    .evidence("no cl.exe in any PATH directory")
    .evidence(format!(
        "{} {} at {} ({}) has the C++ tools: {cl}",
        product_name(vs),
        vs.line.as_deref().unwrap_or("?"),
        vs.path,
        vs.state_file
    ))
    .evidence(toolkit)
    .evidence(SDK_PREDICTED)
    .cause("DISTUTILS_USE_SDK=1 tells setuptools and torch that this shell already holds MSVC's environment (a Native Tools prompt, vcvars64.bat run): they skip their own setup, so in a plain shell cl.exe is never found although Visual Studio has it.")
    .steps(vec![
        FixStep::PowerShell(UNSET_SDK.into()),
        FixStep::Prose(format!(
            "Or keep DISTUTILS_USE_SDK=1 and build from the \"x64 Native Tools Command Prompt for VS\" (cmd: \"{vcvars64}\"), which puts cl.exe on PATH"
        )),
    ])
}

fn product_name(vs: &VisualStudio) -> &str {
    match vs
        .product
        .as_deref()
        .and_then(|p| p.strip_prefix("Microsoft.VisualStudio.Product."))
    {
        Some("BuildTools") => "Build Tools for Visual Studio",
        Some("Community") => "Visual Studio Community",
        Some("Professional") => "Visual Studio Professional",
        Some("Enterprise") => "Visual Studio Enterprise",
        _ => "Visual Studio",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::windows::{MsvcFacts, WinPath, WindowsFacts};

    const VS: &str = r"C:\Program Files\Microsoft Visual Studio\2022\Community";

    fn with(msvc: MsvcFacts) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.windows = Some(WindowsFacts {
            windows_dir: Some(WinPath::new(r"C:\Windows")),
            msvc: Some(msvc),
            ..Default::default()
        });
        s.env.insert(
            "CUDA_PATH".into(),
            r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v13.0".into(),
        );
        s.env.remove("CUDA_HOME");
        s.windows
            .as_mut()
            .unwrap()
            .toolkits
            .push(cudoctor_snapshot::windows::WindowsToolkit {
                path: WinPath::new(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v13.0"),
                version: Some("13.0.88".into()),
                nvcc: true,
                named_by: vec!["CUDA_PATH".into()],
                missing: false,
            });
        for e in &mut s.python_envs {
            e.windows = true;
        }
        s
    }

    fn community(cl: bool) -> VisualStudio {
        VisualStudio {
            state_file: WinPath::new(
                r"C:\ProgramData\Microsoft\VisualStudio\Packages\_Instances\3d1f0b4c\state.json",
            ),
            path: WinPath::new(VS),
            product: Some("Microsoft.VisualStudio.Product.Community".into()),
            line: Some("2022".into()),
            version: Some("17.14.36310.24".into()),
            cl_x64: if cl {
                vec![WinPath::new(&format!(
                    r"{VS}\VC\Tools\MSVC\14.44.35207\bin\Hostx64\x64\cl.exe"
                ))]
            } else {
                vec![]
            },
            vcvarsall: Some(WinPath::new(&format!(
                r"{VS}\VC\Auxiliary\Build\vcvarsall.bat"
            ))),
        }
    }

    #[test]
    fn no_visual_studio_at_all_is_predicted_with_the_build_tools_install() {
        let f = run(&RULE, &with(MsvcFacts::default()));
        assert_eq!(f.len(), 1, "{f:?}");
        let ev = f[0].evidence.join("\n");
        assert!(
            ev.contains("Error checking compiler version for cl"),
            "{ev}"
        );
        assert!(ev.contains("Microsoft Visual C++ 14.0 or greater is required"));
        assert!(f[0].fix[0]
            .text()
            .starts_with("winget install --id Microsoft.VisualStudio.2022.BuildTools"));
        assert!(f[0].fix[0]
            .text()
            .contains("Microsoft.VisualStudio.Workload.VCTools"));
    }

    #[test]
    fn visual_studio_without_cpp_gets_the_workload_added() {
        let f = run(
            &RULE,
            &with(MsvcFacts {
                installations: vec![community(false)],
                ..Default::default()
            }),
        );
        assert_eq!(f.len(), 1);
        let ev = f[0].evidence.join("\n");
        assert!(ev.contains(r"Visual Studio Community 2022 at C:\Program Files\Microsoft Visual Studio\2022\Community"), "{ev}");
        assert_eq!(
            f[0].fix[0].text(),
            format!("& '{INSTALLER}' modify --installPath '{VS}' --add Microsoft.VisualStudio.Workload.NativeDesktop --includeRecommended --passive")
        );
    }

    /// DISTUTILS_USE_SDK=1 outside a Native Tools prompt: the installed C++ tools are never
    /// set up, and the fix unsets it; with cl.exe on PATH (the prompt it is meant for) nothing
    /// is said; with no C++ at all the finding predicts the start of cl failing, not
    /// setuptools' "14.0 or greater" (never reached), and unsets it after the install.
    #[test]
    fn distutils_use_sdk_without_cl_on_path_is_predicted_and_unset() {
        let mut s = with(MsvcFacts {
            installations: vec![community(true)],
            ..Default::default()
        });
        s.env.insert("DISTUTILS_USE_SDK".into(), "1".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].title
                .contains("DISTUTILS_USE_SDK is set but no cl.exe is on PATH"),
            "{}",
            f[0].title
        );
        let ev = f[0].evidence.join("\n");
        assert!(
            ev.contains("CreateProcess failed: The system cannot find the file specified."),
            "{ev}"
        );
        assert!(ev.contains(r"14.44.35207\bin\Hostx64\x64\cl.exe"), "{ev}");
        assert!(!ev.contains("14.0 or greater"), "{ev}");
        assert_eq!(f[0].fix[0].text(), UNSET_SDK);
        assert!(f[0].fix[1]
            .text()
            .contains(r"2022\Community\VC\Auxiliary\Build\vcvars64.bat"));

        let mut s = with(MsvcFacts {
            installations: vec![community(true)],
            cl_on_path: Some(WinPath::new(r"C:\BuildTools\cl.exe")),
            ..Default::default()
        });
        s.env.insert("DISTUTILS_USE_SDK".into(), "1".into());
        assert!(run(&RULE, &s).is_empty());

        let mut s = with(MsvcFacts::default());
        s.env.insert("DISTUTILS_USE_SDK".into(), "1".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        let ev = f[0].evidence.join("\n");
        assert!(ev.contains("Cannot find compiler 'cl.exe' in PATH"), "{ev}");
        assert!(!ev.contains("14.0 or greater"), "{ev}");
        assert_eq!(f[0].fix.last().unwrap().text(), UNSET_SDK);
        // Set but empty: setuptools' os.getenv is false, its own setup runs.
        let mut s = with(MsvcFacts {
            installations: vec![community(true)],
            ..Default::default()
        });
        s.env.insert("DISTUTILS_USE_SDK".into(), String::new());
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn cl_on_path_cpp_installed_linux_or_no_cuda_torch_say_nothing() {
        assert!(run(
            &RULE,
            &with(MsvcFacts {
                installations: vec![community(true)],
                ..Default::default()
            })
        )
        .is_empty());
        assert!(run(
            &RULE,
            &with(MsvcFacts {
                cl_on_path: Some(WinPath::new(r"C:\BuildTools\cl.exe")),
                ..Default::default()
            })
        )
        .is_empty());
        // Linux: no Windows facts.
        assert!(run(&RULE, &h200()).is_empty());
        // An older Windows snapshot: nothing known of MSVC.
        let mut s = with(MsvcFacts::default());
        s.windows.as_mut().unwrap().msvc = None;
        assert!(run(&RULE, &s).is_empty());
        // A CPU torch: no CUDA extension build.
        let mut s = with(MsvcFacts::default());
        s.python_envs[0].torch.as_mut().unwrap().cuda = None;
        assert!(run(&RULE, &s).is_empty());
    }
}
