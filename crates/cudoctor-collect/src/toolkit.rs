//! CUDA Toolkits on disk, and which one PATH, CUDA_HOME and /usr/local/cuda select.

use cudoctor_snapshot::{
    Attempt, NvccOnPath, Outcome, PythonEnv, PythonEnvKind, SymlinkChain, Toolkit, ToolkitFacts,
};

use crate::host::{CommandOutcome, Host};

/// Shell start-up files of the user whose settings may only live there.
const USER_RC_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".profile",
    ".zshrc",
    ".zprofile",
];
const SYSTEM_RC_FILES: &[&str] = &["/etc/environment", "/etc/profile", "/etc/bash.bashrc"];

/// The most `cuda*` directories of `/usr/local` or `/opt` looked at as toolkits (a machine has a
/// few; a hostile tree of thousands is cut here and said as stopped early).
const MAX_LISTED_TOOLKITS: usize = 64;

pub fn collect(host: &Host, envs: &[PythonEnv]) -> ToolkitFacts {
    let mut facts = ToolkitFacts::default();
    let mut candidates: Vec<Candidate> = Vec::new();
    for parent in ["/usr/local", "/opt"] {
        let names = host.list_dir(parent);
        let mut named = names.iter().filter(|n| n.starts_with("cuda"));
        for name in named.by_ref().take(MAX_LISTED_TOOLKITS) {
            {
                candidates.push(Candidate::at(
                    format!("{parent}/{name}"),
                    format!("{parent}/cuda*"),
                ));
            }
        }
        if named.next().is_some() {
            host.stopped(
                cudoctor_snapshot::ScanKind::Toolkits,
                parent,
                cudoctor_snapshot::StopReason::Files {
                    limit: MAX_LISTED_TOOLKITS as u64,
                },
            );
        }
    }
    for var in [
        "CUDA_HOME",
        "CUDA_PATH",
        "CUDA_ROOT",
        "CUDA_TOOLKIT_ROOT_DIR",
    ] {
        if let Some(v) = host.var(var) {
            candidates.push(Candidate::at(v.to_string(), var.to_string()));
        }
    }
    if let Some(prefix) = host.var("CONDA_PREFIX") {
        candidates.push(Candidate::at(
            prefix.to_string(),
            "CONDA_PREFIX".to_string(),
        ));
    }
    for env in envs {
        if env.kind == PythonEnvKind::Conda {
            // conda's cuda-toolkit / cuda-nvcc packages put nvcc in the env's own bin/.
            candidates.push(Candidate::at(
                env.prefix.clone(),
                format!("conda env {}", env.prefix),
            ));
        }
        for sp in &env.site_packages {
            // pip's nvidia-cuda-nvcc: nvidia/cuda_nvcc (CUDA 12 wheels), nvidia/cu13 (CUDA 13 wheels).
            for folder in ["cuda_nvcc", "cu13", "cu12"] {
                candidates.push(Candidate {
                    path: format!("{sp}/nvidia/{folder}"),
                    via: format!("pip nvidia-cuda-nvcc in {}", env.prefix),
                    wheel: Some(WheelFolder {
                        site_packages: sp.clone(),
                        folder,
                    }),
                });
            }
        }
    }
    // Every candidate is looked at, past the deadline too: each is a few bounded reads, and a
    // toolkit left out would be judged absent (a false alarm on CUDA_HOME). Their number is
    // what a hostile tree could stretch, and the listing's candidates are capped for that.
    for c in candidates {
        add_toolkit(host, &mut facts, &c);
    }
    facts.toolkits.sort_by(|a, b| a.root.cmp(&b.root));
    facts.usr_local_cuda = host
        .resolve("/usr/local/cuda")
        .map(|(real, hops)| SymlinkChain {
            path: "/usr/local/cuda".to_string(),
            hops,
            resolved: Some(real),
        });
    if facts.usr_local_cuda.is_none() && symlink_exists(host, "/usr/local/cuda") {
        facts.usr_local_cuda = Some(SymlinkChain {
            path: "/usr/local/cuda".to_string(),
            hops: Vec::new(),
            resolved: None,
        });
    }
    facts.nvcc_on_path = nvcc_on_path(host, envs, &mut facts);
    facts.shell_settings = shell_settings(host);
    if !host.is_windows() {
        let mut attempts = Vec::new();
        facts.build_tools = Some(crate::build_tools::collect(host, envs, &mut attempts));
        facts.attempts.extend(attempts);
    }
    facts
}

