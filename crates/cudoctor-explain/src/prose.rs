//! Hand-typed prose: the constructions users write around the stack's words, which the
//! lexicon's fixed phrases cannot list. A negation, then a verb of use or perception, then
//! whose GPU ("can't see my RTX 5090", "does not use any GPU", "my card isn't being
//! used"); work put on the CPU in the GPU's place ("runs on CPU instead", "falls back to the
//! CPU"); the whole machine going down ("the server reboots", "crashes my PC"); a GPU that
//! vanishes; a hang said of a run over several GPUs or nodes ("hangs on 2 nodes", "DDP
//! stuck"); support asked for an architecture ("Blackwell support for sm_120"); and a driver
//! named beside a CUDA it cannot run ("CUDA 12.4 with driver 470", judged by the knowledge
//! base's table of driver branches, not by the words).
//!
//! Each reader works on the line's words (lowercased, split at anything but letters, digits,
//! `_`, `'` and `.` inside a number), so "my", "the" or an adverb between the parts does not
//! matter, as it does to a fixed phrase.

use crate::clause::{Failure, Subject};
use cudoctor_kb::Kb;
use cudoctor_types::{CudaVersion, DriverVersion};

/// What a line's prose says, beside its lexicon words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProseReading {
    pub subject: Subject,
    pub failure: Failure,
}

/// Words a negation can take; "n't" forms are read by their ending.
const NEGATIONS: [&str; 5] = ["not", "cannot", "never", "unable", "no"];
/// Verbs by which a program uses a GPU: whole words, then stems.
const USE_WORDS: [&str; 4] = ["use", "uses", "using", "run"];
const USE_STEMS: [&str; 2] = ["utili", "leverag"];
/// Verbs by which a program or a machine perceives a GPU: whole words, then stems.
const PERCEIVE_WORDS: [&str; 11] = [
    "see", "sees", "seeing", "find", "finds", "finding", "show", "shows", "showing", "list",
    "lists",
];
const PERCEIVE_STEMS: [&str; 4] = ["detect", "recogni", "identif", "access"];
/// What such a verb is said of: the GPU, by any of its names. "CUDA" only as what is used:
/// CUDA not found is the toolkit's, which the lexicon reads.
const GPU_WORDS: [&str; 12] = [
    "gpu", "gpus", "card", "cards", "graphics", "nvidia", "rtx", "gtx", "geforce", "tesla",
    "quadro", "显卡",
];
/// Architectures by name, for support asked of one.
const ARCHITECTURES: [&str; 10] = [
    "blackwell",
    "hopper",
    "ada",
    "lovelace",
    "ampere",
    "turing",
    "volta",
    "pascal",
    "maxwell",
    "kepler",
];
/// Words allowed between a negation and its verb, and between the verb and its object.
const GAP: usize = 3;

/// The line's words, lowercased: letters, digits, `_`, `'` and the dots of a version.
pub(crate) fn words_of(lower: &str) -> Vec<&str> {
    lower
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '\'' | '.')))
        .map(|w| w.trim_matches('.'))
        .filter(|w| !w.is_empty())
        .collect()
}

fn is_negation(w: &str) -> bool {
    w.ends_with("n't") || NEGATIONS.contains(&w)
}

/// What a verb does to a GPU, if it is one of use or perception ("see", "find" and "use" as
/// themselves and their inflections only: "seem", "user", "useful" are other words).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verb {
    Use,
    Perceive,
}

fn verb(w: &str) -> Option<Verb> {
    if USE_WORDS.contains(&w) || USE_STEMS.iter().any(|s| w.starts_with(s)) {
        Some(Verb::Use)
    } else if PERCEIVE_WORDS.contains(&w) || PERCEIVE_STEMS.iter().any(|s| w.starts_with(s)) {
        Some(Verb::Perceive)
    } else {
        None
    }
}

fn is_gpu_word(w: &str) -> bool {
    GPU_WORDS.contains(&w) || crate::clause::is_datacenter_model(w)
}

