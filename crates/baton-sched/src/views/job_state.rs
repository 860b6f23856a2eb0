//! A job's state: the one answer to "what state is this job in?".
//!
//! `baton status` (upper-cased), `status --json` (`state`), the status page
//! (`data-state` and its badge), `/metrics` and the daemon's API all show
//! the [`JobState`] that [`decide`] chose, under its [`JobState::word`].
//! [`decide`] is a pure function of the [`Facts`] `status` gathers; it is
//! the only place a state is chosen. Nothing outside this module may derive
//! a state from a job's other fields (a holder's verdict, a failure count,
//! a word compared as a string): read [`crate::views::status::JobStatus::state`].
//! [`holding`] is the one rule for whether a lock's holder is this job's
//! run, so a lock mate's run never makes a job `running` or `hung`.
//!
//! # The states, the first that applies
//!
//! | state | when | healthy |
//! | --- | --- | --- |
//! | `hung` | a run of this job holds its lock (or one of its slots) and does not renew it (hung, or orphaned: its supervisor is gone, its processes are not): it needs attention whatever else is true, a pause, a disabled job or a live run on another slot | no |
//! | `disabled` | the job has `enabled = false`, or the kill switch is off | yes |
//! | `paused` | a pause is in force | yes |
//! | `running` | a run of this job holds its lock, live | yes |
//! | `unknown` | the ledger cannot be read: whether it is paused, ran, failed or missed an occurrence is not known (its lock still tells `running` and `hung`) | no |
//! | `overdue` | an occurrence at or after the job was first seen should have started [`crate::views::overdue::GRACE`] ago and did not | no |
//! | `failing` | its newest finished run that was not `interrupted` or `replaced` failed | no |
//! | `crashed` | its newest run started, never recorded an end, and nothing of it runs now | no |
//! | `new` | it never ran, and no occurrence since it was first seen has come due | yes |
//! | `ok` | otherwise | yes |
//!
//! A job is first seen when a tick (or the daemon) first reads it; before
//! any has, when the file that defines it last changed
//! ([`crate::views::overdue`]).
//!
//! `baton status` exits 1 when a job it shows is not healthy.

use serde::Serialize;

/// A job's state (see the module's table for what each means).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Disabled, by the job's `enabled = false` or the kill switch.
    Disabled,
    /// A pause is in force.
    Paused,
    /// A run of this job is in flight.
    Running,
    /// A run of this job holds the lock and does not renew it.
    Hung,
    /// The ledger cannot be read: nothing but its lock is known.
    Unknown,
    /// An occurrence should have started and did not.
    Overdue,
    /// Its newest finished run failed.
    Failing,
    /// Its newest run never recorded an end, and nothing of it runs.
    Crashed,
    /// It never ran, and none of its occurrences has come due yet.
    #[default]
    New,
    /// On schedule.
    Ok,
}

impl JobState {
    /// Every state, in the order of precedence.
    pub const ALL: [JobState; 10] = [
        Self::Hung,
        Self::Disabled,
        Self::Paused,
        Self::Running,
        Self::Unknown,
        Self::Overdue,
        Self::Failing,
        Self::Crashed,
        Self::New,
        Self::Ok,
    ];

    /// The word every surface shows: `disabled`, `paused`, `running`,
    /// `hung`, `unknown`, `overdue`, `failing`, `crashed`, `new` or `ok`.
    ///
    /// # Example
    ///
    /// ```
    /// use baton_sched::views::job_state::JobState;
    /// assert_eq!(JobState::New.word(), "new");
    /// ```
    pub fn word(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Paused => "paused",
            Self::Running => "running",
            Self::Hung => "hung",
            Self::Unknown => "unknown",
            Self::Overdue => "overdue",
            Self::Failing => "failing",
            Self::Crashed => "crashed",
            Self::New => "new",
            Self::Ok => "ok",
        }
    }

    /// Whether the state is fine: false for `hung`, `unknown`, `overdue`,
    /// `failing` and `crashed`, which make `baton status` exit 1.
    ///
    /// # Example
    ///
    /// ```
    /// use baton_sched::views::job_state::JobState;
    /// assert!(JobState::Paused.healthy());
    /// assert!(!JobState::Crashed.healthy());
    /// ```
    pub fn healthy(self) -> bool {
        !matches!(
            self,
            Self::Hung | Self::Unknown | Self::Overdue | Self::Failing | Self::Crashed
        )
    }
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// What a job's lock says of the job now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Holding {
    /// Nothing live holds it (free, absent, unreadable, or a holder that is
    /// not this job's run and not live).
    #[default]
    Nothing,
    /// A run of this job holds it, live.
    Live,
    /// A run of this job holds it and does not renew it: hung, or orphaned.
    Stuck,
    /// A live holder that is not a run of this job: a lock mate's run.
    Mate,
}

