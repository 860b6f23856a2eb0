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
//! come first; when a lock is shared by so many jobs that their claims no
//! longer fit one field (256 bytes), the oldest are dropped, and the
//! scheduler's ledger is then the only record of them.

use crate::record::{MAX_VALUE_BYTES, is_valid_value};

/// How far ahead of the judge's clock, in seconds, a claim may be and still
/// stand for every occurrence before it.
pub const FUTURE_TOLERANCE: i64 = 60;

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
    /// names stays claimed. Once the clock passes it, it is an ordinary
    /// claim again.
    pub fn refuses(&self, once: &Once, now: i64) -> Option<i64> {
        let at = self.get(&once.key)?;
        let ahead = at > now.saturating_add(FUTURE_TOLERANCE);
        (at == once.at || (at > once.at && !ahead)).then_some(at)
    }

    /// These claims with `once` first (its key's claim the later of the
    /// two: a claim never moves back), cut to what fits one field.
    pub fn claiming(&self, once: &Once) -> Self {
        let at = self
            .get(&once.key)
            .map_or(once.at, |prior| prior.max(once.at));
        self.with(&Once {
            key: once.key.clone(),
            at,
        })
    }

    /// These claims with `once` first (replacing its key's earlier claim),
    /// cut to what fits one field.
    pub fn with(&self, once: &Once) -> Self {
        let mut out = vec![once.clone()];
        out.extend(self.0.iter().filter(|c| c.key != once.key).cloned());
        let mut c = Self(out);
        while c.render().is_some_and(|r| r.len() > MAX_VALUE_BYTES) {
            c.0.pop();
        }
        c
    }

    /// Whether `key` is a key a claim may have.
    pub fn valid_key(key: &str) -> bool {
        !key.is_empty() && key.len() <= 128 && is_valid_value(key) && !key.contains(['@', ','])
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
        for item in v.split(',') {
            let (key, at) = item.rsplit_once('@')?;
            if !Self::valid_key(key) || out.iter().any(|c| c.key == key) {
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
    }

    #[test]
    fn bad_values_do_not_parse() {
        for bad in ["", "a", "a@", "a@x", "@5", "a@1,a@2", "a b@1"] {
            assert_eq!(Claims::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_oldest_claims_go_when_they_no_longer_fit() {
        let mut c = Claims::new();
        for i in 0..40 {
            c = c.with(&once(&format!("job-number-{i:02}"), 1_764_385_200 + i));
        }
        let r = c.render().unwrap();
        assert!(r.len() <= MAX_VALUE_BYTES, "{}", r.len());
        assert_eq!(c.get("job-number-39"), Some(1_764_385_239));
        assert_eq!(c.get("job-number-00"), None);
    }
}
