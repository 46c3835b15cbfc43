//! `--redact`: a report to paste where anyone can read it, with what names the person and the
//! machine replaced: the home directory by `~`, every other home's owner and the user name by
//! `[user]`, the host name by `[host]`. Applied to the rendered report, whatever its format:
//! the marks hold no character that Markdown, HTML or JSON would read as markup.

/// What to replace, found by the caller (the running user's `HOME` and name, the snapshot's
/// host name).
#[derive(Debug, Clone, Default)]
pub struct Redactions {
    home: Option<String>,
    user: Option<String>,
    host: Option<String>,
}

/// Names too common to replace as words: the report's own words would change ("root cause").
const COMMON: [&str; 6] = ["root", "user", "admin", "ubuntu", "debian", "nvidia"];

impl Redactions {
    pub fn new(home: Option<&str>, user: Option<&str>, host: Option<&str>) -> Self {
        let clean = |s: Option<&str>, min: usize| {
            s.map(|s| s.trim().trim_end_matches('/').to_string())
                .filter(|s| s.len() >= min)
        };
        Redactions {
            // `/` as a home would replace every path.
            home: clean(home, 2),
            user: clean(user, 2).filter(|u| !COMMON.contains(&u.as_str())),
            host: clean(host, 2).filter(|h| h != "localhost"),
        }
    }

    /// `text` with the home directory, home owners, the user and the host replaced.
    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        if let Some(home) = &self.home {
            out = replace_bounded(&out, home, "~", |c| !is_path_char(c));
        }
        for base in ["/home/", "/Users/", "\\Users\\", "\\\\Users\\\\"] {
            out = replace_owner(&out, base);
        }
        if let Some(user) = &self.user {
            out = replace_bounded(&out, user, "[user]", ends_name);
        }
        if let Some(host) = &self.host {
            out = replace_bounded(&out, host, "[host]", ends_name);
        }
        out
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// A character after which a name has ended (a full stop ends a sentence, not a name).
fn ends_name(c: char) -> bool {
    !(c.is_alphanumeric() || matches!(c, '_' | '-'))
}

fn is_path_char(c: char) -> bool {
    is_word_char(c) || c == '+'
}

/// Replaces `from` by `to` where the characters on both sides are boundaries (`bound`) and the
/// character before is not part of the same word.
fn replace_bounded(text: &str, from: &str, to: &str, bound: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut prev: Option<char> = None;
    while let Some(i) = rest.find(from) {
        let before = rest[..i].chars().next_back().or(prev);
        let after = rest[i + from.len()..].chars().next();
        let starts_word = from.starts_with('/') || before.is_none_or(|c| !is_word_char(c));
        if starts_word && after.is_none_or(&bound) {
            out.push_str(&rest[..i]);
            out.push_str(to);
        } else {
            out.push_str(&rest[..i + from.len()]);
        }
        prev = from.chars().next_back();
        rest = &rest[i + from.len()..];
    }
    out.push_str(rest);
    out
}

/// `/home/alice/...` -> `/home/[user]/...`: the directory after `base` names a person.
fn replace_owner(text: &str, base: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(base) {
        out.push_str(&rest[..i + base.len()]);
        rest = &rest[i + base.len()..];
        let end = rest.find(|c: char| !is_path_char(c)).unwrap_or(rest.len());
        let owner = &rest[..end];
        if owner.is_empty() || owner.starts_with('[') {
            continue;
        }
        out.push_str("[user]");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_user_and_host_are_replaced_and_nothing_else() {
        let r = Redactions::new(Some("/home/alice/"), Some("alice"), Some("gpu-node-07"));
        let text = "venv /home/alice/proj/.venv; other /home/bob/x; user alice on gpu-node-07.\n\
                    alice2 and malice stay; root cause stays; /homework stays";
        assert_eq!(
            r.apply(text),
            "venv ~/proj/.venv; other /home/[user]/x; user [user] on [host].\n\
             alice2 and malice stay; root cause stays; /homework stays"
        );
    }

    #[test]
    fn common_names_are_not_replaced_as_words() {
        let r = Redactions::new(Some("/root"), Some("root"), Some("localhost"));
        assert_eq!(
            r.apply("/root/.venv: root cause on localhost"),
            "~/.venv: root cause on localhost"
        );
        assert_eq!(r.apply("/rootfs"), "/rootfs");
        assert_eq!(
            Redactions::new(None, None, None).apply("C:\\Users\\Ann\\venv"),
            "C:\\Users\\[user]\\venv"
        );
    }
}
