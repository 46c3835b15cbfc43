//! Whole plans for the machines people really have, each recommended command checked against
//! the knowledge base.

use cudoctor_kb::{ComputeCapability, Kb, TorchVersion};
use cudoctor_plan::{
    parse_pip, plan, reverse, BuildInput, CurrentEnv, CurrentLine, InstalledToolkit, Plan,
    PlanInput, PYTORCH_INDEX,
};

fn kb() -> &'static Kb {
    Kb::embedded()
}

fn input(driver: Option<&str>, gpus: &[&str], python: Option<&str>) -> PlanInput {
    PlanInput {
        driver: driver.map(|d| d.parse().unwrap()),
        gpus: gpus.iter().map(|g| g.to_string()).collect(),
        python: python.map(str::to_string),
        ..PlanInput::default()
    }
}

/// The pip command names exactly the release and variant the plan chose, and those are real
/// rows of the knowledge base: the variant exists, the companions are the release's pair.
fn check_pip_against_kb(p: &Plan) {
    let variant = p.variant.as_deref().expect("a variant");
    let torch = p.torch.as_deref().expect("a torch");
    let cmd = p.commands.pip.as_deref().expect("a pip command");
    let parsed = parse_pip(cmd).unwrap_or_else(|| panic!("unreadable: {cmd}"));
    assert_eq!(
        parsed.index_url.as_deref(),
        Some(format!("{PYTORCH_INDEX}/{variant}").as_str()),
        "{cmd}"
    );
    let release = kb().torch(torch).expect("release in kb");
    assert_eq!(release.version, torch);
    if variant != "cpu" {
        assert!(
            release.variant(variant).is_some(),
            "{torch} has no {variant}"
        );
    }
    let mut seen = Vec::new();
    for (pkg, ver) in &parsed.pins {
        seen.push(pkg.as_str());
        match pkg.as_str() {
            "torch" => {
                let v: TorchVersion = ver.parse().unwrap();
                assert_eq!(v.public(), release.version);
                assert_eq!(v.local.as_deref(), Some(variant));
            }
            "torchvision" => assert_eq!(Some(ver), release.torchvision.as_ref()),
            "torchaudio" => assert_eq!(Some(ver), release.torchaudio.as_ref()),
            other => panic!("unexpected pin {other} in {cmd}"),
        }
    }
    assert_eq!(seen.first(), Some(&"torch"));
    assert_eq!(seen.contains(&"torchvision"), release.torchvision.is_some());
    assert_eq!(seen.contains(&"torchaudio"), release.torchaudio.is_some());
    // The uv command names the same versions.
    let uv = p.commands.uv.as_deref().expect("a uv command");
    assert!(uv.contains(&format!("torch=={torch} ")), "{uv}");
    assert!(uv.ends_with(&format!("--torch-backend={variant}")), "{uv}");
}

fn cc(s: &str) -> ComputeCapability {
    s.parse().unwrap()
}

fn newest_release() -> &'static str {
    &kb().newest_torch().unwrap().version
}

#[test]
fn r450_driver_with_a_v100_gets_a_cuda_11_build() {
    let p = plan(
        kb(),
        &input(Some("450.80.02"), &["Tesla V100-SXM2-32GB"], Some("3.8")),
    )
    .unwrap();
    check_pip_against_kb(&p);
    assert_eq!(p.variant.as_deref(), Some("cu118"));
    // Python 3.8: torch 2.4 is the last release with 3.8 wheels.
    assert_eq!(p.torch.as_deref(), Some("2.4.1"));
    let text = p.reasons.join("\n");
    assert!(text.contains("minor-version compatibility"), "{text}");
    // Python 3.8 caps the release anyway: a newer driver would not give a newer torch.
    assert!(p.driver_upgrade.is_none());
    // With Python 3.11 it does: the newest release's cu126 through the 12.x floor.
    let p = plan(
        kb(),
        &input(Some("450.80.02"), &["Tesla V100-SXM2-32GB"], Some("3.11")),
    )
    .unwrap();
    check_pip_against_kb(&p);
    assert_eq!(p.torch.as_deref(), Some("2.7.1"));
    let up = p.driver_upgrade.expect("upgrade suggested");
    assert_eq!(up.variant, "cu126", "{up:?}");
    assert_eq!(up.min_driver_compat.unwrap().to_string(), "525.60.13");
}

