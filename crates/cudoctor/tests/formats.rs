//! One snapshot per command and `--format` value, from inputs inside the repository: the real
//! 2×H200 and 1×H200 snapshots and logs of docs/device-runs (with a what-if Pascal GPU, so the
//! reports carry findings and fixes), and fake machines with gcc-built libraries for `kernels`
//! and `libs`. Every value a command's parser offers has its snapshot, and every snapshot is a
//! value offered: a new format (or command) without a snapshot fails here.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

use support::{cuda_library, fatbin_section, gcc, FakeMachine, FatEntry, Gpu};

/// Real snapshots (`check --deep --format json` reports) of the device runs.
const H200X2: &str = "docs/device-runs/2026-11-30-h200x2/deep/baseline.json";
const H200X1: &str = "docs/device-runs/2026-11-30-h200x1/deep.json";
const H200X2_CHECK: &str = "docs/device-runs/2026-11-30-h200x2/check.json";
/// A real out-of-memory log of the 2×H200 machine.
const OOM_LOG: &str = "docs/device-runs/2026-11-30-h200x2/explain/oom.log";

/// Every command with a `--format`, as its snapshots name it.
const COMMANDS: &[&str] = &[
    "check", "diff", "fleet", "kernels", "libs", "plan", "explain", "rule", "rules",
];

/// The binary run from the repository root, so that the files it names are the relative paths
/// given (no checkout directory in a snapshot).
fn in_repo(args: &[&str]) -> (i32, String) {
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .current_dir(cudoctor_testkit::repo_root())
        .env_clear()
        .env("COLUMNS", cudoctor_testkit::TEST_COLUMNS)
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("run cudoctor");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.trim().is_empty(), "{args:?}: {stderr}");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// A machine with an H100 and an RTX 3090 and two libraries: one with every kind of entry
/// (SASS, arch-specific SASS, PTX) that both GPUs run, one with sm_80 SASS only, which the H100
/// cannot run.
fn kernels_machine() -> FakeMachine {
    let m = FakeMachine::with_driver("580.159.04", "13.0", &[Gpu::h100(), Gpu::rtx3090()]);
    let source = "int launch(void) { return 0; }";
    cuda_library(
        &m,
        "/opt/lib/libmixed.so",
        source,
        &[],
        &fatbin_section(&[
            &[
                FatEntry::sass(80),
                FatEntry::sass(86),
                FatEntry::ptx(80, 9, 0),
            ],
            &[FatEntry::sass(90).arch_specific(), FatEntry::sass(120)],
        ]),
    );
    cuda_library(
        &m,
        "/opt/lib/libampere.so",
        source,
        &[],
        &fatbin_section(&[&[FatEntry::sass(80)]]),
    );
    m
}

/// torch with an extension built against another torch ([`support::torch_with_extension`]),
/// and a second torch extension that needs a library the machine lacks.
fn libs_machine() -> FakeMachine {
    const SP: &str = "/opt/venv/lib/python3.12/site-packages";
    let m = support::torch_with_extension();
    gcc(
        &m,
        "/gone/libcufft.so.12",
        "void cufft_present(void) {}",
        &["-nostdlib", "-Wl,-soname,libcufft.so.12"],
    );
    let gone = m.real("/gone");
    let torch_lib = m.real(&format!("{SP}/torch/lib"));
    gcc(
        &m,
        &format!("{SP}/fft_ext.cpython-312-x86_64-linux-gnu.so"),
        "extern void c10_present(void); extern void cufft_present(void); void PyInit_fft_ext(void) { c10_present(); cufft_present(); }",
        &[
            &format!("-L{}", torch_lib.display()),
            &format!("-L{}", gone.display()),
            "-Wl,--no-as-needed",
            "-lc10",
            "-l:libcufft.so.12",
            "-Wl,-rpath,$ORIGIN/torch/lib",
        ],
    );
    std::fs::remove_dir_all(&gone).expect("remove the linked-against copy");
    m
}

