//! One file per rule. Each holds the rule's code, documentation, check and tests.

pub mod companion_mismatch;
pub mod conda_cudatoolkit_mismatch;
pub mod container_without_gpu;
pub mod cpu_only_torch;
pub mod cuda_home_invalid;
pub mod driver_library_mismatch;
pub mod driver_too_old_for_torch;
pub mod gpu_memory_in_use;
pub mod no_driver;
pub mod no_gpu_visible;
pub mod no_torch_found;
pub mod nvcc_missing;
pub mod nvcc_torch_major_mismatch;
pub mod require_cuda_unmet;
pub mod smi_cuda_is_a_ceiling;
pub mod toolkit_newer_than_driver;
pub mod toolkit_selection_disagrees;
pub mod toolkits_side_by_side;
pub mod torch_arch_list_lacks_gpu;
pub mod wsl_linux_driver;
