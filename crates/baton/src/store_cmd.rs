//! `baton store migrate` and `baton store status`, and the migration `baton
//! daemon` runs at start: thin adapters from `[store]` to `baton_pg`.
//!
//! `store status` also says whether its connection was encrypted and what
//! of the server was verified, and whether the store holds grants back
//! after its server changed (read through the scheduler's store, as
//! `baton status` reads it).
//!
//! The store's password never reaches the output: messages name the target
//! by [`baton_pg::Target::describe`] (host, port, database, user) and the
//! URL only masked. These commands create, migrate and check the schema;
//! the runs themselves reach the store through `baton_sched::store`.
//!
//! Exit codes: 0 done (for `status`: the schema is current and the server
//! takes writes); 1 the store could not be reached, refused the connection
//! or a statement, or (for `status`) its schema is not this build's version
//! or its server takes no writes; 2 no `[store] url` is
//! configured, the configuration is invalid, or (for `migrate`) a newer
//! baton made the schema. The daemon's migration exits as `migrate`, but 2
//! for a read-only server too, as `run` and `tick` do.

use std::path::Path;

use baton_pg::{Options, Target, schema::SCHEMA_VERSION};
use baton_sched::config::Config;
use baton_sched::store::examine::{Connection, Verified};

use crate::cli::{StoreArgs, StoreStatusArgs};
use crate::exit::Exit;
use crate::sched_cmd::load;

/// The configuration's store, resolved against the environment, or the
/// exit after saying why there is none.
fn target(cmd: &str, c: &Config) -> Result<Target, Exit> {
    let Some(store) = &c.store else {
        say!(
            "baton {cmd}: no store is configured in {}: set [store] url = \
             \"postgres://USER@HOST/DATABASE\" (or BATON_STORE_URL)",
            c.path.display()
        );
        return Err(Exit::Usage);
    };
    baton_sched::store::target(store).map_err(|e| {
        say!("baton {cmd}: {e}");
        Exit::Usage
    })
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    baton_pg::runtime::current_thread().build()
}

/// Migrates the schema; what is printed goes to stdout for `store migrate`
/// and to stderr for the daemon (`daemon`), which exits 2 for a read-only
/// server as `run` and `tick` do when they connect (`store migrate`: 1,
/// refused).
fn migrate_at(cmd: &str, target: &Target, daemon: bool) -> Exit {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            say!("baton {cmd}: failed to start the async runtime: {e}");
            return Exit::Failure;
        }
    };
    match rt.block_on(baton_pg::migrate_target(target, Options::default())) {
        Ok(applied) => {
            let line = if applied.is_empty() {
                format!(
                    "store {}: schema up to date at version {SCHEMA_VERSION}",
                    target.describe()
                )
            } else {
                let list: Vec<String> = applied.iter().map(i32::to_string).collect();
                format!(
                    "store {}: applied schema version {} (now at version {SCHEMA_VERSION})",
                    target.describe(),
                    list.join(", ")
                )
            };
            if daemon {
                say!("baton {cmd}: {line}");
            } else {
                outln!("{line}");
            }
            Exit::Ok
        }
        Err(e @ baton_pg::Error::ReadOnly { .. }) => {
            // It names the server and says why: nothing to add.
            say!("baton {cmd}: {e}");
            if daemon { Exit::Usage } else { Exit::Refused }
        }
        Err(e) => {
            say!(
                "baton {cmd}: failed to migrate the store at {}: {e}",
                target.describe()
            );
            // A schema a newer baton made is not this build's to use:
            // exit 2, as every command that finds one.
            if matches!(e, baton_pg::Error::SchemaTooNew { .. }) {
                Exit::Usage
            } else {
                Exit::Refused
            }
        }
    }
}

/// `baton store migrate`.
pub fn migrate(state: Option<&Path>, a: &StoreArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    match target("store migrate", &c) {
        Ok(t) => migrate_at("store migrate", &t, false),
        Err(e) => e,
    }
}

/// What `baton store status --json` prints.
#[derive(Debug, serde::Serialize)]
struct SchemaStatus {
    /// The store: host, port, database and user (never the password).
    store: String,
    /// The schema's version there; 0 when there is none.
    schema_version: i32,
    /// This build's version.
    build_version: i32,
    /// Whether they are the same.
    current: bool,
    /// `current`, `missing` (no schema), `behind` (run `baton store
    /// migrate`) or `newer` (upgrade baton).
    verdict: &'static str,
    /// The `sslmode` in force.
    sslmode: &'static str,
    /// Whether the connection was encrypted (TLS).
    encrypted: bool,
    /// What of the server was verified: `none`, `ca` (its certificate's
    /// authority) or `ca-and-host` (and the host name).
    verified: Verified,
    /// While the store grants nothing after its server changed (a
    /// failover, a restore): when it grants again (RFC 3339); null when it
    /// grants as usual (or its schema is not this build's).
    held_back_until: Option<String>,
    /// Why whether grants are held back could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    held_back_error: Option<String>,
    /// Why the server takes no writes (a standby in recovery, or
    /// `default_transaction_read_only`): no run starts on it, and the exit
    /// code is 1. Null when it takes writes.
    read_only: Option<&'static str>,
}

