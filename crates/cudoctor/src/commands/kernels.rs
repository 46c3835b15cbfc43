//! `cudoctor kernels [PATH..]`: the GPU architectures each CUDA library carries, and for each
//! GPU (present, or named with --gpu) whether it runs natively, through PTX JIT, or not at all.
//! The machine is read through `cudoctor_collect::collect` narrowed to the kernel images (of
//! the environments check reads, or of the paths named); `cudoctor_analyse::kernels` judges.

use anyhow::bail;
use cudoctor_collect::{Options, Part, Scope};
use cudoctor_render::render_kernels_text;

use crate::cli::{IssueFormat, KernelsArgs};
use crate::output::{host, knowledge_base};
use crate::Outcome;

pub fn run(args: &KernelsArgs) -> anyhow::Result<Outcome> {
    let host = host(&args.machine)?;
    let pythons = crate::output::check_pythons(&host, &args.python)?;
    let kb = knowledge_base(&args.machine)?;
    let mut paths = Vec::new();
    for p in &args.paths {
        let abs = crate::output::absolute_machine_path(p)?;
        if !host.exists(&abs) {
            bail!("{p}: no such file or directory");
        }
        crate::output::check_input_path(p, &host.fs_path(&abs))?;
        paths.push(abs);
    }
    let mut parts = vec![Part::KernelImages];
    if paths.is_empty() {
        parts.extend([Part::Python, Part::Discovery]);
    }
    if args.gpu.is_empty() {
        parts.push(Part::Driver);
    }
    // The CUDA binaries outside the site directories' packages too: torch's extension cache,
    // editable source trees, PYTHONPATH, the project in the current directory.
    let project = crate::output::project_of_cwd(&host, &args.machine);
    let options = Options {
        python: pythons,
        project,
        scope: Scope::only(&parts).with_paths(paths),
        ..Default::default()
    };
    let snapshot = cudoctor_collect::collect(&host, &options, env!("CARGO_PKG_VERSION"));
    if args.paths.is_empty() && snapshot.python_envs.is_empty() {
        bail!("no Python environment found; name libraries or directories to scan");
    }
    let report = cudoctor_analyse::kernels::report(&snapshot, &kb, &args.gpu)
        .map_err(|e| anyhow::anyhow!("--gpu: {e}"))?;
    let failing = cudoctor_analyse::kernels::failing(&report);
    match args.format {
        IssueFormat::Json => crate::outln!(
            "{}",
            crate::build_info::with_build_header(&serde_json::to_string_pretty(&report)?)
        ),
        IssueFormat::Text => crate::out!("{}", render_kernels_text(&report)),
        IssueFormat::Markdown => {
            crate::out!("{}", cudoctor_render::render_kernels_markdown(&report))
        }
    }
    // Inputs named on the command line of which none could be read: nothing was judged, and
    // the report (which names each error) must not pass for a healthy one.
    let unreadable = !args.paths.is_empty()
        && !report.libraries.is_empty()
        && report.libraries.iter().all(|l| l.error.is_some());
    Ok(if failing || unreadable {
        Outcome::ProblemsFound
    } else {
        Outcome::Healthy
    })
}
