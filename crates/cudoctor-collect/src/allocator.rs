//! The C allocator's caches, bounded. The collector reads symbol and string tables of tens of
//! megabytes on several threads; glibc gives each thread its own arena and, once such a block is
//! freed, raises its mmap threshold so the next ones come from the arenas and stay there: the
//! peak RSS then grows with the threads and the environments (measured: 98 MiB for one env and
//! 438 MiB for twenty on a 16-core machine). A fixed threshold sends every large block to mmap,
//! so freeing it returns it to the system, and a few arenas keep the small ones.

/// glibc's `mallopt` parameters (malloc.h).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const M_MMAP_THRESHOLD: i32 = -3;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const M_ARENA_MAX: i32 = -8;

/// Blocks from this size up (the large string and symbol tables) are mapped and unmapped on
/// their own; smaller ones keep reusing the arenas (a lower threshold cost 10-20% CPU here).
const MMAP_THRESHOLD: i32 = 4 << 20;
/// Arenas for the worker threads' small allocations.
const ARENA_MAX: i32 = 4;

/// Sets the allocator's bounds; call once, first thing in `main`. A no-op where the C library
/// is not glibc.
#[allow(unsafe_code)]
pub fn bound_allocator_caches() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        // SAFETY: mallopt only sets allocator parameters; called before any other thread starts.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            mallopt(M_ARENA_MAX, ARENA_MAX);
        }
    }
    let _ = (MMAP_THRESHOLD, ARENA_MAX);
}
