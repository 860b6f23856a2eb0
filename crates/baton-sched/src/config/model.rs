//! The validated configuration: what every command runs on. Every value
//! carries its [`Source`], so `baton config` can say where it came from.
//! Nothing here can be invalid: [`super::load`] refuses a file before a
//! value of this module exists.

use std::path::PathBuf;
use std::time::Duration;

use jiff::tz::TimeZone;

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// baton's default.
    Default,
    /// A line of a configuration file.
    File {
        /// The file (shared by every value read from it).
        path: std::sync::Arc<std::path::Path>,
        /// The line (1-based).
        line: u32,
    },
    /// An environment variable (`BATON_RETRIES`).
    Env(String),
    /// A command-line option (`--state-dir`).
    Flag(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File { path, line } => write!(f, "{}:{line}", path.display()),
            Source::Env(name) | Source::Flag(name) => f.write_str(name),
        }
    }
}

/// A value and where it came from. `inherited` is set on a job's value that
/// it took from `[scheduler]` (whose source `source` then names).
#[derive(Debug, Clone, PartialEq)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub source: Source,
    /// Whether a job took it from `[scheduler]`.
    pub inherited: bool,
}

impl<T> Sourced<T> {
    /// A default value.
    pub fn default_value(value: T) -> Self {
        Self {
            value,
            source: Source::Default,
            inherited: false,
        }
    }

    /// The same value, as a job inherits it.
    pub fn inherit(&self) -> Self
    where
        T: Clone,
    {
        Self {
            value: self.value.clone(),
            source: self.source.clone(),
            inherited: true,
        }
    }

    /// Where it came from, in words: `default`, `FILE:LINE`, `BATON_X`, or
    /// `[scheduler] FILE:LINE` for an inherited value.
    pub fn provenance(&self) -> String {
        if self.inherited {
            format!("[scheduler] {}", self.source)
        } else {
            self.source.to_string()
        }
    }
}

/// A command: a string for `/bin/sh -c`, or a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Run by `/bin/sh -c`.
    Shell(String),
    /// Run directly.
    Argv(Vec<String>),
}

impl Command {
    /// The program and its arguments.
    pub fn argv(&self) -> Vec<String> {
        match self {
            Command::Shell(s) => vec!["/bin/sh".into(), "-c".into(), s.clone()],
            Command::Argv(a) => a.clone(),
        }
    }
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Shell(s) => write!(f, "{s:?}"),
            Command::Argv(a) => write!(f, "{a:?}"),
        }
    }
}

/// What a step does: run a command, or send an HTTP request (through
/// `baton __http`, see [`crate::http`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `run = …`.
    Command(Command),
    /// `http = { url = …, … }`.
    Http(crate::http::HttpRequest),
}

impl Action {
    /// The key it is written under: `run` or `http`.
    pub fn key(&self) -> &'static str {
        match self {
            Action::Command(_) => "run",
            Action::Http(_) => "http",
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Command(c) => c.fmt(f),
            Action::Http(h) => h.fmt(f),
        }
    }
}

/// A time zone and the name it was given by.
#[derive(Debug, Clone)]
pub struct Zone {
    /// The IANA name (`Europe/Berlin`).
    pub name: String,
    /// The zone.
    pub tz: TimeZone,
}

