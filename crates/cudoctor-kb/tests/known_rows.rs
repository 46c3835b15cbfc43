//! Known facts the embedded tables must give, and the invariants they must keep.

use cudoctor_kb::{
    ArchListBasis, ComputeCapability, Coverage, CudaVersion, DriverSupport, DriverVersion, Kb,
    TorchVersion,
};

fn kb() -> &'static Kb {
    Kb::embedded()
}
fn cuda(s: &str) -> CudaVersion {
    s.parse().unwrap()
}
fn drv(s: &str) -> DriverVersion {
    s.parse().unwrap()
}
fn cc(s: &str) -> ComputeCapability {
    s.parse().unwrap()
}

#[test]
fn embedded_data_is_consistent() {
    let problems = kb().check_invariants();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn driver_ceilings() {
    assert_eq!(kb().driver_max_cuda(&drv("580.159.04")), Some(cuda("13.0")));
    assert_eq!(kb().driver_max_cuda(&drv("535.104.05")), Some(cuda("12.2")));
    assert_eq!(kb().driver_max_cuda(&drv("470.82.01")), Some(cuda("11.4")));
    assert_eq!(kb().driver_max_cuda(&drv("450.80.02")), Some(cuda("11.0")));
    assert_eq!(kb().driver_max_cuda(&drv("570.86.10")), Some(cuda("12.8")));
    // Unconfirmed and unknown branches stay unknown.
    assert_eq!(kb().driver_max_cuda(&drv("565.57.01")), None);
    assert_eq!(kb().driver_max_cuda(&drv("615.10")), None);
    assert_eq!(kb().driver_max_cuda(&drv("999.1")), None);
}

#[test]
fn toolkit_minimums() {
    assert_eq!(
        kb().toolkit_min_driver(cuda("13.0")),
        Some(drv("580.65.06"))
    );
    assert_eq!(
        kb().toolkit_min_driver(cuda("12.4")),
        Some(drv("550.54.14"))
    );
    assert_eq!(kb().toolkit_min_driver(cuda("12.8")), Some(drv("570.26")));
    // 11.0's GA, not its release candidate.
    assert_eq!(
        kb().toolkit_min_driver(cuda("11.0")),
        Some(drv("450.51.05"))
    );
    assert_eq!(kb().toolkit_min_driver(cuda("12.7")), None);
    assert_eq!(kb().toolkit_min_driver(cuda("13.4")), None);
    assert_eq!(
        kb().toolkit_min_driver_windows(cuda("12.4")),
        Some(drv("551.61"))
    );
    assert_eq!(kb().toolkit_min_driver_windows(cuda("13.0")), None);
}

#[test]
fn minor_compat_floors() {
    assert_eq!(kb().minor_compat_floor(11), Some(drv("450.80.02")));
    assert_eq!(kb().minor_compat_floor(12), Some(drv("525.60.13")));
    assert_eq!(kb().minor_compat_floor(13), Some(drv("580")));
    assert_eq!(kb().minor_compat_floor(10), None);
}

#[test]
fn driver_support_cases() {
    let k = kb();
    // cu130 needs >= 580.
    assert_eq!(
        k.driver_support(&drv("580.159.04"), cuda("13.0")),
        DriverSupport::Native
    );
    assert_eq!(
        k.driver_support(&drv("575.57.08"), cuda("13.0")),
        DriverSupport::TooOld {
            needed_native: Some(drv("580.65.06")),
            needed_floor: Some(drv("580")),
        }
    );
    // A 12.8 wheel on R535: minor-version compatibility, not "too old".
    assert_eq!(
        k.driver_support(&drv("535.104.05"), cuda("12.8")),
        DriverSupport::MinorVersionCompat {
            floor: drv("525.60.13")
        }
    );
    // 13.2 on R580: minor-version compatibility.
    assert_eq!(
        k.driver_support(&drv("580.95.05"), cuda("13.2")),
        DriverSupport::MinorVersionCompat { floor: drv("580") }
    );
    // Older majors run natively on new drivers.
    assert_eq!(
        k.driver_support(&drv("580.159.04"), cuda("11.8")),
        DriverSupport::Native
    );
    // R470 cannot run 12.x at all.
    assert_eq!(
        k.driver_support(&drv("470.82.01"), cuda("12.1")),
        DriverSupport::TooOld {
            needed_native: Some(drv("530.30.02")),
            needed_floor: Some(drv("525.60.13")),
        }
    );
    // R450 before the 11.x floor vs at it.
    assert!(matches!(
        k.driver_support(&drv("450.51.05"), cuda("11.3")),
        DriverSupport::TooOld { .. }
    ));
    assert!(matches!(
        k.driver_support(&drv("450.80.02"), cuda("11.8")),
        DriverSupport::MinorVersionCompat { .. }
    ));
    // A toolkit newer than the data on an R580 driver: the 13.x floor still applies.
    assert_eq!(
        k.driver_support(&drv("580.159.04"), cuda("13.4")),
        DriverSupport::MinorVersionCompat { floor: drv("580") }
    );
    // 10.x has no minor-version compatibility.
    assert_eq!(
        k.driver_support(&drv("418.39"), cuda("10.2")),
        DriverSupport::TooOld {
            needed_native: Some(drv("440.33")),
            needed_floor: None,
        }
    );
    assert_eq!(
        k.driver_support(&drv("999.1"), cuda("14.0")),
        DriverSupport::Unknown
    );
}

#[test]
fn torch_2_11_row() {
    let r = kb().torch("2.11.0").expect("2.11.0 in table");
    assert_eq!(r.torchvision.as_deref(), Some("0.26.0"));
    assert_eq!(r.torchaudio.as_deref(), Some("2.11.0"));
    assert_eq!(r.pypi_default.as_deref(), Some("cu130"));
    let tags: Vec<_> = r.variants.iter().map(|v| v.tag.as_str()).collect();
    assert_eq!(tags, ["cu126", "cu128", "cu130"]);
    assert_eq!(kb().torch("2.11.0+cu130"), Some(r));
    assert!(r.supports_python("3.12.3"));
    assert!(!r.supports_python("3.9"));
    // The wheel observed on the H200 machine: sm_90 natively, no Pascal, no PTX.
    let cu130 = r.variant("cu130").unwrap();
    assert_eq!(cu130.coverage(cc("9.0")), Some(Coverage::Native));
    assert_eq!(cu130.covers(cc("6.1")), Some(false));
    assert_eq!(cu130.covers(cc("7.0")), Some(false));
}

#[test]
fn torch_lookup_by_series_and_unknowns() {
    let r = kb().torch("2.1").unwrap();
    assert_eq!(r.version, "2.1.2");
    assert!(kb().torch("0.4.1").is_none());
    assert!(kb().torch("banana").is_none());
    assert!(kb().torch("2.12.0.dev20260101+cu130").is_none());
    assert_eq!(
        kb().torch("2.5.1").unwrap().pypi_default.as_deref(),
        Some("cu124")
    );
    assert_eq!(
        kb().torch("2.0.0").unwrap().torchvision.as_deref(),
        Some("0.15.1")
    );
    // 1.12 is covered with its variants.
    let r = kb().torch("1.12.1").unwrap();
    assert_eq!(r.variant("cu116").unwrap().cuda, cuda("11.6"));
    assert_eq!(r.variant("cu102").unwrap().covers(cc("3.7")), Some(true));
}

#[test]
fn torch_releases_sorted_and_cover_1_12_onwards() {
    let versions: Vec<TorchVersion> = kb()
        .torch_releases()
        .iter()
        .map(|r| r.version.parse().unwrap())
        .collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]));
    for series in [
        "1.12", "1.13", "2.0", "2.5", "2.9", "2.10", "2.11", "2.12", "2.13",
    ] {
        assert!(kb().torch(series).is_some(), "{series} missing");
    }
}

