use cudoctor_analyse::{Finding, Rule};
use cudoctor_snapshot::RunFacts;

/// A rule over an observed run: the machine rules' shape, judging [`RunFacts`] instead of a
/// snapshot.
pub type RunRule = Rule<fn(&RunFacts) -> Vec<Finding>>;
