//! Build readiness against NVIDIA's real compiler (PyPI's `nvidia-cuda-nvcc`, from
//! `CUDOCTOR_NVCC` or `.venv-ci`, `scripts/ci/install-cuda-tools.sh`) and the host's real gcc:
//! the range cudoctor reads from the toolkit's own `crt/host_config.h` is the one nvcc enforces,
//! and the message TK013 predicts is the one nvcc prints.
//!
//! The always-run host compiler test needs no gcc past the header's range (Debian 12 and CI
//! have none): the refused compiler is the real gcc under the name and `__GNUC__` of the first
//! major past the range (cudoctor reads the version from the name, nvcc's header from the
//! macro); the accepted case is the real gcc as it is. The real refusal, NVIDIA's nvcc 13.1
//! against Debian sid's gcc 16 in a real torch build, is
//! `a_gcc_newer_than_the_pip_nvcc_accepts_is_refused_as_predicted_and_the_fix_builds`
//! (`scripts/realenv/newer-gcc-root.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const KERNEL: &str = "__global__ void add_one(float* x) { x[threadIdx.x] += 1.0f; }\n";

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
    let Some(nvcc) = cudoctor_testkit::ci_nvcc(test) else {
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

/// The torch environment of the real-env tier (`stock-current`, made by
/// `scripts/realenv/make-envs.sh`), or the one `CUDOCTOR_BUILD_ENV` names.
fn torch_env() -> Option<PathBuf> {
    let env = std::env::var_os("CUDOCTOR_BUILD_ENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let base = std::env::var_os("CUDOCTOR_REALENV_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    std::env::var_os("XDG_CACHE_HOME")
                        .map(PathBuf::from)
                        .unwrap_or_else(|| {
                            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                                .join(".cache")
                        })
                        .join("cudoctor-realenv")
                });
            base.join("stock-current")
        });
    if env.join("bin/python").exists() {
        return Some(env);
    }
    cudoctor_testkit::skip_missing_input(
        &format!(
            "no torch environment at {} (scripts/realenv/make-envs.sh, or CUDOCTOR_BUILD_ENV)",
            env.display()
        ),
        "CUDOCTOR_REQUIRE_REAL_ENVS",
    );
    None
}

/// `site-packages` of a venv.
fn site_packages(env: &Path) -> PathBuf {
    std::fs::read_dir(env.join("lib"))
        .expect("lib")
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .expect("site-packages")
}

/// The version of an installed distribution, from its dist-info folder's name.
fn installed(site: &Path, dist: &str) -> Option<String> {
    let prefix = format!("{}-", dist.replace('-', "_"));
    std::fs::read_dir(site).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        name.strip_prefix(&prefix)?
            .strip_suffix(".dist-info")
            .map(str::to_string)
    })
}

/// `check --python ENV` with CUDA_HOME and PATH as given: (code, severity, fix commands).
fn build_findings(env: &Path, home: &Path, path: &str) -> Vec<(String, String, Vec<String>)> {
    build_findings_with(env, home, path, &[])
}

