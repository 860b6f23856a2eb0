//! What `baton backfill` reports of a range: each occurrence in its two
//! RFC 3339 forms (UTC, as the ledger keys it, and the job's wall clock),
//! as `--dry-run --json` lists them, and after real runs the summary of
//! what became of each ([`summary`]), printed as JSON or for people
//! ([`render_summary`]). A file's job and a service's are reported alike.
//!
//! It only reads (the runs' records, from the ledger) and formats: it never
//! plans, queues or runs an occurrence, and prints nothing itself.

use baton_sched::config::{Config, Job};
use baton_sched::engine::surfaces::RunStart;
use baton_sched::ops::backfill::Planned;
use baton_sched::times;
use baton_sched::views::history::{self, Recorded, RunView};
use baton_store::words::{Decision, RunVerdict};
use jiff::Timestamp;
use serde::Serialize;

/// One occurrence of the range, as `--json` prints it.
#[derive(Debug, Serialize)]
pub(crate) struct Occurrence {
    /// The instant, for the human form.
    #[serde(skip)]
    pub(crate) at: i64,
    /// RFC 3339 in UTC, as the ledger keys it.
    pub(crate) occurrence: String,
    /// RFC 3339 on the job's wall clock.
    pub(crate) local: String,
    /// For a dry run: `run`, what the ledger says (`started`, `claimed`,
    /// `queued`, `coalesced`), or `unknown`. For a run: `ran` (this
    /// backfill ran it), the ledger's word for one that had run already,
    /// `unknown` (not run: its records cannot rule out that it ran), or
    /// `not-run` (it would have run, but did not: the lock was refused or
    /// the backfill was stopped). One another process ran meanwhile (a
    /// backfill beside this one) has the ledger's word, as one run before.
    pub(crate) action: String,
    /// The run that started it, when one did.
    pub(crate) run_id: Option<String>,
    /// Why it is not run, for `unknown` and `not-run`.
    pub(crate) why: Option<String>,
    /// For `ran`: the run's verdict (`ok`, `failed`, …), null while
    /// unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) verdict: Option<String>,
    /// For `ran`: the run's exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) exit_code: Option<i32>,
}

/// Why an occurrence this backfill planned to run was not run, when the
/// ledger records no run of it by anyone.
const NOT_RUN: &str = "not started: its lock was refused, or the backfill stopped before it";

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

/// An occurrence's two RFC 3339 forms: UTC and the job's wall clock.
pub(crate) fn forms(at: i64, tz: &jiff::tz::TimeZone) -> (String, String) {
    match Timestamp::from_second(at) {
        Ok(t) => (times::utc(t), times::rfc3339(t, tz)),
        Err(_) => (at.to_string(), at.to_string()),
    }
}

pub(crate) fn human_at(at: i64, tz: &jiff::tz::TimeZone) -> String {
    Timestamp::from_second(at).map_or_else(|_| at.to_string(), |t| times::human(t, tz))
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
            // Not run by this backfill though planned: another may have
            // run it meanwhile (a backfill beside this one, in another
            // slot), which the ledger now says.
            match history::occurrence(c, &job.name, at, now) {
                Ok(Recorded::Run(v)) => {
                    o.action = Decision::Started.as_str().to_owned();
                    o.run_id = Some(v.run_id);
                    s.already += 1;
                }
                Ok(Recorded::Decided(d)) => {
                    o.action = d.as_str().to_owned();
                    s.already += 1;
                }
                _ => {
                    o.why = Some(NOT_RUN.to_owned());
                    s.not_run += 1;
                }
            }
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
