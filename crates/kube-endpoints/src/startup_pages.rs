//! Letting go of the code and read-only data pages only start-up used.
//!
//! Starting `run` executes code it never runs again: flag parsing, the kubeconfig and TLS
//! set-up, logging and metrics registration, leader election's first steps, the
//! self-relocation of the static binary (which reads its relocation table once). Each page of
//! it stays resident (and counted in the process's RSS) for as long as the process lives,
//! together with the 64 KiB windows the kernel maps around every fault: 5.5 MiB of file pages
//! at 10,000 pods, of which the controllers' steady work touches about 4.
//!
//! Once the informers have synced, [`release`] tells the kernel the binary's read-only
//! segments (code, read-only data, the relocation table) are not needed: their pages leave
//! the process's page tables, still cached by the kernel, and the steady work faults back
//! in only what it runs. Those segments are private mappings of the executable that nothing
//! writes to (the relocated data is in a writable segment, left alone), so their contents come
//! back from the file unchanged.
//!
//! Set `KUBE_ENDPOINTS_KEEP_STARTUP_PAGES=1` to keep them: a debugger's breakpoints and
//! uprobes attached before the release live in private copies of code pages, which the
//! release drops.
//!
//! The workspace denies `unsafe`; this module is allowed two calls into libc, to list the
//! binary's segments and to advise the kernel about them.
#![allow(unsafe_code)]

/// The environment variable that keeps the pages.
pub const KEEP: &str = "KUBE_ENDPOINTS_KEEP_STARTUP_PAGES";

/// Releases the executable's read-only segments; returns how many bytes were advised (0
/// where this is not supported, or when `KEEP` says so).
pub fn release() -> usize {
    if std::env::var_os(KEEP).is_some_and(|v| !v.is_empty() && v != "0") {
        return 0;
    }
    let mut released = 0;
    for (start, len) in read_only_segments() {
        // SAFETY: the range is a whole number of pages of a read-only, private file mapping
        // of our own executable (a PT_LOAD segment without write permission). MADV_DONTNEED
        // on such a mapping only drops the page table entries; the next access faults the
        // same bytes back in from the file.
        let done = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_DONTNEED) };
        if done == 0 {
            released += len;
        }
    }
    released
}

/// The page-aligned ranges of the main executable's loaded segments that are not writable.
#[cfg(target_os = "linux")]
fn read_only_segments() -> Vec<(usize, usize)> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        found: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the duration of the call, and
        // `found` is the vector `read_only_segments` handed it.
        let (info, found) = unsafe { (&*info, &mut *found.cast::<Vec<(usize, usize)>>()) };
        // The first object listed is the main program.
        if info.dlpi_phdr.is_null() {
            return 1;
        }
        // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
        let headers =
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
        let page = page_size();
        for header in headers {
            if header.p_type != libc::PT_LOAD || header.p_flags & libc::PF_W != 0 {
                continue;
            }
            let Ok(vaddr) = usize::try_from(header.p_vaddr) else {
                continue;
            };
            let Ok(memsz) = usize::try_from(header.p_memsz) else {
                continue;
            };
            let base = usize::try_from(info.dlpi_addr).unwrap_or(0);
            let start = (base + vaddr).next_multiple_of(page);
            let end = (base + vaddr + memsz) / page * page;
            if end > start {
                found.push((start, end - start));
            }
        }
        1
    }
    let mut found: Vec<(usize, usize)> = Vec::new();
    // SAFETY: `each` only reads the headers it is given and writes to `found`, which
    // outlives the call.
    unsafe {
        libc::dl_iterate_phdr(Some(each), (&raw mut found).cast());
    }
    found
}

#[cfg(not(target_os = "linux"))]
fn read_only_segments() -> Vec<(usize, usize)> {
    Vec::new()
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|s| *s > 0)
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The process's resident file pages, in KiB.
    fn resident_file_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("RssFile:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    #[test]
    fn released_segments_leave_the_resident_set_and_the_code_runs_on() {
        let segments = read_only_segments();
        assert!(!segments.is_empty());
        let page = page_size();
        assert!(segments
            .iter()
            .all(|(start, len)| start % page == 0 && len % page == 0));
        let before = resident_file_kib();
        let released = release();
        let after = resident_file_kib();
        assert!(released > 0);
        // This test's own code and constants were among them, and ran again to get here.
        assert!(
            after < before,
            "resident file pages {before} KiB -> {after} KiB"
        );
    }
}
