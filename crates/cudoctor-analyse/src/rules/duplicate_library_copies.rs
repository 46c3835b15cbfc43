use std::collections::BTreeMap;

use cudoctor_ldso::{cuda_library, is_vendored_copy, CudaFamily};

use crate::{Context, Finding, FixStep, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "LIB002",
    name: "duplicate-library-copies",
    layer: Layer::Libraries,
    severity: Severity::Error,
    summary: "One process loads two different copies of the same CUDA library",
    docs: r#"## What it checks
In the emulated process (`import torch`, then each CUDA extension), whether two objects are copies
of the same CUDA library (by name, e.g. libcudart.so.12 and libcudart.so.13, or two files named
libcudnn.so.9).

## Why it matters
Two CUDA runtimes in one process keep separate state: memory allocated through one is unknown to
the other, streams and events do not mix, and errors such as "invalid device context",
"CUBLAS_STATUS_NOT_INITIALIZED" or crashes at exit follow. Two cuDNN or NCCL copies of
different versions give "cuDNN version incompatibility" or undefined behaviour. It happens when
an extension was built against another toolkit or another CUDA major than torch.

## How to fix
Rebuild the extension against the CUDA that torch uses, so that it resolves torch's copy:
`CUDA_HOME=<toolkit of torch's CUDA major>` before a source reinstall of the package in the
environment's own installer (the report prints it: `--force-reinstall --no-deps
--no-build-isolation --no-binary <pkg> --no-cache-dir` with pip, `--reinstall ... --no-cache`
with uv). `--no-deps` keeps torch as it is; `--no-binary` and the cache option keep the
installer from reinstalling the same wheel or its cached build.
"#,
    check,
};

/// One file of a library: (soname major, path, loaded by, family).
type Copy<'a> = (Option<String>, &'a str, Option<&'a str>, CudaFamily);

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in ctx.snap.loader.iter().flat_map(|l| &l.processes) {
        // Copies torch's own loader preloaded from another CUDA major are LIB006's.
        let foreign: Vec<&str> = crate::views::cuda_majors::torch_of(ctx, p)
            .map(|(_, major)| {
                crate::views::cuda_majors::foreign_major_objects(p, major)
                    .into_iter()
                    .map(|(o, _)| o.path.as_str())
                    .collect()
            })
            .unwrap_or_default();
        // stem -> [(major, path, loaded_by)]
        let mut copies: BTreeMap<String, Vec<Copy>> = BTreeMap::new();
        for o in p
            .objects
            .iter()
            .filter(|o| !foreign.contains(&o.path.as_str()))
        {
            let Some(lib) = cuda_library(o.soname.as_deref().unwrap_or(&o.path)) else {
                continue;
            };
            if lib.family.is_driver_library() {
                continue;
            }
            let path = o.real_path.as_deref().unwrap_or(&o.path);
            let entry = copies.entry(lib.stem.clone()).or_default();
            if !entry.iter().any(|(_, p2, _, _)| *p2 == path) {
                entry.push((lib.major.clone(), path, o.loaded_by.as_deref(), lib.family));
            }
        }
        for (stem, all) in copies.into_iter().filter(|(_, l)| l.len() > 1) {
            // A wheel's private, hash-named copy of the same major is there by design: its
            // importers name it by its hashed file name, so it stands in for nothing.
            let (vendored, list): (Vec<Copy>, Vec<Copy>) = all
                .into_iter()
                .partition(|(_, path, ..)| is_vendored_copy(path));
            let shared_majors: Vec<&Option<String>> = list.iter().map(|(m, ..)| m).collect();
            let (same_major, other_major): (Vec<Copy>, Vec<Copy>) = vendored
                .into_iter()
                .partition(|(m, ..)| shared_majors.is_empty() || shared_majors.contains(&m));
            if !same_major.is_empty() && other_major.is_empty() && list.len() <= 1 {
                out.push(private_copies_note(
                    &stem,
                    &p.env_prefix,
                    &list,
                    &same_major,
                ));
            }
            let list: Vec<Copy> = list.into_iter().chain(other_major).collect();
            if list.len() < 2 {
                continue;
            }
            let majors: Vec<&Option<String>> = list.iter().map(|(m, ..)| m).collect();
            let different_majors = majors.windows(2).any(|w| w[0] != w[1]);
            let family = list[0].3;
            let severity = if different_majors
                || matches!(
                    family,
                    CudaFamily::Cudart | CudaFamily::Cudnn | CudaFamily::Nccl
                ) {
                Severity::Error
            } else {
                Severity::Warning
            };
            let mut f = Finding::new(&RULE, format!("Two copies of lib{stem} in one process ({})", p.env_prefix))
                .severity(severity)
                .cause(format!(
                    "torch and an extension load different lib{stem} files into the same process: their state is separate, so handles, memory and streams of one are invalid in the other."
                ));
            for fix in rebuild_fixes(ctx, &p.env_prefix, &list) {
                f = f.steps([fix]);
            }
            for copy in &list {
                f = f.evidence(copy_evidence(copy));
            }
            out.push(f);
        }
    }
    out
}

/// "PATH (soname major N), needed by OBJECT" for one copy.
fn copy_evidence((major, path, by, _): &Copy) -> String {
    format!(
        "{path}{}{}",
        major
            .as_ref()
            .map(|m| format!(" (soname major {m})"))
            .unwrap_or_default(),
        by.map(|b| format!(", needed by {b}")).unwrap_or_default()
    )
}

/// The info line for private copies of the same major as the shared one.
fn private_copies_note(stem: &str, env: &str, shared: &[Copy], private: &[Copy]) -> Finding {
    let mut f = Finding::new(
        &RULE,
        format!("A wheel carries its own private copy of lib{stem} ({env})"),
    )
    .severity(Severity::Info)
    .cause(format!(
        "The wheel vendors lib{stem} under a hashed file name for its own extension (auditwheel), of the same CUDA major as the copy torch loads. Its code uses that copy only; nothing else resolves to it, so this is by design and needs no change."
    ));
    for copy in shared.iter().chain(private) {
        f = f.evidence(copy_evidence(copy));
    }
    f
}

/// One rebuild command per extension that brought in a copy torch does not load: the
/// installed package that owns the object whose DT_NEEDED named the copy, built against the
/// toolkit of torch's CUDA major when the machine has one.
fn rebuild_fixes(ctx: &Context, env: &str, copies: &[Copy]) -> Vec<FixStep> {
    let torch = ctx.torch_envs().into_iter().find(|t| t.env.prefix == env);
    let wheels = ctx.env_at(env);
    let by_torch = |by: Option<&str>| {
        by.is_none_or(|b| {
            torch.is_some_and(|t| t.torch.owns(b)) || wheels.is_some_and(|e| e.in_nvidia_wheels(b))
        })
    };
    let cuda = torch.and_then(|t| t.cuda());
    let cuda_home = cuda
        .and_then(|c| {
            ctx.snap.toolkit.toolkits.iter().find(|tk| {
                tk.version
                    .as_deref()
                    .and_then(|v| v.parse::<cudoctor_kb::CudaVersion>().ok())
                    .is_some_and(|v| v.major == c.major)
            })
        })
        .map(|tk| format!("CUDA_HOME={} ", cudoctor_plan::quote(&tk.root)))
        .unwrap_or_default();
    let against = cuda
        .map(|c| format!("torch's CUDA {c}"))
        .unwrap_or_else(|| "torch's CUDA".into());
    let mut fixes: Vec<FixStep> = Vec::new();
    for (_, _, by, _) in copies.iter().filter(|(_, _, by, _)| !by_torch(*by)) {
        let Some(by) = by else { continue };
        let fix = match ctx.installed_package_of(by) {
            Some(pkg) => FixStep::Shell(format!(
                "{cuda_home}{}   # rebuilds {} against {against}",
                ctx.target(env).install(&cudoctor_plan::Install::rebuild(pkg)),
                cudoctor_plan::comment(pkg)
            )),
            None => FixStep::Prose(format!(
                "Rebuild {by} against {against} so it loads torch's copy (it belongs to no installed package cudoctor could find)"
            )),
        };
        if !fixes.contains(&fix) {
            fixes.push(fix);
        }
    }
    if fixes.is_empty() {
        fixes.push(FixStep::Prose(format!(
            "Rebuild the extension that loads the second copy against {against}, so it resolves torch's copy"
        )));
    }
    fixes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{LibraryLinks, LoaderFacts, ProcessLinks};

    fn obj(path: &str, soname: &str, by: &str) -> LibraryLinks {
        LibraryLinks {
            path: path.into(),
            soname: Some(soname.into()),
            loaded_by: Some(by.into()),
            ..Default::default()
        }
    }

    #[test]
    fn two_cuda_runtimes_are_an_error() {
        let mut s = h200();
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![
                    obj(
                        "/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13",
                        "libcudart.so.13",
                        "libtorch_cuda.so",
                    ),
                    obj(
                        "/usr/local/cuda-12.4/lib64/libcudart.so.12",
                        "libcudart.so.12",
                        "my_ext.so",
                    ),
                    obj(
                        "/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
                        "libcudnn.so.9",
                        "libtorch_cuda.so",
                    ),
                ],
                shadowed: vec![],
                runtime_dirs: vec![],
            }],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].evidence.iter().any(|e| e.contains("my_ext.so")));
    }

    #[test]
    fn a_vendored_copy_of_the_same_major_is_only_noted() {
        let sp = "/opt/venv/lib/python3.12/site-packages";
        let mut s = h200();
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![
                    obj(
                        &format!("{sp}/nvidia/cu13/lib/libcudart.so.13"),
                        "libcudart.so.13",
                        &format!("{sp}/torch/lib/libtorch_global_deps.so"),
                    ),
                    obj(
                        &format!("{sp}/torchvision.libs/libcudart.3eda8113.so.13"),
                        "libcudart.so.13",
                        &format!("{sp}/torchvision/image_stable.so"),
                    ),
                ],
                shadowed: vec![],
                runtime_dirs: vec![],
            }],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].fix.is_empty());
        // Of another major it is a second runtime in the process.
        let l = s.loader.as_mut().unwrap();
        l.processes[0].objects[1] = obj(
            &format!("{sp}/torchvision.libs/libcudart.45e7f3ed.so.12"),
            "libcudart.so.12",
            &format!("{sp}/torchvision/image.so"),
        );
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
    }

    #[test]
    fn the_extension_that_brings_the_copy_is_rebuilt_alone() {
        let mut s = h200();
        let sp = "/opt/venv/lib/python3.12/site-packages";
        s.python_envs[0].packages.push(cudoctor_snapshot::Package {
            name: "my-ext".into(),
            version: "0.1".into(),
            location: sp.into(),
        });
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![
                    obj(
                        &format!("{sp}/nvidia/cu13/lib/libcudart.so.13"),
                        "libcudart.so.13",
                        &format!("{sp}/torch/lib/libtorch_cuda.so"),
                    ),
                    obj(
                        "/usr/local/cuda-12.4/lib64/libcudart.so.12",
                        "libcudart.so.12",
                        &format!("{sp}/my_ext.cpython-312-x86_64-linux-gnu.so"),
                    ),
                ],
                shadowed: vec![],
                runtime_dirs: vec![],
            }],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(
            f[0].fix,
            vec!["CUDA_HOME=/usr/local/cuda-13.0 /opt/venv/bin/python -m pip install --force-reinstall --no-deps --no-build-isolation --no-binary my-ext --no-cache-dir my-ext   # rebuilds my-ext against torch's CUDA 13.0".to_string()]
        );
    }
}
