//! Accuracy on real error texts from public bug reports.
//!
//! Two files: `corpus/corpus.toml` (the first corpus, which the signatures were written from:
//! all development material) and `corpus/public.toml` (reports collected later, split once into
//! a development and a test half by source, with the seed recorded in the file). Signatures are
//! written from development cases only; the test half is measured, and its misses are not
//! printed, so that nobody tunes against them. A third file, `corpus/independent.toml`, was
//! collected after both and is held out from everything (no signature cites its threads); it is
//! measured the same way. The third and fourth files (`corpus/wave3.toml`, `corpus/wave4.toml`)
//! are split by repository, each with its own seed fixed before its cases were read: a tuning
//! half, whose misses are printed, and a test half, measured only. The fifth file
//! (`corpus/wave5.toml`) was held out entirely until its blind measurement (76.7 % on
//! 2026-12-05); since then it is tuning material as a whole, its misses printed like a tuning
//! half's, its floors kept as regressions. The sixth (`corpus/wave6.toml`) went the same way
//! after its blind measurement (72.4 % on 2026-12-05), and the seventh (`corpus/wave7.toml`)
//! after its own (64.7 % on 2026-12-05). The eighth (`corpus/wave8.toml`) is held out entirely:
//! measured blind on 2026-12-05, only its aggregate figures are printed and no case of it is
//! named by any test. The figures are recorded in docs/explain-corpus.md.

use cudoctor_explain::{explain_str, Category};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

