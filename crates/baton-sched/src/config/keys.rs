//! Every configuration key, defined once: the tables it may be written in,
//! its type, its default, whether a job or a step inherits it, whether a
//! `BATON_*` variable overrides it, and what it means in one line.
//!
//! Everything that names keys derives from [`KEYS`]: the keys each table
//! allows (and the "did you mean" suggestions), the environment overrides,
//! the defaults, the inheritance (`[scheduler]` → job → step), `baton
//! config`'s listing, `baton render env`'s, `baton man`'s `BATON_<KEY>`
//! list and the README's key tables ([`markdown`], checked by a test). No
//! other code lists keys; the reader knows only the few read by their own
//! rule, with the keys they combine with (`schedule`, `run`, `steps`, …).

use std::path::PathBuf;

use self::Default::{Host, Toml, Unset};
use super::typed::Value;
use super::zone::Zone;
use Table::{Check, Daemon, Job, Scheduler, Step, Store, Telemetry};
use Type::{
    Bool, CatchUp, Command, Count, Cwd, Duration, Env, ExitCodes, File, Group, Limit, Listen, Lock,
    OtlpEndpoint, Overlap, Positive, RootCert, Rule, SecretFile, SigningSecret, Size, Socket,
    SslMode, StateDir, StoreUrl, Webhook,
};

/// A table a key may be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// `[scheduler]`: the scheduler's settings and every job's defaults.
    Scheduler,
    /// `[jobs.NAME]`, or the drop-in `jobs.d/NAME.toml`.
    Job,
    /// `[[jobs.NAME.steps]]`.
    Step,
    /// `[[jobs.NAME.checks]]`.
    Check,
    /// `[daemon]`.
    Daemon,
    /// `[telemetry]`.
    Telemetry,
    /// `[store]`.
    Store,
}

impl Table {
    /// Its name: `scheduler`, `job`, `step`, …
    pub fn name(self) -> &'static str {
        match self {
            Table::Scheduler => "scheduler",
            Table::Job => "job",
            Table::Step => "step",
            Table::Check => "check",
            Table::Daemon => "daemon",
            Table::Telemetry => "telemetry",
            Table::Store => "store",
        }
    }

    /// The table as the README names it: `[scheduler]`, or `job`.
    fn shown(self) -> String {
        match self {
            Table::Scheduler | Table::Daemon | Table::Telemetry | Table::Store => {
                format!("`[{}]`", self.name())
            }
            _ => self.name().to_owned(),
        }
    }
}

