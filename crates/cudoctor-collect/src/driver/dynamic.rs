//! NVML and libcuda, loaded at run time (no link-time dependency), so the binary runs on machines
//! with no driver at all. Only query calls that need no CUDA context are made: `cuInit` is never
//! called, and NVML is asked for facts, never to change anything. The NVML calls themselves are
//! in [`crate::nvml`].

use std::ffi::c_int;

use cudoctor_snapshot::{Gpu, GpuProcess};
use libloading::{Library, Symbol};

use crate::nvml::{self, Nvml};

#[cfg(not(windows))]
const CUDA_LIBRARY: &str = "libcuda.so.1";
/// The driver API of a Windows driver, in System32.
#[cfg(windows)]
const CUDA_LIBRARY: &str = "nvcuda.dll";

/// What NVML said.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct NvmlFacts {
    pub driver_version: Option<String>,
    pub max_cuda_int: Option<i32>,
    pub gpus: Vec<Gpu>,
    pub processes: Vec<GpuProcess>,
    /// Calls that failed for one device, kept for the report.
    pub notes: Vec<String>,
}

/// `cuDriverGetVersion` from libcuda: the highest CUDA version the driver supports, as
/// 1000*major + 10*minor. Needs no `cuInit` and no context.
#[allow(unsafe_code)]
pub fn libcuda_driver_version() -> Result<i32, String> {
    // SAFETY: libcuda.so.1 is the driver's user-space library; loading it runs no GPU work.
    let lib = unsafe { Library::new(CUDA_LIBRARY) }
        .map_err(|e| crate::nvml::load_error(CUDA_LIBRARY, &e))?;
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

/// GPU topology and notes, as the multi-GPU layer reads it.
type TopologyResult = Result<(cudoctor_snapshot::Topology, Vec<String>), String>;

/// Reads driver and per-GPU facts through NVML and, when asked, the GPU topology, in one
/// session (one `nvmlInit_v2`, its costliest call).
pub fn nvml_session(
    with_topology: bool,
) -> (Result<NvmlFacts, nvml::NvmlError>, Option<TopologyResult>) {
    let session = nvml::with_nvml(|n| {
        let facts = read_all(n);
        let topology = with_topology.then(|| crate::multigpu::read_topology(n));
        Ok((facts, topology))
    });
    match session {
        Ok((facts, topology)) => (facts.map_err(nvml::NvmlError::from), topology),
        Err(e) => {
            let topology = with_topology.then(|| Err(e.message.clone()));
            (Err(e), topology)
        }
    }
}

fn read_all(nvml: &Nvml) -> Result<NvmlFacts, String> {
    let mut facts = NvmlFacts {
        driver_version: nvml.driver_version()?,
        max_cuda_int: nvml.cuda_driver_version(),
        ..Default::default()
    };
    let count = nvml.device_count()?;
    // A driver never reports more than a few dozen GPUs; bound the loop against nonsense.
    for index in 0..count.min(256) {
        match device(nvml, index) {
            Ok((gpu, procs)) => {
                facts.gpus.push(gpu);
                facts.processes.extend(procs);
            }
            Err(e) => facts.notes.push(format!("GPU {index}: {e}")),
        }
    }
    Ok(facts)
}

fn device(nvml: &Nvml, index: u32) -> Result<(Gpu, Vec<GpuProcess>), String> {
    let by_index = nvml.handle_by_index()?;
    let dev = by_index(index).map_err(|rc| nvml::failed("nvmlDeviceGetHandleByIndex_v2", rc))?;
    let memory = nvml.memory(dev);
    let gpu = Gpu {
        index,
        source: "nvml".to_string(),
        what_if: false,
        name: nvml.name(dev).unwrap_or_default(),
        uuid: nvml.uuid(dev),
        bus_id: nvml.pci_bus_id(dev),
        compute_capability: nvml
            .compute_capability(dev)
            .map(|(major, minor)| format!("{major}.{minor}")),
        memory_total_mib: memory.as_ref().map(|m| m.total >> 20),
        memory_used_mib: memory.as_ref().map(|m| m.used >> 20),
        mig_enabled: nvml.mig_enabled(dev),
        persistence_enabled: nvml.persistence_enabled(dev),
    };
    let procs = nvml
        .running_processes(dev)
        .unwrap_or_default()
        .into_iter()
        .map(|p| GpuProcess {
            gpu_uuid: None,
            gpu_index: Some(index),
            pid: p.pid,
            name: None,
            used_mib: p.used_bytes.map(|b| b >> 20),
        })
        .collect();
    Ok((gpu, procs))
}