const FIRST: &str = include_str!("corpus/corpus.toml");
const PUBLIC: &str = include_str!("corpus/public.toml");
const INDEPENDENT: &str = include_str!("corpus/independent.toml");
const WAVE3: &str = include_str!("corpus/wave3.toml");
const WAVE4: &str = include_str!("corpus/wave4.toml");
/// The fifth corpus: held out until measured blind on 2026-12-05 (docs/explain-corpus.md), tuning
/// material as a whole since.
const WAVE5: &str = include_str!("corpus/wave5.toml");
/// The sixth corpus: held out entirely like the fifth, gathered by a helper who never ran
/// cudoctor on it, measured blind on 2026-12-05 (docs/explain-corpus.md), tuning material as a
/// whole since.
const WAVE6: &str = include_str!("corpus/wave6.toml");
/// The seventh corpus: held out entirely, gathered by a helper who never ran cudoctor on it and
/// never read explain's reading code, measured blind on 2026-12-05 (docs/explain-corpus.md),
/// tuning material as a whole since.
const WAVE7: &str = include_str!("corpus/wave7.toml");
/// The eighth corpus: held out entirely, gathered after the seventh was measured by a helper who
/// never ran cudoctor on it and never read explain's reading code; only its form is checked until
/// it is measured blind.
const WAVE8: &str = include_str!("corpus/wave8.toml");
/// The ninth corpus: held out entirely, gathered after the eighth was measured by a helper who
/// never ran cudoctor on it and never read explain's reading code; only its form is checked until
/// it is measured blind.
const WAVE9: &str = include_str!("corpus/wave9.toml");
/// The tenth corpus: held out entirely, gathered after the ninth was measured by a helper who
/// never ran cudoctor on it and never read explain's reading code; only its form is checked until
/// it is measured blind.
const WAVE10: &str = include_str!("corpus/wave10.toml");
/// The eleventh corpus: held out entirely, gathered after the tenth was measured by a helper who
/// never ran cudoctor on it and never read explain's reading code; only its form is checked until
/// it is measured blind.
const WAVE11: &str = include_str!("corpus/wave11.toml");
/// The twelfth corpus: held out entirely, gathered after the eleventh was measured by a helper
/// who never ran cudoctor on it and never read explain's reading code; only its form is checked
/// until it is measured blind.
const WAVE12: &str = include_str!("corpus/wave12.toml");
/// The thirteenth corpus: held out entirely, gathered after the twelfth by a helper who never ran
/// cudoctor on it and never read explain's reading code; only its form is checked until it is
/// measured blind.
const WAVE13: &str = include_str!("corpus/wave13.toml");
/// The fourteenth corpus: held out entirely, gathered after the thirteenth by a helper who never
/// ran cudoctor on it and never read explain's reading code; only its form is checked until it is
/// measured blind.
const WAVE14: &str = include_str!("corpus/wave14.toml");
/// The fifteenth corpus: held out entirely, gathered after the fourteenth by a helper who never
/// ran cudoctor on it and never read explain's reading code; only its form is checked until it is
/// measured blind.
const WAVE15: &str = include_str!("corpus/wave15.toml");
const WAVE16: &str = include_str!("corpus/wave16.toml");
/// The seventeenth and eighteenth corpora (2026-12-05, seventh session): held out like the
/// fifteenth and sixteenth.
const WAVE17: &str = include_str!("corpus/wave17.toml");
const WAVE18: &str = include_str!("corpus/wave18.toml");
const WAVE19: &str = include_str!("corpus/wave19.toml");
const WAVE20: &str = include_str!("corpus/wave20.toml");
/// The twenty-first and twenty-second corpora (2026-12-06, ninth session): held out like the
/// eighteenth to twentieth.
const WAVE21: &str = include_str!("corpus/wave21.toml");
const WAVE22: &str = include_str!("corpus/wave22.toml");
/// The twenty-third and twenty-fourth corpora (2026-12-06, tenth session): held out like the
/// eighteenth to twenty-second.
const WAVE23: &str = include_str!("corpus/wave23.toml");
const WAVE24: &str = include_str!("corpus/wave24.toml");
/// The twenty-fifth and twenty-sixth corpora (2026-12-06, eleventh session): held out like the
/// twenty-third and twenty-fourth.
const WAVE25: &str = include_str!("corpus/wave25.toml");
const WAVE26: &str = include_str!("corpus/wave26.toml");
/// The fourth corpus's split: FNV-1a-64 of `"36:<owner>/<repo>"`, even = tuning. Fixed before
/// any of its cases was read (docs/explain-corpus.md).
const WAVE4_SEED: u64 = 36;
/// The third corpus's test half: at most this share answered "unknown".
///
/// The third corpus's floors are what explain reaches today (docs/explain-corpus.md), below the
/// 90 % / 5 % / no-false-alarm goal it is measured against: they catch a regression, and the
/// document says how far the goal still is.
const MAX_WAVE3_UNKNOWN: f64 = 0.084;
/// The third corpus's test half: at least this share right (raised by the eighth session on the
/// reading to the 270/331 it measured there, which it never read).
const MIN_WAVE3_ACCURACY: f64 = 0.815;
/// Negatives of the third corpus (both halves) given an environment cause, at most (2 after the
/// eighth session on the reading).
const MAX_WAVE3_FALSE_ALARMS: u32 = 2;
/// The fourth corpus's floors: the figures measured blind when it was gathered
/// (docs/explain-corpus.md), so that a regression fails; the goal stays 90 % right, at most 5 %
/// unknown and no false alarm.
/// Measured 2026-12-04 on the code of main at 363b006: tuning half 158/203, test half 173/254,
/// test half unknown 35/212, false alarms 5 + 10; raised the same night to what explain's
/// reading then reached (tuning half 163/203, test half 176/254, unknown 32/212); raised on
/// 2026-12-05 to what the fourth reading session reached (tuning half 184/203, test half
/// 194/254, unknown 25/212, false alarms 1 + 8), and by the eighth session on the reading
/// (tuning half 188/203, test half 198/254 and unknown 22/212 measured only, false alarms 1 + 7).
const MIN_WAVE4_TUNE_ACCURACY: f64 = 0.926;
const MIN_WAVE4_TEST_ACCURACY: f64 = 0.779;
const MAX_WAVE4_TEST_UNKNOWN: f64 = 0.104;
const MAX_WAVE4_FALSE_ALARMS: u32 = 8;
/// The fifth corpus: measured blind at 9222e18 before the session's reading work (270/361,
/// unknown 40/310, false alarms 8 of 51) and after it (277/361, unknown 39/310, false alarms 7
/// of 51), when it was still held out; tuning material since, these floors are regressions.
/// Raised on 2026-12-05 to what the fifth reading session reached, tuned on it (331/361,
/// unknown 9/310, false alarms 5 of 51), and again to what the sixth session reached (334/361,
/// unknown 7/310, false alarms 5 of 51), and to what the eighth reached (340/361, unknown
/// 5/310, false alarms 1 of 51).
const MIN_WAVE5_ACCURACY: f64 = 0.941;
const MAX_WAVE5_UNKNOWN: f64 = 0.0162;
const MAX_WAVE5_FALSE_ALARMS: u32 = 1;
/// The sixth corpus's first blind measurement (2026-12-05, after the fifth's reading work was
/// merged: 113/156, unknown 19/129, false alarms 9 of 27), kept as floors; tuning material
/// since, these floors are regressions. Raised on 2026-12-05 to what the fifth reading session
/// reached, tuned on it (132/156, unknown 12/129, false alarms 5 of 27: not a blind figure), and
/// again to what the sixth session reached (135/156, unknown 10/129, false alarms 5 of 27), and
/// to what the eighth reached (139/156, unknown 8/129, false alarms 3 of 27).
const MIN_WAVE6_ACCURACY: f64 = 0.891;
const MAX_WAVE6_UNKNOWN: f64 = 0.063;
const MAX_WAVE6_FALSE_ALARMS: u32 = 3;
const MIN_OVERALL_ACCURACY: f64 = 0.90;
const MIN_CATEGORY_ACCURACY: f64 = 0.80;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FirstCorpus {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PublicCorpus {
    split_seed: u64,
    #[serde(default)]
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    id: String,
    source: String,
    #[serde(default)]
    half: Option<String>,
    established: String,
    expected: String,
    text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Half {
    Dev,
    Test,
    /// `independent.toml`: collected after the signatures were written, never tuned against.
    Independent,
    /// `wave3.toml`, split by repository: the half the clause lexicon may be tuned on.
    Wave3Tune,
    /// `wave3.toml`'s other half: only measured, its misses never printed.
    Wave3Test,
    /// `wave4.toml`, split by repository with its own seed: the half that may be tuned on.
    Wave4Tune,
    /// `wave4.toml`'s other half: measured blind, its misses never printed, its false alarms
    /// counted, not named.
    Wave4Test,
    /// `wave5.toml` as a whole: held out until measured blind, tuning material since.
    Wave5,
    /// `wave6.toml` as a whole: held out until measured blind, tuning material since.
    Wave6,
    /// `wave7.toml` as a whole: held out until measured blind, tuning material since.
    Wave7,
}

fn first() -> Vec<Case> {
    match toml::from_str::<FirstCorpus>(FIRST) {
        Ok(c) => c.case,
        Err(e) => panic!("corpus.toml does not parse: {e}"),
    }
}

fn independent() -> Vec<Case> {
    match toml::from_str::<FirstCorpus>(INDEPENDENT) {
        Ok(c) => c.case,
        Err(e) => panic!("independent.toml does not parse: {e}"),
    }
}

fn wave3() -> PublicCorpus {
    match toml::from_str::<PublicCorpus>(WAVE3) {
        Ok(c) => c,
        Err(e) => panic!("wave3.toml does not parse: {e}"),
    }
}

/// The repository a thread belongs to ("owner/repo"; the host and first path part elsewhere):
/// the third corpus is split by repository, so one project's wording never informs the
/// lexicon and measures it at once.
fn repository_of(source: &str) -> String {
    let rest = source
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["github.com", owner, repo, ..] => {
            format!("{}/{}", owner.to_lowercase(), repo.to_lowercase())
        }
        [host, first, ..] => format!("{host}/{first}"),
        [host] => (*host).to_string(),
        [] => String::new(),
    }
}

fn wave3_half(seed: u64, source: &str) -> Half {
    match half_of(seed, &repository_of(source)) {
        Half::Dev => Half::Wave3Tune,
        _ => Half::Wave3Test,
    }
}

fn wave4() -> PublicCorpus {
    match toml::from_str::<PublicCorpus>(WAVE4) {
        Ok(c) => c,
        Err(e) => panic!("wave4.toml does not parse: {e}"),
    }
}

/// The corpora gathered as wholes after the fourth (no halves), in the order they were
/// gathered: their number, file, text, and whether each case carries a `# meta:` line.
const WHOLES: [(u8, &str, &str, bool); 22] = [
    (5, "wave5.toml", WAVE5, false),
    (6, "wave6.toml", WAVE6, true),
    (7, "wave7.toml", WAVE7, true),
    (8, "wave8.toml", WAVE8, true),
    (9, "wave9.toml", WAVE9, true),
    (10, "wave10.toml", WAVE10, true),
    (11, "wave11.toml", WAVE11, true),
    (12, "wave12.toml", WAVE12, true),
    (13, "wave13.toml", WAVE13, true),
    (14, "wave14.toml", WAVE14, true),
    (15, "wave15.toml", WAVE15, true),
    (16, "wave16.toml", WAVE16, true),
    (17, "wave17.toml", WAVE17, true),
    (18, "wave18.toml", WAVE18, true),
    (19, "wave19.toml", WAVE19, true),
    (20, "wave20.toml", WAVE20, true),
    (21, "wave21.toml", WAVE21, true),
    (22, "wave22.toml", WAVE22, true),
    (23, "wave23.toml", WAVE23, true),
    (24, "wave24.toml", WAVE24, true),
    (25, "wave25.toml", WAVE25, true),
    (26, "wave26.toml", WAVE26, true),
];

/// The entry of [`WHOLES`] of the `n`th corpus.
fn whole_entry(n: u8) -> (u8, &'static str, &'static str, bool) {
    match WHOLES.iter().find(|w| w.0 == n) {
        Some(w) => *w,
        None => panic!("no corpus wave{n}"),
    }
}

/// The cases of the `n`th corpus, one of [`WHOLES`].
fn whole(n: u8) -> Vec<Case> {
    let (_, file, text, _) = whole_entry(n);
    match toml::from_str::<FirstCorpus>(text) {
        Ok(c) => c.case,
        Err(e) => panic!("{file} does not parse: {e}"),
    }
}

fn wave4_half(seed: u64, source: &str) -> Half {
    match half_of(seed, &repository_of(source)) {
        Half::Dev => Half::Wave4Tune,
        _ => Half::Wave4Test,
    }
}

fn public() -> PublicCorpus {
    match toml::from_str::<PublicCorpus>(PUBLIC) {
        Ok(c) => c,
        Err(e) => panic!("public.toml does not parse: {e}"),
    }
}

/// FNV-1a, 64 bits: a fixed, dependency-free hash for the split.
fn fnv1a64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The half a source belongs to: every case of one thread lands in the same half.
fn half_of(seed: u64, source: &str) -> Half {
    match fnv1a64(format!("{seed}:{source}").as_bytes()) & 1 {
        0 => Half::Dev,
        _ => Half::Test,
    }
}

/// Every case with its half (the first corpus is all development material).
fn all_cases() -> Vec<(Half, Case)> {
    let p = public();
    let mut out: Vec<(Half, Case)> = first().into_iter().map(|c| (Half::Dev, c)).collect();
    for c in p.case {
        let h = half_of(p.split_seed, &c.source);
        out.push((h, c));
    }
    out.extend(independent().into_iter().map(|c| (Half::Independent, c)));
    let w = wave3();
    for c in w.case {
        let h = wave3_half(w.split_seed, &c.source);
        out.push((h, c));
    }
    let w4 = wave4();
    assert_eq!(w4.split_seed, WAVE4_SEED, "wave4.toml's seed is fixed");
    for c in w4.case {
        let h = wave4_half(w4.split_seed, &c.source);
        out.push((h, c));
    }
    out.extend(whole(5).into_iter().map(|c| (Half::Wave5, c)));
    out.extend(whole(6).into_iter().map(|c| (Half::Wave6, c)));
    out.extend(whole(7).into_iter().map(|c| (Half::Wave7, c)));
    out
}

fn is_negative(c: &Case) -> bool {
    c.expected == Category::NotEnvironment.as_str()
}

/// A negative is answered right by "not an environment problem" or by no diagnosis at all.
fn correct(c: &Case, got: Category) -> bool {
    if is_negative(c) {
        matches!(got, Category::NotEnvironment | Category::Unknown)
    } else {
        got.as_str() == c.expected
    }
}

#[test]
fn corpus_is_well_formed_split_as_recorded_and_large_enough() {
    let p = public();
    let mut ids = BTreeSet::new();
    for (h, c) in all_cases() {
        assert!(ids.insert(c.id.clone()), "duplicate id {}", c.id);
        assert!(
            c.source.starts_with("https://"),
            "{}: source must be a public thread",
            c.id
        );
        assert!(
            !c.established.trim().is_empty(),
            "{}: say what the thread established",
            c.id
        );
        assert!(!c.text.trim().is_empty(), "{}: empty text", c.id);
        // "unknown" (no cause can be named from the text) is a valid answer in the first corpus.
        assert!(
            Category::parse(&c.expected)
                .is_some_and(|cat| cat != Category::Unknown || c.half.is_none()),
            "{}: unknown category {}",
            c.id,
            c.expected
        );
        if let Some(recorded) = &c.half {
            let want = match h {
                Half::Dev => "dev",
                Half::Test => "test",
                Half::Independent => "independent",
                Half::Wave3Tune | Half::Wave3Test => "wave3",
                Half::Wave4Tune | Half::Wave4Test => "wave4",
                Half::Wave5 => "wave5",
                Half::Wave6 => "wave6",
                Half::Wave7 => "wave7",
            };
            assert_eq!(
                recorded, want,
                "{}: recorded half differs from the seeded split",
                c.id
            );
        }
    }
    for c in &p.case {
        assert!(c.half.is_some(), "{}: public cases record their half", c.id);
    }
    let public_sources: BTreeSet<&str> = p.case.iter().map(|c| c.source.as_str()).collect();
    // One source, one half: a thread cannot inform signatures and measure them at once.
    let mut by_source: BTreeMap<&str, BTreeSet<Half>> = BTreeMap::new();
    for c in &p.case {
        by_source
            .entry(c.source.as_str())
            .or_default()
            .insert(half_of(p.split_seed, &c.source));
    }
    assert!(by_source.values().all(|h| h.len() == 1));

    // No test-half thread may be one the signatures were written from, nor repeat the first
    // corpus (which is all development material).
    let db = cudoctor_explain::signatures::builtin().unwrap_or_else(|e| panic!("{e}"));
    let cited: BTreeSet<&str> = db
        .signatures
        .iter()
        .flat_map(|s| s.sources.iter().map(String::as_str))
        .collect();
    let first_sources: BTreeSet<String> = first().into_iter().map(|c| c.source).collect();
    for c in &p.case {
        assert!(
            !first_sources.contains(&c.source),
            "{}: already in corpus.toml",
            c.id
        );
        if half_of(p.split_seed, &c.source) == Half::Test {
            assert!(
                !cited.contains(c.source.as_str()),
                "{}: a test-half thread is cited by a signature",
                c.id
            );
        }
    }

    // The independent set is held out from everything: no signature cites its threads and no
    // other corpus holds them.
    for c in independent() {
        assert!(
            c.half.is_none(),
            "{}: the independent set has no halves",
            c.id
        );
        assert_ne!(c.expected, "unknown", "{}: name a cause", c.id);
        assert!(
            !cited.contains(c.source.as_str())
                && !first_sources.contains(&c.source)
                && !public_sources.contains(c.source.as_str()),
            "{}: {} is not independent of the signatures' material",
            c.id,
            c.source
        );
    }

    // The fourth corpus is new material: no thread of it is in another corpus file or cited by
    // a signature, and one thread is one case.
    let mut earlier: BTreeSet<String> = first_sources.clone();
    earlier.extend(public_sources.iter().map(|s| s.to_string()));
    earlier.extend(independent().into_iter().map(|c| c.source));
    earlier.extend(wave3().case.into_iter().map(|c| c.source));
    earlier.extend(
        toml::from_str::<toml::Value>(include_str!("corpus/device_observed.toml"))
            .ok()
            .and_then(|v| v.get("case").and_then(|c| c.as_array()).cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|c| c.get("source").and_then(|s| s.as_str()).map(str::to_string)),
    );
    let address = |s: &str| s.trim_end_matches('/').to_lowercase();
    let earlier: BTreeSet<String> = earlier.iter().map(|s| address(s)).collect();
    let mut wave4_sources = BTreeSet::new();
    for c in wave4().case {
        assert!(
            c.half.is_none(),
            "{}: the split is computed, not recorded",
            c.id
        );
        assert_ne!(
            c.expected, "unknown",
            "{}: name the cause the thread established",
            c.id
        );
        assert!(
            !earlier.contains(&address(&c.source)) && !cited.contains(c.source.as_str()),
            "{}: {} is already in another corpus or cited by a signature",
            c.id,
            c.source
        );
        assert!(
            wave4_sources.insert(address(&c.source)),
            "{}: {} twice in wave4.toml",
            c.id,
            c.source
        );
    }

    let cases = all_cases();
    assert!(cases.len() >= 200, "only {} real reports", cases.len());
    let negatives = cases.iter().filter(|(_, c)| is_negative(c)).count();
    assert!(negatives >= 20, "only {negatives} negatives");
    for cat in Category::ALL {
        if cat == Category::Unknown {
            continue;
        }
        let n = cases
            .iter()
            .filter(|(_, c)| c.expected == cat.as_str())
            .count();
        assert!(n >= 10, "only {n} cases for {cat}");
    }
}

struct Tally {
    per: BTreeMap<(Half, String), (u32, u32)>,
    wave3_test_unknown: u32,
    wave3_test_cases: u32,
    /// Negatives of the third corpus given an environment cause (both halves).
    wave3_false_alarms: u32,
    wave4_test_unknown: u32,
    wave4_test_cases: u32,
    wave4_tune_unknown: u32,
    wave4_tune_cases: u32,
    /// Negatives of the fourth corpus given an environment cause, per half (counted, not named).
    wave4_false_alarms: (u32, u32),
    false_alarms: Vec<String>,
    dev_misses: Vec<String>,
    /// The fourth corpus's tuning-half misses (its test half's are never listed).
    wave4_tune_misses: Vec<String>,
    /// The corpora tuned on as a whole after their blind measurement (the fifth to seventh).
    wholes: BTreeMap<Half, Whole>,
}

/// What a corpus tuned on as a whole counts besides its per-category figures.
#[derive(Default)]
struct Whole {
    unknown: u32,
    positives: u32,
    negatives: u32,
    false_alarms: u32,
    misses: Vec<String>,
}

/// Whether `h` is a corpus tuned on as a whole (no halves).
fn is_whole(h: Half) -> bool {
    matches!(h, Half::Wave5 | Half::Wave6 | Half::Wave7)
}

fn tally() -> Tally {
    let mut t = Tally {
        per: BTreeMap::new(),
        wave3_test_unknown: 0,
        wave3_test_cases: 0,
        wave3_false_alarms: 0,
        wave4_test_unknown: 0,
        wave4_test_cases: 0,
        wave4_tune_unknown: 0,
        wave4_tune_cases: 0,
        wave4_false_alarms: (0, 0),
        false_alarms: Vec::new(),
        dev_misses: Vec::new(),
        wave4_tune_misses: Vec::new(),
        wholes: BTreeMap::new(),
    };
    for (h, c) in all_cases() {
        let e = explain_str(&c.text);
        let ok = correct(&c, e.category);
        if h == Half::Wave3Test && !is_negative(&c) {
            t.wave3_test_cases += 1;
            t.wave3_test_unknown += u32::from(e.category == Category::Unknown);
        }
        if h == Half::Wave4Test && !is_negative(&c) {
            t.wave4_test_cases += 1;
            t.wave4_test_unknown += u32::from(e.category == Category::Unknown);
        }
        if h == Half::Wave4Tune && !is_negative(&c) {
            t.wave4_tune_cases += 1;
            t.wave4_tune_unknown += u32::from(e.category == Category::Unknown);
        }
        if is_whole(h) {
            let w = t.wholes.entry(h).or_default();
            if is_negative(&c) {
                w.negatives += 1;
                w.false_alarms += u32::from(!ok);
            } else {
                w.positives += 1;
                w.unknown += u32::from(e.category == Category::Unknown);
            }
        }
        let entry = t.per.entry((h, c.expected.clone())).or_default();
        entry.1 += 1;
        if ok {
            entry.0 += 1;
        } else {
            if is_negative(&c) && matches!(h, Half::Wave3Tune | Half::Wave3Test) {
                t.wave3_false_alarms += 1;
            } else if is_negative(&c) && h == Half::Wave4Tune {
                t.wave4_false_alarms.0 += 1;
            } else if is_negative(&c) && h == Half::Wave4Test {
                t.wave4_false_alarms.1 += 1;
            } else if is_negative(&c) && is_whole(h) {
                // Counted with the corpus's other figures above.
            } else if is_negative(&c) {
                // A test half's cases are never named, only counted.
                t.false_alarms.push(match h {
                    Half::Test | Half::Independent | Half::Wave3Test => {
                        format!("one in the {h:?} half")
                    }
                    _ => format!("{} ({h:?} half)", c.id),
                });
            }
            let line = format!(
                "  {} expected {} got {} ({:?})",
                c.id, c.expected, e.category, e.signature
            );
            match h {
                Half::Wave4Tune => {
                    t.wave4_tune_misses.push(line.clone());
                    t.dev_misses.push(line);
                }
                Half::Dev | Half::Wave3Tune => t.dev_misses.push(line),
                Half::Wave5 | Half::Wave6 | Half::Wave7 => {
                    t.wholes.entry(h).or_default().misses.push(line)
                }
                _ => {}
            }
        }
    }
    t
}

fn report(t: &Tally, half: Half) -> (f64, Vec<(String, f64, u32)>) {
    println!("{half:?} half:");
    println!("{:<26} {:>7} {:>9}", "category", "correct", "accuracy");
    let (mut ok, mut total) = (0u32, 0u32);
    let mut cats = Vec::new();
    for ((h, cat), (good, all)) in &t.per {
        if *h != half {
            continue;
        }
        ok += good;
        total += all;
        let acc = f64::from(*good) / f64::from(*all);
        println!("{cat:<26} {good:>3}/{all:<3} {:>8.1}%", 100.0 * acc);
        cats.push((cat.clone(), acc, *all));
    }
    let overall = f64::from(ok) / f64::from(total.max(1));
    println!(
        "{:<26} {ok:>3}/{total:<3} {:>8.1}%",
        "overall",
        100.0 * overall
    );
    (overall, cats)
}

#[test]
fn corpus_accuracy_on_the_test_half() {
    let t = tally();
    let (dev, _) = report(&t, Half::Dev);
    if !t.dev_misses.is_empty() {
        println!("development misses:\n{}", t.dev_misses.join("\n"));
    }
    let (overall, cats) = report(&t, Half::Test);
    let (independent, _) = report(&t, Half::Independent);
    let (_, _) = report(&t, Half::Wave3Tune);
    let (wave3, _) = report(&t, Half::Wave3Test);
    let wave3_unknown = t.wave3_test_unknown as f64 / f64::from(t.wave3_test_cases.max(1));
    println!(
        "wave3 test half answered unknown: {:.1}%",
        100.0 * wave3_unknown
    );
    assert!(
        t.false_alarms.is_empty(),
        "false alarms on negatives: {:?}",
        t.false_alarms
    );
    assert!(dev >= MIN_OVERALL_ACCURACY, "development half at {dev:.3}");
    assert!(
        overall >= MIN_OVERALL_ACCURACY,
        "test-half accuracy {:.1}% is below {:.0}%",
        100.0 * overall,
        100.0 * MIN_OVERALL_ACCURACY
    );
    assert!(
        independent >= MIN_OVERALL_ACCURACY,
        "accuracy on the independent set {:.1}% is below {:.0}%",
        100.0 * independent,
        100.0 * MIN_OVERALL_ACCURACY
    );
    println!(
        "wave3 false alarms on negatives (both halves): {}",
        t.wave3_false_alarms
    );
    assert!(
        wave3 >= MIN_WAVE3_ACCURACY,
        "accuracy on the third corpus's test half {:.1}% is below {:.0}%",
        100.0 * wave3,
        100.0 * MIN_WAVE3_ACCURACY
    );
    assert!(
        t.wave3_false_alarms <= MAX_WAVE3_FALSE_ALARMS,
        "{} false alarms on the third corpus's negatives",
        t.wave3_false_alarms
    );
    assert!(
        wave3_unknown <= MAX_WAVE3_UNKNOWN,
        "the third corpus's test half answered unknown for {:.1}%",
        100.0 * wave3_unknown
    );
    for (cat, acc, n) in cats {
        assert!(
            acc >= MIN_CATEGORY_ACCURACY,
            "test-half accuracy for {cat} is {:.1}% (of {n})",
            100.0 * acc
        );
    }
}

/// The fourth corpus, both halves: per-category figures for each, the unknown rate, and the false
/// alarms on its negatives (counted per half, never named). Misses are printed for the tuning half
/// only (by `corpus_accuracy_on_the_test_half` and `tuning_half_misses_in_full`).
#[test]
fn wave4_accuracy_by_half() {
    let t = tally();
    let (tune, _) = report(&t, Half::Wave4Tune);
    if !t.wave4_tune_misses.is_empty() {
        println!("tuning-half misses:\n{}", t.wave4_tune_misses.join("\n"));
    }
    let (test, _) = report(&t, Half::Wave4Test);
    let rate = |n: u32, of: u32| f64::from(n) / f64::from(of.max(1));
    let tune_unknown = rate(t.wave4_tune_unknown, t.wave4_tune_cases);
    let test_unknown = rate(t.wave4_test_unknown, t.wave4_test_cases);
    println!(
        "wave4 answered unknown: tuning half {:.1}%, test half {:.1}%",
        100.0 * tune_unknown,
        100.0 * test_unknown
    );
    println!(
        "wave4 false alarms on negatives: tuning half {}, test half {}",
        t.wave4_false_alarms.0, t.wave4_false_alarms.1
    );
    assert!(
        tune >= MIN_WAVE4_TUNE_ACCURACY,
        "the fourth corpus's tuning half at {:.1}%",
        100.0 * tune
    );
    assert!(
        test >= MIN_WAVE4_TEST_ACCURACY,
        "the fourth corpus's test half at {:.1}%",
        100.0 * test
    );
    assert!(
        test_unknown <= MAX_WAVE4_TEST_UNKNOWN,
        "the fourth corpus's test half answered unknown for {:.1}%",
        100.0 * test_unknown
    );
    assert!(
        t.wave4_false_alarms.0 + t.wave4_false_alarms.1 <= MAX_WAVE4_FALSE_ALARMS,
        "{} false alarms on the fourth corpus's negatives",
        t.wave4_false_alarms.0 + t.wave4_false_alarms.1
    );
}

#[test]
fn every_known_answer_names_lines_and_fixes() {
    for (_, c) in all_cases() {
        let e = explain_str(&c.text);
        if e.is_known() {
            assert!(!e.matched.is_empty(), "{}: no matched line", c.id);
            assert!(!e.fix.is_empty(), "{}: no fix", c.id);
            // "unknown" is what an unfilled field renders as, unless the log itself says it.
            assert!(
                !e.cause.contains("unknown") || c.text.contains("unknown"),
                "{}: cause has an unfilled field: {}",
                c.id,
                e.cause
            );
        }
    }
}

/// Fixes are typed: a package command is a shell step (parsing as shell) written by the one
/// install writer, for the environment explain was pointed at (here a uv-made venv), else for
/// the `python` on PATH through its own pip; prose names no installer command of its own.
#[test]
fn every_fix_of_the_corpus_is_a_command_for_the_env_or_prose() {
    use cudoctor_explain::signatures::BUILTIN_TOML;
    use cudoctor_explain::{Engine, SignatureDb};
    use cudoctor_plan::{FixStep, Installer, TargetEnv};
    let db = || SignatureDb::from_toml(BUILTIN_TOML).expect("built-in signatures");
    let generic = Engine::new(db()).expect("engine");
    let uv_env = TargetEnv::at("/opt/my env", Installer::Uv);
    let for_uv = Engine::new(db()).expect("engine").for_env(Some(uv_env));
    let mut commands = 0;
    for (_, c) in all_cases() {
        for (engine, head) in [
            (&generic, "python -m pip install "),
            (&for_uv, "uv pip install --python '/opt/my env/bin/python' "),
        ] {
            let e = engine.explain(c.text.as_bytes());
            for f in &e.fix {
                match f {
                    FixStep::Shell(cmd) => {
                        commands += 1;
                        assert!(cmd.starts_with(head), "{}: {cmd}", c.id);
                        cudoctor_testkit::shell_parses(cmd);
                    }
                    // A Windows log's fixes are PowerShell commands for its own Python (or
                    // the python on PATH), and a torch install names PyTorch's index.
                    FixStep::PowerShell(cmd) => {
                        commands += 1;
                        assert!(
                            e.category == Category::WindowsDll || c.text.contains(":\\"),
                            "{}: a PowerShell fix for a log that is not Windows': {cmd}",
                            c.id
                        );
                        assert!(
                            cmd.starts_with("& ") && cmd.contains(" -m pip install "),
                            "{}: {cmd}",
                            c.id
                        );
                        assert!(
                            !cmd.contains(" torch") || cmd.contains("--index-url"),
                            "{}: torch from PyPI on Windows: {cmd}",
                            c.id
                        );
                    }
                    FixStep::Prose(p) => {
                        assert!(
                            !p.contains("pip install") && !p.contains("pip uninstall"),
                            "{}: a package command inside prose: {p}",
                            c.id
                        );
                    }
                }
            }
        }
    }
    assert!(commands > 0, "no corpus case has an install command");
}

/// The tuning half's misses in full (text, what the thread established, the line explain read):
/// `cargo test -p cudoctor-explain --test corpus -- --ignored --nocapture tuning_half_misses`.
/// Only the tuning half: the test half's cases are never printed.
#[test]
#[ignore = "prints the tuning half's misses for study; not a check"]
fn tuning_half_misses_in_full() {
    let filter = std::env::var("CORPUS_MISS_FILTER").unwrap_or_default();
    // CORPUS_SHOW_EXPECTED=<category>: every tuning case of that expected category, right or not.
    let expected = std::env::var("CORPUS_SHOW_EXPECTED").unwrap_or_default();
    for (h, c) in all_cases() {
        if !matches!(
            h,
            Half::Wave3Tune | Half::Wave4Tune | Half::Wave5 | Half::Wave6 | Half::Wave7
        ) {
            continue;
        }
        let e = explain_str(&c.text);
        let shown = if expected.is_empty() {
            !correct(&c, e.category)
        } else if expected == "all" {
            true
        } else {
            c.expected == expected
        };
        if !shown || !(filter.is_empty() || c.id.contains(&filter)) {
            continue;
        }
        println!(
            "=== {} expected {} got {} ({:?})\n  established: {}\n  read: {:?}\n--- text\n{}\n",
            c.id,
            c.expected,
            e.category,
            e.signature,
            c.established,
            e.matched
                .first()
                .map(|m| (m.line_no, m.signature.as_str(), m.text.as_str())),
            c.text.chars().take(2500).collect::<String>()
        );
    }
}

/// A thread's address as the held-out checks compare it.
fn address(s: &str) -> String {
    s.trim_end_matches('/').to_lowercase()
}

/// Every thread the corpus files before the fifth hold (the device observations included) or a
/// signature cites.
fn sources_before_wave5() -> BTreeSet<String> {
    let mut earlier: BTreeSet<String> = BTreeSet::new();
    earlier.extend(first().into_iter().map(|c| address(&c.source)));
    earlier.extend(public().case.into_iter().map(|c| address(&c.source)));
    earlier.extend(independent().into_iter().map(|c| address(&c.source)));
    earlier.extend(wave3().case.into_iter().map(|c| address(&c.source)));
    earlier.extend(wave4().case.into_iter().map(|c| address(&c.source)));
    earlier.extend(
        toml::from_str::<toml::Value>(include_str!("corpus/device_observed.toml"))
            .ok()
            .and_then(|v| v.get("case").and_then(|c| c.as_array()).cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|c| c.get("source").and_then(|s| s.as_str()).map(address)),
    );
    let db = cudoctor_explain::signatures::builtin().unwrap_or_else(|e| panic!("{e}"));
    earlier.extend(
        db.signatures
            .iter()
            .flat_map(|s| s.sources.iter().map(|x| address(x))),
    );
    earlier
}

/// Checks a held-out corpus file's form: ids unique (also against `earlier_ids`), no halves, a
/// public source per case, unique in the file and not in `earlier`, what the thread established,
/// a text, a known category (never "unknown"), at least `min_cases` cases and some negatives.
/// With `meta` (the file's text), one `# meta: YYYY-MM framework lang` line per case, whose counts
/// it prints with the categories'. Runs no explain: it never prints a figure of accuracy.
fn assert_held_out_form(
    file: &str,
    cases: &[Case],
    earlier: &BTreeSet<String>,
    earlier_ids: &BTreeSet<String>,
    min_cases: usize,
    meta: Option<&str>,
) {
    let (mut ids, mut sources) = (BTreeSet::new(), BTreeSet::new());
    let mut per_category: BTreeMap<String, u32> = BTreeMap::new();
    for c in cases {
        assert!(ids.insert(c.id.clone()), "duplicate id {} in {file}", c.id);
        assert!(
            !earlier_ids.contains(&c.id),
            "{}: id already used by another corpus file",
            c.id
        );
        assert!(c.half.is_none(), "{}: {file} has no halves", c.id);
        assert!(
            c.source.starts_with("https://"),
            "{}: source must be a public thread",
            c.id
        );
        assert!(
            !c.established.trim().is_empty(),
            "{}: say what the thread established",
            c.id
        );
        assert!(!c.text.trim().is_empty(), "{}: empty text", c.id);
        assert!(
            Category::parse(&c.expected).is_some_and(|cat| cat != Category::Unknown),
            "{}: unknown category {}",
            c.id,
            c.expected
        );
        assert!(
            !earlier.contains(&address(&c.source)),
            "{}: {} is already in another corpus or cited by a signature",
            c.id,
            c.source
        );
        assert!(
            sources.insert(address(&c.source)),
            "{}: {} twice in {file}",
            c.id,
            c.source
        );
        *per_category.entry(c.expected.clone()).or_default() += 1;
    }
    assert!(
        cases.len() >= min_cases,
        "only {} cases in {file}",
        cases.len()
    );
    assert!(cases.iter().any(is_negative), "{file} holds negatives");
    let Some(text) = meta else {
        return;
    };
    // "# meta: YYYY-MM framework lang" above each case.
    let metas: Vec<Vec<&str>> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# meta: "))
        .map(|m| m.split_whitespace().collect())
        .collect();
    assert_eq!(metas.len(), cases.len(), "one # meta: line per case");
    let (mut per_language, mut per_year): (BTreeMap<&str, u32>, BTreeMap<&str, u32>) =
        (BTreeMap::new(), BTreeMap::new());
    for m in &metas {
        assert!(
            m.len() == 3 && m[0].len() == 7 && m[0].as_bytes()[4] == b'-',
            "a # meta: line is `YYYY-MM framework lang`: {m:?}"
        );
        *per_language.entry(m[2]).or_default() += 1;
        *per_year.entry(&m[0][..4]).or_default() += 1;
    }
    println!("{file}: {} cases", cases.len());
    println!("by category: {per_category:?}");
    println!("by language: {per_language:?}");
    println!("by year: {per_year:?}");
}

/// The `n`th corpus (one of [`WHOLES`]) is well formed and new ([`assert_held_out_form`]):
/// its ids against every corpus file split into halves and every whole gathered before it,
/// its threads against those, the device observations and the signatures' citations.
fn assert_whole_is_new(n: u8, min_cases: usize) {
    let mut sources = sources_before_wave5();
    let mut ids: BTreeSet<String> = all_cases()
        .into_iter()
        .filter(|(h, _)| !is_whole(*h))
        .map(|(_, c)| c.id)
        .collect();
    for &(m, ..) in WHOLES.iter().filter(|w| w.0 < n) {
        for c in whole(m) {
            sources.insert(address(&c.source));
            ids.insert(c.id);
        }
    }
    let (_, file, text, meta) = whole_entry(n);
    assert_held_out_form(
        file,
        &whole(n),
        &sources,
        &ids,
        min_cases,
        meta.then_some(text),
    );
}

/// The fifth corpus is well formed and new: known categories (never "unknown"), unique ids, one
/// case per thread, and no thread that another corpus file holds or a signature cites. Runs no
/// explain, so it prints no figure.
#[test]
fn wave5_is_well_formed_and_held_out() {
    assert_whole_is_new(5, 350);
}

/// A corpus tuned on as a whole after its blind measurement: prints its per-category figures,
/// its misses, its unknown share (of the non-negatives) and its false alarms, and holds them to
/// `(minimum accuracy, maximum unknown share, maximum false alarms)`, floors that only rise.
fn assert_whole_corpus_floors(
    half: Half,
    name: &str,
    (min_accuracy, max_unknown, max_false): (f64, f64, u32),
) {
    let t = tally();
    let (overall, _) = report(&t, half);
    let w = t
        .wholes
        .get(&half)
        .unwrap_or_else(|| panic!("{name}.toml holds no case"));
    if !w.misses.is_empty() {
        println!("{name} misses:\n{}", w.misses.join("\n"));
    }
    let unknown = f64::from(w.unknown) / f64::from(w.positives.max(1));
    println!(
        "{name} answered unknown: {}/{} ({:.1}%) of the non-negatives",
        w.unknown,
        w.positives,
        100.0 * unknown
    );
    println!(
        "{name} false alarms on negatives: {} of {}",
        w.false_alarms, w.negatives
    );
    assert!(w.positives > 0, "{name}.toml holds no case");
    assert!(
        overall >= min_accuracy,
        "{name} at {:.1}%, below its floor",
        100.0 * overall
    );
    assert!(
        unknown <= max_unknown,
        "{name}'s unknown share rose above its ceiling"
    );
    assert!(
        w.false_alarms <= max_false,
        "{name}'s false alarms rose above its ceiling"
    );
}

/// The fifth corpus, tuning material since its blind measurement (76.7 % on 2026-12-05): per
/// category, overall, the share answered "unknown" (of the non-negatives), the false alarms on
/// negatives and its misses. Its floors are regressions; the goal stays 90 % right, at most 5 %
/// unknown and no false alarm: `cargo test -p cudoctor-explain --test corpus wave5_accuracy --
/// --nocapture`.
#[test]
fn wave5_accuracy_as_tuning_material() {
    assert_whole_corpus_floors(
        Half::Wave5,
        "wave5",
        (
            MIN_WAVE5_ACCURACY,
            MAX_WAVE5_UNKNOWN,
            MAX_WAVE5_FALSE_ALARMS,
        ),
    );
}

/// The sixth corpus is well formed and new: known categories (never "unknown"), unique ids
/// (also against every other corpus file), one case per thread, a `# meta:` line per case, and
/// no thread that another corpus file (the fifth included) holds or a signature cites. Runs no
/// explain: it prints the counts per category, language and year, never a figure of accuracy.
#[test]
fn wave6_is_well_formed_and_held_out() {
    assert_whole_is_new(6, WAVE6_MIN_CASES);
}

/// The sixth corpus holds at least this many cases (it only grows).
const WAVE6_MIN_CASES: usize = 151;

/// The sixth corpus, tuning material since its blind measurement: per category, overall, the
/// share answered "unknown" (of the non-negatives), the false alarms on negatives and its
/// misses. Measured blind on 2026-12-05 (docs/explain-corpus.md) it was 113/156 (72.4 %),
/// unknown 19/129, false alarms 9 of 27; those figures were its first floors, which are only
/// ever raised. The goal stays 90 % right, at most 5 % unknown and no false alarm:
/// `cargo test -p cudoctor-explain --test corpus wave6_accuracy -- --nocapture`.
#[test]
fn wave6_accuracy_as_tuning_material() {
    assert_whole_corpus_floors(
        Half::Wave6,
        "wave6",
        (
            MIN_WAVE6_ACCURACY,
            MAX_WAVE6_UNKNOWN,
            MAX_WAVE6_FALSE_ALARMS,
        ),
    );
}

/// The seventh corpus is well formed and new: known categories (never "unknown"), unique ids
/// (also against every other corpus file), one case per thread, a `# meta:` line per case, and
/// no thread that another corpus file (the fifth and sixth included) holds or a signature cites.
/// Runs no explain: it prints the counts per category, language and year.
#[test]
fn wave7_is_well_formed_and_held_out() {
    assert_whole_is_new(7, WAVE7_MIN_CASES);
}

/// The seventh corpus holds at least this many cases (it only grows).
const WAVE7_MIN_CASES: usize = 100;

/// The eighth corpus is well formed and new: known categories (never "unknown"), unique ids
/// (also against every other corpus file, the seventh included), one case per thread, a `# meta:`
/// line per case, and no thread that another corpus file (the fifth to seventh included) holds or
/// a signature cites. Runs no explain: it prints the counts per category, language and year,
/// never a figure of accuracy, so that the corpus stays blind until it is measured.
#[test]
fn wave8_is_well_formed_and_held_out() {
    assert_whole_is_new(8, WAVE8_MIN_CASES);
}

/// The eighth corpus holds at least this many cases (it only grows).
const WAVE8_MIN_CASES: usize = 100;

/// The ninth corpus is well formed and new: known categories (never "unknown"), unique ids (also
/// against every other corpus file, the seventh and eighth included), one case per thread, a
/// `# meta:` line per case, and no thread that another corpus file (the fifth to eighth included)
/// holds or a signature cites. Runs no explain: it prints the counts per category, language and
/// year, never a figure of accuracy, so that the corpus stays blind until it is measured.
#[test]
fn wave9_is_well_formed_and_held_out() {
    assert_whole_is_new(9, WAVE9_MIN_CASES);
}

/// The ninth corpus holds at least this many cases (it only grows).
const WAVE9_MIN_CASES: usize = 151;

/// The tenth corpus is well formed and new: known categories (never "unknown"), unique ids (also
/// against every other corpus file, the seventh to ninth included), one case per thread, a
/// `# meta:` line per case, and no thread that another corpus file (the fifth to ninth included)
/// holds or a signature cites. Runs no explain: it prints the counts per category, language and
/// year, never a figure of accuracy, so that the corpus stays blind until it is measured.
#[test]
fn wave10_is_well_formed_and_held_out() {
    assert_whole_is_new(10, WAVE10_MIN_CASES);
}

/// The tenth corpus holds at least this many cases (it only grows).
const WAVE10_MIN_CASES: usize = 116;

/// The eleventh corpus is well formed and new: known categories (never "unknown"), unique ids
/// (also against every other corpus file, the seventh to tenth included), one case per thread, a
/// `# meta:` line per case, and no thread that another corpus file (the fifth to tenth included)
/// holds or a signature cites. Runs no explain: it prints the counts per category, language and
/// year, never a figure of accuracy, so that the corpus stays blind until it is measured.
#[test]
fn wave11_is_well_formed_and_held_out() {
    assert_whole_is_new(11, WAVE11_MIN_CASES);
}

/// The eleventh corpus holds at least this many cases (it only grows).
const WAVE11_MIN_CASES: usize = 85;

/// The twelfth corpus is well formed and new: known categories (never "unknown"), unique ids
/// (also against every other corpus file, the eleventh included), one case per thread, a
/// `# meta:` line per case, and no thread that another corpus file (the fifth to eleventh
/// included) holds or a signature cites. Runs no explain: it prints the counts per category,
/// language and year, never a figure of accuracy, so that the corpus stays blind until it is
/// measured.
#[test]
fn wave12_is_well_formed_and_held_out() {
    assert_whole_is_new(12, WAVE12_MIN_CASES);
}

/// The twelfth corpus holds at least this many cases (it only grows).
const WAVE12_MIN_CASES: usize = 105;

/// The thirteenth corpus is well formed and new: known categories (never "unknown"), unique ids
/// (also against every other corpus file, the twelfth included), one case per thread, a `# meta:`
/// line per case, and no thread that another corpus file (the fifth to twelfth included) holds or
/// a signature cites. Runs no explain: it prints the counts per category, language and year, never
/// a figure of accuracy, so that the corpus stays blind until it is measured.
#[test]
fn wave13_is_well_formed_and_held_out() {
    assert_whole_is_new(13, WAVE13_MIN_CASES);
}

/// The thirteenth corpus holds at least this many cases (it only grows).
const WAVE13_MIN_CASES: usize = 100;

/// The fourteenth corpus is well formed and new: known categories (never "unknown"), unique ids
/// (also against every other corpus file, the thirteenth included), one case per thread, a
/// `# meta:` line per case, and no thread that another corpus file (the fifth to thirteenth
/// included) holds or a signature cites. Runs no explain: it prints the counts per category,
/// language and year, never a figure of accuracy, so that the corpus stays blind until it is
/// measured.
#[test]
fn wave14_is_well_formed_and_held_out() {
    assert_whole_is_new(14, WAVE14_MIN_CASES);
}

/// The fourteenth corpus holds at least this many cases (it only grows).
const WAVE14_MIN_CASES: usize = 100;

/// The fifteenth corpus is well formed and new: known categories (never "unknown"), unique ids
/// (also against every other corpus file, the fourteenth included), one case per thread, a
/// `# meta:` line per case, and no thread that another corpus file (the fifth to fourteenth
/// included) holds or a signature cites. Runs no explain: it prints the counts per category,
/// language and year, never a figure of accuracy, so that the corpus stays blind until it is
/// measured.
#[test]
fn wave15_is_well_formed_and_held_out() {
    assert_whole_is_new(15, WAVE15_MIN_CASES);
}

/// The fifteenth corpus holds at least this many cases (it only grows).
const WAVE15_MIN_CASES: usize = 100;

/// The sixteenth corpus is well formed and new (see wave15's).
#[test]
fn wave16_is_well_formed_and_held_out() {
    assert_whole_is_new(16, WAVE16_MIN_CASES);
}

/// The sixteenth corpus holds at least this many cases (it only grows).
const WAVE16_MIN_CASES: usize = 111;

/// The seventeenth corpus is well formed and new (see wave15's).
#[test]
fn wave17_is_well_formed_and_held_out() {
    assert_whole_is_new(17, WAVE17_MIN_CASES);
}

/// The seventeenth corpus holds at least this many cases (it only grows).
const WAVE17_MIN_CASES: usize = 81;

/// The eighteenth corpus is well formed and new (see wave15's).
#[test]
fn wave18_is_well_formed_and_held_out() {
    assert_whole_is_new(18, WAVE18_MIN_CASES);
}

/// The eighteenth corpus holds at least this many cases (it only grows).
const WAVE18_MIN_CASES: usize = 130;

/// The nineteenth corpus is well formed and new (see wave15's).
#[test]
fn wave19_is_well_formed_and_held_out() {
    assert_whole_is_new(19, WAVE19_MIN_CASES);
}

/// The nineteenth corpus holds at least this many cases (it only grows).
const WAVE19_MIN_CASES: usize = 105;

/// The twentieth corpus is well formed and new (see wave15's).
#[test]
fn wave20_is_well_formed_and_held_out() {
    assert_whole_is_new(20, WAVE20_MIN_CASES);
}

/// The twentieth corpus holds at least this many cases (it only grows).
const WAVE20_MIN_CASES: usize = 107;

/// The twenty-first corpus is well formed and new (see wave15's).
#[test]
fn wave21_is_well_formed_and_held_out() {
    assert_whole_is_new(21, WAVE21_MIN_CASES);
}

/// The twenty-first corpus holds at least this many cases (it only grows).
const WAVE21_MIN_CASES: usize = 105;

/// The twenty-second corpus is well formed and new (see wave15's).
#[test]
fn wave22_is_well_formed_and_held_out() {
    assert_whole_is_new(22, WAVE22_MIN_CASES);
}

/// The twenty-second corpus holds at least this many cases (it only grows).
const WAVE22_MIN_CASES: usize = 106;

/// The twenty-third corpus is well formed and new (see wave15's).
#[test]
fn wave23_is_well_formed_and_held_out() {
    assert_whole_is_new(23, WAVE23_MIN_CASES);
}

/// The twenty-third corpus holds at least this many cases (it only grows).
const WAVE23_MIN_CASES: usize = 105;

/// The twenty-fourth corpus is well formed and new (see wave15's).
#[test]
fn wave24_is_well_formed_and_held_out() {
    assert_whole_is_new(24, WAVE24_MIN_CASES);
}

/// The twenty-fourth corpus holds at least this many cases (it only grows).
const WAVE24_MIN_CASES: usize = 106;

/// The twenty-fifth corpus is well formed and new (see wave15's).
#[test]
fn wave25_is_well_formed_and_held_out() {
    assert_whole_is_new(25, WAVE25_MIN_CASES);
}

/// The twenty-fifth corpus holds at least this many cases (it only grows).
const WAVE25_MIN_CASES: usize = 105;

/// The twenty-sixth corpus is well formed and new (see wave15's).
#[test]
fn wave26_is_well_formed_and_held_out() {
    assert_whole_is_new(26, WAVE26_MIN_CASES);
}

/// The twenty-sixth corpus holds at least this many cases (it only grows).
const WAVE26_MIN_CASES: usize = 105;

/// The seventh corpus, tuning material since its blind measurement: per category, overall, the
/// share answered "unknown" (of the non-negatives), the false alarms on negatives and its
/// misses. Measured blind on 2026-12-05 (docs/explain-corpus.md), after the fifth and sixth
/// sessions on the reading, it was 66/102 (64.7 %), unknown 18/86, false alarms 4 of 16; those
/// figures were its first floors, which are only ever raised. The goal stays 90 % right, at most
/// 5 % unknown and no false alarm:
/// `cargo test -p cudoctor-explain --test corpus wave7_accuracy -- --nocapture`.
#[test]
fn wave7_accuracy_as_tuning_material() {
    assert_whole_corpus_floors(
        Half::Wave7,
        "wave7",
        (
            MIN_WAVE7_ACCURACY,
            MAX_WAVE7_UNKNOWN,
            MAX_WAVE7_FALSE_ALARMS,
        ),
    );
}

/// The seventh corpus's first blind measurement (2026-12-05, after the fifth and sixth sessions
/// on the reading: 66/102, unknown 18/86, false alarms 4 of 16), kept as floors; raised by the
/// seventh session on the reading to what it reached (80/102, unknown 7/86), and by the eighth
/// to what it reached (85/102, unknown 5/86, false alarms 1 of 16).
const MIN_WAVE7_ACCURACY: f64 = 0.833;
const MAX_WAVE7_UNKNOWN: f64 = 0.059;
const MAX_WAVE7_FALSE_ALARMS: u32 = 1;

/// The eighth corpus, measured blind from 2026-12-05 to the sixth session on the reading, which
/// made the eighth to eleventh tuning material (their blind figures stand in
/// docs/explain-corpus.md): per category, overall, the share answered "unknown" (of the
/// non-negatives) and the false alarms on negatives:
/// `cargo test -p cudoctor-explain --test corpus wave8_accuracy -- --nocapture`.
#[test]
fn wave8_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave8",
        &whole(8),
        MIN_WAVE8_ACCURACY,
        MAX_WAVE8_UNKNOWN,
        MAX_WAVE8_FALSE_ALARMS,
    );
}