#[test]
fn arch_facts_users_rely_on() {
    let k = kb();
    // cu118 builds still carry Kepler sm_37; cu121 dropped it.
    let r = k.torch("2.3.1").unwrap();
    assert_eq!(r.variant("cu118").unwrap().covers(cc("3.7")), Some(true));
    assert_eq!(r.variant("cu121").unwrap().covers(cc("3.7")), Some(false));
    // An RTX 4090 (8.9) runs 2.5's cu124 through sm_86 code.
    assert_eq!(
        k.torch("2.5.1")
            .unwrap()
            .variant("cu124")
            .unwrap()
            .coverage(cc("8.9")),
        Some(Coverage::BinaryCompatible { from: cc("8.6") })
    );
    // Unknown arch lists stay unknown.
    assert_eq!(
        k.torch("2.7.0")
            .unwrap()
            .variant("cu128")
            .unwrap()
            .covers(cc("12.0")),
        None
    );
}

/// Arch lists read from the fat binaries of the wheels PyPI serves: exact-release rows with
/// basis `observed`, and what they mean for GPUs whose own architecture is not in them.
#[test]
fn observed_pypi_wheel_arch_lists() {
    let k = kb();
    let list = |v: &str, tag: &str| {
        let var = k
            .torch(v)
            .and_then(|r| r.variant(tag))
            .unwrap_or_else(|| panic!("{v} {tag}"));
        assert_eq!(
            var.arch_list_basis,
            Some(ArchListBasis::Observed),
            "{v} {tag}"
        );
        var.arch_list.clone().unwrap_or_default().join(" ")
    };
    let cu128 = "7.0 7.5 8.0 8.6 9.0 10.0 12.0";
    let cu13 = "7.5 8.0 8.6 9.0 10.0 12.0";
    assert_eq!(list("2.8.0", "cu128"), cu128);
    assert_eq!(list("2.9.1", "cu128"), cu128);
    assert_eq!(list("2.10.0", "cu128"), cu128);
    assert_eq!(list("2.12.0", "cu130"), cu13);
    assert_eq!(list("2.13.0", "cu130"), cu13);
    assert_eq!(list("2.14.1", "cu130"), cu13);
    assert_eq!(list("2.15.0", "cu132"), cu13);
    // Releases not read keep their older basis: 2.9.0 still uses the main-branch snapshot.
    let snap = k.torch("2.9.0").and_then(|r| r.variant("cu128")).unwrap();
    assert_eq!(snap.arch_list_basis, Some(ArchListBasis::Snapshot));

    let pypi = |v: &str| k.torch(v).and_then(|r| r.pypi_default_variant()).unwrap();
    // A B300 (10.3) and a GB10 (12.1) run the plain sm_100 / sm_120 code.
    assert_eq!(
        pypi("2.15.0").coverage(cc("10.3")),
        Some(Coverage::BinaryCompatible { from: cc("10.0") })
    );
    assert_eq!(
        pypi("2.14.1").coverage(cc("12.1")),
        Some(Coverage::BinaryCompatible { from: cc("12.0") })
    );
    // cu13 builds dropped Volta; the cu128 builds of 2.8 - 2.10 still carry sm_70.
    assert_eq!(pypi("2.12.0").covers(cc("7.0")), Some(false));
    assert_eq!(pypi("2.10.0").coverage(cc("7.0")), Some(Coverage::Native));
    // No PTX anywhere: an architecture newer than the list finds no kernel image.
    assert_eq!(pypi("2.15.0").covers(cc("13.0")), Some(false));
}

