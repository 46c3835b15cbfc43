use cudoctor_kb::CudaVersion;

use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK010",
    name: "nvcc-flag-unsupported",
    layer: Layer::Toolkit,
    severity: Severity::Error,
    summary: "A build flag in NVCC_APPEND_FLAGS / NVCC_PREPEND_FLAGS / TORCH_NVCC_FLAGS is newer than the selected toolkit",
    docs: r#"## What it checks
The words of `NVCC_APPEND_FLAGS` and `NVCC_PREPEND_FLAGS` (which nvcc itself adds to every
command line) and `TORCH_NVCC_FLAGS` (which torch's extension builder passes), looked up in the
knowledge base's table of toolkit features (`toolkit_features.toml`, each row with its
source): CUDA Tile C++ (`--enable-tile`, `--tile-only`, `--simt-only`: 13.3), the Advanced
Controls Interface that CompileIQ uses (`--apply-controls`: 13.3). The toolkit judged is the
one a build uses: CUDA_HOME, else CUDA_PATH, else the nvcc on PATH. Flags the table does not
know are left alone.

## Why it matters
nvcc stops at an unknown option (`nvcc fatal : Unknown option '--apply-controls'`), but only
when a build runs: an extension build (flash-attn, a custom op) fails minutes in, often
deep inside a pip log. The flag usually comes from a guide written for a newer toolkit.

## How to fix
Select a toolkit at least as new as the flag needs (CUDA_HOME / PATH to it), or remove the
flag from the variable.
"#,
    check,
};

const VARIABLES: [&str; 3] = [
    "NVCC_APPEND_FLAGS",
    "NVCC_PREPEND_FLAGS",
    "TORCH_NVCC_FLAGS",
];

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(tk) = ctx.build_toolkit() else {
        return Vec::new();
    };
    let Some(version) = tk
        .version
        .as_deref()
        .and_then(|v| v.parse::<CudaVersion>().ok())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for var in VARIABLES {
        let Some(value) = ctx.var(var) else { continue };
        for word in value.split_whitespace().filter(|w| w.starts_with('-')) {
            let Some(feature) = ctx.kb.nvcc_flag(word) else {
                continue;
            };
            if feature.since <= version {
                continue;
            }
            let flag = word.split('=').next().unwrap_or(word);
            let mut f = Finding::new(
                &RULE,
                format!(
                    "{var} passes {flag}, which needs CUDA {} but the build toolkit is {}",
                    feature.since,
                    tk.version.as_deref().unwrap_or("?")
                ),
            )
            .evidence(format!("{var}={value}"))
            .evidence(format!(
                "build toolkit: {} (chosen by {}), version {}",
                tk.home,
                tk.chosen_by,
                tk.version.as_deref().unwrap_or("?")
            ))
            .evidence(format!(
                "{flag}: {} — since CUDA {} (knowledge base: {})",
                feature.name, feature.since, feature.source
            ));
            if let Some(note) = &feature.note {
                f = f.evidence(format!("note: {note}"));
            }
            f = f
                .cause(format!("This toolkit's nvcc does not know {flag}: every CUDA compilation that picks up {var} stops with an unknown-option error."))
                .prose(format!(
                    "Point CUDA_HOME (and PATH) at a CUDA {} or newer toolkit, or remove {flag} from {var}",
                    feature.since
                ));
            out.push(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{h200, run};

    #[test]
    fn flags_newer_than_the_build_toolkit() {
        let mut s = h200();
        s.env
            .insert("CUDA_HOME".into(), "/usr/local/cuda-13.0".into());
        assert!(run(&RULE, &s).is_empty());
        s.env.insert(
            "NVCC_APPEND_FLAGS".into(),
            "--use_fast_math --apply-controls=tuned.acf".into(),
        );
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1, "the unknown --use_fast_math is left alone");
        assert!(f[0].title.starts_with(
            "NVCC_APPEND_FLAGS passes --apply-controls, which needs CUDA 13.3 but the build toolkit is 13.0.88"
        ), "{}", f[0].title);
        s.env
            .insert("TORCH_NVCC_FLAGS".into(), "-enable-tile -std=c++20".into());
        assert_eq!(run(&RULE, &s).len(), 2);
        s.toolkit.toolkits[0].version = Some("13.3.36".into());
        assert!(run(&RULE, &s).is_empty(), "13.3 has both");
    }
}
