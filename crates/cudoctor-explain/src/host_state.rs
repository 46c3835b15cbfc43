//! What a report says of the machine's state around the failure, in prose: a resume from
//! suspend, or the hardware itself (clocks pushed past the card's defaults, its power and
//! cooling, a card that drops out). Alone these name no cause; with a failure of the GPU that
//! no line explains (an unknown CUDA error, an illegal address in code that runs elsewhere, a
//! GPU that vanished) they decide which part of the machine failed:
//!
//! - after a resume from suspend, the driver's unified-memory module (`nvidia_uvm`) is left in a
//!   state CUDA cannot initialise from: reloading the module or rebooting restores it;
//! - after an upgrade of the operating system or its kernel, the driver's kernel module built
//!   for the kernel before is missing from the new one until it is rebuilt;
//! - with the card overclocked, undervolted, short of power or too hot (or running a miner,
//!   which users tune that way), the machine shutting off under GPU load, a card unusable until
//!   a reboot, or faults of several kinds in one report, the faults are the hardware's, however
//!   the program reports them.
//! - with none of these, CUDA's own "unknown error" is the driver's unified-memory module not
//!   loaded or left broken (a container cannot load it; the host must).

use aho_corasick::AhoCorasick;
use std::sync::OnceLock;

/// What the words of [`WORDS`] tell of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The machine went to sleep and back (suspend, hibernate).
    Resumed,
    /// The operating system or its kernel was upgraded (and the machine rebooted into it): a
    /// driver module built for the kernel before is not loaded by the new one.
    KernelUpdated,
    /// The card's clocks, voltage, power or cooling, or a card that dropped out.
    Hardware,
    /// One kind of fault of the code running on the GPU (an illegal address, an illegal
    /// instruction, a launch failure...): one kind is a program's bug as often as not; several
    /// kinds in one report are faults at random places, as a card that is failing or pushed
    /// past what it sustains makes them.
    Fault(u8),
    /// CUDA's own "unknown error" (`CUDA_ERROR_UNKNOWN`, `cudaErrorUnknown`): with nothing else
    /// failing, the driver's unified-memory module (`nvidia_uvm`) not loaded or left broken,
    /// the one part of the driver CUDA needs that the display does not.
    UnknownError,
    /// CUDA that works only once the host has used the GPU ("doesn't work in containers until
    /// after use in host OS", "only after I run nvidia-smi"): the driver's unified-memory module
    /// and its device files are created on demand by the host's first CUDA or nvidia-smi call,
    /// which a container or an unprivileged service cannot make.
    LoadedOnDemand,
}

