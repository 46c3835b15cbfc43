//! The registry of the live Windows machine, read and never written: the Pythons registered as
//! PEP 514 says (those the py launcher lists, `py --list-paths`) and the KnownDLLs. A Windows
//! tree under `--root` keeps its registry in hive files, which are not read: there both stay
//! unknown (no Python is found that way, and the loader's KnownDLLs list is `None`).
//!
//! The walk over the keys is written against [`RegistryView`], so that what is taken from them
//! is tested here on any machine; the live view (advapi32's `RegOpenKeyExW`, `RegEnumKeyExW`,
//! `RegEnumValueW`, `RegQueryValueExW`) exists in the Windows build only and is tested under
//! Wine (scripts/ci/windows.sh), against what Wine's `reg.exe` wrote.

use std::collections::BTreeSet;

use cudoctor_pe::winfs::WinPath;

use crate::host::Host;

/// The two roots PEP 514 registers Pythons under (the 64-bit view of each; a 32-bit Python,
/// under `Wow6432Node`, runs no torch wheel: torch ships none for win32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hive {
    CurrentUser,
    LocalMachine,
}

impl Hive {
    pub fn abbreviation(self) -> &'static str {
        match self {
            Hive::CurrentUser => "HKCU",
            Hive::LocalMachine => "HKLM",
        }
    }
}

/// What the walk needs of a registry: a key's subkeys and its string values (`None` as the
/// name is the key's default value), each `None`/empty where the key does not exist.
pub trait RegistryView {
    fn subkeys(&self, hive: Hive, key: &str) -> Vec<String>;
    fn string(&self, hive: Hive, key: &str, name: Option<&str>) -> Option<String>;
    /// Every string value of the key: (name, data).
    fn strings(&self, hive: Hive, key: &str) -> Vec<(String, String)>;
}

/// One Python registered under `<hive>\Software\Python\<Company>\<Tag>` (PEP 514).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredPython {
    pub hive: Hive,
    pub company: String,
    pub tag: String,
    /// `InstallPath`'s default value: the installation's directory.
    pub install_path: Option<String>,
    /// `InstallPath\ExecutablePath`: the interpreter, where the installer wrote it.
    pub executable_path: Option<String>,
}

impl RegisteredPython {
    /// The interpreter: `ExecutablePath`, else `python.exe` in `InstallPath` (PEP 514: "if
    /// omitted, python.exe in InstallPath").
    pub fn interpreter(&self) -> Option<WinPath> {
        if let Some(e) = self.executable_path.as_deref().filter(|e| !e.is_empty()) {
            return Some(WinPath::new(e));
        }
        let dir = self.install_path.as_deref().filter(|d| !d.is_empty())?;
        Some(WinPath::new(dir).join("python.exe"))
    }

    /// `HKCU\Software\Python\PythonCore\3.12`, for the evidence.
    pub fn key(&self) -> String {
        format!(
            r"{}\{PYTHON_KEY}\{}\{}",
            self.hive.abbreviation(),
            self.company,
            self.tag
        )
    }
}

const PYTHON_KEY: &str = r"Software\Python";
/// PEP 514: "the PyLauncher key is reserved for the launcher", no installation.
const LAUNCHER_COMPANY: &str = "PyLauncher";
const KNOWN_DLLS_KEY: &str = r"SYSTEM\CurrentControlSet\Control\Session Manager\KnownDLLs";
/// Bounds on what one machine's registry may list (a registry is the user's, not hostile, but
/// a walk is never unbounded).
const MAX_COMPANIES: usize = 256;
const MAX_TAGS: usize = 256;

/// The Pythons of `registry`, as the py launcher finds them: HKCU's before HKLM's, each
/// company's tags in the registry's order.
pub fn registered_in(registry: &dyn RegistryView) -> Vec<RegisteredPython> {
    let mut out = Vec::new();
    for hive in [Hive::CurrentUser, Hive::LocalMachine] {
        for company in registry
            .subkeys(hive, PYTHON_KEY)
            .into_iter()
            .filter(|c| !c.eq_ignore_ascii_case(LAUNCHER_COMPANY))
            .take(MAX_COMPANIES)
        {
            let company_key = format!(r"{PYTHON_KEY}\{company}");
            for tag in registry
                .subkeys(hive, &company_key)
                .into_iter()
                .take(MAX_TAGS)
            {
                let install = format!(r"{company_key}\{tag}\InstallPath");
                out.push(RegisteredPython {
                    hive,
                    install_path: registry.string(hive, &install, None),
                    executable_path: registry.string(hive, &install, Some("ExecutablePath")),
                    company: company.clone(),
                    tag,
                });
            }
        }
    }
    out
}

