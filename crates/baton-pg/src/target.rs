//! Where the store is and how baton authenticates to it: a URL completed
//! from the standard libpq variables and a password from the first place
//! that gives one.
//!
//! What the URL leaves out comes from `PGHOST` (else `localhost`), `PGPORT`
//! (else 5432), `PGUSER` (else `USER`), `PGDATABASE` (else the server's
//! default, the user's name). The password is the URL's; else the
//! configured password file's first line; else `PGPASSWORD`; else, for
//! each host the URL names, the first line matching it of the file
//! `PGPASSFILE` names (`crate::passfile`; `~/.pgpass` is not read unless
//! `PGPASSFILE` names it). The first three give every host the same
//! password; hosts whose lines differ are each tried with their own
//! (`crate::by_host`). The environment is passed in as
//! a function, so this module never reads the process's own.
//!
//! The URL's TLS parameters (`sslmode`, `sslrootcert`, `sslcert`,
//! `sslkey`) are read here, as libpq reads them (the `tls` module says what
//! each mode does), or given beside the URL ([`Settings`]), never both;
//! `PGSSLMODE` and the other libpq TLS variables are not read.
//!
//! A password file (the configured one, or `PGPASSFILE`'s) its group or
//! others may read is used, and said as a [`Warning`] the caller shows
//! ([`Target::warnings`]).
//!
//! A [`Target`] never shows its password: its `Debug` and
//! [`Target::describe`] name host, port, database and user only.

use std::path::Path;

use tokio_postgres::Config;
use tokio_postgres::config::Host;

use crate::by_host::{self, Attempt, ByHost};
use crate::error::Error;
use crate::passfile::PassFile;
use crate::settings::{Settings, url_params};
use crate::tls::{self, ParamError, Tls, Verification};
use crate::warning::Warning;

/// A resolved store connection: the driver's configuration, password
/// included, and how the connection is encrypted.
#[derive(Clone)]
pub struct Target {
    pub(crate) config: Config,
    pub(crate) tls: Tls,
    warnings: Vec<Warning>,
    /// Each host's password, when they differ (a line of `PGPASSFILE`
    /// each); `None` when the driver's configuration holds the one every
    /// host takes.
    by_host: Option<ByHost>,
    /// Whether the lease's statements are prepared once per connection
    /// ([`Settings::prepare`]).
    prepare: bool,
    /// The URL's own `connect_timeout`: how long each of its hosts is given
    /// to take a connection, as libpq gives it.
    connect_timeout: Option<std::time::Duration>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Target({})", self.describe())
    }
}

impl Target {
    /// Completes `url` from `env` (`PGHOST` …) and finds its password.
    ///
    /// # Errors
    ///
    /// [`Error::Url`] when the URL does not parse (the driver's message
    /// names the option, never its value); [`Error::UrlParam`] when a TLS
    /// parameter cannot be used (an unknown `sslmode`, `sslcert` without
    /// `sslkey`); [`Error::PasswordFile`] when the
    /// password file, or the file `PGPASSFILE` names, cannot be read.
    ///
    /// # Example
    ///
    /// ```
    /// let env = |name: &str| (name == "PGPORT").then(|| "5433".to_owned());
    /// let t = baton_pg::Target::resolve("postgres://baton@db.example/baton", None, &env)?;
    /// assert_eq!(t.describe(), "db.example:5433 (database baton, user baton)");
    /// # Ok::<(), baton_pg::Error>(())
    /// ```
    pub fn resolve(
        url: &str,
        password_file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let settings = Settings {
            password_file: password_file.map(Path::to_owned),
            ..Settings::default()
        };
        Self::resolve_with(url, &settings, env)
    }

