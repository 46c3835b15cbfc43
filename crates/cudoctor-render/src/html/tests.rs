use super::plots::tick;
use super::*;
use cudoctor_analyse::{Confidence, Finding};
use cudoctor_snapshot::{
    AllReduceProbe, AllReduceRun, DeepFacts, GpuPair, MultiGpuFacts, P2pStatus, PathLevel,
    ProbeResult, ProbeRun, ProbeStatus, SdpaBackend, SdpaBackendProbe, SdpaDefault, SdpaProbe,
    SdpaRun, Topology, TopologyGpu,
};

fn run(seq_len: u32, ms: f64, peak: f64) -> SdpaRun {
    SdpaRun {
        seq_len,
        ms: Some(ms),
        peak_mib: Some(peak),
        ..Default::default()
    }
}

/// The real 2xH200 numbers (tests/fixtures/real: sdpa.txt, nccl_probe.txt).
fn h200() -> Snapshot {
    let mut s = Snapshot::new("0.1.0", "/");
    let backend = |b, runs| SdpaBackendProbe {
        backend: b,
        available: true,
        error: None,
        runs,
    };
    let result = ProbeResult {
        complete: true,
        sdpa: Some(SdpaProbe {
            dtype: "bfloat16".into(),
            batch: 1,
            heads: 16,
            head_dim: 128,
            causal: true,
            backends: vec![
                backend(
                    SdpaBackend::FlashAttention,
                    vec![
                        run(1024, 0.046, 4.1),
                        run(4096, 0.322, 16.3),
                        run(16384, 3.395, 65.0),
                    ],
                ),
                backend(
                    SdpaBackend::CudnnAttention,
                    vec![
                        run(1024, 0.027, 4.0),
                        run(4096, 0.158, 16.0),
                        run(16384, 1.71, 64.0),
                    ],
                ),
                backend(
                    SdpaBackend::Math,
                    vec![
                        run(1024, 0.545, 212.0),
                        run(4096, 6.674, 2496.1),
                        run(16384, 100.489, 38400.3),
                    ],
                ),
                SdpaBackendProbe {
                    backend: SdpaBackend::EfficientAttention,
                    available: false,
                    error: Some("Memory efficient kernel not used because: <reason & more>".into()),
                    runs: vec![],
                },
            ],
            default: Some(SdpaDefault {
                picked: Some(SdpaBackend::CudnnAttention),
                runs: vec![
                    run(1024, 0.048, 8.0),
                    run(4096, 0.217, 28.0),
                    run(16384, 1.721, 112.0),
                ],
                ..Default::default()
            }),
            ..Default::default()
        }),
        all_reduce: Some(AllReduceProbe {
            world: 2,
            nccl_version: Some("2.28.9".into()),
            results: [(1, 38.5), (64, 265.2), (1024, 327.1)]
                .iter()
                .map(|(m, b)| AllReduceRun {
                    size_mib: *m,
                    busbw_gbps: Some(*b),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    };
    s.deep = Some(DeepFacts {
        runs: vec![ProbeRun {
            interpreter: "/opt/venv/bin/python".into(),
            status: ProbeStatus::Ok,
            result: Some(result),
            ..Default::default()
        }],
        ..Default::default()
    });
    s.multigpu = Some(MultiGpuFacts {
        topology: Some(Topology {
            source: "nvml".into(),
            gpus: (0..2)
                .map(|i| TopologyGpu {
                    index: i,
                    name: "NVIDIA H200".into(),
                    ..Default::default()
                })
                .collect(),
            pairs: vec![GpuPair {
                a: 0,
                b: 1,
                level: Some(PathLevel::System),
                nvlinks: 18,
                p2p_read: Some(P2pStatus::Ok),
                ..Default::default()
            }],
        }),
        ..Default::default()
    });
    s
}

fn html_of(s: &Snapshot, findings: &[Finding]) -> String {
    render_html(&Report {
        snapshot: s,
        findings,
    })
}

#[test]
fn is_one_self_contained_document() {
    let html = html_of(&h200(), &[]);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    for banned in [
        "<script",
        "src=\"http",
        "href=\"http",
        "<link ",
        "@import",
        "url(",
    ] {
        assert!(
            !html.contains(banned),
            "external or active content: {banned}"
        );
    }
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    // Two attention plots, the topology matrix, the all-reduce bars.
    assert_eq!(html.matches("<svg").count(), 4);
}

#[test]
fn plots_carry_every_measured_backend_and_the_topology() {
    let html = html_of(&h200(), &[]);
    assert!(html.contains("default (ran cuDNN)"));
    for name in [">flash<", ">cuDNN<", ">math<"] {
        assert!(html.contains(name), "{name}");
    }
    // 16k math point: 100 ms.
    assert!(
        html.contains("math: 100 ms at 16384 tokens"),
        "tooltip of the math point"
    );
    assert!(html.contains(">NV18<"));
    assert!(html.contains(">327.1<"));
    // The unavailable backend's reason is escaped.
    assert!(html.contains("&lt;reason &amp; more&gt;"));
}

#[test]
fn findings_are_escaped_and_sectioned() {
    let f = Finding {
        code: "ACC001".into(),
        layer: Layer::Acceleration,
        severity: Severity::Error,
        title: "attention falls back <math>".into(),
        evidence: vec!["a \"quoted\" fact".into()],
        cause: "because".into(),
        fix: vec![cudoctor_analyse::FixStep::Shell("unset X && run".into())],
        confidence: Confidence::Certain,
        id: "ACC001".into(),
        caused_by: None,
        caused_by_id: None,
        about: vec![],
    };
    let html = html_of(&h200(), &[f]);
    assert!(html.contains("attention falls back &lt;math&gt;"));
    assert!(html.contains("unset X &amp;&amp; run"));
    assert!(html.contains("<section id=\"acceleration\">"));
    assert!(
        html.contains("first broken link: Accelerated paths")
            || html.contains("The first broken link: Accelerated paths")
    );
}

/// The verdict comes first, large and in the worst finding's colour; then the host and the
/// date; each finding's code links to its rule's page at the end of the file.
#[test]
fn the_verdict_leads_with_host_date_and_linked_rules() {
    let f = Finding {
        code: "KRN001".into(),
        layer: Layer::Kernels,
        severity: Severity::Error,
        title: "no kernel image".into(),
        evidence: vec![],
        cause: String::new(),
        fix: vec![],
        confidence: Confidence::Certain,
        id: "KRN001".into(),
        caused_by: None,
        caused_by_id: None,
        about: vec![],
    };
    let mut s = h200();
    s.host.hostname = Some("gpu<7>".into());
    s.collected_at = Some(1_796_402_400);
    let html = html_of(&s, &[f]);
    let body = &html[html.find("<body>").unwrap()..];
    assert!(
        body.trim_start_matches("<body>\n")
            .starts_with("<h1 class=\"verdict error\">1 error"),
        "{body}"
    );
    assert!(html.contains("host <b>gpu&lt;7&gt;</b>"), "{html}");
    assert!(html.contains("collected 2026-12-04 "), "{html}");
    assert!(html.contains("<a class=\"code\" href=\"#rule-KRN001\">[KRN001]</a>"));
    assert!(html.contains("<div class=\"rule\" id=\"rule-KRN001\">"));
    assert!(html.contains("<h4>How to fix</h4>"));
    let healthy = html_of(&h200(), &[]);
    assert!(healthy.contains("<h1 class=\"verdict ok\">"));
    assert!(!healthy.contains("id=\"rules\""));
}

#[test]
fn a_snapshot_without_deep_facts_still_renders() {
    let s = Snapshot::new("0.1.0", "/");
    let html = html_of(&s, &[]);
    assert!(html.contains("No problems found."));
    assert!(!html.contains("<svg"));
}

#[test]
fn ticks_read_like_sequence_lengths() {
    assert_eq!(tick(1024.0), "1k");
    assert_eq!(tick(16384.0), "16k");
    assert_eq!(tick(0.01), "0.01");
    assert_eq!(tick(100.0), "100");
}

#[test]
fn deep_facts_summarise_the_probe() {
    let facts = deep_layer_facts(Layer::Acceleration, &h200());
    assert!(facts
        .iter()
        .any(|f| f.value.starts_with("default runs cuDNN")));
    let facts = deep_layer_facts(Layer::Multigpu, &h200());
    assert!(facts.iter().any(|f| f.value == "NV18, P2P ok"));
    assert!(facts
        .iter()
        .any(|f| f.value.contains("1024 MiB 327.1 GB/s")));
}
