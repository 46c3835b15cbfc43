//! Hostile machines and inputs, end to end: tools that hang or leave children behind, roots whose
//! programs must never run, values that must be quoted, redacted or escaped.

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The binary on the live machine (no `--root`), with `dir` first on PATH.
fn live(dir: &Path, args: &[&str]) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(args)
        .env_clear()
        .env("COLUMNS", cudoctor_testkit::TEST_COLUMNS)
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .env("NO_COLOR", "1")
        .output()
        .expect("run cudoctor");
    (out, started.elapsed())
}

fn script(path: &Path, body: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn an_nvidia_smi_that_leaves_a_child_holding_stdout_does_not_stretch_check() {
    // The reproducer: `sleep 1000 &` keeps the pipe open long after nvidia-smi has answered.
    let dir = tempfile::tempdir().unwrap();
    script(&dir.path().join("nvidia-smi"), "sleep 1000 &\necho x");
    let (out, took) = live(dir.path(), &["check", "--timeout", "3", "--format", "json"]);
    assert!(took < Duration::from_secs(15), "check took {took:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(v["snapshot"]["driver"]["attempts"].is_array());
}

#[test]
fn an_nvidia_smi_that_ignores_sigterm_and_forks_is_killed_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    script(
        &dir.path().join("bin/nvidia-smi"),
        &format!(
            "trap '' TERM\nsleep 1000 &\necho $! >> '{}'\nwhile :; do sleep 1; done",
            pids.display()
        ),
    );
    let (out, took) = live(
        &dir.path().join("bin"),
        &["check", "--timeout", "1", "--format", "json"],
    );
    assert!(took < Duration::from_secs(15), "check took {took:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let attempts = v["snapshot"]["driver"]["attempts"].as_array().unwrap();
    assert!(
        attempts.iter().any(|a| a["outcome"] == "timed_out"),
        "{attempts:#?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    for pid in fs::read_to_string(&pids).unwrap().lines() {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        assert!(
            stat.is_empty() || state.starts_with('Z'),
            "nvidia-smi's child {pid} outlived the timeout: {stat}"
        );
    }
}

#[test]
fn the_timeout_message_states_the_range_it_accepts() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["0", "-1", "3600.5", "nan"] {
        let (out, _) = live(dir.path(), &["check", &format!("--timeout={bad}")]);
        assert_eq!(out.status.code(), Some(2), "--timeout {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("more than 0 and at most 3600 seconds"),
            "--timeout {bad}: {err}"
        );
    }
    let (out, _) = live(
        dir.path(),
        &["check", "--timeout", "3600", "--format", "json"],
    );
    assert_ne!(out.status.code(), Some(2), "3600 is in the stated range");
}

/// A program that leaves `marker` behind if anything ever runs it.
fn trap(m: &support::FakeMachine, machine_path: &str, marker: &Path) {
    m.script(
        machine_path,
        &format!(
            "touch '{}'\necho 'Cuda compilation tools, release 13.0, V13.0.88'",
            marker.display()
        ),
    );
}

