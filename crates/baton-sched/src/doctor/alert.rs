//! The alert command, tried: run once as an alert would be delivered, with
//! a test alert (kind `test`) on its stdin and `BATON_ALERT_TEST=1` in its
//! environment, bounded by the alert timeout; its exit status is the
//! finding. The webhooks are tried apart (`super::webhook`).

use baton_runner::HookOutcome;
use baton_store::words::AlertKind;

use super::finding::Finding;
use crate::config::Config;
use crate::engine::alerts::{self, ALERT_TIMEOUT, Alert};

const CHECK: &str = "alert-command";

/// Tries the alert command of `c`; `now` stamps the test alert.
pub(super) fn check(c: &Config, now: jiff::Timestamp) -> Finding {
    let setting = &c.settings.alert_command;
    let Some(command) = &setting.value else {
        return Finding::ok(
            CHECK,
            "none configured: alerts reach stderr, the logs and the ledger only",
        );
    };
    let alert = Alert::scheduler(
        AlertKind::Test,
        now.to_string(),
        "baton doctor: a test alert; nothing happened".into(),
    );
    let from = setting.provenance();
    let by_hand = format!(
        "run it by hand: `echo '{{\"kind\":\"test\"}}' | {}=1 {}`",
        alerts::TEST_VARIABLE,
        match command {
            crate::config::Command::Shell(s) => format!("sh -c '{s}'"),
            crate::config::Command::Argv(a) => a.join(" "),
        }
    );
    match alerts::try_command(command, &alert) {
        HookOutcome::Done => Finding::ok(
            CHECK,
            format!("{command} ({from}) took a test alert and exited 0"),
        ),
        HookOutcome::Failed(how) => Finding::fail(
            CHECK,
            format!("{command} ({from}) failed a test alert: {how}; no alert would reach anyone"),
            by_hand,
        ),
        HookOutcome::TimedOut(_) => Finding::fail(
            CHECK,
            format!(
                "{command} ({from}) ran past {}s with a test alert and was stopped; alerts would \
                 be cut off the same way",
                ALERT_TIMEOUT.as_secs()
            ),
            format!(
                "make it finish within {}s; {by_hand}",
                ALERT_TIMEOUT.as_secs()
            ),
        ),
        HookOutcome::NotStarted(why) => Finding::fail(
            CHECK,
            format!("{command} ({from}) could not be started: {why}"),
            "give alert_command a program that exists and can be executed (an absolute path)",
        ),
    }
}
