//! `cudoctor check --root` of Windows trees (docs/windows.md): a ComfyUI-portable layout
//! (`python_embeded\` with torch in `Lib\site-packages`) built from real files of torch's
//! Windows wheel, judged through the emulated DLL search. The committed tier uses the wheel's
//! files kept in tests/fixtures/real/windows; the real-wheel tier (CUDOCTOR_WINDOWS_WHEELS, as
//! scripts/windows/fetch-wheels.sh prints it) the whole wheels and the Visual C++ runtime.

mod support;

use std::path::{Path, PathBuf};

const EMBEDED: &str = "C/ComfyUI_windows_portable/python_embeded";

fn put(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    if std::fs::hard_link(src, dst).is_err() {
        std::fs::copy(src, dst).unwrap();
    }
}

fn put_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            put_tree(&src, &dst);
        } else {
            put(&src, &dst);
        }
    }
}

/// The portable layout around a torch directory: the embeddable Python's `._pth` and stand-ins
/// for the interpreter (python.exe and python312.dll are taken as loaded, never read).
fn portable(root: &Path, torch: &Path) {
    let embeded = root.join(EMBEDED);
    put_tree(torch, &embeded.join("Lib/site-packages/torch"));
    embeddable_python(&embeded, "python312.zip\n.\nLib/site-packages\n");
    std::fs::create_dir_all(root.join("C/Windows/System32")).unwrap();
}

/// The embeddable Python in `embeded`: stand-ins for its interpreter and DLL, and its `._pth`.
fn embeddable_python(embeded: &Path, pth: &str) {
    std::fs::write(embeded.join("python.exe"), b"MZ").unwrap();
    std::fs::write(embeded.join("python312.dll"), b"MZ").unwrap();
    std::fs::write(embeded.join("python312._pth"), pth).unwrap();
}

fn check(root: &Path, path: &str, format: &str) -> (String, i32) {
    check_with(root, path, None, format)
}

/// `check --root ROOT` with only PATH (and CUDA_PATH when given) set.
fn check_with(root: &Path, path: &str, cuda_path: Option<&str>, format: &str) -> (String, i32) {
    command_with(root, path, cuda_path, &["check", "--format", format])
}

/// `cudoctor ARGS --root ROOT` with only PATH (and CUDA_PATH when given) set.
fn command_with(root: &Path, path: &str, cuda_path: Option<&str>, args: &[&str]) -> (String, i32) {
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.env_clear()
        .env("COLUMNS", cudoctor_testkit::TEST_COLUMNS)
        .env("PATH", path)
        .env("NO_COLOR", "1");
    if let Some(c) = cuda_path {
        cmd.env("CUDA_PATH", c);
    }
    let out = cmd.args(args).arg("--root").arg(root).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn json(root: &Path, path: &str) -> serde_json::Value {
    let (text, code) = check(root, path, "json");
    assert_eq!(code, 1, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    support::check_fixes(&v);
    support::one_cause_each(&v, 1, &[]);
    v
}

fn finding<'a>(v: &'a serde_json::Value, code: &str) -> &'a serde_json::Value {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == code)
        .unwrap_or_else(|| panic!("no {code} in {v:#}"))
}

#[test]
fn a_portable_torch_without_the_visual_cpp_runtime_is_plt020_with_a_powershell_fix() {
    let dir = tempfile::tempdir().unwrap();
    let torch =
        cudoctor_testkit::repo_root().join("tests/fixtures/real/windows/torch-2.15.0-cpu/torch");
    portable(dir.path(), &torch);
    let v = json(dir.path(), r"C:\Windows\System32;C:\Windows");
    let f = finding(&v, "PLT020");
    assert_eq!(f["severity"], "error");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("c10.dll cannot be loaded"),
        "{f:#}"
    );
    assert!(
        f["cause"]
            .as_str()
            .unwrap()
            .contains("Visual C++ runtime is not installed"),
        "{f:#}"
    );
    assert!(f["evidence"].as_array().unwrap().iter().any(|e| e
        .as_str()
        .unwrap()
        .starts_with("MSVCP140.dll, imported by c10.dll")));
    assert_eq!(
        f["fix"][0]["powershell"],
        "winget install --id Microsoft.VCRedist.2015+.x64 --exact"
    );
    // Its torch is judged there: the framework layer does not say that no torch was found.
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["code"] != "FW004"));
    let w = &v["snapshot"]["windows"]["torch_envs"][0];
    assert_eq!(w["kind"], "embedded");
    assert_eq!(w["torch_version"], "2.15.0+cpu");
    assert_eq!(w["import"]["runtime_message"], true);
    // The text report shows the PowerShell command after its prompt.
    let (text, code) = check(dir.path(), r"C:\Windows\System32;C:\Windows", "text");
    assert_eq!(code, 1);
    support::text_fixes_are_typed(&text);
    assert!(
        text.contains("PS> winget install --id Microsoft.VCRedist.2015+.x64 --exact"),
        "{text}"
    );
}

