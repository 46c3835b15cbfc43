use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "DRV006",
    name: "driver-not-for-gpu",
    layer: Layer::Driver,
    severity: Severity::Error,
    summary: "The driver's branch does not drive a GPU of this machine",
    docs: r#"## What it checks
The installed driver's branch against the branches that drive each GPU, from the knowledge base's
sourced limits (gpus.toml: `first_branch` / `last_branch`): R470 is the last branch for Kepler,
R580 the last for Maxwell, Pascal and Volta, and the GeForce RTX 50 series needs R570 or newer.
The judge is the build chooser's, so `check` and `plan` give the same verdict and the same
branch for the same GPUs and driver.

## Why it matters
A driver past a GPU's last branch (or before its first) does not drive that GPU: no CUDA build
runs on it, whatever torch is installed, until the driver changes.

## How to fix
Install the branch `cudoctor plan` names: the GPU's last branch (e.g. R580 for a GTX 1080), or
the first that drives a new GPU, then reboot. A GPU whose branch limits are not in the knowledge
base is not judged.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(driver) = ctx.driver_version() else {
        return Vec::new();
    };
    let gpus = ctx.plan_gpus();
    if gpus.is_empty() {
        return Vec::new();
    }
    // The chooser's own verdict on this driver for these GPUs, as `plan` prints it.
    let input = cudoctor_plan::PlanInput {
        driver: Some(driver.clone()),
        gpus,
        platform: ctx.platform(),
        ..Default::default()
    };
    let Some(change) = cudoctor_plan::plan(ctx.kb, &input)
        .ok()
        .and_then(|p| p.driver_upgrade)
        .filter(|u| u.required)
    else {
        return Vec::new();
    };
    let to = change
        .branch
        .as_deref()
        .unwrap_or("a driver branch that drives these GPUs");
    let mut f = Finding::new(
        &RULE,
        format!("Driver {driver} does not drive a GPU of this machine: {to} does"),
    )
    .about(crate::Subject::Driver)
    .evidence(format!("driver {driver}"))
    .evidence(change.why.clone())
    .cause("The driver branch is outside the branches that drive this GPU (past its last branch, or older than its first), so no CUDA program can use it until the driver changes.")
    .prose(format!("Install the NVIDIA driver {to}, then reboot"));
    if let Some(least) = &change.min_driver_compat {
        f = f.evidence(format!(
            "the chosen torch build needs driver >= {least} (plan's answer)"
        ));
    }
    vec![f.prose("Then check:").shell("nvidia-smi")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn pascal_past_r580_kepler_past_r470_and_blackwell_before_r570() {
        for (driver, cuda, gpu, cc, branch) in [
            (
                "590.44.01",
                "13.1",
                "NVIDIA GeForce GTX 1080",
                "6.1",
                "R580",
            ),
            ("535.274.02", "12.2", "Tesla K80", "3.7", "R470"),
            ("590.44.01", "13.1", "Tesla M60", "5.2", "R580"),
        ] {
            let f = run(&RULE, &machine(Some((driver, cuda)), &[(gpu, cc)]));
            assert_eq!(f.len(), 1, "{gpu} on {driver}: {f:?}");
            assert!(f[0].title.contains(branch), "{:?}", f[0].title);
        }
        let f = run(
            &RULE,
            &machine(
                Some(("560.35.03", "12.6")),
                &[("NVIDIA GeForce RTX 5090", "12.0")],
            ),
        );
        assert_eq!(f.len(), 1, "{f:?}");
    }

    #[test]
    fn silent_on_a_branch_that_drives_the_gpu() {
        for (driver, cuda, gpu, cc) in [
            ("580.95.05", "13.0", "NVIDIA GeForce GTX 1080", "6.1"),
            ("470.256.02", "11.4", "Tesla K80", "3.7"),
            ("570.172.08", "12.8", "NVIDIA GeForce RTX 5090", "12.0"),
        ] {
            assert!(
                run(&RULE, &machine(Some((driver, cuda)), &[(gpu, cc)])).is_empty(),
                "{gpu} on {driver}"
            );
        }
        assert!(run(&RULE, &h200()).is_empty());
    }
}
