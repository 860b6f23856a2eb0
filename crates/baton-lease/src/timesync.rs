//! Whether the kernel believes its clock is synchronised: `adjtimex(2)`
//! read with no modes, as `timedatectl` and `ntpstat` read it.
//!
//! The lease judges holders it cannot check (another host, another pid
//! namespace) by the wall clock, and every host's decisions stamp it; a
//! clock that nothing keeps in step drifts until a judge on another host
//! takes a lease early or a claim lands in the future (`DESIGN.md`,
//! "Clocks"). An NTP daemon (chrony, ntpd, systemd-timesyncd) that disciplines
//! the clock clears `STA_UNSYNC`; the kernel sets it, and answers
//! `TIME_ERROR`, when none has for a while (its maximum error grew past
//! 16 s).
//!
//! This reads the kernel's state only: it never sets the clock, and it is
//! not a clock (time is read through [`crate::clock`]).

use std::io;

use crate::sys::kernel;

/// `adjtimex(2)`'s answer when the clock is not synchronised.
const TIME_ERROR: i32 = 5;
/// The status bit of a clock nothing synchronises.
const STA_UNSYNC: i32 = 0x0040;

/// What the kernel says about its clock's synchronisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSync {
    /// `adjtimex`'s return value: `TIME_OK` (0) … `TIME_ERROR` (5).
    pub state: i32,
    /// The `STA_*` status bits.
    pub status: i32,
    /// The kernel's maximum error, in microseconds.
    pub max_error_us: i64,
    /// The kernel's estimated error, in microseconds.
    pub est_error_us: i64,
}

impl KernelSync {
    /// Whether something keeps the clock synchronised: neither
    /// `TIME_ERROR` nor `STA_UNSYNC`.
    pub fn synchronised(&self) -> bool {
        self.state != TIME_ERROR && self.status & STA_UNSYNC == 0
    }

    /// The state in words (`TIME_OK`, `TIME_ERROR`, …).
    pub fn state_word(&self) -> &'static str {
        match self.state {
            0 => "TIME_OK",
            1 => "TIME_INS",
            2 => "TIME_DEL",
            3 => "TIME_OOP",
            4 => "TIME_WAIT",
            5 => "TIME_ERROR",
            _ => "unknown",
        }
    }
}

/// Reads the kernel's synchronisation state (`adjtimex` with no modes:
/// changes nothing, needs no privilege).
///
/// # Errors
///
/// When the kernel refuses the call (a sandbox that filters it).
pub fn kernel_sync() -> io::Result<KernelSync> {
    let t = kernel::adjtimex()?;
    Ok(KernelSync {
        state: t.state,
        status: t.status,
        max_error_us: t.max_error_us,
        est_error_us: t.est_error_us,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync(state: i32, status: i32) -> KernelSync {
        KernelSync {
            state,
            status,
            max_error_us: 0,
            est_error_us: 0,
        }
    }

    #[test]
    fn unsynchronised_is_time_error_or_sta_unsync() {
        assert!(sync(0, 0x2001).synchronised());
        assert!(!sync(5, 0x0001).synchronised());
        assert!(!sync(0, 0x0041).synchronised());
        assert_eq!(sync(5, 0).state_word(), "TIME_ERROR");
    }

    #[test]
    fn the_kernel_answers() {
        let k = kernel_sync().unwrap();
        assert!((0..=5).contains(&k.state), "{k:?}");
    }
}
