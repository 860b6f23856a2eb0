//! The campaign: every chosen scenario's trials, a few at once, each in a
//! directory of its own, with its record; then the report. A scenario whose
//! needs this machine cannot meet (root, namespaces, PostgreSQL, faketime,
//! the failpoint build) stops the campaign before anything runs, naming
//! what is missing: nothing is skipped silently.

use std::sync::Mutex;
use std::time::Instant;

use crate::exit::Exit;
use crate::plan::Plan;
use crate::results::{Campaign, TrialRecord};
use crate::scenario::{self, Need};
use crate::trial::{Shared, Trial};
use crate::{out, render};

/// Runs `plan`; the exit code.
pub(crate) fn run(plan: &Plan) -> Exit {
    let all = scenario::all();
    let chosen: Vec<&scenario::Scenario> = plan
        .scenarios
        .iter()
        .filter_map(|(n, _)| all.iter().find(|s| s.name == *n))
        .collect();
    if let Err(e) = scenario::can_run(&chosen, plan) {
        out::error(&e);
        return Exit::Usage;
    }
    let root = plan
        .dir
        .join(format!("baton-faults.{}.{}", std::process::id(), plan.seed));
    if let Err(e) = std::fs::create_dir_all(&root) {
        out::error(&format!("failed to create {}: {e}", root.display()));
        return Exit::Usage;
    }
    let exe =
        std::env::current_exe().map_or_else(|_| "baton-faults".into(), |p| p.display().to_string());
    let mut work: Vec<(&scenario::Scenario, u64)> = Vec::new();
    for (name, n) in &plan.scenarios {
        if let Some(s) = chosen.iter().find(|s| s.name == *name) {
            for k in 0..u64::from(*n) {
                work.push((s, plan.seed + k));
            }
        }
    }
    // Interleave scenarios, so a stop part-way still has a bit of each.
    work.sort_by_key(|(s, seed)| (*seed, s.name));
    if plan.progress {
        out::progress(&format!(
            "{} trial(s) of {} scenario(s), seed {}, {} at once; trials in {}",
            work.len(),
            chosen.len(),
            plan.seed,
            plan.parallel,
            root.display()
        ));
    }
    let shared = Shared::new(plan.baton.clone(), plan.failpoints.clone());
    let queue = Mutex::new(work.into_iter());
    let records = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..plan.parallel {
            scope.spawn(|| {
                loop {
                    let next = queue
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .next();
                    let Some((s, seed)) = next else { break };
                    let rec = one(&shared, s, seed, &root, plan, &exe);
                    if plan.progress {
                        let v = &rec.violations;
                        out::progress(&format!(
                            "{} seed {}: {} ({} fault(s), {:.1} s){}",
                            s.name,
                            seed,
                            if rec.failed() {
                                format!(
                                    "FAIL ({} violation(s)): {}",
                                    v.total(),
                                    v.details.join("; ")
                                )
                            } else if !rec.broken.is_empty() {
                                format!("instrument failed: {}", rec.broken.join("; "))
                            } else {
                                "ok".into()
                            },
                            rec.injected,
                            rec.secs,
                            if rec.failed() {
                                format!("\n  replay: {}", rec.replay)
                            } else {
                                String::new()
                            }
                        ));
                    }
                    records
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(rec);
                }
            });
        }
    });
    let mut trials = records
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    trials.sort_by_key(|t| (t.scenario, t.seed));
    let names: Vec<&'static str> = plan.scenarios.iter().map(|(n, _)| *n).collect();
    let c = Campaign::new(
        plan.seed,
        plan.baton.display().to_string(),
        plan.failpoints.as_ref().map(|p| p.display().to_string()),
        &names,
        trials,
        started.elapsed().as_secs_f64(),
    );
    out::report(&render::table::campaign(&c));
    if let Some(path) = &plan.json
        && let Err(e) = out::write_json(path, &render::json::campaign(&c))
    {
        out::error(&e);
    }
    if !plan.keep && c.total.failed == 0 && c.total.broken == 0 {
        // OK to ignore: trial directories live in a temporary directory.
        let _ = std::fs::remove_dir_all(&root);
    }
    if c.total.violations() > 0 {
        Exit::Violated
    } else if c.total.broken > 0 {
        Exit::InstrumentBroken
    } else {
        Exit::Clean
    }
}

fn one(
    shared: &Shared,
    s: &scenario::Scenario,
    seed: u64,
    root: &std::path::Path,
    plan: &Plan,
    exe: &str,
) -> TrialRecord {
    let started = Instant::now();
    let mut replay = format!(
        "{exe} --scenario {} --seed {seed} --trials 1 --baton {}",
        s.name,
        plan.baton.display()
    );
    if s.needs.contains(&Need::Failpoints)
        && let Some(f) = &plan.failpoints
    {
        replay.push_str(&format!(" --failpoints-baton {}", f.display()));
    }
    let (injected, violations, broken, dir) = match Trial::new(shared, s.name, seed, root) {
        Ok(mut t) => {
            if let Err(e) = (s.run)(&mut t) {
                t.broken.push(e);
            }
            t.close();
            (
                t.injected,
                std::mem::take(&mut t.v),
                std::mem::take(&mut t.broken),
                t.dir.clone(),
            )
        }
        Err(e) => (0, Default::default(), vec![e], root.to_owned()),
    };
    let failed = violations.total() > 0;
    let keep = plan.keep || failed || !broken.is_empty();
    if !keep {
        // OK to ignore: it is a temporary directory.
        let _ = std::fs::remove_dir_all(&dir);
    }
    TrialRecord {
        scenario: s.name,
        seed,
        injected,
        violations,
        broken,
        secs: started.elapsed().as_secs_f64(),
        replay,
        kept: keep.then(|| dir.display().to_string()),
    }
}
