//! A secret kept in a file: read, or refused with the reason. The one
//! reader of such a file: the alert webhooks' signing secret
//! (`alert_webhook_secret_file`, read when the configuration is loaded, so
//! that a secret that cannot be used stops every command before anything
//! runs, and again by each delivery, so that a secret changed on disk is
//! used from the next alert on), the daemon's bearer token (`token_file`)
//! and the store's password (`[store] password_file`).
//!
//! The file is opened `O_NOFOLLOW | O_NONBLOCK` and judged by what was
//! opened: it must be a regular file (never a symbolic link, a named pipe
//! or a device), owned by this user or root, that neither its group nor
//! others may read or write (mode `0600` or `0400`), in directories that
//! only this user or root can rearrange (as the configuration file's), and
//! hold a secret: its bytes, with surrounding whitespace (a trailing
//! newline) taken off, not empty, at most [`MAX_SECRET`] bytes. A secret
//! another user could read, write or swap is one they know: for the token,
//! a way to run any command as the daemon's user. The secret is never
//! shown anywhere, only its path.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The longest secret read, in bytes.
pub const MAX_SECRET: u64 = 4096;

/// Why a secret file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The open, the `fstat` or the read failed.
    #[error("failed to {doing} {}: {cause}", path.display())]
    Io {
        /// `open`, `inspect` or `read`.
        doing: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// What the system said.
        cause: String,
    },
    /// A symbolic link, a pipe, a directory, a device.
    #[error(
        "{} is {what}, not a regular file: give the path of the file itself (a link or a pipe \
         could hand over anything)",
        path.display()
    )]
    NotAFile {
        /// The file.
        path: std::path::PathBuf,
        /// What it is instead.
        what: &'static str,
    },
    /// Its group or others may read or write it.
    #[error(
        "{} can be read or written by others (mode {mode:o}): `chmod 600` it",
        path.display()
    )]
    TooOpen {
        /// The file.
        path: std::path::PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Another user owns it, or could replace it (a directory on its path
    /// they own or may write).
    #[error(transparent)]
    Untrusted(#[from] crate::trust::Untrusted),
    /// Nothing but whitespace in it.
    #[error(
        "{} is empty: put a secret in it (for example `head -c 32 /dev/urandom | base64 > {}`)",
        path.display(),
        path.display()
    )]
    Empty {
        /// The file.
        path: std::path::PathBuf,
    },
    /// Longer than [`MAX_SECRET`].
    #[error("{} holds more than {MAX_SECRET} bytes: a secret is one line", path.display())]
    TooLong {
        /// The file.
        path: std::path::PathBuf,
    },
}

/// The secret in the file at `path`, checked as the module says.
///
/// # Errors
///
/// [`SecretError`], saying why it cannot be used.
pub fn read(path: &Path) -> Result<Vec<u8>, SecretError> {
    let io = |doing, e: std::io::Error| SecretError::Io {
        doing,
        path: path.to_owned(),
        cause: e.to_string(),
    };
    // OK because both flags are single low bits that fit an i32; std adds
    // O_CLOEXEC itself.
    let flags = (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32;
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
    {
        Ok(f) => f,
        Err(e) => {
            // ELOOP (a link), ENXIO (a socket): say what is there.
            if let Ok(m) = std::fs::symlink_metadata(path)
                && let Some(what) = not_a_file(m.file_type())
            {
                return Err(SecretError::NotAFile {
                    path: path.to_owned(),
                    what,
                });
            }
            return Err(io("open", e));
        }
    };
    let meta = file.metadata().map_err(|e| io("inspect", e))?;
    if let Some(what) = not_a_file(meta.file_type()) {
        return Err(SecretError::NotAFile {
            path: path.to_owned(),
            what,
        });
    }
    use crate::trust;
    trust::check_owned(path, meta.uid(), meta.mode() & 0o700, trust::Role::Config)?;
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(SecretError::TooOpen {
            path: path.to_owned(),
            mode,
        });
    }
    let real = std::fs::canonicalize(path).map_err(|e| io("inspect", e))?;
    if let Some(dir) = real.parent() {
        trust::check_dir_path(dir, 0)?;
    }
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_SECRET + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io("read", e))?;
    if bytes.len() as u64 > MAX_SECRET {
        return Err(SecretError::TooLong {
            path: path.to_owned(),
        });
    }
    let secret = bytes.trim_ascii();
    if secret.is_empty() {
        return Err(SecretError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(secret.to_vec())
}

/// What a file type is when it is no regular file.
fn not_a_file(t: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    if t.is_file() {
        None
    } else if t.is_symlink() {
        Some("a symbolic link")
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a named pipe")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("a device")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(dir: &Path, name: &str, text: &str, mode: u32) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn a_private_file_gives_its_trimmed_secret() {
        let d = tempfile::tempdir().unwrap();
        let p = write(d.path(), "s", "  s3cret\n", 0o600);
        assert_eq!(read(&p).unwrap(), b"s3cret");
    }

    #[test]
    fn open_empty_linked_piped_and_missing_files_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let open = write(d.path(), "open", "s3cret", 0o640);
        assert!(matches!(
            read(&open),
            Err(SecretError::TooOpen { mode: 0o640, .. })
        ));
        let empty = write(d.path(), "empty", " \n", 0o600);
        assert!(matches!(read(&empty), Err(SecretError::Empty { .. })));
        let private = write(d.path(), "private", "s3cret", 0o600);
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&private, &link).unwrap();
        assert!(matches!(
            read(&link),
            Err(SecretError::NotAFile {
                what: "a symbolic link",
                ..
            })
        ));
        let fifo = d.path().join("fifo");
        baton_testkit::mkfifo(&fifo);
        assert!(matches!(
            read(&fifo),
            Err(SecretError::NotAFile {
                what: "a named pipe",
                ..
            })
        ));
        let long = write(d.path(), "long", &"x".repeat(5000), 0o600);
        assert!(matches!(read(&long), Err(SecretError::TooLong { .. })));
        let missing = d.path().join("missing");
        let e = read(&missing).unwrap_err().to_string();
        assert!(e.starts_with("failed to open "), "{e}");
    }
}
