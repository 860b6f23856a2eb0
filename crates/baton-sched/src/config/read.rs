//! Reading `baton.toml` and its `jobs.d/` drop-ins into a [`Config`]: every
//! key checked against the keys allowed where it is written, every value
//! against its type and range, and every combination (both or neither of
//! `schedule`/`every`, of `run`/`http`/`steps`; `retries` on a check; a kill grace
//! too long for the takeover grace; a job defined twice) before anything is
//! returned. Which keys a table takes, how each is read, its default and
//! what a job or step inherits are [`super::keys`]'s:
//! [`Reader::read_keys`] reads any table by that list, and this module adds
//! the keys read by their own rule and the rules that combine keys.
//!
//! The first problem, in file order (`baton.toml`, then the drop-ins by
//! name), is the error; a typo is never read as "use the default".
//! [`checked`] goes on past a problem, for an operator's check (`baton
//! doctor`): every section, job and drop-in is checked on its own, and
//! every problem is kept. Within `[scheduler]`, a job and its steps, every
//! key is checked too: a value in error reads as its fallback (the
//! default, or what the job inherits), so the keys after it are still
//! checked, and a rule that combines keys (the self-fencing inequality) is
//! checked only when they all read cleanly, so that no problem is made up
//! from a fallback. `load` and every command get the first problem;
//! nothing is ever built from a fallback. A drop-in is read with the same
//! code as a `[jobs.NAME]` table, so it means and is refused exactly as it
//! would be in `baton.toml`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::doc::{Entry, Kind, Node};
use super::error::ConfigError;
use super::found::Found;
use super::keys::{self, Key, Table, Type};
use super::model::{
    Action, Config, DaemonSettings, Job, RunPolicy, Settings, Step, StepKind, StepSources,
    StoreSettings, TelemetrySettings, When,
};
use super::source::{Source, Sourced};
use super::store_url::StoreUrl;
use super::typed::Value;
use super::value::{At, Raw, Values, command, invalid, positive, string, valid_name};
use crate::units;

/// The sections of `baton.toml`.
pub(super) const SECTIONS: &[&str] = &["scheduler", "daemon", "telemetry", "store", "jobs"];

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
    /// The `BATON_<KEY>` variables of this process for every key that has
    /// one, and `--state-dir`.
    pub fn from_env(state_dir: Option<PathBuf>) -> Self {
        let mut env = BTreeMap::new();
        for key in keys::KEYS.iter().filter_map(Key::env_key) {
            let var = keys::env_name(&key);
            if let Some(v) = std::env::var_os(&var).filter(|v| !v.is_empty()) {
                env.insert(key, v.to_string_lossy().into_owned());
            }
        }
        Self { env, state_dir }
    }

    /// The value the command line gives `key`: `--state-dir`'s.
    fn flag(&self, key: &Key) -> Option<Sourced<Value>> {
        let dir = self
            .state_dir
            .as_ref()
            .filter(|_| key.name == "state_dir")?;
        Some(Sourced::new(
            Value::Path(dir.clone()),
            Source::Flag("--state-dir".into()),
        ))
    }
}

#[derive(Clone, Copy)]
struct Reader<'a> {
    file: &'a Arc<Path>,
    dir: &'a Path,
    over: &'a Overrides,
    /// Leases live in the PostgreSQL store (`[store] url`): a renewal may
    /// wait for the store's deadline rather than for the lock file's mutex.
    pg: bool,
}

