//! Kernel images of the CUDA libraries a Python environment loads: torch's own and its CUDA
//! extensions. Reads ELF and fat-binary headers only (cudoctor-fatbin), in parallel.

use std::path::PathBuf;

use cudoctor_fatbin::{default_threads, ScanError};
use cudoctor_snapshot::{KernelImages, LibraryImages, PythonEnv, ScanKind};

use crate::host::Host;

/// Top-level modules that ship CUDA kernels of their own (compiled extensions). NVIDIA's own
/// `nvidia/*` libraries are left out of the default check: they carry every supported arch.
const EXTENSION_MODULES: &[&str] = &[
    "torch",
    "torchvision",
    "torchaudio",
    "torch_tensorrt",
    "deep_gemm",
    "flash_mla",
    "flash_attn",
    "flash_attn_3",
    "hopper",
    "xformers",
    "vllm",
    "vllm_flash_attn",
    "bitsandbytes",
    "apex",
    "deepspeed",
    "sageattention",
    "mamba_ssm",
    "causal_conv1d",
    "flashinfer",
    "transformer_engine",
    "torch_scatter",
    "torch_sparse",
    "torch_cluster",
    "torch_spline_conv",
    "spconv",
    "mmcv",
    "detectron2",
    "auto_gptq",
    "awq",
    "exllamav2",
    "llama_cpp",
    "sgl_kernel",
    "xgrammar",
    "triton",
    "fbgemm_gpu",
    "torchao",
    "natten",
    "pointnet2_ops",
    "gsplat",
    "tinycudann",
    "nvdiffrast",
    "pytorch3d",
];

/// The candidates with the shared objects every framework build besides torch ships (JAX's
/// CUDA plugin, CuPy, ONNX Runtime's providers: their RECORDs), owned by the build's
/// distribution, for the kernel scan only: torch's process does not load them. A file its
/// RECORD names that is not there is FW010's concern, not an unreadable kernel image.
pub fn with_framework_libraries(
    host: &Host,
    envs: &[PythonEnv],
    candidates: &[(String, String)],
) -> Vec<(String, String)> {
    let mut out = candidates.to_vec();
    let mut at: std::collections::HashMap<String, usize> = out
        .iter()
        .enumerate()
        .map(|(i, (p, _))| (p.clone(), i))
        .collect();
    for env in envs {
        // The distributions whose wheels carry CUDA code without being frameworks of the layer
        // (xgboost, faiss-gpu-cu12...): their RECORD's shared objects, owned by them, also
        // where a top-level module's name does not say its distribution (awq_ext.so is
        // autoawq-kernels').
        for p in env
            .packages
            .iter()
            .filter(|p| crate::python::site::carries_cuda_code(&p.name))
        {
            for path in crate::python::frameworks::shared_objects(host, env, &p.name) {
                match at.get(&path) {
                    Some(&i) => out[i].1 = p.name.clone(),
                    None if host.is_file(&path) => {
                        at.insert(path.clone(), out.len());
                        out.push((path, p.name.clone()));
                    }
                    None => {}
                }
            }
        }
        // The distributions that require NVIDIA's CUDA runtime or math library wheels
        // (faiss-gpu: `nvidia-cuda-runtime-cu12`, `nvidia-cublas-cu12`): their own shared
        // objects link those libraries, so they carry CUDA code whatever their name. Only
        // files no other reading found (a framework's or a listed project's keep their owner).
        for d in env
            .declared
            .iter()
            .filter(|d| requires_cuda_libraries(&d.package, &d.requires))
        {
            for path in crate::python::frameworks::shared_objects(host, env, &d.package) {
                if !at.contains_key(&path) && host.is_file(&path) {
                    at.insert(path.clone(), out.len());
                    out.push((path, d.package.clone()));
                }
            }
        }
        for b in env
            .frameworks
            .iter()
            .filter(|b| b.framework != cudoctor_snapshot::Framework::Torch)
        {
            for path in &b.ships {
                if host.is_file(path) && !at.contains_key(path) {
                    at.insert(path.clone(), out.len());
                    out.push((path.clone(), b.package.clone()));
                }
            }
        }
    }
    out
}

