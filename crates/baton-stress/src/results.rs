//! What a campaign found: one [`TrialRecord`] per trial, the [`Row`]s they
//! add up to, the latency and throughput figures, and the verdicts. Pure
//! data and arithmetic; the renderers turn it into text.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::{Config, Impl, Scenario};
use crate::event::DefectKind;

/// One trial of one scenario against one implementation.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct TrialRecord {
    /// The implementation.
    #[serde(rename = "impl")]
    pub(crate) imp: Impl,
    /// The scenario.
    pub(crate) scenario: Scenario,
    /// Contenders (processes, or threads).
    pub(crate) procs: usize,
    /// Rounds per contender (1 for single decisions).
    pub(crate) rounds: u32,
    /// Which repetition.
    pub(crate) index: u32,
    /// Acquisitions observed.
    pub(crate) winners: u64,
    /// Acquisitions that were a second holder by construction: extra winners
    /// of one decision, or wins while the long holder still held.
    pub(crate) duplicates: u64,
    /// Witness collisions with a live holder, each seen at its instant.
    pub(crate) overlaps: u64,
    /// Holders that found, at renewal or release, that their lease had
    /// passed to someone else while they held it.
    pub(crate) displaced: u64,
    /// Contenders killed by the parent (kill -9 churn).
    pub(crate) killed: u64,
    /// Of those, how many were killed while they held the witness (the
    /// parent removed a dead owner's witness).
    pub(crate) killed_holding: u64,
    /// From the start instant to the last contender's end, in seconds.
    pub(crate) secs: f64,
    /// The latest any contender arrived after the start instant, in ms.
    pub(crate) late_max_ms: f64,
    /// The exhibit's observed defects, by kind.
    pub(crate) defects: BTreeMap<DefectKind, u64>,
    /// Instrument errors reported by contenders or met by the parent.
    pub(crate) child_errors: u64,
    /// The first few of them.
    pub(crate) error_samples: Vec<String>,
    /// Contenders still running at the trial's deadline.
    pub(crate) never_finished: u64,
    /// Churners that gave up waiting for the lock.
    pub(crate) gave_up: u64,
    /// How many holders the lock admits (recorded only when more than 1).
    #[serde(skip_serializing_if = "crate::config::one")]
    pub(crate) slots: u32,
    /// With N slots: the most holders seen at one instant (an overlap
    /// counts N + 1).
    #[serde(skip_serializing_if = "one_slot_max")]
    pub(crate) max_holders: u32,
}

/// A most-holders figure means nothing with one slot, where it is not
/// measured (0).
fn one_slot_max(n: &u32) -> bool {
    *n == 0
}

impl TrialRecord {
    /// An empty record for a trial.
    pub(crate) fn new(
        imp: Impl,
        scenario: Scenario,
        procs: usize,
        rounds: u32,
        index: u32,
    ) -> Self {
        Self {
            imp,
            scenario,
            procs,
            rounds,
            index,
            winners: 0,
            duplicates: 0,
            overlaps: 0,
            displaced: 0,
            killed: 0,
            killed_holding: 0,
            secs: 0.0,
            late_max_ms: 0.0,
            defects: BTreeMap::new(),
            child_errors: 0,
            error_samples: Vec::new(),
            never_finished: 0,
            gave_up: 0,
            slots: 1,
            max_holders: 0,
        }
    }

    /// Records an instrument error.
    pub(crate) fn error(&mut self, what: impl Into<String>) {
        self.child_errors += 1;
        if self.error_samples.len() < 5 {
            self.error_samples.push(what.into());
        }
    }

    /// Concurrent holders seen: the larger of two independent observations
    /// of the same event, duplicate winners and witness overlaps. For baton
    /// a displaced holder counts too: nothing in any scenario may take a
    /// live baton lease, so a holder that finds its lease gone saw a second
    /// holder. For an exhibit it does not: the seed 000 store names a tick
    /// whose save crashed, which runs nothing, so displacement is reported
    /// beside the races, never as one.
    pub(crate) fn concurrent(&self) -> u64 {
        let displaced = if self.imp.is_baton() {
            self.displaced
        } else {
            0
        };
        self.duplicates.max(self.overlaps).max(displaced)
    }

    /// Whether two holders were seen at once.
    pub(crate) fn raced(&self) -> bool {
        self.concurrent() > 0
    }

    /// Whether the instrument failed during this trial.
    pub(crate) fn broken(&self) -> bool {
        self.child_errors > 0 || self.never_finished > 0 || self.gave_up > 0
    }
}

