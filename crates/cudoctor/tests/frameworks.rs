//! Frameworks beyond torch, end to end: environments captured from real installs
//! (tests/fixtures/real/frameworks, made by scripts/realenv/capture-framework-fixtures.sh from
//! the real-env tier) placed in a fake machine, judged by the real binary.

mod support;

use std::fs;
use std::path::Path;

use support::{FakeMachine, Gpu};

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read fixture dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The captured env `name` at `/venv` of `m`.
fn with_env(m: &FakeMachine, name: &str) {
    let src = cudoctor_testkit::repo_root()
        .join("tests/fixtures/real/frameworks")
        .join(name)
        .join("venv");
    assert!(
        src.join("pyvenv.cfg").is_file(),
        "fixture {name} is missing"
    );
    copy_tree(&src, &m.real("/venv"));
}

/// A machine with one H100 and the given driver, no torch env of its own.
fn machine(driver: &str, max_cuda: &str) -> FakeMachine {
    let mut m = FakeMachine::new();
    m.driver(
        driver,
        max_cuda,
        &[Gpu::new("NVIDIA H100 80GB HBM3", "9.0")],
    );
    m
}

/// (code, severity, caused_by) of every finding of `check --python /venv --format json`.
fn findings(m: &FakeMachine) -> (serde_json::Value, Vec<(String, String, Option<String>)>) {
    let r = m.run(&["check", "--python", "/venv", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout, r.stderr));
    support::check_fixes(&v);
    let f = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap_or("").to_string(),
                f["severity"].as_str().unwrap_or("").to_string(),
                f["caused_by"].as_str().map(str::to_string),
            )
        })
        .collect();
    (v, f)
}

fn has(f: &[(String, String, Option<String>)], code: &str, severity: &str) -> bool {
    f.iter()
        .any(|(c, s, by)| c == code && s == severity && by.is_none())
}

#[test]
fn the_frameworks_of_an_env_are_in_the_snapshot_as_read_from_their_files() {
    let m = machine("580.95.05", "13.0");
    with_env(&m, "jax-cuda12");
    let (v, f) = findings(&m);
    let env = v["snapshot"]["python_envs"]
        .as_array()
        .expect("envs")
        .iter()
        .find(|e| e["prefix"] == "/venv")
        .expect("the env");
    let fw = &env["frameworks"][0];
    assert_eq!(fw["framework"], "jax");
    assert_eq!(fw["package"], "jax-cuda12-plugin");
    assert_eq!(fw["cuda"]["major"], 12);
    assert_eq!(fw["cuda"]["minor"], 9);
    // A healthy jax[cuda12] on a CUDA-13 driver: no framework error.
    assert!(
        !f.iter()
            .any(|(c, s, _)| c.starts_with("FW02") || (c == "DRV004" && s == "error")),
        "{f:?}"
    );
}

#[test]
fn a_jax_plugin_of_another_release_is_one_error_and_check_shows_the_build() {
    let m = machine("580.95.05", "13.0");
    with_env(&m, "jax-plugin-wrong-release");
    let (_, f) = findings(&m);
    assert!(has(&f, "FW021", "error"), "{f:?}");
    let r = m.run(&["check", "--python", "/venv"]);
    let framework: String = r
        .stdout
        .lines()
        .skip_while(|l| !l.ends_with(" Framework"))
        .take_while(|l| !l.contains("Kernel images"))
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!("framework_jax_plugin_wrong_release", framework);
}

#[test]
fn cupy_for_cuda12_beside_a_cuda13_torch_is_an_error() {
    let m = machine("580.95.05", "13.0");
    with_env(&m, "cupy-cuda12x-beside-torch");
    let (_, f) = findings(&m);
    assert!(has(&f, "FW020", "error"), "{f:?}");
}

