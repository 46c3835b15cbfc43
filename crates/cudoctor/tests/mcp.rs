//! `cudoctor mcp`: the Model Context Protocol server, spoken to over its standard input and
//! output — first as raw JSON-RPC lines (always), then by a real MCP client, the `mcp` package
//! from the package index (scripts/ci/mcp-env.sh; SKIPPED without it, a failure under
//! CUDOCTOR_REQUIRE_TOOLS=1): initialize, tools/list, and tools/call of every tool.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const H200X2: &str = "docs/device-runs/2026-11-30-h200x2/deep/baseline.json";
const BIN: &str = env!("CARGO_BIN_EXE_cudoctor");

/// Every tool with arguments that need nothing of this machine: a saved snapshot, a what-if
/// plan, and the binary itself as the ELF file kernels and libs read.
fn calls() -> Vec<(&'static str, Value)> {
    vec![
        ("check", json!({"snapshot": H200X2, "gpu": ["sm_61"]})),
        (
            "explain",
            json!({"text": "RuntimeError: CUDA error: no kernel image is available for execution on the device", "no_machine": true}),
        ),
        (
            "plan",
            json!({"no_detect": true, "gpu": ["H200"], "driver": "580.159.04", "python_version": "3.12"}),
        ),
        ("kernels", json!({"paths": [BIN], "gpu": ["sm_90"]})),
        ("libs", json!({"paths": [BIN]})),
    ]
}

/// What each tool's report must hold: its typed fields.
fn check_report(name: &str, report: &Value) {
    let build = &report["build"];
    assert_eq!(
        build["version"],
        env!("CARGO_PKG_VERSION"),
        "{name}: {report}"
    );
    match name {
        "check" => {
            assert!(report["findings"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f["code"] == "KRN001")));
            assert_eq!(report["snapshot"]["schema_version"], 3);
        }
        "explain" => assert!(report["category"].is_string(), "{report}"),
        "plan" => assert!(report.is_object(), "{report}"),
        "kernels" => assert!(report["libraries"].is_array(), "{report}"),
        "libs" => assert!(report["objects"].is_array(), "{report}"),
        _ => unreachable!(),
    }
}

#[test]
fn json_rpc_lines_in_answers_out() {
    let mut child = Command::new(BIN)
        .arg("mcp")
        .current_dir(cudoctor_testkit::repo_root())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cudoctor mcp");
    let mut messages = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ];
    for (i, (name, args)) in calls().into_iter().enumerate() {
        messages.push(json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {"name": name, "arguments": args}}));
    }
    messages.push(json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {"name": "check", "arguments": {"fix": true}}}));
    messages.push(json!({"jsonrpc": "2.0", "id": 21, "method": "nope"}));
    let mut input = String::new();
    for m in &messages {
        input.push_str(&m.to_string());
        input.push('\n');
    }
    input.push_str("{not json\n");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON message per line"))
        .collect();
    // One answer per request; none for the notification.
    assert_eq!(answers.len(), messages.len() - 1 + 1, "{answers:#?}");
    let by_id = |id: Value| answers.iter().find(|a| a["id"] == id).expect("an answer");
    assert_eq!(by_id(json!(0))["result"]["protocolVersion"], "2025-06-18");
    let tools = by_id(json!(1))["result"]["tools"].clone();
    assert_eq!(tools.as_array().unwrap().len(), 5);
    for (i, (name, _)) in calls().into_iter().enumerate() {
        let r = &by_id(json!(10 + i))["result"];
        assert_eq!(r["isError"], false, "{name}: {r}");
        check_report(name, &r["structuredContent"]);
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, r["structuredContent"]);
    }
    let refused = &by_id(json!(20))["result"];
    assert_eq!(refused["isError"], true);
    assert!(refused["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("fix"));
    assert_eq!(by_id(json!(21))["error"]["code"], -32601);
    assert!(answers.iter().any(|a| a["error"]["code"] == -32700));
}

fn mcp_python() -> Option<PathBuf> {
    let p = std::env::var_os("CUDOCTOR_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/cudoctor-ci/mcp-client/bin/python")
        });
    let ok = Command::new(&p)
        .args(["-c", "import mcp.client.stdio"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(p)
}

const CLIENT: &str = r#"
import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    binary, cwd, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    params = StdioServerParameters(command=binary, args=["mcp"], cwd=cwd,
                                   env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            # The protocol's own field names, whatever the package names its attributes.
            wire = lambda m: m.model_dump(by_alias=True, mode="json")
            init = wire(await session.initialize())
            listed = wire(await session.list_tools())
            out = {"protocol": init["protocolVersion"], "server": init["serverInfo"]["name"],
                   "tools": {t["name"]: t["inputSchema"] for t in listed["tools"]}, "calls": {}}
            for name, args in calls:
                result = wire(await session.call_tool(name, args))
                out["calls"][name] = {"isError": result.get("isError"),
                                      "structured": result.get("structuredContent")}
            print(json.dumps(out))

asyncio.run(main())
"#;

#[test]
fn a_real_mcp_client_initializes_lists_and_calls_every_tool() {
    let Some(python) = mcp_python() else {
        return cudoctor_testkit::skip_missing_tool(
            "a_real_mcp_client_initializes_lists_and_calls_every_tool",
            "the mcp package (scripts/ci/mcp-env.sh, or CUDOCTOR_MCP_PYTHON)",
        );
    };
    let calls: Vec<(String, Value)> = calls()
        .into_iter()
        .map(|(n, a)| (n.to_string(), a))
        .collect();
    let out = Command::new(&python)
        .args(["-c", CLIENT, BIN])
        .arg(cudoctor_testkit::repo_root())
        .arg(serde_json::to_string(&calls).unwrap())
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "the MCP client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).expect("the client's JSON");
    assert_eq!(got["protocol"], "2025-06-18");
    assert_eq!(got["server"], "cudoctor");
    for (name, _) in &calls {
        assert_eq!(
            got["tools"][name]["type"], "object",
            "{name}: {}",
            got["tools"]
        );
        let call = &got["calls"][name];
        assert_eq!(call["isError"], false, "{name}: {call}");
        check_report(name, &call["structured"]);
    }
}
