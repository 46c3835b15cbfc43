//! One emulated process: objects are loaded the way glibc's ld.so loads them
//! (`_dl_map_object`, `_dl_map_object_deps` in elf/dl-load.c and elf/dl-deps.c), so a
//! library already in the process is reused whatever a later object's own search paths say.
//!
//! Search order for a DT_NEEDED name without '/':
//! 1. DT_RPATH of the loading object, then of its loader, and so on up the chain, then of the
//!    executable, but only when the loading object has no DT_RUNPATH (an object with
//!    DT_RUNPATH has its DT_RPATH ignored altogether);
//! 2. LD_LIBRARY_PATH;
//! 3. DT_RUNPATH of the loading object only (not inherited);
//! 4. ld.so.cache (with DF_1_NODEFLIB, entries under the default directories are skipped);
//! 5. the default directories, unless DF_1_NODEFLIB.
//!
//! Every directory is tried with the hwcaps subdirectories first ([`LoaderConfig`]). A
//! candidate of another ELF class or machine is skipped; a candidate that is not ELF at all
//! stops the search with ld.so's error. Dependencies are loaded breadth first.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::cache::LdCache;
use crate::config::LoaderConfig;
use crate::dst::{search_dirs, search_dirs_capped, DstValues, MAX_SEARCH_DIRS};
use crate::elf::symbols::{LookupName, SymbolTable, VersionRequest};
use crate::elf::{verify_loadable, ElfFile, Loadability};
use crate::error::LoadError;
use crate::read::{read_vec, FileSource, ReadAt};
use crate::report::{LibsReport, MissingVersion, NeededReport, ObjectReport, Via};
use crate::rootfs::{lexical_dirname, RootFs};

/// The environment of the emulated process.
#[derive(Debug, Clone)]
pub struct ProcessEnv {
    /// Directory that stands for "/" of the inspected machine ("/" in real use).
    pub root: PathBuf,
    pub ld_library_path: Option<String>,
    pub ld_preload: Option<String>,
    /// Working directory (absolute, as seen on the inspected machine) for relative paths.
    pub cwd: String,
    pub config: LoaderConfig,
}

impl ProcessEnv {
    /// A process on the machine under `root`, with the loader configuration detected there
    /// and no LD_LIBRARY_PATH.
    pub fn new(root: &Path) -> Self {
        ProcessEnv {
            root: root.to_path_buf(),
            ld_library_path: None,
            ld_preload: None,
            cwd: "/".into(),
            config: LoaderConfig::detect(root),
        }
    }

    /// Take LD_LIBRARY_PATH and LD_PRELOAD from an environment (e.g. `std::env::vars()`).
    pub fn with_vars<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        for (k, v) in vars {
            match k.as_ref() {
                "LD_LIBRARY_PATH" => self.ld_library_path = Some(v.as_ref().to_string()),
                "LD_PRELOAD" => self.ld_preload = Some(v.as_ref().to_string()),
                _ => {}
            }
        }
        self
    }

    pub fn with_ld_library_path(mut self, llp: Option<&str>) -> Self {
        self.ld_library_path = llp.map(str::to_string);
        self
    }

    pub fn with_cwd(mut self, cwd: &str) -> Self {
        self.cwd = cwd.to_string();
        self
    }

    pub fn with_config(mut self, config: LoaderConfig) -> Self {
        self.config = config;
        self
    }
}

/// Which objects of one `load` call get their undefined symbols checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SymbolCheck {
    /// None (fast: no symbol table is read).
    #[default]
    None,
    /// Only the object named in the call (e.g. an extension module).
    Requested,
    /// Every object newly loaded by the call.
    All,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    pub check_symbols: SymbolCheck,
}

impl LoadOptions {
    pub fn check_symbols(mode: SymbolCheck) -> Self {
        LoadOptions {
            check_symbols: mode,
        }
    }
}

