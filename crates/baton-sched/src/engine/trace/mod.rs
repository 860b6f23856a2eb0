//! Traces of runs (`[telemetry] otlp_endpoint`): a span for each run, with
//! a child for each attempt of a step and for each check, sent over
//! OTLP/HTTP when the run ends. W3C trace context ([`context`]) names them
//! and reaches each attempt's command as `TRACEPARENT`, so that the job's
//! own spans join the run's trace; [`run_trace`] gathers one run's spans,
//! [`attrs`] says what they carry, and [`export`] encodes and posts them.
//!
//! Tracing never changes a run: without an endpoint nothing is traced and
//! no `TRACEPARENT` is set; with one, the spans are sent after the
//! verdict is recorded, on a thread of their own, within
//! [`export::EXPORT_TIMEOUT`], and a collector that is down or stalls is a
//! warning, never a failed run. The worker that runs the steps stays
//! synchronous: no OpenTelemetry SDK runs here, only its protobuf types.

pub mod attrs;
pub mod context;
pub mod export;
pub mod run_trace;

pub use context::{SpanId, TraceId, TraceParent};
pub use export::{EXPORT_TIMEOUT, Export};
pub use run_trace::{Attr, RunTrace, Span};
