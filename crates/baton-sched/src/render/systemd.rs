//! systemd units: by default one `baton daemon` service (`Type=notify`,
//! restarted on failure, stopped with time to let runs finish); with
//! `--per-job`, a oneshot service running `baton tick JOB` and a timer per
//! enabled job, at the job's schedule as `OnCalendar=` in its zone.
//!
//! `OnCalendar=` is written in the job's zone where systemd's calendar
//! rules and baton's agree, and in UTC where they part (at a wall-clock time
//! a clock change skips or repeats on a day the schedule fires, when
//! systemd would run it at another instant: `super::dst`) but some UTC
//! lines fire at baton's instants all year (`super::utc`); where neither
//! does, the job is refused, naming the dates. Weekdays are written from Monday, systemd's first day,
//! and cron's "either day field" rule becomes two expressions. Intervals
//! are rendered in UTC.
//!
//! No unit sets `BATON_STATE_DIR`: an environment value beats the
//! configuration's `state_dir`, so a pinned one would split the ledger in
//! two at the next edit of the file; for a file without one, the daemon's
//! unit moves its user's default to the renderer's (`XDG_STATE_HOME`),
//! which a later `state_dir` still beats. The daemon's unit reloads with
//! `SIGHUP` (`ExecReload=`).
//!
//! The daemon's unit runs as the system user `baton` ([`USER`]) in a
//! sandbox (`SANDBOX`): the file system read-only but for the state
//! directory (`StateDirectory=` under `/var/lib`, else `ReadWritePaths=`),
//! the socket's directory when it lies elsewhere (`RuntimeDirectory=`
//! under `/run`), `jobs.d/` beside the configuration (the API's job
//! changes) and a private `/tmp`; no privilege to gain, no device, no
//! other user's process or home; only Unix, IPv4 and IPv6 sockets; the
//! user and PID namespaces the runner contains each step in. With
//! `socket_group`, the user is a member of that group
//! (`SupplementaryGroups=`), so it may give its socket to it. The Debian
//! package ships this unit as rendered for its own configuration.
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

use baton_cron::{Fields, Kind};

use super::translate::{self, Untranslatable, is_full, list_with};
use super::{Artefact, Options, Refusal, RenderError, Target, path_text};
use crate::config::{Config, When, Zone};

/// The daemon's unit.
pub const SERVICE: &str = "baton.service";

/// The user (and group) the daemon's unit runs as: the system user the
/// Debian package makes (`sysusers.d`), who owns the state directory.
pub const USER: &str = "baton";

