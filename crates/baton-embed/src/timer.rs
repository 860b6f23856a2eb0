//! Waiting until an instant of the scheduler's [`Clock`]: the wall clock
//! for occurrences, the boot clock for renewals, graces and backoffs.
//!
//! This is the scheduler's only way to wait. A clock that moves by itself
//! (the system's) is waited on with tokio's timer, at most [`RECHECK`] at a
//! time so that a step of the wall clock is noticed; a clock that moves
//! only when told ([`Clock::moves`], a test's `ManualClock`) is waited on
//! for its next move, never for real time, so a test steps through hours
//! of schedule in milliseconds. Nothing here reads the time but through
//! the clock.

use std::time::Duration;

use baton_lease::Clock;
use jiff::Timestamp;

/// The longest one real wait before the clock is read again.
pub(crate) const RECHECK: Duration = Duration::from_secs(1);

/// Returns once `clock`'s wall clock reads `at` or later.
pub(crate) async fn until_wall(clock: &dyn Clock, at: Timestamp) {
    until(clock, || {
        let now = clock.wall();
        Duration::try_from(at.duration_since(now))
            .ok()
            .filter(|d| !d.is_zero())
    })
    .await;
}

/// Returns once `clock`'s boot clock reads `at` or later.
pub(crate) async fn until_boot(clock: &dyn Clock, at: Duration) {
    until(clock, || {
        Some(at.saturating_sub(clock.boot())).filter(|d| !d.is_zero())
    })
    .await;
}

/// Waits while `left` says how long is left.
async fn until(clock: &dyn Clock, left: impl Fn() -> Option<Duration>) {
    loop {
        match clock.moves() {
            Some(moves) => {
                // Read before the clock, so that a move in between wakes us.
                let seen = moves.seen();
                if left().is_none() {
                    return;
                }
                moves.since(seen).await;
            }
            None => {
                let Some(d) = left() else { return };
                tokio::time::sleep(d.min(RECHECK)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_lease::ManualClock;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_manual_clock_is_waited_on_for_its_moves_alone() {
        let clock = Arc::new(ManualClock::new(
            Timestamp::from_second(1_000).unwrap(),
            Duration::from_secs(10),
        ));
        let c = Arc::clone(&clock);
        let waiter = tokio::spawn(async move {
            until_wall(&*c, Timestamp::from_second(1_060).unwrap()).await;
            c.wall()
        });
        tokio::task::yield_now().await;
        clock.advance(Duration::from_secs(30));
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        clock.advance(Duration::from_secs(30));
        let woke = waiter.await.unwrap();
        assert_eq!(woke, Timestamp::from_second(1_060).unwrap());
    }
}
