//! The list of rules. Adding a rule: one file under `rules/`, one line here, in the order of
//! `Layer::ALL` and by code within a layer (the tests below check both).

use crate::rule::{Fold, Follows, Rule};
use crate::rules;

pub static RULES: &[&Rule] = &[
    &rules::container_without_gpu::RULE,
    &rules::require_cuda_unmet::RULE,
    &rules::wsl_linux_driver::RULE,
    &rules::container_gpu_denied::RULE,
    &rules::security_module_blocks_gpu::RULE,
    &rules::windows_torch_dll_fails::RULE,
    &rules::windows_dll_from_path::RULE,
    &rules::cuda_env_hurts::RULE,
    &rules::small_dev_shm::RULE,
    &rules::check_stopped_early::RULE,
    &rules::no_driver::RULE,
    &rules::no_gpu_visible::RULE,
    &rules::driver_library_mismatch::RULE,
    &rules::driver_too_old_for_torch::RULE,
    &rules::gpu_memory_in_use::RULE,
    &rules::driver_not_for_gpu::RULE,
    &rules::driver_libraries_fail::RULE,
    &rules::gpu_memory_errors::RULE,
    &rules::gpu_clocks_slowed::RULE,
    &rules::pcie_link_degraded::RULE,
    &rules::xid_events::RULE,
    &rules::nouveau_loaded::RULE,
    &rules::persistence_mode_off::RULE,
    &rules::inforom_corrupt::RULE,
    &rules::dcgm_diag_failed::RULE,
    &rules::device_nodes_mismatch::RULE,
    &rules::nvcc_missing::RULE,
    &rules::nvcc_torch_major_mismatch::RULE,
    &rules::toolkit_selection_disagrees::RULE,
    &rules::toolkit_newer_than_driver::RULE,
    &rules::smi_cuda_is_a_ceiling::RULE,
    &rules::cuda_home_invalid::RULE,
    &rules::toolkits_side_by_side::RULE,
    &rules::nvcc_flag_unsupported::RULE,
    &rules::build_toolkit_pieces_mixed::RULE,
    &rules::cudart_link_name_missing::RULE,
    &rules::host_compiler_unsupported::RULE,
    &rules::ninja_missing::RULE,
    &rules::nvcc_torch_minor_differs::RULE,
    &rules::host_compiler_missing::RULE,
    &rules::cccl_headers_missing::RULE,
    &rules::python_headers_missing::RULE,
    &rules::msvc_missing::RULE,
    &rules::cpu_only_torch::RULE,
    &rules::companion_mismatch::RULE,
    &rules::conda_cudatoolkit_mismatch::RULE,
    &rules::no_torch_found::RULE,
    &rules::wheel_files_damaged::RULE,
    &rules::wheel_files_overwritten::RULE,
    &rules::frameworks_of_two_cuda_majors::RULE,
    &rules::framework_pins_unmet::RULE,
    &rules::torch_pin_unmet::RULE,
    &rules::framework_library_nowhere::RULE,
    &rules::requirement_unmet::RULE,
    &rules::numpy_1_under_numpy_2::RULE,
    &rules::torch_arch_list_lacks_gpu::RULE,
    &rules::extension_lacks_gpu_arch::RULE,
    &rules::arch_list_env::RULE,
    &rules::nvcc_cannot_target_gpu::RULE,
    &rules::unreadable_kernel_images::RULE,
    &rules::stale_jit_builds::RULE,
    &rules::binary_search_incomplete::RULE,
    &rules::missing_library::RULE,
    &rules::duplicate_library_copies::RULE,
    &rules::ld_library_path_shadows::RULE,
    &rules::unresolved_symbols::RULE,
    &rules::loaded_cuda_libraries::RULE,
    &rules::mixed_cuda_majors::RULE,
    &rules::library_family_mixed::RULE,
    &rules::attention_falls_back_to_math::RULE,
    &rules::fused_attention_unavailable::RULE,
    &rules::compile_falls_back::RULE,
    &rules::cuda_unavailable_at_runtime::RULE,
    &rules::torch_probe_failed::RULE,
    &rules::gpu_smoke_test_fails::RULE,
    &rules::attention_extension_broken::RULE,
    &rules::compile_amp_floor::RULE,
    &rules::framework_gpu_unusable::RULE,
    &rules::allreduce_bandwidth_low::RULE,
    &rules::p2p_disabled_by_env::RULE,
    &rules::visible_devices_hide_gpus::RULE,
    &rules::gpus_without_p2p::RULE,
    &rules::allreduce_fails::RULE,
    &rules::nccl_version_differs::RULE,
    &rules::socket_ifname_unusable::RULE,
    &rules::infiniband_unused::RULE,
    &rules::gpudirect_rdma_off::RULE,
    &rules::nccl_transport_forced_slow::RULE,
    &rules::rendezvous_fails::RULE,
];

