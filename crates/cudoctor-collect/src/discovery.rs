//! Where else the user's code runs CUDA binaries from: torch's extension cache (the JIT builds
//! of `torch.utils.cpp_extension.load`/`load_inline`), the source trees of editable installs,
//! `PYTHONPATH` entries and the project directory. Each place is walked with bounds (entries,
//! depth, and no descent into `.git`, virtual environments, `node_modules`, `__pycache__`,
//! site directories or cache-tagged build trees); only ELF files with CUDA code are kept, read
//! from their headers (section names and DT_NEEDED), never loaded.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use cudoctor_ldso::elf::sections::read_sections;
use cudoctor_ldso::{cuda_library, CudaFamily, ElfFile};
use cudoctor_snapshot::{
    parse_build_folder, torch_build_folder, BinaryDiscovery, BinaryOrigin, EditableVia,
    FoundBinary, PlaceKind, PythonEnv, ScanKind, SearchedPlace, StopReason,
};

use crate::host::Host;

/// Directory entries one walk of a source tree looks at, at most.
pub const MAX_TREE_ENTRIES: u64 = 20_000;
/// Directory levels below a source tree's root a walk enters, at most.
pub const MAX_TREE_DEPTH: usize = 8;
/// Directory entries the walk of torch's extension cache looks at, at most.
const MAX_CACHE_ENTRIES: u64 = 20_000;
/// Names of directories never entered: version control, caches, dependencies, site
/// directories (their packages are listed the usual way).
const SKIPPED_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "__pycache__",
    "site-packages",
    "dist-packages",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
];

/// Markers of a Python project's root: the current directory is searched only when it has one.
const PROJECT_MARKERS: &[&str] = &["pyproject.toml", "setup.py", "setup.cfg"];

/// The project directory searched for CUDA binaries built in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectDir {
    /// Named by the user (`check PATH`): every CUDA binary under it counts.
    Named(String),
    /// The current directory, a Python project's root: only Python extension modules count
    /// (`*.cpython-*.so`, `*.abi3.so`, or a library inside a package), not test data or
    /// vendored files that happen to carry a fat binary.
    CurrentDir(String),
}

impl ProjectDir {
    pub fn path(&self) -> &str {
        match self {
            ProjectDir::Named(p) | ProjectDir::CurrentDir(p) => p,
        }
    }
}

/// The current directory as the project to search, when it is a Python project's root (it has
/// `pyproject.toml`, `setup.py` or `setup.cfg`) and neither `/` nor the home directory.
pub fn project_of_cwd(host: &Host, cwd: &str) -> Option<ProjectDir> {
    let cwd = crate::host::normalise(cwd);
    let home = host.var("HOME").map(crate::host::normalise);
    if cwd == "/" || home.as_deref() == Some(cwd.as_str()) {
        return None;
    }
    PROJECT_MARKERS
        .iter()
        .any(|m| host.is_file(&format!("{}/{m}", cwd.trim_end_matches('/'))))
        .then_some(ProjectDir::CurrentDir(cwd))
}

/// Every CUDA binary outside the site directories' packages that the environments' code may
/// run, and where the search looked. `project` is the project directory (a machine path).
pub fn collect(host: &Host, envs: &[PythonEnv], project: Option<&ProjectDir>) -> BinaryDiscovery {
    let mut d = Discovery {
        host,
        out: BinaryDiscovery::default(),
        seen: HashSet::new(),
        walked: HashSet::new(),
        modules_only: false,
    };
    d.torch_extension_cache(envs);
    d.editable_installs(envs);
    let first_torch = envs
        .iter()
        .find(|e| e.torch.is_some())
        .map(|e| e.prefix.clone());
    if let Some(pp) = host.var("PYTHONPATH") {
        for entry in pp.split(':').filter(|s| !s.is_empty()) {
            let entry = crate::host::normalise(entry);
            // A site directory on PYTHONPATH is listed as one (kernels::candidates).
            if is_site_dir(&entry) || !host.is_dir(&entry) {
                continue;
            }
            d.tree(
                &entry,
                PlaceKind::PythonPath,
                BinaryOrigin::PythonPath {
                    entry: entry.clone(),
                },
                first_torch.clone(),
            );
        }
    }
    if let Some(project) = project {
        let root = crate::host::normalise(project.path());
        if host.is_dir(&root) {
            d.modules_only = matches!(project, ProjectDir::CurrentDir(_));
            d.tree(
                &root,
                PlaceKind::Project,
                BinaryOrigin::Project { root: root.clone() },
                first_torch,
            );
        }
    }
    d.out
}