fn wheels(test: &str) -> Option<PathBuf> {
    let Some(w) = std::env::var_os("CUDOCTOR_WINDOWS_WHEELS") else {
        cudoctor_testkit::skip_opt_in(
            test,
            "CUDOCTOR_WINDOWS_WHEELS names the unpacked wheels (scripts/windows/fetch-wheels.sh)",
        );
        return None;
    };
    Some(PathBuf::from(w))
}

fn wheel(wheels: &Path, prefix: &str) -> PathBuf {
    std::fs::read_dir(wheels)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix}* under {}", wheels.display()))
}

#[test]
fn a_portable_tree_with_another_pythons_runtime_on_path_is_plt021_caused_by_plt020() {
    let test = "a_portable_tree_with_another_pythons_runtime_on_path_is_plt021_caused_by_plt020";
    let Some(w) = wheels(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    portable(dir.path(), &wheel(&w, "torch-").join("torch"));
    let runtime = |v: &str| {
        wheel(&w, &format!("msvc_runtime-{v}")).join(format!("msvc_runtime-{v}.data/data/Scripts"))
    };
    // The embeddable Python's own vcruntime140 DLLs, and another Python's runtime on PATH.
    for dll in ["vcruntime140.dll", "vcruntime140_1.dll"] {
        put(
            &runtime("14.51.36231").join(dll),
            &dir.path().join(EMBEDED).join(dll),
        );
    }
    put_tree(
        &runtime("14.34.31931"),
        &dir.path().join("C/Python38/Scripts"),
    );
    let path = r"C:\Windows\System32;C:\Windows;C:\Python38\Scripts";
    let v = json(dir.path(), path);
    let plt020 = finding(&v, "PLT020");
    assert!(
        plt020["title"]
            .as_str()
            .unwrap()
            .contains("shm.dll cannot be loaded"),
        "{plt020:#}"
    );
    assert!(plt020["evidence"].as_array().unwrap().iter().any(|e| e
        .as_str()
        .unwrap()
        .starts_with("VCRUNTIME140_THREADS.dll, imported by torch_cpu.dll")));
    let plt021 = finding(&v, "PLT021");
    assert_eq!(plt021["caused_by"], "PLT020");
    assert!(plt021["title"]
        .as_str()
        .unwrap()
        .contains(r"C:\Python38\Scripts"));
    assert!(plt021["evidence"].as_array().unwrap().iter().any(|e| e
        .as_str()
        .unwrap()
        .starts_with("loaded through PATH: msvcp140.dll")));
    // Installed properly (System32 holds the current runtime), the same tree is healthy.
    put_tree(
        &runtime("14.51.36231"),
        &dir.path().join("C/Windows/System32"),
    );
    let (text, _) = check(dir.path(), path, "json");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let codes = cudoctor_testkit::finding_codes(&v);
    assert!(
        !codes.contains(&"PLT020") && !codes.contains(&"PLT021"),
        "{codes:?}"
    );
    assert_eq!(
        v["snapshot"]["windows"]["torch_envs"][0]["import"]["raised"],
        serde_json::Value::Null
    );
}

/// ComfyUI portable as it ships, from the real wheels: torch (the whole wheel, its dist-info
/// with METADATA and RECORD), torchvision, the embeddable Python's `._pth` and vcruntime DLLs,
/// the current Visual C++ runtime in System32.
fn healthy_portable(w: &Path, root: &Path) {
    let embeded = root.join(EMBEDED);
    let site = embeded.join("Lib/site-packages");
    for wheel_dir in [wheel(w, "torch-"), wheel(w, "torchvision-")] {
        put_tree(&wheel_dir, &site);
    }
    let _ = std::fs::remove_file(site.join(".unpacked"));
    let runtime =
        wheel(w, "msvc_runtime-14.51.36231").join("msvc_runtime-14.51.36231.data/data/Scripts");
    put_tree(&runtime, &root.join("C/Windows/System32"));
    for dll in ["vcruntime140.dll", "vcruntime140_1.dll"] {
        put(&runtime.join(dll), &embeded.join(dll));
    }
    // As the embeddable Python 3.12 ships it, with `import site` enabled as ComfyUI does.
    embeddable_python(
        &embeded,
        "python312.zip\n.\nLib/site-packages\n\n# Uncomment to run site.main() automatically\nimport site\n",
    );
}

#[test]
fn a_healthy_portable_tree_is_a_python_env_judged_without_a_problem() {
    let test = "a_healthy_portable_tree_is_a_python_env_judged_without_a_problem";
    let Some(w) = wheels(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    healthy_portable(&w, dir.path());
    let path = r"C:\Windows\System32;C:\Windows";
    let (text, code) = check(dir.path(), path, "json");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let problems: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error" || f["severity"] == "warning")
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(code, 0, "{text}");
    // The embedded Python is a python env of the snapshot, read from its files.
    let envs = v["snapshot"]["python_envs"].as_array().unwrap();
    assert_eq!(envs.len(), 1, "{envs:#?}");
    let env = &envs[0];
    let prefix = r"C:\ComfyUI_windows_portable\python_embeded";
    assert_eq!(env["prefix"], prefix);
    assert_eq!(env["windows"], true);
    assert_eq!(env["interpreter"], format!(r"{prefix}\python.exe"));
    assert_eq!(env["python_version"], "3.12");
    assert_eq!(env["found_via"][0], "portable layout");
    assert_eq!(
        env["site_packages"][0],
        format!(r"{prefix}\Lib\site-packages")
    );
    assert_eq!(env["torch"]["version"], "2.15.0+cpu");
    assert_eq!(
        env["torch"]["path"],
        format!(r"{prefix}\Lib\site-packages\torch")
    );
    let packages: Vec<String> = env["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{} {}",
                p["name"].as_str().unwrap(),
                p["version"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(packages, ["torch 2.15.0", "torchvision 0.29.2"]);
    // Every file of torch's RECORD was found (none is reported missing).
    let wc = &env["wheel_check"];
    assert!(wc["files_checked"].as_u64().unwrap() > 10_000, "{wc:#}");
    assert_eq!(wc["packages"][0], "torch 2.15.0");
    // torch's Linux-only requirements (nvidia wheels, triton) are not the Windows env's.
    let fw = &env["frameworks"][0];
    assert_eq!(fw["framework"], "torch");
    assert!(fw["needs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n.as_str().unwrap().contains("platform_system == \"Linux\"")));

    // A file of torch gone: the damaged wheel (FW010) is the root, fixed in PowerShell with the
    // environment's own python.exe; the import failing on it (PLT020) is its consequence.
    std::fs::remove_file(
        dir.path()
            .join(EMBEDED)
            .join("Lib/site-packages/torch/lib/shm.dll"),
    )
    .unwrap();
    let v = json(dir.path(), path);
    let fw010 = finding(&v, "FW010");
    assert_eq!(fw010["caused_by"], serde_json::Value::Null);
    assert_eq!(
        fw010["fix"][0]["powershell"],
        format!(
            r"& '{prefix}\python.exe' -m pip install --force-reinstall --no-deps torch==2.15.0   # puts back torch's own files, nothing else changes"
        )
    );
    assert!(fw010["evidence"][0].as_str().unwrap().starts_with(&format!(
        r"{prefix}\Lib\site-packages\torch\lib\shm.dll: missing"
    )));
    let plt020 = finding(&v, "PLT020");
    assert_eq!(plt020["caused_by"], "FW010");
    assert_eq!(plt020["fix"], serde_json::json!([]));
}

/// Replaces a file of the tree (unlinking it first: the tree's files are hard links into the
/// wheel cache, which must stay as it is).
fn rewrite(path: &Path, text: &str) {
    std::fs::remove_file(path).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The problems found.
fn codes(v: &serde_json::Value) -> Vec<&str> {
    cudoctor_testkit::codes_at(v, &["error", "warning"])
}

fn check_json(root: &Path, path: &str) -> serde_json::Value {
    check_json_with(root, path, None)
}

fn check_json_with(root: &Path, path: &str, cuda_path: Option<&str>) -> serde_json::Value {
    let (text, _) = check_with(root, path, cuda_path, "json");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    support::check_fixes(&v);
    v
}

/// A CUDA build of torch: the real wheel's files, its version.py saying `+cu129` (torch's CUDA
/// wheels for Windows are not on PyPI), and in `torch\lib` a stand-in of its CUDA library
/// (tests/fixtures/windows/cuda/torch_cuda.dll, importing from cudart64_12.dll and
/// cudnn64_9.dll by name); the CUDA DLLs are the real ones of NVIDIA's win_amd64 wheels
/// (nvidia-cuda-runtime-cu12 12.9.79, nvidia-cudnn-cu12 9.28.0.42), put where users have them.
#[test]
fn a_cuda_torch_loads_the_cuda_dlls_where_windows_finds_them_and_names_a_missing_one() {
    let test = "a_cuda_torch_loads_the_cuda_dlls_where_windows_finds_them_and_names_a_missing_one";
    let Some(w) = wheels(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    healthy_portable(&w, root);
    let site = root.join(EMBEDED).join("Lib/site-packages");
    // Without the CPU wheel's dist-info: this torch came from PyTorch's CUDA index.
    std::fs::remove_dir_all(site.join("torch-2.15.0.dist-info")).unwrap();
    rewrite(
        &site.join("torch/version.py"),
        "__version__ = '2.15.0+cu129'\ndebug = False\ncuda: Optional[str] = '12.9'\nhip: Optional[str] = None\n",
    );
    let lib = site.join("torch/lib");
    std::fs::copy(
        cudoctor_testkit::repo_root().join("tests/fixtures/windows/cuda/torch_cuda.dll"),
        lib.join("torch_cuda.dll"),
    )
    .unwrap();
    let cudart = wheel(&w, "nvidia_cuda_runtime_cu12-12.9.79")
        .join("nvidia/cuda_runtime/bin/cudart64_12.dll");
    let cudnn = wheel(&w, "nvidia_cudnn_cu12-9.28.0.42").join("nvidia/cudnn/bin/cudnn64_9.dll");
    let path = r"C:\Windows\System32;C:\Windows";
    let prefix = r"C:\ComfyUI_windows_portable\python_embeded";

    // 1. No CUDA runtime anywhere: the import fails at torch_cuda.dll, for cudart64_12.dll, and
    // the fix reinstalls the CUDA build from its index.
    let v = check_json(root, path);
    support::one_cause_each(&v, 1, &[]);
    assert_eq!(codes(&v), ["PLT020"], "{v:#}");
    // A Windows tree without the driver's DLLs (nvml.dll, nvcuda.dll): its driver is unknown,
    // so a CUDA torch there is no sign of a missing driver (no DRV001), and no Linux file is
    // evidence.
    let snap = &v["snapshot"];
    assert_eq!(snap["host"]["os"], "windows");
    assert_eq!(
        snap["driver"]["attempts"].as_array().unwrap().len(),
        1,
        "{:#}",
        snap["driver"]
    );
    assert_eq!(snap["driver"]["attempts"][0]["outcome"], "skipped");
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["code"] != "DRV001"));
    let f = finding(&v, "PLT020");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("torch_cuda.dll cannot be loaded"),
        "{f:#}"
    );
    assert!(f["evidence"].as_array().unwrap().iter().any(|e| e
        == "cudart64_12.dll, imported by torch_cuda.dll, is in none of the directories searched"));
    assert!(
        f["cause"].as_str().unwrap().contains("CUDA library"),
        "{f:#}"
    );
    assert_eq!(
        f["fix"][0]["powershell"],
        format!(
            r"& '{prefix}\python.exe' -m pip install --force-reinstall --no-deps torch==2.15.0+cu129 --index-url https://download.pytorch.org/whl/cu129"
        )
    );
    assert_eq!(v["snapshot"]["python_envs"][0]["torch"]["cuda"], "12.9");

    // 2. As torch's CUDA wheel ships them, in torch\lib: loaded from there, nothing to say.
    put(&cudart, &lib.join("cudart64_12.dll"));
    put(&cudnn, &lib.join("cudnn64_9.dll"));
    let v = check_json(root, path);
    assert!(codes(&v).is_empty(), "{:?}", codes(&v));
    let import = &v["snapshot"]["windows"]["torch_envs"][0]["import"];
    assert_eq!(import["raised"], serde_json::Value::Null);
    let loaded = |name: &str| -> String {
        import["modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["path"].as_str().unwrap().ends_with(name))
            .map(|m| m["path"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("{name} not loaded: {import:#}"))
    };
    assert_eq!(
        loaded("cudnn64_9.dll"),
        format!(r"{prefix}\Lib\site-packages\torch\lib\cudnn64_9.dll")
    );

    // 3. cuDNN only in another install's directory on PATH: torch's fallback reaches it (PLT021).
    std::fs::remove_file(lib.join("cudnn64_9.dll")).unwrap();
    let other = r"C:\Program Files\NVIDIA\CUDNN\v9.28\bin";
    put(
        &cudnn,
        &root.join("C/Program Files/NVIDIA/CUDNN/v9.28/bin/cudnn64_9.dll"),
    );
    let v = check_json(root, &format!("{path};{other}"));
    assert_eq!(codes(&v), ["PLT021"], "{v:#}");
    let f = finding(&v, "PLT021");
    assert!(f["title"].as_str().unwrap().contains(other), "{f:#}");
    assert!(f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == "loaded through PATH: cudnn64_9.dll, wanted by torch_cuda.dll"));

    // 4. The runtime of an installed CUDA Toolkit 12.9 (no cudart64_*.dll in torch\lib): torch
    // adds %CUDA_PATH_V12_9%\bin, by default under Program Files, and loads it from there.
    put(&cudnn, &lib.join("cudnn64_9.dll"));
    std::fs::remove_file(lib.join("cudart64_12.dll")).unwrap();
    let toolkit_bin = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.9\bin";
    put(
        &cudart,
        &root.join("C/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.9/bin/cudart64_12.dll"),
    );
    let v = check_json(root, path);
    assert!(codes(&v).is_empty(), "{:?}", codes(&v));
    let import = &v["snapshot"]["windows"]["torch_envs"][0]["import"];
    assert_eq!(import["raised"], serde_json::Value::Null);
    let m = import["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["path"].as_str().unwrap().ends_with("cudart64_12.dll"))
        .unwrap();
    assert_eq!(m["path"], format!(r"{toolkit_bin}\cudart64_12.dll"));
    assert_eq!(m["found"], "user_dir");
}

/// CUDA_PATH of a Windows tree names a toolkit the Windows collector reads (`bin\nvcc.exe`,
/// version.json), not one of Linux's: a healthy one is no problem (TK006 once said it held no
/// toolkit and offered `unset`), an uninstalled one is TK006 with PowerShell's fix.
#[test]
fn cuda_path_of_a_windows_tree_is_judged_on_its_windows_toolkits() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("C/Windows/System32")).unwrap();
    let base = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA";
    windows_toolkits(root, &[("v12.8", "12.8.93")]);
    let run =
        |cuda_path: &str| check_json_with(root, r"C:\Windows\System32;C:\Windows", Some(cuda_path));
    let v = run(&format!(r"{base}\v12.8"));
    assert!(codes(&v).is_empty(), "{:#}", v["findings"]);
    let v = run(&format!(r"{base}\v12.4"));
    assert_eq!(codes(&v), ["TK006"], "{:#}", v["findings"]);
    let f = finding(&v, "TK006");
    assert_eq!(
        f["fix"][0]["powershell"],
        format!(r"$env:CUDA_PATH = '{base}\v12.8'   # CUDA 12.8.93")
    );
    assert!(f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == "the directory does not exist"));
}

/// The toolkit an extension build would use on Windows (CUDA_PATH here) against torch's CUDA:
/// another major is TK002, fixed in PowerShell with the installed toolkit of torch's major; the
/// same major is no problem.
#[test]
fn a_windows_toolkit_of_another_major_than_torchs_is_tk002_in_powershell() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let embeded = root.join(EMBEDED);
    let torch = embeded.join("Lib/site-packages/torch");
    std::fs::create_dir_all(&torch).unwrap();
    std::fs::write(
        torch.join("version.py"),
        "__version__ = '2.15.0+cu129'\ncuda: Optional[str] = '12.9'\n",
    )
    .unwrap();
    std::fs::write(embeded.join("python.exe"), b"MZ").unwrap();
    std::fs::write(
        embeded.join("python312._pth"),
        "python312.zip\n.\nLib/site-packages\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("C/Windows/System32")).unwrap();
    let base = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA";
    windows_toolkits(root, &[("v11.8", "11.8.89"), ("v12.9", "12.9.86")]);
    let run_with = |cuda_path: Option<&str>, path: &str| check_json_with(root, path, cuda_path);
    let system = r"C:\Windows\System32;C:\Windows";
    let run = |cuda_path: &str| run_with(Some(cuda_path), system);
    let has = |v: &serde_json::Value, code: &str| {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == code)
    };
    // Without CUDA_PATH: the nvcc on PATH (12.9's), else the first v*.* by name (11.8).
    assert!(!has(
        &run_with(None, &format!(r"{system};{base}\v12.9\bin")),
        "TK002"
    ));
    assert!(has(&run_with(None, system), "TK002"));
    // The first nvcc on PATH is the one (shutil.which), whatever order the toolkits have.
    assert!(!has(
        &run_with(
            None,
            &format!(r"{system};{base}\v12.9\bin;{base}\v11.8\bin")
        ),
        "TK002"
    ));
    assert!(has(
        &run_with(
            None,
            &format!(r"{system};{base}\v11.8\bin;{base}\v12.9\bin")
        ),
        "TK002"
    ));
    // A conda environment's nvcc first on PATH: its `Library` is the toolkit a build uses,
    // of a version no file says; not judged as the 11.8 behind it.
    let conda_bin = root.join("C/Users/Me/miniconda3/envs/ml/Library/bin");
    std::fs::create_dir_all(&conda_bin).unwrap();
    std::fs::write(conda_bin.join("nvcc.exe"), b"MZ").unwrap();
    let conda_first = run_with(
        None,
        &format!(r"{system};C:\Users\Me\miniconda3\envs\ml\Library\bin;{base}\v11.8\bin"),
    );
    assert!(!has(&conda_first, "TK002"), "{:#}", conda_first["findings"]);
    // With conda's record of the package that installed it, its version is known: conda's
    // nvcc for CUDA 11.8 under torch for 12.9 is TK002, chosen as the nvcc on PATH.
    let meta = root.join("C/Users/Me/miniconda3/envs/ml/conda-meta");
    std::fs::create_dir_all(&meta).unwrap();
    std::fs::write(
        meta.join("cuda-nvcc-11.8.89-0.json"),
        r#"{"name": "cuda-nvcc", "version": "11.8.89"}"#,
    )
    .unwrap();
    let conda_old = run_with(
        None,
        &format!(r"{system};C:\Users\Me\miniconda3\envs\ml\Library\bin;{base}\v12.9\bin"),
    );
    let tk002 = finding(&conda_old, "TK002");
    assert!(
        tk002["title"]
            .as_str()
            .unwrap()
            .starts_with("Extension builds would use CUDA 11.8"),
        "{tk002:#}"
    );
    assert!(conda_first["snapshot"]["windows"]["toolkits"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["path"] == r"C:\Users\Me\miniconda3\envs\ml\Library" && t["nvcc"] == true));
    std::fs::remove_dir_all(root.join("C/Users")).unwrap();
    let v = run(&format!(r"{base}\v11.8"));
    let tk002 = finding(&v, "TK002");
    assert!(tk002["title"]
        .as_str()
        .unwrap()
        .starts_with("Extension builds would use CUDA 11.8"));
    assert_eq!(
        tk002["fix"][0]["powershell"],
        format!(
            r"$env:CUDA_HOME = '{base}\v12.9'; $env:Path = '{base}\v12.9\bin' + ';' + $env:Path"
        )
    );
    let v = run(&format!(r"{base}\v12.9"));
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["code"] != "TK002"),
        "{:#}",
        v["findings"]
    );
}