/// [`build_findings`] with more variables (`CC`, `NVCC_APPEND_FLAGS`...).
fn build_findings_with(
    env: &Path,
    home: &Path,
    path: &str,
    vars: &[(&str, &str)],
) -> Vec<(String, String, Vec<String>)> {
    let v = check_json(env, home, path, vars);
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"].as_str().is_some_and(|c| c.starts_with("TK")))
        .map(|f| {
            let fix = f["fix"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|s| s["shell"].as_str().or(s["command"].as_str()))
                .map(str::to_string)
                .collect();
            (
                f["code"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
                fix,
            )
        })
        .collect()
}

fn codes(f: &[(String, String, Vec<String>)]) -> Vec<String> {
    f.iter().map(|(c, s, _)| format!("{c} {s}")).collect()
}

/// Runs a fix cudoctor printed, as a user pastes it.
fn apply(cmd: &str) {
    let o = Command::new("sh").args(["-c", cmd]).output().expect("sh");
    assert!(
        o.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// torch's JIT build of a CUDA extension (load_inline, sm_80), as the issue's users run it:
/// (success, output).
fn jit_build(env: &Path, home: &Path, path: &str, ext_dir: &Path) -> (bool, String) {
    jit_build_with(env, home, path, ext_dir, &[])
}

/// [`jit_build`] with more variables (`CC`/`CXX`, `NVCC_APPEND_FLAGS`...).
fn jit_build_with(
    env: &Path,
    home: &Path,
    path: &str,
    ext_dir: &Path,
    vars: &[(&str, &str)],
) -> (bool, String) {
    let script = r#"
import torch
from torch.utils.cpp_extension import load_inline
src = '__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\nvoid launch(torch::Tensor x) { k<<<1, 32>>>(x.data_ptr<float>()); }\n'
m = load_inline(name="cudoctor_probe", cpp_sources="void launch(torch::Tensor x);", cuda_sources=src, functions=["launch"])
print("BUILT", m.__file__)
"#;
    let o = Command::new(env.join("bin/python"))
        .args(["-c", script])
        .env("CUDA_HOME", home)
        .env("PATH", path)
        .env("TORCH_CUDA_ARCH_LIST", "8.0")
        .env("TORCH_EXTENSIONS_DIR", ext_dir)
        .env("MAX_JOBS", "2")
        .env_remove("CC")
        .env_remove("CXX")
        .env_remove("NVCC_APPEND_FLAGS")
        .env_remove("NVCC_PREPEND_FLAGS")
        .envs(vars.iter().copied())
        .output()
        .expect("run python");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success() && text.contains("BUILT"), text)
}

/// PATH without the environment: the system's directories.
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Whether the real builds are asked for (`CUDOCTOR_REAL_BUILDS=1`); a reported skip of
/// `what` when not.
fn real_builds(what: &str) -> bool {
    let on = std::env::var("CUDOCTOR_REAL_BUILDS").as_deref() == Ok("1");
    if !on {
        cudoctor_testkit::skip_opt_in(what, "CUDOCTOR_REAL_BUILDS=1");
    }
    on
}

/// Whether uv, which makes the test's environments, is here; a reported skip when not.
fn has_uv(test: &str) -> bool {
    let here = Command::new("uv").arg("--version").output().is_ok();
    if !here {
        cudoctor_testkit::skip_missing_tool(test, "uv");
    }
    here
}

/// The version of the CUDA 13 pip runtime (`nvidia-cuda-runtime`) of a torch environment; a
/// reported skip when it has none.
fn cuda_runtime(src_env: &Path) -> Option<String> {
    let runtime = installed(&site_packages(src_env), "nvidia-cuda-runtime");
    if runtime.is_none() {
        cudoctor_testkit::skip_missing_input(
            &format!(
                "no nvidia-cuda-runtime (CUDA 13 pip layout) in {}",
                src_env.display()
            ),
            "CUDOCTOR_REQUIRE_REAL_ENVS",
        );
    }
    runtime
}

/// The real torch environment, with uv to copy it and its CUDA 13 pip runtime's version; a
/// reported skip for the first that is missing.
fn torch_env_and_runtime(test: &str) -> Option<(PathBuf, String)> {
    let src_env = torch_env()?;
    if !has_uv(test) {
        return None;
    }
    let runtime = cuda_runtime(&src_env)?;
    Some((src_env, runtime))
}

/// `uv pip install` of `wheels` into `env`.
fn uv_install(env: &Path, wheels: &[String]) {
    let o = Command::new("uv")
        .args(["pip", "install", "--quiet", "--python"])
        .arg(env.join("bin/python"))
        .args(wheels)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "uv pip install {wheels:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A torch environment made for one build test, in a folder beside the real one (removed with
/// it), with what its builds are run with.
struct BuildEnv {
    /// The folder holding the environment and the builds' output.
    dir: tempfile::TempDir,
    env: PathBuf,
    /// CUDA_HOME: the pip toolkit (`site-packages/nvidia/cu13`).
    home: PathBuf,
    /// PATH with the environment's bin/ before the system's directories.
    path: String,
    /// TORCH_EXTENSIONS_DIR of the builds.
    ext: PathBuf,
}

impl BuildEnv {
    fn new(dir: tempfile::TempDir, env: PathBuf) -> Self {
        let home = site_packages(&env).join("nvidia/cu13");
        let path = format!("{}:{SYSTEM_PATH}", env.join("bin").display());
        let ext = dir.path().join("torch_extensions");
        BuildEnv {
            dir,
            env,
            home,
            path,
            ext,
        }
    }

    /// The `libcudart.so` link the pip runtime lacks (TK012's fix), made.
    fn with_cudart_link(self) -> Self {
        let lib = self.home.join("lib");
        if !lib.join("libcudart.so").exists() {
            std::os::unix::fs::symlink("libcudart.so.13", lib.join("libcudart.so")).unwrap();
        }
        self
    }
}

/// The CUDA release of a wheel's version ("13.0" of "13.0.96"): NVIDIA numbers each piece's
/// patch on its own.
fn release_of(version: &str) -> String {
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// NVIDIA's pip compiler of CUDA `release` as requirements: nvcc, its crt headers, NVVM.
fn nvcc_wheels(release: &str) -> Vec<String> {
    ["nvidia-cuda-nvcc", "nvidia-cuda-crt", "nvidia-nvvm"]
        .iter()
        .map(|p| format!("{p}=={release}.*"))
        .collect()
}

/// NVIDIA's pip compiler of torch's own CUDA release in a copy (hard links) of a real torch
/// environment without ninja: check predicts the missing ninja (TK014) and the missing
/// `libcudart.so` link (TK012), nothing else of the build layer; each printed fix, applied in
/// turn, clears its finding. With `CUDOCTOR_REAL_BUILDS=1` each step is also built for real
/// with torch's `load_inline` (minutes): the build fails as predicted, then succeeds.
#[test]
fn a_torch_env_without_ninja_and_the_cudart_link_is_predicted_and_fixed_as_the_build_says() {
    let test = "build readiness of a real torch env";
    let Some((src_env, runtime)) = torch_env_and_runtime(test) else {
        return;
    };
    if installed(&site_packages(&src_env), "ninja").is_some() {
        cudoctor_testkit::skip_missing_input(
            &format!("{} already has ninja", src_env.display()),
            "CUDOCTOR_REQUIRE_REAL_ENVS",
        );
        return;
    }
    // The runtime's release (NVIDIA numbers each piece's patch on its own), in a copy of the
    // environment beside it (hard links: the files pip replaces are unlinked first, the
    // original stays as it was).
    let pieces = nvcc_wheels(&release_of(&runtime));
    let BuildEnv {
        dir,
        env,
        home,
        path: env_path,
        ext,
    } = env_copy(&src_env, &pieces);
    assert!(home.join("bin/nvcc").is_file());
    let system_path = SYSTEM_PATH;
    let builds = real_builds(&format!("{test}: the real load_inline builds"));

    // 1. No ninja, no libcudart.so.
    let f = build_findings(&env, &home, system_path);
    assert_eq!(codes(&f), ["TK012 error", "TK014 info"], "{f:?}");
    if builds {
        let (ok, out) = jit_build(&env, &home, system_path, &ext);
        assert!(!ok);
        assert!(
            out.contains("Ninja is required to load C++ extensions"),
            "{out}"
        );
    }
    // TK014's fix: the env's installer installs the ninja wheel.
    let install = f[1].2.first().expect("TK014's install line").clone();
    assert!(install.ends_with(" ninja"), "{install}");
    apply(&install);
    // 2. The wheel's program is in the env's bin/, PATH does not lead there: a note.
    let f = build_findings(&env, &home, system_path);
    assert_eq!(codes(&f), ["TK012 error", "TK014 info"], "{f:?}");
    assert!(f[1].2[0].starts_with("export PATH="), "{f:?}");
    if builds {
        let (ok, out) = jit_build(&env, &home, system_path, &ext);
        assert!(!ok && out.contains("Ninja is required"), "{out}");
    }
    // 3. The environment's bin/ on PATH: ninja found; the link of -lcudart is what is left.
    let f = build_findings(&env, &home, &env_path);
    assert_eq!(codes(&f), ["TK012 error"], "{f:?}");
    if builds {
        let (ok, out) = jit_build(&env, &home, &env_path, &ext);
        assert!(!ok);
        assert!(out.contains("cannot find -lcudart"), "{out}");
    }
    apply(f[0].2.first().expect("TK012's ln -s"));
    // 4. Ready: nothing predicted, and the build links and loads.
    let f = build_findings(&env, &home, &env_path);
    assert!(f.is_empty(), "{f:?}");
    if builds {
        let (ok, out) = jit_build(&env, &home, &env_path, &ext);
        assert!(ok, "{out}");
    }
    // 5. Every compiler piece of another minor release of torch's major (as `pip install
    // nvidia-cuda-nvcc` of the newest one with its pieces leaves it): torch's warning, noted.
    let other = "13.5.37";
    if !runtime.starts_with("13.") || runtime.starts_with("13.5.") {
        return;
    }
    let pieces: Vec<String> = [
        "nvidia-cuda-nvcc",
        "nvidia-cuda-crt",
        "nvidia-nvvm",
        "nvidia-cuda-runtime",
    ]
    .iter()
    .map(|p| format!("{p}=={other}"))
    .collect();
    uv_install(&env, &pieces);
    let f = build_findings(&env, &home, &env_path);
    assert_eq!(codes(&f), ["TK015 info"], "{f:?}");
    if builds {
        // torch compares the versions in BuildExtension (setup.py / pip builds) only.
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(
            project.join("probe.cu"),
            "#include <torch/extension.h>\n__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\nvoid launch(torch::Tensor x) { k<<<1, 32>>>(x.data_ptr<float>()); }\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"launch\", &launch); }\n",
        )
        .unwrap();
        std::fs::write(
            project.join("setup.py"),
            "from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension\nsetup(name='probe', ext_modules=[CUDAExtension('probe', ['probe.cu'])], cmdclass={'build_ext': BuildExtension})\n",
        )
        .unwrap();
        let o = Command::new(env.join("bin/python"))
            .args(["setup.py", "build_ext", "--build-lib", "out"])
            .current_dir(&project)
            .env("CUDA_HOME", &home)
            .env("PATH", &env_path)
            .env("TORCH_CUDA_ARCH_LIST", "8.0")
            .env("MAX_JOBS", "2")
            .env_remove("CC")
            .output()
            .unwrap();
        let out = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.status.success(), "{out}");
        let torch_cuda = release_of(&runtime);
        assert!(
            out.contains(&format!("The detected CUDA version (13.5) has a minor version mismatch with the version that was used to compile PyTorch ({torch_cuda}). Most likely this shouldn't be a problem.")),
            "{out}"
        );
    }
}

/// A copy (hard links) of the real torch environment beside it, with `wheels` installed by uv.
fn env_copy(src_env: &Path, wheels: &[String]) -> BuildEnv {
    let dir = tempfile::tempdir_in(src_env.parent().unwrap()).expect("temp dir beside the env");
    let env = dir.path().join("env");
    let st = Command::new("cp")
        .arg("-al")
        .arg(src_env)
        .arg(&env)
        .status()
        .unwrap();
    assert!(st.success(), "cp -al");
    uv_install(&env, wheels);
    BuildEnv::new(dir, env)
}

/// NVIDIA's pip compiler of CUDA 13.1 (its `crt/host_config.h` accepts gcc up to 15) on a
/// machine whose gcc is newer (Debian sid's gcc 16: `scripts/realenv/newer-gcc-root.sh` makes
/// such a root and runs this test there), in a copy of a real torch environment: check predicts
/// nvcc's refusal (TK013) with nvcc's own message, torch's `load_inline` build stops with that
/// message, and the fix check prints (`export CC=gcc-15 CXX=g++-15`) makes the build pass. The
/// override it names last (`NVCC_APPEND_FLAGS=-allow-unsupported-compiler`, "at your own
/// risk") gets past the header and fails in gcc 16's C++ headers.
#[test]
fn a_gcc_newer_than_the_pip_nvcc_accepts_is_refused_as_predicted_and_the_fix_builds() {
    let test = "nvcc 13.1 refusing the host's newer gcc";
    if !real_builds(test) {
        return;
    }
    let system_path = SYSTEM_PATH;
    let Some(major) = gcc_major_of("gcc", system_path) else {
        cudoctor_testkit::skip_missing_tool(test, "no gcc on PATH");
        return;
    };
    if major <= 15 {
        cudoctor_testkit::skip_missing_input(
            &format!(
                "gcc {major} on PATH is within CUDA 13.1's range (up to 15): run it where gcc is 16 or newer (scripts/realenv/newer-gcc-root.sh)"
            ),
            "CUDOCTOR_REQUIRE_NEWER_GCC",
        );
        return;
    }
    let Some(src_env) = torch_env() else {
        return;
    };
    if !has_uv(test) {
        return;
    }
    // Every piece of CUDA 13.1 (TK011 stays silent), ninja, the cudart link (TK012 silent).
    let wheels: Vec<String> = [
        "nvidia-cuda-nvcc",
        "nvidia-cuda-crt",
        "nvidia-nvvm",
        "nvidia-cuda-runtime",
    ]
    .iter()
    .map(|p| format!("{p}==13.1.*"))
    .chain(std::iter::once("ninja".to_string()))
    .collect();
    let BuildEnv {
        dir: _dir,
        env,
        home,
        path: env_path,
        ext,
    } = env_copy(&src_env, &wheels).with_cudart_link();
    let header = std::fs::read_to_string(home.join("include/crt/host_config.h")).unwrap();
    assert!(header.contains("#if __GNUC__ > 15"), "CUDA 13.1's guard");

    // 1. gcc on PATH: refused, as predicted.
    let f = build_findings(&env, &home, &env_path);
    let tk013 = f
        .iter()
        .find(|(c, ..)| c == "TK013")
        .unwrap_or_else(|| panic!("no TK013: {f:?}"));
    assert_eq!(tk013.1, "warning");
    let v = check_json(&env, &home, &env_path, &[]);
    let predicted = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "TK013")
        .flat_map(|f| f["evidence"].as_array().unwrap())
        .filter_map(Value::as_str)
        .find_map(|e| e.strip_prefix("predicted, for every .cu file: \""))
        .and_then(|e| e.strip_suffix('"'))
        .expect("the predicted message")
        .to_string();
    assert_eq!(
        predicted,
        "crt/host_config.h:137:2: error: #error -- unsupported GNU version! gcc versions later than 15 are not supported!"
    );
    let (ok, out) = jit_build(&env, &home, &env_path, &ext);
    assert!(!ok);
    assert!(out.contains(&predicted), "predicted {predicted:?}:\n{out}");

    // 2. The fix printed: gcc 15 as CC (and g++ 15 as CXX).
    let export = tk013
        .2
        .iter()
        .find(|s| s.starts_with("export CC="))
        .expect("the CC line");
    assert!(
        export.starts_with("export CC=gcc-15 CXX=g++-15"),
        "{export}"
    );
    if gcc_major_of("gcc-15", system_path).is_none() {
        cudoctor_testkit::skip_missing_tool(
            test,
            "gcc-15 (the fix's compiler: apt-get install g++-15)",
        );
        return;
    }
    let fixed = [("CC", "gcc-15"), ("CXX", "g++-15")];
    let f = build_findings_with(&env, &home, &env_path, &fixed);
    assert!(f.iter().all(|(c, ..)| c != "TK013"), "{f:?}");
    let (ok, out) = jit_build_with(&env, &home, &env_path, &ext, &fixed);
    assert!(ok, "{out}");

    // 3. The override the finding names last, "at your own risk", with gcc 16 as it is: the
    // header's check is off (no prediction, no #error), and nvcc's front end of CUDA 13.1 then
    // stops in gcc 16's own C++ headers. The fix is the compiler, not the override.
    let _ = std::fs::remove_dir_all(&ext);
    let over = [("NVCC_APPEND_FLAGS", "-allow-unsupported-compiler")];
    let f = build_findings_with(&env, &home, &env_path, &over);
    assert!(f.iter().all(|(c, ..)| c != "TK013"), "{f:?}");
    let (ok, out) = jit_build_with(&env, &home, &env_path, &ext, &over);
    assert!(!ok, "{out}");
    assert!(!out.contains("unsupported GNU version"), "{out}");
    assert!(
        out.contains("errors detected in the compilation of") && out.contains("/c++/16/"),
        "{out}"
    );
}

/// `check --python ENV --format json` as [`build_findings_with`] runs it.
fn check_json(env: &Path, home: &Path, path: &str, vars: &[(&str, &str)]) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--format", "json", "--python"])
        .arg(env)
        .env("CUDA_HOME", home)
        .env("PATH", path)
        .env("HOME", dir.path())
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .env_remove("CC")
        .env_remove("CXX")
        .env_remove("NVCC_APPEND_FLAGS")
        .env_remove("NVCC_PREPEND_FLAGS")
        .envs(vars.iter().copied())
        .current_dir(dir.path())
        .output()
        .expect("run cudoctor");
    serde_json::from_slice(&out.stdout).expect("check's JSON")
}

/// The major of a named gcc on `path`.
fn gcc_major_of(name: &str, path: &str) -> Option<u32> {
    let o = Command::new(name)
        .arg("-dumpversion")
        .env("PATH", path)
        .output()
        .ok()?;
    o.status.success().then_some(())?;
    String::from_utf8_lossy(&o.stdout)
        .trim()
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// `check`'s finding of `code` in `env`: its evidence line starting with `predicted`, cut to
/// the first quoted message, and its first shell fix.
fn predicted_of(v: &Value, code: &str) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == code)
        .flat_map(|f| f["evidence"].as_array().unwrap())
        .filter_map(Value::as_str)
        .filter(|e| e.starts_with("predicted"))
        .filter_map(|e| e.split('"').nth(1))
        .map(str::to_string)
        .collect()
}

