//! A package built for another version of a library family than the one installed: the loader
//! cannot find `libcublasLt.so.12` where the log states only CUDA 11.8, or `libcudnn.so.8`
//! where it shows `libcudnn.so.9`. The number after `.so` is the version the package was
//! linked against, so no library path helps: the package's build for the installed version
//! does (the category's definition: a package built for another CUDA variant).

use crate::{Category, Explanation, FactsCheck};
use regex::Regex;
use std::sync::OnceLock;

/// A family of libraries whose sonames carry a version of their own, shown in logs as
/// sonames, package names and words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LibraryFamily {
    /// The CUDA runtime and the toolkit libraries whose soname is CUDA's version.
    Cuda,
    /// cuDNN (`libcudnn.so.8`, `libcudnn_ops_infer.so.8`, `libcudnn_ops.so.9`).
    Cudnn,
    /// TensorRT (`libnvinfer.so.8`, `libnvinfer_plugin.so.10`).
    TensorRt,
}

impl LibraryFamily {
    pub fn name(self) -> &'static str {
        match self {
            LibraryFamily::Cuda => "CUDA",
            LibraryFamily::Cudnn => "cuDNN",
            LibraryFamily::TensorRt => "TensorRT",
        }
    }

    /// Which packages publish a build per version of the family, for the fix that installs
    /// the failing package's build for the version installed.
    fn builds_by(self) -> &'static str {
        match self {
            LibraryFamily::Cuda => "onnxruntime-gpu, CuPy, PaddlePaddle, TensorFlow and torch publish builds per CUDA; 'cudoctor plan' chooses torch's",
            LibraryFamily::Cudnn => "onnxruntime-gpu, PaddlePaddle, TensorFlow and torch publish builds per cuDNN; 'cudoctor plan' chooses torch's",
            LibraryFamily::TensorRt => "onnxruntime-gpu, TensorFlow and Torch-TensorRT publish builds per TensorRT",
        }
    }

    /// Where the family's libraries of version `built` (major `major`) come from, for the fix
    /// that installs it: NVIDIA's wheels exist from CUDA 11 and cuDNN 8, and cuDNN 9's
    /// distribution packages name the CUDA they are built for.
    fn install_hint(self, built: &str, major: u32) -> String {
        match self {
            LibraryFamily::Cuda if major >= 11 => {
                format!("the CUDA {built} toolkit, or the nvidia-*-cu{major} wheels")
            }
            LibraryFamily::Cuda => format!("the CUDA {built} toolkit"),
            LibraryFamily::Cudnn if major >= 9 => format!(
                "cuDNN {major}: the nvidia-cudnn-cu12 (or -cu11) wheel of that major, or the distribution's libcudnn{major}-cuda-12 (or -cuda-11) package"
            ),
            LibraryFamily::Cudnn if major == 8 => format!(
                "cuDNN {major}: the nvidia-cudnn-cu12 (or -cu11) wheel of that major, or the distribution's libcudnn{major} package"
            ),
            LibraryFamily::Cudnn => format!("cuDNN {major}, from NVIDIA's cuDNN archive"),
            LibraryFamily::TensorRt => format!("TensorRT {major}'s libraries"),
        }
    }
}

/// The family and version a library's soname carries: `libcudart.so.12` -> CUDA 12,
/// `libcudart.so.10.0` -> CUDA 10.0 (sonames before CUDA 11 name the minor), `libnvrtc.so.11.2`
/// -> CUDA 11.2, `libcudnn_ops_infer.so.8` -> cuDNN 8, `libnvinfer.so.10` -> TensorRT 10. None
/// for libraries whose soname follows a version unrelated to a release (cuFFT, cuRAND and
/// cuSOLVER: libcufft.so.11 and libcusolver.so.11 ship with CUDA 12, libcurand.so.10 with CUDA
/// 10 to 12; NCCL, NVML, libcuda). Windows DLLs carry the same versions in their names
/// ([`dll_version`]). A path is read by its file name.
pub fn library_version(lib: &str) -> Option<(LibraryFamily, u32, Option<u32>)> {
    let lower = lib.to_ascii_lowercase();
    let file = lower.rsplit(['/', '\\']).next().unwrap_or(&lower);
    if let Some(stem) = file.strip_suffix(".dll") {
        return dll_version(stem);
    }
    soname_version(&lower)
}

