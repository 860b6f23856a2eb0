//! `baton doctor`: checks a host and says what is wrong and how to fix it.
//!
//! Each file is one family of checks, each check a function that returns
//! [`Finding`]s (a status, what was found, and for a problem the fix):
//! `configuration` (every problem of `baton.toml` and its drop-ins), the state directory and its filesystem (`state`), the jobs'
//! locks (`locks`), the ledger (`ledger`), time sync and the zone database
//! (`time`), the store (`store`), what drives baton (`driver`), the
//! alert command (`alert`), the alert webhooks (`webhook`) and the trace
//! collector (`telemetry`). [`examine`] runs them in that order; [`render()`]
//! turns the [`Report`] into text, and `--json` serialises it.
//!
//! The doctor changes nothing it checks: it reads the configuration, opens
//! the ledger read-only (SQLite may create its empty `-wal` and `-shm`),
//! inspects the locks as `baton lock show` does,
//! connects to the store without writing, and creates no state directory.
//! The one thing it runs is the alert command, once, with a test alert
//! (through the runner, which starts every process); the one thing it
//! sends is a test alert to each alert webhook, and an export with no span
//! to the trace collector. Checks that need a
//! valid configuration are left out while it has problems that keep its
//! sections from being read.

mod alert;
mod configuration;
mod driver;
mod finding;
mod ledger;
mod locks;
mod render;
mod state;
mod store;
mod telemetry;
mod time;
mod webhook;

use std::path::Path;

use baton_lease::Clock;

pub use driver::Host;
pub use finding::{Finding, Report, Status};
pub use render::render;

use crate::config::Overrides;
use crate::store::examine::Examination;

/// Checks this host for the configuration at `path` (with `over`'s
/// overrides), looking for its drivers on `host`; `clock` is this host's.
pub fn examine(path: &Path, over: &Overrides, host: &Host, clock: &dyn Clock) -> Report {
    examine_with(path, over, host, clock, &|_| Vec::new())
}

/// As [`examine`], with the findings `daemon` gives for a configuration
/// that loaded after the driver's: the checks of what a layer above this
/// library starts (the daemon's `[daemon]` settings, judged by the daemon's
/// own code, which this library cannot call).
pub fn examine_with(
    path: &Path,
    over: &Overrides,
    host: &Host,
    clock: &dyn Clock,
    daemon: &dyn Fn(&crate::config::Config) -> Vec<Finding>,
) -> Report {
    let (mut found, checked) = configuration::check(path, over);
    let config = checked.config.as_ref();
    if let Some(c) = config {
        found.extend(state::check(c));
        let examined = crate::store::examine::examine(c, clock);
        // The store's leases are read only from a store that answers with
        // this build's schema (else each lock would fail for the same
        // reason the store's findings give).
        let usable = match &examined {
            Ok(Examination::Postgres { found, .. }) => found
                .as_ref()
                .is_ok_and(|e| e.version == baton_pg::schema::SCHEMA_VERSION),
            Ok(Examination::Files { .. }) => true,
            Err(_) => false,
        };
        if usable && let Ok(s) = crate::store::open(c) {
            found.extend(locks::check(c, s.as_ref(), &checked.unread_jobs));
        }
        match &examined {
            Ok(Examination::Files { state_dir, ledger }) => {
                found.push(ledger::finding(state_dir, ledger));
                found.push(Finding::ok(
                    "store",
                    format!(
                        "files: lock files and the SQLite ledger in {}",
                        state_dir.display()
                    ),
                ));
            }
            Ok(Examination::Postgres {
                target,
                link,
                found: f,
            }) => found.extend(store::postgres(target, link, f)),
            Err(why) => found.push(Finding::fail(
                "store",
                why.to_string(),
                "correct [store] url, password_file or the TLS keys (sslmode, sslrootcert, sslcert, \
                 sslkey); `baton store status` says the same",
            )),
        }
    }
    found.push(time::sync());
    found.extend(time::zones(config));
    found.push(driver::check(host, path));
    if let Some(c) = config {
        found.extend(daemon(c));
        found.push(alert::check(c, clock.wall()));
        found.extend(webhook::check(c, clock));
        found.extend(telemetry::check(c, clock));
    }
    Report::of(found)
}
