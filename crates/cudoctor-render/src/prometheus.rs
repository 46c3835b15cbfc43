//! The Prometheus text exposition format (version 0.0.4), for node_exporter's textfile collector:
//! one file per node, scraped with the node's other metrics, so alerts can fire on a driver that
//! changed, a finding that appeared, or a probe that stopped answering.
//!
//! Every metric is a gauge describing the last check. Label values are escaped as the format
//! requires (backslash, double quote and line feed); HELP texts escape backslash and line feed.

use std::collections::BTreeMap;
use std::fmt::Write;

use cudoctor_analyse::{Layer, Severity};
use cudoctor_snapshot::{Attempt, GpuHealth, Outcome, ProbeStatus, Snapshot};

use crate::Report;

/// The exposition of one check. `check_seconds` is how long collection and judgement took.
pub fn render_prometheus(report: &Report, check_seconds: f64) -> String {
    let s = report.snapshot;
    let mut out = Exposition::default();
    finding_metrics(&mut out, report);
    stack_metrics(&mut out, s);
    gpu_metrics(&mut out, s);
    health_metrics(&mut out, s);
    probe_metrics(&mut out, s);
    timing_metrics(&mut out, s, check_seconds);
    out.text
}

/// The findings by severity, code and layer, and their count per severity.
fn finding_metrics(out: &mut Exposition, report: &Report) {
    out.family(
        "cudoctor_findings",
        "Findings of the last check, by severity, code and layer.",
    );
    let mut by_code: BTreeMap<(Severity, &str, Layer), usize> = BTreeMap::new();
    for f in report.findings {
        *by_code.entry((f.severity, &f.code, f.layer)).or_default() += 1;
    }
    for ((severity, code, layer), n) in &by_code {
        out.sample(
            "cudoctor_findings",
            &[
                ("severity", severity.name()),
                ("code", code),
                ("layer", layer.name()),
            ],
            *n as f64,
        );
    }

    // Every severity always has a sample, so `cudoctor_findings_by_severity{severity="error"} > 0`
    // works as an alert on a healthy node too.
    out.family(
        "cudoctor_findings_by_severity",
        "Number of findings of the last check per severity.",
    );
    let summary = report.summary();
    for (severity, n) in [
        (Severity::Error, summary.errors),
        (Severity::Warning, summary.warnings),
        (Severity::Info, summary.infos),
    ] {
        out.sample(
            "cudoctor_findings_by_severity",
            &[("severity", severity.name())],
            n as f64,
        );
    }
}

/// The driver, the CUDA it runs and each environment's torch build, as labels.
fn stack_metrics(out: &mut Exposition, s: &Snapshot) {
    out.family(
        "cudoctor_stack_info",
        "The driver and the CUDA it can run, as labels; the value is always 1.",
    );
    let driver = s.driver.version.as_ref().map(|v| v.value.as_str());
    let max_cuda = s.driver.max_cuda.as_ref().map(|v| v.value.as_str());
    let flavour = s.driver.kernel_module.as_ref().map(|m| m.flavour.name());
    out.sample(
        "cudoctor_stack_info",
        &[
            ("driver", driver.unwrap_or("")),
            ("max_cuda", max_cuda.unwrap_or("")),
            ("kernel_module", flavour.unwrap_or("")),
            ("tool_version", &s.tool_version),
        ],
        1.0,
    );

    out.family(
        "cudoctor_torch_info",
        "The torch build of each Python environment, as labels; the value is always 1.",
    );
    for env in &s.python_envs {
        if let Some(t) = &env.torch {
            out.sample(
                "cudoctor_torch_info",
                &[
                    ("env", &env.prefix),
                    ("version", &t.version),
                    ("cuda", t.cuda.as_deref().unwrap_or("")),
                    ("variant", t.local_label().unwrap_or("")),
                ],
                1.0,
            );
        }
    }
}

