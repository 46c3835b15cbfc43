//! The machine under the stack: each GPU's health as NVML reports it (ECC, row remapping,
//! clock events, PCIe link, NVLink errors, inforom), the kernel log's Xid events, a nouveau
//! module in the way, and a `dcgmi diag` result left on disk. Facts only: the rules judge them.

use serde::{Deserialize, Serialize};

/// The return code recorded when the NVML library lacks the entry point (an older driver): the
/// question could not be asked at all. NVML's own codes are 0 and up.
pub const NVML_NO_SYMBOL: i32 = -1;
/// NVML_SUCCESS.
pub const NVML_SUCCESS: i32 = 0;
/// NVML_ERROR_NOT_SUPPORTED: the GPU has no such feature (ECC on a GeForce, page retirement on
/// a GPU that remaps rows).
pub const NVML_ERROR_NOT_SUPPORTED: i32 = 3;
/// NVML_ERROR_UNKNOWN: "An internal driver error occurred" — in a container, the classic answer
/// once the host's systemd reloaded its cgroups and the container lost its device rules.
pub const NVML_ERROR_UNKNOWN: i32 = 999;

/// One NVML query: its return code, and its answer when the code is NVML_SUCCESS.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct NvmlQuery<T> {
    pub rc: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<T>,
}

impl<T: Copy> NvmlQuery<T> {
    /// The answer, when the call succeeded.
    pub fn get(q: &Option<NvmlQuery<T>>) -> Option<T> {
        q.as_ref().and_then(|q| q.value)
    }
}

/// An enable state NVML reports now and after the next reset (ECC, MIG).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CurrentPending {
    pub current: bool,
    pub pending: bool,
}

/// ECC error counts of one counter (volatile: since the driver loaded; aggregate: the GPU's
/// lifetime), nvmlDeviceGetTotalEccErrors.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct EccCounts {
    pub corrected: u64,
    pub uncorrected: u64,
}

/// nvmlDeviceGetRemappedRows: rows remapped for corrected and uncorrected errors, a remapping
/// waiting for the next GPU reset, and a remapping that failed.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RowRemap {
    pub corrected_rows: u32,
    pub uncorrected_rows: u32,
    pub pending: bool,
    pub failed: bool,
}

/// One NVLink's error counters (nvmlDeviceGetNvLinkErrorCounter), for links that are up.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct NvLinkErrors {
    pub link: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc_flit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc_data: Option<u64>,
}

impl NvLinkErrors {
    /// Every counter read, summed.
    pub fn total(&self) -> u64 {
        [self.replay, self.recovery, self.crc_flit, self.crc_data]
            .iter()
            .flatten()
            .fold(0u64, |a, b| a.saturating_add(*b))
    }
}

/// The clocks event (throttle) reasons of nvml.h's `nvmlClocksEventReason*` bit mask.
pub mod clocks_event {
    pub const GPU_IDLE: u64 = 0x1;
    pub const APPLICATIONS_CLOCKS_SETTING: u64 = 0x2;
    pub const SW_POWER_CAP: u64 = 0x4;
    pub const HW_SLOWDOWN: u64 = 0x8;
    pub const SYNC_BOOST: u64 = 0x10;
    pub const SW_THERMAL_SLOWDOWN: u64 = 0x20;
    pub const HW_THERMAL_SLOWDOWN: u64 = 0x40;
    pub const HW_POWER_BRAKE_SLOWDOWN: u64 = 0x80;
    pub const DISPLAY_CLOCK_SETTING: u64 = 0x100;

    /// Each bit set, with nvidia-smi's name for it ("Clocks Event Reasons" of `nvidia-smi -q`).
    pub fn names(mask: u64) -> Vec<&'static str> {
        [
            (GPU_IDLE, "Idle"),
            (APPLICATIONS_CLOCKS_SETTING, "Applications Clocks Setting"),
            (SW_POWER_CAP, "SW Power Cap"),
            (HW_SLOWDOWN, "HW Slowdown"),
            (SYNC_BOOST, "Sync Boost"),
            (SW_THERMAL_SLOWDOWN, "SW Thermal Slowdown"),
            (HW_THERMAL_SLOWDOWN, "HW Thermal Slowdown"),
            (HW_POWER_BRAKE_SLOWDOWN, "HW Power Brake Slowdown"),
            (DISPLAY_CLOCK_SETTING, "Display Clock Setting"),
        ]
        .into_iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| name)
        .collect()
    }
}

/// The PCIe link of a GPU: what it trained to now and the most the GPU and its slot allow
/// (nvmlDeviceGetCurrPcieLink*/nvmlDeviceGetMaxPcieLink*).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PcieLink {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_gen: Option<NvmlQuery<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_gen: Option<NvmlQuery<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_width: Option<NvmlQuery<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_width: Option<NvmlQuery<u32>>,
}

