pub mod check;
pub mod diff;
pub mod fleet;
pub mod rule;
