//! Helpers for the integration tests: temporary trees, gcc-built libraries, and the real
//! `ldd` / `ldconfig` to compare with.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use cudoctor_ldso::LibsReport;

/// A directory removed on drop.
pub struct TempTree {
    pub path: PathBuf,
}

impl TempTree {
    pub fn new(tag: &str) -> Self {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("cudoctor-ldso-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempTree { path }
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }

    /// Absolute path string of `rel`.
    pub fn s(&self, rel: &str) -> String {
        self.join(rel).to_string_lossy().into_owned()
    }

    pub fn write(&self, rel: &str, content: &[u8]) -> PathBuf {
        let p = self.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, content).expect("write");
        p
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Build a shared library with gcc from C source. `out` is relative to the tree; extra
/// arguments go to gcc as they are. Panics with gcc's output on failure (gcc is part of the
/// development and CI machines; a missing gcc must fail the test, not skip it).
pub fn build_so(tree: &TempTree, out: &str, source: &str, args: &[&str]) -> PathBuf {
    let src_name = format!("src/{}.c", out.replace('/', "_"));
    let src = tree.write(&src_name, source.as_bytes());
    let out_path = tree.join(out);
    if let Some(parent) = out_path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    let output = Command::new("gcc")
        .args(["-shared", "-fPIC", "-O0", "-Wl,--no-as-needed", "-o"])
        .arg(&out_path)
        .arg(&src)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("gcc must be installed to run these tests");
    assert!(
        output.status.success(),
        "gcc failed for {out}:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out_path
}

/// One object line of ldd's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LddObject {
    pub name: String,
    /// `None`: "not found".
    pub path: Option<String>,
}

#[derive(Debug, Default)]
pub struct LddOutput {
    pub objects: Vec<LddObject>,
    /// (object path, "sym" or "sym@VERSION") from `ldd -r`.
    pub undefined: Vec<(String, String)>,
    /// (library path, version, required by) from "version `X' not found" lines.
    pub missing_versions: Vec<(String, String, String)>,
    pub stdout: String,
    pub stderr: String,
    pub success: bool,
}

/// Run the real ldd with exactly the given LD_LIBRARY_PATH (none when `None`).
pub fn ldd(file: &Path, llp: Option<&str>, relocs: bool) -> LddOutput {
    ldd_with_preload(file, llp, None, relocs)
}

/// Same, with LD_PRELOAD.
pub fn ldd_with_preload(
    file: &Path,
    llp: Option<&str>,
    preload: Option<&str>,
    relocs: bool,
) -> LddOutput {
    let mut cmd = Command::new("ldd");
    if relocs {
        cmd.arg("-r");
    }
    cmd.arg(file)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD");
    if let Some(l) = llp {
        cmd.env("LD_LIBRARY_PATH", l);
    }
    if let Some(p) = preload {
        cmd.env("LD_PRELOAD", p);
    }
    let out = cmd
        .output()
        .expect("ldd must be installed to run these tests");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut res = LddOutput {
        stdout: stdout.clone(),
        stderr: stderr.clone(),
        success: out.status.success(),
        ..Default::default()
    };
    for line in stdout.lines().chain(stderr.lines()) {
        if let Some(rest) = line.strip_prefix("undefined symbol: ") {
            let (sym, obj) = rest.split_once('\t').unwrap_or((rest, ""));
            let sym = match sym.split_once(", version ") {
                Some((s, v)) => format!("{s}@{v}"),
                None => sym.to_string(),
            };
            let obj = obj
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .to_string();
            res.undefined.push((obj, sym));
            continue;
        }
        if let Some(pos) = line.find(": version `") {
            // "<main>: <lib>: version `V' not found (required by <obj>)"
            let before = &line[..pos];
            let lib = before.rsplit(": ").next().unwrap_or(before).to_string();
            let after = &line[pos + ": version `".len()..];
            let (ver, rest) = after.split_once('\'').unwrap_or((after, ""));
            let req = rest
                .trim()
                .trim_start_matches("not found (required by ")
                .trim_end_matches(')')
                .to_string();
            res.missing_versions.push((lib, ver.to_string(), req));
            continue;
        }
        let Some(body) = line.strip_prefix('\t') else {
            continue;
        };
        if let Some((name, rest)) = body.split_once(" => ") {
            let path = if rest.trim() == "not found" {
                None
            } else {
                Some(
                    rest.rsplit_once(" (0x")
                        .map(|(p, _)| p)
                        .unwrap_or(rest)
                        .to_string(),
                )
            };
            res.objects.push(LddObject {
                name: name.to_string(),
                path,
            });
        } else if let Some((name, _)) = body.rsplit_once(" (0x") {
            if name.starts_with("linux-vdso") || name.starts_with("linux-gate") {
                continue;
            }
            res.objects.push(LddObject {
                name: name.to_string(),
                path: Some(name.to_string()),
            });
        }
    }
    res
}

/// The object lines `ldd` prints for a process whose executable was loaded with
/// `load_executable`, in order: walking the objects in load order (which is ld.so's
/// breadth-first order), each DT_NEEDED entry that brought in a new object adds that object,
/// each missing entry adds a "not found" line (ld.so adds a placeholder object for each).
/// The dynamic loader's own line goes where rtld.c moves it: right after the last real
/// object that entered the search list before it (placeholders are not in that list).
pub fn ldd_view(report: &LibsReport, interpreter: &str) -> Vec<LddObject> {
    ldd_view_with_preloads(report, interpreter, &[])
}

/// Same, for a process started with LD_PRELOAD (given as paths): they follow the executable.
pub fn ldd_view_with_preloads(
    report: &LibsReport,
    interpreter: &str,
    preloads: &[&str],
) -> Vec<LddObject> {
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut out: Vec<LddObject> = Vec::new();
    let mut last_real: Option<usize> = None;
    let objects: Vec<&cudoctor_ldso::ObjectReport> = report
        .objects
        .iter()
        .filter(|o| o.path != interpreter)
        .collect();
    if let Some(main) = objects.first() {
        seen.insert(main.path.clone());
    }
    for p in preloads {
        seen.insert(p.to_string());
        out.push(LddObject {
            name: p.to_string(),
            path: Some(p.to_string()),
        });
        last_real = Some(out.len() - 1);
    }
    for o in &objects {
        for n in &o.needed {
            match &n.resolved {
                None => out.push(LddObject {
                    name: n.name.clone(),
                    path: None,
                }),
                Some(p) => {
                    if !seen.insert(p.clone()) {
                        continue;
                    }
                    if p == interpreter {
                        let at = last_real.map_or(0, |i| i + 1);
                        out.insert(
                            at,
                            LddObject {
                                name: p.clone(),
                                path: Some(p.clone()),
                            },
                        );
                        last_real = Some(at);
                    } else {
                        out.push(LddObject {
                            name: n.name.clone(),
                            path: Some(p.clone()),
                        });
                        last_real = Some(out.len() - 1);
                    }
                }
            }
        }
    }
    out
}
