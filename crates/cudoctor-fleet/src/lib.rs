//! Comparing cudoctor snapshots: one machine against another (`diff`) and many nodes at once
//! (`fleet`), by the facts that matter rather than by raw fields; and gathering the nodes'
//! snapshots through the cluster's own scheduler (Slurm's `srun`) or from logs.

pub mod diff;
pub mod facts;
pub mod fleet;
pub mod frames;
pub mod slurm;
#[cfg(test)]
pub(crate) mod testing;

pub use diff::{diff, DiffReport, FactChange, FindingRef, RawChange};
pub use facts::{stack_facts, Fact, Topic, ABSENT};
pub use fleet::{
    natural_cmp, FactSpread, FailedNode, FailureKind, FindingSpread, FleetBuilder, FleetReport,
    NodeSummary, NodeVerdict, ValueGroup,
};
