//! TLS to a real server with `ssl = on` and a certificate from an
//! authority the test makes: each `sslmode` connects, verifies and refuses
//! as libpq's does, the examination says whether the connection is
//! encrypted and what was verified, and every refusal names the target and
//! never the password.

use std::path::{Path, PathBuf};

use baton_lease::SystemClock;
use baton_pg::examine::{Examined, examine};
use baton_pg::{Error, Leases, Options, PgLedger, Target, Verification};
use baton_store::ledger::Records;
use baton_testkit::ca::TestCa;
use baton_testkit::pg::{PgServer, ServerTls};

/// The name in the server's certificate; the test reaches it at
/// 127.0.0.1 (`hostaddr`) whatever name the URL gives.
const NAME: &str = "db.test";

/// A server with TLS on, its authority, and a directory for the files a
/// client names.
struct Tls {
    server: PgServer,
    ca: TestCa,
    dir: tempfile::TempDir,
}

impl Tls {
    fn start() -> Tls {
        Self::start_with(false)
    }

    /// With `client_certs`, TCP connections must present a certificate the
    /// same authority signed.
    fn start_with(client_certs: bool) -> Tls {
        let ca = TestCa::new("baton test authority");
        let server = PgServer::start_with_tls(&ServerTls {
            server: ca.server(&[NAME]),
            client_ca_pem: client_certs.then(|| ca.cert_pem()),
        });
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.cert_pem()).unwrap();
        Tls { server, ca, dir }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The URL of the server named `host`, with the password `s3cret` (the
    /// server trusts, so it is never needed) and the query `query`.
    fn url(&self, host: &str, query: &str) -> String {
        url(host, self.server.port(), query)
    }
}

fn url(host: &str, port: u16, query: &str) -> String {
    format!("postgres://baton:s3cret@{host}:{port}/postgres?hostaddr=127.0.0.1&{query}")
}

fn ca_file(t: &Tls) -> String {
    format!("sslrootcert={}", t.file("ca.pem").display())
}

fn target(url: &str) -> Target {
    Target::resolve(url, None, &|_| None).unwrap()
}

async fn look(url: &str) -> Result<Examined, Error> {
    examine(&target(url), Options::default(), &SystemClock).await
}

/// What a connection was: encrypted, and what was verified.
async fn made(url: &str) -> (bool, Verification) {
    let e = look(url).await.unwrap_or_else(|e| panic!("{url}: {e}"));
    (e.encrypted, e.verified)
}

/// The refusal of `url`: it names host, port, database and user, never
/// the password, and says `why`.
async fn refused(url: &str, why: &str) -> String {
    let e = look(url).await.expect_err(url).to_string();
    let t = target(url).describe();
    assert!(e.contains(&t), "{e} does not name {t}");
    assert!(!e.contains("s3cret"), "{e}");
    assert!(e.to_lowercase().contains(why), "{e} does not say {why:?}");
    e
}

#[tokio::test]
async fn verify_full_checks_the_authority_and_the_host_name() {
    let t = Tls::start();
    let ca = ca_file(&t);
    assert_eq!(
        made(&t.url(NAME, &format!("sslmode=verify-full&{ca}"))).await,
        (true, Verification::ChainAndHost)
    );
    // The name the URL gives is not the certificate's.
    refused(
        &t.url("other.test", &format!("sslmode=verify-full&{ca}")),
        "not valid for name",
    )
    .await;
    // verify-ca checks the chain only.
    assert_eq!(
        made(&t.url("other.test", &format!("sslmode=verify-ca&{ca}"))).await,
        (true, Verification::Chain)
    );
    // An authority that did not sign the server's certificate.
    let stranger = TestCa::new("another authority");
    std::fs::write(t.file("stranger.pem"), stranger.cert_pem()).unwrap();
    let other = format!("sslrootcert={}", t.file("stranger.pem").display());
    for mode in ["verify-full", "verify-ca", "require"] {
        let e = refused(
            &t.url(NAME, &format!("sslmode={mode}&{other}")),
            "unknownissuer",
        )
        .await;
        assert!(e.contains("sslrootcert names the authority"), "{e}");
    }
    // require with the right authority checks the chain, as verify-ca.
    assert_eq!(
        made(&t.url("other.test", &format!("sslmode=require&{ca}"))).await,
        (true, Verification::Chain)
    );
}

#[tokio::test]
async fn require_encrypts_without_verifying_and_disable_and_prefer_as_libpq() {
    let t = Tls::start();
    assert_eq!(
        made(&t.url("other.test", "sslmode=require")).await,
        (true, Verification::Nothing)
    );
    assert_eq!(
        made(&t.url(NAME, "sslmode=disable")).await,
        (false, Verification::Nothing)
    );
    assert_eq!(
        made(&t.url(NAME, "sslmode=prefer")).await,
        (true, Verification::Nothing)
    );
    // prefer is the default.
    assert_eq!(
        made(&t.url(NAME, "application_name=x")).await,
        (true, Verification::Nothing)
    );

    // A server without TLS: prefer goes on in plain text, the others fail.
    let plain = PgServer::start();
    let at = |query: &str| url(NAME, plain.port(), query);
    assert_eq!(
        made(&at("sslmode=prefer")).await,
        (false, Verification::Nothing)
    );
    for mode in ["require", "verify-ca", "verify-full"] {
        refused(
            &at(&format!("sslmode={mode}&{}", ca_file(&t))),
            "does not support tls",
        )
        .await;
    }
}

/// A certificate and key made as the PostgreSQL manual makes a server's
/// (`openssl x509 -req`, no `-extfile`), which OpenSSL makes X.509 version
/// 1: no extensions, so no subjectAltName and no basic constraints.
fn version_1_certificate(dir: &Path) -> baton_testkit::ca::Issued {
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl (Debian's openssl package)");
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    openssl(&[
        "req",
        "-new",
        "-nodes",
        "-subj",
        "/CN=db.test",
        "-keyout",
        "v1.key",
        "-out",
        "v1.csr",
    ]);
    openssl(&[
        "x509", "-req", "-days", "30", "-in", "v1.csr", "-signkey", "v1.key", "-out", "v1.crt",
    ]);
    let text = openssl(&["x509", "-in", "v1.crt", "-noout", "-text"]);
    assert!(text.contains("Version: 1 (0x0)"), "{text}");
    baton_testkit::ca::Issued {
        cert_pem: std::fs::read_to_string(dir.join("v1.crt")).unwrap(),
        key_pem: std::fs::read_to_string(dir.join("v1.key")).unwrap(),
    }
}

#[tokio::test]
async fn a_version_1_certificate_is_used_as_libpq_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = PgServer::start_with_tls(&ServerTls {
        server: version_1_certificate(dir.path()),
        client_ca_pem: None,
    });
    let at = |query: &str| url(NAME, server.port(), query);
    // The modes that check nothing of the certificate encrypt with it (the
    // server still proves it holds its key).
    for query in ["sslmode=require", "sslmode=prefer", "application_name=x"] {
        assert_eq!(
            made(&at(query)).await,
            (true, Verification::Nothing),
            "{query}"
        );
    }
    // The modes that check it refuse it, saying what to do.
    let pinned = format!("sslrootcert={}", dir.path().join("v1.crt").display());
    for mode in ["verify-ca", "verify-full", "require"] {
        let e = refused(&at(&format!("sslmode={mode}&{pinned}")), "version 1").await;
        assert!(e.contains("reissue it with `-extfile`"), "{e}");
    }
}

#[tokio::test]
async fn client_certificates_authenticate() {
    let t = Tls::start_with(true);
    let mine = t.ca.client(baton_testkit::pg::USER);
    std::fs::write(t.file("client.crt"), &mine.cert_pem).unwrap();
    std::fs::write(t.file("client.key"), &mine.key_pem).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(t.file("client.key"), private).unwrap();
    }
    let ca = ca_file(&t);
    let cert = format!(
        "sslcert={}&sslkey={}",
        t.file("client.crt").display(),
        t.file("client.key").display()
    );
    assert_eq!(
        made(&t.url(NAME, &format!("sslmode=verify-full&{ca}&{cert}"))).await,
        (true, Verification::ChainAndHost)
    );
    // Without one, the server refuses (its words, and the target).
    refused(
        &t.url(NAME, &format!("sslmode=verify-full&{ca}")),
        "certificate",
    )
    .await;
    // Over plain text, no rule lets anyone in.
    refused(&t.url(NAME, "sslmode=disable"), "pg_hba.conf").await;
}

