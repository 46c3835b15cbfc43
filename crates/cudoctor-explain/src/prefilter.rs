//! A cheap test that rules out most log lines before the regexes run.
//!
//! For every trigger pattern we derive, from its syntax tree, a set of literal strings of which
//! at least one must occur in any line the pattern matches (compared in ASCII lowercase). A line
//! containing none of them cannot match any pattern, so the regex set is skipped. This is exact
//! (never skips a line that would match): only literal runs the regex truly requires are used,
//! and a case-insensitive letter whose class also holds non-ASCII folds (k -> KELVIN SIGN,
//! s -> LONG S) ends a run instead of being guessed.

use regex_syntax::hir::{Class, Hir, HirKind};

/// Literals, lowercase, one of which a match must contain. `None`: nothing is required.
pub fn required_literals(pattern: &str) -> Option<Vec<String>> {
    let hir = regex_syntax::parse(pattern).ok()?;
    let set = required(&hir)?;
    let mut out: Vec<String> = set.into_iter().filter(|s| !s.is_empty()).collect();
    out.sort();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

fn required(hir: &Hir) -> Option<Vec<String>> {
    match hir.kind() {
        HirKind::Literal(lit) => Some(vec![String::from_utf8_lossy(&lit.0).to_ascii_lowercase()]),
        HirKind::Capture(c) => required(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => required(&r.sub),
        HirKind::Alternation(branches) => {
            let mut all = Vec::new();
            for b in branches {
                all.extend(required(b)?);
            }
            Some(all)
        }
        HirKind::Concat(children) => concat(children),
        HirKind::Class(_) => letter(hir).map(|c| vec![c.to_string()]),
        _ => None,
    }
}

/// The best required set of a concatenation: either a run of adjacent literal characters, or
/// the best set required by one child. "Best" = the one whose shortest literal is longest.
fn concat(children: &[Hir]) -> Option<Vec<String>> {
    let mut candidates: Vec<Vec<String>> = Vec::new();
    let mut run = String::new();
    for child in children {
        let piece = match child.kind() {
            HirKind::Literal(lit) => Some(String::from_utf8_lossy(&lit.0).to_ascii_lowercase()),
            HirKind::Class(_) => letter(child).map(|c| c.to_string()),
            _ => None,
        };
        match piece {
            Some(p) => run.push_str(&p),
            None => {
                if !run.is_empty() {
                    candidates.push(vec![std::mem::take(&mut run)]);
                }
                if let Some(set) = required(child) {
                    candidates.push(set);
                }
            }
        }
    }
    if !run.is_empty() {
        candidates.push(vec![run]);
    }
    candidates
        .into_iter()
        .max_by_key(|set| set.iter().map(String::len).min().unwrap_or(0))
}

/// A class that stands for one ASCII character up to ASCII case ([Cc], [x]) -> that lowercase char.
fn letter(hir: &Hir) -> Option<char> {
    let HirKind::Class(class) = hir.kind() else {
        return None;
    };
    let mut members: Vec<char> = Vec::new();
    match class {
        Class::Unicode(u) => {
            for r in u.ranges() {
                if (r.end() as u32) - (r.start() as u32) > 2 {
                    return None;
                }
                let mut c = r.start();
                loop {
                    members.push(c);
                    if c == r.end() {
                        break;
                    }
                    c = char::from_u32(c as u32 + 1)?;
                }
            }
        }
        Class::Bytes(b) => {
            for r in b.ranges() {
                for byte in r.start()..=r.end() {
                    members.push(byte as char);
                }
            }
        }
    }
    let first = *members.first()?;
    if !first.is_ascii() {
        return None;
    }
    let lower = first.to_ascii_lowercase();
    members
        .iter()
        .all(|c| c.is_ascii() && c.to_ascii_lowercase() == lower)
        .then_some(lower)
}

/// All literals of a database, with any literal that contains another one dropped
/// (if "nccl" is present, "nccl warn" adds nothing to the test).
///
/// The test runs on every log line, so it is one Aho-Corasick automaton over all literals,
/// ASCII case-insensitive, which scans a line in one pass (with SIMD prefilters where the set
/// allows) whatever the number of signatures.
#[derive(Debug, Clone, Default)]
pub struct Prefilter {
    literals: Vec<String>,
    automaton: Option<aho_corasick::AhoCorasick>,
    /// False when some pattern requires no literal: every line must then go to the regexes.
    usable: bool,
    /// Every pattern's own literals in one automaton, and for each of them the patterns
    /// (indices in the order given to [`Prefilter::new`]) that require it: a candidate line is
    /// matched against the few patterns whose literals it holds, not against all of them.
    by_pattern: Option<aho_corasick::AhoCorasick>,
    patterns_of: Vec<Vec<usize>>,
}

impl Prefilter {
    pub fn new<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Prefilter {
        let mut all = Vec::new();
        let mut own: Vec<String> = Vec::new();
        let mut patterns_of: Vec<Vec<usize>> = Vec::new();
        for (index, p) in patterns.into_iter().enumerate() {
            match required_literals(p) {
                Some(lits) => {
                    for lit in &lits {
                        let id = match own.iter().position(|o| o == lit) {
                            Some(id) => id,
                            None => {
                                own.push(lit.clone());
                                patterns_of.push(Vec::new());
                                own.len() - 1
                            }
                        };
                        if patterns_of[id].last() != Some(&index) {
                            patterns_of[id].push(index);
                        }
                    }
                    all.extend(lits);
                }
                None => return Prefilter::default(),
            }
        }
        all.sort_by_key(String::len);
        all.dedup();
        let mut kept: Vec<String> = Vec::new();
        for lit in all {
            if !kept.iter().any(|k| lit.contains(k.as_str())) {
                kept.push(lit);
            }
        }
        // A DFA: one table lookup per byte, the fastest kind for a set this size.
        let automaton = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(&kept)
            .ok();
        let by_pattern = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(aho_corasick::AhoCorasickKind::DFA))
            .build(&own)
            .ok();
        Prefilter {
            usable: automaton.is_some() && by_pattern.is_some(),
            literals: kept,
            automaton,
            by_pattern,
            patterns_of,
        }
    }

    /// The patterns `line` may match, in ascending order: those with a required literal in
    /// the line. `None` when the prefilter cannot tell (some pattern requires no literal).
    pub fn candidates(&self, line: &str) -> Option<Vec<usize>> {
        let ac = self.by_pattern.as_ref().filter(|_| self.usable)?;
        let mut found = vec![false; self.patterns_of.len()];
        let mut out = Vec::new();
        for m in ac.find_overlapping_iter(line) {
            let id = m.pattern().as_usize();
            if !std::mem::replace(&mut found[id], true) {
                out.extend_from_slice(&self.patterns_of[id]);
            }
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    /// Whether `line` may match some pattern (compared ASCII case-insensitively).
    pub fn may_match(&self, line: &str) -> bool {
        match (&self.automaton, self.usable) {
            (Some(ac), true) => ac.is_match(line),
            _ => true,
        }
    }

    /// Bytes of the longest literal (how far a literal can reach across a line break).
    pub fn longest_literal(&self) -> usize {
        self.literals.iter().map(String::len).max().unwrap_or(0)
    }

    /// Whether the prefilter can reject lines (every pattern requires a literal).
    pub fn is_usable(&self) -> bool {
        self.usable
    }

    pub fn literals(&self) -> &[String] {
        &self.literals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_required_runs() {
        assert_eq!(
            required_literals("abc(?:d|e)fgh").unwrap_or_default(),
            vec!["fgh"]
        );
        let got = required_literals("(?i)CUDA driver version is insufficient").unwrap_or_default();
        // 's' folds to LONG S under (?i), so runs break there; what remains is still required.
        assert!(
            got.iter()
                .all(|l| "cuda driver version is insufficient".contains(l.as_str())),
            "{got:?}"
        );
        assert!(got.iter().all(|l| l.len() >= 3), "{got:?}");
        assert_eq!(
            required_literals("a|bcd").unwrap_or_default(),
            vec!["a", "bcd"]
        );
        assert_eq!(required_literals(r"x?\d+"), None);
    }

    #[test]
    fn prefilter_is_a_superset_of_the_regex() {
        let pats = [
            "(?i)no kernel image is available",
            "NCCL WARN (?P<w>.+)",
            "undefined symbol: (?P<s>_ZN\\w+)",
        ];
        let pf = Prefilter::new(pats);
        for line in [
            "RuntimeError: CUDA error: NO KERNEL IMAGE is available",
            "x NCCL WARN boom",
            "a.so: undefined symbol: _ZN3c10",
        ] {
            assert!(pf.may_match(&line.to_ascii_lowercase()), "{line}");
        }
        assert!(!pf.may_match("epoch 3 step 100 loss 0.25"));
        // Each line is a candidate of its own pattern only.
        assert_eq!(
            pf.candidates("RuntimeError: CUDA error: NO KERNEL IMAGE is available"),
            Some(vec![0])
        );
        assert_eq!(pf.candidates("x NCCL WARN boom"), Some(vec![1]));
        assert_eq!(pf.candidates("epoch 3"), Some(vec![]));
        assert_eq!(
            pf.candidates("NCCL WARN a.so: undefined symbol: _ZN3c10"),
            Some(vec![1, 2])
        );
        assert_eq!(Prefilter::new([r"x?\d+"]).candidates("12"), None);
    }

    #[test]
    fn the_built_in_patterns_a_line_triggers_are_found_from_its_candidates_alone() {
        let engine = crate::builtin_engine().expect("built-in engine");
        let (db, pf) = (engine.signatures(), engine.prefilter());
        assert!(
            pf.candidates("x").is_some(),
            "the built-in prefilter is usable"
        );
        let mut triggering = 0;
        for text in [
            include_str!("../tests/corpus/public.toml"),
            include_str!("../tests/corpus/corpus.toml"),
            include_str!("../tests/corpus/independent.toml"),
            include_str!("../tests/corpus/device_observed.toml"),
        ] {
            for line in text.lines() {
                for l in [line.to_string(), line.to_ascii_uppercase()] {
                    let all = db.triggered(&l);
                    assert_eq!(db.triggered_with(&l, pf), all, "{l}");
                    triggering += usize::from(!all.is_empty());
                }
            }
        }
        assert!(triggering > 500, "{triggering} lines trigger a signature");
    }
}
