use cudoctor_snapshot::{ProbeEnding, TcpConnect};

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "MGPU014",
    name: "rendezvous-fails",
    layer: Layer::Multigpu,
    severity: Severity::Error,
    summary:
        "With --deep: MASTER_ADDR/MASTER_PORT cannot be reached, or a gloo group cannot form on it",
    docs: r#"## What it checks
With `--deep` and MASTER_ADDR/MASTER_PORT set, a CPU-side check in the first environment with
torch (a child process, time-bounded, no GPU used): MASTER_ADDR is resolved; a TCP connection to
MASTER_ADDR:MASTER_PORT is tried; when MASTER_ADDR is an address of this node, two ranks form a
gloo group on it (an ephemeral store port, so the job's own port is never taken; the devices as
`GLOO_SOCKET_IFNAME` selects them) and run one all-reduce.

## Why it matters
torchrun/`init_process_group` first meet at MASTER_ADDR:MASTER_PORT. A name that does not
resolve, a firewall that drops the port, or an interface gloo cannot use makes every rank wait
until the rendezvous timeout (minutes, by default 30 for NCCL) with no useful message.

## How to fix
Use an address every node reaches (`getent hosts $MASTER_ADDR`, `nc -vz $MASTER_ADDR
$MASTER_PORT` from a worker once the master runs), open the port in the firewall, and set
GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME to the interface that carries that address.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(r) = ctx
        .snap
        .multigpu
        .as_ref()
        .and_then(|m| m.rendezvous.as_ref())
    else {
        return Vec::new();
    };
    let target = format!("{}:{}", r.master_addr, r.master_port);
    let base = |title: String| {
        let mut f = Finding::new(&RULE, title)
            .evidence(format!(
                "MASTER_ADDR={} MASTER_PORT={}",
                r.master_addr, r.master_port
            ))
            .evidence(format!(
                "probe: {} ({}{})",
                r.interpreter,
                r.ending.describe(),
                r.elapsed_s
                    .map(|s| format!(", {s:.1} s"))
                    .unwrap_or_default()
            ));
        if !r.resolved.is_empty() {
            f = f.evidence(format!(
                "resolves to {}{}",
                r.resolved.join(", "),
                if r.local {
                    " (an address of this node)"
                } else {
                    ""
                }
            ));
        }
        if let Some(t) = r.tcp {
            let why = r
                .tcp_error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            f = f.evidence(format!("TCP connect to {target}: {}{why}", t.name()));
        }
        if let Some(i) = &r.gloo_socket_ifname {
            f = f.evidence(format!("GLOO_SOCKET_IFNAME={i}"));
        }
        if let Some(e) = &r.error {
            f = f.evidence(format!("error: {e}"));
        }
        f
    };
    if matches!(r.ending, ProbeEnding::TimedOut { .. }) {
        return vec![base(format!("the rendezvous check against {target} did not finish"))
            .severity(Severity::Warning)
            .cause("The check was killed at its deadline: name resolution or a connection hung, which a real rendezvous would too.")
            .shell(format!("getent hosts {}", cudoctor_plan::quote(&r.master_addr)))];
    }
    if r.ending != ProbeEnding::Reported {
        return Vec::new();
    }
    if r.resolved.is_empty() {
        return vec![base(format!("MASTER_ADDR={} does not resolve", r.master_addr))
            .cause("Every rank looks MASTER_ADDR up first; a name that does not resolve here stops this node's ranks before they start.")
            .shell(format!("getent hosts {}", cudoctor_plan::quote(&r.master_addr)))
            .prose("Use the master's IP address, or a name that resolves on every node (DNS or /etc/hosts)")];
    }
    if r.local {
        if r.gloo_ok == Some(false) {
            return vec![base(format!("a gloo group cannot form on {} (this node's master address)", r.master_addr))
                .cause("Two ranks on this node could not form a gloo group over the master's address: the interface gloo selects (GLOO_SOCKET_IFNAME, or the one the hostname resolves to) cannot carry it.")
                .shell("ip -br addr   # which interface has the master's address")
                .prose("Set GLOO_SOCKET_IFNAME (and NCCL_SOCKET_IFNAME) to the interface that holds MASTER_ADDR, or unset a wrong value")];
        }
        return Vec::new();
    }
    match r.tcp {
        Some(TcpConnect::Connected) | None => Vec::new(),
        Some(TcpConnect::Refused) => vec![base(format!("nothing accepts connections at {target} yet"))
            .severity(Severity::Warning)
            .cause("The master address is reachable but no store listens on MASTER_PORT: either the master rank has not started (normal before launch), or a firewall rejects the port.")
            .shell(format!("nc -vz {} {}   # again once the master rank runs", cudoctor_plan::quote(&r.master_addr), cudoctor_plan::quote(&r.master_port)))],
        Some(other @ (TcpConnect::TimedOut | TcpConnect::Failed)) => vec![base(format!(
            "{target} cannot be reached from this node ({})",
            r.tcp_error.as_deref().unwrap_or(other.name())
        ))
            .cause("Packets to the master's port are dropped or have no route: a firewall, a wrong address, or an interface on another network. The rendezvous will hang until its timeout.")
            .shell(format!("ip route get {}   # which interface and gateway would be used", cudoctor_plan::quote(r.resolved.first().map(String::as_str).unwrap_or(&r.master_addr))))
            .prose("Open MASTER_PORT on the master's firewall, or use an address on the network the nodes share")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{h200, run};
    use cudoctor_snapshot::{MultiGpuFacts, RendezvousProbe};

    fn with(r: RendezvousProbe) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.multigpu = Some(MultiGpuFacts {
            rendezvous: Some(r),
            ..Default::default()
        });
        s
    }

    fn probe() -> RendezvousProbe {
        RendezvousProbe {
            interpreter: "/opt/venv/bin/python".into(),
            master_addr: "10.0.0.1".into(),
            master_port: "29500".into(),
            resolved: vec!["10.0.0.1".into()],
            ending: ProbeEnding::Reported,
            ..Default::default()
        }
    }

    #[test]
    fn verdicts() {
        let mut p = probe();
        p.tcp = Some(TcpConnect::Connected);
        assert!(run(&RULE, &with(p.clone())).is_empty());
        p.tcp = Some(TcpConnect::Refused);
        assert_eq!(run(&RULE, &with(p.clone()))[0].severity, Severity::Warning);
        p.tcp = Some(TcpConnect::TimedOut);
        assert_eq!(run(&RULE, &with(p.clone()))[0].severity, Severity::Error);
        p.resolved.clear();
        assert!(run(&RULE, &with(p.clone()))[0]
            .title
            .contains("does not resolve"));
        let mut p = probe();
        p.local = true;
        p.tcp = Some(TcpConnect::Refused);
        p.gloo_ok = Some(true);
        assert!(
            run(&RULE, &with(p.clone())).is_empty(),
            "a local master before launch"
        );
        p.gloo_ok = Some(false);
        p.error = Some("RuntimeError: Unable to find address for: eth9".into());
        let f = run(&RULE, &with(p));
        assert!(f[0].evidence.iter().any(|e| e.contains("eth9")));
    }

    #[test]
    fn a_failed_connection_is_titled_with_the_systems_words() {
        let mut p = probe();
        p.tcp = Some(TcpConnect::Failed);
        p.tcp_error = Some("[Errno 113] No route to host".into());
        let f = run(&RULE, &with(p));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].title.ends_with("([Errno 113] No route to host)"),
            "{}",
            f[0].title
        );
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e == "TCP connect to 10.0.0.1:29500: failed ([Errno 113] No route to host)"));
    }

    #[test]
    fn a_check_killed_at_its_deadline_is_a_warning_and_other_endings_say_nothing() {
        let mut p = probe();
        p.ending = ProbeEnding::TimedOut { after_s: 12.0 };
        let f = run(&RULE, &with(p.clone()));
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("timed out after 12 s")));
        for ending in [
            ProbeEnding::NotRunUnderRoot,
            ProbeEnding::BadOutput,
            ProbeEnding::NotStarted {
                error: "No such file or directory".into(),
            },
        ] {
            p.ending = ending;
            assert!(run(&RULE, &with(p.clone())).is_empty());
        }
    }
}
