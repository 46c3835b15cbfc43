//! Paths as findings show them.

pub fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
