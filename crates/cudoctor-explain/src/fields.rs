//! Normalisation of the values a signature extracts from a message.
//!
//! A message says "found version 11040" or "capability (8, 6)"; templates and the machine
//! cross-check want "11.4" and "sm_86". Each extracted field names one of these kinds.

use serde::Serialize;

/// Longest value kept for a free-text field (symbols, paths): enough to read, bounded for output.
const MAX_TEXT: usize = 300;

/// How a captured value is normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// Free text, trimmed and bounded.
    Text,
    /// A version as written ("12.1", "2.3.0+cu121"), trimmed.
    Version,
    /// The integer form CUDA APIs report (11040 = 11.4, 12080 = 12.8), turned into "major.minor".
    CudaInt,
    /// A wheel suffix or packed version ("cu121", "1201", "121") turned into "major.minor".
    CudaSuffix,
    /// A GPU architecture in any spelling ("sm_120", "sm 7.5", "(8, 6)", "8.6") turned into "sm_XY".
    Arch,
}

impl FieldKind {
    /// Parses the kind name used in the signature data file.
    pub fn parse(name: &str) -> Option<FieldKind> {
        match name {
            "text" => Some(FieldKind::Text),
            "version" => Some(FieldKind::Version),
            "cuda_int" => Some(FieldKind::CudaInt),
            "cuda_suffix" => Some(FieldKind::CudaSuffix),
            "arch" => Some(FieldKind::Arch),
            _ => None,
        }
    }

    /// Normalises a raw capture. `None` when the capture cannot be read as this kind
    /// (the field then stays unknown rather than holding a guess).
    pub fn normalize(self, raw: &str) -> Option<String> {
        let raw = raw
            .trim()
            .trim_matches(|c| c == '"' || c == '\'' || c == '`');
        if raw.is_empty() {
            return None;
        }
        match self {
            FieldKind::Text => Some(bounded(raw)),
            FieldKind::Version => Some(bounded(raw.trim_end_matches('.'))),
            FieldKind::CudaInt => cuda_int(raw),
            FieldKind::CudaSuffix => cuda_suffix(raw),
            FieldKind::Arch => arch(raw),
        }
    }
}

fn bounded(s: &str) -> String {
    if s.len() <= MAX_TEXT {
        return s.to_string();
    }
    let mut end = MAX_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// 11040 -> "11.4"; 9000 -> "9.0"; 12080 -> "12.8" (CUDA encodes 1000*major + 10*minor).
fn cuda_int(raw: &str) -> Option<String> {
    let n: u32 = raw.parse().ok()?;
    if !(1000..=99_990).contains(&n) {
        return None;
    }
    Some(format!("{}.{}", n / 1000, (n % 1000) / 10))
}

/// "cu121" / "121" -> "12.1"; "cu118" -> "11.8"; "1201" (major*100+minor) -> "12.1"; "12.1" stays.
fn cuda_suffix(raw: &str) -> Option<String> {
    let s = raw.trim_start_matches("cu").trim_start_matches("CU");
    if let Some((a, b)) = s.split_once('.') {
        let major: u32 = a.parse().ok()?;
        let minor: u32 = b.split('.').next()?.parse().ok()?;
        return Some(format!("{major}.{minor}"));
    }
    if !s.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    match s.len() {
        // "92" -> 9.2, "102" -> 10.2 is ambiguous with "121" -> 12.1; CUDA wheel suffixes since
        // 10.x use two digits for the major, so three digits are always major(2)+minor(1).
        2 => Some(format!("{}.{}", &s[..1], &s[1..])),
        3 => Some(format!("{}.{}", &s[..2], &s[2..])),
        4 => {
            let n: u32 = s.parse().ok()?;
            Some(format!("{}.{}", n / 100, n % 100))
        }
        _ => None,
    }
}

/// Any spelling of a compute capability -> "sm_XY".
fn arch(raw: &str) -> Option<String> {
    let lower = raw.to_ascii_lowercase();
    let s = lower
        .trim_start_matches("compute_")
        .trim_start_matches("sm_")
        .trim_start_matches("sm")
        .trim();
    // "(8, 6)" or "8, 6"
    let s = s.trim_start_matches('(').trim_end_matches(')');
    let parts: Vec<&str> = s
        .split(|c: char| c == ',' || c == '.' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    match parts.as_slice() {
        [major, minor] => {
            let major: u32 = major.parse().ok()?;
            let minor: u32 = minor.parse().ok()?;
            (minor < 10 && (1..=20).contains(&major)).then(|| format!("sm_{major}{minor}"))
        }
        [packed] => {
            let digits: String = packed.chars().take_while(|c| c.is_ascii_digit()).collect();
            let n: u32 = digits.parse().ok()?;
            (10..=209).contains(&n).then(|| format!("sm_{n}"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_int_values() {
        assert_eq!(
            FieldKind::CudaInt.normalize("11040").as_deref(),
            Some("11.4")
        );
        assert_eq!(FieldKind::CudaInt.normalize("9000").as_deref(), Some("9.0"));
        assert_eq!(
            FieldKind::CudaInt.normalize("10010").as_deref(),
            Some("10.1")
        );
        assert_eq!(
            FieldKind::CudaInt.normalize("12080").as_deref(),
            Some("12.8")
        );
        assert_eq!(FieldKind::CudaInt.normalize("abc"), None);
        assert_eq!(FieldKind::CudaInt.normalize("12"), None);
    }

    #[test]
    fn cuda_suffix_values() {
        assert_eq!(
            FieldKind::CudaSuffix.normalize("cu121").as_deref(),
            Some("12.1")
        );
        assert_eq!(
            FieldKind::CudaSuffix.normalize("118").as_deref(),
            Some("11.8")
        );
        assert_eq!(
            FieldKind::CudaSuffix.normalize("1201").as_deref(),
            Some("12.1")
        );
        assert_eq!(
            FieldKind::CudaSuffix.normalize("12.4").as_deref(),
            Some("12.4")
        );
        assert_eq!(FieldKind::CudaSuffix.normalize("cpu"), None);
    }

    #[test]
    fn arch_spellings() {
        for (raw, want) in [
            ("sm_120", "sm_120"),
            ("sm120", "sm_120"),
            ("sm 7.5", "sm_75"),
            ("(8, 6)", "sm_86"),
            ("8.6", "sm_86"),
            ("compute_120", "sm_120"),
            ("12.0", "sm_120"),
        ] {
            assert_eq!(
                FieldKind::Arch.normalize(raw).as_deref(),
                Some(want),
                "{raw}"
            );
        }
        assert_eq!(FieldKind::Arch.normalize("sm_N"), None);
        // The cross-check reads normalised arch names as the knowledge base's capabilities.
        let cc = |sm: &str| sm.parse::<cudoctor_kb::ComputeCapability>().ok();
        assert_eq!(
            cc("sm_120"),
            Some(cudoctor_kb::ComputeCapability::new(12, 0))
        );
        assert_eq!(cc("sm_86"), Some(cudoctor_kb::ComputeCapability::new(8, 6)));
    }

    #[test]
    fn text_is_bounded() {
        let long = "x".repeat(5000);
        let got = FieldKind::Text.normalize(&long).unwrap_or_default();
        assert!(got.len() <= MAX_TEXT + 4);
    }
}