/// What `lock` (the job's lock judged now) says of the job, given whether
/// another job of the configuration `shared` its lock and the run id of the
/// job's newest run without an end in the ledger (`in_flight`).
///
/// A holder is this job's run when its run id is `in_flight`. When no other
/// job shares the lock, any holder is taken for the job's (its ledger row
/// may be missing: a run goes on unrecorded when the ledger is
/// unavailable).
///
/// # Example
///
/// ```
/// use baton_sched::views::job_state::{Holding, holding};
/// assert_eq!(holding(None, true, None), Holding::Nothing);
/// ```
pub fn holding(
    lock: Option<&baton_lease::Verdict>,
    shared: bool,
    in_flight: Option<&str>,
) -> Holding {
    use baton_lease::Verdict as V;
    let (holder, live) = match lock {
        Some(V::Live { holder, .. }) => (holder, true),
        Some(V::Hung { holder, .. } | V::Orphaned { holder, .. }) => (holder, false),
        _ => return Holding::Nothing,
    };
    let mine = !shared || in_flight.is_some_and(|run| holder.run() == Some(run));
    match (mine, live) {
        (true, true) => Holding::Live,
        (true, false) => Holding::Stuck,
        (false, true) => Holding::Mate,
        (false, false) => Holding::Nothing,
    }
}

/// What a job's state is decided from, as `status` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Facts {
    /// The job and the scheduler's kill switch both let it run.
    pub enabled: bool,
    /// A pause is in force.
    pub paused: bool,
    /// What its lock says of it ([`holding`]).
    pub holding: Holding,
    /// The overdue test holds (`crate::views::overdue::judge`).
    pub overdue: bool,
    /// Its newest finished run that was not `interrupted` or `replaced`
    /// failed (no success since its last failure).
    pub failing: bool,
    /// Its newest run started, never recorded an end, and nothing of it
    /// runs now (`abandoned`: killed, or its host lost).
    pub crashed: bool,
    /// It has a run in the ledger, or the ledger says it started one.
    pub ran: bool,
    /// The ledger could not be read: every fact above but `enabled` and
    /// `holding` is unknown.
    pub unread: bool,
    /// An occurrence at or after its first sighting has come due (its
    /// grace has passed, or it was recorded missed already).
    pub came_due: bool,
}

