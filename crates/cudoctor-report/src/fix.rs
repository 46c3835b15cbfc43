//! Fixes as data: each step is a shell command to run or a sentence to read, never both, so
//! every renderer can put commands in copy-pasteable code blocks and prose beside them.

use serde::{Deserialize, Serialize};

/// One step of a fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FixStep {
    /// A command line for a POSIX shell, complete and copy-pasteable (a trailing `# comment`
    /// is allowed); paths in it are quoted with `cudoctor_plan::quote`.
    Shell(String),
    /// A sentence for a person: an alternative, a precondition, a step no command expresses.
    Prose(String),
    /// A command line for Windows PowerShell, complete and copy-pasteable; paths in it are
    /// quoted with `cudoctor_plan::quote_powershell`.
    #[serde(rename = "powershell")]
    PowerShell(String),
}

impl FixStep {
    pub fn text(&self) -> &str {
        match self {
            FixStep::Shell(s) | FixStep::Prose(s) | FixStep::PowerShell(s) => s,
        }
    }

    /// A POSIX shell command.
    pub fn is_shell(&self) -> bool {
        matches!(self, FixStep::Shell(_))
    }

    /// A command of either shell (not prose).
    pub fn is_command(&self) -> bool {
        matches!(self, FixStep::Shell(_) | FixStep::PowerShell(_))
    }
}

/// A step reads as its text, so `step.contains(..)` works where only the words matter.
impl std::ops::Deref for FixStep {
    type Target = str;
    fn deref(&self) -> &str {
        self.text()
    }
}

/// Compares the words only, whatever the kind.
impl PartialEq<str> for FixStep {
    fn eq(&self, other: &str) -> bool {
        self.text() == other
    }
}

impl PartialEq<&str> for FixStep {
    fn eq(&self, other: &&str) -> bool {
        self.text() == *other
    }
}

impl PartialEq<String> for FixStep {
    fn eq(&self, other: &String) -> bool {
        self.text() == other
    }
}

impl std::fmt::Display for FixStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

/// Who a command is written for: an environment's shell (POSIX, or PowerShell for a Windows
/// environment) makes its line a step of that shell (`cudoctor_plan::TargetEnv`).
pub trait CommandTarget {
    fn step(&self, command: String) -> FixStep;
}
