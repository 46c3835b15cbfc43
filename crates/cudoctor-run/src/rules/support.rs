//! Number formatting and test builders shared by the run rules (times and sizes written as
//! check's rules write them).

pub use cudoctor_analyse::views::units::{mib, ms};

/// The first non-empty line of a long text, at most 240 characters.
pub fn first_line(s: &str) -> String {
    let line = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    line.chars().take(240).collect()
}

pub use crate::shell_words;

/// The command as a shell would read it back, each word quoted when it needs it.
pub fn shell_words_impl(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
pub mod fixtures {
    use cudoctor_snapshot::*;

    pub fn process(pid: u32) -> ProcessRecord {
        ProcessRecord {
            observer_version: OBSERVER_VERSION,
            pid,
            argv: vec!["train.py".into()],
            torch: Some(ObservedTorch {
                version: "2.11.0+cu130".into(),
                cuda: Some("13.0".into()),
                device_name: Some("NVIDIA H200".into()),
                capability: Some("9.0".into()),
            }),
            ..Default::default()
        }
    }

    pub fn run_of(processes: Vec<ProcessRecord>) -> RunFacts {
        RunFacts {
            command: vec!["python".into(), "train.py".into()],
            exit: ChildExit {
                code: Some(0),
                ..Default::default()
            },
            processes,
            ..Default::default()
        }
    }

    pub fn group(dtype: &str, ops: &[&str], calls: u64) -> SdpaGroup {
        SdpaGroup {
            device: "cuda:0".into(),
            dtype: dtype.into(),
            query: vec![8, 12, 1024, 64],
            key: vec![8, 12, 1024, 64],
            value: vec![8, 12, 1024, 64],
            mask: "none".into(),
            grad: true,
            calls,
            dispatched_ops: ops.iter().map(|s| s.to_string()).collect(),
            sampled: 1,
            ..Default::default()
        }
    }

    pub const FLASH: &[&str] = &["_scaled_dot_product_flash_attention"];
    pub const MATH: &[&str] = &["mul", "transpose", "bmm", "_safe_softmax", "bmm"];
}
