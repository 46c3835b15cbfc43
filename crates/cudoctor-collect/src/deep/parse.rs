//! Reading the probe's output and deciding how a run ended.
//!
//! The probe writes `@@cudoctor-probe@@ {json}` lines: `stage` events as it goes and `result`
//! events holding the report so far. Anything else on stdout is ignored, so a library that prints
//! while torch imports cannot break parsing. A run that stops early keeps its last partial
//! report and the stage it was in.

use cudoctor_snapshot::{
    signal_name, AllReduceFailure, CompileFallbackCause, ExtensionFailure, ProbeResult, ProbeRun,
    ProbeStage, ProbeStatus,
};
use serde_json::Value;

/// Marks the probe's own lines.
pub const TAG: &str = "@@cudoctor-probe@@";

/// One event from the probe.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeEvent {
    /// A stage started.
    Stage(String),
    /// The report so far (complete when `result.complete`).
    Result(Box<ProbeResult>),
}

/// Parses one stdout line. `None` for lines that are not the probe's; `Some(Err)` for a tagged
/// line that cannot be read (kept so the report can say the output was damaged).
pub fn parse_line(line: &str) -> Option<Result<ProbeEvent, String>> {
    let at = line.find(TAG)?;
    let json = line.get(at + TAG.len()..)?.trim();
    match serde_json::from_str::<Value>(json) {
        Ok(value) => Some(event_of(value)),
        Err(e) => Some(Err(format!("unreadable probe line: {e}"))),
    }
}

fn event_of(value: Value) -> Result<ProbeEvent, String> {
    match value.get("event").and_then(Value::as_str) {
        Some("stage") => value
            .get("name")
            .and_then(Value::as_str)
            .map(|n| ProbeEvent::Stage(n.to_string()))
            .ok_or_else(|| "a stage event without a name".to_string()),
        Some("result") => {
            let data = value
                .get("data")
                .cloned()
                .ok_or_else(|| "a result event without data".to_string())?;
            serde_json::from_value::<ProbeResult>(data)
                .map(|mut r| {
                    classify_errors(&mut r);
                    ProbeEvent::Result(Box::new(r))
                })
                .map_err(|e| format!("the probe's report does not fit: {e}"))
        }
        Some(other) => Err(format!("unknown probe event {other:?}")),
        None => Err("a probe line without an event".to_string()),
    }
}

/// Errors the probe reports in the words of NCCL, Python's loader or the compile stack are
/// given their kind here, once, so rules read types: an all-reduce error the probe did not
/// name itself (a hang, a wrong sum), an extension's import error, a compile fallback's causes.
fn classify_errors(r: &mut ProbeResult) {
    if let Some(ar) = r.all_reduce.as_mut() {
        if ar.failure.is_none() {
            ar.failure = ar.error.as_deref().map(AllReduceFailure::of_nccl_error);
        }
    }
    for e in &mut r.extensions {
        if e.failure.is_none() {
            e.failure = e.error.as_deref().map(ExtensionFailure::of_error);
        }
    }
    if let Some(c) = r.compile.as_mut() {
        if let Some(reason) = &c.fallback_reason {
            c.fallback_causes
                .extend(CompileFallbackCause::of_error(reason));
            c.fallback_causes.sort();
            c.fallback_causes.dedup();
        }
    }
}

/// Everything read from a probe's stdout.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeOutput {
    pub last_stage: Option<String>,
    pub result: Option<ProbeResult>,
    /// Tagged lines that could not be read.
    pub damaged: Vec<String>,
}

impl ProbeOutput {
    /// Takes one line into account; returns the stage name when a stage started.
    pub fn apply(&mut self, line: &str) -> Option<String> {
        match parse_line(line)? {
            Ok(ProbeEvent::Stage(name)) => {
                self.last_stage = Some(name.clone());
                Some(name)
            }
            Ok(ProbeEvent::Result(r)) => {
                self.result = Some(*r);
                None
            }
            Err(e) => {
                if self.damaged.len() < 5 {
                    self.damaged.push(e);
                }
                None
            }
        }
    }

