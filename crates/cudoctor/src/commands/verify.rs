//! `check --verify`: every printed fix proven before the user runs it (cudoctor_plan::verify).
//! By default on the facts: the package changes its commands make are applied to the collected
//! facts and the judgement runs again. With `--verify=install` the commands also run in a copy of
//! the environment (in a temporary directory, deleted after), which
//! is then checked as any environment is. The user's environment is only read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cudoctor_analyse::{analyse, Finding, Severity};
use cudoctor_kb::Kb;
use cudoctor_plan::verify::{self, Effect, Judged, Status, Target, Verification};
use cudoctor_snapshot::{Package, PythonEnv, Snapshot};

use crate::cli::VerifyMode;

/// Proves the fix of every finding that has one command or more.
pub fn verify_all(
    snapshot: &Snapshot,
    findings: &[Finding],
    kb: &Kb,
    mode: VerifyMode,
    live: bool,
) -> Vec<Verification> {
    verify_chosen(snapshot, findings, findings, kb, mode, live)
}

/// Proves the fixes of `chosen`, some of the check's `findings` (explain's confirming ones):
/// what remains after each is judged against every finding of the check.
pub fn verify_chosen(
    snapshot: &Snapshot,
    findings: &[Finding],
    chosen: &[Finding],
    kb: &Kb,
    mode: VerifyMode,
    live: bool,
) -> Vec<Verification> {
    let before = judged(findings);
    let mut out = Vec::new();
    for f in chosen {
        let alternatives = verify::alternatives(&f.fix);
        let several = alternatives.len() > 1;
        for (i, steps) in alternatives.into_iter().enumerate() {
            let mut v = verify_fix(snapshot, &before, f, steps, kb, mode, live);
            v.alternative = several.then_some(i + 1);
            out.push(v);
        }
    }
    out
}

/// A pretty-printed JSON object with `key: list` added as its last member, its own keys in
/// their order; the text as it was when it is not an object.
pub fn with_json_list(text: &str, key: &str, list: &[Verification]) -> String {
    let body = text.trim_end();
    let (Some(head), Ok(list), Ok(key)) = (
        body.strip_suffix('}'),
        serde_json::to_string_pretty(list),
        serde_json::to_string(key),
    ) else {
        return text.to_string();
    };
    let list = list.replace('\n', "\n  ");
    format!("{},\n  {key}: {list}\n}}\n", head.trim_end())
}

/// Proves `plan`'s remedy for the environment: check's fix of the same finding, word for word,
/// so it is verified as that fix (empty when no finding of the check has it as its fix).
pub fn verify_remedy(
    snapshot: &Snapshot,
    steps: &[cudoctor_plan::FixStep],
    kb: &Kb,
    mode: VerifyMode,
    live: bool,
) -> Vec<Verification> {
    let findings = analyse(snapshot, kb);
    let before = judged(&findings);
    findings
        .iter()
        .filter(|f| f.fix == steps)
        .take(1)
        .map(|f| verify_fix(snapshot, &before, f, steps, kb, mode, live))
        .collect()
}

/// Proves `steps` as the fix of `finding` (`before`: every finding of the check).
pub fn verify_fix(
    snapshot: &Snapshot,
    before: &[Judged],
    finding: &Finding,
    steps: &[cudoctor_plan::FixStep],
    kb: &Kb,
    mode: VerifyMode,
    live: bool,
) -> Verification {
    let me = judged(std::slice::from_ref(finding)).remove(0);
    let effect = verify::effect_of(steps);
    let v = on_facts(snapshot, before, &me, &effect, kb, live);
    if mode == VerifyMode::Install && live && v.status != Status::NotVerifiable {
        if let Some(installed) = by_install(snapshot, before, &me, &effect, kb, steps) {
            return installed;
        }
    }
    v
}

/// Findings as the comparison sees them.
pub fn judged(findings: &[Finding]) -> Vec<Judged> {
    findings
        .iter()
        .map(|f| Judged {
            id: if f.id.is_empty() {
                f.code.clone()
            } else {
                f.id.clone()
            },
            code: f.code.clone(),
            root_error: f.severity == Severity::Error && !f.is_consequence(),
            title: f.title.clone(),
        })
        .collect()
}

fn not_verifiable(me: &Judged, effect: &Effect, note: String) -> Verification {
    Verification {
        finding: me.id.clone(),
        code: me.code.clone(),
        alternative: None,
        status: Status::NotVerifiable,
        method: "facts".into(),
        changes: effect.changes.clone(),
        assumed: Vec::new(),
        remaining: Vec::new(),
        introduced: Vec::new(),
        note: Some(note),
    }
}

