//! Finding candidate libraries under a directory (a site-packages, a toolkit's lib/).

use std::collections::HashSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// Directories deeper than this below the start are not entered.
const MAX_DEPTH: usize = 40;
/// Threads that list one tree's directories at most.
const MAX_WALKERS: usize = 4;
/// Stop after visiting this many directory entries (a huge tree is not a Python env).
const MAX_VISITS: usize = 2_000_000;

/// Files under `dir` that may carry CUDA kernels: shared libraries (`*.so`, `*.so.*`) and ELF
/// executables. Cheap: names and metadata only, plus a 4-byte read of executable files without
/// a library name. Directory symlinks are not followed (no loops); a file symlink counts only
/// when its target is not already listed (wheels ship `libfoo.so -> libfoo.so.12`), so every
/// file appears once. Sorted. Unreadable directories are skipped.
pub fn find_cuda_libraries(dir: &Path) -> Vec<PathBuf> {
    find_cuda_libraries_until(dir, cudoctor_types::Deadline::NONE).0
}

/// Why a walk ended before the end of its tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkStop {
    /// The deadline passed.
    Deadline,
    /// More entries than the walk visits (the number).
    Visits(usize),
}

/// [`find_cuda_libraries`] that ends at `deadline` (asked every 1,024 entries) and says when
/// it, or the cap on entries visited, ended it before the end of the tree.
pub fn find_cuda_libraries_until(
    dir: &Path,
    deadline: cudoctor_types::Deadline,
) -> (Vec<PathBuf>, Option<WalkStop>) {
    // Directories are shared out to a few threads as they are found (torch's tree alone is
    // some 900 directories, most of them headers'); the result is sorted, so it does not depend
    // on which thread saw what.
    // Up to four walkers, as many as the process's thread budget has free: a walker that
    // finds the queue empty while others still list waits for their subdirectories, and the
    // caller walks too, so the walk finishes with no thread granted.
    let mut walk = Walk::new(dir);
    walk.deadline = deadline;
    let found: Vec<Found> = cudoctor_types::ThreadBudget::process()
        .run(MAX_WALKERS, || walk.work())
        .into_iter()
        .map(|w| w.unwrap_or_else(|p| std::panic::resume_unwind(p)))
        .collect();
    let mut files: Vec<(PathBuf, FileId)> = Vec::new();
    let mut links: Vec<PathBuf> = Vec::new();
    for f in found {
        files.extend(f.files);
        links.extend(f.links);
    }
    let mut seen: HashSet<FileId> = files.iter().map(|(_, id)| *id).collect();
    let mut out: Vec<PathBuf> = files.into_iter().map(|(p, _)| p).collect();
    links.sort();
    for link in links {
        // Follows the link: only regular files count, each once.
        let Ok(md) = fs::metadata(&link) else {
            continue;
        };
        if md.is_file() && seen.insert(FileId::of(&md)) {
            out.push(link);
        }
    }
    out.sort();
    let stop = if walk.timed_out.load(Ordering::Relaxed) {
        Some(WalkStop::Deadline)
    } else if walk.capped.load(Ordering::Relaxed) {
        Some(WalkStop::Visits(MAX_VISITS))
    } else {
        None
    };
    (out, stop)
}

/// What one walker found.
#[derive(Default)]
struct Found {
    files: Vec<(PathBuf, FileId)>,
    links: Vec<PathBuf>,
}

/// The directories still to list, shared by the walkers.
struct Walk {
    /// Directories to list, and how many are queued or being listed: the walk is over when
    /// none is.
    state: Mutex<(Vec<(PathBuf, usize)>, usize)>,
    /// Signalled when directories are queued or the walk is over.
    more: Condvar,
    visits: AtomicUsize,
    deadline: cudoctor_types::Deadline,
    /// Set when the deadline, or [`MAX_VISITS`], ended the walk: nothing more is listed.
    timed_out: AtomicBool,
    capped: AtomicBool,
}

