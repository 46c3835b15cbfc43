//! Plans for the machines the driver-branch and platform tables exist for: old architectures on
//! drivers past their last branch, new GPUs on drivers older than their first, Grace (aarch64),
//! Windows and Jetson, and every Python from 3.9 to 3.15. Each answer is checked against the
//! knowledge base, and its reasons must name the source of the fact that decided it.

use cudoctor_kb::{DriverVersion, Kb, Platform};
use cudoctor_plan::{parse_pip, plan, Plan, PlanInput, PYTORCH_INDEX};

fn kb() -> &'static Kb {
    Kb::embedded()
}

fn ask(platform: Platform, driver: Option<&str>, gpus: &[&str], python: Option<&str>) -> Plan {
    let input = PlanInput {
        driver: driver.map(|d| d.parse().unwrap()),
        gpus: gpus.iter().map(|g| g.to_string()).collect(),
        python: python.map(str::to_string),
        platform,
        ..PlanInput::default()
    };
    plan(kb(), &input).unwrap_or_else(|e| panic!("{gpus:?} {driver:?}: {e}"))
}

/// Every `pkg==version` of a command names a release of the knowledge base, and the companions
/// are the release's own pair.
fn pins_exist(p: &Plan, cmd: &str) {
    let parsed = parse_pip(cmd).unwrap_or_else(|| panic!("unreadable: {cmd}"));
    let torch = p.torch.as_deref().unwrap();
    let release = kb().torch(torch).unwrap();
    for (name, version) in &parsed.pins {
        let public = version.split('+').next().unwrap();
        match name.as_str() {
            "torch" => assert_eq!(public, release.version, "{cmd}"),
            "torchvision" => assert_eq!(Some(public), release.torchvision.as_deref(), "{cmd}"),
            "torchaudio" => assert_eq!(Some(public), release.torchaudio.as_deref(), "{cmd}"),
            other => panic!("{other} in {cmd}"),
        }
    }
}

/// The least driver the chosen build needs lies in a branch the GPUs work with.
fn runs_on_branch(p: &Plan, platform: Platform, last: u32) {
    let tag = p.variant.as_deref().unwrap();
    let cuda = cudoctor_kb::CudaVersion::from_tag(tag).unwrap();
    let least: DriverVersion = kb().least_driver_for(platform, cuda).unwrap();
    assert!(least.branch() <= last, "{tag} needs {least}, past R{last}");
}

#[test]
fn old_architectures_on_drivers_past_their_last_branch() {
    // (GPU, driver past its last branch, that last branch, a word of its source)
    let cases: &[(&str, &str, u32, &str)] = &[
        ("Tesla K80", "535.274.02", 470, "Kepler"),
        ("GeForce GTX 980", "590.44.01", 580, "Maxwell"),
        ("NVIDIA GeForce GTX 1080", "590.44.01", 580, "Pascal"),
        ("Tesla P100-PCIE-16GB", "595.45.04", 580, "Pascal"),
        ("Tesla V100-SXM2-32GB", "610.43.02", 580, "Volta"),
    ];
    for (gpu, driver, last, word) in cases {
        let p = ask(Platform::LinuxX86_64, Some(driver), &[gpu], Some("3.10"));
        let case = format!("{gpu} on {driver}");
        let up = p
            .driver_upgrade
            .as_ref()
            .unwrap_or_else(|| panic!("{case}: no driver change"));
        assert!(up.required, "{case}: {up:?}");
        assert_eq!(
            up.branch.as_deref(),
            Some(format!("R{last}").as_str()),
            "{case}"
        );
        assert!(
            up.why
                .contains(&format!("R{last} is the last driver branch")),
            "{case}: {}",
            up.why
        );
        // The reason names where the branch fact comes from.
        assert!(
            p.reasons
                .iter()
                .any(|r| r.contains(&format!("R{last}")) && r.contains(word)),
            "{case}: {:#?}",
            p.reasons
        );
        // A build that the GPU's own last branch runs, with code for the GPU.
        runs_on_branch(&p, Platform::LinuxX86_64, *last);
        assert!(
            p.reasons.iter().any(|r| r.contains("machine code")),
            "{case}: {:#?}",
            p.reasons
        );
        pins_exist(&p, p.commands.pip.as_deref().unwrap());
        // Never a driver upgrade beyond what the GPU can use.
        assert!(
            !p.warnings
                .iter()
                .any(|w| w.contains("no NVIDIA driver given")),
            "{case}"
        );
    }
    // sm_35: no torch build in the table has code for it, but the driver must still change.
    let p = ask(
        Platform::LinuxX86_64,
        Some("580.95.05"),
        &["Tesla K40m"],
        Some("3.10"),
    );
    assert!(p.variant.is_none(), "{:?}", p.variant);
    let up = p.driver_upgrade.as_ref().expect("a driver change");
    assert!(
        up.required && up.branch.as_deref() == Some("R470"),
        "{up:?}"
    );
    assert!(up.why.contains("no torch build"), "{}", up.why);
    // On its last branch the driver stays, and no upgrade past it is offered.
    let p = ask(
        Platform::LinuxX86_64,
        Some("470.256.02"),
        &["Tesla K80"],
        Some("3.10"),
    );
    assert!(p.driver_upgrade.is_none(), "{:?}", p.driver_upgrade);
    assert!(
        p.commands.pip.as_deref().unwrap().contains("+cu11"),
        "{:?}",
        p.commands
    );
    // Below it, the upgrade names the last branch, never R580.
    let p = ask(
        Platform::LinuxX86_64,
        Some("535.274.02"),
        &["GeForce GTX 1080"],
        Some("3.12"),
    );
    if let Some(up) = &p.driver_upgrade {
        assert!(!up.required);
        assert!(up.branch.as_deref().unwrap().ends_with("R580"), "{up:?}");
    }
}