#[test]
fn an_r550_driver_is_too_old_for_onnx_runtimes_cuda_13_build() {
    let m = machine("550.54.14", "12.4");
    with_env(&m, "onnxruntime-gpu");
    let (v, f) = findings(&m);
    assert!(has(&f, "DRV004", "error"), "{f:?}");
    let drv = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "DRV004")
        .unwrap();
    assert!(
        drv["evidence"].as_array().unwrap().iter().any(|e| e
            .as_str()
            .unwrap()
            .contains("onnxruntime/capi/build_and_package_info.py")),
        "{drv:#}"
    );
    // On a CUDA 13 driver it is silent.
    let m = machine("580.95.05", "13.0");
    with_env(&m, "onnxruntime-gpu");
    let (_, f) = findings(&m);
    assert!(!f.iter().any(|(c, _, _)| c == "DRV004"), "{f:?}");
}

#[test]
fn sglang_pinning_another_torch_is_an_error_with_the_pinned_release_as_fix() {
    let m = machine("580.95.05", "13.0");
    with_env(&m, "sglang-beside-torch");
    let (v, f) = findings(&m);
    assert!(has(&f, "FW022", "error"), "{f:?}");
    let fw = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "FW022")
        .unwrap();
    let fix = serde_json::to_string(&fw["fix"]).unwrap();
    assert!(
        fix.contains("uv pip install --python /venv/bin/python torch==2.14.1"),
        "{fix}"
    );
}

/// The fix of `check`'s FW020 finding and `plan`'s changes for the same environment, as lines.
fn fw020_fix_and_plan_changes(m: &mut FakeMachine) -> (Vec<String>, serde_json::Value) {
    m.var("VIRTUAL_ENV", "/venv");
    m.prepend_path("/venv/bin");
    let (v, f) = findings(m);
    assert!(f.iter().any(|(c, _, _)| c == "FW020"), "no FW020 in {f:?}");
    let fw020 = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "FW020")
        .unwrap();
    let fix = support::step_texts(&fw020["fix"]);
    let r = m.run(&["plan", "--format", "json"]);
    let plan: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout, r.stderr));
    (fix, plan)
}

#[test]
fn check_and_plan_give_one_remedy_for_cupy_of_another_major_beside_torch() {
    let mut m = machine("580.95.05", "13.0");
    with_env(&m, "cupy-cuda12x-beside-torch");
    let (fix, plan) = fw020_fix_and_plan_changes(&mut m);
    let current = &plan["current"];
    assert_eq!(current["ok"], false, "{plan:#}");
    let changes = support::strings(&current["changes"]);
    // torch fits this driver: the only change is the environment's one major, word for word.
    assert_eq!(changes, fix, "{plan:#}");
    assert_eq!(plan["frameworks"]["keep"], 13);
    assert!(
        fix.iter()
            .any(|s| s == "uv pip install --python /venv/bin/python 'cupy-cuda13x[ctk]'"),
        "{fix:#?}"
    );
    assert!(
        fix.iter()
            .any(|s| s == "uv pip uninstall --python /venv/bin/python cupy-cuda12x"),
        "{fix:#?}"
    );
}

#[test]
fn when_the_driver_moves_torch_to_cupys_major_check_and_plan_keep_that_major() {
    // R550 runs CUDA 12 only: torch's own fix moves it to a CUDA 12 build, so the environment
    // keeps CUDA 12 and CuPy for CUDA 12 stays; torch's CUDA 13 wheels go first.
    let mut m = machine("550.54.15", "12.4");
    // Two mistakes, two roots: a torch the driver cannot run, and two majors in one env.
    m.breakages(2);
    with_env(&m, "cupy-cuda12x-beside-torch");
    let (fix, plan) = fw020_fix_and_plan_changes(&mut m);
    assert_eq!(plan["frameworks"]["keep"], 12, "{plan:#}");
    let remedy = &plan["remedy"];
    assert!(
        remedy["variant"]
            .as_str()
            .is_some_and(|v| v.starts_with("cu12")),
        "{plan:#}"
    );
    assert!(
        fix[0].starts_with("Keep CUDA 12 in this environment, before torch's own fix (torch "),
        "{fix:#?}"
    );
    assert!(!fix.iter().any(|s| s.contains("cupy-cuda13x")), "{fix:#?}");
    assert!(
        fix.iter().any(
            |s| s.starts_with("uv pip uninstall --python /venv/bin/python ")
                && s.contains("nvidia-cudnn-cu13")
                && !s.contains("cupy")
        ),
        "{fix:#?}"
    );
    // plan's changes: the same steps, then torch's own fix.
    let changes = support::strings(&plan["current"]["changes"]);
    assert_eq!(changes[..fix.len()], fix[..], "{plan:#}");
    let torch_steps = support::step_texts(&remedy["steps"]);
    assert_eq!(changes[fix.len()..], torch_steps[..], "{plan:#}");
}