impl PartialEq for Zone {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

/// When a job runs.
#[derive(Debug, Clone, PartialEq)]
pub struct When {
    /// As written: `0 3 * * *`, or `every 15m`.
    pub text: String,
    /// The key it was written under: `schedule` or `every`.
    pub key: &'static str,
    /// The schedule.
    pub schedule: baton_cron::Schedule,
}

/// The values a job takes from `[scheduler]` unless it sets its own.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPolicy {
    /// Extra attempts of a failed step.
    pub retries: Sourced<u32>,
    /// The first delay before a retry; it doubles per attempt.
    pub backoff: Sourced<Duration>,
    /// The longest delay before a retry.
    pub backoff_max: Sourced<Duration>,
    /// Exit codes that are never retried.
    pub no_retry_exit_codes: Sourced<Vec<i32>>,
    /// Each step attempt's limit (`None`: none).
    pub timeout: Sourced<Option<Duration>>,
    /// The lease's TTL.
    pub ttl: Sourced<Duration>,
    /// Between the first signal and SIGKILL when a step is stopped.
    pub kill_grace: Sourced<Duration>,
    /// How long past its TTL a lease that cannot be checked is respected.
    pub takeover_grace: Sourced<Duration>,
    /// The soft budget of a run (`None`: none).
    pub max_runtime: Sourced<Option<Duration>>,
    /// Output kept per step attempt, in bytes.
    pub output_limit: Sourced<u64>,
    /// How late a due occurrence may still start.
    pub catch_up_window: Sourced<Duration>,
    /// What runs after downtime.
    pub catch_up: Sourced<CatchUp>,
    /// The most occurrences one catch-up runs (`catch_up = "all"`).
    pub catch_up_max: Sourced<u32>,
    /// What an occurrence does when the job's run is still in flight.
    pub overlap: Sourced<Overlap>,
    /// Whether each step runs in a PID namespace of its own, so that its
    /// whole tree dies with its supervisor (`baton_runner::StepSpec::contain`).
    pub contain: Sourced<bool>,
}

/// What runs of the occurrences that passed while nothing ran the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatchUp {
    /// The most recent one within the window.
    Latest,
    /// Only one whose time is now (within a minute).
    None,
    /// Every one within the window, oldest first, at most `catch_up_max`.
    All,
}

impl CatchUp {
    /// The word in `baton.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            CatchUp::Latest => "latest",
            CatchUp::None => "none",
            CatchUp::All => "all",
        }
    }
}

/// What an occurrence does when it finds the job's run in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// It is missed (reason `busy`), with an alert.
    Skip,
    /// It waits, and starts when the run ends; at most one waits.
    Queue,
}

impl Overlap {
    /// The word in `baton.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Overlap::Skip => "skip",
            Overlap::Queue => "queue",
        }
    }
}

/// `[scheduler]`: settings of the scheduler, and the defaults of every job.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Where locks, the ledger and the logs live.
    pub state_dir: Sourced<PathBuf>,
    /// The scheduler's zone: dates of the logs, and the default of jobs.
    pub timezone: Sourced<Zone>,
    /// The kill switch.
    pub enabled: Sourced<bool>,
    /// The alert command.
    pub alert_command: Sourced<Option<Command>>,
    /// Runs kept per job in the ledger.
    pub history_keep: Sourced<u32>,
    /// How long dated logs are kept.
    pub log_keep: Sourced<Duration>,
    /// Runs at once in one `tick`.
    pub max_parallel: Sourced<u32>,
    /// The lock every job uses unless it names its own (`None`: each job's
    /// own name).
    pub lock: Sourced<Option<String>>,
    /// Defaults of every job.
    pub policy: RunPolicy,
}

/// Whether a step is a step or a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// Runs in order; a step that still fails stops the steps after it.
    Step,
    /// Runs after the steps whatever they did; never retried.
    Check,
}

impl StepKind {
    /// `step` or `check`.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Step => "step",
            StepKind::Check => "check",
        }
    }
}

/// One step or check of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Its name, unique within the job.
    pub name: String,
    /// Step or check.
    pub kind: StepKind,
    /// What it does: a command, or an HTTP request.
    pub action: Sourced<Action>,
    /// Extra attempts (always 0 for a check).
    pub retries: Sourced<u32>,
    /// First retry delay.
    pub backoff: Sourced<Duration>,
    /// Longest retry delay.
    pub backoff_max: Sourced<Duration>,
    /// Exit codes never retried.
    pub no_retry_exit_codes: Sourced<Vec<i32>>,
    /// Each attempt's limit.
    pub timeout: Sourced<Option<Duration>>,
    /// Between the first signal and SIGKILL.
    pub kill_grace: Sourced<Duration>,
    /// Output kept per attempt.
    pub output_limit: Sourced<u64>,
    /// Variables added to the environment (the job's, then the step's).
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// The line the step's table starts on.
    pub line: u32,
}

