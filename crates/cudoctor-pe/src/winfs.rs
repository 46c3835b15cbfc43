//! Windows paths and the files they name: on the live Windows machine the paths themselves, or a
//! Windows tree laid out under a directory of another machine (`--root`): `<root>/C/Windows/...`
//! stands for `C:\Windows\...`. NTFS compares names without case by default, so a component that
//! is not found as spelled is looked up among its directory's names without case.

use std::path::{Path, PathBuf};

use cudoctor_ldso::rootfs::RootFs;

/// A Windows path as the loader sees it: `C:\dir\name.dll`, backslashes, no trailing one.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct WinPath(String);

impl WinPath {
    /// `C:/a\b/` or `c:\a\b` → `C:\a\b`. Relative paths stay relative.
    pub fn new(path: &str) -> WinPath {
        let mut p = path.replace('/', "\\");
        while p.len() > 3 && p.ends_with('\\') {
            p.pop();
        }
        let mut chars: Vec<char> = p.chars().collect();
        if chars.len() >= 2 && chars[1] == ':' {
            chars[0] = chars[0].to_ascii_uppercase();
        }
        WinPath(chars.into_iter().collect())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `dir\name`.
    pub fn join(&self, name: &str) -> WinPath {
        if self.0.ends_with('\\') {
            WinPath::new(&format!("{}{name}", self.0))
        } else {
            WinPath::new(&format!("{}\\{name}", self.0))
        }
    }

    /// The directory holding this file (`C:\a\b.dll` → `C:\a`).
    pub fn parent(&self) -> Option<WinPath> {
        let (dir, _) = self.0.rsplit_once('\\')?;
        if dir.len() == 2 && dir.ends_with(':') {
            return Some(WinPath(format!("{dir}\\")));
        }
        Some(WinPath(dir.to_string()))
    }

    /// The last component.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('\\').next().unwrap_or(&self.0)
    }

    /// A drive-absolute path (`C:\...`).
    pub fn is_absolute(&self) -> bool {
        let b = self.0.as_bytes();
        b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'\\'
    }

    /// Whether `self` is `dir` or lies below it, compared without case.
    pub fn is_within(&self, dir: &WinPath) -> bool {
        let (a, d) = (self.0.to_ascii_lowercase(), dir.0.to_ascii_lowercase());
        a == d || a.starts_with(&format!("{}\\", d.trim_end_matches('\\')))
    }

    /// The same path, compared as Windows compares it.
    pub fn same_as(&self, other: &WinPath) -> bool {
        self.0.eq_ignore_ascii_case(&other.0)
    }
}

impl std::fmt::Display for WinPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where Windows paths are read.
#[derive(Debug, Clone)]
pub struct WinFs {
    /// The directory standing for the machine (drive `C:` is `<root>/C`); `None` on the live
    /// Windows machine.
    root: Option<PathBuf>,
}

impl WinFs {
    /// The live machine: paths are opened as they are.
    pub fn live() -> WinFs {
        WinFs { root: None }
    }

    /// A Windows tree under `root` (`<root>/C/Windows/System32`).
    pub fn rooted(root: impl Into<PathBuf>) -> WinFs {
        WinFs {
            root: Some(root.into()),
        }
    }

    /// The file of a Windows path, if it exists (components matched without case). In a tree,
    /// every symlink is followed inside the tree, as `--root` confines Linux paths (one
    /// resolver for both: cudoctor-ldso's `RootFs`), and `..` never climbs above the drive.
    pub fn host_path(&self, path: &WinPath) -> Option<PathBuf> {
        let Some(root) = &self.root else {
            let p = PathBuf::from(path.as_str());
            return p.exists().then_some(p);
        };
        if !path.is_absolute() {
            return None;
        }
        let s = path.as_str();
        let drive = s.get(..1)?.to_ascii_uppercase();
        let mut comps: Vec<&str> = Vec::new();
        for comp in s.get(3..)?.split('\\').filter(|c| !c.is_empty()) {
            match comp {
                "." => {}
                ".." => {
                    comps.pop();
                }
                c => comps.push(c),
            }
        }
        let tree = RootFs::new(root);
        // As spelled (nearly every path a program names): one confined walk.
        let mut machine = format!("/{drive}");
        for c in &comps {
            machine.push('/');
            machine.push_str(c);
        }
        if let Ok(p) = tree.resolve(&machine) {
            return Some(p);
        }
        // Else component by component, each name looked up without case in its directory as
        // the tree resolves it.
        let mut machine = format!("/{}", name_without_case(root, &drive)?);
        for c in &comps {
            let dir = tree.resolve(&machine).ok()?;
            let name = if std::fs::symlink_metadata(dir.join(c)).is_ok() {
                (*c).to_string()
            } else {
                name_without_case(&dir, c)?
            };
            machine.push('/');
            machine.push_str(&name);
        }
        tree.resolve(&machine).ok()
    }

