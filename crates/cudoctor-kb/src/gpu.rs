//! Matching the GPU names drivers report ("NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-32GB")
//! against product names ("RTX 4090", "V100").

use crate::data::GpuModel;

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

#[cfg(test)]
mod tests {
    use super::*;

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
