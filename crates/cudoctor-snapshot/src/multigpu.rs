//! Multi-GPU facts: how the GPUs are connected (NVML's topology, P2P status, NVLink links) and
//! which NCCL libraries exist. NVML sees every GPU of the machine, whatever CUDA_VISIBLE_DEVICES
//! says, so these facts can be compared with what a process is allowed to see.

use serde::{Deserialize, Serialize};

use crate::Attempt;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MultiGpuFacts {
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    /// Absent when NVML could not be asked (no driver, fake root, timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Topology>,
    /// NCCL shared libraries found in Python environments and system directories.
    #[serde(default)]
    pub nccl_libraries: Vec<NcclLibrary>,
    /// Interfaces, InfiniBand/RoCE ports and GPUDirect RDMA for multi-node runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::NetworkFacts>,
    /// `--deep` with MASTER_ADDR/MASTER_PORT set: the gloo rendezvous check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendezvous: Option<crate::RendezvousProbe>,
}

/// The GPUs and how each pair is connected.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Topology {
    /// Where it came from: `nvml`.
    pub source: String,
    #[serde(default)]
    pub gpus: Vec<TopologyGpu>,
    /// Every unordered pair `a < b`.
    #[serde(default)]
    pub pairs: Vec<GpuPair>,
}

impl Topology {
    /// The pair of GPUs `a` and `b` (NVML indices), in either order.
    pub fn pair(&self, a: u32, b: u32) -> Option<&GpuPair> {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        self.pairs.iter().find(|p| p.a == lo && p.b == hi)
    }

    pub fn gpu(&self, index: u32) -> Option<&TopologyGpu> {
        self.gpus.iter().find(|g| g.index == index)
    }

    /// True when some pair of GPUs talks over NVLink.
    pub fn any_nvlink(&self) -> bool {
        self.pairs
            .iter()
            .any(|p| p.link_class() == LinkClass::NvLink)
    }
}

/// One GPU as NVML indexes it (PCI bus order).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TopologyGpu {
    pub index: u32,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<String>,
    /// Each NVLink link NVML reports (empty on GPUs without NVLink).
    #[serde(default)]
    pub nvlinks: Vec<NvLink>,
}

impl TopologyGpu {
    pub fn active_nvlinks(&self) -> usize {
        self.nvlinks.iter().filter(|l| l.active).count()
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NvLink {
    pub link: u32,
    pub active: bool,
    /// PCI bus id of the far end (a GPU, or an NVSwitch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_bus_id: Option<String>,
    /// `gpu`, `switch`, `ibmnpu` or `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_kind: Option<String>,
}

/// How two GPUs reach each other.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GpuPair {
    pub a: u32,
    pub b: u32,
    /// The closest common ancestor on the PCIe tree (nvmlDeviceGetTopologyCommonAncestor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<PathLevel>,
    /// Active NVLink links joining the two directly (links through an NVSwitch are not counted).
    #[serde(default)]
    pub nvlinks: u32,
    /// nvmlDeviceGetP2PStatus for reads, writes, NVLink and atomics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p_read: Option<P2pStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p_write: Option<P2pStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p_nvlink: Option<P2pStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p_atomics: Option<P2pStatus>,
}

impl GpuPair {
    /// NVLink when links join the two or NVML says P2P over NVLink works (NVSwitch systems);
    /// else the PCIe path level.
    pub fn link_class(&self) -> LinkClass {
        if self.nvlinks > 0 || self.p2p_nvlink == Some(P2pStatus::Ok) {
            LinkClass::NvLink
        } else if let Some(level) = self.level {
            LinkClass::Pcie(level)
        } else {
            LinkClass::Unknown
        }
    }

    /// True when NVML says the GPUs can read or write each other's memory directly.
    pub fn p2p_ok(&self) -> Option<bool> {
        match (self.p2p_read, self.p2p_write) {
            (None, None) => None,
            (r, w) => Some(r == Some(P2pStatus::Ok) || w == Some(P2pStatus::Ok)),
        }
    }

