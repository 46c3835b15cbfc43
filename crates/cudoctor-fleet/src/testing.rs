//! Test inputs: the real snapshots recorded on GPU machines, kept in docs/device-runs.

use std::path::PathBuf;

use cudoctor_snapshot::Snapshot;

/// A snapshot from docs/device-runs (a whole `--format json` report or a bare snapshot).
pub fn device_snapshot(rel: &str) -> Snapshot {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/device-runs")
        .join(rel);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("missing fixture {}: {e}", path.display()));
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    if let Some(inner) = value.get_mut("snapshot") {
        value = inner.take();
    }
    serde_json::from_value(value).expect("a snapshot")
}
