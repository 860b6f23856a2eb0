//! Occurrence claims: which scheduled occurrence each job last started under
//! this lock, kept in the record (`claims=backup@1764385200,vacuum@…`) so
//! that "has this occurrence started?" is decided inside the same critical
//! section that grants the lease, and survives the release (the free marker
//! keeps it) and a lost ledger.
//!
//! A claim is a key (the scheduler's job name) and an occurrence in whole
//! seconds since 1970. An acquisition that claims an occurrence at or before
//! the one its key already holds is refused ([`crate::Outcome::Claimed`]);
//! otherwise the claim is written with the lease. The most recent claims
//! come first. Every key keeps its claim: the field holds up to
//! [`MAX_CLAIMS_BYTES`], room for hundreds of jobs sharing one lock. A claim
//! is dropped only to make room, and only a claim of a key the acquirer does
//! not name among the lock's mates (a job renamed or removed since), oldest
//! first; when the mates' claims alone do not fit, nothing is dropped and
//! the acquisition fails ([`crate::Error::ClaimsFull`]). The scheduler
//! refuses, when it loads its configuration, a lock whose jobs' claims could
//! not all fit.

use std::collections::HashSet;

use crate::value::{MAX_CLAIMS_BYTES, is_valid_value};

/// How far ahead of the judge's clock, in seconds, a claim may be and still
/// stand for every occurrence before it. Honest claims are never ahead of
/// the clock that decides them (one host's clock, or the store's), so this
/// only absorbs the skew of clocks kept by NTP; a clock stepped further
/// ahead must not hold the present back for longer than this.
pub const FUTURE_TOLERANCE: i64 = 5;

/// The suffix of the key under which a key's claim in the future is kept
/// beside its present claim (no job name holds a `~`; a build that does not
/// know it reads an unknown key's claim and refuses nothing with it).
pub const AHEAD: &str = "~ahead";

fn ahead_key(key: &str) -> String {
    format!("{key}{AHEAD}")
}

/// One job's claim: the occurrence it last started under this lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Once {
    /// Whose claim (a job name: printable ASCII, no space, `@` or `,`).
    pub key: String,
    /// The occurrence, in seconds since 1970.
    pub at: i64,
}

/// The claims a record carries, most recent first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims(Vec<Once>);

/// The longest a key may be.
pub const MAX_KEY_BYTES: usize = 128;

/// The most bytes one claim can take in the field, with its separator, for
/// a key of `key_len` bytes: the key, `@`, the occurrence (at most 13
/// characters for any second a timestamp can name) and a comma.
const fn claim_bytes(key_len: usize) -> usize {
    key_len + 1 + 13 + 1
}

impl Claims {
    /// No claims.
    pub fn new() -> Self {
        Self::default()
    }

