//! An occurrence a scheduler decided to start and could not: the process
//! that would run it could not be made (the system refused a fork, a pipe
//! or an exec: out of file descriptors or processes).
//!
//! [`record`] records it missed (`start-failed`) and alerts it (`missed`),
//! once, as the occurrence's one decision. Left undecided, the next tick
//! would find a later occurrence due and record it `superseded`, which
//! says a later one ran in its place, not that the scheduler could not
//! run it. An occurrence the ledger decided meanwhile (another process
//! ran it, or recorded it) is left as it is. Nothing here starts a run.

use std::sync::Arc;

use baton_lease::Clock;
use baton_store::ledger::{Miss, Missed, Records};
use baton_store::words::{AlertKind, MissReason};

use crate::config::Config;
use crate::engine::alerts::{Alert, MissedInfo};
use crate::engine::run::occurrence_text;
use crate::engine::surfaces::Surfaces;
use crate::engine::webhook::Delivery;

/// What [`record`] did, and what it hands back.
#[derive(Debug)]
pub struct Recorded {
    /// Whether the miss is the ledger's decision now (recorded here, and
    /// alerted); false when the ledger had decided the occurrence already,
    /// or could not be written (said on stderr and in the envelope log).
    pub missed: bool,
    /// The alert's webhook deliveries, held for the caller to post
    /// ([`crate::ops::tick::post_held`]).
    pub webhooks: Vec<Delivery>,
}

/// Records that `job`'s occurrence `at` could not be started (`why`: what
/// the system refused), on the ledger already open (`ledger`, handed back)
/// or one opened here; see the module's documentation.
pub fn record(
    config: &Config,
    clock: &Arc<dyn Clock>,
    (job, at): (&str, i64),
    why: &str,
    ledger: Option<Box<dyn Records>>,
) -> (Recorded, Option<Box<dyn Records>>) {
    let mut s = Surfaces::open_holding(config, Arc::clone(clock), ledger);
    let now = s.now();
    let occurrence = occurrence_text(Some(at));
    let reason = MissReason::StartFailed;
    let detail = format!("the process that runs it could not be started: {why}");
    let miss = Miss {
        job,
        reason,
        first: at,
        last: at,
        count: 1,
        at_least: false,
        detail: Some(&detail),
        streak: false,
    };
    let (missed, alert) = match s.ledger(|l| l.miss(&miss, now)) {
        Some(Missed::Recorded) => (true, true),
        // Not asked for (no streak), and quiet by the ledger's contract.
        Some(Missed::Extended) => (true, false),
        // Decided elsewhere: that decision stands.
        Some(Missed::Moved) => (false, false),
        None => {
            // Said by the ledger's surface; the next tick decides it.
            s.warn(&format!(
                "{job}: occurrence {occurrence} not run: {detail}; the ledger could not record \
                 it missed"
            ));
            (false, false)
        }
    };
    if alert {
        let (lock, name) = match config.jobs.get(job) {
            Some(j) => (
                crate::engine::request::lock_label(config, j),
                j.lock.value.clone(),
            ),
            None => (String::new(), String::new()),
        };
        s.alert(&Alert {
            kind: AlertKind::Missed,
            job: job.to_owned(),
            occurrence: Some(occurrence.clone()),
            run_id: None,
            lock,
            name,
            holder: None,
            fence: None,
            time: now.to_string(),
            step: None,
            message: format!("{job}: occurrence {occurrence} missed ({reason}): {detail}"),
            status: None,
            reason: Some(reason.to_string()),
            missed: Some(MissedInfo::one(&occurrence, reason)),
        });
    }
    let webhooks = s.take_held();
    let ledger = s.into_ledger();
    (Recorded { missed, webhooks }, ledger)
}
