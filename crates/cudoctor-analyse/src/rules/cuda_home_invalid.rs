use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "TK006",
    name: "cuda-home-invalid",
    layer: Layer::Toolkit,
    severity: Severity::Warning,
    summary: "CUDA_HOME (or CUDA_PATH) names a directory with no CUDA Toolkit",
    docs: r#"## What it checks
Whether the directory CUDA_HOME or CUDA_PATH names holds a toolkit (`bin/nvcc` or a version file).

## Why it matters
Extension builds trust CUDA_HOME blindly and fail with "No such file or directory:
'/usr/local/cuda/bin/nvcc'" or pick up headers of nothing.

## How to fix
Point it at an installed toolkit (the report lists them) or unset it.
"#,
    check,
};

/// Its findings are about one toolkit variable, whose root's export repairs them: rank 0 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::ToolkitSetting,
    rank: 0,
};

fn check(ctx: &Context) -> Vec<Finding> {
    if let Some(w) = &ctx.snap.windows {
        return windows(w);
    }
    let tk = &ctx.snap.toolkit;
    ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|var| {
            let home = ctx.var(var)?;
            if tk.toolkits.iter().any(|t| t.found_via.iter().any(|v| v == var)) {
                return None;
            }
            let mut f = Finding::new(&RULE, format!("{var}={home} holds no CUDA Toolkit"))
                .about(Subject::ToolkitSetting { var: var.to_string() })
                .evidence(format!("{var}={home}"))
                .evidence(format!("no {home}/bin/nvcc and no version file there"))
                .cause(format!("Builds that read {var} will look for nvcc, headers and libraries that are not there."));
            let installed: Vec<_> = tk.toolkits.iter().filter(|t| t.nvcc.is_some()).collect();
            if installed.is_empty() {
                f = f.shell(format!("unset {var}   # or install a CUDA Toolkit and point {var} at it"));
            }
            for t in installed {
                f = f.shell(format!("export {var}={}   # CUDA {}", cudoctor_plan::quote(&t.root), cudoctor_plan::comment(t.version.as_deref().unwrap_or("?"))));
            }
            Some(f)
        })
        .collect()
}

/// A Windows machine's variables, judged on its toolkits as the Windows collector reads them
/// (`windows.toolkits`: each directory CUDA_HOME, CUDA_PATH or CUDA_PATH_V<x>_<y> names, with
/// `bin\\nvcc.exe` and version.json), fixed in PowerShell for the session.
fn windows(w: &cudoctor_snapshot::windows::WindowsFacts) -> Vec<Finding> {
    let installed: Vec<_> = w.toolkits.iter().filter(|t| t.nvcc && !t.missing).collect();
    let mut out = Vec::new();
    for t in &w.toolkits {
        if !t.missing && (t.nvcc || t.version.is_some()) {
            continue;
        }
        for var in &t.named_by {
            let what = if t.missing {
                "the directory does not exist"
            } else {
                "no bin\\nvcc.exe and no version.json there"
            };
            let mut f = Finding::new(&RULE, format!("{var}={} holds no CUDA Toolkit", t.path))
                .about(Subject::ToolkitSetting { var: var.clone() })
                .evidence(format!("{var}={}", t.path))
                .evidence(what)
                .cause(format!("Builds that read {var} (torch's extension builds read CUDA_HOME, then CUDA_PATH) will look for nvcc, headers and libraries that are not there."));
            if installed.is_empty() {
                f = f.powershell(format!(
                    "Remove-Item Env:{var}   # or install a CUDA Toolkit and point {var} at it"
                ));
            }
            for i in &installed {
                f = f.powershell(format!(
                    "{}   # CUDA {}",
                    cudoctor_plan::powershell_set_env(var, i.path.as_str()),
                    cudoctor_plan::comment(i.version.as_deref().unwrap_or("?"))
                ));
            }
            f = f.prose(format!("The command sets it for this PowerShell session; set {var} for good in System Properties > Environment Variables"));
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn a_dangling_cuda_home_is_reported() {
        let mut s = h200();
        s.env
            .insert("CUDA_HOME".into(), "/usr/local/cuda-11.8".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].fix[0].contains("/usr/local/cuda-13.0"));
        let mut ok = h200();
        ok.toolkit.toolkits[0].found_via.push("CUDA_HOME".into());
        assert!(run(&RULE, &ok).is_empty());
    }

    #[test]
    fn a_windows_cuda_path_is_judged_on_the_windows_toolkits() {
        use cudoctor_snapshot::windows::{WinPath, WindowsToolkit};
        let base = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA";
        let toolkit = |v: &str, named: &[&str], missing: bool| WindowsToolkit {
            path: WinPath::new(&format!(r"{base}\v{v}")),
            version: (!missing).then(|| format!("{v}.93")),
            nvcc: !missing,
            named_by: named.iter().map(|n| n.to_string()).collect(),
            missing,
        };
        let mut s = crate::rules::windows_torch_dll_fails::tests::windows_env(None);
        // The Linux toolkit layer found nothing (it reads no Windows toolkit): no false alarm.
        s.env.insert("CUDA_PATH".into(), format!(r"{base}\v12.8"));
        s.windows.as_mut().unwrap().toolkits = vec![toolkit("12.8", &["CUDA_PATH"], false)];
        assert!(run(&RULE, &s).is_empty());
        // CUDA_PATH_V12_4 names an uninstalled one: set it to the installed one.
        s.windows
            .as_mut()
            .unwrap()
            .toolkits
            .push(toolkit("12.4", &["CUDA_PATH_V12_4"], true));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].title.starts_with(r"CUDA_PATH_V12_4=C:\Program Files"));
        assert_eq!(
            f[0].fix[0],
            cudoctor_plan::FixStep::PowerShell(format!(
                r"$env:CUDA_PATH_V12_4 = '{base}\v12.8'   # CUDA 12.8.93"
            ))
        );
    }
}
