//! The multi-GPU layer's facts: how GPUs connect (NVML: common PCIe ancestor, P2P status,
//! NVLink links) and which NCCL libraries are on disk. NVML needs no CUDA context and no
//! nvidia-smi; it is loaded at run time, asked with a time limit, and skipped under `--root`.
//! The NCCL_* and CUDA_VISIBLE_DEVICES variables are already in the snapshot's `env`.

use cudoctor_snapshot::{
    Attempt, GpuPair, MultiGpuFacts, NcclLibrary, NvLink, Outcome, P2pStatus, PathLevel, PythonEnv,
    Topology, TopologyGpu,
};

use crate::driver::probe::{Answer, TopologyAnswer};
use crate::host::{split_path_list, Host};
use crate::nvml::{self, Device, Nvml};

/// System directories where distributions install libnccl.
const SYSTEM_LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/usr/local/nccl/lib",
];

/// The GPU topology from the driver probe's NVML session (`None`: not asked).
pub fn topology_facts(
    host: &Host,
    answer: Option<Answer<TopologyAnswer, String>>,
) -> MultiGpuFacts {
    let mut facts = MultiGpuFacts::default();
    let attempt = |outcome, detail: String| Attempt::new("nvml topology", outcome, detail);
    if !host.dynamic_loading {
        facts.attempts.push(attempt(
            Outcome::Skipped,
            "dynamic loading is off under --root".into(),
        ));
        return facts;
    }
    match answer {
        None => {}
        Some(Answer::Got(Ok((topology, notes)))) => {
            let mut detail = format!(
                "{} GPU(s), {} pair(s)",
                topology.gpus.len(),
                topology.pairs.len()
            );
            if !notes.is_empty() {
                detail.push_str(&format!("; {}", notes.join("; ")));
            }
            facts.attempts.push(attempt(Outcome::Ok, detail));
            facts.topology = Some(topology);
        }
        Some(Answer::Got(Err(e))) => {
            facts
                .attempts
                .push(attempt(crate::driver::outcome_of_load_error(&e), e));
        }
        Some(Answer::Missing { outcome, why }) => facts.attempts.push(attempt(outcome, why)),
    }
    facts
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

/// NVML_NVLINK_MAX_LINKS in current headers; links past a GPU's count answer INVALID_ARGUMENT.
pub(crate) const MAX_LINKS: u32 = 18;

/// How the GPUs connect, from an NVML session, with notes on GPUs it could not open.
pub(crate) fn read_topology(nvml: &Nvml) -> Result<(Topology, Vec<String>), String> {
    let count = nvml.device_count()?;
    let by_index = nvml.handle_by_index()?;
    let mut notes = Vec::new();
    let mut devices: Vec<(TopologyGpu, Device)> = Vec::new();
    // A driver never reports more than a few dozen GPUs; bound the loop against nonsense.
    for index in 0..count.min(256) {
        let dev = match by_index(index) {
            Ok(dev) => dev,
            Err(rc) => {
                notes.push(format!("GPU {index}: handle: NVML error {rc}"));
                continue;
            }
        };
        let gpu = TopologyGpu {
            index,
            name: nvml.name(dev).unwrap_or_default(),
            uuid: nvml.uuid(dev),
            bus_id: nvml.pci_bus_id(dev),
            nvlinks: nvlinks(nvml, dev),
        };
        devices.push((gpu, dev));
    }
    let mut pairs = Vec::new();
    for (i, (a, da)) in devices.iter().enumerate() {
        for (b, db) in devices.iter().skip(i + 1) {
            pairs.push(pair(nvml, (a, *da), (b, *db)));
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

fn pair(nvml: &Nvml, (a, da): (&TopologyGpu, Device), (b, db): (&TopologyGpu, Device)) -> GpuPair {
    let level = nvml.common_ancestor(da, db).and_then(PathLevel::from_nvml);
    let p2p = |cap| nvml.p2p_status(da, db, cap).map(P2pStatus::from_nvml);
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
        p2p_read: p2p(nvml::P2P_READ),
        p2p_write: p2p(nvml::P2P_WRITE),
        p2p_nvlink: p2p(nvml::P2P_NVLINK),
        p2p_atomics: p2p(nvml::P2P_ATOMICS),
    }
}

fn nvlinks(nvml: &Nvml, dev: Device) -> Vec<NvLink> {
    let Some(state) = nvml.nvlink_state() else {
        return Vec::new();
    };
    let mut links = Vec::new();
    for link in 0..MAX_LINKS {
        let active = match state(dev, link) {
            Ok(active) => active,
            // No NVLink on this GPU, or past its last link.
            Err(nvml::ERROR_NOT_SUPPORTED | nvml::ERROR_INVALID_ARGUMENT) => break,
            Err(_) => continue,
        };
        let remote_kind = if active {
            nvml.nvlink_remote_type(dev, link).map(|t| {
                match t {
                    0 => "gpu",
                    1 => "ibmnpu",
                    2 => "switch",
                    _ => "unknown",
                }
                .to_string()
            })
        } else {
            None
        };
        links.push(NvLink {
            link,
            active,
            remote_bus_id: if active {
                nvml.nvlink_remote_bus_id(dev, link)
            } else {
                None
            },
            remote_kind,
        });
    }
    links
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
        let host = Host::rooted(
            root.to_path_buf(),
            BTreeMap::new(),
            std::time::Duration::from_secs(1),
        );
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
        let facts = topology_facts(&host, None);
        assert_eq!(facts.attempts[0].outcome, Outcome::Skipped);
        assert!(facts.topology.is_none());
        let libs = nccl_libraries(&host, &[env]);
        assert_eq!(libs.len(), 2, "{libs:?}");
        assert_eq!(libs[0].origin, "wheel nvidia-nccl-cu13");
        assert_eq!(libs[0].version.as_deref(), Some("2.28.9"));
        assert_eq!(libs[1].path, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5");
        assert_eq!(libs[1].version.as_deref(), Some("2.21.5"));
        assert_eq!(libs[1].origin, "system");
    }
}
