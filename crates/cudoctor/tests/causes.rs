//! One cause, one finding, one remedy, end to end: each single breakage gives exactly one root
//! finding with a fix, every other finding it explains carries `caused_by`; and `check`'s fix
//! is `plan`'s remedy, word for word, for the same machine and environment.

mod support;

use support::{gcc, FakeMachine, Gpu};

const SP: &str = "/opt/venv/lib/python3.12/site-packages";

fn findings(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    v["findings"].as_array().unwrap().iter().collect()
}

/// Errors without a cause that carry a fix.
fn roots_with_fix(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    findings(v)
        .into_iter()
        .filter(|f| f["severity"] == "error")
        .filter(|f| f.get("caused_by").is_none())
        .filter(|f| !f["fix"].as_array().unwrap().is_empty())
        .collect()
}

fn codes(fs: &[&serde_json::Value]) -> Vec<String> {
    fs.iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

fn shell_steps(f: &serde_json::Value) -> Vec<String> {
    f["fix"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["shell"].as_str().map(str::to_string))
        .collect()
}

/// A shared library that needs no libc (the fake root has none).
fn nolibc(m: &FakeMachine, machine_path: &str, source: &str, args: &[&str]) {
    let mut all = args.to_vec();
    all.push("-nostdlib");
    gcc(m, machine_path, source, &all);
}

/// torch 2.11.0+cu130 with its libraries, and torchvision 0.25.0 installed with --no-deps from
/// the previous release: its extension was built against torch 2.10 (a c10 symbol this libc10
/// lacks) and for CUDA 12 (libcudart.so.12, which no CUDA 13 env has).
fn torchvision_from_another_release() -> FakeMachine {
    let mut m = FakeMachine::h100();
    m.torch(
        "2.11.0+cu130",
        &[
            ("torchvision", "0.25.0"),
            ("nvidia-cuda-runtime", "13.0.96"),
        ],
    );
    nolibc(
        &m,
        &format!("{SP}/nvidia/cu13/lib/libcudart.so.13"),
        "int cudaGetDeviceCount(int *n) { *n = 1; return 0; }",
        &["-Wl,-soname,libcudart.so.13"],
    );
    nolibc(
        &m,
        "/tmp/build/libcudart.so.12",
        "int cudaMalloc(void **p, unsigned long n) { return 0; }",
        &["-Wl,-soname,libcudart.so.12"],
    );
    nolibc(
        &m,
        &format!("{SP}/torch/lib/libc10.so"),
        "void c10_present(void) {}",
        &["-Wl,-soname,libc10.so"],
    );
    let lib = m.real(&format!("{SP}/torch/lib"));
    let cudart = m.real(&format!("{SP}/nvidia/cu13/lib"));
    let cudart12 = m.real("/tmp/build");
    nolibc(
        &m,
        &format!("{SP}/torch/_C.cpython-312-x86_64-linux-gnu.so"),
        "extern void c10_present(void); extern int cudaGetDeviceCount(int*); void init(void) { int n; c10_present(); cudaGetDeviceCount(&n); }",
        &[
            &format!("-L{}", lib.display()),
            &format!("-L{}", cudart.display()),
            "-Wl,--no-as-needed",
            "-lc10",
            "-l:libcudart.so.13",
            "-Wl,--disable-new-dtags,-rpath,$ORIGIN/lib:$ORIGIN/../nvidia/cu13/lib",
        ],
    );
    nolibc(
        &m,
        &format!("{SP}/torchvision/_C.so"),
        "extern void c10_present(void); extern void _ZN3c104cuda9SetDeviceEi(int); extern int cudaMalloc(void**, unsigned long); void PyInit__C(void) { void *p; c10_present(); _ZN3c104cuda9SetDeviceEi(0); cudaMalloc(&p, 1); }",
        &[
            &format!("-L{}", lib.display()),
            &format!("-L{}", cudart12.display()),
            "-Wl,--no-as-needed",
            "-lc10",
            "-l:libcudart.so.12",
            "-Wl,-rpath,$ORIGIN/../torch/lib",
        ],
    );
    std::fs::remove_dir_all(m.real("/tmp/build")).unwrap();
    m
}

#[test]
fn a_companion_from_another_release_is_one_root_with_one_fix() {
    let m = torchvision_from_another_release();
    let (v, code) = m.json();
    assert_eq!(code, 1);
    let roots = roots_with_fix(&v);
    assert_eq!(
        codes(&roots),
        ["FW002"],
        "{:#}",
        serde_json::Value::Array(roots.iter().map(|f| (*f).clone()).collect())
    );
    let all = codes(&findings(&v));
    assert!(all.iter().any(|c| c == "LIB004"), "{all:?}");
    for f in findings(&v).into_iter().filter(|f| f["code"] != "FW002") {
        if f["severity"] != "info" {
            assert_eq!(f["caused_by"], "FW002", "{f:#}");
            assert_eq!(f["caused_by_id"], "FW002", "{f:#}");
        }
    }
    // The remedy keeps torch and pairs torchvision with it, from torch's own index.
    assert_eq!(
        shell_steps(roots[0]),
        ["/opt/venv/bin/python -m pip install torch==2.11.0+cu130 torchvision==0.26.0+cu130 --index-url https://download.pytorch.org/whl/cu130"]
    );
    assert_eq!(v["summary"]["first_root_cause"], "FW002");
    assert!(v["summary"]["consequences"].as_u64().unwrap() >= 1);
    // The text report shows the consequences under their cause and counts them apart.
    let text = m.run(&["check"]).stdout;
    assert!(text.contains("because of FW002"), "{text}");
    assert!(text.contains("Root cause: FW002"), "{text}");
    // Its code blocks are shell (FakeMachine::run checks every Markdown report).
    let md = m.run(&["check", "--format", "markdown"]).stdout;
    assert!(md.contains("```sh"), "{md}");
}

#[test]
fn an_old_gpu_what_if_is_one_build_choice_with_paired_companions() {
    let m = FakeMachine::h200();
    let r = m.run(&["check", "--format", "json", "--gpu", "GTX 1080"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    support::check_fixes(&v);
    let roots = roots_with_fix(&v);
    assert_eq!(codes(&roots), ["KRN001"], "{:?}", codes(&findings(&v)));
    let fix = shell_steps(roots[0]).join("\n");
    // torch and both companions move together to the variant that has sm_61.
    assert!(fix.contains("torch==2.11.0+cu126"), "{fix}");
    assert!(fix.contains("torchvision==0.26.0+cu126"), "{fix}");
    assert!(fix.contains("torchaudio==2.11.0+cu126"), "{fix}");
}

/// A driver version, its highest CUDA, and GPUs as (name, compute capability).
type Machine = (
    Option<&'static str>,
    Option<&'static str>,
    &'static [(&'static str, &'static str)],
);

/// The machines the chooser must answer the same in `check` and `plan` for.
const MACHINES: &[Machine] = &[
    // Kepler on its last branch and past it; Pascal and Maxwell past their last branch (R590
    // does not drive them); an RTX 5090 before its first (R570).
    (Some("470.256.02"), Some("11.4"), &[("Tesla K80", "3.7")]),
    (Some("535.274.02"), Some("12.2"), &[("Tesla K80", "3.7")]),
    (Some("590.44.01"), Some("13.1"), &[("Tesla M60", "5.2")]),
    (
        Some("590.44.01"),
        Some("13.1"),
        &[("NVIDIA GeForce GTX 1080", "6.1")],
    ),
    (
        Some("470.256.02"),
        Some("11.4"),
        &[("NVIDIA GeForce GTX 1080", "6.1")],
    ),
    (
        Some("535.274.02"),
        Some("12.2"),
        &[("NVIDIA GeForce GTX 1080", "6.1")],
    ),
    (
        Some("580.95.05"),
        Some("13.0"),
        &[("NVIDIA GeForce GTX 1080", "6.1")],
    ),
    (
        Some("535.274.02"),
        Some("12.2"),
        &[("Tesla V100-SXM2-32GB", "7.0")],
    ),
    (
        Some("580.95.05"),
        Some("13.0"),
        &[("Tesla V100-SXM2-32GB", "7.0")],
    ),
    (
        Some("560.35.03"),
        Some("12.6"),
        &[("NVIDIA GeForce RTX 5090", "12.0")],
    ),
    (
        Some("570.172.08"),
        Some("12.8"),
        &[("NVIDIA GeForce RTX 5090", "12.0")],
    ),
    (
        Some("535.274.02"),
        Some("12.2"),
        &[("NVIDIA H100 80GB HBM3", "9.0")],
    ),
    (Some("580.95.05"), Some("13.0"), &[("NVIDIA H200", "9.0")]),
    (None, None, &[]),
];

#[test]
fn check_fixes_the_torch_build_exactly_as_plan_does() {
    const BUILD_CODES: [&str; 4] = ["FW001", "DRV004", "KRN001", "FW002"];
    for (driver, cuda, gpus) in MACHINES {
        for (torch, torch_cuda, vision) in [
            ("2.11.0+cu130", Some("13.0"), "0.26.0+cu130"),
            ("2.11.0+cpu", None, "0.26.0+cpu"),
        ] {
            let mut m = FakeMachine::new();
            if let (Some(d), Some(c)) = (driver, cuda) {
                let gs: Vec<Gpu> = gpus.iter().map(|(n, cc)| Gpu::new(n, cc)).collect();
                m.driver(d, c, &gs);
            }
            m.venv("/opt/venv", torch, torch_cuda, &[("torchvision", vision)]);
            let p = m.run(&["plan", "--format", "json"]);
            let plan: serde_json::Value = serde_json::from_str(&p.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}{}", p.stdout, p.stderr));
            // The driver verdict: plan demands a driver change exactly when check's DRV006
            // says the driver does not drive the GPUs, naming the same branch.
            let driver_change = plan["driver_upgrade"]["required"] == true;
            if driver_change && plan.get("remedy").is_some() {
                // The driver and the torch build are two changes, each its own root.
                m.breakages(2);
            }
            let (v, _) = m.json();
            let drv006: Vec<&serde_json::Value> = findings(&v)
                .into_iter()
                .filter(|f| f["code"] == "DRV006")
                .collect();
            assert_eq!(
                drv006.len(),
                usize::from(driver_change),
                "{driver:?} {gpus:?} {torch}: check and plan disagree on the driver: {:#}\n{:#}",
                plan["driver_upgrade"],
                v["findings"]
            );
            if let Some(d) = drv006.first() {
                let branch = plan["driver_upgrade"]["branch"].as_str().unwrap();
                assert!(
                    d["title"].as_str().unwrap().contains(branch)
                        && d["fix"].to_string().contains(branch),
                    "{d:#} vs plan's {branch}"
                );
            }
            let roots: Vec<&serde_json::Value> = findings(&v)
                .into_iter()
                .filter(|f| BUILD_CODES.contains(&f["code"].as_str().unwrap()))
                .filter(|f| f.get("caused_by").is_none() && f["severity"] != "info")
                .collect();
            let case = format!("{driver:?} {gpus:?} {torch}");
            match plan.get("remedy") {
                Some(remedy) => {
                    assert_eq!(roots.len(), 1, "{case}: {:#}", v["findings"]);
                    let plan_steps: Vec<String> = remedy["steps"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|s| s["shell"].as_str().map(str::to_string))
                        .collect();
                    assert_eq!(shell_steps(roots[0]), plan_steps, "{case}");
                    // Never a companion left behind: torchvision moves with torch.
                    if let Some(cmd) = plan_steps.first() {
                        if remedy["torchvision"].is_string() {
                            let tag = remedy["variant"].as_str().unwrap();
                            assert!(
                                cmd.contains(&format!(
                                    "torchvision=={}+{tag}",
                                    remedy["torchvision"].as_str().unwrap()
                                )),
                                "{case}: {cmd}"
                            );
                        }
                    }
                }
                None => {
                    // A driver that cannot drive the GPUs: plan's answer is that driver change
                    // first, and check's only root is the driver's, with no torch to install.
                    let driver_first = plan["driver_upgrade"]["required"] == true;
                    for r in &roots {
                        assert!(
                            driver_first && r["code"] == "DRV004",
                            "{case}: check fixes what plan keeps: {:#}",
                            v["findings"]
                        );
                        assert!(
                            shell_steps(r).iter().all(|s| !s.contains("torch==")),
                            "{case}: {r:#}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn plan_without_a_gpu_does_not_claim_gpus() {
    let mut m = FakeMachine::new();
    m.torch("2.11.0+cpu", &[]);
    let r = m.run(&["plan"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("reaches every GPU"), "{}", r.stdout);
}

#[test]
fn explain_keeps_an_r470_driver_with_the_build_plan_chooses() {
    let m = FakeMachine::new();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.txt");
    std::fs::write(
        &log,
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n",
    )
    .unwrap();
    let e = m.run(&["explain", log.to_str().unwrap()]);
    let p = m.run(&["plan", "--driver", "470", "--no-detect", "--format", "json"]);
    let plan: serde_json::Value = serde_json::from_str(&p.stdout).unwrap();
    // Minor-version compatibility: a CUDA 11.4 driver runs the cu118 build plan picks.
    assert_eq!(plan["variant"], "cu118", "{plan:#}");
    // explain installs that build, with its companions, from its index, in the pip of the
    // `python` on PATH (no environment named).
    let want = format!(
        "$ python -m pip install torch=={} torchvision=={} torchaudio=={} --index-url https://download.pytorch.org/whl/cu118",
        plan["torch"].as_str().unwrap(),
        plan["torchvision"].as_str().unwrap(),
        plan["torchaudio"].as_str().unwrap(),
    );
    // A long command is continued with ` \` at 120 columns: read it as one line.
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words(&e.stdout.replace(" \\\n", " ")).contains(&words(&want)),
        "{want}\n{}",
        e.stdout
    );
}

/// The fix `check` prints for the findings `explain` names as confirming: roots give their own,
/// consequences their root's.
fn checks_fix_for(check: &serde_json::Value, ids: &[&str]) -> Vec<serde_json::Value> {
    let all = findings(check);
    let mut steps: Vec<serde_json::Value> = Vec::new();
    for id in ids {
        let f = all
            .iter()
            .find(|f| f["id"] == *id)
            .unwrap_or_else(|| panic!("check has no finding {id}: {check:#}"));
        let fix = match f.get("caused_by_id").and_then(|r| r.as_str()) {
            Some(root) => &all.iter().find(|r| r["id"] == root).unwrap()["fix"],
            None => &f["fix"],
        };
        for step in fix.as_array().unwrap() {
            if !steps.contains(step) {
                steps.push(step.clone());
            }
        }
    }
    steps
}

/// explain confirms a message with check's own findings on the same snapshot, and its fix is
/// check's fix, step for step: on this machine, with `--gpu` what-if, and from `--snapshot`.
#[test]
fn explain_fix_is_checks_fix_for_the_same_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let log = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let old_driver = log(
        "driver.log",
        "RuntimeError: The NVIDIA driver on your system is too old (found version 12020).\n",
    );
    let cpu = log(
        "cpu.log",
        "AssertionError: Torch not compiled with CUDA enabled\n",
    );
    let kernel = log(
        "kernel.log",
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n",
    );

    let mut m535 = FakeMachine::with_driver("535.104.05", "12.2", &[Gpu::a100()]);
    m535.torch("2.11.0+cu130", &[]);
    let mut cpu_machine = FakeMachine::with_driver("580.159.04", "13.0", &[Gpu::h200()]);
    cpu_machine.torch("2.11.0+cpu", &[]);
    let h200 = FakeMachine::h200();

    let cases: [(&str, &FakeMachine, &str, &[&str], &str); 3] = [
        ("old driver", &m535, &old_driver, &[], "DRV004"),
        ("CPU build", &cpu_machine, &cpu, &[], "FW001"),
        (
            "what-if GTX 1080",
            &h200,
            &kernel,
            &["--gpu", "GTX 1080"],
            "KRN001",
        ),
    ];
    for (case, m, log, what_if, code) in cases {
        let snap = dir.path().join(format!("{code}.json"));
        let snap = snap.to_str().unwrap();
        let mut args = vec!["check", "--format", "json", "--save", snap];
        args.extend_from_slice(what_if);
        let c = m.run(&args);
        let check: serde_json::Value = serde_json::from_str(&c.stdout)
            .unwrap_or_else(|e| panic!("{case}: {e}\n{}{}", c.stdout, c.stderr));

        let mut live = vec!["explain", "--format", "json"];
        live.extend_from_slice(what_if);
        live.push(log);
        // The saved snapshot is the machine as found: the what-if is given again.
        let mut saved = vec!["explain", "--format", "json", "--snapshot", snap];
        saved.extend_from_slice(what_if);
        saved.push(log);
        for args in [live.as_slice(), saved.as_slice()] {
            let r = m.run(args);
            let e: serde_json::Value = serde_json::from_str(&r.stdout)
                .unwrap_or_else(|err| panic!("{case}: {err}\n{}{}", r.stdout, r.stderr));
            let machine = &e["machine"];
            assert_eq!(machine["verdict"], "consistent", "{case} {args:?}: {e:#}");
            let ids: Vec<&str> = machine["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["id"].as_str().unwrap())
                .collect();
            assert!(
                machine["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["code"] == code),
                "{case}: {e:#}"
            );
            let want = checks_fix_for(&check, &ids);
            assert!(!want.is_empty(), "{case}: check prints no fix");
            assert_eq!(
                machine["fixes"].as_array().unwrap(),
                &want,
                "{case} {args:?}: explain's fix differs from check's"
            );
            // The explanation's fix list starts with the same typed steps, in order.
            let fix = e["fix"].as_array().unwrap();
            assert!(fix.len() >= want.len(), "{case}");
            assert_eq!(&fix[..want.len()], want.as_slice(), "{case}");
        }
    }
}

/// `explain --python` inspects the environment named, as `check --python` does.
#[test]
fn explain_takes_checks_python_option() {
    let mut m = FakeMachine::with_driver("580.159.04", "13.0", &[Gpu::h200()]);
    m.torch("2.11.0+cpu", &[]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cpu.log");
    std::fs::write(
        &log,
        "AssertionError: Torch not compiled with CUDA enabled\n",
    )
    .unwrap();
    let log = log.to_str().unwrap();
    let r = m.run(&["explain", "--format", "json", "--python", "/opt/venv", log]);
    let e: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|err| panic!("{err}\n{}{}", r.stdout, r.stderr));
    assert_eq!(e["machine"]["verdict"], "consistent", "{e:#}");
    let r = m.run(&["explain", "--python", "/nowhere/python", log]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let r = m.run(&["explain", "--gpu", "Voodoo 3", log]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
}

/// The same build from `check`, `plan` and `explain` on the platforms the chooser knows: the
/// machine's snapshot with its host changed to Linux aarch64 or Windows is judged by
/// `check --snapshot` and confirmed by `explain --snapshot` (both take the platform from the
/// snapshot's host, as they do on a real machine). `plan` gives the same remedy on the machine's
/// own platform; `plan --platform` naming another is a what-if for another machine, with no
/// verdict or remedy for this machine's environment (its Linux venv under a Windows plan).
#[test]
fn check_plan_and_explain_choose_the_same_build_on_every_platform() {
    const BUILD_CODES: [&str; 4] = ["FW001", "DRV004", "KRN001", "FW002"];
    let dir = tempfile::tempdir().unwrap();
    let cpu_log = dir.path().join("cpu.log");
    std::fs::write(
        &cpu_log,
        "AssertionError: Torch not compiled with CUDA enabled\n",
    )
    .unwrap();
    let driver_log = dir.path().join("driver.log");
    std::fs::write(
        &driver_log,
        "RuntimeError: The NVIDIA driver on your system is too old (found version 12020).\n",
    )
    .unwrap();
    let machines: [(&str, &str, &str, &str, &str, &std::path::Path); 3] = [
        (
            "580.95.05",
            "13.0",
            "NVIDIA H200",
            "9.0",
            "2.11.0+cpu",
            &cpu_log,
        ),
        (
            "535.274.02",
            "12.2",
            "NVIDIA H100 80GB HBM3",
            "9.0",
            "2.11.0+cu130",
            &driver_log,
        ),
        (
            "535.274.02",
            "12.2",
            "Tesla V100-SXM2-32GB",
            "7.0",
            "2.11.0+cu130",
            &driver_log,
        ),
    ];
    let mut compared = 0;
    let mut answers: Vec<(String, Vec<String>)> = Vec::new();
    for (driver, cuda, gpu, cc, torch, log) in machines {
        let mut m = FakeMachine::with_driver(driver, cuda, &[Gpu::new(gpu, cc)]);
        let torch_cuda = (!torch.ends_with("+cpu")).then_some("13.0");
        m.venv("/opt/venv", torch, torch_cuda, &[]);
        let saved = dir.path().join("saved.json");
        let r = m.run(&["check", "--save", saved.to_str().unwrap()]);
        assert!(saved.exists(), "{}{}", r.stdout, r.stderr);
        for (platform, os, arch) in [
            ("linux-x86_64", "linux", "x86_64"),
            ("linux-aarch64", "linux", "aarch64"),
            ("windows", "windows", "x86_64"),
        ] {
            let case = format!("{platform} {gpu} driver {driver} {torch}");
            let mut snap: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
            snap["host"]["os"] = os.into();
            snap["host"]["arch"] = arch.into();
            let moved = dir.path().join(format!("{platform}.json"));
            std::fs::write(&moved, snap.to_string()).unwrap();
            let moved = moved.to_str().unwrap();
            let c = m.run(&["check", "--format", "json", "--snapshot", moved]);
            let check: serde_json::Value = serde_json::from_str(&c.stdout)
                .unwrap_or_else(|e| panic!("{case}: {e}\n{}{}", c.stdout, c.stderr));
            let roots: Vec<&serde_json::Value> = findings(&check)
                .into_iter()
                .filter(|f| BUILD_CODES.contains(&f["code"].as_str().unwrap()))
                .filter(|f| f.get("caused_by").is_none() && f["severity"] != "info")
                .collect();
            let p = m.run(&["plan", "--format", "json", "--platform", platform]);
            let plan: serde_json::Value = serde_json::from_str(&p.stdout)
                .unwrap_or_else(|e| panic!("{case}: {e}\n{}{}", p.stdout, p.stderr));
            assert_eq!(plan["platform"], platform, "{case}: {plan:#}");
            // The fake machine is this host's platform (the one the tests run on).
            let native = platform == "linux-x86_64" && std::env::consts::ARCH == "x86_64";
            if !native {
                assert!(plan.get("remedy").is_none(), "{case}: {plan:#}");
                assert!(plan.get("current").is_none(), "{case}: {plan:#}");
            }
            let plan_steps = |plan: &serde_json::Value| -> Option<Vec<String>> {
                Some(
                    plan.get("remedy")?["steps"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|s| s["shell"].as_str().map(str::to_string))
                        .collect(),
                )
            };
            // Off the machine's platform check's one root is the answer (plan gives none).
            let check_steps = || match roots[..] {
                [root] => Some(shell_steps(root)),
                _ => None,
            };
            let steps = if native {
                plan_steps(&plan)
            } else {
                check_steps()
            };
            let Some(plan_steps) = steps else {
                for r in &roots {
                    assert!(
                        shell_steps(r).iter().all(|s| !s.contains("torch==")),
                        "{case}: check installs a build plan does not choose: {r:#}"
                    );
                }
                continue;
            };
            assert_eq!(roots.len(), 1, "{case}: {:#}", check["findings"]);
            assert_eq!(shell_steps(roots[0]), plan_steps, "{case}: check vs plan");
            // explain confirms the message with check's judges on the same snapshot: its
            // fix is check's, so the same build.
            let e = m.run(&[
                "explain",
                "--format",
                "json",
                "--snapshot",
                moved,
                log.to_str().unwrap(),
            ]);
            let e: serde_json::Value = serde_json::from_str(&e.stdout)
                .unwrap_or_else(|err| panic!("{case}: {err}\n{}{}", e.stdout, e.stderr));
            let explain_steps: Vec<String> = e["machine"]["fixes"]
                .as_array()
                .unwrap_or_else(|| panic!("{case}: {e:#}"))
                .iter()
                .filter_map(|s| s["shell"].as_str().map(str::to_string))
                .collect();
            assert_eq!(explain_steps, plan_steps, "{case}: explain vs plan");
            compared += 1;
            answers.push((case, plan_steps));
        }
    }
    assert!(
        compared >= 6,
        "only {compared} cases had a build to compare"
    );
    // The platform reaches the chooser: the same machine gets other answers on other
    // platforms (Windows' own variants, the aarch64 builds the knowledge base records).
    let differs = answers
        .chunks(3)
        .filter(|per_machine| per_machine.iter().any(|(_, s)| *s != per_machine[0].1))
        .count();
    assert!(differs >= 2, "{answers:#?}");
}

/// `plan --platform windows` on a Linux machine is a what-if for a Windows machine: it chooses
/// the Windows build and prints PowerShell, but gives this machine's Linux venv no verdict and
/// no remedy (it once wrote the venv's `/opt/venv/bin/python` and POSIX commands under the
/// Windows plan, and exited 1 for it). On the machine's own platform the remedy stays.
#[test]
fn a_plan_for_another_platform_leaves_this_machines_environment_alone() {
    let mut m = FakeMachine::with_driver("580.95.05", "13.0", &[Gpu::h200()]);
    m.torch("2.11.0+cpu", &[]);
    // A toolkit of the CUDA major a Windows plan picks: under the old reading it became the
    // Windows plan's CUDA_HOME.
    m.toolkit("13.0.88");
    let own = m.run(&["plan", "--format", "json"]);
    assert_eq!(own.code, 1, "{}{}", own.stdout, own.stderr);
    let own: serde_json::Value = serde_json::from_str(&own.stdout).unwrap();
    assert_eq!(own["current"]["ok"], false, "{own:#}");
    assert!(own.get("remedy").is_some(), "{own:#}");

    let p = m.run(&["plan", "--format", "json", "--platform", "windows"]);
    assert_eq!(p.code, 0, "{}{}", p.stdout, p.stderr);
    let plan: serde_json::Value = serde_json::from_str(&p.stdout).unwrap();
    assert_eq!(plan["platform"], "windows", "{plan:#}");
    assert!(plan.get("remedy").is_none(), "{plan:#}");
    assert!(plan.get("current").is_none(), "{plan:#}");
    assert!(plan.get("first").is_none(), "{plan:#}");
    assert!(
        plan["torch"].is_string(),
        "a Windows build is still chosen: {plan:#}"
    );
    // This machine's Linux driver is no Windows driver: only --driver names one; nor is its
    // Linux toolkit a Windows one.
    assert!(!p.stdout.contains("580.95.05"), "{plan:#}");
    assert!(!p.stdout.contains("/usr/local/cuda"), "{plan:#}");
    let given = m.run(&[
        "plan",
        "--format",
        "json",
        "--platform",
        "windows",
        "--driver",
        "581.42",
    ]);
    assert_eq!(given.code, 0, "{}{}", given.stdout, given.stderr);
    assert!(given.stdout.contains("581.42"), "{}", given.stdout);
    assert!(!given.stdout.contains("580.95.05"), "{}", given.stdout);
    let text = m.run(&["plan", "--platform", "windows"]);
    assert_eq!(text.code, 0, "{}{}", text.stdout, text.stderr);
    assert!(!text.stdout.contains("/opt/venv"), "{}", text.stdout);
    assert!(!text.stdout.contains("580.95.05"), "{}", text.stdout);
    assert!(
        text.stdout.contains("PS> pip install torch=="),
        "{}",
        text.stdout
    );
}

/// In a container started without GPU access, check, plan and explain name one root (PLT001)
/// and give its fix, step for step: plan puts it first and judges the environment's CUDA build
/// only once the GPU is reachable (it offered a CPU build as "already right" before).
#[test]
fn a_container_without_gpu_access_is_one_answer_in_check_plan_and_explain() {
    let mut m = FakeMachine::new();
    m.file("/.dockerenv", "");
    m.torch("2.11.0+cu130", &[]);
    let (check, code) = m.json();
    assert_eq!(code, 1);
    let roots: Vec<&serde_json::Value> = findings(&check)
        .into_iter()
        .filter(|f| f["severity"] == "error" && f.get("caused_by").is_none_or(|c| c.is_null()))
        .collect();
    assert_eq!(roots.len(), 1, "{check:#}");
    assert_eq!(roots[0]["code"], "PLT001");
    let p = m.run(&["plan", "--format", "json"]);
    assert_eq!(p.code, 1, "{}{}", p.stdout, p.stderr);
    let plan: serde_json::Value = serde_json::from_str(&p.stdout).unwrap();
    assert_eq!(plan["first"]["code"], "PLT001", "{plan:#}");
    assert_eq!(plan["first"]["fix"], roots[0]["fix"], "{plan:#}");
    assert_eq!(plan["current"]["ok"], false, "{plan:#}");
    let text = m.run(&["plan"]).stdout;
    assert!(text.starts_with("First: PLT001"), "{text}");
    assert!(!text.contains("already right"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.txt");
    std::fs::write(
        &log,
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n",
    )
    .unwrap();
    let e = m.run(&["explain", "--format", "json", log.to_str().unwrap()]);
    let explained: serde_json::Value = serde_json::from_str(&e.stdout).unwrap();
    let text = explained.to_string();
    assert!(text.contains("PLT001"), "{explained:#}");
    assert!(text.contains("--gpus all"), "{explained:#}");
}
