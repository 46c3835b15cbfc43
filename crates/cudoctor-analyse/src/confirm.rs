//! `explain`'s machine check: an explained cause is confirmed or refuted by the findings the
//! rules of `check` make on the same snapshot, never by a second set of rules. [`JUDGES`] maps
//! each cause to the finding codes that confirm it and to the facts those rules need, so that
//! their silence can refute it; the fix is the confirming findings' own (`check`'s, chosen by
//! `cudoctor_plan::remedy` where a build changes), step for step.

use cudoctor_explain::another_build::{self, LibraryFamily, SeenIn};
use cudoctor_explain::{Category, Engine, Explanation, FactsCheck, MachineCheck, Verdict};
use cudoctor_snapshot::Snapshot;
use std::collections::BTreeSet;

use crate::finding::{Finding, FixStep, Severity};
use crate::rule::Rule;
use crate::rules as r;

/// A fact of the snapshot the judging rules need before their silence means anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// The driver answered (its version is known).
    Driver,
    /// At least one GPU is listed.
    Gpus,
    /// A Python environment with torch was inspected.
    TorchEnv,
    /// ... and that torch is a CUDA build.
    TorchCudaBuild,
    /// The GPU code of the CUDA libraries was read.
    KernelImages,
    /// A CUDA toolkit (nvcc) was found.
    Toolkit,
    /// The libraries torch's process loads were resolved.
    Libraries,
    /// The runtime probe ran in an environment (`check --deep`).
    RuntimeProbe,
    /// An NCCL all-reduce was attempted across the GPUs (`check --deep` on several GPUs).
    AllReduce,
    /// The C headers of an environment's Python were looked for.
    PythonHeaders,
}

impl Needs {
    fn held(self, s: &Snapshot) -> bool {
        let torch = || s.python_envs.iter().filter_map(|e| e.torch.as_ref());
        match self {
            Needs::Driver => s.driver.version.is_some() && s.driver.libraries_failed.is_none(),
            Needs::Gpus => !s.driver.gpus.is_empty(),
            Needs::TorchEnv => torch().next().is_some(),
            Needs::TorchCudaBuild => torch().any(|t| t.cuda.is_some()),
            Needs::KernelImages => s.kernel_images.is_some(),
            Needs::Toolkit => s.toolkit.nvcc_on_path.is_some() || !s.toolkit.toolkits.is_empty(),
            Needs::Libraries => s.loader.is_some(),
            Needs::RuntimeProbe => s
                .deep
                .as_ref()
                .is_some_and(|d| d.results().next().is_some()),
            Needs::AllReduce => s.multigpu.as_ref().is_some_and(|m| !m.attempts.is_empty()),
            Needs::PythonHeaders => s.python_envs.iter().any(|e| e.headers.is_some()),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Needs::Driver => "a driver that answers",
            Needs::Gpus => "its GPUs",
            Needs::TorchEnv => "an environment with torch",
            Needs::TorchCudaBuild => "a CUDA build of torch",
            Needs::KernelImages => "the GPU code of the CUDA libraries",
            Needs::Toolkit => "a CUDA toolkit",
            Needs::Libraries => "the libraries torch's process loads",
            Needs::RuntimeProbe => "the runtime probe (check --deep)",
            Needs::AllReduce => "an NCCL all-reduce across the GPUs (check --deep)",
            Needs::PythonHeaders => "the C headers of an environment's Python",
        }
    }
}

/// Which findings of `check` judge one explained cause.
#[derive(Debug, Clone, Copy)]
pub struct Judges {
    pub category: Category,
    /// The signature's narrower check, when it asks for one (`check = "..."` in its data).
    pub check: Option<FactsCheck>,
    /// Codes whose findings (above info) confirm the cause.
    pub confirmed_by: &'static [&'static Rule],
    /// What these rules' silence says of the cause.
    pub silence: Silence,
}