/// What a key's value is, and so how it is read (see
/// [`super::value`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Type {
    /// Read by its own rule, with the keys it combines with.
    Rule,
    /// `true` or `false`.
    Bool,
    /// A whole number in a range.
    Count(u32, u32),
    /// A duration, zero or more.
    Duration,
    /// A duration longer than zero.
    Positive,
    /// A duration where zero means none.
    Limit,
    /// A size in bytes.
    Size,
    /// A list of exit codes.
    ExitCodes,
    /// `latest`, `none` or `all`.
    CatchUp,
    /// `skip` or `queue`.
    Overlap,
    /// An IANA zone name.
    Zone,
    /// A directory, absolute, or relative to the configuration file when
    /// written there.
    StateDir,
    /// A command: a string for `/bin/sh -c`, or an argv list.
    Command,
    /// A lock's name.
    Lock,
    /// A table of environment variables; a step's are added to its job's.
    Env,
    /// A working directory, relative to the configuration file.
    Cwd,
    /// The path of a file holding a secret (what it holds), relative to
    /// the configuration file.
    SecretFile(&'static str),
    /// The path of a file holding a signing secret, relative to the
    /// configuration file; the file is read and checked when the
    /// configuration is loaded ([`super::secret`]).
    SigningSecret,
    /// An `http://` or `https://` URL alerts are posted to.
    Webhook,
    /// An OTLP/HTTP collector's `http://` or `https://` base URL.
    OtlpEndpoint,
    /// Where the daemon listens.
    Listen,
    /// The daemon's Unix socket, relative to the configuration file.
    Socket,
    /// A group's name or number.
    Group,
    /// A PostgreSQL URL.
    StoreUrl,
    /// The path of a file (what it holds), relative to the configuration
    /// file.
    File(&'static str),
    /// How the store's connection is encrypted: one of libpq's `sslmode`s.
    SslMode,
    /// The authorities the store's server is checked against: a file, as
    /// [`Type::File`], or the word `system`.
    RootCert,
}

/// A key's value when it is not written anywhere (nor inherited).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Default {
    /// This TOML value, as `baton config` shows it, read as the key is.
    Toml(&'static str),
    /// No value; the words say what that means.
    Unset(&'static str),
    /// The host's: the words say which, the function finds it.
    Host(&'static str, fn() -> Value),
}

impl Default {
    /// The default in words: the TOML value, or what it means.
    pub(crate) fn words(self) -> &'static str {
        match self {
            Default::Toml(w) | Default::Unset(w) | Default::Host(w, _) => w,
        }
    }
}

/// One configuration key.
#[derive(Debug)]
pub struct Key {
    /// Its name.
    pub name: &'static str,
    /// The tables it may be written in, the one it is inherited from first.
    pub tables: &'static [Table],
    /// What its value is.
    pub(crate) ty: Type,
    /// Its value where it is not set.
    pub(crate) default: Default,
    /// Whether a job that does not set it takes `[scheduler]`'s value, and
    /// a step or check its job's.
    pub inherits: bool,
    /// Whether `BATON_<KEY>` (`BATON_STORE_<KEY>` for a `[store]` key)
    /// overrides the value `[scheduler]` (`[store]`) gives it.
    pub env: bool,
    /// What it means, in one line.
    pub doc: &'static str,
}

impl Key {
    /// A key of type `ty`, `default` where it is not set: written nowhere
    /// yet, inherited by none, overridden by no variable.
    const fn new(name: &'static str, ty: Type, default: Default) -> Self {
        Self {
            name,
            tables: &[],
            ty,
            default,
            inherits: false,
            env: false,
            doc: "",
        }
    }

    /// Written in `tables`.
    const fn of(self, tables: &'static [Table]) -> Self {
        Self { tables, ..self }
    }

    /// Inherited by a job from `[scheduler]`, by a step from its job.
    const fn inherited(self) -> Self {
        Self {
            inherits: true,
            ..self
        }
    }

    /// Overridden by its `BATON_*` variable.
    const fn variable(self) -> Self {
        Self { env: true, ..self }
    }

    /// What it means, in one line.
    const fn doc(self, doc: &'static str) -> Self {
        Self { doc, ..self }
    }

    /// Whether it may be written in `table`.
    pub fn is_in(&self, table: Table) -> bool {
        self.tables.contains(&table)
    }

    /// Its name in [`super::Overrides::env`]: `retries`, `store_url`.
    pub fn env_key(&self) -> Option<String> {
        match self.tables {
            _ if !self.env => None,
            [Table::Store] => Some(format!("store_{}", self.name)),
            _ => Some(self.name.to_owned()),
        }
    }
}

/// `BATON_RETRIES` for `retries`, `BATON_STORE_URL` for `store_url`.
pub fn env_name(env_key: &str) -> String {
    format!("BATON_{}", env_key.to_ascii_uppercase())
}

/// The key named `name`, if there is one.
pub fn key(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

/// The keys `table` takes, in the order they are documented, checked and
/// shown.
pub fn of(table: Table) -> impl Iterator<Item = &'static Key> {
    KEYS.iter().filter(move |k| k.is_in(table))
}

/// The `[scheduler]` keys a `BATON_<KEY>` variable overrides.
pub fn env_keys() -> impl Iterator<Item = &'static str> {
    of(Table::Scheduler).filter(|k| k.env).map(|k| k.name)
}

/// The README's table of the keys of `tables`: each key, where it may be
/// written (`→` where it is inherited), its variable, its default and what
/// it means.
pub fn markdown(tables: &[Table]) -> String {
    let mut t = String::from(
        "| key | in | variable | default | meaning |\n| --- | --- | --- | --- | --- |\n",
    );
    for k in KEYS.iter().filter(|k| tables.iter().any(|t| k.is_in(*t))) {
        let mut levels: Vec<String> = Vec::new();
        for group in [
            &[
                Table::Scheduler,
                Table::Daemon,
                Table::Telemetry,
                Table::Store,
            ][..],
            &[Table::Job],
            &[Table::Step, Table::Check],
        ] {
            let here: Vec<String> = group
                .iter()
                .filter(|t| k.is_in(**t))
                .map(|t| t.shown())
                .collect();
            if !here.is_empty() {
                levels.push(here.join(", "));
            }
        }
        let variable = k
            .env_key()
            .map(|e| format!("`{}`", env_name(&e)))
            .unwrap_or_default();
        let default = match k.default {
            Default::Toml(v) => format!("`{v}`"),
            other => other.words().to_owned(),
        };
        t.push_str(&format!(
            "| `{}` | {} | {variable} | {default} | {} |\n",
            k.name,
            levels.join(if k.inherits { " → " } else { ", " }),
            k.doc,
        ));
    }
    t
}

/// The state directory `baton exec` would use.
const EXEC_STATE_DIR: Default = Host(
    "/var/lib/baton for root, else $XDG_STATE_HOME/baton or ~/.local/state/baton",
    default_state_dir,
);

/// The system's zone.
const SYSTEM_ZONE: Default = Host(
    "the system's zone (TZ, else /etc/localtime; a TZ that names no zone is refused)",
    system_zone,
);

fn default_state_dir() -> Value {
    Value::Path(
        crate::state::state_dir::default_dir().unwrap_or_else(|| PathBuf::from("/var/lib/baton")),
    )
}

fn system_zone() -> Value {
    let tz = jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC);
    let name = tz
        .iana_name()
        .map_or_else(nameless_system_zone, ToOwned::to_owned);
    Value::Zone(Zone { name, tz })
}

