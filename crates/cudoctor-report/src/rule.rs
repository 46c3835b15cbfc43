use crate::finding::{Finding, Layer, Severity};

/// A rule: a stable code, its documentation, and a pure check. The machine rules judge a
/// snapshot (`cudoctor_analyse::Rule`, whose check reads a `Context`); `cudoctor run`'s rules
/// are the same shape over what a run observed (`Rule<fn(&RunFacts) -> Vec<Finding>>`).
pub struct Rule<Check> {
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
    pub check: Check,
}

impl<Check> std::fmt::Debug for Rule<Check> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("code", &self.code).finish()
    }
}

impl<Check> Rule<Check> {
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

/// A rule named by its code, as another report refers to it (the rules an explanation's
/// machine check looks for): made from the rule itself, so a renamed rule breaks the build;
/// written as the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct RuleCode(&'static str);

impl RuleCode {
    pub fn of<Check>(rule: &Rule<Check>) -> RuleCode {
        RuleCode(rule.code)
    }

    pub fn as_str(&self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for RuleCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl<Check> From<&Rule<Check>> for RuleCode {
    fn from(rule: &Rule<Check>) -> RuleCode {
        RuleCode::of(rule)
    }
}

/// The rule among `rules` with this code (any case) or name.
pub fn find_rule<'r, Check>(rules: &[&'r Rule<Check>], code: &str) -> Option<&'r Rule<Check>> {
    rules
        .iter()
        .copied()
        .find(|r| r.code.eq_ignore_ascii_case(code) || r.name == code)
}