impl<'a> Reader<'a> {
    /// The longest one renewal of a lease with `ttl` may wait, in the store
    /// this configuration uses.
    fn renew_wait(&self, ttl: Duration) -> Duration {
        if self.pg {
            baton_pg::deadline_for(ttl)
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
            env: Some(keys::env_name(key)),
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

    /// The values of the section `table` (`e`; not written, none), its
    /// problems kept in `p`: a section that is no table reads as empty.
    fn section(&self, table: Table, e: Option<&Entry>, p: &mut Vec<ConfigError>) -> Values {
        let path = table.name();
        let entries = e.map_or(Ok(&[][..]), |e| self.table(&e.value, path, e.line));
        let entries = kept(entries, p).unwrap_or_default();
        p.extend(self.unknown_keys(entries, path, &names(table)));
        self.read_keys((table, path), entries, None, p)
    }

    /// A problem for each key of `entries` not in `allowed`, in file order.
    fn unknown_keys<'e>(
        &self,
        entries: impl IntoIterator<Item = &'e Entry>,
        path: &str,
        allowed: &[&str],
    ) -> Vec<ConfigError> {
        entries
            .into_iter()
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

    /// Reads the keys `table` takes from its `entries` (`path` naming it in
    /// messages), but for those read by their own rule. Each key's value is
    /// its own ([`Reader::own`]), else, where the key inherits, `base`'s (a
    /// job's from `[scheduler]`, marked inherited; a step's from its job, as
    /// it stands; a step's `env` adds to its job's), else its default. A
    /// value in error is kept in `problems` and reads as that fallback.
    fn read_keys(
        &self,
        (table, path): (Table, &str),
        entries: &[Entry],
        base: Option<&Values>,
        problems: &mut Vec<ConfigError>,
    ) -> Values {
        let mut values = Values::default();
        for key in keys::of(table).filter(|k| k.ty != Type::Rule) {
            let inherited = base
                .filter(|_| key.inherits)
                .and_then(|b| b.sourced(key.name));
            let value = match self.own(key, path, entries, base.is_none()) {
                Some(Ok(own)) => Some(own.map(|v| added_env(v, inherited))),
                Some(Err(e)) => {
                    problems.push(e);
                    values.failed.push(key.name);
                    None
                }
                None => None,
            };
            let value = value.unwrap_or_else(|| match inherited {
                Some(s) if table == Table::Job => s.inherit(),
                Some(s) => s.clone(),
                None => Sourced::default_value(key.default_value()),
            });
            values.set(key.name, value);
        }
        values
    }

    /// `key`'s own value, if it has one: the command line's, else the
    /// environment's (for a `section`'s key that has a variable), else the
    /// one written in `entries`.
    fn own(
        &self,
        key: &Key,
        path: &str,
        entries: &[Entry],
        section: bool,
    ) -> Option<Result<Sourced<Value>, ConfigError>> {
        if let Some(flag) = self.over.flag(key) {
            return Some(Ok(flag));
        }
        let env = key.env_key().filter(|_| section);
        let env = env.and_then(|k| Some((self.over.env.get(&k)?, self.env_at(&k))));
        let (raw, at) = match (env, get(entries, key.name)) {
            (Some((text, at)), _) => (Raw::Text(text), at),
            (None, Some(e)) => (e.raw(), self.at(e.line)),
            (None, None) => return None,
        };
        let value = key.ty.read(self.dir, &raw, &at, &join(path, key.name));
        Some(value.map(|v| Sourced::new(v, at.source())))
    }
}

/// A step's own `env` added to the one it inherits (its job's): a variable
/// of its own replaces the job's of the same name, and its own come after
/// those it inherits ([`step_sources`] tells them apart so). Any other
/// value as it is.
fn added_env(own: Value, inherited: Option<&Sourced<Value>>) -> Value {
    match (own, inherited.map(|s| &s.value)) {
        (Value::Env(vars), Some(Value::Env(under))) => {
            let mut merged = under.clone();
            for (k, v) in vars {
                merged.retain(|(ek, _)| *ek != k);
                merged.push((k, v));
            }
            Value::Env(merged)
        }
        (own, _) => own,
    }
}

/// The names of the keys `table` takes.
fn names(table: Table) -> Vec<&'static str> {
    keys::of(table).map(|k| k.name).collect()
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
    let shared: Arc<Path> = Arc::from(file);
    let r = Reader {
        file: &shared,
        dir: file.parent().unwrap_or(Path::new("/")),
        over,
        pg: false,
    };
    let top = match r.table(root, "", root.line) {
        Ok(t) => t,
        Err(e) => return Checked::failed(vec![e]),
    };
    let mut problems = r.unknown_keys(top, "", SECTIONS);
    problems.truncate(1);
    let store = store(&r, get(top, "store"));
    // A `[store]` with a problem was still meant: its jobs are checked as a
    // store's.
    let r = Reader {
        pg: !matches!(store, Ok(None)),
        ..r
    };
    let store = kept(store, &mut problems);
    let before = problems.len();
    let scheduler = scheduler(&r, get(top, "scheduler"), &mut problems);
    let scheduler_defaulted = problems.len() > before;
    let daemon = kept(daemon(&r, get(top, "daemon")), &mut problems);
    let telemetry = kept(telemetry(&r, get(top, "telemetry")), &mut problems);
    let mut jobs = Jobs {
        problems,
        ..Jobs::default()
    };
    if let Some(e) = get(top, "jobs") {
        jobs.of_file(&r, e, &scheduler);
    }
    for found in dropins {
        jobs.of_dropin(&r, found, &scheduler);
    }
    let Jobs {
        read: jobs,
        unread: unread_jobs,
        mut problems,
        ..
    } = jobs;
    if !r.pg {
        problems.extend(claims_fit(&jobs));
        problems.extend(slots_alone(&jobs));
    }
    let config = match (store, daemon, telemetry) {
        (Some(store), Some(daemon), Some(telemetry)) if !scheduler_defaulted => Some(Config {
            path: file.to_owned(),
            settings: Settings::from_values(&scheduler),
            daemon,
            telemetry,
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

/// The jobs read so far, and what was found reading them.
#[derive(Default)]
struct Jobs {
    /// The jobs read without a problem, by name.
    read: BTreeMap<String, Box<Job>>,
    /// Every job defined, valid or not, and where: a drop-in that defines
    /// it again is refused either way.
    defined: BTreeMap<String, String>,
    /// The jobs defined with a problem.
    unread: BTreeSet<String>,
    /// Every problem found, in file order.
    problems: Vec<ConfigError>,
}

impl Jobs {
    /// Reads the jobs `[jobs]` (`e`) defines, each inheriting `scheduler`.
    fn of_file(&mut self, r: &Reader<'_>, e: &Entry, scheduler: &Values) {
        let entries = match r.table(&e.value, "jobs", e.line) {
            Ok(entries) => entries,
            Err(e) => {
                self.problems.push(e);
                return;
            }
        };
        for j in entries {
            self.defined.insert(j.key.clone(), r.at(j.line).text());
            match job(r, j, scheduler) {
                Ok(job) => {
                    self.read.insert(job.name.clone(), Box::new(job));
                }
                Err(found) => self.failed(&j.key, found),
            }
        }
    }

    /// Reads the job the drop-in `found` defines, inheriting `scheduler`:
    /// one the file (or an earlier drop-in) defines too is refused.
    fn of_dropin(&mut self, r: &Reader<'_>, found: &Found, scheduler: &Values) {
        let file: Arc<Path> = Arc::from(found.path.as_path());
        let d = Reader { file: &file, ..*r };
        let job = super::parse_doc(&found.text, &found.path)
            .map_err(|e| vec![e])
            .and_then(|root| dropin_job(&d, &root, &found.name, scheduler));
        let job = match job {
            Ok(job) => job,
            Err(problems) => return self.failed(&found.name, problems),
        };
        if let Some(first) = self.defined.get(&job.name) {
            self.problems.push(invalid(
                &d.at(source_line(&job.source)),
                &join("jobs", &job.name),
                format!(
                    "is also defined at {first}: define a job in baton.toml or in jobs.d/, not both"
                ),
            ));
            return;
        }
        self.defined
            .insert(job.name.clone(), job.source.to_string());
        self.read.insert(job.name.clone(), Box::new(job));
    }

    /// The job `name` was defined with `problems`.
    fn failed(&mut self, name: &str, mut problems: Vec<ConfigError>) {
        self.unread.insert(name.to_owned());
        self.problems.append(&mut problems);
    }
}

/// The value, or `None` with its problem kept.
fn kept<T>(found: Result<T, ConfigError>, problems: &mut Vec<ConfigError>) -> Option<T> {
    found.map_err(|e| problems.push(e)).ok()
}

/// The first of `problems`, if there is one.
fn first(problems: Vec<ConfigError>) -> Result<(), ConfigError> {
    problems.into_iter().next().map_or(Ok(()), Err)
}

/// Refuses a lock file shared by more jobs than its record can keep a claim
/// for: each job's claim (the occurrence it last started) is one of the two
/// records that keep an occurrence from running twice, and none may ever be
/// dropped to make room. (A store keeps claims in rows, without this limit.)
/// One problem per lock that is too full.
fn claims_fit(jobs: &BTreeMap<String, Box<Job>>) -> Vec<ConfigError> {
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

/// Refuses `max_concurrent` above 1 on a lock other jobs share (a shared
/// lock is there to keep its jobs apart, and slots would run them
/// together) or with `overlap = "replace"` (which run it would stop is
/// no one's to guess). One problem per such job.
fn slots_alone(jobs: &BTreeMap<String, Box<Job>>) -> Vec<ConfigError> {
    let mut problems = Vec::new();
    for j in jobs.values().filter(|j| j.slots() > 1) {
        let n = &j.policy.max_concurrent;
        let key = join(
            if n.inherited {
                "scheduler".to_owned()
            } else {
                join("jobs", &j.name)
            }
            .as_str(),
            "max_concurrent",
        );
        if j.policy.overlap.value == super::Overlap::Replace {
            problems.push(ConfigError::Invalid {
                at: n.source.to_string(),
                key: key.clone(),
                message: format!(
                    "= {}: {} has overlap = \"replace\", which stops the job's run in flight; \
                     with several in flight, which one is no one's to guess: give it \
                     max_concurrent = 1, or overlap = \"skip\" or \"queue\"",
                    n.value, j.name
                ),
            });
            continue;
        }
        let mates: Vec<&str> = jobs
            .values()
            .filter(|m| m.name != j.name && m.lock.value == j.lock.value)
            .map(|m| m.name.as_str())
            .collect();
        if mates.is_empty() {
            continue;
        }
        problems.push(ConfigError::Invalid {
            at: n.source.to_string(),
            key,
            message: format!(
                "= {}: {} shares the lock {:?} with {}, which keeps them apart; give {} a lock \
                 of its own, or max_concurrent = 1",
                n.value,
                j.name,
                j.lock.value,
                mates.join(", "),
                j.name
            ),
        });
    }
    problems
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
    scheduler: &Values,
) -> Result<Job, Vec<ConfigError>> {
    let top = r.table(root, "", root.line).map_err(|e| vec![e])?;
    for e in top {
        if e.key != "jobs" && SECTIONS.contains(&e.key.as_str()) {
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
        return job(r, &whole, scheduler);
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
        [one] if one.key == name => job(r, one, scheduler),
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
/// shutdown grace; or its first problem.
fn daemon(r: &Reader<'_>, e: Option<&Entry>) -> Result<DaemonSettings, ConfigError> {
    let mut p = Vec::new();
    let values = r.section(Table::Daemon, e, &mut p);
    first(p)?;
    Ok(DaemonSettings::from_values(&values))
}

/// `[telemetry]`: where runs' traces are sent; or its first problem.
fn telemetry(r: &Reader<'_>, e: Option<&Entry>) -> Result<TelemetrySettings, ConfigError> {
    let mut p = Vec::new();
    let values = r.section(Table::Telemetry, e, &mut p);
    first(p)?;
    Ok(TelemetrySettings::from_values(&values))
}

/// `[store]`: the PostgreSQL URL and where its password is; or its first
/// problem. `None` when neither the file nor `BATON_STORE_URL` names a
/// URL; a `[store]` (or a `BATON_STORE_PASSWORD_FILE`) without one is
/// refused, as a setting that would be silently ignored.
fn store(r: &Reader<'_>, e: Option<&Entry>) -> Result<Option<StoreSettings>, ConfigError> {
    let mut p = Vec::new();
    let values = r.section(Table::Store, e, &mut p);
    first(p)?;
    let url = values.get::<Option<StoreUrl>>("url");
    let password_file = values.get::<Option<PathBuf>>("password_file");
    let Some(value) = &url.value else {
        if let Some(e) = e {
            return Err(invalid(
                &r.at(e.line),
                "store.url",
                "is missing: [store] needs url = \"postgres://USER@HOST/DATABASE\" (or \
                 BATON_STORE_URL); leave [store] out to use local files and SQLite",
            ));
        }
        // Only a variable can set one here ([store] itself needs url).
        let by_variable = keys::of(Table::Store)
            .find(|k| set(&values, k.name).is_some_and(|s| matches!(s.source, Source::Env(_))));
        if let Some(k) = by_variable {
            return Err(invalid(
                &r.env_at(&format!("store_{}", k.name)),
                &format!("store.{}", k.name),
                "is set but no store url is: set [store] url or BATON_STORE_URL",
            ));
        }
        return Ok(None);
    };
    let at = |key: &str, source: &Source| match source {
        Source::Env(_) => r.env_at(&format!("store_{key}")),
        _ => r.at(source_line(source)),
    };
    if value.has_password() && password_file.value.is_some() {
        return Err(invalid(
            &at("password_file", &password_file.source),
            "store.password_file",
            format!(
                "is set, and the url ({}) holds a password too: give the password in one \
                 place only",
                value.masked()
            ),
        ));
    }
    // A TLS setting in the url and as a key: neither is chosen over the
    // other.
    for param in baton_pg::url_params(value.secret()) {
        if let Some(key) = set(&values, param) {
            return Err(invalid(
                &at(param, &key.source),
                &format!("store.{param}"),
                format!(
                    "is set, and the url ({}, {}) gives {param} too: give it in one place only",
                    value.masked(),
                    url.provenance()
                ),
            ));
        }
    }
    // A client certificate without its key (or a key without its
    // certificate) could only fail at the first connection: refused now.
    let in_url = baton_pg::url_params(value.secret());
    let given = |param: &str| set(&values, param).map(|k| &k.source);
    let cert = given("sslcert")
        .map(Some)
        .or(in_url.contains(&"sslcert").then_some(None));
    let key = given("sslkey")
        .map(Some)
        .or(in_url.contains(&"sslkey").then_some(None));
    if let Some((there, missing, source)) = match (cert, key) {
        (Some(source), None) => Some(("sslcert", "sslkey", source)),
        (None, Some(source)) => Some(("sslkey", "sslcert", source)),
        _ => None,
    } {
        let (at, from) = match source {
            Some(source) => (at(there, source), String::new()),
            None => (
                at("url", &url.source),
                format!(" (in the url, {})", value.masked()),
            ),
        };
        return Err(invalid(
            &at,
            &format!("store.{there}"),
            format!(
                "is set{from} but {missing} is not: a client certificate needs its key; set {missing} too, or leave both out"
            ),
        ));
    }
    Ok(Some(StoreSettings::from_values(&values)))
}

/// `key`'s value when something sets it (not its default).
fn set<'v>(values: &'v Values, key: &str) -> Option<&'v Sourced<Value>> {
    values.sourced(key).filter(|s| s.source != Source::Default)
}

/// `[scheduler]`'s values, each key checked on its own; a key in error is
/// kept in `p` and reads as its default.
fn scheduler(r: &Reader<'_>, e: Option<&Entry>, p: &mut Vec<ConfigError>) -> Values {
    let before = p.len();
    let values = r.section(Table::Scheduler, e, p);
    // Checked only on values read cleanly: a default standing in for one
    // in error could make up a problem.
    if p.len() == before {
        let policy = RunPolicy::from_values(&values);
        let at = r.at(e.map_or(1, |e| e.line));
        kept(r.fencing(&at, "scheduler", &policy, None), p);
        if values
            .sourced("timezone")
            .is_some_and(|z| z.source == Source::Default)
        {
            kept(system_zone_named(), p);
        }
    }
    values
}

/// The system's zone, when the configuration names none, is read from
/// `TZ`, else `/etc/localtime`; a machine without either is on UTC, as
/// libc has it. A `TZ` that names a zone nothing can read is refused: its
/// jobs would run on UTC, at hours nobody asked for.
fn system_zone_named() -> Result<(), ConfigError> {
    let Some(tz) = std::env::var_os("TZ").filter(|v| !v.is_empty()) else {
        return Ok(());
    };
    match jiff::tz::TimeZone::try_system() {
        Ok(_) => Ok(()),
        Err(e) => Err(ConfigError::Invalid {
            at: "TZ".into(),
            key: "timezone".into(),
            message: format!(
                "= {:?} is not a zone baton can read ({e}), and the configuration names \
                 none: set [scheduler] timezone or BATON_TIMEZONE, or TZ, to an IANA name such \
                 as \"Europe/Berlin\"",
                tz.to_string_lossy()
            ),
        }),
    }
}

impl Reader<'_> {
    /// The self-fencing inequality of `policy`, with the keys' values and
    /// where they come from in the message. `path` is the table being
    /// checked; `grace` a step's kill grace and the table it would be set in
    /// (else the policy's, in `path`). The refusal names the key at fault
    /// where it is set: `ttl` when it is below the minimum; otherwise, of
    /// `kill_grace` and `takeover_grace`, the one set nearest the table (its
    /// own before one it inherits, one set before a default), `kill_grace`
    /// when both are as near.
    fn fencing(
        &self,
        at: &At<'_>,
        path: &str,
        policy: &RunPolicy,
        grace: Option<(&Sourced<Duration>, &str)>,
    ) -> Result<(), ConfigError> {
        let (ttl, takeover) = (&policy.ttl, &policy.takeover_grace);
        let (grace, grace_table) = grace.unwrap_or((&policy.kill_grace, path));
        baton_runner::check_self_fencing(
            ttl.value,
            self.renew_wait(ttl.value),
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
                message: e.to_string(),
            }
        })
    }
}

/// Where a value was set, for a message: its file and line, the variable or
/// the option; where the table is (`at`), for a default.
fn located(at: &At<'_>, source: &Source) -> String {
    match source {
        Source::Default => at.text(),
        other => other.to_string(),
    }
}

/// The job `e` defines, with `scheduler`'s values as what it inherits; or
/// every problem it has. A name that is no job's, or a value that is no
/// table, is its one problem; otherwise each key is checked on its own (a
/// key in error reads as what the job would inherit, or its default), and
/// the self-fencing inequality only once the policy read cleanly.
fn job(r: &Reader<'_>, e: &Entry, scheduler: &Values) -> Result<Job, Vec<ConfigError>> {
    let name = e.key.clone();
    let path = join("jobs", &name);
    let at = r.at(e.line);
    job_name(&name).map_err(|e| vec![invalid(&at, &path, e.to_string())])?;
    let entries = r.table(&e.value, &path, e.line).map_err(|e| vec![e])?;
    let mut p = r.unknown_keys(entries, &path, &names(Table::Job));
    let when = kept(self::when(r, entries, &path, &at), &mut p);
    let mut values = r.read_keys((Table::Job, &path), entries, Some(scheduler), &mut p);
    let policy = RunPolicy::from_values(&values);
    let fenced = values.clean(RunPolicy::KEYS)
        && kept(r.fencing(&at, &path, &policy, None), &mut p).is_some();
    let steps = job_steps(r, entries, (&name, &at), &values, &mut p);
    let checks = match get(entries, "checks") {
        Some(c) => self::steps(r, c, (&path, StepKind::Check), &values, &mut p),
        None => Vec::new(),
    };
    let all = (steps.as_deref().unwrap_or_default(), checks.as_slice());
    check_steps(r, &path, all, fenced.then_some(&policy), &mut p);
    // Its lock is its own name unless it, or `[scheduler]`, names one.
    if values
        .sourced("lock")
        .is_some_and(|s| s.value == Value::Unset)
    {
        values.set("lock", Sourced::default_value(Value::Name(name.clone())));
    }
    match (when, steps) {
        (Some(when), Some(steps)) if p.is_empty() => {
            let job = Job::from_values(&values, name, at.source(), when, steps, checks);
            jitter_fits(&at, &path, &job).map_err(|e| vec![e])?;
            Ok(job)
        }
        // Every value missing above kept its problem.
        _ => Err(p),
    }
}

/// Where the walk for a schedule's shortest gap starts: a fixed instant,
/// so that a configuration reads the same whatever the date.
const GAP_FROM: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z

/// Refuses a `jitter` longer than the shortest time between two of the
/// job's occurrences (over a year of them): an offset past the next
/// occurrence would start each one after the next one is scheduled.
fn jitter_fits(at: &At<'_>, path: &str, job: &Job) -> Result<(), ConfigError> {
    let jitter = &job.policy.jitter;
    let Some(window) = jitter.value else {
        return Ok(());
    };
    let from = jiff::Timestamp::from_second(GAP_FROM).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let tz = &job.timezone.value.tz;
    let Some(gap) = super::gap::shortest_gap(&job.when.value.schedule, tz, from) else {
        return Ok(());
    };
    if window <= gap {
        return Ok(());
    }
    let show = crate::units::show_duration;
    Err(ConfigError::Invalid {
        at: located(at, &jitter.source),
        key: join(if jitter.inherited { "scheduler" } else { path }, "jitter"),
        message: format!(
            "{} is longer than the {} between two of {}'s occurrences: give [{path}] a jitter \
             of at most {}",
            show(window),
            show(gap),
            job.name,
            show(gap),
        ),
    })
}

/// Why a name is no job's.
#[derive(Debug, thiserror::Error)]
enum BadJobName {
    #[error("{0:?} is not a job name: use 1 to 64 characters of A-Z a-z 0-9 _ . -")]
    Invalid(String),
    #[error(
        "{0:?}: a job name may not start with '.' (it is its lock's name unless `lock` says \
         otherwise, and `baton lock` refuses such names)"
    )]
    Hidden(String),
    #[error(
        "{0:?} is reserved: the logs baton_YYYY_MM_DD.log and alerts.log are the scheduler's \
         own; choose another name"
    )]
    Reserved(String),
}

