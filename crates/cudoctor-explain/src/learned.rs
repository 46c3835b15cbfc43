//! The learned reader: what a report no line of which states a readable cause most resembles.
//!
//! The clause reader and the signatures read what a line says. A report in a tool's own words
//! that they cannot read would otherwise be "unknown"; this reader compares the report's words
//! with the real reports of explain's tuning corpora (`tests/corpus/`, the halves and files
//! that may be tuned on; never a held-out set) through a multinomial logistic regression over
//! its words, word pairs and Chinese character pairs. Its answer is a resemblance, not a
//! reading: it is given only when the clause reader found nothing, only above a probability
//! floor, with a low confidence and the words that weighed most.
//!
//! The weights are data (`data/learned.tsv`), trained by [`train`] from the corpora; the corpus
//! test retrains them and fails when the file differs (`CUDOCTOR_BLESS=1` rewrites it).

use crate::category::Category;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::OnceLock;

/// The built-in weights.
pub const BUILTIN_TSV: &str = include_str!("../data/learned.tsv");

/// Bytes of a report the learned reader reads (its first lines): real reports are a few KiB.
pub const SAMPLE_BYTES: usize = 16 * 1024;

/// The least probability of an answer given: the lowest of those measured (0.3 to 0.6) that adds
/// no false alarm on the test halves of wave3 and wave4 (docs/explain-corpus.md).
pub const MIN_PROBABILITY: f64 = 0.6;

/// The fewest of the report's words the weights know for an answer to be given at all.
pub const MIN_KNOWN_WORDS: usize = 3;

/// Training: epochs, first learning rate, L2 penalty, the fewest reports a word must appear in.
const EPOCHS: usize = 30;
const RATE: f64 = 0.5;
const L2: f64 = 1e-4;
const MIN_REPORTS: u32 = 2;
/// Weights smaller than this are left out of the data file (they change no answer measured).
const PRUNE: f64 = 0.1;

/// A report's words as the reader sees them: lowercase ASCII words of three letters or more,
/// each pair of consecutive such words, and each pair of consecutive Chinese characters.
pub fn words(text: &str) -> BTreeSet<String> {
    let lower = text.to_lowercase();
    let mut out = BTreeSet::new();
    let mut ascii: Vec<&str> = Vec::new();
    let b = lower.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_lowercase() || b[i] == b'_' {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_lowercase() || b[i].is_ascii_digit() || b[i] == b'_')
            {
                i += 1;
            }
            if i - start > 2 {
                ascii.push(&lower[start..i]);
            }
        } else {
            i += 1;
        }
    }
    for pair in ascii.windows(2) {
        out.insert(format!("{} {}", pair[0], pair[1]));
    }
    out.extend(ascii.iter().map(|w| w.to_string()));
    let mut run: Vec<char> = Vec::new();
    for ch in lower.chars().chain(std::iter::once(' ')) {
        if ('\u{4e00}'..='\u{9fff}').contains(&ch) {
            run.push(ch);
            continue;
        }
        for pair in run.windows(2) {
            out.insert(pair.iter().collect());
        }
        run.clear();
    }
    out
}

/// The weights: one bias per category and, per word, the weight of each category it bears on.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub categories: Vec<Category>,
    pub bias: Vec<f64>,
    pub weights: HashMap<String, Vec<(usize, f64)>>,
    /// How many reports the weights were trained on.
    pub reports: usize,
}

/// What a report resembles.
#[derive(Debug, Clone, PartialEq)]
pub struct Resemblance {
    pub category: Category,
    pub probability: f64,
    /// The report's words that weighed most for the answer, heaviest first.
    pub words: Vec<String>,
    /// How many of the report's words the weights know.
    pub known_words: usize,
}

impl Model {
    /// Every category's probability for `words`, most probable first.
    pub fn probabilities(&self, words: &BTreeSet<String>) -> (Vec<(Category, f64)>, usize) {
        let known: Vec<&Vec<(usize, f64)>> =
            words.iter().filter_map(|w| self.weights.get(w)).collect();
        let scale = 1.0 / (known.len().max(1) as f64).sqrt();
        let mut z = self.bias.clone();
        for ws in &known {
            for &(c, w) in *ws {
                z[c] += w * scale;
            }
        }
        let p = softmax(&z);
        let mut out: Vec<(Category, f64)> = self.categories.iter().copied().zip(p).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        (out, known.len())
    }