    /// Reads a whole captured stdout.
    pub fn from_stdout(stdout: &str) -> ProbeOutput {
        let mut out = ProbeOutput::default();
        for line in stdout.lines() {
            out.apply(line);
        }
        out
    }
}

/// How the child process ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    Exited(i32),
    Signalled(i32),
    TimedOut { after_s: f64 },
    NotStarted(String),
}

/// Decides a run's status from how the child ended and what it reported.
pub fn classify(
    interpreter: &str,
    env_prefix: Option<&str>,
    ending: Ending,
    output: ProbeOutput,
    stderr: &str,
    elapsed_s: f64,
) -> ProbeRun {
    let mut run = ProbeRun {
        interpreter: interpreter.to_string(),
        env_prefix: env_prefix.map(str::to_string),
        last_stage: output.last_stage.clone().map(ProbeStage::from),
        elapsed_s: Some(elapsed_s),
        ..Default::default()
    };
    let stage = output
        .last_stage
        .as_deref()
        .map(|s| format!(" during stage \"{s}\""))
        .unwrap_or_default();
    let complete = output.result.as_ref().is_some_and(|r| r.complete);
    match &ending {
        Ending::NotStarted(e) => {
            run.status = ProbeStatus::NotStarted;
            run.detail = format!("{interpreter} could not be started: {e}");
        }
        Ending::TimedOut { after_s } => {
            run.status = ProbeStatus::TimedOut;
            run.detail = format!("no answer in {after_s:.0} s; stopped{stage}");
        }
        Ending::Signalled(sig) => {
            run.signal = Some(*sig);
            run.status = ProbeStatus::Crashed;
            run.detail = format!("killed by signal {sig} ({}){stage}", signal_name(*sig));
        }
        Ending::Exited(code) => {
            run.exit_code = Some(*code);
            if complete {
                run.status = ProbeStatus::Ok;
            } else if *code != 0 {
                run.status = ProbeStatus::Crashed;
                run.detail = format!("exited with status {code}{stage}");
                // Python reports an uncaught signal-free abort (e.g. a fatal error) on stderr.
                if let Some(l) = last_meaningful_line(stderr) {
                    run.detail.push_str(&format!(": {l}"));
                }
            } else {
                run.status = ProbeStatus::BadOutput;
                run.detail = match output.damaged.first() {
                    Some(d) => format!("exited without a complete report ({d})"),
                    None => "exited without a complete report".to_string(),
                };
            }
        }
    }
    if let Some(r) = &output.result {
        if let Some(err) = &r.torch_import_error {
            if err.kind == "ModuleNotFoundError" && err.message == "No module named 'torch'" {
                run.status = ProbeStatus::NoTorch;
                run.detail = "torch is not installed in this environment".to_string();
            } else {
                run.status = ProbeStatus::ImportFailed;
                run.detail = err.text();
            }
        }
    }
    if run.status != ProbeStatus::Ok && run.status != ProbeStatus::NoTorch {
        let tail = tail_of(stderr, 40, 4000);
        if !tail.is_empty() {
            run.stderr_tail = Some(tail);
        }
    }
    run.result = output.result;
    run
}

fn last_meaningful_line(s: &str) -> Option<String> {
    s.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(300).collect())
}

