//! Cross-checks an explanation with a machine's facts. Pure: no I/O, no clock.
//!
//! Says what the machine confirms, turns generic fixes into exact ones (the torch variant to
//! install, the driver branch needed, the toolkit to point CUDA_HOME at), and says so when the
//! machine contradicts the message (the log was produced somewhere else).

use crate::category::Category;
use crate::compat::{self, cuda_version, parse_arch_list, BuildArchs};
use crate::facts::{MachineFacts, Platform};
use crate::fields::FieldKind;
use crate::visible_devices::{self, Visibility};
use cudoctor_kb::{
    coverage, ArchListBasis, ComputeCapability, Coverage, CudaVersion, Kb, TorchRelease,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The index PyTorch publishes its CUDA wheels on; the variant ("cu128") is appended.
const TORCH_INDEX: &str = "https://download.pytorch.org/whl";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The machine's facts fit the explanation.
    Consistent,
    /// The machine's facts contradict the message: it was probably produced elsewhere.
    Contradicts,
    /// The facts needed to judge were not available.
    Inconclusive,
}

/// A cross-check a signature asks for instead of its category's general one, because its
/// message says more precisely what failed (`check = "..."` in the signature data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactsCheck {
    /// The CUDA runtime loaded the driver library and counted zero devices ("No CUDA GPUs are
    /// available", cudaErrorNoDevice): CUDA_VISIBLE_DEVICES is judged, and a working driver
    /// is no contradiction, since that variable hides GPUs from CUDA but not from nvidia-smi.
    VisibleDevices,
    /// CUDA's initialisation failed below a driver that still answers nvidia-smi (the
    /// nvidia_uvm module, /dev/nvidia-uvm): a working driver is no contradiction either.
    CudaInit,
}

