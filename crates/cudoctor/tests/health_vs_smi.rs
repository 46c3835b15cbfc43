//! The GPU health facts `check` reads from NVML against `nvidia-smi -q`, field by field: on the
//! captured 2×H200 (its real `nvidia-smi -q` against the values that machine's NVML gives), and
//! live on a machine with a GPU and a working nvidia-smi (skipped elsewhere). On the healthy machine no health rule may fire.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::{json, Value};

/// `nvidia-smi -q` per GPU (keyed by its bus id as the section header prints it), each field by
/// its path of section names: `MIG Mode/Current`, `PCI/GPU Link Info/Link Width/Max`.
fn smi_q(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut gpu: Option<String> = None;
    let mut path: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        if let Some(bus) = line.strip_prefix("GPU ") {
            gpu = Some(bus.trim().to_string());
            path.clear();
            continue;
        }
        let Some(g) = &gpu else { continue };
        let indent = line.len() - line.trim_start().len();
        if line.trim().is_empty() {
            continue;
        }
        while path.last().is_some_and(|(i, _)| *i >= indent) {
            path.pop();
        }
        let (key, value) = match line.split_once(':') {
            Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
            None => (line.trim().to_string(), None),
        };
        let mut full: Vec<&str> = path.iter().map(|(_, k)| k.as_str()).collect();
        full.push(&key);
        match value {
            Some(v) => {
                out.entry(g.clone()).or_default().insert(full.join("/"), v);
            }
            None => path.push((indent, key)),
        }
    }
    out
}

/// Field-by-field differences between one GPU's `nvidia-smi -q` and its `health` JSON.
fn compare(smi: &BTreeMap<String, String>, health: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    let mut same = |what: &str, smi_says: Option<String>, nvml_says: Option<String>| {
        // A field smi does not print (older drivers) is not compared.
        if let Some(s) = smi_says {
            if Some(&s) != nvml_says.as_ref() {
                bad.push(format!("{what}: nvidia-smi {s:?}, NVML {nvml_says:?}"));
            }
        }
    };
    let get = |k: &str| smi.get(k).cloned();
    let enabled = |v: &Value| {
        v.as_bool()
            .map(|b| if b { "Enabled" } else { "Disabled" }.to_string())
    };
    let yes_no = |v: &Value| {
        v.as_bool()
            .map(|b| if b { "Yes" } else { "No" }.to_string())
    };
    let na_or = |q: &Value, f: &dyn Fn(&Value) -> Option<String>| -> Option<String> {
        if q["rc"] == 0 {
            f(&q["value"])
        } else {
            Some("N/A".into())
        }
    };
    same(
        "persistence mode",
        get("Persistence Mode"),
        na_or(&health["persistence_mode"], &|v| enabled(v)),
    );
    for (section, key) in [("MIG Mode", "mig_mode"), ("ECC Mode", "ecc_mode")] {
        for part in ["current", "pending"] {
            let title = if part == "current" {
                "Current"
            } else {
                "Pending"
            };
            same(
                &format!("{section} {part}"),
                get(&format!("{section}/{title}")),
                na_or(&health[key], &|v| enabled(&v[part])),
            );
        }
    }
    for (counter, key) in [("Volatile", "ecc_volatile"), ("Aggregate", "ecc_aggregate")] {
        let sum = |uncorrectable: bool| -> Option<String> {
            let prefix = format!("ECC Errors/{counter}/");
            let values: Vec<u64> = smi
                .iter()
                .filter(|(k, _)| {
                    k.strip_prefix(&prefix).is_some_and(|k| {
                        !k.contains('/')
                            && (k.contains("Uncorrectable") == uncorrectable)
                            && (k.contains("Correctable") || k.contains("Uncorrectable"))
                    })
                })
                .filter_map(|(_, v)| v.parse().ok())
                .collect();
            (!values.is_empty()).then(|| values.iter().sum::<u64>().to_string())
        };
        same(
            &format!("ECC {counter} corrected"),
            sum(false),
            na_or(&health[key], &|v| Some(v["corrected"].to_string())),
        );
        same(
            &format!("ECC {counter} uncorrected"),
            sum(true),
            na_or(&health[key], &|v| Some(v["uncorrected"].to_string())),
        );
    }
    let remap = &health["row_remap"];
    same(
        "remapped rows, correctable",
        get("Remapped Rows/Correctable Error"),
        na_or(remap, &|v| Some(v["corrected_rows"].to_string())),
    );
    same(
        "remapped rows, uncorrectable",
        get("Remapped Rows/Uncorrectable Error"),
        na_or(remap, &|v| Some(v["uncorrected_rows"].to_string())),
    );
    same(
        "row remap pending",
        get("Remapped Rows/Pending"),
        na_or(remap, &|v| yes_no(&v["pending"])),
    );
    same(
        "row remap failure",
        get("Remapped Rows/Remapping Failure Occurred"),
        na_or(remap, &|v| yes_no(&v["failed"])),
    );
    same(
        "pending page retirement",
        get("Retired Pages/Pending Page Blacklist")
            .or_else(|| get("Retired Pages/Pending Page Retirement")),
        na_or(&health["retired_pages_pending"], &|v| yes_no(v)),
    );
    for (what, smi_key, key, suffix) in [
        (
            "PCIe generation max",
            "PCI/GPU Link Info/PCIe Generation/Max",
            "max_gen",
            "",
        ),
        (
            "PCIe generation current",
            "PCI/GPU Link Info/PCIe Generation/Current",
            "current_gen",
            "",
        ),
        (
            "PCIe width max",
            "PCI/GPU Link Info/Link Width/Max",
            "max_width",
            "x",
        ),
        (
            "PCIe width current",
            "PCI/GPU Link Info/Link Width/Current",
            "current_width",
            "x",
        ),
    ] {
        same(
            what,
            get(smi_key),
            na_or(&health["pcie"][key], &|v| Some(format!("{v}{suffix}"))),
        );
    }
    // The slowdowns are stable; Idle comes and goes between the two readings.
    let mask = health["clocks_event_reasons"]["value"].as_u64();
    for (bit, name) in [
        (0x8u64, "HW Slowdown"),
        (0x40, "HW Slowdown/HW Thermal Slowdown"),
        (0x80, "HW Slowdown/HW Power Brake Slowdown"),
        (0x20, "SW Thermal Slowdown"),
    ] {
        same(
            &format!("clock event {name}"),
            get(&format!("Clocks Event Reasons/{name}")),
            mask.map(|m| if m & bit != 0 { "Active" } else { "Not Active" }.to_string()),
        );
    }
    if get("Processes").as_deref() == Some("None") {
        same(
            "compute processes",
            Some("0".into()),
            na_or(&health["compute_processes"], &|v| Some(v.to_string())),
        );
    }
    bad
}

