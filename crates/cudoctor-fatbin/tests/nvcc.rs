//! Real fat binaries: compiles small CUDA libraries with `nvcc` from PyPI's
//! `nvidia-cuda-nvcc`, and checks the reader's lists against `cuobjdump --list-elf --list-ptx`
//! from `nvidia-cuda-cuobjdump` (and against what each build asked for).
//!
//! Tools come from `CUDOCTOR_NVCC`, `CUDOCTOR_CUOBJDUMP` and `CUDOCTOR_PTXAS12`, or from the
//! repository's `.venv-ci` (`scripts/ci/install-cuda-tools.sh` installs them). Without them the
//! test is reported as skipped — and fails where `CUDOCTOR_REQUIRE_TOOLS=1` (or
//! `CUDOCTOR_REQUIRE_CUDA_TOOLS=1`), as in CI.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use cudoctor_fatbin::{scan_file, Compression, FileImages, SuffixSource};
use cudoctor_testkit::{loud, skip_missing_tool, skip_opt_in};

struct Tools {
    nvcc: PathBuf,
    cuobjdump: PathBuf,
    /// ptxas from CUDA 12.9, for cubins with the old ELF header (optional).
    ptxas12: Option<PathBuf>,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The venv's site-packages, whatever the Python version.
fn venv_site() -> Option<PathBuf> {
    let lib = repo_root().join(".venv-ci/lib");
    std::fs::read_dir(lib)
        .ok()?
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
}

fn tool(var: &str, rel: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            loud(&format!("{var}={} does not exist", p.display()));
        }
        return p.is_file().then_some(p);
    }
    let p = venv_site()?.join(rel);
    p.is_file().then_some(p)
}

fn tools() -> Option<Tools> {
    Some(Tools {
        nvcc: tool("CUDOCTOR_NVCC", "nvidia/cu13/bin/nvcc")?,
        cuobjdump: tool("CUDOCTOR_CUOBJDUMP", "nvidia/cu13/bin/cuobjdump")?,
        ptxas12: tool("CUDOCTOR_PTXAS12", "nvidia/cuda_nvcc/bin/ptxas"),
    })
}

fn get_tools(test: &str) -> Option<Tools> {
    let found = tools();
    if found.is_none() {
        skip_missing_tool(
            test,
            "no nvcc/cuobjdump (set CUDOCTOR_NVCC and CUDOCTOR_CUOBJDUMP, or run scripts/ci/install-cuda-tools.sh)",
        );
    }
    found
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What cuobjdump lists, in the reader's spelling: ELF files `x.1.sm_90a.cubin` → `sm_90a`,
/// PTX files `x.1.sm_90.ptx` → `compute_90`. With counts, since each image is listed once.
#[derive(Debug, Default, PartialEq, Eq)]
struct Listing {
    sass: BTreeSet<String>,
    ptx: BTreeSet<String>,
    sass_count: usize,
    ptx_count: usize,
}

fn cuobjdump(tools: &Tools, file: &Path, all: bool) -> Listing {
    let mut cmd = Command::new(&tools.cuobjdump);
    if all {
        cmd.arg("-all");
    }
    let out = cmd
        .args(["--list-elf", "--list-ptx"])
        .arg(file)
        .output()
        .expect("cuobjdump");
    // cuobjdump exits non-zero when one of the two lists is empty; the listing is still valid.
    let text = String::from_utf8_lossy(&out.stdout);
    let mut l = Listing::default();
    for line in text.lines() {
        let (is_elf, name) = if let Some(r) = line.strip_prefix("ELF file") {
            (true, r)
        } else if let Some(r) = line.strip_prefix("PTX file") {
            (false, r)
        } else {
            continue;
        };
        let name = name.rsplit(':').next().unwrap_or_default().trim();
        let mut parts = name.rsplit('.');
        let _ext = parts.next();
        let arch = parts.next().unwrap_or_default().to_string();
        if is_elf {
            l.sass.insert(arch);
            l.sass_count += 1;
        } else {
            l.ptx.insert(arch.replacen("sm_", "compute_", 1));
            l.ptx_count += 1;
        }
    }
    l
}

/// The reader's view in cuobjdump's terms (family-specific cubins without the `f`).
fn ours(img: &FileImages, all: bool) -> Listing {
    use cudoctor_fatbin::EntryKind;
    let entries: Vec<_> = if all {
        img.entries.iter().collect()
    } else {
        img.loadable_entries().collect()
    };
    let mut l = Listing {
        sass: img.cuobjdump_sass().into_iter().collect(),
        ptx: img.ptx.iter().cloned().collect(),
        sass_count: entries.iter().filter(|e| e.kind == EntryKind::Sass).count(),
        ptx_count: entries.iter().filter(|e| e.kind == EntryKind::Ptx).count(),
    };
    if all {
        let fold = |e: &&cudoctor_fatbin::EntryInfo| {
            e.arch.map(|a| a.name().trim_end_matches('f').to_string())
        };
        l.sass = entries
            .iter()
            .filter(|e| e.kind == EntryKind::Sass)
            .filter_map(fold)
            .collect();
        l.ptx = entries
            .iter()
            .filter(|e| e.kind == EntryKind::Ptx)
            .filter_map(|e| e.arch.map(|a| a.name()))
            .collect();
    }
    l
}

enum Build {
    Shared,
    Executable,
}

struct Case {
    name: &'static str,
    build: Build,
    args: &'static [&'static str],
    sass: &'static [&'static str],
    ptx: &'static [&'static str],
    /// Every entry must have this compression.
    compression: Option<Compression>,
}

