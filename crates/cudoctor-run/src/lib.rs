//! `cudoctor run`'s judgement: pure rules over what the observer saw in the user's own program
//! ([`RunFacts`]), the run's key numbers, and the before/after comparison with a baseline run.

pub mod compare;
pub mod registry;
pub mod rule;
mod rules;
pub mod summary;

use cudoctor_analyse::Finding;
use cudoctor_snapshot::RunFacts;
use serde::{Deserialize, Serialize};

pub use compare::{compare, Comparison, MetricChange, Trend, Verdict};
pub use registry::{run_rule_by_code, RUN_RULES};
pub use rule::RunRule;
pub use summary::{backend_name, summarise, BackendShare, RunSummary};

/// The command as a shell would read it back, each word quoted when it needs it.
pub fn shell_words(words: &[String]) -> String {
    rules::support::shell_words_impl(words)
}

/// Bumped when a field of [`RunReport`] changes meaning or is removed.
pub const RUN_REPORT_VERSION: u32 = 1;

/// What `cudoctor run` writes: the facts, their numbers, the findings, and the comparison with
/// the baseline when one was given. A saved report is the next run's `--baseline`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunReport {
    pub run_report_version: u32,
    pub tool_version: String,
    pub facts: RunFacts,
    pub summary: RunSummary,
    pub findings: Vec<Finding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
}

/// Every run rule's findings, worst first.
pub fn judge(facts: &RunFacts) -> Vec<Finding> {
    let mut findings: Vec<Finding> = RUN_RULES.iter().flat_map(|r| (r.check)(facts)).collect();
    findings.sort_by(|a, b| a.severity.cmp(&b.severity).then(a.code.cmp(&b.code)));
    // Report-unique ids, as the machine report gives them: CODE, CODE-2...
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for f in &mut findings {
        let n = seen.entry(f.code.clone()).or_insert(0);
        *n += 1;
        f.id = if *n == 1 {
            f.code.clone()
        } else {
            format!("{}-{n}", f.code)
        };
    }
    findings
}

/// The report of a run, compared with `baseline` when given.
pub fn report(facts: RunFacts, tool_version: &str, baseline: Option<&RunReport>) -> RunReport {
    let summary = summarise(&facts);
    let findings = judge(&facts);
    let comparison = baseline.map(|b| {
        // The baseline's numbers are recomputed from its facts: one definition for both sides.
        let before = summarise(&b.facts);
        compare(&b.facts, &before, &summary)
    });
    RunReport {
        run_report_version: RUN_REPORT_VERSION,
        tool_version: tool_version.to_string(),
        facts,
        summary,
        findings,
        comparison,
    }
}
