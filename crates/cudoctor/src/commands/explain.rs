//! `cudoctor explain [FILE|-]`: the cause of an error message or log, checked against this
//! machine (or a saved snapshot), with the fix.

use std::fs::File;
use std::io::{self, BufReader, IsTerminal};

use anyhow::{bail, Context as _};
use cudoctor_collect::Options;
use cudoctor_explain::{GpuFact, MachineFacts, Platform, ToolkitFact};
use cudoctor_snapshot::Snapshot;

use crate::cli::{ExplainArgs, Format};
use crate::output::{host, knowledge_base, read_snapshot};
use crate::Outcome;

pub fn run(args: &ExplainArgs) -> anyhow::Result<Outcome> {
    crate::output::text_json_or_markdown(args.format)?;
    let engine = match cudoctor_explain::builtin_engine() {
        Ok(e) => e,
        Err(e) => bail!("the built-in signature database is invalid: {e}"),
    };
    let kb = knowledge_base(&args.machine)?;
    let facts = if args.no_machine {
        None
    } else {
        let snap = match &args.snapshot {
            Some(p) => read_snapshot(p)?,
            None => cudoctor_collect::collect(
                &host(&args.machine)?,
                &Options::default(),
                env!("CARGO_PKG_VERSION"),
            ),
        };
        Some(machine_facts(&snap))
    };
    let explanation = if args.input == "-" {
        if io::stdin().is_terminal() {
            eprintln!("Paste the error message or log, then press Ctrl-D (or give a file: cudoctor explain FILE).");
        }
        engine.explain_with_kb(io::stdin().lock(), facts.as_ref(), &kb)
    } else {
        refuse_non_log(&args.input)?;
        let f = File::open(&args.input).with_context(|| format!("cannot read {}", args.input))?;
        engine.explain_with_kb(BufReader::with_capacity(1 << 16, f), facts.as_ref(), &kb)
    };
    // Input that could not be read at all is an error, not an empty log.
    if let (0, Some(e)) = (explanation.stats.lines, &explanation.stats.read_error) {
        bail!("cannot read {}: {e}", input_name(&args.input));
    }
    match args.format {
        Format::Json => crate::out!("{}", cudoctor_explain::render::to_json(&explanation)),
        _ => crate::out!("{}", cudoctor_explain::render::to_text(&explanation)),
    }
    Ok(if explanation.is_known() {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}

fn input_name(input: &str) -> &str {
    if input == "-" {
        "standard input"
    } else {
        input
    }
}

/// A log is a regular file or a pipe (`<(command)`); a directory or a device (`/dev/zero`
/// never ends) is refused with a clear message before anything is read.
fn refuse_non_log(input: &str) -> anyhow::Result<()> {
    let meta = std::fs::metadata(input).with_context(|| format!("cannot read {input}"))?;
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

/// The facts the explain engine cross-checks against, from a snapshot.
pub fn machine_facts(s: &Snapshot) -> MachineFacts {
    let env = s
        .python_envs
        .iter()
        .find(|e| e.torch.is_some())
        .or(s.primary_env());
    let torch = env.and_then(|e| e.torch.as_ref());
    let torch_arch_list = torch.and_then(|t| {
        let lib = s.kernel_images.as_ref()?.torch_cuda_libraries(t).next()?;
        Some(lib.sass.iter().chain(&lib.ptx).cloned().collect())
    });
    let platform = if s.platform.wsl {
        Platform::Wsl
    } else if s.platform.container.is_some() {
        Platform::Container
    } else if s.host.os == "windows" {
        Platform::Windows
    } else if s.host.os == "linux" {
        Platform::Linux
    } else {
        Platform::Unknown
    };
    MachineFacts {
        platform,
        driver_version: s.driver.version.as_ref().map(|v| v.value.clone()),
        driver_max_cuda: s.driver.max_cuda.as_ref().map(|v| v.value.clone()),
        gpus: s
            .driver
            .gpus
            .iter()
            .map(|g| GpuFact {
                name: g.name.clone(),
                compute_capability: g.compute_capability.clone(),
                memory_mib: g.memory_total_mib,
            })
            .collect(),
        torch_version: torch.map(|t| t.version.clone()),
        torch_cuda: torch.and_then(|t| t.cuda.clone()),
        torch_arch_list,
        nvcc_version: s
            .toolkit
            .nvcc_on_path
            .as_ref()
            .and_then(|n| n.version.clone()),
        cuda_home: s.env.get("CUDA_HOME").or(s.env.get("CUDA_PATH")).cloned(),
        cuda_visible_devices: s.env.get("CUDA_VISIBLE_DEVICES").cloned(),
        install_target: env
            .filter(|e| e.torch.is_some())
            .map(cudoctor_analyse::context::target_env),
        toolkits: s
            .toolkit
            .toolkits
            .iter()
            .map(|t| ToolkitFact {
                version: t.version.clone(),
                root: t.root.clone(),
            })
            .collect(),
    }
}
