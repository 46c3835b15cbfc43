//! The command line. `cudoctor` alone means `cudoctor check`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "cudoctor",
    version,
    long_version = crate::build_info::version_line(),
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
    ///
    /// Exit status: 0 when the answer is given (what-if planning with --gpu/--driver/--no-detect,
    /// or an environment that already fits), 1 when the detected environment needs the printed
    /// changes, 2 for bad input (an unknown GPU name or release).
    Plan(PlanArgs),
    /// Read an error message or a whole log, name the cause, check it against this machine, give the fix.
    Explain(ExplainArgs),
    /// Print the documentation of one finding code (e.g. `cudoctor rule DRV004`).
    Rule {
        /// A code such as DRV004, or a rule name such as driver-too-old-for-torch.
        code: String,
        /// text and markdown print the documentation (it is Markdown); json adds the rule's fields.
        #[arg(long, value_enum, default_value_t = IssueFormat::Text)]
        format: IssueFormat,
    },
    /// Serve check, explain, plan, kernels and libs to an AI agent: a Model Context Protocol
    /// server on standard input and output (JSON-RPC 2.0, protocol 2025-06-18). Read-only.
    Mcp,
    /// List every finding code.
    Rules {
        #[arg(long, value_enum, default_value_t = IssueFormat::Text)]
        format: IssueFormat,
    },
    /// What changed between two saved snapshots (before/after an upgrade, node vs node): driver,
    /// GPUs, toolkits, builds and packages, NCCL, loaded libraries, then findings that appeared
    /// or went away, then runtime measurements. Exit 0: nothing that matters changed; 1: something
    /// did; 2: bad input.
    Diff {
        before: PathBuf,
        after: PathBuf,
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
        /// Also list every raw field that changed.
        #[arg(long)]
        verbose: bool,
    },
    /// Many nodes' snapshots side by side: failing nodes, the value most nodes have and the nodes
    /// that differ, findings only some nodes have. Exit 0: all alike and healthy; 1: not.
    Fleet(FleetArgs),
    /// Print shell completions: bash, zsh, fish, powershell or elvish.
    Completions { shell: clap_complete::Shell },
    /// Print the manual page, or write it and one page per subcommand into a directory.
    Man {
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// Run your own program with an observer: attention backends really used, compile graph
    /// breaks, memory per step, step time; reports at exit; --baseline compares with an earlier run.
    Run(RunArgs),
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub command: Option<FleetCommand>,
    /// Snapshot files, one per node (`check --save`, or `check --format json` reports); each
    /// node is named by its file name without `.json`.
    #[arg(required = true, value_name = "SNAPSHOT")]
    pub snapshots: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
}

#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Collect one snapshot per node through Slurm (`--slurm [SRUN ARGS..]`, last) or from a log
    /// of `fleet node` output (`--from-log`), then print the fleet report.
    Collect(FleetCollectArgs),
    /// Collect this node's snapshot and print it as frames for `fleet collect`: what each srun
    /// task, sbatch step or Kubernetes pod runs.
    Node(FleetNodeArgs),
}

#[derive(Debug, Args)]
pub struct FleetCollectArgs {
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Also write each node's snapshot to DIR/NODE.json, and the report to DIR/fleet.json.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Seconds the whole collection may take; srun's --time is set from it.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub timeout: f64,
    /// Seconds each node waits for nvidia-smi, nvcc and the driver libraries.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub node_timeout: f64,
    /// Read the frames from this file (`-`: standard input) instead of running srun: an sbatch
    /// job's output, or `kubectl logs --prefix` of the DaemonSet in deploy/kubernetes.
    #[arg(long, value_name = "FILE", conflicts_with = "slurm")]
    pub from_log: Option<PathBuf>,
    /// Run `cudoctor fleet node` on one task per allocated node through srun; everything after
    /// --slurm goes to srun (e.g. `--slurm -N 4 -p gpu`).
    #[arg(
        long,
        num_args = 0..,
        allow_hyphen_values = true,
        value_name = "SRUN ARGS"
    )]
    pub slurm: Option<Vec<String>>,
}

