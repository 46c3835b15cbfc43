//! The binaries a log names: shared libraries and extension modules by path (`/…/_C.so`,
//! `C:\…\c10.dll`), torch's extension cache (`…/torch_extensions/py311_cu130` with the module
//! "Loading extension module NAME" names). `explain` judges those on this machine with the
//! rules `check` runs before it says the machine contradicts the message.

use regex::Regex;
use serde::Serialize;
use std::sync::OnceLock;

/// Paths kept from one log.
const MAX_NAMED: usize = 32;

/// A binary (or an extension build directory) a log names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedBinary {
    pub line_no: u64,
    /// The path as the log writes it.
    pub path: String,
    /// A directory to look for CUDA libraries in (torch's extension build directory), not a file.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub directory: bool,
}

fn patterns() -> Option<&'static [Regex; 3]> {
    static RE: OnceLock<Option<[Regex; 3]>> = OnceLock::new();
    RE.get_or_init(|| {
        Some([
            // A POSIX or Windows path to a shared library or extension module.
            Regex::new(
                r#"(?i)((?:[a-z]:\\|/)[^\s'"`:;,()\[\]<>|*?]*?\.(?:so(?:\.\d+)*|dll|pyd))\b"#,
            )
            .ok()?,
            // torch's extension cache root as cpp_extension prints it.
            Regex::new(r#"((?:[A-Za-z]:\\|/)[^\s'"`;,()]*?torch_extensions[/\\][^\s'"`;,()/\\]+)"#)
                .ok()?,
            Regex::new(r"Loading extension module ([A-Za-z_][A-Za-z0-9_]*)").ok()?,
        ])
    })
    .as_ref()
}

/// What a line must hold for [`Named::feed`] to find a binary in it.
pub const LITERALS: [&str; 5] = [
    ".so",
    ".dll",
    ".pyd",
    "torch_extensions",
    "Loading extension module",
];

/// What a line must hold for [`Named::feed`] to find a CUDA version in it.
const VERSION_LITERALS: [&str; 10] = [
    "CUDA Version",
    "Driver Version",
    "+cu",
    "nvidia-smi",
    "NVIDIA-SMI",
    "cuda1",
    "cuda 1",
    "-cu1",
    "nvcc",
    "Cuda compilation tools",
];

/// What names a Windows machine in words (a path is found by [`WINDOWS_PATH`]).
const WINDOWS_WORDS: [&str; 3] = ["Windows", "win10", "win11"];

/// Where a Windows path begins.
const WINDOWS_PATH: &str = ":\\";

/// Every literal [`Named::feed`] looks for (the scan's gate must not pass over their lines).
pub fn literals() -> impl Iterator<Item = &'static str> {
    LITERALS
        .into_iter()
        .chain(VERSION_LITERALS)
        .chain(crate::another_build::FAMILY_LITERALS)
        .chain(WINDOWS_WORDS)
        .chain([WINDOWS_PATH])
}
/// The Windows Python a log names: its interpreter and prefix, and whether the log wrote the
/// interpreter itself (`...\python.exe`) or only its `Lib\site-packages`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct WindowsPython {
    python: String,
    prefix: String,
    explicit: bool,
}

fn windows_patterns() -> Option<&'static [Regex; 3]> {
    static RE: OnceLock<Option<[Regex; 3]>> = OnceLock::new();
    RE.get_or_init(|| {
        Some([
            Regex::new(r#"(?i)\b([a-z]:\\[^'"`;,<>|*?\r\n]*?\\python(?:3(?:\.?\d+)?)?\.exe)\b"#)
                .ok()?,
            Regex::new(r#"(?i)\b([a-z]:\\[^'"`;,<>|*?\r\n]*?)\\lib\\site-packages\\"#).ok()?,
            // torch's version with its build ("2.4.0+cu121"), as logs and `pip list` print it.
            Regex::new(r"(?i)torch\S*\s*(?:version)?[\s:=]*v?\d+\.\d+(?:\.\d+)?\+(cu\d{2,3})\b")
                .ok()?,
        ])
    })
    .as_ref()
}

/// The interpreter a cmd.exe prompt line runs, made absolute with the prompt's directory:
/// `C:\ComfyUI_windows_portable>.\python_embeded\python.exe -s ComfyUI\main.py`, the first
/// line of every portable ComfyUI log (its run_nvidia_gpu.bat echoes it).
fn prompted_python(line: &str) -> Option<String> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let c = RE
        .get_or_init(|| {
            Regex::new(
                r#"(?i)^\s*([a-z]:\\[^<>|"*?\r\n]*?)>\s*"?((?:\.\\)?(?:[^\s"<>|:*?\\.][^\s"<>|:*?\\]*\\)*python(?:3(?:\.?\d+)?)?\.exe)\b"#,
            )
            .ok()
        })
        .as_ref()?
        .captures(line)?;
    let dir = c.get(1)?.as_str().trim_end_matches('\\');
    let exe = c.get(2)?.as_str();
    // A bare `python.exe` is whichever PATH finds, not one in the prompt's directory.
    if !exe.contains('\\') {
        return None;
    }
    let relative = exe.strip_prefix(".\\").unwrap_or(exe);
    Some(format!("{dir}\\{relative}"))
}