/// Refuses a name that is no job's, saying why.
fn job_name(name: &str) -> Result<(), BadJobName> {
    if !valid_name(name) {
        Err(BadJobName::Invalid(name.to_owned()))
    } else if name.starts_with('.') {
        Err(BadJobName::Hidden(name.to_owned()))
    } else if name == "baton" || name == "alerts" {
        Err(BadJobName::Reserved(name.to_owned()))
    } else {
        Ok(())
    }
}

/// The steps of the job `name` (written at `at`) with `entries` and
/// `values`: its `[[steps]]`, or the one step its `run` or `http` is;
/// `None` with the problem kept in `p` when it has both or neither, or
/// its `run` or `http` is in error.
fn job_steps(
    r: &Reader<'_>,
    entries: &[Entry],
    (name, at): (&str, &At<'_>),
    values: &Values,
    p: &mut Vec<ConfigError>,
) -> Option<Vec<Step>> {
    let path = join("jobs", name);
    match (kept(action(r, entries, &path), p)?, get(entries, "steps")) {
        (Some((line, run)), Some(st)) => {
            p.push(invalid(
                &r.at(line.max(st.line)),
                &path,
                format!("has both {} and steps: give exactly one", run.value.key()),
            ));
            None
        }
        (None, None) => {
            p.push(invalid(
                at,
                &path,
                "has neither run nor steps: give one (run = \"/usr/local/bin/backup.sh\", \
                 http = { url = \"https://…\" }, or [[jobs.NAME.steps]] tables)",
            ));
            None
        }
        (Some((line, action)), None) => Some(vec![Step::from_values(
            values,
            name.to_owned(),
            StepKind::Step,
            action,
            line,
            step_sources(at.source(), values, (0, source_of(values, "env"))),
        )]),
        (None, Some(st)) => Some(self::steps(r, st, (&path, StepKind::Step), values, p)),
    }
}

/// Refuses two of a job's `steps` and `checks` (of the job at `path`) with
/// one name, and, where the job's `policy` is fenced, a step whose own kill
/// grace breaks the self-fencing inequality; the problems kept in `p`.
fn check_steps(
    r: &Reader<'_>,
    path: &str,
    (steps, checks): (&[Step], &[Step]),
    policy: Option<&RunPolicy>,
    p: &mut Vec<ConfigError>,
) {
    let mut names: Vec<&str> = Vec::new();
    let tables = (0..steps.len())
        .map(|i| format!("{path}.steps[{i}]"))
        .chain((0..checks.len()).map(|i| format!("{path}.checks[{i}]")));
    for (s, table) in steps.iter().chain(checks).zip(tables) {
        if names.contains(&s.name.as_str()) {
            p.push(invalid(
                &r.at(s.line),
                path,
                format!(
                    "two steps or checks are named {:?}: names must be unique",
                    s.name
                ),
            ));
            continue;
        }
        names.push(&s.name);
        let Some(policy) = policy else {
            continue;
        };
        // A kill grace the step does not set is its job's, named there.
        let grace_table = if s.kill_grace.source == policy.kill_grace.source {
            path
        } else {
            table.as_str()
        };
        let grace = Some((&s.kill_grace, grace_table));
        kept(r.fencing(&r.at(s.line), path, policy, grace), p);
    }
}

/// Which of the keys `a` and `b` `entries` (of the table at `path`) has,
/// if either: both is refused.
fn either<'e>(
    r: &Reader<'_>,
    entries: &'e [Entry],
    path: &str,
    (a, b): (&'static str, &'static str),
) -> Result<Option<(&'static str, &'e Entry)>, ConfigError> {
    match (get(entries, a), get(entries, b)) {
        (Some(x), Some(y)) => Err(invalid(
            &r.at(x.line.max(y.line)),
            path,
            format!("has both {a} and {b}: give exactly one"),
        )),
        (x, y) => Ok(x.map(|x| (a, x)).or(y.map(|y| (b, y)))),
    }
}

