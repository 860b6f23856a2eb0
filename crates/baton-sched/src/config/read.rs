//! Reading `baton.toml` and its `jobs.d/` drop-ins into a [`Config`]: every
//! key checked against the keys allowed where it is written, every value
//! against its type and range, and every combination (both or neither of
//! `schedule`/`every`, of `run`/`http`/`steps`; `retries` on a check; a kill grace
//! too long for the takeover grace; a job defined twice) before anything is
//! returned. The first problem, in file order (`baton.toml`, then the
//! drop-ins by name), is the error; a typo is never read as "use the
//! default". [`checked`] goes on past a problem, for an operator's check
//! (`baton doctor`): every section, job and drop-in is checked on its own,
//! and every problem is kept. Within `[scheduler]`, a job and its steps,
//! every key is checked too: a value in error reads as its fallback (the
//! default, or what the job inherits), so the keys after it are still
//! checked, and a rule that combines keys (the self-fencing inequality) is
//! checked only when they all read cleanly, so that no problem is made up
//! from a fallback. `load` and every command get the first problem;
//! nothing is ever built from a fallback. A drop-in is read with the same
//! code as a `[jobs.NAME]` table, so it means and is refused exactly as it
//! would be in `baton.toml`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::doc::{Entry, Kind, Node};
use super::dropin::Found;
use super::error::ConfigError;
use super::model::{
    Action, CatchUp, Command, Config, DaemonSettings, Job, Overlap, RunPolicy, Settings, Source,
    Sourced, Step, StepKind, StoreSettings, When, Zone,
};
use super::store_url::StoreUrl;
use crate::units;

/// The keys of `[scheduler]` that only the scheduler has.
const SCHEDULER_ONLY: &[&str] = &[
    "state_dir",
    "timezone",
    "enabled",
    "alert_command",
    "history_keep",
    "log_keep",
    "max_parallel",
];
/// The keys a job may set for itself, with `[scheduler]` as their default.
const POLICY: &[&str] = &[
    "retries",
    "backoff",
    "backoff_max",
    "no_retry_exit_codes",
    "timeout",
    "ttl",
    "kill_grace",
    "takeover_grace",
    "max_runtime",
    "output_limit",
    "catch_up_window",
    "catch_up",
    "catch_up_max",
    "overlap",
    "contain",
];
/// The keys of a job besides its policy.
const JOB_OWN: &[&str] = &[
    "schedule", "every", "timezone", "enabled", "run", "http", "steps", "checks", "lock", "env",
    "cwd",
];
/// The keys of `[daemon]`.
const DAEMON_KEYS: &[&str] = &[
    "listen",
    "token_file",
    "socket",
    "socket_group",
    "shutdown_grace",
];
/// The keys of `[store]`, each overridden by `BATON_STORE_<KEY>`.
const STORE_KEYS: &[&str] = &["url", "password_file"];
/// The keys of a step.
const STEP_KEYS: &[&str] = &[
    "name",
    "run",
    "http",
    "retries",
    "backoff",
    "backoff_max",
    "no_retry_exit_codes",
    "timeout",
    "kill_grace",
    "output_limit",
    "env",
    "cwd",
];
/// The keys of a check.
const CHECK_KEYS: &[&str] = &[
    "name",
    "run",
    "http",
    "timeout",
    "kill_grace",
    "output_limit",
    "env",
    "cwd",
];

/// What the environment and the command line add: `BATON_<KEY>` values and
/// `--state-dir`.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `BATON_<KEY>` variables that were set (and not empty), by key
    /// (`store_url` for `BATON_STORE_URL`).
    pub env: BTreeMap<String, String>,
    /// `--state-dir`.
    pub state_dir: Option<PathBuf>,
}

impl Overrides {
    /// The `BATON_<KEY>` variables of this process for every `[scheduler]`
    /// key, and `--state-dir`.
    pub fn from_env(state_dir: Option<PathBuf>) -> Self {
        let mut env = BTreeMap::new();
        for key in env_keys().chain(store_env_keys()) {
            let var = env_name(key);
            if let Some(v) = std::env::var_os(&var).filter(|v| !v.is_empty()) {
                env.insert(key.to_owned(), v.to_string_lossy().into_owned());
            }
        }
        Self { env, state_dir }
    }
}

/// The `[scheduler]` keys a `BATON_<KEY>` variable overrides.
pub fn env_keys() -> impl Iterator<Item = &'static str> {
    SCHEDULER_ONLY.iter().chain(POLICY).copied()
}

/// The `[store]` keys a `BATON_STORE_<KEY>` variable overrides, as
/// `store_<key>` (`store_url`).
pub fn store_env_keys() -> impl Iterator<Item = &'static str> {
    ["store_url", "store_password_file"].into_iter()
}

/// `BATON_RETRIES` for `retries`, `BATON_STORE_URL` for `store_url`.
pub fn env_name(key: &str) -> String {
    format!("BATON_{}", key.to_ascii_uppercase())
}

/// The `[scheduler]` keys that are a default for every job but are read
/// from the file only: `BATON_LOCK` is what a step sees as its lock's path.
const FILE_ONLY_DEFAULTS: &[&str] = &["lock"];

/// Every key `[scheduler]` takes.
pub fn scheduler_keys() -> impl Iterator<Item = &'static str> {
    SCHEDULER_ONLY
        .iter()
        .chain(POLICY)
        .chain(FILE_ONLY_DEFAULTS)
        .copied()
}

/// Where a value was written: a file line, or an environment variable.
#[derive(Clone)]
struct At<'a> {
    file: &'a std::sync::Arc<Path>,
    line: Option<u32>,
    env: Option<String>,
}

impl At<'_> {
    fn source(&self) -> Source {
        match (&self.env, self.line) {
            (Some(v), _) => Source::Env(v.clone()),
            (None, Some(line)) => Source::File {
                path: std::sync::Arc::clone(self.file),
                line,
            },
            (None, None) => Source::Default,
        }
    }

    fn text(&self) -> String {
        match (&self.env, self.line) {
            (Some(v), _) => v.clone(),
            (None, Some(line)) => format!("{}:{line}", self.file.display()),
            (None, None) => self.file.display().to_string(),
        }
    }
}

/// A value to read: a TOML node, or an environment variable's text.
enum Raw<'a> {
    Node(&'a Node),
    Text(&'a str),
}

impl Raw<'_> {
    fn shown(&self) -> String {
        match self {
            Raw::Node(n) => n.kind.shown(),
            Raw::Text(t) => format!("{t:?}"),
        }
    }
}

struct Reader<'a> {
    file: &'a std::sync::Arc<Path>,
    dir: &'a Path,
    /// Leases live in the PostgreSQL store (`[store] url`): a renewal may
    /// wait for the store's deadline rather than for the lock file's mutex.
    pg: bool,
}

fn invalid(at: &At<'_>, key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        at: at.text(),
        key: key.to_owned(),
        message: message.into(),
    }
}

impl<'a> Reader<'a> {
    /// The longest one renewal of a lease with `ttl` may wait, in the store
    /// this configuration uses.
    fn renew_wait(&self, ttl: Duration) -> Duration {
        if self.pg {
            crate::store::deadline_for(ttl)
        } else {
            baton_runner::mutex_wait_for(ttl)
        }
    }

