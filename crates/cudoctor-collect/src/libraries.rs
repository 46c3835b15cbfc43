//! Which copy of each library torch and its extensions really load, by emulating glibc's loader
//! (cudoctor-ldso) for `import torch` followed by each CUDA extension, in one process per
//! Python environment. Nothing is loaded or run.

use cudoctor_ldso::{
    cache_entries_of_family, ld_library_path_shadowing, CudaFamily, ElfFile, LibsReport,
    LoadOptions, Process, ProcessEnv, SymbolCheck,
};
use cudoctor_snapshot::{
    CachedLibrary, LibraryLinks, LinkedLibrary, LoaderFacts, ProcessLinks, PythonEnv,
    ShadowedLibrary,
};

use crate::host::Host;

/// CUDA families whose system-wide copies are worth setting against what torch loads.
const REPORTED_FAMILIES: &[CudaFamily] = &[
    CudaFamily::Cudart,
    CudaFamily::Cudnn,
    CudaFamily::Nccl,
    CudaFamily::Cublas,
];

/// `candidates` are the libraries of torch and its extensions ([`crate::kernels::candidates`]).
pub fn collect(host: &Host, envs: &[PythonEnv], candidates: &[(String, String)]) -> LoaderFacts {
    let mut facts = LoaderFacts::default();
    let process_env = || ProcessEnv::new(host.root()).with_vars(host.env().iter());
    for env in envs {
        let Some(torch) = &env.torch else { continue };
        let mut order: Vec<(String, LoadOptions)> = Vec::new();
        let global_deps = format!("{}/lib/libtorch_global_deps.so", torch.path);
        if host.is_file(&global_deps) {
            order.push((global_deps, LoadOptions::default()));
        }
        for name in host.list_dir(&torch.path) {
            if name.starts_with("_C") && name.ends_with(".so") {
                order.push((format!("{}/{name}", torch.path), LoadOptions::default()));
            }
        }
        // Extensions: every compiled library outside torch that links torch itself, its
        // symbols checked against what the process exports.
        for (path, _) in candidates {
            let in_env = env
                .site_packages
                .iter()
                .any(|sp| path.starts_with(sp.as_str()));
            if in_env && !torch.owns(path) && links_torch(host, path) {
                order.push((
                    path.clone(),
                    LoadOptions::check_symbols(SymbolCheck::Requested),
                ));
            }
        }
        let mut process = Process::new(process_env());
        if let Some(python) = &env.interpreter {
            // The interpreter's own exports (Py*) satisfy extensions' Python symbols.
            let _ = process.load_executable(python, LoadOptions::default());
        }
        for (path, opts) in &order {
            if let Err(e) = process.load(path, *opts) {
                facts.errors.push(format!("{path}: {e}"));
            }
        }
        let report = process.report_without_loader();
        let paths: Vec<String> = order.iter().map(|(p, _)| p.clone()).collect();
        let shadowed = match ld_library_path_shadowing(&process_env(), &paths) {
            Ok(s) => s
                .into_iter()
                .map(|s| ShadowedLibrary {
                    object: s.object,
                    name: s.name,
                    from_ld_library_path: s.from_ld_library_path,
                    otherwise: s.otherwise,
                })
                .collect(),
            Err(e) => {
                facts
                    .errors
                    .push(format!("LD_LIBRARY_PATH comparison: {e}"));
                Vec::new()
            }
        };
        facts.processes.push(ProcessLinks {
            env_prefix: env.prefix.clone(),
            objects: links(&report),
            shadowed,
        });
        if facts.cache_copies.is_empty() {
            let mut seen: Vec<String> = Vec::new();
            if let Some(cache) = process.ld_cache() {
                for family in REPORTED_FAMILIES {
                    for e in cache_entries_of_family(cache, *family) {
                        // The unversioned development link names the same file as the soname.
                        let real = host
                            .resolve(&e.path)
                            .map_or_else(|| e.path.clone(), |(r, _)| r);
                        if !seen.contains(&real) {
                            seen.push(real);
                            facts.cache_copies.push(CachedLibrary {
                                name: e.name.clone(),
                                path: e.path.clone(),
                            });
                        }
                    }
                }
            }
        }
    }
    facts
}

/// True for a library that links torch's own C++ libraries (a torch extension).
fn links_torch(host: &Host, path: &str) -> bool {
    ElfFile::open(&host.fs_path(path)).is_ok_and(|elf| {
        elf.needed()
            .iter()
            .any(|n| n.starts_with("libc10") || n.starts_with("libtorch"))
    })
}

/// The loader's report as snapshot facts.
pub fn links(report: &LibsReport) -> Vec<LibraryLinks> {
    report
        .objects
        .iter()
        .map(|o| LibraryLinks {
            path: o.path.clone(),
            soname: o.soname.clone(),
            real_path: o.real_path.clone(),
            loaded_by: o.loaded_by.clone(),
            needed: o
                .needed
                .iter()
                .map(|n| LinkedLibrary {
                    name: n.name.clone(),
                    resolved: n.resolved.clone(),
                    real_path: n.real_path.clone(),
                    via: n.via.as_str().to_string(),
                    error: n.error.clone(),
                })
                .collect(),
            unresolved_symbols: o.unresolved_symbols.clone(),
            symbols_checked: o.symbols_checked,
            error: None,
        })
        .collect()
}
