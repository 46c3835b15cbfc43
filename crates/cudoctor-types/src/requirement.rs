//! Python package versions and requirements as wheels' metadata writes them (`Requires-Dist:`
//! lines of `METADATA`): PEP 440 versions and specifiers, PEP 508 names, extras and markers.
//! One parser for every framework's pins (vLLM's `torch==2.9.0`, jax's
//! `jaxlib<=0.10.2,>=0.10.2; extra == "cuda12"`).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::version::{invalid, VersionError};

/// A PEP 440 version: release numbers, pre-, post- and dev-release, local label.
#[derive(Debug, Clone)]
pub struct PyVersion {
    pub epoch: u32,
    pub release: Vec<u32>,
    /// `a`, `b` or `rc` with its number.
    pub pre: Option<(PreKind, u32)>,
    pub post: Option<u32>,
    pub dev: Option<u32>,
    /// `cu130` of `2.11.0+cu130`, lower case.
    pub local: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PreKind {
    Alpha,
    Beta,
    Rc,
}

impl PyVersion {
    /// The same version without its local label.
    pub fn public(&self) -> PyVersion {
        PyVersion {
            local: None,
            ..self.clone()
        }
    }

    fn key(&self) -> (u32, i64, i64, i64) {
        // Ordering within one release: dev < pre < final < post (PEP 440).
        let pre = match (self.pre, self.post, self.dev) {
            (Some((k, n)), _, _) => (k as i64) * 1_000_000 + n as i64,
            (None, None, Some(_)) => -1,
            _ => i64::MAX,
        };
        let post = self.post.map(i64::from).unwrap_or(-1);
        let dev = self.dev.map(i64::from).unwrap_or(i64::MAX);
        (self.epoch, pre, post, dev)
    }
}

impl FromStr for PyVersion {
    type Err = VersionError;
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        const KIND: &str = "package version";
        let s = input.trim().to_ascii_lowercase();
        let s = s.strip_prefix('v').unwrap_or(&s);
        if s.is_empty() {
            return Err(VersionError::Empty);
        }
        let (s, local) = match s.split_once('+') {
            Some((p, l)) if !l.is_empty() => (p, Some(l.replace(['-', '_'], "."))),
            Some(_) => return Err(invalid(KIND, input, "empty local version")),
            None => (s, None),
        };
        let (epoch, s) = match s.split_once('!') {
            Some((e, rest)) => (
                e.parse().map_err(|_| invalid(KIND, input, "bad epoch"))?,
                rest,
            ),
            None => (0, s),
        };
        let bytes = s.as_bytes();
        let mut i = 0;
        let mut release = Vec::new();
        loop {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if start == i {
                return Err(invalid(KIND, input, "expected a release number"));
            }
            release.push(
                s[start..i]
                    .parse()
                    .map_err(|_| invalid(KIND, input, "component too large"))?,
            );
            if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                i += 1;
                continue;
            }
            break;
        }
        let mut rest = &s[i..];
        let number = |r: &mut &str| -> u32 {
            let t = r.trim_start_matches(['.', '-', '_']);
            let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let n = t[..end].parse().unwrap_or(0);
            *r = &t[end..];
            n
        };
        let mut pre = None;
        let mut post = None;
        let mut dev = None;
        loop {
            let r = rest.trim_start_matches(['.', '-', '_']);
            if r.is_empty() {
                break;
            }
            let tags: [(&str, u8); 9] = [
                ("alpha", 0),
                ("beta", 1),
                ("preview", 2),
                ("pre", 2),
                ("rc", 2),
                ("a", 0),
                ("b", 1),
                ("c", 2),
                ("post", 3),
            ];
            if let Some(r2) = r.strip_prefix("dev") {
                rest = r2;
                dev = Some(number(&mut rest));
                continue;
            }
            if let Some(r2) = r.strip_prefix("rev").or_else(|| r.strip_prefix('r')) {
                rest = r2;
                post = Some(number(&mut rest));
                continue;
            }
            match tags.iter().find(|(t, _)| r.starts_with(t)) {
                Some((t, 3)) => {
                    rest = &r[t.len()..];
                    post = Some(number(&mut rest));
                }
                Some((t, k)) => {
                    rest = &r[t.len()..];
                    let kind = [PreKind::Alpha, PreKind::Beta, PreKind::Rc][*k as usize];
                    pre = Some((kind, number(&mut rest)));
                }
                None => return Err(invalid(KIND, input, "not a PEP 440 version")),
            }
        }
        Ok(PyVersion {
            epoch,
            release,
            pre,
            post,
            dev,
            local,
        })
    }
}

