//! Fuzz targets for the parsers of untrusted input: files of an inspected machine or image
//! (ELF and fat binaries, Windows PE files, ld.so.cache, procfs, METADATA/RECORD, torch's version and init files),
//! tool outputs (nvidia-smi, nvcc, srun), saved snapshots (load, analysis, every renderer, diff),
//! logs (explain's scanner), fleet collection's logs of frames, the values every crate parses
//! (requirements and their markers, versions, CUDA_VISIBLE_DEVICES, Xid lines) with the
//! writers that must keep them inert (terminal, Markdown, HTML, shell and PowerShell quoting,
//! secret redaction), and the small files of an inspected machine (`.pth`, cuda.h, the host
//! compiler table, /proc/cpuinfo, editable-install finders, compiler banners), `cudoctor mcp`'s
//! JSON-RPC requests, DCGM's diagnostic results and the kernel log. Each target takes bytes and must return: any error is fine, a
//! panic, a hang or an allocation out of proportion is a defect.
//!
//! Two drivers share these targets: [`campaign`] (stable Rust, seeded mutation of the
//! committed seed corpora, bounded in time, run by `cargo test -p cudoctor-fuzz` and CI), and
//! the cargo-fuzz layout in `fuzz/` for long coverage-guided campaigns on nightly. See
//! docs/fuzzing.md.

pub mod campaign;
pub mod mutate;

use std::path::PathBuf;

/// One fuzz target.
pub struct Target {
    pub name: &'static str,
    /// Runs the parsers on one input.
    pub run: fn(&[u8]),
    /// Seed files and directories, relative to the workspace root.
    pub seeds: &'static [&'static str],
    /// How inputs are mutated.
    pub kind: InputKind,
}

/// The shape of a target's inputs, which decides the mutations worth making.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// Binary formats: bit flips, integers at offsets, splices.
    Binary,
    /// Line-oriented text: also tokens, long lines, controls, lines moved.
    Text,
    /// JSON: also values replaced inside the parsed document, so mutants get past the parser.
    Json,
}

