//! The database file as a file: its name, its side files, its identity, and
//! its creation. This module never opens the database for SQLite; it makes
//! sure that what SQLite is about to open (the database, and the `-wal`,
//! `-shm` and `-journal` SQLite opens by name beside it) are regular files
//! that were not reached through a symbolic link, owned by this user or root
//! and writable by nobody else (`baton_lease::trust`, the rules every file
//! baton writes keeps), in a directory nobody else can change; and it tells
//! whether the file at the path is still the one a connection opened.
//!
//! The ledger creates its files itself, mode `0600` and `O_NOFOLLOW`, before
//! SQLite opens them (a new `baton.db` under a scratch name first,
//! [`crate::create`]), so a file never exists with looser permissions and a
//! symbolic link planted at a path is never followed. SQLite creates the
//! `-wal` and `-shm` files with the database's own mode, so they are `0600`
//! too and no umask is touched. The descriptor used for creating is closed
//! before SQLite opens the file: closing any descriptor of a file drops every
//! POSIX lock the process holds on it, SQLite's included, so no descriptor of
//! the database may ever be closed behind SQLite's back.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use baton_lease::trust;

use crate::error::Error;

/// The database's name in the state directory.
pub(crate) const DB_NAME: &str = "baton.db";

/// The repair mutex's name in the state directory.
pub(crate) const REPAIR_NAME: &str = ".baton.db.repair";

/// The files SQLite keeps beside a database, by suffix. A database moved
/// aside takes all of them along.
pub(crate) const SIDE_SUFFIXES: [&str; 3] = ["-wal", "-shm", "-journal"];

/// Which file a path names: device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
}

/// `path` with `suffix` appended to its file name (`baton.db` → `baton.db-wal`).
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The file at `path` now, without following a symbolic link: `None` when
/// nothing is there.
///
/// # Errors
///
/// A symbolic link or anything but a regular file at the path, a file
/// another user owns or others may write ([`Error::Untrusted`]), or a failed
/// `lstat`.
pub(crate) fn identify(path: &Path) -> Result<Option<FileId>, Error> {
    let Some(meta) = inspect(path)? else {
        return Ok(None);
    };
    Ok(Some(FileId {
        dev: meta.dev(),
        ino: meta.ino(),
    }))
}

/// The file at `path` now and its length, as [`identify`] finds it:
/// `None` when nothing is there.
///
/// # Errors
///
/// As [`identify`].
pub(crate) fn look(path: &Path) -> Result<Option<(FileId, u64)>, Error> {
    let Some(meta) = inspect(path)? else {
        return Ok(None);
    };
    let id = FileId {
        dev: meta.dev(),
        ino: meta.ino(),
    };
    Ok(Some((id, meta.len())))
}

/// Whether the file `id` is now one of the corrupt databases moved aside
/// beside `path` (`baton.db.corrupt-STAMP`, by [`crate::recover`]): a
/// rename keeps the file, so its device and inode say it was moved there.
/// Anything unreadable counts as not moved: the caller then says the file
/// was lost, which is never less than what happened.
pub(crate) fn moved_aside_as_corrupt(path: &Path, id: FileId) -> bool {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return false;
    };
    let mut prefix = name.to_owned();
    prefix.push(".corrupt-");
    let prefix = prefix.as_encoded_bytes();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name().as_encoded_bytes().starts_with(prefix)
            && e.metadata()
                .is_ok_and(|m| m.file_type().is_file() && m.dev() == id.dev && m.ino() == id.ino)
    })
}

/// Checks the files SQLite keeps beside the database at `path` (`-wal`,
/// `-shm`, `-journal`) as [`identify`] checks the database, before SQLite
/// opens them by name: each is absent, or a regular file of this user's or
/// root's that nobody else may write.
///
/// # Errors
///
/// As [`identify`], naming the side file.
pub(crate) fn check_sides(path: &Path) -> Result<(), Error> {
    for suffix in SIDE_SUFFIXES {
        inspect(&with_suffix(path, suffix))?;
    }
    Ok(())
}

/// The `lstat` of `path`, once it is known to be a regular file the ledger
/// may trust; `None` when nothing is there.
fn inspect(path: &Path) -> Result<Option<fs::Metadata>, Error> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Io {
                action: "inspect",
                path: path.to_owned(),
                source,
            });
        }
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Err(Error::Symlink {
            path: path.to_owned(),
        });
    }
    if !ft.is_file() {
        return Err(Error::NotAFile {
            path: path.to_owned(),
            what: trust::kind(ft),
        });
    }
    trust::check_owned(path, meta.uid(), meta.mode(), trust::Role::Ledger)?;
    Ok(Some(meta))
}

/// Creates an empty regular file at `path`, mode `0600`, failing when
/// anything is there: a symbolic link planted at the path is refused, never
/// followed (`O_NOFOLLOW` with `O_EXCL`). The descriptor is closed before
/// this returns, before SQLite opens the file (see the module's
/// documentation).
///
/// # Errors
///
/// Anything at the path, or a failed `open`, as "failed to `action` PATH".
pub(crate) fn create_empty(path: &Path, action: &'static str) -> Result<(), Error> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nofollow())
        .open(path)
        .map(drop)
        .map_err(|source| Error::Io {
            action,
            path: path.to_owned(),
            source,
        })
}

/// `O_NOFOLLOW` (std adds `O_CLOEXEC` itself). `O_EXCL` from `create_new`
/// already refuses a symbolic link at the path; `O_NOFOLLOW` says so twice.
pub(crate) fn nofollow() -> i32 {
    // OK because the flag's bits fit an i32 (it is a single low bit).
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

/// Whether the directory exists, for a clearer error than SQLite's, and
/// whether it, or a directory above it, could be changed by another user
/// (as `baton_lease::trust` judges a state directory).
pub(crate) fn check_dir(dir: &Path) -> Result<(), Error> {
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(Error::Io {
                action: "use the state directory",
                path: dir.to_owned(),
                source: io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        Err(source) => {
            return Err(Error::Io {
                action: "use the state directory",
                path: dir.to_owned(),
                source,
            });
        }
    }
    trust::check_dir_path(dir, 1)?;
    Ok(())
}
