//! Fake machines for end-to-end tests: a [`FakeRoot`] (cudoctor-testkit: a temp dir laid out
//! like `/`, with procfs files, scripts that print real captured `nvidia-smi` output, toolkits
//! and Python environments) that the real binary runs against with `--root`, where none of its
//! programs is ever run: the scripts (nvidia-smi, nvcc) answer only through
//! [`FakeMachine::run_live`], which runs the binary on this machine with the fake's program
//! directories first on PATH.
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

pub use cudoctor_testkit::fake::{FakeRoot, Gpu};

/// A [`FakeRoot`] the real binary runs against (`--root`), every report it prints checked
/// against the suite's invariants; its building is [`FakeRoot`]'s (through `Deref`).
pub struct FakeMachine(FakeRoot);

impl std::ops::Deref for FakeMachine {
    type Target = FakeRoot;
    fn deref(&self) -> &FakeRoot {
        &self.0
    }
}

impl std::ops::DerefMut for FakeMachine {
    fn deref_mut(&mut self) -> &mut FakeRoot {
        &mut self.0
    }
}

impl FakeMachine {
    pub fn new() -> Self {
        FakeMachine(FakeRoot::new())
    }

    /// A machine whose driver `version` (its CUDA `max_cuda`) is loaded with `gpus`, and
    /// nothing else.
    pub fn with_driver(version: &str, max_cuda: &str, gpus: &[Gpu]) -> Self {
        FakeMachine(FakeRoot::with_driver(version, max_cuda, gpus))
    }

    /// One H100 on driver 580.159.04 (CUDA 13.0), nothing else.
    pub fn h100() -> Self {
        FakeMachine(FakeRoot::h100())
    }

    /// One H100 on driver 580.159.04 (CUDA 13.0) with torch 2.11.0+cu130 in /opt/venv: the
    /// healthy machine most scenarios break one thing of.
    pub fn h100_cu130() -> Self {
        FakeMachine(FakeRoot::h100_cu130())
    }

    /// The real 2xH200 machine from the fixtures: driver 580.159.04, CUDA 13.0 toolkit,
    /// torch 2.11.0+cu130 in a venv.
    pub fn h200() -> Self {
        FakeMachine(FakeRoot::h200())
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
        cmd.env_clear();
        cmd.env("COLUMNS", cudoctor_testkit::TEST_COLUMNS);
        cmd.env("PATH", self.path_entries().join(":"));
        cmd.env("NO_COLOR", "1");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        // The subcommand first, then the machine, then the rest.
        let (sub, rest) = args
            .split_first()
            .map_or((None, &[][..]), |(s, r)| (Some(*s), r));
        cmd.args(sub);
        cmd.arg("--root").arg(self.root());
        cmd.args(rest);
        cmd
    }

    /// The binary on this machine (no `--root`), with the fake's PATH entries (as real
    /// directories inside it) first: how the scripts of the fake run, as the live machine's
    /// tools. Only the programs come from the fake; files are this machine's.
    pub fn run_live(&self, args: &[&str]) -> Run {
        let mut cmd = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"));
        cmd.env_clear();
        cmd.env("COLUMNS", cudoctor_testkit::TEST_COLUMNS);
        let mut path: Vec<String> = self
            .path_entries()
            .iter()
            .map(|p| self.real(p).display().to_string())
            .collect();
        path.extend(["/usr/bin".to_string(), "/bin".to_string()]);
        cmd.env("PATH", path.join(":"));
        cmd.env("NO_COLOR", "1");
        cmd.args(args);
        let out = cmd.output().expect("run cudoctor");
        let r = Run::from(out, &self.root().display().to_string());
        self.report_invariants(args, &r);
        r
    }