impl PartialEq for PyVersion {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for PyVersion {}
impl PartialOrd for PyVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for PyVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.epoch
            .cmp(&other.epoch)
            .then_with(|| crate::version::cmp_components(&self.release, &other.release))
            .then_with(|| self.key().cmp(&other.key()))
            .then_with(|| self.local.cmp(&other.local))
    }
}

/// One comparison of a specifier set (`>=0.10.1`, `==2.9.*`, `~=13.0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specifier {
    pub op: SpecOp,
    /// The version as written, `.*` included.
    pub version: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecOp {
    Eq,
    Ne,
    Ge,
    Le,
    Gt,
    Lt,
    /// `~=`: compatible release.
    Compatible,
    /// `===`: the same string.
    Arbitrary,
}

impl SpecOp {
    pub fn as_str(self) -> &'static str {
        match self {
            SpecOp::Eq => "==",
            SpecOp::Ne => "!=",
            SpecOp::Ge => ">=",
            SpecOp::Le => "<=",
            SpecOp::Gt => ">",
            SpecOp::Lt => "<",
            SpecOp::Compatible => "~=",
            SpecOp::Arbitrary => "===",
        }
    }
}

impl Specifier {
    /// Whether `v` satisfies this comparison; `None` when the specifier's version is unreadable.
    pub fn admits(&self, v: &PyVersion) -> Option<bool> {
        if self.op == SpecOp::Arbitrary {
            return None;
        }
        if let Some(prefix) = self.version.strip_suffix(".*") {
            let p: PyVersion = prefix.parse().ok()?;
            let n = p.release.len();
            let head: Vec<u32> = (0..n)
                .map(|i| v.release.get(i).copied().unwrap_or(0))
                .collect();
            let same = v.epoch == p.epoch && head == p.release;
            return match self.op {
                SpecOp::Eq => Some(same),
                SpecOp::Ne => Some(!same),
                _ => None,
            };
        }
        let want: PyVersion = self.version.parse().ok()?;
        // A specifier without a local label compares public versions (PEP 440).
        let have = if want.local.is_none() {
            v.public()
        } else {
            v.clone()
        };
        Some(match self.op {
            SpecOp::Eq => have == want,
            SpecOp::Ne => have != want,
            SpecOp::Ge => have >= want,
            SpecOp::Le => have <= want,
            SpecOp::Gt => have > want,
            SpecOp::Lt => have < want,
            SpecOp::Compatible => {
                if want.release.len() < 2 {
                    return None;
                }
                let prefix = &want.release[..want.release.len() - 1];
                let head: Vec<u32> = (0..prefix.len())
                    .map(|i| have.release.get(i).copied().unwrap_or(0))
                    .collect();
                have >= want && head == prefix
            }
            SpecOp::Arbitrary => unreachable!(),
        })
    }
}

impl fmt::Display for Specifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.op.as_str(), self.version)
    }
}

/// A `Requires-Dist` requirement: `name[extras] specifiers ; marker`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// Normalised (PEP 503): lower case, runs of `-_.` as `-`.
    pub name: String,
    pub extras: Vec<String>,
    pub specifiers: Vec<Specifier>,
    /// The environment marker after `;`, as written.
    pub marker: Option<String>,
    /// The whole line as written (what is displayed and serialised).
    pub text: String,
}

