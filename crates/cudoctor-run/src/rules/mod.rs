pub mod attention_runs_math;
pub mod collectives_dominate;
pub mod compile_runs_eager;
pub mod graph_breaks;
pub mod memory_near_capacity;
pub mod observer_saw_nothing;
pub mod recompilations;
pub(crate) mod support;