    /// The occurrence `key` last claimed.
    pub fn get(&self, key: &str) -> Option<i64> {
        self.0.iter().find(|c| c.key == key).map(|c| c.at)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The claims, most recent first.
    pub fn iter(&self) -> impl Iterator<Item = &Once> {
        self.0.iter()
    }

    /// Whether a claim of `once` must be refused, `now` being the judge's
    /// wall clock (seconds since 1970): its key already claimed this very
    /// occurrence, or a later one that is not in the future.
    ///
    /// A claim more than [`FUTURE_TOLERANCE`] ahead of the clock was made
    /// by a process whose clock was ahead (or this clock was set back): it
    /// does not stand for the occurrences before it, which have not come
    /// yet by any honest clock, so they may still run; the occurrence it
    /// names stays claimed. Such a claim is kept beside the key's present
    /// one ([`Claims::fitted`]), so the present occurrences stay claimed in
    /// the record too; once the clock passes it, it is an ordinary claim
    /// again.
    pub fn refuses(&self, once: &Once, now: i64) -> Option<i64> {
        let (present, future) = self.split(&once.key, now);
        if let Some(p) = present.filter(|&p| p >= once.at) {
            return Some(p);
        }
        future.filter(|&f| f == once.at)
    }

    /// `key`'s present claim and its claim in the future (beyond
    /// [`FUTURE_TOLERANCE`] of `now`), from its own entry and its
    /// [`AHEAD`] entry.
    fn split(&self, key: &str, now: i64) -> (Option<i64>, Option<i64>) {
        let (mut present, mut future) = (None, None);
        for at in [self.get(key), self.get(&ahead_key(key))]
            .into_iter()
            .flatten()
        {
            if at > now.saturating_add(FUTURE_TOLERANCE) {
                future = future.max(Some(at));
            } else {
                present = present.max(Some(at));
            }
        }
        (present, future)
    }

    /// These claims with `once` first (replacing its key's earlier claim).
    /// Nothing is dropped: see [`Claims::fitted`] for what a record holds.
    pub fn with(&self, once: &Once) -> Self {
        let mut out = vec![once.clone()];
        out.extend(self.0.iter().filter(|c| c.key != once.key).cloned());
        Self(out)
    }

    /// [`Claims::with`], fitted into one record: while the claims are longer
    /// than [`MAX_CLAIMS_BYTES`], the oldest claim of a key other than
    /// `once`'s and not among `mates` is dropped. `None` when they still do
    /// not fit (the claims of `mates` alone are too long); then nothing may
    /// be written.
    pub fn fitted(&self, once: &Once, mates: &[String], now: i64) -> Option<Self> {
        // A claim never moves back. A claim in the future (see
        // [`Claims::refuses`]) is kept beside the present one, which this
        // occurrence raises.
        let (present, future) = self.split(&once.key, now);
        let ahead = ahead_key(&once.key);
        let mut c = Self(
            self.0
                .iter()
                .filter(|x| x.key != once.key && x.key != ahead)
                .cloned()
                .collect(),
        );
        let at = present.map_or(once.at, |p| p.max(once.at));
        if let Some(f) = future.filter(|&f| f > at) {
            c.0.insert(
                0,
                Once {
                    key: ahead.clone(),
                    at: f,
                },
            );
        }
        c.0.insert(
            0,
            Once {
                key: once.key.clone(),
                at,
            },
        );
        let kept = |k: &str| {
            let own = k.strip_suffix(AHEAD).unwrap_or(k);
            own == once.key || mates.iter().any(|m| m == own)
        };
        let mut len = c.rendered_len();
        while len > MAX_CLAIMS_BYTES {
            let i = c.0.iter().rposition(|x| !kept(&x.key))?;
            let gone = c.0.remove(i);
            len -= gone.key.len() + 1 + gone.at.to_string().len() + 1;
        }
        Some(c)
    }

    /// These claims with `key`'s (and its claim in the future, see
    /// [`Claims::refuses`]) as they are in `before`: what a claim that is
    /// taken back leaves. The other keys' claims stay as they are.
    pub fn restored(&self, key: &str, before: &Claims) -> Self {
        let ahead = ahead_key(key);
        let own = |c: &&Once| c.key == key || c.key == ahead;
        let mut out: Vec<Once> = before.0.iter().filter(own).cloned().collect();
        out.extend(self.0.iter().filter(|c| !own(c)).cloned());
        Self(out)
    }

    /// Whether one claim for each of these keys (given by their lengths),
    /// each at the longest occurrence a timestamp can name, fits one record:
    /// what jobs sharing a lock need so that none of their claims is ever
    /// dropped.
    pub fn room_for(key_lens: impl IntoIterator<Item = usize>) -> bool {
        let all: usize = key_lens.into_iter().map(claim_bytes).sum();
        all.saturating_sub(1) <= MAX_CLAIMS_BYTES
    }

    /// Whether `key` is a key a claim may have.
    pub fn valid_key(key: &str) -> bool {
        !key.is_empty()
            && key.len() <= MAX_KEY_BYTES
            && is_valid_value(key)
            && !key.contains(['@', ','])
    }

    /// The length of the field's value.
    fn rendered_len(&self) -> usize {
        let items: usize = self
            .0
            .iter()
            .map(|c| c.key.len() + 1 + c.at.to_string().len())
            .sum();
        items + self.0.len().saturating_sub(1)
    }

    /// The field's value; `None` when there are no claims.
    pub(crate) fn render(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| {
            self.0
                .iter()
                .map(|c| format!("{}@{}", c.key, c.at))
                .collect::<Vec<_>>()
                .join(",")
        })
    }