/// When a job runs: its `schedule` or its `every`, exactly one.
fn when(
    r: &Reader<'_>,
    entries: &[Entry],
    path: &str,
    at: &At<'_>,
) -> Result<Sourced<When>, ConfigError> {
    let Some((key, e)) = either(r, entries, path, ("schedule", "every"))? else {
        return Err(invalid(
            at,
            path,
            "has neither schedule nor every: give one (schedule = \"0 3 * * *\", or every = \
             \"15m\")",
        ));
    };
    let (at, raw, path) = (r.at(e.line), e.raw(), join(path, key));
    let refused = |err, shown| invalid(&at, &path, format!("= {shown}: {err}"));
    let (text, schedule) = if key == "schedule" {
        let cron = "a cron expression such as \"0 3 * * *\"";
        let text = string(&raw, &at, &path, cron)?;
        let schedule =
            baton_cron::Schedule::parse(&text).map_err(|err| refused(err, format!("{text:?}")))?;
        (schedule.to_string(), schedule)
    } else {
        let period = positive(&raw, &at, &path)?;
        let schedule = baton_cron::Schedule::every(period)
            .map_err(|err| refused(err, e.value.kind.shown()))?;
        (units::show_duration(period), schedule)
    };
    let when = When {
        text,
        key,
        schedule,
    };
    Ok(Sourced::new(when, at.source()))
}

