//! `baton render`: the configuration as the artefacts that start baton on a
//! host: a crontab, systemd units, GitHub Actions workflows, and a reference
//! of the environment variables baton reads.
//!
//! Every format is a pure function from a [`Config`] and [`Options`] to
//! [`Artefact`]s (a file name and its text), in its own module: [`cron`],
//! [`systemd`], [`github`] and [`mod@env`]. Nothing here reads the clock, the
//! environment or a file, or writes anything: the caller passes the instant
//! and the variables it read, and writes the artefacts in one place (the
//! `baton render` command). The same input gives the same bytes: no
//! timestamps, jobs in name order.
//!
//! ## Two forms
//!
//! The **default form** is one driver: a crontab line running `baton tick`
//! every minute, or a `baton daemon` service. baton then decides in each
//! job's own zone what is due, catches up and deduplicates, so this form is
//! right for every schedule and zone.
//!
//! The **per-job form** (`--per-job`) gives each enabled job its own entry
//! that runs `baton tick --config FILE -- JOB` at the job's schedule, translated to the
//! target ([`translate`]). Where a target cannot express a schedule
//! faithfully, the job is refused with the reason ([`Refusal`]) and nothing
//! is rendered: an entry that fires at the wrong time is never emitted.
//! Disabled jobs get no entry (their `tick` would do nothing).
//!
//! ## Paths
//!
//! The artefacts name absolute paths: the binary ([`Options::bin`]) and
//! the configuration file as the host will see it ([`Options::config`];
//! for GitHub, its path inside the repository, under the checkout).
//! Paths the configuration resolved beside its own file (a relative
//! `state_dir`) are rendered beside [`Options::config`], so a configuration
//! rendered from a checkout for `/etc/baton/baton.toml` names
//! `/etc/baton/...`, never the checkout.

mod changes;
pub mod cron;
mod dst;
pub mod env;
pub mod github;
pub mod jitter;
pub mod systemd;
pub mod translate;
mod utc;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use jiff::Timestamp;

use crate::config::{Config, Job, Source};

/// What `baton render` renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A crontab.
    Cron,
    /// systemd units.
    Systemd,
    /// GitHub Actions workflows.
    Github,
    /// The environment variables baton reads.
    Env,
}

impl Target {
    /// The word on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Cron => "cron",
            Target::Systemd => "systemd",
            Target::Github => "github",
            Target::Env => "env",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything a renderer needs besides the configuration.
#[derive(Debug, Clone)]
pub struct Options {
    /// The baton binary, absolute.
    pub bin: PathBuf,
    /// The configuration file as the artefacts name it: absolute, except
    /// for [`Target::Github`], where it is the path inside the repository,
    /// relative to the checkout.
    pub config: PathBuf,
    /// How `config` was chosen (`--config`, `BATON_CONFIG` or the default),
    /// for the env reference.
    pub config_source: Source,
    /// One entry per job instead of one driver.
    pub per_job: bool,
    /// The host's zone (an IANA name): cron lines of a job in another zone
    /// get `CRON_TZ=`.
    pub host_zone: String,
    /// `PATH` for the crontab.
    pub path: String,
    /// The instant the zones are judged from: which clock changes lie
    /// ahead (the next twelve). Only refusals, and whether GitHub gets UTC
    /// lines or the zone's `timezone`, depend on it.
    pub now: Timestamp,
    /// The environment variables baton reads that are set, with their
    /// values (for the env reference).
    pub environment: BTreeMap<String, String>,
}

impl Options {
    /// `p` as the artefacts name it: beside [`Options::config`] when it lies
    /// beside the configuration file `c` was read from.
    pub fn host_path(&self, c: &Config, p: &Path) -> PathBuf {
        let (Some(from), Some(to)) = (c.path.parent(), self.config.parent()) else {
            return p.to_owned();
        };
        match p.strip_prefix(from) {
            Ok(rest) if rest.as_os_str().is_empty() => to.to_owned(),
            Ok(rest) => to.join(rest),
            Err(_) => p.to_owned(),
        }
    }

