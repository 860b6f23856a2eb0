//! The `baton` schema and its migrations: the only place that creates or
//! alters a table.
//!
//! Migrations are numbered and applied in order, each recorded once in
//! `baton.migrations`. [`migrate`] runs in one transaction that first takes a
//! transaction-scoped advisory lock, so two hosts migrating at once
//! serialise: the second waits, then finds the work done and records
//! nothing. A database whose schema is newer than this build is refused,
//! never altered (fail closed). Nothing here ever drops data.

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use crate::error::Error;

/// The conditional grant's parameters' types, `$1`–`$17`
/// (`crate::statements`), as version 8 declares them.
macro_rules! grant_if_free_args {
    () => {
        "    text, text, text, text, text, bigint, integer, bigint, integer, bigint, text,
    bigint, bigint, bigint, text, bigint, bigint"
    };
}

/// The columns the conditional grant returns, as version 8 declares them.
macro_rules! grant_if_free_returns {
    () => {
        "RETURNS TABLE (
    granted_fence bigint, granted_at bigint, switched bigint, held_until bigint,
    seen_state text, seen_fence bigint, seen_token text, seen_host text,
    seen_machine text, seen_boot text, seen_pidns bigint, seen_pid integer,
    seen_pstart bigint, seen_pgid integer, seen_jstart bigint, seen_run text,
    seen_ttl_ms bigint, seen_grace_ms bigint, seen_renewed_boot_ms bigint,
    seen_acquired bigint, seen_renewed bigint, seen_released bigint, seen_now bigint,
    seen_claims text)
"
    };
}

/// The conditional grant's statements as version 8 wrote them, between its
/// `BEGIN` and its `END`; version 9 runs them after bounding its waits.
macro_rules! grant_if_free_body {
    () => {
        r#"RETURN QUERY
WITH clock AS (SELECT clock_timestamp() AS t),
g AS (
    UPDATE baton.leases l
    SET state = 'held', fence = greatest(l.fence + 1, baton.micros(clock.t)), token = $2,
        host = $3, machine = $4, boot = $5, pidns = $6, pid = $7, pstart = $8,
        pgid = $9, jstart = $10, run = $11, ttl_ms = $12, grace_ms = $13,
        renewed_boot_ms = $14, acquired = clock.t, renewed = clock.t, released = NULL,
        claims = CASE WHEN $15 IS NULL THEN l.claims
                      ELSE l.claims || jsonb_build_object($15, $16) END
    FROM clock
    WHERE l.name = $1 AND l.state = 'free'
      AND ($15 IS NULL OR coalesce((l.claims ->> $15)::bigint < $16, true))
      AND (SELECT baton.switched()) + $17 * interval '1 millisecond' <= clock.t
    RETURNING l.fence, l.acquired
),
c AS (
    INSERT INTO baton.claims (job, occurrence, lock_name, fence, claimed)
    SELECT $15, $16, $1, g.fence, g.acquired FROM g WHERE $15 IS NOT NULL
)
SELECT g.fence, baton.micros(g.acquired), NULL::bigint, NULL::bigint,
       NULL::text, NULL::bigint, NULL::text, NULL::text, NULL::text, NULL::text,
       NULL::bigint, NULL::integer, NULL::bigint, NULL::integer, NULL::bigint, NULL::text,
       NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint,
       NULL::bigint, NULL::text
FROM g;
IF FOUND THEN
    RETURN;
END IF;
-- Not granted: the row as it is now, in a statement (and a snapshot) of
-- its own; NULLs when there is none.
RETURN QUERY
SELECT NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, seen.*
FROM (SELECT 1) one LEFT JOIN LATERAL (
    SELECT r.state, r.fence, r.token, r.host, r.machine, r.boot, r.pidns, r.pid, r.pstart,
           r.pgid, r.jstart, r.run, r.ttl_ms, r.grace_ms, r.renewed_boot_ms,
           baton.micros(r.acquired), baton.micros(r.renewed), baton.micros(r.released),
           baton.micros(clock_timestamp()),
           (SELECT string_agg(e.key || '@' || e.value, ',') FROM jsonb_each_text(r.claims) e)
    FROM baton.leases r WHERE r.name = $1
) seen ON true;
"#
    };
}

