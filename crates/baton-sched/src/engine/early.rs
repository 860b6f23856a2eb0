//! A run's first attempt made before its start is recorded: spawned and
//! held at its gate ([`baton_runner::Session::prepare`]), so that a store
//! names its process group with the start's own record, in that record's
//! round trip, rather than in one of its own. This module owns only the
//! making of it; it never runs it (the run's steps do, once the start is
//! recorded) and never lets it run when the run does not start: dropped,
//! the held step is killed before its command ran.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use baton_runner::{Session, StepResult};
use jiff::Timestamp;

use crate::config::Step;
use crate::engine::request::Request;
use crate::engine::step_spec::step_spec;
use crate::engine::surfaces::Surfaces;
use crate::engine::trace::{RunTrace, TraceParent};
use crate::state::output::{Captured, OutputSink, slot_tag};

/// A run's first attempt, spawned and held at its gate before the run's
/// start is recorded ([`Session::prepare`]): when it was made (its log's
/// stamp), its output's summary, its span, and the held step (or why it
/// could not be made). Dropped unused, the held step is killed unrun.
pub(crate) struct Early {
    pub(crate) step: String,
    pub(crate) at: Timestamp,
    pub(crate) captured: Arc<Mutex<Option<Captured>>>,
    pub(crate) span: Option<TraceParent>,
    pub(crate) prepared: Result<baton_runner::Prepared, Box<StepResult>>,
}

impl Early {
    pub(crate) fn prepare(
        req: &Request<'_>,
        env: &[(String, String)],
        step: &Step,
        trace: Option<&RunTrace>,
        slot: u32,
        session: &mut Session<'_>,
        surfaces: &Rc<RefCell<Surfaces>>,
    ) -> Self {
        let (logs, at) = {
            let s = surfaces.borrow();
            (s.logs.clone(), s.now())
        };
        let limit = step.output_limit.value;
        let (sink, captured) = OutputSink::new(logs, &req.job.name, at, limit, req.tee);
        let sink = sink.tagged(slot_tag(req.job.policy.max_concurrent.value, slot));
        let span = trace.and_then(|t| t.child().ok());
        let spec = step_spec(req, env, step, 1, sink, span);
        Self {
            step: step.name.clone(),
            at,
            captured,
            span,
            prepared: session.prepare(spec),
        }
    }
}
