//! Compiled modules a package ships in several builds and loads one of, chosen by the installed
//! torch: their other builds' kernel images say nothing about what runs.
//!
//! - **One module per torch release**, side by side in one directory, named by the release
//!   (`nixl_ep_cpp_torch212`, `..._torch213`, `..._torch214`): NIXL's `nixl_ep_cu13/__init__.py`
//!   imports `f".nixl_ep_cpp_torch{major}{minor}"` of `torch.__version__`, so only the module of
//!   the installed torch is ever loaded.
//! - **One distribution per CUDA major installed together** (`nixl-cu12` beside `nixl-cu13`, both
//!   brought by the `nixl` meta package, whose `__init__` imports the one of torch's CUDA major):
//!   beside a torch of CUDA 13 with the CUDA 13 build present, the CUDA 12 build's modules are not
//!   loaded into that process.

use cudoctor_snapshot::{PythonEnv, TorchBuild};

/// The part of a module's file name before its torch release, and that release, where the
/// name ends in one (`.../nixl_ep_cpp_torch212.cpython-311-x86_64-linux-gnu.so` ->
/// (`.../nixl_ep_cpp_`, (2, 12))). Releases are written without a dot: a major of one digit,
/// then the minor.
pub fn torch_release_tag(path: &str) -> Option<(&str, (u32, u32))> {
    let name_at = path.rfind(['/', '\\']).map_or(0, |i| i + 1);
    let name = &path[name_at..];
    let stem = &name[..name.find('.')?];
    let at = stem.rfind("torch")?;
    let digits = &stem[at + "torch".len()..];
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(1);
    Some((
        &path[..name_at + at],
        (major.parse().ok()?, minor.parse().ok()?),
    ))
}

