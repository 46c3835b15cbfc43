use crate::context::Context;
use crate::finding::{Finding, Layer, Severity};

/// A rule: a stable code, its documentation, and a pure check.
pub struct Rule {
    /// Stable code, e.g. `DRV003`. Never reused for another meaning.
    pub code: &'static str,
    /// kebab-case name, e.g. `driver-too-old-for-torch`.
    pub name: &'static str,
    pub layer: Layer,
    /// Default severity; a finding may lower or raise it with reason.
    pub severity: Severity,
    /// One line: what it checks.
    pub summary: &'static str,
    /// Markdown with the sections "What it checks", "Why it matters", "How to fix".
    pub docs: &'static str,
    pub check: fn(&Context) -> Vec<Finding>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("code", &self.code).finish()
    }
}
