//! The facts of a snapshot that matter when two machines are compared, each a (topic, name,
//! value) triple with a stable name, so the same fact can be lined up across snapshots. The
//! fleet report and `diff` both compare these; raw field changes come only after them.

use std::collections::BTreeMap;

use cudoctor_snapshot::{ProbeStatus, Snapshot};
use serde::{Deserialize, Serialize};

/// What a fact is about, in the order a reader should see changes: the driver first, the
/// measurements of `--deep` and the host last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topic {
    Driver,
    Gpus,
    Toolkit,
    Framework,
    Packages,
    Nccl,
    Libraries,
    Deep,
    Host,
}

impl Topic {
    pub fn title(self) -> &'static str {
        match self {
            Topic::Driver => "Driver",
            Topic::Gpus => "GPUs",
            Topic::Toolkit => "CUDA Toolkit",
            Topic::Framework => "Framework builds",
            Topic::Packages => "Packages",
            Topic::Nccl => "NCCL",
            Topic::Libraries => "CUDA libraries loaded",
            Topic::Deep => "Runtime probes (--deep)",
            Topic::Host => "Host",
        }
    }
}

/// One comparable fact. `measured` holds the number behind a timing or bandwidth, which is
/// compared by relative change rather than by its spelling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub topic: Topic,
    pub name: String,
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<f64>,
}

impl Fact {
    fn new(topic: Topic, name: impl Into<String>, value: impl Into<String>) -> Fact {
        Fact {
            topic,
            name: name.into(),
            value: value.into(),
            measured: None,
        }
    }

    fn measured(topic: Topic, name: impl Into<String>, value: f64, unit: &str) -> Fact {
        Fact {
            topic,
            name: name.into(),
            value: format!("{} {unit}", round3(value)),
            measured: Some(value),
        }
    }
}

/// Value of a fact the snapshot does not have.
pub const ABSENT: &str = "(absent)";

/// Sonames of the CUDA libraries whose loaded copy is worth comparing.
const CUDA_LIBRARIES: &[&str] = &[
    "libcudart",
    "libcudnn",
    "libnccl",
    "libcublas",
    "libcublasLt",
    "libcufft",
    "libcurand",
    "libcusolver",
    "libcusparse",
    "libcusparseLt",
    "libnvrtc",
    "libnvJitLink",
    "libcupti",
    "libcuda",
    "libnvshmem_host",
    "libcufile",
    "libnvToolsExt",
];

/// Every fact of `s` that matters, sorted by topic then name; names are unique.
/// Each Python environment's role, by its prefix: what lines it up with the same environment
/// of another machine whatever its path — its name (a conda env's, or the directory of a venv:
/// `train/.venv` for `/home/a/train/.venv`, `system` for the system Python) and its Python
/// (major.minor): `train/.venv (Python 3.12)`; its torch is the facts' own (`torch in ...`).
/// Two environments of one machine with the same role are told apart by `#2`, `#3` in the
/// order of the snapshot.
pub fn env_roles(s: &Snapshot) -> BTreeMap<String, String> {
    use cudoctor_snapshot::PythonEnvKind;
    let mut roles = BTreeMap::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for env in &s.python_envs {
        let parts: Vec<&str> = env
            .prefix
            .split(['/', '\\'])
            .filter(|p| !p.is_empty())
            .collect();
        let name = match (env.kind, parts.as_slice()) {
            (PythonEnvKind::System, _) | (_, []) => "system".to_string(),
            (_, [.., parent, last])
                if matches!(*last, ".venv" | "venv" | "env" | ".env" | "virtualenv") =>
            {
                format!("{parent}/{last}")
            }
            (_, [.., last]) => (*last).to_string(),
        };
        let python = env
            .python_version
            .as_deref()
            .map(|v| v.split('.').take(2).collect::<Vec<_>>().join("."))
            .map(|v| format!(" (Python {v})"))
            .unwrap_or_default();
        let mut role = format!("{name}{python}");
        let n = seen.entry(role.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            role.push_str(&format!(" #{n}"));
        }
        roles.insert(env.prefix.clone(), role);
    }
    roles
}

