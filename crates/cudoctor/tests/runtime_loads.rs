//! Libraries opened at run time, stage by stage, end to end on gcc-built ELF files in a fake
//! machine root laid out as the H200 machine is: cuDNN 9.19 from the wheel (its front end
//! opens its sub-libraries by soname with RUNPATH $ORIGIN, as 9.5 and 9.19 do), the system's
//! cuDNN 9.14 in /lib/x86_64-linux-gnu with version-named files, and the driver's libraries
//! where the captured `ldconfig -p` of the real machine lists them
//! (tests/fixtures/real/h200x2-torch2.11-cu130/ldconfig.txt).

mod support;

use serde_json::Value;
use support::{findings, gcc, ldconfig, system_libc, FakeMachine, Gpu};

const SP: &str = "/opt/venv/lib/python3.12/site-packages";
const SYSTEM: &str = "/lib/x86_64-linux-gnu";
const LLP: &str = "/usr/local/cuda/lib64:/lib/x86_64-linux-gnu";
const SUBS: [&str; 4] = [
    "libcudnn_graph.so.9",
    "libcudnn_engines_precompiled.so.9",
    "libcudnn_engines_runtime_compiled.so.9",
    "libcudnn_heuristic.so.9",
];

fn lib(m: &FakeMachine, path: &str, soname: &str, extra: &[&str]) {
    let mut args = vec![format!("-Wl,-soname,{soname}")];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let sym = soname.replace(['.', '-'], "_");
    gcc(
        m,
        path,
        &format!("int {sym}_present(void) {{ return 1; }}"),
        &args,
    );
}

/// The driver's libraries as the real machine's ld.so.cache lists them (the first directory
/// that holds each), real files named with the driver version, as the driver installs them.
fn driver_libraries(m: &FakeMachine) -> Vec<String> {
    let ldconfig = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/real/h200x2-torch2.11-cu130/ldconfig.txt"
    ))
    .expect("captured ldconfig -p of the H200 machine");
    let mut dirs = Vec::new();
    for soname in [
        "libcuda.so.1",
        "libnvidia-ml.so.1",
        "libnvidia-ptxjitcompiler.so.1",
    ] {
        let path = ldconfig
            .lines()
            .find_map(|l| {
                let (name, rest) = l.trim().split_once(' ')?;
                (name == soname).then(|| rest.rsplit("=> ").next().unwrap().to_string())
            })
            .unwrap_or_else(|| panic!("{soname} in the captured ldconfig -p"));
        let (dir, _) = path.rsplit_once('/').unwrap();
        let stem = soname.trim_end_matches(".1");
        lib(m, &format!("{dir}/{stem}.580.159.04"), soname, &[]);
        m.link(&path, &format!("{stem}.580.159.04"));
        if !dirs.contains(&dir.to_string()) {
            dirs.push(dir.to_string());
        }
    }
    dirs
}

