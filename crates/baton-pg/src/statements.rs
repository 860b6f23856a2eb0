//! Every statement the lease runs (acquire, renew, restate, naming the job's
//! group, release): the only SQL that reads or writes `baton.leases` and
//! `baton.claims`, besides the conditional grant's body, which the schema
//! keeps as a function (versions 7 and 8, `crate::schema`) so that the
//! server plans it once per connection. Each is sent unnamed with its parameters' types
//! ([`crate::typed`]), never prepared by name, so none outlives its
//! transaction (a pooler may hand the next one another server connection).
//!
//! Every stamp is the server's `clock_timestamp()`, taken while the statement
//! runs, never a value from the client. It may be read before a row lock
//! the statement waits for, but never before the caller sent the statement:
//! a holder that measures its lease from the start of its attempt never
//! overestimates it (the self-fencing inequality in `DESIGN.md` needs
//! exactly that), and a judgement's `now` read early only makes a holder
//! look younger (the safe direction).
//! The fence is a counter in the row: a grant sets it to the larger of
//! `fence + 1` and the server's clock in microseconds, and a release keeps
//! it; a row is created free with the server's clock as its count. So a row
//! deleted by hand, or restored from an older backup (or read from a replica
//! that lagged behind when it was promoted), does not make fences repeat
//! unless the server's clock went back past the last one (the file lock's
//! fences are microseconds too, by the same rule). Renew, restate,
//! naming the job's group and release change a row only when its token is
//! the caller's.

use std::sync::LazyLock;

/// The columns [`Statements::select`] returns, in order.
pub(crate) mod col {
    pub(crate) const STATE: usize = 0;
    pub(crate) const FENCE: usize = 1;
    pub(crate) const TOKEN: usize = 2;
    pub(crate) const HOST: usize = 3;
    pub(crate) const MACHINE: usize = 4;
    pub(crate) const BOOT: usize = 5;
    pub(crate) const PIDNS: usize = 6;
    pub(crate) const PID: usize = 7;
    pub(crate) const PSTART: usize = 8;
    pub(crate) const PGID: usize = 9;
    pub(crate) const JSTART: usize = 10;
    pub(crate) const RUN: usize = 11;
    pub(crate) const TTL_MS: usize = 12;
    pub(crate) const GRACE_MS: usize = 13;
    pub(crate) const RENEWED_BOOT_MS: usize = 14;
    pub(crate) const ACQUIRED: usize = 15;
    pub(crate) const RENEWED: usize = 16;
    pub(crate) const RELEASED: usize = 17;
    pub(crate) const NOW: usize = 18;
    /// The row's claims as `job@occurrence,…`, NULL for none.
    pub(crate) const CLAIMS: usize = 19;
}

const SELECT: &str = "
SELECT state, fence, token, host, machine, boot, pidns, pid, pstart, pgid, jstart, run,
       ttl_ms, grace_ms, renewed_boot_ms,
       baton.micros(acquired), baton.micros(renewed), baton.micros(released),
       baton.micros(clock_timestamp()),
       (SELECT string_agg(e.key || '@' || e.value, ',') FROM jsonb_each_text(claims) e)
FROM baton.leases WHERE name = $1 FOR UPDATE";

const ENSURE: &str = "
INSERT INTO baton.leases (name, state, fence)
VALUES ($1, 'free', baton.micros(clock_timestamp()))
ON CONFLICT (name) DO NOTHING";