#[test]
fn plan_text_puts_the_frameworks_one_major_before_torchs_own_fix() {
    let mut m = machine("550.54.15", "12.4");
    m.breakages(2);
    with_env(&m, "cupy-cuda12x-beside-torch");
    m.var("VIRTUAL_ENV", "/venv");
    m.prepend_path("/venv/bin");
    let r = m.run(&["plan"]);
    insta::assert_snapshot!("plan_cupy12_beside_torch_on_r550", r.stdout);
}

#[test]
fn tensorflow_for_cuda_12_5_is_judged_against_the_driver_from_its_own_build_info() {
    // R535 (CUDA 12.2) runs TensorFlow 2.20's CUDA 12.5 through minor-version compatibility;
    // R470 (CUDA 11.4) is below the CUDA 12 floor.
    let m = machine("535.104.05", "12.2");
    with_env(&m, "tensorflow-wheel");
    let (_, f) = findings(&m);
    assert!(has(&f, "DRV004", "info"), "{f:?}");
    assert!(!f.iter().any(|(_, s, _)| s == "error"), "{f:?}");
    let m = machine("470.82.01", "11.4");
    with_env(&m, "tensorflow-wheel");
    let (v, f) = findings(&m);
    assert!(has(&f, "DRV004", "error"), "{f:?}");
    let title = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "DRV004")
        .unwrap()["title"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        title,
        "Driver 470.82.01 is too old for TensorFlow 2.20.0 in /venv"
    );
}

/// `check --format json` and `plan --format json` of the captured env `name` at `/venv` on a
/// machine with this driver and GPU, the env active.
fn check_and_plan(
    driver: &str,
    max_cuda: &str,
    gpu: Gpu,
    name: &str,
    breakages: usize,
) -> (Vec<serde_json::Value>, serde_json::Value) {
    let mut m = FakeMachine::new();
    m.driver(driver, max_cuda, &[gpu]);
    m.breakages(breakages);
    with_env(&m, name);
    m.var("VIRTUAL_ENV", "/venv");
    m.prepend_path("/venv/bin");
    let (v, _) = findings(&m);
    let r = m.run(&["plan", "--format", "json"]);
    let plan: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout, r.stderr));
    (v["findings"].as_array().expect("findings").clone(), plan)
}

fn finding<'a>(f: &'a [serde_json::Value], code: &str, title_has: &str) -> &'a serde_json::Value {
    f.iter()
        .find(|x| x["code"] == code && x["title"].as_str().unwrap_or("").contains(title_has))
        .unwrap_or_else(|| panic!("no {code} about {title_has} in {f:#?}"))
}

