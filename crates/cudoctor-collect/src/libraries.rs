//! Which copy of each library torch and its extensions really load, by emulating glibc's loader
//! (cudoctor-ldso) for `import torch` followed by each CUDA extension, in one process per
//! Python environment. Nothing is loaded or run.

use cudoctor_ldso::{
    cache_entries_of_family, cuda_library, find_ld_library_path_shadowing, CudaFamily, ElfFile,
    LibsReport, ProcessEnv,
};
use cudoctor_snapshot::{
    AfterImport, CachedLibrary, FileVersion, FrameworkBuild, LibraryLinks, LinkedLibrary,
    LoadStage, LoaderFacts, NeedKind, OpenedBy, Opener, ProcessLinks, PythonEnv, ShadowedLibrary,
    UnresolvedNeed, VersionSource,
};

use crate::host::Host;
use crate::import_model;
use crate::python;

/// CUDA families whose system-wide copies are worth setting against what torch loads.
const REPORTED_FAMILIES: &[CudaFamily] = &[
    CudaFamily::Cudart,
    CudaFamily::Cudnn,
    CudaFamily::Nccl,
    CudaFamily::Cublas,
];

/// `candidates` are the libraries of torch and its extensions ([`crate::kernels::candidates`]),
/// as (path, owning package).
pub fn collect(host: &Host, envs: &[PythonEnv], candidates: &[(String, String)]) -> LoaderFacts {
    let mut facts = LoaderFacts::default();
    for env in envs {
        if let Some(one) = collect_env(host, env, || candidates, || &[]) {
            add(&mut facts, one);
        }
    }
    facts
}

/// [`collect`] with the CUDA binaries discovery found outside the site directories' packages
/// (torch's extension cache, editable source trees, PYTHONPATH, the project): each is loaded by
/// the environment whose code runs it, its NEEDED entries resolved like a site-packages
/// extension's, as `check` does.
pub fn collect_with_discovery(
    host: &Host,
    envs: &[PythonEnv],
    discovery: &cudoctor_snapshot::BinaryDiscovery,
) -> LoaderFacts {
    let found: std::collections::HashSet<&str> =
        discovery.binaries.iter().map(|b| b.path.as_str()).collect();
    let mut facts = LoaderFacts::default();
    for env in envs {
        let outside: Vec<String> = discovery
            .binaries
            .iter()
            .filter(|b| b.env_prefix.as_deref() == Some(env.prefix.as_str()))
            .map(|b| b.path.clone())
            .collect();
        let mut listing = crate::kernels::candidates(host, std::slice::from_ref(env));
        // A found binary is listed under its origin, by the environment that loads it.
        listing.retain(|(p, _)| !found.contains(p.as_str()));
        listing.extend(
            discovery
                .binaries
                .iter()
                .filter(|b| outside.contains(&b.path))
                .map(|b| (b.path.clone(), crate::kernels::discovered_owner(b))),
        );
        if let Some(one) = collect_env(host, env, || &listing, || &outside) {
            add(&mut facts, one);
        }
    }
    facts
}

/// What one environment's emulated process gives [`LoaderFacts`].
#[derive(Debug, Default)]
pub struct EnvLoader {
    pub process: ProcessLinks,
    pub errors: Vec<String>,
    pub notes: Vec<String>,
    /// The ld.so.cache copies of the reported CUDA families its loader sees.
    pub cache_copies: Vec<CachedLibrary>,
}

/// Adds one environment's process to `facts`, in the order environments are given (the
/// system-wide cache copies are the first environment's that sees any).
pub fn add(facts: &mut LoaderFacts, one: EnvLoader) {
    facts.errors.extend(one.errors);
    facts.notes.extend(one.notes);
    facts.processes.push(one.process);
    if facts.cache_copies.is_empty() {
        facts.cache_copies = one.cache_copies;
    }
}