/// Every target, by name.
pub const TARGETS: &[Target] = &[
    Target {
        name: "elf",
        run: elf,
        seeds: &["crates/cudoctor-fuzz/corpus/elf"],
        kind: InputKind::Binary,
    },
    Target {
        name: "fatbin",
        run: fatbin,
        seeds: &[
            "crates/cudoctor-fuzz/corpus/fatbin",
            "crates/cudoctor-fuzz/corpus/elf",
        ],
        kind: InputKind::Binary,
    },
    Target {
        name: "pe",
        run: pe,
        seeds: &[
            "tests/fixtures/real/windows/torch-2.15.0-cpu/torch/lib/shm.dll",
            "tests/fixtures/real/windows/torch-2.15.0-cpu/torch/lib/torch.dll",
            "tests/fixtures/real/windows/torch-2.15.0-cpu/torch/_C.cp312-win_amd64.pyd",
            "tests/fixtures/windows/delayload/delayuser.dll",
            "tests/fixtures/windows/delayload/dep.dll",
        ],
        kind: InputKind::Binary,
    },
    Target {
        name: "ld_so_cache",
        run: ld_so_cache,
        seeds: &["crates/cudoctor-fuzz/corpus/ld_so_cache"],
        kind: InputKind::Binary,
    },
    Target {
        name: "tool_output",
        run: tool_output,
        seeds: &[
            "tests/fixtures/real/h200x2-torch2.11-cu130/smi_csv.txt",
            "tests/fixtures/real/h200x2-torch2.11-cu130/smi.txt",
            "tests/fixtures/real/h200x2-torch2.11-cu130/smi_q.txt",
            "tests/fixtures/real/h200x2-torch2.11-cu130/nvcc.txt",
            "tests/fixtures/real/h200x2-torch2.11-cu130/procver.txt",
            "tests/fixtures/real/h200x2-torch2.11-cu130/procgpus.txt",
            "tests/fixtures/real/h200x2-torch2.11-cu130/ldconfig.txt",
        ],
        kind: InputKind::Text,
    },
    Target {
        name: "python_metadata",
        run: python_metadata,
        seeds: &[
            "crates/cudoctor-fuzz/corpus/python_metadata",
            "tests/fixtures/real/h200x2-torch2.11-cu130/torchversion.txt",
        ],
        kind: InputKind::Text,
    },
    Target {
        name: "snapshot",
        run: snapshot,
        seeds: &[
            "crates/cudoctor-fuzz/corpus/snapshot",
            "docs/device-runs/2026-11-30-h200x2/check.json",
        ],
        kind: InputKind::Json,
    },
    Target {
        name: "explain",
        run: explain,
        seeds: &[
            "crates/cudoctor-explain/tests/corpus",
            "tests/fixtures/real/h200x2-torch2.11-cu130/collect_env.txt",
        ],
        kind: InputKind::Text,
    },
    Target {
        name: "fleet_frames",
        run: fleet_frames,
        seeds: &["crates/cudoctor-fuzz/corpus/fleet_frames"],
        kind: InputKind::Text,
    },
    Target {
        name: "values",
        run: values,
        seeds: &[
            "crates/cudoctor-fuzz/corpus/python_metadata",
            "tests/fixtures/kernel-log/xid-lines.txt",
        ],
        kind: InputKind::Text,
    },
    Target {
        name: "machine_files",
        run: machine_files,
        seeds: &[
            "tests/fixtures/real/h200x2-torch2.11-cu130/nvcc.txt",
            "tests/fixtures/real/h200x2-torch2.11-cu130/procver.txt",
            "crates/cudoctor-fuzz/corpus/python_metadata",
        ],
        kind: InputKind::Text,
    },
    Target {
        name: "mcp",
        run: mcp,
        seeds: &["crates/cudoctor-fuzz/corpus/mcp"],
        kind: InputKind::Json,
    },
    Target {
        name: "dcgm_diag",
        run: dcgm_diag,
        seeds: &["crates/cudoctor-fuzz/corpus/dcgm_diag"],
        kind: InputKind::Json,
    },
    Target {
        name: "kernel_log",
        run: kernel_log,
        seeds: &[
            "tests/fixtures/kernel-log/xid-lines.txt",
            "tests/fixtures/kernel-log/journalctl-k.json",
            "crates/cudoctor-fuzz/corpus/kernel_log",
        ],
        kind: InputKind::Text,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The workspace root (seed paths are relative to it).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// ELF: header, program headers, dynamic section, symbol tables with versions and hash tables,
/// and symbol lookups through them.
fn elf(data: &[u8]) {
    let Ok(file) = cudoctor_ldso::ElfFile::parse(data) else {
        return;
    };
    let _ = (file.soname(), file.needed(), file.interpreter());
    let _ = file
        .dynamic()
        .map(|d| (d.effective_rpath(), d.nodeflib(), d.partial.len()));
    // Path lists as the loader splits them (thousands of entries, tokens, a 98 KB RPATH).
    if let Some(d) = file.dynamic() {
        let vals = cudoctor_ldso::dst::DstValues {
            origin: Some("/opt/lib"),
            lib: "lib64",
            platform: Some("haswell"),
        };
        for list in [d.rpath.as_deref(), d.runpath.as_deref()]
            .into_iter()
            .flatten()
        {
            let (dirs, _) = cudoctor_ldso::dst::search_dirs_capped(list, &[':'], &vals);
            assert!(dirs.len() <= cudoctor_ldso::dst::MAX_SEARCH_DIRS);
        }
        assert!(d.needed.len() <= cudoctor_ldso::elf::MAX_NEEDED);
    }
    if let Ok(table) = file.symbol_table() {
        let exported = table.exported();
        let _ = table.requirements();
        let _ = table.longest_lookup();
        for s in exported.iter().take(64) {
            let _ = table.defines(&s.name, None);
        }
        let _ = table.defines("cudaGetDeviceCount", None);
    }
}

/// Fat binaries inside ELF: sections, containers, entries, compressed payload peeks.
fn fatbin(data: &[u8]) {
    if let Ok(images) = cudoctor_fatbin::scan_bytes(data) {
        let _ = images.cuobjdump_sass();
    }
}

/// Windows DLLs: headers, imports, delay-load imports, exports, the version resource.
fn pe(data: &[u8]) {
    let Ok(file) = cudoctor_pe::PeFile::parse(data) else {
        return;
    };
    let _ = (file.machine(), file.is_dll());
    let _ = file.imports();
    let _ = file.delay_imports();
    if let Ok(exports) = file.exports() {
        let _ =
            exports.has_name("?Parse@C10FlagParser@c10@@IEAA_NAEBV?$basic_string@D@std@@PEAH@Z");
    }
    let _ = file.file_version();
}

fn ld_so_cache(data: &[u8]) {
    let Ok(cache) = cudoctor_ldso::LdCache::parse(data) else {
        return;
    };
    let _ = cache.ldconfig_p_lines("/etc/ld.so.cache");
    let sel = cudoctor_ldso::CacheSelection {
        default_id: 0x0303,
        accept_plain_elf: false,
        hwcaps_priority: vec!["x86-64-v3".into(), "x86-64-v2".into()],
        isa_levels: Some(0b0111),
        legacy_hwcap: 0,
        platform_mask: 0,
        platform_bit: 0,
    };
    for e in cache.entries.iter().take(64) {
        let _ = cache.lookup(&e.name, &sel);
    }
    let _ = cache.lookup("libcudart.so.13", &sel);
}

/// Outputs of programs and procfs files: every parser of them on the same text.
fn tool_output(data: &[u8]) {
    use cudoctor_collect::driver::{procfs, smi};
    let t = text(data);
    let _ = smi::parse_gpu_query(&t);
    let _ = smi::parse_apps_query(&t);
    let _ = smi::parse_banner(&t);
    let _ = smi::refuses_field(&t);
    let _ = procfs::driver_version_from_banner(&t);
    let _ = procfs::kernel_module(&t);
    let _ = procfs::gpu_from_information(&t, 0);
    let _ = cudoctor_collect::toolkit::parse_nvcc_version(&t);
    let _ = cudoctor_collect::toolkit::version_from_json(&t);
    let _ = cudoctor_collect::platform::is_wsl(&t, &t);
    let _ = cudoctor_fleet::slurm::parse_srun_stderr(&t);
    let _ = cudoctor_fatbin::compat::parse_torch_arch_list(&t);
    for line in t.lines().take(256) {
        let _ = cudoctor_collect::security::parse_denial(line);
        let _ = cudoctor_collect::deep::parse::parse_line(line);
    }
}

/// Files of an installed Python environment.
fn python_metadata(data: &[u8]) {
    use cudoctor_collect::python::{frameworks, record, site};
    let t = text(data);
    let _ = record::parse_record(&t);
    let _ = frameworks::parse_requires_dist(&t);
    let _ = site::parse_torch_version_py(&t, "/venv/lib/python3.12/site-packages/torch");
    let _ = cudoctor_collect::import_model::torch_init::parse(&t);
    for line in t.lines().take(64) {
        let _ = site::dist_name_version(line);
    }
}

/// A saved snapshot from anyone: load, analyse, render every format, diff against itself.
fn snapshot(data: &[u8]) {
    let Ok(snap) = cudoctor_snapshot::from_json(data) else {
        return;
    };
    let kb = cudoctor_kb::Kb::embedded();
    let findings = cudoctor_analyse::analyse(&snap, kb);
    let report = cudoctor_render::Report {
        snapshot: &snap,
        findings: &findings,
    };
    let _ = cudoctor_render::render_text(&report, cudoctor_render::Style { color: true });
    let _ = cudoctor_render::render_json(&report);
    let _ = cudoctor_render::render_markdown(&report);
    let _ = cudoctor_render::render_html(&report);
    let _ = cudoctor_render::render_prometheus(&report, 0.1);
    let empty = cudoctor_snapshot::Snapshot::new("0", "/");
    let d = cudoctor_fleet::diff::diff(("a", &empty, &[]), ("b", &snap, &findings));
    let _ = cudoctor_render::render_diff_text(&d, true);
    let _ = cudoctor_render::render_diff_markdown(&d, true);
    let _ = cudoctor_render::render_diff_html(&d, true);
}

/// A log or error message: the scanner, the signatures, both renderers.
fn explain(data: &[u8]) {
    let e = cudoctor_explain::explain_reader(std::io::BufReader::new(data));
    let _ = cudoctor_render::render_explain_text(&e);
    let _ = cudoctor_explain::render::to_json(&e);
}

/// Fleet collection's log: frames of many nodes interleaved with a scheduler's lines, put back
/// together under the per-node and pending caps, each node's snapshot loaded.
fn fleet_frames(data: &[u8]) {
    let mut reader = cudoctor_fleet::frames::FrameReader::new(64 << 10);
    let _ = cudoctor_fleet::frames::for_each_line(data, 1 << 20, |l| reader.feed_line(l));
    let gathered = reader.finish(true);
    for (_, json) in gathered.snapshots.iter().take(4) {
        let _ = cudoctor_snapshot::from_json(json.as_bytes());
    }
}

/// Each line as every value parser reads it, and through every writer that must keep it inert.
fn values(data: &[u8]) {
    use cudoctor_types::{inert, secret, visible_devices, xid};
    let t = text(data);
    let vars = |n: &str| match n {
        "python_version" => Some("3.12".to_string()),
        "sys_platform" => Some("linux".to_string()),
        _ => None,
    };
    for line in t.lines().take(256) {
        if let Ok(r) = line.parse::<cudoctor_types::Requirement>() {
            let _ = (r.marker_holds(&vars), r.marker_extras(), r.specifier_text());
            let _ = r.admits("2.5.0");
        }
        let _ = line.parse::<cudoctor_types::PyVersion>();
        let _ = line.parse::<cudoctor_types::CudaVersion>();
        let _ = line.parse::<cudoctor_types::DriverVersion>();
        let _ = line.parse::<cudoctor_types::ComputeCapability>();
        let _ = visible_devices::judge(line, Some(8));
        let _ = xid::parse(line);
        let _ = cudoctor_types::normalise_name(line);
        let _ = secret::redact_text(line);
        // Inert writers: one line stays one line without a control character.
        let shown = inert::line(line);
        assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
        let quoted = cudoctor_plan::quote(line);
        assert!(
            !quoted.contains('\n') && !quoted.contains('\r'),
            "{quoted:?}"
        );
        let ps = cudoctor_plan::quote_powershell(line);
        assert!(!ps.contains('\n') && !ps.contains('\r'), "{ps:?}");
        let _ = (inert::markdown(line), inert::html(line, false));
        let _ = cudoctor_plan::parse_pip(line);
    }
    let words: Vec<String> = t.split_whitespace().take(256).map(str::to_string).collect();
    let _ = secret::redact_argv(&words);
    let message = inert::message(&t);
    assert!(message.lines().count() <= 61);
}

/// Small files of an inspected machine, read as text.
fn machine_files(data: &[u8]) {
    let t = text(data);
    let _ = cudoctor_collect::python::site::pth_entries(&t).count();
    let _ = cudoctor_collect::toolkit::cuda_h_version(&t);
    let _ = cudoctor_collect::host_config::parse(&t);
    let _ = cudoctor_collect::discovery::editable_source(&t);
    let _ = cudoctor_collect::build_tools::parse_version_output(&t);
    let _ = cudoctor_ldso::config::x86_64_levels_from_cpuinfo(&t);
    for line in t.lines().take(64) {
        let _ = cudoctor_collect::python::declared::label_torch(line);
    }
}

/// Tool calls checked and answered without running anything: the command line a client's
/// arguments become holds the tool's name first, then only that tool's own flags (a value never
/// turns into a flag of its own), `--format json`, and paths only after `--`.
struct CheckedCalls;

impl cudoctor_mcp::Calls for CheckedCalls {
    fn call(&self, tool: &str, line: &[String], text: Option<&str>) -> serde_json::Value {
        assert_eq!(line.first().map(String::as_str), Some(tool), "{line:?}");
        let flags = cudoctor_mcp::tool_flags(tool).expect("a tool of the list");
        let end = line.iter().position(|w| w == "--").unwrap_or(line.len());
        let words = line.get(1..end).unwrap_or_default();
        assert!(
            words.ends_with(&["--format".to_string(), "json".to_string()]),
            "{line:?}"
        );
        for w in words.get(..words.len() - 2).unwrap_or_default() {
            let flag = w.split_once('=').map_or(w.as_str(), |(f, _)| f);
            assert!(flags.iter().any(|f| f == flag), "{tool}: {w:?} in {line:?}");
        }
        if tool == "explain" {
            assert!(text.is_some() != (end < line.len()), "{line:?} {text:?}");
        }
        cudoctor_mcp::tool_result(serde_json::json!({"line": line}))
    }
}

/// `cudoctor mcp`'s JSON-RPC lines: every message a client may send (batches, notifications,
/// tool calls with any arguments), answered with one JSON document a line.
fn mcp(data: &[u8]) {
    let server = cudoctor_mcp::Server {
        version: "fuzz",
        calls: &CheckedCalls,
    };
    let mut out = Vec::new();
    cudoctor_mcp::serve(data, &mut out, &server).expect("writes to memory");
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let answer: serde_json::Value = serde_json::from_slice(line).expect("an answer is JSON");
        assert!(answer.is_object() || answer.is_array(), "{answer}");
    }
}

/// A `dcgmi diag --json` result left on disk: its tests, bounded in number.
fn dcgm_diag(data: &[u8]) {
    if let Ok(tests) = cudoctor_collect::health::dcgm_diag_tests(data) {
        assert!(tests.len() <= cudoctor_collect::health::MAX_DIAG_TESTS);
    }
}

/// The kernel log: /dev/kmsg records in one buffer and `journalctl -k -o json` lines.
fn kernel_log(data: &[u8]) {
    let _ = cudoctor_collect::health::kmsg_records(data, "/dev/kmsg");
    let _ = cudoctor_collect::health::journal_json(&text(data), 1 << 20);
}
