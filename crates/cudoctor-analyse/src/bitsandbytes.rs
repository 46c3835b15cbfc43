//! Which of bitsandbytes' CUDA libraries an environment's `import bitsandbytes` loads.
//!
//! A bitsandbytes wheel ships one native library per CUDA release it was built with
//! (`libbitsandbytes_cuda118.so` ... `libbitsandbytes_cuda132.so`) and loads exactly one of them,
//! chosen from torch's CUDA (`torch.version.cuda`), so the others' kernel images say nothing
//! about what runs: the CUDA-11.8 build has no sm_120 code, yet a torch for CUDA 13 never loads
//! it. The choice, from bitsandbytes' `cextension.py` (`get_cuda_bnb_library_path`):
//!
//! - `BNB_CUDA_VERSION` (digits, `124`) names the library outright, whatever torch's CUDA;
//! - otherwise the library of torch's exact CUDA; from release 0.50.0 on, when that one is not
//!   shipped, the newest one of the same major older than torch's CUDA, else the oldest newer
//!   one of the same major, never another major (before 0.50.0 the exact one only);
//! - a torch without CUDA (a CPU or ROCm build) loads none of them.

use cudoctor_kb::CudaVersion;
use cudoctor_snapshot::{PythonEnv, TorchBuild};
use cudoctor_types::requirement::PyVersion;

/// The environment variable that overrides the choice.
pub const OVERRIDE_VAR: &str = "BNB_CUDA_VERSION";

/// The CUDA release a bitsandbytes library file is built for: `libbitsandbytes_cuda128.so` (and
/// the older `_nocublaslt` variants) -> 12.8. The major is always two digits in these names.
pub fn library_cuda(path: &str) -> Option<CudaVersion> {
    let name = path.rsplit(['/', '\\']).next()?;
    let rest = name.strip_prefix("libbitsandbytes_cuda")?;
    let digits: &str = &rest[..rest.find(|c: char| !c.is_ascii_digit())?];
    compact_cuda(digits)
}

/// `128` -> 12.8, `118` -> 11.8 (bitsandbytes' `_split_cuda_version`).
fn compact_cuda(digits: &str) -> Option<CudaVersion> {
    if digits.len() < 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(2);
    Some(CudaVersion::new(major.parse().ok()?, minor.parse().ok()?))
}

/// What bitsandbytes' import chooses among `shipped` (the CUDA releases of its library files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// This release's library is the one loaded.
    Loads(CudaVersion),
    /// None of the shipped libraries is loaded (no CUDA torch, or the one it asks for is absent).
    None,
}

/// bitsandbytes' choice for a torch built for `torch_cuda` (None: a torch without CUDA),
/// `override_value` the value of [`OVERRIDE_VAR`] when set, `release` bitsandbytes' version.
pub fn choose(
    shipped: &[CudaVersion],
    torch_cuda: Option<CudaVersion>,
    override_value: Option<&str>,
    release: Option<&str>,
) -> Choice {
    if let Some(v) = override_value {
        return compact_cuda(v.trim())
            .filter(|c| shipped.contains(c))
            .map_or(Choice::None, Choice::Loads);
    }
    let Some(want) = torch_cuda else {
        return Choice::None;
    };
    if shipped.contains(&want) {
        return Choice::Loads(want);
    }
    // Releases before 0.50.0 load the exact library only; an unknown release is taken as new.
    let falls_back = release
        .and_then(|r| r.parse::<PyVersion>().ok())
        .is_none_or(|r| r >= "0.50.0".parse::<PyVersion>().expect("a valid version"));
    if !falls_back {
        return Choice::None;
    }
    let same_major = || shipped.iter().copied().filter(|c| c.major == want.major);
    same_major()
        .filter(|c| *c < want)
        .max()
        .or_else(|| same_major().filter(|c| *c > want).min())
        .map_or(Choice::None, Choice::Loads)
}

/// The bitsandbytes libraries among `paths` that env's import never loads, with the one it
/// does load (None when it loads none), for a torch built for `torch_cuda`. Paths that are not
/// bitsandbytes' CUDA libraries of this env are never in the list.
pub fn unloaded<'p>(
    env: &PythonEnv,
    paths: impl IntoIterator<Item = &'p str>,
    torch_cuda: Option<CudaVersion>,
    override_value: Option<&str>,
) -> (Vec<&'p str>, Option<CudaVersion>) {
    let Some(package) = env.packages.iter().find(|p| p.name == "bitsandbytes") else {
        return (Vec::new(), None);
    };
    let dir = format!("{}/bitsandbytes/", package.location);
    let libs: Vec<(&str, CudaVersion)> = paths
        .into_iter()
        .filter(|p| p.starts_with(&dir))
        .filter_map(|p| Some((p, library_cuda(p)?)))
        .collect();
    let shipped: Vec<CudaVersion> = libs.iter().map(|(_, c)| *c).collect();
    let loaded = match choose(
        &shipped,
        torch_cuda,
        override_value,
        Some(package.version.as_str()),
    ) {
        Choice::Loads(c) => Some(c),
        Choice::None => None,
    };
    let skipped = libs
        .into_iter()
        .filter(|(_, c)| Some(*c) != loaded)
        .map(|(p, _)| p)
        .collect();
    (skipped, loaded)
}

