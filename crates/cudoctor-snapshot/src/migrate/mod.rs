//! Reading snapshots of earlier schema versions. Each step rewrites the JSON of one version into
//! the next, so a file saved by any earlier cudoctor loads as today's [`crate::Snapshot`].
//!
//! Schema 3 (this one): see [`v2_to_v3`].
//!
//! Schema 2 carries as typed facts what schema 1 kept in words:
//! - `driver.gpus[].mig_mode` / `persistence_mode` (`"Enabled"` / `"Disabled"`) became the
//!   booleans `mig_enabled` / `persistence_enabled`;
//! - the kernel module's version, kept in schema 1 only as the detail of its `/version` attempt,
//!   is `driver.module_version`;
//! - a source's "Driver/library version mismatch", kept only in an attempt's detail, is
//!   `driver.library_mismatch`;
//! - how an all-reduce failed (`deep.runs[].result.all_reduce.failure`), which schema 1 left in
//!   the error's words ("did not finish" for a hang);
//! - an attention extension's failure kind (`…extensions[].failure`: an undefined symbol);
//! - a torch.compile fallback's causes and the variables that switched it off
//!   (`…compile.fallback_causes`, `…compile.disabled_by`), in schema 1 only in `fallback_reason`.
//!
//! The words matched here are those schema 1's collector wrote; matching them is the migration's
//! job only, and no rule reads them.

use serde_json::{Map, Value};

mod v2_to_v3;

use crate::{AllReduceFailure, CompileFallbackCause, ExtensionFailure, COMPILE_SWITCHES};

/// Rewrites `value` (a snapshot of schema `from`) into the current schema. `None` when `from`
/// is newer than this cudoctor or was never a schema.
pub(crate) fn to_current(value: &mut Value, from: u64) -> Option<()> {
    let mut version = from;
    while version < u64::from(crate::SCHEMA_VERSION) {
        match version {
            1 => v1_to_v2(value),
            2 => v2_to_v3::migrate(value),
            _ => return None,
        }
        version += 1;
    }
    (version == u64::from(crate::SCHEMA_VERSION)).then(|| {
        if let Some(map) = value.as_object_mut() {
            map.insert("schema_version".into(), Value::from(version));
        }
    })
}

fn v1_to_v2(snapshot: &mut Value) {
    if let Some(driver) = snapshot.get_mut("driver").and_then(Value::as_object_mut) {
        migrate_driver(driver);
    }
    let runs = snapshot
        .pointer_mut("/deep/runs")
        .and_then(Value::as_array_mut);
    for run in runs.into_iter().flatten() {
        if let Some(all_reduce) = run
            .pointer_mut("/result/all_reduce")
            .and_then(Value::as_object_mut)
        {
            migrate_all_reduce(all_reduce);
        }
        let extensions = run
            .pointer_mut("/result/extensions")
            .and_then(Value::as_array_mut);
        for e in extensions
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            let kind = e
                .get("error")
                .and_then(Value::as_str)
                .map(ExtensionFailure::of_error);
            if let (Some(kind), false) = (kind, e.contains_key("failure")) {
                e.insert("failure".into(), to_value(kind));
            }
        }
        if let Some(compile) = run
            .pointer_mut("/result/compile")
            .and_then(Value::as_object_mut)
        {
            migrate_compile(compile);
        }
    }
}

fn migrate_driver(driver: &mut Map<String, Value>) {
    for gpu in driver
        .get_mut("gpus")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        for (old, new) in [
            ("mig_mode", "mig_enabled"),
            ("persistence_mode", "persistence_enabled"),
        ] {
            if let Some(on) = gpu.remove(old).as_ref().and_then(enabled_word) {
                gpu.insert(new.into(), Value::Bool(on));
            }
        }
    }
    let attempts: Vec<(String, String, String)> = driver
        .get("attempts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| {
            let field = |k: &str| a.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            (field("source"), field("outcome"), field("detail"))
        })
        .collect();
    let sourced =
        |value: &str, source: &str| serde_json::json!({ "value": value, "source": source });
    if !driver.contains_key("module_version") {
        // Schema 1's collector recorded the module's version as the detail of an `ok` attempt
        // at /sys/module/nvidia/version or /proc/driver/nvidia/version, in that order.
        if let Some((source, _, detail)) = attempts
            .iter()
            .find(|(source, outcome, _)| source.ends_with("/version") && outcome == "ok")
        {
            driver.insert("module_version".into(), sourced(detail, source));
        }
    }
    if !driver.contains_key("library_mismatch") {
        if let Some((source, _, detail)) = attempts
            .iter()
            .find(|(_, _, detail)| detail.contains("Driver/library version mismatch"))
        {
            driver.insert("library_mismatch".into(), sourced(detail, source));
        }
    }
}