/// Each GPU the driver lists, their number, their memory.
fn gpu_metrics(out: &mut Exposition, s: &Snapshot) {
    out.family(
        "cudoctor_gpu_info",
        "Each GPU the driver lists, as labels; the value is always 1.",
    );
    for g in &s.driver.gpus {
        let index = g.index.to_string();
        out.sample(
            "cudoctor_gpu_info",
            &[
                ("index", &index),
                ("name", &g.name),
                ("uuid", g.uuid.as_deref().unwrap_or("")),
                (
                    "compute_capability",
                    g.compute_capability.as_deref().unwrap_or(""),
                ),
                ("mig_mode", mode_label(g.mig_enabled)),
            ],
            1.0,
        );
    }
    out.family("cudoctor_gpus", "Number of GPUs the driver lists.");
    out.sample("cudoctor_gpus", &[], s.driver.gpus.len() as f64);
    out.family(
        "cudoctor_gpu_memory_total_bytes",
        "Memory of each GPU, as the driver reports it.",
    );
    for g in &s.driver.gpus {
        if let Some(mib) = g.memory_total_mib {
            let index = g.index.to_string();
            out.sample(
                "cudoctor_gpu_memory_total_bytes",
                &[("index", &index)],
                (mib as f64) * 1024.0 * 1024.0,
            );
        }
    }
}

/// The sources that failed or timed out, and their number.
fn probe_metrics(out: &mut Exposition, s: &Snapshot) {
    out.family(
        "cudoctor_probe_failed",
        "Sources that failed or timed out during the last check, by section, source and outcome.",
    );
    let failures = probe_failures(s);
    for ((section, source, outcome), n) in &failures {
        out.sample(
            "cudoctor_probe_failed",
            &[
                ("section", section),
                ("source", source),
                ("outcome", outcome),
            ],
            *n as f64,
        );
    }
    out.family(
        "cudoctor_probe_failures",
        "Number of sources that failed or timed out during the last check.",
    );
    out.sample(
        "cudoctor_probe_failures",
        &[],
        failures.values().sum::<usize>() as f64,
    );
}

/// How long the check took and when it started.
fn timing_metrics(out: &mut Exposition, s: &Snapshot, check_seconds: f64) {
    out.family(
        "cudoctor_check_duration_seconds",
        "How long the last check took to collect and judge.",
    );
    out.sample("cudoctor_check_duration_seconds", &[], check_seconds);
    if let Some(at) = s.collected_at {
        out.family(
            "cudoctor_last_check_timestamp_seconds",
            "When the last check started, in seconds since the Unix epoch.",
        );
        out.sample("cudoctor_last_check_timestamp_seconds", &[], at as f64);
    }
}

/// The machine under the stack: each GPU's health from NVML and the kernel log's Xid events.
/// Emitted only where the snapshot has them (older snapshots and `--root` trees have none).
fn health_metrics(out: &mut Exposition, s: &Snapshot) {
    let gpus: Vec<(String, &GpuHealth)> = s
        .driver
        .gpus
        .iter()
        .filter_map(|g| Some((g.index.to_string(), g.health.as_ref()?)))
        .collect();
    if !gpus.is_empty() {
        gpu_memory_health_metrics(out, &gpus);
        gpu_clock_and_link_metrics(out, &gpus);
    }
    let Some(h) = &s.health else {
        return;
    };
    kernel_log_metrics(out, s, h);
}

