use cudoctor_kb::{ComputeCapability, CudaVersion, DriverVersion};

use crate::{Confidence, Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "PLT002",
    name: "require-cuda-unmet",
    layer: Layer::Platform,
    severity: Severity::Error,
    summary: "The image's NVIDIA_REQUIRE_CUDA asks for a newer CUDA than the host driver runs",
    docs: r#"## What it checks
`NVIDIA_REQUIRE_CUDA` (set by NVIDIA's CUDA images, e.g. `cuda>=13.0 brand=tesla,driver>=535,...`)
against the host, as the NVIDIA container runtime reads it: space-separated clauses are
alternatives, comma-separated conditions within one must all hold. When only a
`brand=...,driver>=...` clause can hold (cudoctor cannot see the brand), the runtime accepts the
image and its newer CUDA runs through the cuda-compat forward-compatibility libraries: a warning.
When no clause can hold, the runtime refuses the image: an error.

## Why it matters
The NVIDIA container runtime refuses such a container ("requirement error: unsatisfied
condition: cuda>=13.0"), or, when the check is disabled (NVIDIA_DISABLE_REQUIRE), the CUDA
runtime inside fails with "CUDA driver version is insufficient". cuda-compat bridges the gap
only on data-center GPUs with a supported driver branch.

## How to fix
Upgrade the host driver, or use an image built for an older CUDA (a tag matching the driver's
"CUDA Version").
"#,
    check,
};

/// `cuda>=13.0` from the variable's first clause that names one.
pub fn required_cuda(value: &str) -> Option<CudaVersion> {
    value
        .split_whitespace()
        .flat_map(|c| c.split(','))
        .find_map(|c| c.strip_prefix("cuda>="))
        .and_then(|v| cuda_version(v).ok())
}

/// What one condition or clause says about this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holds {
    Yes,
    No,
    /// The condition names something cudoctor cannot see (`brand=`, `arch=` without a GPU).
    Unknown,
}

/// One condition, `key` `op` `value`: `driver>=535`, `cuda<13`, `brand=tesla`.
struct Condition<'v> {
    key: &'v str,
    op: &'v str,
    value: &'v str,
}

fn parse_condition(text: &str) -> Option<Condition<'_>> {
    let at = text.find(['<', '>', '=', '!'])?;
    let (key, rest) = text.split_at(at);
    let op_len = rest
        .chars()
        .take_while(|c| matches!(c, '<' | '>' | '=' | '!'))
        .count();
    let (op, value) = rest.split_at(op_len);
    let known_key = matches!(key, "cuda" | "driver" | "arch" | "brand");
    let known_op = matches!(op, "<" | "<=" | "=" | "==" | ">=" | ">" | "!=");
    (known_key && known_op && !value.is_empty()).then_some(Condition { key, op, value })
}

/// `cuda>=13` is written without a minor as often as with one.
fn cuda_version(text: &str) -> Result<CudaVersion, cudoctor_kb::VersionError> {
    if text.contains('.') {
        text.parse()
    } else {
        format!("{text}.0").parse()
    }
}

fn compare<T: Ord>(have: &T, op: &str, want: &T) -> bool {
    let o = have.cmp(want);
    match op {
        "<" => o.is_lt(),
        "<=" => o.is_le(),
        ">=" => o.is_ge(),
        ">" => o.is_gt(),
        "!=" => o.is_ne(),
        _ => o.is_eq(),
    }
}

struct Host {
    cuda: CudaVersion,
    driver: Option<DriverVersion>,
    ccs: Vec<ComputeCapability>,
}

/// None: the condition cannot be read (garbage, or a value of the wrong form).
fn judge_condition(c: &Condition, host: &Host) -> Option<Holds> {
    let yes_no = |b: bool| if b { Holds::Yes } else { Holds::No };
    Some(match c.key {
        "cuda" => yes_no(compare(&host.cuda, c.op, &cuda_version(c.value).ok()?)),
        "driver" => {
            let want: DriverVersion = c.value.parse().ok()?;
            match &host.driver {
                Some(d) => yes_no(compare(d, c.op, &want)),
                None => Holds::Unknown,
            }
        }
        "arch" => {
            let want: ComputeCapability = c.value.parse().ok()?;
            if host.ccs.is_empty() {
                Holds::Unknown
            } else {
                yes_no(host.ccs.iter().all(|cc| compare(cc, c.op, &want)))
            }
        }
        // The product brand (tesla, geforce, ...) is not in the snapshot.
        _ => Holds::Unknown,
    })
}