/// The fix applied to the facts, judged again.
fn on_facts(
    snapshot: &Snapshot,
    before: &[Judged],
    me: &Judged,
    effect: &Effect,
    kb: &Kb,
    live: bool,
) -> Verification {
    if effect.is_empty() {
        let why = match effect.unread.first() {
            Some(c) => format!(
                "its command is not a package change this check can apply (`{}`): run it, then check again",
                cudoctor_types::inert::line(c)
            ),
            None => "no command to apply".to_string(),
        };
        return not_verifiable(me, effect, why);
    }
    let Some(env) = verify::target_env(snapshot, effect) else {
        return not_verifiable(
            me,
            effect,
            "its commands name no environment of this check".into(),
        );
    };
    let replaced = verify::replaced(snapshot, env, effect);
    let owned = owned_paths(&snapshot.python_envs[env], &replaced, live);
    let post = verify::apply(kb, snapshot, env, effect, &owned);
    let after = judged(&analyse(&post.snapshot, kb));
    let (status, remaining, introduced) = verify::verdict(me, before, &after, &post.assumed);
    let mut notes = post.unjudged.clone();
    if !effect.unread.is_empty() {
        notes.push(format!(
            "not applied: {}",
            effect
                .unread
                .iter()
                .map(|c| cudoctor_types::inert::line(c))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    Verification {
        finding: me.id.clone(),
        code: me.code.clone(),
        alternative: None,
        status,
        method: "facts".into(),
        changes: verify::changed(snapshot, env, effect),
        assumed: post.assumed,
        remaining,
        introduced,
        note,
    }
}

/// The paths each replaced package owns, from its RECORD (on this machine), else its import
/// directory and vendored-library directory by name: the facts read from them are dropped.
fn owned_paths(env: &PythonEnv, replaced: &[Package], live: bool) -> BTreeMap<String, Vec<String>> {
    replaced
        .iter()
        .map(|p| {
            let site = p.location.trim_end_matches('/');
            let mut paths = live
                .then(|| record_paths(site, p))
                .flatten()
                .unwrap_or_default();
            let module = p.name.replace('-', "_");
            for guess in [module.clone(), format!("{module}.libs")] {
                let path = format!("{site}/{guess}");
                if !paths.contains(&path) {
                    paths.push(path);
                }
            }
            let _ = env;
            (p.name.clone(), paths)
        })
        .collect()
}

/// The files (and non-namespace top-level directories) `p`'s RECORD lists, as paths.
fn record_paths(site: &str, p: &Package) -> Option<Vec<String>> {
    let dist_info = std::fs::read_dir(site).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let stem = name.strip_suffix(".dist-info")?;
        let (n, v) = stem.rsplit_once('-')?;
        (cudoctor_types::normalise_name(n) == p.name && v == p.version).then(|| e.path())
    })?;
    let text = cudoctor_types::regular_file::read_input(&dist_info.join("RECORD"), 64 << 20)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())?;
    let mut out = Vec::new();
    let mut tops = std::collections::BTreeSet::new();
    for line in cudoctor_collect::python::record::record_lines(&text) {
        let rel = line.path.as_ref();
        if rel.starts_with("..") || rel.starts_with('/') {
            continue;
        }
        out.push(format!("{site}/{rel}"));
        if let Some((top, _)) = rel.split_once('/') {
            // `nvidia/` is the namespace every CUDA wheel shares: never one package's.
            if top != "nvidia" && !top.ends_with(".dist-info") {
                tops.insert(top.to_string());
            }
        }
    }
    out.extend(tops.into_iter().map(|t| format!("{site}/{t}")));
    Some(out)
}

/// Variables of uv and pip that make an install change something other than the environment
/// named on the command line.
const INSTALL_ELSEWHERE: &[&str] = &[
    "UV_SYSTEM_PYTHON",
    "UV_PYTHON",
    "UV_BREAK_SYSTEM_PACKAGES",
    "UV_PROJECT_ENVIRONMENT",
    "PIP_USER",
    "PIP_TARGET",
    "PIP_PREFIX",
    "PIP_ROOT",
    "PIP_BREAK_SYSTEM_PACKAGES",
    "PIP_PYTHON",
    "PYTHONUSERBASE",
];

/// How long the commands may take in the copy.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(900);

