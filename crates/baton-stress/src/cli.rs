//! The command line, first stage: what clap parses. [`Args::config`] turns
//! it into a validated [`Config`] (second stage) before anything runs; the
//! hidden `contend` subcommand becomes the contender's [`Orders`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::config::{Config, Impl, Scenario, Timing};
use crate::contend::{Orders, Role};

const ABOUT: &str = "The instrument that proves zero double runs: N real processes (or threads) \
contend for one lock, released at one instant; every holder claims an O_EXCL witness, so two \
holders at once are seen by the kernel the moment it happens. The same experiment runs against \
baton and against transcriptions of the broken locks it replaces (the exhibits).";

const AFTER: &str = "\
Scenarios: free, stale, churn, stale-churn, threads, slow-holder, kill9-churn, sigstop.
Implementations: baton (under test); exhibits v2, v1, seed000, seed001.

With --slots N (N > 1), every lock admits N holders: each implementation's lock is N locks named
as the scheduler names a job's slots (job, job@2, ...), tried in order, and the exhibit counter (a
count of holders in a file, no mutex) joins them; the witness has N names, and an overlap is an
(N + 1)th holder. The scenarios are free, churn, slow-holder (N slow holders), kill9-churn and
sigstop (N stopped holders); there is no latency table.

With --store URL, baton contends through its PostgreSQL lease and the exhibit is shedlock (a
ShedLock-style TTL row); the scenarios are churn, slow-holder and kill9-churn, the contenders are
spread over --hosts \"hosts\", and there is no latency table (see `cargo bench -p baton-pg`).

An exhibit's race is the finding and never fails the run; an exhibit that shows none is
reported as \"the window did not open this run\".

Exit codes:
  0  baton never raced (exhibit races are reported, not failed)
  1  baton raced: two holders at once
  2  usage error: nothing ran
  3  the instrument broke while measuring baton (a contender failed, never finished, or gave up)";

/// The parsed command line.
#[derive(Debug, Parser)]
#[command(name = "baton-stress", version, about = ABOUT, after_help = AFTER)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) cmd: Option<Cmd>,

    /// Process (or thread) counts per scenario.
    #[arg(long, num_args = 1.., default_values_t = [2usize, 8, 24, 50, 100])]
    pub(crate) sizes: Vec<usize>,

    /// Acquire/release rounds per process in the churn scenarios.
    #[arg(long, default_value_t = 20)]
    pub(crate) rounds: u32,

    /// Implementations to exercise (space- or comma-separated; default: baton
    /// v2 v1 seed000 seed001, or with --store: baton shedlock).
    #[arg(long, num_args = 1.., value_delimiter = ',')]
    pub(crate) impls: Vec<Impl>,

    /// Scenarios to run (space- or comma-separated; default: all).
    #[arg(long, num_args = 1.., value_delimiter = ',')]
    pub(crate) scenarios: Vec<Scenario>,

    /// Times to repeat every scenario. A race is a probability, not an event.
    #[arg(long, default_value_t = 1)]
    pub(crate) repeat: u32,

    /// Write every record as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,

    /// Skip the latency table.
    #[arg(long)]
    pub(crate) skip_latency: bool,

    /// Iterations of the latency table.
    #[arg(long, default_value_t = 2000)]
    pub(crate) latency_iterations: u32,

    /// Where trial directories go (default: the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,

    /// Seconds a trial may run before its stragglers count as never finished.
    #[arg(long, default_value_t = 180)]
    pub(crate) trial_timeout_s: u64,

    /// No progress lines on stderr.
    #[arg(long, short)]
    pub(crate) quiet: bool,

    /// Contend in the PostgreSQL database at URL instead of lock files.
    /// baton's contenders prepare their statements once per connection when
    /// BATON_STORE_PREPARE is `true` (as `[store] prepare = true` does).
    #[arg(long, value_name = "URL")]
    pub(crate) store: Option<String>,

    /// With --store: how many "hosts" the contenders are spread over (host 0
    /// is this machine; the others have their own host name and boot id).
    #[arg(long, default_value_t = 3)]
    pub(crate) hosts: usize,

    /// How many holders every lock admits at once: N slots, each
    /// implementation's lock tried over N names in order (1: one holder).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub(crate) slots: u32,

    #[command(flatten)]
    pub(crate) timing: TimingArgs,
}