/// The grant, with its occurrence claim: `$1` name, `$2` token, `$3`–`$14`
/// the holder's facts, `$15` job and `$16` occurrence (both NULL for no
/// claim), `$17` the hold after a switch (below). Either way the lease is not granted without its claim:
///
/// - a claim at or before the job's latest under this lock refuses the grant
///   (no row returned). The latest is kept in the lease row itself
///   (`claims`, job → occurrence), so the condition is re-checked on the
///   row's newest version when the statement waited for its lock; a
///   condition on another table would be read from the statement's
///   snapshot, taken before the wait, and miss a claim committed meanwhile;
/// - a claim of the same occurrence by anyone, through any lock, fails the
///   whole statement on the unique key of `baton.claims`, which sees every
///   committed row whatever the snapshot.
///
/// The grant is also refused while the server is held back after a switch
/// (`baton.switched()`, [`crate::switch`]): `$17` is the asker's TTL plus
/// takeover grace in milliseconds, and nothing is granted before that long
/// after the server was first seen. The statement always returns one row:
/// the fence and stamp when granted (else NULL), and the switch's stamp and
/// the hold's end when held back (else NULL).
const GRANT: &str = "
WITH clock AS (SELECT clock_timestamp() AS t),
hold AS MATERIALIZED (
    SELECT s.at AS switched, s.at + $17::bigint * interval '1 millisecond' AS until
    FROM (SELECT baton.switched() AS at) s
),
g AS (
    UPDATE baton.leases l
    SET state = 'held', fence = greatest(l.fence + 1, baton.micros(clock.t)), token = $2,
        host = $3, machine = $4, boot = $5, pidns = $6, pid = $7, pstart = $8,
        pgid = $9, jstart = $10, run = $11, ttl_ms = $12, grace_ms = $13,
        renewed_boot_ms = $14, acquired = clock.t, renewed = clock.t, released = NULL,
        claims = CASE WHEN $15::text IS NULL THEN l.claims
                      ELSE l.claims || jsonb_build_object($15::text, $16::bigint) END
    FROM clock, hold
    WHERE l.name = $1 AND hold.until <= clock.t
      AND ($15::text IS NULL OR coalesce((l.claims ->> $15::text)::bigint < $16::bigint, true))
    RETURNING l.fence, l.acquired
),
c AS (
    INSERT INTO baton.claims (job, occurrence, lock_name, fence, claimed)
    SELECT $15::text, $16::bigint, $1, g.fence, g.acquired FROM g WHERE $15::text IS NOT NULL
)
SELECT g.fence, baton.micros(g.acquired),
       CASE WHEN hold.until > clock.t THEN baton.micros(hold.switched) END,
       CASE WHEN hold.until > clock.t THEN baton.micros(hold.until) END
FROM hold CROSS JOIN clock LEFT JOIN g ON true";

const RENEW: &str = "
UPDATE baton.leases SET renewed = clock_timestamp(), renewed_boot_ms = $3
WHERE name = $1 AND state = 'held' AND token = $2
RETURNING baton.micros(renewed)";

const RELEASE: &str = "
UPDATE baton.leases SET state = 'free', token = NULL, released = clock_timestamp()
WHERE name = $1 AND state = 'held' AND token = $2
RETURNING fence, baton.micros(released)";

/// [`RELEASE`] sent behind the `COMMIT` of a run's end (`crate::ride`),
/// so only once the end is recorded: `$3` the run, whose row must be
/// finished, and `$4` the jobs whose queue the holder drains, none of which
/// may have an occurrence waiting (the holder runs it under the lease
/// first). Carried by any other write, or with anything queued, it changes
/// nothing, and the holder releases as it would have without it.
const RELEASE_IF_ENDED: &str = "
UPDATE baton.leases SET state = 'free', token = NULL, released = clock_timestamp()
WHERE name = $1 AND state = 'held' AND token = $2
  AND EXISTS (SELECT 1 FROM baton.runs WHERE run_id = $3 AND finished IS NOT NULL)
  AND NOT EXISTS (SELECT 1 FROM baton.occurrences
                  WHERE job = ANY($4::text[]) AND decision = 'queued')
RETURNING fence, baton.micros(released)";

/// The names of every lease row that is a lock's slot above its first
/// (`NAME@K`, `baton_lease::slot`): what a lock's slots above a lowered
/// `max_concurrent` are read from. Takes no parameter: a run's first look
/// carries it behind its `COMMIT` (`crate::pool::Rider`).
pub(crate) const SLOT_NAMES: &str =
    "SELECT ARRAY(SELECT name FROM baton.leases WHERE strpos(name, '@') > 0 ORDER BY name)";