#[test]
fn r450_below_the_11x_floor_gets_only_what_its_toolkit_minimum_allows() {
    // 450.51.05 is the 11.0 GA minimum but below the 11.x minor-compat floor 450.80.02.
    let p = plan(kb(), &input(Some("450.51.05"), &["sm_70"], None)).unwrap();
    // No 11.0 wheels in the table from 1.9 on, and cu102 runs natively.
    assert_eq!(p.variant.as_deref(), Some("cu102"));
    check_pip_against_kb(&p);
}

#[test]
fn r470_driver_with_an_a100_gets_cu118() {
    let p = plan(
        kb(),
        &input(Some("470.82.01"), &["NVIDIA A100-SXM4-80GB"], Some("3.11")),
    )
    .unwrap();
    check_pip_against_kb(&p);
    assert_eq!(p.variant.as_deref(), Some("cu118"));
    assert_eq!(p.torch.as_deref(), Some("2.7.1"));
    assert!(
        p.avoid.iter().any(|a| a.what == "torch 2.7.1 cu128"),
        "{:#?}",
        p.avoid
    );
    assert!(p.driver_upgrade.is_some());
}

#[test]
fn r525_driver_runs_newest_12x_through_minor_version_compatibility() {
    let p = plan(
        kb(),
        &input(
            Some("525.60.13"),
            &["NVIDIA GeForce RTX 4090"],
            Some("3.12"),
        ),
    )
    .unwrap();
    check_pip_against_kb(&p);
    let v = p.variant.clone().unwrap();
    assert!(v.starts_with("cu12"), "{v}");
    // The newest release with a known 12.x build (2.15.0's confirmed variants are all 13.x,
    // and the plan says its list is incomplete).
    assert_eq!(p.torch.as_deref(), Some("2.14.1"));
    assert!(
        p.reasons
            .iter()
            .any(|r| r.contains("only some CUDA variants of torch 2.15.0")),
        "{:#?}",
        p.reasons
    );
    assert!(p
        .reasons
        .iter()
        .any(|r| r.contains("minor-version compatibility")));
    // Every cu13x build of the newest release needs R580.
    assert!(p
        .avoid
        .iter()
        .any(|a| a.what.contains("cu130") && a.why.contains("580")));
    // R580 would give the newest release.
    let up = p.driver_upgrade.expect("upgrade");
    assert_eq!(up.torch, newest_release());
}

#[test]
fn mixed_pascal_and_ada_keep_a_build_with_pascal_code() {
    let p = plan(
        kb(),
        &input(
            Some("580.159.04"),
            &["NVIDIA GeForce GTX 1080 Ti", "NVIDIA GeForce RTX 4090"],
            Some("3.12"),
        ),
    )
    .unwrap();
    check_pip_against_kb(&p);
    assert_eq!(p.variant.as_deref(), Some("cu126"));
    let release = kb().torch(p.torch.as_deref().unwrap()).unwrap();
    let chosen = release.variant("cu126").unwrap();
    assert_ne!(chosen.covers(cc("6.1")), Some(false));
    // The cu13x builds (and what uv's automatic backend picks) drop Pascal: avoid them.
    assert!(
        p.avoid
            .iter()
            .any(|a| a.what.contains("cu130") && a.why.contains("sm_61")),
        "{:#?}",
        p.avoid
    );
    assert!(
        p.avoid
            .iter()
            .any(|a| a.what.contains("--torch-backend=auto")),
        "{:#?}",
        p.avoid
    );
    assert!(p
        .avoid
        .iter()
        .any(|a| a.what.contains("plain `pip install torch`")));
}

#[test]
fn blackwell_sm_120_on_r570_needs_cu128() {
    let p = plan(
        kb(),
        &input(
            Some("570.86.10"),
            &["NVIDIA GeForce RTX 5090"],
            Some("3.12"),
        ),
    )
    .unwrap();
    check_pip_against_kb(&p);
    assert_eq!(p.variant.as_deref(), Some("cu128"));
    // The newest release without cu128 is passed over; R580 would give it.
    let up = p.driver_upgrade.expect("R580 upgrade");
    assert_eq!(up.branch.as_deref(), Some("R580 or newer"));
    assert!(up.variant.starts_with("cu13"));
}

