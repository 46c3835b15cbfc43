//! Fixes as data: each step is a shell command to run or a sentence to read, never both, so
//! every renderer can put commands in copy-pasteable code blocks and prose beside them.

use serde::{Deserialize, Serialize};

/// One step of a fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FixStep {
    /// A command line for a POSIX shell, complete and copy-pasteable (a trailing `# comment`
    /// is allowed); paths in it are quoted with [`quote`].
    Shell(String),
    /// A sentence for a person: an alternative, a precondition, a step no command expresses.
    Prose(String),
}

impl FixStep {
    pub fn text(&self) -> &str {
        match self {
            FixStep::Shell(s) | FixStep::Prose(s) => s,
        }
    }

    pub fn is_shell(&self) -> bool {
        matches!(self, FixStep::Shell(_))
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

/// A word for a POSIX shell: unchanged when it holds only characters no shell treats
/// specially, else in single quotes (a `'` inside written as `'\''`). The one place command
/// builders quote paths and other values taken from the machine.
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_leaves_plain_words_and_protects_the_rest() {
        assert_eq!(quote("/opt/venv/bin/python"), "/opt/venv/bin/python");
        assert_eq!(quote("torch==2.11.0+cu130"), "torch==2.11.0+cu130");
        assert_eq!(quote("/home/a b/venv"), "'/home/a b/venv'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$HOME"), "'$HOME'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn steps_serialise_with_their_kind() {
        let s = serde_json::to_string(&[
            FixStep::Shell("nvidia-smi".into()),
            FixStep::Prose("Reboot.".into()),
        ])
        .unwrap();
        assert_eq!(s, r#"[{"shell":"nvidia-smi"},{"prose":"Reboot."}]"#);
        assert!(FixStep::Shell("nvidia-smi -L".into()).contains("-L"));
    }
}
