//! A run's spans, sent: encoded as OTLP's `ExportTraceServiceRequest`
//! (protobuf, with OpenTelemetry's own generated types) and posted as
//! `application/x-protobuf` to `{otlp_endpoint}/v1/traces`, in one request
//! per run, through [`crate::engine::post`].
//!
//! One export never takes longer than [`EXPORT_TIMEOUT`] in all (two
//! attempts at most); one that fails is a [`PostError`], said once by the
//! caller as a warning. Nothing here can fail a run or change its outcome:
//! the run's verdict is recorded before its spans are sent, and they are
//! sent on a thread of their own ([`crate::engine::pending::Pending`]).
//!
//! The resource is `service.name = "baton"`, `service.version` and
//! `host.name`; the instrumentation scope is `baton`. Every span is of kind
//! INTERNAL, its status ERROR with a message when it failed, else unset.

use std::time::Duration;

use baton_lease::Clock;
use jiff::Timestamp;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1 as otlp;
use prost::Message;

use super::run_trace::{Attr, Span};
use crate::config::OtlpEndpoint;
use crate::engine::post::{self, Patience, PostError};

/// The longest one export may take, its retry included.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);

/// The patience of one export: [`EXPORT_TIMEOUT`] in all, two attempts.
const PATIENCE: Patience = Patience {
    bound: EXPORT_TIMEOUT,
    attempts: 2,
    attempt: Duration::from_secs(2),
    backoff: Duration::from_millis(250),
};

/// W3C's sampled flag, and OTLP's flags saying whether a span's parent is
/// remote (of another process).
const SAMPLED: u32 = 0x01;
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

/// One run's spans, for one endpoint.
#[derive(Debug, Clone)]
pub struct Export {
    /// Where they go.
    pub endpoint: OtlpEndpoint,
    /// The host that ran them (`host.name`).
    pub host: String,
    /// The spans, the run's first.
    pub spans: Vec<Span>,
}

impl Export {
    /// The request's body: one resource, one scope, every span.
    pub fn body(&self) -> Vec<u8> {
        let resource = Resource {
            attributes: vec![
                kv("service.name", &Attr::from("baton")),
                kv("service.version", &Attr::from(env!("CARGO_PKG_VERSION"))),
                kv("host.name", &Attr::from(self.host.as_str())),
            ],
            ..Resource::default()
        };
        let scope = InstrumentationScope {
            name: "baton".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            ..InstrumentationScope::default()
        };
        let remote = self.spans.first().and_then(|s| s.parent);
        let spans = self
            .spans
            .iter()
            .map(|s| span(s, remote.is_some() && s.parent == remote))
            .collect();
        ExportTraceServiceRequest {
            resource_spans: vec![otlp::ResourceSpans {
                resource: Some(resource),
                scope_spans: vec![otlp::ScopeSpans {
                    scope: Some(scope),
                    spans,
                    ..otlp::ScopeSpans::default()
                }],
                ..otlp::ResourceSpans::default()
            }],
        }
        .encode_to_vec()
    }

    /// Posts the spans, within [`EXPORT_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// [`PostError`]: a status that is not retried, a request that cannot
    /// be made, or no 2xx in time.
    pub fn send(&self, clock: &dyn Clock) -> Result<(), PostError> {
        let headers = [("Content-Type", "application/x-protobuf".to_owned())];
        let url = self.endpoint.traces_url();
        post::post(&url, &headers, &self.body(), PATIENCE, clock).map(|_| ())
    }
}

/// `s` as OTLP has it; `remote` when its parent is of another process.
fn span(s: &Span, remote: bool) -> otlp::Span {
    let status = otlp::Status {
        message: s.error.clone().unwrap_or_default(),
        code: if s.error.is_some() {
            otlp::status::StatusCode::Error
        } else {
            otlp::status::StatusCode::Unset
        } as i32,
    };
    otlp::Span {
        trace_id: s.trace.bytes().to_vec(),
        span_id: s.id.bytes().to_vec(),
        parent_span_id: s.parent.map(|p| p.bytes().to_vec()).unwrap_or_default(),
        flags: SAMPLED | HAS_IS_REMOTE | if remote { IS_REMOTE } else { 0 },
        name: s.name.clone(),
        kind: otlp::span::SpanKind::Internal as i32,
        start_time_unix_nano: nanos(s.start),
        end_time_unix_nano: nanos(s.end.max(s.start)),
        attributes: s.attrs.iter().map(|(k, v)| kv(k, v)).collect(),
        status: Some(status),
        ..otlp::Span::default()
    }
}

fn kv(key: &str, value: &Attr) -> KeyValue {
    let value = match value {
        Attr::Str(s) => any_value::Value::StringValue(s.clone()),
        Attr::Int(n) => any_value::Value::IntValue(*n),
    };
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

/// Nanoseconds since 1970; an instant before it (a clock set far back) is
/// 0, which OTLP reads as unknown.
fn nanos(t: Timestamp) -> u64 {
    u64::try_from(t.as_nanosecond()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::trace::{RunTrace, TraceParent};

    #[test]
    fn the_body_decodes_to_the_spans_with_their_parents() {
        let t0 = Timestamp::from_second(1_767_225_600).unwrap();
        let t1 = Timestamp::from_second(1_767_225_601).unwrap();
        let parent =
            TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        let mut run = RunTrace::start(Some(parent), t0).unwrap();
        let child = run.child().unwrap();
        run.ended(
            child,
            "step a".into(),
            (t0, t1),
            vec![("process.exit.code", Attr::Int(3))],
            Some("exited 3".into()),
        );
        let spans = run.finish("run j".into(), t1, vec![("baton.job", "j".into())], None);
        let e = Export {
            endpoint: OtlpEndpoint::parse("http://127.0.0.1:9").unwrap(),
            host: "h1".into(),
            spans,
        };
        let req = ExportTraceServiceRequest::decode(&e.body()[..]).unwrap();
        let rs = &req.resource_spans[0];
        let res = rs.resource.as_ref().unwrap();
        assert_eq!(res.attributes[0].key, "service.name");
        let spans = &rs.scope_spans[0].spans;
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].trace_id, parent.trace.bytes());
        assert_eq!(spans[0].parent_span_id, parent.span.bytes());
        assert_eq!(spans[0].flags, 0x301);
        assert_eq!(spans[1].parent_span_id, spans[0].span_id);
        assert_eq!(spans[1].span_id, child.span.bytes());
        assert_eq!(spans[1].flags, 0x101);
        assert_eq!(spans[1].status.as_ref().unwrap().code, 2);
        assert_eq!(spans[0].status.as_ref().unwrap().code, 0);
        assert_eq!(
            spans[1].end_time_unix_nano - spans[1].start_time_unix_nano,
            1_000_000_000
        );
    }
}
