//! Shell completion: `baton completions SHELL` prints a small script that
//! registers baton with the shell; on each TAB the shell runs baton again
//! with `_BATON_COMPLETE=SHELL` and the words typed so far, and baton
//! answers from its own command line definition (clap's dynamic engine),
//! so the completions always match the binary that answers them. The zsh
//! script also works from `$fpath` (as the package installs it).
//!
//! Hidden commands (`__run`, `__page`, `__metrics`, `__http`) are never
//! offered among others. Every JOB argument (`run`, `tick`, `status`,
//! `history`, `pause`, `resume`, `backfill`, `watermark`, `calendar --job`)
//! completes the job names of the configuration the command would read:
//! the `--config FILE` typed on the line, else `$BATON_CONFIG`, else
//! `./baton.toml`. A configuration that cannot be read completes nothing.
//! Answering a completion reads that file (and `jobs.d/`) and writes
//! nothing; nothing here runs a job or touches the state directory.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::CommandFactory;
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};
use clap_complete::env::{CompleteEnv, Shells};

use crate::cli::Cli;

/// The variable that makes baton answer a completion instead of running:
/// set by the registered script, never by a person. Not `BATON_…`, which
/// names the configuration's overrides.
pub(crate) const VAR: &str = "_BATON_COMPLETE";

/// When baton was started to answer a completion (`_BATON_COMPLETE` is
/// set), answers it and exits; else returns at once.
pub(crate) fn answer() {
    CompleteEnv::with_factory(Cli::command)
        .var(VAR)
        .bin("baton")
        .complete();
}

/// The script that registers baton's completions with `shell`.
///
/// # Errors
///
/// A shell the dynamic engine has no script for (none of clap's
/// `Shell` values today).
pub(crate) fn script(shell: clap_complete::Shell) -> Result<String, String> {
    use clap::ValueEnum as _;
    let name = shell
        .to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default();
    let shells = Shells::builtins();
    let Some(completer) = shells.completer(&name) else {
        return Err(format!("no completion script for {name}"));
    };
    let mut out = Vec::new();
    completer
        .write_registration(VAR, "baton", "baton", &own_path(), &mut out)
        .map_err(|e| format!("failed to write the {name} script: {e}"))?;
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if shell == clap_complete::Shell::Zsh {
        text.push_str(ZSH_FPATH);
    }
    Ok(text)
}

/// Appended to the zsh script. Sourced, it does nothing more; installed in
/// `$fpath` as `_baton` (a package's `vendor-completions/_baton`), zsh runs
/// the whole file as the function `_baton` on the first TAB, which then only
/// registers the completer: this makes that first TAB complete too.
const ZSH_FPATH: &str = "\
if [[ \"${funcstack[1]}\" == \"_baton\" ]]; then
    _clap_dynamic_completer_baton \"$@\"
fi
";

/// How the script runs baton: as this process was started when that named
/// a directory (made absolute), else by name, found on `PATH`.
fn own_path() -> String {
    let arg0 = std::env::args_os().next().map(PathBuf::from);
    match arg0 {
        Some(p) if p.components().count() > 1 => {
            let abs = if p.is_absolute() {
                p
            } else {
                std::env::current_dir().map_or(p.clone(), |d| d.join(&p))
            };
            abs.to_string_lossy().into_owned()
        }
        _ => "baton".to_owned(),
    }
}

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
