use crate::{Context, Finding, FixStep, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK011",
    name: "build-toolkit-pieces-mixed",
    layer: Layer::Toolkit,
    severity: Severity::Error,
    summary: "The pip CUDA compiler an extension build would use is assembled from wheels of different CUDA releases",
    docs: r#"## What it checks
When the toolkit an extension build would use (found as torch's `cpp_extension` finds it:
CUDA_HOME, CUDA_PATH, the nvcc on PATH, /usr/local/cuda) is NVIDIA's pip layout
(`site-packages/nvidia/cu13`, `nvidia/cuda_nvcc`), its pieces come from separate wheels:
`nvidia-cuda-nvcc` (nvcc and ptxas), `nvidia-cuda-crt` (the compiler's crt headers),
`nvidia-nvvm` (cicc, which writes the PTX), `nvidia-cuda-runtime` (the runtime's headers,
`CUDART_VERSION`). Their releases (major.minor), read from the installed wheels' versions, must be
nvcc's own.

## Why it matters
pip resolves each wheel on its own: torch pins the runtime of its CUDA, a later install brings
the newest nvcc, and the build fails minutes in. CCCL's check (`cuda/std/__cccl/cuda_toolkit.h`)
stops every CUDA file with "CUDA compiler and CUDA toolkit headers are incompatible" when nvcc's
release is not the runtime headers' `CUDART_VERSION`; cicc of a newer release writes PTX whose
`.version` the older ptxas refuses ("ptxas fatal : Unsupported .version"); crt headers of another
release break the compiler's own includes.

## How to fix
Install every piece at nvcc's release in the same environment (`==X.Y.*` for each wheel), or
point CUDA_HOME at a full CUDA Toolkit of torch's CUDA major.
"#,
    check,
};

/// The compiler pieces of a pip toolkit: (wheel names, what the piece is, the failure a piece
/// of another release gives, whether only a newer one breaks the build).
const PIECES: &[(&[&str], &str, &str, bool)] = &[
    (
        &[
            "nvidia-cuda-runtime",
            "nvidia-cuda-runtime-cu12",
            "nvidia-cuda-runtime-cu11",
        ],
        "the CUDA runtime headers (CUDART_VERSION)",
        "CUDA compiler and CUDA toolkit headers are incompatible, please check your include paths",
        false,
    ),
    (
        &["nvidia-nvvm", "nvidia-nvvm-cu12"],
        "NVVM (cicc, which writes the PTX ptxas assembles)",
        "ptxas fatal : Unsupported .version (the PTX of a newer NVVM)",
        true,
    ),
    (
        &["nvidia-cuda-crt", "nvidia-cuda-crt-cu12"],
        "the compiler's crt headers",
        "errors in the crt headers nvcc includes (host_config.h, host_defines.h)",
        false,
    ),
];

/// `13.5.37` -> (13, 5).
fn release(v: &str) -> Option<(u32, u32)> {
    let mut it = v.split('.');
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(build) = ctx.build_toolkit() else {
        return Vec::new();
    };
    let Some(root) = build.root.as_deref() else {
        return Vec::new();
    };
    // A pip layout: <site-packages>/nvidia/<folder>, in an inspected environment.
    let Some((env, sp)) = ctx.snap.python_envs.iter().find_map(|e| {
        e.site_packages
            .iter()
            .find(|sp| {
                root.strip_prefix(sp.trim_end_matches('/'))
                    .is_some_and(|r| r.starts_with("/nvidia/"))
            })
            .map(|sp| (e, sp))
    }) else {
        return Vec::new();
    };
    let Some(nvcc_version) = build.version.as_deref() else {
        return Vec::new();
    };
    let Some(nvcc_release) = release(nvcc_version) else {
        return Vec::new();
    };
    let installed = |names: &[&str]| {
        env.packages
            .iter()
            .find(|p| names.contains(&p.name.as_str()) && p.location == *sp)
    };
    let mut mixed = Vec::new();
    for (names, what, failure, only_newer) in PIECES {
        let Some(p) = installed(names) else { continue };
        let Some(r) = release(&p.version) else {
            continue;
        };
        let differs = if *only_newer {
            r > nvcc_release
        } else {
            r != nvcc_release
        };
        if differs {
            mixed.push((p, *what, *failure));
        }
    }
    if mixed.is_empty() {
        return Vec::new();
    }
    let (major, minor) = nvcc_release;
    let mut f = Finding::new(
        &RULE,
        format!(
            "The CUDA compiler an extension build would use mixes CUDA releases: nvcc {nvcc_version} with {}",
            mixed
                .iter()
                .map(|(p, ..)| format!("{} {}", p.name, p.version))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .evidence(format!(
        "{} = {} -> {root}: nvcc {nvcc_version} ({})",
        build.chosen_by,
        build.home,
        ctx.snap
            .toolkit
            .by_root(root)
            .and_then(|t| t.version_source.as_deref())
            .unwrap_or("version read from its files")
    ));
    for (p, what, failure) in &mixed {
        f = f.evidence(format!(
            "{} {} in {} supplies {what}: predicted \"{failure}\"",
            p.name, p.version, p.location
        ));
    }
    let pins: Vec<String> = mixed
        .iter()
        .map(|(p, ..)| format!("{}=={major}.{minor}.*", p.name))
        .collect();
    let target = crate::context::target_env(env);
    vec![f.cause(format!(
        "pip installed each piece of the compiler on its own; nvcc {major}.{minor} builds only with the headers and tools of its own release."
    ))
    .steps([
        FixStep::Shell(format!(
            "{}   # every piece at nvcc's release",
            cudoctor_plan::install::install(&target, &pins)
        )),
        FixStep::Prose(format!(
            "Or point CUDA_HOME at a full CUDA Toolkit {} release (all pieces of one release)",
            major
        )),
    ])]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{Package, Toolkit};

    const SP: &str = "/opt/venv/lib/python3.12/site-packages";

    fn pip_toolkit(nvcc: &str, pieces: &[(&str, &str)]) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.toolkit.toolkits.clear();
        s.toolkit.nvcc_on_path = None;
        s.env.remove("CUDA_HOME");
        let root = format!("{SP}/nvidia/cu13");
        s.toolkit.toolkits.push(Toolkit {
            root: root.clone(),
            version: Some(nvcc.into()),
            version_source: Some("nvidia-cuda-nvcc wheel metadata".into()),
            found_via: vec![
                "pip nvidia-cuda-nvcc in /opt/venv".into(),
                "CUDA_HOME".into(),
            ],
            nvcc: Some(format!("{root}/bin/nvcc")),
            link_dir: None,
            host_compilers: None,
            cccl: None,
        });
        s.env.insert("CUDA_HOME".into(), root);
        for (name, version) in pieces {
            s.python_envs[0].packages.push(Package {
                name: name.to_string(),
                version: version.to_string(),
                location: SP.into(),
            });
        }
        s
    }

    #[test]
    fn pieces_of_other_releases_are_each_named_with_the_failure_they_give() {
        let s = pip_toolkit(
            "13.5.37",
            &[
                ("nvidia-cuda-nvcc", "13.5.37"),
                ("nvidia-cuda-runtime", "13.2.86"),
                ("nvidia-cuda-crt", "13.5.37"),
                ("nvidia-nvvm", "13.6.10"),
            ],
        );
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:#?}");
        let ev = f[0].evidence.join("\n");
        assert!(ev.contains("headers are incompatible"), "{ev}");
        assert!(ev.contains("Unsupported .version"), "{ev}");
        assert!(!ev.contains("nvidia-cuda-crt 13.5.37"), "{ev}");
        let fix = f[0].fix[0].text();
        assert!(
            fix.contains("nvidia-cuda-runtime==13.5.*") && fix.contains("nvidia-nvvm==13.5.*"),
            "{fix}"
        );
    }

    #[test]
    fn one_release_or_an_older_nvvm_or_no_pip_toolkit_says_nothing() {
        let s = pip_toolkit(
            "13.5.37",
            &[
                ("nvidia-cuda-runtime", "13.5.37"),
                ("nvidia-cuda-crt", "13.5.37"),
                ("nvidia-nvvm", "13.5.37"),
            ],
        );
        assert!(run(&RULE, &s).is_empty());
        // A system toolkit, and the runtime wheel of another release torch brought: not a
        // piece of that compiler.
        let mut s = h200();
        s.python_envs[0].packages.push(Package {
            name: "nvidia-cuda-runtime".into(),
            version: "13.2.86".into(),
            location: SP.into(),
        });
        assert!(run(&RULE, &s).is_empty());
        // No toolkit at all: nothing to judge.
        let mut s = h200();
        s.toolkit = Default::default();
        s.env.remove("CUDA_HOME");
        assert!(run(&RULE, &s).is_empty());
    }
}