/// The interpreter of the environment at `prefix` (a site-packages path's parent): conda
/// environments, embedded Pythons (a portable ComfyUI's `python_embeded`) and plain installs
/// keep `python.exe` in the prefix, a venv in its `Scripts`.
fn windows_python_of_prefix(prefix: &str) -> String {
    let lower = prefix.to_ascii_lowercase();
    let mut parts = lower.rsplit('\\');
    let last = parts.next().unwrap_or_default();
    let parent = parts.next().unwrap_or_default();
    let in_prefix = last.contains("python_embed")
        || last.contains("conda")
        || last.starts_with("python")
        || parent == "envs";
    if in_prefix {
        format!("{prefix}\\python.exe")
    } else {
        format!("{prefix}\\Scripts\\python.exe")
    }
}

/// What a log names, gathered line by line.
#[derive(Debug, Clone, Default)]
pub struct Named {
    pub binaries: Vec<NamedBinary>,
    /// The Windows Python the log names, if any: fixes are written for it.
    windows_python: Option<WindowsPython>,
    /// The CUDA build of torch the log names ("cu121").
    torch_variant: Option<String>,
    /// The highest CUDA major the driver runs, as nvidia-smi's header says ("CUDA Version: 11.4").
    driver_cuda_major: Option<u32>,
    /// The log mentions nvidia-smi or its "Driver Version": "CUDA Version" is then the driver's.
    smi_seen: bool,
    /// The driver's version as nvidia-smi's header shows it ("Driver Version: 470.82.01"):
    /// its branch's highest CUDA is the ceiling when the header's "CUDA Version" is not shown.
    driver_version: Option<String>,
    /// The log shows the CUDA toolkit's compiler (nvcc): CUDA is installed on that machine.
    nvcc_seen: bool,
    /// The log names a Windows machine (a drive path, "Windows", "win10").
    windows_seen: bool,
    /// The highest CUDA major of a framework build the log names ("+cu121", "cuda10.1的paddle").
    build_cuda_major: Option<u32>,
    /// Every CUDA major the log states for the machine or its packages: a toolkit's path or
    /// image tag (`/usr/local/cuda-11.8`, `cuda11.8.0`), nvcc's release, "CUDA 12.4", a build's
    /// variant (`+cu121`, `cupy-cuda12x`).
    stated_cuda: std::collections::BTreeSet<(u32, Option<u32>)>,
    /// The driver's ceilings the log states (nvidia-smi's "CUDA Version"), the machine's CUDA
    /// where nothing installed is stated.
    ceiling_cuda: std::collections::BTreeSet<(u32, Option<u32>)>,
    /// Every cuDNN and TensorRT major the log shows (sonames, packages, words).
    family_versions: std::collections::BTreeSet<(crate::another_build::LibraryFamily, u32)>,
    /// Extension modules torch said it loads, for the extension cache's directories.
    modules: Vec<String>,
    roots: Vec<(u64, String)>,
}

