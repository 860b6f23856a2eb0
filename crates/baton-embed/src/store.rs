//! Which store a scheduler keeps its leases and its ledger in: the same
//! stores, in the same layout, as the `baton` command line, so that
//! `baton status` and `baton history` against the same directory or URL
//! show the service's runs.
//!
//! This module only names a store and opens it through its own crate
//! (`baton-ledger` for files, `baton-pg` for PostgreSQL); it never takes a
//! lease or writes a record itself, and nothing here falls back from one
//! store to another.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use baton_lease::Clock;

use crate::error::BuildError;

/// The store that the scheduler's replicas share, given to
/// [`crate::Builder::store`].
///
/// ```
/// let store = baton_embed::Store::sqlite("/var/lib/my-service/baton");
/// # let _ = store;
/// ```
#[derive(Debug, Clone)]
pub struct Store {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Files(PathBuf),
    #[cfg(feature = "postgres")]
    Postgres {
        url: String,
        migrate: bool,
    },
}

/// A store opened for a scheduler: every replica's leases and its ledger.
pub(crate) type Opened = Arc<dyn baton_store::Store + Send + Sync>;

impl Store {
    /// Lock files in `dir/locks/` and the SQLite ledger `dir/baton.db`:
    /// the replicas of one host (processes sharing the directory), as
    /// `baton` with `state_dir = dir`. Nothing to install or start; the
    /// directory is created when missing.
    ///
    /// ```
    /// use baton_embed::{Scheduler, Store};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// let state = dir.path().join("baton"); // not there yet
    /// Scheduler::builder().store(Store::sqlite(&state)).build()?;
    /// // The ledger and the locks `baton --state-dir` reads.
    /// assert!(state.join("baton.db").is_file() && state.join("locks").is_dir());
    /// # Ok(())
    /// # }
    /// ```
    pub fn sqlite(dir: impl Into<PathBuf>) -> Self {
        Self {
            kind: Kind::Files(dir.into()),
        }
    }

    /// Leases and the ledger in PostgreSQL, shared by replicas on any
    /// number of hosts, as `baton` with `[store] url`. Its leases and
    /// timestamps go by the server's clock; nothing connects before the
    /// scheduler is built.
    ///
    /// ```no_run
    /// let store = baton_embed::Store::postgres("postgres://baton@db.internal/baton");
    /// # let _ = store;
    /// ```
    ///
    /// Its schema must be at this build's version, as `baton store
    /// migrate` leaves it; [`Store::migrate`] asks the build to migrate it.
    #[cfg(feature = "postgres")]
    pub fn postgres(url: impl Into<String>) -> Self {
        Self {
            kind: Kind::Postgres {
                url: url.into(),
                migrate: false,
            },
        }
    }

    /// The same PostgreSQL store, its schema migrated to this build's
    /// version when the scheduler is built (`baton store migrate`: safe
    /// when several replicas do it at once). Does nothing to a SQLite
    /// store, whose ledger migrates itself.
    ///
    /// ```no_run
    /// let store = baton_embed::Store::postgres("postgres://baton@db.internal/baton").migrate();
    /// # let _ = store;
    /// ```
    #[cfg(feature = "postgres")]
    #[must_use]
    pub fn migrate(mut self) -> Self {
        if let Kind::Postgres { migrate, .. } = &mut self.kind {
            *migrate = true;
        }
        self
    }

    /// Opens the store, its locks judged by `clock` (files; PostgreSQL's
    /// are judged by the server's clock).
    pub(crate) fn open(&self, clock: &Arc<dyn Clock>) -> Result<Opened, BuildError> {
        match &self.kind {
            Kind::Files(dir) => {
                let dir = state_dir(dir)?;
                Ok(Arc::new(
                    baton_ledger::Files::new(dir).with_clock(Arc::clone(clock)),
                ))
            }
            #[cfg(feature = "postgres")]
            Kind::Postgres { url, migrate } => {
                let env = |name: &str| std::env::var(name).ok();
                let target =
                    baton_pg::Target::resolve_with(url, &baton_pg::Settings::default(), &env)
                        .map_err(|e| BuildError::Store {
                            location: "the PostgreSQL url".into(),
                            why: e.to_string(),
                        })?;
                if *migrate {
                    migrate_schema(&target)?;
                }
                Ok(Arc::new(baton_pg::Postgres::new(target)))
            }
        }
    }
}

impl Store {
    /// What `baton` reads this store as with no `baton.toml` of its own:
    /// the configuration's text, and the directory it is read from.
    pub(crate) fn as_configuration(&self) -> (String, PathBuf) {
        match &self.kind {
            Kind::Files(dir) => {
                let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
                let text = format!(
                    "[scheduler]\nstate_dir = {}\n",
                    crate::quote::quoted(&dir.to_string_lossy())
                );
                (text, dir)
            }
            #[cfg(feature = "postgres")]
            Kind::Postgres { url, .. } => (
                format!("[store]\nurl = {}\n", crate::quote::quoted(url)),
                PathBuf::from("/"),
            ),
        }
    }
}

/// Makes `dir` absolute, creates it and its `locks/` owner-only when
/// missing, and checks them as the command line does: nobody but this user
/// or root may change them or a directory above them (where another user
/// could plant a lock file, the lock means nothing).
fn state_dir(dir: &Path) -> Result<PathBuf, BuildError> {
    use std::os::unix::fs::DirBuilderExt;
    let unusable = |why: String| BuildError::Store {
        location: dir.display().to_string(),
        why,
    };
    let dir = std::path::absolute(dir)
        .map_err(|e| unusable(format!("failed to make it absolute: {e}")))?;
    let locks = dir.join("locks");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&locks)
        .map_err(|e| unusable(format!("failed to create {}: {e}", locks.display())))?;
    baton_lease::trust::check_dir_path(&locks, 2).map_err(|e| unusable(e.to_string()))?;
    Ok(dir)
}

/// Migrates the PostgreSQL schema, on a runtime of its own on a thread of
/// its own (the caller may be inside a runtime already).
#[cfg(feature = "postgres")]
fn migrate_schema(target: &baton_pg::Target) -> Result<(), BuildError> {
    let failed = |why: String| BuildError::Store {
        location: target.describe(),
        why: format!("failed to migrate its schema: {why}"),
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = baton_pg::runtime::current_thread()
                .build()
                .map_err(|e| failed(e.to_string()))?;
            rt.block_on(baton_pg::migrate_target(
                target,
                baton_pg::Options::default(),
            ))
            .map(drop)
            .map_err(|e| failed(e.to_string()))
        })
        .join()
        .unwrap_or_else(|_| Err(failed("its thread failed".into())))
    })
}
