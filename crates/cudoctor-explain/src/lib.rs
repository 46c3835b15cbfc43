//! `cudoctor explain`: from an error message or a whole log to the cause and the fix.
//!
//! The engine reads any `BufRead` line by line with a bounded buffer, matches each cleaned line
//! against a signature database kept as data (`data/signatures.toml`), and picks the first
//! causal error. Whether a machine confirms the answer is decided by the rules `check` runs
//! (`cudoctor_analyse::confirm` maps a cause to the findings that judge it); fixes the message's
//! own facts call for come from the one build chooser (`cudoctor-plan`). Nothing here touches
//! the machine itself.
//!
//! ```
//! let log = "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).";
//! let e = cudoctor_explain::explain_str(log);
//! assert_eq!(e.category, cudoctor_explain::Category::DriverTooOld);
//! assert_eq!(e.fields.get("found_cuda").map(String::as_str), Some("11.4"));
//! ```

pub mod another_build;
pub mod category;
pub mod clause;
pub mod explanation;
pub mod family;
pub mod fields;
pub mod floor;
pub mod gate;
pub mod gpu_ran;
pub mod host_state;
pub mod libraries;
mod message_remedy;
pub mod named;
pub mod normalize;
pub mod placement;
pub mod prefilter;
pub mod prose;
pub mod render;
pub mod scanner;
pub mod setup;
pub mod signatures;
pub mod stated_driver;
pub mod template;
pub mod testimony;
pub mod xid;

pub use category::Category;
pub use cudoctor_kb::Kb;
pub use explanation::{
    AlsoSeen, Explanation, LookedFor, MachineCheck, MatchedLine, ScanStats, Verdict,
};
pub use signatures::{DbError, FactsCheck, Role, SignatureDb};

use cudoctor_plan::TargetEnv;
use gate::Gate;
use prefilter::Prefilter;
use scanner::{pick_winner, scan, ScanOutcome};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Cursor};
use std::sync::OnceLock;

/// An automaton over a reader's words, compared ASCII case-insensitively as every reader compares
/// them, reporting every match (overlapping words each count).
pub(crate) fn words_automaton<'a>(
    words: impl IntoIterator<Item = &'a str>,
) -> Option<aho_corasick::AhoCorasick> {
    aho_corasick::AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(aho_corasick::MatchKind::Standard)
        .build(words)
        .ok()
}

/// Lines shown in `matched`.
const MAX_MATCHED: usize = 10;
/// Entries in `also_seen`.
const MAX_ALSO_SEEN: usize = 20;

/// Why the engine could not be set up (only possible with broken built-in data, which the
/// tests rule out, or a user-supplied database).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Signatures(#[from] DbError),
    /// The embedded knowledge base does not load.
    #[error("the knowledge base is not valid: {0}")]
    Knowledge(String),
}

/// A signature database with its prefilter and the knowledge base the message's own fixes are
/// chosen with.
pub struct Engine {
    db: SignatureDb,
    prefilter: Prefilter,
    /// The first look at each line, built from the prefilter and every reader's words.
    gate: Gate,
    kb: Cow<'static, Kb>,
    /// The environment the fixes' commands are written for; `None`: the `python` on PATH.
    target: Option<TargetEnv>,
}

impl Engine {
    /// An engine over a given signature database (e.g. a user's newer file) and the embedded
    /// knowledge base.
    pub fn new(db: SignatureDb) -> Result<Engine, EngineError> {
        let kb = Kb::try_embedded().map_err(|e| EngineError::Knowledge(e.to_string()))?;
        Ok(Engine::build_with(db, Cow::Borrowed(kb)))
    }

    /// An engine over a given signature database and knowledge base (e.g. `Kb::from_dir`).
    pub fn with_kb(db: SignatureDb, kb: Kb) -> Engine {
        Engine::build_with(db, Cow::Owned(kb))
    }

    fn build_with(db: SignatureDb, kb: Cow<'static, Kb>) -> Engine {
        let prefilter = Prefilter::new(
            db.signatures
                .iter()
                .flat_map(|s| s.patterns.iter().map(|r| r.as_str())),
        );
        let gate = Gate::new(&prefilter);
        Engine {
            db,
            prefilter,
            gate,
            kb,
            target: None,
        }
    }

    /// The same engine, its fixes' commands written for `target` (the environment `explain`
    /// was pointed at with `--python`) in that environment's own installer.
    pub fn for_env(mut self, target: Option<TargetEnv>) -> Engine {
        self.target = target;
        self
    }

    /// The knowledge base the message's own fixes are chosen with.
    pub fn kb(&self) -> &Kb {
        &self.kb
    }

    pub fn signatures(&self) -> &SignatureDb {
        &self.db
    }

    pub fn prefilter(&self) -> &Prefilter {
        &self.prefilter
    }

    /// Explains what `input` yields. The machine check is added by the caller from `check`'s
    /// findings on a snapshot ([`Explanation::with_machine`], `cudoctor_analyse::confirm`).
    pub fn explain<R: BufRead>(&self, input: R) -> Explanation {
        let outcome = scan(input, &self.db, &self.prefilter, &self.gate);
        self.build(outcome, self.target.as_ref())
    }

    /// [`Engine::explain`] with the fixes' commands written for `target` (e.g. the environment
    /// a `--deep` probe ran in, whose failure `check` explains).
    pub fn explain_for<R: BufRead>(&self, input: R, target: &TargetEnv) -> Explanation {
        let outcome = scan(input, &self.db, &self.prefilter, &self.gate);
        self.build(outcome, Some(target))
    }