fn symlink_exists(host: &Host, p: &str) -> bool {
    std::fs::symlink_metadata(host.real_path(p)).is_ok()
}

/// A place a toolkit may be, and how it was found.
struct Candidate {
    path: String,
    via: String,
    /// Set for an nvidia wheel's folder: `<site-packages>/nvidia/<folder>`.
    wheel: Option<WheelFolder>,
}

impl Candidate {
    fn at(path: String, via: String) -> Candidate {
        Candidate {
            path,
            via,
            wheel: None,
        }
    }
}

/// `<site-packages>/nvidia/<folder>` for a root in NVIDIA's pip layout, whoever named it.
fn wheel_folder_of(root: &str) -> Option<WheelFolder> {
    let (sp, folder) = root.trim_end_matches('/').rsplit_once("/nvidia/")?;
    if !(sp.ends_with("/site-packages") || sp.ends_with("/dist-packages")) {
        return None;
    }
    let folder = ["cuda_nvcc", "cu13", "cu12"]
        .into_iter()
        .find(|f| *f == folder)?;
    Some(WheelFolder {
        site_packages: sp.to_string(),
        folder,
    })
}

/// `<site_packages>/nvidia/<folder>`, where pip's nvidia-cuda-nvcc puts a toolkit.
struct WheelFolder {
    site_packages: String,
    folder: &'static str,
}

/// Records the toolkit at the candidate's path (after following links) when it looks like one:
/// it has `bin/nvcc`, or a version file.
fn add_toolkit(host: &Host, facts: &mut ToolkitFacts, candidate: &Candidate) {
    let via = candidate.via.as_str();
    let Some((root, _)) = host.resolve(&candidate.path) else {
        return;
    };
    if !host.is_dir(&root) {
        return;
    }
    if let Some(existing) = facts.toolkits.iter_mut().find(|t| t.root == root) {
        if !existing.found_via.iter().any(|v| v == via) {
            existing.found_via.push(via.to_string());
        }
        return;
    }
    let nvcc = format!("{root}/bin/nvcc");
    let has_nvcc = host.is_file(&nvcc);
    // CUDA_HOME or PATH may name a pip wheel's folder too: its version is the wheel's, read
    // from its metadata.
    let wheel = candidate.wheel.as_ref().map(|w| WheelFolder {
        site_packages: w.site_packages.clone(),
        folder: w.folder,
    });
    let wheel = wheel.or_else(|| wheel_folder_of(&root));
    let (version, source) = toolkit_version(host, &root, wheel.as_ref());
    if !has_nvcc && version.is_none() {
        return;
    }
    if let (None, true) = (&version, has_nvcc) {
        facts.attempts.push(Attempt::new(
            format!("{nvcc} --version"),
            if host.runs_programs() {
                Outcome::Skipped
            } else {
                Outcome::NotRunUnderRoot
            },
            "not run (a toolkit's version is read from its files only): no version.json, \
             version.txt, wheel metadata, conda-meta record or include/cuda.h",
        ));
    }
    let link_dir = has_nvcc.then(|| link_dir(host, &root));
    let host_compilers = has_nvcc
        .then(|| crate::host_config::read(host, &root))
        .flatten();
    let cccl = has_nvcc.then(|| crate::cccl::read(host, &root)).flatten();
    facts.toolkits.push(Toolkit {
        root,
        version,
        version_source: source,
        found_via: vec![via.to_string()],
        nvcc: has_nvcc.then_some(nvcc),
        link_dir,
        host_compilers,
        cccl,
    });
}

