//! systemd units: by default one `baton daemon` service (`Type=notify`,
//! restarted on failure, stopped with time to let runs finish); with
//! `--per-job`, a oneshot service running `baton tick JOB` and a timer per
//! enabled job, at the job's schedule as `OnCalendar=` in its zone.
//!
//! `OnCalendar=` is refused where systemd's calendar rules and baton's
//! differ: at a wall-clock time a clock change skips or repeats on a day the
//! schedule fires, when systemd would run it at another instant
//! ([`super::dst`]). Weekdays are written from Monday, systemd's first day,
//! and cron's "either day field" rule becomes two expressions. Intervals
//! are rendered in UTC.
//!
//! No unit sets `BATON_STATE_DIR`: an environment value beats the
//! configuration's `state_dir`, so a pinned one would split the ledger in
//! two at the next edit of the file. The daemon's unit reloads with
//! `SIGHUP` (`ExecReload=`).
//!
//! Each directive is escaped by its own rules: a command line
//! (`ExecStart=`) doubles `%` (else a specifier), and `$` (else a
//! variable) in its arguments but not in the executable's name, where
//! systemd expands none and refuses quotes and backslashes;
//! `StateDirectory=` and `Description=` expand specifiers but not variables, so only `%` is doubled there. Words with
//! a space, a quote or a backslash are double-quoted, `"` and `\`
//! escaped. The job's name follows `--`, so a name that starts with `-` is
//! never read as an option.

use std::path::Path;
use std::time::Duration;

use baton_cron::Kind;

use super::translate::{self, is_full, list_with};
use super::{Artefact, Options, Refusal, RenderError, Target, path_text};
use crate::config::{Config, Job, When, Zone};

/// The daemon's unit.
pub const SERVICE: &str = "baton.service";

/// Added to the longest stop the daemon may take: `shutdown_grace`, then
/// the longest `kill_grace` of a step, then this margin.
const STOP_MARGIN: Duration = Duration::from_secs(30);

/// The units for `c`.
///
/// # Errors
///
/// With `per_job`, every job `OnCalendar=` cannot express faithfully; a
/// path that cannot be written.
pub fn render(c: &Config, opts: &Options) -> Result<Vec<Artefact>, RenderError> {
    let config = exec_word(&path_text(
        Target::Systemd,
        "the configuration",
        &opts.config,
    )?);
    let bin = path_text(Target::Systemd, "the binary", &opts.bin)?;
    if bin.contains(['\'', '"', '\\']) {
        return Err(RenderError::Path {
            target: Target::Systemd,
            what: "the binary",
            path: opts.bin.clone(),
            why: "systemd refuses an executable name that holds a quote or a backslash",
        });
    }
    let bin = exec_name(&bin);
    let state_path = opts.state_dir(c);
    path_text(Target::Systemd, "the state directory", &state_path)?;
    if !opts.per_job {
        return Ok(vec![daemon(c, opts, &bin, &config, &state_path)]);
    }
    let entries = super::per_job(c, Target::Systemd, |job| {
        on_calendar(&job.when.value, &job.timezone.value, opts).map_err(|why| Refusal {
            job: job.name.clone(),
            target: Target::Systemd,
            why,
        })
    })?;
    let shown_config = specifiers(&opts.config.display().to_string());
    let mut out = Vec::new();
    for (name, calendars) in entries {
        let job = &c.jobs[&name];
        out.push(Artefact {
            name: format!("baton-{name}.service"),
            text: format!(
                "# Rendered by `baton render systemd --per-job`: started by baton-{name}.timer.\n\
                 [Unit]\n\
                 Description=baton: job {name} of {shown_config}, when due\n\
                 Wants=network-online.target\n\
                 After=network-online.target\n\
                 \n\
                 [Service]\n\
                 Type=oneshot\n\
                 ExecStart={bin} tick --config {config} -- {name}\n\
                 # A run lasts as long as its steps allow ([scheduler] timeout, max_runtime).\n\
                 TimeoutStartSec=infinity\n"
            ),
        });
        let mut timer = format!(
            "# Rendered by `baton render systemd --per-job`: {} in {}.\n\
             [Unit]\n\
             Description=baton: the schedule of job {name} of {shown_config}\n\
             \n\
             [Timer]\n",
            translate::shown(&job.when.value),
            job.timezone.value.name,
        );
        for spec in calendars {
            timer.push_str(&format!("OnCalendar={spec}\n"));
        }
        timer.push_str(&format!(
            "Persistent=true\n\
             AccuracySec=1s\n\
             Unit=baton-{name}.service\n\
             \n\
             [Install]\n\
             WantedBy=timers.target\n"
        ));
        out.push(Artefact {
            name: format!("baton-{name}.timer"),
            text: timer,
        });
    }
    Ok(out)
}

