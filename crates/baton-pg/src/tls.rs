//! How a connection to the store is encrypted, and what of the server is
//! checked: the URL's `sslmode`, `sslrootcert`, `sslcert` and `sslkey`, as
//! libpq reads them, turned into a rustls client (no OpenSSL).
//!
//! The modes, as libpq's: `disable` never encrypts; `prefer` (the default)
//! encrypts when the server accepts TLS and goes on in plain text when it
//! refuses it; `require` encrypts or fails; `verify-ca` also checks that
//! the server's certificate chains to a trusted authority; `verify-full`
//! also that it names the host connected to. `prefer` and `require` check
//! nothing of the certificate unless `sslrootcert` is given, and then check
//! its chain (as `verify-ca`). The trusted authorities are the
//! `sslrootcert` file's; without one (or with `sslrootcert=system`), the
//! operating system's. `sslrootcert=system` makes `verify-full` the default
//! and refuses a weaker mode, as libpq does. A client certificate
//! (`sslcert`) needs its key (`sslkey`), and the other way round. No file
//! under `~/.postgresql` is read unless the URL names it.
//!
//! A handshake that fails (an unknown authority, a wrong host name) fails
//! the connection in every mode, `prefer` included: only a server that
//! refuses TLS outright is spoken to in plain text. Over a Unix socket the
//! server refuses TLS, so `prefer` is plain there and the stricter modes
//! fail.
//!
//! This module reads the certificate files each time a connection is made
//! (a renewed certificate is used without a restart), and never logs or
//! shows a key.

use std::convert::Infallible;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio_postgres::Socket;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres_rustls::MakeRustlsConnect;

/// What an X.509 version 1 certificate is, for messages (a literal, for
/// `concat!`).
macro_rules! version_1_words {
    () => {
        "X.509 version 1 (made without extensions, as `openssl x509 -req` makes one without \
         `-extfile`)"
    };
}

/// The URL's `sslmode`, as libpq spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Never encrypt.
    Disable,
    /// Encrypt when the server accepts TLS, else go on in plain text (the
    /// default).
    Prefer,
    /// Encrypt, or fail.
    Require,
    /// Encrypt, and check that the server's certificate chains to a trusted
    /// authority.
    VerifyCa,
    /// As [`SslMode::VerifyCa`], and check that the certificate names the
    /// host connected to.
    VerifyFull,
}

impl SslMode {
    /// The mode as the URL spells it (`verify-full` …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    /// Every mode, weakest first.
    pub const ALL: [SslMode; 5] = [
        Self::Disable,
        Self::Prefer,
        Self::Require,
        Self::VerifyCa,
        Self::VerifyFull,
    ];

    /// The mode `s` names (as the URL spells it), if any.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// What the client checks of the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verification {
    /// Nothing: the connection is encrypted (when it is) but anyone in the
    /// middle could be the server.
    Nothing,
    /// That the certificate chains to a trusted authority.
    Chain,
    /// That it chains to a trusted authority and names the host.
    ChainAndHost,
}

/// Where the trusted authorities come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Roots {
    /// The operating system's store.
    System,
    /// The `sslrootcert` file.
    File(PathBuf),
}

/// A TLS setting of the URL that cannot be used; the message names the
/// parameter.
#[derive(Debug, thiserror::Error)]
#[error("{param}: {why}")]
pub struct ParamError {
    /// The URL's parameter (`sslmode` …).
    pub param: &'static str,
    /// What is wrong with it.
    pub why: String,
}

