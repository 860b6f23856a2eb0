//! A throwaway PostgreSQL server for tests that need a real one.
//!
//! [`PgServer::start`] runs Debian's `initdb` into a fresh temporary directory
//! and starts the server with `pg_ctl`, listening on `127.0.0.1` at a free
//! port and on a unix socket inside that directory; dropping the value stops
//! the server (`pg_ctl stop -m immediate`) and removes the directory. The
//! cluster trusts every local connection (TCP needs a password after
//! [`PgServer::start_with_password`]) and has one superuser, `baton`.
//! Durability is off (`fsync=off`): a test server is thrown away, and a test
//! asserts behaviour, never speed. [`PgServer::start_with_tls`] turns TLS
//! on with a certificate a test made ([`crate::ca`]), and can demand a
//! client certificate on TCP.
//!
//! PostgreSQL refuses to run as root. When the tests run as root (as CI
//! does), the directory is handed to the `postgres` system user that Debian's
//! package creates, and `initdb` and `pg_ctl` run as that user through
//! `runuser`; the test process itself stays root and connects over TCP or the
//! socket. Running as another user, the server runs as that user.
//!
//! This module never touches a server it did not start, and never leaves one
//! running: a server that fails to start is stopped before the test fails.
//! When PostgreSQL is not installed, [`PgServer::start`] fails the test with
//! a message naming the package.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The Debian package that provides the server binaries.
pub const PACKAGE: &str = "postgresql";

/// The superuser of every test cluster.
pub const USER: &str = "baton";

/// A running PostgreSQL server in a temporary directory. Dropping it stops
/// the server and removes the directory.
#[derive(Debug)]
pub struct PgServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    run_as: Option<String>,
    /// Settings given to the server at each start (`-c name=value …`).
    settings: String,
}

/// TLS for a test server ([`PgServer::start_with_tls`]).
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// The server's certificate and key.
    pub server: crate::ca::Issued,
    /// When set, TCP connections must be encrypted and present a client
    /// certificate this authority signed, whose common name is the user
    /// (`hostssl … cert`); the unix socket still trusts.
    pub client_ca_pem: Option<String>,
}

impl PgServer {
    /// The server the tests running now share: started by the first to
    /// ask, stopped when the last one drops it (a static would never stop
    /// it). Each test makes a database of its own on it.
    pub fn shared() -> std::sync::Arc<PgServer> {
        use std::sync::{Arc, Mutex, Weak};
        static SHARED: Mutex<Weak<PgServer>> = Mutex::new(Weak::new());
        let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(server) = shared.upgrade() {
            return server;
        }
        let server = Arc::new(PgServer::start());
        *shared = Arc::downgrade(&server);
        server
    }

    /// Creates a cluster and starts its server.
    ///
    /// # Panics
    ///
    /// When PostgreSQL is not installed (the message names the package),
    /// when running as root without a `postgres` user, or when the server
    /// does not start (the message holds the server's log).
    pub fn start() -> PgServer {
        Self::start_with(None, None)
    }

    /// As [`PgServer::start`], but TCP connections must give `password`
    /// (`scram-sha-256`) as [`USER`]; the unix socket still trusts.
    ///
    /// # Panics
    ///
    /// As [`PgServer::start`].
    pub fn start_with_password(password: &str) -> PgServer {
        Self::start_with(Some(password), None)
    }

    /// As [`PgServer::start`], with `ssl = on` and the certificate `tls`
    /// gives: a client may connect over TCP with TLS or without (unless a
    /// client certificate is demanded, see [`ServerTls`]).
    ///
    /// # Panics
    ///
    /// As [`PgServer::start`], and when the certificate files cannot be
    /// written.
    pub fn start_with_tls(tls: &ServerTls) -> PgServer {
        Self::start_with(None, Some(tls))
    }

