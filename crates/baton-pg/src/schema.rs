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

use crate::error::Error;

/// The advisory lock key every baton migration takes (`baton-mg` in ASCII).
const MIGRATION_LOCK: i64 = 0x6261_746f_6e2d_6d67;

/// One schema change.
struct Migration {
    version: i32,
    name: &'static str,
    sql: &'static str,
}

/// Every migration, oldest first.
const MIGRATIONS: &[Migration] = &[Migration {
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
}];

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i32 = 1;

/// Creates the `baton` schema or brings it up to [`SCHEMA_VERSION`]; returns
/// the versions this call applied (none when another host got there first).
///
/// # Errors
///
/// [`Error::SchemaTooNew`] when the database is ahead of this build;
/// [`Error::Query`] when a statement fails (the transaction is rolled back,
/// leaving the schema as it was).
pub async fn migrate(client: &mut Client) -> Result<Vec<i32>, Error> {
    const WHAT: &str = "migrate the baton schema";
    let q = |source| Error::Query { what: WHAT, source };
    let tx = client.transaction().await.map_err(q)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(q)?;
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
    let found: i32 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM baton.migrations",
            &[],
        )
        .await
        .map_err(q)?
        .get(0);
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
        tx.execute(
            "INSERT INTO baton.migrations (version, name) VALUES ($1, $2)",
            &[&m.version, &m.name],
        )
        .await
        .map_err(q)?;
        applied.push(m.version);
    }
    tx.commit().await.map_err(q)?;
    Ok(applied)
}

/// The schema version in the database (0 when there is none).
///
/// # Errors
///
/// [`Error::Query`] when the database cannot be read.
pub async fn version(client: &Client) -> Result<i32, Error> {
    let q = |source| Error::Query {
        what: "read the baton schema's version",
        source,
    };
    let exists: bool = client
        .query_one("SELECT to_regclass('baton.migrations') IS NOT NULL", &[])
        .await
        .map_err(q)?
        .get(0);
    if !exists {
        return Ok(0);
    }
    Ok(client
        .query_one(
            "SELECT coalesce(max(version), 0) FROM baton.migrations",
            &[],
        )
        .await
        .map_err(q)?
        .get(0))
}

/// Refuses a schema that is not exactly this build's version.
pub(crate) async fn check(client: &Client) -> Result<(), Error> {
    match version(client).await? {
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
