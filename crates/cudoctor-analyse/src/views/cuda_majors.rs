//! The CUDA major of the libraries torch's process loads, beside torch's own.

use cudoctor_ldso::{cuda_library, is_vendored_copy, CudaFamily};
use cudoctor_snapshot::{LibraryLinks, Opener, ProcessLinks};

use crate::context::TorchEnv;
use crate::Context;

/// The families whose soname major is the CUDA major.
const MAJOR_IN_SONAME: [CudaFamily; 6] = [
    CudaFamily::Cudart,
    CudaFamily::Cublas,
    CudaFamily::CublasLt,
    CudaFamily::Nvrtc,
    CudaFamily::NvJitLink,
    CudaFamily::Cupti,
];

/// The CUDA major an nvidia wheel folder implies: `nvidia/cu13` is CUDA 13's; the per-library
/// folders (`nvidia/cufft`, ...) are where the `nvidia-*-cu12` (and older) wheels install,
/// so next to a CUDA 13+ torch they hold another major's files. Folders both layouts share
/// (cudnn, nccl, nvshmem, cusparselt) say nothing.
fn wheel_folder_major(folder: &str, torch_major: u32) -> Option<u32> {
    const OLD_LAYOUT: [&str; 9] = [
        "cublas",
        "cuda_runtime",
        "cuda_nvrtc",
        "cuda_cupti",
        "cufft",
        "curand",
        "cusparse",
        "cusolver",
        "nvjitlink",
    ];
    if let Some(m) = folder.strip_prefix("cu").and_then(|d| d.parse().ok()) {
        return Some(m);
    }
    (torch_major >= 13 && OLD_LAYOUT.contains(&folder)).then_some(12)
}

/// The torch of the process's environment, with its CUDA major.
pub fn torch_of<'a>(ctx: &Context<'a>, p: &ProcessLinks) -> Option<(TorchEnv<'a>, u32)> {
    let t = ctx
        .torch_envs()
        .into_iter()
        .find(|t| t.env.prefix == p.env_prefix)?;
    let major = t.cuda()?.major;
    Some((t, major))
}

/// Objects of `p` that torch's loader brought in and whose CUDA major is not `major`.
pub fn foreign_major_objects(p: &ProcessLinks, major: u32) -> Vec<(&LibraryLinks, u32)> {
    p.objects
        .iter()
        .filter(|o| {
            o.opened_by
                .as_ref()
                .is_some_and(|b| b.opener == Opener::TorchPreload)
                && !is_vendored_copy(o.real_path.as_deref().unwrap_or(&o.path))
        })
        .filter_map(|o| {
            let lib = cuda_library(o.soname.as_deref().unwrap_or(&o.path))?;
            let m = if MAJOR_IN_SONAME.contains(&lib.family) {
                lib.major.as_deref()?.parse().ok()?
            } else {
                let folder = o.opened_by.as_ref()?.nvidia_folder.as_deref()?;
                wheel_folder_major(folder, major)?
            };
            (m != major).then_some((o, m))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_folders_name_their_major() {
        assert_eq!(wheel_folder_major("cu13", 13), Some(13));
        assert_eq!(wheel_folder_major("cufft", 13), Some(12));
        assert_eq!(wheel_folder_major("cufft", 12), None);
        assert_eq!(wheel_folder_major("cudnn", 13), None);
    }
}