/// The libraries whose soname's (and DLL name's) number is CUDA's version.
const SONAME_IS_CUDAS: &[&str] = &[
    "cudart",
    "cublas",
    "cublaslt",
    "nvblas",
    "nvrtc",
    "nvjitlink",
    "cusparse",
    "cupti",
];

/// From CUDA 11 a library's minor is the same for the whole major, but NVRTC's (11.0, 11.1,
/// then 11.2 for the rest of 11.x): the CUDA version a library of `stem` stands for.
fn cuda_library_version(
    stem: &str,
    major: u32,
    minor: Option<u32>,
) -> Option<(LibraryFamily, u32, Option<u32>)> {
    let minor = minor.filter(|_| major <= 10 || (stem == "nvrtc" && major == 11));
    (7..=14)
        .contains(&major)
        .then_some((LibraryFamily::Cuda, major, minor))
}

/// The family and version a Windows DLL's name carries (its stem, lowercased, without
/// `.dll`): `cudart64_110` -> CUDA 11 (the name of every 11.x runtime), `cudart64_101` -> CUDA
/// 10.1, `cudart64_92` -> CUDA 9.2, `cublasLt64_12` -> CUDA 12, `nvrtc64_112_0` -> CUDA 11.2,
/// `cudnn_ops_infer64_8` -> cuDNN 8, `nvinfer_10` -> TensorRT 10 (TensorRT 8's `nvinfer.dll`
/// names no version). The installation guides for Windows list these names
/// (data/libraries.toml).
fn dll_version(stem: &str) -> Option<(LibraryFamily, u32, Option<u32>)> {
    // NVRTC and nvJitLink add "_0" after their version.
    let stem = stem.strip_suffix("_0").unwrap_or(stem);
    let (head, digits) = stem.rsplit_once('_')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = digits.parse().ok()?;
    let base = head.strip_suffix("64").unwrap_or(head);
    if SONAME_IS_CUDAS.contains(&base) {
        // Three digits are major and minor (110, 101, 112); two are a major from CUDA 10's
        // cuBLAS on (10, 11, 12), or major and minor before it (80, 92).
        let (major, minor) = match (digits.len(), n) {
            (3, _) => (n / 10, Some(n % 10)),
            (2, 10..=14) => (n, None),
            (2, 70..=99) => (n / 10, Some(n % 10)),
            _ => return None,
        };
        return cuda_library_version(base, major, minor);
    }
    major_of_own_family(base, n)
}

/// [`library_version`] of a soname (or its path), lowercased.
fn soname_version(lower: &str) -> Option<(LibraryFamily, u32, Option<u32>)> {
    let (stem, version) = cudoctor_ldso::families::split_soname(lower)?;
    let mut parts = version?.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: Option<u32> = parts.next().and_then(|m| m.parse().ok());
    if SONAME_IS_CUDAS.contains(&stem) {
        return cuda_library_version(stem, major, minor);
    }
    major_of_own_family(stem, major)
}

/// A cuDNN or TensorRT library (`cudnn`, `cudnn_ops_infer`, `nvinfer`, `nvinfer_plugin`),
/// whose soname or DLL name carries the family's own major.
fn major_of_own_family(stem: &str, major: u32) -> Option<(LibraryFamily, u32, Option<u32>)> {
    let family = if stem == "cudnn" || stem.starts_with("cudnn_") {
        LibraryFamily::Cudnn
    } else if stem == "nvinfer" || stem.starts_with("nvinfer_") {
        LibraryFamily::TensorRt
    } else {
        return None;
    };
    (5..=12).contains(&major).then_some((family, major, None))
}

/// Whether a library of CUDA `wanted` serves a machine or package of CUDA `stated`: one major,
/// and where both say a minor and the library's soname tells minors apart, the same one (NVRTC
/// 11.2's soname stands for every later 11.x).
pub fn serves(wanted: (u32, Option<u32>), stated: (u32, Option<u32>)) -> bool {
    if wanted.0 != stated.0 {
        return false;
    }
    match (wanted.1, stated.1) {
        (Some(w), Some(s)) if wanted.0 == 11 && w == 2 => s >= 2,
        (Some(w), Some(s)) => w == s,
        _ => true,
    }
}

