//! The one way baton opens a file it writes in its state directory, other
//! than a lock file (`baton-lease` opens those) and the ledger (SQLite opens
//! it, once `baton-ledger` has checked it): the dated logs, `alerts.log`,
//! the prune marker, `breaks.log`, a run's end slot (`crate::state::end_slot`);
//! and the one way a view reads the end of such a file back ([`read_tail`]).
//!
//! Every open is `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`, creating a missing
//! file owner-only (`0600`); then what was opened is judged from its `fstat`
//! (`baton_lease::trust::check_meta`): it must be a regular file, owned by
//! this user or root, that nobody else may write. So a symbolic link planted
//! at the path is never followed, a named pipe never blocks the open (nor a
//! run holding its lease behind it), and a socket, a device or a directory is
//! never written; each is refused with an error naming the file and what to
//! do. A file is only ever appended to, or (a marker) emptied and rewritten
//! after it was judged, never truncated by the open itself.
//!
//! A special file (a named pipe, a socket, a device) found where a file is
//! written can be set aside ([`set_aside`]): renamed, never opened, to a
//! fresh name beside it, so that the next open creates the file afresh.
//!
//! This module decides nothing about what a failure means: the caller says
//! whether it refuses a run, sets the file aside, or reports and goes on.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use baton_lease::trust::{self, Role, Untrusted};

/// The longest marker [`read_marker`] reads.
const MARKER_LIMIT: u64 = 4096;