/// The ninth corpus, tuning material since the sixth session on the reading (its blind
/// figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave9_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave9",
        &whole(9),
        MIN_WAVE9_ACCURACY,
        MAX_WAVE9_UNKNOWN,
        MAX_WAVE9_FALSE_ALARMS,
    );
}

/// The tenth corpus, tuning material since the sixth session on the reading (its blind
/// figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave10_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave10",
        &whole(10),
        MIN_WAVE10_ACCURACY,
        MAX_WAVE10_UNKNOWN,
        MAX_WAVE10_FALSE_ALARMS,
    );
}

/// The eleventh corpus, tuning material since the sixth session on the reading (its blind
/// figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave11_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave11",
        &whole(11),
        MIN_WAVE11_ACCURACY,
        MAX_WAVE11_UNKNOWN,
        MAX_WAVE11_FALSE_ALARMS,
    );
}

/// The twelfth corpus, tuning material since the seventh session on the reading (its blind
/// figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave12_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave12",
        &whole(12),
        MIN_WAVE12_ACCURACY,
        MAX_WAVE12_UNKNOWN,
        MAX_WAVE12_FALSE_ALARMS,
    );
}

/// The thirteenth corpus, tuning material since the seventh session on the reading (its blind
/// figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave13_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave13",
        &whole(13),
        MIN_WAVE13_ACCURACY,
        MAX_WAVE13_UNKNOWN,
        MAX_WAVE13_FALSE_ALARMS,
    );
}