pub fn stack_facts(s: &Snapshot) -> Vec<Fact> {
    let mut out = Vec::new();
    driver_facts(s, &mut out);
    gpu_facts(s, &mut out);
    health_facts(s, &mut out);
    toolkit_facts(s, &mut out);
    let roles = env_roles(s);
    env_facts(s, &roles, &mut out);
    multigpu_facts(s, &mut out);
    loaded_library_facts(s, &roles, &mut out);
    if let Some(deep) = &s.deep {
        for run in &deep.runs {
            probe_facts(run, &roles, &mut out);
        }
    }
    host_facts(s, &mut out);
    out.sort_by(|a, b| a.topic.cmp(&b.topic).then_with(|| a.name.cmp(&b.name)));
    out.dedup_by(|a, b| a.topic == b.topic && a.name == b.name);
    out
}

/// The role of the environment at `prefix` ([`env_roles`]), else its prefix.
fn role_of(roles: &BTreeMap<String, String>, prefix: &str) -> String {
    roles
        .get(prefix)
        .cloned()
        .unwrap_or_else(|| prefix.to_string())
}

/// The driver's version, the CUDA it supports, its kernel module.
fn driver_facts(s: &Snapshot, out: &mut Vec<Fact>) {
    let d = &s.driver;
    let or_unknown = |v: Option<&str>| v.unwrap_or("unknown").to_string();
    out.push(Fact::new(
        Topic::Driver,
        "driver version",
        or_unknown(d.version.as_ref().map(|v| v.value.as_str())),
    ));
    out.push(Fact::new(
        Topic::Driver,
        "max CUDA",
        or_unknown(d.max_cuda.as_ref().map(|v| v.value.as_str())),
    ));
    if let Some(m) = &d.kernel_module {
        out.push(Fact::new(Topic::Driver, "kernel module", m.flavour.name()));
    }
}

/// The GPUs: how many, which models, capabilities, memory, MIG and persistence modes.
fn gpu_facts(s: &Snapshot, out: &mut Vec<Fact>) {
    let d = &s.driver;
    out.push(Fact::new(
        Topic::Gpus,
        "GPU count",
        d.gpus.len().to_string(),
    ));
    if !d.gpus.is_empty() {
        let models = counted(d.gpus.iter().map(|g| g.name.as_str()));
        out.push(Fact::new(Topic::Gpus, "GPU model", models));
        let ccs = counted(
            d.gpus
                .iter()
                .map(|g| g.compute_capability.as_deref().unwrap_or("unknown")),
        );
        out.push(Fact::new(Topic::Gpus, "compute capability", ccs));
        let mem = counted(d.gpus.iter().map(|g| {
            g.memory_total_mib
                .map(|m| format!("{m} MiB"))
                .unwrap_or_else(|| "unknown".into())
        }));
        out.push(Fact::new(Topic::Gpus, "GPU memory", mem));
        let word = |on: Option<bool>| on.map(|on| if on { "Enabled" } else { "Disabled" });
        let modes: [(&str, Vec<Option<&str>>); 2] = [
            (
                "MIG mode",
                d.gpus.iter().map(|g| word(g.mig_enabled)).collect(),
            ),
            (
                "persistence mode",
                d.gpus.iter().map(|g| word(g.persistence_enabled)).collect(),
            ),
        ];
        for (name, values) in modes {
            if values.iter().any(Option::is_some) {
                let v = counted(values.iter().map(|v| v.unwrap_or("unknown")));
                out.push(Fact::new(Topic::Gpus, name, v));
            }
        }
    }
}