/// The fix's commands run in a copy of the environment, which is then checked. None when the
/// commands are not ones run here (a project's, conda's): the facts' verdict stands.
fn by_install(
    snapshot: &Snapshot,
    before: &[Judged],
    me: &Judged,
    effect: &Effect,
    kb: &Kb,
    steps: &[cudoctor_plan::FixStep],
) -> Option<Verification> {
    let env_i = verify::target_env(snapshot, effect)?;
    let env = &snapshot.python_envs[env_i];
    if !matches!(effect.target, Some(Target::Python(_))) || !effect.unread.is_empty() {
        return None;
    }
    // The installer runs the environment's interpreter (its sitecustomize, its .pth imports):
    // a daemon that leaves the installer's process group and session is found and killed, as
    // under --deep.
    cudoctor_collect::runner::become_subreaper();
    let result = Scratch::new().and_then(|scratch| {
        let copy = scratch.dir.join("env");
        copy_env(Path::new(&env.prefix), &copy)?;
        let copy_text = copy.to_string_lossy().into_owned();
        let mut log = Vec::new();
        for step in steps {
            let cudoctor_plan::FixStep::Shell(line) = step else {
                continue;
            };
            let words = verify::shell_words(line).ok_or("unreadable command")?;
            for command in words.split(|w| w == "&&") {
                let words: Vec<String> = command
                    .iter()
                    .map(|w| in_copy(w, &env.prefix, &copy_text))
                    .collect();
                if let Err(why) = confined_to_copy(&words, &copy_text) {
                    return Err(format!(
                        "`{}` was not run in the copy: {why}",
                        cudoctor_types::inert::line(&words.join(" "))
                    ));
                }
                let (program, args) = words.split_first().ok_or("empty command")?;
                let mut cmd = std::process::Command::new(program);
                cmd.args(args)
                    .env("VIRTUAL_ENV", &copy)
                    .env_remove("CONDA_PREFIX")
                    .current_dir(&scratch.dir);
                // The installers' own variables that send an install elsewhere (the user's
                // Python, a target or prefix directory, the user site) are not passed on.
                for var in INSTALL_ELSEWHERE {
                    cmd.env_remove(var);
                }
                let done = cudoctor_collect::runner::run(
                    cmd,
                    &cudoctor_collect::runner::Limits::tool(INSTALL_TIMEOUT),
                    None,
                );
                let tail = String::from_utf8_lossy(&done.stderr);
                let tail: Vec<&str> = tail.lines().rev().take(3).collect();
                log.push(format!(
                    "{}: {:?} {}",
                    words.join(" "),
                    done.ending,
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ));
                if done.ending != cudoctor_collect::runner::Ending::Exited(0) {
                    return Err(format!(
                        "the command failed in the copy: {}",
                        log.last().cloned().unwrap_or_default()
                    ));
                }
            }
        }
        let host = cudoctor_collect::Host::real(Duration::from_secs(60));
        let options = cudoctor_collect::Options {
            python: vec![copy_text.clone()],
            ..Default::default()
        };
        let mut checked = cudoctor_collect::collect(&host, &options, env!("CARGO_PKG_VERSION"));
        checked.python_envs.retain(|e| e.prefix == copy_text);
        Ok(judged(&analyse(&checked, kb)))
    });
    let base = Verification {
        finding: me.id.clone(),
        code: me.code.clone(),
        alternative: None,
        status: Status::NotVerified,
        method: "install".into(),
        changes: verify::changed(snapshot, env_i, effect),
        assumed: Vec::new(),
        remaining: Vec::new(),
        introduced: Vec::new(),
        note: None,
    };
    Some(match result {
        Ok(after) => {
            let (status, remaining, introduced) = verify::verdict(me, before, &after, &[]);
            Verification {
                status,
                remaining,
                introduced,
                note: Some("its commands ran in a copy of the environment (deleted after), which was checked".into()),
                ..base
            }
        }
        Err(why) => Verification {
            note: Some(why),
            ..base
        },
    })
}

/// Whether a command (its words already moved into the copy) can change nothing but the copy:
/// uv's pip interface (its target the copy's interpreter, or `VIRTUAL_ENV`, the copy), the copy's
/// interpreter's pip, or pip told the copy's interpreter; no option that installs elsewhere
/// (`--system`, `--user`, `--prefix`, `--target`, `--root` outside the copy). Anything else
/// (PATH's pip for the user's own Python, conda, a project's tool) would change what is not
/// the copy, and is not run.
fn confined_to_copy(words: &[String], copy: &str) -> Result<(), String> {
    let in_copy = |p: &str| p == copy || p.starts_with(&format!("{copy}/"));
    let s: Vec<&str> = words.iter().map(String::as_str).collect();
    let (rest, needs_python): (&[&str], bool) = match s.as_slice() {
        ["uv", "pip", rest @ ..] => (rest, false),
        [py, "-m", "pip", rest @ ..] if in_copy(py) => (rest, false),
        ["pip" | "pip3", rest @ ..] => (rest, true),
        _ => return Err("only uv's pip, or pip for the copy's interpreter, runs there".into()),
    };
    let mut python_named = false;
    let mut it = rest.iter();
    while let Some(word) = it.next() {
        let (flag, inline) = match word.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (*word, None),
        };
        match flag {
            "--system" | "--user" | "--break-system-packages" => {
                return Err(format!("{flag} installs outside the copy"))
            }
            "--python" | "-p" | "--prefix" | "--target" | "-t" | "--root" => {
                let value = inline.or_else(|| it.next().copied()).unwrap_or("");
                if !in_copy(value) {
                    return Err(format!("{flag} {value} is not the copy"));
                }
                python_named |= flag == "--python" || flag == "-p";
            }
            _ => {}
        }
    }
    if needs_python && !python_named {
        return Err("pip without --python changes the Python it belongs to".into());
    }
    Ok(())
}

