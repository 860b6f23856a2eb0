//! What the surfaces of an alert or a run leave running: alert commands,
//! webhook deliveries and trace exports, each on a thread of its own,
//! each bounded in time, and waited for together ([`Pending::finish`]).
//!
//! This module owns those threads and what went wrong on them. It must
//! never build what is sent (the alert is [`super::alerts`]'s, the posted
//! body [`super::webhook`]'s, the spans [`super::trace`]'s) nor decide
//! when a surface is used ([`super::surfaces`] does); a failure it reports
//! is said by the caller, never fatal.

use std::sync::Arc;
use std::thread::JoinHandle;

use baton_lease::Clock;

use super::alerts::{ALERT_TIMEOUT, stderr_copy};
use crate::config::Command;

/// Alert commands, webhook deliveries and trace exports started and not
/// yet waited for. Each runs on a thread of its own and ends within
/// [`ALERT_TIMEOUT`] (an export within [`super::trace::EXPORT_TIMEOUT`]).
#[derive(Debug, Default)]
pub struct Pending(Vec<JoinHandle<Option<String>>>);

impl Pending {
    /// Starts `command` with `json` on its stdin, on a thread of its own.
    pub fn start(&mut self, command: &Command, json: Vec<u8>) {
        let hook = match command {
            Command::Shell(s) => baton_runner::HookCommand::Shell(s.clone()),
            Command::Argv(a) => baton_runner::HookCommand::Argv(a.clone()),
        };
        self.0.push(std::thread::spawn(move || {
            let out = baton_runner::hook::run(&hook, &json, &[], stderr_copy(), ALERT_TIMEOUT);
            match out {
                baton_runner::HookOutcome::Done => None,
                other => Some(format!("the alert command {hook} {other}")),
            }
        }));
    }

    /// Posts `delivery` on a thread of its own (see
    /// [`super::webhook::deliver`]), sleeping and timing through `clock`.
    pub fn post(&mut self, delivery: super::webhook::Delivery, clock: Arc<dyn Clock>) {
        self.0.push(std::thread::spawn(move || {
            baton_runner::signals::block_in_this_thread();
            super::webhook::deliver(&delivery, clock.as_ref())
                .err()
                .map(|e| format!("the alert webhook {} failed: {e}", delivery.webhook.url))
        }));
    }

    /// Sends `export` (one run's spans) on a thread of its own (see
    /// [`super::trace::Export::send`]), sleeping and timing through
    /// `clock`.
    pub fn export(&mut self, export: super::trace::Export, clock: Arc<dyn Clock>) {
        self.0.push(std::thread::spawn(move || {
            baton_runner::signals::block_in_this_thread();
            export.send(clock.as_ref()).err().map(|e| {
                format!(
                    "the traces were not sent to the collector {}: {e}; the run is not affected",
                    export.endpoint
                )
            })
        }));
    }

    /// Whether nothing was started.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Waits for every alert command and delivery; what went wrong with
    /// them.
    pub fn finish(&mut self) -> Vec<String> {
        self.0
            .drain(..)
            .filter_map(|h| h.join().ok().flatten())
            .collect()
    }
}
