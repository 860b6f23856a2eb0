//! `overlap = "replace"` on one host (lock files, the SQLite ledger): a
//! job due every second whose runs outlast a second, so that each
//! occurrence asks the run in flight to stop; then, at the moment of a
//! request, `kill -9` of the supervisor of the run being replaced (before,
//! while or after it stops its tree) or of the tick asking.
//!
//! What must hold, besides the invariants every trial is judged by: never
//! two runs' trees alive at once (the old run's job writes nothing once the
//! new run has started, and nothing of it outlives the trial), the run
//! stopped recorded `replaced` (or `abandoned`, its supervisor killed), and
//! no run left `running` once nothing of it is left; the schedule goes on.
//! The same faults at exact points of the request and of the stop are the
//! sweep's `failpoint-replace-*` ([`crate::scenario::sweep`]).

use std::time::Duration;

use crate::evidence;
use crate::job::JobDef;
use crate::procs;
use crate::scenario::Scenario;
use crate::scenario::common::{self, Local, race};
use crate::scenario::local::hostname;
use crate::trial::{Trial, pause_ms, secs};

/// The replace scenarios.
pub(crate) fn scenarios() -> Vec<Scenario> {
    vec![Scenario {
        name: "replace-killed-supervisor",
        what: "overlap = \"replace\", kill -9 at the moment of a request of the supervisor of the run being replaced, or of the tick asking: never two runs' trees at once, the old run not left running, the schedule goes on",
        needs: &[],
        cost: 2,
        run: killed_supervisor,
    }]
}

/// Whether the envelope logs of `l` say that run `run` was asked to stop.
fn asked(l: &Local, run: &str) -> bool {
    let needle = format!("asked run {run} to stop");
    std::fs::read_dir(l.state.join("logs"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("baton_"))
        .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|s| s.contains(&needle)))
}

fn killed_supervisor(t: &mut Trial<'_>) -> Result<(), String> {
    let mut job = JobDef::every_second("j", t.rng.range(30, 50) as u32);
    job.overlap = Some("replace");
    job.detach = t.rng.range(0, 1) == 0;
    let l = Local::new(t, None, "", vec![job]);
    common::sighted(t, &l.config)?;
    let c = t.baton(&l.config, &["tick"]);
    if t.spawn(c, "tick-holder").is_none() {
        return Err("the holder's tick did not start".into());
    }
    let events = t.events();
    if !t.until(secs(20), |_| evidence::mark(&events) >= 1) {
        return Err("the holder's run never started".into());
    }
    let Some(holder) = evidence::runs(&events).into_iter().next() else {
        return Err("the holder's run is not in the event log".into());
    };
    let baton = t.shared.baton.clone();
    let mut sup = None;
    t.until(secs(5), |t| {
        sup = procs::supervisor_of(&t.mark, &holder.run_id, &[&baton]);
        sup.is_some()
    });
    let Some(sup) = sup else {
        return Err(format!(
            "the supervisor of run {} was not found",
            holder.run_id
        ));
    };
    // The next occurrence is due at the next whole second: its tick asks.
    common::next_second();
    let c = t.baton(&l.config, &["tick"]);
    let Some(asker) = t.spawn(c, "tick-asker") else {
        return Err("the asking tick did not start".into());
    };
    if t.rng.range(0, 1) == 0 {
        // The holder's supervisor: at the request, as it notices it (within
        // a third of the TTL), or while it stops its tree.
        if !t.until(secs(10), |_| asked(&l, &holder.run_id)) {
            return Err(format!("run {} was never asked to stop", holder.run_id));
        }
        pause_ms(t.rng.range(0, 1200));
        procs::kill(sup as i32);
        t.facts.killed.insert((hostname(), sup));
    } else {
        // The tick asking, or its worker, around the moment it asks.
        pause_ms(t.rng.range(0, 300));
        let victim = procs::child_of(asker).unwrap_or(asker);
        procs::kill(victim as i32);
        t.facts.killed.insert((hostname(), victim));
    }
    t.injected += 1;
    let span = Duration::from_millis(t.rng.range(3000, 5000));
    race(t, &l.config, span);
    common::finish(t, &l);
    Ok(())
}
