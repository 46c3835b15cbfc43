//! The setup a report lists, judged by the knowledge base's tables. The card it names against
//! the builds it names: "RTX 3090" beside "pytorch=1.10.0+cu102", "GPU Compute Capability: 8.6
//! ... Runtime API Version: 10.2", "RTX5080" beside "cudatoolkit=11.8.0". The knowledge base
//! knows each card's compute capability, the architectures each CUDA's nvcc compiles for and the
//! arch lists of torch's builds; a build that holds no code the card can run fails on it whatever
//! the message says ("CUDNN_STATUS_EXECUTION_FAILED", "RVC not working", an empty result). A card
//! of an architecture that part of today's builds still lack (one that only a CUDA newer than the
//! oldest build of the newest torch compiles for: the RTX 50 series while the newest torch the
//! tables list in full still ships CUDA 12.6 builds) is judged the same way when the report
//! states no build that holds its code.
//!
//! The driver it names ("Driver Version: 470.82", "driver 525") against those builds (a build of
//! a CUDA the driver cannot run even through minor-version compatibility) and against the card
//! (a driver of a branch older than the first that drives it: an RTX 5090 on R550). A
//! torchvision or torchaudio beside torch that is not the release paired with it.
//!
//! Read only where nothing else answers (an unknown answer or a symptom): what a line says of
//! its own cause outranks a judgement of the setup the report lists.

use crate::clause::{Failure, Subject};
use crate::Category;
use cudoctor_kb::{GpuModel, Kb};
use cudoctor_types::{ComputeCapability, CudaVersion, DriverVersion};
use regex::Regex;
use std::sync::OnceLock;

/// Lines a report's setup is read from: its environment section comes first, and a long log's
/// later lines are its run.
const SETUP_LINES: u64 = 400;
/// Card lines kept.
const MAX_CARD_LINES: usize = 8;
/// Builds kept.
const MAX_BUILDS: usize = 16;

/// The words that name a card by its model or its capability (the gate passes lines that hold
/// them).
pub const LITERALS: [&str; 8] = [
    "rtx",
    "gtx",
    "tesla",
    "quadro",
    "titan",
    "geforce",
    // "N卡50系列": NVIDIA's cards, as Chinese reports name them.
    "n卡",
    "capability",
];

/// Words of a graphics card that make a model's number beside them the card's ([`card_model`]);
/// the gate passes lines that hold them.
pub const CARD_CONTEXT: [&str; 4] = ["gpu", "显卡", "card", "graphics"];

/// A build the report names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Build {
    /// A CUDA the code was built with: a wheel's tag (`cu118`), "cudatoolkit=11.8", "CUDA
    /// Toolkit 12.4", a runtime's version ("Runtime API Version: 10.2").
    Cuda(CudaVersion),
    /// A torch release, with its variant when the report gives it (`1.7.0+cu110`).
    Torch(String, Option<String>),
    /// A companion of torch (`torchvision`, `torchaudio`), its release and variant.
    Companion(&'static str, String, Option<String>),
    /// Code that says which cards it runs on: "the 't' kernel requires 5.0 capability", "The
    /// minimum required Cuda capability is 3.5", "compute capability 8.0 or higher".
    NeedsCapability(ComputeCapability),
}

/// What the report's setup names: its cards and its builds.
#[derive(Debug, Default)]
pub struct Setup {
    /// Lines that name a card by its model, with their numbers.
    card_lines: Vec<(u64, String)>,
    /// Compute capabilities a line states ("Compute Capability: 8.6", "cuda capability 12.1"),
    /// with the line.
    stated_cc: Vec<(u64, String, ComputeCapability)>,
    builds: Vec<Build>,
    /// Driver versions a line states, with the line.
    drivers: Vec<(u64, String, DriverVersion)>,
    /// The first line that names a companion of torch.
    companion_line: Option<(u64, String)>,
}