const CASES: &[Case] = &[
    Case {
        name: "multi",
        build: Build::Shared,
        args: &[
            "-gencode",
            "arch=compute_75,code=sm_75",
            "-gencode",
            "arch=compute_80,code=sm_80",
            "-gencode",
            "arch=compute_86,code=[sm_86,compute_86]",
        ],
        sass: &["sm_75", "sm_80", "sm_86"],
        ptx: &["compute_86"],
        compression: None,
    },
    Case {
        name: "ptx_only",
        build: Build::Shared,
        args: &[
            "-gencode",
            "arch=compute_80,code=compute_80",
            "-gencode",
            "arch=compute_90a,code=compute_90a",
        ],
        sass: &[],
        ptx: &["compute_80", "compute_90a"],
        compression: None,
    },
    Case {
        name: "arch_specific_sass",
        build: Build::Shared,
        args: &[
            "-gencode",
            "arch=compute_90a,code=sm_90a",
            "-gencode",
            "arch=compute_100a,code=sm_100a",
            "-gencode",
            "arch=compute_103a,code=[sm_103a,compute_103a]",
        ],
        sass: &["sm_90a", "sm_100a", "sm_103a"],
        ptx: &["compute_103a"],
        compression: None,
    },
    Case {
        name: "family_zstd_all",
        build: Build::Shared,
        args: &[
            "-Xfatbin",
            "-compress-all",
            "-gencode",
            "arch=compute_100f,code=[sm_100f,compute_100f]",
            "-gencode",
            "arch=compute_120f,code=sm_120f",
        ],
        sass: &["sm_100f", "sm_120f"],
        ptx: &["compute_100f"],
        compression: Some(Compression::Zstd),
    },
    Case {
        name: "uncompressed",
        build: Build::Shared,
        args: &[
            "--no-compress",
            "-gencode",
            "arch=compute_80,code=[sm_80,compute_80]",
        ],
        sass: &["sm_80"],
        ptx: &["compute_80"],
        compression: Some(Compression::None),
    },
    Case {
        name: "lz4_executable",
        build: Build::Executable,
        args: &[
            "-Xfatbin",
            "-compress-all",
            "-compress-mode=speed",
            "-gencode",
            "arch=compute_75,code=sm_75",
            "-gencode",
            "arch=compute_90,code=[sm_90,compute_90]",
        ],
        sass: &["sm_75", "sm_90"],
        ptx: &["compute_90"],
        compression: Some(Compression::Lz4),
    },
    Case {
        name: "concat",
        build: Build::Shared,
        args: &[
            "-concat",
            "-gencode",
            "arch=compute_80,code=sm_80",
            "-gencode",
            "arch=compute_86,code=sm_86",
            "-gencode",
            "arch=compute_90a,code=sm_90a",
            "-gencode",
            "arch=compute_120,code=[sm_120,compute_120]",
        ],
        sass: &["sm_80", "sm_86", "sm_90a", "sm_120"],
        ptx: &["compute_120"],
        compression: None,
    },
    Case {
        name: "rdc",
        build: Build::Shared,
        args: &[
            "-rdc=true",
            "-gencode",
            "arch=compute_80,code=sm_80",
            "-gencode",
            "arch=compute_100f,code=[sm_100f,compute_100f]",
        ],
        // The executable fat binary (the device-linked image) has no PTX; the relocatable one
        // keeps it.
        sass: &["sm_80", "sm_100f"],
        ptx: &[],
        compression: None,
    },
];