/// nvidia-smi's spelling of a mode; anything else (`[N/A]`) says nothing.
fn enabled_word(v: &Value) -> Option<bool> {
    match v.as_str()?.trim() {
        "Enabled" => Some(true),
        "Disabled" => Some(false),
        _ => None,
    }
}

fn migrate_all_reduce(all_reduce: &mut Map<String, Value>) {
    if all_reduce.contains_key("failure") {
        return;
    }
    let Some(error) = all_reduce.get("error").and_then(Value::as_str) else {
        return;
    };
    // Schema 1's probe wrote these two sentences itself.
    let failure = if error.contains("did not finish") {
        AllReduceFailure::Hang
    } else if error == "the all-reduce gave a wrong sum" {
        AllReduceFailure::WrongSum
    } else {
        AllReduceFailure::of_nccl_error(error)
    };
    if let Ok(v) = serde_json::to_value(failure) {
        all_reduce.insert("failure".into(), v);
    }
}

fn to_value<T: serde::Serialize>(v: T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn migrate_compile(compile: &mut Map<String, Value>) {
    let Some(reason) = compile.get("fallback_reason").and_then(Value::as_str) else {
        return;
    };
    let mut causes = CompileFallbackCause::of_error(reason);
    // Schema 1's probe wrote this sentence when `import triton` failed.
    if reason.starts_with("triton cannot be imported")
        && !causes.contains(&CompileFallbackCause::TritonMissing)
    {
        causes.push(CompileFallbackCause::TritonBroken);
    }
    causes.sort();
    causes.dedup();
    // …and named the switches it found set as "(set: NAME=value)".
    let disabled_by: Vec<&str> = COMPILE_SWITCHES
        .into_iter()
        .filter(|v| reason.contains(&format!("{v}=")))
        .collect();
    if !compile.contains_key("fallback_causes") && !causes.is_empty() {
        compile.insert("fallback_causes".into(), to_value(causes));
    }
    if !compile.contains_key("disabled_by") && !disabled_by.is_empty() {
        compile.insert("disabled_by".into(), to_value(disabled_by));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{from_json, Outcome, Snapshot};

    fn v1(driver: Value, deep: Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schema_version": 1, "tool_version": "0.1.0", "root": "/",
            "driver": driver, "deep": deep,
        }))
        .unwrap()
    }

    #[test]
    fn modes_become_booleans_and_na_says_nothing() {
        let bytes = v1(
            serde_json::json!({"gpus": [
                {"index": 0, "name": "NVIDIA H200", "source": "nvml",
                 "mig_mode": "Disabled", "persistence_mode": "Enabled"},
                {"index": 1, "name": "NVIDIA A100", "source": "nvidia-smi --query-gpu",
                 "mig_mode": "Enabled", "persistence_mode": "[N/A]"},
            ]}),
            Value::Null,
        );
        let s: Snapshot = from_json(&bytes).unwrap();
        assert_eq!(s.schema_version, crate::SCHEMA_VERSION);
        let g = &s.driver.gpus;
        assert_eq!(
            (g[0].mig_enabled, g[0].persistence_enabled),
            (Some(false), Some(true))
        );
        assert_eq!(
            (g[1].mig_enabled, g[1].persistence_enabled),
            (Some(true), None)
        );
    }

    #[test]
    fn module_version_and_mismatch_come_out_of_the_attempts() {
        let bytes = v1(
            serde_json::json!({
                "attempts": [
                    {"source": "/sys/module/nvidia/version", "outcome": "absent", "detail": "No such file"},
                    {"source": "/proc/driver/nvidia/version", "outcome": "ok", "detail": "570.86.15"},
                    {"source": "nvml", "outcome": "failed", "detail": "nvmlInit_v2 returned NVML error 18"},
                    {"source": "/usr/bin/nvidia-smi --query-gpu", "outcome": "failed",
                     "detail": "exit status 18: Failed to initialize NVML: Driver/library version mismatch"},
                ],
                "version": {"value": "570.86.15", "source": "/proc/driver/nvidia/version"},
            }),
            Value::Null,
        );
        let s = from_json(&bytes).unwrap();
        let module = s.driver.module_version.unwrap();
        assert_eq!(
            (module.value.as_str(), module.source.as_str()),
            ("570.86.15", "/proc/driver/nvidia/version")
        );
        let mismatch = s.driver.library_mismatch.unwrap();
        assert_eq!(mismatch.source, "/usr/bin/nvidia-smi --query-gpu");
        // The attempts themselves stay as they were.
        assert_eq!(s.driver.attempts.len(), 4);
        assert_eq!(s.driver.attempts[0].outcome, Outcome::Absent);
    }

    #[test]
    fn all_reduce_errors_get_their_kind() {
        let run = |error: &str| {
            serde_json::json!({"interpreter": "/venv/bin/python", "status": "ok", "detail": "",
                "result": {"all_reduce": {"world": 2, "error": error}}})
        };
        let bytes = v1(
            serde_json::json!({}),
            serde_json::json!({"runs": [
                run("the all-reduce did not finish in 60 s and was stopped (NCCL hang?)"),
                run("DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error"),
                run("the all-reduce gave a wrong sum"),
                run("RuntimeError: NCCL error: invalid usage"),
            ]}),
        );
        let s = from_json(&bytes).unwrap();
        let kinds: Vec<_> = s
            .deep
            .unwrap()
            .runs
            .iter()
            .map(|r| {
                r.result
                    .as_ref()
                    .unwrap()
                    .all_reduce
                    .as_ref()
                    .unwrap()
                    .failure
            })
            .collect();
        use AllReduceFailure::*;
        assert_eq!(
            kinds,
            [Some(Hang), Some(SharedMemory), Some(WrongSum), Some(Error)]
        );
    }

    #[test]
    fn extension_and_compile_failures_get_their_kinds() {
        let bytes = v1(
            serde_json::json!({}),
            serde_json::json!({"runs": [{"interpreter": "/venv/bin/python", "status": "ok", "detail": "",
            "result": {
                "extensions": [
                    {"name": "flash_attn", "imported": false,
                     "error": "ImportError: flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"},
                    {"name": "xformers", "imported": true, "call_ok": false, "error": "RuntimeError: no kernel"},
                    {"name": "apex", "imported": true},
                ],
                "compile": {"ok": false,
                    "fallback_reason": "no Triton kernel ran: the compiled call fell back to eager (set: TORCH_COMPILE_DISABLE=1, TORCHDYNAMO_SUPPRESS_ERRORS=1)"},
            }}]}),
        );
        let s = from_json(&bytes).unwrap();
        let r = s.deep.unwrap().runs.remove(0).result.unwrap();
        let kinds: Vec<_> = r.extensions.iter().map(|e| e.failure).collect();
        assert_eq!(
            kinds,
            [
                Some(ExtensionFailure::UndefinedSymbol),
                Some(ExtensionFailure::Error),
                None
            ]
        );
        let c = r.compile.unwrap();
        assert!(c.fallback_causes.is_empty());
        assert_eq!(
            c.disabled_by,
            ["TORCH_COMPILE_DISABLE", "TORCHDYNAMO_SUPPRESS_ERRORS"]
        );

        let compile = |reason: &str| {
            let mut m = serde_json::json!({"ok": false, "fallback_reason": reason});
            migrate_compile(m.as_object_mut().unwrap());
            serde_json::from_value::<crate::CompileProbe>(m)
                .unwrap()
                .fallback_causes
        };
        use CompileFallbackCause::*;
        assert_eq!(
            compile("triton cannot be imported: ModuleNotFoundError: No module named 'triton'"),
            [TritonMissing]
        );
        assert_eq!(
            compile("triton cannot be imported: RuntimeError: ptxas failed"),
            [TritonBroken, Ptxas]
        );
        assert_eq!(
            compile("BackendCompilerFailed: RuntimeError: Failed to find C compiler."),
            [NoCCompiler]
        );
    }

    #[test]
    fn newer_schemas_are_refused() {
        let bytes = br#"{"schema_version": 4, "tool_version": "x", "root": "/"}"#;
        assert!(matches!(from_json(bytes), Err(crate::LoadError::Schema(4))));
        let bytes = br#"{"schema_version": 0, "tool_version": "x", "root": "/"}"#;
        assert!(matches!(from_json(bytes), Err(crate::LoadError::Schema(0))));
    }
}