/// The time scale (milliseconds, so that scenarios finish quickly).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TimingArgs {
    /// baton's lease TTL.
    #[arg(long, default_value_t = 200)]
    pub(crate) ttl_ms: u64,
    /// How often a baton holder renews.
    #[arg(long, default_value_t = 60)]
    pub(crate) renew_ms: u64,
    /// v1's and v2's STEP_TIMEOUT (stale after twice it).
    #[arg(long, default_value_t = 100)]
    pub(crate) step_timeout_ms: u64,
    /// The seed stores' max runtime (their lock's TTL).
    #[arg(long, default_value_t = 100)]
    pub(crate) seed_ttl_ms: u64,
    /// How long contenders try against a slow or stopped holder.
    #[arg(long, default_value_t = 1000)]
    pub(crate) hold_ms: u64,
    /// How often they try.
    #[arg(long, default_value_t = 20)]
    pub(crate) poll_ms: u64,
    /// With --store: how long past its TTL a judge on another host respects a
    /// lease that is no longer renewed.
    #[arg(long, default_value_t = 1000)]
    pub(crate) grace_ms: u64,
}

impl TimingArgs {
    fn timing(&self) -> Result<Timing, String> {
        let ms = Duration::from_millis;
        let t = Timing {
            baton_ttl: ms(self.ttl_ms),
            baton_renew: ms(self.renew_ms),
            step_timeout: ms(self.step_timeout_ms),
            seed_ttl: ms(self.seed_ttl_ms),
            hold_for: ms(self.hold_ms),
            poll: ms(self.poll_ms),
            takeover_grace: ms(self.grace_ms),
        };
        if t.baton_renew.is_zero() || t.baton_renew * 2 > t.baton_ttl {
            return Err(format!(
                "--renew-ms {} must be positive and at most half of --ttl-ms {}",
                self.renew_ms, self.ttl_ms
            ));
        }
        if t.step_timeout.is_zero() || t.seed_ttl.is_zero() || t.poll.is_zero() {
            return Err("--step-timeout-ms, --seed-ttl-ms and --poll-ms must be positive".into());
        }
        if t.hold_for < t.baton_ttl * 2 {
            return Err(format!(
                "--hold-ms {} must span at least two baton TTLs ({} ms)",
                self.hold_ms,
                self.ttl_ms * 2
            ));
        }
        Ok(t)
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// One contender (the campaign runs this; not for people).
    #[command(hide = true)]
    Contend(ContendArgs),
}

/// The contender's arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ContendArgs {
    /// The implementation.
    #[arg(long = "impl")]
    pub(crate) imp: Impl,
    /// The role.
    #[arg(long)]
    pub(crate) role: Role,
    /// The trial directory.
    #[arg(long)]
    pub(crate) dir: PathBuf,
    /// Rounds (churn).
    #[arg(long, default_value_t = 1)]
    pub(crate) rounds: u32,
    /// Threads (threads).
    #[arg(long, default_value_t = 2)]
    pub(crate) threads: usize,
    /// Start at this boot-clock millisecond instead of reading `go T`.
    #[arg(long)]
    pub(crate) start_at_ms: Option<u64>,
    /// Give up a churn round after this long.
    #[arg(long, default_value_t = 120_000)]
    pub(crate) give_up_ms: u64,
    /// Contend in the PostgreSQL database at this URL.
    #[arg(long)]
    pub(crate) store: Option<String>,
    /// The host this contender stands on (with --store).
    #[arg(long, default_value_t = 0)]
    pub(crate) host: usize,
    /// How many holders the lock admits.
    #[arg(long, default_value_t = 1)]
    pub(crate) slots: u32,
    #[command(flatten)]
    pub(crate) timing: TimingArgs,
}