/// The advisory lock key every baton migration takes (`baton-mg` in ASCII).
const MIGRATION_LOCK: i64 = 0x6261_746f_6e2d_6d67;

/// One schema change.
struct Migration {
    version: i32,
    name: &'static str,
    sql: &'static str,
}

/// Every migration, oldest first.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "leases and occurrence claims",
        sql: "
CREATE FUNCTION baton.micros(t timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT floor(extract(epoch FROM t) * 1000000)::bigint $$;

CREATE TABLE baton.leases (
    name            text PRIMARY KEY,
    state           text NOT NULL CHECK (state IN ('held', 'free')),
    fence           bigint NOT NULL CHECK (fence >= 0),
    token           text,
    host            text,
    machine         text,
    boot            text,
    pidns           bigint,
    pid             integer,
    pstart          bigint,
    pgid            integer,
    jstart          bigint,
    run             text,
    ttl_ms          bigint,
    grace_ms        bigint,
    renewed_boot_ms bigint,
    acquired        timestamptz,
    renewed         timestamptz,
    released        timestamptz,
    claims          jsonb NOT NULL DEFAULT '{}',
    CHECK (state = 'free' OR (token IS NOT NULL AND ttl_ms IS NOT NULL AND renewed IS NOT NULL))
);

CREATE TABLE baton.claims (
    job        text NOT NULL,
    occurrence bigint NOT NULL,
    lock_name  text NOT NULL,
    fence      bigint NOT NULL,
    claimed    timestamptz NOT NULL,
    PRIMARY KEY (job, occurrence)
);
",
    },
    Migration {
        version: 2,
        name: "the ledger",
        sql: LEDGER,
    },
    Migration {
        version: 3,
        name: "job guards",
        sql: "
CREATE TABLE baton.job_guards (
    job       text COLLATE \"C\" PRIMARY KEY,
    lock_name text NOT NULL,
    fence     bigint NOT NULL,
    taken     timestamptz NOT NULL
);
",
    },
    Migration {
        version: 4,
        name: "the server granted on",
        sql: SERVER,
    },
    Migration {
        version: 5,
        name: "replacements",
        sql: REPLACEMENTS,
    },
    Migration {
        version: 6,
        name: "declarations",
        sql: DECLARATIONS,
    },
    Migration {
        version: 7,
        name: "the conditional grant as a function",
        sql: GRANT_IF_FREE,
    },
    Migration {
        version: 8,
        name: "a refused grant reads the row afresh; cheaper clocks",
        sql: GRANT_IF_FREE_AFRESH,
    },
    Migration {
        version: 9,
        name: "the conditional grant bounds its own waits for locks",
        sql: GRANT_IF_FREE_BOUNDED,
    },
];

/// Version 9: `baton.grant_if_free` takes an eighteenth parameter, how
/// long (in milliseconds) any of its waits for a lock may last, and sets
/// `lock_timeout` to it for its own transaction before anything else. The
/// grant is then sent as one statement in a transaction of its own
/// (PostgreSQL's implicit one), without the `BEGIN`, the two `SET LOCAL`s
/// and the `COMMIT` the pool puts around every other transaction, which
/// under contention cost the server more than the grant (BENCHMARKS §4.1).
/// Its bound does not depend on the session, so it holds behind a pooler in
/// transaction mode too. A grant waits for nothing but locks (the lease's
/// row, a claim's key, the server's row); the statements are version 8's,
/// word for word.
const GRANT_IF_FREE_BOUNDED: &str = concat!(
    "DROP FUNCTION baton.grant_if_free(\n",
    grant_if_free_args!(),
    ");\n",
    "CREATE FUNCTION baton.grant_if_free(\n",
    grant_if_free_args!(),
    ", bigint)\n",
    grant_if_free_returns!(),
    "LANGUAGE plpgsql VOLATILE\nAS $fn$\nBEGIN\n",
    "PERFORM set_config('lock_timeout', $18::text, true);\n",
    grant_if_free_body!(),
    "END\n$fn$;\n"
);

