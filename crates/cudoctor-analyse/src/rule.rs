use crate::context::Context;
use crate::finding::Finding;

/// A rule of the machine check: its check judges a snapshot's [`Context`]. `cudoctor run`'s
/// rules are the same type over what a run observed (`Rule<fn(&RunFacts) -> Vec<Finding>>`).
pub type Rule<Check = fn(&Context) -> Vec<Finding>> = cudoctor_report::Rule<Check>;

pub use cudoctor_report::find_rule;

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
