use crate::context::Context;
use crate::finding::{Finding, Layer, Severity};

/// A rule: a stable code, its documentation, and a pure check. The machine rules judge a
/// snapshot's [`Context`]; `cudoctor run`'s rules are the same shape over what a run observed
/// (`Rule<fn(&RunFacts) -> Vec<Finding>>`).
pub struct Rule<Check = fn(&Context) -> Vec<Finding>> {
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

/// The subject findings fold on: of the findings about one such subject, the one of the
/// lowest-ranked rule is the root and the others follow from it (their fixes are its fix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoldOn {
    /// One environment's torch build ([`crate::Subject::TorchBuild`]): the build chooser's
    /// torch command set repairs them all.
    TorchBuild,
    /// One installed package ([`crate::Subject::Package`]) built for another torch or CUDA.
    Package,
    /// One toolkit variable ([`crate::Subject::ToolkitSetting`]): the root's export repairs all.
    ToolkitSetting,
}

/// A rule's place in the cause graph: the subject its findings fold on and its rank there
/// (lowest first: the root among the findings about one subject). Declared in the rule's file
/// beside its `RULE` (`pub static FOLD`) and listed in [`crate::registry::FOLDS`].
#[derive(Debug)]
pub struct Fold {
    pub rule: &'static Rule,
    pub on: FoldOn,
    pub rank: u8,
}

/// What a finding must share with a finding of the rule it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Nothing: the cause explains every finding of the rule.
    Nothing,
    /// The finding is about the driver itself ([`crate::Subject::Driver`]), not about a build.
    Driver,
    /// One Windows Python's `import torch` ([`crate::Subject::WindowsTorchImport`]).
    WindowsTorchImport,
    /// A GPU the driver no longer lists: the finding is about the driver's GPUs
    /// ([`crate::Subject::Driver`]) and the cause names no GPU the driver lists (an Xid of a GPU
    /// that fell off the bus).
    UnlistedGpu,
}

/// A rule whose findings follow from another rule's problem: linked to the first finding of
/// `cause` that is a problem and shares what `sharing` says, before the folds (so the cause's
/// fix is the one given). Declared in the rule's file (`pub static FOLLOWS`) and listed in
/// [`crate::registry::FOLLOWS`].
#[derive(Debug)]
pub struct Follows {
    pub rule: &'static Rule,
    pub cause: &'static Rule,
    pub sharing: Sharing,
}

/// The rule among `rules` with this code (any case) or name.
pub fn find_rule<'r, Check>(rules: &[&'r Rule<Check>], code: &str) -> Option<&'r Rule<Check>> {
    rules
        .iter()
        .copied()
        .find(|r| r.code.eq_ignore_ascii_case(code) || r.name == code)
}
