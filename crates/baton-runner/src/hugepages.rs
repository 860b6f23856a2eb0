//! Folding a large heap into huge pages before a process forks many
//! children.
//!
//! `fork` copies one page-table entry per resident 4 KiB page, and the exit
//! or `exec` of every child tears that copy down again; a tick that read ten
//! thousand jobs holds tens of MiB, and then pays for them twice per job.
//! Mapped by 2 MiB pages, the same heap costs one entry per 2 MiB. This
//! module asks the kernel (`MADV_COLLAPSE`, Linux 6.1) to fold the aligned
//! part of a large `[heap]` into huge pages. It is advice only: it never
//! fails its caller, changes no byte of memory, and does nothing on a small
//! heap, an older kernel or a system with transparent huge pages turned off.

#![allow(unsafe_code)] // madvise.

/// A heap smaller than this is left alone: it has at most one whole huge
/// page to fold, and the fold would cost more than it saves.
const WORTH_IT: usize = 8 << 20;

const HUGE: usize = 2 << 20;

/// The `[heap]` mapping of this process, as `(start, end)` addresses.
fn heap() -> Option<(usize, usize)> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[heap]"))?;
    let range = line.split_whitespace().next()?;
    let (start, end) = range.split_once('-')?;
    Some((
        usize::from_str_radix(start, 16).ok()?,
        usize::from_str_radix(end, 16).ok()?,
    ))
}

/// Folds the aligned 2 MiB blocks of a large heap into huge pages.
pub(crate) fn fold_heap() {
    let Some((start, end)) = heap() else { return };
    if end.saturating_sub(start) < WORTH_IT {
        return;
    }
    let first = start.next_multiple_of(HUGE);
    let last = end & !(HUGE - 1);
    if last <= first {
        return;
    }
    // Safety: the range lies inside this process's own heap mapping;
    // MADV_COLLAPSE moves its contents into huge pages without changing
    // them, and any failure (EINVAL on older kernels, EAGAIN or ENOMEM
    // when no huge page is free) leaves the memory as it was.
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            last - first,
            libc::MADV_COLLAPSE,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_heap_keeps_its_contents_when_folded() {
        // Many small allocations land in [heap]; fold, then read them back.
        let blocks: Vec<Vec<u8>> = (0..40_000u32).map(|i| vec![(i % 251) as u8; 512]).collect();
        assert!(heap().is_some(), "this process has a [heap] mapping");
        fold_heap();
        for (i, b) in blocks.iter().enumerate() {
            assert!(b.iter().all(|&x| x == (i % 251) as u8));
        }
    }
}
