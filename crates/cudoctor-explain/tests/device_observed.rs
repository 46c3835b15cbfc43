//! Logs observed on the project's GPU machine, 2026-11-30 (tests/corpus/device_observed.toml).
//! Not public bug reports: kept apart from the public corpus and its accuracy figure. Each one
//! must get exactly its expected answer, since these are what the current torch prints.

use cudoctor_explain::{explain_str, Category};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::Path;

const OBSERVED: &str = include_str!("corpus/device_observed.toml");
const LOG_DIR: &str = "docs/device-runs/2026-11-30-h200x2/explain/";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Observed {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    id: String,
    /// The log in the repository this text was copied from.
    log: String,
    produced_by: String,
    expected: String,
    /// The signature that must win; absent when the answer must be unknown.
    signature: Option<String>,
    text: String,
}

fn cases() -> Vec<Case> {
    match toml::from_str::<Observed>(OBSERVED) {
        Ok(o) => o.case,
        Err(e) => panic!("device_observed.toml does not parse: {e}"),
    }
}

#[test]
fn observed_cases_are_well_formed() {
    let cases = cases();
    assert!(cases.len() >= 7, "only {} observed cases", cases.len());
    let mut ids = BTreeSet::new();
    for c in &cases {
        assert!(ids.insert(c.id.as_str()), "duplicate id {}", c.id);
        assert_eq!(
            c.log,
            format!("{LOG_DIR}{}.log", c.id),
            "{}: log path",
            c.id
        );
        assert!(!c.produced_by.trim().is_empty(), "{}: say how", c.id);
        assert!(Category::parse(&c.expected).is_some(), "{}: category", c.id);
        assert_eq!(
            c.signature.is_none(),
            c.expected == "unknown",
            "{}: a signature goes with a known category, and only with it",
            c.id
        );
    }
}

#[test]
fn every_observed_log_gets_its_expected_answer() {
    let mut wrong = Vec::new();
    for c in cases() {
        let e = explain_str(&c.text);
        if e.category.as_str() != c.expected || e.signature != c.signature {
            wrong.push(format!(
                "  {}: expected {} ({:?}), got {} ({:?})",
                c.id, c.expected, c.signature, e.category, e.signature
            ));
        }
        if e.is_known() {
            assert!(!e.fix.is_empty(), "{}: no fix", c.id);
        }
    }
    assert!(
        wrong.is_empty(),
        "observed logs misexplained:\n{}",
        wrong.join("\n")
    );
}

/// The copies are the logs as written on the machine.
#[test]
fn copies_match_the_logs_in_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    assert!(root.join(LOG_DIR).is_dir(), "{LOG_DIR} is missing");
    for c in cases() {
        let on_disk =
            std::fs::read_to_string(root.join(&c.log)).unwrap_or_else(|e| panic!("{}: {e}", c.log));
        assert_eq!(on_disk, c.text, "{}: the copy differs from {}", c.id, c.log);
    }
}
