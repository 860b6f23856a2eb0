//! The environment variables baton reads: each with what it does, its
//! default, its current value and where that came from.
//!
//! The `BATON_<KEY>` variables override `[scheduler]` keys (and
//! `BATON_STORE_<KEY>` `[store]` keys), so their current value is the
//! configuration's effective one with its provenance (`default`,
//! `FILE:LINE` or the variable); what each does and its default are the
//! key's own ([`crate::config::keys`]). The others are read from the
//! process environment; the caller passes what it found
//! ([`Options::environment`], read for the names [`names`] lists). Secrets
//! are never shown, only whether they are set: the lease token
//! (`BATON_TOKEN`), an HTTP step's request (`BATON_HTTP_REQUEST`, which may
//! hold an `Authorization` header), and any variable whose name says it may
//! hold a credential ([`is_secret`]), so that one added later is hidden
//! unless it is declared otherwise. The whole text is comments: sourcing it
//! sets nothing.

use super::{Artefact, Options};
use crate::config::keys::{self, Key, Table};
use crate::config::{Config, Source};

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
        "TRACEPARENT",
        "unset",
        false,
        "with [telemetry] otlp_endpoint: a W3C trace context the run's span (run, tick, \
         backfill, exec) joins as a child; baton sets it for each step, naming the step's span",
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

/// Every variable baton reads, for the caller to collect
/// [`Options::environment`] from.
pub fn names() -> Vec<String> {
    let mut v = vec!["BATON_CONFIG".to_owned()];
    v.extend(
        keys::KEYS
            .iter()
            .filter_map(Key::env_key)
            .map(|k| keys::env_name(&k)),
    );
    v.extend(OTHERS.iter().map(|(n, ..)| (*n).to_owned()));
    v
}

/// `s` on one comment line: a line break or another control character
/// (from the environment, or a path), and the Unicode line and paragraph
/// separators, are written escaped (`\n`, `\u{2028}`), never as
/// themselves, so nothing they carry becomes a line a shell (or a reader
/// that splits Unicode lines) would take for one.
fn one_line(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// The reference for `c`.
pub fn render(c: &Config, opts: &Options) -> Artefact {
    let shown_config = opts.config.display().to_string();
    let real_config = c.path.display().to_string();
    let host = |s: &str| s.replace(&real_config, &shown_config);
    let shown_config = one_line(&shown_config);
    let mut t = format!(
        "# The environment variables baton reads, for {shown_config}.\n\
         # Rendered by `baton render env`: what each does, its default, and its\n\
         # current value and where that came from. Only comments: sourcing this sets\n\
         # nothing.\n"
    );
    let mut entry = |name: &str, what: &str, default: &str, current: &str| {
        let current = one_line(current);
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
    for (table, shown) in [
        (Table::Scheduler, crate::views::show::scheduler(c)),
        (Table::Telemetry, crate::views::show::telemetry(c)),
        (Table::Store, crate::views::show::store(c)),
    ] {
        for key in keys::of(table) {
            let Some(env_key) = key.env_key() else {
                continue;
            };
            let name = keys::env_name(&env_key);
            let store = table == Table::Store;
            let current = match shown.iter().find(|s| s.key == key.name) {
                // A store key nothing sets, or no store at all.
                Some(s) if store && s.source == "default" => "unset".to_owned(),
                None => "unset".to_owned(),
                // A secret nothing sets (a signing secret's file).
                Some(s) if is_secret(&name) && s.source == "default" => "unset".to_owned(),
                Some(s) if is_secret(&name) => format!("set, not shown (from {})", host(&s.source)),
                Some(s) => {
                    let value = match key.name {
                        "state_dir" => format!("{:?}", opts.state_dir(c).display().to_string()),
                        _ => s.value.clone(),
                    };
                    format!("{value} (from {})", host(&s.source))
                }
            };
            // The store's variables: unset, there is no store.
            let default = if store {
                "unset: no store"
            } else {
                key.default.words()
            };
            let what = format!("[{}] {}: {}", table.name(), key.name, key.doc);
            entry(&name, &what, default, &current);
        }
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