/// Whether any of the jobs `$1` has an occurrence waiting in the ledger's
/// queue (`baton.occurrences`, decision `queued`), paused or not, once
/// lock `$2` no longer carries token `$3`: the one read of a table besides
/// the lease's, sent right after a release
/// ([`crate::Leases::release_peeking`]). NULL while the snapshot still
/// shows the row held with that token: only a look taken after the
/// release committed may tell the holder that nothing was queued while it
/// held the lock.
const QUEUED: &str = "
SELECT CASE WHEN EXISTS (SELECT 1 FROM baton.leases WHERE name = $2 AND token = $3) THEN NULL
            ELSE EXISTS (SELECT 1 FROM baton.occurrences
                         WHERE job = ANY($1::text[]) AND decision = 'queued') END";

/// Names the job's process group (and its leader's start time) on the
/// holder's row, and renews it: `$1` name, `$2` token, `$3` pgid, `$4`
/// jstart, `$5` the holder's boot clock.
const SET_JOB_GROUP: &str = "
UPDATE baton.leases SET pgid = $3, jstart = $4, renewed = clock_timestamp(), renewed_boot_ms = $5
WHERE name = $1 AND state = 'held' AND token = $2
RETURNING baton.micros(renewed)";

/// Restates the run under a held lease and claims an occurrence, as the
/// grant claims one: `$1` name, `$2` token, `$3` run, `$4` the holder's boot
/// clock, `$5` job and `$6` occurrence (both NULL for no claim). No row comes
/// back when the token is not the caller's or the job's latest claim under
/// this lock is at or past `$6`; a claim of the same occurrence through any
/// lock fails the statement on the unique key of `baton.claims`. Also
/// renews.
const RESTATE: &str = "
WITH clock AS (SELECT clock_timestamp() AS t),
r AS (
    UPDATE baton.leases l
    SET run = $3, renewed = clock.t, renewed_boot_ms = $4,
        claims = CASE WHEN $5::text IS NULL THEN l.claims
                      ELSE l.claims || jsonb_build_object($5::text, $6::bigint) END
    FROM clock
    WHERE l.name = $1 AND l.state = 'held' AND l.token = $2
      AND ($5::text IS NULL OR coalesce((l.claims ->> $5::text)::bigint < $6::bigint, true))
    RETURNING l.fence, l.renewed
),
c AS (
    INSERT INTO baton.claims (job, occurrence, lock_name, fence, claimed)
    SELECT $5::text, $6::bigint, $1, r.fence, r.renewed FROM r WHERE $5::text IS NOT NULL
)
SELECT baton.micros(r.renewed) FROM r";

/// Takes back the claim of occurrence `$4` of job `$3` that lock `$1`'s
/// holder (token `$2`) made, for a run that never started: the job's claim
/// in the row goes back to its claim before (its latest other claim under
/// this lock in `baton.claims`, or none), and the occurrence's row in
/// `baton.claims` goes, so another lock or host may claim it again. Also
/// renews (`$5` the holder's boot clock). No row comes back, and nothing
/// changes, when the row no longer carries the token, `$4` is not the job's
/// latest claim under it, or the ledger records the occurrence started.
/// Sent after the ledger's write lock is taken in the same transaction
/// ([`crate::Leases::withdraw`]), so a start recorded at the same moment is
/// either seen here or waits for this to commit.
const WITHDRAW: &str = "
WITH l AS (
    SELECT name FROM baton.leases
    WHERE name = $1 AND state = 'held' AND token = $2
      AND (claims ->> $3::text)::bigint = $4::bigint
      AND NOT EXISTS (SELECT 1 FROM baton.occurrences o
                      WHERE o.job = $3::text AND o.occurrence = $4::bigint
                        AND o.decision = 'started')
    FOR UPDATE
),
gone AS (
    DELETE FROM baton.claims c USING l
    WHERE c.job = $3::text AND c.occurrence = $4::bigint AND c.lock_name = l.name
),
before AS (
    SELECT max(c.occurrence) AS at FROM baton.claims c
    WHERE c.job = $3::text AND c.lock_name = $1 AND c.occurrence < $4::bigint
)
UPDATE baton.leases t
SET claims = CASE WHEN before.at IS NULL THEN t.claims - $3::text
                  ELSE t.claims || jsonb_build_object($3::text, before.at) END,
    renewed = clock_timestamp(), renewed_boot_ms = $5