#[test]
fn when_torchs_fix_leaves_cuda_13_its_frameworks_move_with_it_in_one_remedy() {
    // torch, jax[cuda13] and cupy-cuda13x on one major; R550 runs CUDA 12 only. One cause (the
    // driver), one remedy: torch's fix moves the whole environment to CUDA 12, JAX and CuPy
    // with it, and their own DRV004 follow from it. Following torch's fix alone would leave
    // a CUDA-12 torch beside CUDA-13 frameworks.
    let (f, plan) = check_and_plan(
        "550.54.15",
        "12.4",
        Gpu::new("NVIDIA H100 80GB HBM3", "9.0"),
        "cuda13-frameworks-beside-torch",
        1,
    );
    let root = finding(&f, "DRV004", "torch 2.15.0");
    assert!(root["caused_by"].is_null(), "{root:#}");
    for fw in ["JAX 0.10.2", "CuPy 14.2.0"] {
        let c = finding(&f, "DRV004", fw);
        assert_eq!(c["caused_by_id"], root["id"], "{c:#}");
        assert!(c["fix"].as_array().unwrap().is_empty(), "{c:#}");
    }
    assert!(
        !f.iter().any(|x| x["code"] == "FW020"),
        "one major today: {f:#?}"
    );
    let fix = support::step_texts(&root["fix"]);
    let changes = support::strings(&plan["current"]["changes"]);
    assert_eq!(plan["frameworks"]["keep"], 12, "{plan:#}");
    // check's fix: the driver upgrade, or keeping it with exactly plan's changes.
    assert!(
        fix.ends_with(&changes),
        "check: {fix:#?}\nplan: {changes:#?}"
    );
    assert!(
        changes.iter().any(|c| {
            c
            == "uv pip install --python /venv/bin/python 'jax[cuda12]==0.10.2' 'cupy-cuda12x[ctk]'"
        }),
        "{changes:#?}"
    );
    assert!(
        changes.last().unwrap().contains("torch==2.14.1+cu126"),
        "torch's own fix runs last: {changes:#?}"
    );
}

#[test]
fn a_volta_what_if_moves_torch_and_its_frameworks_to_cuda_12_together() {
    // CUDA 13 builds carry no sm_70: torch's fix (KRN001) is a CUDA-12 build, and the
    // frameworks go to their CUDA-12 builds in the same remedy, as plan says.
    let (f, plan) = check_and_plan(
        "580.95.05",
        "13.0",
        Gpu::new("Tesla V100-SXM2-32GB", "7.0"),
        "cuda13-frameworks-beside-torch",
        1,
    );
    let root = finding(&f, "KRN001", "torch 2.15.0");
    let fix = support::step_texts(&root["fix"]);
    let changes = support::strings(&plan["current"]["changes"]);
    assert_eq!(fix, changes, "{root:#}\n{plan:#}");
    assert!(
        fix[0].starts_with("Keep CUDA 12 in this environment, before torch's own fix"),
        "{fix:#?}"
    );
}

#[test]
fn without_torch_check_and_plan_keep_the_major_the_driver_runs() {
    // jax[cuda13] beside cupy-cuda12x, no torch (captured from a real env). On R580 the
    // environment keeps CUDA 13 (the newest, which the driver runs) and CuPy moves.
    let (f, plan) = check_and_plan(
        "580.95.05",
        "13.0",
        Gpu::new("NVIDIA H100 80GB HBM3", "9.0"),
        "cupy-cuda12x-beside-jax-cuda13",
        1,
    );
    let root = finding(&f, "FW020", "CuPy 14.2.0 (CUDA 12)");
    let fix = support::step_texts(&root["fix"]);
    assert_eq!(plan["frameworks"]["keep"], 13, "{plan:#}");
    assert_eq!(plan["current"]["ok"], false, "{plan:#}");
    assert_eq!(
        support::strings(&plan["current"]["changes"]),
        fix,
        "{plan:#}"
    );
    assert!(
        fix.contains(&"uv pip install --python /venv/bin/python 'cupy-cuda13x[ctk]'".to_string()),
        "{fix:#?}"
    );
    // On R550 CUDA 13 does not run: the environment keeps CUDA 12, JAX moves, and JAX's
    // DRV004 follows from FW020, whose fix is plan's.
    let (f, plan) = check_and_plan(
        "550.54.15",
        "12.4",
        Gpu::new("NVIDIA H100 80GB HBM3", "9.0"),
        "cupy-cuda12x-beside-jax-cuda13",
        1,
    );
    let root = finding(&f, "FW020", "JAX 0.10.2 (CUDA 13)");
    let drv = finding(&f, "DRV004", "JAX 0.10.2");
    assert_eq!(drv["caused_by_id"], root["id"], "{drv:#}");
    let fix = support::step_texts(&root["fix"]);
    assert_eq!(plan["frameworks"]["keep"], 12, "{plan:#}");
    assert_eq!(
        support::strings(&plan["current"]["changes"]),
        fix,
        "{plan:#}"
    );
    assert!(
        fix.contains(&"uv pip install --python /venv/bin/python 'jax[cuda12]==0.10.2'".to_string()),
        "{fix:#?}"
    );
}

