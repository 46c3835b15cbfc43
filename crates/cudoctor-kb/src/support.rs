//! Whether a driver runs code built for a CUDA version, the way NVIDIA's compatibility rules
//! say: natively at or above the toolkit's minimum driver, else through minor-version
//! compatibility at or above the major's floor (CUDA 11.1 and later), else not at all.

use serde::Serialize;

use crate::{Kb, Platform};
use cudoctor_types::version::{CudaVersion, DriverVersion};

/// How a driver runs code built with one CUDA version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DriverSupport {
    /// At or above the toolkit's minimum driver (or within a branch that carries this CUDA).
    Native,
    /// Below the toolkit's minimum but at or above the major's floor: runs, except JIT of PTX
    /// newer than the driver and some newer APIs.
    MinorVersionCompat { floor: DriverVersion },
    /// Cannot run. `needed_native` runs it fully; `needed_floor` is the least that runs it at
    /// all (minor-version compatibility). Either may be unknown.
    TooOld {
        needed_native: Option<DriverVersion>,
        needed_floor: Option<DriverVersion>,
    },
    /// Neither the toolkit's minimum nor its major's floor is known.
    Unknown,
}

impl DriverSupport {
    /// Some(true) when the code runs (natively or through minor-version compatibility),
    /// Some(false) when it cannot, None when unknown.
    pub fn runs(&self) -> Option<bool> {
        match self {
            DriverSupport::Native | DriverSupport::MinorVersionCompat { .. } => Some(true),
            DriverSupport::TooOld { .. } => Some(false),
            DriverSupport::Unknown => None,
        }
    }
}

pub(crate) fn driver_support(
    kb: &Kb,
    platform: Platform,
    d: &DriverVersion,
    c: CudaVersion,
) -> DriverSupport {
    let windows = platform == Platform::Windows;
    let native_min = if windows {
        kb.toolkit_min_driver_windows(c)
    } else {
        kb.toolkit_min_driver(c)
    };
    match &native_min {
        Some(min) if d >= min => return DriverSupport::Native,
        Some(_) => {}
        // Toolkit not in the table (e.g. newer than the data): the branch's ceiling decides.
        // Windows driver numbers (572.16) are not Linux branch numbers: no ceiling for them.
        None => {
            if !windows && kb.driver_max_cuda(d).is_some_and(|max| max >= c) {
                return DriverSupport::Native;
            }
        }
    }
    // Minor-version compatibility exists from CUDA 11.1 on; for 11.0 itself the toolkit's own
    // minimum is the only rule.
    let floor = if c >= CudaVersion::new(11, 1) {
        if windows {
            kb.minor_compat_row(c.major)
                .and_then(|m| m.windows_floor.clone())
        } else {
            kb.minor_compat_floor(c.major)
        }
    } else {
        None
    };
    match (&floor, &native_min) {
        (Some(f), _) if d >= f => DriverSupport::MinorVersionCompat { floor: f.clone() },
        (None, None) => DriverSupport::Unknown,
        _ => DriverSupport::TooOld {
            needed_native: native_min,
            needed_floor: floor,
        },
    }
}