    /// The state directory as the artefacts name it.
    pub fn state_dir(&self, c: &Config) -> PathBuf {
        self.host_path(c, &c.settings.state_dir.value)
    }
}

/// One file of a render: its name (no directory) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artefact {
    /// The file name, such as `baton.service`.
    pub name: String,
    /// The whole text, ending with a newline.
    pub text: String,
}

/// Why a job cannot have a per-job entry in a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The job.
    pub job: String,
    /// The target.
    pub target: Target,
    /// Why, in words, naming the schedule and zone.
    pub why: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let instead = match self.target {
            Target::Github => {
                "run baton on a host instead: `baton render cron` or `baton render systemd` \
                 (one driver that decides in each job's zone what is due)"
            }
            _ => "the default form (without --per-job) runs it at the right time",
        };
        write!(
            f,
            "job {:?} cannot be rendered for {} --per-job: {}; {instead}",
            self.job, self.target, self.why
        )
    }
}

/// Why nothing was rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// One or more jobs cannot be expressed by the target; every one is
    /// listed, and nothing is rendered.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Refused(Vec<Refusal>),
    /// A path cannot be written into the target's syntax.
    #[error("cannot render {what} {path:?} for {target}: {why}")]
    Path {
        /// The target.
        target: Target,
        /// Which path (`the binary`).
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        why: &'static str,
    },
}

/// Renders `c` for `target`.
///
/// # Errors
///
/// [`RenderError::Refused`] naming every job the target cannot express (with
/// `per_job`, or always for [`Target::Github`]); [`RenderError::Path`] for
/// a path that cannot be written in the target's syntax.
///
/// # Example
///
/// ```
/// use baton_sched::config::{self, Overrides, Source};
/// use baton_sched::render::{self, Options, Target};
///
/// let path = std::path::Path::new("/etc/baton/baton.toml");
/// let text = "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"UTC\"\n\
///             [jobs.nightly]\nschedule = \"30 2 * * *\"\nrun = \"true\"\n";
/// let c = config::parse(text, path, &Overrides::default())?;
/// let opts = Options {
///     bin: "/usr/local/bin/baton".into(),
///     config: path.to_owned(),
///     config_source: Source::Flag("--config".into()),
///     per_job: false,
///     host_zone: "UTC".into(),
///     path: "/usr/local/bin:/usr/bin:/bin".into(),
///     now: "2026-01-01T00:00:00Z".parse()?,
///     environment: Default::default(),
/// };
/// let crontab = render::render(Target::Cron, &c, &opts)?;
/// assert!(crontab[0].text.contains("* * * * * /usr/local/bin/baton tick"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn render(target: Target, c: &Config, opts: &Options) -> Result<Vec<Artefact>, RenderError> {
    match target {
        Target::Cron => cron::render(c, opts),
        Target::Systemd => systemd::render(c, opts),
        Target::Github => github::render(c, opts),
        Target::Env => Ok(vec![env::render(c, opts)]),
    }
}

/// Whether a file named `name` is one `target` renders, in either form:
/// `baton.cron`; `baton.service`, `baton-*.service` and `baton-*.timer`;
/// `baton-*.yml`; `baton.env`. The caller removes such files that a render
/// into the same directory did not write, and never any other.
///
/// # Example
///
/// ```
/// use baton_sched::render::{Target, owns};
///
/// assert!(owns(Target::Systemd, "baton-old.timer"));
/// assert!(!owns(Target::Systemd, "baton.cron"));
/// assert!(!owns(Target::Github, "ci.yml"));
/// ```
pub fn owns(target: Target, name: &str) -> bool {
    let per_job = |ext: &str| {
        name.strip_prefix("baton-")
            .and_then(|rest| rest.strip_suffix(ext))
            .is_some_and(|job| !job.is_empty())
    };
    match target {
        Target::Cron => name == cron::FILE,
        Target::Systemd => name == systemd::SERVICE || per_job(".service") || per_job(".timer"),
        Target::Github => per_job(".yml"),
        Target::Env => name == env::FILE,
    }
}