    /// Whether the path names a regular file.
    pub fn is_file(&self, path: &WinPath) -> bool {
        self.host_path(path).is_some_and(|p| p.is_file())
    }

    pub fn is_dir(&self, path: &WinPath) -> bool {
        self.host_path(path).is_some_and(|p| p.is_dir())
    }

    /// The names in a directory, sorted as NTFS lists them (by name, without case).
    pub fn list(&self, dir: &WinPath) -> Vec<String> {
        let Some(host) = self.host_path(dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = std::fs::read_dir(host)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        names.sort_by_key(|n| n.to_ascii_uppercase());
        names
    }

    /// The real file under a directory named without case (`name` as the loader asks for it).
    pub fn file_in(&self, dir: &WinPath, name: &str) -> Option<WinPath> {
        let path = dir.join(name);
        let host = self.host_path(&path)?;
        if !host.is_file() {
            return None;
        }
        // The name as the directory spells it.
        let spelled = host
            .file_name()
            .and_then(|n| n.to_str())
            .map_or_else(|| name.to_string(), str::to_string);
        Some(dir.join(&spelled))
    }
}

/// The name in `dir` that is `name` compared without case.
fn name_without_case(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .find(|n| n.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_and_compared_without_case() {
        let p = WinPath::new("c:/Users/Me/ComfyUI/python_embeded/");
        assert_eq!(p.as_str(), r"C:\Users\Me\ComfyUI\python_embeded");
        assert_eq!(p.file_name(), "python_embeded");
        assert_eq!(p.parent().unwrap().as_str(), r"C:\Users\Me\ComfyUI");
        assert_eq!(WinPath::new(r"C:\x.dll").parent().unwrap().as_str(), r"C:\");
        assert!(WinPath::new(r"C:\USERS\me\comfyui\Python_Embeded\x.dll").is_within(&p));
        assert!(!WinPath::new(r"C:\Users\Me\ComfyUI2\x.dll").is_within(&p));
        assert!(p.is_absolute());
        assert!(!WinPath::new("torch\\lib").is_absolute());
    }

    #[test]
    fn a_rooted_tree_is_read_without_case_and_never_above_its_drive() {
        let dir = std::env::temp_dir().join(format!("cudoctor-winfs-{}", std::process::id()));
        let sys = dir.join("C/Windows/System32");
        std::fs::create_dir_all(&sys).unwrap();
        std::fs::write(sys.join("msvcp140.dll"), b"MZ").unwrap();
        let fs = WinFs::rooted(&dir);
        let sys32 = WinPath::new(r"c:\WINDOWS\system32");
        assert!(fs.is_dir(&sys32));
        // The directory's spelling where names are matched here; a host that itself ignores
        // case (Windows) keeps the spelling asked for.
        let found = fs.file_in(&sys32, "MSVCP140.dll").unwrap();
        assert!(found.same_as(&WinPath::new(r"C:\WINDOWS\system32\msvcp140.dll")));
        if cfg!(unix) {
            assert_eq!(found.as_str(), r"C:\WINDOWS\system32\msvcp140.dll");
        }
        assert!(fs.file_in(&sys32, "vcruntime140.dll").is_none());
        assert!(fs.host_path(&WinPath::new(r"C:\..\..\etc")).is_none());
        assert!(fs.host_path(&WinPath::new("relative\\x")).is_none());
        assert_eq!(fs.list(&sys32), vec!["msvcp140.dll".to_string()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_trees_symlinks_are_followed_inside_the_tree() {
        use std::os::unix::fs::symlink;
        let dir = std::env::temp_dir().join(format!("cudoctor-winfs-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let real = dir.join("C/Shared/torch/lib");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(real.join("c10.dll"), b"MZ").unwrap();
        let site = dir.join("C/Py/Lib/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        // An absolute link means the tree's own root; a relative one its directory.
        symlink("/C/Shared/torch", site.join("torch")).unwrap();
        symlink("../../Shared", dir.join("C/Py/Lib/shared")).unwrap();
        // A link to the host's files outside the tree stays inside it (and finds nothing).
        let outside =
            std::env::temp_dir().join(format!("cudoctor-winfs-out-{}", std::process::id()));
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.dll"), b"MZ").unwrap();
        symlink(&outside, dir.join("C/Py/escape")).unwrap();
        let fs = WinFs::rooted(&dir);
        let c10 = fs
            .host_path(&WinPath::new(r"C:\py\LIB\site-packages\torch\lib\C10.DLL"))
            .unwrap();
        assert_eq!(c10, real.join("c10.dll"));
        assert!(fs.is_file(&WinPath::new(r"C:\Py\Lib\shared\torch\lib\c10.dll")));
        assert!(fs
            .host_path(&WinPath::new(r"C:\Py\escape\secret.dll"))
            .is_none());
        assert!(fs.list(&WinPath::new(r"C:\Py\escape")).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&outside).unwrap();
    }
}
