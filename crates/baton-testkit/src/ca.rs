//! A throwaway certificate authority for tests of TLS: a self-signed root
//! made fresh in memory, and certificates it signs for a server or a
//! client.
//!
//! Nothing here is secret or kept: every authority is new, its key never
//! leaves the test process except as the files a test writes itself, and
//! no certificate is trusted anywhere but in the test that made it.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// A self-signed authority that signs certificates for one test.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TestCa")
    }
}

/// A certificate and its private key, both PEM.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The certificate.
    pub cert_pem: String,
    /// Its private key (PKCS#8).
    pub key_pem: String,
}

impl TestCa {
    /// A new authority named `name`.
    ///
    /// # Panics
    ///
    /// When a key cannot be made (the system's random source fails).
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new())
            .expect("parameters without names are valid");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("failed to make a key for the test authority");
        let issuer = CertifiedIssuer::self_signed(params, key)
            .expect("failed to sign the test authority's certificate");
        TestCa { issuer }
    }

    /// The authority's certificate, to trust (`sslrootcert`, `ssl_ca_file`).
    pub fn cert_pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `names` (host names or IP addresses).
    ///
    /// # Panics
    ///
    /// When a name cannot go into a certificate, or signing fails.
    pub fn server(&self, names: &[&str]) -> Issued {
        let first = names.first().copied().unwrap_or("server");
        self.issue(first, names, ExtendedKeyUsagePurpose::ServerAuth)
    }

    /// A client certificate whose common name is `user` (what PostgreSQL's
    /// `cert` authentication compares with the user name).
    ///
    /// # Panics
    ///
    /// When signing fails.
    pub fn client(&self, user: &str) -> Issued {
        self.issue(user, &[], ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn issue(&self, common_name: &str, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Issued {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params =
            CertificateParams::new(names).expect("failed to put the names in a certificate");
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().expect("failed to make a key for a test certificate");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("failed to sign a test certificate");
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// A server certificate for `names` that signs itself and says it is an
/// authority (`basicConstraints CA:TRUE`), as `openssl req -new -x509`
/// makes one by default (the recipe of PostgreSQL's manual): a client
/// trusts it as it is, with the certificate itself as `sslrootcert`.
///
/// # Panics
///
/// When a name cannot go into a certificate, or signing fails.
pub fn self_signed_authority(names: &[&str]) -> Issued {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let first = names
        .first()
        .cloned()
        .unwrap_or_else(|| "server".to_owned());
    let mut params =
        CertificateParams::new(names).expect("failed to put the names in a certificate");
    params.distinguished_name.push(DnType::CommonName, first);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().expect("failed to make a key for a test certificate");
    let cert = params
        .self_signed(&key)
        .expect("failed to sign a test certificate");
    Issued {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}
