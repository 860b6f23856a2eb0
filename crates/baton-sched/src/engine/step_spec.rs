//! What the runner starts for one attempt of a step ([`step_spec`]): its
//! program (a command as written, or `baton __http` for an HTTP step), the
//! run's environment and the step's own, where it runs and its limits. A
//! run's steps make one for each attempt, and its first attempt's is made
//! early, before the start is recorded (`early`).
//!
//! This module owns only the making of the spec. It must never start it
//! (the runner's session does, for the steps), read the clock, or write a
//! record.

use baton_runner::{Stdin, StepSpec};

use crate::config::{Action, Step};
use crate::engine::request::Request;
use crate::engine::trace::{self, TraceParent};
use crate::http;
use crate::state::output::OutputSink;

/// The program a step runs, and what it adds to the step's environment: a
/// command as it is written; an HTTP request as `baton __http`, the
/// request in [`http::REQUEST_ENV`].
///
/// An HTTP step runs the current executable, which is baton: only the baton
/// binary runs schedules. Should the executable's path be unreadable, the
/// kernel's name for it still starts the same program.
fn program(action: &Action) -> (Vec<String>, Option<(String, String)>) {
    match action {
        Action::Command(c) => (c.argv(), None),
        Action::Http(request) => {
            let exe = std::env::current_exe().map_or_else(
                |_| "/proc/self/exe".to_owned(),
                |p| p.to_string_lossy().into_owned(),
            );
            (
                vec![exe, http::SUBCOMMAND.to_owned()],
                Some((http::REQUEST_ENV.to_owned(), request.encode())),
            )
        }
    }
}

/// Where a step runs: its `cwd`, else the configuration file's directory
/// (never the caller's: `baton tick` under cron, a person's terminal and
/// the daemon run a job in the same place). The configuration's path is
/// made absolute when it is located ([`crate::config::locate`]).
fn working_dir(config: &crate::config::Config, step: &Step) -> Option<std::path::PathBuf> {
    step.cwd.clone().or_else(|| {
        config
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map(std::path::Path::to_path_buf)
    })
}

/// What the runner starts for attempt `attempt` of `step`: its program;
/// the run's environment `env`, then `BATON_STEP`, `BATON_ATTEMPT` and,
/// when traced, `TRACEPARENT` naming the attempt's `span`, then the step's
/// own, then an HTTP step's request; where and how it runs.
pub(crate) fn step_spec(
    req: &Request<'_>,
    env: &[(String, String)],
    step: &Step,
    attempt: u32,
    sink: OutputSink,
    span: Option<TraceParent>,
) -> StepSpec {
    let (argv, request) = program(&step.action.value);
    let mut spec = StepSpec::new(argv[0].clone(), argv[1..].iter().map(Into::into).collect());
    spec.env = env
        .iter()
        .cloned()
        .chain([
            ("BATON_STEP".to_owned(), step.name.clone()),
            ("BATON_ATTEMPT".to_owned(), attempt.to_string()),
        ])
        .chain(span.map(|p| (trace::context::VARIABLE.to_owned(), p.to_string())))
        .chain(step.env.iter().cloned())
        .chain(request)
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    spec.cwd = working_dir(req.config, step);
    spec.timeout = step.timeout.value;
    spec.kill_grace = step.kill_grace.value;
    spec.contain = req.job.policy.contain.value;
    spec.stdin = Stdin::Null;
    spec.output = baton_runner::Output::Capture(Box::new(sink));
    spec
}
