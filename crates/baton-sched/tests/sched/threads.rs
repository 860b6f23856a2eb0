//! Seed 000's scenario inside one process: two threads tick the same due
//! occurrence at the same instant (the station's clock thread and its HTTP
//! tick). The occurrence runs once per trial.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;
use std::sync::{Arc, Barrier};

use baton_lease::{Clock, SystemClock};
use baton_sched::config::{self, Overrides};
use baton_sched::engine::run::{self, Request};
use baton_sched::engine::surfaces::Surfaces;
use baton_sched::outcome::Outcome;

fn config(dir: &Path, counter: &Path) -> config::Config {
    let text = format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n\
         [jobs.pay]\nschedule = \"* * * * *\"\nrun = \"echo paid >> {}; sleep 0.1\"\n",
        dir.join("state").to_str().unwrap(),
        counter.display()
    );
    config::parse(&text, &dir.join("baton.toml"), &Overrides::default()).unwrap()
}

#[test]
fn two_threads_ticking_one_occurrence_run_it_once() {
    for trial in 0..50 {
        let tmp = tempfile::tempdir().unwrap();
        let counter = tmp.path().join("counter");
        let cfg = config(tmp.path(), &counter);
        baton_sched::state::state_dir::locks_dir(&cfg.settings.state_dir.value).unwrap();
        let job = &cfg.jobs["pay"];
        let now = SystemClock.wall();
        let at = job
            .when
            .value
            .schedule
            .latest_at_or_before(now, &job.timezone.value.tz)
            .unwrap()
            .as_second();
        let barrier = Barrier::new(2);
        let outcomes: Vec<Outcome> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        let surfaces = Rc::new(RefCell::new(Surfaces::open(
                            &cfg,
                            Arc::new(SystemClock) as Arc<dyn Clock>,
                        )));
                        barrier.wait();
                        let req = Request {
                            config: &cfg,
                            job,
                            start: baton_sched::engine::run::Start::Scheduled(at),
                            tee: false,
                            teller: None,
                            stop_on_signal: false,
                            backfill: false,
                        };
                        let outcome = run::run(&req, &surfaces);
                        surfaces.borrow_mut().finish();
                        outcome
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(outcomes, [Outcome::Done; 2], "trial {trial}");
        let ran = std::fs::read_to_string(&counter)
            .unwrap_or_default()
            .lines()
            .count();
        assert_eq!(ran, 1, "trial {trial}: the occurrence ran {ran} times");
    }
}
