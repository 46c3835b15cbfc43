//! Where the tool runs: a container, WSL2, and whether the GPU reached it.

use cudoctor_snapshot::{
    CgroupDevices, ContainerFacts, ContainerGpuAccess, HostFacts, NodeOpen, PlatformFacts,
};

use crate::host::Host;

/// Directories where a driver's user-space libraries live on common layouts.
pub(crate) const DRIVER_LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib/x86_64-linux-gnu",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib",
];

pub fn collect(host: &Host) -> PlatformFacts {
    if host.is_windows() {
        // No /proc, /dev or Linux library directories there; containers and WSL are Linux's.
        return PlatformFacts::default();
    }
    let osrelease = host
        .read_text("/proc/sys/kernel/osrelease")
        .unwrap_or_default();
    let proc_version = host.read_text("/proc/version").unwrap_or_default();
    let wsl = is_wsl(&osrelease, &proc_version) || host.is_dir("/usr/lib/wsl/lib");
    let device_nodes = host
        .list_dir("/dev")
        .into_iter()
        .filter(|n| n.starts_with("nvidia") || n == "dxg")
        .map(|n| format!("/dev/{n}"))
        .collect();
    let mut libcuda_paths = Vec::new();
    for dir in DRIVER_LIB_DIRS {
        for name in host.list_dir(dir) {
            if name.starts_with("libcuda.so") {
                libcuda_paths.push(format!("{dir}/{name}"));
            }
        }
    }
    let mut cuda_compat_paths = Vec::new();
    for name in host.list_dir("/usr/local") {
        if !name.starts_with("cuda") {
            continue;
        }
        let compat = format!("/usr/local/{name}/compat");
        if host
            .list_dir(&compat)
            .iter()
            .any(|f| f.starts_with("libcuda.so"))
        {
            cuda_compat_paths.push(compat);
        }
    }
    PlatformFacts {
        container: container(host),
        wsl,
        device_nodes,
        libcuda_paths,
        cuda_compat_paths,
        security: Some(crate::security::collect(host)),
    }
}

pub fn is_wsl(osrelease: &str, proc_version: &str) -> bool {
    let t = format!("{osrelease} {proc_version}").to_lowercase();
    t.contains("microsoft") || t.contains("wsl")
}

fn container(host: &Host) -> Option<ContainerFacts> {
    let mut evidence = Vec::new();
    let mut runtime = None;
    let mut note = |rt: &str, ev: String, runtime: &mut Option<String>| {
        evidence.push(ev);
        if runtime.is_none() {
            *runtime = Some(rt.to_string());
        }
    };
    if host.exists("/.dockerenv") {
        note("docker", "/.dockerenv exists".into(), &mut runtime);
    }
    if host.exists("/run/.containerenv") {
        note("podman", "/run/.containerenv exists".into(), &mut runtime);
    }
    if host.var("KUBERNETES_SERVICE_HOST").is_some() {
        note(
            "kubernetes",
            "KUBERNETES_SERVICE_HOST is set".into(),
            &mut runtime,
        );
    }
    for var in ["APPTAINER_CONTAINER", "SINGULARITY_CONTAINER"] {
        if host.var(var).is_some() {
            note("apptainer", format!("{var} is set"), &mut runtime);
        }
    }
    if let Ok(cgroup) = host.read_text("/proc/1/cgroup") {
        for (marker, rt) in [
            ("kubepods", "kubernetes"),
            ("docker", "docker"),
            ("containerd", "containerd"),
            ("libpod", "podman"),
            ("lxc", "lxc"),
        ] {
            if cgroup.contains(marker) {
                note(
                    rt,
                    format!("/proc/1/cgroup mentions {marker}"),
                    &mut runtime,
                );
                break;
            }
        }
    }
    if let Ok(env) = host.read_text("/proc/1/environ") {
        if env.split('\0').any(|kv| kv.starts_with("container=")) {
            note(
                "unknown",
                "PID 1 has a `container` variable".into(),
                &mut runtime,
            );
        }
    }
    runtime.map(|runtime| ContainerFacts {
        runtime,
        evidence,
        gpu_access: Some(gpu_access(host)),
    })
}

/// Where CDI specs live (the Container Device Interface's static and generated directories).
const CDI_DIRS: &[&str] = &["/etc/cdi", "/var/run/cdi"];

/// What stands between a container and the GPU. Reads files only, except one open of
/// /dev/nvidiactl on the live machine (read-only, non-blocking, no ioctl): the one way to see a
/// cgroup v2 device rule.
pub(crate) fn gpu_access(host: &Host) -> ContainerGpuAccess {
    let cgroup = match host.read_text("/sys/fs/cgroup/devices/devices.list") {
        Ok(text) => CgroupDevices::V1 {
            rules: text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .take(256)
                .map(str::to_string)
                .collect(),
        },
        Err(_) if host.exists("/sys/fs/cgroup/cgroup.controllers") => CgroupDevices::V2,
        Err(_) => CgroupDevices::Unknown,
    };
    let cdi_specs = CDI_DIRS
        .iter()
        .flat_map(|dir| {
            host.list_dir(dir)
                .into_iter()
                .filter(|n| n.ends_with(".yaml") || n.ends_with(".json"))
                .map(move |n| format!("{dir}/{n}"))
        })
        .collect();
    let driver_mounts = host
        .read_text("/proc/self/mountinfo")
        .map(|t| driver_mounts(&t))
        .unwrap_or_default();
    let device_list_volumes = host
        .list_dir("/var/run/nvidia-container-devices")
        .into_iter()
        .take(64)
        .collect();
    let mut libnvidia_ml_paths = Vec::new();
    for dir in DRIVER_LIB_DIRS {
        for name in host.list_dir(dir) {
            if name.starts_with("libnvidia-ml.so") {
                libnvidia_ml_paths.push(format!("{dir}/{name}"));
            }
        }
    }
    ContainerGpuAccess {
        cgroup,
        nvidiactl_open: host.runs_programs().then(open_nvidiactl),
        cdi_specs,
        driver_mounts,
        device_list_volumes,
        libnvidia_ml_paths,
    }
}

