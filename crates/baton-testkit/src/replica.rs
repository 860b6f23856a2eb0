//! A primary and a streaming standby, for tests of a store that fails over.
//!
//! [`Replicated::start`] starts a primary ([`PgServer`]) configured for
//! replication (`wal_level=replica`, WAL senders, a `replication` entry in
//! `pg_hba.conf`), takes a standby from it with `pg_basebackup -R` into a
//! directory and port of its own, starts the standby and waits until it
//! streams. In [`Mode::Synchronous`] the primary names the standby's
//! `application_name` (set in its `primary_conninfo`) in
//! `synchronous_standby_names`, so a commit returns once the standby has
//! flushed it; in [`Mode::Asynchronous`] a commit never waits for it.
//! [`Replicated::detach`] cuts an asynchronous standby off, so that it
//! lags behind what the primary commits from then on.
//! [`Replicated::promote`] makes the standby a primary (`pg_ctl promote`,
//! waiting until `pg_is_in_recovery()` is false); either server is stopped
//! or killed through [`PgServer::stop_immediately`] and [`PgServer::kill`].
//!
//! Dropping the pair stops both servers and removes their directories.
//! This module never touches a server it did not start.

use crate::pg::{PgServer, USER};

/// The standby's `application_name`, as the primary names it.
pub const STANDBY_NAME: &str = "baton_standby";

/// Whether a commit on the primary waits for the standby.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A commit returns once the standby has flushed its WAL
    /// (`synchronous_standby_names`, `synchronous_commit = on`).
    Synchronous,
    /// A commit never waits for the standby.
    Asynchronous,
}

/// A primary and its standby. Dropping it stops both.
#[derive(Debug)]
pub struct Replicated {
    primary: PgServer,
    standby: PgServer,
    mode: Mode,
}

impl Replicated {
    /// Starts a primary, and a standby streaming from it in `mode`.
    ///
    /// # Panics
    ///
    /// As [`PgServer::start`]; when `pg_basebackup` fails, or the standby
    /// does not start or stream (the message holds what was said).
    pub fn start(mode: Mode) -> Replicated {
        let mut settings = " -c wal_level=replica -c max_wal_senders=5".to_owned();
        if mode == Mode::Synchronous {
            settings.push_str(&format!(" -c synchronous_standby_names={STANDBY_NAME}"));
        }
        let primary = PgServer::start_configured(None, None, &settings);
        // initdb's rules may already allow it; this one says so whatever
        // they are.
        let hba = primary.data_dir().join("pg_hba.conf");
        let mut rules = std::fs::read_to_string(&hba).expect("read the primary's pg_hba.conf");
        rules.push_str("\nhost replication all 127.0.0.1/32 trust\n");
        std::fs::write(&hba, rules).expect("write the primary's pg_hba.conf");
        primary.sql("SELECT pg_reload_conf()");

        let mut standby = PgServer::unstarted();
        let data = standby.data_dir();
        let port = primary.port().to_string();
        let out = standby.run(
            "pg_basebackup",
            &[
                "-h".as_ref(),
                "127.0.0.1".as_ref(),
                "-p".as_ref(),
                port.as_ref(),
                "-U".as_ref(),
                USER.as_ref(),
                "-D".as_ref(),
                data.as_os_str(),
                "-R".as_ref(),
                "-X".as_ref(),
                "stream".as_ref(),
                "--no-sync".as_ref(),
            ],
        );
        assert!(
            out.status.success(),
            "pg_basebackup failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // `-R` wrote standby.signal and a primary_conninfo; this one, read
        // after it, names the standby so the primary can wait for it.
        let auto = data.join("postgresql.auto.conf");
        let mut conf = std::fs::read_to_string(&auto).expect("read postgresql.auto.conf");
        conf.push_str(&format!(
            "\nprimary_conninfo = 'host=127.0.0.1 port={port} user={USER} \
             application_name={STANDBY_NAME}'\n"
        ));
        std::fs::write(&auto, conf).expect("write postgresql.auto.conf");
        standby.start_on_a_free_port();
        let pair = Replicated {
            primary,
            standby,
            mode,
        };
        let sync = match mode {
            Mode::Synchronous => "sync",
            Mode::Asynchronous => "async",
        };
        let streaming = format!(
            "SELECT count(*) FROM pg_stat_replication WHERE application_name = '{STANDBY_NAME}' \
             AND state = 'streaming' AND sync_state = '{sync}'"
        );
        crate::eventually("the standby to stream from the primary", || {
            pair.primary.sql(&streaming) == "1"
        });
        pair
    }

    /// The primary (until [`Replicated::promote`]).
    pub fn primary(&self) -> &PgServer {
        &self.primary
    }

    /// The standby (the primary after [`Replicated::promote`]).
    pub fn standby(&self) -> &PgServer {
        &self.standby
    }

    /// How commits wait for the standby.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// A URL naming both servers, the primary first, that connects only to
    /// one that takes writes (`target_session_attrs=read-write`).
    pub fn url(&self) -> String {
        format!(
            "postgres://{USER}@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
            self.primary.port(),
            self.standby.port()
        )
    }

    /// Waits until the standby has replayed everything the primary has
    /// written so far.
    ///
    /// # Panics
    ///
    /// When it does not catch up in time, or either server cannot be read.
    pub fn caught_up(&self) {
        let lsn = self.primary.sql("SELECT pg_current_wal_lsn()");
        let replayed = format!("SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn");
        crate::eventually("the standby to replay the primary's WAL", || {
            self.standby.sql(&replayed) == "t"
        });
    }

    /// Stops the standby's WAL receiver (its `primary_conninfo` emptied and
    /// reloaded) and waits until it is gone: from now on the standby lags,
    /// as an asynchronous standby cut off from its primary does, and what
    /// the primary commits is not on it. A promotion then loses it.
    ///
    /// # Panics
    ///
    /// In [`Mode::Synchronous`] (every commit would wait for the standby),
    /// or when the receiver does not stop.
    pub fn detach(&self) {
        assert_eq!(
            self.mode,
            Mode::Asynchronous,
            "a synchronous standby cannot be detached: every commit would wait for it"
        );
        self.standby.sql("ALTER SYSTEM SET primary_conninfo = ''");
        self.standby.sql("SELECT pg_reload_conf()");
        crate::eventually("the standby's WAL receiver to stop", || {
            self.standby
                .sql("SELECT count(*) FROM pg_stat_wal_receiver")
                == "0"
        });
    }

    /// Promotes the standby to a primary (`pg_ctl promote`) and waits until
    /// it takes writes (`pg_is_in_recovery()` false).
    ///
    /// # Panics
    ///
    /// When `pg_ctl promote` fails, or the standby stays in recovery.
    pub fn promote(&self) {
        let data = self.standby.data_dir();
        let out = self.standby.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
                "promote".as_ref(),
            ],
        );
        assert!(
            out.status.success(),
            "pg_ctl promote failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.standby.log()).unwrap_or_default()
        );
        crate::eventually("the promoted standby to leave recovery", || {
            self.standby.sql("SELECT pg_is_in_recovery()") == "f"
        });
    }
}
