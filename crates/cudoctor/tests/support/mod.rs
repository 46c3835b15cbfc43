//! Fake machines for end-to-end tests: a temp dir laid out like `/`, with procfs files, scripts
//! that print real captured `nvidia-smi` output, toolkits and Python environments. The real
//! binary runs against it with `--root`.
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/fixtures/real/h200x2-torch2.11-cu130"
);

pub struct FakeMachine {
    pub dir: tempfile::TempDir,
    pub env: Vec<(String, String)>,
    path: Vec<String>,
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

impl FakeMachine {
    pub fn new() -> Self {
        FakeMachine {
            dir: tempfile::tempdir().expect("temp dir"),
            env: Vec::new(),
            path: vec!["/usr/local/bin".into(), "/usr/bin".into(), "/bin".into()],
        }
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
        let banner = fs::read_to_string(format!("{FIXTURES}/smi.txt"))
            .unwrap_or_default()
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

    /// The real 2xH200 machine from the fixtures: driver 580.159.04, CUDA 13.0 toolkit,
    /// torch 2.11.0+cu130 in a venv.
    pub fn h200() -> Self {
        let mut m = FakeMachine::new();
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

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cudoctor"));
        cmd.env_clear();
        cmd.env("PATH", self.path.join(":"));
        cmd.env("NO_COLOR", "1");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        // The subcommand first, then the machine, then the rest.
        let (sub, rest) = args
            .split_first()
            .map_or((None, &[][..]), |(s, r)| (Some(*s), r));
        cmd.args(sub);
        cmd.arg("--root").arg(self.root());
        cmd.args(rest);
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        let out = self.command(args).output().expect("run cudoctor");
        Run::from(out, &self.root().display().to_string())
    }

    /// `check --format json`, parsed.
    pub fn json(&self) -> (serde_json::Value, i32) {
        let r = self.run(&["check", "--format", "json"]);
        let v = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout, r.stderr));
        (v, r.code)
    }

    /// Codes of the findings at `severity`.
    pub fn codes(&self, severity: &str) -> Vec<String> {
        let (v, _) = self.json();
        v["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["severity"] == severity)
            .map(|f| f["code"].as_str().unwrap_or_default().to_string())
            .collect()
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(out: Output, root: &str) -> Run {
        let clean = |b: &[u8]| String::from_utf8_lossy(b).replace(root, "<root>");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: clean(&out.stdout),
            stderr: clean(&out.stderr),
        }
    }
}
