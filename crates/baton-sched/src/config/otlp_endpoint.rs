//! `[telemetry] otlp_endpoint`: where runs' traces are sent, checked for
//! its form when the configuration is read.
//!
//! It is a base URL, as OpenTelemetry's `OTEL_EXPORTER_OTLP_ENDPOINT` is:
//! spans are posted to it with `/v1/traces` added
//! ([`OtlpEndpoint::traces_url`]). So it takes no query and no fragment,
//! and a port, when written, is a number from 1 to 65535. It is shown as a
//! webhook's URL is ([`super::WebhookUrl::shown`]): the scheme and the host,
//! without a user part or a path, which may carry a credential.

use super::WebhookUrl;

/// Why a text is not an OTLP endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidEndpoint {
    /// Not an `http://` or `https://` URL with a host.
    #[error(
        "= {0:?}: expected the collector's http:// or https:// base URL, such as \
         \"http://127.0.0.1:4318\" (/v1/traces is added)"
    )]
    Url(String),
    /// A query or a fragment, which the added path cannot follow.
    #[error("= {0:?}: a base URL takes no query (?) or fragment (#): /v1/traces is added to it")]
    Query(String),
    /// A port that is not a number from 1 to 65535.
    #[error("= {0:?}: the port must be a number from 1 to 65535")]
    Port(String),
}

/// An OTLP/HTTP collector's base URL.
#[derive(Clone, PartialEq, Eq)]
pub struct OtlpEndpoint(WebhookUrl);

impl OtlpEndpoint {
    /// Checks the form (see the module).
    ///
    /// # Errors
    ///
    /// [`InvalidEndpoint`], naming the text as written.
    ///
    /// # Example
    ///
    /// ```
    /// use baton_sched::config::OtlpEndpoint;
    /// let e = OtlpEndpoint::parse("http://127.0.0.1:4318/").unwrap();
    /// assert_eq!(e.traces_url(), "http://127.0.0.1:4318/v1/traces");
    /// assert!(OtlpEndpoint::parse("http://127.0.0.1:4318/?x=1").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, InvalidEndpoint> {
        let url = WebhookUrl::parse(text).map_err(|e| match e {
            crate::http::InvalidHttp::Port(_) => InvalidEndpoint::Port(text.to_owned()),
            _ => InvalidEndpoint::Url(text.to_owned()),
        })?;
        if text.contains(['?', '#']) {
            return Err(InvalidEndpoint::Query(text.to_owned()));
        }
        Ok(Self(url))
    }

    /// Where spans are posted: the base URL, then `/v1/traces`.
    pub fn traces_url(&self) -> String {
        format!("{}/v1/traces", self.0.secret().trim_end_matches('/'))
    }

    /// The scheme and the host (and port), then `/…` when there is more:
    /// what may be shown.
    pub fn shown(&self) -> String {
        self.0.shown()
    }
}

impl std::fmt::Display for OtlpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

impl std::fmt::Debug for OtlpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OtlpEndpoint({:?})", self.shown())
    }
}

#[cfg(test)]
mod tests {
    use super::{InvalidEndpoint, OtlpEndpoint};

    #[test]
    fn the_traces_path_is_added_to_the_base() {
        for (base, url) in [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
            (
                "https://otel.example/otlp",
                "https://otel.example/otlp/v1/traces",
            ),
            ("http://[::1]:4318", "http://[::1]:4318/v1/traces"),
        ] {
            assert_eq!(OtlpEndpoint::parse(base).unwrap().traces_url(), url);
        }
        let e = OtlpEndpoint::parse("https://u:pw@otel.example/k3y").unwrap();
        assert_eq!(e.to_string(), "https://otel.example/…");
    }

    #[test]
    fn what_is_no_base_url_is_refused_by_name() {
        for (bad, why) in [
            ("grpc://127.0.0.1:4317", "Url"),
            ("127.0.0.1:4318", "Url"),
            ("http://", "Url"),
            ("http://h:4318/?k=v", "Query"),
            ("http://h:4318#x", "Query"),
            ("http://h:port", "Port"),
            ("http://h:0", "Port"),
            ("http://h:70000", "Port"),
            ("http://[::1]:x", "Port"),
        ] {
            let e = OtlpEndpoint::parse(bad).unwrap_err();
            let kind = match e {
                InvalidEndpoint::Url(_) => "Url",
                InvalidEndpoint::Query(_) => "Query",
                InvalidEndpoint::Port(_) => "Port",
            };
            assert_eq!(kind, why, "{bad}");
        }
    }
}