/// `kernels` and `libs` read the same embedded Python that check reads (through the one
/// collection): its torch is found without --python and with it, `libs` shows the DLL search of
/// `import torch` with the failure check's PLT020 names, and `kernels` says that the kernel
/// images of a Windows environment's DLLs are not read instead of "no Python environment".
#[test]
fn kernels_and_libs_judge_the_embedded_python_that_check_reads() {
    let dir = tempfile::tempdir().unwrap();
    let torch =
        cudoctor_testkit::repo_root().join("tests/fixtures/real/windows/torch-2.15.0-cpu/torch");
    portable(dir.path(), &torch);
    let path = r"C:\Windows\System32;C:\Windows";
    let python = r"C:\ComfyUI_windows_portable\python_embeded\python.exe";
    let root_text = dir.path().to_str().unwrap();

    let (text, code) = command_with(dir.path(), path, None, &["kernels"]);
    assert_eq!(code, 0, "{text}");
    insta::assert_snapshot!(
        "windows_tree_kernels_text",
        text.replace(root_text, "[root]")
    );
    let (json, code) = command_with(dir.path(), path, None, &["kernels", "--format", "json"]);
    assert_eq!(code, 0, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(
        v["notes"][0]
            .as_str()
            .unwrap()
            .starts_with(r"C:\ComfyUI_windows_portable\python_embeded (torch 2.15.0+cpu)"),
        "{v:#}"
    );

    for args in [&["libs"][..], &["libs", "--python", python][..]] {
        let (text, code) = command_with(dir.path(), path, None, args);
        assert_eq!(code, 1, "{args:?}: {text}");
        insta::assert_snapshot!("windows_tree_libs_text", text.replace(root_text, "[root]"));
    }
    let (json, code) = command_with(
        dir.path(),
        path,
        None,
        &["libs", "--python", python, "--format", "json"],
    );
    assert_eq!(code, 1, "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let w = &v["windows"][0];
    assert_eq!(w["python"], python);
    assert_eq!(w["import"]["raised"][1]["name"], "MSVCP140.dll", "{w:#}");
    let (md, code) = command_with(
        dir.path(),
        path,
        None,
        &["libs", "--python", python, "--format", "markdown"],
    );
    assert_eq!(code, 1, "{md}");
    assert!(md.contains("fails with error 126"), "{md}");
}

/// The stand-in of NVIDIA's nvml.dll for driver 560.94 (tests/fixtures/windows/nvml: FILEVERSION
/// 32.0.15.6094), put where the driver installs it.
fn nvml_of_560_94(root: &Path, dir: &str) {
    put(
        &cudoctor_testkit::repo_root().join("tests/fixtures/windows/nvml/nvml.dll"),
        &root.join(dir).join("nvml.dll"),
    );
}

/// A Windows tree's driver is read from the version resource of System32's nvml.dll: 560.94
/// from 32.0.15.6094, in the JSON report with its file as the source and in the text report;
/// its GPUs stay unknown (no DRV002 "no GPU visible"). torch for CUDA 12.9 runs on it by the
/// Windows minor-version floor (a note); torch for CUDA 13.0, which needs a 580 driver, does not
/// (DRV004): the text report's snapshot.
#[test]
fn a_windows_trees_driver_is_read_from_nvml_dll_s_version_resource() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    nvml_of_560_94(root, "C/Windows/System32");
    let path = r"C:\Windows\System32;C:\Windows";
    let v = check_json(root, path);
    let driver = &v["snapshot"]["driver"];
    assert_eq!(driver["version"]["value"], "560.94", "{driver:#}");
    assert_eq!(driver["version"]["source"], r"C:\Windows\System32\nvml.dll");
    assert_eq!(driver["gpus_not_read"], true);
    let attempts = driver["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{driver:#}");
    assert_eq!(attempts[0]["source"], r"C:\Windows\System32\nvml.dll");
    assert_eq!(attempts[0]["outcome"], "ok");
    assert_eq!(
        attempts[0]["detail"],
        "file version 32.0.15.6094: driver 560.94"
    );
    assert!(codes(&v).is_empty(), "{:#}", v["findings"]);
    let (text, _) = check(root, path, "text");
    assert!(
        text.contains(r"560.94  [C:\Windows\System32\nvml.dll]"),
        "{text}"
    );

    // Where drivers before the DCH packages put it (beside nvidia-smi.exe), cased as on disk.
    let old = tempfile::tempdir().unwrap();
    nvml_of_560_94(old.path(), "C/Program Files/NVIDIA Corporation/NVSMI");
    std::fs::create_dir_all(old.path().join("C/Windows/System32")).unwrap();
    let v = check_json(old.path(), path);
    assert_eq!(
        v["snapshot"]["driver"]["version"]["source"],
        r"C:\Program Files\NVIDIA Corporation\NVSMI\nvml.dll"
    );

    // torch for CUDA 12.9 in a portable layout: 560.94 runs it through the Windows 12.x floor
    // (528.33), natively from CUDA 12.9's Windows minimum (576.02), a note only.
    let embeded = root.join(EMBEDED);
    let torch = embeded.join("Lib/site-packages/torch");
    std::fs::create_dir_all(&torch).unwrap();
    let torch_for = |version: &str, cuda: &str| {
        std::fs::write(
            torch.join("version.py"),
            format!("__version__ = '{version}'\ncuda: Optional[str] = '{cuda}'\n"),
        )
        .unwrap();
    };
    torch_for("2.15.0+cu129", "12.9");
    embeddable_python(&embeded, "python312.zip\n.\nLib/site-packages\n");
    let v = check_json(root, path);
    assert!(codes(&v).is_empty(), "{:#}", v["findings"]);
    let f = finding(&v, "DRV004");
    assert_eq!(f["severity"], "info");
    assert!(f["cause"].as_str().unwrap().contains("(528.33)"), "{f:#}");
    assert!(
        f["fix"][0]["prose"].as_str().unwrap().contains("576.02"),
        "{f:#}"
    );

    // torch for CUDA 13.0: 560.94 is below CUDA 13's 580 floor.
    torch_for("2.15.0+cu130", "13.0");
    let v = check_json(root, path);
    let f = finding(&v, "DRV004");
    assert_eq!(f["severity"], "error");
    assert!(f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == r"driver 560.94 (from C:\Windows\System32\nvml.dll)"));
    let (text, _) = check(root, path, "text");
    let root_text = root.to_str().unwrap();
    insta::assert_snapshot!(
        "windows_tree_driver_from_nvml_dll_text",
        text.replace(root_text, "[root]")
    );
}

