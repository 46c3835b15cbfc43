//! NVML and libcuda, loaded at run time (no link-time dependency), so the binary runs on machines
//! with no driver at all. Only query calls that need no CUDA context are made: `cuInit` is never
//! called, and NVML is asked for facts, never to change anything.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use cudoctor_snapshot::{Gpu, GpuProcess};
use libloading::{Library, Symbol};

const NVML_LIBRARY: &str = "libnvidia-ml.so.1";
const CUDA_LIBRARY: &str = "libcuda.so.1";
const NVML_SUCCESS: c_int = 0;

/// What NVML said.
#[derive(Debug, Default)]
pub struct NvmlFacts {
    pub driver_version: Option<String>,
    pub max_cuda_int: Option<i32>,
    pub gpus: Vec<Gpu>,
    pub processes: Vec<GpuProcess>,
    /// Calls that failed for one device, kept for the report.
    pub notes: Vec<String>,
}

type Device = *mut c_void;

/// `cuDriverGetVersion` from libcuda: the highest CUDA version the driver supports, as
/// 1000*major + 10*minor. Needs no `cuInit` and no context.
pub fn libcuda_driver_version() -> Result<i32, String> {
    // SAFETY: libcuda.so.1 is the driver's user-space library; loading it runs no GPU work.
    let lib = unsafe { Library::new(CUDA_LIBRARY) }.map_err(|e| e.to_string())?;
    // SAFETY: the signature is CUresult cuDriverGetVersion(int*), stable since CUDA 2.2.
    unsafe {
        let f: Symbol<unsafe extern "C" fn(*mut c_int) -> c_int> = lib
            .get(b"cuDriverGetVersion\0")
            .map_err(|e| e.to_string())?;
        let mut v: c_int = 0;
        let rc = f(&mut v);
        if rc == 0 {
            Ok(v)
        } else {
            Err(format!("cuDriverGetVersion returned CUresult {rc}"))
        }
    }
}

/// Reads driver and per-GPU facts through NVML.
pub fn nvml_facts() -> Result<NvmlFacts, String> {
    // SAFETY: NVML is the driver's management library; init/query/shutdown is its intended use.
    let lib = unsafe { Library::new(NVML_LIBRARY) }.map_err(|e| e.to_string())?;
    let nvml = Nvml { lib: &lib };
    nvml.call0(b"nvmlInit_v2\0")?;
    let result = nvml.read_all();
    let _ = nvml.call0(b"nvmlShutdown\0");
    result
}

struct Nvml<'l> {
    lib: &'l Library,
}

