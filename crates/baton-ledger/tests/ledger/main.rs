#![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.

//! The ledger's tests, against real files, real threads and real processes.
//!
//! Tests that need several processes start this same binary again with
//! [`support::CHILD_ROLE`] set, running only the `child` test below, which
//! does nothing in a normal run.

mod api;
mod corrupt;
mod migrate;
mod missed;
mod moved;
mod processes;
mod prune;
mod support;
mod upgrade;

#[test]
fn child() {
    let Ok(role) = std::env::var(support::CHILD_ROLE) else {
        return; // A normal run: not a child.
    };
    match role.as_str() {
        "writer" => processes::writer_child(),
        "opener" => corrupt::opener_child(),
        "misser" => missed::misser_child(),
        other => panic!("unknown child role {other:?}"),
    }
}
