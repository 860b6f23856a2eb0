//! The clock: the only place in baton that reads the time or sleeps.
//!
//! A lease is judged with two clocks, and each comparison names the one it
//! uses (see `DESIGN.md`, "Clocks"):
//!
//! - the **wall clock** ([`Clock::wall`]) stamps records for humans and judges
//!   holders that cannot be checked from here (another host, another pid
//!   namespace), because it is the only clock two machines share;
//! - the **boot clock** ([`Clock::boot`], `CLOCK_BOOTTIME`) measures renewal
//!   freshness between processes of one boot and every deadline and backoff.
//!   It never steps, and it keeps counting through a suspend.
//!
//! Everything else asks a [`Clock`]; clippy's `disallowed-methods` forbids
//! `SystemTime::now`, `Instant::now`, `Timestamp::now` and `thread::sleep`
//! outside this module. Tests inject a [`ManualClock`] to drive every timing
//! rule deterministically.

use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use jiff::Timestamp;

/// A source of time. Implementations must be cheap: the lease reads the clock
/// inside its critical section.
pub trait Clock: Send + Sync {
    /// The wall clock (UTC). It may step in either direction.
    fn wall(&self) -> Timestamp;
    /// Time since this machine booted, counting suspend (`CLOCK_BOOTTIME`).
    /// Monotonic; comparable only within one boot.
    fn boot(&self) -> Duration;
    /// Waits for `d`. A test clock advances itself instead.
    fn sleep(&self, d: Duration);
    /// For a clock that moves only when told ([`ManualClock`]), how a
    /// waiter learns that it was moved: an async timer then waits for a
    /// move, never for real time. `None` (the default) for a clock that
    /// moves by itself, which a waiter waits on for real.
    fn moves(&self) -> Option<&Moves> {
        None
    }
}

/// The moves of a clock that moves only when told: a count of them, and
/// the wakers of the futures waiting for the next ([`Moves::since`]). It
/// owns no time; its clock bumps it on each move.
#[derive(Debug, Default)]
pub struct Moves {
    state: Mutex<(u64, Vec<Waker>)>,
}

impl Moves {
    /// How many moves there have been so far: read it before reading the
    /// clock, then wait with [`Moves::since`], and no move in between is
    /// missed.
    pub fn seen(&self) -> u64 {
        self.lock().0
    }

    /// A future ready once the clock has moved after `seen` moves.
    pub fn since(&self, seen: u64) -> MovedSince<'_> {
        MovedSince { moves: self, seen }
    }

    /// Counts a move and wakes every waiter.
    fn moved(&self) {
        let wakers = {
            let mut s = self.lock();
            s.0 += 1;
            std::mem::take(&mut s.1)
        };
        for w in wakers {
            w.wake();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Vec<Waker>)> {
        // A poisoned count only means a waiter's thread panicked; the count
        // and the wakers are still whole.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The future of [`Moves::since`].
#[derive(Debug)]
#[must_use = "a future does nothing unless awaited"]
pub struct MovedSince<'a> {
    moves: &'a Moves,
    seen: u64,
}

impl std::future::Future for MovedSince<'_> {
    type Output = ();

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.moves.lock();
        if s.0 != self.seen {
            return Poll::Ready(());
        }
        if !s.1.iter().any(|w| w.will_wake(cx.waker())) {
            s.1.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// The first instant the wall clock may not read: 9999-01-01T00:00:00Z.
/// Past it, a time a year or a lease ahead (a schedule's next instant, a
/// lease's expiry) could not be written as a date at all.
pub const LAST_WALL_SECOND: i64 = 253_370_764_800;

/// The wall clock read past the years baton counts with (up to 9998):
/// nothing that compares a time with it can be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WallOutOfRange {
    /// What the clock read, as seconds since 1970-01-01 (negative before).
    pub seconds: i128,
}

impl std::fmt::Display for WallOutOfRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the system clock reads {} s since 1970-01-01, past the years baton counts with \
             (up to 9998-12-31 UTC): set the clock right (timedatectl, NTP); nothing was run",
            self.seconds
        )
    }
}