/// The words, what each tells, and whether it must stand alone ("miner" in "determiner").
const WORDS: &[(&str, State, bool)] = &[
    ("suspend", State::Resumed, false),
    ("resuming from", State::Resumed, false),
    ("resume from", State::Resumed, false),
    ("after resume", State::Resumed, false),
    ("hibernat", State::Resumed, false),
    ("睡眠", State::Resumed, false),
    ("休眠", State::Resumed, false),
    ("待机", State::Resumed, false),
    ("kernel update", State::KernelUpdated, false),
    ("kernel upgrade", State::KernelUpdated, false),
    ("os upgrade", State::KernelUpdated, false),
    ("os update", State::KernelUpdated, false),
    ("unattended-upgrade", State::KernelUpdated, false),
    ("unattended upgrade", State::KernelUpdated, false),
    ("升级内核", State::KernelUpdated, false),
    ("内核升级", State::KernelUpdated, false),
    ("更新内核", State::KernelUpdated, false),
    ("内核更新", State::KernelUpdated, false),
    ("overclock", State::Hardware, false),
    ("over-clock", State::Hardware, false),
    ("underclock", State::Hardware, false),
    ("undervolt", State::Hardware, false),
    ("oc profile", State::Hardware, false),
    ("memory clock", State::Hardware, false),
    ("core clock", State::Hardware, false),
    ("power limit", State::Hardware, false),
    ("power supply", State::Hardware, false),
    ("psu", State::Hardware, true),
    ("riser", State::Hardware, true),
    ("risers", State::Hardware, true),
    ("reseat", State::Hardware, false),
    ("overheat", State::Hardware, false),
    // The card's cooling as users describe it ("running at maximum fan yet cold", "adjusting
    // the fan curve").
    ("fan curve", State::Hardware, false),
    ("fan speed", State::Hardware, false),
    ("maximum fan", State::Hardware, false),
    ("max fan", State::Hardware, false),
    ("power draw", State::Hardware, false),
    ("风扇", State::Hardware, false),
    ("mining", State::Hardware, true),
    ("miner", State::Hardware, true),
    ("hashrate", State::Hardware, false),
    ("mh/s", State::Hardware, false),
    // The mining programs by name: their users tune the cards past their defaults and run
    // them on risers, as "mining" says of a report in words.
    ("ethminer", State::Hardware, false),
    ("lolminer", State::Hardware, false),
    ("phoenixminer", State::Hardware, false),
    ("nbminer", State::Hardware, false),
    ("gminer", State::Hardware, true),
    ("t-rex miner", State::Hardware, false),
    ("nicehash", State::Hardware, false),
    ("xmrig", State::Hardware, false),
    ("超频", State::Hardware, false),
    ("降压", State::Hardware, false),
    ("电源", State::Hardware, false),
    ("过热", State::Hardware, false),
    ("掉卡", State::Hardware, false),
    // A card left unusable by its failure until the machine restarts.
    ("until reboot", State::Hardware, false),
    ("until a reboot", State::Hardware, false),
    ("until i reboot", State::Hardware, false),
    ("必须重启", State::Hardware, false),
    // The whole machine going down under GPU load: its power or cooling.
    ("shut off", State::Hardware, false),
    ("shuts off", State::Hardware, false),
    ("powers off", State::Hardware, false),
    ("crashing my os", State::Hardware, false),
    ("crashes my os", State::Hardware, false),
    ("blue screen", State::Hardware, false),
    ("bsod", State::Hardware, true),
    ("蓝屏", State::Hardware, false),
    ("黑屏", State::Hardware, false),
    // The reporter's own conclusion that the hardware is at fault ("it IS a hardware issue",
    // "100% a hardware related problem"), unless negated ([`negated`]).
    ("hardware issue", State::Hardware, false),
    ("hardware problem", State::Hardware, false),
    ("hardware related", State::Hardware, false),
    ("hardware-related", State::Hardware, false),
    ("hardware fault", State::Hardware, false),
    ("hardware failure", State::Hardware, false),
    ("硬件问题", State::Hardware, false),
    ("硬件故障", State::Hardware, false),
    ("illegal memory access", State::Fault(0), false),
    ("illegaladdress", State::Fault(0), false),
    ("illegal address", State::Fault(0), false),
    ("unspecified launch failure", State::Fault(1), false),
    ("illegal instruction", State::Fault(2), false),
    ("invalid program counter", State::Fault(3), false),
    ("misaligned address", State::Fault(4), false),
    // The same faults by their codes' names (`cudaErrorMisalignedAddress`,
    // `CUDA_ERROR_ILLEGAL_INSTRUCTION`).
    ("misalignedaddress", State::Fault(4), false),
    ("misaligned_address", State::Fault(4), false),
    ("illegal_address", State::Fault(0), false),
    ("illegalinstruction", State::Fault(2), false),
    ("illegal_instruction", State::Fault(2), false),
    ("hardware stack error", State::Fault(5), false),
    ("until after use in host", State::LoadedOnDemand, false),
    ("until after use on the host", State::LoadedOnDemand, false),
    (
        "until after using it on the host",
        State::LoadedOnDemand,
        false,
    ),
    ("until i run nvidia-smi", State::LoadedOnDemand, false),
    ("until i ran nvidia-smi", State::LoadedOnDemand, false),
    ("until running nvidia-smi", State::LoadedOnDemand, false),
    (
        "only after running nvidia-smi",
        State::LoadedOnDemand,
        false,
    ),
    ("only after i run nvidia-smi", State::LoadedOnDemand, false),
    (
        "after running nvidia-smi on the host",
        State::LoadedOnDemand,
        false,
    ),
    ("cuda_error_unknown", State::UnknownError, false),
    ("cudaerrorunknown", State::UnknownError, false),
    ("cuda error: unknown error", State::UnknownError, false),
];

