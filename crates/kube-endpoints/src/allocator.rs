//! The process's allocator: mimalloc, told to hand freed memory back to the system promptly.
//!
//! The controllers, the embedded server and `plan` allocate and free many small objects
//! (projections, JSON values, requests); mimalloc serves that pattern faster than glibc's
//! allocator. By default it keeps freed pages for 10 ms (and arenas ten times longer) and
//! commits whole arenas up front, so a burst of short-lived values (a list being decoded, a
//! manifest being typed) shows in the peak RSS long after it was freed. Purging after 1 ms and
//! committing arena memory on demand took about 20 MiB off the peak of `plan` on 10,000 pods
//! (now 197 MiB), for a few percent more CPU.
//!
//! mimalloc also reserves a 1 GiB arena at start and lets the kernel back it with transparent
//! huge pages, so the first few small allocations of each thread make whole 2 MiB pages
//! resident: `run` sat at 11 MiB of anonymous memory with nothing cached. Without the up-front
//! arena (segments come from the OS as needed, as the controllers' steady, small heap wants)
//! an idle `run` holds 3 MiB, and the 10,000-pod cold start of the bench peaks 10 MiB lower
//! with no measurable CPU cost.
//!
//! Building with `--features system-allocator` leaves the allocator to the system's, so that a
//! heap profiler that hooks `malloc` (heaptrack, valgrind's massif) sees every allocation; the
//! bench README shows how.
//!
//! The workspace denies `unsafe`; this module is its one exception, for two calls into
//! mimalloc's option table.
#![allow(unsafe_code)]

#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_arena_eager_commit` in the `mi_option_t` enum (the same index in mimalloc v2
/// and v3, which `libmimalloc-sys` builds); the crate does not export it as a constant.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
/// `mi_option_purge_delay`, in milliseconds.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// `mi_option_arena_reserve`, in KiB (the same index in v2 and v3).
const ARENA_RESERVE: libmimalloc_sys::mi_option_t = 23;

/// Runs [`tune`] while the program is loaded, before `main` and before Rust's runtime makes its
/// first allocation: mimalloc reserves its first arena at the first allocation, so options
/// that shape the arena must be set before it. (Looking up an environment variable that is not
/// set allocates nothing; one that is set is an operator's choice, which wins anyway.)
#[cfg(all(target_os = "linux", not(feature = "system-allocator")))]
#[used]
#[link_section = ".init_array"]
static TUNE_AT_LOAD: extern "C" fn() = {
    extern "C" fn tune_at_load() {
        tune();
    }
    tune_at_load
};

/// Sets the options above, unless the `MIMALLOC_*` environment variable of the same option
/// says otherwise (mimalloc reads those itself, and an operator's choice wins). Runs at load
/// on Linux; elsewhere call it first thing in `main`.
pub fn tune() {
    if cfg!(feature = "system-allocator") {
        return;
    }
    for (option, env, value) in [
        (ARENA_EAGER_COMMIT, "MIMALLOC_ARENA_EAGER_COMMIT", 0),
        (PURGE_DELAY, "MIMALLOC_PURGE_DELAY", 1),
        (ARENA_RESERVE, "MIMALLOC_ARENA_RESERVE", 0),
    ] {
        if std::env::var_os(env).is_none() {
            // SAFETY: mi_option_set only stores the value in mimalloc's option table; the
            // indices name options of the bundled mimalloc (checked by the test below).
            unsafe { libmimalloc_sys::mi_option_set(option, value) };
        }
    }
}

#[cfg(all(test, not(feature = "system-allocator")))]
mod tests {
    use super::*;

    #[test]
    fn the_option_indices_name_the_options_they_claim() {
        // The constants the crate does export pin the enum's numbering around ours.
        assert_eq!(libmimalloc_sys::mi_option_use_numa_nodes, PURGE_DELAY + 1);
        assert_eq!(
            libmimalloc_sys::mi_option_reserve_os_memory,
            ARENA_EAGER_COMMIT + 5
        );
        assert_eq!(libmimalloc_sys::mi_option_show_stats, 1);
        assert_eq!(libmimalloc_sys::mi_option_max_warnings + 3, ARENA_RESERVE);
        tune();
        // SAFETY: reads mimalloc's option table.
        let delay = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        let eager = unsafe { libmimalloc_sys::mi_option_get(ARENA_EAGER_COMMIT) };
        let reserve = unsafe { libmimalloc_sys::mi_option_get(ARENA_RESERVE) };
        if std::env::var_os("MIMALLOC_ARENA_RESERVE").is_none() {
            assert_eq!(reserve, 0);
        }
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(delay, 1);
        }
        if std::env::var_os("MIMALLOC_ARENA_EAGER_COMMIT").is_none() {
            assert_eq!(eager, 0);
        }
    }
}
