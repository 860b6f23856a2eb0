//! `baton config`: every effective value and where it came from (`default`,
//! `FILE:LINE`, `[scheduler] FILE:LINE` for a value a job inherits, or the
//! environment variable's name). A pure rendering of a [`Config`]. The
//! store's URL is always shown masked: no form prints its password.

use serde::Serialize;
use serde_json::{Value, json};

use crate::config::{Action, Command, Config, Job, RunPolicy, Sourced, Step};
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
    pub json: Value,
    /// Where it came from.
    pub source: String,
}

fn item<T>(key: &str, s: &Sourced<T>, text: String, json: Value) -> Shown {
    Shown {
        key: key.to_owned(),
        value: text,
        json,
        source: s.provenance(),
    }
}

fn dur(key: &str, s: &Sourced<std::time::Duration>) -> Shown {
    let t = show_duration(s.value);
    item(key, s, format!("{t:?}"), json!(t))
}

fn opt_dur(key: &str, s: &Sourced<Option<std::time::Duration>>) -> Shown {
    match s.value {
        Some(d) => {
            let t = show_duration(d);
            item(key, s, format!("{t:?}"), json!(t))
        }
        None => item(key, s, "0".into(), json!(0)),
    }
}

fn cmd(c: &Command) -> (String, Value) {
    match c {
        Command::Shell(s) => (format!("{s:?}"), json!(s)),
        Command::Argv(a) => (format!("{a:?}"), json!(a)),
    }
}