/// The KnownDLLs of `registry` (lower-case file names): the data of the values of
/// `HKLM\...\Session Manager\KnownDLLs` that name a DLL (`DllDirectory` names System32 itself).
/// `None` when the key does not exist.
pub fn known_dlls_in(registry: &dyn RegistryView) -> Option<BTreeSet<String>> {
    let values = registry.strings(Hive::LocalMachine, KNOWN_DLLS_KEY);
    let exists = !values.is_empty()
        || registry
            .string(Hive::LocalMachine, KNOWN_DLLS_KEY, None)
            .is_some();
    exists.then(|| {
        values
            .into_iter()
            .filter(|(name, _)| !name.to_ascii_lowercase().starts_with("dlldirectory"))
            .map(|(_, data)| data.trim().to_ascii_lowercase())
            .filter(|d| d.ends_with(".dll"))
            .collect()
    })
}

/// The Pythons registered on `host`: the live Windows machine's; none on any other (a tree's
/// hives are not read).
pub fn registered_pythons(host: &Host) -> Vec<RegisteredPython> {
    #[cfg(windows)]
    if host.is_live_windows() {
        return registered_in(&live::Live);
    }
    let _ = host;
    Vec::new()
}

/// The KnownDLLs of `host`: the live Windows machine's; `None` (unknown) on any other.
pub fn known_dlls(host: &Host) -> Option<BTreeSet<String>> {
    #[cfg(windows)]
    if host.is_live_windows() {
        return known_dlls_in(&live::Live);
    }
    let _ = host;
    None
}

#[cfg(windows)]
mod live {
    //! advapi32's registry functions, read-only (`KEY_READ` of the 64-bit view).
    #![allow(unsafe_code)]

    use std::ffi::{c_void, OsStr, OsString};
    use std::os::windows::ffi::{OsStrExt, OsStringExt};

    use super::{Hive, RegistryView};

    type Hkey = *mut c_void;
    // The predefined keys are sign-extended 32-bit values: (HKEY)(ULONG_PTR)((LONG)0x80000001).
    const HKEY_CURRENT_USER: Hkey = 0x8000_0001_u32 as i32 as isize as Hkey;
    const HKEY_LOCAL_MACHINE: Hkey = 0x8000_0002_u32 as i32 as isize as Hkey;
    const KEY_READ: u32 = 0x2_0019;
    const KEY_WOW64_64KEY: u32 = 0x0100;
    const ERROR_SUCCESS: i32 = 0;
    const ERROR_MORE_DATA: i32 = 234;
    const REG_SZ: u32 = 1;
    const REG_EXPAND_SZ: u32 = 2;
    /// A key name has at most 255 characters; value names at most 16,383.
    const MAX_NAME: usize = 16_384;
    /// Bounds a value's data (a path of 32,767 UTF-16 units fits).
    const MAX_DATA: u32 = 1 << 17;
    const MAX_ITEMS: u32 = 4096;

    #[link(name = "advapi32")]
    extern "system" {
        fn RegOpenKeyExW(
            key: Hkey,
            subkey: *const u16,
            options: u32,
            sam: u32,
            result: *mut Hkey,
        ) -> i32;
        fn RegEnumKeyExW(
            key: Hkey,
            index: u32,
            name: *mut u16,
            name_len: *mut u32,
            reserved: *mut u32,
            class: *mut u16,
            class_len: *mut u32,
            last_write: *mut u64,
        ) -> i32;
        fn RegEnumValueW(
            key: Hkey,
            index: u32,
            name: *mut u16,
            name_len: *mut u32,
            reserved: *mut u32,
            kind: *mut u32,
            data: *mut u8,
            data_len: *mut u32,
        ) -> i32;
        fn RegQueryValueExW(
            key: Hkey,
            name: *const u16,
            reserved: *mut u32,
            kind: *mut u32,
            data: *mut u8,
            data_len: *mut u32,
        ) -> i32;
        fn RegCloseKey(key: Hkey) -> i32;
    }
    #[link(name = "kernel32")]
    extern "system" {
        fn ExpandEnvironmentStringsW(src: *const u16, dst: *mut u16, size: u32) -> u32;
    }

    pub struct Live;

    /// An open key, closed when dropped.
    struct Key(Hkey);

    impl Drop for Key {
        fn drop(&mut self) {
            // SAFETY: the handle was opened by RegOpenKeyExW and is closed once.
            unsafe { RegCloseKey(self.0) };
        }
    }

    fn wide(s: &str) -> Vec<u16> {
        OsStr::new(s).encode_wide().chain(Some(0)).collect()
    }

    fn text(units: &[u16]) -> String {
        let end = units.iter().position(|&u| u == 0).unwrap_or(units.len());
        OsString::from_wide(&units[..end])
            .to_string_lossy()
            .into_owned()
    }