/// What the judging rules' silence (no finding above info) says of a cause.
#[derive(Debug, Clone, Copy)]
pub enum Silence {
    /// It refutes the cause where the snapshot holds these facts.
    Refutes(&'static [Needs]),
    /// It says nothing, for this reason (the end of a sentence: "that does not rule this cause
    /// out, ...").
    SaysNothing(&'static str),
}

impl Silence {
    /// From the facts with which silence refutes the cause; `None` when silence says nothing
    /// because the cause depends on the program (an out-of-memory error depends on the
    /// workload, not the machine).
    const fn refuted_when(needs: Option<&'static [Needs]>) -> Silence {
        match needs {
            Some(needs) => Silence::Refutes(needs),
            None => Silence::SaysNothing("which depends on the program's own work"),
        }
    }
}

/// A [`Judges`] of a category, without a narrower check (a struct literal, so that the rules'
/// list lives as long as the table).
macro_rules! judges {
    ($category:expr, $confirmed_by:expr, $refuted_when:expr $(,)?) => {
        Judges {
            category: $category,
            check: None,
            confirmed_by: $confirmed_by,
            silence: Silence::refuted_when($refuted_when),
        }
    };
}

/// The cause-to-findings table. A cause absent here (windows_dll: `check` has no Windows rules;
/// gpu_hardware: no rule reads the GPU's health yet; not_environment) is never confirmed nor
/// refuted by a machine.
pub const JUDGES: &[Judges] = &[
    judges!(
        Category::DriverTooOld,
        &[
            &r::driver_too_old_for_torch::RULE,
            &r::toolkit_newer_than_driver::RULE,
            &r::require_cuda_unmet::RULE,
        ],
        Some(&[Needs::Driver, Needs::TorchCudaBuild]),
    ),
    judges!(
        Category::DriverMissing,
        &[
            &r::no_driver::RULE,
            &r::no_gpu_visible::RULE,
            &r::driver_library_mismatch::RULE,
            &r::driver_libraries_fail::RULE,
            &r::container_without_gpu::RULE,
            &r::wsl_linux_driver::RULE,
            &r::security_module_blocks_gpu::RULE,
            &r::visible_devices_hide_gpus::RULE,
        ],
        Some(&[Needs::Driver, Needs::Gpus]),
    ),
    Judges {
        category: Category::DriverMissing,
        check: Some(FactsCheck::VisibleDevices),
        confirmed_by: &[
            &r::visible_devices_hide_gpus::RULE,
            &r::no_driver::RULE,
            &r::no_gpu_visible::RULE,
            &r::container_without_gpu::RULE,
            &r::security_module_blocks_gpu::RULE,
        ],
        silence: Silence::Refutes(&[Needs::Driver, Needs::Gpus]),
    },
    Judges {
        category: Category::DriverMissing,
        check: Some(FactsCheck::CudaInit),
        confirmed_by: &[
            &r::cuda_unavailable_at_runtime::RULE,
            &r::gpu_smoke_test_fails::RULE,
            &r::no_driver::RULE,
            &r::driver_library_mismatch::RULE,
            &r::driver_libraries_fail::RULE,
            &r::security_module_blocks_gpu::RULE,
        ],
        silence: Silence::Refutes(&[Needs::Driver, Needs::RuntimeProbe]),
    },
    judges!(
        Category::CpuOnlyWheel,
        &[&r::cpu_only_torch::RULE],
        Some(&[Needs::Gpus, Needs::TorchCudaBuild]),
    ),
    judges!(
        Category::NoKernelImage,
        &[
            &r::torch_arch_list_lacks_gpu::RULE,
            &r::extension_lacks_gpu_arch::RULE,
            &r::arch_list_env::RULE,
        ],
        Some(&[Needs::Gpus, Needs::TorchEnv, Needs::KernelImages]),
    ),
    judges!(
        Category::ToolkitMismatch,
        &[
            &r::nvcc_torch_major_mismatch::RULE,
            &r::toolkit_selection_disagrees::RULE,
            &r::nvcc_cannot_target_gpu::RULE,
            &r::nvcc_flag_unsupported::RULE,
            // nvcc's "unsupported GNU version!" (crt/host_config.h's #error), read by TK013.
            &r::host_compiler_unsupported::RULE,
        ],
        Some(&[Needs::Toolkit, Needs::TorchCudaBuild]),
    ),
    judges!(
        Category::CudaHomeMissing,
        &[
            &r::nvcc_missing::RULE,
            &r::cuda_home_invalid::RULE,
            &r::toolkit_selection_disagrees::RULE,
        ],
        Some(&[Needs::TorchCudaBuild]),
    ),
    Judges {
        category: Category::CudaHomeMissing,
        check: Some(FactsCheck::PythonHeaders),
        confirmed_by: &[&r::python_headers_missing::RULE],
        silence: Silence::Refutes(&[Needs::Toolkit, Needs::TorchCudaBuild, Needs::PythonHeaders]),
    },
    judges!(
        Category::AbiMismatch,
        &[
            &r::unresolved_symbols::RULE,
            &r::companion_mismatch::RULE,
            &r::missing_library::RULE,
        ],
        Some(&[Needs::TorchEnv, Needs::Libraries]),
    ),
    judges!(
        Category::LibraryPath,
        // FW023: a framework beside (or without) torch whose CUDA libraries are nowhere;
        // under two majors it follows from FW020, whose fix is then the one given.
        &[
            &r::missing_library::RULE,
            &r::mixed_cuda_majors::RULE,
            &r::ld_library_path_shadows::RULE,
            &r::loaded_cuda_libraries::RULE,
            &r::wsl_linux_driver::RULE,
            &r::conda_cudatoolkit_mismatch::RULE,
            &r::framework_library_nowhere::RULE,
        ],
        Some(&[Needs::TorchEnv, Needs::Libraries]),
    ),
    judges!(
        Category::Nccl,
        &[
            &r::allreduce_fails::RULE,
            &r::p2p_disabled_by_env::RULE,
            &r::nccl_transport_forced_slow::RULE,
            &r::nccl_version_differs::RULE,
            &r::gpus_without_p2p::RULE,
            &r::socket_ifname_unusable::RULE,
            &r::infiniband_unused::RULE,
            &r::rendezvous_fails::RULE,
            &r::allreduce_bandwidth_low::RULE,
        ],
        Some(&[Needs::AllReduce]),
    ),
    judges!(
        Category::Container,
        &[
            &r::container_without_gpu::RULE,
            &r::require_cuda_unmet::RULE,
        ],
        None,
    ),
    // Two installed packages whose APIs do not fit (a name one asks of the other's module): only
    // `check --deep`'s framework probes import them and see it; a plain check finding nothing
    // says nothing of it.
    Judges {
        category: Category::VersionSuffixMismatch,
        check: Some(FactsCheck::PackageApiGap),
        confirmed_by: &[&r::framework_gpu_unusable::RULE],
        silence: Silence::SaysNothing(
            "since only `check --deep`'s framework probes import the packages and see their APIs",
        ),
    },
    // A package that asks for another CUDA's, cuDNN's or TensorRT's library: the loader's
    // rules see it where that package is one whose libraries they resolve; their silence says
    // nothing, since the package may be one they do not (onnxruntime in another env, a binary).
    Judges {
        category: Category::VersionSuffixMismatch,
        check: Some(FactsCheck::BuiltForAnotherVersion),
        confirmed_by: &[
            &r::missing_library::RULE,
            &r::mixed_cuda_majors::RULE,
            &r::framework_library_nowhere::RULE,
            &r::loaded_cuda_libraries::RULE,
        ],
        silence: Silence::SaysNothing(
            "since these rules read the environments cudoctor inspects, and the failing package may live elsewhere (another env, a container, a binary)",
        ),
    },
    judges!(
        Category::VersionSuffixMismatch,
        &[&r::companion_mismatch::RULE],
        Some(&[Needs::TorchEnv]),
    ),
    judges!(
        Category::SdpaFallback,
        &[
            &r::attention_falls_back_to_math::RULE,
            &r::fused_attention_unavailable::RULE,
            &r::attention_extension_broken::RULE,
            &r::compile_amp_floor::RULE,
        ],
        Some(&[Needs::RuntimeProbe]),
    ),
    judges!(Category::OutOfMemory, &[&r::gpu_memory_in_use::RULE], None),
];

/// The judges of a cause: the signature's narrower check when it has one, else the category's.
pub fn judges_of(category: Category, check: Option<FactsCheck>) -> Option<&'static Judges> {
    let narrow = check.filter(|c| c.category() == category);
    JUDGES
        .iter()
        .find(|j| j.category == category && j.check == narrow)
        .or_else(|| {
            JUDGES
                .iter()
                .find(|j| j.category == category && j.check.is_none())
        })
}

fn confirms(j: &Judges, f: &Finding) -> bool {
    f.severity != Severity::Info && j.confirmed_by.iter().any(|r| r.code == f.code)
}

/// How `findings` (of `crate::analyse` on `snap`) bear on a cause of `category`.
pub fn machine_check(
    category: Category,
    check: Option<FactsCheck>,
    snap: &Snapshot,
    findings: &[Finding],
) -> MachineCheck {
    let Some(j) = judges_of(category, check) else {
        return MachineCheck {
            verdict: Verdict::Inconclusive,
            findings: Vec::new(),
            judged_by: Vec::new(),
            evidence: vec![format!(
                "No rule of `cudoctor check` judges a {category} cause, so this machine neither confirms nor refutes it."
            )],
            fixes: Vec::new(),
            contradictions: Vec::new(),
        };
    };
    let judged_by: Vec<cudoctor_report::RuleCode> = j
        .confirmed_by
        .iter()
        .map(|r| cudoctor_report::RuleCode::of(*r))
        .collect();
    let confirming: Vec<&Finding> = findings.iter().filter(|f| confirms(j, f)).collect();
    let mut evidence = Vec::new();
    let mut fixes: Vec<FixStep> = Vec::new();
    for f in &confirming {
        let facts = match f.evidence.is_empty() {
            true => String::new(),
            false => format!(" ({})", f.evidence.join("; ")),
        };
        evidence.push(format!("check finds {}: {}{facts}", f.id, f.title));
        // A consequence carries no fix: its root's fix repairs it, as check prints it.
        let fix = match &f.caused_by_id {
            Some(root) => findings
                .iter()
                .find(|r| &r.id == root)
                .map_or(&f.fix, |r| &r.fix),
            None => &f.fix,
        };
        for step in fix {
            if !fixes.contains(step) {
                fixes.push(step.clone());
            }
        }
    }
    let found: Vec<Finding> = confirming.into_iter().cloned().collect();
    if !found.is_empty() {
        return MachineCheck {
            verdict: Verdict::Consistent,
            findings: found,
            judged_by,
            evidence,
            fixes,
            contradictions: Vec::new(),
        };
    }
    let codes = j
        .confirmed_by
        .iter()
        .map(|r| r.code)
        .collect::<Vec<_>>()
        .join(", ");
    let needs = match j.silence {
        Silence::Refutes(needs) => needs,
        Silence::SaysNothing(why) => {
            evidence.push(format!(
                "check finds nothing of {codes} here; that does not rule this cause out, {why}."
            ));
            return MachineCheck {
                verdict: Verdict::Inconclusive,
                findings: Vec::new(),
                judged_by,
                evidence,
                fixes,
                contradictions: Vec::new(),
            };
        }
    };
    let missing: Vec<&str> = needs
        .iter()
        .filter(|n| !n.held(snap))
        .map(|n| n.describe())
        .collect();
    if !missing.is_empty() {
        evidence.push(format!(
            "To judge this cause here, the rules {codes} need {}, which this snapshot lacks.",
            missing.join(" and ")
        ));
        return MachineCheck {
            verdict: Verdict::Inconclusive,
            findings: Vec::new(),
            judged_by,
            evidence,
            fixes,
            contradictions: Vec::new(),
        };
    }
    let had: Vec<&str> = needs.iter().map(|n| n.describe()).collect();
    MachineCheck {
        verdict: Verdict::Contradicts,
        findings: Vec::new(),
        judged_by,
        evidence,
        fixes,
        contradictions: vec![format!(
            "check's rules for this cause ({codes}) judged this machine ({}) and find no such problem: the message was probably produced elsewhere (another machine, environment or container) or before a change.",
            had.join(", ")
        )],
    }
}

/// Adds the machine check of `snap` to `e`, with `findings` from `crate::analyse` on `snap`
/// (the same findings `check` reports) and the winning signature's own check from `engine`.
pub fn confirm(e: &mut Explanation, engine: &Engine, snap: &Snapshot, findings: &[Finding]) {
    // A missing library of a version this machine has none of, while it has others of the
    // family: the package asking for it was built for another version (the log alone may not
    // say which CUDA or cuDNN is installed; the machine does).
    if e.category == Category::LibraryPath {
        let have = machine_library_versions(snap);
        *e = another_build::of_another_build(e.clone(), SeenIn::Machine, |family, wanted| {
            versions_besides(&have, family, wanted)
        });
    }
    let check = e.facts_check.or_else(|| {
        e.signature
            .as_deref()
            .and_then(|id| engine.signatures().by_id(id))
            .and_then(|s| s.check)
    });
    let mut m = machine_check(e.category, check, snap, findings);
    let facts = message_facts(e.category, &e.fields);
    // The knowledge `check` judged the machine with (the engine's, e.g. a user's `--kb`).
    let ctx = crate::Context::new(snap, engine.kb());
    // Rules that found nothing have not judged binaries they never read: before the message's
    // own facts are compared, a log whose named binaries are none of this machine's is
    // "not judged", not "contradicted".
    unjudged_binaries(e, snap, &mut m);
    let differs: Vec<String> = facts.iter().filter_map(|f| f.differs_from(&ctx)).collect();
    if !differs.is_empty() {
        // The message describes another machine, environment or moment than this snapshot:
        // check's findings here are about this machine, not the one that wrote it.
        m.verdict = Verdict::Contradicts;
        m.contradictions.extend(differs);
    }
    e.with_machine(m);
}

/// The versions of each library family this machine has: the CUDA libraries of the loader's
/// cache, every library the inspected environments' processes load, and the toolkits' CUDA.
fn machine_library_versions(snap: &Snapshot) -> BTreeSet<(LibraryFamily, u32, Option<u32>)> {
    let mut have = BTreeSet::new();
    let mut add = |name: &str| {
        if let Some(v) = another_build::library_version(name) {
            have.insert(v);
        }
    };
    if let Some(loader) = &snap.loader {
        for c in &loader.cache_copies {
            add(&c.name);
        }
        for p in &loader.processes {
            for o in &p.objects {
                add(o.soname.as_deref().unwrap_or(&o.path));
            }
        }
    }
    for t in &snap.toolkit.toolkits {
        let Some(v) = t.version.as_deref() else {
            continue;
        };
        let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
        if let (Some(Some(major)), minor) = (parts.next(), parts.next().flatten()) {
            // Toolkits before CUDA 11 name their runtime by minor too (libcudart.so.10.2).
            have.insert((LibraryFamily::Cuda, major, minor.filter(|_| major <= 10)));
        }
    }
    have
}

/// The versions of `family` this machine has, when it has some and none that serves `wanted`.
fn versions_besides(
    have: &BTreeSet<(LibraryFamily, u32, Option<u32>)>,
    family: LibraryFamily,
    wanted: (u32, Option<u32>),
) -> Option<Vec<String>> {
    let of_family: Vec<(u32, Option<u32>)> = have
        .iter()
        .filter(|(f, _, _)| *f == family)
        .map(|&(_, major, minor)| (major, minor))
        .collect();
    another_build::versions_besides(&of_family, wanted)
}

/// Binaries the log names that this machine's judgement did not include (not on this machine,
/// or not read): the machine cannot contradict a message about them, only fail to judge it.
fn unjudged_binaries(e: &Explanation, snap: &Snapshot, m: &mut MachineCheck) {
    let judged = |path: &str| {
        snap.kernel_images.as_ref().is_some_and(|k| {
            k.libraries
                .iter()
                .any(|l| l.path == path || l.path.starts_with(&format!("{path}/")))
        })
    };
    let missing: Vec<&str> = e
        .named_binaries
        .iter()
        .map(|b| b.path.as_str())
        .filter(|p| !judged(p))
        .collect();
    if missing.is_empty() {
        return;
    }
    let judged_any = missing.len() < e.named_binaries.len();
    let shown: Vec<&str> = missing.iter().take(3).copied().collect();
    let more = match missing.len().saturating_sub(shown.len()) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    m.evidence.push(format!(
        "The log names {}{more}, not found on this machine (or not read): {} not judged.",
        shown.join(", "),
        if missing.len() == 1 {
            "it was"
        } else {
            "they were"
        }
    ));
    if m.verdict == Verdict::Contradicts && !judged_any {
        m.verdict = Verdict::Inconclusive;
        m.contradictions.clear();
    }
}

/// A fact a message states about the machine that wrote it, read from the fields its
/// signature extracts, typed so it can be compared with a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageFact {
    /// The CUDA torch was built with ("used to compile PyTorch (12.1)").
    TorchCuda(cudoctor_kb::CudaVersion),
    /// The installed torch release ("you have 2.5.1").
    TorchVersion(String),
    /// The GPU's architecture ("with CUDA capability sm_61 is not compatible").
    GpuArch(cudoctor_kb::ComputeCapability),
    /// The highest CUDA the driver runs ("found version 11040").
    DriverCuda(cudoctor_kb::CudaVersion),
}