/// A copy of a real torch environment with NVIDIA's pip compiler of torch's release, ninja and
/// the cudart link (nothing of the build layer left to say), then broken two ways people meet:
/// no C/C++ compiler on PATH (a slim image: TK016) and the pip toolkit without the CCCL wheel
/// (TK017). Each is predicted with the message the real `load_inline` build prints, and each
/// printed fix makes the build pass. The compilers are taken away by leaving the directories
/// that hold them (Debian's g++ package's /usr/bin) out of PATH, the fix puts them back.
#[test]
fn no_compiler_and_no_cccl_are_predicted_as_the_build_fails_and_the_fixes_build() {
    let test = "no compiler, no CCCL";
    if !real_builds(test) {
        return;
    }
    let Some((src_env, runtime)) = torch_env_and_runtime(test) else {
        return;
    };
    let release = release_of(&runtime);
    let mut wheels = nvcc_wheels(&release);
    wheels.push("ninja".to_string());
    let BuildEnv {
        dir: _dir,
        env,
        home,
        path: env_path,
        ext,
    } = env_copy(&src_env, &wheels).with_cudart_link();
    let env_bin = env.join("bin").display().to_string();
    if gcc_major_of("gcc", SYSTEM_PATH).is_none() || gcc_major_of("c++", SYSTEM_PATH).is_none() {
        cudoctor_testkit::skip_missing_tool(test, "gcc and c++ in /usr/bin");
        return;
    }

    // 1. No compiler on PATH.
    let v = check_json(&env, &home, &env_bin, &[]);
    let tk: Vec<String> = findings_tk(&v);
    assert_eq!(tk, ["TK016 warning"], "{:?}", v["findings"]);
    let predicted = predicted_of(&v, "TK016");
    assert_eq!(
        predicted,
        [
            "gcc: No such file or directory",
            "/bin/sh: 1: c++: not found"
        ],
        "{predicted:?}"
    );
    let (ok, out) = jit_build(&env, &home, &env_bin, &ext);
    assert!(!ok);
    for p in &predicted {
        assert!(out.contains(p.as_str()), "predicted {p:?}:\n{out}");
    }
    assert!(out.contains("nvcc fatal   : Failed to preprocess host compiler properties."));

    // 2. The compilers back (the fix's `apt-get install g++` puts them in /usr/bin); the CCCL
    // wheel taken away.
    let o = Command::new("uv")
        .args(["pip", "uninstall", "--quiet", "--python"])
        .arg(env.join("bin/python"))
        .arg("nvidia-cuda-cccl")
        .output()
        .unwrap();
    if !o.status.success() {
        cudoctor_testkit::skip_missing_input(
            &format!("no nvidia-cuda-cccl in {} to take away", src_env.display()),
            "CUDOCTOR_REQUIRE_REAL_ENVS",
        );
        return;
    }
    let v = check_json(&env, &home, &env_path, &[]);
    assert_eq!(findings_tk(&v), ["TK017 warning"], "{:?}", v["findings"]);
    let predicted = predicted_of(&v, "TK017");
    let first = predicted.first().expect("TK017's prediction").clone();
    assert!(first.starts_with("cuda_fp16.h:"), "{first}");
    let _ = std::fs::remove_dir_all(&ext);
    let (ok, out) = jit_build(&env, &home, &env_path, &ext);
    assert!(!ok);
    assert!(out.contains(&first), "predicted {first:?}:\n{out}");

    // 3. TK017's fix as printed (the CCCL wheel of nvcc's release): nothing left, and the
    // build links and loads.
    let fix = build_findings(&env, &home, &env_path)
        .into_iter()
        .find(|(c, ..)| c == "TK017")
        .and_then(|(.., fix)| fix.into_iter().next())
        .expect("TK017's install line");
    assert!(
        fix.ends_with(&format!("'nvidia-cuda-cccl=={release}.*'")),
        "{fix}"
    );
    apply(&fix);
    let v = check_json(&env, &home, &env_path, &[]);
    assert!(findings_tk(&v).is_empty(), "{:?}", v["findings"]);
    let _ = std::fs::remove_dir_all(&ext);
    let (ok, out) = jit_build(&env, &home, &env_path, &ext);
    assert!(ok, "{out}");
}

