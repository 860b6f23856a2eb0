//! A key's value, from what is written to what the typed configuration
//! holds: a [`Raw`] value (a TOML node, or a variable's text) is read by
//! its key's [`Type`] into a [`Value`], or refused with a [`ConfigError`]
//! naming where it was written, the value and what is allowed; a table's
//! [`Values`] give each model field its own ([`super::typed`] turns a
//! `Value` into a field and back). The variant a type reads into is fixed,
//! so a field never meets a value of another type.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::catch_up::CatchUp;
use super::command::Command;
use super::doc::{Entry, Kind};
use super::error::ConfigError;
use super::keys::{Default, Key, Type};
use super::listen::LISTEN_FORMS;
use super::otlp_endpoint::OtlpEndpoint;
use super::overlap::Overlap;
use super::source::{Source, Sourced};
use super::store_url::StoreUrl;
use super::typed::{Typed, Value};
use super::webhook_url::WebhookUrl;
use super::zone::Zone;
use crate::units;

/// Where a value was written: a file line, or an environment variable.
#[derive(Clone)]
pub(super) struct At<'a> {
    pub(super) file: &'a Arc<Path>,
    pub(super) line: Option<u32>,
    pub(super) env: Option<String>,
}

impl At<'_> {
    pub(super) fn source(&self) -> Source {
        match (&self.env, self.line) {
            (Some(v), _) => Source::Env(v.clone()),
            (None, Some(line)) => Source::File {
                path: Arc::clone(self.file),
                line,
            },
            (None, None) => Source::Default,
        }
    }

    pub(super) fn text(&self) -> String {
        match (&self.env, self.line) {
            (Some(v), _) => v.clone(),
            (None, Some(line)) => format!("{}:{line}", self.file.display()),
            (None, None) => self.file.display().to_string(),
        }
    }
}

/// A value to read: a TOML node, or an environment variable's text.
pub(super) enum Raw<'a> {
    Node(&'a Kind),
    Text(&'a str),
}

impl Entry {
    /// Its value, to be read.
    pub(super) fn raw(&self) -> Raw<'_> {
        Raw::Node(&self.value.kind)
    }
}

impl Raw<'_> {
    fn shown(&self) -> String {
        match self {
            Raw::Node(n) => n.shown(),
            Raw::Text(t) => format!("{t:?}"),
        }
    }
}

pub(super) fn invalid(at: &At<'_>, key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        at: at.text(),
        key: key.to_owned(),
        message: message.into(),
    }
}

impl Key {
    /// Its value where nothing sets it.
    pub(crate) fn default_value(&self) -> Value {
        match self.default {
            Default::Unset(_) => Value::Unset,
            Default::Host(_, host) => host(),
            Default::Toml(text) => {
                let root = Arc::from(Path::new("/"));
                let at = At {
                    file: &root,
                    line: None,
                    env: None,
                };
                let read = super::doc::parse(&format!("v = {text}"))
                    .map_err(|(_, e)| e)
                    .and_then(|doc| match doc.kind {
                        Kind::Table(t) => Ok(t[0].value.clone()),
                        _ => Err(String::new()),
                    })
                    .and_then(|node| {
                        self.ty
                            .read(Path::new("/"), &Raw::Node(&node.kind), &at, self.name)
                            .map_err(|e| e.to_string())
                    });
                // OK because a test reads every key's default.
                read.unwrap_or_else(|e| panic!("the default of {} does not read: {e}", self.name))
            }
        }
    }
}

