//! Every rule of the driver, toolkit, framework and kernels layers, end to end: a fake machine
//! per case, the real binary, the JSON report.

mod support;

use support::{FakeMachine, Gpu};

#[test]
fn the_real_h200_machine_is_healthy() {
    let m = FakeMachine::h200();
    let (v, code) = m.json();
    let errors: Vec<_> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .collect();
    assert!(errors.is_empty(), "unexpected findings: {errors:#?}");
    assert_eq!(code, 0);
    let snap = &v["snapshot"];
    assert_eq!(snap["driver"]["version"]["value"], "580.159.04");
    // Under --root nothing of the root runs: nvidia-smi's facts stay unknown, by a typed status,
    // and the analysis takes the highest CUDA and the compute capability from the knowledge base.
    assert!(snap["driver"]["max_cuda"].is_null());
    assert!(snap["driver"]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["source"] == "/usr/bin/nvidia-smi" && a["outcome"] == "not_run_under_root"));
    assert_eq!(snap["driver"]["gpus"].as_array().unwrap().len(), 2);
    assert_eq!(snap["driver"]["gpus"][0]["name"], "NVIDIA H200");
    assert_eq!(snap["python_envs"][0]["torch"]["version"], "2.11.0+cu130");
    assert_eq!(snap["toolkit"]["nvcc_on_path"]["version"], "13.0.88");
    assert_eq!(
        snap["toolkit"]["usr_local_cuda"]["resolved"],
        "/usr/local/cuda-13.0"
    );
}

#[test]
fn drv001_cpu_machine_is_clean_and_cuda_torch_without_driver_fails() {
    let m = FakeMachine::new();
    assert_eq!(m.codes("info"), vec!["DRV001", "TK001", "FW004"]);
    assert_eq!(m.run(&["check"]).code, 0);

    let mut m = FakeMachine::new();
    m.torch("2.11.0+cu130", &[]);
    assert_eq!(m.codes("error"), vec!["DRV001"]);
    assert_eq!(m.run(&["check"]).code, 1);
}

#[test]
fn drv001_container_without_gpus_says_so() {
    let mut m = FakeMachine::new();
    m.file("/.dockerenv", "");
    m.torch("2.11.0+cu130", &[]);
    let r = m.run(&["check"]);
    assert!(r.stdout.contains("--gpus all"), "{}", r.stdout);
}

#[test]
fn drv002_driver_without_gpus() {
    let m = FakeMachine::with_driver("580.65.06", "13.0", &[]);
    assert!(m.codes("error").contains(&"DRV002".to_string()));
}

#[test]
fn drv003_module_and_user_space_differ() {
    let m = FakeMachine::h100();
    // The kernel module left loaded is older than the libraries nvidia-smi uses.
    m.file(
        "/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n",
    );
    m.file("/sys/module/nvidia/version", "570.86.15\n");
    assert!(
        m.codes("error").contains(&"DRV003".to_string()),
        "{:?}",
        m.json().0["findings"]
    );
}

