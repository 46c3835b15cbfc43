use crate::rules::missing_library::short;
use crate::{Context, Finding, Layer, Rule, Severity};

/// Mangled-name prefixes of torch's C++ namespaces (c10, at, torch, caffe2).
const TORCH_SYMBOLS: &[&str] = &[
    "_ZN3c10",
    "_ZNK3c10",
    "_ZN2at",
    "_ZNK2at",
    "_ZN5torch",
    "_ZNK5torch",
    "_ZN6caffe2",
];

pub static RULE: Rule = Rule {
    code: "LIB004",
    name: "unresolved-symbols",
    layer: Layer::Libraries,
    severity: Severity::Error,
    summary: "An extension needs symbols that nothing in the process provides",
    docs: r#"## What it checks
The undefined dynamic symbols (with their GNU versions) of each CUDA extension, against the
symbols exported by everything loaded with it: the interpreter, torch, the CUDA libraries.
Weak symbols are ignored.

## Why it matters
An extension compiled against one torch release calls C++ functions by their mangled names;
another torch release renames or removes some, and the import fails with "undefined symbol:
_ZN3c10..." (the most common cause: torch was upgraded after the extension was built, or a
prebuilt wheel for another torch was installed). A missing versioned symbol such as
GLIBCXX_3.4.32 means the extension was built with a newer compiler than the system's libstdc++.

## How to fix
Reinstall the extension built for this torch: a prebuilt wheel matching torch's version and CUDA,
or a source build against the installed torch, in the environment's own installer (the report
prints it: `--force-reinstall --no-deps --no-build-isolation --no-binary <pkg> --no-cache-dir`
with pip, `--reinstall ... --no-cache` with uv). Without `--no-binary` and the cache option the
installer reinstalls the same wheel or its cached build; `--no-deps` keeps torch.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let torch_version = |env: &str| {
        ctx.env_at(env)
            .and_then(|e| e.torch.as_ref())
            .map(|t| t.version.clone())
            .unwrap_or_else(|| "?".into())
    };
    ctx.loaded_objects()
        .into_iter()
        .filter(|(_, o)| o.symbols_checked && !o.unresolved_symbols.is_empty())
        // Without an optional system library (libsox) its symbols are missing too: LIB001
        // already says that feature is unavailable.
        .filter(|(_, o)| !o.lacks_optional_library())
        .map(|(env, o)| {
            let torch_abi = o.unresolved_symbols.iter().filter(|s| TORCH_SYMBOLS.iter().any(|p| s.starts_with(p))).count();
            let installed = ctx.installed_package_of(&o.path);
            let package = installed
                .or(ctx.owner_of(&o.path))
                .unwrap_or(short(&o.path))
                .to_string();
            let shown: Vec<&String> = o.unresolved_symbols.iter().take(5).collect();
            let mut f = Finding::new(&RULE, format!("{package} needs {} symbol(s) nothing provides", o.unresolved_symbols.len()))
                .evidence(format!("{}: undefined {}{}", o.path, shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "), if o.unresolved_symbols.len() > 5 { ", ..." } else { "" }))
                .evidence(format!("torch {} in {env}", torch_version(env)));
            if let Some(s) = ctx.package_subject(&o.path) {
                f = f.about(s);
            }
            f = if torch_abi > 0 {
                f.cause(format!("{torch_abi} of them are torch's own C++ symbols: {package} was built against another torch release, and importing it fails with \"undefined symbol: {}\".", shown[0]))
            } else {
                f.cause(format!("Importing it fails with \"undefined symbol: {}\": a library it was linked against is missing or of another version.", shown[0]))
            };
            match installed {
                Some(pkg) => f
                    .shell(format!(
                        "{}   # rebuilds it against torch {}",
                        ctx.target(env).install(&cudoctor_plan::Install::rebuild(pkg)),
                        cudoctor_plan::comment(&torch_version(env))
                    ))
                    .prose(format!("or install the prebuilt {pkg} wheel made for torch {}", torch_version(env))),
                None => f.prose(format!(
                    "Rebuild {} against torch {} (it belongs to no installed package cudoctor could find)",
                    o.path,
                    torch_version(env)
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{LibraryLinks, LoaderFacts, ProcessLinks};

    #[test]
    fn torch_symbols_mean_an_abi_mismatch() {
        let mut s = h200();
        s.loader = Some(LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: "/opt/venv".into(),
                objects: vec![LibraryLinks {
                    path: "/opt/venv/lib/python3.12/site-packages/flash_attn_2_cuda.so".into(),
                    symbols_checked: true,
                    unresolved_symbols: vec!["_ZN3c104cuda9SetDeviceEi".into()],
                    ..Default::default()
                }],
                shadowed: vec![],
                runtime_dirs: vec![],
            }],
            ..Default::default()
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert!(f[0].cause.contains("another torch release"));
        // No installed distribution owns the file: no pip command names one.
        assert!(
            f[0].fix[0].starts_with("Rebuild /opt/venv/"),
            "{:?}",
            f[0].fix
        );

        s.python_envs[0].packages.push(cudoctor_snapshot::Package {
            name: "flash-attn".into(),
            version: "2.8.3".into(),
            location: "/opt/venv/lib/python3.12/site-packages".into(),
        });
        let f = run(&RULE, &s);
        assert!(f[0].title.starts_with("flash-attn needs"), "{}", f[0].title);
        assert_eq!(
            f[0].fix[0],
            "/opt/venv/bin/python -m pip install --force-reinstall --no-deps --no-build-isolation --no-binary flash-attn --no-cache-dir flash-attn   # rebuilds it against torch 2.11.0+cu130"
        );
    }
}
