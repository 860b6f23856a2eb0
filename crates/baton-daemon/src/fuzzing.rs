//! The API's router for a fuzzer to drive in-process: [`app_for`] builds
//! the daemon's own router ([`crate::api`], behind its guard and its error
//! layer) on the configuration at a path, as `baton daemon` would start on
//! it, without a socket, a clock task or a signal handler.
//!
//! What it never does: start a job. Its worker binary cannot exist
//! (`/dev/null/baton`), so a run asked for (`POST /v1/jobs/JOB/run`, a
//! tick) fails to start and no command of any configuration, however it
//! got there, is executed. Everything else is the daemon's: the reads, the
//! ledger and the state directory, the drop-ins `PUT` writes, the reloads.
//!
//! Compiled only with the `fuzzing` feature, which no build of baton turns
//! on; the fuzz targets in `fuzz/` do.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use baton_lease::Clock;
use baton_sched::config::{Overrides, Snapshot};

use crate::state::{Daemon, Settings};

/// Why `baton daemon` would refuse to start on a configuration
/// ([`app_for`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Unservable {
    /// The configuration cannot be read, or is invalid.
    #[error(transparent)]
    Config(#[from] baton_sched::config::ConfigError),
    /// Its `[daemon]` settings cannot be served.
    #[error(transparent)]
    Settings(#[from] crate::SettingsError),
    /// Its state directory cannot be prepared.
    #[error(transparent)]
    State(#[from] baton_sched::ops::tick::Unprepared),
}

/// The daemon's router on the configuration at `config_path` (absolute),
/// its time read from `clock`, its environment ignored (no `BATON_<KEY>`
/// applies). A request without connection information is judged as a TCP
/// caller's, from the address `[daemon] listen` names.
///
/// # Errors
///
/// What `baton daemon` would refuse to start on: a configuration that
/// cannot be read or is invalid, `[daemon]` settings it cannot serve (an
/// unreadable `token_file`), or a state directory it cannot prepare.
///
/// # Example
///
/// ```no_run
/// use std::sync::Arc;
///
/// let app = baton_daemon::fuzzing::app_for(
///     std::path::Path::new("/tmp/fuzz/baton.toml"),
///     Arc::new(baton_lease::SystemClock),
/// )?;
/// # Ok::<(), baton_daemon::fuzzing::Unservable>(())
/// ```
pub fn app_for(config_path: &Path, clock: Arc<dyn Clock>) -> Result<axum::Router, Unservable> {
    let over = Overrides::default();
    let snapshot = Snapshot::read(config_path)?;
    let config = snapshot.load(&over)?;
    let settings = Settings::of(&config, None)?;
    baton_sched::ops::tick::prepare(&config)?;
    let opts = crate::Options {
        config_path: config_path.to_owned(),
        state_dir: None,
        listen: None,
        exe: PathBuf::from("/dev/null/baton"),
        log_format_json: false,
    };
    let bound = vec![
        settings
            .listen
            .addr()
            .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 8677))),
    ];
    let d = Daemon::new(opts, over, snapshot, config, settings, bound, clock);
    Ok(crate::api::app(Arc::new(d)))
}
