//! Which compiled modules a package loads only on some machines, read from its own Python
//! source (never run): serving engines ship modules built only for one architecture family
//! (vLLM's `_flashmla_C` and `_vllm_fa3_C` for sm_90a, `_deepselect_C` for sm_100f) and import
//! them inside `try: ... except ImportError`, under `contextlib.suppress(ImportError)`, after an
//! `importlib.util.find_spec` probe, under a capability check or inside the function of the
//! feature that needs them. Only architecture-specific libraries are looked up (machine code
//! for `a`/`f` targets alone, no PTX): a core module stays a core module. Plugins (a file of a
//! `plugins` directory or named `libplugin_*` inside a package) are optional whatever their code.

use std::collections::BTreeMap;

use cudoctor_snapshot::{ConditionalLoad, KernelImages, LibraryImages, LoadCondition, PythonEnv};

use crate::host::Host;

/// Most Python files read for one package (vLLM has about 3,200).
const MAX_FILES: usize = 10_000;
/// Largest Python file read.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// Whether a library carries machine code only for architecture-specific targets (`sm_90a`,
/// `sm_100f`) and no PTX: code that runs on one architecture family alone.
pub fn architecture_specific(lib: &LibraryImages) -> bool {
    lib.ptx.is_empty()
        && !lib.sass.is_empty()
        && lib
            .sass
            .iter()
            .all(|s| s.ends_with('a') || s.ends_with('f'))
}

/// Marks the architecture-specific libraries of `images` that their package imports
/// conditionally (`LibraryImages::loaded_if`).
pub fn mark_optional(host: &Host, envs: &[PythonEnv], images: &mut KernelImages) {
    mark_plugins(envs, images);
    // Per (site-packages, top-level package): the modules to look for.
    let mut wanted: BTreeMap<(String, String), Vec<(usize, String)>> = BTreeMap::new();
    // The package's other compiled modules with device code, judged with them where only
    // expected failures import them (vLLM's FA2 module beside its FA3 one).
    let mut others: BTreeMap<(String, String), Vec<(usize, String)>> = BTreeMap::new();
    for (i, lib) in images.libraries.iter().enumerate() {
        if lib.error.is_some() || (lib.sass.is_empty() && lib.ptx.is_empty()) {
            continue;
        }
        let Some((sp, module)) = module_of(envs, &lib.path) else {
            continue;
        };
        let top = module.split('.').next().unwrap_or(&module).to_string();
        if top == module {
            // A top-level module has no package source of its own to dispatch it.
            continue;
        }
        let file = lib.path.rsplit('/').next().unwrap_or(&lib.path);
        if architecture_specific(lib) {
            wanted.entry((sp, top)).or_default().push((i, module));
        } else if !file.starts_with("lib") {
            others.entry((sp, top)).or_default().push((i, module));
        }
    }
    for ((sp, top), modules) in wanted {
        let names: Vec<&str> = modules.iter().map(|(_, m)| m.as_str()).collect();
        let more = others
            .remove(&(sp.clone(), top.clone()))
            .unwrap_or_default();
        let more_names: Vec<&str> = more.iter().map(|(_, m)| m.as_str()).collect();
        let all: Vec<&str> = names.iter().chain(&more_names).copied().collect();
        let occurrences = scan_tree(host, &sp, &top, &all);
        for (i, module) in &more {
            if let Some(c) = classify_expected_failure(module, &occurrences) {
                images.libraries[*i].loaded_if = Some(c);
            }
        }
        let mut found: BTreeMap<String, ConditionalLoad> = names
            .iter()
            .filter_map(|m| Some((m.to_string(), classify(m, &occurrences)?)))
            .collect();
        // A module its package's own import loads: the package is the unit, and how the other
        // packages import it says whether it is optional.
        if names.iter().any(|m| !found.contains_key(*m)) {
            let env = envs.iter().find(|e| e.site_packages.contains(&sp));
            if let Some(c) = env.and_then(|e| imported_by_others(host, e, &sp, &top)) {
                for m in &names {
                    found.entry(m.to_string()).or_insert_with(|| c.clone());
                }
            }
        }
        for (i, module) in modules {
            if let Some(c) = found.get(&module) {
                images.libraries[i].loaded_if = Some(c.clone());
            }
        }
    }
}