#[test]
fn plan_text_for_frameworks_without_torch() {
    let mut m = machine("580.95.05", "13.0");
    with_env(&m, "cupy-cuda12x-beside-jax-cuda13");
    m.var("VIRTUAL_ENV", "/venv");
    m.prepend_path("/venv/bin");
    let r = m.run(&["plan"]);
    insta::assert_snapshot!("plan_frameworks_without_torch", r.stdout);
}

/// `plan --gpu V100` on a machine whose environment has torch, JAX and CuPy for CUDA 13: the
/// what-if moves the environment to CUDA 12 and never puts CUDA-13 wheels back after removing
/// them (it reinstalled torch's own CUDA-13 wheels, as if torch stayed on CUDA 13; seen on the
/// GPU machine).
#[test]
fn a_volta_what_if_plan_puts_back_no_wheel_of_the_major_it_leaves() {
    let mut m = FakeMachine::new();
    m.driver("580.95.05", "13.0", &[Gpu::new("NVIDIA H200", "9.0")]);
    with_env(&m, "cuda13-frameworks-beside-torch");
    m.var("VIRTUAL_ENV", "/venv");
    m.prepend_path("/venv/bin");
    let r = m.run(&["plan", "--gpu", "V100", "--format", "json"]);
    let plan: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout, r.stderr));
    assert_eq!(plan["frameworks"]["keep"], 12, "{plan:#}");
    let steps = support::step_texts(&plan["frameworks"]["steps"]);
    assert!(
        steps
            .iter()
            .any(|s| s.contains("uninstall") && s.contains("nvidia-nccl-cu13")),
        "{steps:#?}"
    );
    assert!(
        !steps
            .iter()
            .any(|s| s.contains("install") && !s.contains("uninstall") && s.contains("-cu13==")),
        "{steps:#?}"
    );
}

/// torch alone leaving CUDA 13 (R550 runs CUDA 12 only): the repair removes the CUDA-13 wheels
/// named for their major before installing torch's CUDA-12 build, in check and in plan alike.
/// Installed over them, the CUDA-12 wheels share their folders (cuDNN, NCCL, NVSHMEM) and torch
/// preloads both majors: LIB006 after following cudoctor's own fix (seen with a real env moved
/// from torch 2.7.1+cu126 to 2.15.0+cu132 by a plain install; removing the old major's wheels
/// first left one major in the real process).
#[test]
fn torch_leaving_its_major_removes_that_majors_wheels_first() {
    let (f, plan) = check_and_plan(
        "550.54.15",
        "12.4",
        Gpu::new("NVIDIA H100 80GB HBM3", "9.0"),
        "sglang-beside-torch",
        2,
    );
    let root = finding(&f, "DRV004", "torch 2.15.0");
    let fix = support::step_texts(&root["fix"]);
    let uninstall = fix
        .iter()
        .position(|s| s.contains("uninstall") && s.contains("nvidia-cudnn-cu13"))
        .unwrap_or_else(|| panic!("{fix:#?}"));
    let install = fix
        .iter()
        .position(|s| s.contains("torch==") && s.contains("+cu12"))
        .unwrap_or_else(|| panic!("{fix:#?}"));
    assert!(uninstall < install, "{fix:#?}");
    let changes = support::strings(&plan["current"]["changes"]);
    assert!(
        fix.ends_with(&changes),
        "check: {fix:#?}\nplan: {changes:#?}"
    );
}

