//! Keeping a run's lease: renewals every third of the TTL, each on a
//! blocking thread (the store's calls are synchronous and may block), and
//! self-fencing.
//!
//! The rule is the runner's (`DESIGN.md`, "Self-fencing"): the lease is
//! lost when a renewal finds it gone, or when no renewal sent in the last
//! TTL has succeeded, measured on the boot clock from the send time of the
//! last successful one; a renewal still under way then is given at most
//! the store's renewal wait to land. The keeper then says so at once
//! ([`Kept::lost`]), and the run cancels and drops its job. It never
//! decides that a lease is lost without a token-checked answer or the
//! deadline, and it never releases: the run does, once its job is gone.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::Clock;
use baton_store::{Held, Renewal};
use tokio::sync::watch;

use crate::timer;

/// A lease under renewal, and how the run hears of its loss.
pub(crate) struct Kept {
    /// Why the lease was lost, once it was.
    pub(crate) lost: watch::Receiver<Option<String>>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Option<Box<dyn Held>>>,
}

impl Kept {
    /// Starts renewing `held`, acquired by a call sent at `sent` (boot
    /// clock).
    pub(crate) fn start(held: Box<dyn Held>, sent: Duration, clock: Arc<dyn Clock>) -> Self {
        let (lost_tx, lost) = watch::channel(None);
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(keep(held, sent, clock, lost_tx, stop_rx));
        Self { lost, stop, task }
    }

    /// Stops renewing and hands the lease back for its release: `None`
    /// when a renewal that outlived the deadline still holds it (it frees
    /// itself: the lock file once its record is judged, a row after its
    /// TTL).
    pub(crate) async fn stop(self) -> Option<Box<dyn Held>> {
        let _ = self.stop.send(true);
        self.task.await.ok().flatten()
    }
}