/// Version 8: the same functions, with the same signatures and answers,
/// made cheaper and the conditional grant's refusal truer (BENCHMARKS §4.1).
///
/// - `baton.micros` is written so that the planner inlines it. Version 1's
///   body reads `extract(epoch FROM t)`, which PostgreSQL marks stable (the
///   same function serves fields that depend on the time zone), so the
///   immutable function was never inlined: every call ran the SQL function
///   executor, which parses and plans its body anew for every statement
///   that calls it. `t - timestamptz 'epoch'` is immutable and gives the
///   same microseconds (an interval's epoch is exact).
/// - `baton.switched()` reads the server's identity itself instead of
///   through `baton.server_identity()`, a SQL function that cannot be
///   inlined (it returns a record) and so was parsed and planned on every
///   grant. Its answers are version 4's, step for step.
/// - `baton.grant_if_free` reads the row it refused in a statement of its
///   own, after its grant: under `READ COMMITTED` that statement takes a new
///   snapshot, so a contender that waited for the row while another's grant
///   committed sees that grant (a live holder: busy at once), where version
///   7 showed it the row as it was before the wait (free), and it tried
///   again, then judged it under the row's lock, queueing every other
///   contender behind it. The row is still judged by the caller, never
///   granted from this read: the grant's own condition is checked on the
///   row's newest version, as before.
const GRANT_IF_FREE_AFRESH: &str = concat!(
    r#"
CREATE OR REPLACE FUNCTION baton.micros(t timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT floor(extract(epoch FROM (t - timestamptz 'epoch')) * 1000000)::bigint $$;

CREATE OR REPLACE FUNCTION baton.switched() RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    sid bigint;
    tli bigint;
    seen timestamptz;
BEGIN
    SELECT (SELECT c.system_identifier FROM pg_control_system() c),
           ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
      INTO sid, tli;
    SELECT s.switched INTO seen FROM baton.server s
    WHERE s.system_identifier = sid AND s.timeline = tli;
    IF FOUND THEN
        RETURN seen;
    END IF;
    -- A server this store never granted on: the first grant to see it
    -- records when. Concurrent ones wait for its row lock, find the row
    -- already names this server, and read what the first wrote.
    INSERT INTO baton.server AS s (one, system_identifier, timeline, switched)
    VALUES (true, sid, tli, clock_timestamp())
    ON CONFLICT (one) DO UPDATE
        SET system_identifier = excluded.system_identifier, timeline = excluded.timeline,
            switched = excluded.switched
        WHERE s.system_identifier <> excluded.system_identifier
           OR s.timeline <> excluded.timeline
    RETURNING s.switched INTO seen;
    IF FOUND THEN
        RETURN seen;
    END IF;
    SELECT s.switched INTO seen FROM baton.server s
    WHERE s.system_identifier = sid AND s.timeline = tli;
    IF FOUND THEN
        RETURN seen;
    END IF;
    -- Changed again meanwhile: hold back from now, the safe side.
    RETURN clock_timestamp();
END
$$;

"#,
    "CREATE OR REPLACE FUNCTION baton.grant_if_free(\n",
    grant_if_free_args!(),
    ")\n",
    grant_if_free_returns!(),
    "LANGUAGE plpgsql VOLATILE\nAS $fn$\nBEGIN\n",
    grant_if_free_body!(),
    "END\n$fn$;\n"
);

/// Version 7: the conditional form's grant, `baton.grant_if_free`, as a
/// function, so that the server parses and plans its statement once per
/// connection (PL/pgSQL keeps a function's plans for the session) instead
/// of on every attempt: under contention, parsing and planning the grant
/// was most of the server's work (BENCHMARKS §4.1). Nothing is kept that a
/// pooler in transaction mode would break: the cache belongs to whichever
/// server connection runs the call. `$1`–`$17` are the grant's parameters
/// (`crate::statements`); the statement is the grant's, word for word,
/// and the columns it returns are the grant's four, then the row as
/// `SELECT` reads it when nothing was granted.
///
/// The switch (`baton.switched()`) is read only once the row is found free
/// with its claim open: the condition comes last and is a sub-select the
/// server runs when first needed. A contender for a held lease pays for one
/// indexed look at the row; every statement that can grant still reads the
/// switch before it does.
const GRANT_IF_FREE: &str = r#"
CREATE FUNCTION baton.grant_if_free(
    text, text, text, text, text, bigint, integer, bigint, integer, bigint, text,
    bigint, bigint, bigint, text, bigint, bigint)
RETURNS TABLE (
    granted_fence bigint, granted_at bigint, switched bigint, held_until bigint,
    seen_state text, seen_fence bigint, seen_token text, seen_host text,
    seen_machine text, seen_boot text, seen_pidns bigint, seen_pid integer,
    seen_pstart bigint, seen_pgid integer, seen_jstart bigint, seen_run text,
    seen_ttl_ms bigint, seen_grace_ms bigint, seen_renewed_boot_ms bigint,
    seen_acquired bigint, seen_renewed bigint, seen_released bigint, seen_now bigint,
    seen_claims text)
LANGUAGE plpgsql VOLATILE
AS $fn$
BEGIN
RETURN QUERY
WITH clock AS (SELECT clock_timestamp() AS t),
g AS (
    UPDATE baton.leases l
    SET state = 'held', fence = greatest(l.fence + 1, baton.micros(clock.t)), token = $2,
        host = $3, machine = $4, boot = $5, pidns = $6, pid = $7, pstart = $8,
        pgid = $9, jstart = $10, run = $11, ttl_ms = $12, grace_ms = $13,
        renewed_boot_ms = $14, acquired = clock.t, renewed = clock.t, released = NULL,
        claims = CASE WHEN $15 IS NULL THEN l.claims
                      ELSE l.claims || jsonb_build_object($15, $16) END
    FROM clock
    WHERE l.name = $1 AND l.state = 'free'
      AND ($15 IS NULL OR coalesce((l.claims ->> $15)::bigint < $16, true))
      AND (SELECT baton.switched()) + $17 * interval '1 millisecond' <= clock.t
    RETURNING l.fence, l.acquired
),
c AS (
    INSERT INTO baton.claims (job, occurrence, lock_name, fence, claimed)
    SELECT $15, $16, $1, g.fence, g.acquired FROM g WHERE $15 IS NOT NULL
)
SELECT g.fence, baton.micros(g.acquired), NULL::bigint, NULL::bigint, seen.*
FROM clock LEFT JOIN g ON true
LEFT JOIN LATERAL (
    SELECT r.state, r.fence, r.token, r.host, r.machine, r.boot, r.pidns, r.pid, r.pstart,
           r.pgid, r.jstart, r.run, r.ttl_ms, r.grace_ms, r.renewed_boot_ms,
           baton.micros(r.acquired), baton.micros(r.renewed), baton.micros(r.released),
           baton.micros(clock_timestamp()),
           (SELECT string_agg(e.key || '@' || e.value, ',') FROM jsonb_each_text(r.claims) e)
    FROM baton.leases r WHERE r.name = $1
) seen ON g.fence IS NULL;
END
$fn$;
"#;

/// Version 6: the jobs a service embedding baton's scheduler declared, the
/// SQLite ledger's `declarations` (schema version 5) column for column.
const DECLARATIONS: &str = r#"
CREATE TABLE baton.declarations (
    job      text COLLATE "C" PRIMARY KEY,
    config   text NOT NULL,
    by       text NOT NULL,
    declared bigint NOT NULL
);
"#;

/// Version 5: requests that a run in flight stop for a later run of its
/// job (`overlap = "replace"`), the SQLite ledger's `replacements` (schema
/// version 4) column for column.
const REPLACEMENTS: &str = r#"
CREATE TABLE baton.replacements (
    run_id        text COLLATE "C" NOT NULL,
    job           text COLLATE "C" NOT NULL,
    by_occurrence bigint,
    asked         bigint NOT NULL,
    PRIMARY KEY (run_id, job)
);
"#;

/// Version 4: the server the store last granted on, so that a new one (a
/// promoted standby, a restore) is recognised, and `baton.switched()`, which
/// every grant calls (see [`crate::switch`]).
///
/// The row is made with this server's identity and `switched` at
/// `-infinity`: a fresh or upgraded store holds nothing back. The timeline
/// is the one WAL is written on now (the first 8 hex digits of the current
/// WAL file's name), which changes the moment a promotion ends; the last
/// checkpoint's timeline (`pg_control_checkpoint()`) lags until the first
/// checkpoint after it. Every function read here may be called by any user.
const SERVER: &str = "
CREATE TABLE baton.server (
    one               boolean PRIMARY KEY DEFAULT true CHECK (one),
    system_identifier bigint NOT NULL,
    timeline          bigint NOT NULL,
    switched          timestamptz NOT NULL
);

CREATE FUNCTION baton.server_identity(OUT system_identifier bigint, OUT timeline bigint)
    LANGUAGE sql VOLATILE
    AS $$ SELECT (SELECT c.system_identifier FROM pg_control_system() c),
                 ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint $$;

INSERT INTO baton.server (system_identifier, timeline, switched)
SELECT i.system_identifier, i.timeline, '-infinity' FROM baton.server_identity() i;

CREATE FUNCTION baton.switched() RETURNS timestamptz
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    sid bigint;
    tli bigint;
    seen timestamptz;
BEGIN
    SELECT i.system_identifier, i.timeline INTO sid, tli FROM baton.server_identity() i;
    SELECT s.switched INTO seen FROM baton.server s
    WHERE s.system_identifier = sid AND s.timeline = tli;
    IF FOUND THEN
        RETURN seen;
    END IF;
    -- A server this store never granted on: the first grant to see it
    -- records when. Concurrent ones wait for its row lock, find the row
    -- already names this server, and read what the first wrote.
    INSERT INTO baton.server AS s (one, system_identifier, timeline, switched)
    VALUES (true, sid, tli, clock_timestamp())
    ON CONFLICT (one) DO UPDATE
        SET system_identifier = excluded.system_identifier, timeline = excluded.timeline,
            switched = excluded.switched
        WHERE s.system_identifier <> excluded.system_identifier
           OR s.timeline <> excluded.timeline
    RETURNING s.switched INTO seen;
    IF FOUND THEN
        RETURN seen;
    END IF;
    SELECT s.switched INTO seen FROM baton.server s
    WHERE s.system_identifier = sid AND s.timeline = tli;
    IF FOUND THEN
        RETURN seen;
    END IF;
    -- Changed again meanwhile: hold back from now, the safe side.
    RETURN clock_timestamp();
END
$$;
";

/// Version 2: the scheduler's ledger, table for table and key for key the
/// SQLite ledger's (`baton_ledger`, schema version 3; why each table and key
/// exists is told in that crate's documentation).
///
/// Times are microseconds since the Unix epoch (`bigint`), as the SQLite
/// ledger stores them, and always the caller's: nothing here defaults to
/// the server's clock. Every text column compares and sorts byte by byte
/// (`COLLATE "C"`), as SQLite's text does, so both ledgers list jobs, runs
/// and steps in the same order. Flags SQLite keeps as 0 or 1 are `boolean`;
/// its `AUTOINCREMENT` keys are identities, never reused after pruning.
const LEDGER: &str = r#"
CREATE TABLE baton.jobs (
    job                  text COLLATE "C" PRIMARY KEY,
    first_seen           bigint NOT NULL,
    last_decided         bigint,
    last_started         bigint,
    last_attempt         bigint,
    last_success         bigint,
    last_failure         bigint,
    consecutive_failures bigint NOT NULL DEFAULT 0,
    last_run_id          text COLLATE "C"
);
CREATE TABLE baton.occurrences (
    job        text COLLATE "C" NOT NULL,
    occurrence bigint NOT NULL,
    decision   text COLLATE "C" NOT NULL,
    reason     text COLLATE "C",
    run_id     text COLLATE "C",
    decided    bigint NOT NULL,
    detail     text COLLATE "C",
    coalesced  bigint NOT NULL DEFAULT 0,
    joined     bigint,
    PRIMARY KEY (job, occurrence)
);
CREATE INDEX occurrences_queued ON baton.occurrences (job, occurrence)
    WHERE decision = 'queued';
CREATE TABLE baton.runs (
    run_id     text COLLATE "C" PRIMARY KEY,
    job        text COLLATE "C" NOT NULL,
    occurrence bigint,
    manual     boolean NOT NULL,
    fence      bigint,
    host       text COLLATE "C",
    pid        bigint,
    started    bigint NOT NULL,
    finished   bigint,
    verdict    text COLLATE "C",
    exit_code  bigint
);
CREATE INDEX runs_by_job ON baton.runs (job, started DESC);
CREATE TABLE baton.attempts (
    run_id    text COLLATE "C" NOT NULL REFERENCES baton.runs (run_id) ON DELETE CASCADE,
    seq       bigint NOT NULL,
    step      text COLLATE "C" NOT NULL,
    kind      text COLLATE "C" NOT NULL,
    attempt   bigint NOT NULL,
    started   bigint NOT NULL,
    finished  bigint NOT NULL,
    exit_code bigint,
    signal    bigint,
    outcome   text COLLATE "C" NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE baton.steps (
    job                  text COLLATE "C" NOT NULL,
    step                 text COLLATE "C" NOT NULL,
    kind                 text COLLATE "C" NOT NULL,
    last_attempt         bigint,
    last_success         bigint,
    last_failure         bigint,
    consecutive_failures bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (job, step)
);
CREATE TABLE baton.alerts (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time       bigint NOT NULL,
    job        text COLLATE "C",
    kind       text COLLATE "C" NOT NULL,
    run_id     text COLLATE "C",
    occurrence bigint,
    message    text COLLATE "C" NOT NULL,
    json       text COLLATE "C" NOT NULL
);
CREATE INDEX alerts_by_job ON baton.alerts (job, id DESC);
CREATE TABLE baton.missed (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job      text COLLATE "C" NOT NULL,
    reason   text COLLATE "C" NOT NULL,
    first    bigint NOT NULL,
    last     bigint NOT NULL,
    count    bigint NOT NULL,
    at_least boolean NOT NULL DEFAULT false,
    decided  bigint NOT NULL,
    updated  bigint NOT NULL,
    detail   text COLLATE "C"
);
CREATE INDEX missed_by_job ON baton.missed (job, id DESC);
CREATE TABLE baton.pauses (
    id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job    text COLLATE "C" NOT NULL,
    since  bigint NOT NULL,
    until  bigint,
    reason text COLLATE "C",
    who    text COLLATE "C" NOT NULL,
    ended  bigint
);
CREATE INDEX pauses_by_job ON baton.pauses (job, id DESC);
CREATE TABLE baton.watermarks (
    job     text COLLATE "C" NOT NULL,
    seq     bigint NOT NULL,
    value   text COLLATE "C" NOT NULL,
    run_id  text COLLATE "C",
    fence   bigint,
    settled bigint NOT NULL,
    PRIMARY KEY (job, seq)
);
CREATE TABLE baton.tallies (
    job   text COLLATE "C" NOT NULL,
    kind  text COLLATE "C" NOT NULL,
    word  text COLLATE "C" NOT NULL,
    count bigint NOT NULL,
    PRIMARY KEY (job, kind, word)
);
CREATE TABLE baton.durations (
    job    text COLLATE "C" NOT NULL,
    bound  bigint NOT NULL,
    count  bigint NOT NULL,
    sum_us bigint NOT NULL,
    PRIMARY KEY (job, bound)
);
"#;

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i32 = 9;

/// Creates the `baton` schema or brings it up to [`SCHEMA_VERSION`]; returns
/// the versions this call applied (none when another host got there first).
///
/// # Errors
///
/// [`Error::ReadOnly`] when the server takes no writes (nothing is tried);
/// [`Error::SchemaTooNew`] when the database is ahead of this build;
/// [`Error::Query`] when a statement fails (the transaction is rolled back,
/// leaving the schema as it was).
pub async fn migrate(client: &mut Client) -> Result<Vec<i32>, Error> {
    migrate_bounded(client, None, "this connection's server").await
}

/// Whether the server refuses writes, read in the migration's own
/// transaction: a standby in recovery, or a transaction read-only by default.
const READ_ONLY: &str =
    "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'";

/// [`migrate`], with `bounds` (`SET LOCAL`s) set in its transaction first;
/// `target` names the server in a refusal.
pub(crate) async fn migrate_bounded(
    client: &mut Client,
    bounds: Option<&str>,
    target: &str,
) -> Result<Vec<i32>, Error> {
    const WHAT: &str = "migrate the baton schema";
    let q = |source| Error::Query { what: WHAT, source };
    let tx = client.transaction().await.map_err(q)?;
    let bounded = async {
        match bounds {
            Some(sql) => tx.batch_execute(sql).await,
            None => Ok(()),
        }
    };
    // Read with the lock, in its round trip: a read-only server is refused
    // as every connection refuses it, not by the first write's error.
    let (bounded, locked, facts) = tokio::join!(
        bounded,
        tx.execute_typed(
            "SELECT pg_advisory_xact_lock($1)",
            &[(&MIGRATION_LOCK, Type::INT8)]
        ),
        tx.query_typed_one(READ_ONLY, &[])
    );
    bounded.map_err(q)?;
    locked.map_err(q)?;
    let facts = facts.map_err(q)?;
    if let Some(why) = read_only(facts.get(0), facts.get(1)) {
        return Err(Error::ReadOnly {
            target: target.to_owned(),
            why,
        });
    }
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS baton;
         CREATE TABLE IF NOT EXISTS baton.migrations (
             version integer PRIMARY KEY,
             name    text NOT NULL,
             applied timestamptz NOT NULL DEFAULT clock_timestamp()
         );",
    )
    .await
    .map_err(q)?;
    let found: i32 = tx.query_typed_one(VERSION, &[]).await.map_err(q)?.get(0);
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew {
            what: WHAT,
            found,
            known: SCHEMA_VERSION,
        });
    }
    let mut applied = Vec::new();
    for m in MIGRATIONS.iter().filter(|m| m.version > found) {
        tx.batch_execute(m.sql).await.map_err(q)?;
        tx.execute_typed(
            "INSERT INTO baton.migrations (version, name) VALUES ($1, $2)",
            &[(&m.version, Type::INT4), (&m.name, Type::TEXT)],
        )
        .await
        .map_err(q)?;
        applied.push(m.version);
    }
    tx.commit().await.map_err(q)?;
    Ok(applied)
}

