//! Alerts: what the scheduler raises when a run fails, is stopped by a lost
//! lease, overruns its budget, or when occurrences are missed for a fault
//! (not a pause). Each is recorded in the shared ledger, where `baton
//! status`, the status page and the metrics show it as the command line's
//! own, and handed to the service's hook ([`crate::Builder::on_alert`]),
//! once across replicas: by the replica that recorded what it is about.
//!
//! This module raises; it decides nothing about a run, and a failure to
//! record an alert never changes what runs (it is said, and the run goes
//! on).

use baton_store::ledger::NewAlert;
use jiff::Timestamp;

use crate::env::Env;
use crate::hook::Alert;
use crate::ledgers::Ledger;
use crate::quote::quoted as text;

/// Records `alert` in the ledger and hands it to the hook, if there is one.
pub(crate) async fn raise(env: &Env, ledger: &mut Ledger, alert: Alert) {
    tracing::warn!("{}: {}: {}", alert.job, alert.kind, alert.message);
    let row = NewAlert {
        time: alert.time,
        job: Some(alert.job.clone()),
        kind: alert.kind,
        run_id: alert.run_id.clone(),
        occurrence: alert.occurrence.map(Timestamp::as_second),
        message: alert.message.clone(),
        json: json(&alert),
    };
    if let Some(Err(e)) = ledger.call(move |l| l.record_alert(&row)).await {
        tracing::warn!("{}: the alert was not recorded: {e}", alert.job);
    }
    if let Some(hook) = &env.on_alert {
        // A hook that panics must not take the run with it: the run still
        // records its end and releases its lease.
        let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&alert)));
        if called.is_err() {
            tracing::error!("{}: the service's alert hook panicked", alert.job);
        }
    }
}

/// The alert as one JSON object, as the ledger keeps it.
fn json(a: &Alert) -> String {
    let opt = |v: Option<String>| v.map_or_else(|| "null".to_owned(), |s| text(&s));
    format!(
        "{{\"time\":{},\"job\":{},\"kind\":{},\"run_id\":{},\"occurrence\":{},\"message\":{}}}",
        text(&a.time.to_string()),
        text(&a.job),
        text(a.kind.as_str()),
        opt(a.run_id.clone()),
        opt(a.occurrence.map(|t| t.to_string())),
        text(&a.message),
    )
}

#[cfg(test)]
mod tests {
    use baton_store::words::AlertKind;

    use super::*;

    #[test]
    fn the_json_escapes_what_json_asks() {
        let a = Alert {
            job: "report".into(),
            kind: AlertKind::StepFailed,
            run_id: None,
            occurrence: None,
            message: "said \"no\"\n\\".into(),
            time: "2026-12-01T00:00:00Z".parse().unwrap(),
        };
        assert_eq!(
            json(&a),
            "{\"time\":\"2026-12-01T00:00:00Z\",\"job\":\"report\",\"kind\":\"step-failed\",\
             \"run_id\":null,\"occurrence\":null,\"message\":\"said \\\"no\\\"\\u000a\\\\\"}"
        );
    }
}
