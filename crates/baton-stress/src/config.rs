//! The validated configuration: what the parsed command line becomes before
//! anything runs (the second of the CLI's two stages). Everything downstream
//! takes these types, never clap's.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A lock implementation the instrument can drive.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Impl {
    /// baton-lease: the implementation under test.
    Baton,
    /// Scheduler Lock v2 (exhibit).
    V2,
    /// Scheduler Lock v1 (exhibit).
    V1,
    /// The seed 000 store (exhibit).
    Seed000,
    /// The seed 001 lock (exhibit).
    Seed001,
    /// A ShedLock-style TTL row in PostgreSQL (exhibit; `--store` only).
    Shedlock,
    /// A count of holders in a file, read, checked and rewritten with no
    /// mutex (exhibit; `--slots N` only).
    Counter,
}

impl Impl {
    /// The file store's implementations, in report order (the default).
    pub(crate) const FILE: [Impl; 5] = [
        Self::Baton,
        Self::V2,
        Self::V1,
        Self::Seed000,
        Self::Seed001,
    ];

    /// The PostgreSQL store's implementations, in report order (the default
    /// with `--store`).
    pub(crate) const STORE: [Impl; 2] = [Self::Baton, Self::Shedlock];

    /// The implementations of an N-slot campaign, in report order (the
    /// default with `--slots N`, N > 1): the file store's, each tried over N
    /// locks, and the exhibit that is N-slot by nature.
    pub(crate) const SLOTS: [Impl; 6] = [
        Self::Baton,
        Self::V2,
        Self::V1,
        Self::Seed000,
        Self::Seed001,
        Self::Counter,
    ];

    /// Whether this implementation contends in PostgreSQL with `--store`.
    pub(crate) fn in_store(self) -> bool {
        Self::STORE.contains(&self)
    }

    /// The command-line name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Baton => "baton",
            Self::V2 => "v2",
            Self::V1 => "v1",
            Self::Seed000 => "seed000",
            Self::Seed001 => "seed001",
            Self::Shedlock => "shedlock",
            Self::Counter => "counter",
        }
    }

    /// The table heading.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Self::Baton => "baton (v3: lease under flock, renewal, evidence of death)",
            Self::V2 => "v2 (exhibit: flock + token, stale after 2 × step timeout)",
            Self::V1 => "v1 (exhibit: stat → judge → unlink → O_EXCL, no mutex)",
            Self::Seed000 => "seed 000 (exhibit: unlocked JSON check-then-set, fixed temp path)",
            Self::Seed001 => {
                "seed 001 (exhibit: mutex, but TTL reclaim with no renewal or liveness)"
            }
            Self::Shedlock => "shedlock (exhibit: lock_until row, conditional UPDATE, no renewal)",
            Self::Counter => {
                "counter (exhibit: a count of holders in a file, read → check → rewrite, no mutex)"
            }
        }
    }

    /// The table heading when the campaign contends in PostgreSQL.
    pub(crate) fn store_title(self) -> &'static str {
        match self {
            Self::Baton => {
                "baton (lease in PostgreSQL: renewal; evidence on its host, renewal age + grace elsewhere)"
            }
            other => other.title(),
        }
    }

    /// The defect an exhibit demonstrates (empty for baton).
    pub(crate) fn defect(self) -> &'static str {
        match self {
            Self::Baton => "",
            Self::V2 => "a live run past the stale threshold is reclaimed",
            Self::V1 => "breaking a stale lock is four unserialised syscalls",
            Self::Seed000 => "nothing serialises load → check → save",
            Self::Seed001 => "a slow live run's lock is reclaimed on TTL expiry",
            Self::Shedlock => "a run longer than lockAtMostFor is reclaimed while it runs",
            Self::Counter => "nothing serialises read → check → rewrite of the count",
        }
    }

    /// Whether this implementation is a bound of N holders by itself, and so
    /// runs only with `--slots N`.
    pub(crate) fn slots_only(self) -> bool {
        self == Self::Counter
    }

    /// Whether this implementation is known to wedge, never to free a slot
    /// again, once a holder dies without giving its slot back: a churner that
    /// waits in vain reports the defect instead of giving up.
    pub(crate) fn wedges(self) -> bool {
        self == Self::Counter
    }

    /// Whether this is the implementation under test.
    pub(crate) fn is_baton(self) -> bool {
        self == Self::Baton
    }
}

/// A scenario: one experiment, run the same way against every implementation.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Scenario {
    /// N processes decide at one instant on a free lock.
    Free,
    /// N processes decide at one instant on a dead holder's lease.
    Stale,
    /// N processes × R acquire/release rounds.
    Churn,
    /// Churn starting from a dead holder's lease.
    StaleChurn,
    /// N threads of one process decide at one instant (seed 000).
    Threads,
    /// A live holder that keeps running (and renewing) past many TTLs while
    /// N processes keep trying (seed 001).
    SlowHolder,
    /// Churn while the parent kills random contenders with `kill -9`.
    #[value(name = "kill9-churn")]
    #[serde(rename = "kill9-churn")]
    Kill9Churn,
    /// A holder stopped with SIGSTOP past several TTLs while N processes try.
    Sigstop,
}

