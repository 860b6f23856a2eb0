//! Mistakes in `baton.toml` are named with the key that was meant.

use crate::sched::Sched;
use crate::support::{code, stderr};

#[test]
fn a_swapped_pair_of_letters_suggests_the_key_that_was_meant() {
    let s = Sched::new("[jobs.a]\nevery = \"1h\"\nrnu = \"true\"\n");
    let o = s.run(&["config"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("jobs.a.rnu") && stderr(&o).contains("did you mean run?"),
        "{}",
        stderr(&o)
    );
}