/// What a verb of use takes besides the GPU: CUDA itself ("doesn't use CUDA").
fn is_object_of(v: Verb, w: &str) -> bool {
    is_gpu_word(w) || (v == Verb::Use && w == "cuda")
}

/// A GPU the program does not use or see: a negation, a verb of use or perception within a
/// few words after it, and a name of the GPU within a few words after that ("can't see my
/// RTX 5090", "doesn't use any GPU"); or the passive ("the GPU is not being used", "my card
/// isn't detected").
fn gpu_unused(w: &[&str]) -> bool {
    let active = w
        .iter()
        .enumerate()
        .filter(|(_, x)| is_negation(x))
        .any(|(i, x)| {
            // What a user does not do or see ("I don't see any difference", "we don't use the
            // GPU here") is an observation or a choice; what they cannot do is the failure.
            let first_person = i > 0 && matches!(w[i - 1], "i" | "we");
            let ability = matches!(*x, "can't" | "cannot" | "couldn't" | "unable" | "not")
                && !(*x == "not" && i > 0 && matches!(w[i - 1], "do" | "does" | "did"));
            if first_person && !ability {
                return false;
            }
            // In the passive ("cannot be recognized") what is not seen is the line's subject, often
            // a name the tool does not know (an architecture), read below when it is the GPU.
            let found = (i + 1..w.len().min(i + 2 + GAP))
                .take_while(|&j| !matches!(w[j], "be" | "been"))
                .find_map(|j| verb(w[j]).map(|v| (j, v)));
            found.is_some_and(|(j, v)| {
                (j + 1..w.len().min(j + 2 + GAP)).any(|k| is_object_of(v, w[k]))
            })
        });
    let passive = w
        .iter()
        .enumerate()
        .filter(|(_, x)| is_gpu_word(x))
        .any(|(i, _)| {
            let end = w.len().min(i + 2 + GAP);
            let neg = (i + 1..end).find(|&j| is_negation(w[j]));
            neg.is_some_and(|n| {
                (n + 1..w.len().min(n + 3)).any(|k| {
                    matches!(
                        w[k],
                        "used"
                            | "utilized"
                            | "utilised"
                            | "detected"
                            | "recognized"
                            | "recognised"
                            | "seen"
                            | "found"
                            | "listed"
                            | "shown"
                            | "visible"
                            | "accessible"
                    )
                })
            })
        });
    active || passive
}

/// Work put on the CPU in the GPU's place: "runs on CPU instead", "instead of the GPU",
/// "only uses the CPU", "falls back to CPU", "defaults to the CPU".
fn on_the_cpu_instead(w: &[&str]) -> bool {
    w.iter().enumerate().any(|(i, x)| match *x {
        "cpu" => {
            w.get(i + 1) == Some(&"instead")
                || (i.saturating_sub(GAP)..i).any(|j| w[j] == "only")
                || (i >= 2
                    && w[i - 1] == "the"
                    && w.get(i.saturating_sub(3)..i - 1)
                        .is_some_and(|p| p.contains(&"to") && back_or_default(p)))
                || (i >= 1 && w[i - 1] == "to" && back_or_default(&w[i.saturating_sub(3)..i]))
        }
        "instead" => {
            w.get(i + 1) == Some(&"of")
                && w.get(i + 2..(i + 4).min(w.len()))
                    .is_some_and(|r| r.iter().any(|x| is_gpu_word(x)))
        }
        _ => false,
    })
}

fn back_or_default(words: &[&str]) -> bool {
    words.iter().any(|x| {
        matches!(
            *x,
            "back" | "defaults" | "default" | "defaulting" | "defaulted" | "reverts" | "revert"
        )
    })
}

/// Names of the whole machine.
const MACHINES: [&str; 9] = [
    "system",
    "machine",
    "computer",
    "pc",
    "server",
    "host",
    "workstation",
    "laptop",
    "rig",
];
/// The machine going down by itself.
const MACHINE_EVENTS: [&str; 13] = [
    "reboots",
    "restarts",
    "crashes",
    "shuts",
    "shutdown",
    "powers",
    "freezes",
    "rebooted",
    "restarted",
    "crashed",
    // "cold boots", "turns off", "cuts off": a reset of the machine, not a user's start.
    "boots",
    "turns",
    "cuts",
];

