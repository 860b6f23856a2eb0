//! An operator's look at the configured store (`baton doctor`) that changes
//! nothing: for files, the ledger as [`baton_ledger::Ledger::examine`]
//! finds it; for PostgreSQL, how the connection is made and what one
//! connection reads (the schema's version, the server's clock against this
//! host's). The lock files and lease rows are read through [`Store::inspect`],
//! as `baton status` reads them. [`connection`] is what `baton status`
//! and `baton store status` say of the connection: encrypted or not, and
//! the server verified or not; [`held_back`] whether the store grants
//! nothing for now after its server changed.
//!
//! [`Store::inspect`]: super::Store::inspect

use std::path::PathBuf;

use baton_lease::Clock;
use baton_store::store::HeldBack;

use crate::config::Config;

/// What an examination of the store found.
#[derive(Debug)]
pub enum Examination {
    /// The embedded store: lock files and the SQLite ledger in the state
    /// directory.
    Files {
        /// The state directory.
        state_dir: PathBuf,
        /// The ledger: `None` when there is none yet.
        ledger: Result<Option<baton_ledger::Examined>, baton_ledger::Error>,
    },
    /// The PostgreSQL store.
    Postgres {
        /// Host, port, database and user (never the password).
        target: String,
        /// How a connection is made, as configured.
        link: baton_pg::examine::Link,
        /// What one connection read, or why none could be made.
        found: Result<baton_pg::examine::Examined, super::Error>,
    },
}

/// Examines the store `config` names, changing nothing.
///
/// # Errors
///
/// When `[store]` cannot be used at all (its URL or password): the message
/// names the setting.
pub fn examine(config: &Config, clock: &dyn Clock) -> Result<Examination, super::Unusable> {
    match &config.store {
        None => {
            let state_dir = config.settings.state_dir.value.clone();
            // No state directory yet: no ledger either (the first run
            // creates both).
            let ledger = if state_dir.exists() {
                baton_ledger::Ledger::examine(&state_dir)
            } else {
                Ok(None)
            };
            Ok(Examination::Files { state_dir, ledger })
        }
        Some(s) => {
            let pg = super::postgres(s)?;
            let (target, link) = pg.link();
            let found = pg.examine(clock);
            Ok(Examination::Postgres {
                target,
                link,
                found,
            })
        }
    }
}

/// The store's connection as `baton status` and `baton store status` show
/// it: where the store is, its `sslmode`, and whether a connection made
/// just now was encrypted and what of the server it verified.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Connection {
    /// Host, port, database and user (never the password).
    pub store: String,
    /// The `sslmode` in force (the key's, else the URL's, else `prefer`).
    pub sslmode: &'static str,
    /// Whether the connection was encrypted (TLS); `None` when none could
    /// be made.
    pub encrypted: Option<bool>,
    /// What of the server was verified; `None` when no connection could be
    /// made.
    pub verified: Option<Verified>,
    /// Why no connection could be made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// While the store grants nothing after its server changed (a
    /// failover, a restore): when it grants again (RFC 3339), for the
    /// longest TTL plus takeover grace of the jobs asked about (`baton
    /// status`: those shown; `baton store status`: every job,
    /// [`held_back`]); `None` when it grants as usual, or it could not be
    /// read ([`Self::held_back_error`]).
    pub held_back_until: Option<String>,
    /// Why whether the store holds grants back could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_back_error: Option<String>,
}

/// What of the server a connection verified, as `--json` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verified {
    /// Nothing: not encrypted, or encrypted without a check of the server.
    None,
    /// The certificate chains to a trusted authority; the host name is not
    /// checked.
    Ca,
    /// The certificate chains to a trusted authority and names the host.
    CaAndHost,
}

impl From<baton_pg::Verification> for Verified {
    fn from(v: baton_pg::Verification) -> Self {
        match v {
            baton_pg::Verification::Nothing => Verified::None,
            baton_pg::Verification::Chain => Verified::Ca,
            baton_pg::Verification::ChainAndHost => Verified::CaAndHost,
        }
    }
}

impl Connection {
    /// The connection to `store` (host, port, database, user) made as
    /// `link` says: `made` is whether it was encrypted and what it
    /// verified, or why it failed.
    pub fn new(
        store: String,
        link: &baton_pg::examine::Link,
        made: Result<(bool, baton_pg::Verification), impl std::fmt::Display>,
    ) -> Self {
        let (encrypted, verified, error) = match made {
            Ok((e, v)) => (Some(e), Some(v.into()), None),
            Err(why) => (None, None, Some(why.to_string())),
        };
        Self {
            store,
            sslmode: link.sslmode,
            encrypted,
            verified,
            error,
            held_back_until: None,
            held_back_error: None,
        }
    }

    /// This connection's store, said to hold grants back as `hold` found
    /// ([`held_back`]), or why that could not be read.
    pub fn with_hold(mut self, hold: Result<Option<HeldBack>, impl std::fmt::Display>) -> Self {
        match hold {
            Ok(h) => self.held_back_until = h.map(|h| h.until.to_string()),
            Err(why) => self.held_back_error = Some(why.to_string()),
        }
        self
    }

    /// The hold in words, when there is one or it is unknown: `held back
    /// until 2026-… (new primary: leases granted after every old holder's
    /// TTL and grace)`.
    pub fn hold_words(&self) -> Option<String> {
        if let Some(why) = &self.held_back_error {
            return Some(format!(
                "held back: unknown (whether grants are held back after a new primary could \
                 not be read: {why})"
            ));
        }
        self.held_back_until.as_ref().map(|until| {
            format!(
                "held back until {until} (new primary: leases granted after every old \
                 holder's TTL and grace)"
            )
        })
    }