    /// The most probable category of `text` with the words that weighed most for it, or `None`
    /// when too few of its words are known or no category reaches [`MIN_PROBABILITY`].
    pub fn resemblance(&self, text: &str) -> Option<Resemblance> {
        let words = words(text);
        let (ranked, known_words) = self.probabilities(&words);
        let &(category, probability) = ranked.first()?;
        if known_words < MIN_KNOWN_WORDS || probability < MIN_PROBABILITY {
            return None;
        }
        let c = self.categories.iter().position(|&k| k == category)?;
        let mut weighing: Vec<(f64, &String)> = words
            .iter()
            .filter_map(|w| {
                let v = self.weights.get(w)?.iter().find(|(k, _)| *k == c)?.1;
                (v > 0.0).then_some((v, w))
            })
            .collect();
        weighing.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        Some(Resemblance {
            category,
            probability,
            words: weighing
                .into_iter()
                .take(5)
                .map(|(_, w)| w.clone())
                .collect(),
            known_words,
        })
    }

    /// The weight `line`'s words give `category` (to show the line that resembles it most).
    pub fn weight_of(&self, line: &str, category: Category) -> f64 {
        let Some(c) = self.categories.iter().position(|&k| k == category) else {
            return 0.0;
        };
        words(line)
            .iter()
            .filter_map(|w| self.weights.get(w)?.iter().find(|(k, _)| *k == c))
            .map(|(_, v)| v)
            .sum()
    }

    /// The data file's text: comments, the categories, the biases (keys that begin with `=`, which
    /// no word does), then one word per line.
    pub fn to_tsv(&self) -> String {
        let mut s = String::from(
            "# cudoctor explain: the learned reader's weights (src/learned.rs), trained from the\n\
             # real reports of tests/corpus/ that may be tuned on (the first corpus, public.toml's\n\
             # dev half, wave3's and wave4's tuning halves, wave5 to wave7; never a test half, the\n\
             # independent set or a held-out corpus). Generated: do not edit. Rewrite with\n\
             # CUDOCTOR_BLESS=1 cargo test -p cudoctor-explain --test corpus learned_weights\n",
        );
        let _ = writeln!(s, "=reports\t{}", self.reports);
        let names: Vec<&str> = self.categories.iter().map(|c| c.as_str()).collect();
        let _ = writeln!(s, "=categories\t{}", names.join("\t"));
        let bias: Vec<String> = self.bias.iter().map(|b| format!("{b:.3}")).collect();
        let _ = writeln!(s, "=bias\t{}", bias.join("\t"));
        let sorted: BTreeMap<&String, &Vec<(usize, f64)>> = self.weights.iter().collect();
        for (w, ws) in sorted {
            let cells: Vec<String> = ws.iter().map(|(c, v)| format!("{c}:{v:.3}")).collect();
            let _ = writeln!(s, "{w}\t{}", cells.join(" "));
        }
        s
    }

    pub fn from_tsv(text: &str) -> Result<Model, String> {
        let mut model = Model {
            categories: Vec::new(),
            bias: Vec::new(),
            weights: HashMap::new(),
            reports: 0,
        };
        for (n, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let bad = || format!("learned.tsv line {}: {line:?}", n + 1);
            let (key, rest) = line.split_once('\t').ok_or_else(bad)?;
            match key {
                "=reports" => model.reports = rest.parse().map_err(|_| bad())?,
                "=categories" => {
                    model.categories = rest
                        .split('\t')
                        .map(|c| Category::parse(c).ok_or_else(bad))
                        .collect::<Result<_, _>>()?
                }
                "=bias" => {
                    model.bias = rest
                        .split('\t')
                        .map(|b| b.parse().map_err(|_| bad()))
                        .collect::<Result<_, _>>()?
                }
                word => {
                    let mut ws = Vec::new();
                    for cell in rest.split(' ') {
                        let (c, v) = cell.split_once(':').ok_or_else(bad)?;
                        let c: usize = c.parse().map_err(|_| bad())?;
                        if c >= model.categories.len() {
                            return Err(bad());
                        }
                        ws.push((c, v.parse().map_err(|_| bad())?));
                    }
                    model.weights.insert(word.to_string(), ws);
                }
            }
        }
        if model.categories.is_empty() || model.bias.len() != model.categories.len() {
            return Err(
                "learned.tsv: categories and biases missing or of different lengths".into(),
            );
        }
        Ok(model)
    }
}

fn softmax(z: &[f64]) -> Vec<f64> {
    let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.into_iter().map(|v| v / sum).collect()
}

