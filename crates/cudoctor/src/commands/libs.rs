//! `cudoctor libs [PATH..]`: which file every needed library resolves to, found the way glibc's
//! ld.so would, and which symbols nothing provides.

use anyhow::bail;
use cudoctor_collect::{discovery, libraries, python};
use cudoctor_ldso::{LoadOptions, Process, ProcessEnv, SymbolCheck};
use cudoctor_render::{render_libs_markdown, render_libs_text, FrameworkLibs};
use cudoctor_snapshot::{Framework, LibraryLinks, LoaderFacts, ProcessLinks, RuntimeDir};

use crate::cli::{IssueFormat, LibsArgs};
use crate::output::host;
use crate::Outcome;

pub fn run(args: &LibsArgs) -> anyhow::Result<Outcome> {
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
        // The CUDA binaries outside the site directories' packages too (torch's extension
        // cache, editable source trees, PYTHONPATH, the project in the current directory),
        // loaded by the environment whose code runs them, as check loads them.
        let project = if args.machine.root.is_none() {
            std::env::current_dir().ok().and_then(|cwd| {
                discovery::project_of_cwd(&host, &cudoctor_types::os_text::from_path(&cwd))
            })
        } else {
            None
        };
        let found = discovery::collect(&host, &envs, project.as_ref());
        libraries::collect_with_discovery(&host, &envs, &found)
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
    let shown: Vec<FrameworkLibs> = frameworks
        .iter()
        .map(|(label, p)| FrameworkLibs {
            label: label.clone(),
            objects: libraries::cuda_objects(p),
        })
        .collect();
    let framework_objects: Vec<&LibraryLinks> = shown
        .iter()
        .flat_map(|f| f.objects.iter().copied())
        .collect();
    // A missing optional library (torchaudio's libsox) and the symbols it would provide leave
    // the import working, as check's LIB001 says: no problem for the exit status.
    // The driver's entry points (cuInit, nvmlInit) are the driver's to provide when CUDA
    // starts, unless its library is loaded here and still lacks them (check's LIB004 says so).
    let driver_loaded = objects.iter().chain(framework_objects.iter()).any(|o| {
        cudoctor_ldso::cuda_library(&o.path).is_some_and(|l| l.family.is_driver_library())
    });
    let later = |s: &str| !driver_loaded && cudoctor_ldso::SymbolProvider::of(s).is_driver();
    let problems = objects
        .iter()
        .chain(framework_objects.iter())
        .any(|o| o.fails_to_load_unless(&later))
        || !facts.errors.is_empty();
    match args.format {
        IssueFormat::Json => {
            let runtime_dirs: Vec<&RuntimeDir> = facts
                .processes
                .iter()
                .flat_map(|p| &p.runtime_dirs)
                .collect();
            let fw: Vec<serde_json::Value> = shown
                .iter()
                .map(|f| serde_json::json!({ "framework": f.label, "objects": f.objects }))
                .collect();
            let doc = serde_json::json!({
                "objects": objects,
                "runtime_dirs": runtime_dirs,
                "frameworks": fw,
                "errors": facts.errors,
            });
            crate::outln!(
                "{}",
                crate::build_info::with_build_header(&serde_json::to_string_pretty(&doc)?)
            );
        }
        IssueFormat::Markdown => crate::out!("{}", render_libs_markdown(&facts, &shown)),
        IssueFormat::Text => crate::out!("{}", render_libs_text(&facts, &shown)),
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
