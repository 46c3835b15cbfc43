//! Libraries whose kernels are not in their fat binaries, so their `.nv_fatbin` says nothing
//! about the GPUs they run on.
//!
//! cuFFT is one: its `.nv_fatbin` holds one small cubin for the oldest architecture of its CUDA
//! release, and its kernels live elsewhere in the library (it links them at run time with
//! nvJitLink, whose entry points `__nvJitLinkGetLinkedCubin` its strings name, beside
//! `-arch=sm_100` ... `-arch=sm_120`). Measured on the wheels from PyPI, 2026-12-02:
//!
//! | wheel | library | size | `.nv_fatbin` | its cubins (cudoctor and cuobjdump 13.1 `--list-elf`) |
//! |---|---|---|---|---|
//! | nvidia-cufft-cu12 11.3.0.4 (CUDA 12.6) | libcufft.so.11 | 279 MB | 400 bytes | sm_52 |
//! | nvidia-cufft-cu12 11.3.0.4 | libcufftw.so.11 | 2.1 MB | 952 bytes | sm_52 |
//! | nvidia-cufft 12.2.0.57 (CUDA 13) | libcufft.so.12 | 291 MB | 672 bytes | sm_75 |
//! | nvidia-cufft 12.2.0.57 | libcufftw.so.12 | 1.0 MB | 1984 bytes | sm_75 |
//!
//! (cuFFTW is cuFFT's FFTW interface and runs cuFFT's kernels.)

/// Why the kernel images of the library at `path` cannot be judged from its fat binary, for a
/// library known to keep its kernels elsewhere; None for every other library.
pub fn kernels_outside_fat_binary(path: &str) -> Option<&'static str> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    let cufft = ["libcufft", "libcufftw", "cufft64", "cufftw64"];
    cufft.iter().any(|c| stem == *c || stem.starts_with(&format!("{c}_"))).then_some(
        "cuFFT keeps its kernels outside its fat binary (which holds one stub cubin): its GPU coverage cannot be read from the file",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cufft_and_cufftw_of_both_cuda_majors() {
        for p in [
            "/v/site-packages/nvidia/cufft/lib/libcufft.so.11",
            "/v/site-packages/nvidia/cu13/lib/libcufft.so.12",
            "/v/site-packages/nvidia/cu13/lib/libcufftw.so.12",
            r"C:\v\Lib\site-packages\nvidia\cufft\bin\cufft64_11.dll",
        ] {
            assert!(kernels_outside_fat_binary(p).is_some(), "{p}");
        }
    }

    #[test]
    fn other_libraries_are_judged_by_their_fat_binary() {
        for p in [
            "/v/site-packages/nvidia/cu13/lib/libcublas.so.13",
            "/v/site-packages/torch/lib/libtorch_cuda.so",
            "/v/site-packages/nvidia/cu13/lib/libcufile.so.0",
            "/v/site-packages/cufft_extension.so",
        ] {
            assert!(kernels_outside_fat_binary(p).is_none(), "{p}");
        }
    }
}