/// The last `lines` lines of `s`, at most `max_chars` characters.
pub fn tail_of(s: &str, lines: usize, max_chars: usize) -> String {
    let all: Vec<&str> = s.trim_end().lines().collect();
    let start = all.len().saturating_sub(lines);
    let joined = all.get(start..).unwrap_or(&[]).join("\n");
    let count = joined.chars().count();
    if count <= max_chars {
        joined
    } else {
        joined.chars().skip(count - max_chars).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_reduce_failures_are_typed_when_read() {
        let line = |all_reduce: &str| {
            format!(r#"{TAG} {{"event":"result","data":{{"all_reduce":{all_reduce}}}}}"#)
        };
        let failure = |all_reduce: &str| match parse_line(&line(all_reduce)) {
            Some(Ok(ProbeEvent::Result(r))) => r.all_reduce.unwrap().failure,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            failure(
                r#"{"world":2,"error":"the all-reduce did not finish in 60 s","failure":"hang"}"#
            ),
            Some(AllReduceFailure::Hang)
        );
        assert_eq!(
            failure(
                r#"{"world":2,"error":"NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error"}"#
            ),
            Some(AllReduceFailure::SharedMemory)
        );
        assert_eq!(
            failure(r#"{"world":2,"error":"NCCL error: invalid usage"}"#),
            Some(AllReduceFailure::Error)
        );
        assert_eq!(failure(r#"{"world":2}"#), None);
    }

    #[test]
    fn extension_and_compile_errors_are_typed_when_read() {
        let line = format!(
            r#"{TAG} {{"event":"result","data":{{"extensions":[{{"name":"flash_attn","imported":false,"error":"ImportError: x.so: undefined symbol: _ZN3c10"}}],"compile":{{"ok":false,"fallback_causes":["triton_broken"],"fallback_reason":"triton cannot be imported: RuntimeError: ptxas fatal"}}}}}}"#
        );
        let Some(Ok(ProbeEvent::Result(r))) = parse_line(&line) else {
            panic!("{line}")
        };
        assert_eq!(
            r.extensions[0].failure,
            Some(ExtensionFailure::UndefinedSymbol)
        );
        assert_eq!(
            r.compile.unwrap().fallback_causes,
            [
                CompileFallbackCause::TritonBroken,
                CompileFallbackCause::Ptxas
            ]
        );
    }

    #[test]
    fn untagged_and_damaged_lines() {
        assert!(parse_line("Loading CUDA kernels...").is_none());
        assert!(matches!(
            parse_line(&format!("{TAG} {{\"event\": \"stage\", \"name\": \"sdpa\"}}")),
            Some(Ok(ProbeEvent::Stage(s))) if s == "sdpa"
        ));
        assert!(matches!(
            parse_line(&format!("{TAG} {{\"event\": \"bogus\"}}")),
            Some(Err(_))
        ));
        // A tag glued to a library's unterminated print still parses.
        assert!(matches!(
            parse_line(&format!(
                "warming up...{TAG} {{\"event\":\"stage\",\"name\":\"x\"}}"
            )),
            Some(Ok(ProbeEvent::Stage(_)))
        ));
        // Truncated JSON is a damaged line, not silence.
        assert!(matches!(
            parse_line(&format!("{TAG} {{\"event\": \"sta")),
            Some(Err(_))
        ));
    }

    #[test]
    fn a_crash_names_the_signal_and_stage() {
        let out = ProbeOutput::from_stdout(&format!(
            "{TAG} {{\"event\":\"stage\",\"name\":\"import torch\"}}\n"
        ));
        let run = classify(
            "py",
            None,
            Ending::Signalled(11),
            out,
            "Segmentation fault",
            1.0,
        );
        assert_eq!(run.status, ProbeStatus::Crashed);
        assert!(run.detail.contains("SIGSEGV"), "{}", run.detail);
        assert!(run.detail.contains("import torch"), "{}", run.detail);
        assert_eq!(run.stderr_tail.as_deref(), Some("Segmentation fault"));
    }

    #[test]
    fn exit_zero_without_report_is_bad_output() {
        let run = classify(
            "py",
            None,
            Ending::Exited(0),
            ProbeOutput::default(),
            "",
            0.1,
        );
        assert_eq!(run.status, ProbeStatus::BadOutput);
    }

    #[test]
    fn tails_are_bounded() {
        let s = (0..100).map(|i| format!("line {i}\n")).collect::<String>();
        let t = tail_of(&s, 3, 1000);
        assert_eq!(t, "line 97\nline 98\nline 99");
        assert_eq!(tail_of("abcdef", 3, 2), "ef");
    }
}
