//! The framework builds of an environment, read from their installed files: dist-info
//! `METADATA` (`Requires-Dist` pins) and `RECORD` (the shared objects a wheel installs), and the
//! version or build-info module each framework writes at build time. Nothing is imported.
//!
//! Where each framework's CUDA is read:
//! - torch: `torch/version.py` (`cuda = '13.0'`);
//! - JAX: the CUDA plugin's distribution name (`jax-cuda12-plugin`), the minor from the
//!   runtime wheel it loads (`nvidia-cuda-runtime-cu12` 12.x, `nvidia-cuda-runtime` 13.x);
//!   an old jaxlib's `+cuda12` label;
//! - CuPy: the distribution name (`cupy-cuda12x`, `cupy-cuda117`) and `cupy/.data/_wheel.json`;
//! - ONNX Runtime: `onnxruntime/capi/build_and_package_info.py` (`cuda_version = '13.0'`);
//! - TensorFlow: `tensorflow/python/platform/build_info.py` (`'cuda_version': '12.5.1'`);
//! - vLLM: a `+cu126` version label (the PyPI build uses the CUDA of the torch it pins);
//! - the frameworks of [`TABLE`] (PaddlePaddle, TensorRT, CTranslate2, RAPIDS,
//!   llama-cpp-python, numba-cuda, DALI, Transformer Engine): as its row says, from the CUDA tag
//!   of the distribution name, a generated version module, the CUDA libraries its shipped
//!   objects link by soname, or the CUDA bindings it calls.

use cudoctor_snapshot::{CompanionPin, CudaBinding, Framework, FrameworkBuild, PythonEnv};
use cudoctor_types::{normalise_name, Requirement};

use crate::host::Host;

/// Reads every framework build of `env` (its `packages` and `torch` already read).
pub fn read(host: &Host, env: &PythonEnv) -> Vec<FrameworkBuild> {
    let mut out = Vec::new();
    if let Some(t) = torch(host, env) {
        out.push(t);
    }
    out.extend(jax(host, env));
    out.extend(cupy(host, env));
    out.extend(onnxruntime(host, env));
    out.extend(tensorflow(host, env));
    out.extend(vllm(host, env));
    out.extend(sglang(host, env));
    for row in TABLE {
        out.extend(from_table(host, env, row));
    }
    out
}

/// Where a framework of [`TABLE`] has its CUDA written.
#[derive(Debug, Clone, Copy)]
enum CudaFrom {
    /// The CUDA tag of the distribution name: `tensorrt-cu12` (12.x), `nvidia-dali-cuda120`
    /// (12.0), `spconv-cu126` (12.6).
    NameTag,
    /// A literal assignment of a module its build generates (relative to site-packages):
    /// `paddle/version/__init__.py`'s `cuda_version = '12.6'` (`'False'` on a CPU build).
    Assignment(&'static str, &'static str),
    /// The CUDA libraries whose soname carries the CUDA major (`libcudart.so.12`,
    /// `libcublas.so.12`, `libnvrtc.so.12`) that its shipped objects link.
    LinkedSonames,
    /// The CUDA libraries whose soname carries the CUDA major that its shipped objects open
    /// at run time by name, as the names are written in their read-only data (`.rodata`):
    /// CTranslate2 links no CUDA library and opens `libcublas.so.12` when a GPU is asked for.
    OpenedSonames,
    /// The version of the CUDA bindings distribution it calls (`cuda-bindings` 12.9.4).
    Distribution(&'static str),
}

/// A framework read from its distributions by a row of data.
struct Row {
    framework: Framework,
    /// Its distributions by exact name.
    names: &'static [&'static str],
    /// Its distributions by a prefix that a CUDA tag follows (`tensorrt-cu` of
    /// `tensorrt-cu12`, `tensorrt-cu12-libs`): one build per CUDA major.
    tagged: &'static [&'static str],
    /// Where the CUDA is read, the first that answers.
    cuda: &'static [CudaFrom],
    /// Recorded only with a CUDA binding (a CPU build of the same distribution is not a GPU
    /// framework: llama-cpp-python built without CUDA).
    cuda_only: bool,
    /// The cuDNN its build names: a literal assignment of a generated module (file, key).
    cudnn: Option<(&'static str, &'static str)>,
}

/// The frameworks read from data, each from its PyPI distributions' own files (their names,
/// RECORDs, generated modules and the sonames their libraries link), as installed by
/// scripts/realenv/sweep.sh (docs/sweep.md).
const TABLE: &[Row] = &[
    Row {
        framework: Framework::Paddle,
        names: &["paddlepaddle-gpu"],
        tagged: &[],
        cuda: &[
            CudaFrom::Assignment("paddle/version/__init__.py", "cuda_version"),
            CudaFrom::LinkedSonames,
        ],
        cuda_only: false,
        cudnn: Some(("paddle/version/__init__.py", "cudnn_version")),
    },
    Row {
        framework: Framework::TensorRt,
        names: &[],
        tagged: &["tensorrt-cu"],
        cuda: &[CudaFrom::NameTag],
        cuda_only: false,
        cudnn: None,
    },
    Row {
        framework: Framework::CTranslate2,
        names: &["ctranslate2"],
        tagged: &[],
        cuda: &[CudaFrom::LinkedSonames, CudaFrom::OpenedSonames],
        cuda_only: true,
        cudnn: None,
    },
    Row {
        framework: Framework::Rapids,
        names: &[],
        tagged: &[
            "cudf-cu",
            "cuml-cu",
            "cugraph-cu",
            "cuvs-cu",
            "cuspatial-cu",
            "pylibcudf-cu",
            "libcudf-cu",
            "libcuml-cu",
            "libcugraph-cu",
            "libcuvs-cu",
            "rmm-cu",
            "librmm-cu",
            "pylibraft-cu",
            "libraft-cu",
            "raft-dask-cu",
            "dask-cudf-cu",
            "libkvikio-cu",
            "kvikio-cu",
        ],
        cuda: &[CudaFrom::NameTag],
        cuda_only: false,
        cudnn: None,
    },
    Row {
        framework: Framework::LlamaCpp,
        names: &["llama-cpp-python"],
        tagged: &[],
        cuda: &[CudaFrom::LinkedSonames, CudaFrom::OpenedSonames],
        cuda_only: true,
        cudnn: None,
    },
    Row {
        framework: Framework::NumbaCuda,
        names: &["numba-cuda"],
        tagged: &[],
        cuda: &[
            CudaFrom::Distribution("cuda-bindings"),
            CudaFrom::Distribution("cuda-python"),
        ],
        cuda_only: false,
        cudnn: None,
    },
    Row {
        framework: Framework::Dali,
        names: &[],
        tagged: &["nvidia-dali-cuda"],
        cuda: &[CudaFrom::NameTag],
        cuda_only: false,
        cudnn: None,
    },
    Row {
        framework: Framework::TransformerEngine,
        names: &[],
        tagged: &["transformer-engine-cu"],
        cuda: &[CudaFrom::NameTag],
        cuda_only: false,
        cudnn: None,
    },
];

