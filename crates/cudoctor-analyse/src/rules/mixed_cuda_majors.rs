use crate::views::cuda_majors::{foreign_major_objects, torch_of};

use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "LIB006",
    name: "mixed-cuda-majors",
    layer: Layer::Libraries,
    severity: Severity::Error,
    summary: "torch's process loads CUDA libraries of another CUDA major than torch's build",
    docs: r#"## What it checks
In the emulated `import torch`, libraries whose soname carries the CUDA major (libcudart,
libcublas, libcublasLt, libnvrtc, libnvJitLink, libcupti) and whose major differs from the CUDA
of the torch build, when torch's own loader brought them in.

## Why it matters
torch's `__init__.py` (2.8 and later) preloads every CUDA library of its list by full path from
the first `sys.path` entry that has `nvidia/<folder>/lib/<name>`, and only then looks in
`nvidia/cu13/lib`. A CUDA-12 framework installed next to a CUDA-13 torch (`jax[cuda12]`,
`cupy-cuda12x`, `tensorflow[and-cuda]`) brings `nvidia-*-cu12` wheels into exactly those folders,
so torch preloads CUDA 12's cuBLAS, NVRTC, cuSPARSE and runtime into its CUDA-13 process. Some
share the soname of torch's own (libcusparse.so.12 is CUDA 12's and CUDA 13's), so torch runs on
the wrong one without a word; the rest sit beside torch's copies. The wheels of both majors also
write the same paths (`nvidia/cudnn/lib`), so one overwrites the other.

## How to fix
One CUDA major per environment: keep the CUDA-12 framework in an environment of its own, or
install its CUDA-13 build next to this torch (`jax[cuda13]`, `cupy-cuda13x`), then remove the
`-cu12` wheels and reinstall torch's CUDA wheels over the files they overwrote. Where an
installed package built for the other CUDA release requires those wheels
(`cuequivariance-ops-cu12`, as its METADATA declares), it is replaced with its release for
torch's CUDA, not left without its libraries.
"#,
    check,
};

/// The CUDA major of an nvidia-* wheel by its name: `-cu12` names it; since CUDA 13 the toolkit
/// libraries' wheels carry no suffix (`nvidia-cuda-runtime`), while cuDNN, NCCL and the other
/// separately released libraries keep one (`nvidia-cudnn-cu13`).
pub fn wheel_cuda_major(name: &str) -> Option<u32> {
    const CUDA13_UNSUFFIXED: [&str; 14] = [
        "cuda-runtime",
        "cublas",
        "cufft",
        "curand",
        "cusolver",
        "cusparse",
        "nvjitlink",
        "cuda-nvrtc",
        "cuda-cupti",
        "nvtx",
        "cufile",
        "cuda-nvcc",
        "npp",
        "nvjpeg",
    ];
    let rest = name.strip_prefix("nvidia-")?;
    cudoctor_plan::wheel_major(rest).or_else(|| CUDA13_UNSUFFIXED.contains(&rest).then_some(13))
}

fn check(ctx: &Context) -> Vec<Finding> {
    ctx.snap
        .loader
        .iter()
        .flat_map(|l| &l.processes)
        .filter_map(|p| mixed_majors_finding(ctx, p))
        .collect()
}

