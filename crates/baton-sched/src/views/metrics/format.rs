//! The two text formats the metrics are served in, and the choice between
//! them from a request's `Accept` header.
//!
//! [`Format::Prometheus`] is Prometheus's text format 0.0.4, the one
//! `promtool check metrics` and the client libraries' classic parsers read:
//! it is the default, and what `Accept: text/plain` gets.
//! [`Format::OpenMetrics`] is OpenMetrics 1.0, served only when the header
//! prefers it (Prometheus itself asks for it first). The series are the
//! same in both, name for name and label for label, so a rule written
//! against one matches what the other exposes.
//!
//! # Negotiation
//!
//! Each format is given the quality (`q`, 1 when absent) of the most
//! specific media range of the header that matches it (`text/plain` or
//! `application/openmetrics-text` exactly, with a `version` parameter
//! counting as more specific, then `text/*` or `application/*`, then
//! `*/*`); a range whose `version` is not one baton serves matches
//! nothing. The format with the higher quality is served; between equal
//! qualities, the one matched by the more specific range, then the one
//! listed first, then 0.0.4. A header that accepts neither (`q=0` for
//! both, or only other types) gets 0.0.4, as the Prometheus client
//! libraries answer it, rather than a refusal a scraper could not act on.

use std::cmp::Reverse;

/// A text format of the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Prometheus's text format, version 0.0.4.
    #[default]
    Prometheus,
    /// OpenMetrics 1.0.
    OpenMetrics,
}

impl Format {
    /// The `Content-Type` of an answer in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// The format to answer a request with `accept` as its `Accept` header
    /// (`None` when it has none), as the module's documentation says.
    ///
    /// # Example
    ///
    /// ```
    /// use baton_sched::views::metrics::Format;
    /// // What Prometheus 2.x sends.
    /// let prometheus = "application/openmetrics-text;version=1.0.0,\
    ///     application/openmetrics-text;version=0.0.1;q=0.75,\
    ///     text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    /// assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
    /// assert_eq!(Format::negotiate(Some("text/plain")), Format::Prometheus);
    /// assert_eq!(Format::negotiate(None), Format::Prometheus);
    /// ```
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Prometheus;
        };
        let ranges: Vec<Range> = accept.split(',').filter_map(Range::parse).collect();
        // A format's quality, how specific the range that gave it, and
        // that range's place (earlier ranks higher among equals).
        let best = |format: Format| {
            ranges
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.specificity(format).map(|s| (s, Reverse(i), r.q)))
                // The most specific range decides; the first among equals.
                .max_by_key(|&(s, i, _)| (s, i))
                .map(|(s, i, q)| (q, s, i))
                .filter(|&(q, _, _)| q > 0)
        };
        match (best(Format::Prometheus), best(Format::OpenMetrics)) {
            (Some(text), Some(om)) if om > text => Format::OpenMetrics,
            (None, Some(_)) => Format::OpenMetrics,
            _ => Format::Prometheus,
        }
    }

    /// The media type and the versions of it this format answers.
    fn media(self) -> (&'static str, &'static str, &'static [&'static str]) {
        match self {
            Format::Prometheus => ("text", "plain", &["0.0.4"]),
            // 0.0.1 is the draft Prometheus implemented before 1.0; its
            // text is what 1.0 writes.
            Format::OpenMetrics => ("application", "openmetrics-text", &["1.0.0", "0.0.1"]),
        }
    }
}

/// One media range of an `Accept` header.
#[derive(Debug)]
struct Range {
    kind: String,
    subtype: String,
    version: Option<String>,
    /// The quality, in thousandths (RFC 9110 allows three decimals).
    q: u16,
}

impl Range {
    /// `type/subtype;param=value;q=0.5`; `None` for a range that does not
    /// parse (it is ignored, as an unknown type would be).
    fn parse(text: &str) -> Option<Range> {
        let mut parts = text.split(';');
        let (kind, subtype) = parts.next()?.trim().split_once('/')?;
        let (kind, subtype) = (kind.trim(), subtype.trim());
        if kind.is_empty() || subtype.is_empty() || (kind == "*" && subtype != "*") {
            return None;
        }
        let mut range = Range {
            kind: kind.to_ascii_lowercase(),
            subtype: subtype.to_ascii_lowercase(),
            version: None,
            q: 1000,
        };
        for param in parts {
            let Some((name, value)) = param.split_once('=') else {
                continue;
            };
            let value = value.trim().trim_matches('"');
            match name.trim().to_ascii_lowercase().as_str() {
                "q" => range.q = quality(value)?,
                "version" => range.version = Some(value.to_owned()),
                _ => {}
            }
        }
        Some(range)
    }