/// Libraries that the packages shipping them open (dlopen) only when the feature that needs
/// them is used, by file name.
const ON_USE_LIBRARIES: &[&str] = &[
    // NCCL's expert-parallel library (sm_90 and newer): Transformer Engine 2.20's
    // `wheel_lib/libnccl_ep.so`, opened by `open_nccl_ep_library` when expert-parallel
    // communication is asked for (`transformer_engine.require_nccl_ep()`), linked by nothing.
    "libnccl_ep.so",
];

/// Whether a library inside a Python package is a plugin its package opens only on request:
/// a file of a `plugins` directory or named `libplugin_*` (NIXL's
/// `nixl_cu13.libs/nixl/libplugin_GPUNETIO.so`, `.nixl_cu13.mesonpy.libs/plugins/...`), or a
/// feature's library of [`ON_USE_LIBRARIES`].
fn is_plugin(rest: &str) -> bool {
    let mut parts = rest.split('/').rev();
    let file = parts.next().unwrap_or("");
    file.starts_with("libplugin_")
        || ON_USE_LIBRARIES
            .iter()
            .any(|l| file == *l || file.strip_prefix(l).is_some_and(|v| v.starts_with('.')))
        || parts.any(|d| d == "plugins")
}

/// Marks the plugins among the libraries with device code inside the environments'
/// site-packages (`LoadCondition::Plugin`): backends their package opens only when asked for.
fn mark_plugins(envs: &[PythonEnv], images: &mut KernelImages) {
    for lib in &mut images.libraries {
        if lib.loaded_if.is_some() || (lib.sass.is_empty() && lib.ptx.is_empty()) {
            continue;
        }
        let rest = envs.iter().flat_map(|e| &e.site_packages).find_map(|sp| {
            lib.path
                .strip_prefix(sp.trim_end_matches('/'))?
                .strip_prefix('/')
        });
        let Some(rest) = rest else {
            continue;
        };
        if is_plugin(rest) {
            let module = rest.rsplit('/').next().unwrap_or(rest).to_string();
            lib.loaded_if = Some(ConditionalLoad {
                module,
                how: LoadCondition::Plugin,
                at: rest.to_string(),
            });
        } else if let Some((module, at)) = gated_module(rest) {
            lib.loaded_if = Some(ConditionalLoad {
                module: module.to_string(),
                how: LoadCondition::UnderCondition,
                at: at.to_string(),
            });
        }
    }
}

/// Compiled modules whose package uses them only on the GPUs a capability check of its own
/// admits, though importing them does not fail elsewhere (the library loads; only its kernels
/// would): the module's file (relative to site-packages, up to its first dot), its dotted name,
/// and where the check is. Each read from the package's source.
const GATED_MODULES: &[(&str, &str, &str)] = &[
    // sglang-kernel 0.4.10: FlashAttention 3 (SASS sm_80, sm_86, sm_90a). Only
    // `sgl_kernel/flash_attn.py` imports it, and SGLang picks that backend only where
    // `is_fa3_supported()` holds: a CUDA >= 12.3 torch on a GPU of major 8 or 9.
    (
        "sgl_kernel/flash_ops",
        "sgl_kernel.flash_ops",
        "sgl_kernel/flash_attn.py: is_fa3_supported() (compute capability 8.x or 9.x)",
    ),
];

/// The module's name and its check, where `rest` (a path under site-packages) is one of
/// [`GATED_MODULES`].
fn gated_module(rest: &str) -> Option<(&'static str, &'static str)> {
    let (dir, file) = rest.rsplit_once('/')?;
    let stem = file.split('.').next()?;
    GATED_MODULES
        .iter()
        .find(|(f, _, _)| f.rsplit_once('/') == Some((dir, stem)))
        .map(|(_, m, at)| (*m, *at))
}

/// The site-packages directory holding `path` and the module's dotted name
/// (`vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so` -> `vllm.vllm_flash_attn._vllm_fa3_C`).
fn module_of(envs: &[PythonEnv], path: &str) -> Option<(String, String)> {
    envs.iter().flat_map(|e| &e.site_packages).find_map(|sp| {
        let rest = path
            .strip_prefix(sp.trim_end_matches('/'))?
            .strip_prefix('/')?;
        let (dir, file) = rest.rsplit_once('/')?;
        let stem = file.split('.').next()?;
        if stem.is_empty() || !file.contains(".so") {
            return None;
        }
        Some((sp.clone(), format!("{}.{stem}", dir.replace('/', "."))))
    })
}

