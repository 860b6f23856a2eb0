//! Lock files and the `flock` mutex: the only code that opens a lock file,
//! takes or drops its mutex, or writes its bytes.
//!
//! Guarantees: every open uses `O_NOFOLLOW | O_CLOEXEC` (a symlink at the lock
//! path is refused, and no child inherits the descriptor); the mutex is
//! `flock(2)` through `std::fs::File::try_lock`, which is per open file
//! description, so two opens in one process contend; `EINTR` is retried.
//! Records are rewritten in place with one `pwrite` at offset 0, padded with
//! spaces to the length already there, so the file never shrinks, no
//! truncate is ever needed, and no reader sees a half-written record. (A file
//! longer than a record can be, which only an operator's forced break over
//! foreign bytes meets, is trimmed after the write.)

#![allow(clippy::disallowed_methods)] // This module is the flock chokepoint.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use jiff::Timestamp;

/// Which mutex to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `LOCK_EX`: for every read-decide-write.
    Exclusive,
    /// `LOCK_SH`: for a read that decides nothing (`inspect`).
    Shared,
}

/// Which inode a descriptor or a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    dev: u64,
    ino: u64,
}

impl Identity {
    /// The device the inode is on.
    pub(crate) fn dev(self) -> u64 {
        self.dev
    }
}

fn nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

/// Opens an existing lock file for reading and, when `write`, writing.
/// `O_NONBLOCK` keeps a FIFO planted at the path from blocking the open; it
/// changes nothing for a regular file.
pub(crate) fn open(path: &Path, write: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(nofollow() | rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
}

/// Creates a new file that must not exist yet (`O_CREAT | O_EXCL`), mode 0600:
/// whoever can open a lock file can hold its mutex and stall its holder.
pub(crate) fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nofollow())
        .open(path)
}

/// Gives `existing` the second name `new`; fails with `AlreadyExists` when
/// `new` exists, which is what makes a fresh record appear whole.
pub(crate) fn link(existing: &Path, new: &Path) -> io::Result<()> {
    std::fs::hard_link(existing, new)
}

/// Removes a name.
pub(crate) fn remove(path: &Path) -> io::Result<()> {
    std::fs::remove_file(path)
}

/// What one `fstat` says about an open lock file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    pub(crate) id: Identity,
    pub(crate) regular: bool,
    pub(crate) kind: &'static str,
    pub(crate) len: u64,
    pub(crate) mtime: Option<Timestamp>,
    pub(crate) uid: u32,
    pub(crate) mode: u32,
}

/// Takes the group's and others' bits off a lock file this process owns
/// (mode `0600`): whoever can open a lock file can hold its `flock` mutex,
/// and so keep every run of its lock out. A file another user owns is left
/// as it is (the trust check judges it).
pub(crate) fn keep_private(file: &File, meta: &Meta) -> io::Result<()> {
    if meta.mode & 0o077 == 0 || meta.uid != rustix::process::geteuid().as_raw() {
        return Ok(());
    }
    rustix::fs::fchmod(file, rustix::fs::Mode::from_raw_mode(meta.mode & 0o7700))
        .map_err(io::Error::from)
}

/// The inode an open descriptor names, its kind, length and mtime.
pub(crate) fn meta(file: &File) -> io::Result<Meta> {
    Ok(meta_of(&file.metadata()?))
}

/// What `lstat` says about the path (a symbolic link is described, never
/// followed); `None` when nothing is there.
pub(crate) fn meta_at(path: &Path) -> io::Result<Option<Meta>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(meta_of(&m))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn meta_of(m: &std::fs::Metadata) -> Meta {
    Meta {
        id: Identity {
            dev: m.dev(),
            ino: m.ino(),
        },
        regular: m.file_type().is_file(),
        kind: crate::trust::kind(m.file_type()),
        len: m.len(),
        mtime: Timestamp::new(m.mtime(), m.mtime_nsec() as i32).ok(),
        uid: m.uid(),
        mode: m.mode(),
    }
}

/// The inode a path names now, without following a symlink; `None` when
/// nothing is there.
pub(crate) fn identity_at(path: &Path) -> io::Result<Option<Identity>> {
    Ok(meta_at(path)?.map(|m| m.id))
}

/// Tries to take the mutex without waiting. `Ok(false)` means another open
/// file description holds it.
pub(crate) fn try_lock(file: &File, mode: Mode) -> io::Result<bool> {
    loop {
        let r = match mode {
            Mode::Exclusive => file.try_lock(),
            Mode::Shared => file.try_lock_shared(),
        };
        return match r {
            Ok(()) => Ok(true),
            Err(std::fs::TryLockError::WouldBlock) => Ok(false),
            Err(std::fs::TryLockError::Error(e)) if e.kind() == io::ErrorKind::Interrupted => {
                continue;
            }
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        };
    }
}

