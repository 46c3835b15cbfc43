use cudoctor_ldso::{cuda_library, CudaFamily};

use crate::context::pip_package_for;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "LIB001",
    name: "missing-library",
    layer: Layer::Libraries,
    severity: Severity::Error,
    summary: "A library torch or an extension needs cannot be found by the dynamic loader",
    docs: r#"## What it checks
Every DT_NEEDED entry of torch's libraries and each CUDA extension, resolved exactly as glibc's
ld.so would (RPATH, LD_LIBRARY_PATH, RUNPATH, /etc/ld.so.cache, default directories).

## Why it matters
A missing library stops the import: "ImportError: libcudart.so.12: cannot open shared object
file: No such file or directory", "libcudnn.so.9: cannot open shared object file". It happens
when the nvidia-* wheels torch depends on were removed or are of another CUDA major, when an
extension was built against a system toolkit that is not on the loader path, or when libcuda
(the driver) is missing.

## How to fix
Install the package that provides the library (the report names it), or add its directory to the
loader path; for libcuda, install the driver or start the container with GPUs.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for (env, o) in ctx.loaded_objects() {
        for n in o.needed.iter().filter(|n| n.via == "missing") {
            if out
                .iter()
                .any(|f| f.title.contains(&format!("{} ", n.name)))
            {
                continue;
            }
            let lib = cuda_library(&n.name);
            let mut f = Finding::new(
                &RULE,
                format!("{} cannot be found: needed by {}", n.name, short(&o.path)),
            )
            .evidence(format!(
                "{} needs {} (DT_NEEDED), which no loader search step finds",
                o.path, n.name
            ))
            .evidence(format!("process emulated: `import torch` in {env}"));
            if let Some(e) = &n.error {
                f = f.evidence(format!("ld.so would stop with: {e}"));
            }
            match lib.as_ref().map(|l| l.family) {
                Some(CudaFamily::CudaDriver | CudaFamily::NvidiaMl) => {
                    f = f
                        .cause("libcuda is the NVIDIA driver's own library: without it no CUDA program starts.")
                        .fix("Install the NVIDIA driver, or in a container start it with GPUs: docker run --gpus all ...");
                }
                Some(family) => {
                    let pkg =
                        pip_package_for(family, lib.as_ref().and_then(|l| l.major.as_deref()));
                    f = f.cause(format!(
                        "The import fails with \"{}: cannot open shared object file\". torch wheels take this library from an nvidia-* wheel; it was removed, or is of another CUDA major than this build needs.",
                        n.name
                    ));
                    if let Some(pkg) = pkg {
                        f = f.fix(format!(
                            "{env}/bin/python -m pip install {pkg}   # provides {}",
                            n.name
                        ));
                    }
                    f = f.fix("or reinstall torch so its CUDA dependencies come back: pip install --force-reinstall torch==<installed version> --index-url <the index it came from>");
                }
                None => {
                    f = f
                        .cause(format!("The import fails with \"{}: cannot open shared object file\".", n.name))
                        .fix(format!("Install the package that provides {} or add its directory to LD_LIBRARY_PATH", n.name));
                }
            }
            out.push(f);
        }
    }
    out
}

pub fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{LibraryLinks, LinkedLibrary, LoaderFacts, ProcessLinks};

    #[test]
    fn a_missing_cudnn_is_an_error_naming_the_wheel() {
        let mut s = h200();
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![LibraryLinks {
                    path: "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"
                        .into(),
                    needed: vec![LinkedLibrary {
                        name: "libcudnn.so.9".into(),
                        via: "missing".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                shadowed: vec![],
            }],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].fix[0].contains("nvidia-cudnn-cu13"), "{:?}", f[0].fix);
        assert!(run(&RULE, &h200()).is_empty());
    }
}
