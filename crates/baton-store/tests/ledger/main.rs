#![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.
//! The ledger's conformance suite: every scenario is written once against
//! `&mut dyn Records` and runs on both implementations, the SQLite
//! `baton_ledger::Ledger` in a temporary directory and `baton_pg::PgLedger`
//! on a throwaway PostgreSQL server (one server shared by the tests that
//! run at once, a database of its own per test). The PostgreSQL run also
//! replays the scenario on SQLite and compares what both returned, value
//! for value: the same calls must give the same rows. Every scenario runs a
//! third time through a PgBouncer in transaction pooling mode, where
//! consecutive transactions may run on different server connections.

/// Declares, for each scenario function of the module, a module of the same
/// name with a `sqlite` and a `pg` test.
macro_rules! both {
    ($($scenario:ident)*) => {$(
        mod $scenario {
            #[test]
            fn sqlite() {
                crate::support::run(crate::support::Kind::Sqlite, super::$scenario);
            }

            #[test]
            fn pg() {
                crate::support::run_compared(super::$scenario);
            }

            #[test]
            fn pg_bouncer() {
                crate::support::run_compared_on(
                    crate::support::Kind::PgBouncer,
                    super::$scenario,
                );
            }
        }
    )*};
}

mod support;

mod alerts;
mod decisions;
mod declarations;
mod missed;
mod pauses;
mod pg_only;
mod prune;
mod queue;
mod races;
mod reads;
mod replacements;
mod runs;
mod tallies;

mod watermarks;
