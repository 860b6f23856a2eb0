//! The schema: its versions, the migrations between them, and the probe that
//! tells a sound ledger from a damaged one.
//!
//! `PRAGMA user_version` holds the version. Migrations are SQL in this file,
//! applied in order inside one `BEGIN IMMEDIATE` transaction that reads the
//! version again once it holds the write lock: two processes opening a fresh
//! database at once both see version 0, one migrates, and the other finds
//! the work done when its turn comes. A ledger that held anything (version
//! 1 or later) is first copied whole beside itself ([`crate::backup`]),
//! inside the same transaction; a migration that fails, or a process that
//! dies midway, leaves the ledger as it was, since nothing is committed
//! before the last statement. A version newer than this build's is
//! refused, never migrated down and never taken for corruption.
//!
//! The probe is what makes a truncated or overwritten file fail on open
//! rather than in the middle of a run: it reads the version, the whole
//! schema, and the first row of every table and every index. A file cut short
//! loses the pages those reads need; a file of garbage fails its header. A
//! full `PRAGMA integrity_check` would find more, but it reads the whole
//! database on every open of every process.

use std::path::Path;

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::backup;

/// The newest schema version this build writes and reads.
pub(crate) const VERSION: i64 = 5;

/// The migrations: `MIGRATIONS[n]` takes a database from version `n` to
/// `n + 1`.
const MIGRATIONS: [&str; VERSION as usize] = [V1, V2, V3, V4, V5];

