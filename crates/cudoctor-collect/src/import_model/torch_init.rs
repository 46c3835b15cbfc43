//! What the installed `torch/__init__.py` does before `from torch._C import *`, read from its
//! own text: it loads `libtorch_global_deps.so` with RTLD_GLOBAL and then, depending on the
//! release, preloads some or all of the nvidia wheels' libraries by full path from `sys.path`.
//! Those preloaded copies win every later lookup of their soname, LD_LIBRARY_PATH or not, so
//! the emulation must do the same thing the installed version does.
//!
//! Two shapes are known:
//! - 2.5–2.7 (`_preload_cuda_deps(lib_folder, lib_name)`): after the global deps load, if the
//!   maps contain `nvidia/cuda_runtime/lib/libcudart.so`, preload nvrtc and nvJitLink; only
//!   when the global deps fail to load (OSError) is the whole `cuda_libs` table preloaded.
//! - 2.8+ (`_preload_cuda_deps(err=None, required=True)` with `_get_cuda_dep_paths`): if the
//!   maps contain `libcudart.so`, the whole table is preloaded, best effort, also from
//!   `nvidia/cuXX/lib` (CUDA 13 wheels).
//!
//! An `__init__.py` this reader does not recognise gives no preload, and says so.

/// The preloading an installed torch performs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TorchPreload {
    /// After a successful global deps load: preload these, if `condition` holds.
    pub after_global_deps: Vec<PreloadLib>,
    /// A substring `/proc/self/maps` must contain for `after_global_deps` to run.
    pub condition: Option<String>,
    /// When the global deps fail to load: preload these, then load the global deps again.
    pub on_failure: Vec<PreloadLib>,
    /// `_get_cuda_dep_paths` also searches `nvidia/cu<major>/lib` (CUDA 13 wheels).
    pub searches_cu_major_dir: bool,
    /// ... and `<folder>/lib` directly under each sys.path entry.
    pub searches_bare_folder: bool,
}

/// One `(lib_folder, lib_name)` pair: a glob under `nvidia/<folder>/lib/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreloadLib {
    pub folder: String,
    pub pattern: String,
}

/// Reads the preload behaviour out of the text of `torch/__init__.py`; `None` when the text
/// has no `_load_global_deps` this reader understands.
pub fn parse(text: &str) -> Option<TorchPreload> {
    let global = function_body(text, "_load_global_deps")?;
    let (success, failure) = match global.find("except OSError") {
        Some(i) => (&global[..i], &global[i..]),
        None => (global, ""),
    };
    let table = preload_table(text, failure);
    let dep_paths = function_body(text, "_get_cuda_dep_paths").unwrap_or("");
    Some(TorchPreload {
        after_global_deps: preloaded_by(success, &table),
        condition: maps_condition(success),
        on_failure: preloaded_by(failure, &table),
        searches_cu_major_dir: dep_paths.contains("f\"cu{"),
        searches_bare_folder: dep_paths
            .contains("os.path.join(path, lib_folder, \"lib\", lib_name)"),
    })
}

/// The table of libraries a bare `_preload_cuda_deps()` preloads: 2.8+ keeps it in
/// `_preload_cuda_deps` (plus extra `_preload_cuda_lib` calls); 2.5-2.7 keep it in
/// `_load_global_deps`'s OSError branch (`failure`).
fn preload_table(text: &str, failure: &str) -> Vec<PreloadLib> {
    let preload_fn = function_body(text, "_preload_cuda_deps").unwrap_or("");
    let mut table = lib_table(preload_fn);
    if table.is_empty() {
        table = lib_table(failure);
    }
    table.extend(
        calls(preload_fn, "_preload_cuda_lib(")
            .into_iter()
            .filter_map(folder_and_pattern),
    );
    table
}

/// What the `_preload_cuda_deps(...)` calls of `part` preload: the pair a call names, or the
/// whole `table` for a call that names none.
fn preloaded_by(part: &str, table: &[PreloadLib]) -> Vec<PreloadLib> {
    let mut libs = Vec::new();
    for call in calls(part, "_preload_cuda_deps(") {
        match folder_and_pattern(call) {
            Some(lib) => libs.push(lib),
            None => libs.extend(table.iter().cloned()),
        }
    }
    libs
}

/// A call's first two string arguments, as `(lib_folder, lib_name)`.
fn folder_and_pattern(call: &str) -> Option<PreloadLib> {
    let mut args = string_literals(call).into_iter();
    let folder = args.next()?;
    let pattern = args.next()?;
    Some(PreloadLib { folder, pattern })
}

/// The substring of `if "..." not in _maps` in the successful branch: what
/// `/proc/self/maps` must contain for the preloading after the global deps to run.
fn maps_condition(success: &str) -> Option<String> {
    success.lines().find_map(|l| {
        let l = l.trim();
        let rest = l.strip_prefix("if ")?;
        let (lit, tail) = first_literal(rest)?;
        tail.trim_start().starts_with("not in _maps").then_some(lit)
    })
}

/// The text of a top-level `def NAME(` up to the next line at column 0 that is not blank.
fn function_body<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let start = text.find(&format!("\ndef {name}("))? + 1;
    let body = &text[start..];
    let mut end = body.len();
    let mut offset = 0;
    for (i, line) in body.split_inclusive('\n').enumerate() {
        if i > 0 && !line.trim().is_empty() && !line.starts_with([' ', '\t', ')', '#']) {
            end = offset;
            break;
        }
        offset += line.len();
    }
    Some(&body[..end])
}