/// CTranslate2 4.8.5 laid out as its wheel installs it, its library built with gcc: `rpath` as
/// its RPATH (the real one is `$ORIGIN`) and `libcublas.so.12` in its read-only data, the name
/// the real library dlopen()s when a GPU is first used; with `wheel`, nvidia-cublas-cu12's
/// library where that wheel puts it. No torch, an H100 and a CUDA 13.0 driver.
fn ctranslate2_machine(rpath: &str, wheel: bool) -> FakeMachine {
    let m = machine("580.95.05", "13.0");
    let sp = "/venv/lib/python3.11/site-packages";
    m.file(
        "/venv/pyvenv.cfg",
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.7\n",
    );
    m.file("/usr/bin/python3.11", "");
    m.link("/venv/bin/python3", "/usr/bin/python3.11");
    let lib = "ctranslate2.libs/libctranslate2-a7a60d30.so.4.8.5";
    m.file(
        &format!("{sp}/ctranslate2-4.8.5.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: ctranslate2\nVersion: 4.8.5\n",
    );
    m.file(
        &format!("{sp}/ctranslate2-4.8.5.dist-info/RECORD"),
        &format!("{lib},,\nctranslate2-4.8.5.dist-info/RECORD,,\n"),
    );
    support::gcc(
        &m,
        &format!("{sp}/{lib}"),
        "const char *cublas_lib = \"libcublas.so.12\";\nconst char *name(void) { return cublas_lib; }\n",
        &[
            "-nostdlib",
            "-Wl,--disable-new-dtags",
            &format!("-Wl,-rpath,{rpath}"),
        ],
    );
    if wheel {
        m.file(
            &format!("{sp}/nvidia_cublas_cu12-12.9.3.13.dist-info/METADATA"),
            "Metadata-Version: 2.1\nName: nvidia-cublas-cu12\nVersion: 12.9.3.13\n",
        );
        m.file(
            &format!("{sp}/nvidia_cublas_cu12-12.9.3.13.dist-info/RECORD"),
            "nvidia/cublas/lib/libcublas.so.12,,\n",
        );
        support::gcc(
            &m,
            &format!("{sp}/nvidia/cublas/lib/libcublas.so.12"),
            "int cublasCreate_v2(void **h) { (void)h; return 0; }\n",
            &["-nostdlib", "-Wl,-soname,libcublas.so.12"],
        );
    }
    m
}

/// FW023 of `m`'s CTranslate2: (severity, fix steps), or None.
fn ctranslate2_fw023(m: &FakeMachine) -> Option<(String, Vec<String>)> {
    let (v, _) = findings(m);
    let f = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["code"] == "FW023")?;
    assert!(
        f["title"].as_str().unwrap().contains("CTranslate2 4.8.5"),
        "{f}"
    );
    Some((
        f["severity"].as_str().unwrap().to_string(),
        support::step_texts(&f["fix"]),
    ))
}

/// `libs --format json`'s objects of CTranslate2, and the path of the library its own dlopen
/// opens, if it opens one.
fn ctranslate2_libs(m: &FakeMachine) -> (Vec<serde_json::Value>, Option<String>) {
    let r = m.run(&["libs", "--python", "/venv", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout, r.stderr));
    let objects: Vec<serde_json::Value> = v["frameworks"]
        .as_array()
        .expect("frameworks")
        .iter()
        .filter(|f| f["framework"].as_str().unwrap().starts_with("CTranslate2"))
        .flat_map(|f| f["objects"].as_array().unwrap().clone())
        .collect();
    let opened = objects
        .iter()
        .find(|o| o["opened_by"]["opener"] == "library_dlopen")
        .map(|o| o["path"].as_str().unwrap().to_string());
    (objects, opened)
}

