//! The signature database: error patterns kept as data (`data/signatures.toml`), parsed once.

use crate::category::Category;
use crate::fields::FieldKind;
use crate::template;
use cudoctor_plan::{torch_index_url, FixStep, Install, TargetEnv};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// The built-in database, embedded at build time.
pub const BUILTIN_TOML: &str = include_str!("../data/signatures.toml");

/// How much a match says about the root cause. Decides which match wins in a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Names the root cause itself ("driver too old", "undefined symbol ..."). The first one wins.
    Cause,
    /// A generic failure that follows from some cause ("unhandled system error"). Wins only
    /// when no cause matched.
    Symptom,
    /// A warning that often precedes a failure. Wins only when nothing else matched.
    Warning,
    /// Never the answer: a generic error shown as context when nothing explains the input.
    Context,
}

/// Why the database could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("signature data is not valid TOML: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("signature {id}: unknown category {category:?}")]
    Category { id: String, category: String },
    #[error("signature {id}: pattern {pattern:?} does not compile: {message}")]
    Pattern {
        id: String,
        pattern: String,
        message: String,
    },
    #[error("signature {id}: field {field:?} has unknown kind {kind:?}")]
    FieldKind {
        id: String,
        field: String,
        kind: String,
    },
    #[error("signature {id}: confidence {value} is outside 0..=1")]
    Confidence { id: String, value: f32 },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDb {
    schema: u32,
    signature: Vec<RawSignature>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSignature {
    id: String,
    category: String,
    role: Role,
    confidence: f32,
    #[serde(rename = "match")]
    patterns: Vec<String>,
    #[serde(default)]
    extract: Vec<String>,
    #[serde(default)]
    fields: BTreeMap<String, String>,
    #[serde(default)]
    defaults: BTreeMap<String, String>,
    #[serde(default)]
    require_equal: Vec<[String; 2]>,
    #[serde(default)]
    require_different: Vec<[String; 2]>,
    #[serde(default)]
    check: Option<FactsCheck>,
    #[serde(default)]
    refines: Vec<String>,
    title: String,
    cause: String,
    fix: Vec<FixTemplate>,
    sources: Vec<String>,
}

/// One fix of a signature, as data: prose (a string), or prose with an install that the one
/// writer of package commands (`cudoctor_plan::TargetEnv::install`) puts into the
/// environment's own installer (a table: `{ say = "...", install = ["pkg"], upgrade = true }`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum FixTemplate {
    Prose(String),
    Install(InstallTemplate),
}

/// An install step of a signature's fix. Every text may hold `{field}` placeholders.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallTemplate {
    /// What the command does, said before it.
    pub say: String,
    /// The requirements ("bitsandbytes", "jax[cuda12]", a git URL).
    pub install: Vec<String>,
    #[serde(default)]
    pub upgrade: bool,
    #[serde(default)]
    pub reinstall: bool,
    #[serde(default)]
    pub no_deps: bool,
    #[serde(default)]
    pub no_build_isolation: bool,
    /// The PyTorch index of this variant label ("cu126", "{have_variant}"); a label that names
    /// no PyTorch index (a field the message did not give) leaves the command out, the prose in.
    #[serde(default)]
    pub torch_index: Option<String>,
}

impl FixTemplate {
    /// The template texts, for the placeholder checks.
    fn texts(&self) -> Vec<&str> {
        match self {
            FixTemplate::Prose(p) => vec![p.as_str()],
            FixTemplate::Install(i) => std::iter::once(i.say.as_str())
                .chain(i.install.iter().map(String::as_str))
                .chain(i.torch_index.as_deref())
                .collect(),
        }
    }
}

/// One compiled signature.
#[derive(Debug)]
pub struct Signature {
    pub id: String,
    pub category: Category,
    pub role: Role,
    pub confidence: f32,
    /// A line matching any of these triggers the signature; named groups become fields.
    pub patterns: Vec<Regex>,
    /// Run over the triggering line and the lines after it, to pick up fields a message
    /// spreads over several lines.
    pub extract: Vec<Regex>,
    pub fields: BTreeMap<String, FieldKind>,
    pub defaults: BTreeMap<String, String>,
    /// Pairs of fields that must be equal (both known) for the signature to apply.
    pub require_equal: Vec<[String; 2]>,
    /// Pairs of fields that must differ (both known) for the signature to apply.
    pub require_different: Vec<[String; 2]>,
    /// The machine check this message calls for instead of its category's general one.
    pub check: Option<FactsCheck>,
    /// Signatures whose generic answer this one makes specific: when both are seen in a log
    /// and one of those wins, this one is reported instead (the reason line says what to do).
    pub refines: Vec<String>,
    pub title: String,
    pub cause: String,
    pub fix: Vec<FixTemplate>,
    pub sources: Vec<String>,
}

