//! `cudoctor libs [PATH..]`: which file every needed library resolves to, found the way glibc's
//! ld.so would (a Windows Python's `import torch` the way Windows' DLL search does), and which
//! symbols nothing provides. The machine is read through `cudoctor_collect::collect` narrowed
//! to the loads (of the environments check reads, or of the paths named);
//! `cudoctor_analyse::libs` makes the report.

use anyhow::bail;
use cudoctor_collect::{Options, Part, Scope};
use cudoctor_render::{render_libs_json, render_libs_report_markdown, render_libs_report_text};

use crate::cli::{IssueFormat, LibsArgs};
use crate::output::host;
use crate::Outcome;

pub fn run(args: &LibsArgs) -> anyhow::Result<Outcome> {
    let host = host(&args.machine)?;
    let pythons = crate::output::check_pythons(&host, &args.python)?;
    // Each path as the loader reads it, and as the user typed it (for the messages).
    let mut paths: Vec<(String, &String)> = Vec::new();
    for p in &args.paths {
        let abs = crate::output::absolute_machine_path(p)?;
        crate::output::check_input_path(p, &host.fs_path(&abs))?;
        paths.push((abs, p));
    }
    let parts: &[Part] = if paths.is_empty() {
        // The CUDA binaries outside the site directories' packages too (torch's extension
        // cache, editable source trees, PYTHONPATH, the project in the current directory),
        // loaded by the environment whose code runs them, as check loads them.
        &[
            Part::Python,
            Part::Discovery,
            Part::Loader,
            Part::FrameworkLinks,
            Part::Windows,
        ]
    } else {
        &[Part::Loader]
    };
    let mut scope =
        Scope::only(parts).with_paths(paths.iter().map(|(abs, _)| abs.clone()).collect());
    scope.all_symbols = args.all_symbols;
    let options = Options {
        python: pythons,
        project: crate::output::project_of_cwd(&host, &args.machine),
        scope,
        ..Default::default()
    };
    let mut snapshot = cudoctor_collect::collect(&host, &options, env!("CARGO_PKG_VERSION"));
    if paths.is_empty()
        && !snapshot.python_envs.iter().any(|e| e.torch.is_some())
        && snapshot.framework_links.is_empty()
    {
        bail!("no Python environment with torch or another CUDA framework found; name the libraries to load, or use --python");
    }
    // A load's error names the path as the user typed it.
    if let Some(loader) = &mut snapshot.loader {
        for e in &mut loader.errors {
            if let Some((abs, p)) = paths
                .iter()
                .find(|(abs, _)| e.starts_with(&format!("{abs}: ")))
            {
                *e = format!("{p}{}", &e[abs.len()..]);
            }
        }
    }
    let report = cudoctor_analyse::libs::report(&snapshot);
    match args.format {
        IssueFormat::Json => crate::outln!(
            "{}",
            crate::build_info::with_build_header(&serde_json::to_string_pretty(
                &render_libs_json(&report)
            )?)
        ),
        IssueFormat::Markdown => crate::out!("{}", render_libs_report_markdown(&report)),
        IssueFormat::Text => crate::out!("{}", render_libs_report_text(&report)),
    }
    if report.nothing_loaded() {
        bail!(
            "nothing could be loaded: {}",
            report.loader.errors.join("; ")
        );
    }
    Ok(if report.problems {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}