/// The state of a job with `facts`, the first of the module's table that
/// applies.
///
/// # Example
///
/// ```
/// use baton_sched::views::job_state::{Facts, Holding, JobState, decide};
/// let fresh = Facts { enabled: true, ..Facts::default() };
/// assert_eq!(decide(&fresh), JobState::New);
/// let mate = Facts { holding: Holding::Mate, ..fresh };
/// assert_eq!(decide(&mate), JobState::New);
/// ```
pub fn decide(facts: &Facts) -> JobState {
    if facts.holding == Holding::Stuck {
        JobState::Hung
    } else if !facts.enabled {
        JobState::Disabled
    } else if facts.unread {
        // Only the lock is known: a pause, a failure, a missed occurrence
        // are the ledger's to say.
        match facts.holding {
            Holding::Live => JobState::Running,
            Holding::Stuck | Holding::Nothing | Holding::Mate => JobState::Unknown,
        }
    } else if facts.paused {
        JobState::Paused
    } else if facts.holding == Holding::Live {
        JobState::Running
    } else if facts.overdue {
        JobState::Overdue
    } else if facts.failing {
        JobState::Failing
    } else if facts.crashed {
        JobState::Crashed
    } else if !facts.ran && !facts.came_due {
        JobState::New
    } else {
        JobState::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on() -> Facts {
        Facts {
            enabled: true,
            ran: true,
            came_due: true,
            ..Facts::default()
        }
    }

    #[test]
    fn each_state_has_its_own_word_and_only_five_are_unhealthy() {
        let words: Vec<&str> = JobState::ALL.iter().map(|s| s.word()).collect();
        assert_eq!(
            words,
            [
                "hung", "disabled", "paused", "running", "unknown", "overdue", "failing",
                "crashed", "new", "ok"
            ]
        );
        let unhealthy: Vec<&str> = JobState::ALL
            .iter()
            .filter(|s| !s.healthy())
            .map(|s| s.word())
            .collect();
        assert_eq!(
            unhealthy,
            ["hung", "unknown", "overdue", "failing", "crashed"]
        );
        for s in JobState::ALL {
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::json!(s.word())
            );
            assert_eq!(s.to_string(), s.word());
        }
    }

    #[test]
    fn precedence_is_the_tables_order() {
        // Everything at once, then each fact taken away in the table's
        // order uncovers the next state.
        let mut f = Facts {
            enabled: false,
            paused: true,
            holding: Holding::Stuck,
            overdue: true,
            failing: true,
            crashed: true,
            ran: false,
            unread: false,
            came_due: false,
        };
        assert_eq!(decide(&f), JobState::Hung);
        f.holding = Holding::Live;
        assert_eq!(decide(&f), JobState::Disabled);
        f.enabled = true;
        assert_eq!(decide(&f), JobState::Paused);
        f.paused = false;
        assert_eq!(decide(&f), JobState::Running);
        f.holding = Holding::Nothing;
        assert_eq!(decide(&f), JobState::Overdue);
        f.overdue = false;
        assert_eq!(decide(&f), JobState::Failing);
        f.failing = false;
        assert_eq!(decide(&f), JobState::Crashed);
        f.crashed = false;
        assert_eq!(decide(&f), JobState::New);
        f.came_due = true;
        assert_eq!(decide(&f), JobState::Ok);
        f.came_due = false;
        f.ran = true;
        assert_eq!(decide(&f), JobState::Ok);
    }

    #[test]
    fn a_ledger_not_read_leaves_only_the_lock_to_tell() {
        let f = Facts {
            unread: true,
            paused: true,
            failing: true,
            ..on()
        };
        assert_eq!(decide(&f), JobState::Unknown);
        assert!(!JobState::Unknown.healthy());
        let live = Facts {
            holding: Holding::Live,
            ..f
        };
        assert_eq!(decide(&live), JobState::Running);
        let stuck = Facts {
            holding: Holding::Stuck,
            ..f
        };
        assert_eq!(decide(&stuck), JobState::Hung);
        let off = Facts {
            enabled: false,
            ..f
        };
        assert_eq!(decide(&off), JobState::Disabled);
    }

    fn held(run: Option<&str>) -> baton_lease::Holder {
        let at = jiff::Timestamp::UNIX_EPOCH;
        baton_lease::Holder::V3(baton_lease::record::Held {
            fence: baton_lease::Fence::new(1),
            token: "0123456789abcdef".parse().unwrap(),
            pid: 42,
            host: "h1".into(),
            acquired: at,
            renewed: at,
            ttl: std::time::Duration::from_secs(30),
            run: run.map(str::to_owned),
            machine: None,
            boot: None,
            pidns: None,
            pstart: None,
            renewed_boot: None,
            pgid: None,
            jstart: None,
            leader: baton_lease::Leader::Command,
            uid: None,
            grace: None,
            occ: None,
            exe: None,
            budget: None,
            claims: baton_lease::Claims::default(),
        })
    }

    #[test]
    fn a_holder_is_this_jobs_run_by_its_run_id_when_the_lock_is_shared() {
        use baton_lease::Verdict as V;
        let live = |run| V::Live {
            holder: held(run),
            skew: None,
        };
        let hung = |run| V::Hung {
            holder: held(run),
            lapsed: std::time::Duration::from_secs(90),
        };
        let orphaned = |run| V::Orphaned {
            holder: held(run),
            pgid: 7,
            strangers: None,
        };
        let dead = V::Dead {
            holder: held(Some("r1")),
            evidence: baton_lease::Death::ProcessGone,
        };
        for (verdict, shared, newest, want) in [
            // Shared: only the job's own newest unfinished run is its.
            (Some(live(Some("r1"))), true, Some("r1"), Holding::Live),
            (Some(live(Some("r2"))), true, Some("r1"), Holding::Mate),
            (Some(live(Some("r2"))), true, None, Holding::Mate),
            (Some(live(None)), true, Some("r1"), Holding::Mate),
            (Some(hung(Some("r1"))), true, Some("r1"), Holding::Stuck),
            (Some(orphaned(Some("r1"))), true, Some("r1"), Holding::Stuck),
            (Some(hung(Some("r2"))), true, Some("r1"), Holding::Nothing),
            // Not shared: any holder is the job's, recorded or not.
            (Some(live(None)), false, None, Holding::Live),
            (Some(hung(None)), false, None, Holding::Stuck),
            // Nothing live holds it.
            (None, false, None, Holding::Nothing),
            (Some(V::Absent), false, None, Holding::Nothing),
            (Some(dead), false, Some("r1"), Holding::Nothing),
        ] {
            let got = holding(verdict.as_ref(), shared, newest);
            assert_eq!(got, want, "{verdict:?}, shared {shared}, newest {newest:?}");
        }
    }

    #[test]
    fn a_lock_mates_run_is_not_this_jobs() {
        let f = Facts {
            holding: Holding::Mate,
            ..on()
        };
        assert_eq!(decide(&f), JobState::Ok);
    }

    #[test]
    fn a_new_job_is_healthy_and_a_due_one_that_never_ran_is_not_new() {
        let new = Facts {
            ran: false,
            came_due: false,
            ..on()
        };
        assert_eq!(decide(&new), JobState::New);
        assert!(decide(&new).healthy());
        let due = Facts {
            came_due: true,
            ..new
        };
        assert_eq!(decide(&due), JobState::Ok);
        let late = Facts {
            overdue: true,
            ..due
        };
        assert_eq!(decide(&late), JobState::Overdue);
    }
}
