//! The alerting rules shipped in `deploy/prometheus/`: valid and passing
//! their own unit tests under `promtool`, and written against series the
//! real binary exposes (every metric, label and label value they select,
//! and every label their annotations print), so a rename in the metrics
//! cannot leave them matching nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use yaml_rust2::{Yaml, YamlLoader};

use crate::metrics::{history, metrics, promtool, run_promtool};
use crate::support::{stderr, stdout};

fn deploy() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/prometheus")
}

fn rules_file() -> PathBuf {
    deploy().join("baton-rules.yml")
}

fn tests_file() -> PathBuf {
    deploy().join("baton-rules.test.yml")
}

#[test]
fn shipped_rules_pass_promtool_check_and_their_unit_tests() {
    if promtool().is_none() {
        return;
    }
    for args in [
        ["check", "rules", rules_file().to_str().unwrap()],
        ["test", "rules", tests_file().to_str().unwrap()],
    ] {
        let o = run_promtool(&args, "");
        assert!(
            o.status.success(),
            "promtool {args:?}: {}{}",
            stdout(&o),
            stderr(&o)
        );
    }
}

/// A series selector of an expression: a name and its label matchers
/// (`label`, `op`, `value`).
#[derive(Debug)]
struct Selector {
    name: String,
    matchers: Vec<(String, String, String)>,
}

/// The PromQL keywords followed by a list of label names.
const GROUPING: [&str; 6] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

fn ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':'
}

fn ident_char(b: u8) -> bool {
    ident_start(b) || b.is_ascii_digit()
}

/// The selectors of baton's own series (`baton_…`, `process_…`) in a
/// PromQL expression or a promtool series: a name, then `{…}` if any.
fn selectors(expr: &str) -> Vec<Selector> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        if !ident_start(b[i]) || (i > 0 && ident_char(b[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && ident_char(b[i]) {
            i += 1;
        }
        let name = &expr[start..i];
        if GROUPING.contains(&name) {
            // `by (…)`, `on (…)`: label names, not series.
            let rest = expr[i..].trim_start();
            if rest.starts_with('(') {
                i = expr.len() - rest.len() + rest.find(')').unwrap() + 1;
            }
            continue;
        }
        if !(name.starts_with("baton_") || name.starts_with("process_")) {
            continue;
        }
        let mut matchers = Vec::new();
        if b.get(i) == Some(&b'{') {
            let end = i + expr[i..].find('}').unwrap();
            for m in split_matchers(&expr[i + 1..end]) {
                let op_at = m.find(['=', '!']).unwrap();
                let label = m[..op_at].trim().to_owned();
                let rest = &m[op_at..];
                let op_len =
                    if rest.starts_with("=~") || rest.starts_with("!~") || rest.starts_with("!=") {
                        2
                    } else {
                        1
                    };
                let value = rest[op_len..].trim().trim_matches('"').to_owned();
                matchers.push((label, rest[..op_len].to_owned(), value));
            }
            i = end + 1;
        }
        out.push(Selector {
            name: name.to_owned(),
            matchers,
        });
    }
    out
}

/// `a="x",b!~"y|z"` split at the commas outside quotes.
fn split_matchers(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut quoted, mut start) = (false, 0);
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Every sample of a 0.0.4 exposition, as its name and labels.
fn exposed(text: &str) -> BTreeMap<String, Vec<BTreeMap<String, String>>> {
    let mut out: BTreeMap<String, Vec<BTreeMap<String, String>>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (series, _) = line.rsplit_once(' ').unwrap();
        let s = selectors(series);
        let labels = s[0]
            .matchers
            .iter()
            .map(|(k, _, v)| (k.clone(), v.clone()))
            .collect();
        out.entry(s[0].name.clone()).or_default().push(labels);
    }
    out
}

/// The labels Prometheus sets on every series it scrapes.
const SCRAPE_LABELS: [&str; 2] = ["job", "instance"];

