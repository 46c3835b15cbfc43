//! The machine cross-check: exact fixes from facts, and contradictions when the log came from elsewhere.

use cudoctor_explain::{
    builtin_engine, explain_str, Engine, GpuFact, Kb, MachineFacts, Platform, SignatureDb,
    ToolkitFact, Verdict,
};
use std::io::Cursor;

fn gpu(name: &str, cc: &str, mib: u64) -> GpuFact {
    GpuFact {
        name: name.into(),
        compute_capability: Some(cc.into()),
        memory_mib: Some(mib),
    }
}

/// The real 2xH200 machine of tests/fixtures/real/h200x2-torch2.11-cu130.
fn h200() -> MachineFacts {
    MachineFacts {
        platform: Platform::Linux,
        driver_version: Some("580.159.04".into()),
        driver_max_cuda: Some("13.0".into()),
        gpus: vec![
            gpu("NVIDIA H200", "9.0", 143771),
            gpu("NVIDIA H200", "9.0", 143771),
        ],
        torch_version: Some("2.11.0+cu130".into()),
        torch_cuda: Some("13.0".into()),
        torch_arch_list: Some(
            ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        ),
        nvcc_version: Some("13.0".into()),
        cuda_home: None,
        toolkits: vec![ToolkitFact {
            version: Some("13.0".into()),
            root: "/usr/local/cuda-13.0".into(),
        }],
        cuda_visible_devices: None,
        install_target: None,
    }
}

#[test]
fn blackwell_without_sm120_gets_the_exact_variant() {
    let facts = MachineFacts {
        platform: Platform::Linux,
        driver_version: Some("570.153.02".into()),
        driver_max_cuda: Some("12.8".into()),
        gpus: vec![gpu("NVIDIA GeForce RTX 5090", "12.0", 32607)],
        torch_version: Some("2.7.1+cu126".into()),
        torch_cuda: Some("12.6".into()),
        torch_arch_list: None,
        ..Default::default()
    };
    let e = explain_str(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        Some(&facts),
    );
    let check = e
        .machine
        .clone()
        .unwrap_or_else(|| panic!("no machine check"));
    assert_eq!(check.verdict, Verdict::Consistent, "{check:?}");
    let first = e.fix.first().cloned().unwrap_or_default();
    assert!(
        first.contains("cu128") && first.contains("torch==2.7.*") && first.contains("/whl/cu128"),
        "{first}"
    );
}

#[test]
fn kernel_image_error_when_torch_has_the_arch_points_at_extensions() {
    let e = explain_str(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        Some(&h200()),
    );
    assert!(
        e.evidence.iter().any(|x| x.contains("extension")),
        "{:?}",
        e.evidence
    );
    assert!(
        e.fix
            .first()
            .is_some_and(|f| f.contains("TORCH_CUDA_ARCH_LIST=\"9.0\"")),
        "{:?}",
        e.fix
    );
}

#[test]
fn arch_message_from_another_machine_is_a_contradiction() {
    let log = "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.";
    let e = explain_str(log, Some(&h200()));
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Contradicts)
    );
    assert!(e
        .evidence
        .iter()
        .any(|x| x.starts_with("Contradiction") && x.contains("sm_120")));
}

#[test]
fn old_driver_gets_a_driver_branch_and_a_fitting_build() {
    let facts = MachineFacts {
        platform: Platform::Linux,
        driver_version: Some("470.86".into()),
        driver_max_cuda: Some("11.4".into()),
        gpus: vec![gpu("NVIDIA GeForce RTX 3050 Laptop GPU", "8.6", 4096)],
        torch_version: Some("2.1.0+cu121".into()),
        torch_cuda: Some("12.1".into()),
        ..Default::default()
    };
    let e = explain_str(
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
        Some(&facts),
    );
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Consistent)
    );
    assert!(e.fix.iter().any(|f| f.contains("525.60.13")), "{:?}", e.fix);
    assert!(
        e.fix
            .iter()
            .any(|f| f.contains("cu118") && f.contains("torch==2.1.*")),
        "{:?}",
        e.fix
    );
}

#[test]
fn driver_message_contradicted_by_a_newer_driver() {
    let e = explain_str(
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
        Some(&h200()),
    );
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Contradicts)
    );
}

#[test]
fn toolkit_mismatch_points_cuda_home_at_the_matching_toolkit() {
    let mut facts = h200();
    facts.nvcc_version = Some("12.4".into());
    facts.toolkits.push(ToolkitFact {
        version: Some("12.4".into()),
        root: "/usr/local/cuda-12.4".into(),
    });
    let e = explain_str("RuntimeError: The detected CUDA version (12.4) mismatches the version that was used to compile PyTorch (13.0).", Some(&facts));
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Consistent)
    );
    assert!(
        e.fix
            .first()
            .is_some_and(|f| f.contains("CUDA_HOME=/usr/local/cuda-13.0")),
        "{:?}",
        e.fix
    );
}