/// Trains the weights from labelled reports (`(category, text)`), deterministically: the same
/// reports in the same order give the same file.
pub fn train(reports: &[(Category, &str)]) -> Model {
    let docs: Vec<(Category, BTreeSet<String>)> = reports
        .iter()
        .map(|(c, t)| (*c, words(sample(t))))
        .collect();
    let categories: Vec<Category> = docs
        .iter()
        .map(|(c, _)| *c)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut df: BTreeMap<&str, u32> = BTreeMap::new();
    for (_, ws) in &docs {
        for w in ws {
            *df.entry(w.as_str()).or_default() += 1;
        }
    }
    let vocab: Vec<&str> = df
        .into_iter()
        .filter(|&(_, n)| n >= MIN_REPORTS)
        .map(|(w, _)| w)
        .collect();
    let index: HashMap<&str, usize> = vocab.iter().enumerate().map(|(i, w)| (*w, i)).collect();
    let k = categories.len();
    let rows: Vec<(usize, Vec<usize>)> = docs
        .iter()
        .map(|(c, ws)| {
            let cat = categories.iter().position(|x| x == c).unwrap_or(0);
            (
                cat,
                ws.iter()
                    .filter_map(|w| index.get(w.as_str()).copied())
                    .collect(),
            )
        })
        .collect();
    let mut w = vec![0.0f64; vocab.len() * k];
    let mut bias = vec![0.0f64; k];
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for epoch in 0..EPOCHS {
        // Fisher-Yates with a fixed xorshift: the same order on every machine.
        for i in (1..order.len()).rev() {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            order.swap(i, (rng % (i as u64 + 1)) as usize);
        }
        let eta = RATE / (1.0 + epoch as f64 * 0.2);
        for &r in &order {
            let (y, f) = &rows[r];
            let scale = 1.0 / (f.len().max(1) as f64).sqrt();
            let mut z = bias.clone();
            for &t in f {
                for (c, zc) in z.iter_mut().enumerate() {
                    *zc += w[t * k + c] * scale;
                }
            }
            let p = softmax(&z);
            for c in 0..k {
                let g = p[c] - if c == *y { 1.0 } else { 0.0 };
                if g.abs() < 1e-4 {
                    continue;
                }
                bias[c] -= eta * g;
                for &t in f {
                    let v = &mut w[t * k + c];
                    *v -= eta * (g * scale + L2 * *v);
                }
            }
        }
    }
    let round = |v: f64| (v * 1000.0).round() / 1000.0;
    let mut weights = HashMap::new();
    for (i, word) in vocab.iter().enumerate() {
        let ws: Vec<(usize, f64)> = (0..k)
            .map(|c| (c, round(w[i * k + c])))
            .filter(|(_, v)| v.abs() >= PRUNE)
            .collect();
        if !ws.is_empty() {
            weights.insert(word.to_string(), ws);
        }
    }
    Model {
        categories,
        bias: bias.into_iter().map(round).collect(),
        weights,
        reports: reports.len(),
    }
}

/// The part of a report the reader reads: its first [`SAMPLE_BYTES`], cut at a character.
pub fn sample(text: &str) -> &str {
    if text.len() <= SAMPLE_BYTES {
        return text;
    }
    let mut end = SAMPLE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The built-in weights (the corpus test rules out a file that does not load).
pub fn builtin() -> Option<&'static Model> {
    static M: OnceLock<Option<Model>> = OnceLock::new();
    M.get_or_init(|| Model::from_tsv(BUILTIN_TSV).ok()).as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lowercase_words_their_pairs_and_chinese_pairs() {
        let w = words("CUDA driver is TOO old; 驱动版本 x1");
        for expected in [
            "cuda",
            "driver",
            "too",
            "old",
            "cuda driver",
            "driver too",
            "驱动",
            "动版",
            "版本",
        ] {
            assert!(w.contains(expected), "{expected} missing from {w:?}");
        }
        // Two-letter words and digits alone are not words; "is" breaks no pair it is not in.
        assert!(!w.contains("is") && !w.contains("x1"));
        assert!(
            w.contains("driver too"),
            "a short word between two is skipped"
        );
    }

    #[test]
    fn training_separates_two_kinds_of_report_and_round_trips_through_its_file() {
        let reports = [
            (
                Category::DriverTooOld,
                "the driver is too old for this runtime",
            ),
            (Category::DriverTooOld, "driver too old, update the driver"),
            (
                Category::DriverTooOld,
                "nvenc api version required newer driver too old",
            ),
            (
                Category::OutOfMemory,
                "out of memory while allocating tensor",
            ),
            (
                Category::OutOfMemory,
                "tried to allocate memory: out of memory",
            ),
            (
                Category::OutOfMemory,
                "resource exhausted out of memory allocating",
            ),
        ];
        let m = train(&reports);
        let again = Model::from_tsv(&m.to_tsv()).expect("its own file loads");
        assert_eq!(m, again);
        let r = m
            .resemblance("my driver is too old says the nvenc api")
            .expect("enough known words");
        assert_eq!(r.category, Category::DriverTooOld);
        assert!(r.words.iter().any(|w| w.contains("driver")), "{r:?}");
        assert!(
            m.resemblance("hello world").is_none(),
            "no known word, no answer"
        );
        assert_eq!(train(&reports), m, "training is deterministic");
    }

    #[test]
    fn a_file_that_names_an_unknown_category_or_a_missing_one_is_refused() {
        assert!(Model::from_tsv("=categories\tno_such\n=bias\t0\n").is_err());
        assert!(Model::from_tsv("=categories\tnccl\n=bias\t0\nword\t3:0.5\n").is_err());
        assert!(Model::from_tsv("").is_err());
    }
}
