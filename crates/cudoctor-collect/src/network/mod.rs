//! What a multi-node job's NCCL and gloo will find: network interfaces (`/sys/class/net`),
//! InfiniBand/RoCE ports (`/sys/class/infiniband`), GPUDirect RDMA's module (`/proc/modules`),
//! and with `--deep` a CPU-side gloo rendezvous against MASTER_ADDR/MASTER_PORT.

use std::process::Command;
use std::time::Duration;

use cudoctor_snapshot::{
    IbDevice, IbPort, NetInterface, NetworkFacts, ProbeEnding, PythonEnv, RendezvousProbe,
};

use crate::host::{run_with_timeout, CommandOutcome, Host};

const RENDEZVOUS_SCRIPT: &str = include_str!("rendezvous.py");

/// Linux's IFF_UP bit of `/sys/class/net/<if>/flags`.
const IFF_UP: u32 = 0x1;

pub fn collect(host: &Host) -> NetworkFacts {
    let interfaces = host
        .list_dir("/sys/class/net")
        .into_iter()
        .filter(|n| !n.starts_with('.') && n != "bonding_masters")
        .map(|name| {
            let dir = format!("/sys/class/net/{name}");
            let operstate = host
                .read_text(&format!("{dir}/operstate"))
                .map(|t| t.trim().to_string())
                .unwrap_or_else(|_| "unknown".into());
            let admin_up = host.read_text(&format!("{dir}/flags")).ok().and_then(|t| {
                u32::from_str_radix(t.trim().trim_start_matches("0x"), 16)
                    .ok()
                    .map(|f| f & IFF_UP != 0)
            });
            NetInterface {
                name,
                operstate,
                admin_up,
            }
        })
        .collect();
    let ib_devices = host
        .list_dir("/sys/class/infiniband")
        .into_iter()
        .map(|name| {
            let ports_dir = format!("/sys/class/infiniband/{name}/ports");
            let mut ports: Vec<IbPort> = host
                .list_dir(&ports_dir)
                .into_iter()
                .filter_map(|p| {
                    let port: u32 = p.parse().ok()?;
                    let read = |f: &str| {
                        host.read_text(&format!("{ports_dir}/{p}/{f}"))
                            .map(|t| t.trim().to_string())
                            .unwrap_or_default()
                    };
                    Some(IbPort {
                        port,
                        state: read("state"),
                        phys_state: read("phys_state"),
                        rate: read("rate"),
                        link_layer: read("link_layer"),
                    })
                })
                .collect();
            ports.sort_by_key(|p| p.port);
            IbDevice { name, ports }
        })
        .collect();
    let (peermem_loaded, peermem_module) = match host.read_text("/proc/modules") {
        Ok(text) => {
            let m = text
                .lines()
                .filter_map(|l| l.split_whitespace().next())
                .find(|m| *m == "nvidia_peermem" || *m == "nv_peer_mem")
                .map(str::to_string);
            (Some(m.is_some()), m)
        }
        Err(_) => (None, None),
    };
    NetworkFacts {
        interfaces,
        ib_devices,
        peermem_loaded,
        peermem_module,
    }
}

/// The gloo rendezvous check (`--deep`), when MASTER_ADDR and MASTER_PORT are set: run in the
/// first environment with torch, on the live machine only, killed at `timeout`.
pub fn rendezvous(host: &Host, envs: &[PythonEnv], timeout: Duration) -> Option<RendezvousProbe> {
    if !host.runs_programs() {
        return None;
    }
    let addr = host.var("MASTER_ADDR")?.to_string();
    let port = host.var("MASTER_PORT")?.to_string();
    let interpreter = envs
        .iter()
        .filter(|e| e.torch.is_some())
        .find_map(|e| e.interpreter.clone())?;
    let mut probe = RendezvousProbe {
        interpreter: interpreter.clone(),
        master_addr: addr,
        master_port: port,
        gloo_socket_ifname: host.var("GLOO_SOCKET_IFNAME").map(str::to_string),
        ..Default::default()
    };
    // The script's own budget stays inside the kill deadline (torch's import takes seconds).
    let budget = (timeout.as_secs_f64() * 0.6).max(4.0);
    let mut cmd = Command::new(host.fs_path(&interpreter));
    cmd.args(["-I", "-c", RENDEZVOUS_SCRIPT, &format!("{budget:.1}")]);
    match run_with_timeout(cmd, timeout) {
        CommandOutcome::Exited {
            status: Some(0),
            stdout,
            ..
        } => match stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        {
            Some(v) => {
                probe.resolved = v["resolved"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                probe.local = v["local"].as_bool().unwrap_or(false);
                probe.tcp = serde_json::from_value(v["tcp"].clone()).ok();
                probe.tcp_error = v["tcp_error"].as_str().map(str::to_string);
                probe.gloo_ok = v["gloo_ok"].as_bool();
                probe.error = v["error"].as_str().map(str::to_string);
                probe.elapsed_s = v["elapsed_s"].as_f64();
                probe.ending = ProbeEnding::Reported;
            }
            None => probe.ending = ProbeEnding::BadOutput,
        },
        CommandOutcome::Exited { status, stderr, .. } => {
            probe.ending = ProbeEnding::Crashed {
                signal: None,
                exit_code: status,
            };
            probe.error = stderr.lines().last().map(str::to_string);
        }
        CommandOutcome::NotStarted(e) => probe.ending = ProbeEnding::NotStarted { error: e },
        CommandOutcome::NotRunUnderRoot => probe.ending = ProbeEnding::NotRunUnderRoot,
        CommandOutcome::TimedOut(d) => {
            probe.ending = ProbeEnding::TimedOut {
                after_s: d.as_secs_f64(),
            };
        }
    }
    Some(probe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn reads_interfaces_ib_ports_and_peermem_from_sysfs() {
        let dir = tempfile::tempdir().unwrap();
        let w = |p: &str, t: &str| {
            let f = dir.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, t).unwrap();
        };
        w("sys/class/net/lo/operstate", "unknown\n");
        w("sys/class/net/lo/flags", "0x9\n");
        w("sys/class/net/eth0/operstate", "up\n");
        w("sys/class/net/ib0/operstate", "down\n");
        w("sys/class/net/ib0/flags", "0x1002\n");
        w("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
        w(
            "sys/class/infiniband/mlx5_0/ports/1/rate",
            "400 Gb/sec (4X NDR)\n",
        );
        w(
            "sys/class/infiniband/mlx5_0/ports/1/link_layer",
            "InfiniBand\n",
        );
        w(
            "proc/modules",
            "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\nnvidia 104857600 2 nvidia_peermem, Live 0x0 (POE)\n",
        );
        let host = Host::rooted(dir.path().into(), BTreeMap::new(), Duration::from_secs(2));
        let n = collect(&host);
        let names: Vec<_> = n.interfaces.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["eth0", "ib0", "lo"]);
        assert!(n.interface("lo").unwrap().usable());
        assert!(!n.interface("ib0").unwrap().usable());
        assert_eq!(n.ib_devices[0].ports[0].rate, "400 Gb/sec (4X NDR)");
        assert!(n.ib_devices[0].ports[0].active());
        assert_eq!(n.peermem_loaded, Some(true));
    }

    #[test]
    fn reads_this_machines_interfaces() {
        let n = collect(&Host::real(Duration::from_secs(2)));
        let lo = n.interface("lo").expect("every Linux machine has lo");
        assert!(lo.usable(), "{lo:?}");
    }
}
