use crate::{Context, Finding, FixStep, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK017",
    name: "cccl-headers-missing",
    layer: Layer::Toolkit,
    severity: Severity::Warning,
    summary: "The toolkit an extension build would use lacks the CCCL headers (nv/target, thrust, cub) its own headers include",
    docs: r#"## What it checks
Where a CUDA torch and a toolkit to build with are installed: whether that toolkit has the
CCCL headers (libcu++'s `nv/target` and `cuda/std`, thrust, cub) in `include/cccl` (CUDA 13,
added by its `nvcc.profile`) or `include` (CUDA 12 and older), and which of them its own
`include/cuda_fp16.h` includes, read from that file.

## Why it matters
NVIDIA's pip compiler (`nvidia-cuda-nvcc` with `nvidia-cuda-crt`, `nvidia-nvvm` and
`nvidia-cuda-runtime`) has no CCCL: that is the separate `nvidia-cuda-cccl` wheel, which
nothing of the compiler requires. torch's CUDA headers include `cuda_fp16.h`, and CUDA 13's
`cuda_fp16.h` includes `<nv/target>`: every CUDA source of a torch extension stops with
"cuda_fp16.h:LINE:10: fatal error: nv/target: No such file or directory", and a source that
includes thrust or cub with "fatal error: thrust/...: No such file or directory".

Running installed wheels is not affected: a warning about builds, as TK013.

## How to fix
Install the CCCL wheel of nvcc's release into the environment that holds the pip compiler
(`nvidia-cuda-cccl==X.Y.*`), or point CUDA_HOME at a full CUDA Toolkit (it ships CCCL).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    if ctx.snap.windows.is_some() {
        return Vec::new();
    }
    let Some((build, tk)) = ctx.build_toolkit_facts().filter(|(b, _)| b.exists) else {
        return Vec::new();
    };
    let Some(cccl) = &tk.cccl else {
        return Vec::new();
    };
    // Only a toolkit whose own headers need CCCL, without it, where torch builds.
    let (None, Some(need)) = (&cccl.dir, &cccl.needed_by) else {
        return Vec::new();
    };
    if !ctx.torch_envs().iter().any(|t| t.cuda().is_some()) {
        return Vec::new();
    }
    let short = need.file.rsplit('/').next().unwrap_or(need.file.as_str());
    let mut f = Finding::new(
        &RULE,
        format!(
            "The CUDA toolkit an extension build would use has no CCCL headers: every CUDA source of a torch extension would stop at <{}>",
            need.header
        ),
    )
    .evidence(format!(
        "{} = {} -> {} (CUDA {})",
        build.chosen_by,
        build.home,
        tk.root,
        tk.version.as_deref().unwrap_or("?")
    ))
    .evidence(format!(
        "{}:{}: #include <{}>",
        need.file, need.line, need.header
    ))
    .evidence(format!(
        "no {root}/include/cccl/{h} nor {root}/include/{h}, no thrust/version.h in either",
        root = tk.root,
        h = need.header
    ))
    .evidence(format!(
        "predicted, for every CUDA source including torch's headers: \"{short}:{}:10: fatal error: {}: No such file or directory\"; with thrust or cub: \"fatal error: thrust/...: No such file or directory\"",
        need.line, need.header
    ))
    .cause("NVIDIA's pip compiler wheels leave CCCL (libcu++, thrust, cub) to the separate nvidia-cuda-cccl wheel, which none of them requires; the toolkit's own cuda_fp16.h includes it, and torch's CUDA headers include cuda_fp16.h.");
    // A pip toolkit: the CCCL wheel of nvcc's release, into its environment.
    let env = ctx.snap.python_envs.iter().find(|e| {
        e.site_packages.iter().any(|sp| {
            tk.root
                .strip_prefix(sp.trim_end_matches('/'))
                .is_some_and(|r| r.starts_with("/nvidia/"))
        })
    });
    match (env, build.cuda()) {
        (Some(env), Some(cuda)) => {
            let target = ctx.target_env(env);
            let wheel = format!("nvidia-cuda-cccl=={}.{}.*", cuda.major, cuda.minor);
            f = f.command(&target, cudoctor_plan::install::install(&target, &[wheel]));
            f = f.prose(
                "Or point CUDA_HOME at a full CUDA Toolkit of torch's CUDA major (it ships CCCL)",
            );
        }
        _ => {
            f = f.steps([FixStep::Prose(
                "Install the toolkit's CCCL headers (a full CUDA Toolkit ships them in include/ or include/cccl), or point CUDA_HOME at a full CUDA Toolkit of torch's CUDA major".into(),
            )]);
        }
    }
    vec![f]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{CcclHeaders, HeaderInclude};

    /// The primary environment's pip toolkit of CUDA 13.2 as the build toolkit (CUDA_HOME).
    fn with(dir: Option<&str>) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        let sp = s.python_envs[0].site_packages[0].clone();
        let root = format!("{sp}/nvidia/cu13");
        let tk = &mut s.toolkit.toolkits[0];
        tk.root = root.clone();
        tk.version = Some("13.2.86".into());
        tk.cccl = Some(CcclHeaders {
            dir: dir.map(str::to_string),
            needed_by: Some(HeaderInclude {
                file: format!("{root}/include/cuda_fp16.h"),
                line: 4500,
                header: "nv/target".into(),
            }),
        });
        s.env.insert("CUDA_HOME".into(), root);
        s
    }

    #[test]
    fn a_pip_toolkit_without_cccl_is_predicted_with_the_wheel_to_install() {
        let f = run(&RULE, &with(None));
        assert_eq!(f.len(), 1, "{f:?}");
        let ev = f[0].evidence.join("\n");
        assert!(
            ev.contains("cuda_fp16.h:4500:10: fatal error: nv/target: No such file or directory"),
            "{ev}"
        );
        let fix: Vec<String> = f[0].fix.iter().map(|s| s.text().to_string()).collect();
        assert!(
            fix[0].contains("install") && fix[0].ends_with("'nvidia-cuda-cccl==13.2.*'"),
            "{fix:?}"
        );
    }

    #[test]
    fn cccl_present_unread_or_no_torch_says_nothing() {
        let s = with(Some("/x/include/cccl"));
        assert!(run(&RULE, &s).is_empty());
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = with(None);
        s.python_envs.retain(|e| e.torch.is_none());
        assert!(run(&RULE, &s).is_empty());
    }
}
