//! Matching the GPU names drivers report ("NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-32GB")
//! against product names ("RTX 4090", "V100").

use crate::data::GpuModel;
use cudoctor_types::ComputeCapability;

/// A GPU as a person named it, read by [`crate::Kb::resolve_gpu`].
#[derive(Debug, Clone, PartialEq)]
pub struct NamedGpu<'a> {
    /// As given.
    pub given: String,
    pub cc: ComputeCapability,
    /// The product row, when the GPU was given by name.
    pub model: Option<&'a GpuModel>,
}

/// A GPU given (`--gpu`) that cannot be judged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownGpu {
    /// Neither a compute capability nor a product the table knows.
    #[error("unknown GPU {0:?}: not a compute capability (sm_90, 9.0) nor a GPU the knowledge base knows; nvidia-smi --query-gpu=compute_cap --format=csv prints it as X.Y (give it as sm_XY or X.Y)")]
    Name(String),
    /// A capability that no GPU of the knowledge base has (`sm_900` reads as 90.0).
    #[error("unknown GPU {given:?}: no NVIDIA GPU the knowledge base knows has compute capability {cc} (known: {known}); nvidia-smi --query-gpu=compute_cap --format=csv prints a GPU's as X.Y")]
    Capability {
        given: String,
        cc: ComputeCapability,
        known: String,
    },
}

/// Where a reported GPU's compute capability came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcSource {
    /// The driver (NVML or nvidia-smi) reported it.
    Reported,
    /// The knowledge base's row for the reported product name.
    ByName,
}

/// Words that vendors put in front of product names and that never tell products apart.
const NOISE: [&str; 3] = ["nvidia", "geforce", "tesla"];

/// Lower-cased alphanumeric words, noise words removed: "Tesla V100-SXM2-32GB" -> [v100, sxm2, 32gb].
pub fn name_words(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .filter(|w| !NOISE.contains(&w.as_str()))
        .collect()
}

/// Whether `needle` occurs as a contiguous run inside `haystack`.
fn contains_run(haystack: &[String], needle: &[String]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// The product that `reported` names: the model with the longest matching product name.
/// Ties between different capabilities mean the name is ambiguous, and no answer is given.
pub fn find<'a>(models: &'a [GpuModel], reported: &str) -> Option<&'a GpuModel> {
    let words = name_words(reported);
    let mut best: Option<(usize, &GpuModel)> = None;
    let mut ambiguous = false;
    for model in models {
        for product in &model.names {
            let needle = name_words(product);
            if !contains_run(&words, &needle) {
                continue;
            }
            match best {
                Some((len, m)) if needle.len() == len && m.cc != model.cc => ambiguous = true,
                Some((len, _)) if needle.len() <= len => {}
                _ => {
                    best = Some((needle.len(), model));
                    ambiguous = false;
                }
            }
        }
    }
    if ambiguous {
        return None;
    }
    best.map(|(_, m)| m)
}