impl Type {
    /// Reads `raw`, written at `at` for `key`; `dir` is the configuration
    /// file's directory, that relative paths are in.
    pub(super) fn read(
        self,
        dir: &Path,
        raw: &Raw<'_>,
        at: &At<'_>,
        key: &str,
    ) -> Result<Value, ConfigError> {
        let count = |lo: u32, hi: u32| {
            let n = integer(raw, at, key, (i128::from(lo), i128::from(hi)))?;
            Ok::<_, ConfigError>(Value::Count(u32::try_from(n).unwrap_or(hi)))
        };
        Ok(match self {
            // Read with the keys it combines with, by `super::read`.
            Type::Rule => Value::Unset,
            Type::Bool => Value::Bool(boolean(raw, at, key)?),
            Type::Count(lo, hi) => count(lo, hi)?,
            Type::Duration => Value::Duration(duration(raw, at, key)?),
            Type::Positive => Value::Duration(positive(raw, at, key)?),
            Type::Limit => match duration(raw, at, key)? {
                d if d.is_zero() => Value::Unset,
                d => Value::Duration(d),
            },
            Type::Size => Value::Size(size(raw, at, key)?),
            Type::ExitCodes => Value::Codes(exit_codes(raw, at, key)?),
            Type::CatchUp => Value::CatchUp(catch_up(raw, at, key)?),
            Type::Overlap => Value::Overlap(overlap(raw, at, key)?),
            Type::Zone => Value::Zone(zone(raw, at, key)?),
            Type::StateDir => Value::Path(state_dir(dir, raw, at, key)?),
            Type::Command => Value::Command(command(raw, at, key)?),
            Type::Lock => Value::Name(lock_name(raw, at, key)?),
            Type::Env => Value::Env(env_table(raw, at, key)?),
            Type::Cwd => Value::Path(dir.join(directory(raw, at, key)?)),
            Type::SecretFile(holding) | Type::File(holding) => {
                Value::Path(file(dir, raw, at, key, holding)?)
            }
            Type::SigningSecret => {
                let path = file(dir, raw, at, key, "the webhook's signing secret")?;
                super::secret::read(&path).map_err(|e| invalid(at, key, e.to_string()))?;
                Value::Path(path)
            }
            Type::Webhook => {
                let s = string(raw, at, key, "an http:// or https:// URL, or \"\" for none")?;
                if s.is_empty() {
                    // A job that turns off the webhook `[scheduler]` names.
                    Value::Unset
                } else {
                    Value::Webhook(
                        WebhookUrl::parse(&s).map_err(|e| invalid(at, key, e.to_string()))?,
                    )
                }
            }
            Type::OtlpEndpoint => {
                let s = string(raw, at, key, "the collector's http:// or https:// base URL")?;
                Value::Otlp(OtlpEndpoint::parse(&s).map_err(|e| invalid(at, key, e.to_string()))?)
            }
            Type::RootCert => {
                match string(raw, at, key, "the path of a PEM file, or \"system\"")? {
                    s if s == "system" => Value::Path(PathBuf::from(s)),
                    _ => Value::Path(file(dir, raw, at, key, "the authorities' certificates")?),
                }
            }
            Type::SslMode => {
                let s = string(raw, at, key, SSL_MODES)?;
                Value::SslMode(
                    baton_pg::SslMode::parse(&s).ok_or_else(|| {
                        invalid(at, key, format!("= {s:?}: expected {SSL_MODES}"))
                    })?,
                )
            }
            Type::Listen => {
                let s = string(raw, at, key, LISTEN_FORMS)?;
                Value::Listen(s.parse().map_err(|e| invalid(at, key, format!("= {e}")))?)
            }
            Type::Socket => Value::Path(dir.join(socket(raw, at, key)?)),
            Type::Group => Value::Name(group(raw, at, key)?),
            Type::StoreUrl => {
                let what = "a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE)";
                let s = string(raw, at, key, what)?;
                Value::Url(StoreUrl::parse(&s).map_err(|m| invalid(at, key, m.to_string()))?)
            }
        })
    }
}

pub(super) fn string(
    raw: &Raw<'_>,
    at: &At<'_>,
    key: &str,
    what: &str,
) -> Result<String, ConfigError> {
    match raw {
        Raw::Node(Kind::Str(s)) => Ok(s.clone()),
        Raw::Text(t) => Ok((*t).to_owned()),
        Raw::Node(n) => Err(invalid(
            at,
            key,
            format!("is {} ({}), expected {what}", n.type_name(), n.shown()),
        )),
    }
}