fn machine(with_driver: bool) -> Option<FakeMachine> {
    let mut m = FakeMachine::new();
    m.driver("580.159.04", "13.0", &[Gpu::new("NVIDIA H200", "9.0")]);
    m.venv(
        "/opt/venv",
        "2.11.0+cu130",
        Some("13.0"),
        &[
            ("nvidia-cudnn-cu13", "9.19.0.56"),
            ("nvidia-cublas", "13.1.0.3"),
        ],
    );
    let wheel = format!("{SP}/nvidia/cudnn/lib");
    let mut record = String::new();
    lib(
        &m,
        &format!("{wheel}/libcudnn.so.9"),
        "libcudnn.so.9",
        &["-Wl,--enable-new-dtags,-rpath,$ORIGIN"],
    );
    record.push_str("nvidia/cudnn/lib/libcudnn.so.9,,\n");
    let graph_dir = format!("-L{}", m.real(&wheel).display());
    for sub in SUBS {
        let mut args = vec![graph_dir.as_str()];
        if sub != "libcudnn_graph.so.9" {
            args.extend(["-Wl,--no-as-needed", "-l:libcudnn_graph.so.9"]);
        }
        args.push("-Wl,--enable-new-dtags,-rpath,$ORIGIN");
        lib(&m, &format!("{wheel}/{sub}"), sub, &args);
        record.push_str(&format!("nvidia/cudnn/lib/{sub},,\n"));
    }
    m.file(
        &format!("{SP}/nvidia_cudnn_cu13-9.19.0.56.dist-info/RECORD"),
        &record,
    );
    // The system's cuDNN 9.14, as its packages install it: version-named files, soname links.
    let sys_dir = format!("-L{}", m.real(SYSTEM).display());
    for (i, name) in std::iter::once("libcudnn.so.9").chain(SUBS).enumerate() {
        let file = format!("{name}.14.0");
        let extra: Vec<&str> = if i > 1 {
            vec![
                sys_dir.as_str(),
                "-Wl,--no-as-needed",
                "-l:libcudnn_graph.so.9",
            ]
        } else {
            vec![]
        };
        lib(&m, &format!("{SYSTEM}/{file}"), name, &extra);
        m.link(&format!("{SYSTEM}/{name}"), &file);
    }
    lib(
        &m,
        &format!("{SP}/nvidia/cu13/lib/libcublasLt.so.13"),
        "libcublasLt.so.13",
        &[],
    );
    // torch's own loader, as the release installs it: `_load_global_deps` maps the wheel's
    // libcudart through libtorch_global_deps.so, then preloads the nvidia libraries by full
    // path (libcudnn.so.9 among them), so the front end's loader chain ends at the interpreter
    // and carries none of torch's DT_RPATH (the H200 machine's maps agree).
    lib(
        &m,
        &format!("{SP}/nvidia/cu13/lib/libcudart.so.13"),
        "libcudart.so.13",
        &[],
    );
    lib(
        &m,
        &format!("{SP}/torch/lib/libtorch_global_deps.so"),
        "libtorch_global_deps.so",
        &[
            &format!("-L{}", m.real(&format!("{SP}/nvidia/cu13/lib")).display()),
            "-Wl,--no-as-needed",
            "-l:libcudart.so.13",
            "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../../nvidia/cu13/lib",
        ],
    );
    m.file(
        &format!("{SP}/torch/__init__.py"),
        include_str!("../../cudoctor-collect/tests/fixtures/torch_init/2.15.0.py"),
    );
    lib(
        &m,
        &format!("{SP}/torch/lib/libc10_cuda.so"),
        "libc10_cuda.so",
        &[],
    );
    let dir = |p: &str| format!("-L{}", m.real(p).display());
    lib(
        &m,
        &format!("{SP}/torch/_C.cpython-312-x86_64-linux-gnu.so"),
        "_C.so",
        &[
            &dir(&format!("{SP}/torch/lib")),
            &dir(&format!("{SP}/nvidia/cu13/lib")),
            &dir(&wheel),
            "-Wl,--no-as-needed",
            "-lc10_cuda",
            "-l:libcublasLt.so.13",
            "-l:libcudnn.so.9",
            "-Wl,--disable-new-dtags,-rpath,$ORIGIN/lib:$ORIGIN/../nvidia/cu13/lib:$ORIGIN/../nvidia/cudnn/lib",
        ],
    );
    system_libc(&m, SYSTEM);
    let mut conf = vec![SYSTEM.to_string()];
    if with_driver {
        conf.extend(driver_libraries(&m));
    }
    let dirs: Vec<&str> = conf.iter().map(String::as_str).collect();
    if !ldconfig(&m, &dirs) {
        cudoctor_testkit::skip_missing_tool(
            "runtime_loads",
            "no ldconfig that writes a cache with -r here",
        );
        return None;
    }
    Some(m)
}

fn libs_json(m: &FakeMachine) -> Value {
    let r = m.run(&["libs", "--format", "json"]);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {} {}", r.stdout, r.stderr))
}

