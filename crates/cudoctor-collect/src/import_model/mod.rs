//! The libraries a real `import torch, torchvision, torchaudio` maps, and those opened later
//! when a feature is first used, emulated without running Python: glibc's loader
//! (cudoctor-ldso) driven the way the installed packages' own Python code drives it.
//!
//! Order of one process:
//! 1. the interpreter;
//! 2. `torch/__init__.py`: `libtorch_global_deps.so` with RTLD_GLOBAL, then the preloading of
//!    the nvidia wheels' libraries by full path that the installed release performs
//!    ([`torch_init`]) — those copies win every later lookup of their soname;
//! 3. `from torch._C import *`;
//! 4. each companion's import, as `package_loads.toml` records it (torchvision's `_C` and
//!    `image`, torchaudio's `libtorchaudio` and `_torchaudio`), and every other extension that
//!    links torch;
//! 5. the later stages of a workload ([`LoadStage`]), each in turn: the libraries that loaded
//!    libraries dlopen() by soname themselves (`library_opens`: libcuda from cuBLASLt at
//!    import when a driver is installed, NVML at CUDA init, cuDNN 9's graph, engine and
//!    heuristic libraries and the driver's PTX JIT at the first convolution), Triton at the
//!    first torch.compile unless an import already brought it, and what is opened only on
//!    demand (torchaudio's sox backend, cuDNN's legacy-API libraries).

pub mod torch_init;

use std::sync::OnceLock;

use cudoctor_ldso::{LoadOptions, Process, ProcessEnv, SymbolCheck};
use cudoctor_snapshot::{LoadStage, OpenedBy, Opener, PythonEnv, RuntimeDir, TorchBuild};
use serde::Deserialize;

use crate::host::Host;

/// The package_loads.toml table.
#[derive(Debug, Deserialize)]
struct PackageLoads {
    #[serde(default)]
    package: Vec<PackageRow>,
    #[serde(default)]
    library_opens: Vec<LibraryOpensRow>,
}

#[derive(Debug, Deserialize)]
struct PackageRow {
    name: String,
    import: Vec<String>,
    on_demand: Vec<String>,
    optional_needed: Vec<String>,
    /// When the `import` files are opened, if not at import.
    #[serde(default)]
    stage: Option<LoadStage>,
    /// Packages whose own import imports this one (then it is at import after all).
    #[serde(default)]
    imported_at_import_by: Vec<String>,
    #[allow(dead_code)]
    source: String,
}

#[derive(Debug, Deserialize)]
struct LibraryOpensRow {
    library: String,
    opens: Vec<String>,
    stage: LoadStage,
    /// A library of the NVIDIA driver: present only where a driver is installed.
    #[serde(default)]
    #[cfg_attr(not(test), allow(dead_code))]
    driver: bool,
    #[serde(default)]
    conditional: bool,
    #[cfg_attr(not(test), allow(dead_code))]
    established: Established,
    #[allow(dead_code)]
    source: String,
}

/// How a row of the table was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(not(test), allow(dead_code))]
enum Established {
    /// A real process's /proc/self/maps or LD_DEBUG=libs.
    Observation,
    /// The sonames the caller's own file holds.
    Strings,
    Documentation,
}

fn table() -> &'static PackageLoads {
    static TABLE: OnceLock<PackageLoads> = OnceLock::new();
    TABLE.get_or_init(|| {
        toml::from_str(include_str!("../../data/package_loads.toml"))
            .expect("package_loads.toml is valid (tested)")
    })
}

/// One object the emulation asked the loader for, with when and by whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// A path, or a soname for a library's own dlopen().
    pub target: String,
    pub stage: LoadStage,
    pub opened_by: OpenedBy,
    pub symbols: bool,
    /// For a library's dlopen(): the loaded object whose code opens it.
    pub caller: Option<String>,
}