fn compile(tools: &Tools, dir: &Path, case: &Case) -> PathBuf {
    let src_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda");
    let mut cmd = Command::new(&tools.nvcc);
    let out = match case.build {
        Build::Shared => {
            let out = dir.join(format!("lib{}.so", case.name));
            cmd.args(["-shared", "-Xcompiler", "-fPIC"])
                .arg(src_dir.join("kernels.cu"));
            out
        }
        Build::Executable => {
            cmd.arg(src_dir.join("main.cu"));
            dir.join(case.name)
        }
    };
    cmd.args(case.args).arg("-o").arg(&out);
    run(&mut cmd);
    out
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cudoctor-fatbin-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn nvcc_release(tools: &Tools) -> Option<String> {
    let v = run(Command::new(&tools.nvcc).arg("--version"));
    let at = v.find("release ")?;
    Some(v[at + 8..].split(',').next()?.trim().to_string())
}

#[test]
fn nvcc_builds_match_cuobjdump() {
    let Some(tools) = get_tools("nvcc_builds_match_cuobjdump") else {
        return;
    };
    let dir = temp_dir("nvcc");
    // Two compiles at a time: CI has two cores.
    let next = AtomicUsize::new(0);
    let mut built: Vec<(usize, PathBuf)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    while let Some(case) = CASES.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let i = CASES.iter().position(|c| c.name == case.name).unwrap_or(0);
                        mine.push((i, compile(&tools, &dir, case)));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("compile thread"))
            .collect()
    });
    built.sort();
    let release = nvcc_release(&tools);

    for (i, path) in &built {
        let case = &CASES[*i];
        let img = scan_file(path).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(img.sass, case.sass, "{}: SASS", case.name);
        assert_eq!(img.ptx, case.ptx, "{}: PTX", case.name);
        assert_eq!(
            ours(&img, false),
            cuobjdump(&tools, path, false),
            "{}: reader vs cuobjdump",
            case.name
        );
        assert!(img.warnings.is_empty(), "{}: {:?}", case.name, img.warnings);
        // CUDA 13 headers carry everything: nothing is decompressed.
        assert!(
            img.entries
                .iter()
                .all(|e| e.suffix_source != SuffixSource::Payload),
            "{}: a payload was peeked",
            case.name
        );
        if let Some(c) = case.compression {
            assert!(
                img.loadable_entries().all(|e| e.compression == c),
                "{}: expected {c:?}: {:?}",
                case.name,
                img.entries
                    .iter()
                    .map(|e| e.compression)
                    .collect::<Vec<_>>()
            );
        }
        if release.as_deref() == Some("13.5") {
            // The PTX ISA ↔ CUDA row 9.5 ↔ 13.5 of the compat table rests on this.
            assert!(
                img.ptx_isa.values().all(|v| v == "9.5"),
                "{}: {:?}",
                case.name,
                img.ptx_isa
            );
        }
        match case.name {
            "concat" => assert!(img.entries.iter().any(|e| e.in_concat_group)),
            "rdc" => {
                assert!(img.relocatable_containers > 0);
                assert_eq!(ours(&img, true), cuobjdump(&tools, path, true), "rdc: -all");
            }
            _ => {}
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fat binary in the CUDA 12 format: cubins from ptxas 12.9 (old ELF header, `a` only in
/// `e_flags`), packed by `fatbinary` without the `a` flag and added to a host library with
/// objcopy. cuobjdump reads the suffix from the cubins; so must the reader.
#[test]
fn cuda12_cubins_match_cuobjdump() {
    let Some(tools) = get_tools("cuda12_cubins_match_cuobjdump") else {
        return;
    };
    let Some(ptxas12) = tools.ptxas12.clone() else {
        skip_missing_tool(
            "cuda12_cubins_match_cuobjdump",
            "no ptxas 12.9 (CUDOCTOR_PTXAS12)",
        );
        return;
    };
    let bin = tools.nvcc.parent().expect("nvcc dir").to_path_buf();
    let dir = temp_dir("cuda12");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda");

    // PTX for sm_90a from nvcc 13.5, relabelled to ISA 8.8 so ptxas 12.9 takes it.
    let ptx13 = dir.join("k13.ptx");
    run(Command::new(&tools.nvcc)
        .args(["-ptx", "-arch=compute_90a"])
        .arg(src.join("kernels.cu"))
        .arg("-o")
        .arg(&ptx13));
    let text = std::fs::read_to_string(&ptx13).expect("ptx");
    let version_line = text
        .lines()
        .find(|l| l.starts_with(".version"))
        .expect(".version");
    let ptx90a = text.replacen(version_line, ".version 8.8", 1);
    let ptx100a = ptx90a.replacen(".target sm_90a", ".target sm_100a", 1);
    std::fs::write(dir.join("k90a.ptx"), &ptx90a).expect("write");
    std::fs::write(dir.join("k100a.ptx"), &ptx100a).expect("write");
    for (arch, ptx) in [
        ("sm_90a", "k90a.ptx"),
        ("sm_100a", "k100a.ptx"),
        ("sm_90", "k90a.ptx"),
    ] {
        let mut cmd = Command::new(&ptxas12);
        if arch == "sm_90" {
            // Plain sm_90 from the same PTX needs the plain target.
            let plain = ptx90a.replacen(".target sm_90a", ".target sm_90", 1);
            std::fs::write(dir.join("k90.ptx"), plain).expect("write");
            cmd.arg(format!("-arch={arch}")).arg(dir.join("k90.ptx"));
        } else {
            cmd.arg(format!("-arch={arch}")).arg(dir.join(ptx));
        }
        run(cmd.arg("-o").arg(dir.join(format!("{arch}.cubin"))));
    }
    // Declared to fatbinary without the suffix, as CUDA 12 headers lack the flag; one
    // container compressed with zstd, one with LZ4.
    let fatbin = |name: &str, mode: &str, images: &[(&str, &str, &str)]| {
        let mut cmd = Command::new(bin.join("fatbinary"));
        cmd.arg(format!("--create={}", dir.join(name).display()))
            .args(["--compress-all", &format!("--compress-mode={mode}")]);
        for (kind, sm, file) in images {
            cmd.arg(format!(
                "--image3=kind={kind},sm={sm},file={}",
                dir.join(file).display()
            ));
        }
        run(&mut cmd);
        std::fs::read(dir.join(name)).expect("fatbin")
    };
    let a = fatbin(
        "a.fatbin",
        "size",
        &[
            ("elf", "90", "sm_90a.cubin"),
            ("elf", "100", "sm_100a.cubin"),
        ],
    );
    let b = fatbin(
        "b.fatbin",
        "speed",
        &[("elf", "90", "sm_90.cubin"), ("ptx", "90", "k90a.ptx")],
    );
    let mut section = a;
    while section.len() % 8 != 0 {
        section.push(0);
    }
    section.extend_from_slice(&b);
    std::fs::write(dir.join("section.bin"), &section).expect("write");

    let host = dir.join("host.so");
    run(Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&host)
        .arg(src.join("host.c")));
    let lib = dir.join("libold.so");
    run(Command::new("objcopy")
        .arg(format!(
            "--add-section=.nv_fatbin={}",
            dir.join("section.bin").display()
        ))
        .args([
            "--set-section-flags=.nv_fatbin=alloc,readonly,contents",
            "--set-section-alignment=.nv_fatbin=8",
        ])
        .arg(&host)
        .arg(&lib));

    let img = scan_file(&lib).expect("scan");
    assert_eq!(img.sass, ["sm_90", "sm_90a", "sm_100a"]);
    let theirs = cuobjdump(&tools, &lib, false);
    let mine = ours(&img, false);
    assert_eq!(mine.sass, theirs.sass, "SASS vs cuobjdump");
    assert_eq!(mine.sass_count, theirs.sass_count);
    // Known difference: cuobjdump names PTX by the header (no flag: `sm_90`), the reader by the
    // PTX's own `.target sm_90a` — which is what the driver's JIT obeys.
    assert_eq!(theirs.ptx, BTreeSet::from(["compute_90".to_string()]));
    assert_eq!(img.ptx, ["compute_90a"]);
    assert!(img
        .entries
        .iter()
        .any(|e| e.suffix_source == SuffixSource::Payload));
    let comps: BTreeSet<_> = img
        .entries
        .iter()
        .map(|e| format!("{:?}", e.compression))
        .collect();
    assert_eq!(
        comps,
        BTreeSet::from(["Lz4".to_string(), "Zstd".to_string()])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Optional: real libraries (e.g. NVIDIA's wheels, a torch install) listed in
/// `CUDOCTOR_REAL_LIBS` (paths or directories, `:`-separated) must list exactly what cuobjdump
/// lists, image for image. Off unless the variable is set.
#[test]
fn real_libraries_match_cuobjdump() {
    let Some(list) = std::env::var_os("CUDOCTOR_REAL_LIBS") else {
        skip_opt_in(
            "real_libraries_match_cuobjdump",
            "CUDOCTOR_REAL_LIBS names libraries to compare",
        );
        return;
    };
    let Some(tools) = get_tools("real_libraries_match_cuobjdump") else {
        return;
    };
    let mut paths = Vec::new();
    for p in std::env::split_paths(&list) {
        if p.is_dir() {
            paths.extend(cudoctor_fatbin::find_cuda_libraries(&p));
        } else {
            paths.push(p);
        }
    }
    let mut checked = 0;
    for (path, result) in cudoctor_fatbin::scan_many(&paths, 2) {
        let img = result.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if !img.has_fatbin() {
            continue;
        }
        assert_eq!(
            ours(&img, false),
            cuobjdump(&tools, &path, false),
            "{}",
            path.display()
        );
        checked += 1;
    }
    loud(&format!(
        "real_libraries_match_cuobjdump: {checked} libraries identical to cuobjdump"
    ));
}
