use cudoctor_ldso::{cuda_library, CudaFamily};

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "LIB005",
    name: "other-library-copies",
    layer: Layer::Libraries,
    severity: Severity::Info,
    summary:
        "The cuDNN / NCCL / cuBLAS / CUDA runtime torch loads, and other copies on the machine",
    docs: r#"## What it checks
Which file of each CUDA library torch really loads (emulating ld.so, including its RPATH into the
nvidia-* wheels) against the copies registered system-wide in /etc/ld.so.cache.

## Why it matters
Reports that look at the system (e.g. `python -m torch.utils.collect_env`, or `ldconfig -p`) name
the system's cuDNN while torch uses the wheel's: on a real H200 machine collect_env lists cuDNN
9.14 while torch loads 9.19. Knowing which copy is live ends many wrong debugging paths, and shows
which copy a from-source extension might pick up instead.

## How to fix
Nothing to fix: this is information. Build extensions against the copy torch loads.
"#,
    check,
};

const FAMILIES: [(CudaFamily, &str, &str); 4] = [
    (CudaFamily::Cudnn, "cudnn", "nvidia-cudnn"),
    (CudaFamily::Nccl, "nccl", "nvidia-nccl"),
    (CudaFamily::Cublas, "cublas", "nvidia-cublas"),
    (CudaFamily::Cudart, "cudart", "nvidia-cuda-runtime"),
];

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(loader) = &ctx.snap.loader else {
        return Vec::new();
    };
    let is = |name: &str, family: CudaFamily, stem: &str| {
        cuda_library(name).is_some_and(|l| l.family == family && l.stem == stem)
    };
    let mut out = Vec::new();
    for p in &loader.processes {
        let env = ctx.env_at(&p.env_prefix);
        let mut f = Finding::new(&RULE, format!("torch in {} loads its own CUDA libraries; the system has other copies", p.env_prefix))
            .cause("Tools that read the system (collect_env, ldconfig -p) report the system-wide copies (listed as not used), but torch uses the files listed as loaded.");
        let mut differs = false;
        for (family, stem, wheel) in FAMILIES {
            let loaded: Vec<&str> = p
                .objects
                .iter()
                .filter(|o| is(o.soname.as_deref().unwrap_or(&o.path), family, stem))
                .map(|o| o.real_path.as_deref().unwrap_or(&o.path))
                .collect();
            let Some(live) = loaded.first() else { continue };
            let version = env
                .filter(|e| e.in_nvidia_wheels(live))
                .and_then(|e| e.packages.iter().find(|pkg| pkg.name.starts_with(wheel)))
                .map(|w| format!(" {} (wheel {})", w.version, w.name))
                .unwrap_or_default();
            f = f.evidence(format!("loaded: {stem}{version} {live}"));
            for other in loader
                .cache_copies
                .iter()
                .filter(|c| is(&c.name, family, stem) && !loaded.contains(&c.path.as_str()))
            {
                differs = true;
                f = f.evidence(format!("not used: {stem} {} (ld.so.cache)", other.path));
            }
        }
        if differs {
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{CachedLibrary, LibraryLinks, LoaderFacts, Package, ProcessLinks};

    #[test]
    fn the_wheel_cudnn_versus_the_system_one() {
        let mut s = h200();
        s.python_envs[0].prefix = "/opt/venv".into();
        s.python_envs[0].packages.push(Package {
            name: "nvidia-cudnn-cu13".into(),
            version: "9.19.0.56".into(),
            location: String::new(),
        });
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![LibraryLinks {
                    path: "/opt/venv/lib/python3.12/site-packages/torch/lib/../../nvidia/cudnn/lib/libcudnn.so.9".into(),
                    real_path: Some("/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9".into()),
                    soname: Some("libcudnn.so.9".into()),
                    ..Default::default()
                }],
                shadowed: vec![],
                runtime_dirs: vec![],
            }],
            cache_copies: vec![CachedLibrary { name: "libcudnn.so.9".into(), path: "/usr/lib/x86_64-linux-gnu/libcudnn.so.9".into() }],
            errors: vec![],
            notes: vec![],
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].evidence[0].contains("9.19.0.56"),
            "{:?}",
            f[0].evidence
        );
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("not used: cudnn /usr/lib/x86_64-linux-gnu/libcudnn.so.9")));
    }

    #[test]
    fn silent_when_there_is_no_other_copy() {
        let mut s = h200();
        s.loader = Some(LoaderFacts::default());
        assert!(run(&RULE, &s).is_empty());
    }
}