    /// `run_live(["check", "--format", "json"])`, parsed.
    pub fn json_live(&self) -> (serde_json::Value, i32) {
        let r = self.run_live(&["check", "--format", "json"]);
        let v = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout, r.stderr));
        (v, r.code)
    }

    /// The binary against the fake root. Every JSON report of `check` it prints goes through
    /// the suite's invariants: typed fixes ([`check_fixes`]) and one cause per breakage
    /// ([`one_cause_each`]).
    pub fn run(&self, args: &[&str]) -> Run {
        let out = self.command(args).output().expect("run cudoctor");
        let r = Run::from(out, &self.root().display().to_string());
        self.report_invariants(args, &r);
        r
    }

    /// The suite's invariants on what a run printed: every `check` JSON report has typed
    /// fixes ([`check_fixes`]) and one cause per breakage ([`one_cause_each`]); every shell
    /// fix line of a text check report parses ([`text_fixes_are_typed`]); every
    /// Markdown report's ```sh blocks and every HTML check report's `<pre>` blocks parse as
    /// shell ([`markdown_blocks_are_shell`], [`html_blocks_are_shell`]).
    fn report_invariants(&self, args: &[&str], r: &Run) {
        let format = args.windows(2).find(|w| w[0] == "--format").map(|w| w[1]);
        let check = args.first() == Some(&"check");
        match format {
            Some("json") if check => {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&r.stdout) {
                    check_fixes(&v);
                    one_cause_each(&v, self.breakage_count(), &[]);
                }
            }
            None | Some("text") if check => text_fixes_are_typed(&r.stdout),
            Some("markdown") => markdown_blocks_are_shell(&r.stdout),
            Some("html") if check => html_blocks_are_shell(&r.stdout),
            _ => {}
        }
    }

    /// `check --format json`, parsed.
    pub fn json(&self) -> (serde_json::Value, i32) {
        let r = self.run(&["check", "--format", "json"]);
        let v = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", r.stdout, r.stderr));
        (v, r.code)
    }

    /// Codes of the findings at `severity`.
    pub fn codes(&self, severity: &str) -> Vec<String> {
        let (v, _) = self.json();
        v["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["severity"] == severity)
            .map(|f| f["code"].as_str().unwrap_or_default().to_string())
            .collect()
    }
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(out: Output, root: &str) -> Run {
        let clean = |b: &[u8]| String::from_utf8_lossy(b).replace(root, "<root>");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: clean(&out.stdout),
            stderr: clean(&out.stderr),
        }
    }
}

/// The findings of a JSON report with this code.
pub fn findings(v: &serde_json::Value, code: &str) -> Vec<serde_json::Value> {
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["code"] == code)
        .cloned()
        .collect()
}

/// Builds a shared library with gcc at `machine_path` inside the fake machine.
pub fn gcc(m: &FakeRoot, machine_path: &str, source: &str, args: &[&str]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("lib.c");
    fs::write(&src, source).expect("write source");
    let out = m.real(machine_path);
    fs::create_dir_all(out.parent().expect("parent")).expect("mkdir");
    let status = Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(&src)
        .args(args)
        .status()
        .expect("gcc");
    assert!(status.success(), "gcc failed for {machine_path}");
}

/// One entry of a fat binary, laid out byte by byte as nvcc's `fatbinary` writes it (see
/// `shared/research/formats-and-crates.md` Part 1): a 64-byte header, then the payload.
pub struct FatEntry {
    /// 1 = PTX, 2 = ELF cubin.
    pub kind: u16,
    /// SM number as decimal (80 for sm_80).
    pub arch: u32,
    /// 0x11 = 64-bit, Linux host; 0x100000 = `a` target; 0x200000 = `f` target.
    pub flags: u64,
    /// ELF: code version; PTX: PTX ISA version.
    pub major: u16,
    pub minor: u16,
    pub payload: Vec<u8>,
}