/// The jobs that get a per-job entry: the enabled ones, by name.
pub(crate) fn scheduled_jobs(c: &Config) -> impl Iterator<Item = &Job> {
    c.jobs.values().map(Box::as_ref).filter(|j| j.enabled.value)
}

/// The disabled jobs, by name.
pub(crate) fn disabled_jobs(c: &Config) -> impl Iterator<Item = &Job> {
    c.jobs
        .values()
        .map(Box::as_ref)
        .filter(|j| !j.enabled.value)
}

/// Each job's entries, or every refusal.
///
/// A job whose zone is not written in the configuration (this machine's
/// zone, or a variable of this shell) is refused: a per-job entry fires at
/// instants computed in that zone, while the tick it starts on the target
/// decides in the target's own, and the two may differ. A job with jitter
/// is given to `entry` with its schedule moved to its occurrences' starts,
/// or refused ([`jitter::entry_job`]); `now` is where that proof starts.
pub(crate) fn per_job<T>(
    c: &Config,
    target: Target,
    now: jiff::Timestamp,
    mut entry: impl FnMut(&Job) -> Result<T, Refusal>,
) -> Result<Vec<(String, T)>, RenderError> {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    for job in scheduled_jobs(c) {
        if let Some(from) = implicit_zone(job) {
            refused.push(Refusal {
                job: job.name.clone(),
                target,
                why: format!(
                    "its time zone ({}) is {from}, not written in the configuration, and the \
                     machine that runs the entry may be in another; set `timezone` under \
                     [scheduler] or the job",
                    job.timezone.value.name
                ),
            });
            continue;
        }
        // A job with jitter fires at its occurrences' starts.
        let job = match jitter::entry_job(job, now) {
            Ok(job) => job,
            Err(why) => {
                refused.push(Refusal {
                    job: job.name.clone(),
                    target,
                    why: why.to_string(),
                });
                continue;
            }
        };
        match entry(&job) {
            Ok(t) => out.push((job.name.clone(), t)),
            Err(r) => refused.push(r),
        }
    }
    if refused.is_empty() {
        Ok(out)
    } else {
        Err(RenderError::Refused(refused))
    }
}

/// Where a job's zone came from when the configuration does not say it.
fn implicit_zone(job: &Job) -> Option<String> {
    match &job.timezone.source {
        crate::config::Source::File { .. } => None,
        crate::config::Source::Default => Some("this machine's zone".into()),
        other => Some(format!("taken from {other}")),
    }
}

/// `s` as one word for `/bin/sh`: unchanged when it needs no quoting, else
/// in single quotes.
pub(crate) fn sh_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:=@+,-".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The host path `p` as text, refused when it is not valid UTF-8 or holds a
/// line break (neither can be written into a unit, a crontab or YAML), or,
/// for a workflow, GitHub's expression syntax `${{`.
pub(crate) fn path_text(
    target: Target,
    what: &'static str,
    p: &Path,
) -> Result<String, RenderError> {
    let refuse = |why| RenderError::Path {
        target,
        what,
        path: p.to_owned(),
        why,
    };
    let s = p.to_str().ok_or_else(|| refuse("it is not valid UTF-8"))?;
    if s.contains(['\n', '\r']) {
        return Err(refuse("it holds a line break"));
    }
    if target == Target::Github && s.contains("${{") {
        return Err(refuse(
            "it holds `${{`, which GitHub reads as an expression before the shell sees the \
             path (a secret could land on the command line): rename the path",
        ));
    }
    Ok(s.to_owned())
}

#[cfg(test)]
mod tests;