#[test]
fn nothing_of_an_inspected_root_is_ever_run() {
    let mut m = support::FakeMachine::h200();
    let marker = m.root().join("RAN");
    for program in [
        "/usr/bin/nvidia-smi",
        "/usr/local/cuda-13.0/bin/nvcc",
        "/usr/bin/python3.12",
        "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/bin/nvcc",
        "/usr/bin/dmesg",
        "/usr/bin/ldconfig",
    ] {
        trap(&m, program, &marker);
    }
    m.var(
        "CUDA_HOME",
        "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13",
    );
    for args in [
        &["check", "--format", "json"][..],
        &["check", "--deep", "--format", "json"],
        &["kernels"],
        &["libs"],
        &["plan"],
    ] {
        let r = m.run(args);
        assert!(
            !marker.exists(),
            "{args:?} ran a program of the root: {}",
            r.stderr
        );
    }
    let r = m.run(&["check", "--deep", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let runs = v["snapshot"]["deep"]["runs"].as_array().unwrap();
    assert!(!runs.is_empty(), "{:#}", v["snapshot"]["deep"]);
    for run in runs {
        assert_eq!(run["status"], "not_run_under_root", "{run:#}");
    }
    // The unknowns say why, as a typed status.
    let attempts = v["snapshot"]["driver"]["attempts"].as_array().unwrap();
    assert!(attempts
        .iter()
        .any(|a| a["outcome"] == "not_run_under_root"));
    assert!(!marker.exists());
}

#[test]
fn a_wheel_nvcc_version_comes_from_its_metadata_not_from_running_it() {
    // On the live machine: the venv's nvcc is never run when its wheel's files tell the version.
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("RAN");
    let sp = dir.path().join("venv/lib/python3.12/site-packages");
    script(
        &sp.join("nvidia/cu13/bin/nvcc"),
        &format!(
            "touch '{}'\necho 'Cuda compilation tools, release 13.0, V13.0.1'",
            marker.display()
        ),
    );
    let info = sp.join("nvidia_cuda_nvcc-13.5.37.dist-info");
    fs::create_dir_all(&info).unwrap();
    fs::write(
        info.join("METADATA"),
        "Metadata-Version: 2.1\nName: nvidia-cuda-nvcc\nVersion: 13.5.37\n",
    )
    .unwrap();
    fs::write(
        info.join("RECORD"),
        "nvidia/cu13/bin/nvcc,sha256=abc,123\nnvidia_cuda_nvcc-13.5.37.dist-info/METADATA,,\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("venv/pyvenv.cfg"),
        "home = /usr/bin\nversion = 3.12.3\n",
    )
    .unwrap();
    let venv = dir.path().join("venv");
    let (out, _) = live(
        &sp.join("nvidia/cu13/bin"),
        &[
            "check",
            "--python",
            venv.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let toolkit = v["snapshot"]["toolkit"]["toolkits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["root"].as_str().unwrap().ends_with("nvidia/cu13"))
        .unwrap_or_else(|| panic!("{:#}", v["snapshot"]["toolkit"]))
        .clone();
    assert_eq!(toolkit["version"], "13.5.37");
    assert_eq!(toolkit["version_source"], "nvidia-cuda-nvcc wheel metadata");
    assert_eq!(
        v["snapshot"]["toolkit"]["nvcc_on_path"]["version"],
        "13.5.37"
    );
    assert!(!marker.exists(), "the wheel's nvcc was run");
}

/// A directory name that runs code if a printed command leaves it unquoted: command
/// substitution both ways, quotes of both kinds, a space, a `;` and a newline. The payloads use
/// only the shell's own redirection, so they would leave `pwned*` files even with an empty PATH.
const HOSTILE: &str = "a b'c\"$(: >pwned1)`: >pwned2`;: >pwned3\nd";

/// Every shell step of the findings of `check` and the commands of `plan`, as JSON reports them.
fn shell_steps(m: &support::FakeMachine) -> Vec<String> {
    let mut steps = Vec::new();
    let (v, _) = m.json();
    for f in v["findings"].as_array().unwrap() {
        for step in f["fix"].as_array().into_iter().flatten() {
            if let Some(s) = step["shell"].as_str() {
                steps.push(s.to_string());
            }
        }
    }
    let r = m.run(&["plan", "--format", "json"]);
    let plan: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
    collect_commands(&plan, &mut steps);
    steps
}

/// Strings under keys that hold commands (`pip`, `uv`, `conda`, `command(s)`), anywhere.
fn collect_commands(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, val) in map {
                let is_cmd = [
                    "pip", "uv", "conda", "pip_pypi", "command", "commands", "shell",
                ]
                .contains(&k.as_str());
                match val {
                    serde_json::Value::String(s) if is_cmd => out.push(s.clone()),
                    _ => collect_commands(val, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_commands(x, out)),
        _ => {}
    }
}

fn hostile_machines() -> Vec<support::FakeMachine> {
    let prefix = format!("/opt/{HOSTILE}/venv");
    let mut machines = Vec::new();
    // CPU-only torch on a GPU machine, a torchvision of another release, CUDA_HOME at nothing.
    let mut m = support::FakeMachine::h100();
    m.venv(
        &prefix,
        "2.11.0+cpu",
        None,
        &[("torchvision", "0.20.0+cu124")],
    );
    m.var("CUDA_HOME", &format!("/opt/{HOSTILE}/cuda"));
    // The torch build and the toolkit variable: two independent breakages.
    m.breakages(2);
    machines.push(m);
    // A CUDA torch with a driver too old for it, two toolkits side by side, one at a hostile path.
    let mut m = support::FakeMachine::with_driver("535.104.05", "12.2", &[support::Gpu::h100()]);
    m.venv(
        &prefix,
        "2.11.0+cu130",
        Some("13.0"),
        &[("torchaudio", "2.5.0+cu124")],
    );
    m.toolkit("12.8.93")
        .toolkit("13.0.88")
        .select_toolkit("12.8");
    m.link(&format!("/opt/{HOSTILE}/cuda-13.0"), "/usr/local/cuda-13.0");
    m.var("CUDA_HOME", &format!("/opt/{HOSTILE}/cuda-13.0"));
    // The driver under torch's CUDA, CUDA_HOME disagreeing with nvcc on PATH, and the toolkit
    // it selects newer than the driver: three breakages.
    m.breakages(3);
    machines.push(m);
    machines
}

#[test]
fn printed_commands_quote_every_path_so_pasting_them_runs_nothing_hidden() {
    let mut checked = 0;
    let mut with_path = 0;
    for m in hostile_machines() {
        for step in shell_steps(&m) {
            checked += 1;
            with_path += usize::from(step.contains("pwned1"));
            // It parses as one POSIX shell command line...
            let syntax = Command::new("/bin/sh")
                .arg("-n")
                .arg("-c")
                .arg(&step)
                .output()
                .unwrap();
            assert!(
                syntax.status.success(),
                "not valid sh: {step}\n{}",
                String::from_utf8_lossy(&syntax.stderr)
            );
            // ...and running it, with no program reachable, expands nothing from the path.
            let cwd = tempfile::tempdir().unwrap();
            let _ = Command::new("/bin/sh")
                .arg("-c")
                .arg(&step)
                .current_dir(cwd.path())
                .env_clear()
                .env("PATH", cwd.path().join("empty"))
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let left: Vec<_> = fs::read_dir(cwd.path())
                .unwrap()
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            assert!(
                left.is_empty(),
                "pasting ran code from a path ({left:?}): {step}"
            );
        }
    }
    assert!(checked > 5, "only {checked} commands printed");
    assert!(
        with_path >= 3,
        "only {with_path} commands name the hostile path"
    );
}

#[test]
fn secrets_in_the_environment_never_reach_saved_snapshots_or_json() {
    let mut m = support::FakeMachine::new();
    let secrets = [
        ("NVIDIA_API_KEY", "nvapi-0123456789abcdefSECRET"),
        ("NV_FOO_TOKEN", "nvfootokenSECRET"),
        ("TORCH_HUB_TOKEN", "torchhubSECRET"),
        ("HF_TOKEN", "hf_huggingfaceSECRET"),
        (
            "HTTPS_PROXY",
            "http://alice:proxypassSECRET@proxy.corp:3128",
        ),
    ];
    for (k, v) in secrets {
        m.var(k, v);
    }
    let save = m.root().join("saved.json");
    let r = m.run(&[
        "check",
        "--format",
        "json",
        "--save",
        save.to_str().unwrap(),
    ]);
    let saved = fs::read_to_string(&save).unwrap();
    for out in [&r.stdout, &saved] {
        assert!(!out.contains("SECRET"), "a secret was written: {out}");
        let v: serde_json::Value = serde_json::from_str(out).unwrap();
        let env = if v["snapshot"].is_object() {
            &v["snapshot"]["env"]
        } else {
            &v["env"]
        };
        // Redacted, not dropped: the report still says they were set.
        assert_eq!(env["NVIDIA_API_KEY"], "<redacted>");
        assert_eq!(env["NV_FOO_TOKEN"], "<redacted>");
        assert_eq!(env["TORCH_HUB_TOKEN"], "<redacted>");
        assert_eq!(env["HTTPS_PROXY"], "http://<redacted>@proxy.corp:3128");
    }
    for format in ["text", "markdown", "html"] {
        let r = m.run(&["check", "--format", format]);
        assert!(!r.stdout.contains("SECRET"), "{format} shows a secret");
    }
}

#[test]
fn fifos_devices_directories_and_huge_files_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let sparse = dir.path().join("sparse.json");
    fs::File::create(&sparse)
        .unwrap()
        .set_len(20 << 30)
        .unwrap();
    let fifo = fifo.to_str().unwrap();
    let sparse = sparse.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["check", "--snapshot", "/dev/zero"],
        vec!["check", "--snapshot", fifo],
        vec!["check", "--snapshot", sparse],
        vec!["check", "--snapshot", d],
        vec!["diff", "/dev/zero", sparse],
        vec!["diff", fifo, fifo],
        vec!["fleet", "/dev/zero"],
        vec!["fleet", sparse],
        vec!["kernels", fifo],
        vec!["kernels", "/dev/zero"],
        vec!["libs", fifo],
        vec!["libs", "/dev/zero"],
        vec!["libs", d],
    ];
    for args in cases {
        let (out, took) = live(dir.path(), &args);
        assert!(took < Duration::from_secs(20), "{args:?} took {took:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code() == Some(2) || (args[0] == "fleet" && out.status.code() != Some(0)),
            "{args:?}: exit {:?}: {err}",
            out.status.code()
        );
        assert!(
            err.contains("cudoctor: error") || args[0] == "fleet",
            "{args:?}: {err}"
        );
    }
}

#[test]
fn kernels_fails_when_its_only_input_cannot_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libbroken.so");
    let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
    elf.resize(100, 0xff);
    fs::write(&lib, elf).unwrap();
    let (out, _) = live(
        dir.path(),
        &["kernels", "--gpu", "sm_90", lib.to_str().unwrap()],
    );
    assert_ne!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Names that act on a terminal or on Markdown/HTML if printed as they are: a screen clear, a
/// window title (OSC, ended by BEL), a hyperlink, a C1 CSI, a bidi override, a carriage return
/// and newline that would fake a line, table pipes and raw HTML.
const ESCAPES: &str = "\u{1b}[2J\u{1b}]0;pwned\u{7}\u{1b}]8;;http://x\u{1b}\\\u{9b}31m\u{202e}\r|<img src=x onerror=alert(1)>|\n# fake heading";

/// Characters no rendered report may hold raw: everything `ESCAPES` uses to act.
fn acting(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c)
        })
        .collect()
}