/// One import of a module found in a package's Python source.
struct Occurrence {
    module: String,
    how: Option<LoadCondition>,
    /// The file's dotted module name (`vllm.platforms.cuda`, `flash_mla.__init__`).
    file_module: String,
    at: String,
}

/// The imports of `modules` in the Python files under `<sp>/<tree>`.
fn scan_tree(host: &Host, sp: &str, tree: &str, modules: &[&str]) -> Vec<Occurrence> {
    let mut out = Vec::new();
    let shorts: Vec<&str> = modules
        .iter()
        .map(|m| m.rsplit('.').next().unwrap_or(m))
        .collect();
    // What every module's name contains (`_C` of `_flashmla_C` and `_vllm_fa3_C`): one search
    // of each file instead of one per module.
    let common = common_substring(&shorts);
    let common_finder = memchr::memmem::Finder::new(common.as_bytes());
    let finders: Vec<memchr::memmem::Finder> = shorts
        .iter()
        .map(|s| memchr::memmem::Finder::new(s.as_bytes()))
        .collect();
    let root = host.fs_path(&format!("{sp}/{tree}"));
    let mut stack = vec![root];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
                continue;
            }
            if !ft.is_file() || p.extension().and_then(|x| x.to_str()) != Some("py") {
                continue;
            }
            files += 1;
            if files > MAX_FILES {
                return out;
            }
            if e.metadata()
                .map(|m| m.len() > MAX_FILE_BYTES)
                .unwrap_or(true)
            {
                continue;
            }
            let Ok(bytes) = std::fs::read(&p) else {
                continue;
            };
            // A cheap test first: most files name none of the modules.
            if common_finder.find(&bytes).is_none()
                || !finders.iter().any(|f| f.find(&bytes).is_some())
            {
                continue;
            }
            let Ok(text) = String::from_utf8(bytes) else {
                continue;
            };
            let rel = p
                .strip_prefix(host.fs_path(sp))
                .map(|r| r.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let file_module = rel.trim_end_matches(".py").replace('/', ".");
            for m in modules {
                for (line, how) in imports_of(&text, m, &file_module) {
                    out.push(Occurrence {
                        module: m.to_string(),
                        how,
                        file_module: file_module.clone(),
                        at: format!("{rel}:{line}"),
                    });
                }
            }
        }
    }
    out
}

/// Whether an import of `module` at the top of `file_module` runs when its package is imported:
/// the `__init__` of the top package or of the module's own package.
fn at_package_import(module: &str, file_module: &str) -> bool {
    let top = module.split('.').next().unwrap_or(module);
    let parent = module.rsplit_once('.').map(|(p, _)| p).unwrap_or(module);
    file_module == format!("{top}.__init__") || file_module == format!("{parent}.__init__")
}

/// How `module` is loaded, from its imports: `None` when importing its package loads it (an
/// import at the top of the package's `__init__`) or nothing imports it; otherwise the import
/// that says most (an expected failure: try/except, suppress, find_spec; then one under a
/// condition or on use; then one at the top of a submodule the package import does not load).
fn classify(module: &str, occurrences: &[Occurrence]) -> Option<ConditionalLoad> {
    let mine: Vec<&Occurrence> = occurrences.iter().filter(|o| o.module == module).collect();
    if mine
        .iter()
        .any(|o| o.how.is_none() && at_package_import(module, &o.file_module))
    {
        return None;
    }
    let rank = |o: &Occurrence| match o.how {
        Some(
            LoadCondition::TryImport | LoadCondition::SuppressedImport | LoadCondition::FindSpec,
        ) => 0,
        Some(_) => 1,
        None => 2,
    };
    let best = mine.iter().min_by_key(|o| rank(o))?;
    Some(ConditionalLoad {
        module: module.to_string(),
        how: best.how.unwrap_or(LoadCondition::BySubmodule),
        at: best.at.clone(),
    })
}

