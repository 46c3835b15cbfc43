//! What is installed in a Python environment, from `*.dist-info` / `*.egg-info` directory names
//! (the fastest source: no file is opened per package) and `torch/version.py`.

use cudoctor_snapshot::{
    CondaPackage, Package, PythonEnv, PythonEnvKind, ScanKind, StopReason, TorchBuild,
};

use crate::host::Host;

/// Distributions recorded in a snapshot besides every `nvidia-*` and `cuda-*` one.
const INTERESTING: &[&str] = &[
    "torch",
    "torchvision",
    "torchaudio",
    "triton",
    "pytorch-triton",
    "xformers",
    "flash-attn",
    "flash-attn-3",
    "vllm",
    "sglang",
    "deepspeed",
    "bitsandbytes",
    "apex",
    "jax",
    "jaxlib",
    "tensorflow",
    "tensorflow-gpu",
    "tf-nightly",
    "sgl-kernel",
    "sglang-kernel",
    "onnxruntime-gpu",
    "tensorrt",
    "transformer-engine",
    "mamba-ssm",
    "causal-conv1d",
    "sageattention",
    "flashinfer-python",
    "xgrammar",
    "accelerate",
    "transformers",
    "peft",
    "diffusers",
    "safetensors",
    "numpy",
    "auto-gptq",
    "autoawq",
    "llama-cpp-python",
    "paddlepaddle-gpu",
    "mmcv",
    "detectron2",
    "torch-scatter",
    "torch-sparse",
    "torch-geometric",
    "spconv",
    "nvidia-dali",
    "fbgemm-gpu",
];

/// Projects whose PyPI wheels carry CUDA kernels of their own without being torch extensions or
/// frameworks of the layer, or whose compiled modules are named otherwise than the project
/// (each found by the sweep, docs/sweep.md: cuobjdump lists kernel images in the files their
/// RECORD names). Their shared objects are scanned for kernel images, owned by the project.
/// Projects published per CUDA release (`faiss-gpu-cu12`) need no row: their tag says it.
pub const CUDA_IN_WHEEL: &[&str] = &[
    "xgboost",         // xgboost/lib/libxgboost.so
    "catboost",        // catboost/_catboost.so
    "torchcodec",      // torchcodec/libtorchcodec_core*.so, its nvJPEG
    "pynvvideocodec",  // PyNvVideoCodec/PyNvVideoCodec_*.so
    "autoawq-kernels", // awq_ext*.so, exl_ext*.so... at the top level
    "auto-gptq",       // autogptq_cuda_*.so, exllama_kernels*.so at the top level
    "sgl-flash-mla",   // flash_mla/*.so
    "mlx-cuda-12",     // mlx/lib/libmlx.so (MLX's CUDA backend, `mlx[cuda]`)
    "mlx-cuda-13",     // the same for CUDA 13 (`mlx[cuda13]`)
];

/// Whether a distribution's wheels carry CUDA kernels to scan beside torch's and the
/// frameworks': [`CUDA_IN_WHEEL`] and the projects published per CUDA release, except
/// NVIDIA's own libraries (they carry every architecture of their release).
pub fn carries_cuda_code(name: &str) -> bool {
    !name.starts_with("nvidia-")
        && name != "torch"
        && (CUDA_IN_WHEEL.contains(&name) || cudoctor_types::without_cuda_variant(name) != name)
}

/// Conda packages that decide which CUDA runtime a conda env carries.
const CONDA_INTERESTING: &[&str] = &[
    "cudatoolkit",
    "pytorch-cuda",
    "cuda-toolkit",
    "cuda-version",
    "cuda-runtime",
    "cuda-cudart",
    "cuda-nvcc",
    "pytorch",
    "pytorch-gpu",
    "cudnn",
    "nccl",
    "magma-cuda",
];

pub fn is_interesting(name: &str) -> bool {
    // A listed project's build for one CUDA release (`spconv-cu126`) is that project.
    INTERESTING.contains(&name)
        || carries_cuda_code(name)
        || name.starts_with("nvidia-")
        || name.starts_with("cuda-")
        || name.starts_with("cupy")
        || name.starts_with("jax-cuda")
        || name.starts_with("torch-")
        || super::frameworks::in_table(name)
        || names_gpu(name)
}

/// A distribution named for its GPU build (`faiss-gpu`, `inference-gpu`): recorded, so that its
/// `Requires-Dist` says whether it needs CUDA's library wheels (and its kernels are read).
fn names_gpu(name: &str) -> bool {
    name.ends_with("-gpu") || name.contains("-gpu-")
}