/// Markdown and HTML: the values show as text, never as markup, and tables keep their shape
/// (`| label | value |` rows: three unescaped pipes, whatever the value holds).
fn assert_inert_markup(format: &str, out: &str) {
    assert_inert_outside_code(format, out);
    if format == "markdown" {
        for row in out.lines().filter(|l| l.starts_with('|')) {
            let bare = row.replace("\\|", "");
            assert_eq!(bare.matches('|').count(), 3, "a value left its cell: {row}");
        }
    }
}

/// No raw controls anywhere; outside code (spans and blocks, where Markdown shows text as it
/// is) no markup is left; no value leaves its line.
fn assert_inert_outside_code(format: &str, out: &str) {
    assert!(
        acting(out).is_empty(),
        "{format}: raw controls {:?}\n{out}",
        acting(out)
    );
    let mut in_block = false;
    let prose: String = out
        .lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                in_block = !in_block;
                return false;
            }
            !in_block
        })
        .flat_map(|l| [outside_code_spans(l), "\n".to_string()])
        .collect();
    let markup = if format == "markdown" { &prose } else { out };
    assert!(!markup.contains("<img"), "{format} passes raw HTML:\n{out}");
    assert!(
        !out.contains("\n# fake heading"),
        "{format}: a value left its line:\n{out}"
    );
}

#[test]
fn names_from_a_hostile_root_reach_no_terminal_and_no_markup_raw() {
    let mut m = support::FakeMachine::new();
    m.driver(
        "580.159.04",
        "13.0",
        &[support::Gpu::new(&format!("NVIDIA H100{ESCAPES}"), "9.0")],
    );
    let prefix = format!("/opt/{}/venv", ESCAPES.replace('/', "_"));
    m.venv(
        &prefix,
        "2.11.0+cpu",
        None,
        &[(&format!("nvidia-evil{}", ESCAPES.replace('/', "_")), "1.0")],
    );
    m.var("CUDA_HOME", &format!("/opt/cuda{ESCAPES}"));
    // A CPU torch and a CUDA_HOME at nothing: two breakages.
    m.breakages(2);
    for format in ["text", "markdown", "html"] {
        let r = m.run(&["check", "--format", format]);
        assert_eq!(r.code, 1, "{format}: {}", r.stderr);
        assert!(r.stdout.contains("H100"), "{format}: the GPU is not shown");
        assert!(
            r.stdout.contains("pwned"),
            "{format}: the names were dropped"
        );
        assert!(
            acting(&r.stdout).is_empty(),
            "{format}: {:?}",
            acting(&r.stdout)
        );
        if format == "text" {
            assert!(r.stdout.contains("\\e[2J"), "escapes are shown as text");
            assert!(
                !r.stdout.contains("\n# fake heading"),
                "a value left its line"
            );
        } else {
            assert_inert_markup(format, &r.stdout);
        }
    }
    // The printed fix names the venv with its real bytes, on one line.
    let (v, _) = m.json();
    let fix = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["fix"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s["shell"].as_str().map(str::to_string))
        .find(|s| s.contains("pip install"))
        .expect("a pip fix");
    assert!(acting(&fix).is_empty() && !fix.contains('\n'), "{fix:?}");
    let echoed = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -- {}; printf %s \"$1\"",
            fix.split(" -m ").next().unwrap()
        ))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&echoed.stdout),
        format!("{prefix}/bin/python"),
        "{fix}"
    );
}

