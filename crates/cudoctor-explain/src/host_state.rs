//! What a report says of the machine's state around the failure, in prose: a resume from
//! suspend, or the hardware itself (clocks pushed past the card's defaults, its power and
//! cooling, a card that drops out). Alone these name no cause; with a failure of the GPU that
//! no line explains (an unknown CUDA error, an illegal address in code that runs elsewhere, a
//! GPU that vanished) they decide which part of the machine failed:
//!
//! - after a resume from suspend, the driver's unified-memory module (`nvidia_uvm`) is left in a
//!   state CUDA cannot initialise from: reloading the module or rebooting restores it;
//! - with the card overclocked, undervolted, short of power or too hot (or running a miner,
//!   which users tune that way), the faults are the hardware's, however the program reports
//!   them.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use std::sync::OnceLock;

/// What the words of [`WORDS`] tell of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The machine went to sleep and back (suspend, hibernate).
    Resumed,
    /// The card's clocks, voltage, power or cooling, or a card that dropped out.
    Hardware,
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
    ("超频", State::Hardware, false),
    ("降压", State::Hardware, false),
    ("电源", State::Hardware, false),
    ("过热", State::Hardware, false),
    ("掉卡", State::Hardware, false),
];

fn automaton() -> Option<&'static AhoCorasick> {
    static AC: OnceLock<Option<AhoCorasick>> = OnceLock::new();
    AC.get_or_init(|| {
        AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(WORDS.iter().map(|(w, _, _)| *w))
            .ok()
    })
    .as_ref()
}

/// Every word [`HostContext::feed`] looks for (the scan's gate must not pass over their lines).
pub fn literals() -> impl Iterator<Item = &'static str> {
    WORDS.iter().map(|(w, _, _)| *w)
}

/// The state a line tells, if any.
pub fn state_of(line: &str) -> Option<State> {
    let b = line.as_bytes();
    let word = |i: usize| b.get(i).is_some_and(|c| c.is_ascii_alphanumeric());
    automaton()?.find_overlapping_iter(line).find_map(|m| {
        let (_, state, whole) = WORDS.get(m.pattern().as_usize())?;
        let before = m.start().checked_sub(1).is_some_and(word);
        let alone = !before && !word(m.end());
        (!whole || alone).then_some(*state)
    })
}

/// The first line of each state a log tells.
#[derive(Debug, Default, Clone)]
pub struct HostContext {
    pub resumed: Option<(u64, String)>,
    pub hardware: Option<(u64, String)>,
}

impl HostContext {
    pub fn feed(&mut self, line_no: u64, line: &str) {
        if self.resumed.is_some() && self.hardware.is_some() {
            return;
        }
        let slot = match state_of(line) {
            Some(State::Resumed) => &mut self.resumed,
            Some(State::Hardware) => &mut self.hardware,
            None => return,
        };
        if slot.is_none() {
            *slot = Some((line_no, crate::scanner::shown(line)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(state_of("RuntimeError: CUDA error: unknown error"), None);
    }
}
