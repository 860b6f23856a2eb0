//! A holder on another host that stops renewing is taken over after its TTL
//! plus the takeover grace, read on the server's clock, and not before; the
//! clients' wall clocks change nothing.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::{Clock, ManualClock, SystemClock, Verdict};
use baton_pg::{Acquire, Form, Leases, PgLease, Renewal};
use jiff::{SignedDuration, Timestamp};

use crate::support::{GRACE, Scene, TTL, granted, remote};

/// What a contender saw while a remote holder renewed `renewals` times and
/// then fell silent.
struct Story {
    holder: PgLease,
    /// The holder's last renewal, by the server's clock.
    last_renewal: Timestamp,
    /// The server's clock at each judgement that kept the holder.
    kept: Vec<Timestamp>,
    /// The successor.
    taker: PgLease,
}

async fn silent_holder(a: &Leases, b: &Leases, renewals: usize) -> Story {
    let holder = granted(a, "report", &remote("host-a"), TTL).await;
    let mut last_renewal = holder.acquired();
    let mut kept = Vec::new();
    let mut renewed = 0;
    loop {
        if renewed < renewals {
            // Renewing more often than the runner does (TTL / 3) keeps a
            // loaded machine from stalling a renewal past TTL plus grace.
            tokio::time::sleep(TTL / 5).await;
            match a.renew(&holder).await.unwrap() {
                Renewal::Renewed(at) => last_renewal = at,
                Renewal::Lost => panic!("a renewing holder lost its lease"),
            }
            renewed += 1;
        } else {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        match b
            .acquire("report", &remote("host-b"), TTL, None)
            .await
            .unwrap()
        {
            Acquire::Busy {
                verdict: Verdict::Live { .. },
                at,
            } => kept.push(at),
            Acquire::Acquired(taker) => {
                return Story {
                    holder,
                    last_renewal,
                    kept,
                    taker,
                };
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn patience() -> SignedDuration {
    SignedDuration::try_from(TTL + GRACE).unwrap()
}

fn check(story: &Story, renewals: usize) {
    // Taken only once the silence, on the server's clock, exceeds TTL + grace.
    assert!(
        story.taker.acquired().duration_since(story.last_renewal) > patience(),
        "taken over {} after the last renewal",
        story.taker.acquired().duration_since(story.last_renewal)
    );
    // And kept while it was renewing, and after, up to its patience.
    assert!(
        story.kept.len() > renewals,
        "kept {} times",
        story.kept.len()
    );
    assert!(
        story
            .kept
            .iter()
            .all(|at| at.duration_since(story.last_renewal) <= patience())
    );
    assert!(story.taker.fence() > story.holder.fence());
}

#[tokio::test]
async fn a_silent_remote_holder_is_taken_over_after_ttl_plus_grace_not_before() {
    let scene = Scene::new().await;
    for form in [Form::Conditional, Form::Locking] {
        let a = scene.leases_with(form, None).await;
        let b = scene.leases_with(form, None).await;
        // Renewing for three TTLs keeps the lease, however long that is.
        let story = silent_holder(&a, &b, 15).await;
        assert!(story.last_renewal.duration_since(story.holder.acquired()) > patience());
        check(&story, 15);
        a.release(&story.taker).await.unwrap();
    }
}

/// A holder's wall clock an hour off, either way, changes nothing: the
/// stamps are the server's. A judge's clock ahead of the server's changes
/// nothing either; one behind it judges on its own, so it takes over a
/// lapsed lease later by as much, never sooner: exactly what a judge sees
/// when the server's clock steps forward, which must never lapse a live
/// lease (the judge being an hour behind the server is the server an hour
/// ahead of it).
#[tokio::test]
async fn a_wall_clock_an_hour_off_never_takes_a_lease_over_sooner() {
    let scene = Scene::new().await;
    let real = SystemClock;
    // A manual clock stands still: one an hour ahead stays ahead of the
    // server's for the whole test.
    let skewed = |secs: i64| -> Arc<ManualClock> {
        let c = ManualClock::new(real.wall(), real.boot());
        c.step_wall(secs);
        Arc::new(c)
    };
    for (holder_skew, judge_skew) in [(-3600, Some(3600)), (3600, Some(3600)), (3600, None)] {
        let a = scene
            .leases_with(Form::default(), Some(skewed(holder_skew)))
            .await;
        let judge = judge_skew.map(|s| skewed(s) as Arc<dyn Clock>);
        let b = scene.leases_with(Form::default(), judge).await;
        let story = silent_holder(&a, &b, 0).await;
        check(&story, 0);
        // The stamps are the server's: the lease was granted within moments
        // of the real time, not an hour away from it.
        let off = story.taker.acquired().duration_since(real.wall()).abs();
        assert!(off < SignedDuration::from_mins(10), "{off}");
        a.release(&story.taker).await.unwrap();
    }
    // A judge an hour behind the server (the server an hour ahead) keeps a
    // silent holder well past TTL plus grace, until its own clock says it
    // lapsed.
    for form in [Form::Conditional, Form::Locking] {
        let a = scene.leases_with(form, None).await;
        let behind = skewed(-3600);
        let b = scene.leases_with(form, Some(behind.clone())).await;
        let holder = granted(&a, "report", &remote("host-a"), TTL).await;
        tokio::time::sleep(TTL + GRACE + Duration::from_secs(1)).await;
        let kept = b
            .acquire("report", &remote("host-b"), TTL, None)
            .await
            .unwrap();
        assert!(
            matches!(
                kept,
                Acquire::Busy {
                    verdict: Verdict::Live { .. },
                    ..
                }
            ),
            "a lease taken over on a clock the judge's is behind: {kept:?}"
        );
        // Ahead of the server's again (it stands still): the server's
        // clock judges, and the lease lapsed.
        behind.step_wall(3600 + 600);
        let Acquire::Acquired(taker) = b
            .acquire("report", &remote("host-b"), TTL, None)
            .await
            .unwrap()
        else {
            panic!("a lapsed lease was not taken over once the clocks agree");
        };
        assert!(taker.fence() > holder.fence());
        a.release(&taker).await.unwrap();
    }
}