#[test]
fn a_real_venv_at_a_hostile_path_is_reported_inert() {
    // A real venv (this machine's python3) whose directory and one installed package carry
    // escape sequences; inspected live through --python.
    let dir = tempfile::tempdir().unwrap();
    let venv = dir
        .path()
        .join(format!("v{}", ESCAPES.replace(['/', ':'], "_")));
    let sp = cudoctor_testkit::real_venv(&venv).join("site-packages");
    let evil = sp.join(format!("evil{}-1.0.dist-info", ESCAPES.replace('/', "_")));
    fs::create_dir_all(&evil).unwrap();
    fs::write(
        evil.join("METADATA"),
        format!("Name: evil{}\nVersion: 1.0\n", ESCAPES.replace('\n', " ")),
    )
    .unwrap();
    for format in ["text", "markdown", "html"] {
        let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
            .args(["check", "--format", format, "--python"])
            .arg(&venv)
            .env_clear()
            .env("COLUMNS", cudoctor_testkit::TEST_COLUMNS)
            .env("PATH", "/usr/bin:/bin")
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("pwned"),
            "{format}: the venv is not shown:\n{stdout}"
        );
        assert!(
            acting(&stdout).is_empty(),
            "{format}: {:?}",
            acting(&stdout)
        );
        if format != "text" {
            assert_inert_markup(format, &stdout);
        }
    }
}

#[test]
fn error_messages_naming_hostile_paths_are_inert() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir
        .path()
        .join(format!("lib{}.so", ESCAPES.replace('/', "_")));
    fs::write(&bad, b"not an ELF").unwrap();
    let missing = dir
        .path()
        .join(format!("gone{}", ESCAPES.replace('/', "_")));
    for args in [
        vec!["kernels".into(), bad.clone().into_os_string()],
        vec!["libs".into(), bad.into_os_string()],
        vec![
            "check".into(),
            "--root".into(),
            missing.clone().into_os_string(),
        ],
        vec![
            "diff".into(),
            missing.clone().into_os_string(),
            missing.into_os_string(),
        ],
    ] {
        let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
            .args(&args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        for stream in [&out.stdout, &out.stderr] {
            let s = String::from_utf8_lossy(stream);
            assert!(acting(&s).is_empty(), "{args:?}: {:?} in {s}", acting(&s));
        }
    }
}

// Names that are not UTF-8: kept as their bytes end to end (cudoctor_types::os_text), shown as
// `\xHH`, quoted as `$'\xHH'` in printed commands.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;

const NU_SP: &str = "/opt/venv/lib/python3.12/site-packages";
/// An extension module named with the bytes 0xff 0xfe (no UTF-8 sequence holds them).
const NU_EXT: &[u8] = b"flash_attn_2_cuda\xff\xfe.cpython-312-x86_64-linux-gnu.so";
/// The same name as lossy decoding writes it: a different file, which a `?`/U+FFFD
/// conversion would have read in place of the first.
const NU_EXT_LOSSY: &str = "flash_attn_2_cuda\u{fffd}\u{fffd}.cpython-312-x86_64-linux-gnu.so";
/// A venv prefix with a byte that is not UTF-8 and a space.
const NU_PREFIX: &[u8] = b"/opt/v\xff env";

fn os(b: &[u8]) -> &OsStr {
    OsStr::from_bytes(b)
}

/// Builds a CUDA extension carrying `sass` at `real` (a name of any bytes).
fn extension_at(m: &support::FakeMachine, real: &Path, sass: u32) {
    let built = "/tmp/build/ext.so";
    support::cuda_library(
        m,
        built,
        "int launch(void) { return 0; }",
        &[],
        &support::fatbin_section(&[&[support::FatEntry::sass(sass)]]),
    );
    fs::create_dir_all(real.parent().unwrap()).unwrap();
    fs::rename(m.real(built), real).unwrap();
}

/// Every word of every shell fix in `v`, as bash reads it back (the bytes a paste passes).
fn fix_words(v: &serde_json::Value) -> Vec<Vec<u8>> {
    let mut words = Vec::new();
    for step in v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["fix"].as_array().cloned().unwrap_or_default())
    {
        let Some(cmd) = step["shell"].as_str() else {
            continue;
        };
        assert!(!cmd.contains('\n') && acting(cmd).is_empty(), "{cmd:?}");
        // `set --` takes the words without running them; command separators become words too
        // (a trailing `# comment` ends at the newline).
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "set -f; set -- {}\nprintf '%s\\0' \"$@\"",
                cmd.replace("&&", "'&&'").replace(';', "';'")
            ))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        words.extend(out.stdout.split(|&b| b == 0).map(<[u8]>::to_vec));
    }
    words
}

