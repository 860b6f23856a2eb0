//! A look at the store that changes nothing, for an operator's check
//! (`baton doctor`): how the connection is made as configured, whether the
//! server answers, whether the connection it made is encrypted and what of
//! the server was verified, its schema's version, and its clock against
//! this host's.
//!
//! One connection (through the pool module's `connect_once`, as every
//! connection is made), two reads, no transaction that writes, no schema
//! created.

use std::time::Duration;

use baton_lease::Clock;
use jiff::{SignedDuration, Timestamp};
use tokio_postgres::config::Host;

use crate::error::Error;
use crate::options::Options;
use crate::target::Target;
use crate::tls::Verification;
use crate::{pool, schema};

/// Whether this build can speak TLS to the store. It can: the URL's
/// `sslmode` (`disable`, `prefer`, `require`, `verify-ca`, `verify-full`),
/// `sslrootcert`, `sslcert` and `sslkey` are honoured, as libpq's.
pub const TLS_SUPPORTED: bool = true;

/// How a connection to the store is made, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The URL's `sslmode`: `disable`, `prefer` (the default), `require`,
    /// `verify-ca` or `verify-full` ([`Target::verification`] says what an
    /// encrypted connection checks of the server).
    pub sslmode: &'static str,
    /// The first host: a TCP host name or address, or a Unix socket's
    /// directory.
    pub host: String,
    /// Whether that host is a Unix socket.
    pub unix: bool,
    /// Whether the connection stays on this machine (a Unix socket, or a
    /// loopback name or address), where no network sees it.
    pub local: bool,
}

impl Target {
    /// How a connection to this target is made, as configured.
    pub fn link(&self) -> Link {
        let sslmode = self.tls.mode.as_str();
        let (host, unix) = match self.config.get_hosts().first() {
            Some(Host::Tcp(h)) => (h.clone(), false),
            Some(Host::Unix(p)) => (p.display().to_string(), true),
            None => ("localhost".to_owned(), false),
        };
        let local = unix
            || host == "localhost"
            || host
                .trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_ok_and(|a| a.is_loopback());
        Link {
            sslmode,
            host,
            unix,
            local,
        }
    }
}

/// What an examination of the store found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Examined {
    /// The `baton` schema's version (0: none); compare with
    /// [`schema::SCHEMA_VERSION`].
    pub version: i32,
    /// Why the server takes no writes (a standby in recovery, or
    /// `default_transaction_read_only`), when it takes none: no run can
    /// start on it.
    pub read_only: Option<&'static str>,
    /// The server's clock minus this host's, measured against the middle of
    /// the round trip: positive when the server is ahead.
    pub offset: SignedDuration,
    /// How long the clock's query took, by this host's boot clock.
    pub round_trip: Duration,
    /// The server's version (`server_version`).
    pub server_version: String,
    /// Whether the connection was encrypted (TLS): with `prefer`, only when
    /// the server accepted TLS.
    pub encrypted: bool,
    /// What of the server was verified: [`Verification::Nothing`] when the
    /// connection is not encrypted.
    pub verified: Verification,
}

/// What one connection to the store was (`baton status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Secured {
    /// Whether it was encrypted (TLS): with `prefer`, only when the server
    /// accepted TLS.
    pub encrypted: bool,
    /// What of the server was verified: [`Verification::Nothing`] when the
    /// connection is not encrypted.
    pub verified: Verification,
}

/// Connects once and says whether the connection was encrypted and what
/// of the server was verified, reading and changing nothing.
///
/// # Errors
///
/// [`Error::Connect`], [`Error::Tls`] or [`Error::Timeout`].
pub async fn secured(target: &Target, options: Options) -> Result<Secured, Error> {
    let (_client, encrypted) = pool::connect_once(target, &options).await?;
    Ok(Secured {
        encrypted,
        verified: if encrypted {
            target.verification()
        } else {
            Verification::Nothing
        },
    })
}

/// Connects once, reads the schema's version and the server's clock
/// (`clock_timestamp()`), and measures it against `clock`, changing
/// nothing.
///
/// # Errors
///
/// [`Error::Connect`], [`Error::Tls`], [`Error::Query`] or
/// [`Error::Timeout`].
pub async fn examine(
    target: &Target,
    options: Options,
    clock: &dyn Clock,
) -> Result<Examined, Error> {
    let deadline = options.deadline;
    let (client, encrypted) = pool::connect_once(target, &options).await?;
    let verified = if encrypted {
        target.verification()
    } else {
        Verification::Nothing
    };
    let read = async {
        let probe = schema::probe(&client, "read the baton schema's version").await?;
        let wall0 = clock.wall();
        let boot0 = clock.boot();
        let row = client
            .query_typed_one(
                "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint, \
                 current_setting('server_version')",
                &[],
            )
            .await
            .map_err(|source| Error::Query {
                what: "read the server's clock",
                source,
            })?;
        let round_trip = clock.boot().saturating_sub(boot0);
        let micros: i64 = row.get(0);
        // A clock past what a timestamp holds (±9999 years) reads as the
        // bound: an offset no check lets pass.
        let server = Timestamp::from_microsecond(micros).unwrap_or(if micros > 0 {
            Timestamp::MAX
        } else {
            Timestamp::MIN
        });
        let half = SignedDuration::try_from(round_trip / 2).unwrap_or_default();
        let mid = wall0.checked_add(half).unwrap_or(wall0);
        Ok(Examined {
            version: probe.version,
            read_only: probe.read_only,
            offset: server.duration_since(mid),
            round_trip,
            server_version: row.get(1),
            encrypted,
            verified,
        })
    };
    tokio::time::timeout(deadline, read)
        .await
        .unwrap_or(Err(Error::Timeout {
            what: "examine the store",
            deadline,
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(url: &str) -> Link {
        Target::resolve(url, None, &|_| None).unwrap().link()
    }

    #[test]
    fn the_link_says_where_and_how() {
        let l = link("postgres://u@127.0.0.1:5432/d");
        assert_eq!((l.sslmode, l.local, l.unix), ("prefer", true, false));
        let l = link("postgres://u@db.example/d?sslmode=require");
        assert_eq!((l.sslmode, l.local), ("require", false));
        let l = link("postgres://u@%2Frun%2Fpostgresql/d?sslmode=disable");
        assert_eq!((l.sslmode, l.local, l.unix), ("disable", true, true));
        assert!(link("postgres://u@[::1]/d").local);
        let l = link("postgres://u@db.example/d?sslmode=verify-full&sslrootcert=%2Fca.pem");
        assert_eq!((l.sslmode, l.host.as_str()), ("verify-full", "db.example"));
    }
}