/// The compute capabilities a line states as required, with where each is said: the number
/// before "capability" after a word of requirement ("requires 5.0 capability"), after it
/// ("minimum required Cuda capability is 3.5"), or with "or higher" ("compute capability 8.0
/// or higher").
fn required_capabilities(line: &str) -> Vec<(std::ops::Range<usize>, ComputeCapability)> {
    static RE: OnceLock<Option<[Regex; 3]>> = OnceLock::new();
    let Some(res) = RE
        .get_or_init(|| {
            Some([
                Regex::new(r"(?i)(?:requires?|required|minimum|at least|needs?)[^\n.!;]{0,24}?(\d{1,2})\.(\d)\s*(?:\+|or (?:higher|above|newer|later))?\s*(?:(?:cuda|compute)\s+)?capability").ok()?,
                Regex::new(r"(?i)(?:requires?|required|minimum|at least|needs?)[^\n.!;]{0,24}?capability[^0-9\n]{0,12}(\d{1,2})\.(\d)").ok()?,
                Regex::new(r"(?i)capability[^0-9\n]{0,12}(\d{1,2})\.(\d)\s*(?:\+|or (?:higher|above|newer|later))").ok()?,
            ])
        })
        .as_ref()
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for re in res {
        for c in re.captures_iter(line) {
            let (Some(all), Some(major), Some(minor)) = (c.get(0), c.get(1), c.get(2)) else {
                continue;
            };
            if let Ok(cc) = format!("{}.{}", major.as_str(), minor.as_str()).parse() {
                out.push((all.range(), cc));
            }
        }
    }
    out
}

fn patterns() -> Option<&'static [Regex; 4]> {
    static RE: OnceLock<Option<[Regex; 4]>> = OnceLock::new();
    RE.get_or_init(|| {
        Some([
            Regex::new(r"(?i)capability[^0-9\n]{0,12}(\d{1,2})\.(\d)(?:[^.\d]|$)").ok()?,
            Regex::new(r"(?i)runtime api version[:\s]{0,3}(\d{1,2}\.\d)").ok()?,
            // "torch 1.4.0", "pytorch=1.4.0", "torch==2.0.1+cu117", "PyTorch version: 1.7.0+cu110",
            // a wheel's or its metadata's name ("torch-2.8.0+cu129.dist-info").
            Regex::new(
                r"(?i)(?-u:\b)(?:py)?torch(?:[ _-]?version)?[\s:=-]{0,3}v?(\d\.\d{1,2}(?:\.\d{1,2})?)(?:\+(cu\d{2,3}))?",
            )
            .ok()?,
            // "torchvision 0.15.2", "torchvision==0.16.0+cu118", "torchaudio: 2.1.0".
            Regex::new(
                r"(?i)(?-u:\b)torch(vision|audio)(?:[ _-]?version)?[\s:=]{0,3}v?(\d\.\d{1,2}(?:\.\d{1,2})?)(?:\+(cu\d{2,3}|cpu))?",
            )
            .ok()?,
        ])
    })
    .as_ref()
}

impl Setup {
    pub fn feed(&mut self, line_no: u64, line: &str) {
        // Every literal but the last ("capability") names a card.
        let card_words = LITERALS[..LITERALS.len() - 1]
            .iter()
            .any(|w| crate::clause::find_ascii_ci(line, w).is_some());
        if line_no > SETUP_LINES && !card_words {
            return;
        }
        let Some([capability, runtime, torch, companion]) = patterns() else {
            return;
        };
        // A GeForce card named by its number beside a word of a graphics card ("5090显卡",
        // "GPU: 3090"): kept only where the table knows the model, so that the lines that
        // merely speak of a GPU do not crowd out the ones that name one.
        let named_by_number = !card_words
            && line_no <= SETUP_LINES
            && line.bytes().any(|b| b.is_ascii_digit())
            && CARD_CONTEXT
                .iter()
                .any(|w| crate::clause::find_ascii_ci(line, w).is_some())
            && {
                let (spelled, by_number) = spelled_as_the_table(line);
                by_number && Kb::embedded().gpu(&spelled).is_some()
            };
        if (card_words || named_by_number) && self.card_lines.len() < MAX_CARD_LINES {
            self.card_lines.push((line_no, crate::scanner::shown(line)));
        }
        let required = if crate::clause::find_ascii_ci(line, "capability").is_some() {
            required_capabilities(line)
        } else {
            Vec::new()
        };
        for c in capability.captures_iter(line) {
            // A capability the line requires is not the card's.
            if c.get(0).is_some_and(|m| {
                required
                    .iter()
                    .any(|(r, _)| r.start < m.end() && m.start() < r.end)
            }) {
                continue;
            }
            let cc = format!(
                "{}.{}",
                c.get(1).map_or("", |m| m.as_str()),
                c.get(2).map_or("", |m| m.as_str())
            );
            if let Ok(cc) = cc.parse() {
                if self.stated_cc.len() < MAX_CARD_LINES {
                    self.stated_cc
                        .push((line_no, crate::scanner::shown(line), cc));
                }
            }
        }
        let lower = line.to_lowercase();
        let words = crate::prose::words_of(&lower);
        let mut found: Vec<Build> = crate::prose::stated_builds(&words)
            .map(Build::Cuda)
            .collect();
        found.extend(required.iter().map(|(_, cc)| Build::NeedsCapability(*cc)));
        found.extend(
            runtime
                .captures_iter(line)
                .filter_map(|c| c.get(1)?.as_str().parse().ok())
                .map(Build::Cuda),
        );
        found.extend(torch.captures_iter(line).filter_map(|c| {
            Some(Build::Torch(
                c.get(1)?.as_str().to_string(),
                c.get(2).map(|m| m.as_str().to_ascii_lowercase()),
            ))
        }));
        if self.companion_line.is_none() && companion.is_match(line) {
            self.companion_line = Some((line_no, crate::scanner::shown(line)));
        }
        found.extend(companion.captures_iter(line).filter_map(|c| {
            let name = if c.get(1)?.as_str().eq_ignore_ascii_case("vision") {
                "torchvision"
            } else {
                "torchaudio"
            };
            Some(Build::Companion(
                name,
                c.get(2)?.as_str().to_string(),
                c.get(3).map(|m| m.as_str().to_ascii_lowercase()),
            ))
        }));
        // A torch wheel's tag (`+cu128`) is that wheel's CUDA, not another build beside it: the
        // wheel's own arch list judges it, where a bare CUDA would be judged by its nvcc.
        let tags: Vec<CudaVersion> = found
            .iter()
            .filter_map(|b| match b {
                Build::Torch(_, Some(tag)) => CudaVersion::from_tag(tag).ok(),
                _ => None,
            })
            .collect();
        found.retain(|b| !matches!(b, Build::Cuda(v) if tags.contains(v)));
        for b in found {
            if self.builds.len() < MAX_BUILDS && !self.builds.contains(&b) {
                self.builds.push(b);
            }
        }
        for d in crate::prose::stated_drivers(&words) {
            if self.drivers.len() < MAX_CARD_LINES && !self.drivers.iter().any(|x| x.2 == d) {
                self.drivers.push((line_no, crate::scanner::shown(line), d));
            }
        }
    }