#[test]
fn names_that_are_not_utf8_in_a_fake_root_are_found_escaped_and_quoted() {
    let mut m = support::FakeMachine::h100();
    m.torch("2.11.0+cu130", &[("flash-attn", "2.8.3")]);
    // sm_80 only: cannot run on the H100. Its lossy twin carries sm_90 and runs.
    extension_at(&m, &m.real(NU_SP).join(os(NU_EXT)), 80);
    extension_at(&m, &m.real(NU_SP).join(NU_EXT_LOSSY), 90);
    // The venv's directory itself is renamed to a name that is not UTF-8.
    fs::rename(
        m.real("/opt/venv"),
        m.root().join("opt").join(os(&NU_PREFIX[5..])),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let mut cmd = m.command(args);
        cmd.env("VIRTUAL_ENV", os(NU_PREFIX));
        cmd.output().unwrap()
    };
    let out = run(&["check", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let codes = cudoctor_testkit::finding_codes(&v);
    assert!(
        !codes.contains(&"KRN005"),
        "a false unreadable file: {:#}",
        v["findings"]
    );
    let krn: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "KRN002")
        .collect();
    assert_eq!(krn.len(), 1, "{:#}", v["findings"]);
    // Both files were scanned, each under its own name, with its own images.
    let libs = v["snapshot"]["kernel_images"]["libraries"]
        .as_array()
        .unwrap();
    let by_bytes = |name: &[u8]| {
        libs.iter()
            .find(|l| {
                let p = cudoctor_types::os_text::to_bytes(l["path"].as_str().unwrap());
                p.ends_with(name)
            })
            .unwrap_or_else(|| panic!("{} not scanned: {libs:#?}", String::from_utf8_lossy(name)))
    };
    let ext = by_bytes(NU_EXT);
    assert_eq!(ext["sass"], serde_json::json!(["sm_80"]), "{ext:#}");
    let path = cudoctor_types::os_text::to_bytes(ext["path"].as_str().unwrap()).into_owned();
    assert_eq!(
        path,
        [NU_PREFIX, b"/lib/python3.12/site-packages/", NU_EXT].concat()
    );
    assert_eq!(
        by_bytes(NU_EXT_LOSSY.as_bytes())["sass"],
        serde_json::json!(["sm_90"])
    );
    // The printed commands name the venv's real bytes when pasted.
    let words = fix_words(&v);
    assert!(
        words.iter().any(|w| w.starts_with(NU_PREFIX)),
        "no fix names the venv: {:#}",
        v["findings"]
    );
    for w in &words {
        if w.starts_with(b"/opt/v") {
            assert!(w.starts_with(NU_PREFIX), "{}", String::from_utf8_lossy(w));
        }
    }
    // Text: the name shows its bytes as \xHH, nothing raw or replaced.
    for format in ["text", "markdown", "html"] {
        let out = run(&["check", "--format", format]);
        let text = String::from_utf8(out.stdout).expect("reports are UTF-8");
        assert!(
            text.contains("flash_attn_2_cuda\\xff\\xfe"),
            "{format}:\n{text}"
        );
        assert!(
            !text.contains('\u{fffd}') || text.contains("cuda\u{fffd}\u{fffd}.cpython"),
            "{format}"
        );
        assert!(
            !text
                .chars()
                .any(|c| cudoctor_types::os_text::kept_byte(c).is_some()),
            "{format}: a stand-in reached the report:\n{text}"
        );
    }
    // A saved snapshot keeps the bytes: analysed again, the same finding names the same file.
    let saved = m.root().join("saved.json");
    let out = run(&[
        "check",
        "--format",
        "json",
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let again = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(["check", "--format", "json", "--snapshot"])
        .arg(&saved)
        .output()
        .unwrap();
    let w: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    let evidence = |v: &serde_json::Value| {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["code"] == "KRN002")
            .map(|f| f["evidence"].clone())
    };
    assert_eq!(evidence(&w), evidence(&v));
    // `kernels` on the directory lists both files apart; the one without sm_90 cannot run.
    let sp = format!(
        "{}/lib/python3.12/site-packages",
        cudoctor_types::os_text::from_bytes(NU_PREFIX)
    );
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args(["kernels", "--gpu", "sm_90", "--root"])
        .arg(m.root())
        .arg(cudoctor_types::os_text::to_os(&sp));
    let out = cmd.env("NO_COLOR", "1").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    // The directory both share is named once in the legend (`<dir> = ...`).
    assert!(
        text.contains("<dir> = /opt/v\\xff env/lib/python3.12/site-packages\n"),
        "{text}"
    );
    assert!(text.contains("<dir>/flash_attn_2_cuda\\xff\\xfe"), "{text}");
    assert!(text.contains("flash_attn_2_cuda\u{fffd}\u{fffd}"), "{text}");
}

#[test]
fn names_that_are_not_utf8_in_a_real_directory_are_read_under_their_own_bytes() {
    // libs: a library whose DT_NEEDED and RUNPATH hold bytes that are not UTF-8, built by gcc.
    let dir = tempfile::tempdir().unwrap();
    let deps = dir.path().join(os(b"d\xfe"));
    fs::create_dir_all(&deps).unwrap();
    let src = dir.path().join("dep.c");
    fs::write(&src, "int dep(void) { return 1; }\n").unwrap();
    let dep = deps.join(os(b"libdep\xff.so"));
    let mut soname = b"-Wl,-soname,".to_vec();
    soname.extend_from_slice(b"libdep\xff.so");
    let built = Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&dep)
        .arg(&src)
        .arg(os(&soname))
        .status()
        .expect("gcc");
    assert!(built.success());
    let main_src = dir.path().join("main.c");
    fs::write(
        &main_src,
        "int dep(void);\nint entry(void) { return dep(); }\n",
    )
    .unwrap();
    let main = dir.path().join(os(b"main\xfd.so"));
    let built = Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&main)
        .arg(&main_src)
        .arg(&dep)
        .arg(os(b"-Wl,-rpath,$ORIGIN/d\xfe"))
        .status()
        .expect("gcc");
    assert!(built.success());
    let run = |args: &[&OsStr]| {
        cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let out = run(&[OsStr::new("libs"), main.as_os_str()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("libdep\\xff.so"), "{text}");
    assert!(
        text.contains("runpath"),
        "the dependency was not found by its RUNPATH:\n{text}"
    );
    assert!(text.contains("/d\\xfe/libdep\\xff.so"), "{text}");
    assert!(!text.contains("missing"), "{text}");
    let out = run(&[
        OsStr::new("libs"),
        OsStr::new("--format"),
        OsStr::new("json"),
        main.as_os_str(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // JSON carries the path losslessly: read back, it is the file's bytes.
    let mut strings = Vec::new();
    json_strings(&v, &mut strings);
    assert!(
        strings
            .iter()
            .any(|s| *cudoctor_types::os_text::to_bytes(s) == *dep.as_os_str().as_bytes()),
        "{v:#}"
    );

    // kernels: a file argument that is not UTF-8 is read, not reported missing.
    let m = support::FakeMachine::new();
    let lib = dir.path().join(os(b"libk\xff.so"));
    extension_at(&m, &lib, 80);
    let out = run(&[
        OsStr::new("kernels"),
        OsStr::new("--gpu"),
        OsStr::new("sm_90"),
        lib.as_os_str(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("libk\\xff.so") && text.contains("sm_80"),
        "{text}"
    );

    // check --python on a real venv at a path that is not UTF-8, with that extension inside.
    // (Python's venv cannot write its config under such a path: made, then renamed.)
    let made_at = dir.path().join("venv");
    cudoctor_testkit::real_venv(&made_at);
    let venv = dir.path().join(os(b"venv \xff"));
    fs::rename(&made_at, &venv).unwrap();
    let lib_python = cudoctor_testkit::lib_python(&venv);
    let sp = lib_python.join("site-packages");
    // Tagged for the venv's own interpreter (python3.11 -> cpython-311): another
    // interpreter's extension is never imported, so it is not the env's.
    let tag = lib_python
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_start_matches("python")
        .replace('.', "");
    let mut ext_name = b"ext\xfe_cuda.cpython-".to_vec();
    ext_name.extend_from_slice(format!("{tag}-x86_64-linux-gnu.so").as_bytes());
    extension_at(&m, &sp.join(os(&ext_name)), 80);
    let out = run(&[
        OsStr::new("check"),
        OsStr::new("--gpu"),
        OsStr::new("sm_90"),
        OsStr::new("--python"),
        venv.as_os_str(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("venv \\xff"), "{text}");
    assert!(text.contains("ext\\xfe_cuda"), "{text}");
    assert!(!text.contains("KRN005"), "{text}");
}

fn json_strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| json_strings(x, out)),
        _ => {}
    }
}

/// Text reports of diff, fleet and explain: values holding newlines and escape sequences are
/// shown escaped, on their own line; no value forges a report line.
#[test]
fn values_with_newlines_and_escapes_forge_no_line_in_diff_fleet_or_explain() {
    let dir = tempfile::tempdir().unwrap();
    let seed = include_str!("../../cudoctor-fuzz/corpus/snapshot/stock_cpu_env.json");
    let before: serde_json::Value = serde_json::from_str(seed).unwrap();
    let mut after = before.clone();
    let env = &mut after["python_envs"][0];
    env["packages"][0]["name"] = format!("evil{ESCAPES}").into();
    env["packages"][1]["version"] = format!("1.0{ESCAPES}").into();
    env["prefix"] = format!("/opt/v{ESCAPES}").into();
    after["driver"]["version"] =
        serde_json::json!({"value": format!("580{ESCAPES}"), "source": "x"});
    let a = dir.path().join("gpu01.json");
    let b = dir
        .path()
        .join(format!("gpu02{}.json", ESCAPES.replace('/', "_")));
    fs::write(&a, serde_json::to_string(&before).unwrap()).unwrap();
    fs::write(&b, serde_json::to_string(&after).unwrap()).unwrap();
    let run = |args: &[&OsStr]| {
        let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let o = |s: &str| OsStr::new(s).to_os_string();
    for args in [
        vec![
            o("diff"),
            o("--verbose"),
            a.clone().into(),
            b.clone().into(),
        ],
        vec![o("fleet"), a.clone().into(), b.clone().into()],
    ] {
        let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let (stdout, stderr) = run(&args);
        assert!(
            stdout.contains("pwned"),
            "{args:?}: the values are not shown:\n{stdout}{stderr}"
        );
        assert!(
            acting(&stdout).is_empty(),
            "{args:?}: {:?}\n{stdout}",
            acting(&stdout)
        );
        assert!(
            !stdout.contains("\n# fake heading"),
            "{args:?}: a value left its line:\n{stdout}"
        );
        assert!(
            stdout.contains("\\n# fake heading"),
            "{args:?}: the newline is not shown:\n{stdout}"
        );
    }
    // explain: a log whose lines carry escapes; the quoted lines stay inert.
    let log = dir.path().join("train.log");
    fs::write(
        &log,
        format!(
            "step 1\nRuntimeError: CUDA error: no kernel image is available for execution on the device{ESCAPES}\n"
        ),
    )
    .unwrap();
    let (stdout, stderr) = run(&[
        OsStr::new("explain"),
        OsStr::new("--no-machine"),
        log.as_os_str(),
    ]);
    assert!(stdout.contains("kernel image"), "{stdout}{stderr}");
    assert!(
        acting(&stdout).is_empty(),
        "{:?}\n{stdout}",
        acting(&stdout)
    );
    assert!(!stdout.contains("\n# fake heading"), "{stdout}");
    assert!(
        stdout.contains("\\n# fake heading") || !stdout.contains("fake heading"),
        "{stdout}"
    );
}

/// Runs `cmd` to its end, failing the test (and killing the run) past `limit`: a hang is a
/// failure that names the limit, never a suite that waits forever.
fn bounded(mut cmd: Command, limit: Duration) -> (std::process::Output, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    cmd.stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(&err).unwrap());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("run cudoctor");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} ran past {limit:?}: {}",
                fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = std::process::Output {
        status,
        stdout: fs::read(&out).unwrap(),
        stderr: fs::read(&err).unwrap(),
    };
    (output, started.elapsed())
}

#[test]
fn explain_of_a_named_pipe_reads_its_writer_and_says_when_there_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("log.fifo");
    mkfifo(&fifo);
    let fifo_arg = fifo.to_str().unwrap();
    // No program writes to it: a message and exit 2 after the wait, not a hang.
    let (out, took) = live(dir.path(), &["explain", "--no-machine", fifo_arg]);
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("named pipe that no program opened for writing"),
        "{err}"
    );
    // A program writing into it, as `cudoctor explain <(python train.py 2>&1)` has: read to
    // its end and explained.
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            fs::write(
                fifo,
                "RuntimeError: CUDA error: no kernel image is available for execution on the device\n",
            )
        })
    };
    let (out, _) = live(dir.path(), &["explain", "--no-machine", fifo_arg]);
    writer.join().unwrap().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("kernel image"));
}

