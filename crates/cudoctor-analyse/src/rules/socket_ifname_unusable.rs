use cudoctor_snapshot::NetworkFacts;

use super::network_support::{nccl_candidates, NcclNameFilter};
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "MGPU010",
    name: "socket-ifname-unusable",
    layer: Layer::Multigpu,
    severity: Severity::Error,
    summary:
        "NCCL_SOCKET_IFNAME or GLOO_SOCKET_IFNAME names interfaces that do not exist or are down",
    docs: r#"## What it checks
The interfaces `NCCL_SOCKET_IFNAME` and `GLOO_SOCKET_IFNAME` select, against `/sys/class/net`
(each interface's `operstate` and `flags`). NCCL's syntax: a comma list of name prefixes (`eth`
matches `eth0`, `eth1`), `^` in front excludes the listed prefixes, `=` in front (after `^`) makes
the entries exact names. Gloo's: a comma list of exact interface names, every one of which must
exist.

## Why it matters
A job script copied from another cluster names `eth0` where this node has `ens5`, or an
interface that is down: NCCL finds no socket interface ("no socket interface found" /
`ncclSystemError`) or waits on a dead link until the job's timeout; gloo fails at start with
"Unable to find address for: eth0". Multi-node runs hang or die at initialisation, while
single-node runs work.

## How to fix
Name an interface that exists and is up on every node (`ip -br link` lists them), or unset the
variable and let NCCL pick (it skips `lo` and `docker*`).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(net) = ctx.snap.multigpu.as_ref().and_then(|m| m.network.as_ref()) else {
        return Vec::new();
    };
    if net.interfaces.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Some(v) = ctx.var("NCCL_SOCKET_IFNAME") {
        out.extend(nccl(net, v));
    }
    if let Some(v) = ctx.var("GLOO_SOCKET_IFNAME") {
        out.extend(gloo(net, v));
    }
    out
}

fn listing(net: &NetworkFacts) -> String {
    let all: Vec<String> = net
        .interfaces
        .iter()
        .map(|i| format!("{} ({})", i.name, i.operstate))
        .collect();
    format!("interfaces here (/sys/class/net): {}", all.join(", "))
}

fn nccl(net: &NetworkFacts, value: &str) -> Option<Finding> {
    let filter = NcclNameFilter::parse(value);
    let candidates = nccl_candidates(net, &filter);
    // Loopback reaches no other node: it counts only when the list names it.
    let names_lo = !filter.exclude && filter.entries.iter().any(|e| "lo".starts_with(e.as_str()));
    let usable: Vec<&str> = candidates
        .iter()
        .filter(|i| i.usable() && (i.name != "lo" || names_lo))
        .map(|i| i.name.as_str())
        .collect();
    let down: Vec<String> = candidates
        .iter()
        .filter(|i| !i.usable() && i.name != "lo")
        .map(|i| format!("{} ({})", i.name, i.operstate))
        .collect();
    let names: Vec<&str> = net.interfaces.iter().map(|i| i.name.as_str()).collect();
    let unmatched = filter.unmatched(&names);
    let fix_up = |f: Finding| {
        f.shell("ip -br link   # the interfaces, their state and addresses")
            .prose("Set NCCL_SOCKET_IFNAME to an interface that is up on every node (a prefix such as `ens` matches ens5 and ens6), or unset it so NCCL picks one itself")
    };
    if usable.is_empty() {
        let mut f = Finding::new(
            &RULE,
            format!("NCCL_SOCKET_IFNAME={value} selects no usable network interface"),
        )
        .evidence(format!("NCCL_SOCKET_IFNAME={value}"))
        .evidence(listing(net));
        if !down.is_empty() {
            f = f.evidence(format!("selected but not up: {}", down.join(", ")));
        }
        if !unmatched.is_empty() {
            f = f.evidence(format!(
                "entries that match no interface: {}",
                unmatched.join(", ")
            ));
        }
        f = f.cause("NCCL's socket transport (bootstrap, and data between nodes without InfiniBand) finds no interface to use: initialisation fails or hangs until the job's timeout.");
        return Some(fix_up(f));
    }
    if !down.is_empty() {
        let f = Finding::new(
            &RULE,
            format!("NCCL_SOCKET_IFNAME={value} also selects interfaces that are down"),
        )
        .severity(Severity::Warning)
        .evidence(format!("selected and up: {}", usable.join(", ")))
        .evidence(format!("selected but not up: {}", down.join(", ")))
        .evidence(listing(net))
        .cause("NCCL may pick a selected interface whose link is down and wait on it; only the ones that are up carry traffic.");
        return Some(fix_up(f));
    }
    None
}

