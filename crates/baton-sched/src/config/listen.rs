//! `[daemon] listen` and `baton daemon --listen`: where the daemon's HTTP
//! API listens, as written — an IP address and a port, or a host name and a
//! port.
//!
//! This module only reads the text: it never resolves a name (every
//! command reads the configuration, and none but the daemon may wait on a
//! resolver). The daemon resolves a host name when it starts and listens on
//! every address the name resolves to.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

/// Where the daemon listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// An IP address and a port: `127.0.0.1:8677`, `[::1]:8677`.
    Addr(SocketAddr),
    /// A host name and a port (`localhost:8677`), resolved when the daemon
    /// starts.
    Host {
        /// The name, as written.
        name: String,
        /// The port.
        port: u16,
    },
}

/// What `listen` takes, for messages.
pub const LISTEN_FORMS: &str = "IP:PORT or HOST:PORT, such as \"127.0.0.1:8677\", \
                                \"0.0.0.0:8677\", \"[::1]:8677\" or \"localhost:8677\"";

/// Why a text is not a `listen` address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not an address to listen on: {why}; expected {LISTEN_FORMS}")]
pub struct BadListen {
    text: String,
    why: &'static str,
}

impl Listen {
    /// The IP address and port, when no name needs resolving.
    pub fn addr(&self) -> Option<SocketAddr> {
        match self {
            Self::Addr(a) => Some(*a),
            Self::Host { .. } => None,
        }
    }
}

impl From<SocketAddr> for Listen {
    fn from(a: SocketAddr) -> Self {
        Self::Addr(a)
    }
}

impl fmt::Display for Listen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Addr(a) => write!(f, "{a}"),
            Self::Host { name, port } => write!(f, "{name}:{port}"),
        }
    }
}

/// Whether `name` is a host name (RFC 1123): dot-separated labels of 1 to
/// 63 letters, digits and `-`, none starting or ending with `-`, 253
/// characters at most, the last label not all digits (that would be an IP
/// address written some other way).
fn host_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    let label = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(label)
        && name
            .rsplit('.')
            .next()
            .is_some_and(|last| !last.bytes().all(|b| b.is_ascii_digit()))
}

impl FromStr for Listen {
    type Err = BadListen;

    /// # Example
    ///
    /// ```
    /// use baton_sched::config::Listen;
    ///
    /// let l: Listen = "localhost:8080".parse()?;
    /// assert_eq!(l, Listen::Host { name: "localhost".into(), port: 8080 });
    /// assert!("127.0.0.1:8677".parse::<Listen>()?.addr().is_some());
    /// assert!("localhost".parse::<Listen>().is_err());
    /// # Ok::<(), baton_sched::config::BadListen>(())
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why| BadListen {
            text: s.to_owned(),
            why,
        };
        let t = s.trim();
        if let Ok(a) = t.parse::<SocketAddr>() {
            return Ok(Self::Addr(a));
        }
        let Some((name, port)) = t.rsplit_once(':') else {
            return Err(bad("it has no port"));
        };
        if name.starts_with('[') || name.contains(':') {
            return Err(bad(
                "an IPv6 address goes in brackets, with the port after them",
            ));
        }
        if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("the port is not a number"));
        }
        let Ok(port) = port.parse::<u16>() else {
            return Err(bad("the port is above 65535"));
        };
        if name.is_empty() {
            return Err(bad("it has no host"));
        }
        if name.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(bad("it is not an IP address"));
        }
        if !host_name(name) {
            return Err(bad(
                "it is neither an IP address nor a host name (letters, digits, '-' and '.')",
            ));
        }
        Ok(Self::Host {
            name: name.to_owned(),
            port,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_names_are_read() {
        let a: Listen = "127.0.0.1:8677".parse().unwrap();
        assert_eq!(a, Listen::Addr("127.0.0.1:8677".parse().unwrap()));
        assert_eq!(a.to_string(), "127.0.0.1:8677");
        let a: Listen = "[::1]:9000".parse().unwrap();
        assert_eq!(a.to_string(), "[::1]:9000");
        for (text, name, port) in [
            ("localhost:8080", "localhost", 8080),
            (" LocalHost:1 ", "LocalHost", 1),
            ("db-1.example.org:0", "db-1.example.org", 0),
            ("host.:80", "host.", 80),
        ] {
            let l: Listen = text.parse().unwrap();
            assert_eq!(
                l,
                Listen::Host {
                    name: name.into(),
                    port
                },
                "{text}"
            );
            assert_eq!(l.addr(), None);
            assert_eq!(l.to_string(), format!("{name}:{port}"));
        }
    }

    #[test]
    fn what_is_neither_is_refused_saying_why() {
        for (text, why) in [
            ("localhost", "no port"),
            ("localhost:", "not a number"),
            ("localhost:http", "not a number"),
            ("localhost:65536", "above 65535"),
            ("::1:8677", "brackets"),
            ("[::1]", "brackets"),
            ("[localhost]:80", "brackets"),
            ("127.1:80", "not an IP address"),
            ("300.0.0.1:80", "not an IP address"),
            (":80", "no host"),
            ("-bad:80", "neither"),
            ("bad-.example:80", "neither"),
            ("a..b:80", "neither"),
            ("host name:80", "neither"),
            ("évian:80", "neither"),
            ("host.123:80", "neither"),
            ("user@host:80", "neither"),
        ] {
            let e = text.parse::<Listen>().unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
            assert!(e.contains("HOST:PORT"), "{text}: {e}");
        }
        let long = format!("{}:80", "a".repeat(64));
        assert!(long.parse::<Listen>().is_err());
    }
}