fn action(a: &Action) -> (String, Value) {
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

fn policy(p: &RunPolicy) -> Vec<Shown> {
    vec![
        item(
            "retries",
            &p.retries,
            p.retries.value.to_string(),
            json!(p.retries.value),
        ),
        dur("backoff", &p.backoff),
        dur("backoff_max", &p.backoff_max),
        item(
            "no_retry_exit_codes",
            &p.no_retry_exit_codes,
            format!("{:?}", p.no_retry_exit_codes.value),
            json!(p.no_retry_exit_codes.value),
        ),
        opt_dur("timeout", &p.timeout),
        dur("ttl", &p.ttl),
        dur("kill_grace", &p.kill_grace),
        dur("takeover_grace", &p.takeover_grace),
        opt_dur("max_runtime", &p.max_runtime),
        item(
            "output_limit",
            &p.output_limit,
            format!("{:?}", show_size(p.output_limit.value)),
            json!(show_size(p.output_limit.value)),
        ),
        dur("catch_up_window", &p.catch_up_window),
        item(
            "catch_up",
            &p.catch_up,
            format!("{:?}", p.catch_up.value.as_str()),
            json!(p.catch_up.value.as_str()),
        ),
        item(
            "catch_up_max",
            &p.catch_up_max,
            p.catch_up_max.value.to_string(),
            json!(p.catch_up_max.value),
        ),
        item(
            "overlap",
            &p.overlap,
            format!("{:?}", p.overlap.value.as_str()),
            json!(p.overlap.value.as_str()),
        ),
        item(
            "contain",
            &p.contain,
            p.contain.value.to_string(),
            json!(p.contain.value),
        ),
    ]
}

/// The `[scheduler]` values.
pub fn scheduler(c: &Config) -> Vec<Shown> {
    let s = &c.settings;
    let mut out = vec![
        item(
            "state_dir",
            &s.state_dir,
            format!("{:?}", s.state_dir.value.display().to_string()),
            json!(s.state_dir.value),
        ),
        item(
            "timezone",
            &s.timezone,
            format!("{:?}", s.timezone.value.name),
            json!(s.timezone.value.name),
        ),
        item(
            "enabled",
            &s.enabled,
            s.enabled.value.to_string(),
            json!(s.enabled.value),
        ),
        match &s.alert_command.value {
            Some(c) => {
                let (t, j) = cmd(c);
                item("alert_command", &s.alert_command, t, j)
            }
            None => item(
                "alert_command",
                &s.alert_command,
                "none".into(),
                Value::Null,
            ),
        },
        item(
            "history_keep",
            &s.history_keep,
            s.history_keep.value.to_string(),
            json!(s.history_keep.value),
        ),
        dur("log_keep", &s.log_keep),
        item(
            "max_parallel",
            &s.max_parallel,
            s.max_parallel.value.to_string(),
            json!(s.max_parallel.value),
        ),
        item(
            "lock",
            &s.lock,
            s.lock
                .value
                .as_ref()
                .map_or_else(|| "each job's name".to_owned(), |l| format!("{l:?}")),
            json!(s.lock.value),
        ),
    ];
    out.extend(policy(&s.policy));
    out
}

/// The `[daemon]` values.
pub fn daemon(c: &Config) -> Vec<Shown> {
    let d = &c.daemon;
    vec![
        item(
            "listen",
            &d.listen,
            format!("{:?}", d.listen.value.to_string()),
            json!(d.listen.value.to_string()),
        ),
        match &d.token_file.value {
            Some(p) => item(
                "token_file",
                &d.token_file,
                format!("{:?}", p.display().to_string()),
                json!(p),
            ),
            None => item("token_file", &d.token_file, "none".into(), Value::Null),
        },
        item(
            "socket",
            &d.socket,
            format!("{:?}", c.daemon_socket().display().to_string()),
            json!(c.daemon_socket()),
        ),
        match &d.socket_group.value {
            Some(g) => item("socket_group", &d.socket_group, format!("{g:?}"), json!(g)),
            None => item("socket_group", &d.socket_group, "none".into(), Value::Null),
        },
        dur("shutdown_grace", &d.shutdown_grace),
    ]
}

/// The `[store]` values, the URL's password masked (empty without a
/// store).
pub fn store(c: &Config) -> Vec<Shown> {
    let Some(st) = &c.store else {
        return Vec::new();
    };
    let url = st.url.value.masked();
    vec![
        item("url", &st.url, format!("{url:?}"), json!(url)),
        match &st.password_file.value {
            Some(p) => item(
                "password_file",
                &st.password_file,
                format!("{:?}", p.display().to_string()),
                json!(p),
            ),
            None => item(
                "password_file",
                &st.password_file,
                "none".into(),
                Value::Null,
            ),
        },
    ]
}

/// A job's own values (its steps apart).
pub fn job(j: &Job) -> Vec<Shown> {
    let mut out = vec![
        item(
            j.when.value.key,
            &j.when,
            format!("{:?}", j.when.value.text),
            json!(j.when.value.text),
        ),
        item(
            "timezone",
            &j.timezone,
            format!("{:?}", j.timezone.value.name),
            json!(j.timezone.value.name),
        ),
        item(
            "enabled",
            &j.enabled,
            j.enabled.value.to_string(),
            json!(j.enabled.value),
        ),
        item(
            "lock",
            &j.lock,
            format!("{:?}", j.lock.value),
            json!(j.lock.value),
        ),
    ];
    out.extend(policy(&j.policy));
    out
}

/// A step's values.
pub fn step(s: &Step) -> Vec<Shown> {
    let (t, j) = action(&s.action.value);
    let mut out = vec![item(s.action.value.key(), &s.action, t, j)];
    if s.kind == crate::config::StepKind::Step {
        out.push(item(
            "retries",
            &s.retries,
            s.retries.value.to_string(),
            json!(s.retries.value),
        ));
        out.push(dur("backoff", &s.backoff));
        out.push(dur("backoff_max", &s.backoff_max));
        out.push(item(
            "no_retry_exit_codes",
            &s.no_retry_exit_codes,
            format!("{:?}", s.no_retry_exit_codes.value),
            json!(s.no_retry_exit_codes.value),
        ));
    }
    out.push(opt_dur("timeout", &s.timeout));
    out.push(dur("kill_grace", &s.kill_grace));
    out.push(item(
        "output_limit",
        &s.output_limit,
        format!("{:?}", show_size(s.output_limit.value)),
        json!(show_size(s.output_limit.value)),
    ));
    out
}

fn lines(out: &mut String, items: &[Shown]) {
    for i in items {
        let kv = format!("{} = {}", i.key, i.value);
        out.push_str(&format!("{kv:<48} # {}\n", i.source));
    }
}

/// The human form: TOML with every value's source as a comment.
pub fn render(c: &Config) -> String {
    let mut out = format!(
        "# effective configuration of {}\n[scheduler]\n",
        c.path.display()
    );
    lines(&mut out, &scheduler(c));
    out.push_str("\n[daemon]\n");
    lines(&mut out, &daemon(c));
    if c.store.is_some() {
        out.push_str("\n[store]\n");
        lines(&mut out, &store(c));
    }
    for j in c.jobs.values() {
        out.push_str(&format!("\n[jobs.{}]{:<36} # {}\n", j.name, "", j.source));
        lines(&mut out, &job(j));
        for s in j.all_steps() {
            let table = if s.kind == crate::config::StepKind::Check {
                "checks"
            } else {
                "steps"
            };
            out.push_str(&format!(
                "[[jobs.{}.{table}]]\nname = {:?}\n",
                j.name, s.name
            ));
            lines(&mut out, &step(s));
            for (k, v) in &s.env {
                out.push_str(&format!("env.{k} = {v:?}\n"));
            }
            if let Some(cwd) = &s.cwd {
                out.push_str(&format!("cwd = {:?}\n", cwd.display().to_string()));
            }
        }
    }
    out
}

fn object(items: &[Shown]) -> Value {
    let mut m = serde_json::Map::new();
    for i in items {
        m.insert(i.key.clone(), json!({"value": i.json, "source": i.source}));
    }
    Value::Object(m)
}

/// The `--json` form: `{"path", "scheduler": {KEY: {value, source}},
/// "daemon": {KEY: {value, source}}, "store": {KEY: {value, source}} or
/// null, "jobs": {NAME: {KEY: {value, source}, "steps": [...], "checks": [...]}}}`.
pub fn to_json(c: &Config) -> Value {
    let mut jobs = serde_json::Map::new();
    for j in c.jobs.values() {
        let mut o = object(&job(j));
        let steps = |list: &[Step]| -> Value {
            Value::Array(
                list.iter()
                    .map(|s| {
                        let mut v = object(&step(s));
                        if let Value::Object(m) = &mut v {
                            m.insert("name".into(), json!(s.name));
                            m.insert(
                                "env".into(),
                                Value::Object(
                                    s.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect(),
                                ),
                            );
                            m.insert("cwd".into(), json!(s.cwd));
                        }
                        v
                    })
                    .collect(),
            )
        };
        if let Value::Object(m) = &mut o {
            m.insert("steps".into(), steps(&j.steps));
            m.insert("checks".into(), steps(&j.checks));
        }
        jobs.insert(j.name.clone(), o);
    }
    json!({
        "path": c.path,
        "scheduler": object(&scheduler(c)),
        "daemon": object(&daemon(c)),
        "store": if c.store.is_some() { object(&store(c)) } else { Value::Null },
        "jobs": Value::Object(jobs),
    })
}
