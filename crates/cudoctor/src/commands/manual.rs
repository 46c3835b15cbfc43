//! `cudoctor completions SHELL` and `cudoctor man`: generated from the clap definitions in
//! cli.rs, so they can never disagree with the parser.

use std::path::Path;

use anyhow::Context as _;
use clap::CommandFactory;

use crate::cli::Cli;
use crate::Outcome;

pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<Outcome> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "cudoctor", &mut script);
    crate::out!("{}", String::from_utf8(script)?);
    Ok(Outcome::Healthy)
}

/// The page of `cudoctor` itself to standard output, or with `out_dir` that page plus one
/// `cudoctor-SUBCOMMAND.1` per subcommand (what the wheel ships under share/man/man1).
pub fn man(out_dir: Option<&Path>) -> anyhow::Result<Outcome> {
    let cmd = Cli::command();
    match out_dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut page)?;
            crate::out!("{}", String::from_utf8(page)?);
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(cmd, dir)
                .with_context(|| format!("writing the manual pages into {}", dir.display()))?;
        }
    }
    Ok(Outcome::Healthy)
}
