//! Fixes as data (the step type is `cudoctor_report::FixStep`), and the one quoting of the
//! words commands are made of.

pub use cudoctor_report::FixStep;

/// A word for a POSIX shell: unchanged when it holds only characters no shell treats
/// specially, else in single quotes (a `'` inside written as `'\''`). A word with control or
/// invisible format characters (a newline, an escape sequence, a bidi override) is written `$'...'` with those as escapes, so the
/// command stays on one line, shows nothing a terminal acts on, and still names the exact value
/// (ANSI-C quoting: POSIX.1-2024, bash, zsh, ksh, busybox). The one place command builders quote
/// paths and other values taken from the machine.
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b));
    if plain {
        word.to_string()
    } else if word.chars().any(cudoctor_types::inert::is_hostile) {
        // A stand-in of a file-name byte (cudoctor_types::os_text) is written as that byte.
        quote_bytes(&cudoctor_types::os_text::to_bytes(word))
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A word of raw bytes (a file name that is not UTF-8) for a shell: as [`quote`] when it is
/// text; else `$'...'` with every byte outside printable ASCII (and `'`) as `\xHH`, so the
/// command names the real file. A shell without ANSI-C quoting (dash before 0.5.13) reads it as
/// `$` and one single-quoted word: a wrong name, never code.
pub fn quote_bytes(word: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(word) {
        if !text.chars().any(cudoctor_types::inert::is_hostile) {
            return quote(text);
        }
    }
    let mut out = String::from("$'");
    for &b in word {
        match b {
            b'\\' => out.push_str("\\\\"),
            // Not `\'`: a shell without `$'...'` reads `$` and a single-quoted word, and
            // must find no quote inside that ends it early.
            b'\'' => out.push_str("\\x27"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    out
}

/// A path for PowerShell, always in single quotes (a Windows path is quoted even when plain, so
/// every printed path reads the same way): `'C:\Program Files\x'`, with `'` written `''`.
pub fn quote_powershell_path(path: &str) -> String {
    let q = quote_powershell(path);
    if q.starts_with(['\'', '"']) {
        q
    } else {
        format!("'{q}'")
    }
}

/// A PowerShell statement setting a variable for the session and the programs it starts:
/// `$env:NAME = 'value'`, the value always in single quotes (nothing in it expands).
pub fn powershell_set_env(name: &str, value: &str) -> String {
    format!("$env:{name} = {}", quote_powershell_path(value))
}

/// A word for PowerShell (for commands printed for Windows): unchanged when plain, else in
/// single quotes, where nothing expands and a `'` is written `''`. PowerShell also reads the
/// typographic quotes U+2018/U+2019 as quote marks, so they are doubled too. A word holding a
/// control or invisible character (a newline, an escape, a bidirectional override) is written in
/// double quotes instead, one line, each such character as `$([char]0xNN)` and every character
/// PowerShell would expand or end the string on (`$`, the backtick, the straight and typographic
/// double quotes) escaped with a backtick: the command names the real file and never spans lines.
pub fn quote_powershell(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/\\._-+=:,".contains(&b));
    if plain {
        return word.to_string();
    }
    if word.chars().any(cudoctor_types::inert::is_hostile) {
        let mut out = String::with_capacity(word.len() + 16);
        out.push('"');
        for c in word.chars() {
            if cudoctor_types::inert::is_hostile(c) {
                let code = cudoctor_types::os_text::kept_byte(c).map_or(c as u32, u32::from);
                if code > 0xffff {
                    // Past the BMP: PowerShell's [char] is one UTF-16 unit.
                    out.push_str(&format!("$([char]::ConvertFromUtf32(0x{code:x}))"));
                } else {
                    out.push_str(&format!("$([char]0x{code:x})"));
                }
            } else {
                if matches!(c, '$' | '`' | '"' | '\u{201c}' | '\u{201d}' | '\u{201e}') {
                    out.push('`');
                }
                out.push(c);
            }
        }
        out.push('"');
        return out;
    }
    let mut out = String::with_capacity(word.len() + 2);
    out.push('\'');
    for c in word.chars() {
        if matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}') {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// Text for the `# comment` that ends a command line: a value from the machine there must not
/// end the comment with a newline (the next line would run), so control characters become
/// spaces.
pub fn comment(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `command <<'DELIM'`, then `body`, then `DELIM`: a here-document whose quoted delimiter keeps
/// the body from expanding, with a delimiter that no line of the body equals (a body line
/// `EOF` would otherwise end it early and run the rest).
pub fn heredoc(command: &str, body: &str) -> String {
    let body = body.strip_suffix('\n').unwrap_or(body);
    let mut delim = "EOF".to_string();
    let mut n = 0;
    while body.lines().any(|l| l == delim) {
        n += 1;
        delim = format!("EOF_{n}");
    }
    format!("{command} <<'{delim}'\n{body}\n{delim}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_hostile_words_in_a_real_shell() {
        let words = [
            "/home/a b/venv",
            "it's",
            "$(touch pwned)",
            "`touch pwned`",
            "\"double\" and 'single'",
            "*?[]{}~!#&|;<>\\",
            "",
        ];
        for w in words {
            let out = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(w)))
                .output()
                .expect("sh");
            assert_eq!(String::from_utf8_lossy(&out.stdout), w, "quote({w:?})");
        }
    }

    #[test]
    fn control_characters_and_raw_bytes_are_written_as_escapes_a_shell_restores() {
        let words: [&[u8]; 5] = [
            b"a\nb",
            b"/opt/v\x1b[31m'x\\y\x07",
            b"caf\xc3\xa9\x9b",
            b"/opt/\xff\xfe/venv",
            b"$(: >pwned)\n`: >pwned`",
        ];
        for w in words {
            let q = quote_bytes(w);
            assert!(q.starts_with("$'") && q.is_ascii(), "{q}");
            assert!(!q.bytes().any(|b| b.is_ascii_control()), "{q}");
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(format!("printf %s {q}"))
                .output()
                .expect("bash");
            assert_eq!(out.stdout, w, "quote_bytes({w:?}) = {q}");
        }
        assert_eq!(quote("a\nb"), "$'a\\nb'");
        // A file name that is not UTF-8, as the machine's paths carry it: its real bytes.
        let kept = cudoctor_types::os_text::from_bytes(b"/v/lib\xff.so");
        assert_eq!(quote(&kept), "$'/v/lib\\xff.so'");
        assert_eq!(quote_bytes(b"/plain/path"), "/plain/path");
        assert_eq!(quote_bytes(b"/a b"), "'/a b'");
    }

    #[test]
    fn powershell_words_with_controls_stay_one_line_and_expand_nothing() {
        let q = quote_powershell("C:\\a\nb $(calc) `x` \"q\" \u{202e}\u{1b}[31m");
        assert!(!q.contains(['\n', '\r', '\u{1b}', '\u{202e}']), "{q}");
        assert_eq!(
            q,
            "\"C:\\a$([char]0xa)b `$(calc) ``x`` `\"q`\" $([char]0x202e)$([char]0x1b)[31m\""
        );
        assert_eq!(quote_powershell_path("a\nb"), "\"a$([char]0xa)b\"");
        assert_eq!(
            quote_powershell("t\u{e0041}"),
            "\"t$([char]::ConvertFromUtf32(0xe0041))\""
        );
    }

    #[test]
    fn powershell_quoting_doubles_quotes_and_leaves_plain_words() {
        assert_eq!(
            quote_powershell(r"C:\Python312\python.exe"),
            r"C:\Python312\python.exe"
        );
        assert_eq!(
            quote_powershell("C:\\Program Files\\x"),
            "'C:\\Program Files\\x'"
        );
        assert_eq!(quote_powershell("it's"), "'it''s'");
        assert_eq!(quote_powershell("$(calc)"), "'$(calc)'");
        assert_eq!(quote_powershell("`n"), "'`n'");
        assert_eq!(quote_powershell("a\u{2019}b"), "'a\u{2019}\u{2019}b'");
        assert_eq!(quote_powershell(""), "''");
    }

    #[test]
    fn comments_stay_on_their_line_and_heredocs_end_where_they_should() {
        assert_eq!(comment("a\nrm -rf x\r"), "a rm -rf x ");
        assert_eq!(
            heredoc("cudoctor explain", "boom\n"),
            "cudoctor explain <<'EOF'\nboom\nEOF"
        );
        let h = heredoc("cat", "x\nEOF\n$(: >pwned)");
        assert!(h.ends_with("\nEOF_1"), "{h}");
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&h)
            .output()
            .expect("sh");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "x\nEOF\n$(: >pwned)\n"
        );
    }

    #[test]
    fn quoting_leaves_plain_words_and_protects_the_rest() {
        assert_eq!(quote("/opt/venv/bin/python"), "/opt/venv/bin/python");
        assert_eq!(quote("torch==2.11.0+cu130"), "torch==2.11.0+cu130");
        assert_eq!(quote("/home/a b/venv"), "'/home/a b/venv'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$HOME"), "'$HOME'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn steps_serialise_with_their_kind() {
        let s = serde_json::to_string(&[
            FixStep::Shell("nvidia-smi".into()),
            FixStep::Prose("Reboot.".into()),
        ])
        .unwrap();
        assert_eq!(s, r#"[{"shell":"nvidia-smi"},{"prose":"Reboot."}]"#);
        assert!(FixStep::Shell("nvidia-smi -L".into()).contains("-L"));
    }
}