    fn open(hive: Hive, path: &str) -> Option<Key> {
        let root = match hive {
            Hive::CurrentUser => HKEY_CURRENT_USER,
            Hive::LocalMachine => HKEY_LOCAL_MACHINE,
        };
        let path = wide(path);
        let mut key: Hkey = std::ptr::null_mut();
        // SAFETY: path is NUL-terminated UTF-16; key receives the handle on success only.
        let rc =
            unsafe { RegOpenKeyExW(root, path.as_ptr(), 0, KEY_READ | KEY_WOW64_64KEY, &mut key) };
        (rc == ERROR_SUCCESS).then_some(Key(key))
    }

    /// A string value's data as text: REG_SZ as it is, REG_EXPAND_SZ with its variables
    /// expanded as Windows does; any other kind is no string.
    fn string_data(kind: u32, data: &[u8]) -> Option<String> {
        if kind != REG_SZ && kind != REG_EXPAND_SZ {
            return None;
        }
        let units: Vec<u16> = data
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        let s = text(&units);
        if kind == REG_SZ {
            return Some(s);
        }
        let src = wide(&s);
        let mut dst = vec![0u16; 32_768];
        // SAFETY: src is NUL-terminated; dst has the size given.
        let n =
            unsafe { ExpandEnvironmentStringsW(src.as_ptr(), dst.as_mut_ptr(), dst.len() as u32) };
        if n == 0 || n as usize > dst.len() {
            return Some(s);
        }
        Some(text(&dst[..n as usize]))
    }

    impl RegistryView for Live {
        fn subkeys(&self, hive: Hive, path: &str) -> Vec<String> {
            let Some(key) = open(hive, path) else {
                return Vec::new();
            };
            let mut out = Vec::new();
            let mut name = vec![0u16; 256];
            for index in 0..MAX_ITEMS {
                let mut len = name.len() as u32;
                // SAFETY: name has len units; the optional outputs are null.
                let rc = unsafe {
                    RegEnumKeyExW(
                        key.0,
                        index,
                        name.as_mut_ptr(),
                        &mut len,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                    )
                };
                if rc != ERROR_SUCCESS {
                    break;
                }
                out.push(text(&name[..(len as usize).min(name.len())]));
            }
            out
        }

        fn string(&self, hive: Hive, path: &str, value: Option<&str>) -> Option<String> {
            let key = open(hive, path)?;
            let name = value.map(wide);
            let name_ptr = name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr());
            let mut size: u32 = 1024;
            loop {
                let mut data = vec![0u8; size as usize];
                let mut kind = 0u32;
                let mut len = size;
                // SAFETY: data has len bytes; name is NUL-terminated or null (the default value).
                let rc = unsafe {
                    RegQueryValueExW(
                        key.0,
                        name_ptr,
                        std::ptr::null_mut(),
                        &mut kind,
                        data.as_mut_ptr(),
                        &mut len,
                    )
                };
                match rc {
                    ERROR_SUCCESS => {
                        return string_data(kind, &data[..(len as usize).min(data.len())])
                    }
                    ERROR_MORE_DATA if len > size && len <= MAX_DATA => size = len,
                    _ => return None,
                }
            }
        }

