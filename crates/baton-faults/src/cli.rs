//! The command line, first stage: what clap parses. [`Args::plan`] turns it
//! into a validated [`Plan`] (second stage) before anything runs.

use std::path::PathBuf;

use clap::Parser;

use crate::plan::Plan;
use crate::scenario;

const ABOUT: &str = "The fault campaign: the real baton binary under the faults a fleet sees \
(kill -9 at every write and wait of a run, stalls, a full disk, a wrong clock, a blocked stderr, \
planted files, a frozen, cut, terminated, restarted or restored PostgreSQL). Each trial checks \
the invariants against the jobs' own logs and a fence-checking sink, never against baton's own \
view alone.";

const AFTER: &str = "\
Every scenario is listed by --list. A failing trial prints the command that replays it:
  baton-faults --scenario NAME --seed N --trials 1

The failpoint build of baton (the sweep needs it):
  cargo build --release -p baton --features failpoints --target-dir target/faults

Exit codes:
  0  every trial held every invariant
  1  a violation: an overlap, a duplicate occurrence, a lost or wrong record, a fence that did
     not grow, a wedged schedule, or a breach (a change that must be refused was made)
  2  usage error, or something a chosen scenario needs is missing: nothing ran
  3  no violation, but the instrument failed in some trial (not evidence)";

/// The parsed command line.
#[derive(Debug, Parser)]
#[command(name = "baton-faults", version, about = ABOUT, after_help = AFTER)]
pub(crate) struct Args {
    /// Fault trials in all, spread evenly over the chosen scenarios (at
    /// least one each).
    #[arg(long, default_value_t = 0)]
    pub(crate) trials: u32,

    /// Trials of each chosen scenario (instead of --trials).
    #[arg(long, value_name = "N")]
    pub(crate) per_scenario: Option<u32>,

    /// Scenarios to run (space- or comma-separated; one `*` in a name
    /// stands for anything: `failpoint-renewal-*`, `failpoint-*-enospc`).
    /// Default: all.
    #[arg(long = "scenario", num_args = 1.., value_delimiter = ',')]
    pub(crate) scenarios: Vec<String>,

    /// Leave these scenarios out (same form as --scenario).
    #[arg(long, num_args = 1.., value_delimiter = ',')]
    pub(crate) skip: Vec<String>,

    /// The first trial's seed; trial k of a scenario uses SEED + k. Default:
    /// from the kernel (printed, so the campaign can be run again).
    #[arg(long)]
    pub(crate) seed: Option<u64>,

    /// The baton binary under test (default: `baton` beside this program).
    #[arg(long, value_name = "PATH")]
    pub(crate) baton: Option<PathBuf>,

    /// baton built with `--features failpoints` (default:
    /// `target/faults/PROFILE/baton` for this program's `target/PROFILE/`).
    #[arg(long, value_name = "PATH")]
    pub(crate) failpoints_baton: Option<PathBuf>,

    /// Trials run at once.
    #[arg(long, default_value_t = 2)]
    pub(crate) parallel: usize,

    /// Where trial directories go (default: the system's temporary
    /// directory). Failing trials' directories are kept there.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,

    /// Write every trial, row and the summary as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,

    /// Keep every trial's directory, not only failing ones.
    #[arg(long)]
    pub(crate) keep: bool,

    /// List the scenarios and exit.
    #[arg(long)]
    pub(crate) list: bool,

