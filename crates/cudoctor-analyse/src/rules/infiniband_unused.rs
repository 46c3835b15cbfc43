use super::deep_support::truthy;
use super::network_support::NcclNameFilter;
use crate::{Confidence, Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "MGPU011",
    name: "infiniband-unused",
    layer: Layer::Multigpu,
    severity: Severity::Warning,
    summary: "InfiniBand/RoCE ports are hidden from NCCL (NCCL_IB_DISABLE, NCCL_IB_HCA) or none is active",
    docs: r#"## What it checks
The InfiniBand and RoCE devices in `/sys/class/infiniband` (each port's `state`, `rate`,
`link_layer`) against `NCCL_IB_DISABLE` (which switches NCCL's IB/RoCE transport off) and
`NCCL_IB_HCA` (which selects HCAs with NCCL's prefix / `^` / `=` syntax, `:port` allowed).
A warning when active ports are hidden; an info line when devices exist but no port is
active.

## Why it matters
Between nodes NCCL uses InfiniBand/RoCE when it can and TCP sockets otherwise; sockets carry a
fraction of a 200-400 Gb/s port, so all-reduce across nodes slows by an order of magnitude
without an error. `NCCL_IB_DISABLE=1` is a common leftover of a debugging session (it is the
usual "does it work without IB?" test).

## How to fix
Unset `NCCL_IB_DISABLE`, make `NCCL_IB_HCA` name the active devices (`ibv_devinfo` or
`ibstat`), or bring the ports up (`ibstat` shows the physical state; a `Polling` port has no
link).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(net) = ctx.snap.multigpu.as_ref().and_then(|m| m.network.as_ref()) else {
        return Vec::new();
    };
    if net.ib_devices.is_empty() {
        return Vec::new();
    }
    let ports: Vec<String> = net
        .ib_devices
        .iter()
        .flat_map(|d| {
            d.ports.iter().map(move |p| {
                format!(
                    "{}/{}: {}{}{}",
                    d.name,
                    p.port,
                    p.state,
                    if p.rate.is_empty() {
                        String::new()
                    } else {
                        format!(", {}", p.rate)
                    },
                    if p.link_layer.is_empty() {
                        String::new()
                    } else {
                        format!(", {}", p.link_layer)
                    }
                )
            })
        })
        .collect();
    let evidence = format!("/sys/class/infiniband: {}", ports.join("; "));
    let active: Vec<&str> = net
        .ib_devices
        .iter()
        .filter(|d| d.ports.iter().any(|p| p.active()))
        .map(|d| d.name.as_str())
        .collect();
    if active.is_empty() {
        return vec![Finding::new(&RULE, "InfiniBand/RoCE devices are present but no port is active")
            .severity(Severity::Info)
            .confidence(Confidence::Likely)
            .evidence(evidence)
            .cause("NCCL can only use active ports: without one, traffic between nodes goes over TCP sockets.")
            .shell("ibstat   # each port's state and physical state")];
    }
    let mut out = Vec::new();
    if let Some(v) = ctx.var("NCCL_IB_DISABLE").filter(|v| truthy(v)) {
        out.push(
            Finding::new(&RULE, format!("NCCL_IB_DISABLE={v} hides {} active InfiniBand/RoCE device(s) from NCCL", active.len()))
                .evidence(format!("NCCL_IB_DISABLE={v}"))
                .evidence(evidence.clone())
                .cause("NCCL will send traffic between nodes over TCP sockets instead of the InfiniBand/RoCE ports: all-reduce across nodes is many times slower, without an error.")
                .shell("unset NCCL_IB_DISABLE")
                .shell("grep -rn NCCL_IB_DISABLE ~/.bashrc ~/.profile /etc/nccl.conf ~/.nccl.conf 2>/dev/null   # where it is set"),
        );
    } else if let Some(v) = ctx.var("NCCL_IB_HCA") {
        let filter = NcclNameFilter::parse(v);
        if !active.iter().any(|d| filter.admits(d)) {
            out.push(
                Finding::new(&RULE, format!("NCCL_IB_HCA={v} selects none of the active InfiniBand/RoCE devices"))
                    .evidence(format!("NCCL_IB_HCA={v}"))
                    .evidence(format!("active: {}", active.join(", ")))
                    .evidence(evidence.clone())
                    .cause("NCCL uses only the HCAs the variable selects: with none of the active ones selected, it falls back to TCP sockets.")
                    .prose(format!("Set NCCL_IB_HCA to the active devices (e.g. {}), or unset it", active.join(","))),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{h200, run};
    use cudoctor_snapshot::{IbDevice, IbPort, MultiGpuFacts, NetworkFacts};

    fn ib(state: &str) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.multigpu = Some(MultiGpuFacts {
            network: Some(NetworkFacts {
                ib_devices: vec![IbDevice {
                    name: "mlx5_0".into(),
                    ports: vec![IbPort {
                        port: 1,
                        state: state.into(),
                        rate: "400 Gb/sec (4X NDR)".into(),
                        link_layer: "InfiniBand".into(),
                        ..Default::default()
                    }],
                }],
                ..Default::default()
            }),
            ..Default::default()
        });
        s
    }

    #[test]
    fn hidden_active_ports_and_ports_down() {
        let mut s = ib("4: ACTIVE");
        assert!(run(&RULE, &s).is_empty());
        s.env.insert("NCCL_IB_DISABLE".into(), "1".into());
        let f = run(&RULE, &s);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].evidence[1].contains("mlx5_0/1: 4: ACTIVE, 400 Gb/sec (4X NDR), InfiniBand"));
        s.env.insert("NCCL_IB_DISABLE".into(), "0".into());
        s.env.insert("NCCL_IB_HCA".into(), "=mlx5_1".into());
        assert_eq!(run(&RULE, &s).len(), 1);
        s.env.insert("NCCL_IB_HCA".into(), "mlx5".into());
        assert!(run(&RULE, &s).is_empty());
        let f = run(&RULE, &ib("1: DOWN"));
        assert_eq!(f[0].severity, Severity::Info);
    }
}
