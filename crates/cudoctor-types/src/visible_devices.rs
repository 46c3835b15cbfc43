//! What a CUDA_VISIBLE_DEVICES value leaves visible to CUDA programs: the one interpreter.
//!
//! CUDA's rules (CUDA C++ Programming Guide, "CUDA Environment Variables"): the value is a
//! comma-separated list of device indices or UUIDs (a unique prefix of `GPU-...`, or a `MIG-...`
//! instance); only the listed devices are visible, and an invalid entry hides itself and every
//! entry after it. So an empty value, `-1`, a word such as `none`, or an index past the last GPU
//! as the first entry hides every GPU.
//!
//! Where the GPUs' UUIDs are unknown, a value naming GPUs by UUID is left undecided rather than
//! guessed; MIG instances are never listed by the driver probe, so they are undecided too.

/// What CUDA makes of a CUDA_VISIBLE_DEVICES value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visibility {
    /// No GPU is visible: the first entry is invalid (or the value is empty).
    HidesAll,
    /// At least `shown` GPUs are visible; `exact` is false when an entry follows them whose
    /// validity cannot be judged here.
    Shows { shown: usize, exact: bool },
    /// Cannot be judged from the facts: the first entry is a UUID that cannot be checked, or
    /// an index while the number of GPUs is unknown.
    Undecided,
}

/// A judged value: its visibility and the first entry CUDA rejects (which hides the rest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub visibility: Visibility,
    pub first_invalid: Option<String>,
}

/// Judges `value` against the machine's GPUs: `uuids` holds one entry per GPU index (0, 1, …)
/// with its UUID where known; `None` when the GPUs themselves are unknown.
pub fn judge_devices(value: &str, uuids: Option<&[Option<&str>]>) -> Judged {
    let mut shown: Vec<usize> = Vec::new();
    let open = |shown: &[usize]| Judged {
        visibility: if shown.is_empty() {
            Visibility::Undecided
        } else {
            Visibility::Shows {
                shown: shown.len(),
                exact: false,
            }
        },
        first_invalid: None,
    };
    for raw in value.split(',') {
        let entry = raw.trim();
        let valid = match entry.parse::<i64>() {
            Ok(i) if i < 0 => None,
            Ok(i) => match uuids {
                Some(gpus) => usize::try_from(i).ok().filter(|i| *i < gpus.len()),
                // Whether the index exists is unknown: stop here.
                None => return open(&shown),
            },
            Err(_) if entry.starts_with("MIG-") => return open(&shown),
            Err(_) if entry.starts_with("GPU-") => {
                let known: Vec<(usize, &str)> = uuids
                    .unwrap_or_default()
                    .iter()
                    .enumerate()
                    .filter_map(|(i, u)| u.map(|u| (i, u)))
                    .collect();
                if known.is_empty() {
                    return open(&shown);
                }
                // A UUID, or any unique prefix of one.
                let matches: Vec<usize> = known
                    .iter()
                    .filter(|(_, u)| u.starts_with(entry))
                    .map(|(i, _)| *i)
                    .collect();
                match matches.as_slice() {
                    [one] => Some(*one),
                    _ => None,
                }
            }
            Err(_) => None,
        };
        match valid {
            // A repeated index adds no GPU; like an invalid entry it ends the list.
            Some(i) if !shown.contains(&i) => shown.push(i),
            _ => {
                return Judged {
                    visibility: shown_or_none(&shown),
                    first_invalid: Some(entry.to_string()),
                }
            }
        }
    }
    Judged {
        visibility: shown_or_none(&shown),
        first_invalid: None,
    }
}

fn shown_or_none(shown: &[usize]) -> Visibility {
    if shown.is_empty() {
        Visibility::HidesAll
    } else {
        Visibility::Shows {
            shown: shown.len(),
            exact: true,
        }
    }
}

/// Judges `value` against `gpu_count` GPUs whose UUIDs are unknown (`None`: count unknown).
pub fn judge(value: &str, gpu_count: Option<usize>) -> Visibility {
    let uuids = gpu_count.map(|n| vec![None; n]);
    judge_devices(value, uuids.as_deref()).visibility
}

/// The value that shows every one of `gpu_count` GPUs by index: "0,1,2".
pub fn all_indices(gpu_count: usize) -> String {
    (0..gpu_count)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_negative_and_words_hide_every_gpu() {
        for v in ["", " ", "-1", "none", "NoDevFiles", "all", ",0"] {
            assert_eq!(judge(v, Some(2)), Visibility::HidesAll, "{v:?}");
            assert_eq!(judge(v, None), Visibility::HidesAll, "{v:?}");
        }
    }

    #[test]
    fn indices_are_checked_against_the_gpu_count() {
        let shows = |shown| Visibility::Shows { shown, exact: true };
        assert_eq!(judge("2", Some(2)), Visibility::HidesAll);
        assert_eq!(judge("1", Some(1)), Visibility::HidesAll);
        assert_eq!(judge("0", Some(2)), shows(1));
        assert_eq!(judge("0, 1", Some(2)), shows(2));
        // An invalid entry ends the list: GPU 1 is hidden too.
        assert_eq!(judge("0,7,1", Some(2)), shows(1));
        assert_eq!(judge("0,0", Some(2)), shows(1));
    }

    #[test]
    fn unknowns_stay_undecided() {
        assert_eq!(judge("0", None), Visibility::Undecided);
        assert_eq!(judge("GPU-59ceb5ce", Some(2)), Visibility::Undecided);
        assert_eq!(judge("MIG-1f1a", Some(1)), Visibility::Undecided);
        assert_eq!(
            judge("0,GPU-59ceb5ce", Some(2)),
            Visibility::Shows {
                shown: 1,
                exact: false
            }
        );
    }

    #[test]
    fn known_uuids_are_matched_by_unique_prefix() {
        let gpus = [Some("GPU-ab0427df-1edc"), Some("GPU-59ceb5ce-cb0b")];
        let j = |v: &str| judge_devices(v, Some(&gpus));
        let shows = |shown| Visibility::Shows { shown, exact: true };
        assert_eq!(j("0,1").visibility, shows(2));
        assert_eq!(j("GPU-59ce").visibility, shows(1));
        assert_eq!(j("GPU-59ce").first_invalid, None);
        assert_eq!(j("0,7,1").first_invalid.as_deref(), Some("7"));
        assert_eq!(j("0,7,1").visibility, shows(1));
        assert_eq!(j("").first_invalid.as_deref(), Some(""));
        assert_eq!(j("-1").visibility, Visibility::HidesAll);
        // An ambiguous prefix names no GPU.
        assert_eq!(j("GPU-").visibility, Visibility::HidesAll);
        assert_eq!(j("GPU-").first_invalid.as_deref(), Some("GPU-"));
    }

    #[test]
    fn all_indices_lists_every_gpu() {
        assert_eq!(all_indices(1), "0");
        assert_eq!(all_indices(3), "0,1,2");
    }
}
