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
/// Writes the page of `cmd` and of each of its visible subcommands into `dir`, each through the
/// atomic writer (a link planted at a page's name is refused), as clap_mangen names them.
fn write_pages(cmd: clap::Command, dir: &Path) -> anyhow::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
        write_pages(sub, dir)?;
    }
    let man = clap_mangen::Man::new(cmd);
    let mut page = Vec::new();
    man.render(&mut page)?;
    let path = dir.join(man.get_filename());
    cudoctor_types::atomic_write::write(&path, &page).map_err(anyhow::Error::new)?;
    Ok(())
}

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
            let mut cmd = cmd.disable_help_subcommand(true);
            cmd.build();
            write_pages(cmd, dir)?;
        }
    }
    Ok(Outcome::Healthy)
}