/// Each `CALL...)` argument text in `text`, skipping the definition itself.
fn calls<'a>(text: &'a str, call: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(call) {
        let before = &rest[..i];
        let after = &rest[i + call.len()..];
        let end = after.find(')').unwrap_or(after.len());
        let is_def = before.trim_end().ends_with("def");
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        let is_comment = before[line_start..].trim_start().starts_with('#');
        if !is_def && !is_comment {
            out.push(&after[..end]);
        }
        rest = &after[end..];
    }
    out
}

/// The `cuda_libs` table: `("folder", "pattern")` tuples or `"folder": "pattern"` entries.
fn lib_table(body: &str) -> Vec<PreloadLib> {
    let mut libs = Vec::new();
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with('#') {
            continue;
        }
        let lits = string_literals(t);
        let looks_like_pair = (t.starts_with('(') && t.contains(','))
            || (t.starts_with('"') && t.contains("\":"))
            || t.starts_with("cuda_libs[");
        if looks_like_pair && lits.len() == 2 && lits[1].starts_with("lib") {
            libs.push(PreloadLib {
                folder: lits[0].clone(),
                pattern: lits[1].clone(),
            });
        }
    }
    libs
}

/// Double-quoted string literals in a line (torch's sources use no escapes in these).
fn string_literals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some((lit, tail)) = first_literal(rest) {
        out.push(lit);
        rest = tail;
    }
    out
}

fn first_literal(text: &str) -> Option<(String, &str)> {
    let start = text.find('"')? + 1;
    let len = text[start..].find('"')?;
    Some((
        text[start..start + len].to_string(),
        &text[start + len + 1..],
    ))
}

/// `fnmatch` as Python's glob uses it for one path component: `*`, `?`, `[0-9]`-style sets.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some(b'*') => (0..=n.len()).any(|i| go(&p[1..], &n[i..])),
            Some(b'?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some(b'[') => {
                let Some(close) = p.iter().skip(1).position(|&c| c == b']').map(|i| i + 1) else {
                    return n.first() == Some(&b'[') && go(&p[1..], &n[1..]);
                };
                let Some(&c) = n.first() else { return false };
                let set = &p[1..close];
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == b'-' {
                        hit |= set[i] <= c && c <= set[i + 2];
                        i += 3;
                    } else {
                        hit |= set[i] == c;
                        i += 1;
                    }
                }
                hit && go(&p[close + 1..], &n[1..])
            }
            Some(&c) => n.first() == Some(&c) && go(&p[1..], &n[1..]),
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The relevant parts of torch 2.7.1's `torch/__init__.py`, verbatim.
    const TORCH_2_7: &str = include_str!("../../tests/fixtures/torch_init/2.7.1.py");
    /// ... and of torch 2.15.0's.
    const TORCH_2_15: &str = include_str!("../../tests/fixtures/torch_init/2.15.0.py");

    #[test]
    fn torch_2_7_preloads_nvrtc_and_nvjitlink_when_the_wheel_runtime_is_mapped() {
        let p = parse(TORCH_2_7).unwrap();
        assert_eq!(
            p.condition.as_deref(),
            Some("nvidia/cuda_runtime/lib/libcudart.so")
        );
        let names: Vec<&str> = p
            .after_global_deps
            .iter()
            .map(|l| l.folder.as_str())
            .collect();
        assert_eq!(names, ["cuda_nvrtc", "nvjitlink"]);
        assert!(p
            .on_failure
            .iter()
            .any(|l| l.pattern == "libcudnn.so.*[0-9]"));
        assert!(p
            .on_failure
            .iter()
            .any(|l| l.pattern == "libnvToolsExt.so.*[0-9]"));
        assert!(!p.searches_cu_major_dir);
    }

    #[test]
    fn torch_2_15_preloads_the_whole_table_in_order() {
        let p = parse(TORCH_2_15).unwrap();
        assert_eq!(p.condition.as_deref(), Some("libcudart.so"));
        let first: Vec<&str> = p
            .after_global_deps
            .iter()
            .take(3)
            .map(|l| l.pattern.as_str())
            .collect();
        assert_eq!(
            first,
            [
                "libcublasLt.so.*[0-9]",
                "libcublas.so.*[0-9]",
                "libcudnn.so.*[0-9]"
            ]
        );
        assert!(p
            .after_global_deps
            .iter()
            .any(|l| l.pattern == "libnvrtc-builtins.so.*[0-9]"));
        assert!(p.searches_cu_major_dir);
        assert!(p.searches_bare_folder);
    }

    #[test]
    fn text_without_the_function_is_not_guessed() {
        assert_eq!(parse("import os\n"), None);
    }

    #[test]
    fn glob_is_fnmatch() {
        assert!(glob_match("libnvrtc.so.*[0-9]", "libnvrtc.so.13"));
        assert!(glob_match(
            "libnvrtc-builtins.so.*[0-9]",
            "libnvrtc-builtins.so.13.2"
        ));
        assert!(!glob_match(
            "libnvrtc.so.*[0-9]",
            "libnvrtc-builtins.so.13.2"
        ));
        assert!(!glob_match("libcudart.so.*[0-9]", "libcudart.so"));
        assert!(glob_match("_C.*.so", "_C.cpython-311-x86_64-linux-gnu.so"));
    }
}