#[test]
fn drv004_driver_too_old_and_minor_version_compatibility() {
    let mut m = FakeMachine::with_driver("535.104.05", "12.2", &[Gpu::h100()]);
    m.torch("2.11.0+cu130", &[]);
    assert!(m.codes("error").contains(&"DRV004".to_string()));
    let r = m.run(&["check"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("580"), "{}", r.stdout);

    let mut m = FakeMachine::with_driver("535.104.05", "12.2", &[Gpu::h100()]);
    m.torch("2.7.0+cu128", &[]);
    assert!(m.codes("info").contains(&"DRV004".to_string()));
    assert!(m.codes("error").is_empty());
}

#[test]
fn drv005_gpu_memory_held_by_others() {
    let mut m = FakeMachine::new();
    m.driver(
        "580.159.04",
        "13.0",
        &[Gpu {
            name: "NVIDIA A100-SXM4-80GB",
            cc: "8.0",
            total_mib: 81920,
            used_mib: 79000,
        }],
    );
    // Memory in use is nvidia-smi's to tell: the fake's nvidia-smi runs as this machine's.
    let (v, _) = m.json_live();
    let warnings = cudoctor_testkit::codes_at(&v, &["warning"]);
    assert!(warnings.contains(&"DRV005"), "{warnings:?}");
}

#[test]
fn tk001_no_nvcc_lists_installed_toolkits() {
    let mut m2 = FakeMachine::h100();
    m2.toolkit("12.8.93");
    assert!(m2.codes("info").contains(&"TK001".to_string()));
    let r = m2.run(&["check"]);
    assert!(
        r.stdout.contains("export CUDA_HOME=/usr/local/cuda-12.8"),
        "{}",
        r.stdout
    );
}

#[test]
fn tk002_nvcc_major_differs_from_torch() {
    let mut m = FakeMachine::h100();
    m.toolkit("12.4.131").select_toolkit("12.4");
    m.torch("2.11.0+cu130", &[]);
    assert!(
        m.codes("warning").contains(&"TK002".to_string()),
        "{:?}",
        m.json().0["findings"]
    );
}

#[test]
fn tk003_settings_select_different_toolkits() {
    let mut m = FakeMachine::h200();
    m.toolkit("12.8.93");
    m.var("CUDA_HOME", "/usr/local/cuda-12.8");
    m.env
        .retain(|(k, v)| !(k == "CUDA_HOME" && v == "/usr/local/cuda"));
    assert!(
        m.codes("warning").contains(&"TK003".to_string()),
        "{:?}",
        m.json().0["findings"]
    );
}

#[test]
fn tk004_toolkit_newer_than_the_driver() {
    let mut m = FakeMachine::with_driver("550.54.14", "12.4", &[Gpu::h100()]);
    m.toolkit("13.0.88").select_toolkit("13.0");
    assert!(
        m.codes("warning").contains(&"TK004".to_string()),
        "{:?}",
        m.json().0["findings"]
    );
}

#[test]
fn tk005_smi_cuda_above_nvcc_is_explained() {
    let mut m = FakeMachine::h100();
    m.toolkit("12.8.93").select_toolkit("12.8");
    assert!(m.codes("info").contains(&"TK005".to_string()));
    assert!(m.codes("warning").is_empty(), "{:?}", m.codes("warning"));
}

#[test]
fn tk006_cuda_home_points_at_nothing() {
    let mut m = FakeMachine::h200();
    m.env.retain(|(k, _)| k != "CUDA_HOME");
    m.var("CUDA_HOME", "/usr/local/cuda-11.8");
    assert!(m.codes("warning").contains(&"TK006".to_string()));
}

#[test]
fn fw001_cpu_torch_on_a_gpu_machine() {
    let mut m = FakeMachine::h100();
    m.torch("2.11.0+cpu", &[]);
    assert_eq!(m.codes("error"), vec!["FW001"]);
}

#[test]
fn fw002_torchvision_from_another_release() {
    let m = FakeMachine::h200();
    m.dir("/opt/torch/.venv/lib/python3.12/site-packages/torchvision-0.25.0+cu130.dist-info");
    std::fs::remove_dir(
        m.real("/opt/torch/.venv/lib/python3.12/site-packages/torchvision-0.26.0+cu130.dist-info"),
    )
    .unwrap();
    assert_eq!(m.codes("error"), vec!["FW002"]);
}

#[test]
fn fw003_conda_cudatoolkit_beside_a_pip_wheel() {
    let mut m = FakeMachine::h100();
    m.file(
        "/opt/conda/envs/ml/lib/python3.11/site-packages/torch/version.py",
        "__version__ = '2.5.1+cu124'\ncuda = '12.4'\n",
    );
    m.file(
        "/opt/conda/envs/ml/conda-meta/cudatoolkit-11.8.0-h6a678d5_0.json",
        "{\"channel\": \"pkgs/main\"}",
    );
    m.file("/opt/conda/envs/ml/bin/python3", "");
    m.var("CONDA_PREFIX", "/opt/conda/envs/ml");
    assert!(
        m.codes("warning").contains(&"FW003".to_string()),
        "{:?}",
        m.json().0["findings"]
    );
}

#[test]
fn krn001_old_gpu_on_a_new_wheel() {
    let mut m = FakeMachine::with_driver(
        "580.159.04",
        "13.0",
        &[Gpu::new("NVIDIA GeForce GTX 1080 Ti", "6.1")],
    );
    m.torch("2.11.0+cu130", &[]);
    let (v, _) = m.json();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "KRN001")
        .expect("KRN001");
    assert_eq!(f["severity"], "error");
    assert!(
        f["fix"][0]["shell"].as_str().unwrap().contains("cu126"),
        "{f:#}"
    );
}