/// The `baton daemon` service.
fn daemon(c: &Config, opts: &Options, bin: &str, config: &str, state: &Path) -> Artefact {
    let grace = c.daemon.shutdown_grace.value;
    let kill_grace = c
        .jobs
        .values()
        .flat_map(Job::all_steps)
        .map(|s| s.kill_grace.value)
        .chain(std::iter::once(c.settings.policy.kill_grace.value))
        .max()
        .unwrap_or_default();
    let stop = (grace + kill_grace + STOP_MARGIN).as_secs();
    let state_directory = match state.strip_prefix("/var/lib") {
        Ok(rest) if !rest.as_os_str().is_empty() => format!(
            "StateDirectory={}\nStateDirectoryMode=0700\n",
            setting_word(&rest.display().to_string())
        ),
        _ => String::new(),
    };
    Artefact {
        name: SERVICE.into(),
        text: format!(
            "# Rendered by `baton render systemd`: one daemon decides in each job's own zone\n\
             # what is due, catches up after downtime and deduplicates.\n\
             [Unit]\n\
             Description=baton: the scheduler of {}\n\
             Wants=network-online.target\n\
             After=network-online.target\n\
             \n\
             [Service]\n\
             Type=notify\n\
             NotifyAccess=main\n\
             ExecStart={bin} daemon --config {config}\n\
             # SIGHUP reads the configuration again; an invalid one is refused and the\n\
             # one in force stays (`baton daemon`'s reload).\n\
             ExecReload=/bin/kill -HUP $MAINPID\n\
             {state_directory}\
             Restart=on-failure\n\
             RestartSec=5s\n\
             WatchdogSec=60s\n\
             # SIGTERM to the daemon only: it lets runs finish for shutdown_grace ({}s),\n\
             # then stops them (kill_grace up to {}s); systemd waits longer than both.\n\
             KillMode=mixed\n\
             TimeoutStopSec={stop}s\n\
             \n\
             [Install]\n\
             WantedBy=multi-user.target\n",
            specifiers(&opts.config.display().to_string()),
            grace.as_secs(),
            kill_grace.as_secs(),
        ),
    }
}

/// `when` as `OnCalendar=` expressions (their union), or why not.
///
/// # Errors
///
/// Why `OnCalendar=` cannot express it faithfully.
pub fn on_calendar(when: &When, zone: &Zone, opts: &Options) -> Result<Vec<String>, String> {
    let s = &when.schedule;
    if let Kind::Every(p) = s.kind() {
        return every(when, p.as_secs());
    }
    let Some(f) = s.fields() else {
        return Err(format!(
            "{} is neither cron nor an interval",
            translate::shown(when)
        ));
    };
    super::dst::check(super::dst::Rules::Systemd, when, f, zone, opts.now)?;
    let num = |set: &baton_cron::FieldSet, lo: u8, hi: u8| {
        if is_full(set, lo, hi) {
            "*".to_owned()
        } else {
            let v: Vec<u8> = set.values().collect();
            list_with(&v, "..", |x| format!("{x:02}"))
        }
    };
    let second = f
        .second()
        .map_or_else(|| "00".to_owned(), |s| num(s, 0, 59));
    let time = format!(
        "{}:{}:{second}",
        num(f.hour(), 0, 23),
        num(f.minute(), 0, 59)
    );
    let month = num(f.month(), 1, 12);
    let dom_full = is_full(f.day_of_month(), 1, 31);
    let dow_full = is_full(f.day_of_week(), 0, 6);
    let dom = num(f.day_of_month(), 1, 31);
    let z = &zone.name;
    Ok(if f.days_match_either() && (dom_full || dow_full) {
        // Either day field may match, and one allows every day.
        vec![format!("*-{month}-* {time} {z}")]
    } else if f.days_match_either() {
        // Either day field may match (Vixie cron), and systemd's weekday
        // and day both must: two expressions, whose union fires.
        vec![
            format!("{} *-{month}-* {time} {z}", weekdays(f)),
            format!("*-{month}-{dom} {time} {z}"),
        ]
    } else if dow_full {
        vec![format!("*-{month}-{dom} {time} {z}")]
    } else {
        vec![format!("{} *-{month}-{dom} {time} {z}", weekdays(f))]
    })
}