/// PEP 503 normalisation: lower case, runs of `-`, `_`, `.` become one `-`.
pub fn normalise_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut last_sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !last_sep {
                out.push('-');
            }
            last_sep = true;
        } else {
            out.extend(c.to_lowercase());
            last_sep = false;
        }
    }
    out
}

/// A normalised distribution name without the CUDA-variant suffix its project publishes per
/// CUDA release (`spconv-cu126` -> `spconv`, `cupy-cuda12x` -> `cupy`, `mxnet-cu112` ->
/// `mxnet`, `faiss-gpu-cu12` -> `faiss-gpu`); the name itself where it has none.
pub fn without_cuda_variant(name: &str) -> &str {
    let Some((base, tail)) = name.rsplit_once('-') else {
        return name;
    };
    let digits = tail
        .strip_prefix("cuda")
        .or_else(|| tail.strip_prefix("cu"))
        .map(|d| d.strip_suffix('x').unwrap_or(d));
    match digits {
        Some(d) if !base.is_empty() && !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) => {
            base
        }
        _ => name,
    }
}

impl Requirement {
    /// Whether `version` satisfies every specifier: `None` when the version or a specifier
    /// cannot be read (unknown stays unknown).
    pub fn admits(&self, version: &str) -> Option<bool> {
        let v: PyVersion = version.parse().ok()?;
        let mut all = true;
        for s in &self.specifiers {
            all &= s.admits(&v)?;
        }
        Some(all)
    }

