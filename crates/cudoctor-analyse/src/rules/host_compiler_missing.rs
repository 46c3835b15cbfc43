use crate::{Context, Finding, FixStep, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK016",
    name: "host-compiler-missing",
    layer: Layer::Toolkit,
    severity: Severity::Warning,
    summary: "An extension build would find no C/C++ compiler: nvcc's host compiler or torch's c++ is missing",
    docs: r#"## What it checks
Where a CUDA torch and a toolkit to build with are installed, the two compilers torch's
`cpp_extension` runs besides nvcc, looked up as the build looks them up: nvcc's host compiler
(`-ccbin $CC` when CC is set, a `-ccbin` in NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS,
NVCC_CCBIN, else `gcc` on PATH) and the C++ compiler of the `.cpp` sources (`CXX`, else `c++`
on PATH). Judged on the live machine only: under `--root` PATH is the inspecting shell's.

## Why it matters
A CUDA toolkit does not bring a host compiler: a slim container image, a fresh cloud image or
a conda environment with `cuda-nvcc` and no compilers has nvcc and no gcc. Every build then
stops at once: torch first warns "Your compiler (c++) is not compatible with the compiler
Pytorch was built with", then ninja prints "/bin/sh: 1: c++: not found", and nvcc prints
"gcc: No such file or directory" / "nvcc fatal : Failed to preprocess host compiler
properties.".

Running installed wheels is not affected: a warning about builds, as TK013.

## How to fix
Install the distribution's C++ compiler (`apt-get install g++` on Debian and Ubuntu: it brings
gcc, g++ and the `c++` name; `dnf install gcc-c++`; in a conda environment conda-forge's
`gxx`), within the range the toolkit accepts (TK013 checks it once it is there). Or point CC /
CXX at a compiler that is installed elsewhere.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    if ctx.snap.windows.is_some() {
        return Vec::new();
    }
    // The lookups of the live machine only (`cxx` is recorded there alone): under --root,
    // PATH is the inspecting shell's, and an older snapshot recorded no C++ compiler.
    let Some(tools) = ctx
        .snap
        .toolkit
        .build_tools
        .as_ref()
        .filter(|t| t.cxx.is_some())
    else {
        return Vec::new();
    };
    // Only where an extension build could otherwise run: a toolkit torch would build with.
    let Some(build) = ctx.build_toolkit().filter(|b| b.exists) else {
        return Vec::new();
    };
    if !ctx.torch_envs().iter().any(|t| t.cuda().is_some()) {
        return Vec::new();
    }
    // (what is missing, as named, chosen by, the failure it gives)
    let mut missing: Vec<(String, String, String)> = Vec::new();
    if let Some(hc) = tools.host_compiler.as_ref().filter(|h| h.path.is_none()) {
        // nvcc runs the program -ccbin names (the last word of CC that is no option).
        let program = hc
            .command
            .split_whitespace()
            .rfind(|w| !w.starts_with('-'))
            .unwrap_or(&hc.command);
        missing.push((
            format!("nvcc's host compiler `{}`", hc.command),
            hc.chosen_by.clone(),
            format!("{program}: No such file or directory\" and \"nvcc fatal   : Failed to preprocess host compiler properties."),
        ));
    }
    if let Some(cxx) = tools.cxx.as_ref().filter(|c| c.path.is_none()) {
        // ninja runs the command through /bin/sh, which runs CXX's first word.
        let program = cxx.command.split_whitespace().next().unwrap_or("c++");
        missing.push((
            format!("the C++ compiler `{}`", cxx.command),
            cxx.chosen_by.clone(),
            format!("/bin/sh: 1: {program}: not found"),
        ));
    }
    if missing.is_empty() {
        return Vec::new();
    }
    let what: Vec<&str> = missing.iter().map(|(w, ..)| w.as_str()).collect();
    let mut f = Finding::new(
        &RULE,
        format!(
            "An extension build would find no compiler: {} not found",
            what.join(" and ")
        ),
    );
    for (what, chosen_by, failure) in &missing {
        f = f.evidence(format!("{what} ({chosen_by}): not found"));
        f = f.evidence(format!("predicted: \"{failure}\""));
    }
    f = f
        .evidence(format!(
            "{} = {} -> toolkit {}",
            build.chosen_by,
            build.home,
            build.version.as_deref().unwrap_or("?")
        ))
        .cause("A CUDA toolkit brings nvcc but no host compiler: nvcc hands every CUDA file to the host compiler first, and torch compiles its C++ sources with it; without one every extension build stops at its first command.");
    let apt = ctx
        .snap
        .host
        .distro
        .as_deref()
        .is_some_and(|d| d.contains("Debian") || d.contains("Ubuntu"));
    let mut steps = Vec::new();
    if apt {
        steps.push(FixStep::Shell(
            "apt-get install g++   # gcc, g++ and c++".into(),
        ));
    } else {
        steps.push(FixStep::Prose(
            "Install the distribution's C++ compiler (gcc and g++: `dnf install gcc-c++`, `apt-get install g++`; in a conda environment conda-forge's gxx)".into(),
        ));
    }
    steps.push(FixStep::Prose(
        "Or set CC and CXX to a gcc and g++ installed elsewhere; the toolkit's host_config.h must accept its version (TK013)".into(),
    ));
    vec![f.steps(steps)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{BuildTools, HostCompiler, ProgramLookup};

    fn with(gcc: Option<&str>, cxx: Option<&str>) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.host.distro = Some("Debian GNU/Linux 12 (bookworm)".into());
        s.toolkit.build_tools = Some(BuildTools {
            host_compiler: Some(HostCompiler {
                chosen_by: "gcc on PATH".into(),
                command: "gcc".into(),
                path: gcc.map(str::to_string),
                ..Default::default()
            }),
            cxx: Some(ProgramLookup {
                chosen_by: "c++ on PATH".into(),
                command: "c++".into(),
                path: cxx.map(str::to_string),
            }),
            ..Default::default()
        });
        s
    }

    #[test]
    fn no_compiler_at_all_is_predicted_with_both_failures() {
        let f = run(&RULE, &with(None, None));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].title
                .contains("nvcc's host compiler `gcc` and the C++ compiler `c++` not found"),
            "{}",
            f[0].title
        );
        let ev = f[0].evidence.join("\n");
        assert!(ev.contains("\"gcc: No such file or directory\""), "{ev}");
        assert!(ev.contains("nvcc fatal   : Failed to preprocess host compiler properties."));
        assert!(ev.contains("/bin/sh: 1: c++: not found"));
        assert!(f[0].fix[0].text().starts_with("apt-get install g++"));
    }

    #[test]
    fn compilers_present_unknown_or_no_torch_say_nothing() {
        assert!(run(&RULE, &with(Some("/usr/bin/gcc"), Some("/usr/bin/c++"))).is_empty());
        // An older snapshot (or one of a --root): no C++ compiler looked up.
        assert!(run(&RULE, &h200()).is_empty());
        let mut s = with(None, None);
        s.toolkit.build_tools.as_mut().unwrap().cxx = None;
        assert!(run(&RULE, &s).is_empty());
        // No CUDA torch: nobody builds here.
        let mut s = with(None, None);
        s.python_envs.clear();
        assert!(run(&RULE, &s).is_empty());
    }

    #[test]
    fn a_cc_naming_a_missing_compiler_is_predicted_by_its_name() {
        let mut s = with(None, Some("/usr/bin/c++"));
        let tools = s.toolkit.build_tools.as_mut().unwrap();
        let hc = tools.host_compiler.as_mut().unwrap();
        hc.chosen_by = "CC".into();
        hc.command = "ccache gcc-15".into();
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        let ev = f[0].evidence.join("\n");
        assert!(ev.contains("(CC): not found"), "{ev}");
        assert!(ev.contains("\"gcc-15: No such file or directory\""), "{ev}");
    }

    #[test]
    fn only_the_cxx_missing_is_said_alone() {
        let f = run(&RULE, &with(Some("/usr/bin/gcc"), None));
        assert_eq!(f.len(), 1);
        assert!(f[0].title.ends_with("the C++ compiler `c++` not found"));
    }
}
