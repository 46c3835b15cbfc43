use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "ACC010",
    name: "compile-amp-floor",
    layer: Layer::Acceleration,
    severity: Severity::Info,
    summary: "A GPU or torch below the floor of torch.compile or bfloat16 autocast",
    docs: r#"## What it checks
Without running anything: each environment's torch and each GPU against the knowledge base's
floors (`torch_floors.toml`, each row with its source): torch.compile exists from torch 2.0;
Inductor's GPU code generator (Triton) needs compute capability 7.0 (torch's own
`GPUTooOldForTriton`); bfloat16 is supported from compute capability 8.0
(`torch.cuda.is_bf16_supported`). Each is info: a property of the GPU or of the torch release
to plan around, not a breakage of the stack that a command repairs (check's warnings and errors
are what a fix changes). Where a program really compiles for such a GPU, `cudoctor run` and
`check --deep` see the fallback (ACC003).

## Why it matters
`torch.compile(model)` on a GPU below the floor raises at the first call, or — with
`torch._dynamo.config.suppress_errors` or a framework that catches the error — runs eagerly
with no speed-up and no message. bfloat16 autocast on a GPU without bf16 is refused or emulated,
so mixed-precision recipes written for A100/H100 misbehave on V100/T4.

## How to fix
On GPUs below 7.0 do not compile for the GPU (or use `backend="eager"`/`"aot_eager"` on purpose);
below 8.0 use float16 autocast with `torch.amp.GradScaler("cuda")` instead of bfloat16; for
torch.compile itself, a torch 2.x build (`cudoctor plan`).
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let gpus = ctx.gpus();
    let mut out = Vec::new();
    let torch_envs: Vec<_> = ctx
        .torch_envs()
        .into_iter()
        .filter(|t| t.cuda().is_some())
        .collect();
    if torch_envs.is_empty() {
        return out;
    }
    for floor in ctx.kb.torch_floors() {
        if let Some(min_cc) = floor.min_cc {
            let below: Vec<String> = gpus
                .iter()
                .filter(|g| g.cc.is_some_and(|cc| cc < min_cc))
                .map(|g| g.label())
                .collect();
            if below.is_empty() {
                continue;
            }
            // A limit of the hardware: worth knowing, nothing in the stack to repair.
            let severity = Severity::Info;
            out.push(
                Finding::new(
                    &RULE,
                    format!(
                        "{} needs compute capability {min_cc} or higher: {}",
                        floor.feature,
                        below.join(", ")
                    ),
                )
                .severity(severity)
                .evidence(format!("{} (knowledge base: {})", floor.what, floor.source))
                .evidence(format!("below the floor: {}", below.join(", ")))
                .cause(floor.what.clone())
                .prose(if floor.feature == "torch.compile" {
                    "Run these GPUs eagerly on purpose (no torch.compile, or backend=\"aot_eager\"), and check with TORCH_LOGS=+inductor that compiled code really runs on the others".to_string()
                } else {
                    "Use float16 autocast with torch.amp.GradScaler(\"cuda\") on these GPUs instead of bfloat16".to_string()
                }),
            );
        }
        if let Some(min_torch) = &floor.min_torch {
            for t in &torch_envs {
                let older = version_tuple(t.torch.public_version()) < version_tuple(min_torch);
                if older {
                    out.push(
                        Finding::new(
                            &RULE,
                            format!(
                                "{} has no {} (it needs torch {min_torch})",
                                t.label(),
                                floor.feature
                            ),
                        )
                        .severity(Severity::Info)
                        .evidence(format!("{} (knowledge base: {})", floor.what, floor.source))
                        .cause(floor.what.clone())
                        .shell("cudoctor plan   # a torch 2.x build for this driver and GPU"),
                    );
                }
            }
        }
    }
    out
}

fn version_tuple(v: &str) -> Vec<u32> {
    v.split('.')
        .map(|p| {
            p.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{h200, machine, run, torch_env};

    #[test]
    fn gpus_and_torch_below_the_floors() {
        assert!(
            run(&RULE, &h200()).is_empty(),
            "H200 and torch 2.11: above every floor"
        );
        let mut s = machine(
            Some(("535.104.05", "12.2")),
            &[
                ("Tesla P100-PCIE-16GB", "6.0"),
                ("Tesla V100-SXM2-32GB", "7.0"),
            ],
        );
        s.python_envs
            .push(torch_env("/opt/venv", "2.4.1+cu121", Some("12.1"), &[]));
        let f = run(&RULE, &s);
        assert_eq!(f.len(), 2, "{f:#?}");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].title.contains("torch.compile needs compute capability 7.0 or higher: GPU 0 (Tesla P100-PCIE-16GB, sm_60)"), "{}", f[0].title);
        assert!(f[1]
            .title
            .starts_with("autocast bfloat16 needs compute capability 8.0"));
        assert!(f[1].title.contains("GPU 1"));
        s.python_envs[0] = torch_env("/opt/venv", "1.13.1+cu117", Some("11.7"), &[]);
        assert!(run(&RULE, &s).iter().any(|f| f
            .title
            .contains("has no torch.compile (it needs torch 2.0)")));
    }
}
