//! The run rules. Adding one: one file under `rules/`, one line here.

use crate::rule::RunRule;
use crate::rules;

pub static RUN_RULES: &[&RunRule] = &[
    &rules::observer_saw_nothing::RULE,
    &rules::attention_runs_math::RULE,
    &rules::graph_breaks::RULE,
    &rules::recompilations::RULE,
    &rules::compile_runs_eager::RULE,
    &rules::memory_near_capacity::RULE,
    &rules::collectives_dominate::RULE,
];

/// The run rule with this code or name (case-insensitive code).
pub fn run_rule_by_code(code: &str) -> Option<&'static RunRule> {
    cudoctor_analyse::find_rule(RUN_RULES, code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_documented_and_apart_from_the_machine_rules() {
        let mut codes = HashSet::new();
        for r in RUN_RULES {
            assert!(codes.insert(r.code), "duplicate {}", r.code);
            assert!(r.code.starts_with("RUN") && r.code.len() == 6, "{}", r.code);
            assert!(
                cudoctor_analyse::rule_by_code(r.code).is_none(),
                "{}",
                r.code
            );
            assert!(
                cudoctor_analyse::rule_by_code(r.name).is_none(),
                "{}",
                r.name
            );
            for section in ["## What it checks", "## Why it matters", "## How to fix"] {
                assert!(r.docs.contains(section), "{} docs lack {section}", r.code);
            }
        }
        assert_eq!(run_rule_by_code("run002").unwrap().name, "graph-breaks");
    }
}