#[tokio::test]
async fn files_that_cannot_be_read_fail_the_connection_by_name() {
    let t = Tls::start();
    let missing = t.file("missing.pem");
    let e = refused(
        &t.url(
            NAME,
            &format!("sslmode=verify-full&sslrootcert={}", missing.display()),
        ),
        "sslrootcert",
    )
    .await;
    assert!(e.contains(&missing.display().to_string()), "{e}");
    std::fs::write(t.file("empty.pem"), "").unwrap();
    refused(
        &t.url(
            NAME,
            &format!(
                "sslmode=require&sslrootcert={}",
                t.file("empty.pem").display()
            ),
        ),
        "sslrootcert",
    )
    .await;
    let key: &Path = &t.file("missing.key");
    refused(
        &t.url(
            NAME,
            &format!(
                "sslmode=require&sslcert={}&sslkey={}",
                t.file("ca.pem").display(),
                key.display()
            ),
        ),
        "sslkey",
    )
    .await;
}

#[tokio::test]
async fn unknown_modes_are_refused_by_name() {
    let e = Target::resolve("postgres://baton:s3cret@h/d?sslmode=verify", None, &|_| {
        None
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("sslmode") && e.contains("\"verify\""), "{e}");
    assert!(!e.contains("s3cret"), "{e}");
    let e = Leases::open("postgres://h/d?sslmode=allow", Options::default())
        .await
        .unwrap_err();
    assert!(matches!(e, Error::UrlParam(_)), "{e}");
}

#[tokio::test]
async fn the_store_and_the_ledger_work_over_verified_tls() {
    let t = Tls::start();
    let url = t.url(NAME, &format!("sslmode=verify-full&{}", ca_file(&t)));
    baton_pg::migrate(&url, Options::default()).await.unwrap();
    let store = Leases::open(&url, Options::default()).await.unwrap();
    super::support::used(&store, "tls").await;
    let target = target(&url);
    tokio::task::spawn_blocking(move || {
        let mut ledger = PgLedger::open(&target, Options::default()).unwrap();
        ledger
            .see_jobs(&["tls"], jiff::Timestamp::UNIX_EPOCH)
            .unwrap();
    })
    .await
    .unwrap();
}