impl Scenario {
    /// Every scenario, in report order.
    pub(crate) const ALL: [Scenario; 8] = [
        Self::Free,
        Self::Stale,
        Self::Churn,
        Self::StaleChurn,
        Self::Threads,
        Self::SlowHolder,
        Self::Kill9Churn,
        Self::Sigstop,
    ];

    /// The table label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Free => "free lock",
            Self::Stale => "stale recovery",
            Self::Churn => "sustained churn",
            Self::StaleChurn => "stale + churn",
            Self::Threads => "threads",
            Self::SlowHolder => "slow live holder",
            Self::Kill9Churn => "kill -9 churn",
            Self::Sigstop => "SIGSTOPped holder",
        }
    }

    /// Whether contenders run R acquire/release rounds.
    pub(crate) fn churns(self) -> bool {
        matches!(self, Self::Churn | Self::StaleChurn | Self::Kill9Churn)
    }

    /// The scenarios `--store` runs, in report order (its default).
    pub(crate) const STORE: [Scenario; 3] = [Self::Churn, Self::SlowHolder, Self::Kill9Churn];

    /// The scenarios `--slots N` (N > 1) runs, in report order (its
    /// default): the stale starts and the threads scenario have no N-slot
    /// form.
    pub(crate) const SLOTS: [Scenario; 5] = [
        Self::Free,
        Self::Churn,
        Self::SlowHolder,
        Self::Kill9Churn,
        Self::Sigstop,
    ];

    /// Whether the trial starts from a dead holder's lease.
    pub(crate) fn starts_stale(self) -> bool {
        matches!(self, Self::Stale | Self::StaleChurn)
    }
}

/// The time scale every lock is run at (milliseconds, so a campaign ends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Timing {
    /// baton's lease TTL.
    pub(crate) baton_ttl: Duration,
    /// How often a baton holder renews.
    pub(crate) baton_renew: Duration,
    /// v1's and v2's `STEP_TIMEOUT`; both judge stale after twice it.
    pub(crate) step_timeout: Duration,
    /// The seed stores' `max_runtime` (their lock's TTL).
    pub(crate) seed_ttl: Duration,
    /// How long contenders keep trying against a long holder.
    pub(crate) hold_for: Duration,
    /// How often they try.
    pub(crate) poll: Duration,
    /// In the store: how long past its TTL a judge on another host respects
    /// a lease whose renewal has stopped.
    pub(crate) takeover_grace: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            baton_ttl: Duration::from_millis(200),
            baton_renew: Duration::from_millis(60),
            step_timeout: Duration::from_millis(100),
            seed_ttl: Duration::from_millis(100),
            hold_for: Duration::from_millis(1000),
            poll: Duration::from_millis(20),
            takeover_grace: crate::store::DEFAULT_GRACE,
        }
    }
}

impl Timing {
    /// v1's and v2's stale threshold.
    pub(crate) fn stale_after(&self) -> Duration {
        self.step_timeout * 2
    }
}

/// A campaign, validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Config {
    /// Process (or thread) counts.
    pub(crate) sizes: Vec<usize>,
    /// Rounds per contender in the churn scenarios.
    pub(crate) rounds: u32,
    /// Implementations, in report order.
    pub(crate) impls: Vec<Impl>,
    /// Scenarios, in report order.
    pub(crate) scenarios: Vec<Scenario>,
    /// Trials per (implementation, scenario, size).
    pub(crate) repeat: u32,
    /// Where to write the JSON record.
    pub(crate) json: Option<PathBuf>,
    /// Latency iterations; `None` skips the latency table.
    pub(crate) latency: Option<u32>,
    /// The parent directory for trial directories.
    pub(crate) dir: PathBuf,
    /// The time scale.
    pub(crate) timing: Timing,
    /// How long a trial may take before its stragglers are killed and
    /// counted as never finished.
    pub(crate) trial_timeout: Duration,
    /// Whether to print a progress line per row on stderr.
    pub(crate) progress: bool,
    /// The PostgreSQL store every implementation contends in, when given;
    /// recorded with its password hidden.
    #[serde(serialize_with = "redacted")]
    pub(crate) store: Option<String>,
    /// In the store: how many hosts the contenders are spread over.
    pub(crate) hosts: usize,
    /// How many holders the lock admits at once: 1, or N slots, each
    /// implementation's lock tried over N names in order. Recorded only
    /// when more than 1.
    #[serde(skip_serializing_if = "one")]
    pub(crate) slots: u32,
}

/// Whether a slot count is 1 (the records of a one-slot campaign are as
/// they were before slots).
pub(crate) fn one(n: &u32) -> bool {
    *n == 1
}

fn redacted<S: serde::Serializer>(url: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match url {
        Some(u) => s.serialize_some(&crate::store::redact(u)),
        None => s.serialize_none(),
    }
}