/// How a module that is not architecture-specific is loaded, where every import of it is
/// conditional and one at least expects it to fail (try/except that does not raise again,
/// suppress, find_spec): `None` otherwise. Stricter than [`classify`]: such a module may be a
/// core one imported at the top of a platform's submodule (vLLM's `_C_stable_libtorch`).
fn classify_expected_failure(module: &str, occurrences: &[Occurrence]) -> Option<ConditionalLoad> {
    let mine: Vec<&Occurrence> = occurrences.iter().filter(|o| o.module == module).collect();
    if mine.is_empty() || mine.iter().any(|o| o.how.is_none()) {
        return None;
    }
    let best = mine.iter().find(|o| {
        matches!(
            o.how,
            Some(
                LoadCondition::TryImport
                    | LoadCondition::SuppressedImport
                    | LoadCondition::FindSpec
            )
        )
    })?;
    Some(ConditionalLoad {
        module: module.to_string(),
        how: best.how?,
        at: best.at.clone(),
    })
}

/// A package that its own `__init__` makes load an architecture-specific module (`flash_mla`
/// loading `flash_mla.cuda`, sm_100a only): how the other packages of the environment import
/// the package itself (SGLang imports `flash_mla` only in a submodule of a Blackwell backend).
fn imported_by_others(
    host: &Host,
    env: &PythonEnv,
    sp: &str,
    top: &str,
) -> Option<ConditionalLoad> {
    let mut found: Vec<Occurrence> = Vec::new();
    for p in &env.packages {
        let dir = p.name.replace('-', "_");
        if dir == top
            || p.location != sp
            || matches!(dir.as_str(), "torch" | "triton")
            || dir.starts_with("nvidia")
            || !host.is_dir(&format!("{sp}/{dir}"))
        {
            continue;
        }
        let occ = scan_tree(host, sp, &dir, &[top]);
        // Imported when that package is: a core dependency of it.
        if occ
            .iter()
            .any(|o| o.how.is_none() && o.file_module == format!("{dir}.__init__"))
        {
            return None;
        }
        found.extend(occ);
    }
    let best = found.iter().min_by_key(|o| match o.how {
        Some(
            LoadCondition::TryImport | LoadCondition::SuppressedImport | LoadCondition::FindSpec,
        ) => 0,
        Some(_) => 1,
        None => 2,
    })?;
    Some(ConditionalLoad {
        module: top.to_string(),
        how: best.how.unwrap_or(LoadCondition::BySubmodule),
        at: best.at.clone(),
    })
}

/// Whether a handler of the `try:` at line `at` (indentation `indent`) raises again.
fn handler_raises(lines: &[&str], at: usize, indent: usize) -> bool {
    let ind = |s: &str| s.len() - s.trim_start().len();
    let mut in_handler = false;
    for l in &lines[at + 1..] {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let n = ind(l);
        if n < indent
            || (n == indent
                && !t.starts_with("except")
                && !t.starts_with("else")
                && !t.starts_with("finally"))
        {
            break;
        }
        if n == indent {
            in_handler = t.starts_with("except");
            continue;
        }
        if in_handler && (t == "raise" || t.starts_with("raise ") || t.starts_with("raise(")) {
            return true;
        }
    }
    false
}

/// The longest text every one of `names` contains.
fn common_substring(names: &[&str]) -> String {
    let Some(first) = names.iter().min_by_key(|n| n.len()) else {
        return String::new();
    };
    for len in (1..=first.len()).rev() {
        for start in 0..=first.len() - len {
            let Some(cand) = first.get(start..start + len) else {
                continue;
            };
            if names.iter().all(|n| n.contains(cand)) {
                return cand.to_string();
            }
        }
    }
    String::new()
}

/// The imports of `module` in a Python text (of the module `file_module`), each with its line
/// and the condition it is under (`None`: unconditional, at the top of the module).
fn imports_of(text: &str, module: &str, file_module: &str) -> Vec<(usize, Option<LoadCondition>)> {
    let lines: Vec<&str> = text.lines().collect();
    let (parent, short) = module.rsplit_once('.').unwrap_or(("", module));
    let mut out = Vec::new();
    for (i, raw) in lines.iter().enumerate() {
        let l = raw.trim();
        if !l.contains(short) {
            continue;
        }
        let quoted = format!("\"{module}\"");
        let single = format!("'{module}'");
        if (l.contains("find_spec(") || l.contains("import_module("))
            && (l.contains(&quoted) || l.contains(&single))
        {
            out.push((i + 1, Some(LoadCondition::FindSpec)));
            continue;
        }
        if !imports_module(l, module, parent, short, file_module) {
            continue;
        }
        out.push((i + 1, enclosing_condition(&lines, i)));
    }
    out
}

