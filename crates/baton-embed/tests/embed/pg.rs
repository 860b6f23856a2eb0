//! The replicas' tests on PostgreSQL: a throwaway server, three replica
//! processes sharing it, and one killed mid-run.

use baton_store::Store as _;
use baton_testkit::pg::PgServer;

use crate::replicas::{killed_mid_run, three_replicas};

fn ledger(url: &str) -> Box<dyn baton_store::ledger::Records> {
    let env = |_: &str| None;
    let target = baton_pg::Target::resolve(url, None, &env).unwrap();
    let now = jiff::Timestamp::from_second(baton_testkit::wall_seconds()).unwrap();
    baton_pg::Postgres::new(target).records(now).unwrap()
}

#[test]
fn three_replicas_on_postgres_run_each_occurrence_once() {
    let server = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    three_replicas(&format!("postgres:{url}"), dir.path(), &|| ledger(&url));
}

#[test]
fn a_replica_on_postgres_killed_mid_run_leaves_later_occurrences_to_another() {
    let server = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    killed_mid_run(&format!("postgres:{url}"), dir.path(), &|| ledger(&url));
}