#[test]
fn windows_message_on_linux_is_from_elsewhere() {
    let e = explain_str(
        r#"OSError: [WinError 1114] A dynamic link library (DLL) initialization routine failed. Error loading "...\c10.dll" or one of its dependencies."#,
        Some(&h200()),
    );
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Contradicts)
    );
}

#[test]
fn oom_from_a_smaller_gpu_is_from_elsewhere() {
    let e = explain_str("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total capacty of 8.00 GiB of which 0 bytes is free.", Some(&h200()));
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Contradicts)
    );
}

#[test]
fn container_requirement_against_the_host_driver() {
    let facts = MachineFacts {
        driver_version: Some("550.144.03".into()),
        driver_max_cuda: Some("12.4".into()),
        ..Default::default()
    };
    let e = explain_str("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version, or use an earlier cuda container: unknown", Some(&facts));
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Consistent)
    );
    assert!(
        e.fix.first().is_some_and(|f| f.contains("570.26")),
        "{:?}",
        e.fix
    );
}

#[test]
fn facts_deserialize_from_json() {
    let json = r#"{"platform":"wsl","driver_version":"560.94","gpus":[{"name":"RTX 4090","compute_capability":"8.9"}]}"#;
    let facts: MachineFacts = serde_json::from_str(json).unwrap_or_default();
    assert_eq!(facts.platform, Platform::Wsl);
    assert_eq!(facts.gpus.len(), 1);
}

/// A user's knowledge base (`--kb DIR`) replaces the embedded facts in the cross-check.
#[test]
fn another_knowledge_base_drives_the_cross_check() {
    let dir = std::env::temp_dir().join(format!("cudoctor-explain-kb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    // The same rows as the embedded table, but a different 12.x floor (in the same branch).
    let rows = [(11, "450.80.02"), (12, "525.85.12"), (13, "580")];
    let mut text = String::from("schema_version = 1\n");
    for (major, floor) in rows {
        text.push_str(&format!("[[major]]\ncuda_major = {major}\nlinux_floor = \"{floor}\"\ndriver_range = \"test\"\nsource = \"test\"\n"));
    }
    std::fs::write(dir.join("minor_compat.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    let kb = Kb::from_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_dir_all(&dir);

    let msg = "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).";
    let facts = MachineFacts {
        platform: Platform::Linux,
        driver_version: Some("470.86".into()),
        driver_max_cuda: Some("11.4".into()),
        torch_version: Some("2.1.0+cu121".into()),
        torch_cuda: Some("12.1".into()),
        ..Default::default()
    };
    let names_floor = |fix: &[String], floor: &str| fix.iter().any(|f| f.contains(floor));

    let builtin = builtin_engine().unwrap_or_else(|e| panic!("{e}"));
    let embedded = builtin.explain(Cursor::new(msg), Some(&facts));
    assert!(
        names_floor(&embedded.fix, "525.60.13"),
        "{:?}",
        embedded.fix
    );

    let with_user_kb = builtin.explain_with_kb(Cursor::new(msg), Some(&facts), &kb);
    assert!(
        names_floor(&with_user_kb.fix, "525.85.12"),
        "{:?}",
        with_user_kb.fix
    );
    assert!(
        !names_floor(&with_user_kb.fix, "525.60.13"),
        "{:?}",
        with_user_kb.fix
    );

    let db = SignatureDb::from_toml(cudoctor_explain::signatures::BUILTIN_TOML)
        .unwrap_or_else(|e| panic!("{e}"));
    let engine = Engine::with_kb(db, kb);
    let e = engine.explain(Cursor::new(msg), Some(&facts));
    assert!(names_floor(&e.fix, "525.85.12"), "{:?}", e.fix);
    assert_eq!(e.machine.map(|m| m.verdict), Some(Verdict::Consistent));
}

/// Without a reported compute capability the GPU's name is looked up in the knowledge base; a
/// release whose arch list is not recorded borrows its neighbour's and says so; torchaudio is
/// left out of the command for releases with no torchaudio.
#[test]
fn gpu_by_name_borrowed_arch_list_and_no_torchaudio() {
    let facts = MachineFacts {
        platform: Platform::Linux,
        driver_version: Some("590.44.01".into()),
        gpus: vec![GpuFact {
            name: "NVIDIA GeForce RTX 5090".into(),
            compute_capability: None,
            memory_mib: None,
        }],
        torch_version: Some("2.13.0+cu126".into()),
        torch_cuda: Some("12.6".into()),
        ..Default::default()
    };
    let e = explain_str(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        Some(&facts),
    );
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Consistent)
    );
    assert!(
        e.evidence
            .iter()
            .any(|x| x.contains("not recorded") && x.contains("stands in")),
        "{:?}",
        e.evidence
    );
    // The newest build the driver runs whose list covers sm_120: 2.13.0's cu132 list is not
    // recorded and borrows 2.15.0's (observed in the wheel), which carries sm_120.
    let first = e.fix.first().cloned().unwrap_or_default();
    assert!(
        first.contains("torch==2.13.*") && first.contains("/whl/cu132"),
        "{first}"
    );
    assert!(!first.contains("torchaudio"), "{first}");
}

const NO_GPUS: &str = "RuntimeError: No CUDA GPUs are available";

fn with_visible(value: &str) -> MachineFacts {
    MachineFacts {
        cuda_visible_devices: Some(value.into()),
        ..h200()
    }
}

/// An index the machine does not have hides every GPU, like an empty value.
#[test]
fn visible_devices_naming_a_missing_gpu_is_the_cause() {
    let e = explain_str(NO_GPUS, Some(&with_visible("2")));
    assert_eq!(e.category, cudoctor_explain::Category::DriverMissing);
    assert_eq!(e.signature.as_deref(), Some("torch-no-cuda-gpus"));
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Consistent)
    );
    assert!(
        e.fix
            .first()
            .is_some_and(|f| f.starts_with("unset CUDA_VISIBLE_DEVICES")),
        "{:?}",
        e.fix
    );
}

