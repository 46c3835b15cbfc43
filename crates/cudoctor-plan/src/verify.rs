//! `--verify`: a printed fix proven before the user runs it. Its commands are read back into
//! package changes (what they install, reinstall and remove, at which versions), the changes are
//! applied to the collected facts of the environment they name (versions, torch's CUDA build from
//! its local label or the knowledge base's default variant of the release; the facts read from the
//! files of every package they replace are dropped, as those files go), and the judgement runs again
//! on those facts. A version the index picks at install time (an unpinned requirement) is named as
//! an assumption, never guessed.
//!
//! Pure: the caller reads the files each changed package owns (its RECORD) and runs the judgement.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use cudoctor_kb::Kb;
use cudoctor_snapshot::{Package, Snapshot, TorchBuild};
use cudoctor_types::requirement::{normalise_name, SpecOp};
use cudoctor_types::CudaVersion;
use cudoctor_types::Requirement;

use crate::fix::FixStep;

/// What one command of a fix does to an environment's distributions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Change {
    /// `name` installed or moved to `version`; None: the index picks the version when the
    /// command runs (the requirement as written says what it may be).
    Install {
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        requirement: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        index_url: Option<String>,
    },
    /// The installed release of `name` installed again: its files restored from its wheel.
    Reinstall {
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        version: Option<String>,
    },
    /// `name` uninstalled.
    Remove { name: String },
}

impl Change {
    pub fn name(&self) -> &str {
        match self {
            Change::Install { name, .. }
            | Change::Reinstall { name, .. }
            | Change::Remove { name } => name,
        }
    }
}

/// Where the commands of a fix act.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "path", rename_all = "snake_case")]
pub enum Target {
    /// The interpreter the commands name (`--python PY`, `PY -m pip`).
    Python(String),
    /// A conda prefix (`conda install -p PREFIX`).
    Prefix(String),
    /// A project's root or manifest (`uv add --project ROOT`, `pixi add --manifest-path M`):
    /// its environment.
    Project(String),
}

/// The package changes of one fix (one alternative of it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Effect {
    pub target: Option<Target>,
    pub changes: Vec<Change>,
    /// Command lines not read as package operations, as printed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
    /// The installer that runs the commands: uv (`uv pip`, `uv add`), pip, conda, poetry, pixi.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub installers: Vec<String>,
}

impl Effect {
    /// The fix has at least one command read as package changes.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// A fix's steps split into its alternatives: a prose step starting "or " opens the next one
/// ("Install the build made for torch 2.8.0: CMD", "or the torch it was built for: CMD").
pub fn alternatives(steps: &[FixStep]) -> Vec<&[FixStep]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, s) in steps.iter().enumerate() {
        let opens =
            matches!(s, FixStep::Prose(t) if t.trim_start().to_lowercase().starts_with("or "));
        if opens && i > start {
            out.push(&steps[start..i]);
            start = i;
        }
    }
    if start < steps.len() {
        out.push(&steps[start..]);
    }
    out.retain(|a| a.iter().any(FixStep::is_command));
    out
}

/// Reads the commands of `steps` (as [`crate::TargetEnv`] writes them) into package changes.
pub fn effect_of(steps: &[FixStep]) -> Effect {
    let mut effect = Effect::default();
    for step in steps {
        let FixStep::Shell(line) = step else {
            if let FixStep::PowerShell(line) = step {
                effect.unread.push(line.clone());
            }
            continue;
        };
        let Some(words) = shell_words(line) else {
            effect.unread.push(line.clone());
            continue;
        };
        for command in words.split(|w| w == "&&") {
            if command.is_empty() {
                continue;
            }
            if read_command(command, &mut effect).is_none() {
                effect.unread.push(line.clone());
                break;
            }
        }
    }
    effect
}

