//! Schema 3 carries as types what schema 2 kept in words or paths:
//! - the rendezvous check's ending (`multigpu.rendezvous.ending`, a [`crate::ProbeEnding`]),
//!   which schema 2 wrote as a sentence in `status` (`ok`, `timed out after 12 s`,
//!   `exit status 1`, `not started: …`, `not run under --root`, `no result printed`);
//! - its TCP connection (`tcp`: `connected`, `refused`, `timed_out`, `failed`, with the
//!   system's words in `tcp_error`), which schema 2 wrote as `timed out` or the error's text;
//! - the kind of a framework probe's error (`deep.frameworks[].result.error_kind`), which
//!   schema 2 left in the words of `error`;
//! - the nvidia wheel folder torch's preload found a library in
//!   (`loader.processes[].objects[].opened_by.nvidia_folder`), which schema 2 left in the path.
//!
//! The words matched here are those schema 2's collector wrote; no rule reads them.

use serde_json::{json, Map, Value};

use crate::FrameworkError;

pub(super) fn migrate(snapshot: &mut Value) {
    if let Some(r) = snapshot
        .pointer_mut("/multigpu/rendezvous")
        .and_then(Value::as_object_mut)
    {
        migrate_rendezvous(r);
    }
    let frameworks = snapshot
        .pointer_mut("/deep/frameworks")
        .and_then(Value::as_array_mut);
    for result in frameworks
        .into_iter()
        .flatten()
        .filter_map(|p| p.get_mut("result").and_then(Value::as_object_mut))
    {
        let kind = result
            .get("error")
            .and_then(Value::as_str)
            .map(FrameworkError::of_text);
        if let (Some(kind), false) = (kind, result.contains_key("error_kind")) {
            result.insert("error_kind".into(), super::to_value(kind));
        }
    }
    let processes = snapshot
        .pointer_mut("/loader/processes")
        .and_then(Value::as_array_mut);
    for object in processes
        .into_iter()
        .flatten()
        .filter_map(|p| p.get_mut("objects").and_then(Value::as_array_mut))
        .flatten()
    {
        let folder = object
            .get("path")
            .and_then(Value::as_str)
            .and_then(preload_folder);
        let Some(opened_by) = object.get_mut("opened_by").and_then(Value::as_object_mut) else {
            continue;
        };
        let preloaded = opened_by.get("opener").and_then(Value::as_str) == Some("torch_preload");
        if let (true, Some(folder), false) =
            (preloaded, folder, opened_by.contains_key("nvidia_folder"))
        {
            opened_by.insert("nvidia_folder".into(), Value::String(folder));
        }
    }
}

/// `cufft` of `…/site-packages/nvidia/cufft/lib/libcufft.so.11`: the folder schema 2's preload
/// emulation searched (`<sys.path entry>/nvidia/<folder>/lib/<file>`).
fn preload_folder(path: &str) -> Option<String> {
    let (_, rest) = path.rsplit_once("/nvidia/")?;
    let mut parts = rest.split('/');
    let (folder, lib, _file, none) = (parts.next()?, parts.next()?, parts.next()?, parts.next());
    (lib == "lib" && none.is_none() && !folder.is_empty()).then(|| folder.to_string())
}

fn migrate_rendezvous(r: &mut Map<String, Value>) {
    if let Some(status) = r.remove("status") {
        if !r.contains_key("ending") {
            r.insert("ending".into(), ending_of(status.as_str().unwrap_or("")));
        }
    }
    if let Some(Value::String(tcp)) = r.get("tcp").cloned() {
        let token = match tcp.as_str() {
            "connected" => "connected",
            "refused" => "refused",
            "timed out" | "timed_out" => "timed_out",
            "failed" => "failed",
            _ => {
                r.entry("tcp_error").or_insert(Value::String(tcp.clone()));
                "failed"
            }
        };
        r.insert("tcp".into(), Value::String(token.into()));
    }
}

/// Schema 2's `status` sentence as the ending it described.
fn ending_of(status: &str) -> Value {
    if status == "ok" {
        return json!({"kind": "reported"});
    }
    if let Some(rest) = status.strip_prefix("timed out after ") {
        let after_s: f64 = rest.trim_end_matches(" s").parse().unwrap_or(0.0);
        return json!({"kind": "timed_out", "after_s": after_s});
    }
    if let Some(code) = status.strip_prefix("exit status ") {
        return match code.parse::<i32>() {
            // Schema 2 wrote -1 where the child died of a signal (no exit code).
            Ok(-1) | Err(_) => json!({"kind": "crashed"}),
            Ok(c) => json!({"kind": "crashed", "exit_code": c}),
        };
    }
    if let Some(error) = status.strip_prefix("not started: ") {
        return json!({"kind": "not_started", "error": error});
    }
    if status == "not run under --root" {
        return json!({"kind": "not_run_under_root"});
    }
    json!({"kind": "bad_output"})
}