#[test]
fn gpu_names() {
    let k = kb();
    let check = |name: &str, want: Option<&str>| {
        assert_eq!(k.gpu(name).map(|g| g.cc), want.map(cc), "{name}");
    };
    check("NVIDIA H200", Some("9.0"));
    check("NVIDIA H100 80GB HBM3", Some("9.0"));
    check("NVIDIA GH200 480GB", Some("9.0"));
    check("NVIDIA GeForce RTX 4090", Some("8.9"));
    check("NVIDIA GeForce RTX 5090", Some("12.0"));
    check("Tesla V100-SXM2-32GB", Some("7.0"));
    check("NVIDIA A100-SXM4-80GB", Some("8.0"));
    check("Tesla T4", Some("7.5"));
    check("NVIDIA GeForce GTX 1080 Ti", Some("6.1"));
    check("NVIDIA TITAN X (Pascal)", Some("6.1"));
    check("GeForce GTX TITAN X", Some("5.2"));
    check("Tesla P100-PCIE-16GB", Some("6.0"));
    check("Tesla K80", Some("3.7"));
    check("NVIDIA RTX 6000 Ada Generation", Some("8.9"));
    check("Quadro RTX 6000", Some("7.5"));
    check("NVIDIA RTX A6000", Some("8.6"));
    check("NVIDIA RTX PRO 6000 Blackwell Server Edition", Some("12.0"));
    check("NVIDIA RTX 4000 SFF Ada Generation", Some("8.9"));
    check("NVIDIA L40S", Some("8.9"));
    check("NVIDIA B200", Some("10.0"));
    check("NVIDIA GB10", Some("12.1"));
    check("NVIDIA GeForce RTX 4070 Ti SUPER", Some("8.9"));
    // Names users type and nvidia-smi reports, each from a sourced row (secondary where
    // NVIDIA's list does not carry the product).
    check("NVIDIA H20", Some("9.0"));
    check("NVIDIA H800", Some("9.0"));
    check("NVIDIA H800 PCIe", Some("9.0"));
    check("NVIDIA A800-SXM4-80GB", Some("8.0"));
    check("NVIDIA A10G", Some("8.6"));
    check("NVIDIA A10", Some("8.6"));
    check("NVIDIA L4", Some("8.9"));
    check("NVIDIA L20", Some("8.9"));
    check("NVIDIA GeForce GTX 1660 SUPER", Some("7.5"));
    check("NVIDIA GeForce GTX 1650", Some("7.5"));
    check("NVIDIA RTX A4000", Some("8.6"));
    check("NVIDIA RTX 2000 Ada Generation", Some("8.9"));
    check("Quadro P4000", Some("6.1"));
    check("NVIDIA GeForce RTX 5090 D", Some("12.0"));
    check("Jetson AGX Orin", Some("8.7"));
    check("Jetson Xavier NX", Some("7.2"));
    check("Orin Nano", Some("8.7"));
    // H200 is not H20, A100 is not A10, L40 is not L4: whole words only.
    check("NVIDIA A100 80GB PCIe", Some("8.0"));
    // Not confirmed: stay unknown rather than guessed from a similar name.
    check("NVIDIA B100", None);
    check("", None);
    check("AMD Instinct MI300X", None);
}

