//! A job's watermark: each run reads the value the last one settled, and
//! settles its own only while it holds the job's lease; a context kept
//! past its run (its lease released) is refused and moves nothing.

use std::time::Duration;

use baton_embed::{Job, RunContext};
use baton_store::Store as _;
use jiff::Timestamp;
use tokio::sync::mpsc;

use crate::support::{next, on_manual_clock};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_reads_the_last_settled_watermark_and_a_displaced_run_cannot_move_it() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = Job::cron("etl", "* * * * *").run(move |ctx: RunContext| {
        let tx = tx.clone();
        async move {
            let seen = ctx.watermark().await?;
            let reached = ctx.occurrence().to_string();
            ctx.settle_watermark(reached.clone()).await?;
            tx.send((seen, reached, ctx.clone())).unwrap();
            Ok(())
        }
    });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    let (seen, first, _) = next(&mut rx).await;
    assert_eq!(seen, None, "nothing settled before the first run");
    handle.idle().await;
    clock.advance(Duration::from_secs(60));
    let (seen, second, kept) = next(&mut rx).await;
    assert_eq!(seen.as_deref(), Some(first.as_str()));
    handle.idle().await;

    // The second run is over and its lease released: its context is stale.
    let refused = kept.settle_watermark("from a stale run").await.unwrap_err();
    assert!(refused.to_string().contains("no longer holds"), "{refused}");
    let too_long = "x".repeat(5000);
    assert!(kept.settle_watermark(too_long).await.is_err());
    handle.shutdown(Duration::from_secs(1)).await;

    let mut ledger = baton_ledger::Files::new(dir.path().to_owned())
        .records(start)
        .unwrap();
    let w = ledger.watermark("etl").unwrap().unwrap();
    assert_eq!(w.value, second);
    assert_eq!(w.run_id.as_deref(), Some(kept.run_id()));
    assert_eq!(w.fence, Some(kept.fence()));
}
