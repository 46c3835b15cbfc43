//! `cudoctor mcp`: a Model Context Protocol server on standard input and output (JSON-RPC 2.0,
//! one message per line, protocol version 2025-06-18) for agents that diagnose machines for
//! people. Its tools are the read-only commands — check, explain, plan, kernels, libs — with a
//! JSON schema for their arguments; a call runs the command (the cudoctor binary, as a child with
//! a timeout in its own process group: [`SelfCalls`]) with `--format json` and answers its typed
//! report as `structuredContent` (and as text). Nothing is ever installed or changed: fixes are
//! printed.
//!
//! The protocol ([`serve`], [`handle`]) is apart from the running of commands ([`Calls`]), so
//! every request a client may send is fuzzed (the `mcp` target of cudoctor-fuzz) without
//! starting anything.

use std::io::{BufRead, Write};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Map, Value};

pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// What runs a tool's command: `line` (its arguments, the tool's name first) with `text` given
/// as explain's log when set, answering the MCP result of the call.
pub trait Calls {
    fn call(&self, tool: &str, line: &[String], text: Option<&str>) -> Value;
}

/// The longest a tool's command may run (check --deep runs probes in each environment).
const CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// The most bytes of a report kept (a machine with many environments writes megabytes).
const MAX_REPORT: usize = 64 << 20;
/// The longest request line read: a pasted log for explain fits.
pub const MAX_LINE: usize = 32 << 20;

/// One tool: its name, what it answers, and its arguments as (name, JSON schema, description).
struct Tool {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    args: &'static [(&'static str, &'static str, &'static str)],
}

const STRINGS: &str = "strings";
const STRING: &str = "string";
const BOOL: &str = "boolean";
const NUMBER: &str = "number";

static TOOLS: &[Tool] = &[
    Tool {
        name: "check",
        title: "Diagnose the CUDA stack",
        description: "The layered diagnosis of this machine's NVIDIA CUDA stack (platform, driver, toolkit, framework, kernel images, libraries, accelerated paths, multi-GPU): findings with evidence, cause and the exact fix commands (never run), and the collected snapshot. Read-only.",
        args: &[
            ("python", STRINGS, "Python interpreters or environment prefixes to inspect (default: the ones found)."),
            ("gpu", STRINGS, "What-if: judge for these GPUs instead of the present ones (a name such as \"RTX 5090\", or sm_120)."),
            ("deep", BOOL, "Also run the runtime probes in each environment's own interpreter (imports torch; slower)."),
            ("snapshot", STRING, "Judge a saved snapshot file (check --save, or a check JSON report) instead of this machine."),
            ("strict", BOOL, "Count warnings as problems."),
            ("timeout", NUMBER, "Seconds each child process and driver library may take (default 5)."),
        ],
    },
    Tool {
        name: "explain",
        title: "Explain an error message or log",
        description: "The cause of an error message or a whole log (CUDA, driver, NCCL, torch, JAX, build errors), confirmed against this machine by the same rules as check, with check's fix. Give the text, or a file path. Read-only.",
        args: &[
            ("text", STRING, "The error message or log text."),
            ("file", STRING, "A log file on this machine (instead of text)."),
            ("python", STRINGS, "Python environments to confirm against, as for check."),
            ("gpu", STRINGS, "What-if GPUs, as for check."),
            ("snapshot", STRING, "Confirm against a saved snapshot instead of this machine."),
            ("no_machine", BOOL, "Do not look at this machine at all."),
        ],
    },
    Tool {
        name: "plan",
        title: "Choose a torch build",
        description: "The torch / torchvision / torchaudio build for this driver, these GPUs and this Python, as pip / uv / conda commands (printed, never run).",
        args: &[
            ("python", STRING, "The environment to plan for (default: the active one)."),
            ("driver", STRING, "Plan for this driver version instead of the installed one."),
            ("gpu", STRINGS, "Plan for these GPUs (names or sm_XX)."),
            ("cuda", STRING, "Wanted CUDA version of the build (X.Y)."),
            ("torch", STRING, "Wanted torch release."),
            ("python_version", STRING, "Python version the packages are for (X.Y)."),
            ("installer", STRING, "pip, uv or conda."),
            ("platform", STRING, "linux-x86_64, linux-aarch64, windows or jetson."),
            ("no_detect", BOOL, "Do not read this machine: plan from the arguments alone."),
        ],
    },
    Tool {
        name: "kernels",
        title: "Kernel images per GPU",
        description: "The SASS/PTX architectures each CUDA library carries (read from its fat binaries) and, for each GPU, whether it runs natively, through PTX JIT, or not at all.",
        args: &[
            ("paths", STRINGS, "Libraries or directories to scan (default: every CUDA library of each Python environment)."),
            ("gpu", STRINGS, "Judge for these GPUs instead of the present ones."),
            ("python", STRINGS, "Environments whose libraries to scan."),
        ],
    },
    Tool {
        name: "libs",
        title: "Library resolution",
        description: "Which file each needed shared library resolves to, found as glibc's ld.so would, for `import torch` and each extension; unresolved libraries and symbols.",
        args: &[
            ("paths", STRINGS, "Shared objects to resolve (default: torch and its extensions)."),
            ("python", STRINGS, "Environments to read."),
        ],
    },
];

