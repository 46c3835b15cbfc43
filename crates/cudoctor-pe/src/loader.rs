//! The Windows loader's DLL search, emulated over a [`WinFs`]: which file each DLL name of an
//! import table becomes, in one process, load after load.
//!
//! The order is Microsoft's "Dynamic-link library search order" (learn.microsoft.com, Win32,
//! DLLs): a name that is an API set (`api-ms-win-*`, `ext-ms-win-*`) is the system's; then a
//! module of that name already loaded is used; then a KnownDLL comes from System32; then
//! - with the `LOAD_LIBRARY_SEARCH_*` flags (what Python 3.8+ uses for extension modules and
//!   ctypes, and torch for its DLLs): the loaded DLL's own directory
//!   (`LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR`), the application's directory, the directories added by
//!   `AddDllDirectory` (`os.add_dll_directory`), System32 — and nothing else: not PATH;
//! - without flags (plain `LoadLibraryW`, safe search mode): the application's directory,
//!   System32, the 16-bit System directory, the Windows directory, the current directory, PATH.
//!
//! The flags of a load apply to the dependencies it loads. A load that fails is undone: the
//! modules it mapped are unloaded again. A dependency that is found but does not export an
//! imported name fails the load as ERROR_PROC_NOT_FOUND (127), a missing one as
//! ERROR_MOD_NOT_FOUND (126), a file that is not an image for this machine as
//! ERROR_BAD_EXE_FORMAT (193). Windows leaves unspecified in which order several
//! `AddDllDirectory` directories are searched; they are searched here in the order added.

use std::collections::{BTreeSet, HashMap, HashSet};

use cudoctor_types::read_at::FileSource;
use serde::{Deserialize, Serialize};

use crate::pe::{ImportedSymbol, Machine, PeFile};
use crate::winfs::{WinFs, WinPath};

/// Win32 error codes a load ends with.
pub const ERROR_MOD_NOT_FOUND: u32 = 126;
pub const ERROR_PROC_NOT_FOUND: u32 = 127;
pub const ERROR_BAD_EXE_FORMAT: u32 = 193;

/// Where the search found a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Found {
    /// The load named the file by its full path.
    FullPath,
    /// A module of that name was loaded already.
    AlreadyLoaded,
    /// A KnownDLL, from System32.
    KnownDll,
    /// The directory of the DLL being loaded (LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR).
    DllLoadDir,
    /// The application's directory (python.exe's).
    AppDir,
    /// A directory added with AddDllDirectory / os.add_dll_directory.
    UserDir,
    System32,
    /// The 16-bit System directory.
    SystemDir16,
    WindowsDir,
    CurrentDir,
    /// A directory of PATH.
    Path,
    /// A DLL every supported Windows installs in System32 ([`WINDOWS_COMPONENTS`]), taken as
    /// there although the tree read does not hold it (an inspected `--root` has no Windows).
    WindowsComponent,
}

/// DLLs that are part of Windows itself, in System32 on every supported version: each named
/// as the DLL of a Win32 function by Microsoft's API reference (learn.microsoft.com, the
/// function's "Requirements" table), which torch's or its runtime's DLLs import.
///
/// Checked on 2026-12-02 against the reference's sources (the MicrosoftDocs/sdk-api
/// repository, `sdk-api-src/content/<header>/<page>.md`, whose front matter is that table):
/// each page's `req.dll` names the DLL, with two nuances. GetFileVersionInfoW's `req.dll` is
/// the API set `Api-ms-win-core-version-l1-1-0.dll` and its `api_location` lists `version.dll`
/// (with `Version.lib` as `req.lib`); EnumProcessModules' `req.dll` is `Kernel32.dll` on
/// Windows 7 and later and `Psapi.dll` when built with `PSAPI_VERSION=1` (a wrapper Windows
/// still ships).
pub const WINDOWS_COMPONENTS: &[(&str, &str)] = &[
    (
        "kernel32.dll",
        "win32/api/libloaderapi/nf-libloaderapi-loadlibraryexw",
    ),
    ("advapi32.dll", "win32/api/winreg/nf-winreg-regopenkeyexw"),
    ("user32.dll", "win32/api/winuser/nf-winuser-messageboxw"),
    ("ws2_32.dll", "win32/api/winsock/nf-winsock-wsastartup"),
    (
        "ole32.dll",
        "win32/api/combaseapi/nf-combaseapi-coinitializeex",
    ),
    (
        "oleaut32.dll",
        "win32/api/oleauto/nf-oleauto-sysallocstring",
    ),
    (
        "version.dll",
        "win32/api/winver/nf-winver-getfileversioninfow",
    ),
    ("dbghelp.dll", "win32/api/dbghelp/nf-dbghelp-symfromaddr"),
    ("imagehlp.dll", "win32/api/imagehlp/nf-imagehlp-mapandload"),
    ("psapi.dll", "win32/api/psapi/nf-psapi-enumprocessmodules"),
    (
        "iphlpapi.dll",
        "win32/api/iphlpapi/nf-iphlpapi-getadaptersaddresses",
    ),
    (
        "userenv.dll",
        "win32/api/userenv/nf-userenv-getuserprofiledirectoryw",
    ),
    (
        "wintrust.dll",
        "win32/api/wintrust/nf-wintrust-winverifytrust",
    ),
    ("dxgi.dll", "win32/api/dxgi/nf-dxgi-createdxgifactory"),
    ("d3d11.dll", "win32/api/d3d11/nf-d3d11-d3d11createdevice"),
];

