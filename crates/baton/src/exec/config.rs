//! `baton exec`'s second stage: parsed arguments become a validated
//! configuration, or a usage error that names the option and what to do.
//! Nothing runs and nothing is created before this succeeds, except the state
//! directory a lock name needs.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use baton_sched::config::{InvalidEndpoint, OtlpEndpoint};
use baton_sched::engine::trace::TraceParent;
use baton_sched::state::state_dir;
use baton_store::words::AlertKind;

use crate::cli::ExecArgs;

/// A validated `baton exec`.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// The lock's name, when given by name.
    pub name: Option<String>,
    /// The lock file, absolute.
    pub lock: PathBuf,
    /// How long to wait for the lock.
    pub wait: Option<Duration>,
    /// The lease's TTL.
    pub ttl: Duration,
    /// The longest a renewal waits for the file's mutex.
    pub mutex_wait: Duration,
    /// The hard limit.
    pub timeout: Option<Duration>,
    /// The soft budget.
    pub max_runtime: Option<Duration>,
    /// Between the first signal and SIGKILL.
    pub kill_grace: Duration,
    /// The first signal of a stop.
    pub signal: i32,
    /// The judge's grace for holders it cannot check.
    pub takeover_grace: Duration,
    /// v2's stale threshold.
    pub v2_stale_after: Duration,
    /// The busy exit code.
    pub busy_exit: u8,
    /// The alert command.
    pub alert_command: Option<String>,
    /// The kinds that alert.
    pub alert_on: Vec<AlertKind>,
    /// No stderr lines for alerts.
    pub quiet: bool,
    /// Stderr lines for events that do not alert.
    pub verbose: bool,
    /// A delegated cgroup directory.
    pub cgroup: Option<PathBuf>,
    /// The run id.
    pub run_id: String,
    /// Run the command in a PID namespace of its own.
    pub contain: bool,
    /// Where the run's spans are posted (`BATON_OTLP_ENDPOINT`), if
    /// anywhere.
    pub otlp: Option<OtlpEndpoint>,
    /// The trace context it was started in (`TRACEPARENT`), when valid.
    pub trace_parent: Option<TraceParent>,
    /// The command.
    pub command: Vec<OsString>,
}

fn dur(what: &str, s: &str) -> Result<Duration, String> {
    baton_sched::units::parse_duration(s).map_err(|e| format!("--{what}: {e}"))
}

/// A duration where 0 means "none", as `timeout 0` does.
fn limit(what: &str, v: Option<String>) -> Result<Option<Duration>, String> {
    Ok(v.map(|s| dur(what, &s))
        .transpose()?
        .filter(|d| !d.is_zero()))
}

/// The shell `-c CMD` runs: `$SHELL`, as `flock -c` does (a crontab's
/// `SHELL=/bin/bash` is honoured), else `/bin/sh` when it is unset or empty.
fn shell() -> OsString {
    std::env::var_os("SHELL")
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".into())
}

/// The variable `baton exec` reads its trace collector from: it reads no
/// configuration file, so the key's variable is its only setting.
fn otlp_variable() -> String {
    baton_sched::config::env_name("otlp_endpoint")
}

/// [`otlp_variable`]'s endpoint, checked; `None` when it is unset or empty.
fn otlp_endpoint() -> Result<Option<OtlpEndpoint>, InvalidEndpoint> {
    match std::env::var_os(otlp_variable()) {
        Some(v) if !v.is_empty() => OtlpEndpoint::parse(&v.to_string_lossy()).map(Some),
        _ => Ok(None),
    }
}