/// One command's words into `effect`; None when it is not a package operation read here.
fn read_command(w: &[String], effect: &mut Effect) -> Option<()> {
    let s: Vec<&str> = w.iter().map(String::as_str).collect();
    let mut installer = String::new();
    let (verb, rest): (&str, &[&str]) = match s.as_slice() {
        ["uv", "pip", verb, rest @ ..] => {
            installer.push_str("uv");
            (verb, rest)
        }
        ["uv", "add", rest @ ..] => {
            installer.push_str("uv");
            ("add", rest)
        }
        ["pip" | "pip3", verb, rest @ ..] => {
            installer.push_str("pip");
            (verb, rest)
        }
        [py, "-m", "pip", verb, rest @ ..] => {
            installer.push_str("pip");
            effect.target = Some(Target::Python(py.to_string()));
            (verb, rest)
        }
        ["conda" | "mamba" | "micromamba", verb, rest @ ..] => {
            installer.push_str("conda");
            (verb, rest)
        }
        ["poetry", "--directory", root, "source", "add", ..] => {
            effect.target = Some(Target::Project(root.to_string()));
            return Some(());
        }
        ["poetry", "--directory", root, "add", rest @ ..] => {
            installer.push_str("poetry");
            effect.target = Some(Target::Project(root.to_string()));
            ("add", rest)
        }
        ["pixi", "add", rest @ ..] => {
            installer.push_str("pixi");
            ("add", rest)
        }
        _ => return None,
    };
    let conda = installer == "conda";
    if !effect.installers.contains(&installer) {
        effect.installers.push(installer);
    }
    let mut reinstall = false;
    let mut index_url = None;
    let mut pins = Vec::new();
    let mut it = rest.iter();
    while let Some(word) = it.next() {
        let (flag, inline) = match word.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (*word, None),
        };
        let mut value = || inline.clone().or_else(|| it.next().map(|v| v.to_string()));
        match flag {
            "--python" => effect.target = Some(Target::Python(value()?)),
            "-p" | "--prefix" if conda => effect.target = Some(Target::Prefix(value()?)),
            "--project" => effect.target = Some(Target::Project(value()?)),
            "--manifest-path" => effect.target = Some(Target::Project(value()?)),
            "--index-url" | "--index" | "--extra-index-url" => {
                let v = value()?;
                // `uv add --index name=url`.
                index_url = Some(v.split_once('=').map_or(v.clone(), |(_, u)| u.to_string()));
            }
            "--only-binary" | "--no-binary" | "--source" | "--torch-backend" | "-c"
            | "--channel" => {
                value()?;
            }
            "--reinstall" | "--force-reinstall" => reinstall = true,
            "--no-deps"
            | "--upgrade"
            | "-U"
            | "--no-build-isolation"
            | "--no-cache"
            | "--no-cache-dir"
            | "-y"
            | "--yes"
            | "--force"
            | "--pypi" => {}
            f if f.starts_with('-') => return None,
            _ => pins.push(*word),
        }
    }
    for pin in pins {
        let change = match verb {
            "install" | "add" => {
                let (name, version) = if conda {
                    conda_spec(pin)?
                } else {
                    let r: Requirement = pin.parse().ok()?;
                    let version = match r.specifiers.as_slice() {
                        [one] if one.op == SpecOp::Eq && !one.version.ends_with(".*") => {
                            Some(one.version.clone())
                        }
                        _ => None,
                    };
                    (r.name, version)
                };
                if reinstall {
                    Change::Reinstall { name, version }
                } else {
                    Change::Install {
                        name,
                        version,
                        requirement: pin.to_string(),
                        index_url: index_url.clone(),
                    }
                }
            }
            "uninstall" | "remove" => Change::Remove {
                name: normalise_name(pin),
            },
            _ => return None,
        };
        effect.changes.push(change);
    }
    Some(())
}

/// A conda spec (`pytorch==2.5.1`, `cudatoolkit=11.8`, `numpy`) as a name and the version it
/// pins (None for `=11.8`, which conda reads as 11.8.*).
fn conda_spec(spec: &str) -> Option<(String, Option<String>)> {
    // conda's `pytorch` is torch's distribution (its dist-info says torch).
    let named = |n: &str| match normalise_name(n).as_str() {
        "pytorch" => "torch".to_string(),
        other => other.to_string(),
    };
    if let Some((n, v)) = spec.split_once("==") {
        // `==2.7.1=cuda*`: the version, then conda's build pattern.
        let v = v.split('=').next().unwrap_or(v);
        return Some((named(n), Some(v.to_string())));
    }
    let name = spec.split(['=', '<', '>', '!', ' ']).next()?;
    (!name.is_empty()).then(|| (named(name), None))
}

