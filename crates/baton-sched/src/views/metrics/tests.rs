//! The exposition pinned in both formats, and the word lists tied to the
//! code that records the words.

use std::time::Duration;

use baton_store::ledger::JobTallies;
use baton_store::words::{MissReason, RunVerdict, SkipReason};

use super::*;

fn figures() -> Vec<JobFigures> {
    let mut t = JobTallies {
        job: "nightly".into(),
        lease_losses: 1,
        last_success: Some("2026-11-29T03:00:02Z".parse().unwrap()),
        ..JobTallies::default()
    };
    t.runs.insert(RunVerdict::Ok, 3);
    t.runs.insert(RunVerdict::LeaseLost, 1);
    t.missed.insert(MissReason::Busy, 5);
    // A reason only an older ledger recorded is shown for every job.
    t.missed.insert(MissReason::MissedUnstated, 1);
    t.skipped.insert(SkipReason::Coalesced, 2);
    t.durations.buckets[3] = 3;
    t.durations.buckets[10] = 1;
    t.durations.sum = Duration::from_millis(20_500);
    let nightly = JobFigures {
        job: "nightly".into(),
        tallies: t,
        running: true,
        enabled: true,
        state: crate::views::job_state::JobState::Running,
        next_run: Some("2026-11-30T03:00:00Z".parse().unwrap()),
        // Started a day ago with a budget of two hours: overrunning.
        run_started: Some("2026-11-29T03:00:00Z".parse().unwrap()),
        overrunning: true,
        max_runtime: Some(Duration::from_secs(2 * 3600)),
        failing: Some(false),
        ..JobFigures::default()
    };
    let quiet = JobFigures {
        job: "quiet".into(),
        tallies: JobTallies {
            job: "quiet".into(),
            last_failure: Some("2026-11-28T04:00:00.5Z".parse().unwrap()),
            ..JobTallies::default()
        },
        paused: true,
        overdue: true,
        failing: Some(true),
        state: crate::views::job_state::JobState::Paused,
        ..JobFigures::default()
    };
    vec![nightly, quiet]
}

fn process() -> ProcessStats {
    ProcessStats {
        resident_memory_bytes: 4096,
        virtual_memory_bytes: 8192,
        cpu: Duration::from_millis(250),
        open_fds: 5,
        max_fds: Some(1024),
        start_time_seconds: 1_764_385_200.0,
    }
}

/// The 0.0.4 exposition of [`figures`], pinned.
const PROMETHEUS: &str = include_str!("../snapshots/metrics.txt");
/// The OpenMetrics exposition of [`figures`], pinned.
const OPENMETRICS: &str = include_str!("../snapshots/metrics.openmetrics.txt");

#[test]
fn metrics_render_every_job_in_0_0_4() {
    let text = render(&figures(), 0, Some(&process()), Format::Prometheus);
    assert_eq!(text, PROMETHEUS, "{text}");
}

/// A job whose failing is not known (its ledger could not tell) has no
/// `baton_job_failing` sample, never a 0 that says it is fine.
#[test]
fn a_failing_not_known_is_absent_never_0() {
    let mut jobs = figures();
    jobs[0].failing = None;
    let text = render(&jobs, 0, None, Format::Prometheus);
    assert!(
        !text.contains("baton_job_failing{baton_job=\"nightly\"}"),
        "{text}"
    );
    assert!(
        text.contains("baton_job_failing{baton_job=\"quiet\"} 1"),
        "{text}"
    );
}

#[test]
fn metrics_render_every_job_in_openmetrics() {
    let text = render(&figures(), 0, Some(&process()), Format::OpenMetrics);
    assert_eq!(text, OPENMETRICS, "{text}");
}

/// Every reason the planner and the lock's refusals record an occurrence
/// missed for is one the metrics show from the start; the planner's pause
/// and disabled job, and only they, are deliberate.
#[test]
fn every_miss_reason_recorded_is_listed() {
    use baton_store::words::MissReason as R;
    let planned = [
        R::OutsideWindow,
        R::Superseded,
        R::Late,
        R::CatchUpMax,
        R::Paused,
        R::Disabled,
    ];
    let refused = [R::Busy, R::Hung, R::Orphaned, R::VersionConflict];
    for r in planned
        .iter()
        .chain(&refused)
        .chain(&[R::LedgerUnavailable, R::StartFailed])
    {
        assert!(R::ALL.contains(r), "{r} is not listed");
    }
    for &r in R::ALL {
        assert_eq!(
            r.is_deliberate(),
            matches!(r, R::Paused | R::Disabled),
            "{r}"
        );
    }
}