/// The toolkits installed, nvcc on PATH, where /usr/local/cuda leads.
fn toolkit_facts(s: &Snapshot, out: &mut Vec<Fact>) {
    let t = &s.toolkit;
    let mut versions: Vec<&str> = t
        .toolkits
        .iter()
        .map(|k| k.version.as_deref().unwrap_or("unknown"))
        .collect();
    versions.sort_unstable();
    out.push(Fact::new(
        Topic::Toolkit,
        "toolkits",
        if versions.is_empty() {
            "none".to_string()
        } else {
            versions.join(", ")
        },
    ));
    out.push(Fact::new(
        Topic::Toolkit,
        "nvcc on PATH",
        match &t.nvcc_on_path {
            Some(n) => n
                .version
                .clone()
                .unwrap_or_else(|| "unknown version".into()),
            None => "none".into(),
        },
    ));
    if let Some(chain) = &t.usr_local_cuda {
        out.push(Fact::new(
            Topic::Toolkit,
            "/usr/local/cuda",
            chain.resolved.as_deref().unwrap_or("broken link"),
        ));
    }
}

/// Each environment's torch build and its packages (pip and conda), by the environment's role.
fn env_facts(s: &Snapshot, roles: &BTreeMap<String, String>, out: &mut Vec<Fact>) {
    for env in &s.python_envs {
        let role = role_of(roles, &env.prefix);
        let at = |what: &str| format!("{what} in {role}");
        if let Some(torch) = &env.torch {
            out.push(Fact::new(Topic::Framework, at("torch"), &torch.version));
            out.push(Fact::new(
                Topic::Framework,
                at("torch CUDA"),
                torch.cuda.as_deref().unwrap_or("none (CPU or ROCm build)"),
            ));
        }
        for p in &env.packages {
            // torch itself is the framework build above.
            if p.name != "torch" || env.torch.is_none() {
                out.push(Fact::new(Topic::Packages, at(&p.name), &p.version));
            }
        }
        for c in &env.conda_packages {
            let v = match &c.build {
                Some(b) => format!("{} ({b})", c.version),
                None => c.version.clone(),
            };
            out.push(Fact::new(
                Topic::Packages,
                at(&format!("conda {}", c.name)),
                v,
            ));
        }
    }
}

/// The NCCL libraries by origin and the links between GPUs.
fn multigpu_facts(s: &Snapshot, out: &mut Vec<Fact>) {
    if let Some(m) = &s.multigpu {
        let mut by_origin: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for lib in &m.nccl_libraries {
            by_origin
                .entry(lib.origin.as_str())
                .or_default()
                .push(lib.version.as_deref().unwrap_or("unknown"));
        }
        for (origin, mut v) in by_origin {
            v.sort_unstable();
            v.dedup();
            out.push(Fact::new(
                Topic::Nccl,
                format!("NCCL ({origin})"),
                v.join(", "),
            ));
        }
        if let Some(topo) = &m.topology {
            if !topo.pairs.is_empty() {
                let links = counted(topo.pairs.iter().map(|p| p.label()));
                out.push(Fact::new(Topic::Gpus, "GPU links", links));
            }
        }
    }
}

/// The CUDA libraries the environments' processes load, where from.
fn loaded_library_facts(s: &Snapshot, roles: &BTreeMap<String, String>, out: &mut Vec<Fact>) {
    if let Some(loader) = &s.loader {
        for p in &loader.processes {
            for o in &p.objects {
                let Some(soname) = o.soname.as_deref() else {
                    continue;
                };
                let stem = soname.split(".so").next().unwrap_or(soname);
                if !CUDA_LIBRARIES.contains(&stem) {
                    continue;
                }
                let path = o.real_path.as_deref().unwrap_or(&o.path);
                let shown = match cudoctor_collect::host::normalise(path)
                    .strip_prefix(p.env_prefix.as_str())
                {
                    Some(rest) => format!("<env>{rest}"),
                    None => cudoctor_collect::host::normalise(path),
                };
                out.push(Fact::new(
                    Topic::Libraries,
                    format!("{soname} in {}", role_of(roles, &p.env_prefix)),
                    shown,
                ));
            }
        }
    }
}