    /// The one driver the report names; None when it names none or several.
    fn driver(&self) -> Option<&(u64, String, DriverVersion)> {
        match self.drivers.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// The CUDA versions of the builds the report names (a torch release without its variant
    /// stands for none: its variants differ).
    fn build_cudas(&self, kb: &Kb) -> Vec<(String, CudaVersion)> {
        self.builds
            .iter()
            .filter_map(|b| match b {
                Build::Cuda(v) => Some((describe(b), *v)),
                Build::Torch(v, Some(tag)) => Some((
                    describe(b),
                    kb.torch(v)?
                        .variant(tag)
                        .map(|x| x.cuda)
                        .or_else(|| CudaVersion::from_tag(tag).ok())?,
                )),
                Build::Torch(_, None) | Build::Companion(..) | Build::NeedsCapability(_) => None,
            })
            .collect()
    }

    /// The driver the report names judged against its builds and its card: a build of a CUDA
    /// the driver cannot run at all, or a card of a newer generation than the driver's branch.
    fn judge_driver(&self, kb: &Kb) -> Option<Verdict> {
        let (line_no, line, driver) = self.driver()?;
        let too_new = self.build_cudas(kb).into_iter().find_map(|(build, cuda)| {
            let needed = kb.least_driver_for(cudoctor_kb::Platform::LinuxX86_64, cuda);
            let below = kb.driver_support(driver, cuda).runs() == Some(false)
                && needed.as_ref().is_none_or(|n| below_as_written(driver, n));
            below.then_some((build, cuda, needed))
        });
        if let Some((build, cuda, needed)) = too_new {
            return Some(Verdict {
                line_no: *line_no,
                line: line.clone(),
                category: Category::DriverTooOld,
                subject: Subject::Driver,
                failure: Failure::TooOld,
                cause: format!(
                    "The report names driver {driver} and {build}: a build of CUDA {cuda} needs a driver of at least {}, and this driver runs no CUDA that new, not even through minor-version compatibility.",
                    needed.as_ref().map_or("a newer branch".to_string(), |d| d.to_string())
                ),
                step: format!(
                    "Install a driver that runs CUDA {cuda} ({}), or install the package's build for a CUDA this driver runs.",
                    needed.map_or("a newer branch".to_string(), |d| format!("{d} or newer"))
                ),
            });
        }
        let card = self.card(kb)?;
        let first = card.model?.first_branch?;
        let card = card.name;
        (driver.branch() < first).then(|| Verdict {
            line_no: *line_no,
            line: line.clone(),
            category: Category::DriverTooOld,
            subject: Subject::Driver,
            failure: Failure::TooOld,
            cause: format!(
                "The report names {card} and driver {driver}: the first driver branch that drives the {card} is R{first}, so this driver does not see the card."
            ),
            step: format!("Install a driver of branch R{first} or newer for the {card}."),
        })
    }

    /// The one card the report names; None when it names none, or cards of different
    /// capabilities (a report that compares two cards says which one fails in words this does
    /// not read).
    fn card<'k>(&self, kb: &'k Kb) -> Option<NamedCard<'_, 'k>> {
        let mut cards: Vec<NamedCard<'_, 'k>> = self
            .card_lines
            .iter()
            .filter_map(|(n, line)| {
                let (name, model) = match card_model(kb, line) {
                    Some(model) => (model.names.first()?.clone(), model),
                    None => card_generation(kb, line)?,
                };
                Some(NamedCard {
                    line_no: *n,
                    line,
                    name,
                    cc: model.cc,
                    model: Some(model),
                })
            })
            .collect();
        cards.extend(self.stated_cc.iter().map(|(n, line, cc)| NamedCard {
            line_no: *n,
            line,
            name: format!("a GPU of compute capability {cc}"),
            cc: *cc,
            model: None,
        }));
        let first = cards.first()?.cc;
        cards
            .iter()
            .all(|c| c.cc == first)
            .then(|| cards.swap_remove(0))
    }

