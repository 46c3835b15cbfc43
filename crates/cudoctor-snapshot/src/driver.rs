use serde::{Deserialize, Serialize};

use crate::{Attempt, Sourced};

/// The NVIDIA driver and the GPUs it exposes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DriverFacts {
    /// Every source tried, in order, with its outcome.
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    /// Driver version as the source spelled it, e.g. `580.159.04`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Sourced<String>>,
    /// Highest CUDA version the driver supports, e.g. `13.0` (cuDriverGetVersion, NVML, nvidia-smi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cuda: Option<Sourced<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_module: Option<KernelModule>,
    /// The loaded kernel module's own version (/sys/module/nvidia/version, or the NVRM banner of
    /// /proc/driver/nvidia/version), which can differ from the user-space driver's [`Self::version`]
    /// after an upgrade without a reboot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_version: Option<Sourced<String>>,
    /// A source refused to run because the kernel module and the user-space libraries differ
    /// (NVML_ERROR_LIB_RM_VERSION_MISMATCH, nvidia-smi's "Driver/library version mismatch"):
    /// which source, and its words as evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library_mismatch: Option<Sourced<String>>,
    #[serde(default)]
    pub gpus: Vec<Gpu>,
    /// No source that lists GPUs was read (a Windows tree under `--root`: only the driver lists
    /// them, through NVML on the live machine), so an empty [`Self::gpus`] is unknown, not none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gpus_not_read: bool,
    /// Compute processes holding GPU memory (from NVML or nvidia-smi).
    #[serde(default)]
    pub processes: Vec<GpuProcess>,
    /// NVML's return code when its initialisation failed (999, NVML_ERROR_UNKNOWN, in a
    /// container whose device rules the host's systemd reset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvml_init_error: Option<i32>,
    /// The driver's own libraries did not answer: NVML or libcuda hung past the time limit, or
    /// the process asking them died. What they would have said is unknown, not absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub libraries_failed: Option<LibrariesFailed>,
}

/// How the driver's libraries failed to answer (see [`DriverFacts::libraries_failed`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LibrariesFailed {
    /// The library being asked when it happened: "nvml" or "libcuda".
    pub library: String,
    pub how: LibraryFailure,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LibraryFailure {
    /// No answer within the time limit; the asking process was killed.
    Hung { after_s: f64 },
    /// The asking process was killed by this signal (SIGSEGV: 11) inside the library.
    Crashed { signal: i32 },
    /// On Windows: the asking process ended with this exception code (0xC0000005, an access
    /// violation) inside the library.
    Exception { code: u32 },
}

/// The name of a Windows exception code a crashed process exits with (NTSTATUS values of
/// Microsoft's ntstatus.h), or `None` for one not named here.
pub fn windows_exception_name(code: u32) -> Option<&'static str> {
    Some(match code {
        0xC000_0005 => "access violation",
        0xC000_001D => "illegal instruction",
        0xC000_0094 => "integer division by zero",
        0xC000_00FD => "stack overflow",
        // __fastfail: abort(), std::terminate and a detected stack buffer overrun end so.
        0xC000_0409 => "fast fail: an abort or a stack buffer overrun",
        0x8000_0003 => "breakpoint",
        MSVC_CPP_EXCEPTION => "an unhandled C++ exception",
        0xC000_0374 => "heap corruption",
        0xC000_0135 => "a DLL was not found",
        0xC000_0139 => "an entry point was not found",
        0xC000_0142 => "a DLL failed to initialise",
        _ => return None,
    })
}

/// Whether a process's exit status is a Windows exception code, as a process killed by an
/// unhandled exception ends: an NTSTATUS of severity error (0xC...) or warning (0x8..., a
/// breakpoint) of the system's own facility 0 (not a customer code), or MSVC's C++ exception;
/// `exit(-1)` (0xFFFFFFFF) and the small codes programs choose are not taken for one.
pub fn is_windows_exception(status: i32) -> bool {
    let s = status as u32;
    (matches!(s >> 30, 0b10 | 0b11) && (s >> 16) & 0x3FFF == 0) || s == MSVC_CPP_EXCEPTION
}

/// The code of an unhandled C++ exception of MSVC's runtime ("msc" in its low bytes).
const MSVC_CPP_EXCEPTION: u32 = 0xE06D_7363;

/// The loader's failures to start a program (a DLL it imports not found, an entry point
/// missing, its initialisation failed): the program never ran.
pub fn is_windows_start_failure(code: u32) -> bool {
    matches!(code, 0xC000_0135 | 0xC000_0139 | 0xC000_0142)
}

