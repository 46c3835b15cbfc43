//! The C allocator's caches, bounded. The collector reads symbol and string tables of tens of
//! megabytes on several threads; once glibc frees such a block it raises its mmap threshold, so
//! the next large blocks come from the threads' arenas and stay there: the peak RSS then grows
//! with the threads and the environments (measured: 456 MiB for twenty envs on a 16-core
//! machine). A fixed threshold sends every large block to mmap, so freeing it returns it to the
//! system. (Capping the arenas too, at 4, halved RSS on one env more but doubled the CPU time
//! on 16 cores: the threads then wait on each other's arenas.)

/// glibc's `mallopt` parameter (malloc.h).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const M_MMAP_THRESHOLD: i32 = -3;

/// Blocks from this size up (the large string and symbol tables) are mapped and unmapped on
/// their own; smaller ones keep reusing the arenas (a 256 KiB threshold cost 10-20% CPU).
const MMAP_THRESHOLD: i32 = 4 << 20;

/// Sets the allocator's bound; call once, first thing in `main`. A no-op where the C library
/// is not glibc.
#[allow(unsafe_code)]
pub fn bound_allocator_caches() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        // SAFETY: mallopt only sets an allocator parameter; called before any other thread.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        }
    }
    let _ = MMAP_THRESHOLD;
}
