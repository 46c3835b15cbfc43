//! The command line. `cudoctor` alone means `cudoctor check`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "cudoctor",
    version,
    about = "Diagnoses the NVIDIA CUDA stack: driver, toolkit, framework, kernel images, libraries.",
    long_about = "Diagnoses the NVIDIA CUDA stack of a deep-learning machine: which link of driver -> toolkit -> \
                  framework -> kernel images -> libraries is broken, why, and the exact commands that fix it. \
                  Read-only: fixes are printed, never run.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub check: CheckArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The layered diagnosis of this machine (the default).
    Check(CheckArgs),
    /// Which GPU architectures each CUDA library carries, and which GPU cannot run it.
    Kernels(KernelsArgs),
    /// Which copy of each library every component really loads (ld.so emulated), and unresolved symbols.
    Libs(LibsArgs),
    /// The right torch/torchvision/torchaudio build for this driver and these GPUs, as commands.
    Plan(PlanArgs),
    /// Read an error message or a whole log, name the cause, check it against this machine, give the fix.
    Explain(ExplainArgs),
    /// Print the documentation of one finding code (e.g. `cudoctor rule DRV004`).
    Rule {
        /// A code such as DRV004, or a rule name such as driver-too-old-for-torch.
        code: String,
    },
    /// List every finding code.
    Rules {
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// What changed between two saved snapshots (before/after an upgrade, node vs node).
    Diff {
        before: PathBuf,
        after: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Many nodes' snapshots side by side: drift, outliers, failing nodes.
    Fleet {
        #[arg(required = true)]
        snapshots: Vec<PathBuf>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
    /// One self-contained HTML file with plots (check only).
    Html,
    /// Prometheus text exposition for node_exporter's textfile collector (check only).
    Prometheus,
}

/// Options shared by commands that look at a machine.
#[derive(Debug, Clone, Args)]
pub struct MachineArgs {
    /// Take the machine from this directory instead of `/` (for tests and for inspecting a mounted image).
    /// Dynamic loading of NVML and libcuda is off under a root other than `/`.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Seconds to wait for nvidia-smi, nvcc and the driver libraries before giving up.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub timeout: f64,
    /// Read knowledge-base files from this directory, overriding the built-in ones of the same name.
    #[arg(long, value_name = "DIR")]
    pub kb: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Python interpreter or environment prefix to inspect (repeatable). Default: the active venv,
    /// the active conda env, then python3/python on PATH.
    #[arg(long, value_name = "PATH")]
    pub python: Vec<String>,
    /// Write the collected snapshot (JSON) to FILE.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Analyse a saved snapshot instead of this machine.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["python", "save"])]
    pub snapshot: Option<PathBuf>,
    /// Exit 1 on warnings too, not only on errors.
    #[arg(long)]
    pub strict: bool,
    /// What-if: judge the stack for these GPUs instead of the present ones ("RTX 5090", sm_120, 12.0).
    /// Repeatable, one per GPU.
    #[arg(long, value_name = "NAME|sm_XX")]
    pub gpu: Vec<String>,
    /// Also run the runtime probes in each environment's own interpreter (a child process): is CUDA
    /// available and why not, attention backends timed, torch.compile, and an all-reduce across GPUs.
    #[arg(long)]
    pub deep: bool,
    /// Seconds the runtime probe may take per interpreter.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 120.0,
        requires = "deep"
    )]
    pub deep_timeout: f64,
    /// Switch off the fused attention backends in the probe (to see what the fallback costs).
    #[arg(long, requires = "deep", hide = true)]
    pub deep_disable_fused: bool,
    /// Hash every file of torch and the nvidia-* wheels against their RECORD (reads GBs). By default
    /// every size is checked and only the small CUDA libraries are hashed.
    #[arg(long)]
    pub verify_wheels: bool,
    #[command(flatten)]
    pub machine: MachineArgs,
}

#[derive(Debug, Clone, Args)]
pub struct KernelsArgs {
    /// Libraries or directories to scan. Default: every CUDA library of each Python environment found.
    pub paths: Vec<String>,
    /// Judge for this GPU instead of the present ones (a name such as "RTX 5090", or sm_120 / 12.0). Repeatable.
    #[arg(long, value_name = "NAME|sm_XX")]
    pub gpu: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Python interpreter or environment prefix whose libraries to scan (repeatable).
    #[arg(long, value_name = "PATH")]
    pub python: Vec<String>,
    #[command(flatten)]
    pub machine: MachineArgs,
}

#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Plan for this driver instead of the detected one (e.g. 470.82.01).
    #[arg(long, value_name = "VERSION")]
    pub driver: Option<String>,
    /// Plan for these GPUs instead of the detected ones ("RTX 3090", sm_86, 8.6). Repeatable, one per GPU.
    #[arg(long, value_name = "NAME|sm_XX")]
    pub gpu: Vec<String>,
    /// Wanted CUDA variant (e.g. 12.4).
    #[arg(long, value_name = "X.Y")]
    pub cuda: Option<String>,
    /// Wanted torch release or series (e.g. 2.5 or 2.5.1).
    #[arg(long, value_name = "VERSION")]
    pub torch: Option<String>,
    /// Python version the packages are for (default: the detected environment's).
    #[arg(long, value_name = "X.Y")]
    pub python: Option<String>,
    #[arg(long, value_name = "pip|uv|conda", default_value = "pip")]
    pub installer: String,
    /// Ignore this machine: plan only from the flags given.
    #[arg(long)]
    pub no_detect: bool,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub machine: MachineArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// A log file, or `-` for standard input (the default).
    #[arg(default_value = "-")]
    pub input: String,
    /// Cross-check with a saved snapshot instead of this machine.
    #[arg(long, value_name = "FILE")]
    pub snapshot: Option<PathBuf>,
    /// Do not look at this machine at all.
    #[arg(long)]
    pub no_machine: bool,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub machine: MachineArgs,
}

#[derive(Debug, Clone, Args)]
pub struct LibsArgs {
    /// Libraries to load, in order, into one emulated process. Default: `import torch` followed by
    /// each CUDA extension, for each Python environment found.
    pub paths: Vec<String>,
    /// Check the undefined symbols of every loaded object, not only of the ones named.
    #[arg(long)]
    pub all_symbols: bool,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Python interpreter or environment prefix to inspect (repeatable).
    #[arg(long, value_name = "PATH")]
    pub python: Vec<String>,
    #[command(flatten)]
    pub machine: MachineArgs,
}