/// Why a file in the state directory was not opened or written.
#[derive(Debug, thiserror::Error)]
pub enum StateFileError {
    /// What is at the path is not a file baton may write.
    #[error("{0}")]
    Untrusted(#[from] Untrusted),
    /// A system call failed.
    #[error("failed to {action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl StateFileError {
    /// Whether nothing is at the path (nor its directory).
    pub fn is_missing(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

fn io(action: &'static str, path: &Path, source: std::io::Error) -> StateFileError {
    StateFileError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    Append,
    Rewrite,
    Read,
    /// A new file, never one that is there already.
    Create,
    /// An existing file, written where it stands.
    InPlace,
}

fn open(path: &Path, how: How) -> Result<File, StateFileError> {
    let mut o = OpenOptions::new();
    match how {
        How::Append => o.append(true).create(true),
        How::Rewrite => o.write(true).create(true),
        How::Read => o.read(true),
        How::Create => o.write(true).create_new(true),
        How::InPlace => o.write(true),
    };
    // OK because both flags are single low bits that fit an i32; std adds
    // O_CLOEXEC itself.
    let flags = (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32;
    let opened = o.mode(0o600).custom_flags(flags).open(path);
    let file = match opened {
        Ok(f) => f,
        Err(e) => {
            // ELOOP (a link), ENXIO (a pipe nobody reads, a socket), EISDIR:
            // say what is there rather than what the open said.
            if let Ok(meta) = std::fs::symlink_metadata(path) {
                trust::check_meta(path, &meta, Role::Log)?;
            }
            let action = match how {
                How::Read => "open",
                How::Append | How::Rewrite | How::InPlace => "open for writing",
                How::Create => "create",
            };
            return Err(io(action, path, e));
        }
    };
    let meta = file.metadata().map_err(|e| io("inspect", path, e))?;
    trust::check_meta(path, &meta, Role::Log)?;
    Ok(file)
}

/// Appends `bytes` to `path` in one `write(2)` (`O_APPEND`: lines written by
/// concurrent processes never interleave), creating the file `0600` when
/// missing. The directory must exist.
///
/// # Errors
///
/// What is at the path is not a regular file of this user's or root's that
/// nobody else may write; the open or the write fails.
pub fn append(path: &Path, bytes: &[u8]) -> Result<(), StateFileError> {
    let mut f = open(path, How::Append)?;
    f.write_all(bytes).map_err(|e| io("append to", path, e))
}

/// Replaces the content of a small marker file with `bytes` (emptied, then
/// written, once the file was judged), creating it `0600` when missing. Not
/// atomic: a reader may see it empty; a marker must tolerate that.
///
/// # Errors
///
/// As [`append`].
pub fn rewrite_marker(path: &Path, bytes: &[u8]) -> Result<(), StateFileError> {
    let mut f = open(path, How::Rewrite)?;
    f.set_len(0).map_err(|e| io("empty", path, e))?;
    f.write_all(bytes).map_err(|e| io("write", path, e))
}

/// Creates `path` (`0600`; refused when anything is there) holding `len`
/// spaces and a newline, synced: room that [`overwrite`] later fills
/// without asking the filesystem for more, so that it still lands when the
/// disk has filled meanwhile.
///
/// # Errors
///
/// As [`append`]; the file exists already; the write or the sync fails
/// (a full disk): the file this call made is then removed, so no empty
/// room is left behind.
pub fn reserve(path: &Path, len: usize) -> Result<(), StateFileError> {
    let mut f = open(path, How::Create)?;
    let mut room = vec![b' '; len];
    if let Some(last) = room.last_mut() {
        *last = b'\n';
    }
    let filled = f
        .write_all(&room)
        .map_err(|e| io("write", path, e))
        .and_then(|()| f.sync_all().map_err(|e| io("sync", path, e)));
    if filled.is_err() {
        // Made by this call (`create_new`): nobody else's file.
        drop(f);
        let _ = std::fs::remove_file(path);
    }
    filled
}

/// Writes `bytes` over the start of the existing file at `path` (room
/// [`reserve`]d for it: nothing is allocated), then syncs it.
///
/// # Errors
///
/// As [`append`]; the file is missing; the write or the sync fails.
pub fn overwrite(path: &Path, bytes: &[u8]) -> Result<(), StateFileError> {
    let mut f = open(path, How::InPlace)?;
    f.write_all(bytes).map_err(|e| io("write", path, e))?;
    f.sync_all().map_err(|e| io("sync", path, e))
}

/// Reads a small marker file (its first 4 KiB): `None` when it is missing.
///
/// # Errors
///
/// As [`append`], or the read fails.
pub fn read_marker(path: &Path) -> Result<Option<String>, StateFileError> {
    let f = match open(path, How::Read) {
        Ok(f) => f,
        Err(e) if e.is_missing() => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut text = String::new();
    f.take(MARKER_LIMIT)
        .read_to_string(&mut text)
        .map_err(|e| io("read", path, e))?;
    Ok(Some(text))
}

/// Reads the last `max` bytes of the file at `path` (all of it when it is
/// shorter), and whether that is the whole file: `None` when it is
/// missing. Opened as every file here is, so a
/// link is never followed and a named pipe never blocks the read; a file
/// that is not one baton writes is refused, unread.
///
/// # Errors
///
/// As [`append`], or the seek or the read fails.
pub fn read_tail(path: &Path, max: u64) -> Result<Option<(Vec<u8>, bool)>, StateFileError> {
    use std::io::Seek as _;
    let mut f = match open(path, How::Read) {
        Ok(f) => f,
        Err(e) if e.is_missing() => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = f.metadata().map_err(|e| io("inspect", path, e))?.len();
    let from = len.saturating_sub(max);
    f.seek(std::io::SeekFrom::Start(from))
        .map_err(|e| io("seek in", path, e))?;
    let mut bytes = Vec::new();
    f.take(max)
        .read_to_end(&mut bytes)
        .map_err(|e| io("read", path, e))?;
    Ok(Some((bytes, from == 0)))
}

/// How many names [`set_aside`] tries beside a file before it gives up.
const ASIDE_TRIES: u32 = 100;

/// A special file that was moved out of the way of a file baton writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    /// Where it was: the path of the file baton writes.
    pub path: PathBuf,
    /// What it is, in words (`a named pipe`).
    pub what: &'static str,
    /// Where it is now.
    pub to: PathBuf,
}

impl std::fmt::Display for SetAside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} was {}, not a regular file: it was moved aside to {}, never opened, and the \
             file is written afresh; remove it once you know who put it there",
            self.path.display(),
            self.what,
            self.to.display()
        )
    }
}

/// Moves a special file at `path` (a named pipe, a socket, a character or
/// block device) aside, to `NAME.set-aside.N` beside it (the first `N` that
/// is free: nothing is ever replaced). The file is never opened, so a pipe
/// never blocks and a device is never touched. Returns `None`, and moves
/// nothing, when `path` is missing, a regular file, a directory or a
/// symbolic link: a link is refused where it is written, never followed
/// and never moved.
///
/// # Errors
///
/// The `lstat` or the rename fails, or every name tried is taken.
pub fn set_aside(path: &Path) -> Result<Option<SetAside>, StateFileError> {
    let t = match std::fs::symlink_metadata(path) {
        Ok(m) => m.file_type(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("inspect", path, e)),
    };
    if !special(t) {
        return Ok(None);
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    for n in 1..=ASIDE_TRIES {
        let to = path.with_file_name(format!("{name}.set-aside.{n}"));
        let moved = rustix::fs::renameat_with(
            rustix::fs::CWD,
            path,
            rustix::fs::CWD,
            &to,
            rustix::fs::RenameFlags::NOREPLACE,
        );
        match moved {
            Ok(()) => {
                return Ok(Some(SetAside {
                    path: path.to_owned(),
                    what: trust::kind(t),
                    to,
                }));
            }
            Err(rustix::io::Errno::EXIST) => {}
            // Gone meanwhile: nothing is in the way any more.
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(io("move aside", path, e.into())),
        }
    }
    Err(io(
        "move aside",
        path,
        std::io::Error::other(format!(
            "{name}.set-aside.1 to .{ASIDE_TRIES} are all taken"
        )),
    ))
}

/// Whether what is at `path` is a special file [`set_aside`] moves: a named
/// pipe, a socket or a device (`false` when the `lstat` fails).
pub fn is_special(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| special(m.file_type()))
}

fn special(t: std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    t.is_fifo() || t.is_socket() || t.is_char_device() || t.is_block_device()
}

/// Checks, without opening it, that the file at `path` may be written: absent,
/// or a regular file of this user's or root's that nobody else may write.
///
/// # Errors
///
/// As [`append`], or the `lstat` fails.
pub fn check(path: &Path) -> Result<(), StateFileError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(trust::check_meta(path, &meta, Role::Log)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("inspect", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Room a full disk refuses leaves no empty file behind (an end slot
    /// per refused occurrence, never removed, before). Needs root, for a
    /// small tmpfs of its own.
    #[test]
    fn room_a_full_disk_refuses_leaves_no_file() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: mounting a tmpfs needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(mounted, "mount -t tmpfs failed");
        let filler = dir.path().join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        while f.write_all(&[0u8; 4096]).is_ok() {}
        drop(f);
        let slot = dir.path().join("run.end");
        let refused = reserve(&slot, 8192);
        let left = slot.exists();
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(dir.path())
            .status();
        assert!(refused.is_err(), "the full disk took the room");
        assert!(!left, "an empty slot was left behind");
    }

    fn fifo(p: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            p,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
    }

    #[test]
    fn a_new_file_is_owner_only_and_appended_to() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.log");
        append(&p, b"one\n").unwrap();
        append(&p, b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "one\ntwo\n");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_named_pipe_is_refused_without_blocking_with_or_without_a_reader() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.log");
        fifo(&p);
        let e = append(&p, b"x\n").unwrap_err();
        assert!(
            e.to_string().contains("a named pipe, not a regular file"),
            "{e}"
        );
        assert!(e.to_string().contains(p.to_str().unwrap()), "{e}");
        let _reader = OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&p)
            .unwrap();
        let e = append(&p, b"x\n").unwrap_err();
        assert!(e.to_string().contains("a named pipe"), "{e}");
        let e = read_marker(&p).unwrap_err();
        assert!(e.to_string().contains("a named pipe"), "{e}");
        assert!(check(&p).is_err());
    }

