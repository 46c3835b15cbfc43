//! Dynamic string tokens ($ORIGIN, $LIB, $PLATFORM, also in `${...}` form) and search path
//! lists (DT_RPATH, DT_RUNPATH, LD_LIBRARY_PATH), following glibc's `_dl_dst_substitute`,
//! `is_dst` and `fillin_rpath` (elf/dl-load.c).

/// Values the tokens expand to.
#[derive(Debug, Clone, Copy)]
pub struct DstValues<'a> {
    /// Directory of the object whose path list is expanded; `None` when unknown.
    pub origin: Option<&'a str>,
    pub lib: &'a str,
    pub platform: Option<&'a str>,
}

/// Length of the token name at the start of `input` (after the '$') when it is `name` or
/// `{name}`: the name must not be followed by an identifier character.
fn is_dst(input: &str, name: &str) -> usize {
    let (curly, rest) = match input.strip_prefix('{') {
        Some(r) => (true, r),
        None => (false, input),
    };
    if !rest.starts_with(name) {
        return 0;
    }
    let next = rest.as_bytes().get(name.len()).copied();
    if curly && next != Some(b'}') {
        return 0;
    }
    if next.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
        return 0;
    }
    if curly {
        name.len() + 2
    } else {
        name.len()
    }
}

/// Expand the tokens of one path element. `None` when the element must be discarded (a
/// known token without a value, e.g. $ORIGIN of an object whose directory is unknown).
/// Unknown `$NAME` sequences are kept literally.
pub fn expand(input: &str, v: &DstValues<'_>) -> Option<String> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(rest.get(..pos).unwrap_or_default());
        let after = rest.get(pos + 1..).unwrap_or_default();
        let tokens: [(&str, Option<&str>); 3] = [
            ("ORIGIN", v.origin),
            ("PLATFORM", v.platform),
            ("LIB", Some(v.lib)),
        ];
        let mut matched = false;
        for (name, value) in tokens {
            let len = is_dst(after, name);
            if len != 0 {
                out.push_str(value?);
                rest = after.get(len..).unwrap_or_default();
                matched = true;
                break;
            }
        }
        if !matched {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Some(out)
}

/// Split a path list into search directories as ld.so stores them: tokens expanded, trailing
/// slashes normalised to exactly one, empty elements meaning the current directory (an empty
/// directory string), elements that expand to nothing dropped, duplicates dropped.
pub fn search_dirs(list: &str, separators: &[char], v: &DstValues<'_>) -> Vec<String> {
    search_dirs_capped(list, separators, v).0
}

/// Search directories kept per list: real RPATHs name a handful, and each directory costs a
/// lookup per needed library.
pub const MAX_SEARCH_DIRS: usize = 256;

/// [`search_dirs`], keeping at most [`MAX_SEARCH_DIRS`] directories; the flag says the list
/// had more (the object is then judged on the first ones).
pub fn search_dirs_capped(
    list: &str,
    separators: &[char],
    v: &DstValues<'_>,
) -> (Vec<String>, bool) {
    let mut out: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    for elem in list.split(separators) {
        if out.len() >= MAX_SEARCH_DIRS {
            return (out, true);
        }
        let dir = if elem.is_empty() {
            String::new()
        } else {
            let Some(mut e) = expand(elem, v) else {
                continue;
            };
            if e.is_empty() {
                continue;
            }
            while e.len() > 1 && e.ends_with('/') {
                e.pop();
            }
            if !e.ends_with('/') {
                e.push('/');
            }
            e
        };
        if seen.insert(dir.clone()) {
            out.push(dir);
        }
    }
    (out, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(origin: Option<&str>) -> DstValues<'_> {
        DstValues {
            origin,
            lib: "lib/x86_64-linux-gnu",
            platform: Some("x86_64"),
        }
    }

    #[test]
    fn expands_tokens_like_glibc() {
        let v = vals(Some("/opt/torch/lib"));
        assert_eq!(
            expand("$ORIGIN/../../nvidia/cu13/lib", &v).unwrap(),
            "/opt/torch/lib/../../nvidia/cu13/lib"
        );
        assert_eq!(expand("${ORIGIN}/x", &v).unwrap(), "/opt/torch/lib/x");
        assert_eq!(
            expand("/usr/$LIB/$PLATFORM", &v).unwrap(),
            "/usr/lib/x86_64-linux-gnu/x86_64"
        );
        // An identifier character after the name means it is not the token.
        assert_eq!(expand("$ORIGINAL/x", &v).unwrap(), "$ORIGINAL/x");
        assert_eq!(expand("$LIBS", &v).unwrap(), "$LIBS");
        assert_eq!(expand("${ORIGIN/x", &v).unwrap(), "${ORIGIN/x");
        assert_eq!(expand("$HOME/lib", &v).unwrap(), "$HOME/lib");
        assert_eq!(expand("a$", &v).unwrap(), "a$");
        assert_eq!(expand("$ORIGIN-x", &v).unwrap(), "/opt/torch/lib-x");
        assert_eq!(expand("$ORIGIN/x", &vals(None)), None);
    }

    #[test]
    fn a_list_of_thousands_of_directories_keeps_the_first_ones_and_says_so() {
        let list: String = (0..4500)
            .map(|i| format!("/d{i}"))
            .collect::<Vec<_>>()
            .join(":");
        let started = std::time::Instant::now();
        let (dirs, cut) = search_dirs_capped(&list, &[':'], &vals(None));
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert!(cut);
        assert_eq!(dirs.len(), MAX_SEARCH_DIRS);
        assert_eq!(dirs[0], "/d0/");
        let (few, cut) = search_dirs_capped("/a:/b:/a", &[':'], &vals(None));
        assert!(!cut);
        assert_eq!(few, ["/a/", "/b/"]);
    }

    #[test]
    fn splits_lists_like_fillin_rpath() {
        let v = vals(Some("/o"));
        assert_eq!(
            search_dirs("/a//:$ORIGIN:/a:/", &[':'], &v),
            ["/a/", "/o/", "/"]
        );
        // Empty element: the current directory; $ORIGIN without an origin: dropped.
        assert_eq!(search_dirs("/a::/b", &[':'], &v), ["/a/", "", "/b/"]);
        assert_eq!(search_dirs("$ORIGIN/x:/b", &[':'], &vals(None)), ["/b/"]);
        assert_eq!(search_dirs("/a;/b", &[':', ';'], &v), ["/a/", "/b/"]);
    }
}
