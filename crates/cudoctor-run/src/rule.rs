use cudoctor_analyse::{Finding, Layer, Severity};
use cudoctor_snapshot::RunFacts;

/// A rule over an observed run: a stable code, its documentation, and a pure check. The same
/// shape as the machine rules, judging [`RunFacts`] instead of a snapshot.
pub struct RunRule {
    /// Stable code, e.g. `RUN001`. Never reused for another meaning.
    pub code: &'static str,
    /// kebab-case name, e.g. `attention-runs-math`.
    pub name: &'static str,
    pub layer: Layer,
    pub severity: Severity,
    /// One line: what it checks.
    pub summary: &'static str,
    /// Markdown with the sections "What it checks", "Why it matters", "How to fix".
    pub docs: &'static str,
    pub check: fn(&RunFacts) -> Vec<Finding>,
}

impl std::fmt::Debug for RunRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunRule").field("code", &self.code).finish()
    }
}

impl RunRule {
    /// A finding of this rule at its default severity.
    pub fn finding(&self, title: impl Into<String>) -> Finding {
        Finding {
            code: self.code.to_string(),
            id: String::new(),
            layer: self.layer,
            severity: self.severity,
            title: title.into(),
            evidence: Vec::new(),
            cause: String::new(),
            fix: Vec::new(),
            confidence: Default::default(),
            caused_by: None,
            caused_by_id: None,
            about: Vec::new(),
        }
    }
}
