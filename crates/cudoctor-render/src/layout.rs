//! Text layout shared by the terminal reports: the terminal's width ([`width`]), long prose
//! wrapped with a hanging indent and never cut inside a word, long commands continued with ` \`
//! where the shell allows it (or left whole on their own line), long paths shortened by a legend
//! printed once (`<env> = /opt/venv`), C++ symbols demangled.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The widest layout: a terminal wider than this still gets lines of this width (prose
/// longer than that is hard to read), and the width reports are laid out for where no width
/// was set (library use, tests).
pub const MAX_WIDTH: usize = 120;
/// The narrowest width honoured: narrower asks get this (a hanging indent needs room).
pub const MIN_WIDTH: usize = 40;
/// The width where the terminal's is unknown (output piped to a file or another program).
pub const DEFAULT_WIDTH: usize = 80;

static PROCESS_WIDTH: AtomicUsize = AtomicUsize::new(MAX_WIDTH);

thread_local! {
    static THREAD_WIDTH: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The width text reports are laid out for: the one [`with_width`] set for this thread, else
/// the one [`set_width`] set for the process, else [`MAX_WIDTH`].
pub fn width() -> usize {
    THREAD_WIDTH
        .with(Cell::get)
        .unwrap_or_else(|| PROCESS_WIDTH.load(Ordering::Relaxed))
}

/// Lays out every later report of the process for `columns` (clamped to
/// [`MIN_WIDTH`]..=[`MAX_WIDTH`]); the binary calls it once with the terminal's width.
pub fn set_width(columns: usize) {
    PROCESS_WIDTH.store(columns.clamp(MIN_WIDTH, MAX_WIDTH), Ordering::Relaxed);
}

/// Runs `render` with reports laid out for `columns` on this thread (tests at 80, 100, 120).
pub fn with_width<T>(columns: usize, render: impl FnOnce() -> T) -> T {
    let before = THREAD_WIDTH.with(|w| w.replace(Some(columns.clamp(MIN_WIDTH, MAX_WIDTH))));
    let out = render();
    THREAD_WIDTH.with(|w| w.set(before));
    out
}

/// The width for a terminal report: `COLUMNS` where it is a number (the user asked), else the
/// terminal's own width where output is a terminal (`tty_columns`, from TIOCGWINSZ), else
/// [`DEFAULT_WIDTH`]; never wider than asked, at most [`MAX_WIDTH`].
pub fn terminal_width(columns_var: Option<&str>, tty_columns: Option<usize>) -> usize {
    columns_var
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or(tty_columns.filter(|&c| c > 0))
        .unwrap_or(DEFAULT_WIDTH)
        .clamp(MIN_WIDTH, MAX_WIDTH)
}

/// Wraps `text` at word boundaries so that `first` + text fits `width`; continuation lines start
/// with `rest`. A list ("a 1.0, b 2.0, c 3.0") breaks after its commas only, so an item stays
/// on one line. A single word longer than the line stays whole (a path is not cut).
pub fn wrap(first: &str, rest: &str, text: &str, width: usize) -> String {
    // A line that fits stays exactly as written (its double spaces are columns).
    if visible_len(first) + visible_len(text) <= width && !text.contains('\n') {
        return format!("{first}{text}").trim_end().to_string();
    }
    let words = text.split(' ').filter(|w| !w.is_empty());
    // A list, not a sentence: commas between items and no sentence ending inside.
    let sentence_inside = text
        .trim_end()
        .trim_end_matches('.')
        .split(' ')
        .any(|w| w.ends_with('.') || w.ends_with(':'));
    let units: Vec<String> = if text.matches(", ").count() >= 2 && !sentence_inside {
        let mut units: Vec<String> = Vec::new();
        let mut open = false;
        for w in words {
            match units.last_mut() {
                Some(u) if open => {
                    u.push(' ');
                    u.push_str(w);
                }
                _ => units.push(w.to_string()),
            }
            open = !w.ends_with(',');
        }
        units
    } else {
        Vec::new()
    };
    // Items are short ("name version"); long pieces between commas are clauses of a sentence,
    // which wrap at any word.
    let room = width.saturating_sub(visible_len(rest));
    let is_list = units.len() >= 3
        && units
            .iter()
            .take(units.len() - 1)
            .all(|u| u.split(' ').count() <= 4 && visible_len(u) <= room);
    let units: Vec<String> = if is_list {
        units
    } else {
        text.split(' ')
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut out = String::new();
    let mut line = first.to_string();
    let mut line_has_word = false;
    for word in &units {
        let fits = visible_len(&line) + usize::from(line_has_word) + visible_len(word) <= width;
        if line_has_word && !fits {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            line_has_word = false;
        }
        if line_has_word {
            line.push(' ');
        }
        line.push_str(word);
        line_has_word = true;
    }
    out.push_str(line.trim_end());
    out
}

/// Characters a terminal shows: ANSI colour sequences take no column.
pub fn visible_len(s: &str) -> usize {
    let mut n = 0;
    let mut in_escape = false;
    for c in s.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// Splits one shell command line that is longer than `width` into lines joined by ` \`, at
/// spaces outside quotes. A line holding a here-document, a comment or a backslash is left
/// whole: a continuation there would change what the shell runs.
pub fn continue_command(first: &str, rest: &str, command: &str, width: usize) -> Vec<String> {
    if visible_len(first) + command.len() <= width
        || command.contains("<<")
        || command.contains('\\')
        || command.contains('#')
    {
        return vec![format!("{first}{command}")];
    }
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in command.chars() {
        match (quote, c) {
            (None, ' ') => {
                if !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
                continue;
            }
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
        current.push(c);
    }
    if quote.is_some() {
        return vec![format!("{first}{command}")];
    }
    if !current.is_empty() {
        words.push(current);
    }
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut has_word = false;
    for w in words {
        // Room for the word and, if more follows, for " \".
        if has_word && visible_len(&line) + 1 + w.len() + 2 > width {
            line.push_str(" \\");
            lines.push(line);
            line = rest.to_string();
            has_word = false;
        }
        if has_word {
            line.push(' ');
        }
        line.push_str(&w);
        has_word = true;
    }
    lines.push(line);
    lines
}

/// A command as a report shows it: one line continued with ` \` where it is too long
/// ([`continue_command`]); a command of several lines (a here-document) keeps its own lines,
/// the later ones as written.
pub fn command_lines(first: &str, rest: &str, command: &str) -> Vec<String> {
    if command.contains('\n') {
        return vec![format!("{first}{command}")];
    }
    continue_command(first, rest, command, width())
}

/// Long directory names shown once as `<name> = /the/path` and then by name.
#[derive(Debug, Clone, Default)]
pub struct Legend {
    /// (name, path), longest path first: the order paths are replaced in.
    entries: Vec<(String, String)>,
    /// Names in the order they were added: the order the legend is printed in.
    order: Vec<String>,
}

impl Legend {
    /// Adds `name` for `path` (deepest paths first when shortening). A short path is shown
    /// as it is: a legend line would cost more than it saves.
    pub fn add(&mut self, name: &str, path: &str) {
        // Kept as shown: a hostile directory name stays one visible line in the legend.
        let path = cudoctor_types::inert::line(path);
        let path = path.trim_end_matches('/');
        if path.len() >= 24 && !self.entries.iter().any(|(_, p)| p == path) {
            self.entries.push((name.to_string(), path.to_string()));
            self.order.push(name.to_string());
            self.entries
                .sort_by_key(|(_, p)| std::cmp::Reverse(p.len()));
        }
    }

    /// The legend for the names that the shortened `texts` really use (and the names those
    /// legend lines use in turn), shortest path first.
    pub fn lines<'a>(&self, texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let shortened: Vec<String> = texts.into_iter().map(|t| self.shorten(t)).collect();
        let mut used: Vec<&(String, String)> = self
            .entries
            .iter()
            .filter(|(n, _)| shortened.iter().any(|t| t.contains(n.as_str())))
            .collect();
        loop {
            let more: Vec<&(String, String)> = self
                .entries
                .iter()
                .filter(|e| !used.contains(e))
                .filter(|(n, _)| {
                    used.iter()
                        .any(|(m, p)| self.shorten_inner(p, Some(m)).contains(n.as_str()))
                })
                .collect();
            if more.is_empty() {
                break;
            }
            used.extend(more);
        }
        used.sort_by_key(|(n, _)| self.order.iter().position(|o| o == n));
        used.iter()
            .map(|(n, p)| format!("{n} = {}", self.shorten_inner(p, Some(n))))
            .collect()
    }

    /// `text` with every legend path replaced by its name (at a path boundary only).
    pub fn shorten(&self, text: &str) -> String {
        self.shorten_inner(text, None)
    }

    /// `text` as one visible line (see [`cudoctor_types::inert::line`], which is idempotent),
    /// with the legend's paths replaced by their names.
    fn shorten_inner(&self, text: &str, skip: Option<&str>) -> String {
        let mut out = cudoctor_types::inert::line(text).into_owned();
        for (name, path) in &self.entries {
            if Some(name.as_str()) == skip {
                continue;
            }
            out = replace_at_boundary(&out, path, name);
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Replaces `path` by `name` where it is followed by `/`, the end, or a character that cannot
/// continue a file name in our reports (space, quote, bracket, comma, colon).
fn replace_at_boundary(text: &str, path: &str, name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(path) {
        let after = &rest[i + path.len()..];
        let boundary = after
            .chars()
            .next()
            .is_none_or(|c| matches!(c, '/' | ' ' | ')' | ']' | ',' | ':' | ';' | '\'' | '"'));
        out.push_str(&rest[..i]);
        out.push_str(if boundary { name } else { path });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A C++ symbol as a person reads it (`_ZN3c104cuda9SetDeviceEi` -> `c10::cuda::SetDevice(int)`),
/// with the mangled name kept for searching; a C name or anything unreadable as it is.
pub fn demangle(symbol: &str) -> String {
    // Versioned references (`sym@GLIBCXX_3.4.29`) demangle without the version.
    let (name, version) = match symbol.split_once('@') {
        Some((n, v)) => (n, Some(v)),
        None => (symbol, None),
    };
    if !name.starts_with("_Z") {
        return symbol.to_string();
    }
    match cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|s| s.demangle().ok())
    {
        Some(readable) => match version {
            Some(v) => format!("{readable} [{name}@{v}]"),
            None => format!("{readable} [{name}]"),
        },
        None => symbol.to_string(),
    }
}

/// The longest directory all `paths` share, when it is worth a legend entry.
pub fn common_dir<'a>(paths: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut common: Option<Vec<&str>> = None;
    let mut count = 0;
    for p in paths {
        count += 1;
        let dir: Vec<&str> = match p.rsplit_once('/') {
            Some((d, _)) => d.split('/').collect(),
            None => return None,
        };
        common = Some(match common {
            None => dir,
            Some(c) => c
                .iter()
                .zip(&dir)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| *a)
                .collect(),
        });
    }
    let dir = common?.join("/");
    (count > 1 && dir.len() > 16).then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_keeps_every_line_within_the_width_but_never_cuts_a_word() {
        let text = "The container runtime did not inject the GPU devices and driver libraries: it was started without GPU access.";
        let w = wrap("    why: ", "         ", text, 40);
        for l in w.lines() {
            assert!(l.len() <= 40, "{l:?}");
        }
        assert!(w.starts_with("    why: The"));
        assert_eq!(
            w.split_whitespace().count(),
            text.split_whitespace().count() + 1
        );
        let long = "/a/very/long/path/that/is/longer/than/the/line/itself/libcudart.so.13";
        assert_eq!(wrap("x ", "  ", long, 20), format!("x {long}"));
    }

    #[test]
    fn the_width_is_columns_else_the_terminal_else_80_and_at_most_120() {
        assert_eq!(terminal_width(None, None), 80);
        assert_eq!(terminal_width(None, Some(100)), 100);
        assert_eq!(terminal_width(Some("90"), Some(200)), 90);
        assert_eq!(terminal_width(Some(" 100 "), None), 100);
        assert_eq!(terminal_width(Some("wide"), Some(70)), 70);
        assert_eq!(terminal_width(Some("0"), None), 80);
        assert_eq!(terminal_width(None, Some(300)), MAX_WIDTH);
        assert_eq!(terminal_width(Some("10"), None), MIN_WIDTH);
        assert_eq!(width(), MAX_WIDTH);
        assert_eq!(with_width(80, width), 80);
        assert_eq!(width(), MAX_WIDTH);
    }

    #[test]
    fn lists_break_between_items() {
        let text = "cuda-bindings 13.5.0, nvidia-cuda-runtime 13.2.86, nvidia-cudnn-cu13 9.26.0.51, triton 3.9.0";
        let w = wrap("  packages  ", "            ", text, 50);
        for l in w.lines() {
            assert!(l.trim_end().ends_with(',') || l.ends_with("3.9.0"), "{l:?}");
            assert!(l.len() <= 50, "{l:?}");
        }
    }

    #[test]
    fn sentences_with_commas_break_anywhere() {
        let text = "2 errors, 0 warnings, 2 notes. The first broken link: Platform.";
        assert_eq!(
            wrap("Verdict: ", "    ", text, 40).lines().next(),
            Some("Verdict: 2 errors, 0 warnings, 2 notes.")
        );
    }

    /// Commas between long clauses are a sentence, not a list: every line is filled.
    #[test]
    fn clauses_between_commas_are_not_list_items() {
        let text = "jax, jaxlib and the CUDA and PJRT plugins are released together and loaded through one ABI; a plugin from another release fails when the CUDA backend starts, or JAX falls back to the CPU.";
        let w = wrap("      why: ", "           ", text, 120);
        let lines: Vec<&str> = w.lines().collect();
        assert_eq!(lines.len(), 2, "{w}");
        for l in lines {
            assert!(l.len() <= 120, "{l:?}");
        }
    }

    #[test]
    fn long_commands_continue_outside_quotes_only() {
        let cmd = "uv pip install --python '/opt/my env/bin/python' 'torch==2.5.1' 'torchvision==0.20.1' --index-url https://download.example/whl/cu124";
        let lines = continue_command("  ", "      ", cmd, 60);
        assert!(lines.len() > 1);
        for l in &lines {
            assert!(l.len() <= 60 || !l.contains(' '), "{l:?}");
        }
        let joined = lines.join("\n").replace(" \\\n      ", " ");
        assert_eq!(joined.trim_start(), cmd);
        assert!(lines.iter().any(|l| l.contains("'/opt/my env/bin/python'")));
        // A comment or here-document is never continued.
        let commented = format!("{cmd}  # keeps torch");
        assert_eq!(continue_command("", "", &commented, 60).len(), 1);
    }

    #[test]
    fn legend_replaces_whole_directory_names_only() {
        let mut l = Legend::default();
        l.add("<short>", "/opt/venv");
        l.add("<env>", "/opt/projects/train/.venv");
        l.add(
            "<site>",
            "/opt/projects/train/.venv/lib/python3.11/site-packages",
        );
        assert_eq!(
            l.shorten(
                "/opt/projects/train/.venv/lib/python3.11/site-packages/torch/lib/libc10.so and /opt/projects/train/.venv2/x"
            ),
            "<site>/torch/lib/libc10.so and /opt/projects/train/.venv2/x"
        );
        // A short path is shown as it is.
        assert_eq!(
            l.shorten("in /opt/projects/train/.venv (venv), /opt/venv"),
            "in <env> (venv), /opt/venv"
        );
        assert!(l.lines(["/usr/lib/libc.so.6"]).is_empty());
        assert_eq!(
            l.lines(["/opt/projects/train/.venv/lib/python3.11/site-packages/x"]),
            [
                "<env> = /opt/projects/train/.venv",
                "<site> = <env>/lib/python3.11/site-packages"
            ]
        );
    }

    #[test]
    fn cpp_symbols_are_demangled_and_c_symbols_kept() {
        assert_eq!(
            demangle("_ZN3c104cuda9SetDeviceEi"),
            "c10::cuda::SetDevice(int) [_ZN3c104cuda9SetDeviceEi]"
        );
        assert_eq!(demangle("cudaMalloc"), "cudaMalloc");
        assert_eq!(demangle("_Znot-a-symbol"), "_Znot-a-symbol");
        assert!(demangle("_ZNSt6thread6_StateD2Ev@GLIBCXX_3.4.22").ends_with("@GLIBCXX_3.4.22]"));
    }

    #[test]
    fn common_dir_of_library_paths() {
        let p = [
            "/opt/venv/lib/python3.11/site-packages/torch/lib/a.so",
            "/opt/venv/lib/python3.11/site-packages/nvidia/cu13/lib/b.so",
        ];
        assert_eq!(
            common_dir(p).as_deref(),
            Some("/opt/venv/lib/python3.11/site-packages")
        );
        assert_eq!(common_dir(["/a/b.so"]), None);
    }
}

#[cfg(test)]
mod hostile_symbol_tests {
    use super::*;

    #[test]
    fn hostile_mangled_names_demangle_in_bounded_time_and_size() {
        let mut cases: Vec<String> = Vec::new();
        // Back-references that double at every level, deep template nesting, long names.
        let mut s = String::from("_Z1fI");
        for _ in 0..40 {
            s.push_str("S_");
        }
        s.push_str("EvT_");
        cases.push(s);
        cases.push(format!("_Z1f{}v{}", "IS_".repeat(5000), "E".repeat(5000)));
        cases.push(format!("_ZN{}E", "1a".repeat(50_000)));
        cases.push(format!("_Z{}", "PFv".repeat(20_000)));
        let mut t = String::from("_Z1fIJ");
        for i in 0..30 {
            t.push_str(&format!("S{i}_"));
        }
        t.push_str("EEvv");
        cases.push(t);
        for c in &cases {
            let started = std::time::Instant::now();
            let out = demangle(c);
            assert!(
                started.elapsed() < std::time::Duration::from_secs(5),
                "{} took {:?}",
                &c[..c.len().min(60)],
                started.elapsed()
            );
            assert!(out.len() < 1 << 20, "{} bytes", out.len());
        }
    }
}
