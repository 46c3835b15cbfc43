//! Seeded mutation of inputs: byte-level edits for every target, tokens and line edits for
//! text, and edits of the parsed document for JSON (so mutants reach analysis and rendering
//! instead of failing in the JSON parser).

use crate::InputKind;

/// xorshift64*: small, fast, and the same sequence for the same seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// Integers that sit on the edges parsers get wrong: zero, one, sign bits, all ones, and
/// values just past common sizes.
const INTERESTING: &[u64] = &[
    0,
    1,
    2,
    7,
    8,
    16,
    64,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0x8000,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fffe,
    0xffff_ffff,
    0x1_0000_0000,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
];

/// Pieces of text that the text parsers split on, or that no report may pass on raw.
const TOKENS: &[&str] = &[
    "\n",
    "\r\n",
    "\0",
    ",",
    ", ",
    ":",
    ": ",
    "=",
    " ",
    "\t",
    "'",
    "\"",
    "|",
    "#",
    "-1",
    "0",
    "4294967296",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "NaN",
    "0x",
    "sm_",
    "compute_",
    "+cu",
    "12.",
    "13.0",
    "580.",
    "CUDA Version: ",
    "Driver Version: ",
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  ",
    "Cuda compilation tools, release ",
    "Name: ",
    "Version: ",
    "Requires-Dist: ",
    "__version__ = '",
    "RuntimeError: CUDA error: ",
    "torch.cuda.OutOfMemoryError: ",
    "ImportError: libcudart.so.12: cannot open shared object file",
    "\u{1b}[2J",
    "\u{1b}]0;x\u{7}",
    "\u{202e}",
    "\u{feff}",
    "\u{10ffff}",
    "\u{fffd}",
    "é",
];

/// A mutant of `input`, at most `max_len` bytes (or `input`'s length, if longer).
pub fn mutate(
    rng: &mut Rng,
    input: &[u8],
    kind: InputKind,
    corpus: &[Vec<u8>],
    max_len: usize,
) -> Vec<u8> {
    if kind == InputKind::Json && !rng.one_in(4) {
        if let Some(m) = mutate_json(rng, input, corpus) {
            return m;
        }
    }
    let mut out = input.to_vec();
    let most = if rng.one_in(4) { 16 } else { 4 };
    let rounds = 1 + rng.below(most);
    for _ in 0..rounds {
        let text_op = kind != InputKind::Binary && rng.one_in(2);
        if text_op {
            text_edit(rng, &mut out, corpus);
        } else if kind == InputKind::Binary && out.starts_with(b"\x7fELF") && rng.one_in(3) {
            elf_edit(rng, &mut out);
        } else {
            byte_edit(rng, &mut out, corpus);
        }
    }
    out.truncate(max_len.max(input.len()));
    out
}

