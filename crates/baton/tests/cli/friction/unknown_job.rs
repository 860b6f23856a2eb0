//! A job name that is not in the configuration is refused with the names
//! that are.

use crate::sched::Sched;
use crate::support::{code, stderr};

#[test]
fn an_unknown_job_is_refused_with_the_known_ones() {
    let s = Sched::new(
        "[jobs.backup]\nschedule = \"30 2 * * *\"\nrun = \"true\"\n\
         [jobs.report]\nevery = \"1h\"\nrun = \"true\"\n",
    );
    for args in [
        &["calendar", "--job", "nope"][..],
        &["run", "nope"],
        &["tick", "nope"],
        &["history", "nope"],
        &["status", "nope"],
        &["pause", "nope"],
        &["resume", "nope"],
    ] {
        let o = s.run(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("no job named \"nope\"")
                && stderr(&o).contains("its jobs: backup, report"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}
