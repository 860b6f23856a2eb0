//! `baton exec`'s trace: with `BATON_OTLP_ENDPOINT` set, the run is a span
//! (`run LABEL`) and its command a child of it (`step command`), whose id
//! the command gets as `TRACEPARENT`; a run started with a valid
//! `TRACEPARENT` is a child of that span. The spans are posted once the
//! lease is released, within `EXPORT_TIMEOUT`; an export that fails is
//! said once and never changes the exit code.

use std::ffi::OsString;

use baton_lease::{Clock, SystemClock};
use baton_runner::StepResult;
use baton_sched::engine::trace::{Attr, Export, RunTrace, TraceParent, attrs, context};
use baton_store::words::{RunVerdict, StepKind};

use super::config::ExecConfig;
use crate::exit::Exit;

/// The trace of one `baton exec` under way.
pub(super) struct ExecTrace {
    run: RunTrace,
    command: TraceParent,
}

impl ExecTrace {
    /// The trace of `cfg`'s run, starting now: `None` without an endpoint,
    /// or when the random source cannot be read (said).
    pub(super) fn start(cfg: &ExecConfig) -> Option<Self> {
        cfg.otlp.as_ref()?;
        let started = RunTrace::start(cfg.trace_parent, SystemClock.wall())
            .and_then(|run| Ok((run.child()?, run)));
        match started {
            Ok((command, run)) => Some(Self { run, command }),
            Err(e) => {
                say!("baton: failed to read random bytes for a trace: {e}; not traced");
                None
            }
        }
    }

    /// The command's `TRACEPARENT`.
    pub(super) fn variable(&self) -> (OsString, OsString) {
        (context::VARIABLE.into(), self.command.to_string().into())
    }

    /// The run ended with `result` and `exit`, under `fence` on `host`:
    /// its spans are posted, and a failure said.
    pub(super) fn send(
        self,
        cfg: &ExecConfig,
        (fence, host): (u64, &str),
        result: &StepResult,
        exit: Exit,
    ) {
        let Some(endpoint) = cfg.otlp.clone() else {
            return;
        };
        let Self { mut run, command } = self;
        let outcome = baton_sched::engine::steps::outcome_of(result);
        let end = result
            .started
            .checked_add(result.duration)
            .unwrap_or(result.started);
        let failed = (!result.ending.success()).then(|| result.ending.describe());
        run.ended(
            command,
            attrs::attempt_name(StepKind::Step, "command"),
            (result.started, end),
            attrs::attempt((StepKind::Step, "command"), 1, outcome, result.code),
            failed.clone(),
        );
        let verdict = match exit {
            _ if exit.code() == 0 => RunVerdict::Ok,
            Exit::LeaseLost => RunVerdict::LeaseLost,
            _ if result.interrupted.is_some() => RunVerdict::Interrupted,
            _ => RunVerdict::Failed,
        };
        let code = i64::from(exit.code());
        // The run's attributes as every run's (README, "Traces"): an exec's
        // job is its lock, its occurrence `manual` (no schedule started
        // it), its slot 1 (an exec's lock has one holder).
        let mut facts = vec![
            ("baton.job", Attr::from(cfg.label())),
            ("baton.lock", Attr::from(cfg.label())),
            ("baton.run_id", cfg.run_id.as_str().into()),
            ("baton.occurrence", "manual".into()),
        ];
        if let Ok(fence) = i64::try_from(fence) {
            facts.push(("baton.fence", fence.into()));
        }
        facts.push(("baton.slot", 1.into()));
        facts.extend([
            ("host.name", host.into()),
            ("baton.verdict", verdict.as_str().into()),
            ("baton.exit_code", code.into()),
            ("baton.attempts", 1.into()),
        ]);
        let error =
            (verdict != RunVerdict::Ok).then(|| format!("verdict {verdict} (exit code {code})"));
        let spans = run.finish(
            format!("run {}", cfg.label()),
            SystemClock.wall(),
            facts,
            error,
        );
        let export = Export {
            endpoint,
            host: host.to_owned(),
            spans,
        };
        if let Err(e) = export.send(&SystemClock) {
            say!(
                "baton: the traces were not sent to the collector {}: {e}; the run is not affected",
                export.endpoint
            );
        }
    }
}