    /// The `nvidia-smi topo -m` cell: `NV18`, `PIX`, `SYS`...
    pub fn label(&self) -> String {
        match self.link_class() {
            LinkClass::NvLink if self.nvlinks > 0 => format!("NV{}", self.nvlinks),
            LinkClass::NvLink => "NVSwitch".to_string(),
            LinkClass::Pcie(l) => l.label().to_string(),
            LinkClass::Unknown => "?".to_string(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkClass {
    NvLink,
    Pcie(PathLevel),
    Unknown,
}

/// nvmlGpuTopologyLevel_t, closest first. The labels are those of `nvidia-smi topo -m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathLevel {
    /// The same board (NVML_TOPOLOGY_INTERNAL).
    Internal,
    /// At most one PCIe switch (PIX).
    Single,
    /// Several PCIe switches, no host bridge (PXB).
    Multiple,
    /// Through a PCIe host bridge, the CPU (PHB).
    HostBridge,
    /// Between host bridges of one NUMA node (NODE).
    Node,
    /// Across the SMP interconnect between NUMA nodes (SYS).
    System,
}

impl PathLevel {
    /// From NVML's numeric value (0, 10, 20, 30, 40, 50).
    pub fn from_nvml(v: u32) -> Option<PathLevel> {
        Some(match v {
            0 => PathLevel::Internal,
            10 => PathLevel::Single,
            20 => PathLevel::Multiple,
            30 => PathLevel::HostBridge,
            40 => PathLevel::Node,
            50 => PathLevel::System,
            _ => return None,
        })
    }

    pub fn label(self) -> &'static str {
        match self {
            PathLevel::Internal => "BOARD",
            PathLevel::Single => "PIX",
            PathLevel::Multiple => "PXB",
            PathLevel::HostBridge => "PHB",
            PathLevel::Node => "NODE",
            PathLevel::System => "SYS",
        }
    }
}

/// nvmlGpuP2PStatus_t.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum P2pStatus {
    Ok,
    ChipsetNotSupported,
    GpuNotSupported,
    TopologyNotSupported,
    DisabledByRegkey,
    NotSupported,
    Unknown,
}

impl P2pStatus {
    pub fn from_nvml(v: u32) -> P2pStatus {
        match v {
            0 => P2pStatus::Ok,
            1 => P2pStatus::ChipsetNotSupported,
            2 => P2pStatus::GpuNotSupported,
            3 => P2pStatus::TopologyNotSupported,
            4 => P2pStatus::DisabledByRegkey,
            5 => P2pStatus::NotSupported,
            _ => P2pStatus::Unknown,
        }
    }

    /// The `nvidia-smi topo -p2p` legend's words.
    pub fn describe(self) -> &'static str {
        match self {
            P2pStatus::Ok => "OK",
            P2pStatus::ChipsetNotSupported => "chipset not supported",
            P2pStatus::GpuNotSupported => "GPU not supported",
            P2pStatus::TopologyNotSupported => "topology not supported",
            P2pStatus::DisabledByRegkey => "disabled by a driver registry key",
            P2pStatus::NotSupported => "not supported",
            P2pStatus::Unknown => "unknown",
        }
    }
}

/// One copy of libnccl found on disk.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NcclLibrary {
    pub path: String,
    /// From the file name (`libnccl.so.2.28.9`) or the owning wheel's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `wheel nvidia-nccl-cu13` or `system`.
    pub origin: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_classes_and_labels() {
        let nv = GpuPair {
            a: 0,
            b: 1,
            level: Some(PathLevel::System),
            nvlinks: 18,
            ..Default::default()
        };
        assert_eq!(nv.link_class(), LinkClass::NvLink);
        assert_eq!(nv.label(), "NV18");
        let switch = GpuPair {
            p2p_nvlink: Some(P2pStatus::Ok),
            ..Default::default()
        };
        assert_eq!(switch.label(), "NVSwitch");
        let pcie = GpuPair {
            level: Some(PathLevel::from_nvml(50).unwrap()),
            p2p_read: Some(P2pStatus::from_nvml(3)),
            ..Default::default()
        };
        assert_eq!(pcie.label(), "SYS");
        assert_eq!(pcie.p2p_ok(), Some(false));
        assert_eq!(GpuPair::default().p2p_ok(), None);
    }

    #[test]
    fn pairs_are_found_in_either_order() {
        let t = Topology {
            source: "nvml".into(),
            gpus: vec![],
            pairs: vec![GpuPair {
                a: 0,
                b: 3,
                ..Default::default()
            }],
        };
        assert!(t.pair(3, 0).is_some());
        assert!(t.pair(0, 1).is_none());
    }
}
