//! The run rules. Adding one: one file under `rules/`, one line here, by code (the tests below
//! check both).

use crate::rule::RunRule;
use crate::rules;

pub static RUN_RULES: &[&RunRule] = &[
    &rules::attention_runs_math::RULE,
    &rules::graph_breaks::RULE,
    &rules::recompilations::RULE,
    &rules::compile_runs_eager::RULE,
    &rules::observer_saw_nothing::RULE,
    &rules::memory_near_capacity::RULE,
    &rules::collectives_dominate::RULE,
    &rules::cuda_failure::RULE,
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

    #[test]
    fn the_registry_is_sorted_by_code() {
        for pair in RUN_RULES.windows(2) {
            assert!(
                pair[0].code < pair[1].code,
                "{} must come after {}",
                pair[0].code,
                pair[1].code
            );
        }
    }

    #[test]
    // Reads this crate's own source files, not a run: rules stay pure.
    #[allow(clippy::disallowed_methods)]
    fn every_rule_file_is_registered() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
        let registry = include_str!("registry.rs");
        let modules = include_str!("rules/mod.rs");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).expect("rules dir") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("rule file");
            if !text.contains("pub static RULE: RunRule") {
                continue;
            }
            files += 1;
            let name = path.file_stem().and_then(|s| s.to_str()).expect("name");
            assert!(
                registry.contains(&format!("&rules::{name}::RULE,")),
                "rules/{name}.rs is not in RUN_RULES"
            );
            assert!(
                modules.contains(&format!("pub mod {name};")),
                "rules/{name}.rs is not in rules/mod.rs"
            );
        }
        assert_eq!(files, RUN_RULES.len(), "a registry line without its file");
    }
}