    /// A server with a fresh directory of its own (handed to the
    /// `postgres` user when running as root), no cluster in it yet, not
    /// started.
    ///
    /// # Panics
    ///
    /// As [`PgServer::start`].
    pub(crate) fn unstarted() -> PgServer {
        let bin = bin_dir().unwrap_or_else(|| {
            panic!(
                "PostgreSQL is not installed: no initdb under /usr/lib/postgresql/*/bin or on \
                 PATH (install the `{PACKAGE}` package, or set BATON_PG_BIN to its bin directory)"
            )
        });
        let run_as = rustix::process::geteuid().is_root().then(|| {
            system_user("postgres").unwrap_or_else(|| {
                panic!(
                    "running as root, and there is no `postgres` user to run the server as \
                     (the `{PACKAGE}` package creates it)"
                )
            })
        });
        let dir = tempfile::Builder::new()
            .prefix("baton-pg-")
            .tempdir()
            .expect("failed to create a directory for the test server");
        if let Some((uid, gid)) = run_as {
            rustix::fs::chown(
                dir.path(),
                Some(rustix::fs::Uid::from_raw(uid)),
                Some(rustix::fs::Gid::from_raw(gid)),
            )
            .expect("failed to hand the test server's directory to the postgres user");
        }
        PgServer {
            dir,
            bin,
            port: 0,
            run_as: run_as.map(|_| "postgres".to_owned()),
            settings: String::new(),
        }
    }

    /// The uid and gid the server runs as, when not this process's.
    fn owner(&self) -> Option<(u32, u32)> {
        self.run_as.as_deref().and_then(system_user)
    }

    fn start_with(password: Option<&str>, tls: Option<&ServerTls>) -> PgServer {
        Self::start_configured(password, tls, "")
    }