#[derive(Debug, Args)]
pub struct FleetNodeArgs {
    /// The node's name in the report. Default: SLURMD_NODENAME, then the host name.
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// Python interpreter or environment prefix to inspect (repeatable).
    #[arg(long, value_name = "PATH", value_parser = path_text())]
    pub python: Vec<String>,
    #[command(flatten)]
    pub machine: MachineArgs,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Where the reports go, by FILE's extension: FILE.md gets the Markdown report alone,
    /// FILE.html the HTML report alone; any other FILE (FILE.json) gets the JSON report, with
    /// the Markdown and HTML reports beside it (.md, .html). Default: cudoctor-run.json.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// An earlier run's JSON report to compare with: peak memory, step time, backends, graph breaks.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Also profile the GPU kernels of the step after step N (torch's profiler prints a few lines).
    #[arg(long, value_name = "N")]
    pub profile_step: Option<u64>,
    /// Do not measure a math-path attention call against a fused backend.
    #[arg(long)]
    pub no_cost: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `check`'s formats: the report in every form, and the Prometheus exposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
    Markdown,
    /// One self-contained HTML file with plots.
    Html,
    /// Prometheus text exposition for node_exporter's textfile collector.
    Prometheus,
}

/// The formats of `diff` and `fleet`: a report to read, paste into an issue, or open in a browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
    Markdown,
    /// One self-contained HTML file.
    Html,
}

/// The formats of `explain`, `kernels`, `libs`, `plan`, `rule` and `rules`: text for a person,
/// JSON for a program, Markdown to paste into an issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IssueFormat {
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
    /// Seconds to wait for nvidia-smi, nvcc and the driver libraries before giving up; the
    /// reading of files (hashing, walking, scanning) ends there too, and what it did not look at
    /// is said (PLT040), never judged.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub timeout: f64,
    /// Read knowledge-base files from this directory, overriding the built-in ones of the same name.
    #[arg(long, value_name = "DIR")]
    pub kb: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// A project directory whose CUDA binaries (in-place builds) are judged too. Default: the
    /// current directory, when it is a Python project's root (pyproject.toml, setup.py or
    /// setup.cfg).
    #[arg(value_name = "PROJECT", value_parser = path_text(), conflicts_with = "snapshot")]
    pub project: Option<String>,
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub format: CheckFormat,
    /// Python interpreter or environment prefix to inspect (repeatable). Default: the active venv,
    /// the active conda env, then python3/python on PATH.
    #[arg(long, value_name = "PATH", value_parser = path_text())]
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
    /// Replace the home directory (by ~), user names and the host name in the report, to paste
    /// it where anyone can read it; with --format markdown, a collapsed block for a GitHub issue.
    #[arg(long)]
    pub redact: bool,
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
    /// Stages of the probe to leave out (sdpa, extensions, compile, all-reduce, frameworks);
    /// repeatable.
    #[arg(long, requires = "deep", hide = true, value_name = "STAGE")]
    pub deep_skip: Vec<String>,
    /// Hash every file of torch and the nvidia-* wheels against their RECORD (reads GBs: give a
    /// --timeout long enough; what is not hashed by then is said, PLT040). By default every size
    /// is checked and only the small CUDA libraries are hashed.
    #[arg(long)]
    pub verify_wheels: bool,
    /// Prove every printed fix before you run it: its package changes applied to the collected
    /// facts and the check run again ("verified: ..." or what would remain). `--verify=install`
    /// also runs the commands in a temporary copy of the environment (network; the copy is
    /// deleted) and checks the copy. Your environment is only read.
    #[arg(long, value_enum, value_name = "HOW", num_args = 0..=1, require_equals = true, default_missing_value = "facts")]
    pub verify: Option<VerifyMode>,
    #[command(flatten)]
    pub machine: MachineArgs,
}

/// How `--verify` proves a fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerifyMode {
    /// On the collected facts: no command runs.
    Facts,
    /// Also in a temporary copy of the environment, where the commands run.
    Install,
}