/// The CUDA of a tag after a row's prefix: `12` (12.x), `120` (12.0), `126-libs` (12.6: what
/// follows the digits is a part of the framework, `-libs`, `-bindings`).
fn cuda_tag(tag: &str) -> Option<(u32, Option<u32>)> {
    let digits: String = tag.chars().take_while(char::is_ascii_digit).collect();
    let rest = &tag[digits.len()..];
    if !(rest.is_empty() || rest.starts_with('-')) {
        return None;
    }
    match digits.len() {
        2 => Some((digits.parse().ok()?, None)),
        3 => Some((digits[..2].parse().ok()?, Some(digits[2..].parse().ok()?))),
        _ => None,
    }
}

/// The CUDA major that a soname a library links carries, for the families whose soname major
/// is the CUDA major (`libcudart.so.12`, `libcublas.so.12`, `libcublasLt.so.12`,
/// `libnvrtc.so.12`, `libnvJitLink.so.12`); cuFFT, cuSPARSE and cuDNN number their own.
fn linked_cuda_major(soname: &str) -> Option<u32> {
    use cudoctor_ldso::CudaFamily as F;
    let lib = cudoctor_ldso::cuda_library(soname)?;
    matches!(
        lib.family,
        F::Cudart | F::Cublas | F::CublasLt | F::Nvrtc | F::NvJitLink
    )
    .then(|| lib.major?.parse().ok())
    .flatten()
}

/// A distribution of a [`TABLE`] row with the CUDA (major, minor) of its name's tag.
type Member<'a> = (&'a cudoctor_snapshot::Package, Option<(u32, Option<u32>)>);

/// True for a framework of [`TABLE`] whose libraries open their CUDA library by name at run
/// time (CTranslate2's `libcublas.so.12`): no DT_NEEDED says it, their read-only data does.
pub(crate) fn opens_cuda_by_name(framework: Framework) -> bool {
    TABLE.iter().any(|row| {
        row.framework == framework
            && row
                .cuda
                .iter()
                .any(|c| matches!(c, CudaFrom::OpenedSonames))
    })
}

/// True for a distribution that a row of [`TABLE`] reads (recorded in the snapshot).
pub fn in_table(name: &str) -> bool {
    TABLE.iter().any(|row| {
        row.names.contains(&name)
            || row.tagged.iter().any(|t| {
                name.strip_prefix(t)
                    .is_some_and(|tag| cuda_tag(tag).is_some())
            })
    })
}

/// The largest read-only data section searched for sonames (CTranslate2's is 1.3 MB).
const MAX_RODATA: u64 = 64 << 20;

/// The first CUDA soname with a CUDA major ([`linked_cuda_major`]) written in the `.rodata` of
/// the ELF file at `path` (machine path): (soname, major).
pub(crate) fn opened_soname(host: &Host, path: &str) -> Option<(String, u32)> {
    let elf = cudoctor_ldso::ElfFile::open(&host.fs_path(path)).ok()?;
    let sections = cudoctor_ldso::elf::sections::read_sections(elf.source(), elf.header()).ok()?;
    let rodata = sections
        .iter()
        .find(|s| s.name == ".rodata" && s.has_file_data() && s.size <= MAX_RODATA)?;
    let bytes = cudoctor_ldso::read::read_vec(elf.source(), rodata.offset, rodata.size).ok()?;
    sonames_in(&bytes)
}