/// The trials of one (implementation, scenario, size), added up.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Row {
    /// The implementation.
    #[serde(rename = "impl")]
    pub(crate) imp: Impl,
    /// The scenario.
    pub(crate) scenario: Scenario,
    /// Contenders.
    pub(crate) procs: usize,
    /// Rounds.
    pub(crate) rounds: u32,
    /// Trials.
    pub(crate) trials: u32,
    /// Trials in which two holders were seen at once.
    pub(crate) raced_trials: u32,
    /// Acquisitions.
    pub(crate) winners: u64,
    /// Duplicate acquisitions.
    pub(crate) duplicates: u64,
    /// Overlaps.
    pub(crate) overlaps: u64,
    /// Displaced holders.
    pub(crate) displaced: u64,
    /// Concurrent holders (sum over trials of [`TrialRecord::concurrent`]).
    pub(crate) concurrent: u64,
    /// Killed contenders.
    pub(crate) killed: u64,
    /// Killed while holding the witness.
    pub(crate) killed_holding: u64,
    /// Seconds, summed over trials.
    pub(crate) secs: f64,
    /// Observed defects.
    pub(crate) defects: BTreeMap<DefectKind, u64>,
    /// Instrument errors.
    pub(crate) child_errors: u64,
    /// Contenders that never finished.
    pub(crate) never_finished: u64,
    /// Churners that gave up.
    pub(crate) gave_up: u64,
    /// How many holders the lock admits (recorded only when more than 1).
    #[serde(skip_serializing_if = "crate::config::one")]
    pub(crate) slots: u32,
    /// With N slots: the most holders seen at one instant in any trial.
    #[serde(skip_serializing_if = "one_slot_max")]
    pub(crate) max_holders: u32,
    /// The verdict words.
    pub(crate) verdict: String,
}

/// Adds up trials into rows, in the configuration's order.
pub(crate) fn rows(cfg: &Config, trials: &[TrialRecord]) -> Vec<Row> {
    let mut out = Vec::new();
    for &imp in &cfg.impls {
        for &scenario in &cfg.scenarios {
            for &procs in &cfg.sizes {
                let ts: Vec<&TrialRecord> = trials
                    .iter()
                    .filter(|t| t.imp == imp && t.scenario == scenario && t.procs == procs)
                    .collect();
                if ts.is_empty() {
                    continue;
                }
                let mut defects = BTreeMap::new();
                for t in &ts {
                    for (k, v) in &t.defects {
                        *defects.entry(*k).or_insert(0) += v;
                    }
                }
                let concurrent = ts.iter().map(|t| t.concurrent()).sum();
                out.push(Row {
                    imp,
                    scenario,
                    procs,
                    rounds: ts[0].rounds,
                    trials: ts.len() as u32,
                    raced_trials: ts.iter().filter(|t| t.raced()).count() as u32,
                    winners: ts.iter().map(|t| t.winners).sum(),
                    duplicates: ts.iter().map(|t| t.duplicates).sum(),
                    overlaps: ts.iter().map(|t| t.overlaps).sum(),
                    displaced: ts.iter().map(|t| t.displaced).sum(),
                    concurrent,
                    killed: ts.iter().map(|t| t.killed).sum(),
                    killed_holding: ts.iter().map(|t| t.killed_holding).sum(),
                    secs: ts.iter().map(|t| t.secs).sum(),
                    defects,
                    child_errors: ts.iter().map(|t| t.child_errors).sum(),
                    never_finished: ts.iter().map(|t| t.never_finished).sum(),
                    gave_up: ts.iter().map(|t| t.gave_up).sum(),
                    slots: cfg.slots,
                    max_holders: ts.iter().map(|t| t.max_holders).max().unwrap_or(0),
                    verdict: verdict(imp, concurrent, cfg.slots),
                });
            }
        }
    }
    out
}

/// The verdict words (seed 003 §9.5); with N slots a race is a holder
/// beyond N.
pub(crate) fn verdict(imp: Impl, concurrent: u64, slots: u32) -> String {
    if concurrent > 0 && slots > 1 {
        format!("RACE — {concurrent} holder(s) beyond {slots}")
    } else if concurrent > 0 {
        format!("RACE — {concurrent} concurrent holder(s)")
    } else if imp.is_baton() && slots > 1 {
        format!("PASS — never more than {slots} holders")
    } else if imp.is_baton() {
        "PASS — one owner throughout".into()
    } else {
        "none seen — the window did not open this run".into()
    }
}

/// Uncontended acquire + release latency of one implementation (or the floor).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Latency {
    /// `floor`, or an implementation's name.
    pub(crate) name: String,
    /// Iterations measured.
    pub(crate) iterations: u32,
    /// Median, µs.
    pub(crate) median_us: f64,
    /// Mean, µs.
    pub(crate) mean_us: f64,
    /// 99th percentile, µs.
    pub(crate) p99_us: f64,
    /// Median over the floor's median.
    pub(crate) vs_floor: f64,
}

/// Contention throughput of one implementation in the sustained churn rows
/// at one size.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Throughput {
    /// The implementation.
    #[serde(rename = "impl")]
    pub(crate) imp: Impl,
    /// Processes.
    pub(crate) procs: usize,
    /// Rounds.
    pub(crate) rounds: u32,
    /// Trials added up.
    pub(crate) trials: u32,
    /// Acquisitions.
    pub(crate) acquisitions: u64,
    /// Seconds.
    pub(crate) secs: f64,
    /// Acquisitions per second.
    pub(crate) per_sec: f64,
    /// Relative to v2's at the same size, when v2 ran.
    pub(crate) vs_v2: Option<f64>,
}