/// The schema's version, once `baton.migrations` exists.
const VERSION: &str = "SELECT coalesce(max(version), 0) FROM baton.migrations";

/// Whether the schema exists, and whether the server refuses writes: a
/// standby in recovery, or a transaction read-only by default.
const FACTS: &str = "SELECT to_regclass('baton.migrations') IS NOT NULL, pg_is_in_recovery(), \
                     current_setting('transaction_read_only') = 'on'";

/// What a connection's first round trip learns.
pub(crate) struct Probe {
    /// The schema's version (0: none).
    pub(crate) version: i32,
    /// Why the server takes no writes, when it takes none.
    pub(crate) read_only: Option<&'static str>,
}

/// Reads [`FACTS`] and [`VERSION`] in one round trip (sent together; the
/// second fails, and is not read, when there is no schema yet).
pub(crate) async fn probe(client: &Client, what: &'static str) -> Result<Probe, Error> {
    let q = |source| Error::Query { what, source };
    let (facts, version) = tokio::join!(
        client.query_typed_one(FACTS, &[]),
        client.query_typed_one(VERSION, &[])
    );
    let facts = facts.map_err(q)?;
    let version = if facts.get::<_, bool>(0) {
        version.map_err(q)?.get(0)
    } else {
        0
    };
    Ok(Probe {
        version,
        read_only: read_only(facts.get(1), facts.get(2)),
    })
}

