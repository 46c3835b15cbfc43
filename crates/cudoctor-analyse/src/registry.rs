//! The list of rules. Adding a rule: one file under `rules/`, one line here.

use crate::rule::Rule;
use crate::rules;

pub static RULES: &[&Rule] = &[
    &rules::no_driver::RULE,
    &rules::no_gpu_visible::RULE,
    &rules::driver_library_mismatch::RULE,
    &rules::driver_too_old_for_torch::RULE,
    &rules::gpu_memory_in_use::RULE,
    &rules::nvcc_missing::RULE,
    &rules::nvcc_torch_major_mismatch::RULE,
    &rules::toolkit_selection_disagrees::RULE,
    &rules::toolkit_newer_than_driver::RULE,
    &rules::smi_cuda_is_a_ceiling::RULE,
    &rules::cuda_home_invalid::RULE,
    &rules::nvcc_flag_unsupported::RULE,
    &rules::cpu_only_torch::RULE,
    &rules::companion_mismatch::RULE,
    &rules::conda_cudatoolkit_mismatch::RULE,
    &rules::no_torch_found::RULE,
    &rules::wheel_files_damaged::RULE,
    &rules::wheel_files_overwritten::RULE,
    &rules::torch_arch_list_lacks_gpu::RULE,
    &rules::extension_lacks_gpu_arch::RULE,
    &rules::arch_list_env::RULE,
    &rules::nvcc_cannot_target_gpu::RULE,
    &rules::unreadable_kernel_images::RULE,
    &rules::missing_library::RULE,
    &rules::duplicate_library_copies::RULE,
    &rules::ld_library_path_shadows::RULE,
    &rules::unresolved_symbols::RULE,
    &rules::loaded_cuda_libraries::RULE,
    &rules::container_without_gpu::RULE,
    &rules::require_cuda_unmet::RULE,
    &rules::wsl_linux_driver::RULE,
    &rules::security_module_blocks_gpu::RULE,
    &rules::toolkits_side_by_side::RULE,
    &rules::attention_falls_back_to_math::RULE,
    &rules::fused_attention_unavailable::RULE,
    &rules::compile_falls_back::RULE,
    &rules::compile_amp_floor::RULE,
    &rules::cuda_unavailable_at_runtime::RULE,
    &rules::torch_probe_failed::RULE,
    &rules::gpu_smoke_test_fails::RULE,
    &rules::attention_extension_broken::RULE,
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
    RULES
        .iter()
        .copied()
        .find(|r| r.code.eq_ignore_ascii_case(code) || r.name == code)
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn lookup_by_code_or_name() {
        assert_eq!(rule_by_code("drv001").unwrap().code, "DRV001");
        assert_eq!(rule_by_code("no-driver").unwrap().code, "DRV001");
        assert!(rule_by_code("XYZ999").is_none());
    }
}
