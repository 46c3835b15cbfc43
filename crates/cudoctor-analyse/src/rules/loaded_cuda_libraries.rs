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

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(loader) = &ctx.snap.loader else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in &loader.processes {
        let env = ctx
            .snap
            .python_envs
            .iter()
            .find(|e| e.prefix == p.env_prefix);
        for family in [
            CudaFamily::Cudnn,
            CudaFamily::Nccl,
            CudaFamily::Cublas,
            CudaFamily::Cudart,
        ] {
            let loaded: Vec<&str> = p
                .objects
                .iter()
                .filter(|o| {
                    cuda_library(o.soname.as_deref().unwrap_or(&o.path))
                        .is_some_and(|l| l.family == family && l.stem == family_stem(family))
                })
                .map(|o| o.real_path.as_deref().unwrap_or(&o.path))
                .collect();
            let Some(live) = loaded.first() else { continue };
            let others: Vec<&str> = loader
                .cache_copies
                .iter()
                .filter(|c| {
                    cuda_library(&c.name)
                        .is_some_and(|l| l.family == family && l.stem == family_stem(family))
                })
                .map(|c| c.path.as_str())
                .filter(|c| !loaded.contains(c))
                .collect();
            if others.is_empty() {
                continue;
            }
            let wheel = env.and_then(|e| {
                e.packages.iter().find(|pkg| {
                    live.contains("/site-packages/nvidia/")
                        && pkg.name.starts_with(wheel_prefix(family))
                })
            });
            let version = wheel
                .map(|w| format!(" {} (wheel {})", w.version, w.name))
                .unwrap_or_default();
            let mut f = Finding::new(&RULE, format!("torch loads {}{version} from {live}", family.as_str()))
                .evidence(format!("emulated `import torch` in {}: {live}", p.env_prefix))
                .cause(format!(
                    "Other {} copies are registered system-wide but are not what torch uses; tools that read the system (collect_env, ldconfig -p) report those instead.",
                    family.as_str()
                ));
            for o in others {
                f = f.evidence(format!("also on the machine (ld.so.cache): {o}"));
            }
            out.push(f);
        }
    }
    out
}

fn family_stem(f: CudaFamily) -> &'static str {
    match f {
        CudaFamily::Cudnn => "cudnn",
        CudaFamily::Nccl => "nccl",
        CudaFamily::Cublas => "cublas",
        _ => "cudart",
    }
}

fn wheel_prefix(f: CudaFamily) -> &'static str {
    match f {
        CudaFamily::Cudnn => "nvidia-cudnn",
        CudaFamily::Nccl => "nvidia-nccl",
        CudaFamily::Cublas => "nvidia-cublas",
        _ => "nvidia-cuda-runtime",
    }
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
            }],
            cache_copies: vec![CachedLibrary { name: "libcudnn.so.9".into(), path: "/usr/lib/x86_64-linux-gnu/libcudnn.so.9".into() }],
            errors: vec![],
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].title.contains("9.19.0.56"), "{}", f[0].title);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("/usr/lib/x86_64-linux-gnu/libcudnn.so.9")));
    }
}