    /// Creates a cluster and starts its server with `settings` (`-c
    /// name=value …`, each start) besides the usual ones.
    pub(crate) fn start_configured(
        password: Option<&str>,
        tls: Option<&ServerTls>,
        settings: &str,
    ) -> PgServer {
        let mut server = Self::unstarted();
        let run_as = server.owner();
        let data = server.data_dir();
        let pwfile = server.dir.path().join("pwfile");
        let mut args: Vec<std::ffi::OsString> = vec![
            "-D".into(),
            data.clone().into(),
            "-U".into(),
            USER.into(),
            "--no-sync".into(),
            "--encoding=UTF8".into(),
            "--locale=C".into(),
        ];
        match password {
            None => args.push("--auth=trust".into()),
            Some(pw) => {
                std::fs::write(&pwfile, format!("{pw}\n"))
                    .expect("failed to write the test server's password file");
                args.extend([
                    "--auth-local=trust".into(),
                    "--auth-host=scram-sha-256".into(),
                    format!("--pwfile={}", pwfile.display()).into(),
                ]);
            }
        }
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let init = server.run("initdb", &args);
        assert!(
            init.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&init.stderr)
        );
        if let Some(tls) = tls {
            server.settings = server.tls_files(tls, run_as);
        }
        server.settings.push_str(settings);
        server.start_on_a_free_port();
        server
    }

    /// Makes the socket directory and starts the server on a free port.
    ///
    /// # Panics
    ///
    /// When it does not start (the message holds the server's log).
    pub(crate) fn start_on_a_free_port(&mut self) {
        std::fs::create_dir(self.socket_dir()).expect("failed to create the socket directory");
        if let Some((uid, gid)) = self.owner() {
            rustix::fs::chown(
                self.socket_dir(),
                Some(rustix::fs::Uid::from_raw(uid)),
                Some(rustix::fs::Gid::from_raw(gid)),
            )
            .expect("failed to hand the socket directory to the postgres user");
        }
        // A free port can be taken by someone else between our probe and the
        // server's bind: try a few.
        let mut last = String::new();
        for _ in 0..5 {
            self.port = free_port();
            let out = self.pg_ctl_start();
            if out.status.success() {
                return;
            }
            self.stop();
            last = format!(
                "{}\n{}",
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(self.log()).unwrap_or_default()
            );
        }
        panic!("the test PostgreSQL server did not start: {last}");
    }

    /// Stops the server as a restart or a crash does (`pg_ctl stop -m
    /// fast`: every connection is ended); [`PgServer::start_again`] brings it
    /// back on the same port with the same data.
    ///
    /// # Panics
    ///
    /// When `pg_ctl` fails.
    pub fn stop_for_now(&self) {
        self.stop_with("fast");
    }

    /// `pg_ctl stop -m MODE`, waiting until the server is down.
    fn stop_with(&self, mode: &str) {
        let data = self.data_dir();
        let out = self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                mode.as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        );
        assert!(
            out.status.success(),
            "pg_ctl stop -m {mode} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the server stopped by [`PgServer::stop_for_now`] again.
    ///
    /// # Panics
    ///
    /// When it does not start (the message holds the server's log).
    pub fn start_again(&self) {
        let out = self.pg_ctl_start();
        assert!(
            out.status.success(),
            "the test PostgreSQL server did not start again: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.log()).unwrap_or_default()
        );
    }

    /// Writes the certificate files of `tls` (the key readable by the
    /// server's user only, as the server demands) and, for client
    /// certificates, the rules that demand them; returns the settings that
    /// turn TLS on.
    fn tls_files(&self, tls: &ServerTls, owner: Option<(u32, u32)>) -> String {
        use std::os::unix::fs::PermissionsExt;
        let write = |name: &str, text: &str, mode: u32| {
            let path = self.dir.path().join(name);
            std::fs::write(&path, text)
                .unwrap_or_else(|e| panic!("failed to write the test server's {name}: {e}"));
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .unwrap_or_else(|e| panic!("failed to restrict the test server's {name}: {e}"));
            if let Some((uid, gid)) = owner {
                rustix::fs::chown(
                    &path,
                    Some(rustix::fs::Uid::from_raw(uid)),
                    Some(rustix::fs::Gid::from_raw(gid)),
                )
                .unwrap_or_else(|e| panic!("failed to hand {name} to the postgres user: {e}"));
            }
            path
        };
        let cert = write("server.crt", &tls.server.cert_pem, 0o644);
        let key = write("server.key", &tls.server.key_pem, 0o600);
        let mut settings = format!(
            " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
            cert.display(),
            key.display()
        );
        if let Some(ca) = &tls.client_ca_pem {
            let ca = write("client-ca.crt", ca, 0o644);
            settings.push_str(&format!(" -c ssl_ca_file={}", ca.display()));
            write(
                "data/pg_hba.conf",
                "local all all trust\nhostssl all all 127.0.0.1/32 cert\n",
                0o600,
            );
        }
        settings
    }

    pub(crate) fn log(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// `pg_ctl start` on this server's port and socket directory, waiting
    /// until it accepts connections.
    fn pg_ctl_start(&self) -> Output {
        let data = self.data_dir();
        let opts = format!(
            "-k {} -p {} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=16MB \
             -c max_connections=300{}",
            self.socket_dir().display(),
            self.port,
            self.settings
        );
        let log = self.log();
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-o".as_ref(),
                opts.as_ref(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
                "start".as_ref(),
            ],
        )
    }

    /// A connection URL over TCP to the `postgres` database, as `baton`.
    pub fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/postgres", self.port)
    }

    /// A connection URL over the unix socket (the socket directory as the
    /// host, URL-encoded).
    pub fn socket_url(&self) -> String {
        let dir = self.socket_dir().display().to_string().replace('/', "%2F");
        format!("postgres://{USER}@{dir}:{}/postgres", self.port)
    }

    /// The TCP port on `127.0.0.1`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the unix socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// Runs `sql` with `psql` over the unix socket, as [`USER`], on the
    /// `postgres` database; returns its rows, one a line, fields separated
    /// by `|`.
    ///
    /// # Panics
    ///
    /// When `psql` fails (the message holds its error).
    pub fn sql(&self, sql: &str) -> String {
        self.sql_in("postgres", sql)
    }

    /// As [`PgServer::sql`], on `database`.
    ///
    /// # Panics
    ///
    /// When `psql` fails (the message holds its error).
    pub fn sql_in(&self, database: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"])
            .arg("-h")
            .arg(self.socket_dir())
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                USER,
                "-d",
                database,
                "-c",
                sql,
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("failed to run psql: {e}"));
        assert!(
            out.status.success(),
            "psql failed on {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
    }

    /// A `psql` session over the unix socket that runs what
    /// [`Psql::send`] gives it, in order, and holds whatever it takes (a
    /// lock, an open transaction) until it is dropped.
    ///
    /// # Panics
    ///
    /// When `psql` cannot be started.
    pub fn session(&self) -> Psql {
        let child = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-q"])
            .arg("-h")
            .arg(self.socket_dir())
            .args(["-p", &self.port.to_string(), "-U", USER, "-d", "postgres"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("failed to run psql: {e}"));
        Psql { child }
    }

    /// Restarts the server (`pg_ctl restart -m fast`): every connection is
    /// closed, and the server answers again on the same port.
    ///
    /// # Panics
    ///
    /// When it does not come back (the message holds its error).
    pub fn restart(&self) {
        let data = self.data_dir();
        let log = self.dir.path().join("server.log");
        let out = self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-m".as_ref(),
                "fast".as_ref(),
                "-w".as_ref(),
                "-t".as_ref(),
                "60".as_ref(),
                "restart".as_ref(),
            ],
        );
        assert!(
            out.status.success(),
            "the test server did not restart: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A backup of `schema` in `database`, as SQL (`pg_dump --clean`).
    ///
    /// # Panics
    ///
    /// When `pg_dump` fails.
    pub fn dump(&self, database: &str, schema: &str) -> Vec<u8> {
        let out = Command::new(self.bin.join("pg_dump"))
            .arg("-h")
            .arg(self.socket_dir())
            .args(["-p", &self.port.to_string(), "-U", USER, "-n", schema])
            .args(["--clean", "--if-exists", database])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("failed to run pg_dump: {e}"));
        assert!(
            out.status.success(),
            "pg_dump failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// Restores a [`PgServer::dump`] into `database`.
    ///
    /// # Panics
    ///
    /// When `psql` fails.
    pub fn restore(&self, database: &str, backup: &[u8]) {
        use std::io::Write;
        let mut child = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1"])
            .arg("-h")
            .arg(self.socket_dir())
            .args(["-p", &self.port.to_string(), "-U", USER, "-d", database])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("failed to run psql: {e}"));
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(backup);
        }
        let out = child.wait_with_output().expect("wait for psql");
        assert!(
            out.status.success(),
            "restoring the backup failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub(crate) fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Stops the server at once, as a crash of the machine does (`pg_ctl
    /// stop -m immediate`: no checkpoint, every connection cut).
    ///
    /// # Panics
    ///
    /// When `pg_ctl` fails (the server was not running).
    pub fn stop_immediately(&self) {
        self.stop_with("immediate");
    }

    /// Kills the server's postmaster with SIGKILL and waits until it is
    /// gone; its backends notice and exit on their own.
    ///
    /// # Panics
    ///
    /// When the server is not running (no `postmaster.pid`).
    pub fn kill(&self) {
        let pidfile = self.data_dir().join("postmaster.pid");
        let text = std::fs::read_to_string(&pidfile)
            .unwrap_or_else(|e| panic!("no {}: {e}", pidfile.display()));
        let pid: i32 = text
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("{} names no pid: {text:?}", pidfile.display()));
        let pid = rustix::process::Pid::from_raw(pid).expect("a positive pid");
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        crate::eventually("the killed postmaster to be gone", || {
            rustix::process::test_kill_process(pid).is_err()
        });
    }

    fn stop(&self) {
        let data = self.data_dir();
        let _ = self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        );
    }

    pub(crate) fn run(&self, program: &str, args: &[&std::ffi::OsStr]) -> Output {
        let exe = self.bin.join(program);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.arg("-u").arg(user).arg("--").arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.args(args)
            .current_dir(self.dir.path())
            .stdin(std::process::Stdio::null());
        cmd.output()
            .unwrap_or_else(|e| panic!("failed to run {}: {e}", exe.display()))
    }
}