fn input_schema(tool: &Tool) -> Value {
    let mut props = Map::new();
    for (name, kind, description) in tool.args {
        let schema = match *kind {
            STRINGS => {
                json!({"type": "array", "items": {"type": "string"}, "description": description})
            }
            other => json!({"type": other, "description": description}),
        };
        props.insert((*name).to_string(), schema);
    }
    json!({"type": "object", "properties": props, "additionalProperties": false})
}

pub fn tools_list() -> Value {
    let tools: Vec<Value> = TOOLS
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "inputSchema": input_schema(t),
                "annotations": {
                    "title": t.title,
                    "readOnlyHint": true,
                    "destructiveHint": false,
                    "idempotentHint": true,
                    "openWorldHint": false
                }
            })
        })
        .collect();
    json!({ "tools": tools })
}

/// The flags tool `name` takes (`--python`, ...), or None for no such tool.
pub fn tool_flags(name: &str) -> Option<Vec<String>> {
    let tool = TOOLS.iter().find(|t| t.name == name)?;
    Some(
        tool.args
            .iter()
            .map(|(n, _, _)| format!("--{}", n.replace('_', "-")))
            .collect(),
    )
}

/// The command line of a tool call, from its arguments (checked against its schema), and the
/// text for standard input (explain's `text`).
pub fn command_line(
    name: &str,
    args: &Map<String, Value>,
) -> Result<(Vec<String>, Option<String>), String> {
    let tool = TOOLS
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("no tool {name:?}"))?;
    let mut line = vec![name.to_string()];
    let mut stdin = None;
    let mut positional = Vec::new();
    for (key, value) in args {
        let (_, kind, _) = tool
            .args
            .iter()
            .find(|(n, _, _)| n == key)
            .ok_or_else(|| format!("{name}: no argument {key:?}"))?;
        let flag = format!("--{}", key.replace('_', "-"));
        let text = |v: &Value| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{name}: {key} must be a string"))
        };
        match *kind {
            STRINGS => {
                let items = value
                    .as_array()
                    .ok_or_else(|| format!("{name}: {key} must be an array of strings"))?;
                for v in items {
                    let v = text(v)?;
                    if key == "paths" {
                        positional.push(v);
                    } else {
                        // `--flag=value`: a value that starts with `-` stays a value.
                        line.push(format!("{flag}={v}"));
                    }
                }
            }
            BOOL => {
                if value
                    .as_bool()
                    .ok_or_else(|| format!("{name}: {key} must be true or false"))?
                {
                    line.push(flag);
                }
            }
            NUMBER => {
                let n = value
                    .as_f64()
                    .ok_or_else(|| format!("{name}: {key} must be a number"))?;
                line.push(format!("{flag}={n}"));
            }
            _ => match key.as_str() {
                "text" => stdin = Some(text(value)?),
                "file" => positional.push(text(value)?),
                _ => line.push(format!("{flag}={}", text(value)?)),
            },
        }
    }
    if name == "explain" {
        match (&stdin, positional.is_empty()) {
            (Some(_), false) => return Err("explain: give text or file, not both".into()),
            (None, true) => return Err("explain: give the text of the message, or a file".into()),
            _ => {}
        }
    }
    line.extend(["--format".to_string(), "json".to_string()]);
    if !positional.is_empty() {
        // Paths may start with '-': after `--` they are paths.
        line.push("--".to_string());
        line.extend(positional);
    }
    Ok((line, stdin))
}

/// The MCP result of a `tools/call`: its arguments checked and made a command line, run by
/// `calls`; an error result when they do not fit the tool's schema.
fn call_tool(params: &Value, calls: &dyn Calls) -> Value {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let empty = Map::new();
    let args = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => m,
        Some(_) => return tool_error("arguments must be an object".into()),
    };
    match command_line(name, args) {
        Ok((line, stdin)) => calls.call(name, &line, stdin.as_deref()),
        Err(e) => tool_error(e),
    }
}

/// Tool calls run as this same binary, a child with a timeout in its own process group.
pub struct SelfCalls;

