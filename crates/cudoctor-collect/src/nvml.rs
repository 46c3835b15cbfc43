//! NVML, the driver's management library, loaded at run time (no link-time dependency) so the
//! binary runs on machines with no driver at all. Every call into it is made here, behind safe
//! functions: the driver layer and the multi-GPU layer only see Rust values. Only queries are
//! made, never a change; NVML is initialised and shut down around them.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::marker::PhantomData;

use cudoctor_snapshot::health::NVML_NO_SYMBOL;
use cudoctor_snapshot::{CurrentPending, EccCounts, NvLinkErrors, NvmlQuery, RowRemap};
use libloading::{Library, Symbol};

#[cfg(not(windows))]
const LIBRARY: &str = "libnvidia-ml.so.1";
/// The driver installs it in System32 (DCH drivers; on the loader's default search path) and,
/// in older drivers, only under `NVSMI` of Program Files.
#[cfg(windows)]
const LIBRARY: &str = "nvml.dll";
#[cfg(windows)]
const LIBRARY_NVSMI: &str = "C:\\Program Files\\NVIDIA Corporation\\NVSMI\\nvml.dll";
const SUCCESS: c_int = 0;
pub const ERROR_INVALID_ARGUMENT: c_int = 2;
pub const ERROR_NOT_SUPPORTED: c_int = 3;
/// NVML_ERROR_LIB_RM_VERSION_MISMATCH: the kernel module and the user-space library differ.
pub const ERROR_LIB_RM_VERSION_MISMATCH: c_int = 18;

/// Why NVML could not be used: the message for the report, and NVML's return code when a call
/// (rather than loading the library) failed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NvmlError {
    pub message: String,
    pub code: Option<c_int>,
}

impl From<String> for NvmlError {
    fn from(message: String) -> Self {
        NvmlError {
            message,
            code: None,
        }
    }
}

/// nvmlGpuP2PCapsIndex_t: READ, WRITE, NVLINK, ATOMICS.
pub const P2P_READ: c_uint = 0;
pub const P2P_WRITE: c_uint = 1;
pub const P2P_NVLINK: c_uint = 2;
pub const P2P_ATOMICS: c_uint = 3;

/// Loads NVML, initialises it, runs `f` and shuts NVML down again, whatever `f` returned.
/// Errors: the loader's message, or `nvmlInit_v2 returned NVML error N` with its code.
pub fn with_nvml<T>(f: impl FnOnce(&Nvml) -> Result<T, String>) -> Result<T, NvmlError> {
    // SAFETY: NVML is the driver's management library; loading it runs only its initialisers,
    // and init/query/shutdown is its intended use.
    let lib = unsafe { Library::new(LIBRARY) }.map_err(|e| load_error(LIBRARY, &e));
    // SAFETY: as above, the same library from the driver's other install directory.
    #[cfg(windows)]
    let lib = lib.or_else(|first| {
        unsafe { Library::new(LIBRARY_NVSMI) }
            .map_err(|e| format!("{first}; {}", load_error(LIBRARY_NVSMI, &e)))
    });
    let lib = lib?;
    let nvml = Nvml { lib };
    nvml.init()?;
    let result = f(&nvml);
    let _ = nvml.call0(b"nvmlShutdown\0");
    Ok(result?)
}

/// A failed load in words: libloading's message with its cause (on Windows the message is only
/// "LoadLibraryExW failed" and the cause holds the Win32 error: "The specified module could not
/// be found. (os error 126)"), naming the library where the message does not (dlopen's does).
pub(crate) fn load_error(library: &str, e: &libloading::Error) -> String {
    use std::error::Error;
    let mut text = e.to_string();
    if let Some(source) = e.source() {
        text = format!("{text}: {source}");
    }
    if !text.contains(library) {
        text = format!("{library}: {text}");
    }
    text
}

/// `name returned NVML error N`, the error text of a failed call.
pub fn failed(name: &str, rc: c_int) -> String {
    format!("{name} returned NVML error {rc}")
}

