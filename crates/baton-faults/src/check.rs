//! The invariants, judged from evidence baton did not write (the jobs' event
//! log and the sinks) against what it recorded (history, missed alerts):
//!
//! - **overlaps**: two runs of one job, or of one lock, at once: a run
//!   wrote a line after another run of its job or lock had started, or a
//!   job's process outlived the trial (it ran beside whatever came next).
//!   A job with `max_concurrent = N` may have N runs at once, each in a
//!   slot of its own: a run that starts while N of its job write on, or
//!   while another run of its slot does, is the overlap;
//! - **duplicates**: an occurrence started by more than one run;
//! - **lost**: a run that happened (its job wrote `start`) that no history
//!   shows;
//! - **wrong**: a record that is not the truth: a verdict the job did not
//!   earn (`ok` for a run that never ended, anything but `ok` for one that
//!   ended 0 whose supervisor was not killed, `abandoned` included, and
//!   `abandoned` for a run whose supervisor was only signalled;
//!   `replaced` for a run of a job whose `overlap` is not `replace`, or for
//!   one that exited on its own with the code it said), `ok`
//!   for a run that never started, a run still shown running once nothing
//!   of it is left, or an occurrence that ran and was counted missed (by a
//!   `missed` alert, or, on a shared store, by a range in the ledger);
//! - **fence**: a sink refused a write, or a lease's fence was not larger
//!   than every earlier lease's on that lock (each slot of a lock is a
//!   lease of its own, with a sink of its own);
//! - **wedged**: a schedule that ran nothing more once the fault was over
//!   (judged by the scenario's probe, see [`crate::trial`]);
//! - **breaches**: a change that must be refused was made (judged by the
//!   scenario).

use std::collections::{BTreeMap, BTreeSet};

use crate::evidence::{Missed, Recorded, Seen, Write};
use crate::job::JobDef;

/// What a trial found, by invariant, with a line per finding.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub(crate) struct Violations {
    pub(crate) overlaps: u64,
    pub(crate) duplicates: u64,
    pub(crate) lost: u64,
    pub(crate) wrong: u64,
    pub(crate) fence: u64,
    pub(crate) wedged: u64,
    pub(crate) breaches: u64,
    /// What each one was.
    pub(crate) details: Vec<String>,
}

impl Violations {
    /// Violations in all.
    pub(crate) fn total(&self) -> u64 {
        self.overlaps
            + self.duplicates
            + self.lost
            + self.wrong
            + self.fence
            + self.wedged
            + self.breaches
    }

    fn note(&mut self, line: String) {
        if self.details.len() < 20 {
            self.details.push(line);
        }
    }

    /// Counts an overlap.
    pub(crate) fn overlap(&mut self, why: String) {
        self.overlaps += 1;
        self.note(format!("overlap: {why}"));
    }

    /// Counts a wedged schedule.
    pub(crate) fn wedge(&mut self, why: String) {
        self.wedged += 1;
        self.note(format!("wedged: {why}"));
    }

    /// Counts a breach.
    pub(crate) fn breach(&mut self, why: String) {
        self.breaches += 1;
        self.note(format!("breach: {why}"));
    }

    /// Counts a wrong record.
    pub(crate) fn wrong_record(&mut self, why: String) {
        self.wrong += 1;
        self.note(format!("wrong record: {why}"));
    }

    /// Counts a duplicate occurrence.
    pub(crate) fn duplicate(&mut self, why: String) {
        self.duplicates += 1;
        self.note(format!("duplicate: {why}"));
    }

    /// Counts a lost record.
    pub(crate) fn lost_record(&mut self, why: String) {
        self.lost += 1;
        self.note(format!("lost record: {why}"));
    }

    /// Counts a fence violation.
    pub(crate) fn fence_violation(&mut self, why: String) {
        self.fence += 1;
        self.note(format!("fence: {why}"));
    }
}