/// Whether Windows itself ships this DLL ([`WINDOWS_COMPONENTS`]).
pub fn is_windows_component(name: &str) -> bool {
    WINDOWS_COMPONENTS
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case(name))
}

/// How a load searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// LoadLibraryW: the standard search order, PATH included.
    Standard,
    /// LoadLibraryExW with LOAD_LIBRARY_SEARCH_DEFAULT_DIRS, and with
    /// LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR when `dll_load_dir`.
    Flags { dll_load_dir: bool },
}

/// The machine a process runs on, as the loader needs it.
#[derive(Debug, Clone)]
pub struct LoaderEnv {
    /// The directory of the program (python.exe's).
    pub app_dir: WinPath,
    /// `%SystemRoot%`, e.g. `C:\Windows`.
    pub windows_dir: WinPath,
    pub current_dir: Option<WinPath>,
    /// PATH at the process's start, in order.
    pub path: Vec<WinPath>,
    /// The KnownDLLs (lower-case names): the registry's list under
    /// `HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\KnownDLLs`, when it is known.
    pub known_dlls: BTreeSet<String>,
    /// The process's machine (x64 for a 64-bit Python).
    pub machine: Machine,
}

impl LoaderEnv {
    pub fn system32(&self) -> WinPath {
        self.windows_dir.join("System32")
    }
}

/// A module mapped into the process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    pub path: WinPath,
    pub found: Found,
    /// The module whose import table named it (`None` for a module loaded by name or path).
    pub wanted_by: Option<WinPath>,
    /// The load (an index into [`Process::loads`]) that mapped it.
    pub load: usize,
    /// DLLs it delay-loads (resolved on first call, not at load).
    pub delay_loads: Vec<String>,
}

/// Why a load failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LoadFailure {
    /// No file of that name on the search path (126).
    NotFound {
        name: String,
        wanted_by: Option<WinPath>,
    },
    /// The module found does not export what the importer takes (127).
    MissingProcedures {
        dll: WinPath,
        names: Vec<String>,
        wanted_by: WinPath,
    },
    /// Not an image this process can map (193): another machine, or not a PE file.
    BadImage { path: WinPath, reason: String },
}

impl LoadFailure {
    pub fn win32_error(&self) -> u32 {
        match self {
            LoadFailure::NotFound { .. } => ERROR_MOD_NOT_FOUND,
            LoadFailure::MissingProcedures { .. } => ERROR_PROC_NOT_FOUND,
            LoadFailure::BadImage { .. } => ERROR_BAD_EXE_FORMAT,
        }
    }
}

/// One LoadLibrary call and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Load {
    /// What was asked for: a full path or a bare name.
    pub requested: String,
    pub mode: SearchMode,
    /// The module it returned, when it succeeded.
    pub module: Option<WinPath>,
    /// The first failure (the one the caller sees) and any later ones met on the way.
    pub failures: Vec<LoadFailure>,
    /// API-set names the load's modules import (the system resolves them).
    pub api_sets: Vec<String>,
}