/// The finding about one emulated torch process that preloads libraries of another CUDA major:
/// whose wheels they are, what they overwrote of torch's own, and how to keep one major.
fn mixed_majors_finding(ctx: &Context, p: &cudoctor_snapshot::ProcessLinks) -> Option<Finding> {
    let (torch, major) = torch_of(ctx, p)?;
    let foreign = foreign_major_objects(p, major);
    let &(_, other) = foreign.first()?;
    let env = &p.env_prefix;
    // Another framework's wheels, or leftovers of a torch of the other major that was
    // replaced without removing them.
    let other_framework = crate::frameworks::cuda_majors(torch.env).contains(&other);
    let foreign_wheels: Vec<&str> = wheels_of(torch.env, other)
        .into_iter()
        .map(|p| p.name.as_str())
        .collect();
    // The installed packages built for the other major that require those wheels
    // (cuequivariance-ops-cu12 beside a CUDA 13 torch): the wheels are theirs, not
    // leftovers, and removing them alone breaks those packages.
    let builds_of_other = if other_framework {
        Vec::new()
    } else {
        builds_requiring(torch.env, &foreign_wheels, other)
    };
    let mut f = Finding::new(
        &RULE,
        format!("torch (CUDA {major}) preloads CUDA {other} libraries of other wheels ({env})"),
    )
    .about(Subject::TorchBuild { env: env.clone() })
    .about(Subject::MixedCudaMajors { env: env.clone() })
    .evidence(format!("{} (CUDA {major})", torch.label()))
    .cause(format!(
        "torch's __init__.py preloads each CUDA library from the first nvidia/<folder>/lib that has it, before nvidia/cu{major}/lib; CUDA {other} wheels {} sit in those folders, so torch's process runs on their libraries.",
        if other_framework {
            "of another framework".to_string()
        } else if !builds_of_other.is_empty() {
            format!("of {} (built for CUDA {other})", builds_of_other.join(", "))
        } else {
            "that no framework here is built for (left from an earlier torch of that major?)"
                .to_string()
        }
    ));
    for b in &builds_of_other {
        if let Some(d) = torch.env.declared.iter().find(|d| &d.package == b) {
            f = f.evidence(format!(
                "{b} {} requires {}",
                d.version,
                d.requires.join(", ")
            ));
        }
    }
    for (o, m) in &foreign {
        f = f.evidence(format!(
            "{} (CUDA {m}), preloaded by torch/__init__.py",
            o.real_path.as_deref().unwrap_or(&o.path)
        ));
    }
    if !foreign_wheels.is_empty() {
        f = f.evidence(format!(
            "CUDA {other} wheels installed: {}",
            foreign_wheels.join(", ")
        ));
    }
    let own = overwritten_own_wheels(torch.env, major, &foreign_wheels);
    // The wheels this finding moves: FW011's overwritten files between them follow from it.
    for name in foreign_wheels
        .iter()
        .copied()
        .chain(own.iter().map(|p| p.name.as_str()))
    {
        f = f.about(Subject::Package {
            env: env.clone(),
            name: name.to_string(),
        });
    }
    f = f.prose(keep_one_major(
        other_framework,
        &builds_of_other,
        major,
        other,
    ));
    if !foreign_wheels.is_empty() {
        f = removal_steps(
            f,
            &ctx.target(env),
            &foreign_wheels,
            &builds_of_other,
            &own,
            (major, other),
        );
    }
    Some(f)
}

/// The environment's NVIDIA wheels of CUDA `major` (by their names' `-cuNN` tag).
fn wheels_of(env: &cudoctor_snapshot::PythonEnv, major: u32) -> Vec<&cudoctor_snapshot::Package> {
    env.packages
        .iter()
        .filter(|pkg| wheel_cuda_major(&pkg.name) == Some(major))
        .collect()
}

/// torch's own wheels (of CUDA `major`) whose files the foreign ones overwrote (their RECORDs
/// share paths): removing the foreign wheels deletes those files, so they are put back. Without
/// the RECORDs' check, every one of them.
fn overwritten_own_wheels<'e>(
    env: &'e cudoctor_snapshot::PythonEnv,
    major: u32,
    foreign_wheels: &[&str],
) -> Vec<&'e cudoctor_snapshot::Package> {
    let shared = env.wheel_check.as_ref().map(|w| &w.shared_paths);
    wheels_of(env, major)
        .into_iter()
        .filter(|pkg| {
            shared.is_none_or(|sp| {
                sp.iter().any(|s| {
                    s.owners.iter().any(|o| o.package == pkg.name)
                        && s.owners
                            .iter()
                            .any(|o| foreign_wheels.contains(&o.package.as_str()))
                })
            })
        })
        .collect()
}

/// How to keep one CUDA major in the environment, by whose the other major's wheels are:
/// another framework's, packages built for that major, or nobody's.
fn keep_one_major(
    other_framework: bool,
    builds_of_other: &[String],
    major: u32,
    other: u32,
) -> String {
    if other_framework {
        format!(
            "Keep one CUDA major per environment: move the CUDA {other} framework to an environment of its own, or install its CUDA {major} build here (jax[cuda{major}], cupy-cuda{major}x)."
        )
    } else if !builds_of_other.is_empty() {
        format!(
            "Keep one CUDA major per environment: {} {} built for CUDA {other} and {} these wheels; install {} CUDA {major} build (the project's -cu{major} release, where it publishes one) in place of {}, or keep {} beside a CUDA {other} torch in an environment of its own.",
            builds_of_other.join(", "),
            if builds_of_other.len() > 1 { "are" } else { "is" },
            if builds_of_other.len() > 1 { "require" } else { "requires" },
            if builds_of_other.len() > 1 { "their" } else { "its" },
            if builds_of_other.len() > 1 { "them" } else { "it" },
            if builds_of_other.len() > 1 { "them" } else { "it" },
        )
    } else {
        format!("Keep one CUDA major per environment: no framework here uses the CUDA {other} wheels, so remove them.")
    }
}

