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

use baton_sched::config::{Config, Job};
use baton_sched::engine::surfaces::RunStart;
use baton_sched::ops::backfill::{self, Planned, Unplanned};
use baton_sched::outcome::Outcome;
use baton_sched::times;
use baton_sched::views::history::{self, RunView};
use baton_store::words::RunVerdict;
use jiff::Timestamp;
use serde::Serialize;

use crate::cli::BackfillArgs;
use crate::exit::Exit;
use crate::sched_cmd::{decision_clock, json_out, known_job, load_reading, with_declared};

/// One occurrence of the range, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Occurrence {
    /// The instant, for the human form.
    #[serde(skip)]
    at: i64,
    /// RFC 3339 in UTC, as the ledger keys it.
    occurrence: String,
    /// RFC 3339 on the job's wall clock.
    local: String,
    /// For a dry run: `run`, what the ledger says (`started`, `claimed`,
    /// `queued`, `coalesced`), or `unknown`. For a run: `ran` (this
    /// backfill ran it), the ledger's word for one that had run already,
    /// `unknown` (not run: its records cannot rule out that it ran), or
    /// `not-run` (it would have run, but did not: the lock was refused or
    /// the backfill was stopped).
    action: String,
    /// The run that started it, when one did.
    run_id: Option<String>,
    /// Why it is not run, for `unknown`.
    why: Option<String>,
    /// For `ran`: the run's verdict (`ok`, `failed`, …), null while
    /// unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<String>,
    /// For `ran`: the run's exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
}

/// What `backfill --json` prints after a real run.
#[derive(Debug, Serialize)]
pub(crate) struct Summary {
    job: String,
    /// The zone `--from`, `--to` and `local` are in.
    zone: String,
    from: String,
    to: String,
    occurrences: Vec<Occurrence>,
    /// How many this backfill ran, and of those how many ended `ok`.
    pub(crate) ran: usize,
    pub(crate) ok: usize,
    /// How many had run already.
    already: usize,
    /// How many were not run (`unknown` or `not-run`).
    pub(crate) not_run: usize,
    pub(crate) exit: u8,
}

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

/// An occurrence's two RFC 3339 forms: UTC and the job's wall clock.
fn forms(at: i64, tz: &jiff::tz::TimeZone) -> (String, String) {
    match Timestamp::from_second(at) {
        Ok(t) => (times::utc(t), times::rfc3339(t, tz)),
        Err(_) => (at.to_string(), at.to_string()),
    }
}

pub(crate) fn human_at(at: i64, tz: &jiff::tz::TimeZone) -> String {
    Timestamp::from_second(at).map_or_else(|_| at.to_string(), |t| times::human(t, tz))
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

/// What became of each occurrence: run by this backfill (its run read
/// from the ledger), run before (as `before` planned it), or not run.
pub(crate) fn summary(
    c: &Config,
    job: &Job,
    (from, to): (Timestamp, Timestamp),
    occ: &[i64],
    before: &[Planned],
    ran: &[RunStart],
    now: Timestamp,
) -> Summary {
    let tz = &job.timezone.value.tz;
    let mut s = Summary {
        job: job.name.clone(),
        zone: job.timezone.value.name.clone(),
        from: times::rfc3339(from, tz),
        to: times::rfc3339(to.min(now), tz),
        occurrences: Vec::new(),
        ran: 0,
        ok: 0,
        already: 0,
        not_run: 0,
        exit: 0,
    };
    for (i, &at) in occ.iter().enumerate() {
        let (occurrence, local) = forms(at, tz);
        let started = ran
            .iter()
            .find(|r| r.job == job.name && r.occurrence == Some(at));
        let planned = before.get(i);
        let mut o = Occurrence {
            at,
            occurrence,
            local,
            action: "not-run".to_owned(),
            run_id: None,
            why: None,
            verdict: None,
            exit_code: None,
        };
        if let Some(r) = started {
            let view: Option<RunView> = history::find(c, &job.name, Some(&r.run_id), None, now)
                .ok()
                .flatten();
            o.action = "ran".to_owned();
            o.run_id = Some(r.run_id.clone());
            o.verdict = view.as_ref().and_then(|v| v.verdict.clone());
            o.exit_code = view.as_ref().and_then(|v| v.exit_code);
            s.ran += 1;
            s.ok += usize::from(o.verdict.as_deref() == Some(RunVerdict::Ok.as_str()));
        } else if let Some(p) = planned.filter(|p| p.action != "run") {
            o.action = p.action.clone();
            o.run_id = p.run_id.clone();
            o.why = p.why.clone();
            if p.action == "unknown" {
                s.not_run += 1;
            } else {
                s.already += 1;
            }
        } else {
            s.not_run += 1;
        }
        s.occurrences.push(o);
    }
    s
}

/// The summary for people, after the runs' own lines.
pub(crate) fn render_summary(s: &Summary, tz: &jiff::tz::TimeZone) -> String {
    let total = s.occurrences.len();
    let failed = s.ran - s.ok;
    let mut out = format!(
        "{}: backfill of {total} occurrence(s): {} ran ({} ok{}), {} had run already, {} not run\n",
        s.job,
        s.ran,
        s.ok,
        if failed > 0 {
            format!(", {failed} not ok")
        } else {
            String::new()
        },
        s.already,
        s.not_run
    );
    for o in s
        .occurrences
        .iter()
        .filter(|o| o.action == "ran" && o.verdict.as_deref() != Some(RunVerdict::Ok.as_str()))
    {
        out.push_str(&format!(
            "  {}  {} (run {})\n",
            human_at(o.at, tz),
            o.verdict.as_deref().unwrap_or("unknown"),
            o.run_id.as_deref().unwrap_or("?")
        ));
    }
    out
}