    #[test]
    fn a_named_pipe_is_set_aside_unopened_and_the_file_written_afresh() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("alerts.log");
        fifo(&p);
        // A name already taken beside it is never replaced.
        std::fs::write(d.path().join("alerts.log.set-aside.1"), "kept\n").unwrap();
        let moved = set_aside(&p).unwrap().expect("the pipe is moved");
        assert_eq!(moved.what, "a named pipe");
        assert_eq!(moved.to, d.path().join("alerts.log.set-aside.2"));
        assert!(moved.to_string().contains("moved aside to"), "{moved}");
        let t = std::fs::symlink_metadata(&moved.to).unwrap().file_type();
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&t));
        assert_eq!(
            std::fs::read_to_string(d.path().join("alerts.log.set-aside.1")).unwrap(),
            "kept\n"
        );
        append(&p, b"x\n").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "x\n");
        // A regular file, a link and nothing at all are left where they are.
        assert_eq!(set_aside(&p).unwrap(), None);
        let link = d.path().join("link.log");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert_eq!(set_aside(&link).unwrap(), None);
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(set_aside(&d.path().join("none.log")).unwrap(), None);
    }

    #[test]
    fn a_symbolic_link_is_never_followed() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, "keep\n").unwrap();
        let p = d.path().join(".marker");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        let e = rewrite_marker(&p, b"x\n").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(read_marker(&p).is_err());
        assert!(append(&p, b"x\n").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep\n");
    }

    #[test]
    fn a_file_others_may_write_is_refused_and_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.log");
        std::fs::write(&p, "old\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o662)).unwrap();
        let e = append(&p, b"x\n").unwrap_err();
        assert!(e.to_string().contains("mode 0662"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old\n");
    }

    #[test]
    fn a_marker_is_rewritten_whole_and_read_back() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".pruned");
        assert_eq!(read_marker(&p).unwrap(), None);
        rewrite_marker(&p, b"2026_11_29\n").unwrap();
        rewrite_marker(&p, b"2026_11_30\n").unwrap();
        assert_eq!(read_marker(&p).unwrap().as_deref(), Some("2026_11_30\n"));
    }
}