/// The words of a POSIX shell command line as the shell reads them (single, double and `$'...'`
/// quotes, backslashes), `&&` kept as a word of its own; None for anything else a shell would
/// act on (`;`, `|`, redirections, substitutions), which no fix command here contains.
pub fn shell_words(line: &str) -> Option<Vec<String>> {
    let line = match line.find(" #") {
        Some(i) if !line[..i].contains(['\'', '"']) => &line[..i],
        _ => line,
    };
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => cur.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => cur.push(c),
                            c => {
                                cur.push('\\');
                                cur.push(c);
                            }
                        },
                        '$' | '`' => return None,
                        c => cur.push(c),
                    }
                }
            }
            '$' if chars.peek() == Some(&'\'') => {
                chars.next();
                in_word = true;
                let mut bytes = Vec::new();
                loop {
                    match chars.next()? {
                        '\'' => break,
                        '\\' => match chars.next()? {
                            'n' => bytes.push(b'\n'),
                            't' => bytes.push(b'\t'),
                            'r' => bytes.push(b'\r'),
                            'x' => {
                                let h: String = [chars.next()?, chars.next()?].iter().collect();
                                bytes.push(u8::from_str_radix(&h, 16).ok()?);
                            }
                            c => {
                                let mut b = [0; 4];
                                bytes.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                            }
                        },
                        c => {
                            let mut b = [0; 4];
                            bytes.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                        }
                    }
                }
                cur.push_str(&cudoctor_types::os_text::from_bytes(&bytes));
            }
            '\\' => {
                in_word = true;
                cur.push(chars.next()?);
            }
            '&' if chars.peek() == Some(&'&') && !in_word => {
                chars.next();
                words.push("&&".to_string());
            }
            ';' | '|' | '&' | '<' | '>' | '(' | ')' | '`' | '$' => return None,
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}

/// The index of the environment of `snapshot` the fix acts on: the one whose interpreter,
/// prefix or project the commands name (the primary environment when they name none).
pub fn target_env(snapshot: &Snapshot, effect: &Effect) -> Option<usize> {
    let envs = &snapshot.python_envs;
    let trim = |p: &str| p.trim_end_matches('/').to_string();
    match &effect.target {
        None => (!envs.is_empty()).then_some(0),
        Some(Target::Python(py)) => envs.iter().position(|e| {
            e.interpreter.as_deref() == Some(py.as_str())
                || py
                    .strip_prefix(&trim(&e.prefix))
                    .is_some_and(|rest| rest.starts_with("/bin/") || rest.starts_with('\\'))
        }),
        Some(Target::Prefix(p)) => envs.iter().position(|e| trim(&e.prefix) == trim(p)),
        Some(Target::Project(p)) => envs.iter().position(|e| {
            e.project
                .as_ref()
                .is_some_and(|pr| trim(&pr.root) == trim(p) || pr.manifest == *p)
        }),
    }
}

/// The names (normalised) whose installed files the fix replaces or removes in env `env`: the
/// caller reads what each owns (its RECORD) for [`apply`].
pub fn replaced(snapshot: &Snapshot, env: usize, effect: &Effect) -> Vec<Package> {
    let Some(e) = snapshot.python_envs.get(env) else {
        return Vec::new();
    };
    effect
        .changes
        .iter()
        .filter_map(|c| {
            let p = e.package(&normalise_name(c.name()))?;
            match c {
                Change::Install {
                    version: Some(v), ..
                } if same_version(&p.version, v) => None,
                _ => Some(p.clone()),
            }
        })
        .collect()
}

