//! GPU009 end to end: fake machines under `--root` whose /dev holds more or fewer
//! `/dev/nvidiaN` nodes than the GPUs the driver lists (/proc/driver/nvidia/gpus there), and the
//! real H200 snapshots of the device runs, which must stay silent.

mod support;

use support::{findings, FakeMachine, Gpu};

fn two_h200() -> FakeMachine {
    FakeMachine::with_driver("580.159.04", "13.0", &[Gpu::h200(), Gpu::h200()])
}

fn dev(m: &FakeMachine, nodes: &[&str]) {
    // Plain files stand for the nodes: only their names are read under --root.
    for n in nodes {
        m.file(&format!("/dev/{n}"), "");
    }
}

#[test]
fn a_node_per_gpu_is_fine() {
    let m = two_h200();
    dev(
        &m,
        &[
            "nvidia0",
            "nvidia1",
            "nvidiactl",
            "nvidia-uvm",
            "nvidia-uvm-tools",
        ],
    );
    m.file("/dev/nvidia-caps/nvidia-cap1", "");
    let (v, _) = m.json();
    assert!(findings(&v, "GPU009").is_empty(), "{}", v["findings"]);
}

#[test]
fn a_gpu_without_its_node() {
    let m = two_h200();
    dev(&m, &["nvidia0", "nvidiactl", "nvidia-uvm"]);
    let (v, code) = m.json();
    let f = findings(&v, "GPU009");
    assert_eq!(f.len(), 1, "{}", v["findings"]);
    assert_eq!(f[0]["severity"], "error");
    assert_eq!(
        f[0]["title"],
        "1 GPU device node in /dev for the 2 GPUs the driver lists"
    );
    let evidence = f[0]["evidence"].to_string();
    assert!(
        evidence.contains("DCGM_FR_DEVICE_COUNT_MISMATCH"),
        "{evidence}"
    );
    assert!(
        evidence.contains("/proc/driver/nvidia/gpus: 0 NVIDIA H200"),
        "{evidence}"
    );
    assert!(
        f[0]["fix"]
            .to_string()
            .contains("sudo nvidia-modprobe -c 1"),
        "{}",
        f[0]["fix"]
    );
    assert_eq!(code, 1);
}

#[test]
fn a_node_left_by_a_gpu_that_fell_off_the_bus() {
    let m = FakeMachine::with_driver("580.159.04", "13.0", &[Gpu::h200()]);
    dev(&m, &["nvidia0", "nvidia1", "nvidiactl"]);
    let (v, _) = m.json();
    let f = findings(&v, "GPU009");
    assert_eq!(f.len(), 1, "{}", v["findings"]);
    assert_eq!(f[0]["severity"], "warning");
    assert!(f[0]["fix"].to_string().contains("lspci -d 10de:"));
    // With the kernel log's Xid 79 for the lost GPU: an error naming it.
    m.file(
        "/dev/kmsg",
        "3,1,219471050,-;NVRM: Xid (PCI:0000:00:07): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n",
    );
    let (v, _) = m.json();
    let f = findings(&v, "GPU009");
    assert_eq!(f[0]["severity"], "error", "{}", f[0]);
    assert!(f[0]["evidence"].to_string().contains("Xid 79"));
    // The lost GPU's Xid is the cause: its action (reset, drain) comes first.
    assert_eq!(f[0]["caused_by"], "GPU004", "{}", f[0]);
}

#[test]
fn a_container_s_nodes_are_the_container_doctor_s() {
    let mut m = two_h200();
    m.file("/.dockerenv", "");
    m.var("NVIDIA_VISIBLE_DEVICES", "0");
    dev(&m, &["nvidia0", "nvidiactl"]);
    m.file("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "");
    let (v, _) = m.json();
    assert!(findings(&v, "GPU009").is_empty(), "{}", v["findings"]);
}

/// The healthy H200s of the device runs: their /dev and NVML agree.
#[test]
fn the_real_h200_runs_have_no_mismatch() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/device-runs/");
    let m = FakeMachine::new();
    for rel in [
        "2026-11-30-h200x2/check.json",
        "2026-12-04-h200x1-evening/check.json",
    ] {
        let path = format!("{dir}{rel}");
        let r = m.run(&["check", "--snapshot", &path, "--format", "json"]);
        assert!(r.code == 0 || r.code == 1, "{rel}: {} {}", r.code, r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert!(
            v["snapshot"]["platform"]["device_nodes"]
                .to_string()
                .contains("/dev/nvidia0"),
            "{rel}"
        );
        assert!(
            findings(&v, "GPU009").is_empty(),
            "{rel}: {}",
            v["findings"]
        );
    }
}
