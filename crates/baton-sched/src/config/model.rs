//! The validated configuration: what every command runs on. Every value
//! carries its [`Source`], so `baton config` can say where it came from.
//! Nothing here can be invalid: [`super::load`] refuses a file before a
//! value of this module exists.
//!
//! A field read from a key is named after it ([`super::keys`]), and each
//! struct of such fields is built from its table's [`Values`] and gives
//! them back for `baton config` (`keyed!`).

use std::path::PathBuf;
use std::time::Duration;

use super::catch_up::CatchUp;
use super::command::Command;
use super::overlap::Overlap;
use super::source::{Source, Sourced};
use super::value::Values;
use super::zone::Zone;

/// A struct of keys' values, each field named after its key (and a struct
/// of them nested in it, after `+`; a key's bare value, after `-`; a field
/// read by its own rule, given, after `=`): the struct, `from_values` to
/// build it from its table's values and the fields given, `values` to give
/// the keys' back for `baton config`, and `KEYS`, the keys of its own
/// `Sourced` fields.
macro_rules! keyed {
    (
        $(#[$meta:meta])*
        pub struct $t:ident {
            $($key:ident: $ty:ty,)*
            $(+ $(#[$nested_meta:meta])* $nested:ident: $n:ident,)?
            $(- $(#[$bare_meta:meta])* $bare:ident: $bare_ty:ty,)*
            $(= $(#[$own_meta:meta])* $own:ident: $own_ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $t {
            $($(#[$own_meta])* pub $own: $own_ty,)*
            $(
                #[doc = concat!("`", stringify!($key), "` ([`super::keys::KEYS`] says what it is).")]
                pub $key: Sourced<$ty>,
            )*
            $($(#[$nested_meta])* pub $nested: $n,)?
            $($(#[$bare_meta])* pub $bare: $bare_ty,)*
        }

        impl $t {
            /// The keys its own fields hold.
            #[allow(dead_code)]
            pub(super) const KEYS: &'static [&'static str] = &[$(stringify!($key)),*];

            /// Its fields from its table's values, and those given.
            pub(super) fn from_values(v: &Values, $($own: $own_ty),*) -> Self {
                Self {
                    $($own,)*
                    $($key: v.get(stringify!($key)),)*
                    $($nested: $n::from_values(v),)?
                    $($bare: v.get(stringify!($bare)).value,)*
                }
            }

            /// Its keys' values, for `baton config`.
            pub(crate) fn values(&self, v: &mut Values) {
                $(v.put(stringify!($key), &self.$key);)*
                $(self.$nested.values(v);)?
            }
        }
    };
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

keyed! {
    /// The values a job takes from `[scheduler]` unless it sets its own.
    pub struct RunPolicy {
        retries: u32,
        backoff: Duration,
        backoff_max: Duration,
        no_retry_exit_codes: Vec<i32>,
        timeout: Option<Duration>,
        ttl: Duration,
        kill_grace: Duration,
        takeover_grace: Duration,
        max_runtime: Option<Duration>,
        output_limit: u64,
        catch_up_window: Duration,
        jitter: Option<Duration>,
        catch_up: CatchUp,
        catch_up_max: u32,
        overlap: Overlap,
        max_concurrent: u32,
        contain: bool,
    }
}

keyed! {
    /// `[scheduler]`: settings of the scheduler, and the defaults of every job.
    pub struct Settings {
        state_dir: PathBuf,
        timezone: Zone,
        enabled: bool,
        alert_command: Option<Command>,
        alert_webhook: Option<super::WebhookUrl>,
        alert_webhook_secret_file: Option<PathBuf>,
        history_keep: u32,
        log_keep: Duration,
        max_parallel: u32,
        lock: Option<String>,
        + /// Defaults of every job.
        policy: RunPolicy,
    }
}

/// Whether a step is a step or a check: the word the ledger keeps too.
/// A step runs in order, and one that still fails stops the steps after it;
/// a check runs after the steps whatever they did, and is never retried.
pub use baton_store::words::StepKind;

keyed! {
    /// One step or check of a job (a check's `retries` always 0).
    pub struct Step {
        retries: u32,
        backoff: Duration,
        backoff_max: Duration,
        no_retry_exit_codes: Vec<i32>,
        timeout: Option<Duration>,
        kill_grace: Duration,
        output_limit: u64,
        - /// Variables added to the environment (the job's, then the step's).
        env: Vec<(String, String)>,
        - /// Working directory.
        cwd: Option<PathBuf>,
        = /// Its name, unique within the job.
        name: String,
        = /// Step or check.
        kind: StepKind,
        = /// What it does: a command, or an HTTP request.
        action: Sourced<Action>,
        = /// The line the step's table starts on.
        line: u32,
        = /// Where its name, working directory and variables came from.
        sources: StepSources,
    }
}

/// Where a step's values that are not a key's own came from, for `baton
/// config`: its `name`, its `cwd` (its own, its job's, or the default) and
/// each variable of its `env` (its own table's, or its job's).
#[derive(Debug, Clone, PartialEq)]
pub struct StepSources {
    /// The `name` key, or [`Source::Default`] for `step-N` (a job's one
    /// step: its job's table).
    pub name: Source,
    /// Where `cwd` was set.
    pub cwd: Source,
    /// One per variable of the step's `env`, in its order.
    pub env: Vec<Source>,
}

keyed! {
    /// A job.
    pub struct Job {
        timezone: Zone,
        enabled: bool,
        lock: String,
        alert_webhook: Option<super::WebhookUrl>,
        alert_webhook_secret_file: Option<PathBuf>,
        + /// Its run policy.
        policy: RunPolicy,
        = /// Its name: `[A-Za-z0-9_.-]{1,64}`.
        name: String,
        = /// Where `[jobs.NAME]` is written, or the drop-in file
        /// (`jobs.d/NAME.toml`) that defines it.
        source: Source,
        = /// When it runs.
        when: Sourced<When>,
        = /// Its steps, in order.
        steps: Vec<Step>,
        = /// Its checks, in order.
        checks: Vec<Step>,
    }
}

impl Job {
    /// Steps then checks.
    pub fn all_steps(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().chain(&self.checks)
    }
}

keyed! {
    /// `[daemon]`: how `baton daemon` serves. Only the daemon reads these;
    /// every other command validates them and leaves them alone.
    pub struct DaemonSettings {
        listen: super::Listen,
        token_file: Option<PathBuf>,
        socket: Option<PathBuf>,
        socket_group: Option<String>,
        shutdown_grace: Duration,
    }
}

keyed! {
    /// `[telemetry]`: where runs' traces are sent (see
    /// `crate::engine::trace`).
    pub struct TelemetrySettings {
        otlp_endpoint: Option<super::OtlpEndpoint>,
    }
}

keyed! {
    /// `[store]`: the PostgreSQL store for schedulers on several hosts: every
    /// run's lease, claims and records are kept there (see `crate::store`).
    /// The URL is shown masked ([`super::StoreUrl`]).
    pub struct StoreSettings {
        url: super::StoreUrl,
        password_file: Option<PathBuf>,
        sslmode: baton_pg::SslMode,
        sslrootcert: Option<PathBuf>,
        sslcert: Option<PathBuf>,
        sslkey: Option<PathBuf>,
        prepare: bool,
    }
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
    /// `[telemetry]`.
    pub telemetry: TelemetrySettings,
    /// `[store]` (`None`: no store; runs use local files and SQLite).
    pub store: Option<StoreSettings>,
    /// The jobs, by name: those of the file, then those of `jobs.d/`
    /// (each job's [`Job::source`] says which file).
    pub jobs: std::collections::BTreeMap<String, Box<Job>>,
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
