//! The directory a command writes its files into (`baton render --out`,
//! `baton man --dir`): trusted as the state directory is
//! (`baton_lease::trust`), before and after it is created. A directory
//! another user owns or can write, one below such a directory, or one
//! reached through a symbolic link another user could repoint, is refused
//! before any file is written or removed there: root rendering units into
//! a directory another user prepared would write where that user chose,
//! remove files of an earlier render there, or leave a unit that user
//! could swap before it is installed.
//!
//! It never writes a file; the callers write through
//! `baton_sched::state::atomic`. A missing directory is created only below
//! one that passed the check (a link planted in a sticky directory between
//! the check and the creation can still have an empty directory made
//! through it, which the check after the creation then refuses).

use std::path::Path;

use baton_lease::trust::{self, Untrusted};

/// Creates `dir` when missing and checks it and the path to it: owned by
/// this user or root, writable by nobody else (a sticky directory such as
/// `/tmp` is accepted above it, not as it), and no link on the way that
/// another user owns or could replace.
///
/// # Errors
///
/// What failed or was refused, naming the directory and what to do.
pub fn prepare(dir: &Path) -> Result<(), String> {
    // From the working directory (a physical path), so a leading `..` is
    // followed as the kernel follows it.
    let dir = &std::path::absolute(dir)
        .map_err(|e| format!("failed to find the directory {}: {e}", dir.display()))?;
    let refused = |e: Untrusted| {
        format!(
            "refusing to write into {}: {} is {}; another user could replace what is written \
             there: write into a directory that only you (or root) own and can write",
            dir.display(),
            e.path.display(),
            e.why
        )
    };
    trust::check_links(dir).map_err(refused)?;
    // The deepest part that exists is checked before anything is made in
    // it; a sticky one (`/tmp`) only when something is made below it.
    if let Some(existing) = dir.ancestors().find(|a| a.exists()) {
        let strict = usize::from(existing == dir.as_path());
        trust::check_dir_path(existing, strict).map_err(refused)?;
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("failed to create the directory {}: {e}", dir.display()))?;
    trust::check_dir_path(dir, 1).map_err(refused)
}
