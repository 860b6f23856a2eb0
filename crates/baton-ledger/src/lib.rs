//! baton-ledger: the scheduler's ledger in SQLite, the embedded default
//! store of `baton_store::ledger`.
//!
//! The ledger is one database, `STATE_DIR/baton.db`, written by many
//! processes at once: every `baton tick` runs each due job in a process of
//! its own, and each of those records its run. This crate owns that file
//! outright: its schema and migrations, every SQL statement, its connection
//! settings, and its recovery from corruption. Nothing else in baton opens
//! the database. It guarantees that no update is lost between writers, that
//! no writer fails because another holds the write lock for a moment, that an
//! occurrence of a job is decided once across all processes, and that a
//! corrupt database never stops the scheduler. It is synchronous.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use baton_ledger::Ledger;
//! use baton_store::ledger::{Miss, Missed, Records};
//! use baton_store::words::MissReason;
//! let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
//! let mut ledger = Ledger::open(dir.path(), now)?;
//! for moved in ledger.take_recovered() {
//!     eprintln!("ledger was corrupt, moved to {}: {}", moved.moved_to.display(), moved.reason);
//! }
//! ledger.see_jobs(&["nightly"], now)?;
//! let occ = now.as_second();
//! let busy = Miss {
//!     job: "nightly",
//!     reason: MissReason::Busy,
//!     first: occ,
//!     last: occ,
//!     count: 1,
//!     at_least: false,
//!     detail: Some("held by pid 4242"),
//!     streak: false,
//! };
//! if ledger.miss(&busy, now)? == Missed::Recorded {
//!     // This process decided it: alert once.
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Conventions
//!
//! Times are [`jiff::Timestamp`] in the API and INTEGER microseconds since
//! the Unix epoch in SQL. An *occurrence* is a scheduled instant of a job, in
//! whole Unix seconds. A run is named by its `run_id`, 16 hex characters
//! chosen by the caller. The ledger never reads the clock: every time,
//! including the stamp of a file moved aside, comes from the caller (a
//! caller that keeps a ledger open tells it the time before each use,
//! [`Records::time_is`](baton_store::ledger::Records::time_is), so a file found corrupt by a read is named by when
//! it was found).
//!
//! # Schema (version 5, in `PRAGMA user_version`)
//!
//! - `jobs (job PRIMARY KEY, …)`: one row per job with the high-water marks
//!   the scheduler reads before it decides (`last_decided`, `last_started`:
//!   occurrence seconds) and what status shows (`last_attempt`,
//!   `last_success`, `last_failure`: run times; `consecutive_failures`;
//!   `last_run_id`). Keyed by name so every process updates the same row.
//!   `last_decided` is the mark every decision is taken against: every
//!   occurrence at or before it has a decision (started, queued, coalesced,
//!   claimed, or a missed range), and a decision that would go back behind
//!   it is not written (the caller is told the mark moved, and plans again).
//! - `occurrences (job, occurrence) PRIMARY KEY`: at most one decision per
//!   occurrence that runs or waits: `started` (with its run), `queued`
//!   (waiting for the job's lock; `coalesced` counts the later occurrences
//!   that joined it), `coalesced` (`joined` names the occurrence that serves
//!   it) or `claimed` (the lock file says it started under a lost ledger).
//!   The key *is* the guarantee that an occurrence is decided once: a
//!   decision is an insert that does nothing on conflict, and the one insert
//!   that changed a row decided; the one change allowed, `queued` to
//!   `started`, is an upsert whose update only matches a queued row. Pruning
//!   removes the decisions made before a job's oldest kept run, never a
//!   queued one nor the job's newest, and `jobs.last_decided` keeps the
//!   high-water mark of what was decided.
//! - `missed (id AUTOINCREMENT)` with an index on `(job, id DESC)`: one row
//!   per decision that a range of occurrences will not run (`first..=last`,
//!   `count` of them, `at_least` when counting stopped early), never one per
//!   occurrence, so a long outage is one row. A range has no natural key: it
//!   is written only while `jobs.last_decided` is below it, in the
//!   transaction that raises the mark, which is what keeps two processes from
//!   recording it twice. The id orders a job's ranges, so its newest is the
//!   one a streak (`paused`, `disabled`) extends. Pruned to 1,000 per job.
//! - `pauses (id AUTOINCREMENT)` with an index on `(job, id DESC)`: every
//!   pause of a job, kept after it ends (`ended`) or lapses (`until`), so an
//!   occurrence that fell inside one is still judged paused later. Pruned to
//!   100 per job, never one that is not over.
//! - `watermarks (job, seq) PRIMARY KEY`: each value a job's runs settled,
//!   with its run and fence; `seq` numbers them per job, so the newest is the
//!   largest and two settles never share a number. Pruned to 100 per job.
//! - `runs (run_id PRIMARY KEY)` with an index on `(job, started DESC)` for
//!   every per-job read and for pruning; `occurrence` is NULL for a manual
//!   run.
//! - `attempts (run_id, seq) PRIMARY KEY`, `REFERENCES runs ON DELETE
//!   CASCADE`: an attempt of a step or check belongs to its run and goes
//!   with it; the key makes recording an attempt twice a no-op.
//! - `steps (job, step) PRIMARY KEY`: per-step counters, which outlive the
//!   runs that pruning removes.
//! - `alerts (id AUTOINCREMENT)` with an index on `(job, id DESC)`: alerts
//!   as delivered, numbered in order, never renumbered.
//! - `tallies (job, kind, word) PRIMARY KEY` and `durations (job, bound)
//!   PRIMARY KEY`: cumulative counts per job that pruning never touches
//!   (runs by verdict, missed and skipped occurrences by reason, lease
//!   losses; the run-duration histogram), each raised in the transaction
//!   that records what it counts ([`Records::tallies`](baton_store::ledger::Records::tallies)).
//! - `replacements (run_id, job) PRIMARY KEY`: requests that a run in
//!   flight stop for a later run of its job (`overlap = "replace"`), read
//!   by that run's supervisor; keyed by job too, so a request never names a
//!   run of another job sharing the lock. A run's requests go when it ends,
//!   a job's others a day after they were asked.
//! - `declarations (job) PRIMARY KEY`: the jobs a service embedding baton's
//!   scheduler runs, each with its settings in the command line's words (a
//!   `[jobs.NAME]` table as TOML), who declared it and when, so that
//!   `baton status`, `history`, `pause` and `resume` show and control them
//!   without a `baton.toml`. A declaration is replaced when its job is
//!   declared again, never pruned.
//!
//! Version 1 had no `missed`, `pauses` nor `watermarks`, and kept occurrences
//! that did not run in `occurrences`, one row each, as `skipped` or
//! `missed`. Migrating to version 2 moves each of them to `missed` as a range
//! of one (its reason, or its decision word when it had none) and leaves
//! `jobs.last_decided` as it was. Migrating to version 3 creates the
//! tallies and fills them from the rows still held (a floor: pruning removed
//! older ones). Migrating to version 4 creates `replacements`, empty;
//! to version 5, `declarations`, empty.
//!
//! Counters change only through SQL expressions evaluated inside the write
//! transaction (`consecutive_failures + 1`, `MAX(…)`, `coalesced + n`, the
//! next watermark's `MAX(seq) + 1`), never by reading a value into Rust and
//! writing it back, so concurrent writers never undo each other. Where a
//! decision is conditional (is the mark still below this range? is an
//! occurrence already waiting?), the condition is read inside the same
//! `BEGIN IMMEDIATE` transaction that writes, so no other writer can change
//! it in between. Migrations are code (`schema.rs`), applied in one
//! `BEGIN IMMEDIATE` transaction that reads the version again under the
//! write lock, so two processes opening a fresh database at once migrate it
//! once, and a migration that fails or is killed midway leaves the ledger
//! as it was. Before it changes anything, a ledger of version 1 or later is
//! copied whole to `baton.db.bak-vN` beside it (`N` the version it held;
//! mode `0600`, synced, put in place by a rename, so the name only ever
//! holds a whole copy), one copy per version, the newest: going back to
//! the baton that wrote it is renaming that copy to `baton.db`. A copy that
//! cannot be written stops the migration. A version newer than this
//! build's is refused, neither read nor changed ([`Error::UnknownSchema`]).
//!
//! # Transactions
//!
//! Every call is exactly one transaction, and a short one: no call waits on
//! anything but SQLite inside it. Writes begin with `BEGIN IMMEDIATE`: the
//! write lock is taken before the first read, so a transaction never holds a
//! read snapshot that it must upgrade (which fails at once with
//! `SQLITE_BUSY`, whatever the busy timeout). Reads use a deferred `BEGIN`,
//! so a run and its attempts come from one snapshot.
//!
//! # Connection settings
//!
//! - **`journal_mode = WAL`**: readers never block the writer nor the
//!   writer its readers, and a commit is one append to the log. Many
//!   processes on one local disk is what WAL is for (it needs shared memory,
//!   so the state directory must not be on a network filesystem, as for the
//!   lock).
//! - **`synchronous = NORMAL`**: in WAL mode, a commit is not `fsync`ed;
//!   the log is synced at checkpoints. A crashed *process* loses nothing
//!   (its commits are in the operating system's cache); a *power loss or
//!   kernel crash* may lose the last transactions before the crash, never
//!   corrupt the database. The ledger is a record of runs, not the lock: a
//!   lost row costs a line of history, while `FULL` would cost an `fsync`
//!   per write, several per run.
//! - **`foreign_keys = ON`**: SQLite's default is off, per connection; the
//!   attempts' cascade relies on it.
//! - **One writer at a time per file within a process** (`gate.rs`): a
//!   write transaction first waits for this process's other writers to the
//!   same path on a mutex, woken the moment the last commits, so that
//!   SQLite's sleeping busy handler (below) is met only by writers of other
//!   processes.
//! - **A busy timeout of 10 s**: a writer that finds the write lock taken
//!   waits (SQLite's busy handler retries with short sleeps) instead of
//!   failing. Transactions last milliseconds, so 10 s is only reached when
//!   something is wrong, and then it is [`Error::Busy`], never "corrupt".
//! - **No checkpoint on close** (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`): when
//!   its last connection to a file closes, SQLite checkpoints and deletes
//!   `-wal` and `-shm` *by name*. It first checks that the database was not
//!   moved, but a move by another process can fall between that check and
//!   the deletion, and after a move those names belong to the new ledger,
//!   whose log would be deleted under its writers. So SQLite deletes nothing,
//!   and nothing checkpoints on close either: SQLite's automatic checkpoint
//!   (every 1,000 pages, by the writer that crosses it) keeps the log short,
//!   where a checkpoint on every close would make each of a tick's many
//!   short-lived processes copy the log and `fsync` the database on its way
//!   out (measured: a third of a tick's time). The `-wal` and `-shm` files
//!   stay in place. Instead, a tick that ran something and a manual run
//!   end with one passive checkpoint ([`Records::checkpoint`](baton_store::ledger::Records::checkpoint)), so the
//!   database file alone is current between ticks.
//!
//! Files are created mode `0600`: the ledger creates a new ledger itself with
//! `O_CREAT | O_EXCL | O_NOFOLLOW` before SQLite opens it, and SQLite gives
//! `-wal` and `-shm` the database's mode, so the umask is never touched. A
//! new ledger is built whole under a scratch name (`.baton.db.new`: schema
//! written, WAL mode set, synced) and only then linked to `baton.db`, so
//! that name never holds an empty or half-made file of baton's own, even
//! after a crash midway; a creation cut short leaves only the scratch file,
//! which the next creation replaces.
//! A symbolic link at `baton.db` is refused ([`Error::Symlink`]) and never
//! followed; SQLite is opened with `SQLITE_OPEN_NOFOLLOW` as well, and opens
//! `-wal` and `-shm` with `O_NOFOLLOW`. Before SQLite opens anything, the
//! ledger checks what it will open, as `baton_lease::trust` judges every
//! file baton writes: the state directory, `baton.db` and any `-wal`,
//! `-shm` or `-journal` beside it must be regular files (a named pipe is
//! [`Error::NotAFile`]) of this user's or root's that nobody else may write
//! ([`Error::Untrusted`]); [`Ledger::check`] asks the same without opening.
//!
//! # Recovery
//!
//! What is corrupt: SQLite's `SQLITE_CORRUPT` or `SQLITE_NOTADB`, from any
//! statement, a schema whose version promises a table that is missing, or
//! an empty `baton.db` (0 bytes: emptied or cut short by something else,
//! since baton never leaves one; SQLite would take it for a new database,
//! and delete the `-wal` beside it).
//! Nothing else: busy, locked, I/O errors and a full disk are errors.
//!
//! 1. **On open**, the file is probed before anything is written: the
//!    schema version, the whole schema, and the first row of every table and
//!    index. A file of garbage fails its header; a file cut short (the first
//!    4 KiB of a database) has fewer pages than its header counts; pages
//!    overwritten behind a sound header fail the first-row reads. So damage
//!    is found on open, not in the middle of a run.
//! 2. **A corrupt file is moved aside**, never deleted: `baton.db` becomes
//!    `baton.db.corrupt-<UTC stamp>` (`.1`, `.2`, … when the name is taken),
//!    its `-wal`, `-shm` (and `-journal`) taken along under the same name,
//!    side files first so that a crash midway never leaves a stale log beside
//!    a fresh database. A fresh ledger is created in its place, and
//!    [`Records::take_recovered`](baton_store::ledger::Records::take_recovered) tells the caller, who raises an alert.
//! 3. **A call that hits corruption** (damage deeper than the probe reads)
//!    recovers the same way and is tried once more, on the fresh ledger. A
//!    run begun before the recovery can still record its attempts and its
//!    end: the job's and step's counters are kept, the rows that needed the
//!    lost run are not written. (The scheduler's runs do better: they look
//!    at the file before each write, [`Records::follow`], and record their
//!    start again in a fresh one first.)
//!
//! [`Records::follow`]: baton_store::ledger::Records::follow
//! 4. **Once, between all processes.** Every move-aside happens under the
//!    *repair mutex* (`STATE_DIR/.baton.db.repair`, a reader-writer file
//!    mutex) held exclusive. Under it, a process that found corruption looks
//!    at the path again: if it still names the file it found corrupt, that
//!    file is moved; if another process has replaced it, the new file is
//!    probed and used. One corrupt file, one `.corrupt-*`, one alert.
//!    Connections are set up under the same mutex held shared (so the many
//!    processes of one tick open at once) because SQLite opens `-wal` and
//!    `-shm` by name after the database: a process opening while the three
//!    files are being renamed could pair the new database with the old log
//!    or the old shared memory.
//! 5. **A connection opened before a move** still has the old files open and
//!    would keep writing into them. Before every call, one `lstat` compares
//!    the file at `baton.db` with the one the connection opened, and the
//!    ledger reconnects when they differ. A transaction that commits in the
//!    microseconds between that check and another process's rename lands in
//!    the moved file, as it would have a moment before the move. The caller
//!    is told of the file left ([`Reset::Followed`] when it is one of the
//!    `baton.db.corrupt-*` beside it, [`Reset::Lost`] when someone else
//!    removed or replaced it), so that a run begun before records itself
//!    again in the fresh file.
//!
//! [`Reset::Followed`]: baton_store::ledger::Reset::Followed
//! [`Reset::Lost`]: baton_store::ledger::Reset::Lost
//! 6. **A log removed alone** (`baton.db-wal` deleted, or replaced, while
//!    connections have it open) leaves those connections writing into a log
//!    no newcomer can read: SQLite's shared memory still counts its frames,
//!    so a newcomer's open fails with an I/O error, and what the log held
//!    since the last checkpoint would be gone once they close. So the same
//!    look before every call also compares the `-wal` at the path with the
//!    one the connection opened (a second `lstat`). The first connection to
//!    find it changed takes the repair mutex exclusive and, while the path
//!    still names its database, copies what the log holds into the file (a
//!    full checkpoint through its own connection, the last way to read it;
//!    only when no other log with anything in it is at the path, so every
//!    connection still at work shares that one), then moves the file aside
//!    as corrupt ([`Reset::Corrupt`]: one alert) and starts a fresh one; the
//!    other connections follow it ([`Reset::Followed`]), and a run in
//!    flight records itself again in the fresh file. Until that first call,
//!    newcomers are refused (the I/O error), never given a misread ledger.
//!
//! [`Reset::Corrupt`]: baton_store::ledger::Reset::Corrupt
//! 7. **A database removed alone** (an operator deleting `baton.db` while
//!    writers run) leaves a `-wal` and `-shm` still in use by the old file's
//!    connections. A fresh database is never created beside them: they are
//!    set aside first, as `baton.db.orphaned-<UTC stamp>-wal` and so on.
//!
//! An operator's check ([`Ledger::examine`], for `baton doctor`) runs the
//! full `PRAGMA integrity_check` the probe leaves out, on a read-only
//! connection: it reports damage and the schema version, and moves,
//! migrates or creates nothing.
//!
//! # What it never does
//!
//! It never deletes a database, a log or a moved-aside file; never follows a
//! symbolic link at `baton.db`; never takes a busy database for a corrupt
//! one; never migrates a schema down or touches one newer than its own;
//! never holds a transaction across anything but its own statements; never
//! reads the clock; and never decides whether a run may start, nor who may
//! settle a watermark: that is the lease's work. The ledger records
//! decisions so that each is made once.

mod ahead;
mod backup;
mod create;
mod db;
mod error;
mod examine;
mod failure;
mod file;
mod gate;
mod ledger;
mod recover;
mod rows;
mod schema;
mod statements;
mod store;

pub use error::Error;
pub use examine::Examined;
pub use ledger::Ledger;
pub use statements::Sql;
pub use store::{Files, lock_file};
