//! The trace collector (`[telemetry] otlp_endpoint`), tried: an OTLP trace
//! export with no span is posted to it as a run's spans would be (the same
//! bound and retries); whether a 2xx came back is the finding. Nothing is
//! said without an endpoint.

use baton_lease::Clock;

use super::finding::Finding;
use crate::config::Config;
use crate::engine::post::PostError;
use crate::engine::trace::Export;

const CHECK: &str = "otlp-endpoint";

/// Posts an empty export to `c`'s collector, if it names one.
pub(super) fn check(c: &Config, clock: &dyn Clock) -> Option<Finding> {
    let sourced = &c.telemetry.otlp_endpoint;
    let endpoint = sourced.value.clone()?;
    let what = format!("{endpoint} ({})", sourced.provenance());
    let export = Export {
        endpoint,
        host: rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned(),
        spans: Vec::new(),
    };
    Some(match export.send(clock) {
        Ok(()) => Finding::ok(CHECK, format!("{what} took an empty trace export")),
        Err(e) => {
            let fix = match e {
                PostError::Refused { .. } => {
                    "check that the endpoint is the collector's OTLP/HTTP base URL (/v1/traces \
                     is added) and that it accepts traces"
                }
                _ => "start the collector, or correct [telemetry] otlp_endpoint",
            };
            Finding::fail(
                CHECK,
                format!("{what} failed an empty trace export: {e}; no run's spans would reach it"),
                fix,
            )
        }
    })
}
