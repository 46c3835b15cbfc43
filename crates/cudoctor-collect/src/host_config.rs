//! nvcc's host compiler range, read from the toolkit's own `include/crt/host_config.h`: each
//! `#error -- unsupported GNU version!` (clang, Microsoft Visual Studio) guard, its `#if`
//! condition evaluated as the preprocessor would for every version of that compiler, so the
//! range is the header's, never a table of ours.

use cudoctor_snapshot::{CompilerFamily, CompilerRange, HostCompilerSupport};

use crate::host::Host;

/// Reads `<root>/include/crt/host_config.h` (NVIDIA's pip wheels of CUDA 12 keep it there too).
pub fn read(host: &Host, root: &str) -> Option<HostCompilerSupport> {
    let file = format!("{root}/include/crt/host_config.h");
    let text = host.read_text(&file).ok()?;
    let ranges = parse(&text);
    (!ranges.is_empty()).then_some(HostCompilerSupport { file, ranges })
}

/// The `#error` messages of the three host compiler guards.
const GUARDS: &[(&str, CompilerFamily)] = &[
    ("-- unsupported GNU version!", CompilerFamily::Gcc),
    ("-- unsupported clang version!", CompilerFamily::Clang),
    (
        "-- unsupported Microsoft Visual Studio version!",
        CompilerFamily::Msvc,
    ),
];

/// Every guard of `GUARDS` the header has, with the versions it accepts.
pub fn parse(text: &str) -> Vec<CompilerRange> {
    // Logical lines: a trailing backslash continues the line.
    let mut lines: Vec<(u32, String)> = Vec::new();
    let mut pending: Option<(u32, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let (start, mut acc) = pending.take().unwrap_or((i as u32 + 1, String::new()));
        let raw = raw.trim_end();
        if let Some(cont) = raw.strip_suffix('\\') {
            acc.push_str(cont);
            acc.push(' ');
            pending = Some((start, acc));
        } else {
            acc.push_str(raw);
            lines.push((start, acc));
        }
    }
    if let Some(p) = pending {
        lines.push(p);
    }
    // The stack of open conditions: (condition text, negated by #else).
    let mut stack: Vec<(String, bool)> = Vec::new();
    let mut out: Vec<CompilerRange> = Vec::new();
    for (line, text) in &lines {
        let t = text.trim_start();
        let Some(directive) = t.strip_prefix('#') else {
            continue;
        };
        let directive = directive.trim_start();
        let (word, rest) = directive
            .split_once(|c: char| c.is_whitespace() || c == '(' || c == '!')
            .map(|(w, _)| (w, directive[w.len()..].trim()))
            .unwrap_or((directive, ""));
        let rest = strip_comment(rest);
        match word {
            "if" => stack.push((rest.to_string(), false)),
            "ifdef" => stack.push((format!("defined({rest})"), false)),
            "ifndef" => stack.push((format!("!defined({rest})"), false)),
            "elif" => {
                if let Some(top) = stack.last_mut() {
                    *top = (rest.to_string(), false);
                }
            }
            "else" => {
                if let Some(top) = stack.last_mut() {
                    top.1 = !top.1;
                }
            }
            "endif" => {
                stack.pop();
            }
            "error" => {
                let Some(&(_, family)) = GUARDS.iter().find(|(m, _)| rest.starts_with(m)) else {
                    continue;
                };
                if out.iter().any(|r| r.family == family) {
                    continue;
                }
                let Some(((guard, negated), enclosing)) = stack.split_last() else {
                    continue;
                };
                if *negated {
                    continue;
                }
                if let Some(range) = range_of(family, guard, enclosing) {
                    out.push(CompilerRange {
                        line: *line,
                        message: rest.to_string(),
                        ..range
                    });
                }
            }
            _ => {}
        }
    }
    out
}

fn strip_comment(s: &str) -> &str {
    let s = s.split("/*").next().unwrap_or(s);
    s.split("//").next().unwrap_or(s).trim()
}