impl crate::Context<'_> {
    /// The kernel-image libraries of bitsandbytes that no environment's import loads (torch's
    /// CUDA and [`OVERRIDE_VAR`] choose one per environment): their images are not judged.
    pub fn bitsandbytes_unloaded(&self) -> Vec<&str> {
        let Some(images) = &self.snap.kernel_images else {
            return Vec::new();
        };
        let override_value = self.var(OVERRIDE_VAR);
        self.snap
            .python_envs
            .iter()
            .flat_map(|env| {
                let torch_cuda = env.torch.as_ref().and_then(TorchBuild::cuda_version);
                let paths = images.libraries.iter().map(|l| l.path.as_str());
                unloaded(env, paths, torch_cuda, override_value).0
            })
            .collect()
    }

    /// True when moving env's torch to `variant` (`cu126`) changes which bitsandbytes library
    /// its import loads: the libraries' findings then follow torch's repair.
    pub fn bitsandbytes_follows(&self, env: &PythonEnv, variant: &str) -> bool {
        let Some(images) = &self.snap.kernel_images else {
            return false;
        };
        let override_value = self.var(OVERRIDE_VAR);
        let paths = || images.libraries.iter().map(|l| l.path.as_str());
        let now = env.torch.as_ref().and_then(TorchBuild::cuda_version);
        let after = CudaVersion::from_tag(variant).ok();
        let (_, loaded_now) = unloaded(env, paths(), now, override_value);
        let (skipped_after, loaded_after) = unloaded(env, paths(), after, override_value);
        let has_libraries = loaded_after.is_some() || !skipped_after.is_empty();
        has_libraries && loaded_now != loaded_after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> CudaVersion {
        s.parse().unwrap()
    }

    /// The CUDA builds of bitsandbytes 0.50.2's manylinux wheel (read from the wheel's files).
    fn shipped_0_50_2() -> Vec<CudaVersion> {
        ["11.8", "12.1", "12.4", "12.6", "12.8", "13.0", "13.2"]
            .iter()
            .map(|s| v(s))
            .collect()
    }

    #[test]
    fn file_names_give_their_cuda() {
        assert_eq!(
            library_cuda("/s/bitsandbytes/libbitsandbytes_cuda128.so"),
            Some(v("12.8"))
        );
        assert_eq!(
            library_cuda("/s/bitsandbytes/libbitsandbytes_cuda118_nocublaslt.so"),
            Some(v("11.8"))
        );
        assert_eq!(
            library_cuda(r"C:\s\bitsandbytes\libbitsandbytes_cuda130.dll"),
            Some(v("13.0"))
        );
        assert_eq!(library_cuda("/s/bitsandbytes/libbitsandbytes_cpu.so"), None);
        assert_eq!(
            library_cuda("/s/bitsandbytes/libbitsandbytes_rocm64.so"),
            None
        );
        assert_eq!(
            library_cuda("/s/bitsandbytes/libbitsandbytes_cuda.so"),
            None
        );
    }

    #[test]
    fn the_exact_cuda_wins() {
        let s = shipped_0_50_2();
        assert_eq!(
            choose(&s, Some(v("13.2")), None, Some("0.50.2")),
            Choice::Loads(v("13.2"))
        );
        assert_eq!(
            choose(&s, Some(v("12.6")), None, Some("0.45.0")),
            Choice::Loads(v("12.6"))
        );
    }

    #[test]
    fn new_releases_fall_back_within_the_major() {
        let s = shipped_0_50_2();
        // 12.9: the newest older one; 13.1: 13.0; 12.0: the oldest newer one of major 12.
        assert_eq!(
            choose(&s, Some(v("12.9")), None, Some("0.50.2")),
            Choice::Loads(v("12.8"))
        );
        assert_eq!(
            choose(&s, Some(v("13.1")), None, None),
            Choice::Loads(v("13.0"))
        );
        assert_eq!(
            choose(&s, Some(v("12.0")), None, Some("0.50.0")),
            Choice::Loads(v("12.1"))
        );
        // Never another major.
        assert_eq!(
            choose(&s, Some(v("14.0")), None, Some("0.50.2")),
            Choice::None
        );
    }

    #[test]
    fn old_releases_load_the_exact_one_only() {
        let s = shipped_0_50_2();
        assert_eq!(
            choose(&s, Some(v("12.9")), None, Some("0.49.1")),
            Choice::None
        );
    }

    #[test]
    fn the_override_names_the_library() {
        let s = shipped_0_50_2();
        assert_eq!(
            choose(&s, Some(v("13.2")), Some("124"), Some("0.50.2")),
            Choice::Loads(v("12.4"))
        );
        // An override naming a library that is not there loads nothing (bitsandbytes fails).
        assert_eq!(
            choose(&s, Some(v("13.2")), Some("125"), Some("0.50.2")),
            Choice::None
        );
        assert_eq!(
            choose(&s, Some(v("13.2")), Some("abc"), Some("0.50.2")),
            Choice::None
        );
    }

    #[test]
    fn a_torch_without_cuda_loads_none() {
        assert_eq!(
            choose(&shipped_0_50_2(), None, None, Some("0.50.2")),
            Choice::None
        );
    }

    #[test]
    fn unloaded_lists_the_other_libraries_of_the_env() {
        let env = PythonEnv {
            packages: vec![cudoctor_snapshot::Package {
                name: "bitsandbytes".into(),
                version: "0.50.2".into(),
                location: "/v/site".into(),
            }],
            ..Default::default()
        };
        let paths = [
            "/v/site/bitsandbytes/libbitsandbytes_cuda126.so",
            "/v/site/bitsandbytes/libbitsandbytes_cuda132.so",
            "/v/site/bitsandbytes/libbitsandbytes_cpu.so",
            "/v/site/torch/lib/libtorch_cuda.so",
            "/other/site/bitsandbytes/libbitsandbytes_cuda126.so",
        ];
        let (skipped, loaded) = unloaded(&env, paths, Some(v("13.2")), None);
        assert_eq!(skipped, ["/v/site/bitsandbytes/libbitsandbytes_cuda126.so"]);
        assert_eq!(loaded, Some(v("13.2")));
    }
}