/// The build layer's findings of a check: `CODE severity`, TK015 (a note the copy's pieces
/// may bring) left out.
fn findings_tk(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"].as_str().is_some_and(|c| c.starts_with("TK")) && f["code"] != "TK015")
        .map(|f| {
            format!(
                "{} {}",
                f["code"].as_str().unwrap(),
                f["severity"].as_str().unwrap()
            )
        })
        .collect()
}

/// The interpreter of a Debian root without its C headers: `/usr/bin/python3.11` beside no
/// `/usr/include/python3.11/Python.h`, with apt to install them (the state
/// `scripts/realenv/no-python-headers-root.sh` makes and runs
/// [`a_debian_python_without_its_dev_package_fails_as_predicted_and_the_printed_package_builds`]
/// in).
fn headerless_debian_python() -> Option<PathBuf> {
    let python = PathBuf::from("/usr/bin/python3.11");
    let ready = python.is_file()
        && !Path::new("/usr/include/python3.11/Python.h").exists()
        && Path::new("/var/lib/dpkg/info/python3.11-minimal.list").is_file()
        && Path::new("/usr/bin/apt-get").is_file();
    if ready {
        return Some(python);
    }
    cudoctor_testkit::skip_missing_input(
        "no Debian python3.11 without python3.11-dev here: run it in the root scripts/realenv/no-python-headers-root.sh makes",
        "CUDOCTOR_REQUIRE_NO_PYTHON_HEADERS",
    );
    None
}

