//! Secrets: what marks a variable or a word of text as one, and the text with them replaced.
//! One place for the snapshot's recorded environment and for every line of a log or a
//! program's output that a report echoes (explain's matched lines, run's), so a token pasted in
//! a log never reaches a report, a terminal or a shared JSON file.

/// What is written in place of a secret: the report still says something was there.
pub const REDACTED: &str = "<redacted>";

/// Parts of a name that mark its value as a secret (matched in upper case).
const SECRET_NAME_PARTS: &[&str] = &[
    "TOKEN",
    "KEY",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
];

/// Value prefixes of well-known API keys, secret whatever the variable is called.
const SECRET_VALUE_PREFIXES: &[&str] = &[
    "nvapi-",
    "hf_",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "glpat-",
    "sk-",
    "xoxb-",
    "xoxp-",
    "AKIA",
];

/// True when a name (a variable, a key of `key=value`) says its value is a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|p| upper.contains(p))
}

/// True when a variable's name or value says it holds a secret.
pub fn is_secret(name: &str, value: &str) -> bool {
    is_secret_name(name) || SECRET_VALUE_PREFIXES.iter().any(|p| value.starts_with(p))
}

/// `scheme://user:password@host/...` with the credentials replaced, wherever a URL appears in
/// `value` (a list of URLs, a proxy).
pub fn redact_url_credentials(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || c == ',' || c == ';')
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str(REDACTED);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// A character of a word a key or a token is made of.
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// A key of free text whose value is a secret: its last part (`HF_TOKEN`, `api-key`,
/// `Authorization`, `password`) ends as a secret's name does; `KeyError` or `key_size` is none.
fn names_secret(key: &str) -> bool {
    let key = key.trim_start_matches('-');
    let last = key.rsplit(['_', '-', '.']).next().unwrap_or(key);
    let upper = last.to_ascii_uppercase();
    !upper.is_empty()
        && (SECRET_NAME_PARTS.iter().any(|p| upper.ends_with(p)) || upper == "AUTHORIZATION")
}

/// How a secret's key hands its value on.
#[derive(Clone, Copy, PartialEq)]
enum Pending {
    /// `key=value`, `key: value`, `"key": "value"`.
    Assigned,
    /// `--key value`, `Bearer value`: after spaces too.
    Spaced,
}

/// A line of free text (a log line, a program's output) with its secrets replaced: the
/// credentials of URLs; the value after `NAME=`, `NAME: ` or `--name ` where the name says
/// secret (`HF_TOKEN=…`, `Authorization: Bearer …`, `--api-key …`); and any word that starts
/// as a well-known API key does (`hf_…`, `ghp_…`, `sk-…`, long enough to be one). Linear in the
/// line; a line without secrets comes back as it was.
pub fn redact_text(line: &str) -> String {
    let line = redact_url_credentials(line);
    let mut out = String::with_capacity(line.len());
    let mut pending: Option<Pending> = None;
    let mut rest = line.as_str();
    while !rest.is_empty() {
        let start = rest.find(word_char).unwrap_or(rest.len());
        let (sep, tail) = rest.split_at(start);
        out.push_str(sep);
        if tail.is_empty() {
            break;
        }
        let end = tail.find(|c: char| !word_char(c)).unwrap_or(tail.len());
        let (word, after) = tail.split_at(end);
        let quiet = !sep.is_empty()
            && sep
                .chars()
                .all(|c| matches!(c, '=' | ':' | ' ' | '\t' | '"' | '\''));
        let hands_on = match pending {
            Some(Pending::Assigned) => quiet && sep.contains(['=', ':']),
            Some(Pending::Spaced) => quiet,
            None => false,
        };
        let token = SECRET_VALUE_PREFIXES
            .iter()
            .any(|p| word.starts_with(p) && word.len() >= p.len() + 16);
        let scheme = word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("basic");
        if hands_on && scheme {
            out.push_str(word);
            pending = Some(Pending::Spaced);
        } else if token || hands_on {
            out.push_str(REDACTED);
            pending = None;
        } else {
            out.push_str(word);
            pending = if !names_secret(word) {
                None
            } else if after.starts_with(['=', ':', '"', '\'']) {
                Some(Pending::Assigned)
            } else if word.starts_with('-') && after.starts_with(' ') {
                Some(Pending::Spaced)
            } else {
                None
            };
        }
        rest = after;
    }
    out
}

/// A command line with its secrets replaced: the word after a flag that names one
/// (`--hf-token X`), and each word as [`redact_text`] reads it (`--token=X`, a URL's
/// credentials, a well-known key).
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut after_flag = false;
    for word in argv {
        if after_flag {
            out.push(REDACTED.to_string());
            after_flag = false;
            continue;
        }
        after_flag = word.starts_with('-') && !word.contains('=') && names_secret(word);
        out.push(redact_text(word));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_keep_their_words_but_not_their_secrets() {
        let argv: Vec<String> = [
            "python",
            "train.py",
            "--hf-token",
            "abc123",
            "--api_key=xyz",
            "https://u:p@h/x",
            "--lr",
            "0.1",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            redact_argv(&argv),
            [
                "python",
                "train.py",
                "--hf-token",
                "<redacted>",
                "--api_key=<redacted>",
                "https://<redacted>@h/x",
                "--lr",
                "0.1"
            ]
        );
    }

    #[test]
    fn secrets_in_log_lines_are_replaced_and_the_rest_kept() {
        let cases = [
            (
                "export HF_TOKEN=hf_AbCdEfGhIjKlMnOp",
                "export HF_TOKEN=<redacted>",
            ),
            (
                "curl -H \"Authorization: Bearer sk-live-SECRET\" x",
                "curl -H \"Authorization: Bearer <redacted>\" x",
            ),
            (
                "pip install --index-url https://bob:pa55@pypi.corp/simple torch",
                "pip install --index-url https://<redacted>@pypi.corp/simple torch",
            ),
            (
                "error token=ghp_0123456789abcdefghij at x",
                "error token=<redacted> at x",
            ),
            (
                "login --api-key abc123def rest",
                "login --api-key <redacted> rest",
            ),
            (
                "the key ghp_0123456789abcdefghij leaked",
                "the key <redacted> leaked",
            ),
            (
                r#"{"hf_token": "abc123", "n": 1}"#,
                r#"{"hf_token": "<redacted>", "n": 1}"#,
            ),
            ("password: hunter2", "password: <redacted>"),
        ];
        for (line, want) in cases {
            assert_eq!(redact_text(line), want, "{line}");
        }
    }

    #[test]
    fn ordinary_log_lines_are_left_as_they_are() {
        for line in [
            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "NCCL WARN Cuda failure 'invalid device ordinal'",
            "KeyError: 'model.layers.0.weight'",
            "the key is missing: use --force",
            "ImportError: libcudnn.so.9: cannot open shared object file",
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
            "skipping sk-1 task and sk-learn",
            "Missing key(s) in state_dict: \"fc.weight\"",
            "max_tokens=4096 key_size: 16",
            "",
        ] {
            assert_eq!(redact_text(line), line);
        }
    }
}