impl Load {
    pub fn ok(&self) -> bool {
        self.failures.is_empty()
    }

    /// The Win32 error of a failed load.
    pub fn win32_error(&self) -> Option<u32> {
        self.failures.first().map(LoadFailure::win32_error)
    }
}

/// A process and the modules it has loaded.
pub struct Process<'a> {
    fs: &'a WinFs,
    pub env: LoaderEnv,
    /// AddDllDirectory's directories, in the order added.
    pub user_dirs: Vec<WinPath>,
    pub modules: Vec<Module>,
    pub loads: Vec<Load>,
    /// Exported names of each file read, by lower-case path.
    exports: HashMap<String, Option<HashSet<String>>>,
}

/// Names the loader resolves through the API set schema, not as files.
pub fn is_api_set(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("api-ms-win-") || n.starts_with("ext-ms-win-")
}

struct Parsed {
    imports: Vec<(String, Vec<ImportedSymbol>)>,
    delay: Vec<String>,
}

impl<'a> Process<'a> {
    pub fn new(fs: &'a WinFs, env: LoaderEnv) -> Process<'a> {
        Process {
            fs,
            env,
            user_dirs: Vec::new(),
            modules: Vec::new(),
            loads: Vec::new(),
            exports: HashMap::new(),
        }
    }

    /// `AddDllDirectory` (os.add_dll_directory). A directory that does not exist is refused, as
    /// Windows refuses it.
    pub fn add_dll_directory(&mut self, dir: WinPath) -> bool {
        if !self.fs.is_dir(&dir) {
            return false;
        }
        if !self.user_dirs.iter().any(|d| d.same_as(&dir)) {
            self.user_dirs.push(dir);
        }
        true
    }

    /// A module the process has before the loads emulated (the interpreter's own DLL), taken as
    /// loaded without being read.
    pub fn assume_loaded(&mut self, path: WinPath, found: Found) {
        if self.loaded(path.file_name()).is_none() {
            self.modules.push(Module {
                path,
                found,
                wanted_by: None,
                load: usize::MAX,
                delay_loads: Vec::new(),
            });
        }
    }

    /// The loaded module of this base name.
    pub fn loaded(&self, name: &str) -> Option<&Module> {
        self.modules
            .iter()
            .find(|m| m.path.file_name().eq_ignore_ascii_case(name))
    }

    /// `LoadLibraryW(requested)` or `LoadLibraryExW(requested, flags)`: a full path or a bare
    /// name. Returns the load's index in [`Process::loads`].
    pub fn load_library(&mut self, requested: &str, mode: SearchMode) -> usize {
        let index = self.loads.len();
        let before = self.modules.len();
        let mut load = Load {
            requested: requested.to_string(),
            mode,
            module: None,
            failures: Vec::new(),
            api_sets: Vec::new(),
        };
        let req = WinPath::new(requested);
        let top = if req.is_absolute() {
            if let Some(m) = self.modules.iter().find(|m| m.path.same_as(&req)) {
                Ok(m.path.clone())
            } else if self.fs.is_file(&req) {
                let dir = req.parent();
                self.map(
                    req.clone(),
                    Found::FullPath,
                    None,
                    index,
                    mode,
                    dir.as_ref(),
                    &mut load,
                )
            } else {
                Err(LoadFailure::NotFound {
                    name: requested.to_string(),
                    wanted_by: None,
                })
            }
        } else {
            // LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR needs a full path; a bare name has no such dir.
            self.resolve_and_map(requested, None, index, mode, None, &mut load)
        };
        match top {
            Ok(path) => load.module = Some(path),
            Err(f) => load.failures.insert(0, f),
        }
        if !load.failures.is_empty() {
            // A failed load maps nothing.
            self.modules.truncate(before);
            load.module = None;
        }
        load.api_sets.sort();
        load.api_sets.dedup();
        self.loads.push(load);
        index
    }

    /// Searches for `name` and maps it with its dependencies.
    fn resolve_and_map(
        &mut self,
        name: &str,
        wanted_by: Option<&WinPath>,
        load: usize,
        mode: SearchMode,
        dll_load_dir: Option<&WinPath>,
        out: &mut Load,
    ) -> Result<WinPath, LoadFailure> {
        if let Some(m) = self.loaded(name) {
            return Ok(m.path.clone());
        }
        let Some((path, found)) = self.search(name, mode, dll_load_dir) else {
            return Err(LoadFailure::NotFound {
                name: name.to_string(),
                wanted_by: wanted_by.cloned(),
            });
        };
        self.map(
            path,
            found,
            wanted_by.cloned(),
            load,
            mode,
            dll_load_dir,
            out,
        )
    }

    /// Where the search finds `name` now, without loading it.
    pub fn search(
        &self,
        name: &str,
        mode: SearchMode,
        dll_load_dir: Option<&WinPath>,
    ) -> Option<(WinPath, Found)> {
        let lower = name.to_ascii_lowercase();
        let sys32 = self.env.system32();
        if self.env.known_dlls.contains(&lower) {
            return self.fs.file_in(&sys32, name).map(|p| (p, Found::KnownDll));
        }
        let mut dirs: Vec<(WinPath, Found)> = Vec::new();
        match mode {
            SearchMode::Flags {
                dll_load_dir: with_dir,
            } => {
                if let (true, Some(d)) = (with_dir, dll_load_dir) {
                    dirs.push((d.clone(), Found::DllLoadDir));
                }
                dirs.push((self.env.app_dir.clone(), Found::AppDir));
                dirs.extend(self.user_dirs.iter().map(|d| (d.clone(), Found::UserDir)));
                dirs.push((sys32, Found::System32));
            }
            SearchMode::Standard => {
                dirs.push((self.env.app_dir.clone(), Found::AppDir));
                dirs.push((sys32, Found::System32));
                dirs.push((self.env.windows_dir.join("System"), Found::SystemDir16));
                dirs.push((self.env.windows_dir.clone(), Found::WindowsDir));
                if let Some(cwd) = &self.env.current_dir {
                    dirs.push((cwd.clone(), Found::CurrentDir));
                }
                dirs.extend(self.env.path.iter().map(|d| (d.clone(), Found::Path)));
            }
        }
        dirs.into_iter()
            .find_map(|(dir, found)| self.fs.file_in(&dir, name).map(|p| (p, found)))
            .or_else(|| {
                is_windows_component(name)
                    .then(|| (self.env.system32().join(&lower), Found::WindowsComponent))
            })
    }

    /// Maps one file and, depth first in import order, what it imports.
    #[allow(clippy::too_many_arguments)]
    fn map(
        &mut self,
        path: WinPath,
        found: Found,
        wanted_by: Option<WinPath>,
        load: usize,
        mode: SearchMode,
        dll_load_dir: Option<&WinPath>,
        out: &mut Load,
    ) -> Result<WinPath, LoadFailure> {
        let parsed = if found == Found::WindowsComponent && !self.fs.is_file(&path) {
            // Part of Windows, not in the tree read: its imports and exports are the system's.
            Parsed {
                imports: Vec::new(),
                delay: Vec::new(),
            }
        } else {
            self.read_imports(&path)?
        };
        self.modules.push(Module {
            path: path.clone(),
            found,
            wanted_by,
            load,
            delay_loads: parsed.delay,
        });
        for (dll, symbols) in parsed.imports {
            if is_api_set(&dll) {
                out.api_sets.push(dll.to_ascii_lowercase());
                continue;
            }
            let dep = self.resolve_and_map(&dll, Some(&path), load, mode, dll_load_dir, out)?;
            let missing = self.missing_procedures(&dep, &symbols);
            if !missing.is_empty() {
                return Err(LoadFailure::MissingProcedures {
                    dll: dep,
                    names: missing,
                    wanted_by: path,
                });
            }
        }
        Ok(path)
    }

    fn read_imports(&mut self, path: &WinPath) -> Result<Parsed, LoadFailure> {
        let bad = |reason: String| LoadFailure::BadImage {
            path: path.clone(),
            reason,
        };
        let host = self
            .fs
            .host_path(path)
            .ok_or_else(|| bad("cannot be opened".into()))?;
        let src = FileSource::open(&host).map_err(|e| bad(e.to_string()))?;
        let pe = PeFile::parse(src).map_err(|e| bad(e.to_string()))?;
        if pe.machine() != self.env.machine {
            return Err(bad(format!(
                "a {} image in a {} process",
                pe.machine().name(),
                self.env.machine.name()
            )));
        }
        let imports = pe.imports().map_err(|e| bad(e.to_string()))?;
        let delay = pe
            .delay_imports()
            .map(|d| d.into_iter().map(|i| i.dll).collect())
            .unwrap_or_default();
        let key = path.as_str().to_ascii_lowercase();
        self.exports.entry(key).or_insert_with(|| {
            pe.exports()
                .ok()
                .map(|e| e.symbols.into_iter().filter_map(|s| s.name).collect())
        });
        Ok(Parsed {
            imports: imports.into_iter().map(|i| (i.dll, i.symbols)).collect(),
            delay,
        })
    }

    /// The names `symbols` takes from `dll` that it does not export. Ordinal imports are not
    /// checked (a DLL's ordinals are not names a user could act on).
    fn missing_procedures(&self, dll: &WinPath, symbols: &[ImportedSymbol]) -> Vec<String> {
        let Some(Some(exported)) = self.exports.get(&dll.as_str().to_ascii_lowercase()) else {
            return Vec::new();
        };
        symbols
            .iter()
            .filter_map(|s| match s {
                ImportedSymbol::Name { name, .. } if !exported.contains(name) => Some(name.clone()),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree with lld-linked DLLs of tests/fixtures/windows/delayload: plainuser.dll imports
    /// dep.dll (dep_answer by name, ordinal 7), placed where each test says.
    struct Tree {
        root: PathBuf,
    }

    use std::path::{Path, PathBuf};

    impl Tree {
        fn new(name: &str) -> Tree {
            let root =
                std::env::temp_dir().join(format!("cudoctor-loader-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(root.join("C/Windows/System32")).unwrap();
            Tree { root }
        }

        fn put(&self, fixture: &str, at: &str) {
            let src = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/windows/delayload")
                .join(fixture);
            let dst = self.root.join("C").join(at.replace('\\', "/"));
            std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
            std::fs::copy(src, dst).unwrap();
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    fn env(path: &[&str]) -> LoaderEnv {
        LoaderEnv {
            app_dir: WinPath::new(r"C:\app"),
            windows_dir: WinPath::new(r"C:\Windows"),
            current_dir: None,
            path: path.iter().map(|p| WinPath::new(p)).collect(),
            known_dlls: BTreeSet::new(),
            machine: Machine::X64,
        }
    }

    const FLAGS: SearchMode = SearchMode::Flags { dll_load_dir: true };

    #[test]
    fn the_flagged_search_takes_the_dll_dir_then_app_user_dirs_and_system32_never_path() {
        let t = Tree::new("flags");
        t.put("plainuser.dll", r"lib\plainuser.dll");
        t.put("dep.dll", r"elsewhere\dep.dll");
        let fs = WinFs::rooted(&t.root);
        let mut p = Process::new(&fs, env(&[r"C:\elsewhere"]));
        let i = p.load_library(r"C:\lib\plainuser.dll", FLAGS);
        assert_eq!(
            p.loads[i].win32_error(),
            Some(ERROR_MOD_NOT_FOUND),
            "PATH is not searched"
        );
        assert!(p.modules.is_empty(), "a failed load maps nothing");
        // A user directory is; the DLL's own directory comes before it.
        assert!(p.add_dll_directory(WinPath::new(r"C:\elsewhere")));
        assert!(!p.add_dll_directory(WinPath::new(r"C:\missing")));
        let i = p.load_library(r"C:\lib\plainuser.dll", FLAGS);
        assert!(p.loads[i].ok(), "{:?}", p.loads[i]);
        assert_eq!(p.loaded("DEP.DLL").unwrap().found, Found::UserDir);
        t.put("dep.dll", r"lib\dep.dll");
        let mut p = Process::new(&fs, env(&[]));
        p.add_dll_directory(WinPath::new(r"C:\elsewhere"));
        p.load_library(r"C:\lib\plainuser.dll", FLAGS);
        assert_eq!(p.loaded("dep.dll").unwrap().found, Found::DllLoadDir);
        // Already loaded: a later load of another copy's importer takes the loaded one.
        assert_eq!(
            p.loaded("dep.dll").unwrap().path,
            WinPath::new(r"C:\lib\dep.dll")
        );
    }

    #[test]
    fn the_standard_search_takes_the_app_dir_system32_then_path() {
        let t = Tree::new("standard");
        t.put("plainuser.dll", r"lib\plainuser.dll");
        t.put("dep.dll", r"onpath\dep.dll");
        let fs = WinFs::rooted(&t.root);
        let mut p = Process::new(&fs, env(&[r"C:\nothing", r"C:\onpath"]));
        p.load_library(r"C:\lib\plainuser.dll", SearchMode::Standard);
        assert_eq!(p.loaded("dep.dll").unwrap().found, Found::Path);
        t.put("dep.dll", r"Windows\System32\dep.dll");
        let mut p = Process::new(&fs, env(&[r"C:\onpath"]));
        p.load_library(r"C:\lib\plainuser.dll", SearchMode::Standard);
        assert_eq!(p.loaded("dep.dll").unwrap().found, Found::System32);
        t.put("dep.dll", r"app\dep.dll");
        let mut p = Process::new(&fs, env(&[r"C:\onpath"]));
        p.load_library(r"C:\lib\plainuser.dll", SearchMode::Standard);
        assert_eq!(p.loaded("dep.dll").unwrap().found, Found::AppDir);
    }

    #[test]
    fn a_dll_without_the_imported_name_fails_with_127_and_a_known_dll_comes_from_system32() {
        let t = Tree::new("procs");
        t.put("plainuser.dll", r"lib\plainuser.dll");
        // A dep.dll that exports only user_entry.
        t.put("delayuser.dll", r"lib\dep.dll");
        let fs = WinFs::rooted(&t.root);
        let mut p = Process::new(&fs, env(&[]));
        let i = p.load_library(r"C:\lib\plainuser.dll", FLAGS);
        assert_eq!(p.loads[i].win32_error(), Some(ERROR_PROC_NOT_FOUND));
        assert_eq!(
            p.loads[i].failures[0],
            LoadFailure::MissingProcedures {
                dll: WinPath::new(r"C:\lib\dep.dll"),
                names: vec!["dep_answer".into()],
                wanted_by: WinPath::new(r"C:\lib\plainuser.dll"),
            }
        );
        // A KnownDLL is System32's, whatever the DLL's own directory holds.
        t.put("dep.dll", r"Windows\System32\dep.dll");
        let mut e = env(&[]);
        e.known_dlls.insert("dep.dll".into());
        let mut p = Process::new(&fs, e);
        let i = p.load_library(r"C:\lib\plainuser.dll", FLAGS);
        assert!(p.loads[i].ok(), "{:?}", p.loads[i]);
        assert_eq!(p.loaded("dep.dll").unwrap().found, Found::KnownDll);
    }

    #[test]
    fn a_dll_for_another_machine_or_not_pe_is_a_bad_image() {
        let t = Tree::new("bad");
        t.put("plainuser.dll", r"lib\plainuser.dll");
        std::fs::write(t.root.join("C/lib/dep.dll"), b"not a PE file").unwrap();
        let fs = WinFs::rooted(&t.root);
        let mut p = Process::new(&fs, env(&[]));
        let i = p.load_library(r"C:\lib\plainuser.dll", FLAGS);
        assert_eq!(p.loads[i].win32_error(), Some(ERROR_BAD_EXE_FORMAT));
        let mut e = env(&[]);
        e.machine = Machine::Arm64;
        let mut p = Process::new(&fs, e);
        let i = p.load_library(r"C:\lib\plainuser.dll", FLAGS);
        assert!(
            matches!(&p.loads[i].failures[0], LoadFailure::BadImage { reason, .. } if reason.contains("x64 image in a ARM64")),
            "{:?}",
            p.loads[i]
        );
        // An API set is the system's; a Windows component absent from the tree is assumed.
        assert!(is_api_set("api-ms-win-crt-runtime-l1-1-0.dll"));
        assert!(is_windows_component("KERNEL32.dll"));
        assert!(!is_windows_component("msvcp140.dll"));
    }
}
