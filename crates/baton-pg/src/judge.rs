//! Turns a lease row into what `baton_lease::decide` judges, and judges it.
//!
//! The row is read as the file lock's record would be: a free row is a free
//! marker, a held row a v3 lease with the holder's facts. `decide` is reused
//! unchanged, with the server's clock as the judgement's wall clock and the
//! row's stamps (all the server's) as the holder's: a judge on the holder's
//! kernel and pid namespace decides by evidence (process alive, job group
//! empty, machine rebooted), and any other judge by the renewal's age plus
//! the takeover grace, both read on the server's clock, or on the judge's
//! own wall clock when that is behind the server's (so a server's clock
//! stepped forward never lapses a live lease: [`Judge::verdict`]). A row
//! this build cannot read is refused, never broken.

use std::time::Duration;

use baton_lease::decide::decide;
use baton_lease::record::{Body, Free, Held};
use baton_lease::{Claims, Clock, Fence, Liveness, Now, Observer, Policy, Token, Verdict};
use jiff::Timestamp;
use tokio_postgres::Row;

use crate::error::Error;
use crate::statements::col;

/// A lease row as read under its row lock.
#[derive(Debug)]
pub(crate) struct Seen {
    pub(crate) body: Body,
    /// The server's clock when the row was read.
    pub(crate) now: Timestamp,
}

/// Everything a judgement needs besides the row.
pub(crate) struct Judge<'a> {
    pub(crate) observer: &'a Observer,
    pub(crate) policy: &'a Policy,
    pub(crate) liveness: &'a dyn Liveness,
    pub(crate) clock: &'a dyn Clock,
}

impl Judge<'_> {
    pub(crate) fn verdict(&self, seen: &Seen) -> Verdict {
        // The server's clock judges, but never ahead of this host's: a
        // server whose clock stepped forward (an NTP step, a resumed
        // machine) would otherwise make every live lease look lapsed at
        // once, before its holders' next renewals. Behind the server, this
        // host waits longer before it takes over a lapsed lease (by as
        // much as it is behind); it never takes one over sooner.
        let now = Now {
            wall: seen.now.min(self.clock.wall()),
            boot: self.clock.boot(),
        };
        decide(
            Some(&seen.body),
            None,
            self.observer,
            now,
            self.policy,
            self.liveness,
        )
    }
}

/// Reads a row returned by the select statement.
pub(crate) fn read(name: &str, row: &Row) -> Result<Seen, Error> {
    read_at(name, row, 0)
}

/// Reads the select statement's columns from `row`, where they start at
/// column `base` (a statement that returns them after columns of its own).
pub(crate) fn read_at(name: &str, row: &Row, base: usize) -> Result<Seen, Error> {
    let corrupt = |why: String| Error::Corrupt {
        name: name.to_owned(),
        why,
    };
    let stamp = |i: usize| -> Result<Option<Timestamp>, Error> {
        row.get::<_, Option<i64>>(i)
            .map(|us| Timestamp::from_microsecond(us).map_err(|e| corrupt(e.to_string())))
            .transpose()
    };
    let now = stamp(base + col::NOW)?.ok_or_else(|| corrupt("no server time".to_owned()))?;
    let fence = u64::try_from(row.get::<_, i64>(base + col::FENCE))
        .map(Fence::new)
        .map_err(|_| corrupt("a negative fence".to_owned()))?;
    let state: &str = row.get(base + col::STATE);
    let body = match state {
        "free" => Body::Free(Free {
            version: baton_lease::record::VERSION,
            fence: Some(fence),
            released: stamp(base + col::RELEASED)?,
            occ: None,
            claims: claims(row.get(base + col::CLAIMS)),
        }),
        "held" => held(
            row,
            base,
            fence,
            stamp(base + col::ACQUIRED)?,
            stamp(base + col::RENEWED)?,
        ),
        other => Body::Unreadable(format!("state {other:?}")),
    };
    Ok(Seen { body, now })
}

fn held(
    row: &Row,
    base: usize,
    fence: Fence,
    acquired: Option<Timestamp>,
    renewed: Option<Timestamp>,
) -> Body {
    let token = row
        .get::<_, Option<&str>>(base + col::TOKEN)
        .and_then(|t| t.parse::<Token>().ok());
    let ttl = row
        .get::<_, Option<i64>>(base + col::TTL_MS)
        .and_then(|ms| u64::try_from(ms).ok())
        .map(Duration::from_millis);
    let pid = row
        .get::<_, Option<i32>>(base + col::PID)
        .and_then(|p| u32::try_from(p).ok());
    let (Some(token), Some(ttl), Some(renewed), Some(pid)) = (token, ttl, renewed, pid) else {
        return Body::Unreadable("a held lease without a token, TTL, renewal or pid".to_owned());
    };
    let unsigned = |i: usize| {
        row.get::<_, Option<i64>>(i)
            .and_then(|v| u64::try_from(v).ok())
    };
    let ms = |i: usize| unsigned(i).map(Duration::from_millis);
    Body::Held(Held {
        fence,
        token,
        pid,
        host: row
            .get::<_, Option<String>>(base + col::HOST)
            .unwrap_or_default(),
        acquired: acquired.unwrap_or(renewed),
        renewed,
        ttl,
        run: row.get(base + col::RUN),
        machine: row.get(base + col::MACHINE),
        boot: row.get(base + col::BOOT),
        pidns: unsigned(base + col::PIDNS),
        pstart: unsigned(base + col::PSTART),
        renewed_boot: ms(base + col::RENEWED_BOOT_MS),
        pgid: row
            .get::<_, Option<i32>>(base + col::PGID)
            .and_then(|p| u32::try_from(p).ok()),
        jstart: unsigned(base + col::JSTART),
        // No column keeps either (a schema change would): a contained
        // step's group is judged as any other's, by its members.
        leader: baton_lease::Leader::Command,
        uid: None,
        grace: ms(base + col::GRACE_MS),
        occ: None,
        exe: None,
        budget: None,
        claims: claims(row.get(base + col::CLAIMS)),
    })
}

/// The claims column as the scheduler reads a record's: each job's latest
/// claimed occurrence. A pair this build cannot read is left out (a claim
/// missing from the judgement only makes a tick report the holder busy).
fn claims(text: Option<&str>) -> Claims {
    let mut out = Claims::new();
    for pair in text.unwrap_or_default().split(',') {
        if let Some((key, at)) = pair.rsplit_once('@')
            && let Ok(at) = at.parse::<i64>()
        {
            out = out.with(&baton_lease::Once {
                key: key.to_owned(),
                at,
            });
        }
    }
    out
}
