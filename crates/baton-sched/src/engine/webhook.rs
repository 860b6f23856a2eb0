//! The alert webhook (`alert_webhook`): one surface of an alert, posted
//! as JSON to a URL. This module owns the body, the signature and the
//! delivery with its retries; [`super::pending::Pending`] runs a delivery
//! on a thread of its own and [`super::surfaces`] decides when.
//!
//! The body is the alert's JSON object (the fields `alert_command`
//! receives) plus `text`: one line for people (`baton JOB: KIND:
//! MESSAGE`, with `&`, `<` and `>` escaped as Slack asks), so that a
//! Slack-compatible incoming webhook takes the body as it is.
//!
//! Each post carries `Content-Type: application/json`, `Baton-Timestamp`
//! (seconds since 1970, when the delivery began) and, with
//! `alert_webhook_secret_file`, `Baton-Signature: sha256=HEX`: the
//! HMAC-SHA256, keyed with the secret, of the timestamp, a `.`, and the
//! body's exact bytes. A receiver recomputes it and refuses a timestamp it
//! finds too old. A test post (`baton doctor`) adds `Baton-Alert-Test: 1`
//! and has kind `test`.
//!
//! A delivery never takes longer than [`ALERT_TIMEOUT`] in all: at most
//! [`ATTEMPTS`] attempts, each cut at [`ATTEMPT_TIMEOUT`], retried after a
//! backoff that starts at [`FIRST_BACKOFF`] and doubles, as
//! [`super::post`] says (which statuses are retried, no redirects). A
//! delivery that fails is an [`WebhookError`], said by the caller; it is
//! never fatal and never keeps the alert from another surface. Time is
//! read and slept through a [`Clock`].

use std::path::PathBuf;
use std::time::Duration;

use baton_lease::Clock;
use hmac::{KeyInit, Mac};

use super::alerts::{ALERT_TIMEOUT, Alert};
use super::post::{self, Patience, PostError};
use crate::config::WebhookUrl;
use crate::config::secret::{self, SecretError};

/// The most attempts one delivery makes.
pub const ATTEMPTS: u32 = 4;
/// The longest one attempt may take (less when less of the bound is left).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(4);
/// The wait before the first retry; it doubles for each one after.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The header that marks a test post.
pub const TEST_HEADER: &str = "Baton-Alert-Test";

/// Where a job's (or the scheduler's) alerts are posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// The URL.
    pub url: WebhookUrl,
    /// The file holding the signing secret, if posts are signed.
    pub secret: Option<PathBuf>,
}

impl Webhook {
    /// The webhook of `[scheduler]`: an alert of no job's, or of a job
    /// no longer configured, goes there.
    pub fn of_scheduler(s: &crate::config::Settings) -> Option<Self> {
        Some(Self {
            url: s.alert_webhook.value.clone()?,
            secret: s.alert_webhook_secret_file.value.clone(),
        })
    }

    /// The webhook of `job` (its own, or the one it inherits).
    pub fn of_job(job: &crate::config::Job) -> Option<Self> {
        Some(Self {
            url: job.alert_webhook.value.clone()?,
            secret: job.alert_webhook_secret_file.value.clone(),
        })
    }
}

/// One alert to post to one webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// Where.
    pub webhook: Webhook,
    /// The body, as posted.
    pub body: Vec<u8>,
    /// A test post (`baton doctor`): marked with [`TEST_HEADER`].
    pub test: bool,
}

impl Delivery {
    /// `alert` to `webhook`.
    pub fn of(webhook: Webhook, alert: &Alert) -> Self {
        Self {
            webhook,
            body: body(alert),
            test: false,
        }
    }

    /// A test post of `alert` (kind `test`) to `webhook`.
    pub fn test(webhook: Webhook, alert: &Alert) -> Self {
        Self {
            test: true,
            ..Self::of(webhook, alert)
        }
    }
}