    /// As [`Target::resolve`], with the settings given beside the URL: the
    /// password file, and TLS settings the URL does not name.
    ///
    /// # Errors
    ///
    /// As [`Target::resolve`], and [`Error::UrlParam`] when a TLS setting
    /// is given both in `settings` and in the URL (it names the setting).
    ///
    /// # Example
    ///
    /// ```
    /// use baton_pg::{Settings, SslMode, Target, Verification};
    /// let settings = Settings {
    ///     sslmode: Some(SslMode::VerifyFull),
    ///     ..Settings::default()
    /// };
    /// let t = Target::resolve_with("postgres://baton@db.example/baton", &settings, &|_| None)?;
    /// assert_eq!(t.verification(), Verification::ChainAndHost);
    /// let twice = "postgres://baton@db.example/baton?sslmode=require";
    /// assert!(Target::resolve_with(twice, &settings, &|_| None).is_err());
    /// # Ok::<(), baton_pg::Error>(())
    /// ```
    pub fn resolve_with(
        url: &str,
        settings: &Settings,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let password_file = settings.password_file.as_deref();
        let given = settings.tls_params().map_err(Error::UrlParam)?;
        let twice = url_params(url)
            .into_iter()
            .find(|p| given.iter().any(|(g, _)| g == p));
        if let Some(param) = twice {
            return Err(Error::UrlParam(ParamError {
                param,
                why: "is given both in the url and beside it: give it in one place only".to_owned(),
            }));
        }
        let var = |name: &str| env(name).filter(|v| !v.is_empty());
        let pgport = match var("PGPORT") {
            Some(p) => Some(p.trim().parse::<u16>().map_err(|_| Error::Env {
                name: "PGPORT",
                why: format!("{p:?} is not a port number"),
            })?),
            None => None,
        };
        // The driver reads a host without a port as port 5432, so PGPORT
        // goes into the URL's text before it is parsed.
        let url = match pgport {
            Some(port) => with_default_port(url, port),
            None => url.to_owned(),
        };
        let Self {
            mut config,
            tls,
            mut warnings,
            connect_timeout,
            ..
        } = Self::from_url_with(&url, given)?;
        if config.get_hosts().is_empty() {
            let hosts = var("PGHOST").unwrap_or_else(|| "localhost".to_owned());
            for h in hosts.split(',') {
                config.host(h);
            }
        }
        if let (true, Some(port)) = (config.get_ports().is_empty(), pgport) {
            config.port(port);
        }
        if let (None, Some(u)) = (config.get_user(), var("PGUSER").or_else(|| var("USER"))) {
            config.user(u);
        }
        if let (None, Some(d)) = (config.get_dbname(), var("PGDATABASE")) {
            config.dbname(d);
        }
        let mut by_host = None;
        if config.get_password().is_none() {
            if let Some(path) = password_file {
                // Read as the daemon's token file is: never through a
                // link, a pipe or a device, only a file nobody else may
                // read, write or swap.
                let secret = baton_lease::secret::read(path).map_err(Error::PasswordFileRefused)?;
                let text = String::from_utf8_lossy(&secret);
                config.password(text.lines().next().unwrap_or_default());
            } else if let Some(pw) = var("PGPASSWORD") {
                config.password(pw);
            } else if let Some(file) = var("PGPASSFILE") {
                let (file, warned) = PassFile::read(Path::new(&file))?;
                warnings.extend(warned);
                let (db, user) = db_and_user(&config);
                let each = by_host::hosts(&config)
                    .into_iter()
                    .map(|(host, port)| file.lookup(&host, port, &db, &user))
                    .collect();
                match ByHost::of(each) {
                    Ok(differ) => by_host = Some(differ),
                    Err(Some(pw)) => {
                        config.password(pw);
                    }
                    Err(None) => {}
                }
            }
        }
        Ok(Self {
            config,
            tls,
            warnings,
            by_host,
            prepare: settings.prepare,
            connect_timeout,
        })
    }

    /// Whether the lease's statements (acquire, renew, release …) are
    /// prepared by name the first time a connection sends each, and reused
    /// from then on, instead of being sent unnamed and parsed and planned
    /// every time ([`Settings::prepare`]). A prepared statement lives on
    /// one server connection: behind a pooler in transaction mode that
    /// does not carry it from one server connection to the next (PgBouncer
    /// before 1.21, or without `max_prepared_statements`), the next
    /// transaction may find another client's statement under its name.
    pub fn prepares(&self) -> bool {
        self.prepare
    }

    /// The hosts a connection tries, in turn: the target's own
    /// configuration when it names one host; else one per host, each with
    /// its password ([`crate::by_host`]).
    pub(crate) fn attempts(&self) -> Vec<Attempt> {
        if by_host::hosts(&self.config).len() < 2 {
            return vec![Attempt {
                host: self.describe(),
                config: self.config.clone(),
            }];
        }
        match &self.by_host {
            Some(by_host) => by_host.attempts(&self.config),
            None => {
                let password = self.config.get_password().map(<[u8]>::to_vec);
                by_host::each(&self.config, |_| password.clone())
            }
        }
    }