/// A venv made by uv from `python` (the base whose headers are judged) holding the packages of
/// the real torch environment `src_env` (hard links of its site-packages entries), with
/// NVIDIA's pip compiler of torch's release, ninja and the cudart link: nothing of the build
/// layer but the headers left to say.
fn venv_of(python: &Path, src_env: &Path, release: &str) -> BuildEnv {
    let dir = tempfile::tempdir_in(src_env.parent().unwrap()).expect("temp dir beside the env");
    let env = dir.path().join("env");
    let o = Command::new("uv")
        .args(["venv", "--quiet", "--python"])
        .arg(python)
        .arg(&env)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "uv venv: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let src_site = site_packages(src_env);
    let site = site_packages(&env);
    for entry in std::fs::read_dir(&src_site).unwrap().flatten() {
        let to = site.join(entry.file_name());
        if to.exists() {
            continue;
        }
        let st = Command::new("cp")
            .arg("-al")
            .arg(entry.path())
            .arg(&to)
            .status()
            .unwrap();
        assert!(st.success(), "cp -al {}", entry.path().display());
    }
    let mut wheels = nvcc_wheels(release);
    wheels.push("ninja".to_string());
    uv_install(&env, &wheels);
    BuildEnv::new(dir, env).with_cudart_link()
}

