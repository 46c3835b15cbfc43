//! The cause graph: a pass over the findings of one report that links each finding following
//! from another to it (`caused_by`) and takes its fix away, so that one cause has one finding
//! with one remedy. Links are made by the typed subjects rules attach ([`Subject`]), never by
//! the words of a finding.

use crate::finding::{Finding, Severity, Subject};
use crate::registry::{FOLDS, FOLLOWS};
use crate::rule::{FoldOn, Follows, Rule, Sharing};
use crate::rules as r;

/// Runtime findings (`--deep`) that the static layers explain.
static RUNTIME_CODES: &[&Rule] = &[
    &r::attention_falls_back_to_math::RULE,
    &r::fused_attention_unavailable::RULE,
    &r::cuda_unavailable_at_runtime::RULE,
    &r::torch_probe_failed::RULE,
    &r::gpu_smoke_test_fails::RULE,
    &r::framework_gpu_unusable::RULE,
];

/// Driver-level findings that explain a runtime without CUDA.
static DRIVER_CODES: &[&Rule] = &[
    &r::no_driver::RULE,
    &r::no_gpu_visible::RULE,
    &r::driver_library_mismatch::RULE,
    &r::driver_libraries_fail::RULE,
    &r::container_without_gpu::RULE,
    &r::wsl_linux_driver::RULE,
    &r::visible_devices_hide_gpus::RULE,
];

const COMPANIONS: &[&str] = &["torchvision", "torchaudio"];

/// The rank of `f`'s rule among the rules folding `on` a subject; `None` when it does not.
fn rank(f: &Finding, on: FoldOn) -> Option<u8> {
    FOLDS
        .iter()
        .find(|d| d.on == on && d.rule.code == f.code)
        .map(|d| d.rank)
}

/// The keys of the subjects `f` is about that findings fold `on`: an environment for its torch
/// build (the first such subject), an environment and a package, a toolkit variable.
fn fold_keys(f: &Finding, on: FoldOn) -> Vec<(&str, &str)> {
    match on {
        FoldOn::TorchBuild => torch_build_env(f).map(|e| (e, "")).into_iter().collect(),
        FoldOn::Package => packages(f).collect(),
        FoldOn::ToolkitSetting => settings(f).map(|v| (v, "")).collect(),
    }
}

/// Folds the problems about one subject of `on` under the one of the lowest-ranked rule (the
/// first found among equals) and returns each subject's root. Findings linked already stay out
/// of a package's or a variable's fold (they have their root); a torch build's fold takes them,
/// as its root is the chooser's one remedy for the build.
fn fold(findings: &mut [Finding], on: FoldOn) -> Vec<((String, String), usize)> {
    let n = findings.len();
    let takes_linked = on == FoldOn::TorchBuild;
    let member = |f: &Finding| {
        is_problem(f) && (takes_linked || f.caused_by.is_none()) && rank(f, on).is_some()
    };
    let mut keys: Vec<(String, String)> = findings
        .iter()
        .filter(|f| member(f))
        .flat_map(|f| fold_keys(f, on))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    keys.sort();
    keys.dedup();
    let mut roots = Vec::new();
    for key in keys {
        let members: Vec<usize> = (0..n)
            .filter(|&i| {
                member(&findings[i])
                    && fold_keys(&findings[i], on)
                        .iter()
                        .any(|&(a, b)| a == key.0 && b == key.1)
            })
            .collect();
        let Some(&root) = members.iter().min_by_key(|&&i| (rank(&findings[i], on), i)) else {
            continue;
        };
        for &m in &members {
            link(findings, m, root);
        }
        roots.push((key, root));
    }
    roots
}

/// `f` is a finding of `rule`.
fn is(f: &Finding, rule: &Rule) -> bool {
    f.code == rule.code
}

/// `f` is a finding of one of `rules`.
fn is_any(rules: &[&Rule], f: &Finding) -> bool {
    rules.iter().any(|r| is(f, r))
}