    fn at(&self, line: u32) -> At<'a> {
        At {
            file: self.file,
            line: Some(line),
            env: None,
        }
    }

    fn env_at(&self, key: &str) -> At<'a> {
        At {
            file: self.file,
            line: None,
            env: Some(env_name(key)),
        }
    }

    /// The entries of a table node, or an error naming what it is instead.
    fn table<'n>(&self, node: &'n Node, key: &str, line: u32) -> Result<&'n [Entry], ConfigError> {
        match &node.kind {
            Kind::Table(t) => Ok(t),
            other => Err(invalid(
                &self.at(line),
                key,
                format!("is {}, expected a table ([{key}])", other.type_name()),
            )),
        }
    }

    /// Refuses the first key of `entries` not in `allowed`.
    fn only(&self, entries: &[Entry], path: &str, allowed: &[&str]) -> Result<(), ConfigError> {
        match self.unknown_keys(entries, path, allowed).into_iter().next() {
            Some(first) => Err(first),
            None => Ok(()),
        }
    }

    /// A problem for each key of `entries` not in `allowed`, in file order.
    fn unknown_keys(&self, entries: &[Entry], path: &str, allowed: &[&str]) -> Vec<ConfigError> {
        entries
            .iter()
            .filter(|e| !allowed.contains(&e.key.as_str()))
            .map(|e| {
                let hint = closest(&e.key, allowed)
                    .map(|k| format!(" (did you mean {k}?)"))
                    .unwrap_or_default();
                invalid(
                    &self.at(e.line),
                    &join(path, &e.key),
                    format!("unknown key{hint}; allowed here: {}", allowed.join(", ")),
                )
            })
            .collect()
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn get<'n>(entries: &'n [Entry], key: &str) -> Option<&'n Entry> {
    entries.iter().find(|e| e.key == key)
}

/// The allowed key closest to a typo, if one is close: the fewest edits,
/// a swap of two neighbouring letters counting as one (`rnu` is one from
/// `run`, two from `env`); a key needing more edits than about a third of
/// its letters is no suggestion. Ties go to the key that starts with the
/// typo's first letter, then to the one listed first (the order `allowed`
/// gives, which is the documentation's).
fn closest<'k>(typo: &str, allowed: &[&'k str]) -> Option<&'k str> {
    let first = typo.chars().next();
    allowed
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let d = strsim::osa_distance(typo, k);
            (d, k.chars().next() != first, i, *k)
        })
        .filter(|(d, _, _, k)| *d <= (k.chars().count() / 3).clamp(1, 3))
        .min()
        .map(|(_, _, _, k)| k)
}

// ---- values ---------------------------------------------------------------

fn string(raw: &Raw<'_>, at: &At<'_>, key: &str, what: &str) -> Result<String, ConfigError> {
    match raw {
        Raw::Node(Node {
            kind: Kind::Str(s), ..
        }) => Ok(s.clone()),
        Raw::Text(t) => Ok((*t).to_owned()),
        Raw::Node(n) => Err(invalid(
            at,
            key,
            format!(
                "is {} ({}), expected {what}",
                n.kind.type_name(),
                n.kind.shown()
            ),
        )),
    }
}

/// The path of a file holding a secret (`holding` names it): not empty, and
/// relative to the configuration file, wherever baton runs, as `state_dir`.
fn secret_file(
    r: &Reader<'_>,
    raw: &Raw<'_>,
    at: &At<'_>,
    key: &str,
    holding: &str,
) -> Result<Option<PathBuf>, ConfigError> {
    let s = string(
        raw,
        at,
        key,
        &format!("the path of a file holding {holding}"),
    )?;
    if s.trim().is_empty() {
        return Err(invalid(
            at,
            key,
            format!("is empty: give the path of a file holding {holding}, or leave the key out"),
        ));
    }
    Ok(Some(r.dir.join(s)))
}