/// An initialised NVML.
pub struct Nvml {
    lib: Library,
}

/// A GPU's handle. It borrows the session that gave it, so it cannot be used after shutdown.
#[derive(Clone, Copy)]
pub struct Device<'n> {
    raw: *mut c_void,
    _session: PhantomData<&'n Nvml>,
}

/// nvmlMemory_t, in bytes.
pub struct Memory {
    pub total: u64,
    pub used: u64,
}

/// One compute process on a GPU.
pub struct Process {
    pub pid: u32,
    /// None where NVML cannot tell (it reports the all-ones value).
    pub used_bytes: Option<u64>,
}

/// nvmlProcessInfo_t (v2/v3 layout).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ProcessInfoV3 {
    pid: c_uint,
    used_gpu_memory: u64,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

type RawDevice = *mut c_void;

impl Nvml {
    fn sym<T>(&self, name: &[u8]) -> Result<Symbol<'_, T>, String> {
        // SAFETY: every caller names the exact C signature NVML documents for `name`.
        unsafe { self.lib.get(name) }.map_err(|e| e.to_string())
    }

    fn init(&self) -> Result<(), NvmlError> {
        let f = self.sym::<unsafe extern "C" fn() -> c_int>(b"nvmlInit_v2\0")?;
        // SAFETY: nvmlInit_v2 takes no arguments.
        match unsafe { f() } {
            SUCCESS => Ok(()),
            rc => Err(NvmlError {
                message: failed("nvmlInit_v2", rc),
                code: Some(rc),
            }),
        }
    }

    fn call0(&self, name: &[u8]) -> Result<(), String> {
        let f = self.sym::<unsafe extern "C" fn() -> c_int>(name)?;
        // SAFETY: nvmlShutdown takes no arguments.
        match unsafe { f() } {
            SUCCESS => Ok(()),
            rc => {
                let n = String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name));
                Err(failed(&n, rc))
            }
        }
    }

    /// nvmlSystemGetDriverVersion ("580.159.04"). Err when the library lacks the call, None
    /// when the call fails.
    pub fn driver_version(&self) -> Result<Option<String>, String> {
        let f = self.sym::<unsafe extern "C" fn(*mut c_char, c_uint) -> c_int>(
            b"nvmlSystemGetDriverVersion\0",
        )?;
        let mut buf = [0 as c_char; 96];
        // SAFETY: buffer and its length match; NVML NUL-terminates within it.
        let rc = unsafe { f(buf.as_mut_ptr(), buf.len() as c_uint) };
        Ok((rc == SUCCESS).then(|| c_string(&buf)))
    }

    /// nvmlSystemGetCudaDriverVersion_v2: the highest CUDA the driver runs, 1000*major + 10*minor.
    pub fn cuda_driver_version(&self) -> Option<i32> {
        let f = self
            .sym::<unsafe extern "C" fn(*mut c_int) -> c_int>(
                b"nvmlSystemGetCudaDriverVersion_v2\0",
            )
            .ok()?;
        let mut v: c_int = 0;
        // SAFETY: one out-parameter.
        (unsafe { f(&mut v) } == SUCCESS).then_some(v)
    }

    /// nvmlDeviceGetCount_v2.
    pub fn device_count(&self) -> Result<u32, String> {
        let f =
            self.sym::<unsafe extern "C" fn(*mut c_uint) -> c_int>(b"nvmlDeviceGetCount_v2\0")?;
        let mut count: c_uint = 0;
        // SAFETY: one out-parameter.
        match unsafe { f(&mut count) } {
            SUCCESS => Ok(count),
            rc => Err(failed("nvmlDeviceGetCount_v2", rc)),
        }
    }

    /// nvmlDeviceGetHandleByIndex_v2, looked up once: Err when the library lacks it. The
    /// function it returns gives a device's handle, or NVML's return code.
    pub fn handle_by_index<'n>(
        &'n self,
    ) -> Result<impl Fn(u32) -> Result<Device<'n>, c_int> + 'n, String> {
        let f = self.sym::<unsafe extern "C" fn(c_uint, *mut RawDevice) -> c_int>(
            b"nvmlDeviceGetHandleByIndex_v2\0",
        )?;
        Ok(move |index: u32| {
            let mut raw: RawDevice = std::ptr::null_mut();
            // SAFETY: an index (NVML checks its range) and one out-parameter, a handle.
            match unsafe { f(index, &mut raw) } {
                SUCCESS => Ok(Device {
                    raw,
                    _session: PhantomData,
                }),
                rc => Err(rc),
            }
        })
    }

    /// nvmlDeviceGetName.
    pub fn name(&self, dev: Device<'_>) -> Option<String> {
        self.string_of(dev, b"nvmlDeviceGetName\0")
    }

    /// nvmlDeviceGetUUID.
    pub fn uuid(&self, dev: Device<'_>) -> Option<String> {
        self.string_of(dev, b"nvmlDeviceGetUUID\0")
    }

    fn string_of(&self, dev: Device<'_>, name: &[u8]) -> Option<String> {
        let f = self
            .sym::<unsafe extern "C" fn(RawDevice, *mut c_char, c_uint) -> c_int>(name)
            .ok()?;
        let mut buf = [0 as c_char; 96];
        // SAFETY: a handle of this session; buffer and its length match; NVML NUL-terminates
        // within it.
        (unsafe { f(dev.raw, buf.as_mut_ptr(), buf.len() as c_uint) } == SUCCESS)
            .then(|| c_string(&buf))
    }

    /// The device's own PCI bus id (nvmlDeviceGetPciInfo_v3).
    pub fn pci_bus_id(&self, dev: Device<'_>) -> Option<String> {
        let f = self
            .sym::<unsafe extern "C" fn(RawDevice, *mut u8) -> c_int>(b"nvmlDeviceGetPciInfo_v3\0")
            .ok()?;
        // SAFETY: a handle of this session and a buffer larger than the struct (see bus_id_of).
        bus_id_of(|buf| unsafe { f(dev.raw, buf) })
    }

    /// The PCI bus id at the far end of one NVLink link (nvmlDeviceGetNvLinkRemotePciInfo_v2).
    pub fn nvlink_remote_bus_id(&self, dev: Device<'_>, link: u32) -> Option<String> {
        let f = self
            .sym::<unsafe extern "C" fn(RawDevice, c_uint, *mut u8) -> c_int>(
                b"nvmlDeviceGetNvLinkRemotePciInfo_v2\0",
            )
            .ok()?;
        // SAFETY: as in pci_bus_id, with a link index.
        bus_id_of(|buf| unsafe { f(dev.raw, link, buf) })
    }

    /// nvmlDeviceGetCudaComputeCapability: (major, minor).
    pub fn compute_capability(&self, dev: Device<'_>) -> Option<(i32, i32)> {
        let f = self
            .sym::<unsafe extern "C" fn(RawDevice, *mut c_int, *mut c_int) -> c_int>(
                b"nvmlDeviceGetCudaComputeCapability\0",
            )
            .ok()?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: a handle of this session and two out-parameters.
        (unsafe { f(dev.raw, &mut major, &mut minor) } == SUCCESS).then_some((major, minor))
    }

    /// nvmlDeviceGetMemoryInfo.
    pub fn memory(&self, dev: Device<'_>) -> Option<Memory> {
        let f = self
            .sym::<unsafe extern "C" fn(RawDevice, *mut [u64; 3]) -> c_int>(
                b"nvmlDeviceGetMemoryInfo\0",
            )
            .ok()?;
        // nvmlMemory_t is { total, free, used } as unsigned long long.
        let mut mem = [0u64; 3];
        // SAFETY: a handle of this session; the struct is three u64.
        (unsafe { f(dev.raw, &mut mem) } == SUCCESS).then_some(Memory {
            total: mem[0],
            used: mem[2],
        })
    }

    /// nvmlDeviceGetComputeRunningProcesses_v3, at most 64 of them, with the call's return code.
    pub fn running_processes(&self, dev: Device<'_>) -> NvmlQuery<Vec<Process>> {
        let Ok(f) = self
            .sym::<unsafe extern "C" fn(RawDevice, *mut c_uint, *mut ProcessInfoV3) -> c_int>(
                b"nvmlDeviceGetComputeRunningProcesses_v3\0",
            )
        else {
            return no_symbol();
        };
        let mut infos = [ProcessInfoV3::default(); 64];
        let mut count = infos.len() as c_uint;
        // SAFETY: a handle of this session; count is the array's capacity and NVML writes at
        // most that many entries.
        let rc = unsafe { f(dev.raw, &mut count, infos.as_mut_ptr()) };
        if rc != SUCCESS {
            return NvmlQuery { rc, value: None };
        }
        let n = (count as usize).min(infos.len());
        answered(
            rc,
            infos
                .get(..n)
                .unwrap_or_default()
                .iter()
                .map(|p| Process {
                    pid: p.pid,
                    used_bytes: (p.used_gpu_memory != u64::MAX).then_some(p.used_gpu_memory),
                })
                .collect(),
        )
    }

    /// nvmlDeviceGetTopologyCommonAncestor: the nvmlGpuTopologyLevel_t of two GPUs' path.
    pub fn common_ancestor(&self, a: Device<'_>, b: Device<'_>) -> Option<u32> {
        let f = self
            .sym::<unsafe extern "C" fn(RawDevice, RawDevice, *mut c_uint) -> c_int>(
                b"nvmlDeviceGetTopologyCommonAncestor\0",
            )
            .ok()?;
        let mut v: c_uint = 0;
        // SAFETY: two handles of this session and one out-parameter (an enum, int-sized).
        (unsafe { f(a.raw, b.raw, &mut v) } == SUCCESS).then_some(v)
    }

    /// nvmlDeviceGetP2PStatus for one capability (`P2P_READ` ...): an nvmlGpuP2PStatus_t.
    pub fn p2p_status(&self, a: Device<'_>, b: Device<'_>, cap: c_uint) -> Option<u32> {
        let f = self
            .sym::<unsafe extern "C" fn(RawDevice, RawDevice, c_uint, *mut c_uint) -> c_int>(
                b"nvmlDeviceGetP2PStatus\0",
            )
            .ok()?;
        let mut status: c_uint = 0;
        // SAFETY: two handles of this session, a caps index NVML defines, one out-parameter.
        (unsafe { f(a.raw, b.raw, cap, &mut status) } == SUCCESS).then_some(status)
    }

    /// nvmlDeviceGetNvLinkState, looked up once: None when the library lacks it. The function
    /// it returns tells whether one link is active, or NVML's return code.
    pub fn nvlink_state<'n>(
        &'n self,
    ) -> Option<impl Fn(Device<'n>, u32) -> Result<bool, c_int> + 'n> {
        let f = self
            .sym::<unsafe extern "C" fn(RawDevice, c_uint, *mut c_uint) -> c_int>(
                b"nvmlDeviceGetNvLinkState\0",
            )
            .ok()?;
        Some(move |dev: Device<'n>, link: u32| {
            let mut active: c_uint = 0;
            // SAFETY: a handle of this session, a link index, one out-parameter (an enable state).
            match unsafe { f(dev.raw, link, &mut active) } {
                SUCCESS => Ok(active == 1),
                rc => Err(rc),
            }
        })
    }

    /// nvmlDeviceGetNvLinkRemoteDeviceType: an nvmlIntNvLinkDeviceType_t (0 GPU, 1 IBM NPU,
    /// 2 switch).
    pub fn nvlink_remote_type(&self, dev: Device<'_>, link: u32) -> Option<u32> {
        let f = self
            .sym::<unsafe extern "C" fn(RawDevice, c_uint, *mut c_uint) -> c_int>(
                b"nvmlDeviceGetNvLinkRemoteDeviceType\0",
            )
            .ok()?;
        let mut t: c_uint = 0;
        // SAFETY: a handle of this session, a link index, one out-parameter (an enum, int-sized).
        (unsafe { f(dev.raw, link, &mut t) } == SUCCESS).then_some(t)
    }
}