/// NVIDIA's wheels of the CUDA runtime and of the libraries code built with nvcc links.
const CUDA_LIBRARY_WHEELS: &[&str] = &[
    "nvidia-cuda-runtime",
    "nvidia-cublas",
    "nvidia-curand",
    "nvidia-cufft",
    "nvidia-cusparse",
    "nvidia-cusolver",
    "nvidia-cudnn",
    "nvidia-nccl",
];

/// Whether distribution `package`, by its `Requires-Dist` lines, needs one of NVIDIA's CUDA
/// library wheels outside an extra (an extra's requirement says nothing of the package's own
/// files). NVIDIA's own wheels and torch are read otherwise.
fn requires_cuda_libraries(package: &str, requires: &[String]) -> bool {
    if package == "torch" || package.starts_with("nvidia-") {
        return false;
    }
    requires.iter().any(|line| {
        line.parse::<cudoctor_types::Requirement>().is_ok_and(|r| {
            let base = cudoctor_types::without_cuda_variant(&r.name);
            CUDA_LIBRARY_WHEELS.contains(&base) && r.marker_extras().is_empty()
        })
    })
}

/// Scans the [`candidates`] of the environments.
pub fn scan_extensions(host: &Host, candidates: &[(String, String)]) -> KernelImages {
    let mut images = scan(host, candidates);
    images.scope = "torch and CUDA extensions of each Python environment".into();
    images
}

/// The libraries of torch and of compiled extensions in each environment's site-packages, with
/// the distribution that owns each: top-level extension modules (`*.so`) and the directories of
/// known CUDA-extension packages.
pub fn candidates(host: &Host, envs: &[PythonEnv]) -> Vec<(String, String)> {
    let mut paths: Vec<(String, String)> = Vec::new();
    // Each path once (a set: twenty envs hold thousands of libraries).
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    for env in envs {
        let mut imported = crate::python::site::ImportOrigins::new(env);
        for sp in &env.site_packages {
            for entry in host.list_dir(sp) {
                // A site directory of millions of entries ends at the command's deadline.
                if host.out_of_time(ScanKind::KernelImages, sp) {
                    break;
                }
                let machine = format!("{sp}/{entry}");
                let is_ext_file = entry.contains(".so") && host.is_file(&machine);
                let module = entry.split('.').next().unwrap_or(&entry);
                // A package shadowed by one earlier on sys.path is never imported (a user
                // site's torch under a venv's own): its libraries are not the env's.
                if (is_ext_file || EXTENSION_MODULES.contains(&module))
                    && !imported.imports(host, &machine)
                {
                    continue;
                }
                let found = if is_ext_file {
                    vec![machine]
                } else if EXTENSION_MODULES.contains(&module) && host.is_dir(&machine) {
                    expand(host, &machine)
                } else {
                    continue;
                };
                for m in found {
                    if seen.insert(m.clone()) {
                        paths.push((m, owner(env, module)));
                    }
                }
            }
        }
    }
    paths
}

/// The owner label of a CUDA binary found outside the site directories' packages: a JIT
/// build's extension name, an editable install's distribution, else the module's name.
pub fn discovered_owner(b: &cudoctor_snapshot::FoundBinary) -> String {
    match &b.origin {
        cudoctor_snapshot::BinaryOrigin::TorchExtensionCache { name, .. } => name.clone(),
        cudoctor_snapshot::BinaryOrigin::Editable { distribution, .. } => distribution.clone(),
        _ => {
            let file = b.path.rsplit('/').next().unwrap_or(&b.path);
            file.split('.').next().unwrap_or(file).to_string()
        }
    }
}

