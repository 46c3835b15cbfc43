//! The signature database is data; these tests keep it sound.

use cudoctor_explain::prefilter::required_literals;
use cudoctor_explain::signatures::{builtin, BUILTIN_TOML};
use cudoctor_explain::{Category, SignatureDb};

fn db() -> &'static SignatureDb {
    match builtin() {
        Ok(db) => db,
        Err(e) => panic!("built-in signatures do not load: {e}"),
    }
}

#[test]
fn builtin_database_has_no_invariant_violations() {
    let problems = db().invariant_violations();
    assert!(
        problems.is_empty(),
        "signature data problems:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_category_but_unknown_has_a_signature() {
    for c in Category::ALL {
        let n = db().signatures.iter().filter(|s| s.category == c).count();
        if c == Category::Unknown {
            continue;
        }
        assert!(n > 0, "no signature for {c}");
    }
}

#[test]
fn every_trigger_pattern_has_a_required_literal() {
    // Without one the prefilter would have to pass every line to the regexes.
    for s in &db().signatures {
        for p in &s.patterns {
            let lits = required_literals(p.as_str());
            let shortest = lits
                .as_ref()
                .and_then(|l| l.iter().map(String::len).min())
                .unwrap_or(0);
            assert!(
                shortest >= 4,
                "{}: pattern {:?} requires no literal of 4+ bytes ({lits:?})",
                s.id,
                p.as_str()
            );
        }
    }
}

#[test]
fn broken_data_gives_typed_errors() {
    assert!(SignatureDb::from_toml("schema = ").is_err());
    let bad_regex = BUILTIN_TOML.replacen(
        "match = ['(?i)NVIDIA driver on your system is too old']",
        "match = ['(unclosed']",
        1,
    );
    assert!(matches!(
        SignatureDb::from_toml(&bad_regex),
        Err(cudoctor_explain::DbError::Pattern { .. })
    ));
    let bad_cat = BUILTIN_TOML.replacen(
        "category = \"driver_too_old\"",
        "category = \"driver_too_young\"",
        1,
    );
    assert!(matches!(
        SignatureDb::from_toml(&bad_cat),
        Err(cudoctor_explain::DbError::Category { .. })
    ));
}

#[test]
fn duplicate_ids_and_unused_fields_are_reported() {
    let dup = BUILTIN_TOML.replacen(
        "id = \"cuda-insufficient-driver\"",
        "id = \"torch-driver-too-old\"",
        1,
    );
    let db = SignatureDb::from_toml(&dup).unwrap_or_else(|e| panic!("{e}"));
    assert!(db
        .invariant_violations()
        .iter()
        .any(|p| p.contains("duplicate id")));
    let unused = BUILTIN_TOML.replacen(
        "cause = \"The program asked for {tried} more",
        "cause = \"The program asked for more",
        1,
    );
    let db = SignatureDb::from_toml(&unused).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        db.invariant_violations()
            .iter()
            .any(|p| p.contains("field tried")),
        "{:?}",
        db.invariant_violations()
    );
}

#[test]
fn a_check_made_for_another_category_is_reported() {
    let moved = BUILTIN_TOML.replacen(
        "check = \"visible_devices\"\nmatch = ['(?i)No CUDA GPUs are available']",
        "check = \"visible_devices\"\nmatch = ['(?i)No CUDA GPUs are available']\n",
        1,
    );
    assert_ne!(moved, BUILTIN_TOML, "the signature to alter was not found");
    let wrong = moved.replacen(
        "id = \"torch-no-cuda-gpus\"\ncategory = \"driver_missing\"",
        "id = \"torch-no-cuda-gpus\"\ncategory = \"nccl\"",
        1,
    );
    assert_ne!(wrong, moved, "the category to alter was not found");
    let db = SignatureDb::from_toml(&wrong).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        db.invariant_violations()
            .iter()
            .any(|p| p.contains("torch-no-cuda-gpus") && p.contains("check")),
        "{:?}",
        db.invariant_violations()
    );
    let unknown_check =
        BUILTIN_TOML.replacen("check = \"visible_devices\"", "check = \"visible_gpus\"", 1);
    assert!(SignatureDb::from_toml(&unknown_check).is_err());
}