/// A failure to set TLS up for one connection: a certificate or key file
/// that cannot be read or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file the URL names could not be read, or holds no PEM of the kind
    /// needed.
    #[error("failed to read the {param} file {}: {cause}", path.display())]
    Read {
        /// The URL's parameter (`sslrootcert`, `sslcert`, `sslkey`).
        param: &'static str,
        /// The file.
        path: PathBuf,
        /// What the reader said.
        #[source]
        cause: rustls::pki_types::pem::Error,
    },
    /// The `sslkey` file is no regular file, or others may read it: refused
    /// as libpq refuses it (mode `0600` or less, `0640` when root owns it).
    #[error(
        "the sslkey file {} {why}: a client key is a secret (`chmod 600` it, as libpq requires)",
        path.display()
    )]
    KeyExposed {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A certificate of the `sslrootcert` file cannot be used as a root.
    #[error("failed to trust the sslrootcert file {}: {cause}", path.display())]
    Root {
        /// The file.
        path: PathBuf,
        /// What rustls said.
        #[source]
        cause: rustls::Error,
    },
    /// The operating system's store gave no certificate.
    #[error(
        "failed to load the system's trusted certificates (none found{why}); name the server's \
         authority with sslrootcert"
    )]
    NoSystemRoots {
        /// What went wrong, if anything was said (with a leading `: `).
        why: String,
    },
    /// No verifier could be made of the trusted authorities.
    #[error("failed to set up the server's verification: {0}")]
    Verifier(#[source] rustls::client::VerifierBuilderError),
    /// The `sslcert` file's certificate is X.509 version 1, which rustls
    /// does not present.
    #[error(
        "the sslcert file {}: its certificate is {}, which baton's TLS does not present; reissue \
         it with `-extfile` (for example `extendedKeyUsage=clientAuth`)",
        path.display(),
        version_1_words!()
    )]
    ClientVersion1 {
        /// The file.
        path: PathBuf,
    },
    /// rustls refused the configuration (the client key does not match its
    /// certificate, a root store with no usable authority).
    #[error("failed to set up TLS: {0}")]
    Config(#[source] rustls::Error),
}

/// The TLS settings of a target, as the URL gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tls {
    pub(crate) mode: SslMode,
    roots: Option<Roots>,
    client: Option<(PathBuf, PathBuf)>,
}

/// The URL's parameters this module reads (and takes out of the URL the
/// driver parses, which knows only some of them).
pub(crate) const PARAMS: [&str; 4] = ["sslmode", "sslrootcert", "sslcert", "sslkey"];

