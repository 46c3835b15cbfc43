use cudoctor_snapshot::{CompilerFamily, CompilerRange, HostCompiler};

use crate::{Context, Finding, FixStep, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK013",
    name: "host-compiler-unsupported",
    layer: Layer::Toolkit,
    severity: Severity::Warning,
    summary: "The toolkit an extension build would use refuses the host compiler it would call",
    docs: r#"## What it checks
The host compiler nvcc would call (torch's `cpp_extension` passes `-ccbin $CC` when CC is set;
else a `-ccbin` in NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS, NVCC_CCBIN, else `gcc` on PATH),
its version read from its name (`gcc-12`), its installation's `lib/gcc/<target>/<version>`, or
its `--version` when it lies outside every inspected environment, against the range the toolkit
the build would use accepts: the `#error -- unsupported GNU version!` (and clang) guards of that
toolkit's own `include/crt/host_config.h`, their `#if` conditions evaluated.

## Why it matters
nvcc includes `host_config.h` in every CUDA file it compiles: with a compiler outside its range
every `.cu` file of the build (flash-attn, apex, DeepSpeed ops, `load_inline`) stops at once
with that `#error`, e.g. "unsupported GNU version! gcc versions later than 11 are not
supported!". A distribution upgrade that brings a newer gcc breaks builds that worked.

Running installed wheels is not affected: a warning about builds, as TK002.

## How to fix
Install a gcc (or clang) in the range and give it to the build: `export CC=gcc-N CXX=g++-N`
(torch passes CC to nvcc as `-ccbin`). Or install a toolkit that supports the present compiler.
`NVCC_APPEND_FLAGS=-allow-unsupported-compiler` switches the check off, at your own risk (NVIDIA:
"may cause compilation failure or incorrect run time execution"): tried with NVIDIA's nvcc 13.1
and Debian's gcc 16, a torch extension then stops in gcc 16's own C++ headers, which nvcc's
front end of that release cannot read (docs/build-readiness.md).
"#,
    check,
};

/// `gcc 12`, as the finding names a compiler.
fn label(hc: &HostCompiler, family: CompilerFamily) -> String {
    format!("{} {}", family.name(), hc.version.as_deref().unwrap_or("?"))
}

/// "3.3 to 22", "up to 16", "16 and later".
fn range_text(r: &CompilerRange) -> String {
    let min = r.min.map(|[a, b]| format!("{a}.{b}"));
    match (min, r.max_major) {
        (Some(lo), Some(hi)) => format!("{lo} to {hi}.x"),
        (None, Some(hi)) => format!("up to {hi}.x"),
        (Some(lo), None) => format!("{lo} and later"),
        (None, None) => "any".to_string(),
    }
}

/// The message as nvcc prints it, up to NVIDIA's sentence about the override flag.
fn headline(message: &str) -> &str {
    message
        .split(" The nvcc flag")
        .next()
        .unwrap_or(message)
        .trim()
}

fn check(ctx: &Context) -> Vec<Finding> {
    if ctx.snap.windows.is_some() {
        return Vec::new();
    }
    let Some((build, tk)) = ctx.build_toolkit_facts() else {
        return Vec::new();
    };
    let Some(support) = &tk.host_compilers else {
        return Vec::new();
    };
    let Some(hc) = ctx
        .snap
        .toolkit
        .build_tools
        .as_ref()
        .and_then(|b| b.host_compiler.as_ref())
    else {
        return Vec::new();
    };
    let (Some(family), Some(v)) = (hc.family, hc.version_pair()) else {
        return Vec::new();
    };
    let Some(range) = support.range(family) else {
        return Vec::new();
    };
    // The user switched the check off (nvcc then defines __NV_NO_HOST_COMPILER_CHECK).
    let overridden = ["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"]
        .iter()
        .any(|var| {
            ctx.var(var)
                .is_some_and(|f| f.contains("-allow-unsupported-compiler"))
        });
    if overridden {
        return Vec::new();
    }
    let too_old = range.min.is_some_and(|m| v < m);
    let too_new = range.max_major.is_some_and(|m| v[0] > m);
    if !too_old && !too_new {
        return Vec::new();
    }
    let cuda = tk
        .version
        .as_deref()
        .map(|v| format!("CUDA {v}"))
        .unwrap_or_else(|| "The toolkit".to_string());
    let compiler = label(hc, family);
    let mut f = Finding::new(
        &RULE,
        format!(
            "nvcc would refuse the host compiler: {compiler} is {} than {cuda} accepts ({} {})",
            if too_new { "newer" } else { "older" },
            family.name(),
            range_text(range)
        ),
    )
    .evidence(format!(
        "{}: {} -> {} ({compiler}, read from {})",
        hc.chosen_by,
        hc.command,
        hc.resolved.as_deref().or(hc.path.as_deref()).unwrap_or("?"),
        hc.version_source.as_deref().unwrap_or("?")
    ))
    .evidence(format!(
        "{} = {} -> {}",
        build.chosen_by, build.home, tk.root
    ))
    .evidence(format!(
        "{}:{}: #if {}",
        support.file, range.line, range.condition
    ))
    .evidence(format!(
        "predicted, for every .cu file: \"crt/host_config.h:{}:2: error: #error {}\"",
        range.line,
        headline(&range.message)
    ))
    .cause("nvcc includes host_config.h in every CUDA file it compiles, and that header stops the compilation when the host compiler's version is outside the range this toolkit was released for.");
    let steps = fix_steps(ctx, family, range, too_new);
    f = f.steps(steps);
    vec![f]
}