/// The first `lib<cudart|cublas|cublasLt|nvrtc|nvJitLink>.so.<major>` written in `bytes`.
fn sonames_in(bytes: &[u8]) -> Option<(String, u32)> {
    const STEMS: [&[u8]; 5] = [
        b"libcudart.so.",
        b"libcublas.so.",
        b"libcublasLt.so.",
        b"libnvrtc.so.",
        b"libnvJitLink.so.",
    ];
    let mut best: Option<(usize, String, u32)> = None;
    for stem in STEMS {
        let Some(at) = bytes.windows(stem.len()).position(|w| w == stem) else {
            continue;
        };
        let digits: String = bytes[at + stem.len()..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .map(|b| *b as char)
            .collect();
        let soname = format!("{}{digits}", String::from_utf8_lossy(stem));
        let Some(major) = linked_cuda_major(&soname) else {
            continue;
        };
        if best.as_ref().is_none_or(|(a, ..)| at < *a) {
            best = Some((at, soname, major));
        }
    }
    best.map(|(_, s, m)| (s, m))
}

/// The builds of one [`TABLE`] row in `env`: one per CUDA major of its tagged distributions,
/// or one for its distribution by name.
fn from_table(host: &Host, env: &PythonEnv, row: &Row) -> Vec<FrameworkBuild> {
    // (distribution, the CUDA of its name's tag) of every installed distribution of the row.
    let mut dists: Vec<Member> = env
        .packages
        .iter()
        .filter_map(|p| {
            if row.names.contains(&p.name.as_str()) {
                return Some((p, None));
            }
            row.tagged.iter().find_map(|prefix| {
                let tag = cuda_tag(p.name.strip_prefix(prefix)?)?;
                Some((p, Some(tag)))
            })
        })
        .collect();
    if dists.is_empty() {
        return Vec::new();
    }
    // The carrier first: the row's own order, then the shortest name (`tensorrt-cu12` before
    // `tensorrt-cu12-libs`).
    let rank = |name: &str| {
        row.names
            .iter()
            .position(|n| *n == name)
            .or_else(|| {
                row.tagged
                    .iter()
                    .position(|t| name.starts_with(t))
                    .map(|i| i + row.names.len())
            })
            .unwrap_or(usize::MAX)
    };
    dists.sort_by_key(|(p, _)| (rank(&p.name), p.name.len(), p.name.clone()));
    let mut groups: Vec<(Option<u32>, Vec<Member>)> = Vec::new();
    for d in dists {
        let major = d.1.map(|(m, _)| m);
        match groups.iter_mut().find(|(m, _)| *m == major) {
            Some((_, g)) => g.push(d),
            None => groups.push((major, vec![d])),
        }
    }
    let mut out = Vec::new();
    for (_, group) in groups {
        let (carrier, carrier_tag) = group[0];
        let names: Vec<String> = group.iter().map(|(p, _)| p.name.clone()).collect();
        let mut errors = Vec::new();
        let mut needs = Vec::new();
        let mut companions = Vec::new();
        let mut ships = Vec::new();
        for (p, _) in &group {
            let reqs = requires_dist(host, env, &p.name, &mut errors);
            needs.extend(reqs.iter().filter(|r| is_cuda_wheel(r)).cloned());
            companions.extend(pins(env, &p.name, &reqs, &|n| names.iter().any(|m| m == n)));
            ships.extend(shared_objects(host, env, &p.name));
        }
        let cuda = row.cuda.iter().find_map(|from| match *from {
            CudaFrom::NameTag => {
                let (major, minor) = carrier_tag?;
                Some(CudaBinding {
                    major,
                    minor,
                    read: carrier.name.clone(),
                    source: format!("distribution name {}", carrier.name),
                })
            }
            CudaFrom::Assignment(file, key) => {
                let path = format!("{}/{file}", carrier.location);
                let text = host.read_text(&path).ok()?;
                // A CPU build writes 'False'.
                binding_of(&py_assignment(&text, key)?, path)
            }
            CudaFrom::LinkedSonames => ships.iter().find_map(|path| {
                let elf = cudoctor_ldso::ElfFile::open(&host.fs_path(path)).ok()?;
                let (soname, major) = elf
                    .needed()
                    .iter()
                    .find_map(|n| Some((n.clone(), linked_cuda_major(n)?)))?;
                Some(CudaBinding {
                    major,
                    minor: None,
                    read: soname.clone(),
                    source: format!("{path} links {soname}"),
                })
            }),
            CudaFrom::OpenedSonames => ships.iter().find_map(|path| {
                let (soname, major) = opened_soname(host, path)?;
                Some(CudaBinding {
                    major,
                    minor: None,
                    read: soname.clone(),
                    source: format!("{path} opens {soname} by name (its read-only data)"),
                })
            }),
            CudaFrom::Distribution(name) => {
                let p = env.package(name)?;
                let (major, minor) = major_minor(&p.version)?;
                Some(CudaBinding {
                    major,
                    minor: Some(minor),
                    read: p.version.clone(),
                    source: format!("{name} {}, the CUDA bindings it calls", p.version),
                })
            }
        });
        if row.cuda_only && cuda.is_none() {
            continue;
        }
        ships.sort();
        ships.dedup();
        let cudnn = row.cudnn.and_then(|(file, key)| {
            let text = host
                .read_text(&format!("{}/{file}", carrier.location))
                .ok()?;
            py_assignment(&text, key).filter(|v| v != "False")
        });
        out.push(FrameworkBuild {
            framework: row.framework,
            version: carrier.version.clone(),
            package: carrier.name.clone(),
            location: carrier.location.clone(),
            cuda,
            cudnn,
            needs,
            ships,
            companions,
            errors,
            unresolved: Vec::new(),
        });
    }
    out
}

/// The `*.dist-info` directory of an installed distribution (machine path).
pub(crate) fn dist_info(host: &Host, env: &PythonEnv, name: &str) -> Option<String> {
    let pkg = env.package(name)?;
    super::memo::list_dir(host, &pkg.location)
        .iter()
        .find_map(|entry| {
            let (n, _) = super::site::dist_name_version(entry)?;
            (entry.ends_with(".dist-info") && normalise_name(&n) == name)
                .then(|| format!("{}/{entry}", pkg.location))
        })
}

/// The `Requires-Dist` lines of a distribution's METADATA header, as written.
pub(crate) fn requires_dist(
    host: &Host,
    env: &PythonEnv,
    name: &str,
    errors: &mut Vec<String>,
) -> Vec<String> {
    let Some(dir) = dist_info(host, env, name) else {
        return Vec::new();
    };
    read_noted(host, &format!("{dir}/METADATA"), errors)
        .map(|text| parse_requires_dist(&text))
        .unwrap_or_default()
}

/// `Requires-Dist:` values of a METADATA text (its header: the lines before the first empty
/// one; a field's continuation lines, such as a License text's, start with whitespace).
pub fn parse_requires_dist(metadata: &str) -> Vec<String> {
    metadata
        .lines()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("Requires-Dist:"))
        .map(|v| v.trim().to_string())
        .collect()
}

/// The machine paths of the shared objects a distribution's RECORD lists.
pub(crate) fn shared_objects(host: &Host, env: &PythonEnv, name: &str) -> Vec<String> {
    let (Some(dir), Some(pkg)) = (dist_info(host, env, name), env.package(name)) else {
        return Vec::new();
    };
    let Ok(text) = super::memo::read_text(host, &format!("{dir}/RECORD")) else {
        return Vec::new();
    };
    let mut out: Vec<String> = super::record::parse_record(&text)
        .into_iter()
        .filter(|e| {
            let file = e.path.rsplit('/').next().unwrap_or(&e.path);
            (file.ends_with(".so") || file.contains(".so."))
                && super::record::within_env(env, &pkg.location, &e.path)
        })
        .map(|e| crate::host::normalise(&format!("{}/{}", pkg.location, e.path)))
        .collect();
    out.sort();
    out
}

/// A framework's build as its distribution gives it: the CUDA wheels it requires and the
/// shared objects it ships (none for `ships: false`); its CUDA binding, cuDNN and companions are
/// the caller's to add.
fn build_of(
    framework: Framework,
    p: &cudoctor_snapshot::Package,
    reqs: &[String],
    ships: Vec<String>,
    errors: Vec<String>,
) -> FrameworkBuild {
    FrameworkBuild {
        framework,
        version: p.version.clone(),
        package: p.name.clone(),
        location: p.location.clone(),
        needs: reqs.iter().filter(|r| is_cuda_wheel(r)).cloned().collect(),
        ships,
        errors,
        ..Default::default()
    }
}