#[test]
fn nvcc_ranges() {
    let k = kb();
    let r = k.nvcc_arch_range(cuda("12.4")).unwrap();
    assert_eq!((r.lowest, r.highest), (Some(cc("5.0")), Some(cc("9.0"))));
    let r = k.nvcc_arch_range(cuda("13.0")).unwrap();
    assert_eq!((r.lowest, r.highest), (Some(cc("7.5")), None));
    assert_eq!(r.can_target(cc("6.1")), Some(false));
    assert!(k.nvcc_arch_range(cuda("12.7")).is_none());
    assert!(k.nvcc_arch_range(cuda("8.0")).is_none());
}

#[test]
fn variants_for_driver_respects_ceiling() {
    let k = kb();
    let got = k.variants_for_driver(&drv("470.82.01"));
    assert!(!got.is_empty());
    assert!(got.iter().all(|(_, v, _)| v.cuda.major <= 11));
    assert!(got.iter().any(|(_, v, _)| v.tag == "cu118"));
    let got = k.variants_for_driver(&drv("535.104.05"));
    assert!(got.iter().any(|(_, v, _)| v.tag == "cu128"));
    assert!(got.iter().all(|(_, v, _)| v.cuda.major <= 12));
}

#[test]
fn every_row_has_sources() {
    let k = kb();
    assert!(k.toolkits().iter().all(|t| !t.source.trim().is_empty()));
    assert!(k
        .driver_branches()
        .iter()
        .all(|b| !b.source.trim().is_empty()));
    assert!(k.gpus().iter().all(|g| !g.source.trim().is_empty()));
    assert!(k.nvcc_ranges().iter().all(|r| !r.source.trim().is_empty()));
    assert!(k.torch_releases().iter().all(|r| !r.sources.is_empty()));
}

#[test]
fn driver_branches_per_architecture() {
    let k = kb();
    let of = |name: &str| {
        let m = k.gpu(name).unwrap();
        k.gpu_branches(m.cc, Some(m))
    };
    assert_eq!(of("Tesla K80").last, Some(470));
    assert_eq!(of("Tesla K40m").last, Some(470));
    for name in [
        "GTX 980",
        "GeForce GTX 1080",
        "Tesla P100-PCIE-16GB",
        "Tesla V100-SXM2-32GB",
    ] {
        assert_eq!(of(name).last, Some(580), "{name}");
        assert!(of(name).source.is_some(), "{name}");
    }
    assert_eq!(of("NVIDIA GeForce RTX 5090").first, Some(570));
    assert_eq!(of("NVIDIA GeForce RTX 5090").last, None);
    // Turing and newer: no last branch; a Jetson module has none of either.
    assert_eq!(of("Tesla T4"), cudoctor_kb::GpuBranches::default());
    assert!(of("Jetson AGX Orin").jetson);
    assert_eq!(of("Jetson Nano").last, None);
    // By capability alone: every desktop row of 6.1 agrees; 12.0 also holds the RTX PRO boards,
    // whose first branch is not recorded, so no floor is claimed for sm_120 alone.
    assert_eq!(k.gpu_branches(cc("6.1"), None).last, Some(580));
    assert_eq!(k.gpu_branches(cc("12.0"), None).first, None);
    assert!(k.gpu_branches(cc("8.7"), None).jetson);
}

