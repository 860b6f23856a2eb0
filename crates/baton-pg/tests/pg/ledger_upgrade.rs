//! A store as the last build of schema 2 left it (`tests/fixtures/
//! store-v2.sql`, dumped by `scripts/upgrade-fixtures.sh` from that build's
//! own runs) is migrated in place to this build's schema, in one
//! transaction, and read whole: every row the old schema held is what the
//! new code returns. A migration that fails midway changes nothing.

use std::sync::Arc;

use baton_pg::{Options, PgLedger, Target};
use baton_store::ledger::Records;
use baton_testkit::pg::PgServer;

/// The server the tests running now share.
fn server() -> Arc<PgServer> {
    PgServer::shared()
}

/// Runs `f` on a runtime of its own.
fn block_on<T>(f: impl Future<Output = T>) -> T {
    tokio::runtime::Runtime::new().unwrap().block_on(f)
}

/// A database of its own on the shared server, loaded with the fixture; the
/// server (kept while the test runs), its target and URL.
fn store_v2(name: &str) -> (Arc<PgServer>, Target, String) {
    let server = server();
    let url = server.url().replace("/postgres", &format!("/{name}"));
    let dump = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v2.sql"),
    )
    .unwrap();
    execute(&server.url(), &format!("CREATE DATABASE {name}"));
    execute(&url, &dump);
    let target = Target::resolve(&url, None, &|_| None).unwrap();
    (server, target, url)
}

/// Runs the statements `sql` on the database at `url`.
fn execute(url: &str, sql: &str) {
    block_on(async {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        c.batch_execute(sql).await.unwrap();
    });
}

/// Each row `sql` selects, its columns as text joined by `|` (`~` for
/// NULL), read without this build's code.
fn rows(url: &str, sql: &str) -> Vec<String> {
    block_on(async {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let wrapped = format!("SELECT t::text FROM ({sql}) t");
        c.query(&wrapped, &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect()
    })
}

/// A row as PostgreSQL prints a record: `(a,b,,d)`, quoting what needs it.
fn record(values: &[Option<String>]) -> String {
    let cols: Vec<String> = values
        .iter()
        .map(|v| match v {
            None => String::new(),
            Some(s)
                if s.is_empty()
                    || s.chars()
                        .any(|c| matches!(c, ',' | '(' | ')' | '"' | '\\' | ' ')) =>
            {
                format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\"\""))
            }
            Some(s) => s.clone(),
        })
        .collect();
    format!("({})", cols.join(","))
}

fn s(v: impl ToString) -> Option<String> {
    Some(v.to_string())
}

fn o<T: ToString>(v: Option<T>) -> Option<String> {
    v.map(|v| v.to_string())
}

fn us(t: jiff::Timestamp) -> Option<String> {
    s(t.as_microsecond())
}

fn ous(t: Option<jiff::Timestamp>) -> Option<String> {
    t.map(|t| t.as_microsecond().to_string())
}

