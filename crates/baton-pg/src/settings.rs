//! What a caller gives beside the URL (baton's `[store]` keys): the
//! password file, and the TLS settings libpq otherwise reads from the URL
//! (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`); and whether the
//! lease's statements are prepared once per connection (`prepare`, which
//! libpq has no parameter for, so it is never read from the URL).
//!
//! A setting is given in one place only: one given both here and in the
//! URL is refused by [`crate::Target::resolve_with`], never chosen between,
//! so that what an operator reads in one place is what is used. Paths are
//! used as given (the caller makes them absolute); `sslrootcert` may be
//! the word `system`, as in the URL.
//!
//! This module also says which of these the URL names ([`url_params`]),
//! so a caller can refuse a doubled setting where it knows both places.

use std::path::PathBuf;

use crate::tls::{self, ParamError, SslMode};

/// The store's settings beside its URL; [`Settings::default`] gives none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// A file whose first line is the password (when the URL gives none).
    pub password_file: Option<PathBuf>,
    /// How the connection is encrypted; `None` leaves it to the URL (else
    /// `prefer`).
    pub sslmode: Option<SslMode>,
    /// The authorities to trust (a PEM file), or `system`.
    pub sslrootcert: Option<PathBuf>,
    /// A client certificate (PEM), with its key.
    pub sslcert: Option<PathBuf>,
    /// The client certificate's key (PEM).
    pub sslkey: Option<PathBuf>,
    /// Whether the lease's statements are prepared by name once per
    /// connection and reused ([`crate::Target::prepares`]); only for a
    /// server reached directly, or through a pooler that keeps prepared
    /// statements. `false` (the default) sends each unnamed.
    pub prepare: bool,
}

impl Settings {
    /// The TLS settings as URL parameters (`name`, value), in the order
    /// libpq documents them.
    ///
    /// # Errors
    ///
    /// [`ParamError`] naming the setting when a path is not UTF-8 (the
    /// URL's parameters are text).
    pub(crate) fn tls_params(&self) -> Result<Vec<(String, String)>, ParamError> {
        let mut params = Vec::new();
        if let Some(mode) = self.sslmode {
            params.push(("sslmode".to_owned(), mode.as_str().to_owned()));
        }
        for (param, path) in [
            ("sslrootcert", &self.sslrootcert),
            ("sslcert", &self.sslcert),
            ("sslkey", &self.sslkey),
        ] {
            let Some(path) = path else { continue };
            let text = path.to_str().ok_or_else(|| ParamError {
                param,
                why: format!("{} is not a UTF-8 path", path.display()),
            })?;
            params.push((param.to_owned(), text.to_owned()));
        }
        Ok(params)
    }
}

/// The TLS parameters (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`) that
/// `url` names, each once, as [`crate::Target::resolve`] reads them.
///
/// # Example
///
/// ```
/// let named = baton_pg::url_params("postgres://h/d?sslmode=require&application_name=x");
/// assert_eq!(named, ["sslmode"]);
/// ```
pub fn url_params(url: &str) -> Vec<&'static str> {
    let (_, params) = tls::split_url(url);
    tls::PARAMS
        .into_iter()
        .filter(|p| params.iter().any(|(name, _)| name == p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_become_parameters_by_name() {
        let s = Settings {
            sslmode: Some(SslMode::VerifyFull),
            sslrootcert: Some(PathBuf::from("/etc/ca.pem")),
            ..Settings::default()
        };
        assert_eq!(
            s.tls_params().unwrap(),
            [
                ("sslmode".to_owned(), "verify-full".to_owned()),
                ("sslrootcert".to_owned(), "/etc/ca.pem".to_owned())
            ]
        );
        assert!(Settings::default().tls_params().unwrap().is_empty());
    }

    #[test]
    fn url_params_names_what_the_url_sets() {
        assert_eq!(
            url_params("postgres://h/d?sslkey=%2Fk&sslcert=/c&sslkey=/k2"),
            ["sslcert", "sslkey"]
        );
        assert!(url_params("postgres://h/d?application_name=sslmode").is_empty());
        assert!(url_params("postgres://h/d").is_empty());
    }
}