pub use cudoctor_types::normalise_name;

/// The environment's package directories in the order the interpreter puts them on `sys.path`,
/// so the first torch found is the one `import torch` loads (checked against real interpreters
/// by the real-env tier): PYTHONPATH's entries first; then, for a venv, its own directories, the
/// user site (only with `--system-site-packages`) and the base interpreter's; otherwise the
/// user site, then the prefix's own (Debian's /usr/local before /usr). Each site directory is
/// followed by the directories its `.pth` files add, as `site.addsitedir` does. The user site
/// is skipped under PYTHONNOUSERSITE.
pub fn site_packages_dirs(
    host: &Host,
    prefix: &str,
    kind: PythonEnvKind,
    lib_versions: &[String],
    cfg: Option<&str>,
) -> Vec<String> {
    let system_site = super::includes_system_site(cfg);
    let user_site: Vec<String> = match host.var("HOME") {
        Some(home) if host.var("PYTHONNOUSERSITE").is_none_or(str::is_empty) => lib_versions
            .iter()
            .map(|v| {
                format!(
                    "{}/.local/lib/python{v}/site-packages",
                    home.trim_end_matches('/')
                )
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut dirs: Vec<String> = host
        .var("PYTHONPATH")
        .map(|p| {
            p.split(':')
                .filter(|s| !s.is_empty())
                .map(crate::host::normalise)
                .collect()
        })
        .unwrap_or_default();
    let mut site_dirs = Vec::new();
    if kind == PythonEnvKind::Venv {
        site_dirs.extend(prefix_dirs(prefix, lib_versions));
        if system_site {
            site_dirs.extend(user_site);
            // pyvenv.cfg's `home` is the base interpreter's bin directory.
            if let Some(base) = cfg.and_then(|c| super::cfg_value(c, "home")).and_then(|h| {
                h.trim_end_matches('/')
                    .rsplit_once('/')
                    .map(|(p, _)| p.to_string())
            }) {
                let base = if base.is_empty() {
                    "/".to_string()
                } else {
                    base
                };
                site_dirs.extend(prefix_dirs(&base, lib_versions));
            }
        }
    } else {
        site_dirs.extend(user_site);
        site_dirs.extend(prefix_dirs(prefix, lib_versions));
    }
    let mut own = std::collections::HashSet::new();
    for d in site_dirs.into_iter().filter(|d| host.is_dir(d)) {
        let pth = pth_dirs(host, &d);
        own.insert(d.clone());
        dirs.push(d);
        dirs.extend(pth);
    }
    // A set, not a list: 60,000 `.pth` directories must cost linear time, not quadratic.
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for d in dirs {
        // Past the deadline the rest of sys.path is left out (said as stopped early), but
        // never the environment's own site directories.
        if !own.contains(&d) && host.out_of_time(ScanKind::SitePackages, prefix) {
            continue;
        }
        if !host.is_dir(&d) {
            continue;
        }
        let key = host
            .resolve(&d)
            .map(|(r, _)| r)
            .unwrap_or_else(|| d.clone());
        if seen.insert(key) {
            out.push(d);
        }
    }
    out
}

/// Where `import MODULE` of a top-level name finds it, as indexes into `dirs` (sys.path
/// order), the way CPython's path finder decides: the first directory holding a regular
/// package (`MODULE/__init__.*`) or a module file (`MODULE.py`, `MODULE.*.so`) wins alone;
/// directories holding only a `MODULE/` without `__init__` are portions of one namespace
/// package, used together when no directory has a regular one. Empty: not importable.
/// `python_version` (`3.11`) restricts version-tagged extension files to that interpreter.
pub fn import_origin(
    host: &Host,
    dirs: &[String],
    module: &str,
    python_version: Option<&str>,
) -> Vec<usize> {
    let mut portions = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let pkg = format!("{dir}/{module}");
        let is_dir = host.is_dir(&pkg);
        if is_dir
            && host.list_dir(&pkg).iter().any(|n| {
                n.strip_prefix("__init__.")
                    .is_some_and(|ext| is_module_suffix(ext, python_version))
            })
        {
            return vec![i];
        }
        // A module file wins over a namespace directory of the same name (FileFinder).
        if host.list_dir(dir).iter().any(|n| {
            n.strip_prefix(module)
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|ext| is_module_suffix(ext, python_version))
                && host.is_file(&format!("{dir}/{n}"))
        }) {
            return vec![i];
        }
        if is_dir {
            portions.push(i);
        }
    }
    portions
}

/// Whether files under an env's site directories belong to what its interpreter imports:
/// a file of a top-level package (or of its auditwheel `<name>.libs/`) shadowed by another
/// earlier on sys.path is never loaded by that interpreter. Origins are computed once per
/// top-level name.
pub struct ImportOrigins<'a> {
    env: &'a PythonEnv,
    origins: Vec<(String, Vec<usize>)>,
}