/// The changes of `effect` that change environment `env`: an install pinned to the version
/// it already has keeps that package (a fix pins torch to hold it while a companion moves),
/// so a report of what the commands do leaves it out.
pub fn changed(snapshot: &Snapshot, env: usize, effect: &Effect) -> Vec<Change> {
    let Some(e) = snapshot.python_envs.get(env) else {
        return effect.changes.clone();
    };
    effect
        .changes
        .iter()
        .filter(|c| match c {
            Change::Install {
                name,
                version: Some(v),
                ..
            } => e
                .package(&normalise_name(name))
                .is_none_or(|p| !same_version(&p.version, v)),
            _ => true,
        })
        .cloned()
        .collect()
}

/// `==pin` admits the installed `version`: the same, or the same public release when the pin
/// carries no local label (PEP 440: `==2.8.0` matches `2.8.0+cu128`).
fn same_version(installed: &str, pin: &str) -> bool {
    installed == pin || (!pin.contains('+') && installed.split('+').next() == Some(pin))
}

/// The facts after the fix.
#[derive(Debug, Clone)]
pub struct PostFix {
    pub snapshot: Snapshot,
    /// What the judgement takes as given: a requirement whose version the index picks when
    /// the command runs (`xformers`, `cupy-cuda13x[ctk]`), as written.
    pub assumed: Vec<String>,
    /// What the facts cannot show before the install: the library links of an environment
    /// whose packages move to releases whose files are not here yet.
    pub unjudged: Vec<String>,
}

