//! NVML and libcuda, loaded at run time (no link-time dependency), so the binary runs on machines
//! with no driver at all. Only query calls that need no CUDA context are made: `cuInit` is never
//! called, and NVML is asked for facts, never to change anything. The NVML calls themselves are
//! in [`crate::nvml`].

use std::ffi::c_int;

use cudoctor_snapshot::{Gpu, GpuHealth, GpuProcess, NvLinkErrors, NvmlQuery, PcieLink};
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
    let processes = nvml.running_processes(dev);
    let health = health(nvml, dev, &processes);
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
        mig_enabled: NvmlQuery::get(&health.mig_mode).map(|m| m.current),
        persistence_enabled: NvmlQuery::get(&health.persistence_mode),
        health: Some(health),
    };
    let procs = processes
        .value
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

/// The GPU's health questions, each with NVML's return code: milliseconds in all, no stress.
fn health(
    nvml: &Nvml,
    dev: nvml::Device<'_>,
    processes: &NvmlQuery<Vec<nvml::Process>>,
) -> GpuHealth {
    // nvmlEccCounterType_t: 0 volatile, 1 aggregate.
    const VOLATILE: u32 = 0;
    const AGGREGATE: u32 = 1;
    // Each counter of each link is a call (a firmware round trip on GSP drivers): when the
    // first active link keeps none of them (Hopper answers NOT_SUPPORTED), the rest are not asked.
    let mut nvlink_errors: Vec<NvLinkErrors> = Vec::new();
    if let Some(state) = nvml.nvlink_state() {
        for link in 0..crate::multigpu::MAX_LINKS {
            if state(dev, link) != Ok(true) {
                continue;
            }
            let Some(e) = nvml.nvlink_errors(dev, link) else {
                break;
            };
            let kept = [e.replay, e.recovery, e.crc_flit, e.crc_data]
                .iter()
                .any(Option::is_some);
            if !kept {
                break;
            }
            nvlink_errors.push(e);
        }
    }
    GpuHealth {
        persistence_mode: Some(nvml.persistence_mode(dev)),
        ecc_mode: Some(nvml.ecc_mode(dev)),
        ecc_volatile: Some(nvml.ecc_errors(dev, VOLATILE)),
        ecc_aggregate: Some(nvml.ecc_errors(dev, AGGREGATE)),
        retired_pages_pending: Some(nvml.retired_pages_pending(dev)),
        row_remap: Some(nvml.remapped_rows(dev)),
        clocks_event_reasons: Some(nvml.clocks_event_reasons(dev)),
        utilization_gpu: Some(nvml.utilization_gpu(dev)),
        pstate: Some(nvml.pstate(dev)),
        pcie: PcieLink {
            current_gen: Some(nvml.pcie(dev, b"nvmlDeviceGetCurrPcieLinkGeneration\0")),
            max_gen: Some(nvml.pcie(dev, b"nvmlDeviceGetMaxPcieLinkGeneration\0")),
            current_width: Some(nvml.pcie(dev, b"nvmlDeviceGetCurrPcieLinkWidth\0")),
            max_width: Some(nvml.pcie(dev, b"nvmlDeviceGetMaxPcieLinkWidth\0")),
        },
        nvlink_errors,
        // nvmlDeviceValidateInforom checksums the inforom: 70 ms on an H200 (driver 580,
        // docs/device-runs/2026-12-04-h200x1), more than the rest of check. Asked only when
        // CUDOCTOR_INFOROM=1 is set (the child inherits it), as an operator's node check would.
        inforom_valid: std::env::var_os("CUDOCTOR_INFOROM")
            .is_some_and(|v| v == "1")
            .then(|| nvml.inforom_valid(dev)),
        compute_processes: Some(NvmlQuery {
            rc: processes.rc,
            value: processes.value.as_ref().map(|p| p.len() as u32),
        }),
        mig_mode: Some(nvml.mig_mode(dev)),
    }
}
