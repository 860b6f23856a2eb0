//! baton-daemon: seeds 000/001's station without their defects. One
//! long-running process with an in-process clock, an HTTP tick and API,
//! jobs managed over HTTP, a status page and Prometheus metrics.
//!
//! What it owns: the configuration in force (reloaded whole or not at
//! all, `state`), the clock (`clock`), the HTTP surface (`api`,
//! guarded by `guard`) and the worker processes it starts
//! (`worker`); it serves on TCP and on a Unix socket (`socket`) whose
//! callers are known by their credentials (`peer`). What it never does:
//! hold a lease, run a step or write a lock file, or let a caller it has
//! not authenticated change anything. Every run is a `baton __run` process
//! in a process group of its own, the same code `baton tick` forks, so a
//! crash of the daemon leaves its runs to speak for themselves, and `baton
//! tick` from cron on the same state directory arbitrates with it through
//! the lease's claims and the ledger only (`DESIGN.md`, "The daemon").
//!
//! Map: [`serve`] starts everything and shuts it down; `server` serves
//! the API on each listener, a connection at a time (`connection`, which
//! answers even a request hyper cannot parse with the API's JSON:
//! `held`, `malformed`); `tick` decides and starts; `notify` speaks to
//! systemd.

mod api;
mod capped;
mod clock;
mod connection;
mod error;
mod exchange;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod guard;
mod held;
mod holder;
mod jobs_api;
mod limits;
mod listen;
mod login;
mod malformed;
mod notify;
mod offload;
mod peer;
mod preflight;
mod reload;
mod server;
mod session;
mod socket;
mod state;
mod stopping;
mod tick;
mod trim;
mod worker;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use baton_lease::Clock;
use baton_sched::config::{Overrides, Snapshot};

pub use preflight::{Preflight, PreflightError, preflight};
pub use socket::BadGroup;
pub use state::{Settings, SettingsError};

/// How the daemon was asked to start.
#[derive(Debug, Clone)]
pub struct Options {
    /// The configuration file, absolute.
    pub config_path: PathBuf,
    /// `--state-dir`, passed on to every run.
    pub state_dir: Option<PathBuf>,
    /// `--listen`, over `[daemon] listen`.
    pub listen: Option<baton_sched::config::Listen>,
    /// The baton binary the runs execute (`baton __run`).
    pub exe: PathBuf,
    /// Whether the binary writes its log as JSON lines (`--log-format
    /// json`): each run is told to write its own the same way (`baton __run
    /// --log-format json`), so the daemon's stderr, which its runs share,
    /// stays one format.
    pub log_format_json: bool,
}

/// How serving ended; the binary picks the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Shut down cleanly, on SIGTERM or SIGINT.
    Stopped,
    /// The configuration cannot be served (said on stderr).
    Unservable,
    /// The address cannot be resolved or bound, or the runtime, the socket
    /// or the signal handlers cannot start (said on stderr).
    Failed,
}

/// Serves until SIGTERM or SIGINT; how it ended.
pub fn serve(opts: Options, clock: Arc<dyn Clock>) -> Ending {
    let over = Overrides::from_env(opts.state_dir.clone());
    let snapshot = match Snapshot::read(&opts.config_path) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("{e}");
            return Ending::Unservable;
        }
    };
    let config = match snapshot.load(&over) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("{e}");
            return Ending::Unservable;
        }
    };
    let settings = match Settings::of(&config, opts.listen.clone()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("{e}");
            return Ending::Unservable;
        }
    };
    if let Err(e) = baton_sched::ops::tick::prepare(&config) {
        tracing::error!("{e}");
        return Ending::Unservable;
    }
    // The daemon's own runtime, on its main thread, where its signals are
    // handled; the threads of its blocking pool never take them.
    let built = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_start(baton_store::held::quiet_thread)
        .max_blocking_threads(8)
        .build();
    let runtime = match built {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("failed to start the runtime: {e}");
            return Ending::Failed;
        }
    };
    runtime.block_on(run(opts, over, snapshot, config, settings, clock))
}

