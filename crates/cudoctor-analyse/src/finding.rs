//! The report vocabulary (`cudoctor_report`), where the rules have always found it.

pub use cudoctor_report::{Confidence, Finding, FindingRef, FixStep, Layer, Severity, Subject};