/// The models of one GeForce generation a person names by its series and the model numbers'
/// first two digits ("RTX 50 series", "RTX 50xx": `("rtx", 50)`): the rows named like the
/// generation's cards ("RTX 5090", "RTX 5070 Ti": four digits, the third from 1 to 9, the fourth
/// 0), so that a workstation card of the same digits ("RTX 5000 Ada") is not one of them. The
/// first such model, when every one of them has the same capability; None otherwise.
pub fn find_generation<'a>(
    models: &'a [GpuModel],
    series: &str,
    generation: u32,
) -> Option<&'a GpuModel> {
    let prefix = generation.to_string();
    if prefix.len() != 2 {
        return None;
    }
    let of_generation = |name: &String| {
        let words = name_words(name);
        let [first, number, ..] = words.as_slice() else {
            return false;
        };
        let b = number.as_bytes();
        first == series
            && b.len() == 4
            && number.starts_with(&prefix)
            && (b'1'..=b'9').contains(&b[2])
            && b[3] == b'0'
    };
    let mut found = models.iter().filter(|m| m.names.iter().any(of_generation));
    let first = found.next()?;
    found.all(|m| m.cc == first.cc).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generation_named_by_its_series_is_one_capability_or_none() {
        let kb = crate::Kb::embedded();
        let rtx50 = find_generation(&kb.gpus, "rtx", 50).expect("the RTX 50 series");
        assert_eq!(rtx50.cc, ComputeCapability::new(12, 0));
        let rtx40 = find_generation(&kb.gpus, "rtx", 40).expect("the RTX 40 series");
        assert_eq!(rtx40.cc, ComputeCapability::new(8, 9));
        // The RTX 30 series spans 8.6 only; the RTX 20 series 7.5.
        assert_eq!(
            find_generation(&kb.gpus, "rtx", 20).map(|m| m.cc),
            Some(ComputeCapability::new(7, 5))
        );
        assert!(find_generation(&kb.gpus, "rtx", 90).is_none());
        assert!(find_generation(&kb.gpus, "rtx", 5).is_none());
    }

    #[test]
    fn one_reading_of_a_named_gpu() {
        let kb = crate::Kb::embedded();
        for given in [
            "sm_90",
            "SM_90",
            "9.0",
            "90",
            "sm_90a",
            "NVIDIA H200",
            "H100",
        ] {
            let named = kb.resolve_gpu(given).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(named.cc, ComputeCapability::new(9, 0), "{given}");
            assert_eq!(named.model.is_some(), given.contains('H'), "{given}");
        }
        let err = kb.resolve_gpu("NVIDIA B100").unwrap_err();
        assert!(err.to_string().contains("sm_XY"), "{err}");
        assert!(kb.resolve_gpu("9.10").is_err());
    }

    #[test]
    fn a_capability_no_gpu_has_is_refused_with_the_known_ones() {
        let kb = crate::Kb::embedded();
        let known = kb.known_capabilities();
        for cc in [(3, 5), (6, 1), (9, 0), (10, 0), (12, 0), (12, 1)] {
            assert!(
                known.contains(&ComputeCapability::new(cc.0, cc.1)),
                "{cc:?}"
            );
        }
        for given in ["sm_900", "9.9", "sm_99", "1.0"] {
            let err = kb.resolve_gpu(given).unwrap_err();
            assert!(
                matches!(err, UnknownGpu::Capability { .. }),
                "{given}: {err}"
            );
            assert!(err.to_string().contains("known: 3.0, 3.5, "), "{err}");
        }
        assert_eq!(
            kb.resolve_gpu("sm_900").unwrap_err().to_string().split(';').next(),
            Some("unknown GPU \"sm_900\": no NVIDIA GPU the knowledge base knows has compute capability 90.0 (known: 3.0, 3.5, 3.7, 5.0, 5.2, 5.3, 6.0, 6.1, 6.2, 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 10.3, 11.0, 12.0, 12.1)")
        );
    }

    #[test]
    fn a_reported_gpu_takes_the_drivers_value_first() {
        let kb = crate::Kb::embedded();
        assert_eq!(
            kb.reported_gpu_cc(Some("8.6"), "NVIDIA H200"),
            Some((ComputeCapability::new(8, 6), CcSource::Reported))
        );
        assert_eq!(
            kb.reported_gpu_cc(Some("[N/A]"), "NVIDIA H200"),
            Some((ComputeCapability::new(9, 0), CcSource::ByName))
        );
        assert_eq!(kb.reported_gpu_cc(None, "Some Unknown Board"), None);
    }

    #[test]
    fn words_drop_noise_and_punctuation() {
        assert_eq!(
            name_words("Tesla V100-SXM2-32GB"),
            vec!["v100", "sxm2", "32gb"]
        );
        assert_eq!(
            name_words("NVIDIA TITAN X (Pascal)"),
            vec!["titan", "x", "pascal"]
        );
        assert_eq!(name_words("NVIDIA GeForce RTX 4090"), vec!["rtx", "4090"]);
        assert!(name_words("  ").is_empty());
    }

    #[test]
    fn runs_must_be_contiguous() {
        let hay = name_words("RTX 4000 SFF Ada Generation");
        assert!(contains_run(&hay, &name_words("RTX 4000 SFF Ada")));
        assert!(!contains_run(&hay, &name_words("RTX 4000 Ada")));
        assert!(!contains_run(&hay, &[]));
    }
}
