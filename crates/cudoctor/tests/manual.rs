//! `cudoctor completions SHELL` and `cudoctor man` end to end: the scripts parse in their real
//! shells and complete real words, the manual pages render with groff without warnings, and
//! both name every subcommand that `--help` lists. A shell or groff missing here is reported
//! as skipped (a failure under CUDOCTOR_REQUIRE_TOOLS=1, as in CI, where
//! scripts/ci/wheel-test.sh installs zsh and fish), never passed silently.

use std::path::Path;
use std::process::{Command, Output};

fn cudoctor(args: &[&str]) -> Output {
    cudoctor_testkit::cudoctor_command(env!("CARGO_BIN_EXE_cudoctor"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run cudoctor")
}

fn stdout_of(args: &[&str]) -> String {
    let out = cudoctor(args);
    assert!(
        out.status.success(),
        "cudoctor {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The subcommands as `cudoctor --help` lists them (the parser's own view).
fn subcommands() -> Vec<String> {
    let help = stdout_of(&["--help"]);
    let list = help
        .split("Commands:\n")
        .nth(1)
        .expect("--help has a Commands section");
    let names: Vec<String> = list
        .lines()
        .take_while(|l| l.starts_with("  "))
        // A name starts a line; wrapped descriptions continue indented further.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect();
    assert!(
        names.len() >= 10,
        "too few subcommands in --help: {names:?}"
    );
    names
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("start");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn bash_completions_parse_and_complete_subcommands_and_options() {
    if !have("bash") {
        return cudoctor_testkit::skip_missing_tool("bash_completions_parse", "no bash");
    }
    let dir = tempfile::tempdir().unwrap();
    let script = write(
        dir.path(),
        "cudoctor.bash",
        &stdout_of(&["completions", "bash"]),
    );
    run_ok(Command::new("bash").arg("-n").arg(&script));

    // Ask the completion function, as bash's programmable completion would.
    let complete = |line: &str| -> Vec<String> {
        let words: Vec<&str> = line.split(' ').collect();
        let prog = format!(
            r#"source "$1"; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}
               _cudoctor cudoctor "{cur}" "{prev}"; printf '%s\n' "${{COMPREPLY[@]}}""#,
            words = words
                .iter()
                .map(|w| format!("'{w}'"))
                .collect::<Vec<_>>()
                .join(" "),
            cword = words.len() - 1,
            cur = words[words.len() - 1],
            prev = words[words.len() - 2],
        );
        run_ok(Command::new("bash").args(["-c", &prog, "_"]).arg(&script))
            .lines()
            .map(str::to_string)
            .collect()
    };
    let top = complete("cudoctor ");
    for sub in subcommands() {
        assert!(top.contains(&sub), "'cudoctor <TAB>' lacks {sub}: {top:?}");
    }
    assert_eq!(complete("cudoctor expl"), ["explain"]);
    assert!(complete("cudoctor check --for").contains(&"--format".to_string()));
    let formats = complete("cudoctor check --format ");
    for f in ["text", "json", "markdown", "html"] {
        assert!(
            formats.contains(&f.to_string()),
            "--format values: {formats:?}"
        );
    }
    assert!(complete("cudoctor completions ").contains(&"powershell".to_string()));
}

#[test]
fn zsh_and_fish_completions_parse() {
    let dir = tempfile::tempdir().unwrap();
    let zsh = write(dir.path(), "_cudoctor", &stdout_of(&["completions", "zsh"]));
    assert!(std::fs::read_to_string(&zsh)
        .unwrap()
        .starts_with("#compdef cudoctor"));
    if have("zsh") {
        run_ok(Command::new("zsh").arg("-n").arg(&zsh));
    } else {
        cudoctor_testkit::skip_missing_tool("zsh -n on the zsh completions", "no zsh");
    }
    let fish_text = stdout_of(&["completions", "fish"]);
    for sub in subcommands() {
        assert!(
            fish_text.contains(&format!("-a \"{sub}\"")),
            "fish completions lack {sub}"
        );
    }
    let fish = write(dir.path(), "cudoctor.fish", &fish_text);
    if have("fish") {
        run_ok(Command::new("fish").arg("--no-execute").arg(&fish));
    } else {
        cudoctor_testkit::skip_missing_tool("fish --no-execute on the fish completions", "no fish");
    }
}

#[test]
fn powershell_completions_register_every_subcommand() {
    let ps = stdout_of(&["completions", "powershell"]);
    assert!(ps.contains("Register-ArgumentCompleter -Native -CommandName 'cudoctor'"));
    for sub in subcommands() {
        assert!(
            ps.contains(&format!("'cudoctor;{sub}'")),
            "powershell completions lack {sub}"
        );
    }
    // No PowerShell is packaged for this system: the script's structure is what is checked.
    assert!(ps.contains("Register-ArgumentCompleter") && ps.trim_end().ends_with('}'));
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let out = cudoctor(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
    assert!(err.contains("bash") && err.contains("powershell"), "{err}");
}

/// Renders a page with groff, warnings on; returns the plain text (no overstrike for bold).
fn render(page: &Path) -> String {
    let out = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-P-cbou"])
        .arg(page)
        .output()
        .expect("groff");
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && warnings.is_empty(),
        "groff on {}: {warnings}",
        page.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn man_page_renders_and_lists_every_subcommand() {
    let roff = stdout_of(&["man"]);
    assert!(roff.contains(".TH cudoctor 1"), "{roff}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH OPTIONS"] {
        assert!(roff.contains(section), "the page lacks {section}");
    }
    if !have("groff") {
        return cudoctor_testkit::skip_missing_tool("man page renders", "no groff (groff-base)");
    }
    let dir = tempfile::tempdir().unwrap();
    let page = write(dir.path(), "cudoctor.1", &roff);
    let text = render(&page);
    for sub in subcommands() {
        assert!(
            text.contains(&format!("cudoctor-{sub}(1)")),
            "the rendered page does not point to cudoctor-{sub}(1)"
        );
    }
    assert!(text.contains("--format"), "no --format option in the page");
    // The page's footer names the short version (`-V`); `--version` adds the commit and dates.
    let version = stdout_of(&["-V"]);
    assert!(text.contains(version.trim()), "no version in the page");
}

#[test]
fn man_out_dir_writes_one_rendering_page_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    let out = cudoctor(&["man", "--out-dir", pages.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let mut expected: Vec<String> = subcommands()
        .iter()
        .map(|s| format!("cudoctor-{s}.1"))
        .collect();
    expected.push("cudoctor.1".into());
    expected.sort();
    let mut written: Vec<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    written.sort();
    // Nested subcommands (`fleet collect`) get pages of their own too.
    for page in &expected {
        assert!(written.contains(page), "{page} not written: {written:?}");
    }
    for page in &written {
        assert!(
            page.starts_with("cudoctor") && page.ends_with(".1"),
            "{page}"
        );
    }
    if !have("groff") {
        return cudoctor_testkit::skip_missing_tool("man pages render", "no groff (groff-base)");
    }
    let check = render(&pages.join("cudoctor-check.1"));
    assert!(check.contains("--deep"), "cudoctor-check(1) lacks --deep");
    for name in &written {
        render(&pages.join(name));
    }
}

#[test]
fn man_out_dir_that_is_a_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "taken", "");
    let out = cudoctor(&["man", "--out-dir", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cudoctor: error: creating") && err.contains("taken"),
        "{err}"
    );
}