    /// Reads the field's value.
    pub(crate) fn parse(v: &str) -> Option<Self> {
        let mut out: Vec<Once> = Vec::new();
        let mut seen = HashSet::new();
        for item in v.split(',') {
            let (key, at) = item.rsplit_once('@')?;
            if !Self::valid_key(key) || !seen.insert(key) {
                return None;
            }
            out.push(Once {
                key: key.to_owned(),
                at: at.parse().ok()?,
            });
        }
        Some(Self(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn once(key: &str, at: i64) -> Once {
        Once {
            key: key.into(),
            at,
        }
    }

    #[test]
    fn claims_round_trip_and_the_newest_comes_first() {
        let c = Claims::new()
            .with(&once("a", 10))
            .with(&once("b", 20))
            .with(&once("a", 30));
        assert_eq!(c.render().as_deref(), Some("a@30,b@20"));
        assert_eq!(Claims::parse("a@30,b@20"), Some(c.clone()));
        assert_eq!(c.get("a"), Some(30));
        assert_eq!(c.get("c"), None);
        assert_eq!(c.rendered_len(), "a@30,b@20".len());
    }

    #[test]
    fn bad_values_do_not_parse() {
        for bad in ["", "a", "a@", "a@x", "@5", "a@1,a@2", "a b@1"] {
            assert_eq!(Claims::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn every_mate_keeps_its_claim_however_many_share_the_lock() {
        let mates: Vec<String> = (0..600)
            .map(|i| format!("{i:03}{}", "j".repeat(61)))
            .collect();
        let mut c = Claims::new();
        for (i, m) in mates.iter().enumerate() {
            c = c
                .fitted(&once(m, 1_764_385_200 + i as i64), &mates, i64::MAX)
                .unwrap();
        }
        assert_eq!(c.len(), 600);
        let r = c.render().unwrap();
        assert!(r.len() <= MAX_CLAIMS_BYTES, "{}", r.len());
        assert_eq!(Claims::parse(&r), Some(c.clone()));
        for (i, m) in mates.iter().enumerate() {
            assert_eq!(c.get(m), Some(1_764_385_200 + i as i64));
        }
    }

    #[test]
    fn only_claims_of_departed_keys_make_room_and_the_oldest_go_first() {
        let long = |p: &str, i: usize| format!("{p}{i:04}{}", "z".repeat(100));
        // Claims of keys nobody names any more fill the field.
        let mut c = Claims::new();
        let mut i = 0;
        while c.rendered_len() + claim_bytes(104) <= MAX_CLAIMS_BYTES {
            c = c.with(&once(&long("gone", i), i as i64));
            i += 1;
        }
        let departed = i;
        let mates: Vec<String> = (0..3).map(|k| long("mate", k)).collect();
        for (k, m) in mates.iter().enumerate() {
            c = c
                .fitted(&once(m, 1000 + k as i64), &mates, i64::MAX)
                .unwrap();
        }
        assert!(c.rendered_len() <= MAX_CLAIMS_BYTES);
        for (k, m) in mates.iter().enumerate() {
            assert_eq!(c.get(m), Some(1000 + k as i64));
        }
        // The oldest departed claims went; the newest stayed.
        assert_eq!(c.get(&long("gone", 0)), None);
        assert_eq!(
            c.get(&long("gone", departed - 1)),
            Some(departed as i64 - 1)
        );
        assert!(Claims::room_for(std::iter::repeat_n(64, 700)));
        assert!(!Claims::room_for(std::iter::repeat_n(64, 900)));
        // When only mates are left, nothing is dropped: no room.
        let everyone: Vec<String> = c.iter().map(|o| o.key.clone()).collect();
        assert_eq!(
            c.fitted(&once(&long("new", 0), 5), &everyone, i64::MAX),
            None
        );
    }

    #[test]
    fn only_a_claim_within_the_tolerance_stands_for_the_occurrences_before_it() {
        let now = 1_764_385_200;
        // Within the tolerance: skew of clocks kept by NTP; it claims all
        // before it, as a claim at now would.
        let near = Claims::new().with(&once("x", now + FUTURE_TOLERANCE));
        assert_eq!(
            near.refuses(&once("x", now - 1), now),
            Some(now + FUTURE_TOLERANCE)
        );
        // A clock stepped half a minute ahead holds the present back not at
        // all: only the occurrence it ran stays refused.
        let ahead = Claims::new().with(&once("x", now + 30));
        assert_eq!(ahead.refuses(&once("x", now), now), None);
        assert_eq!(ahead.refuses(&once("x", now + 30), now), Some(now + 30));
    }

    #[test]
    fn a_claim_in_the_future_is_kept_beside_the_present_one() {
        let now = 1_764_385_200;
        let future = now + 3600;
        let c = Claims::new().with(&once("x", future));
        // The occurrences before it have not come by this clock: they run.
        assert_eq!(c.refuses(&once("x", now - 60), now), None);
        let c = c.fitted(&once("x", now - 60), &[], now).unwrap();
        assert_eq!(c.get("x"), Some(now - 60));
        assert_eq!(c.get(&ahead_key("x")), Some(future));
        // The present one is claimed now; the one after it is not yet; the
        // one that ran early stays claimed.
        assert_eq!(c.refuses(&once("x", now - 60), now), Some(now - 60));
        assert_eq!(c.refuses(&once("x", now), now), None);
        assert_eq!(c.refuses(&once("x", future), now), Some(future));
        let c = c.fitted(&once("x", now), &[], now).unwrap();
        assert_eq!(c.get("x"), Some(now));
        assert_eq!(c.get(&ahead_key("x")), Some(future));
        // Once the clock reaches it, it is an ordinary claim: everything up
        // to it is claimed, and the next acquisition folds it in.
        let later = future - (FUTURE_TOLERANCE - 2);
        assert_eq!(c.refuses(&once("x", later - 10), later), Some(future));
        let c = c.fitted(&once("x", future + 60), &[], future + 60).unwrap();
        assert_eq!(c.get("x"), Some(future + 60));
        assert_eq!(c.get(&ahead_key("x")), None);
    }
}
