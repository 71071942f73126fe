//! The process's memory allocator, and giving freed memory back to the system.
//!
//! Owns the `#[global_allocator]` of every binary that links sluice's proxy: mimalloc,
//! measured against glibc's allocator (issue 32, bench/runs/2026-11-27-idle): glibc kept
//! a burst's freed buffers resident (13.0 KiB per idle client after 5,000 requests at
//! once; 9.4 with mimalloc, nginx 9.3), at the same CPU per request. Its `no_thp`
//! feature keeps its arenas off transparent huge pages, which doubled the resident
//! memory of a process at rest (20 MB instead of 10). Its version 2 (`v2`), not the
//! crate's default 3: 3 returned freed pages to the system only on later allocator
//! activity, so an idle balancer kept what its clients had freed (1,000 idle HTTP/2
//! connections over TLS: 32.7 KiB each with 3, 28.0 with 2; 16,937 and 17,030
//! instructions per plain request, callgrind).
//!
//! Version 2 too returns freed pages only when the thread that freed them allocates
//! again, 10 ms or more later: a worker that went quiet after a burst kept the burst's
//! buffers resident for as long as it stayed quiet. [`give_back`] is what a worker
//! calls once it is quiet.
//!
//! The only crate with `unsafe` code: one foreign call, `mi_collect`. It must never hold
//! anything else; everything that can be written without `unsafe` lives elsewhere.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Gives back to the system the memory this thread freed and the allocator still holds:
/// its empty pages, and their memory, at once rather than on its next allocations.
/// Visits every page of the thread's heap: for a quiet worker, not for every request.
pub fn give_back() {
    // SAFETY: `mi_collect` takes no pointer and has no precondition; it works on the
    // calling thread's heap, which mimalloc (the global allocator above) owns.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_collect(true)
    };
}

#[cfg(test)]
mod tests {
    /// The process's resident memory, in KiB (`/proc/self/statm`, in pages).
    fn resident_kib() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4
    }

    /// A burst's buffers, freed, stay resident until given back; given back, they are
    /// not; and the heap hands out memory again afterwards.
    #[test]
    fn freed_memory_given_back_leaves_the_resident_set() {
        const MIB: u64 = 64;
        let kept: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 4096]).collect();
        let burst: Vec<Vec<u8>> = (0..MIB * 64).map(|_| vec![7u8; 16 * 1024]).collect();
        let during = resident_kib();
        drop(burst);
        let freed = resident_kib();
        super::give_back();
        let given = resident_kib();
        assert!(
            freed.saturating_sub(given) > MIB * 1024 * 3 / 4,
            "resident KiB: {during} during the burst, {freed} once freed, {given} given back"
        );
        let again: Vec<Vec<u8>> = (0..1024).map(|_| vec![9u8; 16 * 1024]).collect();
        assert!(again.iter().all(|v| v.iter().all(|&b| b == 9)));
        assert!(kept
            .iter()
            .enumerate()
            .all(|(i, v)| v.iter().all(|&b| b == i as u8)));
    }
}