/// The text of a file a framework's facts are read from; what stopped the reading goes to
/// `errors`.
fn read_noted(host: &Host, path: &str, errors: &mut Vec<String>) -> Option<std::sync::Arc<str>> {
    match super::memo::read_text(host, path) {
        Ok(t) => Some(t),
        Err(e) => {
            errors.push(format!("{path}: {e}"));
            None
        }
    }
}

fn is_cuda_wheel(req: &str) -> bool {
    req.parse::<Requirement>()
        .is_ok_and(|r| r.name.starts_with("nvidia-") || r.name.starts_with("cuda-"))
}

/// The pins of `lines` (from distribution `by`) on the distributions `wanted` accepts.
fn pins(
    env: &PythonEnv,
    by: &str,
    lines: &[String],
    wanted: &dyn Fn(&str) -> bool,
) -> Vec<CompanionPin> {
    let by_version = env
        .package(by)
        .map(|p| format!("{by} {}", p.version))
        .unwrap_or_else(|| by.to_string());
    lines
        .iter()
        .filter_map(|l| {
            let r: Requirement = l.parse().ok()?;
            wanted(&r.name).then(|| CompanionPin {
                required_by: by_version.clone(),
                requirement: l.clone(),
                installed: env.package(&r.name).map(|p| p.version.clone()),
                name: r.name,
            })
        })
        .collect()
}

/// `12.9` of a wheel version `12.9.79`.
fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut it = version.split('.');
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

fn torch(host: &Host, env: &PythonEnv) -> Option<FrameworkBuild> {
    let t = env.torch.as_ref()?;
    let mut errors = Vec::new();
    let reqs = requires_dist(host, env, "torch", &mut errors);
    let cuda = t.cuda.as_deref().and_then(|c| {
        let (major, minor) = major_minor(c)?;
        Some(CudaBinding {
            major,
            minor: Some(minor),
            read: c.to_string(),
            source: format!("{}/version.py", t.path),
        })
    });
    let location = t.path.strip_suffix("/torch").unwrap_or(&t.path).to_string();
    Some(FrameworkBuild {
        framework: Framework::Torch,
        version: t.version.clone(),
        package: "torch".into(),
        location,
        cuda,
        cudnn: None,
        needs: reqs.iter().filter(|r| is_cuda_wheel(r)).cloned().collect(),
        ships: Vec::new(),
        companions: pins(env, "torch", &reqs, &|n| n == "triton"),
        errors,
        unresolved: Vec::new(),
    })
}

/// `12` of `jax-cuda12-plugin` / `jax-cuda12-pjrt`.
fn jax_plugin_major(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("jax-cuda")?;
    let (digits, kind) = rest.split_once('-')?;
    matches!(kind, "plugin" | "pjrt")
        .then(|| digits.parse().ok())
        .flatten()
}

fn jax(host: &Host, env: &PythonEnv) -> Vec<FrameworkBuild> {
    let Some(base) = env.package("jax").or_else(|| env.package("jaxlib")) else {
        return Vec::new();
    };
    let mut majors: Vec<u32> = env
        .packages
        .iter()
        .filter_map(|p| jax_plugin_major(&p.name))
        .collect();
    majors.sort();
    majors.dedup();
    let is_companion = |n: &str| n == "jax" || n == "jaxlib" || jax_plugin_major(n).is_some();
    let mut errors = Vec::new();
    let mut common = Vec::new();
    for name in ["jax", "jaxlib"] {
        let reqs = requires_dist(host, env, name, &mut errors);
        common.extend(pins(env, name, &reqs, &is_companion));
    }
    let build = |package: String, cuda: Option<CudaBinding>, errors: Vec<String>| FrameworkBuild {
        framework: Framework::Jax,
        version: base.version.clone(),
        package,
        location: base.location.clone(),
        cuda,
        cudnn: None,
        needs: Vec::new(),
        ships: Vec::new(),
        companions: common.clone(),
        errors,
        unresolved: Vec::new(),
    };
    if majors.is_empty() {
        // A jaxlib from JAX's own index names its CUDA in a local label: 0.4.20+cuda12.cudnn89.
        let cuda = env.package("jaxlib").and_then(|p| {
            let label = p.version.split_once('+')?.1;
            let digits: String = label
                .strip_prefix("cuda")?
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            Some(CudaBinding {
                major: digits.parse().ok()?,
                minor: None,
                read: label.to_string(),
                source: format!("jaxlib's version label ({})", p.version),
            })
        });
        let package = if cuda.is_some() {
            "jaxlib"
        } else {
            base.name.as_str()
        };
        return vec![build(package.to_string(), cuda, errors)];
    }
    majors
        .into_iter()
        .map(|major| {
            let plugin = format!("jax-cuda{major}-plugin");
            let pjrt = format!("jax-cuda{major}-pjrt");
            let mut errors = errors.clone();
            // CUDA 12's runtime wheel carries the major in its name; CUDA 13's is
            // `nvidia-cuda-runtime` 13.x (its files in nvidia/cu13/lib).
            let (runtime, minor) = [format!("nvidia-cuda-runtime-cu{major}"), "nvidia-cuda-runtime".to_string()]
                .into_iter()
                .find_map(|runtime| {
                    let minor = env
                        .package(&runtime)
                        .and_then(|p| major_minor(&p.version).map(|mm| (mm, p.version.clone())))
                        .filter(|((m, _), _)| *m == major)?;
                    Some((runtime, Some(minor)))
                })
                .unwrap_or_else(|| (format!("nvidia-cuda-runtime-cu{major}"), None));
            let carrier = if env.package(&plugin).is_some() {
                &plugin
            } else {
                &pjrt
            };
            let source = match &minor {
                Some((_, v)) => format!(
                    "distribution name {carrier}; the minor from {runtime} {v}, the CUDA runtime it loads"
                ),
                None => format!("distribution name {carrier}"),
            };
            let cuda = CudaBinding {
                major,
                minor: minor.as_ref().map(|((_, m), _)| *m),
                read: format!("cuda{major}"),
                source,
            };
            let mut b = build(carrier.clone(), Some(cuda), Vec::new());
            for name in [&plugin, &pjrt] {
                let reqs = requires_dist(host, env, name, &mut errors);
                b.needs
                    .extend(reqs.iter().filter(|r| is_cuda_wheel(r)).cloned());
                b.companions.extend(pins(env, name, &reqs, &is_companion));
                b.ships.extend(shared_objects(host, env, name));
            }
            b.errors = errors;
            b
        })
        .collect()
}