    /// The setup's verdict: a driver that cannot run the builds or drive the card first (no
    /// code runs), then a companion built for another torch, then a card without code in the
    /// builds.
    pub fn verdict(&self, kb: &Kb) -> Option<Verdict> {
        self.judge_driver(kb)
            .or_else(|| self.judge_companions(kb))
            .or_else(|| {
                let v = self.judge(kb)?;
                Some(Verdict {
                    cause: v.cause(),
                    step: v.step(),
                    line_no: v.line_no,
                    line: v.line,
                    category: Category::NoKernelImage,
                    subject: Subject::GpuArch,
                    failure: Failure::Unsupported,
                })
            })
    }

    /// The judgement of the card against the builds, when the report names one card.
    fn judge(&self, kb: &Kb) -> Option<CardVerdict> {
        let NamedCard {
            line_no,
            line,
            name: card,
            cc,
            ..
        } = self.card(kb)?;
        let line = line.to_string();
        let runs: Vec<(String, Option<bool>)> = self
            .builds
            .iter()
            .map(|b| (describe(b), build_runs_on(kb, b, cc)))
            .collect();
        if runs.iter().any(|(_, r)| *r == Some(true)) {
            return None;
        }
        let without: Vec<String> = runs
            .iter()
            .filter(|(_, r)| *r == Some(false))
            .map(|(d, _)| d.clone())
            .collect();
        if !without.is_empty() {
            return Some(CardVerdict {
                line_no,
                line,
                card,
                cc,
                builds_without: without,
                newer_than_builds: None,
            });
        }
        // A build the report states that the tables cannot judge may hold the card's code:
        // the report is not one that "states no build".
        if self
            .builds
            .iter()
            .zip(&runs)
            .any(|(b, (_, r))| !matches!(b, Build::Companion(..)) && r.is_none())
        {
            return None;
        }
        let first = first_cuda_for(kb, cc)?;
        // The newest torch whose builds the table lists in full.
        let oldest_current = kb
            .torch_releases()
            .iter()
            .rfind(|r| !r.variants_incomplete)?
            .variants
            .iter()
            .map(|v| v.cuda)
            .min()?;
        (first > oldest_current).then_some(CardVerdict {
            line_no,
            line,
            card,
            cc,
            builds_without: Vec::new(),
            newer_than_builds: Some(first),
        })
    }