impl FactsCheck {
    /// The category whose messages this check is made for.
    pub fn category(self) -> Category {
        match self {
            FactsCheck::VisibleDevices | FactsCheck::CudaInit => Category::DriverMissing,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineCheck {
    pub verdict: Verdict,
    pub evidence: Vec<String>,
    /// Machine-specific fixes, to be shown before the signature's generic ones.
    pub fixes: Vec<String>,
    pub contradictions: Vec<String>,
}

struct Check<'a> {
    facts: &'a MachineFacts,
    kb: &'a Kb,
    evidence: Vec<String>,
    fixes: Vec<String>,
    /// Fixes that stay right when the log came from elsewhere (they say how to find that place).
    fixes_elsewhere: Vec<String>,
    contradictions: Vec<String>,
    consistent: bool,
}

impl<'a> Check<'a> {
    fn fact(&mut self, s: String) {
        self.evidence.push(s);
    }
    fn agree(&mut self, s: String) {
        self.consistent = true;
        self.evidence.push(s);
    }
    fn contradict(&mut self, s: String) {
        self.contradictions.push(s);
    }
    fn fix(&mut self, s: String) {
        if !self.fixes.contains(&s) {
            self.fixes.push(s);
        }
    }
    /// A fix that stays right when the machine contradicts the log.
    fn fix_elsewhere(&mut self, s: String) {
        if !self.fixes_elsewhere.contains(&s) {
            self.fixes_elsewhere.push(s);
        }
    }
    fn windows(&self) -> bool {
        self.facts.platform == Platform::Windows
    }
    /// Each GPU with its architecture: the reported compute capability, else the one the
    /// knowledge base gives for its name.
    fn gpu_archs(&self) -> Vec<Gpu> {
        self.facts
            .gpus
            .iter()
            .filter_map(|g| {
                let sm = match g.compute_capability.as_deref() {
                    Some(cc) => FieldKind::Arch.normalize(cc)?,
                    None => self.kb.gpu(&g.name)?.cc.sm(),
                };
                Some(Gpu {
                    name: g.name.clone(),
                    cc: sm.parse().ok()?,
                    sm,
                })
            })
            .collect()
    }
    /// The release of the installed PyTorch, when the knowledge base knows it.
    fn installed_release(&self) -> Option<&'a TorchRelease> {
        compat::torch_release(self.kb, self.facts.torch_version.as_deref()?)
    }
    fn driver_runs(&self, driver: &str, cuda: CudaVersion) -> Option<bool> {
        compat::driver_runs(self.kb, driver, cuda, self.facts.platform)
    }
    /// The pip command for a torch variant, pinned to the installed release when it offers it.
    fn torch_install(&self, variant: &str) -> String {
        let pin = match self.installed_release() {
            Some(r) if r.variant(variant).is_some() => release_pins(r),
            _ => "torch torchvision torchaudio".to_string(),
        };
        self.install_any(&pin, variant)
    }
    /// `pins` (space-separated) from the PyTorch index of `variant`, reinstalled, in the
    /// installer of the machine's torch environment when known.
    fn install_any(&self, pins: &str, variant: &str) -> String {
        let index = format!("{TORCH_INDEX}/{variant}");
        match &self.facts.install_target {
            Some(t) => t.install(&cudoctor_plan::Install {
                pins: pins.split(' ').map(str::to_string).collect(),
                reinstall: true,
                index_url: Some(index),
                ..Default::default()
            }),
            None => format!("pip install --force-reinstall {pins} --index-url {index}"),
        }
    }
    /// The newest variant among `candidates` that the driver can run (all when the driver is unknown).
    fn pick_variant_for_driver(&self, candidates: &[String]) -> Option<String> {
        let driver = self.facts.driver_version.as_deref();
        candidates
            .iter()
            .rfind(|v| match (driver, CudaVersion::from_tag(v).ok()) {
                (Some(d), Some(c)) => self.driver_runs(d, c) != Some(false),
                _ => true,
            })
            .cloned()
    }
}

/// A GPU of the machine with a known architecture.
struct Gpu {
    name: String,
    /// "sm_90", as message fields spell it.
    sm: String,
    cc: ComputeCapability,
}

impl Gpu {
    fn label(&self) -> String {
        format!("{} ({})", self.name, self.sm)
    }
}

/// `torch==2.7.* torchvision==0.22.* torchaudio==2.7.*` for a release: series pins, so pip takes
/// the newest patch of each. A companion the kb does not know goes unpinned; torchaudio is left
/// out where the kb knows none was published for the release.
fn release_pins(r: &TorchRelease) -> String {
    let series = compat::series(&r.version).unwrap_or_else(|| r.version.clone());
    let mut s = format!("torch=={series}.*");
    match r.torchvision.as_deref().and_then(compat::series) {
        Some(tv) => s.push_str(&format!(" torchvision=={tv}.*")),
        None => s.push_str(" torchvision"),
    }
    match r.torchaudio.as_deref().and_then(compat::series) {
        Some(ta) => s.push_str(&format!(" torchaudio=={ta}.*")),
        None if r.torchaudio_absent.is_some() => {}
        None => s.push_str(" torchaudio"),
    }
    s
}

/// Checks `category` and the message's `fields` against `facts`, with the version facts of `kb`.
pub fn cross_check(
    category: Category,
    fields: &BTreeMap<String, String>,
    facts: &MachineFacts,
    kb: &Kb,
) -> MachineCheck {
    cross_check_as(category, None, fields, facts, kb)
}

/// As [`cross_check`], with the check the winning signature asks for (its `check`); a check
/// made for another category is ignored.
pub fn cross_check_as(
    category: Category,
    check: Option<FactsCheck>,
    fields: &BTreeMap<String, String>,
    facts: &MachineFacts,
    kb: &Kb,
) -> MachineCheck {
    let check = check.filter(|k| k.category() == category);
    let mut c = Check {
        facts,
        kb,
        evidence: Vec::new(),
        fixes: Vec::new(),
        fixes_elsewhere: Vec::new(),
        contradictions: Vec::new(),
        consistent: false,
    };
    describe_machine(&mut c);
    match category {
        Category::DriverTooOld => driver_too_old(&mut c, fields),
        Category::DriverMissing => match check {
            Some(FactsCheck::VisibleDevices) => zero_devices(&mut c),
            Some(FactsCheck::CudaInit) => cuda_init(&mut c),
            None => driver_missing(&mut c),
        },
        Category::CpuOnlyWheel => cpu_only(&mut c),
        Category::NoKernelImage => no_kernel_image(&mut c, fields),
        Category::ToolkitMismatch | Category::CudaHomeMissing => toolkit(&mut c, fields, category),
        Category::VersionSuffixMismatch => suffix(&mut c, fields),
        Category::AbiMismatch => {
            if let Some(t) = &facts.torch_version {
                c.fix(format!("Installed PyTorch here is {t}: install the extension build made for exactly this version (and its CUDA and C++ ABI), or rebuild it against it."));
            }
        }
        Category::LibraryPath => library_path(&mut c, fields),
        Category::Container => container(&mut c, fields),
        Category::WindowsDll => {
            if !matches!(facts.platform, Platform::Windows | Platform::Unknown) {
                c.contradict("The message is from Windows, but this machine is not a Windows machine: it was produced elsewhere.".to_string());
            } else if facts.platform == Platform::Windows {
                c.agree("This machine runs Windows.".to_string());
            }
        }
        Category::SdpaFallback => sdpa(&mut c, fields),
        Category::OutOfMemory => oom(&mut c, fields),
        Category::Nccl => {
            if facts.gpus.len() == 1 {
                c.fact("This machine has one GPU; NCCL between GPUs of this machine is not involved (multi-node?).".to_string());
            }
            if facts.platform == Platform::Container {
                c.agree("This runs in a container: check its /dev/shm size (df -h /dev/shm); Docker's default is 64 MB.".to_string());
            }
        }
        Category::NotEnvironment => {
            c.fact("This kind of error does not depend on the installation; the machine's setup is not the cause.".to_string());
        }
        Category::Unknown => {}
    }
    let verdict = if !c.contradictions.is_empty() {
        Verdict::Contradicts
    } else if c.consistent {
        Verdict::Consistent
    } else {
        Verdict::Inconclusive
    };
    // Fixes tailored to this machine are wrong when the log came from another one.
    let fixes = if verdict == Verdict::Contradicts {
        c.fixes_elsewhere
    } else {
        c.fixes.into_iter().chain(c.fixes_elsewhere).collect()
    };
    MachineCheck {
        verdict,
        evidence: c.evidence,
        fixes,
        contradictions: c.contradictions,
    }
}

fn describe_machine(c: &mut Check) {
    let f = c.facts;
    if let Some(d) = &f.driver_version {
        let max = f
            .driver_max_cuda
            .as_deref()
            .map(|m| format!(" (supports CUDA up to {m})"))
            .unwrap_or_default();
        c.fact(format!("Driver {d}{max}."));
    }
    if let Some(t) = &f.torch_version {
        let cuda = f
            .torch_cuda
            .as_deref()
            .map(|x| format!(", built with CUDA {x}"))
            .unwrap_or_else(|| ", no CUDA (CPU-only build)".to_string());
        c.fact(format!("PyTorch {t}{cuda}."));
    }
}

fn driver_too_old(c: &mut Check, fields: &BTreeMap<String, String>) {
    let f = c.facts;
    let found = fields
        .get("found_cuda")
        .filter(|v| cuda_version(v).is_some());
    if let (Some(found), Some(max)) = (found, f.driver_max_cuda.as_deref()) {
        if cuda_version(max) > cuda_version(found) {
            c.contradict(format!("The message says the driver supports CUDA {found}, but this machine's driver supports CUDA {max}: the message comes from another machine or from before a driver update."));
        } else {
            c.agree(format!(
                "This machine's driver supports CUDA {max}, as the message says."
            ));
        }
    }
    let platform = f.platform;
    if f.torch_cuda.is_none() && platform != Platform::Windows {
        keep_driver_build(c, found.and_then(|v| cuda_version(v)));
    }
    if let Some(tc) = f.torch_cuda.as_deref() {
        let cuda = cuda_version(tc);
        let floor = cuda.and_then(|cu| compat::driver_floor(c.kb, cu.major, platform));
        if let (Some(cu), Some(floor)) = (cuda, floor) {
            let shipped = compat::toolkit_driver(c.kb, cu, platform)
                .map(|d| format!(" (CUDA {tc} itself shipped with {d})"))
                .unwrap_or_default();
            c.fix(format!(
                "Update the NVIDIA driver to {floor} or newer, which runs any CUDA {} build{shipped}.",
                cu.major
            ));
            if let Some(d) = f.driver_version.as_deref() {
                match c.driver_runs(d, cu) {
                    Some(false) => c.agree(format!(
                        "Driver {d} is older than {floor}, the minimum for PyTorch's CUDA {tc}."
                    )),
                    Some(true) => c.contradict(format!("Driver {d} can run PyTorch's CUDA {tc}: on this machine the installed PyTorch should not hit this error.")),
                    None => {}
                }
            }
        }
        // Or a torch build the current driver can run.
        if let Some(d) = f.driver_version.as_deref() {
            let release = c.installed_release();
            let fitting = release.and_then(|r| {
                r.variants
                    .iter()
                    .rfind(|v| c.driver_runs(d, v.cuda) == Some(true))
            });
            if let Some(best) = fitting {
                c.fix(format!(
                    "Or keep the driver and install the {} build, which driver {d} can run: {}",
                    best.tag,
                    c.torch_install(&best.tag)
                ));
            } else if let Some(r) = release {
                let which = if r.variants_incomplete {
                    "None of the recorded CUDA builds of this PyTorch release (the record may be incomplete)"
                } else {
                    "No CUDA build of this PyTorch release"
                };
                c.fix(format!("{which} runs on driver {d}; update the driver, or use an older PyTorch release with a CUDA variant the driver supports."));
            }
        }
    }
}

/// A driver that reports CUDA `found` (the message's "found version 11040") is of the branch
/// whose highest CUDA that is; NVIDIA's minor-version compatibility lets it run every build of
/// that CUDA major, so "an older CUDA than the driver's" is too strict. The build to keep it with
/// is the one `cudoctor plan --driver R` chooses: the same chooser, the same answer.
fn keep_driver_build(c: &mut Check, found: Option<CudaVersion>) {
    let Some(found) = found else { return };
    let Some(branch) =
        c.kb.driver_branches()
            .iter()
            .filter(|b| b.max_cuda == Some(found))
            .map(|b| b.branch)
            .min()
    else {
        return;
    };
    let driver = match c
        .facts
        .driver_version
        .as_deref()
        .and_then(|d| d.parse().ok())
    {
        Some(d) => d,
        None => match branch.to_string().parse() {
            Ok(d) => d,
            Err(_) => return,
        },
    };
    let input = cudoctor_plan::PlanInput {
        driver: Some(driver),
        gpus: c
            .facts
            .gpus
            .iter()
            .map(|g| {
                g.compute_capability
                    .clone()
                    .unwrap_or_else(|| g.name.clone())
            })
            .collect(),
        ..Default::default()
    };
    let Ok(plan) = cudoctor_plan::plan(c.kb, &input) else {
        return;
    };
    if let (Some(t), Some(v), Some(cmd)) = (&plan.torch, &plan.variant, &plan.commands.pip) {
        let compat = c
            .kb
            .minor_compat_floor(found.major)
            .map(|f| format!(" (NVIDIA's minor-version compatibility: any CUDA {}.x build on a driver >= {f})", found.major))
            .unwrap_or_default();
        c.fix(format!(
            "Keep the driver (R{branch}, CUDA {found}){compat} and install torch {t} ({v}), as `cudoctor plan --driver {branch}` chooses: {cmd}"
        ));
    }
}

fn driver_missing(c: &mut Check) {
    let f = c.facts;
    if f.driver_version.is_some() && f.platform != Platform::Container {
        c.contradict("This machine has a working driver: the message comes from elsewhere (another machine or a container without GPU access).".to_string());
    }
    if f.platform == Platform::Container && f.driver_version.is_none() {
        c.agree("This is a container and no driver is visible inside it: start it with --gpus all (NVIDIA Container Toolkit).".to_string());
        c.fix("docker run --gpus all ... (after installing and configuring the NVIDIA Container Toolkit on the host).".to_string());
    }
    if f.platform == Platform::Wsl {
        c.fix("Under WSL the driver is the Windows one: update the NVIDIA driver on Windows; do not install a Linux driver inside WSL.".to_string());
    }
}

/// CUDA counted zero devices. CUDA_VISIBLE_DEVICES is the usual reason, and nvidia-smi ignores
/// it, so a working driver here says nothing against the message; what the variable is set to
/// here (or that it is unset while the driver lists GPUs) does.
fn zero_devices(c: &mut Check) {
    let f = c.facts;
    let total = (!f.gpus.is_empty()).then_some(f.gpus.len());
    let listed = total
        .map(|n| format!(" of the {n} the driver lists"))
        .unwrap_or_default();
    match f.cuda_visible_devices.as_deref() {
        Some(v) => match visible_devices::judge(v, total) {
            Visibility::HidesAll => {
                c.agree(format!("CUDA_VISIBLE_DEVICES is set here to {v:?}, which hides every GPU{listed}: CUDA programs started from this environment see none."));
                c.fix("unset CUDA_VISIBLE_DEVICES  # every GPU becomes visible again".to_string());
                match total {
                    Some(n) => c.fix(format!("or name GPUs that exist: export CUDA_VISIBLE_DEVICES={}  # indices 0 to {}; nvidia-smi -L lists them", visible_devices::all_indices(n), n - 1)),
                    None => c.fix("or name GPUs that exist: nvidia-smi -L lists their indices and UUIDs".to_string()),
                }
            }
            Visibility::Shows { shown, exact } => {
                let how_many = match (exact, total) {
                    (true, Some(n)) => format!("shows {shown} of the {n} GPUs"),
                    _ => format!("shows at least {shown} GPU(s)"),
                };
                c.contradict(format!("CUDA_VISIBLE_DEVICES is {v:?} here, which {how_many}: the failing program saw none, so it ran with another value (set by the script itself through os.environ, by its launch script or job scheduler) or in another container or machine."));
                c.fix_elsewhere(format!("Find where the failing program's CUDA_VISIBLE_DEVICES comes from (grep -rn CUDA_VISIBLE_DEVICES in the project and its launch scripts) and make it name GPUs that exist{}.", total.map(|n| format!(": here, indices 0 to {}", n - 1)).unwrap_or_default()));
            }
            Visibility::Undecided => {
                c.fact(format!("CUDA_VISIBLE_DEVICES is set here to {v:?}; whether it names GPUs that exist cannot be told from the facts."));
                c.fix("Compare CUDA_VISIBLE_DEVICES with the GPUs that exist (nvidia-smi -L lists indices and UUIDs), or unset it.".to_string());
            }
        },
        None if total.is_some() => {
            let n = f.gpus.len();
            c.contradict(format!("The driver here lists {n} GPU(s) and CUDA_VISIBLE_DEVICES is not set, so programs started from this environment see them: the log probably comes from another context (a job scheduler or launch script that sets CUDA_VISIBLE_DEVICES, the script itself through os.environ, a container started without GPUs) or another machine."));
            c.fix_elsewhere(format!("Look for what sets CUDA_VISIBLE_DEVICES for the failing program but not here: its code (grep -rn CUDA_VISIBLE_DEVICES .), its launch script, the job scheduler's GPU allocation, or the container's --gpus option; remove it or make it name GPUs that exist (here, indices 0 to {}).", n - 1));
        }
        None => match (f.driver_version.as_deref(), f.platform) {
            (_, Platform::Unknown) => {}
            (None, Platform::Container) => {
                c.agree("This is a container and no driver is visible inside it: start it with --gpus all (NVIDIA Container Toolkit).".to_string());
                c.fix("docker run --gpus all ... (after installing and configuring the NVIDIA Container Toolkit on the host).".to_string());
            }
            (None, _) => {
                c.agree("No NVIDIA driver answers on this machine either, so no program here sees a GPU.".to_string());
                c.fix("Check 'nvidia-smi'; if it fails, install the NVIDIA driver or load its kernel module (lsmod | grep nvidia; dmesg | grep -i nvidia).".to_string());
            }
            (Some(d), _) => {
                c.agree(format!("Driver {d} answers here but lists no GPU."));
                c.fix("Check 'nvidia-smi -L' and the kernel log (dmesg | grep -i -e nvidia -e xid): the GPU may be disabled, fallen off the bus, or held by another driver (vfio, a VM passthrough).".to_string());
            }
        },
    }
    if f.platform == Platform::Wsl {
        c.fix("Under WSL the driver is the Windows one: update the NVIDIA driver on Windows; do not install a Linux driver inside WSL.".to_string());
    }
}

/// CUDA's initialisation failed with an unknown error. The driver answering here is expected
/// (the broken part is below it); what can be said is what the machine shows.
fn cuda_init(c: &mut Check) {
    let f = c.facts;
    match (f.driver_version.as_deref(), f.gpus.len()) {
        (Some(d), n) if n > 0 => c.fact(format!("Driver {d} answers here and lists {n} GPU(s): nvidia-smi working does not rule this error out, since it does not use the nvidia_uvm module CUDA needs.")),
        (None, 0) if f.platform != Platform::Unknown => {
            c.fact("No NVIDIA driver answers on this machine: install or load it first.".to_string());
        }
        _ => {}
    }
    if f.platform == Platform::Container {
        c.fix("In a container, /dev/nvidia-uvm must exist (ls -l /dev/nvidia-uvm*); on the host, create it with sudo nvidia-modprobe -u -c 0 and restart the container.".to_string());
    }
    if let Some(v) = f.cuda_visible_devices.as_deref() {
        c.fact(format!("CUDA_VISIBLE_DEVICES is set here to {v:?}: changing it inside a program after CUDA has started gives this error too; set it before the program starts."));
    }
}

fn cpu_only(c: &mut Check) {
    let f = c.facts;
    let is_cpu_build = f
        .torch_version
        .as_deref()
        .map(|v| v.contains("+cpu"))
        .unwrap_or(false)
        || (f.torch_version.is_some() && f.torch_cuda.is_none());
    if is_cpu_build {
        c.agree("The installed PyTorch here is a CPU-only build.".to_string());
    } else if let Some(tc) = &f.torch_cuda {
        c.contradict(format!("The PyTorch inspected here is a CUDA {tc} build: the message comes from another environment (another venv, conda env or interpreter)."));
    }
    let ccs: Vec<ComputeCapability> = c.gpu_archs().iter().map(|g| g.cc).collect();
    if !ccs.is_empty() {
        let release = c.installed_release();
        let mut candidates = compat::builds_for_gpus(c.kb, &ccs, release);
        if candidates.is_empty() {
            candidates = compat::builds_for_gpus(c.kb, &ccs, None);
        }
        if let Some(v) = c.pick_variant_for_driver(&candidates) {
            c.fix(format!("Install the {v} build, which has kernels for this machine's GPUs and runs on its driver: {}", c.torch_install(&v)));
        }
    }
}

fn no_kernel_image(c: &mut Check, fields: &BTreeMap<String, String>) {
    let f = c.facts;
    let gpus = c.gpu_archs();
    if gpus.is_empty() {
        return;
    }
    if let Some(arch) = fields.get("arch") {
        if !gpus.iter().any(|g| &g.sm == arch) {
            let here: Vec<String> = gpus.iter().map(Gpu::label).collect();
            c.contradict(format!("The message is about a {arch} GPU, but this machine has {}: it comes from another machine.", here.join(", ")));
        }
    }
    // Which architectures does the installed torch carry? Prefer the real list, else the published one.
    let release = c.installed_release();
    let (entries, from) = match (
        &f.torch_arch_list,
        f.torch_cuda.as_deref().and_then(cuda_version),
    ) {
        (Some(list), _) => (parse_arch_list(list), "the installed PyTorch".to_string()),
        (None, Some(cuda)) => {
            let at = release.and_then(TorchRelease::parsed_version);
            let Some(build) = compat::build_archs(c.kb, at.as_ref(), &cuda.tag()) else {
                return;
            };
            let from = published_build(c, &build, &cuda.tag(), release);
            (build.entries, from)
        }
        _ => return,
    };
    if entries.is_empty() {
        return;
    }
    let carried = compat::display_entries(&entries);
    let mut missing: Vec<String> = Vec::new();
    let mut jit_only: Vec<(String, ComputeCapability)> = Vec::new();
    for g in &gpus {
        match coverage(&entries, g.cc) {
            Coverage::Missing => missing.push(g.label()),
            Coverage::PtxJit { from } => jit_only.push((g.label(), from)),
            Coverage::Native | Coverage::BinaryCompatible { .. } => {}
        }
    }
    if missing.is_empty() && jit_only.is_empty() {
        c.agree(format!("{} has code for every GPU here ({carried}), so the missing kernel image is in an extension (flash-attn, xformers, a custom op...): rebuild that extension for this GPU.", capitalize(&from)));
        if let Some(g) = gpus.first() {
            c.fix(format!("Rebuild the failing extension for this GPU: TORCH_CUDA_ARCH_LIST=\"{}.{}\" pip install --no-build-isolation --force-reinstall --no-cache-dir <package>", g.cc.major, g.cc.minor));
        }
        return;
    }
    if !missing.is_empty() {
        c.agree(format!(
            "{} lacks code for {}: it carries {carried}.",
            capitalize(&from),
            missing.join(", ")
        ));
    }
    for (gpu, ptx) in &jit_only {
        // PTX is JIT-compiled by the driver at first use; code compiled without PTX (some of
        // the build's kernels, its bundled libraries, extensions) has no image for this GPU.
        c.agree(format!(
            "{} has no machine code for {gpu}, only PTX for {} that the driver must JIT-compile: code built without PTX has no image for this GPU. It carries {carried}.",
            capitalize(&from),
            ptx.sm()
        ));
    }
    let ccs: Vec<ComputeCapability> = gpus.iter().map(|g| g.cc).collect();
    let archs: Vec<String> = gpus.iter().map(|g| g.sm.clone()).collect();
    let in_release = match release {
        Some(r) => compat::builds_for_gpus(c.kb, &ccs, Some(r)),
        None => Vec::new(),
    };
    if let Some(v) = c.pick_variant_for_driver(&in_release) {
        c.fix(format!(
            "Install the {v} build of this PyTorch release, which has kernels for {}: {}",
            archs.join(", "),
            c.torch_install(&v)
        ));
    } else {
        let any = compat::builds_for_gpus(c.kb, &ccs, None);
        if let Some(v) = c.pick_variant_for_driver(&any) {
            let newer = compat::newest_release_with(c.kb, &v, &ccs)
                .map(|r| format!(" (offered by PyTorch {} among others)", r.version))
                .unwrap_or_default();
            c.fix(format!("No build of the installed PyTorch release covers {}; install a {v} build{newer}: {}", archs.join(", "), c.install_any("torch torchvision torchaudio", &v)));
        }
    }
}

/// Names the published build whose arch list is used, and says how sure that list is.
fn published_build(
    c: &mut Check,
    build: &BuildArchs,
    tag: &str,
    release: Option<&TorchRelease>,
) -> String {
    let recorded = &build.recorded_for.version;
    if build.borrowed {
        let asked = release
            .map(|r| format!("PyTorch {}", r.version))
            .unwrap_or_else(|| "the installed PyTorch".to_string());
        c.fact(format!("The arch list of the {tag} build of {asked} is not recorded; the {tag} build of PyTorch {recorded} stands in for it."));
    }
    if build.basis == Some(ArchListBasis::Snapshot) {
        c.fact(format!(
            "The arch list of PyTorch {recorded}'s {tag} build is {}.",
            ArchListBasis::Snapshot.describe()
        ));
    }
    format!("the published {tag} build of PyTorch {recorded}")
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}

fn toolkit(c: &mut Check, fields: &BTreeMap<String, String>, category: Category) {
    let f = c.facts;
    if category == Category::ToolkitMismatch {
        if let (Some(detected), Some(nvcc)) =
            (fields.get("detected_cuda"), f.nvcc_version.as_deref())
        {
            if cuda_version(detected) == cuda_version(nvcc) {
                c.agree(format!(
                    "The nvcc on PATH here is CUDA {nvcc}, as in the message."
                ));
            } else {
                c.contradict(format!("The message saw nvcc from CUDA {detected}, but the nvcc here is CUDA {nvcc}: the build ran elsewhere or with another PATH/CUDA_HOME."));
            }
        }
        if let (Some(tc_msg), Some(tc)) = (fields.get("torch_cuda"), f.torch_cuda.as_deref()) {
            if cuda_version(tc_msg).is_some() && cuda_version(tc_msg) != cuda_version(tc) {
                c.contradict(format!("The message's PyTorch was built with CUDA {tc_msg}; the PyTorch here is CUDA {tc}."));
            }
        }
    } else if let Some(home) = &f.cuda_home {
        c.fact(format!(
            "CUDA_HOME is set here to {home}; check that {home}/bin/nvcc exists."
        ));
    } else {
        c.agree("CUDA_HOME is not set on this machine.".to_string());
    }
    // The toolkit to use: the one matching torch's CUDA major.minor, else its major.
    let Some(tc) = f.torch_cuda.as_deref() else {
        return;
    };
    let want = cuda_version(tc);
    let exact = f
        .toolkits
        .iter()
        .find(|t| t.version.as_deref().and_then(cuda_version) == want);
    let same_major = f.toolkits.iter().find(|t| {
        t.version.as_deref().and_then(cuda_version).map(|m| m.major) == want.map(|w| w.major)
    });
    match exact.or(same_major) {
        Some(t) => {
            let v = t.version.as_deref().unwrap_or("?");
            c.fix(format!("Use the CUDA {v} toolkit at {} for PyTorch's CUDA {tc}: export CUDA_HOME={} PATH={}/bin:$PATH, then rebuild.", t.root, t.root, t.root));
        }
        None => {
            let found: Vec<String> = f
                .toolkits
                .iter()
                .map(|t| format!("{} ({})", t.version.as_deref().unwrap_or("?"), t.root))
                .collect();
            let have = if found.is_empty() {
                "none was found".to_string()
            } else {
                format!("found: {}", found.join(", "))
            };
            c.fix(format!("Install a CUDA {tc} toolkit (PyTorch's CUDA; {have}), e.g. pip install nvidia-cuda-nvcc-cu{} or the NVIDIA toolkit {tc}, and point CUDA_HOME at it.", tc.split('.').next().unwrap_or(tc)));
        }
    }
}

fn suffix(c: &mut Check, fields: &BTreeMap<String, String>) {
    let f = c.facts;
    let Some(tc) = f.torch_cuda.as_deref() else {
        return;
    };
    if let Some(msg_tc) = fields.get("torch_cuda") {
        if cuda_version(msg_tc).is_some() && cuda_version(msg_tc) != cuda_version(tc) {
            c.contradict(format!("The message's PyTorch is CUDA {msg_tc}; the PyTorch here is CUDA {tc}: the message comes from another environment."));
        } else if cuda_version(msg_tc).is_some() {
            c.agree(format!("The PyTorch here is CUDA {tc}, as in the message."));
        }
    }
    if let Some(v) = cuda_version(tc).map(|cu| cu.tag()) {
        c.fix(format!(
            "Reinstall the companions from PyTorch's own index so all share {v}: {}",
            c.torch_install(&v)
        ));
    }
}

fn library_path(c: &mut Check, fields: &BTreeMap<String, String>) {
    let f = c.facts;
    let Some(lib) = fields.get("lib") else {
        return;
    };
    if lib.starts_with("libcuda.so") {
        match f.platform {
            Platform::Wsl => c.fix("This is WSL: export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH (libcuda comes from the Windows driver there).".to_string()),
            Platform::Container => c.fix("This is a container: start it with --gpus all so the host's libcuda is mounted.".to_string()),
            _ => {}
        }
        if f.driver_version.is_some() && f.platform != Platform::Container {
            c.fact(
                "A driver is installed here; check that its libcuda.so.1 is in ldconfig -p."
                    .to_string(),
            );
        }
        return;
    }
    // "libcudart.so.11.0" -> 11; compare with the CUDA major of the installed torch.
    let soname_major = lib
        .split(".so.")
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|v| v.parse::<u32>().ok());
    if let (Some(want), Some(tc)) = (soname_major, f.torch_cuda.as_deref()) {
        if lib.starts_with("libcudart")
            || lib.starts_with("libcublas")
            || lib.starts_with("libcufft")
            || lib.starts_with("libcusparse")
            || lib.starts_with("libnvrtc")
        {
            if let Some(have) = cuda_version(tc).map(|cu| cu.major) {
                if have != want {
                    c.agree(format!("{lib} is a CUDA {want} library, but this environment's PyTorch uses CUDA {have}: a package built for CUDA {want} is installed next to a CUDA {have} stack. Install that package's CUDA {have} build."));
                } else {
                    c.fact(format!("PyTorch here uses CUDA {have}; its {lib} should come from the pip nvidia-* packages or the PyTorch wheel."));
                }
            }
        }
    }
}

