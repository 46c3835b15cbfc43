//! `cudoctor libs [PATH..]`: which file every needed library resolves to, found the way glibc's
//! ld.so would, and which symbols nothing provides.

use std::fmt::Write;

use anyhow::bail;
use cudoctor_collect::{kernels, libraries, python};
use cudoctor_ldso::{LoadOptions, Process, ProcessEnv, SymbolCheck};
use cudoctor_snapshot::{LibraryLinks, LoaderFacts, ProcessLinks};

use crate::cli::{Format, LibsArgs};
use crate::output::host;
use crate::Outcome;

pub fn run(args: &LibsArgs) -> anyhow::Result<Outcome> {
    crate::output::text_json_or_markdown(args.format)?;
    let host = host(&args.machine)?;
    crate::output::check_pythons(&host, &args.python)?;
    let facts = if args.paths.is_empty() {
        let envs = python::collect(&host, &args.python);
        if !envs.iter().any(|e| e.torch.is_some()) {
            bail!("no Python environment with torch found; name the libraries to load, or use --python");
        }
        libraries::collect(&host, &envs, &kernels::candidates(&host, &envs))
    } else {
        let mode = if args.all_symbols {
            SymbolCheck::All
        } else {
            SymbolCheck::Requested
        };
        let mut process = Process::new(ProcessEnv::new(host.root()).with_vars(host.env().iter()));
        let mut errors = Vec::new();
        for p in &args.paths {
            let abs = if p.starts_with('/') {
                p.clone()
            } else {
                std::env::current_dir()?
                    .join(p)
                    .to_string_lossy()
                    .into_owned()
            };
            crate::output::check_input_path(p, &host.fs_path(&abs))?;
            // One file alone is resolved as `ldd FILE` does: as the process's main object.
            let loaded = if args.paths.len() == 1 {
                process.load_executable(&abs, LoadOptions::check_symbols(mode))
            } else {
                process.load(&abs, LoadOptions::check_symbols(mode))
            };
            if let Err(e) = loaded {
                errors.push(format!("{p}: {e}"));
            }
        }
        LoaderFacts {
            processes: vec![ProcessLinks {
                env_prefix: String::new(),
                objects: libraries::links(&process.report_without_loader()),
                shadowed: Vec::new(),
            }],
            cache_copies: Vec::new(),
            errors,
            notes: Vec::new(),
        }
    };
    let objects: Vec<&LibraryLinks> = facts.processes.iter().flat_map(|p| &p.objects).collect();
    let problems = objects
        .iter()
        .any(|o| !o.unresolved_symbols.is_empty() || o.needed.iter().any(|n| n.via == "missing"))
        || !facts.errors.is_empty();
    match args.format {
        Format::Json => {
            let doc = serde_json::json!({ "objects": objects, "errors": facts.errors });
            crate::outln!("{}", serde_json::to_string_pretty(&doc)?);
        }
        _ => crate::out!("{}", text(&facts)),
    }
    if objects.is_empty() && !facts.errors.is_empty() {
        bail!("nothing could be loaded: {}", facts.errors.join("; "));
    }
    Ok(if problems {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}

fn text(facts: &LoaderFacts) -> String {
    let mut out = String::new();
    for p in &facts.processes {
        if !p.env_prefix.is_empty() {
            let _ = writeln!(out, "# import torch in {}", p.env_prefix);
        }
        for o in &p.objects {
            let _ = writeln!(out, "{}", o.path);
            for n in &o.needed {
                let target = n.resolved.as_deref().unwrap_or("NOT FOUND");
                let _ = writeln!(out, "    {:28} {:15} {target}", n.name, n.via);
            }
            if !o.unresolved_symbols.is_empty() {
                let _ = writeln!(
                    out,
                    "    unresolved symbols: {}",
                    o.unresolved_symbols.join(" ")
                );
            }
        }
        for s in &p.shadowed {
            let _ = writeln!(
                out,
                "LD_LIBRARY_PATH shadows {} for {}: {} instead of {}",
                s.name,
                s.object,
                s.from_ld_library_path,
                s.otherwise.as_deref().unwrap_or("nothing")
            );
        }
    }
    for e in &facts.errors {
        let _ = writeln!(out, "error: {e}");
    }
    out
}
