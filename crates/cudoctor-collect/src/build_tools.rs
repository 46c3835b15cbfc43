//! The programs an extension build runs besides nvcc: the host compiler nvcc calls and ninja.
//! Found as torch's `cpp_extension` and nvcc find them; the compiler's version read from its
//! name or its installation's files, and run (`--version`) only when neither tells, on the live
//! machine, and never when it lies inside an inspected environment.

use cudoctor_snapshot::{
    Attempt, BuildTools, CompilerFamily, HostCompiler, Outcome, ProgramLookup, PythonEnv,
};

use crate::host::{CommandOutcome, Host};

pub fn collect(host: &Host, envs: &[PythonEnv], attempts: &mut Vec<Attempt>) -> BuildTools {
    let ninja_in_envs = envs
        .iter()
        .map(|e| format!("{}/bin/ninja", e.prefix.trim_end_matches('/')))
        .filter(|p| host.is_file(p))
        .collect();
    BuildTools {
        host_compiler: host_compiler(host, envs, attempts),
        ninja_on_path: host.which("ninja"),
        ninja_in_envs,
        // Looked up on the live machine only: under --root, PATH is the inspecting shell's, not
        // the root's (TK016 judges only a lookup made here).
        cxx: host.runs_programs().then(|| cxx(host)),
    }
}

/// The C++ compiler torch's `cpp_extension` compiles `.cpp` sources with on Linux: `CXX`, else
/// `c++` (its `get_cxx_compiler`), found as the shell finds it.
fn cxx(host: &Host) -> ProgramLookup {
    let (chosen_by, command) = match host.var("CXX").filter(|v| !v.trim().is_empty()) {
        Some(v) => ("CXX".to_string(), v.to_string()),
        None => ("c++ on PATH".to_string(), "c++".to_string()),
    };
    // CXX may carry a launcher (`ccache g++`): the shell runs its first word.
    let program = command.split_whitespace().next().unwrap_or("").to_string();
    let path = if program.contains('/') {
        host.is_file(&program).then(|| program.clone())
    } else {
        host.which(&program)
    };
    ProgramLookup {
        chosen_by,
        command,
        path,
    }
}

/// The `-ccbin` value in nvcc flags (`-ccbin X`, `-ccbin=X`, `--compiler-bindir X`, `=X`).
fn ccbin_in_flags(flags: &str) -> Option<String> {
    let words: Vec<&str> = flags.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        for name in ["-ccbin", "--compiler-bindir"] {
            if *w == name {
                return words.get(i + 1).map(|s| s.to_string());
            }
            if let Some(v) = w.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
                return Some(v.to_string());
            }
        }
    }
    None
}

fn host_compiler(
    host: &Host,
    envs: &[PythonEnv],
    attempts: &mut Vec<Attempt>,
) -> Option<HostCompiler> {
    // torch passes `-ccbin $CC` to nvcc when CC is set (and no -ccbin is among the flags);
    // nvcc's own settings come next; nvcc's default on Linux is `gcc` on PATH.
    let (chosen_by, command) = if let Some(cc) = host.var("CC").filter(|v| !v.is_empty()) {
        ("CC".to_string(), cc.to_string())
    } else if let Some((var, v)) = ["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"]
        .iter()
        .find_map(|var| Some((*var, ccbin_in_flags(host.var(var)?)?)))
    {
        (var.to_string(), v)
    } else if let Some(v) = host.var("NVCC_CCBIN").filter(|v| !v.is_empty()) {
        ("NVCC_CCBIN".to_string(), v.to_string())
    } else {
        ("gcc on PATH".to_string(), "gcc".to_string())
    };
    // CC may carry arguments (`ccache gcc`): the compiler is the last word that is no option.
    let program = command
        .split_whitespace()
        .rfind(|w| !w.starts_with('-'))
        .unwrap_or(&command)
        .to_string();
    let path = if program.contains('/') {
        // -ccbin may name a directory: nvcc looks for gcc (or clang) in it.
        if host.is_dir(&program) {
            ["gcc", "clang"]
                .iter()
                .map(|n| format!("{}/{n}", program.trim_end_matches('/')))
                .find(|p| host.is_file(p))
        } else {
            host.is_file(&program).then(|| program.clone())
        }
    } else {
        host.which(&program)
    };
    let mut hc = HostCompiler {
        chosen_by,
        command,
        path: path.clone(),
        ..Default::default()
    };
    let Some(path) = path else {
        return Some(hc);
    };
    let (resolved, hops) = host.resolve(&path).unwrap_or((path.clone(), Vec::new()));
    hc.resolved = Some(resolved.clone());
    let names: Vec<&str> = std::iter::once(path.as_str())
        .chain(hops.iter().map(String::as_str))
        .chain(std::iter::once(resolved.as_str()))
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .collect();
    hc.family = names.iter().find_map(|n| family_of_name(n));
    // 1. The version in a program's name (Debian's gcc -> gcc-12 -> x86_64-linux-gnu-gcc-12).
    if let Some((name, v)) = names
        .iter()
        .find_map(|n| version_in_name(n).map(|v| (*n, v)))
    {
        hc.version = Some(v);
        hc.version_source = Some(format!("the program's name ({name})"));
        return Some(hc);
    }
    // 2. The installation's own directory of that compiler version.
    if let Some((family, v, dir)) = version_from_install(host, &resolved, hc.family) {
        hc.family = Some(family);
        hc.version = Some(v);
        hc.version_source = Some(dir);
        return Some(hc);
    }
    // 3. `--version`, on the live machine, of a program outside every inspected environment.
    let label = format!("{path} --version");
    if !host.runs_programs() {
        attempts.push(Attempt::new(
            label,
            Outcome::NotRunUnderRoot,
            "no file tells the host compiler's version",
        ));
    } else if crate::toolkit::inside_an_env(host, envs, &resolved)
        || crate::toolkit::inside_an_env(host, envs, &path)
    {
        attempts.push(Attempt::new(
            label,
            Outcome::Skipped,
            "not run: a program inside an inspected environment, and no file tells its version",
        ));
    } else if let CommandOutcome::Exited { stdout, .. } = host.run(&path, &["--version"]) {
        if let Some((family, v)) = parse_version_output(&stdout) {
            hc.family = Some(family);
            hc.version = Some(v);
            hc.version_source = Some(label);
        }
    }
    Some(hc)
}