struct LoadedObject {
    /// `l_name`: the path it was opened under (root-less).
    path: String,
    real_path: Option<String>,
    /// `l_libname`: every name it was requested as.
    names: Vec<String>,
    soname: Option<String>,
    file_id: Option<(u64, u64)>,
    origin: Option<String>,
    loader: Option<usize>,
    rpath_dirs: Vec<String>,
    runpath_dirs: Option<Vec<String>>,
    nodeflib: bool,
    needed_names: Vec<String>,
    elf: Option<ElfFile<FileSource>>,
    symbols: Option<Result<SymbolTable, String>>,
    walked: bool,
    report: ObjectReport,
}

impl LoadedObject {
    /// `_dl_name_match_p`, plus the soname check `_dl_map_object` does before it.
    fn matches(&self, name: &str) -> bool {
        self.path == name
            || self.names.iter().any(|n| n == name)
            || self.soname.as_deref() == Some(name)
    }
}

/// Result of probing one candidate path.
enum Probe {
    NotFound,
    /// Wrong class or machine: ld.so skips it and goes on searching.
    Skipped,
    /// ld.so stops with this error.
    Fatal(String),
    Found(Box<Candidate>),
}

struct Candidate {
    elf: ElfFile<FileSource>,
    file_id: (u64, u64),
    real_path: Option<String>,
}

enum Outcome {
    Found { idx: usize, via: Via },
    Missing { error: Option<String> },
}

enum CacheState {
    NotRead,
    Absent,
    Loaded(Box<LdCache>),
}

/// An emulated process.
pub struct Process {
    env: ProcessEnv,
    fs: RootFs,
    objects: Vec<LoadedObject>,
    main: Option<usize>,
    llp_dirs: Option<Vec<String>>,
    cache: CacheState,
    warnings: Vec<String>,
}

impl Process {
    /// A process holding only the dynamic loader itself (it is in every process, and
    /// libc.so.6 names it in DT_NEEDED).
    pub fn new(env: ProcessEnv) -> Self {
        let fs = RootFs::new(&env.root);
        let mut p = Process {
            env,
            fs,
            objects: Vec::new(),
            main: None,
            llp_dirs: None,
            cache: CacheState::NotRead,
            warnings: Vec::new(),
        };
        if let Some(interp) = p.env.config.interpreter.clone() {
            p.add_rtld(&interp);
        }
        p
    }

    fn add_rtld(&mut self, interp: &str) {
        let (elf, file_id, real_path) = match self.probe(interp) {
            Probe::Found(c) => (Some(c.elf), Some(c.file_id), c.real_path),
            _ => (None, None, None),
        };
        // Without the file (a bare fake root) its soname is still the interpreter's file name.
        let soname = elf
            .as_ref()
            .and_then(|e| e.soname().map(str::to_string))
            .or_else(|| interp.rsplit('/').next().map(str::to_string));
        let report = ObjectReport {
            path: interp.to_string(),
            needed: Vec::new(),
            unresolved_symbols: Vec::new(),
            soname: soname.clone(),
            real_path: real_path.clone(),
            loaded_by: None,
            symbols_checked: false,
            missing_versions: Vec::new(),
            errors: Vec::new(),
        };
        self.objects.push(LoadedObject {
            path: interp.to_string(),
            real_path,
            names: Vec::new(),
            soname,
            file_id,
            origin: Some(lexical_dirname(interp).to_string()),
            loader: None,
            rpath_dirs: Vec::new(),
            runpath_dirs: None,
            nodeflib: false,
            needed_names: Vec::new(),
            elf,
            symbols: None,
            walked: true,
            report,
        });
    }

    pub fn env(&self) -> &ProcessEnv {
        &self.env
    }

    /// Non-fatal problems met (an unreadable ld.so.cache, ...).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Load the process's executable (or, to reproduce `ldd FILE`, the file ldd is given):
    /// it becomes the main map, whose DT_RPATH applies to every search, and LD_PRELOAD
    /// objects are loaded right after it. Must be the first load.
    pub fn load_executable(
        &mut self,
        path: &str,
        opts: LoadOptions,
    ) -> Result<Vec<ObjectReport>, LoadError> {
        let rtld = usize::from(self.env.config.interpreter.is_some());
        if self.main.is_some() || self.objects.len() > rtld {
            // Loading a second executable would not model any real process.
            return Err(LoadError::NotLoadable {
                path: path.to_string(),
                message: "the process already has an executable".into(),
            });
        }
        self.load_inner(path, opts, true)
    }