    /// The one torch release the report names and a companion it names beside it that was
    /// built for another torch (the knowledge base's pairs, compared by release series) or for
    /// another CUDA variant: the companion's compiled operators do not load or run with this
    /// torch ("Could not run 'torchvision::nms' with arguments from the 'CUDA' backend").
    fn judge_companions(&self, kb: &Kb) -> Option<Verdict> {
        let (line_no, line) = self.companion_line.clone()?;
        let torches: Vec<(&String, &Option<String>)> = self
            .builds
            .iter()
            .filter_map(|b| match b {
                Build::Torch(v, variant) => Some((v, variant)),
                _ => None,
            })
            .collect();
        let [(torch, torch_variant)] = torches.as_slice() else {
            return None;
        };
        let release = kb.torch(torch)?;
        self.builds.iter().find_map(|b| {
            let Build::Companion(name, v, variant) = b else {
                return None;
            };
            let paired = if *name == "torchvision" {
                release.torchvision.as_deref()
            } else {
                release.torchaudio.as_deref()
            };
            let other_release = paired.is_some_and(|p| series(p) != series(v));
            let other_variant = matches!((torch_variant, variant), (Some(a), Some(b)) if a != b);
            if !(other_release || other_variant) {
                return None;
            }
            let torch_named = match torch_variant {
                Some(t) => format!("torch {torch}+{t}"),
                None => format!("torch {torch}"),
            };
            let why = if other_release {
                format!(
                    "{} is not the release built for {torch_named} ({name} {} is)",
                    describe(b),
                    paired.unwrap_or_default()
                )
            } else {
                format!("{} is built for another CUDA variant than {torch_named}", describe(b))
            };
            let want = match (paired, torch_variant) {
                (Some(p), Some(t)) => format!("{name}=={p}+{t}"),
                (Some(p), None) => format!("{name}=={p}"),
                (None, _) => format!("the {name} release built for {torch_named}"),
            };
            Some(Verdict {
                line_no,
                line: line.clone(),
                category: Category::VersionSuffixMismatch,
                subject: Subject::Companion,
                failure: Failure::Mismatch,
                cause: format!(
                    "The report names {torch_named} and {}: {why}, so its compiled operators do not load or run with this torch.",
                    describe(b)
                ),
                step: format!("Install {want} from the same index as torch (one command for torch and its companions keeps them paired)."),
            })
        })
    }
}

/// A release's series ("0.16" of "0.16.1").
fn series(v: &str) -> &str {
    match v.match_indices('.').nth(1) {
        Some((i, _)) => &v[..i],
        None => v,
    }
}

/// A card the report names: its line, its name as the table writes it (or its stated
/// capability), its capability and, when named by model, the table's row.
struct NamedCard<'a, 'k> {
    line_no: u64,
    line: &'a str,
    name: String,
    cc: ComputeCapability,
    model: Option<&'k GpuModel>,
}

/// What the report's setup says: the line it is read from, the category, the clause it stands
/// for, why, and the step that mends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub line_no: u64,
    pub line: String,
    pub category: Category,
    pub subject: Subject,
    pub failure: Failure,
    pub cause: String,
    pub step: String,
}

/// What the report's card and builds say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardVerdict {
    /// The line that names the card, and its text.
    pub line_no: u64,
    pub line: String,
    pub card: String,
    pub cc: ComputeCapability,
    /// The builds the report names that hold no code the card runs.
    pub builds_without: Vec<String>,
    /// When the report names no build: the first CUDA that compiles for the card, newer than
    /// builds still made today.
    pub newer_than_builds: Option<CudaVersion>,
}

impl CardVerdict {
    /// Why the card cannot run the report's code, as a sentence.
    pub fn cause(&self) -> String {
        match self.newer_than_builds {
            None => format!(
                "The report names {} (compute capability {}) and {}, which holds no code that runs on it: a build without the card's architecture fails there however the failure shows (\"no kernel image\", an execution failure, an empty result).",
                self.card,
                self.cc,
                self.builds_without.join(" and ")
            ),
            Some(first) => format!(
                "The report names {} (compute capability {}), whose code only CUDA {first} and newer compile, and no build that holds it: builds made with an older CUDA (still published for many packages) have no kernels for this card. The report does not say which build it runs, so this is the likely cause, not a certain one.",
                self.card, self.cc
            ),
        }
    }

    /// The step that fixes it.
    pub fn step(&self) -> String {
        let cuda = self
            .newer_than_builds
            .map_or(String::new(), |c| format!(" (made with CUDA {c} or newer)"));
        format!(
            "Install the package's build that holds code for compute capability {}{cuda}: for torch, 'cudoctor plan' names it; for extensions built here, rebuild with TORCH_CUDA_ARCH_LIST=\"{}\" after clearing their build directory.",
            self.cc, self.cc
        )
    }
}

/// Whether a driver version as the report writes it is below `needed` whatever its unwritten
/// parts: "525.60" is not below 525.60.13 (it may be that release).
fn below_as_written(driver: &DriverVersion, needed: &DriverVersion) -> bool {
    let written = driver.components();
    let needed = needed.components();
    written < needed.get(..written.len()).unwrap_or(needed)
}

fn describe(b: &Build) -> String {
    match b {
        Build::Companion(name, v, Some(variant)) => format!("{name} {v}+{variant}"),
        Build::Companion(name, v, None) => format!("{name} {v}"),
        Build::Cuda(v) => format!("a build of CUDA {v}"),
        Build::NeedsCapability(cc) => format!("code that needs compute capability {cc} or higher"),
        Build::Torch(v, Some(variant)) => format!("torch {v}+{variant}"),
        Build::Torch(v, None) => format!("torch {v} (every CUDA build of it)"),
    }
}