/// The outcome of emulating one environment's process.
pub struct Emulated {
    pub process: Process,
    /// Every object the steps brought in (by path as loaded), with the step that brought it.
    pub brought_in: Vec<(String, LoadStage, OpenedBy)>,
    /// Steps whose target could not be loaded.
    pub errors: Vec<String>,
    /// What was not modelled, said plainly (an `__init__.py` this reader does not know).
    pub notes: Vec<String>,
    /// Directories later stages load generated code from (Triton's kernel cache).
    pub runtime_dirs: Vec<RuntimeDir>,
    /// Whether the steps that ask for it have their symbols checked ([`Symbols`]).
    symbols: Symbols,
    /// The machine whose deadline ends the steps, and the environment they load for: a step
    /// not begun by then is not run, and the emulation is said to have stopped early.
    host: Host,
    place: String,
}

/// Whether an emulation checks symbols. Which libraries load never depends on it (a step fails
/// on a missing library, not on a missing symbol), so an emulation run only to see where the
/// libraries come from skips the symbol tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symbols {
    Checked,
    Skipped,
}

/// True for a soname that `package` documents as an optional system library.
pub fn optional_needed(package: &str, soname: &str) -> bool {
    table()
        .package
        .iter()
        .filter(|p| p.name == package)
        .flat_map(|p| &p.optional_needed)
        .any(|pat| torch_init::glob_match(pat, soname))
}

/// Emulates `import torch` and its companions/extensions in `env`'s process.
/// `extensions`: compiled libraries of other packages that link torch, as (path, package),
/// asked for when their step comes (after torch's own libraries).
pub fn emulate<'e>(
    host: &Host,
    env: &PythonEnv,
    process_env: ProcessEnv,
    extensions: &(dyn Fn() -> &'e [(String, Option<String>)] + Sync),
    symbols: Symbols,
) -> Option<Emulated> {
    let torch = env.torch.as_ref()?;
    let mut run = Emulated {
        process: Process::new(process_env),
        brought_in: Vec::new(),
        errors: Vec::new(),
        notes: Vec::new(),
        runtime_dirs: Vec::new(),
        symbols,
        host: host.clone(),
        place: env.prefix.clone(),
    };
    load_interpreter(&mut run, env);
    load_global_deps_and_preloads(host, &mut run, env, torch);
    load_torch_c(host, &mut run, torch);
    let later = load_companions(host, &mut run, env, torch);
    load_extensions(&mut run, torch, extensions());
    for stage in LoadStage::ALL {
        for s in later.iter().filter(|s| s.stage == stage) {
            run_step(&mut run, s, false);
        }
        for row in table().library_opens.iter().filter(|r| r.stage == stage) {
            library_opens(&mut run, row);
        }
    }
    Some(run)
}

/// Step 1: the interpreter, whose own exports (Py*) satisfy extensions' Python symbols.
fn load_interpreter(run: &mut Emulated, env: &PythonEnv) {
    let Some(python) = &env.interpreter else {
        return;
    };
    if let Ok(objs) = run.process.load_executable(python, LoadOptions::default()) {
        for o in objs {
            run.brought_in.push((
                o.path,
                LoadStage::Import,
                opened(Opener::Interpreter, "python", false),
            ));
        }
    }
}

/// Step 2: `torch/__init__.py`'s `libtorch_global_deps.so` with RTLD_GLOBAL, and the
/// preloading of the nvidia wheels' libraries the installed release performs after it (or,
/// when it fails to load, before loading it again).
fn load_global_deps_and_preloads(
    host: &Host,
    run: &mut Emulated,
    env: &PythonEnv,
    torch: &TorchBuild,
) {
    let global_deps = format!("{}/lib/libtorch_global_deps.so", torch.path);
    let preload = host
        .read_text(&format!("{}/__init__.py", torch.path))
        .ok()
        .and_then(|t| torch_init::parse(&t));
    if preload.is_none() {
        run.notes.push(format!(
            "{}/__init__.py: its preloading of CUDA libraries is not recognised; only the ELF dependencies are followed",
            torch.path
        ));
    }
    let search = sys_path(host, env);
    let cuda_major = torch
        .cuda
        .as_deref()
        .and_then(|c| c.split('.').next())
        .map(str::to_string);
    if !host.is_file(&global_deps) {
        return;
    }
    let step = step(&global_deps, Opener::TorchGlobalDeps, "torch");
    let failed = run_step(run, &step, true);
    let Some(p) = &preload else {
        return;
    };
    if failed {
        // torch's OSError branch: preload everything, then try again.
        preload_libs(host, run, p, &p.on_failure, &search, cuda_major.as_deref());
        run_step(run, &step, false);
    } else {
        let holds = p.condition.as_deref().is_none_or(|needle| {
            run.brought_in
                .iter()
                .any(|(path, ..)| maps_path(&run.process, path).is_some_and(|m| m.contains(needle)))
        });
        if holds {
            preload_libs(
                host,
                run,
                p,
                &p.after_global_deps,
                &search,
                cuda_major.as_deref(),
            );
        }
    }
}