fn flag(b: bool) -> Option<String> {
    s(if b { "t" } else { "f" })
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn version(url: &str) -> Vec<String> {
    rows(url, "SELECT max(version) FROM baton.migrations")
}

#[test]
fn a_store_the_last_schema_2_build_made_is_migrated_in_place_and_reads_whole() {
    let (_server, target, url) = store_v2("upgrade_whole");
    assert_eq!(version(&url), ["(2)"]);
    let before = |sql: &str| sorted(rows(&url, sql));
    let jobs = before("SELECT job FROM baton.jobs");
    let want_jobs = before("SELECT * FROM baton.jobs");
    let want_runs = before("SELECT * FROM baton.runs");
    let want_attempts = before("SELECT * FROM baton.attempts");
    let want_steps = before("SELECT * FROM baton.steps");
    let want_alerts = before("SELECT * FROM baton.alerts");
    let want_missed = before("SELECT * FROM baton.missed");
    let want_pauses = before("SELECT * FROM baton.pauses");
    let want_marks = before("SELECT * FROM baton.watermarks");
    let want_tallies = before("SELECT * FROM baton.tallies");
    let leases = before("SELECT * FROM baton.leases");
    let claims = before("SELECT * FROM baton.claims");
    for (what, rows) in [
        ("runs", &want_runs),
        ("attempts", &want_attempts),
        ("alerts", &want_alerts),
        ("missed", &want_missed),
        ("pauses", &want_pauses),
        ("watermarks", &want_marks),
        ("tallies", &want_tallies),
        ("leases", &leases),
    ] {
        assert!(!rows.is_empty(), "the fixture has no {what}");
    }

    let applied = block_on(baton_pg::migrate(&url, Options::default())).unwrap();
    assert_eq!(applied, [3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(version(&url), ["(9)"]);
    let mut l = PgLedger::open(&target, Options::default()).unwrap();

    let got: Vec<String> = l
        .jobs()
        .unwrap()
        .iter()
        .map(|j| {
            record(&[
                s(&j.job),
                us(j.first_seen),
                o(j.last_decided),
                o(j.last_started),
                ous(j.last_attempt),
                ous(j.last_success),
                ous(j.last_failure),
                s(j.consecutive_failures),
                o(j.last_run_id.as_deref()),
            ])
        })
        .collect();
    assert_eq!(sorted(got), want_jobs);
    let (mut runs, mut attempts, mut steps) = (Vec::new(), Vec::new(), Vec::new());
    let (mut missed, mut pauses, mut marks) = (Vec::new(), Vec::new(), Vec::new());
    for job in &jobs {
        let job = job.trim_matches(|c| c == '(' || c == ')');
        for r in l.history(job, 100_000).unwrap() {
            runs.push(record(&[
                s(&r.run_id),
                s(&r.job),
                o(r.occurrence),
                flag(r.manual),
                o(r.fence),
                o(r.host.as_deref()),
                o(r.pid),
                us(r.started),
                ous(r.finished),
                o(r.verdict),
                o(r.exit_code),
            ]));
            for a in &r.attempts {
                attempts.push(record(&[
                    s(&r.run_id),
                    s(a.seq),
                    s(&a.step),
                    s(a.kind.as_str()),
                    s(a.attempt),
                    us(a.started),
                    us(a.finished),
                    o(a.exit_code),
                    o(a.signal),
                    s(a.outcome),
                ]));
            }
        }
        for st in l.steps(job).unwrap() {
            steps.push(record(&[
                s(&st.job),
                s(&st.step),
                s(st.kind.as_str()),
                ous(st.last_attempt),
                ous(st.last_success),
                ous(st.last_failure),
                s(st.consecutive_failures),
            ]));
        }
        for m in l.missed(job, 100_000).unwrap() {
            missed.push(record(&[
                s(m.id),
                s(&m.job),
                s(m.reason),
                s(m.first),
                s(m.last),
                s(m.count),
                flag(m.at_least),
                us(m.decided),
                us(m.updated),
                o(m.detail.as_deref()),
            ]));
        }
        for p in l.pauses(job, 100).unwrap() {
            pauses.push(record(&[
                s(p.id),
                s(&p.job),
                us(p.since),
                ous(p.until),
                o(p.reason.as_deref()),
                s(&p.who),
                ous(p.ended),
            ]));
        }
        for w in l.watermarks(job, 100).unwrap() {
            marks.push(record(&[
                s(&w.job),
                s(w.seq),
                s(&w.value),
                o(w.run_id.as_deref()),
                o(w.fence),
                us(w.settled),
            ]));
        }
    }
    assert_eq!(sorted(runs), want_runs);
    assert_eq!(sorted(attempts), want_attempts);
    assert_eq!(sorted(steps), want_steps);
    assert_eq!(sorted(missed), want_missed);
    assert_eq!(sorted(pauses), want_pauses);
    assert_eq!(sorted(marks), want_marks);
    let alerts: Vec<String> = l
        .recent_alerts(None, 100_000)
        .unwrap()
        .iter()
        .map(|a| {
            record(&[
                s(a.id),
                us(a.time),
                o(a.job.as_deref()),
                s(a.kind),
                o(a.run_id.as_deref()),
                o(a.occurrence),
                s(&a.message),
                s(&a.json),
            ])
        })
        .collect();
    assert_eq!(sorted(alerts), want_alerts);
    let mut tallies = Vec::new();
    for t in l.tallies().unwrap() {
        for (word, n) in &t.runs {
            tallies.push(record(&[s(&t.job), s("verdict"), s(word), s(n)]));
        }
        for (word, n) in &t.missed {
            tallies.push(record(&[s(&t.job), s("missed"), s(word), s(n)]));
        }
        for (word, n) in &t.skipped {
            tallies.push(record(&[s(&t.job), s("skipped"), s(word), s(n)]));
        }
        if t.lease_losses > 0 {
            tallies.push(record(&[
                s(&t.job),
                s("lease-lost"),
                s(""),
                s(t.lease_losses),
            ]));
        }
    }
    assert_eq!(sorted(tallies), want_tallies);
    // The leases and claims are untouched, and the table version 3 adds is
    // there, empty.
    assert_eq!(before("SELECT * FROM baton.leases"), leases);
    assert_eq!(before("SELECT * FROM baton.claims"), claims);
    assert_eq!(rows(&url, "SELECT count(*) FROM baton.job_guards"), ["(0)"]);
}

/// The migration to version 3 fails (the table it creates is there
/// already): the transaction rolls back, the version stays 2, every row
/// stays, and once the obstacle is gone the same store migrates.
#[test]
fn a_migration_that_fails_midway_leaves_the_store_as_it_was() {
    let (_server, target, url) = store_v2("upgrade_fails");
    execute(&url, "CREATE TABLE baton.job_guards (x integer)");
    let tables = "SELECT table_name FROM information_schema.tables
                  WHERE table_schema = 'baton' ORDER BY 1";
    let all = |url: &str| {
        let mut v = rows(url, tables);
        for t in rows(url, tables) {
            let t = t.trim_matches(|c| c == '(' || c == ')').to_owned();
            v.extend(sorted(rows(url, &format!("SELECT * FROM baton.{t}"))));
        }
        v
    };
    let before = all(&url);
    match block_on(baton_pg::migrate(&url, Options::default())) {
        Err(baton_pg::Error::Query { .. }) => {}
        other => panic!("the migration cannot succeed, got {other:?}"),
    }
    assert_eq!(version(&url), ["(2)"]);
    assert_eq!(all(&url), before);
    match PgLedger::open(&target, Options::default()) {
        Err(baton_pg::Error::SchemaBehind { found: 2, known: 9 }) => {}
        other => panic!("a store behind is refused, got {other:?}"),
    }

    execute(&url, "DROP TABLE baton.job_guards");
    let applied = block_on(baton_pg::migrate(&url, Options::default())).unwrap();
    assert_eq!(applied, [3, 4, 5, 6, 7, 8, 9]);
    let mut l = PgLedger::open(&target, Options::default()).unwrap();
    assert!(!l.history("steps", 10).unwrap().is_empty());
}
