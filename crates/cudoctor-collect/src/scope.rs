//! What one collection reads: everything `check` judges (the default scope), or the parts a
//! command shows (`kernels`, `libs`), with the paths named on its command line. Every command
//! reads the machine through [`crate::collect`]; a scope only narrows what it reads, so a part
//! is read the same way whichever command asks (the Windows Pythons included).

use cudoctor_ldso::{LoadOptions, Process, ProcessEnv, SymbolCheck};
use cudoctor_snapshot::{
    BinaryDiscovery, Framework, FrameworkLinks, KernelImages, LoaderFacts, ProcessLinks, PythonEnv,
    Snapshot,
};

use crate::{discovery, driver, kernels, libraries, python, windows, Host, Options};

/// One part of the machine a scope can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The driver and its GPUs (no topology).
    Driver,
    /// The Python environments, the Windows ones included (read from their files).
    Python,
    /// The CUDA binaries outside the environments' packages: torch's extension cache, editable
    /// source trees, PYTHONPATH, the project directory.
    Discovery,
    /// The kernel images of every CUDA library in the environments' site directories and of
    /// the binaries found, or of the scope's paths.
    KernelImages,
    /// The dynamic loader's emulation of `import torch` and each extension in every
    /// environment, or of loading the scope's paths.
    Loader,
    /// What each framework build besides torch loads of the libraries it ships.
    FrameworkLinks,
    /// A Windows machine's facts: its runtime DLLs, PATH and each torch's DLL search.
    Windows,
}

/// What a collection reads.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// The parts read; `None` reads everything `check` judges.
    pub parts: Option<Vec<Part>>,
    /// Machine paths named on the command line: the kernel images and loads of these instead
    /// of the environments' (no environment is read for them).
    pub paths: Vec<String>,
    /// Loading `paths`, check every undefined symbol, not only those a loaded library asks for.
    pub all_symbols: bool,
}

impl Scope {
    /// Everything `check` judges.
    pub fn everything() -> Self {
        Scope::default()
    }

    /// Only `parts`.
    pub fn only(parts: &[Part]) -> Self {
        Scope {
            parts: Some(parts.to_vec()),
            ..Scope::default()
        }
    }

    /// The paths named on the command line, read instead of the environments'.
    pub fn with_paths(mut self, paths: Vec<String>) -> Self {
        self.paths = paths;
        self
    }

    pub fn reads(&self, part: Part) -> bool {
        self.parts.as_ref().is_none_or(|p| p.contains(&part))
    }

    pub fn is_everything(&self) -> bool {
        self.parts.is_none()
    }
}

/// The Python environments of the machine: those found on Linux (and named with `--python`)
/// and the Windows ones, read from their files. One list for every command.
pub fn python_envs(host: &Host, pythons: &[String]) -> Vec<PythonEnv> {
    let mut envs = python::collect(host, pythons);
    envs.extend(windows::python_envs(host, pythons));
    envs
}

/// Reads the parts of a narrowed scope into `snap`.
pub(crate) fn collect_parts(host: &Host, options: &Options, snap: &mut Snapshot) {
    let scope = &options.scope;
    let named = !scope.paths.is_empty();
    let envs = if scope.reads(Part::Python) && !named {
        python_envs(host, &options.python)
    } else {
        Vec::new()
    };
    let found = (scope.reads(Part::Discovery) && !named)
        .then(|| discovery::collect(host, &envs, options.project.as_ref()));
    if scope.reads(Part::Driver) {
        snap.driver = driver::collect(host);
    }
    if scope.reads(Part::Windows) {
        snap.windows = windows::collect(host, &options.python);
    }
    if scope.reads(Part::KernelImages) {
        snap.kernel_images = Some(kernel_images(host, &envs, found.as_ref(), &scope.paths));
    }
    if scope.reads(Part::Loader) {
        snap.loader = Some(if named {
            load_paths(host, &scope.paths, scope.all_symbols)
        } else if let Some(found) = &found {
            libraries::collect_with_discovery(host, &envs, found)
        } else {
            libraries::collect(host, &envs, &kernels::candidates(host, &envs))
        });
    }
    if scope.reads(Part::FrameworkLinks) {
        snap.framework_links = framework_links(host, &envs, snap.loader.as_ref());
    }
    snap.python_envs = envs;
    snap.binaries = found;
    snap.stopped_early = host.stopped_early();
}

