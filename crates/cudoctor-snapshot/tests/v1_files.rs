//! Schema 1 files saved by earlier cudoctors load as schema 2: the reports the GPU machine
//! produced (committed under docs/device-runs/) and the fuzz corpus's stock snapshot.

use std::path::PathBuf;

use cudoctor_snapshot::{from_json, Snapshot, SCHEMA_VERSION};
use serde_json::Value;

fn repo_file(rel: &str) -> (Vec<u8>, Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    let snapshot = value.get("snapshot").cloned().unwrap_or(value);
    assert_eq!(
        snapshot["schema_version"], 1,
        "{rel} is no longer a schema 1 file"
    );
    (bytes, snapshot)
}

/// The facts schema 1 and 2 share are the same after the migration.
fn same_shared_facts(v1: &Value, s: &Snapshot) {
    assert_eq!(s.schema_version, SCHEMA_VERSION);
    assert_eq!(v1["tool_version"], s.tool_version.as_str());
    let gpus = v1["driver"]["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), s.driver.gpus.len());
    for (old, new) in gpus.iter().zip(&s.driver.gpus) {
        assert_eq!(old["name"], new.name.as_str());
        assert_eq!(
            old["compute_capability"],
            new.compute_capability.as_deref().unwrap()
        );
    }
    assert_eq!(
        v1["python_envs"].as_array().map_or(0, Vec::len),
        s.python_envs.len()
    );
    assert_eq!(
        v1["driver"]["attempts"].as_array().unwrap().len(),
        s.driver.attempts.len()
    );
    // Saved again, it is a schema 2 file that loads to the same snapshot.
    let again = from_json(&serde_json::to_vec(s).unwrap()).unwrap();
    assert_eq!(&again, s);
}

#[test]
fn device_run_reports_of_schema_1_load() {
    for rel in [
        "docs/device-runs/2026-11-30-h200x1/deep.json",
        "docs/device-runs/2026-11-30-h200x2/check.json",
        "docs/device-runs/2026-11-30-h200x2/deep/baseline.json",
    ] {
        let (bytes, v1) = repo_file(rel);
        let s = from_json(&bytes).unwrap_or_else(|e| panic!("{rel}: {e:?}"));
        same_shared_facts(&v1, &s);
        // The H200s ran with MIG off and persistence on (nvidia-smi: "Disabled", "Enabled").
        for (old, g) in v1["driver"]["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .zip(&s.driver.gpus)
        {
            assert_eq!(old["mig_mode"], "Disabled", "{rel}");
            assert_eq!(g.mig_enabled, Some(false), "{rel}");
            assert_eq!(
                g.persistence_enabled,
                Some(old["persistence_mode"] == "Enabled"),
                "{rel}"
            );
        }
        let module = s.driver.module_version.as_ref().expect(rel);
        assert_eq!(
            (module.value.as_str(), module.source.as_str()),
            ("580.159.04", "/sys/module/nvidia/version"),
            "{rel}"
        );
        assert_eq!(s.driver.library_mismatch, None, "{rel}");
        // No all-reduce of these runs failed, so none has a failure kind.
        for run in s.deep.iter().flat_map(|d| &d.runs) {
            if let Some(ar) = run.result.as_ref().and_then(|r| r.all_reduce.as_ref()) {
                assert_eq!((ar.error.as_ref(), ar.failure), (None, None), "{rel}");
            }
        }
    }
}

#[test]
fn a_deep_two_gpu_run_keeps_its_all_reduce() {
    let (bytes, _) = repo_file("docs/device-runs/2026-11-30-h200x2/deep/baseline.json");
    let s = from_json(&bytes).unwrap();
    let ar = s.deep.as_ref().unwrap().runs[0]
        .result
        .as_ref()
        .unwrap()
        .all_reduce
        .as_ref()
        .unwrap();
    assert_eq!((ar.world, ar.nccl_version.as_deref()), (2, Some("2.28.9")));
    assert_eq!(ar.largest().unwrap().busbw_gbps, Some(330.8765));
}

#[test]
fn the_stock_cpu_snapshot_of_schema_1_loads() {
    let (bytes, v1) = repo_file("crates/cudoctor-fuzz/corpus/snapshot/stock_cpu_env.json");
    let s = from_json(&bytes).unwrap();
    same_shared_facts(&v1, &s);
    // No driver on that machine: no module version, the absent attempts kept.
    assert_eq!(s.driver.module_version, None);
    assert!(s.driver.gpus.is_empty());
}