/// A damaged nvml.dll (not a PE image) leaves the driver unknown, not absent: its attempt failed
/// and says why, and no DRV001 says that no driver is installed.
#[test]
fn a_damaged_nvml_dll_leaves_the_driver_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let system32 = root.join("C/Windows/System32");
    std::fs::create_dir_all(&system32).unwrap();
    std::fs::write(system32.join("nvml.dll"), b"MZ but nothing more").unwrap();
    let v = check_json(root, r"C:\Windows\System32;C:\Windows");
    let driver = &v["snapshot"]["driver"];
    assert_eq!(driver["version"], serde_json::Value::Null, "{driver:#}");
    let attempts = driver["attempts"].as_array().unwrap();
    assert_eq!(attempts[0]["outcome"], "failed", "{driver:#}");
    assert!(attempts[0]["detail"]
        .as_str()
        .unwrap()
        .contains("not a PE file"));
    assert_eq!(attempts[1]["outcome"], "skipped");
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["code"] != "DRV001"));
}

/// A Windows tree whose CUDA_PATH selects a toolkit newer than its driver (CUDA 13.0 on 560.94,
/// read from nvml.dll): TK004 offers the installed 12.4, which the driver runs, in PowerShell,
/// never as POSIX `export`.
#[test]
fn a_windows_toolkit_newer_than_the_driver_is_tk004_with_the_older_one_in_powershell() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    nvml_of_560_94(root, "C/Windows/System32");
    let base = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA";
    windows_toolkits(root, &[("v12.4", "12.4.131"), ("v13.0", "13.0.88")]);
    let v = check_json_with(
        root,
        r"C:\Windows\System32;C:\Windows",
        Some(&format!(r"{base}\v13.0")),
    );
    let f = finding(&v, "TK004");
    let commands: Vec<&serde_json::Value> = f["fix"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s.get("prose").is_none())
        .collect();
    assert_eq!(
        commands,
        [&serde_json::json!({
            "powershell": format!(
                r"$env:CUDA_HOME = '{base}\v12.4'; $env:Path = '{base}\v12.4\bin' + ';' + $env:Path"
            )
        })],
        "{f:#}"
    );
}