/// The directory torch's `cpp_extension` links `-lcudart` from: `<root>/lib64`, else `<root>/lib`
/// when only that exists (it stays `lib64` when neither does), with the runtime's files there.
fn link_dir(host: &Host, root: &str) -> cudoctor_snapshot::LinkDir {
    let lib64 = format!("{root}/lib64");
    let lib = format!("{root}/lib");
    let path = if !host.exists(&lib64) && host.exists(&lib) {
        lib
    } else {
        lib64
    };
    let exists = host.is_dir(&path);
    let cudart_files = host
        .list_dir(&path)
        .into_iter()
        .filter(|n| n.starts_with("libcudart.") || n.starts_with("libcudart_static."))
        .collect();
    cudoctor_snapshot::LinkDir {
        path,
        exists,
        cudart_files,
    }
}

/// The toolkit's version from its files only (version.json, version.txt, the nvcc wheel's
/// metadata, conda's record of the package that installed it, `CUDA_VERSION` in
/// `include/cuda.h`). Its nvcc is never run: a toolkit found in an environment is a program its
/// author chose, and reading a check of it must not execute it.
fn toolkit_version(
    host: &Host,
    root: &str,
    wheel: Option<&WheelFolder>,
) -> (Option<String>, Option<String>) {
    if let Ok(text) = host.read_text(&format!("{root}/version.json")) {
        if let Some(v) = version_from_json(&text) {
            return (Some(v), Some("version.json".into()));
        }
    }
    if let Ok(text) = host.read_text(&format!("{root}/version.txt")) {
        if let Some(v) = text.split_whitespace().last().filter(|v| v.contains('.')) {
            return (Some(v.to_string()), Some("version.txt".into()));
        }
    }
    if let Some(v) = wheel.and_then(|w| nvcc_wheel_version(host, w)) {
        return (Some(v), Some("nvidia-cuda-nvcc wheel metadata".into()));
    }
    if let Some((package, v)) = conda_nvcc_version(host, root) {
        return (Some(v), Some(format!("conda-meta {package}")));
    }
    if let Some(v) = host
        .read_text(&format!("{root}/include/cuda.h"))
        .ok()
        .and_then(|t| cuda_h_version(&t))
    {
        return (Some(v), Some("include/cuda.h CUDA_VERSION".into()));
    }
    (None, None)
}

/// The version conda recorded for the package that put nvcc in a conda environment at `prefix`:
/// `conda-meta/<name>-<version>-<build>.json` of `cuda-nvcc`, else of `cuda-nvcc-tools` or
/// `cuda-nvcc-impl` (conda-forge's split of it).
fn conda_nvcc_version(host: &Host, prefix: &str) -> Option<(&'static str, String)> {
    let records = host.list_dir(&format!("{prefix}/conda-meta"));
    ["cuda-nvcc", "cuda-nvcc-tools", "cuda-nvcc-impl"]
        .into_iter()
        .find_map(|package| {
            records.iter().find_map(|f| {
                let stem = f.strip_suffix(".json")?;
                let (rest, _build) = stem.rsplit_once('-')?;
                let (name, version) = rest.rsplit_once('-')?;
                (name == package && version.starts_with(|c: char| c.is_ascii_digit()))
                    .then(|| (package, version.to_string()))
            })
        })
}

/// `#define CUDA_VERSION 12080` in a toolkit's `include/cuda.h` -> `12.8`.
pub fn cuda_h_version(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next()? == "#define" && words.next()? == "CUDA_VERSION").then_some(())?;
        let n: u32 = words.next()?.parse().ok()?;
        (n >= 1000).then(|| format!("{}.{}", n / 1000, (n % 1000) / 10))
    })
}

