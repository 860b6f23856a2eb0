//! `baton config`: every effective value and where it came from (`default`,
//! `FILE:LINE`, `[scheduler] FILE:LINE` for a value a job inherits, or the
//! environment variable's name). A pure rendering of a [`Config`]. The
//! store's URL is always shown masked: no form prints its password.

use serde::Serialize;
use serde_json::{Value as Json, json};

use crate::config::keys::{self, Key, Table, Type};
use crate::config::{Action, Command, Config, Job, Source, Sourced, Step, StepKind, Value, Values};
use crate::units::{show_duration, show_size};

/// One value and its source.
#[derive(Debug, Clone, Serialize)]
pub struct Shown {
    /// The key.
    pub key: String,
    /// The value, as TOML would write it.
    pub value: String,
    /// The value as JSON.
    #[serde(skip)]
    pub json: Json,
    /// Where it came from.
    pub source: String,
}

fn item<T>(key: &str, s: &Sourced<T>, (value, json): (String, Json)) -> Shown {
    Shown {
        key: key.to_owned(),
        value,
        json,
        source: s.provenance(),
    }
}

/// A value that is not a key's own (a step's name, its working directory,
/// one of its variables) and where it came from.
fn from(key: &str, (value, json): (String, Json), source: &Source) -> Shown {
    Shown {
        key: key.to_owned(),
        value,
        json,
        source: source.to_string(),
    }
}

/// A string, quoted as TOML writes it, and as JSON.
fn quoted(s: impl Into<String>) -> (String, Json) {
    let s = s.into();
    (format!("{s:?}"), json!(s))
}

/// `key`'s value as TOML would write it, and as JSON; an unset one in its
/// default's words (`none`), a limit of none as 0.
pub(crate) fn shown(key: &Key, value: &Value) -> (String, Json) {
    match value {
        Value::Unset if key.ty == Type::Limit => ("0".into(), json!(0)),
        Value::Unset => (key.default.words().to_owned(), Json::Null),
        Value::Bool(b) => (b.to_string(), json!(b)),
        Value::Count(n) => (n.to_string(), json!(n)),
        Value::Size(n) => quoted(show_size(*n)),
        Value::Duration(d) => quoted(show_duration(*d)),
        Value::Codes(c) => (format!("{c:?}"), json!(c)),
        Value::CatchUp(c) => quoted(c.as_str()),
        Value::Overlap(o) => quoted(o.as_str()),
        Value::Zone(z) => quoted(&z.name),
        Value::Path(p) => (format!("{:?}", p.display().to_string()), json!(p)),
        Value::Name(n) => quoted(n),
        Value::Command(c) => cmd(c),
        Value::Env(vars) => {
            let pairs: Vec<String> = vars.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
            let text = match pairs.len() {
                0 => "{}".to_owned(),
                _ => format!("{{ {} }}", pairs.join(", ")),
            };
            let map: serde_json::Map<_, _> =
                vars.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            (text, Json::Object(map))
        }
        Value::Listen(l) => quoted(l.to_string()),
        Value::Url(u) => quoted(u.masked()),
        Value::Webhook(u) => quoted(u.shown()),
        Value::Otlp(u) => quoted(u.shown()),
        Value::SslMode(m) => quoted(m.as_str()),
    }
}

/// The values of `table`'s keys that `values` holds, in the keys' order.
fn items(table: Table, values: &Values) -> Vec<Shown> {
    keys::of(table)
        .filter_map(|k| {
            let s = values.sourced(k.name)?;
            Some(item(k.name, s, shown(k, &s.value)))
        })
        .collect()
}

/// `fill`'s values of `table`'s keys.
fn of(table: Table, fill: impl FnOnce(&mut Values)) -> Vec<Shown> {
    let mut values = Values::default();
    fill(&mut values);
    items(table, &values)
}

fn cmd(c: &Command) -> (String, Json) {
    match c {
        Command::Shell(s) => (format!("{s:?}"), json!(s)),
        Command::Argv(a) => (format!("{a:?}"), json!(a)),
    }
}

fn action(a: &Action) -> (String, Json) {
    match a {
        Action::Command(c) => cmd(c),
        Action::Http(h) => (
            h.to_toml(),
            json!({
                "url": h.url,
                "method": h.method,
                "body": h.body,
                "headers": h
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect::<serde_json::Map<_, _>>(),
            }),
        ),
    }
}

/// The `[scheduler]` values.
pub fn scheduler(c: &Config) -> Vec<Shown> {
    of(Table::Scheduler, |v| c.settings.values(v))
}

/// The `[daemon]` values, the socket where it is (its default in the
/// state directory).
pub fn daemon(c: &Config) -> Vec<Shown> {
    of(Table::Daemon, |v| {
        c.daemon.values(v);
        v.put(
            "socket",
            &c.daemon.socket.clone().map(|_| c.daemon_socket()),
        );
    })
}

/// The `[telemetry]` values, the endpoint shown as a webhook's URL is.
pub fn telemetry(c: &Config) -> Vec<Shown> {
    of(Table::Telemetry, |v| c.telemetry.values(v))
}

/// The `[store]` values, the URL's password masked (empty without a
/// store).
pub fn store(c: &Config) -> Vec<Shown> {
    c.store
        .as_ref()
        .map_or_else(Vec::new, |st| of(Table::Store, |v| st.values(v)))
}

/// A job's own values (its steps apart).
pub fn job(j: &Job) -> Vec<Shown> {
    let when = quoted(&j.when.value.text);
    let mut out = vec![item(j.when.value.key, &j.when, when)];
    out.extend(of(Table::Job, |v| j.values(v)));
    out
}