fn gloo(net: &NetworkFacts, value: &str) -> Option<Finding> {
    let mut missing = Vec::new();
    let mut down = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match net.interface(name) {
            None => missing.push(name.to_string()),
            Some(i) if !i.usable() => down.push(format!("{name} ({})", i.operstate)),
            Some(_) => {}
        }
    }
    if missing.is_empty() && down.is_empty() {
        return None;
    }
    let mut f = Finding::new(
        &RULE,
        format!("GLOO_SOCKET_IFNAME={value} names interfaces gloo cannot use"),
    )
    .evidence(format!("GLOO_SOCKET_IFNAME={value}"));
    if !missing.is_empty() {
        f = f.evidence(format!("no such interface: {}", missing.join(", ")));
    }
    if !down.is_empty() {
        f = f.evidence(format!("not up: {}", down.join(", ")));
    }
    Some(
        f.evidence(listing(net))
            .cause("Gloo (torch.distributed's CPU backend, also used for NCCL's store-side setup by many launchers) opens a device on every interface named, exactly: a missing one fails with \"Unable to find address for\", a down one cannot carry the rendezvous.")
            .shell("ip -br link   # the interfaces, their state and addresses")
            .prose("Set GLOO_SOCKET_IFNAME to exact names of interfaces that are up on every node, or unset it"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{h200, run};
    use cudoctor_snapshot::{MultiGpuFacts, NetInterface};

    fn with_net(ifs: &[(&str, &str)]) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.multigpu = Some(MultiGpuFacts {
            network: Some(NetworkFacts {
                interfaces: ifs
                    .iter()
                    .map(|(n, st)| NetInterface {
                        name: n.to_string(),
                        operstate: st.to_string(),
                        admin_up: None,
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        });
        s
    }

    #[test]
    fn nccl_and_gloo_interface_names() {
        let mut s = with_net(&[("lo", "unknown"), ("ens5", "up"), ("ib0", "down")]);
        assert!(run(&RULE, &s).is_empty(), "nothing set");
        s.env.insert("NCCL_SOCKET_IFNAME".into(), "ens".into());
        assert!(run(&RULE, &s).is_empty());
        s.env.insert("NCCL_SOCKET_IFNAME".into(), "eth0".into());
        let f = run(&RULE, &s);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e == "entries that match no interface: eth0"));
        s.env.insert("NCCL_SOCKET_IFNAME".into(), "ens,ib".into());
        assert_eq!(run(&RULE, &s)[0].severity, Severity::Warning);
        s.env.insert("NCCL_SOCKET_IFNAME".into(), "^ens,ib".into());
        assert!(
            run(&RULE, &s)[0].title.contains("no usable"),
            "only lo is left, which reaches no other node"
        );
        s.env.remove("NCCL_SOCKET_IFNAME");
        s.env
            .insert("GLOO_SOCKET_IFNAME".into(), "ens5,eth0".into());
        let f = run(&RULE, &s);
        assert!(f[0].evidence.iter().any(|e| e == "no such interface: eth0"));
        s.env.insert("GLOO_SOCKET_IFNAME".into(), "ens5".into());
        assert!(run(&RULE, &s).is_empty());
    }
}