#[derive(Debug, Clone, Args)]
pub struct KernelsArgs {
    /// Libraries or directories to scan. Default: every CUDA library of each Python environment found.
    #[arg(value_parser = path_text())]
    pub paths: Vec<String>,
    /// Judge for this GPU instead of the present ones (a name such as "RTX 5090", or sm_120 / 12.0). Repeatable.
    #[arg(long, value_name = "NAME|sm_XX")]
    pub gpu: Vec<String>,
    #[arg(long, value_enum, default_value_t = IssueFormat::Text)]
    pub format: IssueFormat,
    /// Python interpreter or environment prefix whose libraries to scan (repeatable).
    #[arg(long, value_name = "PATH", value_parser = path_text())]
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
    pub python_version: Option<String>,
    /// Python interpreter or environment prefix to plan for, as for `check` (default: the active
    /// venv, the active conda env, then python3/python on PATH). An X.Y that names no file is
    /// read as --python-version, its old spelling.
    #[arg(long, value_name = "PATH", value_parser = path_text())]
    pub python: Option<String>,
    /// The installer whose command to headline (default: the environment's own installer,
    /// naming its interpreter; pip without an environment).
    #[arg(long, value_name = "pip|uv|conda")]
    pub installer: Option<String>,
    /// Plan for this platform: linux-x86_64, linux-aarch64 (Grace Hopper / Grace Blackwell
    /// servers), windows, jetson (default: the detected machine's; linux-x86_64 with --no-detect).
    #[arg(long, value_name = "PLATFORM")]
    pub platform: Option<String>,
    /// Ignore this machine: plan only from the flags given.
    #[arg(long)]
    pub no_detect: bool,
    /// Also print the reasoning: every reason, what to avoid, warnings and the other installers' commands.
    #[arg(long, short)]
    pub verbose: bool,
    /// Prove the remedy for the environment before you run it, as `check --verify` does (its
    /// package changes applied to the facts and the check run again; `=install`: in a temporary
    /// copy of the environment).
    #[arg(long, value_enum, value_name = "HOW", num_args = 0..=1, require_equals = true, default_missing_value = "facts", conflicts_with = "no_detect")]
    pub verify: Option<VerifyMode>,
    #[arg(long, value_enum, default_value_t = IssueFormat::Text)]
    pub format: IssueFormat,
    #[command(flatten)]
    pub machine: MachineArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ExplainArgs {
    /// A log file, or `-` for standard input (the default).
    #[arg(default_value = "-", value_parser = path_text())]
    pub input: String,
    /// Confirm against a saved snapshot instead of this machine.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["python", "no_machine"])]
    pub snapshot: Option<PathBuf>,
    /// Python interpreter or environment prefix to inspect (repeatable), as for `check`.
    #[arg(long, value_name = "PATH", value_parser = path_text())]
    pub python: Vec<String>,
    /// What-if: judge the machine with these GPUs instead of the present ones, as for `check`.
    #[arg(long, value_name = "NAME|sm_XX")]
    pub gpu: Vec<String>,
    /// Do not look at this machine at all.
    #[arg(long, conflicts_with_all = ["python", "gpu"])]
    pub no_machine: bool,
    #[arg(long, value_enum, default_value_t = IssueFormat::Text)]
    pub format: IssueFormat,
    /// Prove the fix before you run it, where this machine confirms the cause: the confirming
    /// findings' fixes are verified as `check --verify` does (`=install`: in a temporary copy of
    /// the environment). A fix taken from the message alone is said to be unverified.
    #[arg(long, value_enum, value_name = "HOW", num_args = 0..=1, require_equals = true, default_missing_value = "facts", conflicts_with = "no_machine")]
    pub verify: Option<VerifyMode>,
    #[command(flatten)]
    pub machine: MachineArgs,
}

#[derive(Debug, Clone, Args)]
pub struct LibsArgs {
    /// Libraries to load, in order, into one emulated process. Default: `import torch` followed by
    /// each CUDA extension, for each Python environment found.
    #[arg(value_parser = path_text())]
    pub paths: Vec<String>,
    /// Check the undefined symbols of every loaded object, not only of the ones named.
    #[arg(long)]
    pub all_symbols: bool,
    #[arg(long, value_enum, default_value_t = IssueFormat::Text)]
    pub format: IssueFormat,
    /// Python interpreter or environment prefix to inspect (repeatable).
    #[arg(long, value_name = "PATH", value_parser = path_text())]
    pub python: Vec<String>,
    #[command(flatten)]
    pub machine: MachineArgs,
}

/// A path argument as text, its bytes that are not UTF-8 kept (`cudoctor_types::os_text`):
/// `kernels $'lib\xff.so'` names that file, not another.
fn path_text() -> clap::builder::MapValueParser<
    clap::builder::OsStringValueParser,
    fn(std::ffi::OsString) -> String,
> {
    fn text(s: std::ffi::OsString) -> String {
        cudoctor_types::os_text::from_os(&s).into_owned()
    }
    use clap::builder::TypedValueParser as _;
    clap::builder::OsStringValueParser::new().map(text as fn(std::ffi::OsString) -> String)
}
