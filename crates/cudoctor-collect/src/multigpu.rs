//! The multi-GPU layer's facts: how GPUs connect (NVML: common PCIe ancestor, P2P status,
//! NVLink links) and which NCCL libraries are on disk. NVML needs no CUDA context and no
//! nvidia-smi; it is loaded at run time, asked with a time limit, and skipped under `--root`.
//! The NCCL_* and CUDA_VISIBLE_DEVICES variables are already in the snapshot's `env`.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use cudoctor_snapshot::{Attempt, MultiGpuFacts, NcclLibrary, Outcome, PythonEnv};

use crate::host::{split_path_list, Host};

/// System directories where distributions install libnccl.
const SYSTEM_LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/usr/local/nccl/lib",
];

pub fn collect(host: &Host, envs: &[PythonEnv]) -> MultiGpuFacts {
    let mut facts = MultiGpuFacts::default();
    if host.dynamic_loading {
        match with_timeout(host.command_timeout, nvml::topology) {
            Some(Ok((topology, notes))) => {
                let mut detail = format!(
                    "{} GPU(s), {} pair(s)",
                    topology.gpus.len(),
                    topology.pairs.len()
                );
                if !notes.is_empty() {
                    detail.push_str(&format!("; {}", notes.join("; ")));
                }
                facts
                    .attempts
                    .push(Attempt::new("nvml topology", Outcome::Ok, detail));
                facts.topology = Some(topology);
            }
            Some(Err(e)) => {
                let outcome = if e.contains("cannot open shared object") {
                    Outcome::Absent
                } else {
                    Outcome::Failed
                };
                facts
                    .attempts
                    .push(Attempt::new("nvml topology", outcome, e));
            }
            None => facts.attempts.push(Attempt::new(
                "nvml topology",
                Outcome::TimedOut,
                format!("no answer in {:?}", host.command_timeout),
            )),
        }
    } else {
        facts.attempts.push(Attempt::new(
            "nvml topology",
            Outcome::Skipped,
            "dynamic loading is off under --root",
        ));
    }
    facts.nccl_libraries = nccl_libraries(host, envs);
    facts
}

/// Runs `f` on a thread and gives up after `timeout`: a wedged driver can hang NVML.
fn with_timeout<T: Send + 'static>(
    timeout: Duration,
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Option<Result<T, String>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(timeout).ok()
}

/// Every libnccl in the environments' wheels and in system library directories, one entry per
/// real file.
pub fn nccl_libraries(host: &Host, envs: &[PythonEnv]) -> Vec<NcclLibrary> {
    let mut found: Vec<NcclLibrary> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut add = |dir: &str, origin: &str, wheel_version: Option<&str>| {
        for name in host.list_dir(dir) {
            if !name.starts_with("libnccl.so") {
                continue;
            }
            let path = format!("{}/{name}", dir.trim_end_matches('/'));
            let real = host
                .resolve(&path)
                .map(|(r, _)| r)
                .unwrap_or_else(|| path.clone());
            if seen.contains(&real) || !host.is_file(&real) {
                continue;
            }
            seen.push(real.clone());
            let file = real.rsplit('/').next().unwrap_or(&real);
            let version =
                version_from_file_name(file).or_else(|| wheel_version.map(str::to_string));
            found.push(NcclLibrary {
                path: real,
                version,
                origin: origin.to_string(),
            });
        }
    };
    for env in envs {
        let wheel = env
            .packages
            .iter()
            .find(|p| p.name.starts_with("nvidia-nccl"));
        for sp in &env.site_packages {
            if let Some(w) = wheel {
                add(
                    &format!("{sp}/nvidia/nccl/lib"),
                    &format!("wheel {}", w.name),
                    Some(w.version.as_str()),
                );
            }
            add(&format!("{sp}/torch/lib"), "bundled with torch", None);
        }
    }
    for dir in split_path_list(host.var("LD_LIBRARY_PATH").unwrap_or("")) {
        add(&dir, "LD_LIBRARY_PATH", None);
    }
    for dir in SYSTEM_LIB_DIRS {
        add(dir, "system", None);
    }
    found
}