/// A library a framework dlopen()s by bare name is found where glibc's loader searches from the
/// opening library, not wherever a wheel put it: CTranslate2 with nvidia-cublas-cu12 installed
/// still fails ("Library libcublas.so.12 is not found or cannot be loaded", as a real env
/// shows) until LD_LIBRARY_PATH names the wheel's directory or its RPATH reaches it.
#[test]
fn a_library_ctranslate2_opens_by_name_is_found_only_where_the_loader_searches() {
    let cublas_dir = "/venv/lib/python3.11/site-packages/nvidia/cublas/lib";
    // Neither the wheel nor the library: install it, then put its directory on the path.
    let (severity, fix) =
        ctranslate2_fw023(&ctranslate2_machine("$ORIGIN", false)).expect("FW023 without cuBLAS");
    assert_eq!(severity, "warning");
    assert!(
        fix[0].contains("install") && fix[0].ends_with("nvidia-cublas-cu12"),
        "{fix:?}"
    );
    assert_eq!(
        fix[1],
        format!("export LD_LIBRARY_PATH={cublas_dir}"),
        "{fix:?}"
    );
    // The wheel installed and nothing else: still not found, and the fix is the directory.
    let m = ctranslate2_machine("$ORIGIN", true);
    let (severity, fix) = ctranslate2_fw023(&m).expect("FW023 with the wheel alone");
    assert_eq!(severity, "warning");
    assert_eq!(fix, vec![format!("export LD_LIBRARY_PATH={cublas_dir}")]);
    // `libs` says where the dlopen stands: not found, from the library that makes it, and
    // exits 1 as for any library that does not load.
    let (objects, opened) = ctranslate2_libs(&m);
    assert!(
        objects
            .iter()
            .any(|o| o["path"].as_str().unwrap().contains("libctranslate2")
                && o["needed"].as_array().unwrap().iter().any(|n| {
                    n["name"] == "libcublas.so.12" && n["by_name"] == true && n["via"] == "missing"
                })),
        "{objects:#?}"
    );
    assert_eq!(opened, None);
    assert_eq!(m.run(&["libs", "--python", "/venv"]).code, 1);
    // After that fix: found, and nothing said; `libs` shows the library it opens.
    let mut m = m;
    m.var("LD_LIBRARY_PATH", cublas_dir);
    assert_eq!(ctranslate2_fw023(&m), None);
    assert_eq!(
        ctranslate2_libs(&m).1.as_deref(),
        Some(format!("{cublas_dir}/libcublas.so.12").as_str())
    );
    // A library whose RPATH reaches the wheel's directory finds it: nothing said either.
    let m = ctranslate2_machine("$ORIGIN/../nvidia/cublas/lib", true);
    assert_eq!(ctranslate2_fw023(&m), None);
}

