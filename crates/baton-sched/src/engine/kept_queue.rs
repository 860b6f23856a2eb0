//! The queue of a lock's jobs as a run's end read it, in the end's own
//! transaction ([`baton_store::ledger::Records::finish_run_then_next`]),
//! kept for the holder's next look before the release, so that look costs
//! no call to the ledger.
//!
//! It owns one such read: it answers one look at most, and only a look at
//! the very jobs it was read for. It must never answer a look made after
//! the lease is let go, nor one for a later run than the one whose end
//! read it: the holder forgets it when a run starts and at the release
//! ([`KeptQueue::forget`]).

/// The oldest queued occurrence among some jobs, with its job.
type Next = Option<(String, i64)>;

/// One read of the queue, until it is taken or forgotten.
#[derive(Debug, Default)]
pub(crate) struct KeptQueue(Option<(Vec<String>, Next)>);

impl KeptQueue {
    /// Keeps what the queue of `jobs` held: `next`.
    pub(crate) fn keep(&mut self, jobs: &[&str], next: Next) {
        let named = jobs.iter().map(|&j| j.to_owned()).collect();
        self.0 = Some((named, next));
    }

    /// What the queue of `jobs` held, when it was read for these very jobs;
    /// forgotten either way, so that it answers one look at most.
    pub(crate) fn take(&mut self, jobs: &[&str]) -> Option<Next> {
        let (named, next) = self.0.take()?;
        named
            .iter()
            .map(String::as_str)
            .eq(jobs.iter().copied())
            .then_some(next)
    }

    /// Forgets what was kept.
    pub(crate) fn forget(&mut self) {
        self.0 = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_queue_answers_one_look_at_the_same_jobs() {
        let mut kept = KeptQueue::default();
        assert_eq!(kept.take(&["a", "b"]), None, "nothing kept");
        kept.keep(&["a", "b"], Some(("b".into(), 60)));
        assert_eq!(kept.take(&["a", "b"]), Some(Some(("b".into(), 60))));
        assert_eq!(kept.take(&["a", "b"]), None, "taken once");
        // An empty queue is an answer too.
        kept.keep(&["a"], None);
        assert_eq!(kept.take(&["a"]), Some(None));
    }

    #[test]
    fn a_kept_queue_is_no_answer_for_other_jobs_and_is_gone_after() {
        let mut kept = KeptQueue::default();
        kept.keep(&["a", "b"], Some(("a".into(), 0)));
        assert_eq!(kept.take(&["a"]), None, "read for other jobs");
        assert_eq!(kept.take(&["a", "b"]), None, "forgotten by that look");
        kept.keep(&["a"], Some(("a".into(), 0)));
        kept.forget();
        assert_eq!(kept.take(&["a"]), None, "forgotten");
    }
}
