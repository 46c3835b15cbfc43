//! The facts shown under each layer heading, shared by the text and Markdown renderers.

use cudoctor_analyse::Layer;
use cudoctor_snapshot::{Framework, Outcome, PythonEnvKind, Snapshot};

/// One line of facts: a short label and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub label: String,
    pub value: String,
    /// The line says that nothing was found (no driver, no nvcc): a layer of such lines alone
    /// gets no "fine" mark.
    pub absent: bool,
}

pub(crate) fn fact(label: impl Into<String>, value: impl Into<String>) -> Fact {
    Fact {
        label: label.into(),
        value: value.into(),
        absent: false,
    }
}

/// A line saying that nothing of `label` was found.
pub(crate) fn absent(label: impl Into<String>, value: impl Into<String>) -> Fact {
    Fact {
        absent: true,
        ..fact(label, value)
    }
}

pub fn layer_facts(layer: Layer, s: &Snapshot) -> Vec<Fact> {
    match layer {
        Layer::Platform => platform(s),
        Layer::Driver => driver(s),
        Layer::Toolkit => toolkit(s),
        Layer::Framework => framework(s),
        Layer::Kernels => kernels(s),
        Layer::Libraries => libraries(s),
        Layer::Acceleration | Layer::Multigpu => crate::deep_layer_facts(layer, s),
    }
}

fn platform(s: &Snapshot) -> Vec<Fact> {
    let h = &s.host;
    let mut os = format!("{} {}", h.distro.as_deref().unwrap_or(&h.os), h.arch);
    if let Some(k) = &h.kernel {
        os.push_str(&format!(", kernel {k}"));
    }
    let mut out = Vec::new();
    if let Some(name) = &h.hostname {
        out.push(fact("host", name.clone()));
    }
    out.push(fact("system", os));
    if let Some(cpu) = &h.cpu_model {
        let cores = h
            .cpu_count
            .map(|n| format!(", {n} CPUs"))
            .unwrap_or_default();
        out.push(fact("CPU", format!("{cpu}{cores}")));
    }
    if let Some(v) = &h.glibc {
        out.push(fact("glibc", v.clone()));
    }
    if let Some(shm) = &h.dev_shm {
        out.push(fact(
            "/dev/shm",
            match shm.size_mib {
                Some(mib) => format!("{mib} MiB ({})", shm.fs_type),
                None => format!("{} without a size limit (half of memory)", shm.fs_type),
            },
        ));
    }
    if let Some(cc) = &h.compiler {
        let mut line = cc.path.clone();
        if let Some(r) = &cc.resolved {
            line.push_str(&format!(" -> {r}"));
        }
        if let Some(v) = &cc.version {
            line.push_str(&format!(" ({v})"));
        }
        out.push(fact("compiler", line));
    }
    let tools: Vec<String> = [("cmake", &h.cmake), ("ninja", &h.ninja)]
        .iter()
        .filter_map(|(name, t)| t.as_ref().map(|t| format!("{name} {}", t.path)))
        .collect();
    if h.compiler.is_some() || !tools.is_empty() {
        let missing: Vec<&str> = [("cmake", &h.cmake), ("ninja", &h.ninja)]
            .iter()
            .filter(|(_, t)| t.is_none())
            .map(|(n, _)| *n)
            .collect();
        let mut line = tools.join(", ");
        if !missing.is_empty() {
            if !line.is_empty() {
                line.push_str("; ");
            }
            line.push_str(&format!("no {} on PATH", missing.join(" or ")));
        }
        out.push(fact("build tools", line));
    }
    if h.is_jetson() {
        let mut jetson = h.board_model.clone().unwrap_or_else(|| "Jetson".into());
        if let Some(l4t) = &h.l4t_release {
            jetson.push_str(&format!(" ({})", l4t.trim_start_matches("# ")));
        }
        out.push(fact("jetson", jetson));
    }
    if let Some(c) = &s.platform.container {
        out.push(fact(
            "container",
            format!("{} ({})", c.runtime, c.evidence.join("; ")),
        ));
    }
    if s.platform.wsl {
        out.push(fact("WSL", "yes"));
    }
    if s.root != "/" {
        out.push(fact("root", s.root.clone()));
    }
    out
}