/// "exception 0xC0000005 (access violation)".
pub fn windows_exception(code: u32) -> String {
    match windows_exception_name(code) {
        Some(name) => format!("exception 0x{code:08X} ({name})"),
        None => format!("exception 0x{code:08X}"),
    }
}

impl DriverFacts {
    /// True when some source positively showed a loaded NVIDIA kernel driver.
    pub fn driver_found(&self) -> bool {
        self.version.is_some()
    }

    /// No source could tell whether a driver is there: each was skipped, or failed to read what
    /// it found, and one at least was skipped (a Windows tree under `--root` without its
    /// driver's DLLs, or with none readable): the driver is unknown, which is not its absence.
    pub fn not_read(&self) -> bool {
        use crate::Outcome::{Failed, Skipped};
        self.attempts.iter().any(|a| a.outcome == Skipped)
            && self
                .attempts
                .iter()
                .all(|a| matches!(a.outcome, Skipped | Failed))
    }
}

/// Which NVIDIA kernel module is loaded, from the NVRM banner ("Open Kernel Module" or not).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum KernelModuleFlavour {
    Open,
    Proprietary,
    /// A value this version does not know (a hand-edited or newer snapshot).
    #[serde(other)]
    Other,
}

impl KernelModuleFlavour {
    /// As the snapshot spells it: "open", "proprietary".
    pub fn name(self) -> &'static str {
        match self {
            KernelModuleFlavour::Open => "open",
            KernelModuleFlavour::Proprietary => "proprietary",
            KernelModuleFlavour::Other => "other",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct KernelModule {
    /// Open or proprietary, from the NVRM banner.
    pub flavour: KernelModuleFlavour,
    /// The banner line itself.
    pub banner: String,
}

/// One GPU as the driver reports it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Gpu {
    pub index: u32,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<String>,
    /// `major.minor`, e.g. `9.0`; absent when no source gave it (procfs does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_total_mib: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_used_mib: Option<u64>,
    /// MIG mode is on (NVML's current mode, nvidia-smi's `Enabled`); absent where the GPU has
    /// no MIG or no source told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_enabled: Option<bool>,
    /// Persistence mode is on; absent where no source told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence_enabled: Option<bool>,
    /// Health as NVML reports it (ECC, row remapping, clock events, PCIe link, NVLink errors,
    /// inforom); absent where NVML did not answer for this GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<crate::GpuHealth>,
    /// Where these facts came from.
    pub source: String,
    /// Named by `--gpu` for a what-if judgement, not observed: such a GPU is never saved as
    /// this machine's (`check --save` writes the GPUs found).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub what_if: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct GpuProcess {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_index: Option<u32>,
    pub pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_mib: Option<u64>,
}

#[cfg(test)]
mod kernel_module_tests {
    use super::*;

    #[test]
    fn windows_exception_codes_are_told_from_the_codes_programs_choose() {
        let status = |code: u32| code as i32;
        assert!(is_windows_exception(status(0xC000_0005)));
        assert!(is_windows_exception(status(0xC000_0409)));
        assert!(is_windows_exception(status(0x8000_0003)));
        // MSVC's C++ exception, a customer code that ends a process as an exception does.
        assert!(is_windows_exception(status(0xE06D_7363)));
        for chosen in [0, 1, 2, 255, -1, status(0xE000_0001)] {
            assert!(!is_windows_exception(chosen), "{chosen:#x}");
        }
        assert_eq!(
            windows_exception(0xC000_0005),
            "exception 0xC0000005 (access violation)"
        );
        assert_eq!(windows_exception(0xC000_1234), "exception 0xC0001234");
        assert!(is_windows_start_failure(0xC000_0135));
        assert!(!is_windows_start_failure(0xC000_0005));
    }

    #[test]
    fn the_flavour_reads_as_schema_1_and_2_spell_it_and_tolerates_others() {
        let m: KernelModule =
            serde_json::from_str(r#"{"flavour": "open", "banner": "NVRM version: ..."}"#).unwrap();
        assert_eq!(m.flavour, KernelModuleFlavour::Open);
        let m: KernelModule =
            serde_json::from_str(r#"{"flavour": "proprietary", "banner": ""}"#).unwrap();
        assert_eq!(m.flavour, KernelModuleFlavour::Proprietary);
        let m: KernelModule = serde_json::from_str(r#"{"flavour": "grid", "banner": ""}"#).unwrap();
        assert_eq!(m.flavour, KernelModuleFlavour::Other);
        assert_eq!(
            serde_json::to_string(&KernelModuleFlavour::Open).unwrap(),
            r#""open""#
        );
    }
}