/// What the system's zone is called when it has no IANA name: the rule
/// `TZ` gives (`EST5EDT,M3.2.0,M11.1.0`), else `localtime` (an
/// `/etc/localtime` copied rather than linked into the zone database).
/// Never `UTC`: its rules apply, not UTC's, and every surface says so.
pub fn nameless_system_zone() -> String {
    std::env::var("TZ")
        .ok()
        .map(|tz| tz.trim_start_matches(':').to_owned())
        .filter(|tz| !tz.is_empty())
        .unwrap_or_else(|| "localtime".to_owned())
}

/// The zone a surface shows times in, from the name a configuration's
/// zone carries: an IANA name, or what the system's zone is called when
/// it has none (then the system's zone itself); UTC when neither.
pub fn zone_named(name: &str) -> jiff::tz::TimeZone {
    if let Ok(tz) = jiff::tz::TimeZone::get(name) {
        return tz;
    }
    match jiff::tz::TimeZone::try_system() {
        Ok(tz) if tz.iana_name().is_none() && nameless_system_zone() == name => tz,
        _ => jiff::tz::TimeZone::UTC,
    }
}

/// Every key, in the order the documentation, the checks and `baton
/// config` list them.
pub static KEYS: &[Key] = &[
    Key::new("schedule", Rule, Unset("")).of(&[Job]).doc(
        "when the job runs: a cron expression, 5 fields or 6 with seconds; give `schedule` \
         or `every`",
    ),
    Key::new("every", Rule, Unset(""))
        .of(&[Job])
        .doc("when the job runs: a fixed interval, at whole multiples since 1970-01-01T00:00Z"),
    Key::new("state_dir", StateDir, EXEC_STATE_DIR)
        .of(&[Scheduler])
        .variable()
        .doc("where locks, the ledger and the logs live"),
    Key::new("timezone", Type::Zone, SYSTEM_ZONE)
        .of(&[Scheduler, Job])
        .inherited()
        .variable()
        .doc("the scheduler's zone: log dates, and every job's default zone"),
    Key::new("enabled", Bool, Toml("true"))
        .of(&[Scheduler, Job])
        .variable()
        .doc("the kill switch: false runs no job"),
    Key::new("alert_command", Command, Unset("none"))
        .of(&[Scheduler])
        .variable()
        .doc("the command every alert runs"),
    Key::new("alert_webhook", Webhook, Unset("none"))
        .of(&[Scheduler, Job])
        .inherited()
        .variable()
        .doc(
            "an http:// or https:// URL each alert is posted to as JSON, with a Slack-style \
             `text` ([Alert webhooks](#alert-webhooks))",
        ),
    Key::new(
        "alert_webhook_secret_file",
        SigningSecret,
        Unset("none: unsigned"),
    )
    .of(&[Scheduler, Job])
    .inherited()
    .variable()
    .doc(
        "a file (mode 0600) holding the secret each post's `Baton-Signature` (HMAC-SHA256) \
             is made with, relative to the configuration file",
    ),
    Key::new(
        "history_keep",
        Count(1, baton_store::ledger::MAX_HISTORY_KEEP),
        Toml("1000"),
    )
    .of(&[Scheduler])
    .variable()
    .doc("runs that ended kept per job in the ledger (a run in flight is never pruned)"),
    Key::new("log_keep", Positive, Toml("\"30d\""))
        .of(&[Scheduler])
        .variable()
        .doc("how long dated logs are kept"),
    Key::new("max_parallel", Count(1, 10_000), Toml("64"))
        .of(&[Scheduler])
        .variable()
        .doc("runs at once in one tick"),
    Key::new("name", Rule, Unset("`step-N`, `check-N`"))
        .of(&[Step, Check])
        .doc("the step's or check's name, unique within the job"),
    Key::new("run", Rule, Unset(""))
        .of(&[Job, Step, Check])
        .doc(
            "the command: a string runs through /bin/sh -c, a list runs directly; a job gives \
             `run`, `http` or `steps`, a step or check `run` or `http`",
        ),
    Key::new("http", Rule, Unset(""))
        .of(&[Job, Step, Check])
        .doc("an HTTP request to send instead of a command ([HTTP steps](#http-steps))"),
    Key::new("steps", Rule, Unset("")).of(&[Job]).doc(
        "the job's steps (`[[jobs.NAME.steps]]` tables), in order; a step that still fails \
         stops the rest",
    ),
    Key::new("checks", Rule, Unset("none")).of(&[Job]).doc(
        "run after the steps whatever they did, never retried (`[[jobs.NAME.checks]]` \
         tables)",
    ),
    Key::new("lock", Lock, Unset("each job's name"))
        .of(&[Scheduler, Job])
        .inherited()
        .doc(
            "the lock's name: jobs with the same lock never run at the same time; like a job's \
             name, 1 to 64 of `A-Z a-z 0-9 _ . -`, not starting with `.`",
        ),
    Key::new("env", Env, Toml("{}"))
        .of(&[Job, Step, Check])
        .inherited()
        .doc("variables added to the commands' environment (a step's are added to its job's)"),
    Key::new("cwd", Cwd, Unset("the configuration file's directory"))
        .of(&[Job, Step, Check])
        .inherited()
        .doc(
            "where the commands run, relative to the configuration file (never their caller's \
             directory)",
        ),
    Key::new("retries", Count(0, baton_runner::MAX_RETRIES), Toml("0"))
        .of(&[Scheduler, Job, Step])
        .inherited()
        .variable()
        .doc("extra attempts of a failed step"),
    Key::new("backoff", Duration, Toml("\"30s\""))
        .of(&[Scheduler, Job, Step])
        .inherited()
        .variable()
        .doc("the first delay before a retry; it doubles per attempt"),
    Key::new("backoff_max", Duration, Toml("\"15m\""))
        .of(&[Scheduler, Job, Step])
        .inherited()
        .variable()
        .doc("the longest delay before a retry"),
    Key::new("no_retry_exit_codes", ExitCodes, Toml("[2]"))
        .of(&[Scheduler, Job, Step])
        .inherited()
        .variable()
        .doc("exit codes that are never retried"),
    Key::new("timeout", Limit, Toml("\"1h\""))
        .of(&[Scheduler, Job, Step, Check])
        .inherited()
        .variable()
        .doc("each step attempt's limit (0: none)"),
    Key::new("ttl", Positive, Toml("\"30s\""))
        .of(&[Scheduler, Job])
        .inherited()
        .variable()
        .doc("the lease's time to live"),
    Key::new("kill_grace", Duration, Toml("\"10s\""))
        .of(&[Scheduler, Job, Step, Check])
        .inherited()
        .variable()
        .doc("between the first signal and SIGKILL when a step is stopped"),
    Key::new("takeover_grace", Duration, Toml("\"30s\""))
        .of(&[Scheduler, Job])
        .inherited()
        .variable()
        .doc("how long past its TTL a lease that cannot be checked is respected"),
    Key::new("max_runtime", Limit, Toml("\"2h\""))
        .of(&[Scheduler, Job])
        .inherited()
        .variable()
        .doc("the soft budget of a run (0: none)"),
    Key::new("output_limit", Size, Toml("\"1MiB\""))
        .of(&[Scheduler, Job, Step, Check])
        .inherited()
        .variable()
        .doc("output kept per step attempt"),
    Key::new("catch_up_window", Positive, Toml("\"1h\""))
        .of(&[Scheduler, Job])
        .inherited()
        .variable()
        .doc("how late a due occurrence may still start"),
    Key::new("jitter", Limit, Unset("none"))
        .of(&[Scheduler, Job])
        .inherited()
        .variable()
        .doc(
            "the window each occurrence's start is spread over: a fixed offset in it, from the \
             job's name (0: none)",
        ),
    Key::new("catch_up", CatchUp, Toml("\"latest\""))
        .of(&[Scheduler, Job])
        .inherited()
        .variable()
        .doc("what runs after downtime: latest, none or all"),
    Key::new("catch_up_max", Count(1, 100_000), Toml("100"))
        .of(&[Scheduler, Job])
        .inherited()
        .variable()
        .doc("the most occurrences one catch-up runs"),
    Key::new("overlap", Overlap, Toml("\"skip\""))
        .of(&[Scheduler, Job])
        .inherited()
        .variable()
        .doc(
            "what an occurrence does when the job's run is in flight: skip, queue, or replace \
             (stop that run, then start)",
        ),
    Key::new(
        "max_concurrent",
        Count(1, baton_lease::slot::MOST),
        Toml("1"),
    )
    .of(&[Scheduler, Job])
    .inherited()
    .variable()
    .doc(
        "how many runs of the job may be in flight at once, each under a slot of its lock \
             (`BATON_SLOT`)",
    ),
    Key::new("contain", Bool, Toml("true"))
        .of(&[Scheduler, Job])
        .inherited()
        .variable()
        .doc("run each step in a PID namespace that dies with its supervisor: true or false"),
    Key::new("listen", Listen, Toml("\"127.0.0.1:8677\""))
        .of(&[Daemon])
        .doc(
            "where the HTTP API listens: `IP:PORT` (IPv6 as `\"[::1]:8677\"`) or `HOST:PORT` \
             (`\"localhost:8677\"`: every address the name resolves to, resolved once at start)",
        ),
    Key::new("token_file", SecretFile("the token"), Unset("none"))
        .of(&[Daemon])
        .doc(
            "the file holding the API's bearer token, relative to the configuration file; \
             without it the TCP API is read-only",
        ),
    Key::new("socket", Socket, Unset("`STATE_DIR/daemon.sock`"))
        .of(&[Daemon])
        .doc(
            "the API's Unix socket, relative to the configuration file: changes by the daemon's \
             own user, root and `socket_group`",
        ),
    Key::new("socket_group", Group, Unset("none"))
        .of(&[Daemon])
        .doc(
            "a group (a name in `/etc/group`, or a number) whose members may also change things \
             over the socket: the socket is made `0660` and that group's",
        ),
    Key::new("shutdown_grace", Duration, Toml("\"1m\""))
        .of(&[Daemon])
        .doc("how long a stopping daemon waits for its runs before it stops them"),
    Key::new("otlp_endpoint", OtlpEndpoint, Unset("none: no traces"))
        .of(&[Telemetry])
        .variable()
        .doc(
            "an OTLP/HTTP collector's http:// or https:// base URL: each run's spans are posted \
             to it, with `/v1/traces` added ([Traces](#traces))",
        ),
    Key::new("url", StoreUrl, Unset("none: no store"))
        .of(&[Store])
        .variable()
        .doc("the PostgreSQL store's URL (postgres://USER@HOST/DATABASE)"),
    Key::new("password_file", SecretFile("the password"), Unset("none"))
        .of(&[Store])
        .variable()
        .doc("a file holding the store's password"),
    Key::new("sslmode", SslMode, Toml("\"prefer\""))
        .of(&[Store])
        .variable()
        .doc(
            "how the connection is encrypted and what of the server is verified: disable, \
             prefer, require, verify-ca or verify-full (as libpq's)",
        ),
    Key::new(
        "sslrootcert",
        RootCert,
        Unset("none: the system's authorities"),
    )
    .of(&[Store])
    .variable()
    .doc(
        "a PEM file of the authorities the server's certificate is checked against, \
             relative to the configuration file; `system` for the system's (and verify-full)",
    ),
    Key::new("sslcert", File("the client certificate"), Unset("none"))
        .of(&[Store])
        .variable()
        .doc("a client certificate (PEM) to present, relative to the configuration file"),
    Key::new(
        "sslkey",
        SecretFile("the client certificate's key"),
        Unset("none"),
    )
    .of(&[Store])
    .variable()
    .doc("the client certificate's key (PEM), relative to the configuration file"),
    Key::new("prepare", Bool, Toml("false"))
        .of(&[Store])
        .variable()
        .doc(
            "prepare the lease's statements once per connection and reuse them: only for a \
             server reached directly or through a pooler that keeps prepared statements \
             (not PgBouncer's transaction mode before 1.21)",
        ),
];