fn driver(s: &Snapshot) -> Vec<Fact> {
    let d = &s.driver;
    let mut out = Vec::new();
    match &d.version {
        Some(v) => {
            let mut line = v.value.clone();
            if let Some(m) = &d.kernel_module {
                line.push_str(&format!(" ({} kernel module)", m.flavour.name()));
            }
            line.push_str(&format!("  [{}]", v.source));
            out.push(fact("driver", line));
        }
        None if d.not_read() => out.push(absent(
            "driver",
            "unknown (a Windows tree without a readable nvml.dll or nvcuda.dll)",
        )),
        None => out.push(absent("driver", "none found")),
    }
    if let Some(c) = &d.max_cuda {
        out.push(fact(
            "max CUDA",
            format!(
                "{}  [{}]  (a ceiling, not an installed toolkit)",
                c.value, c.source
            ),
        ));
    }
    for g in &d.gpus {
        let mut line = g.name.clone();
        if let Some(cc) = &g.compute_capability {
            line.push_str(&format!("  cc {cc}"));
        }
        if let (Some(used), Some(total)) = (g.memory_used_mib, g.memory_total_mib) {
            line.push_str(&format!("  {used}/{total} MiB"));
        }
        if let Some(bus) = &g.bus_id {
            line.push_str(&format!("  {bus}"));
        }
        if g.mig_enabled == Some(true) {
            line.push_str("  MIG on");
        }
        out.push(fact(format!("GPU {}", g.index), line));
    }
    let failed: Vec<String> = d
        .attempts
        .iter()
        .filter(|a| matches!(a.outcome, Outcome::Failed | Outcome::TimedOut))
        .map(|a| format!("{}: {}", a.source, a.detail))
        .collect();
    for f in failed {
        out.push(fact("probe failed", f));
    }
    out
}

fn toolkit(s: &Snapshot) -> Vec<Fact> {
    let t = &s.toolkit;
    let mut out = Vec::new();
    match &t.nvcc_on_path {
        Some(n) => out.push(fact(
            "nvcc",
            format!(
                "{} -> {} ({})",
                n.path,
                n.resolved,
                n.version.as_deref().unwrap_or("version unknown")
            ),
        )),
        None => out.push(absent("nvcc", "not on PATH")),
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = s.env.get(var) {
            out.push(fact(var, v.clone()));
        }
    }
    if let Some(l) = &t.usr_local_cuda {
        let target = l.resolved.clone().unwrap_or_else(|| "broken link".into());
        let via = if l.hops.len() > 1 {
            format!(" (via {})", l.hops[..l.hops.len() - 1].join(" -> "))
        } else {
            String::new()
        };
        out.push(fact("/usr/local/cuda", format!("{target}{via}")));
    }
    for tk in &t.toolkits {
        out.push(fact(
            "toolkit",
            format!(
                "{} {}  [{}]",
                tk.version.as_deref().unwrap_or("?"),
                tk.root,
                tk.found_via.join(", ")
            ),
        ));
    }
    if let Some(l) = s.env.get("LD_LIBRARY_PATH") {
        out.push(fact("LD_LIBRARY_PATH", l.clone()));
    }
    out
}

