//! How ld.so found a needed library: one type for the loader emulation (cudoctor-ldso), the
//! snapshot's link facts and the rules that judge them.

/// Which step of ld.so's search found a needed library.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// DT_RPATH of the loading object, one of its loaders, or the executable.
    Rpath,
    /// LD_LIBRARY_PATH.
    LdLibraryPath,
    /// DT_RUNPATH of the loading object.
    Runpath,
    /// /etc/ld.so.cache.
    Cache,
    /// The default (system) directories.
    Default,
    /// Already in the process (matched by name or soname): reused whatever the paths say.
    Loaded,
    /// The needed name contains '/', so it is opened as is.
    Direct,
    /// Not found (or a candidate ld.so refuses to load; see `error`).
    #[default]
    Missing,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Rpath => "rpath",
            Via::LdLibraryPath => "ld_library_path",
            Via::Runpath => "runpath",
            Via::Cache => "cache",
            Via::Default => "default",
            Via::Loaded => "loaded",
            Via::Direct => "direct",
            Via::Missing => "missing",
        }
    }
}

impl std::fmt::Display for Via {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are the snapshot's (schema 1 files spell them so) and the text reports'.
    #[test]
    fn names_are_the_serialised_ones() {
        for v in [
            Via::Rpath,
            Via::LdLibraryPath,
            Via::Runpath,
            Via::Cache,
            Via::Default,
            Via::Loaded,
            Via::Direct,
            Via::Missing,
        ] {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.as_str()));
            assert_eq!(serde_json::from_str::<Via>(&json).unwrap(), v);
            assert_eq!(format!("{v:9}|").len(), 10.max(v.as_str().len() + 1));
        }
    }
}