impl ExecConfig {
    /// Validates `args`, resolving a name against the state directory.
    pub fn new(args: ExecArgs, state_dir: Option<&std::path::Path>) -> Result<Self, String> {
        let ttl = dur("ttl", &args.ttl)?;
        let kill_grace = dur("kill-grace", &args.kill_grace)?;
        let takeover_grace = dur("takeover-grace", &args.takeover_grace)?;
        baton_runner::check_self_fencing(
            ttl,
            baton_runner::mutex_wait_for(ttl),
            kill_grace,
            takeover_grace,
            ("--ttl", "--kill-grace", "--takeover-grace"),
        )
        .map_err(|e| e.to_string())?;
        let signal = baton_runner::signal_number(&args.signal).ok_or_else(|| {
            format!(
                "--signal {:?}: not a signal; use a name such as TERM, INT, HUP, KILL, or a number",
                args.signal
            )
        })?;
        let timeout = limit("timeout", args.timeout)?;
        let max_runtime = limit("max-runtime", args.max_runtime)?;
        let wait = args.wait.map(|s| dur("wait", &s)).transpose()?;
        let v2_stale_after = dur("v2-stale-after", &args.v2_stale_after)?;
        if args.busy_exit == 0 {
            return Err(
                "--busy-exit: 0 would report a skipped run as a success; choose 1 to 255".into(),
            );
        }
        let alert_on = match &args.alert_on {
            Some(list) => crate::alert::parse_list(list).map_err(|e| format!("--alert-on: {e}"))?,
            None => crate::alert::defaults(),
        };
        let command = match (args.shell, args.command) {
            (Some(cmd), _) => vec![shell(), "-c".into(), cmd.into()],
            (None, c) if !c.is_empty() => c,
            (None, _) => {
                return Err(
                    "no command given: baton exec --name NAME -- COMMAND [ARGS...], or \
                            baton exec --name NAME -c 'SHELL COMMAND'"
                        .into(),
                );
            }
        };
        let run_id = match args.run_id {
            Some(r) if r.len() <= 128 && baton_lease::record::is_valid_value(&r) => r,
            Some(r) => {
                return Err(format!(
                    "--run-id {r:?}: use 1 to 128 printable ASCII characters, no spaces"
                ));
            }
            None => baton_lease::Token::fresh()
                .map_err(|e| format!("failed to read random bytes for a run id: {e}"))?
                .to_string(),
        };
        let otlp = otlp_endpoint().map_err(|e| format!("{} {e}", otlp_variable()))?;
        let trace_parent = otlp.as_ref().and_then(|_| TraceParent::from_env());
        let (name, lock) = match (args.name, args.lock) {
            (Some(name), None) => {
                state_dir::check_name(&name).map_err(|e| e.to_string())?;
                let dir = state_dir::resolve(state_dir).map_err(|e| e.to_string())?;
                let locks = state_dir::locks_dir(&dir).map_err(|e| e.to_string())?;
                let path = state_dir::lock_path(&locks, &name).map_err(|e| e.to_string())?;
                (Some(name), path)
            }
            (None, Some(path)) => (
                None,
                state_dir::lock_file(&path).map_err(|e| e.to_string())?,
            ),
            _ => return Err("give exactly one of --name and --lock".into()),
        };
        Ok(Self {
            name,
            lock,
            wait,
            ttl,
            mutex_wait: baton_runner::mutex_wait_for(ttl),
            timeout,
            max_runtime,
            kill_grace,
            signal,
            takeover_grace,
            v2_stale_after,
            busy_exit: args.busy_exit,
            alert_command: args.alert_command,
            alert_on,
            quiet: args.quiet,
            verbose: args.verbose,
            cgroup: args.cgroup,
            run_id,
            contain: !args.no_contain,
            command,
            otlp,
            trace_parent,
        })
    }

    /// The lock, configured for this run.
    pub fn lock(&self) -> baton_lease::Lock {
        let opts = baton_lease::Options {
            ttl: self.ttl,
            mutex_wait: self.mutex_wait,
            policy: baton_lease::Policy {
                takeover_grace: self.takeover_grace,
                v2_stale_after: self.v2_stale_after,
                ..baton_lease::Policy::default()
            },
            fsync: false,
        };
        baton_lease::Lock::new(&self.lock).with_options(opts)
    }

    /// How the lock is named in messages.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| self.lock.display().to_string())
    }
}