/// The throughput table, from the churn rows: every size, smallest first,
/// implementations in report order within a size.
pub(crate) fn throughput(rows: &[Row]) -> Vec<Throughput> {
    let mut sizes: Vec<usize> = rows
        .iter()
        .filter(|r| r.scenario == Scenario::Churn)
        .map(|r| r.procs)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut out = Vec::new();
    for size in sizes {
        let mut at: Vec<Throughput> = rows
            .iter()
            .filter(|r| r.scenario == Scenario::Churn && r.procs == size)
            .map(|r| Throughput {
                imp: r.imp,
                procs: r.procs,
                rounds: r.rounds,
                trials: r.trials,
                acquisitions: r.winners,
                secs: r.secs,
                per_sec: if r.secs > 0.0 {
                    r.winners as f64 / r.secs
                } else {
                    0.0
                },
                vs_v2: None,
            })
            .collect();
        if let Some(v2) = at.iter().find(|t| t.imp == Impl::V2).map(|t| t.per_sec)
            && v2 > 0.0
        {
            for t in &mut at {
                t.vs_v2 = Some(t.per_sec / v2);
            }
        }
        out.extend(at);
    }
    out
}

/// Per implementation: what the whole campaign saw.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Summary {
    /// The implementation.
    #[serde(rename = "impl")]
    pub(crate) imp: Impl,
    /// Trials.
    pub(crate) trials: u32,
    /// Trials that raced.
    pub(crate) raced_trials: u32,
    /// Concurrent holders.
    pub(crate) concurrent: u64,
    /// Duplicate acquisitions.
    pub(crate) duplicates: u64,
    /// Overlaps.
    pub(crate) overlaps: u64,
    /// Displaced holders.
    pub(crate) displaced: u64,
    /// Observed defects.
    pub(crate) defects: BTreeMap<DefectKind, u64>,
    /// Instrument errors.
    pub(crate) child_errors: u64,
    /// Never finished.
    pub(crate) never_finished: u64,
    /// Gave up.
    pub(crate) gave_up: u64,
    /// With N slots: the most holders seen at one instant.
    #[serde(skip_serializing_if = "one_slot_max")]
    pub(crate) max_holders: u32,
}

impl Summary {
    /// Whether the instrument failed while measuring this implementation.
    pub(crate) fn broken(&self) -> bool {
        self.child_errors > 0 || self.never_finished > 0 || self.gave_up > 0
    }
}

/// The summary per implementation.
pub(crate) fn summaries(cfg: &Config, rows: &[Row]) -> Vec<Summary> {
    cfg.impls
        .iter()
        .map(|&imp| {
            let rs: Vec<&Row> = rows.iter().filter(|r| r.imp == imp).collect();
            let mut defects = BTreeMap::new();
            for r in &rs {
                for (k, v) in &r.defects {
                    *defects.entry(*k).or_insert(0) += v;
                }
            }
            Summary {
                imp,
                trials: rs.iter().map(|r| r.trials).sum(),
                raced_trials: rs.iter().map(|r| r.raced_trials).sum(),
                concurrent: rs.iter().map(|r| r.concurrent).sum(),
                duplicates: rs.iter().map(|r| r.duplicates).sum(),
                overlaps: rs.iter().map(|r| r.overlaps).sum(),
                displaced: rs.iter().map(|r| r.displaced).sum(),
                defects,
                child_errors: rs.iter().map(|r| r.child_errors).sum(),
                never_finished: rs.iter().map(|r| r.never_finished).sum(),
                gave_up: rs.iter().map(|r| r.gave_up).sum(),
                max_holders: rs.iter().map(|r| r.max_holders).max().unwrap_or(0),
            }
        })
        .collect()
}

/// A whole campaign.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Campaign {
    /// The configuration it ran.
    pub(crate) config: Config,
    /// Every trial.
    pub(crate) trials: Vec<TrialRecord>,
    /// The rows.
    pub(crate) rows: Vec<Row>,
    /// Contention throughput.
    pub(crate) throughput: Vec<Throughput>,
    /// Latency, unless skipped.
    pub(crate) latency: Option<Vec<Latency>>,
    /// Per implementation.
    pub(crate) summary: Vec<Summary>,
    /// Wall-clock seconds the campaign took.
    pub(crate) secs: f64,
}

impl Campaign {
    /// Builds the derived tables.
    pub(crate) fn new(
        config: Config,
        trials: Vec<TrialRecord>,
        latency: Option<Vec<Latency>>,
        secs: f64,
    ) -> Self {
        let rows = rows(&config, &trials);
        let throughput = throughput(&rows);
        let summary = summaries(&config, &rows);
        Self {
            config,
            trials,
            rows,
            throughput,
            latency,
            summary,
            secs,
        }
    }

    /// Whether baton raced.
    pub(crate) fn baton_raced(&self) -> bool {
        self.summary
            .iter()
            .any(|s| s.imp.is_baton() && s.concurrent > 0)
    }

    /// Whether the instrument broke while measuring baton.
    pub(crate) fn baton_broken(&self) -> bool {
        self.summary.iter().any(|s| s.imp.is_baton() && s.broken())
    }
}
