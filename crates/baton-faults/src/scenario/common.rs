//! What scenarios on one host share: a configuration with its state
//! directory, the honest ticks that race the faulty one, and the end of a
//! trial (every process gone, the probe, the records judged).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::job::JobDef;
use crate::trial::{LOCAL_POLICY, Ran, Trial, pause_ms, secs};

/// libfaketime, as Debian installs it.
pub(crate) const FAKETIME_LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// One host's configuration on lock files.
#[derive(Debug, Clone)]
pub(crate) struct Local {
    pub(crate) state: PathBuf,
    pub(crate) config: PathBuf,
    pub(crate) jobs: Vec<JobDef>,
}

impl Local {
    /// `baton.toml` with `jobs`, its state directory `state` (default: the
    /// trial's `state/`), the local policy and `sched`.
    pub(crate) fn new(
        t: &Trial<'_>,
        state: Option<PathBuf>,
        sched: &str,
        jobs: Vec<JobDef>,
    ) -> Self {
        let state = state.unwrap_or_else(|| t.path("state"));
        let config = t.config(
            "baton",
            &state,
            None,
            &format!("{LOCAL_POLICY}{sched}"),
            &jobs,
            "",
        );
        Self {
            state,
            config,
            jobs,
        }
    }

    /// `NAME.toml` with `jobs` and the state directory `state`.
    pub(crate) fn new_named(t: &Trial<'_>, name: &str, state: PathBuf, jobs: Vec<JobDef>) -> Self {
        let config = t.config(name, &state, None, LOCAL_POLICY, &jobs, "");
        Self {
            state,
            config,
            jobs,
        }
    }

    /// Writes the configuration again with `jobs` (an edit).
    pub(crate) fn rewrite(&mut self, t: &Trial<'_>, sched: &str, jobs: Vec<JobDef>) {
        self.config = t.config(
            "baton",
            &self.state,
            None,
            &format!("{LOCAL_POLICY}{sched}"),
            &jobs,
            "",
        );
        self.jobs = jobs;
    }

    /// The alerts log.
    pub(crate) fn alerts(&self) -> PathBuf {
        self.state.join("logs").join("alerts.log")
    }
}

/// An honest `baton tick` (the binary under test), at most 30 s.
pub(crate) fn tick(t: &mut Trial<'_>, config: &Path) -> Ran {
    let cmd = t.baton(config, &["tick"]);
    t.run(cmd, secs(30))
}

/// The jobs of `config` seen before a trial begins: an honest tick records
/// them (on a fresh ledger it runs nothing, since no occurrence before a
/// job's first sighting runs), then the next whole second is waited for,
/// so that a job due every second has an occurrence of its own to run at
/// the trial's first tick.
pub(crate) fn sighted(t: &mut Trial<'_>, config: &Path) -> Result<(), String> {
    let r = tick(t, config);
    if r.code != Some(0) {
        return Err(format!("the tick that sees the jobs failed: {}", r.said()));
    }
    next_second();
    Ok(())
}

/// Waits for the next whole second (and 20 ms): an occurrence of a job due
/// every second is due then that was not before.
pub(crate) fn next_second() {
    let into = jiff::Timestamp::now().subsec_nanosecond() / 1_000_000;
    pause_ms(u64::try_from(1_020 - into).unwrap_or(1_020));
}

/// Honest ticks every 200–500 ms for `span`, racing whatever else runs.
pub(crate) fn race(t: &mut Trial<'_>, config: &Path, span: Duration) {
    let until = Instant::now() + span;
    while Instant::now() < until {
        let _ = tick(t, config);
        let gap = t.rng.range(200, 500);
        pause_ms(gap);
    }
}

/// The end of a one-host trial: every process of the trial gone, then a
/// later occurrence of each job must run (the probe, by honest ticks), then
/// every job's history judged against the evidence.
pub(crate) fn finish(t: &mut Trial<'_>, l: &Local) {
    t.quiesce(secs(20), &[]);
    let names: Vec<String> = l.jobs.iter().map(|j| j.name.clone()).collect();
    if let Some(first) = names.first() {
        let config = l.config.clone();
        t.probe(first, secs(20), |t| {
            let _ = tick(t, &config);
        });
    }
    t.quiesce(secs(20), &[]);
    judge_local(t, l);
}

/// Judges every job's history (read through the binary under test).
pub(crate) fn judge_local(t: &mut Trial<'_>, l: &Local) {
    judge_all(t, &[l]);
}

/// Judges the histories of every job of several configurations at once.
pub(crate) fn judge_all(t: &mut Trial<'_>, ls: &[&Local]) {
    let mut recorded = Vec::new();
    for l in ls {
        for j in &l.jobs {
            t.facts.know(j);
            let cmd = t.baton(
                &l.config,
                &["history", &j.name, "--json", "--limit", "10000"],
            );
            recorded.extend(t.history(cmd));
        }
    }
    let alerts: Vec<PathBuf> = ls.iter().map(|l| l.alerts()).collect();
    t.judge(&recorded, &alerts);
}

/// `cmd` under libfaketime with `FAKETIME=offset` (`+1h`, `-1h`, `+1d`).
pub(crate) fn faked(mut cmd: Command, offset: &str) -> Command {
    cmd.env("LD_PRELOAD", FAKETIME_LIB)
        .env("FAKETIME", offset)
        .env("FAKETIME_DONT_RESET", "1");
    cmd
}
