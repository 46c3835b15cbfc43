use serde::{Deserialize, Serialize};

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

/// One judgement: what is wrong (or worth knowing), the facts behind it, why, and what to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub code: String,
    pub layer: Layer,
    pub severity: Severity,
    pub title: String,
    /// The facts used, each naming its source.
    pub evidence: Vec<String>,
    /// Why this happens.
    pub cause: String,
    /// Exact commands or steps, in order.
    pub fix: Vec<String>,
    #[serde(default, skip_serializing_if = "is_certain")]
    pub confidence: Confidence,
}

fn is_certain(c: &Confidence) -> bool {
    *c == Confidence::Certain
}

impl Finding {
    /// A finding of `rule` at the rule's default severity.
    pub fn new(rule: &Rule, title: impl Into<String>) -> Finding {
        Finding {
            code: rule.code.to_string(),
            layer: rule.layer,
            severity: rule.severity,
            title: title.into(),
            evidence: Vec::new(),
            cause: String::new(),
            fix: Vec::new(),
            confidence: Confidence::Certain,
        }
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

    pub fn fix(mut self, f: impl Into<String>) -> Self {
        self.fix.push(f.into());
        self
    }

    pub fn confidence(mut self, c: Confidence) -> Self {
        self.confidence = c;
        self
    }
}