fn automaton() -> Option<&'static AhoCorasick> {
    static AC: OnceLock<Option<AhoCorasick>> = OnceLock::new();
    AC.get_or_init(|| crate::words_automaton(WORDS.iter().map(|(w, _, _)| *w)))
        .as_ref()
}

/// Every word [`HostContext::feed`] looks for (the scan's gate must not pass over their lines).
pub fn literals() -> impl Iterator<Item = &'static str> {
    WORDS.iter().map(|(w, _, _)| *w)
}

/// The state a line tells first, if any.
pub fn state_of(line: &str) -> Option<State> {
    states_of(line).next()
}

/// Whether a text names a fault of the code running on the GPU (an illegal or misaligned
/// address, an illegal instruction, a launch failure).
pub fn names_fault(text: &str) -> bool {
    states_of(text).any(|s| matches!(s, State::Fault(_)))
}

/// Every state a line tells, in order.
fn states_of(line: &str) -> impl Iterator<Item = State> + '_ {
    let b = line.as_bytes();
    let word = move |i: usize| b.get(i).is_some_and(|c| c.is_ascii_alphanumeric());
    automaton()
        .into_iter()
        .flat_map(move |ac| ac.find_overlapping_iter(line))
        .filter_map(move |m| {
            let (text, state, whole) = WORDS.get(m.pattern().as_usize())?;
            let before = m.start().checked_sub(1).is_some_and(word);
            let alone = !before && !word(m.end());
            let denied = is_conclusion(text) && negated(line, m.start(), m.end());
            ((!whole || alone) && !denied).then_some(*state)
        })
}

/// The fault a CUDA error number names on a line that speaks of CUDA ("CUDA error 700",
/// "CU result: 719"): the driver's and the runtime's codes for the kernel faults are the same
/// numbers, so a report that gives one fault by its name and another by its number shows two
/// kinds of fault as much as one that names both.
fn fault_code(line: &str) -> Option<State> {
    // Every code read here begins "70" or "71": most lines are left at that test.
    if !(line.contains("70") || line.contains("71")) {
        return None;
    }
    let lower = line.to_ascii_lowercase();
    if !lower.contains("cu") {
        return None;
    }
    crate::clause::numbers_after(&lower, &["error", "result", "code", "status"])
        .iter()
        .find_map(|n| match n.as_str() {
            "700" => Some(State::Fault(0)),
            "719" => Some(State::Fault(1)),
            "715" => Some(State::Fault(2)),
            "718" => Some(State::Fault(3)),
            "716" => Some(State::Fault(4)),
            "714" => Some(State::Fault(5)),
            _ => None,
        })
}

/// Whether a word states a conclusion about the hardware, which a report may deny or ask.
fn is_conclusion(word: &str) -> bool {
    word.starts_with("hardware") || word.starts_with("硬件")
}

/// How far before a conclusion its negation is looked for (bytes).
const NEGATION_REACH: usize = 24;

