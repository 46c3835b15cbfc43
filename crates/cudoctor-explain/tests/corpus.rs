//! Accuracy on real error texts from public bug reports (tests/corpus/corpus.toml).

use cudoctor_explain::{explain_str, Category};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

const CORPUS: &str = include_str!("corpus/corpus.toml");
const MIN_OVERALL_ACCURACY: f64 = 0.90;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    id: String,
    source: String,
    established: String,
    expected: String,
    text: String,
}

fn corpus() -> Vec<Case> {
    match toml::from_str::<Corpus>(CORPUS) {
        Ok(c) => c.case,
        Err(e) => panic!("corpus does not parse: {e}"),
    }
}

#[test]
fn corpus_is_well_formed_and_covers_every_category() {
    let cases = corpus();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let mut ids = BTreeSet::new();
    let mut covered = BTreeSet::new();
    for c in &cases {
        assert!(ids.insert(c.id.as_str()), "duplicate id {}", c.id);
        assert!(
            c.source.starts_with("https://github.com/"),
            "{}: source must be a public thread",
            c.id
        );
        assert!(
            !c.established.trim().is_empty(),
            "{}: say what the thread established",
            c.id
        );
        assert!(!c.text.trim().is_empty(), "{}: empty text", c.id);
        let cat = Category::parse(&c.expected)
            .unwrap_or_else(|| panic!("{}: unknown category {}", c.id, c.expected));
        covered.insert(cat);
    }
    for c in Category::ALL {
        assert!(covered.contains(&c), "no corpus case for {c}");
    }
}

#[test]
fn corpus_accuracy() {
    let cases = corpus();
    let mut per: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    let mut misses = Vec::new();
    for c in &cases {
        let e = explain_str(&c.text, None);
        let got = e.category.as_str();
        let entry = per.entry(c.expected.clone()).or_default();
        entry.1 += 1;
        if got == c.expected {
            entry.0 += 1;
        } else {
            misses.push(format!(
                "  {} expected {} got {} ({:?})",
                c.id, c.expected, got, e.signature
            ));
        }
    }
    let (ok, total) = per.values().fold((0, 0), |(a, b), (x, y)| (a + x, b + y));
    println!("{:<26} {:>7} {:>9}", "category", "correct", "accuracy");
    for (cat, (good, all)) in &per {
        println!(
            "{cat:<26} {good:>3}/{all:<3} {:>8.1}%",
            100.0 * f64::from(*good) / f64::from(*all)
        );
    }
    let overall = f64::from(ok) / f64::from(total);
    println!(
        "{:<26} {ok:>3}/{total:<3} {:>8.1}%",
        "overall",
        100.0 * overall
    );
    if !misses.is_empty() {
        println!("misclassified:\n{}", misses.join("\n"));
    }
    assert!(
        overall >= MIN_OVERALL_ACCURACY,
        "overall accuracy {:.1}% is below {:.0}%",
        100.0 * overall,
        100.0 * MIN_OVERALL_ACCURACY
    );
}

#[test]
fn every_known_answer_names_lines_and_fixes() {
    for c in corpus() {
        let e = explain_str(&c.text, None);
        if e.is_known() {
            assert!(!e.matched.is_empty(), "{}: no matched line", c.id);
            assert!(!e.fix.is_empty(), "{}: no fix", c.id);
            assert!(
                !e.cause.contains("unknown"),
                "{}: cause has an unfilled field: {}",
                c.id,
                e.cause
            );
        }
    }
}