/// Checks `selector` against `exposed`; `values` says whether its label
/// values must be exposed too (a test's made-up job names need not be).
/// Returns the labels its series carry.
fn check(
    selector: &Selector,
    exposed: &BTreeMap<String, Vec<BTreeMap<String, String>>>,
    values: bool,
    what: &str,
) -> BTreeSet<String> {
    let samples = exposed
        .get(&selector.name)
        .unwrap_or_else(|| panic!("{what}: {} is not exposed", selector.name));
    let labels: BTreeSet<String> = samples.iter().flat_map(|s| s.keys().cloned()).collect();
    for (label, op, value) in &selector.matchers {
        if SCRAPE_LABELS.contains(&label.as_str()) {
            continue;
        }
        assert!(
            labels.contains(label),
            "{what}: {} has no label {label} (it has {labels:?})",
            selector.name
        );
        if !values || label == "baton_job" {
            continue;
        }
        let seen: BTreeSet<&str> = samples
            .iter()
            .filter_map(|s| s.get(label).map(String::as_str))
            .collect();
        let wanted: Vec<&str> = match op.as_str() {
            "=~" | "!~" => value.split('|').collect(),
            _ => vec![value.as_str()],
        };
        for w in wanted {
            assert!(
                seen.contains(w),
                "{what}: {}{{{label}{op}\"{value}\"}}: {w} is never exposed (only {seen:?})",
                selector.name
            );
        }
    }
    labels
}

fn load(path: &PathBuf) -> Yaml {
    let text = std::fs::read_to_string(path).unwrap();
    YamlLoader::load_from_str(&text).unwrap().remove(0)
}

#[test]
fn shipped_rules_select_only_series_the_binary_exposes() {
    // A history with every family populated: runs that succeeded and
    // failed, misses, a claim, a disabled job.
    let (s, _, _) = history();
    let exposed = exposed(&metrics(&s, &[]));
    let rules = load(&rules_file());
    let mut alerts = 0;
    for group in rules["groups"].as_vec().unwrap() {
        for rule in group["rules"].as_vec().unwrap() {
            let name = rule["alert"].as_str().unwrap();
            let expr = rule["expr"].as_str().unwrap();
            let found = selectors(expr);
            assert!(!found.is_empty(), "{name}: no baton series in {expr}");
            let mut labels: BTreeSet<String> = SCRAPE_LABELS.map(str::to_owned).into();
            for sel in &found {
                labels.extend(check(sel, &exposed, true, name));
            }
            // What the annotations print is a label the alert has.
            for (_, text) in rule["annotations"].as_hash().unwrap() {
                let text = text.as_str().unwrap();
                for part in text.split("$labels.").skip(1) {
                    let label: String = part
                        .bytes()
                        .take_while(|b| ident_char(*b))
                        .map(char::from)
                        .collect();
                    assert!(
                        labels.contains(&label),
                        "{name}: $labels.{label} in {text:?}"
                    );
                }
            }
            alerts += 1;
        }
    }
    assert!(alerts >= 6, "{alerts} alerts");

    // The unit tests' series are named and labelled as exposed too.
    let tests = load(&tests_file());
    let mut series = 0;
    for test in tests["tests"].as_vec().unwrap() {
        for input in test["input_series"].as_vec().unwrap() {
            let text = input["series"].as_str().unwrap();
            for sel in selectors(text) {
                check(&sel, &exposed, true, text);
                series += 1;
            }
        }
    }
    assert!(series >= 10, "{series} series");
}

#[test]
fn selectors_read_names_and_matchers() {
    let s = selectors(
        "increase(baton_job_missed_occurrences_total{reason!~\"paused|disabled\", baton_job=\"a,b\"}[15m]) > 0 \
         and on (baton_job) baton_job_state{state=\"failing\"} == 1 unless up",
    );
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(s[0].name, "baton_job_missed_occurrences_total");
    assert_eq!(
        s[0].matchers,
        [
            ("reason".into(), "!~".into(), "paused|disabled".into()),
            ("baton_job".into(), "=".into(), "a,b".into())
        ]
    );
    assert_eq!(s[1].name, "baton_job_state");
    assert_eq!(
        s[1].matchers,
        [("state".into(), "=".into(), "failing".into())]
    );
}
