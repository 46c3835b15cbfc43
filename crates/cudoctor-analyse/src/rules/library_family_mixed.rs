use cudoctor_ldso::{cuda_library, CudaFamily};
use cudoctor_snapshot::{LibraryLinks, ProcessLinks, VersionSource};

use crate::{Confidence, Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "LIB007",
    name: "library-family-mixed",
    layer: Layer::Libraries,
    severity: Severity::Warning,
    summary: "One library family (cuDNN, NVRTC) would run from two installs in one process",
    docs: r#"## What it checks
The libraries of one family that a workload maps, stage by stage: cuDNN 9's front end
(libcudnn.so.9, loaded at `import torch`) and the sub-libraries it and libcudnn_graph.so.9 open
by soname at the first convolution (graph, engines, heuristic); NVRTC and its builtins. Each file
must come from the same install as the front end. The emulated loader decides, with the caller's
own RPATH/RUNPATH, LD_LIBRARY_PATH and ld.so.cache, which copy each dlopen() gets.

## Why it matters
Sub-libraries are found by name when they are first needed, so LD_LIBRARY_PATH (searched before
a RUNPATH) or the system cache can supply another install's copies: on an H200 machine with
`LD_LIBRARY_PATH=/usr/local/cuda/lib64:/lib/x86_64-linux-gnu`, `import torch` loads the wheel's
cuDNN 9.19 front end and the first Conv2d maps the system's 9.14 engines. Nothing errors, nothing
warns: one process runs one release's front end on another release's kernels (newer cuDNN
releases refuse the mix with "cuDNN sublibrary version mismatch").

## How to fix
Drop the directory that supplies the other copies from LD_LIBRARY_PATH (the exact value is
printed), or make the front end come from the same install as its sub-libraries.
"#,
    check,
};

/// Families whose files are one release's parts, opened by each other by soname.
const FAMILIES: [(CudaFamily, &str); 2] =
    [(CudaFamily::Cudnn, "cuDNN"), (CudaFamily::Nvrtc, "NVRTC")];

fn file(o: &LibraryLinks) -> &str {
    o.real_path.as_deref().unwrap_or(&o.path)
}

fn dir(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

fn version(o: &LibraryLinks) -> String {
    match &o.version {
        Some(v) => match &v.from {
            VersionSource::FileName => format!("{} (from the file name)", v.version),
            VersionSource::Wheel { name } => {
                format!("{} (wheel {name}, whose RECORD lists the file)", v.version)
            }
        },
        None => "version unknown".into(),
    }
}

fn soname_major(o: &LibraryLinks) -> Option<String> {
    cuda_library(o.soname.as_deref().unwrap_or(&o.path)).and_then(|l| l.major)
}

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(loader) = &ctx.snap.loader else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in &loader.processes {
        for (family, label) in FAMILIES {
            if let Some(f) = judge(ctx, p, family, label) {
                out.push(f);
            }
        }
    }
    out
}