impl Named {
    pub fn feed(&mut self, line_no: u64, line: &str) {
        if line.contains(WINDOWS_PATH) {
            self.windows_seen = true;
            self.feed_windows(line);
        }
        // "Windows"/"windows", "win10"/"Win11": the words' case-free tails.
        if !self.windows_seen
            && (line.contains("indows") || line.contains("in10") || line.contains("in11"))
        {
            self.windows_seen = WINDOWS_WORDS
                .iter()
                .any(|w| crate::clause::find_ascii_ci(line, w).is_some());
        }
        if VERSION_LITERALS.iter().any(|l| line.contains(l)) {
            self.feed_cuda_versions(line);
        }
        // "CUDA" in any case: a lexicon word, so the scan's gate never passes over these lines.
        if crate::clause::find_ascii_ci(line, "cuda").is_some() {
            for (version, role) in stated_cuda_versions(line) {
                match role {
                    CudaRole::Installed => {
                        self.stated_cuda.insert(version);
                    }
                    CudaRole::DriverCeiling => {
                        self.ceiling_cuda.insert(version);
                    }
                    CudaRole::Wanted => {}
                }
            }
        }
        if crate::another_build::FAMILY_LITERALS
            .iter()
            .any(|l| line.contains(l))
        {
            self.family_versions
                .extend(crate::another_build::stated_family_versions(line));
        }
        if self.torch_variant.is_none() && line.contains("+cu") {
            self.torch_variant = windows_patterns()
                .and_then(|[_, _, v]| v.captures(line))
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().to_ascii_lowercase());
        }
        let interesting = LITERALS.iter().any(|l| line.contains(l));
        if !interesting {
            return;
        }
        let Some([file, root, module]) = patterns() else {
            return;
        };
        for c in file.captures_iter(line) {
            if let Some(m) = c.get(1) {
                self.push(line_no, m.as_str(), false);
            }
        }
        if let Some(m) = root.captures(line).and_then(|c| c.get(1)) {
            let r = m.as_str().to_string();
            if !self.roots.iter().any(|(_, x)| *x == r) && self.roots.len() < MAX_NAMED {
                self.roots.push((line_no, r));
            }
        }
        if let Some(m) = module.captures(line).and_then(|c| c.get(1)) {
            let name = m.as_str().to_string();
            if !self.modules.contains(&name) && self.modules.len() < MAX_NAMED {
                self.modules.push(name);
            }
        }
    }

    /// The first interpreter the log writes, else the first environment whose site-packages
    /// it names.
    fn feed_windows(&mut self, line: &str) {
        if self.windows_python.as_ref().is_some_and(|w| w.explicit) {
            return;
        }
        let Some([exe, site, _]) = windows_patterns() else {
            return;
        };
        let named = prompted_python(line)
            .or_else(|| Some(exe.captures(line)?.get(1)?.as_str().to_string()));
        if let Some(python) = named {
            let dir = python.rsplit_once('\\').map_or("", |(d, _)| d);
            let prefix = match dir.rsplit_once('\\') {
                Some((p, last)) if last.eq_ignore_ascii_case("scripts") => p,
                _ => dir,
            };
            self.windows_python = Some(WindowsPython {
                prefix: prefix.to_string(),
                python,
                explicit: true,
            });
        } else if self.windows_python.is_none() {
            if let Some(m) = site.captures(line).and_then(|c| c.get(1)) {
                let prefix = m.as_str().to_string();
                self.windows_python = Some(WindowsPython {
                    python: windows_python_of_prefix(&prefix),
                    prefix,
                    explicit: false,
                });
            }
        }
    }

    fn feed_cuda_versions(&mut self, line: &str) {
        static RE: OnceLock<Option<[Regex; 3]>> = OnceLock::new();
        static DRIVER: OnceLock<Option<Regex>> = OnceLock::new();
        if let Some(m) = DRIVER
            .get_or_init(|| Regex::new(r"Driver Version\s*:\s*(\d{3}\.\d{1,3}(?:\.\d{1,3})?)").ok())
            .as_ref()
            .and_then(|re| re.captures(line))
            .and_then(|c| c.get(1))
        {
            self.driver_version = Some(m.as_str().to_string());
        }
        let Some([smi, variant, framework_cuda]) = RE
            .get_or_init(|| {
                Some([
                    Regex::new(r"CUDA Version\s*:\s*(\d{1,2})\.\d").ok()?,
                    // torch's "+cu121"; a package named for its CUDA: cupy-cuda12x, jax[cuda12],
                    // jaxlib's "+cuda12", NVIDIA's nvidia-*-cu12 wheels.
                    Regex::new(r"(?i)\d\+cu(\d{2,3})\b|(?:cupy-cuda|\[cuda|\d\+cuda)(\d{2})|[a-z]-cu(\d{2})\b").ok()?,
                    Regex::new(r"(?i)(?:torch|paddle|tensorflow|jax|onnxruntime)[^\s,;]*\s*(?:\d[\d.]*\s*)?cuda\s?(\d{1,2})\.\d|cuda\s?(\d{1,2})\.\d\s*(?:的|版本?的)?\s*(?:torch|paddle|tensorflow|jax|onnxruntime)").ok()?,
                ])
            })
            .as_ref()
        else {
            return;
        };
        if line.contains("nvcc") || line.contains("Cuda compilation tools") {
            self.nvcc_seen = true;
        }
        if line.contains("nvidia-smi")
            || line.contains("NVIDIA-SMI")
            || line.contains("Driver Version")
        {
            self.smi_seen = true;
        }
        if let Some(m) = smi.captures(line).and_then(|c| c.get(1)) {
            self.driver_cuda_major = m.as_str().parse().ok().or(self.driver_cuda_major);
        }
        let mut majors: Vec<u32> = variant
            .captures_iter(line)
            .filter_map(|c| {
                if let Some(m) = c.get(1) {
                    let digits = m.as_str();
                    return digits.get(..digits.len() - 1)?.parse().ok();
                }
                c.get(2).or_else(|| c.get(3))?.as_str().parse().ok()
            })
            .collect();
        majors.extend(
            framework_cuda
                .captures_iter(line)
                .filter_map(|c| c.get(1).or_else(|| c.get(2)))
                .filter_map(|m| m.as_str().parse::<u32>().ok()),
        );
        self.stated_cuda.extend(majors.iter().map(|&m| (m, None)));
        if let Some(m) = majors.into_iter().max() {
            self.build_cuda_major = Some(self.build_cuda_major.map_or(m, |b| b.max(m)));
        }
    }

    /// The CUDA versions the log states (`11.8`, or `12` where no minor is said), when it states
    /// some and none of them is served by a library of CUDA `wanted` (`(major, minor)`, the
    /// minor only where the library's soname tells minors apart): the machine's or its
    /// packages' CUDA, against the library a package asks for.
    fn cuda_besides(&self, wanted: (u32, Option<u32>)) -> Option<Vec<String>> {
        let installed = if self.stated_cuda.is_empty() {
            &self.ceiling_cuda
        } else {
            &self.stated_cuda
        };
        let stated: Vec<(u32, Option<u32>)> = installed.iter().copied().collect();
        crate::another_build::versions_besides(&stated, wanted)
    }

    /// The versions of `family` the log shows besides the one a package asks for (`wanted`,
    /// a major and, for CUDA, the minor its soname tells apart): [`Named::cuda_besides`] for
    /// CUDA, [`Named::family_besides`] for cuDNN and TensorRT.
    pub fn versions_besides(
        &self,
        family: crate::another_build::LibraryFamily,
        wanted: (u32, Option<u32>),
    ) -> Option<Vec<String>> {
        match family {
            crate::another_build::LibraryFamily::Cuda => self.cuda_besides(wanted),
            _ => self.family_besides(family, wanted.0),
        }
    }

    /// The other majors of a cuDNN or TensorRT library the log shows, when a package asks for
    /// `wanted`: those it shows besides the one asked for (the asked-for soname is itself shown).
    fn family_besides(
        &self,
        family: crate::another_build::LibraryFamily,
        wanted: u32,
    ) -> Option<Vec<String>> {
        let others: Vec<String> = self
            .family_versions
            .iter()
            .filter(|(f, m)| *f == family && *m != wanted)
            .map(|(_, m)| m.to_string())
            .collect();
        (!others.is_empty()).then_some(others)
    }

    /// The driver's CUDA major (nvidia-smi's header) and a newer CUDA major of a framework
    /// build the same log names: a build the driver cannot run (a newer major never runs on an
    /// older driver's CUDA; minor versions of one major do).
    /// Without the header's "CUDA Version", `branch_ceiling` gives the driver version's
    /// highest CUDA major (the knowledge base's table of driver branches).
    pub fn build_newer_than_driver(
        &self,
        branch_ceiling: impl Fn(&str) -> Option<u32>,
    ) -> Option<(u32, u32)> {
        let build = self.build_cuda_major?;
        // nvidia-smi's header where the log shows nvidia-smi, else the highest CUDA the log's
        // words give the driver ("my driver only supports CUDA 11.4", "the CUDA 12.1 driver").
        let from_smi = || {
            self.driver_cuda_major
                .or_else(|| branch_ceiling(self.driver_version.as_deref()?))
        };
        let driver = self
            .smi_seen
            .then(from_smi)
            .flatten()
            .or_else(|| self.ceiling_cuda.iter().map(|v| v.0).max())?;
        (build > driver).then_some((driver, build))
    }

    /// What the log shows of the machine's CUDA stack besides a framework: the driver's own
    /// header (a "Driver Version"), the toolkit's compiler, or a Windows machine (where a
    /// framework installed the default way is a CPU build). None when it shows none of them.
    pub fn stack_shown(&self) -> Option<&'static str> {
        if self.driver_version.is_some() {
            Some("the driver's own header (nvidia-smi's \"Driver Version\")")
        } else if self.nvcc_seen {
            Some("the CUDA toolkit's compiler (nvcc)")
        } else if self.windows_seen {
            Some("a Windows machine, where a framework installed the default way (pip's default index) is a CPU build")
        } else {
            None
        }
    }

    /// The environment a Windows log names, as the target of its fixes (PowerShell commands
    /// run with its own python.exe, through its pip).
    pub fn windows_target(&self) -> Option<cudoctor_plan::TargetEnv> {
        let w = self.windows_python.as_ref()?;
        Some(cudoctor_plan::TargetEnv {
            prefix: w.prefix.clone(),
            python: w.python.clone(),
            installer: cudoctor_plan::Installer::Pip,
            conda_pytorch: false,
            windows: true,
            project: None,
        })
    }

    /// Whether the log names a Windows machine (a drive path, "Windows", "win10").
    pub fn windows_seen(&self) -> bool {
        self.windows_seen
    }

    /// The CUDA build of torch the log names ("cu121"), if any.
    pub fn torch_variant(&self) -> Option<&str> {
        self.torch_variant.as_deref()
    }

    fn push(&mut self, line_no: u64, path: &str, directory: bool) {
        if self.binaries.len() < MAX_NAMED && !self.binaries.iter().any(|b| b.path == path) {
            self.binaries.push(NamedBinary {
                line_no,
                path: path.to_string(),
                directory,
            });
        }
    }

    /// Everything named: the files, and each extension-cache root joined with each module it
    /// loaded (or the root itself when no module was named).
    pub fn finish(mut self) -> Vec<NamedBinary> {
        let roots = std::mem::take(&mut self.roots);
        let modules = std::mem::take(&mut self.modules);
        for (line_no, root) in roots {
            // A root that is itself a file's directory is already covered by the file.
            if modules.is_empty() {
                self.push(line_no, &root, true);
            }
            for m in &modules {
                let sep = if root.contains('\\') { '\\' } else { '/' };
                self.push(line_no, &format!("{root}{sep}{m}"), true);
            }
        }
        self.binaries
    }
}