/// Scans the given machine paths (files or directories) with each library's owner label.
///
/// One queue of files for the process's workers ([`scan_queue`]), the largest first, so that
/// a few large libraries (torch's, cuBLAS') start at once and the many small ones (extensions,
/// JIT builds) fill the other workers around them: no worker waits at a batch's end for
/// another's large file. A file not begun by the command's deadline is left out, and the
/// stop is said.
pub fn scan(host: &Host, paths: &[(String, String)]) -> KernelImages {
    let real: Vec<PathBuf> = paths.iter().map(|(p, _)| host.fs_path(p)).collect();
    let opts = cudoctor_fatbin::ScanOptions {
        deadline: host.deadline(),
        ..Default::default()
    };
    let results = scan_queue(&real, &opts);
    // A library whose own scan the deadline ended (a section of gigabytes) is left out like
    // those never begun: not judged, and the stop is said.
    let budget_s = host.deadline().budget_s().unwrap_or(0.0);
    let (results, paths): (Vec<_>, Vec<_>) = results
        .into_iter()
        .zip(paths)
        .filter(|((_, result), (machine, _))| {
            let stopped = matches!(result, Err(cudoctor_fatbin::ScanError::Stopped(_)));
            if stopped {
                let place = machine
                    .rsplit_once('/')
                    .map_or(machine.as_str(), |(d, _)| d);
                host.stopped(
                    ScanKind::KernelImages,
                    place,
                    cudoctor_snapshot::StopReason::Deadline { budget_s },
                );
            }
            !stopped
        })
        .unzip();
    let libraries = results
        .into_iter()
        .zip(paths)
        .map(|((_, result), (machine, owner)): (_, &(String, String))| {
            let mut lib = LibraryImages {
                path: machine.clone(),
                package: (!owner.is_empty()).then(|| owner.clone()),
                ..Default::default()
            };
            match result {
                Ok(img) => {
                    lib.sass = img.sass;
                    lib.ptx = img.ptx;
                    lib.ptx_isa = img.ptx_isa;
                    lib.lto = img.lto;
                }
                Err(e) => lib.error = Some(e.to_string()),
            }
            lib
        })
        .collect();
    KernelImages {
        scope: "paths".into(),
        libraries,
    }
}

/// Each file's scan, in the order given, by up to [`default_threads`] workers pulling from one
/// queue ordered by size, largest first (the longest scans start first, the shortest end the
/// queue). A file whose turn comes after `opts.deadline` is not opened: it is
/// [`cudoctor_fatbin::ScanError::Stopped`], as one whose scan the deadline ended.
fn scan_queue(real: &[PathBuf], opts: &cudoctor_fatbin::ScanOptions) -> Vec<(PathBuf, ScanResult)> {
    // One metadata call per file (the scan opens it anyway); an unreadable one sorts last and
    // gets its error from the scan.
    let mut order: Vec<(u64, usize)> = real
        .iter()
        .enumerate()
        .map(|(i, p)| (std::fs::metadata(p).map_or(0, |m| m.len()), i))
        .collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let queue: Vec<&PathBuf> = order.iter().map(|&(_, i)| &real[i]).collect();
    // A panic would be a bug in the scanner; it costs that file, not the others (`map` keeps
    // it as that item's Err).
    let scanned = cudoctor_types::ThreadBudget::process().map(&queue, default_threads(), |path| {
        if opts.deadline.passed() {
            return Err(ScanError::Stopped("not begun before the deadline".into()));
        }
        cudoctor_fatbin::scan_file_with(path, opts)
    });
    let mut by_index: Vec<Option<ScanResult>> = real.iter().map(|_| None).collect();
    for (&(_, i), r) in order.iter().zip(scanned) {
        by_index[i] = r.ok();
    }
    real.iter()
        .zip(by_index)
        .map(|(p, r)| {
            let r = r.unwrap_or_else(|| {
                Err(ScanError::Corrupt("the scanner failed on this file".into()))
            });
            (p.clone(), r)
        })
        .collect()
}

/// One file's kernel images, or why they could not be read.
type ScanResult = Result<cudoctor_fatbin::FileImages, ScanError>;

