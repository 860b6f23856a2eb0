//! `max_concurrent = N` on one host (lock files, the SQLite ledger): a job
//! of 2 or 3 slots, due every second, whose runs outlast a second, so that
//! every slot is held; then one slot's supervisor is killed with `kill -9`,
//! or stopped with SIGSTOP, while the other slots are held and honest
//! ticks race.
//!
//! Besides the invariants every trial is judged by (never N + 1 runs at
//! once, never two in one slot, each occurrence once, fences growing per
//! slot, true records), a killed holder's slot must be taken again (it is
//! dead: its lease is broken on evidence), and a stopped holder's must not
//! be while it is stopped (it is alive: *hung*, never broken on its own
//! host).
//!
//! Its ticks in the background, the filling of every slot and the check
//! that a slot was taken again also serve the same fault on several hosts
//! (`slots-pg-kill9-holder`, in [`crate::scenario::fleet`]).

use std::time::Duration;

use crate::evidence::{self, Seen};
use crate::job::JobDef;
use crate::procs;
use crate::scenario::Scenario;
use crate::scenario::common::{self, Local};
use crate::scenario::local::hostname;
use crate::trial::{Trial, pause_ms, secs};

/// The slot scenarios.
pub(crate) fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "slots-kill9-holder",
            what: "max_concurrent = 2 or 3, kill -9 of one slot's supervisor while the other slots are held: never N + 1 runs at once, each occurrence once, the dead slot taken again, the killed run abandoned",
            needs: &[],
            cost: 2,
            run: kill9_holder,
        },
        Scenario {
            name: "slots-sigstop-holder",
            what: "max_concurrent = 2 or 3, one slot's supervisor stopped (SIGSTOP) past its TTL while the other slots are held: its slot is never taken while it is stopped, never N + 1 runs at once, true records",
            needs: &[],
            cost: 2,
            run: sigstop_holder,
        },
        Scenario {
            name: "slots-lock-renamed",
            what: "max_concurrent = 2, a long run in the first slot and a short one in the second (which takes the job's guard last, and ends first), then the job's lock renamed and ticks race: the job never runs under the new lock beside the first run, which is never recorded abandoned",
            needs: &[],
            cost: 2,
            run: lock_renamed,
        },
    ]
}

fn lock_renamed(t: &mut Trial<'_>) -> Result<(), String> {
    let mut job = slotted(2, 60);
    job.lock = Some("first".into());
    let mut l = Local::new(t, None, "", vec![job.clone()]);
    common::sighted(t, &l.config)?;
    let c = t.baton(&l.config, &["run", "j"]);
    let Some(pid) = t.spawn(c, "run-long") else {
        return Err("the long run did not start".into());
    };
    let events = t.events();
    if !t.until(secs(20), |_| evidence::mark(&events) >= 2) {
        return Err("the long run never started".into());
    }
    // A short run beside it, in the second slot.
    job.beats = 2;
    l.rewrite(t, "", vec![job.clone()]);
    let c = t.baton(&l.config, &["run", "j"]);
    let _ = t.run(c, secs(30));
    // Runs under the new lock that outlast a second, so that two of them
    // beside the first run would be three at once.
    job.lock = Some("second".into());
    job.beats = 20;
    l.rewrite(t, "", vec![job]);
    t.injected += 1;
    let span = Duration::from_millis(t.rng.range(1500, 3000));
    common::race(t, &l.config, span);
    let _ = t.wait_for(pid, secs(30));
    common::finish(t, &l);
    Ok(())
}

/// A job of `n` slots, due every second, whose runs last `beats` tenths of
/// a second and more.
pub(crate) fn slotted(n: u32, beats: u32) -> JobDef {
    let mut j = JobDef::every_second("j", beats);
    j.slots = Some(n);
    j
}

