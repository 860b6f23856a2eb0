//! The jobs services declare: a declaration makes its job known, the next
//! declaration of a job replaces it whole, and the read with the store's
//! clock returns what the read alone does.

use baton_store::ledger::Declaration;

use crate::support::{Log, Store, at};

both! {
    a_declaration_makes_its_job_known_and_the_next_one_replaces_it
}

fn declaration(job: &str, schedule: &str, by: &str, secs: i64) -> Declaration {
    Declaration {
        job: job.into(),
        config: format!("schedule = \"{schedule}\"\ntimezone = \"Europe/Berlin\"\n"),
        by: by.into(),
        declared: at(secs),
    }
}

fn a_declaration_makes_its_job_known_and_the_next_one_replaces_it(l: &mut Store, log: &mut Log) {
    assert!(l.declarations().unwrap().is_empty());
    let b = declaration("b", "0 3 * * *", "billing on host-a (pid 1)", 0);
    let a = declaration("a", "*/5 * * * *", "billing on host-a (pid 1)", 0);
    l.declare(&[b.clone(), a.clone()]).unwrap();
    assert_eq!(l.declarations().unwrap(), [a.clone(), b.clone()], "by name");
    let jobs = l.jobs().unwrap();
    let known: Vec<(&str, _)> = jobs
        .iter()
        .map(|j| (j.job.as_str(), j.first_seen))
        .collect();
    assert_eq!(known, [("a", at(0)), ("b", at(0))]);

    // Declared again by another replica, with another schedule: replaced
    // whole; the job's first sighting stays.
    let again = declaration("a", "0 4 * * *", "billing on host-b (pid 2)", 60);
    l.declare(std::slice::from_ref(&again)).unwrap();
    let read = l.declarations().unwrap();
    assert_eq!(read, [again, b]);
    assert_eq!(l.job("a").unwrap().unwrap().first_seen, at(0));

    let (clock, with_clock) = l.clock_and_declarations().unwrap();
    assert_eq!(with_clock, read);
    assert_eq!(clock.is_some(), l.url().is_some());
    log.note("declarations", &read);
}
