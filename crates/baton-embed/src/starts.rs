//! The start records of the scheduler's runs, committed together: every
//! run that asks while a commit is under way is written by the next one
//! ([`baton_store::ledger::Records::begin_runs`]), so runs due at the same
//! instant share one commit (one `fsync`, one round trip to a server)
//! instead of waiting for each other's, one after the other.
//!
//! The local store's alone: its writers contend for one file, while a
//! shared store's runs write on the store's pooled connections, each
//! transaction on one of its own.
//!
//! Nothing is delayed to gather a batch: a start that finds no commit
//! under way is written at once. A batch the ledger refuses is written
//! again one start at a time, so each run gets its own answer (one bad
//! start never stops another). Each answer is the one
//! [`Records::begin_run`] would have given: this module decides nothing,
//! and never writes anything but what it was asked to.

use std::sync::Arc;

use baton_store::ledger::{Begun, Error, NewRun, Records};
use tokio::sync::{mpsc, oneshot};

use crate::store::Opened;

/// One start waiting for its commit, and where its answer goes.
type Ask = (NewRun, oneshot::Sender<Result<Begun, Error>>);

/// Where runs send their start records. Cloned into every run; the
/// committer ends once every clone is gone.
#[derive(Clone)]
pub(crate) struct Starts {
    tx: mpsc::UnboundedSender<Ask>,
}

impl Starts {
    /// Starts the committer on the current runtime.
    pub(crate) fn spawn(store: Opened, clock: Arc<dyn baton_lease::Clock>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(commit(store, clock, rx));
        Self { tx }
    }

    /// Records `run`'s start; `None` when the committer is gone (the run
    /// then does not start: its start is not known to be recorded).
    pub(crate) async fn begin(&self, run: NewRun) -> Option<Result<Begun, Error>> {
        let (answer, wait) = oneshot::channel();
        self.tx.send((run, answer)).ok()?;
        wait.await.ok()
    }
}

/// Takes every start waiting, commits them together on a blocking
/// thread, answers each; until no run can ask any more.
async fn commit(
    store: Opened,
    clock: Arc<dyn baton_lease::Clock>,
    mut rx: mpsc::UnboundedReceiver<Ask>,
) {
    // The ledger is kept between batches while young (as
    // `idle_ledgers.rs` keeps the runs').
    let mut ledger: Option<(Box<dyn Records>, std::time::Duration)> = None;
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
        }
        let (runs, answers): (Vec<NewRun>, Vec<_>) = batch.into_iter().unzip();
        let (store, now, boot) = (Arc::clone(&store), clock.wall(), clock.boot());
        let open = ledger
            .take()
            .filter(|(_, opened)| boot.saturating_sub(*opened) < crate::idle_ledgers::KEEP);
        let done = tokio::task::spawn_blocking(move || {
            let (mut l, opened) = match open {
                Some(l) => l,
                None => match store.records(now).map(|l| (l, boot)) {
                    Ok(l) => l,
                    Err(e) => {
                        // Each run is told why, in the ledger's words.
                        let each = runs
                            .iter()
                            .map(|_| {
                                Err(Error::store(e.kind(), std::io::Error::other(e.to_string())))
                            })
                            .collect();
                        return (None, each);
                    }
                },
            };
            let (begun, failed): (Vec<_>, bool) = match l.begin_runs(&runs) {
                Ok(b) => (b.into_iter().map(Ok).collect(), false),
                // Each alone, for each its own answer.
                Err(_) if runs.len() > 1 => (runs.iter().map(|r| l.begin_run(r)).collect(), true),
                Err(e) => (vec![Err(e)], true),
            };
            // A ledger that failed is opened afresh next time.
            ((!failed).then_some((l, opened)), begun)
        })
        .await;
        let Ok((open, begun)) = done else {
            // The thread failed: the answers' senders are dropped, and
            // each run learns that its start is not known.
            continue;
        };
        ledger = open;
        for (answer, b) in answers.into_iter().zip(begun) {
            let _ = answer.send(b);
        }
    }
}