/// The state directory: absolute; written in the file, it may be relative
/// to the file, wherever baton runs.
fn state_dir(dir: &Path, raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<PathBuf, ConfigError> {
    let s = directory(raw, at, key)?;
    let path = PathBuf::from(&s);
    if path.is_absolute() {
        return Ok(path);
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
    Ok(dir.join(path))
}

/// What `sslmode` may be.
const SSL_MODES: &str = "one of disable, prefer, require, verify-ca or verify-full";

/// The path of a file (`holding` says what it holds): not empty, and
/// relative to the configuration file, wherever baton runs, as `state_dir`.
fn file(
    dir: &Path,
    raw: &Raw<'_>,
    at: &At<'_>,
    key: &str,
    holding: &str,
) -> Result<PathBuf, ConfigError> {
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
    Ok(dir.join(s))
}

fn socket(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<String, ConfigError> {
    let what = "the path of the API's Unix socket, such as \"/run/baton/api.sock\"";
    let s = string(raw, at, key, what)?;
    if s.trim().is_empty() || s.contains('\0') {
        return Err(invalid(
            at,
            key,
            format!("= {s:?}: expected {what}, or leave the key out for STATE_DIR/daemon.sock"),
        ));
    }
    Ok(s)
}

fn group(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<String, ConfigError> {
    let what = "a group's name or number, such as \"baton\"";
    let s = string(raw, at, key, what)?;
    if s.is_empty()
        || s.chars()
            .any(|c| c == ':' || c.is_whitespace() || c.is_control())
    {
        return Err(invalid(at, key, format!("= {s:?}: expected {what}")));
    }
    Ok(s)
}

/// A directory's path: a string with no NUL character (no path can hold
/// one).
fn directory(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<String, ConfigError> {
    let s = string(raw, at, key, "a directory")?;
    if s.is_empty() {
        // An unset variable in a template, most likely: never read as the
        // configuration's own directory.
        return Err(invalid(
            at,
            key,
            "is empty: name a directory (\".\" for the configuration file's own)",
        ));
    }
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
    let what = "\"skip\", \"queue\" or \"replace\"";
    match string(raw, at, key, what)?.as_str() {
        "skip" => Ok(Overlap::Skip),
        "queue" => Ok(Overlap::Queue),
        "replace" => Ok(Overlap::Replace),
        other => Err(invalid(at, key, format!("= {other:?}: expected {what}"))),
    }
}

fn duration(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Duration, ConfigError> {
    let what = "a duration such as \"30s\", \"15m\", \"2h\", \"1d\", \"1h30m\", or whole seconds";
    match raw {
        Raw::Node(Kind::Int(n)) => u64::try_from(*n)
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

pub(super) fn positive(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Duration, ConfigError> {
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
        Raw::Node(Kind::Int(n)) => Some(*n),
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

fn boolean(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<bool, ConfigError> {
    match raw {
        Raw::Node(Kind::Bool(b)) => Ok(*b),
        Raw::Text(t) => match t.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(invalid(at, key, format!("= {t:?}: expected true or false"))),
        },
        Raw::Node(n) => Err(invalid(
            at,
            key,
            format!("= {}: expected true or false", n.shown()),
        )),
    }
}

fn size(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<u64, ConfigError> {
    match raw {
        Raw::Node(Kind::Int(n)) => u64::try_from(*n)
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
        Raw::Node(Kind::Array(a)) => a
            .iter()
            .map(|n| match n.kind {
                Kind::Int(i) => Some(i),
                _ => None,
            })
            .collect(),
        // A variable's list: `2,3`, or as the file writes it, `[2, 3]`
        // (`[]`: none).
        Raw::Text(t) => {
            let t = t.trim();
            t.strip_prefix('[')
                .and_then(|inner| inner.strip_suffix(']'))
                .unwrap_or(t)
        }
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok())
        .collect(),
        Raw::Node(n) => {
            return Err(invalid(
                at,
                key,
                format!("= {}: expected {what}", n.shown()),
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

pub(super) fn command(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Command, ConfigError> {
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
        Raw::Node(Kind::Str(s)) if s.trim().is_empty() => {
            Err(invalid(at, key, format!("is empty: expected {what}")))
        }
        Raw::Node(Kind::Str(s)) => Ok(Command::Shell(s.clone())),
        Raw::Text(t) if t.trim().is_empty() => {
            Err(invalid(at, key, format!("is empty: expected {what}")))
        }
        Raw::Text(t) => Ok(Command::Shell((*t).to_owned())),
        Raw::Node(Kind::Array(a)) => {
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
            format!("is {}: expected {what}", n.type_name()),
        )),
    }
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

fn env_table(raw: &Raw<'_>, at: &At<'_>, key: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let table = match raw {
        Raw::Node(Kind::Table(t)) => t,
        other => {
            let type_name = match other {
                Raw::Node(n) => n.type_name(),
                Raw::Text(_) => "a string",
            };
            return Err(invalid(
                at,
                key,
                format!(
                    "is {type_name}: expected a table of variables, such as {{ MAX_CALLS = \
                     \"1500\" }}"
                ),
            ));
        }
    };
    let key_of = |name: &str| format!("{key}.{name}");
    table
        .iter()
        .map(|e| {
            let valid_name = !e.key.is_empty()
                && !e.key.contains('=')
                && !e.key.contains('\0')
                && !e.key.starts_with(|c: char| c.is_ascii_digit());
            if !valid_name {
                return Err(invalid(
                    at,
                    &key_of(&e.key),
                    "is not a valid environment variable name",
                ));
            }
            match &e.value.kind {
                Kind::Str(s) if s.contains('\0') => Err(invalid(
                    at,
                    &key_of(&e.key),
                    "contains a NUL character, which no environment variable can hold",
                )),
                Kind::Str(s) => Ok((e.key.clone(), s.clone())),
                Kind::Int(n) => Ok((e.key.clone(), n.to_string())),
                Kind::Bool(b) => Ok((e.key.clone(), b.to_string())),
                other => Err(invalid(
                    at,
                    &key_of(&e.key),
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

/// The values of one table's keys, by name, and the keys whose value was
/// in error (and reads as its fallback).
#[derive(Debug, Clone, Default)]
pub(crate) struct Values {
    values: BTreeMap<&'static str, Sourced<Value>>,
    pub(super) failed: Vec<&'static str>,
}

impl Values {
    /// Sets `key`'s value.
    pub(crate) fn set(&mut self, key: &'static str, value: Sourced<Value>) {
        self.values.insert(key, value);
    }

    /// `key`'s value, as read.
    pub(crate) fn sourced(&self, key: &str) -> Option<&Sourced<Value>> {
        self.values.get(key)
    }

    /// Sets `key`'s value from a model field.
    pub(crate) fn put<T: Typed + Clone>(&mut self, key: &'static str, field: &Sourced<T>) {
        self.set(key, field.clone().map(|v| v.to_value()));
    }

    /// `key`'s value as a model field: the one read, else (a key its
    /// table does not take, such as a check's `retries`) its default.
    pub(crate) fn get<T: Typed>(&self, key: &str) -> Sourced<T> {
        let found = self.sourced(key).cloned().unwrap_or_else(|| {
            // OK because the model names its fields after keys.
            let k = super::keys::key(key).unwrap_or_else(|| panic!("no key {key}"));
            Sourced::default_value(k.default_value())
        });
        // OK because a key's type reads into one variant, its field's.
        found.map(|v| T::from_value(v).unwrap_or_else(|| panic!("{key}: another type")))
    }

    /// Whether none of `keys` was in error.
    pub(super) fn clean(&self, keys: &[&str]) -> bool {
        !self.failed.iter().any(|k| keys.contains(k))
    }
}
