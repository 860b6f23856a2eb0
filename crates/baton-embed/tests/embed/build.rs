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
    // What is right builds, and records the jobs in the ledger.
    build(
        store(),
        vec![job("a", "* * * * *").timezone("Europe/Berlin")],
    )
    .unwrap();
    assert!(dir.path().join("baton.db").exists());
}
