//! What a line looks like once the ways users paste it are undone, before any pattern sees it.
//!
//! Users paste messages from chat tools, web pages and JSON log collectors: typographic quotes
//! and dashes, full-width punctuation (Chinese-language posts), non-breaking and zero-width
//! spaces, the box borders of rich tracebacks, whole tracebacks `\n`-escaped inside one JSON
//! string, Windows paths with doubled backslashes, runs of spaces from re-flowed text, and
//! timestamp / host prefixes in front of every line. [`normalize`] turns one cleaned line into
//! the plain ASCII-punctuated segments the signatures are written for.
//!
//! The common line (printable ASCII, no backslash, no double space) is returned untouched and
//! costs one pass over its bytes; everything else is rebuilt.

use std::borrow::Cow;

/// Segments a line normalises to: usually the line itself.
#[derive(Debug, PartialEq, Eq)]
pub enum Normalized<'a> {
    /// Nothing to change.
    Same(&'a str),
    /// The rewritten line, possibly split in several segments (an escaped multi-line string).
    Rewritten(Vec<String>),
}

impl Normalized<'_> {
    /// The segments as strings (for tests and callers that do not care about allocation).
    pub fn segments(&self) -> Vec<&str> {
        match self {
            Normalized::Same(s) => vec![s],
            Normalized::Rewritten(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// Whether a line needs more than the fast path: one pass over its bytes (the crate is built
/// optimised in tests too, see the workspace's Cargo.toml).
fn needs_work(line: &str) -> bool {
    let mut prev = 0u8;
    for &b in line.as_bytes() {
        if b >= 0x80 || b == b'\\' || (b == b' ' && prev == b' ') || (b == b's' && prev == b'%') {
            return true;
        }
        prev = b;
    }
    false
}

/// Normalises one cleaned line (no control characters, trimmed).
pub fn normalize(line: &str) -> Normalized<'_> {
    if !needs_work(line) {
        return Normalized::Same(line);
    }
    let mut out = Vec::new();
    let formatted = format_percent_tuple(line);
    let line = formatted.as_deref().unwrap_or(line);
    for piece in unescape_split(line) {
        let mapped = map_chars(&piece);
        let collapsed = collapse(&mapped);
        let trimmed = collapsed.trim();
        if !trimmed.is_empty() {
            out.push(trimmed.to_string());
        }
    }
    Normalized::Rewritten(out)
}

/// A Python exception raised with its message's format and arguments apart, printed as a
/// tuple (`RuntimeError: ('The detected CUDA version (%s) mismatches the version that was
/// used to compile PyTorch (%s). ...', '11.3', '12.8')`): the message as it would read,
/// each `%s`/`%d`/`%r` filled with the next argument. None when the line holds no such tuple.
fn format_percent_tuple(line: &str) -> Option<String> {
    let open = line.find("('").or_else(|| line.find("(\""))?;
    let rest = line.get(open + 1..)?;
    let (format, mut rest) = python_string(rest)?;
    if !format.contains("%s") && !format.contains("%d") && !format.contains("%r") {
        return None;
    }
    let mut args = Vec::new();
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix(')') {
            rest = r;
            break;
        }
        rest = rest.strip_prefix(',')?.trim_start();
        if rest.starts_with(')') {
            continue;
        }
        if rest.starts_with('\'') || rest.starts_with('"') {
            let (a, r) = python_string(rest)?;
            args.push(a);
            rest = r;
        } else {
            let end = rest.find([',', ')'])?;
            args.push(rest.get(..end)?.trim().to_string());
            rest = rest.get(end..)?;
        }
    }
    let mut out = String::with_capacity(line.len());
    out.push_str(line.get(..open)?);
    let mut args = args.into_iter();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('%', Some('s' | 'd' | 'r' | 'i')) => {
                chars.next();
                out.push_str(&args.next().unwrap_or_default());
            }
            ('%', Some('%')) => {
                chars.next();
                out.push('%');
            }
            _ => out.push(c),
        }
    }
    out.push_str(rest);
    Some(out)
}

/// A Python string literal at the start of `s` (single or double quotes, backslash escapes
/// kept as they are), and what follows it.
fn python_string(s: &str) -> Option<(String, &str)> {
    let quote = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == quote {
            return Some((s.get(1..i)?.to_string(), s.get(i + 1..)?));
        }
    }
    None
}