/// The emulated `import torch` process of `env`; `None` without torch or when it cannot be
/// emulated. Environments are independent: each may be emulated on its own thread.
/// `candidates` gives the env's listing; it is asked only when the emulation reaches the
/// extensions, after torch's own libraries, so it can still be in the making when this starts.
/// `loaded_outside` gives the candidates this process loads from outside its site directories
/// (torch's extension cache, editable source trees, PYTHONPATH, the project: see
/// [`crate::discovery`]), taken whatever the import order of the site directories says; it is
/// asked at the extensions too, so the discovery can run beside the emulation's start.
pub fn collect_env<'c, 'o>(
    host: &Host,
    env: &PythonEnv,
    candidates: impl Fn() -> &'c [(String, String)] + Sync,
    loaded_outside: impl Fn() -> &'o [String] + Sync,
) -> Option<EnvLoader> {
    let process_env = || ProcessEnv::new(host.root()).with_vars(host.env().iter());
    let torch = env.torch.as_ref()?;
    // Extensions: every compiled library outside torch that links torch itself, its
    // symbols checked against what the process exports.
    // Only what this interpreter imports: a package shadowed earlier on its sys.path
    // (another env's candidates share site directories) is not in its process.
    // Made once, by the first of the emulations to get there.
    let extensions: std::sync::OnceLock<Vec<(String, Option<String>)>> = std::sync::OnceLock::new();
    let extensions = || -> &[(String, Option<String>)] {
        extensions.get_or_init(|| {
            let mut imported = python::site::ImportOrigins::new(env);
            let loaded_outside = loaded_outside();
            candidates()
                .iter()
                .filter(|(path, _)| {
                    (loaded_outside.contains(path) || imported.imports(host, path))
                        && !torch.owns(path)
                        && links_torch(host, path)
                })
                .map(|(path, pkg)| (path.clone(), (!pkg.is_empty()).then(|| pkg.clone())))
                .collect()
        })
    };
    // Under LD_LIBRARY_PATH the same import is emulated a second time without it, to tell
    // which copies it replaces; the two runs are independent and go side by side. Only where
    // the second one's libraries come from is compared, so it reads no symbol table.
    let llp_set = host.var("LD_LIBRARY_PATH").is_some_and(|v| !v.is_empty());
    let (run, without) = std::thread::scope(|s| {
        let without = llp_set.then(|| {
            cudoctor_types::ThreadBudget::process().spawn_or_run(s, || {
                import_model::emulate(
                    host,
                    env,
                    process_env().with_ld_library_path(None),
                    &extensions,
                    import_model::Symbols::Skipped,
                )
                .map(|r| r.process.report_without_loader())
                .unwrap_or_default()
            })
        });
        let run = import_model::emulate(
            host,
            env,
            process_env(),
            &extensions,
            import_model::Symbols::Checked,
        );
        (run, without.map(|h| h.join().unwrap_or_default()))
    });
    let run = run?;
    // An emulation the deadline cut is not this environment's process: what it did not load
    // would read as not loaded. Left out, it is said as stopped early and judged by no rule.
    if host
        .stopped_early()
        .iter()
        .any(|s| s.scan == cudoctor_snapshot::ScanKind::Loader && s.place == env.prefix)
    {
        return None;
    }
    let mut one = EnvLoader {
        errors: run.errors.clone(),
        notes: run.notes.clone(),
        ..Default::default()
    };
    let report = run.process.report_without_loader();
    let shadowed = match without {
        Some(without) => find_ld_library_path_shadowing(&report, &without)
            .into_iter()
            .map(|s| ShadowedLibrary {
                object: s.object,
                name: s.name,
                from_ld_library_path: s.from_ld_library_path,
                otherwise: s.otherwise,
            })
            .collect(),
        None => Vec::new(),
    };
    let mut objects = links(&report);
    for o in &mut objects {
        if let Some((_, stage, by)) = run.brought_in.iter().find(|(p, ..)| *p == o.path) {
            o.stage = *stage;
            for n in o
                .needed
                .iter_mut()
                .filter(|n| n.via == cudoctor_types::Via::Missing)
            {
                n.optional = import_model::optional_needed(&by.by, &n.name);
            }
            if by.opener != Opener::Interpreter || o.loaded_by.is_none() {
                o.opened_by = o.loaded_by.is_none().then(|| by.clone());
            }
        }
    }
    let mut records = WheelFiles::default();
    for o in &mut objects {
        o.version = file_version(host, env, o, &mut records);
    }
    one.process = ProcessLinks {
        env_prefix: env.prefix.clone(),
        objects,
        shadowed,
        runtime_dirs: run.runtime_dirs.clone(),
    };
    let mut process = run.process;
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
                    one.cache_copies.push(CachedLibrary {
                        name: e.name.clone(),
                        path: e.path.clone(),
                    });
                }
            }
        }
    }
    Some(one)
}