/// The CUDA versions `line` states in words, paths or tags ("CUDA 12.4", "cuda-11.8",
/// `cuda11.8.0`, "release 11.8", "cuda版本：11.2", "cuda 13 installed",
/// "my cuda version is 12.2", "torch.version.cuda: '12.1'", "CUDA toolkit version 12.1",
/// "cuda环境是10.2"),
/// never a device index (`cuda:8`) or a library's soname (`libcudart.so.12`, which names what
/// is asked for), each with what it stands for ([`CudaRole`]).
pub fn stated_cuda_versions(line: &str) -> Vec<((u32, Option<u32>), CudaRole)> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = RE
        .get_or_init(|| {
            Regex::new(
                r#"(?i)(?:(?-u:\b)cuda(?:[ _-]?(?:toolkit|runtime))?(?:[ _-]?(?:version|版本|环境))?(?:\s*(?:is|was|==|=|:|：|是|为|时)\s*|[\s_-]){0,3}['"]?v?|Cuda compilation tools, release )(\d{1,2})\.(\d)|(?-u:\b)cuda[ _-]?(\d{1,2})(?:[^\d.:]|$)"#,
            )
            .ok()
        })
        .as_ref()
    else {
        return Vec::new();
    };
    re.captures_iter(line)
        .filter_map(|c| {
            let all = c.get(0)?;
            let end = c.get(2).or(c.get(1)).or(c.get(3))?.end();
            let number = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
            let version = match number(1) {
                Some(major) => (major, number(2)),
                None => (number(3)?, None),
            };
            let before = &line[..all.start()];
            // nvidia-smi's header: "Driver Version: 550.54   CUDA Version: 12.4", or the two
            // copied into prose with a comma between.
            let smi_header = all
                .as_str()
                .to_ascii_lowercase()
                .starts_with("cuda version")
                && CEILING_WORDS
                    .iter()
                    .any(|w| crate::clause::find_ascii_ci(before, w).is_some());
            let role = if smi_header {
                CudaRole::DriverCeiling
            } else {
                stated_role(before, &line[end..])
            };
            Some((version, role))
        })
        .filter(|((m, _), _)| (7..=14).contains(m))
        .collect()
}

