//! `baton __run`: one run started by the daemon. The daemon writes the
//! configuration it has in force to stdin (a [`Snapshot`] as JSON) and reads
//! the first line of stdout: what the lock decided ([`Told`], as JSON).
//! Everything else goes where a tick's run sends it (the ledger, the dated
//! logs, alerts, stderr). The run is the same code `baton tick` forks, so a
//! daemon's run is supervised, fenced and recorded exactly as a tick's.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use baton_lease::{Clock, SystemClock};
use baton_sched::config::{Overrides, Snapshot};
use baton_sched::engine::run::{self, Start, Teller, Told};

use crate::cli::WorkerArgs;
use crate::exit::Exit;

fn told(t: &Told) {
    match serde_json::to_string(t) {
        Ok(line) => outln!("{line}"),
        Err(e) => say!("baton __run: failed to encode the outcome: {e}"),
    }
}

fn refuse(message: String) -> Exit {
    say!("baton __run: {message}");
    told(&Told::Error { message });
    Exit::Usage
}

/// Runs the job the arguments name; the run's exit code.
pub fn run(state: Option<&Path>, a: &WorkerArgs) -> Exit {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        return refuse(format!("failed to read the configuration from stdin: {e}"));
    }
    let snapshot: Snapshot = match serde_json::from_str(&input) {
        Ok(s) => s,
        Err(e) => return refuse(format!("failed to decode the configuration: {e}")),
    };
    let over = Overrides::from_env(state.map(Path::to_owned));
    let config = match snapshot.load(&over) {
        Ok(c) => c,
        Err(e) => return refuse(e.to_string()),
    };
    let Some(job) = config.jobs.get(&a.job) else {
        return refuse(format!(
            "no job named {:?} in {}",
            a.job,
            config.path.display()
        ));
    };
    if let Err(e) = baton_sched::ops::tick::preflight(&config, SystemClock.wall()) {
        return refuse(e.to_string());
    }
    let start = match (a.at, a.queue, a.manual) {
        (Some(at), _, _) => Start::Scheduled(at),
        (None, true, _) => Start::Queue,
        (None, false, true) => Start::Manual,
        (None, false, false) => return refuse("one of --at, --queue, --manual is needed".into()),
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let teller = Teller::new(&told);
    let surfaces = std::rc::Rc::new(std::cell::RefCell::new(
        baton_sched::engine::surfaces::Surfaces::open(&config, Arc::clone(&clock)),
    ));
    let outcome = run::run(
        &run::Request {
            config: &config,
            job,
            start,
            tee: false,
            teller: Some(&teller),
            stop_on_signal: true,
            backfill: false,
        },
        &surfaces,
    );
    surfaces.borrow_mut().finish();
    baton_sched::ops::tick::checkpoint(&config, &clock);
    Exit::of_outcome(outcome)
}