    /// dlopen() `path` into the process (`import torch` loads torch/_C*.so this way, then each
    /// extension). Returns the reports of the objects this call added, the requested one first
    /// (or only its existing report when it was already loaded).
    pub fn load(&mut self, path: &str, opts: LoadOptions) -> Result<Vec<ObjectReport>, LoadError> {
        self.load_inner(path, opts, false)
    }

    /// dlopen() `name` from code inside the already-loaded object `caller` (its path as
    /// loaded): glibc searches with the caller's link map, so the caller's DT_RPATH chain and
    /// DT_RUNPATH apply (cuDNN opening its sub-libraries by soname, for one). Returns `None`
    /// when `caller` is not in the process.
    pub fn dlopen_from(
        &mut self,
        caller: &str,
        name: &str,
        opts: LoadOptions,
    ) -> Option<Result<Vec<ObjectReport>, LoadError>> {
        let idx = self
            .objects
            .iter()
            .position(|o| o.path == caller || o.real_path.as_deref() == Some(caller))?;
        Some(self.load_with_caller(Some(idx), name, opts, false))
    }

    /// True when an object of this path, real path or soname is in the process.
    pub fn has_loaded(&self, name: &str) -> bool {
        self.objects
            .iter()
            .any(|o| o.matches(name) || o.real_path.as_deref() == Some(name))
    }

    fn load_inner(
        &mut self,
        path: &str,
        opts: LoadOptions,
        as_main: bool,
    ) -> Result<Vec<ObjectReport>, LoadError> {
        self.load_with_caller(self.main, path, opts, as_main)
    }