impl Tls {
    /// The settings from the URL's parameters (`name`, decoded value);
    /// `driver` is the mode the driver read from a connection string that
    /// is not a URL, used when no `sslmode` parameter was found.
    pub(crate) fn from_params(
        params: &[(String, String)],
        driver: tokio_postgres::config::SslMode,
    ) -> Result<Self, ParamError> {
        let get = |name: &str| params.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v);
        let path = |name: &'static str| -> Result<Option<PathBuf>, ParamError> {
            match get(name) {
                Some(v) if v.is_empty() => Err(ParamError {
                    param: name,
                    why: "names no file".to_owned(),
                }),
                Some(v) => Ok(Some(PathBuf::from(v))),
                None => Ok(None),
            }
        };
        let roots = path("sslrootcert")?.map(|p| {
            if p == Path::new("system") {
                Roots::System
            } else {
                Roots::File(p)
            }
        });
        let mode = match get("sslmode") {
            Some(v) => SslMode::parse(v).ok_or_else(|| ParamError {
                param: "sslmode",
                why: format!(
                    "{v:?} is not one of disable, prefer, require, verify-ca or verify-full"
                ),
            })?,
            None if roots == Some(Roots::System) => SslMode::VerifyFull,
            None => match driver {
                tokio_postgres::config::SslMode::Disable => SslMode::Disable,
                tokio_postgres::config::SslMode::Require => SslMode::Require,
                _ => SslMode::Prefer,
            },
        };
        if roots == Some(Roots::System) && mode != SslMode::VerifyFull {
            return Err(ParamError {
                param: "sslmode",
                why: format!(
                    "sslmode={} is too weak for sslrootcert=system (use verify-full)",
                    mode.as_str()
                ),
            });
        }
        let client = match (path("sslcert")?, path("sslkey")?) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            (Some(_), None) => {
                return Err(ParamError {
                    param: "sslkey",
                    why: "missing: sslcert names a client certificate, and its key is needed"
                        .to_owned(),
                });
            }
            (None, Some(_)) => {
                return Err(ParamError {
                    param: "sslcert",
                    why: "missing: sslkey names a client key, and its certificate is needed"
                        .to_owned(),
                });
            }
        };
        Ok(Self {
            mode,
            roots,
            client,
        })
    }

    /// The mode the driver is given: it knows only whether to try TLS and
    /// whether plain text may follow a refusal.
    pub(crate) fn driver_mode(&self) -> tokio_postgres::config::SslMode {
        match self.mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        }
    }

    /// What an encrypted connection checks of the server, as configured.
    pub(crate) fn verification(&self) -> Verification {
        match (self.mode, &self.roots) {
            (SslMode::Disable, _) | (SslMode::Prefer | SslMode::Require, None) => {
                Verification::Nothing
            }
            (SslMode::Prefer | SslMode::Require | SslMode::VerifyCa, _) => Verification::Chain,
            (SslMode::VerifyFull, _) => Verification::ChainAndHost,
        }
    }

    /// A connector for one connection, its files read now.
    pub(crate) fn connector(&self) -> Result<Connector, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?;
        let (chain, pinned) = match self.verification() {
            Verification::Nothing => (None, Vec::new()),
            _ => {
                let (roots, pinned) = self.roots()?;
                let webpki =
                    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                        .build()
                        .map_err(TlsError::Verifier)?;
                (Some(webpki), pinned)
            }
        };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Checker {
                provider,
                chain,
                name: self.verification() == Verification::ChainAndHost,
                pinned,
            }));
        // `disable` reads no file: the driver never asks for TLS.
        let client = self
            .client
            .as_ref()
            .filter(|_| self.mode != SslMode::Disable);
        let config = match client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let certs = read_certs("sslcert", cert)?;
                key_kept_private(key)?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|cause| TlsError::Read {
                    param: "sslkey",
                    path: key.clone(),
                    cause,
                })?;
                builder.with_client_auth_cert(certs, key).map_err(|e| {
                    if version_1(&e) {
                        TlsError::ClientVersion1 { path: cert.clone() }
                    } else {
                        TlsError::Config(e)
                    }
                })?
            }
        };
        Ok(Connector {
            inner: MakeRustlsConnect::new(config),
            encrypted: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The trusted authorities: the `sslrootcert` file's, else the
    /// system's; and the file's certificates as they were read (none for
    /// the system's), which a server may present as they are.
    fn roots(&self) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), TlsError> {
        let mut store = RootCertStore::empty();
        let mut pinned = Vec::new();
        match &self.roots {
            Some(Roots::File(path)) => {
                for cert in read_certs("sslrootcert", path)? {
                    store.add(cert.clone()).map_err(|cause| TlsError::Root {
                        path: path.clone(),
                        cause,
                    })?;
                    pinned.push(cert);
                }
            }
            Some(Roots::System) | None => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _) = store.add_parsable_certificates(found.certs);
                if added == 0 {
                    let why = found
                        .errors
                        .first()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default();
                    return Err(TlsError::NoSystemRoots { why });
                }
            }
        }
        Ok((store, pinned))
    }
}

/// Every certificate of a PEM file; a file with none is refused.
fn read_certs(param: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let failed = |cause| TlsError::Read {
        param,
        path: path.to_owned(),
        cause,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(failed)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed)?;
    if certs.is_empty() {
        return Err(failed(rustls::pki_types::pem::Error::NoItemsFound));
    }
    Ok(certs)
}

/// Makes the TLS side of one connection, and remembers whether a
/// handshake completed (so a caller knows whether `prefer` encrypted).
#[derive(Clone)]
pub(crate) struct Connector {
    inner: MakeRustlsConnect,
    encrypted: Arc<AtomicBool>,
}

impl Connector {
    /// Whether the last connection made through this connector (or a
    /// clone of it) completed a TLS handshake.
    pub(crate) fn encrypted(&self) -> Arc<AtomicBool> {
        self.encrypted.clone()
    }
}