    /// The winner, or the most confident signature seen that refines it: a reason line in the log
    /// (e.g. "Expected query, key and value to all be of dtype ...") makes a generic answer
    /// ("No available kernel") specific.
    fn refined(&self, winner: usize, seen: &[scanner::SignatureSeen]) -> usize {
        let Some(win) = self.db.get(winner) else {
            return winner;
        };
        seen.iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i, s.first.as_ref()?, self.db.get(i)?)))
            .filter(|(_, _, sig)| sig.refines.contains(&win.id))
            // The most telling reason first (a dtype beats "this backend was disabled"), then
            // the earliest line.
            .min_by_key(|(i, hit, sig)| (-((sig.confidence * 1000.0) as i64), hit.line_no, *i))
            .map_or(winner, |(i, _, _)| i)
    }

    fn build(&self, mut outcome: ScanOutcome, target: Option<&TargetEnv>) -> Explanation {
        let xids = std::mem::take(&mut outcome.xids);
        let named = std::mem::take(&mut outcome.named);
        let host = std::mem::take(&mut outcome.host);
        let cards = std::mem::take(&mut outcome.cards);
        let testimonies = std::mem::take(&mut outcome.testimony).each;
        let device_failure_line = outcome.device_failure_line;
        let gpu_ran = std::mem::take(&mut outcome.gpu_ran);
        let last_exception = outcome.last_exception.take();
        // A Windows log names its Python (a portable ComfyUI's python_embeded\python.exe):
        // without an environment given, fixes are PowerShell commands for that interpreter.
        let log_env = named.windows_target();
        let target = target.or(log_env.as_ref());
        // Used only by fixes written for Windows.
        let torch_variant = named
            .torch_variant()
            .map(str::to_string)
            .or_else(|| self.default_windows_variant());
        let newer_build = named.build_newer_than_driver(|v| {
            let d: cudoctor_types::DriverVersion = v.parse().ok()?;
            Some(self.kb.driver_max_cuda(&d)?.major)
        });
        let stack_shown = named.stack_shown();
        let windows_seen = named.windows_seen();
        let mut e = self.build_from_lines(outcome, target, torch_variant.as_deref());
        e = on_windows_dll(e);
        e = another_build::of_another_build(e, another_build::SeenIn::Log, |family, wanted| {
            named.versions_besides(family, wanted)
        });
        let named = named.finish();
        if let Some((driver, build)) = newer_build {
            e = self.with_driver_ceiling(e, driver, build, target);
        } else {
            e = self.with_stack_shown(e, stack_shown, target);
        }
        e = self.with_host_state(e, &host, device_failure_line, target);
        e = self.with_setup(e, &cards, device_failure_line, target);
        if let Some((line_no, text, true)) = last_exception {
            e = with_program_error(e, line_no, text);
        }
        for (line_no, text, t) in testimonies {
            e = with_testimony(e, line_no, text, t);
        }
        e = gpu_ran::after_gpu_ran(e, &gpu_ran);
        if windows_seen {
            e = self.with_windows_bitsandbytes(e);
        }
        e.named_binaries = named;
        self.with_xids(e, &xids)
    }

    /// A framework that does not see the GPU, with no line that names the driver failing: the
    /// driver is not what is missing, the framework's build is (a CPU build, the default install
    /// on Windows). A driver that fails says so in its own words (its library not loaded, NVML,
    /// nvidia-smi), and a log that shows the stack beneath at work (the driver's own header, the
    /// toolkit's compiler) rules it out. Only a clause that read no more than "the GPU is not
    /// available" is answered again, and only outside a container (whose runtime is the first
    /// suspect there, [`in_container`]).
    fn with_stack_shown(
        &self,
        e: Explanation,
        shown: Option<&str>,
        target: Option<&TargetEnv>,
    ) -> Explanation {
        let Some(first) = e.matched.first() else {
            return e;
        };
        let symptom = e.signature.is_none()
            && e.category == Category::DriverMissing
            && matches!(
                first.signature.as_str(),
                "clause:gpu+not_available" | "clause:framework+not_available"
            );
        // A CUDA call that returned an error on this line ("CUDA error: all CUDA-capable devices
        // are busy or unavailable") ran in a build with CUDA.
        let cuda_call_failed = clause::reports_cuda_error(&first.text);
        // A program that reports at INFO level which GPUs it discovered (Ollama, llama.cpp's
        // server) looks for them through the driver with its own bundled CUDA: no CPU wheel.
        let discovery = clause::severity(&first.text) == clause::Severity::Info;
        if !symptom || cuda_call_failed || discovery {
            return e;
        }
        let hit = scanner::ClauseHit {
            line_no: first.line_no,
            text: first.text.clone(),
            rank: first.rank,
            fields: e.fields.clone(),
            clause: clause::Clause {
                category: Category::CpuOnlyWheel,
                subject: clause::Subject::Framework,
                failure: clause::Failure::NotAvailable,
                severity: clause::Severity::Plain,
            },
            count: 1,
        };
        let mut out = self.explained_by_clause(&hit, None, &[], e.stats.clone(), target);
        out.evidence.push(match shown {
            Some(shown) => format!(
                "The log also shows {shown}: the GPU unseen by the framework is its build's doing, not a missing driver."
            ),
            None => "No line says the driver failed (its library, NVML or nvidia-smi): a framework that does not see the GPU is most often a build without CUDA; if `torch.version.cuda` (or the framework's own build info) names a CUDA version, the driver is the next suspect.".to_string(),
        });
        out.also_seen = e.also_seen;
        out
    }

    /// What the log says of the machine's state decides a failure of the GPU that no line
    /// explains (`host_state`): after a resume from suspend the driver's unified-memory module
    /// is broken; with the card's clocks, voltage, power or cooling named, the fault is the
    /// hardware's. Only an unknown answer with a GPU failure in the log, a symptom signature
    /// (an illegal address, an unknown CUDA error) or a clause that read no more than "the GPU
    /// failed or is not available" is answered again.
    fn with_host_state(
        &self,
        e: Explanation,
        host: &host_state::HostContext,
        device_failure_line: Option<u64>,
        target: Option<&TargetEnv>,
    ) -> Explanation {
        let (symptom_signature, symptom_clause) = self.symptom_of(&e);
        let first = e
            .matched
            .first()
            .map(|m| m.signature.as_str())
            .unwrap_or("");
        let unknown_failure = e.category == Category::Unknown && device_failure_line.is_some();
        let (state, category, subject, failure, why, step) = if let Some(r) = &host.resumed {
            let eligible = unknown_failure
                || symptom_signature
                || symptom_clause
                || (e.signature.is_none()
                    && matches!(e.category, Category::DriverMissing | Category::CpuOnlyWheel));
            if !eligible {
                return e;
            }
            (
                r,
                Category::DriverMissing,
                clause::Subject::KernelModule,
                clause::Failure::Failed,
                "after a resume from suspend the driver's unified-memory module (nvidia_uvm) is often left in a state CUDA cannot initialise from",
                "Close the programs that use the GPU, then reload the driver's unified-memory module ('sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm'), or reboot; on laptops and desktops that suspend, NVIDIA's suspend services (nvidia-suspend, nvidia-resume) keep the driver's state across it.",
            )
        } else if let Some(k) = &host.kernel_updated {
            // The driver that cannot be reached after the kernel changed, on the host or seen
            // from a container on it.
            let driver_unreachable =
                matches!(e.category, Category::DriverMissing | Category::Container)
                    && (first.starts_with("clause:driver")
                        || first.starts_with("clause:kernel_module")
                        || e.signature.is_some());
            if !(unknown_failure || driver_unreachable) {
                return e;
            }
            (
                k,
                Category::DriverMissing,
                clause::Subject::KernelModule,
                clause::Failure::NotFound,
                "the operating system or its kernel was upgraded: the driver's kernel module was built for the kernel before, and the new kernel has none until it is rebuilt",
                "Rebuild the driver's kernel module for the running kernel: with the distribution's driver packages or DKMS ('sudo dkms autoinstall', or reinstall the driver package with the headers of the running kernel installed), with a runfile driver rerun its installer; then reboot or 'sudo modprobe nvidia'.",
            )
        } else if let Some(h) = &host.hardware {
            if !(unknown_failure || symptom_signature || symptom_clause) {
                return e;
            }
            (
                h,
                Category::GpuHardware,
                clause::Subject::Hardware,
                clause::Failure::Fault,
                "the machine's hardware shows beside a GPU failure that no line explains (the card's clocks, voltage, power or cooling, a card that drops out, the machine going down, or faults of several kinds at random places): a card that is failing or pushed past what it sustains faults in code that runs elsewhere",
                "Return the card to its default clocks, voltage and power limit (undo overclocking or undervolting, or cap the power with 'nvidia-smi -pl'), check its power supply, risers and cooling, and run again; if it still faults, test the card in another machine.",
            )
        } else if let Some(d) = &host.loaded_on_demand {
            // Only an answer that names no cause, or a symptom of the GPU unavailable.
            if !(e.category == Category::Unknown || symptom_signature || symptom_clause) {
                return e;
            }
            (
                d,
                Category::DriverMissing,
                clause::Subject::KernelModule,
                clause::Failure::NotFound,
                "CUDA works only once the host has used the GPU: the driver's unified-memory module (nvidia_uvm) and its device files are created on demand by the host's first CUDA or nvidia-smi call, which a container or an unprivileged service cannot make",
                "Load the driver's modules and create their device files at boot ('sudo nvidia-modprobe -u -c=0', or 'nvidia-smi' in a boot script or a systemd unit; the driver's nvidia-persistenced keeps them), then start the container or service.",
            )
        } else if let Some(u) = &host.unknown_error {
            // Only an answer that names no cause: a cause read elsewhere explains the error.
            if !(e.category == Category::Unknown || symptom_signature) {
                return e;
            }
            (
                u,
                Category::DriverMissing,
                clause::Subject::KernelModule,
                clause::Failure::Failed,
                "CUDA's own \"unknown error\" with nothing else failing is most often the driver's unified-memory module (nvidia_uvm) not loaded or left broken: the display works without it, CUDA cannot initialise",
                "Load the driver's unified-memory module ('sudo modprobe nvidia_uvm', or 'sudo nvidia-modprobe -u -c=0' on a host whose containers use the GPU, since a container cannot load it), or reboot; if it persists, reinstall the driver.",
            )
        } else {
            return e;
        };
        let reading = (category, subject, failure);
        let mut out = self.explained_by_reading(state.0, state.1.clone(), reading, &e, target);
        out.confidence = out.confidence.min(0.5);
        out.fix
            .insert(0, cudoctor_plan::FixStep::Prose(step.to_string()));
        out.evidence = vec![format!("Line {} says {why}.", state.0)];
        answered_again(out, e, device_failure_line)
    }

    /// The explanation of a cause read from what a report says of its machine or setup, on
    /// line `line_no` (`text`), in place of `e`: explained as a plain clause of that reading
    /// would be.
    fn explained_by_reading(
        &self,
        line_no: u64,
        text: String,
        (category, subject, failure): (Category, clause::Subject, clause::Failure),
        e: &Explanation,
        target: Option<&TargetEnv>,
    ) -> Explanation {
        let hit = scanner::ClauseHit {
            line_no,
            text,
            rank: None,
            fields: BTreeMap::new(),
            clause: clause::Clause {
                category,
                subject,
                failure,
                severity: clause::Severity::Plain,
            },
            count: 1,
        };
        self.explained_by_clause(&hit, None, &[], e.stats.clone(), target)
    }

    /// Whether an answer is a symptom rather than a cause: a signature of a symptom or a
    /// context (an illegal address, an unknown CUDA error), or a clause that read no more than
    /// "the GPU failed, faulted or is not available".
    fn symptom_of(&self, e: &Explanation) -> (bool, bool) {
        let signature = e
            .signature
            .as_deref()
            .and_then(|id| self.db.signatures.iter().find(|s| s.id == id))
            .is_some_and(|s| matches!(s.role, Role::Symptom | Role::Context));
        let first = e
            .matched
            .first()
            .map(|m| m.signature.as_str())
            .unwrap_or("");
        let clause = e.signature.is_none()
            && (first.ends_with("+not_available")
                || first.ends_with("+failed")
                || first.ends_with("+fault"));
        (signature, clause)
    }

    /// The setup the report lists judged by the knowledge base's tables ([`setup`]: its driver
    /// against its builds and card, torch's companions against torch, its card against its
    /// builds) decides a failure that no line explains (an unknown answer or a symptom).
    fn with_setup(
        &self,
        e: Explanation,
        cards: &setup::Setup,
        device_failure_line: Option<u64>,
        target: Option<&TargetEnv>,
    ) -> Explanation {
        // A fault (an illegal address, the card off the bus) is not how a missing kernel
        // image shows.
        let symptom_signature = self.symptom_of(&e).0;
        let symptom_clause = e.signature.is_none()
            && e.matched.first().is_some_and(|m| {
                m.signature.ends_with("+failed") || m.signature.ends_with("+not_available")
            });
        if !(e.category == Category::Unknown || symptom_signature || symptom_clause) {
            return e;
        }
        let Some(setup::Verdict {
            line_no,
            line,
            category,
            subject,
            failure,
            cause,
            step,
        }) = cards.verdict(&self.kb)
        else {
            return e;
        };
        let reading = (category, subject, failure);
        let mut out = self.explained_by_reading(line_no, line, reading, &e, target);
        out.confidence = out.confidence.min(0.4);
        out.evidence = vec![format!("Line {line_no}: {cause}")];
        out.cause = cause;
        out.fix.insert(0, cudoctor_plan::FixStep::Prose(step));
        answered_again(out, e, device_failure_line)
    }

    /// bitsandbytes' CUDA setup (the messages of its releases before 0.43, which had no Windows
    /// CUDA build) failing on a Windows machine: it loaded its CPU library because no CUDA one
    /// exists there, not because a CUDA library is off the loader's path.
    fn with_windows_bitsandbytes(&self, mut e: Explanation) -> Explanation {
        let setup = matches!(
            e.signature.as_deref(),
            Some("bitsandbytes-cuda-setup-failed" | "bitsandbytes-libcudart-not-found")
        );
        if !setup {
            return e;
        }
        // The signature's fix (upgrade bitsandbytes, for the log's own Python) is the fix: its
        // releases from 0.43 on have a Windows CUDA build.
        e.category = Category::CpuOnlyWheel;
        e.confidence = e.confidence.min(0.7);
        e.title = "bitsandbytes has no CUDA build for Windows in this release".to_string();
        e.cause = "bitsandbytes' CUDA setup failed on a Windows machine: its releases before 0.43, which write these CUDA SETUP messages, had no Windows CUDA build, so only their CPU library loads there, whatever CUDA the machine has.".to_string();
        e.evidence.push(
            "The log is from a Windows machine; on Linux the same messages mean a CUDA library off the loader's path.".to_string(),
        );
        e
    }

    /// A log that shows the driver's highest CUDA (nvidia-smi's "CUDA Version") older in its
    /// major than a framework build it names: when nothing else names a cause, or a clause read
    /// only a symptom of it (a version mismatch, a GPU not used, a CPU fallback), the driver is
    /// too old for that build.
    fn with_driver_ceiling(
        &self,
        e: Explanation,
        driver: u32,
        build: u32,
        target: Option<&TargetEnv>,
    ) -> Explanation {
        let symptom = e.signature.is_none()
            && matches!(
                e.category,
                Category::VersionSuffixMismatch | Category::DriverMissing | Category::CpuOnlyWheel
            );
        if !(e.category == Category::Unknown || symptom) {
            return e;
        }
        let text = format!(
            "nvidia-smi: CUDA Version {driver}.x (the driver's highest); a framework build for CUDA {build} in the same log"
        );
        let hit = scanner::ClauseHit {
            line_no: e.matched.first().map_or(1, |m| m.line_no),
            text: text.clone(),
            rank: None,
            fields: BTreeMap::new(),
            clause: clause::Clause {
                category: Category::DriverTooOld,
                subject: clause::Subject::Driver,
                failure: clause::Failure::TooOld,
                severity: clause::Severity::Plain,
            },
            count: 1,
        };
        let mut out = self.explained_by_clause(&hit, None, &[], e.stats.clone(), target);
        out.evidence = vec![format!(
            "The log shows the driver's highest CUDA as {driver}.x and a build for CUDA {build}: a newer CUDA major than the driver's never runs on it (minor versions of one major do)."
        )];
        if e.is_known() {
            out.evidence.push(format!(
                "Also read: {} (line {}), which follows from it.",
                e.title,
                e.matched.first().map_or(0, |m| m.line_no)
            ));
        }
        out.also_seen = e.also_seen;
        out
    }

    /// Xid events of a pasted kernel log: a GPU fault the catalogue asks to reset, reboot or
    /// report for outranks every software answer (the errors after it follow from it); else
    /// they explain a log nothing else explains, and otherwise stand as evidence.
    fn with_xids(&self, mut e: Explanation, xids: &xid::XidLog) -> Explanation {
        if xids.is_empty() {
            return e;
        }
        let (title, cause, per_gpu, fix) = xid::describe(xids, &self.kb);
        let fault = xids.gpus.values().flatten().any(|s| {
            self.kb
                .xid(s.xid)
                .is_some_and(|r| cudoctor_kb::XidAction::is_fault(r.action))
        });
        if !(fault || matches!(e.category, Category::Unknown | Category::GpuHardware)) {
            e.evidence.extend(per_gpu);
            return e;
        }
        let first = xids.first();
        let mut fields = BTreeMap::new();
        if let Some(f) = first {
            fields.insert("xid".to_string(), f.xid.to_string());
        }
        if let Some(pci) = xids.gpus.keys().next() {
            fields.insert("pci".to_string(), pci.clone());
        }
        let mut evidence = per_gpu;
        if e.is_known() && e.category != Category::GpuHardware {
            evidence.push(format!(
                "Also in the log: {} (line {}); after a GPU fault, software errors follow from it.",
                e.title,
                e.matched.first().map_or(0, |m| m.line_no)
            ));
        }
        let matched = xids
            .gpus
            .values()
            .flatten()
            .map(|s| MatchedLine {
                line_no: s.first_line,
                text: s.first_text.clone(),
                rank: None,
                signature: format!("xid-{}", s.xid),
            })
            .take(MAX_MATCHED)
            .collect();
        let sources = first
            .and_then(|f| self.kb.xid(f.xid))
            .map(|r| r.sources.clone())
            .unwrap_or_default();
        Explanation {
            category: Category::GpuHardware,
            confidence: if fault { 0.9 } else { 0.7 },
            title,
            cause,
            fix: fix.into_iter().map(cudoctor_plan::FixStep::Prose).collect(),
            fix_elsewhere: Vec::new(),
            matched,
            fields,
            signature: Some("nvrm-xid".to_string()),
            facts_check: None,
            named_binaries: std::mem::take(&mut e.named_binaries),
            evidence,
            also_seen: e.also_seen,
            looked_for: Vec::new(),
            machine: None,
            sources,
            stats: e.stats,
        }
    }

    /// The CUDA build of the newest torch that a plain Linux install gets, where PyTorch's
    /// index has it for Windows too: the build a Windows fix installs when the log names none.
    fn default_windows_variant(&self) -> Option<String> {
        let release = self.kb.newest_torch()?;
        let tag = release.pypi_default.as_deref()?;
        let (variants, _) = self
            .kb
            .platform_variants(cudoctor_kb::Platform::Windows, release)?;
        variants
            .iter()
            .any(|v| v.tag == tag)
            .then(|| tag.to_string())
    }

    fn build_from_lines(
        &self,
        outcome: ScanOutcome,
        target: Option<&TargetEnv>,
        torch_variant: Option<&str>,
    ) -> Explanation {
        let ScanOutcome {
            seen,
            clauses,
            container_line,
            runtime_line,
            driver_on_request_line,
            stats,
            nonblank_lines,
            head,
            ..
        } = outcome;
        let winner = pick_winner(&self.db, &seen).map(|w| self.refined(w, &seen));
        let mut clauses = clauses;
        // A short report that no line explains alone is read as one clause: its subject in
        // one sentence, its failure in another ("cuda not working" / "installed the CPU version").
        if winner.is_none()
            && scanner::pick_clause(&clauses).is_none()
            && stats.lines <= scanner::HEAD_LINES
        {
            clauses.extend(head_as_one_clause(&head));
        }
        if let Some(c) = self.answering_clause(&clauses, winner, &seen) {
            let e = self.explained_by_clause(c, winner, &seen, stats, target);
            let e = bound_on_request(e, driver_on_request_line);
            return in_container(e, container_line, runtime_line);
        }
        let also_seen = self.also_seen(&seen, winner);

        let Some(win) = winner.and_then(|w| Some((w, self.db.get(w)?, seen.get(w)?))) else {
            return self.unknown(&seen, stats, nonblank_lines, also_seen, target);
        };
        let e = self.explained_by_signature(win, &seen, also_seen, stats, target, torch_variant);
        let e = bound_on_request(e, driver_on_request_line);
        in_container(e, container_line, runtime_line)
    }

    /// The clause that answers, or else a build without CUDA stated anywhere in the log when
    /// the signature that would win is only a symptom of it.
    fn answering_clause<'c>(
        &self,
        clauses: &'c [scanner::ClauseHit],
        winner: Option<usize>,
        seen: &[scanner::SignatureSeen],
    ) -> Option<&'c scanner::ClauseHit> {
        // A build without CUDA stated anywhere in the log ("pip install onnxruntime 1.5") is the
        // cause of the CUDA libraries its CUDA half could not load or the GPU it does not see:
        // a CPU package has no CUDA libraries to load.
        let cpu_build = clauses.iter().find(|c| {
            c.clause.category == Category::CpuOnlyWheel
                && c.clause.failure == clause::Failure::NotCompiled
                && c.clause.severity <= clause::Severity::Plain
        });
        scanner::pick_clause(clauses)
            .map(|c| match cpu_build {
                Some(b)
                    if matches!(
                        c.clause.category,
                        Category::LibraryPath | Category::DriverMissing
                    ) && c.clause.failure != clause::Failure::UndefinedSymbol =>
                {
                    b
                }
                _ => c,
            })
            .filter(|c| self.clause_answers(c, winner, seen))
            .or_else(|| {
                // An unresolved symbol whose owner its name tells, on the line the symptom
                // signature read, whatever louder line the log has ("Unable to load nvcuda"
                // above "libcuda.so.418.74: undefined symbol: cuCtxCreate_v3").
                clauses.iter().find(|c| {
                    matches!(
                        c.clause.failure,
                        clause::Failure::NotCompiled
                            | clause::Failure::NotNvidia
                            | clause::Failure::UndefinedSymbol
                    ) && self.clause_answers(c, winner, seen)
                })
            })
    }

    /// The explanation the winning signature gives: its texts and fixes from its own line's
    /// fields, the lines of its category, and what else the log showed.
    fn explained_by_signature(
        &self,
        (win_index, sig, win_seen): (usize, &signatures::Signature, &scanner::SignatureSeen),
        seen: &[scanner::SignatureSeen],
        also_seen: Vec<AlsoSeen>,
        stats: ScanStats,
        target: Option<&TargetEnv>,
        torch_variant: Option<&str>,
    ) -> Explanation {
        let mut fields = win_seen
            .first
            .as_ref()
            .map(|h| h.fields.clone())
            .unwrap_or_default();
        let cause = sig.render_cause(&fields);
        let fix = self.signature_fix(sig, &fields, target, torch_variant);
        // Fields from other signatures of the same category help the machine check (e.g. the
        // architecture named by an earlier warning); they never change the texts above.
        for (index, s) in seen.iter().enumerate() {
            if index == win_index || self.db.get(index).map(|o| o.category) != Some(sig.category) {
                continue;
            }
            if let Some(hit) = &s.first {
                for (k, v) in &hit.fields {
                    fields.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        let matched = self.matched_lines(seen, win_index, sig.category);
        let evidence = self.signature_evidence(win_seen, &also_seen, sig.category, &matched);
        Explanation {
            category: sig.category,
            confidence: sig.confidence,
            title: sig.title.clone(),
            cause,
            fix,
            fix_elsewhere: Vec::new(),
            named_binaries: Vec::new(),
            matched,
            fields,
            signature: Some(sig.id.clone()),
            facts_check: None,
            evidence,
            also_seen,
            looked_for: Vec::new(),
            machine: None,
            sources: sig.sources.clone(),
            stats,
        }
    }

    /// The signature's fixes for the target (torch's variant filled in where the log named
    /// none), then the remedies its message's fields call for.
    fn signature_fix(
        &self,
        sig: &signatures::Signature,
        fields: &BTreeMap<String, String>,
        target: Option<&TargetEnv>,
        torch_variant: Option<&str>,
    ) -> Vec<cudoctor_plan::FixStep> {
        let mut fix_fields = fields.clone();
        if let Some(v) = torch_variant {
            fix_fields
                .entry(signatures::TORCH_VARIANT.to_string())
                .or_insert_with(|| v.to_string());
        }
        // A Windows DLL's failure is fixed on Windows, whatever machine reads the log.
        let windows_generic = TargetEnv {
            windows: true,
            ..TargetEnv::generic()
        };
        let target = match target {
            Some(t) if t.windows => Some(t),
            Some(t) if sig.category != Category::WindowsDll => Some(t),
            _ if sig.category == Category::WindowsDll => Some(&windows_generic),
            other => other,
        };
        let mut fix = sig.render_fixes(&fix_fields, target);
        fix.extend(message_remedy::fixes(
            &self.kb,
            sig.category,
            fields,
            target.unwrap_or(&TargetEnv::generic()),
        ));
        fix
    }

    /// The lines of the winning signature and of the others of its category, in log order,
    /// each once, bounded.
    fn matched_lines(
        &self,
        seen: &[scanner::SignatureSeen],
        win_index: usize,
        category: Category,
    ) -> Vec<MatchedLine> {
        let mut matched: Vec<MatchedLine> = Vec::new();
        for (index, s) in seen.iter().enumerate() {
            let Some(other) = self.db.get(index) else {
                continue;
            };
            if index != win_index && other.category != category {
                continue;
            }
            for (line_no, text, rank) in &s.lines {
                matched.push(MatchedLine {
                    line_no: *line_no,
                    text: text.clone(),
                    rank: *rank,
                    signature: other.id.clone(),
                });
            }
        }
        matched.sort_by_key(|m| m.line_no);
        matched.dedup_by(|a, b| a.line_no == b.line_no && a.text == b.text);
        matched.truncate(MAX_MATCHED);
        matched
    }

    /// How often the error appeared (and on which ranks), and the failures of other
    /// categories seen before or after it.
    fn signature_evidence(
        &self,
        win_seen: &scanner::SignatureSeen,
        also_seen: &[AlsoSeen],
        category: Category,
        matched: &[MatchedLine],
    ) -> Vec<String> {
        let mut evidence = Vec::new();
        if win_seen.count > 1 {
            let ranks = if win_seen.ranks.is_empty() {
                String::new()
            } else {
                format!(" on ranks {}", join_ranks(&win_seen.ranks))
            };
            evidence.push(format!(
                "The same error appears {} times{ranks}.",
                win_seen.count
            ));
        }
        for a in also_seen
            .iter()
            .filter(|a| a.category != category && a.role != Role::Context)
        {
            let title = self
                .db
                .by_id(&a.signature)
                .map(|s| s.title.as_str())
                .unwrap_or_default();
            let when = if a.line_no < matched.first().map(|m| m.line_no).unwrap_or(0) {
                "earlier"
            } else {
                "later"
            };
            evidence.push(
                format!(
                    "Also seen {when} (line {}, {:?}): {title}.",
                    a.line_no, a.role
                )
                .replace("Cause", "error")
                .replace("Symptom", "error")
                .replace("Warning", "warning"),
            );
        }
        evidence
    }

    /// Every signature seen but `except` (the answer's), earliest first, bounded.
    fn also_seen(&self, seen: &[scanner::SignatureSeen], except: Option<usize>) -> Vec<AlsoSeen> {
        let mut out: Vec<AlsoSeen> = seen
            .iter()
            .enumerate()
            .filter(|(index, _)| Some(*index) != except)
            .filter_map(|(index, s)| {
                let (hit, sig) = (s.first.as_ref()?, self.db.get(index)?);
                Some(AlsoSeen {
                    signature: sig.id.clone(),
                    category: sig.category,
                    role: sig.role,
                    line_no: hit.line_no,
                    text: hit.text.clone(),
                    count: s.count,
                })
            })
            .collect();
        out.sort_by_key(|a| a.line_no);
        out.truncate(MAX_ALSO_SEEN);
        out
    }

    /// Whether a clause answers instead of the signatures: when none named a cause, or when the
    /// one that would win is a warning (by its role or its line's wording) and the clause is a
    /// specific one read from a fatal or error line of another family.
    fn clause_answers(
        &self,
        c: &scanner::ClauseHit,
        winner: Option<usize>,
        seen: &[scanner::SignatureSeen],
    ) -> bool {
        let Some(w) = winner else {
            return true;
        };
        let (Some(sig), Some(hit)) = (self.db.get(w), seen.get(w).and_then(|s| s.first.as_ref()))
        else {
            return true;
        };
        let weak_signature = sig.role == Role::Warning || scanner::is_warning_line(&hit.text);
        // The first failure is the root: a specific clause on a fatal line before the
        // signature's line names the cause the later line follows from.
        let earlier_fatal = c.clause.severity == clause::Severity::Fatal && c.line_no < hit.line_no;
        // An unresolved symbol's owner (read from its name or its library's path: the driver's
        // entry point, NCCL's, a stub library) is more precise than a generic symptom
        // signature read from the same line.
        let symbol_owner = sig.role == Role::Symptom
            && c.clause.failure == clause::Failure::UndefinedSymbol
            && c.line_no == hit.line_no
            && clause::symbol_owner(&c.text) == Some(c.clause.category);
        // A build without CUDA stated anywhere in the log is the cause of a symptom signature
        // ("No CUDA GPUs are available" with `torch 2.2.0+cpu` listed): the symptom follows
        // from the build, whatever line comes first.
        let build_states_cause = sig.role == Role::Symptom
            && c.clause.failure == clause::Failure::NotCompiled
            && c.clause.category == Category::CpuOnlyWheel
            && c.clause.severity <= clause::Severity::Plain;
        // A machine whose GPU is not NVIDIA's has no CUDA driver to be too old or missing, nor
        // a GPU to give a container: what the driver's or the runtime's message says follows
        // from that.
        let not_nvidia = c.clause.failure == clause::Failure::NotNvidia
            && matches!(
                sig.category,
                Category::DriverTooOld
                    | Category::DriverMissing
                    | Category::CpuOnlyWheel
                    | Category::Container
            );
        // A status that blames the program's call (a bad parameter, a kernel fault) after a
        // version mismatch of the stack (a library of another version loaded, a driver too old)
        // stated on an earlier line or on its own line before the status, whatever its
        // severity: the call failed because the stack is wrong, as a cuDNN older than the build
        // reports its own parameters as bad. Other causes count only from a line that is not a
        // warning: a missing optional library warned of (TensorRT's plugins on a healthy
        // machine) faults no kernel that runs.
        let states_version = matches!(
            c.clause.failure,
            clause::Failure::Mismatch | clause::Failure::TooOld
        );
        let stack_before_program_symptom = sig.role == Role::Symptom
            && sig.category == Category::NotEnvironment
            && (c.line_no < hit.line_no
                && (states_version || c.clause.severity <= clause::Severity::Plain)
                || c.line_no == hit.line_no
                    && states_version
                    && said_before_the_status(sig, &hit.text, c));
        let outranks = (weak_signature && c.clause.severity <= clause::Severity::Error
            || earlier_fatal
            || symbol_owner
            || stack_before_program_symptom)
            && c.clause.is_specific();
        (outranks || build_states_cause || not_nvidia) && c.clause.category != sig.category
    }

    /// The explanation a clause gives: its family's texts, the line's own fields, and the
    /// signatures seen elsewhere in the log as "also seen".
    fn explained_by_clause(
        &self,
        c: &scanner::ClauseHit,
        winner: Option<usize>,
        seen: &[scanner::SignatureSeen],
        stats: ScanStats,
        target: Option<&TargetEnv>,
    ) -> Explanation {
        let gap = message_remedy::api_gap(&c.fields);
        let api_gap = gap.is_some();
        let (title, cause, fix) = gap
            .or_else(|| family::builtin().and_then(|f| f.render(&c.clause, &c.fields)))
            .unwrap_or_else(|| (c.clause.category.to_string(), String::new(), Vec::new()));
        let mut fix: Vec<cudoctor_plan::FixStep> =
            fix.into_iter().map(cudoctor_plan::FixStep::Prose).collect();
        fix.extend(message_remedy::fixes(
            &self.kb,
            c.clause.category,
            &c.fields,
            target.unwrap_or(&TargetEnv::generic()),
        ));
        let also_seen = self.also_seen(seen, None);
        let mut evidence = vec![format!(
            "Read from the wording of line {} ({} of the {}), not from a known message: treat the cause as likely, not certain.",
            c.line_no,
            family::failure_words(c.clause.failure),
            family::subject_words(c.clause.subject)
        )];
        if c.count > 1 {
            evidence.push(format!("{} more lines say the same.", c.count - 1));
        }
        if let Some(w) = winner.and_then(|w| self.db.get(w)) {
            evidence.push(format!(
                "A warning earlier in the log ({}) is not taken for the cause: the line above is a failure.",
                w.title
            ));
        }
        let confidence = match c.clause.severity {
            clause::Severity::Fatal | clause::Severity::Error => 0.6,
            _ => 0.45,
        };
        Explanation {
            category: c.clause.category,
            confidence,
            title,
            cause,
            fix,
            fix_elsewhere: Vec::new(),
            named_binaries: Vec::new(),
            matched: vec![MatchedLine {
                line_no: c.line_no,
                text: c.text.clone(),
                rank: c.rank,
                signature: format!(
                    "clause:{}+{}",
                    clause::subject_id(c.clause.subject),
                    clause::failure_id(c.clause.failure)
                ),
            }],
            fields: c.fields.clone(),
            signature: None,
            facts_check: api_gap.then_some(FactsCheck::PackageApiGap),
            evidence,
            also_seen,
            looked_for: Vec::new(),
            machine: None,
            sources: Vec::new(),
            stats,
        }
    }

    fn unknown(
        &self,
        seen: &[scanner::SignatureSeen],
        stats: ScanStats,
        nonblank: u64,
        also_seen: Vec<AlsoSeen>,
        target: Option<&TargetEnv>,
    ) -> Explanation {
        let mut looked: BTreeMap<Category, Vec<String>> = BTreeMap::new();
        for s in &self.db.signatures {
            if s.category != Category::Unknown {
                looked.entry(s.category).or_default().push(s.title.clone());
            }
        }
        let looked_for = looked
            .into_iter()
            .map(|(category, signatures)| LookedFor {
                category,
                signatures,
            })
            .collect();
        // A generic CUDA error without a cause is shown as context, never as a cause.
        let context = seen.iter().enumerate().find_map(|(i, s)| {
            let sig = self.db.get(i)?;
            (sig.role == Role::Context).then_some(())?;
            Some((sig, s.first.as_ref()?, s))
        });
        let (title, cause, fix, matched, fields) = if stats.looks_binary() {
            (
                "The input is binary data, not a text log".to_string(),
                format!(
                    "Nothing to explain: the input is binary data, not a text log ({} bytes, {} of {} lines hold NUL bytes).",
                    stats.bytes, stats.binary_lines, stats.lines
                ),
                vec![cudoctor_plan::FixStep::Prose("Give the log file itself or paste the error text (a core dump, an archive or a disk image cannot be explained).".to_string())],
                Vec::new(),
                BTreeMap::new(),
            )
        } else if nonblank == 0 {
            let why = stats
                .read_error
                .as_ref()
                .map(|e| format!(" (reading stopped: {e})"))
                .unwrap_or_default();
            (
                "Nothing to explain".to_string(),
                format!("Nothing to explain: the input is empty{why}."),
                Vec::new(),
                Vec::new(),
                BTreeMap::new(),
            )
        } else if let Some((sig, hit, s)) = context {
            let matched = s
                .lines
                .iter()
                .map(|(line_no, text, rank)| MatchedLine {
                    line_no: *line_no,
                    text: text.clone(),
                    rank: *rank,
                    signature: sig.id.clone(),
                })
                .collect();
            (
                sig.title.clone(),
                sig.render_cause(&hit.fields),
                sig.render_fixes(&hit.fields, target),
                matched,
                hit.fields.clone(),
            )
        } else {
            (
                "No known error found".to_string(),
                "No known error signature matched the input, so no cause can be named.".to_string(),
                Vec::new(),
                Vec::new(),
                BTreeMap::new(),
            )
        };
        Explanation {
            category: Category::Unknown,
            confidence: 0.0,
            title,
            cause,
            fix,
            fix_elsewhere: Vec::new(),
            named_binaries: Vec::new(),
            matched,
            fields,
            signature: None,
            facts_check: None,
            evidence: Vec::new(),
            also_seen,
            looked_for,
            machine: None,
            sources: Vec::new(),
            stats,
        }
    }
}

/// A cause read from what the report says of its machine or setup (`out`) in place of the
/// answer its lines gave (`e`): what that answer read becomes evidence that follows from it,
/// or the line that says the GPU failed without a cause, and what else the log showed stays.
fn answered_again(
    mut out: Explanation,
    e: Explanation,
    device_failure_line: Option<u64>,
) -> Explanation {
    if e.is_known() {
        out.evidence.push(format!(
            "Also read: {} (line {}), which follows from it.",
            e.title,
            e.matched.first().map_or(0, |m| m.line_no)
        ));
    } else if let Some(l) = device_failure_line {
        out.evidence.push(format!(
            "Line {l} says the GPU or CUDA failed, without a cause."
        ));
    }
    out.also_seen = e.also_seen;
    out
}

/// A short report's head read as one clause, its subject in one sentence and its failure in
/// another. Across sentences a subject pairs only with a named failure: a generic "error"
/// elsewhere in the report ("srun: error") says nothing of it.
fn head_as_one_clause(head: &str) -> Option<scanner::ClauseHit> {
    let mut c = clause::read(head).or_else(|| clause::read_prose(head))?;
    // A report lists its setup (the container it runs in, the driver's version, the GPU)
    // beside its failure: a generic failure ("报错", "gpu failure") says nothing of those.
    // A tool that acts (a compiler, NCCL) is what a generic failure is said of.
    // A fault of the code running on the GPU named in the report (a misaligned address, an
    // illegal access) is what its generic failure ("error when using X") is said of: the
    // program's kernel faulted, and a tool the report names elsewhere with its version
    // ("nccl 2.30.7 + cuda 13.1") is its setup, not what failed.
    if head.split(" . ").any(scanner::names_an_attention_operator) {
        c = scanner::refused_by_attention(c);
    }
    let fault = host_state::names_fault(head);
    if c.failure == clause::Failure::Failed && (clause::is_setup_subject(c.subject) || fault) {
        let mut words = clause::words(head);
        words.failures.retain(|f| *f != clause::Failure::Failed);
        c = clause::from_words(head, &words)?;
    }
    Some(scanner::ClauseHit {
        line_no: 1,
        text: scanner::shown(head),
        rank: None,
        fields: clause::fields(head),
        clause: clause::Clause {
            severity: clause::Severity::Plain,
            ..c
        },
        count: 1,
    })
}

/// Whether a clause read from a signature's line is said by the words before the signature's
/// match ("... CUDNN version in your machine is 7.3, which may cause serious incompatible bug.
/// [Hint: CUDNN_STATUS_BAD_PARAM]"), not by the status's own name (`..._VERSION_MISMATCH`,
/// "incompatible driver context").
fn said_before_the_status(sig: &signatures::Signature, line: &str, c: &scanner::ClauseHit) -> bool {
    let Some(start) = sig
        .patterns
        .iter()
        .filter_map(|re| re.find(line))
        .map(|m| m.start())
        .min()
    else {
        return false;
    };
    let head = line.get(..start).unwrap_or_default();
    clause::from_words(head, &clause::words(head))
        .is_some_and(|h| h.category == c.clause.category && h.failure == c.clause.failure)
}

/// A log that ends on the program's own error about its data (an index, a key, a value, a
/// division: [`clause::is_program_error`], naming nothing of the stack) after the line an
/// environment cause was read from: the program failed, and the CUDA error before is where its
/// fault surfaced first (an index out of range that cuBLAS reports as an allocation failure).
fn with_program_error(e: Explanation, line_no: u64, text: String) -> Explanation {
    let answered_before = e.matched.first().is_some_and(|m| m.line_no < line_no);
    if !e.is_known() || e.category == Category::NotEnvironment || !answered_before {
        return e;
    }
    let read = e.matched.first().map_or(0, |m| m.line_no);
    let cause = format!(
        "The log ends on an error the program raises about its own values ({}), which names nothing of the CUDA stack. The error read earlier ({}) is most often where that fault surfaced first, not an installation problem.",
        text, e.title
    );
    let evidence = vec![format!(
        "Also read: {} (line {read}), before the program's error.",
        e.title
    )];
    let mut e = e.said_instead(
        Category::NotEnvironment,
        0.5,
        "The program's own error ends the log".to_string(),
        cause,
        vec![cudoctor_plan::FixStep::Prose(
            "Run the failing step once on the CPU or with CUDA_LAUNCH_BLOCKING=1: the program's error then shows at its own line (an index or label out of range, a shape, a key). Fix that first; if the CUDA error remains alone, explain that log again.".to_string(),
        )],
        evidence,
    );
    e.matched = vec![MatchedLine {
        line_no,
        text,
        rank: None,
        signature: "clause:program+error".to_string(),
    }];
    e.fields = BTreeMap::new();
    e
}

/// An answer of the environment in a report that says, in prose, the fault is the program's
/// ([`testimony`]: it is meant to work without a GPU, the failure came with a commit of its
/// source, its build files or flags are wrong, its published build is broken, its requirements
/// leave out what it imports): the reporter found the environment sound, and the error read is
/// how the program's fault showed.
fn with_testimony(
    e: Explanation,
    line_no: u64,
    text: String,
    t: testimony::Testimony,
) -> Explanation {
    if !e.is_known() || e.category == Category::NotEnvironment {
        return e;
    }
    // A leak speaks only of memory: the program holds what it should free.
    if t == testimony::Testimony::MemoryLeak && e.category != Category::OutOfMemory {
        return e;
    }
    // A CPU run fails for lack of CUDA only where the program still asks for it: other
    // failures (memory, a fault) are not what the CPU setting speaks of.
    if t == testimony::Testimony::CpuAsked
        && !matches!(
            e.category,
            Category::CpuOnlyWheel
                | Category::DriverMissing
                | Category::WindowsDll
                | Category::LibraryPath
        )
    {
        return e;
    }
    let (title, why, fix) = match t {
        testimony::Testimony::WithoutGpuByDesign => (
            "The program is meant to work without a GPU and does not",
            "The report says the program should run or build on a machine without a GPU and fails there: that it asks for the GPU, the driver or CUDA on such a machine is the program's doing (GPU code enabled unconditionally), not a broken installation.",
            "Make the GPU part optional in the program (a build feature or a runtime check that falls back to the CPU), or use the release that still runs without a GPU.",
        ),
        testimony::Testimony::ProgramRegression => (
            "The failure came with a change of the program",
            "The report locates the failure in the program's own history (it began with a commit): the machine did not change, so the error is how the program's change shows, not an installation problem.",
            "Use the last release or commit that works and report the commit to the project; the environment needs no change.",
        ),
        testimony::Testimony::BuildFileDefect => (
            "The report finds a defect in the program's build files",
            "The report locates the failure in the program's own build files (a flag, a path or an option written wrongly there): whatever the compiler or loader then says, it was given the wrong input, not a broken installation.",
            "Correct the build file as the report says (or use the release where it is fixed) and build again; the toolkit and the driver need no change.",
        ),
        testimony::Testimony::PublishedBuildBroken => (
            "The report says the project's published build is broken",
            "The report says the release, nightly or wheel as published is broken (a library it needs left out, a build step gone wrong): a packaging mistake of the project, which the error read shows, not a fault of the user's installation.",
            "Install the previous release (or the next one, where the project fixed it), and follow the project's issue for the corrected build; the environment needs no change.",
        ),
        testimony::Testimony::CpuAsked => (
            "The program asks for CUDA although it was told to run on the CPU",
            "The report runs the program on the CPU (its CPU option, a CPU device) and it still fails for lack of CUDA: the program, or code it loads, asks for the GPU regardless (a device or a CUDA kernel loader chosen unconditionally). A CPU run needs no CUDA, so nothing of the installation is at fault.",
            "Find where the program still selects CUDA (a device written as 'cuda', .cuda() calls, a CUDA extension loaded at import) and make it follow the CPU setting, or use the release that does; nothing needs installing for a CPU run.",
        ),
        testimony::Testimony::HardCoded => (
            "The report finds the failing value hard-coded in the program",
            "The report says the program hard-codes what fails (a library's file name, a device, a path): on a setup other than the one it was written for that value is wrong, which is the program's to fix, not the installation's.",
            "Use the release where the value follows the installed stack (or patch the program to look it up), rather than changing the environment to match the hard-coded value.",
        ),
        testimony::Testimony::MemoryLeak => (
            "The program's GPU memory leaks while it runs",
            "The report finds the GPU memory growing while the program runs (a leak across steps, epochs or calls) until an allocation fails: the program keeps what it should free (tensors kept with their graphs, results gathered on the GPU, caches that grow), so the card is not too small and nothing of the installation is at fault.",
            "Find what the loop keeps: accumulate losses and metrics as Python numbers (loss.item()) or detached tensors, run evaluation under torch.no_grad(), move gathered outputs to the CPU, and watch torch.cuda.memory_allocated() per step; torch.cuda.empty_cache() returns only cached memory, not what the program still references.",
        ),
        testimony::Testimony::UndeclaredDependency => (
            "A package the program imports is missing from its requirements",
            "The report says the program imports a package its declared requirements leave out: an omission of the program's packaging, not a fault of the CUDA stack.",
            "Install the missing package (or the project's extra that brings it), and report the omission so that the requirements declare it.",
        ),
    };
    let read = e.matched.first().map_or(0, |m| m.line_no);
    Explanation {
        category: Category::NotEnvironment,
        confidence: 0.45,
        title: title.to_string(),
        cause: why.to_string(),
        fix: vec![cudoctor_plan::FixStep::Prose(fix.to_string())],
        fix_elsewhere: Vec::new(),
        named_binaries: e.named_binaries,
        matched: vec![MatchedLine {
            line_no,
            text,
            rank: None,
            signature: "testimony:program".to_string(),
        }],
        fields: BTreeMap::new(),
        signature: None,
        facts_check: None,
        evidence: vec![format!(
            "Also read: {} (line {read}), which the report's own words (line {line_no}) put down to the program.",
            e.title
        )],
        also_seen: e.also_seen,
        looked_for: Vec::new(),
        machine: None,
        sources: Vec::new(),
        stats: e.stats,
    }
}

/// A library the loader could not load that is a Windows DLL (`cudart64_110.dll`,
/// `cudnn64_8.dll`): Windows' DLL search path, not the Linux loader's, is what lacks it, and its
/// fixes are Windows'.
fn on_windows_dll(mut e: Explanation) -> Explanation {
    let dll = e
        .fields
        .get("lib")
        .is_some_and(|l| l.to_ascii_lowercase().ends_with(".dll"));
    if e.category != Category::LibraryPath || !dll {
        return e;
    }
    e.category = Category::WindowsDll;
    e.evidence.insert(
        0,
        "The library is a Windows DLL: Windows looks for it on PATH and in the directories a program adds, not on LD_LIBRARY_PATH.".to_string(),
    );
    if let Some(f) = family::builtin().and_then(|f| f.by_category.get(&Category::WindowsDll)) {
        let steps: Vec<cudoctor_plan::FixStep> = f
            .fix
            .iter()
            .cloned()
            .map(cudoctor_plan::FixStep::Prose)
            .collect();
        e.fix.splice(0..0, steps);
    }
    e
}

/// Under a runtime that binds the host's driver only when asked (Singularity or Apptainer
/// without `--nv`), the CUDA runtime that finds no driver library says the driver is
/// "insufficient": with no driver version stated, that is a driver not bound in, which
/// [`in_container`] then gives to the runtime. A version stated against the requirement is the
/// host's own driver, too old.
fn bound_on_request(mut e: Explanation, line: Option<u64>) -> Explanation {
    let unversioned = !e.matched.iter().any(|m| states_a_version(&m.text));
    if line.is_some() && e.category == Category::DriverTooOld && unversioned {
        e.category = Category::DriverMissing;
    }
    e
}

/// Whether a line states a version number ("535.104", "12.1"): digits, a dot, digits.
fn states_a_version(line: &str) -> bool {
    line.as_bytes()
        .windows(3)
        .any(|w| w[0].is_ascii_digit() && w[1] == b'.' && w[2].is_ascii_digit())
}

/// A driver that cannot be reached from inside a container is the runtime's doing: the devices
/// or the driver's libraries were not given to it. Under WSL alone (no runtime named) Windows
/// gives the driver's libraries in `/usr/lib/wsl/lib`, and a program that finds none, or a
/// Linux driver's `libcuda` first, is the loader's: the corpora's WSL threads were fixed on the
/// loader path (`LD_LIBRARY_PATH`, the linker cache, a Linux driver removed), unless the
/// driver's own tools fail there too.
fn in_container(
    mut e: Explanation,
    container_line: Option<u64>,
    runtime_line: Option<u64>,
) -> Explanation {
    // A machine with no NVIDIA GPU has none to give a container either.
    let not_nvidia = e
        .matched
        .first()
        .is_some_and(|m| m.signature.ends_with("+not_nvidia"));
    let reached_from = matches!(e.category, Category::DriverMissing | Category::Container);
    let (true, Some(line), false) = (reached_from, container_line, not_nvidia) else {
        return e;
    };
    // nvidia-smi and NVML come with the Windows driver in /usr/lib/wsl/lib: when they fail too,
    // the WSL machine itself has no GPU access (WSL 1, a Windows build without GPU
    // paravirtualisation), which no loader path reaches.
    let drivers_own_tool_fails = e.matched.iter().any(|m| {
        let t = m.text.to_ascii_lowercase();
        t.contains("nvidia-smi") || t.contains("nvml")
    });
    if runtime_line.is_none() && !drivers_own_tool_fails {
        e.category = Category::LibraryPath;
        e.evidence.insert(
            0,
            format!(
                "The log runs under WSL (line {line}): Windows gives WSL the driver's libraries in /usr/lib/wsl/lib, so a driver the program cannot reach there is a loader that does not search that directory or finds another libcuda first."
            ),
        );
        e.fix.extend(
            [
                "Check which libcuda the loader finds: `ldconfig -p | grep libcuda` should list /usr/lib/wsl/lib/libcuda.so.1 first.",
                "If it lists another copy (a Linux NVIDIA driver or a CUDA toolkit's driver package installed inside WSL), remove that package: under WSL the Windows driver is the only driver, and NVIDIA's WSL guide says to install no Linux driver there.",
                "If /usr/lib/wsl/lib is missing from the list, add it: `export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH` (or run `sudo ldconfig`), then start the program again.",
            ]
            .map(|s| cudoctor_plan::FixStep::Prose(s.to_string())),
        );
        return e;
    }
    if e.category == Category::Container {
        return e;
    }
    e.category = Category::Container;
    e.evidence.insert(
        0,
        format!(
            "The log runs inside a container, Kubernetes pod or WSL (line {line}): a driver that cannot be reached there was not given to it by the runtime."
        ),
    );
    if let Some(f) = family::builtin().and_then(|f| f.by_category.get(&Category::Container)) {
        e.fix
            .extend(f.fix.iter().cloned().map(cudoctor_plan::FixStep::Prose));
    }
    e
}

fn join_ranks(ranks: &BTreeSet<u32>) -> String {
    ranks
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The engine over the built-in data, built on first use.
pub fn builtin_engine() -> Result<&'static Engine, &'static EngineError> {
    static ENGINE: OnceLock<Result<Engine, EngineError>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let db = SignatureDb::from_toml(signatures::BUILTIN_TOML)?;
            Engine::new(db)
        })
        .as_ref()
}

/// Explains a message or a log read from `r` (a file, standard input...). Never fails: a broken
/// built-in database (ruled out by the tests) or a read error is reported inside the explanation.
pub fn explain_reader<R: BufRead>(r: R) -> Explanation {
    match builtin_engine() {
        Ok(engine) => engine.explain(r),
        Err(e) => Explanation {
            category: Category::Unknown,
            confidence: 0.0,
            title: "The signature database could not be loaded".to_string(),
            cause: format!("Internal error: {e}"),
            fix: Vec::new(),
            fix_elsewhere: Vec::new(),
            named_binaries: Vec::new(),
            matched: Vec::new(),
            fields: BTreeMap::new(),
            signature: None,
            facts_check: None,
            evidence: Vec::new(),
            also_seen: Vec::new(),
            looked_for: Vec::new(),
            machine: None,
            sources: Vec::new(),
            stats: ScanStats::default(),
        },
    }
}

/// Explains a message held in memory.
pub fn explain_str(text: &str) -> Explanation {
    explain_reader(Cursor::new(text.as_bytes()))
}