/// Step 3: `from torch._C import *`.
fn load_torch_c(host: &Host, run: &mut Emulated, torch: &TorchBuild) {
    for name in sorted(host.list_dir(&torch.path)) {
        if name.starts_with("_C") && name.ends_with(".so") {
            let s = step(
                &format!("{}/{name}", torch.path),
                Opener::PythonImport,
                "torch",
            );
            run_step(run, &s, false);
        }
    }
}

/// Step 4, the companions of `package_loads.toml`: the files each imports, loaded now, and
/// the steps of the later stages (files opened when a feature is used), returned to be run
/// stage by stage once the import is complete.
fn load_companions(
    host: &Host,
    run: &mut Emulated,
    env: &PythonEnv,
    torch: &TorchBuild,
) -> Vec<Step> {
    let mut later: Vec<Step> = Vec::new();
    let installed = |name: &str| package_dir(host, env, name).is_some();
    for row in &table().package {
        let Some(dir) = package_dir(host, env, &row.name) else {
            continue;
        };
        let import_stage = match row.stage {
            Some(s) if !row.imported_at_import_by.iter().any(|p| installed(p)) => s,
            _ => LoadStage::Import,
        };
        for s in package_steps(host, &dir, row, import_stage) {
            if s.stage.is_import() {
                run_step(run, &s, false);
            } else {
                later.push(s);
            }
        }
        if row.name == "triton" {
            run.runtime_dirs.push(triton_cache(host, &torch.path));
        }
    }
    later
}

/// The steps of one package row, in order: the files its `import` patterns name, at
/// `import_stage`; then the rest, named or not, only when used (named ones in the table's
/// order first).
fn package_steps(host: &Host, dir: &str, row: &PackageRow, import_stage: LoadStage) -> Vec<Step> {
    let files = compiled_files(host, dir, row);
    let mut steps: Vec<Step> = Vec::new();
    let mut taken: Vec<String> = Vec::new();
    for pat in &row.import {
        let hits: Vec<&String> = files
            .iter()
            .filter(|f| path_glob(pat, f) && !taken.contains(f))
            .collect();
        for f in hits {
            taken.push(f.clone());
            let mut s = step(&format!("{dir}/{f}"), Opener::PackageLoader, &row.name);
            s.symbols = true;
            s.stage = import_stage;
            steps.push(s);
        }
    }
    let mut rest: Vec<&String> = Vec::new();
    for pat in &row.on_demand {
        rest.extend(
            files
                .iter()
                .filter(|f| path_glob(pat, f) && !taken.contains(f)),
        );
    }
    rest.extend(files.iter().filter(|f| !taken.contains(f)));
    for f in rest {
        if taken.contains(f) {
            continue;
        }
        taken.push(f.clone());
        let mut s = step(&format!("{dir}/{f}"), Opener::PackageLoader, &row.name);
        s.stage = LoadStage::OnDemand;
        s.symbols = true;
        steps.push(s);
    }
    steps
}