/// A job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Its name: `[A-Za-z0-9_.-]{1,64}`.
    pub name: String,
    /// Where `[jobs.NAME]` is written, or the drop-in file
    /// (`jobs.d/NAME.toml`) that defines it.
    pub source: Source,
    /// When it runs.
    pub when: Sourced<When>,
    /// Its zone.
    pub timezone: Sourced<Zone>,
    /// Whether it runs at all.
    pub enabled: Sourced<bool>,
    /// Its lock's name (the job's name unless set).
    pub lock: Sourced<String>,
    /// Its run policy.
    pub policy: RunPolicy,
    /// Its steps, in order.
    pub steps: Vec<Step>,
    /// Its checks, in order.
    pub checks: Vec<Step>,
}

impl Job {
    /// Steps then checks.
    pub fn all_steps(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().chain(&self.checks)
    }
}

/// `[daemon]`: how `baton daemon` serves. Only the daemon reads these;
/// every other command validates them and leaves them alone.
#[derive(Debug, Clone, PartialEq)]
pub struct DaemonSettings {
    /// Where the HTTP API listens (default `127.0.0.1:8677`): an address,
    /// or a host name the daemon resolves when it starts.
    pub listen: Sourced<super::Listen>,
    /// The file holding the bearer token (`None`: no token), made absolute
    /// against the configuration file's directory.
    pub token_file: Sourced<Option<PathBuf>>,
    /// The Unix socket of the API (`None`: `STATE_DIR/daemon.sock`, see
    /// [`Config::daemon_socket`]), made absolute against the configuration
    /// file's directory. Its callers are known by their peer credentials.
    pub socket: Sourced<Option<PathBuf>>,
    /// The group whose members may change things over the socket besides
    /// the daemon's own user and root (a name or a number; `None`: none).
    pub socket_group: Sourced<Option<String>>,
    /// How long a stopping daemon waits for its workers before it signals
    /// them (default 60 s).
    pub shutdown_grace: Sourced<Duration>,
}

/// `[store]`: the PostgreSQL store for schedulers on several hosts: every
/// run's lease, claims and records are kept there (see `crate::store`).
#[derive(Debug, Clone, PartialEq)]
pub struct StoreSettings {
    /// The connection URL (shown masked; see [`super::StoreUrl`]).
    pub url: Sourced<super::StoreUrl>,
    /// A file whose first line is the password (`None`: the URL's, else
    /// `PGPASSWORD`, else `PGPASSFILE`), made absolute against the
    /// configuration file's directory.
    pub password_file: Sourced<Option<PathBuf>>,
}

/// A whole, valid configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The file it was read from.
    pub path: PathBuf,
    /// `[scheduler]`.
    pub settings: Settings,
    /// `[daemon]`.
    pub daemon: DaemonSettings,
    /// `[store]` (`None`: no store; runs use local files and SQLite).
    pub store: Option<StoreSettings>,
    /// The jobs, by name: those of the file, then those of `jobs.d/`
    /// (each job's [`Job::source`] says which file).
    pub jobs: std::collections::BTreeMap<String, Job>,
}

impl Config {
    /// Whether jobs may run: the kill switch.
    pub fn enabled(&self) -> bool {
        self.settings.enabled.value
    }

    /// The zone `job`'s times are shown in: its own, else (no such job, or
    /// none named) the scheduler's.
    pub fn zone_of(&self, job: &str) -> &jiff::tz::TimeZone {
        self.jobs
            .get(job)
            .map_or(&self.settings.timezone.value.tz, |j| &j.timezone.value.tz)
    }

    /// The path of the daemon's Unix socket: `[daemon] socket`, or
    /// `daemon.sock` in the state directory.
    pub fn daemon_socket(&self) -> PathBuf {
        self.daemon
            .socket
            .value
            .clone()
            .unwrap_or_else(|| self.settings.state_dir.value.join(DAEMON_SOCKET))
    }
}

/// The daemon's Unix socket's name in the state directory, by default.
pub const DAEMON_SOCKET: &str = "daemon.sock";