/// Why a server takes no writes, from `pg_is_in_recovery()` and the
/// transaction's `transaction_read_only`; `None` when it takes them.
fn read_only(in_recovery: bool, read_only: bool) -> Option<&'static str> {
    if in_recovery {
        Some("it is a standby in recovery")
    } else if read_only {
        Some("default_transaction_read_only is on")
    } else {
        None
    }
}

/// The schema version in the database (0 when there is none).
///
/// # Errors
///
/// [`Error::Query`] when the database cannot be read.
pub async fn version(client: &Client) -> Result<i32, Error> {
    Ok(probe(client, "read the baton schema's version")
        .await?
        .version)
}

/// Refuses a schema that is not exactly this build's version, and a server
/// that takes no writes (every lease step writes): both in one round trip,
/// the first of every connection to `target`.
pub(crate) async fn check(client: &Client, target: &str) -> Result<(), Error> {
    let found = probe(client, "open the baton schema").await?;
    if let Some(why) = found.read_only {
        return Err(Error::ReadOnly {
            target: target.to_owned(),
            why,
        });
    }
    match found.version {
        SCHEMA_VERSION => Ok(()),
        found if found > SCHEMA_VERSION => Err(Error::SchemaTooNew {
            what: "open the baton schema",
            found,
            known: SCHEMA_VERSION,
        }),
        found => Err(Error::SchemaBehind {
            found,
            known: SCHEMA_VERSION,
        }),
    }
}