/// The torch release (major, minor) of a `__version__` (`2.15.0+cu130` -> (2, 15)).
fn release_of(torch: &TorchBuild) -> Option<(u32, u32)> {
    let mut parts = torch.version.split(['.', '+']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The project and CUDA major of a distribution published per CUDA major (`nixl-cu12` ->
/// (`nixl`, 12)).
fn cuda_variant(dist: &str) -> Option<(&str, u32)> {
    let (project, tag) = dist.rsplit_once("-cu")?;
    if project.is_empty() || tag.is_empty() || !tag.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((project, tag.parse().ok()?))
}

/// The libraries among `libs` (path and owning distribution) of `env` that its torch process
/// never loads because a sibling build for its torch is there.
pub fn unloaded<'p>(
    env: &PythonEnv,
    libs: impl IntoIterator<Item = (&'p str, Option<&'p str>)> + Clone,
) -> Vec<&'p str> {
    let Some(torch) = &env.torch else {
        return Vec::new();
    };
    let inside = |p: &str| {
        env.site_packages
            .iter()
            .any(|sp| p.starts_with(&format!("{}/", sp.trim_end_matches('/'))))
    };
    let mut out = Vec::new();
    // One module per torch release: the others of the same stem, where that stem has several.
    if let Some(release) = release_of(torch) {
        let tagged: Vec<(&str, &str, (u32, u32))> = libs
            .clone()
            .into_iter()
            .filter(|(p, _)| inside(p))
            .filter_map(|(p, _)| torch_release_tag(p).map(|(stem, r)| (p, stem, r)))
            .collect();
        for (p, stem, r) in &tagged {
            let siblings = tagged
                .iter()
                .any(|(q, s, other)| q != p && s == stem && other != r);
            if siblings && *r != release {
                out.push(*p);
            }
        }
    }
    // One distribution per CUDA major: the majors other than torch's, where torch's is there.
    if let Some(major) = torch.cuda_version().map(|c| c.major) {
        let installed: Vec<(&str, u32)> = env
            .packages
            .iter()
            .filter_map(|p| cuda_variant(&p.name))
            .collect();
        for (p, dist) in libs {
            let Some((project, m)) = dist.and_then(cuda_variant) else {
                continue;
            };
            if m != major && inside(p) && installed.contains(&(project, major)) {
                out.push(p);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

impl crate::Context<'_> {
    /// The kernel-image libraries that no environment's torch process loads: the builds of a
    /// module for other torch releases, the builds of a package for other CUDA majors beside
    /// the one for torch's (see the module's doc).
    pub fn unloaded_variants(&self) -> Vec<&str> {
        let Some(images) = &self.snap.kernel_images else {
            return Vec::new();
        };
        let libs = images
            .libraries
            .iter()
            .map(|l| (l.path.as_str(), l.package.as_deref()));
        self.snap
            .python_envs
            .iter()
            .flat_map(|env| unloaded(env, libs.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_snapshot::Package;

    const SP: &str = "/v/lib/python3.11/site-packages";

    fn env(torch: &str, packages: &[&str]) -> PythonEnv {
        PythonEnv {
            site_packages: vec![SP.into()],
            torch: Some(TorchBuild {
                version: torch.into(),
                cuda: torch.split_once("+cu").map(|(_, c)| {
                    let (major, minor) = c.split_at(c.len() - 1);
                    format!("{major}.{minor}")
                }),
                path: format!("{SP}/torch"),
                ..Default::default()
            }),
            packages: packages
                .iter()
                .map(|n| Package {
                    name: (*n).into(),
                    version: "1.5.1".into(),
                    location: SP.into(),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn torch_release_tags_are_read_from_module_names() {
        let p = format!("{SP}/nixl_ep_cu13/nixl_ep_cpp_torch214.cpython-311-x86_64-linux-gnu.so");
        let (stem, r) = torch_release_tag(&p).unwrap();
        assert_eq!(r, (2, 14));
        assert!(stem.ends_with("nixl_ep_cu13/nixl_ep_cpp_"));
        assert_eq!(
            torch_release_tag(&format!("{SP}/x/torch29.so")).map(|t| t.1),
            Some((2, 9))
        );
        assert_eq!(
            torch_release_tag(&format!("{SP}/torch/lib/libtorch_cuda.so")),
            None
        );
        assert_eq!(
            torch_release_tag(&format!("{SP}/torchaudio/_torchaudio.so")),
            None
        );
        assert_eq!(cuda_variant("nixl-cu12"), Some(("nixl", 12)));
        assert_eq!(cuda_variant("cupy-cuda12x"), None);
        assert_eq!(cuda_variant("faiss-gpu-cu12"), Some(("faiss-gpu", 12)));
    }

    /// nixl 1.5.1 beside torch 2.14.0+cu130: the meta package brings nixl-cu12 and nixl-cu13;
    /// nixl_ep_cu13 ships one module per torch release (212, 213, 214), as its wheel does.
    #[test]
    fn nixl_builds_for_another_torch_or_cuda_are_not_loaded() {
        let e = env("2.14.0+cu130", &["nixl", "nixl-cu12", "nixl-cu13", "torch"]);
        let ep = |d: &str, r: &str| {
            format!("{SP}/nixl_ep_{d}/nixl_ep_cpp_torch{r}.cpython-311-x86_64-linux-gnu.so")
        };
        let plugin12 = format!("{SP}/nixl_cu12.libs/nixl/libplugin_GPUNETIO.so");
        let plugin13 = format!("{SP}/nixl_cu13.libs/nixl/libplugin_GPUNETIO.so");
        let libs = [
            (ep("cu13", "212"), "nixl-cu13"),
            (ep("cu13", "213"), "nixl-cu13"),
            (ep("cu13", "214"), "nixl-cu13"),
            (ep("cu12", "213"), "nixl-cu12"),
            (plugin12.clone(), "nixl-cu12"),
            (plugin13.clone(), "nixl-cu13"),
        ];
        let got = unloaded(&e, libs.iter().map(|(p, d)| (p.as_str(), Some(*d))));
        let mut want = vec![
            ep("cu13", "212"),
            ep("cu13", "213"),
            ep("cu12", "213"),
            plugin12,
        ];
        want.sort();
        assert_eq!(got, want);
        // Without the CUDA 13 build, the CUDA 12 one is what a CUDA 13 torch would load (a
        // mix of majors other rules judge): it stays judged.
        let e = env("2.14.0+cu130", &["nixl", "nixl-cu12", "torch"]);
        let got = unloaded(&e, libs.iter().map(|(p, d)| (p.as_str(), Some(*d))));
        assert!(!got.iter().any(|p| p.contains("libplugin")), "{got:?}");
    }

    #[test]
    fn a_single_module_named_after_a_torch_release_is_judged() {
        // No sibling for another release: nothing says the package dispatches on torch.
        let e = env("2.15.0+cu130", &["torch"]);
        let p = format!("{SP}/pkg/_ops_torch28.so");
        assert!(unloaded(&e, [(p.as_str(), Some("pkg"))]).is_empty());
        // Without torch nothing is chosen.
        let mut e = e;
        e.torch = None;
        let q = format!("{SP}/pkg/_ops_torch29.so");
        assert!(unloaded(&e, [(p.as_str(), None), (q.as_str(), None)]).is_empty());
    }
}