/// One GPU's health, each NVML answer with its return code. A field absent was not asked (an
/// older snapshot, or no NVML session).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct GpuHealth {
    /// nvmlDeviceGetPersistenceMode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence_mode: Option<NvmlQuery<bool>>,
    /// nvmlDeviceGetEccMode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_mode: Option<NvmlQuery<CurrentPending>>,
    /// nvmlDeviceGetTotalEccErrors, volatile counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_volatile: Option<NvmlQuery<EccCounts>>,
    /// nvmlDeviceGetTotalEccErrors, aggregate counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_aggregate: Option<NvmlQuery<EccCounts>>,
    /// nvmlDeviceGetRetiredPagesPendingStatus (NOT_SUPPORTED on GPUs that remap rows instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_pages_pending: Option<NvmlQuery<bool>>,
    /// nvmlDeviceGetRemappedRows (Ampere and newer data-center GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_remap: Option<NvmlQuery<RowRemap>>,
    /// nvmlDeviceGetCurrentClocksEventReasons (or the older ...ThrottleReasons): the bit mask of
    /// [`clocks_event`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocks_event_reasons: Option<NvmlQuery<u64>>,
    /// nvmlDeviceGetUtilizationRates' GPU percentage: whether the GPU is busy at the moment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_gpu: Option<NvmlQuery<u32>>,
    /// nvmlDeviceGetPerformanceState: 0 (P0, the most) to 15.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pstate: Option<NvmlQuery<u32>>,
    #[serde(default)]
    pub pcie: PcieLink,
    /// Error counters of the NVLinks that are up; empty where the GPU has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvlink_errors: Vec<NvLinkErrors>,
    /// nvmlDeviceValidateInforom: true when the checksum is valid (NVML_SUCCESS), false when
    /// NVML answers NVML_ERROR_CORRUPTED_INFOROM (14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inforom_valid: Option<NvmlQuery<bool>>,
    /// How many compute processes hold memory on the GPU (nvmlDeviceGetComputeRunningProcesses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_processes: Option<NvmlQuery<u32>>,
    /// nvmlDeviceGetMigMode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_mode: Option<NvmlQuery<CurrentPending>>,
}

/// One Xid event of the kernel log.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct XidEvent {
    pub xid: u32,
    /// The GPU's PCI address as the driver printed it (`0000:3b:00`), lower case.
    pub pci: String,
    /// Microseconds since boot (the kernel's own timestamp of the record: /dev/kmsg's, or the
    /// journal's `_SOURCE_MONOTONIC_TIMESTAMP`), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_us: Option<u64>,
    /// The line, cut to a few hundred characters.
    pub text: String,
}

/// How the kernel log was read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum KernelLogRead {
    /// Read from `source` (`/dev/kmsg`, or the systemd journal through `journalctl -k` where
    /// /dev/kmsg could not be opened) until it had no more records, or until the bound.
    Read {
        source: String,
        records: u64,
        /// The bound stopped the reading before the log's end.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
    },
    /// Not readable here (no permission: kernel.dmesg_restrict, a container; or under --root);
    /// `why` says it for /dev/kmsg and then for the journal.
    NotRead { why: String },
}

impl Default for KernelLogRead {
    fn default() -> Self {
        KernelLogRead::NotRead {
            why: "not asked".into(),
        }
    }
}

/// The kernel log's Xid events.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelLog {
    pub read: KernelLogRead,
    #[serde(default)]
    pub xids: Vec<XidEvent>,
    /// Xid events past the bound on events kept, counted only.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub xids_dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A `dcgmi diag --json` result found on disk.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DcgmDiag {
    pub path: String,
    /// Age of the file in seconds at collection time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_s: Option<u64>,
    /// Every sub-test with its result, as DCGM spelled it ("Pass", "Fail", "Warn", "Skip").
    #[serde(default)]
    pub tests: Vec<DcgmTest>,
    /// Why the file could not be read as DCGM's JSON, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct DcgmTest {
    pub name: String,
    pub result: String,
    /// GPU ids the result is for, where the file says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<u32>,
    /// DCGM's warning text, where a failed test has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl DcgmTest {
    /// DCGM's result reads as a failure ("Fail", "FAIL").
    pub fn failed(&self) -> bool {
        self.result.eq_ignore_ascii_case("fail")
    }
}

/// The machine-wide health facts (the per-GPU ones are each GPU's [`crate::Gpu::health`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HealthFacts {
    /// The nouveau module is loaded (/proc/modules); absent when that file was not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nouveau_loaded: Option<bool>,
    #[serde(default)]
    pub kernel_log: KernelLog,
    /// The newest `dcgmi diag --json` result of the well-known places, if one is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dcgm_diag: Option<DcgmDiag>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_event_bits_are_named_as_nvidia_smi_names_them() {
        assert_eq!(clocks_event::names(0x1), vec!["Idle"]);
        assert_eq!(
            clocks_event::names(0x48),
            vec!["HW Slowdown", "HW Thermal Slowdown"]
        );
        assert!(clocks_event::names(0).is_empty());
    }

    #[test]
    fn a_query_keeps_its_return_code() {
        let q: NvmlQuery<bool> = serde_json::from_str(r#"{"rc": 3}"#).unwrap();
        assert_eq!(q.rc, NVML_ERROR_NOT_SUPPORTED);
        assert_eq!(NvmlQuery::get(&Some(q)), None);
        let q = NvmlQuery {
            rc: 0,
            value: Some(5u32),
        };
        assert_eq!(serde_json::to_string(&q).unwrap(), r#"{"rc":0,"value":5}"#);
    }
}