/// The kernel images of binaries a log names (absolute machine paths; `directory`: a build
/// directory to look for CUDA libraries in), those that exist on this machine, labelled as
/// named in the log. Paths the machine lacks are left out: the caller says they were not judged.
pub fn named_in_log(host: &Host, named: &[(String, bool)]) -> Vec<LibraryImages> {
    let mut paths: Vec<(String, String)> = Vec::new();
    for (path, directory) in named {
        let path = path.trim_end_matches(['/', '\\']);
        if !path.starts_with('/') {
            continue;
        }
        let found = if *directory {
            if !host.is_dir(path) {
                continue;
            }
            expand(host, path)
        } else if host.is_file(path) {
            vec![path.to_string()]
        } else {
            continue;
        };
        for f in found {
            if !paths.iter().any(|(p, _)| *p == f) {
                paths.push((f, String::new()));
            }
        }
    }
    scan(host, &paths).libraries
}

/// Expands directories into the libraries under them (machine paths).
pub fn expand(host: &Host, path: &str) -> Vec<String> {
    if host.is_dir(path) {
        // The walk ends at the deadline or its cap on entries, said as stopped early: the
        // libraries it did not reach are not judged.
        let (found, stop) =
            cudoctor_fatbin::find_cuda_libraries_until(&host.fs_path(path), host.deadline());
        match stop {
            Some(cudoctor_fatbin::WalkStop::Deadline) => host.stopped(
                ScanKind::KernelImages,
                path,
                cudoctor_snapshot::StopReason::Deadline {
                    budget_s: host.deadline().budget_s().unwrap_or(0.0),
                },
            ),
            Some(cudoctor_fatbin::WalkStop::Visits(limit)) => host.stopped(
                ScanKind::KernelImages,
                path,
                cudoctor_snapshot::StopReason::Files {
                    limit: limit as u64,
                },
            ),
            None => {}
        }
        let found: Vec<String> = found.iter().map(|p| host.machine_path(p)).collect();
        if host.runs_programs() {
            return found;
        }
        // Under a root the walk's file links were followed by the system (a link to
        // `/usr/lib/...` or `/etc/shadow` names a file of this machine, not of the root): each
        // is followed again inside the root, and kept only when it leads to a regular file
        // there not already listed.
        let resolved: Vec<(String, Option<String>)> = found
            .into_iter()
            .map(|p| {
                let real = host.resolve(&p).map(|(r, _)| r);
                (p, real)
            })
            .collect();
        let mut seen: std::collections::HashSet<String> = resolved
            .iter()
            .filter(|(p, real)| real.as_ref() == Some(p))
            .map(|(p, _)| p.clone())
            .collect();
        resolved
            .into_iter()
            .filter(|(p, real)| match real {
                Some(real) if real == p => true,
                Some(real) => host.is_file(real) && seen.insert(real.clone()),
                None => false,
            })
            .map(|(p, _)| p)
            .collect()
    } else {
        vec![path.to_string()]
    }
}

