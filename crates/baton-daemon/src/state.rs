//! The daemon's state: the configuration in force and its settings, the
//! runs in flight, and the switches that stop it.
//!
//! The configuration is swapped whole ([`Daemon::reload`]): a new one is
//! validated first and refused when invalid, and runs in flight keep the
//! one they started with (each worker got its own copy on stdin). The
//! in-flight map only saves processes (a start the daemon already has a
//! worker for is not spawned again); the lease's claim and the ledger are
//! what make an occurrence run once.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use baton_lease::Clock;
use baton_sched::config::{Config, Listen, Overrides, Snapshot};
use baton_sched::engine::run::Start;
use tokio::sync::{Notify, Semaphore};

use crate::Options;

/// The `[daemon]` settings, with `--listen` applied.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where to listen: an address, or a host name resolved at the start.
    pub listen: Listen,
    /// The bearer token (from `token_file`), if any.
    pub token: Option<String>,
    /// The Unix socket (`[daemon] socket`, or `STATE_DIR/daemon.sock`).
    pub socket: PathBuf,
    /// `[daemon] socket_group`, as given and as a number.
    pub socket_group: Option<(String, u32)>,
    /// How long runs may finish after SIGTERM.
    pub shutdown_grace: Duration,
}

/// Why the daemon cannot serve with a configuration's `[daemon]` settings.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// An address off loopback, without a token.
    #[error(
        "refusing to listen on {0} without a token: anyone who can reach it could read every \
         job, and nobody could change one over TCP; set [daemon] token_file (a file holding a \
         secret), or listen on loopback (127.0.0.1)"
    )]
    Exposed(SocketAddr),
    /// The token file cannot be used: unreadable, not a regular file,
    /// another user's or open to others, empty, or too long
    /// ([`baton_sched::config::secret`]).
    #[error("token_file: {0}")]
    Token(#[from] baton_sched::config::secret::SecretError),
    /// The token is not one line of text: not UTF-8, or it holds a control
    /// character (a line break, a NUL), which no `Authorization` header
    /// can carry, so no request could ever match it.
    #[error(
        "token_file {}: the token is not one line of UTF-8 text (no line breaks, NULs or other \
         control characters, which no request's header can carry): write the token alone on \
         one line",
        path.display()
    )]
    TokenNotText {
        /// The token file.
        path: PathBuf,
    },
    /// `socket_group` names no group.
    #[error(transparent)]
    Group(#[from] crate::socket::BadGroup),
}

impl Settings {
    /// The settings of `config`, `listen` over its `[daemon] listen`.
    ///
    /// # Errors
    ///
    /// [`SettingsError`]: a non-loopback address without a token, a token
    /// file that cannot be used, or a `socket_group` that names no group.
    pub fn of(config: &Config, listen: Option<Listen>) -> Result<Self, SettingsError> {
        let d = &config.daemon;
        let listen = listen.unwrap_or_else(|| d.listen.value.clone());
        let token = match &d.token_file.value {
            None => None,
            Some(path) => Some(read_token(path)?),
        };
        let socket_group = match &d.socket_group.value {
            None => None,
            Some(g) => Some((g.clone(), crate::socket::group_id(g)?)),
        };
        let s = Self {
            listen,
            token,
            socket: config.daemon_socket(),
            socket_group,
            shutdown_grace: d.shutdown_grace.value,
        };
        // A host name is judged by what it resolves to, when the daemon
        // starts (`crate::listen`).
        if let Some(addr) = s.listen.addr()
            && exposed(addr, s.token.as_deref())
        {
            return Err(SettingsError::Exposed(addr));
        }
        Ok(s)
    }
}

/// Whether a daemon bound to `addr` with `token` would answer anyone who
/// can reach it: an address off loopback without a token.
pub(crate) fn exposed(addr: SocketAddr, token: Option<&str>) -> bool {
    !addr.ip().is_loopback() && token.is_none()
}

/// The token in `path`, read as every secret file is (never through a
/// link, a pipe or a device; only a file of this user's or root's that
/// nobody else may read or write, in directories nobody else may
/// rearrange): a token another user can read, write or swap lets them run
/// any command as this daemon's user.
fn read_token(path: &std::path::Path) -> Result<String, SettingsError> {
    let bytes = baton_sched::config::secret::read(path)?;
    let not_text = || SettingsError::TokenNotText {
        path: path.to_owned(),
    };
    let token = String::from_utf8(bytes).map_err(|_| not_text())?;
    if token.chars().any(char::is_control) {
        return Err(not_text());
    }
    if token.len() < 16 {
        tracing::warn!(
            "warning: the token in {} is short ({} characters): use 16 or more random ones",
            path.display(),
            token.len()
        );
    }
    Ok(token)
}

