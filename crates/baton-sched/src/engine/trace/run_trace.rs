//! The spans of one run, gathered while it runs and handed over whole when
//! it ends: one span for the run, a child of it for each attempt of a step
//! and for each check. Nothing here reads a clock or sends anything: the
//! times are given ([`crate::engine::steps`] reads them from the run's
//! clock) and the spans go to [`super::export`].
//!
//! The run's span is a child of the context the process was started with
//! when it holds one ([`super::TraceParent::from_env`]), else the root of a
//! trace of its own. An attempt's span id is drawn before the attempt
//! starts, so that its command finds it in `TRACEPARENT` and its own spans
//! are its children.

use jiff::Timestamp;

use super::context::{SpanId, TraceId, TraceParent};

/// An attribute's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attr {
    /// A string.
    Str(String),
    /// A whole number.
    Int(i64),
}

impl From<&str> for Attr {
    fn from(s: &str) -> Self {
        Attr::Str(s.to_owned())
    }
}

impl From<String> for Attr {
    fn from(s: String) -> Self {
        Attr::Str(s)
    }
}

impl From<i64> for Attr {
    fn from(n: i64) -> Self {
        Attr::Int(n)
    }
}

/// One finished span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Its trace.
    pub trace: TraceId,
    /// Its id.
    pub id: SpanId,
    /// Its parent, in the same trace.
    pub parent: Option<SpanId>,
    /// Its name: `run JOB`, `step NAME`, `check NAME`.
    pub name: String,
    /// When it started.
    pub start: Timestamp,
    /// When it ended.
    pub end: Timestamp,
    /// Its attributes, in the order they are sent.
    pub attrs: Vec<(&'static str, Attr)>,
    /// Why it failed (status ERROR), or `None` (status unset: it did not).
    pub error: Option<String>,
}

/// The spans of one run under way.
#[derive(Debug)]
pub struct RunTrace {
    trace: TraceId,
    run: SpanId,
    parent: Option<SpanId>,
    started: Timestamp,
    children: Vec<Span>,
}

impl RunTrace {
    /// A run that started at `started`, under `parent` (else in a trace of
    /// its own).
    ///
    /// # Errors
    ///
    /// When the random source cannot be read for its ids.
    pub fn start(parent: Option<TraceParent>, started: Timestamp) -> std::io::Result<Self> {
        let trace = match parent {
            Some(p) => p.trace,
            None => TraceId::fresh()?,
        };
        Ok(Self {
            trace,
            run: SpanId::fresh()?,
            parent: parent.map(|p| p.span),
            started,
            children: Vec::new(),
        })
    }

    /// The run's span: the parent of its attempts.
    pub fn context(&self) -> TraceParent {
        TraceParent {
            trace: self.trace,
            span: self.run,
        }
    }

    /// A context for a child of the run's span about to start (an
    /// attempt): what its `TRACEPARENT` names.
    ///
    /// # Errors
    ///
    /// When the random source cannot be read.
    pub fn child(&self) -> std::io::Result<TraceParent> {
        Ok(TraceParent {
            trace: self.trace,
            span: SpanId::fresh()?,
        })
    }

    /// Records the child `at` (from [`RunTrace::child`]), which ran from
    /// `start` to `end`.
    pub fn ended(
        &mut self,
        at: TraceParent,
        name: String,
        (start, end): (Timestamp, Timestamp),
        attrs: Vec<(&'static str, Attr)>,
        error: Option<String>,
    ) {
        self.children.push(Span {
            trace: self.trace,
            id: at.span,
            parent: Some(self.run),
            name,
            start,
            end,
            attrs,
            error,
        });
    }

    /// The run ended at `end`: every span, the run's first.
    pub fn finish(
        self,
        name: String,
        end: Timestamp,
        attrs: Vec<(&'static str, Attr)>,
        error: Option<String>,
    ) -> Vec<Span> {
        let run = Span {
            trace: self.trace,
            id: self.run,
            parent: self.parent,
            name,
            start: self.started,
            end,
            attrs,
            error,
        };
        std::iter::once(run).chain(self.children).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn attempts_are_children_of_the_run_in_its_trace() {
        let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        let mut t = RunTrace::start(parent, at(10)).unwrap();
        let a = t.child().unwrap();
        assert_eq!(a.trace, t.context().trace);
        assert_ne!(a.span, t.context().span);
        t.ended(a, "step x".into(), (at(11), at(12)), vec![], None);
        let run = t.context();
        let spans = t.finish(
            "run j".into(),
            at(13),
            vec![("baton.job", "j".into())],
            None,
        );
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].id, run.span);
        assert_eq!(spans[0].parent, parent.map(|p| p.span));
        assert_eq!(spans[0].trace, parent.unwrap().trace);
        assert_eq!((spans[0].start, spans[0].end), (at(10), at(13)));
        assert_eq!(spans[1].parent, Some(run.span));
        assert_eq!(spans[1].id, a.span);
    }

    #[test]
    fn without_a_parent_the_run_is_a_root() {
        let t = RunTrace::start(None, at(10)).unwrap();
        let other = RunTrace::start(None, at(10)).unwrap();
        assert_ne!(t.context().trace, other.context().trace);
        let spans = t.finish("run j".into(), at(11), vec![], Some("failed".into()));
        assert_eq!(spans[0].parent, None);
        assert_eq!(spans[0].error.as_deref(), Some("failed"));
    }
}