/// Whether a conclusion is denied ("not a hardware issue", "ruled out a hardware problem",
/// "不是硬件问题"), only supposed ("might be a hardware issue") or only asked ("is this a
/// hardware issue?").
fn negated(line: &str, start: usize, end: usize) -> bool {
    let before = crate::scanner::tail_ref(line.get(..start).unwrap_or_default(), NEGATION_REACH)
        .to_lowercase();
    // Denied, or only supposed ("if it is a hardware problem", "might be a hardware issue"):
    // a conclusion is what the reporter states.
    let denied = [
        "not ",
        "no ",
        "n't",
        "rule out",
        "ruled out",
        "unlikely",
        "if ",
        "whether",
        "might",
        "could be",
        "may be",
        "maybe",
        "perhaps",
        "不是",
        "排除",
        "是否",
        "可能",
    ]
    .iter()
    .any(|w| before.contains(w));
    let asked = line
        .get(end..)
        .unwrap_or_default()
        .split(['.', '!', '\n'])
        .next()
        .is_some_and(|rest| rest.contains('?') || rest.contains('？'));
    denied || asked
}

/// The first line of each state a log tells.
#[derive(Debug, Default, Clone)]
pub struct HostContext {
    pub resumed: Option<(u64, String)>,
    pub hardware: Option<(u64, String)>,
    pub kernel_updated: Option<(u64, String)>,
    pub unknown_error: Option<(u64, String)>,
    pub loaded_on_demand: Option<(u64, String)>,
    /// The kinds of fault seen ([`State::Fault`]), one bit each.
    faults: u8,
}

impl HostContext {
    pub fn feed(&mut self, line_no: u64, line: &str) {
        if self.resumed.is_some() && self.hardware.is_some() && self.kernel_updated.is_some() {
            return;
        }
        for state in states_of(line).chain(fault_code(line)) {
            let slot = match state {
                State::Resumed => &mut self.resumed,
                State::Hardware => &mut self.hardware,
                State::KernelUpdated => &mut self.kernel_updated,
                State::UnknownError => &mut self.unknown_error,
                State::LoadedOnDemand => &mut self.loaded_on_demand,
                State::Fault(kind) => {
                    self.faults |= 1 << kind;
                    // The second kind of fault is where the report shows faults at random.
                    if self.faults.count_ones() < 2 {
                        continue;
                    }
                    &mut self.hardware
                }
            };
            if slot.is_none() {
                *slot = Some((line_no, crate::scanner::shown(line)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_upgrade_in_prose() {
        assert_eq!(
            state_of("the driver is gone after the OS upgrade and reboot"),
            Some(State::KernelUpdated)
        );
        assert_eq!(state_of("升级内核之后驱动没了"), Some(State::KernelUpdated));
        assert_eq!(
            state_of("after that error the card is unusable until a reboot"),
            Some(State::Hardware)
        );
    }

    #[test]
    fn faults_of_several_kinds_are_the_hardware_s() {
        let mut one = HostContext::default();
        one.feed(1, "CUDA error: an illegal memory access was encountered");
        one.feed(2, "CUDA error: an illegal memory access was encountered");
        assert!(one.hardware.is_none());
        let mut two = HostContext::default();
        two.feed(1, "CUDA error: an illegal memory access was encountered");
        two.feed(
            5,
            "then, another run: CUDA error: unspecified launch failure",
        );
        assert_eq!(two.hardware.map(|h| h.0), Some(5));
    }

    #[test]
    fn states_in_their_words_and_not_inside_others() {
        assert_eq!(
            state_of("CUDA fails after resuming from suspend"),
            Some(State::Resumed)
        );
        assert_eq!(
            state_of("crashing with the memory clock at +900"),
            Some(State::Hardware)
        );
        assert_eq!(
            state_of("ethminer 0.18: Error CUDA mining"),
            Some(State::Hardware)
        );
        assert_eq!(state_of("显卡超频以后报错"), Some(State::Hardware));
        assert_eq!(state_of("determiner and determining tokens"), None);
        // CUDA's own unknown error is a state of the driver; an unknown error of anything else
        // is not.
        assert_eq!(
            state_of("RuntimeError: CUDA error: unknown error"),
            Some(State::UnknownError)
        );
        assert_eq!(state_of("the installer failed with an unknown error"), None);
    }
}