/// Debian's Python without `python3.11-dev` (a slim image's, a fresh install's), in a venv
/// holding a real CUDA torch and NVIDIA's pip compiler: check predicts the missing `Python.h`
/// (TK018) and nothing else of the build layer, naming the package of the interpreter's own
/// minor; torch's `load_inline` build stops with the predicted message; the printed
/// `apt-get install python3.11-dev`, run, clears the finding and the same build links and
/// loads. Runs in the Debian 12 root `scripts/realenv/no-python-headers-root.sh` makes (as
/// root: apt installs into it), skipped elsewhere.
#[test]
fn a_debian_python_without_its_dev_package_fails_as_predicted_and_the_printed_package_builds() {
    let test = "Debian's python3.11 without python3.11-dev";
    if !real_builds(test) {
        return;
    }
    let Some(python) = headerless_debian_python() else {
        return;
    };
    let Some((src_env, runtime)) = torch_env_and_runtime(test) else {
        return;
    };
    if !src_env.join("lib/python3.11").is_dir() {
        cudoctor_testkit::skip_missing_input(
            &format!("{} is not a Python 3.11 environment", src_env.display()),
            "CUDOCTOR_REQUIRE_REAL_ENVS",
        );
        return;
    }
    let BuildEnv {
        dir: _dir,
        env,
        home,
        path: env_path,
        ext,
    } = venv_of(&python, &src_env, &release_of(&runtime));

    // 1. Predicted: no Python.h, Debian's package of 3.11 as the fix.
    let v = check_json(&env, &home, &env_path, &[]);
    assert_eq!(findings_tk(&v), ["TK018 warning"], "{:?}", v["findings"]);
    let predicted = predicted_of(&v, "TK018");
    assert_eq!(
        predicted,
        ["fatal error: Python.h: No such file or directory"]
    );
    let fix = build_findings(&env, &home, &env_path)
        .into_iter()
        .find(|(c, ..)| c == "TK018")
        .and_then(|(.., fix)| fix.into_iter().next())
        .expect("TK018's install line");
    assert_eq!(fix, "apt-get install python3.11-dev");
    eprintln!("check: {}", findings(&v, "TK018")[0]["title"]);
    let (ok, out) = jit_build(&env, &home, &env_path, &ext);
    assert!(!ok);
    assert!(
        out.contains(&predicted[0]),
        "predicted {:?}:\n{out}",
        predicted[0]
    );
    // The build's own line, for the record (docs/build-readiness.md).
    for line in out.lines().filter(|l| l.contains(&predicted[0])).take(2) {
        eprintln!("build: {line}");
    }

    // 2. The printed fix, run (answering apt's question): nothing left, the build passes.
    apply(&fix.replacen("apt-get install", "apt-get install -y -q", 1));
    let v = check_json(&env, &home, &env_path, &[]);
    assert!(findings_tk(&v).is_empty(), "{:?}", v["findings"]);
    let _ = std::fs::remove_dir_all(&ext);
    let (ok, out) = jit_build(&env, &home, &env_path, &ext);
    assert!(ok, "{out}");
    let built = out.lines().find(|l| l.starts_with("BUILT")).unwrap_or("");
    eprintln!("after the fix: {built}");
}