/// The commands: uninstall the other major's wheels (with the packages built for them), then
/// put back the files of torch's own wheels that they overwrote.
fn removal_steps(
    mut f: Finding,
    target: &cudoctor_plan::TargetEnv,
    foreign_wheels: &[&str],
    builds_of_other: &[String],
    own: &[&cudoctor_snapshot::Package],
    (major, other): (u32, u32),
) -> Finding {
    let mut removed: Vec<&str> = builds_of_other.iter().map(String::as_str).collect();
    removed.extend(foreign_wheels);
    f = f.shell(format!(
        "{}   # the CUDA {other} wheels torch preloads{}",
        target.uninstall(&removed),
        if builds_of_other.is_empty() {
            String::new()
        } else {
            " and the packages built for them".to_string()
        }
    ));
    if !own.is_empty() {
        let names: Vec<&str> = own.iter().map(|p| p.name.as_str()).collect();
        f = f.shell(format!(
            "{}   # puts back the files of torch's CUDA {major} wheels that the CUDA {other} ones overwrote ({})",
            target.install(&cudoctor_plan::Install {
                pins: own.iter().map(|p| format!("{}=={}", p.name, p.version)).collect(),
                reinstall: true,
                no_deps: true,
                ..Default::default()
            }),
            cudoctor_plan::comment(&names.join(", "))
        ));
    }
    f
}

/// The CUDA major of a `-cuNN` or `-cuNNN` release tag (`-cu12`, `-cu126`: 12; `-cu118`: 11).
fn tag_major(name: &str) -> Option<u32> {
    let (_, digits) = name.rsplit_once("-cu")?;
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits[..2].parse().ok()
}

