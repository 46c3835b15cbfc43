//! The scan's gate passes over lines on which no reader would find anything: reading every
//! line in full must give the same outcome. Checked on every text of the corpora, placed after
//! enough ordinary lines that the gate applies to all of it (it leaves the first lines of an
//! input, read for typos, alone), and on the real logs under docs/device-runs.

use cudoctor_explain::gate::Gate;
use cudoctor_explain::scanner::{scan, ScanOutcome};
use cudoctor_explain::{builtin_engine, Engine};
use std::path::Path;

const CORPORA: [&str; 5] = [
    include_str!("corpus/corpus.toml"),
    include_str!("corpus/public.toml"),
    include_str!("corpus/independent.toml"),
    include_str!("corpus/wave3.toml"),
    include_str!("corpus/device_observed.toml"),
];

/// The outcome without the counters that say how lines were read.
fn comparable(mut o: ScanOutcome) -> String {
    o.stats.repeated_lines = 0;
    o.stats.passed_over_lines = 0;
    format!("{o:?}")
}

fn both_ways(engine: &Engine, text: &str) -> (String, String, u64) {
    let db = engine.signatures();
    let prefilter = engine.prefilter();
    let gated = scan(text.as_bytes(), db, prefilter, &Gate::new(prefilter));
    let passed = gated.stats.passed_over_lines;
    let full = scan(text.as_bytes(), db, prefilter, &Gate::default());
    (comparable(gated), comparable(full), passed)
}

/// Ordinary lines a training job prints, which the gate passes over: enough that the text
/// after them is past the lines read for typos.
const PREAMBLE_LINES: u64 = 65;

fn preamble(lines: u64) -> String {
    (0..lines)
        .map(|i| {
            format!(
                "[2026-12-04 10:00:{:02}] step {i} | loss 2.{i:03} | lr 3.0e-04\n",
                i % 60
            )
        })
        .collect()
}

#[test]
fn the_gate_changes_no_corpus_outcome() {
    let engine = builtin_engine().expect("the built-in engine loads");
    let pre = preamble(PREAMBLE_LINES);
    // Lines the gate cannot pass over, enough that it looks only sparsely when the text starts.
    let loud: String = (0..140)
        .map(|i| {
            format!(
                "node1:100:{i} [0] NCCL INFO Channel {:02}/0 : 0[0] -> 1[1] via P2P/IPC\n",
                i % 32
            )
        })
        .collect();
    let post = preamble(4);
    let mut cases = 0;
    let mut passed_total = 0;
    for corpus in CORPORA {
        let value: toml::Value = toml::from_str(corpus).expect("corpus parses");
        let Some(list) = value.get("case").and_then(|c| c.as_array()) else {
            continue;
        };
        for case in list {
            let Some(text) = case.get("text").and_then(|t| t.as_str()) else {
                continue;
            };
            let lead = if cases % 2 == 0 { &pre } else { &loud };
            let input = format!("{lead}{text}\n{post}");
            let (gated, full, passed) = both_ways(engine, &input);
            assert_eq!(gated, full, "the gate changed the outcome of:\n{text}");
            cases += 1;
            passed_total += passed;
        }
    }
    assert!(cases > 1000, "only {cases} corpus texts read");
    // The ordinary lines around the texts are passed over: the gate is not a no-op (a text's
    // last trigger keeps the next lines read in full, for its fields).
    assert!(passed_total >= cases, "{passed_total} lines passed over");
}

#[test]
fn the_gate_changes_no_outcome_on_real_logs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/device-runs");
    let engine = builtin_engine().expect("the built-in engine loads");
    let mut logs = 0;
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let ext = path
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or_default();
            if !["log", "txt", "out", "text"].contains(&ext) {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            let (gated, full, _) = both_ways(engine, &text);
            assert_eq!(
                gated,
                full,
                "the gate changed the outcome on {}",
                path.display()
            );
            logs += 1;
        }
    }
    assert!(logs >= 20, "only {logs} real logs under docs/device-runs");
}