FROM l, before
WHERE t.name = l.name
RETURNING baton.micros(t.renewed)";

/// Why [`RESTATE`] returned no row: whether the row is still the caller's
/// (`$2` token), and the job's (`$3`) latest claim under this lock.
const RESTATE_REFUSED: &str = "
SELECT state = 'held' AND token IS NOT DISTINCT FROM $2, (claims ->> $3::text)::bigint
FROM baton.leases WHERE name = $1";

/// Whether the grant of an acquisition whose answer was lost committed:
/// the row of lock `$1` held with its token `$2`, and the grant's fence and
/// stamp (the columns [`GRANT`] returns).
const CONFIRM: &str = "
SELECT fence, baton.micros(acquired) FROM baton.leases
WHERE name = $1 AND state = 'held' AND token = $2";

/// The holder `$2` (a token) of lock `$1`, when it holds it: its fence and
/// run id. A read: it locks nothing.
const VOUCH: &str = "
SELECT fence, run FROM baton.leases WHERE name = $1 AND state = 'held' AND token = $2";

/// Whether grants are held back now, as [`GRANT`] decides it: `$1` the
/// longest TTL plus takeover grace asked about, in milliseconds. One row:
/// the switch's stamp and the hold's end while it lasts, else NULLs (a
/// store that never changed server holds `-infinity`). Calls
/// `baton.switched()`, so the first look at a new server starts the hold,
/// as a grant's would.
const HELD_BACK: &str = "
WITH clock AS (SELECT clock_timestamp() AS t),
hold AS MATERIALIZED (
    SELECT s.at AS switched, s.at + $1::bigint * interval '1 millisecond' AS until
    FROM (SELECT baton.switched() AS at) s
)
SELECT CASE WHEN hold.until > clock.t THEN baton.micros(hold.switched) END,
       CASE WHEN hold.until > clock.t THEN baton.micros(hold.until) END
FROM hold CROSS JOIN clock";

/// The conditional form's grant: [`GRANT`] on a free row only, with the
/// same parameters and the same first four columns, except that it never
/// says why it did not grant (the third and fourth are always NULL). When
/// it did not grant, the row as [`SELECT`] reads it (without its lock, in a
/// snapshot taken after the grant's condition failed) follows, from column
/// [`GRANT_IF_FREE_SEEN`] on, so that a contender for a held lease judges
/// it in the same round trip; NULLs when it granted or the row does not
/// exist. `$18` is how long, in milliseconds, the call may wait for a lock:
/// it is sent alone, outside the pool's transactions and their statement
/// timeout. The statement is the function `baton.grant_if_free` of schema
/// version 9 (`crate::schema`), planned once per server connection.
const GRANT_IF_FREE: &str = "
SELECT * FROM baton.grant_if_free($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                                  $15, $16, $17, $18)";

/// Where [`GRANT_IF_FREE`]'s copy of the row begins.
pub(crate) const GRANT_IF_FREE_SEEN: usize = 4;

