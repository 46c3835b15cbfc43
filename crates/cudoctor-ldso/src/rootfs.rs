//! Paths of the inspected machine, seen under a root directory.
//!
//! Real use has root "/". Tests (and `--root` users inspecting a mounted image or container
//! filesystem) use another directory; then every absolute path, including absolute symlink
//! targets, must stay under that root, so symlinks are followed here component by component
//! rather than by the host kernel.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Linux's limit on symlinks followed in one lookup.
const MAX_SYMLINKS: usize = 40;

#[derive(Debug, Clone)]
pub struct RootFs {
    root: PathBuf,
    host: bool,
}

impl RootFs {
    pub fn new(root: &Path) -> Self {
        let host = root == Path::new("/") || root.as_os_str().is_empty();
        RootFs {
            root: if host {
                PathBuf::from("/")
            } else {
                root.to_path_buf()
            },
            host,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Host path of `path` (absolute, as seen on the inspected machine) with every symlink
    /// followed inside the root. Fails like the kernel would (not found, not a directory,
    /// too many levels of symlinks).
    pub fn resolve(&self, path: &str) -> io::Result<PathBuf> {
        if self.host {
            return Ok(cudoctor_types::os_text::to_path(path));
        }
        let parts = self.walk(path, None)?;
        let mut out = self.root.clone();
        out.extend(parts);
        Ok(out)
    }

    /// The canonical form of `path` on the inspected machine (symlinks and `..` resolved),
    /// without the root prefix.
    pub fn canonical(&self, path: &str) -> io::Result<String> {
        if self.host {
            return std::fs::canonicalize(cudoctor_types::os_text::to_path(path))
                .map(|p| cudoctor_types::os_text::from_path(&p).into_owned());
        }
        Ok(machine_path(&self.walk(path, None)?))
    }

    /// `path` with every symlink followed inside the root (also at `/`, walked here so that
    /// the links are known), as a machine path, with each link target met on the way made
    /// absolute and normalised: `/usr/local/cuda/bin` gives `/usr/local/cuda-13.0/bin` and
    /// `["/etc/alternatives/cuda", "/usr/local/cuda-13.0"]`.
    pub fn follow(&self, path: &str) -> io::Result<(String, Vec<String>)> {
        let mut hops = Vec::new();
        let parts = self.walk(path, Some(&mut hops))?;
        Ok((machine_path(&parts), hops))
    }

    /// The components of `path` with its links followed; each link's target, absolute and
    /// normalised, into `hops` when asked.
    fn walk(&self, path: &str, mut hops: Option<&mut Vec<String>>) -> io::Result<Vec<OsString>> {
        let mut done: Vec<OsString> = Vec::new();
        // Components still to walk, in reverse so the next one is at the end.
        let mut todo: Vec<OsString> = components_rev(&cudoctor_types::os_text::to_path(path));
        let mut links = 0usize;
        while let Some(c) = todo.pop() {
            if c == "." {
                continue;
            }
            if c == ".." {
                done.pop();
                continue;
            }
            let mut host = self.root.clone();
            host.extend(&done);
            host.push(&c);
            let meta = std::fs::symlink_metadata(&host)?;
            if meta.file_type().is_symlink() {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(io::Error::other("too many levels of symbolic links"));
                }
                let target = std::fs::read_link(&host)?;
                if let Some(hops) = hops.as_deref_mut() {
                    let text = cudoctor_types::os_text::from_os(target.as_os_str());
                    hops.push(normalise(&if target.is_absolute() {
                        text.into_owned()
                    } else {
                        format!("{}/{text}", machine_path(&done))
                    }));
                }
                if target.is_absolute() {
                    done.clear();
                }
                todo.extend(components_rev(&target));
            } else {
                if !todo.is_empty() && !meta.is_dir() {
                    return Err(io::Error::new(io::ErrorKind::NotFound, "not a directory"));
                }
                done.push(c);
            }
        }
        Ok(done)
    }
}

/// `/a/b` of the components `a`, `b`; `/` of none.
fn machine_path(parts: &[OsString]) -> String {
    let mut s = String::new();
    for p in parts {
        s.push('/');
        s.push_str(&cudoctor_types::os_text::from_os(p));
    }
    if s.is_empty() {
        s.push('/');
    }
    s
}

fn components_rev(p: &Path) -> Vec<OsString> {
    let mut v: Vec<OsString> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir => Some(OsString::from(".")),
            Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    v.reverse();
    v
}

/// Lexical parent directory, as glibc computes `l_origin` (no symlink resolution): everything
/// before the last '/', or "/" for a file directly under the root.
pub fn lexical_dirname(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => path.get(..i).unwrap_or("/"),
        None => ".",
    }
}

/// Removes `.` and `..` and doubled slashes from a machine path, textually (no symlink
/// resolution): `/e/lib/torch/lib/../../nvidia/x.so` is `/e/lib/nvidia/x.so`.
pub fn normalise(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for c in p.split('/').filter(|c| !c.is_empty()) {
        match c {
            "." => {}
            ".." => {
                out.pop();
            }
            _ => out.push(c),
        }
    }
    format!("/{}", out.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn dirname_is_lexical() {
        assert_eq!(lexical_dirname("/opt/x/../lib/libfoo.so"), "/opt/x/../lib");
        assert_eq!(lexical_dirname("/libfoo.so"), "/");
        assert_eq!(lexical_dirname("libfoo.so"), ".");
    }

    #[test]
    fn symlinks_stay_inside_the_root() {
        let base =
            std::env::temp_dir().join(format!("cudoctor-ldso-rootfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("usr/lib/real")).unwrap();
        std::fs::write(base.join("usr/lib/real/libz.so.1.2"), b"x").unwrap();
        symlink("/usr/lib/real/libz.so.1.2", base.join("usr/lib/libz.so.1")).unwrap();
        symlink("real", base.join("usr/lib/rel")).unwrap();
        symlink("loop", base.join("usr/lib/loop")).unwrap();
        let fs = RootFs::new(&base);
        assert_eq!(
            fs.canonical("/usr/lib/libz.so.1").unwrap(),
            "/usr/lib/real/libz.so.1.2"
        );
        assert_eq!(
            fs.resolve("/usr/lib/libz.so.1").unwrap(),
            base.join("usr/lib/real/libz.so.1.2")
        );
        assert_eq!(
            fs.canonical("/usr/lib/rel/../rel/libz.so.1.2").unwrap(),
            "/usr/lib/real/libz.so.1.2"
        );
        assert_eq!(
            fs.canonical("/../../usr/lib/real").unwrap(),
            "/usr/lib/real"
        );
        assert!(fs.resolve("/usr/lib/loop").is_err());
        assert!(fs.resolve("/usr/lib/real/libz.so.1.2/x").is_err());
        assert!(fs.resolve("/nope").is_err());
        // The links met, absolute and normalised: an absolute one, then a relative one.
        symlink("/usr/lib/rel", base.join("usr/lib/abs")).unwrap();
        assert_eq!(
            fs.follow("/usr/lib/abs/libz.so.1.2").unwrap(),
            (
                "/usr/lib/real/libz.so.1.2".to_string(),
                vec!["/usr/lib/rel".to_string(), "/usr/lib/real".to_string()]
            )
        );
        assert_eq!(
            fs.follow("/usr/lib/real").unwrap(),
            ("/usr/lib/real".to_string(), Vec::new())
        );
        assert!(fs.follow("/usr/lib/loop").is_err());
        let _ = std::fs::remove_dir_all(&base);
    }
}
