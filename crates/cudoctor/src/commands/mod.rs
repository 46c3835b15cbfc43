pub mod check;
pub mod diff;
pub mod explain;
pub mod fleet;
pub mod kernels;
pub mod libs;
pub mod plan;
pub mod rule;
