//! The checks from the practitioner articles, end to end on fake machines built from real
//! captured files: security modules (PLT010), wheel integrity (FW010/FW011), multi-node NCCL
//! readiness (MGPU010-MGPU013), toolkit features (TK010) and compile/AMP floors (ACC010).

mod support;

use support::FakeMachine;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn fixture(rel: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{rel}"))
        .unwrap_or_else(|e| panic!("fixture {rel}: {e}"))
}

fn finding(v: &serde_json::Value, code: &str) -> Option<serde_json::Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == code)
        .cloned()
}

fn fixes(f: &serde_json::Value) -> String {
    f["fix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let step = x["shell"].as_str().or_else(|| x["prose"].as_str());
            step.unwrap_or_default().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn plt010_selinux_denials_of_nvidia_files_in_the_kernel_log() {
    let m = FakeMachine::h200();
    m.file("/sys/fs/selinux/enforce", "1");
    m.file(
        "/proc/self/attr/current",
        "system_u:system_r:container_t:s0:c10,c25\0",
    );
    m.file("/dev/kmsg", &fixture("security/kmsg-selinux-denials.txt"));
    let (v, code) = m.json();
    let f = finding(&v, "PLT010").expect("PLT010");
    assert_eq!(f["severity"], "error");
    assert_eq!(code, 1);
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains("read write of nvidia-modeset denied for kwin_wayland"),
        "{evidence}"
    );
    assert!(
        evidence.contains("read of params denied for nvidia-smi"),
        "{evidence}"
    );
    assert!(!evidence.contains("renderD128"), "{evidence}");
    assert!(evidence.contains("SELinux enforcing"), "{evidence}");
    assert!(fixes(&f).contains("ausearch -m avc"));
    let sec = &v["snapshot"]["platform"]["security"];
    assert_eq!(sec["denials"].as_array().unwrap().len(), 3);
}

#[test]
fn plt010_apparmor_denials_and_a_clean_log() {
    let m = FakeMachine::h200();
    m.file("/sys/module/apparmor/parameters/enabled", "Y\n");
    m.file(
        "/sys/kernel/security/apparmor/profiles",
        "/usr/bin/snmpd (enforce)\ndocker-default (enforce)\n/usr/bin/man (complain)\n",
    );
    m.file("/proc/self/attr/apparmor/current", "unconfined\n");
    m.file("/dev/kmsg", &fixture("security/kmsg-apparmor-denials.txt"));
    let (v, _) = m.json();
    let f = finding(&v, "PLT010").expect("PLT010");
    let evidence = f["evidence"].to_string();
    assert!(
        evidence
            .contains("unlink d of /dev/char/195:255 denied for nvidia-smi under /usr/bin/snmpd"),
        "{evidence}"
    );
    assert!(
        evidence.contains("2 profiles in enforce mode, 1 in complain mode"),
        "{evidence}"
    );
    assert!(!evidence.contains("operstate"), "{evidence}");
    assert!(fixes(&f).contains("sudo aa-complain /usr/bin/snmpd"));

    // The same modes with a log that names no NVIDIA file: nothing to say on a working machine.
    let clean: String = fixture("security/kmsg-apparmor-denials.txt")
        .lines()
        .filter(|l| !l.contains("nvidia"))
        .map(|l| format!("{l}\n"))
        .collect();
    m.file("/dev/kmsg", &clean);
    let (v, code) = m.json();
    assert!(finding(&v, "PLT010").is_none());
    assert_eq!(code, 0);
}

/// With auditd running, denials are in its log and not in the kernel log: real records
/// (fixtures/security/audit.log) are read there, named as such, and the confirm command greps
/// that file.
#[test]
fn plt010_denials_from_auditds_log() {
    let m = FakeMachine::h200();
    m.file("/sys/module/apparmor/parameters/enabled", "Y\n");
    m.file("/sys/kernel/security/apparmor/profiles", "qtox (enforce)\n");
    m.file("/sys/fs/selinux/enforce", "1");
    m.file("/var/log/audit/audit.log", &fixture("security/audit.log"));
    let (v, code) = m.json();
    let f = finding(&v, "PLT010").expect("PLT010");
    assert_eq!(code, 1);
    assert_eq!(
        f["title"],
        "AppArmor and SELinux denied access to NVIDIA files (3 denials in auditd's log)"
    );
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains("exec x of /usr/bin/nvidia-modprobe denied for qtox under qtox"),
        "{evidence}"
    );
    assert!(
        evidence.contains("audit log: /var/log/audit/audit.log: ok"),
        "{evidence}"
    );
    assert!(!evidence.contains("renderD128"), "{evidence}");
    assert!(
        fixes(&f)
            .contains("sudo grep 'apparmor=\"DENIED\"' /var/log/audit/audit.log | grep -i nvidia"),
        "{}",
        fixes(&f)
    );
}