/// Mount points (the fifth field of /proc/self/mountinfo) of NVIDIA driver files.
fn driver_mounts(mountinfo: &str) -> Vec<String> {
    mountinfo
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .filter(|m| {
            m.contains("libcuda.so")
                || m.contains("libnvidia-ml.so")
                || m.ends_with("/nvidia-smi")
                || m.starts_with("/dev/nvidia")
                || m.starts_with("/proc/driver/nvidia")
        })
        .take(128)
        .map(str::to_string)
        .collect()
}

#[cfg(unix)]
fn open_nvidiactl() -> NodeOpen {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open("/dev/nvidiactl");
    match opened {
        // Closed at once: nothing asked of the driver.
        Ok(_) => NodeOpen::Opened,
        Err(e) => node_open_error(e.raw_os_error().unwrap_or(0)),
    }
}

#[cfg(not(unix))]
fn open_nvidiactl() -> NodeOpen {
    NodeOpen::Missing
}

fn node_open_error(errno: i32) -> NodeOpen {
    match errno {
        1 => NodeOpen::NotPermitted,
        13 => NodeOpen::AccessDenied,
        2 => NodeOpen::Missing,
        errno => NodeOpen::Failed { errno },
    }
}

pub fn host_facts(host: &Host) -> HostFacts {
    if host.is_live_windows() {
        return HostFacts {
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            cpu_count: std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u32),
            ..HostFacts::default()
        };
    }
    if host.is_windows() {
        // A Windows tree under --root: x64, the only Windows its Python layer reads
        // (cudoctor_pe's loader takes x64 processes); its cores and memory are not in files.
        return HostFacts {
            os: "windows".into(),
            arch: "x86_64".into(),
            ..HostFacts::default()
        };
    }
    let distro = host.read_text("/etc/os-release").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
    });
    let kernel = host
        .read_text("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let cpu_count = host
        .read_text("/proc/cpuinfo")
        .ok()
        .map(|t| t.lines().filter(|l| l.starts_with("processor")).count() as u32)
        .filter(|&n| n > 0)
        .or_else(|| {
            (host.root() == std::path::Path::new("/"))
                .then(|| {
                    std::thread::available_parallelism()
                        .map(|n| n.get() as u32)
                        .ok()
                })
                .flatten()
        });
    let memory_total_mib = host.read_text("/proc/meminfo").ok().and_then(|t| {
        let kb: u64 = t
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        Some(kb / 1024)
    });
    HostFacts {
        os: std::env::consts::OS.to_string(),
        arch: std::env::consts::ARCH.to_string(),
        distro,
        kernel,
        cpu_count,
        memory_total_mib,
        l4t_release: host
            .read_text("/etc/nv_tegra_release")
            .ok()
            .and_then(|t| l4t_release(&t)),
        board_model: host
            .read_text("/proc/device-tree/model")
            .ok()
            .and_then(|t| board_model(&t)),
    }
}

/// The L4T release line of /etc/nv_tegra_release: its first line, `# R<major> (release),
/// REVISION: <minor>, GCID: ..., BOARD: ..., EABI: aarch64, DATE: ...` (NVIDIA Jetson Linux
/// Developer Guide: `head -n 1 /etc/nv_tegra_release` names the release); other text, none.
fn l4t_release(text: &str) -> Option<String> {
    let first = text.lines().next()?.trim();
    let rest = first.strip_prefix("# R")?;
    rest.starts_with(|c: char| c.is_ascii_digit())
        .then(|| first.to_string())
}

/// /proc/device-tree/model: a device-tree string property, its text ended by a NUL byte
/// (Devicetree Specification, property values: `<string>` is NUL-terminated).
fn board_model(text: &str) -> Option<String> {
    let model = text.trim_end_matches('\0').trim();
    (!model.is_empty() && !model.contains('\0')).then(|| model.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real contents: the release line a Jetson AGX Xavier on JetPack 5.1.2 prints for
    /// `cat /etc/nv_tegra_release` (L4T R35.4.1), and the model the Linux kernel's device tree
    /// for the AGX Orin developer kit declares (arch/arm64/boot/dts/nvidia/
    /// tegra234-p3737-0000+p3701-0000.dts: `model = "NVIDIA Jetson AGX Orin Developer Kit";`).
    #[test]
    fn reads_the_l4t_release_and_the_board_model() {
        let release = "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, DATE: Tue Aug  1 19:57:35 UTC 2023\n# KERNEL_VARIANT: oot\n";
        assert_eq!(
            l4t_release(release).as_deref(),
            Some("# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, DATE: Tue Aug  1 19:57:35 UTC 2023")
        );
        assert_eq!(l4t_release("R35\n"), None);
        assert_eq!(l4t_release(""), None);
        assert_eq!(
            board_model("NVIDIA Jetson AGX Orin Developer Kit\0").as_deref(),
            Some("NVIDIA Jetson AGX Orin Developer Kit")
        );
        assert_eq!(board_model("\0"), None);
    }

    #[test]
    fn recognises_wsl_kernels() {
        assert!(is_wsl("5.15.153.1-microsoft-standard-WSL2", ""));
        assert!(!is_wsl("6.18.44-fc-v657-gpu", "Linux version 6.18.44"));
    }
}