/// `libnccl.so.2.28.9` -> `2.28.9`; `libnccl.so.2` says too little to be a version.
fn version_from_file_name(name: &str) -> Option<String> {
    let v = name.strip_prefix("libnccl.so.")?;
    let parts: Vec<&str> = v.split('.').collect();
    (parts.len() >= 3
        && parts
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty()))
    .then(|| v.to_string())
}

/// NVML calls for topology. Only queries; NVML is initialised and shut down around them.
mod nvml {
    #![allow(unsafe_code)]

    use std::ffi::{c_char, c_int, c_uint, c_void};

    use cudoctor_snapshot::{GpuPair, NvLink, P2pStatus, PathLevel, Topology, TopologyGpu};
    use libloading::{Library, Symbol};

    const NVML_LIBRARY: &str = "libnvidia-ml.so.1";
    const NVML_SUCCESS: c_int = 0;
    const NVML_ERROR_INVALID_ARGUMENT: c_int = 2;
    const NVML_ERROR_NOT_SUPPORTED: c_int = 3;
    /// NVML_NVLINK_MAX_LINKS in current headers; links past a GPU's count answer INVALID_ARGUMENT.
    const MAX_LINKS: c_uint = 18;
    /// nvmlGpuP2PCapsIndex_t: READ, WRITE, NVLINK, ATOMICS.
    const P2P_READ: c_uint = 0;
    const P2P_WRITE: c_uint = 1;
    const P2P_NVLINK: c_uint = 2;
    const P2P_ATOMICS: c_uint = 3;

    type Device = *mut c_void;