#[test]
fn compute_capability_is_inferred_from_the_name_when_the_driver_does_not_say() {
    let m = FakeMachine::with_driver("470.82.01", "11.4", &[Gpu::new("Tesla K80", "")]);
    let (v, _) = m.json();
    assert!(v["snapshot"]["driver"]["gpus"][0]["compute_capability"].is_null());
}

#[test]
fn plt001_container_started_without_gpus() {
    let mut m = FakeMachine::new();
    m.file("/.dockerenv", "");
    m.torch("2.11.0+cu130", &[]);
    let errors = m.codes("error");
    assert!(errors.contains(&"PLT001".to_string()), "{errors:?}");
    assert!(errors.contains(&"DRV001".to_string()));
}

#[test]
fn plt002_image_needs_newer_cuda_than_the_driver() {
    let mut m = FakeMachine::with_driver("550.54.14", "12.4", &[Gpu::h100()]);
    m.var(
        "NVIDIA_REQUIRE_CUDA",
        "cuda>=13.0 brand=tesla,driver>=535,driver<536",
    );
    assert!(m.codes("error").contains(&"PLT002".to_string()));
    // No clause of the variable holds on driver 550: cuda-compat does not make the runtime
    // accept the image.
    m.file("/usr/local/cuda-13.0/compat/libcuda.so.580.65.06", "");
    assert!(m.codes("error").contains(&"PLT002".to_string()));
    // On R535 the brand=tesla clause can hold: the image runs through forward compatibility.
    let mut m = FakeMachine::with_driver("535.104.05", "12.2", &[Gpu::h100()]);
    m.var(
        "NVIDIA_REQUIRE_CUDA",
        "cuda>=13.0 brand=tesla,driver>=535,driver<536",
    );
    m.file("/usr/local/cuda-13.0/compat/libcuda.so.580.65.06", "");
    assert!(m.codes("warning").contains(&"PLT002".to_string()));
}

#[test]
fn plt003_linux_driver_inside_wsl() {
    let m = FakeMachine::new();
    m.file(
        "/proc/sys/kernel/osrelease",
        "5.15.153.1-microsoft-standard-WSL2\n",
    );
    m.file("/usr/lib/wsl/lib/libcuda.so.1", "");
    assert!(m.codes("error").is_empty());
    m.file("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "");
    assert_eq!(m.codes("error"), vec!["PLT003"]);
}

#[test]
fn tk007_side_by_side_toolkits_and_user_only_settings() {
    let mut m = FakeMachine::h200();
    m.toolkit("12.8.93");
    m.var("HOME", "/home/ml");
    m.file(
        "/home/ml/.bashrc",
        "export PATH=/usr/local/cuda/bin:$PATH\n",
    );
    let (v, _) = m.json();
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "TK007")
        .expect("TK007");
    let fixes = f["fix"].to_string();
    assert!(fixes.contains("CUDA_HOME=/usr/local/cuda-12.8"), "{fixes}");
    assert!(fixes.contains("/etc/profile.d/cuda.sh"), "{fixes}");
}

#[test]
fn the_torch_python_imports_first_is_the_one_judged() {
    // Debian/Ubuntu: pip's torch in /usr/local shadows the distribution's CPU build in /usr/lib.
    let m = FakeMachine::h100();
    m.file("/usr/bin/python3.12", "");
    m.link("/usr/bin/python3", "python3.12");
    m.dir("/usr/lib/python3.12");
    m.file(
        "/usr/lib/python3/dist-packages/torch/version.py",
        "__version__ = '2.1.2'\ncuda = None\n",
    );
    m.file(
        "/usr/local/lib/python3.12/dist-packages/torch/version.py",
        "__version__ = '2.11.0+cu130'\ncuda = '13.0'\n",
    );
    let (v, _) = m.json();
    let env = &v["snapshot"]["python_envs"][0];
    assert_eq!(env["prefix"], "/usr");
    assert_eq!(env["torch"]["version"], "2.11.0+cu130", "{env:#}");
    assert!(env["errors"].to_string().contains("shadowed"), "{env:#}");
    assert!(m.codes("error").is_empty(), "{:?}", m.codes("error"));
}