/// The rules whose findings fold on a subject ([`crate::rule::Fold`], declared in each rule's
/// file), by file name.
pub static FOLDS: &[&Fold] = &[
    &rules::attention_extension_broken::FOLD,
    &rules::companion_mismatch::FOLD,
    &rules::cpu_only_torch::FOLD,
    &rules::cuda_home_invalid::FOLD,
    &rules::driver_too_old_for_torch::FOLD,
    &rules::extension_lacks_gpu_arch::FOLD,
    &rules::missing_library::FOLD,
    &rules::nvcc_torch_major_mismatch::FOLD,
    &rules::requirement_unmet::FOLD,
    &rules::toolkit_selection_disagrees::FOLD,
    &rules::torch_arch_list_lacks_gpu::FOLD,
    &rules::unresolved_symbols::FOLD,
];

/// The rules whose findings follow another rule's ([`crate::rule::Follows`], declared in each
/// rule's file), by file name.
pub static FOLLOWS: &[&Follows] = &[
    &rules::device_nodes_mismatch::FOLLOWS,
    &rules::driver_too_old_for_torch::FOLLOWS,
    &rules::no_driver::FOLLOWS,
    &rules::windows_dll_from_path::FOLLOWS,
];

/// The rule with this code (case-insensitive).
pub fn rule_by_code(code: &str) -> Option<&'static Rule> {
    crate::rule::find_rule(RULES, code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layer;
    use std::collections::HashSet;

    #[test]
    fn codes_and_names_are_unique_and_documented() {
        let mut codes = HashSet::new();
        let mut names = HashSet::new();
        for r in RULES {
            assert!(codes.insert(r.code), "duplicate code {}", r.code);
            assert!(names.insert(r.name), "duplicate name {}", r.name);
            let (prefix, digits) = r.code.split_at(r.code.len().saturating_sub(3));
            assert!(
                prefix.len() >= 2 && prefix.chars().all(|c| c.is_ascii_uppercase()),
                "{}",
                r.code
            );
            assert!(
                digits.len() == 3 && digits.chars().all(|c| c.is_ascii_digit()),
                "{}",
                r.code
            );
            assert!(!r.summary.is_empty());
            for section in ["## What it checks", "## Why it matters", "## How to fix"] {
                assert!(r.docs.contains(section), "{} docs lack {section}", r.code);
            }
        }
    }

    /// The rule files that declare `declaration`, each checked to be listed in registry.rs as
    /// `&rules::<file>::<item>,`; their number.
    // Reads this crate's own source files, not a machine: rules stay pure.
    #[allow(clippy::disallowed_methods)]
    fn rule_files_listed(declaration: &str, item: &str) -> usize {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
        let registry = include_str!("registry.rs");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).expect("rules dir") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("rule file");
            if !text.contains(declaration) {
                continue;
            }
            files += 1;
            let stem = path.file_stem().and_then(|s| s.to_str()).expect("name");
            assert!(
                registry.contains(&format!("&rules::{stem}::{item},")),
                "rules/{stem}.rs declares {item} that registry.rs does not list"
            );
        }
        files
    }

    #[test]
    fn every_rule_file_is_registered() {
        let files = rule_files_listed("pub static RULE: Rule", "RULE");
        assert_eq!(files, RULES.len(), "rule files and registry lines differ");
    }

    #[test]
    fn every_fold_is_listed_once_with_its_own_rank() {
        let files = rule_files_listed("pub static FOLD: crate::rule::Fold", "FOLD");
        assert_eq!(
            files,
            FOLDS.len(),
            "fold declarations and registry lines differ"
        );
        for (i, a) in FOLDS.iter().enumerate() {
            assert!(
                RULES.iter().any(|r| std::ptr::eq(*r, a.rule)),
                "{}",
                a.rule.code
            );
            for b in &FOLDS[i + 1..] {
                assert!(
                    a.on != b.on || a.rank != b.rank,
                    "{} and {} fold on {:?} with the same rank",
                    a.rule.code,
                    b.rule.code,
                    a.on
                );
            }
        }
    }

    #[test]
    fn every_follows_is_listed() {
        let files = rule_files_listed("pub static FOLLOWS: crate::rule::Follows", "FOLLOWS");
        assert_eq!(
            files,
            FOLLOWS.len(),
            "follows declarations and registry lines differ"
        );
        for f in FOLLOWS {
            assert!(
                RULES.iter().any(|r| std::ptr::eq(*r, f.rule)),
                "{}",
                f.rule.code
            );
            assert!(
                RULES.iter().any(|r| std::ptr::eq(*r, f.cause)),
                "{}",
                f.cause.code
            );
        }
    }

    /// A rule folding on a subject attaches it to its findings: without it they never fold
    /// and stay roots beside the finding whose fix repairs them.
    #[test]
    #[allow(clippy::disallowed_methods)] // the test reads the source tree, not a machine
    fn a_folding_rule_attaches_its_subject() {
        use crate::rule::FoldOn;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
        for fold in FOLDS {
            let file = std::fs::read_dir(&dir)
                .expect("rules dir")
                .flatten()
                .map(|e| std::fs::read_to_string(e.path()).expect("rule file"))
                .find(|t| t.contains(&format!("code: \"{}\"", fold.rule.code)))
                .expect("the rule's file");
            let product = file.split("#[cfg(test)]").next().unwrap_or("");
            // The subject's constructor, or the helper that builds it.
            let attaches: &[&str] = match fold.on {
                FoldOn::TorchBuild => &["Subject::TorchBuild"],
                FoldOn::Package => &["Subject::Package", "package_subject(", ".subject()"],
                FoldOn::ToolkitSetting => &["Subject::ToolkitSetting"],
            };
            assert!(
                attaches.iter().any(|a| product.contains(a)),
                "{} folds on {:?} but attaches no such subject",
                fold.rule.code,
                fold.on
            );
        }
    }

    /// A helper that several rules need lives in `views/`: no rule's product code reaches into
    /// another rule's file (the probes' support modules `deep_support` and `network_support`
    /// are not rules).
    #[test]
    #[allow(clippy::disallowed_methods)] // the test reads the source tree, not a machine
    fn no_rule_imports_from_another_rule_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
        let mut stray = Vec::new();
        for entry in std::fs::read_dir(&dir).expect("rules dir") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("rule file");
            let product = text.split("#[cfg(test)]").next().unwrap_or("");
            for line in product.lines() {
                for prefix in ["crate::rules::", "super::"] {
                    for (at, _) in line.match_indices(prefix) {
                        let module: String = line[at + prefix.len()..]
                            .chars()
                            .take_while(|c| {
                                c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit()
                            })
                            .collect();
                        let support = matches!(module.as_str(), "deep_support" | "network_support");
                        // A relationship names the other rule by its static.
                        let rest = &line[at + prefix.len() + module.len()..];
                        let relation = rest.starts_with("::RULE");
                        if !module.is_empty() && !support && !relation {
                            stray.push(format!("{}: {}", path.display(), line.trim()));
                        }
                    }
                }
            }
        }
        assert!(stray.is_empty(), "move the helper to views/: {stray:#?}");
    }

    #[test]
    fn the_registry_is_sorted_by_layer_then_code() {
        let key = |r: &Rule| {
            let layer = Layer::ALL.iter().position(|l| *l == r.layer);
            let digits = r.code.trim_start_matches(|c: char| c.is_ascii_uppercase());
            let prefix = &r.code[..r.code.len() - digits.len()];
            (layer, prefix.to_string(), digits.parse::<u32>().ok())
        };
        for pair in RULES.windows(2) {
            assert!(
                key(pair[0]) < key(pair[1]),
                "{} must come after {} (order of Layer::ALL, then code)",
                pair[0].code,
                pair[1].code
            );
        }
    }

    #[test]
    fn lookup_by_code_or_name() {
        assert_eq!(rule_by_code("drv001").unwrap().code, "DRV001");
        assert_eq!(rule_by_code("no-driver").unwrap().code, "DRV001");
        assert!(rule_by_code("XYZ999").is_none());
    }

    #[test]
    fn the_healthy_h200_gives_no_health_finding() {
        // The test machine carries the real idle H200's health, field by field from its
        // `nvidia-smi -q` (testing::healthy_h200_health): not one rule of the machine under the
        // stack may speak of it.
        let s = crate::testing::h200();
        let ctx = crate::Context::new(&s, cudoctor_kb::Kb::embedded());
        for r in RULES {
            let health =
                r.code.starts_with("GPU") || ["PLT004", "PLT030", "PLT001"].contains(&r.code);
            if health {
                let f = (r.check)(&ctx);
                assert!(f.is_empty(), "{}: {f:#?}", r.code);
            }
        }
    }

    /// A rule's code is written as a string in its own file only: everything else that names a
    /// rule (the cause graph's orders, explain's confirmation tables) holds a reference to its
    /// `RULE` static, so a renamed or removed rule breaks the build instead of silently leaving
    /// a table behind. Test code, comments and prose that mentions a code are not counted.
    #[test]
    #[allow(clippy::disallowed_methods)] // the test reads the source tree, not a machine
    fn no_rule_code_is_a_string_outside_its_rule_file() {
        let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        let mut dirs = vec![crates.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if p.is_dir() {
                    // Integration tests, fixtures and build outputs are not product code.
                    if !matches!(name.as_str(), "tests" | "target" | "fixtures" | "testdata") {
                        dirs.push(p);
                    }
                } else if name.ends_with(".rs") && name != "tests.rs" && name != "testing.rs" {
                    files.push(p);
                }
            }
        }
        let mut stray = Vec::new();
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            let product = text.split("#[cfg(test)]").next().unwrap_or("");
            for r in RULES {
                let own = text.contains(&format!("code: \"{}\"", r.code));
                let quoted = format!("\"{}\"", r.code);
                let hit = product
                    .lines()
                    .any(|l| !l.trim_start().starts_with("//") && l.contains(&quoted));
                if hit && !own {
                    stray.push(format!("{} in {}", r.code, path.display()));
                }
            }
        }
        assert!(
            stray.is_empty(),
            "rule codes written as strings outside their rule files (refer to the rule's RULE \
             static instead): {stray:#?}"
        );
    }
}