/// What the checker is told besides the evidence.
#[derive(Debug, Clone, Default)]
pub(crate) struct Facts {
    /// Supervisors the trial killed, as `(host, pid)` in the pid namespace
    /// history names them in: their runs may rightly be `abandoned`.
    pub(crate) killed: BTreeSet<(String, u32)>,
    /// Supervisors the trial stopped (SIGSTOP) for longer than their TTL,
    /// as `(host, pid)`: they renewed nothing meanwhile, so their runs may
    /// rightly be `lease-lost` (never `abandoned` while nothing could take
    /// their lease: they were alive).
    pub(crate) stopped: BTreeSet<(String, u32)>,
    /// Of [`Facts::stopped`], those stopped past TTL and takeover grace on
    /// a shared store: the host that takes the lease over cannot tell them
    /// from dead ones, so their runs may rightly be `abandoned` too, even
    /// one whose job ended meanwhile (its end comes after the verdict, and a
    /// verdict is never amended).
    pub(crate) stopped_past_grace: BTreeSet<(String, u32)>,
    /// Supervisors the trial sent SIGTERM, SIGINT or SIGHUP, as `(host,
    /// pid)`: alive, they record their own runs (`interrupted`, or the
    /// verdict the job earned), never leave them to be found `abandoned`.
    pub(crate) signalled: BTreeSet<(String, u32)>,
    /// Whether a run that ended 0 may be recorded `abandoned` or
    /// `lease-lost` because the store was out of reach for longer than its
    /// TTL (no one could record it in time).
    pub(crate) outage_over_ttl: bool,
    /// Whether runs without any record are expected (the scenario kept the
    /// ledger unwritable and says so elsewhere); never set lightly.
    pub(crate) unrecordable: bool,
    /// The event log's length when the trial removed the ledger: a run
    /// whose evidence all came before may have been recorded in the lost
    /// file only; one still going then must be in the fresh one.
    pub(crate) ledger_lost_at: Option<usize>,
    /// Occurrences (RFC 3339, both ends in) whose records the fault itself
    /// destroyed: they ran after a backup the store was then restored from.
    /// Nothing is left that says they ran, so the outage's missed range may
    /// take them in, and one still due when the store comes back may run
    /// again; two runs at once are still an overlap.
    pub(crate) erased: Option<(String, String)>,
    /// The `max_concurrent` of each job that has one above 1: that many of
    /// its runs may be in flight at once.
    pub(crate) slots: BTreeMap<String, u32>,
    /// The jobs whose `overlap` is `replace`: a run of theirs may rightly
    /// be recorded `replaced`.
    pub(crate) replacing: BTreeSet<String>,
}

impl Facts {
    /// Whether occurrence `o` lies in the span whose records the fault
    /// destroyed.
    fn erased(&self, o: &str) -> bool {
        self.erased
            .as_ref()
            .is_some_and(|(from, to)| from.as_str() <= o && o <= to.as_str())
    }

    /// Takes in what `job`'s configuration allows: its slots, and whether
    /// its runs may be replaced.
    pub(crate) fn know(&mut self, job: &JobDef) {
        if let Some(n) = job.slots.filter(|&n| n > 1) {
            self.slots.insert(job.name.clone(), n);
        }
        if job.overlap == Some("replace") {
            self.replacing.insert(job.name.clone());
        }
    }

    /// How many runs of `job` may be in flight at once.
    fn slots_of(&self, job: &str) -> u32 {
        self.slots.get(job).copied().unwrap_or(1).max(1)
    }
}

/// Judges `seen` (the event log), `sinks` (one log per lock), `recorded`
/// (history, every job's) and `missed` (alerts) under `facts`.
pub(crate) fn judge(
    seen: &[Seen],
    sinks: &BTreeMap<String, Vec<Write>>,
    recorded: &[Recorded],
    missed: &[Missed],
    facts: &Facts,
    v: &mut Violations,
) {
    overlaps(seen, facts, v);
    duplicates(seen, facts, v);
    records(seen, recorded, facts, v);
    missed_but_ran(seen, missed, facts, v);
    for (lock, writes) in sinks {
        fences(lock, writes, v);
    }
}

