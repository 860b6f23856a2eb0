//! The crontab: by default one line that runs `baton tick` every minute;
//! with `--per-job`, one line (or a few) per enabled job that runs
//! `baton tick JOB` at the job's own schedule.
//!
//! A per-job line is read in the job's zone: when it differs from the
//! host's, a `CRON_TZ=` line comes first (cronie honours it; a cron that
//! ignores `CRON_TZ=` needs the default form). Intervals are rendered in
//! UTC. A job whose schedule cron cannot express is refused
//! ([`super::translate`]), and then nothing is rendered.

use super::translate::{self, CronSchedule};
use super::{Artefact, Options, Refusal, RenderError, Target, path_text, sh_word};
use crate::config::Config;

/// The crontab's file name.
pub const FILE: &str = "baton.cron";

/// The crontab for `c`.
///
/// # Errors
///
/// With `per_job`, every job cron cannot express; a path that cannot be
/// written.
pub fn render(c: &Config, opts: &Options) -> Result<Vec<Artefact>, RenderError> {
    let config = path_text(Target::Cron, "the configuration", &opts.config)?;
    let state = path_text(Target::Cron, "the state directory", &opts.state_dir(c))?;
    let bin = command_word(&path_text(Target::Cron, "the binary", &opts.bin)?);
    let config_word = command_word(&config);
    let mut t = String::new();
    t.push_str(&format!(
        "# baton's crontab for {config}, rendered by `baton render cron{}`.\n",
        if opts.per_job { " --per-job" } else { "" }
    ));
    t.push_str("# Install it with `crontab FILE` (it replaces the user's crontab) or append it;\n");
    t.push_str("# the PATH and BATON_STATE_DIR lines apply to every line after them.\n");
    if opts.per_job {
        t.push_str("# One line per job runs `baton tick JOB` at the job's schedule; baton still\n");
        t.push_str("# checks in the job's zone what is due, and never runs an occurrence twice.\n");
    } else {
        t.push_str("# One line runs `baton tick` every minute: baton decides in each job's own\n");
        t.push_str(
            "# zone what is due, catches up after downtime and deduplicates, so this line\n",
        );
        t.push_str("# is right for every schedule and zone.\n");
    }
    t.push_str(&format!("PATH={}\n", opts.path));
    t.push_str(&format!("BATON_STATE_DIR={state}\n"));
    if !opts.per_job {
        t.push_str(&format!("* * * * * {bin} tick --config {config_word}\n"));
        return Ok(vec![Artefact {
            name: FILE.into(),
            text: t,
        }]);
    }
    let entries = super::per_job(c, |job| {
        translate::cron_in_zone(&job.when.value, &job.timezone.value).map_err(|why| Refusal {
            job: job.name.clone(),
            target: Target::Cron,
            why,
        })
    })?;
    let mut zone = opts.host_zone.clone();
    for (name, CronSchedule { zone: z, lines }) in entries {
        let job = &c.jobs[&name];
        t.push_str(&format!(
            "\n# {name}: {} in {}\n",
            translate::shown(&job.when.value),
            z
        ));
        if z != zone {
            t.push_str(&format!("CRON_TZ={z}\n"));
            zone = z;
        }
        for line in lines {
            t.push_str(&format!(
                "{line} {bin} tick {} --config {config_word}\n",
                command_word(&name)
            ));
        }
    }
    for job in super::disabled_jobs(c) {
        t.push_str(&format!(
            "\n# {}: disabled (enabled = false), no line\n",
            job.name
        ));
    }
    Ok(vec![Artefact {
        name: FILE.into(),
        text: t,
    }])
}

/// A word of a crontab command: quoted for the shell, `%` escaped (cron
/// turns a bare `%` into a newline).
fn command_word(s: &str) -> String {
    sh_word(s).replace('%', r"\%")
}