/// What one `--deep` probe of an environment measured: CUDA as torch sees it, matmul,
/// attention, torch.compile, all-reduce.
fn probe_facts(
    run: &cudoctor_snapshot::ProbeRun,
    roles: &BTreeMap<String, String>,
    out: &mut Vec<Fact>,
) {
    let env = role_of(roles, run.env_prefix.as_deref().unwrap_or(&run.interpreter));
    let at = |what: &str| format!("{what} in {env}");
    out.push(Fact::new(Topic::Deep, at("probe"), run.status.name()));
    let Some(r) = &run.result else { return };
    if run.status != ProbeStatus::Ok && run.status != ProbeStatus::NoTorch {
        return;
    }
    if let Some(c) = &r.cuda {
        out.push(Fact::new(
            Topic::Deep,
            at("CUDA available"),
            if c.available { "yes" } else { "no" },
        ));
        if let Some(n) = c.device_count {
            out.push(Fact::new(Topic::Deep, at("GPUs torch sees"), n.to_string()));
        }
    }
    if let Some(t) = &r.torch {
        if let Some(n) = &t.nccl {
            out.push(Fact::new(Topic::Deep, at("NCCL torch reports"), n));
        }
        if let Some(c) = t.cudnn {
            out.push(Fact::new(
                Topic::Deep,
                at("cuDNN torch reports"),
                c.to_string(),
            ));
        }
    }
    for dev in &r.devices {
        if let Some(ms) = dev.matmul_ms {
            out.push(Fact::measured(
                Topic::Deep,
                at(&format!("matmul on GPU {}", dev.index)),
                ms,
                "ms",
            ));
        }
    }
    if let Some(sdpa) = &r.sdpa {
        sdpa_facts(sdpa, &at, out);
    }
    if let Some(c) = &r.compile {
        let v = if c.skipped.is_some() {
            "skipped"
        } else if c.ok {
            "ok"
        } else {
            "failed"
        };
        out.push(Fact::new(Topic::Deep, at("torch.compile"), v));
    }
    if let Some(ar) = &r.all_reduce {
        if let Some(run) = ar.largest() {
            out.push(Fact::measured(
                Topic::Deep,
                at(&format!("all-reduce bus bandwidth at {} MiB", run.size_mib)),
                run.busbw_gbps.unwrap_or_default(),
                "GB/s",
            ));
        } else if let Some(e) = &ar.error {
            out.push(Fact::new(Topic::Deep, at("all-reduce"), first_line(e)));
        }
    }
}

/// The attention backends a probe ran: the one picked, those that run, each one's time and
/// memory at its longest sequence.
fn sdpa_facts(
    sdpa: &cudoctor_snapshot::SdpaProbe,
    at: &dyn Fn(&str) -> String,
    out: &mut Vec<Fact>,
) {
    if let Some(def) = &sdpa.default {
        out.push(Fact::new(
            Topic::Deep,
            at("attention backend picked"),
            def.picked.map(|b| b.short()).unwrap_or("unknown"),
        ));
    }
    let mut usable: Vec<&str> = sdpa
        .backends
        .iter()
        .filter(|b| b.available)
        .map(|b| b.backend.short())
        .collect();
    usable.sort_unstable();
    out.push(Fact::new(
        Topic::Deep,
        at("attention backends that run"),
        if usable.is_empty() {
            "none".to_string()
        } else {
            usable.join(", ")
        },
    ));
    for b in &sdpa.backends {
        if let Some(run) = b
            .runs
            .iter()
            .filter(|x| x.ms.is_some())
            .max_by_key(|x| x.seq_len)
        {
            let (backend, tokens) = (b.backend.short(), run.seq_len);
            let measured = |what: &str, value: f64, unit: &str| {
                let name = at(&format!("attention {backend}{what} at {tokens} tokens"));
                Fact::measured(Topic::Deep, name, value, unit)
            };
            out.push(measured("", run.ms.unwrap_or_default(), "ms"));
            if let Some(mib) = run.peak_mib {
                out.push(measured(" memory", mib, "MiB"));
            }
        }
    }
}

