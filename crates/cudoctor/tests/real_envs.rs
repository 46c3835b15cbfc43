//! The real-env tier: cudoctor against environments installed from the package index
//! (scripts/realenv/make-envs.sh), with ground truth that does not come from cudoctor:
//! `/proc/self/maps` of the env's own interpreter after a real `import torch, torchvision,
//! torchaudio`, and its `sys.path`.
//!
//! An env that is not there is reported as SKIPPED; with CUDOCTOR_REQUIRE_REAL_ENVS=1 (CI) it
//! is a failure. CUDOCTOR_REALENV_FULL=1 requires the extended envs too
//! (`scripts/realenv/make-envs.sh --full`).
//!
//! Fixes are tested two ways. Each broken env's one root cause has its printed commands checked
//! without downloading (`validate_fix`: every `name==version` is installed at that version, with
//! the missing file in its RECORD, or resolves offline from the installer's cache). The
//! `the_fix_of_*` tests run them: a hard-link copy of the env under the cache directory, the
//! commands run offline (UV_OFFLINE=1, wheels from uv's cache), then `check` again: the finding
//! is gone and no new one appeared.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod support;

fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CUDOCTOR_REALENV_DIR") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    base.join("cudoctor-realenv")
}

/// The envs `scripts/realenv/make-envs.sh` builds by default (and .ci/run requires); the rest
/// come with `--full` and are required with CUDOCTOR_REALENV_FULL=1.
const CORE: [&str; 4] = [
    "stock-current",
    "stock-cu126",
    "nvcc-cu13",
    "deleted-wheel-lib",
];

/// The env's interpreter, or None (with the SKIPPED line) when the env was not built.
fn real_env(name: &str) -> Option<PathBuf> {
    let python = cache_dir().join(name).join("bin/python");
    if python.exists() && cache_dir().join(name).join(".cudoctor-spec").exists() {
        return Some(python);
    }
    let msg = format!(
        "real env {name} not found under {} (run scripts/realenv/make-envs.sh{})",
        cache_dir().display(),
        if CORE.contains(&name) { "" } else { " --full" }
    );
    let var = if CORE.contains(&name) {
        "CUDOCTOR_REQUIRE_REAL_ENVS"
    } else {
        "CUDOCTOR_REALENV_FULL"
    };
    cudoctor_testkit::skip_missing_input(&msg, var);
    None
}