/// The whole machine going down under the GPU's work: the machine, then within a couple of
/// words what it did by itself ("the server reboots", "my PC crashed"), or a crash done to it
/// ("crashes my computer", "restarts the whole system"). A user's own action ("I rebooted the
/// machine") is not one.
fn machine_goes_down(w: &[&str]) -> bool {
    w.iter().enumerate().any(|(i, x)| {
        if MACHINES.contains(x) {
            return (i + 1..w.len().min(i + 3)).any(|j| {
                MACHINE_EVENTS.contains(&w[j])
                    // "turns" and "cuts" only with "off".
                    && (!matches!(w[j], "turns" | "cuts") || w.get(j + 1) == Some(&"off"))
            });
        }
        // Only a crash is done to a machine by what runs on it: "rebooting the machine" is
        // most often the user's own step.
        if matches!(*x, "crashes" | "crashed") {
            let actor_is_user = i > 0 && matches!(w[i - 1], "i" | "we" | "you");
            return !actor_is_user && (i + 1..w.len().min(i + 4)).any(|j| MACHINES.contains(&w[j]));
        }
        false
    })
}

/// A card the report calls defective or faulty, its model between ("one of those defective
/// RTX2080 Ti cards", "a faulty 3090"), and the machine going down in Chinese ("电脑就会重启").
fn card_called_defective(w: &[&str]) -> bool {
    w.iter().enumerate().any(|(i, x)| {
        matches!(*x, "defective" | "faulty")
            && w[i + 1..w.len().min(i + 5)]
                .iter()
                .any(|y| is_gpu_word(y) || y.starts_with("card") || y.starts_with("rtx"))
    })
}

/// A GPU that vanishes from the machine ("GPU disappears from nvidia-smi", "one card
/// vanished", "显卡消失").
fn gpu_vanishes(w: &[&str], lower: &str) -> bool {
    let vanish = |x: &str| x.starts_with("disappear") || x.starts_with("vanish");
    w.iter()
        .enumerate()
        .any(|(i, x)| vanish(x) && (i.saturating_sub(GAP + 1)..i).any(|j| is_gpu_word(w[j])))
        || (lower.contains("显卡") && lower.contains("消失"))
        || (["电脑", "机器", "服务器", "主机"]
            .iter()
            .any(|m| lower.contains(m))
            && ["重启", "关机", "断电"].iter().any(|e| lower.contains(e)))
}

/// Words of a run over several GPUs or nodes, besides the lexicon's fixed ones.
const DISTRIBUTED: [&str; 8] = [
    "ddp",
    "fsdp",
    "deepspeed",
    "torchrun",
    "distributed",
    "multinode",
    "barrier",
    "多机",
];

/// A run over several GPUs or nodes: a count of two or more of them ("on 2 nodes", "8 GPUs",
/// "4x A100") or a word of distributed training.
pub(crate) fn several_gpus(w: &[&str]) -> bool {
    w.iter().enumerate().any(|(i, x)| {
        DISTRIBUTED.contains(x) || {
            let count = x
                .strip_suffix('x')
                .unwrap_or(x)
                .parse::<u32>()
                .is_ok_and(|n| (2..=4096).contains(&n));
            // A number after a product's name is its version ("CUDA 12 GPUs").
            let a_version = i > 0 && matches!(w[i - 1], "cuda" | "version" | "driver" | "cudnn");
            count
                && !a_version
                && w.get(i + 1).is_some_and(|n| {
                    matches!(
                        *n,
                        "gpus" | "nodes" | "cards" | "ranks" | "machines" | "workers" | "卡"
                    ) || (n.len() <= 5 && is_gpu_word(n) && *n != "cuda")
                })
        }
    })
}

