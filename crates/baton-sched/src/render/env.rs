//! The environment variables baton reads: each with what it does, its
//! default, its current value and where that came from.
//!
//! The `BATON_<KEY>` variables override `[scheduler]` keys, so their
//! current value is the configuration's effective one with its provenance
//! (`default`, `FILE:LINE` or the variable). The others are read from the
//! process environment; the caller passes what it found
//! ([`Options::environment`], read for the names [`names`] lists). Secrets
//! are never shown, only whether they are set: the lease token
//! (`BATON_TOKEN`), an HTTP step's request (`BATON_HTTP_REQUEST`, which may
//! hold an `Authorization` header), and any variable whose name says it may
//! hold a credential ([`is_secret`]), so that one added later is hidden
//! unless it is declared otherwise. The whole text is comments: sourcing it
//! sets nothing.

use std::collections::BTreeMap;

use super::{Artefact, Options};
use crate::config::{self, Config, Overrides, Source};

/// The file's name.
pub const FILE: &str = "baton.env";

/// Variables baton reads besides `BATON_CONFIG` and `BATON_<KEY>`: name,
/// default, whether its value is secret, what reads it and why.
const OTHERS: &[(&str, &str, bool, &str)] = &[
    (
        "BATON_TOKEN",
        "unset",
        true,
        "`baton watermark settle`: the run's lease token (baton sets it for every step)",
    ),
    (
        crate::http::REQUEST_ENV,
        "unset",
        true,
        "`baton __http`: the HTTP step's request (baton sets it for HTTP steps)",
    ),
    (
        "BATON_JOB",
        "unset",
        false,
        "`baton __http`: sent as Baton-Job (baton sets it for every step)",
    ),
    (
        "BATON_OCCURRENCE",
        "unset",
        false,
        "`baton __http`: sent as Baton-Occurrence (baton sets it for every step)",
    ),
    (
        "BATON_RUN_ID",
        "unset",
        false,
        "`baton __http`: sent as Baton-Run-Id (baton sets it for every step)",
    ),
    (
        "BATON_FENCE",
        "unset",
        false,
        "`baton __http`: sent as Baton-Fence (baton sets it for every step)",
    ),
    (
        "NOTIFY_SOCKET",
        "unset",
        false,
        "`baton daemon`: where READY=1, STOPPING=1 and WATCHDOG=1 go (systemd sets it)",
    ),
    (
        "WATCHDOG_USEC",
        "unset",
        false,
        "`baton daemon`: the watchdog interval; WATCHDOG=1 is sent every half (systemd sets it)",
    ),
    (
        "WATCHDOG_PID",
        "unset",
        false,
        "`baton daemon`: the process the watchdog is for (systemd sets it)",
    ),
    (
        "PGHOST",
        "localhost",
        false,
        "with [store]: the store's host when [store] url names none",
    ),
    (
        "PGPORT",
        "5432",
        false,
        "with [store]: the store's port when [store] url names none",
    ),
    (
        "PGUSER",
        "$USER",
        false,
        "with [store]: the store's user when [store] url names none",
    ),
    (
        "PGDATABASE",
        "the user's name",
        false,
        "with [store]: the store's database when [store] url names none",
    ),
    (
        "PGPASSWORD",
        "unset",
        true,
        "with [store]: the store's password when neither [store] url nor \
         password_file gives one",
    ),
    (
        "PGPASSFILE",
        "unset (~/.pgpass is not read)",
        false,
        "with [store]: a file of host:port:database:user:password lines, \
         read when no other password is given",
    ),
    (
        "PATH",
        "/usr/local/bin:/usr/bin:/bin",
        false,
        "where a step's or `baton exec`'s program is found when it names no directory",
    ),
    (
        "SHELL",
        "/bin/sh",
        false,
        "`baton exec -c CMD`: the shell CMD runs through, as `flock -c` does (/bin/sh when \
         unset or empty)",
    ),
    (
        "HOME",
        "unset",
        false,
        "the default state directory of a user other than root: ~/.local/state/baton",
    ),
    (
        "XDG_STATE_HOME",
        "unset",
        false,
        "the default state directory of a user other than root: $XDG_STATE_HOME/baton",
    ),
    (
        "TZ",
        "/etc/localtime",
        false,
        "the system's zone: [scheduler] timezone's default",
    ),
    (
        "USER",
        "unset",
        false,
        "who paused or resumed a job, for the ledger (else LOGNAME, else the uid)",
    ),
    (
        "LOGNAME",
        "unset",
        false,
        "who paused or resumed a job, when USER is unset",
    ),
];

/// Whether a variable's name says its value may hold a credential: a
/// token, a secret, a password, a key, a request, or a URL (which may carry
/// a user and password).
pub fn is_secret(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "KEY",
        "CREDENTIAL",
        "REQUEST",
        "URL",
    ]
    .iter()
    .any(|w| name.contains(w))
}

