//! Opt-in (CUDOCTOR_NETWORK_TESTS=1, a few minutes): pip resolves the pins of recommended plans
//! against PyPI with their dependencies, reading metadata only (`pip install --dry-run`), for
//! plans whose build is the one PyPI serves; a torchvision that does not pair with the torch pin
//! fails the resolution. PyTorch's own index is not reachable from CI, so `pip_pypi` is what is checked;
//! its pins are the pip command's pins without the local version.

use std::process::Command;

use cudoctor_kb::Kb;
use cudoctor_plan::{plan, PlanInput};

const PLATFORMS: [&str; 4] = [
    "manylinux1_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux_2_28_x86_64",
];

fn enabled() -> bool {
    std::env::var("CUDOCTOR_NETWORK_TESTS").is_ok_and(|v| v == "1")
}

fn scenario(driver: &str, gpu: &str, python: &str, torch: Option<&str>) -> (String, String) {
    let input = PlanInput {
        driver: Some(driver.parse().unwrap()),
        gpus: vec![gpu.into()],
        python: Some(python.into()),
        torch: torch.map(str::to_string),
        ..PlanInput::default()
    };
    let p = plan(Kb::embedded(), &input).unwrap();
    let cmd = p.commands.pip_pypi.unwrap_or_else(|| {
        panic!(
            "plan for {gpu} on {driver} is not PyPI's build: {:?}",
            p.variant
        )
    });
    (cmd, python.to_string())
}

fn pip_resolves(cmd: &str, python: &str) {
    let pins: Vec<&str> = cmd
        .strip_prefix("pip install ")
        .unwrap()
        .split_whitespace()
        .collect();
    let target = std::env::temp_dir().join(format!("cudoctor-plan-net-{}", std::process::id()));
    let mut c = Command::new("python3");
    c.args([
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--no-deps",
        "--ignore-installed",
        "--quiet",
    ])
    .arg("--target")
    .arg(&target)
    .args(["--python-version", python, "--only-binary=:all:"]);
    for p in PLATFORMS {
        c.args(["--platform", p]);
    }
    let out = c.args(&pins).output().expect("python3 -m pip runs");
    assert!(
        out.status.success(),
        "pip could not resolve `{cmd}` for Python {python}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn recommended_pins_resolve_on_pypi() {
    if !enabled() {
        cudoctor_testkit::skip_opt_in(
            "recommended_pins_resolve_on_pypi",
            "CUDOCTOR_NETWORK_TESTS=1 to resolve recommended pins with pip",
        );
        return;
    }
    let cases = [
        // The H200 machine of the fixtures, asked for 2.11.
        scenario("580.159.04", "NVIDIA H200", "3.12", Some("2.11")),
        // An RTX 3090 on R550 asked for 2.5: cu124 is PyPI's build of 2.5.1.
        scenario("550.54.14", "NVIDIA GeForce RTX 3090", "3.11", Some("2.5")),
        // The newest release on an R595 Hopper node.
        scenario("595.71.05", "sm_90", "3.12", None),
        // 2.8 with its PyPI build (cu128) on R570.
        scenario("570.124.06", "NVIDIA L40S", "3.10", Some("2.8")),
    ];
    for (cmd, python) in &cases {
        pip_resolves(cmd, python);
    }
}