impl<'a> ImportOrigins<'a> {
    pub fn new(env: &'a PythonEnv) -> Self {
        ImportOrigins {
            env,
            origins: Vec::new(),
        }
    }

    /// True when `path` lies in a site directory of the env and its top-level package is
    /// imported from that directory.
    pub fn imports(&mut self, host: &Host, path: &str) -> bool {
        let Some((i, rel)) = self
            .env
            .site_packages
            .iter()
            .enumerate()
            .find_map(|(i, sp)| path.strip_prefix(&format!("{sp}/")).map(|r| (i, r)))
        else {
            return false;
        };
        let top = rel.split('/').next().unwrap_or(rel);
        let module = top.split('.').next().unwrap_or(top);
        if !self.origins.iter().any(|(m, _)| m == module) {
            let o = import_origin(
                host,
                &self.env.site_packages,
                module,
                self.env.python_version.as_deref(),
            );
            self.origins.push((module.to_string(), o));
        }
        self.origins
            .iter()
            .find(|(m, _)| m == module)
            .is_some_and(|(_, o)| o.contains(&i))
    }
}

/// True for what follows `name.` in a file the import system loads: `py`, `pyc`, `so`,
/// `abi3.so`, or `cpython-311-x86_64-linux-gnu.so` (for that interpreter when it is known).
fn is_module_suffix(ext: &str, python_version: Option<&str>) -> bool {
    match ext {
        "py" | "pyc" | "so" | "abi3.so" => true,
        _ => ext
            .strip_suffix(".so")
            .and_then(|t| t.strip_prefix("cpython-"))
            .is_some_and(|tag| {
                // `3.12.3` (pyvenv.cfg) or `3.12` (lib/python3.12): the tag is `312`.
                let want = python_version.map(|v| v.split('.').take(2).collect::<String>());
                want.is_none_or(|w| tag.split('-').next() == Some(w.as_str()))
            }),
    }
}

/// Bytes of `.pth` files read per site directory, at most (real ones hold a line or a few).
pub(crate) const MAX_PTH_BYTES: u64 = 64 << 20;

