//! What a CUDA_VISIBLE_DEVICES value leaves visible to CUDA programs.
//!
//! CUDA's rules (CUDA C++ Programming Guide, "CUDA Environment Variables"): the value is a
//! comma-separated list of device indices or UUIDs (a unique prefix of `GPU-...`, or a `MIG-...`
//! instance); only the listed devices are visible, and an invalid entry hides itself and every
//! entry after it. So an empty value, `-1`, a word such as `none`, or an index past the last GPU
//! as the first entry hides every GPU.
//!
//! The machine facts carry the number of GPUs but not their UUIDs, so a value naming GPUs by
//! UUID is left undecided rather than guessed.

/// What CUDA makes of a CUDA_VISIBLE_DEVICES value on a machine with a given number of GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visibility {
    /// No GPU is visible: the first entry is invalid (or the value is empty).
    HidesAll,
    /// At least `shown` GPUs are visible; `exact` is false when a UUID entry follows them, whose
    /// validity cannot be judged here.
    Shows { shown: usize, exact: bool },
    /// Cannot be judged from the facts: the first entry is a UUID, or an index while the
    /// number of GPUs is unknown.
    Undecided,
}

/// Judges `value` against `gpu_count` GPUs (indices 0..gpu_count), `None` when unknown.
pub fn judge(value: &str, gpu_count: Option<usize>) -> Visibility {
    let mut shown: Vec<usize> = Vec::new();
    for raw in value.split(',') {
        let entry = raw.trim();
        let valid_index = match entry.parse::<i64>() {
            Ok(i) if i < 0 => None,
            Ok(i) => match gpu_count {
                Some(n) => usize::try_from(i).ok().filter(|i| *i < n),
                // Whether the index exists is unknown: stop here.
                None if shown.is_empty() => return Visibility::Undecided,
                None => {
                    return Visibility::Shows {
                        shown: shown.len(),
                        exact: false,
                    }
                }
            },
            Err(_) if entry.starts_with("GPU-") || entry.starts_with("MIG-") => {
                if shown.is_empty() {
                    return Visibility::Undecided;
                }
                return Visibility::Shows {
                    shown: shown.len(),
                    exact: false,
                };
            }
            Err(_) => None,
        };
        match valid_index {
            // A repeated index adds no GPU; like an invalid entry it ends the list.
            Some(i) if !shown.contains(&i) => shown.push(i),
            _ => break,
        }
    }
    if shown.is_empty() {
        Visibility::HidesAll
    } else {
        Visibility::Shows {
            shown: shown.len(),
            exact: true,
        }
    }
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
        assert_eq!(judge("2", Some(2)), Visibility::HidesAll);
        assert_eq!(judge("1", Some(1)), Visibility::HidesAll);
        assert_eq!(
            judge("0", Some(2)),
            Visibility::Shows {
                shown: 1,
                exact: true
            }
        );
        assert_eq!(
            judge("0, 1", Some(2)),
            Visibility::Shows {
                shown: 2,
                exact: true
            }
        );
        // An invalid entry ends the list: GPU 1 is hidden too.
        assert_eq!(
            judge("0,7,1", Some(2)),
            Visibility::Shows {
                shown: 1,
                exact: true
            }
        );
        assert_eq!(
            judge("0,0", Some(2)),
            Visibility::Shows {
                shown: 1,
                exact: true
            }
        );
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
    fn all_indices_lists_every_gpu() {
        assert_eq!(all_indices(1), "0");
        assert_eq!(all_indices(3), "0,1,2");
    }
}