/// A configuration in force.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// Its files' text, handed to each run.
    pub(crate) snapshot: Snapshot,
    /// What they mean.
    pub(crate) config: Config,
}

/// A run in flight, started by this daemon: its worker's pid (what the
/// shutdown signals).
#[derive(Debug, Clone)]
pub(crate) struct Flight {
    pub(crate) pid: u32,
}

/// What the in-flight map is keyed by: the job and what the run is for.
pub(crate) type Key = (String, String);

pub(crate) fn key(job: &str, start: Start, serial: u64) -> Key {
    let what = match start {
        Start::Scheduled(at) => format!("at:{at}"),
        Start::Queue => "queue".to_owned(),
        Start::Manual => format!("manual:{serial}"),
    };
    (job.to_owned(), what)
}

/// The daemon.
pub(crate) struct Daemon {
    pub(crate) opts: Options,
    pub(crate) over: Overrides,
    settings: RwLock<Arc<Settings>>,
    /// The TCP addresses listened on (one, or each of a host name's),
    /// until the next start.
    pub(crate) bound: Vec<SocketAddr>,
    /// The Unix socket listened on, until the next start.
    pub(crate) socket: PathBuf,
    /// Who may change things over the socket, until the next start.
    pub(crate) trust: crate::peer::Trust,
    /// The `listen` and `max_parallel` the daemon started with: changing
    /// either takes a restart.
    pub(crate) started_with: (Listen, u32),
    pub(crate) clock: Arc<dyn Clock>,
    loaded: RwLock<Arc<Loaded>>,
    pub(crate) inflight: Mutex<HashMap<Key, Flight>>,
    pub(crate) serial: std::sync::atomic::AtomicU64,
    /// One tick at a time within the daemon.
    pub(crate) ticking: tokio::sync::Mutex<()>,
    /// Bounds the runs in flight (`max_parallel`).
    pub(crate) slots: Arc<Semaphore>,
    /// Wakes the clock to plan again (a reload, a stop).
    pub(crate) replan: Notify,
    /// Fires when a run ends.
    pub(crate) ended: Notify,
    /// Fires once, on SIGTERM or SIGINT.
    pub(crate) stop_requested: Notify,
    pub(crate) stopping: AtomicBool,
    /// Serialises reloads and drop-in writes.
    pub(crate) reloading: tokio::sync::Mutex<()>,
    /// The ledger the ticks keep open between them.
    kept: Mutex<Option<Kept>>,
    /// Browsers logged in with the token (`GET /login`).
    pub(crate) sessions: crate::session::Sessions,
    /// How far the clock the last tick decided by (a shared store's) was
    /// ahead of this host's, in microseconds: the clock plans by it.
    pub(crate) offset_us: std::sync::atomic::AtomicI64,
}

/// A ledger kept open, and where it was opened: a new state directory or
/// another store is opened afresh. A file at the same path that is no
/// longer the one it opened (moved aside by any process's recovery,
/// removed, replaced) is the kept ledger's own to follow: it moves to the
/// file at the path and tells which it left, so that a lost one is alerted
/// by the daemon too (`Records::take_recovered`).
struct Kept {
    ledger: Box<dyn baton_store::ledger::Records>,
    location: String,
}

impl Daemon {
    pub(crate) fn new(
        opts: Options,
        over: Overrides,
        snapshot: Snapshot,
        config: Config,
        settings: Settings,
        bound: Vec<SocketAddr>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let started_with = (settings.listen.clone(), config.settings.max_parallel.value);
        let slots = usize::try_from(config.settings.max_parallel.value).unwrap_or(64);
        Self {
            opts,
            over,
            socket: settings.socket.clone(),
            trust: crate::peer::Trust::of_this_process(settings.socket_group.clone()),
            settings: RwLock::new(Arc::new(settings)),
            bound,
            started_with,
            clock,
            loaded: RwLock::new(Arc::new(Loaded { snapshot, config })),
            inflight: Mutex::new(HashMap::new()),
            serial: std::sync::atomic::AtomicU64::new(0),
            ticking: tokio::sync::Mutex::new(()),
            slots: Arc::new(Semaphore::new(slots.max(1))),
            replan: Notify::new(),
            ended: Notify::new(),
            stop_requested: Notify::new(),
            stopping: AtomicBool::new(false),
            reloading: tokio::sync::Mutex::new(()),
            kept: Mutex::new(None),
            sessions: crate::session::Sessions::default(),
            offset_us: std::sync::atomic::AtomicI64::new(0),
        }
    }

    /// Whether every TCP address listened on is loopback.
    pub(crate) fn loopback_only(&self) -> bool {
        self.bound.iter().all(|a| a.ip().is_loopback())
    }