fn mkfifo(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let made = Command::new("mkfifo").arg(path).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
}

#[test]
fn a_fifo_as_torch_version_py_in_a_real_venv_does_not_hang_check() {
    // The reproducer: a real venv (this machine's python3) whose torch/version.py is a FIFO
    // nobody writes to; its dist-info and RECORD name the file like pip's do.
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let sp = cudoctor_testkit::real_venv(&venv).join("site-packages");
    mkfifo(&sp.join("torch/version.py"));
    mkfifo(&sp.join("torch/lib/libtorch_cuda.so"));
    fs::write(sp.join("torch/__init__.py"), "").unwrap();
    let info = sp.join("torch-2.11.0.dist-info");
    fs::create_dir_all(&info).unwrap();
    fs::write(info.join("METADATA"), "Name: torch\nVersion: 2.11.0\n").unwrap();
    fs::write(
        info.join("RECORD"),
        "torch/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n\
         torch/version.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n\
         torch/lib/libtorch_cuda.so,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n",
    )
    .unwrap();
    let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
    cmd.args(["check", "--timeout", "5", "--format", "json", "--python"])
        .arg(&venv)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1");
    let (out, took) = bounded(cmd, Duration::from_secs(60));
    assert!(took < Duration::from_secs(30), "check took {took:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: exit {:?}: {stderr}", out.status.code()));
    // The env is reported, its torch found from the dist-info (version.py was not read).
    let env = v["snapshot"]["python_envs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["prefix"].as_str().is_some_and(|p| p.ends_with("/venv")))
        .unwrap_or_else(|| panic!("the venv is not reported: {v:#}"));
    let text = env.to_string();
    assert!(text.contains("2.11.0"), "{env:#}");
    assert!(
        text.contains("not a regular file"),
        "the unread file is not named: {env:#}"
    );
}