/// Ticks in the background (a tick runs its job to the end), one every
/// 200–500 ms, each started by `tick` (given its number), while `until`
/// says no, at most `span`: they start runs side by side, each in a slot.
/// Whether `until` said yes.
pub(crate) fn swarm(
    t: &mut Trial<'_>,
    span: Duration,
    tick: &mut dyn FnMut(&mut Trial<'_>, u64),
    mut until: impl FnMut(&Trial<'_>) -> bool,
) -> bool {
    let deadline = std::time::Instant::now() + span;
    while std::time::Instant::now() < deadline {
        if until(t) {
            return true;
        }
        let n = t.rng.range(0, u64::MAX - 1);
        tick(t, n);
        pause_ms(t.rng.range(200, 500));
    }
    until(t)
}

/// A `tick` of `l` in the background, for [`swarm`].
fn local_tick(l: &Local) -> impl FnMut(&mut Trial<'_>, u64) + '_ {
    |t, n| {
        let c = t.baton(&l.config, &["tick"]);
        let _ = t.spawn(c, &format!("tick-{n}"));
    }
}

/// The runs of the trial that have started and not said they ended.
fn in_flight(t: &Trial<'_>) -> Vec<Seen> {
    evidence::runs(&t.events())
        .into_iter()
        .filter(|s| s.end.is_none())
        .collect()
}

/// Ticks (by `tick`) until `n` runs are in flight at once (every slot
/// held), at most 30 s: those runs, each with its supervisor (its pid as
/// seen from here).
pub(crate) fn fill(
    t: &mut Trial<'_>,
    n: u32,
    tick: &mut dyn FnMut(&mut Trial<'_>, u64),
) -> Result<Vec<(Seen, u32)>, String> {
    let baton = t.shared.baton.clone();
    let mut held = Vec::new();
    swarm(t, secs(30), tick, |t| {
        held = in_flight(t)
            .into_iter()
            .filter_map(|s| {
                let sup = procs::supervisor_of(&t.mark, &s.run_id, &[&baton])?;
                Some((s, sup))
            })
            .collect();
        held.len() >= n as usize
    });
    if held.len() >= n as usize {
        Ok(held)
    } else {
        Err(format!("{n} runs of j were never in flight at once"))
    }
}

/// Whether a run started in `slot` after line `mark` of the event log.
pub(crate) fn taken_after(t: &Trial<'_>, mark: usize, slot: u32) -> bool {
    evidence::runs(&t.events())
        .iter()
        .any(|s| s.first >= mark && s.slot == slot)
}

fn kill9_holder(t: &mut Trial<'_>) -> Result<(), String> {
    let n = t.rng.range(2, 3) as u32;
    let beats = t.rng.range(25, 40) as u32;
    let l = Local::new(t, None, "", vec![slotted(n, beats)]);
    common::sighted(t, &l.config)?;
    let held = fill(t, n, &mut local_tick(&l))?;
    let (victim, sup) = held[t.rng.range(0, held.len() as u64 - 1) as usize].clone();
    pause_ms(t.rng.range(0, 500));
    let mark = evidence::mark(&t.events());
    procs::kill(sup as i32);
    t.injected += 1;
    t.facts.killed.insert((hostname(), sup));
    // The dead slot is free on evidence: once every lower slot is held
    // again, the next run takes it.
    let span = Duration::from_millis(t.rng.range(3000, 5000));
    swarm(t, span, &mut local_tick(&l), |_| false);
    if !swarm(t, secs(15), &mut local_tick(&l), |t| {
        taken_after(t, mark, victim.slot)
    }) {
        t.v.wedge(format!(
            "slot {} of j was never taken again after its holder (pid {sup}, run {}) was killed",
            victim.slot, victim.run_id
        ));
    }
    common::finish(t, &l);
    Ok(())
}

fn sigstop_holder(t: &mut Trial<'_>) -> Result<(), String> {
    let n = t.rng.range(2, 3) as u32;
    // Runs of 8 s and more: the stopped one is still in flight when its
    // supervisor is let go again.
    let l = Local::new(t, None, "", vec![slotted(n, 80)]);
    common::sighted(t, &l.config)?;
    let held = fill(t, n, &mut local_tick(&l))?;
    // The youngest run: the most of it is left.
    let Some((victim, sup)) = held.iter().max_by_key(|(s, _)| s.first).cloned() else {
        return Err("no run of j was in flight".into());
    };
    let stop = t.rng.range(2500, 4000);
    let from = evidence::mark(&t.events());
    procs::signal(sup as i32, rustix::process::Signal::STOP);
    t.injected += 1;
    // Stopped longer than its TTL (2 s, `LOCAL_POLICY`): it renews nothing.
    t.facts.stopped.insert((hostname(), sup));
    swarm(t, Duration::from_millis(stop), &mut local_tick(&l), |_| {
        false
    });
    let to = evidence::mark(&t.events());
    procs::signal(sup as i32, rustix::process::Signal::CONT);
    for s in evidence::runs(&t.events()) {
        if s.slot == victim.slot && s.first >= from && s.first < to {
            t.v.overlap(format!(
                "slot {} of j was taken by run {} while its holder (pid {sup}, run {}) was \
                 stopped and alive",
                s.slot, s.run_id, victim.run_id
            ));
        }
    }
    let after = Duration::from_millis(t.rng.range(1500, 3000));
    swarm(t, after, &mut local_tick(&l), |_| false);
    common::finish(t, &l);
    Ok(())
}
