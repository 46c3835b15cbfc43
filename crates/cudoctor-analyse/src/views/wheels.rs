//! What the wheels' RECORD check covered.

/// What the check covered, so a clean result is read for what it is.
pub fn coverage(w: &cudoctor_snapshot::WheelCheck) -> String {
    let read = if w.full {
        "every file's size and SHA-256 checked (--verify-wheels)".to_string()
    } else {
        let mut read = format!(
            "all present, sizes of {} libraries and shared paths checked",
            w.sizes_checked
        );
        if w.files_hashed > 0 {
            read += &format!(", {} shared paths hashed", w.files_hashed);
        }
        if w.hashes_skipped > 0 {
            read += &format!(", {} left unhashed by the budget", w.hashes_skipped);
        }
        read + ", contents left to --verify-wheels"
    };
    format!(
        "RECORD check: {} files of {} distributions, {read}",
        w.files_checked,
        w.packages.len()
    )
}
