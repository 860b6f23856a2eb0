//! Traces through the real binary: `baton tick`, `baton run` and the
//! daemon send each run's spans to a real OTLP/HTTP collector on
//! 127.0.0.1 that decodes them with OpenTelemetry's own protobuf
//! definitions (Python's `opentelemetry-proto`, `otlp_receiver.py`); the
//! spans, their parents and attributes, the `TRACEPARENT` a job sees; and
//! a collector that is down or stalls, which changes nothing about a run.
//!
//! The decoder lives in a virtual environment at a fixed path, made the
//! first time it is missing (`.ci/run` makes it before the tests). A test
//! that cannot get it fails: it never passes without its decoder.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::sched::Sched;
use crate::support::{code, eventually, stderr, stdout};

/// The `opentelemetry-proto` the decoder uses (and `.ci/run` installs).
const PROTO_PIN: &str = "opentelemetry-proto==1.45.2";

/// The receiver script.
const RECEIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cli/otlp_receiver.py");

/// A Python that imports OpenTelemetry's trace protobuf definitions: the
/// venv's, made when missing.
fn decoder() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("otel-venv");
        let python = venv.join("bin/python");
        if imports(&python) {
            return python;
        }
        // Made aside and moved in place whole, so that a venv half made by
        // a test that was stopped is never taken for one.
        let aside = venv.with_extension(format!("new-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&aside);
        let made = |c: &mut Command| {
            let o = c
                .output()
                .unwrap_or_else(|e| panic!("cannot start {c:?}: {e}"));
            assert!(
                o.status.success(),
                "cannot make the OTLP decoder's venv ({c:?}): {}{}",
                stdout(&o),
                stderr(&o)
            );
        };
        made(Command::new("python3").arg("-m").arg("venv").arg(&aside));
        made(Command::new(aside.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            PROTO_PIN,
        ]));
        let _ = std::fs::remove_dir_all(&venv);
        std::fs::rename(&aside, &venv).unwrap();
        assert!(
            imports(&python),
            "the OTLP decoder's venv at {} cannot import opentelemetry.proto",
            venv.display()
        );
        python
    })
}

