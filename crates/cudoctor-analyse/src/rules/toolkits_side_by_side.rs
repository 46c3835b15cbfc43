use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK007",
    name: "toolkits-side-by-side",
    layer: Layer::Toolkit,
    severity: Severity::Info,
    summary: "Several CUDA Toolkits are installed: how to switch, and where the settings live",
    docs: r#"## What it checks
Every toolkit with an nvcc on disk, and the shell start-up files that set CUDA paths.

## Why it matters
Side-by-side toolkits are normal, but which one a build uses depends on PATH and CUDA_HOME.
(Adding a toolkit's lib64 to LD_LIBRARY_PATH is not needed for builds and makes its libraries
shadow the ones torch's wheel brings.) Settings kept only in one user's ~/.bashrc are invisible to non-interactive
shells, cron jobs, systemd services, Jupyter kernels started elsewhere, and other users.

## How to fix
Use the printed lines to switch; put settings meant for every shell in /etc/profile.d/cuda.sh.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let tk = &ctx.snap.toolkit;
    let with_nvcc: Vec<_> = tk.toolkits.iter().filter(|t| t.nvcc.is_some()).collect();
    let user_only =
        !tk.shell_settings.is_empty() && tk.shell_settings.iter().all(|s| !s.starts_with("/etc/"));
    if with_nvcc.len() < 2 && !user_only {
        return Vec::new();
    }
    let mut f = Finding::new(&RULE, format!("{} CUDA Toolkits are installed side by side", with_nvcc.len()))
        .cause("Which toolkit a build uses follows CUDA_HOME and the nvcc on PATH; the lines below switch between them.");
    if with_nvcc.len() < 2 {
        f.title = "CUDA settings live only in one user's shell start-up files".into();
    }
    for t in &with_nvcc {
        f = f.evidence(format!(
            "{} at {} ({})",
            t.version.as_deref().unwrap_or("?"),
            t.root,
            t.found_via.join(", ")
        ));
        if with_nvcc.len() >= 2 {
            // No LD_LIBRARY_PATH: the toolkit's libraries would shadow the ones torch's wheel
            // brings (LIB003); builds need only CUDA_HOME and nvcc on PATH.
            f = f.steps([crate::context::cuda_home_step(
                &t.root,
                Some(&format!("CUDA {}", t.version.as_deref().unwrap_or("?"))),
            )]);
        }
    }
    for s in &tk.shell_settings {
        f = f.evidence(format!("set in {s}"));
    }
    if user_only {
        f = f
            .cause("CUDA paths are set only in a user's shell start-up files: cron, systemd services, non-interactive ssh commands, other users and some IDE or Jupyter kernels do not read them.")
            .prose("Put the lines meant for every shell in /etc/profile.d/cuda.sh");
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::Toolkit;

    #[test]
    fn two_toolkits_give_switch_lines() {
        let mut s = h200();
        assert!(run(&RULE, &s).is_empty());
        s.toolkit.toolkits.push(Toolkit {
            root: "/usr/local/cuda-12.8".into(),
            version: Some("12.8.93".into()),
            nvcc: Some("/usr/local/cuda-12.8/bin/nvcc".into()),
            link_dir: None,
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f[0].fix.len(), 2);
        assert!(
            f[0].fix[1].starts_with(
                "export CUDA_HOME=/usr/local/cuda-12.8 PATH=/usr/local/cuda-12.8/bin:$PATH"
            ),
            "{:?}",
            f[0].fix
        );
        assert!(f[0].fix.iter().all(|x| !x.contains("LD_LIBRARY_PATH")));
    }

    #[test]
    fn settings_only_in_bashrc_are_mentioned() {
        let mut s = h200();
        s.toolkit.shell_settings =
            vec!["/home/u/.bashrc:12: export PATH=/usr/local/cuda/bin:$PATH".into()];
        let f = run(&RULE, &s);
        assert!(f[0].cause.contains("cron"));
    }
}