fn container(c: &mut Check, fields: &BTreeMap<String, String>) {
    let f = c.facts;
    if let (Some(req), Some(max)) = (fields.get("required_cuda"), f.driver_max_cuda.as_deref()) {
        if cuda_version(max) >= cuda_version(req) && cuda_version(req).is_some() {
            c.contradict(format!("The image needs CUDA {req}, and this machine's driver supports CUDA {max}: on this host the requirement holds; the message comes from another host."));
        } else {
            c.agree(format!(
                "This host's driver supports CUDA {max}, older than the image's CUDA {req}."
            ));
            let shipped =
                cuda_version(req).and_then(|r| compat::toolkit_driver(c.kb, r, f.platform));
            if let Some(d) = shipped {
                c.fix(format!("Update the host driver to {d} or newer (the driver CUDA {req} shipped with), or use an image built for CUDA {max} or older."));
            }
        }
    }
}

fn sdpa(c: &mut Check, fields: &BTreeMap<String, String>) {
    let gpus = c.gpu_archs();
    if let Some(arch) = fields.get("arch") {
        if !gpus.is_empty() && !gpus.iter().any(|g| &g.sm == arch) {
            c.contradict(format!(
                "The message is about a {arch} GPU, which this machine does not have."
            ));
        }
    }
    let old: Vec<String> = gpus
        .iter()
        .filter(|g| g.cc.major < 8)
        .map(Gpu::label)
        .collect();
    if !old.is_empty() {
        c.agree(format!("{} predates Ampere (sm_80): flash attention cannot run on it; memory-efficient attention is the fast path there.", old.join(", ")));
    }
    if c.windows()
        && fields
            .get("kernel")
            .is_some_and(|k| k.to_ascii_lowercase().contains("flash"))
    {
        c.agree(
            "This is Windows, where the official PyTorch builds have no flash attention kernel."
                .to_string(),
        );
    }
}