        fn strings(&self, hive: Hive, path: &str) -> Vec<(String, String)> {
            let Some(key) = open(hive, path) else {
                return Vec::new();
            };
            let mut out = Vec::new();
            let mut name = vec![0u16; MAX_NAME];
            let mut data = vec![0u8; MAX_DATA as usize];
            for index in 0..MAX_ITEMS {
                let mut name_len = name.len() as u32;
                let mut data_len = data.len() as u32;
                let mut kind = 0u32;
                // SAFETY: name and data have the lengths given.
                let rc = unsafe {
                    RegEnumValueW(
                        key.0,
                        index,
                        name.as_mut_ptr(),
                        &mut name_len,
                        std::ptr::null_mut(),
                        &mut kind,
                        data.as_mut_ptr(),
                        &mut data_len,
                    )
                };
                if rc == ERROR_MORE_DATA {
                    continue; // a value larger than any path: not a DLL's name
                }
                if rc != ERROR_SUCCESS {
                    break;
                }
                let n = text(&name[..(name_len as usize).min(name.len())]);
                if let Some(d) = string_data(kind, &data[..(data_len as usize).min(data.len())]) {
                    out.push((n, d));
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A registry as a map of (hive, key) to its values, subkeys derived from the key paths;
    /// key names keep their case and match without it, as the registry's do.
    #[derive(Default)]
    struct Map(BTreeMap<(u8, String), Vec<Value>>);

    /// A value: its name (`None`: the key's default value) and its data.
    type Value = (Option<String>, String);

    fn id(h: Hive) -> u8 {
        h as u8
    }

    impl Map {
        fn set(&mut self, h: Hive, key: &str, name: Option<&str>, data: &str) {
            self.0
                .entry((id(h), key.to_string()))
                .or_default()
                .push((name.map(str::to_string), data.to_string()));
        }
        fn values(&self, h: Hive, key: &str) -> &[Value] {
            self.0
                .iter()
                .find(|((hive, k), _)| *hive == id(h) && k.eq_ignore_ascii_case(key))
                .map_or(&[], |(_, v)| v.as_slice())
        }
    }

    impl RegistryView for Map {
        fn subkeys(&self, h: Hive, key: &str) -> Vec<String> {
            let prefix = format!("{}\\", key.to_ascii_lowercase());
            let mut out: Vec<String> = Vec::new();
            for (hive, k) in self.0.keys() {
                if *hive != id(h) || !k.to_ascii_lowercase().starts_with(&prefix) {
                    continue;
                }
                if let Some(rest) = k.get(prefix.len()..) {
                    let first = rest.split('\\').next().unwrap_or_default().to_string();
                    if !out.contains(&first) {
                        out.push(first);
                    }
                }
            }
            out
        }
        fn string(&self, h: Hive, key: &str, name: Option<&str>) -> Option<String> {
            self.values(h, key)
                .iter()
                .find(|(n, _)| n.as_deref() == name)
                .map(|(_, d)| d.clone())
        }
        fn strings(&self, h: Hive, key: &str) -> Vec<(String, String)> {
            self.values(h, key)
                .iter()
                .filter_map(|(n, d)| Some((n.clone()?, d.clone())))
                .collect()
        }
    }

    #[test]
    fn pythons_are_read_as_pep_514_registers_them() {
        let mut r = Map::default();
        // python.org's installer for the user: InstallPath and ExecutablePath.
        let core = r"Software\Python\PythonCore\3.12\InstallPath";
        r.set(
            Hive::CurrentUser,
            core,
            None,
            r"C:\Users\Me\AppData\Local\Programs\Python\Python312\",
        );
        r.set(
            Hive::CurrentUser,
            core,
            Some("ExecutablePath"),
            r"C:\Users\Me\AppData\Local\Programs\Python\Python312\python.exe",
        );
        // Another company's Python with InstallPath only: python.exe in it.
        r.set(
            Hive::LocalMachine,
            r"Software\Python\ContinuumAnalytics\Anaconda39-64\InstallPath",
            None,
            r"C:\ProgramData\Anaconda3\",
        );
        // The launcher's own key is no installation.
        r.set(
            Hive::LocalMachine,
            r"Software\Python\PyLauncher",
            Some("InstallDir"),
            r"C:\Windows",
        );
        // A tag without InstallPath names no interpreter.
        r.set(
            Hive::LocalMachine,
            r"Software\Python\PythonCore\3.9\Help",
            None,
            "x",
        );
        let found = registered_in(&r);
        let interpreters: Vec<Option<String>> = found
            .iter()
            .map(|p| p.interpreter().map(|i| i.to_string()))
            .collect();
        assert_eq!(
            interpreters,
            [
                Some(r"C:\Users\Me\AppData\Local\Programs\Python\Python312\python.exe".into()),
                Some(r"C:\ProgramData\Anaconda3\python.exe".into()),
                None,
            ]
        );
        assert_eq!(found[0].key(), r"HKCU\Software\Python\PythonCore\3.12");
        assert_eq!(found[1].company, "ContinuumAnalytics");
        assert_eq!(found[1].tag, "Anaconda39-64");
    }

    #[test]
    fn known_dlls_are_the_dll_names_of_the_key_and_unknown_without_it() {
        let mut r = Map::default();
        assert_eq!(known_dlls_in(&r), None);
        r.set(
            Hive::LocalMachine,
            KNOWN_DLLS_KEY,
            Some("kernel32"),
            "kernel32.dll",
        );
        r.set(
            Hive::LocalMachine,
            KNOWN_DLLS_KEY,
            Some("_wow64cpu"),
            "WOW64CPU.DLL",
        );
        r.set(
            Hive::LocalMachine,
            KNOWN_DLLS_KEY,
            Some("DllDirectory"),
            r"%SystemRoot%\system32",
        );
        let known = known_dlls_in(&r).unwrap_or_default();
        assert_eq!(
            known.into_iter().collect::<Vec<_>>(),
            ["kernel32.dll", "wow64cpu.dll"]
        );
    }

    #[test]
    fn no_registry_is_read_off_the_live_windows_machine() {
        // A Windows tree: its hives are files, not read.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(dir.path().join("C/Windows/System32"))
            .unwrap_or_else(|e| panic!("{e}"));
        let host = Host::rooted(
            dir.path().to_path_buf(),
            Default::default(),
            std::time::Duration::from_secs(5),
        );
        assert!(host.is_windows());
        assert!(registered_pythons(&host).is_empty());
        assert_eq!(known_dlls(&host), None);
    }
}
