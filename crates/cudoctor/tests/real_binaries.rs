//! CUDA binaries outside site-packages, with real tools: an extension compiled by NVIDIA's
//! `nvcc` (PyPI's `nvidia-cuda-nvcc`) for sm_80 only, as `TORCH_CUDA_ARCH_LIST=8.0` builds it,
//! put where a real torch's `cpp_extension._get_build_directory` says a JIT build of it goes;
//! the same library built in place in a project directory, and in the source tree of a real
//! `pip install -e` (setuptools' editable finder). `check --gpu sm_90` and `kernels --gpu sm_90`
//! must name each.
//!
//! nvcc comes from `CUDOCTOR_NVCC` or the repository's `.venv-ci`
//! (`scripts/ci/install-cuda-tools.sh`); torch from `CUDOCTOR_TORCH_PYTHON`
//! (`scripts/ci/run-observer-test.sh`). Without them the tests report a skip, and fail where
//! `CUDOCTOR_REQUIRE_TOOLS=1` (CI).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const KERNEL: &str = r#"
__global__ void add_one(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
extern "C" int launch(float* x, int n) {
    add_one<<<(n + 255) / 256, 256>>>(x, n);
    return (int)cudaGetLastError();
}
"#;

fn torch_python(test: &str) -> Option<String> {
    let found = std::env::var("CUDOCTOR_TORCH_PYTHON")
        .ok()
        .filter(|p| !p.is_empty() && Path::new(p).exists());
    if found.is_none() {
        cudoctor_testkit::skip_missing_tool(
            test,
            "no interpreter with torch (CUDOCTOR_TORCH_PYTHON; scripts/ci/run-observer-test.sh makes one)",
        );
    }
    found
}

/// Compiles the kernel for sm_80 machine code only (torch's flag for `8.0`), a shared library.
fn build_sm80(nvcc: &Path, out: &Path) {
    build_sm80_linking(nvcc, out, &[]);
}

/// [`build_sm80`], linked with `link` (`-L DIR -lNAME`).
fn build_sm80_linking(nvcc: &Path, out: &Path, link: &[&str]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("k.cu");
    std::fs::write(&src, KERNEL).expect("write source");
    std::fs::create_dir_all(out.parent().expect("parent")).expect("mkdir");
    let o = Command::new(nvcc)
        .args([
            "-gencode=arch=compute_80,code=sm_80",
            "-shared",
            "-Xcompiler",
            "-fPIC",
            "-o",
        ])
        .arg(out)
        .arg(&src)
        .args(link)
        .output()
        .expect("run nvcc");
    assert!(
        o.status.success(),
        "nvcc failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// cudoctor on this machine with `home` as HOME and no extension or cache variables.
fn cudoctor(home: &Path, args: &[&str]) -> (String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .args(args)
        .env("HOME", home)
        .env_remove("TORCH_EXTENSIONS_DIR")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PYTHONPATH")
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .env("NO_COLOR", "1")
        .current_dir(home)
        .output()
        .expect("run cudoctor");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn krn002_titles(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["code"] == "KRN002")
        .map(|f| format!("{} {}", f["title"], f["evidence"]))
        .collect()
}

#[test]
fn a_jit_build_for_sm_80_in_torchs_real_cache_is_named_for_sm_90() {
    let test = "real JIT build in torch's extension cache";
    let (Some(nvcc), Some(python)) = (cudoctor_testkit::ci_nvcc(test), torch_python(test)) else {
        return;
    };
    let home = tempfile::tempdir().expect("temp dir");
    // torch itself says where a JIT build of `myext` goes for this interpreter and build.
    let out = Command::new(&python)
        .args([
            "-c",
            "from torch.utils.cpp_extension import _get_build_directory as d; print(d('myext', False))",
        ])
        .env("HOME", home.path())
        .env_remove("TORCH_EXTENSIONS_DIR")
        .env_remove("XDG_CACHE_HOME")
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let build_dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(
        build_dir.starts_with(home.path()),
        "{}",
        build_dir.display()
    );
    let so = build_dir.join("myext.so");
    build_sm80(&nvcc, &so);
    let (stdout, code) = cudoctor(
        home.path(),
        &[
            "check", "--python", &python, "--gpu", "sm_90", "--format", "json",
        ],
    );
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let t = krn002_titles(&v);
    assert!(
        t.iter()
            .any(|t| t.contains("torch extension myext (JIT build)")
                && t.contains(&so.display().to_string())),
        "{t:#?}"
    );
    assert_eq!(code, 1);
    // The build folder torch named is the one cudoctor takes as this environment's.
    let found = &v["snapshot"]["binaries"]["binaries"];
    let mine = found
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["path"] == so.display().to_string())
        .unwrap_or_else(|| panic!("{found:#}"));
    assert!(
        mine["env_prefix"].is_string(),
        "{mine:#}: the environment whose torch loads it"
    );
    assert_eq!(mine["fatbin"], true);
    let (text, code) = cudoctor(
        home.path(),
        &["kernels", "--python", &python, "--gpu", "sm_90"],
    );
    assert_eq!(code, 1, "{text}");
    let cannot = text
        .lines()
        .find(|l| l.contains("CANNOT RUN"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(cannot.contains("myext.so"), "{text}");
    // A JIT build links torch (libc10): `libs` loads it in the environment's process, its
    // NEEDED entries resolved like a site-packages extension's.
    let out = Command::new(&python)
        .args([
            "-c",
            "import os, torch; from torch.utils.cpp_extension import _get_build_directory as d; print(d('myext_torch', False)); print(os.path.join(os.path.dirname(torch.__file__), 'lib'))",
        ])
        .env("HOME", home.path())
        .env_remove("TORCH_EXTENSIONS_DIR")
        .env_remove("XDG_CACHE_HOME")
        .output()
        .expect("run python");
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = printed.lines();
    let (dir, torch_lib) = (lines.next().unwrap(), lines.next().unwrap());
    let linked = PathBuf::from(dir).join("myext_torch.so");
    // --no-as-needed: the kernel calls nothing of c10, and a JIT build does.
    build_sm80_linking(
        &nvcc,
        &linked,
        &["-Xlinker", "--no-as-needed", "-L", torch_lib, "-lc10"],
    );
    let (text, _) = cudoctor(home.path(), &["libs", "--python", &python]);
    let at = text
        .find(&linked.display().to_string())
        .unwrap_or_else(|| panic!("libs does not list {}:\n{text}", linked.display()));
    let block: Vec<&str> = text[at..].lines().take(12).collect();
    assert!(
        block
            .iter()
            .any(|l| l.contains("libc10.so") && l.contains("loaded")),
        "{block:#?}"
    );
}

#[test]
fn an_in_place_build_and_a_real_editable_install_are_found() {
    let test = "in-place build and editable install";
    let Some(nvcc) = cudoctor_testkit::ci_nvcc(test) else {
        return;
    };
    let Ok(python3) = which("python3") else {
        cudoctor_testkit::skip_missing_tool(test, "no python3 here");
        return;
    };
    let home = tempfile::tempdir().expect("temp dir");
    // The project: a package with its extension built in place.
    let proj = home.path().join("proj");
    std::fs::create_dir_all(proj.join("mypkg")).unwrap();
    std::fs::write(proj.join("mypkg/__init__.py"), "").unwrap();
    std::fs::write(
        proj.join("pyproject.toml"),
        "[build-system]\nrequires = [\"setuptools>=64\"]\nbuild-backend = \"setuptools.build_meta\"\n[project]\nname = \"my-pkg\"\nversion = \"0.1\"\n[tool.setuptools]\npackages = [\"mypkg\"]\n",
    )
    .unwrap();
    let so = proj.join("mypkg/_k.cpython-311-x86_64-linux-gnu.so");
    build_sm80(&nvcc, &so);
    // `check PATH` names the in-place build.
    let (stdout, _) = cudoctor(
        home.path(),
        &[
            "check",
            proj.to_str().unwrap(),
            "--gpu",
            "sm_90",
            "--format",
            "json",
        ],
    );
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let t = krn002_titles(&v);
    assert!(
        t.iter()
            .any(|t| t.contains("(built in the project)") && t.contains(&so.display().to_string())),
        "{t:#?}"
    );
    // A real editable install of it: setuptools' own .pth, finder and direct_url.json.
    let venv = home.path().join("venv");
    let ok = Command::new(&python3)
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        cudoctor_testkit::skip_missing_tool(test, "python3 -m venv failed (no venv module)");
        return;
    }
    let vpy = venv.join("bin/python");
    // As users install it: pip fetches setuptools into an isolated build environment.
    let out = Command::new(&vpy)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "-e",
        ])
        .arg(&proj)
        .output()
        .expect("pip");
    if !out.status.success() {
        // Offline: the build environment's setuptools cannot be fetched.
        cudoctor_testkit::skip_missing_tool(
            test,
            &format!(
                "pip install -e failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        );
        return;
    }
    let (stdout, _) = cudoctor(
        home.path(),
        &[
            "check",
            "--python",
            venv.to_str().unwrap(),
            "--gpu",
            "sm_90",
            "--format",
            "json",
        ],
    );
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let t = krn002_titles(&v);
    assert!(
        t.iter()
            .any(|t| t.contains("editable install of my-pkg")
                && t.contains(&so.display().to_string())),
        "{t:#?}"
    );
}

fn which(name: &str) -> Result<PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or(())
}

/// `cudoctor run` at a CUDA failure: a real torch process maps an nvcc-built sm_80 library from
/// a torch JIT build directory (through ctypes, as torch's loader would) and ends on the
/// RuntimeError torch raises for a kernel without an image for the GPU (raised by hand: no GPU
/// here). The report names the mapped library, its architectures and the build directory to
/// remove.
#[test]
fn run_names_the_mapped_library_behind_a_no_kernel_image_failure() {
    let test = "run attributes a CUDA failure";
    let (Some(nvcc), Some(python)) = (cudoctor_testkit::ci_nvcc(test), torch_python(test)) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let build = dir.path().join("torch_extensions/py311_cu130/myext");
    let so = build.join("myext.so");
    build_sm80(&nvcc, &so);
    std::fs::write(build.join("build.ninja"), "ninja_required_version = 1.3\n").unwrap();
    let program = dir.path().join("prog.py");
    std::fs::write(
        &program,
        format!(
            "import ctypes, torch\nctypes.CDLL({:?})\nraise RuntimeError('CUDA error: no kernel image is available for execution on the device\\nCUDA kernel errors might be asynchronously reported at some other API call')\n",
            so.display().to_string()
        ),
    )
    .unwrap();
    let out = dir.path().join("run.json");
    let o = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .arg("run")
        .arg("--out")
        .arg(&out)
        .arg("--")
        .arg(&python)
        .arg(&program)
        .current_dir(dir.path())
        .output()
        .expect("run cudoctor");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let f = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "RUN008")
        .unwrap_or_else(|| panic!("{:#}", report["findings"]))
        .clone();
    let title = f["title"].as_str().unwrap();
    assert!(
        title.contains(&so.display().to_string()) && title.contains("sm_80 only"),
        "{title}"
    );
    // What the observer recorded: the exception and the library mapped at that moment.
    let failure = &report["facts"]["processes"][0]["failure"];
    assert_eq!(failure["exception"], "RuntimeError");
    assert!(failure["mapped"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m == &Value::String(so.display().to_string())));
    let steps: Vec<String> = f["fix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s.as_object()
                .unwrap()
                .values()
                .next()
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(
        steps[0].starts_with(&format!("rm -rf {}", build.display())),
        "{steps:?}"
    );
    assert!(
        steps.iter().any(|s| s.contains("TORCH_CUDA_ARCH_LIST")),
        "{steps:?}"
    );
    // The text summary names it too.
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("RUN008"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Build readiness against a real build: CUDA_HOME at the pip compiler of `.venv-ci` (nvcc,
/// crt, NVVM and the runtime of one release; the runtime wheel ships only `libcudart.so.13`).
/// check predicts "cannot find -lcudart" (TK012) and no mixed release (TK011); the real link of
/// a CUDA library with the shared runtime, as torch's `-lcudart` asks, fails that way.
#[test]
fn a_pip_compiler_without_the_cudart_link_is_predicted_to_fail_as_the_link_does() {
    let test = "build readiness of the pip compiler";
    let Some(nvcc) = cudoctor_testkit::ci_nvcc(test) else {
        return;
    };
    let home = nvcc.parent().and_then(Path::parent).unwrap().to_path_buf();
    let site = home.parent().and_then(Path::parent).unwrap();
    let prefix = site
        .ancestors()
        .find(|p| p.join("pyvenv.cfg").is_file())
        .map(Path::to_path_buf);
    let Some(prefix) = prefix else {
        cudoctor_testkit::skip_missing_tool(test, "nvcc is not in a virtual environment's wheels");
        return;
    };
    let has_link =
        home.join("lib/libcudart.so").exists() || home.join("lib64/libcudart.so").exists();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--format", "json", "--python"])
        .arg(&prefix)
        .env("CUDA_HOME", &home)
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .output()
        .expect("run cudoctor");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let codes = cudoctor_testkit::finding_codes(&v);
    assert!(!codes.contains(&"TK011"), "{codes:?}");
    assert_eq!(codes.contains(&"TK012"), !has_link, "{codes:?}");
    // The real link, as torch's cpp_extension links: -lcudart.
    let src = dir.path().join("k.cu");
    std::fs::write(&src, KERNEL).unwrap();
    let o = Command::new(&nvcc)
        .args([
            "-arch=sm_80",
            "-shared",
            "-Xcompiler",
            "-fPIC",
            "-cudart",
            "shared",
            "-o",
        ])
        .arg(dir.path().join("k.so"))
        .arg(&src)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.success(), has_link, "{stderr}");
    if !has_link {
        assert!(stderr.contains("cannot find -lcudart"), "{stderr}");
    }
}
