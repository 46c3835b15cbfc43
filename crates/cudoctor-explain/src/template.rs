//! `{field}` placeholders in cause and fix texts.

use std::collections::BTreeMap;

/// The names of the `{placeholders}` in a template, in order of appearance.
pub fn placeholders(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let name = &after[..close];
                if is_ident(name) {
                    out.push(name);
                }
                rest = &after[close + 1..];
            }
            None => break,
        }
    }
    out
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Fills the placeholders: a field's value, else the signature's default for it, else "unknown"
/// (the data tests make sure the last case never happens for the built-in signatures).
pub fn render(
    template: &str,
    fields: &BTreeMap<String, String>,
    defaults: &BTreeMap<String, String>,
) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_ident(&after[..close]) => {
                let name = &after[..close];
                let value = fields
                    .get(name)
                    .or_else(|| defaults.get(name))
                    .map(String::as_str)
                    .unwrap_or("unknown");
                out.push_str(value);
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_fields_defaults_and_literals() {
        let mut f = BTreeMap::new();
        f.insert("a".to_string(), "1".to_string());
        let mut d = BTreeMap::new();
        d.insert("b".to_string(), "two".to_string());
        assert_eq!(
            render("x {a} {b} {c} {not valid} {", &f, &d),
            "x 1 two unknown {not valid} {"
        );
        assert_eq!(placeholders("{a} and {b_c} {x y}"), vec!["a", "b_c"]);
    }
}