    /// The TCP addresses listened on, for messages: `127.0.0.1:8677`, or
    /// `127.0.0.1:8677 and [::1]:8677`.
    pub(crate) fn bound_text(&self) -> String {
        let all: Vec<String> = self.bound.iter().map(ToString::to_string).collect();
        all.join(" and ")
    }

    /// Now on the clock the ticks decide by (a shared store's, as the last
    /// tick measured it; this host's with files).
    pub(crate) fn decision_now(&self) -> jiff::Timestamp {
        let offset = jiff::SignedDuration::from_micros(
            self.offset_us.load(std::sync::atomic::Ordering::SeqCst),
        );
        let now = self.clock.wall();
        now.checked_add(offset).unwrap_or(now)
    }

    /// `at` on this host's clock (what the timer is armed by), for an
    /// instant on the clock the ticks decide by.
    pub(crate) fn local_instant(&self, at: jiff::Timestamp) -> jiff::Timestamp {
        let offset = jiff::SignedDuration::from_micros(
            self.offset_us.load(std::sync::atomic::Ordering::SeqCst),
        );
        at.checked_sub(offset).unwrap_or(at)
    }

    /// The ledger the last tick kept, if it is still on the store
    /// `config` names (for files, the same path).
    pub(crate) fn take_ledger(
        &self,
        config: &baton_sched::config::Config,
    ) -> Option<Box<dyn baton_store::ledger::Records>> {
        let kept = match self.kept.lock() {
            Ok(mut g) => g.take(),
            Err(p) => p.into_inner().take(),
        }?;
        let location = baton_sched::store::open(config).ok()?.location();
        (kept.location == location).then_some(kept.ledger)
    }

    /// Keeps `ledger` (open on `config`'s store) for the next tick.
    pub(crate) fn keep_ledger(
        &self,
        config: &baton_sched::config::Config,
        ledger: Box<dyn baton_store::ledger::Records>,
    ) {
        let Ok(store) = baton_sched::store::open(config) else {
            return;
        };
        let k = Kept {
            ledger,
            location: store.location(),
        };
        match self.kept.lock() {
            Ok(mut g) => *g = Some(k),
            Err(p) => *p.into_inner() = Some(k),
        }
    }

    /// The `[daemon]` settings in force.
    pub(crate) fn settings(&self) -> Arc<Settings> {
        match self.settings.read() {
            Ok(g) => Arc::clone(&g),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    /// Puts new `[daemon]` settings in force (the address stays the bound
    /// one until a restart). A new token, or none, ends every browser
    /// session: each was opened with the old one.
    ///
    /// The sessions end after the new token is in force: a login that
    /// compared the old one either opened its session before (and it ends
    /// here) or finds the token changed when it checks again (and closes
    /// it).
    pub(crate) fn set_settings(&self, s: Settings) {
        let new = Arc::new(s);
        let old = match self.settings.write() {
            Ok(mut g) => std::mem::replace(&mut *g, Arc::clone(&new)),
            Err(p) => std::mem::replace(&mut *p.into_inner(), Arc::clone(&new)),
        };
        if new.token != old.token {
            self.sessions.clear();
        }
    }

    /// The configuration in force.
    pub(crate) fn current(&self) -> Arc<Loaded> {
        // OK because no code panics while holding the lock (a poisoned lock
        // still holds a whole value: the swap is one assignment).
        match self.loaded.read() {
            Ok(g) => Arc::clone(&g),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    /// Puts `loaded` in force and wakes the clock.
    pub(crate) fn install(&self, loaded: Loaded) {
        let new = Arc::new(loaded);
        match self.loaded.write() {
            Ok(mut g) => *g = new,
            Err(p) => *p.into_inner() = new,
        }
        // One waiter, the clock: a permit is kept if it is busy ticking, so
        // a new configuration is never missed.
        self.replan.notify_one();
    }

    pub(crate) fn flights(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Flight>> {
        match self.inflight.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Waits until no run is in flight, at most `limit`; whether none is.
    pub(crate) async fn wait_idle(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let ended = self.ended.notified();
            if self.flights().is_empty() {
                return true;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return self.flights().is_empty();
            }
        }
    }

    /// Sends `sig` to every run in flight; how many.
    pub(crate) fn signal_workers(&self, sig: rustix::process::Signal) -> usize {
        let pids: Vec<u32> = self.flights().values().map(|f| f.pid).collect();
        for pid in &pids {
            if let Some(p) = i32::try_from(*pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(p, sig);
            }
        }
        pids.len()
    }

    /// The state directory flag the runs get.
    pub(crate) fn state_flag(&self) -> Option<&PathBuf> {
        self.opts.state_dir.as_ref()
    }
}
