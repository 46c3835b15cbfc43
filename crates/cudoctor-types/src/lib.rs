//! The values every cudoctor crate shares, each defined once with its one parser: the lowest
//! crate of the workspace, so the kernel-image reader, the knowledge base, the snapshot and the
//! rules all speak of the same `ComputeCapability` and `CudaVersion`, and read CUDA_VISIBLE_DEVICES the same way.

pub mod atomic_write;
pub mod deadline;
pub mod inert;
pub mod loader;
pub mod os_text;
pub mod read_at;
pub mod regular_file;
pub mod requirement;
pub mod secret;
pub mod threads;
pub mod version;
pub mod visible_devices;
pub mod xid;

pub use deadline::Deadline;
pub use loader::Via;
pub use requirement::{normalise_name, without_cuda_variant, PyVersion, Requirement};
pub use threads::ThreadBudget;
pub use version::{ComputeCapability, CudaVersion, DriverVersion, VersionError};
