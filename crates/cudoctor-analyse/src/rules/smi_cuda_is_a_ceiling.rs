use crate::context::cuda_of;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "TK005",
    name: "smi-cuda-is-a-ceiling",
    layer: Layer::Toolkit,
    severity: Severity::Info,
    summary: "nvidia-smi's \"CUDA Version\" differs from nvcc's: this is normal",
    docs: r#"## What it checks
Whether the "CUDA Version" nvidia-smi shows differs from the version of the nvcc on PATH.

## Why it matters
It confuses many: nvidia-smi's number is the highest CUDA the *driver* supports, a ceiling, not
an installed toolkit. nvcc's number is the toolkit you compile with. They differ on most
healthy machines; only a toolkit *above* the ceiling is a problem (TK004).

## How to fix
Nothing to fix.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let (Some((max, source)), Some(nvcc)) = (
        ctx.driver_max_cuda(),
        ctx.snap.toolkit.nvcc_on_path.as_ref(),
    ) else {
        return Vec::new();
    };
    let Some(v) = nvcc.version.as_deref().and_then(cuda_of) else {
        return Vec::new();
    };
    if v >= max {
        return Vec::new();
    }
    vec![Finding::new(&RULE, format!("Driver supports up to CUDA {max}; nvcc is CUDA {v}: normal"))
        .evidence(format!("driver's highest CUDA {max} (from {source})"))
        .evidence(format!("{} reports {}", nvcc.path, nvcc.version.as_deref().unwrap_or("?")))
        .cause("nvidia-smi's \"CUDA Version\" is the newest CUDA the driver can run, not an installed toolkit; a lower toolkit is fine.")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn lower_toolkit_is_explained_as_normal() {
        let mut s = h200();
        s.toolkit.nvcc_on_path.as_mut().unwrap().version = Some("12.8.93".into());
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(run(&RULE, &h200()).is_empty());
    }
}