/// The host: distribution, kernel, container runtime.
fn host_facts(s: &Snapshot, out: &mut Vec<Fact>) {
    let h = &s.host;
    if let Some(distro) = &h.distro {
        out.push(Fact::new(Topic::Host, "distribution", distro));
    }
    if let Some(k) = &h.kernel {
        out.push(Fact::new(Topic::Host, "kernel", k));
    }
    out.push(Fact::new(
        Topic::Host,
        "container",
        s.platform
            .container
            .as_ref()
            .map(|c| c.runtime.as_str())
            .unwrap_or("none"),
    ));
}

/// The machine under the stack, where the snapshot has it: memory errors and repairs, clock
/// slowdowns, PCIe width (the generation drops at idle, so it is left out), the kernel log's
/// Xids, nouveau. A fleet report names the one node whose value differs.
fn health_facts(s: &Snapshot, out: &mut Vec<Fact>) {
    use cudoctor_snapshot::health::clocks_event as ev;
    use cudoctor_snapshot::NvmlQuery;
    let healths: Vec<_> = s
        .driver
        .gpus
        .iter()
        .filter_map(|g| g.health.as_ref())
        .collect();
    if !healths.is_empty() {
        let unknown = || "unknown".to_string();
        out.push(Fact::new(
            Topic::Gpus,
            "uncorrected ECC errors since driver load",
            counted(healths.iter().map(|h| {
                NvmlQuery::get(&h.ecc_volatile).map_or_else(unknown, |c| c.uncorrected.to_string())
            })),
        ));
        out.push(Fact::new(
            Topic::Gpus,
            "memory repair",
            counted(healths.iter().map(|h| {
                let remap = NvmlQuery::get(&h.row_remap);
                if remap.is_some_and(|r| r.failed) {
                    "row remapping failed"
                } else if remap.is_some_and(|r| r.pending) {
                    "row remap pending"
                } else if NvmlQuery::get(&h.retired_pages_pending) == Some(true) {
                    "page retirement pending"
                } else {
                    "none pending"
                }
            })),
        ));
        const SLOWDOWNS: u64 = ev::HW_SLOWDOWN
            | ev::HW_THERMAL_SLOWDOWN
            | ev::HW_POWER_BRAKE_SLOWDOWN
            | ev::SW_THERMAL_SLOWDOWN;
        out.push(Fact::new(
            Topic::Gpus,
            "clock slowdown",
            counted(healths.iter().map(|h| {
                match NvmlQuery::get(&h.clocks_event_reasons).map(|m| m & SLOWDOWNS) {
                    Some(0) => "none".to_string(),
                    Some(m) => ev::names(m).join(" + "),
                    None => unknown(),
                }
            })),
        ));
        out.push(Fact::new(
            Topic::Gpus,
            "PCIe link width",
            counted(healths.iter().map(|h| {
                match (
                    NvmlQuery::get(&h.pcie.current_width),
                    NvmlQuery::get(&h.pcie.max_width),
                ) {
                    (Some(c), Some(m)) => format!("x{c} of x{m}"),
                    _ => unknown(),
                }
            })),
        ));
    }
    let Some(h) = &s.health else { return };
    if let Some(nodes) = s.platform.gpu_device_nodes() {
        out.push(Fact::new(
            Topic::Gpus,
            "GPU device nodes",
            nodes.len().to_string(),
        ));
    }
    if matches!(
        h.kernel_log.read,
        cudoctor_snapshot::KernelLogRead::Read { .. }
    ) {
        let mut xids: Vec<u32> = h.kernel_log.xids.iter().map(|x| x.xid).collect();
        xids.sort_unstable();
        xids.dedup();
        out.push(Fact::new(
            Topic::Gpus,
            "Xid events since boot",
            if xids.is_empty() {
                "none".to_string()
            } else {
                let x: Vec<String> = xids.iter().map(|x| format!("Xid {x}")).collect();
                x.join(", ")
            },
        ));
    }
    if let Some(loaded) = h.nouveau_loaded {
        out.push(Fact::new(
            Topic::Driver,
            "nouveau module",
            if loaded { "loaded" } else { "not loaded" },
        ));
    }
}

