//! A ledger written by an older baton is migrated in place, once, keeping
//! what it knew.

use baton_store::ledger::Records;
use std::sync::{Arc, Barrier};

use baton_ledger::Ledger;
use baton_store::ledger::{Decision, Miss, Missed, MissedRow, Queued};
use baton_store::words::{MissReason, RunVerdict, SkipReason};

use crate::support::{Scene, at, finished, range, scheduled};

/// Version 1's schema, as it shipped: the fixture every migration starts
/// from, never to be edited.
const V1: &str = "CREATE TABLE jobs (
    job                  TEXT PRIMARY KEY,
    first_seen           INTEGER NOT NULL,
    last_decided         INTEGER,
    last_started         INTEGER,
    last_attempt         INTEGER,
    last_success         INTEGER,
    last_failure         INTEGER,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_run_id          TEXT
);
CREATE TABLE occurrences (
    job        TEXT NOT NULL,
    occurrence INTEGER NOT NULL,
    decision   TEXT NOT NULL,
    reason     TEXT,
    run_id     TEXT,
    decided    INTEGER NOT NULL,
    detail     TEXT,
    PRIMARY KEY (job, occurrence)
);
CREATE TABLE runs (
    run_id     TEXT PRIMARY KEY,
    job        TEXT NOT NULL,
    occurrence INTEGER,
    manual     INTEGER NOT NULL,
    fence      INTEGER,
    host       TEXT,
    pid        INTEGER,
    started    INTEGER NOT NULL,
    finished   INTEGER,
    verdict    TEXT,
    exit_code  INTEGER
);
CREATE INDEX runs_by_job ON runs (job, started DESC);
CREATE TABLE attempts (
    run_id    TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    step      TEXT NOT NULL,
    kind      TEXT NOT NULL,
    attempt   INTEGER NOT NULL,
    started   INTEGER NOT NULL,
    finished  INTEGER NOT NULL,
    exit_code INTEGER,
    signal    INTEGER,
    outcome   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE steps (
    job                  TEXT NOT NULL,
    step                 TEXT NOT NULL,
    kind                 TEXT NOT NULL,
    last_attempt         INTEGER,
    last_success         INTEGER,
    last_failure         INTEGER,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, step)
);
CREATE TABLE alerts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    time       INTEGER NOT NULL,
    job        TEXT,
    kind       TEXT NOT NULL,
    run_id     TEXT,
    occurrence INTEGER,
    message    TEXT NOT NULL,
    json       TEXT NOT NULL
);
CREATE INDEX alerts_by_job ON alerts (job, id DESC);";

/// A version 1 ledger with a job that ran once, skipped and missed
/// occurrences (one without a reason), and a second job's skip.
fn v1_ledger(scene: &Scene) {
    let raw = rusqlite::Connection::open(scene.db()).unwrap();
    raw.execute_batch(V1).unwrap();
    let us = |secs: i64| at(secs).as_microsecond();
    let s = |secs: i64| at(secs).as_second();
    raw.execute(
        "INSERT INTO jobs (job, first_seen, last_decided, last_started, last_attempt, last_run_id)
         VALUES ('j', ?1, ?2, ?3, ?1, 'r0')",
        rusqlite::params![us(0), s(180), s(0)],
    )
    .unwrap();
    raw.execute(
        "INSERT INTO runs (run_id, job, occurrence, manual, started) VALUES ('r0', 'j', ?1, 0, ?2)",
        rusqlite::params![s(0), us(0)],
    )
    .unwrap();
    let mut decide = raw
        .prepare(
            "INSERT INTO occurrences (job, occurrence, decision, reason, run_id, decided, detail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .unwrap();
    let rows = [
        ("j", 0, "started", None, Some("r0"), None),
        (
            "j",
            60,
            "skipped",
            Some("busy"),
            None,
            Some("held by pid 7"),
        ),
        ("j", 120, "missed", None, None, None),
        ("j", 180, "skipped", Some("hung"), None, None),
        ("k", 60, "skipped", Some("busy"), None, None),
    ];
    for (job, occ, decision, reason, run_id, detail) in rows {
        decide
            .execute(rusqlite::params![
                job,
                s(occ),
                decision,
                reason,
                run_id,
                us(occ + 1),
                detail
            ])
            .unwrap();
    }
    drop(decide);
    raw.execute_batch("PRAGMA user_version = 1").unwrap();
}

fn user_version(scene: &Scene) -> i64 {
    let raw = rusqlite::Connection::open(scene.db()).unwrap();
    raw.query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn skipped_and_missed_occurrences_become_missed_ranges() {
    let scene = Scene::new();
    v1_ledger(&scene);
    let mut ledger = scene.open();
    assert!(
        ledger.take_recovered().is_empty(),
        "a version 1 file is sound"
    );
    assert_eq!(user_version(&scene), 5);

    let s = |secs: i64| at(secs).as_second();
    let one = |id: i64, job: &str, reason: &str, occ: i64, detail: Option<&str>| MissedRow {
        id,
        job: job.into(),
        reason: reason.parse().unwrap(),
        first: s(occ),
        last: s(occ),
        count: 1,
        at_least: false,
        decided: at(occ + 1),
        updated: at(occ + 1),
        detail: detail.map(Into::into),
    };
    let missed = ledger.missed("j", 10).unwrap();
    let ids: Vec<i64> = missed.iter().map(|m| m.id).collect();
    assert_eq!(
        missed,
        [
            one(ids[0], "j", "hung", 180, None),
            one(ids[1], "j", "missed", 120, None),
            one(ids[2], "j", "busy", 60, Some("held by pid 7")),
        ]
    );
    assert!(ids[0] > ids[1] && ids[1] > ids[2]);
    assert_eq!(
        ledger.missed("k", 10).unwrap(),
        [one(
            ledger.missed("k", 1).unwrap()[0].id,
            "k",
            "busy",
            60,
            None
        )]
    );

    // They left the occurrences; the run's decision stayed, with the new
    // columns' defaults.
    for occ in [60, 120, 180] {
        assert_eq!(ledger.decision("j", s(occ)).unwrap(), None, "{occ}");
    }
    let started = ledger.decision("j", s(0)).unwrap().unwrap();
    assert_eq!(started.decision, Decision::Started);
    assert_eq!(started.run_id.as_deref(), Some("r0"));
    assert_eq!((started.coalesced, started.joined), (0, None));
    let raw = rusqlite::Connection::open(scene.db()).unwrap();
    let left: i64 = raw
        .query_row("SELECT COUNT(*) FROM occurrences", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 1);
    drop(raw);

    // The job's marks are as they were, and the migrated ranges act as
    // ranges: behind the mark is decided, and a streak goes on from them.
    let job = ledger.job("j").unwrap().unwrap();
    assert_eq!(
        (job.last_decided, job.last_started),
        (Some(s(180)), Some(s(0)))
    );
    assert_eq!(ledger.history("j", 10).unwrap().len(), 1);
    let hung = |first: i64| Miss {
        job: "j",
        reason: MissReason::Hung,
        first: s(first),
        last: s(first),
        count: 1,
        at_least: false,
        detail: None,
        streak: true,
    };
    assert_eq!(ledger.miss(&hung(180), at(300)).unwrap(), Missed::Moved);
    assert_eq!(ledger.miss(&hung(240), at(300)).unwrap(), Missed::Extended);
    drop(ledger);

    // Opened again, it is not migrated again.
    let mut again = scene.open();
    assert_eq!(again.missed_counts("j").unwrap().len(), 3);
    assert_eq!(user_version(&scene), 5);
}

/// Several processes' ledgers (threads here, each with its own connection)
/// open the same version 1 file at once: it is migrated once.
#[test]
fn openers_racing_on_a_version_1_file_migrate_it_once() {
    const OPENERS: usize = 4;
    let scene = Scene::new();
    v1_ledger(&scene);
    let barrier = Arc::new(Barrier::new(OPENERS));
    let openers: Vec<_> = (0..OPENERS)
        .map(|_| {
            let dir = scene.dir().to_owned();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let mut ledger = Ledger::open(&dir, at(0)).unwrap();
                assert!(ledger.take_recovered().is_empty());
                ledger.missed("j", 10).unwrap().len()
            })
        })
        .collect();
    for opener in openers {
        assert_eq!(opener.join().unwrap(), 3);
    }
    assert!(scene.corrupt_files().is_empty());
    assert_eq!(user_version(&scene), 5);
}

