//! The directory a command writes its files into (`baton render --out`,
//! `baton man --dir`): created when missing, then trusted as the state
//! directory is (`baton_lease::trust`). A directory another user owns or
//! can write, or a symbolic link another user could repoint, is refused
//! before anything is written or removed there: root rendering units into
//! a directory another user prepared would write where that user chose,
//! remove files of an earlier render there, or leave a unit that user
//! could swap before it is installed.
//!
//! It never writes a file; the callers write through
//! `baton_sched::state::atomic`.

use std::path::Path;

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
    // Checked before creating too: a link another user planted is refused
    // before anything is made through it.
    baton_lease::trust::check_links(dir).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("failed to create the directory {}: {e}", dir.display()))?;
    baton_lease::trust::check_dir_path(dir, 1).map_err(|e| e.to_string())
}