/// The environments this machine really builds with: check records the include directory
/// each interpreter itself reports and whether it holds Python.h, and says nothing where it
/// does: the real-env tier's torch environments (the pip compiler's `nvcc-cu13`
/// with CUDA_HOME at its toolkit, where an extension build is plausible) and the CI's venvs
/// (`.venv-ci`, the observer's CPU torch); here every one has its headers.
#[test]
fn real_envs_with_their_headers_record_them_and_say_nothing() {
    let Some(stock) = torch_env() else {
        return;
    };
    let cache = stock.parent().unwrap().to_path_buf();
    let mut envs: Vec<PathBuf> = ["stock-current", "stock-cu126", "nvcc-cu13"]
        .iter()
        .map(|n| cache.join(n))
        .filter(|e| e.join("bin/python").exists())
        .collect();
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    envs.extend(
        [
            cudoctor_testkit::repo_root().join(".venv-ci"),
            home.join(".cache/cudoctor-ci/torch-cpu"),
            home.join(".cache/cudoctor-ci/cuda-tools"),
        ]
        .into_iter()
        .filter(|e| e.join("bin/python").exists()),
    );
    // As the snapshot records a prefix: the repository's `..` resolved.
    let envs: Vec<PathBuf> = envs
        .into_iter()
        .map(|e| std::fs::canonicalize(&e).unwrap_or(e))
        .collect();
    for env in &envs {
        let toolkit = site_packages(env).join("nvidia/cu13");
        let dir = tempfile::tempdir().unwrap();
        let saved = dir.path().join("snap.json");
        let o = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
            .args(["check", "--format", "json", "--python"])
            .arg(env)
            .arg("--save")
            .arg(&saved)
            .env("CUDA_HOME", &toolkit)
            .env("HOME", dir.path())
            .env_remove("VIRTUAL_ENV")
            .env_remove("CONDA_PREFIX")
            .current_dir(dir.path())
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).expect("check's JSON");
        let snap: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
        let recorded = snap["python_envs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| Path::new(e["prefix"].as_str().unwrap()) == env.as_path())
            .map(|e| e["headers"].clone())
            .unwrap_or_else(|| panic!("{} not read", env.display()));
        // The interpreter's own answer (run here by the test, never by check).
        let reported = Command::new(env.join("bin/python"))
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_path('include', scheme='posix_prefix'))",
            ])
            .output()
            .unwrap();
        let reported = String::from_utf8_lossy(&reported.stdout).trim().to_string();
        assert_eq!(
            recorded["include_dir"].as_str().unwrap(),
            reported,
            "{}",
            env.display()
        );
        let there = Path::new(&reported).join("Python.h").is_file();
        assert_eq!(recorded["python_h"], there, "{}: {recorded}", env.display());
        if there {
            assert!(
                findings(&v, "TK018").is_empty(),
                "{}: {:?}",
                env.display(),
                v["findings"]
            );
        } else {
            eprintln!(
                "{}: its base Python has no headers ({reported}): TK018 is right there",
                env.display()
            );
        }
    }
    assert!(!envs.is_empty());
}
