use serde::{Deserialize, Serialize};

/// Where the tool runs: container, WSL, device nodes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PlatformFacts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<ContainerFacts>,
    /// True under WSL2 (from the kernel release or /proc/version).
    #[serde(default)]
    pub wsl: bool,
    /// `/dev/nvidia*` nodes present.
    #[serde(default)]
    pub device_nodes: Vec<String>,
    /// Every `libcuda.so*` found where the loader looks (ld.so.cache, WSL and container paths).
    #[serde(default)]
    pub libcuda_paths: Vec<String>,
    /// `cuda-compat` forward-compatibility libraries found (e.g. `/usr/local/cuda-13.0/compat`).
    #[serde(default)]
    pub cuda_compat_paths: Vec<String>,
    /// SELinux/AppArmor modes, this process's confinement, denials naming NVIDIA files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<crate::SecurityFacts>,
}

impl PlatformFacts {
    /// The numbers N of the `/dev/nvidiaN` nodes (one a GPU; not nvidiactl, nvidia-uvm or
    /// nvidia-caps), sorted; None where /dev showed no driver (no /dev/nvidiactl).
    pub fn gpu_device_nodes(&self) -> Option<Vec<u32>> {
        if !self.device_nodes.iter().any(|n| n == "/dev/nvidiactl") {
            return None;
        }
        let mut out: Vec<u32> = self
            .device_nodes
            .iter()
            .filter_map(|n| n.strip_prefix("/dev/nvidia"))
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .filter_map(|n| n.parse().ok())
            .collect();
        out.sort_unstable();
        Some(out)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ContainerFacts {
    /// `docker`, `podman`, `kubernetes`, `containerd`, `lxc`, `singularity`/`apptainer`, or `unknown`.
    pub runtime: String,
    /// The files or markers that showed it, e.g. `/.dockerenv`.
    pub evidence: Vec<String>,
    /// What stands between the container and the GPU; absent in older snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_access: Option<ContainerGpuAccess>,
}

/// What stands between a container and the GPU: the device cgroup, an open of /dev/nvidiactl,
/// the CDI specs and the driver files the runtime mounted (facts for the container doctor).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ContainerGpuAccess {
    pub cgroup: CgroupDevices,
    /// /dev/nvidiactl opened read-only and non-blocking (no ioctl), on the live machine only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvidiactl_open: Option<NodeOpen>,
    /// CDI specs in /etc/cdi and /var/run/cdi (visible on a host or where they are mounted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cdi_specs: Vec<String>,
    /// Mount points of driver files the runtime bind-mounted (/proc/self/mountinfo): libcuda,
    /// libnvidia-ml, nvidia-smi, /dev/nvidia*, /proc/driver/nvidia.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub driver_mounts: Vec<String>,
    /// Entries of /var/run/nvidia-container-devices, the device plugin's volume-mounts list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_list_volumes: Vec<String>,
    /// Every `libnvidia-ml.so*` found in the driver library directories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub libnvidia_ml_paths: Vec<String>,
}

/// The device cgroup's rules as this process can read them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CgroupDevices {
    /// cgroup v1: the lines of devices.list (`a *:* rwm`, `c 195:* rwm`).
    V1 { rules: Vec<String> },
    /// cgroup v2: the device controller is an eBPF program, not readable as rules.
    V2,
    #[default]
    Unknown,
}

/// The major number of /dev/nvidia0..N and /dev/nvidiactl (NVIDIA's fixed character major).
pub const NVIDIA_MAJOR: u32 = 195;
/// The minor number of /dev/nvidiactl.
pub const NVIDIACTL_MINOR: u32 = 255;

impl CgroupDevices {
    /// Whether cgroup v1 rules let this process read the character device `major:minor`; None
    /// when the rules are not readable.
    pub fn allows_read(&self, major: u32, minor: u32) -> Option<bool> {
        let CgroupDevices::V1 { rules } = self else {
            return None;
        };
        Some(rules.iter().any(|r| {
            let mut parts = r.split_whitespace();
            let (Some(kind), Some(numbers), Some(access)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return false;
            };
            if kind == "a" {
                return access.contains('r');
            }
            let Some((ma, mi)) = numbers.split_once(':') else {
                return false;
            };
            let matches = |spec: &str, n: u32| spec == "*" || spec.parse() == Ok(n);
            kind == "c" && matches(ma, major) && matches(mi, minor) && access.contains('r')
        }))
    }
}

/// How an open of a device node ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum NodeOpen {
    Opened,
    /// EPERM: the device cgroup refused it.
    NotPermitted,
    /// EACCES: the file's own permissions refused it.
    AccessDenied,
    /// ENOENT.
    Missing,
    /// Another errno.
    Failed {
        errno: i32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_numbered_nodes_are_gpu_nodes() {
        let p = |nodes: &[&str]| PlatformFacts {
            device_nodes: nodes.iter().map(|n| n.to_string()).collect(),
            ..PlatformFacts::default()
        };
        assert_eq!(
            p(&[
                "/dev/nvidia12",
                "/dev/nvidia-caps",
                "/dev/nvidia2",
                "/dev/nvidiactl",
                "/dev/nvidia-uvm-tools",
                "/dev/nvidia-modeset",
                "/dev/nvidia",
            ])
            .gpu_device_nodes(),
            Some(vec![2, 12])
        );
        assert_eq!(
            p(&["/dev/nvidia0"]).gpu_device_nodes(),
            None,
            "no nvidiactl: no driver's /dev"
        );
        assert_eq!(p(&["/dev/dxg"]).gpu_device_nodes(), None);
    }

    #[test]
    fn v1_rules_are_read_as_the_kernel_reads_them() {
        let v1 = |rules: &[&str]| CgroupDevices::V1 {
            rules: rules.iter().map(|r| r.to_string()).collect(),
        };
        // Docker's default list without --gpus: no NVIDIA major.
        let docker = v1(&[
            "c 1:3 rwm",
            "c 1:5 rwm",
            "c 136:* rwm",
            "c 5:2 rwm",
            "c 10:200 rwm",
        ]);
        assert_eq!(
            docker.allows_read(NVIDIA_MAJOR, NVIDIACTL_MINOR),
            Some(false)
        );
        let gpus = v1(&["c 195:255 rw", "c 195:0 rw", "c 509:* rwm"]);
        assert_eq!(gpus.allows_read(NVIDIA_MAJOR, NVIDIACTL_MINOR), Some(true));
        assert_eq!(gpus.allows_read(NVIDIA_MAJOR, 1), Some(false));
        assert_eq!(v1(&["a *:* rwm"]).allows_read(195, 255), Some(true));
        assert_eq!(CgroupDevices::V2.allows_read(195, 255), None);
    }
}
