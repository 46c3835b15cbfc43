//! The `cudoctor` binary: parses the command line and hands off to a library crate. Exit status:
//! 0 healthy, 1 problems found, 2 usage or internal error.

mod build_info;
mod cli;
mod commands;
mod output;
mod progress;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

/// What a command concluded, mapped to the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Healthy,
    ProblemsFound,
}

fn main() -> ExitCode {
    if let Some(code) = answer_as_driver_probe() {
        return code;
    }
    output::ensure_standard_descriptors();
    cudoctor_collect::timings::mark_start();
    cudoctor_collect::allocator::bound_allocator_caches();
    cudoctor_collect::mapped_reads::guard_mapped_reads();
    let cli = Cli::parse();
    cudoctor_render::layout::set_width(output::report_width());
    let outcome = std::panic::catch_unwind(|| run(cli));
    cudoctor_collect::timings::global().report();
    match outcome {
        Ok(Ok(Outcome::Healthy)) => ExitCode::SUCCESS,
        Ok(Ok(Outcome::ProblemsFound)) => ExitCode::from(1),
        Ok(Err(e)) => {
            let message = output::error_text(&e);
            output::note(&format!(
                "cudoctor: error: {}\n",
                cudoctor_types::inert::message(&message)
            ));
            ExitCode::from(2)
        }
        Err(_) => {
            output::note(
                "cudoctor: internal error (a bug: please report it with the message above)\n",
            );
            ExitCode::from(2)
        }
    }
}

/// Started by a check to ask the driver's libraries (`cudoctor_collect::driver::probe`): answers
/// and exits before anything else runs.
fn answer_as_driver_probe() -> Option<ExitCode> {
    use cudoctor_collect::driver::probe;
    let mut args = std::env::args_os().skip(1);
    if args.next()? != probe::CHILD_ARGUMENT {
        return None;
    }
    let rest: Vec<String> = args.filter_map(|a| a.into_string().ok()).collect();
    Some(ExitCode::from(
        u8::try_from(probe::serve(&rest)).unwrap_or(1),
    ))
}

fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        None => commands::check::run(&cli.check),
        Some(Command::Check(args)) => commands::check::run(&args),
        Some(Command::Kernels(args)) => commands::kernels::run(&args),
        Some(Command::Libs(args)) => commands::libs::run(&args),
        Some(Command::Plan(args)) => commands::plan::run(&args),
        Some(Command::Explain(args)) => commands::explain::run(&args),
        Some(Command::Rule { code, format }) => commands::rule::show(&code, format),
        Some(Command::Rules { format }) => commands::rule::list(format),
        Some(Command::Diff {
            before,
            after,
            format,
            verbose,
        }) => commands::diff::run(&before, &after, format, verbose),
        Some(Command::Fleet(args)) => commands::fleet::run(&args),
        Some(Command::Completions { shell }) => commands::manual::completions(shell),
        Some(Command::Man { out_dir }) => commands::manual::man(out_dir.as_deref()),
        Some(Command::Run(args)) => commands::run::run(&args),
        Some(Command::Mcp) => commands::mcp::run(),
    }
}