/// The versions in `have` (a family's `(major, minor)`, in order) besides a package's
/// `wanted` one, as the cause states them: `None` when `have` is empty or one of them serves
/// `wanted`; a bare major beside the same major with its minor ("11" beside "11.8") is left out.
pub fn versions_besides(
    have: &[(u32, Option<u32>)],
    wanted: (u32, Option<u32>),
) -> Option<Vec<String>> {
    if have.is_empty() || have.iter().any(|&v| serves(wanted, v)) {
        return None;
    }
    let said = have
        .iter()
        .filter(|(major, minor)| {
            minor.is_some() || !have.iter().any(|(a, b)| a == major && b.is_some())
        })
        .map(|(major, minor)| minor.map_or(major.to_string(), |m| format!("{major}.{m}")))
        .collect();
    Some(said)
}

/// What a line holds for [`stated_family_versions`] to find something in it (pip's package
/// name `tensorrt` in lower case).
pub const FAMILY_LITERALS: [&str; 6] = [
    "cudnn",
    "cuDNN",
    "CUDNN",
    "libnvinfer",
    "TensorRT",
    "tensorrt",
];

/// The cuDNN and TensorRT majors a line shows: sonames (`libcudnn.so.9`), distribution packages
/// (`libcudnn8`, `libcudnn9-cuda-12`), words ("cuDNN 9.1", "cudnn版本 8.9"), torch's encoded
/// `torch.backends.cudnn.version()` (`8902`, `90100`) and "TensorRT 10.0".
pub fn stated_family_versions(line: &str) -> Vec<(LibraryFamily, u32)> {
    static RE: OnceLock<Option<[Regex; 2]>> = OnceLock::new();
    let Some([soname, words]) = RE
        .get_or_init(|| {
            Some([
                Regex::new(r"(?i)(?-u:\b)(lib(?:cudnn|nvinfer)\w*\.so\.\d+(?:\.\d+)?)").ok()?,
                Regex::new(
                    r"(?i)(?:(?-u:\b)(cudnn|tensorrt)(?:[ _-]?(?:version|版本)|\.version\(\))?[\s:=：_-]{0,3}v?|(?-u:\b)lib(cudnn))(\d{1,6})(?:[.\d]*)(?-u:\b)",
                )
                .ok()?,
            ])
        })
        .as_ref()
    else {
        return Vec::new();
    };
    let mut out: Vec<(LibraryFamily, u32)> = soname
        .captures_iter(line)
        .filter_map(|c| library_version(c.get(1)?.as_str()))
        .filter(|(f, _, _)| *f != LibraryFamily::Cuda)
        .map(|(f, major, _)| (f, major))
        .collect();
    for c in words.captures_iter(line) {
        let Some(word) = c.get(1).or_else(|| c.get(2)) else {
            continue;
        };
        let family = if word.as_str().eq_ignore_ascii_case("tensorrt") {
            LibraryFamily::TensorRt
        } else {
            LibraryFamily::Cudnn
        };
        let Some(n) = c.get(3).and_then(|m| m.as_str().parse::<u32>().ok()) else {
            continue;
        };
        // torch's cuDNN number: 8902 is 8.9.2, 90100 is 9.1.0.
        let major = match n {
            10_000.. => n / 10_000,
            1_000.. => n / 1_000,
            _ => n,
        };
        if (5..=12).contains(&major) {
            out.push((family, major));
        }
    }
    out
}

/// The library files a line names (`libcublasLt.so.12`, `cublas64_13.dll`, a path to one), by
/// their file names.
fn library_files(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || "`'\"(),;<>=".contains(c))
        .map(|w| w.trim_end_matches([':', '.']))
        .filter(|w| {
            let lower = w.to_ascii_lowercase();
            (lower.ends_with(".dll") && lower.len() > 4) || lower.contains(".so.")
        })
        .map(|w| w.rsplit(['/', '\\']).next().unwrap_or(w).to_string())
        .collect()
}