/// The facts of `before` once `effect` has run in environment `env`. `owned` names, for each
/// replaced package, the paths its RECORD lists (files and directories): the facts read from
/// them are dropped, since the command replaces or removes those files; a reinstall keeps them
/// (the same files come back) but clears their damage.
pub fn apply(
    kb: &Kb,
    before: &Snapshot,
    env: usize,
    effect: &Effect,
    owned: &BTreeMap<String, Vec<String>>,
) -> PostFix {
    let mut assumed = Vec::new();
    let replaced: BTreeSet<String> = replaced(before, env, effect)
        .into_iter()
        .map(|p| p.name)
        .collect();
    let reinstalled: BTreeSet<String> = effect
        .changes
        .iter()
        .filter_map(|c| match c {
            Change::Reinstall { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    // The file facts of what goes, dropped before the typed changes.
    let gone: Vec<String> = replaced
        .iter()
        .filter(|n| !reinstalled.contains(*n))
        .flat_map(|n| owned.get(n).cloned().unwrap_or_default())
        .collect();
    let mut snapshot = if gone.is_empty() {
        before.clone()
    } else {
        drop_facts_under(before, env, &gone)
    };
    let Some(e) = snapshot.python_envs.get_mut(env) else {
        return PostFix {
            snapshot,
            assumed,
            unjudged: Vec::new(),
        };
    };
    let mut unjudged = Vec::new();
    let site = e.site_packages.first().cloned().unwrap_or_default();
    for c in &effect.changes {
        let name = normalise_name(c.name());
        if let Change::Reinstall { .. } = c {
            if let Some(w) = e.wheel_check.as_mut() {
                w.damaged.retain(|d| normalise_name(&d.package) != name);
            }
            continue;
        }
        if !replaced.contains(&name)
            && matches!(c, Change::Install { .. })
            && e.package(&name).is_some()
        {
            continue; // the installed version satisfies the pin: nothing moves
        }
        // What goes.
        e.packages.retain(|p| p.name != name);
        e.declared.retain(|d| normalise_name(&d.package) != name);
        e.frameworks.retain(|b| normalise_name(&b.package) != name);
        e.conda_packages.retain(|p| normalise_name(&p.name) != name);
        if let Some(w) = e.wheel_check.as_mut() {
            w.damaged.retain(|d| normalise_name(&d.package) != name);
            for s in &mut w.shared_paths {
                s.owners.retain(|o| normalise_name(&o.package) != name);
            }
            w.shared_paths.retain(|s| s.owners.len() > 1);
        }
        if name == "torch" {
            e.torch = None;
        }
        // What comes.
        let Change::Install {
            version,
            requirement,
            ..
        } = c
        else {
            continue;
        };
        let Some(version) = version else {
            assumed.push(requirement.clone());
            continue;
        };
        e.packages.push(Package {
            name: name.clone(),
            version: version.clone(),
            location: site.clone(),
        });
        if name == "torch" {
            e.torch = Some(torch_build(kb, version, &site));
        }
    }
    // A package that moves to another release brings files that are not here (a reinstall, the
    // files its RECORD lists): the links of the environment's process (what its extensions
    // resolve against) are judged after the install.
    let moved: Vec<&str> = effect
        .changes
        .iter()
        .filter(|c| match c {
            Change::Install { .. } => replaced.contains(&normalise_name(c.name())),
            // Its files come back as its RECORD lists them: what the loader found missing.
            Change::Reinstall { .. } => true,
            Change::Remove { .. } => false,
        })
        .map(Change::name)
        .collect();
    if !moved.is_empty() {
        let prefix = snapshot.python_envs[env].prefix.clone();
        if let Some(l) = snapshot.loader.as_mut() {
            let n = l.processes.len();
            l.processes.retain(|p| p.env_prefix != prefix);
            if l.processes.len() < n {
                unjudged.push(format!(
                    "the library links of {} (their files come with the install: --verify=install judges them)",
                    moved.join(", ")
                ));
            }
        }
    }
    PostFix {
        snapshot,
        assumed,
        unjudged,
    }
}

/// The torch build a pin installs: its CUDA from the local label (`+cu126`), else from the
/// release's default variant on the default index (the knowledge base's `pypi_default`).
fn torch_build(kb: &Kb, version: &str, site: &str) -> TorchBuild {
    let (public, label) = match version.split_once('+') {
        Some((p, l)) => (p, Some(l.to_string())),
        None => (
            version,
            kb.torch(version).and_then(|r| r.pypi_default.clone()),
        ),
    };
    let cuda = label
        .as_deref()
        .and_then(|l| CudaVersion::from_tag(l).ok())
        .map(|c| c.to_string());
    TorchBuild {
        version: match &label {
            Some(l) => format!("{public}+{l}"),
            None => public.to_string(),
        },
        cuda,
        path: format!("{}/torch", site.trim_end_matches('/')),
        ..TorchBuild::default()
    }
}

/// `before` without the facts read from the files under `gone` (paths, files or directories):
/// every list element of the snapshot one of whose own text fields names such a path. The
/// environment `env`'s own record (its prefix and package list) is kept.
fn drop_facts_under(before: &Snapshot, env: usize, gone: &[String]) -> Snapshot {
    let Ok(mut value) = serde_json::to_value(before) else {
        return before.clone();
    };
    let under = |s: &str| {
        gone.iter().any(|g| {
            let g = g.trim_end_matches('/');
            s == g || s.strip_prefix(g).is_some_and(|r| r.starts_with('/'))
        })
    };
    prune(&mut value, &under);
    match serde_json::from_value::<Snapshot>(value) {
        Ok(mut s) => {
            // The environment's identity is never one of the dropped facts.
            if let (Some(new), Some(old)) =
                (s.python_envs.get_mut(env), before.python_envs.get(env))
            {
                new.prefix.clone_from(&old.prefix);
                new.site_packages.clone_from(&old.site_packages);
                new.packages.clone_from(&old.packages);
            }
            s
        }
        Err(_) => before.clone(),
    }
}

/// Removes from every array of `v` the elements that name a path `under` accepts: a string
/// element, or an object one of whose direct string fields (or strings in a direct list of
/// strings, such as evidence) does.
fn prune(v: &mut serde_json::Value, under: &dyn Fn(&str) -> bool) {
    use serde_json::Value;
    match v {
        Value::Array(items) => {
            items.retain(|item| match item {
                Value::String(s) => !under(s),
                Value::Object(m) => !m.values().any(|f| match f {
                    Value::String(s) => under(s),
                    _ => false,
                }),
                _ => true,
            });
            for item in items {
                prune(item, under);
            }
        }
        Value::Object(m) => {
            for f in m.values_mut() {
                prune(f, under);
            }
        }
        _ => {}
    }
}

/// One finding as the comparison of before and after sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judged {
    pub id: String,
    pub code: String,
    /// An error that is a root cause (no `caused_by`).
    pub root_error: bool,
    pub title: String,
}

/// How a fix stands after it is applied to the facts (or to a copy of the environment).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The finding is gone and no new error appears.
    Verified,
    /// The same, with a version the index picks taken as given (`assumed`).
    VerifiedAssuming,
    /// The finding would remain, or the fix brings a new error.
    NotVerified,
    /// The commands could not be read or applied: nothing proven.
    NotVerifiable,
}

/// The proof of one fix (one alternative of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// The finding whose fix this is (its id).
    pub finding: String,
    pub code: String,
    /// 1-based, when the fix offers several alternatives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alternative: Option<usize>,
    pub status: Status,
    /// How it was proven: "facts" (the judgement on the facts the commands set) or "install"
    /// (the commands run in a copy of the environment, which was then checked).
    pub method: String,
    pub changes: Vec<Change>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assumed: Vec<String>,
    /// The errors that remain after the fix (root causes), other findings' as well.
    pub remaining: Vec<Judged>,
    /// Errors the fix brings that were not there before.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub introduced: Vec<Judged>,
    /// Why it could not be proven, or what the proof rests on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Judges a fix of finding `finding` (`code`) by the findings before and after it.
pub fn verdict(
    finding: &Judged,
    before: &[Judged],
    after: &[Judged],
    assumed: &[String],
) -> (Status, Vec<Judged>, Vec<Judged>) {
    let remaining: Vec<Judged> = after.iter().filter(|j| j.root_error).cloned().collect();
    // The other root causes before the fix: their errors remaining are not this fix's.
    let others: BTreeSet<&str> = before
        .iter()
        .filter(|j| j.root_error && j.code != finding.code)
        .map(|j| j.code.as_str())
        .collect();
    let stays = after
        .iter()
        .any(|j| j.code == finding.code && (j.id == finding.id || j.title == finding.title));
    // Every other error remaining that was not another root cause: a consequence of this one
    // that stays, or a new error the fix brings.
    let introduced: Vec<Judged> = remaining
        .iter()
        .filter(|j| j.code != finding.code && !others.contains(j.code.as_str()))
        .cloned()
        .collect();
    let status = if stays || !introduced.is_empty() {
        Status::NotVerified
    } else if assumed.is_empty() {
        Status::Verified
    } else {
        Status::VerifiedAssuming
    };
    (status, remaining, introduced)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(s: &str) -> FixStep {
        FixStep::Shell(s.into())
    }

    #[test]
    fn shell_words_read_back_what_quote_writes() {
        for w in [
            "/opt/my venv/bin/python",
            "it's",
            "cupy-cuda13x[ctk]",
            "a\nb",
            "/v/lib\u{1b}x",
        ] {
            let line = format!("uv pip install --python {} x", crate::quote(w));
            let got = shell_words(&line).unwrap();
            assert_eq!(got[4], w, "{line}");
        }
        assert_eq!(
            shell_words("a && b 'c d'").unwrap(),
            ["a", "&&", "b", "c d"]
        );
        assert!(shell_words("a; rm -rf x").is_none());
        assert!(shell_words("a $(b)").is_none());
        assert_eq!(
            shell_words("pip install x  # why").unwrap(),
            ["pip", "install", "x"]
        );
    }

    #[test]
    fn a_pin_to_the_installed_version_is_no_change() {
        let mut snapshot = Snapshot::default();
        snapshot.python_envs.push(cudoctor_snapshot::PythonEnv {
            packages: [("torch", "2.15.0+cu132"), ("torchvision", "0.28.0")]
                .iter()
                .map(|(name, version)| cudoctor_snapshot::Package {
                    name: (*name).into(),
                    version: (*version).into(),
                    location: "/v/site".into(),
                })
                .collect(),
            ..Default::default()
        });
        let e = effect_of(&[sh(
            "uv pip install --python /v/bin/python torch==2.15.0 torchvision==0.29.2",
        )]);
        let changes = changed(&snapshot, 0, &e);
        let names: Vec<&str> = changes.iter().map(Change::name).collect();
        assert_eq!(names, ["torchvision"]);
        // A reinstall of the same version is a change (it replaces damaged files).
        let e = effect_of(&[sh(
            "/v/bin/python -m pip install --force-reinstall --no-deps torch==2.15.0+cu132",
        )]);
        assert_eq!(changed(&snapshot, 0, &e).len(), 1);
    }

    #[test]
    fn commands_of_every_installer_read_back_as_changes() {
        let e = effect_of(&[
            FixStep::Prose("Keep CUDA 13 in this environment:".into()),
            sh("uv pip uninstall --python '/opt/my venv/bin/python' cupy-cuda12x"),
            sh("uv pip install --python '/opt/my venv/bin/python' 'cupy-cuda13x[ctk]'"),
        ]);
        assert_eq!(
            e.target,
            Some(Target::Python("/opt/my venv/bin/python".into()))
        );
        assert_eq!(
            e.changes,
            vec![
                Change::Remove {
                    name: "cupy-cuda12x".into()
                },
                Change::Install {
                    name: "cupy-cuda13x".into(),
                    version: None,
                    requirement: "cupy-cuda13x[ctk]".into(),
                    index_url: None
                }
            ]
        );
        let e = effect_of(&[sh("/v/bin/python -m pip install --force-reinstall --no-deps torch==2.7.1+cu126 --index-url https://download.pytorch.org/whl/cu126")]);
        assert_eq!(
            e.changes,
            vec![Change::Reinstall {
                name: "torch".into(),
                version: Some("2.7.1+cu126".into())
            }]
        );
        let e = effect_of(&[sh("uv add --project /p torch==2.7.1+cu126 --index pytorch-cu126=https://download.pytorch.org/whl/cu126")]);
        assert_eq!(e.target, Some(Target::Project("/p".into())));
        assert!(
            matches!(&e.changes[0], Change::Install { index_url: Some(u), .. } if u.ends_with("/cu126"))
        );
        let e = effect_of(&[sh("conda install -p /c pytorch==2.5.1 torchvision==0.20.1 pytorch-cuda=12.4 -c pytorch -c nvidia")]);
        assert_eq!(e.target, Some(Target::Prefix("/c".into())));
        assert_eq!(e.changes.len(), 3);
        assert_eq!(e.installers, ["conda"]);
        let e = effect_of(&[sh("sudo systemctl restart docker")]);
        assert!(e.is_empty());
        assert_eq!(e.unread.len(), 1);
    }

    #[test]
    fn alternatives_split_at_an_or() {
        let steps = [
            FixStep::Prose("Install the xformers build made for the installed torch 2.8.0:".into()),
            sh("pip install xformers"),
            FixStep::Prose("or the torch xformers was built for:".into()),
            sh("pip install torch==2.7.1"),
        ];
        let a = alternatives(&steps);
        assert_eq!(a.len(), 2);
        assert_eq!(a[1].len(), 2);
        assert_eq!(
            alternatives(&[FixStep::Prose("docker run --gpus all".into())]).len(),
            0
        );
    }

    #[test]
    fn the_verdict_names_what_stays_and_what_comes() {
        let j = |id: &str, code: &str, root: bool| Judged {
            id: id.into(),
            code: code.into(),
            root_error: root,
            title: format!("{code} title"),
        };
        let before = [j("PLT001", "PLT001", true), j("FW002", "FW002", true)];
        let (s, remaining, introduced) =
            verdict(&before[1], &before, &[j("PLT001", "PLT001", true)], &[]);
        assert_eq!(s, Status::Verified);
        assert_eq!(remaining.len(), 1);
        assert!(introduced.is_empty());
        let (s, ..) = verdict(&before[1], &before, &before, &[]);
        assert_eq!(s, Status::NotVerified);
        let (s, _, introduced) = verdict(
            &before[1],
            &before,
            &[j("FW020", "FW020", true)],
            &["x".into()],
        );
        assert_eq!(s, Status::NotVerified);
        assert_eq!(introduced[0].code, "FW020");
    }
}
