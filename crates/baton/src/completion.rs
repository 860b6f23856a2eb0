//! Shell completion: `baton completions SHELL` prints a small script that
//! registers baton with the shell; on each TAB the shell runs baton again
//! with `_BATON_COMPLETE=SHELL` and the words typed so far, and baton
//! answers from its own command line definition (clap's dynamic engine),
//! so the completions always match the binary that answers them. The zsh
//! script also works from `$fpath` (as the package installs it).
//!
//! Hidden commands (`__run`, `__page`, `__metrics`, `__http`) are never
//! offered among others. Every JOB argument completes the job names of the
//! configuration the command would read ([`crate::job_completer`]).
//! Answering a completion reads that file (and `jobs.d/`) and writes
//! nothing; nothing here runs a job or touches the state directory.

use std::path::PathBuf;

use clap::CommandFactory;
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
