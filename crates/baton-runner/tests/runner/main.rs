#![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.
//! baton-runner's integration tests: sessions over real lock files and over
//! a store the test scripts, running real steps (shells, their background
//! and detached processes), stopped with real signals. Each test runs in a
//! process of its own ([`harness`]); each module tests one of the runner's
//! guarantees, named in its opening paragraph.
//!
//! Steps run contained (in a PID namespace of their own) and uncontained,
//! where the runner's being their subreaper is what finds the processes
//! they detach. As root the kernel grants the namespace; as another user it
//! grants it through a user namespace where those are allowed, and the
//! contained tests run uncontained where neither is (the session says so,
//! and their assertions hold either way); only
//! `contain::a_runner_killed_with_sigkill_takes_its_contained_step_along`
//! needs the namespace, and it says so and checks nothing without it.

#[macro_use]
mod harness;
mod support;

mod console;
mod contain;
mod descriptors;
mod endings;
mod fencing;
mod gate;
mod hooks;
mod lease;
mod limits;
mod renewal;
mod replace;
mod signals;
mod tree;

fn main() {
    let tests = [
        console::TESTS,
        contain::TESTS,
        descriptors::TESTS,
        endings::TESTS,
        fencing::TESTS,
        gate::TESTS,
        hooks::TESTS,
        lease::TESTS,
        limits::TESTS,
        renewal::TESTS,
        replace::TESTS,
        signals::TESTS,
        tree::TESTS,
    ]
    .concat();
    let roles = [
        console::ROLES,
        contain::ROLES,
        descriptors::ROLES,
        gate::ROLES,
    ]
    .concat();
    harness::main(&tests, &roles);
}