fn torch_build_env(f: &Finding) -> Option<&str> {
    f.about.iter().find_map(|s| match s {
        Subject::TorchBuild { env } => Some(env.as_str()),
        _ => None,
    })
}

fn packages(f: &Finding) -> impl Iterator<Item = (&str, &str)> {
    f.about.iter().filter_map(|s| match s {
        Subject::Package { env, name } => Some((env.as_str(), name.as_str())),
        _ => None,
    })
}

fn runtime_env(f: &Finding) -> Option<&str> {
    f.about.iter().find_map(|s| match s {
        Subject::Runtime { env } => Some(env.as_str()),
        _ => None,
    })
}

fn missing_all(f: &Finding) -> impl Iterator<Item = (&str, &str)> {
    f.about.iter().filter_map(|s| match s {
        Subject::MissingLibrary { env, soname } => Some((env.as_str(), soname.as_str())),
        _ => None,
    })
}

fn mixed_majors(f: &Finding) -> Option<&str> {
    f.about.iter().find_map(|s| match s {
        Subject::MixedCudaMajors { env } => Some(env.as_str()),
        _ => None,
    })
}

fn moves_framework(f: &Finding, env: &str, name: &str) -> bool {
    f.about
        .iter()
        .any(|s| matches!(s, Subject::MovesFramework { env: e, name: n } if e == env && n == name))
}

fn is_problem(f: &Finding) -> bool {
    f.severity != Severity::Info
}

/// Links `consequence` to `cause` and takes its fix away.
fn link(findings: &mut [Finding], consequence: usize, cause: usize) {
    if consequence == cause || findings[consequence].caused_by.is_some() {
        return;
    }
    let (code, id) = (findings[cause].code.clone(), findings[cause].id.clone());
    let f = &mut findings[consequence];
    f.caused_by = Some(code);
    f.caused_by_id = Some(id);
    f.fix.clear();
}

/// The root of a chain: follows `caused_by_id` up (ids are unique in a report).
fn root_of(findings: &[Finding], mut i: usize) -> usize {
    for _ in 0..findings.len() {
        let Some(up) = findings[i].caused_by_id.as_deref() else {
            break;
        };
        match findings.iter().position(|f| f.id == up) {
            Some(j) => i = j,
            None => break,
        }
    }
    i
}

/// Links the findings of one report, step by step (each step's function says what follows
/// from what). Expects ids to be given already.
pub fn link_causes(findings: &mut [Finding]) {
    // The rules that follow another's problem (each declares it beside its RULE).
    for follows in FOLLOWS {
        follow(findings, follows);
    }
    // One torch build per environment: one root among the findings its chooser repairs.
    let torch_roots = fold(findings, FoldOn::TorchBuild);
    framework_builds_follow_their_move(findings);
    companions_follow_torch(findings, &torch_roots);
    one_missing_file(findings);
    // One package built for another torch or CUDA: one root among its findings.
    fold(findings, FoldOn::Package);
    two_cuda_majors(findings);
    overwritten_wheels_follow_mixed_majors(findings);
    runtime_follows_static(findings, &torch_roots);
    old_gpu_follows_torch_kernels(findings);
    // One toolkit variable: CUDA_HOME naming no toolkit (TK006) or one of another CUDA major
    // than torch (TK002) is why the selectors disagree (TK003); the root's export repairs both.
    fold(findings, FoldOn::ToolkitSetting);
}

/// Links each finding of `follows.rule` to the first problem of `follows.cause` that shares
/// with it what `follows.sharing` says.
fn follow(findings: &mut [Finding], follows: &Follows) {
    let n = findings.len();
    for i in 0..n {
        if !is(&findings[i], follows.rule) {
            continue;
        }
        let shares = |cause: &Finding| match follows.sharing {
            Sharing::Nothing => true,
            Sharing::Driver => findings[i].about.contains(&Subject::Driver),
            Sharing::WindowsTorchImport => cause.about.iter().any(|s| {
                matches!(s, Subject::WindowsTorchImport { .. }) && findings[i].about.contains(s)
            }),
            Sharing::UnlistedGpu => {
                findings[i].about.contains(&Subject::Driver)
                    && !cause.about.iter().any(|s| matches!(s, Subject::Gpu { .. }))
            }
        };
        let cause = (0..n).find(|&j| {
            is(&findings[j], follows.cause) && is_problem(&findings[j]) && shares(&findings[j])
        });
        if let Some(j) = cause {
            link(findings, i, j);
        }
    }
}