/// The `[[JOB.steps]]` or `[[JOB.checks]]` tables of `e` (by `kind`, of the
/// job at `job_path`): each read against its job's values. Each table and
/// each of its keys is checked on its own, its problems kept in `p`; a step
/// with a problem is left out.
fn steps(
    r: &Reader<'_>,
    e: &Entry,
    (job_path, kind): (&str, StepKind),
    job: &Values,
    p: &mut Vec<ConfigError>,
) -> Vec<Step> {
    let path = join(job_path, &format!("{}s", kind.as_str()));
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
    let items = items.iter().enumerate();
    items
        .filter_map(|(i, node)| step(r, (&format!("{path}[{i}]"), i, node), kind, job, p))
        .collect()
}

/// The step or check (by `kind`) `node`, the `i`th of its job's, at `here`:
/// read against its job's values; `None` when it has a problem, kept in
/// `p`.
fn step(
    r: &Reader<'_>,
    (here, i, node): (&str, usize, &Node),
    kind: StepKind,
    job: &Values,
    p: &mut Vec<ConfigError>,
) -> Option<Step> {
    let table = match kind {
        StepKind::Step => Table::Step,
        StepKind::Check => Table::Check,
    };
    let before = p.len();
    let entries = kept(r.table(node, here, node.line), p)?;
    // A check with a step's retry key is told so, rather than of an
    // unknown key.
    let never_retried: Vec<&str> = keys::of(Table::Step)
        .filter(|k| table == Table::Check && !k.is_in(Table::Check))
        .map(|k| k.name)
        .collect();
    for (k, bad) in never_retried
        .iter()
        .filter_map(|k| Some((k, get(entries, k)?)))
    {
        p.push(invalid(
            &r.at(bad.line),
            &join(here, k),
            "checks are never retried: remove it (a check runs once, after the steps, \
             whatever they did)",
        ));
    }
    let rest = entries
        .iter()
        .filter(|e| !never_retried.contains(&e.key.as_str()));
    p.extend(r.unknown_keys(rest, here, &names(table)));
    let name = match get(entries, "name") {
        Some(n) => kept(step_name(r, n, here), p),
        None => Some(format!("{}-{}", kind.as_str(), i + 1)),
    };
    let action = self::action(r, entries, here).and_then(|a| {
        let neither = "has neither run nor http: give the command it runs, or the request it sends";
        a.ok_or_else(|| invalid(&r.at(node.line), here, neither))
    });
    let action = kept(action, p);
    let values = r.read_keys((table, here), entries, Some(job), p);
    // A name or an action missing here kept its problem.
    let (name, (_, action)) = (name?, action?);
    let named = get(entries, "name").map_or(Source::Default, |n| r.at(n.line).source());
    // The variables its own table names (read above, with the rest).
    let own_env = get(entries, "env").map_or(0, |e| match &e.value.kind {
        Kind::Table(vars) => vars.len(),
        _ => 0,
    });
    let sources = step_sources(named, &values, (own_env, source_of(job, "env")));
    (p.len() == before).then(|| Step::from_values(&values, name, kind, action, node.line, sources))
}

