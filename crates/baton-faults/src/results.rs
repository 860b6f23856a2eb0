//! What a campaign found: one [`TrialRecord`] per trial and the [`Row`]
//! per scenario they add up to. Pure data and arithmetic; the renderers
//! turn it into text.

use serde::Serialize;

use crate::check::Violations;

/// One trial.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TrialRecord {
    pub(crate) scenario: &'static str,
    pub(crate) seed: u64,
    /// Faults that took effect.
    pub(crate) injected: u64,
    pub(crate) violations: Violations,
    /// The instrument's own failures in this trial.
    pub(crate) broken: Vec<String>,
    pub(crate) secs: f64,
    /// The command that replays it.
    pub(crate) replay: String,
    /// Where its directory was kept, when it was.
    pub(crate) kept: Option<String>,
}

impl TrialRecord {
    /// Whether it saw a violation.
    pub(crate) fn failed(&self) -> bool {
        self.violations.total() > 0
    }
}

/// A scenario's trials, added up.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub(crate) struct Row {
    pub(crate) scenario: String,
    pub(crate) trials: u64,
    pub(crate) injected: u64,
    pub(crate) overlaps: u64,
    pub(crate) duplicates: u64,
    pub(crate) lost: u64,
    pub(crate) wrong: u64,
    pub(crate) fence: u64,
    pub(crate) wedged: u64,
    pub(crate) breaches: u64,
    /// Trials that saw a violation.
    pub(crate) failed: u64,
    /// Trials in which the instrument failed.
    pub(crate) broken: u64,
    pub(crate) secs: f64,
}

impl Row {
    fn add(&mut self, t: &TrialRecord) {
        let v = &t.violations;
        self.trials += 1;
        self.injected += t.injected;
        self.overlaps += v.overlaps;
        self.duplicates += v.duplicates;
        self.lost += v.lost;
        self.wrong += v.wrong;
        self.fence += v.fence;
        self.wedged += v.wedged;
        self.breaches += v.breaches;
        self.failed += u64::from(t.failed());
        self.broken += u64::from(!t.broken.is_empty());
        self.secs += t.secs;
    }

    /// Violations in all.
    pub(crate) fn violations(&self) -> u64 {
        self.overlaps
            + self.duplicates
            + self.lost
            + self.wrong
            + self.fence
            + self.wedged
            + self.breaches
    }

    /// The verdict words.
    pub(crate) fn verdict(&self) -> &'static str {
        if self.violations() > 0 {
            "FAIL"
        } else if self.broken > 0 {
            "BROKEN"
        } else {
            "PASS"
        }
    }
}

/// A whole campaign.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Campaign {
    pub(crate) seed: u64,
    pub(crate) baton: String,
    pub(crate) failpoints: Option<String>,
    pub(crate) trials: Vec<TrialRecord>,
    pub(crate) rows: Vec<Row>,
    pub(crate) total: Row,
    pub(crate) secs: f64,
}

impl Campaign {
    /// Adds the trials up, in the order of `scenarios`.
    pub(crate) fn new(
        seed: u64,
        baton: String,
        failpoints: Option<String>,
        scenarios: &[&'static str],
        trials: Vec<TrialRecord>,
        secs: f64,
    ) -> Self {
        let mut rows = Vec::new();
        let mut total = Row {
            scenario: "all".into(),
            ..Row::default()
        };
        for &s in scenarios {
            let mut row = Row {
                scenario: s.into(),
                ..Row::default()
            };
            for t in trials.iter().filter(|t| t.scenario == s) {
                row.add(t);
                total.add(t);
            }
            rows.push(row);
        }
        Self {
            seed,
            baton,
            failpoints,
            trials,
            rows,
            total,
            secs,
        }
    }
}