    /// The URL's own `connect_timeout`, if it gives one.
    pub(crate) fn connect_timeout(&self) -> Option<std::time::Duration> {
        self.connect_timeout
    }

    /// `url` as it is, completed from nothing: its TLS parameters read,
    /// the rest parsed by the driver.
    pub(crate) fn from_url(url: &str) -> Result<Self, Error> {
        Self::from_url_with(url, Vec::new())
    }

    /// As [`Target::from_url`], with TLS parameters `given` beside the URL
    /// (none of them also in it).
    fn from_url_with(url: &str, given: Vec<(String, String)>) -> Result<Self, Error> {
        let (rest, mut params) = tls::split_url(url);
        params.extend(given);
        let mut config: Config = rest.parse().map_err(Error::Url)?;
        let tls = Tls::from_params(&params, config.get_ssl_mode()).map_err(Error::UrlParam)?;
        config.ssl_mode(tls.driver_mode());
        let connect_timeout = config.get_connect_timeout().copied();
        Ok(Self {
            config,
            tls,
            warnings: Vec::new(),
            by_host: None,
            prepare: false,
            connect_timeout,
        })
    }

    /// What resolving found worth saying (a password file others may
    /// read); the caller says it, this crate never prints.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// What an encrypted connection to this target checks of the server,
    /// as configured: nothing (`prefer`, `require`), the certificate's
    /// chain (`verify-ca`, or `sslrootcert` given), or its chain and the
    /// host name (`verify-full`).
    pub fn verification(&self) -> Verification {
        self.tls.verification()
    }

    /// Host, port, database and user, for messages (never the password).
    /// A URL naming several hosts names each with its port
    /// (`db1:5432,db2:5432 (database …)`): which of them answered is the
    /// driver's to know.
    pub fn describe(&self) -> String {
        let (host, port, db, user) = self.parts();
        let hosts = self.config.get_hosts();
        if hosts.len() < 2 {
            return format!("{host}:{port} (database {db}, user {user})");
        }
        let ports = self.config.get_ports();
        let each: Vec<String> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
                match h {
                    Host::Tcp(h) => format!("{h}:{port}"),
                    Host::Unix(p) => format!("{}:{port}", p.display()),
                }
            })
            .collect();
        format!("{} (database {db}, user {user})", each.join(","))
    }

    fn parts(&self) -> (String, u16, String, String) {
        let host = match self.config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "localhost".to_owned(),
        };
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        let (db, user) = db_and_user(&self.config);
        (host, port, db, user)
    }
}

/// The database and user `config` names: the user's name for a database
/// it leaves out, and `-` for a user it leaves out.
fn db_and_user(config: &Config) -> (String, String) {
    let user = config.get_user().unwrap_or("-").to_owned();
    let db = config
        .get_dbname()
        .map_or_else(|| user.clone(), str::to_owned);
    (db, user)
}

