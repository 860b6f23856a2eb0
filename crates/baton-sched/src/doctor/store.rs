//! The store, as configured: for files, where they are; for PostgreSQL,
//! whether the server answers, how the connection is made (encrypted or
//! not, the server verified or not, and what that means for a server
//! across a network), whether the schema is this build's, and the server's
//! clock against this host's.

use baton_lease::FUTURE_CLAIM_TOLERANCE;
use baton_pg::Verification;
use baton_pg::examine::{Examined, Link};
use baton_pg::schema::SCHEMA_VERSION;
use jiff::SignedDuration;

use super::finding::Finding;
use crate::units::show_duration;

/// Past this, the clocks are said to be apart.
const CLOCK_WARN: SignedDuration = SignedDuration::from_secs(1);
/// Past this, the lease's tolerance for a clock ahead, they fail.
const CLOCK_FAIL: SignedDuration = SignedDuration::from_secs(FUTURE_CLAIM_TOLERANCE);

/// The findings of a PostgreSQL store at `target`.
pub(super) fn postgres(
    target: &str,
    link: &Link,
    found: &Result<Examined, crate::store::Error>,
) -> Vec<Finding> {
    let mut out = vec![tls(target, link, found.as_ref().ok())];
    let e = match found {
        Ok(e) => e,
        Err(why) => {
            out.insert(
                0,
                Finding::fail(
                    "store",
                    format!("{target} cannot be reached: {why}"),
                    "check that the server runs and accepts this host, the URL and the \
                     password (`baton store status` says the same); until it answers, no run \
                     starts",
                ),
            );
            return out;
        }
    };
    out.insert(
        0,
        Finding::ok(
            "store",
            format!(
                "{target}: reachable, PostgreSQL {}, {} round trip",
                e.server_version,
                show_duration(e.round_trip)
            ),
        ),
    );
    if let Some(why) = e.read_only {
        out.push(Finding::fail(
            "store-writable",
            format!("{target} takes no writes: {why}"),
            "point url at the primary (a url naming every server, with \
             target_session_attrs=read-write, follows it through a failover); until then no \
             run starts",
        ));
    }
    out.push(schema(target, e.version));
    out.push(clock(e.offset));
    out
}

fn tls(target: &str, link: &Link, found: Option<&Examined>) -> Finding {
    const CHECK: &str = "store-tls";
    let how = if link.unix {
        format!("a Unix socket in {}", link.host)
    } else {
        format!("TCP to {}", link.host)
    };
    let mode = link.sslmode;
    let Some(e) = found else {
        if mode != "disable" && mode != "prefer" {
            return Finding::fail(
                CHECK,
                format!(
                    "{target}: sslmode={mode} is configured, and no such connection could be made \
                     over {how}"
                ),
                "the store finding says why: a server without TLS needs it turned on (ssl = on, \
                 with its certificate); a certificate refused needs sslrootcert naming its \
                 authority, or url naming the server as its certificate does (verify-full); or \
                 correct sslmode",
            );
        }
        return Finding::warn(
            CHECK,
            format!("{target}: not judged (sslmode={mode}): the server did not answer"),
            "see the store finding above",
        );
    };
    let secure = "set sslmode=verify-full (with sslrootcert naming the server's authority), or \
                  reach the server over a private network, a tunnel or a Unix socket";
    match (e.encrypted, e.verified) {
        (true, Verification::ChainAndHost) => Finding::ok(
            CHECK,
            format!("encrypted, the server's certificate and host name verified (sslmode={mode})"),
        ),
        _ if link.local => Finding::ok(
            CHECK,
            format!(
                "{} (sslmode={mode}), over {how}: nothing crosses a network",
                if e.encrypted { "encrypted" } else { "no TLS" }
            ),
        ),
        (true, Verification::Chain) => Finding::warn(
            CHECK,
            format!(
                "{target}: encrypted, the certificate's authority verified but not the host name \
                 (sslmode={mode}), over {how}"
            ),
            secure,
        ),
        (true, Verification::Nothing) => Finding::warn(
            CHECK,
            format!(
                "{target}: encrypted, but the server is not verified (sslmode={mode}), over {how}: \
                 anyone in the middle could be it"
            ),
            secure,
        ),
        (false, _) => Finding::warn(
            CHECK,
            format!("the connection to {target} is not encrypted (sslmode={mode}), over {how}"),
            "the leases and the ledger cross the network in the clear: set sslmode=verify-full \
             (with sslrootcert), or reach the server over a private network, a tunnel or a Unix \
             socket",
        ),
    }
}