impl ContendArgs {
    /// The contender's orders.
    ///
    /// # Errors
    ///
    /// An invalid time scale.
    pub(crate) fn orders(&self) -> Result<Orders, String> {
        match (&self.store, self.imp) {
            (None, Impl::Shedlock) => return Err("shedlock contends only in a store".into()),
            (Some(_), i) if !i.in_store() => {
                return Err(format!("{} does not contend in a store", i.name()));
            }
            _ => {}
        }
        Ok(Orders {
            imp: self.imp,
            role: self.role,
            dir: self.dir.clone(),
            rounds: self.rounds,
            threads: self.threads,
            start_at: self.start_at_ms.map(Duration::from_millis),
            give_up: Duration::from_millis(self.give_up_ms),
            timing: self.timing.timing()?,
            store: self.store.clone(),
            host: self.host,
            slots: self.slots.max(1),
        })
    }
}

impl Args {
    /// The validated campaign. `dir` is the directory trials will use
    /// (created by the caller).
    ///
    /// # Errors
    ///
    /// A refused value, described for the user.
    pub(crate) fn config(&self, dir: PathBuf) -> Result<Config, String> {
        if self.sizes.is_empty() || self.sizes.iter().any(|&n| n == 0 || n > 1000) {
            return Err("--sizes: every size must be between 1 and 1000".into());
        }
        if self.rounds == 0 {
            return Err("--rounds must be at least 1".into());
        }
        if self.repeat == 0 {
            return Err("--repeat must be at least 1".into());
        }
        if self.trial_timeout_s == 0 {
            return Err("--trial-timeout-s must be at least 1".into());
        }
        if self.slots == 0 || self.slots > MAX_SLOTS {
            return Err(format!("--slots must be between 1 and {MAX_SLOTS}"));
        }
        let slotted = self.slots > 1;
        let store = self.store.is_some();
        if store && slotted {
            return Err(
                "--slots with --store: the N-slot scenarios contend in lock files; \
                 drop one of the two"
                    .into(),
            );
        }
        let wanted = match (self.impls.is_empty(), store) {
            (false, _) => &self.impls[..],
            (true, false) if slotted => &Impl::SLOTS[..],
            (true, false) => &Impl::FILE[..],
            (true, true) => &Impl::STORE[..],
        };
        let mut impls = Vec::new();
        for &i in wanted {
            if store && !i.in_store() {
                return Err(format!(
                    "--impls {}: with --store the implementations are baton and shedlock",
                    i.name()
                ));
            }
            if !store && i == Impl::Shedlock {
                return Err("--impls shedlock contends in PostgreSQL: give --store URL".into());
            }
            if !slotted && i.slots_only() {
                return Err(format!(
                    "--impls {}: it bounds N holders at once; give --slots N (2 or more)",
                    i.name()
                ));
            }
            if !impls.contains(&i) {
                impls.push(i);
            }
        }
        let wanted = match (self.scenarios.is_empty(), store) {
            (false, _) => &self.scenarios[..],
            (true, false) if slotted => &Scenario::SLOTS[..],
            (true, false) => &Scenario::ALL[..],
            (true, true) => &Scenario::STORE[..],
        };
        if slotted && let Some(s) = wanted.iter().find(|s| !Scenario::SLOTS.contains(s)) {
            return Err(format!(
                "--scenarios {}: with --slots the scenarios are free, churn, slow-holder, \
                 kill9-churn and sigstop (the stale starts and threads have no N-slot form)",
                s.label()
            ));
        }
        if store && let Some(s) = wanted.iter().find(|s| !Scenario::STORE.contains(s)) {
            return Err(format!(
                "--scenarios {}: with --store the scenarios are churn, slow-holder and \
                 kill9-churn (the others need the file store)",
                s.label()
            ));
        }
        let mut scenarios = Vec::new();
        for s in Scenario::ALL {
            if wanted.contains(&s) {
                scenarios.push(s);
            }
        }
        if self.hosts == 0 || self.hosts > 64 {
            return Err("--hosts must be between 1 and 64".into());
        }
        Ok(Config {
            sizes: self.sizes.clone(),
            rounds: self.rounds,
            impls,
            scenarios,
            repeat: self.repeat,
            json: self.json.clone(),
            // The latency table measures the file locks; the store's cycle
            // is measured by `cargo bench -p baton-pg`.
            // With slots, the cycle measured would be the first slot's: the
            // same as without.
            latency: (!self.skip_latency && !store && !slotted)
                .then_some(self.latency_iterations.max(1)),
            dir,
            timing: self.timing.timing()?,
            trial_timeout: Duration::from_secs(self.trial_timeout_s),
            progress: !self.quiet,
            store: self.store.clone(),
            hosts: self.hosts,
            slots: self.slots,
        })
    }
}