/// The fourteenth corpus, tuning material since the seventh session on the reading (its blind
/// figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave14_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave14",
        &whole(14),
        MIN_WAVE14_ACCURACY,
        MAX_WAVE14_UNKNOWN,
        MAX_WAVE14_FALSE_ALARMS,
    );
}

/// The fifteenth corpus, tuning material since the ninth session on the reading of 2026-12-06 (its
/// blind figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave15_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave15",
        &whole(15),
        MIN_WAVE15_ACCURACY,
        MAX_WAVE15_UNKNOWN,
        MAX_WAVE15_FALSE_ALARMS,
    );
}

/// The sixteenth corpus, tuning material since the ninth session on the reading of 2026-12-06 (its
/// blind figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave16_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave16",
        &whole(16),
        MIN_WAVE16_ACCURACY,
        MAX_WAVE16_UNKNOWN,
        MAX_WAVE16_FALSE_ALARMS,
    );
}

/// The seventeenth corpus, tuning material since the ninth session on the reading of 2026-12-06 (its
/// blind figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave17_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave17",
        &whole(17),
        MIN_WAVE17_ACCURACY,
        MAX_WAVE17_UNKNOWN,
        MAX_WAVE17_FALSE_ALARMS,
    );
}

/// The eighteenth corpus, tuning material since the eleventh session on the reading of 2026-12-06
/// (its blind figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave18_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave18",
        &whole(18),
        MIN_WAVE18_ACCURACY,
        MAX_WAVE18_UNKNOWN,
        MAX_WAVE18_FALSE_ALARMS,
    );
}