/// The lease's statements.
pub(crate) struct Statements {
    pub(crate) select: &'static str,
    pub(crate) ensure: &'static str,
    pub(crate) grant: &'static str,
    pub(crate) grant_if_free: &'static str,
    pub(crate) renew: &'static str,
    pub(crate) release: &'static str,
    pub(crate) release_if_ended: &'static str,
    pub(crate) queued: &'static str,
    pub(crate) set_job_group: &'static str,
    pub(crate) restate: &'static str,
    pub(crate) restate_refused: &'static str,
    pub(crate) withdraw: &'static str,
    pub(crate) inspect: String,
    /// As `inspect`, for the first held row after `$2` among the names
    /// `$1`, with its name last.
    pub(crate) held_among: String,
    pub(crate) vouch: &'static str,
    pub(crate) confirm: &'static str,
    pub(crate) held_back: &'static str,
}

/// Every lease statement, made once per process.
pub(crate) static ST: LazyLock<Statements> = LazyLock::new(|| Statements {
    select: SELECT,
    ensure: ENSURE,
    grant: GRANT,
    grant_if_free: GRANT_IF_FREE,
    renew: RENEW,
    release: RELEASE,
    release_if_ended: RELEASE_IF_ENDED,
    queued: QUEUED,
    set_job_group: SET_JOB_GROUP,
    restate: RESTATE,
    restate_refused: RESTATE_REFUSED,
    withdraw: WITHDRAW,
    inspect: SELECT.replace(" FOR UPDATE", ""),
    held_among: SELECT.replace(
        "\nFROM baton.leases WHERE name = $1 FOR UPDATE",
        ",\n       name\nFROM baton.leases WHERE name = ANY($1::text[]) AND state = 'held' \
             AND name > $2\nORDER BY name LIMIT 1",
    ),
    vouch: VOUCH,
    confirm: CONFIRM,
    held_back: HELD_BACK,
});

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.

    use super::*;
    use crate::test_server::on_a_connection;

    /// The look at a lock's other slots reads what `inspect` reads, with
    /// the row's name after it, among the names given.
    #[test]
    fn the_look_at_other_slots_reads_the_columns_of_inspect_and_the_name() {
        assert!(
            ST.held_among
                .contains("WHERE name = ANY($1::text[]) AND state = 'held'")
        );
        assert!(!ST.held_among.contains("FOR UPDATE"));
        let columns = |sql: &str| sql.split("FROM baton.leases").next().unwrap().to_owned();
        let head = columns(&ST.inspect);
        assert!(columns(&ST.held_among).starts_with(head.trim_end()));
        assert!(columns(&ST.held_among).trim_end().ends_with("name"));
    }

    /// [`QUEUED`] answers only from a snapshot in which the releasing
    /// holder's token is gone from the row; then it says whether one of the
    /// jobs named has an occurrence queued.
    #[test]
    fn the_look_after_a_release_answers_only_once_the_row_is_released() {
        on_a_connection(async |c| {
            c.batch_execute(
                "BEGIN; CREATE SCHEMA baton; \
                 CREATE TABLE baton.leases (name text, token text); \
                 CREATE TABLE baton.occurrences (job text, decision text); \
                 INSERT INTO baton.leases VALUES ('l', 't'); \
                 INSERT INTO baton.occurrences VALUES ('j', 'queued'), ('k', 'started')",
            )
            .await
            .unwrap();
            let look = async |jobs: &[&str], token: &str| -> Option<bool> {
                let jobs: Vec<&str> = jobs.to_vec();
                c.query_one(QUEUED, &[&jobs, &"l", &token])
                    .await
                    .unwrap()
                    .get(0)
            };
            assert_eq!(look(&["j"], "t").await, None, "still held: no answer");
            assert_eq!(look(&["j"], "other").await, Some(true));
            c.batch_execute("UPDATE baton.leases SET token = NULL")
                .await
                .unwrap();
            assert_eq!(look(&["j", "x"], "t").await, Some(true));
            assert_eq!(look(&["k", "x"], "t").await, Some(false), "not queued");
            assert_eq!(look(&[], "t").await, Some(false));
            c.batch_execute("ROLLBACK").await.unwrap();
        });
    }
}
