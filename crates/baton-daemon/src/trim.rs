//! Giving the heap's free memory back to the system once the daemon
//! settles.
//!
//! Reading a configuration of a thousand jobs builds its document, its
//! values and their provenance, and then frees most of it; the C library
//! keeps the freed pages in its heap, resident, for allocations that an
//! idle daemon never makes. This module asks it (`malloc_trim`, glibc) to
//! return them once the clock has planned a new configuration. It is advice
//! only: it never fails its caller, changes no live allocation, and does
//! nothing on a C library without it.

#![allow(unsafe_code)] // malloc_trim.

/// Returns the heap's free pages to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn give_back() {
    // Safety: malloc_trim only releases memory the allocator holds free
    // (with madvise) and keeps for no one; it takes the allocator's own
    // locks and leaves every live allocation as it was.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Nothing to give back on a C library without `malloc_trim`.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn give_back() {}

#[cfg(test)]
mod tests {
    #[test]
    fn freed_memory_given_back_leaves_live_memory_whole() {
        let kept: Vec<Vec<u8>> = (0..2_000u32).map(|i| vec![(i % 251) as u8; 700]).collect();
        let freed: Vec<Vec<u8>> = (0..20_000u32).map(|_| vec![7u8; 700]).collect();
        drop(freed);
        super::give_back();
        for (i, b) in kept.iter().enumerate() {
            assert!(b.iter().all(|&x| x == (i % 251) as u8));
        }
    }
}