impl Signature {
    /// Normalises named captures into `fields` (first value wins; unknown groups are ignored).
    pub fn collect_fields(&self, re: &Regex, text: &str, fields: &mut BTreeMap<String, String>) {
        let Some(caps) = re.captures(text) else {
            return;
        };
        for name in re.capture_names().flatten() {
            if fields.contains_key(name) {
                continue;
            }
            let (Some(kind), Some(m)) = (self.fields.get(name), caps.name(name)) else {
                continue;
            };
            if let Some(value) = kind.normalize(m.as_str()) {
                if let (Some(derived), Some(v)) = (kind.derived_name(name), kind.derive(&value)) {
                    fields.entry(derived).or_insert(v);
                }
                fields.insert(name.to_string(), value);
            }
        }
    }

    /// Whether the extracted fields satisfy the equal/different constraints. An unknown field
    /// fails the constraint: a signature that needs it cannot be sure it applies.
    pub fn constraints_hold(&self, fields: &BTreeMap<String, String>) -> bool {
        let pair = |p: &[String; 2]| (fields.get(&p[0]), fields.get(&p[1]));
        self.require_equal
            .iter()
            .all(|p| matches!(pair(p), (Some(a), Some(b)) if a == b))
            && self
                .require_different
                .iter()
                .all(|p| matches!(pair(p), (Some(a), Some(b)) if a != b))
    }

    pub fn render_cause(&self, fields: &BTreeMap<String, String>) -> String {
        template::render(&self.cause, fields, &self.defaults)
    }

    /// The fix steps for a message with `fields`, its commands written for `target` (the
    /// environment `explain` was pointed at), else for the `python` on PATH
    /// ([`TargetEnv::generic`]).
    pub fn render_fixes(
        &self,
        fields: &BTreeMap<String, String>,
        target: Option<&TargetEnv>,
    ) -> Vec<FixStep> {
        let fill = |t: &str| template::render(t, fields, &self.defaults);
        let generic = TargetEnv::generic();
        let target = target.unwrap_or(&generic);
        let mut steps = Vec::new();
        for f in &self.fix {
            match f {
                FixTemplate::Prose(p) => steps.push(FixStep::Prose(fill(p))),
                FixTemplate::Install(i) => {
                    steps.push(FixStep::Prose(fill(&i.say)));
                    let mut index_url = match &i.torch_index {
                        Some(label) => match torch_index_url(Some(&fill(label))) {
                            Some(url) => Some(url),
                            None => continue,
                        },
                        None => None,
                    };
                    let pins: Vec<String> = i.install.iter().map(|p| fill(p)).collect();
                    // On Windows PyPI's torch is the CPU build: a torch install there takes
                    // PyTorch's index of a CUDA build (the one the log names), or is not
                    // written at all.
                    if target.windows && index_url.is_none() && pins.iter().any(|p| is_torch(p)) {
                        match torch_index_url(fields.get(TORCH_VARIANT).map(String::as_str)) {
                            Some(url) => index_url = Some(url),
                            None => {
                                steps.push(FixStep::Prose(WINDOWS_TORCH_NOTE.into()));
                                continue;
                            }
                        }
                    }
                    let op = Install {
                        pins,
                        upgrade: i.upgrade,
                        reinstall: i.reinstall,
                        no_deps: i.no_deps,
                        no_build_isolation: i.no_build_isolation,
                        index_url,
                        ..Install::default()
                    };
                    steps.push(target.step(target.install(&op)));
                }
            }
        }
        steps
    }
}

/// The fields key of the CUDA build of torch a Windows fix installs from ("cu121"): the log's,
/// else the default build of the newest release (see `Engine::build`).
pub const TORCH_VARIANT: &str = "torch_variant";

const WINDOWS_TORCH_NOTE: &str = "On Windows, install torch only from PyTorch's index of a CUDA build (PyPI's Windows torch is the CPU build and would replace the CUDA one): 'cudoctor plan --platform windows' writes the command.";

/// Whether a requirement names torch or one of the packages built with it.
fn is_torch(requirement: &str) -> bool {
    let name = requirement
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    matches!(name.as_str(), "torch" | "torchvision" | "torchaudio")
}

/// All signatures plus every trigger pattern in one list (signature order, then pattern order:
/// the order [`crate::prefilter::Prefilter`] numbers them in).
#[derive(Debug)]
pub struct SignatureDb {
    pub schema: u32,
    pub signatures: Vec<Signature>,
    triggers: Vec<Regex>,
    /// For each pattern in `triggers`, the index of its signature.
    owner: Vec<usize>,
}