/// Version 1. Why each table and key exists is told in the crate's
/// documentation.
const V1: &str = "
CREATE TABLE jobs (
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
CREATE INDEX alerts_by_job ON alerts (job, id DESC);
";

/// Version 2: missed occurrences become ranges in a table of their own, the
/// queue's rows count what coalesced into them, and pauses and watermarks
/// get their tables.
///
/// Every `skipped` or `missed` decision of version 1 becomes a range of one
/// occurrence (its reason, or its decision word when it had none), in
/// `(job, occurrence)` order so that a job's newest range has the largest
/// id, and leaves `occurrences`, which from now on holds only the decisions
/// of occurrences that run or wait. `jobs.last_decided` is unchanged: every
/// occurrence at or before it still has a decision.
const V2: &str = "
CREATE TABLE missed (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    job      TEXT NOT NULL,
    reason   TEXT NOT NULL,
    first    INTEGER NOT NULL,
    last     INTEGER NOT NULL,
    count    INTEGER NOT NULL,
    at_least INTEGER NOT NULL DEFAULT 0,
    decided  INTEGER NOT NULL,
    updated  INTEGER NOT NULL,
    detail   TEXT
);
CREATE INDEX missed_by_job ON missed (job, id DESC);
INSERT INTO missed (job, reason, first, last, count, decided, updated, detail)
    SELECT job, COALESCE(reason, decision), occurrence, occurrence, 1, decided, decided, detail
    FROM occurrences WHERE decision IN ('skipped', 'missed')
    ORDER BY job, occurrence;
DELETE FROM occurrences WHERE decision IN ('skipped', 'missed');
ALTER TABLE occurrences ADD COLUMN coalesced INTEGER NOT NULL DEFAULT 0;
ALTER TABLE occurrences ADD COLUMN joined INTEGER;
CREATE INDEX occurrences_queued ON occurrences (job, occurrence) WHERE decision = 'queued';
CREATE TABLE pauses (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    job    TEXT NOT NULL,
    since  INTEGER NOT NULL,
    until  INTEGER,
    reason TEXT,
    who    TEXT NOT NULL,
    ended  INTEGER
);
CREATE INDEX pauses_by_job ON pauses (job, id DESC);
CREATE TABLE watermarks (
    job     TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    value   TEXT NOT NULL,
    run_id  TEXT,
    fence   INTEGER,
    settled INTEGER NOT NULL,
    PRIMARY KEY (job, seq)
);
";

/// Version 3: cumulative tallies per job, which pruning never touches, for
/// the metrics: counts by kind and word (`verdict` per run verdict,
/// `missed` and `skipped` per reason, `lease-lost`), and the run-duration
/// histogram, one row per bucket (`bound` in microseconds, `i64::MAX` for
/// `+Inf`; each bucket counts the runs that fell in it alone, not the
/// cumulative count, with their durations' sum).
///
/// The tallies are backfilled from the rows a version 2 ledger still
/// holds: verdicts and durations from `runs`, missed occurrences from
/// `missed`, `coalesced` and `claimed` decisions from `occurrences`. Those
/// tables were pruned, so a backfilled tally is a floor, never more than
/// what happened. The bucket bounds below are [`crate::tallies::BOUNDS`]'s.
const V3: &str = "
CREATE TABLE tallies (
    job   TEXT NOT NULL,
    kind  TEXT NOT NULL,
    word  TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (job, kind, word)
);
CREATE TABLE durations (
    job    TEXT NOT NULL,
    bound  INTEGER NOT NULL,
    count  INTEGER NOT NULL,
    sum_us INTEGER NOT NULL,
    PRIMARY KEY (job, bound)
);
INSERT INTO tallies (job, kind, word, count)
    SELECT job, 'verdict', verdict, COUNT(*) FROM runs
    WHERE verdict IS NOT NULL GROUP BY job, verdict;
INSERT INTO tallies (job, kind, word, count)
    SELECT job, 'lease-lost', '', COUNT(*) FROM runs
    WHERE verdict = 'lease-lost' GROUP BY job;
INSERT INTO tallies (job, kind, word, count)
    SELECT job, 'missed', reason, SUM(count) FROM missed GROUP BY job, reason;
INSERT INTO tallies (job, kind, word, count)
    SELECT job, 'skipped', decision, COUNT(*) FROM occurrences
    WHERE decision IN ('coalesced', 'claimed') GROUP BY job, decision;
INSERT INTO durations (job, bound, count, sum_us)
    SELECT job,
           CASE WHEN us <= 100000 THEN 100000
                WHEN us <= 500000 THEN 500000
                WHEN us <= 1000000 THEN 1000000
                WHEN us <= 5000000 THEN 5000000
                WHEN us <= 15000000 THEN 15000000
                WHEN us <= 60000000 THEN 60000000
                WHEN us <= 300000000 THEN 300000000
                WHEN us <= 900000000 THEN 900000000
                WHEN us <= 3600000000 THEN 3600000000
                WHEN us <= 10800000000 THEN 10800000000
                ELSE 9223372036854775807 END AS b,
           COUNT(*), SUM(us)
    FROM (SELECT job, MAX(finished - started, 0) AS us FROM runs WHERE finished IS NOT NULL)
    GROUP BY job, b;
";

/// Version 4: requests that a run in flight stop for a later run of its
/// job (`overlap = "replace"`). A request names the run and the job it is
/// for, so that a run of another job sharing the lock never reads it; the
/// occurrence that replaces the run (`NULL` for a run by hand or a
/// backfill) and when it was asked. A run's requests go when it ends.
const V4: &str = "
CREATE TABLE replacements (
    run_id        TEXT NOT NULL,
    job           TEXT NOT NULL,
    by_occurrence INTEGER,
    asked         INTEGER NOT NULL,
    PRIMARY KEY (run_id, job)
);
";

/// Version 5: the jobs a service embedding baton's scheduler declared, so
/// that the command line shows and controls them without a `baton.toml`:
/// the job's settings in the command line's own words (a `[jobs.NAME]`
/// table's keys, as TOML), who declared it and when, last.
const V5: &str = "
CREATE TABLE declarations (
    job      TEXT PRIMARY KEY,
    config   TEXT NOT NULL,
    by       TEXT NOT NULL,
    declared INTEGER NOT NULL
);
";

/// The tables of the current version, each with the version that created
/// it and the queries that read its first row through every b-tree it has
/// (the table and each index).
///
/// The probe runs before the migration, on a file of any version up to the
/// current one, so a table is required only from its version on: a sound
/// version 1 file has no `missed` table yet, and must not be taken for a
/// damaged one.
const PROBES: [(&str, i64, &[&str]); 13] = [
    (
        "jobs",
        1,
        &[
            "SELECT * FROM jobs LIMIT 1",
            "SELECT job FROM jobs ORDER BY job LIMIT 1",
        ],
    ),
    (
        "occurrences",
        1,
        &[
            "SELECT * FROM occurrences LIMIT 1",
            "SELECT job, occurrence FROM occurrences ORDER BY job, occurrence LIMIT 1",
            "SELECT job, occurrence FROM occurrences WHERE decision = 'queued'
             ORDER BY job, occurrence LIMIT 1",
        ],
    ),
    (
        "runs",
        1,
        &[
            "SELECT * FROM runs LIMIT 1",
            "SELECT run_id FROM runs ORDER BY run_id LIMIT 1",
            "SELECT job, started FROM runs ORDER BY job, started DESC LIMIT 1",
        ],
    ),
    (
        "attempts",
        1,
        &[
            "SELECT * FROM attempts LIMIT 1",
            "SELECT run_id, seq FROM attempts ORDER BY run_id, seq LIMIT 1",
        ],
    ),
    (
        "steps",
        1,
        &[
            "SELECT * FROM steps LIMIT 1",
            "SELECT job, step FROM steps ORDER BY job, step LIMIT 1",
        ],
    ),
    (
        "alerts",
        1,
        &[
            "SELECT * FROM alerts LIMIT 1",
            "SELECT job, id FROM alerts ORDER BY job, id DESC LIMIT 1",
        ],
    ),
    (
        "missed",
        2,
        &[
            "SELECT * FROM missed LIMIT 1",
            "SELECT job, id FROM missed ORDER BY job, id DESC LIMIT 1",
        ],
    ),
    (
        "pauses",
        2,
        &[
            "SELECT * FROM pauses LIMIT 1",
            "SELECT job, id FROM pauses ORDER BY job, id DESC LIMIT 1",
        ],
    ),
    (
        "watermarks",
        2,
        &[
            "SELECT * FROM watermarks LIMIT 1",
            "SELECT job, seq FROM watermarks ORDER BY job, seq LIMIT 1",
        ],
    ),
    (
        "tallies",
        3,
        &[
            "SELECT * FROM tallies LIMIT 1",
            "SELECT job, kind, word FROM tallies ORDER BY job, kind, word LIMIT 1",
        ],
    ),
    (
        "durations",
        3,
        &[
            "SELECT * FROM durations LIMIT 1",
            "SELECT job, bound FROM durations ORDER BY job, bound LIMIT 1",
        ],
    ),
    (
        "replacements",
        4,
        &[
            "SELECT * FROM replacements LIMIT 1",
            "SELECT run_id, job FROM replacements ORDER BY run_id, job LIMIT 1",
        ],
    ),
    (
        "declarations",
        5,
        &[
            "SELECT * FROM declarations LIMIT 1",
            "SELECT job FROM declarations ORDER BY job LIMIT 1",
        ],
    ),
];

/// What the probe found wrong.
#[derive(Debug)]
pub(crate) enum Unsound {
    /// SQLite failed; the caller tells corruption from other failures.
    Sqlite {
        /// What the probe was reading.
        what: &'static str,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The version says a table exists, and it does not: the schema is
    /// damaged.
    Missing {
        /// The version found.
        version: i64,
        /// The missing table.
        table: &'static str,
    },
    /// A version this build does not know (a newer baton wrote it).
    Unknown(i64),
    /// The copy kept before a migration could not be written: nothing was
    /// migrated.
    Backup(backup::Failed),
}

impl Unsound {
    fn sqlite(what: &'static str) -> impl FnOnce(rusqlite::Error) -> Self {
        move |source| Self::Sqlite { what, source }
    }
}

/// Reads the version, the schema and the first row of every b-tree, in one
/// read transaction. Writes nothing. Returns the version.
pub(crate) fn probe(conn: &Connection) -> Result<i64, Unsound> {
    conn.execute_batch("BEGIN DEFERRED")
        .map_err(Unsound::sqlite("begin the probe"))?;
    let found = probe_in(conn);
    // A read transaction has nothing to keep; ending it cannot lose a write.
    let _ = conn.execute_batch("COMMIT");
    found
}

fn probe_in(conn: &Connection) -> Result<i64, Unsound> {
    let version = user_version(conn).map_err(Unsound::sqlite("read the schema version"))?;
    if !(0..=VERSION).contains(&version) {
        return Err(Unsound::Unknown(version));
    }
    let tables = {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
            .map_err(Unsound::sqlite("read the schema"))?;
        stmt.query_map([], |row| row.get::<_, String>(0))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(Unsound::sqlite("read the schema"))?
    };
    if version == 0 {
        return Ok(version);
    }
    for (table, since, reads) in PROBES {
        if since > version {
            continue; // The migration creates it.
        }
        if !tables.iter().any(|t| t == table) {
            return Err(Unsound::Missing { version, table });
        }
        for sql in reads {
            let mut stmt = conn
                .prepare(sql)
                .map_err(Unsound::sqlite("read the schema"))?;
            let mut rows = stmt.query([]).map_err(Unsound::sqlite("read a table"))?;
            rows.next().map_err(Unsound::sqlite("read a table"))?;
        }
    }
    Ok(version)
}

/// Brings the database at `path` to [`VERSION`] in one IMMEDIATE
/// transaction, reading the version again under the write lock, and
/// copying a ledger of version 1 or later beside itself before the first
/// change. Returns the version found before.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<i64, Unsound> {
    let tx = Transaction::new(conn, TransactionBehavior::Immediate)
        .map_err(Unsound::sqlite("begin the migration"))?;
    let found = user_version(&tx).map_err(Unsound::sqlite("read the schema version"))?;
    let from = match usize::try_from(found) {
        Ok(from) if found <= VERSION => from,
        _ => return Err(Unsound::Unknown(found)),
    };
    if found == VERSION {
        return Ok(found);
    }
    if found > 0 {
        // Dropping `tx` on the way out rolls back: nothing is migrated
        // without its copy.
        backup::write(path, found).map_err(Unsound::Backup)?;
    }
    for sql in &MIGRATIONS[from..] {
        tx.execute_batch(sql)
            .map_err(Unsound::sqlite("migrate the schema"))?;
    }
    tx.execute_batch(&format!("PRAGMA user_version = {VERSION}"))
        .map_err(Unsound::sqlite("migrate the schema"))?;
    tx.commit()
        .map_err(Unsound::sqlite("commit the migration"))?;
    Ok(found)
}

/// The schema version (`PRAGMA user_version`).
pub(crate) fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}
