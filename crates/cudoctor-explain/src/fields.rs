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
    /// A cuDNN version as CUDA libraries print it ("8906" = 8.9.6, "90501" = 9.5.1, "8.9.6").
    CudnnInt,
    /// A shared library or DLL name ("libcudart.so.12", "cudnn64_8.dll"), taken from a path if
    /// need be. Adds `<field>_provider`: what ships it (see `crate::libraries`).
    Library,
    /// A linker symbol, demangled where it is a C++ name ("_ZN3c104cuda9SetDeviceEi" ->
    /// "c10::cuda::SetDevice"). Adds `<field>_owner`: the library family that defines it.
    Symbol,
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
            "cudnn_int" => Some(FieldKind::CudnnInt),
            "library" => Some(FieldKind::Library),
            "symbol" => Some(FieldKind::Symbol),
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
            FieldKind::Version => Some(bounded(&collapse_dots(raw.trim_end_matches('.')))),
            FieldKind::CudaInt => cuda_int(raw),
            FieldKind::CudaSuffix => cuda_suffix(raw),
            FieldKind::Arch => arch(raw),
            FieldKind::CudnnInt => cudnn_int(raw),
            FieldKind::Library => library(raw),
            FieldKind::Symbol => Some(bounded(&symbol(raw))),
        }
    }

    /// The name of the field this kind derives from `field`, if any.
    pub fn derived_name(self, field: &str) -> Option<String> {
        match self {
            FieldKind::Library => Some(format!("{field}_provider")),
            FieldKind::Symbol => Some(format!("{field}_owner")),
            _ => None,
        }
    }

    /// The derived value for a normalised value of this kind.
    pub fn derive(self, value: &str) -> Option<String> {
        match self {
            FieldKind::Library => crate::libraries::provider(value),
            FieldKind::Symbol => Some(symbol_owner(value).to_string()),
            _ => None,
        }
    }
}

/// "2.0..0" (a typo seen in real reports) -> "2.0.0".
fn collapse_dots(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '.' && out.ends_with('.') {
            continue;
        }
        out.push(c);
    }
    out
}

/// cuDNN's integer versions: 4 digits are major*1000 + minor*100 + patch (cuDNN 8 and the way
/// JAX prints any version: 8906 = 8.9.6, 9100 = 9.1.0); 5 digits are major*10000 + minor*100 +
/// patch (cuDNN 9's own CUDNN_VERSION: 90501 = 9.5.1). A dotted version is kept.
fn cudnn_int(raw: &str) -> Option<String> {
    if raw.contains('.') {
        let parts: Vec<&str> = raw.split('.').collect();
        return parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
            .then(|| raw.to_string());
    }
    let n: u32 = raw.parse().ok()?;
    match raw.len() {
        4 => Some(format!("{}.{}.{}", n / 1000, (n % 1000) / 100, n % 100)),
        5 => Some(format!("{}.{}.{}", n / 10000, (n % 10000) / 100, n % 100)),
        _ => None,
    }
}

/// The file name of a library out of a path in either separator style.
fn library(raw: &str) -> Option<String> {
    let name = raw.rsplit(['/', '\\']).next()?.trim();
    (!name.is_empty()).then(|| bounded(name))
}

/// Demangles the qualified name of an Itanium C++ symbol (`_ZN...E`, `_ZNK...E`, `_ZTIN...E`);
/// parameter types are left out. Anything else is returned as it is.
fn symbol(raw: &str) -> String {
    let raw = raw.trim();
    let rest = raw
        .strip_prefix("_ZTIN")
        .or_else(|| raw.strip_prefix("_ZTVN"))
        .or_else(|| raw.strip_prefix("_ZNK"))
        .or_else(|| raw.strip_prefix("_ZN"));
    let Some(mut rest) = rest else {
        return raw.to_string();
    };
    let mut parts: Vec<&str> = Vec::new();
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            break;
        }
        let Ok(len) = rest[..digits].parse::<usize>() else {
            break;
        };
        let Some(name) = rest.get(digits..digits + len) else {
            break;
        };
        parts.push(name);
        rest = &rest[digits + len..];
        // Constructors and destructors: C1/C2/D0/D1/D2 end the name.
        if rest.starts_with(['C', 'D']) && rest.as_bytes().get(1).is_some_and(u8::is_ascii_digit) {
            if let Some(last) = parts.last().copied() {
                let ctor = if rest.starts_with('D') { "~" } else { "" };
                return format!("{}::{ctor}{last} ({raw})", parts.join("::"));
            }
        }
    }
    if parts.is_empty() {
        return raw.to_string();
    }
    format!("{} ({raw})", parts.join("::"))
}