impl FatEntry {
    /// A cubin for `sm_<arch>` as ptxas 13 writes its ELF header (ABI version 8, SM in bits
    /// 8-15 of e_flags), uncompressed.
    pub fn sass(arch: u32) -> Self {
        let mut cubin = vec![0u8; 64];
        cubin[..4].copy_from_slice(b"\x7fELF");
        cubin[4] = 2;
        cubin[5] = 1;
        cubin[6] = 1;
        cubin[7] = 65;
        cubin[8] = 8;
        cubin[18..20].copy_from_slice(&190u16.to_le_bytes());
        let low = if arch >= 100 { 0x02 } else { 0x04 };
        cubin[48..52].copy_from_slice(&(0x0600_0000 | (arch << 8) | low).to_le_bytes());
        cubin.extend(std::iter::repeat_n(0x5a, 192));
        FatEntry {
            kind: 2,
            arch,
            flags: 0x11,
            major: 1,
            minor: 8,
            payload: cubin,
        }
    }

    /// PTX for `compute_<arch>` with PTX ISA `major.minor`, uncompressed text padded with NULs.
    pub fn ptx(arch: u32, major: u16, minor: u16) -> Self {
        let mut text =
            format!("\n.version {major}.{minor}\n.target sm_{arch}\n.address_size 64\n\n")
                .into_bytes();
        text.resize(text.len().next_multiple_of(8) + 8, 0);
        FatEntry {
            kind: 1,
            arch,
            flags: 0x11,
            major,
            minor,
            payload: text,
        }
    }

    /// The arch-specific (`a`) variant.
    pub fn arch_specific(mut self) -> Self {
        self.flags |= 0x10_0000;
        self
    }