/// The files the env's nvidia-* wheels record, read once per site directory: for each site
/// directory, each recorded path (relative to it) with the first wheel whose RECORD lists it,
/// as an index into the env's packages.
#[derive(Default)]
struct WheelFiles {
    read: Vec<(String, std::collections::HashMap<String, usize>)>,
}

impl WheelFiles {
    fn owner(
        &mut self,
        host: &Host,
        env: &PythonEnv,
        sp: &str,
        rel: &str,
    ) -> Option<(String, String)> {
        if !self.read.iter().any(|(d, _)| d == sp) {
            let mut files = std::collections::HashMap::new();
            let entries = host.list_dir(sp);
            for (i, pkg) in env
                .packages
                .iter()
                .enumerate()
                .filter(|(_, p)| p.location == sp && p.name.starts_with("nvidia-"))
            {
                let Some(entry) = entries.iter().find(|e| {
                    e.ends_with(".dist-info")
                        && python::site::dist_name_version(e).is_some_and(|(n, v)| {
                            python::site::normalise_name(&n) == pkg.name
                                && v.as_deref() == Some(pkg.version.as_str())
                        })
                }) else {
                    continue;
                };
                // Past the deadline the other RECORDs are not read: their files' versions
                // stay unknown (said as stopped early).
                if host.out_of_time(cudoctor_snapshot::ScanKind::Loader, sp) {
                    break;
                }
                if let Ok(text) = host.read_text(&format!("{sp}/{entry}/RECORD")) {
                    for line in python::record::record_lines(&text) {
                        files.entry(line.path.into_owned()).or_insert(i);
                    }
                }
            }
            self.read.push((sp.to_string(), files));
        }
        let (_, files) = self.read.iter().find(|(d, _)| d == sp)?;
        let pkg = env.packages.get(*files.get(rel)?)?;
        Some((pkg.name.clone(), pkg.version.clone()))
    }
}

/// A CUDA library's version, read from the file: its real file name when that carries the
/// whole version (`libcudnn_graph.so.9.14.0`, as system packages install it), else the
/// installed nvidia-* wheel whose RECORD lists the file. Unknown stays unknown.
fn file_version(
    host: &Host,
    env: &PythonEnv,
    o: &LibraryLinks,
    records: &mut WheelFiles,
) -> Option<FileVersion> {
    let file = o.real_path.as_deref().unwrap_or(&o.path);
    cuda_library(o.soname.as_deref().unwrap_or(file))?;
    if let Some(v) = version_in_file_name(file) {
        return Some(FileVersion {
            version: v,
            from: VersionSource::FileName,
        });
    }
    let (sp, rel) = env.site_packages.iter().find_map(|sp| {
        file.strip_prefix(&format!("{sp}/"))
            .map(|rel| (sp.clone(), rel.to_string()))
    })?;
    let (name, version) = records.owner(host, env, &sp, &rel)?;
    Some(FileVersion {
        version,
        from: VersionSource::Wheel { name },
    })
}