/// Which library family defines a symbol, from its name: the evidence for who to rebuild.
fn symbol_owner(symbol: &str) -> &'static str {
    let s = symbol.trim();
    let demangled = s.split(" (").next().unwrap_or(s);
    let first = demangled.split("::").next().unwrap_or(demangled);
    match first {
        "c10" | "at" | "torch" | "caffe2" | "THPVariableClass" => "PyTorch (libc10 / libtorch)",
        _ if first.starts_with("__nvJitLink") || first.starts_with("nvJitLink") => {
            "nvJitLink (libnvJitLink, a CUDA library)"
        }
        _ if first.starts_with("cudnn") => "cuDNN (libcudnn)",
        _ if first.starts_with("cublas") => "cuBLAS (libcublas)",
        _ if first.starts_with("nccl") => "NCCL (libnccl)",
        _ if first.starts_with("cusparse") => "cuSPARSE (libcusparse)",
        _ if first.starts_with("cuda") || first.starts_with("__cuda") => {
            "the CUDA runtime (libcudart)"
        }
        _ if first.starts_with("Py") || first.starts_with("_Py") => "the Python interpreter",
        _ => "a library the message does not name",
    }
}

fn bounded(s: &str) -> String {
    crate::scanner::shorten(s, MAX_TEXT)
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
    fn cudnn_versions_libraries_and_symbols() {
        let n = |k: FieldKind, raw: &str| k.normalize(raw);
        assert_eq!(n(FieldKind::CudnnInt, "8906").as_deref(), Some("8.9.6"));
        assert_eq!(n(FieldKind::CudnnInt, "9100").as_deref(), Some("9.1.0"));
        assert_eq!(n(FieldKind::CudnnInt, "90501").as_deref(), Some("9.5.1"));
        assert_eq!(n(FieldKind::CudnnInt, "9.10.1").as_deref(), Some("9.10.1"));
        assert_eq!(
            n(FieldKind::Version, "2.0..0+cu118").as_deref(),
            Some("2.0.0+cu118")
        );
        assert_eq!(
            n(FieldKind::Library, r"C:\venv\Lib\torch\lib\c10.dll").as_deref(),
            Some("c10.dll")
        );
        assert_eq!(
            n(FieldKind::Library, "/usr/lib/libcudnn.so.8").as_deref(),
            Some("libcudnn.so.8")
        );
        let sym = n(FieldKind::Symbol, "_ZN3c104cuda9SetDeviceEi").unwrap_or_default();
        assert_eq!(sym, "c10::cuda::SetDevice (_ZN3c104cuda9SetDeviceEi)");
        assert_eq!(
            FieldKind::Symbol.derive(&sym).as_deref(),
            Some("PyTorch (libc10 / libtorch)")
        );
        let sym = n(
            FieldKind::Symbol,
            "_ZN3c105ErrorC1ENS_14SourceLocationERKSs",
        )
        .unwrap_or_default();
        assert!(sym.starts_with("c10::Error::Error ("), "{sym}");
        let sym = n(
            FieldKind::Symbol,
            "_ZNK3c104Type14isSubtypeOfExtESt10shared_ptrIS0_EPSo",
        )
        .unwrap_or_default();
        assert!(sym.starts_with("c10::Type::isSubtypeOfExt ("), "{sym}");
        assert_eq!(
            FieldKind::Symbol
                .derive("__nvJitLinkAddData_12_1")
                .as_deref(),
            Some("nvJitLink (libnvJitLink, a CUDA library)")
        );
    }

    #[test]
    fn text_is_bounded() {
        let long = "x".repeat(5000);
        let got = FieldKind::Text.normalize(&long).unwrap_or_default();
        assert!(got.len() <= MAX_TEXT + 4);
    }
}
