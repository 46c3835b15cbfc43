use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "TK003",
    name: "toolkit-selection-disagrees",
    layer: Layer::Toolkit,
    severity: Severity::Warning,
    summary: "CUDA_HOME, the nvcc on PATH and /usr/local/cuda name different toolkits",
    docs: r#"## What it checks
The toolkit each of the three usual selectors picks: CUDA_HOME (or CUDA_PATH), the `nvcc` that
PATH finds, and the /usr/local/cuda link (often through /etc/alternatives).

## Why it matters
Build systems disagree on which one they honour: CMake's FindCUDAToolkit uses nvcc on PATH,
torch.utils.cpp_extension uses CUDA_HOME first, Makefiles often hard-code /usr/local/cuda. With
several toolkits side by side, one build compiles with one toolkit and links another's
libraries, or an extension builds against a toolkit other than the one you checked.

## How to fix
Pick one toolkit and make all three agree, e.g.
`export CUDA_HOME=/usr/local/cuda-12.8 PATH=/usr/local/cuda-12.8/bin:$PATH`, and on Debian-like
systems `sudo update-alternatives --config cuda` for the link.
"#,
    check,
};

/// Its findings are about one toolkit variable, whose root's export repairs them: rank 2 among the rules folding on it (lowest first: the root).
pub static FOLD: crate::rule::Fold = crate::rule::Fold {
    rule: &RULE,
    on: crate::rule::FoldOn::ToolkitSetting,
    rank: 2,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let tk = &ctx.snap.toolkit;
    let mut picks: Vec<(String, String)> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = ctx.var(var) {
            let real = tk
                .toolkits
                .iter()
                .find(|t| t.found_via.iter().any(|v| v == var))
                .map(|t| t.root.clone())
                .unwrap_or_else(|| home.trim_end_matches('/').to_string());
            picks.push((format!("{var}={home}"), real));
            break;
        }
    }
    if let Some(n) = &tk.nvcc_on_path {
        if let Some(root) = &n.toolkit_root {
            picks.push((format!("nvcc on PATH: {}", n.path), root.clone()));
        }
    }
    if let Some(link) = &tk.usr_local_cuda {
        if let Some(real) = &link.resolved {
            picks.push(("/usr/local/cuda".to_string(), real.clone()));
        }
    }
    let mut distinct: Vec<&String> = picks.iter().map(|(_, r)| r).collect();
    distinct.sort();
    distinct.dedup();
    if distinct.len() < 2 {
        return Vec::new();
    }
    let version_of = |root: &str| {
        tk.by_root(root)
            .and_then(|t| t.version.clone())
            .unwrap_or_else(|| "unknown version".into())
    };
    let mut f = Finding::new(&RULE, format!("{} different toolkits are selected by different settings", distinct.len()))
        .cause("Builds that read different settings will use different toolkits: one may compile with one CUDA and link against another.");
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if picks
            .iter()
            .any(|(what, _)| what.starts_with(&format!("{var}=")))
        {
            f = f.about(Subject::ToolkitSetting { var: var.into() });
        }
    }
    for (what, real) in &picks {
        f = f.evidence(format!("{what} -> {real} ({})", version_of(real)));
    }
    let target = picks.first().map(|(_, r)| r.clone()).unwrap_or_default();
    f = f
        .steps([crate::context::cuda_home_step(&target, Some("make every selector agree on one toolkit"))])
        .shell("sudo update-alternatives --config cuda   # where /usr/local/cuda is managed by alternatives");
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{SymlinkChain, Toolkit};

    #[test]
    fn agreeing_settings_are_silent() {
        let mut s = h200();
        s.toolkit.toolkits[0].found_via.push("CUDA_HOME".into());
        s.toolkit.usr_local_cuda = Some(SymlinkChain {
            path: "/usr/local/cuda".into(),
            hops: vec![
                "/etc/alternatives/cuda".into(),
                "/usr/local/cuda-13.0".into(),
            ],
            resolved: Some("/usr/local/cuda-13.0".into()),
        });
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn cuda_home_elsewhere_is_reported() {
        let mut s = h200();
        s.env
            .insert("CUDA_HOME".into(), "/usr/local/cuda-12.4".into());
        s.toolkit.toolkits.push(Toolkit {
            root: "/usr/local/cuda-12.4".into(),
            version: Some("12.4.131".into()),
            found_via: vec!["CUDA_HOME".into()],
            nvcc: Some("/usr/local/cuda-12.4/bin/nvcc".into()),
            link_dir: None,
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].evidence.iter().any(|e| e.contains("12.4.131")));
    }
}
