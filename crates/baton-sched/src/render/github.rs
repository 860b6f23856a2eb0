//! GitHub Actions workflows: one per enabled job, on `workflow_dispatch` and
//! on the job's schedule converted to UTC cron (GitHub's only zone), that
//! checks out the repository and runs `baton tick JOB`. Rendered to read and
//! commit by hand; baton never installs them.
//!
//! There is no one-driver form: a runner keeps no state between runs, so a
//! per-minute `baton tick` could not remember what already ran. The job's
//! own schedule is the driver, whether or not `--per-job` is given, and a
//! job whose schedule UTC cron cannot express is refused
//! ([`super::translate::cron_in_utc`]). Jobs that share a lock share a
//! `concurrency` group, so GitHub never runs two of them at once either:
//! their leases live on different runners and cannot see each other.
//!
//! ## On the runner
//!
//! The workflow runs in a checkout of the repository that holds the
//! configuration: [`Options::config`] is, for this target, the
//! configuration's path relative to the repository's root, rendered under
//! `${{ github.workspace }}`. The state directory is under
//! `${{ runner.temp }}`, which the runner can write and forgets after the
//! run: a runner keeps no state between runs, so runs are kept apart by
//! `concurrency` only, and a manual dispatch (`workflow_dispatch`) runs the
//! job now (`baton run`) instead of what is due. Nothing installs baton:
//! [`Options::bin`] is where the binary must be on the runner.

use super::translate;
use super::{Artefact, Options, Refusal, RenderError, Target, path_text, sh_word};
use crate::config::Config;

/// The workflows for `c`.
///
/// # Errors
///
/// Every job UTC cron cannot express; a path that cannot be written.
pub fn render(c: &Config, opts: &Options) -> Result<Vec<Artefact>, RenderError> {
    let bin = sh_word(&path_text(Target::Github, "the binary", &opts.bin)?);
    let rel = path_text(Target::Github, "the configuration", &opts.config)?;
    if opts.config.is_absolute() {
        return Err(RenderError::Path {
            target: Target::Github,
            what: "the configuration",
            path: opts.config.clone(),
            why: "the workflow needs its path inside the repository, relative to the \
                  checkout (--config-path-as PATH)",
        });
    }
    let config = format!("\"${{{{ github.workspace }}}}\"/{}", sh_word(&rel));
    let entries = super::per_job(c, Target::Github, |job| {
        translate::cron_in_utc(&job.when.value, &job.timezone.value, opts.now).map_err(|why| {
            Refusal {
                job: job.name.clone(),
                target: Target::Github,
                why,
            }
        })
    })?;
    let mut out = Vec::new();
    for (name, schedule) in entries {
        let job = &c.jobs[&name];
        let mut t = format!(
            "# Rendered by `baton render github`: job {name} of {rel} (in this\n\
             # repository), {} in {}, as cron in UTC (GitHub Actions' only zone).\n\
             # GitHub may start a scheduled run late: `baton tick` still runs the\n\
             # occurrence within catch_up_window.\n\
             # Nothing here installs baton: the runner must have the binary at\n\
             #   {}\n\
             # (a self-hosted runner, or a step before baton's that puts it there).\n\
             # A runner keeps no state between runs: the state directory is under\n\
             # runner.temp and starts empty, so runs are kept apart by `concurrency`\n\
             # only, and a manual dispatch (workflow_dispatch) runs the job now.\n\
             name: {}\n\
             on:\n\
             \x20 workflow_dispatch:\n\
             \x20 schedule:\n",
            translate::shown(&job.when.value),
            job.timezone.value.name,
            opts.bin.display(),
            yaml_str(&format!("baton {name}")),
        );
        for line in &schedule.lines {
            t.push_str(&format!("    - cron: {}\n", yaml_str(&line.to_string())));
        }
        let state = yaml_str("${{ runner.temp }}/baton-state");
        let job_word = sh_word(&name);
        t.push_str(&format!(
            "# One run at a time of every job under the lock {lock:?}.\n\
             concurrency:\n\
             \x20 group: {group}\n\
             \x20 cancel-in-progress: false\n\
             jobs:\n\
             \x20 tick:\n\
             \x20   runs-on: ubuntu-latest\n\
             \x20   steps:\n\
             \x20     - uses: actions/checkout@v4\n\
             \x20     - name: {tick_step}\n\
             \x20       if: github.event_name != 'workflow_dispatch'\n\
             \x20       env:\n\
             \x20         BATON_STATE_DIR: {state}\n\
             \x20       run: {tick}\n\
             \x20     - name: {run_step}\n\
             \x20       if: github.event_name == 'workflow_dispatch'\n\
             \x20       env:\n\
             \x20         BATON_STATE_DIR: {state}\n\
             \x20       run: {run}\n",
            lock = job.lock.value,
            group = yaml_str(&format!("baton-lock-{}", job.lock.value)),
            tick_step = yaml_str(&format!("baton tick {name}")),
            run_step = yaml_str(&format!("baton run {name} (manual dispatch)")),
            tick = yaml_str(&format!("{bin} tick --config {config} -- {job_word}")),
            run = yaml_str(&format!("{bin} run --config {config} -- {job_word}")),
        ));
        out.push(Artefact {
            name: format!("baton-{name}.yml"),
            text: t,
        });
    }
    Ok(out)
}

/// A YAML scalar in single quotes (`'` doubled).
fn yaml_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
