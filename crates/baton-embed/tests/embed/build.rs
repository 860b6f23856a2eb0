//! What `build` refuses, before anything runs: each with its typed error.

use std::time::Duration;

use baton_embed::{BuildError, Job, Scheduler, Store};

fn job(name: &str, cron: &str) -> Job {
    Job::cron(name, cron).run(|_| async { Ok(()) })
}

fn build(store: Option<Store>, jobs: Vec<Job>) -> Result<Scheduler, BuildError> {
    let mut b = Scheduler::builder();
    if let Some(s) = store {
        b = b.store(s);
    }
    for j in jobs {
        b = b.job(j);
    }
    b.build()
}

#[test]
fn build_refuses_what_cannot_run_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = || Some(Store::sqlite(dir.path()));
    let refused = |store, jobs| build(store, jobs).expect_err("refused");
    assert!(matches!(refused(None, vec![]), BuildError::NoStore));
    assert!(matches!(
        refused(store(), vec![job("a", "61 * * * *")]),
        BuildError::Cron { .. }
    ));
    assert!(matches!(
        refused(
            store(),
            vec![job("a", "* * * * *").timezone("Mars/Olympus")]
        ),
        BuildError::TimeZone { .. }
    ));
    assert!(matches!(
        refused(store(), vec![job("a", "* * * * *"), job("a", "@daily")]),
        BuildError::DuplicateJob(n) if n == "a"
    ));
    assert!(matches!(
        refused(store(), vec![job("../etc", "* * * * *")]),
        BuildError::BadName { .. }
    ));
    let e = refused(store(), vec![job("a", "* * * * *").lock("../db")]);
    assert!(
        matches!(&e, BuildError::BadLock { job, lock, .. } if job == "a" && lock == "../db"),
        "{e}"
    );
    assert!(matches!(
        refused(store(), vec![Job::cron("a", "* * * * *")]),
        BuildError::NothingToRun(_)
    ));
    // A grace that could outlast the takeover grace: the job could still
    // run when another replica may take its lease.
    let unfenced = job("a", "* * * * *")
        .lease(Duration::from_secs(10), Duration::from_secs(10))
        .grace(Duration::from_secs(9));
    let e = refused(store(), vec![unfenced]);
    assert!(matches!(e, BuildError::Unfenced { .. }), "{e}");
    assert!(e.to_string().contains("takeover grace"), "{e}");
    let backwards = job("a", "* * * * *").backoff(Duration::from_secs(60), Duration::from_secs(1));
    assert!(matches!(
        refused(store(), vec![backwards]),
        BuildError::Backoff { .. }
    ));
    // A value the command line refuses for the same key: a typo, which
    // would overflow the runner's sums of times (a panic where the run
    // should have been) or write a job no view can show.
    let huge = Duration::MAX;
    let decade = Duration::from_secs(10 * 365 * 86_400);
    let too_large: Vec<(Job, &str)> = vec![
        (job("a", "* * * * *").timeout(huge), "timeout"),
        (job("a", "* * * * *").timeout(decade * 10), "timeout"),
        (job("a", "* * * * *").grace(huge), "grace"),
        (job("a", "* * * * *").lease(huge, huge), "ttl"),
        (job("a", "* * * * *").backoff(huge, huge), "backoff"),
        (job("a", "* * * * *").max_runtime(huge), "max_runtime"),
        (job("a", "* * * * *").retries(u32::MAX), "retries"),
        (job("a", "* * * * *").history_keep(u32::MAX), "history_keep"),
    ];
    for (j, key) in too_large {
        let e = refused(store(), vec![j]);
        assert!(
            matches!(&e, BuildError::TooLarge { job, setting, .. } if job == "a" && *setting == key),
            "{key}: {e}"
        );
    }
    // The most the command line takes is taken.
    build(
        store(),
        vec![job("a", "* * * * *").timeout(decade).retries(1000)],
    )
    .unwrap();
    // What is right builds, and records the jobs in the ledger.
    build(
        store(),
        vec![job("a", "* * * * *").timezone("Europe/Berlin")],
    )
    .unwrap();
    assert!(dir.path().join("baton.db").exists());
}
