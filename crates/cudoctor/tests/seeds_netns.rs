//! Multi-node readiness on real network namespaces of this machine: interfaces that exist, are
//! down or missing (MGPU010), and the `--deep` gloo rendezvous (MGPU014) with the real torch of
//! the stock environment, on namespace-local addresses only. Each test makes its own namespace
//! and deletes it when done, also on failure.
//!
//! Needs root and iproute2 (else SKIPPED, a failure under CUDOCTOR_REQUIRE_TOOLS=1); the
//! rendezvous needs a torch environment (CUDOCTOR_TORCH_PYTHON, else the stock real env under
//! the user cache; SKIPPED without one, a failure under CUDOCTOR_REQUIRE_REAL_ENVS=1).

use std::path::PathBuf;
use std::process::{Command, Output};

struct Netns(String);

impl Netns {
    /// A namespace with `lo` up and a veth pair: `veth0` 10.231.N.1/24 up, `veth1` 10.231.N.2/24
    /// down (so `veth0` is `lowerlayerdown`)... unless `both_up`.
    fn new(tag: &str, both_up: bool) -> Result<Netns, String> {
        if !nix_root() {
            return Err("not root".into());
        }
        if Command::new("ip").arg("-V").output().is_err() {
            return Err("iproute2's `ip` is not installed".into());
        }
        let name = format!("cudoctor-{tag}-{}", std::process::id());
        let ns = Netns(name.clone());
        run(&["ip", "netns", "add", &name])?;
        let n = std::process::id() % 200 + 20;
        let up1 = if both_up { "up" } else { "down" };
        for cmd in [
            "ip link set lo up".to_string(),
            "ip link add veth0 type veth peer name veth1".to_string(),
            format!("ip addr add 10.231.{n}.1/24 dev veth0"),
            format!("ip addr add 10.231.{n}.2/24 dev veth1"),
            "ip link set veth0 up".to_string(),
            format!("ip link set veth1 {up1}"),
        ] {
            let mut args = vec!["ip", "netns", "exec", &name];
            args.extend(cmd.split(' '));
            run(&args)?;
        }
        Ok(ns)
    }

    fn subnet(&self) -> String {
        format!("10.231.{}", std::process::id() % 200 + 20)
    }

    /// `cudoctor check --format json ARGS` inside the namespace with `vars` set.
    fn check(&self, vars: &[(&str, &str)], args: &[&str]) -> serde_json::Value {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.0, "env"]);
        for (k, v) in vars {
            cmd.arg(format!("{k}={v}"));
        }
        cmd.arg(env!("CARGO_BIN_EXE_cudoctor"))
            .args(["check", "--format", "json"])
            .args(args)
            .env("NO_COLOR", "1");
        let out = cmd.output().expect("ip netns exec");
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

fn nix_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn run(args: &[&str]) -> Result<Output, String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out)
}

fn codes<'a>(v: &'a serde_json::Value, code: &str) -> Vec<&'a serde_json::Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == code)
        .collect()
}

fn torch_python() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CUDOCTOR_TORCH_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var("HOME").ok()?;
    let p = PathBuf::from(home).join(".cache/cudoctor-realenv/stock-current/bin/python");
    p.exists().then_some(p)
}

#[test]
fn mgpu010_socket_interfaces_in_a_real_namespace() {
    let ns = match Netns::new("if", false) {
        Ok(ns) => ns,
        Err(e) => return cudoctor_testkit::skip_missing_tool("mgpu010 netns", &e),
    };
    let v = ns.check(&[("NCCL_SOCKET_IFNAME", "=veth1")], &[]);
    let f = codes(&v, "MGPU010");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0]["severity"], "error");
    assert!(
        f[0]["evidence"].to_string().contains("veth1 (down)"),
        "{}",
        f[0]["evidence"]
    );
    let net = &v["snapshot"]["multigpu"]["network"]["interfaces"];
    let names: Vec<&str> = net
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["lo", "veth0", "veth1"],
        "only the namespace's interfaces"
    );

    let v = ns.check(
        &[
            ("NCCL_SOCKET_IFNAME", "eth"),
            ("GLOO_SOCKET_IFNAME", "veth0,eth0"),
        ],
        &[],
    );
    let f = codes(&v, "MGPU010");
    assert_eq!(f.len(), 2, "{f:#?}");
    assert!(f[1]["evidence"]
        .to_string()
        .contains("no such interface: eth0"));
    assert!(f[1]["evidence"]
        .to_string()
        .contains("not up: veth0 (lowerlayerdown)"));

    drop(ns);
    let ns = Netns::new("up", true).expect("second namespace");
    let v = ns.check(
        &[
            ("NCCL_SOCKET_IFNAME", "veth"),
            ("GLOO_SOCKET_IFNAME", "veth0"),
        ],
        &[],
    );
    assert!(
        codes(&v, "MGPU010").is_empty(),
        "{:#?}",
        codes(&v, "MGPU010")
    );
}

#[test]
fn mgpu014_gloo_rendezvous_in_a_real_namespace() {
    let Some(python) = torch_python() else {
        return cudoctor_testkit::skip_missing_input(
            "no torch environment for the mgpu014 rendezvous (CUDOCTOR_TORCH_PYTHON or the stock real env)",
            "CUDOCTOR_REQUIRE_REAL_ENVS",
        );
    };
    let ns = match Netns::new("rdv", true) {
        Ok(ns) => ns,
        Err(e) => return cudoctor_testkit::skip_missing_tool("mgpu014 netns", &e),
    };
    let py = python.to_string_lossy().to_string();
    // The torch probe's GPU stages are beside the point here (and this machine has no GPU).
    let deep = [
        "--deep",
        "--deep-timeout",
        "90",
        "--python",
        py.as_str(),
        "--deep-skip",
        "sdpa",
        "--deep-skip",
        "extensions",
        "--deep-skip",
        "compile",
        "--deep-skip",
        "all-reduce",
    ];
    let master = format!("{}.1", ns.subnet());

    // This node is the master: two gloo ranks meet on its address.
    let v = ns.check(&[("MASTER_ADDR", &master), ("MASTER_PORT", "29500")], &deep);
    let r = &v["snapshot"]["multigpu"]["rendezvous"];
    assert_eq!(r["local"], true, "{r}");
    assert_eq!(r["gloo_ok"], true, "{r}");
    assert!(codes(&v, "MGPU014").is_empty());

    // Gloo told to use an interface that is not there.
    let v = ns.check(
        &[
            ("MASTER_ADDR", &master),
            ("MASTER_PORT", "29500"),
            ("GLOO_SOCKET_IFNAME", "eth9"),
        ],
        &deep,
    );
    let f = codes(&v, "MGPU014");
    assert_eq!(f.len(), 1, "{:#}", v["snapshot"]["multigpu"]["rendezvous"]);
    assert!(f[0]["evidence"]
        .to_string()
        .contains("Unable to find address for: eth9"));
    assert!(
        !codes(&v, "MGPU010").is_empty(),
        "the interface rule sees it too"
    );

    // A master address on the namespace's subnet that nobody holds.
    let absent = format!("{}.9", ns.subnet());
    let v = ns.check(&[("MASTER_ADDR", &absent), ("MASTER_PORT", "29500")], &deep);
    let f = codes(&v, "MGPU014");
    assert_eq!(f.len(), 1, "{:#}", v["snapshot"]["multigpu"]["rendezvous"]);
    assert_eq!(f[0]["severity"], "error");
    assert!(
        f[0]["title"]
            .as_str()
            .unwrap()
            .contains("cannot be reached"),
        "{}",
        f[0]["title"]
    );
}