/// Each GPU's memory errors (NVML): ECC counts, remapped rows, repairs waiting for a reset.
fn gpu_memory_health_metrics(out: &mut Exposition, gpus: &[(String, &GpuHealth)]) {
    use cudoctor_snapshot::NvmlQuery;
    out.family(
        "cudoctor_gpu_ecc_errors",
        "ECC error counts of each GPU (NVML), by counter (volatile: since the driver loaded; aggregate: lifetime) and type.",
    );
    for (index, h) in gpus {
        for (counter, q) in [
            ("volatile", &h.ecc_volatile),
            ("aggregate", &h.ecc_aggregate),
        ] {
            if let Some(c) = NvmlQuery::get(q) {
                for (kind, n) in [("corrected", c.corrected), ("uncorrected", c.uncorrected)] {
                    out.sample(
                        "cudoctor_gpu_ecc_errors",
                        &[("index", index), ("counter", counter), ("type", kind)],
                        n as f64,
                    );
                }
            }
        }
    }
    out.family(
        "cudoctor_gpu_remapped_rows",
        "Rows of each GPU's memory remapped, by the kind of error that caused it (NVML).",
    );
    for (index, h) in gpus {
        if let Some(r) = NvmlQuery::get(&h.row_remap) {
            for (cause, n) in [
                ("corrected", r.corrected_rows),
                ("uncorrected", r.uncorrected_rows),
            ] {
                out.sample(
                    "cudoctor_gpu_remapped_rows",
                    &[("index", index), ("cause", cause)],
                    f64::from(n),
                );
            }
        }
    }
    out.family(
        "cudoctor_gpu_memory_repair_pending",
        "1 when a GPU waits for a reset to remap a row or retire a page, or a remapping failed (state=failed).",
    );
    for (index, h) in gpus {
        let remap = NvmlQuery::get(&h.row_remap);
        let states = [
            ("row_remap_pending", remap.map(|r| r.pending)),
            ("failed", remap.map(|r| r.failed)),
            (
                "retired_pages_pending",
                NvmlQuery::get(&h.retired_pages_pending),
            ),
        ];
        for (state, v) in states {
            if let Some(v) = v {
                out.sample(
                    "cudoctor_gpu_memory_repair_pending",
                    &[("index", index), ("state", state)],
                    f64::from(u8::from(v)),
                );
            }
        }
    }
}

/// Each GPU's clock events, PCIe link and NVLink errors (NVML).
fn gpu_clock_and_link_metrics(out: &mut Exposition, gpus: &[(String, &GpuHealth)]) {
    use cudoctor_snapshot::health::clocks_event;
    use cudoctor_snapshot::NvmlQuery;
    out.family(
        "cudoctor_gpu_clocks_event_active",
        "Clock event (throttle) reasons active on each GPU, one sample per reason, as nvidia-smi names them.",
    );
    for (index, h) in gpus {
        if let Some(mask) = NvmlQuery::get(&h.clocks_event_reasons) {
            for reason in clocks_event::names(mask) {
                out.sample(
                    "cudoctor_gpu_clocks_event_active",
                    &[("index", index), ("reason", reason)],
                    1.0,
                );
            }
        }
    }
    out.family(
        "cudoctor_gpu_pcie_link",
        "Each GPU's PCIe link generation and width, now and the most the GPU and slot allow (an idle GPU's generation drops).",
    );
    for (index, h) in gpus {
        let p = &h.pcie;
        for (what, which, q) in [
            ("generation", "current", &p.current_gen),
            ("generation", "max", &p.max_gen),
            ("width", "current", &p.current_width),
            ("width", "max", &p.max_width),
        ] {
            if let Some(v) = NvmlQuery::get(q) {
                out.sample(
                    "cudoctor_gpu_pcie_link",
                    &[("index", index), ("what", what), ("which", which)],
                    f64::from(v),
                );
            }
        }
    }
    out.family(
        "cudoctor_gpu_nvlink_errors",
        "NVLink error counters of each GPU's active links (NVML), summed over the links, by counter.",
    );
    for (index, h) in gpus {
        if h.nvlink_errors.is_empty() {
            continue;
        }
        for (counter, pick) in [
            (
                "replay",
                (|e: &cudoctor_snapshot::NvLinkErrors| e.replay) as fn(&_) -> _,
            ),
            ("recovery", |e| e.recovery),
            ("crc_flit", |e| e.crc_flit),
            ("crc_data", |e| e.crc_data),
        ] {
            let values: Vec<u64> = h.nvlink_errors.iter().filter_map(pick).collect();
            if !values.is_empty() {
                out.sample(
                    "cudoctor_gpu_nvlink_errors",
                    &[("index", index), ("counter", counter)],
                    values.iter().sum::<u64>() as f64,
                );
            }
        }
    }
}

