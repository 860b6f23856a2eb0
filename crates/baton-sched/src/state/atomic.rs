//! The one place baton replaces a file whole: a unique temporary file beside
//! the target (created with `O_EXCL | O_NOFOLLOW`, named `.NAME.tmp-RANDOM`
//! so readers that skip hidden files never see it), written, `fsync`ed,
//! renamed over the target, and the directory `fsync`ed. A reader sees the
//! old file or the new one, never a part; two writers at once each write
//! their own temporary file and the last rename wins whole; a crash leaves
//! at worst a hidden temporary file.
//!
//! It never writes the target in place and never follows a link at the
//! temporary name.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// How many random names are tried before giving up (a clash needs 64 bits
/// to collide).
const TEMP_ATTEMPTS: u32 = 16;

/// A replacement that failed: what was being done, to what.
#[derive(Debug, thiserror::Error)]
#[error("failed to {what} {}: {source}", path.display())]
pub struct AtomicError {
    /// What was being done (`create the temporary file for`).
    pub what: &'static str,
    /// The file or directory.
    pub path: PathBuf,
    /// What the system said.
    #[source]
    pub source: std::io::Error,
}

fn err(what: &'static str, path: &Path, source: std::io::Error) -> AtomicError {
    AtomicError {
        what,
        path: path.to_owned(),
        source,
    }
}

/// Replaces `dir/name` with `bytes` (mode 0644 before the umask), for
/// files that hold no secret.
///
/// # Errors
///
/// The temporary file cannot be created, written or synced, the rename
/// fails, or the directory cannot be synced; the temporary file is removed.
pub fn replace(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, AtomicError> {
    replace_with_mode(dir, name, bytes, 0o644)
}

/// Replaces `dir/name` with `bytes`, readable and writable by its owner
/// alone (0600), whatever the mode of the file it replaces: for files that
/// may hold secrets.
///
/// # Errors
///
/// As [`replace`].
pub fn replace_private(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, AtomicError> {
    replace_with_mode(dir, name, bytes, 0o600)
}

fn replace_with_mode(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    mode: u32,
) -> Result<PathBuf, AtomicError> {
    let target = dir.join(name);
    let (tmp, mut file) = create_temp(dir, name, mode)?;
    let written = (|| {
        file.write_all(bytes)
            .map_err(|e| err("write the temporary file", &tmp, e))?;
        file.sync_all()
            .map_err(|e| err("fsync the temporary file", &tmp, e))?;
        drop(file);
        std::fs::rename(&tmp, &target).map_err(|e| err("rename into place", &target, e))?;
        sync_dir(dir)
    })();
    if written.is_err() {
        // OK to ignore: the write already failed, and a temporary file left
        // behind is hidden (its name starts with a dot).
        let _ = std::fs::remove_file(&tmp);
    }
    written.map(|()| target)
}

fn create_temp(dir: &Path, name: &str, mode: u32) -> Result<(PathBuf, File), AtomicError> {
    let mut last = None;
    for _ in 0..TEMP_ATTEMPTS {
        let mut bytes = [0u8; 8];
        fill_random(&mut bytes).map_err(|e| err("read random bytes to name a file in", dir, e))?;
        let tmp = dir.join(format!(".{name}.tmp-{:016x}", u64::from_le_bytes(bytes)));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some((tmp, e)),
            Err(e) => return Err(err("create the temporary file", &tmp, e)),
        }
    }
    let (tmp, e) = last.unwrap_or_else(|| {
        (
            dir.to_owned(),
            std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        )
    });
    Err(err("create the temporary file", &tmp, e))
}

fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        match rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// `fsync`s a directory, so a rename or removal in it survives a crash.
///
/// # Errors
///
/// The directory cannot be opened or synced.
pub fn sync_dir(dir: &Path) -> Result<(), AtomicError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| err("fsync the directory", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replacement_is_whole_and_leaves_no_temporary_file() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), "old").unwrap();
        let p = replace(d.path(), "f", b"new").unwrap();
        assert_eq!(std::fs::read_to_string(p).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_failed_replacement_says_what_and_where() {
        let e = replace(Path::new("/nonexistent/dir"), "f", b"x").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("failed to create the temporary file /nonexistent/dir/.f.tmp-"),
            "{e}"
        );
    }
}