/// Words that say a run works.
const WORKS: [&str; 6] = ["works", "worked", "working", "work", "fine", "runs"];
/// Words that set one case against another.
const CONTRASTS: [&str; 5] = ["but", "while", "whereas", "however", "yet"];
/// Words that say a run fails.
const FAILS: [&str; 12] = [
    "fails", "failed", "fail", "crashes", "crashed", "crash", "hangs", "hang", "stuck", "errors",
    "error", "breaks",
];
/// Names of a container and of what runs one.
const CONTAINERS: [&str; 12] = [
    "docker",
    "container",
    "containers",
    "pod",
    "pods",
    "kubernetes",
    "k8s",
    "compose",
    "podman",
    "singularity",
    "apptainer",
    "wsl",
];

/// A case that works set against one that fails, in one sentence ("works on the host but not
/// in docker", "crashes with 8 GPUs but works with 1"): what the failing case alone names is
/// where the fault is. A container there and not on the working side is the container's
/// runtime (the host's driver and the program are the same on both sides); several GPUs or
/// nodes there, against one, is the communication between them. None when the sentence sets
/// no working case against a failing one, or the failing side names neither.
fn fails_only_there(w: &[&str]) -> Option<Subject> {
    let at = w.iter().position(|x| CONTRASTS.contains(x))?;
    let (a, b) = (&w[..at], &w[at + 1..]);
    let works = |side: &[&str]| side.iter().any(|x| WORKS.contains(x));
    let fails = |side: &[&str]| side.iter().any(|x| FAILS.contains(x) || is_negation(x));
    let (working, failing) = match (works(a) && !fails(a), works(b) && !fails(b)) {
        (true, false) if fails(b) => (a, b),
        (false, true) if fails(a) => (b, a),
        _ => return None,
    };
    let containers = |side: &[&str]| side.iter().any(|x| CONTAINERS.contains(x));
    if containers(failing) && !containers(working) {
        return Some(Subject::Container);
    }
    if several_gpus(failing) && !several_gpus(working) {
        return Some(Subject::Nccl);
    }
    None
}

/// [`several_gpus`] of a whole line.
pub(crate) fn several_gpus_in(line: &str) -> bool {
    several_gpus(&words_of(&line.to_lowercase()))
}

/// Support asked for, or said missing, of an architecture or card the line names
/// ("Blackwell support for sm_120", "add support for RTX 50 series", "no support for
/// Kepler").
fn support_asked(w: &[&str], question: bool) -> bool {
    let names_arch = w.iter().enumerate().any(|(i, x)| {
        ARCHITECTURES.contains(x)
            || is_gpu_word(x) && !matches!(*x, "gpu" | "gpus" | "nvidia")
            || (*x == "capability"
                && w.get(i + 1)
                    .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit())))
            || x.strip_prefix("sm_")
                .or_else(|| x.strip_prefix("sm"))
                .is_some_and(|d| {
                    (2..=3).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit())
                })
    });
    // Asked whether the card is supported, works or has a build ("Does it work on a GTX
    // 1060?", "Is there a build for sm_61?").
    let asked = question
        && w.iter().any(|x| {
            matches!(
                *x,
                "support"
                    | "supports"
                    | "supported"
                    | "build"
                    | "builds"
                    | "wheel"
                    | "work"
                    | "works"
                    | "run"
                    | "runs"
            )
        });
    let said = w.iter().enumerate().any(|(i, x)| {
        *x == "support"
            && (matches!(
                w.get(i + 1).copied(),
                Some("for" | "dropped" | "removed" | "ended") | None
            ) || (i > 0
                && matches!(
                    w[i - 1],
                    "add"
                        | "adding"
                        | "request"
                        | "need"
                        | "needs"
                        | "no"
                        | "missing"
                        | "lacks"
                        | "lack"
                        | "without"
                        | "please"
                        | "dropped"
                )))
    });
    names_arch && (asked || said)
}

/// A driver version stated beside a CUDA version newer than its branch runs ("CUDA 12.4 does
/// not work with driver 470", "driver 525.60 and CUDA 12.4"), judged by the knowledge base's
/// table of branches. A branch the table does not know judges nothing.
pub(crate) fn driver_below_cuda(w: &[&str], kb: &Kb) -> bool {
    let Some(driver) = stated_driver(w) else {
        return false;
    };
    let Some(max) = kb.driver_max_cuda(&driver) else {
        return false;
    };
    stated_builds(w).any(|v| v > max)
}