    /// The connection in words: `sslmode=verify-full, encrypted, the server
    /// verified (CA and host name)`.
    pub fn words(&self) -> String {
        let how = match (self.encrypted, self.verified, &self.error) {
            (Some(true), Some(Verified::CaAndHost), _) => {
                "encrypted, the server verified (CA and host name)".to_owned()
            }
            (Some(true), Some(Verified::Ca), _) => {
                "encrypted, the server verified (CA only, not the host name)".to_owned()
            }
            (Some(true), _, _) => "encrypted, the server not verified".to_owned(),
            (Some(false), _, _) => "not encrypted".to_owned(),
            (None, _, Some(why)) => format!("no connection could be made: {why}"),
            (None, _, None) => "no connection could be made".to_owned(),
        };
        format!("sslmode={}, {how}", self.sslmode)
    }
}

/// Whether `store` grants nothing now because its server changed (a
/// failover, a restore), for the longest TTL plus takeover grace of
/// `config`'s jobs ([`super::Store::held_back`]): when, and until when;
/// `None` when it grants as usual (always with local files, or without
/// jobs).
///
/// # Errors
///
/// When the store cannot be read.
pub fn held_back(
    config: &Config,
    store: &dyn super::Store,
) -> Result<Option<HeldBack>, super::Error> {
    let locks: Vec<_> = config.jobs.values().map(|j| j.lock_ref()).collect();
    store.held_back(&locks)
}

/// The connection to `config`'s PostgreSQL store, made once now and
/// closed ([`Connection`]); `None` without one.
///
/// # Errors
///
/// When `[store]` cannot be used at all (its URL, its password or a TLS
/// setting): the message names the setting.
pub fn connection(config: &Config) -> Option<Result<Connection, super::Unusable>> {
    let s = config.store.as_ref()?;
    Some(super::postgres(s).map(|pg| {
        let (target, link) = pg.link();
        let made = pg.secured().map(|m| (m.encrypted, m.verified));
        Connection::new(target, &link, made)
    }))
}

/// As [`connection`], said of a connection already made to the store (the
/// ledger's), `encrypted` or not: nothing is connected again. What of the
/// server was verified follows from the settings, as for a connection made
/// now.
///
/// # Errors
///
/// As [`connection`].
pub fn connection_made(
    config: &Config,
    encrypted: bool,
) -> Option<Result<Connection, super::Unusable>> {
    let s = config.store.as_ref()?;
    Some(super::postgres(s).map(|pg| {
        let (target, link) = pg.link();
        let verified = if encrypted {
            pg.verification()
        } else {
            baton_pg::Verification::Nothing
        };
        Connection::new(
            target,
            &link,
            Ok::<_, std::convert::Infallible>((encrypted, verified)),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_pg::Verification;

    fn link(sslmode: &'static str) -> baton_pg::examine::Link {
        baton_pg::examine::Link {
            sslmode,
            host: "db.example".into(),
            unix: false,
            local: false,
        }
    }

    #[test]
    fn the_connection_says_how_it_was_made_and_what_was_verified() {
        let said = |mode, made| Connection::new("db".into(), &link(mode), made).words();
        for (mode, made, words, verified) in [
            (
                "verify-full",
                Ok((true, Verification::ChainAndHost)),
                "sslmode=verify-full, encrypted, the server verified (CA and host name)",
                "\"ca-and-host\"",
            ),
            (
                "verify-ca",
                Ok((true, Verification::Chain)),
                "sslmode=verify-ca, encrypted, the server verified (CA only, not the host name)",
                "\"ca\"",
            ),
            (
                "require",
                Ok((true, Verification::Nothing)),
                "sslmode=require, encrypted, the server not verified",
                "\"none\"",
            ),
            (
                "prefer",
                Ok((false, Verification::Nothing)),
                "sslmode=prefer, not encrypted",
                "\"none\"",
            ),
            (
                "verify-full",
                Err("refused".to_owned()),
                "sslmode=verify-full, no connection could be made: refused",
                "null",
            ),
        ] {
            assert_eq!(said(mode, made.clone()), words);
            let c = Connection::new("db".into(), &link(mode), made);
            let json = serde_json::to_value(&c).unwrap();
            assert_eq!(json["verified"].to_string(), verified, "{json}");
        }
    }

    #[test]
    fn a_hold_is_said_until_when_and_null_when_there_is_none() {
        let made = || {
            Connection::new(
                "db".into(),
                &link("prefer"),
                Ok::<_, String>((false, Verification::Nothing)),
            )
        };
        let none = made().with_hold(Ok::<_, String>(None));
        assert_eq!(none.hold_words(), None);
        let json = serde_json::to_value(&none).unwrap();
        assert!(json["held_back_until"].is_null(), "{json}");
        assert!(json.get("held_back_error").is_none(), "{json}");

        let hold = HeldBack {
            switched: "2026-01-01T00:00:00Z".parse().unwrap(),
            until: "2026-01-01T00:00:08.5Z".parse().unwrap(),
        };
        let held = made().with_hold(Ok::<_, String>(Some(hold)));
        assert_eq!(
            held.hold_words().as_deref(),
            Some(
                "held back until 2026-01-01T00:00:08.5Z (new primary: leases granted after \
                 every old holder's TTL and grace)"
            )
        );
        let json = serde_json::to_value(&held).unwrap();
        assert_eq!(json["held_back_until"], "2026-01-01T00:00:08.5Z", "{json}");

        let unknown = made().with_hold(Err("timed out"));
        assert!(unknown.hold_words().unwrap().contains("unknown"));
        let json = serde_json::to_value(&unknown).unwrap();
        assert!(json["held_back_until"].is_null(), "{json}");
        assert_eq!(json["held_back_error"], "timed out", "{json}");
    }
}