/// The root a torch build's fold gave the environment `env`.
fn root_for(torch_roots: &[((String, String), usize)], env: &str) -> Option<usize> {
    torch_roots
        .iter()
        .find(|((e, _), _)| e == env)
        .map(|(_, r)| *r)
}

/// A framework build's own findings (a driver too old for its CUDA, kernels its CUDA
/// lacks) follow from the finding whose fix moves that build to another CUDA major: torch's
/// repair when it moves torch and the frameworks with it, else FW020's, else the first.
fn framework_builds_follow_their_move(findings: &mut [Finding]) {
    let n = findings.len();
    for i in 0..n {
        if findings[i].caused_by.is_some() || !is_problem(&findings[i]) {
            continue;
        }
        let root = packages(&findings[i]).find_map(|(env, name)| {
            (0..n)
                .filter(|&j| {
                    j != i
                        && (j < i
                            || torch_build_env(&findings[j]).is_some()
                            || is(&findings[j], &r::frameworks_of_two_cuda_majors::RULE))
                        && findings[j].caused_by.is_none()
                        && is_problem(&findings[j])
                        && moves_framework(&findings[j], env, name)
                })
                .min_by_key(|&j| {
                    (
                        torch_build_env(&findings[j]).is_none(),
                        !is(&findings[j], &r::frameworks_of_two_cuda_majors::RULE),
                        j,
                    )
                })
        });
        if let Some(j) = root {
            link(findings, i, j);
        }
    }
}

/// A companion's own findings follow from its torch build's root when that build's
/// findings name the companion (FW002), or when torch itself lacks the GPU's kernels (KRN001)
/// and the companion's kernels are missing the same way: the paired reinstall repairs both.
fn companions_follow_torch(findings: &mut [Finding], torch_roots: &[((String, String), usize)]) {
    let n = findings.len();
    let torch_root = |env: &str| root_for(torch_roots, env);
    for i in 0..n {
        if findings[i].caused_by.is_some() || torch_build_env(&findings[i]).is_some() {
            continue;
        }
        let hit = packages(&findings[i])
            .filter(|(_, name)| COMPANIONS.contains(name) || name.starts_with("nvidia-"))
            .find_map(|(env, name)| {
                let root = torch_root(env)?;
                let named = (0..n).any(|j| {
                    torch_build_env(&findings[j]) == Some(env)
                        && packages(&findings[j]).any(|(_, p)| p == name)
                });
                let kernels = is(&findings[i], &r::extension_lacks_gpu_arch::RULE)
                    && (0..n).any(|j| {
                        is(&findings[j], &r::torch_arch_list_lacks_gpu::RULE)
                            && torch_build_env(&findings[j]) == Some(env)
                    });
                (named || kernels).then_some(root)
            });
        if let Some(root) = hit {
            link(findings, i, root);
        }
    }
}

/// One missing file needed by several libraries is one cause; a wheel registered
/// with that file gone (FW010, whose reinstall puts it back) is the root when there is one.
fn one_missing_file(findings: &mut [Finding]) {
    let n = findings.len();
    let mut keys: Vec<(String, String)> = findings
        .iter()
        .flat_map(missing_all)
        .map(|(e, s)| (e.to_string(), s.to_string()))
        .collect();
    keys.sort();
    keys.dedup();
    for (env, soname) in &keys {
        let members: Vec<usize> = (0..n)
            .filter(|&i| missing_all(&findings[i]).any(|k| k == (env.as_str(), soname.as_str())))
            .collect();
        let root = members
            .iter()
            .copied()
            .find(|&i| is(&findings[i], &r::wheel_files_damaged::RULE))
            .or_else(|| {
                members
                    .iter()
                    .copied()
                    .find(|&i| findings[i].caused_by.is_none())
            });
        if let Some(root) = root {
            for &m in &members {
                if !is(&findings[m], &r::wheel_files_damaged::RULE) {
                    link(findings, m, root);
                }
            }
        }
    }
}