/// The installed distribution a top-level module most likely belongs to: the longest package
/// name that the module name starts with (`flash_attn_2_cuda` -> `flash-attn`).
fn owner(env: &PythonEnv, module: &str) -> String {
    let m = module.replace('_', "-").to_lowercase();
    // A project published per CUDA release owns its module under the variant's name
    // (`spconv/` is spconv-cu126's).
    env.packages
        .iter()
        .filter(|p| {
            m.starts_with(&p.name) || m.starts_with(cudoctor_types::without_cuda_variant(&p.name))
        })
        .max_by_key(|p| p.name.len())
        .map(|p| p.name.clone())
        .unwrap_or_else(|| module.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_snapshot::{DeclaredRequirements, Package};

    /// The queue hands back each file's result in the order given, whatever order the sizes
    /// scanned them in; past the deadline no file is begun and each is said stopped.
    #[test]
    fn the_scan_queue_keeps_the_given_order_and_begins_nothing_past_the_deadline() {
        let dir = std::env::temp_dir().join(format!("cudoctor-queue-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files: Vec<PathBuf> = [10usize, 3000, 0, 700]
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let p = dir.join(format!("lib{i}.so"));
                std::fs::write(&p, vec![b'x'; n]).unwrap();
                p
            })
            .chain(std::iter::once(dir.join("missing.so")))
            .collect();
        let now = scan_queue(&files, &cudoctor_fatbin::ScanOptions::default());
        let late = scan_queue(
            &files,
            &cudoctor_fatbin::ScanOptions {
                deadline: cudoctor_types::Deadline::after(std::time::Duration::ZERO),
                ..Default::default()
            },
        );
        let _ = std::fs::remove_dir_all(&dir);
        let paths: Vec<&PathBuf> = now.iter().map(|(p, _)| p).collect();
        assert_eq!(paths, files.iter().collect::<Vec<_>>());
        // Not ELF: no kernel images, no error; the missing file's error is its own.
        assert!(now[..4]
            .iter()
            .all(|(_, r)| r.as_ref().is_ok_and(|i| i.sass.is_empty())));
        assert!(
            matches!(now[4].1, Err(ScanError::Io { .. })),
            "{:?}",
            now[4].1
        );
        assert!(late
            .iter()
            .all(|(_, r)| matches!(r, Err(ScanError::Stopped(_)))));
    }

    /// faiss-gpu 1.15.1's wheel (the index's metadata): no CUDA tag in its name, its
    /// `faiss/libfaiss.so` carries kernels up to sm_90 with compute_90 PTX.
    const FAISS_GPU: &[&str] = &[
        "numpy>=1.25",
        "nvidia-cuda-runtime-cu12<13,>=12.6",
        "nvidia-cublas-cu12<13,>=12.6",
        "nvidia-curand-cu12<11,>=10.3.7",
    ];

    fn lines(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_package_requiring_cuda_library_wheels_carries_cuda_code() {
        assert!(requires_cuda_libraries("faiss-gpu", &lines(FAISS_GPU)));
        // CUDA 13's wheels have no suffix.
        assert!(requires_cuda_libraries(
            "pkg",
            &lines(&["nvidia-cublas>=13"])
        ));
        // Only through an extra: the package's own files say nothing (tensorflow[and-cuda]).
        assert!(!requires_cuda_libraries(
            "tensorflow",
            &lines(&["nvidia-cublas-cu12<13.0,>=12.5.3.2; extra == \"and-cuda\""])
        ));
        // NVML bindings are no CUDA library; NVIDIA's own wheels and torch are read otherwise.
        assert!(!requires_cuda_libraries(
            "gpustat",
            &lines(&["nvidia-ml-py>=12.535.108"])
        ));
        assert!(!requires_cuda_libraries(
            "nvidia-cudnn-cu12",
            &lines(&["nvidia-cublas-cu12"])
        ));
        assert!(!requires_cuda_libraries("torch", &lines(FAISS_GPU)));
    }

    #[test]
    fn the_shared_objects_of_such_a_package_are_scanned() {
        let dir = tempfile::tempdir().unwrap();
        let sp = "/v/lib/python3.11/site-packages";
        let root = dir.path().join(sp.trim_start_matches('/'));
        std::fs::create_dir_all(root.join("faiss")).unwrap();
        std::fs::create_dir_all(root.join("faiss_gpu-1.15.1.dist-info")).unwrap();
        std::fs::write(root.join("faiss/libfaiss.so"), b"\x7fELF").unwrap();
        std::fs::write(
            root.join("faiss_gpu-1.15.1.dist-info/RECORD"),
            "faiss/__init__.py,,\nfaiss/libfaiss.so,,\n",
        )
        .unwrap();
        let host = Host::rooted(
            dir.path().to_path_buf(),
            Default::default(),
            std::time::Duration::from_secs(5),
        );
        let mut env = PythonEnv {
            site_packages: vec![sp.into()],
            packages: vec![Package {
                name: "faiss-gpu".into(),
                version: "1.15.1".into(),
                location: sp.into(),
            }],
            declared: vec![DeclaredRequirements {
                package: "faiss-gpu".into(),
                version: "1.15.1".into(),
                requires: lines(FAISS_GPU),
                built_for_torch: None,
            }],
            ..Default::default()
        };
        let got = with_framework_libraries(&host, std::slice::from_ref(&env), &[]);
        assert_eq!(
            got,
            vec![(format!("{sp}/faiss/libfaiss.so"), "faiss-gpu".to_string())]
        );
        // Without the requirement: a package like any other, not scanned.
        env.declared.clear();
        assert!(with_framework_libraries(&host, &[env], &[]).is_empty());
    }
}