/// `["H200", "H200", "A100"]` -> `1× A100, 2× H200`; a single kind stays bare.
fn counted<S: AsRef<str>>(items: impl Iterator<Item = S>) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for i in items {
        *counts.entry(i.as_ref().to_string()).or_default() += 1;
    }
    if counts.len() == 1 {
        return counts.into_keys().next().unwrap_or_default();
    }
    counts
        .iter()
        .map(|(v, n)| format!("{n}× {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

fn round3(v: f64) -> f64 {
    if v.abs() >= 100.0 {
        (v * 10.0).round() / 10.0
    } else {
        (v * 1000.0).round() / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::device_snapshot;

    #[test]
    fn the_real_h200_snapshot_gives_the_facts_that_matter() {
        let s = device_snapshot("2026-11-30-h200x2/check.json");
        let facts = stack_facts(&s);
        let get = |name: &str| {
            facts
                .iter()
                .find(|f| f.name == name)
                .map(|f| f.value.as_str())
                .unwrap_or_else(|| panic!("no fact {name}: {facts:#?}"))
        };
        assert_eq!(get("driver version"), "580.159.04");
        assert_eq!(get("max CUDA"), "13.0");
        assert_eq!(get("GPU count"), "2");
        assert_eq!(get("GPU model"), "NVIDIA H200");
        assert_eq!(get("compute capability"), "9.0");
        assert_eq!(get("toolkits"), "13.0.88");
        assert_eq!(get("torch in torch/.venv (Python 3.12)"), "2.11.0+cu130");
        assert_eq!(get("torchvision in torch/.venv (Python 3.12)"), "0.26.0");
        assert_eq!(get("NCCL (system)"), "2.28.3");
        assert_eq!(get("NCCL (wheel nvidia-nccl-cu13)"), "2.28.9");
        assert_eq!(
            get("libcudnn.so.9 in torch/.venv (Python 3.12)"),
            "<env>/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9"
        );
        // Sorted by topic, names unique.
        assert!(facts
            .windows(2)
            .all(|w| (w[0].topic, &w[0].name) < (w[1].topic, &w[1].name)));
    }

    #[test]
    fn deep_runs_give_measured_facts() {
        let s = device_snapshot("2026-11-30-h200x1/deep.json");
        let facts = stack_facts(&s);
        assert!(facts
            .iter()
            .any(|f| f.topic == Topic::Deep && f.name.starts_with("attention backend picked")));
        assert!(facts.iter().any(|f| f.measured.is_some()));
    }

    #[test]
    fn counted_and_normalised() {
        assert_eq!(counted(["b", "a", "b"].into_iter()), "1× a, 2× b");
        assert_eq!(counted(["a", "a"].into_iter()), "a");
        assert_eq!(
            cudoctor_collect::host::normalise("/e/lib/torch/lib/../../nvidia/x.so"),
            "/e/lib/nvidia/x.so"
        );
    }

    #[test]
    fn health_facts_line_up_across_nodes() {
        use cudoctor_snapshot::{GpuHealth, HealthFacts, NvmlQuery, RowRemap, XidEvent};
        let mut s = device_snapshot("2026-11-30-h200x2/check.json");
        let before = stack_facts(&s);
        assert!(
            !before.iter().any(|f| f.name == "memory repair"),
            "no health in an old snapshot"
        );
        for g in &mut s.driver.gpus {
            g.health = Some(GpuHealth {
                row_remap: Some(NvmlQuery {
                    rc: 0,
                    value: Some(RowRemap::default()),
                }),
                clocks_event_reasons: Some(NvmlQuery {
                    rc: 0,
                    value: Some(0x1),
                }),
                ..Default::default()
            });
        }
        s.driver.gpus[1].health.as_mut().unwrap().row_remap = Some(NvmlQuery {
            rc: 0,
            value: Some(RowRemap {
                pending: true,
                ..Default::default()
            }),
        });
        s.health = Some(HealthFacts {
            kernel_log: cudoctor_snapshot::KernelLog {
                read: cudoctor_snapshot::KernelLogRead::Read {
                    source: "/dev/kmsg".into(),
                    records: 3,
                    truncated: false,
                },
                xids: vec![XidEvent {
                    xid: 63,
                    pci: "0000:00:07".into(),
                    time_us: None,
                    text: String::new(),
                }],
                xids_dropped: 0,
            },
            ..Default::default()
        });
        let facts = stack_facts(&s);
        let value = |n: &str| facts.iter().find(|f| f.name == n).map(|f| f.value.clone());
        assert_eq!(
            value("memory repair").as_deref(),
            Some("1× none pending, 1× row remap pending")
        );
        assert_eq!(
            value("clock slowdown").as_deref(),
            Some("none"),
            "Idle is no slowdown"
        );
        assert_eq!(value("Xid events since boot").as_deref(), Some("Xid 63"));
        // The real pair's /dev: one node a GPU.
        assert_eq!(value("GPU device nodes").as_deref(), Some("2"));
    }
}

#[cfg(test)]
mod role_tests {
    use super::*;
    use cudoctor_snapshot::{PythonEnv, PythonEnvKind, TorchBuild};

    fn env(prefix: &str, kind: PythonEnvKind, python: &str, torch: bool) -> PythonEnv {
        PythonEnv {
            prefix: prefix.into(),
            kind,
            python_version: Some(python.into()),
            torch: torch.then(|| TorchBuild {
                version: "2.11.0+cu130".into(),
                ..TorchBuild::default()
            }),
            ..PythonEnv::default()
        }
    }

    /// Two nodes whose venvs live at different paths: the same facts, no package "changed".
    #[test]
    fn environments_line_up_by_role_not_by_path() {
        let mut a = Snapshot::new("0.1.0", "/");
        let mut b = Snapshot::new("0.1.0", "/");
        a.python_envs = vec![
            env(
                "/home/alice/train/.venv",
                PythonEnvKind::Venv,
                "3.12.3",
                true,
            ),
            env("/usr", PythonEnvKind::System, "3.12", false),
        ];
        b.python_envs = vec![
            env(
                "/scratch/bob/train/.venv",
                PythonEnvKind::Venv,
                "3.12.7",
                true,
            ),
            env("/usr", PythonEnvKind::System, "3.12", false),
        ];
        let names = |s: &Snapshot| -> Vec<String> {
            stack_facts(s)
                .into_iter()
                .filter(|f| f.topic == Topic::Framework)
                .map(|f| f.name)
                .collect()
        };
        assert_eq!(names(&a), names(&b));
        assert_eq!(
            env_roles(&a)["/home/alice/train/.venv"],
            "train/.venv (Python 3.12)"
        );
        assert_eq!(env_roles(&a)["/usr"], "system (Python 3.12)");
        let mut c = Snapshot::new("0.1.0", "/");
        c.python_envs = vec![
            env("/opt/conda/envs/x", PythonEnvKind::Conda, "3.11", true),
            env("/srv/conda/envs/x", PythonEnvKind::Conda, "3.11", true),
        ];
        let roles = env_roles(&c);
        assert_eq!(roles["/opt/conda/envs/x"], "x (Python 3.11)");
        assert_eq!(roles["/srv/conda/envs/x"], "x (Python 3.11) #2");
    }
}