/// The value's clauses with what each says, or None when any part cannot be read.
///
/// libnvidia-container's documented semantics for NVIDIA_REQUIRE_* (nvidia-container-runtime
/// README, "NVIDIA_REQUIRE_*"): "space-separated constraints are ORed, comma-separated
/// constraints are ANDed". NVIDIA's images set `cuda>=13.0 brand=tesla,driver>=535,driver<536
/// ...`: the runtime accepts the container when the driver runs CUDA 13.0, or when it is a
/// Tesla-brand GPU on an R535 driver (the image's cuda-compat libraries then bridge the gap).
fn clauses<'v>(value: &'v str, host: &Host) -> Option<Vec<(&'v str, Holds)>> {
    value
        .split_whitespace()
        .map(|clause| {
            let mut all = Holds::Yes;
            for text in clause.split(',') {
                match judge_condition(&parse_condition(text)?, host)? {
                    Holds::No => all = Holds::No,
                    Holds::Unknown if all == Holds::Yes => all = Holds::Unknown,
                    _ => {}
                }
            }
            Some((clause, all))
        })
        .collect()
}

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(req) = ctx.var("NVIDIA_REQUIRE_CUDA") else {
        return Vec::new();
    };
    let (Some(needed), Some((max, source))) = (required_cuda(req), ctx.driver_max_cuda()) else {
        return Vec::new();
    };
    let host = Host {
        cuda: max,
        driver: ctx.driver_version(),
        ccs: ctx.gpus().iter().filter_map(|g| g.cc).collect(),
    };
    let Some(judged) = clauses(req, &host) else {
        return Vec::new();
    };
    if judged.is_empty() || judged.iter().any(|(_, h)| *h == Holds::Yes) {
        return Vec::new();
    }
    let compat = &ctx.snap.platform.cuda_compat_paths;
    let mut f = Finding::new(
        &RULE,
        format!("The image requires CUDA {needed}; the host driver runs up to {max}"),
    )
    .evidence(format!("NVIDIA_REQUIRE_CUDA={req}"))
    .evidence(format!("driver's highest CUDA {max} (from {source})"))
    .evidence(ctx.driver_evidence());
    if !compat.is_empty() {
        f = f.evidence(format!("cuda-compat libraries at {}", compat.join(", ")));
    }
    let maybe = judged.iter().find(|(_, h)| *h == Holds::Unknown);
    if let Some((clause, _)) = maybe {
        f = f
            .severity(Severity::Warning)
            .confidence(Confidence::Likely)
            .evidence(format!("clause `{clause}`: its driver and arch conditions hold; its brand is not known to cudoctor"))
            .cause(format!(
                "The container runtime accepts the image through `{clause}` if the GPU's brand matches (space-separated clauses are alternatives). The CUDA {needed} runtime inside then runs only through forward compatibility: the image's cuda-compat libraries, which work on data-center GPUs with a supported driver branch only{}.",
                if compat.is_empty() { "; none were found in this image" } else { "" }
            ));
    } else {
        f = f.cause("No clause of NVIDIA_REQUIRE_CUDA holds on this host (space-separated clauses are alternatives, comma-separated conditions must all hold): the NVIDIA container runtime refuses the image, and with the check disabled the CUDA runtime inside fails with \"CUDA driver version is insufficient\".");
    }
    vec![f
        .prose(format!(
            "Upgrade the host driver to one that supports CUDA {needed}"
        ))
        .prose(format!("or use an image built for CUDA {max} or older"))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn with_require(driver: &str, max: &str, value: &str) -> Vec<Finding> {
        let mut s = machine(Some((driver, max)), &[("NVIDIA L4", "8.9")]);
        s.env.insert("NVIDIA_REQUIRE_CUDA".into(), value.into());
        run(&RULE, &s)
    }

    #[test]
    fn an_image_no_clause_accepts_is_an_error() {
        let mut s = machine(Some(("550.54.14", "12.4")), &[("NVIDIA L4", "8.9")]);
        s.env.insert(
            "NVIDIA_REQUIRE_CUDA".into(),
            "cuda>=13.0 brand=tesla,driver>=535,driver<536".into(),
        );
        assert_eq!(run(&RULE, &s)[0].severity, Severity::Error);
        // cuda-compat does not make the runtime accept an image no clause admits.
        s.platform.cuda_compat_paths = vec!["/usr/local/cuda-13.0/compat".into()];
        assert_eq!(run(&RULE, &s)[0].severity, Severity::Error);
    }

    #[test]
    fn a_driver_clause_that_holds_means_forward_compatibility() {
        let f = with_require(
            "535.104.05",
            "12.2",
            "cuda>=13.0 brand=tesla,driver>=535,driver<536 brand=unknown,driver>=570,driver<571",
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].confidence, Confidence::Likely);
        assert!(
            f[0].cause.contains("forward compatibility"),
            "{}",
            f[0].cause
        );
    }

    #[test]
    fn clauses_are_ored_and_conditions_anded() {
        // Second clause holds outright: accepted.
        assert!(with_require("535.104.05", "12.2", "cuda>=13.0 driver>=535,driver<536").is_empty());
        // One condition of the clause fails: not accepted.
        assert_eq!(
            with_require("535.104.05", "12.2", "cuda>=13.0 driver>=535,driver<535.50")[0].severity,
            Severity::Error
        );
        assert!(with_require("535.104.05", "12.2", "cuda>=12.2").is_empty());
        assert!(with_require("535.104.05", "12.2", "cuda>=13 arch>=8.0,driver>=535").is_empty());
    }

    #[test]
    fn garbage_is_no_finding() {
        for v in [
            "cuda>=13.0 brand",
            "cuda>=13.0 driver>=abc",
            "cuda>=13.0 ,,",
            "cuda>=13.0 wat>=1",
        ] {
            assert!(with_require("535.104.05", "12.2", v).is_empty(), "{v}");
        }
    }

    #[test]
    fn the_real_h200_container_is_fine() {
        let mut s = h200();
        s.env.insert(
            "NVIDIA_REQUIRE_CUDA".into(),
            "cuda>=13.0 brand=unknown,driver>=535,driver<536".into(),
        );
        assert!(run(&RULE, &s).is_empty());
        assert_eq!(
            required_cuda("cuda>=12.4 brand=tesla"),
            Some(CudaVersion::new(12, 4))
        );
        assert_eq!(required_cuda("garbage"), None);
    }
}