/// The most slots `--slots` takes.
const MAX_SLOTS: u32 = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Args::command().debug_assert();
    }

    #[test]
    fn the_defaults_are_the_guides() {
        let a = Args::try_parse_from(["baton-stress"]).unwrap();
        let c = a.config("/tmp/x".into()).unwrap();
        assert_eq!(c.sizes, [2, 8, 24, 50, 100]);
        assert_eq!(c.rounds, 20);
        assert_eq!(c.repeat, 1);
        assert_eq!(c.impls, Impl::FILE);
        assert_eq!(c.scenarios, Scenario::ALL);
        assert_eq!(c.latency, Some(2000));
    }

    #[test]
    fn lists_take_spaces_or_commas_and_bad_values_are_refused() {
        let a = Args::try_parse_from([
            "baton-stress",
            "--sizes",
            "2",
            "8",
            "--impls",
            "v2,baton",
            "--scenarios",
            "churn",
            "free",
            "--skip-latency",
        ])
        .unwrap();
        let c = a.config("/tmp/x".into()).unwrap();
        assert_eq!(c.sizes, [2, 8]);
        assert_eq!(c.impls, [Impl::V2, Impl::Baton]);
        assert_eq!(c.scenarios, [Scenario::Free, Scenario::Churn]);
        assert_eq!(c.latency, None);
        assert!(Args::try_parse_from(["baton-stress", "--impls", "v9"]).is_err());
        let zero = Args::try_parse_from(["baton-stress", "--sizes", "0"]).unwrap();
        assert!(zero.config("/tmp/x".into()).is_err());
        let slow = Args::try_parse_from(["baton-stress", "--renew-ms", "150"]).unwrap();
        assert!(slow.config("/tmp/x".into()).is_err());
    }

    #[test]
    fn slots_bring_the_counter_and_refuse_what_has_no_n_slot_form() {
        let c = Args::try_parse_from(["baton-stress"])
            .unwrap()
            .config("/tmp/x".into())
            .unwrap();
        assert_eq!(c.slots, 1);
        let a = Args::try_parse_from(["baton-stress", "--slots", "3"]).unwrap();
        let c = a.config("/tmp/x".into()).unwrap();
        assert_eq!(c.slots, 3);
        assert_eq!(c.impls, Impl::SLOTS);
        assert_eq!(c.scenarios, Scenario::SLOTS);
        assert_eq!(c.latency, None);
        for bad in [
            &["--slots", "0"][..],
            &["--slots", "65"][..],
            &["--impls", "counter"][..],
            &["--slots", "2", "--scenarios", "threads"][..],
            &["--slots", "2", "--store", "postgres://x@y/z"][..],
        ] {
            let a =
                Args::try_parse_from(std::iter::once("baton-stress").chain(bad.iter().copied()))
                    .unwrap();
            assert!(a.config("/tmp/x".into()).is_err(), "{bad:?}");
        }
    }
}