/// The nineteenth corpus, tuning material since the eleventh session on the reading of 2026-12-06
/// (its blind figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave19_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave19",
        &whole(19),
        MIN_WAVE19_ACCURACY,
        MAX_WAVE19_UNKNOWN,
        MAX_WAVE19_FALSE_ALARMS,
    );
}

/// The twentieth corpus, tuning material since the eleventh session on the reading of 2026-12-06
/// (its blind figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave20_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave20",
        &whole(20),
        MIN_WAVE20_ACCURACY,
        MAX_WAVE20_UNKNOWN,
        MAX_WAVE20_FALSE_ALARMS,
    );
}

/// The twenty-first corpus, tuning material since the eleventh session on the reading of 2026-12-06
/// (its blind figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave21_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave21",
        &whole(21),
        MIN_WAVE21_ACCURACY,
        MAX_WAVE21_UNKNOWN,
        MAX_WAVE21_FALSE_ALARMS,
    );
}

/// The twenty-second corpus, tuning material since the eleventh session on the reading of 2026-12-06
/// (its blind figures stand in docs/explain-corpus.md), held to its floors.
#[test]
fn wave22_accuracy_as_tuning_material() {
    assert_held_out_floors(
        "wave22",
        &whole(22),
        MIN_WAVE22_ACCURACY,
        MAX_WAVE22_UNKNOWN,
        MAX_WAVE22_FALSE_ALARMS,
    );
}

