//! The PostgreSQL store of `--store URL`: the crate's one door to the
//! server, and the "hosts" its contenders stand on.
//!
//! A [`Store`] is one process's connection to the server with the
//! current-thread runtime that drives it; the synchronous contender code
//! blocks on it, one call at a time, so a contender is still one thread
//! doing one thing. The parent prepares the server once per campaign
//! ([`Store::prepare`]: baton's schema migrated, the exhibit's table
//! created); every contender then opens a connection of its own.
//!
//! Hosts. The contenders all run on this machine, but a lease in PostgreSQL
//! is judged by where its holder stands. Contender `i` stands on host
//! `i % hosts`: host 0 is this machine as it is ([`HolderFacts::here`]), and
//! host `k > 0` has its own host name, machine id and boot id. A judge on
//! the holder's host decides by evidence (the holder's real pid, alive or
//! not); a judge on any other host by the renewal's age plus the takeover
//! grace on the server's clock. Nothing here changes how a process is
//! checked: only which facts are stored and compared.

use std::future::Future;
use std::time::Duration;

use baton_lease::Observer;
use baton_pg::HolderFacts;
use tokio::runtime::Runtime;
use tokio_postgres::{Client, NoTls};

use crate::exhibits::shedlock;

/// A failure to reach or prepare the server, saying what was being done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// The runtime could not be built.
    #[error("failed to start a runtime for the store: {0}")]
    Runtime(#[source] std::io::Error),
    /// baton's store refused.
    #[error("failed to {what} {target}: {source}")]
    Pg {
        /// What was being done.
        what: &'static str,
        /// The store, its password hidden.
        target: String,
        /// The cause.
        #[source]
        source: baton_pg::Error,
    },
    /// A statement of the exhibit's failed.
    #[error("failed to {what} {target}: {source}")]
    Sql {
        /// What was being done.
        what: &'static str,
        /// The store, its password hidden.
        target: String,
        /// The cause.
        #[source]
        source: tokio_postgres::Error,
    },
}

/// One process's door to the server at a URL.
#[derive(Debug)]
pub(crate) struct Store {
    url: String,
    rt: Runtime,
}

impl Store {
    /// The store at `url`; nothing is connected yet.
    ///
    /// # Errors
    ///
    /// When no runtime can be built.
    pub(crate) fn new(url: &str) -> Result<Self, StoreError> {
        let rt = baton_pg::runtime::current_thread()
            .build()
            .map_err(StoreError::Runtime)?;
        Ok(Self {
            url: url.to_owned(),
            rt,
        })
    }

    /// The URL with its password hidden, for messages and the record.
    pub(crate) fn target(&self) -> String {
        redact(&self.url)
    }

    /// Runs `f` to completion on this process's runtime.
    pub(crate) fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// Migrates baton's schema and creates the exhibit's table: once per
    /// campaign, by the parent.
    ///
    /// # Errors
    ///
    /// When the server cannot be reached or refuses.
    pub(crate) fn prepare(&self) -> Result<(), StoreError> {
        self.block_on(baton_pg::migrate(&self.url, baton_pg::Options::default()))
            .map_err(|source| StoreError::Pg {
                what: "migrate baton's schema at",
                target: self.target(),
                source,
            })?;
        let client = self.connect()?;
        self.block_on(shedlock::create_table(&client))
            .map_err(|source| StoreError::Sql {
                what: "create the exhibit's table at",
                target: self.target(),
                source,
            })
    }

    /// Opens baton's leases on one connection of this process's own.
    ///
    /// # Errors
    ///
    /// When the server cannot be reached, or its schema is not baton's.
    pub(crate) fn leases(&self) -> Result<baton_pg::Leases, StoreError> {
        let options = baton_pg::Options {
            pool_size: 1,
            ..baton_pg::Options::default()
        };
        let settings = baton_pg::Settings {
            prepare: prepares(),
            ..baton_pg::Settings::default()
        };
        // As `Leases::open` reads the URL: nothing from the environment.
        let env = |_: &str| None;
        let pg = |source| StoreError::Pg {
            what: "open baton's leases at",
            target: self.target(),
            source,
        };
        let target = baton_pg::Target::resolve_with(&self.url, &settings, &env).map_err(pg)?;
        self.block_on(baton_pg::Leases::open_target(&target, options))
            .map_err(pg)
    }

    /// A plain connection (for the exhibit), driven by this runtime.
    ///
    /// # Errors
    ///
    /// When the server cannot be reached.
    pub(crate) fn connect(&self) -> Result<Client, StoreError> {
        let (client, conn) = self
            .block_on(tokio_postgres::connect(&self.url, NoTls))
            .map_err(|source| StoreError::Sql {
                what: "connect to",
                target: self.target(),
                source,
            })?;
        // The connection task runs whenever this thread blocks on the
        // runtime, which is the only time the client is used. OK to ignore
        // its end: a dropped connection fails the next statement.
        self.rt.spawn(async move {
            let _ = conn.await;
        });
        Ok(client)
    }
}

/// Where a contender stands (see the module's header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Host {
    /// What its leases record.
    pub(crate) facts: HolderFacts,
    /// What it compares a holder's facts with.
    pub(crate) observer: Observer,
}

impl Host {
    /// Host `k`: this machine for 0, another one otherwise.
    pub(crate) fn nth(k: usize) -> Self {
        let mut facts = HolderFacts::here();
        let mut observer = Observer::here();
        if k > 0 {
            let host = format!("stress-host-{k}");
            let machine = Some(format!("stress-machine-{k}"));
            let boot = Some(format!("stress-boot-{k}"));
            facts.host.clone_from(&host);
            facts.machine.clone_from(&machine);
            facts.boot.clone_from(&boot);
            observer.host = host;
            observer.machine = machine;
            observer.boot = boot;
        }
        Self { facts, observer }
    }
}

/// `url` with the password of its user part replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((user, after)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match user.split_once(':') {
        Some((name, _)) => format!("{scheme}://{name}:***@{after}"),
        None => url.to_owned(),
    }
}

/// How long a judge off the holder's host waits past the TTL, by default.
pub(crate) const DEFAULT_GRACE: Duration = Duration::from_millis(1000);

/// Whether baton's contenders prepare their statements once per connection,
/// as baton does with `[store] prepare = true`: when `BATON_STORE_PREPARE`
/// (the variable of that key, inherited by every contender) is `true`.
fn prepares() -> bool {
    std::env::var("BATON_STORE_PREPARE").is_ok_and(|v| v.trim() == "true")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_never_leaves_the_url() {
        assert_eq!(
            redact("postgres://baton:s3cret@db:5432/baton"),
            "postgres://baton:***@db:5432/baton"
        );
        assert_eq!(
            redact("postgres://baton@db/baton"),
            "postgres://baton@db/baton"
        );
        assert_eq!(redact("host=/tmp user=x"), "host=/tmp user=x");
    }

    #[test]
    fn host_zero_is_this_machine_and_the_others_are_not() {
        let here = Host::nth(0);
        assert_eq!(here.facts, HolderFacts::here());
        let other = Host::nth(2);
        assert_eq!(other.facts.host, "stress-host-2");
        assert_ne!(other.facts.machine, here.facts.machine);
        assert_ne!(other.facts.boot, here.facts.boot);
        assert_eq!(other.observer.boot, other.facts.boot);
        assert_eq!(other.facts.pid, std::process::id());
    }
}
