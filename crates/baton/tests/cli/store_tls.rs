//! TLS to the PostgreSQL store through the real binary, against a real
//! server with TLS on and a certificate from an authority the test makes.
//!
//! What must hold, through the `[store]` keys and through the URL alike:
//! `verify-full` lets a run in when the server's certificate names the host
//! and chains to the trusted authority (the job runs and its run is
//! recorded); a wrong host name or an unknown authority is refused before
//! anything runs (exit 2, the host and what failed named, the job's marker
//! never written). `status` and `store status` say how the connection was
//! made. A refused password is named by host, port, database and user,
//! never shown, and a password file others may read is warned of.

use std::path::Path;
use std::process::Output;

use baton_testkit::ca::TestCa;
use baton_testkit::pg::{PgServer, ServerTls};

use crate::sched::Sched;
use crate::store::{both, run};
use crate::support::{code, stderr, stdout};

/// The name in the server's certificate; every URL reaches the server at
/// 127.0.0.1 (`hostaddr`) whatever host name it gives.
const NAME: &str = "db.test";

/// A server with TLS on, its certificate for [`NAME`] signed by `ca`, and
/// baton's schema migrated into it.
struct Server {
    pg: PgServer,
    ca: TestCa,
    /// The server's own certificate, when it signs itself.
    own: Option<String>,
}

impl Server {
    fn start() -> Server {
        Self::start_with(false)
    }

    /// With `client_certs`, TCP connections must present a certificate the
    /// same authority signed for the user.
    fn start_with(client_certs: bool) -> Server {
        let ca = TestCa::new("baton test authority");
        let pg = PgServer::start_with_tls(&ServerTls {
            server: ca.server(&[NAME]),
            client_ca_pem: client_certs.then(|| ca.cert_pem()),
        });
        if client_certs {
            // The migration goes through the socket, which still trusts.
            let migrator = Sched::new(&format!("[store]\nurl = {:?}\n", pg.socket_url()));
            let o = run(&migrator, &["store", "migrate"]);
            assert_eq!(code(&o), 0, "{}", both(&o));
            return Server { pg, ca, own: None };
        }
        Self::migrated(pg, ca, None)
    }

    /// With a certificate for [`NAME`] that signs itself and says it is an
    /// authority ([`baton_testkit::ca::self_signed_authority`]).
    fn start_self_signed() -> Server {
        let own = baton_testkit::ca::self_signed_authority(&[NAME]);
        let pg = PgServer::start_with_tls(&ServerTls {
            server: own.clone(),
            client_ca_pem: None,
        });
        Self::migrated(pg, TestCa::new("baton test authority"), Some(own.cert_pem))
    }

    fn migrated(pg: PgServer, ca: TestCa, own: Option<String>) -> Server {
        let migrator = Sched::new(&format!("[store]\nurl = {:?}\n", pg.url()));
        let o = run(&migrator, &["store", "migrate"]);
        assert_eq!(code(&o), 0, "{}", both(&o));
        Server { pg, ca, own }
    }

    /// The server's URL with host `host` and the query `query` after
    /// `hostaddr`.
    fn url(&self, host: &str, query: &str) -> String {
        format!(
            "postgres://baton@{host}:{}/postgres?hostaddr=127.0.0.1{query}",
            self.pg.port()
        )
    }

    /// A scheduler whose `[store]` is `store` (its text after `[store]`,
    /// `DIR` replaced by the configuration's directory), with the
    /// authority's certificate in `ca.pem` and a stranger's in
    /// `stranger.pem` (and the server's own, when it signs itself, in
    /// `self.pem`) beside `baton.toml`, and a job `j` that touches the file
    /// `ran`.
    fn sched(&self, store: impl Fn(&Path) -> String) -> Sched {
        let s = Sched::new("");
        let dir = s.config().parent().unwrap().to_owned();
        std::fs::write(dir.join("ca.pem"), self.ca.cert_pem()).unwrap();
        if let Some(own) = &self.own {
            std::fs::write(dir.join("self.pem"), own).unwrap();
        }
        let stranger = TestCa::new("an authority nobody trusts");
        std::fs::write(dir.join("stranger.pem"), stranger.cert_pem()).unwrap();
        s.write(&format!(
            "[store]\n{}\n[jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"touch {}\"\n",
            store(&dir),
            s.env.path("ran").display()
        ));
        s
    }
}

fn ran(s: &Sched) -> bool {
    s.env.path("ran").exists()
}