/// A step's values (a check's: those a check takes).
pub fn step(s: &Step) -> Vec<Shown> {
    let table = match s.kind {
        StepKind::Step => Table::Step,
        StepKind::Check => Table::Check,
    };
    let mut out = vec![item(
        s.action.value.key(),
        &s.action,
        action(&s.action.value),
    )];
    out.extend(of(table, |v| s.values(v)));
    out
}

/// The configuration file's directory: where a step without `cwd` runs.
fn config_dir(c: &Config) -> Option<&std::path::Path> {
    c.path.parent().filter(|d| !d.as_os_str().is_empty())
}

/// A step's `name`, with where it came from.
fn step_name(s: &Step) -> Shown {
    from("name", quoted(&s.name), &s.sources.name)
}

/// Where a step runs, with where that came from: its `cwd`, else `dir`,
/// the configuration file's directory (where a run starts it then).
fn step_cwd(s: &Step, dir: Option<&std::path::Path>) -> Shown {
    let cwd = match s.cwd.as_deref().or(dir) {
        Some(d) => quoted(d.display().to_string()),
        None => ("the configuration file's directory".to_owned(), Json::Null),
    };
    from("cwd", cwd, &s.sources.cwd)
}

/// A step's variables, each as `env.NAME`, with where it was set.
fn step_env(s: &Step) -> Vec<Shown> {
    s.env
        .iter()
        .zip(&s.sources.env)
        .map(|((k, v), source)| from(&format!("env.{k}"), quoted(v), source))
        .collect()
}

fn lines(out: &mut String, items: &[Shown]) {
    for i in items {
        let kv = format!("{} = {}", i.key, i.value);
        out.push_str(&format!("{kv:<48} # {}\n", i.source));
    }
}

/// The human form: TOML with every value's source as a comment.
pub fn render(c: &Config) -> String {
    let dir = config_dir(c);
    let mut out = format!(
        "# effective configuration of {}\n[scheduler]\n",
        c.path.display()
    );
    lines(&mut out, &scheduler(c));
    out.push_str("\n[daemon]\n");
    lines(&mut out, &daemon(c));
    out.push_str("\n[telemetry]\n");
    lines(&mut out, &telemetry(c));
    if c.store.is_some() {
        out.push_str("\n[store]\n");
        lines(&mut out, &store(c));
    }
    for j in c.jobs.values() {
        out.push_str(&format!("\n[jobs.{}]{:<36} # {}\n", j.name, "", j.source));
        lines(&mut out, &job(j));
        for s in j.all_steps() {
            let table = if s.kind == StepKind::Check {
                "checks"
            } else {
                "steps"
            };
            out.push_str(&format!("[[jobs.{}.{table}]]\n", j.name));
            lines(&mut out, &[step_name(s)]);
            lines(&mut out, &step(s));
            lines(&mut out, &step_env(s));
            lines(&mut out, &[step_cwd(s, dir)]);
        }
    }
    out
}

fn object(items: &[Shown]) -> Json {
    let mut m = serde_json::Map::new();
    for i in items {
        m.insert(i.key.clone(), json!({"value": i.json, "source": i.source}));
    }
    Json::Object(m)
}

/// The `--json` form: `{"path", "scheduler": {KEY: {value, source}},
/// "daemon": {KEY: {value, source}}, "telemetry": {KEY: {value, source}},
/// "store": {KEY: {value, source}} or
/// null, "jobs": {NAME: {KEY: {value, source}, "steps": [...], "checks": [...]}}}`;
/// a step's `name`, `env` (`{VAR: value}`) and `cwd` are plain values, and
/// its `sources` says where each came from (`{"name", "cwd", "env": {VAR:
/// source}}`).
pub fn to_json(c: &Config) -> Json {
    let dir = config_dir(c);
    let mut jobs = serde_json::Map::new();
    for j in c.jobs.values() {
        let mut o = object(&job(j));
        let steps = |list: &[Step]| -> Json {
            Json::Array(
                list.iter()
                    .map(|s| {
                        let mut v = object(&step(s));
                        if let Json::Object(m) = &mut v {
                            m.insert("name".into(), json!(s.name));
                            m.insert(
                                "env".into(),
                                Json::Object(
                                    s.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect(),
                                ),
                            );
                            m.insert("cwd".into(), json!(s.cwd));
                            // Where those three came from, beside them (their
                            // values keep the form they have always had).
                            let mut sources: serde_json::Map<_, _> =
                                [step_name(s), step_cwd(s, dir)]
                                    .into_iter()
                                    .map(|i| (i.key, json!(i.source)))
                                    .collect();
                            let env = s.env.iter().zip(&s.sources.env);
                            sources.insert(
                                "env".into(),
                                Json::Object(
                                    env.map(|((k, _), from)| (k.clone(), json!(from.to_string())))
                                        .collect(),
                                ),
                            );
                            m.insert("sources".into(), Json::Object(sources));
                        }
                        v
                    })
                    .collect(),
            )
        };
        if let Json::Object(m) = &mut o {
            m.insert("steps".into(), steps(&j.steps));
            m.insert("checks".into(), steps(&j.checks));
        }
        jobs.insert(j.name.clone(), o);
    }
    json!({
        "path": c.path,
        "scheduler": object(&scheduler(c)),
        "daemon": object(&daemon(c)),
        "telemetry": object(&telemetry(c)),
        "store": if c.store.is_some() { object(&store(c)) } else { Json::Null },
        "jobs": Json::Object(jobs),
    })
}