/// Two CUDA majors in one environment (FW020) are the cause of another major's libraries
/// in torch's process (LIB006) and of the files the other major's wheels overwrote (FW011).
fn two_cuda_majors(findings: &mut [Finding]) {
    let n = findings.len();
    for root in 0..n {
        if !is(&findings[root], &r::frameworks_of_two_cuda_majors::RULE)
            || !is_problem(&findings[root])
        {
            continue;
        }
        let Some(env) = mixed_majors(&findings[root]).map(str::to_string) else {
            continue;
        };
        let wheels: Vec<(String, String)> = packages(&findings[root])
            .map(|(e, p)| (e.to_string(), p.to_string()))
            .collect();
        for i in 0..n {
            let member = mixed_majors(&findings[i]) == Some(env.as_str())
                || (is(&findings[i], &r::wheel_files_overwritten::RULE)
                    && packages(&findings[i])
                        .any(|(e, p)| wheels.iter().any(|(we, wp)| we == e && wp == p)));
            if member && i != root && findings[i].caused_by.is_none() {
                link(findings, i, root);
            }
        }
    }
}

/// Without FW020 (a framework it does not know), another CUDA major's wheels preloaded
/// into torch (LIB006) are why their RECORDs share paths (FW011): the wheels it names.
fn overwritten_wheels_follow_mixed_majors(findings: &mut [Finding]) {
    let n = findings.len();
    for i in 0..n {
        if !is(&findings[i], &r::wheel_files_overwritten::RULE) || findings[i].caused_by.is_some() {
            continue;
        }
        let mixed = (0..n).find(|&j| {
            is(&findings[j], &r::mixed_cuda_majors::RULE)
                && is_problem(&findings[j])
                && packages(&findings[j]).any(|k| packages(&findings[i]).any(|m| m == k))
        });
        if let Some(j) = mixed {
            link(findings, i, j);
        }
    }
}

/// The runtime (`--deep`) of an environment fails the way the static layers said it would:
/// no driver or GPU, a torch build this machine cannot run, a library that cannot load.
fn runtime_follows_static(findings: &mut [Finding], torch_roots: &[((String, String), usize)]) {
    let n = findings.len();
    let torch_root = |env: &str| root_for(torch_roots, env);
    for i in 0..n {
        if findings[i].caused_by.is_some() || !is_any(RUNTIME_CODES, &findings[i]) {
            continue;
        }
        let Some(env) = runtime_env(&findings[i]).map(str::to_string) else {
            continue;
        };
        let driver_root = (0..n).find(|&j| {
            findings[j].severity == Severity::Error
                && findings[j].caused_by.is_none()
                && is_any(DRIVER_CODES, &findings[j])
        });
        let build_root = torch_root(&env).filter(|&r| findings[r].severity == Severity::Error);
        let library_root = (0..n).find(|&j| {
            findings[j].severity == Severity::Error
                && findings[j].caused_by.is_none()
                && is_any(
                    &[
                        &r::missing_library::RULE,
                        &r::unresolved_symbols::RULE,
                        &r::duplicate_library_copies::RULE,
                    ],
                    &findings[j],
                )
                && packages(&findings[j]).any(|(e, p)| e == env && p == "torch")
        });
        // A framework other than torch: its own static findings (a library of its build found
        // nowhere, builds of two CUDA majors), about the same package.
        let framework_root = (0..n).find(|&j| {
            is_problem(&findings[j])
                && findings[j].caused_by.is_none()
                && findings[j].layer == crate::Layer::Framework
                && packages(&findings[j]).any(|k| packages(&findings[i]).any(|m| m == k))
        });
        let f = &findings[i];
        // Attention backends: only a build that cannot run explains them.
        let cause = if is_any(
            &[
                &r::attention_falls_back_to_math::RULE,
                &r::fused_attention_unavailable::RULE,
            ],
            f,
        ) {
            build_root
        } else if is(f, &r::framework_gpu_unusable::RULE) {
            driver_root.or(framework_root)
        } else {
            driver_root.or(build_root).or(library_root)
        };
        if let Some(c) = cause {
            let c = root_of(findings, c);
            link(findings, i, c);
        }
    }
}