/// Where the variable shows GPUs, the failing program ran with another value.
#[test]
fn visible_devices_showing_gpus_means_another_context() {
    let e = explain_str(NO_GPUS, Some(&with_visible("0")));
    let check = e.machine.clone().unwrap_or_else(|| panic!("no check"));
    assert_eq!(check.verdict, Verdict::Contradicts);
    assert!(
        check
            .contradictions
            .iter()
            .any(|x| x.contains("shows 1 of the 2 GPUs") && x.contains("os.environ")),
        "{check:?}"
    );
    assert!(
        e.fix.iter().any(|f| f.contains("indices 0 to 1")),
        "{:?}",
        e.fix
    );
}

/// UUIDs are not in the facts: nothing is claimed about them.
#[test]
fn visible_devices_by_uuid_is_left_undecided() {
    let e = explain_str(NO_GPUS, Some(&with_visible("GPU-59ceb5ce")));
    let check = e.machine.clone().unwrap_or_else(|| panic!("no check"));
    assert_eq!(check.verdict, Verdict::Inconclusive, "{check:?}");
    assert!(
        e.evidence.iter().any(|x| x.contains("GPU-59ceb5ce")),
        "{:?}",
        e.evidence
    );
}

/// The CUDA runtime's own wording gets the same check.
#[test]
fn no_cuda_capable_device_gets_the_visible_devices_check() {
    let e = explain_str(
        "RuntimeError: CUDA error: no CUDA-capable device is detected",
        Some(&with_visible("")),
    );
    assert_eq!(e.signature.as_deref(), Some("cuda-no-device"));
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Consistent)
    );
}

/// In a container without a driver, or a machine without one, the machine agrees.
#[test]
fn no_gpus_where_no_driver_answers() {
    let container = MachineFacts {
        platform: Platform::Container,
        ..Default::default()
    };
    let e = explain_str(NO_GPUS, Some(&container));
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Consistent)
    );
    assert!(
        e.fix.iter().any(|f| f.contains("--gpus all")),
        "{:?}",
        e.fix
    );
    let bare = MachineFacts {
        platform: Platform::Linux,
        ..Default::default()
    };
    let e = explain_str(NO_GPUS, Some(&bare));
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Consistent)
    );
    // With no facts at all nothing is claimed.
    let e = explain_str(NO_GPUS, Some(&MachineFacts::default()));
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Inconclusive)
    );
}

/// The "no driver" message keeps its check: a working driver here contradicts it.
#[test]
fn found_no_driver_on_a_working_machine_still_contradicts() {
    let e = explain_str(
        "RuntimeError: Found no NVIDIA driver on your system.",
        Some(&with_visible("")),
    );
    assert_eq!(e.signature.as_deref(), Some("torch-no-driver"));
    assert_eq!(
        e.machine.as_ref().map(|m| m.verdict),
        Some(Verdict::Contradicts)
    );
}

/// "CUDA unknown error" happens while nvidia-smi works: no contradiction, the module fix first.
#[test]
fn cuda_unknown_error_is_not_contradicted_by_a_working_driver() {
    let e = explain_str(
        "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.",
        Some(&h200()),
    );
    assert_eq!(e.signature.as_deref(), Some("torch-cuda-unknown-error"));
    let check = e.machine.clone().unwrap_or_else(|| panic!("no check"));
    assert!(check.contradictions.is_empty(), "{check:?}");
    assert!(
        e.evidence.iter().any(|x| x.contains("nvidia_uvm")),
        "{:?}",
        e.evidence
    );
    assert!(
        e.fix.iter().any(|f| f.contains("modprobe nvidia_uvm")),
        "{:?}",
        e.fix
    );
}
