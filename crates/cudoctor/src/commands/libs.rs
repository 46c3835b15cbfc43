//! `cudoctor libs [PATH..]`: which file every needed library resolves to, found the way glibc's
//! ld.so would, and which symbols nothing provides.

use std::fmt::Write;

use anyhow::bail;
use cudoctor_collect::{kernels, libraries, python};
use cudoctor_ldso::{LoadOptions, Process, ProcessEnv, SymbolCheck};
use cudoctor_snapshot::{
    Framework, LibraryLinks, LoadStage, LoaderFacts, OpenedBy, Opener, ProcessLinks, RuntimeDir,
    VersionSource,
};

use crate::cli::{Format, LibsArgs};
use crate::output::host;
use crate::Outcome;

pub fn run(args: &LibsArgs) -> anyhow::Result<Outcome> {
    crate::output::text_json_or_markdown(args.format)?;
    let host = host(&args.machine)?;
    let pythons = crate::output::check_pythons(&host, &args.python)?;
    let mut frameworks: Vec<(String, ProcessLinks)> = Vec::new();
    let facts = if args.paths.is_empty() {
        let envs = python::collect(&host, &pythons);
        // Every framework build besides torch: what its shipped libraries need.
        for env in &envs {
            for b in env
                .frameworks
                .iter()
                .filter(|b| b.framework != Framework::Torch && !b.ships.is_empty())
            {
                let label = format!(
                    "{} {} ({}) in {}",
                    b.framework.name(),
                    b.version,
                    b.package,
                    env.prefix
                );
                frameworks.push((label, libraries::framework_links(&host, b)));
            }
        }
        if !envs.iter().any(|e| e.torch.is_some()) && frameworks.is_empty() {
            bail!("no Python environment with torch or another CUDA framework found; name the libraries to load, or use --python");
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
            let abs = crate::output::absolute_machine_path(p)?;
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
                runtime_dirs: Vec::new(),
            }],
            cache_copies: Vec::new(),
            errors,
            notes: Vec::new(),
        }
    };
    let objects: Vec<&LibraryLinks> = facts.processes.iter().flat_map(|p| &p.objects).collect();
    let framework_objects: Vec<&LibraryLinks> =
        frameworks.iter().flat_map(|(_, p)| shown(p)).collect();
    let problems =
        objects.iter().chain(framework_objects.iter()).any(|o| {
            !o.unresolved_symbols.is_empty() || o.needed.iter().any(|n| n.via == "missing")
        }) || !facts.errors.is_empty();
    match args.format {
        Format::Json => {
            let runtime_dirs: Vec<&RuntimeDir> = facts
                .processes
                .iter()
                .flat_map(|p| &p.runtime_dirs)
                .collect();
            let fw: Vec<serde_json::Value> = frameworks
                .iter()
                .map(|(label, p)| serde_json::json!({ "framework": label, "objects": shown(p) }))
                .collect();
            let doc = serde_json::json!({
                "objects": objects,
                "runtime_dirs": runtime_dirs,
                "frameworks": fw,
                "errors": facts.errors,
            });
            crate::outln!("{}", serde_json::to_string_pretty(&doc)?);
        }
        Format::Markdown => {
            crate::out!("{}", markdown(&facts));
            for (label, p) in &frameworks {
                let objs = shown(p);
                crate::out!("## {}\n\n", label.replace('|', "\\|"));
                if objs.is_empty() {
                    crate::out!("None of its shipped libraries links a CUDA library (it opens them at run time).\n\n");
                } else {
                    crate::out!("```\n{}```\n\n", objects_text(&objs));
                }
            }
        }
        _ => {
            crate::out!("{}", text(&facts));
            for (label, p) in &frameworks {
                let objs = shown(p);
                if objs.is_empty() {
                    crate::out!("# {label}: none of its shipped libraries links a CUDA library (it opens them at run time)\n");
                } else {
                    crate::out!("# {label}: its shipped libraries\n{}", objects_text(&objs));
                }
            }
        }
    }
    if objects.is_empty() && framework_objects.is_empty() && !facts.errors.is_empty() {
        bail!("nothing could be loaded: {}", facts.errors.join("; "));
    }
    Ok(if problems {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}

/// The objects of one process grouped by the stage that maps them, in the order a workload
/// reaches the stages; stages with nothing new are left out.
fn by_stage(p: &ProcessLinks) -> Vec<(LoadStage, Vec<&LibraryLinks>, Vec<&RuntimeDir>)> {
    LoadStage::ALL
        .into_iter()
        .map(|stage| {
            (
                stage,
                p.objects
                    .iter()
                    .filter(|o| o.stage == stage)
                    .collect::<Vec<_>>(),
                p.runtime_dirs
                    .iter()
                    .filter(|d| d.stage == stage)
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, o, d)| !o.is_empty() || !d.is_empty())
        .collect()
}

/// Who opened an object at run time, in words: `dlopen("libcudnn_graph.so.9") by
/// libcudnn.so.9`; None for what the loader brought in as a dependency.
fn opener(o: &LibraryLinks) -> Option<String> {
    let by = o.opened_by.as_ref()?;
    let what = match by.opener {
        Opener::Interpreter => return None,
        Opener::TorchGlobalDeps => "loaded with RTLD_GLOBAL by torch/__init__.py".to_string(),
        Opener::TorchPreload => "preloaded by path by torch/__init__.py".to_string(),
        Opener::PythonImport => format!("imported ({})", by.by),
        Opener::PackageLoader => format!("loaded by path by {}'s own loader", by.by),
        Opener::LibraryDlopen => format!(
            "dlopen(\"{}\") at run time by {}",
            o.soname.as_deref().unwrap_or(&o.path),
            by.by
        ),
    };
    Some(format!("{what}{}", conditions(by)))
}

fn conditions(by: &OpenedBy) -> &'static str {
    match (by.optional, by.conditional) {
        (true, _) => " (optional)",
        (false, true) => " (only when the work needs it)",
        _ => "",
    }
}

fn version(o: &LibraryLinks) -> Option<String> {
    o.version.as_ref().map(|v| match &v.from {
        VersionSource::FileName => format!("{} (file name)", v.version),
        VersionSource::Wheel { name } => format!("{} (wheel {name})", v.version),
    })
}

/// The objects of a framework's process worth showing: those that need a CUDA library or
/// are one (the system's libc and libstdc++ are not the question).
fn shown(p: &ProcessLinks) -> Vec<&LibraryLinks> {
    let cuda = |name: &str| cudoctor_ldso::cuda_library(name).is_some();
    p.objects
        .iter()
        .filter(|o| {
            o.needed.iter().any(|n| cuda(&n.name)) || cuda(o.soname.as_deref().unwrap_or(&o.path))
        })
        .collect()
}

fn objects_text(objects: &[&LibraryLinks]) -> String {
    use cudoctor_types::inert::line;
    let mut out = String::new();
    for o in objects {
        let _ = writeln!(
            out,
            "{}",
            line(&display_path(&o.path, o.real_path.as_deref()))
        );
        if let Some(by) = opener(o) {
            let _ = writeln!(out, "    opened: {}", line(&by));
        }
        if let Some(v) = version(o) {
            let _ = writeln!(out, "    version: {}", line(&v));
        }
        for n in &o.needed {
            let target = n.resolved.as_deref().map_or("NOT FOUND".into(), |r| {
                display_path(r, n.real_path.as_deref())
            });
            let _ = writeln!(
                out,
                "    {:28} {:15} {}",
                line(&n.name),
                n.via,
                line(&target)
            );
        }
        if !o.unresolved_symbols.is_empty() {
            let _ = writeln!(
                out,
                "    unresolved symbols: {}",
                line(&o.unresolved_symbols.join(" "))
            );
        }
    }
    out
}

/// The path ld.so records keeps the `..` of `$ORIGIN/../../nvidia/...`; shown without it when
/// the file's real path proves the directory is the textual one (no symlinked component), else
/// as ld.so names it. JSON keeps both names.
fn display_path<'a>(path: &'a str, real_path: Option<&str>) -> std::borrow::Cow<'a, str> {
    if !path.split('/').any(|c| c == ".." || c == ".") {
        return path.into();
    }
    let normal = cudoctor_collect::host::normalise(path);
    let dir = |p: &str| p.rsplit_once('/').map(|(d, _)| d.to_string());
    match real_path {
        Some(real) if dir(real) == dir(&normal) => normal.into(),
        _ => path.into(),
    }
}