/// The health questions, each answered with NVML's return code (see
/// [`cudoctor_snapshot::NvmlQuery`]; [`NVML_NO_SYMBOL`] when the library lacks the call).
impl Nvml {
    /// A call of the form `nvmlReturn_t f(nvmlDevice_t, T*)` for a plain integer `T`.
    fn query_one<T: Copy + Default>(&self, dev: Device<'_>, name: &[u8]) -> NvmlQuery<T> {
        let Ok(f) = self.sym::<unsafe extern "C" fn(RawDevice, *mut T) -> c_int>(name) else {
            return no_symbol();
        };
        let mut v = T::default();
        // SAFETY: a handle of this session and one out-parameter of the type NVML documents for
        // `name` (unsigned int, an int-sized enum, or unsigned long long).
        let rc = unsafe { f(dev.raw, &mut v) };
        answered(rc, v)
    }

    /// A call of the form `nvmlReturn_t f(nvmlDevice_t, unsigned int*, unsigned int*)`, read as
    /// a current and a pending enable state (nvmlDeviceGetEccMode, nvmlDeviceGetMigMode).
    fn current_pending(&self, dev: Device<'_>, name: &[u8]) -> NvmlQuery<CurrentPending> {
        let Ok(f) =
            self.sym::<unsafe extern "C" fn(RawDevice, *mut c_uint, *mut c_uint) -> c_int>(name)
        else {
            return no_symbol();
        };
        let (mut current, mut pending) = (0, 0);
        // SAFETY: a handle of this session and two out-parameters (int-sized enums).
        let rc = unsafe { f(dev.raw, &mut current, &mut pending) };
        answered(
            rc,
            CurrentPending {
                current: current == 1,
                pending: pending == 1,
            },
        )
    }

