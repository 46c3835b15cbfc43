//! Values from the inspected machine made inert for display: package names, file names,
//! variables and tool output can hold terminal escape sequences, newlines, Markdown or HTML. One
//! sanitiser per output kind, used by every renderer, so a hostile name shows as what it is and
//! never moves the cursor, retitles the terminal, leaves its table cell or becomes markup.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Characters a terminal or a reader could take for something else: C0 and C1 controls, DEL,
/// and the invisible format characters that reorder or hide text (bidirectional overrides and
/// isolates, zero-width characters, the byte-order mark); also the stand-ins of file-name bytes
/// that are not UTF-8, shown as the byte.
pub fn is_hostile(c: char) -> bool {
    c.is_control()
        || crate::os_text::kept_byte(c).is_some()
        || matches!(c,
            // soft hyphen, Arabic letter mark, Mongolian vowel separator
            '\u{ad}' | '\u{61c}' | '\u{180e}'
            // zero-width space/joiners, LRM/RLM
            | '\u{200b}'..='\u{200f}'
            // line and paragraph separators, bidirectional embeddings and overrides
            | '\u{2028}'..='\u{202e}'
            // word joiner, invisible operators, bidirectional isolates, deprecated formats
            | '\u{2060}'..='\u{206f}'
            | '\u{feff}'
            // interlinear annotation
            | '\u{fff9}'..='\u{fffb}'
            // tag characters (they spell hidden text)
            | '\u{e0000}'..='\u{e007f}')
}

fn escape_into(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{1b}' => out.push_str("\\e"),
        // A byte of a file name that is not UTF-8 (crate::os_text): shown as that byte.
        c if crate::os_text::kept_byte(c).is_some() => {
            let _ = write!(out, "\\x{:02x}", crate::os_text::kept_byte(c).unwrap_or(0));
        }
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        // JSON's form, so the guard leaves JSON valid: `\u202e`, and a character past the
        // BMP (a tag character) as its UTF-16 surrogate pair, `\udb40\udc41`.
        c => {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{:04x}", u);
            }
        }
    }
}