/// The version of the pip wheel that installed `<site-packages>/nvidia/<folder>/bin/nvcc`: the
/// dist-info whose RECORD lists that file (CUDA 13's `nvidia/cu13` is shared by many wheels).
fn nvcc_wheel_version(host: &Host, wheel: &WheelFolder) -> Option<String> {
    let site_packages = wheel.site_packages.as_str();
    let owned = format!("nvidia/{}/bin/nvcc,", wheel.folder);
    host.list_dir(site_packages).into_iter().find_map(|entry| {
        let (name, version) = crate::python::site::dist_name_version(&entry)?;
        let name = crate::python::site::normalise_name(&name);
        if !name.starts_with("nvidia-cuda-nvcc") || !entry.ends_with(".dist-info") {
            return None;
        }
        if host.out_of_time(cudoctor_snapshot::ScanKind::Toolkits, site_packages) {
            return None;
        }
        let record = host
            .read_text(&format!("{site_packages}/{entry}/RECORD"))
            .ok()?;
        record
            .lines()
            .any(|l| l.starts_with(&owned))
            .then_some(version)
            .flatten()
    })
}

/// `{"cuda": {"version": "13.0.2"}}` from a toolkit's version.json.
pub fn version_from_json(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let s = v.get("cuda")?.get("version")?.as_str()?;
    Some(s.to_string())
}

/// `Cuda compilation tools, release 13.0, V13.0.88` -> `13.0.88`.
pub fn parse_nvcc_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains("release"))?;
    if let Some(v) = line.split_whitespace().find(|t| t.starts_with('V')) {
        let v = &v[1..];
        if v.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        {
            return Some(v.to_string());
        }
    }
    let after = line.split("release").nth(1)?;
    let v = after
        .trim()
        .trim_start_matches(',')
        .split(',')
        .next()?
        .trim();
    (!v.is_empty()).then(|| v.to_string())
}

/// Whether `path` (a machine path, links resolved) lies inside an inspected environment: a
/// Python environment's prefix or site-packages, or the active conda prefix. Nothing there is
/// ever run by a check.
pub(crate) fn inside_an_env(host: &Host, envs: &[PythonEnv], path: &str) -> bool {
    let under = |dir: &str| {
        let dir = dir.trim_end_matches('/');
        !dir.is_empty() && path.starts_with(dir) && path[dir.len()..].starts_with('/')
    };
    let resolved = |dir: &str| host.resolve(dir).map(|(r, _)| r);
    envs.iter().any(|e| {
        std::iter::once(&e.prefix)
            .chain(e.site_packages.iter())
            .any(|d| under(d) || resolved(d).is_some_and(|r| under(&r)))
    }) || host
        .var("CONDA_PREFIX")
        .is_some_and(|p| under(p) || resolved(p).is_some_and(|r| under(&r)))
}

/// The nvcc PATH selects. Its version comes from the owning toolkit's files; the program itself
/// runs only on the live machine, outside every inspected environment, when no file tells.
fn nvcc_on_path(host: &Host, envs: &[PythonEnv], facts: &mut ToolkitFacts) -> Option<NvccOnPath> {
    let path = host.which("nvcc")?;
    let resolved = host
        .resolve(&path)
        .map(|(r, _)| r)
        .unwrap_or_else(|| path.clone());
    let toolkit_root = resolved.strip_suffix("/bin/nvcc").map(str::to_string);
    let known = toolkit_root
        .as_deref()
        .is_some_and(|r| facts.by_root(r).is_some());
    if !known {
        if let Some(root) = &toolkit_root {
            add_toolkit(
                host,
                facts,
                &Candidate::at(root.clone(), "nvcc on PATH".into()),
            );
        }
    }
    // The owning toolkit's files answer first; the program runs only where nothing else tells.
    let version = match toolkit_root.as_deref().and_then(|r| facts.by_root(r)) {
        Some(t) => t.version.clone(),
        None if !host.runs_programs() => {
            facts.attempts.push(Attempt::new(
                format!("{path} --version"),
                Outcome::NotRunUnderRoot,
                "not inside a toolkit with version files",
            ));
            None
        }
        None if inside_an_env(host, envs, &resolved) || inside_an_env(host, envs, &path) => {
            facts.attempts.push(Attempt::new(
                format!("{path} --version"),
                Outcome::Skipped,
                "not run: a program inside an inspected environment, and no file tells its version",
            ));
            None
        }
        None => match host.run(&path, &["--version"]) {
            CommandOutcome::Exited { stdout, .. } => parse_nvcc_version(&stdout),
            _ => None,
        },
    };
    Some(NvccOnPath {
        path,
        resolved,
        version,
        toolkit_root,
    })
}