/// A GPU older than the CUDA 13 toolkit (KRN004) is the same GPU torch has no kernels
/// for (KRN001): the build chooser moves torch to a CUDA that still targets it, and the
/// toolkit for extensions follows torch's CUDA major from there (TK002 then says which).
fn old_gpu_follows_torch_kernels(findings: &mut [Finding]) {
    let n = findings.len();
    for i in 0..n {
        if !is(&findings[i], &r::nvcc_cannot_target_gpu::RULE) || findings[i].caused_by.is_some() {
            continue;
        }
        let same_gpu = (0..n).find(|&j| {
            is(&findings[j], &r::torch_arch_list_lacks_gpu::RULE)
                && is_problem(&findings[j])
                && gpus(&findings[j]).any(|g| gpus(&findings[i]).any(|h| h == g))
        });
        if let Some(j) = same_gpu {
            let root = root_of(findings, j);
            link(findings, i, root);
        }
    }
}

fn gpus(f: &Finding) -> impl Iterator<Item = u32> + '_ {
    f.about.iter().filter_map(|s| match s {
        Subject::Gpu { index } => Some(*index),
        _ => None,
    })
}

fn settings(f: &Finding) -> impl Iterator<Item = &str> {
    f.about.iter().filter_map(|s| match s {
        Subject::ToolkitSetting { var } => Some(var.as_str()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{FixStep, Layer};

    fn f(code: &str, about: Vec<Subject>) -> Finding {
        Finding {
            code: code.into(),
            id: String::new(),
            layer: Layer::Framework,
            severity: Severity::Error,
            title: code.into(),
            evidence: vec![],
            cause: String::new(),
            fix: vec![FixStep::Shell(format!("fix {code}"))],
            confidence: Default::default(),
            caused_by: None,
            caused_by_id: None,
            about,
        }
    }

    fn pkg(name: &str) -> Subject {
        Subject::Package {
            env: "/v".into(),
            name: name.into(),
        }
    }

    fn build() -> Subject {
        Subject::TorchBuild { env: "/v".into() }
    }

    fn linked(mut v: Vec<Finding>) -> Vec<Finding> {
        for (i, x) in v.iter_mut().enumerate() {
            x.id = format!("{}-{i}", x.code);
        }
        link_causes(&mut v);
        v
    }

    #[test]
    fn two_cuda_majors_are_the_root_of_foreign_libraries_and_overwritten_files() {
        let env = "/v".to_string();
        let mixed = Subject::MixedCudaMajors { env: env.clone() };
        let mut fs = vec![
            f("FW011", vec![pkg("nvidia-cudnn-cu13")]),
            f(
                "FW020",
                vec![
                    mixed.clone(),
                    pkg("nvidia-cudnn-cu12"),
                    pkg("nvidia-cudnn-cu13"),
                ],
            ),
            f(
                "LIB006",
                vec![Subject::TorchBuild { env: env.clone() }, mixed],
            ),
            f("FW011", vec![pkg("nvidia-nccl-cu13")]),
        ];
        crate::assign_ids(&mut fs);
        link_causes(&mut fs);
        assert_eq!(fs[0].caused_by.as_deref(), Some("FW020"));
        assert!(fs[0].fix.is_empty());
        assert_eq!(fs[1].caused_by, None);
        assert_eq!(fs[2].caused_by.as_deref(), Some("FW020"));
        // A file overwritten between wheels FW020 does not name stays its own finding.
        assert_eq!(fs[3].caused_by, None);
    }

    #[test]
    fn a_frameworks_own_findings_follow_from_the_fix_that_moves_it() {
        let moves = |name: &str| Subject::MovesFramework {
            env: "/v".into(),
            name: name.into(),
        };
        // torch's repair moves JAX and CuPy to its new major: their driver and kernel
        // findings follow from it, whatever their order.
        let v = linked(vec![
            f("DRV004", vec![pkg("jax-cuda13-plugin")]),
            f(
                "DRV004",
                vec![build(), moves("jax-cuda13-plugin"), moves("cupy-cuda13x")],
            ),
            f("KRN002", vec![pkg("cupy-cuda13x")]),
            f("KRN002", vec![pkg("flash-attn")]),
        ]);
        assert_eq!(v[0].caused_by_id.as_deref(), Some("DRV004-1"));
        assert_eq!(v[1].caused_by, None);
        assert_eq!(v[2].caused_by_id.as_deref(), Some("DRV004-1"));
        assert!(v[0].fix.is_empty() && v[2].fix.is_empty());
        assert_eq!(v[3].caused_by, None, "a package nothing moves");
        // Without torch, two builds whose fixes move both: the first is the root, no cycle.
        let v = linked(vec![
            f(
                "DRV004",
                vec![
                    pkg("jax-cuda13-plugin"),
                    moves("jax-cuda13-plugin"),
                    moves("cupy-cuda13x"),
                ],
            ),
            f(
                "DRV004",
                vec![
                    pkg("cupy-cuda13x"),
                    moves("jax-cuda13-plugin"),
                    moves("cupy-cuda13x"),
                ],
            ),
        ]);
        assert_eq!(v[0].caused_by, None);
        assert_eq!(v[1].caused_by_id.as_deref(), Some("DRV004-0"));
    }

    #[test]
    fn nvcc_that_cannot_target_a_gpu_follows_from_torch_lacking_its_kernels() {
        let gpu = |index| Subject::Gpu { index };
        let v = linked(vec![
            f("KRN004", vec![gpu(0)]),
            f("KRN001", vec![build(), gpu(0)]),
            f("KRN004", vec![gpu(1)]),
        ]);
        assert_eq!(v[0].caused_by_id.as_deref(), Some("KRN001-1"));
        assert!(v[0].fix.is_empty());
        // Another GPU that torch runs: the toolkit is its own root there.
        assert_eq!(v[2].caused_by, None);
    }

    #[test]
    fn one_toolkit_variable_is_one_root() {
        let var = |v: &str| Subject::ToolkitSetting { var: v.into() };
        let v = linked(vec![
            f("TK003", vec![var("CUDA_HOME")]),
            f("TK006", vec![var("CUDA_HOME")]),
        ]);
        assert_eq!(v[0].caused_by.as_deref(), Some("TK006"));
        assert_eq!(v[1].caused_by, None);
        let v = linked(vec![
            f("TK003", vec![var("CUDA_HOME")]),
            f("TK002", vec![var("CUDA_HOME")]),
            f("TK003", vec![var("CUDA_PATH")]),
        ]);
        assert_eq!(v[0].caused_by.as_deref(), Some("TK002"));
        assert_eq!(v[2].caused_by, None);
    }

    #[test]
    fn a_wrong_companion_is_the_root_of_its_library_findings() {
        let v = linked(vec![
            f("FW002", vec![build(), pkg("torchvision")]),
            f("LIB001", vec![pkg("torchvision")]),
            f("LIB004", vec![pkg("torchvision")]),
            f("LIB004", vec![pkg("flash-attn")]),
        ]);
        assert_eq!(v[0].caused_by, None);
        assert_eq!(v[1].caused_by.as_deref(), Some("FW002"));
        assert_eq!(v[2].caused_by_id.as_deref(), Some("FW002-0"));
        assert!(v[1].fix.is_empty() && v[2].fix.is_empty());
        // Another package's problem is its own root.
        assert_eq!(v[3].caused_by, None);
        assert!(!v[3].fix.is_empty());
    }

    #[test]
    fn one_build_choice_repairs_kernels_and_companions() {
        let v = linked(vec![
            f("FW002", vec![build(), pkg("torchvision")]),
            f("KRN001", vec![build()]),
            f("KRN002", vec![pkg("torchvision")]),
        ]);
        assert_eq!(v[1].caused_by, None);
        assert_eq!(v[0].caused_by.as_deref(), Some("KRN001"));
        assert_eq!(v[2].caused_by.as_deref(), Some("KRN001"));
    }

    #[test]
    fn a_missing_file_of_a_registered_wheel_is_one_cause_with_one_fix() {
        let lib = |soname: &str| Subject::MissingLibrary {
            env: "/v".into(),
            soname: soname.into(),
        };
        let v = linked(vec![
            f(
                "FW010",
                vec![pkg("nvidia-cudnn-cu13"), lib("libcudnn.so.9")],
            ),
            f("LIB001", vec![pkg("torch"), lib("libcudnn.so.9")]),
            f("LIB001", vec![pkg("torchvision"), lib("libcudnn.so.9")]),
            f("LIB001", vec![pkg("torch"), lib("libcufft.so.12")]),
            f("LIB001", vec![pkg("torchvision"), lib("libcufft.so.12")]),
        ]);
        assert_eq!(v[0].caused_by, None);
        assert_eq!(v[1].caused_by_id.as_deref(), Some("FW010-0"));
        assert_eq!(v[2].caused_by_id.as_deref(), Some("FW010-0"));
        // Without a damaged wheel, the first finding of the missing file is the root.
        assert_eq!(v[3].caused_by, None);
        assert_eq!(v[4].caused_by_id.as_deref(), Some("LIB001-3"));
    }

    #[test]
    fn no_driver_in_a_container_without_gpus_follows_the_container() {
        let v = linked(vec![
            f("PLT001", vec![Subject::Driver]),
            f("DRV001", vec![Subject::Driver]),
            f("ACC004", vec![Subject::Runtime { env: "/v".into() }]),
        ]);
        assert_eq!(v[0].caused_by, None);
        assert_eq!(v[1].caused_by.as_deref(), Some("PLT001"));
        assert_eq!(v[2].caused_by.as_deref(), Some("PLT001"));
        // DRV001 alone stays the root.
        let v = linked(vec![f("DRV001", vec![Subject::Driver])]);
        assert_eq!(v[0].caused_by, None);
    }

    #[test]
    fn overwritten_wheel_files_follow_mixed_cuda_majors() {
        let v = linked(vec![
            f("FW011", vec![pkg("nvidia-cudnn-cu12")]),
            f("FW011", vec![pkg("nvidia-nccl-cu13")]),
            f("FW011", vec![pkg("some-other")]),
            f(
                "LIB006",
                vec![build(), pkg("nvidia-cudnn-cu12"), pkg("nvidia-nccl-cu13")],
            ),
        ]);
        assert_eq!(v[0].caused_by.as_deref(), Some("LIB006"));
        assert_eq!(v[1].caused_by.as_deref(), Some("LIB006"));
        assert_eq!(v[2].caused_by, None);
        assert_eq!(v[3].caused_by, None);
    }

    #[test]
    fn runtime_failures_follow_the_driver() {
        let mut drv = f("DRV001", vec![Subject::Driver]);
        drv.layer = Layer::Driver;
        let v = linked(vec![
            drv,
            f("ACC004", vec![Subject::Runtime { env: "/v".into() }]),
        ]);
        assert_eq!(v[1].caused_by.as_deref(), Some("DRV001"));
    }

    #[test]
    fn an_extensions_findings_fold_into_one() {
        let v = linked(vec![
            f("KRN002", vec![pkg("flash-attn")]),
            f("LIB004", vec![pkg("flash-attn")]),
            f("ACC007", vec![pkg("flash-attn")]),
        ]);
        assert_eq!(v[1].caused_by, None);
        assert_eq!(v[0].caused_by.as_deref(), Some("LIB004"));
        assert_eq!(v[2].caused_by.as_deref(), Some("LIB004"));
    }
}
