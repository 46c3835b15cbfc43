use cudoctor_snapshot::{ProbeStage, ProbeStatus};

use super::deep_support::first_line;
use crate::views::explained::with_explanation;
use crate::{Context, Finding, Layer, Rule, Severity};

pub static RULE: Rule = Rule {
    code: "ACC005",
    name: "torch-probe-failed",
    layer: Layer::Acceleration,
    severity: Severity::Error,
    summary: "The runtime probe could not finish: import torch failed, crashed, or hung",
    docs: r#"## What it checks
How the `--deep` probe ended in each environment: an exception on `import torch` (its text is
kept whole), a crash (the signal, and the stage it was in), a hang (killed at the timeout, with
the stage it hung in), or output that could not be read.

## Why it matters
A crash or an ImportError on `import torch` means every program in that environment fails the
same way; a hang in the all-reduce stage means multi-GPU jobs will hang too. Because the probe runs
in a child process, cudoctor can still report it.

## How to fix
ImportError and OSError texts are run through the explain engine: when it knows the message, its
cause and fixes are added here (evidence `explain: <category> (<signature>)`), naming the missing
or mismatched library. A crash on import usually comes from mixed CUDA libraries (see the Libraries layer) or a
broken install: reinstall torch in a fresh environment. A hang names its stage; for the
all-reduce, run with `NCCL_DEBUG=INFO`.
"#,
    check,
};

fn check(ctx: &Context) -> Vec<Finding> {
    let Some(deep) = &ctx.snap.deep else {
        return Vec::new();
    };
    deep.runs
        .iter()
        .filter_map(|run| {
            let place = run.env_prefix.as_deref().unwrap_or(&run.interpreter);
            let stage = run.last_stage.as_ref().map_or("start-up", ProbeStage::name);
            let mut f = match run.status {
                ProbeStatus::Ok | ProbeStatus::NoTorch | ProbeStatus::NotRunUnderRoot => {
                    return None
                }
                ProbeStatus::ImportFailed => with_explanation(
                    Finding::new(&RULE, format!("import torch fails in {place}"))
                        .evidence(format!("{}: {}", run.interpreter, run.detail))
                        .cause("torch is installed but cannot be imported; every program in this environment fails the same way.")
                        .shell(cudoctor_plan::heredoc("cudoctor explain", &run.detail)),
                    &run.detail,
                    &ctx.probe_target(run),
                ),
                ProbeStatus::Crashed => Finding::new(&RULE, format!("Python crashed during \"{stage}\" in {place}"))
                    .evidence(run.detail.clone())
                    .cause(if run.last_stage == Some(ProbeStage::ImportTorch) {
                        "The interpreter died while importing torch: native libraries clash (mixed CUDA/cuDNN copies) or the install is damaged."
                    } else {
                        "The interpreter died inside a GPU operation of this stage: see the libraries layer and the driver's kernel log (dmesg) for the GPU's side."
                    })
                    .shell(format!("{} -X faulthandler -c \"import torch; print(torch.cuda.is_available())\"", cudoctor_plan::quote(&run.interpreter))),
                ProbeStatus::TimedOut => Finding::new(&RULE, format!("the probe hung during \"{stage}\" in {place}"))
                    .evidence(run.detail.clone())
                    .cause("The stage did not finish in time and was stopped; programs doing the same will hang.")
                    .prose(if run.last_stage == Some(ProbeStage::AllReduce) {
                        "Run NCCL_DEBUG=INFO cudoctor check --deep to see where NCCL waits".to_string()
                    } else {
                        "Run cudoctor check --deep with a larger --deep-timeout, to tell slow from hung".to_string()
                    }),
                ProbeStatus::NotStarted => Finding::new(&RULE, format!("the interpreter of {place} could not be started"))
                    .severity(Severity::Warning)
                    .evidence(run.detail.clone())
                    .cause("The environment's interpreter is missing or not executable (a moved or half-deleted environment).")
                    .prose("Recreate the environment, or pass the right one with --python"),
                ProbeStatus::BadOutput => Finding::new(&RULE, format!("the probe's report from {place} could not be read"))
                    .severity(Severity::Warning)
                    .evidence(run.detail.clone())
                    .cause("The child exited without a complete report; something in the environment replaced or closed its output.")
                    .shell("cudoctor check --deep --format json > cudoctor-report.json   # attach it to a bug report"),
            };
            f = f.about(crate::Subject::Runtime {
                env: place.to_string(),
            });
            if let Some(tail) = &run.stderr_tail {
                f = f.evidence(format!("stderr ends: {}", first_line(tail.lines().last().unwrap_or(""))));
            }
            Some(f)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::run;
    use cudoctor_snapshot::{DeepFacts, ProbeRun};

    fn with_run(r: ProbeRun) -> cudoctor_snapshot::Snapshot {
        let mut s = crate::testing::h200();
        s.deep = Some(DeepFacts {
            runs: vec![r],
            ..Default::default()
        });
        s
    }

    #[test]
    fn each_failure_is_told_apart() {
        let base = ProbeRun {
            interpreter: "/opt/venv/bin/python".into(),
            env_prefix: Some("/opt/venv".into()),
            ..Default::default()
        };
        let ok = ProbeRun {
            status: ProbeStatus::Ok,
            ..base.clone()
        };
        assert!(run(&RULE, &with_run(ok)).is_empty());
        let no_torch = ProbeRun {
            status: ProbeStatus::NoTorch,
            ..base.clone()
        };
        assert!(run(&RULE, &with_run(no_torch)).is_empty());
        let import = ProbeRun {
            status: ProbeStatus::ImportFailed,
            detail: "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory".into(),
            ..base.clone()
        };
        let f = run(&RULE, &with_run(import));
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].fix[0].contains("libcudnn.so.9"), "{:?}", f[0].fix);
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e == "explain: library_path (cannot-open-cuda-library)"),
            "{:?}",
            f[0].evidence
        );
        assert!(
            f[0].cause.starts_with("torch is installed"),
            "{}",
            f[0].cause
        );
        assert!(f[0].cause.len() > "torch is installed but cannot be imported; every program in this environment fails the same way.".len());
        assert!(f[0].fix.last().unwrap().starts_with("cudoctor explain"));
        let odd = ProbeRun {
            status: ProbeStatus::ImportFailed,
            detail: "ImportError: cannot import name 'x' from partially initialized module".into(),
            ..base.clone()
        };
        let f = run(&RULE, &with_run(odd));
        assert!(!f[0].evidence.iter().any(|e| e.starts_with("explain:")));
        assert_eq!(f[0].fix.len(), 1);
        let crash = ProbeRun {
            status: ProbeStatus::Crashed,
            signal: Some(11),
            last_stage: Some(ProbeStage::ImportTorch),
            detail: "killed by signal 11 (SIGSEGV) during stage \"import torch\"".into(),
            stderr_tail: Some("Fatal Python error: Segmentation fault".into()),
            ..base.clone()
        };
        let f = run(&RULE, &with_run(crash));
        assert!(f[0].title.contains("import torch"));
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("Segmentation fault")));
        let hang = ProbeRun {
            status: ProbeStatus::TimedOut,
            last_stage: Some(ProbeStage::AllReduce),
            ..base.clone()
        };
        let f = run(&RULE, &with_run(hang));
        assert!(f[0].fix[0].contains("NCCL_DEBUG=INFO"));
        let rooted = ProbeRun {
            status: ProbeStatus::NotRunUnderRoot,
            ..base
        };
        assert!(run(&RULE, &with_run(rooted)).is_empty());
    }
}