/// Words after which a sentence gives a CUDA it wants, not one it has: a package's requirement
/// ("needs CUDA 12", "built for cuda 11.8"), advice ("should use CUDA 11").
const WANTED_WORDS: &[&str] = &[
    "need",
    "require",
    "expect",
    "looking for",
    "look for",
    "built for",
    "built with",
    "built against",
    "compiled for",
    "compiled with",
    "compiled against",
    "should",
    "must",
    "want",
    "instead of",
    "upgrade to",
    "downgrade to",
    "recommend",
    "works with",
    "需要",
    "要求",
    "应该",
];

/// Words after which a CUDA version is the driver's ceiling.
const CEILING_WORDS: &[&str] = &["driver version", "nvidia-smi", "驱动"];

/// What a CUDA version a line states stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaRole {
    /// The machine or a package has it: a toolkit, an image, a build, "I have CUDA 11.8".
    Installed,
    /// The driver's ceiling (nvidia-smi's "CUDA Version"): no library of it need be installed,
    /// so it stands for the machine's CUDA only where nothing installed is stated.
    DriverCeiling,
    /// A requirement, a question or advice: what someone wants, not what is there.
    Wanted,
}

/// What the sentence around a stated CUDA (`before` it, `after` it, on one line) makes of it:
/// a requirement word in the same sentence before it or a question ("should we still be using
/// CUDA 11?") make it wanted; the driver's words before it make it the driver's ceiling.
fn stated_role(before: &str, after: &str) -> CudaRole {
    let sentence_start = before
        .char_indices()
        .rfind(|&(_, c)| matches!(c, ';' | '!' | '?' | '(' | '。' | '，' | '；' | '？'))
        .map_or(0, |(i, c)| i + c.len_utf8())
        .max(before.rfind(". ").map_or(0, |i| i + 2))
        .max(before.rfind(", ").map_or(0, |i| i + 2));
    let own = before[sentence_start..].to_lowercase();
    if CEILING_WORDS.iter().any(|w| own.contains(w)) {
        return CudaRole::DriverCeiling;
    }
    // The driver said to support it ("my driver only supports CUDA 11.4", "驱动最高支持"), or the
    // version naming a driver ("the CUDA 12.1 driver").
    let driver_supports = own.contains("driver")
        && ["support", "up to", "maximum", "max "]
            .iter()
            .any(|w| own.contains(w));
    let names_a_driver = after
        .trim_start()
        .get(..6)
        .is_some_and(|w| w.eq_ignore_ascii_case("driver"));
    if driver_supports || names_a_driver {
        return CudaRole::DriverCeiling;
    }
    let wanted = WANTED_WORDS.iter().any(|w| own.contains(w));
    // The sentence ends at the first stop that is not a decimal point ("CUDA 11.8?").
    let bytes = after.as_bytes();
    let sentence_end = after
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, ';' | '!' | '(' | ',' | '\n' | '。' | '，' | '；' | '？')
                || (c == '.' && !bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        })
        .map_or(after.len(), |(i, _)| i);
    if wanted || after[..sentence_end].contains('?') || after[sentence_end..].starts_with('？') {
        CudaRole::Wanted
    } else {
        CudaRole::Installed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cuda_versions_a_line_states_are_read_and_device_indices_and_sonames_are_not() {
        for (line, versions) in [
            (
                "LD_LIBRARY_PATH: /usr/local/cuda-10.2/lib64",
                vec![(10, Some(2))],
            ),
            (
                "image modelscope:ubuntu20.04-cuda11.8.0-py38",
                vec![(11, Some(8))],
            ),
            (
                "Cuda compilation tools, release 11.8, V11.8.89",
                vec![(11, Some(8))],
            ),
            (
                "| NVIDIA-SMI 550.54   Driver Version: 550.54   CUDA Version: 12.4 |",
                vec![],
            ),
            // What a package wants, a question and advice are not what the machine has.
            ("the version of cTranslate2 used needs CUDA 12", vec![]),
            ("For TFJS should we still be using CUDA 11?", vec![]),
            (
                "onnxruntime 1.19 is built for CUDA 12.2, I have CUDA 11.8",
                vec![(11, Some(8))],
            ),
            ("Is CUDA 11.8 supported?", vec![]),
            ("这个包需要cuda 12.1", vec![]),
            (
                "错误log如下，我的cuda环境时10.2.89，怎么适配10.2.89的cuda？",
                vec![(10, Some(2))],
            ),
            ("是否需要更换cuda10.0？", vec![]),
            ("我的cuda版本：11.2", vec![(11, Some(2))]),
            ("Runtime failure with cuda 13 installed", vec![(13, None)]),
            ("my cuda version is 12.2", vec![(12, Some(2))]),
            ("torch.version.cuda: '12.1'", vec![(12, Some(1))]),
            ("CUDA toolkit version 12.1", vec![(12, Some(1))]),
            ("Installed CUDA is 12.3", vec![(12, Some(3))]),
            ("CUDA 版本是 12.1", vec![(12, Some(1))]),
            // "CUDA environment", and 时 typed for 是 (both "shi").
            ("我的cuda环境是10.2", vec![(10, Some(2))]),
            ("我的cuda环境时10.2.89", vec![(10, Some(2))]),
            ("cuda_version = \"12.4\"", vec![(12, Some(4))]),
            ("CUDA is 2.5x faster than the CPU", vec![]),
            (
                "FROM nvidia/cuda:12.1.0-devel-ubuntu22.04",
                vec![(12, Some(1))],
            ),
            ("x = x.to('cuda:8')", vec![]),
            (
                "ImportError: libcudart.so.12: cannot open shared object file",
                vec![],
            ),
            ("CUDA error 35 at line 12", vec![]),
        ] {
            let installed: Vec<_> = stated_cuda_versions(line)
                .into_iter()
                .filter(|(_, role)| *role == CudaRole::Installed)
                .map(|(v, _)| v)
                .collect();
            assert_eq!(installed, versions, "{line}");
        }
        assert_eq!(
            stated_cuda_versions(
                "| NVIDIA-SMI 550.54   Driver Version: 550.54   CUDA Version: 12.4 |"
            ),
            vec![((12, Some(4)), CudaRole::DriverCeiling)]
        );
        // The driver said in words to support it, or a version that names a driver.
        for line in [
            "my driver only supports CUDA 11.4",
            "the nodes run the CUDA 12.1 driver",
        ] {
            assert!(
                stated_cuda_versions(line)
                    .iter()
                    .all(|(_, role)| *role == CudaRole::DriverCeiling),
                "{line}"
            );
        }
        let mut words_only = Named::default();
        words_only.feed(1, "my driver only supports CUDA 11.4");
        words_only.feed(2, "pip install torch==2.1.0+cu121");
        assert_eq!(words_only.build_newer_than_driver(|_| None), Some((11, 12)));
        // The driver's ceiling stands for the machine's CUDA only where nothing installed is said.
        let mut smi_only = Named::default();
        smi_only.feed(1, "Driver Version: 550.90.07, CUDA Version: 12.4");
        assert_eq!(
            smi_only.cuda_besides((11, None)),
            Some(vec!["12.4".to_string()])
        );
        let mut conda = Named::default();
        conda.feed(1, "Driver Version: 550.107.02, CUDA Version: 12.4");
        conda.feed(
            2,
            "conda install pytorch==2.0.0 pytorch-cuda=11.7 -c pytorch -c nvidia",
        );
        assert_eq!(
            conda.cuda_besides((12, None)),
            Some(vec!["11.7".to_string()])
        );
        let mut n = Named::default();
        n.feed(
            1,
            "ImportError: libcudart.so.12: cannot open shared object file",
        );
        n.feed(2, "nvcc: Cuda compilation tools, release 11.8, V11.8.89");
        assert_eq!(n.cuda_besides((12, None)), Some(vec!["11.8".to_string()]));
        assert_eq!(
            n.cuda_besides((11, None)),
            None,
            "the log states the library's own major"
        );
        assert_eq!(
            Named::default().cuda_besides((12, None)),
            None,
            "nothing stated"
        );
        // Before CUDA 11 a soname names the minor too; NVRTC 11.2's stands for every later 11.x.
        let mut jetson = Named::default();
        jetson.feed(1, "I have CUDA 10.2 installed");
        assert_eq!(
            jetson.cuda_besides((10, Some(0))),
            Some(vec!["10.2".to_string()])
        );
        assert_eq!(jetson.cuda_besides((10, Some(2))), None);
        let mut nvrtc = Named::default();
        nvrtc.feed(1, "CUDA 11.4");
        assert_eq!(nvrtc.cuda_besides((11, Some(2))), None);
        assert!(nvrtc.cuda_besides((11, Some(1))).is_some());
    }

    #[test]
    fn a_build_newer_than_the_drivers_cuda_is_seen() {
        let mut n = Named::default();
        n.feed(
            1,
            "| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |",
        );
        n.feed(2, "torch 2.3.1+cu121");
        assert_eq!(n.build_newer_than_driver(|_| None), Some((11, 12)));
        // Minor versions of one major run on the driver: nothing to say.
        let mut m = Named::default();
        m.feed(1, "Driver Version: 535.104.05   CUDA Version: 12.2");
        m.feed(2, "torch==2.5.1+cu124");
        assert_eq!(m.build_newer_than_driver(|_| None), None);
        // "CUDA Version" without nvidia-smi in the log may be anything's.
        let mut k = Named::default();
        k.feed(1, "CUDA Version: 11.4");
        k.feed(2, "torch 2.3.1+cu121");
        assert_eq!(k.build_newer_than_driver(|_| None), None);
        // Only the driver's version shown: its branch's ceiling, from the table given.
        let mut d = Named::default();
        d.feed(1, "Driver Version: 470.57.02");
        d.feed(2, "pip install cupy-cuda12x");
        let r470 = |v: &str| v.starts_with("470.").then_some(11);
        assert_eq!(d.build_newer_than_driver(r470), Some((11, 12)));
        let mut j = Named::default();
        j.feed(1, "NVIDIA-SMI 470.57.02   Driver Version: 470.57.02");
        j.feed(2, "jaxlib 0.4.26+cuda12.cudnn89");
        assert_eq!(j.build_newer_than_driver(r470), Some((11, 12)));
        let mut w = Named::default();
        w.feed(1, "Driver Version: 470.57.02");
        w.feed(2, "nvidia-cudnn-cu11 8.9.2");
        assert_eq!(w.build_newer_than_driver(r470), None);
    }

    #[test]
    fn the_windows_python_a_log_names_is_found() {
        let mut n = Named::default();
        n.feed(1, r#"OSError: [WinError 126] Error loading "C:\ComfyUI_windows_portable\python_embeded\Lib\site-packages\torch\lib\fbgemm.dll" or one of its dependencies."#);
        n.feed(2, "pytorch version: 2.4.0+cu121");
        let t = n.windows_target();
        assert_eq!(
            t.as_ref().map(|t| t.python.as_str()),
            Some(r"C:\ComfyUI_windows_portable\python_embeded\python.exe")
        );
        assert!(t.is_some_and(|t| t.windows));
        assert_eq!(n.torch_variant(), Some("cu121"));

        let mut p = Named::default();
        p.feed(
            1,
            r"C:\ComfyUI_windows_portable>.\python_embeded\python.exe -s ComfyUI\main.py --windows-standalone-build",
        );
        assert_eq!(
            p.windows_target().map(|t| (t.python, t.prefix)),
            Some((
                r"C:\ComfyUI_windows_portable\python_embeded\python.exe".to_string(),
                r"C:\ComfyUI_windows_portable\python_embeded".to_string()
            ))
        );
        // A prompt running another program, or a parent-relative interpreter, names none.
        for line in [
            r"C:\ComfyUI_windows_portable>git pull",
            r"D:\x>..\py\python.exe main.py",
            r"D:\x>python.exe main.py",
        ] {
            let mut q = Named::default();
            q.feed(1, line);
            assert_eq!(q.windows_target().map(|t| t.python), None, "{line}");
        }

        let mut v = Named::default();
        v.feed(
            1,
            r#"  File "D:\work\.venv\Lib\site-packages\torch\__init__.py", line 1"#,
        );
        assert_eq!(
            v.windows_target().map(|t| t.python),
            Some(r"D:\work\.venv\Scripts\python.exe".to_string())
        );
        // The interpreter the log writes wins over a site-packages path.
        v.feed(2, r"D:\work\.venv\Scripts\python.exe -m pip list");
        assert_eq!(
            v.windows_target().map(|t| (t.python, t.prefix)),
            Some((
                r"D:\work\.venv\Scripts\python.exe".to_string(),
                r"D:\work\.venv".to_string()
            ))
        );

        let mut l = Named::default();
        l.feed(
            1,
            "/opt/env/lib/python3.11/site-packages/torch/lib/libc10.so",
        );
        assert!(l.windows_target().is_none());
    }

    #[test]
    fn libraries_and_the_extension_cache_are_named() {
        let mut n = Named::default();
        n.feed(
            1,
            "Using /root/.cache/torch_extensions/py311_cu130 as PyTorch extensions root...",
        );
        n.feed(2, "Loading extension module sm80_ext...");
        n.feed(3, "ImportError: /opt/env/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN3c10");
        n.feed(4, r"OSError: [WinError 126] Error loading C:\Users\me\venv\Lib\site-packages\torch\lib\c10.dll or one of its dependencies.");
        n.feed(
            5,
            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        );
        let got: Vec<(String, bool)> = n
            .finish()
            .into_iter()
            .map(|b| (b.path, b.directory))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/opt/env/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so".to_string(), false),
                (r"C:\Users\me\venv\Lib\site-packages\torch\lib\c10.dll".to_string(), false),
                ("/root/.cache/torch_extensions/py311_cu130/sm80_ext".to_string(), true),
            ]
        );
    }
}