fn overlaps(seen: &[Seen], facts: &Facts, v: &mut Violations) {
    for (i, b) in seen.iter().enumerate() {
        // `seen` is in order of first lines: each of `seen[..i]` started
        // before b, and is still in flight when it writes after b started.
        let alive: Vec<&Seen> = seen[..i].iter().filter(|a| a.last > b.first).collect();
        let n = facts.slots_of(&b.job);
        for a in &alive {
            let what = if a.job != b.job {
                if a.lock != b.lock {
                    continue;
                }
                format!("lock {} ({} and {})", a.lock, a.job, b.job)
            } else if n == 1 {
                format!("job {}", a.job)
            } else if a.lock == b.lock && a.slot == b.slot {
                format!("job {}, slot {} of lock {}", a.job, a.slot, a.lock)
            } else {
                continue;
            };
            v.overlap(format!(
                "{what}: run {} (fence {}, {}) wrote on after run {} (fence {}, {}) started",
                a.run_id, a.fence, a.host, b.run_id, b.fence, b.host
            ));
        }
        let mine: Vec<&&Seen> = alive.iter().filter(|a| a.job == b.job).collect();
        if n > 1 && mine.len() >= n as usize {
            v.overlap(format!(
                "job {} (max_concurrent = {n}): run {} (slot {}, fence {}, {}) started while {} \
                 of its runs wrote on: {}",
                b.job,
                b.run_id,
                b.slot,
                b.fence,
                b.host,
                mine.len(),
                mine.iter()
                    .map(|a| format!("{} (slot {})", a.run_id, a.slot))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
}

fn duplicates(seen: &[Seen], facts: &Facts, v: &mut Violations) {
    let mut by_occ: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for s in seen
        .iter()
        .filter(|s| s.occurrence != "manual" && !facts.erased(&s.occurrence))
    {
        by_occ
            .entry((&s.job, &s.occurrence))
            .or_default()
            .push(&s.run_id);
    }
    for ((job, occ), runs) in by_occ {
        for extra in &runs[1..] {
            v.duplicate(format!(
                "{job} occurrence {occ} ran again as run {extra} (first: {})",
                runs[0]
            ));
        }
    }
}

fn records(seen: &[Seen], recorded: &[Recorded], facts: &Facts, v: &mut Violations) {
    let by_id: BTreeMap<&str, &Recorded> =
        recorded.iter().map(|r| (r.run_id.as_str(), r)).collect();
    let seen_ids: BTreeSet<&str> = seen.iter().map(|s| s.run_id.as_str()).collect();
    for s in seen {
        let Some(r) = by_id.get(s.run_id.as_str()) else {
            let lost_with_ledger = facts.ledger_lost_at.is_some_and(|at| s.last < at);
            if !facts.unrecordable && !lost_with_ledger {
                v.lost_record(format!(
                    "{} run {} (occurrence {}, on {}) ran and no history shows it",
                    s.job, s.run_id, s.occurrence, s.host
                ));
            }
            continue;
        };
        let (killed, stopped, taken) = match (&r.host, r.pid) {
            (Some(h), Some(p)) => (
                facts.killed.contains(&(h.clone(), p)),
                facts.stopped.contains(&(h.clone(), p)),
                facts.stopped_past_grace.contains(&(h.clone(), p)),
            ),
            _ => (false, false, false),
        };
        let signalled = match (&r.host, r.pid) {
            (Some(h), Some(p)) => facts.signalled.contains(&(h.clone(), p)),
            _ => false,
        };
        let verdict = r.verdict.as_deref();
        let replacing = facts.replacing.contains(&s.job);
        let fine = match (s.end, verdict) {
            (_, None) => false,
            (_, Some("abandoned")) if signalled => false,
            (_, Some("replaced")) if !replacing => false,
            // Stopped after its last line, before its exit: the code it
            // said is not the one it ended with. One that exited on its own
            // keeps its ending.
            (Some(c), Some("replaced")) => r.exit_code != Some(c),
            (Some(0), Some("ok")) => true,
            (Some(0), Some("abandoned")) => killed || taken || facts.outage_over_ttl,
            (Some(0), Some("lease-lost")) => facts.outage_over_ttl || stopped,
            (Some(0), _) => false,
            (Some(_), Some("failed")) => true,
            (Some(_), Some("abandoned")) => killed || taken || facts.outage_over_ttl,
            (Some(_), Some("lease-lost")) => facts.outage_over_ttl || stopped,
            (Some(_), _) => false,
            // It never said it ended: killed, stopped, or its supervisor died.
            (None, Some(v)) => v != "ok",
        };
        if !fine {
            v.wrong_record(format!(
                "{} run {} (occurrence {}, on {}) {} and is recorded {} (exit {:?}){}",
                s.job,
                s.run_id,
                s.occurrence,
                s.host,
                match s.end {
                    Some(c) => format!("ended {c}"),
                    None => "never ended".into(),
                },
                verdict.unwrap_or("running"),
                r.exit_code,
                if killed {
                    ", its supervisor killed"
                } else if signalled {
                    ", its supervisor signalled"
                } else {
                    ""
                }
            ));
        }
    }
    for r in recorded {
        if seen_ids.contains(r.run_id.as_str()) {
            continue;
        }
        match r.verdict.as_deref() {
            Some("ok") => v.wrong_record(format!(
                "{} run {} is recorded ok and never started",
                r.job, r.run_id
            )),
            None => v.wrong_record(format!(
                "{} run {} (occurrence {:?}) is shown running and never started",
                r.job, r.run_id, r.occurrence
            )),
            _ => {}
        }
    }
}

pub(crate) fn missed_but_ran(seen: &[Seen], missed: &[Missed], facts: &Facts, v: &mut Violations) {
    for s in seen
        .iter()
        .filter(|s| s.occurrence != "manual" && !facts.erased(&s.occurrence))
    {
        if let Some(m) = missed.iter().find(|m| {
            m.job == s.job
                && m.first.as_str() <= s.occurrence.as_str()
                && s.occurrence.as_str() <= m.last.as_str()
        }) {
            v.wrong_record(format!(
                "{} occurrence {} ran (run {}) and is counted missed ({}: {} to {})",
                s.job, s.occurrence, s.run_id, m.reason, m.first, m.last
            ));
        }
    }
}

fn fences(lock: &str, writes: &[Write], v: &mut Violations) {
    let mut fence_of: BTreeMap<&str, u64> = BTreeMap::new();
    let mut refused: BTreeSet<&str> = BTreeSet::new();
    let mut highest = 0u64;
    for w in writes {
        if w.rejected {
            if !refused.insert(&w.run_id) {
                continue;
            }
            v.fence_violation(format!(
                "lock {lock}: the sink refused fence {} of run {} (it had seen {highest})",
                w.fence, w.run_id
            ));
            continue;
        }
        match fence_of.get(w.token.as_str()) {
            Some(&f) if f != w.fence => v.fence_violation(format!(
                "lock {lock}: one lease wrote with fences {f} and {}",
                w.fence
            )),
            Some(_) => {}
            None => {
                if w.fence <= highest && highest > 0 {
                    v.fence_violation(format!(
                        "lock {lock}: a new lease (run {}) has fence {}, not above {highest}",
                        w.run_id, w.fence
                    ));
                }
                fence_of.insert(&w.token, w.fence);
            }
        }
        highest = highest.max(w.fence);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(run: &str, occ: &str, first: usize, last: usize, end: Option<i32>) -> Seen {
        Seen {
            job: "j".into(),
            occurrence: occ.into(),
            run_id: run.into(),
            fence: 1,
            host: "h".into(),
            lock: "j".into(),
            slot: 1,
            first,
            last,
            attempts: 1,
            end,
        }
    }

    fn rec(run: &str, verdict: Option<&str>) -> Recorded {
        Recorded {
            run_id: run.into(),
            job: "j".into(),
            occurrence: None,
            verdict: verdict.map(Into::into),
            exit_code: None,
            fence: None,
            host: Some("h".into()),
            pid: Some(7),
            attempts: Vec::new(),
        }
    }

    fn judge_all(s: &[Seen], r: &[Recorded], facts: &Facts) -> Violations {
        let mut v = Violations::default();
        judge(s, &BTreeMap::new(), r, &[], facts, &mut v);
        v
    }

    #[test]
    fn a_clean_history_holds_every_invariant() {
        let s = [
            seen("a", "o1", 0, 3, Some(0)),
            seen("b", "o2", 4, 6, Some(1)),
        ];
        let r = [rec("a", Some("ok")), rec("b", Some("failed"))];
        assert_eq!(judge_all(&s, &r, &Facts::default()).total(), 0);
    }

    #[test]
    fn each_violation_is_seen() {
        let s = [
            seen("a", "o1", 0, 5, Some(0)),
            seen("b", "o1", 2, 6, None),
            seen("c", "o3", 7, 8, Some(0)),
        ];
        let r = [
            rec("a", Some("abandoned")),
            rec("b", Some("ok")),
            rec("x", None),
        ];
        let v = judge_all(&s, &r, &Facts::default());
        assert_eq!(v.overlaps, 1, "{v:?}");
        assert_eq!(v.duplicates, 1, "{v:?}");
        assert_eq!(v.lost, 1, "{v:?}");
        // a: abandoned though it ended 0; b: ok though it never ended; x: running, never started.
        assert_eq!(v.wrong, 3, "{v:?}");
        let mut facts = Facts::default();
        facts.killed.insert(("h".into(), 7));
        let v = judge_all(&s[..1], &r[..1], &facts);
        assert_eq!(
            v.total(),
            0,
            "a killed supervisor's run may be abandoned: {v:?}"
        );
    }

    #[test]
    fn a_signalled_supervisor_records_its_own_run() {
        let s = [seen("a", "o1", 0, 5, None)];
        let mut facts = Facts::default();
        facts.signalled.insert(("h".into(), 7));
        for (verdict, wrong) in [("interrupted", 0), ("failed", 0), ("abandoned", 1)] {
            let v = judge_all(&s, &[rec("a", Some(verdict))], &facts);
            assert_eq!(v.wrong, wrong, "{verdict}: {v:?}");
        }
        // Unsignalled, a run that never said it ended may be abandoned.
        let v = judge_all(&s, &[rec("a", Some("abandoned"))], &Facts::default());
        assert_eq!(v.total(), 0, "{v:?}");
    }

    #[test]
    fn a_stopped_supervisors_run_is_abandoned_only_once_its_lease_could_pass() {
        let s = [seen("a", "o1", 0, 5, Some(0))];
        let r = [rec("a", Some("abandoned"))];
        let mut facts = Facts::default();
        facts.stopped.insert(("h".into(), 7));
        assert_eq!(judge_all(&s, &r, &facts).wrong, 1, "alive, its lock held");
        let lost = [rec("a", Some("lease-lost"))];
        assert_eq!(judge_all(&s, &lost, &facts).total(), 0);
        facts.stopped_past_grace.insert(("h".into(), 7));
        assert_eq!(judge_all(&s, &r, &facts).total(), 0, "taken over");
    }

    #[test]
    fn fences_must_grow_per_lease_and_the_sink_must_not_refuse() {
        let w = |fence, token: &str, rejected| Write {
            fence,
            token: token.into(),
            run_id: "r".into(),
            rejected,
        };
        let mut v = Violations::default();
        fences(
            "l",
            &[w(5, "a", false), w(5, "a", false), w(6, "b", false)],
            &mut v,
        );
        assert_eq!(v.fence, 0);
        fences(
            "l",
            &[
                w(5, "a", false),
                w(5, "b", false),
                w(4, "c", true),
                w(4, "c", true),
            ],
            &mut v,
        );
        assert_eq!(v.fence, 2, "{v:?}");
        let mut v = Violations::default();
        let m = [Missed {
            job: "j".into(),
            reason: "superseded".into(),
            first: "o1".into(),
            last: "o2".into(),
        }];
        missed_but_ran(
            &[seen("a", "o1", 0, 1, Some(0))],
            &m,
            &Facts::default(),
            &mut v,
        );
        assert_eq!(v.wrong, 1);
        // Records a restore erased may be counted missed; others may not.
        let restored = Facts {
            erased: Some(("o0".into(), "o1".into())),
            ..Facts::default()
        };
        let mut v = Violations::default();
        let ran = [
            seen("a", "o1", 0, 1, Some(0)),
            seen("a", "o2", 2, 3, Some(0)),
        ];
        missed_but_ran(&ran, &m, &restored, &mut v);
        assert_eq!(v.wrong, 1, "{v:?}");
    }

    #[test]
    fn n_slots_allow_n_runs_at_once_and_never_two_in_one_slot() {
        let in_slot = |run: &str, occ: &str, first, last, slot| Seen {
            slot,
            ..seen(run, occ, first, last, Some(0))
        };
        let three = Facts {
            slots: [("j".to_owned(), 3)].into(),
            ..Facts::default()
        };
        // Three at once, in slots 1, 2 and 3; then a fourth once one ended.
        let fine = [
            in_slot("a", "o1", 0, 10, 1),
            in_slot("b", "o2", 1, 11, 2),
            in_slot("c", "o3", 2, 12, 3),
            in_slot("d", "o4", 11, 13, 2),
        ];
        assert_eq!(judge_all(&fine, &[], &three).overlaps, 0);
        // The same history is four overlaps for a job of one slot.
        assert_eq!(judge_all(&fine, &[], &Facts::default()).overlaps, 4);
        // A fourth while three write on: one more than N.
        let four = [
            in_slot("a", "o1", 0, 10, 1),
            in_slot("b", "o2", 1, 11, 2),
            in_slot("c", "o3", 2, 12, 3),
            in_slot("d", "o4", 3, 13, 1),
        ];
        let v = judge_all(&four, &[], &three);
        // d beside all three, and in a's slot.
        assert_eq!(v.overlaps, 2, "{v:?}");
        // Two in one slot, with only two at once.
        let slot = [in_slot("a", "o1", 0, 10, 2), in_slot("b", "o2", 1, 11, 2)];
        assert_eq!(judge_all(&slot, &[], &three).overlaps, 1);
    }

    #[test]
    fn replaced_is_a_verdict_of_a_replacing_job_stopped_before_its_exit() {
        let replacing = Facts {
            replacing: ["j".to_owned()].into(),
            ..Facts::default()
        };
        let stopped = [seen("a", "o1", 0, 3, None)];
        let r = [rec("a", Some("replaced"))];
        assert_eq!(judge_all(&stopped, &r, &replacing).total(), 0);
        // Not for a job whose overlap is not replace.
        assert_eq!(judge_all(&stopped, &r, &Facts::default()).wrong, 1);
        // Stopped between its last line and its exit: another exit code.
        let ended = [seen("a", "o1", 0, 3, Some(0))];
        let mut cut = rec("a", Some("replaced"));
        cut.exit_code = Some(143);
        assert_eq!(judge_all(&ended, &[cut.clone()], &replacing).total(), 0);
        // Exited on its own with the code it said: it keeps its ending.
        cut.exit_code = Some(0);
        assert_eq!(judge_all(&ended, &[cut], &replacing).wrong, 1);
        // A run left running is still wrong.
        assert_eq!(judge_all(&stopped, &[rec("a", None)], &replacing).wrong, 1);
    }
}