/// The facts of a message of `category` with these extracted `fields`.
pub fn message_facts(
    category: Category,
    fields: &std::collections::BTreeMap<String, String>,
) -> Vec<MessageFact> {
    let mut out = Vec::new();
    let field = |k: &str| fields.get(k).map(|v| v.trim());
    if let Some(c) = field("torch_cuda").and_then(|v| v.parse().ok()) {
        out.push(MessageFact::TorchCuda(c));
    }
    if let Some(v) = field("have_torch").filter(|v| v.parse::<cudoctor_kb::TorchVersion>().is_ok())
    {
        out.push(MessageFact::TorchVersion(v.to_string()));
    }
    // Only a message about the GPU itself names its architecture (nvcc's compute_XX is a
    // build target, not the GPU).
    if category == Category::NoKernelImage {
        if let Some(cc) = field("arch")
            .filter(|v| v.to_ascii_lowercase().starts_with("sm_"))
            .and_then(|v| v.parse().ok())
        {
            out.push(MessageFact::GpuArch(cc));
        }
    }
    if category == Category::DriverTooOld {
        if let Some(c) = field("found_cuda").and_then(|v| v.parse().ok()) {
            out.push(MessageFact::DriverCuda(c));
        }
    }
    out
}

impl MessageFact {
    /// How this machine's facts differ from the message's, when they are known and do.
    pub fn differs_from(&self, ctx: &crate::Context) -> Option<String> {
        match self {
            MessageFact::TorchCuda(c) => {
                let builds: Vec<(String, cudoctor_kb::CudaVersion)> = ctx
                    .torch_envs()
                    .into_iter()
                    .filter_map(|t| Some((t.label(), t.cuda()?)))
                    .collect();
                (!builds.is_empty() && builds.iter().all(|(_, x)| x != c)).then(|| {
                    let here: Vec<String> = builds
                        .iter()
                        .map(|(l, x)| format!("{l}: CUDA {x}"))
                        .collect();
                    format!(
                        "the message's torch was built with CUDA {c}; here {}",
                        here.join(", ")
                    )
                })
            }
            MessageFact::TorchVersion(v) => {
                let here: Vec<String> = ctx
                    .torch_envs()
                    .into_iter()
                    .map(|t| t.torch.public_version().to_string())
                    .collect();
                let same = |x: &str| {
                    x.parse::<cudoctor_kb::TorchVersion>().ok()
                        == v.parse::<cudoctor_kb::TorchVersion>().ok()
                };
                (!here.is_empty() && !here.iter().any(|x| same(x))).then(|| {
                    format!(
                        "the message names torch {v}; the torch installed here is {}",
                        here.join(", ")
                    )
                })
            }
            MessageFact::GpuArch(cc) => {
                let gpus = ctx.gpus();
                let known: Vec<String> = gpus
                    .iter()
                    .filter(|g| g.cc.is_some())
                    .map(|g| g.label())
                    .collect();
                (!known.is_empty() && !gpus.iter().any(|g| g.cc == Some(*cc))).then(|| {
                    format!(
                        "the message names a GPU of {}; this machine has {}",
                        cc.sm(),
                        known.join(", ")
                    )
                })
            }
            MessageFact::DriverCuda(c) => {
                let (max, source) = ctx.driver_max_cuda()?;
                (max != *c).then(|| {
                    format!(
                        "the message's driver runs CUDA up to {c}; this driver runs up to {max} (from {source})"
                    )
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{h200, machine, torch_env};
    use crate::{analyse, rule_by_code};
    use cudoctor_kb::Kb;

    const DRIVER_TOO_OLD: &str =
        "RuntimeError: The NVIDIA driver on your system is too old (found version 12020).";
    const NO_GPUS: &str = "RuntimeError: No CUDA GPUs are available";

    fn explained(text: &str, snap: &Snapshot) -> (Explanation, Vec<Finding>) {
        let engine = cudoctor_explain::builtin_engine().unwrap_or_else(|e| panic!("{e}"));
        let mut e = engine.explain(std::io::Cursor::new(text.as_bytes()));
        let findings = analyse(snap, Kb::embedded());
        confirm(&mut e, engine, snap, &findings);
        (e, findings)
    }

    fn verdict(e: &Explanation) -> Verdict {
        e.machine
            .as_ref()
            .map_or_else(|| panic!("no machine check"), |m| m.verdict)
    }

    #[test]
    fn every_judge_is_a_registered_rule_and_every_cause_is_mapped() {
        for j in JUDGES {
            for rule in j.confirmed_by {
                assert!(
                    rule_by_code(rule.code).is_some(),
                    "{} is not registered",
                    rule.code
                );
            }
            if let Some(c) = j.check {
                assert_eq!(c.category(), j.category);
            }
        }
        let unjudged = [
            Category::WindowsDll,
            Category::GpuHardware,
            Category::NotEnvironment,
            Category::Unknown,
        ];
        for cat in Category::ALL {
            assert_eq!(
                judges_of(cat, None).is_some(),
                !unjudged.contains(&cat),
                "{cat}"
            );
        }
        for check in [
            FactsCheck::VisibleDevices,
            FactsCheck::CudaInit,
            FactsCheck::PythonHeaders,
            FactsCheck::PackageApiGap,
            FactsCheck::BuiltForAnotherVersion,
        ] {
            let j = judges_of(check.category(), Some(check));
            assert_eq!(j.and_then(|j| j.check), Some(check));
        }
    }

    /// A name one installed package asks of another's module (numba-cuda of numpy) is judged by
    /// what imports them, `check --deep`'s framework probes (ACC011), never by the torch
    /// companion pairs of the category's general check: a healthy H200 with torch neither
    /// confirms nor contradicts it.
    #[test]
    fn an_api_gap_between_two_packages_is_judged_by_the_framework_probes() {
        const LOG: &str = "  File \"/v/lib/python3.12/site-packages/numba_cuda/numba/cuda/np/arrayobj.py\", line 6860, in <module>\n    @overload(np.row_stack)\n  File \"/v/lib/python3.12/site-packages/numpy/__init__.py\", line 795, in __getattr__\n    raise AttributeError(f\"module {__name__!r} has no attribute {attr!r}\")\nAttributeError: module 'numpy' has no attribute 'row_stack'";
        let (e, _) = explained(LOG, &h200());
        assert_eq!(e.category, Category::VersionSuffixMismatch);
        let m = e.machine.clone().unwrap_or_else(|| panic!("no check"));
        let judged: Vec<&str> = m.judged_by.iter().map(|r| r.as_str()).collect();
        assert_eq!(judged, ["ACC011"], "{m:?}");
        assert_eq!(verdict(&e), Verdict::Inconclusive, "{m:?}");
    }

    /// A package that asks for another cuDNN's library than the log shows was built for
    /// another version: judged by the loader's rules, and a healthy H200 whose torch loads its
    /// own cuDNN neither confirms nor contradicts it (the package may live elsewhere).
    #[test]
    fn a_package_built_for_another_cudnn_is_judged_by_the_loader_rules_and_never_refuted() {
        const LOG: &str = "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory\n$ ldconfig -p | grep libcudnn\n        libcudnn_ops.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn_ops.so.9";
        let (e, _) = explained(LOG, &h200());
        assert_eq!(e.category, Category::VersionSuffixMismatch);
        let m = e.machine.clone().unwrap_or_else(|| panic!("no check"));
        let judged: Vec<&str> = m.judged_by.iter().map(|r| r.as_str()).collect();
        assert!(judged.contains(&"LIB001"), "{m:?}");
        assert_eq!(verdict(&e), Verdict::Inconclusive, "{m:?}");
        assert!(
            m.evidence.iter().any(|l| l.contains("may live elsewhere")),
            "{m:?}"
        );
    }

    /// A bare missing CUDA runtime of a CUDA this machine has none of, while it has another:
    /// the machine says what the log does not, that the package was built for another CUDA.
    /// One of the CUDA this machine has is a library path's matter, as before.
    #[test]
    fn a_missing_library_of_a_cuda_the_machine_lacks_is_a_build_for_another_cuda() {
        let (e, _) = explained(
            "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory",
            &h200(),
        );
        assert_eq!(e.category, Category::VersionSuffixMismatch, "{}", e.cause);
        assert!(e.cause.contains("this machine has CUDA"), "{}", e.cause);
        assert!(e.cause.contains("built for CUDA 11"), "{}", e.cause);
        // What the machine has is said as the machine's, not as the log's.
        assert!(
            e.evidence
                .iter()
                .any(|l| l.starts_with("This machine has CUDA")),
            "{:?}",
            e.evidence
        );
        let (e, _) = explained(
            "ImportError: libcudart.so.13: cannot open shared object file: No such file or directory",
            &h200(),
        );
        assert_eq!(e.category, Category::LibraryPath, "{}", e.cause);
    }

    /// "Python.h: No such file or directory" is judged by TK018: confirmed where the
    /// environment's Python has no C headers, refuted where they were found.
    #[test]
    fn a_missing_python_h_is_judged_by_the_headers_rule() {
        use cudoctor_snapshot::{PythonHeaders, PythonOrigin};
        const LOG: &str =
            "torch/csrc/python_headers.h:12:10: fatal error: Python.h: No such file or directory";
        let with = |present: bool| {
            let mut s = h200();
            s.host.distro = Some("Debian GNU/Linux 12 (bookworm)".into());
            for e in &mut s.python_envs {
                e.headers = Some(PythonHeaders {
                    version: "3.11".into(),
                    base_prefix: "/usr".into(),
                    base_from: "pyvenv.cfg: home = /usr/bin".into(),
                    include_dir: "/usr/include/python3.11".into(),
                    python_h: present,
                    origin: PythonOrigin::Dpkg,
                    origin_evidence: None,
                });
            }
            s
        };
        let (e, _) = explained(LOG, &with(false));
        assert_eq!(e.category, Category::CudaHomeMissing);
        assert_eq!(verdict(&e), Verdict::Consistent, "{:?}", e.machine);
        let m = e.machine.clone().unwrap_or_else(|| panic!("no check"));
        assert_eq!(m.findings[0].code, "TK018");
        let (e, _) = explained(LOG, &with(true));
        assert_eq!(verdict(&e), Verdict::Contradicts, "{:?}", e.machine);
    }

    /// The machine the message came from: DRV004 confirms it, and explain's fix is check's.
    #[test]
    fn an_old_driver_is_confirmed_by_drv004_with_its_fix() {
        let mut s = machine(
            Some(("535.104.05", "12.2")),
            &[("NVIDIA A100-SXM4-80GB", "8.0")],
        );
        s.python_envs
            .push(torch_env("/opt/venv", "2.11.0+cu130", Some("13.0"), &[]));
        let (e, findings) = explained(DRIVER_TOO_OLD, &s);
        let m = e.machine.clone().unwrap_or_else(|| panic!("no check"));
        assert_eq!(m.verdict, Verdict::Consistent, "{m:?}");
        assert_eq!(m.findings[0].code, "DRV004");
        let drv004 = findings.iter().find(|f| f.code == "DRV004");
        let check_fix = drv004.map(|f| f.fix.clone()).unwrap_or_default();
        assert!(!check_fix.is_empty());
        assert_eq!(m.fixes, check_fix);
        // The explanation's own fix list starts with check's steps, in order.
        assert_eq!(&e.fix[..check_fix.len()], check_fix.as_slice());
        assert!(m.evidence.iter().any(|x| x.contains("535.104.05")), "{m:?}");
    }

    /// Driver 580 runs the installed cu130 torch: DRV004 is silent, so the message came from
    /// elsewhere, and no fix for this machine is offered.
    #[test]
    fn a_driver_that_runs_torch_refutes_the_message() {
        let (e, _) = explained(DRIVER_TOO_OLD, &h200());
        let m = e.machine.clone().unwrap_or_else(|| panic!("no check"));
        assert_eq!(m.verdict, Verdict::Contradicts, "{m:?}");
        assert!(m.fixes.is_empty());
        // The message's own steps are a group of their own, for the machine that wrote the
        // log: none is numbered among this machine's steps, and no heading is a step.
        assert!(e.fix.is_empty(), "{:?}", e.fix);
        assert!(!e.fix_elsewhere.is_empty());
        assert!(e
            .fix_elsewhere
            .iter()
            .all(|f| !f.text().contains("machine that wrote")));
    }

    /// What a message says of its own machine (torch's CUDA, the torch release, the GPU's
    /// architecture, the driver's CUDA) is compared with this machine's facts.
    #[test]
    fn the_message_facts_are_compared_with_the_machine() {
        let contradictions = |text: &str, s: &Snapshot| -> Vec<String> {
            let (e, _) = explained(text, s);
            let m = e
                .machine
                .clone()
                .unwrap_or_else(|| panic!("no check: {e:?}"));
            if !m.contradictions.is_empty() {
                assert_eq!(m.verdict, Verdict::Contradicts, "{m:?}");
            }
            m.contradictions
        };
        let h200 = h200();
        let said = |text: &str, want: &str| {
            let c = contradictions(text, &h200);
            assert!(c.iter().any(|x| x.contains(want)), "{text}: {c:?}");
        };
        said(
            "RuntimeError: The detected CUDA version (12.8) mismatches the version that was used to compile PyTorch (12.1). Please make sure to use the same CUDA versions.",
            "the message's torch was built with CUDA 12.1; here torch 2.11.0+cu130 in /opt/venv: CUDA 13.0",
        );
        said(
            "UserWarning: NVIDIA GeForce GTX 1080 with CUDA capability sm_61 is not compatible with the current PyTorch installation.",
            "the message names a GPU of sm_61; this machine has GPU 0 (NVIDIA H200, sm_90)",
        );
        said(
            "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.4.0+cu121 with CUDA 1201 (you have 2.5.1+cu124)",
            "the message names torch 2.5.1; the torch installed here is 2.11.0",
        );
        said(
            DRIVER_TOO_OLD,
            "the message's driver runs CUDA up to 12.2; this driver runs up to 13.0",
        );
        // The same facts on a machine that has them: nothing to contradict.
        let mut s = machine(
            Some(("535.104.05", "12.2")),
            &[("NVIDIA GeForce GTX 1080", "6.1")],
        );
        s.python_envs
            .push(torch_env("/opt/venv", "2.5.1+cu121", Some("12.1"), &[]));
        for text in [
            "RuntimeError: The detected CUDA version (12.8) mismatches the version that was used to compile PyTorch (12.1). Please make sure to use the same CUDA versions.",
            "UserWarning: NVIDIA GeForce GTX 1080 with CUDA capability sm_61 is not compatible with the current PyTorch installation.",
            "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n    PyTorch 2.4.0+cu121 with CUDA 1201 (you have 2.5.1+cu121)",
            DRIVER_TOO_OLD,
        ] {
            let c = contradictions(text, &s);
            assert!(
                c.iter().all(|x| !x.starts_with("the message")),
                "{text}: {c:?}"
            );
        }
    }

    #[test]
    fn without_the_facts_the_judges_need_it_is_inconclusive() {
        let s = machine(None, &[]);
        let (e, _) = explained(DRIVER_TOO_OLD, &s);
        assert_eq!(verdict(&e), Verdict::Inconclusive);
    }

    /// "No CUDA GPUs are available" with CUDA_VISIBLE_DEVICES="" here: MGPU003 confirms it, and a
    /// working driver is no contradiction for this message.
    #[test]
    fn hidden_gpus_are_confirmed_by_mgpu003() {
        let mut s = h200();
        s.env.insert("CUDA_VISIBLE_DEVICES".into(), String::new());
        let (e, findings) = explained(NO_GPUS, &s);
        let m = e.machine.clone().unwrap_or_else(|| panic!("no check"));
        assert_eq!(m.verdict, Verdict::Consistent, "{m:?}");
        assert!(m.findings.iter().any(|f| f.code == "MGPU003"), "{m:?}");
        let mgpu003 = findings.iter().find(|f| f.code == "MGPU003");
        assert_eq!(Some(&m.fixes), mgpu003.map(|f| &f.fix));

        // As the machine is (variable unset, both GPUs visible) the log came from elsewhere.
        let (e, _) = explained(NO_GPUS, &h200());
        assert_eq!(verdict(&e), Verdict::Contradicts);
    }

    #[test]
    fn an_out_of_memory_error_is_never_refuted_by_a_healthy_machine() {
        let (e, _) = explained(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.00 GiB is free.",
            &h200(),
        );
        assert_eq!(verdict(&e), Verdict::Inconclusive);
    }

    /// A CPU-only torch on a GPU machine: FW001 confirms it and its fix is the chooser's
    /// command set (`cudoctor_plan::remedy`), the same one check prints.
    #[test]
    fn a_cpu_build_is_confirmed_by_fw001_with_the_choosers_remedy() {
        let mut s = machine(Some(("580.159.04", "13.0")), &[("NVIDIA H200", "9.0")]);
        s.python_envs
            .push(torch_env("/opt/venv", "2.11.0+cpu", None, &[]));
        let (e, findings) = explained("AssertionError: Torch not compiled with CUDA enabled", &s);
        let m = e.machine.clone().unwrap_or_else(|| panic!("no check"));
        assert_eq!(m.verdict, Verdict::Consistent, "{m:?}");
        let fw001 = findings.iter().find(|f| f.code == "FW001");
        assert_eq!(Some(&m.fixes), fw001.map(|f| &f.fix));
        assert!(
            m.fixes.iter().any(|f| f.contains("--index-url")),
            "{:?}",
            m.fixes
        );
    }

    /// nvcc's refusal of a newer gcc ("unsupported GNU version!") is confirmed by TK013 where
    /// the toolkit's host_config.h refuses the host compiler found, with TK013's fix (the
    /// older compiler through CC/CXX); where the compiler is accepted, TK013 does not confirm
    /// it.
    #[test]
    fn nvccs_refusal_of_a_newer_gcc_is_judged_by_tk013() {
        use cudoctor_snapshot::{
            BuildTools, CompilerFamily, CompilerRange, HostCompiler, HostCompilerSupport,
        };
        const LOG: &str = "/usr/local/cuda-13.0/include/crt/host_config.h:137:2: error: #error -- unsupported GNU version! gcc versions later than 15 are not supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; however, using an unsupported host compiler may cause compilation failure or incorrect run time execution. Use at your own risk.";
        let with = |gcc: &str| {
            let mut s = h200();
            s.host.distro = Some("Debian GNU/Linux 13 (trixie)".into());
            s.toolkit.toolkits[0].host_compilers = Some(HostCompilerSupport {
                file: "/usr/local/cuda-13.0/include/crt/host_config.h".into(),
                ranges: vec![CompilerRange {
                    family: CompilerFamily::Gcc,
                    min: None,
                    max_major: Some(15),
                    condition: "__GNUC__ > 15".into(),
                    line: 137,
                    message:
                        "-- unsupported GNU version! gcc versions later than 15 are not supported!"
                            .into(),
                }],
            });
            s.toolkit.build_tools = Some(BuildTools {
                host_compiler: Some(HostCompiler {
                    chosen_by: "gcc on PATH".into(),
                    command: "gcc".into(),
                    path: Some("/usr/bin/gcc".into()),
                    resolved: Some(format!("/usr/bin/x86_64-linux-gnu-gcc-{gcc}")),
                    family: Some(CompilerFamily::Gcc),
                    version: Some(gcc.into()),
                    version_source: Some(format!("the program's name (gcc-{gcc})")),
                }),
                ..Default::default()
            });
            s
        };
        let (e, findings) = explained(LOG, &with("16"));
        assert_eq!(e.category, Category::ToolkitMismatch);
        let m = e.machine.clone().unwrap_or_else(|| panic!("no check"));
        assert_eq!(m.verdict, Verdict::Consistent, "{m:?}");
        let tk013 = findings.iter().find(|f| f.code == "TK013");
        assert!(m.findings.iter().any(|f| f.code == "TK013"), "{m:?}");
        // TK013's steps, in its order (the fixture's other toolkit finding adds its own).
        let steps: Vec<&FixStep> = m
            .fixes
            .iter()
            .filter(|s| tk013.is_some_and(|f| f.fix.contains(s)))
            .collect();
        assert_eq!(Some(steps), tk013.map(|f| f.fix.iter().collect()));
        assert!(m.fixes.iter().any(|s| s.contains("CC=gcc-15 CXX=g++-15")));
        // An accepted compiler: TK013 is not among the confirming findings.
        let (e, _) = explained(LOG, &with("14"));
        let m = e.machine.unwrap_or_else(|| panic!("no check"));
        assert!(m.findings.iter().all(|f| f.code != "TK013"), "{m:?}");
    }
}