/// Whether the statement `l` imports `module` (`import a.b.c`, `import a.b.c as x`,
/// `from a.b import c`, `from . import c` in a module of package `a.b`, `from .b import c`).
fn imports_module(l: &str, module: &str, parent: &str, short: &str, file_module: &str) -> bool {
    let l = l.split('#').next().unwrap_or(l).trim();
    if let Some(rest) = l.strip_prefix("import ") {
        return rest
            .split(',')
            .any(|w| w.split_whitespace().next() == Some(module));
    }
    let Some(rest) = l.strip_prefix("from ") else {
        return false;
    };
    let Some((from, names)) = rest.split_once(" import ") else {
        return false;
    };
    let names_short = names
        .trim_matches(|c| c == '(' || c == ')' || c == ' ')
        .split(',')
        .any(|n| n.split_whitespace().next() == Some(short));
    let from = from.trim();
    if from == module || from.starts_with(&format!("{module}.")) {
        return true;
    }
    if !names_short {
        return false;
    }
    if !from.starts_with('.') {
        return from == parent;
    }
    // A relative import: dots climb from the file's package (`a.b.mod` -> package `a.b`).
    let dots = from.chars().take_while(|c| *c == '.').count();
    let mut base: Vec<&str> = file_module.split('.').collect();
    // The file's own package: `a.b` of `a.b.mod` and of `a.b.__init__` alike.
    base.pop();
    for _ in 1..dots {
        base.pop();
    }
    let tail = &from[dots..];
    let resolved = if tail.is_empty() {
        base.join(".")
    } else {
        format!("{}.{tail}", base.join("."))
    };
    resolved == parent
}

