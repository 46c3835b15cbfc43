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