#[cfg(test)]
mod tests {
    use crate::{from_json, FrameworkError, ProbeEnding, RendezvousProbe, Snapshot, TcpConnect};

    fn v2(extra: serde_json::Value) -> Vec<u8> {
        let mut v = serde_json::json!({"schema_version": 2, "tool_version": "0.1.0", "root": "/"});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::to_vec(&v).unwrap()
    }

    fn rendezvous(status: &str, tcp: Option<&str>) -> RendezvousProbe {
        let mut r = serde_json::json!({"interpreter": "/venv/bin/python", "master_addr": "10.0.0.1",
            "master_port": "29500", "status": status});
        if let Some(t) = tcp {
            r["tcp"] = t.into();
        }
        let s: Snapshot =
            from_json(&v2(serde_json::json!({"multigpu": {"rendezvous": r}}))).unwrap();
        assert_eq!(s.schema_version, crate::SCHEMA_VERSION);
        s.multigpu.unwrap().rendezvous.unwrap()
    }

    #[test]
    fn the_rendezvous_sentences_become_endings() {
        assert_eq!(rendezvous("ok", None).ending, ProbeEnding::Reported);
        assert_eq!(
            rendezvous("timed out after 12 s", None).ending,
            ProbeEnding::TimedOut { after_s: 12.0 }
        );
        assert_eq!(
            rendezvous("exit status 1", None).ending,
            ProbeEnding::Crashed {
                signal: None,
                exit_code: Some(1)
            }
        );
        assert_eq!(
            rendezvous("exit status -1", None).ending,
            ProbeEnding::Crashed {
                signal: None,
                exit_code: None
            }
        );
        assert_eq!(
            rendezvous("not started: No such file or directory (os error 2)", None).ending,
            ProbeEnding::NotStarted {
                error: "No such file or directory (os error 2)".into()
            }
        );
        assert_eq!(
            rendezvous("not run under --root", None).ending,
            ProbeEnding::NotRunUnderRoot
        );
        assert_eq!(
            rendezvous("no result printed", None).ending,
            ProbeEnding::BadOutput
        );
    }

    #[test]
    fn the_tcp_words_become_kinds_and_an_error_keeps_its_text() {
        assert_eq!(
            rendezvous("ok", Some("connected")).tcp,
            Some(TcpConnect::Connected)
        );
        assert_eq!(
            rendezvous("ok", Some("refused")).tcp,
            Some(TcpConnect::Refused)
        );
        assert_eq!(
            rendezvous("ok", Some("timed out")).tcp,
            Some(TcpConnect::TimedOut)
        );
        let r = rendezvous("ok", Some("[Errno 113] No route to host"));
        assert_eq!(r.tcp, Some(TcpConnect::Failed));
        assert_eq!(r.tcp_error.as_deref(), Some("[Errno 113] No route to host"));
    }

    #[test]
    fn framework_errors_get_their_kind() {
        let probe = |error: &str| {
            serde_json::json!({"framework": "jax", "package": "jax-cuda12-plugin",
                "interpreter": "/venv/bin/python", "env_prefix": "/venv",
                "ending": {"kind": "reported"}, "result": {"error": error}})
        };
        let s: Snapshot = from_json(&v2(serde_json::json!({"deep": {"runs": [], "frameworks": [
            probe("ModuleNotFoundError: No module named 'jaxlib'"),
            probe("ImportError: libcublasLt.so.13: cannot open shared object file"),
        ]}})))
        .unwrap();
        let kinds: Vec<_> = s
            .deep
            .unwrap()
            .frameworks
            .iter()
            .map(|p| p.result.as_ref().unwrap().error_kind)
            .collect();
        assert_eq!(
            kinds,
            [
                Some(FrameworkError::ModuleNotFound),
                Some(FrameworkError::Raised)
            ]
        );
    }

    #[test]
    fn preloaded_objects_get_the_folder_of_their_path() {
        let sp = "/home/nvidia/venv/lib/python3.12/site-packages";
        let object = |path: String, opener: &str| serde_json::json!({"path": path, "opened_by": {"opener": opener, "by": "torch"}});
        let s: Snapshot = from_json(&v2(serde_json::json!({"loader": {"processes": [{
        "env_prefix": "/home/nvidia/venv",
        "objects": [
            object(format!("{sp}/nvidia/cufft/lib/libcufft.so.11"), "torch_preload"),
            object(format!("{sp}/nvidia/cu13/lib/libcublas.so.13"), "torch_preload"),
            object(format!("{sp}/torch/lib/libtorch_cuda.so"), "python_import"),
            object(format!("{sp}/nvidia/cudnn/lib/libcudnn.so.9"), "library_dlopen"),
        ]}]}})))
        .unwrap();
        let folders: Vec<_> = s.loader.unwrap().processes[0]
            .objects
            .iter()
            .map(|o| o.opened_by.as_ref().unwrap().nvidia_folder.clone())
            .collect();
        assert_eq!(
            folders,
            [Some("cufft".into()), Some("cu13".into()), None, None]
        );
    }
}