#[test]
fn blackwell_sm_120_on_r580_gets_the_newest_release() {
    let p = plan(kb(), &input(Some("580.159.04"), &["sm_120"], Some("3.12"))).unwrap();
    check_pip_against_kb(&p);
    assert_eq!(p.torch.as_deref(), Some(newest_release()));
    assert!(p.variant.as_deref().unwrap().starts_with("cu13"));
}

#[test]
fn cpu_only_machine_gets_the_cpu_index() {
    let p = plan(kb(), &input(None, &[], Some("3.12"))).unwrap();
    check_pip_against_kb(&p);
    assert_eq!(p.variant.as_deref(), Some("cpu"));
    assert!(p.commands.pip.as_deref().unwrap().ends_with("/whl/cpu"));
    assert!(p
        .avoid
        .iter()
        .any(|a| a.what.contains("plain `pip install torch`")));
    assert!(p.build.is_none());
}

#[test]
fn python_a_release_does_not_support() {
    // 1.12 never had Python 3.12 wheels: nothing fits, and the plan says why.
    let mut i = input(Some("580.159.04"), &["sm_86"], Some("3.12"));
    i.torch = Some("1.12".into());
    let p = plan(kb(), &i).unwrap();
    assert_eq!(p.variant, None);
    assert_eq!(p.commands.pip, None);
    assert!(
        p.reasons.iter().any(|r| r.contains("Python 3.12")),
        "{:#?}",
        p.reasons
    );
    // torch 2.5.1 has 3.13 wheels but torchvision 0.20.1 does not: the stack does not fit.
    let mut i = input(Some("580.159.04"), &["sm_86"], Some("3.13"));
    i.torch = Some("2.5".into());
    let p = plan(kb(), &i).unwrap();
    assert_eq!(p.variant, None, "{p:#?}");
    // A Python newer than every release.
    let p = plan(kb(), &input(Some("580.159.04"), &["sm_90"], Some("3.99"))).unwrap();
    assert_eq!(p.variant, None);
}

#[test]
fn wanted_torch_and_cuda_are_respected() {
    let mut i = input(Some("550.54.14"), &["NVIDIA H100 80GB HBM3"], Some("3.11"));
    i.torch = Some("2.5".into());
    i.cuda = Some("12.4".parse().unwrap());
    let p = plan(kb(), &i).unwrap();
    check_pip_against_kb(&p);
    assert_eq!(
        (p.torch.as_deref(), p.variant.as_deref()),
        (Some("2.5.1"), Some("cu124"))
    );
    assert_eq!(
        p.commands.pip.as_deref(),
        Some("pip install torch==2.5.1+cu124 torchvision==0.20.1 torchaudio==2.5.1 --index-url https://download.pytorch.org/whl/cu124")
    );
    assert!(p.commands.conda.is_some());
    assert_eq!(
        p.commands.preferred(cudoctor_plan::Installer::Conda),
        p.commands.conda.as_deref()
    );
    // After 2.5 there is no conda command, and a conda user is told what to do instead.
    let mut c = input(Some("580.159.04"), &["sm_90"], Some("3.12"));
    c.installer = cudoctor_plan::Installer::Conda;
    let p = plan(kb(), &c).unwrap();
    assert_eq!(p.commands.preferred(c.installer), None);
    assert!(p
        .warnings
        .iter()
        .any(|w| w.contains("inside the conda env")));
    i.cuda = Some("13.0".parse().unwrap());
    assert!(plan(kb(), &i).is_err());
    i.torch = Some("9.9".into());
    assert!(plan(kb(), &i).is_err());
}

#[test]
fn unknown_gpu_name_is_an_error_not_a_guess() {
    let err = plan(kb(), &input(Some("580.159.04"), &["NVIDIA B100"], None)).unwrap_err();
    assert!(err.to_string().contains("sm_XY"));
}

#[test]
fn releases_without_torchaudio_say_so() {
    let without = kb()
        .torch_releases()
        .iter()
        .rev()
        .find(|r| r.torchaudio.is_none() && r.torchaudio_absent.is_some())
        .expect("the knowledge base has a release without torchaudio");
    let mut i = input(Some("580.159.04"), &["sm_90"], Some("3.12"));
    i.torch = Some(without.version.clone());
    let p = plan(kb(), &i).unwrap();
    assert_eq!(p.torchaudio, None);
    assert!(!p.commands.pip.as_deref().unwrap().contains("torchaudio"));
    assert!(
        p.commands.notes.iter().any(|n| n.contains("torchaudio")),
        "{:#?}",
        p.commands.notes
    );
}