impl Calls for SelfCalls {
    /// Runs the tool's command and answers the MCP result: the typed report, or an error result
    /// with the command's message.
    fn call(&self, name: &str, line: &[String], stdin: Option<&str>) -> Value {
        let Ok(exe) = std::env::current_exe() else {
            return tool_error("cannot find the cudoctor binary".into());
        };
        // explain's text goes through a file of this call's own (created new, never through a
        // link, readable by this user only), removed when the call ends.
        let log = match stdin.map(LogFile::new).transpose() {
            Ok(l) => l,
            Err(e) => return tool_error(format!("cannot keep the text for explain: {e}")),
        };
        let mut cmd = Command::new(exe);
        cmd.args(line).env("NO_COLOR", "1");
        if let Some(l) = &log {
            cmd.arg("--").arg(&l.0);
        }
        let limits = cudoctor_collect::runner::Limits {
            max_stdout: MAX_REPORT,
            stderr_tail: true,
            ..cudoctor_collect::runner::Limits::tool(CALL_TIMEOUT)
        };
        let done = cudoctor_collect::runner::run(cmd, &limits, None);
        drop(log);
        let stderr = String::from_utf8_lossy(&done.stderr).trim().to_string();
        let code = match done.ending {
            cudoctor_collect::runner::Ending::Exited(c) => c,
            cudoctor_collect::runner::Ending::TimedOut => {
                return tool_error(format!(
                    "{name} did not finish within {} s",
                    CALL_TIMEOUT.as_secs()
                ))
            }
            other => return tool_error(format!("{name} did not run: {other:?} {stderr}")),
        };
        match (code, serde_json::from_slice::<Value>(&done.stdout)) {
            (0 | 1, Ok(report)) => tool_result(report),
            _ => tool_error(if stderr.is_empty() {
                format!("{name} exited {code}")
            } else {
                stderr
            }),
        }
    }
}

/// The MCP result of a command's JSON report: an object as `structuredContent` too.
pub fn tool_result(report: Value) -> Value {
    match report {
        report @ Value::Object(_) => {
            let text = serde_json::to_string(&report).unwrap_or_default();
            json!({
                "content": [{"type": "text", "text": text}],
                "structuredContent": report,
                "isError": false
            })
        }
        report => json!({
            "content": [{"type": "text", "text": report.to_string()}],
            "isError": false
        }),
    }
}

/// A temporary file holding a log's text for one explain call.
struct LogFile(std::path::PathBuf);

impl LogFile {
    fn new(text: &str) -> std::io::Result<LogFile> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "cudoctor-mcp-{}-{}-{nanos}.log",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path)?;
        let file_path = LogFile(path);
        file.write_all(text.as_bytes())?;
        Ok(file_path)
    }
}

impl Drop for LogFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn tool_error(message: String) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

fn reply(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Who answers: the version line it gives in `initialize`, and what runs tool calls.
pub struct Server<'a> {
    pub version: &'a str,
    pub calls: &'a dyn Calls,
}

/// The answer to one message, or None for a notification.
pub fn handle(message: &Value, server: &Server) -> Option<Value> {
    let id = message.get("id").cloned();
    let method = message.get("method").and_then(Value::as_str);
    let Some(method) = method else {
        // A response from the client (we send no requests) or nonsense.
        return id.map(|id| error(&id, -32600, "invalid request: no method"));
    };
    let id = id?; // notifications (notifications/initialized, cancelled) need no answer
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    Some(match method {
        "initialize" => reply(
            &id,
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {
                    "name": "cudoctor",
                    "title": "cudoctor — CUDA stack diagnosis",
                    "version": server.version
                },
                "instructions": "Diagnose the NVIDIA CUDA stack of this machine: start with check; explain an error message with explain; choose a torch build with plan. Every tool is read-only: fixes are commands to show the user, never run by cudoctor."
            }),
        ),
        "ping" => reply(&id, json!({})),
        "tools/list" => reply(&id, tools_list()),
        "tools/call" => reply(&id, call_tool(&params, server.calls)),
        _ => error(&id, -32601, &format!("method not found: {method}")),
    })
}

/// Reads past the end of the current line without keeping it: memory stays one buffer however
/// long the line.
fn skip_line(input: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    }
}

