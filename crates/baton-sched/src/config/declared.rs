//! The jobs services declared in the ledger (`baton-embed`), read as jobs
//! of the configuration in use: each declaration's TOML is checked as a
//! `[jobs.NAME]` table of its own, with the same rules as `baton.toml`'s,
//! so `status`, `history`, `pause` and `resume` show and control a
//! service's jobs as they do the file's.
//!
//! This module only merges what it is given; it never opens a ledger, and
//! nothing here may hand a declared job to `tick`, `run`, `backfill` or the
//! daemon: the service that declared a job runs it, and those commands
//! keep to the jobs of the file ([`super::load`]).

use std::path::Path;

use baton_store::ledger::Declaration;

use super::{Config, Job, Overrides, Source};

/// `config` with the jobs of `declared` that it does not name itself
/// (the file's job of a name wins), each marked [`Source::Declared`]; and
/// what is wrong with each declaration that could not be read whole (shown
/// by its schedule and zone alone) or at all (left out).
pub fn merged(config: &Config, declared: &[Declaration]) -> (Config, Vec<String>) {
    let mut out = config.clone();
    let mut problems = Vec::new();
    for d in declared {
        if out.jobs.contains_key(&d.job) {
            continue;
        }
        match job_of(d) {
            Ok((job, partly)) => {
                if let Some(e) = partly {
                    problems.push(format!(
                        "job {:?} declared by {} is shown by its schedule and zone alone: {e}",
                        d.job, d.by
                    ));
                }
                out.jobs.insert(d.job.clone(), Box::new(job));
            }
            Err(e) => problems.push(format!(
                "job {:?} declared by {} cannot be read as a job of this baton: {e}",
                d.job, d.by
            )),
        }
    }
    (out, problems)
}

/// The job `d` declares. Its settings are read with the file's rules; a
/// declaration whose settings this baton does not take (a newer service's
/// key, a timing checked for another store) is read by its schedule and
/// zone alone, which is all that showing it needs.
fn job_of(d: &Declaration) -> Result<(Job, Option<super::ConfigError>), super::ConfigError> {
    let (job, partly) = match parse(d, &table(d, &d.config)) {
        Ok(job) => (job, None),
        Err(e) => {
            let when: String = d
                .config
                .lines()
                .filter(|l| l.starts_with("schedule ") || l.starts_with("timezone "))
                .map(|l| format!("{l}\n"))
                .collect();
            (parse(d, &table(d, &when)).map_err(|_| e.clone())?, Some(e))
        }
    };
    let job = Job {
        source: Source::Declared(d.by.clone()),
        ..job
    };
    Ok((job, partly))
}

/// `settings` as a configuration of the one job `d`, run by the service
/// (`run` is never run here: it only makes the table a job's).
fn table(d: &Declaration, settings: &str) -> String {
    let name = d.job.replace('\\', "\\\\").replace('"', "\\\"");
    format!("[jobs.\"{name}\"]\n{settings}run = \"true\"\n")
}

fn parse(d: &Declaration, text: &str) -> Result<Job, super::ConfigError> {
    let path = Path::new("/").join(format!("declared by {}", d.by));
    let mut c = super::parse(text, &path, &Overrides::default())?;
    c.jobs
        .remove(&d.job)
        .map(|j| *j)
        .ok_or_else(|| super::ConfigError::Invalid {
            at: path.display().to_string(),
            key: format!("jobs.{}", d.job),
            message: "the declaration names no such job".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declaration(job: &str, config: &str) -> Declaration {
        Declaration {
            job: job.into(),
            config: config.into(),
            by: "billing on host-a (pid 7)".into(),
            declared: "2026-12-01T00:00:00Z".parse().unwrap(),
        }
    }

    fn empty() -> Config {
        super::super::parse("", Path::new("/etc/baton.toml"), &Overrides::default()).unwrap()
    }

    #[test]
    fn a_declared_job_is_read_with_its_settings() {
        let d = declaration(
            "report",
            "schedule = \"*/5 * * * *\"\ntimezone = \"Europe/Berlin\"\nretries = 2\n",
        );
        let (c, problems) = merged(&empty(), &[d]);
        assert!(problems.is_empty(), "{problems:?}");
        let job = &c.jobs["report"];
        assert_eq!(job.policy.retries.value, 2);
        assert_eq!(job.timezone.value.name, "Europe/Berlin");
        assert_eq!(
            job.source,
            Source::Declared("billing on host-a (pid 7)".into())
        );
    }

    /// What `baton-embed` declares for a job of its own defaults but a
    /// 2 s lease: every key is read, none falls back.
    #[test]
    fn what_the_embedded_scheduler_declares_is_read_whole() {
        let d = declaration(
            "tick",
            "schedule = \"* * * * * *\"\ntimezone = \"UTC\"\nlock = \"shared\"\nretries = 1\n\
             backoff = \"30000ms\"\nbackoff_max = \"900000ms\"\ntimeout = \"0ms\"\n\
             catch_up = \"latest\"\ncatch_up_window = \"3600000ms\"\noverlap = \"skip\"\n\
             ttl = \"2000ms\"\ntakeover_grace = \"2000ms\"\nkill_grace = \"300ms\"\n",
        );
        let (c, problems) = merged(&empty(), &[d]);
        assert!(problems.is_empty(), "{problems:?}");
        let job = &c.jobs["tick"];
        assert_eq!(job.policy.retries.value, 1);
        assert_eq!(job.policy.timeout.value, None);
        assert_eq!(job.policy.ttl.value, std::time::Duration::from_secs(2));
        assert_eq!(job.lock.value, "shared");
    }

    #[test]
    fn settings_this_baton_does_not_take_fall_back_to_the_schedule() {
        let d = declaration(
            "report",
            "schedule = \"0 3 * * *\"\ntimezone = \"UTC\"\nfuture_key = 1\n",
        );
        let (c, problems) = merged(&empty(), &[d]);
        assert!(problems[0].contains("future_key"), "{problems:?}");
        assert_eq!(c.jobs["report"].policy.retries.value, 0);
    }

    #[test]
    fn an_unreadable_declaration_is_left_out_and_said() {
        let d = declaration("report", "schedule = \"not cron\"\n");
        let (c, problems) = merged(&empty(), &[d]);
        assert!(c.jobs.is_empty());
        assert!(problems[0].contains("\"report\""), "{problems:?}");
    }

    #[test]
    fn the_files_job_of_a_name_wins() {
        let file = super::super::parse(
            "[jobs.report]\nschedule = \"0 1 * * *\"\nrun = \"true\"\n",
            Path::new("/etc/baton.toml"),
            &Overrides::default(),
        )
        .unwrap();
        let d = declaration("report", "schedule = \"0 3 * * *\"\n");
        let (c, _) = merged(&file, &[d]);
        assert!(matches!(c.jobs["report"].source, Source::File { .. }));
    }
}