/// One line for a terminal: every control and format character written as a visible escape
/// (`\e`, `\n`, `\x07`, `\u202e`), the rest unchanged.
pub fn line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_hostile) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_hostile(c) {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text of several lines for a terminal: like [`line`], but newlines and tabs stay.
pub fn text(s: &str) -> Cow<'_, str> {
    let keep = |c: char| c == '\n' || c == '\t';
    if !s.chars().any(|c| is_hostile(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_hostile(c) && !keep(c) {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The longest line of an error message shown, in characters, and the most lines.
const MESSAGE_LINE: usize = 1000;
const MESSAGE_LINES: usize = 60;

/// An error message for a terminal: as [`text`], each line cut at 1,000 characters and the
/// whole at 60 lines, each cut said. A parser's error quoting a hostile input (a TOML file of
/// one 400 KB line) stays a message, not a copy of the input.
pub fn message(s: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = s.split('\n').collect();
    for (i, l) in lines.iter().take(MESSAGE_LINES).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let chars = l.chars().count();
        if chars > MESSAGE_LINE {
            let head: String = l.chars().take(MESSAGE_LINE).collect();
            out.push_str(&text(&head));
            let _ = write!(out, "… ({} more characters)", chars - MESSAGE_LINE);
        } else {
            out.push_str(&text(l));
        }
    }
    if lines.len() > MESSAGE_LINES {
        let _ = write!(out, "\n… ({} more lines)", lines.len() - MESSAGE_LINES);
    }
    out
}

/// Report text on its way to a terminal or file, the last guard of every renderer: like
/// [`text`], except that with `colour` the exact colour sequences the renderers write
/// (`ESC [ digits ; … m`) pass. A hostile value that gets this far can at most colour itself.
pub fn output(s: &str, colour: bool) -> Cow<'_, str> {
    // Stand-ins of file-name bytes act on nothing and are valid in JSON: left as they are.
    let acts =
        |c: char| is_hostile(c) && c != '\n' && c != '\t' && crate::os_text::kept_byte(c).is_none();
    if !s.chars().any(acts) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if colour && c == '\u{1b}' {
            if let Some(n) = sgr_len(rest) {
                out.push_str(&rest[..n]);
                rest = &rest[n..];
                continue;
            }
        }
        if acts(c) {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// Length of a Select Graphic Rendition sequence at the start of `s` (`\e[1;31m`), if any.
fn sgr_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\u{1b}[")?;
    let params = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    (params <= 16 && body.as_bytes().get(params) == Some(&b'm')).then_some(2 + params + 1)
}

/// A value inside Markdown prose or a table cell: on one line, with every character Markdown
/// or HTML would interpret escaped (`<`, `>`, `&` as entities; `` \ ` * [ ] | ~ `` and a `_`
/// that could start or end emphasis with a backslash), so it renders as the literal text. A `_`
/// between letters or digits (`x86_64`, `LD_LIBRARY_PATH`) stays: it never emphasises.
pub fn markdown(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let word = |i: Option<usize>| {
        i.and_then(|i| chars.get(i))
            .is_some_and(|c| c.is_alphanumeric())
    };
    let mut out = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        match c {
            c if is_hostile(c) => escape_into(&mut out, c),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '_' if word(i.checked_sub(1)) && word(Some(i + 1)) => out.push('_'),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A Markdown code span holding `s`: on one line, fenced with more backticks than `s` holds in a
/// row, pipes escaped (GitHub tables split code spans at a bare `|`).
pub fn markdown_code(s: &str) -> String {
    let flat = line(s).replace('|', "\\|");
    let fence = "`".repeat(longest_run(&flat, '`') + 1);
    let pad = if flat.starts_with('`') || flat.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{flat}{pad}{fence}")
}

/// The fence for a Markdown code block holding `body`: longer than any backtick run in it, so
/// no line of the body can end the block.
pub fn markdown_fence(body: &str) -> String {
    "`".repeat(longest_run(body, '`').max(2) + 1)
}

fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut cur) = (0, 0);
    for x in s.chars() {
        cur = if x == c { cur + 1 } else { 0 };
        best = best.max(cur);
    }
    best
}

/// Text for HTML element content or a quoted attribute: `& < > " '` as entities, control and
/// format characters as visible escapes (newlines and tabs kept when `multiline`).
pub fn html(s: &str, multiline: bool) -> String {
    let shown = if multiline { text(s) } else { line(s) };
    let mut out = String::with_capacity(shown.len() + 8);
    for c in shown.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_message_quoting_a_huge_input_is_cut_and_says_so() {
        let long = format!("bad file: {}\nsecond\x1b[31m", "[".repeat(400_000));
        let m = message(&long);
        assert!(m.len() < 1200, "{}", m.len());
        assert!(m.contains("more characters)"));
        assert!(m.ends_with("second\\e[31m"), "{m}");
        let many = "x\n".repeat(1000);
        assert!(message(&many).ends_with("more lines)"));
        assert_eq!(message("plain\nmessage"), "plain\nmessage");
    }

    use super::*;

    const HOSTILE: &str = "a\u{1b}[2J\u{1b}]0;title\u{7}b\nc\r\u{202e}d\u{9b}31m";

    #[test]
    fn a_line_keeps_nothing_a_terminal_acts_on() {
        let l = line(HOSTILE);
        assert_eq!(l, "a\\e[2J\\e]0;title\\x07b\\nc\\r\\u202ed\\u009b31m");
        assert!(!l.chars().any(is_hostile));
        assert!(matches!(line("torch 2.11.0+cu130"), Cow::Borrowed(_)));
    }

    #[test]
    fn invisible_and_bidirectional_characters_are_shown_as_escapes() {
        let hidden = "a\u{61c}\u{ad}\u{2060}\u{2064}\u{2028}\u{2029}\u{feff}\u{e0041}\u{e007f}b";
        assert_eq!(
            line(hidden),
            "a\\u061c\\u00ad\\u2060\\u2064\\u2028\\u2029\\ufeff\\udb40\\udc41\\udb40\\udc7fb"
        );
        // Inside JSON the escapes are JSON's own, so the value reads back unchanged.
        let json = format!("\"{}\"", hidden);
        let guarded = output(&json, false);
        let back: String = serde_json::from_str(&guarded).unwrap();
        assert_eq!(back, hidden);
        // Ordinary text outside the Latin script stays.
        assert!(matches!(line("café ÿ 日本 עברית"), Cow::Borrowed(_)));
    }

    #[test]
    fn text_keeps_its_lines_and_output_keeps_only_colour() {
        assert_eq!(text("a\nb\u{1b}[1m"), "a\nb\\e[1m");
        let painted = "\u{1b}[1;31merror\u{1b}[0m x\u{1b}]8;;http://e\u{7}";
        assert_eq!(
            output(painted, true),
            "\u{1b}[1;31merror\u{1b}[0m x\\e]8;;http://e\\x07"
        );
        assert_eq!(
            output(painted, false),
            "\\e[1;31merror\\e[0m x\\e]8;;http://e\\x07"
        );
        assert_eq!(output("\u{1b}[", true), "\\e[");
    }

    #[test]
    fn markdown_values_render_as_their_text() {
        assert_eq!(
            markdown("<img src=x onerror=alert(1)>|*a*\nb"),
            "&lt;img src=x onerror=alert(1)&gt;\\|\\*a\\*\\nb"
        );
        assert_eq!(
            markdown("x86_64 __init__ [a](b)"),
            "x86_64 \\_\\_init\\_\\_ \\[a\\](b)"
        );
        assert_eq!(markdown_code("a`b|c"), "``a`b\\|c``");
        assert_eq!(markdown_code("`x"), "`` `x ``");
        assert_eq!(markdown_fence("x\n```\ny"), "````");
        assert_eq!(markdown_fence("plain"), "```");
    }

    #[test]
    fn html_escapes_markup_and_controls() {
        assert_eq!(
            html("<script>\"'&\u{1b}\n", false),
            "&lt;script&gt;&quot;&#39;&amp;\\e\\n"
        );
        assert_eq!(html("a\nb", true), "a\nb");
    }
}