/// The twenty-third corpus, held out (docs/explain-corpus.md): its aggregate figures only,
/// never a case, held to its first blind measurement.
#[test]
fn wave23_accuracy_held_out() {
    assert_held_out_floors(
        "wave23",
        &whole(23),
        MIN_WAVE23_ACCURACY,
        MAX_WAVE23_UNKNOWN,
        MAX_WAVE23_FALSE_ALARMS,
    );
}

/// The twenty-fourth corpus, held out (docs/explain-corpus.md): its aggregate figures only,
/// never a case, held to its first blind measurement.
#[test]
fn wave24_accuracy_held_out() {
    assert_held_out_floors(
        "wave24",
        &whole(24),
        MIN_WAVE24_ACCURACY,
        MAX_WAVE24_UNKNOWN,
        MAX_WAVE24_FALSE_ALARMS,
    );
}

/// The twenty-fifth corpus, held out (docs/explain-corpus.md): its aggregate figures only,
/// never a case, held to its first blind measurement.
#[test]
fn wave25_accuracy_held_out() {
    assert_held_out_floors(
        "wave25",
        &whole(25),
        MIN_WAVE25_ACCURACY,
        MAX_WAVE25_UNKNOWN,
        MAX_WAVE25_FALSE_ALARMS,
    );
}