    /// The specifiers alone, as written after the name: `<=0.10.2,>=0.10.2`.
    pub fn specifier_text(&self) -> String {
        self.specifiers
            .iter()
            .map(Specifier::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The marker's value, `Some(true/false)` when every variable in it is known to `vars`
    /// (`extra` included: pass what the caller decided about extras), `None` otherwise.
    pub fn marker_holds(&self, vars: &dyn Fn(&str) -> Option<String>) -> Option<bool> {
        match &self.marker {
            None => Some(true),
            Some(m) => marker::eval(m, vars),
        }
    }

    /// The extras the marker names (`extra == "cuda12"`), in order.
    pub fn marker_extras(&self) -> Vec<String> {
        let Some(m) = &self.marker else {
            return Vec::new();
        };
        marker::extras(m)
    }
}

impl FromStr for Requirement {
    type Err = VersionError;
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        const KIND: &str = "requirement";
        let text = input.trim();
        let (req, marker) = match text.split_once(';') {
            Some((r, m)) => (r.trim(), Some(m.trim().to_string())),
            None => (text, None),
        };
        let name_end = req
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(req.len());
        if name_end == 0 {
            return Err(invalid(KIND, input, "no package name"));
        }
        let name = normalise_name(&req[..name_end]);
        let mut rest = req[name_end..].trim();
        let mut extras = Vec::new();
        if let Some(r) = rest.strip_prefix('[') {
            let (inside, after) = r
                .split_once(']')
                .ok_or_else(|| invalid(KIND, input, "unclosed ["))?;
            extras = inside
                .split(',')
                .map(|e| normalise_name(e.trim()))
                .filter(|e| !e.is_empty())
                .collect();
            rest = after.trim();
        }
        if rest.starts_with('@') {
            // A direct reference names no version range.
            rest = "";
        }
        let rest = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or(rest);
        let mut specifiers = Vec::new();
        for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let ops = [
                ("===", SpecOp::Arbitrary),
                ("==", SpecOp::Eq),
                ("!=", SpecOp::Ne),
                (">=", SpecOp::Ge),
                ("<=", SpecOp::Le),
                ("~=", SpecOp::Compatible),
                (">", SpecOp::Gt),
                ("<", SpecOp::Lt),
            ];
            let (sym, op) = ops
                .iter()
                .find(|(s, _)| part.starts_with(s))
                .ok_or_else(|| invalid(KIND, input, "expected a comparison such as >=1.0"))?;
            let version = part[sym.len()..].trim().to_string();
            if version.is_empty() {
                return Err(invalid(KIND, input, "comparison without a version"));
            }
            specifiers.push(Specifier { op: *op, version });
        }
        Ok(Requirement {
            name,
            extras,
            specifiers,
            marker,
            text: text.to_string(),
        })
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Requirement {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Requirement {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// PEP 508 environment markers: `sys_platform == "linux" and extra == "cuda12"`.
mod marker {
    use super::PyVersion;

    #[derive(Debug, Clone, PartialEq)]
    enum Tok {
        Ident(String),
        Str(String),
        Op(String),
        And,
        Or,
        Open,
        Close,
    }

    fn lex(m: &str) -> Option<Vec<Tok>> {
        let mut out = Vec::new();
        let b = m.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i] as char;
            if c.is_whitespace() {
                i += 1;
            } else if c == '(' {
                out.push(Tok::Open);
                i += 1;
            } else if c == ')' {
                out.push(Tok::Close);
                i += 1;
            } else if c == '"' || c == '\'' {
                let end = m[i + 1..].find(c)? + i + 1;
                out.push(Tok::Str(m[i + 1..end].to_string()));
                i = end + 1;
            } else if "=!<>~".contains(c) {
                let start = i;
                while i < b.len() && "=!<>~".contains(b[i] as char) {
                    i += 1;
                }
                out.push(Tok::Op(m[start..i].to_string()));
            } else if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.')
                {
                    i += 1;
                }
                let word = &m[start..i];
                out.push(match word {
                    "and" => Tok::And,
                    "or" => Tok::Or,
                    "in" => Tok::Op("in".into()),
                    "not" => {
                        // `not in`
                        let r = m[i..].trim_start();
                        if !r.starts_with("in") {
                            return None;
                        }
                        i = m.len() - r.len() + 2;
                        Tok::Op("not in".into())
                    }
                    _ => Tok::Ident(word.to_string()),
                });
            } else {
                return None;
            }
        }
        Some(out)
    }

    /// Three-valued: `None` where a variable is unknown and the rest does not decide.
    pub fn eval(m: &str, vars: &dyn Fn(&str) -> Option<String>) -> Option<bool> {
        let toks = lex(m)?;
        let mut p = Parser {
            toks: &toks,
            at: 0,
            vars,
            depth: 0,
        };
        let v = p.or()?;
        (p.at == toks.len()).then_some(v)?
    }

    pub fn extras(m: &str) -> Vec<String> {
        let Some(toks) = lex(m) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for w in toks.windows(3) {
            if let [Tok::Ident(v), Tok::Op(op), Tok::Str(s)] = w {
                if v == "extra" && op == "==" {
                    out.push(super::normalise_name(s));
                }
            }
        }
        out
    }

    struct Parser<'a> {
        toks: &'a [Tok],
        at: usize,
        vars: &'a dyn Fn(&str) -> Option<String>,
        /// Parentheses open around the current token.
        depth: usize,
    }

    /// The deepest nesting of parentheses read: real markers nest two or three deep; a METADATA
    /// line of 200,000 `(` would overflow the stack (an abort, not an error).
    const MAX_DEPTH: usize = 64;

    type Tri = Option<Option<bool>>;

