//! Self-fencing: when the lease is lost (broken as `baton lock break
//! --force` breaks it) the run's cancellation fires at the next renewal,
//! a run that ignores it is dropped after its grace, and the ledger says
//! `lease-lost`. The manual clock makes each step exact.

use std::time::Duration;

use baton_embed::{Cancel, Job, RunContext};

use crate::support::{Said, next, on_manual_clock, stubborn};
use baton_lease::BreakMode;
use baton_store::Store as _;
use baton_store::store::LockRef;
use jiff::Timestamp;
use tokio::sync::mpsc;

/// The lock of the embedded job `job`: named after it.
fn lock_of(job: &str, ttl: Duration) -> LockRef<'_> {
    LockRef {
        job,
        lock: job,
        slot: 1,
        ttl,
        takeover_grace: ttl,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_lease_cancels_the_run_and_drops_it_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (ttl, grace) = (Duration::from_secs(3), Duration::from_millis(500));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = Job::cron("fenced", "* * * * *")
        .lease(ttl, ttl)
        .grace(grace);
    let job = stubborn(job, tx);
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    let Said::Started(fence) = next(&mut rx).await else {
        panic!("the run starts first")
    };
    // An operator breaks the lock under the running job.
    let broken = baton_ledger::lock_file(dir.path(), &lock_of("fenced", ttl))
        .break_lease(BreakMode::Force)
        .unwrap();
    assert!(
        matches!(broken, baton_lease::Broken::Freed { .. }),
        "{broken:?}"
    );
    // Nothing is known until the next renewal, a third of the TTL on.
    tokio::task::yield_now().await;
    assert!(rx.try_recv().is_err());
    clock.advance(ttl / 3);
    assert_eq!(next(&mut rx).await, Said::Cancelled(Cancel::LeaseLost));
    // It ignores the cancellation; within the grace it is still running.
    clock.advance(grace / 2);
    tokio::task::yield_now().await;
    assert!(rx.try_recv().is_err(), "not dropped before its grace");
    clock.advance(grace / 2);
    assert_eq!(next(&mut rx).await, Said::Dropped);
    handle.shutdown(Duration::from_secs(1)).await;
    let mut ledger = baton_ledger::Files::new(dir.path().to_owned())
        .records(start)
        .unwrap();
    let runs = ledger.history("fenced", 10).unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert_eq!(run.fence, Some(fence));
    assert_eq!(run.verdict.map(|v| v.as_str()), Some("lease-lost"));
    assert_eq!(run.exit_code, Some(76));
    assert_eq!(run.attempts.len(), 1);
    assert_eq!(run.attempts[0].outcome.as_str(), "lease-lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cancels_a_run_and_records_it_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = Job::cron("stopping", "* * * * *").run(move |ctx: RunContext| {
        let tx = tx.clone();
        async move {
            tx.send(Said::Started(ctx.fence())).unwrap();
            let why = ctx.cancelled().await;
            tx.send(Said::Cancelled(why)).unwrap();
            Err(baton_embed::JobError::msg(
                "stopped before its work was done",
            ))
        }
    });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    assert!(matches!(next(&mut rx).await, Said::Started(_)));
    handle.shutdown(Duration::from_secs(5)).await;
    assert_eq!(next(&mut rx).await, Said::Cancelled(Cancel::Shutdown));
    let mut ledger = baton_ledger::Files::new(dir.path().to_owned())
        .records(start)
        .unwrap();
    let runs = ledger.history("stopping", 10).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].verdict.map(|v| v.as_str()), Some("interrupted"));
    // Released: the lock is free again.
    let verdict = baton_ledger::Files::new(dir.path().to_owned())
        .inspect(&lock_of("stopping", Duration::from_secs(30)))
        .unwrap();
    assert!(
        matches!(verdict, Some(baton_lease::Verdict::Free(_))),
        "{verdict:?}"
    );
}