    /// How specifically this range names `format` (higher is more
    /// specific), or `None` when it does not match it.
    fn specificity(&self, format: Format) -> Option<u8> {
        let (kind, subtype, versions) = format.media();
        let base = match (self.kind.as_str(), self.subtype.as_str()) {
            ("*", "*") => 0,
            (k, "*") if k == kind => 1,
            (k, s) if k == kind && s == subtype => 2,
            _ => return None,
        };
        match &self.version {
            None => Some(base),
            Some(v) if base == 2 && versions.contains(&v.as_str()) => Some(3),
            // A version baton does not serve, or one on a wildcard.
            Some(_) => None,
        }
    }
}

/// A `q` value, in thousandths: `0` to `1` with at most three decimals.
fn quality(text: &str) -> Option<u16> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{frac:0<3}").parse::<u16>().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(accept: &str) -> Format {
        Format::negotiate(Some(accept))
    }

    #[test]
    fn the_default_is_0_0_4() {
        assert_eq!(Format::negotiate(None), Format::Prometheus);
        for accept in [
            "",
            "*/*",
            "text/plain",
            "text/plain; version=0.0.4",
            "text/*",
            "application/json",
            "garbage",
            "text/plain, application/openmetrics-text",
        ] {
            assert_eq!(pick(accept), Format::Prometheus, "{accept:?}");
        }
    }

    #[test]
    fn openmetrics_when_asked_for() {
        for accept in [
            "application/openmetrics-text",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            "Application/OpenMetrics-Text;version=\"1.0.0\"",
            "application/openmetrics-text; version=0.0.1",
            "application/*",
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
             version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            "text/plain;q=0.5, application/openmetrics-text",
            "text/plain;q=0, */*",
            // Equal qualities: the more specific range wins.
            "text/*, application/openmetrics-text",
            "*/*, application/openmetrics-text;version=1.0.0",
        ] {
            assert_eq!(pick(accept), Format::OpenMetrics, "{accept:?}");
        }
    }

    #[test]
    fn q_values_and_versions_are_honoured() {
        assert_eq!(
            pick("application/openmetrics-text;q=0.1, text/plain"),
            Format::Prometheus
        );
        assert_eq!(
            pick("application/openmetrics-text;q=0.9, text/plain;q=0.95"),
            Format::Prometheus
        );
        assert_eq!(
            pick("application/openmetrics-text;q=0.951, text/plain;q=0.95"),
            Format::OpenMetrics
        );
        // Refused outright.
        assert_eq!(pick("application/openmetrics-text;q=0"), Format::Prometheus);
        // A version baton does not serve matches nothing.
        assert_eq!(
            pick("application/openmetrics-text;version=2.0.0, text/plain;q=0.1"),
            Format::Prometheus
        );
        assert_eq!(
            pick("text/plain;version=1.0.0, application/openmetrics-text;q=0.2"),
            Format::OpenMetrics
        );
        // A malformed q drops its range.
        assert_eq!(
            pick("application/openmetrics-text;q=2, text/plain;q=0.1"),
            Format::Prometheus
        );
        assert_eq!(
            pick("text/plain;q=abc, application/openmetrics-text;q=0.1"),
            Format::OpenMetrics
        );
        // The more specific range decides a format's quality.
        assert_eq!(
            pick("application/*;q=1, application/openmetrics-text;q=0.1, text/plain;q=0.5"),
            Format::Prometheus
        );
    }

    #[test]
    fn qualities_read_as_rfc_9110_writes_them() {
        assert_eq!(quality("1"), Some(1000));
        assert_eq!(quality("1.000"), Some(1000));
        assert_eq!(quality("0.5"), Some(500));
        assert_eq!(quality("0.75"), Some(750));
        assert_eq!(quality("0"), Some(0));
        for bad in ["1.5", "2", "0.1234", "-0.1", "", "x", "1.001"] {
            assert_eq!(quality(bad), None, "{bad:?}");
        }
    }
}