/// Where the versions a package was not built for were seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeenIn {
    /// The log states them (paths, tags, nvcc, sonames, words).
    Log,
    /// This machine has them (the loader's cache, the libraries its environments load, its
    /// toolkits), and none of the version asked for.
    Machine,
}

/// The explanation of a missing library rewritten as a package built for another version of
/// its family, when `others` gives the versions the log shows (or the machine has) of that
/// family and none of them is the one asked for. The category becomes the build's (version_suffix_mismatch), judged on
/// a machine by the loader's rules ([`FactsCheck::BuiltForAnotherVersion`]).
pub fn of_another_build(
    mut e: Explanation,
    seen_in: SeenIn,
    others: impl Fn(LibraryFamily, (u32, Option<u32>)) -> Option<Vec<String>>,
) -> Explanation {
    if !matches!(e.category, Category::LibraryPath | Category::WindowsDll) {
        return e;
    }
    // The library the message names, else one its line names beside it: a module that fails
    // to load names itself first, and the library it asks for after ("fails to load
    // ggml-cuda.dll ... it searches for cublas64_13.dll").
    let on_line = e
        .matched
        .first()
        .map(|m| library_files(&m.text))
        .unwrap_or_default();
    let Some((lib, (family, major, minor))) = ["lib", "library"]
        .iter()
        .filter_map(|k| e.fields.get(*k).cloned())
        .chain(on_line)
        .find_map(|l| Some((l.clone(), library_version(&l)?)))
    else {
        return e;
    };
    let Some(others) = others(family, (major, minor)) else {
        return e;
    };
    let name = family.name();
    let built = minor.map_or(major.to_string(), |m| format!("{major}.{m}"));
    let stated = others
        .iter()
        .map(|v| format!("{name} {v}"))
        .collect::<Vec<_>>()
        .join(" and ");
    let shows = match seen_in {
        SeenIn::Log => "the log shows",
        SeenIn::Machine => "this machine has",
    };
    e.category = Category::VersionSuffixMismatch;
    e.facts_check = Some(FactsCheck::BuiltForAnotherVersion);
    e.title = format!("A package was built for another {name} than the one installed");
    e.cause = format!(
        "The loader cannot find {lib}, a library of {name} {built}: the package that asks for it was built for {name} {built}, while {shows} {stated}. Another {name}'s libraries do not stand in for these (the number in a library's name is the version the package was linked against), so no library path makes this build work without {name} {built}'s libraries."
    );
    let mut fix = vec![
        cudoctor_plan::FixStep::Prose(format!(
            "Install the failing package's build for {stated} ({}) instead of adding {name} {built}'s libraries.",
            family.builds_by()
        )),
        cudoctor_plan::FixStep::Prose(format!(
            "If {name} {built} is what you want, install its libraries ({}) and make them findable: 'cudoctor check' shows which libraries each package loads.",
            family.install_hint(&built, major)
        )),
    ];
    fix.extend(e.fix.drain(..).take(1));
    e.fix = fix;
    // The log's words may name the asked-for version too ("onnxruntime 1.18 needs cuDNN 8",
    // "cuDNN 8.9 and 9.1 installed"), so its evidence says what it shows, not what it never does.
    let evidence = match seen_in {
        SeenIn::Log => {
            format!("The log shows {stated}; the package asks for {lib}, of {name} {built}.")
        }
        SeenIn::Machine => format!(
            "This machine has {stated} and no {name} {built}, whose {lib} the package asks for."
        ),
    };
    e.evidence.insert(0, evidence);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_files_a_line_names() {
        assert_eq!(
            library_files(
                "module fails to load .dll `ggml-cuda.dll`, and it searches for `cublas64_13.dll`"
            ),
            ["ggml-cuda.dll", "cublas64_13.dll"]
        );
        assert_eq!(
            library_files("OSError: /opt/x/lib/libcublasLt.so.12: cannot open shared object file"),
            ["libcublasLt.so.12"]
        );
        assert!(library_files("import torch failed.").is_empty());
    }

    #[test]
    fn sonames_name_their_family_and_version() {
        use LibraryFamily::*;
        for (lib, want) in [
            ("libcudart.so.12", Some((Cuda, 12, None))),
            ("libcudart.so.10.0", Some((Cuda, 10, Some(0)))),
            ("libnvrtc.so.11.2", Some((Cuda, 11, Some(2)))),
            ("libcublasLt.so.12.4.5", Some((Cuda, 12, None))),
            ("libcudnn_ops_infer.so.8", Some((Cudnn, 8, None))),
            ("libcudnn.so.9.1.0", Some((Cudnn, 9, None))),
            (
                "/usr/local/cuda/lib64/libcudart.so.11.0",
                Some((Cuda, 11, None)),
            ),
            ("libcudart.so", None),
            ("libnvinfer.so.10", Some((TensorRt, 10, None))),
            ("libcufft.so.11", None),
            ("libnccl.so.2", None),
            ("cudnn64_8.dll", Some((Cudnn, 8, None))),
            ("cudnn_ops_infer64_8.dll", Some((Cudnn, 8, None))),
            ("cudart64_110.dll", Some((Cuda, 11, None))),
            ("cudart64_101.dll", Some((Cuda, 10, Some(1)))),
            ("cudart64_92.dll", Some((Cuda, 9, Some(2)))),
            ("cudart64_12.dll", Some((Cuda, 12, None))),
            ("cublasLt64_12.dll", Some((Cuda, 12, None))),
            ("cublas64_10.dll", Some((Cuda, 10, None))),
            ("nvrtc64_112_0.dll", Some((Cuda, 11, Some(2)))),
            ("nvrtc64_120_0.dll", Some((Cuda, 12, None))),
            (
                r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v11.8\bin\cudart64_110.dll",
                Some((Cuda, 11, None)),
            ),
            ("nvinfer_10.dll", Some((TensorRt, 10, None))),
            ("nvinfer.dll", None),
            ("cufft64_11.dll", None),
            ("cupti64_2023.1.1.dll", None),
            ("nvcuda.dll", None),
        ] {
            assert_eq!(library_version(lib), want, "{lib}");
        }
    }

    /// The fix names only wheels and packages that exist: none before CUDA 11 or cuDNN 8, and
    /// cuDNN 9's packages by the CUDA they are built for.
    #[test]
    fn install_hints_name_wheels_and_packages_that_exist() {
        use LibraryFamily::*;
        assert_eq!(
            Cuda.install_hint("10.0", 10),
            "the CUDA 10.0 toolkit",
            "no nvidia-*-cu10 wheels exist"
        );
        assert!(Cuda.install_hint("12", 12).contains("nvidia-*-cu12"));
        assert!(Cudnn.install_hint("9", 9).contains("libcudnn9-cuda-12"));
        assert!(Cudnn.install_hint("8", 8).contains("libcudnn8 package"));
        assert!(!Cudnn.install_hint("7", 7).contains("wheel"));
    }

    #[test]
    fn a_line_shows_cudnn_and_tensorrt_majors_in_every_form() {
        use LibraryFamily::*;
        for (line, want) in [
            (
                "libcudnn_ops.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn_ops.so.9",
                vec![(Cudnn, 9), (Cudnn, 9)],
            ),
            (
                "apt install libcudnn8=8.9.7.29-1+cuda12.2",
                vec![(Cudnn, 8)],
            ),
            ("ii  libcudnn9-cuda-12  9.1.0.70-1", vec![(Cudnn, 9)]),
            ("I have cuDNN 9.1 installed", vec![(Cudnn, 9)]),
            ("cudnn版本 8.9", vec![(Cudnn, 8)]),
            ("torch.backends.cudnn.version(): 90100", vec![(Cudnn, 9)]),
            ("cuDNN version: 8902", vec![(Cudnn, 8)]),
            ("TensorRT 10.0.1 is installed", vec![(TensorRt, 10)]),
            (
                "Successfully installed tensorrt-10.0.1",
                vec![(TensorRt, 10)],
            ),
            ("tensorrt_llm-0.9.0", vec![]),
            ("cudnn_ops_infer64_8.dll not found", vec![]),
            ("CUDNN_STATUS_NOT_INITIALIZED", vec![]),
        ] {
            assert_eq!(stated_family_versions(line), want, "{line}");
        }
    }
}
