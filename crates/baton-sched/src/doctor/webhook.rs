//! The alert webhooks, tried: each distinct `alert_webhook` (the
//! scheduler's, and each job's own) is posted a test alert (kind `test`,
//! marked with the `Baton-Alert-Test: 1` header, signed as an alert would
//! be), with the delivery's retries and bound; whether a 2xx came back is
//! the finding. Nothing is said when no webhook is configured.

use baton_lease::Clock;
use baton_store::words::AlertKind;

use super::finding::Finding;
use crate::config::Config;
use crate::engine::alerts::Alert;
use crate::engine::post::PostError;
use crate::engine::webhook::{self, Delivery, Webhook, WebhookError};

const CHECK: &str = "alert-webhook";

/// Posts a test alert to each distinct webhook of `c`.
pub(super) fn check(c: &Config, clock: &dyn Clock) -> Vec<Finding> {
    // Each webhook once, with the jobs (none: the scheduler's) it serves.
    let mut hooks: Vec<(Webhook, String, Vec<&str>)> = Vec::new();
    if let Some(w) = Webhook::of_scheduler(&c.settings) {
        hooks.push((w, c.settings.alert_webhook.provenance(), Vec::new()));
    }
    for job in c.jobs.values() {
        let Some(w) = Webhook::of_job(job) else {
            continue;
        };
        match hooks.iter_mut().find(|(h, _, _)| *h == w) {
            Some((_, _, jobs)) => jobs.push(&job.name),
            None => hooks.push((w, job.alert_webhook.provenance(), vec![&job.name])),
        }
    }
    let alert = Alert::scheduler(
        AlertKind::Test,
        clock.wall().to_string(),
        "baton doctor: a test alert; nothing happened".into(),
    );
    hooks
        .into_iter()
        .map(|(w, from, jobs)| {
            let signed = if w.secret.is_some() {
                "a signed"
            } else {
                "an unsigned"
            };
            let what = format!("{} ({from})", w.url);
            match webhook::deliver(&Delivery::test(w.clone(), &alert), clock) {
                Ok(attempts) => Finding::ok(
                    CHECK,
                    format!("{what} took {signed} test alert ({attempts} attempt(s))"),
                ),
                Err(e) => {
                    let fix = match e {
                        WebhookError::Secret(_) => {
                            "make alert_webhook_secret_file a private regular file (chmod 600) \
                             holding the secret"
                        }
                        WebhookError::Post(PostError::Refused { .. }) => {
                            "check the URL and what the receiver expects; a 4xx means it \
                             refuses the request"
                        }
                        _ => "make the receiver answer 2xx within the bound, or correct the URL",
                    };
                    let jobs = if jobs.is_empty() {
                        String::new()
                    } else {
                        format!(" (jobs {})", jobs.join(", "))
                    };
                    Finding::fail(
                        CHECK,
                        format!("{what}{jobs} failed a test alert: {e}; no alert would reach it"),
                        fix,
                    )
                }
            }
        })
        .collect()
}
