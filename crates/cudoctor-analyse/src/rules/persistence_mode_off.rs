use cudoctor_snapshot::NvmlQuery;

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "GPU006",
    name: "persistence-mode-off",
    layer: Layer::Driver,
    severity: Severity::Info,
    summary: "Persistence mode is off on a node with several GPUs",
    docs: r#"## What it checks
On Linux nodes with two or more GPUs: whether NVML reports persistence mode off
(nvmlDeviceGetPersistenceMode; DCGM's deployment check DCGM_FR_PERSISTENCE_MODE).

## Why it matters
Without persistence (or the nvidia-persistenced daemon) the driver tears a GPU down when its
last client exits and sets it up again for the next one: each job and each `nvidia-smi` pays
the initialisation, and a batch of short jobs on a multi-GPU node waits on it. DCGM's
diagnostic refuses to run without it.

## How to fix
Run the NVIDIA persistence daemon: `sudo systemctl enable --now nvidia-persistenced`
(or `sudo nvidia-smi -pm 1`, which does not survive a reboot).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let gpus = ctx.gpus();
    if gpus.len() < 2 || ctx.snap.host.os == "windows" {
        return Vec::new();
    }
    let off: Vec<u32> = gpus
        .iter()
        .filter(|g| {
            g.gpu
                .health
                .as_ref()
                .and_then(|h| NvmlQuery::get(&h.persistence_mode))
                == Some(false)
        })
        .map(|g| g.gpu.index)
        .collect();
    if off.is_empty() {
        return Vec::new();
    }
    let list: Vec<String> = off.iter().map(u32::to_string).collect();
    vec![Finding::new(
        &RULE,
        format!("Persistence mode is off on GPU {} of this {}-GPU node", list.join(", "), gpus.len()),
    )
    .evidence(format!(
        "nvmlDeviceGetPersistenceMode: disabled on GPU {} (DCGM failure reason DCGM_FR_PERSISTENCE_MODE)",
        list.join(", ")
    ))
    .cause("Without persistence the driver deinitialises a GPU when its last client exits; every new job pays the setup again, and DCGM's diagnostic will not run.")
    .shell("sudo systemctl enable --now nvidia-persistenced")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn persistence_off_on_a_two_gpu_node_is_information() {
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = h200();
        health_of(&mut s, 1).persistence_mode = Some(NvmlQuery {
            rc: 0,
            value: Some(false),
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].title.contains("GPU 1"));
        s.driver.gpus.truncate(1);
        health_of(&mut s, 0).persistence_mode = Some(NvmlQuery {
            rc: 0,
            value: Some(false),
        });
        assert!(run(&RULE, &s).is_empty(), "one GPU: not worth a word");
    }
}
