//! `baton backfill`: a thin adapter from parsed arguments to
//! `baton_sched::ops::backfill`, and from its answers to output and an exit code.
//!
//! `--from` and `--to` are read in the job's zone, and every time this
//! command prints for people is on that zone's wall clock
//! ([`baton_sched::times::human`]); `--json` writes RFC 3339 (`occurrence`
//! in UTC, as the ledger keys it, and `local` in the job's zone). A real
//! run says each occurrence as it starts, before its first step, then a
//! summary of what ran; with `--json` it prints one summary object instead,
//! and the steps' output stays in the job's log. Nothing else prints here.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use baton_sched::config::Job;
use baton_sched::engine::surfaces::RunStart;
use baton_sched::ops::backfill::{self, Planned, Unplanned};
use baton_sched::outcome::Outcome;
use baton_sched::times;
use jiff::Timestamp;

use crate::backfill_report::{Occurrence, forms, human_at, render_summary, summary};
use crate::cli::BackfillArgs;
use crate::exit::Exit;
use crate::sched_cmd::{decision_clock, json_out, known_job, load_reading, with_declared};

/// `baton backfill`.
pub fn run(state: Option<&Path>, a: &BackfillArgs) -> Exit {
    // A job a service declared is backfilled by that service, asked
    // through the ledger (`backfill_service`).
    let c = match load_reading(state, &a.file).and_then(|c| with_declared(c, Some(&a.job))) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let job = match known_job(&c, "backfill", &a.job) {
        Ok(j) => j,
        Err(e) => return e,
    };
    let tz = &job.timezone.value.tz;
    let parse = |what: &str, t: &str| {
        baton_sched::units::parse_instant(t, tz).map_err(|e| {
            say!("baton backfill: {what}: {e}");
            Exit::Usage
        })
    };
    let (from, to) = match (parse("--from", &a.from), parse("--to", &a.to)) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let clock = match decision_clock(&c, "backfill") {
        Ok(clock) => clock,
        Err(e) => return e,
    };
    let now = clock.wall();
    if from > now {
        say!(
            "baton backfill: --from {} is in the future: only past occurrences can be backfilled",
            times::human(from, tz)
        );
        return Exit::Usage;
    }
    let occ = match backfill::occurrences(job, from, to, now) {
        Ok(o) => o,
        Err(e) => {
            say!("baton backfill: {e}");
            return Exit::Usage;
        }
    };
    if to > now {
        say!("baton backfill: occurrences after now are left to the schedule");
    }
    let plan = backfill::dry_run(&c, job, &occ, now, a.force);
    if let Err(Unplanned::Newer(e)) = &plan {
        say!("baton backfill: {}: {e}", a.job);
        return Exit::of_outcome(baton_sched::engine::run::ledger_failed(&c, e));
    }
    if a.dry_run {
        return match plan {
            Ok(p) => dry_run(job, &occ, &p, a.json),
            Err(e) => {
                say!("baton backfill: {}: {e}", a.job);
                Exit::of_outcome(Outcome::Unable)
            }
        };
    }
    if occ.is_empty() && !a.json {
        outln!("{}: no occurrence in that range", a.job);
        return Exit::Ok;
    }
    // What had run before: the summary's word for what this one did not
    // run. Without it (the store cannot be read), the backfill refuses as
    // it would have.
    if crate::backfill_service::service(job).is_some() {
        // The plan is all a service's backfill goes by: without it, nothing
        // is queued.
        let plan = match plan {
            Ok(p) => p,
            Err(e) => {
                say!("baton backfill: {}: {e}; nothing was queued", a.job);
                return Exit::of_outcome(Outcome::Unable);
            }
        };
        let range = (from, to);
        return crate::backfill_service::queue_and_wait(
            &c, job, range, &occ, plan, &*clock, a.json,
        );
    }
    let before = plan.unwrap_or_default();
    let starts: Rc<RefCell<Vec<RunStart>>> = Rc::default();
    let on_start = {
        let starts = Rc::clone(&starts);
        let (tz, json) = (tz.clone(), a.json);
        Box::new(move |s: &RunStart| {
            if !json {
                outln!("{}", starting(s, &tz));
            }
            starts.borrow_mut().push(s.clone());
        })
    };
    let opts = backfill::Options {
        force: a.force,
        tee: !a.json,
        on_start: Some(on_start),
    };
    let exit = Exit::of_outcome(backfill::run_observed(&c, job, &occ, clock.clone(), opts));
    let ran = starts.borrow().clone();
    let mut s = summary(&c, job, (from, to), &occ, &before, &ran, clock.wall());
    s.exit = exit.code();
    if a.json {
        return match json_out("backfill", &s) {
            Exit::Ok => exit,
            other => other,
        };
    }
    out!("{}", render_summary(&s, tz));
    exit
}

/// The line that says a run started: `b: occurrence 2026-12-01 19:00:00
/// +01:00 started (run 3ae841952bd549ee)`.
fn starting(s: &RunStart, tz: &jiff::tz::TimeZone) -> String {
    let at = s
        .occurrence
        .and_then(|at| Timestamp::from_second(at).ok())
        .map_or_else(|| "manual".to_owned(), |t| times::human(t, tz));
    format!("{}: occurrence {at} started (run {})", s.job, s.run_id)
}

/// `--dry-run`: the plan, as JSON or one line per occurrence.
fn dry_run(job: &Job, occ: &[i64], plan: &[Planned], json: bool) -> Exit {
    let tz = &job.timezone.value.tz;
    if json {
        let list: Vec<Occurrence> = occ
            .iter()
            .zip(plan)
            .map(|(&at, p)| {
                let (occurrence, local) = forms(at, tz);
                Occurrence {
                    at,
                    occurrence,
                    local,
                    action: p.action.clone(),
                    run_id: p.run_id.clone(),
                    why: p.why.clone(),
                    verdict: None,
                    exit_code: None,
                }
            })
            .collect();
        return json_out("backfill", &list);
    }
    if plan.is_empty() {
        outln!("{}: no occurrence in that range", job.name);
        return Exit::Ok;
    }
    for (&at, p) in occ.iter().zip(plan) {
        let when = human_at(at, tz);
        match p.action.as_str() {
            "run" => outln!("{when}  would run"),
            "unknown" => outln!(
                "{when}  not run: {} (--force runs it)",
                p.why
                    .as_deref()
                    .unwrap_or("its records cannot rule out that it ran")
            ),
            other => outln!(
                "{when}  {other} already{}: not run again",
                p.run_id
                    .as_ref()
                    .map(|r| format!(" (run {r})"))
                    .unwrap_or_default()
            ),
        }
    }
    Exit::Ok
}
