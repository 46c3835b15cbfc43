//! Pure helpers over reports, for the rules of `cudoctor check`.

use std::collections::BTreeMap;

use crate::cache::{CacheEntry, LdCache};
use crate::error::LoadError;
use crate::families::{cuda_library, library_stem, CudaFamily};
use crate::process::{LoadOptions, Process, ProcessEnv};
use crate::report::{LibsReport, ObjectReport, Via};

/// One copy of a library in the process.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LibraryCopy {
    /// The object's path as loaded.
    pub path: String,
    pub real_path: Option<String>,
    pub soname: Option<String>,
    /// Objects whose DT_NEEDED resolved to this copy.
    pub needed_by: Vec<String>,
}

/// Several files of one library in one process (libcudart.so.12 and libcudart.so.13, or two
/// paths of libcudnn.so.9): code compiled against one may run with the other's state.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CopyConflict {
    /// Library stem, e.g. "cudart", "cudnn_ops", "stdc++".
    pub library: String,
    /// CUDA family when the library is one of NVIDIA's.
    pub family: Option<CudaFamily>,
    pub copies: Vec<LibraryCopy>,
}

fn object_name(o: &ObjectReport) -> &str {
    o.soname.as_deref().unwrap_or(&o.path)
}

/// Libraries present in more than one copy among `objects` (one process's objects). Each
/// object of a process is a distinct file, so two objects with one library stem are two copies.
pub fn find_copy_conflicts(objects: &[ObjectReport]) -> Vec<CopyConflict> {
    let mut groups: BTreeMap<String, Vec<&ObjectReport>> = BTreeMap::new();
    for o in objects {
        if let Some(stem) = library_stem(object_name(o)) {
            groups.entry(stem.to_string()).or_default().push(o);
        }
    }
    let mut out = Vec::new();
    for (stem, objs) in groups {
        // The same file reached under two paths is one copy.
        let mut copies: Vec<LibraryCopy> = Vec::new();
        for o in objs {
            let key = o.real_path.as_deref().unwrap_or(&o.path);
            if copies
                .iter()
                .any(|c| c.real_path.as_deref().unwrap_or(&c.path) == key)
            {
                continue;
            }
            let needed_by = objects
                .iter()
                .filter(|u| {
                    u.needed
                        .iter()
                        .any(|n| n.resolved.as_deref() == Some(o.path.as_str()))
                })
                .map(|u| u.path.clone())
                .collect();
            copies.push(LibraryCopy {
                path: o.path.clone(),
                real_path: o.real_path.clone(),
                soname: o.soname.clone(),
                needed_by,
            });
        }
        if copies.len() > 1 {
            let family = copies
                .iter()
                .find_map(|c| cuda_library(c.soname.as_deref().unwrap_or(&c.path)))
                .map(|l| l.family);
            out.push(CopyConflict {
                library: stem,
                family,
                copies,
            });
        }
    }
    out
}

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

/// Load `paths` (in order) into two processes, with and without the environment's
/// LD_LIBRARY_PATH, and report what LD_LIBRARY_PATH shadows. Paths that fail to load are
/// skipped in both (the caller reports load errors from its main run).
pub fn ld_library_path_shadowing(
    env: &ProcessEnv,
    paths: &[String],
) -> Result<Vec<Shadowing>, LoadError> {
    if env.ld_library_path.as_deref().is_none_or(str::is_empty) {
        return Ok(Vec::new());
    }
    let mut with = Process::new(env.clone());
    let mut without = Process::new(env.clone().with_ld_library_path(None));
    for p in paths {
        let _ = with.load(p, LoadOptions::default());
        let _ = without.load(p, LoadOptions::default());
    }
    Ok(find_ld_library_path_shadowing(
        &with.report(),
        &without.report(),
    ))
}

/// A DT_NEEDED entry nothing satisfied.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MissingLibrary {
    pub object: String,
    pub name: String,
    pub family: Option<CudaFamily>,
    pub error: Option<String>,
}

/// Every missing needed library, with its CUDA family when it is one.
pub fn missing_libraries(objects: &[ObjectReport]) -> Vec<MissingLibrary> {
    objects
        .iter()
        .flat_map(|o| {
            o.missing().map(move |n| MissingLibrary {
                object: o.path.clone(),
                name: n.name.clone(),
                family: cuda_library(&n.name).map(|l| l.family),
                error: n.error.clone(),
            })
        })
        .collect()
}

/// The copy of each CUDA library family the process really loaded (e.g. which cuDNN torch
/// uses): (family, object path, real path).
pub fn loaded_cuda_libraries(
    objects: &[ObjectReport],
) -> Vec<(CudaFamily, String, Option<String>)> {
    objects
        .iter()
        .filter_map(|o| {
            cuda_library(object_name(o)).map(|l| (l.family, o.path.clone(), o.real_path.clone()))
        })
        .collect()
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
    use crate::report::NeededReport;

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
    fn two_cudart_majors_conflict() {
        let objects = vec![
            obj(
                "/t/_C.so",
                None,
                &[("libcudart.so.13", Some("/w/libcudart.so.13"), Via::Runpath)],
            ),
            obj(
                "/e/ext.so",
                None,
                &[(
                    "libcudart.so.12",
                    Some("/usr/local/cuda/lib64/libcudart.so.12"),
                    Via::Cache,
                )],
            ),
            obj("/w/libcudart.so.13", Some("libcudart.so.13"), &[]),
            obj(
                "/usr/local/cuda/lib64/libcudart.so.12",
                Some("libcudart.so.12"),
                &[],
            ),
            obj("/w/libcudnn.so.9", Some("libcudnn.so.9"), &[]),
            obj("/w/libcudnn_ops.so.9", Some("libcudnn_ops.so.9"), &[]),
        ];
        let c = find_copy_conflicts(&objects);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].library, "cudart");
        assert_eq!(c[0].family, Some(CudaFamily::Cudart));
        assert_eq!(c[0].copies[0].needed_by, ["/t/_C.so"]);
        assert_eq!(c[0].copies[1].needed_by, ["/e/ext.so"]);
        let loaded = loaded_cuda_libraries(&objects);
        assert_eq!(loaded.len(), 4);
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

    #[test]
    fn missing_libraries_carry_family() {
        let objects = vec![obj(
            "/e/ext.so",
            None,
            &[("libcudart.so.11.0", None, Via::Missing)],
        )];
        let m = missing_libraries(&objects);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].family, Some(CudaFamily::Cudart));
    }
}