/// The renewal loop.
async fn keep(
    held: Box<dyn Held>,
    acquired: Duration,
    clock: Arc<dyn Clock>,
    lost: watch::Sender<Option<String>>,
    mut stop: watch::Receiver<bool>,
) -> Option<Box<dyn Held>> {
    let ttl = held.ttl();
    let wait = held.renew_wait();
    let every = ttl / 3;
    let describe = held.describe();
    let mut held = Some(held);
    let mut last_ok = acquired;
    let mut next = acquired + every;
    let lose = |why: String| {
        tracing::warn!("{why}; the run is cancelled");
        let _ = lost.send(Some(why));
    };
    loop {
        let deadline = last_ok + ttl;
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return held,
            () = timer::until_boot(&*clock, next.min(deadline)) => {}
        }
        if clock.boot() >= deadline {
            lose(format!(
                "could not renew the lease on {describe} for its TTL ({ttl:?})"
            ));
            return held;
        }
        let sent = clock.boot();
        let mut h = held.take()?;
        let mut call = tokio::task::spawn_blocking(move || {
            let r = h.renew();
            (h, r)
        });
        let answer_by = deadline.max(sent) + wait;
        let answer = tokio::select! {
            a = &mut call => a,
            () = timer::until_boot(&*clock, answer_by) => {
                lose(format!(
                    "could not renew the lease on {describe}: no answer within its TTL \
                     ({ttl:?}) and the renewal's wait ({wait:?})"
                ));
                // The call may still be blocked: the lease is left to it.
                return None;
            }
        };
        let Ok((h, r)) = answer else {
            lose("the lease's renewal thread failed".into());
            return None;
        };
        held = Some(h);
        match r {
            Ok(Renewal::Renewed) => {
                last_ok = last_ok.max(sent);
                next = sent + every;
            }
            Ok(Renewal::Lost(why)) => {
                lose(format!("the lease on {describe} was lost: {why}"));
                return held;
            }
            Ok(Renewal::Unconfirmed(why)) => {
                tracing::warn!("could not renew the lease on {describe} ({why}); retrying");
                next = clock.boot() + every;
            }
            Err(e) => {
                tracing::warn!("could not renew the lease on {describe}: {e}; retrying");
                next = clock.boot() + every;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_lease::{ManualClock, Once};
    use baton_store::{HeldError, Release, Restated};
    use jiff::Timestamp;

    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A lease whose renewals say what the test set: renewed, unconfirmed,
    /// or blocked until released; each counted as it starts.
    #[derive(Debug)]
    struct Scripted {
        answer: Renewal,
        blocked: Option<std::sync::mpsc::Receiver<()>>,
        renewals: Arc<AtomicUsize>,
    }

    impl Scripted {
        /// A lease answering `answer` (after `blocked` lets go, if set),
        /// and its count of renewals begun.
        fn new(
            answer: Renewal,
            blocked: Option<std::sync::mpsc::Receiver<()>>,
        ) -> (Self, Arc<AtomicUsize>) {
            let renewals = Arc::new(AtomicUsize::new(0));
            let held = Self {
                answer,
                blocked,
                renewals: Arc::clone(&renewals),
            };
            (held, renewals)
        }
    }

    impl Held for Scripted {
        fn ttl(&self) -> Duration {
            Duration::from_secs(3)
        }
        fn renew_wait(&self) -> Duration {
            Duration::from_millis(300)
        }
        fn fence(&self) -> u64 {
            1
        }
        fn token(&self) -> String {
            "t".into()
        }
        fn host(&self) -> &str {
            "here"
        }
        fn describe(&self) -> String {
            "a scripted lease".into()
        }
        fn set_job_group(&mut self, _: u32, _: baton_lease::Leader) -> Result<Renewal, HeldError> {
            self.renew()
        }
        fn renew(&mut self) -> Result<Renewal, HeldError> {
            self.renewals.fetch_add(1, Ordering::SeqCst);
            if let Some(rx) = &self.blocked {
                let _ = rx.recv();
            }
            Ok(self.answer.clone())
        }
        fn restate(
            &mut self,
            _: Option<String>,
            _: Option<String>,
            _: Option<&Once>,
        ) -> Result<Restated, HeldError> {
            Ok(Restated::Done)
        }
        fn withdraw(&mut self, _: &Once) -> Result<Option<Renewal>, HeldError> {
            Ok(None)
        }
        fn release(self: Box<Self>) -> Result<Release, HeldError> {
            Ok(Release::Released)
        }
    }

    fn clock() -> Arc<ManualClock> {
        Arc::new(ManualClock::new(
            Timestamp::UNIX_EPOCH,
            Duration::from_secs(100),
        ))
    }

    /// Lets the keeper's task take in what its blocking renewal answered.
    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits until `renewals` have begun, or the lease is lost, for at
    /// most the testkit's patience.
    async fn renewed_or_lost(renewals: &AtomicUsize, kept: &Kept, n: usize) {
        let waiting = async {
            while renewals.load(Ordering::SeqCst) < n && kept.lost.borrow().is_none() {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        };
        tokio::time::timeout(baton_testkit::PATIENCE, waiting)
            .await
            .expect("a renewal or the loss within the patience");
    }

    /// Waits until the lease is lost, for at most the testkit's patience;
    /// why.
    async fn lost(kept: &mut Kept) -> String {
        tokio::time::timeout(baton_testkit::PATIENCE, kept.lost.wait_for(Option::is_some))
            .await
            .expect("the loss within the patience")
            .expect("the keeper says why")
            .clone()
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn unconfirmed_renewals_lose_the_lease_once_its_ttl_has_passed() {
        let clock = clock();
        let (held, renewals) = Scripted::new(
            Renewal::Unconfirmed("the store did not answer".into()),
            None,
        );
        let mut kept = Kept::start(Box::new(held), clock.boot(), clock.clone());
        // The renewal a third of the TTL on, unconfirmed, is taken in
        // (the next is due a third on from then: not waited for, since a
        // step taken before the answer is would put it later).
        clock.advance(Duration::from_secs(1));
        renewed_or_lost(&renewals, &kept, 1).await;
        settle().await;
        assert!(kept.lost.borrow().is_none(), "not lost within the TTL");
        clock.advance(Duration::from_secs(1));
        settle().await;
        assert!(kept.lost.borrow().is_none(), "not lost within the TTL");
        clock.advance(Duration::from_secs(1));
        let why = lost(&mut kept).await;
        assert!(
            why.contains("for its TTL"),
            "lost once the TTL has passed: {why}"
        );
        assert!(kept.stop().await.is_some(), "the lease is handed back");
    }

    #[tokio::test]
    async fn a_renewal_that_never_answers_loses_the_lease_after_its_wait() {
        let clock = clock();
        let (unblock, blocked) = std::sync::mpsc::channel();
        let (held, renewals) = Scripted::new(Renewal::Renewed, Some(blocked));
        let mut kept = Kept::start(Box::new(held), clock.boot(), clock.clone());
        clock.advance(Duration::from_secs(1)); // The renewal starts, and blocks.
        renewed_or_lost(&renewals, &kept, 1).await;
        clock.advance(Duration::from_secs(2)); // The TTL has passed…
        settle().await;
        assert!(
            kept.lost.borrow().is_none(),
            "…but the renewal has its wait"
        );
        clock.advance(Duration::from_millis(300));
        let why = lost(&mut kept).await;
        assert!(
            why.contains("no answer within"),
            "lost after the renewal's wait: {why}"
        );
        // The blocked call keeps the lease: nothing to release.
        assert!(kept.stop().await.is_none());
        drop(unblock);
    }

    #[tokio::test]
    async fn renewed_leases_are_kept_past_their_ttl() {
        let clock = clock();
        let (held, renewals) = Scripted::new(Renewal::Renewed, None);
        let kept = Kept::start(Box::new(held), clock.boot(), clock.clone());
        // Each renewal is sent as the clock reaches it, and the next is due
        // a third of the TTL from its sending, whenever its answer is taken
        // in: one renewal a step.
        for n in 1..=9 {
            clock.advance(Duration::from_secs(1));
            renewed_or_lost(&renewals, &kept, n).await;
            assert!(kept.lost.borrow().is_none(), "renewal {n}: lost");
        }
        settle().await;
        assert!(kept.lost.borrow().is_none());
        assert!(kept.stop().await.is_some());
    }
}