/// The CUDA of a CuPy wheel name: `cupy-cuda12x` (12.x), `cupy-cuda117` (11.7), `cupy-cuda102`.
fn cupy_cuda(name: &str) -> Option<(u32, Option<u32>)> {
    let tag = name.strip_prefix("cupy-cuda")?;
    if let Some(major) = tag.strip_suffix('x') {
        return Some((major.parse().ok()?, None));
    }
    if tag.len() < 2 || !tag.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = tag.split_at(tag.len() - 1);
    Some((major.parse().ok()?, Some(minor.parse().ok()?)))
}

fn cupy(host: &Host, env: &PythonEnv) -> Vec<FrameworkBuild> {
    env.packages
        .iter()
        .filter(|p| p.name == "cupy" || p.name.starts_with("cupy-cuda"))
        .map(|p| {
            let mut errors = Vec::new();
            let reqs = requires_dist(host, env, &p.name, &mut errors);
            let wheel_json = host
                .read_text(&format!("{}/cupy/.data/_wheel.json", p.location))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| v.get("cuda")?.as_str().map(str::to_string));
            let cuda = cupy_cuda(&p.name).map(|(major, minor)| CudaBinding {
                major,
                minor,
                read: wheel_json.clone().unwrap_or_else(|| p.name.clone()),
                source: match &wheel_json {
                    Some(c) => format!(
                        "distribution name {}; cupy/.data/_wheel.json: cuda {c}",
                        p.name
                    ),
                    None => format!("distribution name {}", p.name),
                },
            });
            FrameworkBuild {
                cuda,
                ..build_of(
                    Framework::Cupy,
                    p,
                    &reqs,
                    shared_objects(host, env, &p.name),
                    errors,
                )
            }
        })
        .collect()
}

/// A `name = 'value'` assignment of a generated Python module (only literals are read).
fn py_assignment(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (lhs, rhs) = l.split_once('=')?;
        if lhs.trim() != key {
            return None;
        }
        let rhs = rhs.trim();
        rhs.strip_prefix('\'')
            .and_then(|r| r.strip_suffix('\''))
            .or_else(|| rhs.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
            .map(str::to_string)
    })
}

/// A literal entry of TensorFlow's `build_info`: `'key': 'value'` of a dict, or
/// `('key', 'value')` of the `collections.OrderedDict([...])` TensorFlow 2.x writes
/// (`True`/`False` too). A list value (`['sm_60', ...]`) is not read here.
fn dict_entry(text: &str, key: &str) -> Option<String> {
    let at = text
        .find(&format!("'{key}'"))
        .or_else(|| text.find(&format!("\"{key}\"")))?;
    let after = text[at + key.len() + 2..].trim_start();
    let rest = after
        .strip_prefix(':')
        .or_else(|| after.strip_prefix(','))?
        .trim_start();
    if rest.starts_with('[') {
        return None;
    }
    let end = rest.find([',', '}', ')', '\n']).unwrap_or(rest.len());
    let v = rest[..end].trim();
    Some(v.trim_matches(['\'', '"']).to_string())
}

fn binding_of(version: &str, source: String) -> Option<CudaBinding> {
    let (major, minor) = major_minor(version).or_else(|| Some((version.parse().ok()?, 0)))?;
    Some(CudaBinding {
        major,
        minor: version.contains('.').then_some(minor),
        read: version.to_string(),
        source,
    })
}

fn onnxruntime(host: &Host, env: &PythonEnv) -> Vec<FrameworkBuild> {
    let Some(p) = env.package("onnxruntime-gpu") else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    let reqs = requires_dist(host, env, &p.name, &mut errors);
    let info_path = format!("{}/onnxruntime/capi/build_and_package_info.py", p.location);
    let info = read_noted(host, &info_path, &mut errors);
    let cuda = info
        .as_deref()
        .and_then(|t| py_assignment(t, "cuda_version"))
        .and_then(|v| binding_of(&v, info_path.clone()));
    let cudnn = info
        .as_deref()
        .and_then(|t| py_assignment(t, "cudnn_version"));
    let ships = shared_objects(host, env, &p.name);
    vec![FrameworkBuild {
        cuda,
        cudnn,
        ..build_of(Framework::OnnxRuntime, p, &reqs, ships, errors)
    }]
}

fn tensorflow(host: &Host, env: &PythonEnv) -> Vec<FrameworkBuild> {
    let Some(p) = ["tensorflow", "tf-nightly", "tensorflow-gpu"]
        .iter()
        .find_map(|n| env.package(n))
    else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    let reqs = requires_dist(host, env, &p.name, &mut errors);
    let info_path = format!("{}/tensorflow/python/platform/build_info.py", p.location);
    let info = read_noted(host, &info_path, &mut errors);
    let is_cuda = info
        .as_deref()
        .and_then(|t| dict_entry(t, "is_cuda_build"))
        .is_some_and(|v| v == "True");
    let cuda = info
        .as_deref()
        .filter(|_| is_cuda)
        .and_then(|t| dict_entry(t, "cuda_version"))
        .and_then(|v| binding_of(&v, info_path.clone()));
    let cudnn = info
        .as_deref()
        .filter(|_| is_cuda)
        .and_then(|t| dict_entry(t, "cudnn_version"));
    let ships = shared_objects(host, env, &p.name);
    vec![FrameworkBuild {
        cuda,
        cudnn,
        ..build_of(Framework::Tensorflow, p, &reqs, ships, errors)
    }]
}

/// Distributions whose pins a serving framework sets on torch and its kernel libraries.
fn serving_companion(name: &str) -> bool {
    matches!(
        name,
        "torch"
            | "torchvision"
            | "torchaudio"
            | "xformers"
            | "flashinfer-python"
            | "triton"
            | "sgl-kernel"
            | "sglang-kernel"
            | "flash-attn"
    )
}