/// Whether a line is serialised text (a traceback inside a JSON string or a Python repr): it
/// holds an unescaped `\n` followed by what starts a line (a space, a capital, a quote, the
/// end). A Windows path such as `C:\Users\me\nvidia` also contains `\n`, followed by a
/// lower-case letter; it alone does not make the line serialised.
fn is_serialised(line: &str) -> bool {
    let b = line.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'\\' {
            if b[i + 1] == b'n' && !b.get(i + 2).is_some_and(u8::is_ascii_lowercase) {
                return true;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    false
}

/// Undoes the escapes of JSON and Python strings that matter for reading a message: `\n`
/// (a segment break, in serialised text only), `\"`, `\'`, `\uXXXX` (incl. `\u001b` colour
/// codes, dropped), and doubled backslashes, which Windows paths get in a repr (`C:\\Users`).
fn unescape_split(s: &str) -> Vec<String> {
    if !s.contains('\\') {
        return vec![s.to_string()];
    }
    let serialised = is_serialised(s);
    let mut segments = Vec::new();
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some('n') if serialised => {
                chars.next();
                segments.push(std::mem::take(&mut out));
            }
            Some('r') if serialised => {
                chars.next();
            }
            Some('"') | Some('\'') => {
                if let Some(q) = chars.next() {
                    out.push(q);
                }
            }
            Some('\\') => {
                // A run of backslashes is one path separator.
                while chars.peek() == Some(&'\\') {
                    chars.next();
                }
                out.push('\\');
            }
            Some('u') => {
                let hex: String = chars.clone().skip(1).take(4).collect();
                match (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                {
                    Some(code) => {
                        for _ in 0..5 {
                            chars.next();
                        }
                        if code == 0x1b {
                            skip_escaped_csi(&mut chars);
                        } else if let Some(ch) = char::from_u32(code).filter(|c| !c.is_control()) {
                            out.push(ch);
                        }
                    }
                    None => out.push('\\'),
                }
            }
            _ => out.push('\\'),
        }
    }
    segments.push(out);
    segments
}

/// After an escaped ESC (`\u001b`), the rest of a colour sequence (`[31m`).
fn skip_escaped_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    if chars.peek() != Some(&'[') {
        return;
    }
    chars.next();
    while let Some(&n) = chars.peek() {
        chars.next();
        if ('\u{40}'..='\u{7e}').contains(&n) {
            break;
        }
    }
}