impl Walk {
    fn new(dir: &Path) -> Walk {
        Walk {
            state: Mutex::new((vec![(dir.to_path_buf(), 0)], 1)),
            more: Condvar::new(),
            visits: AtomicUsize::new(0),
            deadline: cudoctor_types::Deadline::NONE,
            timed_out: AtomicBool::new(false),
            capped: AtomicBool::new(false),
        }
    }

    fn work(&self) -> Found {
        let mut found = Found::default();
        loop {
            let next = {
                let Ok(mut st) = self.state.lock() else {
                    return found;
                };
                loop {
                    if let Some(d) = st.0.pop() {
                        break Some(d);
                    }
                    if st.1 == 0 {
                        break None;
                    }
                    st = match self.more.wait(st) {
                        Ok(st) => st,
                        Err(_) => return found,
                    };
                }
            };
            let Some((d, depth)) = next else {
                return found;
            };
            let subdirs = self.list(&d, depth, &mut found);
            let Ok(mut st) = self.state.lock() else {
                return found;
            };
            st.1 += subdirs.len();
            st.1 -= 1;
            st.0.extend(subdirs);
            drop(st);
            self.more.notify_all();
        }
    }

    /// One directory's entries: its files into `found`, its subdirectories returned.
    fn list(&self, d: &Path, depth: usize, found: &mut Found) -> Vec<(PathBuf, usize)> {
        let mut subdirs = Vec::new();
        if self.timed_out.load(Ordering::Relaxed) || self.capped.load(Ordering::Relaxed) {
            return subdirs;
        }
        let Ok(rd) = fs::read_dir(d) else {
            return subdirs;
        };
        for entry in rd.flatten() {
            let visits = self.visits.fetch_add(1, Ordering::Relaxed);
            if visits >= MAX_VISITS {
                self.capped.store(true, Ordering::Relaxed);
                return Vec::new();
            }
            if visits % 1024 == 1023 && self.deadline.passed() {
                self.timed_out.store(true, Ordering::Relaxed);
                return Vec::new();
            }
            let path = entry.path();
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                if depth < MAX_DEPTH {
                    subdirs.push((path, depth + 1));
                }
            } else if ft.is_symlink() {
                if is_library_name(&entry.file_name().to_string_lossy()) {
                    found.links.push(path);
                }
            } else if ft.is_file() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let library = is_library_name(&name);
                // The type came with the directory listing; a stat is only worth it for a file
                // that may be a binary (torch alone ships ten thousand headers and sources).
                if !library && has_text_extension(&name) {
                    continue;
                }
                let Ok(md) = entry.metadata() else { continue };
                if library || (is_executable(&md) && starts_with_elf_magic(&path)) {
                    found.files.push((path, FileId::of(&md)));
                }
            }
        }
        subdirs
    }
}

/// `libfoo.so`, `libfoo.so.12`, `libfoo.so.12.1.3`, `_C.cpython-312-x86_64-linux-gnu.so`.
fn is_library_name(name: &str) -> bool {
    name.ends_with(".so") || name.contains(".so.")
}

/// Extensions of files that are never ELF binaries (sources, headers, data, Python), so
/// the walk need not stat them to look for an executable bit.
const TEXT_EXTENSIONS: &[&str] = &[
    "py", "pyc", "pyi", "pyx", "pxd", "pxi", "h", "hh", "hpp", "hxx", "cuh", "inl", "inc", "c",
    "cc", "cpp", "cxx", "cu", "txt", "md", "rst", "json", "yaml", "yml", "toml", "cfg", "ini",
    "typed", "pth", "cmake", "proto", "html", "js", "css", "csv", "png", "jpg", "svg", "a", "o",
    "lib", "def", "pdf", "pt", "npz", "npy", "pkl",
];

fn has_text_extension(name: &str) -> bool {
    name.rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && TEXT_EXTENSIONS.contains(&ext))
}

fn starts_with_elf_magic(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    cudoctor_types::regular_file::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"\x7fELF"
}

#[cfg(unix)]
fn is_executable(md: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    md.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_md: &fs::Metadata) -> bool {
    false
}

/// Identity of a file, to list hard links and symlink targets once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FileId(u64, u64);

