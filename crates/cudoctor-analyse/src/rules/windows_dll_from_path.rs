use std::collections::BTreeMap;

use cudoctor_plan::quote_powershell_path;
use cudoctor_snapshot::windows::{Found, WinPath};

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PLT021",
    name: "windows-dll-from-another-install",
    layer: Layer::Platform,
    severity: Severity::Warning,
    summary: "On Windows, import torch loads a DLL of another install found through PATH",
    docs: r#"## What it checks
In the emulation of `import torch` on Windows (see PLT020): whether a DLL was found through a
directory of PATH that does not belong to the environment. torch's DLLs are loaded with a
search that ignores PATH; only when one fails with error 126 does torch put its DLL directories
in front of PATH and load it again with the standard search, which reaches PATH. What is found
there belongs to another program: another Python's Visual C++ runtime, another torch's
`torch\lib` a user added to PATH, a CUDA Toolkit's `bin`.

## Why it matters
DLLs of another install mix with this one's: another build of `c10.dll` or `cudnn64_9.dll`, or
an older `msvcp140.dll`, which fail later with WinError 127 or crash. `where c10.dll` in a
terminal shows the copies on PATH.

## How to fix
Take the directory off PATH (the command removes it for the current PowerShell session; remove
it for good in System Properties → Environment Variables), and fix what made the first search
fail (PLT020: usually the Visual C++ runtime).
"#,
    check,
};

/// A DLL found through PATH was searched for only because a torch DLL failed its first search;
/// when that import fails (PLT020), its fix removes the need.
pub static FOLLOWS: crate::rule::Follows = crate::rule::Follows {
    rule: &RULE,
    cause: &super::windows_torch_dll_fails::RULE,
    sharing: crate::rule::Sharing::WindowsTorchImport,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(w) = &ctx.snap.windows else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for env in &w.torch_envs {
        let prefix = env
            .python
            .parent()
            .map(|bin| {
                if bin.file_name().eq_ignore_ascii_case("Scripts") {
                    bin.parent().unwrap_or(bin)
                } else {
                    bin
                }
            })
            .unwrap_or_else(|| env.torch_dir.clone());
        // Foreign modules by the PATH directory they came from.
        let mut by_dir: BTreeMap<WinPath, Vec<String>> = BTreeMap::new();
        for m in &env.import.modules {
            if m.found != Found::Path || m.path.is_within(&prefix) {
                continue;
            }
            let Some(dir) = m.path.parent() else { continue };
            let by = m
                .wanted_by
                .as_ref()
                .map_or_else(String::new, |w| format!(", wanted by {}", w.file_name()));
            by_dir
                .entry(dir)
                .or_default()
                .push(format!("{}{by}", m.path.file_name()));
        }
        for (dir, dlls) in by_dir {
            let mut f = Finding::new(
                &RULE,
                format!(
                    "import torch in {} loads DLLs of another install from PATH: {dir}",
                    env.python
                ),
            )
            .evidence(format!("{dir} is on PATH and outside {prefix}"))
    .about(crate::finding::Subject::WindowsTorchImport {
        python: env.python.to_string(),
    })
            .cause(format!(
                "A torch DLL failed its first search (error 126), and torch's fallback searched PATH, where {dir} supplied what this environment does not have."
            ))
            .powershell(format!(
                "$env:Path = (($env:Path -split ';') | Where-Object {{ $_ -ne {} }}) -join ';'",
                quote_powershell_path(dir.as_str())
            ))
            .prose(format!(
                "Remove {dir} from PATH for good in System Properties > Environment Variables, and fix the first failure (PLT020)"
            ));
            for d in dlls {
                f = f.evidence(format!("loaded through PATH: {d}"));
            }
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::windows_torch_dll_fails::tests::windows_env;
    use crate::testing::*;
    use cudoctor_snapshot::windows::Module;

    #[test]
    fn a_runtime_dll_from_another_pythons_scripts_on_path() {
        let mut s = windows_env(None);
        let env = &mut s.windows.as_mut().unwrap().torch_envs[0];
        let lib = env.torch_dir.join("lib");
        env.import.modules = vec![
            Module {
                path: lib.join("c10.dll"),
                found: Found::FullPath,
                wanted_by: None,
                load: 0,
                delay_loads: vec![],
            },
            Module {
                path: WinPath::new(r"C:\Python38\Scripts\msvcp140.dll"),
                found: Found::Path,
                wanted_by: Some(lib.join("c10.dll")),
                load: 0,
                delay_loads: vec![],
            },
        ];
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].title.contains(r"C:\Python38\Scripts"));
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e == "loaded through PATH: msvcp140.dll, wanted by c10.dll"));
        let cmd = f[0].fix[0].text();
        assert_eq!(
            cmd,
            r"$env:Path = (($env:Path -split ';') | Where-Object { $_ -ne 'C:\Python38\Scripts' }) -join ';'"
        );
        // The environment's own directories on PATH are not another install.
        env_path_is_own(&mut s);
        assert!(run(&RULE, &s).is_empty());
    }

    fn env_path_is_own(s: &mut cudoctor_snapshot::Snapshot) {
        let env = &mut s.windows.as_mut().unwrap().torch_envs[0];
        let own = env.torch_dir.join("lib").join("msvcp140.dll");
        env.import.modules[1].path = own;
    }
}