/// What NVML answered on the captured H200 for each of its GPUs, as `check` records it (the
/// values `nvidia-smi -q` of the same machine printed; page retirement NOT_SUPPORTED, rc 3).
fn captured_h200_health() -> Value {
    json!({
        "persistence_mode": {"rc": 0, "value": true},
        "ecc_mode": {"rc": 0, "value": {"current": true, "pending": true}},
        "ecc_volatile": {"rc": 0, "value": {"corrected": 0, "uncorrected": 0}},
        "ecc_aggregate": {"rc": 0, "value": {"corrected": 0, "uncorrected": 0}},
        "retired_pages_pending": {"rc": 3},
        "row_remap": {"rc": 0, "value": {"corrected_rows": 0, "uncorrected_rows": 0, "pending": false, "failed": false}},
        "clocks_event_reasons": {"rc": 0, "value": 1},
        "utilization_gpu": {"rc": 0, "value": 0},
        "pstate": {"rc": 0, "value": 0},
        "pcie": {
            "current_gen": {"rc": 0, "value": 5},
            "max_gen": {"rc": 0, "value": 5},
            "current_width": {"rc": 0, "value": 16},
            "max_width": {"rc": 0, "value": 16}
        },
        "inforom_valid": {"rc": 0, "value": true},
        "compute_processes": {"rc": 0, "value": 0},
        "mig_mode": {"rc": 0, "value": {"current": false, "pending": false}}
    })
}

#[test]
fn the_captured_h200_agrees_field_by_field() {
    let smi = smi_q(&cudoctor_testkit::h200x2("smi_q.txt"));
    assert_eq!(smi.len(), 2, "{:?}", smi.keys());
    let first = smi.values().next().unwrap();
    assert_eq!(
        first.get("MIG Mode/Current").map(String::as_str),
        Some("Disabled")
    );
    assert_eq!(
        first
            .get("PCI/GPU Link Info/Link Width/Max")
            .map(String::as_str),
        Some("16x")
    );
    for (bus, fields) in &smi {
        let bad = compare(fields, &captured_h200_health());
        assert!(bad.is_empty(), "GPU {bus}: {bad:#?}");
    }
    // The comparison does see a difference.
    let mut pending = captured_h200_health();
    pending["row_remap"]["value"]["pending"] = json!(true);
    assert_eq!(compare(first, &pending).len(), 1);
}

/// On a machine with a GPU: `check` and `nvidia-smi -q` read the same values, and the health
/// rules find nothing on a healthy machine (any GPU finding is printed for the device record).
#[test]
fn live_nvml_agrees_with_nvidia_smi() {
    // Only a machine with a GPU can run it: a machine without one (CI) is not missing a tool.
    let smi = match Command::new("nvidia-smi").arg("-q").output() {
        Ok(smi) if smi.status.success() => smi,
        _ => {
            cudoctor_testkit::skip_opt_in(
                "live_nvml_agrees_with_nvidia_smi",
                "run on a machine with a GPU and a working nvidia-smi",
            );
            return;
        }
    };
    let out = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--format", "json"])
        .output()
        .expect("run cudoctor");
    let v: Value = serde_json::from_slice(&out.stdout).expect("check's JSON");
    let smi = smi_q(&String::from_utf8_lossy(&smi.stdout));
    let gpus = v["snapshot"]["driver"]["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), smi.len(), "GPUs: NVML and nvidia-smi differ");
    let mut bad = Vec::new();
    for g in gpus {
        let bus = g["bus_id"].as_str().unwrap_or_default();
        let fields = smi
            .iter()
            .find(|(b, _)| b.eq_ignore_ascii_case(bus))
            .map(|(_, f)| f)
            .unwrap_or_else(|| panic!("GPU {bus} is not in nvidia-smi -q"));
        assert!(g["health"].is_object(), "no health read for GPU {bus}: {g}");
        eprintln!("GPU {bus} health: {}", g["health"]);
        for b in compare(fields, &g["health"]) {
            bad.push(format!("GPU {bus}: {b}"));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
    let health_findings: Vec<&Value> = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| {
            f["code"]
                .as_str()
                .is_some_and(|c| c.starts_with("GPU") || c == "PLT004" || c == "PLT030")
        })
        .collect();
    eprintln!(
        "kernel log: {}",
        v["snapshot"]["health"]["kernel_log"]["read"]
    );
    assert!(
        health_findings.is_empty(),
        "health findings on this machine: {health_findings:#?}"
    );
}