/// (stage, real path, opener) of each object whose file name starts with `prefix`.
fn staged(v: &Value, prefix: &str) -> Vec<(String, String, String)> {
    v["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| {
            o["path"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .starts_with(prefix)
        })
        .map(|o| {
            (
                o["stage"].as_str().unwrap_or("import").to_string(),
                o["real_path"]
                    .as_str()
                    .or(o["path"].as_str())
                    .unwrap()
                    .to_string(),
                o["opened_by"]["by"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn stages_of_a_workload_with_the_driver_installed() {
    let Some(m) = machine(true) else { return };
    let v = libs_json(&m);
    assert_eq!(
        staged(&v, "libcuda.so"),
        vec![(
            "import".to_string(),
            "/usr/local/nvidia/lib64/libcuda.so.580.159.04".to_string(),
            "libcublasLt.so.13".to_string()
        )],
        "{v:#}"
    );
    assert_eq!(
        staged(&v, "libnvidia-ml"),
        vec![(
            "cuda_init".to_string(),
            "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04".to_string(),
            "libc10_cuda.so".to_string()
        )]
    );
    let ptx: Vec<&Value> = v["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["path"].as_str().unwrap().contains("ptxjitcompiler"))
        .collect();
    assert_eq!(ptx.len(), 1, "{v:#}");
    assert_eq!(ptx[0]["stage"], "first_convolution");
    assert_eq!(ptx[0]["opened_by"]["conditional"], true);
    // The wheel's sub-libraries at the first convolution, opened by the library naming them.
    let cudnn = staged(&v, "libcudnn_");
    assert_eq!(cudnn.len(), 4, "{cudnn:#?}");
    for (stage, path, by) in &cudnn {
        assert_eq!(stage, "first_convolution");
        assert!(
            path.starts_with(&format!("{SP}/nvidia/cudnn/lib/")),
            "{path}"
        );
        let want = if path.ends_with("libcudnn_graph.so.9") {
            "libcudnn.so.9"
        } else {
            "libcudnn_graph.so.9"
        };
        assert_eq!(by, want, "{path}");
    }
    let graph = v["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["path"].as_str().unwrap().ends_with("libcudnn_graph.so.9"))
        .unwrap();
    assert_eq!(graph["version"]["version"], "9.19.0.56");
    assert_eq!(graph["version"]["from"]["name"], "nvidia-cudnn-cu13");
    // Clean LD_LIBRARY_PATH: one install, no finding.
    let (c, _) = m.json();
    assert!(findings(&c, "LIB007").is_empty(), "{:#}", c["findings"]);
}

#[test]
fn without_a_driver_no_driver_library_is_predicted() {
    let Some(m) = machine(false) else { return };
    let v = libs_json(&m);
    for name in ["libcuda.so", "libnvidia-"] {
        assert!(staged(&v, name).is_empty(), "{name}: {v:#}");
    }
    assert_eq!(staged(&v, "libcudnn_").len(), 4);
}

#[test]
fn ld_library_path_mixes_the_wheels_front_end_with_the_systems_engines() {
    let Some(mut m) = machine(true) else { return };
    m.var("LD_LIBRARY_PATH", LLP);
    let v = libs_json(&m);
    let front = staged(&v, "libcudnn.so");
    assert_eq!(
        front[0].1,
        format!("{SP}/nvidia/cudnn/lib/libcudnn.so.9"),
        "torch's RPATH wins at import"
    );
    for (stage, path, _) in staged(&v, "libcudnn_") {
        assert_eq!(stage, "first_convolution");
        assert!(
            path.starts_with("/lib/x86_64-linux-gnu/") && path.ends_with(".so.9.14.0"),
            "{path}\n{:#?}",
            staged(&v, "libcudnn")
        );
    }
    let (c, code) = m.json();
    let f = findings(&c, "LIB007");
    assert_eq!(f.len(), 1, "{:#}", c["findings"]);
    assert_eq!(f[0]["severity"], "warning");
    let evidence = f[0]["evidence"].to_string();
    assert!(
        evidence.contains("libcudnn.so.9 — 9.19.0.56 (wheel nvidia-cudnn-cu13"),
        "{evidence}"
    );
    assert!(evidence.contains("/lib/x86_64-linux-gnu/libcudnn_engines_precompiled.so.9.14.0 — 9.14.0 (from the file name), opened by libcudnn_graph.so.9"), "{evidence}");
    let fix = f[0]["fix"].to_string();
    assert!(
        fix.contains("export LD_LIBRARY_PATH=/usr/local/cuda/lib64"),
        "{fix}"
    );
    assert_eq!(code, 0, "a warning alone exits 0 (1 only with --strict)");
    let text = m.run(&["libs"]).stdout;
    insta::assert_snapshot!("libs_llp_text", text);
    let md = m.run(&["libs", "--format", "markdown"]).stdout;
    insta::assert_snapshot!("libs_llp_markdown", md);
}
