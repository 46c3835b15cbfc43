//! cudoctor's judgement: pure rules over a [`Snapshot`] and the knowledge base.
//!
//! Each rule lives in its own file under `rules/` with its code, documentation, check and tests;
//! [`registry::RULES`] lists them. Rules do no I/O: everything they know is in the snapshot.

pub mod context;
pub mod finding;
pub mod registry;
pub mod rule;
mod rules;
#[cfg(test)]
pub(crate) mod testing;

use cudoctor_kb::Kb;
use cudoctor_snapshot::Snapshot;

pub use context::Context;
pub use finding::{Confidence, Finding, Layer, Severity};
pub use registry::{rule_by_code, RULES};
pub use rule::Rule;

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
    findings
}

fn layer_rank(l: Layer) -> usize {
    Layer::ALL
        .iter()
        .position(|x| *x == l)
        .unwrap_or(usize::MAX)
}