    /// nvmlDeviceGetPersistenceMode.
    pub fn persistence_mode(&self, dev: Device<'_>) -> NvmlQuery<bool> {
        map(
            self.query_one::<c_uint>(dev, b"nvmlDeviceGetPersistenceMode\0"),
            |v| v == 1,
        )
    }

    /// nvmlDeviceGetEccMode.
    pub fn ecc_mode(&self, dev: Device<'_>) -> NvmlQuery<CurrentPending> {
        self.current_pending(dev, b"nvmlDeviceGetEccMode\0")
    }

    /// nvmlDeviceGetMigMode.
    pub fn mig_mode(&self, dev: Device<'_>) -> NvmlQuery<CurrentPending> {
        self.current_pending(dev, b"nvmlDeviceGetMigMode\0")
    }

    /// nvmlDeviceGetTotalEccErrors for both error types of one counter (0 volatile, 1
    /// aggregate); the first failing return code is kept.
    pub fn ecc_errors(&self, dev: Device<'_>, counter: c_uint) -> NvmlQuery<EccCounts> {
        let Ok(f) = self.sym::<unsafe extern "C" fn(RawDevice, c_uint, c_uint, *mut u64) -> c_int>(
            b"nvmlDeviceGetTotalEccErrors\0",
        ) else {
            return no_symbol();
        };
        let mut counts = [0u64; 2];
        // nvmlMemoryErrorType_t: 0 corrected, 1 uncorrected.
        for (error_type, slot) in counts.iter_mut().enumerate() {
            // SAFETY: a handle of this session, two enums NVML defines, one out-parameter.
            let rc = unsafe { f(dev.raw, error_type as c_uint, counter, slot) };
            if rc != SUCCESS {
                return NvmlQuery { rc, value: None };
            }
        }
        answered(
            SUCCESS,
            EccCounts {
                corrected: counts[0],
                uncorrected: counts[1],
            },
        )
    }