fn framework(s: &Snapshot) -> Vec<Fact> {
    let mut out = Vec::new();
    for e in &s.python_envs {
        let kind = match e.kind {
            PythonEnvKind::Venv => "venv",
            PythonEnvKind::Conda => "conda",
            PythonEnvKind::System => "system",
        };
        out.push(fact(
            "python env",
            format!(
                "{} ({kind}, Python {}, via {})",
                e.prefix,
                e.python_version.as_deref().unwrap_or("?"),
                e.found_via.join(", ")
            ),
        ));
        if let Some(t) = &e.torch {
            let cuda = match (&t.cuda, &t.hip) {
                (Some(c), _) => format!("CUDA {c}"),
                (None, Some(h)) => format!("ROCm {h}"),
                (None, None) => "CPU only".into(),
            };
            out.push(fact("  torch", format!("{} ({cuda})", t.version)));
        }
        for b in e
            .frameworks
            .iter()
            .filter(|b| b.framework != Framework::Torch)
        {
            out.push(fact(
                format!("  {}", b.framework.name()),
                framework_build(b),
            ));
        }
        let named: Vec<String> = e
            .packages
            .iter()
            .filter(|p| p.name != "torch")
            .map(|p| format!("{} {}", p.name, p.version))
            .collect();
        if !named.is_empty() {
            out.push(fact("  packages", named.join(", ")));
        }
        for c in &e.conda_packages {
            out.push(fact("  conda", format!("{} {}", c.name, c.version)));
        }
    }
    if out.is_empty() {
        out.push(absent("python env", "none found"));
    }
    out
}

/// "0.10.2 (jax-cuda12-plugin, CUDA 12.9)", "0.5.23 (no CUDA of its own: torch's)".
fn framework_build(b: &cudoctor_snapshot::FrameworkBuild) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !b.package.eq_ignore_ascii_case(b.framework.name()) {
        parts.push(b.package.clone());
    }
    match &b.cuda {
        Some(c) => parts.push(format!("CUDA {}", c.label())),
        None if matches!(b.framework, Framework::Vllm | Framework::Sglang) => {
            parts.push("CUDA of the torch it runs on".into())
        }
        None => parts.push("no CUDA build".into()),
    }
    if let Some(d) = &b.cudnn {
        parts.push(format!("cuDNN {d}"));
    }
    if !b.ships.is_empty() {
        parts.push(format!(
            "{} shared object{}",
            b.ships.len(),
            if b.ships.len() == 1 { "" } else { "s" }
        ));
    }
    format!("{} ({})", b.version, parts.join(", "))
}

fn kernels(s: &Snapshot) -> Vec<Fact> {
    let Some(k) = &s.kernel_images else {
        return Vec::new();
    };
    let with_code: Vec<_> = k
        .libraries
        .iter()
        .filter(|l| !l.sass.is_empty() || !l.ptx.is_empty())
        .collect();
    if with_code.is_empty() {
        return vec![absent(
            "scanned",
            format!("no CUDA kernels found ({})", k.scope),
        )];
    }
    let mut out = vec![fact(
        "scanned",
        format!(
            "{} libraries with CUDA kernels ({})",
            with_code.len(),
            k.scope
        ),
    )];
    for l in with_code
        .iter()
        .filter(|l| l.path.contains("libtorch_cuda"))
    {
        let archs: Vec<&str> = l.sass.iter().chain(&l.ptx).map(String::as_str).collect();
        out.push(fact("torch", format!("{}  ({})", archs.join(" "), l.path)));
    }
    out
}

/// Library families shown under "Libraries": what torch really loads.
const SHOWN: &[(&str, &str)] = &[
    ("libcudart.so", "CUDA runtime"),
    ("libcudnn.so", "cuDNN"),
    ("libnccl.so", "NCCL"),
    ("libcublas.so", "cuBLAS"),
];

fn libraries(s: &Snapshot) -> Vec<Fact> {
    let Some(l) = &s.loader else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in &l.processes {
        for (prefix, label) in SHOWN {
            for o in p
                .objects
                .iter()
                .filter(|o| o.soname.as_deref().unwrap_or(&o.path).starts_with(prefix))
            {
                let path = o.real_path.as_deref().unwrap_or(&o.path);
                // A wheel's private copy (auditwheel) serves that wheel's extension only: it is
                // not a second runtime of torch's, and the line says whose it is.
                let whose = cudoctor_ldso::is_vendored_copy(path)
                    .then(|| path.rsplit_once('/'))
                    .flatten()
                    .and_then(|(dir, _)| dir.rsplit('/').next()?.strip_suffix(".libs"))
                    .map(|pkg| format!("  ({pkg}'s private copy)"))
                    .unwrap_or_default();
                out.push(fact(*label, format!("{path}  [{}]{whose}", p.env_prefix)));
            }
        }
    }
    out
}
