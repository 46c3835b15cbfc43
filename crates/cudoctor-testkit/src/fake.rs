//! A machine laid out under a temp dir, for a `--root` (or a `Host` confined to it): procfs
//! files, scripts that print real captured `nvidia-smi` output, toolkits and Python
//! environments, the variables and PATH of its user. Building it runs nothing; the end-to-end
//! tests run the binary against it (`crates/cudoctor/tests/support`'s `FakeMachine`), a
//! library's tests read it through their own `Host`.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

pub struct FakeRoot {
    pub dir: tempfile::TempDir,
    pub env: Vec<(String, String)>,
    path: Vec<String>,
    /// How many independent breakages the scenario builds: the root causes its report may
    /// have (see `one_cause_each` of the end-to-end tests). One unless a test says otherwise.
    breakages: usize,
}

pub struct Gpu<'a> {
    pub name: &'a str,
    pub cc: &'a str,
    pub total_mib: u64,
    pub used_mib: u64,
}

impl<'a> Gpu<'a> {
    pub fn new(name: &'a str, cc: &'a str) -> Self {
        Gpu {
            name,
            cc,
            total_mib: 81920,
            used_mib: 0,
        }
    }
}

/// The GPUs the scenarios use most, named as `nvidia-smi` names them.
impl Gpu<'static> {
    /// An H100 SXM: compute capability 9.0.
    pub fn h100() -> Self {
        Gpu::new("NVIDIA H100 80GB HBM3", "9.0")
    }

    /// An H200: compute capability 9.0.
    pub fn h200() -> Self {
        Gpu::new("NVIDIA H200", "9.0")
    }

    /// An RTX 3090: compute capability 8.6.
    pub fn rtx3090() -> Self {
        Gpu::new("NVIDIA GeForce RTX 3090", "8.6")
    }

    /// An A100 SXM: compute capability 8.0.
    pub fn a100() -> Self {
        Gpu::new("NVIDIA A100-SXM4-80GB", "8.0")
    }
}