/// The day-of-week field as systemd writes it. systemd's week starts on
/// Monday, and it refuses a range that runs past Sunday (`Sun..Tue`,
/// `Sat..Mon`), so the days are listed from Monday: `Mon,Tue,Sun`,
/// `Fri..Sun`.
fn weekdays(f: &baton_cron::Fields) -> String {
    // Cron's 0 (Sunday) to 6 as systemd's 0 (Monday) to 6 (Sunday).
    let mut v: Vec<u8> = f.day_of_week().values().map(|d| (d + 6) % 7).collect();
    v.sort_unstable();
    list_with(&v, "..", |d| DAYS[usize::from(d)].to_owned())
}

/// systemd's weekdays, from Monday.
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// An interval of `secs` as UTC expressions.
fn every(when: &When, secs: u64) -> Result<Vec<String>, String> {
    if secs < 60 {
        if 60 % secs != 0 {
            return Err(format!(
                "{} does not divide a minute, so no calendar expression repeats it",
                translate::shown(when)
            ));
        }
        return Ok(vec![if secs == 1 {
            "*-*-* *:*:* UTC".to_owned()
        } else {
            format!("*-*-* *:*:00/{secs} UTC")
        }]);
    }
    if !secs.is_multiple_of(60) {
        return Err(format!(
            "{} is not a whole number of minutes, so its seconds change from one \
             occurrence to the next",
            translate::shown(when)
        ));
    }
    if 86_400 % secs != 0 {
        return Err(translate::not_daily(when));
    }
    // A repetition (`/N`) must leave room for a second value in its field:
    // systemd refuses `00/60` minutes and `00/24` hours.
    let minutes = secs / 60;
    if minutes < 60 && 60 % minutes == 0 {
        return Ok(vec![format!("*-*-* *:00/{minutes}:00 UTC")]);
    }
    if minutes == 60 {
        return Ok(vec!["*-*-* *:00:00 UTC".to_owned()]);
    }
    if minutes == 1440 {
        return Ok(vec!["*-*-* 00:00:00 UTC".to_owned()]);
    }
    if minutes.is_multiple_of(60) {
        return Ok(vec![format!("*-*-* 00/{}:00:00 UTC", minutes / 60)]);
    }
    Ok(translate::day_times(minutes)
        .into_iter()
        .map(|(hours, mins)| {
            format!(
                "*-*-* {}:{}:00 UTC",
                list_with(&hours, "..", |x| format!("{x:02}")),
                list_with(&mins, "..", |x| format!("{x:02}"))
            )
        })
        .collect())
}

/// `s` as the executable of a command line (`ExecStart=`): `%` doubled
/// and quoted when needed, `$` kept (systemd expands no variable there).
fn exec_name(s: &str) -> String {
    quoted(&specifiers(s))
}

/// `s` as an argument of a command line (`ExecStart=`): `%` and `$`
/// doubled, quoted when needed ([`quoted`]).
fn exec_word(s: &str) -> String {
    quoted(&specifiers(s).replace('$', "$$"))
}

/// `s` as one word of a setting that expands specifiers but not variables
/// (`StateDirectory=`): `%` doubled, quoted when needed.
fn setting_word(s: &str) -> String {
    quoted(&specifiers(s))
}

/// `s` with `%` doubled, so that systemd reads no specifier in it.
fn specifiers(s: &str) -> String {
    s.replace('%', "%%")
}

/// `s` in double quotes (`"` and `\` escaped) when it holds a space, a
/// quote, a backslash or a `;`; else unchanged.
fn quoted(s: &str) -> String {
    if s.contains([' ', '\t', '"', '\'', '\\', ';']) {
        format!("\"{}\"", s.replace('\\', r"\\").replace('"', "\\\""))
    } else {
        s.to_owned()
    }
}