    /// No progress lines on stderr.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

impl Args {
    /// The validated campaign.
    ///
    /// # Errors
    ///
    /// A refused value, described for the user.
    pub(crate) fn plan(&self) -> Result<Plan, String> {
        let all = scenario::all();
        let mut chosen: Vec<&'static str> = Vec::new();
        let matches = |pat: &str, name: &str| match pat.split_once('*') {
            Some((head, tail)) => {
                name.len() >= head.len() + tail.len()
                    && name.starts_with(head)
                    && name.ends_with(tail)
            }
            None => name == pat,
        };
        for pat in &self.scenarios {
            let found: Vec<&'static str> = all
                .iter()
                .filter(|s| matches(pat, s.name))
                .map(|s| s.name)
                .collect();
            if found.is_empty() {
                return Err(format!(
                    "--scenario {pat}: no such scenario (baton-faults --list names them all)"
                ));
            }
            for f in found {
                if !chosen.contains(&f) {
                    chosen.push(f);
                }
            }
        }
        if self.scenarios.is_empty() {
            chosen = all.iter().map(|s| s.name).collect();
        }
        for pat in &self.skip {
            if !all.iter().any(|s| matches(pat, s.name)) {
                return Err(format!("--skip {pat}: no such scenario"));
            }
            chosen.retain(|n| !matches(pat, n));
        }
        if chosen.is_empty() {
            return Err("no scenario left to run".into());
        }
        let per = match (self.per_scenario, self.trials) {
            (Some(0), _) => return Err("--per-scenario must be at least 1".into()),
            (Some(n), 0) => vec![n; chosen.len()],
            (Some(_), _) => return Err("give --trials or --per-scenario, not both".into()),
            (None, 0) => vec![1; chosen.len()],
            (None, n) => {
                let costs: Vec<u32> = chosen
                    .iter()
                    .map(|c| all.iter().find(|s| s.name == *c).map_or(1, |s| s.cost))
                    .collect();
                spread(n, &costs)
            }
        };
        if self.parallel == 0 || self.parallel > 16 {
            return Err("--parallel must be between 1 and 16".into());
        }
        let exe =
            std::env::current_exe().map_err(|e| format!("failed to find this executable: {e}"))?;
        let beside = exe.with_file_name("baton");
        // Absolute, so that jobs and hosts, whatever their directory, find them.
        let absolute = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
        let baton = absolute(self.baton.clone().unwrap_or(beside));
        let failpoints = self
            .failpoints_baton
            .clone()
            .or_else(|| default_failpoints(&exe))
            .map(absolute);
        Ok(Plan {
            scenarios: chosen.into_iter().zip(per).collect(),
            seed: self.seed.unwrap_or_else(crate::rng::kernel_seed),
            baton,
            failpoints,
            parallel: self.parallel,
            dir: self.dir.clone().unwrap_or_else(std::env::temp_dir),
            json: self.json.clone(),
            keep: self.keep,
            progress: !self.quiet,
        })
    }
}

/// `n` trials over scenarios of these costs: shares inversely proportional
/// to each cost, at least one each, adding up to at least `n`.
fn spread(n: u32, costs: &[u32]) -> Vec<u32> {
    let weights: Vec<f64> = costs.iter().map(|c| 1.0 / f64::from((*c).max(1))).collect();
    let sum: f64 = weights.iter().sum();
    let mut out: Vec<u32> = weights
        .iter()
        .map(|w| ((f64::from(n) * w / sum).floor() as u32).max(1))
        .collect();
    let mut i = 0;
    while out.iter().sum::<u32>() < n {
        let k = i % out.len();
        out[k] += 1;
        i += 1;
    }
    out
}

/// `target/faults/PROFILE/baton` for a program in `target/PROFILE/`.
fn default_failpoints(exe: &std::path::Path) -> Option<PathBuf> {
    let profile_dir = exe.parent()?;
    let profile = profile_dir.file_name()?;
    let target = profile_dir.parent()?;
    Some(target.join("faults").join(profile).join("baton"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Args::command().debug_assert();
    }

    #[test]
    fn trials_spread_evenly_and_patterns_choose_scenarios() {
        assert_eq!(spread(10, &[1, 1, 1, 1]), [3, 3, 2, 2]);
        assert_eq!(spread(2, &[1, 1, 1]), [1, 1, 1]);
        assert_eq!(spread(9, &[1, 2]), [6, 3]);
        let a =
            Args::try_parse_from(["baton-faults", "--scenario", "failpoint-renewal-*"]).unwrap();
        let p = a.plan().unwrap();
        assert!(p.scenarios.len() > 1);
        assert!(
            p.scenarios
                .iter()
                .all(|(n, k)| n.starts_with("failpoint-renewal-") && *k == 1)
        );
        let a = Args::try_parse_from(["baton-faults", "--scenario", "failpoint-*-enospc"]).unwrap();
        let p = a.plan().unwrap();
        assert!(p.scenarios.len() > 5);
        assert!(p.scenarios.iter().all(|(n, _)| n.ends_with("-enospc")));
        let bad = Args::try_parse_from(["baton-faults", "--scenario", "no-such"]).unwrap();
        assert!(bad.plan().is_err());
        assert_eq!(
            default_failpoints(std::path::Path::new("/x/target/release/baton-faults")),
            Some(PathBuf::from("/x/target/faults/release/baton"))
        );
    }
}