#[test]
fn rtx_50_on_drivers_before_r570() {
    for driver in ["535.274.02", "560.35.03", "565.57.01"] {
        let p = ask(
            Platform::LinuxX86_64,
            Some(driver),
            &["NVIDIA GeForce RTX 5090"],
            Some("3.12"),
        );
        let up = p.driver_upgrade.as_ref().expect("a driver change");
        assert!(up.required, "{driver}: {up:?}");
        assert!(up.why.contains("needs R570 or newer"), "{}", up.why);
        let branch: u32 = up.branch.as_deref().unwrap()[1..4].parse().unwrap();
        assert!(branch >= 570, "{up:?}");
        assert!(
            p.reasons.iter().any(|r| r.contains("sm_120")),
            "{:#?}",
            p.reasons
        );
        // cu128 or newer: the first CUDA with Blackwell code.
        let cuda = cudoctor_kb::CudaVersion::from_tag(p.variant.as_deref().unwrap()).unwrap();
        assert!(cuda >= cudoctor_kb::CudaVersion::new(12, 8), "{cuda}");
    }
    // From R570 on the driver stays.
    let p = ask(
        Platform::LinuxX86_64,
        Some("570.172.08"),
        &["RTX 5090"],
        Some("3.12"),
    );
    assert!(p.driver_upgrade.as_ref().is_none_or(|u| !u.required));
    assert!(
        p.variant.as_deref().unwrap().starts_with("cu12"),
        "{:?}",
        p.variant
    );
}

#[test]
fn grace_servers_get_the_aarch64_build_from_pypi() {
    for gpu in ["NVIDIA GH200 480GB", "NVIDIA GB200"] {
        let p = ask(
            Platform::LinuxAarch64,
            Some("580.95.05"),
            &[gpu],
            Some("3.12"),
        );
        let torch = p.torch.as_deref().unwrap();
        let tag = p.variant.as_deref().unwrap();
        // Exactly the build PyPI's aarch64 wheel of that release is, with its source.
        assert_eq!(kb().pypi_build(Platform::LinuxAarch64, torch), Some(tag));
        let pip = p.commands.pip.as_deref().unwrap();
        assert!(!pip.contains("--index-url") && !pip.contains('+'), "{pip}");
        pins_exist(&p, pip);
        assert!(
            p.commands
                .notes
                .iter()
                .any(|n| n.contains("manylinux_2_28_aarch64")),
            "{:?}",
            p.commands.notes
        );
        // The coverage comes from x86_64 arch lists: said, not claimed.
        assert!(
            p.reasons
                .iter()
                .any(|r| r.contains("own list is not in the knowledge base")),
            "{:#?}",
            p.reasons
        );
    }
    // A release whose aarch64 wheel is the CPU build is passed over, with the reason.
    let input = PlanInput {
        driver: Some("580.95.05".parse().unwrap()),
        gpus: vec!["GH200".into()],
        python: Some("3.12".into()),
        torch: Some("2.9".into()),
        platform: Platform::LinuxAarch64,
        ..PlanInput::default()
    };
    let p = plan(kb(), &input).unwrap();
    assert!(p.variant.is_none(), "{:?}", p.variant);
    assert!(
        p.reasons
            .iter()
            .any(|r| r.contains("aarch64 wheel on PyPI is the CPU build")),
        "{:#?}",
        p.reasons
    );
}