/// The twenty-sixth corpus, held out (docs/explain-corpus.md): its aggregate figures only,
/// never a case, held to its first blind measurement.
#[test]
fn wave26_accuracy_held_out() {
    assert_held_out_floors(
        "wave26",
        &whole(26),
        MIN_WAVE26_ACCURACY,
        MAX_WAVE26_UNKNOWN,
        MAX_WAVE26_FALSE_ALARMS,
    );
}

/// A held-out corpus's aggregate figures (per category, overall, the unknown share of the
/// non-negatives, the false alarms on negatives), never a case, held to `(minimum accuracy,
/// maximum unknown share, maximum false alarms)`.
fn assert_held_out_floors(
    name: &str,
    cases: &[Case],
    min_accuracy: f64,
    max_unknown: f64,
    max_false_alarms: u32,
) {
    let mut per: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    let (mut unknown, mut positives, mut false_alarms, mut negatives) = (0u32, 0u32, 0u32, 0u32);
    for c in cases {
        let got = explain_str(&c.text).category;
        let ok = correct(c, got);
        let entry = per.entry(c.expected.clone()).or_default();
        entry.1 += 1;
        entry.0 += u32::from(ok);
        if is_negative(c) {
            negatives += 1;
            false_alarms += u32::from(!ok);
        } else {
            positives += 1;
            unknown += u32::from(got == Category::Unknown);
        }
    }
    println!("{name} (held out):");
    println!("{:<26} {:>7} {:>9}", "category", "correct", "accuracy");
    let (mut ok, mut total) = (0u32, 0u32);
    for (cat, (good, all)) in &per {
        ok += good;
        total += all;
        let acc = f64::from(*good) / f64::from(*all);
        println!("{cat:<26} {good:>3}/{all:<3} {:>8.1}%", 100.0 * acc);
    }
    let rate = |a: u32, b: u32| f64::from(a) / f64::from(b.max(1));
    println!(
        "{:<26} {ok:>3}/{total:<3} {:>8.1}%",
        "overall",
        100.0 * rate(ok, total)
    );
    println!(
        "{name} answered unknown: {unknown}/{positives} ({:.1}%) of the non-negatives",
        100.0 * rate(unknown, positives)
    );
    println!("{name} false alarms on negatives: {false_alarms} of {negatives}");
    assert!(total > 0, "{name} holds no case");
    assert!(
        rate(ok, total) >= min_accuracy,
        "{name} fell below its floor"
    );
    assert!(
        rate(unknown, positives) <= max_unknown,
        "{name}'s unknown share rose above its ceiling"
    );
    assert!(
        false_alarms <= max_false_alarms,
        "{name}'s false alarms rose above its ceiling"
    );
}

/// The eighth corpus's first blind measurement (2026-12-05, 40b9db2: 58/100, unknown 18/83,
/// false alarms 7 of 17), kept as floors.
/// Raised to 59/100 on the third day (the category decision for another CUDA's build), and to
/// 60/100, unknown 16/83, by the fourth session's prose reading (measured blind).
/// Tuning material from the sixth session, which raised it to 66/100, unknown 14/83, false
/// alarms 5 of 17.
const MIN_WAVE8_ACCURACY: f64 = 0.66;
const MAX_WAVE8_UNKNOWN: f64 = 0.169;
const MAX_WAVE8_FALSE_ALARMS: u32 = 5;
/// The ninth corpus's first blind measurement (2026-12-05, second day, on 71e152a's reader):
/// 101/151, unknown 18/127, false alarms 8 of 24; raised the same day to 104/151, unknown
/// 16/127 after the attention rule (not blind for that class, docs/explain-corpus.md), and on
/// the third day to 108/151 by the category decision for a package built for another CUDA.
/// Unknown 15/127 after the fourth session's reading of support asked of a GPU. Tuning
/// material from the sixth session, which raised it to 115/151, unknown 14/127, false alarms 4
/// of 24.
const MIN_WAVE9_ACCURACY: f64 = 0.761;
const MAX_WAVE9_UNKNOWN: f64 = 0.111;
const MAX_WAVE9_FALSE_ALARMS: u32 = 4;
/// The tenth corpus's first blind measurement (2026-12-05, second day, on f91e82e's reader):
/// 73/116, unknown 22/94, false alarms 7 of 22.
/// Raised on the third session to 75/116 (the emitters' vocabulary, measured blind).
/// Tuning material from the sixth session, which raised it to 79/116, unknown 17/94.
const MIN_WAVE10_ACCURACY: f64 = 0.681;
const MAX_WAVE10_UNKNOWN: f64 = 0.181;
const MAX_WAVE10_FALSE_ALARMS: u32 = 6;
/// The eleventh corpus's first blind measurement (2026-12-05, third day, on f331d3c's reader,
/// before any work of the day): 51/85, unknown 14/69, false alarms 4 of 16; 53/85, unknown
/// 13/69, after the fourth session's prose reading (measured blind).
/// Tuning material from the sixth session, which raised it to 66/85, unknown 8/69.
const MIN_WAVE11_ACCURACY: f64 = 0.776;
const MAX_WAVE11_UNKNOWN: f64 = 0.116;
const MAX_WAVE11_FALSE_ALARMS: u32 = 4;
/// The twelfth corpus's first blind measurement (2026-12-05, third session, on f331d3c's reader
/// and again on 5a6a5fc's, with the day's category decision and machine reading: the same figures): 59/105,
/// unknown 19/87, false alarms 7 of 18.
/// Tuning material since the seventh session; its floors are the figures of that session's
/// reader.
const MIN_WAVE12_ACCURACY: f64 = 0.619;
const MAX_WAVE12_UNKNOWN: f64 = 0.161;
const MAX_WAVE12_FALSE_ALARMS: u32 = 7;
/// The thirteenth corpus's first blind measurement (2026-12-05, fourth session, on 8ffb1c0's
/// reader, before any work of the session): 49/100, unknown 21/80, false alarms 10 of 20; then
/// 51/100, unknown 19/80, false alarms 10 of 20 with the session's prose reading, which its
/// gatherer never saw.
/// Tuning material since the seventh session; its floors are the figures of that session's
/// reader.
const MIN_WAVE13_ACCURACY: f64 = 0.59;
const MAX_WAVE13_UNKNOWN: f64 = 0.188;
const MAX_WAVE13_FALSE_ALARMS: u32 = 10;