fn imports(python: &Path) -> bool {
    Command::new(python)
        .args([
            "-c",
            "from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import \
             ExportTraceServiceRequest",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A collector: the receiver script, answering (`ok`) or never answering
/// (`stall`); what it decoded is in `out`, one request per line.
struct Collector {
    child: Child,
    port: u16,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

impl Collector {
    fn start(mode: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("got.jsonl");
        let mut child = Command::new(decoder())
            .arg(RECEIVER)
            .arg(&out)
            .arg(mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the receiver said no port: {line:?}"));
        Self {
            child,
            port,
            out,
            _dir: dir,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request decoded so far.
    fn exports(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on: connections to it are refused.
fn refused_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// `line` with `$BATON_STEP $BATON_ATTEMPT $TRACEPARENT` appended to `seen`
/// first, in the configuration file's directory (where commands run).
fn noting(line: &str) -> String {
    format!("echo \\\"$BATON_STEP $BATON_ATTEMPT $TRACEPARENT\\\" >> seen; {line}")
}

/// A scheduler whose job `a` runs every hour: step `first` fails once and
/// succeeds when retried, step `second` succeeds, check `check` passes;
/// each writes what `TRACEPARENT` it got to `seen`. Its ledger knows `a`
/// since just before this hour began, so a tick runs this hour's
/// occurrence, and no earlier one is missed.
fn traced(endpoint: &str) -> Sched {
    let s = Sched::new(&format!(
        "[telemetry]\notlp_endpoint = \"{endpoint}\"\n\
         [jobs.a]\nevery = \"1h\"\n\
         [[jobs.a.steps]]\nname = \"first\"\nretries = 1\nbackoff = \"0s\"\n\
         run = \"{}\"\n\
         [[jobs.a.steps]]\nname = \"second\"\nrun = \"{}\"\n\
         [[jobs.a.checks]]\nname = \"check\"\nrun = \"{}\"\n",
        noting("test -e tried || { touch tried; exit 1; }"),
        noting("true"),
        noting("true"),
    ));
    let now = baton_lease::Clock::wall(&baton_lease::SystemClock).as_second();
    let seen = jiff::Timestamp::from_second(now - now.rem_euclid(3600) - 1).unwrap();
    crate::sched::known_since(&s, &["a"], seen);
    s
}

/// What each attempt wrote: (step, attempt, traceparent).
fn seen(s: &Sched) -> Vec<(String, String, String)> {
    std::fs::read_to_string(s.env.path("seen"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                f[0].into(),
                f[1].into(),
                f.get(2).copied().unwrap_or("").into(),
            )
        })
        .collect()
}

fn attr<'v>(span: &'v Value, key: &str) -> &'v Value {
    &span["attributes"][key]
}

/// The spans of the one request `c` got; checks the resource and scope.
fn one_export(c: &Collector) -> Vec<Value> {
    let got = c.exports();
    assert_eq!(got.len(), 1, "{got:#?}");
    let e = &got[0];
    assert_eq!(e["path"], "/v1/traces", "{e:#}");
    assert_eq!(e["content_type"], "application/x-protobuf", "{e:#}");
    assert!(e.get("error").is_none(), "{e:#}");
    assert_eq!(e["resource"]["service.name"], "baton", "{e:#}");
    assert!(
        e["resource"]["host.name"]
            .as_str()
            .is_some_and(|h| !h.is_empty()),
        "{e:#}"
    );
    assert_eq!(e["scopes"], serde_json::json!(["baton"]), "{e:#}");
    e["spans"].as_array().unwrap().clone()
}

/// Well past the 3 s an export may take, so a slow machine never fails
/// the test; a run that waited for the collector forever would.
const BOUND: Duration = Duration::from_secs(90);

#[test]
fn a_ticks_run_is_one_trace_of_its_attempts_and_its_check() {
    let c = Collector::start("ok");
    let s = traced(&c.endpoint());
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let h = s.json(&["history", "a", "--json"]);
    assert_eq!(h[0]["verdict"], "ok", "{h:#}");
    let spans = one_export(&c);
    assert_eq!(spans.len(), 5, "{spans:#?}");
    // The run's span: a root, with the run's facts.
    let run = &spans[0];
    assert_eq!(run["name"], "run a");
    assert_eq!(run["parent_span_id"], "", "{run:#}");
    assert_eq!(run["kind"], 1, "INTERNAL: {run:#}");
    assert_eq!(attr(run, "baton.job"), "a");
    assert_eq!(attr(run, "baton.run_id"), &h[0]["run_id"]);
    assert_eq!(attr(run, "baton.occurrence"), &h[0]["occurrence"], "{h:#}");
    assert_eq!(attr(run, "baton.fence"), &h[0]["fence"], "{h:#}");
    assert_eq!(attr(run, "baton.verdict"), "ok");
    assert_eq!(attr(run, "baton.attempts"), 4);
    assert_eq!(attr(run, "baton.slot"), 1);
    assert_eq!(attr(run, "baton.exit_code"), 0);
    assert!(
        attr(run, "host.name")
            .as_str()
            .is_some_and(|h| !h.is_empty())
    );
    assert_eq!(run["status"]["code"], 0, "{run:#}");
    let trace = run["trace_id"].as_str().unwrap();
    assert_eq!(trace.len(), 32);
    // Three attempts of steps and one of a check, each a child of the run.
    let children: Vec<(String, i64, String, i64)> = spans[1..]
        .iter()
        .map(|sp| {
            assert_eq!(sp["trace_id"], trace, "{sp:#}");
            assert_eq!(sp["parent_span_id"], run["span_id"], "{sp:#}");
            assert!(sp["start"].as_u64() >= run["start"].as_u64(), "{sp:#}");
            assert!(sp["end"].as_u64() <= run["end"].as_u64(), "{sp:#}");
            (
                sp["name"].as_str().unwrap().to_owned(),
                attr(sp, "baton.attempt").as_i64().unwrap(),
                attr(sp, "baton.outcome").as_str().unwrap().to_owned(),
                sp["status"]["code"].as_i64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("step first", 1, "failed", 2),
        ("step first", 2, "ok", 0),
        ("step second", 1, "ok", 0),
        ("check check", 1, "ok", 0),
    ];
    let expected: Vec<(String, i64, String, i64)> = expected
        .iter()
        .map(|(n, a, o, c)| ((*n).to_owned(), *a, (*o).to_owned(), *c))
        .collect();
    assert_eq!(children, expected);
    assert_eq!(attr(&spans[1], "process.exit.code"), 1);
    assert_eq!(attr(&spans[2], "process.exit.code"), 0);
    assert_eq!(attr(&spans[1], "baton.step"), "first");
    assert_eq!(attr(&spans[1], "baton.step.kind"), "step");
    assert_eq!(attr(&spans[4], "baton.step.kind"), "check");
    // Each attempt's TRACEPARENT named the trace and its own span.
    let saw = seen(&s);
    assert_eq!(saw.len(), 4, "{saw:?}");
    for (sp, (step, attempt, parent)) in spans[1..].iter().zip(&saw) {
        assert_eq!(attr(sp, "baton.step"), step.as_str());
        assert_eq!(attr(sp, "baton.attempt").to_string(), *attempt);
        assert_eq!(
            *parent,
            format!("00-{trace}-{}-01", sp["span_id"].as_str().unwrap())
        );
    }
    // Span ids are distinct.
    let mut ids: Vec<&str> = spans
        .iter()
        .map(|s| s["span_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 5);
}

#[test]
fn a_run_joins_the_trace_it_was_started_in_and_a_failure_is_an_error() {
    let c = Collector::start("ok");
    let s = Sched::new(&format!(
        "[telemetry]\notlp_endpoint = \"{}/\"\n\
         [jobs.b]\nevery = \"1h\"\nrun = \"echo \\\"$TRACEPARENT\\\" > tp; exit 3\"\n",
        c.endpoint()
    ));
    let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let o = s
        .cmd(&["run", "b"])
        .env("TRACEPARENT", caller)
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let spans = one_export(&c);
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let (run, step) = (&spans[0], &spans[1]);
    assert_eq!(run["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(run["parent_span_id"], "00f067aa0ba902b7");
    assert_eq!(run["flags"], 0x301, "sampled, remote parent: {run:#}");
    assert_eq!(attr(run, "baton.occurrence"), "manual");
    assert_eq!(attr(run, "baton.verdict"), "failed");
    assert_eq!(attr(run, "baton.exit_code"), 3);
    assert_eq!(run["status"]["code"], 2, "ERROR: {run:#}");
    assert!(
        run["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("failed")),
        "{run:#}"
    );
    assert_eq!(step["parent_span_id"], run["span_id"]);
    assert_eq!(step["name"], "step b");
    assert_eq!(attr(step, "process.exit.code"), 3);
    assert_eq!(step["status"]["code"], 2, "{step:#}");
    let tp = std::fs::read_to_string(s.env.path("tp")).unwrap();
    assert_eq!(
        tp.trim(),
        format!(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01",
            step["span_id"].as_str().unwrap()
        )
    );
    // A TRACEPARENT that is not valid is no parent: a trace of its own.
    let o = s
        .cmd(&["run", "b"])
        .env("TRACEPARENT", "00-xyz")
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let got = c.exports();
    assert_eq!(got.len(), 2);
    let run = &got[1]["spans"][0];
    assert_eq!(run["parent_span_id"], "", "{run:#}");
    assert_ne!(run["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
}

#[test]
fn without_an_endpoint_nothing_is_traced_and_no_traceparent_is_set() {
    let s = Sched::new("[jobs.b]\nevery = \"1h\"\nrun = \"echo \\\"[$TRACEPARENT]\\\" > tp\"\n");
    let o = s.run(&["run", "b"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(s.env.path("tp")).unwrap(), "[]\n");
}

/// A run whose collector is not answering (`endpoint`) succeeds, exits 0,
/// is recorded, and says the failed export once.
fn unaffected(s: &Sched, o: &Output) {
    assert_eq!(code(o), 0, "{}", stderr(o));
    let h = s.json(&["history", "a", "--json"]);
    assert_eq!(h[0]["verdict"], "ok", "{h:#}");
    assert_eq!(seen(s).len(), 4, "every attempt ran");
    let err = stderr(o);
    assert_eq!(
        err.matches("the traces were not sent to the collector")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("the run is not affected"), "{err}");
    assert!(
        s.envelope().contains("WARNING the traces were not sent"),
        "{}",
        s.envelope()
    );
}

#[test]
fn a_collector_that_is_down_fails_and_delays_nothing() {
    let s = traced(&format!("http://127.0.0.1:{}", refused_port()));
    let o = s.run_within(&["tick"], BOUND);
    unaffected(&s, &o);
}

#[test]
fn a_stalled_collector_fails_and_delays_nothing() {
    let c = Collector::start("stall");
    let s = traced(&c.endpoint());
    let o = s.run_within(&["tick"], BOUND);
    unaffected(&s, &o);
    assert!(stderr(&o).contains("no 2xx answer"), "{}", stderr(&o));
}

#[test]
fn the_daemons_runs_are_traced_each_in_a_trace_of_its_own() {
    let c = Collector::start("ok");
    let s = Sched::new(&format!(
        "[telemetry]\notlp_endpoint = \"{}\"\n\
         [jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"echo \\\"$TRACEPARENT\\\" >> tp\"\n",
        c.endpoint()
    ));
    // Started in a trace: its runs still get their own.
    let mut cmd = s.cmd(&["daemon", "--listen", "127.0.0.1:0"]);
    cmd.env(
        "TRACEPARENT",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    );
    let d = crate::daemon::Daemon::start_cmd(cmd).unwrap_or_else(|(_, log)| panic!("{log}"));
    for _ in 0..2 {
        let r = d.post("/v1/jobs/a/run", "");
        assert_eq!(r.status, 202, "{}", r.body);
        let before = c.exports().len();
        eventually("the run's spans", || c.exports().len() > before);
    }
    let got = c.exports();
    assert_eq!(got.len(), 2, "{got:#?}");
    let runs = s.json(&["history", "a", "--json"]);
    let mut traces = Vec::new();
    for e in &got {
        let spans = e["spans"].as_array().unwrap();
        assert_eq!(spans.len(), 2, "{e:#}");
        assert_eq!(spans[0]["parent_span_id"], "", "{e:#}");
        assert_eq!(spans[1]["parent_span_id"], spans[0]["span_id"]);
        assert!(
            runs.as_array()
                .unwrap()
                .iter()
                .any(|r| r["run_id"] == *attr(&spans[0], "baton.run_id")),
            "{runs:#}"
        );
        traces.push(spans[0]["trace_id"].clone());
    }
    assert_ne!(traces[0], traces[1]);
    assert_ne!(traces[0], "4bf92f3577b34da6a3ce929d0e0e4736");
    let tp = std::fs::read_to_string(s.env.path("tp")).unwrap();
    assert!(tp.lines().all(|l| l.len() == 55), "{tp}");
    assert_eq!(d.terminate(), Some(0));
}

#[test]
fn a_bad_endpoint_is_refused_at_load_and_a_good_one_is_shown_with_its_source() {
    let s = Sched::new(
        "[telemetry]\notlp_endpoint = \"grpc://127.0.0.1:4317\"\n\
         [jobs.a]\nevery = \"1h\"\nrun = \"touch ran\"\n",
    );
    for args in [&["tick"][..], &["run", "a"], &["config"]] {
        let o = s.run(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("telemetry.otlp_endpoint") && err.contains("http:// or https://"),
            "{err}"
        );
    }
    assert!(!s.env.path("ran").exists());
    let s = Sched::new(
        "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n\
         [jobs.a]\nevery = \"1h\"\nrun = \"true\"\n",
    );
    let text = stdout(&s.run(&["config"]));
    let line = text
        .lines()
        .find(|l| l.starts_with("otlp_endpoint"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("\"http://127.0.0.1:4318\""), "{line}");
    assert!(line.contains("baton.toml:"), "{line}");
    let o = s
        .cmd(&["config", "--json"])
        .env("BATON_OTLP_ENDPOINT", "https://otel.example")
        .output()
        .unwrap();
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        j["telemetry"]["otlp_endpoint"],
        serde_json::json!({"value": "https://otel.example", "source": "BATON_OTLP_ENDPOINT"})
    );
}

#[test]
fn baton_exec_is_traced_with_its_variable_and_refuses_a_bad_one() {
    let c = Collector::start("ok");
    let env = crate::support::Env::new();
    let tp = env.path("tp");
    let script = format!("echo \"$TRACEPARENT\" > {}; exit 4", tp.display());
    let o = env
        .cmd(&["exec", "--name", "nightly", "--", "sh", "-c", &script])
        .env("BATON_OTLP_ENDPOINT", c.endpoint())
        .env(
            "TRACEPARENT",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 4, "the command's own code: {}", stderr(&o));
    let spans = one_export(&c);
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let (run, command) = (&spans[0], &spans[1]);
    assert_eq!(run["name"], "run nightly");
    assert_eq!(run["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(run["parent_span_id"], "00f067aa0ba902b7");
    assert_eq!(attr(run, "baton.lock"), "nightly");
    // Every run's attributes, as the README's table lists them.
    assert_eq!(attr(run, "baton.job"), "nightly");
    assert_eq!(attr(run, "baton.occurrence"), "manual");
    assert_eq!(attr(run, "baton.slot"), 1);
    assert_eq!(attr(run, "baton.verdict"), "failed");
    assert_eq!(attr(run, "baton.exit_code"), 4);
    assert!(
        attr(run, "baton.fence").as_i64().is_some_and(|f| f > 0),
        "{run:#}"
    );
    assert_eq!(run["status"]["code"], 2);
    assert_eq!(command["parent_span_id"], run["span_id"]);
    assert_eq!(attr(command, "process.exit.code"), 4);
    assert_eq!(
        std::fs::read_to_string(&tp).unwrap().trim(),
        format!(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01",
            command["span_id"].as_str().unwrap()
        )
    );
    // A variable that is no endpoint is a bad option: nothing runs.
    let o = env
        .cmd(&["exec", "--name", "nightly", "--", "touch", "ran"])
        .env("BATON_OTLP_ENDPOINT", "collector:4318")
        .current_dir(env.tmp.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(stderr(&o).contains("BATON_OTLP_ENDPOINT"), "{}", stderr(&o));
    assert!(!env.path("ran").exists());
}

#[test]
fn doctor_tries_the_collector_with_an_empty_export() {
    let c = Collector::start("ok");
    let job = "[jobs.a]\nevery = \"1h\"\nrun = \"true\"\n";
    let s = Sched::new(&format!(
        "[telemetry]\notlp_endpoint = \"{}\"\n{job}",
        c.endpoint()
    ));
    let finding = |s: &Sched| -> Value {
        let o = s.run(&["doctor", "--json"]);
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
        let found: Vec<&Value> = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == "otlp-endpoint")
            .collect();
        assert_eq!(found.len(), 1, "{v:#}");
        found[0].clone()
    };
    let f = finding(&s);
    assert_eq!(f["status"], "ok", "{f:#}");
    let got = c.exports();
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0]["spans"], serde_json::json!([]), "{got:#?}");
    let s = Sched::new(&format!(
        "[telemetry]\notlp_endpoint = \"http://127.0.0.1:{}\"\n{job}",
        refused_port()
    ));
    let f = finding(&s);
    assert_eq!(f["status"], "fail", "{f:#}");
    assert!(
        f["message"]
            .as_str()
            .is_some_and(|m| m.contains("no run's spans would reach it")),
        "{f:#}"
    );
    // Without an endpoint, nothing is said.
    let s = Sched::new(job);
    let o = s.run(&["doctor", "--json"]);
    assert!(!stdout(&o).contains("otlp-endpoint"), "{}", stdout(&o));
}

#[test]
fn an_http_steps_request_carries_its_attempts_traceparent() {
    use baton_testkit::http::{Answer, TestServer};
    let c = Collector::start("ok");
    let server = TestServer::start(&[Answer::Status(204), Answer::Status(204)]);
    let s = Sched::new(&format!(
        "[telemetry]\notlp_endpoint = \"{}\"\n\
         [jobs.ping]\nevery = \"1h\"\nhttp = {{ url = \"{}\" }}\n\
         [jobs.own]\nevery = \"1h\"\n\
         http = {{ url = \"{}\", headers = {{ traceparent = \"mine\" }} }}\n",
        c.endpoint(),
        server.url("/ping"),
        server.url("/own")
    ));
    let o = s.run(&["run", "ping"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let spans = one_export(&c);
    let attempt = &spans[1];
    let seen = server.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        seen[0].header("traceparent").map(str::to_owned),
        Some(format!(
            "00-{}-{}-01",
            attempt["trace_id"].as_str().unwrap(),
            attempt["span_id"].as_str().unwrap()
        ))
    );
    // A request that sets its own keeps it.
    let o = s.run(&["run", "own"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(server.requests()[1].header("traceparent"), Some("mine"));
}

#[test]
fn a_backfills_runs_are_a_trace_each_and_only_the_first_joins_its_caller() {
    let c = Collector::start("ok");
    let s = Sched::new(&format!(
        "[telemetry]\notlp_endpoint = \"{}\"\n[jobs.h]\nevery = \"1h\"\nrun = \"true\"\n",
        c.endpoint()
    ));
    crate::sched::known_since(&s, &["h"], crate::sched::before_new_year());
    let now = baton_lease::Clock::wall(&baton_lease::SystemClock).as_second();
    let hour = now - now.rem_euclid(3600);
    let at = |s: i64| jiff::Timestamp::from_second(s).unwrap().to_string();
    let (from, to) = (at(hour - 5 * 3600), at(hour - 3 * 3600));
    let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let o = s
        .cmd(&["backfill", "h", "--from", &from, "--to", &to])
        .env("TRACEPARENT", caller)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got = c.exports();
    assert_eq!(got.len(), 3, "one request per run: {got:#?}");
    // Each run exports on its own once it has ended: they may arrive in any
    // order, so they are put in the occurrences' order.
    let mut runs: Vec<&Value> = got.iter().map(|e| &e["spans"][0]).collect();
    runs.sort_by_key(|r| attr(r, "baton.occurrence").to_string());
    assert_eq!(runs[0]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(runs[0]["parent_span_id"], "00f067aa0ba902b7");
    for run in &runs[1..] {
        assert_eq!(run["parent_span_id"], "", "{run:#}");
        assert_ne!(run["trace_id"], runs[0]["trace_id"], "{run:#}");
    }
    assert_ne!(runs[1]["trace_id"], runs[2]["trace_id"]);
    let occurrences: Vec<&Value> = runs.iter().map(|r| attr(r, "baton.occurrence")).collect();
    assert_eq!(occurrences.len(), 3);
    assert_ne!(occurrences[0], occurrences[1]);
}
