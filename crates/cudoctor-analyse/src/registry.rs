//! The list of rules. Adding a rule: one file under `rules/`, one line here, in the order of
//! `Layer::ALL` and by code within a layer (the tests below check both).

use crate::rule::Rule;
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

    #[test]
    // Reads this crate's own source files, not a machine: rules stay pure.
    #[allow(clippy::disallowed_methods)]
    fn every_rule_file_is_registered() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
        let registry = include_str!("registry.rs");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).expect("rules dir") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("rule file");
            if !text.contains("pub static RULE: Rule") {
                continue;
            }
            files += 1;
            let stem = path.file_stem().and_then(|s| s.to_str()).expect("name");
            assert!(
                registry.contains(&format!("&rules::{stem}::RULE,")),
                "rules/{stem}.rs defines a RULE that registry.rs does not list"
            );
        }
        assert_eq!(files, RULES.len(), "rule files and registry lines differ");
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
}
