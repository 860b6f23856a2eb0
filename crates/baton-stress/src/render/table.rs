//! The human report (seed 003 §9.5): a table per implementation, the
//! contention throughput, the latency table, and the summary.

use std::fmt::Write as _;

use crate::event::DefectKind;
use crate::results::{Campaign, Latency, Row, Summary, Throughput};

/// The whole report.
pub(crate) fn campaign(c: &Campaign) -> String {
    let mut s = String::new();
    for &imp in &c.config.impls {
        let rows: Vec<&Row> = c.rows.iter().filter(|r| r.imp == imp).collect();
        if !rows.is_empty() {
            let title = if c.config.store.is_some() {
                imp.store_title()
            } else {
                imp.title()
            };
            s.push_str(&impl_table(title, &rows, c.config.slots));
            s.push('\n');
        }
    }
    if !c.throughput.is_empty() {
        s.push_str(&throughput(&c.throughput));
        s.push('\n');
    }
    if let Some(l) = &c.latency {
        s.push_str(&latency(l));
        s.push('\n');
    }
    s.push_str(&summary(&c.summary, c.secs, c.config.slots));
    s
}

fn impl_table(title: &str, rows: &[&Row], slots: u32) -> String {
    if slots > 1 {
        return slotted_table(title, rows, slots);
    }
    let mut s = format!("── {title}\n");
    let _ = writeln!(
        s,
        "{:<18} {:>5} {:>6} {:>6} {:>7} {:>4} {:>8} {:>6} {:>8}  verdict",
        "scenario", "procs", "rounds", "trials", "winners", "dup", "overlaps", "killed", "secs"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<18} {:>5} {:>6} {:>6} {:>7} {:>4} {:>8} {:>6} {:>8.2}  {}",
            r.scenario.label(),
            r.procs,
            r.rounds,
            r.trials,
            r.winners,
            r.duplicates,
            r.overlaps,
            r.killed,
            r.secs,
            r.verdict
        );
    }
    s.push_str(&notes(rows));
    s
}

/// With N slots: the bound and the most holders seen at once beside the
/// counts; `overlaps` are holders beyond N.
fn slotted_table(title: &str, rows: &[&Row], slots: u32) -> String {
    let mut s = format!("── {title}, {slots} slots\n");
    let _ = writeln!(
        s,
        "{:<18} {:>5} {:>6} {:>6} {:>7} {:>3} {:>9} {:>4} {:>8} {:>6} {:>8}  verdict",
        "scenario",
        "procs",
        "rounds",
        "trials",
        "winners",
        "N",
        "most held",
        "dup",
        "overlaps",
        "killed",
        "secs"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<18} {:>5} {:>6} {:>6} {:>7} {:>3} {:>9} {:>4} {:>8} {:>6} {:>8.2}  {}",
            r.scenario.label(),
            r.procs,
            r.rounds,
            r.trials,
            r.winners,
            r.slots,
            r.max_holders,
            r.duplicates,
            r.overlaps,
            r.killed,
            r.secs,
            r.verdict
        );
    }
    s.push_str(&notes(rows));
    s
}

/// What is listed under a table: defects, displaced holders, the instrument.
fn notes(rows: &[&Row]) -> String {
    let mut s = String::new();
    let mut notes = Vec::new();
    for r in rows {
        for (k, v) in &r.defects {
            notes.push(format!(
                "  observed defect: {} ×{v} in {} at {} procs",
                k.describe(),
                r.scenario.label(),
                r.procs
            ));
        }
        if r.displaced > 0 {
            notes.push(format!(
                "  displaced holders: {} in {} at {} procs (a holder's lease passed to another while it held it)",
                r.displaced,
                r.scenario.label(),
                r.procs
            ));
        }
        if r.child_errors + r.never_finished + r.gave_up > 0 {
            notes.push(format!(
                "  instrument: {} child error(s), {} never finished, {} gave up in {} at {} procs",
                r.child_errors,
                r.never_finished,
                r.gave_up,
                r.scenario.label(),
                r.procs
            ));
        }
    }
    for n in notes {
        s.push_str(&n);
        s.push('\n');
    }
    s
}

fn throughput(t: &[Throughput]) -> String {
    let first = &t[0];
    let mut s = format!(
        "── contention throughput (sustained churn, {} rounds, {} trial(s) per row)\n",
        first.rounds, first.trials
    );
    let _ = writeln!(
        s,
        "{:<8} {:>5} {:>12} {:>9} {:>10} {:>7}",
        "impl", "procs", "acquisitions", "secs", "acq/s", "vs v2"
    );
    for r in t {
        let vs = r
            .vs_v2
            .map_or_else(|| "—".to_owned(), |v| format!("{v:.2}×"));
        let _ = writeln!(
            s,
            "{:<8} {:>5} {:>12} {:>9.2} {:>10.0} {:>7}",
            r.imp.name(),
            r.procs,
            r.acquisitions,
            r.secs,
            r.per_sec,
            vs
        );
    }
    s
}