/// auditd keeps its log for root (0600 in a 0700 directory): a user who cannot read it is told
/// so, and nothing fails. Real: the log owned by a user outside a user namespace's map, read
/// by the namespace's root (no override of another owner's permissions).
#[test]
fn plt010_auditds_log_closed_to_the_user_is_said_not_failed() {
    let m = FakeMachine::h200();
    m.file("/var/log/audit/audit.log", &fixture("security/audit.log"));
    let probe = std::process::Command::new("unshare")
        .args(["-Ur", "true"])
        .output();
    let chowned = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(m.real("/var/log/audit"))
        .status();
    if !probe.is_ok_and(|o| o.status.success()) || !chowned.is_ok_and(|s| s.success()) {
        cudoctor_testkit::skip_missing_tool(
            "plt010_auditds_log_closed_to_the_user_is_said_not_failed",
            "unshare -Ur and chown (root, user namespaces)",
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(
        m.real("/var/log/audit"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let inner = m.command(&["check", "--format", "json"]);
    let mut cmd = std::process::Command::new("unshare");
    cmd.arg("-Ur")
        .arg(inner.get_program())
        .args(inner.get_args());
    cmd.env_clear();
    for (k, v) in inner.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    let out = cmd.output().expect("unshare");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let audit = &v["snapshot"]["platform"]["security"]["audit_log"];
    assert_eq!(audit["outcome"], "skipped", "{audit}");
    assert!(
        audit["detail"]
            .as_str()
            .unwrap()
            .contains("permission denied"),
        "{audit}"
    );
    assert!(finding(&v, "PLT010").is_none());
    assert_eq!(out.status.code(), Some(0), "{}", v["findings"]);
    // Given back to the user, so the tree can be removed.
    let _ = std::process::Command::new("chown")
        .args(["-R", "0:0"])
        .arg(m.real("/var/log/audit"))
        .status();
}

#[test]
fn tk010_a_flag_newer_than_the_build_toolkit_and_acc010_silent_on_h200() {
    let mut m = FakeMachine::h200();
    let (v, _) = m.json();
    assert!(finding(&v, "TK010").is_none());
    assert!(finding(&v, "ACC010").is_none(), "H200: above every floor");
    m.var("NVCC_APPEND_FLAGS", "--apply-controls=tuned.acf");
    let (v, code) = m.json();
    let f = finding(&v, "TK010").expect("TK010");
    assert_eq!(code, 1);
    assert!(f["title"]
        .as_str()
        .unwrap()
        .contains("needs CUDA 13.3 but the build toolkit is 13.0.88"));
    assert!(f["evidence"]
        .to_string()
        .contains("nvidia.github.io/CompileIQ"));
}

#[test]
fn acc010_a_gpu_below_torch_compiles_floor() {
    let mut m = FakeMachine::with_driver(
        "570.86.15",
        "12.8",
        &[support::Gpu::new("Tesla P100-PCIE-16GB", "6.0")],
    );
    m.torch("2.7.1+cu126", &[]);
    let (v, _) = m.json();
    let f = finding(&v, "ACC010").expect("ACC010");
    // A limit of the GPU, not a breakage: info, never a root cause of its own.
    assert_eq!(f["severity"], "info");
    assert!(f["evidence"].to_string().contains("GPUTooOldForTriton"));
}

#[test]
fn mgpu010_and_mgpu011_on_a_fake_node() {
    let mut m = FakeMachine::h200();
    m.file("/sys/class/net/lo/operstate", "unknown\n");
    m.file("/sys/class/net/ens5/operstate", "up\n");
    m.file("/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
    m.file(
        "/sys/class/infiniband/mlx5_0/ports/1/rate",
        "400 Gb/sec (4X NDR)\n",
    );
    m.file("/proc/modules", "nvidia_peermem 16384 0 - Live 0x0 (OE)\n");
    let (v, _) = m.json();
    for code in ["MGPU010", "MGPU011", "MGPU012"] {
        assert!(finding(&v, code).is_none(), "{code} on a healthy node");
    }
    // Two settings, two breakages, two roots.
    m.var("NCCL_SOCKET_IFNAME", "eth0")
        .var("NCCL_IB_DISABLE", "1")
        .breakages(2);
    let (v, _) = m.json();
    assert_eq!(
        finding(&v, "MGPU010").expect("MGPU010")["severity"],
        "error"
    );
    assert!(finding(&v, "MGPU011").expect("MGPU011")["title"]
        .as_str()
        .unwrap()
        .contains("NCCL_IB_DISABLE=1 hides 1 active"));
}