/// Drops the mutex. Closing the descriptor would drop it too; unlocking first
/// keeps the critical section exactly as long as the code says.
pub(crate) fn unlock(file: &File) -> io::Result<()> {
    file.unlock()
}

/// Whether an error from `flock` means "this filesystem has no file mutex"
/// rather than an ordinary failure.
pub(crate) fn means_no_mutex(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(rustix::io::Errno::from_raw_os_error),
        Some(rustix::io::Errno::NOLCK | rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::NOSYS)
    )
}

/// Reads the first `min(len, cap)` bytes of the file, where `len` is its
/// length by `fstat` (stable: every writer holds the mutex). One `pread` in
/// the common case; a short read is continued, end of file stops it.
pub(crate) fn read_head(file: &File, len: u64, cap: usize) -> io::Result<Vec<u8>> {
    let want = usize::try_from(len).unwrap_or(usize::MAX).min(cap);
    let mut buf = vec![0u8; want];
    let mut filled = 0;
    while filled < want {
        match file.read_at(&mut buf[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// Replaces the file's first line with `line` (which ends in `\n`), in place.
/// `old_len` is the file's length; a shorter line is padded with spaces
/// before its newline to that length, up to `pad_limit` bytes, so one write
/// replaces the whole content. A file longer than `pad_limit` is trimmed.
pub(crate) fn write_in_place(
    file: &File,
    line: &str,
    old_len: u64,
    pad_limit: usize,
) -> io::Result<()> {
    let old = usize::try_from(old_len).unwrap_or(usize::MAX);
    let body = line.strip_suffix('\n').unwrap_or(line);
    let target = old.min(pad_limit).max(body.len() + 1);
    let mut buf = Vec::with_capacity(target);
    buf.extend_from_slice(body.as_bytes());
    buf.resize(target - 1, b' ');
    buf.push(b'\n');
    file.write_all_at(&buf, 0)?;
    if old > target {
        file.set_len(target as u64)?;
    }
    Ok(())
}

/// Flushes the file's data to stable storage.
pub(crate) fn sync(file: &File) -> io::Result<()> {
    file.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_descriptors_in_one_process_contend() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        let a = create_new(&p).unwrap();
        let b = open(&p, true).unwrap();
        assert!(try_lock(&a, Mode::Exclusive).unwrap());
        assert!(!try_lock(&b, Mode::Exclusive).unwrap());
        assert!(!try_lock(&b, Mode::Shared).unwrap());
        unlock(&a).unwrap();
        assert!(try_lock(&b, Mode::Shared).unwrap());
        assert!(try_lock(&a, Mode::Shared).unwrap());
    }

    #[test]
    fn a_symlink_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = open(&link, true).unwrap_err();
        assert_eq!(
            e.raw_os_error(),
            Some(rustix::io::Errno::LOOP.raw_os_error())
        );
    }

    #[test]
    fn a_shorter_rewrite_is_padded_a_longer_one_extends_a_huge_file_is_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let f = create_new(&dir.path().join("l")).unwrap();
        write_in_place(&f, "0123456789\n", 0, 64).unwrap();
        write_in_place(&f, "abc\n", 11, 64).unwrap();
        assert_eq!(read_head(&f, 11, 100).unwrap(), b"abc       \n");
        write_in_place(&f, "abcdefghijklmn\n", 11, 64).unwrap();
        assert_eq!(read_head(&f, 15, 100).unwrap(), b"abcdefghijklmn\n");
        assert_eq!(read_head(&f, 15, 3).unwrap(), b"abc");
        assert_eq!(read_head(&f, 1000, 100).unwrap().len(), 15);
        f.write_all_at(&[b'x'; 200], 0).unwrap();
        write_in_place(&f, "abc\n", 200, 64).unwrap();
        assert_eq!(read_head(&f, 64, 1000).unwrap().len(), 64);
        assert_eq!(meta(&f).unwrap().len, 64);
    }

    #[test]
    fn no_mutex_errors_are_told_apart() {
        let e = io::Error::from_raw_os_error(rustix::io::Errno::NOLCK.raw_os_error());
        assert!(means_no_mutex(&e));
        let e = io::Error::from_raw_os_error(rustix::io::Errno::OPNOTSUPP.raw_os_error());
        assert!(means_no_mutex(&e));
        let e = io::Error::from_raw_os_error(rustix::io::Errno::ACCESS.raw_os_error());
        assert!(!means_no_mutex(&e));
    }
}
