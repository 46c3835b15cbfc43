//! Pure helpers over reports, for the rules of `cudoctor check`.

use crate::cache::{CacheEntry, LdCache};
use crate::families::{cuda_library, CudaFamily};
use crate::report::{LibsReport, Via};

/// A library LD_LIBRARY_PATH supplied where the object's own search (RPATH, RUNPATH, cache,
/// default directories) would have found another copy or none.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shadowing {
    /// The object whose DT_NEEDED entry was shadowed.
    pub object: String,
    pub name: String,
    /// What LD_LIBRARY_PATH supplied.
    pub from_ld_library_path: String,
    /// What would be used without LD_LIBRARY_PATH (`None`: nothing; the library is then
    /// only loadable because of LD_LIBRARY_PATH).
    pub otherwise: Option<String>,
    pub otherwise_via: Via,
}

/// Compare one process resolved with LD_LIBRARY_PATH (`with`) and without it (`without`).
pub fn find_ld_library_path_shadowing(with: &LibsReport, without: &LibsReport) -> Vec<Shadowing> {
    let mut out = Vec::new();
    for o in &with.objects {
        for n in o.needed.iter().filter(|n| n.via == Via::LdLibraryPath) {
            let Some(from_llp) = n.resolved.clone() else {
                continue;
            };
            let Some(other_obj) = without.object(&o.path) else {
                continue;
            };
            let Some(other) = other_obj.needed.iter().find(|m| m.name == n.name) else {
                continue;
            };
            let same = match (&n.real_path, &other.real_path) {
                (Some(a), Some(b)) => a == b,
                _ => other.resolved.as_deref() == Some(from_llp.as_str()),
            };
            if !same {
                out.push(Shadowing {
                    object: o.path.clone(),
                    name: n.name.clone(),
                    from_ld_library_path: from_llp,
                    otherwise: other.resolved.clone(),
                    otherwise_via: other.via,
                });
            }
        }
    }
    out
}

/// ld.so.cache entries of one CUDA family (the copies installed system-wide), to set
/// against the copy a process really loads.
pub fn cache_entries_of_family(cache: &LdCache, family: CudaFamily) -> Vec<&CacheEntry> {
    cache
        .entries
        .iter()
        .filter(|e| cuda_library(&e.name).is_some_and(|l| l.family == family))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{NeededReport, ObjectReport};

    fn obj(path: &str, soname: Option<&str>, needed: &[(&str, Option<&str>, Via)]) -> ObjectReport {
        ObjectReport {
            path: path.into(),
            needed: needed
                .iter()
                .map(|(n, r, v)| NeededReport {
                    name: n.to_string(),
                    resolved: r.map(str::to_string),
                    via: *v,
                    real_path: r.map(str::to_string),
                    error: None,
                })
                .collect(),
            unresolved_symbols: vec![],
            soname: soname.map(str::to_string),
            real_path: Some(path.into()),
            loaded_by: None,
            symbols_checked: false,
            missing_versions: vec![],
            errors: vec![],
        }
    }

    #[test]
    fn shadowing_is_found_by_comparing_runs() {
        let with = LibsReport {
            objects: vec![obj(
                "/t/libtorch_cuda.so",
                None,
                &[(
                    "libcudnn.so.9",
                    Some("/usr/lib/x86_64-linux-gnu/libcudnn.so.9"),
                    Via::LdLibraryPath,
                )],
            )],
        };
        let without = LibsReport {
            objects: vec![obj(
                "/t/libtorch_cuda.so",
                None,
                &[(
                    "libcudnn.so.9",
                    Some("/t/../nvidia/cudnn/lib/libcudnn.so.9"),
                    Via::Runpath,
                )],
            )],
        };
        let s = find_ld_library_path_shadowing(&with, &without);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].otherwise_via, Via::Runpath);
        assert!(find_ld_library_path_shadowing(&with, &with).is_empty());
    }

    #[test]
    fn cache_entries_by_family() {
        let data = crate::cache::test_util::old_format(&[
            (
                "libcudnn.so.9",
                "/usr/lib/x86_64-linux-gnu/libcudnn.so.9",
                0x303,
            ),
            (
                "libcudnn_ops.so.9",
                "/usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9",
                0x303,
            ),
            ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", 0x303),
        ]);
        let cache = LdCache::parse(&data).unwrap();
        assert_eq!(cache_entries_of_family(&cache, CudaFamily::Cudnn).len(), 2);
        assert!(cache_entries_of_family(&cache, CudaFamily::Nccl).is_empty());
    }
}