/// A word of a command with the environment's prefix replaced by the copy's.
fn in_copy(word: &str, prefix: &str, copy: &str) -> String {
    let prefix = prefix.trim_end_matches('/');
    match word.strip_prefix(prefix) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{copy}{rest}"),
        _ => word.to_string(),
    }
}

/// A private temporary directory, removed (never through a link) when dropped, and when
/// cudoctor is ended by SIGINT, SIGTERM or SIGHUP while it lives. A SIGKILL cannot be caught:
/// the directory holds a lock file whose lock its owner keeps while it lives (the kernel
/// drops it when the owner dies), and the next `--verify=install` removes every scratch
/// directory of the same user whose lock it can take ([`reclaim_left_copies`]).
struct Scratch {
    dir: PathBuf,
    _doomed: cudoctor_collect::runner::Doomed,
    /// Locked while this lives.
    _owner: std::fs::File,
}

/// The prefix of a scratch directory's name in the temporary directory.
const SCRATCH_PREFIX: &str = "cudoctor-verify-";

/// The lock file of a scratch directory; the copy itself is made beside it.
const OWNER_LOCK: &str = ".cudoctor-owner";

impl Scratch {
    fn new() -> Result<Scratch, String> {
        let base = std::env::temp_dir();
        for n in 0..100u32 {
            let dir = base.join(format!("{SCRATCH_PREFIX}{}-{n}", std::process::id()));
            #[cfg_attr(not(unix), allow(unused_mut))]
            let mut b = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            match b.create(&dir) {
                Ok(()) => {
                    let _doomed = cudoctor_collect::runner::remove_on_termination(&dir);
                    let owner = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(dir.join(OWNER_LOCK))
                        .and_then(|f| f.try_lock().map(|()| f).map_err(std::io::Error::other));
                    let _owner = match owner {
                        Ok(f) => f,
                        Err(e) => {
                            let _ = std::fs::remove_dir_all(&dir);
                            return Err(format!("{}: {e}", dir.display()));
                        }
                    };
                    reclaim_left_copies(&base, &dir);
                    return Ok(Scratch {
                        dir,
                        _doomed,
                        _owner,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("{}: {e}", base.display())),
            }
        }
        Err("no temporary directory could be made".into())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// At most this many entries of the temporary directory are looked at for left copies.
#[cfg(unix)]
const RECLAIM_LOOK: usize = 100_000;

/// Removes the scratch directories of `base` that a `--verify=install` killed by SIGKILL (or a
/// crash, a power cut) left behind: named as ours, a real directory (never a link), owned by
/// the same user as `mine` (just made), and either holding a lock file whose lock is free (its
/// owner is dead, whatever its pid became) or, made by a cudoctor without one, named after a
/// process that no longer exists. Nothing else is touched; a failure is no error.
fn reclaim_left_copies(base: &Path, mine: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let Ok(me) = std::fs::symlink_metadata(mine) else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(base) else {
            return;
        };
        for entry in entries.flatten().take(RECLAIM_LOOK) {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(SCRATCH_PREFIX))
                .and_then(|rest| rest.split_once('-'))
                .and_then(|(pid, n)| n.parse::<u32>().ok().and(pid.parse::<u32>().ok()))
            else {
                continue;
            };
            let dir = entry.path();
            if dir == mine {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&dir) else {
                continue;
            };
            if !meta.file_type().is_dir() || meta.uid() != me.uid() {
                continue;
            }
            let lock = dir.join(OWNER_LOCK);
            let gone =
                || Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists();
            // Opened without waiting (a FIFO put there by the code the installer ran would
            // block an open for reading).
            let dead = match cudoctor_types::regular_file::open(&lock) {
                // Free: its owner is gone, or has just made it and not yet locked it (the
                // lock is taken at once, so a lock file minutes old is not that one).
                Ok(file) => {
                    file.try_lock().is_ok()
                        && (gone()
                            || std::fs::symlink_metadata(&lock)
                                .and_then(|m| m.modified())
                                .ok()
                                .and_then(|t| t.elapsed().ok())
                                .is_some_and(|age| age > Duration::from_secs(60)))
                }
                // An older cudoctor's copy, or one being made this instant: its process.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => gone(),
                Err(_) => false,
            };
            if dead {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (base, mine);
}

/// What copying an environment may cost: a hostile one (a sparse file of a terabyte, millions
/// of files) ends the copy with a message instead of filling the disk or running for hours.
#[derive(Debug, Clone, Copy)]
struct CopyBudget {
    bytes: u64,
    time: Duration,
}

const COPY_BUDGET: CopyBudget = CopyBudget {
    bytes: 64 << 30,
    time: Duration::from_secs(600),
};

/// What the installer may write beside the copy (the wheels it downloads, unpacked in its
/// cache, often on the same disk), kept free on top of the copy itself: the copy never fills
/// the user's disk, and an install that would run out of room is not started.
const INSTALLER_ROOM: u64 = 2 << 30;

/// The environment at `from` copied to `to` (see [`copy_tree`]), within [`COPY_BUDGET`] and
/// the free space of `to`'s file system.
fn copy_env(from: &Path, to: &Path) -> Result<(), String> {
    let free = to
        .parent()
        .and_then(cudoctor_collect::disk::available_bytes);
    copy_env_within(from, to, COPY_BUDGET, free)
}

/// As [`copy_env`], with the free bytes of `to`'s file system given (`None`: not known, not
/// checked).
fn copy_env_within(
    from: &Path,
    to: &Path,
    budget: CopyBudget,
    free: Option<u64>,
) -> Result<(), String> {
    // The environment's real place: links are judged against it.
    let root = std::fs::canonicalize(from).map_err(|e| format!("{}: {e}", from.display()))?;
    let mut job = CopyJob {
        root,
        copy: to.to_path_buf(),
        deadline: std::time::Instant::now() + budget.time,
        bytes_left: budget.bytes,
        budget,
    };
    let src = job.root.clone();
    if let Some(free) = free {
        let size = job.size_of(&src)?;
        let needed = size.saturating_add(INSTALLER_ROOM);
        if free < needed {
            return Err(format!(
                "not enough free space for a copy: the environment's files take {}, and {} more is kept for the installer's downloads; the disk of {} has {} free (TMPDIR set to a directory on a disk with room lets the copy be made there; not installed in a copy)",
                gib(size),
                gib(INSTALLER_ROOM),
                // The temporary directory the scratch directory was made in.
                to.parent().and_then(Path::parent).unwrap_or(to).display(),
                gib(free)
            ));
        }
    }
    job.copy_tree(&src, to)
}

/// Bytes as GiB with one decimal.
fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

struct CopyJob {
    /// The environment's canonical path.
    root: PathBuf,
    /// Where its copy is made.
    copy: PathBuf,
    deadline: std::time::Instant,
    bytes_left: u64,
    budget: CopyBudget,
}

/// The size from which a file mostly made of holes is refused.
#[cfg(unix)]
const SPARSE_FROM: u64 = 256 << 20;

/// How much of a file is copied between two looks at the deadline.
const COPY_CHUNK: u64 = 64 << 20;

impl CopyJob {
    fn out_of_time(&self) -> Result<(), String> {
        if std::time::Instant::now() >= self.deadline {
            return Err(format!(
                "copying the environment took more than {} s (not installed in a copy)",
                self.budget.time.as_secs()
            ));
        }
        Ok(())
    }

    /// The environment is larger than the budget allows, as found at file `at` (while copying)
    /// or by measuring it first.
    fn over_budget(&self, at: Option<&Path>) -> String {
        let at = at.map_or(String::new(), |p| format!("at {}; ", p.display()));
        format!(
            "the environment is larger than the {} GiB a copy may take ({at}not installed in a copy)",
            self.budget.bytes >> 30
        )
    }

    /// The bytes of the regular files under `from`, as [`Self::copy_tree`] would copy them (links
    /// not followed); within the budget's time and bytes.
    fn size_of(&self, from: &Path) -> Result<u64, String> {
        let err = |p: &Path, e: std::io::Error| format!("reading {}: {e}", p.display());
        let mut total = 0u64;
        let mut stack = vec![from.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).map_err(|e| err(&dir, e))? {
                self.out_of_time()?;
                let entry = entry.map_err(|e| err(&dir, e))?;
                let meta =
                    std::fs::symlink_metadata(entry.path()).map_err(|e| err(&entry.path(), e))?;
                if meta.is_dir() {
                    stack.push(entry.path());
                } else if meta.is_file() {
                    total = total.saturating_add(meta.len());
                }
            }
            if total > self.budget.bytes {
                return Err(self.over_budget(None));
            }
        }
        Ok(total)
    }

    /// `from` copied to `to`: directories made, files copied (never hard-linked: an installer
    /// that wrote into a shared file would change the user's environment; the kernel shares the
    /// data where the file system can, through copy_file_range), FIFOs, devices and sockets
    /// left out (never opened). A link is made where it resolves in the copy: one to a place
    /// inside the environment points at the same place of the copy (never back into the
    /// environment, which the installer would then change); one out of it is refused — the
    /// installer would write through it, outside the copy — except the environment's
    /// interpreter (`bin/python*`, a venv's link to its base Python, which the installer runs and
    /// never writes). A link to nothing is left out.
    fn copy_tree(&mut self, from: &Path, to: &Path) -> Result<(), String> {
        let err = |p: &Path, e: std::io::Error| format!("copying {}: {e}", p.display());
        std::fs::create_dir(to).map_err(|e| err(to, e))?;
        for entry in std::fs::read_dir(from).map_err(|e| err(from, e))? {
            self.out_of_time()?;
            let entry = entry.map_err(|e| err(from, e))?;
            let src = entry.path();
            let dst = to.join(entry.file_name());
            let meta = std::fs::symlink_metadata(&src).map_err(|e| err(&src, e))?;
            let kind = meta.file_type();
            if kind.is_symlink() {
                self.copy_link(&src, &dst)?;
            } else if kind.is_dir() {
                self.copy_tree(&src, &dst)?;
            } else if kind.is_file() {
                self.copy_file(&src, &dst, &meta)?;
            }
        }
        Ok(())
    }

    fn copy_link(&mut self, src: &Path, dst: &Path) -> Result<(), String> {
        let err = |p: &Path, e: std::io::Error| format!("copying {}: {e}", p.display());
        let target = std::fs::read_link(src).map_err(|e| err(src, e))?;
        let Ok(real) = std::fs::canonicalize(src) else {
            return Ok(()); // a link to nothing
        };
        let made = match real.strip_prefix(&self.root) {
            Ok(inside) => self.copy.join(inside),
            // The interpreter is a file: a directory by that name would be written into.
            Err(_) if self.is_interpreter(src) && real.is_file() => target.clone(),
            Err(_) => {
                return Err(format!(
                    "{} is a link out of the environment (to {}): the installer would write through it, outside the copy (not installed in a copy)",
                    src.display(),
                    real.display()
                ))
            }
        };
        #[cfg(unix)]
        std::os::unix::fs::symlink(&made, dst).map_err(|e| err(dst, e))?;
        #[cfg(not(unix))]
        return Err(format!(
            "copying {} to {}: a link (to {}), which is not recreated on this system",
            src.display(),
            dst.display(),
            made.display()
        ));
        #[cfg(unix)]
        Ok(())
    }

    /// `bin/python`, `bin/python3`, `bin/python3.12`... of the environment's root.
    fn is_interpreter(&self, src: &Path) -> bool {
        let name = src
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        src.parent() == Some(self.root.join("bin").as_path())
            && name
                .strip_prefix("python")
                .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    }

    fn copy_file(
        &mut self,
        src: &Path,
        dst: &Path,
        meta: &std::fs::Metadata,
    ) -> Result<(), String> {
        let err = |p: &Path, e: std::io::Error| format!("copying {}: {e}", p.display());
        let size = meta.len();
        if size > self.bytes_left {
            return Err(self.over_budget(Some(src)));
        }
        // A sparse file (holes the copy would write as data): none in a wheel's files.
        #[cfg(unix)]
        if size > SPARSE_FROM
            && std::os::unix::fs::MetadataExt::blocks(meta).saturating_mul(512) < size / 2
        {
            return Err(format!(
                "{} is a sparse file of {size} bytes (not installed in a copy)",
                src.display()
            ));
        }
        self.bytes_left -= size;
        // Opened without waiting (a file swapped for a FIFO since it was listed is refused,
        // never waited on); the copy is a new file of the scratch directory.
        let mut input = cudoctor_types::regular_file::open(src).map_err(|e| err(src, e))?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(
            &mut options,
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
        );
        let mut output = options.open(dst).map_err(|e| err(dst, e))?;
        let mut copied = 0u64;
        loop {
            self.out_of_time()?;
            let n = std::io::copy(
                &mut std::io::Read::take(&mut input, COPY_CHUNK),
                &mut output,
            )
            .map_err(|e| err(src, e))?;
            copied += n;
            if n == 0 {
                break;
            }
            if copied > size {
                return Err(format!(
                    "{} grew while it was copied (not installed in a copy)",
                    src.display()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudoctor_plan::FixStep;

    fn fixture(name: &str) -> Snapshot {
        let path = format!(
            "{}/tests/fixtures/verify/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn facts(name: &str, code: &str, steps: Option<Vec<FixStep>>) -> Verification {
        let snapshot = fixture(name);
        let kb = Kb::embedded();
        let findings = analyse(&snapshot, kb);
        let f = findings.iter().find(|f| f.code == code).unwrap();
        let steps = steps.unwrap_or_else(|| f.fix.clone());
        verify_fix(
            &snapshot,
            &judged(&findings),
            f,
            &steps,
            kb,
            VerifyMode::Facts,
            false,
        )
    }

    #[test]
    fn the_printed_fix_of_a_companion_of_another_release_is_verified() {
        let v = facts("companion-wrong-release", "FW002", None);
        assert_eq!(v.status, Status::Verified, "{v:#?}");
        assert!(v.remaining.iter().all(|j| j.code == "PLT001"), "{v:#?}");
        assert!(v
            .changes
            .iter()
            .any(|c| matches!(c, verify::Change::Install { name, version: Some(v), .. } if name == "torchvision" && v == "0.22.1")));
    }

    #[test]
    fn a_remedy_that_would_not_resolve_says_what_would_remain() {
        let py = "/work/realenv-37/companion-wrong-release/bin/python";
        // torchvision of the same wrong release again, and one of an older torch.
        for pin in ["torchvision==0.23.0", "torchvision==0.21.0"] {
            let steps = vec![FixStep::Shell(format!(
                "uv pip install --python {py} {pin}"
            ))];
            let v = facts("companion-wrong-release", "FW002", Some(steps));
            assert_eq!(v.status, Status::NotVerified, "{pin}: {v:#?}");
            assert!(v.remaining.iter().any(|j| j.code == "FW002"), "{v:#?}");
        }
        // Removing torch leaves no torch for torchvision: not this fix.
        let steps = vec![FixStep::Shell(format!(
            "uv pip uninstall --python {py} torch"
        ))];
        let v = facts("companion-wrong-release", "FW002", Some(steps));
        assert_ne!(v.status, Status::Verified, "{v:#?}");
        // A command that is no package change proves nothing.
        let steps = vec![FixStep::Shell("sudo systemctl restart docker".into())];
        let v = facts("companion-wrong-release", "FW002", Some(steps));
        assert_eq!(v.status, Status::NotVerifiable, "{v:#?}");
    }

    #[test]
    fn the_fix_of_two_cuda_majors_is_verified_with_the_index_release_named() {
        let v = facts("cupy-cuda12x-beside-torch", "FW020", None);
        assert_eq!(v.status, Status::VerifiedAssuming, "{v:#?}");
        assert_eq!(v.assumed, ["cupy-cuda13x[ctk]"]);
        // Removing CuPy for CUDA 12 without the CUDA-13 one: verified outright.
        let py = "/work/realenv-37/cupy-cuda12x-beside-torch/bin/python";
        let steps = vec![FixStep::Shell(format!(
            "uv pip uninstall --python {py} cupy-cuda12x"
        ))];
        let v = facts("cupy-cuda12x-beside-torch", "FW020", Some(steps));
        assert_eq!(v.status, Status::Verified, "{v:#?}");
        // Installing CuPy for CUDA 12 again: it stays.
        let steps = vec![FixStep::Shell(format!(
            "uv pip install --python {py} --reinstall cupy-cuda12x==14.2.0"
        ))];
        let v = facts("cupy-cuda12x-beside-torch", "FW020", Some(steps));
        assert_eq!(v.status, Status::NotVerified, "{v:#?}");
    }

    /// The copy's links: into the copy for a place inside the environment, as they were for
    /// the interpreter, refused for anything else out of it (a directory named like the
    /// interpreter included), left out when they point at nothing.
    #[cfg(unix)]
    #[test]
    fn the_copy_makes_each_link_where_it_resolves() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let env = dir.path().join("env");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(env.join("bin")).unwrap();
        std::fs::create_dir_all(env.join("lib/site")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("python3.12"), "").unwrap();
        symlink(outside.join("python3.12"), env.join("bin/python3")).unwrap();
        symlink("python3", env.join("bin/python")).unwrap();
        symlink(env.join("lib/site"), env.join("lib/abs")).unwrap();
        symlink("lib", env.join("lib64")).unwrap();
        symlink(dir.path().join("nothing"), env.join("lib/dangling")).unwrap();
        let copy = dir.path().join("copy");
        copy_env_within(&env, &copy, COPY_BUDGET, None).unwrap();
        let link = |p: &str| std::fs::read_link(copy.join(p)).unwrap();
        assert_eq!(link("bin/python3"), outside.join("python3.12"));
        // `python -> python3` resolves out of the env through python3: kept as it was, it
        // still names the copy's python3.
        assert_eq!(link("bin/python"), Path::new("python3"));
        assert_eq!(link("lib/abs"), copy.join("lib/site"));
        assert_eq!(link("lib64"), copy.join("lib"));
        assert!(std::fs::symlink_metadata(copy.join("lib/dangling")).is_err());
        // A directory out of the environment under the interpreter's name is refused.
        symlink(&outside, env.join("bin/python3.")).unwrap();
        let again = dir.path().join("again");
        let e = copy_env_within(&env, &again, COPY_BUDGET, None).unwrap_err();
        assert!(e.contains("is a link out of the environment"), "{e}");
        // A budget of bytes or time spent ends the copy with a message.
        std::fs::remove_file(env.join("bin/python3.")).unwrap();
        std::fs::write(env.join("lib/site/big.so"), vec![1u8; 4096]).unwrap();
        let e = copy_env_within(
            &env,
            &dir.path().join("small"),
            CopyBudget {
                bytes: 1024,
                time: Duration::from_secs(60),
            },
            None,
        )
        .unwrap_err();
        assert!(e.contains("larger than the 0 GiB"), "{e}");
        let e = copy_env_within(
            &env,
            &dir.path().join("slow"),
            CopyBudget {
                bytes: 1 << 30,
                time: Duration::ZERO,
            },
            None,
        )
        .unwrap_err();
        assert!(e.contains("took more than 0 s"), "{e}");
    }

    /// A disk without room for the environment's files and the installer's downloads: no copy
    /// is begun, and the message gives both figures and the way out (TMPDIR).
    #[test]
    fn a_copy_the_disk_has_no_room_for_is_not_begun() {
        let dir = tempfile::tempdir().unwrap();
        let env = dir.path().join("env");
        std::fs::create_dir_all(env.join("lib")).unwrap();
        std::fs::write(env.join("lib/a.so"), vec![1u8; 3 << 20]).unwrap();
        let copy = dir.path().join("copy");
        let e = copy_env_within(&env, &copy, COPY_BUDGET, Some(INSTALLER_ROOM)).unwrap_err();
        assert!(e.starts_with("not enough free space for a copy"), "{e}");
        assert!(e.contains("take 0.0 GiB") && e.contains("TMPDIR"), "{e}");
        assert!(!copy.exists());
        // Room for both: copied.
        let room = INSTALLER_ROOM + (3 << 20);
        copy_env_within(&env, &copy, COPY_BUDGET, Some(room)).unwrap();
        assert_eq!(
            std::fs::metadata(copy.join("lib/a.so")).unwrap().len(),
            3 << 20
        );
    }

    #[test]
    fn only_commands_that_change_the_copy_alone_run_there() {
        let words = |l: &str| -> Vec<String> { l.split(' ').map(str::to_string).collect() };
        let copy = "/t/env";
        for ok in [
            "uv pip install --python /t/env/bin/python torch==2.7.1",
            "uv pip install --python=/t/env/bin/python torch",
            "uv pip install torch",
            "/t/env/bin/python -m pip install torch==2.7.1",
            "pip install --python /t/env/bin/python torch",
        ] {
            assert!(confined_to_copy(&words(ok), copy).is_ok(), "{ok}");
        }
        for bad in [
            "pip uninstall -y torch",
            "pip3 install torch",
            "uv pip install --system torch",
            "uv pip install --python /usr/bin/python3 torch",
            "uv pip install -p /e/bin/python torch",
            "/t/env/bin/python -m pip install --user torch",
            "/t/env/bin/python -m pip install --target /home/u torch",
            "/usr/bin/python3 -m pip install torch",
            "conda install -p /t/env torch",
            "sh -c true",
            "/t/envx/bin/python -m pip install torch",
        ] {
            assert!(confined_to_copy(&words(bad), copy).is_err(), "{bad}");
        }
    }

    #[test]
    fn words_move_into_the_copy_only_under_the_prefix() {
        assert_eq!(
            in_copy("/e/bin/python", "/e", "/t/env"),
            "/t/env/bin/python"
        );
        assert_eq!(in_copy("/e", "/e/", "/t/env"), "/t/env");
        assert_eq!(in_copy("/ex/bin/python", "/e", "/t/env"), "/ex/bin/python");
        assert_eq!(in_copy("torch==2.7.1", "/e", "/t/env"), "torch==2.7.1");
    }
}