/// The card a line names by its model: "rtx5080" as the table writes it ("rtx 5080"), the
/// model's number before its series ("5090 rtx"), and a GeForce model's number without its
/// series where a word of a graphics card stands beside it ("5090显卡", "5060ti", "GPU: 3090",
/// "3080 Ti"): the series follows from the number (GTX up to the 16 series, RTX from the 20).
pub(crate) fn card_model<'k>(kb: &'k Kb, line: &str) -> Option<&'k GpuModel> {
    kb.gpu(&spelled_as_the_table(line).0)
}

/// A line's words spelt as the table writes models ([`card_model`]), and whether a GeForce
/// model was named by its number alone there.
fn spelled_as_the_table(line: &str) -> (String, bool) {
    let lower = line.to_lowercase();
    let words: Vec<&str> = crate::prose::words_of(&lower)
        .into_iter()
        .flat_map(split_model_number)
        .collect();
    let mut spaced: Vec<String> = Vec::with_capacity(words.len() + 2);
    let mut by_number = false;
    for (i, x) in words.iter().enumerate() {
        let series = |w: &str| matches!(w, "rtx" | "gtx");
        let number = |w: &str| (3..=4).contains(&w.len()) && w.bytes().all(|b| b.is_ascii_digit());
        match ["rtx", "gtx"].iter().find_map(|p| x.strip_prefix(p)) {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => {
                spaced.push(x[..3].to_string());
                spaced.push(rest.to_string());
            }
            _ if number(x) && words.get(i + 1).is_some_and(|w| series(w)) => {
                spaced.push(words[i + 1].to_string());
                spaced.push(x.to_string());
            }
            _ if series(x) && i > 0 && number(words[i - 1]) => {}
            _ => {
                // Chinese runs on without spaces: "显卡是不是不支持" is one word.
                let beside_card_word = words.get(i + 1).is_some_and(|w| {
                    CARD_AFTER.contains(w) || w.starts_with("显卡") || w.starts_with('卡')
                }) || i > 0
                    && words.get(i - 1).is_some_and(|w| CARD_BEFORE.contains(w));
                let unnamed_series = i == 0 || !words.get(i - 1).is_some_and(|w| series(w));
                match geforce_series(x) {
                    Some(s) if beside_card_word && unnamed_series => {
                        by_number = true;
                        spaced.push(s.to_string());
                        spaced.push(x.to_string());
                    }
                    _ => spaced.push(x.to_string()),
                }
            }
        }
    }
    (spaced.join(" "), by_number)
}

/// Words right after a GeForce model's number that make it the card's ("3090 Ti", "5090显卡").
const CARD_AFTER: [&str; 6] = ["ti", "super", "gpu", "card", "laptop", "graphics"];
/// Words right before it that do ("GPU: 3090", "显卡4090", "GeForce 1080").
const CARD_BEFORE: [&str; 5] = ["gpu", "显卡", "card", "geforce", "nvidia"];

/// A word that glues a model's number to what follows it, split in two ("5060ti" -> "5060",
/// "ti"; "5090显卡" -> "5090", "显卡"); other words as they are.
fn split_model_number(w: &str) -> Vec<&str> {
    let digits = w.bytes().take_while(u8::is_ascii_digit).count();
    match w.split_at_checked(digits) {
        Some((number, rest)) if digits == 4 && !rest.is_empty() && !rest.starts_with('.') => {
            vec![number, rest]
        }
        _ => vec![w],
    }
}

/// The GeForce series of a model's number as the cards are numbered: four digits ending in 0,
/// the first two a generation (GTX 9, 10 and 16 series written 9x0 in three digits are left
/// out); the 20 to 50 series are RTX.
fn geforce_series(number: &str) -> Option<&'static str> {
    let b = number.as_bytes();
    if b.len() != 4 || !b.iter().all(u8::is_ascii_digit) || b[3] != b'0' || b[2] == b'0' {
        return None;
    }
    match number.get(..2)? {
        "10" | "16" => Some("gtx"),
        "20" | "30" | "40" | "50" => Some("rtx"),
        _ => None,
    }
}

