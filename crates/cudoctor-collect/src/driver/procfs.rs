//! Driver facts from files the kernel module publishes: free, and no library load.

use cudoctor_snapshot::{Gpu, KernelModule, KernelModuleFlavour};

/// The first dotted version token (`580.159.04`) in an NVRM banner line. The open and
/// proprietary modules word the line differently, so the shape is what we look for.
pub fn driver_version_from_banner(banner: &str) -> Option<String> {
    let line = banner.lines().find(|l| l.starts_with("NVRM version"))?;
    line.split_whitespace()
        .find(|tok| looks_like_driver_version(tok))
        .map(str::to_string)
}

/// `open` or `proprietary`, from the NVRM banner.
pub fn kernel_module(banner: &str) -> Option<KernelModule> {
    let line = banner.lines().find(|l| l.starts_with("NVRM version"))?;
    let flavour = if line.contains("Open Kernel Module") {
        KernelModuleFlavour::Open
    } else {
        KernelModuleFlavour::Proprietary
    };
    Some(KernelModule {
        flavour,
        banner: line.trim().to_string(),
    })
}

pub fn looks_like_driver_version(tok: &str) -> bool {
    let parts: Vec<&str> = tok.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        && parts[0].len() >= 3
}

/// One `/proc/driver/nvidia/gpus/<bus>/information` file. It has no compute capability.
pub fn gpu_from_information(text: &str, fallback_index: u32) -> Option<Gpu> {
    let field = |key: &str| -> Option<String> {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let name = field("Model")?;
    let index = field("Device Minor")
        .and_then(|m| m.parse().ok())
        .unwrap_or(fallback_index);
    Some(Gpu {
        index,
        name,
        uuid: field("GPU UUID"),
        bus_id: field("Bus Location"),
        source: "/proc/driver/nvidia/gpus/*/information".to_string(),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use cudoctor_testkit::h200x2;

    #[test]
    fn reads_the_real_open_module_banner() {
        let text = h200x2("procver.txt");
        assert_eq!(driver_version_from_banner(&text).unwrap(), "580.159.04");
        assert_eq!(
            kernel_module(&text).unwrap().flavour,
            KernelModuleFlavour::Open
        );
    }

    #[test]
    fn reads_a_proprietary_banner() {
        let text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc version 12.2.0\n";
        assert_eq!(driver_version_from_banner(text).unwrap(), "535.104.05");
        assert_eq!(
            kernel_module(text).unwrap().flavour,
            KernelModuleFlavour::Proprietary
        );
    }

    #[test]
    fn garbage_banner_gives_nothing() {
        assert_eq!(driver_version_from_banner("hello\n\x00\x01"), None);
        assert_eq!(driver_version_from_banner("NVRM version: x86_64 1.2"), None);
    }

    #[test]
    fn reads_the_real_gpu_information_files() {
        let text = h200x2("procgpus.txt");
        let gpus: Vec<Gpu> = text
            .split("== ")
            .filter(|s| !s.trim().is_empty())
            .enumerate()
            .filter_map(|(i, s)| gpu_from_information(s, i as u32))
            .collect();
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].name, "NVIDIA H200");
        assert_eq!(gpus[1].index, 1);
        assert_eq!(
            gpus[0].uuid.as_deref(),
            Some("GPU-ab0427df-1edc-5c0a-7a0b-fc688ee35bbc")
        );
        assert_eq!(gpus[1].bus_id.as_deref(), Some("0000:00:07.0"));
    }
}