/// The versions `guard` lets through for `family`, when every enclosing condition holds for
/// that compiler (on Linux x86_64, or Windows for MSVC).
fn range_of(
    family: CompilerFamily,
    guard: &str,
    enclosing: &[(String, bool)],
) -> Option<CompilerRange> {
    let versions: Vec<[u32; 2]> = match family {
        CompilerFamily::Msvc => (1800..2100).map(|v| [v, 0]).collect(),
        _ => (0..100)
            .flat_map(|major| (0..10).map(move |minor| [major, minor]))
            .collect(),
    };
    let env = |v: [u32; 2]| Macros { family, version: v };
    // The guard must be reached: every enclosing condition true (as the header nests it) for
    // at least one version.
    let reached = |v: [u32; 2]| {
        enclosing
            .iter()
            .all(|(cond, negated)| eval(cond, &env(v)).map(|x| (x != 0) != *negated) == Some(true))
    };
    let mut accepted = Vec::new();
    let mut any_reached = false;
    for v in versions {
        if !reached(v) {
            continue;
        }
        any_reached = true;
        if eval(guard, &env(v))? == 0 {
            accepted.push(v);
        }
    }
    if !any_reached || accepted.is_empty() {
        return None;
    }
    let first = accepted[0];
    let last = *accepted.last()?;
    let (lowest, highest) = match family {
        CompilerFamily::Msvc => ([1800, 0], 2099),
        _ => ([0, 0], 99),
    };
    Some(CompilerRange {
        family,
        min: (first != lowest).then_some(first),
        max_major: (last[0] != highest).then_some(last[0]),
        condition: guard.to_string(),
        line: 0,
        message: String::new(),
    })
}

/// The predefined macros of a compiler at a version, as the preprocessor sees them.
struct Macros {
    family: CompilerFamily,
    version: [u32; 2],
}

impl Macros {
    fn defined(&self, name: &str) -> bool {
        let gnu = matches!(self.family, CompilerFamily::Gcc | CompilerFamily::Clang);
        match name {
            "__GNUC__" | "__GNUC_MINOR__" | "__linux__" | "__LP64__" | "__x86_64__" => gnu,
            "__clang__" | "__clang_major__" | "__clang_minor__" => {
                self.family == CompilerFamily::Clang
            }
            "_WIN32" | "_MSC_VER" => self.family == CompilerFamily::Msvc,
            "__CUDACC__" => true,
            _ => false,
        }
    }

    fn value(&self, name: &str) -> i64 {
        let [major, minor] = self.version.map(i64::from);
        match (self.family, name) {
            (CompilerFamily::Gcc, "__GNUC__") => major,
            (CompilerFamily::Gcc, "__GNUC_MINOR__") => minor,
            // clang says it is GCC 4.2.
            (CompilerFamily::Clang, "__GNUC__") => 4,
            (CompilerFamily::Clang, "__GNUC_MINOR__") => 2,
            (CompilerFamily::Clang, "__clang_major__") => major,
            (CompilerFamily::Clang, "__clang_minor__") => minor,
            (CompilerFamily::Msvc, "_MSC_VER") => major,
            _ => i64::from(self.defined(name)),
        }
    }
}

/// A preprocessor `#if` expression: integers, macros, `defined(X)`, `!`, comparisons, `&&`,
/// `||`, parentheses. `None` for anything else (the guard is then not judged).
fn eval(expr: &str, m: &Macros) -> Option<i64> {
    let tokens = tokenize(expr)?;
    let mut p = Parser {
        tokens: &tokens,
        pos: 0,
        m,
    };
    let v = p.or()?;
    (p.pos == tokens.len()).then_some(v)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i64),
    Ident(String),
    Op(&'static str),
}