fn schema(target: &str, found: i32) -> Finding {
    const CHECK: &str = "store-schema";
    match found {
        v if v == SCHEMA_VERSION => Finding::ok(CHECK, format!("version {v}, this build's")),
        0 => Finding::fail(
            CHECK,
            format!("{target} has no baton schema; every run refuses it"),
            "`baton store migrate` creates it (`baton daemon` migrates at start)",
        ),
        v if v < SCHEMA_VERSION => Finding::fail(
            CHECK,
            format!(
                "version {v}, behind this build's {SCHEMA_VERSION}; every run of this build \
                 refuses it"
            ),
            "`baton store migrate` brings it to this build's version",
        ),
        v => Finding::fail(
            CHECK,
            format!(
                "version {v}, newer than this build's {SCHEMA_VERSION}: a newer baton migrated \
                 it, and this one refuses it"
            ),
            "upgrade baton on this host",
        ),
    }
}

fn clock(offset: SignedDuration) -> Finding {
    const CHECK: &str = "store-clock";
    let by = show_duration(offset.unsigned_abs());
    let said = if offset.is_negative() {
        format!("the server's clock is {by} behind this host's")
    } else {
        format!("the server's clock is {by} ahead of this host's")
    };
    let fix = "keep both clocks synchronised (chrony or systemd-timesyncd on this host and on \
               the server); runs decide by the server's clock, but this host's own stamps (logs, \
               `baton exec`) disagree with it meanwhile";
    if offset.abs() <= CLOCK_WARN {
        Finding::ok(CHECK, format!("{said} (within 1s)"))
    } else if offset.abs() <= CLOCK_FAIL {
        Finding::warn(CHECK, format!("{said}, more than 1s"), fix)
    } else {
        Finding::fail(
            CHECK,
            format!(
                "{said}, more than the lease's {FUTURE_CLAIM_TOLERANCE}s tolerance for a clock \
                 ahead"
            ),
            fix,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::finding::Status;
    use super::*;

    #[test]
    fn the_clock_is_ok_within_a_second_warned_past_it_and_failed_past_the_tolerance() {
        let at = |ms: i64| clock(SignedDuration::from_millis(ms)).status;
        assert_eq!(at(0), Status::Ok);
        assert_eq!(at(-1000), Status::Ok);
        assert_eq!(at(1500), Status::Warn);
        assert_eq!(at(-4900), Status::Warn);
        assert_eq!(at(5001), Status::Fail);
        assert!(
            clock(SignedDuration::from_secs(-7))
                .message
                .contains("behind")
        );
    }

    #[test]
    fn a_server_that_takes_no_writes_fails() {
        let link = Link {
            sslmode: "prefer",
            host: "db".into(),
            unix: false,
            local: true,
        };
        let standby = Examined {
            version: SCHEMA_VERSION,
            read_only: Some("it is a standby in recovery"),
            offset: SignedDuration::ZERO,
            round_trip: std::time::Duration::ZERO,
            server_version: "15".into(),
            encrypted: false,
            verified: Verification::Nothing,
        };
        let writable = Examined {
            read_only: None,
            ..standby.clone()
        };
        let of = |e: Examined| {
            postgres("db:5432", &link, &Ok(e))
                .into_iter()
                .find(|f| f.check == "store-writable")
        };
        let f = of(standby).expect("a finding for a standby");
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.message.contains("db:5432") && f.message.contains("standby"),
            "{}",
            f.message
        );
        assert!(of(writable).is_none());
    }

    #[test]
    fn tls_as_configured() {
        let link = |sslmode, local| Link {
            sslmode,
            host: "db".into(),
            unix: false,
            local,
        };
        let seen = |encrypted, verified| Examined {
            version: SCHEMA_VERSION,
            read_only: None,
            offset: SignedDuration::ZERO,
            round_trip: std::time::Duration::ZERO,
            server_version: "15".into(),
            encrypted,
            verified,
        };
        let plain = seen(false, Verification::Nothing);
        let full = seen(true, Verification::ChainAndHost);
        let unverified = seen(true, Verification::Nothing);
        // No connection: a mode that needs TLS fails, naming it.
        let f = tls("t", &link("require", true), None);
        assert_eq!(f.status, Status::Fail);
        assert!(f.message.contains("sslmode=require"), "{}", f.message);
        assert_eq!(
            tls("t", &link("prefer", true), Some(&plain)).status,
            Status::Ok
        );
        assert_eq!(
            tls("t", &link("disable", false), Some(&plain)).status,
            Status::Warn
        );
        assert_eq!(
            tls("t", &link("verify-full", false), Some(&full)).status,
            Status::Ok
        );
        assert_eq!(
            tls("t", &link("require", false), Some(&unverified)).status,
            Status::Warn
        );
        assert_eq!(
            tls("t", &link("require", true), Some(&unverified)).status,
            Status::Ok
        );
    }

    #[test]
    fn a_schema_that_is_not_this_builds_fails() {
        assert_eq!(schema("t", SCHEMA_VERSION).status, Status::Ok);
        for v in [0, SCHEMA_VERSION - 1, SCHEMA_VERSION + 1] {
            assert_eq!(schema("t", v).status, Status::Fail, "{v}");
        }
    }
}