fn judge(ctx: &Context, p: &ProcessLinks, family: CudaFamily, label: &str) -> Option<Finding> {
    let members: Vec<&LibraryLinks> = p
        .objects
        .iter()
        .filter(|o| {
            cuda_library(o.soname.as_deref().unwrap_or(&o.path)).is_some_and(|l| l.family == family)
        })
        .collect();
    // The first one loaded is the front end; the others of its soname major are its parts. A
    // copy of another CUDA major (libnvrtc.so.12 beside .so.13) is not a part of this release
    // but another major's wheel in the process: LIB006 and FW020 judge that.
    let front: &LibraryLinks = members.first()?;
    let front_major = soname_major(front);
    let members: Vec<&LibraryLinks> = members
        .into_iter()
        .filter(|o| {
            front_major.is_none() || soname_major(o).is_none() || soname_major(o) == front_major
        })
        .collect();
    let home = dir(file(front));
    let strays: Vec<&&LibraryLinks> = members.iter().filter(|o| dir(file(o)) != home).collect();
    if strays.is_empty() {
        return None;
    }
    let front_name = front.soname.as_deref().unwrap_or(file(front));
    let mut f = Finding::new(
        &RULE,
        format!(
            "{label} in {} would run from two installs: {front_name} from {home}, {} from {}",
            p.env_prefix,
            strays
                .iter()
                .map(|o| o.soname.as_deref().unwrap_or(file(o)))
                .collect::<Vec<_>>()
                .join(", "),
            dir(file(strays[0]))
        ),
    )
    // The later stages are predicted, not seen: the loader emulation says which copy comes.
    .confidence(Confidence::Likely);
    for o in &members {
        let opened = match &o.opened_by {
            Some(by) if o.loaded_by.is_none() => format!(", opened by {}", by.by),
            _ => o
                .loaded_by
                .as_deref()
                .map(|l| format!(", needed by {}", l.rsplit('/').next().unwrap_or(l)))
                .unwrap_or_default(),
        };
        f = f.evidence(format!(
            "{}: {} — {}{opened}",
            o.stage.as_str(),
            file(o),
            version(o)
        ));
    }
    let llp = ctx.snap.env.get("LD_LIBRARY_PATH").map(String::as_str);
    let entries: Vec<&str> = llp.map(|v| v.split(':').collect()).unwrap_or_default();
    // An entry supplies a stray when it names the directory the stray was opened under.
    let supplying: Vec<&str> = entries
        .iter()
        .copied()
        .filter(|e| {
            let e = e.trim_end_matches('/');
            !e.is_empty()
                && strays
                    .iter()
                    .any(|o| dir(&o.path) == e || dir(file(o)) == e)
        })
        .collect();
    if supplying.is_empty() {
        return Some(
            f.cause(format!(
                "{front_name} comes from {home}; the libraries it opens by soname at run time are found in another install first (the loader's cache or the default directories)."
            ))
            .prose(format!(
                "Make {label}'s parts come from one install: remove the other copies' directory from the loader's configuration (/etc/ld.so.conf.d, then `ldconfig`), or load the front end from {} too",
                dir(file(strays[0]))
            )),
        );
    }
    let kept: Vec<&str> = entries
        .iter()
        .copied()
        .filter(|e| !supplying.contains(e) && !e.is_empty())
        .collect();
    let fix = if kept.is_empty() {
        "unset LD_LIBRARY_PATH".to_string()
    } else {
        format!(
            "export LD_LIBRARY_PATH={}",
            cudoctor_plan::quote(&kept.join(":"))
        )
    };
    f = f
        .evidence(format!(
            "LD_LIBRARY_PATH={} supplies them: {}",
            llp.unwrap_or_default(),
            supplying.join(", ")
        ))
        .cause(format!(
            "{front_name} is loaded from {home} at import; the libraries it opens by soname when first needed are searched in LD_LIBRARY_PATH before its own RUNPATH, so {} supplies another install's copies.",
            supplying.join(" and ")
        ))
        .shell(fix)
        .prose("Make the same change where LD_LIBRARY_PATH is set (shell profile, module file, Dockerfile ENV)");
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{
        FileVersion, LoadStage, LoaderFacts, OpenedBy, Opener, ProcessLinks, VersionSource,
    };

    const WHEEL: &str = "/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib";
    const SYSTEM: &str = "/lib/x86_64-linux-gnu";

    fn object(
        dir: &str,
        soname: &str,
        real: &str,
        stage: LoadStage,
        version: FileVersion,
    ) -> LibraryLinks {
        LibraryLinks {
            path: format!("{dir}/{soname}"),
            soname: Some(soname.into()),
            real_path: Some(format!("{dir}/{real}")),
            stage,
            opened_by: (!stage.is_import()).then(|| OpenedBy {
                opener: Opener::LibraryDlopen,
                by: "libcudnn_graph.so.9".into(),
                ..Default::default()
            }),
            version: Some(version),
            ..Default::default()
        }
    }

    fn wheel_version() -> FileVersion {
        FileVersion {
            version: "9.19.0.56".into(),
            from: VersionSource::Wheel {
                name: "nvidia-cudnn-cu13".into(),
            },
        }
    }

    /// The H200 run under LD_LIBRARY_PATH: the wheel's front end, the system's 9.14 engines.
    fn h200_mix(engines_dir: &str) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.env.insert(
            "LD_LIBRARY_PATH".into(),
            "/usr/local/cuda/lib64:/lib/x86_64-linux-gnu".into(),
        );
        let system = FileVersion {
            version: "9.14.0".into(),
            from: VersionSource::FileName,
        };
        let engines = if engines_dir == SYSTEM {
            object(
                SYSTEM,
                "libcudnn_engines_precompiled.so.9",
                "libcudnn_engines_precompiled.so.9.14.0",
                LoadStage::FirstConvolution,
                system,
            )
        } else {
            object(
                WHEEL,
                "libcudnn_engines_precompiled.so.9",
                "libcudnn_engines_precompiled.so.9",
                LoadStage::FirstConvolution,
                wheel_version(),
            )
        };
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![
                    object(
                        WHEEL,
                        "libcudnn.so.9",
                        "libcudnn.so.9",
                        LoadStage::Import,
                        wheel_version(),
                    ),
                    engines,
                ],
                ..Default::default()
            }],
            ..Default::default()
        });
        s
    }

    #[test]
    fn wheel_front_end_with_system_engines_under_ld_library_path() {
        let f = run(&RULE, &h200_mix(SYSTEM));
        assert_eq!(f.len(), 1, "{f:?}");
        let e = f[0].evidence.join("\n");
        assert!(e.contains("import: /opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9 — 9.19.0.56 (wheel nvidia-cudnn-cu13"), "{e}");
        assert!(e.contains("first_convolution: /lib/x86_64-linux-gnu/libcudnn_engines_precompiled.so.9.14.0 — 9.14.0 (from the file name), opened by libcudnn_graph.so.9"), "{e}");
        let fix = format!("{:?}", f[0].fix);
        assert!(
            fix.contains("export LD_LIBRARY_PATH=/usr/local/cuda/lib64"),
            "{fix}"
        );
        assert!(!fix.contains("x86_64-linux-gnu"), "{fix}");
    }

    /// jax[cuda12] beside a CUDA-13 torch (a real env of the tier): libnvrtc.so.12 from the
    /// CUDA-12 wheel, libnvrtc.so.13 from torch's. Two majors are FW020/LIB006's, not a mix of
    /// one release's parts.
    #[test]
    fn another_major_is_not_a_part() {
        let mut s = h200();
        let nvrtc = |dir: &str, soname: &str, v: &str| LibraryLinks {
            path: format!("{dir}/{soname}"),
            soname: Some(soname.into()),
            stage: LoadStage::Import,
            version: Some(FileVersion {
                version: v.into(),
                from: VersionSource::FileName,
            }),
            ..Default::default()
        };
        let sp = "/opt/venv/lib/python3.11/site-packages/nvidia";
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![
                    nvrtc(&format!("{sp}/cuda_nvrtc/lib"), "libnvrtc.so.12", "12.9.86"),
                    nvrtc(
                        &format!("{sp}/cuda_nvrtc/lib"),
                        "libnvrtc-builtins.so.12.9",
                        "12.9",
                    ),
                    nvrtc(&format!("{sp}/cu13/lib"), "libnvrtc.so.13", "13.2.86"),
                ],
                ..Default::default()
            }],
            ..Default::default()
        });
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn one_install_is_silent() {
        assert!(run(&RULE, &h200_mix(WHEEL)).is_empty());
    }

    #[test]
    fn the_only_entry_is_unset() {
        let mut s = h200_mix(SYSTEM);
        s.env
            .insert("LD_LIBRARY_PATH".into(), "/lib/x86_64-linux-gnu/".into());
        let f = run(&RULE, &s);
        assert!(
            format!("{:?}", f[0].fix).contains("unset LD_LIBRARY_PATH"),
            "{:?}",
            f[0].fix
        );
    }

    #[test]
    fn a_mix_without_ld_library_path_names_the_cache() {
        let mut s = h200_mix(SYSTEM);
        s.env.remove("LD_LIBRARY_PATH");
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].cause.contains("cache"), "{}", f[0].cause);
    }
}
