//! baton-pg: baton's leases and occurrence claims in PostgreSQL, for
//! schedulers on several hosts.
//!
//! The store keeps one row per lock in the `baton` schema. Every step is one
//! transaction on that row, every stamp is the server's clock
//! (`clock_timestamp()`), the fence is a counter in the row, and renew and
//! release check the token, as the file lock does. A held row carries its
//! holder's facts, so a judge on the holder's own host still decides by
//! evidence (`baton_lease::decide`, reused unchanged), and a judge elsewhere
//! by the renewal's age plus the takeover grace on the server's clock. An
//! occurrence claim is inserted in the transaction that grants the lease,
//! under a unique key on job and occurrence, so one occurrence runs once
//! across every host.
//!
//! The scheduler's ledger lives here too ([`PgLedger`], `ledger`): the
//! tables of `baton_ledger`'s SQLite ledger in the same schema, behind the
//! same `baton_store::ledger::Records` trait, with every write serialised as
//! SQLite serialises them, so that several hosts share one history and an
//! occurrence is decided once across all of them.
//!
//! Map of the crate: [`schema`] creates and migrates the tables; [`Leases`]
//! is the critical section (`leases`), in either [`Form`]; `judge` turns a row
//! into `decide`'s input; `statements` holds every lease statement; `ledger`
//! the ledger's; `pool` opens every connection; [`Options`] the timeouts;
//! [`Target`] where the store is and its password (the URL completed from
//! the libpq variables, with the [`Settings`] given beside it; `passfile`
//! the file `PGPASSFILE` names, `by_host` each host's own password); `typed`
//! how a statement is sent (unnamed, with its parameters' types, so the
//! store works behind a pooler in transaction mode); `keepalive` how soon a
//! connection notices a vanished server; [`PgHeld`] a lease held by a run, driven
//! synchronously for `baton_runner`'s session, on an idle connection of the
//! store it was acquired through or one of its own (`kept` and `pool`: one
//! store value's callers share one pool, so a run opens one connection); [`examine`] an operator's look at the store that changes
//! nothing (`baton doctor`); `switch` the hold after a new server (a
//! promoted standby, a restore) is first seen ([`Switch`]), and
//! `survey` the leases and the hold read together for `status`; [`runtime`]
//! builds every runtime of the crate (and of the crates above it), whose
//! threads never take a signal meant for a run.
//!
//! The lease API is asynchronous and runs on a tokio runtime with its I/O
//! and time drivers enabled; the ledger is synchronous, on a thread and a
//! runtime of its own. Each call of either returns within
//! [`Options::deadline`], so a holder can fence itself when the store stops
//! answering. The deadline is the only timer here: it bounds a wait, it
//! never judges a lease.

mod by_host;
mod driver;
mod error;
pub mod examine;
mod form;
mod guard_statements;
mod guards;
mod held;
mod holder;
mod judge;
mod keepalive;
mod kept;
mod leases;
mod ledger;
mod options;
mod outcome;
mod passfile;
mod pool;
mod prepared;
mod ride;
pub mod runtime;
pub mod schema;
mod settings;
mod statements;
mod store;
mod survey;
mod switch;
mod target;
#[cfg(test)]
mod test_server;
mod tls;
mod typed;
mod warning;
mod write_lock;

pub use error::Error;
pub use form::Form;
pub use guards::TakeGuard;
pub use held::PgHeld;
pub use holder::HolderFacts;
pub use leases::Leases;
pub use ledger::{LedgerError, PgLedger};
pub use options::Options;
pub use outcome::{Acquire, PgLease, Release, Renewal, Restated};
pub use settings::{Settings, url_params};
pub use store::{Postgres, WeakPostgres, deadline_for};
pub use switch::Switch;
pub use target::Target;
pub use tls::{ParamError, SslMode, TlsError, Verification};
pub use warning::Warning;

/// Creates or migrates the `baton` schema at `url` (what `baton store
/// migrate` runs); returns the versions applied. Safe when several hosts
/// migrate at once.
///
/// # Errors
///
/// [`Error::Url`], [`Error::UrlParam`], [`Error::Connect`], [`Error::Tls`],
/// [`Error::ReadOnly`] (a standby, or writes off by default),
/// [`Error::SchemaTooNew`], or [`Error::Query`] (nothing is changed then).
pub async fn migrate(url: &str, options: Options) -> Result<Vec<i32>, Error> {
    migrate_target(&Target::from_url(url)?, options).await
}

/// [`migrate`] to a resolved [`Target`].
///
/// # Errors
///
/// As [`migrate`].
pub async fn migrate_target(target: &Target, options: Options) -> Result<Vec<i32>, Error> {
    let (mut client, _) = pool::connect_once(target, &options).await?;
    let deadline = options.deadline;
    let bounds = pool::bounds_sql(&options, options.statement_timeout);
    tokio::time::timeout(
        deadline,
        schema::migrate_bounded(&mut client, Some(&bounds), &target.describe()),
    )
    .await
    .unwrap_or(Err(Error::Timeout {
        what: "migrate the baton schema",
        deadline,
    }))
}

/// The schema version at `target` (0 when there is none), read without
/// changing anything; compare it with [`schema::SCHEMA_VERSION`].
///
/// # Errors
///
/// [`Error::Connect`], [`Error::Query`], or [`Error::Timeout`].
pub async fn schema_version(target: &Target, options: Options) -> Result<i32, Error> {
    let (client, _) = pool::connect_once(target, &options).await?;
    let deadline = options.deadline;
    tokio::time::timeout(deadline, schema::version(&client))
        .await
        .unwrap_or(Err(Error::Timeout {
            what: "read the baton schema's version",
            deadline,
        }))
}