type Inner = <MakeRustlsConnect as MakeTlsConnect<Socket>>::TlsConnect;

/// The TLS stream of a connection.
pub(crate) type Stream = <MakeRustlsConnect as MakeTlsConnect<Socket>>::Stream;

impl MakeTlsConnect<Socket> for Connector {
    type Stream = Stream;
    type TlsConnect = Handshake;
    type Error = Infallible;

    fn make_tls_connect(&mut self, host: &str) -> Result<Handshake, Infallible> {
        // Each host tried starts unencrypted.
        self.encrypted.store(false, Ordering::Relaxed);
        let Ok(inner) = MakeTlsConnect::<Socket>::make_tls_connect(&mut self.inner, host);
        Ok(Handshake {
            inner,
            encrypted: self.encrypted.clone(),
        })
    }
}

/// One connection's handshake.
pub(crate) struct Handshake {
    inner: Inner,
    encrypted: Arc<AtomicBool>,
}

impl TlsConnect<Socket> for Handshake {
    type Stream = Stream;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<Stream>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        let handshake = self.inner.connect(stream);
        let encrypted = self.encrypted;
        Box::pin(async move {
            let stream = handshake.await.map_err(explained)?;
            encrypted.store(true, Ordering::Relaxed);
            Ok(stream)
        })
    }
}

/// A certificate the handshake refused, with what it means for the URL's
/// settings.
#[derive(Debug, thiserror::Error)]
#[error("{cause} ({hint})")]
struct Refused {
    hint: &'static str,
    #[source]
    cause: std::io::Error,
}

/// `e`, with a hint when rustls refused the server's certificate for a
/// reason the URL's settings decide.
fn explained(e: std::io::Error) -> std::io::Error {
    let refused = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    let hint = match refused {
        Some(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)) => {
            "no authority this client trusts signed the server's certificate: sslrootcert \
             names the authority, else the system's are trusted"
        }
        Some(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        )) => "sslmode=verify-full checks that the certificate names the host the URL gives",
        Some(refused) if version_1(refused) => concat!(
            "the server's certificate is ",
            version_1_words!(),
            ": sslrootcert, verify-ca and verify-full check version 3 certificates only; reissue \
             it with `-extfile` naming a subjectAltName, or use sslmode=require without \
             sslrootcert, which checks nothing of it"
        ),
        Some(rustls::Error::InvalidCertificate(CertificateError::Other(other)))
            if matches!(
                other.0.downcast_ref::<webpki::Error>(),
                Some(webpki::Error::CaUsedAsEndEntity)
            ) =>
        {
            "the server's certificate says it is an authority's (CA:TRUE): it is trusted only \
             when sslrootcert holds that very certificate"
        }
        _ => return e,
    };
    std::io::Error::new(e.kind(), Refused { hint, cause: e })
}

/// What a connection checks of the server's certificate. With no chain
/// to check, nothing (`prefer` and `require` without `sslrootcert`, as
/// libpq); with one, rustls's check of the chain (`verify-ca`), and of the
/// name too with `name` (`verify-full`). A certificate that is itself one
/// of `sslrootcert`'s (a self-signed server certificate trusted as it is,
/// which OpenSSL's `req -x509` marks an authority, as libpq accepts it)
/// passes the chain when rustls refused it only for being an authority's:
/// its dates were checked before that, and its name is then checked as
/// rustls would. Either way the server must prove it holds the
/// certificate's key.
#[derive(Debug)]
struct Checker {
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<WebPkiServerVerifier>>,
    name: bool,
    pinned: Vec<CertificateDer<'static>>,
}

impl Checker {
    /// Whether `end_entity` is one of `sslrootcert`'s certificates, refused
    /// by rustls only for being an authority's (its dates held: they are
    /// checked before its basic constraints).
    fn trusted_as_it_is(&self, refused: &rustls::Error, end_entity: &CertificateDer<'_>) -> bool {
        let rustls::Error::InvalidCertificate(CertificateError::Other(other)) = refused else {
            return false;
        };
        matches!(
            other.0.downcast_ref::<webpki::Error>(),
            Some(webpki::Error::CaUsedAsEndEntity)
        ) && self
            .pinned
            .iter()
            .any(|p| p.as_ref() == end_entity.as_ref())
    }
}

