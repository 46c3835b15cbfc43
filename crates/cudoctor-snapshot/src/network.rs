use serde::{Deserialize, Serialize};

/// What multi-node NCCL and gloo will find: network interfaces, InfiniBand/RoCE devices, and
/// whether GPUDirect RDMA's module is loaded.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NetworkFacts {
    /// `/sys/class/net/*`, sorted by name.
    #[serde(default)]
    pub interfaces: Vec<NetInterface>,
    /// `/sys/class/infiniband/*` (InfiniBand HCAs and RoCE NICs alike).
    #[serde(default)]
    pub ib_devices: Vec<IbDevice>,
    /// `nvidia_peermem` (or the older `nv_peer_mem`) in `/proc/modules`; absent when that file
    /// could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peermem_loaded: Option<bool>,
    /// The module's name as loaded, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peermem_module: Option<String>,
}

impl NetworkFacts {
    pub fn interface(&self, name: &str) -> Option<&NetInterface> {
        self.interfaces.iter().find(|i| i.name == name)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct NetInterface {
    pub name: String,
    /// `/sys/class/net/<name>/operstate`: `up`, `down`, `unknown` (loopback and some virtual
    /// devices), `dormant`, `lowerlayerdown`.
    pub operstate: String,
    /// `flags` has IFF_UP (administratively up), when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_up: Option<bool>,
}

impl NetInterface {
    /// Usable for traffic: operstate `up`, or `unknown` on a device that is administratively up
    /// (loopback and tunnels report `unknown` while they work).
    pub fn usable(&self) -> bool {
        match self.operstate.as_str() {
            "up" => true,
            "unknown" => self.admin_up != Some(false),
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct IbDevice {
    /// `mlx5_0`.
    pub name: String,
    #[serde(default)]
    pub ports: Vec<IbPort>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct IbPort {
    pub port: u32,
    /// `ports/N/state` as written: `4: ACTIVE`, `1: DOWN`.
    pub state: String,
    /// `ports/N/phys_state`: `5: LinkUp`, `3: Disabled`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phys_state: String,
    /// `ports/N/rate`: `400 Gb/sec (4X NDR)`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rate: String,
    /// `ports/N/link_layer`: `InfiniBand` or `Ethernet` (RoCE).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub link_layer: String,
}

impl IbPort {
    pub fn active(&self) -> bool {
        self.state.to_ascii_uppercase().contains("ACTIVE")
    }
}

/// `--deep`: a CPU-side gloo rendezvous against MASTER_ADDR/MASTER_PORT, in an environment's
/// own interpreter with torch, time-bounded.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RendezvousProbe {
    /// The interpreter that ran it.
    pub interpreter: String,
    pub master_addr: String,
    pub master_port: String,
    /// Addresses MASTER_ADDR resolved to (empty when it did not resolve).
    #[serde(default)]
    pub resolved: Vec<String>,
    /// MASTER_ADDR is an address of this machine (this node would host the store).
    #[serde(default)]
    pub local: bool,
    /// A TCP connection to MASTER_ADDR:MASTER_PORT, or absent when not tried (a local master
    /// with nothing listening yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpConnect>,
    /// Why the connection failed ([`TcpConnect::Failed`]), in the system's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_error: Option<String>,
    /// A two-rank gloo group formed on MASTER_ADDR (a local master only) with an all-reduce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gloo_ok: Option<bool>,
    /// The gloo or store error, in torch's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// GLOO_SOCKET_IFNAME as the probe saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gloo_socket_ifname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
    /// How the check's child process ended.
    pub ending: crate::ProbeEnding,
}

/// How a TCP connection attempt ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TcpConnect {
    Connected,
    /// Nothing listens there (a reset: the host is reachable).
    Refused,
    /// No answer in time: dropped packets, a firewall, no route.
    TimedOut,
    /// Another error (unreachable network, no route to host): its words in `tcp_error`.
    Failed,
}

impl TcpConnect {
    pub fn name(self) -> &'static str {
        match self {
            TcpConnect::Connected => "connected",
            TcpConnect::Refused => "refused",
            TcpConnect::TimedOut => "timed out",
            TcpConnect::Failed => "failed",
        }
    }
}