#[test]
fn the_h200_machine_is_already_right() {
    let mut i = input(
        Some("580.159.04"),
        &["NVIDIA H200", "NVIDIA H200"],
        Some("3.12.3"),
    );
    i.current = Some(CurrentEnv {
        torch: Some("2.11.0+cu130".into()),
        torchvision: Some("0.26.0+cu130".into()),
        torchaudio: Some("2.11.0+cu130".into()),
        torch_cuda: Some("13.0".parse().unwrap()),
        fails_here: false,
        ..Default::default()
    });
    let p = plan(kb(), &i).unwrap();
    let cur = p.current.unwrap();
    assert!(cur.ok, "{cur:#?}");
    assert!(cur.changes.is_empty());
}

#[test]
fn current_env_problems_are_named_with_the_fix() {
    let base = input(Some("535.104.05"), &["NVIDIA A100-SXM4-80GB"], Some("3.11"));
    // A cu130 wheel on R535.
    let mut i = base.clone();
    i.current = Some(CurrentEnv {
        torch: Some("2.11.0+cu130".into()),
        torchvision: Some("0.26.0+cu130".into()),
        ..CurrentEnv::default()
    });
    let cur = plan(kb(), &i).unwrap().current.unwrap();
    assert!(!cur.ok);
    assert!(
        cur.findings
            .iter()
            .any(|f| f.is_problem() && f.to_string().contains("580")),
        "{cur:#?}"
    );
    assert!(cur.changes[0].contains("pip install"));
    // torchvision from another release and another variant.
    let mut i = base.clone();
    i.current = Some(CurrentEnv {
        torch: Some("2.5.1+cu124".into()),
        torchvision: Some("0.19.1+cu121".into()),
        ..CurrentEnv::default()
    });
    let cur = plan(kb(), &i).unwrap().current.unwrap();
    assert!(!cur.ok);
    assert!(
        cur.findings
            .iter()
            .any(|f| f.is_problem() && f.to_string().contains("0.20.1")),
        "{cur:#?}"
    );
    // A CPU wheel on a GPU machine.
    let mut i = base;
    i.current = Some(CurrentEnv {
        torch: Some("2.5.1+cpu".into()),
        ..CurrentEnv::default()
    });
    let cur = plan(kb(), &i).unwrap().current.unwrap();
    assert!(!cur.ok);
    assert!(cur
        .findings
        .iter()
        .any(|f| f.is_problem() && f.to_string().contains("CPU-only")));
}

#[test]
fn extension_build_advice() {
    let mut i = input(
        Some("580.159.04"),
        &["NVIDIA H200", "NVIDIA GeForce RTX 4090"],
        Some("3.12"),
    );
    i.torch = Some("2.11".into());
    i.cuda = Some("13.0".parse().unwrap());
    i.build = Some(BuildInput {
        memory_gib: Some(64.0),
        cores: Some(32),
        toolkits: vec![
            InstalledToolkit {
                version: "12.8".parse().unwrap(),
                path: "/usr/local/cuda-12.8".into(),
            },
            InstalledToolkit {
                version: "13.0".parse().unwrap(),
                path: "/usr/local/cuda-13.0".into(),
            },
        ],
    });
    let b = plan(kb(), &i).unwrap().build.unwrap();
    assert_eq!(b.torch_cuda_arch_list.as_deref(), Some("8.9;9.0"));
    assert_eq!(b.max_jobs, Some(16));
    assert_eq!(b.cuda_home.as_deref(), Some("/usr/local/cuda-13.0"));
    // Without a 13.x toolkit: install one.
    i.build.as_mut().unwrap().toolkits.truncate(1);
    let b = plan(kb(), &i).unwrap().build.unwrap();
    assert_eq!(b.cuda_home, None);
    assert_eq!(b.install_toolkit, Some("13.0".parse().unwrap()));
    assert!(b.notes.iter().any(|n| n.contains("mismatches")));
}

#[test]
fn reverse_question_torch_2_7_cuda_12_8() {
    let a = reverse(kb(), "2.7", Some("12.8".parse().unwrap())).unwrap();
    let v = &a.variants[0];
    assert_eq!(v.variant, "cu128");
    assert_eq!(v.min_driver.as_ref().unwrap().to_string(), "570.26");
    assert_eq!(
        v.min_driver_compat.as_ref().unwrap().to_string(),
        "525.60.13"
    );
    assert!(a.python.contains(&"3.12".to_string()));
}

