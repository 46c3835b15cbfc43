use cudoctor_types::visible_devices::{judge_devices, Visibility};

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "MGPU003",
    name: "visible-devices-hide-gpus",
    layer: Layer::Multigpu,
    severity: Severity::Info,
    summary: "CUDA_VISIBLE_DEVICES shows programs only some of the GPUs, or none, or names GPUs that do not exist",
    docs: r#"## What it checks
CUDA_VISIBLE_DEVICES against the GPUs the driver reports. The CUDA documentation: only the
devices whose index or UUID is listed are visible, and if one of the entries is invalid, only the
devices listed before it are visible. An empty value, or `-1`, hides every GPU.

## Why it matters
A variable left over in a shell or a job script makes jobs use fewer GPUs than the machine has,
or none at all ("no CUDA GPUs are available" while nvidia-smi shows them). A typo hides every
GPU listed after it.

## How to fix
`unset CUDA_VISIBLE_DEVICES` to see all GPUs, or list existing indices or UUIDs (`nvidia-smi -L`).
Indices follow CUDA's order, which is fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID; set that
so indices match nvidia-smi's.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(value) = ctx.snap.env.get("CUDA_VISIBLE_DEVICES") else {
        return Vec::new();
    };
    let mut gpus: Vec<(u32, Option<&str>)> = ctx
        .snap
        .driver
        .gpus
        .iter()
        .map(|g| (g.index, g.uuid.as_deref()))
        .collect();
    let total = gpus.len();
    if total == 0 {
        return Vec::new();
    }
    // CUDA's indices count the GPUs from 0; the driver lists them by index.
    gpus.sort_by_key(|(i, _)| *i);
    let uuids: Vec<Option<&str>> = gpus.iter().map(|(_, u)| *u).collect();
    let judged = judge_devices(value, Some(&uuids));
    let bad = judged.first_invalid;
    let shown = match judged.visibility {
        Visibility::HidesAll => 0,
        Visibility::Shows { shown, .. } => shown,
        // A MIG instance or a UUID that cannot be checked: nothing sure to say.
        Visibility::Undecided => return Vec::new(),
    };
    let evidence = format!("CUDA_VISIBLE_DEVICES={value:?}; the driver reports {total} GPU(s)");
    let f = if shown == 0 {
        Finding::new(&RULE, format!("CUDA_VISIBLE_DEVICES hides all {total} GPUs"))
            .severity(Severity::Warning)
            .cause("No listed entry names an existing GPU (or the value is empty or -1): CUDA programs see no GPU at all.")
    } else if let Some(bad) = bad {
        Finding::new(
            &RULE,
            format!("CUDA_VISIBLE_DEVICES entry {bad:?} names no GPU: {shown} of {total} visible"),
        )
        .severity(Severity::Warning)
        .cause("CUDA stops at the first invalid entry: the GPUs listed after it are hidden too.")
    } else if shown < total {
        Finding::new(&RULE, format!("CUDA_VISIBLE_DEVICES shows {shown} of {total} GPUs"))
            .cause("Programs started from this environment see only the listed GPUs. That is right when the machine is shared on purpose, wrong when the variable is a leftover.")
    } else {
        return Vec::new();
    };
    vec![f
        .evidence(evidence)
        .shell("unset CUDA_VISIBLE_DEVICES  # or list GPUs from: nvidia-smi -L")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{h200, run};

    #[test]
    fn findings_by_case() {
        let mut s = h200();
        assert!(run(&RULE, &s).is_empty());
        s.env.insert("CUDA_VISIBLE_DEVICES".into(), "0,1".into());
        assert!(run(&RULE, &s).is_empty());
        s.env.insert("CUDA_VISIBLE_DEVICES".into(), "1".into());
        let f = run(&RULE, &s);
        assert_eq!(f[0].severity, Severity::Info);
        assert_eq!(f[0].title, "CUDA_VISIBLE_DEVICES shows 1 of 2 GPUs");
        s.env.insert("CUDA_VISIBLE_DEVICES".into(), String::new());
        assert_eq!(run(&RULE, &s)[0].severity, Severity::Warning);
        s.env.insert("CUDA_VISIBLE_DEVICES".into(), "0,2,1".into());
        let f = run(&RULE, &s);
        assert!(f[0].title.contains("\"2\""), "{}", f[0].title);
    }
}
