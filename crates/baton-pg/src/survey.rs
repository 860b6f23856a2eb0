//! Many locks judged at once ([`Leases::inspect_each`]), as `status` shows
//! them: each lock's row read in a transaction of its own, every one of
//! them sent together on one pooled connection, so that ten locks take one
//! round trip rather than ten.
//!
//! With them, in the same round trip, whether grants are held back after
//! a switch of servers ([`Leases::survey`], `crate::switch`), or that
//! alone ([`Leases::held_back`]).
//!
//! What it never does: lock or change a row (the hold's read may record a
//! new server, as a grant would), or let one lock's failure hide another's
//! verdict.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use baton_lease::{Policy, Verdict};

use crate::error::Error;
use crate::judge;
use crate::leases::Leases;
use crate::pool::Conn;
use crate::statements::{SLOT_NAMES, ST};
use crate::switch::{self, Switch};

impl Leases {
    /// Judges each of `locks` (its name, and the policy it is judged by) as
    /// [`Leases::inspect`] does, within one deadline: `None` for a lock
    /// never taken, or whose row could not be read or judged.
    ///
    /// # Errors
    ///
    /// When no connection could be had, or the deadline passed.
    pub async fn inspect_each(
        &self,
        locks: &[(&str, Policy)],
    ) -> Result<Vec<Option<Verdict>>, Error> {
        Ok(self.survey(locks, None).await?.0)
    }

    /// As [`Leases::inspect_each`], and whether grants are held back after
    /// a switch of servers for a hold of `hold` ([`Leases::held_back`]),
    /// read in the same round trip; no hold is read without `hold`.
    ///
    /// # Errors
    ///
    /// As [`Leases::inspect_each`]; the hold's own failure is the second
    /// value's.
    pub async fn survey(
        &self,
        locks: &[(&str, Policy)],
        hold: Option<Duration>,
    ) -> Result<(Vec<Option<Verdict>>, Result<Option<Switch>, Error>), Error> {
        let (verdicts, held_back, _) = self.survey_with_slots(locks, hold, false).await?;
        Ok((verdicts, held_back))
    }

    /// Whether grants are held back now after a switch of servers, for a
    /// lock whose TTL plus takeover grace is `hold` (the longest of those
    /// asked about): when the switch was seen and when grants resume, or
    /// `None`. Like a grant, the first look at a new server records it
    /// (see `crate::switch`); nothing else is changed.
    ///
    /// # Errors
    ///
    /// When the store cannot answer, or its stamps cannot be read.
    pub async fn held_back(&self, hold: Duration) -> Result<Option<Switch>, Error> {
        self.survey(&[], Some(hold)).await?.1
    }

    /// As [`Leases::survey`], and, with `slots`, the names of every lock's
    /// slots above its first ([`Leases::slot_names`]), read in the same
    /// round trip (`None` without `slots`, or when that read failed).
    ///
    /// # Errors
    ///
    /// As [`Leases::survey`].
    pub(crate) async fn survey_with_slots(
        &self,
        locks: &[(&str, Policy)],
        hold: Option<Duration>,
        slots: bool,
    ) -> Result<Surveyed, Error> {
        let hold_ms = hold.map(switch::millis);
        let mut rows: Vec<Result<Option<tokio_postgres::Row>, tokio_postgres::Error>> = self
            .pool
            .with("read leases", async |c: &mut Conn| {
                let c = &*c;
                let mut reads: Vec<Pin<Box<dyn Future<Output = _> + '_>>> = locks
                    .iter()
                    .map(|(name, _)| {
                        Box::pin(async move { c.alone(&ST.inspect, &[name]).await })
                            as Pin<Box<dyn Future<Output = _> + '_>>
                    })
                    .collect();
                if let Some(ms) = &hold_ms {
                    reads.push(Box::pin(async move { c.alone(ST.held_back, &[ms]).await }));
                }
                if slots {
                    reads.push(Box::pin(async move { c.alone(SLOT_NAMES, &[]).await }));
                }
                Ok(InOrder::new(reads).await)
            })
            .await?;
        // OK because the names' read was pushed last.
        let names = slots
            .then(|| rows.pop().expect("the slots' row").ok().flatten())
            .flatten()
            .and_then(|row| row.try_get::<_, Vec<String>>(0).ok());
        let held_back = match hold_ms {
            // OK because the hold's read was pushed last.
            Some(_) => switch::hold_of(rows.pop().expect("the hold's row")),
            None => Ok(None),
        };
        let verdicts = locks
            .iter()
            .zip(rows)
            .map(|((name, policy), row)| {
                let row = row.ok().flatten()?;
                let record = judge::read(name, &row).ok()?;
                Some(self.clone().with_policy(*policy).judge().verdict(&record))
            })
            .collect();
        Ok((verdicts, held_back, names))
    }
}

/// What [`Leases::survey_with_slots`] read: each lock's verdict, the hold,
/// and the names of the locks' slots above their first.
pub(crate) type Surveyed = (
    Vec<Option<Verdict>>,
    Result<Option<Switch>, Error>,
    Option<Vec<String>>,
);

/// Futures polled in the order given (so statements are sent in that
/// order) until every one is over; their outputs, in that order.
struct InOrder<'a, T> {
    futures: Vec<Pin<Box<dyn Future<Output = T> + 'a>>>,
    outputs: Vec<Option<T>>,
}

impl<'a, T> InOrder<'a, T> {
    fn new(futures: Vec<Pin<Box<dyn Future<Output = T> + 'a>>>) -> Self {
        let outputs = futures.iter().map(|_| None).collect();
        Self { futures, outputs }
    }
}

// Nothing in it is pinned in place: each future is boxed.
impl<T> Unpin for InOrder<'_, T> {}

impl<T> Future for InOrder<'_, T> {
    type Output = Vec<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Vec<T>> {
        let this = &mut *self;
        let mut waiting = false;
        for (f, out) in this.futures.iter_mut().zip(this.outputs.iter_mut()) {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => waiting = true,
                }
            }
        }
        if waiting {
            return Poll::Pending;
        }
        Poll::Ready(this.outputs.drain(..).flatten().collect())
    }
}