/// Step 4, the rest: every other package's extension that links torch (those of a package
/// the table lists were loaded as its rows say).
fn load_extensions(
    run: &mut Emulated,
    torch: &TorchBuild,
    extensions: &[(String, Option<String>)],
) {
    for (path, package) in extensions {
        let listed = package
            .as_deref()
            .is_some_and(|p| table().package.iter().any(|r| r.name == p));
        if listed || torch.owns(path) {
            continue;
        }
        let mut s = step(
            path,
            Opener::PythonImport,
            package.as_deref().unwrap_or("?"),
        );
        s.symbols = true;
        run_step(run, &s, false);
    }
}

fn opened(opener: Opener, by: &str, optional: bool) -> OpenedBy {
    OpenedBy {
        opener,
        by: by.to_string(),
        optional,
        conditional: false,
        nvidia_folder: None,
    }
}

/// One `library_opens` row: the caller, when in the process, dlopen()s each name with its own
/// link map. A driver library that is not installed is simply not there (no driver, no
/// prediction); a missing library of another kind fails that operation only, not the import.
fn library_opens(run: &mut Emulated, row: &LibraryOpensRow) {
    let caller = run
        .process
        .reports()
        .find(|o| {
            o.soname.as_deref() == Some(row.library.as_str())
                || o.path.rsplit('/').next() == Some(row.library.as_str())
        })
        .map(|o| o.path.clone());
    let Some(caller) = caller else { return };
    for name in &row.opens {
        let mut by = opened(Opener::LibraryDlopen, &row.library, false);
        by.conditional = row.conditional;
        let s = Step {
            target: name.clone(),
            stage: row.stage,
            opened_by: by,
            symbols: false,
            caller: Some(caller.clone()),
        };
        run_step(run, &s, true);
    }
}

/// Where Triton keeps the kernels torch.compile generates and loads: TRITON_CACHE_DIR, else
/// inductor's cache directory (TORCHINDUCTOR_CACHE_DIR, else `<tmp>/torchinductor_<user>`)
/// plus `triton/<device>` (torch/_inductor/runtime/cache_dir_utils.py), else, for a torch
/// without that file, Triton's own `~/.triton/cache`.
fn triton_cache(host: &Host, torch_dir: &str) -> RuntimeDir {
    let (path, what) = if let Some(d) = host.var("TRITON_CACHE_DIR").filter(|v| !v.is_empty()) {
        (d.to_string(), "TRITON_CACHE_DIR")
    } else if host.is_file(&format!("{torch_dir}/_inductor/runtime/cache_dir_utils.py")) {
        let base = match host
            .var("TORCHINDUCTOR_CACHE_DIR")
            .filter(|v| !v.is_empty())
        {
            Some(d) => d.to_string(),
            None => format!(
                "{}/torchinductor_{}",
                host.var("TMPDIR")
                    .filter(|v| !v.is_empty())
                    .unwrap_or("/tmp")
                    .trim_end_matches('/'),
                host.var("USER").or(host.var("LOGNAME")).unwrap_or("<user>")
            ),
        };
        (
            format!("{base}/triton/<device>"),
            "torch inductor's cache directory",
        )
    } else {
        (
            format!("{}/.triton/cache", host.var("HOME").unwrap_or("~")),
            "Triton's default",
        )
    };
    RuntimeDir {
        stage: LoadStage::Compile,
        path,
        what: format!("compiled Triton kernels (chosen by {what})"),
    }
}

fn step(path: &str, opener: Opener, by: &str) -> Step {
    Step {
        target: path.to_string(),
        stage: LoadStage::Import,
        opened_by: opened(opener, by, false),
        symbols: false,
        caller: None,
    }
}