/// Answers the messages of `input`, one a line, on `output` until `input` ends. A line longer
/// than [`MAX_LINE`] is answered "message too long" and passed over without being kept.
pub fn serve(
    mut input: impl BufRead,
    mut output: impl Write,
    server: &Server,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let n =
            std::io::Read::take(&mut input, MAX_LINE as u64 + 1).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        if line.len() > MAX_LINE {
            let answer = error(&Value::Null, -32700, "message too long");
            writeln!(output, "{answer}")?;
            // Skip the rest of the over-long line, a buffer at a time (it may never end).
            if line.last() != Some(&b'\n') {
                skip_line(&mut input)?;
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(text.trim()) {
            Ok(Value::Array(batch)) => {
                let answers: Vec<Value> = batch.iter().filter_map(|m| handle(m, server)).collect();
                (!answers.is_empty()).then_some(Value::Array(answers))
            }
            Ok(message) => handle(&message, server),
            Err(e) => Some(error(&Value::Null, -32700, &format!("parse error: {e}"))),
        };
        if let Some(a) = answer {
            writeln!(output, "{a}")?;
            output.flush()?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls answered with their command line, nothing run.
    struct Echo;
    impl Calls for Echo {
        fn call(&self, _tool: &str, line: &[String], text: Option<&str>) -> Value {
            tool_result(json!({"line": line, "text": text}))
        }
    }
    const TEST: Server = Server {
        version: "test",
        calls: &Echo,
    };

    #[test]
    fn tool_arguments_become_a_command_line() {
        let args = json!({"python": ["/opt/venv"], "gpu": ["sm_61"], "deep": true, "timeout": 5});
        let (line, stdin) = command_line("check", args.as_object().unwrap()).unwrap();
        assert_eq!(
            line,
            [
                "check",
                "--deep",
                "--gpu=sm_61",
                "--python=/opt/venv",
                "--timeout=5",
                "--format",
                "json"
            ]
        );
        assert!(stdin.is_none());
        // A value that starts with a dash stays the value of its flag.
        let args = json!({"gpu": ["--save=/tmp/x"], "snapshot": "-s.json"});
        let (line, _) = command_line("check", args.as_object().unwrap()).unwrap();
        assert_eq!(
            line,
            [
                "check",
                "--gpu=--save=/tmp/x",
                "--snapshot=-s.json",
                "--format",
                "json"
            ]
        );
        let (line, stdin) = command_line(
            "explain",
            json!({"text": "CUDA error"}).as_object().unwrap(),
        )
        .unwrap();
        assert_eq!(line, ["explain", "--format", "json"]);
        let (line, _) =
            command_line("explain", json!({"file": "/x.log"}).as_object().unwrap()).unwrap();
        assert_eq!(line, ["explain", "--format", "json", "--", "/x.log"]);
        assert_eq!(stdin.as_deref(), Some("CUDA error"));
        let (line, _) =
            command_line("kernels", json!({"paths": ["-x.so"]}).as_object().unwrap()).unwrap();
        assert_eq!(line, ["kernels", "--format", "json", "--", "-x.so"]);
        for bad in [
            json!({"nope": 1}),
            json!({"python": "/x"}),
            json!({"deep": "yes"}),
        ] {
            assert!(
                command_line("check", bad.as_object().unwrap()).is_err(),
                "{bad}"
            );
        }
        assert!(command_line("explain", &Map::new()).is_err());
        assert!(command_line("rm", &Map::new()).is_err());
    }

    #[test]
    fn every_tool_has_an_object_schema_and_is_read_only() {
        let list = tools_list();
        let tools = list["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["check", "explain", "plan", "kernels", "libs"]);
        for t in tools {
            assert_eq!(t["inputSchema"]["type"], "object");
            assert_eq!(t["annotations"]["readOnlyHint"], true);
        }
    }

    #[test]
    fn initialize_ping_notifications_and_unknown_methods() {
        let init = handle(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
            &TEST,
        )
        .unwrap();
        assert_eq!(init["result"]["protocolVersion"], PROTOCOL_VERSION);
        assert_eq!(init["id"], 1);
        assert!(handle(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            &TEST
        )
        .is_none());
        let ping = handle(
            &json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
            &TEST,
        )
        .unwrap();
        assert_eq!(ping["result"], json!({}));
        let unknown = handle(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "resources/list"}),
            &TEST,
        )
        .unwrap();
        assert_eq!(unknown["error"]["code"], -32601);
        let call = handle(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "explain", "arguments": {"text": "x"}}}),
            &TEST,
        )
        .unwrap();
        assert_eq!(
            call["result"]["structuredContent"],
            json!({"line": ["explain", "--format", "json"], "text": "x"})
        );
    }

    #[test]
    fn a_line_too_long_is_answered_and_passed_over() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(
            b"\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\nnot json\n\n",
        );
        let mut out = Vec::new();
        serve(&input[..], &mut out, &TEST).unwrap();
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(lines[0].contains("too long"));
        assert!(lines[1].contains("\"id\":7"));
        assert!(lines[2].contains("-32700"));
    }
}
