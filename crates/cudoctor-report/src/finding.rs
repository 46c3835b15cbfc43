use serde::{Deserialize, Serialize};

use crate::fix::{CommandTarget, FixStep};
use crate::rule::Rule;

/// The layers of the stack, in the order a person should check them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    Driver,
    Toolkit,
    Framework,
    Kernels,
    Libraries,
    Acceleration,
    Multigpu,
    Platform,
}

impl Layer {
    pub const ALL: [Layer; 8] = [
        Layer::Platform,
        Layer::Driver,
        Layer::Toolkit,
        Layer::Framework,
        Layer::Kernels,
        Layer::Libraries,
        Layer::Acceleration,
        Layer::Multigpu,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Layer::Driver => "driver",
            Layer::Toolkit => "toolkit",
            Layer::Framework => "framework",
            Layer::Kernels => "kernels",
            Layer::Libraries => "libraries",
            Layer::Acceleration => "acceleration",
            Layer::Multigpu => "multigpu",
            Layer::Platform => "platform",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Layer::Driver => "Driver",
            Layer::Toolkit => "CUDA Toolkit",
            Layer::Framework => "Framework",
            Layer::Kernels => "Kernel images",
            Layer::Libraries => "Libraries",
            Layer::Acceleration => "Accelerated paths",
            Layer::Multigpu => "Multi-GPU",
            Layer::Platform => "Platform",
        }
    }
}

/// How bad a finding is. Ordered from the worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// How sure the rule is. Anything below `Certain` says so in the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    #[default]
    Certain,
    Likely,
    Unsure,
}

/// What a finding is about, as typed keys the cause pass links findings by (never their words).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// The torch build of the environment at `env`: its release, CUDA variant and paired
    /// companions, what the build chooser (cudoctor-plan) changes as one command set.
    TorchBuild { env: String },
    /// One installed distribution (pip name) of the environment at `env`.
    Package { env: String, name: String },
    /// A shared library by file name (soname) that the environment at `env` lacks.
    MissingLibrary { env: String, soname: String },
    /// What the runtime probe of the environment at `env` saw (`--deep`).
    Runtime { env: String },
    /// The NVIDIA driver and the GPUs it shows.
    Driver,
    /// Builds of more than one CUDA major in the environment at `env` (frameworks, wheels,
    /// libraries its processes load): one remedy, one CUDA major.
    MixedCudaMajors { env: String },
    /// A framework build of the environment at `env` that this finding's fix replaces with its
    /// build for another CUDA major (by the distribution removed: "jax-cuda13-plugin"): that
    /// build's own findings follow from this one.
    MovesFramework { env: String, name: String },
    /// One GPU, by the driver's index: what its compute capability rules out.
    Gpu { index: u32 },
    /// A variable that selects the CUDA Toolkit builds use (CUDA_HOME, CUDA_PATH).
    ToolkitSetting { var: String },
    /// What `import torch` loads on Windows for the Python at `python`.
    WindowsTorchImport { python: String },
}

/// One judgement: what is wrong (or worth knowing), the facts behind it, why, and what to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub code: String,
    /// Unique within one report: the code, with `-N` for its Nth finding from the second on
    /// ("LIB004", "LIB004-2"). Given by `cudoctor_analyse::analyse`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    pub layer: Layer,
    pub severity: Severity,
    pub title: String,
    /// The facts used, each naming its source.
    pub evidence: Vec<String>,
    /// Why this happens.
    pub cause: String,
    /// Exact commands or steps, in order. Empty for a consequence: its cause's fix repairs it.
    pub fix: Vec<FixStep>,
    #[serde(default, skip_serializing_if = "is_certain")]
    pub confidence: Confidence,
    /// The code of the finding this one follows from (or that the same remedy repairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caused_by: Option<String>,
    /// The [`Finding::id`] of that finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caused_by_id: Option<String>,
    /// What the finding is about, the keys the cause pass links by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub about: Vec<Subject>,
}

fn is_certain(c: &Confidence) -> bool {
    *c == Confidence::Certain
}

impl Finding {
    /// A finding of `rule` at the rule's default severity.
    pub fn new<Check>(rule: &Rule<Check>, title: impl Into<String>) -> Finding {
        rule.finding(title)
    }

    pub fn severity(mut self, s: Severity) -> Self {
        self.severity = s;
        self
    }

    pub fn evidence(mut self, e: impl Into<String>) -> Self {
        self.evidence.push(e.into());
        self
    }

    pub fn cause(mut self, c: impl Into<String>) -> Self {
        self.cause = c.into();
        self
    }

    /// A command line to run (quote machine-taken words with `cudoctor_plan::quote`).
    pub fn shell(mut self, cmd: impl Into<String>) -> Self {
        self.fix.push(FixStep::Shell(cmd.into()));
        self
    }

    /// A command written for `target` (by its `install`, `uninstall`, `cache_remove`), as the
    /// step of that environment's shell: POSIX, or PowerShell for a Windows environment.
    pub fn command(mut self, target: &impl CommandTarget, cmd: impl Into<String>) -> Self {
        self.fix.push(target.step(cmd.into()));
        self
    }

    /// A Windows PowerShell command line (quote paths with `cudoctor_plan::quote_powershell_path`).
    pub fn powershell(mut self, cmd: impl Into<String>) -> Self {
        self.fix.push(FixStep::PowerShell(cmd.into()));
        self
    }

    /// A step in words: an alternative, a precondition, what no command expresses.
    pub fn prose(mut self, text: impl Into<String>) -> Self {
        self.fix.push(FixStep::Prose(text.into()));
        self
    }

    /// Steps made elsewhere (the build chooser), in order.
    pub fn steps(mut self, steps: impl IntoIterator<Item = FixStep>) -> Self {
        self.fix.extend(steps);
        self
    }

    pub fn about(mut self, s: Subject) -> Self {
        if !self.about.contains(&s) {
            self.about.push(s);
        }
        self
    }

    pub fn confidence(mut self, c: Confidence) -> Self {
        self.confidence = c;
        self
    }

    /// True when another finding of the report is its cause.
    pub fn is_consequence(&self) -> bool {
        self.caused_by.is_some()
    }
}

/// A finding by what a comparison of two reports shows of it: its code, severity, layer and
/// title (`diff`'s findings that appeared or went away).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingRef {
    pub code: String,
    pub severity: Severity,
    pub layer: Layer,
    pub title: String,
}

impl From<&Finding> for FindingRef {
    fn from(f: &Finding) -> FindingRef {
        FindingRef {
            code: f.code.clone(),
            severity: f.severity,
            layer: f.layer,
            title: f.title.clone(),
        }
    }
}
