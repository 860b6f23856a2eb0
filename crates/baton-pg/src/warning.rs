//! What resolving a target finds that is worth saying but refuses nothing:
//! a password file that other users may read. A [`Warning`] is a value
//! ([`crate::Target::warnings`]); this crate never prints it, the program
//! that uses it says it.

use std::path::PathBuf;

/// Something about the store's settings an operator should fix.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// The password file can be read by its group or by others.
    PasswordFileReadable {
        /// The file.
        path: PathBuf,
        /// Its permission bits (`0o644` …).
        mode: u32,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::PasswordFileReadable { path, mode } => write!(
                f,
                "the store password file {} can be read by others (mode {mode:o}): `chmod 600` it",
                path.display()
            ),
        }
    }
}

/// A warning when `path`, a file holding the password, may be read by its
/// group or by others; none when it may not, or its mode cannot be read
/// (reading it just worked, so that is not expected, and reading is what
/// matters).
pub(crate) fn password_file(path: &std::path::Path) -> Option<Warning> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then(|| Warning::PasswordFileReadable {
        path: path.to_owned(),
        mode,
    })
}