/// The device nodes, whether the kernel log was read, its Xid events, nouveau.
fn kernel_log_metrics(out: &mut Exposition, s: &Snapshot, h: &cudoctor_snapshot::HealthFacts) {
    if let Some(nodes) = s.platform.gpu_device_nodes() {
        out.family(
            "cudoctor_gpu_device_nodes",
            "The /dev/nvidiaN device nodes present, one a GPU (DCGM compares their count with NVML's GPUs).",
        );
        out.sample("cudoctor_gpu_device_nodes", &[], nodes.len() as f64);
    }
    out.family(
        "cudoctor_kernel_log_read",
        "1 when the kernel log (/dev/kmsg, or the systemd journal where it is closed) could be read for Xid events, 0 when not (no permission).",
    );
    let read = matches!(
        h.kernel_log.read,
        cudoctor_snapshot::KernelLogRead::Read { .. }
    );
    out.sample("cudoctor_kernel_log_read", &[], f64::from(u8::from(read)));
    out.family(
        "cudoctor_xid_events",
        "NVIDIA Xid events in the kernel log since boot, by GPU PCI address and Xid.",
    );
    let mut xids: BTreeMap<(&str, u32), usize> = BTreeMap::new();
    for e in &h.kernel_log.xids {
        *xids.entry((e.pci.as_str(), e.xid)).or_default() += 1;
    }
    for ((pci, xid), n) in xids {
        out.sample(
            "cudoctor_xid_events",
            &[("pci", pci), ("xid", &xid.to_string())],
            n as f64,
        );
    }
    if let Some(loaded) = h.nouveau_loaded {
        out.family(
            "cudoctor_nouveau_loaded",
            "1 when the nouveau module is loaded.",
        );
        out.sample("cudoctor_nouveau_loaded", &[], f64::from(u8::from(loaded)));
    }
}

/// Failed and timed-out attempts and probe runs, counted by (section, source, outcome).
fn probe_failures(s: &Snapshot) -> BTreeMap<(&'static str, String, String), usize> {
    let mut out: BTreeMap<(&'static str, String, String), usize> = BTreeMap::new();
    let sections: [(&'static str, &[Attempt]); 3] = [
        ("driver", &s.driver.attempts),
        ("toolkit", &s.toolkit.attempts),
        (
            "multigpu",
            s.multigpu.as_ref().map_or(&[][..], |m| &m.attempts),
        ),
    ];
    for (section, attempts) in sections {
        for a in attempts {
            let outcome = match a.outcome {
                Outcome::Failed => "failed",
                Outcome::TimedOut => "timed_out",
                Outcome::Ok | Outcome::Absent | Outcome::Skipped | Outcome::NotRunUnderRoot => {
                    continue
                }
            };
            *out.entry((section, a.source.clone(), outcome.to_string()))
                .or_default() += 1;
        }
    }
    for run in s.deep.iter().flat_map(|d| &d.runs) {
        let outcome = match run.status {
            ProbeStatus::Ok | ProbeStatus::NoTorch | ProbeStatus::NotRunUnderRoot => continue,
            ProbeStatus::ImportFailed => "import_failed",
            ProbeStatus::Crashed => "crashed",
            ProbeStatus::TimedOut => "timed_out",
            ProbeStatus::NotStarted => "not_started",
            ProbeStatus::BadOutput => "bad_output",
        };
        *out.entry(("deep", run.interpreter.clone(), outcome.to_string()))
            .or_default() += 1;
    }
    out
}

#[derive(Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    fn family(&mut self, name: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {name} gauge");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{k}=\"{}\"", escape_label_value(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {}", number(value));
    }
}