fn family_of_name(name: &str) -> Option<CompilerFamily> {
    if name.contains("clang") {
        Some(CompilerFamily::Clang)
    } else if name.contains("gcc") || name.contains("g++") {
        Some(CompilerFamily::Gcc)
    } else {
        None
    }
}

/// `gcc-12`, `x86_64-linux-gnu-g++-12`, `clang-19`, `clang++-16` -> the version after the
/// compiler's name.
pub fn version_in_name(name: &str) -> Option<String> {
    for stem in ["gcc-", "g++-", "clang-", "clang++-"] {
        let Some(pos) = name.rfind(stem) else {
            continue;
        };
        let v = &name[pos + stem.len()..];
        let ok = !v.is_empty()
            && v.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        if ok {
            return Some(v.to_string());
        }
    }
    None
}

/// `<prefix>/lib/gcc/<target>/<version>` (gcc, conda's compilers too) or
/// `<prefix>/lib/clang/<version>` beside `<prefix>/bin/<compiler>`, when exactly one version is
/// installed there.
fn version_from_install(
    host: &Host,
    resolved: &str,
    family: Option<CompilerFamily>,
) -> Option<(CompilerFamily, String, String)> {
    let prefix = resolved.rsplit_once('/')?.0.strip_suffix("/bin")?;
    let numeric = |n: &str| {
        n.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    let only = |dir: &str| {
        let v: Vec<String> = host
            .list_dir(dir)
            .into_iter()
            .filter(|n| numeric(n))
            .collect();
        (v.len() == 1).then(|| v[0].clone())
    };
    if family != Some(CompilerFamily::Clang) {
        let gcc = format!("{prefix}/lib/gcc");
        let targets = host.list_dir(&gcc);
        if let [target] = targets.as_slice() {
            let dir = format!("{gcc}/{target}");
            if let Some(v) = only(&dir) {
                return Some((CompilerFamily::Gcc, v.clone(), format!("{dir}/{v}")));
            }
        }
    }
    if family != Some(CompilerFamily::Gcc) {
        let dir = format!("{prefix}/lib/clang");
        if let Some(v) = only(&dir) {
            return Some((CompilerFamily::Clang, v.clone(), format!("{dir}/{v}")));
        }
    }
    None
}

/// `gcc (Debian 12.2.0-14) 12.2.0`, `clang version 19.1.7`, `Ubuntu clang version 18.1.3`.
pub fn parse_version_output(out: &str) -> Option<(CompilerFamily, String)> {
    let first = out.lines().find(|l| !l.trim().is_empty())?;
    let version_word = |s: &str| {
        s.split_whitespace()
            .find(|w| {
                w.contains('.')
                    && w.split('.')
                        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            })
            .map(str::to_string)
    };
    if let Some(rest) = first.split("clang version ").nth(1) {
        return Some((CompilerFamily::Clang, version_word(rest)?));
    }
    let word = first.split_whitespace().next()?;
    let gnu = ["gcc", "g++", "cc", "c++"]
        .iter()
        .any(|n| word == *n || word.ends_with(&format!("-{n}")))
        || first.contains("(GCC)");
    if gnu {
        // The version is the last dotted number of the line (after the vendor's parentheses).
        let v = first.split_whitespace().rev().find_map(version_word)?;
        return Some((CompilerFamily::Gcc, v));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_in_names() {
        assert_eq!(version_in_name("gcc-12").as_deref(), Some("12"));
        assert_eq!(
            version_in_name("x86_64-linux-gnu-g++-11").as_deref(),
            Some("11")
        );
        assert_eq!(version_in_name("clang-19").as_deref(), Some("19"));
        assert_eq!(version_in_name("clang++-16").as_deref(), Some("16"));
        assert_eq!(version_in_name("gcc"), None);
        assert_eq!(version_in_name("x86_64-conda-linux-gnu-gcc"), None);
        assert_eq!(version_in_name("gcc-ar-12"), None);
    }

    #[test]
    fn version_output_of_gcc_and_clang() {
        assert_eq!(
            parse_version_output("gcc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright"),
            Some((CompilerFamily::Gcc, "12.2.0".into()))
        );
        assert_eq!(
            parse_version_output("g++ (GCC) 11.4.1 20231218 (Red Hat 11.4.1-3)\n"),
            Some((CompilerFamily::Gcc, "11.4.1".into()))
        );
        assert_eq!(
            parse_version_output("Ubuntu clang version 18.1.3 (1ubuntu1)\nTarget: x86_64"),
            Some((CompilerFamily::Clang, "18.1.3".into()))
        );
        assert_eq!(parse_version_output("icx (ICX) 2024.0\n"), None);
    }

    #[test]
    fn ccbin_in_nvcc_flags() {
        assert_eq!(
            ccbin_in_flags("-ccbin /usr/bin/g++-11 -O2").as_deref(),
            Some("/usr/bin/g++-11")
        );
        assert_eq!(
            ccbin_in_flags("--compiler-bindir=/opt/gcc/bin").as_deref(),
            Some("/opt/gcc/bin")
        );
        assert_eq!(ccbin_in_flags("-allow-unsupported-compiler"), None);
    }
}