/// Why a delivery failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// The signing secret cannot be read: nothing is sent unsigned.
    #[error("its signing secret cannot be used, so nothing was sent: {0}")]
    Secret(#[from] SecretError),
    /// The post failed.
    #[error(transparent)]
    Post(#[from] PostError),
}

/// The body posted for `alert`: its JSON object and `text`.
pub fn body(alert: &Alert) -> Vec<u8> {
    // OK because an alert is strings, numbers and maps of them, which
    // always encode.
    let mut v = serde_json::to_value(alert).expect("an alert encodes as JSON");
    if let Some(o) = v.as_object_mut() {
        o.insert("text".into(), text(alert).into());
    }
    // OK as above.
    serde_json::to_vec(&v).expect("an alert encodes as JSON")
}

/// `alert` in one line for people, escaped as Slack's `text` asks.
pub fn text(alert: &Alert) -> String {
    let who = if alert.job.is_empty() {
        String::new()
    } else {
        format!(" {}", alert.job)
    };
    let line = format!("baton{who}: {}: {}", alert.kind.as_str(), alert.message);
    let line: String = line
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    line.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `Baton-Signature`'s value for `body` posted at `timestamp`, with
/// `secret`: `sha256=` and the HMAC-SHA256 of `TIMESTAMP.BODY`, in hex.
pub fn signature(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    // OK because HMAC takes a key of any length.
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret).expect("any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

/// The patience of one delivery: [`ALERT_TIMEOUT`] in all, [`ATTEMPTS`]
/// attempts of at most [`ATTEMPT_TIMEOUT`], backing off from
/// [`FIRST_BACKOFF`].
const PATIENCE: Patience = Patience {
    bound: ALERT_TIMEOUT,
    attempts: ATTEMPTS,
    attempt: ATTEMPT_TIMEOUT,
    backoff: FIRST_BACKOFF,
};

/// Posts `d`, retrying as the module says, within [`ALERT_TIMEOUT`]; the
/// attempts it took.
///
/// # Errors
///
/// [`WebhookError`]: a secret that cannot be used, a status that is not
/// retried, or no 2xx within the attempts and the bound.
pub fn deliver(d: &Delivery, clock: &dyn Clock) -> Result<u32, WebhookError> {
    let timestamp = clock.wall().as_second();
    let mut headers = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Baton-Timestamp", timestamp.to_string()),
    ];
    if let Some(path) = &d.webhook.secret {
        let key = secret::read(path)?;
        headers.push(("Baton-Signature", signature(&key, timestamp, &d.body)));
    }
    if d.test {
        headers.push((TEST_HEADER, "1".to_owned()));
    }
    Ok(post::post(
        d.webhook.url.secret(),
        &headers,
        &d.body,
        PATIENCE,
        clock,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_store::words::AlertKind;

    fn alert(job: &str, message: &str) -> Alert {
        let mut a = Alert::scheduler(
            AlertKind::Failed,
            "2026-01-01T00:00:00Z".into(),
            message.into(),
        );
        a.job = job.into();
        a
    }

    #[test]
    fn the_body_is_the_alert_and_a_line_for_people() {
        let a = alert("nightly", "the step x exited with status 4 <a & b>\nnext");
        let v: serde_json::Value = serde_json::from_slice(&body(&a)).unwrap();
        assert_eq!(v["kind"], "failed");
        assert_eq!(v["job"], "nightly");
        assert_eq!(v["message"], a.message);
        assert_eq!(
            v["text"],
            "baton nightly: failed: the step x exited with status 4 &lt;a &amp; b&gt; next"
        );
        let s = Alert::scheduler(AlertKind::LedgerCorrupt, "t".into(), "moved".into());
        assert_eq!(text(&s), "baton: ledger-corrupt: moved");
    }

    #[test]
    fn the_signature_covers_the_timestamp_and_the_body() {
        // Computed apart, with Python's hmac module: HMAC-SHA256 keyed
        // "Jefe" over '1767225600.{"kind":"test"}'.
        let body = br#"{"kind":"test"}"#;
        assert_eq!(
            signature(b"Jefe", 1_767_225_600, body),
            "sha256=459bef011d91e73347d6b5bd78c849aa94b122e6777b53da0fe7934fa6f75f51"
        );
        assert_ne!(
            signature(b"Jefe", 1_767_225_601, body),
            signature(b"Jefe", 1_767_225_600, body)
        );
        assert_ne!(
            signature(b"Jefe2", 1_767_225_600, body),
            signature(b"Jefe", 1_767_225_600, body)
        );
    }
}