impl SignatureDb {
    /// Parses and compiles a database from TOML text.
    pub fn from_toml(text: &str) -> Result<SignatureDb, DbError> {
        let raw: RawDb = toml::from_str(text)?;
        let mut signatures = Vec::with_capacity(raw.signature.len());
        let mut owner = Vec::new();
        for (index, s) in raw.signature.into_iter().enumerate() {
            let category = Category::parse(&s.category).ok_or_else(|| DbError::Category {
                id: s.id.clone(),
                category: s.category.clone(),
            })?;
            if !(0.0..=1.0).contains(&s.confidence) {
                return Err(DbError::Confidence {
                    id: s.id,
                    value: s.confidence,
                });
            }
            let compile = |p: &String| {
                Regex::new(p).map_err(|e| DbError::Pattern {
                    id: s.id.clone(),
                    pattern: p.clone(),
                    message: e.to_string(),
                })
            };
            let patterns = s
                .patterns
                .iter()
                .map(compile)
                .collect::<Result<Vec<_>, _>>()?;
            let extract = s
                .extract
                .iter()
                .map(compile)
                .collect::<Result<Vec<_>, _>>()?;
            let mut fields = BTreeMap::new();
            for (name, kind) in &s.fields {
                let k = FieldKind::parse(kind).ok_or_else(|| DbError::FieldKind {
                    id: s.id.clone(),
                    field: name.clone(),
                    kind: kind.clone(),
                })?;
                fields.insert(name.clone(), k);
            }
            owner.extend(std::iter::repeat_n(index, s.patterns.len()));
            signatures.push(Signature {
                id: s.id,
                category,
                role: s.role,
                confidence: s.confidence,
                patterns,
                extract,
                fields,
                defaults: s.defaults,
                require_equal: s.require_equal,
                require_different: s.require_different,
                check: s.check,
                refines: s.refines,
                title: s.title,
                cause: s.cause,
                fix: s.fix,
                sources: s.sources,
            });
        }
        let triggers = signatures
            .iter()
            .flat_map(|s| s.patterns.iter().cloned())
            .collect();
        Ok(SignatureDb {
            schema: raw.schema,
            signatures,
            triggers,
            owner,
        })
    }

    /// The signatures whose trigger patterns match `line`, each once, in database order.
    pub fn triggered(&self, line: &str) -> Vec<usize> {
        self.triggered_among(line, 0..self.triggers.len())
    }

    /// [`SignatureDb::triggered`], trying only the patterns `prefilter` leaves for `line`: a
    /// line holds the literals of a few patterns, and each of those is one small automaton,
    /// where one set of every pattern had to track them all at once (and fell back to its
    /// slowest engine on lines with many near-matches).
    pub fn triggered_with(
        &self,
        line: &str,
        prefilter: &crate::prefilter::Prefilter,
    ) -> Vec<usize> {
        match prefilter.candidates(line) {
            Some(patterns) => self.triggered_among(line, patterns),
            None => self.triggered(line),
        }
    }

    /// Patterns are given in ascending order, so signatures come out in database order.
    fn triggered_among(&self, line: &str, patterns: impl IntoIterator<Item = usize>) -> Vec<usize> {
        let mut hit: Vec<usize> = patterns
            .into_iter()
            .filter(|&p| self.triggers.get(p).is_some_and(|re| re.is_match(line)))
            .filter_map(|p| self.owner.get(p).copied())
            .collect();
        hit.dedup();
        hit
    }

    pub fn get(&self, index: usize) -> Option<&Signature> {
        self.signatures.get(index)
    }

    pub fn by_id(&self, id: &str) -> Option<&Signature> {
        self.signatures.iter().find(|s| s.id == id)
    }