/// CUDA toolkits laid out as NVIDIA's Windows installer does, under the tree's `C:\Program
/// Files\NVIDIA GPU Computing Toolkit\CUDA`: each (directory, full version) with its nvcc.exe
/// and version.json.
fn windows_toolkits(root: &std::path::Path, toolkits: &[(&str, &str)]) {
    for (v, full) in toolkits {
        let tk = root
            .join("C/Program Files/NVIDIA GPU Computing Toolkit/CUDA")
            .join(v);
        std::fs::create_dir_all(tk.join("bin")).unwrap();
        std::fs::write(tk.join("bin/nvcc.exe"), b"MZ").unwrap();
        std::fs::write(
            tk.join("version.json"),
            format!(r#"{{"cuda": {{"name": "CUDA SDK", "version": "{full}"}}}}"#),
        )
        .unwrap();
    }
}

/// A Visual Studio installation as its installer lays it out in a Windows tree: the state file
/// vswhere reads (`%ProgramData%\Microsoft\VisualStudio\Packages\_Instances\<id>\state.json`,
/// the fields vswhere reports) and, with `cpp`, the C++ workload's files (an MSVC toolset's
/// `bin\Hostx64\x64\cl.exe` and `VC\Auxiliary\Build\vcvarsall.bat`).
fn visual_studio(root: &Path, product: &str, install: &str, cpp: bool) {
    let instances = root.join("C/ProgramData/Microsoft/VisualStudio/Packages/_Instances/3d1f0b4c");
    std::fs::create_dir_all(&instances).unwrap();
    let state = serde_json::json!({
        "installationPath": install,
        "installationVersion": "17.14.36310.24",
        "catalogInfo": { "productLineVersion": "2022", "productDisplayVersion": "17.14.9" },
        "product": { "id": format!("Microsoft.VisualStudio.Product.{product}") },
    });
    std::fs::write(instances.join("state.json"), state.to_string()).unwrap();
    let dir = root.join(install.replacen("C:\\", "C/", 1).replace('\\', "/"));
    std::fs::create_dir_all(dir.join("Common7/IDE")).unwrap();
    if cpp {
        let bin = dir.join("VC/Tools/MSVC/14.44.35207/bin/Hostx64/x64");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("cl.exe"), b"MZ").unwrap();
        let aux = dir.join("VC/Auxiliary/Build");
        std::fs::create_dir_all(&aux).unwrap();
        std::fs::write(aux.join("vcvarsall.bat"), b"@echo off\r\n").unwrap();
        std::fs::write(aux.join("vcvars64.bat"), b"@echo off\r\n").unwrap();
    }
}

