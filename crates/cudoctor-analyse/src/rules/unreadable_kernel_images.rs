use crate::{Confidence, Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "KRN005",
    name: "unreadable-kernel-images",
    layer: Layer::Kernels,
    severity: Severity::Warning,
    summary:
        "The kernel images of a CUDA library could not be read, so its GPU coverage is unknown",
    docs: r#"## What it checks
Every library of torch and its extensions whose ELF or fat-binary structure could not be read
(truncated, corrupt, or unreadable file).

## Why it matters
The kernel-image checks (KRN001, KRN002) cannot judge such a library: whether it runs on this
machine's GPUs is unknown. A truncated library is also a sign of an interrupted download or a
disk problem, and loading it may fail outright.

## How to fix
Inspect it with NVIDIA's tool (`cuobjdump --list-elf --list-ptx FILE`), and reinstall the package
that owns it.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(images) = &ctx.snap.kernel_images else {
        return Vec::new();
    };
    images
        .libraries
        .iter()
        .filter_map(|lib| {
            let error = lib.error.as_ref()?;
            let f = Finding::new(&RULE, format!("Kernel images of {} could not be read", lib.path))
                .confidence(Confidence::Unsure)
                .evidence(format!("{}: {error}", lib.path))
                .cause("Its GPU architectures are unknown, so whether it runs on this machine's GPUs cannot be judged; a damaged file may also fail to load.")
                .shell(format!("cuobjdump --list-elf --list-ptx {}", cudoctor_plan::quote(&lib.path)));
            // The reinstall names the owning distribution at its installed version, in the
            // environment's installer; without both known it stays a sentence.
            let env = ctx.env_of_path(&lib.path);
            let installed = env.zip(lib.package.as_deref()).and_then(|(e, p)| e.package(p));
            Some(match (env, installed) {
                (Some(e), Some(pkg)) => f.shell(format!(
                    "{}   # if the file is damaged",
                    crate::context::target_env(e)
                        .install(&cudoctor_plan::Install::exact(&pkg.name, &pkg.version))
                )),
                _ => f.prose("If the file is damaged, reinstall the package that owns it at its installed version"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{KernelImages, LibraryImages};

    #[test]
    fn a_damaged_library_is_reported_as_unknown() {
        let mut s = h200();
        assert!(run(&RULE, &s).is_empty());
        s.kernel_images = Some(KernelImages {
            scope: "test".into(),
            libraries: vec![LibraryImages {
                path: "/opt/venv/lib/python3.12/site-packages/xformers/_C.so".into(),
                package: Some("xformers".into()),
                error: Some("container at 0x1000 declares 4096 bytes of entries; section .nv_fatbin ends at 0x1800".into()),
                ..Default::default()
            }],
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].confidence, Confidence::Unsure);
        // Not installed as far as the snapshot knows: no command names it.
        assert!(!f[0].fix[1].is_shell(), "{:?}", f[0].fix);
        s.python_envs[0].packages.push(cudoctor_snapshot::Package {
            name: "xformers".into(),
            version: "0.0.33".into(),
            location: "/opt/venv/lib/python3.12/site-packages".into(),
        });
        let f = run(&RULE, &s);
        assert_eq!(
            f[0].fix[1],
            "/opt/venv/bin/python -m pip install --force-reinstall --no-deps xformers==0.0.33   # if the file is damaged"
        );
    }
}