fn byte_edit(rng: &mut Rng, out: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let len = out.len();
    match rng.below(10) {
        0 if len > 0 => {
            let i = rng.below(len);
            out[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            out[i] = rng.next_u64() as u8;
        }
        2 | 3 if len > 0 => {
            // An integer field: aligned most of the time, as ELF and fat-binary fields are.
            let width = [1usize, 2, 4, 8][rng.below(4)];
            let mut at = rng.below(len);
            if !rng.one_in(4) {
                at &= !(width - 1);
            }
            let mut v = INTERESTING[rng.below(INTERESTING.len())];
            if rng.one_in(3) {
                v = v.wrapping_add(rng.below(3) as u64).wrapping_sub(1);
            }
            if rng.one_in(4) {
                v = len as u64;
            }
            let bytes = v.to_le_bytes();
            for (k, b) in bytes.iter().take(width).enumerate() {
                if let Some(slot) = at.checked_add(k).and_then(|i| out.get_mut(i)) {
                    *slot = *b;
                }
            }
        }
        4 if len > 0 => {
            let at = rng.below(len);
            let n = 1 + rng.below((len - at).min(256));
            out.drain(at..at + n);
        }
        5 => {
            let at = rng.below(len + 1);
            let n = 1 + rng.below(32);
            let fill: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            out.splice(at..at, fill);
        }
        6 if len > 0 => {
            // A range repeated: tables that claim more entries than they hold.
            let at = rng.below(len);
            let n = 1 + rng.below((len - at).min(512));
            let copy = out[at..at + n].to_vec();
            let times = 1 + rng.below(8);
            let to = rng.below(len + 1);
            for _ in 0..times {
                out.splice(to..to, copy.iter().copied());
            }
        }
        7 if !corpus.is_empty() => {
            // A splice from another seed.
            let other = &corpus[rng.below(corpus.len())];
            if !other.is_empty() {
                let from = rng.below(other.len());
                let n = 1 + rng.below((other.len() - from).min(4096));
                let at = rng.below(len + 1);
                let end = (at + n).min(len);
                out.splice(at..end, other[from..from + n].iter().copied());
            }
        }
        8 if len > 0 => {
            out.truncate(rng.below(len));
        }
        _ => {
            let at = rng.below(len + 1);
            out.insert(at, INTERESTING[rng.below(INTERESTING.len())] as u8);
        }
    }
}

/// Sizes an ELF field may claim: past the file, 8 GB of a 4 KB file, the type's limits.
fn elf_size(rng: &mut Rng, len: usize) -> u64 {
    let len = len as u64;
    [
        len,
        len + 1,
        len.saturating_mul(2),
        1 << 32,
        8 << 30,
        u64::from(u32::MAX),
        u64::MAX,
        u64::MAX / 16,
        0,
    ][rng.below(9)]
}

fn put(out: &mut [u8], at: usize, v: u64, width: usize) {
    for (k, b) in v.to_le_bytes().iter().take(width).enumerate() {
        if let Some(slot) = at.checked_add(k).and_then(|i| out.get_mut(i)) {
            *slot = *b;
        }
    }
}

fn get(out: &[u8], at: usize, width: usize) -> Option<u64> {
    let mut b = [0u8; 8];
    b.get_mut(..width)?
        .copy_from_slice(out.get(at..at.checked_add(width)?)?);
    Some(u64::from_le_bytes(b))
}

/// An edit of a 64-bit little-endian ELF's counts and sizes, the fields hostile libraries
/// abuse: a section's size or offset far past the file (8 GB of a 4 KB file), a program
/// header's sizes, the header's section and segment counts, and a dynamic segment whose entries
/// are one DT_NEEDED or DT_RPATH repeated (thousands of needed libraries, a path list read again
/// and again).
fn elf_edit(rng: &mut Rng, out: &mut [u8]) {
    if out.get(4) != Some(&2) || out.get(5) != Some(&1) {
        return;
    }
    let len = out.len();
    let (Some(phoff), Some(phnum), Some(shoff), Some(shnum)) = (
        get(out, 0x20, 8),
        get(out, 0x38, 2),
        get(out, 0x28, 8),
        get(out, 0x3c, 2),
    ) else {
        return;
    };
    let (phoff, phnum, shoff, shnum) = (
        phoff as usize,
        phnum as usize,
        shoff as usize,
        shnum as usize,
    );
    match rng.below(5) {
        0 if shnum > 0 => {
            // A section's size, offset or entry size.
            let sh = shoff.saturating_add(64 * rng.below(shnum));
            let field = [0x20, 0x18, 0x38][rng.below(3)];
            let v = elf_size(rng, len);
            put(out, sh.saturating_add(field), v, 8);
        }
        1 if phnum > 0 => {
            // A segment's file or memory size, or its offset.
            let ph = phoff.saturating_add(56 * rng.below(phnum));
            let field = [0x20, 0x28, 0x08][rng.below(3)];
            let v = elf_size(rng, len);
            put(out, ph.saturating_add(field), v, 8);
        }
        2 => {
            // The header's counts.
            let at = [0x38, 0x3c, 0x3e][rng.below(3)];
            let v = [0u64, 1, 0xfffe, 0xffff, 0x8000][rng.below(5)];
            put(out, at, v, 2);
        }
        _ => {
            // The dynamic segment: one DT_NEEDED, DT_RPATH or DT_RUNPATH entry repeated over
            // the entries after it, up to the segment's last (kept DT_NULL) entry.
            let Some(dynamic) = (0..phnum).find_map(|i| {
                let ph = phoff.checked_add(56 * i)?;
                (get(out, ph, 4)? == 2).then_some(())?;
                Some((
                    get(out, ph + 8, 8)? as usize,
                    get(out, ph + 0x20, 8)? as usize,
                ))
            }) else {
                return;
            };
            let (off, size) = dynamic;
            let Some(end) = off.checked_add(size).filter(|&e| e <= len) else {
                return;
            };
            let entries = size / 16;
            let wanted = [1u64, 15, 29][rng.below(3)];
            let Some(first) = (0..entries).find(|&k| get(out, off + 16 * k, 8) == Some(wanted))
            else {
                return;
            };
            let Some(entry) = out
                .get(off + 16 * first..off + 16 * first + 16)
                .map(<[u8]>::to_vec)
            else {
                return;
            };
            let mut at = off + 16 * (first + 1);
            while at + 32 <= end {
                out[at..at + 16].copy_from_slice(&entry);
                at += 16;
            }
        }
    }
}

fn text_edit(rng: &mut Rng, out: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let len = out.len();
    match rng.below(6) {
        0 | 1 => {
            let at = rng.below(len + 1);
            let token = TOKENS[rng.below(TOKENS.len())].as_bytes();
            out.splice(at..at, token.iter().copied());
        }
        2 => {
            // A long run: a line far longer than any real one.
            let at = rng.below(len + 1);
            let byte = [b'A', b'9', b' ', b'.', b'\0'][rng.below(5)];
            let n = [100usize, 4096, 70_000][rng.below(3)];
            out.splice(at..at, std::iter::repeat_n(byte, n));
        }
        3 | 4 => {
            // A whole line duplicated, dropped or taken from another seed.
            let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
            if lines.is_empty() {
                return;
            }
            let mut lines: Vec<Vec<u8>> = lines.into_iter().map(<[u8]>::to_vec).collect();
            let i = rng.below(lines.len());
            match rng.below(3) {
                0 => {
                    let l = lines[i].clone();
                    let times = 1 + rng.below(64);
                    for _ in 0..times {
                        lines.insert(i, l.clone());
                    }
                }
                1 => {
                    lines.remove(i);
                }
                _ => {
                    if let Some(other) = corpus.get(rng.below(corpus.len().max(1))) {
                        let theirs: Vec<&[u8]> = other.split(|&b| b == b'\n').collect();
                        if !theirs.is_empty() {
                            lines.insert(i, theirs[rng.below(theirs.len())].to_vec());
                        }
                    }
                }
            }
            *out = lines.join(&b'\n');
        }
        _ => {
            // A number in the text replaced by an edge value.
            let digits: Vec<usize> = out
                .iter()
                .enumerate()
                .filter(|(_, b)| b.is_ascii_digit())
                .map(|(i, _)| i)
                .collect();
            if let Some(&at) = digits.get(rng.below(digits.len().max(1))) {
                let end = out[at..]
                    .iter()
                    .position(|b| !b.is_ascii_digit())
                    .map_or(out.len(), |n| at + n);
                let v = INTERESTING[rng.below(INTERESTING.len())].to_string();
                out.splice(at..end, v.into_bytes());
            }
        }
    }
}

/// A document edit: one node replaced, removed or repeated.
fn mutate_json(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Option<Vec<u8>> {
    let mut doc: serde_json::Value = serde_json::from_slice(input).ok()?;
    let rounds = 1 + rng.below(6);
    for _ in 0..rounds {
        let count = count_nodes(&doc);
        let pick = rng.below(count);
        let donor = corpus
            .get(rng.below(corpus.len().max(1)))
            .and_then(|d| serde_json::from_slice::<serde_json::Value>(d).ok());
        let mut seen = 0;
        edit_node(rng, &mut doc, pick, &mut seen, donor.as_ref());
    }
    serde_json::to_vec(&doc).ok()
}

fn count_nodes(v: &serde_json::Value) -> usize {
    1 + match v {
        serde_json::Value::Array(a) => a.iter().map(count_nodes).sum(),
        serde_json::Value::Object(o) => o.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// Values that break assumptions: hostile text, edges of numbers, wrong types.
fn strange_value(rng: &mut Rng) -> serde_json::Value {
    use serde_json::json;
    match rng.below(14) {
        0 => json!(""),
        1 => json!("\u{1b}[2J\u{1b}]0;pwned\u{7}\n# fake\r| a | b |<img src=x>`$(x)`"),
        2 => json!("x".repeat(20_000)),
        3 => json!("\u{10ff80}\u{10ffff}\u{202e}"),
        4 => json!(-1),
        5 => json!(u64::MAX),
        6 => json!(1e308),
        7 => json!(0),
        8 => serde_json::Value::Null,
        9 => json!(true),
        10 => json!([]),
        11 => json!({}),
        12 => json!("999999999999.99999.9"),
        _ => json!(TOKENS[rng.below(TOKENS.len())]),
    }
}

fn edit_node(
    rng: &mut Rng,
    v: &mut serde_json::Value,
    pick: usize,
    seen: &mut usize,
    donor: Option<&serde_json::Value>,
) -> bool {
    if *seen == pick {
        match rng.below(5) {
            0 | 1 => *v = strange_value(rng),
            2 => {
                if let serde_json::Value::Array(a) = v {
                    if let Some(x) = a.get(rng.below(a.len().max(1))).cloned() {
                        let times = 1 + rng.below(50);
                        a.extend(std::iter::repeat_n(x, times));
                    }
                } else if let serde_json::Value::Object(o) = v {
                    if let Some(k) = o.keys().nth(rng.below(o.len().max(1))).cloned() {
                        o.remove(&k);
                    }
                }
            }
            3 => {
                // A value of the same kind from elsewhere (another seed or this document).
                if let Some(d) = donor {
                    let n = count_nodes(d);
                    if let Some(x) = nth_node(d, rng.below(n)) {
                        *v = x.clone();
                    }
                }
            }
            _ => {
                if let serde_json::Value::String(s) = v {
                    let t = TOKENS[rng.below(TOKENS.len())];
                    let at = rng.below(s.len() + 1);
                    if s.is_char_boundary(at) {
                        s.insert_str(at, t);
                    }
                } else if let Some(n) = v.as_f64() {
                    *v = serde_json::json!(n * -3.0 + 1.0);
                } else {
                    *v = strange_value(rng);
                }
            }
        }
        return true;
    }
    *seen += 1;
    match v {
        serde_json::Value::Array(a) => a.iter_mut().any(|x| edit_node(rng, x, pick, seen, donor)),
        serde_json::Value::Object(o) => {
            o.values_mut().any(|x| edit_node(rng, x, pick, seen, donor))
        }
        _ => false,
    }
}

fn nth_node(v: &serde_json::Value, n: usize) -> Option<&serde_json::Value> {
    fn walk<'a>(
        v: &'a serde_json::Value,
        n: usize,
        seen: &mut usize,
    ) -> Option<&'a serde_json::Value> {
        if *seen == n {
            return Some(v);
        }
        *seen += 1;
        match v {
            serde_json::Value::Array(a) => a.iter().find_map(|x| walk(x, n, seen)),
            serde_json::Value::Object(o) => o.values().find_map(|x| walk(x, n, seen)),
            _ => None,
        }
    }
    walk(v, n, &mut 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_mutants_and_mutants_differ() {
        let input = b"Driver Version: 580.159.04\nCUDA Version: 13.0\n".to_vec();
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..50)
                .map(|_| mutate(&mut rng, &input, InputKind::Text, &[], 1 << 16))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        let mutants = run(7);
        assert!(mutants.iter().filter(|m| **m != input).count() > 40);
    }

    /// The ELF edits reach the count and size fields of a real library.
    #[test]
    fn elf_mutants_change_counts_and_sizes() {
        let seed = std::fs::read(
            crate::workspace_root().join("crates/cudoctor-fuzz/corpus/elf/libseed_gnu_hash.so"),
        )
        .unwrap();
        let mut rng = Rng::new(5);
        let mut changed = 0;
        for _ in 0..200 {
            let mut m = seed.clone();
            elf_edit(&mut rng, &mut m);
            assert_eq!(m.len(), seed.len());
            changed += usize::from(m != seed);
        }
        assert!(changed > 100, "{changed}");
    }

    #[test]
    fn json_mutants_stay_json_most_of_the_time() {
        let input = br#"{"a": [1, 2, {"b": "c"}], "d": "e", "schema_version": 1}"#;
        let mut rng = Rng::new(3);
        let valid = (0..100)
            .map(|_| mutate(&mut rng, input, InputKind::Json, &[], 1 << 16))
            .filter(|m| serde_json::from_slice::<serde_json::Value>(m).is_ok())
            .count();
        assert!(valid > 60, "{valid}");
    }
}