/// torch 2.7.1+cu126 beside `m`'s CTranslate2: its `_C` links nvidia-cublas-cu12's
/// libcublas.so.12 through its RPATH, so `import torch` loads it (as a real CUDA 12 torch does).
fn with_cuda12_torch(m: &FakeMachine) {
    let sp = "/venv/lib/python3.11/site-packages";
    m.file(
        &format!("{sp}/torch/version.py"),
        "from typing import Optional\n__version__ = '2.7.1+cu126'\ndebug = False\ncuda: Optional[str] = '12.6'\ngit_version = 'abc'\nhip: Optional[str] = None\n",
    );
    m.file(
        &format!("{sp}/torch-2.7.1+cu126.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.7.1+cu126\n",
    );
    let cublas = m.real(&format!("{sp}/nvidia/cublas/lib"));
    support::gcc(
        m,
        &format!("{sp}/torch/_C.cpython-311-x86_64-linux-gnu.so"),
        "extern int cublasCreate_v2(void **h); int init(void) { void *h; return cublasCreate_v2(&h); }\n",
        &[
            "-nostdlib",
            &format!("-L{}", cublas.display()),
            "-Wl,--no-as-needed",
            "-l:libcublas.so.12",
            "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../nvidia/cublas/lib",
        ],
    );
}

/// CTranslate2 beside a CUDA 12 torch whose import loads libcublas.so.12: check's FW023 and
/// `libs` tell one story from one fact. check: an info (import torch first, or LD_LIBRARY_PATH);
/// libs: the dlopen found only after `import torch`, with the file it loads, and no exit 1 for
/// it. Without the wheel (nothing loads it) both still say it is not found.
#[test]
fn a_library_ctranslate2_opens_by_name_that_torch_loads_is_one_story_in_check_and_libs() {
    let sp = "/venv/lib/python3.11/site-packages";
    let loaded = format!("{sp}/torch/../nvidia/cublas/lib/libcublas.so.12");
    let m = ctranslate2_machine("$ORIGIN", true);
    with_cuda12_torch(&m);
    let (severity, fix) = ctranslate2_fw023(&m).expect("FW023 beside torch");
    assert_eq!(severity, "info");
    assert!(
        fix.iter()
            .any(|s| s.contains("import torch before ctranslate2")),
        "{fix:?}"
    );
    let (objects, opened) = ctranslate2_libs(&m);
    assert_eq!(opened, None);
    let need = objects
        .iter()
        .filter(|o| o["path"].as_str().unwrap().contains("libctranslate2"))
        .flat_map(|o| o["needed"].as_array().unwrap().clone())
        .find(|n| n["name"] == "libcublas.so.12" && n["by_name"] == true)
        .unwrap_or_else(|| panic!("{objects:#?}"));
    assert_eq!(need["via"], "missing", "{need:#}");
    assert_eq!(need["after_import"]["framework"], "torch", "{need:#}");
    assert_eq!(need["after_import"]["path"], loaded.as_str(), "{need:#}");
    let r = m.run(&["libs", "--python", "/venv"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("NOT FOUND"), "{}", r.stdout);
    // The file as the torch section above names it.
    assert!(
        r.stdout.lines().any(|l| {
            l.contains("libcublas.so.12 (dlopen)")
            && l.ends_with(
                "found only after `import torch` loads <site>/nvidia/cublas/lib/libcublas.so.12"
            )
        }),
        "{}",
        r.stdout
    );
    let verdict = r.stdout.lines().next().unwrap_or_default();
    assert!(
        verdict.starts_with("3 libraries, all needed libraries found; 1 found only after another framework's import: libcublas.so.12"),
        "{}",
        r.stdout
    );
    let json = m.run(&["libs", "--python", "/venv", "--format", "json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    // torch without a library of that name loaded at import: nothing provides it, still
    // NOT FOUND and exit 1, as check's warning says.
    let m = ctranslate2_machine("$ORIGIN", false);
    let sp_torch = format!("{sp}/torch");
    m.file(
        &format!("{sp_torch}/version.py"),
        "__version__ = '2.7.1+cu126'\ncuda = '12.6'\n",
    );
    m.file(
        &format!("{sp}/torch-2.7.1+cu126.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.7.1+cu126\n",
    );
    support::gcc(
        &m,
        &format!("{sp_torch}/_C.cpython-311-x86_64-linux-gnu.so"),
        "int init(void) { return 0; }\n",
        &["-nostdlib"],
    );
    let (severity, _) = ctranslate2_fw023(&m).expect("FW023 beside torch without cuBLAS");
    assert_eq!(severity, "warning");
    let r = m.run(&["libs", "--python", "/venv"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("NOT FOUND"), "{}", r.stdout);
    let (objects, _) = ctranslate2_libs(&m);
    assert!(
        objects.iter().all(|o| o["needed"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n.get("after_import").is_none())),
        "{objects:#?}"
    );
}
