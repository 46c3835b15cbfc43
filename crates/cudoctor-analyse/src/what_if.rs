//! What-if judging: a snapshot whose GPUs are replaced by named ones (`--gpu`), so every rule
//! judges the stack for them. `check` and `explain` both take their `--gpu` through here.

use cudoctor_kb::{Kb, UnknownGpu};
use cudoctor_snapshot::{Gpu, Snapshot};

/// `snap` with its GPUs replaced by `gpus` (names such as "RTX 5090", or sm_120 / 12.0), one per
/// GPU. Memory and processes of the real GPUs are dropped with them.
pub fn with_gpus(mut snap: Snapshot, gpus: &[String], kb: &Kb) -> Result<Snapshot, UnknownGpu> {
    if gpus.is_empty() {
        return Ok(snap);
    }
    let mut replaced = Vec::new();
    for (index, given) in gpus.iter().enumerate() {
        let named = kb.resolve_gpu(given)?;
        // A capability names no product: the name says only that it is a what-if, since every
        // label prints the capability beside it ("GPU 0 (what-if, sm_61)").
        let name = match named.model {
            Some(_) => given.clone(),
            None => "what-if".to_string(),
        };
        replaced.push(Gpu {
            index: index as u32,
            name,
            compute_capability: Some(named.cc.to_string()),
            source: "--gpu (what-if)".to_string(),
            what_if: true,
            ..Default::default()
        });
    }
    snap.driver.gpus = replaced;
    snap.driver.processes.clear();
    Ok(snap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::h200;

    #[test]
    fn named_gpus_replace_the_present_ones() {
        let s = with_gpus(
            h200(),
            &["GTX 1080".into(), "sm_120".into()],
            Kb::embedded(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let ccs: Vec<_> = s
            .driver
            .gpus
            .iter()
            .map(|g| g.compute_capability.clone())
            .collect();
        assert_eq!(ccs, [Some("6.1".to_string()), Some("12.0".to_string())]);
        assert_eq!(s.driver.gpus[1].name, "what-if");
        let labels: Vec<String> = crate::Context::new(&s, Kb::embedded())
            .gpus()
            .iter()
            .map(|g| g.label())
            .collect();
        assert_eq!(
            labels,
            ["GPU 0 (GTX 1080, sm_61)", "GPU 1 (what-if, sm_120)"]
        );
        assert!(s.driver.gpus.iter().all(|g| g.what_if));
        assert!(h200().driver.gpus.iter().all(|g| !g.what_if));
        assert!(with_gpus(h200(), &["Voodoo 3".into()], Kb::embedded()).is_err());
    }
}