impl Nvml<'_> {
    fn sym<T>(&self, name: &[u8]) -> Result<Symbol<'_, T>, String> {
        // SAFETY: every caller names the exact C signature NVML documents for `name`.
        unsafe { self.lib.get(name) }.map_err(|e| e.to_string())
    }

    fn check(name: &[u8], rc: c_int) -> Result<(), String> {
        if rc == NVML_SUCCESS {
            Ok(())
        } else {
            let n = String::from_utf8_lossy(name.strip_suffix(b"\0").unwrap_or(name));
            Err(format!("{n} returned NVML error {rc}"))
        }
    }

    fn call0(&self, name: &[u8]) -> Result<(), String> {
        let f = self.sym::<unsafe extern "C" fn() -> c_int>(name)?;
        // SAFETY: nvmlInit_v2 / nvmlShutdown take no arguments.
        Self::check(name, unsafe { f() })
    }

    fn read_all(&self) -> Result<NvmlFacts, String> {
        let mut facts = NvmlFacts::default();
        let mut buf = [0 as c_char; 96];
        let get_version = self.sym::<unsafe extern "C" fn(*mut c_char, c_uint) -> c_int>(
            b"nvmlSystemGetDriverVersion\0",
        )?;
        // SAFETY: buffer and its length match.
        if unsafe { get_version(buf.as_mut_ptr(), buf.len() as c_uint) } == NVML_SUCCESS {
            facts.driver_version = Some(c_string(&buf));
        }
        if let Ok(f) = self.sym::<unsafe extern "C" fn(*mut c_int) -> c_int>(
            b"nvmlSystemGetCudaDriverVersion_v2\0",
        ) {
            let mut v: c_int = 0;
            // SAFETY: one out-parameter.
            if unsafe { f(&mut v) } == NVML_SUCCESS {
                facts.max_cuda_int = Some(v);
            }
        }
        let count_fn =
            self.sym::<unsafe extern "C" fn(*mut c_uint) -> c_int>(b"nvmlDeviceGetCount_v2\0")?;
        let mut count: c_uint = 0;
        // SAFETY: one out-parameter.
        Self::check(b"nvmlDeviceGetCount_v2\0", unsafe { count_fn(&mut count) })?;
        // A driver never reports more than a few dozen GPUs; bound the loop against nonsense.
        for index in 0..count.min(256) {
            match self.device(index) {
                Ok((gpu, procs)) => {
                    facts.gpus.push(gpu);
                    facts.processes.extend(procs);
                }
                Err(e) => facts.notes.push(format!("GPU {index}: {e}")),
            }
        }
        Ok(facts)
    }

    fn device(&self, index: u32) -> Result<(Gpu, Vec<GpuProcess>), String> {
        let by_index = self.sym::<unsafe extern "C" fn(c_uint, *mut Device) -> c_int>(
            b"nvmlDeviceGetHandleByIndex_v2\0",
        )?;
        let mut dev: Device = std::ptr::null_mut();
        // SAFETY: index < count; out-parameter is a handle.
        Self::check(b"nvmlDeviceGetHandleByIndex_v2\0", unsafe {
            by_index(index, &mut dev)
        })?;
        let mut gpu = Gpu {
            index,
            source: "nvml".to_string(),
            ..Default::default()
        };
        gpu.name = self
            .string_of(dev, b"nvmlDeviceGetName\0")
            .unwrap_or_default();
        gpu.uuid = self.string_of(dev, b"nvmlDeviceGetUUID\0");
        gpu.bus_id = self.bus_id(dev);
        if let Ok(f) = self.sym::<unsafe extern "C" fn(Device, *mut c_int, *mut c_int) -> c_int>(
            b"nvmlDeviceGetCudaComputeCapability\0",
        ) {
            let (mut major, mut minor) = (0, 0);
            // SAFETY: two out-parameters.
            if unsafe { f(dev, &mut major, &mut minor) } == NVML_SUCCESS {
                gpu.compute_capability = Some(format!("{major}.{minor}"));
            }
        }
        if let Ok(f) = self.sym::<unsafe extern "C" fn(Device, *mut [u64; 3]) -> c_int>(
            b"nvmlDeviceGetMemoryInfo\0",
        ) {
            // nvmlMemory_t is { total, free, used } as unsigned long long.
            let mut mem = [0u64; 3];
            // SAFETY: the struct is three u64.
            if unsafe { f(dev, &mut mem) } == NVML_SUCCESS {
                gpu.memory_total_mib = Some(mem[0] >> 20);
                gpu.memory_used_mib = Some(mem[2] >> 20);
            }
        }
        if let Ok(f) = self.sym::<unsafe extern "C" fn(Device, *mut c_uint, *mut c_uint) -> c_int>(
            b"nvmlDeviceGetMigMode\0",
        ) {
            let (mut current, mut pending) = (0, 0);
            // SAFETY: two out-parameters. Fails with NOT_SUPPORTED on GPUs without MIG.
            if unsafe { f(dev, &mut current, &mut pending) } == NVML_SUCCESS {
                gpu.mig_mode = Some(enabled(current));
            }
        }
        if let Ok(f) = self.sym::<unsafe extern "C" fn(Device, *mut c_uint) -> c_int>(
            b"nvmlDeviceGetPersistenceMode\0",
        ) {
            let mut state = 0;
            // SAFETY: one out-parameter (an enum, int-sized).
            if unsafe { f(dev, &mut state) } == NVML_SUCCESS {
                gpu.persistence_mode = Some(enabled(state));
            }
        }
        let procs = self.processes(dev, index).unwrap_or_default();
        Ok((gpu, procs))
    }

    fn string_of(&self, dev: Device, name: &[u8]) -> Option<String> {
        let f = self
            .sym::<unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int>(name)
            .ok()?;
        let mut buf = [0 as c_char; 96];
        // SAFETY: buffer and its length match; NVML NUL-terminates within it.
        (unsafe { f(dev, buf.as_mut_ptr(), buf.len() as c_uint) } == NVML_SUCCESS)
            .then(|| c_string(&buf))
    }

    fn bus_id(&self, dev: Device) -> Option<String> {
        let f = self
            .sym::<unsafe extern "C" fn(Device, *mut u8) -> c_int>(b"nvmlDeviceGetPciInfo_v3\0")
            .ok()?;
        // nvmlPciInfo_t: char busIdLegacy[16]; 5 x unsigned int; char busId[32] (68 bytes).
        // A larger, aligned buffer keeps us safe should a driver write more.
        let mut buf = [0u64; 32];
        let bytes = buf.as_mut_ptr().cast::<u8>();
        // SAFETY: the buffer (256 bytes) is larger than the struct.
        if unsafe { f(dev, bytes) } != NVML_SUCCESS {
            return None;
        }
        let raw: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let field = raw.get(36..68)?;
        let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
        let s = String::from_utf8_lossy(&field[..end]).into_owned();
        (!s.is_empty()).then_some(s)
    }

    fn processes(&self, dev: Device, index: u32) -> Option<Vec<GpuProcess>> {
        let f = self
            .sym::<unsafe extern "C" fn(Device, *mut c_uint, *mut ProcessInfoV3) -> c_int>(
                b"nvmlDeviceGetComputeRunningProcesses_v3\0",
            )
            .ok()?;
        let mut infos = [ProcessInfoV3::default(); 64];
        let mut count = infos.len() as c_uint;
        // SAFETY: count is the array capacity; NVML writes at most that many entries.
        if unsafe { f(dev, &mut count, infos.as_mut_ptr()) } != NVML_SUCCESS {
            return None;
        }
        let n = (count as usize).min(infos.len());
        Some(
            infos[..n]
                .iter()
                .map(|p| GpuProcess {
                    gpu_uuid: None,
                    gpu_index: Some(index),
                    pid: p.pid,
                    name: None,
                    // NVML reports "not available" as the all-ones value.
                    used_mib: (p.used_gpu_memory != u64::MAX).then_some(p.used_gpu_memory >> 20),
                })
                .collect(),
        )
    }
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

fn enabled(v: c_uint) -> String {
    if v == 1 { "Enabled" } else { "Disabled" }.to_string()
}

fn c_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    CStr::from_bytes_until_nul(&[bytes.as_slice(), &[0]].concat())
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default()
}
