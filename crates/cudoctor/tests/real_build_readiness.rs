//! Build readiness against NVIDIA's real compiler (PyPI's `nvidia-cuda-nvcc`, from
//! `CUDOCTOR_NVCC` or `.venv-ci`, `scripts/ci/install-cuda-tools.sh`) and the host's real gcc:
//! the range cudoctor reads from the toolkit's own `crt/host_config.h` is the one nvcc enforces,
//! and the message TK013 predicts is the one nvcc prints.
//!
//! No gcc newer than the range of any CUDA 13 header (nor an nvcc older than CUDA 13 on PyPI)
//! exists on the machines this runs on, so the refused compiler is the real gcc under the name
//! and `__GNUC__` of the first major past the range: cudoctor reads the version from the name,
//! nvcc's header from the macro. The accepted case is the real gcc as it is.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const KERNEL: &str = "__global__ void add_one(float* x) { x[threadIdx.x] += 1.0f; }\n";

fn nvcc(test: &str) -> Option<PathBuf> {
    let from_env = std::env::var_os("CUDOCTOR_NVCC")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let found = from_env.or_else(|| {
        let lib = cudoctor_testkit::repo_root().join(".venv-ci/lib");
        std::fs::read_dir(lib)
            .ok()?
            .flatten()
            .map(|e| e.path().join("site-packages/nvidia/cu13/bin/nvcc"))
            .find(|p| p.is_file())
    });
    let found = found.filter(|p| p.is_file());
    if found.is_none() {
        cudoctor_testkit::skip_missing_tool(
            test,
            "no nvcc (CUDOCTOR_NVCC, or scripts/ci/install-cuda-tools.sh)",
        );
    }
    found
}

/// The real gcc on PATH, symlinks followed.
fn gcc(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("gcc"))
            .find(|p| p.is_file())
            .and_then(|p| std::fs::canonicalize(p).ok())
    });
    if found.is_none() {
        cudoctor_testkit::skip_missing_tool(test, "no gcc on PATH");
    }
    found
}

/// `cudoctor check --format json` with CUDA_HOME at `home` and the given variables.
fn check(home: &Path, vars: &[(&str, &Path)]) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args(["check", "--format", "json"])
        .env("CUDA_HOME", home)
        .env("HOME", dir.path())
        .current_dir(dir.path());
    for v in [
        "CC",
        "NVCC_CCBIN",
        "NVCC_PREPEND_FLAGS",
        "NVCC_APPEND_FLAGS",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run cudoctor");
    serde_json::from_slice(&out.stdout).expect("check's JSON")
}

fn findings<'a>(v: &'a Value, code: &str) -> Vec<&'a Value> {
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["code"] == code)
        .collect()
}

/// nvcc compiling one kernel with `extra` arguments: (success, stderr).
fn compile(nvcc: &Path, extra: &[&str]) -> (bool, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("k.cu");
    std::fs::write(&src, KERNEL).expect("write source");
    let o = Command::new(nvcc)
        .args(extra)
        .args(["-arch=sm_80", "-c", "-o"])
        .arg(dir.path().join("k.o"))
        .arg(&src)
        .output()
        .expect("run nvcc");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn the_host_compiler_range_is_the_headers_and_the_refusal_is_nvccs_own_message() {
    let test = "host compiler against the real crt/host_config.h";
    let Some(nvcc) = nvcc(test) else {
        return;
    };
    let Some(gcc) = gcc(test) else {
        return;
    };
    let home = nvcc.parent().and_then(Path::parent).unwrap().to_path_buf();
    let header = std::fs::read_to_string(home.join("include/crt/host_config.h"))
        .expect("the toolkit's host_config.h");

    // The present gcc: read by cudoctor, accepted by the header, compiled by nvcc.
    let v = check(&home, &[]);
    let tk = v["snapshot"]["toolkit"]["toolkits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| Path::new(t["root"].as_str().unwrap()) == std::fs::canonicalize(&home).unwrap())
        .expect("the toolkit CUDA_HOME names")
        .clone();
    let gnu = tk["host_compilers"]["ranges"]
        .as_array()
        .expect("ranges read from host_config.h")
        .iter()
        .find(|r| r["family"] == "gcc")
        .expect("the GNU guard")
        .clone();
    let max = gnu["max_major"].as_u64().expect("an upper bound") as u32;
    assert!(
        header.contains(&format!("#if {}", gnu["condition"].as_str().unwrap())),
        "{gnu}"
    );
    let host = &v["snapshot"]["toolkit"]["build_tools"]["host_compiler"];
    assert_eq!(host["chosen_by"], "gcc on PATH", "{host}");
    let major: u32 = host["version"]
        .as_str()
        .expect("gcc's version read")
        .split('.')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let dumped = Command::new(&gcc).arg("-dumpversion").output().unwrap();
    let real_major: u32 = String::from_utf8_lossy(&dumped.stdout)
        .trim()
        .split('.')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(major, real_major, "{host}");
    assert!(
        major <= max,
        "this machine's gcc {major} is past the header's {max}"
    );
    assert!(
        findings(&v, "TK013").is_empty(),
        "{:?}",
        findings(&v, "TK013")
    );
    let (ok, stderr) = compile(&nvcc, &[]);
    assert!(ok, "nvcc with the present gcc: {stderr}");

    // The first gcc past the range, as torch hands it to nvcc (`-ccbin $CC`).
    let past = max + 1;
    let bin = tempfile::tempdir().expect("temp dir");
    let named = bin.path().join(format!("gcc-{past}"));
    std::os::unix::fs::symlink(&gcc, &named).expect("symlink");
    let v = check(&home, &[("CC", &named)]);
    let tk013 = findings(&v, "TK013");
    assert_eq!(tk013.len(), 1, "{:?}", v["findings"]);
    let predicted = tk013[0]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find_map(|e| e.strip_prefix("predicted, for every .cu file: \""))
        .and_then(|e| e.strip_suffix('"'))
        .expect("the predicted message")
        .to_string();
    let macro_def = format!("-D__GNUC__={past}");
    let (ok, stderr) = compile(
        &nvcc,
        &[
            "-ccbin",
            named.to_str().unwrap(),
            "-Xcompiler",
            "-U__GNUC__",
            "-Xcompiler",
            &macro_def,
        ],
    );
    assert!(!ok);
    assert!(
        stderr.contains(&predicted),
        "predicted {predicted:?}, nvcc printed:\n{}",
        stderr.lines().take(6).collect::<Vec<_>>().join("\n")
    );
    // The fix cudoctor prints first: a gcc within the range as CC (here the real one).
    let fix: Vec<String> = tk013[0]["fix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(
        fix.iter()
            .any(|s| s.contains(&format!("export CC=gcc-{max} CXX=g++-{max}"))),
        "{fix:?}"
    );
    let v = check(&home, &[("CC", &gcc)]);
    assert!(findings(&v, "TK013").is_empty());
    let (ok, stderr) = compile(&nvcc, &["-ccbin", gcc.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    // The override switches the prediction off, as it switches the header's check off.
    let v = check(
        &home,
        &[
            ("CC", &named),
            (
                "NVCC_APPEND_FLAGS",
                Path::new("-allow-unsupported-compiler"),
            ),
        ],
    );
    assert!(findings(&v, "TK013").is_empty());
}