fn tokenize(s: &str) -> Option<Vec<Tok>> {
    const OPS: &[&str] = &["||", "&&", "==", "!=", "<=", ">=", "<", ">", "!", "(", ")"];
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i] as char).is_ascii_alphanumeric() {
                i += 1;
            }
            let lit = s[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let n = match lit.strip_prefix("0x").or_else(|| lit.strip_prefix("0X")) {
                Some(hex) => i64::from_str_radix(hex, 16).ok()?,
                None => lit.parse().ok()?,
            };
            out.push(Tok::Num(n));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[start..i].to_string()));
        } else {
            let op = OPS.iter().find(|op| s[i..].starts_with(**op))?;
            out.push(Tok::Op(op));
            i += op.len();
        }
    }
    Some(out)
}

struct Parser<'a> {
    tokens: &'a [Tok],
    pos: usize,
    m: &'a Macros,
}

impl Parser<'_> {
    fn peek_op(&self, op: &str) -> bool {
        matches!(self.tokens.get(self.pos), Some(Tok::Op(o)) if *o == op)
    }

    fn or(&mut self) -> Option<i64> {
        let mut v = self.and()?;
        while self.peek_op("||") {
            self.pos += 1;
            let r = self.and()?;
            v = i64::from(v != 0 || r != 0);
        }
        Some(v)
    }

    fn and(&mut self) -> Option<i64> {
        let mut v = self.cmp()?;
        while self.peek_op("&&") {
            self.pos += 1;
            let r = self.cmp()?;
            v = i64::from(v != 0 && r != 0);
        }
        Some(v)
    }

    fn cmp(&mut self) -> Option<i64> {
        let mut v = self.unary()?;
        loop {
            let op = ["==", "!=", "<=", ">=", "<", ">"]
                .into_iter()
                .find(|o| self.peek_op(o));
            let Some(op) = op else { return Some(v) };
            self.pos += 1;
            let r = self.unary()?;
            v = i64::from(match op {
                "==" => v == r,
                "!=" => v != r,
                "<=" => v <= r,
                ">=" => v >= r,
                "<" => v < r,
                _ => v > r,
            });
        }
    }

    fn unary(&mut self) -> Option<i64> {
        match self.tokens.get(self.pos)?.clone() {
            Tok::Op("!") => {
                self.pos += 1;
                Some(i64::from(self.unary()? == 0))
            }
            Tok::Op("(") => {
                self.pos += 1;
                let v = self.or()?;
                if !self.peek_op(")") {
                    return None;
                }
                self.pos += 1;
                Some(v)
            }
            Tok::Num(n) => {
                self.pos += 1;
                Some(n)
            }
            Tok::Ident(name) if name == "defined" => {
                self.pos += 1;
                let paren = self.peek_op("(");
                if paren {
                    self.pos += 1;
                }
                let Some(Tok::Ident(id)) = self.tokens.get(self.pos) else {
                    return None;
                };
                let v = i64::from(self.m.defined(id));
                self.pos += 1;
                if paren {
                    if !self.peek_op(")") {
                        return None;
                    }
                    self.pos += 1;
                }
                Some(v)
            }
            Tok::Ident(name) => {
                self.pos += 1;
                Some(self.m.value(&name))
            }
            Tok::Op(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guards as CUDA 13.5's host_config.h writes them (abridged: the nesting and the
    /// lines that matter).
    const CUDA_13_5: &str = r#"
#if !defined(__HOST_CONFIG_H__)
#define __HOST_CONFIG_H__
#if defined(__CUDACC__)
#if defined(__CUDACC_RTC__)
#define _CRTIMP
#else /* __CUDACC_RTC__ */
#if defined(__powerpc__)
#if !defined(__powerpc64__) || !defined(__LITTLE_ENDIAN__)
#error -- unsupported PPC platform! Only 64-bit little endian PPC is supported!
#endif
#endif
#if !__NV_NO_HOST_COMPILER_CHECK
#if defined(__powerpc__)
#if defined(__ibmxl_vrm__) && !(__ibmxl_vrm__ >= 0x0d010000 && __ibmxl_vrm__ < 0x0d020000) && \
    !(__ibmxl_vrm__ >= 0x10010000 && __ibmxl_vrm__ < 0x10020000)
#error -- unsupported xlC version! only xlC 13.1 and 16.1 are supported.
#endif
#endif /* __powerpc__ */
#if defined(__GNUC__)

#if __GNUC__ > 16

#error -- unsupported GNU version! gcc versions later than 16 are not supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; however, using an unsupported host compiler may cause compilation failure or incorrect run time execution. Use at your own risk.

#endif /* __GNUC__ > 16 */

#if defined(__HORIZON__)
#if (__clang_major__ >= 22) || (__clang_major__ < 3) || ((__clang_major__ == 3) &&  (__clang_minor__ < 3))
#error -- unsupported HOS clang version! The version must be must be less than 22 and greater than 3.2 .
#endif
#endif /* __HORIZON__  */

#if defined(__clang__) && !defined(__ibmxl_vrm__) && !defined(__ICC) && !defined(__HORIZON__) && !defined(__APPLE__) && !defined(__GRCO_CLANG_COMPILER__)

#if (__clang_major__ >= 23) || (__clang_major__ < 3) || ((__clang_major__ == 3) &&  (__clang_minor__ < 3))
#error -- unsupported clang version! clang version must be less than 23 and greater than 3.2 . The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; however, using an unsupported host compiler may cause compilation failure or incorrect run time execution. Use at your own risk.

#endif  /* (__clang_major__ >=  23) */

#endif /* defined(__clang__) */

#endif /* __GNUC__ */

#if defined(_WIN32)

#if _MSC_VER < 1920 || _MSC_VER >= 1960

#error -- unsupported Microsoft Visual Studio version! Only the versions between 2019 and 2026 (inclusive) are supported!

#endif /* (_MSC_VER < 1910 || _MSC_VER >= 1960) */

#endif /* _WIN32 */
#endif  /* !__NV_NO_HOST_COMPILER_CHECK */
#endif /* __CUDACC_RTC__ */
#endif /* __CUDACC__ */
#endif /* !__HOST_CONFIG_H__ */
"#;

    #[test]
    fn the_guards_of_cuda_13_5_become_ranges() {
        let r = parse(CUDA_13_5);
        assert_eq!(r.len(), 3, "{r:#?}");
        let gcc = &r[0];
        assert_eq!(gcc.family, CompilerFamily::Gcc);
        assert_eq!((gcc.min, gcc.max_major), (None, Some(16)));
        assert_eq!(gcc.condition, "__GNUC__ > 16");
        assert!(gcc.message.starts_with(
            "-- unsupported GNU version! gcc versions later than 16 are not supported!"
        ));
        assert_eq!(gcc.line, 24);
        let clang = &r[1];
        assert_eq!(clang.family, CompilerFamily::Clang);
        assert_eq!((clang.min, clang.max_major), (Some([3, 3]), Some(22)));
        let msvc = &r[2];
        assert_eq!((msvc.min, msvc.max_major), (Some([1920, 0]), Some(1959)));
    }

    #[test]
    fn a_lower_bound_and_an_else_branch() {
        let text = "#if defined(__GNUC__)\n#if __GNUC__ < 6 || __GNUC__ > 11\n#error -- unsupported GNU version! x\n#endif\n#endif\n";
        let r = parse(text);
        assert_eq!((r[0].min, r[0].max_major), (Some([6, 0]), Some(11)));
        // A guard in the #else of a defined(__GNUC__) block is never reached by gcc.
        let text = "#if defined(__GNUC__)\n#else\n#if __GNUC__ > 11\n#error -- unsupported GNU version! x\n#endif\n#endif\n";
        assert!(parse(text).is_empty());
        // An expression the evaluator cannot read is not judged.
        let text = "#if __GNUC__ > foo(3)\n#error -- unsupported GNU version! x\n#endif\n";
        assert!(parse(text).is_empty());
    }
}