/// `baton store status`.
pub fn status(state: Option<&Path>, a: &StoreStatusArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let t = match target("store status", &c) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            say!("baton store status: failed to start the async runtime: {e}");
            return Exit::Failure;
        }
    };
    let examined = rt.block_on(baton_pg::examine::examine(
        &t,
        Options::default(),
        &baton_lease::SystemClock,
    ));
    let (found, read_only, connection) = match examined {
        Ok(e) => (
            e.version,
            e.read_only,
            Connection::new(
                t.describe(),
                &t.link(),
                Ok::<_, std::convert::Infallible>((e.encrypted, e.verified)),
            ),
        ),
        Err(e) => {
            say!(
                "baton store status: failed to read the store at {}: {e}",
                t.describe()
            );
            return Exit::Refused;
        }
    };
    // The hold is read as the scheduler reads it, through the store, once
    // the schema is this build's (older ones have no record of the server)
    // and the server takes writes (the store refuses to open on one that
    // takes none).
    let connection = if found == SCHEMA_VERSION && read_only.is_none() {
        let hold = baton_sched::store::open(&c)
            .map_err(|e| e.to_string())
            .and_then(|store| {
                baton_sched::store::examine::held_back(&c, store.as_ref())
                    .map_err(|e| e.to_string())
            });
        connection.with_hold(hold)
    } else {
        connection
    };
    let (verdict, words) = match found {
        SCHEMA_VERSION => ("current", "current".to_owned()),
        0 => ("missing", "no schema: run `baton store migrate`".to_owned()),
        v if v < SCHEMA_VERSION => (
            "behind",
            format!("behind this build's version {SCHEMA_VERSION}: run `baton store migrate`"),
        ),
        _ => (
            "newer",
            format!("newer than this build's version {SCHEMA_VERSION}: upgrade baton"),
        ),
    };
    let shown = if a.json {
        crate::sched_cmd::json_out(
            "store status",
            &SchemaStatus {
                store: t.describe(),
                schema_version: found,
                build_version: SCHEMA_VERSION,
                current: found == SCHEMA_VERSION,
                verdict,
                sslmode: connection.sslmode,
                encrypted: connection.encrypted.unwrap_or(false),
                verified: connection.verified.unwrap_or(Verified::None),
                held_back_until: connection.held_back_until.clone(),
                held_back_error: connection.held_back_error.clone(),
                read_only,
            },
        )
    } else {
        outln!("store {}: schema version {found}, {words}", t.describe());
        outln!("connection: {}", connection.words());
        if let Some(hold) = connection.hold_words() {
            let tz = &c.settings.timezone.value.tz;
            outln!("{}", baton_sched::times::human_in(&hold, tz));
        }
        if let Some(why) = read_only {
            outln!(
                "read-only: the server takes no writes ({why}); no run starts on it: point \
                 the store url at the primary, or turn default_transaction_read_only off \
                 for baton's database or user"
            );
        }
        Exit::Ok
    };
    // The hold is read through the store as a run would use it: when that
    // fails (a pooler in statement mode refuses every transaction), no run
    // could start either, whatever the schema says.
    let usable = connection.held_back_error.is_none();
    if !usable && let Some(why) = &connection.held_back_error {
        say!(
            "baton store status: the store at {} cannot be used as runs use it: {why}",
            t.describe()
        );
    }
    match shown {
        Exit::Ok if found == SCHEMA_VERSION && read_only.is_none() && usable => Exit::Ok,
        Exit::Ok => Exit::Refused,
        other => other,
    }
}

/// What `baton daemon` does before it serves: with a `[store] url`,
/// migrate the schema (a note on stderr), and refuse to start when that
/// fails (exit 2 for a schema a newer baton made or a read-only server,
/// else 1). Without one, open the
/// ledger once, which migrates an older one, and refuse to start (exit 2)
/// when a newer baton wrote it: no tick could decide anything.
pub fn before_daemon(c: &Config) -> Result<(), Exit> {
    if c.store.is_none() {
        use baton_lease::Clock as _;
        let now = baton_lease::SystemClock.wall();
        return match baton_sched::store::existing_records(c, now) {
            Some(Err(e)) if e.is_newer_schema() => {
                say!("baton daemon: refusing to start: {e}");
                Err(Exit::Usage)
            }
            // Anything else is for each tick to say, as it always was.
            _ => Ok(()),
        };
    }
    let t = target("daemon", c)?;
    match migrate_at("daemon", &t, true) {
        Exit::Ok => {
            say!(
                "baton daemon: note: the store's schema is ready; leases, claims and the \
                 ledger are kept in {}",
                t.describe()
            );
            Ok(())
        }
        other => {
            say!("baton daemon: refusing to start: the store's schema could not be migrated");
            Err(other)
        }
    }
}