impl std::error::Error for WallOutOfRange {}

/// Whether the machine's wall clock reads a time baton can count with; a
/// command checks it once, before it decides or runs anything.
///
/// # Errors
///
/// [`WallOutOfRange`] with what the clock read.
#[allow(clippy::disallowed_methods)] // This is the clock's chokepoint.
pub fn check_system_wall() -> Result<(), WallOutOfRange> {
    let seconds = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i128::from(d.as_secs()),
        Err(e) => -i128::from(e.duration().as_secs()) - 1,
    };
    // As far before 1970 as the bound is after it: well inside what a
    // timestamp holds.
    let first = -i128::from(LAST_WALL_SECOND);
    if (first..i128::from(LAST_WALL_SECOND)).contains(&seconds) {
        Ok(())
    } else {
        Err(WallOutOfRange { seconds })
    }
}

/// The machine's clocks.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // This is the clock's chokepoint.
    fn wall(&self) -> Timestamp {
        // A clock stepped past what a timestamp holds reads as its bound,
        // never a panic; every command refuses such a clock at its start
        // ([`check_system_wall`]).
        Timestamp::try_from(std::time::SystemTime::now()).unwrap_or_else(|_| {
            match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
                Ok(_) => Timestamp::MAX,
                Err(_) => Timestamp::MIN,
            }
        })
    }

    #[allow(clippy::disallowed_methods)] // This is the clock's chokepoint.
    fn boot(&self) -> Duration {
        let ts = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
        // OK because CLOCK_BOOTTIME is never negative.
        Duration::new(u64::try_from(ts.tv_sec).unwrap_or(0), ts.tv_nsec as u32)
    }

    #[allow(clippy::disallowed_methods)] // This is the clock's chokepoint.
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// The clock of a store several hosts share, as this host measured it once:
/// the store's wall clock at that instant, carried on by this host's boot
/// clock (which never steps), so that a step of this host's wall clock
/// afterwards (NTP correcting it) changes nothing. Boot clock and sleep are
/// the inner clock's.
#[derive(Clone)]
pub struct ShiftedClock {
    inner: std::sync::Arc<dyn Clock>,
    store: Timestamp,
    at_boot: Duration,
    offset: jiff::SignedDuration,
}

impl ShiftedClock {
    /// A clock that read `store` when `inner`'s boot clock read `at_boot`;
    /// `offset` is the store's clock minus `inner`'s wall clock then, kept
    /// for messages.
    pub fn new(
        inner: std::sync::Arc<dyn Clock>,
        store: Timestamp,
        at_boot: Duration,
        offset: jiff::SignedDuration,
    ) -> Self {
        Self {
            inner,
            store,
            at_boot,
            offset,
        }
    }

    /// How far the store's clock was from this host's when measured.
    pub fn offset(&self) -> jiff::SignedDuration {
        self.offset
    }
}

impl std::fmt::Debug for ShiftedClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShiftedClock")
            .field("store", &self.store)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl Clock for ShiftedClock {
    fn wall(&self) -> Timestamp {
        let since = self.inner.boot().saturating_sub(self.at_boot);
        jiff::SignedDuration::try_from(since)
            .ok()
            .and_then(|d| self.store.checked_add(d).ok())
            .unwrap_or(self.store)
    }

    fn boot(&self) -> Duration {
        self.inner.boot()
    }

    fn sleep(&self, d: Duration) {
        self.inner.sleep(d);
    }

    fn moves(&self) -> Option<&Moves> {
        self.inner.moves()
    }
}

/// A clock that moves only when told to, for deterministic tests.
///
/// `sleep` advances both clocks by the requested amount and yields the thread,
/// so a loop that waits on a `ManualClock` terminates without real waiting.
/// Every move (`advance`, `step_wall`, `sleep`) is counted in its
/// [`Moves`], which wakes the async timers waiting on it.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<(Timestamp, Duration)>,
    moves: Moves,
}

