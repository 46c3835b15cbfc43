//! Logs observed on the project's GPU machine, 2026-11-30 (tests/corpus/device_observed.toml).
//! Not public bug reports: kept apart from the public corpus and its accuracy figure. Each one
//! must get exactly its expected answer, since these are what the current torch prints.

use cudoctor_explain::{explain_str, Category, GpuFact, MachineFacts, Platform, Verdict};
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

fn case(id: &str) -> Case {
    cases()
        .into_iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no observed case {id}"))
}

/// The machine the logs were produced on, as `cudoctor explain` sees it there (the variable
/// unset in its own environment).
fn h200x2() -> MachineFacts {
    let gpu = || GpuFact {
        name: "NVIDIA H200".into(),
        compute_capability: Some("9.0".into()),
        memory_mib: Some(143771),
    };
    MachineFacts {
        platform: Platform::Container,
        driver_version: Some("580.159.04".into()),
        driver_max_cuda: Some("13.0".into()),
        gpus: vec![gpu(), gpu()],
        torch_version: Some("2.11.0+cu130".into()),
        torch_cuda: Some("13.0".into()),
        ..Default::default()
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
        let e = explain_str(&c.text, None);
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

/// On the machine itself CUDA_VISIBLE_DEVICES was unset and both GPUs visible: the log came
/// from another context (the script set the variable for that one command).
#[test]
fn no_visible_gpu_on_the_machine_as_it_is_points_elsewhere() {
    let e = explain_str(&case("no_visible_gpu").text, Some(&h200x2()));
    let check = e.machine.clone().unwrap_or_else(|| panic!("no check"));
    assert_eq!(check.verdict, Verdict::Contradicts, "{check:?}");
    assert!(
        check
            .contradictions
            .iter()
            .any(|x| x.contains("2 GPU(s)") && x.contains("not set") && x.contains("scheduler")),
        "{check:?}"
    );
    // A working driver is no contradiction for this message.
    assert!(
        !check
            .contradictions
            .iter()
            .any(|x| x.contains("working driver")),
        "{check:?}"
    );
}

/// With the variable as the script set it, the machine confirms the cause and says what to do.
#[test]
fn no_visible_gpu_with_the_variable_as_set_names_it() {
    let facts = MachineFacts {
        cuda_visible_devices: Some(String::new()),
        ..h200x2()
    };
    let e = explain_str(&case("no_visible_gpu").text, Some(&facts));
    let check = e.machine.clone().unwrap_or_else(|| panic!("no check"));
    assert_eq!(check.verdict, Verdict::Consistent, "{check:?}");
    assert!(
        e.evidence
            .iter()
            .any(|x| x.contains("CUDA_VISIBLE_DEVICES is set here to \"\"")
                && x.contains("hides every GPU of the 2")),
        "{:?}",
        e.evidence
    );
    assert_eq!(
        e.fix.first().map(String::as_str),
        Some("unset CUDA_VISIBLE_DEVICES  # every GPU becomes visible again")
    );
    assert!(
        e.fix.iter().any(|f| f.contains("CUDA_VISIBLE_DEVICES=0,1")),
        "{:?}",
        e.fix
    );
}

#[test]
fn the_killed_torchrun_stays_unknown_even_with_facts() {
    let e = explain_str(&case("nccl_timeout").text, Some(&h200x2()));
    assert_eq!(e.category, Category::Unknown);
    assert!(e.machine.is_none());
}