#[test]
fn platform_builds() {
    use cudoctor_kb::Platform;
    let k = kb();
    assert_eq!(k.pypi_build(Platform::LinuxAarch64, "2.10.0"), Some("cpu"));
    assert_eq!(
        k.pypi_build(Platform::LinuxAarch64, "2.11.0"),
        Some("cu130")
    );
    assert_eq!(
        k.pypi_build(Platform::LinuxAarch64, "2.15.0"),
        Some("cu132")
    );
    assert_eq!(k.pypi_build(Platform::LinuxAarch64, "2.5.1"), None);
    assert_eq!(k.pypi_build(Platform::Windows, "2.15.0"), Some("cpu"));
    assert_eq!(k.pypi_build(Platform::LinuxX86_64, "2.15.0"), Some("cu132"));
    let r = k.torch("2.14.1").unwrap();
    let (win, _) = k.platform_variants(Platform::Windows, r).unwrap();
    let tags: Vec<&str> = win.iter().map(|v| v.tag.as_str()).collect();
    assert!(
        !tags.contains(&"cu134") && tags.contains(&"cu130"),
        "{tags:?}"
    );
    assert!(k.platform_variants(Platform::LinuxAarch64, r).is_none());
    // Windows drivers are judged by the Windows column: 572.16 (R570's Windows number) runs
    // CUDA 12.8, whose Windows minimum is 572.16 or lower, natively.
    let d: cudoctor_kb::DriverVersion = "572.16".parse().unwrap();
    assert_eq!(
        k.driver_support_on(Platform::Windows, &d, cuda("12.8")),
        cudoctor_kb::DriverSupport::Native
    );
    assert_eq!(
        k.least_driver_for(Platform::Windows, cuda("12.8"))
            .unwrap()
            .to_string(),
        "528.33"
    );
}

#[test]
fn jax_cuda_plugins_as_the_index_serves_them() {
    let kb = kb();
    // jax 0.10.2's metadata names jax-cuda13-plugin 0.10.2, and the index serves it for 3.11.
    assert_eq!(kb.jax_cuda_plugin_exists(13, "0.10.2", "3.11"), Some(true));
    assert_eq!(kb.jax_cuda_plugin_exists(12, "0.10.2", "3.11"), Some(true));
    // The first CUDA-13 plugin is 0.7.2; 0.7.1 has none.
    assert_eq!(kb.jax_cuda_plugin_exists(13, "0.7.1", "3.12"), Some(false));
    assert_eq!(kb.jax_cuda_plugin_exists(13, "0.7.2", "3.12"), Some(true));
    // No CUDA-13 plugin was ever served for 3.10; jax 0.6.2 is the last for it.
    assert_eq!(kb.jax_cuda_plugin_exists(13, "0.6.2", "3.10"), Some(false));
    // Releases and Pythons the table does not list are unknown.
    assert_eq!(kb.jax_cuda_plugin_exists(13, "0.99.0", "3.12"), None);
    assert_eq!(kb.jax_cuda_plugin_exists(13, "0.10.2", "3.9"), None);
    assert!(kb.jax_plugin_source(13, "3.11").is_some());
}

/// Xid rows as NVIDIA's catalogue gives them: 79 (fallen off the bus) resets the machine and is
/// DCGM's fallen-off-the-bus code; 31 (a page fault) restarts the application; 48 is a double-bit
/// ECC error.
#[test]
fn known_xid_rows() {
    let kb = cudoctor_kb::Kb::embedded();
    let x79 = kb.xid(79).expect("Xid 79");
    assert!(x79.name.contains("fallen off the bus"), "{}", x79.name);
    assert_eq!(x79.action, Some(cudoctor_kb::XidAction::Reboot));
    assert_eq!(x79.dcgm_fr.as_deref(), Some("DCGM_FR_FALLEN_OFF_BUS"));
    assert_eq!(
        kb.xid(31).and_then(|x| x.action),
        Some(cudoctor_kb::XidAction::RestartApp)
    );
    assert!(kb
        .xid(48)
        .is_some_and(|x| x.name.to_lowercase().contains("ecc")));
    assert!(kb.xid(4242).is_none());
}