/// The kernel images of `paths` (files or directories), else of every CUDA library in the
/// environments' site directories followed by the binaries found outside them, each once;
/// the optional backends their packages import only conditionally marked.
fn kernel_images(
    host: &Host,
    envs: &[PythonEnv],
    found: Option<&BinaryDiscovery>,
    paths: &[String],
) -> KernelImages {
    let mut list: Vec<String> = if paths.is_empty() {
        envs.iter()
            .flat_map(|e| &e.site_packages)
            .flat_map(|sp| kernels::expand(host, sp))
            .collect()
    } else {
        paths
            .iter()
            .flat_map(|p| kernels::expand(host, p))
            .collect()
    };
    let mut seen: std::collections::HashSet<String> = list.iter().cloned().collect();
    for b in found.iter().flat_map(|f| &f.binaries) {
        if seen.insert(b.path.clone()) {
            list.push(b.path.clone());
        }
    }
    let named: Vec<(String, String)> = list.into_iter().map(|p| (p, String::new())).collect();
    let mut images = kernels::scan(host, &named);
    if paths.is_empty() {
        images.scope = "CUDA libraries of each Python environment's site directories".into();
    }
    python::dispatch::mark_optional(host, envs, &mut images);
    images
}

/// One process loading `paths`; one file alone is resolved as `ldd FILE` does, as the
/// process's main object. A path that fails to load is an error of the facts.
fn load_paths(host: &Host, paths: &[String], all_symbols: bool) -> LoaderFacts {
    let mode = if all_symbols {
        SymbolCheck::All
    } else {
        SymbolCheck::Requested
    };
    let mut process = Process::new(ProcessEnv::new(host.root()).with_vars(host.env().iter()));
    let mut errors = Vec::new();
    for p in paths {
        let loaded = if paths.len() == 1 {
            process.load_executable(p, LoadOptions::check_symbols(mode))
        } else {
            process.load(p, LoadOptions::check_symbols(mode))
        };
        if let Err(e) = loaded {
            // Every load error names the path it is about.
            errors.push(e.to_string());
        }
    }
    LoaderFacts {
        processes: vec![ProcessLinks {
            env_prefix: String::new(),
            objects: libraries::links(&process.report_without_loader()),
            shadowed: Vec::new(),
            runtime_dirs: Vec::new(),
        }],
        cache_copies: Vec::new(),
        errors,
        notes: Vec::new(),
    }
}

/// What every framework build besides torch that ships libraries loads of them, each library
/// it opens by name and finds nowhere marked where its environment's `import torch` in
/// `loader` loads it (as check marks them).
fn framework_links(
    host: &Host,
    envs: &[PythonEnv],
    loader: Option<&LoaderFacts>,
) -> Vec<FrameworkLinks> {
    let mut out = Vec::new();
    for env in envs {
        let import = loader.and_then(|l| l.processes.iter().find(|p| p.env_prefix == env.prefix));
        for b in env
            .frameworks
            .iter()
            .filter(|b| b.framework != Framework::Torch && !b.ships.is_empty())
        {
            out.push(FrameworkLinks {
                framework: b.framework,
                version: b.version.clone(),
                package: b.package.clone(),
                env_prefix: env.prefix.clone(),
                process: {
                    let mut links = libraries::framework_links(host, b);
                    libraries::mark_after_import(&mut links, import);
                    links
                },
            });
        }
    }
    out
}