/// The GeForce generation a line names by its series ("RTX 50 series", "RTX 50xx", "rtx50系",
/// "N卡50系列", "RTX 5000-series"): its name and the table's model standing for it, when the
/// generation's models share one capability ([`Kb::gpu_generation`]).
fn card_generation<'k>(kb: &'k Kb, line: &str) -> Option<(String, &'k GpuModel)> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE
        .get_or_init(|| {
            Regex::new(
                r"(?i)(rtx|gtx|geforce|n卡)\s*-?\s*([1-9]0|16)(?:xx|x0|00\s*-?\s*series|\s*-?\s*series|\s*系)",
            )
            .ok()
        })
        .as_ref()?;
    let c = re.captures(line)?;
    let generation: u32 = c.get(2)?.as_str().parse().ok()?;
    let named = c.get(1)?.as_str().to_ascii_lowercase();
    let series = match named.as_str() {
        "rtx" | "gtx" => named,
        _ if generation >= 20 => "rtx".to_string(),
        _ => "gtx".to_string(),
    };
    let model = kb.gpu_generation(&series, generation)?;
    let article = if series == "rtx" { "an" } else { "a" };
    Some((
        format!(
            "{article} {} {generation} series card",
            series.to_ascii_uppercase()
        ),
        model,
    ))
}

/// Whether a build of CUDA `cuda` can hold code for `cc`: its nvcc compiles for the card's
/// major (machine code of a lower major does not run on it) and not only above it. None where
/// the table does not know the range's end that decides.
pub(crate) fn cuda_runs_on(kb: &Kb, cuda: CudaVersion, cc: ComputeCapability) -> Option<bool> {
    let r = kb.nvcc_arch_range(cuda)?;
    if r.lowest.is_some_and(|low| cc < low) {
        return Some(false);
    }
    let high = r.highest?;
    Some(high.major >= cc.major)
}

/// Whether a build holds code that runs on `cc`; None when the tables do not say.
fn build_runs_on(kb: &Kb, b: &Build, cc: ComputeCapability) -> Option<bool> {
    match b {
        Build::Companion(..) => None,
        Build::NeedsCapability(needed) => Some(cc >= *needed),
        Build::Cuda(v) => cuda_runs_on(kb, *v, cc),
        Build::Torch(v, variant) => {
            let release = kb.torch(v)?;
            let judged: Vec<Option<bool>> = release
                .variants
                .iter()
                .filter(|x| variant.as_ref().is_none_or(|t| *t == x.tag))
                .map(|x| x.covers(cc).or_else(|| cuda_runs_on(kb, x.cuda, cc)))
                .collect();
            if judged.is_empty() {
                None
            } else if judged.contains(&Some(true)) {
                Some(true)
            } else if judged.iter().all(|j| *j == Some(false)) {
                Some(false)
            } else {
                None
            }
        }
    }
}