/// The daemon's sandbox: what its runs' jobs may not do. Each line is
/// one that baton's own work allows (the README's "What the unit allows
/// jobs" says what each costs a job, and how to widen it with a drop-in):
/// no capability and no way to gain one, so a job cannot use sudo or a
/// set-user-id program; the file system read-only (writable: the state
/// directory, a private `/tmp`); no home directory; no device; no other
/// user's process in `/proc` (`/proc/sys`, which holds the boot id a
/// lease records, stays readable); only Unix, IPv4 and IPv6 sockets; only
/// the user and PID namespaces the runner contains each step in; the
/// system calls of an ordinary service. Not set, as jobs need them:
/// `MemoryDenyWriteExecute=` (a JIT: Java, Node.js, PCRE),
/// `PrivateUsers=` (baton trusts files owned by root or itself, which a
/// user namespace shows as nobody's), `PrivateNetwork=`, `ProcSubset=`.
const SANDBOX: &str = "\
UMask=0077
NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
PrivateIPC=yes
PrivateMounts=yes
ProtectClock=yes
ProtectHostname=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectProc=invisible
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
RestrictNamespaces=user pid
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
RemoveIPC=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM
";

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
    let state_text = path_text(Target::Systemd, "the state directory", &state_path)?;
    if state_path
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(RenderError::Path {
            target: Target::Systemd,
            what: "the state directory",
            path: state_path,
            why: "systemd ignores a StateDirectory= or ReadWritePaths= that is not normalized \
                  (`..`), and the daemon would have no directory it may write; write \
                  state_dir without `..`",
        });
    }
    if !opts.per_job && state_text.starts_with("/var/lib/") && state_text.contains('"') {
        return Err(RenderError::Path {
            target: Target::Systemd,
            what: "the state directory",
            path: state_path,
            why: "systemd drops a StateDirectory= whose path holds a double quote, and the \
                  daemon would have no directory it may write",
        });
    }
    if !opts.per_job {
        return Ok(vec![daemon(c, opts, &bin, &config, &state_path)]);
    }
    let entries = super::per_job(c, Target::Systemd, opts.now, |job| {
        on_calendar(&job.when.value, &job.timezone.value, opts).map_err(|why| Refusal {
            job: job.name.clone(),
            target: Target::Systemd,
            why: why.to_string(),
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
        let zone = &job.timezone.value.name;
        let in_utc = if !matches!(job.when.value.schedule.kind(), Kind::Every(_))
            && zone != "UTC"
            && calendars.iter().all(|c| c.ends_with(" UTC"))
        {
            format!("# In UTC: at the schedule's instants in {zone}, its clock changes included.\n")
        } else {
            String::new()
        };
        let offset = job.start_offset();
        let jitter = if offset.is_zero() {
            String::new()
        } else {
            format!(
                "# With jitter {}: each occurrence starts {} after it, and so does the timer.\n",
                crate::units::show_duration(job.policy.jitter.value.unwrap_or_default()),
                crate::jitter::show(offset)
            )
        };
        let mut timer = format!(
            "# Rendered by `baton render systemd --per-job`: {} in {zone}.\n\
             {in_utc}{jitter}\
             [Unit]\n\
             Description=baton: the schedule of job {name} of {shown_config}\n\
             \n\
             [Timer]\n",
            translate::shown(&job.when.value),
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
        .flat_map(|j| j.all_steps())
        .map(|s| s.kill_grace.value)
        .chain(std::iter::once(c.settings.policy.kill_grace.value))
        .max()
        .unwrap_or_default();
    let stop = (grace + kill_grace + STOP_MARGIN).as_secs();
    let socket = opts.host_path(c, &c.daemon_socket());
    // With `socket_group` and the socket in the state directory, the
    // group must pass through that directory to reach it (search, not
    // read): everything else in it is its owner's alone.
    let state_mode = if c.daemon.socket_group.value.is_some()
        && socket.parent().is_some_and(|d| d.starts_with(state))
    {
        "0711"
    } else {
        "0700"
    };
    let mut writable = match state.strip_prefix("/var/lib") {
        Ok(rest) if !rest.as_os_str().is_empty() => format!(
            "StateDirectory={}\nStateDirectoryMode={state_mode}\n",
            setting_word(&rest.display().to_string())
        ),
        _ => format!(
            "ReadWritePaths={}\n",
            setting_word(&format!("-{}", state.display()))
        ),
    };
    match socket.parent() {
        Some(dir) if dir.starts_with(state) => {}
        Some(dir) => match dir.strip_prefix("/run") {
            Ok(rest) if !rest.as_os_str().is_empty() => writable.push_str(&format!(
                "RuntimeDirectory={}\nRuntimeDirectoryMode=0755\n",
                setting_word(&rest.display().to_string())
            )),
            _ => writable.push_str(&format!(
                "ReadWritePaths={}\n",
                setting_word(&format!("-{}", dir.display()))
            )),
        },
        None => {}
    }
    // `PUT /v1/jobs/JOB` writes `jobs.d/` beside the configuration.
    if let Some(dir) = opts.config.parent() {
        writable.push_str(&format!(
            "ReadWritePaths={}\n",
            setting_word(&format!(
                "-{}",
                dir.join(crate::config::dropin::DIR_NAME).display()
            ))
        ));
    }
    let default_dir = default_dir_line(c, state);
    let groups = match &c.daemon.socket_group.value {
        Some(g) => format!(
            "# [daemon] socket_group: the daemon gives its socket to this group.\n\
             SupplementaryGroups={}\n",
            setting_word(g)
        ),
        None => String::new(),
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
             Restart=on-failure\n\
             RestartSec=5s\n\
             WatchdogSec=60s\n\
             # SIGTERM to the daemon only: it lets runs finish for shutdown_grace ({}s),\n\
             # then stops them (kill_grace up to {}s); systemd waits longer than both.\n\
             KillMode=mixed\n\
             TimeoutStopSec={stop}s\n\
             # The daemon, its runs and their jobs run as {USER}, who owns the state\n\
             # directory; nothing baton does needs root.\n\
             User={USER}\n\
             Group={USER}\n\
             {groups}\
             {default_dir}\
             {writable}\
             # The sandbox: jobs may read the file system, write the state directory\n\
             # and a private /tmp, use the network and start processes; nothing more.\n\
             # Widen it with a drop-in (`systemctl edit baton`): see baton's README.\n\
             {SANDBOX}\
             \n\
             [Install]\n\
             WantedBy=multi-user.target\n",
            specifiers(&opts.config.display().to_string()),
            grace.as_secs(),
            kill_grace.as_secs(),
        ),
    }
}

/// The `Environment=` line that gives the unit's user the state directory
/// `state` as its default, when the configuration names none: a default is
/// each user's (root's `/var/lib/baton`, another's in its home), and the
/// daemon runs as [`USER`], so without it the daemon would keep a second
/// ledger and lock directory beside the one root's commands use on the
/// same file. `XDG_STATE_HOME` moves only the default, so a `state_dir`
/// written in the file later still decides for the daemon as for every
/// command (a pinned `BATON_STATE_DIR` would beat it). Nothing when the
/// file names the directory.
fn default_dir_line(c: &Config, state: &Path) -> String {
    if matches!(
        c.settings.state_dir.source,
        crate::config::Source::File { .. }
    ) {
        return String::new();
    }
    match (state.file_name(), state.parent()) {
        (Some(name), Some(home)) if name == "baton" && home.parent().is_some() => format!(
            "# The configuration names no state_dir, and each user's default differs:\n\
             # XDG_STATE_HOME gives the daemon, as {USER}, the one this was rendered\n\
             # with ({}). It moves only the default: a state_dir set in the file wins.\n\
             Environment={}\n",
            specifiers(&state.display().to_string()),
            setting_word(&format!("XDG_STATE_HOME={}", home.display()))
        ),
        _ => String::new(),
    }
}

/// `when` as `OnCalendar=` expressions (their union), or why not: in the
/// job's zone where systemd fires them there as baton does
/// (`super::dst`), else in UTC where some UTC lines fire at baton's
/// instants all year (`super::utc`: `*/15 * * * *` in New York, whose
/// repeated hour baton runs twice and a UTC calendar fires through).
///
/// # Errors
///
/// Why `OnCalendar=` cannot express it faithfully: in the zone, the change
/// where systemd would run it at another instant; in UTC, the date the
/// first candidate would.
pub fn on_calendar(
    when: &When,
    zone: &Zone,
    opts: &Options,
) -> Result<Vec<String>, Untranslatable> {
    let s = &when.schedule;
    if let Kind::Every(p) = s.kind() {
        return every(when, p.as_secs());
    }
    let Some(f) = s.fields() else {
        return Err(Untranslatable::NotCron(translate::shown(when)));
    };
    let zone_why = match super::dst::check(super::dst::Rules::Systemd, when, f, zone, opts.now) {
        Ok(()) => return Ok(expressions(f, &zone.name)),
        Err(why) => why,
    };
    let utc_why = match in_utc(when, f, zone, opts) {
        Ok(specs) => return Ok(specs),
        Err(why) => why,
    };
    Err(Untranslatable::Neither {
        in_zone: Box::new(zone_why),
        utc: Box::new(utc_why),
    })
}

/// `f` (the fields of `when`, read in `zone`) as UTC expressions that fire
/// at baton's instants all year: the UTC cron lines of [`super::utc`],
/// with `f`'s seconds, which no whole-minute offset moves.
///
/// # Errors
///
/// Why none do, naming the date the first candidate would differ.
fn in_utc(
    when: &When,
    f: &Fields,
    zone: &Zone,
    opts: &Options,
) -> Result<Vec<String>, Untranslatable> {
    if f.second().is_some_and(|s| s.values().any(|v| v != 0)) {
        return Err(Untranslatable::UtcSeconds(translate::shown(when)));
    }
    let mut specs = Vec::new();
    for line in super::utc::lines(when, f, zone, opts.now)? {
        let line = line.to_string();
        let parsed = match baton_cron::Schedule::parse(&line) {
            Ok(parsed) => parsed,
            Err(source) => return Err(Untranslatable::Unreadable { line, source }),
        };
        let Some(utc) = parsed.fields() else {
            return Err(Untranslatable::NotCronLine(line));
        };
        specs.extend(expressions(utc, "UTC"));
    }
    Ok(specs)
}

/// `f` as `OnCalendar=` expressions in `zone` (an IANA name), their union
/// firing at its times: two where cron's "either day field" rule needs
/// them.
fn expressions(f: &Fields, zone: &str) -> Vec<String> {
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
    let z = zone;
    if f.days_match_either() && (dom_full || dow_full) {
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
    }
}

/// The day-of-week field as systemd writes it. systemd's week starts on
/// Monday, and it refuses a range that runs past Sunday (`Sun..Tue`,
/// `Sat..Mon`), so the days are listed from Monday: `Mon,Tue,Sun`,
/// `Fri..Sun`.
fn weekdays(f: &Fields) -> String {
    // Cron's 0 (Sunday) to 6 as systemd's 0 (Monday) to 6 (Sunday).
    let mut v: Vec<u8> = f.day_of_week().values().map(|d| (d + 6) % 7).collect();
    v.sort_unstable();
    list_with(&v, "..", |d| DAYS[usize::from(d)].to_owned())
}

/// systemd's weekdays, from Monday.
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// An interval of `secs` as UTC expressions.
fn every(when: &When, secs: u64) -> Result<Vec<String>, Untranslatable> {
    if secs < 60 {
        if 60 % secs != 0 {
            return Err(Untranslatable::NotMinutely(translate::shown(when)));
        }
        return Ok(vec![if secs == 1 {
            "*-*-* *:*:* UTC".to_owned()
        } else {
            format!("*-*-* *:*:00/{secs} UTC")
        }]);
    }
    if !secs.is_multiple_of(60) {
        return Err(Untranslatable::PartMinutes(translate::shown(when)));
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