/// `baton run j` is let in: exit 0, the job ran, its run is recorded.
fn runs(s: &Sched) {
    let o = run(s, &["run", "j"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    assert!(ran(s), "the job did not run: {}", both(&o));
    let h = run(s, &["history", "j", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&h.stdout)
        .unwrap_or_else(|e| panic!("history --json: {e}: {}", both(&h)));
    let verdicts: Vec<&serde_json::Value> = runs
        .as_array()
        .map(|a| a.iter().map(|r| &r["verdict"]).collect())
        .unwrap_or_default();
    assert!(
        verdicts.len() == 1 && verdicts[0] == "ok",
        "history: {runs}"
    );
}

/// `baton run j` is refused before anything runs: exit 2, the message
/// names `host` and says `why`, and the job's marker is never written.
fn refused(s: &Sched, host: &str, why: &str) {
    let o = run(s, &["run", "j"]);
    assert_eq!(code(&o), 2, "{}", both(&o));
    let err = stderr(&o);
    assert!(err.contains(host), "{err} does not name {host}");
    assert!(err.contains(why), "{err} does not say {why:?}");
    assert!(!ran(s), "the job ran: {}", both(&o));
}

/// Says the authority did not sign the server's certificate.
const UNKNOWN_CA: &str = "no authority this client trusts signed the server's certificate";
/// Says the certificate is not the host's.
const WRONG_NAME: &str = "sslmode=verify-full checks that the certificate names the host";

#[test]
fn store_tls_verify_full_through_the_store_keys() {
    let server = Server::start();
    let srv = &server;
    let keys = |host: &'static str, roots: &'static str| {
        move |_: &Path| {
            format!(
                "url = {:?}\nsslmode = \"verify-full\"\nsslrootcert = {roots:?}\n",
                srv.url(host, "")
            )
        }
    };
    // The paths are the configuration file's, wherever baton runs.
    let s = srv.sched(keys(NAME, "ca.pem"));
    runs(&s);
    let shown = run(&s, &["config"]);
    assert_eq!(code(&shown), 0, "{}", both(&shown));
    for line in ["sslmode = \"verify-full\"", "sslrootcert = \""] {
        assert!(stdout(&shown).contains(line), "{}", both(&shown));
    }
    refused(
        &srv.sched(keys("other.test", "ca.pem")),
        "other.test",
        WRONG_NAME,
    );
    refused(&srv.sched(keys(NAME, "stranger.pem")), NAME, UNKNOWN_CA);
}

/// A server certificate that signs itself and says it is an authority
/// (PostgreSQL's manual makes one with `openssl req -new -x509`), trusted
/// as it is: `verify-full` and `verify-ca` let a run in, as libpq does. A
/// wrong host name under `verify-full`, and an authority that did not sign
/// it, are still refused.
#[test]
fn store_tls_a_self_signed_server_certificate_is_trusted_as_it_is() {
    let server = Server::start_self_signed();
    let srv = &server;
    let keys = |host: &'static str, mode: &'static str, roots: &'static str| {
        move |_: &Path| {
            format!(
                "url = {:?}\nsslmode = {mode:?}\nsslrootcert = {roots:?}\n",
                srv.url(host, "")
            )
        }
    };
    runs(&srv.sched(keys(NAME, "verify-full", "self.pem")));
    // The store already records the run above: this one is the second.
    let s = srv.sched(keys("other.test", "verify-ca", "self.pem"));
    let o = run(&s, &["run", "j"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    assert!(ran(&s), "the job did not run: {}", both(&o));
    refused(
        &srv.sched(keys("other.test", "verify-full", "self.pem")),
        "other.test",
        WRONG_NAME,
    );
    refused(
        &srv.sched(keys(NAME, "verify-full", "ca.pem")),
        NAME,
        "it is trusted only when sslrootcert holds that very certificate",
    );
}

#[test]
fn store_tls_verify_full_through_the_url() {
    let server = Server::start();
    let srv = &server;
    let url = |host: &'static str, roots: &'static str| {
        move |dir: &Path| {
            let query = format!(
                "&sslmode=verify-full&sslrootcert={}",
                dir.join(roots).display()
            );
            format!("url = {:?}\n", srv.url(host, &query))
        }
    };
    runs(&srv.sched(url(NAME, "ca.pem")));
    refused(
        &srv.sched(url("other.test", "ca.pem")),
        "other.test",
        WRONG_NAME,
    );
    refused(&srv.sched(url(NAME, "stranger.pem")), NAME, UNKNOWN_CA);
}

#[test]
fn store_tls_a_client_certificate_from_the_store_keys_is_presented() {
    let server = Server::start_with(true);
    let srv = &server;
    let client = srv.ca.client(baton_testkit::pg::USER);
    let with = |keys: &'static str| {
        let s = srv.sched(move |_: &Path| {
            format!(
                "url = {:?}\nsslmode = \"verify-full\"\nsslrootcert = \"ca.pem\"\n{keys}",
                srv.url(NAME, "")
            )
        });
        let dir = s.config().parent().unwrap().to_owned();
        std::fs::write(dir.join("client.pem"), &client.cert_pem).unwrap();
        std::fs::write(dir.join("client.key"), &client.key_pem).unwrap();
        chmod(&dir.join("client.key"), 0o600);
        s
    };
    // The files are the configuration file's neighbours.
    runs(&with("sslcert = \"client.pem\"\nsslkey = \"client.key\"\n"));
    // A key others may read is refused, as libpq refuses it: nothing runs.
    let s = with("sslcert = \"client.pem\"\nsslkey = \"client.key\"\n");
    chmod(&s.config().parent().unwrap().join("client.key"), 0o644);
    let o = run(&s, &["run", "j"]);
    assert_eq!(code(&o), 2, "{}", both(&o));
    assert!(
        stderr(&o).contains("client.key") && stderr(&o).contains("chmod 600"),
        "{}",
        both(&o)
    );
    assert!(!ran(&s), "the job ran: {}", both(&o));
    // Without one, the server refuses: nothing runs.
    let s = with("");
    let o = run(&s, &["run", "j"]);
    assert_eq!(code(&o), 2, "{}", both(&o));
    assert!(stderr(&o).contains(NAME), "{}", both(&o));
    assert!(!ran(&s), "the job ran: {}", both(&o));
    // A certificate without its key is refused by name before connecting.
    let s = with("sslcert = \"client.pem\"\n");
    let o = run(&s, &["run", "j"]);
    assert_eq!(code(&o), 2, "{}", both(&o));
    assert!(stderr(&o).contains("sslkey"), "{}", both(&o));
    assert!(!ran(&s), "the job ran: {}", both(&o));
}

/// What `status --json` and `store status --json` say of the connection
/// made with `store`: encrypted, and what was verified.
fn said(s: &Sched) -> [(serde_json::Value, serde_json::Value); 2] {
    let o = run(s, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("status --json: {e}: {}", both(&o)));
    let o = run(s, &["store", "status", "--json"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    let store: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("store status --json: {e}: {}", both(&o)));
    [
        (
            status["store"]["encrypted"].clone(),
            status["store"]["verified"].clone(),
        ),
        (store["encrypted"].clone(), store["verified"].clone()),
    ]
}

#[test]
fn store_tls_status_says_whether_the_connection_is_encrypted_and_how_verified() {
    use serde_json::json;
    let server = Server::start();
    let srv = &server;
    let with = |host: &'static str, keys: &'static str| {
        srv.sched(move |_: &Path| format!("url = {:?}\n{keys}", srv.url(host, "")))
    };
    let full = with(
        NAME,
        "sslmode = \"verify-full\"\nsslrootcert = \"ca.pem\"\n",
    );
    let both_said = said(&full);
    for (encrypted, verified) in &both_said {
        assert_eq!((encrypted, verified), (&json!(true), &json!("ca-and-host")));
    }
    let text = run(&full, &["status"]);
    assert!(
        stdout(&text)
            .contains("sslmode=verify-full, encrypted, the server verified (CA and host name)"),
        "{}",
        both(&text)
    );
    let text = run(&full, &["store", "status"]);
    assert!(
        stdout(&text).contains("connection: sslmode=verify-full, encrypted"),
        "{}",
        both(&text)
    );
    let ca_only = with(
        "other.test",
        "sslmode = \"verify-ca\"\nsslrootcert = \"ca.pem\"\n",
    );
    for (encrypted, verified) in said(&ca_only) {
        assert_eq!((encrypted, verified), (json!(true), json!("ca")));
    }
    let text = run(&ca_only, &["status"]);
    assert!(
        stdout(&text).contains("CA only, not the host name"),
        "{}",
        both(&text)
    );
    for (encrypted, verified) in said(&with(NAME, "sslmode = \"require\"\n")) {
        assert_eq!((encrypted, verified), (json!(true), json!("none")));
    }
    for (encrypted, verified) in said(&with(NAME, "sslmode = \"disable\"\n")) {
        assert_eq!((encrypted, verified), (json!(false), json!("none")));
    }
    // Local files: nothing is said of a store.
    let local = Sched::new("[jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let o = run(&local, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(status.get("store").is_none(), "{status}");
    assert!(!stdout(&run(&local, &["status"])).contains("sslmode"));
}

#[test]
fn store_tls_a_setting_in_the_url_and_as_a_key_is_refused_naming_both() {
    let s = Sched::new("");
    s.write(&format!(
        "[store]\nurl = \"postgres://baton@{NAME}/baton?sslmode=require\"\nsslmode = \"verify-full\"\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"touch {}\"\n",
        s.env.path("ran").display()
    ));
    let path = s.config().display().to_string();
    for args in [&["run", "j"][..], &["config"]] {
        let o = run(&s, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", both(&o));
        for needle in [
            format!("{path}:6"),
            "store.sslmode".to_owned(),
            format!("{path}:5"),
            "one place".to_owned(),
        ] {
            assert!(stderr(&o).contains(&needle), "{args:?}: {}", both(&o));
        }
        assert!(!ran(&s), "{args:?} ran the job");
    }
    s.write(&format!(
        "[store]\nurl = \"postgres://baton@{NAME}/baton\"\nsslmode = \"verify\"\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"touch {}\"\n",
        s.env.path("ran").display()
    ));
    let o = run(&s, &["run", "j"]);
    assert_eq!(code(&o), 2, "{}", both(&o));
    for needle in [
        "store.sslmode",
        "\"verify\"",
        "disable, prefer, require, verify-ca or verify-full",
    ] {
        assert!(stderr(&o).contains(needle), "{}", both(&o));
    }
    assert!(!ran(&s));
}

const PASSWORD: &str = "right-pw-51d0";
const WRONG: &str = "wrong-pw-2b7e";

fn with_password_file(pg: &PgServer, password: &str, mode: u32) -> (Sched, Output) {
    use std::os::unix::fs::PermissionsExt;
    let s = Sched::new("");
    let file = s.env.path("pg.pw");
    std::fs::write(&file, format!("{password}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    s.write(&format!(
        "[store]\nurl = {:?}\npassword_file = \"pg.pw\"\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"touch {}\"\n",
        pg.url(),
        s.env.path("ran").display()
    ));
    let o = run(&s, &["run", "j"]);
    (s, o)
}

#[test]
fn store_a_refused_password_is_named_by_target_never_shown_and_a_readable_file_refused() {
    let pg = PgServer::start_with_password(PASSWORD);
    let (s, o) = with_password_file(&pg, PASSWORD, 0o600);
    let migrate = run(&s, &["store", "migrate"]);
    assert_eq!(code(&migrate), 0, "{}", both(&migrate));
    // The first run met no schema; from here the password is the point.
    let o2 = run(&s, &["run", "j"]);
    assert_eq!(code(&o2), 0, "{}{}", both(&o), both(&o2));
    assert!(ran(&s));
    assert!(!both(&o2).contains("chmod"), "{}", both(&o2));
    // A file others may read is refused, as the daemon's token file is,
    // naming it; nothing runs.
    let (s, o) = with_password_file(&pg, PASSWORD, 0o644);
    assert_eq!(code(&o), 2, "{}", both(&o));
    assert!(!ran(&s), "the job ran: {}", both(&o));
    let file = s.env.path("pg.pw").display().to_string();
    for needle in [file.as_str(), "mode 644", "chmod 600"] {
        assert!(stderr(&o).contains(needle), "{}", both(&o));
    }
    // A password the server refuses: nothing runs, the target is named,
    // the password never shown.
    let (s, o) = with_password_file(&pg, WRONG, 0o600);
    assert_eq!(code(&o), 2, "{}", both(&o));
    assert!(!ran(&s), "the job ran: {}", both(&o));
    let target = format!("127.0.0.1:{} (database postgres, user baton)", pg.port());
    assert!(stderr(&o).contains(&target), "{}", both(&o));
    assert!(stderr(&o).contains("password"), "{}", both(&o));
    assert!(!both(&o).contains(WRONG), "{}", both(&o));
    assert!(!both(&o).contains(PASSWORD), "{}", both(&o));
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
