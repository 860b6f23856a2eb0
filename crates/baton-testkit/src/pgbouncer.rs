//! A throwaway PgBouncer in front of a test's [`PgServer`], in transaction
//! pooling mode (or another, [`PgBouncer::start_in`]), for tests of the
//! store behind a pooler.
//!
//! [`PgBouncer::start`] writes a configuration into a fresh temporary
//! directory (every database of the server, `auth_type = trust` with a
//! userlist naming [`crate::pg::USER`], `pool_mode = transaction`, a few
//! server connections per database so that clients share them, no unix
//! socket) and runs Debian's `/usr/sbin/pgbouncer` in the foreground on
//! `127.0.0.1` at a free port, as a child of the test. Dropping the value
//! kills it and waits for it; [`PgBouncer::stop`] does the same sooner.
//!
//! PgBouncer refuses to run as root: when the tests run as root, it runs as
//! the `postgres` system user, as the server does. Nothing it starts
//! outlives the test; a bouncer that does not listen within the wait fails
//! the test with its log. When PgBouncer is not installed, the test fails
//! naming the package.

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::pg::{PgServer, USER, free_port, system_user};

/// The Debian package that provides PgBouncer.
pub const PACKAGE: &str = "pgbouncer";

/// Where Debian installs it.
const BIN: &str = "/usr/sbin/pgbouncer";

/// Server connections per database and user: fewer than the clients of a
/// test, so transactions of different clients share them.
const POOL_SIZE: u32 = 3;

/// A running PgBouncer in transaction pooling mode. Dropping it kills it.
#[derive(Debug)]
pub struct PgBouncer {
    dir: tempfile::TempDir,
    port: u16,
    child: Mutex<Option<Child>>,
}

impl PgBouncer {
    /// Starts a PgBouncer in front of `server`.
    ///
    /// # Panics
    ///
    /// When PgBouncer is not installed, its files cannot be written, or it
    /// does not listen within a few seconds (the message holds its log).
    pub fn start(server: &PgServer) -> PgBouncer {
        Self::start_in(server, "transaction")
    }

    /// Starts a PgBouncer in front of `server` in `pool_mode` (`session`,
    /// `transaction` or `statement`).
    ///
    /// # Panics
    ///
    /// As [`PgBouncer::start`].
    pub fn start_in(server: &PgServer, pool_mode: &str) -> PgBouncer {
        assert!(
            Path::new(BIN).exists(),
            "PgBouncer is not installed: no {BIN} (install the `{PACKAGE}` package)"
        );
        let run_as = rustix::process::geteuid().is_root().then(|| {
            system_user("postgres").unwrap_or_else(|| {
                panic!("running as root, and there is no `postgres` user to run PgBouncer as")
            })
        });
        let mut last = String::new();
        // A free port can be taken by someone else between our probe and
        // PgBouncer's bind: try a few.
        for _ in 0..5 {
            let bouncer = Self::spawn(server, pool_mode, run_as, free_port());
            if bouncer.listens() {
                return bouncer;
            }
            bouncer.stop();
            last = bouncer.log();
        }
        panic!("PgBouncer did not start: {last}");
    }

    /// Writes a configuration for `server` and `port` into a new
    /// directory and starts PgBouncer on it, as `run_as` when given.
    fn spawn(
        server: &PgServer,
        pool_mode: &str,
        run_as: Option<(u32, u32)>,
        port: u16,
    ) -> PgBouncer {
        let dir = tempfile::Builder::new()
            .prefix("baton-pgbouncer-")
            .tempdir()
            .expect("failed to create a directory for PgBouncer");
        let config = write_config(dir.path(), pool_mode, server.port(), port);
        if let Some((uid, gid)) = run_as {
            for f in ["pgbouncer.ini", "userlist.txt"] {
                rustix::fs::chown(
                    dir.path().join(f),
                    Some(rustix::fs::Uid::from_raw(uid)),
                    Some(rustix::fs::Gid::from_raw(gid)),
                )
                .expect("failed to hand PgBouncer's files to the postgres user");
            }
        }
        let log = std::fs::File::create(dir.path().join("log"))
            .expect("failed to create PgBouncer's log");
        let mut cmd = Command::new(BIN);
        cmd.arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("PgBouncer's log"))
            .stderr(log);
        if let Some((uid, gid)) = run_as {
            cmd.uid(uid).gid(gid);
        }
        let child = cmd.spawn().expect("failed to start pgbouncer");
        PgBouncer {
            dir,
            port,
            child: Mutex::new(Some(child)),
        }
    }

    /// A connection URL through PgBouncer to the `postgres` database, as
    /// the server's superuser.
    pub fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/postgres", self.port)
    }

    /// The TCP port on `127.0.0.1`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What PgBouncer logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// Kills PgBouncer and waits for it; every client connection through
    /// it ends. Dropping does the same.
    pub fn stop(&self) {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut c) = child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Whether PgBouncer accepts connections within the wait, and still
    /// runs.
    fn listens(&self) -> bool {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            let exited = {
                let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
                child
                    .as_mut()
                    .is_none_or(|c| c.try_wait().ok().flatten().is_some())
            };
            if exited {
                return false;
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Writes `pgbouncer.ini` and `userlist.txt` into `dir` for a server on
/// `server_port`, pooling in `pool_mode`, listening on `port`; returns the
/// configuration's path.
fn write_config(dir: &Path, pool_mode: &str, server_port: u16, port: u16) -> PathBuf {
    let userlist = dir.join("userlist.txt");
    std::fs::write(&userlist, format!("\"{USER}\" \"\"\n"))
        .expect("failed to write PgBouncer's userlist");
    let config = dir.join("pgbouncer.ini");
    let text = format!(
        "[databases]\n\
         * = host=127.0.0.1 port={server_port}\n\
         \n\
         [pgbouncer]\n\
         listen_addr = 127.0.0.1\n\
         listen_port = {port}\n\
         unix_socket_dir =\n\
         auth_type = trust\n\
         auth_file = {userlist}\n\
         pool_mode = {pool_mode}\n\
         default_pool_size = {POOL_SIZE}\n\
         max_client_conn = 500\n\
         admin_users = {USER}\n",
        userlist = userlist.display(),
    );
    std::fs::write(&config, text).expect("failed to write PgBouncer's configuration");
    config
}