/// A `psql` process fed statements one by one ([`PgServer::session`]).
/// Dropping it ends the session, and the server releases what it held.
#[derive(Debug)]
pub struct Psql {
    child: std::process::Child,
}

impl Psql {
    /// Sends `sql` (one or more statements, each ending with `;`). It runs
    /// in the background: wait for its effect on the server.
    ///
    /// # Panics
    ///
    /// When the session has ended.
    pub fn send(&mut self, sql: &str) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().expect("psql's stdin");
        writeln!(stdin, "{sql}").expect("failed to send a statement to psql");
        stdin.flush().expect("failed to send a statement to psql");
    }
}

impl Drop for Psql {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The directory holding `initdb` and `pg_ctl`: `BATON_PG_BIN`, else the
/// newest `/usr/lib/postgresql/N/bin` (Debian keeps them off `PATH`), else
/// wherever `initdb` is on `PATH`.
fn bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("BATON_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let newest = std::fs::read_dir("/usr/lib/postgresql")
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let version: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .max_by_key(|(v, _)| *v)
        .map(|(_, bin)| bin);
    newest.or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .find(|p| p.join("initdb").exists() && p.join("pg_ctl").exists())
    })
}

/// The uid and gid of `name` in `/etc/passwd`.
pub(crate) fn system_user(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut f = line.split(':');
        (f.next()? == name).then_some(())?;
        let _password = f.next()?;
        Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
    })
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("failed to find a free port on 127.0.0.1")
}
