//! `cudoctor explain [FILE|-]`: the cause of an error message or log, confirmed against this
//! machine (or a saved snapshot) by the rules `check` runs, with `check`'s fix.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal};

use anyhow::{bail, Context as _};
use cudoctor_collect::Options;

use crate::cli::{ExplainArgs, IssueFormat};
use crate::output::{host, knowledge_base, read_snapshot};
use crate::Outcome;

pub fn run(args: &ExplainArgs) -> anyhow::Result<Outcome> {
    let kb = knowledge_base(&args.machine)?;
    // The same machine `check` would judge: --snapshot, or collected with --python, then --gpu.
    let snapshot = if args.no_machine {
        None
    } else {
        let snap = match &args.snapshot {
            Some(p) => read_snapshot(p)?,
            None => {
                let host = host(&args.machine)?;
                let pythons = crate::output::check_pythons(&host, &args.python)?;
                let options = Options {
                    python: pythons,
                    ..Default::default()
                };
                cudoctor_collect::collect(&host, &options, env!("CARGO_PKG_VERSION"))
            }
        };
        Some(
            cudoctor_analyse::what_if::with_gpus(snap, &args.gpu, &kb)
                .map_err(|e| anyhow::anyhow!("--gpu: {e}"))?,
        )
    };
    // One knowledge base for the message's own fixes, the rules and the confirmation (a
    // user's `--kb` included); the fixes' commands for the `--python` environment, if one.
    let db = cudoctor_explain::SignatureDb::from_toml(cudoctor_explain::signatures::BUILTIN_TOML)
        .map_err(|e| anyhow::anyhow!("the built-in signature database is invalid: {e}"))?;
    let target = snapshot
        .as_ref()
        .and_then(cudoctor_analyse::context::named_target_env);
    let engine = &cudoctor_explain::Engine::with_kb(db, kb.clone()).for_env(target);
    let mut explanation = if args.input == "-" {
        if io::stdin().is_terminal() {
            crate::output::note("Paste the error message or log, then press Ctrl-D (or give a file: cudoctor explain FILE).\n");
        }
        engine.explain(io::stdin().lock())
    } else {
        refuse_non_log(&args.input)?;
        let f = open_log(&args.input)?;
        engine.explain(BufReader::with_capacity(1 << 16, f))
    };
    let mut snapshot = snapshot;
    if let (Some(snap), None) = (snapshot.as_mut(), &args.snapshot) {
        // The binaries the log names are judged with the rest of this machine (a JIT-built
        // extension, a library of the traceback), by the same rules.
        let host = host(&args.machine)?;
        let named: Vec<(String, bool)> = explanation
            .named_binaries
            .iter()
            .map(|b| (b.path.clone(), b.directory))
            .collect();
        let images = cudoctor_collect::kernels::named_in_log(&host, &named);
        if !images.is_empty() {
            let all = snap.kernel_images.get_or_insert_with(Default::default);
            for lib in images {
                if !all.libraries.iter().any(|l| l.path == lib.path) {
                    all.libraries.push(lib);
                }
            }
        }
    }
    let mut verified = None;
    if let Some(snap) = &snapshot {
        let findings = cudoctor_analyse::analyse(snap, &kb);
        cudoctor_analyse::confirm::confirm(&mut explanation, engine, snap, &findings);
        verified = args.verify.map(|mode| {
            let live = args.snapshot.is_none() && args.machine.root.is_none();
            crate::commands::verify::verify_chosen(
                snap,
                &findings,
                &confirming(&explanation, &findings),
                &kb,
                mode,
                live,
            )
        });
    }
    // Input that could not be read at all is an error, not an empty log.
    if let (0, Some(e)) = (explanation.stats.lines, &explanation.stats.read_error) {
        bail!("cannot read {}: {e}", input_name(&args.input));
    }
    // Binary data (a core dump, an archive, 200 MB of NULs) is bad input, not a healthy log.
    let stats = &explanation.stats;
    if !explanation.is_known() && stats.looks_binary() {
        bail!(
            "{} is binary data, not a text log ({} bytes, {} of {} lines hold NUL bytes): give the log file itself, or paste the error text",
            input_name(&args.input),
            stats.bytes,
            stats.binary_lines,
            stats.lines
        );
    }
    match args.format {
        IssueFormat::Json => {
            let mut json = cudoctor_explain::render::to_json(&explanation);
            if let Some(v) = &verified {
                json = crate::commands::verify::with_json_list(&json, "verify", v);
            }
            crate::out!("{}", crate::build_info::with_build_header(&json))
        }
        IssueFormat::Text => crate::out!("{}", cudoctor_render::render_explain_text(&explanation)),
        IssueFormat::Markdown => {
            crate::out!("{}", cudoctor_render::render_explain_markdown(&explanation))
        }
    }
    if let (Some(v), false) = (&verified, args.format == IssueFormat::Json) {
        crate::out!("\n{}", cudoctor_render::render_verify_text(v));
        if !explanation.fix.is_empty() && v.is_empty() {
            crate::out!("  the fix above comes from the message alone: this machine did not confirm the cause with a finding whose fix could be verified\n");
        }
    }
    Ok(if explanation.is_known() {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}

/// The findings whose fixes explain printed: those that confirm the cause (the check's own
/// findings, as confirm keeps them), each replaced by the root it follows from (a
/// consequence's fix is its root's).
fn confirming(
    e: &cudoctor_explain::Explanation,
    findings: &[cudoctor_analyse::Finding],
) -> Vec<cudoctor_analyse::Finding> {
    let Some(m) = e
        .machine
        .as_ref()
        .filter(|m| m.verdict == cudoctor_explain::Verdict::Consistent)
    else {
        return Vec::new();
    };
    let by_id = |id: &str| findings.iter().find(|f| f.id == id);
    let mut out: Vec<cudoctor_analyse::Finding> = Vec::new();
    for f in &m.findings {
        let root = f.caused_by_id.as_deref().and_then(by_id).unwrap_or(f);
        if !out.iter().any(|o| o.id == root.id) {
            out.push(root.clone());
        }
    }
    out
}

fn input_name(input: &str) -> &str {
    if input == "-" {
        "standard input"
    } else {
        input
    }
}

/// How long opening a named pipe may wait for a program to open its other end.
const FIFO_WRITER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Opens the log. Opening a named pipe waits until a program opens it for writing (as
/// `<(command)` has already done): when none does in [`FIFO_WRITER_WAIT`], that is said instead
/// of waiting for ever. Once open, a pipe is read until its writer ends, as standard input is.
fn open_log(input: &str) -> anyhow::Result<File> {
    let path = cudoctor_types::os_text::to_path(input);
    let (sent, opened) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sent.send(File::open(path));
    });
    match opened.recv_timeout(FIFO_WRITER_WAIT) {
        Ok(f) => f.with_context(|| format!("cannot read {input}")),
        Err(_) => bail!(
            "{input} is a named pipe that no program opened for writing in {} s: start the program that writes the log into it, or give the log file itself",
            FIFO_WRITER_WAIT.as_secs()
        ),
    }
}

/// A log is a regular file or a pipe (`<(command)`); a directory or a device (`/dev/zero`
/// never ends) is refused with a clear message before anything is read.
fn refuse_non_log(input: &str) -> anyhow::Result<()> {
    let meta = std::fs::metadata(cudoctor_types::os_text::to_path(input))
        .with_context(|| format!("cannot read {input}"))?;
    let kind = meta.file_type();
    if kind.is_dir() {
        bail!("{input} is a directory, not a log file: give one log file, or - to read standard input");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_block_device() || kind.is_char_device() || kind.is_socket() {
            bail!("{input} is a device or socket, not a log file: give one log file, or - to read standard input");
        }
    }
    Ok(())
}