/// The directories the `.pth` files of a site directory add, in `site.addpackage` order:
/// files sorted by name, lines that are neither comments nor `import` statements, relative to
/// the site directory.
fn pth_dirs(host: &Host, site_dir: &str) -> Vec<String> {
    let mut names: Vec<String> = host
        .list_dir(site_dir)
        .into_iter()
        .filter(|n| n.ends_with(".pth"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    let mut bytes = 0u64;
    for name in names {
        if host.out_of_time(ScanKind::SitePackages, site_dir) {
            break;
        }
        // Real `.pth` files hold a line or a few; thousands of huge ones end at a byte cap.
        if bytes > MAX_PTH_BYTES {
            host.stopped(
                ScanKind::SitePackages,
                site_dir,
                StopReason::Bytes {
                    limit: MAX_PTH_BYTES,
                },
            );
            break;
        }
        let Ok(text) = host.read_text(&format!("{site_dir}/{name}")) else {
            continue;
        };
        bytes += text.len() as u64;
        for line in pth_entries(&text) {
            let dir = if line.starts_with('/') {
                crate::host::normalise(line)
            } else {
                crate::host::normalise(&format!("{site_dir}/{line}"))
            };
            if host.is_dir(&dir) {
                out.push(dir);
            }
        }
    }
    out
}

/// The lines of a `.pth` file that name directories, as `site.addpackage` reads them: blank
/// lines, comments and `import` lines (code it runs) skipped, trailing whitespace dropped.
pub fn pth_entries(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim_end).filter(|line| {
        !(line.is_empty()
            || line.starts_with('#')
            || line.starts_with("import ")
            || line.starts_with("import\t"))
    })
}

/// A prefix's own package directories, in `site.getsitepackages()` order.
fn prefix_dirs(prefix: &str, lib_versions: &[String]) -> Vec<String> {
    let prefix = prefix.trim_end_matches('/');
    let mut dirs = Vec::new();
    if prefix == "/usr" {
        // Debian and Ubuntu: pip's system installs in /usr/local come before the distribution's.
        for v in lib_versions {
            dirs.push(format!("/usr/local/lib/python{v}/dist-packages"));
        }
        dirs.push("/usr/lib/python3/dist-packages".to_string());
    }
    for v in lib_versions {
        for lib in ["lib", "lib64"] {
            for sub in ["site-packages", "dist-packages"] {
                dirs.push(format!("{prefix}/{lib}/python{v}/{sub}"));
            }
        }
    }
    dirs
}

/// Fills `packages` and `torch` from the environment's site-packages directories.
pub fn read_packages(host: &Host, env: &mut PythonEnv) {
    for sp in env.site_packages.clone() {
        // A site directory proper is read whole (its packages are the environment's); the
        // directories `.pth` files add stop at the deadline.
        let own = sp.ends_with("-packages");
        for entry in super::memo::list_dir(host, &sp).iter() {
            if !own && host.out_of_time(ScanKind::SitePackages, &sp) {
                break;
            }
            let Some((name, version)) = dist_name_version(entry) else {
                continue;
            };
            let version = match version {
                Some(v) => v,
                None => match pkg_info_version(host, &format!("{sp}/{entry}")) {
                    Some(v) => v,
                    None => continue,
                },
            };
            let name = normalise_name(&name);
            if is_interesting(&name) && env.package(&name).is_none() {
                env.packages.push(Package {
                    name,
                    version,
                    location: sp.clone(),
                });
            }
        }
        if let Some(first) = &env.torch {
            // A second torch later on sys.path is never imported; say so, it confuses people.
            if let Ok(text) = host.read_text(&format!("{sp}/torch/version.py")) {
                if let Some(other) = parse_torch_version_py(&text, &format!("{sp}/torch")) {
                    env.errors.push(format!(
                        "torch {} in {} is shadowed by torch {} in {} (earlier on sys.path)",
                        other.version, other.path, first.version, first.path
                    ));
                }
            }
        } else {
            let version_py = format!("{sp}/torch/version.py");
            match host.read_text(&version_py) {
                Ok(text) => match parse_torch_version_py(&text, &format!("{sp}/torch")) {
                    Some(t) => env.torch = Some(t),
                    None => env
                        .errors
                        .push(format!("{version_py}: no __version__ found")),
                },
                Err(e) if host.is_dir(&format!("{sp}/torch")) => {
                    env.errors.push(format!("{version_py}: {e}"))
                }
                Err(_) => {}
            }
        }
    }
    env.packages.sort_by(|a, b| a.name.cmp(&b.name));
}

/// `torch-2.11.0+cu130.dist-info` -> (`torch`, `2.11.0+cu130`); `foo.egg-info` -> (`foo`, None).
pub fn dist_name_version(entry: &str) -> Option<(String, Option<String>)> {
    let stem = entry
        .strip_suffix(".dist-info")
        .or_else(|| entry.strip_suffix(".egg-info"))?;
    match stem.split_once('-') {
        Some((name, rest)) => {
            // egg-info names may carry `-py3.11` after the version.
            let version = rest.split("-py").next().unwrap_or(rest);
            Some((name.to_string(), Some(version.to_string())))
        }
        None => Some((stem.to_string(), None)),
    }
}

fn pkg_info_version(host: &Host, dir: &str) -> Option<String> {
    let text = host
        .read_text(&format!("{dir}/PKG-INFO"))
        .or_else(|_| host.read_text(&format!("{dir}/METADATA")))
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Version:"))
        .map(|v| v.trim().to_string())
}

/// The assignments of torch/version.py. Only literals are read; the file is never executed.
pub fn parse_torch_version_py(text: &str, torch_dir: &str) -> Option<TorchBuild> {
    let value = |key: &str| -> Option<Option<String>> {
        text.lines().find_map(|l| {
            let (lhs, rhs) = l.split_once('=')?;
            let lhs = lhs.split(':').next()?.trim();
            if lhs != key {
                return None;
            }
            let rhs = rhs.trim();
            if rhs == "None" {
                return Some(None);
            }
            let quoted = rhs
                .strip_prefix('\'')
                .and_then(|r| r.strip_suffix('\''))
                .or_else(|| rhs.strip_prefix('"').and_then(|r| r.strip_suffix('"')))?;
            Some(Some(quoted.to_string()))
        })
    };
    let version = value("__version__")??;
    Some(TorchBuild {
        version,
        cuda: value("cuda").flatten(),
        hip: value("hip").flatten(),
        git_version: value("git_version").flatten(),
        path: torch_dir.to_string(),
    })
}

/// conda's records (`conda-meta/<name>-<version>-<build>.json`) for CUDA-bearing packages.
pub fn conda_packages(host: &Host, prefix: &str) -> Vec<CondaPackage> {
    let meta = format!("{prefix}/conda-meta");
    host.list_dir(&meta)
        .into_iter()
        .filter_map(|f| {
            let stem = f.strip_suffix(".json")?;
            let (rest, build) = stem.rsplit_once('-')?;
            let (name, version) = rest.rsplit_once('-')?;
            if !CONDA_INTERESTING.contains(&name) {
                return None;
            }
            let channel = host
                .read_text(&format!("{meta}/{f}"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| {
                    v.get("channel")
                        .and_then(|c| c.as_str())
                        .map(str::to_string)
                });
            Some(CondaPackage {
                name: name.to_string(),
                version: version.to_string(),
                build: Some(build.to_string()),
                channel,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

    #[test]
    fn builds_per_cuda_release_and_wheels_with_cuda_code_are_recorded_and_scanned() {
        // The sweep's installs: a listed project's CUDA variant is that project.
        assert!(is_interesting("spconv-cu126"));
        assert!(carries_cuda_code("spconv-cu126"));
        assert!(carries_cuda_code("faiss-gpu-cu12"));
        assert!(carries_cuda_code("mxnet-cu112"));
        assert!(carries_cuda_code("xgboost"));
        // NVIDIA's libraries and torch are scanned their own way; pure Python is not scanned.
        assert!(!carries_cuda_code("nvidia-cublas-cu12"));
        assert!(!carries_cuda_code("torch"));
        assert!(!carries_cuda_code("transformers"));
        assert!(is_interesting("transformers"));
        assert!(!is_interesting("requests"));
        // Named for its GPU build, no CUDA tag: recorded, so its requirements are read.
        assert!(is_interesting("faiss-gpu"));
        assert!(!carries_cuda_code("faiss-gpu"));
        assert!(!is_interesting("gpustat"));
    }

    #[test]
    fn the_first_regular_package_or_module_is_imported_and_namespaces_join() {
        let root = tempfile::tempdir().unwrap();
        let mk = |rel: &str| {
            let p = root.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        };
        // A venv over a user site: both hold torch and nvidia/; only the venv's nvidia has
        // an __init__.py (as the CUDA 12 wheels install it).
        mk("venv/torch/__init__.py");
        mk("venv/nvidia/__init__.py");
        mk("venv/nvidia/cudnn/lib/libcudnn.so.9");
        mk("user/torch/__init__.py");
        mk("user/nvidia/cudnn/lib/libcudnn.so.9");
        mk("user/ns/a/x.py");
        mk("base/ns/b/y.py");
        mk("user/ext.cpython-312-x86_64-linux-gnu.so");
        mk("base/ext.cpython-311-x86_64-linux-gnu.so");
        mk("user/mod/sub.py");
        mk("base/mod.py");
        let host = Host::rooted(root.path().into(), BTreeMap::new(), Duration::from_secs(1));
        let dirs: Vec<String> = ["/venv", "/user", "/base"].map(String::from).to_vec();
        let origin = |m: &str| import_origin(&host, &dirs, m, Some("3.11.7"));
        assert_eq!(origin("torch"), vec![0]);
        assert_eq!(origin("nvidia"), vec![0]);
        assert_eq!(origin("ns"), vec![1, 2]);
        // Another interpreter's extension is not importable; this one's is.
        assert_eq!(origin("ext"), vec![2]);
        // A module file later on the path beats an earlier namespace directory.
        assert_eq!(origin("mod"), vec![2]);
        assert_eq!(origin("absent"), Vec::<usize>::new());
    }

    /// Thousands of `.pth` directories, each named twice: each kept once, in order (the set that
    /// keeps them makes 60,000 cost linear time; a list searched for each took 16 s).
    #[test]
    fn many_pth_directories_are_kept_once_each_in_order() {
        let root = tempfile::tempdir().unwrap();
        let sp = root.path().join("venv/lib/python3.12/site-packages");
        std::fs::create_dir_all(&sp).unwrap();
        let mut lines = String::new();
        for i in 0..3_000 {
            let d = root.path().join(format!("d/{i}"));
            std::fs::create_dir_all(&d).unwrap();
            lines.push_str(&format!("{}\n", d.display()));
        }
        std::fs::write(sp.join("a.pth"), &lines).unwrap();
        std::fs::write(sp.join("b.pth"), &lines).unwrap();
        let cfg = "home = /usr/bin\ninclude-system-site-packages = false\n";
        std::fs::write(root.path().join("venv/pyvenv.cfg"), cfg).unwrap();
        let host = Host::real(Duration::from_secs(5));
        let started = std::time::Instant::now();
        let prefix = root.path().join("venv").display().to_string();
        let dirs = site_packages_dirs(
            &host,
            &prefix,
            PythonEnvKind::Venv,
            &["3.12".to_string()],
            Some(cfg),
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(dirs.len(), 3_001, "{:?}", &dirs[dirs.len() - 3..]);
        assert!(dirs[1].ends_with("/d/0") && dirs[3_000].ends_with("/d/2999"));
    }

    /// Past the deadline the `.pth` additions are left out and said, never the environment's
    /// own site directory or its packages (a check cut short must not lose torch).
    #[test]
    fn a_spent_deadline_keeps_the_own_site_directory_and_its_packages() {
        let root = tempfile::tempdir().unwrap();
        let sp = root.path().join("venv/lib/python3.12/site-packages");
        std::fs::create_dir_all(sp.join("torch-2.5.0.dist-info")).unwrap();
        let d = root.path().join("d");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(sp.join("a.pth"), format!("{}\n", d.display())).unwrap();
        let cfg = "home = /usr/bin\ninclude-system-site-packages = false\n";
        let host = Host::real(Duration::from_secs(5))
            .with_deadline(cudoctor_types::Deadline::after(Duration::ZERO));
        let prefix = root.path().join("venv").display().to_string();
        let dirs = site_packages_dirs(
            &host,
            &prefix,
            PythonEnvKind::Venv,
            &["3.12".to_string()],
            Some(cfg),
        );
        assert_eq!(dirs, vec![sp.display().to_string()]);
        let mut env = PythonEnv {
            site_packages: dirs,
            ..Default::default()
        };
        read_packages(&host, &mut env);
        assert!(env.package("torch").is_some());
        let stops = host.stopped_early();
        assert!(!stops.is_empty());
        assert!(stops.iter().all(|s| s.scan == ScanKind::SitePackages));
    }

    #[test]
    fn reads_the_real_torch_version_file() {
        let text = cudoctor_testkit::h200x2("torchversion.txt");
        let t = parse_torch_version_py(&text, "/x/torch").unwrap();
        assert_eq!(t.version, "2.11.0+cu130");
        assert_eq!(t.cuda.as_deref(), Some("13.0"));
        assert_eq!(t.hip, None);
        assert_eq!(
            t.git_version.as_deref(),
            Some("70d99e998b4955e0049d13a98d77ae1b14db1f45")
        );
    }

    #[test]
    fn reads_old_style_and_cpu_version_files() {
        let old = "__version__ = '1.13.1+cu117'\ndebug = False\ncuda = '11.7'\ngit_version = 'abc'\nhip = None\n";
        let t = parse_torch_version_py(old, "t").unwrap();
        assert_eq!(t.cuda.as_deref(), Some("11.7"));
        let cpu = "__version__ = '2.5.1+cpu'\ncuda: Optional[str] = None\n";
        assert_eq!(parse_torch_version_py(cpu, "t").unwrap().cuda, None);
        assert!(parse_torch_version_py("garbage = (", "t").is_none());
    }

    #[test]
    fn dist_info_names() {
        assert_eq!(
            dist_name_version("torch-2.11.0+cu130.dist-info"),
            Some(("torch".into(), Some("2.11.0+cu130".into())))
        );
        assert_eq!(
            dist_name_version("nvidia_cudnn_cu13-9.19.0.56.dist-info"),
            Some(("nvidia_cudnn_cu13".into(), Some("9.19.0.56".into())))
        );
        assert_eq!(
            dist_name_version("apex-0.1-py3.10.egg-info"),
            Some(("apex".into(), Some("0.1".into())))
        );
        assert_eq!(dist_name_version("torch"), None);
        assert_eq!(normalise_name("Flash_Attn"), "flash-attn");
        assert_eq!(normalise_name("nvidia_cudnn_cu13"), "nvidia-cudnn-cu13");
    }
}