struct Discovery<'h> {
    host: &'h Host,
    out: BinaryDiscovery,
    /// Paths already found (each binary once, under the first origin that found it).
    seen: HashSet<String>,
    /// Source trees already walked: a tree inside one of them is not walked again.
    walked: HashSet<String>,
    /// Keep only Python extension modules from the next tree (see [`ProjectDir::CurrentDir`]).
    modules_only: bool,
}

impl Discovery<'_> {
    /// torch's extension cache, as `_get_build_directory` finds it: `TORCH_EXTENSIONS_DIR`
    /// holds the build directories directly; otherwise `<XDG_CACHE_HOME or ~/.cache>/
    /// torch_extensions/py{XY}_{cuZZZ|cpu}/<name>/`, every build folder there (each Python and
    /// torch build has its own), with build directories directly under the root from torch
    /// releases before the build folders.
    fn torch_extension_cache(&mut self, envs: &[PythonEnv]) {
        let host = self.host;
        let (root, from_env_var) = match host.var("TORCH_EXTENSIONS_DIR") {
            Some(dir) => (crate::host::normalise(dir), true),
            None => {
                let cache = match host.var("XDG_CACHE_HOME") {
                    Some(c) => c.to_string(),
                    None => match host.var("HOME") {
                        Some(h) => format!("{}/.cache", h.trim_end_matches('/')),
                        None => return,
                    },
                };
                // torch takes the real path of the root.
                let root = crate::host::normalise(&format!("{cache}/torch_extensions"));
                (host.resolve(&root).map_or(root, |(r, _)| r), false)
            }
        };
        if !host.is_dir(&root) {
            return;
        }
        let first_torch = envs
            .iter()
            .find(|e| e.torch.is_some())
            .map(|e| e.prefix.clone());
        let mut place = SearchedPlace {
            path: root.clone(),
            kind: PlaceKind::TorchExtensionCache,
            ..Default::default()
        };
        let top = read_dir_bounded(host, &root, &mut place.entries, MAX_CACHE_ENTRIES);
        for (name, kind) in top {
            if kind != EntryKind::Dir {
                continue;
            }
            let dir = format!("{root}/{name}");
            let folder = (!from_env_var && parse_build_folder(&name).is_some()).then_some(name);
            let build_dirs: Vec<(String, String)> = match &folder {
                Some(_) => read_dir_bounded(host, &dir, &mut place.entries, MAX_CACHE_ENTRIES)
                    .into_iter()
                    .filter(|(_, k)| *k == EntryKind::Dir)
                    .map(|(n, _)| (format!("{dir}/{n}"), n))
                    .collect(),
                None => vec![(
                    dir.clone(),
                    dir.rsplit('/').next().unwrap_or("").to_string(),
                )],
            };
            // The environment whose torch loads from this folder: under TORCH_EXTENSIONS_DIR
            // every torch does (the first environment's is judged); otherwise the one whose
            // Python and torch name the folder. A folder of the old layout (no build folder)
            // is not read by today's torch.
            let env = match (&folder, from_env_var) {
                (_, true) => first_torch.clone(),
                (Some(f), false) => envs
                    .iter()
                    .find(|e| {
                        e.torch
                            .as_ref()
                            .zip(e.python_version.as_deref())
                            .and_then(|(t, py)| torch_build_folder(py, t))
                            == Some(f.clone())
                    })
                    .map(|e| e.prefix.clone()),
                (None, false) => None,
            };
            for (build_dir, ext) in build_dirs {
                if host.deadline().passed() {
                    place.limit_hit = Some(deadline_text(host));
                    break;
                }
                for (file, kind) in
                    read_dir_bounded(host, &build_dir, &mut place.entries, MAX_CACHE_ENTRIES)
                {
                    // torch names the module `<name>.so`, or `<name>_v<N>.so` after a rebuild
                    // with changed sources in the same process.
                    if kind != EntryKind::File || !file.ends_with(".so") {
                        continue;
                    }
                    self.add(
                        format!("{build_dir}/{file}"),
                        BinaryOrigin::TorchExtensionCache {
                            root: root.clone(),
                            from_env_var,
                            build_folder: folder.clone(),
                            name: ext.clone(),
                            build_dir: build_dir.clone(),
                        },
                        env.clone(),
                    );
                }
            }
        }
        if place.entries >= MAX_CACHE_ENTRIES && place.limit_hit.is_none() {
            place.limit_hit = Some(format!("{MAX_CACHE_ENTRIES} directory entries"));
        }
        self.out.places.push(place);
    }

    /// The source trees editable installs import from: each distribution's `direct_url.json`
    /// with `dir_info.editable` (the project root), setuptools' `__editable___*_finder.py`
    /// mappings and the directories `.pth` lines add (site.py's), outside site directories.
    fn editable_installs(&mut self, envs: &[PythonEnv]) {
        let host = self.host;
        for env in envs {
            let owner = env.torch.is_some().then(|| env.prefix.clone());
            // The site directories proper (not PYTHONPATH's or .pth's additions).
            for sp in env.site_packages.iter().filter(|d| is_site_dir(d)) {
                let entries = host.list_dir(sp);
                let mut trees: Vec<(String, String, EditableVia)> = Vec::new();
                // Every editable install puts a `.pth` file in the site directory (setuptools'
                // `__editable__.*`, hatchling's `_<name>`, flit's and pdm's `<name>`, the old
                // `easy-install.pth`): without one, no dist-info's direct_url.json is opened.
                let pth_names: Vec<String> = entries
                    .iter()
                    .filter(|e| e.ends_with(".pth") && *e != "distutils-precedence.pth")
                    .map(|e| pth_distribution(e))
                    .collect();
                for e in &entries {
                    if pth_names.is_empty() || host.out_of_time(ScanKind::BinarySearch, sp) {
                        break;
                    }
                    if let Some(stem) = e.strip_suffix(".dist-info") {
                        let dist =
                            cudoctor_types::normalise_name(stem.split('-').next().unwrap_or(stem));
                        let legacy = pth_names.iter().any(|n| n == "easy-install");
                        if !legacy
                            && !pth_names.iter().any(|n| {
                                dist.starts_with(n.as_str()) || n.starts_with(dist.as_str())
                            })
                        {
                            continue;
                        }
                        let Ok(text) = host.read_text(&format!("{sp}/{e}/direct_url.json")) else {
                            continue;
                        };
                        if let Some(source) = editable_source(&text) {
                            let name = stem.split('-').next().unwrap_or(stem);
                            trees.push((
                                source,
                                cudoctor_types::normalise_name(name),
                                EditableVia::DirectUrl,
                            ));
                        }
                    }
                }
                let mut pth_bytes = 0u64;
                for e in entries.iter().filter(|e| e.ends_with(".pth")) {
                    if host.out_of_time(ScanKind::BinarySearch, sp) {
                        break;
                    }
                    if pth_bytes > crate::python::site::MAX_PTH_BYTES {
                        host.stopped(
                            ScanKind::BinarySearch,
                            sp,
                            StopReason::Bytes {
                                limit: crate::python::site::MAX_PTH_BYTES,
                            },
                        );
                        break;
                    }
                    let Ok(text) = host.read_text(&format!("{sp}/{e}")) else {
                        continue;
                    };
                    pth_bytes += text.len() as u64;
                    let dist = pth_distribution(e);
                    for line in text.lines().map(str::trim) {
                        if let Some(finder) = finder_module(line) {
                            let Ok(code) = host.read_text(&format!("{sp}/{finder}.py")) else {
                                continue;
                            };
                            for dir in finder_mapping(&code) {
                                trees.push((dir, dist.clone(), EditableVia::EditableFinder));
                            }
                        }
                    }
                    for line in crate::python::site::pth_entries(&text) {
                        let dir = if line.starts_with('/') {
                            crate::host::normalise(line)
                        } else {
                            crate::host::normalise(&format!("{sp}/{line}"))
                        };
                        if !is_site_dir(&dir) && host.is_dir(&dir) {
                            trees.push((dir, dist.clone(), EditableVia::Pth));
                        }
                    }
                }
                for (source, distribution, via) in trees {
                    if host.out_of_time(ScanKind::BinarySearch, sp) {
                        break;
                    }
                    // A finder maps a package to a directory, which may be a module file's.
                    if !host.is_dir(&source) {
                        continue;
                    }
                    self.tree(
                        &source,
                        PlaceKind::Editable,
                        BinaryOrigin::Editable {
                            distribution,
                            source: source.clone(),
                            via,
                        },
                        owner.clone(),
                    );
                }
            }
        }
    }

    /// Walks one source tree (once: a tree inside one already walked is skipped) and adds the
    /// CUDA binaries in it.
    fn tree(&mut self, root: &str, kind: PlaceKind, origin: BinaryOrigin, env: Option<String>) {
        let root = root.trim_end_matches('/');
        let root = if root.is_empty() { "/" } else { root };
        // The root and each directory above it looked up in the set: thousands of trees
        // (one per `.pth` line) cost linear time, not quadratic.
        let mut above = Some(root);
        while let Some(dir) = above {
            if self.walked.contains(dir) {
                return;
            }
            above = match dir.rsplit_once('/') {
                Some(("", _)) if dir != "/" => Some("/"),
                Some((parent, _)) if !parent.is_empty() => Some(parent),
                _ => None,
            };
        }
        self.walked.insert(root.to_string());
        let walk = walk_tree(self.host, root, MAX_TREE_ENTRIES, MAX_TREE_DEPTH);
        let mut limit_hit = walk.limit_hit;
        for path in walk.libraries {
            if self.host.deadline().passed() {
                limit_hit.get_or_insert_with(|| deadline_text(self.host));
                break;
            }
            if self.modules_only && !is_extension_module(self.host, &path) {
                continue;
            }
            self.add(path, origin.clone(), env.clone());
        }
        self.out.places.push(SearchedPlace {
            path: root.to_string(),
            kind,
            entries: walk.entries,
            limit_hit,
        });
    }

    /// Keeps `path` when it is a CUDA binary not already found.
    fn add(&mut self, path: String, origin: BinaryOrigin, env: Option<String>) {
        if self.seen.contains(&path) {
            return;
        }
        let Some((fatbin, cuda_needed)) = cuda_marks(&self.host.fs_path(&path)) else {
            return;
        };
        self.seen.insert(path.clone());
        self.out.binaries.push(FoundBinary {
            path,
            origin,
            fatbin,
            cuda_needed,
            env_prefix: env,
        });
    }
}

