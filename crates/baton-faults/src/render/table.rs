//! The human report: a row per scenario (trials, faults injected, and each
//! invariant's violations), the failing trials with the command that
//! replays each, and the total.

use std::fmt::Write as _;

use crate::results::{Campaign, Row};
use crate::scenario::Scenario;

const HEAD: [&str; 11] = [
    "trials", "faults", "overlap", "dup", "lost", "wrong", "fence", "wedged", "breach", "secs",
    "verdict",
];

fn row(s: &mut String, r: &Row) {
    let _ = writeln!(
        s,
        "{:<44} {:>6} {:>6} {:>7} {:>4} {:>4} {:>5} {:>5} {:>6} {:>6} {:>7.0}  {}",
        r.scenario,
        r.trials,
        r.injected,
        r.overlaps,
        r.duplicates,
        r.lost,
        r.wrong,
        r.fence,
        r.wedged,
        r.breaches,
        r.secs,
        r.verdict()
    );
}

/// The whole report.
pub(crate) fn campaign(c: &Campaign) -> String {
    let mut s = String::from("── fault campaign\n");
    let _ = write!(s, "{:<44}", "scenario");
    for (i, h) in HEAD.iter().enumerate() {
        let w = [6, 6, 7, 4, 4, 5, 5, 6, 6, 7, 0][i];
        let _ = write!(s, " {h:>w$}");
    }
    s.push('\n');
    for r in &c.rows {
        row(&mut s, r);
    }
    row(&mut s, &c.total);
    let failing: Vec<_> = c.trials.iter().filter(|t| t.failed()).collect();
    if !failing.is_empty() {
        s.push_str("\n── failing trials (each replays with the command under it)\n");
        for t in failing {
            let _ = writeln!(s, "{} seed {}:", t.scenario, t.seed);
            for d in &t.violations.details {
                let _ = writeln!(s, "  {d}");
            }
            let _ = writeln!(s, "  replay: {}", t.replay);
            if let Some(k) = &t.kept {
                let _ = writeln!(s, "  evidence: {k}");
            }
        }
    }
    let broken: Vec<_> = c.trials.iter().filter(|t| !t.broken.is_empty()).collect();
    if !broken.is_empty() {
        s.push_str("\n── instrument failures (not evidence about baton)\n");
        for t in broken.iter().take(20) {
            let _ = writeln!(s, "{} seed {}: {}", t.scenario, t.seed, t.broken.join("; "));
        }
    }
    let _ = writeln!(
        s,
        "\n════ {} trial(s), {} fault(s) injected, {} violation(s) in {} failing trial(s), {} broken; seed {}; {:.0} s",
        c.total.trials,
        c.total.injected,
        c.total.violations(),
        c.total.failed,
        c.total.broken,
        c.seed,
        c.secs
    );
    s
}

/// The `--list` table.
pub(crate) fn scenarios(all: &[Scenario]) -> String {
    let mut s = String::new();
    for sc in all {
        let _ = writeln!(s, "{:<44} {}", sc.name, sc.what);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Violations;
    use crate::results::TrialRecord;

    fn trial(scenario: &'static str, overlaps: u64) -> TrialRecord {
        TrialRecord {
            scenario,
            seed: 3,
            injected: 1,
            violations: Violations {
                overlaps,
                details: if overlaps > 0 {
                    vec!["overlap: job j".into()]
                } else {
                    Vec::new()
                },
                ..Violations::default()
            },
            broken: Vec::new(),
            secs: 1.0,
            replay: format!("baton-faults --scenario {scenario} --seed 3 --trials 1"),
            kept: None,
        }
    }

    #[test]
    fn a_failing_trial_is_shown_with_its_replay() {
        let c = Campaign::new(
            7,
            "b".into(),
            None,
            &["x", "y"],
            vec![trial("x", 0), trial("y", 2)],
            2.0,
        );
        let text = campaign(&c);
        assert!(text.contains("PASS"), "{text}");
        assert!(text.contains("FAIL"), "{text}");
        assert!(
            text.contains("replay: baton-faults --scenario y --seed 3 --trials 1"),
            "{text}"
        );
        assert!(
            text.contains("2 trial(s), 2 fault(s) injected, 2 violation(s) in 1 failing trial(s)"),
            "{text}"
        );
    }
}
