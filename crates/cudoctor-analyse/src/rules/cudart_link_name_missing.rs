use crate::{Context, Finding, FixStep, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK012",
    name: "cudart-link-name-missing",
    layer: Layer::Toolkit,
    severity: Severity::Error,
    summary:
        "The toolkit an extension build would use has no libcudart.so to link -lcudart against",
    docs: r#"## What it checks
torch's `cpp_extension` links every CUDA extension with `-L<CUDA_HOME>/lib64` (or `lib` when
only that exists) and `-lcudart`. The linker resolves `-lcudart` to the unversioned
`libcudart.so` (or the static `libcudart.a`), never to `libcudart.so.13`. The rule reads that
directory of the toolkit the build would use.

## Why it matters
NVIDIA's pip runtime wheel ships only the versioned `libcudart.so.13` (the file programs load),
not the development link a full toolkit installs: the build compiles every file and then fails at
the link with "cannot find -lcudart: No such file or directory".

## How to fix
Point CUDA_HOME at a full CUDA Toolkit (its lib64 has the link), or add the link beside the
versioned file in the environment's toolkit directory (the fix names both files).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some((build, tk)) = ctx.build_toolkit_facts() else {
        return Vec::new();
    };
    let Some(link) = &tk.link_dir else {
        return Vec::new();
    };
    // NVIDIA's pip layout only: a system or conda toolkit's runtime may sit in a directory the
    // linker searches by default (Debian's /usr/lib/x86_64-linux-gnu), which is not read here.
    let pip = ["/site-packages/nvidia/", "/dist-packages/nvidia/"]
        .iter()
        .any(|d| tk.root.contains(d));
    if !pip {
        return Vec::new();
    }
    let has = |n: &str| link.cudart_files.iter().any(|f| f == n);
    if has("libcudart.so") || has("libcudart.a") {
        return Vec::new();
    }
    let versioned: Vec<&String> = link
        .cudart_files
        .iter()
        .filter(|f| f.starts_with("libcudart.so."))
        .collect();
    // Only the pip runtime's own layout: the versioned file there and no link beside it. A
    // directory without the runtime at all is an incomplete toolkit of another kind.
    if versioned.is_empty() {
        return Vec::new();
    }
    let f = Finding::new(
        &RULE,
        format!(
            "An extension build would fail to link: {} has no libcudart.so for -lcudart",
            link.path
        ),
    )
    .evidence(format!(
        "{} = {} -> {}{}",
        build.chosen_by,
        build.home,
        tk.root,
        tk.version
            .as_deref()
            .map(|v| format!(" (CUDA {v})"))
            .unwrap_or_default()
    ))
    .evidence(format!("{}: {}", link.path, link.cudart_files.join(", ")))
    .evidence("torch's cpp_extension links CUDA extensions with -L<that directory> -lcudart: predicted \"cannot find -lcudart: No such file or directory\"")
    .cause("The linker finds -lcudart only as the unversioned libcudart.so (or libcudart.a); NVIDIA's pip runtime wheel ships only the versioned file programs load.");
    let mut steps = Vec::new();
    if let Some(v) = versioned.first() {
        steps.push(FixStep::Shell(format!(
            "ln -s {} {}   # the development link a full toolkit has",
            cudoctor_plan::quote(v),
            cudoctor_plan::quote(&format!("{}/libcudart.so", link.path))
        )));
    }
    steps.push(FixStep::Prose(
        "Or point CUDA_HOME at a full CUDA Toolkit of torch's CUDA major (its lib64 has libcudart.so)".into(),
    ));
    vec![f.steps(steps)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::LinkDir;

    fn with_link_dir(files: &[&str]) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        let root = "/opt/venv/lib/python3.12/site-packages/nvidia/cu13";
        s.toolkit.toolkits[0].root = root.into();
        s.toolkit.toolkits[0].found_via.push("CUDA_HOME".into());
        s.toolkit.nvcc_on_path = None;
        s.env.insert("CUDA_HOME".into(), root.into());
        s.toolkit.toolkits[0].link_dir = Some(LinkDir {
            path: format!("{root}/lib"),
            exists: true,
            cudart_files: files.iter().map(|f| f.to_string()).collect(),
        });
        s
    }

    #[test]
    fn only_the_versioned_runtime_is_a_predicted_link_failure() {
        let f = run(
            &RULE,
            &with_link_dir(&["libcudart.so.13", "libcudart_static.a"]),
        );
        assert_eq!(f.len(), 1);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("cannot find -lcudart")));
        assert_eq!(
            f[0].fix[0].text(),
            "ln -s libcudart.so.13 /opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so   # the development link a full toolkit has"
        );
    }

    #[test]
    fn a_toolkit_with_the_link_or_unread_says_nothing() {
        assert!(run(&RULE, &with_link_dir(&["libcudart.so", "libcudart.so.13"])).is_empty());
        // A system toolkit: the linker's default directories may hold the link.
        let mut s = h200();
        s.toolkit.toolkits[0].link_dir = Some(LinkDir {
            path: "/usr/lib".into(),
            exists: true,
            cudart_files: Vec::new(),
        });
        assert!(run(&RULE, &s).is_empty());
        // Not read (an older snapshot), or no toolkit at all.
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = h200();
        s.toolkit = Default::default();
        s.env.remove("CUDA_HOME");
        assert!(run(&RULE, &s).is_empty());
    }
}
