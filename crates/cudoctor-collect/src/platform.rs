//! Where the tool runs: a container, WSL2, and whether the GPU reached it.

use cudoctor_snapshot::{
    CgroupDevices, ContainerFacts, ContainerGpuAccess, DevShm, HostFacts, HostTool, NodeOpen,
    PlatformFacts,
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

#[cfg(unix)]
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
        hostname: host
            .read_text("/proc/sys/kernel/hostname")
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty()),
        cpu_model: host
            .read_text("/proc/cpuinfo")
            .ok()
            .and_then(|t| cpu_model(&t)),
        glibc: glibc_version(host),
        dev_shm: host
            .read_text("/proc/self/mounts")
            .or_else(|_| host.read_text("/proc/mounts"))
            .ok()
            .and_then(|t| dev_shm(&t)),
        compiler: ["cc", "gcc"]
            .iter()
            .find_map(|name| host_tool(host, name, true)),
        cmake: host_tool(host, "cmake", false),
        ninja: host_tool(host, "ninja", false),
    }
}

/// The first `model name` (x86) or `Model` (Arm boards) of /proc/cpuinfo.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        let value = value.trim();
        (matches!(key.trim(), "model name" | "Model") && !value.is_empty())
            .then(|| value.to_string())
    })
}

/// glibc's version from the C library's file: its versioned name (`libc-2.31.so`, glibc before
/// 2.34) or the release string it carries ("GNU C Library (...) stable release version 2.36").
fn glibc_version(host: &Host) -> Option<String> {
    const LIBC: [&str; 6] = [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/lib/aarch64-linux-gnu/libc.so.6",
        "/usr/lib/aarch64-linux-gnu/libc.so.6",
        "/lib64/libc.so.6",
        "/usr/lib64/libc.so.6",
    ];
    let path = LIBC.iter().find(|p| host.is_file(p))?;
    if let Some((real, _)) = host.resolve(path) {
        let name = real.rsplit('/').next().unwrap_or("");
        if let Some(v) = name
            .strip_prefix("libc-")
            .and_then(|n| n.strip_suffix(".so"))
        {
            return Some(v.to_string());
        }
    }
    // At most the first 8 MiB: the release string sits in .rodata.
    let mut bytes = Vec::new();
    use std::io::Read as _;
    std::fs::File::open(host.fs_path(path))
        .ok()?
        .take(8 << 20)
        .read_to_end(&mut bytes)
        .ok()?;
    glibc_release(&bytes)
}

/// "2.36" from "... GNU C Library ... release version 2.36." in the library's bytes.
fn glibc_release(bytes: &[u8]) -> Option<String> {
    let marker = b"release version ";
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .map(|i| i + marker.len())?;
    let version: String = bytes[at..]
        .iter()
        .take(16)
        .map(|&b| b as char)
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let version = version.trim_end_matches('.').to_string();
    (version.contains('.') && version.len() >= 3).then_some(version)
}

/// /dev/shm's mount in /proc/self/mounts: its type and `size=` (MiB).
fn dev_shm(mounts: &str) -> Option<DevShm> {
    let line = mounts
        .lines()
        .rev()
        .find(|l| l.split_whitespace().nth(1) == Some("/dev/shm"))?;
    let mut fields = line.split_whitespace();
    let fs_type = fields.nth(2)?.to_string();
    let size_mib = fields.next().and_then(|opts| {
        opts.split(',')
            .find_map(|o| o.strip_prefix("size="))
            .and_then(size_option_mib)
    });
    Some(DevShm { fs_type, size_mib })
}

/// A tmpfs `size=` value in MiB: bytes, or with a k, m or g suffix.
fn size_option_mib(v: &str) -> Option<u64> {
    let (digits, unit) = match v.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => v.split_at(i),
        None => (v, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let bytes = match unit.to_ascii_lowercase().as_str() {
        "" => n,
        "k" => n << 10,
        "m" => n << 20,
        "g" => n << 30,
        _ => return None,
    };
    Some(bytes >> 20)
}

/// `name` on PATH: where it is, the file behind its links, and for a compiler its version: the
/// major of a versioned file name (`x86_64-linux-gnu-gcc-12`), else the first line of its
/// `--version` (run with the timeout, and only for a compiler outside every Python environment
/// and conda prefix: nothing of an inspected environment is run).
fn host_tool(host: &Host, name: &str, compiler: bool) -> Option<HostTool> {
    let path = host.which(name)?;
    let resolved = host.resolve(&path).map(|(r, _)| r).filter(|r| *r != path);
    let real = resolved.clone().unwrap_or_else(|| path.clone());
    let mut version = None;
    if compiler {
        let file = real.rsplit('/').next().unwrap_or("");
        version = ["gcc-", "cc-", "clang-"].iter().find_map(|p| {
            let v = file.rsplit_once(p)?.1;
            (!v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
                .then(|| v.to_string())
        });
        let of_an_env = ["/site-packages/", "/conda", "/envs/", "/.venv/", "/venv/"]
            .iter()
            .any(|m| real.contains(m) || path.contains(m));
        if version.is_none()
            && !of_an_env
            && (real.starts_with("/usr/") || real.starts_with("/opt/rh/"))
        {
            if let crate::host::CommandOutcome::Exited {
                status: Some(0),
                stdout,
                ..
            } = host.run(&real, &["--version"])
            {
                version = stdout
                    .lines()
                    .next()
                    .map(|l| l.trim().to_string())
                    .filter(|l| !l.is_empty());
            }
        }
    }
    Some(HostTool {
        path,
        resolved,
        version,
    })
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

#[cfg(test)]
mod host_fact_tests {
    use super::*;

    #[test]
    fn dev_shm_size_from_the_mount_options() {
        let mounts = "proc /proc proc rw 0 0\nshm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n";
        assert_eq!(
            dev_shm(mounts),
            Some(DevShm {
                fs_type: "tmpfs".into(),
                size_mib: Some(64)
            })
        );
        let default = "tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n";
        assert_eq!(dev_shm(default).unwrap().size_mib, None);
        assert_eq!(dev_shm("proc /proc proc rw 0 0\n"), None);
        assert_eq!(size_option_mib("8g"), Some(8192));
        assert_eq!(size_option_mib("1073741824"), Some(1024));
        assert_eq!(size_option_mib("50%"), None);
    }

    #[test]
    fn cpu_model_and_glibc_release() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\n";
        assert_eq!(
            cpu_model(cpuinfo).as_deref(),
            Some("AMD EPYC 9654 96-Core Processor")
        );
        assert_eq!(cpu_model("processor : 0\n"), None);
        let libc = b"\0GNU C Library (Debian GLIBC 2.36-9+deb12u4) stable release version 2.36.\nCopyright";
        assert_eq!(glibc_release(libc).as_deref(), Some("2.36"));
        assert_eq!(glibc_release(b"nothing"), None);
    }

    /// The real machine: glibc read from its file agrees with what the C library says of itself
    /// (`getconf GNU_LIBC_VERSION`, glibc's confstr), where getconf is there.
    #[test]
    fn glibc_of_this_machine_is_what_getconf_says() {
        let host = Host::real(std::time::Duration::from_secs(5));
        let Ok(out) = std::process::Command::new("getconf")
            .arg("GNU_LIBC_VERSION")
            .output()
        else {
            return;
        };
        let said = String::from_utf8_lossy(&out.stdout);
        let Some(v) = said.trim().strip_prefix("glibc ") else {
            return;
        };
        assert_eq!(glibc_version(&host).as_deref(), Some(v));
    }
}
