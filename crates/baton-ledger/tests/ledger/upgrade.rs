//! Ledgers as the last builds of earlier schemas left them (committed in
//! `tests/fixtures/`, made by `scripts/upgrade-fixtures.sh` with those
//! builds themselves) are migrated in place, a copy of each kept beside it,
//! and read whole by this build: every row the old schema held is what the
//! new code returns. A migration that fails midway, or whose copy cannot be
//! written, leaves the ledger as it was.

use baton_store::ledger::{JobTallies, Records};
use baton_store::words::{MissReason, RunVerdict};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use baton_ledger::Error;
use baton_ledger::Ledger;
use rusqlite::types::Value;

use crate::support::{Scene, at, finished, scheduled};

/// Puts the committed ledger `name` at the scene's `baton.db`, mode 0600,
/// as the old build left it in its state directory.
fn install(scene: &Scene, name: &str) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::copy(&from, scene.db()).unwrap();
    std::fs::set_permissions(scene.db(), std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Installs the committed ledger of schema `version`, keeps it as it was
/// (`original.db`), and opens it: the open migrates it in place to version
/// 3, sound, with the old one copied beside it. Returns the ledger, the
/// original and the jobs it names.
fn migrated(scene: &Scene, version: i64) -> (Ledger, PathBuf, Vec<String>) {
    install(scene, &format!("ledger-v{version}.db"));
    let original = scene.keep("original.db");
    assert_eq!(user_version(&original), version);
    let jobs = job_names(&original);

    let mut ledger = scene.open();
    assert!(
        ledger.take_recovered().is_empty(),
        "a version {version} file is sound"
    );
    assert_eq!(user_version(&scene.db()), 5);
    assert_copy_is(&backup(scene, version), &original);
    (ledger, original, jobs)
}

fn backup(scene: &Scene, version: i64) -> PathBuf {
    scene.dir().join(format!("baton.db.bak-v{version}"))
}

/// Every row `sql` selects from the database at `db`, read without this
/// build's code.
fn raw(db: &Path, sql: &str) -> Vec<Vec<Value>> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut stmt = c.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn user_version(db: &Path) -> i64 {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

fn text(v: &str) -> Value {
    Value::Text(v.to_owned())
}

fn opt_text(v: Option<&str>) -> Value {
    v.map_or(Value::Null, text)
}

fn int(v: i64) -> Value {
    Value::Integer(v)
}

fn opt_int(v: Option<i64>) -> Value {
    v.map_or(Value::Null, Value::Integer)
}

fn us(t: jiff::Timestamp) -> Value {
    int(t.as_microsecond())
}

fn opt_us(t: Option<jiff::Timestamp>) -> Value {
    opt_int(t.map(|t| t.as_microsecond()))
}

/// The jobs a ledger names, from its `jobs` table.
fn job_names(db: &Path) -> Vec<String> {
    raw(db, "SELECT job FROM jobs ORDER BY job")
        .into_iter()
        .map(|r| match &r[0] {
            Value::Text(s) => s.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// What the tables every schema has held, before the migration, as this
/// build reads them after: jobs, runs, attempts, steps and alerts.
fn assert_common_tables_read_whole(ledger: &mut Ledger, before: &Path, jobs: &[String]) {
    let mut got = Vec::new();
    for j in ledger.jobs().unwrap() {
        got.push(vec![
            text(&j.job),
            us(j.first_seen),
            opt_int(j.last_decided),
            opt_int(j.last_started),
            opt_us(j.last_attempt),
            opt_us(j.last_success),
            opt_us(j.last_failure),
            int(j.consecutive_failures as i64),
            opt_text(j.last_run_id.as_deref()),
        ]);
    }
    let want = raw(before, "SELECT * FROM jobs ORDER BY job");
    assert_eq!(got, want, "jobs");

    let (mut runs, mut attempts, mut steps) = (Vec::new(), Vec::new(), Vec::new());
    for job in jobs {
        for r in ledger.history(job, 100_000).unwrap() {
            runs.push(vec![
                text(&r.run_id),
                text(&r.job),
                opt_int(r.occurrence),
                int(i64::from(r.manual)),
                opt_int(r.fence.map(|f| f as i64)),
                opt_text(r.host.as_deref()),
                opt_int(r.pid.map(i64::from)),
                us(r.started),
                opt_us(r.finished),
                opt_text(r.verdict.map(|v| v.as_str())),
                opt_int(r.exit_code.map(i64::from)),
            ]);
            for a in &r.attempts {
                attempts.push(vec![
                    text(&r.run_id),
                    int(i64::from(a.seq)),
                    text(&a.step),
                    text(a.kind.as_str()),
                    int(i64::from(a.attempt)),
                    us(a.started),
                    us(a.finished),
                    opt_int(a.exit_code.map(i64::from)),
                    opt_int(a.signal.map(i64::from)),
                    text(a.outcome.as_str()),
                ]);
            }
        }
        for s in ledger.steps(job).unwrap() {
            steps.push(vec![
                text(&s.job),
                text(&s.step),
                text(s.kind.as_str()),
                opt_us(s.last_attempt),
                opt_us(s.last_success),
                opt_us(s.last_failure),
                int(s.consecutive_failures as i64),
            ]);
        }
    }
    runs.sort_by_key(|r| format!("{:?}", r[0]));
    attempts.sort_by_key(|r| format!("{:?}{:08?}", r[0], r[1]));
    steps.sort_by_key(|r| format!("{:?}{:?}", r[0], r[1]));
    assert_eq!(
        runs,
        raw(before, "SELECT * FROM runs ORDER BY run_id"),
        "runs"
    );
    assert!(!runs.is_empty());
    assert_eq!(
        attempts,
        raw(before, "SELECT * FROM attempts ORDER BY run_id, seq"),
        "attempts"
    );
    assert_eq!(
        steps,
        raw(before, "SELECT * FROM steps ORDER BY job, step"),
        "steps"
    );

    let alerts: Vec<Vec<Value>> = ledger
        .recent_alerts(None, 100_000)
        .unwrap()
        .into_iter()
        .rev()
        .map(|a| {
            vec![
                int(a.id),
                us(a.time),
                opt_text(a.job.as_deref()),
                text(a.kind.as_str()),
                opt_text(a.run_id.as_deref()),
                opt_int(a.occurrence),
                text(&a.message),
                text(&a.json),
            ]
        })
        .collect();
    assert_eq!(
        alerts,
        raw(before, "SELECT * FROM alerts ORDER BY id"),
        "alerts"
    );
    assert!(!alerts.is_empty());
}

/// The tallies version 3 starts from: runs by verdict, missed occurrences
/// by reason and one duration per finished run, from the rows the old
/// ledger held.
fn assert_tallies_start_from_the_rows(ledger: &mut Ledger, before: &Path) {
    let mut verdicts: BTreeMap<String, BTreeMap<RunVerdict, u64>> = BTreeMap::new();
    for r in raw(
        before,
        "SELECT job, verdict, COUNT(*) FROM runs WHERE verdict IS NOT NULL GROUP BY 1, 2",
    ) {
        let (Value::Text(job), Value::Text(v), Value::Integer(n)) = (&r[0], &r[1], &r[2]) else {
            panic!("{r:?}")
        };
        verdicts
            .entry(job.clone())
            .or_default()
            .insert(v.parse().unwrap(), *n as u64);
    }
    let finished: BTreeMap<String, u64> = raw(
        before,
        "SELECT job, COUNT(*) FROM runs WHERE finished IS NOT NULL GROUP BY 1",
    )
    .into_iter()
    .map(|r| match (&r[0], &r[1]) {
        (Value::Text(j), Value::Integer(n)) => (j.clone(), *n as u64),
        _ => panic!("{r:?}"),
    })
    .collect();
    let tallies = ledger.tallies().unwrap();
    for t in &tallies {
        assert_eq!(
            t.runs,
            verdicts.get(&t.job).cloned().unwrap_or_default(),
            "{}",
            t.job
        );
        assert_eq!(
            t.durations.count(),
            finished.get(&t.job).copied().unwrap_or(0),
            "{}",
            t.job
        );
    }
    assert!(tallies.iter().any(|t| !t.runs.is_empty()));
}

/// The copy kept beside the ledger is the old ledger itself: its version,
/// and every row of every table.
fn assert_copy_is(copy: &Path, original: &Path) {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(copy).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.mode() & 0o777, 0o600, "{}", copy.display());
    assert_eq!(user_version(copy), user_version(original));
    let tables = raw(
        original,
        "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name",
    );
    assert_eq!(
        tables,
        raw(
            copy,
            "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name"
        )
    );
    for t in tables {
        let Value::Text(t) = &t[0] else { panic!() };
        let sql = format!("SELECT * FROM {t} ORDER BY rowid");
        assert_eq!(raw(copy, &sql), raw(original, &sql), "table {t}");
    }
}

/// The tallies of `job`.
fn tallies_of(ledger: &mut Ledger, job: &str) -> JobTallies {
    ledger
        .tallies()
        .unwrap()
        .into_iter()
        .find(|t| t.job == job)
        .unwrap()
}

fn files(scene: &Scene) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(scene.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_version_2_ledger_is_migrated_in_place_with_a_copy_beside_it_and_reads_whole() {
    let scene = Scene::new();
    let (mut ledger, original, jobs) = migrated(&scene, 2);
    assert!(
        !files(&scene).iter().any(|f| f.ends_with(".partial")),
        "{:?}",
        files(&scene)
    );

    assert_common_tables_read_whole(&mut ledger, &original, &jobs);
    // What version 2 added: missed ranges, pauses, watermarks, the queue.
    let mut missed = Vec::new();
    let mut pauses = Vec::new();
    let mut marks = Vec::new();
    for job in &jobs {
        for m in ledger.missed(job, 100_000).unwrap() {
            missed.push(vec![
                int(m.id),
                text(&m.job),
                text(m.reason.as_str()),
                int(m.first),
                int(m.last),
                int(m.count as i64),
                int(i64::from(m.at_least)),
                us(m.decided),
                us(m.updated),
                opt_text(m.detail.as_deref()),
            ]);
        }
        for p in ledger.pauses(job, 100).unwrap() {
            pauses.push(vec![
                int(p.id),
                text(&p.job),
                us(p.since),
                opt_us(p.until),
                opt_text(p.reason.as_deref()),
                text(&p.who),
                opt_us(p.ended),
            ]);
        }
        for w in ledger.watermarks(job, 100).unwrap() {
            marks.push(vec![
                text(&w.job),
                int(w.seq as i64),
                text(&w.value),
                opt_text(w.run_id.as_deref()),
                opt_int(w.fence.map(|f| f as i64)),
                us(w.settled),
            ]);
        }
    }
    missed.sort_by_key(|r| format!("{:020?}", r[0]));
    pauses.sort_by_key(|r| format!("{:020?}", r[0]));
    marks.sort_by_key(|r| format!("{:?}{:020?}", r[0], r[1]));
    assert_eq!(missed, raw(&original, "SELECT * FROM missed ORDER BY id"));
    assert_eq!(pauses, raw(&original, "SELECT * FROM pauses ORDER BY id"));
    assert_eq!(
        marks,
        raw(&original, "SELECT * FROM watermarks ORDER BY job, seq")
    );
    assert!(!missed.is_empty() && !pauses.is_empty() && !marks.is_empty());
    let newest = raw(
        &original,
        "SELECT value FROM watermarks WHERE job = 'water' ORDER BY seq DESC LIMIT 1",
    );
    assert_eq!(
        ledger.watermark("water").unwrap().map(|w| text(&w.value)),
        Some(newest[0][0].clone())
    );
    // Every decision the old ledger held reads back as it was.
    for r in raw(
        &original,
        "SELECT job, occurrence, decision, run_id, coalesced, joined FROM occurrences",
    ) {
        let (Value::Text(job), Value::Integer(occ)) = (&r[0], &r[1]) else {
            panic!("{r:?}")
        };
        let d = ledger.decision(job, *occ).unwrap().unwrap();
        assert_eq!(
            vec![
                text(&d.job),
                int(d.occurrence),
                text(d.decision.as_str()),
                opt_text(d.run_id.as_deref()),
                int(d.coalesced as i64),
                opt_int(d.joined),
            ],
            r
        );
    }

    assert_tallies_start_from_the_rows(&mut ledger, &original);
    let Value::Integer(missed_busy) = raw(
        &original,
        "SELECT SUM(count) FROM missed WHERE job = 'busy' AND reason = 'busy'",
    )[0][0] else {
        panic!("the fixture has no busy range")
    };
    let busy = tallies_of(&mut ledger, "busy");
    assert_eq!(
        busy.missed.get(&MissReason::Busy).copied(),
        Some(missed_busy as u64)
    );

    // The migrated ledger goes on: a new run is recorded and counted.
    let before = tallies_of(&mut ledger, "steps");
    let run = scheduled("steps", "00000000000000aa", 10_000_000);
    ledger.begin_run(&run).unwrap();
    ledger
        .finish_run(&finished(&run, 1, true), 100_000)
        .unwrap();
    let after = tallies_of(&mut ledger, "steps");
    assert_eq!(
        after.runs.get(&RunVerdict::Ok),
        before.runs.get(&RunVerdict::Ok).map(|n| n + 1).as_ref()
    );
    drop(ledger);

    // Opened again, it is neither migrated nor copied again.
    let copied = std::fs::metadata(backup(&scene, 2)).unwrap();
    let mut again = scene.open();
    assert_eq!(again.history("steps", 1).unwrap()[0].run_id, run.run_id);
    use std::os::unix::fs::MetadataExt;
    let still = std::fs::metadata(backup(&scene, 2)).unwrap();
    assert_eq!(
        (still.ino(), still.mtime_nsec()),
        (copied.ino(), copied.mtime_nsec())
    );
}

#[test]
fn a_version_1_ledger_is_migrated_in_place_and_its_misses_become_ranges() {
    let scene = Scene::new();
    let (mut ledger, original, jobs) = migrated(&scene, 1);
    assert_common_tables_read_whole(&mut ledger, &original, &jobs);

    // Each skipped or missed occurrence is a range of one, with its reason.
    let mut want = raw(
        &original,
        "SELECT job, COALESCE(reason, decision), occurrence, detail FROM occurrences
         WHERE decision IN ('skipped', 'missed') ORDER BY job, occurrence",
    );
    assert!(!want.is_empty(), "the fixture has skipped occurrences");
    let mut got = Vec::new();
    for job in &jobs {
        for m in ledger.missed(job, 100_000).unwrap() {
            assert_eq!((m.first, m.last, m.count), (m.first, m.first, 1));
            got.push(vec![
                text(&m.job),
                text(m.reason.as_str()),
                int(m.first),
                opt_text(m.detail.as_deref()),
            ]);
        }
    }
    got.sort_by_key(|r| format!("{:?}{:020?}", r[0], r[2]));
    want.sort_by_key(|r| format!("{:?}{:020?}", r[0], r[2]));
    assert_eq!(got, want);
    assert_tallies_start_from_the_rows(&mut ledger, &original);
}

/// The migration from version 1 fails at its last step (a table version 3
/// creates is already there): the data version 2 moved, the tables it made
/// and the version number are all rolled back, nothing is taken for
/// corruption, and once the obstacle is gone the same file migrates.
#[test]
fn a_migration_that_fails_midway_leaves_the_ledger_as_it_was() {
    let scene = Scene::new();
    install(&scene, "ledger-v1.db");
    scene.tamper("CREATE TABLE durations (x INTEGER)");
    let before = scene.keep("before.db");

    let err = Ledger::open(scene.dir(), at(0)).expect_err("the migration cannot succeed");
    assert!(matches!(err, Error::Sqlite { .. }), "{err}");
    assert!(err.to_string().contains("migrate the schema"), "{err}");
    // The copy was made first, and is the ledger as it was.
    assert_copy_is(&backup(&scene, 1), &before);
    assert!(
        scene.corrupt_files().is_empty(),
        "not corrupt: {:?}",
        files(&scene)
    );
    assert_eq!(user_version(&scene.db()), 1);
    let tables = "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name";
    assert_eq!(raw(&scene.db(), tables), raw(&before, tables));
    for t in ["occurrences", "runs", "attempts", "jobs", "steps", "alerts"] {
        let sql = format!("SELECT * FROM {t} ORDER BY 1, 2");
        assert_eq!(raw(&scene.db(), &sql), raw(&before, &sql), "{t}");
    }

    scene.tamper("DROP TABLE durations");
    let mut ledger = scene.open();
    assert_eq!(user_version(&scene.db()), 5);
    assert!(!ledger.missed("busy", 10).unwrap().is_empty());
}

/// When the copy cannot be written, nothing is migrated: the error names
/// the file, and the ledger is still the old version's, whole.
#[test]
fn a_ledger_whose_copy_cannot_be_written_is_not_migrated() {
    let scene = Scene::new();
    install(&scene, "ledger-v2.db");
    let before = scene.keep("before.db");
    let partial = scene.dir().join("baton.db.bak-v2.partial");
    std::fs::create_dir(&partial).unwrap();
    std::fs::write(partial.join("in the way"), "").unwrap();

    let err = Ledger::open(scene.dir(), at(0)).expect_err("migrated without a copy");
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert!(err.to_string().contains(partial.to_str().unwrap()), "{err}");
    assert_eq!(user_version(&scene.db()), 2);
    assert!(!backup(&scene, 2).exists());
    assert!(scene.corrupt_files().is_empty());
    let sql = "SELECT * FROM runs ORDER BY run_id";
    assert_eq!(raw(&scene.db(), sql), raw(&before, sql));

    std::fs::remove_dir_all(&partial).unwrap();
    scene.open();
    assert_eq!(user_version(&scene.db()), 5);
    assert_copy_is(&backup(&scene, 2), &before);
}

/// The copy a migration keeps is the way back; going back and upgrading
/// again replaces it, so there is one per version.
#[test]
fn migrating_the_same_version_again_keeps_one_copy_the_newest() {
    let scene = Scene::new();
    install(&scene, "ledger-v2.db");
    drop(scene.open());
    // Back to the old build: its copy becomes the ledger again, and the old
    // build records something more.
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(scene.dir().join(format!("baton.db{side}")));
    }
    std::fs::rename(backup(&scene, 2), scene.db()).unwrap();
    assert_eq!(user_version(&scene.db()), 2);
    let c = rusqlite::Connection::open(scene.db()).unwrap();
    c.execute(
        "INSERT INTO runs (run_id, job, manual, started) VALUES ('00000000000000bb', 'steps', 1, ?1)",
        [at(5).as_microsecond()],
    )
    .unwrap();
    drop(c);
    let before = scene.keep("before.db");

    let mut ledger = scene.open();
    assert_eq!(user_version(&scene.db()), 5);
    let copies: Vec<String> = files(&scene)
        .into_iter()
        .filter(|f| f.starts_with("baton.db.bak-"))
        .collect();
    assert_eq!(copies, ["baton.db.bak-v2"]);
    assert_copy_is(&backup(&scene, 2), &before);
    assert!(
        ledger
            .history("steps", 100_000)
            .unwrap()
            .iter()
            .any(|r| r.run_id == "00000000000000bb")
    );
}

/// A ledger a newer baton wrote is refused, unread and unchanged, with a
/// message that names the file, both versions and the remedy.
#[test]
fn a_ledger_of_a_newer_schema_is_refused_untouched() {
    let scene = Scene::new();
    install(&scene, "ledger-v2.db");
    scene.tamper("PRAGMA user_version = 6");
    let bytes = std::fs::read(scene.db()).unwrap();
    let err = Ledger::open(scene.dir(), at(0)).expect_err("a newer ledger was opened");
    assert!(err.is_newer_schema(), "{err}");
    let msg = err.to_string();
    for needle in [
        scene.db().to_str().unwrap(),
        "schema version is 6",
        "up to 5",
        "upgrade baton",
        "nothing was read or changed",
    ] {
        assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
    }
    assert_eq!(std::fs::read(scene.db()).unwrap(), bytes);
    assert!(!backup(&scene, 6).exists() && !backup(&scene, 5).exists());
    assert!(scene.corrupt_files().is_empty());
}

/// A connection opened before a newer baton migrated the file (a
/// long-lived process outliving an upgrade) refuses its next call, read or
/// write, and writes nothing.
#[test]
fn a_ledger_open_when_a_newer_baton_migrates_the_file_refuses_its_next_call() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    ledger.see_jobs(&["j"], at(0)).unwrap();
    scene.tamper("PRAGMA user_version = 6");
    let err = ledger.jobs().unwrap_err();
    assert!(err.is_newer_schema(), "{err}");
    assert!(err.to_string().contains("schema version is 6"), "{err}");
    let err = ledger.see_jobs(&["k"], at(1)).unwrap_err();
    assert!(err.is_newer_schema(), "{err}");
    let names = raw(&scene.db(), "SELECT job FROM jobs");
    assert_eq!(names, [vec![text("j")]]);
}