    fn bytes(&self) -> Vec<u8> {
        let mut payload = self.payload.clone();
        payload.resize(payload.len().next_multiple_of(8), 0);
        let mut h = vec![0u8; 64];
        h[0..2].copy_from_slice(&self.kind.to_le_bytes());
        h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        h[4..8].copy_from_slice(&64u32.to_le_bytes());
        h[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        // 16: compressed size 0, 20: no options, 24/26: minor/major.
        h[24..26].copy_from_slice(&self.minor.to_le_bytes());
        h[26..28].copy_from_slice(&self.major.to_le_bytes());
        h[28..32].copy_from_slice(&self.arch.to_le_bytes());
        h[40..48].copy_from_slice(&self.flags.to_le_bytes());
        h.extend_from_slice(&payload);
        h
    }
}

/// A `.nv_fatbin` section's contents: one container per slice of entries, back to back at
/// 8-byte boundaries (a library links one container per translation unit).
pub fn fatbin_section(containers: &[&[FatEntry]]) -> Vec<u8> {
    let mut section = Vec::new();
    for entries in containers {
        let body: Vec<u8> = entries.iter().flat_map(FatEntry::bytes).collect();
        section.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
        section.extend_from_slice(&1u16.to_le_bytes());
        section.extend_from_slice(&16u16.to_le_bytes());
        section.extend_from_slice(&(body.len() as u64).to_le_bytes());
        section.extend_from_slice(&body);
        section.resize(section.len().next_multiple_of(8), 0);
    }
    section
}

/// A gcc-built shared library carrying `section` as its `.nv_fatbin`, the way nvcc links one.
pub fn cuda_library(
    m: &FakeMachine,
    machine_path: &str,
    source: &str,
    args: &[&str],
    section: &[u8],
) {
    gcc(m, machine_path, source, args);
    let dir = tempfile::tempdir().expect("temp dir");
    let blob = dir.path().join("fatbin.bin");
    fs::write(&blob, section).expect("write fatbin");
    // objcopy warns that the new allocated section lies in no segment: true, and harmless for
    // readers of section headers, so its output is shown only when it fails.
    let out = Command::new("objcopy")
        .arg(format!("--add-section=.nv_fatbin={}", blob.display()))
        .args(["--set-section-flags", ".nv_fatbin=alloc,readonly"])
        .arg(m.real(machine_path))
        .output()
        .expect("objcopy");
    assert!(
        out.status.success(),
        "objcopy failed for {machine_path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A stand-in for the C library in a system directory, so that the fake root's libraries
/// resolve `libc.so.6` as on a real machine (it is built without a libc of its own).
pub fn system_libc(m: &FakeMachine, dir: &str) {
    gcc(
        m,
        &format!("{dir}/libc.so.6"),
        "int puts(const char *s) { (void)s; return 0; }",
        &["-nostdlib", "-Wl,-soname,libc.so.6"],
    );
}

/// Every fix of a JSON report is typed: each shell step parses as POSIX shell (`sh -n`), and
/// every `torch`/`torchvision`/`torchaudio` pin names a release the knowledge base has (with
/// the variant of the index it is installed from). A consequence (`caused_by`) has no fix.
/// Called on every `check --format json` of the end-to-end suite.
pub fn check_fixes(v: &serde_json::Value) {
    for f in v["findings"].as_array().into_iter().flatten() {
        let steps = f["fix"].as_array().expect("fix is a list");
        if f.get("caused_by").is_some_and(|c| !c.is_null()) {
            assert!(steps.is_empty(), "a consequence carries a fix: {f:#}");
        }
        for step in steps {
            let obj = step.as_object().expect("a fix step is an object");
            assert_eq!(obj.len(), 1, "{step}");
            if let Some(prose) = step["prose"].as_str() {
                assert!(!prose.is_empty());
                continue;
            }
            if let Some(ps) = step["powershell"].as_str() {
                powershell_is_quoted(ps);
                continue;
            }
            let cmd = step["shell"]
                .as_str()
                .unwrap_or_else(|| panic!("a step is shell, powershell or prose: {step}"));
            shell_parses(cmd);
            pins_exist(cmd);
            other_pins_known(cmd, v);
        }
    }
}

/// A pip name as installers compare it.
fn normalized(name: &str) -> String {
    name.to_ascii_lowercase().replace('_', "-")
}

/// Each `name==version` of a package outside torch's family (the knowledge base has no table
/// of those) names a version the report's own snapshot vouches for: installed in an
/// environment (a reinstall, or `jax[cuda13]==V` beside an installed jax V), or the exact
/// version an installed framework's companion requirement names.
pub fn other_pins_known(cmd: &str, report: &serde_json::Value) {
    let envs = report["snapshot"]["python_envs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let installed = |name: &str, version: &str| {
        envs.iter().any(|e| {
            e["packages"].as_array().into_iter().flatten().any(|p| {
                p["name"].as_str().map(normalized).as_deref() == Some(name)
                    && p["version"].as_str() == Some(version)
            })
        })
    };
    let required = |name: &str, version: &str| {
        envs.iter().any(|e| {
            e["frameworks"].as_array().into_iter().flatten().any(|f| {
                f["companions"].as_array().into_iter().flatten().any(|c| {
                    c["name"].as_str().map(normalized).as_deref() == Some(name)
                        && c["requirement"].as_str().is_some_and(|r| {
                            r.contains(&format!("=={version}"))
                                || (r.contains(&format!("<={version}"))
                                    && r.contains(&format!(">={version}")))
                        })
                })
            })
        })
    };
    let cmd = cmd.split("   #").next().unwrap_or(cmd);
    for w in cmd.split_whitespace() {
        let w = w.trim_matches('\'');
        let Some((spec, version)) = w.split_once("==") else {
            continue;
        };
        let name = normalized(spec.split('[').next().unwrap_or(spec));
        if ["torch", "torchvision", "torchaudio"].contains(&name.as_str()) {
            continue;
        }
        assert!(
            installed(&name, version) || required(&name, version),
            "{name}=={version} is neither installed nor required by an installed framework: {cmd}"
        );
    }
}

/// One cause, one finding, one remedy: in a report of a scenario with `breakages` independent
/// breakages, every error or warning either follows from another finding (`caused_by`, no fix
/// of its own) or is one of at most `breakages` root causes, each with a fix; a report with any
/// problem has at least one root. Codes in `outside` (the machine the tests run on, e.g. a
/// container without GPUs) are left out. Applied to every `check` JSON report of the
/// end-to-end suite (fake machines) and of the real-env tier.
pub fn one_cause_each(v: &serde_json::Value, breakages: usize, outside: &[&str]) {
    let problems: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| matches!(f["severity"].as_str(), Some("error" | "warning")))
        .filter(|f| !outside.contains(&f["code"].as_str().unwrap_or_default()))
        .collect();
    let roots: Vec<&serde_json::Value> = problems
        .iter()
        .copied()
        .filter(|f| f.get("caused_by").is_none_or(|c| c.is_null()))
        .collect();
    let listing = || {
        problems
            .iter()
            .map(|f| {
                format!(
                    "{} {} caused_by={} fix={}: {}",
                    f["code"].as_str().unwrap_or_default(),
                    f["severity"].as_str().unwrap_or_default(),
                    f["caused_by"],
                    f["fix"].as_array().map_or(0, Vec::len),
                    f["title"].as_str().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        roots.len() <= breakages,
        "{} root causes for {breakages} breakage(s); the others must carry caused_by:\n{}",
        roots.len(),
        listing()
    );
    assert!(
        problems.is_empty() || !roots.is_empty(),
        "problems but no root cause:\n{}",
        listing()
    );
    for r in &roots {
        assert!(
            r["fix"].as_array().is_some_and(|f| !f.is_empty()),
            "a root cause without a fix:\n{}",
            listing()
        );
    }
}

/// Every fix line of a plain-text check report is typed: a command after its `$ ` prompt,
/// which parses as shell, or prose. A report with a fix list shows at least one line of it.
pub fn text_fixes_are_typed(text: &str) {
    let lines = cudoctor_render::fix_lines(text);
    assert_eq!(
        lines.is_empty(),
        !text.contains("fix: "),
        "fix lines not read back:\n{text}"
    );
    for line in lines {
        match line {
            cudoctor_render::FixLine::Shell(cmd) => shell_parses(&cmd),
            cudoctor_render::FixLine::PowerShell(cmd) => powershell_is_quoted(&cmd),
            cudoctor_render::FixLine::Prose(p) => assert!(!p.trim().is_empty(), "{text}"),
        }
    }
}

/// Every ```sh block of a Markdown report pastes into a shell as it is.
pub fn markdown_blocks_are_shell(md: &str) {
    let mut block: Option<Vec<String>> = None;
    for line in md.lines() {
        let t = line.trim_start();
        match (&mut block, t) {
            (None, "```sh") => block = Some(Vec::new()),
            (Some(b), "```") => {
                shell_parses(&b.join("\n"));
                block = None;
            }
            (Some(b), _) => b.push(t.to_string()),
            _ => {}
        }
    }
    assert!(block.is_none(), "unclosed code block");
}

/// Every `<pre>` block of an HTML check report (its fix commands) pastes into a shell as it
/// is, once the entities the report writes are read back.
pub fn html_blocks_are_shell(html: &str) {
    let mut rest = html;
    while let Some(start) = rest.find("<pre>") {
        let after = &rest[start + "<pre>".len()..];
        let end = after.find("</pre>").expect("unclosed <pre>");
        let block = after[..end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&");
        shell_parses(&block);
        rest = &after[end..];
    }
}

pub use cudoctor_testkit::shell_parses;

/// A PowerShell fix line: every Windows path in it is inside single quotes (no PowerShell is
/// here to parse it), and its quotes are balanced.
pub fn powershell_is_quoted(cmd: &str) {
    // A `#` that starts a word outside quotes begins PowerShell's comment: what follows is
    // words for the reader (an apostrophe there is no quote).
    let mut quoted = false;
    let mut end = cmd.len();
    for (i, c) in cmd.char_indices() {
        if c == '\'' {
            quoted = !quoted;
        }
        if c == '#' && !quoted && (i == 0 || cmd[..i].ends_with(' ')) {
            end = i;
            break;
        }
    }
    let cmd = &cmd[..end];
    assert_eq!(cmd.matches('\'').count() % 2, 0, "unbalanced quotes: {cmd}");
    let mut quoted = false;
    let mut word_start = true;
    for (i, c) in cmd.char_indices() {
        if c == '\'' {
            quoted = !quoted;
        }
        // A drive path (`C:\`) outside quotes.
        if !quoted && word_start && cmd[i..].len() >= 3 {
            let b = &cmd.as_bytes()[i..];
            assert!(
                !(b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'\\'),
                "an unquoted path in: {cmd}"
            );
        }
        word_start = c == ' ' || c == '(' || c == '=' || c == ',';
    }
}

/// Each `torch==V[+tag]`, `torchvision==V[+tag]`, `torchaudio==V[+tag]` names a release of the
/// knowledge base, and torch's `+tag` (or the index's) a variant of it.
pub fn pins_exist(cmd: &str) {
    let kb = cudoctor_kb::Kb::embedded();
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let index_tag = words
        .iter()
        .position(|w| *w == "--index-url")
        .and_then(|i| words.get(i + 1))
        .and_then(|u| u.strip_prefix("https://download.pytorch.org/whl/"));
    for w in &words {
        let Some((name, version)) = w.split_once("==") else {
            continue;
        };
        let (public, tag) = match version.split_once('+') {
            Some((p, t)) => (p, Some(t)),
            None => (version, None),
        };
        let releases = kb.torch_releases();
        match name {
            "torch" => {
                let r = kb
                    .torch(public)
                    .unwrap_or_else(|| panic!("torch {public} is no release: {cmd}"));
                if let Some(t) = tag.or(index_tag) {
                    assert!(r.variant(t).is_some(), "torch {public} has no {t}: {cmd}");
                }
            }
            "torchvision" => assert!(
                releases
                    .iter()
                    .any(|r| r.torchvision.as_deref() == Some(public)),
                "torchvision {public} is paired with no torch: {cmd}"
            ),
            "torchaudio" => assert!(
                releases
                    .iter()
                    .any(|r| r.torchaudio.as_deref() == Some(public)),
                "torchaudio {public} is paired with no torch: {cmd}"
            ),
            _ => {}
        }
    }
}

/// Writes ROOT/etc/ld.so.conf naming `dirs` and runs `ldconfig -r ROOT`, which writes
/// ROOT/etc/ld.so.cache in the format of the glibc installed here (glibc's ldconfig prefixes
/// paths with ROOT rather than chroot()ing, so this needs no privileges). Returns false when
/// there is no ldconfig that can do it.
pub fn ldconfig(m: &FakeMachine, dirs: &[&str]) -> bool {
    m.file("/etc/ld.so.conf", &format!("{}\n", dirs.join("\n")));
    let ldconfig = ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("ldconfig");
    let ok = Command::new(ldconfig)
        .arg("-r")
        .arg(m.root())
        .output()
        .is_ok_and(|o| o.status.success());
    ok && m.real("/etc/ld.so.cache").is_file()
}

/// The `--format` values `cudoctor <command> -h` offers, in the parser's order (empty for a
/// command without `--format`): "[possible values: text, json, ...]", maybe wrapped.
pub fn offered_formats(command: &[&str]) -> Vec<String> {
    let out = cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(command)
        .arg("-h")
        .output()
        .expect("run cudoctor -h");
    assert!(out.status.success(), "{command:?} -h failed");
    let help = String::from_utf8_lossy(&out.stdout);
    let Some(start) = help.find("--format <FORMAT>") else {
        return Vec::new();
    };
    let rest = &help[start..];
    let values = rest
        .split_once("[possible values: ")
        .and_then(|(_, v)| v.split_once(']'))
        .map(|(v, _)| v)
        .unwrap_or_else(|| panic!("{command:?} -h: --format lists no values:\n{help}"));
    values
        .split(',')
        .map(|v| v.split_whitespace().collect::<String>())
        .collect()
}

/// The CUDA 13 runtime wheel's `libcudart.so.13` under site-packages `sp` (gcc-built, one
/// function: cudaGetDeviceCount).
pub fn cudart13(m: &FakeRoot, sp: &str) {
    gcc(
        m,
        &format!("{sp}/nvidia/cu13/lib/libcudart.so.13"),
        "int cudaGetDeviceCount(int *n) { *n = 1; return 0; }",
        &["-Wl,-soname,libcudart.so.13"],
    );
}

/// torch's `libc10.so` under site-packages `sp` (gcc-built, one function: c10_present).
pub fn libc10(m: &FakeRoot, sp: &str) {
    gcc(
        m,
        &format!("{sp}/torch/lib/libc10.so"),
        "void c10_present(void) {}",
        &["-Wl,-soname,libc10.so"],
    );
}

/// torch's libc10 and its `_C` linking it through `RPATH=$ORIGIN/lib`, as torch wheels do,
/// under site-packages `sp` (gcc-built).
pub fn torch_c_with_c10(m: &FakeRoot, sp: &str) {
    libc10(m, sp);
    let lib = m.real(&format!("{sp}/torch/lib"));
    gcc(
        m,
        &format!("{sp}/torch/_C.cpython-312-x86_64-linux-gnu.so"),
        "extern void c10_present(void); void init(void) { c10_present(); }",
        &[
            &format!("-L{}", lib.display()),
            "-Wl,--no-as-needed",
            "-lc10",
            "-Wl,-rpath,$ORIGIN/lib",
        ],
    );
}

/// The `needed` entry `soname` of the object the loader mapped in its first process whose
/// path ends with `object` (a check JSON report with its snapshot).
pub fn needed_entry(v: &serde_json::Value, object: &str, soname: &str) -> serde_json::Value {
    let objects = v["snapshot"]["loader"]["processes"][0]["objects"]
        .as_array()
        .expect("the loader's objects");
    let o = objects
        .iter()
        .find(|o| o["path"].as_str().unwrap().ends_with(object))
        .unwrap_or_else(|| panic!("{object} not loaded: {objects:#?}"));
    o["needed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == soname)
        .unwrap_or_else(|| panic!("{object} does not need {soname}: {o:#}"))
        .clone()
}

/// An H100 machine with a venv at /opt/venv: torch's `_C` needing libc10 and the CUDA runtime
/// through RPATH, as torch wheels do, and an extension built against another torch (it calls
/// a c10 function this libc10 lacks). Real ELF files built with gcc.
pub fn torch_with_extension() -> FakeMachine {
    const SP: &str = "/opt/venv/lib/python3.12/site-packages";
    let mut m = FakeMachine::h100();
    m.torch("2.11.0+cu130", &[("nvidia-cuda-runtime", "13.0.96")]);
    cudart13(&m, SP);
    libc10(&m, SP);
    let lib = m.real(&format!("{SP}/torch/lib"));
    let cudart = m.real(&format!("{SP}/nvidia/cu13/lib"));
    gcc(
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
    gcc(
        &m,
        &format!("{SP}/my_ext.cpython-312-x86_64-linux-gnu.so"),
        "extern void c10_present(void); extern void _ZN3c104cuda9SetDeviceEi(int); void PyInit_my_ext(void) { c10_present(); _ZN3c104cuda9SetDeviceEi(0); }",
        &[&format!("-L{}", lib.display()), "-Wl,--no-as-needed", "-lc10", "-Wl,-rpath,$ORIGIN/torch/lib"],
    );
    system_libc(&m, "/usr/lib/x86_64-linux-gnu");
    m
}

/// The strings of a JSON array (plan's `changes`); panics on anything else.
pub fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| {
            s.as_str()
                .unwrap_or_else(|| panic!("not a string: {s}"))
                .to_string()
        })
        .collect()
}

/// The text of each step of a fix (`[{"shell": ...}, {"prose": ...}]`), in order.
pub fn step_texts(fix: &serde_json::Value) -> Vec<String> {
    fix.as_array()
        .unwrap_or_else(|| panic!("not a fix: {fix}"))
        .iter()
        .map(|s| {
            s.get("shell")
                .or(s.get("prose"))
                .and_then(|t| t.as_str())
                .unwrap_or_else(|| panic!("fix step {s}"))
                .to_string()
        })
        .collect()
}

/// A line of a JSON report with what varies between builds (the `build` header's commit, date
/// and knowledge-base date) replaced, for snapshots.
pub fn build_redacted(line: &str) -> String {
    for key in ["commit", "built", "knowledge_base"] {
        let prefix = format!("    \"{key}\": \"");
        if line.starts_with(&prefix) {
            let comma = if line.ends_with(',') { "," } else { "" };
            return format!("{prefix}<{key}>\"{comma}");
        }
    }
    line.to_string()
}

/// A venv whose torchvision belongs to another torch (FW002, fixed by `uv pip install ...`),
/// installed by uv, for `check --verify=install`. PATH's `uv` is a script of the test standing
/// for the installer: it records its `VIRTUAL_ENV` in `dir/uv-ran` and runs `uv_body` (`$SP`:
/// the copy's site-packages).
/// The env at `dir/env`, a scratch `dir/tmp` (TMPDIR), a `dir/bin/uv` running `uv_body`.
pub fn fw002_env(dir: &Path, uv_body: &str) -> std::path::PathBuf {
    let env = dir.join("env");
    let sp = env.join("lib/python3.12/site-packages");
    for d in [
        "torch",
        "torch-2.7.1.dist-info",
        "torchvision",
        "torchvision-0.23.0.dist-info",
    ] {
        fs::create_dir_all(sp.join(d)).unwrap();
    }
    fs::create_dir_all(env.join("bin")).unwrap();
    fs::create_dir_all(dir.join("tmp")).unwrap();
    fs::create_dir_all(dir.join("bin")).unwrap();
    fs::write(
        env.join("pyvenv.cfg"),
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n",
    )
    .unwrap();
    symlink("/usr/bin/python3", env.join("bin/python3")).unwrap();
    symlink("python3", env.join("bin/python")).unwrap();
    fs::write(
        sp.join("torch/version.py"),
        "__version__ = '2.7.1+cu126'\ncuda = '12.6'\n",
    )
    .unwrap();
    fs::write(
        sp.join("torch-2.7.1.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.7.1+cu126\n",
    )
    .unwrap();
    fs::write(
        sp.join("torch-2.7.1.dist-info/RECORD"),
        "torch/version.py,,\n",
    )
    .unwrap();
    fs::write(
        sp.join("torchvision-0.23.0.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: torchvision\nVersion: 0.23.0+cu126\nRequires-Dist: torch==2.8.0\n",
    )
    .unwrap();
    fs::write(
        sp.join("torchvision-0.23.0.dist-info/RECORD"),
        "torchvision/__init__.py,,\n",
    )
    .unwrap();
    fs::write(sp.join("torchvision/__init__.py"), "").unwrap();
    for info in ["torch-2.7.1.dist-info", "torchvision-0.23.0.dist-info"] {
        fs::write(sp.join(info).join("INSTALLER"), "uv\n").unwrap();
    }
    let uv = dir.join("bin/uv");
    fs::write(
        &uv,
        format!(
            "#!/bin/sh\necho \"$VIRTUAL_ENV\" > {}/uv-ran\nSP=\"$VIRTUAL_ENV/lib/python3.12/site-packages\"\n{uv_body}\n",
            dir.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&uv, fs::Permissions::from_mode(0o755)).unwrap();
    env
}

/// Runs cudoctor in `dir` with `env` (nothing else inherited) and kills it after `limit`: a
/// command still running then fails the test.
pub fn bounded(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    limit: std::time::Duration,
) -> cudoctor_testkit::Ran {
    let mut cmd = cudoctor_testkit::bare_command(env!("CARGO_BIN_EXE_cudoctor"), args, env);
    cmd.current_dir(dir);
    cudoctor_testkit::run_bounded(cmd, None, limit, &format!("{args:?}"))
}