impl ServerCertVerifier for Checker {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        // The chain is checked before the name, so a name refused means
        // the chain held.
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.name => Ok(ServerCertVerified::assertion()),
            Err(e) if self.trusted_as_it_is(&e, end_entity) => {
                if self.name {
                    let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
                    rustls::client::verify_server_name(&cert, server_name)?;
                }
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        match rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms) {
            Err(e) if self.chain.is_none() && version_1(&e) => {
                by_key(message, cert, dss, algorithms, false)
            }
            other => other,
        }
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        match rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms) {
            Err(e) if self.chain.is_none() && version_1(&e) => {
                by_key(message, cert, dss, algorithms, true)
            }
            other => other,
        }
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Whether rustls refused a certificate for being X.509 version 1, which
/// webpki does not read.
fn version_1(refused: &rustls::Error) -> bool {
    let rustls::Error::InvalidCertificate(CertificateError::Other(other)) = refused else {
        return false;
    };
    matches!(
        other.0.downcast_ref::<webpki::Error>(),
        Some(webpki::Error::UnsupportedCertVersion)
    )
}

/// The handshake's signature checked with the key of a certificate webpki
/// does not read (X.509 version 1), for a mode that checks nothing else of
/// the certificate (`prefer`, `require`), as libpq accepts one there: the
/// key is read from the certificate by `x509-cert` and the signature
/// checked by webpki as a raw key, with the algorithms rustls would try
/// (the first only in TLS 1.3, as rustls).
fn by_key(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    algorithms: &rustls::crypto::WebPkiSupportedAlgorithms,
    tls13: bool,
) -> Result<HandshakeSignatureValid, rustls::Error> {
    use rustls::SignatureScheme as S;
    use x509_cert::der::{Decode, Encode};
    let unreadable = |_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding);
    let parsed = x509_cert::Certificate::from_der(cert.as_ref()).map_err(unreadable)?;
    let spki = parsed
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .map_err(unreadable)?;
    let spki = rustls::pki_types::SubjectPublicKeyInfoDer::from(spki);
    let key = webpki::RawPublicKeyEntity::try_from(&spki)
        .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
    let unadvertised = rustls::Error::PeerMisbehaved(
        rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
    );
    let in_tls13 = matches!(
        dss.scheme,
        S::ECDSA_NISTP256_SHA256
            | S::ECDSA_NISTP384_SHA384
            | S::ECDSA_NISTP521_SHA512
            | S::RSA_PSS_SHA256
            | S::RSA_PSS_SHA384
            | S::RSA_PSS_SHA512
            | S::ED25519
            | S::ED448
    );
    if tls13 && !in_tls13 {
        return Err(unadvertised);
    }
    let candidates = algorithms
        .mapping
        .iter()
        .find(|(scheme, _)| *scheme == dss.scheme)
        .map(|(_, algs)| *algs)
        .ok_or(unadvertised)?;
    let candidates = if tls13 {
        &candidates[..candidates.len().min(1)]
    } else {
        candidates
    };
    for alg in candidates {
        if key.verify_signature(*alg, message, dss.signature()).is_ok() {
            return Ok(HandshakeSignatureValid::assertion());
        }
    }
    Err(rustls::Error::InvalidCertificate(
        CertificateError::BadSignature,
    ))
}