fn text(facts: &LoaderFacts) -> String {
    use cudoctor_types::inert::line;
    let mut out = String::new();
    for p in &facts.processes {
        if !p.env_prefix.is_empty() {
            let _ = writeln!(out, "# import torch in {}", line(&p.env_prefix));
        }
        let staged = p.objects.iter().any(|o| !o.stage.is_import()) || !p.runtime_dirs.is_empty();
        for (stage, objects, dirs) in by_stage(p) {
            if staged {
                let _ = writeln!(out, "## {}: {}", stage.as_str(), stage.describe());
            }
            out.push_str(&objects_text(&objects));
            for d in dirs {
                let _ = writeln!(out, "{}/  (a location: {})", line(&d.path), line(&d.what));
            }
        }
        for s in &p.shadowed {
            let _ = writeln!(
                out,
                "LD_LIBRARY_PATH shadows {} for {}: {} instead of {}",
                line(&s.name),
                line(&s.object),
                line(&s.from_ld_library_path),
                line(s.otherwise.as_deref().unwrap_or("nothing"))
            );
        }
    }
    for e in &facts.errors {
        let _ = writeln!(out, "error: {}", line(e));
    }
    out
}

/// For pasting into an issue: one table per stage.
fn markdown(facts: &LoaderFacts) -> String {
    use cudoctor_types::inert::markdown_code;
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::new();
    for p in &facts.processes {
        let title = if p.env_prefix.is_empty() {
            "Libraries".to_string()
        } else {
            format!("`import torch` in `{}`", p.env_prefix)
        };
        let _ = writeln!(out, "## {title}\n");
        for (stage, objects, dirs) in by_stage(p) {
            let _ = writeln!(out, "### {} ({})\n", stage.as_str(), stage.describe());
            let _ = writeln!(out, "| library | version | opened | missing |");
            let _ = writeln!(out, "| --- | --- | --- | --- |");
            for o in objects {
                let missing: Vec<&str> = o
                    .needed
                    .iter()
                    .filter(|n| n.resolved.is_none())
                    .map(|n| n.name.as_str())
                    .collect();
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} |",
                    cell(&display_path(&o.path, o.real_path.as_deref())),
                    cell(&version(o).unwrap_or_default()),
                    cell(&opener(o).unwrap_or_else(|| match &o.loaded_by {
                        Some(l) => format!("needed by `{}`", l.rsplit('/').next().unwrap_or(l)),
                        None => String::new(),
                    })),
                    cell(&missing.join(", "))
                );
            }
            for d in dirs {
                let _ = writeln!(out, "| `{}/` | | {} | |", cell(&d.path), cell(&d.what));
            }
            out.push('\n');
        }
        for s in &p.shadowed {
            let _ = writeln!(
                out,
                "- LD_LIBRARY_PATH shadows {} for {}: {} instead of {}",
                markdown_code(&s.name),
                markdown_code(&s.object),
                markdown_code(&s.from_ld_library_path),
                markdown_code(s.otherwise.as_deref().unwrap_or("nothing"))
            );
        }
    }
    for e in &facts.errors {
        let _ = writeln!(out, "- error: {}", cudoctor_types::inert::markdown(e));
    }
    out
}