impl FileId {
    #[cfg(unix)]
    fn of(md: &fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileId(md.dev(), md.ino())
    }

    #[cfg(not(unix))]
    fn of(md: &fs::Metadata) -> Self {
        // No inode numbers: identity by size and mtime is a heuristic, good enough to merge
        // the same file reached twice.
        let mtime = md
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        FileId(md.len(), mtime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_names() {
        for yes in [
            "libcudart.so",
            "libcudnn.so.9",
            "libcupti.so.2025.1.1",
            "_C.cpython-312-x86_64-linux-gnu.so",
            "x.abi3.so",
        ] {
            assert!(is_library_name(yes), "{yes}");
        }
        for no in ["foo.py", "libx.a", "so", "notes.sox", "libfoo.solib"] {
            assert!(!is_library_name(no), "{no}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn walks_dedups_links_and_skips_dir_links() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let root =
            std::env::temp_dir().join(format!("cudoctor-fatbin-walk-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let lib = root.join("site-packages/nvidia/cu13/lib");
        fs::create_dir_all(&lib).unwrap();
        fs::write(lib.join("libcublas.so.13"), b"\x7fELF....").unwrap();
        symlink("libcublas.so.13", lib.join("libcublas.so")).unwrap();
        fs::write(lib.join("readme.txt"), b"hi").unwrap();
        let bin = root.join("site-packages/torch/bin");
        fs::create_dir_all(&bin).unwrap();
        fs::write(bin.join("torch_shm_manager"), b"\x7fELF....").unwrap();
        fs::set_permissions(
            bin.join("torch_shm_manager"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        fs::write(bin.join("script"), b"#!/bin/sh\n").unwrap();
        fs::set_permissions(bin.join("script"), fs::Permissions::from_mode(0o755)).unwrap();
        // A loop through a directory symlink must not be followed.
        symlink(&root, root.join("site-packages/loop")).unwrap();
        // A link to a library outside the tree counts once.
        let outside = root.join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("libext.so.1"), b"\x7fELF").unwrap();
        symlink(
            outside.join("libext.so.1"),
            root.join("site-packages/libext.so"),
        )
        .unwrap();

        let found = find_cuda_libraries(&root.join("site-packages"));
        let rel: Vec<String> = found
            .iter()
            .map(|p| {
                p.strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(
            rel,
            [
                "site-packages/libext.so",
                "site-packages/nvidia/cu13/lib/libcublas.so.13",
                "site-packages/torch/bin/torch_shm_manager",
            ]
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn text_extensions_are_not_binaries() {
        for yes in ["__init__.py", "cuda.h", "x.cuh", "RECORD.json", "py.typed"] {
            assert!(has_text_extension(yes), "{yes}");
        }
        for no in [
            "nvcc",
            "torch_shm_manager",
            ".py",
            "ptxas.real",
            "libfoo.so.1",
        ] {
            assert!(!has_text_extension(no), "{no}");
        }
    }

    #[test]
    fn missing_dir_gives_nothing() {
        assert!(find_cuda_libraries(Path::new("/nonexistent/cudoctor/dir")).is_empty());
    }
}

#[cfg(test)]
mod deadline_tests {
    use super::*;

    #[test]
    fn a_walk_ends_at_its_deadline_and_says_so() {
        let dir = std::env::temp_dir().join(format!("cudoctor-walk-late-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for d in 0..4 {
            let sub = dir.join(format!("d{d}"));
            fs::create_dir_all(&sub).unwrap();
            for i in 0..1500 {
                fs::write(sub.join(format!("lib{i}.so")), b"").unwrap();
            }
        }
        let (all, stop) = find_cuda_libraries_until(&dir, cudoctor_types::Deadline::NONE);
        assert_eq!((all.len(), stop), (6000, None));
        let late = cudoctor_types::Deadline::after(std::time::Duration::ZERO);
        let (some, stop) = find_cuda_libraries_until(&dir, late);
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(stop, Some(WalkStop::Deadline));
        assert!(some.len() < 6000, "{}", some.len());
    }
}