/// Lines of shell start-up files that set CUDA paths, as `file:line: text`.
fn shell_settings(host: &Host) -> Vec<String> {
    let mut files: Vec<String> = SYSTEM_RC_FILES.iter().map(|s| s.to_string()).collect();
    for name in host.list_dir("/etc/profile.d") {
        files.push(format!("/etc/profile.d/{name}"));
    }
    if let Some(home) = host.var("HOME") {
        for rc in USER_RC_FILES {
            files.push(format!("{}/{rc}", home.trim_end_matches('/')));
        }
    }
    let mut hits = Vec::new();
    for file in files {
        let Ok(text) = host.read_text(&file) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.starts_with('#') {
                continue;
            }
            let sets_path = t.contains("CUDA_HOME")
                || t.contains("CUDA_PATH")
                || (t.contains("cuda") && (t.contains("PATH") || t.contains("LD_LIBRARY_PATH")));
            if sets_path && hits.len() < 50 {
                hits.push(format!(
                    "{file}:{}: {}",
                    i + 1,
                    crate::driver::truncate(t, 200)
                ));
            }
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_of_cuda_directories_are_looked_at_to_a_cap_and_said() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..2_000 {
            let inc = dir.path().join(format!("opt/cuda-{i}/include"));
            std::fs::create_dir_all(&inc).unwrap();
            std::fs::write(inc.join("cuda.h"), "#define CUDA_VERSION 12040\n").unwrap();
        }
        let host = Host::rooted(
            dir.path().to_path_buf(),
            Default::default(),
            std::time::Duration::from_secs(2),
        );
        // Past the deadline too: a toolkit left out would be judged absent.
        let late = host.with_deadline(cudoctor_types::Deadline::after(std::time::Duration::ZERO));
        let facts = collect(&late, &[]);
        assert!(!facts.toolkits.is_empty());
        assert!(
            facts.toolkits.len() <= MAX_LISTED_TOOLKITS,
            "{}",
            facts.toolkits.len()
        );
        assert!(late
            .stopped_early()
            .iter()
            .any(|s| s.scan == cudoctor_snapshot::ScanKind::Toolkits && s.place == "/opt"));
    }

    #[test]
    fn reads_the_real_nvcc_banner() {
        let text = "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\nBuilt on Wed_Aug_20_01:58:59_PM_PDT_2025\nCuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n";
        assert_eq!(parse_nvcc_version(text).as_deref(), Some("13.0.88"));
        assert_eq!(
            parse_nvcc_version("Cuda compilation tools, release 11.8, Vgarbage").as_deref(),
            Some("11.8")
        );
        assert_eq!(parse_nvcc_version("garbage"), None);
    }

    #[test]
    fn reads_cuda_version_from_cuda_h() {
        let h = "#ifndef __cuda_cuda_h__\n#define CUDA_VERSION 12080\n";
        assert_eq!(cuda_h_version(h).as_deref(), Some("12.8"));
        assert_eq!(
            cuda_h_version("#define CUDA_VERSION 13000").as_deref(),
            Some("13.0")
        );
        assert_eq!(cuda_h_version("#define CUDA_VERSION_X 13000"), None);
        assert_eq!(cuda_h_version("#define CUDA_VERSION x"), None);
    }

    #[test]
    fn reads_version_json() {
        let text = r#"{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, "cuda_cudart": {"version": "12.4.127"}}"#;
        assert_eq!(version_from_json(text).as_deref(), Some("12.4.1"));
        assert_eq!(version_from_json("{not json"), None);
    }
}