/// The installed distributions built for CUDA `major` (a `-cuNN` release of their project,
/// NVIDIA's own wheels aside) that require one of `wheels`, directly or through another such
/// build (cuequivariance-ops-torch-cu12 requires cuequivariance-ops-cu12, which requires
/// nvidia-cublas-cu12), as their declarations say.
fn builds_requiring(
    env: &cudoctor_snapshot::PythonEnv,
    wheels: &[&str],
    major: u32,
) -> Vec<String> {
    let tagged = |name: &str| {
        !name.starts_with("nvidia-")
            && cudoctor_types::without_cuda_variant(name) != name
            && tag_major(name) == Some(major)
    };
    let mut needed: Vec<String> = wheels.iter().map(|w| w.to_string()).collect();
    let mut out: Vec<String> = Vec::new();
    loop {
        let before = out.len();
        for d in env.declared.iter().filter(|d| tagged(&d.package)) {
            if out.contains(&d.package) {
                continue;
            }
            let requires_one = d.requires.iter().any(|r| {
                r.parse::<cudoctor_types::Requirement>()
                    .is_ok_and(|r| needed.contains(&cudoctor_types::normalise_name(&r.name)))
            });
            if requires_one {
                out.push(d.package.clone());
                needed.push(d.package.clone());
            }
        }
        if out.len() == before {
            break;
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{LibraryLinks, LoaderFacts, OpenedBy, Opener, ProcessLinks};

    /// What torch's preload found in `<sp>/nvidia/<folder>/lib`.
    fn preloaded(sp: &str, folder: &str, soname: &str) -> LibraryLinks {
        LibraryLinks {
            path: format!("{sp}/nvidia/{folder}/lib/{soname}"),
            soname: Some(soname.into()),
            opened_by: Some(OpenedBy {
                opener: Opener::TorchPreload,
                by: "torch".into(),
                nvidia_folder: Some(folder.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_folder_is_where_the_preload_found_the_file_not_where_its_link_points() {
        // torch's preload found CUDA 13's cuFFT in nvidia/cu13/lib; the file is a link into a
        // shared store whose path happens to hold `nvidia/cufft`. That is no CUDA 12 file.
        let sp = "/opt/venv/lib/python3.12/site-packages";
        let mut o = preloaded(sp, "cu13", "libcufft.so.12");
        o.real_path = Some("/store/nvidia/cufft/lib/libcufft.so.12".into());
        let p = ProcessLinks {
            env_prefix: "/opt/venv".into(),
            objects: vec![o.clone()],
            ..Default::default()
        };
        assert!(foreign_major_objects(&p, 13).is_empty());
        // Found in the per-library folder, it is CUDA 12's, wherever its link points.
        let mut o = preloaded(sp, "cufft", "libcufft.so.11");
        o.real_path = Some("/store/cu13/libcufft.so.11".into());
        let p = ProcessLinks {
            objects: vec![o],
            ..p
        };
        assert_eq!(foreign_major_objects(&p, 13).len(), 1);
    }

    #[test]
    fn cuda12_wheels_preloaded_into_a_cuda13_torch_are_an_error() {
        let mut s = h200();
        let sp = "/opt/venv/lib/python3.12/site-packages";
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![
                    preloaded(sp, "cu13", "libcublas.so.13"),
                    preloaded(sp, "cuda_runtime", "libcudart.so.12"),
                ],
                shadowed: vec![],
                runtime_dirs: vec![],
            }],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].title.contains("CUDA 12"), "{}", f[0].title);
        assert!(f[0].evidence.iter().any(|e| e.contains("libcudart.so.12")));
        // The fix removes the CUDA 12 wheels and puts back the CUDA 13 files they overwrote,
        // in the environment's own installer.
        let pkg = |name: &str, version: &str| cudoctor_snapshot::Package {
            name: name.into(),
            version: version.into(),
            location: sp.into(),
        };
        s.python_envs[0].packages.extend([
            pkg("nvidia-cuda-runtime-cu12", "12.9.79"),
            pkg("nvidia-cuda-runtime", "13.0.96"),
            pkg("nvidia-cudnn-cu13", "9.19.0.56"),
            pkg("nvidia-ml-py", "13.580.82"),
        ]);
        s.python_envs[0].installer = Some(cudoctor_snapshot::EnvInstaller {
            kind: cudoctor_snapshot::Installer::Uv,
            ..Default::default()
        });
        let f = run(&RULE, &s);
        let shell: Vec<&str> = f[0]
            .fix
            .iter()
            .filter(|x| x.is_shell())
            .map(|x| x.text())
            .collect();
        assert_eq!(shell.len(), 2, "{shell:?}");
        // No framework here is built for CUDA 12: the wheels are leftovers, and the finding
        // says so instead of naming another framework.
        assert!(
            f[0].cause.contains("no framework here is built for"),
            "{}",
            f[0].cause
        );
        assert!(
            f[0].fix[0]
                .text()
                .contains("no framework here uses the CUDA 12 wheels"),
            "{:?}",
            f[0].fix
        );
        assert!(
            shell[0].starts_with(
                "uv pip uninstall --python /opt/venv/bin/python nvidia-cuda-runtime-cu12 "
            ),
            "{shell:?}"
        );
        assert!(shell[1].starts_with("uv pip install --python /opt/venv/bin/python --reinstall --no-deps nvidia-cuda-runtime==13.0.96 nvidia-cudnn-cu13==9.19.0.56 "), "{shell:?}");
        assert_eq!(wheel_cuda_major("nvidia-ml-py"), None);
        assert_eq!(wheel_cuda_major("nvidia-cudnn-cu12"), Some(12));
        assert_eq!(wheel_cuda_major("nvidia-cublas"), Some(13));
        // A package built for CUDA 12 that requires the wheel (cuequivariance-ops-cu12 beside
        // the index's CUDA 13 torch, as the sweep installed it): the wheel is its, not a
        // leftover; the fix replaces the package with its CUDA 13 build.
        let before = s.python_envs[0].packages.len();
        s.python_envs[0].packages.extend([
            pkg("cuequivariance-ops-cu12", "0.13.0"),
            pkg("cuequivariance-ops-torch-cu12", "0.13.0"),
        ]);
        s.python_envs[0].declared = vec![
            cudoctor_snapshot::DeclaredRequirements {
                package: "cuequivariance-ops-cu12".into(),
                version: "0.13.0".into(),
                requires: vec!["nvidia-cuda-runtime-cu12>=12.5.0".into()],
                built_for_torch: None,
            },
            cudoctor_snapshot::DeclaredRequirements {
                package: "cuequivariance-ops-torch-cu12".into(),
                version: "0.13.0".into(),
                requires: vec![
                    "cuequivariance-ops-cu12==0.13.0".into(),
                    "torch>=2.11".into(),
                ],
                built_for_torch: None,
            },
        ];
        let f = run(&RULE, &s);
        assert!(
            f[0].cause.contains(
                "of cuequivariance-ops-cu12, cuequivariance-ops-torch-cu12 (built for CUDA 12)"
            ),
            "{}",
            f[0].cause
        );
        assert!(
            f[0].fix[0].text().contains("install their CUDA 13 build"),
            "{:?}",
            f[0].fix
        );
        assert!(
            f[0].fix[1].text().contains(
                " cuequivariance-ops-cu12 cuequivariance-ops-torch-cu12 nvidia-cuda-runtime-cu12 "
            ),
            "{:?}",
            f[0].fix
        );
        assert_eq!(tag_major("spconv-cu126"), Some(12));
        assert_eq!(tag_major("mxnet-cu112"), Some(11));
        assert_eq!(tag_major("nvidia-ml-py"), None);
        s.python_envs[0].packages.truncate(before);
        s.python_envs[0].declared.clear();
        // The same major is no finding.
        s.loader.as_mut().unwrap().processes[0].objects.pop();
        assert!(run(&RULE, &s).is_empty());
    }
}