/// The driver's version the words state first ([`stated_drivers`]).
pub(crate) fn stated_driver(w: &[&str]) -> Option<DriverVersion> {
    stated_drivers(w).next()
}

/// The drivers' versions the words state: "driver" or "驱动" and, within three words, a
/// version of a driver's branch ("driver 470", "Driver Version: 535.104.05").
pub(crate) fn stated_drivers<'a>(w: &'a [&'a str]) -> impl Iterator<Item = DriverVersion> + 'a {
    w.iter().enumerate().filter_map(|(i, x)| {
        if *x != "driver" && *x != "驱动" {
            return None;
        }
        w.get(i + 1..(i + 4).min(w.len()))?
            .iter()
            .find_map(|v| driver_version(v))
    })
}

/// A card named by its model beside a CUDA that cannot build code for it ("RTX5080 with
/// cudatoolkit=11.8", "cu118 on my RTX 5090", "a K80 and CUDA 12.1"), judged by the knowledge
/// base: the card's compute capability is of a newer major than the highest architecture that
/// CUDA's nvcc compiles for (machine code of a lower major does not run on it), or below the
/// lowest. A build of that CUDA holds no machine code for the card. The "CUDA Version" that
/// nvidia-smi prints is the driver's ceiling, not a build: it is not read.
fn cuda_cannot_build_for_card(w: &[&str], kb: &Kb) -> bool {
    let Some(card) = crate::setup::card_model(kb, &w.join(" ")) else {
        return false;
    };
    stated_builds(w).any(|v| crate::setup::cuda_runs_on(kb, v, card.cc) == Some(false))
}

/// The CUDA versions a sentence's words give a build or a toolkit: a wheel's tag (`cu118`),
/// "cuda 11.8", "cuda11.8", "cudatoolkit=11.8.0", "CUDA Toolkit 12.4"; never "CUDA Version"
/// (nvidia-smi's header, the driver's ceiling).
pub(crate) fn stated_builds<'a>(w: &'a [&'a str]) -> impl Iterator<Item = CudaVersion> + 'a {
    w.iter().enumerate().filter_map(|(i, x)| {
        if let Some(digits) = x.strip_prefix("cu") {
            if (2..=3).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) {
                return CudaVersion::from_tag(x).ok();
            }
        }
        let rest = x
            .strip_prefix("cudatoolkit")
            .or_else(|| x.strip_prefix("cuda"))?;
        if !rest.is_empty() {
            return rest.parse().ok();
        }
        let mut j = i + 1;
        if w.get(j) == Some(&"toolkit") {
            j += 1;
        }
        w.get(j)?.parse().ok()
    })
}

/// A driver's version as users write it: a branch of three digits (300 to 999) with its
/// minor parts or alone ("470", "535.104.05").
pub(crate) fn driver_version(w: &str) -> Option<DriverVersion> {
    let branch: u32 = w.split('.').next()?.parse().ok()?;
    if !(300..1000).contains(&branch) {
        return None;
    }
    w.parse().ok()
}

/// The sentences of a text: split at line ends and at the marks that end a sentence (a
/// report's head joins its lines with " . ").
pub fn sentences(text: &str) -> impl Iterator<Item = &str> {
    // A question keeps its mark: asking whether a GPU is supported says it may not be.
    text.split_inclusive(['\n', '。', '!', '?', ';', '！', '？', '；'])
        .flat_map(|s| s.split(". "))
        .filter(|s| !s.trim().is_empty())
}

/// What one sentence of a short report's prose says ([`sentences`] splits a report: a window
/// of words never joins the end of one sentence to the next). The caller reads only what users
/// type (a short report that no line explains alone): a program's output is the lexicon's and
/// the signatures'.
pub fn read_sentence(sentence: &str) -> Vec<ProseReading> {
    let lower = sentence.to_lowercase().replace('’', "'");
    let w = words_of(&lower);
    let mut out = Vec::new();
    if w.is_empty() {
        return out;
    }
    let mut say = |subject, failure| out.push(ProseReading { subject, failure });
    if gpu_unused(&w) || on_the_cpu_instead(&w) {
        say(Subject::Gpu, Failure::NotAvailable);
    }
    if machine_goes_down(&w) || gpu_vanishes(&w, &lower) || card_called_defective(&w) {
        say(Subject::Hardware, Failure::Fault);
    }
    match fails_only_there(&w) {
        Some(Subject::Container) => say(Subject::Container, Failure::NotAvailable),
        Some(s) => say(s, Failure::Failed),
        None => {}
    }
    let question = lower.trim_end().ends_with(['?', '？']);
    if support_asked(&w, question) {
        say(Subject::GpuArch, Failure::Unsupported);
    }
    if let Ok(kb) = Kb::try_embedded() {
        if driver_below_cuda(&w, kb) {
            say(Subject::Driver, Failure::TooOld);
        }
        if cuda_cannot_build_for_card(&w, kb) {
            say(Subject::GpuArch, Failure::Unsupported);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(line: &str) -> Vec<(Subject, Failure)> {
        read_sentence(line)
            .into_iter()
            .map(|r| (r.subject, r.failure))
            .collect()
    }

    #[test]
    fn a_gpu_not_used_or_seen_in_any_wording() {
        for line in [
            "ollama doesn't use my GPU",
            "Pytorch can't see my RTX 5090",
            "the program does not utilize any of the GPUs",
            "my card isn't being used",
            "GPU not being used, 100% CPU",
            "training only uses CPU even though I have an RTX 3090",
            "I can't use my GPU with torch",
            "it runs on the CPU instead",
            "falls back to the CPU every time",
            "the model runs on cpu instead of the gpu",
            "tensorflow never detects the A100",
        ] {
            assert!(
                reads(line).contains(&(Subject::Gpu, Failure::NotAvailable)),
                "{line}"
            );
        }
        for line in [
            "I can't use conda here, so pip was used on the GPU box",
            "sm_120 cannot be recognized by nvcc",
            "don't worry about the user list",
            "the CPU usage is high",
            "I used the GPU build",
            "I don't see any gpu use while training",
            "we don't use the GPU for preprocessing",
        ] {
            assert!(
                !reads(line).contains(&(Subject::Gpu, Failure::NotAvailable)),
                "{line}"
            );
        }
    }

    #[test]
    fn the_machine_going_down_or_a_gpu_vanishing_is_the_hardware() {
        for line in [
            "The machine reboots when training starts on 4 GPUs",
            "training crashes my PC",
            "server shuts down under full load",
            "GPU disappears from nvidia-smi after a few hours",
            "跑了一会显卡消失了",
            "PC cold boots during the example on the GPU",
            "the system turns off under GPU load",
            "一运行train.py过一会电脑就会重启",
            "might have one of those defective RTX2080 Ti cards",
        ] {
            assert!(
                reads(line).contains(&(Subject::Hardware, Failure::Fault)),
                "{line}"
            );
        }
        for line in [
            "I rebooted the machine and nvidia-smi still fails",
            "after I restart the server the driver works",
            "the process crashes with an illegal memory access",
            "the system turns it into a list",
            "a defective cable to the monitor",
        ] {
            assert!(
                !reads(line).contains(&(Subject::Hardware, Failure::Fault)),
                "{line}"
            );
        }
    }

    #[test]
    fn a_run_over_several_gpus_or_nodes() {
        for line in [
            "hangs on 2 nodes",
            "stuck with 8 GPUs",
            "4x A100 training",
            "DDP stuck",
            "deepspeed hangs",
        ] {
            assert!(several_gpus(&words_of(&line.to_lowercase())), "{line}");
        }
        for line in ["1 gpu", "cuda 12 gpus", "2 epochs", "batch size 8"] {
            assert!(!several_gpus(&words_of(&line.to_lowercase())), "{line}");
        }
    }

    #[test]
    fn support_asked_of_an_architecture() {
        assert!(reads("Blackwell support for sm_120")
            .contains(&(Subject::GpuArch, Failure::Unsupported)));
        assert!(reads("please add support for RTX 50")
            .contains(&(Subject::GpuArch, Failure::Unsupported)));
        assert!(
            !reads("it supports sm_90 fine").contains(&(Subject::GpuArch, Failure::Unsupported))
        );
        for line in [
            "Please support Pascal GPUs",
            "old GPU (Maxwell) support dropped?",
            "Is there a build for sm_61?",
            "Does it work on a GTX 1060?",
            "does tensorflow support compute capability 3.0?",
        ] {
            assert!(
                reads(line).contains(&(Subject::GpuArch, Failure::Unsupported)),
                "{line}"
            );
        }
        // A question that names no GPU, or a statement that one works, asks nothing of support.
        for line in ["Does it work on Windows?", "It works on my GTX 1060."] {
            assert!(
                !reads(line).contains(&(Subject::GpuArch, Failure::Unsupported)),
                "{line}"
            );
        }
    }

    #[test]
    fn a_driver_older_than_the_cuda_beside_it_by_the_table() {
        assert!(reads("CUDA 12.4 not working with driver 470")
            .contains(&(Subject::Driver, Failure::TooOld)));
        assert!(reads("driver 470.57 and cuda12.1").contains(&(Subject::Driver, Failure::TooOld)));
        // R535 runs CUDA 12.2: no verdict of age.
        assert!(!reads("CUDA 12.1 with driver 535").contains(&(Subject::Driver, Failure::TooOld)));
        // An unknown branch judges nothing.
        assert!(!reads("CUDA 12.4 with driver 999").contains(&(Subject::Driver, Failure::TooOld)));
        // A wheel's tag is a CUDA too.
        assert!(reads("torch 2.1.0+cu121 with driver 470")
            .contains(&(Subject::Driver, Failure::TooOld)));
    }

    #[test]
    fn what_only_the_failing_case_names() {
        for line in [
            "nvidia-smi works on the host but not inside docker",
            "training runs fine on bare metal, however in the k8s pod it fails",
            "it crashes in the container but works on the host",
        ] {
            assert!(
                reads(line).contains(&(Subject::Container, Failure::NotAvailable)),
                "{line}"
            );
        }
        for line in [
            "vllm crashes with 8 GPUs but works with 1",
            "works on one GPU but hangs on 2 nodes",
        ] {
            assert!(
                reads(line).contains(&(Subject::Nccl, Failure::Failed)),
                "{line}"
            );
        }
        for line in [
            // Both sides in a container, or nothing named on the failing side.
            "works in docker on my laptop but not in docker on the server",
            "it works on linux but crashes on windows",
            // No working case.
            "fails on the host and also in docker",
        ] {
            let r = reads(line);
            assert!(
                !r.contains(&(Subject::Container, Failure::NotAvailable))
                    && !r.contains(&(Subject::Nccl, Failure::Failed)),
                "{line}"
            );
        }
    }

    #[test]
    fn a_card_beside_a_cuda_that_cannot_build_for_it_by_the_table() {
        let arch = (Subject::GpuArch, Failure::Unsupported);
        for line in [
            "RTX5080 does not work with cudatoolkit=11.8.0",
            "torch 2.4.1+cu124 on my RTX 5090",
            "Tesla K80 with CUDA 12.1",
            "GeForce RTX 4090 and cuda 10.2",
        ] {
            assert!(reads(line).contains(&arch), "{line}");
        }
        for line in [
            // CUDA 12.8 compiles for sm_120; CUDA 11.7's sm_86 code runs on an sm_89 card.
            "RTX 5090 with CUDA 12.8",
            "RTX 4090 with CUDA 11.7",
            // nvidia-smi's "CUDA Version" is the driver's, not a build's.
            "RTX 5090 CUDA Version: 12.4",
            // No card named, or a CUDA the table does not know.
            "cudatoolkit=11.8.0 is too old",
            "RTX 5090 with CUDA 99.1",
        ] {
            assert!(!reads(line).contains(&arch), "{line}");
        }
    }
}