/// The scheduler's error-level log, from the first call to [`errors_said`]
/// on: the one sign that a run's task was aborted but has not stopped.
static ERRORS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Keeps the message of each error-level event in [`ERRORS`].
struct KeepErrors;

impl tracing::Subscriber for KeepErrors {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() == tracing::Level::ERROR
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::ERROR)
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        ERRORS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(message.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Whether the scheduler has logged an error that `f` picks out; the
/// first call starts keeping the log.
fn errors_said(f: impl Fn(&str) -> bool) -> bool {
    static KEEPING: std::sync::Once = std::sync::Once::new();
    KEEPING.call_once(|| {
        tracing::subscriber::set_global_default(KeepErrors).expect("no other log is kept");
    });
    ERRORS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .any(|e| f(e))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_run_blocked_in_a_blocking_section_is_waited_for_before_it_is_recorded() {
    let unstopped =
        |e: &str| e.starts_with("blocking run=") && e.contains("aborted but has not stopped");
    assert!(!errors_said(unstopped));
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (ttl, grace) = (Duration::from_secs(3), Duration::from_millis(500));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (ctx_tx, mut contexts) = mpsc::unbounded_channel();
    let (unblock, blocked) = std::sync::mpsc::channel::<()>();
    let blocked = std::sync::Arc::new(std::sync::Mutex::new(blocked));
    let job = Job::cron("blocking", "* * * * *")
        .lease(ttl, ttl)
        .grace(grace)
        .run(move |ctx: RunContext| {
            let (tx, ctx_tx) = (tx.clone(), ctx_tx.clone());
            let blocked = std::sync::Arc::clone(&blocked);
            async move {
                tx.send(ctx.fence()).unwrap();
                // The test watches the cancellation from its own task: this
                // one's thread is about to block.
                ctx_tx.send(ctx.clone()).unwrap();
                // A blocking call on the async thread: no abort reaches it.
                let _ = blocked.lock().unwrap().recv();
                tx.send(u64::from(ctx.is_cancelled())).unwrap();
                Ok(())
            }
        });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    let fence = next(&mut rx).await;
    let ctx = next(&mut contexts).await;
    baton_ledger::lock_file(dir.path(), &lock_of("blocking", ttl))
        .break_lease(BreakMode::Force)
        .unwrap();
    // The loss, at the next renewal: the run is asked to stop, its grace
    // counted from then.
    clock.advance(ttl / 3);
    let why = tokio::time::timeout(baton_testkit::PATIENCE, ctx.cancelled())
        .await
        .expect("the run is asked to stop within the patience");
    assert_eq!(why, Cancel::LeaseLost);
    // The grace passes and the run's task is aborted, which its blocking
    // section does not heed; a second grace on, the scheduler says it
    // waits for it. Nothing but that word shows the abort, and a step the
    // scheduler has not yet taken in when the next comes counts from
    // later: graces pass, a step at a time, until it is said.
    let said = async {
        loop {
            clock.advance(grace);
            for _ in 0..100 {
                if errors_said(unstopped) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    tokio::time::timeout(baton_testkit::PATIENCE, said)
        .await
        .expect("the scheduler says it waits for the blocked run within the patience");
    let unfinished = baton_ledger::Files::new(dir.path().to_owned())
        .records(start)
        .unwrap()
        .history("blocking", 10)
        .unwrap();
    assert_eq!(unfinished.len(), 1);
    assert_eq!(
        unfinished[0].verdict, None,
        "nothing is recorded while it runs"
    );
    unblock.send(()).unwrap();
    assert_eq!(next(&mut rx).await, 1, "it was cancelled meanwhile");
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    let runs = baton_ledger::Files::new(dir.path().to_owned())
        .records(start)
        .unwrap()
        .history("blocking", 10)
        .unwrap();
    assert_eq!(runs[0].fence, Some(fence));
    assert_eq!(runs[0].verdict.map(|v| v.as_str()), Some("lease-lost"));
}
