//! baton-stress: contention harness (under construction).

fn main() {}
