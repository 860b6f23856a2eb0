//! The completer of a JOB argument (`run`, `tick`, `status`, `history`,
//! `pause`, `resume`, `backfill`, `watermark`, `calendar --job`): the job
//! names of the configuration the command would read, the `--config FILE`
//! typed on the line, else `$BATON_CONFIG`, else `./baton.toml`. A
//! configuration that cannot be read completes nothing.
//!
//! It reads that file (and `jobs.d/`) and nothing else: it never writes,
//! runs a job or touches the state directory.

use std::ffi::OsString;
use std::path::PathBuf;

use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};

/// The completer of a JOB argument.
pub(crate) fn jobs() -> ArgValueCandidates {
    ArgValueCandidates::new(job_names)
}

/// The job names of the configuration the line being completed names,
/// each with its schedule as its description.
fn job_names() -> Vec<CompletionCandidate> {
    let line: Vec<OsString> = std::env::args_os()
        .skip_while(|a| a != "--")
        .skip(1)
        .collect();
    let flag = config_flag(&line);
    let path = baton_sched::config::locate(flag.as_deref());
    let over = baton_sched::config::Overrides::from_env(None);
    let Ok(c) = baton_sched::config::load(&path, &over) else {
        return Vec::new();
    };
    c.jobs
        .values()
        .map(|j| {
            let when = match j.when.value.key {
                "every" => format!("every {}", j.when.value.text),
                _ => j.when.value.text.clone(),
            };
            CompletionCandidate::new(j.name.clone()).help(Some(when.into()))
        })
        .collect()
}

/// The `--config FILE` (or `--config=FILE`) typed before the word being
/// completed, the last one winning; never the word being completed itself.
fn config_flag(line: &[OsString]) -> Option<PathBuf> {
    let typed = &line[..line.len().saturating_sub(1)];
    let mut found = None;
    let mut words = typed.iter();
    while let Some(w) = words.next() {
        if w == "--config" {
            found = words.next().map(PathBuf::from);
        } else if let Some(v) = w.to_str().and_then(|w| w.strip_prefix("--config=")) {
            found = Some(PathBuf::from(v));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_typed_on_the_line_is_the_one_read() {
        let line = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(config_flag(&line(&["baton", "run", ""])), None);
        assert_eq!(
            config_flag(&line(&["baton", "run", "--config", "/a.toml", ""])),
            Some(PathBuf::from("/a.toml"))
        );
        assert_eq!(
            config_flag(&line(&["baton", "--config=/b.toml", "run", "x"])),
            Some(PathBuf::from("/b.toml"))
        );
        // The word being completed is not yet a value.
        assert_eq!(config_flag(&line(&["baton", "run", "--config"])), None);
    }
}
