//! A driver version a line states as installed beside one it states as required: a program's
//! own check of the driver ("Installed driver: 535.18 ... unsupported driver range: [0.0,
//! 535.129)", "requires driver 525.60 or newer, current driver version is 470.82"). The numbers
//! judge, whatever the program calls its check.

use crate::prose::driver_version;

/// Words after which a line gives the driver it found.
const INSTALLED: [&str; 4] = ["installed", "current", "detected", "found"];

/// Words after which a line gives the driver it needs (a range's upper end: the versions below
/// it are refused).
const REQUIRED: [&str; 7] = [
    "minimum", "required", "requires", "least", "range", "needs", "newer",
];

/// How many words after its word a version may come ("Installed driver version: 535.18").
const REACH: usize = 6;

/// Whether a line's words ([`crate::prose::words_of`], lowercased) state an installed driver
/// older than the one they state as required.
pub fn installed_below_required(words: &[&str]) -> bool {
    if !words.iter().any(|w| w.contains("driver")) {
        return false;
    }
    // Each version belongs to the nearest word before it that says whose it is.
    let (mut installed, mut required) = (None, None);
    let mut last_key: Option<(bool, usize)> = None;
    for (i, w) in words.iter().enumerate() {
        if INSTALLED.contains(w) {
            last_key = Some((true, i));
        } else if REQUIRED.contains(w) {
            last_key = Some((false, i));
        } else if let Some(v) = driver_version(w) {
            match last_key {
                Some((true, k)) if i - k <= REACH => {
                    installed.get_or_insert(v);
                }
                Some((false, k)) if i - k <= REACH => {
                    required.get_or_insert(v);
                }
                _ => {}
            }
        }
    }
    match (installed, required) {
        (Some(installed), Some(required)) => installed < required,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn below(line: &str) -> bool {
        let lower = line.to_lowercase();
        installed_below_required(&crate::prose::words_of(&lower))
    }

    #[test]
    fn an_installed_driver_below_the_stated_minimum() {
        for line in [
            "[Error] [gpu.foundation.plugin] The currently installed NVIDIA graphics driver is unsupported or has known issues. Reason for failure: The minimum requirement on Linux Installed driver: 535.18 The unsupported driver range: [0.0, 535.129) The recommended drivers: 535.161.07",
            "This program requires driver 525.60 or newer; the current driver version is 470.82.",
            "Installed driver version: 470.57, minimum required: 515.43",
        ] {
            assert!(below(line), "{line}");
        }
        for line in [
            // At or above the minimum, a version not read, no driver on the line.
            "Installed driver: 550.54 The unsupported driver range: [0.0, 535.129)",
            "Insufficient NVIDIA driver version, Required 378.66, Installed 0.0",
            "requires at least 8 GB, installed 4 GB",
            "minimum CUDA 12.1, installed CUDA 11.8",
        ] {
            assert!(!below(line), "{line}");
        }
    }
}