/// `.../libcudnn_graph.so.9.14.0` -> `9.14.0`; a bare major (`.so.9`) says too little.
pub fn version_in_file_name(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    let (_, v) = name.split_once(".so.")?;
    let parts: Vec<&str> = v.split('.').collect();
    (parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    .then(|| v.to_string())
}

/// What glibc's loader resolves for the shared objects a framework build ships (its wheels'
/// RECORD), each loaded into one emulated process of its own, as `ldd` would (symbols are not
/// checked: a Python extension's come from the interpreter). Frameworks that also open
/// libraries at run time (JAX's plugin, CuPy, ONNX Runtime's preloading) do more than this
/// shows; what the ELF files ask for is what this is.
pub fn framework_links(host: &Host, build: &FrameworkBuild) -> ProcessLinks {
    if let Some(jax) = jax_links(host, build) {
        return jax;
    }
    if let Some(tf) = tensorflow_links(host, build) {
        return tf;
    }
    let mut process =
        cudoctor_ldso::Process::new(ProcessEnv::new(host.root()).with_vars(host.env().iter()));
    for path in &build.ships {
        // A file RECORD names that is not there is FW010's concern.
        let _ = process.load(path, cudoctor_ldso::LoadOptions::default());
    }
    // The CUDA library a shipped object opens by name when a GPU is first used (CTranslate2's
    // libcublas.so.12), opened from that object as the loader would: what it loads, or a
    // missing library of that object marked as opened by name.
    let mut opened: Vec<(String, OpenedBy)> = Vec::new();
    let mut unopened: Vec<(String, String)> = Vec::new();
    if crate::python::frameworks::opens_cuda_by_name(build.framework) {
        for path in &build.ships {
            let Some((soname, _)) = crate::python::frameworks::opened_soname(host, path) else {
                continue;
            };
            let by = path.rsplit('/').next().unwrap_or(path).to_string();
            match process.dlopen_from(path, &soname, cudoctor_ldso::LoadOptions::default()) {
                Some(Ok(objects)) => {
                    for o in objects {
                        let direct = o.soname.as_deref() == Some(soname.as_str())
                            || o.path.ends_with(&format!("/{soname}"));
                        if direct && !opened.iter().any(|(p, _)| *p == o.path) {
                            opened.push((
                                o.path.clone(),
                                OpenedBy {
                                    opener: Opener::LibraryDlopen,
                                    by: by.clone(),
                                    optional: false,
                                    conditional: true,
                                    nvidia_folder: None,
                                },
                            ));
                        }
                    }
                }
                Some(Err(_)) => unopened.push((path.clone(), soname)),
                None => {}
            }
        }
    }
    let mut objects = links(&process.report_without_loader());
    for o in &mut objects {
        if let Some((_, by)) = opened.iter().find(|(p, _)| *p == o.path) {
            o.stage = LoadStage::CudaInit;
            o.opened_by = Some(by.clone());
        }
        for (_, soname) in unopened.iter().filter(|(p, _)| *p == o.path) {
            o.needed.push(LinkedLibrary {
                name: soname.clone(),
                via: cudoctor_types::Via::Missing,
                by_name: true,
                ..Default::default()
            });
        }
    }
    ProcessLinks {
        env_prefix: String::new(),
        objects,
        shadowed: Vec::new(),
        runtime_dirs: Vec::new(),
    }
}

/// Marks each library an object of `links` (a framework's own process) opens by name and
/// finds nowhere, where `import` (the same environment's emulated `import torch`) loads a
/// library of that soname at import: a process that imports torch first has it, and glibc's
/// dlopen() by name reuses a loaded library whose soname matches. The one fact check's FW023
/// and `cudoctor libs` both read ([`LinkedLibrary::after_import`]). A DT_NEEDED entry is left
/// as it is: the framework's own import fails before anything else could load it.
pub fn mark_after_import(links: &mut ProcessLinks, import: Option<&ProcessLinks>) {
    let Some(import) = import else {
        return;
    };
    for o in &mut links.objects {
        for n in o
            .needed
            .iter_mut()
            .filter(|n| n.by_name && n.via == cudoctor_types::Via::Missing)
        {
            n.after_import = import
                .objects
                .iter()
                .find(|l| l.stage.is_import() && l.soname.as_deref() == Some(n.name.as_str()))
                .map(|l| AfterImport {
                    framework: cudoctor_snapshot::Framework::Torch,
                    path: l.path.clone(),
                    real_path: l.real_path.clone(),
                });
        }
    }
}

/// The CUDA libraries a framework's shipped objects need that its emulated process (`links`,
/// [`framework_links`] marked by [`mark_after_import`]) finds nowhere on the loader's search
/// path (driver libraries left out: the driver layer judges those), each with the files of
/// that name in `env`'s nvidia wheels, which a framework that loads libraries by path itself
/// may still find. A library an object opens by name (CTranslate2's libcublas.so.12) is one
/// the dlopen from that object finds nowhere; a wheel's copy elsewhere does not count as found
/// for it (its `kind`), a library torch's import loads is said so (its `after_import`).
pub fn unresolved_needs(host: &Host, env: &PythonEnv, links: &ProcessLinks) -> Vec<UnresolvedNeed> {
    let wheel_lib_dirs = std::cell::OnceCell::new();
    let mut out: Vec<UnresolvedNeed> = Vec::new();
    for o in &links.objects {
        for n in o
            .needed
            .iter()
            .filter(|n| n.via == cudoctor_types::Via::Missing && !n.optional)
        {
            let Some(lib) = cuda_library(&n.name) else {
                continue;
            };
            if lib.family.is_driver_library()
                || out
                    .iter()
                    .any(|u| u.needed_by == o.path && u.soname == n.name)
            {
                continue;
            }
            out.push(UnresolvedNeed {
                needed_by: o.path.clone(),
                soname: n.name.clone(),
                in_env: wheel_lib_dirs
                    .get_or_init(|| nvidia_lib_dirs(host, env))
                    .iter()
                    .map(|dir| format!("{dir}/{}", n.name))
                    .filter(|file| host.is_file(file))
                    .collect(),
                kind: if n.by_name {
                    NeedKind::OpenedByName
                } else {
                    NeedKind::Linked
                },
                after_import: n.after_import.clone(),
            });
        }
    }
    out
}

/// The lib directories of `env`'s nvidia wheels (`<site-packages>/nvidia/<component>/lib`).
fn nvidia_lib_dirs(host: &Host, env: &PythonEnv) -> Vec<String> {
    let mut out = Vec::new();
    for sp in &env.site_packages {
        let nvidia = format!("{}/nvidia", sp.trim_end_matches('/'));
        for component in host.list_dir(&nvidia) {
            out.push(format!("{nvidia}/{component}/lib"));
        }
    }
    out
}

/// The CUDA libraries TensorFlow's loader (tsl's `DsoLoader`, code in
/// `libtensorflow_framework.so.2`) opens by soname, with that library's RUNPATH (into the
/// nvidia wheels: `$ORIGIN/../nvidia/cuda_runtime/lib`, ...), in the order of a real process:
/// the CUDA runtime at `import tensorflow` (a real import on a machine without a driver maps
/// `nvidia/cuda_runtime/lib/libcudart.so.12` and no other nvidia library), the rest when the
/// GPU platform starts with a driver. Each soname's major is the version major of the wheel
/// `tensorflow[and-cuda]` requires (`nvidia-cufft-cu12<12.0,>=11.2.3.61`: `libcufft.so.11`),
/// the CUDA runtime's the CUDA major of the build (`build_info.py`).
const TF_OPENS: &[(&str, &str, LoadStage)] = &[
    ("cudart", "nvidia-cuda-runtime", LoadStage::Import),
    ("cublas", "nvidia-cublas", LoadStage::CudaInit),
    ("cublasLt", "nvidia-cublas", LoadStage::CudaInit),
    ("cufft", "nvidia-cufft", LoadStage::CudaInit),
    ("cusolver", "nvidia-cusolver", LoadStage::CudaInit),
    ("cusparse", "nvidia-cusparse", LoadStage::CudaInit),
    ("cudnn", "nvidia-cudnn", LoadStage::CudaInit),
];

/// TensorFlow's process: its shipped objects as `import tensorflow` links them, then the CUDA
/// libraries its loader opens by soname from `libtensorflow_framework.so.2` ([`TF_OPENS`]).
/// None for other frameworks, for a CPU build, or without `libtensorflow_framework.so.2`.
fn tensorflow_links(host: &Host, build: &FrameworkBuild) -> Option<ProcessLinks> {
    if build.framework != cudoctor_snapshot::Framework::Tensorflow {
        return None;
    }
    let cuda = build.cuda.as_ref()?;
    let framework = build
        .ships
        .iter()
        .find(|p| p.ends_with("/tensorflow/libtensorflow_framework.so.2"))?
        .clone();
    let mut process =
        cudoctor_ldso::Process::new(ProcessEnv::new(host.root()).with_vars(host.env().iter()));
    for path in &build.ships {
        let _ = process.load(path, cudoctor_ldso::LoadOptions::default());
    }
    // The soname major of each family: the pinned wheel's version major.
    let pinned_major = |wheel: &str| {
        build.needs.iter().find_map(|line| {
            let r: cudoctor_types::Requirement = line.parse().ok()?;
            let name = r
                .name
                .strip_suffix(&format!("-cu{}", cuda.major))
                .unwrap_or(&r.name);
            (name == wheel).then(|| {
                use cudoctor_types::requirement::SpecOp;
                // `==11.2.3.61` or the floor of `<12.0,>=11.2.3.61`.
                r.specifiers
                    .iter()
                    .find(|s| matches!(s.op, SpecOp::Eq | SpecOp::Ge | SpecOp::Compatible))
                    .and_then(|s| s.version.split('.').next().map(str::to_string))
            })?
        })
    };
    let mut staged: Vec<(String, LoadStage, Option<OpenedBy>)> = Vec::new();
    for (family, wheel, stage) in TF_OPENS {
        let major = if *family == "cudart" {
            Some(cuda.major.to_string())
        } else {
            pinned_major(wheel)
        };
        let Some(major) = major else { continue };
        let soname = format!("lib{family}.so.{major}");
        if let Some(Ok(objects)) =
            process.dlopen_from(&framework, &soname, cudoctor_ldso::LoadOptions::default())
        {
            for o in objects {
                if staged.iter().any(|(p, ..)| *p == o.path) {
                    continue;
                }
                // The library opened by name; what it needs comes with it at the same stage.
                let direct = o.soname.as_deref() == Some(soname.as_str())
                    || o.path.ends_with(&format!("/{soname}"));
                staged.push((
                    o.path.clone(),
                    *stage,
                    direct.then(|| OpenedBy {
                        opener: Opener::LibraryDlopen,
                        by: "libtensorflow_framework.so.2".into(),
                        optional: false,
                        conditional: *stage != LoadStage::Import,
                        nvidia_folder: None,
                    }),
                ));
            }
        }
    }
    let mut objects = links(&process.report_without_loader());
    for o in &mut objects {
        if let Some((_, stage, by)) = staged.iter().find(|(p, ..)| *p == o.path) {
            o.stage = *stage;
            o.opened_by = by.clone();
        }
    }
    Some(ProcessLinks {
        env_prefix: String::new(),
        objects,
        shadowed: Vec::new(),
        runtime_dirs: Vec::new(),
    })
}

/// The literal string arguments of each `call(` in Python source: `_load("cu13",
/// ["libcudart.so.13"])` gives `["cu13", "libcudart.so.13"]` (only quoted literals are read).
fn call_literals(text: &str, call: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(call) {
        // A definition (`def _load(`) is not a call.
        if text[..i].trim_end().ends_with("def") {
            continue;
        }
        let rest = &text[i + call.len()..];
        let Some(end) = rest.find(')') else { continue };
        let mut args = &rest[..end];
        let mut lits = Vec::new();
        while let Some(j) = args.find(['"', '\'']) {
            let quote = &args[j..j + 1];
            let tail = &args[j + 1..];
            let Some(k) = tail.find(quote) else { break };
            lits.push(tail[..k].to_string());
            args = &tail[k + 1..];
        }
        out.push(lits);
    }
    out
}

/// What JAX's CUDA plugin loads, read from JAX's own Python files: at `import jax`, jaxlib's
/// `gpu_*.py` import the plugin's modules (`import_from_plugin("cuda", "_linalg")`); at the
/// first computation, `jax_plugins/xla_cudaNN/__init__.py` preloads the nvidia wheels'
/// libraries by path (`_load("cu13", ["libcudart.so.13"])`, those that exist), imports
/// `cuda_plugin_extension` and `_versions`, checks the CUDA versions and only then, with a GPU
/// whose versions pass, opens `xla_cuda_plugin.so` (conditional). None for other frameworks.
fn jax_links(host: &Host, build: &FrameworkBuild) -> Option<ProcessLinks> {
    if build.framework != cudoctor_snapshot::Framework::Jax {
        return None;
    }
    let major = build.cuda.as_ref()?.major;
    let plugin_dir = format!("jax_cuda{major}_plugin");
    let module = |name: &str| {
        build
            .ships
            .iter()
            .find(|p| p.ends_with(&format!("/{plugin_dir}/{name}.so")))
            .cloned()
    };
    let sp = build.ships.iter().find_map(|p| {
        p.split_once(&format!("/{plugin_dir}/"))
            .map(|(sp, _)| sp.to_string())
    })?;
    let pjrt = format!("{sp}/jax_plugins/xla_cuda{major}");
    let init = host.read_text(&format!("{pjrt}/__init__.py")).ok()?;
    let mut process =
        cudoctor_ldso::Process::new(ProcessEnv::new(host.root()).with_vars(host.env().iter()));
    let mut staged: Vec<(String, LoadStage, OpenedBy)> = Vec::new();
    let mut load = |process: &mut cudoctor_ldso::Process, path: &str, stage, by: OpenedBy| {
        if process
            .load(path, cudoctor_ldso::LoadOptions::default())
            .is_ok()
        {
            for o in process.reports_without_loader() {
                if !staged.iter().any(|(p, ..)| *p == o.path) {
                    let direct = o.path == path;
                    staged.push((
                        o.path.clone(),
                        stage,
                        if direct {
                            by.clone()
                        } else {
                            OpenedBy {
                                opener: Opener::Interpreter,
                                by: String::new(),
                                optional: false,
                                conditional: by.conditional,
                                nvidia_folder: None,
                            }
                        },
                    ));
                }
            }
        }
    };
    let by = |opener, by: &str, conditional| OpenedBy {
        opener,
        by: by.to_string(),
        optional: false,
        conditional,
        nvidia_folder: None,
    };
    // `import jax`: jaxlib's GPU modules import the plugin's extension modules.
    let mut gpu_py: Vec<String> = host
        .list_dir(&format!("{sp}/jaxlib"))
        .into_iter()
        .filter(|f| f.starts_with("gpu_") && f.ends_with(".py"))
        .collect();
    gpu_py.sort();
    for f in gpu_py {
        let Ok(text) = host.read_text(&format!("{sp}/jaxlib/{f}")) else {
            continue;
        };
        for args in call_literals(&text, "import_from_plugin(") {
            if let [plugin, name, ..] = args.as_slice() {
                if plugin == "cuda" {
                    if let Some(path) = module(name) {
                        load(
                            &mut process,
                            &path,
                            LoadStage::Import,
                            by(Opener::PythonImport, &format!("jaxlib/{f}"), false),
                        );
                    }
                }
            }
        }
    }
    // The first computation: the plugin's initialize().
    let init_by = format!("jax_plugins/xla_cuda{major}/__init__.py");
    for args in call_literals(&init, "_load(") {
        let Some((dir, libs)) = args.split_first() else {
            continue;
        };
        for lib in libs {
            let path = format!("{sp}/nvidia/{dir}/lib/{lib}");
            if host.is_file(&path) {
                load(
                    &mut process,
                    &path,
                    LoadStage::CudaInit,
                    by(Opener::PackageLoader, &init_by, false),
                );
            }
        }
    }
    for name in ["cuda_plugin_extension", "_versions"] {
        if init.contains(&format!(".{name}'")) {
            if let Some(path) = module(name) {
                load(
                    &mut process,
                    &path,
                    LoadStage::CudaInit,
                    by(Opener::PythonImport, &init_by, false),
                );
            }
        }
    }
    let xla = format!("{pjrt}/xla_cuda_plugin.so");
    if build.ships.contains(&xla) {
        load(
            &mut process,
            &xla,
            LoadStage::CudaInit,
            by(Opener::PackageLoader, &init_by, true),
        );
    }
    let mut objects = links(&process.report_without_loader());
    for o in &mut objects {
        if let Some((_, stage, by)) = staged.iter().find(|(p, ..)| *p == o.path) {
            o.stage = *stage;
            if by.opener != Opener::Interpreter {
                o.opened_by = Some(by.clone());
            } else if by.conditional {
                // Brought in only by the GPU-only plugin.
                o.opened_by = Some(by.clone());
            }
        }
    }
    Some(ProcessLinks {
        env_prefix: String::new(),
        objects,
        shadowed: Vec::new(),
        runtime_dirs: Vec::new(),
    })
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
                    via: n.via,
                    error: n.error.clone(),
                    optional: false,
                    by_name: false,
                    after_import: None,
                })
                .collect(),
            unresolved_symbols: o.unresolved_symbols.clone(),
            symbols_checked: o.symbols_checked,
            error: None,
            notes: o.errors.clone(),
            ..Default::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_call_arguments() {
        let text = "def _load(module, libraries):\n  pass\n  _load(\"cu13\", [\"libcublas.so.13\", 'libcublasLt.so.13'])\n";
        assert_eq!(
            call_literals(text, "_load("),
            vec![vec![
                "cu13".to_string(),
                "libcublas.so.13".into(),
                "libcublasLt.so.13".into()
            ]]
        );
    }

    /// A framework process whose object opens `soname` by name and finds it nowhere, and an
    /// `import torch` process that loads a library of that soname at `stage`.
    fn by_name_and_torch(soname: &str, stage: LoadStage) -> (ProcessLinks, ProcessLinks) {
        let ct2 = ProcessLinks {
            objects: vec![LibraryLinks {
                path: "/v/site/ctranslate2.libs/libctranslate2.so.4".into(),
                needed: vec![
                    LinkedLibrary {
                        name: soname.into(),
                        by_name: true,
                        ..Default::default()
                    },
                    // A DT_NEEDED entry is not the import's to provide: the framework's own
                    // import fails first.
                    LinkedLibrary {
                        name: soname.into(),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        let torch = ProcessLinks {
            env_prefix: "/v".into(),
            objects: vec![LibraryLinks {
                path: "/v/site/nvidia/cublas/lib/libcublas.so.12".into(),
                soname: Some("libcublas.so.12".into()),
                stage,
                ..Default::default()
            }],
            ..Default::default()
        };
        (ct2, torch)
    }

    #[test]
    fn a_library_opened_by_name_that_torchs_import_loads_is_marked() {
        let (mut ct2, torch) = by_name_and_torch("libcublas.so.12", LoadStage::Import);
        mark_after_import(&mut ct2, Some(&torch));
        let needed = &ct2.objects[0].needed;
        assert_eq!(
            needed[0].after_import,
            Some(AfterImport {
                framework: cudoctor_snapshot::Framework::Torch,
                path: "/v/site/nvidia/cublas/lib/libcublas.so.12".into(),
                real_path: None,
            })
        );
        assert_eq!(needed[0].via, cudoctor_types::Via::Missing);
        assert_eq!(needed[1].after_import, None);
        // The framework's process no longer fails to load on it alone.
        assert!(ct2.objects[0].fails_to_load_unless(&|_| false));
        ct2.objects[0].needed.pop();
        assert!(!ct2.objects[0].fails_to_load_unless(&|_| false));
    }

    #[test]
    fn only_what_torchs_import_loads_by_that_soname_marks_it() {
        // Loaded only when CUDA starts: not there when the framework opens it.
        let (mut ct2, torch) = by_name_and_torch("libcublas.so.12", LoadStage::CudaInit);
        mark_after_import(&mut ct2, Some(&torch));
        assert_eq!(ct2.objects[0].needed[0].after_import, None);
        // Another soname, or no torch at all.
        let (mut ct2, torch) = by_name_and_torch("libcublas.so.13", LoadStage::Import);
        mark_after_import(&mut ct2, Some(&torch));
        assert_eq!(ct2.objects[0].needed[0].after_import, None);
        let (mut ct2, _) = by_name_and_torch("libcublas.so.12", LoadStage::Import);
        mark_after_import(&mut ct2, None);
        assert_eq!(ct2.objects[0].needed[0].after_import, None);
        assert!(ct2.objects[0].fails_to_load_unless(&|_| false));
    }

    #[test]
    fn versions_come_from_whole_file_names_only() {
        assert_eq!(
            version_in_file_name("/usr/lib/x86_64-linux-gnu/libcudnn_graph.so.9.14.0").as_deref(),
            Some("9.14.0")
        );
        assert_eq!(
            version_in_file_name("/w/nvidia/cudnn/lib/libcudnn_graph.so.9"),
            None
        );
        assert_eq!(
            version_in_file_name("/l/libnvrtc-builtins.so.13.0").as_deref(),
            Some("13.0")
        );
        assert_eq!(version_in_file_name("/l/libcudart.3eda8113.so.13"), None);
    }
}
