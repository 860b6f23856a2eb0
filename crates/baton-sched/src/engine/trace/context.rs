//! W3C trace context: a trace's and a span's ids, fresh from the operating
//! system's random source, and the `TRACEPARENT` value that carries them
//! to a job (and from the process that started baton).
//!
//! Only version `00` is written: `00-TRACE-SPAN-01` (32 and 16 lowercase
//! hex digits, sampled). A value read is taken as the W3C recommendation
//! says: a known layout, lowercase hex, neither id all zeros, version `ff`
//! refused, and a later version read by its first four fields. Anything
//! else is no parent at all: the run starts a trace of its own.

use std::fmt;

/// The variable a job finds its trace context in, and that baton reads
/// its own from.
pub const VARIABLE: &str = "TRACEPARENT";

/// A trace's id: 16 bytes, never all zeros.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId([u8; 16]);

/// A span's id: 8 bytes, never all zeros.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId([u8; 8]);

impl TraceId {
    /// A fresh id from the random source.
    ///
    /// # Errors
    ///
    /// When the random source cannot be read.
    pub fn fresh() -> std::io::Result<Self> {
        let (a, b) = (fresh8()?, fresh8()?);
        let mut bytes = [0; 16];
        bytes[..8].copy_from_slice(&a);
        bytes[8..].copy_from_slice(&b);
        Ok(Self(bytes))
    }

    /// Its bytes, as OTLP carries them.
    pub fn bytes(self) -> [u8; 16] {
        self.0
    }
}

impl SpanId {
    /// A fresh id from the random source.
    ///
    /// # Errors
    ///
    /// When the random source cannot be read.
    pub fn fresh() -> std::io::Result<Self> {
        Ok(Self(fresh8()?))
    }

    /// Its bytes, as OTLP carries them.
    pub fn bytes(self) -> [u8; 8] {
        self.0
    }
}

/// Eight random bytes, never all zeros (a zero id is invalid; drawing one
/// is as likely as never, and then the next draw is taken).
fn fresh8() -> std::io::Result<[u8; 8]> {
    loop {
        let bytes = baton_lease::Token::fresh()?.to_bytes();
        if bytes != [0; 8] {
            return Ok(bytes);
        }
    }
}

fn hex(bytes: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    bytes.iter().try_for_each(|b| write!(f, "{b:02x}"))
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex(&self.0, f)
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceId({self})")
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        hex(&self.0, f)
    }
}

impl fmt::Debug for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SpanId({self})")
    }
}

/// A position in a trace: the trace, and the span that is the parent of
/// what comes under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace.
    pub trace: TraceId,
    /// The span.
    pub span: SpanId,
}

impl TraceParent {
    /// Reads a `traceparent` value; `None` for one that is not valid.
    ///
    /// # Example
    ///
    /// ```
    /// use baton_sched::engine::trace::TraceParent;
    /// let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    /// let p = TraceParent::parse(text).unwrap();
    /// assert_eq!(p.to_string(), text);
    /// assert!(TraceParent::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none());
    /// ```
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim_matches([' ', '\t']);
        let mut fields = text.split('-');
        let (version, trace, span, flags) = (
            fields.next()?,
            fields.next()?,
            fields.next()?,
            fields.next()?,
        );
        let version = lower_hex::<1>(version)?[0];
        if version == 0xff || (version == 0 && fields.next().is_some()) {
            return None;
        }
        lower_hex::<1>(flags)?;
        let trace = lower_hex::<16>(trace).filter(|b| *b != [0; 16])?;
        let span = lower_hex::<8>(span).filter(|b| *b != [0; 8])?;
        Some(Self {
            trace: TraceId(trace),
            span: SpanId(span),
        })
    }

    /// The context this process was started with (`TRACEPARENT`), if it
    /// holds a valid one.
    pub fn from_env() -> Option<Self> {
        std::env::var(VARIABLE)
            .ok()
            .as_deref()
            .and_then(Self::parse)
    }
}

/// `N` bytes written as exactly `2N` lowercase hex digits.
fn lower_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let value = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut out = [0; N];
    for (i, pair) in digits.chunks(2).enumerate() {
        out[i] = value(pair[0])? << 4 | value(pair[1])?;
    }
    Some(out)
}

impl fmt::Display for TraceParent {
    /// `00-TRACE-SPAN-01`: what a job's `TRACEPARENT` holds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "00-{}-{}-01", self.trace, self.span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_values_are_read_and_written_back() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let p = TraceParent::parse(text).unwrap();
        assert_eq!(p.to_string(), text);
        assert_eq!(p.span.to_string(), "00f067aa0ba902b7");
        // Not sampled by the caller: still a parent (what is exported is
        // baton's own decision).
        let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        assert_eq!(TraceParent::parse(unsampled), Some(p));
        // A later version: its first four fields, whatever follows.
        let later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever";
        assert_eq!(TraceParent::parse(later), Some(p));
    }

    #[test]
    fn invalid_values_are_no_parent() {
        for bad in [
            "",
            "garbage",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn fresh_ids_differ_and_are_never_zero() {
        let (a, b) = (TraceId::fresh().unwrap(), TraceId::fresh().unwrap());
        assert_ne!(a, b);
        assert_ne!(a.bytes(), [0; 16]);
        assert_ne!(SpanId::fresh().unwrap(), SpanId::fresh().unwrap());
    }
}
