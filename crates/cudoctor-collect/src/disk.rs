//! Free space of a file system, for the work that writes much (a copy of an environment).

use std::path::Path;

/// The bytes an unprivileged process may still write on the file system of `path`
/// (`statvfs`: available blocks times the fragment size); `None` where it cannot be read.
#[cfg(unix)]
pub fn available_bytes(path: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(path).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Not measured on this system.
#[cfg(not(unix))]
pub fn available_bytes(_path: &Path) -> Option<u64> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn the_temporary_directory_has_a_figure_and_a_missing_path_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(available_bytes(dir.path()).is_some_and(|b| b > 0));
        assert_eq!(available_bytes(&dir.path().join("absent")), None);
    }
}
