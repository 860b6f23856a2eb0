//! `baton exec`'s second stage: parsed arguments become a validated
//! configuration, or a usage error that names the option and what to do.
//! Nothing runs and nothing is created before this succeeds, except the state
//! directory a lock name needs.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::ExecArgs;
use crate::duration;
use crate::state_dir;

/// The longest a renewal may wait for the file's mutex, as a fraction of the
/// TTL and in absolute terms.
const MUTEX_WAIT_CAP: Duration = Duration::from_secs(1);
/// The supervisor's longest sleep between checks.
pub const TICK: Duration = Duration::from_millis(100);
/// The clock skew allowed between hosts judging each other.
pub const SKEW_ALLOWANCE: Duration = Duration::from_secs(1);
/// The shortest TTL accepted.
pub const MIN_TTL: Duration = Duration::from_millis(100);

/// A validated `baton exec`.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// The lock's name, when given by name.
    pub name: Option<String>,
    /// The lock file.
    pub lock: PathBuf,
    /// How long to wait for the lock.
    pub wait: Option<Duration>,
    /// The lease's TTL.
    pub ttl: Duration,
    /// How often to renew (ttl / 3).
    pub renew_every: Duration,
    /// The longest a renewal waits for the file's mutex.
    pub mutex_wait: Duration,
    /// The hard limit.
    pub timeout: Option<Duration>,
    /// The soft budget.
    pub max_runtime: Option<Duration>,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// The judge's grace for holders it cannot check.
    pub takeover_grace: Duration,
    /// v2's stale threshold.
    pub v2_stale_after: Duration,
    /// The busy exit code.
    pub busy_exit: u8,
    /// The alert command.
    pub alert_command: Option<String>,
    /// The run id.
    pub run_id: String,
    /// The command.
    pub command: Vec<OsString>,
}

fn dur(what: &str, s: &str) -> Result<Duration, String> {
    duration::parse(s).map_err(|e| format!("--{what}: {e}"))
}

impl ExecConfig {
    /// Validates `args`, resolving a name against the state directory.
    pub fn new(args: ExecArgs, state_dir: Option<&std::path::Path>) -> Result<Self, String> {
        let ttl = dur("ttl", &args.ttl)?;
        if ttl < MIN_TTL {
            return Err(format!(
                "--ttl: {} is shorter than the minimum, {}",
                duration::show(ttl),
                duration::show(MIN_TTL)
            ));
        }
        let kill_grace = dur("kill-grace", &args.kill_grace)?;
        let takeover_grace = dur("takeover-grace", &args.takeover_grace)?;
        let mutex_wait = (ttl / 10).min(MUTEX_WAIT_CAP);
        let needed = kill_grace + mutex_wait + TICK + SKEW_ALLOWANCE;
        if needed > takeover_grace {
            return Err(format!(
                "--kill-grace {} is too long for --takeover-grace {}: a holder that stops renewing \
                 must have killed its job (kill-grace + min(ttl/10, 1s) + 1.1s = {}) before another \
                 host may take its lease; shorten --kill-grace or lengthen --takeover-grace",
                duration::show(kill_grace),
                duration::show(takeover_grace),
                duration::show(needed)
            ));
        }
        let positive = |what: &str, v: Option<String>| -> Result<Option<Duration>, String> {
            match v.map(|s| dur(what, &s)).transpose()? {
                Some(d) if d.is_zero() => Err(format!("--{what}: must be longer than zero")),
                other => Ok(other),
            }
        };
        let timeout = positive("timeout", args.timeout)?;
        let max_runtime = positive("max-runtime", args.max_runtime)?;
        let wait = args.wait.map(|s| dur("wait", &s)).transpose()?;
        let v2_stale_after = dur("v2-stale-after", &args.v2_stale_after)?;
        if args.busy_exit == 0 {
            return Err(
                "--busy-exit: 0 would report a skipped run as a success; choose 1 to 255".into(),
            );
        }
        let (name, lock) = match (args.name, args.lock) {
            (Some(name), None) => {
                state_dir::check_name(&name).map_err(|e| e.to_string())?;
                let dir = state_dir::resolve(state_dir).map_err(|e| e.to_string())?;
                let locks = state_dir::locks_dir(&dir).map_err(|e| e.to_string())?;
                let path = state_dir::lock_path(&locks, &name).map_err(|e| e.to_string())?;
                (Some(name), path)
            }
            (None, Some(path)) => (None, path),
            _ => return Err("give exactly one of --name and --lock".into()),
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
        if args.command.is_empty() {
            return Err("no command given: baton exec --name NAME -- COMMAND [ARGS...]".into());
        }
        Ok(Self {
            name,
            lock,
            wait,
            ttl,
            renew_every: ttl / 3,
            mutex_wait,
            timeout,
            max_runtime,
            kill_grace,
            takeover_grace,
            v2_stale_after,
            busy_exit: args.busy_exit,
            alert_command: args.alert_command,
            run_id,
            command: args.command,
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
            },
            fsync: false,
        };
        baton_lease::Lock::new(&self.lock).with_options(opts)
    }
}