    pub fn topology() -> Result<(Topology, Vec<String>), String> {
        // SAFETY: NVML is the driver's management library; init/query/shutdown is its intended use.
        let lib = unsafe { Library::new(NVML_LIBRARY) }.map_err(|e| e.to_string())?;
        let nvml = Nvml { lib: &lib };
        let init = nvml.sym::<unsafe extern "C" fn() -> c_int>(b"nvmlInit_v2\0")?;
        // SAFETY: no arguments.
        let rc = unsafe { init() };
        if rc != NVML_SUCCESS {
            return Err(format!("nvmlInit_v2 returned NVML error {rc}"));
        }
        let result = nvml.read();
        if let Ok(shutdown) = nvml.sym::<unsafe extern "C" fn() -> c_int>(b"nvmlShutdown\0") {
            // SAFETY: no arguments; balances the init above.
            let _ = unsafe { shutdown() };
        }
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

        fn read(&self) -> Result<(Topology, Vec<String>), String> {
            let count_fn =
                self.sym::<unsafe extern "C" fn(*mut c_uint) -> c_int>(b"nvmlDeviceGetCount_v2\0")?;
            let mut count: c_uint = 0;
            // SAFETY: one out-parameter.
            let rc = unsafe { count_fn(&mut count) };
            if rc != NVML_SUCCESS {
                return Err(format!("nvmlDeviceGetCount_v2 returned NVML error {rc}"));
            }
            let by_index = self.sym::<unsafe extern "C" fn(c_uint, *mut Device) -> c_int>(
                b"nvmlDeviceGetHandleByIndex_v2\0",
            )?;
            let mut notes = Vec::new();
            let mut devices: Vec<(TopologyGpu, Device)> = Vec::new();
            // A driver never reports more than a few dozen GPUs; bound the loop against nonsense.
            for index in 0..count.min(256) {
                let mut dev: Device = std::ptr::null_mut();
                // SAFETY: index < count; the out-parameter is a handle.
                let rc = unsafe { by_index(index, &mut dev) };
                if rc != NVML_SUCCESS {
                    notes.push(format!("GPU {index}: handle: NVML error {rc}"));
                    continue;
                }
                let gpu = TopologyGpu {
                    index,
                    name: self
                        .string_of(dev, b"nvmlDeviceGetName\0")
                        .unwrap_or_default(),
                    uuid: self.string_of(dev, b"nvmlDeviceGetUUID\0"),
                    bus_id: self.pci_bus_id(dev, None),
                    nvlinks: self.nvlinks(dev),
                };
                devices.push((gpu, dev));
            }
            let mut pairs = Vec::new();
            for (i, (a, da)) in devices.iter().enumerate() {
                for (b, db) in devices.iter().skip(i + 1) {
                    pairs.push(self.pair(a, *da, b, *db));
                }
            }
            Ok((
                Topology {
                    source: "nvml".to_string(),
                    gpus: devices.into_iter().map(|(g, _)| g).collect(),
                    pairs,
                },
                notes,
            ))
        }

        fn pair(&self, a: &TopologyGpu, da: Device, b: &TopologyGpu, db: Device) -> GpuPair {
            let level = self
                .sym::<unsafe extern "C" fn(Device, Device, *mut c_uint) -> c_int>(
                    b"nvmlDeviceGetTopologyCommonAncestor\0",
                )
                .ok()
                .and_then(|f| {
                    let mut v: c_uint = 0;
                    // SAFETY: two valid handles and one out-parameter (an enum, int-sized).
                    (unsafe { f(da, db, &mut v) } == NVML_SUCCESS).then_some(v)
                })
                .and_then(PathLevel::from_nvml);
            let p2p = |cap: c_uint| -> Option<P2pStatus> {
                let f = self
                    .sym::<unsafe extern "C" fn(Device, Device, c_uint, *mut c_uint) -> c_int>(
                        b"nvmlDeviceGetP2PStatus\0",
                    )
                    .ok()?;
                let mut status: c_uint = 0;
                // SAFETY: two valid handles, a caps index NVML defines, one out-parameter.
                (unsafe { f(da, db, cap, &mut status) } == NVML_SUCCESS)
                    .then(|| P2pStatus::from_nvml(status))
            };
            let same = |x: &Option<String>, y: &Option<String>| match (x, y) {
                (Some(x), Some(y)) => x.eq_ignore_ascii_case(y),
                _ => false,
            };
            let links_a_to_b = a
                .nvlinks
                .iter()
                .filter(|l| l.active && same(&l.remote_bus_id, &b.bus_id))
                .count();
            GpuPair {
                a: a.index,
                b: b.index,
                level,
                nvlinks: u32::try_from(links_a_to_b).unwrap_or(u32::MAX),
                p2p_read: p2p(P2P_READ),
                p2p_write: p2p(P2P_WRITE),
                p2p_nvlink: p2p(P2P_NVLINK),
                p2p_atomics: p2p(P2P_ATOMICS),
            }
        }

        fn nvlinks(&self, dev: Device) -> Vec<NvLink> {
            let Ok(state) = self.sym::<unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int>(
                b"nvmlDeviceGetNvLinkState\0",
            ) else {
                return Vec::new();
            };
            let remote_type = self
                .sym::<unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int>(
                    b"nvmlDeviceGetNvLinkRemoteDeviceType\0",
                )
                .ok();
            let mut links = Vec::new();
            for link in 0..MAX_LINKS {
                let mut active: c_uint = 0;
                // SAFETY: a valid handle, a link index, one out-parameter (an enable state).
                let rc = unsafe { state(dev, link, &mut active) };
                if rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT {
                    // No NVLink on this GPU, or past its last link.
                    break;
                }
                if rc != NVML_SUCCESS {
                    continue;
                }
                let active = active == 1;
                let remote_kind = remote_type.as_ref().and_then(|f| {
                    let mut t: c_uint = 0;
                    // SAFETY: as above.
                    (active && unsafe { f(dev, link, &mut t) } == NVML_SUCCESS).then(|| {
                        match t {
                            0 => "gpu",
                            1 => "ibmnpu",
                            2 => "switch",
                            _ => "unknown",
                        }
                        .to_string()
                    })
                });
                links.push(NvLink {
                    link,
                    active,
                    remote_bus_id: if active {
                        self.pci_bus_id(dev, Some(link))
                    } else {
                        None
                    },
                    remote_kind,
                });
            }
            links
        }

        /// The device's own PCI bus id, or the far end of one of its NVLink links.
        fn pci_bus_id(&self, dev: Device, link: Option<c_uint>) -> Option<String> {
            // nvmlPciInfo_t: char busIdLegacy[16]; 5 x unsigned int; char busId[32] (68 bytes).
            // A larger, aligned buffer keeps us safe should a driver write more.
            let mut buf = [0u64; 32];
            let bytes = buf.as_mut_ptr().cast::<u8>();
            let rc = match link {
                None => {
                    let f = self
                        .sym::<unsafe extern "C" fn(Device, *mut u8) -> c_int>(
                            b"nvmlDeviceGetPciInfo_v3\0",
                        )
                        .ok()?;
                    // SAFETY: the buffer (256 bytes) is larger than the struct.
                    unsafe { f(dev, bytes) }
                }
                Some(l) => {
                    let f = self
                        .sym::<unsafe extern "C" fn(Device, c_uint, *mut u8) -> c_int>(
                            b"nvmlDeviceGetNvLinkRemotePciInfo_v2\0",
                        )
                        .ok()?;
                    // SAFETY: as above, with a link index.
                    unsafe { f(dev, l, bytes) }
                }
            };
            if rc != NVML_SUCCESS {
                return None;
            }
            let raw: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
            let field = raw.get(36..68)?;
            let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
            let s = String::from_utf8_lossy(field.get(..end)?).into_owned();
            (!s.is_empty()).then_some(s)
        }

        fn string_of(&self, dev: Device, name: &[u8]) -> Option<String> {
            let f = self
                .sym::<unsafe extern "C" fn(Device, *mut c_char, c_uint) -> c_int>(name)
                .ok()?;
            let mut buf = [0 as c_char; 96];
            // SAFETY: buffer and its length match; NVML NUL-terminates within it.
            if unsafe { f(dev, buf.as_mut_ptr(), buf.len() as c_uint) } != NVML_SUCCESS {
                return None;
            }
            let bytes: Vec<u8> = buf
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_snapshot::{Package, PythonEnvKind};
    use std::collections::BTreeMap;
    use std::os::unix::fs::symlink;

    #[test]
    fn versions_come_from_full_file_names_only() {
        assert_eq!(
            version_from_file_name("libnccl.so.2.28.9").as_deref(),
            Some("2.28.9")
        );
        assert_eq!(version_from_file_name("libnccl.so.2"), None);
        assert_eq!(version_from_file_name("libnccl.so"), None);
        assert_eq!(version_from_file_name("libnccl.so.2.x.1"), None);
    }

    #[test]
    fn finds_wheel_and_system_copies_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let sp = "/opt/venv/lib/python3.12/site-packages";
        let wheel_lib = root.join(&sp[1..]).join("nvidia/nccl/lib");
        std::fs::create_dir_all(&wheel_lib).unwrap();
        std::fs::write(wheel_lib.join("libnccl.so.2"), b"elf").unwrap();
        let sys_lib = root.join("usr/lib/x86_64-linux-gnu");
        std::fs::create_dir_all(&sys_lib).unwrap();
        std::fs::write(sys_lib.join("libnccl.so.2.21.5"), b"elf").unwrap();
        symlink("libnccl.so.2.21.5", sys_lib.join("libnccl.so.2")).unwrap();
        let host = Host::rooted(root.to_path_buf(), BTreeMap::new(), Duration::from_secs(1));
        let env = PythonEnv {
            prefix: "/opt/venv".into(),
            kind: PythonEnvKind::Venv,
            site_packages: vec![sp.into()],
            packages: vec![Package {
                name: "nvidia-nccl-cu13".into(),
                version: "2.28.9".into(),
                location: sp.into(),
            }],
            ..Default::default()
        };
        let facts = collect(&host, &[env]);
        assert_eq!(facts.attempts[0].outcome, Outcome::Skipped);
        assert!(facts.topology.is_none());
        let libs = facts.nccl_libraries;
        assert_eq!(libs.len(), 2, "{libs:?}");
        assert_eq!(libs[0].origin, "wheel nvidia-nccl-cu13");
        assert_eq!(libs[0].version.as_deref(), Some("2.28.9"));
        assert_eq!(libs[1].path, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5");
        assert_eq!(libs[1].version.as_deref(), Some("2.21.5"));
        assert_eq!(libs[1].origin, "system");
    }
}
