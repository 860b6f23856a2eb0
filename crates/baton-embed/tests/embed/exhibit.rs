//! The exhibit: three replicas of baton's example and three of the same
//! job scheduled with tokio-cron-scheduler (`examples/tcs_replica.rs`),
//! all six started at once over the same occurrences, each side with its
//! own sink. One table counts what each let through: baton runs each
//! occurrence once, one run at a time; tokio-cron-scheduler runs it on
//! every replica. The test fails if baton lets a duplicate or an overlap
//! through, and also if the exhibit shows no duplicate: an exhibit that
//! stopped showing the defect (a run too short to see an occurrence) shows
//! nothing about baton either.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{Replica, SinkRun, check_sink, example, read_sink, replica, wait_all};

/// How long a run works, how long every replica serves, and baton's lease
/// TTL, as in the replicas test.
const HOLD_MS: u64 = 300;
const LIFE_MS: u64 = 5_000;
const TTL_MS: u64 = 2_000;

/// What one scheduler let through, counted from its sink.
#[derive(Debug, Default, PartialEq)]
struct Tally {
    /// Distinct occurrences that ran.
    occurrences: usize,
    /// Runs that started.
    runs: usize,
    /// Occurrences that ran more than once.
    duplicates: usize,
    /// Runs that started while another run had started and not ended. A
    /// run with no end line (its replica shut down mid-run) is taken to
    /// overlap nothing, as `check_sink` takes it.
    overlaps: usize,
}

impl Tally {
    fn of(runs: &[SinkRun]) -> Tally {
        let mut per_occurrence: BTreeMap<i64, usize> = BTreeMap::new();
        for r in runs {
            *per_occurrence.entry(r.occurrence).or_default() += 1;
        }
        let overlaps = runs
            .iter()
            .filter(|b| {
                runs.iter().any(|a| {
                    a.run_id != b.run_id
                        && (a.start, &a.run_id) <= (b.start, &b.run_id)
                        && a.end.is_some_and(|end| b.start < end)
                })
            })
            .count();
        Tally {
            occurrences: per_occurrence.len(),
            runs: runs.len(),
            duplicates: per_occurrence.values().filter(|&&n| n > 1).count(),
            overlaps,
        }
    }

    fn verdict(&self) -> String {
        if self.duplicates == 0 && self.overlaps == 0 {
            "PASS — each occurrence once, one run at a time".into()
        } else {
            format!(
                "RACE — {} occurrence(s) run more than once, {} run(s) beside another",
                self.duplicates, self.overlaps
            )
        }
    }
}

/// The table of the run: a row per scheduler.
fn table(rows: &[(&str, &Tally)]) -> String {
    let mut s = format!(
        "── three replicas, `* * * * * *`, runs of {HOLD_MS} ms, {} s\n",
        LIFE_MS / 1_000
    );
    let _ = writeln!(
        s,
        "{:<21} {:>11} {:>5} {:>10} {:>8}  verdict",
        "scheduler", "occurrences", "runs", "duplicates", "overlaps"
    );
    for (name, t) in rows {
        let _ = writeln!(
            s,
            "{:<21} {:>11} {:>5} {:>10} {:>8}  {}",
            name,
            t.occurrences,
            t.runs,
            t.duplicates,
            t.overlaps,
            t.verdict()
        );
    }
    s
}

/// Starts a replica of the exhibit, writing to `sink`.
fn exhibit(bin: &Path, sink: &Path) -> Replica {
    let child = Command::new(bin)
        .env("REPLICA_SINK", sink)
        .env("REPLICA_HOLD_MS", HOLD_MS.to_string())
        .env("REPLICA_LIFE_MS", LIFE_MS.to_string())
        .stdout(Stdio::null())
        .spawn()
        .expect("start a replica of the exhibit");
    Replica(child)
}

#[test]
fn baton_runs_each_occurrence_once_where_tokio_cron_scheduler_runs_it_on_every_replica() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("state").display());
    let (baton_sink, tcs_sink) = (dir.path().join("baton"), dir.path().join("tcs"));
    // Both built before either starts, so that the six replicas start
    // together and serve the same seconds.
    let tcs_bin = example("tcs_replica");
    crate::support::replica_bin();
    let mut replicas: Vec<Replica> = (0..3)
        .flat_map(|_| {
            [
                replica(&store, &baton_sink, HOLD_MS, LIFE_MS, TTL_MS),
                exhibit(&tcs_bin, &tcs_sink),
            ]
        })
        .collect();
    wait_all(&mut replicas);
    let (baton_runs, tcs_runs) = (read_sink(&baton_sink), read_sink(&tcs_sink));
    let (baton, tcs) = (Tally::of(&baton_runs), Tally::of(&tcs_runs));
    println!(
        "{}",
        table(&[("baton", &baton), ("tokio-cron-scheduler", &tcs)])
    );
    assert!(baton.runs >= 3, "too few runs to judge: {baton_runs:?}");
    assert_eq!(
        (baton.duplicates, baton.overlaps),
        (0, 0),
        "baton let a run through twice: {baton_runs:?}"
    );
    check_sink(&baton_runs);
    assert!(
        tcs.duplicates > 0,
        "the exhibit showed no duplicate, so this run shows nothing: {tcs_runs:?}"
    );
}

#[test]
fn the_tally_counts_an_occurrence_run_twice_and_a_run_beside_another() {
    let run = |occurrence, run_id: &str, start, end| SinkRun {
        job: "tick".into(),
        occurrence,
        fence: 0,
        run_id: run_id.into(),
        start,
        end,
        pid: 1,
    };
    let once = [run(1, "a", 10, Some(20)), run(2, "b", 20, Some(30))];
    let t = Tally::of(&once);
    assert_eq!(
        (t.occurrences, t.runs, t.duplicates, t.overlaps),
        (2, 2, 0, 0)
    );
    // Occurrence 1 three times at once, occurrence 2 twice in turn, and a
    // run cut short that overlaps nothing.
    let twice = [
        run(1, "a", 10, Some(20)),
        run(1, "b", 10, Some(20)),
        run(1, "c", 15, Some(25)),
        run(2, "d", 30, Some(40)),
        run(2, "e", 40, Some(50)),
        run(3, "f", 50, None),
        run(4, "g", 60, Some(70)),
    ];
    let t = Tally::of(&twice);
    assert_eq!(
        t,
        Tally {
            occurrences: 4,
            runs: 7,
            duplicates: 2,
            overlaps: 2,
        }
    );
}