    impl Parser<'_> {
        fn peek(&self) -> Option<&Tok> {
            self.toks.get(self.at)
        }
        /// Outer `None`: syntax error; inner `None`: unknown.
        fn or(&mut self) -> Tri {
            let mut v = self.and()?;
            while self.peek() == Some(&Tok::Or) {
                self.at += 1;
                let r = self.and()?;
                v = match (v, r) {
                    (Some(true), _) | (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                };
            }
            Some(v)
        }
        fn and(&mut self) -> Tri {
            let mut v = self.atom()?;
            while self.peek() == Some(&Tok::And) {
                self.at += 1;
                let r = self.atom()?;
                v = match (v, r) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
            }
            Some(v)
        }
        fn value(&mut self) -> Option<(bool, String)> {
            let t = self.peek()?.clone();
            self.at += 1;
            match t {
                Tok::Str(s) => Some((true, s)),
                Tok::Ident(s) => Some((false, s)),
                _ => None,
            }
        }
        fn atom(&mut self) -> Tri {
            if self.peek() == Some(&Tok::Open) {
                if self.depth >= MAX_DEPTH {
                    return None;
                }
                self.at += 1;
                self.depth += 1;
                let v = self.or()?;
                self.depth -= 1;
                if self.peek() != Some(&Tok::Close) {
                    return None;
                }
                self.at += 1;
                return Some(v);
            }
            let (lq, l) = self.value()?;
            let Some(Tok::Op(op)) = self.peek().cloned() else {
                return None;
            };
            self.at += 1;
            let (rq, r) = self.value()?;
            let resolve = |quoted: bool, s: &str| -> Option<String> {
                if quoted {
                    Some(s.to_string())
                } else {
                    (self.vars)(s)
                }
            };
            let var = if lq { r.clone() } else { l.clone() };
            let (Some(a), Some(b)) = (resolve(lq, &l), resolve(rq, &r)) else {
                return Some(None);
            };
            let (a, b) = if var == "extra" {
                (super::normalise_name(&a), super::normalise_name(&b))
            } else {
                (a, b)
            };
            let versions = var.ends_with("version");
            let cmp = || -> Option<std::cmp::Ordering> {
                if versions {
                    let x: PyVersion = a.parse().ok()?;
                    let y: PyVersion = b.parse().ok()?;
                    Some(x.cmp(&y))
                } else {
                    Some(a.cmp(&b))
                }
            };
            use std::cmp::Ordering::*;
            Some(match op.as_str() {
                "==" => Some(if versions {
                    cmp() == Some(Equal)
                } else {
                    a == b
                }),
                "!=" => Some(if versions {
                    cmp() != Some(Equal)
                } else {
                    a != b
                }),
                "<" => cmp().map(|o| o == Less),
                "<=" => cmp().map(|o| o != Greater),
                ">" => cmp().map(|o| o == Greater),
                ">=" => cmp().map(|o| o != Less),
                "in" => Some(b.contains(&a)),
                "not in" => Some(!b.contains(&a)),
                _ => None,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cuda_variant_suffix_is_taken_off_a_distribution_name() {
        use super::without_cuda_variant as w;
        assert_eq!(w("spconv-cu126"), "spconv");
        assert_eq!(w("cupy-cuda12x"), "cupy");
        assert_eq!(w("mxnet-cu112"), "mxnet");
        assert_eq!(w("faiss-gpu-cu12"), "faiss-gpu");
        assert_eq!(w("nvidia-dali-cuda120"), "nvidia-dali");
        // Names without one stay whole.
        assert_eq!(w("spconv"), "spconv");
        assert_eq!(w("torch-cuda-ext"), "torch-cuda-ext");
        assert_eq!(w("cu12"), "cu12");
        assert_eq!(w("foo-cux"), "foo-cux");
    }

    use super::*;

    fn v(s: &str) -> PyVersion {
        s.parse().unwrap()
    }
    fn r(s: &str) -> Requirement {
        s.parse().unwrap()
    }

    #[test]
    fn versions_order_as_pep_440_says() {
        let order = [
            "0.10.2.dev20260101",
            "0.10.2a1",
            "0.10.2b2",
            "0.10.2rc1",
            "0.10.2",
            "0.10.2.post1",
            "0.10.3",
            "1!0.1",
        ];
        for w in order.windows(2) {
            assert!(v(w[0]) < v(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(v("2.11"), v("2.11.0"));
        assert_eq!(v("2.11.0+cu130").local.as_deref(), Some("cu130"));
        assert!("not a version".parse::<PyVersion>().is_err());
        assert!("".parse::<PyVersion>().is_err());
    }

    #[test]
    fn real_requires_dist_lines_parse_and_judge() {
        // jax 0.10.2's METADATA.
        let j = r(r#"jax-cuda12-plugin[with-cuda]<=0.10.2,>=0.10.2; extra == "cuda12""#);
        assert_eq!(j.name, "jax-cuda12-plugin");
        assert_eq!(j.extras, vec!["with-cuda"]);
        assert_eq!(j.specifier_text(), "<=0.10.2,>=0.10.2");
        assert_eq!(j.admits("0.10.2"), Some(true));
        assert_eq!(j.admits("0.10.1"), Some(false));
        assert_eq!(j.marker_extras(), vec!["cuda12"]);
        // sglang 0.5.23's: a pin without local label admits torch's labelled builds.
        let t = r("torch==2.14.1");
        assert_eq!(t.admits("2.14.1+cu130"), Some(true));
        assert_eq!(t.admits("2.15.0"), Some(false));
        // onnxruntime-gpu 1.31.1's.
        let o = r(r#"nvidia-cuda-runtime~=13.0; extra == "cuda""#);
        assert_eq!(o.admits("13.2.86"), Some(true));
        assert_eq!(o.admits("12.9.79"), Some(false));
        let c = r(r#"cuda-toolkit[cublas,cudart]==12.*; extra == "ctk""#);
        assert_eq!(c.admits("12.9.1"), Some(true));
        assert_eq!(c.admits("13.0.0"), Some(false));
        assert_eq!(r("Flash_Attn").name, "flash-attn");
        assert!(r("foo @ https://example.invalid/foo.whl")
            .specifiers
            .is_empty());
        assert!("==1.0".parse::<Requirement>().is_err());
        assert!("foo >=".parse::<Requirement>().is_err());
        assert_eq!(r("foo===abc").admits("1.0"), None);
    }

    #[test]
    fn markers_are_three_valued() {
        let linux = |name: &str| match name {
            "sys_platform" => Some("linux".to_string()),
            "python_version" => Some("3.11".to_string()),
            _ => None,
        };
        let m = r(r#"nvidia-nccl-cu12>=2.18.1; sys_platform == "linux" and extra == "with-cuda""#);
        assert_eq!(m.marker_holds(&linux), None, "extra unknown");
        let with_extra = |name: &str| {
            if name == "extra" {
                Some("with-cuda".into())
            } else {
                linux(name)
            }
        };
        assert_eq!(m.marker_holds(&with_extra), Some(true));
        let arm = r(
            r#"av==16.1.0; sys_platform == "linux" and (platform_machine == "aarch64" or platform_machine == "arm64")"#,
        );
        assert_eq!(arm.marker_holds(&linux), None);
        let darwin = r(r#"x; sys_platform == "darwin" and platform_machine == "arm64""#);
        assert_eq!(darwin.marker_holds(&linux), Some(false));
        let py = r(r#"x; python_version < "3.12""#);
        assert_eq!(py.marker_holds(&linux), Some(true));
        let not_in = r(r#"x; "linux" not in sys_platform"#);
        assert_eq!(not_in.marker_holds(&linux), Some(false));
        assert_eq!(r("x; ((").marker_holds(&linux), None);
    }

    #[test]
    fn requirements_serialise_as_written() {
        let j = r(r#"jaxlib<=0.10.2,>=0.10.1"#);
        let s = serde_json::to_string(&j).unwrap();
        assert_eq!(s, r#""jaxlib<=0.10.2,>=0.10.1""#);
        let back: Requirement = serde_json::from_str(&s).unwrap();
        assert_eq!(back, j);
        assert!(serde_json::from_str::<Requirement>(r#""==1""#).is_err());
    }
}

#[cfg(test)]
mod hostile_marker_tests {
    use super::*;

    #[test]
    fn a_marker_nested_past_any_real_one_is_unknown_not_a_stack_overflow() {
        let deep = format!(
            "x ; {}python_version >= '3'{}",
            "(".repeat(200_000),
            ")".repeat(200_000)
        );
        let vars = |_: &str| Some("3.12".to_string());
        if let Ok(r) = deep.parse::<Requirement>() {
            assert_eq!(r.marker_holds(&vars), None);
            let _ = r.marker_extras();
        }
        // A real nesting is read.
        let r: Requirement = "x ; ((python_version >= '3'))".parse().unwrap();
        assert_eq!(r.marker_holds(&vars), Some(true));
    }
}
