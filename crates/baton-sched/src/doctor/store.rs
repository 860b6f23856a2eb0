//! The store, as configured: for files, where they are; for PostgreSQL,
//! whether the server answers, how the connection is made (this build has
//! no TLS: what that means for the URL's `sslmode` and for a server across
//! a network), whether the schema is this build's, and the server's clock
//! against this host's.

use baton_lease::FUTURE_CLAIM_TOLERANCE;
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
    let mut out = vec![tls(target, link)];
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
    out.push(schema(target, e.version));
    out.push(clock(e.offset));
    out
}

fn tls(target: &str, link: &Link) -> Finding {
    const CHECK: &str = "store-tls";
    let how = if link.unix {
        format!("a Unix socket in {}", link.host)
    } else {
        format!("TCP to {}", link.host)
    };
    if link.sslmode == "require" {
        return Finding::fail(
            CHECK,
            format!(
                "{target}: the URL says sslmode=require, and this build connects without TLS, \
                 so every connection is refused"
            ),
            "reach the server over a Unix socket or a tunnel (ssh -L, WireGuard) and set \
             sslmode=disable",
        );
    }
    if link.local {
        return Finding::ok(
            CHECK,
            format!(
                "no TLS (this build has none; sslmode={}), over {how}: nothing crosses a \
                 network",
                link.sslmode
            ),
        );
    }
    Finding::warn(
        CHECK,
        format!(
            "the connection to {target} is not encrypted (this build has no TLS; \
             sslmode={}), over {how}",
            link.sslmode
        ),
        "reach the server over a private network, a tunnel (ssh -L, WireGuard) or a Unix \
         socket: the leases and the ledger cross the network in the clear",
    )
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
    fn tls_as_configured() {
        let link = |sslmode, local| Link {
            sslmode,
            host: "db".into(),
            unix: false,
            local,
        };
        assert_eq!(tls("t", &link("require", true)).status, Status::Fail);
        assert_eq!(tls("t", &link("prefer", true)).status, Status::Ok);
        assert_eq!(tls("t", &link("disable", false)).status, Status::Warn);
    }

    #[test]
    fn a_schema_that_is_not_this_builds_fails() {
        assert_eq!(schema("t", SCHEMA_VERSION).status, Status::Ok);
        for v in [0, SCHEMA_VERSION - 1, SCHEMA_VERSION + 1] {
            assert_eq!(schema("t", v).status, Status::Fail, "{v}");
        }
    }
}