async fn run(
    opts: Options,
    over: Overrides,
    snapshot: Snapshot,
    config: baton_sched::config::Config,
    settings: Settings,
    clock: Arc<dyn Clock>,
) -> Ending {
    let listeners = match listen::bind(&settings.listen, settings.token.as_deref()).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("{}", e.message);
            return e.ending;
        }
    };
    let bound: Vec<SocketAddr> = listeners
        .iter()
        .filter_map(|l| l.local_addr().ok())
        .collect();
    let group = settings.socket_group.as_ref().map(|(_, gid)| *gid);
    let (unix, socket) = match socket::bind(&settings.socket, group) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("{e}");
            return Ending::Failed;
        }
    };
    if let Some((dir, mode)) = group.and_then(|gid| socket::unreachable_by_group(&socket.path, gid))
    {
        tracing::warn!(
            "members of [daemon] socket_group cannot reach unix:{}: the directory {} (mode \
             {mode:04o}) does not let them through; give it the search bit (`chmod o+x`, or the \
             group's with `chgrp` and `chmod g+x`), or set [daemon] socket in a directory they \
             may pass through",
            socket.path.display(),
            dir.display()
        );
    }
    let d = Arc::new(state::Daemon::new(
        opts, over, snapshot, config, settings, bound, clock,
    ));
    let mut term = match signals() {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("failed to install signal handlers: {e}");
            socket.remove();
            return Ending::Failed;
        }
    };
    tracing::info!(
        "listening on unix:{} (changes by {})",
        socket.path.display(),
        d.trust.describe()
    );
    if d.settings().token.is_none() {
        tracing::warn!(
            "the TCP API is read-only: there is no [daemon] token_file, and any local user can \
             reach {}; change things over unix:{}, or set token_file",
            d.bound_text(),
            socket.path.display()
        );
    }
    for a in &d.bound {
        tracing::info!(
            "listening on http://{a} ({}config {}, state {})",
            match &d.settings().listen {
                l @ baton_sched::config::Listen::Host { .. } => format!("{l}; "),
                baton_sched::config::Listen::Addr(_) => String::new(),
            },
            d.opts.config_path.display(),
            d.current().config.settings.state_dir.value.display()
        );
    }
    let clock_task = tokio::spawn(clock::run(Arc::clone(&d)));
    let watchdog = tokio::spawn(notify::watchdog());
    notify::send("READY=1");
    let tcp_open = Arc::new(tokio::sync::Semaphore::new(capped::TCP_CONNECTIONS));
    let tcp_servers: Vec<_> = listeners
        .into_iter()
        .map(|l| server::spawn(capped::Capped::new(l, Arc::clone(&tcp_open)), &d))
        .collect();
    let socket_open = Arc::new(tokio::sync::Semaphore::new(capped::SOCKET_CONNECTIONS));
    let unix_server = server::spawn(capped::Capped::new(unix, socket_open), &d);
    // Signals: SIGHUP reloads; SIGTERM or SIGINT stops.
    loop {
        tokio::select! {
            _ = term.hup.recv() => {
                let _ = d.reload("SIGHUP").await;
            }
            _ = term.term.recv() => break,
            _ = term.int.recv() => break,
        }
    }
    notify::send("STOPPING=1");
    tracing::info!("stopping: no more ticks or requests; waiting for runs in flight");
    d.stopping.store(true, Ordering::SeqCst);
    d.stop_requested.notify_waiters();
    d.replan.notify_one();
    let _ = clock_task.await;
    watchdog.abort();
    let grace = d.settings().shutdown_grace;
    if !d.wait_idle(grace).await {
        let n = d.signal_workers(rustix::process::Signal::TERM);
        tracing::warn!(
            "{n} run(s) still in flight after {}: stopping them (whole tree) before their leases \
             are released",
            baton_sched::units::show_duration(grace)
        );
        // A stopped run releases only once its tree is gone: wait for it.
        // A worker stopped by a signal (SIGSTOP, a debugger's attach, a
        // terminal's SIGTSTP) acts on the SIGTERM only once continued: it is
        // continued now, and again each second it is still in flight (it may
        // be stopped again), as `baton exec` continues a stopped command it
        // passes a signal on to.
        d.signal_workers(rustix::process::Signal::CONT);
        while !d.wait_idle(Duration::from_secs(1)).await {
            d.signal_workers(rustix::process::Signal::CONT);
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        for s in tcp_servers {
            let _ = s.await;
        }
        let _ = unix_server.await;
    })
    .await;
    socket.remove();
    tracing::info!("stopped");
    Ending::Stopped
}

struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

fn signals() -> std::io::Result<Signals> {
    use tokio::signal::unix::{SignalKind, signal};
    Ok(Signals {
        term: signal(SignalKind::terminate())?,
        int: signal(SignalKind::interrupt())?,
        hup: signal(SignalKind::hangup())?,
    })
}