/// The condition of the blocks enclosing line `i` (by indentation), the innermost first:
/// `try:`, `with ... suppress(`, `if`/`elif`/`else`, `def`.
fn enclosing_condition(lines: &[&str], i: usize) -> Option<LoadCondition> {
    let indent = |s: &str| s.len() - s.trim_start().len();
    let mut level = indent(lines[i]);
    if level == 0 {
        return None;
    }
    let mut found: Option<LoadCondition> = None;
    for (j, l) in lines[..i].iter().enumerate().rev() {
        let t = l.trim();
        // Comments, and the closing line of a bracket opened above (a `def f(` whose
        // parameters span lines ends with `) -> T:` at the def's own indentation).
        if t.is_empty() || t.starts_with('#') || t.starts_with([')', ']', '}']) {
            continue;
        }
        let n = indent(l);
        if n >= level {
            continue;
        }
        level = n;
        let how = if t.starts_with("try:") {
            // `except ImportError: raise ...` fails the same: no condition at this level.
            (!handler_raises(lines, j, n)).then_some(LoadCondition::TryImport)
        } else if t.starts_with("with ") && t.contains("suppress(") {
            Some(LoadCondition::SuppressedImport)
        } else if t.starts_with("if ") || t.starts_with("elif ") || t.starts_with("else") {
            Some(LoadCondition::UnderCondition)
        } else if t.starts_with("def ") || t.starts_with("async def ") {
            Some(LoadCondition::OnUse)
        } else {
            None
        };
        // try/suppress say the most: the package expects the import to fail.
        match (found, how) {
            (_, Some(h @ (LoadCondition::TryImport | LoadCondition::SuppressedImport))) => {
                return Some(h)
            }
            (None, Some(h)) => found = Some(h),
            _ => {}
        }
        if level == 0 {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shapes_of_vllms_dispatch() {
        // vllm/v1/attention/ops/flashmla.py (vLLM 0.33.0).
        let flashmla = "from vllm.platforms import current_platform\n\nif current_platform.is_cuda():\n    try:\n        import vllm._flashmla_C  # noqa: F401\n\n        _flashmla_C_AVAILABLE = True\n    except ImportError:\n        _flashmla_C_AVAILABLE = False\n";
        assert_eq!(
            imports_of(
                flashmla,
                "vllm._flashmla_C",
                "vllm.v1.attention.ops.flashmla"
            ),
            vec![(5, Some(LoadCondition::TryImport))]
        );
        // vllm/vllm_flash_attn/flash_attn_interface.py: a relative import.
        let fa = "try:\n    from . import _vllm_fa3_C  # type: ignore[attr-defined]  # noqa: F401\n\n    FA3_AVAILABLE = True\nexcept ImportError as e:\n    FA3_AVAILABLE = False\n";
        assert_eq!(
            imports_of(
                fa,
                "vllm.vllm_flash_attn._vllm_fa3_C",
                "vllm.vllm_flash_attn.flash_attn_interface"
            ),
            vec![(2, Some(LoadCondition::TryImport))]
        );
        // vllm/platforms/cuda.py: the core module at the top, the optional one suppressed.
        let cuda = "import vllm._C_stable_libtorch  # noqa\n\nwith contextlib.suppress(ImportError):\n    import vllm._qutlass_C  # noqa\n";
        assert_eq!(
            imports_of(cuda, "vllm._C_stable_libtorch", "vllm.platforms.cuda"),
            vec![(1, None)]
        );
        assert_eq!(
            imports_of(cuda, "vllm._qutlass_C", "vllm.platforms.cuda"),
            vec![(4, Some(LoadCondition::SuppressedImport))]
        );
        let probe = "    return importlib.util.find_spec(\"vllm._deepselect_C\") is not None\n";
        assert_eq!(
            imports_of(probe, "vllm._deepselect_C", "vllm.x"),
            vec![(1, Some(LoadCondition::FindSpec))]
        );
        let lazy = "def forward(x):\n    import vllm._flashkda_C  # noqa: F401\n    return x\n";
        assert_eq!(
            imports_of(lazy, "vllm._flashkda_C", "vllm.models.kda"),
            vec![(2, Some(LoadCondition::OnUse))]
        );
        // vllm/models/kimi_k3/nvidia/kda.py: inside a def whose signature spans lines.
        let sig = "def fwd(\n    q: torch.Tensor,\n) -> tuple[torch.Tensor, torch.Tensor]:\n    import vllm._flashkda_C  # noqa: F401\n";
        assert_eq!(
            imports_of(sig, "vllm._flashkda_C", "vllm.models.kda"),
            vec![(4, Some(LoadCondition::OnUse))]
        );
        // sgl_kernel/flash_attn.py: a failure raised again is no optional import.
        let reraise = "try:\n    from sgl_kernel import flash_ops\nexcept:\n    raise ImportError(\n        \"Can not import FA3\"\n    )\n";
        assert_eq!(
            imports_of(reraise, "sgl_kernel.flash_ops", "sgl_kernel.flash_attn"),
            vec![(2, None)]
        );
        // sglang's flash_mla_interface.py: the package itself.
        assert_eq!(
            imports_of(
                "from flash_mla import fused as _mega\n",
                "flash_mla",
                "sglang.k.fmi"
            ),
            vec![(1, None)]
        );
        // A name that only starts like the module is not an import of it.
        assert!(imports_of(
            "import vllm._flashmla_C_ext\n",
            "vllm._flashmla_C",
            "vllm.a"
        )
        .is_empty());
    }

    #[test]
    fn one_search_for_what_every_name_contains() {
        assert_eq!(
            common_substring(&["_flashmla_C", "_vllm_fa3_C", "_qutlass_C"]),
            "_C"
        );
        assert_eq!(common_substring(&["_hopper_C"]), "_hopper_C");
        assert_eq!(common_substring(&["ab", "cd"]), "");
    }

    #[test]
    fn only_architecture_specific_code_is_looked_up() {
        let lib = |sass: &[&str], ptx: &[&str]| LibraryImages {
            sass: sass.iter().map(|s| s.to_string()).collect(),
            ptx: ptx.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        assert!(architecture_specific(&lib(&["sm_90a", "sm_100f"], &[])));
        assert!(!architecture_specific(&lib(&["sm_80", "sm_90a"], &[])));
        assert!(!architecture_specific(&lib(&["sm_90a"], &["compute_90a"])));
        assert!(!architecture_specific(&lib(&[], &[])));
    }

    #[test]
    fn plugins_inside_a_package_are_optional() {
        let spm = "/v/lib/python3.11/site-packages".to_string();
        let envs = vec![PythonEnv {
            site_packages: vec![spm.clone()],
            ..Default::default()
        }];
        // NIXL 1.5.1's files (sm_90 and newer only); a package's own library is no plugin.
        let lib = |rest: &str| LibraryImages {
            path: format!("{spm}/{rest}"),
            sass: vec!["sm_90".into(), "sm_120".into()],
            ..Default::default()
        };
        let mut images = KernelImages {
            libraries: vec![
                lib("nixl_cu13.libs/nixl/libplugin_GPUNETIO.so"),
                lib(".nixl_cu13.mesonpy.libs/plugins/libplugin_GPUNETIO.so"),
                lib("nixl_cu13.libs/libnixl.so"),
                lib("transformer_engine/wheel_lib/libnccl_ep.so"),
                lib("transformer_engine/wheel_lib/libtransformer_engine.so"),
            ],
            ..Default::default()
        };
        images.libraries.push(LibraryImages {
            path: "/usr/lib/plugins/libplugin_x.so".into(),
            sass: vec!["sm_90".into()],
            ..Default::default()
        });
        mark_plugins(&envs, &mut images);
        let c = images.libraries[0].loaded_if.as_ref().unwrap();
        assert_eq!(c.how, LoadCondition::Plugin);
        assert_eq!(c.module, "libplugin_GPUNETIO.so");
        assert_eq!(c.at, "nixl_cu13.libs/nixl/libplugin_GPUNETIO.so");
        assert!(images.libraries[1].loaded_if.is_some());
        assert_eq!(images.libraries[2].loaded_if, None);
        // Transformer Engine's NCCL EP library: opened on use; its core library is no plugin.
        assert!(images.libraries[3].loaded_if.is_some());
        assert_eq!(images.libraries[4].loaded_if, None);
        // Outside every environment: not a package's plugin.
        assert_eq!(images.libraries[5].loaded_if, None);
    }

    #[test]
    fn modules_behind_a_capability_check_of_their_package_are_optional() {
        let spm = "/v/lib/python3.11/site-packages".to_string();
        let envs = vec![PythonEnv {
            site_packages: vec![spm.clone()],
            ..Default::default()
        }];
        // sglang-kernel 0.4.10's files, as cuobjdump lists them.
        let lib = |rest: &str, sass: &[&str]| LibraryImages {
            path: format!("{spm}/{rest}"),
            sass: sass.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let mut images = KernelImages {
            libraries: vec![
                lib(
                    "sgl_kernel/flash_ops.abi3.so",
                    &["sm_80", "sm_86", "sm_90a"],
                ),
                lib(
                    "sgl_kernel/sm90/common_ops.abi3.so",
                    &["sm_80", "sm_90", "sm_120a"],
                ),
            ],
            ..Default::default()
        };
        mark_plugins(&envs, &mut images);
        let c = images.libraries[0].loaded_if.as_ref().unwrap();
        assert_eq!(c.module, "sgl_kernel.flash_ops");
        assert_eq!(c.how, LoadCondition::UnderCondition);
        assert!(c.at.contains("is_fa3_supported"));
        assert_eq!(images.libraries[1].loaded_if, None);
    }

    #[test]
    fn optional_modules_of_a_package_tree() {
        let dir = tempfile::tempdir().unwrap();
        let sp = dir.path().join("lib/python3.12/site-packages");
        std::fs::create_dir_all(sp.join("eng/ops")).unwrap();
        std::fs::write(sp.join("eng/__init__.py"), "import eng._C\n").unwrap();
        std::fs::write(
            sp.join("eng/ops/attn.py"),
            "try:\n    import eng._hopper_C\nexcept ImportError:\n    pass\ntry:\n    import eng._C\nexcept ImportError:\n    pass\n",
        )
        .unwrap();
        let host = Host::rooted(
            dir.path().to_path_buf(),
            Default::default(),
            std::time::Duration::from_secs(5),
        );
        let spm = "/lib/python3.12/site-packages".to_string();
        let envs = vec![PythonEnv {
            site_packages: vec![spm.clone()],
            ..Default::default()
        }];
        let lib = |name: &str| LibraryImages {
            path: format!("{spm}/eng/{name}.abi3.so"),
            sass: vec!["sm_90a".into()],
            ..Default::default()
        };
        let mut images = KernelImages {
            libraries: vec![lib("_hopper_C"), lib("_C")],
            ..Default::default()
        };
        mark_optional(&host, &envs, &mut images);
        let c = images.libraries[0].loaded_if.as_ref().unwrap();
        assert_eq!(c.module, "eng._hopper_C");
        assert_eq!(c.how, LoadCondition::TryImport);
        assert_eq!(c.at, "eng/ops/attn.py:2");
        // Imported at the top of the package's __init__: a core module.
        assert_eq!(images.libraries[1].loaded_if, None);
    }

    #[test]
    fn a_module_for_many_gpus_is_optional_only_where_every_import_expects_failure() {
        let dir = tempfile::tempdir().unwrap();
        let sp = dir.path().join("lib/python3.12/site-packages");
        std::fs::create_dir_all(sp.join("eng/platforms")).unwrap();
        std::fs::write(
            sp.join("eng/attn.py"),
            "try:\n    from . import _fa3_C\nexcept ImportError:\n    pass\ntry:\n    from . import _fa2_C\nexcept ImportError:\n    pass\n",
        )
        .unwrap();
        // The core module: at the top of a platform module, and in a try elsewhere.
        std::fs::write(
            sp.join("eng/platforms/cuda.py"),
            "import eng._core_C\ndef load():\n    try:\n        import eng._core_C\n    except ImportError:\n        pass\n",
        )
        .unwrap();
        let host = Host::rooted(
            dir.path().to_path_buf(),
            Default::default(),
            std::time::Duration::from_secs(5),
        );
        let spm = "/lib/python3.12/site-packages".to_string();
        let envs = vec![PythonEnv {
            site_packages: vec![spm.clone()],
            ..Default::default()
        }];
        let lib = |name: &str, sass: &[&str], ptx: &[&str]| LibraryImages {
            path: format!("{spm}/eng/{name}.abi3.so"),
            sass: sass.iter().map(|s| s.to_string()).collect(),
            ptx: ptx.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let mut images = KernelImages {
            libraries: vec![
                lib("_fa3_C", &["sm_90a"], &[]),
                lib("_fa2_C", &["sm_80"], &["compute_80"]),
                lib("_core_C", &["sm_80"], &["compute_80"]),
            ],
            ..Default::default()
        };
        mark_optional(&host, &envs, &mut images);
        assert!(images.libraries[0].loaded_if.is_some());
        assert_eq!(
            images.libraries[1].loaded_if.as_ref().map(|c| c.how),
            Some(LoadCondition::TryImport)
        );
        assert_eq!(images.libraries[2].loaded_if, None);
    }

    #[test]
    fn a_package_another_imports_only_in_a_backend_module() {
        // sgl-flash-mla: `flash_mla/__init__.py` loads `flash_mla.cuda` (sm_100a only); SGLang
        // imports `flash_mla` at the top of one backend's module, which `import sglang` does
        // not load.
        let dir = tempfile::tempdir().unwrap();
        let sp = dir.path().join("lib/python3.12/site-packages");
        std::fs::create_dir_all(sp.join("flash_mla")).unwrap();
        std::fs::create_dir_all(sp.join("sglang/kernels")).unwrap();
        std::fs::write(sp.join("flash_mla/__init__.py"), "import flash_mla.cuda\n").unwrap();
        std::fs::write(sp.join("sglang/__init__.py"), "from sglang.lang import x\n").unwrap();
        std::fs::write(sp.join("sglang/kernels/fmi.py"), "import flash_mla\n").unwrap();
        let host = Host::rooted(
            dir.path().to_path_buf(),
            Default::default(),
            std::time::Duration::from_secs(5),
        );
        let spm = "/lib/python3.12/site-packages".to_string();
        let envs = vec![PythonEnv {
            site_packages: vec![spm.clone()],
            packages: vec![cudoctor_snapshot::Package {
                name: "sglang".into(),
                version: "0.5.23".into(),
                location: spm.clone(),
            }],
            ..Default::default()
        }];
        let mut images = KernelImages {
            libraries: vec![LibraryImages {
                path: format!("{spm}/flash_mla/cuda.abi3.so"),
                sass: vec!["sm_100a".into()],
                ..Default::default()
            }],
            ..Default::default()
        };
        mark_optional(&host, &envs, &mut images);
        let c = images.libraries[0].loaded_if.as_ref().unwrap();
        assert_eq!(c.how, LoadCondition::BySubmodule);
        assert_eq!(c.at, "sglang/kernels/fmi.py:1");
        // Imported by sglang's own __init__: a core dependency.
        std::fs::write(sp.join("sglang/__init__.py"), "import flash_mla\n").unwrap();
        images.libraries[0].loaded_if = None;
        mark_optional(&host, &envs, &mut images);
        assert_eq!(images.libraries[0].loaded_if, None);
    }
}