/// Where `key`'s value in `values` came from ([`Source::Default`] when it
/// has none).
fn source_of(values: &Values, key: &str) -> Source {
    values
        .sourced(key)
        .map_or(Source::Default, |s| s.source.clone())
}

/// Where a step's `name` (`named`), `cwd` and each `env` variable came
/// from, its `values` read: of its variables, the last `own` are its own
/// table's (a step's own follow those it inherits), written where its
/// `env` is; the others come from `inherited` (its job's `env`).
fn step_sources(named: Source, values: &Values, (own, inherited): (usize, Source)) -> StepSources {
    let count = match values.sourced("env").map(|s| &s.value) {
        Some(Value::Env(vars)) => vars.len(),
        _ => 0,
    };
    let first_own = count.saturating_sub(own);
    let own_source = source_of(values, "env");
    StepSources {
        name: named,
        cwd: source_of(values, "cwd"),
        env: (0..count)
            .map(|i| {
                if i >= first_own {
                    own_source.clone()
                } else {
                    inherited.clone()
                }
            })
            .collect(),
    }
}

/// A step's `name` (`n`, in the step at `here`): a valid name.
fn step_name(r: &Reader<'_>, n: &Entry, here: &str) -> Result<String, ConfigError> {
    let at = r.at(n.line);
    let key = join(here, "name");
    let s = string(&n.raw(), &at, &key, "a name")?;
    if !valid_name(&s) {
        return Err(invalid(
            &at,
            &key,
            format!("= {s:?}: a name is 1 to 64 characters of A-Z a-z 0-9 _ . -"),
        ));
    }
    Ok(s)
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
    let Some((key, e)) = either(r, entries, path, ("run", "http"))? else {
        return Ok(None);
    };
    let (at, key) = (r.at(e.line), join(path, key));
    let value = match e.key.as_str() {
        "run" => Action::Command(command(&e.raw(), &at, &key)?),
        _ => Action::Http(http(r, e, &key)?),
    };
    Ok(Some((e.line, Sourced::new(value, at.source()))))
}