/// The fourteenth corpus's first blind measurement (2026-12-05, fifth session, on the reader
/// the session started from, fdaf11d, and again with its first reading work, the placements):
/// 62/100, unknown 18/79, false alarms 7 of 21.
/// Tuning material since the seventh session; its floors are the figures of that session's
/// reader.
const MIN_WAVE14_ACCURACY: f64 = 0.70;
const MAX_WAVE14_UNKNOWN: f64 = 0.152;
const MAX_WAVE14_FALSE_ALARMS: u32 = 6;

/// The fifteenth corpus's first blind measurement (2026-12-05, fifth session, gathered while
/// the session's reading work was done and measured after it, on the session's start fdaf11d
/// and on d8e5ae9, with the same figures): 68/100, unknown 9/81, false alarms 6 of 19; 69/100
/// on the eighth session's starting reader (52652e7), 70/100 on its final reader. Tuning
/// material since the ninth session; its floors are that session's final figures (74/100).
const MIN_WAVE15_ACCURACY: f64 = 0.739;
const MAX_WAVE15_UNKNOWN: f64 = 0.075;
const MAX_WAVE15_FALSE_ALARMS: u32 = 6;

/// The sixteenth corpus's first blind measurement (2026-12-05, sixth session, gathered at the
/// session's start and measured on its starting reader, 8af5f3e): 73/111, unknown 14/90,
/// false alarms 6 of 21; 75/111 on the session's final reader; 76/111, unknown 13/90, on the
/// eighth session's start (52652e7) and final reader. Tuning material since the ninth
/// session; its floors are that session's final figures (81/111, two labels changed), less the
/// one negative the tenth session's reading of a stated capability floor answers (nvc++'s
/// "available only on systems with NVIDIA GPUs with compute capability >= cc60", which a
/// CMake bug of the project triggered): 80/111, false alarms 7.
const MIN_WAVE16_ACCURACY: f64 = 0.72;
const MAX_WAVE16_UNKNOWN: f64 = 0.123;
const MAX_WAVE16_FALSE_ALARMS: u32 = 7;

/// The seventeenth corpus's first blind measurement (2026-12-05, seventh session, gathered at
/// the session's start and measured on its starting reader, cdd721f, after two threads that
/// signatures cite were taken out unread): 57/81, unknown 6/63, false alarms 8 of 18. Tuning
/// material since the ninth session; its floors are that session's final figures (61/81,
/// three labels changed).
const MIN_WAVE17_ACCURACY: f64 = 0.753;
const MAX_WAVE17_UNKNOWN: f64 = 0.08;
const MAX_WAVE17_FALSE_ALARMS: u32 = 8;

/// The eighteenth corpus's first blind measurement (2026-12-05, seventh session, gathered at
/// the session's start and measured on its starting reader, cdd721f): 89/130, unknown 18/106,
/// false alarms 8 of 24; 92/130 on the eighth session's starting reader (52652e7), 93/130,
/// unknown 15/106, on its final reader; 94/130, unknown 14/106, on the ninth session's final
/// reader.
/// Tuning material since the eleventh session; its floors are that session's figures
/// (102/130, unknown 7/106, false alarms 8).
const MIN_WAVE18_ACCURACY: f64 = 0.784;
const MAX_WAVE18_UNKNOWN: f64 = 0.067;
const MAX_WAVE18_FALSE_ALARMS: u32 = 8;

/// The nineteenth corpus's first blind measurement (2026-12-06, eighth session, gathered at the
/// session's start from the PyTorch ecosystem's trackers and measured on its starting reader,
/// 52652e7, after eight threads that signatures cite were taken out unread): 83/105, unknown
/// 5/83, false alarms 6 of 22; 85/105, false alarms 4 of 22, on the session's final reader;
/// 86/105, unknown 4/83, on the ninth session's final reader.
/// Tuning material since the eleventh session; its floors are that session's figures
/// (86/105, unknown 5/83 (one more: a Rubin report that stated a build of a CUDA the tables do not know, which no longer counts as stating none), false alarms 4).
const MIN_WAVE19_ACCURACY: f64 = 0.819;
const MAX_WAVE19_UNKNOWN: f64 = 0.061;
const MAX_WAVE19_FALSE_ALARMS: u32 = 4;

/// The twentieth corpus's first blind measurement (2026-12-06, eighth session, gathered at the
/// session's start from every other tracker and measured on its starting reader, 52652e7, after
/// one thread that a signature cites was taken out unread): 73/107, unknown 8/85, false alarms
/// 8 of 22. 72/107, false alarms 9, on the tenth session's final reader: memory run out read
/// without a subject word (and `cudaMalloc` as the GPU's memory) answers one more negative
/// out_of_memory (measured blind, the case unread).
/// Tuning material since the eleventh session; its floors are that session's figures
/// (75/107, unknown 7/85, false alarms 9).
const MIN_WAVE20_ACCURACY: f64 = 0.7;
const MAX_WAVE20_UNKNOWN: f64 = 0.083;
const MAX_WAVE20_FALSE_ALARMS: u32 = 9;

/// The twenty-first corpus's first blind measurement (2026-12-06, ninth session, gathered at the
/// session's start from the PyTorch ecosystem's and LLM stacks' trackers and measured on its
/// starting reader, 2696bff): 72/105, unknown 15/82, false alarms 5 of 23; 74/105, unknown
/// 13/82, on the session's final reader.
/// Tuning material since the eleventh session; its floors are that session's figures
/// (78/105, unknown 12/82, false alarms 3).
const MIN_WAVE21_ACCURACY: f64 = 0.742;
const MAX_WAVE21_UNKNOWN: f64 = 0.147;
const MAX_WAVE21_FALSE_ALARMS: u32 = 3;

/// The twenty-second corpus's first blind measurement (2026-12-06, ninth session, gathered at
/// the session's start from every other tracker and measured on its starting reader, 2696bff):
/// 74/106, unknown 7/84, false alarms 8 of 22. 74/106, unknown 6/84, false alarms 9, on the
/// tenth session's final reader: memory run out without a subject word answers one more, a
/// stated capability floor one more negative (measured blind, the cases unread).
/// Tuning material since the eleventh session; its floors are that session's figures
/// (76/106, unknown 5/84, false alarms 9).
const MIN_WAVE22_ACCURACY: f64 = 0.716;
const MAX_WAVE22_UNKNOWN: f64 = 0.06;
const MAX_WAVE22_FALSE_ALARMS: u32 = 9;

/// The twenty-third corpus's first blind measurement (2026-12-06, tenth session, gathered at the
/// session's start from the PyTorch ecosystem's and LLM stacks' trackers and measured on its
/// starting reader, 48f90d5): 71/105, unknown 14/82, false alarms 5 of 23; the same on the
/// session's final reader.
const MIN_WAVE23_ACCURACY: f64 = 0.676;
const MAX_WAVE23_UNKNOWN: f64 = 0.171;
const MAX_WAVE23_FALSE_ALARMS: u32 = 5;

/// The twenty-fourth corpus's first blind measurement (2026-12-06, tenth session, gathered at
/// the session's start from every other tracker and measured on its starting reader, 48f90d5):
/// 62/106, unknown 12/84, false alarms 14 of 22; the same on the session's final reader.
const MIN_WAVE24_ACCURACY: f64 = 0.584;
const MAX_WAVE24_UNKNOWN: f64 = 0.143;
const MAX_WAVE24_FALSE_ALARMS: u32 = 14;

/// The twenty-fifth corpus's first blind measurement (2026-12-06, eleventh session, gathered
/// at the session's start by a helper who never ran cudoctor, from the PyTorch ecosystem's and
/// LLM stacks' trackers, and measured on its starting reader, 8027753): 72/105, unknown 9/83,
/// false alarms 9 of 22.
const MIN_WAVE25_ACCURACY: f64 = 0.685;
const MAX_WAVE25_UNKNOWN: f64 = 0.109;
const MAX_WAVE25_FALSE_ALARMS: u32 = 9;

/// The twenty-sixth corpus's first blind measurement (2026-12-06, eleventh session, gathered
/// like the twenty-fifth from every other tracker, measured on 8027753): 69/105, unknown
/// 13/83, false alarms 7 of 22.
const MIN_WAVE26_ACCURACY: f64 = 0.657;
const MAX_WAVE26_UNKNOWN: f64 = 0.157;
const MAX_WAVE26_FALSE_ALARMS: u32 = 7;