    /// nvmlDeviceGetRetiredPagesPendingStatus.
    pub fn retired_pages_pending(&self, dev: Device<'_>) -> NvmlQuery<bool> {
        map(
            self.query_one::<c_uint>(dev, b"nvmlDeviceGetRetiredPagesPendingStatus\0"),
            |v| v == 1,
        )
    }

    /// nvmlDeviceGetRemappedRows.
    pub fn remapped_rows(&self, dev: Device<'_>) -> NvmlQuery<RowRemap> {
        type F = unsafe extern "C" fn(
            RawDevice,
            *mut c_uint,
            *mut c_uint,
            *mut c_uint,
            *mut c_uint,
        ) -> c_int;
        let Ok(f) = self.sym::<F>(b"nvmlDeviceGetRemappedRows\0") else {
            return no_symbol();
        };
        let (mut corrected, mut uncorrected, mut pending, mut failed) = (0, 0, 0, 0);
        // SAFETY: a handle of this session and four out-parameters (unsigned int).
        let rc = unsafe {
            f(
                dev.raw,
                &mut corrected,
                &mut uncorrected,
                &mut pending,
                &mut failed,
            )
        };
        answered(
            rc,
            RowRemap {
                corrected_rows: corrected,
                uncorrected_rows: uncorrected,
                pending: pending != 0,
                failed: failed != 0,
            },
        )
    }