#[test]
fn windows_uses_the_windows_driver_column_and_pytorchs_index() {
    // 572.16 is an R570 Windows driver: it runs CUDA 12.x natively up to 12.8's Windows minimum.
    let p = ask(
        Platform::Windows,
        Some("572.16"),
        &["NVIDIA GeForce RTX 4090"],
        Some("3.12"),
    );
    let tag = p.variant.as_deref().unwrap();
    let cuda = cudoctor_kb::CudaVersion::from_tag(tag).unwrap();
    let min = kb().toolkit_min_driver_windows(cuda).unwrap();
    assert!(min <= "572.16".parse().unwrap(), "{tag} needs {min}");
    let pip = p.commands.pip.as_deref().unwrap();
    assert!(
        pip.contains(&format!("--index-url {PYTORCH_INDEX}/{tag}")),
        "{pip}"
    );
    pins_exist(&p, pip);
    // PyPI's Windows wheel is the CPU build: no plain-PyPI command for a CUDA build.
    assert!(p.commands.pip_pypi.is_none(), "{:?}", p.commands.pip_pypi);
    // CUDA 13.4 of 2.14 was not built for Windows.
    let input = PlanInput {
        driver: Some("620.10".parse().unwrap()),
        gpus: vec!["RTX 4090".into()],
        python: Some("3.12".into()),
        torch: Some("2.14.1".into()),
        platform: Platform::Windows,
        ..PlanInput::default()
    };
    let p = plan(kb(), &input).unwrap();
    assert_ne!(p.variant.as_deref(), Some("cu134"), "{:?}", p.variant);
    // A Pascal card on a Windows R580 driver (581.xx) keeps its driver: R580 drives it.
    let p = ask(
        Platform::Windows,
        Some("581.57"),
        &["GTX 1080"],
        Some("3.12"),
    );
    assert!(
        p.driver_upgrade.as_ref().is_none_or(|u| !u.required),
        "{:?}",
        p.driver_upgrade
    );
    // ... but a 590 one does not.
    let p = ask(
        Platform::Windows,
        Some("591.44"),
        &["GTX 1080"],
        Some("3.12"),
    );
    assert!(
        p.driver_upgrade.as_ref().is_some_and(|u| u.required),
        "{:?}",
        p.driver_upgrade
    );
}

#[test]
fn jetson_gets_no_invented_command() {
    for (platform, gpu) in [
        (Platform::Jetson, "Jetson AGX Orin"),
        (Platform::LinuxX86_64, "Orin Nano"),
        (Platform::LinuxAarch64, "Jetson Xavier NX"),
    ] {
        let p = ask(platform, None, &[gpu], Some("3.10"));
        assert_eq!(p.platform, Platform::Jetson, "{gpu}");
        assert!(
            p.variant.is_none() && p.commands.pip.is_none(),
            "{gpu}: {p:?}"
        );
        assert!(
            p.reasons
                .iter()
                .any(|r| r.contains("forums.developer.nvidia.com")),
            "{gpu}: {:#?}",
            p.reasons
        );
    }
}

#[test]
fn every_python_from_3_9_to_3_15_gets_the_newest_release_with_wheels_for_it() {
    // A GPU and driver every recent build runs on, so Python alone decides the release.
    for py in ["3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15"] {
        let p = ask(
            Platform::LinuxX86_64,
            Some("595.45.04"),
            &["NVIDIA GeForce RTX 4090"],
            Some(py),
        );
        let want = kb()
            .torch_releases()
            .iter()
            .rev()
            .find(|r| r.supports_python_stack(py))
            .unwrap_or_else(|| panic!("no release has wheels for {py}"));
        assert_eq!(
            p.torch.as_deref(),
            Some(want.version.as_str()),
            "Python {py}: {:#?}",
            p.reasons
        );
        assert!(
            p.reasons
                .iter()
                .any(|r| r.contains(&format!("wheels for Python {py}"))),
            "{py}: {:#?}",
            p.reasons
        );
        pins_exist(&p, p.commands.pip.as_deref().unwrap());
        // The same on Windows and on Grace, where the platform has a build for that Python.
        let w = ask(Platform::Windows, Some("595.97"), &["RTX 4090"], Some(py));
        assert_eq!(w.torch, p.torch, "Windows, Python {py}");
    }
    // 3.16 has no wheels anywhere: no answer rather than a guess.
    let p = ask(
        Platform::LinuxX86_64,
        Some("595.45.04"),
        &["RTX 4090"],
        Some("3.16"),
    );
    assert!(p.variant.is_none(), "{:?}", p.variant);
}