/// The CUDA a torch build names in its local version (`2.11.0+cu130` -> `13.0`), `None` for
/// `+cpu`; panics on a build without one (write `venv` out for those).
fn torch_build_cuda(build: &str) -> Option<String> {
    let tag = build
        .split_once('+')
        .map(|(_, t)| t)
        .unwrap_or_else(|| panic!("torch build {build} names no CUDA: use venv()"));
    if tag == "cpu" {
        return None;
    }
    let digits = tag
        .strip_prefix("cu")
        .filter(|d| d.len() >= 3 && d.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or_else(|| panic!("torch build {build}: tag {tag} is not cuXYZ or cpu"));
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some(format!("{major}.{minor}"))
}

impl FakeRoot {
    pub fn new() -> Self {
        FakeRoot {
            dir: tempfile::tempdir().expect("temp dir"),
            env: Vec::new(),
            path: vec!["/usr/local/bin".into(), "/usr/bin".into(), "/bin".into()],
            breakages: 1,
        }
    }

    /// A machine whose driver `version` (its CUDA `max_cuda`) is loaded with `gpus`, and
    /// nothing else.
    pub fn with_driver(version: &str, max_cuda: &str, gpus: &[Gpu]) -> Self {
        let mut m = FakeRoot::new();
        m.driver(version, max_cuda, gpus);
        m
    }

    /// One H100 on driver 580.159.04 (CUDA 13.0), nothing else.
    pub fn h100() -> Self {
        FakeRoot::with_driver("580.159.04", "13.0", &[Gpu::h100()])
    }

    /// One H100 on driver 580.159.04 (CUDA 13.0) with torch 2.11.0+cu130 in /opt/venv: the
    /// healthy machine most scenarios break one thing of.
    pub fn h100_cu130() -> Self {
        let mut m = FakeRoot::h100();
        m.torch("2.11.0+cu130", &[]);
        m
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn file(&self, machine_path: &str, text: &str) -> &Self {
        let p = self.real(machine_path);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(&p, text).expect("write");
        self
    }

    pub fn script(&self, machine_path: &str, body: &str) -> &Self {
        self.file(machine_path, &format!("#!/bin/sh\n{body}\n"));
        let p = self.real(machine_path);
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).expect("chmod");
        self
    }

    pub fn dir(&self, machine_path: &str) -> &Self {
        fs::create_dir_all(self.real(machine_path)).expect("mkdir");
        self
    }

    pub fn link(&self, machine_path: &str, target: &str) -> &Self {
        let p = self.real(machine_path);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        symlink(target, p).expect("symlink");
        self
    }

    pub fn real(&self, machine_path: &str) -> PathBuf {
        self.dir.path().join(machine_path.trim_start_matches('/'))
    }

    /// This scenario builds `n` independent breakages (each its own root cause).
    pub fn breakages(&mut self, n: usize) -> &mut Self {
        self.breakages = n;
        self
    }

    pub fn var(&mut self, k: &str, v: &str) -> &mut Self {
        self.env.push((k.into(), v.into()));
        self
    }

    pub fn prepend_path(&mut self, dir: &str) -> &mut Self {
        self.path.insert(0, dir.into());
        self
    }

    /// A loaded driver: the kernel module's files and an `nvidia-smi` that answers the queries
    /// cudoctor makes, in the format the real tool prints.
    pub fn driver(&mut self, version: &str, max_cuda: &str, gpus: &[Gpu]) -> &mut Self {
        self.file(
            "/proc/driver/nvidia/version",
            &format!("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {version}  Release Build  (dvs-builder@U22)\nGCC version:  gcc version 12.3.0\n"),
        );
        self.file("/sys/module/nvidia/version", &format!("{version}\n"));
        // The user-space driver, as its package installs it (the file name tells the version).
        self.file(
            &format!("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{version}"),
            "",
        );
        let mut query = String::new();
        for (i, g) in gpus.iter().enumerate() {
            let bus = format!("0000:00:{:02x}.0", 6 + i);
            self.file(
                &format!("/proc/driver/nvidia/gpus/{bus}/information"),
                &format!("Model: \t\t {}\nIRQ:   \t\t 41\nGPU UUID: \t GPU-{i:08x}-0000-0000-0000-000000000000\nBus Location: \t {bus}\nDevice Minor: \t {i}\n", g.name),
            );
            query.push_str(&format!(
                "{i}, {}, GPU-{i:08x}-0000-0000-0000-000000000000, 0000{bus}, {version}, {}, {}, Enabled, [N/A], {}\n",
                g.name, g.total_mib, g.used_mib, g.cc
            ));
        }
        self.file("/opt/fake/smi-query.txt", &query);
        let banner = crate::h200x2("smi.txt")
            .replace("580.159.04", version)
            .replace("CUDA Version: 13.0", &format!("CUDA Version: {max_cuda}"));
        self.file("/opt/fake/smi-banner.txt", &banner);
        let root = self.root().display().to_string();
        self.script(
            "/usr/bin/nvidia-smi",
            &format!(
                "case \"$1\" in\n  --query-gpu=*) cat '{root}/opt/fake/smi-query.txt' ;;\n  --query-compute-apps=*) ;;\n  *) cat '{root}/opt/fake/smi-banner.txt' ;;\nesac"
            ),
        );
        self
    }

    /// A CUDA Toolkit under /usr/local/cuda-X.Y with a version.json and an nvcc that answers
    /// `--version` like the real one.
    pub fn toolkit(&mut self, version: &str) -> &mut Self {
        let mm: Vec<&str> = version.split('.').collect();
        let short = format!("{}.{}", mm[0], mm[1]);
        let root = format!("/usr/local/cuda-{short}");
        self.file(
            &format!("{root}/version.json"),
            &format!("{{\"cuda\": {{\"name\": \"CUDA SDK\", \"version\": \"{version}\"}}}}"),
        );
        self.script(
            &format!("{root}/bin/nvcc"),
            &format!("echo 'nvcc: NVIDIA (R) Cuda compiler driver'\necho 'Cuda compilation tools, release {short}, V{version}'"),
        );
        self
    }

    /// /usr/local/cuda -> /etc/alternatives/cuda -> the toolkit, as Debian packages lay it out.
    pub fn select_toolkit(&mut self, short: &str) -> &mut Self {
        self.link(
            "/etc/alternatives/cuda",
            &format!("/usr/local/cuda-{short}"),
        );
        self.link("/usr/local/cuda", "/etc/alternatives/cuda");
        self.prepend_path("/usr/local/cuda/bin");
        self
    }

    /// A venv at `prefix` with torch (and friends) as pip lays them out.
    pub fn venv(
        &mut self,
        prefix: &str,
        torch: &str,
        cuda: Option<&str>,
        others: &[(&str, &str)],
    ) -> &mut Self {
        let sp = format!("{prefix}/lib/python3.12/site-packages");
        self.file(
            &format!("{prefix}/pyvenv.cfg"),
            "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n",
        );
        self.link(&format!("{prefix}/bin/python3"), "/usr/bin/python3.12");
        self.file("/usr/bin/python3.12", "");
        let cuda_line = match cuda {
            Some(c) => format!("'{c}'"),
            None => "None".into(),
        };
        self.file(
            &format!("{sp}/torch/version.py"),
            &format!("from typing import Optional\n__version__ = '{torch}'\ndebug = False\ncuda: Optional[str] = {cuda_line}\ngit_version = 'abc'\nhip: Optional[str] = None\n"),
        );
        self.dir(&format!("{sp}/torch-{torch}.dist-info"));
        for (name, version) in others {
            self.dir(&format!(
                "{sp}/{}-{version}.dist-info",
                name.replace('-', "_")
            ));
        }
        self.var("VIRTUAL_ENV", prefix);
        self.prepend_path(&format!("{prefix}/bin"));
        self
    }

    /// A venv at /opt/venv with torch of `build` (its CUDA read from the build's tag:
    /// `+cu130` is 13.0, `+cpu` none) and the `others` packages beside it.
    pub fn torch(&mut self, build: &str, others: &[(&str, &str)]) -> &mut Self {
        let cuda = torch_build_cuda(build);
        self.venv("/opt/venv", build, cuda.as_deref(), others)
    }

    /// The real 2xH200 machine from the fixtures: driver 580.159.04, CUDA 13.0 toolkit,
    /// torch 2.11.0+cu130 in a venv.
    pub fn h200() -> Self {
        let mut m = FakeRoot::new();
        m.driver(
            "580.159.04",
            "13.0",
            &[
                Gpu {
                    name: "NVIDIA H200",
                    cc: "9.0",
                    total_mib: 143771,
                    used_mib: 0,
                },
                Gpu {
                    name: "NVIDIA H200",
                    cc: "9.0",
                    total_mib: 143771,
                    used_mib: 0,
                },
            ],
        );
        m.toolkit("13.0.88").select_toolkit("13.0");
        m.var("CUDA_HOME", "/usr/local/cuda");
        m.venv(
            "/opt/torch/.venv",
            "2.11.0+cu130",
            Some("13.0"),
            &[
                ("torchvision", "0.26.0+cu130"),
                ("torchaudio", "2.11.0+cu130"),
                ("nvidia-cudnn-cu13", "9.19.0.56"),
                ("nvidia-nccl-cu13", "2.28.9"),
                ("triton", "3.7.0"),
            ],
        );
        m
    }

    /// The machine's PATH, first entry first (directories of the machine).
    pub fn path_entries(&self) -> &[String] {
        &self.path
    }

    /// The user's environment on the machine: its variables and its PATH (for a `Host` rooted
    /// here, as the binary's `--root` reads them).
    pub fn vars(&self) -> std::collections::BTreeMap<String, String> {
        let mut vars: std::collections::BTreeMap<String, String> =
            self.env.iter().cloned().collect();
        vars.insert("PATH".into(), self.path.join(":"));
        vars
    }

    /// How many independent breakages the scenario builds ([`FakeRoot::breakages`]).
    pub fn breakage_count(&self) -> usize {
        self.breakages
    }
}

impl Default for FakeRoot {
    fn default() -> Self {
        FakeRoot::new()
    }
}