/// Files of torch and its companions, and CUDA libraries wherever they come from: the set
/// whose loading cudoctor claims to predict. (Python modules of other packages, numpy's or
/// the interpreter's own libraries are outside it.)
fn of_interest(path: &str) -> bool {
    const TORCH_FAMILY: [&str; 6] = [
        "torch/",
        "torchvision/",
        "torchvision.libs/",
        "torchaudio/",
        "torchaudio.libs/",
        "nvidia/",
    ];
    const CUDA_PREFIXES: [&str; 17] = [
        "libcuda.",
        "libcudart",
        "libcudnn",
        "libcublas",
        "libnccl",
        "libnvrtc",
        "libnvJitLink",
        "libcusparse",
        "libcufft",
        "libcurand",
        "libcusolver",
        "libcupti",
        "libnvidia-",
        "libnvToolsExt",
        "libcufile",
        "libnvshmem",
        "libnvjpeg",
    ];
    let in_family = path
        .split_once("/site-packages/")
        .is_some_and(|(_, rel)| TORCH_FAMILY.iter().any(|f| rel.starts_with(f)));
    let name = path.rsplit('/').next().unwrap_or(path);
    in_family || CUDA_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// What the real process maps after `imports`.
fn real_maps(python: &Path, imports: &str, llp: Option<&Path>) -> BTreeSet<String> {
    let vars: Vec<(&str, String)> = llp
        .map(|d| ("LD_LIBRARY_PATH", d.to_string_lossy().into_owned()))
        .into_iter()
        .collect();
    real_maps_with(python, "-I", imports, &vars)
}

/// The same with the interpreter's `flag` (`-I`: isolated; `-E`: the user site kept) and
/// these variables set.
fn real_maps_with(
    python: &Path,
    flag: &str,
    imports: &str,
    vars: &[(&str, String)],
) -> BTreeSet<String> {
    let script = format!(
        "import {imports}\nfor l in open('/proc/self/maps'):\n    f = l.split()\n    if len(f) >= 6 and '.so' in f[-1]: print(f[-1])\n"
    );
    let mut cmd = Command::new(python);
    cmd.args([flag, "-c", &script]);
    let out = with_only(cmd, vars)
        .output()
        .expect("the env's python runs");
    assert!(
        out.status.success(),
        "import failed in {}: {}",
        python.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| of_interest(l))
        .map(str::to_string)
        .collect()
}

/// `cudoctor check --format json` of one env. Shadow copies on LD_LIBRARY_PATH are a breakage
/// of their own (cuDNN from two installs, LIB007, when they hold a piece of it), beside the
/// env's.
fn check_json(python: &Path, llp: Option<&Path>) -> Value {
    let vars: Vec<(&str, String)> = llp
        .map(|d| ("LD_LIBRARY_PATH", d.to_string_lossy().into_owned()))
        .into_iter()
        .collect();
    check_json_of(python, &vars, 1 + usize::from(llp.is_some()))
}

/// Variables of the shell running the tests that would change what is judged; a test sets the
/// ones it is about.
const SETTINGS: [&str; 6] = [
    "LD_LIBRARY_PATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CUDA_HOME",
    "CUDA_PATH",
    "TORCH_CUDA_ARCH_LIST",
];

/// `cmd` without the shell's [`SETTINGS`], with `vars` set.
fn with_only(mut cmd: Command, vars: &[(&str, String)]) -> Command {
    for k in SETTINGS {
        cmd.env_remove(k);
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd
}

/// `cudoctor check --format FORMAT --python PYTHON` with these variables set.
fn check_output(python: &Path, format: &str, vars: &[(&str, String)]) -> std::process::Output {
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args(["check", "--format", format, "--python"])
        .arg(python);
    with_only(cmd, vars).output().expect("cudoctor runs")
}

/// `cudoctor libs --format json --python PYTHON`.
fn libs_json_output(python: &Path) -> std::process::Output {
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args(["libs", "--format", "json", "--python"])
        .arg(python);
    with_only(cmd, &[]).output().expect("cudoctor runs")
}

/// The same, with these variables set (CUDA_HOME, TORCH_CUDA_ARCH_LIST, HOME...).
fn check_json_with(python: &Path, vars: &[(&str, String)]) -> Value {
    // Each env of the tier holds one breakage at most: one root cause, the rest follow from it.
    check_json_of(python, vars, 1)
}

fn check_json_of(python: &Path, vars: &[(&str, String)], breakages: usize) -> Value {
    let out = check_output(python, "json", vars);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "cudoctor check JSON: {e}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    support::check_fixes(&v);
    support::one_cause_each(&v, breakages, &MACHINE_CODES);
    v
}

fn env_prefix(python: &Path) -> String {
    python
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The import-stage objects cudoctor predicts for the env, as real paths.
fn predicted(json: &Value, prefix: &str) -> BTreeSet<String> {
    let procs = json["snapshot"]["loader"]["processes"]
        .as_array()
        .expect("loader facts");
    let p = procs
        .iter()
        .find(|p| p["env_prefix"] == prefix)
        .unwrap_or_else(|| panic!("no emulated process for {prefix}"));
    p["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["stage"].as_str().is_none_or(|s| s == "import"))
        .map(|o| {
            o["real_path"]
                .as_str()
                .or(o["path"].as_str())
                .unwrap()
                .to_string()
        })
        .filter(|p| of_interest(p))
        .collect()
}

fn assert_same(name: &str, real: &BTreeSet<String>, predicted: &BTreeSet<String>) {
    let missed: Vec<&String> = real.difference(predicted).collect();
    let extra: Vec<&String> = predicted.difference(real).collect();
    assert!(
        missed.is_empty() && extra.is_empty(),
        "{name}: mapped but not predicted: {missed:#?}\npredicted but not mapped: {extra:#?}"
    );
    assert!(
        real.len() > 10,
        "{name}: too few libraries mapped to compare: {real:?}"
    );
}

/// Errors and warnings of a check, as (code, message).
fn problems(json: &Value) -> Vec<(String, String)> {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| matches!(f["severity"].as_str(), Some("error" | "warning")))
        .map(|f| {
            (
                f["code"].as_str().unwrap_or("").to_string(),
                f["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Findings that this machine really has, whatever the env: no GPU and no driver here.
const MACHINE_CODES: [&str; 2] = ["PLT001", "DRV001"];

fn env_problems(json: &Value) -> Vec<(String, String)> {
    problems(json)
        .into_iter()
        .filter(|(c, _)| !MACHINE_CODES.contains(&c.as_str()))
        .collect()
}

/// Copies of the env's smaller CUDA libraries (and nvJitLink, the case torch's own comment
/// names) in one directory: an LD_LIBRARY_PATH shadow as cluster module files make.
fn shadow_dir(prefix: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let sp = Path::new(prefix).join("lib");
    let mut libs = Vec::new();
    for py in std::fs::read_dir(&sp).unwrap().flatten() {
        let nv = py.path().join("site-packages/nvidia");
        for pkg in std::fs::read_dir(&nv).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(pkg.path().join("lib"))
                .into_iter()
                .flatten()
                .flatten()
            {
                libs.push(f.path());
            }
        }
    }
    for f in libs {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let size = f.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        if name.contains(".so") && (size < 8 << 20 || name.starts_with("libnvJitLink")) {
            std::fs::copy(&f, dir.path().join(&name)).unwrap();
        }
    }
    dir
}

fn maps_equal_prediction(name: &str) {
    let Some(python) = real_env(name) else { return };
    let prefix = env_prefix(&python);
    // torch and the companions the env holds.
    let imports = ["torch", "torchvision", "torchaudio"]
        .into_iter()
        .filter(|p| {
            std::fs::read_dir(site_packages(Path::new(&prefix)))
                .unwrap()
                .flatten()
                .any(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.starts_with(&format!("{p}-")) && n.ends_with(".dist-info")
                })
        })
        .collect::<Vec<_>>()
        .join(", ");
    let imports = imports.as_str();
    let real = real_maps(&python, imports, None);
    let json = check_json(&python, None);
    assert_same(name, &real, &predicted(&json, &prefix));

    let shadow = shadow_dir(&prefix);
    let real = real_maps(&python, imports, Some(shadow.path()));
    let json_llp = check_json(&python, Some(shadow.path()));
    assert_same(
        &format!("{name} with LD_LIBRARY_PATH shadow copies"),
        &real,
        &predicted(&json_llp, &prefix),
    );
    // A shadow copy cudoctor says LD_LIBRARY_PATH supplies must really be mapped.
    let p = json_llp["snapshot"]["loader"]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["env_prefix"] == prefix.as_str())
        .unwrap()
        .clone();
    for s in p["shadowed"].as_array().into_iter().flatten() {
        let file = s["from_ld_library_path"].as_str().unwrap();
        let real_file = std::fs::canonicalize(file).unwrap();
        assert!(
            real.contains(real_file.to_str().unwrap()),
            "{name}: cudoctor says {file} shadows, but the process maps {real:#?}"
        );
    }
}

#[test]
fn stock_current_loads_what_cudoctor_predicts() {
    maps_equal_prediction("stock-current");
}

#[test]
fn libs_on_a_stock_install_without_libsox_exits_0() {
    // torch 2.7.1's torchaudio links libsox optionally (its sox backend); a stock install
    // without it is healthy, as check's LIB001 says, so libs' exit status says so too.
    let Some(python) = real_env("stock-cu126") else {
        return;
    };
    let out = libs_json_output(&python);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("libsox.so"), "the case this guards: {text}");
    assert!(out.status.success(), "libs exited {:?}: {text}", out.status);
}

#[test]
fn stock_cu126_loads_what_cudoctor_predicts() {
    maps_equal_prediction("stock-cu126");
}

/// Every env of the extended tier whose torch imports (the broken ones cannot be mapped):
/// torch beside other frameworks and their CUDA wheels, with and without shadow copies.
#[test]
fn every_importable_torch_env_loads_what_cudoctor_predicts() {
    for name in [
        "jax-cuda12-beside-torch",
        "cupy-cuda12x-beside-torch",
        "sglang-beside-torch",
        "bnb-transformers",
        "xformers-matching",
        "cuda13-frameworks-beside-torch",
    ] {
        maps_equal_prediction(name);
    }
}

fn healthy(name: &str) {
    let Some(python) = real_env(name) else { return };
    let json = check_json(&python, None);
    assert_eq!(
        env_problems(&json),
        Vec::<(String, String)>::new(),
        "{name}"
    );
}

#[test]
fn stock_current_is_healthy() {
    healthy("stock-current");
}

/// The anchor-style reports of a stock torch environment fit 120 columns: every line of
/// `check`, `libs` and `kernels` text, except a line that is one unbreakable token.
#[test]
fn stock_current_text_reports_fit_120_columns() {
    let Some(python) = real_env("stock-current") else {
        return;
    };
    for command in ["check", "libs", "kernels"] {
        let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
        cmd.args([command, "--python"])
            .arg(&python)
            .env("NO_COLOR", "1");
        let out = with_only(cmd, &[]).output().expect("cudoctor runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.lines().count() > 3,
            "{command}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let over: Vec<String> = text
            .lines()
            .filter(|l| l.chars().count() > 120 && l.split_whitespace().count() > 1)
            .map(|l| format!("{}: {l}", l.chars().count()))
            .collect();
        assert!(over.is_empty(), "{command}:\n{}", over.join("\n"));
    }
}

#[test]
fn stock_cu126_is_healthy() {
    healthy("stock-cu126");
}

/// vLLM as its own metadata installs it: its extensions call the driver API (cu*), which this
/// driverless machine lacks; that is the driver's finding, not the package's (no LIB004), and
/// every pin among its CUDA packages is met (FW024 silent, as `uv pip check` says).
#[test]
fn vllm_stock_is_healthy() {
    healthy("vllm-stock");
}

/// xformers 0.0.31 (its METADATA pins torch==2.7.1, its cpp_lib.json says 2.7.1+cu126) over
/// torch 2.8.0: the pin is the root cause, the undefined torch symbols of its two modules follow,
/// and the fix is a matching pair, never a source build.
#[test]
fn xformers_built_for_another_torch_is_its_pin_with_a_matching_pair() {
    let Some(python) = real_env("xformers-other-torch") else {
        return;
    };
    let json = check_json(&python, None);
    let root = one_root("xformers-other-torch", &json, "FW024");
    let f = findings(&json);
    assert!(
        f.iter().any(|(c, _, _)| c == "LIB004")
            && f.iter()
                .filter(|(c, _, _)| c == "LIB004")
                .all(|(_, _, by)| by.is_some()),
        "{f:?}"
    );
    let cmds = fix_commands(&root);
    assert!(
        cmds[0].contains("--only-binary xformers xformers torch==2.8.0"),
        "{cmds:?}"
    );
    let all = root["fix"].to_string();
    assert!(all.contains("torch==2.7.1"), "{all}");
    assert!(!all.contains("--no-binary"), "{all}");
}

/// vLLM's architecture-specific modules (FA3 and FlashMLA for sm_90a, DeepSelect and QuTLASS for
/// sm_100f) are imported inside try/except or contextlib.suppress by vLLM's own dispatch: on an
/// A100 or an RTX 30 GPU (what-if) they are information, and the core modules carry the GPU.
#[test]
fn vllms_hopper_and_blackwell_only_backends_are_information_on_ampere() {
    let Some(python) = real_env("vllm-stock") else {
        return;
    };
    for gpu in ["sm_80", "sm_86"] {
        let (json, _) = what_if_json("check", gpu, &python);
        let krn: Vec<&Value> = json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["code"] == "KRN002")
            .collect();
        assert!(
            krn.iter().all(|f| f["severity"] == "info"),
            "{gpu}: {krn:#?}"
        );
        let evidence = krn
            .iter()
            .map(|f| f["evidence"].to_string())
            .collect::<String>();
        for module in ["_vllm_fa3_C", "_flashmla_C"] {
            assert!(
                evidence.contains(module),
                "{gpu}: {module} not named: {evidence}"
            );
        }
        // `kernels` judges them for no GPU, saying why.
        let (kernels, _) = what_if_json("kernels", gpu, &python);
        let not_judged = not_judged_paths(&kernels);
        assert!(
            not_judged
                .iter()
                .any(|p| p.ends_with("_vllm_fa3_C.abi3.so")),
            "{gpu}: {not_judged:?}"
        );
        // Each one named optional carries code for one architecture family alone, as its fat
        // binary says, or every import of it expects it to fail (try/except, suppress).
        for lib in json["snapshot"]["kernel_images"]["libraries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| !l["loaded_if"].is_null())
        {
            let sass: Vec<&str> = lib["sass"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect();
            assert!(
                sass.iter().all(|s| s.ends_with('a') || s.ends_with('f'))
                    || matches!(
                        lib["loaded_if"]["how"].as_str(),
                        Some("try_import" | "suppressed_import" | "find_spec")
                    ),
                "{lib:#}"
            );
        }
    }
}

/// TensorFlow in the framework layer with its CUDA major, and `libs` resolving its CUDA
/// libraries as a real `import tensorflow` maps them: the nvidia wheels' files its own process
/// maps on this driverless machine (`/proc/self/maps`) are exactly those `libs` puts at the
/// import stage; the rest (cuBLAS, cuDNN, cuFFT...) only once a driver starts the GPU.
#[test]
fn tensorflow_libraries_are_what_a_real_import_maps() {
    let Some(python) = real_env("tensorflow-and-cuda") else {
        return;
    };
    let json = check_json(&python, None);
    let prefix = env_prefix(&python);
    let env = json["snapshot"]["python_envs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["prefix"] == prefix)
        .unwrap();
    let tf = env["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["framework"] == "tensorflow")
        .unwrap_or_else(|| panic!("no TensorFlow build: {env:#}"));
    assert_eq!(tf["cuda"]["major"], 12, "{tf:#}");
    assert_eq!(env_problems(&json), Vec::<(String, String)>::new());
    // The real import.
    let out = Command::new(&python)
        .args([
            "-c",
            "import tensorflow\nfor l in open('/proc/self/maps'):\n    p = l.split()[-1]\n    if '/nvidia/' in p and '.so' in p: print(p)",
        ])
        .env("TF_CPP_MIN_LOG_LEVEL", "3")
        .output()
        .unwrap();
    let real: BTreeSet<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| std::fs::canonicalize(l).unwrap())
        .collect();
    assert!(!real.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let libs: Value = serde_json::from_slice(&libs_json_output(&python).stdout).unwrap();
    let objects = libs["frameworks"][0]["objects"].as_array().unwrap();
    let at_import: BTreeSet<PathBuf> = objects
        .iter()
        .filter(|o| o["stage"].is_null() || o["stage"] == "import")
        .map(|o| o["real_path"].as_str().or(o["path"].as_str()).unwrap())
        .filter(|p| p.contains("/nvidia/"))
        .map(|p| std::fs::canonicalize(p).unwrap())
        .collect();
    assert_eq!(at_import, real);
    // Its loader's other libraries resolve into the env's nvidia wheels too.
    let later: Vec<&str> = objects
        .iter()
        .filter(|o| o["stage"] == "cuda_init")
        .filter_map(|o| o["path"].as_str())
        .collect();
    for lib in ["libcublas.so.12", "libcudnn.so.9", "libcufft.so.11"] {
        assert!(
            later
                .iter()
                .any(|p| p.ends_with(lib) && p.contains("/nvidia/")),
            "{lib}: {later:?}"
        );
    }
}

/// SGLang as its metadata installs it, healthy here; on a Hopper (what-if) the Blackwell-only
/// FlashMLA package (`flash_mla`, sm_100a), which SGLang imports only in a backend's module, is
/// information, not an error.
#[test]
fn sglang_stock_is_healthy_and_its_blackwell_only_flashmla_is_optional_on_hopper() {
    healthy("sglang-stock");
    let Some(python) = real_env("sglang-stock") else {
        return;
    };
    let (json, _) = what_if_json("check", "sm_90", &python);
    let krn: Vec<&Value> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "KRN002")
        .collect();
    assert!(krn.iter().all(|f| f["severity"] == "info"), "{krn:#?}");
    assert!(
        krn.iter()
            .any(|f| f["evidence"].to_string().contains("flash_mla")),
        "{krn:#?}"
    );
}

#[test]
fn the_fix_of_xformers_built_for_another_torch_repairs_a_copy_of_the_env() {
    if real_env("xformers-other-torch").is_none() {
        return;
    }
    fix_repairs_from("xformers-other-torch", "FW024", &[], Index::Online);
}

/// The env's own `sys.path` (site directories only) against the directories cudoctor reads.
fn site_dirs_match(name: &str) {
    let Some(python) = real_env(name) else { return };
    let out = Command::new(&python)
        .args(["-c", "import sys\nfor p in sys.path: print(p)"])
        .env_remove("PYTHONPATH")
        .output()
        .unwrap();
    let real: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.ends_with("-packages"))
        .map(str::to_string)
        .collect();
    let json = check_json(&python, None);
    let prefix = env_prefix(&python);
    let env = json["snapshot"]["python_envs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["prefix"] == prefix.as_str())
        .unwrap()
        .clone();
    let ours: Vec<String> = env["site_packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ours, real, "{name}: site directories in sys.path order");
}

#[test]
fn stock_current_site_dirs_are_sys_path() {
    site_dirs_match("stock-current");
}

#[test]
fn ssp_venv_site_dirs_are_sys_path() {
    site_dirs_match("ssp-over-user");
}

/// The `--system-site-packages` venv with a user site (`HOME` of its own) holding another
/// torch and its CUDA 13 nvidia wheels: Python imports the venv's torch 2.7.1, the user
/// site's libraries stay out of the process, and cudoctor judges that process alone.
#[test]
fn a_system_site_venv_over_a_user_torch_is_the_venvs_torch_alone() {
    let Some(python) = real_env("ssp-over-user") else {
        return;
    };
    let home = cache_dir().join("ssp-over-user-home");
    assert!(
        home.join(".local/lib").is_dir(),
        "{}: the user site of ssp-over-user (run scripts/realenv/make-envs.sh --full)",
        home.display()
    );
    let vars = [("HOME", home.to_string_lossy().into_owned())];
    let prefix = env_prefix(&python);
    // Ground truth: the interpreter's sys.path puts the user site between the venv's own and
    // the base's, and imports the venv's torch.
    let out = Command::new(&python)
        .args([
            "-E",
            "-c",
            "import sys, torch\nprint(torch.__file__)\nfor p in sys.path: print(p)",
        ])
        .env("HOME", &home)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let torch_file = lines.next().unwrap();
    assert!(torch_file.starts_with(&format!("{prefix}/lib/")), "{text}");
    let real_sites: Vec<String> = lines
        .filter(|l| l.ends_with("-packages"))
        .map(str::to_string)
        .collect();
    assert!(
        real_sites
            .iter()
            .any(|d| d.starts_with(&*home.to_string_lossy())),
        "the user site is on sys.path: {real_sites:?}"
    );
    let real = real_maps_with(&python, "-E", "torch", &vars);
    assert!(
        !real.iter().any(|p| p.starts_with(&*home.to_string_lossy())),
        "the process maps none of the user site's libraries: {real:#?}"
    );
    let json = check_json_with(&python, &vars);
    let env = json["snapshot"]["python_envs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["prefix"] == prefix.as_str())
        .unwrap()
        .clone();
    let ours: Vec<String> = env["site_packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ours, real_sites, "site directories in sys.path order");
    assert_eq!(env["torch"]["version"], "2.7.1+cu126", "{:#}", env["torch"]);
    assert_same(
        "ssp-over-user (user site)",
        &real,
        &predicted(&json, &prefix),
    );
    assert_eq!(
        env_problems(&json),
        Vec::<(String, String)>::new(),
        "no error or warning on the venv's working torch"
    );
}

/// Findings of an env, as (code, severity, caused_by).
fn findings(json: &Value) -> Vec<(String, String, Option<String>)> {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap_or("").to_string(),
                f["severity"].as_str().unwrap_or("").to_string(),
                f["caused_by"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn a_cuda12_framework_beside_a_cuda13_torch_is_one_root_cause() {
    let Some(python) = real_env("jax-cuda12-beside-torch") else {
        return;
    };
    let prefix = env_prefix(&python);
    // Ground truth: the real process maps CUDA 12 runtime libraries.
    let real = real_maps(&python, "torch, torchvision", None);
    assert!(
        real.iter().any(|p| p.ends_with("/libcudart.so.12")),
        "{real:#?}"
    );
    let json = check_json(&python, None);
    assert_same("jax-cuda12-beside-torch", &real, &predicted(&json, &prefix));
    let f = findings(&json);
    // One cause: the frameworks of two CUDA majors (FW020); torch preloading the CUDA 12
    // libraries (LIB006) follows from it.
    assert!(
        f.iter()
            .any(|(c, s, by)| c == "FW020" && s == "error" && by.is_none()),
        "{f:?}"
    );
    assert!(
        f.iter()
            .any(|(c, s, by)| c == "LIB006" && s == "error" && by.as_deref() == Some("FW020")),
        "{f:?}"
    );
    // No LIB002 error for the copies torch itself preloaded.
    assert!(
        !f.iter()
            .any(|(c, s, by)| c == "LIB002" && s == "error" && by.is_none()),
        "{f:?}"
    );
}

#[test]
fn check_and_plan_give_one_remedy_for_jax_of_another_major_beside_torch() {
    let Some(python) = real_env("jax-cuda12-beside-torch") else {
        return;
    };
    let json = check_json(&python, None);
    let fw020 = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "FW020")
        .expect("FW020")
        .clone();
    let fix = support::step_texts(&fw020["fix"]);
    // plan in the activated env: the same steps, word for word.
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args(["plan", "--format", "json"]);
    let bin = python.parent().unwrap().to_string_lossy().into_owned();
    let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    let out = with_only(cmd, &[("VIRTUAL_ENV", env_prefix(&python)), ("PATH", path)])
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("plan JSON: {e}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(plan["current"]["ok"], false, "{plan:#}");
    let changes = support::strings(&plan["current"]["changes"]);
    assert_eq!(changes, fix, "{plan:#}");
    assert!(fix.iter().any(|s| s.contains("'jax[cuda13]==")), "{fix:#?}");
}

#[test]
fn a_companion_from_another_release_is_caught() {
    let Some(python) = real_env("companion-wrong-release") else {
        return;
    };
    // Ground truth: importing it really fails.
    let out = Command::new(&python)
        .args(["-I", "-c", "import torch, torchvision.io"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let json = check_json(&python, None);
    let f = findings(&json);
    assert!(
        f.iter().any(|(c, s, _)| c == "FW002" && s == "error"),
        "{f:?}"
    );
}

// ------------------------------------------------------------- frameworks beyond torch
//
// Ground truth here is the framework itself in the env's interpreter (the CUDA runtime
// version JAX's and CuPy's own modules report, the module that fails to import), `ldd`, and
// uv's own resolver (`uv pip check`, `--dry-run` of the printed fix).

/// What `python -I -c CODE` prints, stdout and stderr together, and whether it succeeded.
fn python_says(python: &Path, code: &str) -> (bool, String) {
    python_says_with(python, code, &[])
}

/// The same, with these variables set.
fn python_says_with(python: &Path, code: &str, vars: &[(&str, String)]) -> (bool, String) {
    let mut cmd = Command::new(python);
    cmd.args(["-I", "-c", code]);
    let out = with_only(cmd, vars)
        .output()
        .expect("the env's python runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// What uv says of a printed install command run with `--dry-run` (it resolves against the
/// index and installs nothing); the command must succeed.
fn resolved_by_uv(cmd: &str) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} --dry-run"))
        .env_remove("VIRTUAL_ENV")
        .output()
        .expect("sh");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd}: {said}");
    said
}

/// The framework builds cudoctor recorded for the env.
fn frameworks_of<'a>(json: &'a Value, prefix: &str) -> &'a Vec<Value> {
    json["snapshot"]["python_envs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["prefix"] == prefix)
        .unwrap_or_else(|| panic!("no env {prefix}"))["frameworks"]
        .as_array()
        .expect("frameworks")
}

/// `uv pip check` of the env: uv's resolver's word on unmet requirements.
fn uv_pip_check(python: &Path) -> Option<String> {
    let out = Command::new("uv")
        .args(["pip", "check", "--python"])
        .arg(python)
        .output();
    match out {
        Ok(o) => Some(format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(_) => {
            cudoctor_testkit::skip_missing_tool("uv_pip_check", "uv");
            None
        }
    }
}

/// A stock `jax[cudaNN]`: the CUDA runtime cudoctor binds JAX to is the one JAX's own plugin
/// module reports (13050 for nvidia-cuda-runtime 13.5), and no framework finding.
fn jax_binds_the_cuda_runtime_its_plugin_loads(name: &str, major: u32) {
    let Some(python) = real_env(name) else {
        return;
    };
    let (ok, text) = python_says(
        &python,
        &format!(
            "from jax_cuda{major}_plugin import _versions as v; print(v.cuda_runtime_get_version())"
        ),
    );
    assert!(ok, "{text}");
    let real: u32 = text.trim().parse().expect("a CUDA version number");
    let json = check_json(&python, None);
    let fw = frameworks_of(&json, &env_prefix(&python));
    let jax = fw.iter().find(|f| f["framework"] == "jax").expect("jax");
    assert_eq!(jax["package"], format!("jax-cuda{major}-plugin"));
    assert_eq!(jax["cuda"]["major"], real / 1000, "{jax:#}");
    assert_eq!(jax["cuda"]["minor"], (real % 1000) / 10, "{jax:#}");
    let f = findings(&json);
    assert!(
        !f.iter().any(|(c, _, _)| c.starts_with("FW02")),
        "a stock jax[cuda{major}] has no framework finding: {f:?}"
    );
}

#[test]
fn jax_cuda12_binds_the_cuda_runtime_its_plugin_loads() {
    jax_binds_the_cuda_runtime_its_plugin_loads("jax-cuda12", 12);
}

#[test]
fn a_jax_plugin_of_another_release_is_what_uv_says_and_the_fix_resolves_it() {
    let Some(python) = real_env("jax-plugin-wrong-release") else {
        return;
    };
    let Some(uv) = uv_pip_check(&python) else {
        return;
    };
    assert!(uv.contains("jax-cuda12-pjrt==0.10.1"), "{uv}");
    let json = check_json(&python, None);
    let f = findings(&json);
    assert!(
        f.iter()
            .any(|(c, s, by)| c == "FW021" && s == "error" && by.is_none()),
        "{f:?}"
    );
    let fw021 = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "FW021")
        .unwrap();
    let cmd = fw021["fix"][0]["shell"].as_str().expect("a shell fix");
    // The printed command, resolved by uv without installing anything.
    let said = resolved_by_uv(cmd);
    assert!(said.contains("+ jax-cuda12-plugin==0.10.2"), "{said}");
}

#[test]
fn cupy_for_cuda12_beside_a_cuda13_torch_misses_its_cuda12_libraries() {
    let Some(python) = real_env("cupy-cuda12x-beside-torch") else {
        return;
    };
    // Ground truth: CuPy reports its (linked-in) CUDA 12 runtime, and its cuBLAS module finds
    // no CUDA 12 cuBLAS.
    let (ok, text) = python_says(
        &python,
        "import cupy; print(cupy.cuda.runtime.runtimeGetVersion())",
    );
    assert!(ok, "{text}");
    let real: u32 = text
        .trim()
        .lines()
        .last()
        .unwrap()
        .parse()
        .expect("a version");
    let (ok, text) = python_says(&python, "import cupy_backends.cuda.libs.cublas");
    assert!(!ok && text.contains("libcublas.so.12"), "{text}");
    let json = check_json(&python, None);
    let fw = frameworks_of(&json, &env_prefix(&python));
    let cupy = fw.iter().find(|f| f["framework"] == "cupy").expect("cupy");
    assert_eq!(cupy["cuda"]["major"], real / 1000, "{cupy:#}");
    let f = findings(&json);
    assert!(
        f.iter()
            .any(|(c, s, by)| c == "FW020" && s == "error" && by.is_none()),
        "{f:?}"
    );
}

#[test]
fn onnxruntime_gpu_binds_the_cuda_its_provider_links() {
    let Some(python) = real_env("onnxruntime-gpu") else {
        return;
    };
    let json = check_json(&python, None);
    let fw = frameworks_of(&json, &env_prefix(&python));
    let ort = fw
        .iter()
        .find(|f| f["framework"] == "onnx_runtime")
        .expect("onnxruntime");
    let provider = ort["ships"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|s| s.ends_with("libonnxruntime_providers_cuda.so"))
        .expect("the CUDA provider");
    // Ground truth: the runtime soname the provider links (ldd reads its DT_NEEDED).
    let out = Command::new("ldd").arg(provider).output();
    let Ok(out) = out else {
        cudoctor_testkit::skip_missing_tool(
            "onnxruntime_gpu_binds_the_cuda_its_provider_links",
            "ldd",
        );
        return;
    };
    let ldd = String::from_utf8_lossy(&out.stdout);
    let major = ort["cuda"]["major"].as_u64().expect("a major");
    assert!(ldd.contains(&format!("libcudart.so.{major}")), "{ldd}");
}

#[test]
fn sglang_pinning_another_torch_is_what_uv_says() {
    let Some(python) = real_env("sglang-beside-torch") else {
        return;
    };
    let Some(uv) = uv_pip_check(&python) else {
        return;
    };
    let json = check_json(&python, None);
    let fw = frameworks_of(&json, &env_prefix(&python));
    let sg = fw
        .iter()
        .find(|f| f["framework"] == "sglang")
        .expect("sglang");
    let pin = sg["companions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "torch")
        .expect("a torch pin");
    let req = pin["requirement"].as_str().unwrap();
    let installed = pin["installed"].as_str().unwrap();
    assert!(
        uv.contains(&format!("requires `{req}`, but `{installed}` is installed")),
        "{uv}"
    );
    let f = findings(&json);
    assert!(
        f.iter()
            .any(|(c, s, by)| c == "FW022" && s == "error" && by.is_none()),
        "{f:?}"
    );
}

/// This container has no GPU access (PLT001): no driver inside it (DRV001) follows from that
/// and carries no fix of its own.
fn assert_machine_chain(name: &str, json: &Value) {
    let f = findings(json);
    if f.iter().any(|(c, s, _)| c == "PLT001" && s == "error") {
        for (c, _, by) in &f {
            if c == "DRV001" {
                assert_eq!(by.as_deref(), Some("PLT001"), "{name}: {f:?}");
            }
        }
    }
}

/// Root causes with a fix: errors and warnings that follow from no other finding, the
/// machine's own (PLT001) left out.
fn env_roots(json: &Value) -> Vec<Value> {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| matches!(f["severity"].as_str(), Some("error" | "warning")))
        .filter(|f| f["caused_by"].is_null())
        .filter(|f| f["fix"].as_array().is_some_and(|x| !x.is_empty()))
        .filter(|f| !MACHINE_CODES.contains(&f["code"].as_str().unwrap_or("")))
        .cloned()
        .collect()
}

/// Exactly one root cause with a fix, of `code`, for one breakage; everything else it explains
/// carries `caused_by`.
fn one_root(name: &str, json: &Value, code: &str) -> Value {
    assert_machine_chain(name, json);
    let roots = env_roots(json);
    let codes: Vec<&str> = roots.iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert_eq!(
        codes,
        vec![code],
        "{name}: one root cause with a fix; findings: {:#?}",
        findings(json)
    );
    roots[0].clone()
}

/// The shell steps of a fix up to its first alternative (a step of prose starting "or").
fn fix_commands(f: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for step in f["fix"].as_array().unwrap() {
        if let Some(p) = step["prose"].as_str() {
            if p.starts_with("or ") {
                break;
            }
            continue;
        }
        if let Some(sh) = step["shell"].as_str() {
            out.push(sh.to_string());
        }
    }
    out
}

/// The `name==version` requirements of an install command.
fn pins(cmd: &str) -> Vec<(String, String)> {
    let cmd = cmd.split("   #").next().unwrap_or(cmd);
    cmd.split_whitespace()
        .filter_map(|w| w.trim_matches('\'').split_once("=="))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

fn site_packages(prefix: &Path) -> PathBuf {
    std::fs::read_dir(prefix.join("lib"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .expect("site-packages")
}

/// The dist-info of an installed distribution at `version`, from the env's own metadata.
fn dist_info(prefix: &Path, name: &str, version: &str) -> Option<PathBuf> {
    let norm = name.replace('-', "_").to_ascii_lowercase();
    let d = site_packages(prefix).join(format!("{norm}-{version}.dist-info"));
    d.is_dir().then_some(d)
}

/// Without downloading: each pin of each command names an installed distribution at that
/// version (a reinstall), whose RECORD lists `missing_file` when the finding is about one; or
/// one the installer resolves from its cache offline (`uv pip install --dry-run --offline`).
fn validate_fix(name: &str, python: &Path, root: &Value, missing_file: Option<&str>) {
    let prefix = python.parent().and_then(Path::parent).unwrap();
    let cmds = fix_commands(root);
    assert!(!cmds.is_empty(), "{name}: no command in {root:#}");
    for cmd in &cmds {
        assert!(
            cmd.starts_with("uv pip ") || cmd.starts_with("uv cache "),
            "{name}: a uv-made venv without pip gets uv commands: {cmd}"
        );
        for (pkg, version) in pins(cmd) {
            match dist_info(prefix, &pkg, &version) {
                Some(d) if cmd.contains("--reinstall") => {
                    if let Some(file) = missing_file {
                        let record = std::fs::read_to_string(d.join("RECORD")).unwrap();
                        assert!(
                            record.lines().any(|l| l
                                .split(',')
                                .next()
                                .is_some_and(|p| p.ends_with(&format!("/{file}")))),
                            "{name}: {pkg} {version} does not ship {file}: {cmd}"
                        );
                    }
                }
                Some(_) => {}
                None => {
                    let out = Command::new("uv")
                        .args([
                            "pip",
                            "install",
                            "--dry-run",
                            "--offline",
                            "--no-deps",
                            "--python",
                        ])
                        .arg(python)
                        .arg(format!("{pkg}=={version}"))
                        .output()
                        .expect("uv runs");
                    assert!(
                        out.status.success(),
                        "{name}: {pkg}=={version} of `{cmd}` is neither installed nor resolvable: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
        }
    }
}

/// A hard-link copy of a real env (same filesystem as the cache, so it costs no space): what
/// the fix commands are run in. Removed when dropped.
struct EnvCopy(PathBuf);

impl EnvCopy {
    fn of(name: &str) -> EnvCopy {
        // One copy per test process: two runs of the suite at once (a developer's and a
        // clone's) must not remove each other's copy.
        let dst = cache_dir().join(format!("fix-run-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dst);
        let st = Command::new("cp")
            .arg("-al")
            .arg(cache_dir().join(name))
            .arg(&dst)
            .status()
            .unwrap();
        assert!(st.success(), "cp -al {name}");
        EnvCopy(dst)
    }
    fn python(&self) -> PathBuf {
        self.0.join("bin/python")
    }
}

impl Drop for EnvCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Errors and warnings of an env by code (the machine's own left out).
fn problem_codes(json: &Value) -> BTreeSet<String> {
    env_problems(json).into_iter().map(|(c, _)| c).collect()
}

/// Runs the fix of the broken env's one root cause in a copy of the env, offline (the wheels
/// come from the installer's cache), then checks the copy again: the finding is gone and no
/// new one appeared.
fn fix_repairs(name: &str, code: &str, vars: &[(&str, String)]) {
    fix_repairs_from(name, code, vars, Index::CacheOnly);
}

/// Where a fix's installs may come from: uv's cache (what the env was built from), or the
/// package index too (a fix that brings a package the env never had).
#[derive(PartialEq)]
enum Index {
    CacheOnly,
    Online,
}

fn fix_repairs_from(name: &str, code: &str, vars: &[(&str, String)], index: Index) -> EnvCopy {
    // The fixes name the env's own installer, uv, which made these envs.
    assert!(
        Command::new("uv").arg("--version").output().is_ok(),
        "{name}: uv, the installer the fix names, is not on PATH (scripts/realenv/make-envs.sh \
         installs it into ~/.local/bin: export PATH=\"$HOME/.local/bin:$PATH\")"
    );
    let copy = EnvCopy::of(name);
    let python = copy.python();
    let before = check_json_with(&python, vars);
    let root = one_root(name, &before, code);
    for cmd in fix_commands(&root) {
        if cmd.starts_with("cudoctor ") {
            continue;
        }
        let mut run = Command::new("timeout");
        run.args(["900", "sh", "-c", &cmd])
            .env_remove("VIRTUAL_ENV");
        if index == Index::CacheOnly {
            run.env("UV_OFFLINE", "1");
        }
        let out = run.output().unwrap();
        assert!(
            out.status.success(),
            "{name}: `{cmd}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if cmd.contains("--reinstall") {
            // uv's --reinstall implies --refresh: each run unpacks the wheel into a new cache
            // entry and leaves the last one dangling (a cuDNN wheel is 835 MB a run). What no
            // environment links to any more is removed; uv waits for other uv processes.
            let _ = Command::new("uv").args(["cache", "prune"]).output();
        }
    }
    let after = check_json_with(&python, vars);
    let (b, a) = (problem_codes(&before), problem_codes(&after));
    assert!(
        !a.contains(code),
        "{name}: {code} after its fix: {:#?}",
        findings(&after)
    );
    let new: Vec<&String> = a.difference(&b).collect();
    assert!(
        new.is_empty(),
        "{name}: new after the fix: {new:?}\n{:#?}",
        findings(&after)
    );
    copy
}

#[test]
fn the_fix_of_cupy_for_cuda12_beside_a_cuda13_torch_repairs_a_copy_of_the_env() {
    if real_env("cupy-cuda12x-beside-torch").is_none() {
        return;
    }
    // cupy-cuda13x is not in the env's cache: the fix's install comes from the index.
    let copy = fix_repairs_from("cupy-cuda12x-beside-torch", "FW020", &[], Index::Online);
    // Ground truth: CuPy now runs on CUDA 13, and each CUDA library module it offers loads
    // the way CuPy loads it (cupy.cuda's attributes; cuRAND is not among torch's wheels).
    assert_eq!(cupy_modules_load_on_major(&copy.python()), 13);
}

/// The CUDA major CuPy's runtime reports once every CUDA library module it offers has loaded
/// the way CuPy loads it (cupy.cuda's attributes); panics with CuPy's words when one fails.
fn cupy_modules_load_on_major(python: &Path) -> u32 {
    let (ok, text) = python_says(
        python,
        "import cupy\nfor m in ['cublas', 'curand', 'cusolver', 'cusparse', 'cufft', 'nvrtc']: getattr(cupy.cuda, m)\nprint(cupy.cuda.runtime.runtimeGetVersion())",
    );
    assert!(ok, "{text}");
    let version: u32 = text
        .trim()
        .lines()
        .last()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("no runtime version in {text}"));
    version / 1000
}

#[test]
fn without_torch_two_majors_are_one_root_and_its_fix_repairs_a_copy_of_the_env() {
    let Some(python) = real_env("cupy-cuda12x-beside-jax-cuda13") else {
        return;
    };
    // Ground truth: JAX imports; CuPy for CUDA 12 finds no CUDA 12 cuBLAS beside JAX's CUDA 13
    // wheels.
    let (ok, text) = python_says(&python, "import jax; print(jax.__version__)");
    assert!(ok, "{text}");
    let (ok, text) = python_says(&python, "import cupy_backends.cuda.libs.cublas");
    assert!(!ok && text.contains("libcublas.so.12"), "{text}");
    // One cause (two majors), one remedy: CuPy's missing libraries follow from FW020, whose
    // fix is the env's, not a CUDA-12 install that would deepen the mix.
    let json = check_json(&python, None);
    let root = one_root("cupy-cuda12x-beside-jax-cuda13", &json, "FW020");
    assert_eq!(root["severity"], "error", "{root:#}");
    let f = findings(&json);
    assert!(
        f.iter()
            .any(|(c, _, by)| c == "FW023" && by.as_deref() == Some("FW020")),
        "{f:?}"
    );
    // explain of the error CuPy printed gives check's remedy, FW020's, first.
    let root_fix = fix_commands(&root);
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args(["explain", "--format", "json", "--python"])
        .arg(&python)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = with_only(cmd, &[]).spawn().expect("cudoctor runs");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let explained: Value = serde_json::from_slice(&out.stdout).expect("explain's JSON");
    assert_eq!(
        fix_commands(&explained)[..root_fix.len()],
        root_fix[..],
        "{explained:#}"
    );
    // The fix keeps CUDA 13 (the newest, which JAX has): CuPy for CUDA 13 then loads every
    // CUDA module it offers.
    let copy = fix_repairs_from(
        "cupy-cuda12x-beside-jax-cuda13",
        "FW020",
        &[],
        Index::Online,
    );
    assert_eq!(cupy_modules_load_on_major(&copy.python()), 13);
    let (ok, text) = python_says(&copy.python(), "import jax; print(jax.__version__)");
    assert!(ok, "{text}");
}

#[test]
fn the_fix_of_sglang_pinning_another_torch_resolves() {
    let Some(python) = real_env("sglang-beside-torch") else {
        return;
    };
    // Installing another torch is gigabytes: the printed command is resolved by uv against the
    // index without installing, and must leave SGLang's pin met.
    let json = check_json(&python, None);
    let root = one_root("sglang-beside-torch", &json, "FW022");
    let cmds = fix_commands(&root);
    assert_eq!(cmds.len(), 1, "{cmds:?}");
    let said = resolved_by_uv(&cmds[0]);
    assert!(said.contains("+ torch==2.14.1"), "{said}");
    assert!(said.contains("- torch==2.15.0"), "{said}");
}

#[test]
fn a_deleted_wheel_library_is_one_cause_with_a_reinstall_that_ships_it() {
    let Some(python) = real_env("deleted-wheel-lib") else {
        return;
    };
    // Ground truth: the import really fails.
    let out = Command::new(&python)
        .args(["-I", "-c", "import torch"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let json = check_json(&python, None);
    let root = one_root("deleted-wheel-lib", &json, "FW010");
    // The loader's view of the same file follows from it.
    let f = findings(&json);
    assert!(
        f.iter()
            .any(|(c, _, by)| c == "LIB001" && by.as_deref() == Some("FW010")),
        "{f:?}"
    );
    validate_fix("deleted-wheel-lib", &python, &root, Some("libcudnn.so.9"));
}

#[test]
fn the_fix_of_a_deleted_wheel_library_repairs_a_copy_of_the_env() {
    if real_env("deleted-wheel-lib").is_none() {
        return;
    }
    fix_repairs("deleted-wheel-lib", "FW010", &[]);
}

#[test]
fn a_companion_from_another_release_is_one_cause_with_a_fix_that_resolves() {
    let Some(python) = real_env("companion-wrong-release") else {
        return;
    };
    let json = check_json(&python, None);
    let root = one_root("companion-wrong-release", &json, "FW002");
    let f = findings(&json);
    assert!(
        f.iter()
            .filter(|(c, _, _)| c == "LIB004")
            .all(|(_, _, by)| by.as_deref() == Some("FW002")),
        "{f:?}"
    );
    validate_fix("companion-wrong-release", &python, &root, None);
}

#[test]
fn the_fix_of_a_companion_from_another_release_repairs_a_copy_of_the_env() {
    if real_env("companion-wrong-release").is_none() {
        return;
    }
    fix_repairs("companion-wrong-release", "FW002", &[]);
}

#[test]
fn two_cuda_majors_explain_the_preloads_and_the_overwritten_wheel_files() {
    let Some(python) = real_env("jax-cuda12-beside-torch") else {
        return;
    };
    let json = check_json(&python, None);
    let root = one_root("jax-cuda12-beside-torch", &json, "FW020");
    let f = findings(&json);
    assert!(
        f.iter()
            .filter(|(c, _, _)| c == "FW011" || c == "LIB006")
            .all(|(_, _, by)| by.as_deref() == Some("FW020")),
        "{f:?}"
    );
    validate_fix("jax-cuda12-beside-torch", &python, &root, None);
}

/// The fix installs jax[cuda13] at the installed jax's release, which the knowledge base knows
/// is served (jax.toml); the offline run finds its wheels in the installer's cache, which the
/// jax-cuda13 env filled.
#[test]
fn the_fix_of_two_cuda_majors_repairs_a_copy_of_the_env() {
    if real_env("jax-cuda12-beside-torch").is_none() || real_env("jax-cuda13").is_none() {
        return;
    }
    fix_repairs("jax-cuda12-beside-torch", "FW020", &[]);
}

#[test]
fn uv_made_envs_are_fixed_with_uv() {
    let Some(python) = real_env("stock-current") else {
        return;
    };
    let prefix = env_prefix(&python);
    // Ground truth: there is no pip in it.
    let out = Command::new(&python)
        .args(["-I", "-c", "import pip"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "pip is importable in {prefix}");
    let json = check_json(&python, None);
    let env = json["snapshot"]["python_envs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["prefix"] == prefix.as_str())
        .unwrap()
        .clone();
    assert_eq!(env["installer"]["kind"], "uv", "{:#}", env["installer"]);
    assert_eq!(env["installer"]["has_pip"], false);
}

#[test]
fn libs_shows_what_ldd_finds_missing_for_onnx_runtimes_cuda_provider() {
    let Some(python) = real_env("onnxruntime-gpu") else {
        return;
    };
    let prefix = env_prefix(&python);
    let provider = format!(
        "{prefix}/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime_providers_cuda.so"
    );
    let Ok(ldd) = Command::new("ldd").arg(&provider).output() else {
        cudoctor_testkit::skip_missing_tool("libs_shows_what_ldd_finds_missing", "ldd");
        return;
    };
    let ldd = String::from_utf8_lossy(&ldd.stdout).into_owned();
    let ldd_missing: BTreeSet<String> = ldd
        .lines()
        .filter(|l| l.contains("not found"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(!ldd_missing.is_empty(), "{ldd}");
    let out = libs_json_output(&python);
    let v: Value = serde_json::from_slice(&out.stdout).expect("libs JSON");
    let fw = v["frameworks"]
        .as_array()
        .expect("frameworks")
        .iter()
        .find(|f| f["framework"].as_str().unwrap().starts_with("ONNX Runtime"))
        .expect("ONNX Runtime's libraries");
    let obj = fw["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["path"] == provider.as_str())
        .expect("the CUDA provider");
    let missing: BTreeSet<String> = obj["needed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["via"] == "missing")
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(missing, ldd_missing, "{ldd}");
    assert_eq!(out.status.code(), Some(1), "missing libraries are problems");
}

#[test]
fn jax_cuda13_binds_the_cuda_runtime_its_plugin_loads() {
    jax_binds_the_cuda_runtime_its_plugin_loads("jax-cuda13", 13);
}

#[test]
fn one_cuda_major_for_torch_jax_and_cupy_is_no_mix() {
    let Some(python) = real_env("cuda13-frameworks-beside-torch") else {
        return;
    };
    // Ground truth: each framework's own word on its CUDA runtime, in the env's interpreter.
    let (ok, text) = python_says(
        &python,
        "import torch, cupy\nfrom jax_cuda13_plugin import _versions as v\nprint(torch.version.cuda.split('.')[0], cupy.cuda.runtime.runtimeGetVersion() // 1000, v.cuda_runtime_get_version() // 1000)",
    );
    assert!(ok, "{text}");
    assert_eq!(text.trim().lines().last().unwrap(), "13 13 13", "{text}");
    let json = check_json(&python, None);
    let fw = frameworks_of(&json, &env_prefix(&python));
    for name in ["torch", "jax", "cupy"] {
        let b = fw
            .iter()
            .find(|f| f["framework"] == name)
            .unwrap_or_else(|| panic!("{name}: {fw:#?}"));
        assert_eq!(b["cuda"]["major"], 13, "{b:#}");
    }
    let f = findings(&json);
    assert!(!f.iter().any(|(c, _, _)| c == "FW020"), "{f:?}");
}

/// `cudoctor COMMAND --format json --gpu GPU --python PYTHON` (check, kernels): its JSON and
/// exit status.
fn what_if_json(command: &str, gpu: &str, python: &Path) -> (Value, std::process::ExitStatus) {
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args([command, "--format", "json", "--gpu", gpu, "--python"])
        .arg(python);
    let out = with_only(cmd, &[]).output().expect("cudoctor runs");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{command} JSON: {e}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (json, out.status)
}

/// The paths a `kernels` report judges for no GPU.
fn not_judged_paths(report: &Value) -> Vec<&str> {
    report["not_judged"]
        .as_array()
        .map(|a| a.iter().filter_map(|n| n["path"].as_str()).collect())
        .unwrap_or_default()
}

/// KRN002 of `package` in `check --gpu GPU` of the env: its severity, if any.
fn framework_kernel_finding(python: &Path, gpu: &str, package: &str) -> Option<String> {
    let (json, _) = what_if_json("check", gpu, python);
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["code"] == "KRN002"
                && f["evidence"].as_array().is_some_and(|e| {
                    e.iter()
                        .any(|x| x.as_str().is_some_and(|s| s.contains(package)))
                })
        })
        .map(|f| f["severity"].as_str().unwrap_or("").to_string())
}

/// The architectures of a framework's libraries, read by cudoctor's fat-binary reader
/// (`cudoctor kernels`; its listing is checked against cuobjdump in cudoctor-fatbin's tests),
/// judged by the same KRN002 as torch's extensions, for a what-if GPU.
#[test]
fn framework_kernel_images_are_judged_for_a_what_if_gpu() {
    if let Some(python) = real_env("jax-cuda13") {
        let prefix = env_prefix(&python);
        let plugin = format!(
            "{prefix}/lib/python3.11/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so"
        );
        let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
            .args(["kernels", "--format", "json", &plugin])
            .output()
            .expect("cudoctor runs");
        let k = String::from_utf8_lossy(&out.stdout);
        // CUDA 13 builds no sm_70: a V100 has no kernel image in JAX's CUDA-13 plugin.
        assert!(k.contains("sm_90") && !k.contains("sm_70"), "{k}");
        assert_eq!(
            framework_kernel_finding(&python, "V100", "xla_cuda_plugin.so").as_deref(),
            Some("error")
        );
        assert_eq!(
            framework_kernel_finding(&python, "H200", "xla_cuda_plugin.so"),
            None
        );
    }
    if let Some(python) = real_env("onnxruntime-gpu") {
        // ONNX Runtime's CUDA provider carries sm_90a and sm_120a but no sm_100 and no PTX:
        // nothing runs on a B200; sm_90a runs on an H200 (compute capability 9.0 exactly).
        assert_eq!(
            framework_kernel_finding(&python, "B200", "libonnxruntime_providers_cuda.so")
                .as_deref(),
            Some("error")
        );
        assert_eq!(
            framework_kernel_finding(&python, "H200", "libonnxruntime_providers_cuda.so"),
            None
        );
    }
}

/// The CUDA libraries `cudoctor libs` predicts for the env's JAX build (its process as JAX's
/// own files load it: the plugin modules jaxlib imports, the nvidia libraries the plugin's
/// initialize() preloads, what they need), without what only a GPU brings in (the
/// conditional `xla_cuda_plugin.so`, opened after the version check passes).
fn jax_predicted(python: &Path) -> BTreeSet<String> {
    let out = libs_json_output(python);
    let v: Value = serde_json::from_slice(&out.stdout).expect("libs JSON");
    let fw = v["frameworks"]
        .as_array()
        .expect("frameworks")
        .iter()
        .find(|f| f["framework"].as_str().unwrap().starts_with("JAX"))
        .unwrap_or_else(|| panic!("no JAX in {v:#}"));
    fw["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["opened_by"]["conditional"].as_bool() != Some(true))
        .map(|o| {
            o["real_path"]
                .as_str()
                .or(o["path"].as_str())
                .unwrap()
                .to_string()
        })
        .filter(|p| of_interest(p))
        .collect()
}

/// Ground truth: /proc/self/maps after `import jax; jax.numpy.ones(1)` on this CPU-only
/// machine. The plugin's initialize() preloads its libraries, then its version check stops
/// short of `xla_cuda_plugin.so` without a GPU (JAX falls back to the CPU), so the GPU-only
/// plugin is left out of both sides. libcudnn_graph.so.9 is the one library mapped that
/// nothing links: libcudnn.so.9 dlopen()s it at run time (the library-opens table).
#[test]
fn jax_loads_the_cuda_libraries_cudoctor_predicts() {
    let mut compared = 0;
    for name in ["jax-cuda13", "jax-cuda12", "jax-cuda12-beside-torch"] {
        let Some(python) = real_env(name) else {
            continue;
        };
        let real = real_maps(&python, "jax, jax.numpy as jnp\njnp.ones(1)", None);
        let real: BTreeSet<String> = real
            .into_iter()
            .filter(|p| !p.contains("/torch/") && !p.contains("/torchvision"))
            .collect();
        let predicted = jax_predicted(&python);
        let missed: Vec<&String> = real
            .difference(&predicted)
            .filter(|p| !p.ends_with("/libcudnn_graph.so.9"))
            .collect();
        let extra: Vec<&String> = predicted.difference(&real).collect();
        assert!(
            missed.is_empty() && extra.is_empty(),
            "{name}: mapped but not predicted: {missed:#?}\npredicted but not mapped: {extra:#?}"
        );
        assert!(real.len() >= 10, "{name}: too few to compare: {real:#?}");
        compared += 1;
    }
    if compared == 0 {
        cudoctor_testkit::skip_missing_input("no JAX real env", "CUDOCTOR_REALENV_FULL");
    }
}

// CUDA_HOME and TORCH_CUDA_ARCH_LIST against a real toolkit (NVIDIA's nvcc wheel); ground
// truth is torch's own extension builder (torch.utils.cpp_extension._check_cuda_version, which
// every setup.py build of an extension calls) and the nvcc's own `--list-gpu-arch`.

/// The toolkit root of the nvcc-cu13 env (nvidia/cu13 holds bin/nvcc).
fn nvcc13_root() -> Option<PathBuf> {
    let python = real_env("nvcc-cu13")?;
    let root = site_packages(python.parent()?.parent()?).join("nvidia/cu13");
    assert!(root.join("bin/nvcc").is_file(), "{}", root.display());
    Some(root)
}

/// `check` of `python` with these variables, CUDA_HOME among them at the pip toolkit `root`.
/// Whether that toolkit can link `-lcudart` depends on the release NVIDIA's wheels publish
/// (some bring libcudart.so.13 but no libcudart.so): where its link directory (lib64, else lib,
/// as torch's cpp_extension picks) lacks it, that is a second, independent breakage, and TK012
/// must name it; where it has it, TK012 must be silent. Likewise the CCCL headers its
/// cuda_fp16.h includes (TK017).
fn check_json_at_toolkit(python: &Path, root: &Path, vars: &[(&str, String)]) -> Value {
    let lib = if root.join("lib64").is_dir() {
        root.join("lib64")
    } else {
        root.join("lib")
    };
    let unlinkable = !lib.join("libcudart.so").exists();
    // NVIDIA's pip compiler without the CCCL wheel: its own cuda_fp16.h includes <nv/target>,
    // which it lacks (TK017), a third independent breakage.
    let include = root.join("include");
    let needs_cccl = std::fs::read_to_string(include.join("cuda_fp16.h"))
        .is_ok_and(|t| t.contains("#include <nv/target>"));
    let no_cccl = needs_cccl
        && !include.join("cccl/nv/target").exists()
        && !include.join("nv/target").exists();
    let json = check_json_of(
        python,
        vars,
        1 + usize::from(unlinkable) + usize::from(no_cccl),
    );
    let has = |code: &str| {
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == code)
    };
    assert_eq!(
        has("TK012"),
        unlinkable,
        "{} has libcudart.so: {}; findings: {:#}",
        lib.display(),
        !unlinkable,
        json["findings"]
    );
    assert_eq!(
        has("TK017"),
        no_cccl,
        "{} lacks CCCL: {no_cccl}; findings: {:#}",
        include.display(),
        json["findings"]
    );
    json
}

/// What torch's extension builder says of CUDA_HOME=`root`: Err(message) where it refuses.
fn torch_extension_check(python: &Path, root: &Path) -> Result<String, String> {
    let code = "import warnings\nwarnings.simplefilter('always')\n\
        from torch.utils import cpp_extension as c\n\
        from torch.torch_version import TorchVersion\n\
        with warnings.catch_warnings(record=True) as w:\n\
        \x20   c._check_cuda_version('g++', TorchVersion('12.2.0'))\n\
        print('CHECKED', [str(x.message) for x in w])";
    let (ok, text) = python_says_with(python, code, &[("CUDA_HOME", root.display().to_string())]);
    if ok {
        Ok(text)
    } else {
        Err(text)
    }
}

#[test]
fn cuda_home_at_another_majors_nvcc_is_what_torchs_extension_builder_refuses() {
    let (Some(python), Some(root)) = (real_env("stock-cu126"), nvcc13_root()) else {
        return;
    };
    let refused =
        torch_extension_check(&python, &root).expect_err("torch 2.7.1 (CUDA 12.6) refuses nvcc 13");
    let refused = refused.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        refused.contains("mismatches the version that was used to compile PyTorch"),
        "{refused}"
    );
    let json = check_json_at_toolkit(&python, &root, &[("CUDA_HOME", root.display().to_string())]);
    let prefix = env_prefix(&python);
    let tk: Vec<&Value> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "TK002")
        .collect();
    assert_eq!(tk.len(), 1, "{:#}", json["findings"]);
    let text = tk[0].to_string();
    assert!(text.contains(&prefix), "{text}");
    assert!(
        text.contains("mismatches the version that was used to compile PyTorch"),
        "{text}"
    );
    // Running the installed wheels is not affected: a warning about builds, not an error.
    assert_eq!(tk[0]["severity"], "warning");
    // Besides: the pip compiler's missing cudart link (TK012) and, where that environment has
    // no CCCL wheel, the nv/target its cuda_fp16.h includes (TK017): other breakages of the same
    // toolkit, each real.
    assert!(
        env_problems(&json)
            .iter()
            .all(|(c, _)| c == "TK002" || c == "TK012" || c == "TK017"),
        "{:?}",
        env_problems(&json)
    );
}

#[test]
fn cuda_home_at_a_newer_nvcc_of_torchs_major_is_no_error() {
    let (Some(python), Some(root)) = (real_env("stock-current"), nvcc13_root()) else {
        return;
    };
    // torch accepts a toolkit of its own major (at most a warning of the minor).
    let accepted = torch_extension_check(&python, &root).unwrap_or_else(|e| panic!("{e}"));
    assert!(accepted.contains("CHECKED"), "{accepted}");
    let json = check_json_at_toolkit(&python, &root, &[("CUDA_HOME", root.display().to_string())]);
    let bad: Vec<_> = env_problems(&json)
        .into_iter()
        .filter(|(code, sev)| sev == "error" && code != "TK012")
        .collect();
    assert!(bad.is_empty(), "{bad:?}");
    assert!(
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["code"] != "TK002"),
        "{:#}",
        json["findings"]
    );
}

#[test]
fn an_arch_list_entry_the_selected_nvcc_cannot_build_is_named() {
    let (Some(python), Some(root)) = (real_env("stock-current"), nvcc13_root()) else {
        return;
    };
    // Ground truth: the nvcc's own list of targets.
    let out = Command::new(root.join("bin/nvcc"))
        .arg("--list-gpu-arch")
        .output()
        .expect("nvcc runs");
    let archs = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(archs.lines().any(|l| l.trim() == "compute_80"), "{archs}");
    assert!(!archs.lines().any(|l| l.trim() == "compute_70"), "{archs}");
    let json = check_json_at_toolkit(
        &python,
        &root,
        &[
            ("CUDA_HOME", root.display().to_string()),
            ("TORCH_CUDA_ARCH_LIST", "7.0;8.0".into()),
        ],
    );
    let krn: Vec<&Value> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "KRN003")
        .collect();
    assert_eq!(krn.len(), 1, "{:#}", json["findings"]);
    let evidence = krn[0]["evidence"].to_string();
    assert!(
        evidence.contains("sm_70 is outside what nvcc"),
        "{evidence}"
    );
    assert!(!evidence.contains("sm_80 is outside"), "{evidence}");
}

#[test]
fn the_libraries_section_names_a_wheels_private_runtime_copy_as_such() {
    let Some(python) = real_env("stock-current") else {
        return;
    };
    let out = check_output(&python, "text", &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    let runtimes: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("CUDA runtime"))
        .collect();
    // torch's libcudart, and the copy torchvision's wheel vendors for its image extension.
    assert_eq!(runtimes.len(), 2, "{text}");
    for line in runtimes {
        assert_eq!(
            line.contains("torchvision.libs/"),
            line.ends_with("(torchvision's private copy)"),
            "{line}"
        );
    }
}

/// FW023's libraries in a check of the env.
fn nowhere_sonames(json: &Value) -> BTreeSet<String> {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "FW023")
        .flat_map(|f| f["evidence"].as_array().unwrap().iter())
        .filter_map(|e| {
            let e = e.as_str()?;
            let (_, rest) = e.split_once(" needs ")?;
            Some(rest.split(':').next()?.to_string())
        })
        .collect()
}

#[test]
fn a_library_no_wheel_brings_is_what_cupy_itself_fails_to_find() {
    let Some(python) = real_env("cuda13-frameworks-beside-torch") else {
        return;
    };
    // Ground truth: CuPy's own loading of each CUDA library module (cupy.cuda's attributes).
    let (ok, text) = python_says(
        &python,
        "import cupy\nfor m in ['cublas', 'curand', 'cusolver', 'cusparse', 'cufft', 'nvrtc']:\n    try:\n        getattr(cupy.cuda, m); print(m, 'ok')\n    except ImportError as e:\n        print(m, 'fails', e)",
    );
    assert!(ok, "{text}");
    let failing: Vec<&str> = text.lines().filter(|l| l.contains(" fails ")).collect();
    assert_eq!(failing.len(), 1, "{text}");
    assert!(
        failing[0].starts_with("curand fails") && failing[0].contains("libcurand.so.10"),
        "{text}"
    );
    let json = check_json(&python, None);
    assert_eq!(
        nowhere_sonames(&json),
        BTreeSet::from(["libcurand.so.10".to_string()]),
        "{:#}",
        json["findings"]
    );
}

#[test]
fn the_fix_of_a_library_no_wheel_brings_repairs_a_copy_of_the_env() {
    if real_env("cuda13-frameworks-beside-torch").is_none() {
        return;
    }
    let copy = fix_repairs_from(
        "cuda13-frameworks-beside-torch",
        "FW023",
        &[],
        Index::Online,
    );
    let (ok, text) = python_says(
        &copy.python(),
        "import cupy; cupy.cuda.curand; print('loaded')",
    );
    assert!(ok && text.contains("loaded"), "{text}");
}

#[test]
fn onnx_runtimes_provider_without_cuda_wheels_is_what_ldd_finds_missing() {
    let Some(python) = real_env("onnxruntime-gpu") else {
        return;
    };
    let prefix = env_prefix(&python);
    let provider = format!(
        "{prefix}/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime_providers_cuda.so"
    );
    let out = Command::new("ldd").arg(&provider).output().expect("ldd");
    let ldd = String::from_utf8_lossy(&out.stdout).into_owned();
    // The driver's libcuda is the driver layer's, not a wheel's.
    let ldd_missing: BTreeSet<String> = ldd
        .lines()
        .filter(|l| l.contains("not found"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|n| !n.starts_with("libcuda.so"))
        .collect();
    let json = check_json(&python, None);
    let said = nowhere_sonames(&json);
    assert!(
        ldd_missing.is_subset(&said),
        "ldd: {ldd}\ncudoctor: {said:?}"
    );
    let root = one_root("onnxruntime-gpu", &json, "FW023");
    let cmds = fix_commands(&root);
    assert_eq!(cmds.len(), 1, "{cmds:?}");
    // The printed install, resolved by uv against the index: it brings the CUDA 13 wheels.
    let uv = resolved_by_uv(&cmds[0]);
    for wheel in [
        "+ nvidia-cublas==13",
        "+ nvidia-cuda-runtime==13",
        "+ nvidia-curand==10",
        "+ nvidia-cudnn-cu13==9",
    ] {
        assert!(uv.contains(wheel), "{wheel}: {uv}");
    }
}

/// `cudoctor check --deep` with only the framework probes' work (torch's attention, compile and
/// all-reduce stages left out), as JSON.
fn deep_frameworks_json(python: &Path) -> Value {
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args(["check", "--deep", "--format", "json"]);
    for stage in ["sdpa", "extensions", "compile", "all-reduce"] {
        cmd.args(["--deep-skip", stage]);
    }
    cmd.arg("--python").arg(python);
    let out = with_only(cmd, &[]).output().expect("cudoctor runs");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "cudoctor check --deep JSON: {e}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    support::check_fixes(&v);
    v
}

/// What the framework itself says, asked directly in its own process: where it computes, or how
/// it fails. Ground truth for the probe: `(signal, platform, device count, error)`.
fn framework_says(python: &Path, framework: &str, ships: &[&str]) -> (Option<i32>, String) {
    let code = match framework {
        "jax" => "import jax\nprint(jax.default_backend(), len([d for d in jax.devices() if d.platform != 'cpu']))".to_string(),
        "cupy" => "import cupy\ntry:\n    print('cuda', cupy.cuda.runtime.getDeviceCount())\nexcept Exception as e:\n    print('%s: %s' % (type(e).__name__, e))".to_string(),
        // ONNX Runtime's CUDA provider loaded as the loader loads it: what it lacks.
        "onnx_runtime" => {
            let provider = ships
                .iter()
                .find(|s| s.ends_with("libonnxruntime_providers_cuda.so"))
                .expect("the CUDA provider");
            format!("import ctypes\ntry:\n    ctypes.CDLL({provider:?}); print('loads')\nexcept OSError as e:\n    print(e)")
        }
        "ctranslate2" => "import ctranslate2\nprint('cuda', ctranslate2.get_cuda_device_count())".to_string(),
        // numba's own reason, on one line, where it has no GPU.
        "numba_cuda" => "from numba import cuda\nif cuda.is_available():\n    print('cuda', len(cuda.gpus))\nelse:\n    try:\n        cuda.cudadrv.driver.driver.get_device_count()\n    except Exception as e:\n        print(' '.join(('%s: %s' % (type(e).__name__, e)).split()))".to_string(),
        // Paddle's device count and the device it then computes on.
        "paddle" => "import paddle\nprint(paddle.device.cuda.device_count(), paddle.device.get_device())".to_string(),
        // RMM's own CUDA error, or its count.
        "rapids" => "from rmm._cuda import gpu\ntry:\n    print('cuda', gpu.getDeviceCount())\nexcept Exception as e:\n    print('%s: %s' % (type(e).__name__, e))".to_string(),
        // DALI's count, and why where it is 0.
        "dali" => "from nvidia.dali import backend\nprint('cuda', backend.GetCUDADeviceCount())\ntry:\n    backend.GetCUDACurrentDevice()\nexcept Exception as e:\n    print(' '.join(('%s: %s' % (type(e).__name__, e)).split()))".to_string(),
        other => panic!("no ground truth for {other}"),
    };
    let mut cmd = Command::new(python);
    cmd.args(["-I", "-c", &code]);
    let out = with_only(cmd, &[]).output().expect("the env's python runs");
    use std::os::unix::process::ExitStatusExt;
    (
        out.status.signal(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    )
}

#[test]
fn each_frameworks_probe_says_what_the_framework_itself_says() {
    let mut judged = 0;
    for name in [
        "jax-cuda12",
        "jax-cuda13",
        "cupy-cuda12x-beside-torch",
        "onnxruntime-gpu",
        "cuda13-frameworks-beside-torch",
        "ctranslate2-numba-cuda",
        "paddlepaddle-gpu",
        "cudf-cu12",
        "dali-cuda120",
    ] {
        let Some(python) = real_env(name) else {
            continue;
        };
        let json = deep_frameworks_json(&python);
        let prefix = env_prefix(&python);
        let builds = frameworks_of(&json, &prefix);
        let probes = json["snapshot"]["deep"]["frameworks"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no framework probes"));
        let probed: Vec<&str> = probes
            .iter()
            .map(|p| p["framework"].as_str().unwrap())
            .collect();
        let expected: Vec<&str> = builds
            .iter()
            .map(|b| b["framework"].as_str().unwrap())
            .filter(|f| {
                matches!(
                    *f,
                    "jax"
                        | "cupy"
                        | "onnx_runtime"
                        | "tensorflow"
                        | "ctranslate2"
                        | "numba_cuda"
                        | "paddle"
                        | "rapids"
                        | "dali"
                        | "tensorrt"
                        | "llama_cpp"
                        | "transformer_engine"
                )
            })
            .collect();
        assert_eq!(
            probed, expected,
            "{name}: every framework with a probe, once"
        );
        for p in probes {
            let framework = p["framework"].as_str().unwrap();
            let ships: Vec<&str> = builds
                .iter()
                .filter(|b| b["framework"] == framework)
                .flat_map(|b| b["ships"].as_array().unwrap())
                .filter_map(Value::as_str)
                .collect();
            let (signal, said) = framework_says(&python, framework, &ships);
            let r = &p["result"];
            match signal {
                Some(sig) => assert_eq!(
                    p["ending"],
                    serde_json::json!({"kind": "crashed", "signal": sig}),
                    "{name} {framework}: the framework dies by signal {sig} when asked directly"
                ),
                None => {
                    assert_eq!(p["ending"]["kind"], "reported", "{name} {framework}: {p}");
                    match framework {
                        "jax" => assert_eq!(
                            said,
                            format!(
                                "{} {}",
                                r["platform"].as_str().unwrap(),
                                r["devices"].as_array().unwrap().len()
                            ),
                            "{name}"
                        ),
                        "numba_cuda" if said.starts_with("cuda ") => assert_eq!(
                            said,
                            format!("cuda {}", r["devices"].as_array().unwrap().len()),
                            "{name}"
                        ),
                        "cupy" | "numba_cuda" => {
                            assert_eq!(said, r["gpu_error"].as_str().unwrap_or_default(), "{name}")
                        }
                        "ctranslate2" => assert_eq!(
                            said,
                            format!("cuda {}", r["devices"].as_array().unwrap().len()),
                            "{name}"
                        ),
                        "paddle" => assert_eq!(
                            said,
                            format!(
                                "{} {}",
                                r["devices"].as_array().unwrap().len(),
                                r["platform"].as_str().unwrap()
                            ),
                            "{name}"
                        ),
                        "rapids" => {
                            assert_eq!(said, r["gpu_error"].as_str().unwrap_or_default(), "{name}")
                        }
                        "dali" => {
                            let (count, why) = said.split_once('\n').unwrap_or((&said, ""));
                            assert_eq!(
                                count,
                                format!("cuda {}", r["devices"].as_array().unwrap().len()),
                                "{name}"
                            );
                            assert_eq!(why, r["gpu_error"].as_str().unwrap_or_default(), "{name}");
                        }
                        _ => {
                            // The library the provider lacks is the one ONNX Runtime names.
                            let lacks = said.split(':').next().unwrap_or_default();
                            assert!(
                                said != "loads" && r["gpu_error"].as_str().unwrap().contains(lacks),
                                "{name}: {said} / {r}"
                            );
                        }
                    }
                }
            }
            // On this machine (no GPU, no driver) every CUDA build's probe is a finding; what
            // follows from the missing driver or a missing library of the build says so, and
            // only a crash, whose cause is not known, stands alone.
            let finding = json["findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| {
                    f["code"] == "ACC011"
                        && f["about"].as_array().unwrap().iter().any(|s| {
                            s["package"]["name"] == p["package"]
                                || s.get("name") == Some(&p["package"])
                        })
                })
                .unwrap_or_else(|| panic!("{name} {framework}: no ACC011 {}", json["findings"]));
            assert_eq!(
                finding["caused_by"].is_null(),
                signal.is_some(),
                "{name} {framework}: {finding}"
            );
            judged += 1;
        }
    }
    if judged == 0 {
        cudoctor_testkit::skip_missing_input(
            "no env with a framework probe was built (they are of make-envs.sh --full)",
            "CUDOCTOR_REALENV_FULL",
        );
    }
}

/// bitsandbytes' own chooser (`get_cuda_bnb_library_path` of the installed release), asked for
/// torch's CUDA `cuda` ("12.9"), with BNB_CUDA_VERSION set when `override_value` is: the file
/// name it picks (it may not exist).
fn bitsandbytes_chooses(python: &Path, cuda: &str, override_value: Option<&str>) -> String {
    let (major, minor) = cuda.split_once('.').unwrap();
    let code = format!(
        "from bitsandbytes.cuda_specs import CUDASpecs\n\
         from bitsandbytes.cextension import get_cuda_bnb_library_path\n\
         print(get_cuda_bnb_library_path(CUDASpecs((9, 0), '{major}{minor}', ({major}, {minor}))).name)"
    );
    let vars: Vec<(&str, String)> = override_value
        .map(|v| ("BNB_CUDA_VERSION", v.to_string()))
        .into_iter()
        .collect();
    let (ok, out) = python_says_with(python, &code, &vars);
    assert!(ok, "{out}");
    out.lines()
        .map(str::trim)
        .find(|l| l.starts_with("libbitsandbytes_"))
        .unwrap_or_else(|| panic!("no library named: {out}"))
        .to_string()
}

/// cudoctor's chooser of bitsandbytes' library gives what the installed bitsandbytes itself
/// gives, for torch CUDA releases it ships a build of, between them, beyond them and under the
/// override.
#[test]
fn bitsandbytes_library_choice_is_bitsandbytes_own() {
    use cudoctor_analyse::bitsandbytes::{choose, library_cuda, Choice};
    let Some(python) = real_env("bnb-transformers") else {
        return;
    };
    let site = Path::new(&env_prefix(&python)).join("lib");
    let dir = std::fs::read_dir(&site)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("site-packages/bitsandbytes"))
        .find(|p| p.is_dir())
        .expect("bitsandbytes is installed");
    let shipped: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| library_cuda(&e.file_name().to_string_lossy()))
        .collect();
    assert!(shipped.len() > 3, "{shipped:?}");
    let (_, release) = python_says(
        &python,
        "import importlib.metadata as m; print(m.version('bitsandbytes'))",
    );
    let release = release.trim().to_string();
    for (cuda, override_value) in [
        ("13.2", None),
        ("12.6", None),
        ("12.9", None),
        ("12.0", None),
        ("13.1", None),
        ("11.7", None),
        ("14.0", None),
        ("13.2", Some("124")),
        ("13.2", Some("125")),
    ] {
        let theirs = bitsandbytes_chooses(&python, cuda, override_value);
        let ours = choose(
            &shipped,
            Some(cuda.parse().unwrap()),
            override_value,
            Some(&release),
        );
        let theirs_cuda = library_cuda(&theirs).filter(|c| shipped.contains(c));
        let expected = theirs_cuda.map_or(Choice::None, Choice::Loads);
        assert_eq!(
            ours, expected,
            "CUDA {cuda}, override {override_value:?}: bitsandbytes picks {theirs}"
        );
    }
}

/// bitsandbytes ships builds for CUDA 11.8 to 13.2 and loads the one of torch's CUDA: on a
/// Blackwell GPU the older builds' missing sm_120 code is no problem (check raised KRN002 for
/// them), `kernels` says they are not loaded; on a Volta, where torch for CUDA 13 has no code
/// either, bitsandbytes' finding follows torch's repair, whose CUDA-12 build it then loads.
#[test]
fn bitsandbytes_is_judged_by_the_build_it_loads() {
    let Some(python) = real_env("bnb-transformers") else {
        return;
    };
    let check = |gpu: &str| what_if_json("check", gpu, &python).0;
    let blackwell = findings(&check("sm_120"));
    assert!(
        !blackwell.iter().any(|(c, _, _)| c == "KRN002"),
        "{blackwell:?}"
    );
    let volta = findings(&check("sm_70"));
    assert!(
        volta
            .iter()
            .any(|(c, _, by)| c == "KRN002" && by.as_deref() == Some("KRN001")),
        "{volta:?}"
    );
    assert!(
        !volta.iter().any(|(c, _, by)| c == "KRN002" && by.is_none()),
        "{volta:?}"
    );
    let (report, _) = what_if_json("kernels", "sm_120", &python);
    let not_loaded = not_judged_paths(&report);
    assert!(
        not_loaded
            .iter()
            .any(|p| p.ends_with("libbitsandbytes_cuda118.so")),
        "{not_loaded:?}"
    );
    let judged = report["gpus"][0]["libraries"].as_array().unwrap();
    assert!(
        judged.iter().all(|l| !l["path"]
            .as_str()
            .unwrap()
            .contains("bitsandbytes/libbitsandbytes_cuda118")),
        "{judged:?}"
    );
}

/// `kernels` of a stock install on a GPU its torch supports passes: cuFFT's fat binary holds
/// one stub cubin (its kernels are elsewhere), which `kernels` read as "cannot run" on every
/// newer GPU; now it is not judged, and says why.
#[test]
fn kernels_of_a_stock_install_on_a_supported_gpu_exits_0() {
    let Some(python) = real_env("stock-current") else {
        return;
    };
    let (report, status) = what_if_json("kernels", "sm_120", &python);
    let libraries = report["libraries"].as_array().unwrap();
    let cufft = libraries
        .iter()
        .find(|l| l["path"].as_str().unwrap().ends_with("/libcufft.so.12"))
        .expect("the stock install has cuFFT");
    // The case this guards: one stub cubin in a library of hundreds of MB.
    assert_eq!(cufft["sass"].as_array().unwrap().len(), 1, "{cufft}");
    let not_judged = not_judged_paths(&report);
    assert!(
        not_judged.iter().any(|p| p.ends_with("/libcufft.so.12")),
        "{not_judged:?}"
    );
    assert!(status.success(), "{report}");
}

/// The knowledge base's arch list of a real env's torch build agrees with the fat binaries of
/// its libtorch_cuda.so: every architecture the list names has machine code there, and the list
/// says PTX exactly where the library carries PTX (2.7.1+cu126's row said 9.0+PTX from a
/// main-branch snapshot, and plan called it reaching an sm_120 GPU that check found it fails).
#[test]
fn the_arch_lists_of_real_torch_builds_are_their_kernel_images() {
    let kb = cudoctor_kb::Kb::embedded();
    let mut judged = 0;
    for name in [
        "stock-current",
        "stock-cu126",
        "cuda13-frameworks-beside-torch",
        "xformers-matching",
    ] {
        let Some(python) = real_env(name) else {
            continue;
        };
        let json = check_json(&python, None);
        let env = &json["snapshot"]["python_envs"][0];
        let torch = env["torch"]["version"].as_str().unwrap().to_string();
        let cuda = env["torch"]["cuda"].as_str().unwrap();
        let release = torch.split('+').next().unwrap();
        let tag = cuda.parse::<cudoctor_kb::CudaVersion>().unwrap().tag();
        let Some(archs) = kb
            .torch(release)
            .and_then(|r| r.variant(&tag))
            .and_then(|v| v.archs())
        else {
            panic!("{name}: torch {torch} ({tag}) has no arch list in the knowledge base");
        };
        let lib = json["snapshot"]["kernel_images"]["libraries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| {
                l["path"]
                    .as_str()
                    .unwrap()
                    .ends_with("/torch/lib/libtorch_cuda.so")
            })
            .unwrap_or_else(|| panic!("{name}: no libtorch_cuda.so scanned"));
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (sass, ptx) = (strings(&lib["sass"]), strings(&lib["ptx"]));
        for a in &archs {
            let sm = format!("sm_{}{}", a.cc.major, a.cc.minor);
            assert!(
                sass.contains(&sm),
                "{name}: torch {torch} ({tag}): the list names {sm}, the library has {sass:?}"
            );
            let compute = format!("compute_{}{}", a.cc.major, a.cc.minor);
            assert_eq!(
                a.ptx,
                ptx.contains(&compute),
                "{name}: torch {torch} ({tag}): PTX for {} in the list: {}, in the library: {ptx:?}",
                a.cc,
                a.ptx
            );
        }
        assert!(
            ptx.is_empty() || archs.iter().any(|a| a.ptx),
            "{name}: the library has PTX {ptx:?} the list does not name"
        );
        judged += 1;
    }
    if judged == 0 {
        // Each missing env said SKIPPED (or failed where CI requires it).
        cudoctor_testkit::skip_missing_input(
            "no real env with torch to compare",
            "CUDOCTOR_REQUIRE_REAL_ENVS",
        );
    }
}

/// Every shared object of `prefix` once (by file identity), without following symbolic links.
fn shared_objects(prefix: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut dirs = vec![prefix.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.path().symlink_metadata() else {
                continue;
            };
            let name = e.file_name().to_string_lossy().into_owned();
            if meta.is_dir() {
                dirs.push(e.path());
            } else if meta.is_file()
                && (name.ends_with(".so") || name.contains(".so."))
                && seen.insert((meta.dev(), meta.ino()))
            {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// The symbol reader takes an object's requirements from the symbols before its first hashed
/// one (linkers put every undefined symbol there): on every library of real wheels, that gives
/// the same requirements as reading every symbol of the table.
#[test]
fn requirements_read_before_the_hashed_symbols_are_every_undefined_symbol_of_real_wheels() {
    let mut checked = 0;
    for name in ["stock-current", "cuda13-frameworks-beside-torch"] {
        let Some(python) = real_env(name) else {
            continue;
        };
        let prefix = python
            .parent()
            .and_then(Path::parent)
            .unwrap()
            .to_path_buf();
        for lib in shared_objects(&prefix) {
            let Ok(elf) = cudoctor_ldso::ElfFile::open(&lib) else {
                continue;
            };
            let table = elf.symbol_table().expect("symbols of a real library");
            let full: BTreeSet<String> = table
                .symbols()
                .into_iter()
                .filter(|s| {
                    !s.defined
                        && matches!(
                            s.binding,
                            cudoctor_ldso::SymbolBinding::Global
                                | cudoctor_ldso::SymbolBinding::Weak
                        )
                        && !s.name.is_empty()
                })
                .map(|s| match s.version {
                    Some(v) => format!("{}@{v}", s.name),
                    None => s.name,
                })
                .collect();
            let read: BTreeSet<String> =
                table.requirements().iter().map(|r| r.to_string()).collect();
            assert_eq!(read, full, "{}", lib.display());
            checked += 1;
        }
    }
    if checked > 0 {
        assert!(checked > 100, "only {checked} libraries");
    }
}

#[test]
fn a_companion_that_works_with_torch_is_kept_by_check_plan_and_the_fix() {
    let Some(python) = real_env("companions-beside-torch-2.15") else {
        return;
    };
    if !uv_on_path("a_companion_that_works_with_torch_is_kept_by_check_plan_and_the_fix") {
        return;
    }
    let name = "companions-beside-torch-2.15";
    let json = check_json(&python, None);
    let root = one_root(name, &json, "FW002");
    // check: torchvision of another release is the one companion judged wrong; torchaudio
    // 2.11.1 (its metadata: torch>=2.11) is kept, and its fix says so without removing it.
    let titles: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "FW002")
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 1, "{titles:?}");
    assert!(titles[0].contains("torchvision 0.28.0"), "{titles:?}");
    let cmds = fix_commands(&root);
    assert!(
        cmds.iter()
            .all(|c| !c.contains("uninstall") && !c.contains("torchaudio")),
        "{cmds:?}"
    );
    let fix_text = root["fix"].to_string();
    assert!(fix_text.contains("torch>=2.11"), "{fix_text}");
    // plan says the same of both companions, and its remedy is check's, word for word.
    let out = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["plan", "--format", "json", "--python"])
        .arg(&python)
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["remedy"]["steps"], root["fix"], "{plan:#}");
    let said = plan["current"]["findings"].to_string();
    assert!(
        said.contains("torchaudio 2.11.1 works with torch 2.15.0"),
        "{said}"
    );
    assert!(said.contains("torchvision 0.28.0 does not pair"), "{said}");
    // Ground truth: the printed command, run in a copy of the env, repairs it, and torchaudio
    // still imports there.
    let copy = fix_repairs_from(name, "FW002", &[], Index::Online);
    let (ok, text) = python_says(
        &copy.python(),
        "import torch, torchvision, torchaudio; print(torchaudio.__version__)",
    );
    assert!(ok && text.contains("2.11.1"), "{text}");
}

/// A uv project's `.venv` with a companion installed by hand beside its lock: the fix edits the
/// project (`uv add --project`), says which files change, and survives the next `uv sync`
/// (a `uv pip install` into `.venv` would be undone by it).
#[test]
fn a_uv_projects_fix_edits_the_project_and_survives_uv_sync() {
    // The project is made from uv's cache of the companions env (torch 2.15.0, torchaudio 2.11.1).
    if real_env("companions-beside-torch-2.15").is_none()
        || !uv_on_path("a_uv_projects_fix_edits_the_project_and_survives_uv_sync")
    {
        return;
    }
    let uv = |args: &[&str], dir: &Path| {
        let out = Command::new("timeout")
            .arg("600")
            .arg("uv")
            .args(args)
            .current_dir(dir)
            .env_remove("VIRTUAL_ENV")
            .output()
            .expect("uv (scripts/ci/uv.sh installs it into ~/.local/bin)");
        assert!(
            out.status.success(),
            "uv {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let root = cache_dir().join(format!("uv-project-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let _cleanup = EnvCopy(root.clone());
    std::fs::write(
        root.join("pyproject.toml"),
        "[project]\nname = \"p\"\nversion = \"0.1.0\"\nrequires-python = \">=3.11,<3.12\"\ndependencies = [\"torch==2.15.0\", \"torchaudio==2.11.1\"]\n",
    )
    .unwrap();
    uv(&["sync", "-q", "--python", "python3.11"], &root);
    // torchvision of another release, by hand beside the lock.
    uv(
        &[
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--python",
            ".venv/bin/python",
            "torchvision==0.28.0",
        ],
        &root,
    );
    let python = root.join(".venv/bin/python");
    let json = check_json(&python, None);
    let fw002 = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "FW002")
        .cloned()
        .expect("FW002");
    let cmds = fix_commands(&fw002);
    assert_eq!(cmds.len(), 1, "{cmds:?}");
    assert!(cmds[0].starts_with("uv add --project "), "{cmds:?}");
    assert!(
        fw002["fix"].to_string().contains("pyproject.toml"),
        "{fw002:#}"
    );
    assert_eq!(
        json["snapshot"]["python_envs"][0]["project"]["kind"], "uv",
        "{:#}",
        json["snapshot"]["python_envs"][0]
    );
    let out = Command::new("timeout")
        .args(["600", "sh", "-c", &cmds[0]])
        .env_remove("VIRTUAL_ENV")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The next sync keeps it: the requirement is declared and locked.
    uv(&["sync", "-q"], &root);
    let after = check_json(&python, None);
    assert!(
        !problem_codes(&after).contains("FW002"),
        "{:#?}",
        findings(&after)
    );
    let (ok, text) = python_says(
        &python,
        "import torch, torchvision, torchaudio; print(torchvision.__version__, torchaudio.__version__)",
    );
    assert!(
        ok && text.contains("0.29.2") && text.contains("2.11.1"),
        "{text}"
    );
    let declared = std::fs::read_to_string(root.join("pyproject.toml")).unwrap();
    assert!(declared.contains("torchvision==0.29.2"), "{declared}");
}

/// uv, which these tests run, is on PATH; else a SKIPPED line (a failure with
/// CUDOCTOR_REQUIRE_TOOLS=1) and false.
fn uv_on_path(test: &str) -> bool {
    let found = Command::new("uv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        cudoctor_testkit::skip_missing_tool(
            test,
            "uv is not on PATH (scripts/ci/uv.sh installs it into ~/.local/bin)",
        );
    }
    found
}

/// `check --verify` on the env: the JSON report's `verify` list and the text report's lines.
fn verify_reports(python: &Path, how: &str) -> (Value, String) {
    let run = |format: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
            .args(["check", "--format", format, how, "--python"])
            .arg(python)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let json: Value = serde_json::from_str(&run("json")).unwrap();
    (json, run("text"))
}

/// The one verification of `code` in a report's `verify` list.
fn verification<'a>(name: &str, json: &'a Value, code: &str) -> &'a Value {
    let list = json["verify"].as_array().unwrap();
    let of: Vec<&Value> = list.iter().filter(|v| v["code"] == code).collect();
    assert_eq!(of.len(), 1, "{name}: {list:#?}");
    of[0]
}

/// `--verify` proves the printed fix of three broken envs on their facts: a companion of another
/// release, a wheel with a deleted library, two CUDA majors. Each says "verified" with the
/// post-fix verdict (the machine's own root cause, a container without GPUs here, is named as
/// another root cause), and the printed commands, run in a copy of the env, do repair it
/// (`the_fix_of_*_repairs_a_copy_of_the_env`).
#[test]
fn verify_proves_the_fixes_of_three_broken_envs() {
    for (name, code, assumed) in [
        ("companion-wrong-release", "FW002", None),
        ("deleted-wheel-lib", "FW010", None),
        (
            "cupy-cuda12x-beside-torch",
            "FW020",
            Some("cupy-cuda13x[ctk]"),
        ),
    ] {
        let Some(python) = real_env(name) else {
            continue;
        };
        let (json, text) = verify_reports(&python, "--verify");
        let v = verification(name, &json, code);
        let want = if assumed.is_some() {
            "verified_assuming"
        } else {
            "verified"
        };
        assert_eq!(v["status"], want, "{name}: {v:#}");
        assert_eq!(v["method"], "facts", "{name}: {v:#}");
        if let Some(a) = assumed {
            assert_eq!(v["assumed"][0], a, "{name}: {v:#}");
        }
        // What remains is the machine's, never this env's.
        for r in v["remaining"].as_array().unwrap() {
            assert!(
                r["code"].as_str().unwrap().starts_with("PLT")
                    || r["code"].as_str().unwrap().starts_with("DRV"),
                "{name}: {v:#}"
            );
        }
        let line = text
            .lines()
            .skip_while(|l| !l.starts_with("Verify"))
            .flat_map(str::split_whitespace)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            line.contains(&format!("{code} verified")) && line.contains("post-fix verdict:"),
            "{name}: {text}"
        );
    }
}

/// torch 2.15 with torchvision of another release and a torchaudio whose metadata accepts
/// torch 2.15: the verified fix changes torchvision only, and torchaudio is still installed
/// after it (the post-fix facts keep it, no FW002 about it).
#[test]
fn verify_keeps_a_working_torchaudio_through_the_torchvision_fix() {
    let Some(python) = real_env("companions-beside-torch-2.15") else {
        return;
    };
    let (json, _) = verify_reports(&python, "--verify");
    let v = verification("companions-beside-torch-2.15", &json, "FW002");
    assert_eq!(v["status"], "verified", "{v:#}");
    let changes = v["changes"].to_string();
    assert!(
        !changes.contains("torchaudio") && !changes.contains("remove"),
        "{v:#}"
    );
}

/// Every file of `dir` with its size, modification time and inode: what `--verify=install`
/// must leave as it was.
fn fingerprint(dir: &Path) -> BTreeSet<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            }
            out.insert(format!(
                "{} {} {} {}",
                e.path().display(),
                m.len(),
                m.mtime(),
                m.ino()
            ));
        }
    }
    out
}

/// The bytes free on `dir`'s file system, as `df` reports them.
fn free_bytes(dir: &Path) -> u64 {
    let out = Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("df's output: {out:?}"))
}

/// `--verify=install` runs the printed reinstall of the damaged wheel in a temporary copy of
/// the env and checks the copy: "verified in a copy of the environment", the copy deleted, and
/// the env itself not changed in any file. Needs uv and the index (or uv's cache of the wheel).
#[test]
fn verify_install_repairs_a_copy_and_leaves_the_env_as_it_was() {
    let Some(python) = real_env("deleted-wheel-lib") else {
        return;
    };
    if !uv_on_path("verify_install_repairs_a_copy_and_leaves_the_env_as_it_was") {
        return;
    }
    let prefix = python.parent().unwrap().parent().unwrap();
    let before = fingerprint(prefix);
    let scratch = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--format", "json", "--verify=install", "--python"])
        .arg(&python)
        .env("TMPDIR", scratch.path())
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let v = verification("deleted-wheel-lib", &json, "FW010");
    assert_eq!(v["method"], "install", "{v:#}");
    // The copy (gigabytes) and the installer's downloads need free disk, which no install
    // provides: a shortage cudoctor reports is skipped when the disk's own figure confirms it.
    let note = v["note"].as_str().unwrap_or_default();
    if v["status"] == "not_verified"
        && (note.starts_with("not enough free space for a copy")
            || note.contains("No space left on device"))
    {
        let env_bytes: u64 = before
            .iter()
            .filter_map(|line| line.rsplit(' ').nth(2)?.parse::<u64>().ok())
            .sum();
        let free = free_bytes(scratch.path());
        assert!(
            free < env_bytes + (3 << 30),
            "cudoctor reported no room, but {} has {free} bytes free for an env of {env_bytes}: {v:#}",
            scratch.path().display()
        );
        cudoctor_testkit::skip_short_of(
            "verify_install_repairs_a_copy_and_leaves_the_env_as_it_was",
            &format!("{free} bytes free on the temporary directory's disk, for a copy of {env_bytes} bytes and the installer's downloads ({note})"),
        );
        return;
    }
    assert_eq!(v["status"], "verified", "{v:#}");
    assert_eq!(fingerprint(prefix), before, "the env changed");
    assert_eq!(
        std::fs::read_dir(scratch.path()).unwrap().count(),
        0,
        "the copy was left behind"
    );
    // Ground truth in the env itself: the library is still missing there.
    let (ok, _) = python_says(&python, "import torch");
    assert!(!ok);
}

/// `plan --verify` proves the remedy it prints, which is check's fix word for word: the same
/// verification, in plan's JSON as its `verify` list.
#[test]
fn plan_verify_proves_its_remedy_as_check_does() {
    let Some(python) = real_env("companions-beside-torch-2.15") else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["plan", "--format", "json", "--verify", "--python"])
        .arg(&python)
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (check, _) = verify_reports(&python, "--verify");
    let v = &plan["verify"][0];
    assert_eq!(v["status"], "verified", "{plan:#}");
    assert_eq!(
        v,
        verification("companions-beside-torch-2.15", &check, "FW002")
    );
}

// ------------------------------------------------------------- cuda.pathfinder as an oracle
//
// NVIDIA's own search order for the CUDA libraries of a Python environment (`cuda-pathfinder`,
// which torch's CUDA-13 builds install) run in the env's interpreter: for every library
// pathfinder resolves, the file cudoctor's emulated process of that env maps for the same
// library is the same file, and a library pathfinder finds nowhere is one cudoctor maps from
// nowhere in the env either.

/// `python -I -c CODE` in its own process group, killed after `secs`; None on a timeout.
fn python_within(python: &Path, code: &str, secs: u64) -> Option<std::process::Output> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(python);
    cmd.args(["-I", "-c", code])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let mut child = with_only(cmd, &[])
        .spawn()
        .expect("the env's python starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if child.try_wait().expect("wait").is_some() {
            return Some(child.wait_with_output().expect("output"));
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// pathfinder's answer for each library it supports: the file it loads, or None where it finds
/// none. None when the env has no cuda-pathfinder.
fn pathfinder_resolution(
    python: &Path,
) -> Option<std::collections::BTreeMap<String, Option<String>>> {
    const SCRIPT: &str = r#"
import json, os
try:
    import cuda.pathfinder as p
except ImportError:
    print(json.dumps(None)); raise SystemExit
out = {}
for name in sorted(p.SUPPORTED_NVIDIA_LIBNAMES):
    try:
        out[name] = os.path.realpath(p.load_nvidia_dynamic_lib(name).abs_path)
    except Exception:
        out[name] = None
print(json.dumps(out))
"#;
    let out = python_within(python, SCRIPT, 120).expect("pathfinder answers within 120 s");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("pathfinder's JSON")
}

fn pathfinder_agrees(name: &str) {
    let Some(python) = real_env(name) else { return };
    let Some(found) = pathfinder_resolution(&python) else {
        cudoctor_testkit::skip_missing_input(
            &format!("{name} has no cuda-pathfinder"),
            "CUDOCTOR_REQUIRE_REAL_ENVS",
        );
        return;
    };
    let prefix = env_prefix(&python);
    let json = check_json(&python, None);
    let procs = json["snapshot"]["loader"]["processes"].as_array().unwrap();
    let p = procs.iter().find(|p| p["env_prefix"] == prefix.as_str());
    let mapped: Vec<String> = p
        .and_then(|p| p["objects"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|o| o["real_path"].as_str().or(o["path"].as_str()))
        .map(str::to_string)
        .collect();
    let mut compared = 0;
    for (lib, by_pathfinder) in &found {
        let stem = format!("lib{lib}.so");
        let ours: Vec<&String> = mapped
            .iter()
            .filter(|m| m.rsplit('/').next().is_some_and(|f| f.starts_with(&stem)))
            .collect();
        match by_pathfinder {
            Some(file) if !ours.is_empty() => {
                compared += 1;
                assert!(
                    ours.iter().all(|o| *o == file),
                    "{name}: {lib}: cuda.pathfinder loads {file}, cudoctor maps {ours:?}"
                );
            }
            None => assert!(
                ours.iter().all(|o| !o.starts_with(&prefix)),
                "{name}: {lib}: cuda.pathfinder finds none, cudoctor maps {ours:?} from the env"
            ),
            _ => {}
        }
    }
    assert!(
        compared >= 5,
        "{name}: too few libraries both resolve to compare ({compared}): pathfinder {found:?}, cudoctor {mapped:?}"
    );
}

#[test]
fn cuda_pathfinder_resolves_the_libraries_cudoctor_maps_in_stock_current() {
    pathfinder_agrees("stock-current");
}

/// torch for CUDA 13 beside CuPy for CUDA 12 (whose -cu12 wheels are there too): pathfinder
/// takes the CUDA-13 libraries, as torch's process does.
#[test]
fn cuda_pathfinder_resolves_the_libraries_cudoctor_maps_beside_a_cuda12_framework() {
    pathfinder_agrees("cupy-cuda12x-beside-torch");
}

// ------------------------------------------------- a library opened by name (CTranslate2)
//
// Ground truth: CTranslate2's own dlopen of libcublas.so.12, made by its library. libctranslate2
// exports its cuBLAS entry points (`cublasCreate_v2` ...), which open the library by that name
// on their first call; called through ctypes, the dlopen is the library's own (its RPATH, the
// process's LD_LIBRARY_PATH, what is already loaded), and it fails the way a GPU translator
// does ("Library libcublas.so.12 is not found or cannot be loaded": the process aborts).

/// Whether libctranslate2's own dlopen of libcublas.so.12 succeeds in `python`'s env (after
/// `first`'s imports), with these variables set; what it said.
fn ctranslate2_opens_cublas(python: &Path, first: &str, vars: &[(&str, String)]) -> (bool, String) {
    let code = format!(
        "{first}\nimport ctypes, glob, os, ctranslate2\n\
         lib = glob.glob(os.path.join(os.path.dirname(ctranslate2.__file__), os.pardir, 'ctranslate2.libs', 'libctranslate2-*.so*'))[0]\n\
         ctypes.CDLL(lib).cublasCreate_v2(ctypes.byref(ctypes.c_void_p()))\n\
         print('opened', [l.split()[-1] for l in open('/proc/self/maps') if l.rstrip().endswith('/libcublas.so.12')][0])"
    );
    let (ok, text) = python_says_with(python, &code, vars);
    if !ok {
        assert!(
            text.contains("Library libcublas.so.12 is not found or cannot be loaded"),
            "not CTranslate2's own failure: {text}"
        );
    }
    (ok, text)
}

/// FW023 of the env's CTranslate2, if any.
fn ctranslate2_fw023(json: &Value) -> Option<Value> {
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "FW023" && f["title"].as_str().unwrap().contains("CTranslate2"))
        .cloned()
}

/// The directory an `export LD_LIBRARY_PATH=...` step of a fix names (its first entry).
fn exported_llp(steps: &[String]) -> String {
    let step = steps
        .iter()
        .find_map(|s| s.strip_prefix("export LD_LIBRARY_PATH="))
        .unwrap_or_else(|| panic!("no LD_LIBRARY_PATH in the fix: {steps:?}"));
    step.trim_matches('\'').to_string()
}

/// CTranslate2 without cuBLAS (`ctranslate2-numba-cuda`), through FW023's whole fix in a copy
/// of the env: the wheel installed alone leaves CTranslate2's dlopen failing, and cudoctor
/// still says so, naming the directory; with it on LD_LIBRARY_PATH the dlopen succeeds and
/// cudoctor says nothing new.
#[test]
fn ctranslate2s_fix_for_cublas_leads_to_a_process_whose_dlopen_finds_it() {
    let Some(python) = real_env("ctranslate2-numba-cuda") else {
        return;
    };
    let (ok, text) = ctranslate2_opens_cublas(&python, "", &[]);
    assert!(!ok, "{text}");
    // `libs` says the same: the library that opens it, and exit status 1.
    let out = libs_json_output(&python);
    assert_eq!(out.status.code(), Some(1));
    let libs: Value = serde_json::from_slice(&out.stdout).expect("libs JSON");
    assert!(
        libs["frameworks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|f| f["objects"].as_array().unwrap())
            .any(|o| o["path"].as_str().unwrap().contains("/libctranslate2-")
                && o["needed"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n["name"] == "libcublas.so.12"
                        && n["by_name"] == true
                        && n["via"] == "missing")),
        "{libs:#}"
    );
    let before = check_json_with(&python, &[]);
    let root = one_root("ctranslate2-numba-cuda", &before, "FW023");
    let steps = fix_commands(&root);
    assert_eq!(steps.len(), 2, "install, then the directory: {steps:?}");
    assert!(steps[0].ends_with("nvidia-cublas-cu12"), "{steps:?}");
    // The fix run in a copy: its install (from uv's cache, else the index), then its directory.
    assert!(
        Command::new("uv").arg("--version").output().is_ok(),
        "uv, the installer the fix names, is not on PATH (export PATH=\"$HOME/.local/bin:$PATH\")"
    );
    let copy = EnvCopy::of("ctranslate2-numba-cuda");
    let python = copy.python();
    let out = Command::new("timeout")
        .args(["900", "sh", "-c"])
        .arg(steps[0].replace(
            &env_prefix(&real_env("ctranslate2-numba-cuda").unwrap()),
            &env_prefix(&python),
        ))
        .env_remove("VIRTUAL_ENV")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The wheel alone: the real dlopen still fails, and cudoctor says so.
    let (ok, text) = ctranslate2_opens_cublas(&python, "", &[]);
    assert!(!ok, "{text}");
    let half = check_json_with(&python, &[]);
    let root = one_root("ctranslate2-numba-cuda (wheel installed)", &half, "FW023");
    let steps_now = fix_commands(&root);
    assert_eq!(
        steps_now.len(),
        1,
        "only the directory is left: {steps_now:?}"
    );
    let dir = exported_llp(&steps_now);
    assert!(
        Path::new(&dir).join("libcublas.so.12").is_file(),
        "{dir} holds the wheel's library"
    );
    // The first run's fix named that same directory before the wheel was there.
    assert_eq!(
        exported_llp(&steps).replace(
            &env_prefix(&real_env("ctranslate2-numba-cuda").unwrap()),
            &env_prefix(&python)
        ),
        dir
    );
    // After the whole fix: CTranslate2's own dlopen loads the wheel's library, and cudoctor
    // says nothing of it, and nothing new.
    let llp = [("LD_LIBRARY_PATH", dir.clone())];
    let (ok, text) = ctranslate2_opens_cublas(&python, "", &llp);
    let mapped = format!("{dir}/libcublas.so.12");
    assert!(ok && text.contains(&format!("opened {mapped}")), "{text}");
    // `libs` opens the file the real process mapped, from the library that opens it.
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args(["libs", "--format", "json", "--python"])
        .arg(&python);
    let out = with_only(cmd, &llp).output().expect("cudoctor runs");
    let libs: Value = serde_json::from_slice(&out.stdout).expect("libs JSON");
    let opened: Vec<&Value> = libs["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["objects"].as_array().unwrap())
        .filter(|o| o["opened_by"]["opener"] == "library_dlopen")
        .collect();
    assert_eq!(opened.len(), 1, "{libs:#}");
    assert_eq!(opened[0]["path"], mapped.as_str());
    assert!(
        opened[0]["opened_by"]["by"]
            .as_str()
            .unwrap()
            .starts_with("libctranslate2"),
        "{libs:#}"
    );
    let after = check_json_with(&python, &llp);
    assert_eq!(ctranslate2_fw023(&after), None, "{:#?}", findings(&after));
    let (b, a) = (problem_codes(&before), problem_codes(&after));
    assert!(
        a.difference(&b).next().is_none() && !a.contains("FW023"),
        "{:#?}",
        findings(&after)
    );
}

/// CTranslate2 beside a CUDA 12 torch: its dlopen finds libcublas.so.12 only in a process that
/// imported torch first (torch's import loads the wheel's copy; glibc matches the soname of a
/// loaded library). An info that says so, with both routes, not a warning.
#[test]
fn ctranslate2_beside_a_cuda12_torch_finds_cublas_only_after_import_torch() {
    let Some(python) = real_env("ctranslate2-beside-torch-cu126") else {
        return;
    };
    let (ok, text) = ctranslate2_opens_cublas(&python, "", &[]);
    assert!(!ok, "{text}");
    let (ok, text) = ctranslate2_opens_cublas(&python, "import torch", &[]);
    assert!(
        ok && text.contains("/nvidia/cublas/lib/libcublas"),
        "{text}"
    );
    // `libs` tells the same story from the same fact: CTranslate2's dlopen found only after
    // `import torch`, naming the file the real process maps, and no exit 1 for it.
    let mapped = text
        .lines()
        .find_map(|l| l.split_once("opened ").map(|(_, p)| p.trim().to_string()))
        .unwrap_or_else(|| panic!("no mapped library: {text}"));
    let out = libs_json_output(&python);
    let libs: Value = serde_json::from_slice(&out.stdout).expect("libs JSON");
    assert_eq!(out.status.code(), Some(0), "{libs:#}");
    let after: Vec<&Value> = libs["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["objects"].as_array().unwrap())
        .filter(|o| o["path"].as_str().unwrap().contains("/libctranslate2-"))
        .flat_map(|o| o["needed"].as_array().unwrap())
        .filter(|n| n["name"] == "libcublas.so.12" && n["by_name"] == true)
        .map(|n| &n["after_import"])
        .collect();
    assert!(!after.is_empty(), "{libs:#}");
    for a in after {
        assert_eq!(a["framework"], "torch", "{libs:#}");
        let path = a["path"].as_str().unwrap_or_else(|| panic!("{libs:#}"));
        assert_eq!(
            std::fs::canonicalize(path).ok(),
            std::fs::canonicalize(&mapped).ok(),
            "libs names {path}, the process maps {mapped}"
        );
    }
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args(["libs", "--python"]).arg(&python);
    let out = with_only(cmd, &[]).output().expect("cudoctor runs");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        !shown.contains("NOT FOUND")
            && shown.lines().any(|l| l.contains("libcublas.so.12 (dlopen)")
                && l.contains("found only after `import torch` loads")),
        "{shown}"
    );
    let json = check_json_with(&python, &[]);
    assert!(env_problems(&json).is_empty(), "{:#?}", findings(&json));
    let f = ctranslate2_fw023(&json).expect("an info on CTranslate2's cuBLAS");
    assert_eq!(f["severity"], "info", "{f}");
    let steps = support::step_texts(&f["fix"]);
    assert!(
        steps
            .iter()
            .any(|s| s.contains("import torch before ctranslate2")),
        "{steps:?}"
    );
    // Its other route works too: that directory on LD_LIBRARY_PATH, no torch imported.
    let dir = exported_llp(&steps);
    let llp = [("LD_LIBRARY_PATH", dir)];
    let (ok, text) = ctranslate2_opens_cublas(&python, "", &llp);
    assert!(ok, "{text}");
    assert_eq!(ctranslate2_fw023(&check_json_with(&python, &llp)), None);
}