/// The first CUDA whose nvcc compiles code for `cc`.
fn first_cuda_for(kb: &Kb, cc: ComputeCapability) -> Option<CudaVersion> {
    kb.nvcc_ranges()
        .iter()
        .filter(|r| r.highest.is_some_and(|h| h >= cc) && r.lowest.is_none_or(|l| l <= cc))
        .map(|r| r.from)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(text: &str) -> Option<CardVerdict> {
        let mut c = Setup::default();
        for (i, line) in text.lines().enumerate() {
            c.feed(i as u64 + 1, line);
        }
        c.judge(Kb::embedded())
    }

    #[test]
    fn a_geforce_card_named_by_its_number_beside_a_card_word() {
        let kb = Kb::embedded();
        for (line, cc) in [
            ("5090显卡是不是不支持？", ComputeCapability::new(12, 0)),
            (
                "台式机：win11+5060ti+显卡驱动576.52",
                ComputeCapability::new(12, 0),
            ),
            ("GPU: 3090", ComputeCapability::new(8, 6)),
            ("my 1080 Ti", ComputeCapability::new(6, 1)),
        ] {
            assert_eq!(card_model(kb, line).map(|m| m.cc), Some(cc), "{line}");
        }
        // A number without a card word, a resolution, a port: no card.
        for line in [
            "listening on port 5000",
            "resolution 1080 x 1920",
            "took 3090 ms",
        ] {
            assert!(card_model(kb, line).is_none(), "{line}");
        }
        // Such a card with nothing else stated is judged like one named with its series.
        let v = verdict("5090显卡是不是不支持？").expect("a verdict");
        assert!(v.newer_than_builds.is_some());
        // A build the tables cannot judge may hold its code: no verdict.
        assert!(verdict("GPU: RTX 5090\ntorch 2.14.0.dev20260809+cu134").is_none());
    }

    #[test]
    fn a_card_beside_builds_that_lack_its_code_is_judged_by_the_tables() {
        for text in [
            "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\npytorch=1.10.0+cu102\nMy card is an RTX 3090",
            "W0617 device_context.cc:404] Please NOTE: device: 0, GPU Compute Capability: 8.6, Driver API Version: 11.2, Runtime API Version: 10.2",
            "cudatoolkit=11.8.0 is not supported for NVIDIA RTX5080",
            "I run a Tesla K80 with torch==2.4.0+cu124",
            "CUDA error on GTX 1070\ntorch==2.8.0+cu128",
            "Runtime Error with Nvidia Tesla K80\nGPU #0: FATAL: the 't' kernel requires 5.0 capability!",
            "Ignoring visible gpu device (device: 0, name: GeForce GTX 680, pci bus id: 0000:01:00.0, compute capability: 3.0) with Cuda compute capability 3.0. The minimum required Cuda capability is 3.5.",
            "CUDA error NVIDIA GeForce GTX 1070\nF:\\ComfyUI_windows_portable\\python_embeded\\Lib\\site-packages\\torch-2.8.0+cu129.dist-info",
        ] {
            let v = verdict(text).unwrap_or_else(|| panic!("no verdict: {text}"));
            assert!(!v.builds_without.is_empty(), "{text}: {v:?}");
            assert_eq!(v.newer_than_builds, None);
        }
    }

    #[test]
    fn a_card_of_an_architecture_todays_builds_still_lack_is_judged_without_a_build() {
        let v = verdict("RVC not working with 5090 rtx\nI have an RTX 5090").unwrap();
        assert!(v.builds_without.is_empty());
        assert!(v.newer_than_builds.is_some());
        assert_eq!(v.cc.to_string(), "12.0");
    }

    #[test]
    fn a_generation_named_by_its_series_is_judged_as_its_cards() {
        for text in [
            "Doesn't work on RTX 50xx Series",
            "N卡50系列的兼容性问题",
            "rtx50系笔记本运行paddle3.0出现乘法除法结果数值错误",
            "crashes on the RTX 50-series",
        ] {
            let v = verdict(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(v.cc.to_string(), "12.0", "{text}");
            assert_eq!(v.card, "an RTX 50 series card", "{text}");
        }
        // A generation whose builds today hold its code judges nothing alone; a workstation
        // card of the same digits is no generation.
        assert!(verdict("fails on my RTX 30 series card").is_none());
        assert!(verdict("RTX 5000 Ada: fails").is_none_or(|v| v.cc.to_string() == "8.9"));
    }

    fn driver_verdict(text: &str) -> Option<Verdict> {
        let mut c = Setup::default();
        for (i, line) in text.lines().enumerate() {
            c.feed(i as u64 + 1, line);
        }
        c.judge_driver(Kb::embedded())
    }

    #[test]
    fn a_driver_below_the_builds_or_the_card_it_is_named_with() {
        for text in [
            "Driver Version: 470.82.01\ntorch 2.4.0+cu124 fails at import",
            "NVIDIA driver 418\nI installed cudatoolkit=11.8",
            "RTX 5090\nnvidia driver 550.54",
        ] {
            assert!(driver_verdict(text).is_some(), "{text}");
        }
        for text in [
            "Driver Version: 535.104.05\ntorch 2.4.0+cu124",
            // Minor-version compatibility runs 12.x builds on R525 and newer.
            "driver 525.60\ncu124",
            "RTX 5090 on driver 570.86",
            // Two drivers: which one runs is not read here.
            "driver 470 on one node, driver 550 on the other, cu121",
        ] {
            assert_eq!(driver_verdict(text), None, "{text}");
        }
    }

    #[test]
    fn a_companion_built_for_another_torch_or_variant() {
        let judge = |text: &str| {
            let mut c = Setup::default();
            for (i, line) in text.lines().enumerate() {
                c.feed(i as u64 + 1, line);
            }
            c.judge_companions(Kb::embedded())
        };
        for text in [
            "torch 2.1.0\ntorchvision 0.15.2",
            "torch==2.1.0+cu121\ntorchvision==0.16.0+cu118",
        ] {
            assert!(judge(text).is_some(), "{text}");
        }
        for text in [
            "torch 2.1.0\ntorchvision 0.16.0",
            "torch 2.1.1+cu121, torchvision 0.16.1+cu121",
            "torchvision 0.15.2 alone",
        ] {
            assert_eq!(judge(text), None, "{text}");
        }
    }

    #[test]
    fn a_build_that_holds_the_cards_code_or_a_card_of_long_supported_architecture_judges_nothing() {
        for text in [
            "RTX 5090 with torch 2.7.0+cu128 fails",
            "RTX 3090, CUDA 11.8, it crashes",
            "My RTX 4090 does not work",
            "torch 1.4.0 on my machine",
            // A torch older than the tables judges nothing.
            "RTX 3090 with pytorch=1.4.0",
            // Two cards of different architectures: which one fails is not read here.
            "works on the RTX 3090, fails on the Tesla K80 with cu118",
        ] {
            assert_eq!(verdict(text), None, "{text}");
        }
    }
}
