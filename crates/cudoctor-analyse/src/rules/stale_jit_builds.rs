use cudoctor_snapshot::{parse_build_folder, torch_build_folder, BinaryOrigin};

use crate::{Context, Finding, FixStep, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "KRN006",
    name: "stale-jit-builds",
    layer: Layer::Kernels,
    severity: Severity::Info,
    summary: "torch's extension cache holds JIT builds for another Python or torch build",
    docs: r#"## What it checks
The build folders of torch's extension cache (`~/.cache/torch_extensions/py311_cu130/`, under
`XDG_CACHE_HOME` when it is set) against the Python and torch of each inspected environment:
torch's `_get_build_directory` names the folder `py{major}{minor}_{cu<CUDA>|cpu}` after the
interpreter and torch build that load and build there, so a folder no environment names holds
builds none of them loads.

## Why it matters
Nothing breaks: torch builds the extension again in its own folder. But these builds are what a
person finds when looking for "the" build of an extension, and a build for an older torch or CUDA
kept around is the one copied into a new environment or container by hand, where it fails with
"undefined symbol" or "no kernel image is available". Their kernel images are not judged
against the GPUs (KRN002 judges the builds an environment loads).

## How to fix
Nothing is needed. To reclaim the space, remove the folder: torch rebuilds what it needs there.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(found) = &ctx.snap.binaries else {
        return Vec::new();
    };
    // The folders the inspected environments use.
    let live: Vec<(String, &str)> = ctx
        .snap
        .python_envs
        .iter()
        .filter_map(|e| {
            let folder = torch_build_folder(e.python_version.as_deref()?, e.torch.as_ref()?)?;
            Some((folder, e.prefix.as_str()))
        })
        .collect();
    // One finding per build folder, naming its builds.
    // (folder directory, folder name, its builds as (name, path)).
    type Folder<'a> = (String, String, Vec<(&'a str, &'a str)>);
    let mut folders: Vec<Folder> = Vec::new();
    for b in &found.binaries {
        if !ctx.is_stale_jit_build(&b.path) {
            continue;
        }
        let BinaryOrigin::TorchExtensionCache {
            root,
            build_folder,
            name,
            ..
        } = &b.origin
        else {
            continue;
        };
        let dir = match build_folder {
            Some(f) => format!("{root}/{f}"),
            None => format!("{root}/{name}"),
        };
        let label = build_folder.clone().unwrap_or_default();
        match folders.iter_mut().find(|(d, ..)| *d == dir) {
            Some((.., builds)) => builds.push((name, &b.path)),
            None => folders.push((dir, label, vec![(name.as_str(), b.path.as_str())])),
        }
    }
    folders
        .into_iter()
        .map(|(dir, folder, builds)| {
            let names: Vec<&str> = {
                let mut n: Vec<&str> = builds.iter().map(|(n, _)| *n).collect();
                n.dedup();
                n
            };
            let built_for = match parse_build_folder(&folder) {
                Some((python, accel)) => format!("Python {python} and a torch built for {}", accelerator(&accel)),
                None => "a torch release from before torch named its build folders".to_string(),
            };
            let mut f = Finding::new(
                &RULE,
                format!(
                    "JIT build{} {} in torch's extension cache {} for {built_for}: no inspected environment loads {}",
                    if names.len() > 1 { "s" } else { "" },
                    names.join(", "),
                    if names.len() > 1 { "are" } else { "is" },
                    if names.len() > 1 { "them" } else { "it" },
                ),
            );
            for (_, path) in &builds {
                f = f.evidence(format!("{path}: built in folder {}", if folder.is_empty() { "(none)" } else { folder.as_str() }));
            }
            if live.is_empty() {
                f = f.evidence("no inspected environment has torch with a known Python version");
            }
            for (folder, prefix) in &live {
                f = f.evidence(format!("torch in {prefix} builds and loads in {folder}"));
            }
            f.cause("torch looks for a JIT build only in the folder named after its own Python and build; these are left from another interpreter or torch.")
                .steps([FixStep::Shell(format!(
                    "rm -rf {}   # optional: frees the space; torch rebuilds what it needs",
                    cudoctor_plan::quote(&dir)
                ))])
        })
        .collect()
}

/// `cu130` -> `CUDA 13.0`; `cpu` -> `the CPU`; others as written.
fn accelerator(tag: &str) -> String {
    match tag.strip_prefix("cu") {
        Some(digits) if digits.len() >= 2 && digits.chars().all(|c| c.is_ascii_digit()) => {
            // torch writes CUDA's major.minor without the dot: the minor is the last digit
            // for every CUDA release so far (10.2 .. 13.2), the major the rest.
            let (major, minor) = digits.split_at(digits.len() - 1);
            format!("CUDA {major}.{minor}")
        }
        _ if tag == "cpu" => "the CPU only".to_string(),
        _ => tag.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{BinaryDiscovery, FoundBinary};

    fn cache_build(folder: &str, name: &str, env: Option<&str>) -> FoundBinary {
        let root = "/home/u/.cache/torch_extensions";
        FoundBinary {
            path: format!("{root}/{folder}/{name}/{name}.so"),
            origin: BinaryOrigin::TorchExtensionCache {
                root: root.into(),
                from_env_var: false,
                build_folder: Some(folder.into()),
                name: name.into(),
                build_dir: format!("{root}/{folder}/{name}"),
            },
            fatbin: true,
            cuda_needed: vec!["libcudart.so.13".into()],
            env_prefix: env.map(str::to_string),
        }
    }

    #[test]
    fn builds_of_another_python_or_torch_are_named_by_their_folder() {
        let mut s = h200();
        s.binaries = Some(BinaryDiscovery {
            binaries: vec![
                cache_build("py312_cu130", "myext", Some("/opt/venv")),
                cache_build("py310_cu118", "old", None),
                cache_build("py310_cu118", "older", None),
            ],
            places: Vec::new(),
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(f[0].title.contains("old, older"), "{}", f[0].title);
        assert!(
            f[0].title
                .contains("Python 3.10 and a torch built for CUDA 11.8"),
            "{}",
            f[0].title
        );
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("builds and loads in py312_cu130")));
        assert!(
            f[0].fix[0]
                .text()
                .contains("'/home/u/.cache/torch_extensions/py310_cu118'")
                || f[0].fix[0]
                    .text()
                    .contains("/home/u/.cache/torch_extensions/py310_cu118")
        );
        // The live build is not stale.
        s.binaries.as_mut().unwrap().binaries.truncate(1);
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn cuda_tags_read_back() {
        assert_eq!(accelerator("cu130"), "CUDA 13.0");
        assert_eq!(accelerator("cu118"), "CUDA 11.8");
        assert_eq!(accelerator("cpu"), "the CPU only");
    }
}