/// What `command` prints in `format` (the exit status first), with what varies between runs
/// (the check's own duration) replaced.
fn report(command: &str, format: &str) -> String {
    let f = ["--format", format];
    let (code, out) = match command {
        "check" => in_repo(&[&["check", "--snapshot", H200X2, "--gpu", "sm_61"][..], &f].concat()),
        "diff" => in_repo(&[&["diff", H200X1, H200X2][..], &f].concat()),
        "fleet" => in_repo(&[&["fleet", H200X1, H200X2, H200X2_CHECK][..], &f].concat()),
        "explain" => in_repo(
            &[
                &["explain", "--snapshot", H200X2, "--gpu", "sm_61", OOM_LOG][..],
                &f,
            ]
            .concat(),
        ),
        "plan" => in_repo(
            &[
                &[
                    "plan",
                    "--no-detect",
                    "--gpu",
                    "H200",
                    "--gpu",
                    "GTX 1080",
                    "--driver",
                    "580.159.04",
                    "--python-version",
                    "3.12",
                    "--verbose",
                ][..],
                &f,
            ]
            .concat(),
        ),
        "rules" => in_repo(&[&["rules"][..], &f].concat()),
        "rule" => in_repo(&[&["rule", "KRN001"][..], &f].concat()),
        "kernels" => {
            let r = kernels_machine().run(&[&["kernels", "/opt/lib"][..], &f].concat());
            assert!(r.stderr.trim().is_empty(), "{}", r.stderr);
            (r.code, r.stdout)
        }
        "libs" => {
            let r = libs_machine().run(&[&["libs", "--python", "/opt/venv"][..], &f].concat());
            assert!(r.stderr.trim().is_empty(), "{}", r.stderr);
            (r.code, r.stdout)
        }
        other => panic!("no input for `{other}`: give it one here"),
    };
    assert!(
        code == 0 || code == 1,
        "{command} --format {format}: exit {code}\n{out}"
    );
    let out: String = out
        .lines()
        .map(
            |l| match l.strip_prefix("cudoctor_check_duration_seconds ") {
                Some(_) => "cudoctor_check_duration_seconds <duration>".to_string(),
                None => support::build_redacted(l),
            },
        )
        .collect::<Vec<_>>()
        .join("\n");
    format!("exit {code}\n{out}\n")
}

/// The commands `cudoctor --help` lists.
fn subcommands() -> Vec<String> {
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .arg("--help")
        .output()
        .expect("run cudoctor --help");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

fn snapshot_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots")
}

#[test]
fn every_command_and_format_has_its_snapshot() {
    for command in COMMANDS {
        for format in support::offered_formats(&[command]) {
            insta::assert_snapshot!(format!("{command}_{format}"), report(command, &format));
        }
    }
}

/// The snapshots of this file are exactly one per command and format the parser offers, and
/// every command with a `--format` is one of [`COMMANDS`].
#[test]
fn the_snapshots_are_the_formats_the_parser_offers() {
    let with_format: Vec<String> = subcommands()
        .into_iter()
        .filter(|c| !support::offered_formats(&[c]).is_empty())
        .collect();
    assert!(
        with_format.contains(&"check".to_string()),
        "{with_format:?}"
    );
    let mut listed: Vec<String> = COMMANDS.iter().map(|c| c.to_string()).collect();
    listed.sort();
    let mut with_format_sorted = with_format.clone();
    with_format_sorted.sort();
    assert_eq!(
        with_format_sorted, listed,
        "a command with --format lacks its snapshots here (or one listed lost --format)"
    );
    let offered: BTreeSet<String> = COMMANDS
        .iter()
        .flat_map(|c| {
            support::offered_formats(&[c])
                .into_iter()
                .map(move |f| format!("formats__{c}_{f}.snap"))
        })
        .collect();
    let present: BTreeSet<String> = std::fs::read_dir(snapshot_dir())
        .expect("snapshot dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("formats__") && n.ends_with(".snap"))
        .collect();
    assert_eq!(
        offered, present,
        "snapshots of tests/formats.rs and the parser's --format values differ"
    );
}

/// Lines of a text report wider than 120 columns, leaving out what cannot be broken: a line
/// that is one token (a path, a command word), and the log lines explain quotes as they are.
fn over_120_columns(text: &str) -> Vec<String> {
    let mut quoting = false;
    let mut over = Vec::new();
    for l in text.lines() {
        match l {
            "Matched:" => quoting = true,
            "" => quoting = false,
            _ => {}
        }
        let width = l.chars().count();
        if width > 120 && !quoting && l.split_whitespace().count() > 1 {
            over.push(format!("{width}: {l}"));
        }
    }
    over
}

/// Every command's text report, from the device runs' real snapshots (the anchor-style report
/// of a stock torch environment among them), fits 120 columns.
#[test]
fn every_text_report_fits_120_columns() {
    for command in COMMANDS {
        if !support::offered_formats(&[command]).contains(&"text".to_string()) {
            continue;
        }
        let text = report(command, "text");
        let over = over_120_columns(&text);
        assert!(over.is_empty(), "{command}:\n{}", over.join("\n"));
    }
}