    /// Problems with the data that parsing alone does not catch. Empty means sound.
    /// Checked by the tests on the built-in data; a user-supplied database can be checked too.
    pub fn invariant_violations(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut ids = BTreeSet::new();
        let ids_all: BTreeSet<&str> = self.signatures.iter().map(|s| s.id.as_str()).collect();
        for s in &self.signatures {
            if !ids.insert(s.id.as_str()) {
                problems.push(format!("duplicate id {}", s.id));
            }
            if s.patterns.is_empty() {
                problems.push(format!("{}: no trigger pattern", s.id));
            }
            if s.fix.is_empty() {
                problems.push(format!("{}: no fix", s.id));
            }
            if s.sources.is_empty() {
                problems.push(format!("{}: no source", s.id));
            }
            if (s.category == Category::Unknown) != (s.role == Role::Context) {
                problems.push(format!(
                    "{}: the unknown category goes with role context, and only with it",
                    s.id
                ));
            }
            let mut captured = BTreeSet::new();
            for re in s.patterns.iter().chain(&s.extract) {
                for name in re.capture_names().flatten() {
                    captured.insert(name.to_string());
                    if !s.fields.contains_key(name) {
                        problems.push(format!("{}: group {name} has no declared field kind", s.id));
                    }
                }
            }
            let used: BTreeSet<String> = std::iter::once(s.cause.as_str())
                .chain(s.fix.iter().flat_map(FixTemplate::texts))
                .flat_map(template::placeholders)
                .map(str::to_string)
                .collect();
            let constrained: BTreeSet<String> = s
                .require_equal
                .iter()
                .chain(&s.require_different)
                .flatten()
                .cloned()
                .collect();
            for name in s.fields.keys() {
                if !captured.contains(name) {
                    problems.push(format!(
                        "{}: field {name} is declared but never captured",
                        s.id
                    ));
                }
                if !used.contains(name) && !constrained.contains(name) {
                    problems.push(format!(
                        "{}: field {name} is extracted but no template uses it",
                        s.id
                    ));
                }
            }
            let derived: BTreeSet<String> = s
                .fields
                .iter()
                .filter_map(|(n, k)| k.derived_name(n))
                .collect();
            // A placeholder must always have a value: a default, or a group every trigger captures.
            for name in &used {
                if derived.contains(name) {
                    if !s.defaults.contains_key(name) {
                        problems.push(format!(
                            "{}: derived placeholder {{{name}}} may be empty and has no default",
                            s.id
                        ));
                    }
                    continue;
                }
                let in_every_trigger = s
                    .patterns
                    .iter()
                    .all(|re| re.capture_names().flatten().any(|n| n == name));
                if !s.defaults.contains_key(name) && !in_every_trigger {
                    problems.push(format!(
                        "{}: placeholder {{{name}}} may be empty and has no default",
                        s.id
                    ));
                }
                if !s.fields.contains_key(name) {
                    problems.push(format!(
                        "{}: placeholder {{{name}}} is not a declared field",
                        s.id
                    ));
                }
            }
            if let Some(check) = s.check {
                if check.category() != s.category {
                    problems.push(format!(
                        "{}: check {check:?} applies to category {}, not {}",
                        s.id,
                        check.category(),
                        s.category
                    ));
                }
            }
            for r in &s.refines {
                if !ids_all.contains(r.as_str()) {
                    problems.push(format!("{}: refines unknown signature {r}", s.id));
                }
            }
            for pair in s.require_equal.iter().chain(&s.require_different) {
                for name in pair {
                    if !s.fields.contains_key(name) {
                        problems.push(format!("{}: constraint names unknown field {name}", s.id));
                    }
                }
            }
        }
        for c in Category::ALL {
            if c != Category::Unknown && !self.signatures.iter().any(|s| s.category == c) {
                problems.push(format!("category {c} has no signature"));
            }
        }
        problems
    }
}

/// The built-in database, parsed on first use.
pub fn builtin() -> Result<&'static SignatureDb, &'static DbError> {
    static DB: OnceLock<Result<SignatureDb, DbError>> = OnceLock::new();
    DB.get_or_init(|| SignatureDb::from_toml(BUILTIN_TOML))
        .as_ref()
}

/// A machine check a signature asks for instead of its category's general one, because its
/// message says more precisely what failed (`check = "..."` in the signature data). Which
/// findings of `check` confirm it is decided by `cudoctor_analyse::confirm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactsCheck {
    /// The CUDA runtime loaded the driver library and counted zero devices ("No CUDA GPUs are
    /// available", cudaErrorNoDevice): CUDA_VISIBLE_DEVICES is the usual reason, and a working
    /// driver is no contradiction, since that variable hides GPUs from CUDA but not from
    /// nvidia-smi.
    VisibleDevices,
    /// CUDA's initialisation failed below a driver that still answers nvidia-smi (the
    /// nvidia_uvm module, /dev/nvidia-uvm): a working driver is no contradiction either.
    CudaInit,
    /// A C/C++ extension build stopped at `Python.h`: the building Python's C headers are
    /// missing, which the rule reading each environment's include directory sees.
    PythonHeaders,
    /// A module of one installed package lacks a name another installed package asks of it
    /// (`module 'numpy' has no attribute 'row_stack'` raised under numba-cuda): two releases
    /// that do not fit, which only `check --deep`'s framework probes see (ACC011), not the
    /// torch companion pairs of the category's general check.
    PackageApiGap,
    /// A package asks for a library of another CUDA, cuDNN or TensorRT than the one the log
    /// shows (`libcublasLt.so.12` beside CUDA 11.8): built for another version, which the
    /// loader's rules see on a machine (the libraries each package loads, and where).
    BuiltForAnotherVersion,
}

impl FactsCheck {
    /// The category whose messages this check is made for.
    pub fn category(self) -> Category {
        match self {
            FactsCheck::VisibleDevices | FactsCheck::CudaInit => Category::DriverMissing,
            FactsCheck::PythonHeaders => Category::CudaHomeMissing,
            FactsCheck::PackageApiGap | FactsCheck::BuiltForAnotherVersion => {
                Category::VersionSuffixMismatch
            }
        }
    }
}