/// Whether `path` is `dir` or lies under it.
#[cfg(test)]
fn within(path: &str, dir: &str) -> bool {
    dir == "/"
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// A directory named as a site directory (`site-packages`, `dist-packages`).
fn is_site_dir(dir: &str) -> bool {
    matches!(
        dir.trim_end_matches('/').rsplit('/').next(),
        Some("site-packages" | "dist-packages")
    )
}

/// The source directory of an editable install's `direct_url.json` (PEP 610): its `url`
/// (`file://` only, percent-escapes decoded) when `dir_info.editable` is true.
pub fn editable_source(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    if v.get("dir_info")?.get("editable")?.as_bool() != Some(true) {
        return None;
    }
    let url = v.get("url")?.as_str()?;
    let path = url.strip_prefix("file://")?;
    // `file://localhost/x` names the same host's `/x`.
    let path = path.strip_prefix("localhost").unwrap_or(path);
    let decoded = percent_decode(path)?;
    decoded
        .starts_with('/')
        .then(|| crate::host::normalise(&decoded))
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The distribution a `.pth` file is named for: setuptools' `__editable__.my_pkg-0.1.pth`,
/// hatchling's `_my_pkg.pth`, others' `my_pkg.pth`; normalised.
fn pth_distribution(file: &str) -> String {
    let stem = file.strip_suffix(".pth").unwrap_or(file);
    let stem = stem.strip_prefix("__editable__.").unwrap_or(stem);
    let stem = stem.trim_start_matches('_');
    let name = stem.split('-').next().unwrap_or(stem);
    cudoctor_types::normalise_name(name)
}

/// The finder module an `import __editable___x_finder; __editable___x_finder.install()` line
/// of setuptools' `.pth` names.
fn finder_module(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("import ")?;
    let module = rest.split(';').next()?.trim();
    (module.starts_with("__editable__")
        && module.ends_with("_finder")
        && module
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(module)
}

/// The directories of setuptools' finder's `MAPPING: dict[str, str] = {'pkg': '/src/pkg'}`,
/// read as literals (the file is never run).
pub fn finder_mapping(code: &str) -> Vec<String> {
    let Some(line) = code.lines().find(|l| l.starts_with("MAPPING")) else {
        return Vec::new();
    };
    let Some(body) = line.split_once('{').map(|(_, b)| b) else {
        return Vec::new();
    };
    let strings = python_string_literals(body);
    // Keys and values alternate.
    strings
        .into_iter()
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with('/'))
        .map(|s| crate::host::normalise(&s))
        .collect()
}

/// The quoted string literals of a line of Python (repr() of str: `'..'` or `".."`, with
/// backslash escapes of the quote and the backslash).
fn python_string_literals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\'' && c != '"' {
            continue;
        }
        let quote = c;
        let mut s = String::new();
        let mut closed = false;
        while let Some(ch) = chars.next() {
            match ch {
                '\\' => {
                    if let Some(n) = chars.next() {
                        s.push(n);
                    }
                }
                ch if ch == quote => {
                    closed = true;
                    break;
                }
                ch => s.push(ch),
            }
        }
        if !closed {
            break;
        }
        out.push(s);
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum EntryKind {
    Dir,
    File,
    Other,
}

/// A directory's entries with their kinds from the directory itself (no stat; symlinks are
/// `Other`, never followed), counting each against `count` and stopping at `limit`.
fn read_dir_bounded(
    host: &Host,
    dir: &str,
    count: &mut u64,
    limit: u64,
) -> Vec<(String, EntryKind)> {
    read_real_dir(&host.fs_path(dir), count, limit)
}

fn read_real_dir(real: &Path, count: &mut u64, limit: u64) -> Vec<(String, EntryKind)> {
    let Ok(rd) = std::fs::read_dir(real) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.filter_map(Result::ok) {
        if *count >= limit {
            break;
        }
        *count += 1;
        let kind = match e.file_type() {
            Ok(t) if t.is_dir() => EntryKind::Dir,
            Ok(t) if t.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        };
        out.push((
            cudoctor_types::os_text::from_os(&e.file_name()).into_owned(),
            kind,
        ));
    }
    out.sort();
    out
}

/// A walk's limit when the command's deadline ended it.
fn deadline_text(host: &Host) -> String {
    let budget = host.deadline().budget_s().unwrap_or(0.0);
    format!("the time budget of {budget} s (--timeout)")
}

/// What one bounded walk of a source tree found.
#[derive(Debug, Default)]
pub struct TreeWalk {
    /// Shared-library files (`*.so`, `*.so.*`), machine paths, in walk order.
    pub libraries: Vec<String>,
    pub entries: u64,
    pub limit_hit: Option<String>,
}

/// The shared libraries under `root` (a machine path), breadth first, looking at `max_entries`
/// directory entries and `max_depth` levels at most. Not entered: [`SKIPPED_DIRS`], virtual
/// environments (`pyvenv.cfg`), conda environments (`conda-meta/`), trees tagged as caches
/// (`CACHEDIR.TAG`: cargo's `target/`), setuptools' `build/` (copies waiting to be installed:
/// what runs is the in-place or installed copy), and symlinks.
pub fn walk_tree(host: &Host, root: &str, max_entries: u64, max_depth: usize) -> TreeWalk {
    let mut walk = TreeWalk::default();
    let mut queue: std::collections::VecDeque<(PathBuf, String, usize)> =
        std::collections::VecDeque::new();
    queue.push_back((
        host.fs_path(root),
        root.trim_end_matches('/').to_string(),
        0,
    ));
    let mut deeper_skipped = false;
    while let Some((real, machine, depth)) = queue.pop_front() {
        // A huge or hostile tree ends at the command's deadline, said like a cap.
        if host.deadline().passed() {
            walk.limit_hit = Some(deadline_text(host));
            break;
        }
        if walk.entries >= max_entries {
            walk.limit_hit = Some(format!("{max_entries} directory entries"));
            break;
        }
        let entries = read_real_dir(&real, &mut walk.entries, max_entries);
        if depth > 0 && skipped_tree(&entries) {
            continue;
        }
        for (name, kind) in entries {
            match kind {
                EntryKind::Dir => {
                    if SKIPPED_DIRS.contains(&name.as_str()) {
                        continue;
                    }
                    if depth + 1 > max_depth {
                        deeper_skipped = true;
                        continue;
                    }
                    queue.push_back((real.join(&name), format!("{machine}/{name}"), depth + 1));
                }
                EntryKind::File if is_shared_library_name(&name) => {
                    walk.libraries.push(format!("{machine}/{name}"));
                }
                _ => {}
            }
        }
        if walk.entries >= max_entries && walk.limit_hit.is_none() {
            walk.limit_hit = Some(format!("{max_entries} directory entries"));
        }
    }
    if deeper_skipped && walk.limit_hit.is_none() {
        walk.limit_hit = Some(format!("{max_depth} directory levels"));
    }
    walk
}

/// A directory whose entries say it is not source: a virtual or conda environment, a tree
/// tagged as a cache, setuptools' build tree.
fn skipped_tree(entries: &[(String, EntryKind)]) -> bool {
    let has = |n: &str, k: EntryKind| entries.iter().any(|(e, ek)| e == n && *ek == k);
    has("pyvenv.cfg", EntryKind::File)
        || has("conda-meta", EntryKind::Dir)
        || has("CACHEDIR.TAG", EntryKind::File)
        || entries.iter().any(|(e, k)| {
            *k == EntryKind::Dir
                && (e.starts_with("temp.linux-")
                    || e.starts_with("bdist.linux-")
                    || e.starts_with("lib.linux-"))
        })
}

/// A Python extension module: named with an interpreter's tag (`_C.cpython-311-x86_64-linux-gnu.so`,
/// `_C.abi3.so`, PyPy's `.pypy`), or a plain `x.so` inside a package (a directory with
/// `__init__.py`, where `import pkg.x` finds it).
fn is_extension_module(host: &Host, path: &str) -> bool {
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    file.contains(".cpython-")
        || file.ends_with(".abi3.so")
        || file.contains(".pypy")
        || (file.ends_with(".so") && host.is_file(&format!("{dir}/__init__.py")))
}

/// `x.so`, `x.cpython-311-x86_64-linux-gnu.so`, `libx.so.12`.
fn is_shared_library_name(name: &str) -> bool {
    name.ends_with(".so") || name.contains(".so.")
}

/// Whether an ELF file carries CUDA code: a `.nv_fatbin` section, or a DT_NEEDED on the CUDA
/// runtime, the driver or torch's CUDA libraries (kernels compiled in, or launched through
/// them). Reads the headers, the dynamic segment and the section table only.
fn cuda_marks(real: &Path) -> Option<(bool, Vec<String>)> {
    let elf = ElfFile::open(real).ok()?;
    let needed: Vec<String> = elf
        .needed()
        .iter()
        .filter(|n| {
            n.starts_with("libtorch_cuda")
                || n.starts_with("libc10_cuda")
                || cuda_library(n).is_some_and(|l| {
                    matches!(l.family, CudaFamily::Cudart | CudaFamily::CudaDriver)
                })
        })
        .cloned()
        .collect();
    let fatbin = read_sections(elf.source(), elf.header()).is_ok_and(|s| {
        s.iter()
            .any(|s| s.name == ".nv_fatbin" && s.has_file_data())
    });
    (fatbin || !needed.is_empty()).then_some((fatbin, needed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editable_sources_come_from_direct_url_json() {
        assert_eq!(
            editable_source(r#"{"dir_info": {"editable": true}, "url": "file:///tmp/edproj"}"#)
                .as_deref(),
            Some("/tmp/edproj")
        );
        assert_eq!(
            editable_source(r#"{"dir_info": {"editable": true}, "url": "file:///src/my%20proj"}"#)
                .as_deref(),
            Some("/src/my proj")
        );
        // A plain local install, an archive, a VCS URL: no source tree imported from.
        assert_eq!(
            editable_source(r#"{"dir_info": {}, "url": "file:///tmp/edproj"}"#),
            None
        );
        assert_eq!(
            editable_source(r#"{"archive_info": {}, "url": "https://example.invalid/x.whl"}"#),
            None
        );
        assert_eq!(editable_source("not json"), None);
    }

    #[test]
    fn setuptools_finder_mappings_are_read_as_literals() {
        // As setuptools 65 writes it (a real `pip install -e .`).
        let code = "from __future__ import annotations\nimport sys\n\nMAPPING: dict[str, str] = {'mypkg': '/tmp/edproj/mypkg', 'other': '/src/it\\'s/other'}\nNAMESPACES: dict[str, list[str]] = {}\n";
        assert_eq!(
            finder_mapping(code),
            vec![
                "/tmp/edproj/mypkg".to_string(),
                "/src/it's/other".to_string()
            ]
        );
        assert!(finder_mapping("x = 1\n").is_empty());
        assert_eq!(
            finder_module(
                "import __editable___my_pkg_0_1_finder; __editable___my_pkg_0_1_finder.install()"
            ),
            Some("__editable___my_pkg_0_1_finder")
        );
        assert_eq!(finder_module("import os; os.system('x')"), None);
        assert_eq!(pth_distribution("__editable__.my_pkg-0.1.pth"), "my-pkg");
        assert_eq!(pth_distribution("_my_pkg.pth"), "my-pkg");
    }

    #[test]
    fn the_current_directory_keeps_python_extension_modules_only() {
        let root = tempfile::tempdir().unwrap();
        for f in ["proj/pkg/__init__.py", "proj/pyproject.toml"] {
            let p = root.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let host = Host::rooted(
            root.path().into(),
            std::collections::BTreeMap::new(),
            std::time::Duration::from_secs(1),
        );
        assert!(is_extension_module(
            &host,
            "/proj/ops/_k.cpython-312-x86_64-linux-gnu.so"
        ));
        assert!(is_extension_module(&host, "/proj/ops/_k.abi3.so"));
        assert!(is_extension_module(&host, "/proj/pkg/kernels.so"));
        // Test data or a vendored library outside any package: not what `import` runs.
        assert!(!is_extension_module(&host, "/proj/corpus/fatbin/sample.so"));
        assert!(!is_extension_module(&host, "/proj/pkg/libfoo.so.1"));
        assert_eq!(
            project_of_cwd(&host, "/proj"),
            Some(ProjectDir::CurrentDir("/proj".into()))
        );
        assert_eq!(project_of_cwd(&host, "/proj/pkg"), None);
        assert_eq!(project_of_cwd(&host, "/"), None);
    }

    #[test]
    fn paths_within_trees() {
        assert!(within("/a/b", "/a"));
        assert!(within("/a", "/a"));
        assert!(!within("/ab", "/a"));
        assert!(within("/x", "/"));
    }
}
