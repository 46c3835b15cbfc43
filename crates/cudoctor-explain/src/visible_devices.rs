//! What a CUDA_VISIBLE_DEVICES value leaves visible: the workspace's one interpreter
//! (cudoctor-types), under the name the cross-check uses.

pub use cudoctor_types::visible_devices::{all_indices, judge, Visibility};