/// `url` without the TLS parameters ([`PARAMS`]), and those parameters,
/// their values percent-decoded. A string that is not a URL is returned
/// unchanged.
pub(crate) fn split_url(url: &str) -> (String, Vec<(String, String)>) {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let Some((base, query)) = url.split_once('?').filter(|_| is_url) else {
        return (url.to_owned(), Vec::new());
    };
    let mut kept = Vec::new();
    let mut taken = Vec::new();
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = decode(k);
        if PARAMS.contains(&k.as_str()) {
            taken.push((k, decode(v)));
        } else {
            kept.push(pair);
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (rest, taken)
}

/// `s` with `%XX` escapes (and `+`, as the driver reads it) decoded.
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(h), Some(l)) => {
                        // OK because two hex digits make at most 255.
                        out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                        i += 3;
                        continue;
                    }
                    _ => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Refuses a client key file that is no regular file (a pipe would block
/// the read) or that others may read, as libpq does: mode `0600` or less
/// for a file of this user's, `0640` or less for root's.
fn key_kept_private(path: &std::path::Path) -> Result<(), TlsError> {
    use std::os::unix::fs::MetadataExt;
    let exposed = |why: String| TlsError::KeyExposed {
        path: path.to_owned(),
        why,
    };
    // A missing or unreadable file is the reader's to say.
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if !meta.is_file() {
        return Err(exposed("is not a regular file".to_owned()));
    }
    let mode = meta.mode() & 0o777;
    let allowed = if meta.uid() == 0 { 0o037 } else { 0o077 };
    if mode & allowed != 0 {
        return Err(exposed(format!("can be read by others (mode {mode:o})")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_postgres::config::SslMode as Driver;

    fn tls(url: &str) -> Result<Tls, ParamError> {
        let (_, params) = split_url(url);
        Tls::from_params(&params, Driver::Prefer)
    }

    #[test]
    fn the_tls_parameters_leave_the_url() {
        let (rest, params) =
            split_url("postgres://u@h/d?application_name=x&sslmode=require&sslrootcert=%2Fca.pem");
        assert_eq!(rest, "postgres://u@h/d?application_name=x");
        assert_eq!(
            params,
            [
                ("sslmode".to_owned(), "require".to_owned()),
                ("sslrootcert".to_owned(), "/ca.pem".to_owned())
            ]
        );
        assert_eq!(
            split_url("postgres://u@h/d?sslmode=disable").0,
            "postgres://u@h/d"
        );
        assert_eq!(
            split_url("host=h sslmode=disable").0,
            "host=h sslmode=disable"
        );
    }

    #[test]
    fn modes_and_what_they_verify_are_libpqs() {
        use SslMode::*;
        use Verification::*;
        for (query, mode, verifies) in [
            ("", Prefer, Nothing),
            ("sslmode=require", Require, Nothing),
            ("sslmode=require&sslrootcert=/ca", Require, Chain),
            ("sslmode=verify-ca", VerifyCa, Chain),
            ("sslmode=verify-full", VerifyFull, ChainAndHost),
            ("sslrootcert=system", VerifyFull, ChainAndHost),
            ("sslmode=disable&sslrootcert=/ca", Disable, Nothing),
        ] {
            let t = tls(&format!("postgres://h?{query}")).unwrap();
            assert_eq!((t.mode, t.verification()), (mode, verifies), "{query}");
        }
    }

    #[test]
    fn unusable_parameters_are_refused_by_name() {
        let e = tls("postgres://h?sslmode=verify-all").unwrap_err();
        assert_eq!(e.param, "sslmode");
        assert!(e.to_string().contains("\"verify-all\""), "{e}");
        let e = tls("postgres://h?sslcert=/c.pem").unwrap_err();
        assert_eq!(e.param, "sslkey");
        let e = tls("postgres://h?sslkey=/k.pem").unwrap_err();
        assert_eq!(e.param, "sslcert");
        let e = tls("postgres://h?sslmode=require&sslrootcert=system").unwrap_err();
        assert!(e.to_string().contains("verify-full"), "{e}");
        assert_eq!(
            tls("postgres://h?sslrootcert=").unwrap_err().param,
            "sslrootcert"
        );
    }

    #[test]
    fn percent_escapes_are_decoded() {
        assert_eq!(decode("%2Fetc%2fca.pem"), "/etc/ca.pem");
        assert_eq!(decode("a+b%"), "a b%");
        assert_eq!(decode("%zz"), "%zz");
    }
}
