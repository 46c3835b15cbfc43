use cudoctor_snapshot::NvmlQuery;

use crate::{Context, Finding, Layer, Rule, Severity, Subject};

pub static RULE: Rule = Rule {
    code: "GPU001",
    name: "gpu-memory-errors",
    layer: Layer::Driver,
    severity: Severity::Error,
    summary: "A GPU has uncorrected memory errors, pending page retirements or row remaps",
    docs: r#"## What it checks
Each GPU's memory health as NVML reports it: uncorrected ECC errors since the driver loaded
(volatile) and in the GPU's lifetime (aggregate), pages waiting to be retired
(nvmlDeviceGetRetiredPagesPendingStatus, GPUs before Ampere), rows waiting to be remapped or a
remapping that failed (nvmlDeviceGetRemappedRows, Ampere and newer data-center GPUs).
The finding names DCGM's failure reason: DCGM_FR_VOLATILE_DBE_DETECTED,
DCGM_FR_PENDING_PAGE_RETIREMENTS, DCGM_FR_PENDING_ROW_REMAP, DCGM_FR_ROW_REMAP_FAILURE,
DCGM_FR_DBE_VIOLATION.

## Why it matters
An uncorrected error kills the job that touched the memory, and a page or row waiting for a
reset is memory the GPU knows to be bad and still uses. A failed remapping is hardware damage.
Such a node passes every software check and still ends jobs with Xid 48, 63, 64 or 94/95.

## How to fix
Drain the GPU and reset it (`nvidia-smi -r -i N`, or reboot) so pending retirements and remaps
take effect; then check again with `nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT`. A
remapping failure, or errors that come back, means the GPU must be replaced: run DCGM's field
diagnostic (`dcgmi diag -r 3`) and contact the vendor.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for g in ctx.gpus() {
        let Some(h) = &g.gpu.health else { continue };
        let volatile = NvmlQuery::get(&h.ecc_volatile);
        let aggregate = NvmlQuery::get(&h.ecc_aggregate);
        let remap = NvmlQuery::get(&h.row_remap);
        let pages_pending = NvmlQuery::get(&h.retired_pages_pending) == Some(true);
        let mut problems: Vec<(&str, String)> = Vec::new();
        let mut severity = Severity::Warning;
        if let Some(v) = volatile.filter(|v| v.uncorrected > 0) {
            problems.push((
                "DCGM_FR_VOLATILE_DBE_DETECTED",
                format!(
                    "{} uncorrected ECC errors since the driver loaded (volatile counter)",
                    v.uncorrected
                ),
            ));
            severity = Severity::Error;
        } else if let Some(a) = aggregate.filter(|a| a.uncorrected > 0) {
            problems.push((
                "DCGM_FR_DBE_VIOLATION",
                format!("{} uncorrected ECC errors in the GPU's lifetime (aggregate counter), none since the driver loaded", a.uncorrected),
            ));
        }
        if pages_pending {
            problems.push((
                "DCGM_FR_PENDING_PAGE_RETIREMENTS",
                "pages are waiting to be retired at the next GPU reset".to_string(),
            ));
            severity = Severity::Error;
        }
        if let Some(r) = remap {
            if r.failed {
                problems.push((
                    "DCGM_FR_ROW_REMAP_FAILURE",
                    "a row remapping failed: the memory has no spare row left for a bad one"
                        .to_string(),
                ));
                severity = Severity::Error;
            }
            if r.pending {
                problems.push((
                    "DCGM_FR_PENDING_ROW_REMAP",
                    format!(
                        "a row remapping waits for the next GPU reset ({} rows remapped for uncorrected errors, {} for corrected ones)",
                        r.uncorrected_rows, r.corrected_rows
                    ),
                ));
                severity = Severity::Error;
            }
        }
        if problems.is_empty() {
            continue;
        }
        let mut f = Finding::new(
            &RULE,
            format!(
                "{} has memory errors the driver has not repaired",
                g.label()
            ),
        )
        .severity(severity)
        .about(Subject::Gpu { index: g.gpu.index });
        for (fr, what) in &problems {
            f = f.evidence(format!("{what} (NVML; DCGM failure reason {fr})"));
        }
        if let Some(v) = volatile {
            f = f.evidence(format!(
                "ECC volatile: {} corrected, {} uncorrected",
                v.corrected, v.uncorrected
            ));
        }
        if let Some(a) = aggregate {
            f = f.evidence(format!(
                "ECC aggregate: {} corrected, {} uncorrected",
                a.corrected, a.uncorrected
            ));
        }
        let failed = remap.is_some_and(|r| r.failed);
        f = f
            .cause(if failed {
                "The GPU's memory has a bad row it could not remap: the hardware is damaged. Jobs on this GPU can fail with uncorrectable ECC errors (Xid 48/94/95)."
            } else {
                "The GPU's memory reported errors ECC could not correct; the repair (page retirement or row remapping) takes effect only after the GPU is reset, and until then jobs can hit the bad memory again."
            })
            .prose("drain the GPU's jobs, then reset it (as root, with no process on it)")
            .shell(format!("nvidia-smi -r -i {}", g.gpu.index))
            .shell(format!("nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT -i {}", g.gpu.index));
        if failed {
            f = f.prose("a remapping failure does not heal with a reset: run 'dcgmi diag -r 3' and have the GPU replaced");
        }
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{EccCounts, NvmlQuery, RowRemap};

    #[test]
    fn the_healthy_h200_has_none() {
        assert!(run(&RULE, &h200()).is_empty());
        // No health read at all (an older snapshot, nvidia-smi as the source): nothing.
        assert!(run(
            &RULE,
            &machine(Some(("580.159.04", "13.0")), &[("NVIDIA H200", "9.0")])
        )
        .is_empty());
    }

    #[test]
    fn a_pending_row_remap_is_an_error_naming_dcgm() {
        let mut s = h200();
        health_of(&mut s, 1).row_remap = Some(NvmlQuery {
            rc: 0,
            value: Some(RowRemap {
                uncorrected_rows: 1,
                pending: true,
                ..Default::default()
            }),
        });
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].title.contains("GPU 1"));
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("DCGM_FR_PENDING_ROW_REMAP")));
    }

    #[test]
    fn volatile_and_lifetime_errors_are_told_apart() {
        let mut s = h200();
        health_of(&mut s, 0).ecc_aggregate = Some(NvmlQuery {
            rc: 0,
            value: Some(EccCounts {
                corrected: 4,
                uncorrected: 2,
            }),
        });
        let f = run(&RULE, &s);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].evidence[0].contains("DCGM_FR_DBE_VIOLATION"));
        health_of(&mut s, 0).ecc_volatile = Some(NvmlQuery {
            rc: 0,
            value: Some(EccCounts {
                corrected: 0,
                uncorrected: 1,
            }),
        });
        let f = run(&RULE, &s);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].evidence[0].contains("DCGM_FR_VOLATILE_DBE_DETECTED"));
    }

    #[test]
    fn a_failed_remap_says_the_reset_does_not_heal_it() {
        let mut s = h200();
        health_of(&mut s, 0).row_remap = Some(NvmlQuery {
            rc: 0,
            value: Some(RowRemap {
                failed: true,
                ..Default::default()
            }),
        });
        let f = run(&RULE, &s);
        assert!(f[0].evidence[0].contains("DCGM_FR_ROW_REMAP_FAILURE"));
        assert!(f[0].fix.iter().any(|x| x.to_string().contains("replaced")));
    }
}