    /// nvmlDeviceGetCurrentClocksEventReasons (r535 and newer), else the older name of the same
    /// call, nvmlDeviceGetCurrentClocksThrottleReasons.
    pub fn clocks_event_reasons(&self, dev: Device<'_>) -> NvmlQuery<u64> {
        let q = self.query_one::<u64>(dev, b"nvmlDeviceGetCurrentClocksEventReasons\0");
        if q.rc == NVML_NO_SYMBOL {
            return self.query_one::<u64>(dev, b"nvmlDeviceGetCurrentClocksThrottleReasons\0");
        }
        q
    }

    /// nvmlDeviceGetUtilizationRates' GPU percentage.
    pub fn utilization_gpu(&self, dev: Device<'_>) -> NvmlQuery<u32> {
        // nvmlUtilization_t is { unsigned int gpu; unsigned int memory; }.
        map(
            self.query_one::<[c_uint; 2]>(dev, b"nvmlDeviceGetUtilizationRates\0"),
            |v| v[0],
        )
    }

    /// nvmlDeviceGetPerformanceState: 0 (P0) to 15; 32 is NVML_PSTATE_UNKNOWN, kept as no answer.
    pub fn pstate(&self, dev: Device<'_>) -> NvmlQuery<u32> {
        let q = self.query_one::<c_uint>(dev, b"nvmlDeviceGetPerformanceState\0");
        NvmlQuery {
            rc: q.rc,
            value: q.value.filter(|&p| p <= 15),
        }
    }

    /// One unsigned-int PCIe link query (nvmlDeviceGetCurrPcieLinkGeneration and its kin).
    pub fn pcie(&self, dev: Device<'_>, name: &[u8]) -> NvmlQuery<u32> {
        self.query_one::<c_uint>(dev, name)
    }

