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
    #[command(flatten)]
    pub machine: MachineArgs,
}