/// A version 2 ledger (today's schema less the tables version 3 added) is
/// migrated in place: its rows stay, and the tallies start from what they
/// hold.
#[test]
fn a_version_2_ledger_keeps_its_data_and_its_tallies_start_from_its_rows() {
    let scene = Scene::new();
    let s = |secs: i64| at(secs).as_second();
    let mut ledger = scene.open();
    let ok = scheduled("j", "0000000000000001", 0);
    ledger.begin_run(&ok).unwrap();
    ledger.finish_run(&finished(&ok, 2, true), 100).unwrap();
    let failed = scheduled("j", "0000000000000002", 3600);
    ledger.begin_run(&failed).unwrap();
    ledger
        .finish_run(&finished(&failed, 20, false), 100)
        .unwrap();
    let running = scheduled("j", "0000000000000003", 7200);
    ledger.begin_run(&running).unwrap();
    ledger
        .miss(&range("j", MissReason::Busy, 7260, 7500), at(7500))
        .unwrap();
    ledger.enqueue("k", &[s(0)], true, at(0)).unwrap();
    assert_eq!(
        ledger.enqueue("k", &[s(60)], true, at(60)).unwrap(),
        Queued::Coalesced { into: s(0) }
    );
    let before = ledger.tallies().unwrap();
    drop(ledger);
    let raw = rusqlite::Connection::open(scene.db()).unwrap();
    raw.execute_batch(
        "DROP TABLE tallies; DROP TABLE durations; DROP TABLE replacements;
         DROP TABLE declarations;
         PRAGMA user_version = 2;",
    )
    .unwrap();
    drop(raw);

    let mut ledger = scene.open();
    assert!(
        ledger.take_recovered().is_empty(),
        "a version 2 file is sound"
    );
    assert_eq!(user_version(&scene), 5);
    assert_eq!(ledger.history("j", 10).unwrap().len(), 3);
    assert_eq!(ledger.missed("j", 10).unwrap().len(), 1);
    assert_eq!(ledger.queued("k").unwrap().len(), 1);
    // Nothing was pruned yet, so the rows tell the whole story.
    assert_eq!(ledger.tallies().unwrap(), before);
    let j = &before[0];
    assert_eq!(
        (j.runs.get(&RunVerdict::Ok), j.runs.get(&RunVerdict::Failed)),
        (Some(&1), Some(&1))
    );
    assert_eq!(j.missed.get(&MissReason::Busy), Some(&5));
    assert_eq!(j.durations.buckets[3..6], [1, 0, 1]);
    assert_eq!(before[1].skipped.get(&SkipReason::Coalesced), Some(&1));

    // The tallies go on from there.
    ledger
        .finish_run(&finished(&running, 1, true), 100)
        .unwrap();
    let j = ledger.tallies().unwrap().remove(0);
    assert_eq!(j.runs.get(&RunVerdict::Ok), Some(&2));
    assert_eq!(j.durations.count(), 3);
}
