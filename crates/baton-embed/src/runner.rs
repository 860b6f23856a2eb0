//! The runner of command jobs ([`crate::Job::command`]): the `baton`
//! binary ([`find`]) and, for each command job, the configuration its
//! `baton __run` processes read on their standard input ([`Runner`]): the
//! store, as the command line reads it with no `baton.toml` of its own,
//! and the job's table.
//!
//! It is made once, when the scheduler is built; it never starts a
//! process (that is [`crate::child`]'s), takes a lease or writes a record.

use std::path::{Path, PathBuf};

use crate::plan::Plan;

/// The configuration a command job's runs read: the store, as the
/// command line reads it with no `baton.toml` of its own, and the job's
/// table (its declaration's keys, its command, its working directory).
pub(crate) struct Runner {
    /// The `baton` binary.
    pub(crate) exe: PathBuf,
    /// The configuration, as `baton __run` reads it on stdin (a snapshot,
    /// as JSON) for each job, by name.
    pub(crate) snapshots: std::collections::HashMap<String, String>,
}

impl Runner {
    /// The runner `exe` for `plans`' command jobs on the store configured by
    /// `store_text` (`[scheduler] state_dir` or `[store] url`), their
    /// commands run in `cwd`.
    pub(crate) fn new(exe: PathBuf, store_text: &str, cwd: &Path, plans: &[Plan]) -> Self {
        let quoted = |s: &str| crate::quote::quoted(s);
        let path = cwd.join("baton-embed.toml");
        let snapshots = plans
            .iter()
            .filter(|p| !p.in_process())
            .map(|p| {
                let declared = crate::declare::declaration(p, "", jiff::Timestamp::UNIX_EPOCH);
                // The runs the job keeps is a `[scheduler]` key to the
                // command line; each job's configuration is its own.
                let keep = format!("history_keep = {}\n", p.history_keep);
                let store_text = match store_text.strip_prefix("[scheduler]\n") {
                    Some(rest) => format!("[scheduler]\n{keep}{rest}"),
                    None => format!("[scheduler]\n{keep}\n{store_text}"),
                };
                // The declaration holds the command (`run`) already.
                let text = format!(
                    "{store_text}\n[jobs.{}]\n{}cwd = {}\n",
                    quoted(&p.name),
                    declared.config,
                    quoted(&cwd.to_string_lossy())
                );
                let json = format!(
                    "{{\"path\": {}, \"text\": {}, \"dropins\": []}}",
                    quoted(&path.to_string_lossy()),
                    quoted(&text)
                );
                (p.name.clone(), json)
            })
            .collect();
        Self { exe, snapshots }
    }
}

/// Why no `baton` binary was found ([`find`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoBaton {
    /// The path given is not an executable file.
    #[error("{} is not an executable file", .0.display())]
    NotExecutable(PathBuf),
    /// None given, and none on `PATH`.
    #[error("no `baton` on PATH")]
    NotOnPath,
}

/// The `baton` binary: `given`, or the first `baton` on `PATH`.
///
/// # Errors
///
/// Why none was found.
pub(crate) fn find(given: Option<PathBuf>) -> Result<PathBuf, NoBaton> {
    use std::os::unix::fs::PermissionsExt;
    let runs = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if let Some(p) = given {
        return if runs(&p) {
            Ok(p)
        } else {
            Err(NoBaton::NotExecutable(p))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("baton"))
        .find(|p| runs(p))
        .ok_or(NoBaton::NotOnPath)
}