/// Label values as the exposition format takes them: `\` as `\\`, `"` as `\"`, line feed
/// as `\n`, the format's only escapes. Every other control, invisible or bidirectional
/// character ([`cudoctor_types::inert::is_hostile`]: CR, ESC, a right-to-left override) has no
/// escape there and would invalidate the whole scrape, so it is replaced by U+FFFD.
pub fn escape_label_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if cudoctor_types::inert::is_hostile(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// HELP texts: `\` as `\\`, line feed as `\n`.
/// The `mig_mode` label keeps the driver's spelling, so dashboards built on it keep working.
fn mode_label(on: Option<bool>) -> &'static str {
    match on {
        Some(true) => "Enabled",
        Some(false) => "Disabled",
        None => "",
    }
}

fn escape_help(v: &str) -> String {
    v.chars()
        .map(|c| match c {
            '\\' => "\\\\".to_string(),
            '\n' => "\\n".to_string(),
            c if cudoctor_types::inert::is_hostile(c) => '\u{fffd}'.to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// Go's float syntax as the format takes it: integers without a fraction, `NaN`, `+Inf`.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_analyse::Finding;
    use cudoctor_snapshot::{Gpu, PythonEnv, Sourced, TorchBuild};

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::new("0.1.0", "/");
        s.collected_at = Some(1_796_118_686);
        s.driver.version = Some(Sourced::new("580.159.04".into(), "nvml"));
        s.driver.max_cuda = Some(Sourced::new("13.0".into(), "libcuda"));
        s.driver.gpus.push(Gpu {
            index: 0,
            name: "NVIDIA \"H200\"\\x".into(),
            compute_capability: Some("9.0".into()),
            memory_total_mib: Some(143_771),
            source: "nvml".into(),
            ..Default::default()
        });
        s.driver
            .attempts
            .push(Attempt::new("nvidia-smi", Outcome::TimedOut, "after 5 s"));
        s.python_envs.push(PythonEnv {
            prefix: "/opt/env\nwith line".into(),
            torch: Some(TorchBuild {
                version: "2.11.0+cu130".into(),
                cuda: Some("13.0".into()),
                path: "/opt/env/torch".into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        s
    }

    fn finding(code: &str, layer: Layer, severity: Severity) -> Finding {
        Finding {
            code: code.into(),
            layer,
            severity,
            title: "t".into(),
            evidence: vec![],
            cause: String::new(),
            fix: vec![],
            confidence: Default::default(),
            id: code.into(),
            caused_by: None,
            caused_by_id: None,
            about: vec![],
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label_value(r#"a\b"c"#), r#"a\\b\"c"#);
        assert_eq!(escape_label_value("a\nb"), "a\\nb");
        // No other escape exists in the format: CR, ESC and bidirectional or invisible
        // characters are replaced, so one hostile package name cannot invalidate the scrape.
        assert_eq!(
            escape_label_value("torch\r\u{1b}[31m\u{202e}x\u{2060}\u{e0041}"),
            "torch\u{fffd}\u{fffd}[31m\u{fffd}x\u{fffd}\u{fffd}"
        );
        assert_eq!(escape_help("a\rb\\"), "a\u{fffd}b\\\\");
        let s = snapshot();
        let text = render_prometheus(
            &Report {
                snapshot: &s,
                findings: &[],
            },
            0.25,
        );
        assert!(text.contains(r#"name="NVIDIA \"H200\"\\x""#), "{text}");
        assert!(text.contains(r#"env="/opt/env\nwith line""#), "{text}");
        assert!(text.lines().all(|l| !l.is_empty()));
    }

    #[test]
    fn findings_are_counted_per_code_and_every_severity_has_a_sample() {
        let s = snapshot();
        let findings = vec![
            finding("LIB005", Layer::Libraries, Severity::Info),
            finding("LIB005", Layer::Libraries, Severity::Info),
            finding("DRV004", Layer::Driver, Severity::Error),
        ];
        let text = render_prometheus(
            &Report {
                snapshot: &s,
                findings: &findings,
            },
            0.25,
        );
        assert!(text.contains(
            "cudoctor_findings{severity=\"info\",code=\"LIB005\",layer=\"libraries\"} 2\n"
        ));
        assert!(text.contains(
            "cudoctor_findings{severity=\"error\",code=\"DRV004\",layer=\"driver\"} 1\n"
        ));
        assert!(text.contains("cudoctor_findings_by_severity{severity=\"warning\"} 0\n"));
        assert!(text.contains(
            "cudoctor_probe_failed{section=\"driver\",source=\"nvidia-smi\",outcome=\"timed_out\"} 1\n"
        ));
        assert!(text.contains("cudoctor_check_duration_seconds 0.25\n"));
        assert!(text.contains("cudoctor_gpu_memory_total_bytes{index=\"0\"} 150754820096\n"));
        assert!(text.contains("cudoctor_last_check_timestamp_seconds 1796118686\n"));
    }

    #[test]
    fn health_facts_become_metrics_a_fleet_alert_can_use() {
        use cudoctor_snapshot::{EccCounts, GpuHealth, HealthFacts, NvmlQuery, RowRemap, XidEvent};
        let ok = |v| {
            Some(NvmlQuery {
                rc: 0,
                value: Some(v),
            })
        };
        let mut s = snapshot();
        // Without health facts (an older snapshot): no health family at all.
        let plain = render_prometheus(
            &Report {
                snapshot: &s,
                findings: &[],
            },
            0.1,
        );
        assert!(!plain.contains("cudoctor_gpu_ecc_errors"));
        s.driver.gpus[0].health = Some(GpuHealth {
            ecc_volatile: Some(NvmlQuery {
                rc: 0,
                value: Some(EccCounts {
                    corrected: 3,
                    uncorrected: 1,
                }),
            }),
            row_remap: Some(NvmlQuery {
                rc: 0,
                value: Some(RowRemap {
                    uncorrected_rows: 1,
                    pending: true,
                    ..Default::default()
                }),
            }),
            clocks_event_reasons: Some(NvmlQuery {
                rc: 0,
                value: Some(0x41),
            }),
            pcie: cudoctor_snapshot::PcieLink {
                current_width: ok(8),
                max_width: ok(16),
                ..Default::default()
            },
            ..Default::default()
        });
        s.health = Some(HealthFacts {
            nouveau_loaded: Some(false),
            kernel_log: cudoctor_snapshot::KernelLog {
                read: cudoctor_snapshot::KernelLogRead::Read {
                    source: "/dev/kmsg".into(),
                    records: 10,
                    truncated: false,
                },
                xids: vec![
                    XidEvent {
                        xid: 79,
                        pci: "0000:3b:00".into(),
                        time_us: None,
                        text: String::new(),
                    },
                    XidEvent {
                        xid: 79,
                        pci: "0000:3b:00".into(),
                        time_us: None,
                        text: String::new(),
                    },
                ],
                xids_dropped: 0,
            },
            dcgm_diag: None,
        });
        s.platform.device_nodes = [
            "/dev/nvidia0",
            "/dev/nvidia1",
            "/dev/nvidiactl",
            "/dev/nvidia-uvm",
        ]
        .map(String::from)
        .to_vec();
        let text = render_prometheus(
            &Report {
                snapshot: &s,
                findings: &[],
            },
            0.1,
        );
        for line in [
            "cudoctor_gpu_ecc_errors{index=\"0\",counter=\"volatile\",type=\"uncorrected\"} 1\n",
            "cudoctor_gpu_remapped_rows{index=\"0\",cause=\"uncorrected\"} 1\n",
            "cudoctor_gpu_memory_repair_pending{index=\"0\",state=\"row_remap_pending\"} 1\n",
            "cudoctor_gpu_clocks_event_active{index=\"0\",reason=\"HW Thermal Slowdown\"} 1\n",
            "cudoctor_gpu_pcie_link{index=\"0\",what=\"width\",which=\"current\"} 8\n",
            "cudoctor_kernel_log_read 1\n",
            "cudoctor_xid_events{pci=\"0000:3b:00\",xid=\"79\"} 2\n",
            "cudoctor_nouveau_loaded 0\n",
            "cudoctor_gpu_device_nodes 2\n",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
    }
}