#[test]
fn fifos_in_an_inspected_root_do_not_hang_check() {
    // /proc/version (the reproducer) and every other file check reads from a root, each a FIFO
    // nobody writes to.
    let m = support::FakeMachine::h200();
    for p in [
        "/proc/version",
        "/proc/cpuinfo",
        "/etc/os-release",
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/local/cuda-13.0/lib64/libcudart.so.13",
        "/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
    ] {
        mkfifo(&m.real(p));
    }
    for format in ["json", "text"] {
        let cmd = m.command(&["check", "--timeout", "5", "--format", format]);
        let (out, took) = bounded(cmd, Duration::from_secs(60));
        assert!(
            took < Duration::from_secs(30),
            "{format}: check took {took:?}"
        );
        assert_ne!(
            out.status.code(),
            Some(2),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if format == "json" {
            // Everything else is still read: the driver and both GPUs.
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let gpus = v["snapshot"]["driver"]["gpus"].as_array();
            assert_eq!(gpus.map(Vec::len), Some(2), "{v:#}");
        }
    }
}

/// A value that runs code if a printed command held it unquoted, besides [`ESCAPES`].
const SUBSTITUTION: &str = "$(touch /tmp/cudoctor-pwned)`id`";

#[test]
fn plan_shows_hostile_gpu_names_env_prefixes_and_versions_inert() {
    let mut m = support::FakeMachine::new();
    m.driver(
        "580.159.04",
        "13.0",
        &[support::Gpu::new(
            &format!("NVIDIA H100{SUBSTITUTION}{ESCAPES}"),
            "9.0",
        )],
    );
    let prefix = format!("/opt/{SUBSTITUTION}{}/venv", ESCAPES.replace('/', "_"));
    m.venv(
        &prefix,
        "2.11.0+cpu",
        None,
        &[(
            "torchvision",
            &format!("0.26.0{}", ESCAPES.replace('/', "_")),
        )],
    );
    for format in ["text", "markdown"] {
        for verbose in [false, true] {
            let mut args = vec!["plan", "--format", format];
            if verbose {
                args.push("--verbose");
            }
            let r = m.run(&args);
            assert_ne!(r.code, 2, "{args:?}: {}", r.stderr);
            assert!(
                r.stdout.contains("pwned"),
                "{args:?}: the env is not shown:\n{}",
                r.stdout
            );
            assert!(
                acting(&r.stdout).is_empty(),
                "{args:?}: {:?}\n{}",
                acting(&r.stdout),
                r.stdout
            );
            assert!(
                !r.stdout.contains("\n# fake heading"),
                "{args:?}: a value left its line:\n{}",
                r.stdout
            );
            if format == "markdown" {
                assert_inert_markup(format, &r.stdout);
            }
            // Every printed command parses, and names the venv as one quoted word.
            let mut commands = 0;
            for line in r.stdout.lines().map(str::trim_start) {
                let line = ["pip: ", "uv: ", "conda: ", "pip (PyPI): "]
                    .iter()
                    .find_map(|l| line.strip_prefix(l))
                    .unwrap_or(line);
                let command = ["pip ", "uv ", "conda ", "$'", "'"]
                    .iter()
                    .any(|p| line.starts_with(p));
                if command {
                    support::shell_parses(line);
                    commands += 1;
                }
                if line.contains("venv/bin/python") {
                    // The interpreter is one word whose value is the prefix's real bytes.
                    let echoed = Command::new("bash")
                        .arg("-c")
                        .arg(format!("set -- {line}; printf %s \"$1\""))
                        .output()
                        .unwrap();
                    assert_eq!(
                        String::from_utf8_lossy(&echoed.stdout),
                        format!("{prefix}/bin/python"),
                        "{line}"
                    );
                }
            }
            assert!(commands >= 2, "{args:?}: no command found:\n{}", r.stdout);
        }
    }
    assert!(!Path::new("/tmp/cudoctor-pwned").exists());
}

/// Markdown tables keep their shape: every row of a table has as many unescaped pipes as its
/// header row, whatever its cells hold.
fn assert_tables_keep_their_shape(out: &str) {
    let mut header: Option<usize> = None;
    for row in out.lines() {
        if !row.starts_with('|') {
            header = None;
            continue;
        }
        let pipes = row.replace("\\|", "").matches('|').count();
        match header {
            None => header = Some(pipes),
            Some(h) => assert_eq!(pipes, h, "a value left its cell: {row}\n{out}"),
        }
    }
}

/// Markdown and HTML reports of diff and fleet over snapshots whose GPU name, env prefix,
/// package name and version and driver version carry escapes, newlines, raw HTML, pipes and
/// `$(...)`, and a node file named so too: the values show as text, never as markup.
#[test]
fn diff_and_fleet_markdown_and_html_show_hostile_snapshots_inert() {
    let dir = tempfile::tempdir().unwrap();
    let seed = include_str!("../../cudoctor-fuzz/corpus/snapshot/stock_cpu_env.json");
    let before: serde_json::Value = serde_json::from_str(seed).unwrap();
    let mut after = before.clone();
    let hostile = format!("{SUBSTITUTION}{ESCAPES}");
    let env = &mut after["python_envs"][0];
    env["packages"][0]["name"] = format!("evil{hostile}").into();
    env["packages"][1]["version"] = format!("1.0{hostile}").into();
    env["prefix"] = format!("/opt/v{hostile}").into();
    after["driver"]["version"] =
        serde_json::json!({"value": format!("580{hostile}"), "source": "x"});
    let gpu = serde_json::json!({
        "index": 0,
        "name": format!("NVIDIA H100{hostile}"),
        "uuid": format!("GPU-{hostile}"),
        "compute_capability": "9.0",
        "source": "nvidia-smi",
    });
    after["driver"]["gpus"] = serde_json::json!([gpu]);
    let a = dir.path().join("gpu01.json");
    let b = dir
        .path()
        .join(format!("gpu02{}.json", hostile.replace('/', "_")));
    fs::write(&a, serde_json::to_string(&before).unwrap()).unwrap();
    fs::write(&b, serde_json::to_string(&after).unwrap()).unwrap();
    // A node whose file is not a snapshot: its failure (naming the file) is reported too.
    let broken = dir
        .path()
        .join(format!("gpu03{}.json", hostile.replace('/', "_")));
    fs::write(&broken, format!("not json {hostile}")).unwrap();
    let o = |s: &str| OsStr::new(s).to_os_string();
    for format in ["markdown", "html"] {
        for args in [
            vec![
                o("diff"),
                o("--format"),
                o(format),
                a.clone().into(),
                b.clone().into(),
            ],
            vec![
                o("diff"),
                o("--verbose"),
                o("--format"),
                o(format),
                a.clone().into(),
                b.clone().into(),
            ],
            vec![
                o("fleet"),
                o("--format"),
                o(format),
                a.clone().into(),
                b.clone().into(),
                broken.clone().into(),
            ],
        ] {
            let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
                .args(&args)
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_ne!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(
                stdout.contains("pwned"),
                "{args:?}: the values are not shown:\n{stdout}{stderr}"
            );
            assert!(
                stdout.contains("H100"),
                "{args:?}: the GPU is not shown:\n{stdout}"
            );
            assert_inert_markup_of_tables(format, &stdout);
        }
    }
}

/// A Markdown line without its code spans (CommonMark: a run of N backticks opens a span that
/// the next run of exactly N backticks closes; an unclosed run is literal text).
fn outside_code_spans(line: &str) -> String {
    let runs = |s: &str| -> Vec<(usize, usize)> {
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'`' {
                let start = i;
                while i < b.len() && b[i] == b'`' {
                    i += 1;
                }
                out.push((start, i - start));
            } else {
                i += 1;
            }
        }
        out
    };
    let runs = runs(line);
    let mut prose = String::new();
    let (mut at, mut k) = (0, 0);
    while k < runs.len() {
        let (start, n) = runs[k];
        match runs[k + 1..].iter().position(|&(_, m)| m == n) {
            Some(j) => {
                prose.push_str(&line[at..start]);
                let (end, m) = runs[k + 1 + j];
                at = end + m;
                k += j + 2;
            }
            None => k += 1,
        }
    }
    prose.push_str(&line[at..]);
    prose
}

/// [`assert_inert_markup`] for reports whose tables have any number of columns.
fn assert_inert_markup_of_tables(format: &str, out: &str) {
    assert_inert_outside_code(format, out);
    if format == "markdown" {
        assert_tables_keep_their_shape(out);
    }
}