/// What each `[scheduler]` key that `BATON_<KEY>` overrides does.
const KEYS: &[(&str, &str)] = &[
    ("state_dir", "where locks, the ledger and the logs live"),
    (
        "timezone",
        "the scheduler's zone: log dates, and every job's default zone",
    ),
    ("enabled", "the kill switch: false runs no job"),
    ("alert_command", "the command every alert runs"),
    ("history_keep", "runs kept per job in the ledger"),
    ("log_keep", "how long dated logs are kept"),
    ("max_parallel", "runs at once in one tick"),
    ("retries", "extra attempts of a failed step"),
    (
        "backoff",
        "the first delay before a retry; it doubles per attempt",
    ),
    ("backoff_max", "the longest delay before a retry"),
    ("no_retry_exit_codes", "exit codes that are never retried"),
    ("timeout", "each step attempt's limit (0: none)"),
    ("ttl", "the lease's time to live"),
    (
        "kill_grace",
        "between the first signal and SIGKILL when a step is stopped",
    ),
    (
        "takeover_grace",
        "how long past its TTL a lease that cannot be checked is respected",
    ),
    ("max_runtime", "the soft budget of a run (0: none)"),
    ("output_limit", "output kept per step attempt"),
    (
        "catch_up_window",
        "how late a due occurrence may still start",
    ),
    ("catch_up", "what runs after downtime: latest, none or all"),
    ("catch_up_max", "the most occurrences one catch-up runs"),
    (
        "overlap",
        "what an occurrence does when the job's run is in flight: skip or queue",
    ),
    (
        "contain",
        "run each step in a PID namespace that dies with its supervisor: true or false",
    ),
];

/// What each `[store]` key that `BATON_STORE_<KEY>` overrides does.
const STORE_KEYS: &[(&str, &str)] = &[
    (
        "store_url",
        "[store] url: the PostgreSQL store's URL (postgres://USER@HOST/DATABASE)",
    ),
    (
        "store_password_file",
        "[store] password_file: a file holding the store's password",
    ),
];

/// Every variable baton reads, for the caller to collect
/// [`Options::environment`] from.
pub fn names() -> Vec<String> {
    let mut v = vec!["BATON_CONFIG".to_owned()];
    v.extend(config::env_keys().map(config::env_name));
    v.extend(config::store_env_keys().map(config::env_name));
    v.extend(OTHERS.iter().map(|(n, ..)| (*n).to_owned()));
    v
}

/// The reference for `c`.
pub fn render(c: &Config, opts: &Options) -> Artefact {
    let shown_config = opts.config.display().to_string();
    let real_config = c.path.display().to_string();
    let host = |s: &str| s.replace(&real_config, &shown_config);
    let mut t = format!(
        "# The environment variables baton reads, for {shown_config}.\n\
         # Rendered by `baton render env`: what each does, its default, and its\n\
         # current value and where that came from. Only comments: sourcing this sets\n\
         # nothing.\n"
    );
    let mut entry = |name: &str, what: &str, default: &str, current: &str| {
        t.push_str(&format!(
            "\n# {name}: {what}.\n#   default: {default}\n#   current: {current}\n"
        ));
    };
    let config_from = match &opts.config_source {
        Source::Default => "default".to_owned(),
        Source::Env(_) => "the environment".to_owned(),
        other => other.to_string(),
    };
    entry(
        "BATON_CONFIG",
        "the configuration file when --config is not given",
        "./baton.toml",
        &format!("{shown_config} (from {config_from})"),
    );
    let effective: BTreeMap<String, (String, String)> = crate::show::scheduler(c)
        .into_iter()
        .map(|s| (s.key, (s.value, s.source)))
        .collect();
    let defaults = defaults();
    for key in config::env_keys() {
        let what = KEYS
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("a [scheduler] key", |(_, w)| w);
        let (value, source) = match key {
            "state_dir" => (
                format!("{:?}", opts.state_dir(c).display().to_string()),
                host(&effective[key].1),
            ),
            _ => effective
                .get(key)
                .map(|(v, s)| (v.clone(), host(s)))
                .unwrap_or_default(),
        };
        let default = match key {
            "state_dir" => {
                "/var/lib/baton for root, else $XDG_STATE_HOME/baton or ~/.local/state/baton"
                    .to_owned()
            }
            "timezone" => "the system's zone (TZ, else /etc/localtime)".to_owned(),
            _ => defaults.get(key).cloned().unwrap_or_default(),
        };
        let name = config::env_name(key);
        let value = if is_secret(&name) && !value.is_empty() {
            "set, not shown".to_owned()
        } else {
            value
        };
        entry(
            &name,
            &format!("[scheduler] {key}: {what}"),
            &default,
            &format!("{value} (from {source})"),
        );
    }
    let store: BTreeMap<String, (String, String)> = crate::show::store(c)
        .into_iter()
        .map(|s| (format!("store_{}", s.key), (s.value, s.source)))
        .collect();
    for (key, what) in STORE_KEYS {
        let name = config::env_name(key);
        let current = match store.get(*key) {
            Some((_, source)) if is_secret(&name) => {
                format!("set, not shown (from {})", host(source))
            }
            Some((value, source)) if source != "default" => {
                format!("{value} (from {})", host(source))
            }
            _ => "unset".to_owned(),
        };
        entry(&name, what, "unset: no store", &current);
    }
    for (name, default, secret, what) in OTHERS {
        let current = match opts.environment.get(*name) {
            Some(_) if *secret || is_secret(name) => {
                "set, not shown (from the environment)".to_owned()
            }
            Some(v) => format!("{v} (from the environment)"),
            None => "unset".to_owned(),
        };
        entry(name, what, default, &current);
    }
    Artefact {
        name: FILE.into(),
        text: t,
    }
}

/// baton's own defaults of the `[scheduler]` keys, as `baton config` shows
/// them (the zone and the state directory apart, which depend on the host).
fn defaults() -> BTreeMap<String, String> {
    let text = "[scheduler]\nstate_dir = \"/\"\ntimezone = \"UTC\"\n";
    match config::parse(text, std::path::Path::new("/"), &Overrides::default()) {
        Ok(c) => crate::show::scheduler(&c)
            .into_iter()
            .map(|s| (s.key, s.value))
            .collect(),
        Err(_) => BTreeMap::new(),
    }
}