/// A directory's path: a string with no NUL character (no path can hold
/// one).
fn directory(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<String, ConfigError> {
    let s = string(raw, at, key, "a directory")?;
    if s.contains('\0') {
        return Err(invalid(
            at,
            key,
            "contains a NUL character, which no path can hold",
        ));
    }
    Ok(s)
}

fn lock_name(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<String, ConfigError> {
    let l = string(raw, at, key, "a lock name")?;
    if !valid_name(&l) {
        return Err(invalid(
            at,
            key,
            format!("= {l:?}: a lock name is 1 to 64 characters of A-Z a-z 0-9 _ . -"),
        ));
    }
    if l.starts_with('.') {
        return Err(invalid(
            at,
            key,
            format!(
                "= {l:?}: a lock name may not start with '.' (`.` and `..` are no names, and \
                 `baton lock` refuses them)"
            ),
        ));
    }
    Ok(l)
}

fn catch_up(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<CatchUp, ConfigError> {
    let what = "one of \"latest\", \"none\", \"all\"";
    match string(raw, at, key, what)?.as_str() {
        "latest" => Ok(CatchUp::Latest),
        "none" => Ok(CatchUp::None),
        "all" => Ok(CatchUp::All),
        other => Err(invalid(at, key, format!("= {other:?}: expected {what}"))),
    }
}

fn overlap(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Overlap, ConfigError> {
    let what = "\"skip\" or \"queue\"";
    match string(raw, at, key, what)?.as_str() {
        "skip" => Ok(Overlap::Skip),
        "queue" => Ok(Overlap::Queue),
        other => Err(invalid(at, key, format!("= {other:?}: expected {what}"))),
    }
}

fn duration(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Duration, ConfigError> {
    let what = "a duration such as \"30s\", \"15m\", \"2h\", \"1d\", \"1h30m\", or whole seconds";
    match raw {
        Raw::Node(Node {
            kind: Kind::Int(n), ..
        }) => u64::try_from(*n)
            .ok()
            .map(Duration::from_secs)
            .filter(|d| *d <= units::MAX_DURATION)
            .ok_or_else(|| invalid(at, key, format!("= {n}: expected {what}, zero or more"))),
        _ => {
            let s = string(raw, at, key, what)?;
            units::parse_duration(&s)
                .map_err(|e| invalid(at, key, format!("= {}: {e}", raw.shown())))
        }
    }
}

/// A duration where 0 means none.
fn limit(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Option<Duration>, ConfigError> {
    Ok(Some(duration(raw, at, key)?).filter(|d| !d.is_zero()))
}

fn positive(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Duration, ConfigError> {
    let d = duration(raw, at, key)?;
    if d.is_zero() {
        return Err(invalid(
            at,
            key,
            format!("= {}: must be longer than zero", raw.shown()),
        ));
    }
    Ok(d)
}

fn integer(
    raw: &Raw<'_>,
    at: &At<'_>,
    key: &str,
    range: (i128, i128),
) -> Result<i128, ConfigError> {
    let (lo, hi) = range;
    let n = match raw {
        Raw::Node(Node {
            kind: Kind::Int(n), ..
        }) => Some(*n),
        Raw::Text(t) => t.trim().parse::<i128>().ok(),
        Raw::Node(_) => None,
    };
    match n {
        Some(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(invalid(
            at,
            key,
            format!(
                "= {}: expected a whole number from {lo} to {hi}",
                raw.shown()
            ),
        )),
    }
}

fn u32_in(raw: &Raw<'_>, at: &At<'_>, key: &str, lo: u32, hi: u32) -> Result<u32, ConfigError> {
    let n = integer(raw, at, key, (i128::from(lo), i128::from(hi)))?;
    Ok(u32::try_from(n).unwrap_or(hi))
}

fn boolean(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<bool, ConfigError> {
    match raw {
        Raw::Node(Node {
            kind: Kind::Bool(b),
            ..
        }) => Ok(*b),
        Raw::Text(t) => match t.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(invalid(at, key, format!("= {t:?}: expected true or false"))),
        },
        Raw::Node(n) => Err(invalid(
            at,
            key,
            format!("= {}: expected true or false", n.kind.shown()),
        )),
    }
}

fn size(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<u64, ConfigError> {
    match raw {
        Raw::Node(Node {
            kind: Kind::Int(n), ..
        }) => u64::try_from(*n)
            .map_err(|_| invalid(at, key, format!("= {n}: expected {}", units::SIZE_SYNTAX))),
        _ => {
            let s = string(raw, at, key, "a size such as \"1MiB\"")?;
            units::parse_size(&s).map_err(|e| invalid(at, key, format!("= {}: {e}", raw.shown())))
        }
    }
}

fn exit_codes(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Vec<i32>, ConfigError> {
    let what = "a list of exit codes from 0 to 255, such as [2]";
    let items: Vec<Option<i128>> = match raw {
        Raw::Node(Node {
            kind: Kind::Array(a),
            ..
        }) => a
            .iter()
            .map(|n| match n.kind {
                Kind::Int(i) => Some(i),
                _ => None,
            })
            .collect(),
        Raw::Text(t) => t
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().ok())
            .collect(),
        Raw::Node(n) => {
            return Err(invalid(
                at,
                key,
                format!("= {}: expected {what}", n.kind.shown()),
            ));
        }
    };
    items
        .into_iter()
        .map(|i| match i {
            Some(n) if (0..=255).contains(&n) => Ok(i32::try_from(n).unwrap_or(0)),
            _ => Err(invalid(
                at,
                key,
                format!("= {}: expected {what}", raw.shown()),
            )),
        })
        .collect()
}

fn command(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Command, ConfigError> {
    let c = command_of(raw, at, key)?;
    let nul = match &c {
        Command::Shell(s) => s.contains('\0'),
        Command::Argv(v) => v.iter().any(|a| a.contains('\0')),
    };
    if nul {
        return Err(invalid(
            at,
            key,
            "contains a NUL character, which no command line can hold",
        ));
    }
    Ok(c)
}

fn command_of(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Command, ConfigError> {
    let what = "a command line (a string, run by /bin/sh -c) or a program and its arguments \
                (a list of strings)";
    match raw {
        Raw::Node(Node {
            kind: Kind::Str(s), ..
        }) if s.trim().is_empty() => Err(invalid(at, key, format!("is empty: expected {what}"))),
        Raw::Node(Node {
            kind: Kind::Str(s), ..
        }) => Ok(Command::Shell(s.clone())),
        Raw::Text(t) if t.trim().is_empty() => {
            Err(invalid(at, key, format!("is empty: expected {what}")))
        }
        Raw::Text(t) => Ok(Command::Shell((*t).to_owned())),
        Raw::Node(Node {
            kind: Kind::Array(a),
            ..
        }) => {
            let argv: Option<Vec<String>> = a
                .iter()
                .map(|n| match &n.kind {
                    Kind::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect();
            match argv {
                Some(v) if !v.is_empty() && !v[0].is_empty() => Ok(Command::Argv(v)),
                _ => Err(invalid(
                    at,
                    key,
                    format!("= {}: expected {what}", raw.shown()),
                )),
            }
        }
        Raw::Node(n) => Err(invalid(
            at,
            key,
            format!("is {}: expected {what}", n.kind.type_name()),
        )),
    }
}

/// The keys of a step's `http` table.
const HTTP_KEYS: &[&str] = &["url", "method", "body", "headers"];

/// What a step (or a job's single step) does: its `run` or its `http`, and
/// the line it is written on; `None` when it has neither.
fn action(
    r: &Reader<'_>,
    entries: &[Entry],
    path: &str,
) -> Result<Option<(u32, Sourced<Action>)>, ConfigError> {
    let (e, value) = match (get(entries, "run"), get(entries, "http")) {
        (Some(run), Some(h)) => {
            return Err(invalid(
                &r.at(run.line.max(h.line)),
                path,
                "has both run and http: give exactly one",
            ));
        }
        (None, None) => return Ok(None),
        (Some(run), None) => (
            run,
            Action::Command(command(
                &Raw::Node(&run.value),
                &r.at(run.line),
                &join(path, "run"),
            )?),
        ),
        (None, Some(h)) => (h, Action::Http(http(r, h, &join(path, "http"))?)),
    };
    let at = r.at(e.line);
    Ok(Some((
        e.line,
        Sourced {
            value,
            source: at.source(),
            inherited: false,
        },
    )))
}

/// `http = { url = "…", method = "POST", body = "…", headers = { … } }`.
fn http(r: &Reader<'_>, e: &Entry, key: &str) -> Result<crate::http::HttpRequest, ConfigError> {
    use crate::http::{HttpRequest, InvalidHttp};
    let entries = r.table(&e.value, key, e.line)?;
    r.only(entries, key, HTTP_KEYS)?;
    let text = |k: &str, what: &str| -> Result<Option<(At<'_>, String)>, ConfigError> {
        get(entries, k)
            .map(|v| {
                let at = r.at(v.line);
                string(&Raw::Node(&v.value), &at, &join(key, k), what).map(|s| (at, s))
            })
            .transpose()
    };
    let Some((url_at, url)) = text("url", "an http:// or https:// URL")? else {
        return Err(invalid(
            &r.at(e.line),
            key,
            "has no url: give the URL to send to (url = \"https://…\")",
        ));
    };
    let method = text("method", "an HTTP method such as \"POST\"")?;
    let body = text("body", "a string")?;
    let mut headers = Vec::new();
    let mut headers_at = r.at(e.line);
    if let Some(h) = get(entries, "headers") {
        headers_at = r.at(h.line);
        let hkey = join(key, "headers");
        let Kind::Table(t) = &h.value.kind else {
            return Err(invalid(
                &headers_at,
                &hkey,
                format!(
                    "is {}: expected a table of headers, such as {{ Authorization = \"Bearer …\" }}",
                    h.value.kind.type_name()
                ),
            ));
        };
        for v in t {
            let at = r.at(v.line);
            let value = string(&Raw::Node(&v.value), &at, &join(&hkey, &v.key), "a string")?;
            headers.push((v.key.clone(), value));
        }
    }
    let (method_at, method) = match method {
        Some((at, m)) => (at, m),
        None => (r.at(e.line), "POST".to_owned()),
    };
    HttpRequest::new(&url, &method, body.map(|(_, b)| b), headers).map_err(|err| {
        let (at, part) = match &err {
            InvalidHttp::Url(_) => (url_at, "url".to_owned()),
            InvalidHttp::Method(_) | InvalidHttp::Connect | InvalidHttp::BodyWithHead => {
                (method_at, "method".to_owned())
            }
            InvalidHttp::HeaderName(n)
            | InvalidHttp::HeaderValue(n, _)
            | InvalidHttp::Reserved(n)
            | InvalidHttp::Framing(n)
            | InvalidHttp::Duplicate(n) => (headers_at, format!("headers.{n}")),
        };
        invalid(&at, &join(key, &part), err.to_string())
    })
}

fn zone(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Zone, ConfigError> {
    let name = string(
        raw,
        at,
        key,
        "an IANA time zone name such as \"Europe/Berlin\"",
    )?;
    match jiff::tz::TimeZone::get(&name) {
        Ok(tz) => Ok(Zone { name, tz }),
        Err(_) => Err(invalid(
            at,
            key,
            format!(
                "= {}: unknown time zone; use an IANA name such as \"Europe/Berlin\", \
                 \"Asia/Kolkata\" or \"UTC\"",
                raw.shown()
            ),
        )),
    }
}

fn env_table(node: &Node, at: &At<'_>, key: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let Kind::Table(t) = &node.kind else {
        return Err(invalid(
            at,
            key,
            format!(
                "is {}: expected a table of variables, such as {{ MAX_CALLS = \"1500\" }}",
                node.kind.type_name()
            ),
        ));
    };
    t.iter()
        .map(|e| {
            let valid_name = !e.key.is_empty()
                && !e.key.contains('=')
                && !e.key.contains('\0')
                && !e.key.starts_with(|c: char| c.is_ascii_digit());
            if !valid_name {
                return Err(invalid(
                    at,
                    &join(key, &e.key),
                    "is not a valid environment variable name",
                ));
            }
            match &e.value.kind {
                Kind::Str(s) if s.contains('\0') => Err(invalid(
                    at,
                    &join(key, &e.key),
                    "contains a NUL character, which no environment variable can hold",
                )),
                Kind::Str(s) => Ok((e.key.clone(), s.clone())),
                Kind::Int(n) => Ok((e.key.clone(), n.to_string())),
                Kind::Bool(b) => Ok((e.key.clone(), b.to_string())),
                other => Err(invalid(
                    at,
                    &join(key, &e.key),
                    format!("is {}: expected a string", other.type_name()),
                )),
            }
        })
        .collect()
}

/// A name for a job or a lock: `[A-Za-z0-9_.-]{1,64}`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

// ---- the document ---------------------------------------------------------

/// Reads a parsed document and the drop-ins beside it; `file` is where the
/// document came from (for messages, and for resolving relative paths,
/// also those written in a drop-in). The document is read whole before
/// any drop-in, and the drop-ins in the order given. The error is the
/// first problem [`checked`] finds.
pub(super) fn document(
    root: &Node,
    file: &Path,
    over: &Overrides,
    dropins: &[Found],
) -> Result<Config, ConfigError> {
    let c = checked(root, file, over, dropins);
    if let Some(first) = c.problems.into_iter().next() {
        return Err(first);
    }
    // OK because a check that found no problem read every section.
    Ok(c.config.expect("a configuration without problems"))
}

/// What a check of a configuration found: every problem, in file order
/// (`baton.toml`, then the drop-ins by name), and the configuration when
/// its sections could be read.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The configuration without the jobs that have a problem: `None` when
    /// the file could not be read, or `[scheduler]`, `[daemon]` or
    /// `[store]` has a problem.
    pub config: Option<Config>,
    /// Every problem found. Each section, each job and each of their keys
    /// is checked on its own (`[daemon]` and `[store]` stop at their
    /// first).
    pub problems: Vec<ConfigError>,
    /// `[scheduler]` has a problem: the jobs, which inherit from it, were
    /// checked with its default for each key in error.
    pub scheduler_defaulted: bool,
    /// The jobs defined with a problem (a drop-in's by its file's name):
    /// they are not in `config`.
    pub unread_jobs: BTreeSet<String>,
}

impl Checked {
    /// A check that stopped at one problem.
    pub(super) fn failed(problems: Vec<ConfigError>) -> Self {
        Self {
            config: None,
            problems,
            scheduler_defaulted: false,
            unread_jobs: BTreeSet::new(),
        }
    }
}

/// Checks a parsed document and the drop-ins beside it as [`document`]
/// reads them, going on past a problem: each section, each job and each
/// drop-in is checked on its own. With a `[scheduler]` in error, the jobs
/// are checked with its default for each key in error, and no
/// configuration is returned.
pub(super) fn checked(root: &Node, file: &Path, over: &Overrides, dropins: &[Found]) -> Checked {
    let dir = file.parent().unwrap_or(Path::new("/"));
    let shared: std::sync::Arc<Path> = std::sync::Arc::from(file);
    let r = Reader {
        file: &shared,
        dir,
        pg: false,
    };
    let top = match r.table(root, "", root.line) {
        Ok(t) => t,
        Err(e) => return Checked::failed(vec![e]),
    };
    let mut problems = Vec::new();
    if let Err(e) = r.only(top, "", &["scheduler", "daemon", "store", "jobs"]) {
        problems.push(e);
    }
    let store = store(&r, get(top, "store"), over);
    // A `[store]` with a problem was still meant: its jobs are checked as a
    // store's.
    let pg = match &store {
        Ok(s) => s.is_some(),
        Err(_) => true,
    };
    let r = Reader { pg, ..r };
    let store = kept(store, &mut problems);
    let before = problems.len();
    let settings = scheduler(&r, get(top, "scheduler"), over, &mut problems);
    let scheduler_defaulted = problems.len() > before;
    let daemon = kept(daemon(&r, get(top, "daemon")), &mut problems);
    let mut unread_jobs = BTreeSet::new();
    let mut jobs = BTreeMap::new();
    // Every job defined, valid or not, and where: a drop-in that defines it
    // again is refused either way.
    let mut defined: BTreeMap<String, String> = BTreeMap::new();
    if let Some(e) = get(top, "jobs") {
        match r.table(&e.value, "jobs", e.line) {
            Ok(entries) => {
                for j in entries {
                    defined.insert(j.key.clone(), r.at(j.line).text());
                    match self::job(&r, j, &settings) {
                        Ok(job) => {
                            jobs.insert(job.name.clone(), job);
                        }
                        Err(mut found) => {
                            unread_jobs.insert(j.key.clone());
                            problems.append(&mut found);
                        }
                    }
                }
            }
            Err(e) => problems.push(e),
        }
    }
    for found in dropins {
        let root = match super::parse_doc(&found.text, &found.path) {
            Ok(root) => root,
            Err(e) => {
                unread_jobs.insert(found.name.clone());
                problems.push(e);
                continue;
            }
        };
        let shared: std::sync::Arc<Path> = std::sync::Arc::from(found.path.as_path());
        let d = Reader {
            file: &shared,
            dir,
            pg,
        };
        let job = match dropin_job(&d, &root, &found.name, &settings) {
            Ok(job) => job,
            Err(mut found_problems) => {
                unread_jobs.insert(found.name.clone());
                problems.append(&mut found_problems);
                continue;
            }
        };
        if let Some(first) = defined.get(&job.name) {
            problems.push(invalid(
                &d.at(source_line(&job.source)),
                &join("jobs", &job.name),
                format!(
                    "is also defined at {first}: define a job in baton.toml or in jobs.d/, not both"
                ),
            ));
            continue;
        }
        defined.insert(job.name.clone(), job.source.to_string());
        jobs.insert(job.name.clone(), job);
    }
    if !pg {
        problems.extend(claims_fit(&jobs));
    }
    let config = match (store, daemon) {
        (Some(store), Some(daemon)) if !scheduler_defaulted => Some(Config {
            path: file.to_owned(),
            settings,
            daemon,
            store,
            jobs,
        }),
        _ => None,
    };
    Checked {
        config,
        problems,
        scheduler_defaulted,
        unread_jobs,
    }
}

/// The value, or `None` with its problem kept.
fn kept<T>(found: Result<T, ConfigError>, problems: &mut Vec<ConfigError>) -> Option<T> {
    found.map_err(|e| problems.push(e)).ok()
}

/// The value, or `fallback` with its problem kept: what checking goes on
/// with, never what is built.
fn kept_or<T>(
    found: Result<T, ConfigError>,
    problems: &mut Vec<ConfigError>,
    fallback: impl FnOnce() -> T,
) -> T {
    kept(found, problems).unwrap_or_else(fallback)
}

/// Refuses a lock file shared by more jobs than its record can keep a claim
/// for: each job's claim (the occurrence it last started) is one of the two
/// records that keep an occurrence from running twice, and none may ever be
/// dropped to make room. (A store keeps claims in rows, without this limit.)
/// One problem per lock that is too full.
fn claims_fit(jobs: &BTreeMap<String, Job>) -> Vec<ConfigError> {
    let mut by_lock: BTreeMap<&str, Vec<&Job>> = BTreeMap::new();
    for j in jobs.values() {
        by_lock.entry(j.lock.value.as_str()).or_default().push(j);
    }
    let mut full = Vec::new();
    for (lock, mates) in by_lock {
        if baton_lease::Claims::room_for(mates.iter().map(|j| j.name.len())) {
            continue;
        }
        let last = mates[mates.len() - 1];
        full.push(ConfigError::Invalid {
            at: last.lock.source.to_string(),
            key: join(&join("jobs", &last.name), "lock"),
            message: format!(
                "= {lock:?}: the lock is shared by {} jobs, more than its lock file can keep a \
                 claim for (the occurrence each job last started, {} bytes for all of them); \
                 give some of them a lock of their own, or shorter names",
                mates.len(),
                baton_lease::record::MAX_CLAIMS_BYTES
            ),
        });
    }
    full
}

fn source_line(s: &Source) -> u32 {
    match s {
        Source::File { line, .. } => *line,
        _ => 1,
    }
}

/// The line `[jobs.NAME]` is written on in a parsed document, if it defines
/// that job.
pub(super) fn job_line(root: &Node, name: &str) -> Option<u32> {
    let Kind::Table(top) = &root.kind else {
        return None;
    };
    let Kind::Table(jobs) = &get(top, "jobs")?.value.kind else {
        return None;
    };
    get(jobs, name).map(|e| e.line)
}

/// The job a drop-in `jobs.d/NAME.toml` defines: its keys at the top
/// (the canonical form), or a single `[jobs.NAME]` table; or its problems,
/// as [`job`]'s.
fn dropin_job(
    r: &Reader<'_>,
    root: &Node,
    name: &str,
    settings: &Settings,
) -> Result<Job, Vec<ConfigError>> {
    let top = r.table(root, "", root.line).map_err(|e| vec![e])?;
    for e in top {
        if ["scheduler", "daemon", "store"].contains(&e.key.as_str()) {
            return Err(vec![invalid(
                &r.at(e.line),
                &e.key,
                format!(
                    "[{}] belongs in baton.toml: a drop-in defines one job, the one its file \
                     is named after ({name})",
                    e.key
                ),
            )]);
        }
    }
    let Some(jobs) = get(top, "jobs") else {
        let whole = Entry {
            key: name.to_owned(),
            line: root.line,
            value: root.clone(),
        };
        return job(r, &whole, settings);
    };
    let only_this = format!(
        "a drop-in named {name}.toml holds either the job's keys at the top, or the single \
         table [jobs.{name}] and nothing else"
    );
    if let Some(other) = top.iter().find(|e| e.key != "jobs") {
        return Err(vec![invalid(&r.at(other.line), &other.key, only_this)]);
    }
    let entries = r
        .table(&jobs.value, "jobs", jobs.line)
        .map_err(|e| vec![e])?;
    match entries {
        [one] if one.key == name => job(r, one, settings),
        [] => Err(vec![invalid(&r.at(jobs.line), "jobs", only_this)]),
        _ => {
            let other = entries
                .iter()
                .find(|e| e.key != name)
                .unwrap_or(&entries[0]);
            Err(vec![invalid(
                &r.at(other.line),
                &join("jobs", &other.key),
                only_this,
            )])
        }
    }
}

/// `[daemon]`: where `baton daemon` listens, its token, its socket, its
/// shutdown grace.
fn daemon(r: &Reader<'_>, e: Option<&Entry>) -> Result<DaemonSettings, ConfigError> {
    let empty = Vec::new();
    let entries = match e {
        Some(e) => r.table(&e.value, "daemon", e.line)?,
        None => &empty,
    };
    r.only(entries, "daemon", DAEMON_KEYS)?;
    let none = Overrides::default();
    let listen = setting_in(
        r,
        "daemon",
        entries,
        &none,
        "listen",
        || super::Listen::Addr(std::net::SocketAddr::from(([127, 0, 0, 1], 8677))),
        |raw, at, key| {
            let what = super::LISTEN_FORMS;
            let s = string(raw, at, key, what)?;
            s.parse().map_err(|e| invalid(at, key, format!("= {e}")))
        },
    )?;
    let token_file = setting_in(
        r,
        "daemon",
        entries,
        &none,
        "token_file",
        || None,
        |raw, at, key| secret_file(r, raw, at, key, "the token"),
    )?;
    let socket = setting_in(
        r,
        "daemon",
        entries,
        &none,
        "socket",
        || None,
        |raw, at, key| {
            let what = "the path of the API's Unix socket, such as \"/run/baton/api.sock\"";
            let s = string(raw, at, key, what)?;
            if s.trim().is_empty() || s.contains('\0') {
                return Err(invalid(
                    at,
                    key,
                    format!(
                        "= {s:?}: expected {what}, or leave the key out for STATE_DIR/daemon.sock"
                    ),
                ));
            }
            Ok(Some(r.dir.join(s)))
        },
    )?;
    let socket_group = setting_in(
        r,
        "daemon",
        entries,
        &none,
        "socket_group",
        || None,
        |raw, at, key| {
            let what = "a group's name or number, such as \"baton\"";
            let s = string(raw, at, key, what)?;
            if s.is_empty()
                || s.chars()
                    .any(|c| c == ':' || c.is_whitespace() || c.is_control())
            {
                return Err(invalid(at, key, format!("= {s:?}: expected {what}")));
            }
            Ok(Some(s))
        },
    )?;
    let shutdown_grace = setting_in(
        r,
        "daemon",
        entries,
        &none,
        "shutdown_grace",
        || Duration::from_secs(60),
        duration,
    )?;
    Ok(DaemonSettings {
        listen,
        token_file,
        socket,
        socket_group,
        shutdown_grace,
    })
}

/// `[store]`: the PostgreSQL URL and where its password is. `None` when
/// neither the file nor `BATON_STORE_URL` names a URL; a `[store]` (or a
/// `BATON_STORE_PASSWORD_FILE`) without one is refused, as a setting that
/// would be silently ignored.
fn store(
    r: &Reader<'_>,
    e: Option<&Entry>,
    over: &Overrides,
) -> Result<Option<StoreSettings>, ConfigError> {
    let empty = Vec::new();
    let entries = match e {
        Some(e) => r.table(&e.value, "store", e.line)?,
        None => &empty,
    };
    r.only(entries, "store", STORE_KEYS)?;
    let url = setting_in(
        r,
        "store",
        entries,
        over,
        "url",
        || None,
        |raw, at, key| {
            let what = "a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE)";
            let s = string(raw, at, key, what)?;
            StoreUrl::parse(&s)
                .map(Some)
                .map_err(|m| invalid(at, key, m))
        },
    )?;
    let password_file = setting_in(
        r,
        "store",
        entries,
        over,
        "password_file",
        || None,
        |raw, at, key| secret_file(r, raw, at, key, "the password"),
    )?;
    let Some(value) = url.value else {
        if let Some(e) = e {
            return Err(invalid(
                &r.at(e.line),
                "store.url",
                "is missing: [store] needs url = \"postgres://USER@HOST/DATABASE\" (or \
                 BATON_STORE_URL); leave [store] out to use local files and SQLite",
            ));
        }
        if password_file.value.is_some() {
            return Err(invalid(
                &r.env_at("store_password_file"),
                "store.password_file",
                "is set but no store url is: set [store] url or BATON_STORE_URL",
            ));
        }
        return Ok(None);
    };
    if value.has_password() && password_file.value.is_some() {
        return Err(invalid(
            &match &password_file.source {
                Source::Env(_) => r.env_at("store_password_file"),
                _ => r.at(source_line(&password_file.source)),
            },
            "store.password_file",
            format!(
                "is set, and the url ({}) holds a password too: give the password in one \
                 place only",
                value.masked()
            ),
        ));
    }
    Ok(Some(StoreSettings {
        url: Sourced {
            value,
            source: url.source,
            inherited: false,
        },
        password_file,
    }))
}

/// One `[scheduler]` value: the environment's, else the file's, else the
/// default; `read` turns the raw value into the typed one. A value in
/// error is kept in `problems`, and reads as the default.
fn setting<T>(
    r: &Reader<'_>,
    entries: &[Entry],
    over: &Overrides,
    key: &str,
    default: impl Fn() -> T,
    read: impl Fn(&Raw<'_>, &At<'_>, &str) -> Result<T, ConfigError>,
    problems: &mut Vec<ConfigError>,
) -> Sourced<T> {
    let found = setting_in(r, "scheduler", entries, over, key, &default, read);
    kept_or(found, problems, || Sourced::default_value(default()))
}

/// [`setting`] for the table `table`.
fn setting_in<T>(
    r: &Reader<'_>,
    table: &str,
    entries: &[Entry],
    over: &Overrides,
    key: &str,
    default: impl FnOnce() -> T,
    read: impl Fn(&Raw<'_>, &At<'_>, &str) -> Result<T, ConfigError>,
) -> Result<Sourced<T>, ConfigError> {
    let path = join(table, key);
    // `[scheduler] retries` is BATON_RETRIES; `[store] url` BATON_STORE_URL.
    let env_key = if table == "scheduler" {
        key.to_owned()
    } else {
        format!("{table}_{key}")
    };
    if let Some(text) = over.env.get(&env_key) {
        let at = r.env_at(&env_key);
        let value = read(&Raw::Text(text), &at, &path)?;
        return Ok(Sourced {
            value,
            source: at.source(),
            inherited: false,
        });
    }
    match get(entries, key) {
        Some(e) => {
            let at = r.at(e.line);
            let value = read(&Raw::Node(&e.value), &at, &path)?;
            Ok(Sourced {
                value,
                source: at.source(),
                inherited: false,
            })
        }
        None => Ok(Sourced::default_value(default())),
    }
}

/// `[scheduler]`: its settings, each key checked on its own; a key in
/// error is kept in `problems` and reads as its default.
fn scheduler(
    r: &Reader<'_>,
    e: Option<&Entry>,
    over: &Overrides,
    p: &mut Vec<ConfigError>,
) -> Settings {
    let before = p.len();
    let empty = Vec::new();
    let entries = match e {
        Some(e) => kept_or(r.table(&e.value, "scheduler", e.line), p, || &empty),
        None => &empty,
    };
    let allowed: Vec<&str> = scheduler_keys().collect();
    p.extend(r.unknown_keys(entries, "scheduler", &allowed));
    let state_dir = match &over.state_dir {
        Some(path) => Sourced {
            value: path.clone(),
            source: Source::Flag("--state-dir".into()),
            inherited: false,
        },
        None => setting(
            r,
            entries,
            over,
            "state_dir",
            default_state_dir,
            |raw, at, key| {
                let s = string(raw, at, key, "a directory")?;
                let dir = PathBuf::from(&s);
                if dir.is_absolute() {
                    return Ok(dir);
                }
                if at.env.is_some() {
                    return Err(invalid(
                        at,
                        key,
                        format!(
                            "= {s:?} is a relative path: a state directory must be absolute, or runs \
                         started from different directories would use different locks"
                        ),
                    ));
                }
                // Written in the file: relative to the file, wherever baton runs.
                Ok(r.dir.join(dir))
            },
            p,
        ),
    };
    let timezone = setting(r, entries, over, "timezone", system_zone, zone, p);
    let enabled = setting(r, entries, over, "enabled", || true, boolean, p);
    let alert_command = setting(
        r,
        entries,
        over,
        "alert_command",
        || None,
        |raw, at, key| command(raw, at, key).map(Some),
        p,
    );
    let history_keep = setting(
        r,
        entries,
        over,
        "history_keep",
        || 1000,
        |raw, at, key| u32_in(raw, at, key, 1, 1_000_000),
        p,
    );
    let log_keep = setting(
        r,
        entries,
        over,
        "log_keep",
        || Duration::from_secs(30 * 86_400),
        positive,
        p,
    );
    let lock = match get(entries, "lock") {
        Some(e) => {
            let at = r.at(e.line);
            let key = join("scheduler", "lock");
            match kept(lock_name(&Raw::Node(&e.value), &at, &key), p) {
                Some(name) => Sourced {
                    value: Some(name),
                    source: at.source(),
                    inherited: false,
                },
                None => Sourced::default_value(None),
            }
        }
        None => Sourced::default_value(None),
    };
    let max_parallel = setting(
        r,
        entries,
        over,
        "max_parallel",
        || 64,
        |raw, at, key| u32_in(raw, at, key, 1, 10_000),
        p,
    );
    let s = |k: u64| Duration::from_secs(k);
    let policy = RunPolicy {
        retries: setting(
            r,
            entries,
            over,
            "retries",
            || 0,
            |raw, at, key| u32_in(raw, at, key, 0, 1000),
            p,
        ),
        backoff: setting(r, entries, over, "backoff", || s(30), duration, p),
        backoff_max: setting(r, entries, over, "backoff_max", || s(900), duration, p),
        no_retry_exit_codes: setting(
            r,
            entries,
            over,
            "no_retry_exit_codes",
            || vec![2],
            exit_codes,
            p,
        ),
        timeout: setting(r, entries, over, "timeout", || Some(s(3600)), limit, p),
        ttl: setting(r, entries, over, "ttl", || s(30), positive, p),
        kill_grace: setting(r, entries, over, "kill_grace", || s(10), duration, p),
        takeover_grace: setting(r, entries, over, "takeover_grace", || s(30), duration, p),
        max_runtime: setting(r, entries, over, "max_runtime", || Some(s(7200)), limit, p),
        output_limit: setting(r, entries, over, "output_limit", || 1 << 20, size, p),
        catch_up_window: setting(r, entries, over, "catch_up_window", || s(3600), positive, p),
        catch_up: setting(
            r,
            entries,
            over,
            "catch_up",
            || CatchUp::Latest,
            catch_up,
            p,
        ),
        catch_up_max: setting(
            r,
            entries,
            over,
            "catch_up_max",
            || 100,
            |raw, at, key| u32_in(raw, at, key, 1, 100_000),
            p,
        ),
        overlap: setting(r, entries, over, "overlap", || Overlap::Skip, overlap, p),
        contain: setting(r, entries, over, "contain", || true, boolean, p),
    };
    // Checked only on values read cleanly: a default standing in for one
    // in error could make up a problem.
    if p.len() == before {
        let fenced = check_fencing(
            &r.at(e.map_or(1, |e| e.line)),
            r.renew_wait(policy.ttl.value),
            "scheduler",
            &policy.ttl,
            (&policy.kill_grace, "scheduler"),
            &policy.takeover_grace,
        );
        kept(fenced, p);
    }
    Settings {
        state_dir,
        timezone,
        enabled,
        alert_command,
        history_keep,
        log_keep,
        max_parallel,
        lock,
        policy,
    }
}

/// The state directory `baton exec` would use.
fn default_state_dir() -> PathBuf {
    crate::state_dir::default_dir().unwrap_or_else(|| PathBuf::from("/var/lib/baton"))
}

/// The system's zone.
fn system_zone() -> Zone {
    let tz = jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC);
    let name = tz.iana_name().unwrap_or("UTC").to_owned();
    Zone { name, tz }
}

/// The self-fencing inequality, with the keys' values and where they come
/// from in the message. `path` is the table being checked; `grace_table` the
/// table a `kill_grace` of its own would be set in (a step's, for a step).
/// The refusal names the key at fault where it is set: `ttl` when it is
/// below the minimum; otherwise, of `kill_grace` and `takeover_grace`, the
/// one set nearest the table (its own before one it inherits, one set before
/// a default), `kill_grace` when both are as near.
fn check_fencing(
    at: &At<'_>,
    wait: Duration,
    path: &str,
    ttl: &Sourced<Duration>,
    (grace, grace_table): (&Sourced<Duration>, &str),
    takeover: &Sourced<Duration>,
) -> Result<(), ConfigError> {
    baton_runner::check_self_fencing(
        ttl.value,
        wait,
        grace.value,
        takeover.value,
        ("ttl", "kill_grace", "takeover_grace"),
    )
    .map_err(|e| {
        let nearness = |s: &Sourced<Duration>| match (&s.source, s.inherited) {
            (Source::Default, _) => 0,
            (_, true) => 1,
            (_, false) => 2,
        };
        let (key, at_fault, table) = if ttl.value < baton_runner::MIN_TTL {
            ("ttl", ttl, path)
        } else if nearness(takeover) > nearness(grace) {
            ("takeover_grace", takeover, path)
        } else {
            ("kill_grace", grace, grace_table)
        };
        let table = if at_fault.inherited {
            "scheduler"
        } else {
            table
        };
        ConfigError::Invalid {
            at: located(at, &at_fault.source),
            key: join(table, key),
            message: e,
        }
    })
}

/// Where a value was set, for a message: its file and line, the variable or
/// the option; where the table is (`at`), for a default.
fn located(at: &At<'_>, source: &Source) -> String {
    match source {
        Source::Default => at.text(),
        other => other.to_string(),
    }
}

/// A value set in `entries` under `key`, or `base` where it is not set (as
/// `base` stands: a job inherits `[scheduler]`'s value marked inherited; a
/// step takes its job's as it is). A value in error is kept in `problems`,
/// and reads as `base`.
fn own<T: Clone>(
    r: &Reader<'_>,
    entries: &[Entry],
    path: &str,
    key: &str,
    base: Sourced<T>,
    read: impl Fn(&Raw<'_>, &At<'_>, &str) -> Result<T, ConfigError>,
    problems: &mut Vec<ConfigError>,
) -> Sourced<T> {
    let Some(e) = get(entries, key) else {
        return base;
    };
    let at = r.at(e.line);
    match kept(read(&Raw::Node(&e.value), &at, &join(path, key)), problems) {
        Some(value) => Sourced {
            value,
            source: at.source(),
            inherited: false,
        },
        None => base,
    }
}

/// A job's policy: its own values where it sets them, `[scheduler]`'s
/// (marked inherited) where it does not, or where its own is in error (kept
/// in `p`).
fn policy(
    r: &Reader<'_>,
    entries: &[Entry],
    path: &str,
    base: &RunPolicy,
    p: &mut Vec<ConfigError>,
) -> RunPolicy {
    RunPolicy {
        retries: own(
            r,
            entries,
            path,
            "retries",
            base.retries.inherit(),
            |raw, at, key| u32_in(raw, at, key, 0, 1000),
            p,
        ),
        backoff: own(
            r,
            entries,
            path,
            "backoff",
            base.backoff.inherit(),
            duration,
            p,
        ),
        backoff_max: own(
            r,
            entries,
            path,
            "backoff_max",
            base.backoff_max.inherit(),
            duration,
            p,
        ),
        no_retry_exit_codes: own(
            r,
            entries,
            path,
            "no_retry_exit_codes",
            base.no_retry_exit_codes.inherit(),
            exit_codes,
            p,
        ),
        timeout: own(
            r,
            entries,
            path,
            "timeout",
            base.timeout.inherit(),
            limit,
            p,
        ),
        ttl: own(r, entries, path, "ttl", base.ttl.inherit(), positive, p),
        kill_grace: own(
            r,
            entries,
            path,
            "kill_grace",
            base.kill_grace.inherit(),
            duration,
            p,
        ),
        takeover_grace: own(
            r,
            entries,
            path,
            "takeover_grace",
            base.takeover_grace.inherit(),
            duration,
            p,
        ),
        max_runtime: own(
            r,
            entries,
            path,
            "max_runtime",
            base.max_runtime.inherit(),
            limit,
            p,
        ),
        output_limit: own(
            r,
            entries,
            path,
            "output_limit",
            base.output_limit.inherit(),
            size,
            p,
        ),
        catch_up_window: own(
            r,
            entries,
            path,
            "catch_up_window",
            base.catch_up_window.inherit(),
            positive,
            p,
        ),
        catch_up: own(
            r,
            entries,
            path,
            "catch_up",
            base.catch_up.inherit(),
            catch_up,
            p,
        ),
        catch_up_max: own(
            r,
            entries,
            path,
            "catch_up_max",
            base.catch_up_max.inherit(),
            |raw, at, key| u32_in(raw, at, key, 1, 100_000),
            p,
        ),
        overlap: own(
            r,
            entries,
            path,
            "overlap",
            base.overlap.inherit(),
            overlap,
            p,
        ),
        contain: own(
            r,
            entries,
            path,
            "contain",
            base.contain.inherit(),
            boolean,
            p,
        ),
    }
}

/// The job `e` defines, with `settings` as what it inherits; or every
/// problem it has. A name that is no job's, or a value that is no table,
/// is its one problem; otherwise each key is checked on its own (a key in
/// error reads as what the job would inherit, or its default), and the
/// self-fencing inequality only once the policy read cleanly.
fn job(r: &Reader<'_>, e: &Entry, settings: &Settings) -> Result<Job, Vec<ConfigError>> {
    let name = e.key.clone();
    let path = join("jobs", &name);
    let at = r.at(e.line);
    if !valid_name(&name) {
        return Err(vec![invalid(
            &at,
            &path,
            format!("{name:?} is not a job name: use 1 to 64 characters of A-Z a-z 0-9 _ . -"),
        )]);
    }
    if name.starts_with('.') {
        return Err(vec![invalid(
            &at,
            &path,
            format!(
                "{name:?}: a job name may not start with '.' (it is its lock's name unless \
                 `lock` says otherwise, and `baton lock` refuses such names)"
            ),
        )]);
    }
    if name == "baton" || name == "alerts" {
        return Err(vec![invalid(
            &at,
            &path,
            format!(
                "{name:?} is reserved: the logs baton_YYYY_MM_DD.log and alerts.log are the \
                 scheduler's own; choose another name"
            ),
        )]);
    }
    let entries = r.table(&e.value, &path, e.line).map_err(|e| vec![e])?;
    let allowed: Vec<&str> = JOB_OWN.iter().chain(POLICY).copied().collect();
    let mut p = r.unknown_keys(entries, &path, &allowed);
    let when = kept(self::when(r, entries, &path, &at), &mut p);
    let timezone = own(
        r,
        entries,
        &path,
        "timezone",
        settings.timezone.inherit(),
        zone,
        &mut p,
    );
    let enabled = own(
        r,
        entries,
        &path,
        "enabled",
        Sourced::default_value(true),
        boolean,
        &mut p,
    );
    let inherited_lock = match &settings.lock.value {
        Some(l) => Sourced {
            value: l.clone(),
            source: settings.lock.source.clone(),
            inherited: true,
        },
        None => Sourced::default_value(name.clone()),
    };
    let lock = own(r, entries, &path, "lock", inherited_lock, lock_name, &mut p);
    let read_own = |key: &str| get(entries, key).map(|e| (r.at(e.line), e));
    let job_env = match read_own("env") {
        Some((at, e)) => kept_or(
            env_table(&e.value, &at, &join(&path, "env")),
            &mut p,
            Vec::new,
        ),
        None => Vec::new(),
    };
    let job_cwd = match read_own("cwd") {
        Some((at, e)) => kept(
            directory(&Raw::Node(&e.value), &at, &join(&path, "cwd")),
            &mut p,
        )
        .map(|d| r.dir.join(d)),
        None => None,
    };
    let before_policy = p.len();
    let policy = self::policy(r, entries, &path, &settings.policy, &mut p);
    if p.len() == before_policy {
        let fenced = check_fencing(
            &at,
            r.renew_wait(policy.ttl.value),
            &path,
            &policy.ttl,
            (&policy.kill_grace, &path),
            &policy.takeover_grace,
        );
        kept(fenced, &mut p);
    }
    let fenced = p.len() == before_policy;
    let steps = match (
        kept(action(r, entries, &path), &mut p),
        get(entries, "steps"),
    ) {
        // A `run` or `http` in error: its problem is kept.
        (None, _) => None,
        (Some(Some((line, run))), Some(st)) => {
            p.push(invalid(
                &r.at(line.max(st.line)),
                &path,
                format!("has both {} and steps: give exactly one", run.value.key()),
            ));
            None
        }
        (Some(None), None) => {
            p.push(invalid(
                &at,
                &path,
                "has neither run nor steps: give one (run = \"/usr/local/bin/backup.sh\", \
                 http = { url = \"https://…\" }, or [[jobs.NAME.steps]] tables)",
            ));
            None
        }
        (Some(Some((line, action))), None) => Some(vec![Step {
            name: name.clone(),
            kind: StepKind::Step,
            action,
            retries: policy.retries.clone(),
            backoff: policy.backoff.clone(),
            backoff_max: policy.backoff_max.clone(),
            no_retry_exit_codes: policy.no_retry_exit_codes.clone(),
            timeout: policy.timeout.clone(),
            kill_grace: policy.kill_grace.clone(),
            output_limit: policy.output_limit.clone(),
            env: job_env.clone(),
            cwd: job_cwd.clone(),
            line,
        }]),
        (Some(None), Some(st)) => Some(self::steps(
            r,
            st,
            (&path, "steps"),
            StepKind::Step,
            &policy,
            (&job_env, &job_cwd),
            &mut p,
        )),
    };
    let checks = match get(entries, "checks") {
        Some(c) => self::steps(
            r,
            c,
            (&path, "checks"),
            StepKind::Check,
            &policy,
            (&job_env, &job_cwd),
            &mut p,
        ),
        None => Vec::new(),
    };
    let mut names: Vec<&str> = Vec::new();
    let all_steps = steps.as_deref().unwrap_or_default();
    let tables = (0..all_steps.len())
        .map(|i| format!("{path}.steps[{i}]"))
        .chain((0..checks.len()).map(|i| format!("{path}.checks[{i}]")));
    for (s, table) in all_steps.iter().chain(&checks).zip(tables) {
        if names.contains(&s.name.as_str()) {
            p.push(invalid(
                &r.at(s.line),
                &path,
                format!(
                    "two steps or checks are named {:?}: names must be unique",
                    s.name
                ),
            ));
            continue;
        }
        names.push(&s.name);
        if !fenced {
            continue;
        }
        // A kill grace the step does not set is its job's, named there.
        let grace_table = if s.kill_grace.source == policy.kill_grace.source {
            path.as_str()
        } else {
            table.as_str()
        };
        let step_fenced = check_fencing(
            &r.at(s.line),
            r.renew_wait(policy.ttl.value),
            &path,
            &policy.ttl,
            (&s.kill_grace, grace_table),
            &policy.takeover_grace,
        );
        kept(step_fenced, &mut p);
    }
    match (when, steps) {
        (Some(when), Some(steps)) if p.is_empty() => Ok(Job {
            name,
            source: at.source(),
            when,
            timezone,
            enabled,
            lock,
            policy,
            steps,
            checks,
        }),
        // Every value missing above kept its problem.
        _ => Err(p),
    }
}

/// When a job runs: its `schedule` or its `every`, exactly one.
fn when(
    r: &Reader<'_>,
    entries: &[Entry],
    path: &str,
    at: &At<'_>,
) -> Result<Sourced<When>, ConfigError> {
    match (get(entries, "schedule"), get(entries, "every")) {
        (Some(s), Some(ev)) => Err(invalid(
            &r.at(s.line.max(ev.line)),
            path,
            "has both schedule and every: give exactly one",
        )),
        (None, None) => Err(invalid(
            at,
            path,
            "has neither schedule nor every: give one (schedule = \"0 3 * * *\", or every = \
             \"15m\")",
        )),
        (Some(s), None) => {
            let at = r.at(s.line);
            let key = join(path, "schedule");
            let text = string(
                &Raw::Node(&s.value),
                &at,
                &key,
                "a cron expression such as \"0 3 * * *\"",
            )?;
            let schedule = baton_cron::Schedule::parse(&text)
                .map_err(|err| invalid(&at, &key, format!("= {text:?}: {err}")))?;
            Ok(Sourced {
                value: When {
                    text: schedule.to_string(),
                    key: "schedule",
                    schedule,
                },
                source: at.source(),
                inherited: false,
            })
        }
        (None, Some(ev)) => {
            let at = r.at(ev.line);
            let key = join(path, "every");
            let period = positive(&Raw::Node(&ev.value), &at, &key)?;
            let schedule = baton_cron::Schedule::every(period)
                .map_err(|err| invalid(&at, &key, format!("= {}: {err}", ev.value.kind.shown())))?;
            Ok(Sourced {
                value: When {
                    text: units::show_duration(period),
                    key: "every",
                    schedule,
                },
                source: at.source(),
                inherited: false,
            })
        }
    }
}

/// The `[[JOB.steps]]` or `[[JOB.checks]]` tables of `e` (`field` of the
/// job at `job_path`): each step read against the job's policy, env and
/// cwd. Each table and each of its keys is checked on its own, its
/// problems kept in `p`; a step with a problem is left out.
fn steps(
    r: &Reader<'_>,
    e: &Entry,
    (job_path, field): (&str, &str),
    kind: StepKind,
    policy: &RunPolicy,
    (job_env, job_cwd): (&[(String, String)], &Option<PathBuf>),
    p: &mut Vec<ConfigError>,
) -> Vec<Step> {
    let path = join(job_path, field);
    let Kind::Array(items) = &e.value.kind else {
        p.push(invalid(
            &r.at(e.line),
            &path,
            format!(
                "is {}: expected [[{path}]] tables, each with a name and a run or an http",
                e.value.kind.type_name()
            ),
        ));
        return Vec::new();
    };
    if items.is_empty() && kind == StepKind::Step {
        p.push(invalid(
            &r.at(e.line),
            &path,
            "is empty: a job needs at least one step",
        ));
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, node) in items.iter().enumerate() {
        let before = p.len();
        let here = format!("{path}[{i}]");
        let Some(entries) = kept(r.table(node, &here, node.line), p) else {
            continue;
        };
        // A check with a retry key is told so, rather than of an unknown key.
        let never_retried = ["retries", "backoff", "backoff_max", "no_retry_exit_codes"];
        if kind == StepKind::Check {
            for k in never_retried {
                if let Some(bad) = get(entries, k) {
                    p.push(invalid(
                        &r.at(bad.line),
                        &join(&here, k),
                        "checks are never retried: remove it (a check runs once, after the \
                         steps, whatever they did)",
                    ));
                }
            }
        }
        let allowed: Vec<&str> = match kind {
            StepKind::Check => CHECK_KEYS.iter().chain(&never_retried).copied().collect(),
            _ => STEP_KEYS.to_vec(),
        };
        p.extend(r.unknown_keys(entries, &here, &allowed));
        let name = match get(entries, "name") {
            Some(n) => {
                let at = r.at(n.line);
                let key = join(&here, "name");
                let named = string(&Raw::Node(&n.value), &at, &key, "a name").and_then(|s| {
                    if valid_name(&s) {
                        Ok(s)
                    } else {
                        Err(invalid(
                            &at,
                            &key,
                            format!("= {s:?}: a name is 1 to 64 characters of A-Z a-z 0-9 _ . -"),
                        ))
                    }
                });
                kept(named, p)
            }
            None => Some(format!("{}-{}", kind.as_str(), i + 1)),
        };
        let action = match kept(self::action(r, entries, &here), p) {
            Some(Some((_, action))) => Some(action),
            Some(None) => {
                p.push(invalid(
                    &r.at(node.line),
                    &here,
                    "has neither run nor http: give the command it runs, or the request it sends",
                ));
                None
            }
            None => None,
        };
        let retries = if kind == StepKind::Check {
            Sourced::default_value(0u32)
        } else {
            own(
                r,
                entries,
                &here,
                "retries",
                policy.retries.clone(),
                |raw, at, key| u32_in(raw, at, key, 0, 1000),
                p,
            )
        };
        let mut env = job_env.to_vec();
        if let Some(e) = get(entries, "env") {
            let found = env_table(&e.value, &r.at(e.line), &join(&here, "env"));
            for (k, v) in kept_or(found, p, Vec::new) {
                env.retain(|(ek, _)| *ek != k);
                env.push((k, v));
            }
        }
        let cwd = match get(entries, "cwd") {
            Some(c) => kept(
                directory(&Raw::Node(&c.value), &r.at(c.line), &join(&here, "cwd")),
                p,
            )
            .map(|d| r.dir.join(d)),
            None => job_cwd.clone(),
        };
        let backoff = own(
            r,
            entries,
            &here,
            "backoff",
            policy.backoff.clone(),
            duration,
            p,
        );
        let backoff_max = own(
            r,
            entries,
            &here,
            "backoff_max",
            policy.backoff_max.clone(),
            duration,
            p,
        );
        let no_retry_exit_codes = own(
            r,
            entries,
            &here,
            "no_retry_exit_codes",
            policy.no_retry_exit_codes.clone(),
            exit_codes,
            p,
        );
        let timeout = own(
            r,
            entries,
            &here,
            "timeout",
            policy.timeout.clone(),
            limit,
            p,
        );
        let kill_grace = own(
            r,
            entries,
            &here,
            "kill_grace",
            policy.kill_grace.clone(),
            duration,
            p,
        );
        let output_limit = own(
            r,
            entries,
            &here,
            "output_limit",
            policy.output_limit.clone(),
            size,
            p,
        );
        // A name or an action missing here kept its problem.
        if let (Some(name), Some(action)) = (name, action)
            && p.len() == before
        {
            out.push(Step {
                name,
                kind,
                action,
                retries,
                backoff,
                backoff_max,
                no_retry_exit_codes,
                timeout,
                kill_grace,
                output_limit,
                env,
                cwd,
                line: node.line,
            });
        }
    }
    out
}