fn latency(l: &[Latency]) -> String {
    let n = l.first().map_or(0, |x| x.iterations);
    let mut s =
        format!("── uncontended latency ({n} × acquire + release; floor = the bare syscalls)\n");
    let _ = writeln!(
        s,
        "{:<8} {:>10} {:>10} {:>10} {:>8}",
        "impl", "median", "mean", "p99", "× floor"
    );
    for r in l {
        let _ = writeln!(
            s,
            "{:<8} {:>8.1}µs {:>8.1}µs {:>8.1}µs {:>7.2}×",
            r.name, r.median_us, r.mean_us, r.p99_us, r.vs_floor
        );
    }
    s
}

fn summary(sums: &[Summary], secs: f64, slots: u32) -> String {
    let mut s = String::from("════ summary ════\n");
    for m in sums {
        let races = format!(
            "{}: {} race(s) in {} trial(s) ({} concurrent holder(s): {} duplicate acquisition(s), {} overlap(s), {} displaced)",
            m.imp.name(),
            m.raced_trials,
            m.trials,
            m.concurrent,
            m.duplicates,
            m.overlaps,
            m.displaced
        );
        s.push_str(&races);
        if slots > 1 {
            let _ = write!(s, " (most holders at once: {} of {slots})", m.max_holders);
        }
        if m.imp.is_baton() && slots > 1 {
            s.push_str(if m.concurrent == 0 {
                " — PASS: never more than N holders"
            } else {
                " — FAIL: baton raced"
            });
        } else if m.imp.is_baton() {
            s.push_str(if m.concurrent == 0 {
                " — PASS: one owner throughout"
            } else {
                " — FAIL: baton raced"
            });
        } else if m.concurrent == 0 {
            s.push_str(
                " — the window did not open this run (not evidence of absence; raise --repeat)",
            );
        } else {
            let _ = write!(
                s,
                " — the defect this exhibit demonstrates: {}",
                m.imp.defect()
            );
        }
        s.push('\n');
        let defects: Vec<String> = m
            .defects
            .iter()
            .map(|(k, v): (&DefectKind, &u64)| format!("{} ×{v}", k.describe()))
            .collect();
        if !defects.is_empty() {
            let _ = writeln!(s, "  observed defects: {}", defects.join(", "));
        }
        if m.broken() {
            let _ = writeln!(
                s,
                "  instrument broken: {} child error(s), {} never finished, {} gave up (the instrument, not the lock)",
                m.child_errors, m.never_finished, m.gave_up
            );
        }
    }
    let _ = writeln!(s, "campaign: {secs:.1} s");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Impl, Scenario, Timing};
    use crate::results::{Campaign, TrialRecord};
    use std::time::Duration;

    fn cfg() -> Config {
        Config {
            sizes: vec![2],
            rounds: 5,
            impls: vec![Impl::Baton, Impl::V1],
            scenarios: vec![Scenario::Stale],
            repeat: 1,
            json: None,
            latency: None,
            dir: "/tmp/x".into(),
            timing: Timing::default(),
            trial_timeout: Duration::from_secs(60),
            progress: false,
            store: None,
            hosts: 3,
            slots: 1,
        }
    }

    #[test]
    fn a_race_and_a_clean_row_read_as_the_guide_shows_them() {
        let mut b = TrialRecord::new(Impl::Baton, Scenario::Stale, 2, 1, 0);
        b.winners = 1;
        let mut v = TrialRecord::new(Impl::V1, Scenario::Stale, 2, 1, 0);
        v.winners = 2;
        v.duplicates = 1;
        v.overlaps = 1;
        let c = Campaign::new(cfg(), vec![b, v], None, 1.0);
        let text = campaign(&c);
        assert!(text.contains("stale recovery         2      1      1       1    0        0      0     0.00  PASS — one owner throughout"), "{text}");
        assert!(text.contains("RACE — 1 concurrent holder(s)"), "{text}");
        assert!(text.contains("baton: 0 race(s) in 1 trial(s)"), "{text}");
        assert!(text.contains("v1: 1 race(s) in 1 trial(s)"), "{text}");
        assert!(!c.baton_raced());
    }

    #[test]
    fn an_exhibit_with_no_race_says_the_window_did_not_open() {
        let c = Campaign::new(
            cfg(),
            vec![TrialRecord::new(Impl::V1, Scenario::Stale, 2, 1, 0)],
            None,
            1.0,
        );
        assert!(campaign(&c).contains("the window did not open this run"));
    }
}
