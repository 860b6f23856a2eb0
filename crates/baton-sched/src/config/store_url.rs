//! The `[store] url`: a PostgreSQL connection URL, checked for its scheme
//! and never shown with its password.
//!
//! [`StoreUrl`] is the only way the configuration holds the URL, and its
//! `Display` and `Debug` print [`StoreUrl::masked`], so neither `baton
//! config` nor any message built from a [`super::Config`] can print the
//! password. The full text is reachable only through [`StoreUrl::secret`],
//! for the one caller that connects. Parsing the rest of the URL (hosts,
//! ports, options) is the driver's: this module does not second-guess it.

/// The schemes a store URL may have.
pub const SCHEMES: &[&str] = &["postgres://", "postgresql://"];

/// What replaces a password when a URL is shown.
const MASK: &str = "***";

/// Why a text is not a store URL; the URL it holds is masked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadUrl {
    /// A scheme other than PostgreSQL's.
    #[error(
        "= {0:?}: expected a PostgreSQL URL starting with {schemes} (such as \
         \"postgres://baton@db.example/baton\")",
        schemes = SCHEMES.join(" or ")
    )]
    Scheme(String),
    /// A control character in the URL.
    #[error("= {0:?}: a URL may not hold control characters")]
    Control(String),
}

/// A `postgres://` or `postgresql://` URL.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl(String);

impl StoreUrl {
    /// Checks the scheme.
    ///
    /// # Errors
    ///
    /// [`BadUrl`], saying what is allowed, when the URL is not a PostgreSQL
    /// one (it holds the URL masked).
    pub fn parse(text: &str) -> Result<Self, BadUrl> {
        let text = text.trim();
        if !SCHEMES.iter().any(|s| text.starts_with(s)) {
            return Err(BadUrl::Scheme(mask(text)));
        }
        if text.chars().any(char::is_control) {
            return Err(BadUrl::Control(mask(text)));
        }
        Ok(Self(text.to_owned()))
    }

    /// The URL with any password replaced by `***`: in the user part
    /// (`postgres://user:***@host/db`) and in a `password=` parameter.
    pub fn masked(&self) -> String {
        mask(&self.0)
    }

    /// Whether the URL itself carries a password.
    pub fn has_password(&self) -> bool {
        self.masked() != self.0
    }

    /// The URL as written, password included: only for connecting.
    pub fn secret(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.masked())
    }
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreUrl({:?})", self.masked())
    }
}

/// `text` with its passwords masked.
///
/// The user part is taken to end at the last `@` of the whole text: a
/// driver may read a password holding an unencoded `/`, `?` or `@` to its
/// last `@`, so anything up to there may be one, and is masked from the
/// user name's `:` on (a host's `:port` before a stray `@` in a parameter
/// is masked too: shown less, never more). A parameter is masked when its
/// name, percent-decoded, says `password` in any case (`password`,
/// `sslpassword`, `pass%77ord`).
fn mask(text: &str) -> String {
    let (prefix, rest) = match SCHEMES.iter().find(|s| text.starts_with(**s)) {
        Some(s) => text.split_at(s.len()),
        None => match text.find("://") {
            Some(i) => text.split_at(i + 3),
            None => ("", text),
        },
    };
    let mut out = prefix.to_owned();
    let rest = match rest.rfind('@') {
        Some(at) => {
            let user = &rest[..at];
            match user.find(':') {
                Some(colon) => {
                    out.push_str(&user[..colon]);
                    out.push(':');
                    out.push_str(MASK);
                }
                None => out.push_str(user),
            }
            out.push('@');
            &rest[at + 1..]
        }
        None => rest,
    };
    let (main, query) = match rest.find('?') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    out.push_str(main);
    if let Some(q) = query {
        out.push('?');
        let params: Vec<String> = q
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) if secret_key(k) => format!("{k}={MASK}"),
                _ => p.to_owned(),
            })
            .collect();
        out.push_str(&params.join("&"));
    }
    out
}

/// Whether a URL parameter's name, percent-decoded (as a driver decodes
/// it), names a password.
fn secret_key(key: &str) -> bool {
    percent_encoding::percent_decode_str(key)
        .decode_utf8_lossy()
        .to_ascii_lowercase()
        .contains("password")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_in_the_user_part_is_masked() {
        let u = StoreUrl::parse("postgres://baton:s3cret@db.example:5433/baton").unwrap();
        assert_eq!(u.masked(), "postgres://baton:***@db.example:5433/baton");
        assert!(u.has_password());
        assert_eq!(format!("{u} {u:?}").matches("s3cret").count(), 0);
        assert_eq!(u.secret(), "postgres://baton:s3cret@db.example:5433/baton");
    }

    #[test]
    fn a_password_with_slashes_and_ats_is_masked_whole() {
        let u = StoreUrl::parse("postgresql://u:p/a@s@h/db?sslmode=disable").unwrap();
        assert_eq!(u.masked(), "postgresql://u:***@h/db?sslmode=disable");
    }

    #[test]
    fn a_password_parameter_is_masked() {
        let u = StoreUrl::parse("postgres://h/db?user=u&Password=hunter2&x=1").unwrap();
        assert_eq!(u.masked(), "postgres://h/db?user=u&Password=***&x=1");
        assert!(u.has_password());
    }

    #[test]
    fn a_password_with_a_question_mark_is_masked_whole() {
        let u = StoreUrl::parse("postgres://qpw:ab?cd@localhost:56001/baton").unwrap();
        assert_eq!(u.masked(), "postgres://qpw:***@localhost:56001/baton");
        let u = StoreUrl::parse("postgres://qpw:ab?cd@h/baton&sslmode=allow").unwrap();
        assert!(!u.masked().contains("cd"), "{}", u.masked());
    }

    #[test]
    fn a_password_parameter_spelled_otherwise_is_masked() {
        for (url, shown) in [
            (
                "postgres://h/db?pass%77ord=hunter2",
                "postgres://h/db?pass%77ord=***",
            ),
            (
                "postgres://h/db?sslpassword=hunter2&x=1",
                "postgres://h/db?sslpassword=***&x=1",
            ),
            (
                "postgres://baton@h/db?PASSWORD=hunter2",
                "postgres://baton@h/db?PASSWORD=***",
            ),
        ] {
            let u = StoreUrl::parse(url).unwrap();
            assert_eq!(u.masked(), shown);
            assert!(u.has_password());
        }
    }

    #[test]
    fn a_url_without_a_password_is_shown_as_written() {
        let u = StoreUrl::parse("postgres://baton@%2Frun%2Fpg/baton").unwrap();
        assert_eq!(u.masked(), "postgres://baton@%2Frun%2Fpg/baton");
        assert!(!u.has_password());
    }

    #[test]
    fn other_schemes_are_refused_without_their_password() {
        for bad in ["mysql://u:pw@h/db", "http://u:pw@h", "db.example", ""] {
            let e = StoreUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains("postgres:// or postgresql://"), "{bad}: {e}");
            assert!(!e.contains("pw@"), "{bad}: {e}");
        }
    }
}
