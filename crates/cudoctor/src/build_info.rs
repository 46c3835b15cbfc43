//! Which build judged: the version, the commit, the build date (from build.rs) and the date of
//! the knowledge base's data, for `--version` and the header of every JSON report, so that a
//! report pasted into an issue says which build wrote it.

use std::sync::OnceLock;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit the binary was built from (12 hex digits), or "unknown".
pub const COMMIT: &str = env!("CUDOCTOR_COMMIT");
/// The build's date (YYYY-MM-DD, `SOURCE_DATE_EPOCH` when set), or "unknown".
pub const BUILD_DATE: &str = env!("CUDOCTOR_BUILD_DATE");

/// The date of the embedded knowledge base's data (when its sources were last read).
pub fn kb_date() -> &'static str {
    static DATE: OnceLock<String> = OnceLock::new();
    DATE.get_or_init(|| cudoctor_kb::embedded_data_date().unwrap_or_else(|| "unknown".into()))
}

/// What `--version` prints after the name: `0.1.0 (commit 1234abcd5678, built 2026-12-04,
/// knowledge base 2026-12-04)`.
pub fn version_line() -> &'static str {
    static LINE: OnceLock<String> = OnceLock::new();
    LINE.get_or_init(|| {
        format!(
            "{VERSION} (commit {COMMIT}, built {BUILD_DATE}, knowledge base {})",
            kb_date()
        )
    })
}

/// `"build": {...}` as the first member of a JSON report's object.
fn header_member() -> String {
    let s = |v: &str| serde_json::Value::from(v).to_string();
    format!(
        "  \"build\": {{\n    \"version\": {},\n    \"commit\": {},\n    \"built\": {},\n    \"knowledge_base\": {}\n  }},\n",
        s(VERSION),
        s(COMMIT),
        s(BUILD_DATE),
        s(kb_date())
    )
}

/// A pretty-printed JSON report (an object) with the build as its first member; any other JSON
/// is returned as it is.
pub fn with_build_header(json: &str) -> String {
    match json.strip_prefix("{\n") {
        Some(rest) if rest.starts_with("  \"") => format!("{{\n{}{rest}", header_member()),
        _ => json.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_the_first_member_and_the_json_still_parses() {
        let json = with_build_header("{\n  \"schema_version\": 3,\n  \"a\": [\n    1\n  ]\n}\n");
        assert!(
            json.starts_with("{\n  \"build\": {\n    \"version\": "),
            "{json}"
        );
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["build"]["version"], VERSION);
        assert_eq!(v["build"]["commit"], COMMIT);
        assert_eq!(v["schema_version"], 3);
        assert_eq!(with_build_header("[1]"), "[1]");
        assert_eq!(with_build_header("{}"), "{}");
    }

    #[test]
    fn the_version_line_names_commit_build_date_and_knowledge_base() {
        let l = version_line();
        assert!(l.starts_with(VERSION), "{l}");
        assert!(l.contains("commit ") && l.contains("built ") && l.contains("knowledge base 20"));
    }
}