    /// nvmlDeviceGetNvLinkErrorCounter for one link: replay, recovery, CRC flit, CRC data
    /// (nvmlNvLinkErrorCounter_t 0-3); a counter the GPU does not keep is left out.
    pub fn nvlink_errors(&self, dev: Device<'_>, link: u32) -> Option<NvLinkErrors> {
        let f = self
            .sym::<unsafe extern "C" fn(RawDevice, c_uint, c_uint, *mut u64) -> c_int>(
                b"nvmlDeviceGetNvLinkErrorCounter\0",
            )
            .ok()?;
        let read = |counter: c_uint| {
            let mut v = 0u64;
            // SAFETY: a handle of this session, a link index, a counter enum, one out-parameter.
            (unsafe { f(dev.raw, link, counter, &mut v) } == SUCCESS).then_some(v)
        };
        Some(NvLinkErrors {
            link,
            replay: read(0),
            recovery: read(1),
            crc_flit: read(2),
            crc_data: read(3),
        })
    }

    /// nvmlDeviceValidateInforom: valid (NVML_SUCCESS) or corrupted
    /// (NVML_ERROR_CORRUPTED_INFOROM); other codes are no answer.
    pub fn inforom_valid(&self, dev: Device<'_>) -> NvmlQuery<bool> {
        let Ok(f) =
            self.sym::<unsafe extern "C" fn(RawDevice) -> c_int>(b"nvmlDeviceValidateInforom\0")
        else {
            return no_symbol();
        };
        // SAFETY: a handle of this session, no other argument.
        let rc = unsafe { f(dev.raw) };
        NvmlQuery {
            rc,
            value: match rc {
                SUCCESS => Some(true),
                ERROR_CORRUPTED_INFOROM => Some(false),
                _ => None,
            },
        }
    }
}

/// NVML_ERROR_CORRUPTED_INFOROM.
const ERROR_CORRUPTED_INFOROM: c_int = 14;

fn no_symbol<T>() -> NvmlQuery<T> {
    NvmlQuery {
        rc: NVML_NO_SYMBOL,
        value: None,
    }
}

fn answered<T>(rc: c_int, v: T) -> NvmlQuery<T> {
    NvmlQuery {
        rc,
        value: (rc == SUCCESS).then_some(v),
    }
}

fn map<T, U>(q: NvmlQuery<T>, f: impl FnOnce(T) -> U) -> NvmlQuery<U> {
    NvmlQuery {
        rc: q.rc,
        value: q.value.map(f),
    }
}

/// Runs one nvmlPciInfo_t query into a buffer and reads its `busId`.
///
/// nvmlPciInfo_t is char busIdLegacy[16]; 5 x unsigned int; char busId[32] (68 bytes). The
/// buffer handed to `query` is larger (256 bytes) and aligned, in case a driver writes more.
fn bus_id_of(query: impl FnOnce(*mut u8) -> c_int) -> Option<String> {
    let mut buf = [0u64; 32];
    if query(buf.as_mut_ptr().cast::<u8>()) != SUCCESS {
        return None;
    }
    let raw: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let field = raw.get(36..68)?;
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let s = String::from_utf8_lossy(field.get(..end)?).into_owned();
    (!s.is_empty()).then_some(s)
}

/// The text of a NUL-terminated C string in a buffer (the whole buffer when NVML wrote no NUL).
fn c_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_strings_stop_at_the_first_nul_or_the_buffer_end() {
        let mut buf = [0 as c_char; 8];
        for (slot, b) in buf.iter_mut().zip(b"580.1\0xy") {
            *slot = *b as c_char;
        }
        assert_eq!(c_string(&buf), "580.1");
        let full = [b'a' as c_char; 4];
        assert_eq!(c_string(&full), "aaaa");
    }

    #[test]
    fn bus_id_is_read_from_its_offset() {
        let id = bus_id_of(|p| {
            let text = b"00000000:00:06.0";
            for (i, b) in text.iter().enumerate() {
                // SAFETY: the buffer is 256 bytes; 36 + 16 < 256.
                unsafe { *p.add(36 + i) = *b };
            }
            SUCCESS
        });
        assert_eq!(id.as_deref(), Some("00000000:00:06.0"));
        assert_eq!(bus_id_of(|_| ERROR_NOT_SUPPORTED), None);
        assert_eq!(bus_id_of(|_| SUCCESS), None, "an empty id is no id");
    }
}
