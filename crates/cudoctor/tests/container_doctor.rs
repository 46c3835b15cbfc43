//! The container doctor end to end: fake machines under `--root` laid out as the inside of a
//! container (markers, device nodes, cgroup v1 device rules, CDI specs, the driver files the
//! runtime mounts), and a real one where a user namespace allows it (`unshare -Urm`: an empty
//! /dev as a container without `--gpus` has). The device cgroup's denial is reproduced for real,
//! as root, by scripts/ci/cgroup-test.sh (a cgroup v2 device program, cgroup v1 rules).

mod support;

use support::{findings, FakeMachine, Gpu};

/// The inside of a Docker container on an H200 host: the kernel module's /proc files are the
/// host's (a container sees them), the CUDA image's variables are set.
fn container() -> FakeMachine {
    let mut m = FakeMachine::with_driver("580.159.04", "13.0", &[Gpu::h200()]);
    m.file("/.dockerenv", "");
    m.var("NVIDIA_VISIBLE_DEVICES", "all");
    m
}

fn nodes(m: &FakeMachine) {
    // Plain files stand for the nodes: only their names are read under --root.
    m.file("/dev/nvidia0", "")
        .file("/dev/nvidiactl", "")
        .file("/dev/nvidia-uvm", "");
}

fn libcuda(m: &FakeMachine) {
    m.file("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "");
}

fn fixes(f: &serde_json::Value) -> String {
    f["fix"].to_string()
}

#[test]
fn started_without_gpus_has_no_device_nodes() {
    let m = container();
    let (v, _) = m.json();
    let f = findings(&v, "PLT001");
    assert_eq!(f.len(), 1, "{v:#}");
    assert!(
        f[0]["title"].as_str().unwrap().contains("no /dev/nvidia*"),
        "{}",
        f[0]["title"]
    );
    assert!(fixes(&f[0]).contains("--gpus all"), "{}", f[0]["fix"]);
    assert!(findings(&v, "PLT004").is_empty());
}

#[test]
fn legacy_nodes_by_hand_without_libraries() {
    let m = container();
    nodes(&m);
    m.file(
        "/sys/fs/cgroup/devices/devices.list",
        "c 195:* rwm\nc 195:255 rwm\nc 509:* rwm\n",
    );
    let (v, _) = m.json();
    let f = findings(&v, "PLT001");
    assert_eq!(f.len(), 1, "{v:#}");
    assert!(f[0]["cause"].as_str().unwrap().contains("by hand"));
    assert!(fixes(&f[0]).contains("nvidia-ctk runtime configure"));
    assert!(
        findings(&v, "PLT004").is_empty(),
        "the rules allow the NVIDIA major"
    );
}

#[test]
fn cdi_spec_without_the_driver_s_libraries() {
    let mut m = container();
    nodes(&m);
    m.var("NVIDIA_VISIBLE_DEVICES", "nvidia.com/gpu=all");
    m.file(
        "/etc/cdi/nvidia.yaml",
        "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n",
    );
    let (v, _) = m.json();
    let f = findings(&v, "PLT001");
    assert_eq!(f.len(), 1, "{v:#}");
    assert!(f[0]["cause"].as_str().unwrap().contains("CDI"));
    assert!(fixes(&f[0]).contains("nvidia-ctk cdi generate"));
    assert!(f[0]["evidence"]
        .to_string()
        .contains("/etc/cdi/nvidia.yaml"));
}

#[test]
fn cgroup_v1_rules_deny_the_nodes_the_container_has() {
    let m = container();
    nodes(&m);
    libcuda(&m);
    // Docker's default device list: no rule for the NVIDIA major.
    m.file(
        "/sys/fs/cgroup/devices/devices.list",
        "c 1:3 rwm\nc 1:5 rwm\nc 1:7 rwm\nc 136:* rwm\nc 5:2 rwm\nc 10:200 rwm\n",
    );
    let (v, _) = m.json();
    let f = findings(&v, "PLT004");
    assert_eq!(f.len(), 1, "{v:#}");
    assert!(f[0]["evidence"]
        .to_string()
        .contains("no rule for c 195:255"));
    assert!(findings(&v, "PLT001").is_empty());
}

#[test]
fn a_pod_without_a_gpu_request() {
    let mut m = FakeMachine::with_driver("580.159.04", "13.0", &[Gpu::h200()]);
    m.var("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    m.var("NVIDIA_VISIBLE_DEVICES", "void");
    let (v, _) = m.json();
    let f = findings(&v, "PLT001");
    assert_eq!(f.len(), 1, "{v:#}");
    assert!(f[0]["title"]
        .as_str()
        .unwrap()
        .contains("pod requested no GPU"));
    assert!(fixes(&f[0]).contains("nvidia.com/gpu"));
}

#[test]
fn a_container_with_its_gpus_is_fine() {
    let m = container();
    nodes(&m);
    libcuda(&m);
    m.file("/sys/fs/cgroup/devices/devices.list", "a *:* rwm\n");
    let (v, _) = m.json();
    assert!(findings(&v, "PLT001").is_empty(), "{v:#}");
    assert!(findings(&v, "PLT004").is_empty(), "{v:#}");
}

/// Real: a mount namespace with an empty /dev (what a container started without `--gpus`
/// sees) and the variables a pod that requested no GPU has; the live machine otherwise.
#[test]
fn real_empty_dev_in_a_user_namespace() {
    let probe = std::process::Command::new("unshare")
        .args(["-Urm", "sh", "-c", "mount -t tmpfs t /dev && true"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        cudoctor_testkit::skip_missing_tool(
            "real_empty_dev_in_a_user_namespace",
            "unshare -Urm (user and mount namespaces)",
        );
        return;
    }
    let bin = env!("CARGO_BIN_EXE_cudoctor");
    let out = std::process::Command::new("unshare")
        .args([
            "-Urm",
            "sh",
            "-c",
            &format!("mount -t tmpfs t /dev && exec '{bin}' check --format json"),
        ])
        .env("KUBERNETES_SERVICE_HOST", "10.96.0.1")
        .env("NVIDIA_VISIBLE_DEVICES", "void")
        .output()
        .expect("unshare");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let snap = &v["snapshot"];
    assert!(
        snap["platform"]["device_nodes"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "{}",
        snap["platform"]
    );
    // Kubernetes by its variable, or the runtime this test itself runs in, if any.
    assert!(
        snap["platform"]["container"]["evidence"]
            .to_string()
            .contains("KUBERNETES_SERVICE_HOST"),
        "{}",
        snap["platform"]["container"]
    );
    // No GPU listed (none reachable): the pod is told to request one.
    if snap["driver"]["gpus"].as_array().is_none_or(|g| {
        g.iter().all(|g| {
            g["source"]
                .as_str()
                .is_some_and(|s| s.starts_with("/proc/driver/nvidia"))
        })
    }) {
        let f = findings(&v, "PLT001");
        assert_eq!(f.len(), 1, "{}", v["findings"]);
        assert!(f[0]["title"]
            .as_str()
            .unwrap()
            .contains("pod requested no GPU"));
    }
    // The open of /dev/nvidiactl found nothing: the node is not there.
    assert_eq!(
        snap["platform"]["container"]["gpu_access"]["nvidiactl_open"]["kind"],
        "missing"
    );
}

/// A `--root` tree of a container's own files (no /proc: the host kernel's driver files are
/// not part of it) whose /dev holds the GPU's nodes, passed in by hand, and no driver library:
/// one cause, the runtime's missing injection (PLT001), with "no driver" (DRV001) folded under
/// it, never two roots nor DRV001 alone telling the user the container has no GPU access.
#[test]
fn nodes_without_libraries_in_a_tree_without_proc_is_one_cause() {
    let mut m = FakeMachine::new();
    m.file("/.dockerenv", "");
    m.var("NVIDIA_VISIBLE_DEVICES", "all");
    nodes(&m);
    let (v, _) = m.json();
    let plt001 = findings(&v, "PLT001");
    assert_eq!(plt001.len(), 1, "{:#}", v["findings"]);
    assert!(
        plt001[0]["title"]
            .as_str()
            .unwrap()
            .contains("device nodes reached"),
        "{}",
        plt001[0]["title"]
    );
    assert!(plt001[0]["evidence"].to_string().contains("/dev/nvidia0"));
    let drv001 = findings(&v, "DRV001");
    assert_eq!(drv001.len(), 1, "{:#}", v["findings"]);
    assert_eq!(drv001[0]["caused_by"], "PLT001", "{:#}", drv001[0]);
    assert!(drv001[0]["fix"].as_array().unwrap().is_empty());
    // What it says of itself agrees: the nodes are there, the libraries are not.
    let said = format!("{} {}", drv001[0]["title"], drv001[0]["cause"]);
    assert!(!said.contains("started without GPU access"), "{said}");
    assert!(said.contains("device nodes"), "{said}");
}
