//! The texts of a cause family, for an answer read as a clause (`data/families.toml`).

use crate::category::Category;
use crate::clause::{Clause, Failure, Subject};
use crate::template;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The built-in family texts.
pub const BUILTIN_TOML: &str = include_str!("../data/families.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFamilies {
    schema: u32,
    defaults: BTreeMap<String, String>,
    family: Vec<Family>,
}

/// What a family says: a title, a cause sentence and fix steps, with placeholders.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Family {
    pub category: String,
    /// The one subject (its id, `clause::subject_id`) these texts are for, where a category's
    /// clauses speak of things too different for one text; none for the category's own texts.
    #[serde(default)]
    pub subject: Option<String>,
    pub title: String,
    pub cause: String,
    pub fix: Vec<String>,
}

/// Every family, by category (and by subject where a family names one), and the placeholders'
/// defaults.
#[derive(Debug)]
pub struct Families {
    pub by_category: BTreeMap<Category, Family>,
    pub by_subject: BTreeMap<(Category, String), Family>,
    pub defaults: BTreeMap<String, String>,
}

impl Families {
    pub fn from_toml(text: &str) -> Result<Families, String> {
        let raw: RawFamilies = toml::from_str(text).map_err(|e| e.to_string())?;
        if raw.schema != 1 {
            return Err(format!("families: unknown schema {}", raw.schema));
        }
        let mut by_category = BTreeMap::new();
        let mut by_subject = BTreeMap::new();
        for f in raw.family {
            let c = Category::parse(&f.category)
                .ok_or_else(|| format!("families: unknown category {}", f.category))?;
            let twice = match f.subject.clone() {
                Some(s) => by_subject.insert((c, s), f).is_some(),
                None => by_category.insert(c, f).is_some(),
            };
            if twice {
                return Err(format!("families: {c} twice"));
            }
        }
        Ok(Families {
            by_category,
            by_subject,
            defaults: raw.defaults,
        })
    }

    /// The title, cause and fix steps of `clause`, filled from the line's fields.
    pub fn render(
        &self,
        clause: &Clause,
        fields: &BTreeMap<String, String>,
    ) -> Option<(String, String, Vec<String>)> {
        let f = self
            .by_subject
            .get(&(
                clause.category,
                crate::clause::subject_id(clause.subject).to_string(),
            ))
            .or_else(|| self.by_category.get(&clause.category))?;
        let mut all = fields.clone();
        all.insert("subject".into(), subject_words(clause.subject).into());
        all.insert("failure".into(), failure_words(clause.failure).into());
        let fill = |t: &str| template::render(t, &all, &self.defaults);
        Some((
            f.title.clone(),
            fill(&f.cause),
            f.fix.iter().map(|s| fill(s)).collect(),
        ))
    }
}

/// The built-in families (their tests rule out a failure to load).
pub fn builtin() -> Option<&'static Families> {
    static F: OnceLock<Option<Families>> = OnceLock::new();
    F.get_or_init(|| Families::from_toml(BUILTIN_TOML).ok())
        .as_ref()
}

/// How a clause's subject reads in a sentence.
pub fn subject_words(s: Subject) -> &'static str {
    match s {
        Subject::Hardware => "GPU hardware",
        Subject::Nccl => "NCCL",
        Subject::Container => "container runtime",
        Subject::WindowsDll => "Windows DLL",
        Subject::Companion => "companion package",
        Subject::Toolkit => "CUDA toolkit",
        Subject::HostCompiler => "host compiler",
        Subject::GpuArch => "GPU architecture",
        Subject::Attention => "fused attention kernel",
        Subject::Driver => "NVIDIA driver",
        Subject::DriverLibrary => "driver library (libcuda / NVML)",
        Subject::KernelModule => "NVIDIA kernel module",
        Subject::CudaLibrary => "CUDA library",
        Subject::Framework => "framework",
        Subject::Gpu => "GPU",
        Subject::Memory => "GPU memory",
        Subject::Placement => "program's values",
        Subject::Selection => "program's selection of GPUs (CUDA_VISIBLE_DEVICES set in its code)",
        Subject::OtherLibrary => "library outside the CUDA stack",
    }
}

/// How a clause's failure reads in a sentence.
pub fn failure_words(f: Failure) -> &'static str {
    match f {
        Failure::OutOfMemory => "out of memory",
        Failure::Fault => "hardware fault",
        Failure::NotCompiled => "built without CUDA",
        Failure::UndefinedSymbol => "undefined symbol",
        Failure::CannotLoad => "not loadable",
        Failure::NotFound => "not found",
        Failure::TooOld => "too old",
        Failure::Mismatch => "of a mismatched version",
        Failure::Unsupported => "unsupported",
        Failure::Timeout => "timed out",
        Failure::Hang => "hung",
        Failure::Denied => "denied access",
        Failure::NotAvailable => "not available",
        Failure::Required => "requirement unmet",
        Failure::NotNvidia => "not an NVIDIA GPU",
        Failure::Misplaced => "on different devices",
        Failure::Ignored => "without effect",
        Failure::Failed => "failing",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_category_but_unknown_and_negatives_has_a_family() {
        let f = Families::from_toml(BUILTIN_TOML).unwrap_or_else(|e| panic!("{e}"));
        for c in Category::ALL {
            let expected = !matches!(c, Category::Unknown | Category::NotEnvironment);
            assert_eq!(f.by_category.contains_key(&c), expected, "{c}");
        }
        // A negative is read only of the program's own choices of devices and of a library
        // outside the stack, each with its texts.
        for subject in [
            Subject::Placement,
            Subject::Selection,
            Subject::OtherLibrary,
        ] {
            let key = (
                Category::NotEnvironment,
                crate::clause::subject_id(subject).to_string(),
            );
            assert!(f.by_subject.contains_key(&key), "{subject:?}");
        }
        for fam in f.by_category.values().chain(f.by_subject.values()) {
            for t in std::iter::once(&fam.cause).chain(fam.fix.iter()) {
                for p in template::placeholders(t) {
                    assert!(
                        ["subject", "failure", "line"].contains(&p) || f.defaults.contains_key(p),
                        "{p} has no default in {}",
                        fam.category
                    );
                }
            }
        }
    }
}