#[test]
fn plans_serialise_to_the_documented_json_shape() {
    let p = plan(kb(), &input(Some("550.54.14"), &["sm_86"], Some("3.11"))).unwrap();
    let json = serde_json::to_value(&p).unwrap();
    for key in [
        "variant",
        "torch",
        "torchvision",
        "torchaudio",
        "commands",
        "reasons",
        "avoid",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    for key in ["pip", "uv", "conda"] {
        assert!(
            json["commands"].get(key).is_some(),
            "missing commands.{key}"
        );
    }
}

#[test]
fn odd_inputs_give_errors_or_empty_plans_never_panics() {
    assert!(plan(kb(), &input(None, &[""], None)).is_err());
    let p = plan(kb(), &input(Some("1.0"), &["sm_90"], Some("python"))).unwrap();
    assert_eq!(p.variant, None);
    // No GPU has capability 20.0: refused as input, like an unknown name.
    let i = input(Some("999.99.99"), &["sm_200"], Some("3.12"));
    assert!(matches!(
        plan(kb(), &i),
        Err(cudoctor_plan::PlanError::UnknownGpu(
            cudoctor_kb::UnknownGpu::Capability { .. }
        ))
    ));
    let mut i = input(Some("999.99.99"), &["sm_110"], Some("3.12"));
    i.torch = Some("2.x".into());
    assert!(plan(kb(), &i).is_err());
    i.torch = None;
    // A driver newer than the tables and a GPU (Thor, 11.0) that no x86_64 wheel's arch list
    // names: nothing is recommended rather than a guess, or it comes with a warning.
    let p = plan(kb(), &i).unwrap();
    assert!(p.variant.is_none() || !p.warnings.is_empty(), "{p:#?}");
    i.current = Some(CurrentEnv {
        torch: Some("2.12.0.dev20260101+cu130".into()),
        torchvision: Some("garbage".into()),
        ..CurrentEnv::default()
    });
    let cur = plan(kb(), &i).unwrap().current.unwrap();
    assert!(!cur.ok);
}

#[test]
fn with_the_gpu_out_of_reach_the_plan_keeps_the_installed_cuda_torch() {
    // A container started without GPU access shows no driver and no GPU: the plan must not
    // replace the environment's CUDA torch with a CPU build.
    let mut i = input(None, &[], Some("3.11"));
    i.current = Some(CurrentEnv {
        torch: Some("2.15.0".into()),
        torch_cuda: Some("13.2".parse().unwrap()),
        ..CurrentEnv::default()
    });
    static PLT001: cudoctor_report::Rule<()> = cudoctor_report::Rule {
        code: "PLT001",
        name: "container-without-gpu",
        layer: cudoctor_report::Layer::Platform,
        severity: cudoctor_report::Severity::Error,
        summary: "",
        docs: "",
        check: (),
    };
    i.first = Some(PLT001.finding("This docker container has no GPU access"));
    let p = plan(kb(), &i).unwrap();
    assert!(p.keeps_installed);
    assert_eq!(
        (p.torch.as_deref(), p.variant.as_deref()),
        (Some("2.15.0"), Some("cu132"))
    );
    assert!(p.reasons[0].contains("PLT001"), "{:?}", p.reasons);
    let cur = p.current.unwrap();
    assert!(
        matches!(&cur.findings[0], CurrentLine::GpuUnreachable(f) if f.code == "PLT001"),
        "{:?}",
        cur.findings
    );
    assert!(cur.findings[0]
        .to_string()
        .contains("not judged until the GPU is reachable (PLT001: "));
    // A CPU torch there: no build is chosen (nothing says which CUDA build the GPU needs).
    i.current.as_mut().unwrap().torch = Some("2.15.0+cpu".into());
    i.current.as_mut().unwrap().torch_cuda = None;
    let p = plan(kb(), &i).unwrap();
    assert_eq!(p.variant, None);
    assert!(p.commands.pip.is_none());
    // Without the root finding, a machine without GPU gets the CPU build as before.
    i.first = None;
    assert_eq!(plan(kb(), &i).unwrap().variant.as_deref(), Some("cpu"));
}
