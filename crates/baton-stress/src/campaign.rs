//! The campaign: every scenario × size × repetition × implementation, then
//! the latency table.
//!
//! Implementations are interleaved inside each repetition (baton, then v2,
//! then v1, … for one trial each) so that whatever else the machine is doing
//! falls on all of them alike, and the throughput ratio of baton to v2 comes
//! from the same run, as close in time as the trials can be.

use std::path::Path;

use baton_lease::{Clock, SystemClock};

use crate::config::Config;
use crate::out;
use crate::parent::trial;
use crate::results::{Campaign, TrialRecord};

/// Runs the campaign `cfg` describes, with `exe` as every contender.
pub(crate) fn run(cfg: &Config, exe: &Path) -> Result<Campaign, String> {
    let began = SystemClock.boot();
    if let Some(url) = &cfg.store {
        let store = crate::store::Store::new(url).map_err(|e| e.to_string())?;
        store.prepare().map_err(|e| e.to_string())?;
    }
    let mut trials: Vec<TrialRecord> = Vec::new();
    for &scenario in &cfg.scenarios {
        for &procs in &cfg.sizes {
            let row_began = SystemClock.boot();
            for index in 0..cfg.repeat {
                for &imp in &cfg.impls {
                    trials.push(trial::run(exe, cfg, imp, scenario, procs, index));
                }
            }
            if cfg.progress {
                let secs = (SystemClock.boot() - row_began).as_secs_f64();
                let mut line = format!(
                    "{:<18} {:>4} procs × {} trials ({secs:.1} s):",
                    scenario.label(),
                    procs,
                    cfg.repeat
                );
                for &imp in &cfg.impls {
                    let ts = trials
                        .iter()
                        .filter(|t| t.imp == imp && t.scenario == scenario && t.procs == procs);
                    let (raced, broken) = ts.fold((0, 0), |(r, b), t| {
                        (r + u32::from(t.raced()), b + u32::from(t.broken()))
                    });
                    line.push_str(&format!(" {} {raced} raced", imp.name()));
                    if broken > 0 {
                        line.push_str(&format!(" ({broken} broken)"));
                    }
                    line.push(';');
                }
                out::progress(&line);
            }
        }
    }
    let latency = match cfg.latency {
        Some(n) => Some(crate::latency::measure(
            &cfg.impls,
            n,
            &cfg.dir,
            &cfg.timing,
        )?),
        None => None,
    };
    let secs = (SystemClock.boot() - began).as_secs_f64();
    Ok(Campaign::new(cfg.clone(), trials, latency, secs))
}