/// Runs one step; true when its target, or something it needs, could not be loaded.
fn run_step(run: &mut Emulated, step: &Step, quiet: bool) -> bool {
    // Past the command's deadline no step begins (each one alone is bounded by the loader's
    // caps on NEEDED and search directories). Not run is not failed: nothing is reported missing.
    if run
        .host
        .out_of_time(cudoctor_snapshot::ScanKind::Loader, &run.place)
    {
        return false;
    }
    let opts = LoadOptions::check_symbols(if step.symbols && run.symbols == Symbols::Checked {
        SymbolCheck::Requested
    } else {
        SymbolCheck::None
    });
    let result = match &step.caller {
        Some(caller) => match run.process.dlopen_from(caller, &step.target, opts) {
            Some(r) => r,
            None => return true,
        },
        None => run.process.load(&step.target, opts),
    };
    match result {
        Ok(objs) => {
            let mut failed = false;
            for o in objs {
                failed |= o.missing().next().is_some();
                if !run.brought_in.iter().any(|(p, ..)| *p == o.path) {
                    run.brought_in
                        .push((o.path, step.stage, step.opened_by.clone()));
                }
            }
            failed
        }
        Err(e) => {
            // A library's own dlopen() of an absent sub-library fails at that operation only;
            // it is recorded on the process as missing by the caller's report.
            if !quiet && step.caller.is_none() {
                run.errors.push(format!("{}: {e}", step.target));
            }
            true
        }
    }
}

/// torch's `_preload_cuda_lib`: the first `sys.path` entry with a match wins, loaded by path.
fn preload_libs(
    host: &Host,
    run: &mut Emulated,
    preload: &torch_init::TorchPreload,
    libs: &[torch_init::PreloadLib],
    search: &[String],
    cuda_major: Option<&str>,
) {
    for lib in libs {
        let hit = search.iter().find_map(|entry| {
            // (directory, the nvidia wheel folder it is)
            let mut dirs = vec![(
                format!("{entry}/nvidia/{}/lib", lib.folder),
                Some(lib.folder.clone()),
            )];
            if preload.searches_cu_major_dir {
                if let Some(m) = cuda_major {
                    dirs.push((format!("{entry}/nvidia/cu{m}/lib"), Some(format!("cu{m}"))));
                }
            }
            if preload.searches_bare_folder {
                dirs.push((format!("{entry}/{}/lib", lib.folder), None));
            }
            dirs.into_iter().find_map(|(d, folder)| {
                sorted(host.list_dir(&d))
                    .into_iter()
                    .find(|n| torch_init::glob_match(&lib.pattern, n))
                    .map(|n| (format!("{d}/{n}"), folder))
            })
        });
        if let Some((path, folder)) = hit {
            let mut s = step(&path, Opener::TorchPreload, "torch");
            s.opened_by.nvidia_folder = folder;
            run_step(run, &s, true);
        }
    }
}

/// The path `/proc/self/maps` shows for a loaded object: its real path.
fn maps_path(process: &Process, path: &str) -> Option<String> {
    process
        .reports()
        .find(|o| o.path == path)
        .map(|o| o.real_path.clone().unwrap_or_else(|| o.path.clone()))
}

/// `sys.path` as far as it holds packages: the site directories, PYTHONPATH's entries and
/// `.pth` additions included, in the interpreter's order.
pub fn sys_path(_host: &Host, env: &PythonEnv) -> Vec<String> {
    env.site_packages.clone()
}

/// The directory of an importable package: where `import NAME` finds it (the first of a
/// namespace package's portions).
fn package_dir(host: &Host, env: &PythonEnv, name: &str) -> Option<String> {
    let search = sys_path(host, env);
    let origin =
        crate::python::site::import_origin(host, &search, name, env.python_version.as_deref());
    origin
        .first()
        .map(|&i| format!("{}/{name}", search[i]))
        .filter(|d| host.is_dir(d))
}

/// Compiled files of a package (top level, `lib/` and the directories its row names),
/// relative to its directory, sorted.
fn compiled_files(host: &Host, dir: &str, row: &PackageRow) -> Vec<String> {
    let mut subs: Vec<String> = vec![String::new(), "lib/".into()];
    for pat in row.import.iter().chain(&row.on_demand) {
        if let Some((d, _)) = pat.rsplit_once('/') {
            let d = format!("{d}/");
            if !subs.contains(&d) {
                subs.push(d);
            }
        }
    }
    let mut out = Vec::new();
    for sub in subs {
        for name in sorted(host.list_dir(&format!("{dir}/{sub}"))) {
            if name.ends_with(".so") {
                out.push(format!("{sub}{name}"));
            }
        }
    }
    out
}