impl ManualClock {
    /// A clock showing `wall`, with the boot clock at `boot`.
    pub fn new(wall: Timestamp, boot: Duration) -> Self {
        Self {
            now: Mutex::new((wall, boot)),
            moves: Moves::default(),
        }
    }

    /// Moves both clocks forward by `d`.
    pub fn advance(&self, d: Duration) {
        {
            let mut now = self.lock();
            now.0 += d;
            now.1 += d;
        }
        self.moves.moved();
    }

    /// Steps the wall clock alone by `secs` (negative steps backwards), as an
    /// NTP correction or an operator's `date -s` would. The boot clock is
    /// untouched.
    pub fn step_wall(&self, secs: i64) {
        {
            let mut now = self.lock();
            now.0 += jiff::SignedDuration::from_secs(secs);
        }
        self.moves.moved();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Timestamp, Duration)> {
        // A poisoned clock only means another test thread panicked; the
        // pair inside is still a valid reading.
        self.now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Clock for ManualClock {
    fn wall(&self) -> Timestamp {
        self.lock().0
    }

    fn boot(&self) -> Duration {
        self.lock().1
    }

    fn sleep(&self, d: Duration) {
        self.advance(d);
        std::thread::yield_now();
    }

    fn moves(&self) -> Option<&Moves> {
        Some(&self.moves)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(Timestamp::UNIX_EPOCH, Duration::from_secs(5));
        assert_eq!(c.boot(), Duration::from_secs(5));
        c.sleep(Duration::from_secs(2));
        assert_eq!(c.boot(), Duration::from_secs(7));
        assert_eq!(c.wall(), Timestamp::from_second(2).unwrap());
        c.step_wall(-3600);
        assert_eq!(c.boot(), Duration::from_secs(7));
        assert_eq!(c.wall(), Timestamp::from_second(2 - 3600).unwrap());
    }

    #[test]
    fn a_shifted_clock_goes_by_the_store_and_the_boot_clock_not_this_wall() {
        let local = std::sync::Arc::new(ManualClock::new(
            Timestamp::from_second(1000).unwrap(),
            Duration::from_secs(50),
        ));
        let store = Timestamp::from_second(4600).unwrap();
        let c = ShiftedClock::new(
            local.clone(),
            store,
            Duration::from_secs(50),
            jiff::SignedDuration::from_secs(3600),
        );
        assert_eq!(c.wall(), store);
        local.advance(Duration::from_secs(10));
        assert_eq!(c.wall(), Timestamp::from_second(4610).unwrap());
        // NTP steps this host's clock: the store's time goes on unmoved.
        local.step_wall(3600);
        assert_eq!(c.wall(), Timestamp::from_second(4610).unwrap());
        assert_eq!(c.boot(), Duration::from_secs(60));
    }

    #[test]
    fn a_waiter_on_a_manual_clock_is_woken_by_its_next_move() {
        use std::future::Future;
        struct Count(std::sync::atomic::AtomicUsize);
        impl std::task::Wake for Count {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let c = ManualClock::new(Timestamp::UNIX_EPOCH, Duration::ZERO);
        let moves = c.moves().expect("a manual clock counts its moves");
        let woken = std::sync::Arc::new(Count(std::sync::atomic::AtomicUsize::new(0)));
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let mut wait = std::pin::pin!(moves.since(moves.seen()));
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        c.step_wall(1);
        assert_eq!(woken.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(wait.as_mut().poll(&mut cx).is_ready());
        assert!(SystemClock.moves().is_none());
    }

    #[test]
    fn system_boot_clock_does_not_go_backwards() {
        let c = SystemClock;
        let a = c.boot();
        let b = c.boot();
        assert!(b >= a);
        assert!(a > Duration::ZERO);
    }
}
