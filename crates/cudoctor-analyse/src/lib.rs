//! cudoctor's judgement: pure rules over a [`Snapshot`] and the knowledge base.
//!
//! Each rule lives in its own file under `rules/` with its code, documentation, check and tests;
//! [`registry::RULES`] lists them. Rules do no I/O: everything they know is in the snapshot.

pub mod bitsandbytes;
pub mod causes;
pub mod confirm;
pub mod context;
pub mod declared;
pub mod finding;
pub mod frameworks;
pub mod kernels;
pub mod libs;
pub mod registry;
pub mod rule;
mod rules;
#[cfg(test)]
pub(crate) mod testing;
pub mod variants;
pub mod views;
pub mod what_if;

use cudoctor_kb::Kb;
use cudoctor_snapshot::Snapshot;

pub use context::Context;
pub use finding::{Confidence, Finding, FixStep, Layer, Severity, Subject};
pub use registry::{rule_by_code, RULES};
pub use rule::{find_rule, Rule};

/// Runs every rule, returning findings sorted by layer, then severity, then code.
pub fn analyse(snap: &Snapshot, kb: &Kb) -> Vec<Finding> {
    let ctx = Context::new(snap, kb);
    let mut findings: Vec<Finding> = RULES.iter().flat_map(|r| (r.check)(&ctx)).collect();
    findings.sort_by(|a, b| {
        layer_rank(a.layer)
            .cmp(&layer_rank(b.layer))
            .then(a.severity.cmp(&b.severity))
            .then(a.code.cmp(&b.code))
    });
    assign_ids(&mut findings);
    causes::link_causes(&mut findings);
    findings
}

/// check's root finding that keeps the machine's GPU out of reach (a container started without
/// GPU access, no driver where a GPU is expected), with its fix: it comes before any torch
/// build, and until it is fixed the current build is not judged (`plan`'s first fix).
pub fn gpu_out_of_reach(snap: &Snapshot, kb: &Kb) -> Option<Finding> {
    analyse(snap, kb).into_iter().find(|f| {
        f.caused_by.is_none()
            && f.severity == Severity::Error
            && f.about.contains(&Subject::Driver)
            && !f
                .about
                .iter()
                .any(|s| matches!(s, Subject::TorchBuild { .. }))
    })
}

/// Gives each finding its report-unique id: the code, then `CODE-2`, `CODE-3`... in order.
fn assign_ids(findings: &mut [Finding]) {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for f in findings {
        let n = seen.entry(f.code.clone()).or_insert(0);
        *n += 1;
        f.id = if *n == 1 {
            f.code.clone()
        } else {
            format!("{}-{n}", f.code)
        };
    }
}

fn layer_rank(l: Layer) -> usize {
    Layer::ALL
        .iter()
        .position(|x| *x == l)
        .unwrap_or(usize::MAX)
}
