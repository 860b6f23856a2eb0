//! The crontab: by default one line that runs `baton tick` every minute;
//! with `--per-job`, one line (or a few) per enabled job that runs
//! `baton tick JOB` at the job's own schedule.
//!
//! A per-job line is read in the job's zone. The jobs in the host's zone
//! come first, with no `CRON_TZ=` before them; then each other zone's jobs
//! under one `CRON_TZ=` line (cronie honours it; a cron that ignores it,
//! such as Debian's default cron, needs the default form, and the crontab
//! says so at its top when it holds one). Intervals are rendered in UTC. A
//! job whose schedule cron cannot express is refused
//! ([`super::translate`]), and then nothing is rendered: that includes a
//! fixed time that a clock change skips or repeats on a day it fires, in
//! the host's zone too, since crons differ there and none fires it as baton
//! does (`super::dst`).
//!
//! No line sets `BATON_STATE_DIR`: an environment value beats the
//! configuration's `state_dir`, so a pinned one would split the ledger in
//! two at the next edit of the file.
//!
//! The job's name follows `--`, so a name that starts with `-` is never
//! read as an option.

use jiff::Timestamp;

use super::translate::{self, CronSchedule, CronShape, Untranslatable};
use super::{Artefact, Options, Refusal, RenderError, Target, path_text, sh_word};
use crate::config::{Config, When, Zone};

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
    let bin = command_word(&path_text(Target::Cron, "the binary", &opts.bin)?);
    let config_word = command_word(&config);
    let mut head = format!(
        "# baton's crontab for {config}, rendered by `baton render cron{}`.\n",
        if opts.per_job { " --per-job" } else { "" }
    );
    head.push_str(
        "# Install it with `crontab FILE` (it replaces the user's crontab) or append it;\n",
    );
    head.push_str("# the PATH line applies to every line after it. The state directory is the\n");
    head.push_str("# configuration's state_dir: set it there, not here (a BATON_STATE_DIR= line\n");
    head.push_str("# would outlive a later edit of the file and split the ledger).\n");
    let vars = format!("PATH={}\n", opts.path);
    if !opts.per_job {
        head.push_str(
            "# One line runs `baton tick` every minute: baton decides in each job's own\n",
        );
        head.push_str(
            "# zone what is due, catches up after downtime and deduplicates, so this line\n",
        );
        head.push_str("# is right for every schedule and zone.\n");
        return Ok(vec![Artefact {
            name: FILE.into(),
            text: format!("{head}{vars}* * * * * {bin} tick --config {config_word}\n"),
        }]);
    }
    head.push_str(
        "# One line per job runs `baton tick -- JOB` at the job's schedule; baton still\n",
    );
    head.push_str("# checks in the job's zone what is due, and never runs an occurrence twice.\n");
    // cronie matches a `CRON_TZ=` line against the job's zone every minute,
    // but when the host's own clock falls back it runs only lines whose
    // minute or hour is `*` for the repeated hour, and when it springs
    // forward it makes up skipped minutes by the host's zone: a line under
    // `CRON_TZ=` on a host whose zone changes its offset can miss a run.
    let host_changes = jiff::tz::TimeZone::get(&opts.host_zone)
        .ok()
        .is_some_and(|tz| {
            let zone = crate::config::Zone {
                name: opts.host_zone.clone(),
                tz,
            };
            super::changes::offset_changes(&zone, opts.now)
                .next()
                .is_some()
        });
    let entries = super::per_job(c, Target::Cron, opts.now, |job| {
        let refuse = |why| Refusal {
            job: job.name.clone(),
            target: Target::Cron,
            why,
        };
        let schedule = cron_in_zone(&job.when.value, &job.timezone.value, opts.now)
            .map_err(|why| refuse(why.to_string()))?;
        if schedule.zone != opts.host_zone && host_changes {
            return Err(refuse(format!(
                "it needs `CRON_TZ={}`, and the host's zone, {}, changes its offset: at those \
                 changes cron runs `CRON_TZ=` lines by the host's clock and can miss one",
                schedule.zone, opts.host_zone
            )));
        }
        Ok(schedule)
    })?;
    // The host's zone first, with no CRON_TZ= before it; then by zone.
    let mut entries = entries;
    entries.sort_by(|(a, sa), (b, sb)| {
        (sa.zone != opts.host_zone, &sa.zone, a).cmp(&(sb.zone != opts.host_zone, &sb.zone, b))
    });
    let mut t = String::new();
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
                "{line} {bin} tick --config {config_word} -- {}\n",
                command_word(&name)
            ));
        }
    }
    if zone != opts.host_zone {
        head.push_str(&format!(
            "# CRON_TZ= lines need a cron that honours them (cronie does; Debian's default\n\
             # cron does not, and would run those lines in the host's zone, {}): with\n\
             # another cron, use the default form (without --per-job).\n",
            opts.host_zone
        ));
    }
    for job in super::disabled_jobs(c) {
        t.push_str(&format!(
            "\n# {}: disabled (enabled = false), no line\n",
            job.name
        ));
    }
    Ok(vec![Artefact {
        name: FILE.into(),
        text: format!("{head}{vars}{t}"),
    }])
}

/// `when` as cron lines read in the job's `zone`, or in UTC for an
/// interval.
///
/// # Errors
///
/// Why no cron line can express it: sub-minute, an interval that does not
/// divide a day, or a time a clock change in the years after `now` skips
/// or repeats on a day it fires, where cron would run it at another instant
/// than baton (`super::dst`).
pub fn cron_in_zone(
    when: &When,
    zone: &Zone,
    now: Timestamp,
) -> Result<CronSchedule, Untranslatable> {
    let f = match translate::cron_shape(when)? {
        CronShape::Lines(lines) => return Ok(lines),
        CronShape::Fields(f) => f,
    };
    super::dst::check(super::dst::Rules::Cron, when, f, zone, now)?;
    Ok(CronSchedule {
        zone: zone.name.clone(),
        lines: vec![translate::same_fields(when, f)?],
    })
}

/// A word of a crontab command: quoted for the shell, `%` escaped (cron
/// turns a bare `%` into a newline).
fn command_word(s: &str) -> String {
    sh_word(s).replace('%', r"\%")
}
