//! The configuration loader never panics, whatever `baton.toml`, its
//! `jobs.d/` drop-ins, the bodies of `PUT /v1/jobs/NAME` and the
//! `BATON_<KEY>` variables say; and what it accepts it reads again to the
//! same values from the text the TOML writer gives it back, and from the
//! drop-in the jobs API would write for each of its jobs.
//!
//! An input is the text of `baton.toml`, then sections, each opened by a
//! line that starts with `%%% `:
//!
//! - `%%% jobs.d/NAME.toml`: a drop-in and its text;
//! - `%%% put NAME`: the JSON body of `PUT /v1/jobs/NAME`, made into a
//!   drop-in by the writer the daemon uses;
//! - `%%% env KEY`: the value of `BATON_<KEY>`;
//! - `%%% state-dir`: the value of `--state-dir`.
//!
//! Loading reads no file (the configuration's files are given as text, as
//! the daemon hands them to each run), so no temporary directory is needed.
#![no_main]

use std::path::{Path, PathBuf};

use baton_sched::config::{Config, Dropin, Overrides, Snapshot, dropin, valid_name};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const CONFIG: &str = "/etc/baton/baton.toml";

/// What an input says.
#[derive(Default)]
struct Input {
    main: String,
    dropins: Vec<(String, String)>,
    puts: Vec<(String, Vec<u8>)>,
    over: Overrides,
}

fn split(data: &[u8]) -> Input {
    let text = String::from_utf8_lossy(data);
    let mut input = Input::default();
    let mut sections = text.split("\n%%% ");
    input.main = sections.next().unwrap_or_default().to_owned();
    for s in sections {
        let (head, body) = s.split_once('\n').unwrap_or((s, ""));
        if let Some(name) = head
            .strip_prefix("jobs.d/")
            .and_then(|f| f.strip_suffix(".toml"))
        {
            input.dropins.push((name.to_owned(), body.to_owned()));
        } else if let Some(name) = head.strip_prefix("put ") {
            input.puts.push((name.to_owned(), body.as_bytes().to_vec()));
        } else if let Some(key) = head.strip_prefix("env ") {
            // As `Overrides::from_env` reads them: known keys, set and not
            // empty; no variable holds a NUL.
            let known = baton_sched::config::env_keys()
                .chain(baton_sched::config::store_env_keys())
                .any(|k| k == key);
            if known && !body.is_empty() && !body.contains('\0') {
                input.over.env.insert(key.to_owned(), body.to_owned());
            }
        } else if head == "state-dir" && !body.is_empty() && !body.contains('\0') {
            input.over.state_dir = Some(PathBuf::from(body));
        }
    }
    input
}

fn snapshot(main: &str, dropins: &[(String, String)]) -> Snapshot {
    let path = Path::new(CONFIG);
    let mut list: Vec<Dropin> = Vec::new();
    for (name, text) in dropins {
        // As `jobs.d/` is read: one file per name, hidden files skipped,
        // other names refused before anything is loaded.
        if name.starts_with('.') || !valid_name(name) {
            continue;
        }
        list.retain(|d| d.name != *name);
        list.push(Dropin {
            path: dropin::path(path, name),
            name: name.clone(),
            text: text.clone(),
        });
    }
    list.sort_by(|a, b| a.name.cmp(&b.name));
    Snapshot {
        path: path.to_owned(),
        text: main.to_owned(),
        dropins: list,
    }
}

/// What `baton config --json` shows, without where each value came from:
/// the values alone.
fn values(c: &Config) -> Value {
    fn strip(v: Value) -> Value {
        match v {
            Value::Object(m) => {
                if m.len() == 2 && m.contains_key("value") && m.contains_key("source") {
                    let mut m = m;
                    strip(m.remove("value").unwrap_or(Value::Null))
                } else {
                    Value::Object(m.into_iter().map(|(k, v)| (k, strip(v))).collect())
                }
            }
            Value::Array(a) => Value::Array(a.into_iter().map(strip).collect()),
            other => other,
        }
    }
    strip(baton_sched::show::to_json(c))
}

/// A TOML value as the JSON of a `PUT` body; `None` for a date, which JSON
/// cannot hold.
fn to_json(v: &toml::Value) -> Option<Value> {
    Some(match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => Value::from(serde_json::Number::from_f64(*f)?),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(_) => return None,
        toml::Value::Array(a) => Value::Array(a.iter().map(to_json).collect::<Option<_>>()?),
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| Some((k.clone(), to_json(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

/// Loads what the input says, then checks that what loads reads back the
/// same through the writers.
fn check(input: &Input) {
    let mut dropins = input.dropins.clone();
    let loaded = snapshot(&input.main, &dropins).load(&input.over);
    if let Ok(c) = &loaded {
        rewritten_reads_the_same(input, &dropins, c);
    }
    for (name, body) in &input.puts {
        let Ok(table) = serde_json::from_slice::<Value>(body) else {
            continue;
        };
        let Ok(text) = dropin::job_toml(name, &table) else {
            continue;
        };
        canonical_is_stable(name, &text);
        dropins.push((name.clone(), text));
        let _ = snapshot(&input.main, &dropins).load(&input.over);
    }
}

/// The writer's text is TOML that gives back the same text.
fn canonical_is_stable(name: &str, text: &str) {
    let table: toml::Table = toml::from_str(text)
        .unwrap_or_else(|e| panic!("job_toml wrote TOML that does not parse: {e}\n{text}"));
    let json = to_json(&toml::Value::Table(table)).expect("job_toml writes no date");
    let again = dropin::job_toml(name, &json)
        .unwrap_or_else(|e| panic!("job_toml refuses what it wrote: {e}\n{text}"));
    assert_eq!(again, text, "job_toml is not stable");
}

/// `baton.toml` written again by the TOML writer, and each of its jobs
/// moved to the drop-in `PUT` would write for it, load to the same values.
fn rewritten_reads_the_same(input: &Input, dropins: &[(String, String)], c: &Config) {
    let Ok(mut table) = toml::from_str::<toml::Table>(&input.main) else {
        return;
    };
    let want = values(c);
    let Ok(text) = toml::to_string(&table) else {
        return;
    };
    match snapshot(&text, dropins).load(&input.over) {
        Ok(again) => assert_eq!(values(&again), want, "rewritten:\n{text}"),
        Err(e) => panic!("baton.toml rewritten is refused: {e}\n{text}"),
    }
    let Some(toml::Value::Table(jobs)) = table.remove("jobs") else {
        return;
    };
    for (name, job) in jobs.iter().take(4) {
        let Some(body) = to_json(job) else { continue };
        let Ok(file) = dropin::job_toml(name, &body) else {
            // A name the writer refuses (a hidden one) stays in baton.toml.
            continue;
        };
        let mut rest = jobs.clone();
        rest.remove(name);
        let mut main = table.clone();
        main.insert("jobs".into(), toml::Value::Table(rest));
        let Ok(main_text) = toml::to_string(&main) else {
            continue;
        };
        let mut with = dropins.to_vec();
        with.push((name.clone(), file.clone()));
        match snapshot(&main_text, &with).load(&input.over) {
            Ok(moved) => assert_eq!(
                values(&moved),
                want,
                "job {name} moved to jobs.d/:\n{file}\nbaton.toml:\n{main_text}"
            ),
            Err(e) => panic!("job {name} moved to jobs.d/ is refused: {e}\n{file}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(&split(data));
});
