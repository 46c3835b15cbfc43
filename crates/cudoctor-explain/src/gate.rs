//! The scan's first look at a line: one automaton over everything any reader of a line looks
//! for, so that the ordinary line of a log (a training step, a progress report, a table row) is
//! passed over after one pass over its bytes.
//!
//! The gate holds the signatures' required literals, the clause lexicon's words and the words
//! that name binaries, compared ASCII case-insensitively as the readers compare them, and every
//! byte that makes a line need more than the plain reading: control and non-ASCII bytes and a
//! backslash (cleaning and normalisation rewrite those lines, which may bring a literal into
//! being). Normalisation also collapses runs of spaces, which could join a literal's words
//! ("unable  to"): so each literal is looked for by its longest space-free piece, which a line
//! holds whatever its spacing. A line the gate passes over is one on which every reader would
//! find nothing: the scan's equivalence test reads whole corpora both ways and compares.

use crate::prefilter::Prefilter;
use aho_corasick::{AhoCorasick, AhoCorasickKind};

#[derive(Debug, Clone, Default)]
pub struct Gate {
    /// `None` when some signature requires no literal: then no line is passed over.
    automaton: Option<AhoCorasick>,
}

impl Gate {
    pub fn new(prefilter: &Prefilter) -> Gate {
        if !prefilter.is_usable() {
            return Gate::default();
        }
        let words = prefilter
            .literals()
            .iter()
            .map(String::as_str)
            .chain(crate::clause::lexicon_words().map(|w| -> &str { w }))
            .chain(crate::clause::frame_literals().map(|w| -> &str { w }))
            .chain(crate::named::literals().map(|w| -> &str { w }))
            .chain(crate::host_state::literals().map(|w| -> &str { w }))
            .chain(crate::testimony::literals().map(|w| -> &str { w }))
            .chain(crate::setup::LITERALS.iter().copied())
            .chain(crate::setup::CARD_CONTEXT.iter().copied())
            .chain(crate::scanner::LITERALS.iter().copied());
        let mut needles: Vec<Vec<u8>> = Vec::new();
        for word in words {
            match space_free_needle(word) {
                Some(needle) => needles.push(needle.into_bytes()),
                // A literal of spaces alone: nothing to look for, so no line is passed over.
                None => return Gate::default(),
            }
        }
        needles.extend((0u8..0x20).chain([0x7f, b'\\']).map(|b| vec![b]));
        needles.extend(
            crate::normalize::rewritten_chars()
                .chain(unicode_spaces())
                .chain(FOLDING_TO_ASCII)
                .map(|c| c.to_string().into_bytes()),
        );
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&needles)
            .ok();
        Gate { automaton }
    }

    /// Whether `body` (a line without its surrounding ASCII whitespace) can be passed over:
    /// UTF-8 without control bytes, nothing for normalisation to rewrite but runs of spaces, no
    /// literal any reader looks for.
    pub fn passes_over(&self, body: &[u8]) -> bool {
        self.automaton.as_ref().is_some_and(|ac| !ac.is_match(body))
            && (body.is_ascii() || std::str::from_utf8(body).is_ok())
    }
}

/// The characters other than ASCII's that `str::trim` removes from a line's ends: a line
/// that begins or ends with one is trimmed otherwise when read in full.
fn unicode_spaces() -> impl Iterator<Item = char> {
    (0x80u32..=0x3000)
        .filter_map(char::from_u32)
        .filter(|c| c.is_whitespace())
}

/// The characters that a case-insensitive regex matches to an ASCII letter (Unicode's simple
/// case folding: the Kelvin sign to `k`, the long s to `s`), so that a signature's `(?i)`
/// literal can match a line whose ASCII-only needles do not.
const FOLDING_TO_ASCII: [char; 2] = ['\u{212A}', '\u{017F}'];

/// What a line holds, however its runs of spaces are spelt, if it holds `literal` once they
/// are collapsed: one of the literal's space-free pieces with a space on each side where the
/// literal has one ("nccl info " gives " info "), the longest such.
fn space_free_needle(literal: &str) -> Option<String> {
    let pieces: Vec<&str> = literal.split(' ').collect();
    let last = pieces.len() - 1;
    pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.is_empty())
        .map(|(i, p)| {
            let before = if i > 0 { " " } else { "" };
            let after = if i < last { " " } else { "" };
            format!("{before}{p}{after}")
        })
        .max_by_key(String::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate::new(&Prefilter::new([r"CUDA error: (.+)", r"no kernel image"]))
    }

    #[test]
    fn plain_lines_are_passed_over() {
        let g = gate();
        assert!(g.passes_over(b"step 120 | loss 2.3141 | lr 3.0e-04 | tokens/s 81234"));
        assert!(g.passes_over(b""));
        assert!(g.passes_over(b"|  31%   45C    P0    120W /  700W |"));
    }

    #[test]
    fn lines_any_reader_needs_are_not() {
        let g = gate();
        for line in [
            &b"RuntimeError: CUDA error: out of memory"[..],
            b"cuda ERROR: x",
            b"loading /opt/ext/foo.so",
            b"the job failed",
            // What normalisation rewrites: a typographic quote, a full-width letter, a no-break
            // space; a Kelvin sign a case-insensitive regex reads as `k`; bytes not UTF-8.
            "it\u{2019}s".as_bytes(),
            "\u{FF23}UDA".as_bytes(),
            "a\u{00A0}b".as_bytes(),
            "\u{212A}ernel".as_bytes(),
            b"step 1 \xe2\x96",
            b"C:\\\\Users\\\\me",
            b"no  kernel   image",
            b"a\tb",
            b"a\x1b[31mb",
        ] {
            assert!(!g.passes_over(line), "{}", String::from_utf8_lossy(line));
        }
    }

    /// A progress bar's blocks and text in other scripts are read as they are: normalisation
    /// leaves them, and a literal of another script is a needle of its own.
    #[test]
    fn characters_normalisation_keeps_are_passed_over() {
        let g = gate();
        assert!(g.passes_over(" 88%|██████▍   | 5/15 [00:05<00:23, 8.75it/s]".as_bytes()));
        assert!(g.passes_over("第 3 轮训练完成".as_bytes()));
    }

    #[test]
    fn literals_are_looked_for_by_a_piece_any_spacing_keeps() {
        assert_eq!(space_free_needle("nccl info ").as_deref(), Some(" info "));
        assert_eq!(
            space_free_needle("no kernel image").as_deref(),
            Some(" kernel ")
        );
        assert_eq!(space_free_needle("libcudart").as_deref(), Some("libcudart"));
        assert_eq!(space_free_needle("   "), None);
        let g = Gate::new(&Prefilter::new([r"NCCL INFO Channel"]));
        assert!(g.passes_over(b"[INFO] step 1"));
        assert!(!g.passes_over(b"node1:1:1 [0] NCCL   INFO   Channel 00"));
    }

    #[test]
    fn an_unusable_prefilter_passes_nothing_over() {
        let g = Gate::new(&Prefilter::new([r"x?\d+"]));
        assert!(!g.passes_over(b"step 120"));
    }
}
