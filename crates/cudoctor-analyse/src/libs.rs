//! `cudoctor libs`: what every needed library of the collected processes resolves to, found
//! the way glibc's ld.so would (or, for a Windows Python, the way Windows' DLL search does for
//! `import torch`), and whether anything fails to load.

use cudoctor_snapshot::windows::WindowsTorchEnv;
use cudoctor_snapshot::{LibraryLinks, LoaderFacts, Snapshot};

/// A framework build besides torch (JAX's plugin, CuPy, ONNX Runtime) and those of its shipped
/// libraries that need a CUDA library or are one.
#[derive(Debug, Clone)]
pub struct FrameworkObjects {
    /// "onnxruntime 1.23.2 (onnxruntime-gpu) in /venv".
    pub label: String,
    pub objects: Vec<LibraryLinks>,
}

/// The whole `libs` report.
#[derive(Debug, Clone, Default)]
pub struct LibsReport {
    /// The emulated ELF processes: each environment's `import torch`, or the paths named.
    pub loader: LoaderFacts,
    pub frameworks: Vec<FrameworkObjects>,
    /// Each Windows Python's `import torch`, through the emulated DLL search.
    pub windows: Vec<WindowsTorchEnv>,
    /// Something needed fails to load (exit status 1).
    pub problems: bool,
}

impl LibsReport {
    /// Nothing was loaded at all, and the loads said why.
    pub fn nothing_loaded(&self) -> bool {
        self.loader.processes.iter().all(|p| p.objects.is_empty())
            && self.frameworks.iter().all(|f| f.objects.is_empty())
            && self.windows.is_empty()
            && !self.loader.errors.is_empty()
    }
}

/// The report of `snap`'s loader facts, framework loads and Windows imports. A Windows
/// Python's ELF process (always empty) gives way to its DLL search.
pub fn report(snap: &Snapshot) -> LibsReport {
    let mut loader = snap.loader.clone().unwrap_or_default();
    let windows_env = |prefix: &str| {
        snap.python_envs
            .iter()
            .any(|e| e.windows && e.prefix == prefix)
    };
    loader.processes.retain(|p| !windows_env(&p.env_prefix));
    let frameworks: Vec<FrameworkObjects> = snap
        .framework_links
        .iter()
        .map(|f| FrameworkObjects {
            label: format!(
                "{} {} ({}) in {}",
                f.framework.name(),
                f.version,
                f.package,
                f.env_prefix
            ),
            objects: cuda_objects(&f.process.objects),
        })
        .collect();
    let windows: Vec<WindowsTorchEnv> = snap
        .windows
        .iter()
        .flat_map(|w| w.torch_envs.iter().cloned())
        .collect();
    // A missing optional library (torchaudio's libsox) and the symbols it would provide leave
    // the import working, as check's LIB001 says: no problem for the exit status.
    // The driver's entry points (cuInit, nvmlInit) are the driver's to provide when CUDA
    // starts, unless its library is loaded here and still lacks them (check's LIB004 says so).
    let objects = || {
        loader
            .processes
            .iter()
            .flat_map(|p| &p.objects)
            .chain(frameworks.iter().flat_map(|f| &f.objects))
    };
    let driver_loaded = objects().any(|o| {
        cudoctor_ldso::cuda_library(&o.path).is_some_and(|l| l.family.is_driver_library())
    });
    let later = |s: &str| !driver_loaded && cudoctor_ldso::SymbolProvider::of(s).is_driver();
    let problems = objects().any(|o| o.fails_to_load_unless(&later))
        || !loader.errors.is_empty()
        || windows.iter().any(|w| !w.import.imported());
    LibsReport {
        loader,
        frameworks,
        windows,
        problems,
    }
}

/// The objects that need a CUDA library (linked, or opened by name) or are one.
fn cuda_objects(objects: &[LibraryLinks]) -> Vec<LibraryLinks> {
    let cuda = |name: &str| cudoctor_ldso::cuda_library(name).is_some();
    objects
        .iter()
        .filter(|o| {
            o.needed.iter().any(|n| cuda(&n.name)) || cuda(o.soname.as_deref().unwrap_or(&o.path))
        })
        .cloned()
        .collect()
}
