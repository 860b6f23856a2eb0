//! `baton calendar`: a thin adapter from parsed arguments to
//! `baton_sched::views::calendar`, and from its answer to output and an exit code.
//!
//! The arguments first become a [`Request`]: the schedule (typed, or a
//! job's from `baton.toml`), its zone, the instant to start from and how
//! many occurrences to list. Every refusal happens there, as one line on
//! stderr naming the bad part, and exit 2. The clock is read once, through
//! the clock chokepoint, and only when `--from` is not given. Nothing is
//! created or changed: this command reads `baton.toml` (for `--job`) and the
//! time zone database, and prints.

use std::path::Path;

use baton_lease::{Clock, SystemClock};
use baton_sched::config::Zone;
use baton_sched::views::calendar::{self, Calendar};
use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::cli::{CalendarArgs, ConfigFile};
use crate::exit::Exit;

/// A validated `baton calendar`: everything needed to list occurrences.
struct Request {
    /// The schedule as written.
    expression: String,
    schedule: baton_cron::Schedule,
    zone: Zone,
    /// For `--job`: its name, its `jitter` and its offset.
    job: Option<(String, std::time::Duration, std::time::Duration)>,
    from: Timestamp,
    count: usize,
    json: bool,
}

/// `baton calendar`.
pub fn run(state: Option<&Path>, a: &CalendarArgs) -> Exit {
    let r = match Request::new(state, a) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let mut c = Calendar::new(&r.expression, r.schedule, r.zone, r.from, r.count);
    if let Some((job, window, offset)) = &r.job {
        c = c.for_job(job).jittered(*window, *offset);
    }
    if r.json {
        match serde_json::to_string_pretty(&calendar::to_json(&c)) {
            Ok(j) => outln!("{j}"),
            Err(e) => {
                say!("baton calendar: failed to encode JSON: {e}");
                return Exit::Usage;
            }
        }
    } else {
        out!("{}", calendar::render(&c));
    }
    Exit::Ok
}

impl Request {
    /// Validates the arguments; on a refusal, says why and gives exit 2.
    fn new(state: Option<&Path>, a: &CalendarArgs) -> Result<Request, Exit> {
        let refuse = |message: String| {
            say!("baton calendar: {message}");
            Exit::Usage
        };
        let (expression, schedule, zone, job) = match &a.job {
            Some(name) => {
                let file = ConfigFile {
                    config: a.config.clone(),
                };
                let config = crate::sched_cmd::load(state, &file)?;
                let job = crate::sched_cmd::known_job(&config, "calendar", name)?;
                let when = &job.when.value;
                let expression = match when.key {
                    "every" => format!("every {}", when.text),
                    _ => when.text.clone(),
                };
                (
                    expression,
                    when.schedule.clone(),
                    job.timezone.value.clone(),
                    Some((
                        name.clone(),
                        job.policy.jitter.value.unwrap_or_default(),
                        job.start_offset(),
                    )),
                )
            }
            None => {
                let expression = a.expr.join(" ");
                let schedule =
                    calendar::parse_expression(&expression).map_err(|e| refuse(e.to_string()))?;
                let zone = match &a.tz {
                    Some(name) => named_zone(name).map_err(refuse)?,
                    None => system_zone(),
                };
                (expression, schedule, zone, None)
            }
        };
        let from = match &a.from {
            Some(text) => parse_from(text).map_err(refuse)?,
            None => SystemClock.wall(),
        };
        Ok(Request {
            expression,
            schedule,
            zone,
            job,
            from,
            // OK to widen: at most MAX_COUNT, which clap enforces.
            count: a.count as usize,
            json: a.json,
        })
    }
}

/// The zone named on the command line, by its IANA name.
fn named_zone(name: &str) -> Result<Zone, String> {
    match TimeZone::get(name) {
        Ok(tz) => Ok(Zone {
            name: tz.iana_name().unwrap_or(name).to_owned(),
            tz,
        }),
        Err(_) => Err(format!(
            "unknown time zone {name:?}: use an IANA name such as Europe/Berlin, \
             America/New_York or UTC"
        )),
    }
}

/// The system's zone (`$TZ`, else `/etc/localtime`), as `baton.toml`'s
/// default; UTC, said on stderr, when it cannot be found.
fn system_zone() -> Zone {
    match TimeZone::try_system() {
        Ok(tz) => Zone {
            name: tz.iana_name().map_or_else(
                baton_sched::config::keys::nameless_system_zone,
                ToOwned::to_owned,
            ),
            tz,
        },
        Err(e) => {
            say!("baton calendar: the system's time zone is unknown ({e}); showing UTC");
            Zone {
                name: "UTC".to_owned(),
                tz: TimeZone::UTC,
            }
        }
    }
}

/// `--from`: an RFC 3339 instant, with its offset or `Z` (an offset within
/// ±23:59, without seconds).
fn parse_from(text: &str) -> Result<Timestamp, String> {
    baton_sched::times::parse_rfc3339(text).map_err(|e| {
        format!(
            "--from {e}: give a time such as 2026-03-08T00:00:00-05:00 or \
             2026-03-08T05:00:00Z"
        )
    })
}
