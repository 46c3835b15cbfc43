use cudoctor_snapshot::NvmlQuery;

use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "GPU007",
    name: "inforom-corrupt",
    layer: Layer::Driver,
    severity: Severity::Warning,
    summary: "A GPU's inforom fails its checksum",
    docs: r#"## What it checks
nvmlDeviceValidateInforom on each GPU: NVML_ERROR_CORRUPTED_INFOROM means the inforom (the
GPU's small store of ECC counts, retired pages and configuration) is corrupt
(DCGM_FR_CORRUPT_INFOROM).

## Why it matters
ECC error counts, retired pages and row-remap history are kept in the inforom; a corrupt one
loses them, and DCGM marks the GPU for triage.

## How to fix
Drain the GPU and have the inforom reflashed by the vendor or NVIDIA support (collect
`nvidia-bug-report.sh` first).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    ctx.gpus()
        .iter()
        .filter(|g| g.gpu.health.as_ref().and_then(|h| NvmlQuery::get(&h.inforom_valid)) == Some(false))
        .map(|g| {
            Finding::new(&RULE, format!("{}'s inforom is corrupt", g.label()))
                .about(Subject::Gpu { index: g.gpu.index })
                .evidence("nvmlDeviceValidateInforom returned NVML_ERROR_CORRUPTED_INFOROM (14) (DCGM failure reason DCGM_FR_CORRUPT_INFOROM)")
                .cause("The GPU's inforom fails its checksum: its ECC and retirement records cannot be trusted.")
                .shell("sudo nvidia-bug-report.sh")
                .prose("drain the GPU and have its inforom reflashed by the vendor or NVIDIA support")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn only_a_failed_checksum_is_reported() {
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = h200();
        // Not supported on this GPU: no answer, no finding.
        health_of(&mut s, 0).inforom_valid = Some(NvmlQuery { rc: 3, value: None });
        assert!(run(&RULE, &s).is_empty());
        health_of(&mut s, 1).inforom_valid = Some(NvmlQuery {
            rc: 14,
            value: Some(false),
        });
        assert_eq!(run(&RULE, &s).len(), 1);
    }
}