    fn load_with_caller(
        &mut self,
        caller: Option<usize>,
        path: &str,
        opts: LoadOptions,
        as_main: bool,
    ) -> Result<Vec<ObjectReport>, LoadError> {
        let first_new = self.objects.len();
        let idx = match self.map_object(caller, path, true) {
            Outcome::Found { idx, .. } => idx,
            Outcome::Missing { error } => {
                return Err(match error {
                    // The probe's message names the file it read, which is this one.
                    Some(message) => LoadError::NotLoadable {
                        message: message
                            .strip_prefix(&format!("{path}: "))
                            .map_or_else(|| message.clone(), str::to_string),
                        path: path.to_string(),
                    },
                    None => LoadError::Open {
                        path: path.to_string(),
                        source: std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            "cannot open shared object file",
                        ),
                    },
                });
            }
        };
        if idx < first_new {
            return Ok(vec![self.report_of(idx)]);
        }
        if as_main {
            self.main = Some(idx);
            // The executable's origin is its real directory (the kernel's /proc/self/exe).
            if let Some(real) = self.objects.get(idx).and_then(|o| o.real_path.clone()) {
                self.set_origin(idx, lexical_dirname(&real).to_string());
            }
        }
        let mut queue = vec![idx];
        if as_main {
            for name in self.preload_names() {
                if let Outcome::Found { idx: p, .. } = self.map_object(Some(idx), &name, false) {
                    if !queue.contains(&p) {
                        queue.push(p);
                    }
                } else {
                    self.warnings
                        .push(format!("LD_PRELOAD entry {name} cannot be preloaded"));
                }
            }
        }
        self.walk_breadth_first(queue);
        let new: Vec<usize> = (first_new..self.objects.len()).collect();
        for &i in &new {
            let check = match opts.check_symbols {
                SymbolCheck::None => false,
                SymbolCheck::Requested => i == idx,
                SymbolCheck::All => true,
            };
            if check {
                self.check_symbols(i);
            }
        }
        let mut order = vec![idx];
        order.extend(new.into_iter().filter(|&i| i != idx));
        Ok(order.into_iter().map(|i| self.report_of(i)).collect())
    }

    fn set_origin(&mut self, idx: usize, origin: String) {
        let Some(o) = self.objects.get_mut(idx) else {
            return;
        };
        o.origin = Some(origin);
        let (rpath, runpath, partial) = match o.elf.as_ref().and_then(|e| e.dynamic()) {
            Some(d) => (
                d.effective_rpath().map(str::to_string),
                d.runpath.clone(),
                d.partial.clone(),
            ),
            None => (None, None, Vec::new()),
        };
        let cfg = &self.env.config;
        let vals = DstValues {
            origin: o.origin.as_deref(),
            lib: &cfg.dst_lib,
            platform: cfg.platform.as_deref(),
        };
        let mut notes = partial;
        let (rpath_dirs, rpath_cut) = rpath
            .map(|r| search_dirs_capped(&r, &[':'], &vals))
            .unwrap_or_default();
        o.rpath_dirs = rpath_dirs;
        o.runpath_dirs = runpath.map(|r| {
            let (dirs, cut) = search_dirs_capped(&r, &[':'], &vals);
            if cut {
                notes.push(format!(
                    "DT_RUNPATH names more than {MAX_SEARCH_DIRS} directories; judged on the first {MAX_SEARCH_DIRS}"
                ));
            }
            dirs
        });
        if rpath_cut {
            notes.push(format!(
                "DT_RPATH names more than {MAX_SEARCH_DIRS} directories; judged on the first {MAX_SEARCH_DIRS}"
            ));
        }
        // Said once per object, as problems reading it.
        for n in notes {
            let n = format!("judged partially: {n}");
            if !o.report.errors.contains(&n) {
                o.report.errors.push(n);
            }
        }
    }

    fn preload_names(&self) -> Vec<String> {
        self.env
            .ld_preload
            .as_deref()
            .map(|p| {
                p.split([' ', ':'])
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `_dl_map_object_deps`: map every DT_NEEDED of each queued object, appending new objects.
    fn walk_breadth_first(&mut self, mut queue: Vec<usize>) {
        let mut seen: HashSet<usize> = queue.iter().copied().collect();
        let mut i = 0;
        while let Some(&idx) = queue.get(i) {
            i += 1;
            let Some(obj) = self.objects.get_mut(idx) else {
                continue;
            };
            if obj.walked {
                continue;
            }
            obj.walked = true;
            let names = obj.needed_names.clone();
            for name in names {
                let outcome = self.map_object(Some(idx), &name, false);
                let entry = match outcome {
                    Outcome::Found { idx: dep, via } => {
                        if seen.insert(dep) {
                            queue.push(dep);
                        }
                        let d = self.objects.get(dep);
                        NeededReport {
                            name: name.clone(),
                            resolved: d.map(|d| d.path.clone()),
                            via,
                            real_path: d.and_then(|d| d.real_path.clone()),
                            error: None,
                        }
                    }
                    Outcome::Missing { error } => NeededReport {
                        name: name.clone(),
                        resolved: None,
                        via: Via::Missing,
                        real_path: None,
                        error,
                    },
                };
                if let Some(obj) = self.objects.get_mut(idx) {
                    obj.report.needed.push(entry);
                }
            }
        }
    }

    /// `_dl_map_object`: find `name` for `loader`, mapping it if it is not loaded yet.
    /// `requested` marks the object named by a load call itself (no DT_NEEDED brought it in).
    fn map_object(&mut self, loader: Option<usize>, name: &str, requested: bool) -> Outcome {
        if let Some(idx) = self.objects.iter().position(|o| o.matches(name)) {
            if let Some(o) = self.objects.get_mut(idx) {
                if !o.names.iter().any(|n| n == name) {
                    o.names.push(name.to_string());
                }
            }
            return Outcome::Found {
                idx,
                via: Via::Loaded,
            };
        }
        if name.contains('/') {
            // Tokens in a path are expanded with the loader's values.
            let expanded = match loader {
                Some(l) => {
                    let origin = self.objects.get(l).and_then(|o| o.origin.clone());
                    let cfg = &self.env.config;
                    crate::dst::expand(
                        name,
                        &DstValues {
                            origin: origin.as_deref(),
                            lib: &cfg.dst_lib,
                            platform: cfg.platform.as_deref(),
                        },
                    )
                }
                None => Some(name.to_string()),
            };
            let Some(path) = expanded else {
                return Outcome::Missing { error: None };
            };
            return match self.probe(&path) {
                Probe::Found(c) => self.register(*c, &path, name, loader, Via::Direct, requested),
                Probe::Fatal(e) => Outcome::Missing { error: Some(e) },
                Probe::NotFound | Probe::Skipped => Outcome::Missing { error: None },
            };
        }
        match self.search(loader, name) {
            Ok(Some((c, path, via))) => self.register(*c, &path, name, loader, via, requested),
            Ok(None) => Outcome::Missing { error: None },
            Err(e) => Outcome::Missing { error: Some(e) },
        }
    }

    /// The search of `_dl_map_object` for a name without '/'.
    fn search(
        &mut self,
        loader: Option<usize>,
        name: &str,
    ) -> Result<Option<(Box<Candidate>, String, Via)>, String> {
        let loader_has_runpath = loader
            .and_then(|l| self.objects.get(l))
            .is_some_and(|o| o.runpath_dirs.is_some());
        if !loader_has_runpath {
            let mut did_main = false;
            let mut cur = loader;
            let mut hops = 0usize;
            while let Some(l) = cur {
                hops += 1;
                if hops > self.objects.len() {
                    break;
                }
                let Some(o) = self.objects.get(l) else { break };
                let next = o.loader;
                if !o.rpath_dirs.is_empty() {
                    let dirs = o.rpath_dirs.clone();
                    if let Some(found) = self.try_dirs(&dirs, name)? {
                        return Ok(Some((found.0, found.1, Via::Rpath)));
                    }
                    did_main |= Some(l) == self.main;
                }
                cur = next;
            }
            if !did_main {
                if let Some(m) = self.main {
                    let dirs = self
                        .objects
                        .get(m)
                        .map(|o| o.rpath_dirs.clone())
                        .unwrap_or_default();
                    if !dirs.is_empty() {
                        if let Some(found) = self.try_dirs(&dirs, name)? {
                            return Ok(Some((found.0, found.1, Via::Rpath)));
                        }
                    }
                }
            }
        }
        let llp = self.llp_dirs();
        if !llp.is_empty() {
            if let Some(found) = self.try_dirs(&llp, name)? {
                return Ok(Some((found.0, found.1, Via::LdLibraryPath)));
            }
        }
        if let Some(dirs) = loader
            .and_then(|l| self.objects.get(l))
            .and_then(|o| o.runpath_dirs.clone())
        {
            if let Some(found) = self.try_dirs(&dirs, name)? {
                return Ok(Some((found.0, found.1, Via::Runpath)));
            }
        }
        // DF_1_NODEFLIB of the loader (or, for a direct load, of the executable).
        let nodeflib = loader
            .or(self.main)
            .and_then(|l| self.objects.get(l))
            .is_some_and(|o| o.nodeflib);
        if let Some(cached) = self.cache_lookup(name) {
            let in_system_dir = self
                .env
                .config
                .system_dirs
                .iter()
                .any(|d| cached.starts_with(d.as_str()));
            if !(nodeflib && in_system_dir) {
                match self.probe(&cached) {
                    Probe::Found(c) => return Ok(Some((c, cached, Via::Cache))),
                    Probe::Fatal(e) => return Err(e),
                    Probe::NotFound | Probe::Skipped => {}
                }
            }
        }
        if !nodeflib {
            let dirs = self.env.config.system_dirs.clone();
            if let Some(found) = self.try_dirs(&dirs, name)? {
                return Ok(Some((found.0, found.1, Via::Default)));
            }
        }
        Ok(None)
    }

    /// `open_path`: each directory, hwcaps subdirectories first.
    fn try_dirs(
        &self,
        dirs: &[String],
        name: &str,
    ) -> Result<Option<(Box<Candidate>, String)>, String> {
        let subdirs = self.env.config.search_subdirs.clone();
        for dir in dirs {
            for sub in subdirs
                .iter()
                .map(String::as_str)
                .chain(std::iter::once(""))
            {
                let path = format!("{dir}{sub}{name}");
                match self.probe(&path) {
                    Probe::Found(c) => return Ok(Some((c, path))),
                    Probe::Fatal(e) => return Err(e),
                    Probe::NotFound | Probe::Skipped => {}
                }
            }
        }
        Ok(None)
    }

    fn llp_dirs(&mut self) -> Vec<String> {
        if let Some(d) = &self.llp_dirs {
            return d.clone();
        }
        let dirs = match self.env.ld_library_path.as_deref() {
            Some(llp) if !llp.is_empty() => {
                // $ORIGIN in LD_LIBRARY_PATH is the executable's directory.
                let origin = self
                    .main
                    .and_then(|m| self.objects.get(m))
                    .and_then(|o| o.origin.clone());
                let cfg = &self.env.config;
                let vals = DstValues {
                    origin: origin.as_deref(),
                    lib: &cfg.dst_lib,
                    platform: cfg.platform.as_deref(),
                };
                search_dirs(llp, &[':', ';'], &vals)
            }
            _ => Vec::new(),
        };
        self.llp_dirs = Some(dirs.clone());
        dirs
    }

    /// The inspected machine's ld.so.cache as this process sees it (read on first use;
    /// `None` when absent or unusable, see [`Process::warnings`]).
    pub fn ld_cache(&mut self) -> Option<&LdCache> {
        self.read_cache();
        match &self.cache {
            CacheState::Loaded(c) => Some(c),
            _ => None,
        }
    }

    fn cache_lookup(&mut self, name: &str) -> Option<String> {
        self.read_cache();
        match &self.cache {
            CacheState::Loaded(c) => c.lookup(name, &self.env.config.cache).map(str::to_string),
            _ => None,
        }
    }

    fn read_cache(&mut self) {
        if let CacheState::NotRead = self.cache {
            let path = self.env.config.cache_path.clone();
            self.cache =
                match self.fs.resolve(&path).and_then(|p| {
                    cudoctor_types::regular_file::read(&p, crate::cache::MAX_CACHE_FILE)
                }) {
                    Ok(bytes) => match LdCache::parse(&bytes) {
                        Ok(c) => CacheState::Loaded(Box::new(c)),
                        Err(e) => {
                            // ld.so ignores a cache it cannot use; so do we, but say so.
                            self.warnings.push(format!("{path}: {e}; ignored"));
                            CacheState::Absent
                        }
                    },
                    Err(_) => CacheState::Absent,
                };
        }
    }

    /// `open_verify` on a candidate path (root-less; relative paths are from the cwd).
    fn probe(&self, path: &str) -> Probe {
        let abs = self.absolute(path);
        let Ok(host) = self.fs.resolve(&abs) else {
            return Probe::NotFound;
        };
        let meta = match std::fs::metadata(&host) {
            Ok(m) => m,
            Err(_) => return Probe::NotFound,
        };
        if meta.is_dir() {
            // open() succeeds on a directory, the read of the header fails.
            return Probe::Fatal(format!("{path}: cannot read file data"));
        }
        let src = match FileSource::open(&host) {
            Ok(s) => s,
            Err(_) => return Probe::NotFound,
        };
        let head = match read_vec(&src, 0, src.size().min(832)) {
            Ok(h) => h,
            Err(_) => return Probe::Fatal(format!("{path}: cannot read file data")),
        };
        match verify_loadable(&head, &self.env.config.target) {
            Loadability::Loadable => {}
            Loadability::WrongClass | Loadability::WrongMachine => return Probe::Skipped,
            Loadability::Fatal(m) => return Probe::Fatal(format!("{path}: {m}")),
        }
        match ElfFile::parse(src) {
            Ok(elf) => Probe::Found(Box::new(Candidate {
                elf,
                file_id: file_identity(&meta, &host),
                real_path: self.fs.canonical(&abs).ok(),
            })),
            Err(e) => Probe::Fatal(format!("{path}: {e}")),
        }
    }

    fn absolute(&self, path: &str) -> String {
        if path.starts_with('/') {
            path.to_string()
        } else if self.env.cwd.ends_with('/') {
            format!("{}{}", self.env.cwd, path)
        } else {
            format!("{}/{}", self.env.cwd, path)
        }
    }

    /// Add a found object, or reuse the loaded object that is the same file.
    fn register(
        &mut self,
        c: Candidate,
        path: &str,
        name: &str,
        loader: Option<usize>,
        via: Via,
        requested: bool,
    ) -> Outcome {
        if let Some(idx) = self
            .objects
            .iter()
            .position(|o| o.file_id == Some(c.file_id))
        {
            if let Some(o) = self.objects.get_mut(idx) {
                if !o.names.iter().any(|n| n == name) {
                    o.names.push(name.to_string());
                }
            }
            return Outcome::Found { idx, via };
        }
        let dynamic = c.elf.dynamic();
        let soname = c.elf.soname().map(str::to_string);
        let needed_names = c.elf.needed().to_vec();
        let nodeflib = dynamic.is_some_and(|d| d.nodeflib());
        let loaded_by = loader
            .and_then(|l| self.objects.get(l))
            .map(|o| o.path.clone());
        let abs = self.absolute(path);
        let idx = self.objects.len();
        self.objects.push(LoadedObject {
            path: path.to_string(),
            real_path: c.real_path.clone(),
            names: vec![name.to_string()],
            soname: soname.clone(),
            file_id: Some(c.file_id),
            origin: None,
            loader,
            rpath_dirs: Vec::new(),
            runpath_dirs: None,
            nodeflib,
            needed_names,
            elf: Some(c.elf),
            symbols: None,
            walked: false,
            report: ObjectReport {
                path: path.to_string(),
                needed: Vec::new(),
                unresolved_symbols: Vec::new(),
                soname,
                real_path: c.real_path,
                loaded_by: if requested { None } else { loaded_by },
                symbols_checked: false,
                missing_versions: Vec::new(),
                errors: Vec::new(),
            },
        });
        self.set_origin(idx, lexical_dirname(&abs).to_string());
        Outcome::Found { idx, via }
    }

    fn report_of(&self, idx: usize) -> ObjectReport {
        self.objects
            .get(idx)
            .map(|o| o.report.clone())
            .unwrap_or_else(|| ObjectReport {
                path: String::new(),
                needed: Vec::new(),
                unresolved_symbols: Vec::new(),
                soname: None,
                real_path: None,
                loaded_by: None,
                symbols_checked: false,
                missing_versions: Vec::new(),
                errors: Vec::new(),
            })
    }

    /// All objects, in load order (the dynamic loader first).
    pub fn report(&self) -> LibsReport {
        LibsReport {
            objects: self.reports().cloned().collect(),
        }
    }

    /// [`Process::report`]'s objects, borrowed (to look one up without copying them all).
    pub fn reports(&self) -> impl Iterator<Item = &ObjectReport> {
        self.objects.iter().map(|o| &o.report)
    }

    /// Like [`Process::report`] without the dynamic loader's own entry.
    pub fn report_without_loader(&self) -> LibsReport {
        LibsReport {
            objects: self.reports_without_loader().cloned().collect(),
        }
    }

    /// [`Process::report_without_loader`]'s objects, borrowed.
    pub fn reports_without_loader(&self) -> impl Iterator<Item = &ObjectReport> {
        let skip = self.env.config.interpreter.is_some();
        self.reports().skip(usize::from(skip))
    }

    /// Reads the symbol table of every loaded object that has none yet, the objects spread
    /// over a few threads: the first symbol check of a torch process reads the tables of some
    /// sixty libraries (tens of MB for libtorch alone), and one after another they are most of
    /// the emulation's time.
    fn read_symbol_tables(&mut self) {
        let mut pending: Vec<&mut LoadedObject> = self
            .objects
            .iter_mut()
            .filter(|o| o.symbols.is_none())
            .collect();
        // Largest files first, each taken by the next free worker of the process's budget:
        // the few big tables (libtorch_cpu, libtorch_cuda) start first, on different threads.
        pending.sort_by_key(|o| std::cmp::Reverse(o.elf.as_ref().map_or(0, |e| e.source().size())));
        let budget = cudoctor_types::ThreadBudget::process();
        let objects: Vec<&LoadedObject> = pending.iter().map(|o| &**o).collect();
        let tables = budget.map(&objects, budget.limit(), |o| match &o.elf {
            Some(elf) => elf.symbol_table().map_err(|e| e.to_string()),
            None => Err("not readable".into()),
        });
        for (o, table) in pending.into_iter().zip(tables) {
            o.symbols =
                Some(table.unwrap_or_else(|_| Err("reading the symbol table failed".into())));
        }
    }

    /// Check the undefined symbols and required versions of object `idx` against everything
    /// loaded in the process.
    fn check_symbols(&mut self, idx: usize) {
        self.read_symbol_tables();
        let own = match self.objects.get(idx).and_then(|o| o.symbols.as_ref()) {
            Some(Ok(t)) => t,
            Some(Err(e)) => {
                let msg = format!("cannot read dynamic symbols: {e}");
                if let Some(o) = self.objects.get_mut(idx) {
                    o.report.errors.push(msg);
                }
                return;
            }
            None => return,
        };
        let tables: Vec<&SymbolTable> = self
            .objects
            .iter()
            .filter_map(|o| o.symbols.as_ref().and_then(|s| s.as_ref().ok()))
            .collect();
        // Each name hashed once for all the tables it is looked up in; only what stays
        // unresolved is copied out of the table.
        let mut unresolved: Vec<String> = own
            .requirement_refs()
            .filter(|r| !r.weak)
            .filter(|r| {
                let name = LookupName::new(&r.name);
                let req = r.version.map(|v| VersionRequest {
                    name: v,
                    hidden: r.hidden,
                });
                !tables.iter().any(|t| t.defines_name(&name, req))
            })
            .map(|r| r.to_string())
            .collect();
        unresolved.sort();
        unresolved.dedup();

        // dl-version.c: each required version must be defined by the named library.
        let mut missing_versions = Vec::new();
        for need in own.version_needs() {
            let Some(provider) = self.objects.iter().find(|o| o.matches(&need.file)) else {
                continue;
            };
            let Some(Ok(pt)) = provider.symbols.as_ref() else {
                continue;
            };
            if !pt.has_version_definitions() {
                // "no version information available": a warning in ld.so, not an error.
                continue;
            }
            for v in need.versions.iter().filter(|v| !v.weak) {
                if !pt.version_definitions().iter().any(|d| d.name == v.name) {
                    missing_versions.push(MissingVersion {
                        file: need.file.clone(),
                        version: v.name.clone(),
                        provider: Some(provider.path.clone()),
                    });
                }
            }
        }
        missing_versions.sort();
        if let Some(o) = self.objects.get_mut(idx) {
            o.report.unresolved_symbols = unresolved;
            o.report.missing_versions = missing_versions;
            o.report.symbols_checked = true;
        }
    }
}

/// The identity ld.so compares to see one file under two names (st_dev, st_ino).
#[cfg(unix)]
fn file_identity(meta: &std::fs::Metadata, _host: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// Stable Rust has no file index on Windows: the canonical path stands for the inode there (a
/// hard link is then seen as another file, which only costs a duplicate in the emulation).
#[cfg(not(unix))]
fn file_identity(_meta: &std::fs::Metadata, host: &Path) -> (u64, u64) {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::fs::canonicalize(host)
        .unwrap_or_else(|_| host.to_path_buf())
        .hash(&mut hasher);
    (0, hasher.finish())
}