/// `http = { url = "…", method = "POST", body = "…", headers = { … } }`.
fn http(r: &Reader<'_>, e: &Entry, key: &str) -> Result<crate::http::HttpRequest, ConfigError> {
    use crate::http::{HttpRequest, InvalidHttp};
    let entries = r.table(&e.value, key, e.line)?;
    first(r.unknown_keys(entries, key, HTTP_KEYS))?;
    let text = |k: &str, what: &str| -> Result<Option<(At<'_>, String)>, ConfigError> {
        get(entries, k)
            .map(|v| {
                let at = r.at(v.line);
                string(&v.raw(), &at, &join(key, k), what).map(|s| (at, s))
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
    let (headers_at, headers) = match get(entries, "headers") {
        Some(h) => (r.at(h.line), self::headers(r, h, &join(key, "headers"))?),
        None => (r.at(e.line), Vec::new()),
    };
    let (method_at, method) = match method {
        Some((at, m)) => (at, m),
        None => (r.at(e.line), "POST".to_owned()),
    };
    HttpRequest::new(&url, &method, body.map(|(_, b)| b), headers).map_err(|err| {
        let (at, part) = match &err {
            InvalidHttp::Url(_) | InvalidHttp::Port(_) => (url_at, "url".to_owned()),
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

/// An `http` table's `headers` (`h`, at `key`): a table of strings.
fn headers(r: &Reader<'_>, h: &Entry, key: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let Kind::Table(t) = &h.value.kind else {
        return Err(invalid(
            &r.at(h.line),
            key,
            format!(
                "is {}: expected a table of headers, such as {{ Authorization = \"Bearer …\" }}",
                h.value.kind.type_name()
            ),
        ));
    };
    t.iter()
        .map(|v| {
            let at = r.at(v.line);
            let value = string(&v.raw(), &at, &join(key, &v.key), "a string")?;
            Ok((v.key.clone(), value))
        })
        .collect()
}
