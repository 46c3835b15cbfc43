//! The emitters' vocabulary: every message the CUDA stack's software can print (the CUDA
//! runtime's and driver's error strings and status names, the CUDA libraries' statuses, NCCL's
//! results and warnings, the frameworks' environment messages), collected from their sources
//! into `tests/emitters/*.toml`, one file per emitter, each row with the category its message
//! names. Explain must read every one of them through its general reading: a report it never
//! saw still speaks this vocabulary.
//!
//! A row expected `unknown` is a message that alone cannot name a cause (its `why` says why):
//! explain may answer "unknown" or "not_environment" for it, never a confident cause.

use cudoctor_explain::{explain_str, Category};
use serde::Deserialize;
use std::collections::BTreeSet;

/// Every emitter's file, by name.
const EMITTERS: &[(&str, &str)] = &[
    ("cuda_runtime", include_str!("emitters/cuda_runtime.toml")),
    ("cuda_driver", include_str!("emitters/cuda_driver.toml")),
    ("cublas", include_str!("emitters/cublas.toml")),
    ("cudnn", include_str!("emitters/cudnn.toml")),
    ("cusolver", include_str!("emitters/cusolver.toml")),
    ("cusparse", include_str!("emitters/cusparse.toml")),
    ("cufft", include_str!("emitters/cufft.toml")),
    ("curand", include_str!("emitters/curand.toml")),
    ("nvrtc", include_str!("emitters/nvrtc.toml")),
    ("nccl", include_str!("emitters/nccl.toml")),
    ("torch", include_str!("emitters/torch.toml")),
    ("tensorflow", include_str!("emitters/tensorflow.toml")),
    ("jax", include_str!("emitters/jax.toml")),
    ("cupy", include_str!("emitters/cupy.toml")),
    ("onnxruntime", include_str!("emitters/onnxruntime.toml")),
    ("paddle", include_str!("emitters/paddle.toml")),
    ("numba", include_str!("emitters/numba.toml")),
    ("ggml", include_str!("emitters/ggml.toml")),
    ("cupy_libs", include_str!("emitters/cupy_libs.toml")),
    ("opencv", include_str!("emitters/opencv.toml")),
    ("tensorrt", include_str!("emitters/tensorrt.toml")),
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    row: Vec<Row>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    message: String,
    source: String,
    expected: String,
    why: Option<String>,
}

fn rows(name: &str, text: &str) -> Vec<Row> {
    match toml::from_str::<File>(text) {
        Ok(f) => f.row,
        Err(e) => panic!("tests/emitters/{name}.toml: {e}"),
    }
}

/// Whether explain's answer is right for a row: the expected category, or for a message that
/// cannot name a cause, no confident cause.
fn right(expected: Category, got: Category) -> bool {
    got == expected
        || (expected == Category::Unknown
            && matches!(got, Category::Unknown | Category::NotEnvironment))
}

#[test]
fn every_row_is_well_formed() {
    for (name, text) in EMITTERS {
        let rows = rows(name, text);
        assert!(!rows.is_empty(), "{name}: no rows");
        let mut seen = BTreeSet::new();
        for r in &rows {
            let expected = Category::parse(&r.expected);
            assert!(
                expected.is_some(),
                "{name}: unknown category {:?}",
                r.expected
            );
            assert!(
                !r.source.trim().is_empty(),
                "{name}: {:?} has no source",
                r.message
            );
            assert_eq!(
                expected == Some(Category::Unknown),
                r.why.is_some(),
                "{name}: {:?}: a `why` is given exactly for rows expected unknown",
                r.message
            );
            assert!(
                seen.insert(r.message.as_str()),
                "{name}: {:?} twice",
                r.message
            );
        }
    }
}

#[test]
fn explain_reads_every_emitters_message() {
    let mut misses = Vec::new();
    let mut total = (0, 0);
    for (name, text) in EMITTERS {
        let rows = rows(name, text);
        let mut ok = 0;
        for r in &rows {
            let expected = Category::parse(&r.expected).unwrap_or(Category::Unknown);
            let got = explain_str(&r.message).category;
            if right(expected, got) {
                ok += 1;
            } else {
                misses.push(format!(
                    "  {name}: expected {expected}, got {got}: {:?}",
                    r.message
                ));
            }
        }
        println!("{name:<12} {ok:>4}/{:<4}", rows.len());
        total = (total.0 + ok, total.1 + rows.len());
    }
    println!("{:<12} {:>4}/{:<4}", "all", total.0, total.1);
    assert!(
        misses.is_empty(),
        "{} of {} rows read wrong:\n{}",
        misses.len(),
        total.1,
        misses.join("\n")
    );
}