/// A pattern with an optional directory part, matched component by component.
fn path_glob(pattern: &str, path: &str) -> bool {
    let (pd, pn) = pattern.rsplit_once('/').unwrap_or(("", pattern));
    let (fd, fname) = path.rsplit_once('/').unwrap_or(("", path));
    pd == fd && torch_init::glob_match(pn, fname)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_step_of_the_emulation_begins_past_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("v/site-packages/torch/lib");
        std::fs::create_dir_all(&lib).unwrap();
        // Not an ELF file: the step that imports it fails, said as an error.
        std::fs::write(lib.join("../_C.cpython-312-x86_64-linux-gnu.so"), "not elf").unwrap();
        let env = PythonEnv {
            prefix: "/v".into(),
            site_packages: vec!["/v/site-packages".into()],
            torch: Some(cudoctor_snapshot::TorchBuild {
                version: "2.5.0".into(),
                path: "/v/site-packages/torch".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let host = Host::rooted(
            dir.path().to_path_buf(),
            Default::default(),
            std::time::Duration::from_secs(2),
        );
        let none: Vec<(String, Option<String>)> = Vec::new();
        let run = |host: &Host| {
            emulate(
                host,
                &env,
                ProcessEnv::new(dir.path()),
                &|| none.as_slice(),
                Symbols::Checked,
            )
            .unwrap()
        };
        assert!(!run(&host).errors.is_empty());
        let late = host.with_deadline(cudoctor_types::Deadline::after(std::time::Duration::ZERO));
        assert!(run(&late).errors.is_empty());
        assert!(late
            .stopped_early()
            .iter()
            .any(|s| s.scan == cudoctor_snapshot::ScanKind::Loader && s.place == "/v"));
    }

    #[test]
    fn the_table_parses_and_every_row_has_a_source() {
        let t = table();
        assert!(t.package.iter().any(|p| p.name == "torchaudio"));
        assert!(t.package.iter().all(|p| !p.source.is_empty()));
        assert!(t.library_opens.iter().all(|r| !r.source.is_empty()));
    }

    #[test]
    fn driver_libraries_are_predicted_from_observation_only() {
        let rows: Vec<&LibraryOpensRow> =
            table().library_opens.iter().filter(|r| r.driver).collect();
        assert!(rows.len() >= 3);
        assert!(rows
            .iter()
            .all(|r| r.established == Established::Observation && r.source.contains("H200")));
    }

    #[test]
    fn cudnn_sub_libraries_are_opened_by_the_library_that_names_them() {
        let opener = |soname: &str| {
            table()
                .library_opens
                .iter()
                .find(|r| r.opens.iter().any(|o| o == soname))
                .map(|r| (r.library.as_str(), r.stage))
        };
        assert_eq!(
            opener("libcudnn_graph.so.9"),
            Some(("libcudnn.so.9", LoadStage::FirstConvolution))
        );
        assert_eq!(
            opener("libcudnn_engines_precompiled.so.9"),
            Some(("libcudnn_graph.so.9", LoadStage::FirstConvolution))
        );
        assert_eq!(
            opener("libcudnn_ops.so.9").map(|o| o.1),
            Some(LoadStage::OnDemand)
        );
        assert_eq!(
            opener("libnvidia-ml.so.1").map(|o| o.1),
            Some(LoadStage::CudaInit)
        );
    }

    #[test]
    fn sox_is_optional_for_torchaudio_only() {
        assert!(optional_needed("torchaudio", "libsox.so"));
        assert!(!optional_needed("torchvision", "libsox.so"));
        assert!(!optional_needed("torchaudio", "libcudart.so.12"));
    }

    #[test]
    fn patterns_match_within_their_directory() {
        assert!(path_glob(
            "lib/_torchaudio.*.so",
            "lib/_torchaudio.cpython-311.so"
        ));
        assert!(!path_glob("_C.so", "lib/_C.so"));
        assert!(path_glob("image_stable.so", "image_stable.so"));
    }
}