fn fix_steps(
    ctx: &Context,
    family: CompilerFamily,
    range: &CompilerRange,
    too_new: bool,
) -> Vec<FixStep> {
    let mut steps = Vec::new();
    // The version to install: the newest the toolkit accepts, or its lowest for a compiler
    // that is too old.
    let want = if too_new {
        range.max_major
    } else {
        range.min.map(|[m, _]| m)
    };
    let apt = ctx
        .snap
        .host
        .distro
        .as_deref()
        .is_some_and(|d| d.contains("Debian") || d.contains("Ubuntu"));
    if let Some(n) = want {
        let (cc, cxx, pkg) = match family {
            CompilerFamily::Clang => (
                format!("clang-{n}"),
                format!("clang++-{n}"),
                format!("clang-{n}"),
            ),
            _ => (format!("gcc-{n}"), format!("g++-{n}"), format!("g++-{n}")),
        };
        let which = if too_new { "or older" } else { "or newer" };
        if apt {
            steps.push(FixStep::Shell(format!(
                "apt-get install {pkg}   # {} {n} ({which}), within the toolkit's range",
                family.name()
            )));
        } else {
            steps.push(FixStep::Prose(format!(
                "Install {} {n} ({which}) with the distribution's packages (in a conda environment: conda-forge's compilers of that version)",
                family.name()
            )));
        }
        steps.push(FixStep::Shell(format!(
            "export CC={cc} CXX={cxx}   # torch passes CC to nvcc as -ccbin"
        )));
    }
    steps.push(FixStep::Prose(
        "Or install a CUDA Toolkit whose host_config.h accepts the present compiler (of torch's CUDA major)".into(),
    ));
    steps.push(FixStep::Shell(
        "export NVCC_APPEND_FLAGS='-allow-unsupported-compiler'   # at your own risk: the compiler's newer C++ headers may still fail to compile, or run wrongly".into(),
    ));
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use cudoctor_snapshot::{BuildTools, HostCompilerSupport};

    fn with(compiler: HostCompiler, max_gcc: u32) -> cudoctor_snapshot::Snapshot {
        let mut s = h200();
        s.host.distro = Some("Debian GNU/Linux 12 (bookworm)".into());
        s.toolkit.toolkits[0].host_compilers = Some(HostCompilerSupport {
            file: "/usr/local/cuda-13.0/include/crt/host_config.h".into(),
            ranges: vec![CompilerRange {
                family: CompilerFamily::Gcc,
                min: None,
                max_major: Some(max_gcc),
                condition: format!("__GNUC__ > {max_gcc}"),
                line: 137,
                message: format!("-- unsupported GNU version! gcc versions later than {max_gcc} are not supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; however, ..."),
            }],
        });
        s.toolkit.build_tools = Some(BuildTools {
            host_compiler: Some(compiler),
            ..Default::default()
        });
        s
    }

    fn gcc(version: &str) -> HostCompiler {
        HostCompiler {
            chosen_by: "gcc on PATH".into(),
            command: "gcc".into(),
            path: Some("/usr/bin/gcc".into()),
            resolved: Some(format!("/usr/bin/x86_64-linux-gnu-gcc-{version}")),
            family: Some(CompilerFamily::Gcc),
            version: Some(version.into()),
            version_source: Some(format!("the program's name (gcc-{version})")),
        }
    }

    #[test]
    fn a_gcc_newer_than_the_header_accepts_is_predicted_with_nvccs_message() {
        let f = run(&RULE, &with(gcc("12"), 11));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].title.contains("gcc 12 is newer than"),
            "{}",
            f[0].title
        );
        assert!(f[0].evidence.iter().any(|e| e.contains(
            "error: #error -- unsupported GNU version! gcc versions later than 11 are not supported!\""
        )), "{:?}", f[0].evidence);
        let fix: Vec<String> = f[0].fix.iter().map(|s| s.text().to_string()).collect();
        assert!(fix[0].starts_with("apt-get install g++-11"), "{fix:?}");
        assert!(fix[1].starts_with("export CC=gcc-11 CXX=g++-11"), "{fix:?}");
        assert!(fix
            .iter()
            .any(|s| s.contains("-allow-unsupported-compiler")));
    }

    #[test]
    fn a_supported_unknown_or_overridden_compiler_says_nothing() {
        assert!(run(&RULE, &with(gcc("12"), 16)).is_empty());
        let mut unknown = gcc("12");
        unknown.version = None;
        assert!(run(&RULE, &with(unknown, 11)).is_empty());
        let mut s = with(gcc("12"), 11);
        s.env.insert(
            "NVCC_APPEND_FLAGS".into(),
            "-allow-unsupported-compiler".into(),
        );
        assert!(run(&RULE, &s).is_empty());
        // No header read (an older snapshot).
        assert!(run(&RULE, &h200()).is_empty());
    }
}