fn oom(c: &mut Check, fields: &BTreeMap<String, String>) {
    let f = c.facts;
    let total = fields.get("total").and_then(|t| parse_gib(t));
    let gpu_index: usize = fields.get("gpu").and_then(|g| g.parse().ok()).unwrap_or(0);
    let here = f
        .gpus
        .get(gpu_index)
        .and_then(|g| g.memory_mib.map(|m| (g.name.clone(), m as f64 / 1024.0)));
    if let (Some(total), Some((name, mem))) = (total, here) {
        if (total - mem).abs() > mem.max(total) * 0.15 {
            c.contradict(format!("The message's GPU has {total:.1} GiB; GPU {gpu_index} here ({name}) has {mem:.1} GiB: the message comes from another machine."));
        } else {
            c.agree(format!(
                "GPU {gpu_index} here ({name}) has {mem:.1} GiB, as in the message."
            ));
        }
    }
}

/// "8.00 GiB" -> 8.0; "512.00 MiB" -> 0.5
fn parse_gib(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|ch: char| ch.is_ascii_alphabetic())?);
    let n: f64 = num.trim().parse().ok()?;
    let unit = unit.trim().to_ascii_lowercase();
    Some(match unit.chars().next()? {
        't' => n * 1024.0,
        'g' => n,
        'm' => n / 1024.0,
        'k' => n / (1024.0 * 1024.0),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gib_parsing() {
        assert_eq!(parse_gib("8.00 GiB"), Some(8.0));
        assert_eq!(parse_gib("512.00 MiB"), Some(0.5));
        assert_eq!(parse_gib("lots"), None);
    }
}
