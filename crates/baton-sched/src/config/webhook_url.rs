//! `alert_webhook`: the URL alerts are posted to, checked for its form and
//! never shown whole.
//!
//! An incoming webhook's URL is its credential (a Slack one carries its
//! secret in its path), so [`WebhookUrl`]'s `Display` and `Debug` print
//! [`WebhookUrl::shown`]: the scheme and the host, with neither the user
//! part nor the path. `baton config`, the daemon's API and every message
//! built from a [`super::Config`] print that. The full text is reachable
//! only through [`WebhookUrl::secret`], for the one caller that posts.

/// An `http://` or `https://` URL with a host.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookUrl(String);

impl WebhookUrl {
    /// Checks the form: an absolute `http://` or `https://` URL with a
    /// host, and no space or control character.
    ///
    /// # Errors
    ///
    /// [`crate::http::InvalidHttp::Url`] or [`crate::http::InvalidHttp::Port`],
    /// naming the URL as [`WebhookUrl::shown`] shows it.
    ///
    /// # Example
    ///
    /// ```
    /// use baton_sched::config::WebhookUrl;
    /// let u = WebhookUrl::parse("https://hooks.example/services/T0/B0/s3cret").unwrap();
    /// assert_eq!(u.to_string(), "https://hooks.example/…");
    /// assert!(WebhookUrl::parse("ftp://hooks.example/").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, crate::http::InvalidHttp> {
        use crate::http::InvalidHttp;
        crate::http::check_url(text).map_err(|e| {
            // A refusal is shown wherever the configuration's errors go
            // (stderr a cron job mails, `doctor`, a daemon's alert of a
            // refused reload): it names the URL as it may be shown, never
            // the path that is the hook's credential.
            let shown = Self(text.to_owned()).shown();
            match e {
                InvalidHttp::Port(_) => InvalidHttp::Port(shown),
                _ => InvalidHttp::Url(shown),
            }
        })?;
        Ok(Self(text.to_owned()))
    }

    /// The scheme and the host (and port), then `/…` when there is more:
    /// what may be shown.
    pub fn shown(&self) -> String {
        let (scheme, rest) = self.0.split_once("://").unwrap_or(("", &self.0));
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..end];
        let host = authority.rsplit('@').next().unwrap_or(authority);
        let more = if rest[end..].trim_start_matches('/').is_empty() {
            ""
        } else {
            "/…"
        };
        format!("{}://{host}{more}", scheme.to_ascii_lowercase())
    }

    /// The URL as written: only for posting.
    pub fn secret(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for WebhookUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

impl std::fmt::Debug for WebhookUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WebhookUrl({:?})", self.shown())
    }
}

#[cfg(test)]
mod tests {
    use super::WebhookUrl;

    #[test]
    fn only_the_scheme_and_host_are_shown() {
        for (url, shown) in [
            (
                "https://hooks.example/services/T/B/x",
                "https://hooks.example/…",
            ),
            (
                "HTTP://user:pw@127.0.0.1:8080/hook?k=v",
                "http://127.0.0.1:8080/…",
            ),
            ("https://[::1]:9/", "https://[::1]:9"),
            ("http://h", "http://h"),
        ] {
            let u = WebhookUrl::parse(url).unwrap();
            assert_eq!(u.to_string(), shown, "{url}");
            assert_eq!(format!("{u:?}"), format!("WebhookUrl({shown:?})"));
            assert_eq!(u.secret(), url);
        }
    }

    #[test]
    fn other_schemes_and_hostless_urls_are_refused() {
        for bad in ["ftp://h/", "hooks.example/x", "http://", "http://a b/", ""] {
            assert!(WebhookUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