/// A CUDA torch in a portable tree with CUDA 12.9 installed: without any Visual Studio an
/// extension build has no compiler (TK019, the Build Tools' C++ workload in PowerShell); with
/// Visual Studio Community installed without C++, the fix adds the workload to it; with the
/// C++ tools installed (not on PATH: torch and setuptools run its vcvarsall.bat) or `cl.exe`
/// on PATH (a Native Tools prompt), nothing is said.
#[test]
fn a_windows_tree_without_msvc_is_tk019_and_one_with_the_cpp_tools_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let embeded = root.join(EMBEDED);
    let torch = embeded.join("Lib/site-packages/torch");
    std::fs::create_dir_all(&torch).unwrap();
    std::fs::write(
        torch.join("version.py"),
        "__version__ = '2.15.0+cu129'\ncuda: Optional[str] = '12.9'\n",
    )
    .unwrap();
    embeddable_python(&embeded, "python312.zip\n.\nLib/site-packages\n");
    std::fs::create_dir_all(root.join("C/Windows/System32")).unwrap();
    windows_toolkits(root, &[("v12.9", "12.9.86")]);
    let base = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA";
    let cuda = format!(r"{base}\v12.9");
    let system = r"C:\Windows\System32;C:\Windows";
    let tk019 = |path: &str| {
        let v = check_json_with(root, path, Some(&cuda));
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["code"] == "TK019")
            .cloned()
    };

    // 1. No Visual Studio at all.
    let f = tk019(system).expect("TK019 without any Visual Studio");
    assert_eq!(f["severity"], "warning");
    let fix = f["fix"][0]["powershell"].as_str().unwrap();
    assert!(
        fix.starts_with("winget install --id Microsoft.VisualStudio.2022.BuildTools")
            && fix.contains("--add Microsoft.VisualStudio.Workload.VCTools"),
        "{fix}"
    );
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains("Microsoft Visual C++ 14.0 or greater is required"),
        "{evidence}"
    );

    // 2. Visual Studio Community without the C++ workload: the workload added to it.
    let community = r"C:\Program Files\Microsoft Visual Studio\2022\Community";
    visual_studio(root, "Community", community, false);
    let f = tk019(system).expect("TK019 with Visual Studio but no C++");
    assert!(f["evidence"]
        .to_string()
        .contains(r"Visual Studio Community 2022 at C:\\Program Files\\Microsoft Visual Studio\\2022\\Community"));
    assert_eq!(
        f["fix"][0]["powershell"],
        format!(
            r"& 'C:\Program Files (x86)\Microsoft Visual Studio\Installer\setup.exe' modify --installPath '{community}' --add Microsoft.VisualStudio.Workload.NativeDesktop --includeRecommended --passive"
        )
    );

    // 3. The C++ tools installed, not on PATH: torch and setuptools set them up themselves.
    visual_studio(root, "Community", community, true);
    assert!(tk019(system).is_none());
    let v = check_json_with(root, system, Some(&cuda));
    let msvc = &v["snapshot"]["windows"]["msvc"];
    assert_eq!(
        msvc["installations"][0]["cl_x64"][0],
        format!(r"{community}\VC\Tools\MSVC\14.44.35207\bin\Hostx64\x64\cl.exe")
    );

    // 4. No installation recorded, but cl.exe on PATH (a Native Tools prompt of a copied
    // toolset): nothing said either.
    std::fs::remove_dir_all(root.join("C/ProgramData")).unwrap();
    assert!(tk019(system).is_some());
    let bin = format!(r"{community}\VC\Tools\MSVC\14.44.35207\bin\Hostx64\x64");
    assert!(tk019(&format!("{bin};{system}")).is_none());
}
