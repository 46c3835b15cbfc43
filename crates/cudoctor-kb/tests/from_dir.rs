//! A user's `--kb DIR`: files there replace the embedded ones; bad data is a typed error.

use std::fs;
use std::path::PathBuf;

use cudoctor_kb::{DriverVersion, Kb, KbError};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cudoctor-kb-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_newer_driver_table_overrides_the_embedded_one() {
    let dir = temp_dir("override");
    let embedded = include_str!("../data/drivers.toml");
    // R565 confirmed by the user's newer data... as a ceiling that the toolkit table supports.
    let text = embedded.replace("branch = 565\n", "branch = 565\nmax_cuda = \"12.6\"\n");
    // 12.6's minimum lies in R560, so this is inconsistent and must be rejected.
    fs::write(dir.join("drivers.toml"), &text).unwrap();
    match Kb::from_dir(&dir) {
        Err(KbError::Invariants(p)) => assert!(p.iter().any(|s| s.contains("R565")), "{p:?}"),
        other => panic!("expected invariant error, got {other:?}"),
    }
    // A consistent file loads, and other tables stay embedded.
    fs::write(
        dir.join("drivers.toml"),
        embedded.replace(
            "note = \"LTS branch, end of life August 2028",
            "note = \"user copy; LTS branch, end of life August 2028",
        ),
    )
    .unwrap();
    let kb = Kb::from_dir(&dir).unwrap();
    let r580 = kb.driver_branch(580).unwrap();
    assert!(r580.note.as_deref().unwrap().starts_with("user copy"));
    assert_eq!(
        kb.toolkit_min_driver("13.0".parse().unwrap()),
        Some("580.65.06".parse::<DriverVersion>().unwrap())
    );
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_empty_and_malformed_directories_are_errors() {
    let missing = std::env::temp_dir().join("cudoctor-kb-does-not-exist-9f2c");
    assert!(matches!(Kb::from_dir(&missing), Err(KbError::Read { .. })));

    let empty = temp_dir("empty");
    assert!(matches!(Kb::from_dir(&empty), Err(KbError::NoDataFiles(_))));

    fs::write(
        empty.join("torch.toml"),
        "schema_version = 1\n[[release]]\nversion = 2\n",
    )
    .unwrap();
    let err = Kb::from_dir(&empty).unwrap_err();
    assert!(matches!(err, KbError::Parse { .. }), "{err}");
    assert!(err.to_string().contains("torch.toml"));

    fs::write(empty.join("torch.toml"), "schema_version = 7\n").unwrap();
    assert!(matches!(
        Kb::from_dir(&empty),
        Err(KbError::Schema { found: 7, .. })
    ));

    fs::write(
        empty.join("torch.toml"),
        "schema_version = 1\n[[release]]\nversion = \"2.5.1\"\nvariants = [\"cuda124\"]\npython = [\"3.12\"]\nsources = [\"x\"]\n",
    )
    .unwrap();
    assert!(matches!(Kb::from_dir(&empty), Err(KbError::Version { .. })));

    fs::write(
        empty.join("gpus.toml"),
        "schema_version = 1\n[[gpu]]\nnames = [\"X1\"]\ncc = \"9.0\"\narchitecture = \"Hopper\"\nsource = \"\"\n",
    )
    .unwrap();
    fs::remove_file(empty.join("torch.toml")).unwrap();
    match Kb::from_dir(&empty) {
        Err(KbError::Invariants(p)) => assert!(p.iter().any(|s| s.contains("no source"))),
        other => panic!("expected invariant error, got {other:?}"),
    }
    fs::remove_dir_all(&empty).unwrap();
}