fn vllm(host: &Host, env: &PythonEnv) -> Vec<FrameworkBuild> {
    let Some(p) = env.package("vllm") else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    let reqs = requires_dist(host, env, "vllm", &mut errors);
    // vLLM's non-default builds carry their CUDA as a local label: 0.11.0+cu126.
    let cuda = p
        .version
        .split_once('+')
        .and_then(|(_, l)| l.strip_prefix("cu"))
        .filter(|d| d.len() >= 3 && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| {
            let (maj, min) = d.split_at(d.len() - 1);
            Some(CudaBinding {
                major: maj.parse().ok()?,
                minor: Some(min.parse().ok()?),
                read: format!("cu{d}"),
                source: format!("vllm's version label ({})", p.version),
            })
        });
    let companions = pins(env, "vllm", &reqs, &serving_companion);
    let ships = shared_objects(host, env, "vllm");
    vec![FrameworkBuild {
        package: "vllm".into(),
        cuda,
        companions,
        ..build_of(Framework::Vllm, p, &reqs, ships, errors)
    }]
}

fn sglang(host: &Host, env: &PythonEnv) -> Vec<FrameworkBuild> {
    let Some(p) = env.package("sglang") else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    let reqs = requires_dist(host, env, "sglang", &mut errors);
    let companions = pins(env, "sglang", &reqs, &serving_companion);
    vec![FrameworkBuild {
        package: "sglang".into(),
        companions,
        ..build_of(Framework::Sglang, p, &reqs, Vec::new(), errors)
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cupy_wheel_names() {
        assert_eq!(cupy_cuda("cupy-cuda12x"), Some((12, None)));
        assert_eq!(cupy_cuda("cupy-cuda13x"), Some((13, None)));
        assert_eq!(cupy_cuda("cupy-cuda117"), Some((11, Some(7))));
        assert_eq!(cupy_cuda("cupy-cuda102"), Some((10, Some(2))));
        assert_eq!(cupy_cuda("cupy"), None);
        assert_eq!(cupy_cuda("cupy-cudaxx"), None);
        assert_eq!(jax_plugin_major("jax-cuda13-pjrt"), Some(13));
        assert_eq!(jax_plugin_major("jax-cuda12-plugin"), Some(12));
        assert_eq!(jax_plugin_major("jax-cuda12-other"), None);
    }

    #[test]
    fn cuda_tags_and_linked_sonames() {
        assert_eq!(cuda_tag("12"), Some((12, None)));
        assert_eq!(cuda_tag("12-libs"), Some((12, None)));
        assert_eq!(cuda_tag("120"), Some((12, Some(0))));
        assert_eq!(cuda_tag("126"), Some((12, Some(6))));
        assert_eq!(cuda_tag("13-bindings"), Some((13, None)));
        assert_eq!(cuda_tag("12x"), None);
        assert_eq!(cuda_tag(""), None);
        assert_eq!(cuda_tag("1234"), None);
        assert_eq!(linked_cuda_major("libcudart.so.12"), Some(12));
        assert_eq!(linked_cuda_major("libcublasLt.so.13"), Some(13));
        assert_eq!(linked_cuda_major("libnvrtc.so.12"), Some(12));
        // cuFFT 11 is CUDA 12's, cuDNN numbers its own releases.
        assert_eq!(linked_cuda_major("libcufft.so.11"), None);
        assert_eq!(linked_cuda_major("libcudnn.so.9"), None);
        assert_eq!(linked_cuda_major("libcudart.so"), None);
        // CTranslate2 4.8.5's .rodata names the cuBLAS it opens (and cuDNN's, not a CUDA major).
        let rodata = b"\0libcudnn.so.9\0cublasCreate_v2\0libcublas.so.12\0libcublasLt.so.12\0";
        assert_eq!(sonames_in(rodata), Some(("libcublas.so.12".into(), 12)));
        assert_eq!(sonames_in(b"libcublas.so.\0libcudnn.so.9"), None);
        assert!(in_table("tensorrt-cu12-libs"));
        assert!(in_table("transformer-engine-cu12"));
        assert!(in_table("cudf-cu12"));
        assert!(in_table("ctranslate2"));
        // CTranslate2 and llama-cpp-python open their CUDA library by name; the others link it.
        assert!(opens_cuda_by_name(Framework::CTranslate2));
        assert!(opens_cuda_by_name(Framework::LlamaCpp));
        assert!(!opens_cuda_by_name(Framework::Paddle));
        assert!(!opens_cuda_by_name(Framework::Jax));
        assert!(!in_table("tensorrt-cuda"));
        assert!(!in_table("cudf"));
    }

    #[test]
    fn build_info_literals() {
        let tf = "build_info = {'cpu_compiler': '/usr/lib/llvm-18/bin/clang', 'cuda_compute_capabilities': ['sm_60'], 'cuda_version': '12.5.1', 'cudnn_version': '9', 'is_cuda_build': True, 'is_rocm_build': False}\n";
        assert_eq!(dict_entry(tf, "cuda_version").as_deref(), Some("12.5.1"));
        assert_eq!(dict_entry(tf, "cudnn_version").as_deref(), Some("9"));
        assert_eq!(dict_entry(tf, "is_cuda_build").as_deref(), Some("True"));
        assert_eq!(dict_entry(tf, "nope"), None);
        assert_eq!(dict_entry(tf, "cuda_compute_capabilities"), None);
        let pairs = "build_info = collections.OrderedDict([('cuda_version', '12.5.1'), ('is_cuda_build', True)])\n";
        assert_eq!(dict_entry(pairs, "cuda_version").as_deref(), Some("12.5.1"));
        assert_eq!(dict_entry(pairs, "is_cuda_build").as_deref(), Some("True"));
        let ort =
            "package_name = 'onnxruntime-gpu'\n__version__ = '1.31.1'\ncuda_version = '13.0'\n";
        assert_eq!(py_assignment(ort, "cuda_version").as_deref(), Some("13.0"));
        assert_eq!(py_assignment(ort, "cudnn_version"), None);
        let b = binding_of("12.5.1", "x".into()).unwrap();
        assert_eq!((b.major, b.minor), (12, Some(5)));
        let b = binding_of("12", "x".into()).unwrap();
        assert_eq!((b.major, b.minor), (12, None));
    }

    #[test]
    fn tensorflow_from_the_build_info_of_its_real_wheel() {
        // tensorflow 2.20.0's own files (tests/fixtures/real/frameworks/tensorflow-wheel): its
        // build_info is an OrderedDict of pairs, not a dict literal.
        let env = captured("tensorflow-wheel");
        let tf = only(&env, Framework::Tensorflow);
        assert_eq!(tf.version, "2.20.0");
        let c = tf.cuda.as_ref().expect("CUDA binding");
        assert_eq!((c.major, c.minor), (12, Some(5)));
        assert_eq!(c.read, "12.5.1");
        assert!(c
            .source
            .ends_with("tensorflow/python/platform/build_info.py"));
        assert_eq!(tf.cudnn.as_deref(), Some("9"));
        assert!(
            tf.needs
                .iter()
                .any(|n| n.starts_with("nvidia-cudnn-cu12<10.0,>=9.3.0.75")),
            "{:?}",
            tf.needs
        );
        assert!(
            tf.ships
                .iter()
                .any(|s| s.ends_with("_pywrap_tensorflow_internal.so")
                    || s.contains("libtensorflow_cc.so")),
            "{:?}",
            tf.ships
        );
        assert!(tf.errors.is_empty(), "{:?}", tf.errors);
    }

    /// An env the sweep (scripts/realenv/sweep.sh) captured: tests/fixtures/real/frameworks/sweep.
    fn swept(name: &str) -> PythonEnv {
        captured(&format!("sweep/{name}"))
    }

    #[test]
    fn frameworks_read_from_data_in_the_sweeps_real_envs() {
        // paddlepaddle-gpu 2.6.2 from PyPI: paddle/version/__init__.py says CUDA 11.8, cuDNN 8.6.0.
        let env = swept("paddlepaddle-gpu");
        let p = only(&env, Framework::Paddle);
        assert_eq!(
            (p.package.as_str(), p.version.as_str()),
            ("paddlepaddle-gpu", "2.6.2")
        );
        let c = p.cuda.as_ref().unwrap();
        assert_eq!((c.major, c.minor), (11, Some(8)));
        assert!(
            c.source.ends_with("paddle/version/__init__.py"),
            "{}",
            c.source
        );
        assert_eq!(p.cudnn.as_deref(), Some("8.6.0"));
        assert!(
            p.ships
                .iter()
                .any(|s| s.ends_with("paddle/base/libpaddle.so")),
            "{:?}",
            p.ships
        );
        // transformer-engine-cu12 2.20.2: CUDA 12 from its name, its library shipped.
        let env = swept("transformer-engine-cu12");
        let t = only(&env, Framework::TransformerEngine);
        let c = t.cuda.as_ref().unwrap();
        assert_eq!((c.major, c.minor), (12, None));
        assert_eq!(c.source, "distribution name transformer-engine-cu12");
        assert!(t
            .ships
            .iter()
            .any(|s| s.ends_with("transformer_engine/wheel_lib/libtransformer_engine.so")));
        // cudf-cu12 26.10.2 with its RAPIDS companions (one build: CUDA 12 from the carrier's
        // name, the others' libraries shipped with it) and numba-cuda, whose CUDA is the
        // cuda-bindings 12.9.10 it calls.
        let env = swept("cudf-cu12");
        let r = only(&env, Framework::Rapids);
        assert_eq!(
            (r.package.as_str(), r.version.as_str()),
            ("cudf-cu12", "26.10.2")
        );
        assert_eq!(
            r.cuda.as_ref().map(|c| (c.major, c.minor)),
            Some((12, None))
        );
        assert!(
            r.ships
                .iter()
                .any(|s| s.ends_with("libcudf/lib64/libcudf.so")),
            "{:?}",
            r.ships
        );
        let n = only(&env, Framework::NumbaCuda);
        let c = n.cuda.as_ref().unwrap();
        assert_eq!((c.major, c.minor), (12, Some(9)));
        assert_eq!(
            c.source,
            "cuda-bindings 12.9.10, the CUDA bindings it calls"
        );
        // nvidia-dali-cuda130 2.4.0 (the second run): CUDA 13 from its name's tag.
        let env = swept("nvidia-dali-cuda130");
        let d = only(&env, Framework::Dali);
        assert_eq!(
            (
                d.package.as_str(),
                d.cuda.as_ref().map(|c| (c.major, c.minor))
            ),
            ("nvidia-dali-cuda130", Some((13, Some(0))))
        );
        assert!(d
            .ships
            .iter()
            .any(|s| s.ends_with("nvidia/dali/libdali_operators.so")));
        // ctranslate2 4.8.5 links no CUDA library; its CUDA is the cuBLAS soname written in its
        // library, which the fixture does not carry (80 MB): without it no CUDA is read, and a
        // build without CUDA is not recorded.
        let env = swept("ctranslate2");
        assert!(
            env.packages.iter().any(|p| p.name == "ctranslate2"),
            "{:?}",
            env.packages
        );
        assert!(
            env.frameworks
                .iter()
                .all(|b| b.framework != Framework::CTranslate2),
            "{:#?}",
            env.frameworks
        );
    }

    #[test]
    fn requires_dist_is_read_from_the_header_only() {
        let m = "Name: x\nLicense: Apache\n        \n   TERMS\nRequires-Dist: torch==2.14.1\nRequires-Dist: jaxlib<=0.10.2,>=0.10.2; extra == \"cuda12\"\n\nRequires-Dist: in the description\n";
        assert_eq!(
            parse_requires_dist(m),
            vec![
                "torch==2.14.1".to_string(),
                "jaxlib<=0.10.2,>=0.10.2; extra == \"cuda12\"".to_string()
            ]
        );
    }

    /// The real env captured into the repository (scripts/realenv/capture-framework-fixtures.sh).
    fn captured(name: &str) -> PythonEnv {
        let root = cudoctor_testkit::repo_root()
            .join("tests/fixtures/real/frameworks")
            .join(name);
        assert!(
            root.join("venv/pyvenv.cfg").is_file(),
            "fixture {name} missing"
        );
        let host = Host::rooted(
            root,
            std::collections::BTreeMap::new(),
            std::time::Duration::from_secs(2),
        );
        let mut envs = super::super::collect(&host, &["/venv".to_string()]);
        assert_eq!(envs.len(), 1);
        envs.remove(0)
    }

    fn only(env: &PythonEnv, fw: Framework) -> &FrameworkBuild {
        let v: Vec<_> = env
            .frameworks
            .iter()
            .filter(|f| f.framework == fw)
            .collect();
        assert_eq!(v.len(), 1, "{:#?}", env.frameworks);
        v[0]
    }

    #[test]
    fn jax_for_cuda13_takes_its_minor_from_the_unsuffixed_runtime_wheel() {
        // Ground truth in that env: jax_cuda13_plugin._versions.cuda_runtime_get_version()
        // is 13050 (nvidia-cuda-runtime 13.5.37).
        let env = captured("jax-cuda13");
        let j = only(&env, Framework::Jax);
        assert_eq!(j.package, "jax-cuda13-plugin");
        let cuda = j.cuda.as_ref().unwrap();
        assert_eq!((cuda.major, cuda.minor), (13, Some(5)));
        assert!(
            cuda.source.contains("nvidia-cuda-runtime 13.5.37"),
            "{}",
            cuda.source
        );
        // One major for every framework beside torch: CUDA 13 for all three.
        let env = captured("cuda13-frameworks-beside-torch");
        let majors: Vec<(Framework, u32)> = env
            .frameworks
            .iter()
            .filter_map(|b| Some((b.framework, b.cuda.as_ref()?.major)))
            .collect();
        assert_eq!(
            majors,
            vec![
                (Framework::Torch, 13),
                (Framework::Jax, 13),
                (Framework::Cupy, 13)
            ]
        );
    }

    #[test]
    fn jax_for_cuda12_from_its_plugin_and_runtime_wheel() {
        let env = captured("jax-cuda12");
        assert_eq!(env.frameworks.len(), 1, "{:#?}", env.frameworks);
        let j = only(&env, Framework::Jax);
        assert_eq!(j.version, "0.10.2");
        assert_eq!(j.package, "jax-cuda12-plugin");
        let cuda = j.cuda.as_ref().unwrap();
        assert_eq!((cuda.major, cuda.minor), (12, Some(9)));
        assert!(
            cuda.source.contains("nvidia-cuda-runtime-cu12 12.9.79"),
            "{}",
            cuda.source
        );
        assert!(
            j.needs
                .iter()
                .any(|n| n.starts_with("nvidia-cudnn-cu12<10.0,>=9.8")),
            "{:?}",
            j.needs
        );
        assert!(
            j.ships.iter().any(|s| s
                == "/venv/lib/python3.11/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so"),
            "{:?}",
            j.ships
        );
        // jax's pin on jaxlib, its [cuda12] extra's pins, the plugin's pin on the PJRT plugin.
        let pin = |req: &str| j.companions.iter().find(|c| c.requirement == req);
        assert_eq!(
            pin("jaxlib<=0.10.2,>=0.10.1").unwrap().installed.as_deref(),
            Some("0.10.2")
        );
        assert_eq!(
            pin("jax-cuda12-pjrt==0.10.2").unwrap().required_by,
            "jax-cuda12-plugin 0.10.2"
        );
        assert!(
            pin(r#"jax-cuda12-plugin[with-cuda]<=0.10.2,>=0.10.2; extra == "cuda12""#).is_some()
        );
        assert!(j.errors.is_empty(), "{:?}", j.errors);
    }

    #[test]
    fn a_plugin_of_another_release_is_recorded_with_its_pins() {
        let env = captured("jax-plugin-wrong-release");
        let j = only(&env, Framework::Jax);
        let pjrt = j
            .companions
            .iter()
            .find(|c| c.name == "jax-cuda12-pjrt")
            .unwrap();
        assert_eq!(pjrt.requirement, "jax-cuda12-pjrt==0.10.1");
        assert_eq!(pjrt.installed.as_deref(), Some("0.10.2"));
    }

    #[test]
    fn cupy_beside_torch_is_two_builds_of_two_majors() {
        let env = captured("cupy-cuda12x-beside-torch");
        let t = only(&env, Framework::Torch);
        let tc = t.cuda.as_ref().unwrap();
        assert_eq!((tc.major, tc.minor), (13, Some(2)));
        assert!(tc.source.ends_with("site-packages/torch/version.py"));
        assert!(
            t.needs.iter().any(|n| n.starts_with("nvidia-cudnn-cu13")),
            "{:?}",
            t.needs
        );
        let c = only(&env, Framework::Cupy);
        assert_eq!(c.package, "cupy-cuda12x");
        let cc = c.cuda.as_ref().unwrap();
        assert_eq!((cc.major, cc.minor, cc.read.as_str()), (12, None, "12.x"));
        assert!(
            c.needs.iter().any(|n| n.starts_with("cuda-toolkit[")),
            "{:?}",
            c.needs
        );
        assert!(c.ships.len() > 10, "{:?}", c.ships);
    }

    #[test]
    fn onnxruntime_gpu_from_its_build_info() {
        let env = captured("onnxruntime-gpu");
        let o = only(&env, Framework::OnnxRuntime);
        assert_eq!(o.version, "1.31.1");
        let c = o.cuda.as_ref().unwrap();
        assert_eq!((c.major, c.minor), (13, Some(0)));
        assert!(c
            .source
            .ends_with("onnxruntime/capi/build_and_package_info.py"));
        assert!(
            o.needs
                .iter()
                .any(|n| n.starts_with("nvidia-cudnn-cu13~=9.0")),
            "{:?}",
            o.needs
        );
        assert!(o
            .ships
            .iter()
            .any(|s| s.ends_with("libonnxruntime_providers_cuda.so")));
    }

    #[test]
    fn sglang_pins_a_torch_release() {
        let env = captured("sglang-beside-torch");
        let s = only(&env, Framework::Sglang);
        let torch = s
            .companions
            .iter()
            .find(|c| c.name == "torch")
            .unwrap_or_else(|| panic!("{s:#?}"));
        assert_eq!(torch.requirement, "torch==2.14.1");
        assert_eq!(torch.installed.as_deref(), Some("2.15.0"));
        assert!(s
            .companions
            .iter()
            .any(|c| c.name == "sglang-kernel" && c.installed.is_none()));
    }
}