/// What normalisation makes of a character it rewrites.
#[derive(Debug, Clone, Copy)]
enum Rewrite {
    /// Replaced by these ASCII characters (a typographic quote by `'`, a border by a space).
    To(&'static str),
    /// Removed (zero-width characters).
    Drop,
    /// A full-width form, replaced by its ASCII character.
    FullWidth,
}

/// Every character [`map_chars`] rewrites, by inclusive range: typographic quotes and dashes,
/// the ellipsis, Unicode spaces and zero-width characters, CJK punctuation, full-width ASCII
/// forms, and the box drawing and arrows of rich tracebacks (borders, not text). The scan's
/// gate reads the same table ([`rewritten_chars`]): a line holding none of these needs no
/// rewriting but its runs of spaces.
const REWRITES: &[(char, char, Rewrite)] = &[
    ('\u{2018}', '\u{201B}', Rewrite::To("'")),
    ('\u{2032}', '\u{2032}', Rewrite::To("'")),
    ('\u{00B4}', '\u{00B4}', Rewrite::To("'")),
    ('\u{201C}', '\u{201F}', Rewrite::To("\"")),
    ('\u{2033}', '\u{2033}', Rewrite::To("\"")),
    ('\u{00AB}', '\u{00AB}', Rewrite::To("\"")),
    ('\u{00BB}', '\u{00BB}', Rewrite::To("\"")),
    ('\u{300C}', '\u{300F}', Rewrite::To("\"")),
    ('\u{2010}', '\u{2015}', Rewrite::To("-")),
    ('\u{2212}', '\u{2212}', Rewrite::To("-")),
    ('\u{FE58}', '\u{FE58}', Rewrite::To("-")),
    ('\u{FE63}', '\u{FE63}', Rewrite::To("-")),
    ('\u{2026}', '\u{2026}', Rewrite::To("...")),
    ('\u{00A0}', '\u{00A0}', Rewrite::To(" ")),
    ('\u{2000}', '\u{200A}', Rewrite::To(" ")),
    ('\u{202F}', '\u{202F}', Rewrite::To(" ")),
    ('\u{205F}', '\u{205F}', Rewrite::To(" ")),
    ('\u{3000}', '\u{3000}', Rewrite::To(" ")),
    ('\u{200B}', '\u{200D}', Rewrite::Drop),
    ('\u{2060}', '\u{2060}', Rewrite::Drop),
    ('\u{FEFF}', '\u{FEFF}', Rewrite::Drop),
    ('\u{3002}', '\u{3002}', Rewrite::To(".")),
    ('\u{3001}', '\u{3001}', Rewrite::To(",")),
    ('\u{FF01}', '\u{FF5E}', Rewrite::FullWidth),
    ('\u{2500}', '\u{257F}', Rewrite::To(" ")),
    ('\u{2770}', '\u{2775}', Rewrite::To(" ")),
];

/// Every character normalisation rewrites (for the scan's gate, which must not pass over a
/// line whose rewriting could bring a literal into being).
pub fn rewritten_chars() -> impl Iterator<Item = char> {
    REWRITES.iter().flat_map(|&(first, last, _)| first..=last)
}

/// Typographic and full-width characters to the ASCII the messages are printed in.
fn map_chars(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        match REWRITES
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&c))
        {
            Some((_, _, Rewrite::To(t))) => out.push_str(t),
            Some((_, _, Rewrite::Drop)) => {}
            Some((_, _, Rewrite::FullWidth)) => {
                if let Some(a) = char::from_u32(c as u32 - 0xFEE0) {
                    out.push(a);
                }
            }
            None => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Runs of spaces to one (re-flowed and column-aligned text).
fn collapse(s: &str) -> Cow<'_, str> {
    if !s.contains("  ") {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut prev_space = false;
    for c in s.chars() {
        if c == ' ' {
            if !prev_space {
                out.push(c);
            }
            prev_space = true;
        } else {
            out.push(c);
            prev_space = false;
        }
    }
    Cow::Owned(out)
}

/// Removes the prefixes loggers and launchers repeat on every line, so that the same message
/// from many ranks, hosts and times reads as one: an ISO-8601 timestamp (`2026-11-30 12:00:01,123`,
/// optionally in brackets and followed by a level such as `INFO` or `- ERROR -`), and a host
/// label (`node17: `) when what follows is itself a prefix (timestamp or rank tag).
pub fn strip_log_prefix(line: &str) -> &str {
    let mut rest = line;
    if let Some(after_host) = host_label(rest) {
        if timestamp_len(after_host).is_some() || after_host.starts_with("[rank") {
            rest = after_host;
        }
    }
    if let Some(n) = timestamp_len(rest) {
        rest = rest.get(n..).unwrap_or_default().trim_start();
        rest = strip_level(rest);
    }
    rest
}

/// `host: ` (pdsh / srun -l style) -> what follows it.
fn host_label(s: &str) -> Option<&str> {
    // Cheap rejections first: this runs on every line.
    let b = s.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    let colon = b
        .iter()
        .take(66)
        .position(|&c| c == b':')
        .filter(|&i| b.get(i + 1) == Some(&b' '))?;
    let host = s.get(..colon)?;
    let ok = !host.is_empty()
        && host.len() <= 64
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    ok.then(|| s.get(colon + 2..).unwrap_or_default())
}

/// Length of a leading ISO-8601 date-time, with an optional opening/closing bracket.
fn timestamp_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if !b.first().is_some_and(|c| c.is_ascii_digit() || *c == b'[') {
        return None;
    }
    let start = usize::from(b.first() == Some(&b'['));
    let digits = |from: usize, n: usize| {
        b.get(from..from + n)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let d = start;
    if !(digits(d, 4) && at(d + 4, b'-') && digits(d + 5, 2) && at(d + 7, b'-') && digits(d + 8, 2))
    {
        return None;
    }
    let t = d + 10;
    if !(matches!(b.get(t), Some(b' ') | Some(b'T'))
        && digits(t + 1, 2)
        && at(t + 3, b':')
        && digits(t + 4, 2)
        && at(t + 6, b':')
        && digits(t + 7, 2))
    {
        return None;
    }
    let mut i = t + 9;
    if matches!(b.get(i), Some(b'.') | Some(b',')) {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if at(i, b'Z') {
        i += 1;
    } else if matches!(b.get(i), Some(b'+') | Some(b'-')) && digits(i + 1, 2) {
        i += 3;
        if at(i, b':') {
            i += 1;
        }
        if digits(i, 2) {
            i += 2;
        }
    }
    if start == 1 {
        if !at(i, b']') {
            return None;
        }
        i += 1;
    }
    // A timestamp is followed by a separator, never by more of a word.
    match b.get(i) {
        None | Some(b' ') | Some(b'|') | Some(b':') | Some(b'-') | Some(b'[') => Some(i),
        _ => None,
    }
}

/// A log level right after a timestamp: `INFO`, `| ERROR |`, `- WARNING -`, `[ERROR]`.
fn strip_level(s: &str) -> &str {
    let t = s.trim_start_matches([' ', '|', '-', ':', '[']);
    for level in [
        "CRITICAL", "ERROR", "WARNING", "WARN", "INFO", "DEBUG", "TRACE",
    ] {
        if let Some(after) = t.strip_prefix(level) {
            if after.is_empty() || after.starts_with([' ', ']', '|', ':', '-']) {
                return after.trim_start_matches([' ', ']', '|', ':', '-']);
            }
        }
    }
    s.trim_start_matches([' ', '|'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> String {
        normalize(line).segments().join("\n")
    }

    #[test]
    fn plain_ascii_is_untouched() {
        let l = "RuntimeError: CUDA error: no kernel image is available";
        assert_eq!(normalize(l), Normalized::Same(l));
    }

    #[test]
    fn typographic_quotes_dashes_and_full_width_forms() {
        assert_eq!(
            one("Error loading “C:\\torch\\lib\\c10.dll” or one of its dependencies"),
            "Error loading \"C:\\torch\\lib\\c10.dll\" or one of its dependencies"
        );
        assert_eq!(
            one("xFormers can’t load C++/CUDA extensions — built for"),
            "xFormers can't load C++/CUDA extensions - built for"
        );
        assert_eq!(
            one("RuntimeError：CUDA error：out of memory（GPU 0）"),
            "RuntimeError:CUDA error:out of memory(GPU 0)"
        );
        assert_eq!(one("a\u{00A0}b\u{200B}c…"), "a bc...");
    }

    #[test]
    fn rich_borders_and_space_runs() {
        assert_eq!(
            one("│ RuntimeError: Torch not compiled with CUDA enabled        │"),
            "RuntimeError: Torch not compiled with CUDA enabled"
        );
        assert_eq!(one("found  version    11040"), "found version 11040");
    }

    #[test]
    fn json_escaped_tracebacks_are_split_into_lines() {
        let l = r#"{"msg": "Traceback (most recent call last):\n  File \"x.py\", line 1\nImportError: libcudnn.so.8: cannot open shared object file\n", "level": "error"}"#;
        let segs = normalize(l);
        let segs = segs.segments();
        assert!(segs.contains(&"File \"x.py\", line 1"), "{segs:?}");
        assert!(
            segs.contains(&"ImportError: libcudnn.so.8: cannot open shared object file"),
            "{segs:?}"
        );
        // Colour codes escaped inside JSON go too.
        assert_eq!(
            one(r#""\u001b[31mERROR\u001b[0m x\nsecond\n""#),
            "\"ERROR x\nsecond\n\""
        );
    }

    #[test]
    fn a_message_printed_with_its_arguments_apart_is_formatted() {
        assert_eq!(
            one("RuntimeError: ('The detected CUDA version (%s) mismatches the version that was used to compile PyTorch (%s).', '11.3', '12.8')"),
            "RuntimeError: The detected CUDA version (11.3) mismatches the version that was used to compile PyTorch (12.8)."
        );
        assert_eq!(one("a 50%s share"), "a 50%s share");
    }

    #[test]
    fn windows_paths_keep_their_separators() {
        assert_eq!(
            one(r"Error loading 'C:\\Users\\me\\venv\\lib\\site-packages\\torch\\lib\\c10.dll'"),
            r"Error loading 'C:\Users\me\venv\lib\site-packages\torch\lib\c10.dll'"
        );
        // One `\n` in a path is not an escaped newline.
        assert_eq!(
            one(r"Could not find module 'C:\new\torch\lib\c10.dll'"),
            r"Could not find module 'C:\new\torch\lib\c10.dll'"
        );
        assert_eq!(one(r"C:\tools\cuda"), r"C:\tools\cuda");
    }

    #[test]
    fn log_prefixes() {
        assert_eq!(
            strip_log_prefix("2026-11-30 12:00:01,123 - ERROR - RuntimeError: x"),
            "RuntimeError: x"
        );
        assert_eq!(
            strip_log_prefix("[2026-11-30T12:00:01.5Z] [ERROR] NCCL error"),
            "NCCL error"
        );
        assert_eq!(strip_log_prefix("node17: 2026-11-30 12:00:01 INFO x"), "x");
        assert_eq!(strip_log_prefix("node17: [rank3]: boom"), "[rank3]: boom");
        assert_eq!(
            strip_log_prefix("RuntimeError: CUDA error"),
            "RuntimeError: CUDA error"
        );
        assert_eq!(strip_log_prefix("2026-11-30x"), "2026-11-30x");
    }
}
