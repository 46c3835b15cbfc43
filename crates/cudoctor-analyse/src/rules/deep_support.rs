//! Shared views for the acceleration and multi-GPU rules: the runtime probes' results with a
//! label for the environment each came from, number formatting, and test builders.

use cudoctor_snapshot::{DeepFacts, ProbeResult, ProbeRun};

use crate::Context;

/// One probe run that reported.
#[derive(Debug, Clone, Copy)]
pub struct ProbeView<'a> {
    pub run: &'a ProbeRun,
    pub result: &'a ProbeResult,
}

impl ProbeView<'_> {
    /// What the probe's findings are about: the runtime of its environment.
    pub fn subject(&self) -> crate::Subject {
        crate::Subject::Runtime {
            env: self
                .run
                .env_prefix
                .clone()
                .unwrap_or_else(|| self.run.interpreter.clone()),
        }
    }

    /// "torch 2.11.0+cu130 in /opt/venv", or the interpreter when torch did not report.
    pub fn label(&self) -> String {
        let place = self
            .run
            .env_prefix
            .as_deref()
            .unwrap_or(&self.run.interpreter);
        match &self.result.torch {
            Some(t) => format!("torch {} in {place}", t.version),
            None => place.to_string(),
        }
    }
}

/// Every probe run with a report, in the order they ran.
pub fn probes<'a>(ctx: &Context<'a>) -> Vec<ProbeView<'a>> {
    ctx.snap
        .deep
        .iter()
        .flat_map(DeepFacts::results)
        .map(|(run, result)| ProbeView { run, result })
        .collect()
}

pub use crate::views::units::{mib, ms};

/// The first non-empty line of a (possibly long) error text, at most 300 characters.
pub fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(300)
        .collect()
}

/// A value of an environment variable that switches a feature on (`1`, `true`, `yes`).
pub fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

#[cfg(test)]
pub mod fixtures {
    //! The real 2xH200 machine's probe results (tests/fixtures/real/h200x2-torch2.11-cu130:
    //! sdpa.txt, nccl_probe.txt, torch_info.txt), built by hand.

    use cudoctor_snapshot::{
        AllReduceProbe, AllReduceRun, CudaRuntime, DeepFacts, DeviceProbe, GpuPair, MultiGpuFacts,
        NvLink, P2pStatus, PathLevel, ProbeResult, ProbeRun, ProbeStatus, SdpaBackend,
        SdpaBackendProbe, SdpaDefault, SdpaProbe, SdpaRun, Snapshot, Topology, TopologyGpu,
        TorchInfo,
    };

    fn run(seq_len: u32, ms: f64, peak_mib: f64) -> SdpaRun {
        SdpaRun {
            seq_len,
            ms: Some(ms),
            peak_mib: Some(peak_mib),
            ..Default::default()
        }
    }

    pub fn backend(b: SdpaBackend, runs: Vec<SdpaRun>) -> SdpaBackendProbe {
        SdpaBackendProbe {
            backend: b,
            available: true,
            error: None,
            runs,
        }
    }

    pub fn math_runs() -> Vec<SdpaRun> {
        vec![
            run(1024, 0.545, 212.0),
            run(4096, 6.674, 2496.1),
            run(16384, 100.489, 38400.3),
        ]
    }

    pub fn h200_result() -> ProbeResult {
        ProbeResult {
            probe_version: 1,
            complete: true,
            torch: Some(TorchInfo {
                version: "2.11.0+cu130".into(),
                cuda: Some("13.0".into()),
                cudnn: Some(91900),
                nccl: Some("2.28.9".into()),
                ..Default::default()
            }),
            cuda: Some(CudaRuntime {
                available: true,
                device_count: Some(2),
                ..Default::default()
            }),
            devices: (0..2)
                .map(|i| DeviceProbe {
                    index: i,
                    name: "NVIDIA H200".into(),
                    capability: Some("9.0".into()),
                    bf16_supported: Some(true),
                    matmul_ok: Some(true),
                    ..Default::default()
                })
                .collect(),
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
                        SdpaBackend::EfficientAttention,
                        vec![
                            run(1024, 0.063, 4.0),
                            run(4096, 0.522, 16.0),
                            run(16384, 6.569, 64.0),
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
                    backend(SdpaBackend::Math, math_runs()),
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
                results: vec![
                    AllReduceRun {
                        size_mib: 1,
                        ms: Some(0.027),
                        algbw_gbps: Some(38.5),
                        busbw_gbps: Some(38.5),
                    },
                    AllReduceRun {
                        size_mib: 64,
                        ms: Some(0.253),
                        algbw_gbps: Some(265.2),
                        busbw_gbps: Some(265.2),
                    },
                    AllReduceRun {
                        size_mib: 1024,
                        ms: Some(3.283),
                        algbw_gbps: Some(327.1),
                        busbw_gbps: Some(327.1),
                    },
                ],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Two H200s joined by 18 NVLink links (smi_topo.txt: NV18; smi_topo_p2p.txt: OK).
    pub fn h200_topology() -> MultiGpuFacts {
        let bus = ["00000000:00:06.0", "00000000:00:07.0"];
        let gpus = (0..2u32)
            .map(|i| TopologyGpu {
                index: i,
                name: "NVIDIA H200".into(),
                bus_id: Some(bus[i as usize].into()),
                nvlinks: (0..18)
                    .map(|l| NvLink {
                        link: l,
                        active: true,
                        remote_bus_id: Some(bus[1 - i as usize].into()),
                        remote_kind: Some("gpu".into()),
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        MultiGpuFacts {
            topology: Some(Topology {
                source: "nvml".into(),
                gpus,
                pairs: vec![GpuPair {
                    a: 0,
                    b: 1,
                    level: Some(PathLevel::System),
                    nvlinks: 18,
                    p2p_read: Some(P2pStatus::Ok),
                    p2p_write: Some(P2pStatus::Ok),
                    p2p_nvlink: Some(P2pStatus::Ok),
                    p2p_atomics: Some(P2pStatus::Ok),
                }],
            }),
            ..Default::default()
        }
    }

    /// The healthy H200 machine with its probe results and topology.
    pub fn h200_deep() -> Snapshot {
        let mut s = crate::testing::h200();
        s.deep = Some(DeepFacts {
            runs: vec![ProbeRun {
                interpreter: "/opt/venv/bin/python".into(),
                env_prefix: Some("/opt/venv".into()),
                status: ProbeStatus::Ok,
                result: Some(h200_result()),
                ..Default::default()
            }],
            ..Default::default()
        });
        s.multigpu = Some(h200_topology());
        s
    }

    /// The probe result of the first run, to change in a test.
    pub fn result_mut(s: &mut Snapshot) -> &mut ProbeResult {
        s.deep
            .as_mut()
            .and_then(|d| d.runs.first_mut())
            .and_then(|r| r.result.as_mut())
            .expect("h200_deep has a result")
    }
}