/// `url` with `:port` added to each host of its host list that names no
/// port (the text is unchanged when it names no host).
fn with_default_port(url: &str, port: u16) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[start..];
    let query = rest.find('?').unwrap_or(rest.len());
    let hosts_at = rest[..query].rfind('@').map_or(0, |i| i + 1);
    let hosts_len = rest[hosts_at..]
        .find(['/', '?'])
        .unwrap_or(rest.len() - hosts_at);
    let hosts = &rest[hosts_at..hosts_at + hosts_len];
    if hosts.is_empty() {
        return url.to_owned();
    }
    let with: Vec<String> = hosts
        .split(',')
        .map(|h| {
            let has_port = match h.strip_prefix('[') {
                Some(v6) => v6.contains("]:"),
                None => h.contains(':'),
            };
            if has_port {
                h.to_owned()
            } else {
                format!("{h}:{port}")
            }
        })
        .collect();
    format!(
        "{}{}{}{}",
        &url[..start],
        &rest[..hosts_at],
        with.join(","),
        &rest[hosts_at + hosts_len..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn password(t: &Target) -> Option<String> {
        t.config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned())
    }

    #[test]
    fn the_pg_variables_fill_what_the_url_leaves_out() {
        let vars = [
            ("PGHOST", "db.example"),
            ("PGPORT", "6543"),
            ("PGUSER", "ops"),
            ("PGDATABASE", "sched"),
            ("PGPASSWORD", "pw"),
        ];
        let t = Target::resolve("postgres://", None, &env(&vars)).unwrap();
        assert_eq!(t.describe(), "db.example:6543 (database sched, user ops)");
        assert_eq!(password(&t).as_deref(), Some("pw"));
        let t = Target::resolve("postgres://baton:url@h:1/d", None, &env(&vars)).unwrap();
        assert_eq!(t.describe(), "h:1 (database d, user baton)");
        assert_eq!(password(&t).as_deref(), Some("url"));
    }

    #[test]
    fn the_password_file_comes_before_pgpassword() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "from-file\nignored\n").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let vars = [("PGPASSWORD", "from-env")];
        let t = Target::resolve("postgres://u@h/d", Some(&file), &env(&vars)).unwrap();
        assert_eq!(password(&t).as_deref(), Some("from-file"));
        let missing = dir.path().join("nope");
        let e = Target::resolve("postgres://u@h/d", Some(&missing), &env(&vars)).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("[store] password_file") && e.contains("failed to open"),
            "{e}"
        );
    }

    #[test]
    fn pgpassfile_lines_match_host_port_database_and_user() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(
            &file,
            "# comment\nother:5432:*:u:no\nh:5432:d:u:first\\:half\n*:*:*:*:any\n",
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let vars = [("PGPASSFILE", f)];
        let t = Target::resolve("postgres://u@h/d", None, &env(&vars)).unwrap();
        assert_eq!(password(&t).as_deref(), Some("first:half"));
        let t = Target::resolve("postgres://x@h/d", None, &env(&vars)).unwrap();
        assert_eq!(password(&t).as_deref(), Some("any"));
    }

    #[test]
    fn pgpassfile_gives_each_host_its_own_line() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(
            &file,
            "db1:5433:d:u:one\\:x\ndb2:5434:*:*:two\n*:*:*:*:other\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let vars = [("PGPASSFILE", file.to_str().unwrap())];
        let url = "postgres://u@db1:5433,db2:5434,db3:5435/d?target_session_attrs=read-write";
        let t = Target::resolve(url, None, &env(&vars)).unwrap();
        assert!(t.warnings().is_empty(), "{:?}", t.warnings());
        let each: Vec<(String, Option<String>)> = t
            .attempts()
            .iter()
            .map(|a| {
                let c = &a.config;
                let [Host::Tcp(h)] = c.get_hosts() else {
                    panic!("{:?}", c.get_hosts())
                };
                let pw = c
                    .get_password()
                    .map(|p| String::from_utf8_lossy(p).into_owned());
                (h.clone(), pw)
            })
            .collect();
        let want = |h: &str, p: &str| (h.to_owned(), Some(p.to_owned()));
        assert_eq!(
            each,
            [
                want("db1", "one:x"),
                want("db2", "two"),
                want("db3", "other")
            ]
        );
        assert!(!format!("{t:?}").contains("two"));
        // The same line for every host: each host is still tried alone,
        // with that password.
        let t = Target::resolve("postgres://x@a,b/d", None, &env(&vars)).unwrap();
        let attempts = t.attempts();
        assert_eq!(attempts.len(), 2);
        for a in &attempts {
            assert_eq!(a.config.get_hosts().len(), 1);
            assert_eq!(a.config.get_password(), Some(&b"other"[..]));
        }
        assert_eq!(password(&t).as_deref(), Some("other"));
        // A file others may read is used, and said.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let t = Target::resolve(url, None, &env(&vars)).unwrap();
        let [w] = t.warnings() else {
            panic!("{:?}", t.warnings())
        };
        assert!(w.to_string().contains("mode 644"), "{w}");
        assert_eq!(t.attempts().len(), 3);
    }

    #[test]
    fn a_target_never_shows_its_password() {
        let t = Target::resolve("postgres://u:s3cret@h/d", None, &env(&[])).unwrap();
        assert!(!format!("{t:?} {}", t.describe()).contains("s3cret"));
        let e = Target::resolve("postgres://u:s3cret@h:port/d", None, &env(&[])).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        let e = Target::resolve("postgres://u@h/d", None, &env(&[("PGPORT", "x")])).unwrap_err();
        assert!(e.to_string().contains("PGPORT"), "{e}");
    }

    #[test]
    fn settings_beside_the_url_are_used_and_never_doubled() {
        use crate::tls::SslMode;
        let settings = Settings {
            sslmode: Some(SslMode::VerifyCa),
            sslrootcert: Some("/etc/ca.pem".into()),
            ..Settings::default()
        };
        let t = Target::resolve_with("postgres://u@h/d", &settings, &env(&[])).unwrap();
        assert_eq!(
            (t.link().sslmode, t.verification()),
            ("verify-ca", Verification::Chain)
        );
        for url in [
            "postgres://u@h/d?sslmode=require",
            "postgres://u@h/d?sslrootcert=%2Fother.pem",
        ] {
            let e = Target::resolve_with(url, &settings, &env(&[])).unwrap_err();
            let Error::UrlParam(p) = &e else {
                panic!("{url}: {e}")
            };
            assert!(url.contains(p.param), "{url}: {e}");
            assert!(e.to_string().contains("both in the url"), "{e}");
        }
        // What only the URL names stays the URL's.
        let only_mode = Settings {
            sslmode: Some(SslMode::Require),
            ..Settings::default()
        };
        let t = Target::resolve_with("postgres://u@h/d?sslrootcert=system", &only_mode, &env(&[]));
        assert!(t.unwrap_err().to_string().contains("verify-full"));
    }

    #[test]
    fn a_password_file_others_may_read_or_that_is_no_file_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "pw\n").unwrap();
        let set = |mode| {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            Target::resolve("postgres://u@h/d", Some(&file), &env(&[]))
        };
        let t = set(0o600).unwrap();
        assert!(t.warnings().is_empty());
        assert_eq!(password(&t).as_deref(), Some("pw"));
        let said = set(0o640).unwrap_err().to_string();
        assert!(said.contains(&file.display().to_string()), "{said}");
        assert!(said.contains("chmod 600"), "{said}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let fifo = dir.path().join("fifo");
        baton_testkit::mkfifo(&fifo);
        for (path, what) in [
            (&link, "a symbolic link"),
            (&fifo, "a named pipe"),
            (&std::path::PathBuf::from("/dev/zero"), "a device"),
        ] {
            let e = Target::resolve("postgres://u@h/d", Some(path), &env(&[]))
                .unwrap_err()
                .to_string();
            assert!(e.contains(what), "{}: {e}", path.display());
        }
        // A password in the URL reads no file, so says nothing of one.
        set(0o644).unwrap_err();
        let t = Target::resolve("postgres://u:x@h/d", Some(&file), &env(&[])).unwrap();
        assert!(t.warnings().is_empty());
        // PGPASSFILE, as libpq reads it: a pipe or a device is refused, not
        // waited on or read without end.
        for path in [&fifo, &std::path::PathBuf::from("/dev/zero")] {
            let vars = [("PGPASSFILE", path.to_str().unwrap())];
            let e = Target::resolve("postgres://u@h/d", None, &env(&vars))
                .unwrap_err()
                .to_string();
            assert!(e.contains("not a regular file"), "{}: {e}", path.display());
        }
    }

    #[test]
    fn a_url_naming_several_hosts_names_each_and_keeps_its_session_attrs() {
        use tokio_postgres::config::TargetSessionAttrs;
        let url = "postgres://u@db1:5433,db2:5434/d?target_session_attrs=read-write";
        let t = Target::resolve(url, None, &env(&[])).unwrap();
        assert_eq!(t.describe(), "db1:5433,db2:5434 (database d, user u)");
        assert_eq!(
            t.config.get_target_session_attrs(),
            TargetSessionAttrs::ReadWrite
        );
        let t = Target::resolve("postgres://u@db1,db2/d", None, &env(&[("PGPORT", "6000")]));
        assert_eq!(
            t.unwrap().describe(),
            "db1:6000,db2:6000 (database d, user u)"
        );
    }

    #[test]
    fn pgport_applies_to_hosts_without_a_port() {
        let port = [("PGPORT", "6000")];
        for (url, shown) in [
            ("postgres://u@h/d", "h:6000"),
            ("postgres://u:p@h:7/d", "h:7"),
            ("postgres://u@[::1]/d", "::1:6000"),
            ("postgres://u@[::1]:7/d?sslmode=disable", "::1:7"),
            ("postgres://u@h", "h:6000"),
        ] {
            let t = Target::resolve(url, None, &env(&port)).unwrap();
            assert!(t.describe().starts_with(shown), "{url}: {}", t.describe());
        }
    }
}
