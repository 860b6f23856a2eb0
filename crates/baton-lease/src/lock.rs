//! The lock: a path, and every read-decide-write on the file there, each one
//! inside `flock(LOCK_EX)` on that same file.
//!
//! [`Lock`] owns the critical section. It opens the file (`O_NOFOLLOW`),
//! takes the mutex (waiting at most [`Options::mutex_wait`]), checks that the
//! path still names the inode it locked (reopening, at most
//! [`REOPEN_ATTEMPTS`] times, when it does not), reads the record, asks
//! [`crate::decide`] for a verdict, and writes the new record in place, all
//! before dropping the mutex. The mutex is held for microseconds and never
//! across a job: the *lease* is the record, not the descriptor. A lease
//! keeps its descriptor ([`Opening`]) for its next section, which locks it
//! and checks with one `lstat` that the path still names that inode, else
//! opens the path again. The acquisition's sections, and the creation of
//! a lock file that does not exist yet, are in `acquire`, which makes the
//! lease ([`crate::Lease`]); the sections here know nothing of leases.
//! Nothing here runs caller code inside the mutex.
//!
//! Failure modes: no `flock` on the filesystem is [`Error::NoMutex`] (fail
//! closed: nothing judged, nothing broken); a record this build does not judge
//! is [`Outcome::VersionConflict`](crate::Outcome::VersionConflict) and is
//! left byte for byte untouched.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

use crate::clock::{Clock, SystemClock};
use crate::decide::{self, Now, Observer, Policy, Verdict};
use crate::error::Error;
use crate::liveness::{Liveness, OsLiveness};
use crate::outcome::{self, Broken, Busy, Inspection};
use crate::record::{self, Body, Free, Held, MAX_RECORD_BYTES};
use crate::sys::file::{self, Identity, Meta, Mode};
use crate::trust::{self, Sticky};

/// How many times the path may be replaced under a contender before it gives
/// up ("not acquired").
pub const REOPEN_ATTEMPTS: u32 = 64;

/// How a lock behaves. The defaults suit a job on local disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// How long one renewal keeps the lease fresh. The holder renews well
    /// within it (`baton exec` renews every third of it).
    pub ttl: Duration,
    /// How leases are judged.
    pub policy: Policy,
    /// How long to wait for another process to drop the file's mutex.
    pub mutex_wait: Duration,
    /// Whether every record written is also `fsync`ed (see `DESIGN.md`,
    /// "Durability": off by default, because a same-host lease means nothing
    /// after a crash of the machine).
    pub fsync: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(30),
            policy: Policy::default(),
            mutex_wait: Duration::from_secs(5),
            fsync: false,
        }
    }
}

/// The longest a renewal of a lease with `ttl` waits for the lock file's
/// mutex: a tenth of the TTL, at most a second. It is the `renew_wait` of
/// the self-fencing inequality for a lock file (`DESIGN.md`,
/// "Self-fencing"), so a holder that cannot renew learns it in time.
pub fn mutex_wait_for(ttl: Duration) -> Duration {
    (ttl / 10).min(Duration::from_secs(1))
}

/// What the acquirer writes about its run, besides its identity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claim {
    /// A run id, shown to operators and exported to the job.
    pub run: Option<String>,
    /// An occurrence, kept in the free marker after release.
    pub occ: Option<String>,
    /// The run's soft budget: past it, contenders report the holder as
    /// overrunning rather than busy.
    pub budget: Option<Duration>,
    /// An occurrence to claim with the lease: the acquisition is refused
    /// ([`Outcome::Claimed`](crate::Outcome::Claimed)) when the claim's key
    /// already holds this occurrence or a later one, decided inside the same
    /// critical section.
    pub once: Option<crate::Once>,
    /// The keys whose claims must never be dropped to make room in the
    /// record: the jobs sharing this lock, the claim's own key among them.
    /// When the claims no longer fit, the oldest claims of other keys (jobs
    /// renamed or removed since) go; when those of these keys alone do not
    /// fit, the acquisition fails ([`Error::ClaimsFull`]). A restatement of
    /// the lease keeps them too.
    pub mates: Vec<String>,
}

/// The modes of an operator's break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakMode {
    /// Break only a lease judged dead, expired or abandoned.
    IfDead,
    /// Break whatever is there, a foreign version included.
    Force,
}

/// A lock file and how to judge it. Cheap to clone.
#[derive(Clone)]
pub struct Lock {
    path: PathBuf,
    opts: Options,
    clock: Arc<dyn Clock>,
    live: Arc<dyn Liveness>,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("path", &self.path)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

/// An open lock file and the inode it was opened on. A lease keeps the one
/// its acquisition opened, so that each later critical section takes the
/// mutex on it and checks with one `lstat` that the path still names that
/// inode, instead of opening the path again; when the path names another
/// inode (or nothing), the section opens the path as a first one does.
#[derive(Debug, Clone)]
pub(crate) struct Opening {
    file: Arc<std::fs::File>,
    id: Identity,
}

impl Opening {
    /// The lock file `file`, opened on inode `id`.
    pub(crate) fn new(file: std::fs::File, id: Identity) -> Self {
        Self {
            file: Arc::new(file),
            id,
        }
    }

    /// The device the opened lock file is on.
    pub(crate) fn dev(&self) -> u64 {
        self.id.dev()
    }
}

pub(crate) struct Section {
    opening: Opening,
    bytes: Vec<u8>,
    len: u64,
    mtime: Option<Timestamp>,
    body: Body,
}

pub(crate) enum Opened {
    Section(Section),
    Missing,
    Busy(Busy),
}

impl Lock {
    /// A lock at `path`, with default options, the system clock and this
    /// machine's process table. Nothing is touched until it is used.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            opts: Options::default(),
            clock: Arc::new(SystemClock),
            live: Arc::new(OsLiveness),
        }
    }

    /// The same lock with other options.
    pub fn with_options(mut self, opts: Options) -> Self {
        self.opts = opts;
        self
    }

    /// The same lock judged with another clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The same lock judged with another source of liveness evidence.
    pub fn with_liveness(mut self, live: Arc<dyn Liveness>) -> Self {
        self.live = live;
        self
    }

    /// The lock file `name` in this lock's directory, judged as this one.
    pub(crate) fn beside(&self, name: &str) -> Lock {
        Lock {
            path: self.dir().join(name),
            ..self.clone()
        }
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    pub(crate) fn clock(&self) -> &dyn Clock {
        &*self.clock
    }

    /// Reads the record and judges it, changing nothing. A missing file or
    /// directory is [`Verdict::Absent`].
    ///
    /// # Errors
    ///
    /// I/O failures, a path that is no lock file, no `flock`, or
    /// [`Error::MutexTimeout`] when a writer held the mutex too long.
    pub fn inspect(&self) -> Result<Inspection, Error> {
        let opened = match self.open_locked(Mode::Shared, false) {
            // No directory, no lock file: nothing has run under this lock.
            Err(Error::MissingDirectory { .. }) => Opened::Missing,
            other => other?,
        };
        match opened {
            Opened::Missing => Ok(Inspection {
                path: self.path.clone(),
                body: None,
                raw: None,
                mtime: None,
                verdict: Verdict::Absent,
            }),
            Opened::Busy(Busy::MutexHeld { waited, .. }) => Err(Error::MutexTimeout {
                path: self.path.clone(),
                waited,
            }),
            Opened::Busy(_) => Err(Error::MutexTimeout {
                path: self.path.clone(),
                waited: self.opts.mutex_wait,
            }),
            Opened::Section(s) => {
                let verdict = self.judge(&s, &Observer::here(), self.now());
                Ok(Inspection {
                    path: self.path.clone(),
                    raw: Some(outcome::first_line(&s.bytes)),
                    mtime: s.mtime,
                    body: Some(s.body.clone()),
                    verdict,
                })
            }
        }
    }

    /// An operator's break: replaces the lease with a free marker (keeping
    /// its fence and occurrence) when `mode` allows it.
    ///
    /// # Errors
    ///
    /// As [`Lock::inspect`].
    pub fn break_lease(&self, mode: BreakMode) -> Result<Broken, Error> {
        let section = match self.open_locked(Mode::Exclusive, true)? {
            Opened::Missing => {
                return Ok(Broken::NothingHeld {
                    verdict: Verdict::Absent,
                });
            }
            Opened::Busy(Busy::MutexHeld { waited, .. }) => {
                return Err(Error::MutexTimeout {
                    path: self.path.clone(),
                    waited,
                });
            }
            Opened::Busy(_) => {
                return Err(Error::MutexTimeout {
                    path: self.path.clone(),
                    waited: self.opts.mutex_wait,
                });
            }
            Opened::Section(s) => s,
        };
        let verdict = self.judge(&section, &Observer::here(), self.now());
        if matches!(verdict, Verdict::Free(_)) {
            return Ok(Broken::NothingHeld { verdict });
        }
        if mode == BreakMode::IfDead && !verdict.claimable() {
            return Ok(Broken::Refused { verdict });
        }
        let occ = match &section.body {
            Body::Held(h) => h.occ.clone(),
            _ => None,
        };
        // A forced break never lowers the fence: what a damaged record still
        // says about it is kept, and the next fence follows the larger.
        let fence = decide::prior_fence(Some(&section.body))
            .or_else(|| record::salvage_fence(&section.bytes));
        let free = Free {
            version: record::VERSION,
            fence,
            released: Some(micros(self.clock.wall())),
            occ,
            claims: decide::prior_claims(Some(&section.body)),
        };
        self.write(&section, &free.render())?;
        Ok(Broken::Freed {
            verdict,
            raw: outcome::first_line(&section.bytes),
        })
    }

    /// `claims` with `once` added, fitted into the record, or
    /// [`Error::ClaimsFull`].
    pub(crate) fn fit(
        &self,
        claims: &crate::Claims,
        once: &crate::Once,
        mates: &[String],
    ) -> Result<crate::Claims, Error> {
        let now = self.now().wall.as_second();
        claims
            .fitted(once, mates, now)
            .ok_or_else(|| Error::ClaimsFull {
                path: self.path.clone(),
                key: once.key.clone(),
                count: claims.len(),
            })
    }

    pub(crate) fn now(&self) -> Now {
        Now {
            wall: self.clock.wall(),
            boot: self.clock.boot(),
        }
    }

    pub(crate) fn judge(&self, s: &Section, here: &Observer, now: Now) -> Verdict {
        decide::decide(
            Some(&s.body),
            s.mtime,
            here,
            now,
            &self.opts.policy,
            &*self.live,
        )
    }

    /// Opens the file and takes its mutex; the section holds it until dropped.
    pub(crate) fn open_locked(&self, mode: Mode, write: bool) -> Result<Opened, Error> {
        for _ in 0..REOPEN_ATTEMPTS {
            let f = match file::open(&self.path, write) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let dir = self.dir();
                    return match std::fs::symlink_metadata(&dir) {
                        Ok(m) if m.is_dir() => {
                            // An absent file is trusted to mean "free" only
                            // where nobody else could have removed it.
                            trust::check_dir_meta(&dir, &m, Sticky::Allowed)?;
                            Ok(Opened::Missing)
                        }
                        Ok(_) => Err(not_a_dir(dir)),
                        Err(_) => Err(Error::MissingDirectory { dir }),
                    };
                }
                Err(e) => return Err(self.open_error(e)),
            };
            // A lock file others may open (one `flock -n` left, made with a
            // umask of 022) is made private before its mutex is asked for:
            // any reader could hold the mutex, and one that does must not
            // keep it open to the next. OK to ignore a failure (a read-only
            // file system): the file is judged as it is below, and nothing
            // else depends on its mode.
            let exposed = file::meta(&f).ok().and_then(|m| {
                // Only a regular file nobody else may write: anything else
                // is refused below, before it is judged (a writer's open
                // descriptor would survive any `chmod`, and with it the
                // power to rewrite the record).
                if !m.regular || m.mode & 0o022 != 0 {
                    return None;
                }
                let _ = file::keep_private(&f, &m);
                (m.mode & 0o077 != 0).then_some(m.mode & 0o7777)
            });
            // The mutex first: the length and the content read below must be
            // the ones no writer can change until this section ends.
            if let Some(waited) = self.take_mutex(&f, mode)? {
                return Ok(Opened::Busy(Busy::MutexHeld { waited, exposed }));
            }
            let meta = file::meta(&f).map_err(|e| Error::io("inspect", &self.path, e))?;
            self.check_file(&meta)?;
            let dir = self.dir();
            let dir_meta =
                std::fs::symlink_metadata(&dir).map_err(|e| Error::io("inspect", &dir, e))?;
            trust::check_dir_meta(&dir, &dir_meta, Sticky::Allowed)?;
            let at_path =
                file::identity_at(&self.path).map_err(|e| Error::io("inspect", &self.path, e))?;
            if at_path != Some(meta.id) {
                continue; // Replaced or removed between open and lock: reopen.
            }
            let opening = Opening {
                file: Arc::new(f),
                id: meta.id,
            };
            return self.read_section(opening, &meta, None).map(Opened::Section);
        }
        Ok(Opened::Busy(Busy::Unstable {
            attempts: REOPEN_ATTEMPTS,
        }))
    }

    /// [`Lock::open_locked`] for a write, on `held` first: its mutex taken,
    /// and the section read from it when the path still names its inode.
    /// The directory was judged when `held` was opened; the inode is the
    /// same, and what could replace it since is met by the `lstat` here,
    /// which sends the section back to the path.
    ///
    /// `written` is the record the caller last wrote there, as rendered:
    /// when the file holds exactly it, it is not parsed again.
    pub(crate) fn reopen_locked(
        &self,
        held: Option<&Opening>,
        written: Option<(&str, &Held)>,
    ) -> Result<Opened, Error> {
        let Some(held) = held else {
            return self.open_locked(Mode::Exclusive, true);
        };
        if let Some(waited) = self.take_mutex(&held.file, Mode::Exclusive)? {
            return Ok(Opened::Busy(Busy::MutexHeld {
                waited,
                exposed: None,
            }));
        }
        // `None`: the path names another inode, or nothing.
        let read = match file::meta_at(&self.path) {
            Ok(Some(meta)) if meta.id == held.id => Some(
                self.check_file(&meta)
                    .and_then(|()| self.read_section(held.clone(), &meta, written)),
            ),
            Ok(_) => None,
            Err(e) => Some(Err(Error::io("inspect", &self.path, e))),
        };
        match read {
            Some(Ok(section)) => Ok(Opened::Section(section)),
            other => {
                // OK to ignore: nothing was written under the mutex, and it
                // drops with the descriptor anyway.
                let _ = file::unlock(&held.file);
                match other {
                    Some(Err(e)) => Err(e),
                    _ => self.open_locked(Mode::Exclusive, true),
                }
            }
        }
    }

    /// Refuses a locked inode that is not a lock file this user may trust.
    fn check_file(&self, meta: &Meta) -> Result<(), Error> {
        if !meta.regular {
            return Err(self.not_a_lock(meta.kind.into()));
        }
        trust::check_file(&self.path, meta.uid, meta.mode)?;
        if meta.len > MAX_RECORD_BYTES as u64 {
            return Err(self.not_a_lock(format!(
                "a file of {} bytes (no lock record is longer than {MAX_RECORD_BYTES})",
                meta.len
            )));
        }
        Ok(())
    }

    /// Reads and parses the record of a locked, checked inode; a record
    /// that is byte for byte the `written` one (padding aside) is that one.
    fn read_section(
        &self,
        opening: Opening,
        meta: &Meta,
        written: Option<(&str, &Held)>,
    ) -> Result<Section, Error> {
        let bytes = file::read_head(&opening.file, meta.len, MAX_RECORD_BYTES)
            .map_err(|e| Error::io("read", &self.path, e))?;
        let body = match written {
            Some((line, held)) if record::is_padded(&bytes, line) => Body::Held(held.clone()),
            _ => Body::parse(&bytes),
        };
        if let Body::NotALock(why) = body {
            return Err(self.not_a_lock(format!("a file whose content is no lock record ({why})")));
        }
        Ok(Section {
            opening,
            bytes,
            len: meta.len,
            mtime: meta.mtime,
            body,
        })
    }

    /// Takes the mutex, polling for at most `mutex_wait`. `Some(waited)` when
    /// another process kept it that long.
    pub(crate) fn take_mutex(
        &self,
        f: &std::fs::File,
        mode: Mode,
    ) -> Result<Option<Duration>, Error> {
        if file::try_lock(f, mode).map_err(|e| self.lock_error(e))? {
            return Ok(None);
        }
        let start = self.clock.boot();
        let mut pause = Duration::from_micros(50);
        loop {
            let waited = self.clock.boot().saturating_sub(start);
            if waited >= self.opts.mutex_wait {
                return Ok(Some(waited));
            }
            self.clock.sleep(pause);
            if file::try_lock(f, mode).map_err(|e| self.lock_error(e))? {
                return Ok(None);
            }
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    pub(crate) fn write(&self, s: &Section, line: &str) -> Result<(), Error> {
        let f = &s.opening.file;
        file::write_in_place(f, line, s.len, MAX_RECORD_BYTES)
            .map_err(|e| Error::io("write", &self.path, e))?;
        if self.opts.fsync {
            file::sync(f).map_err(|e| Error::io("sync", &self.path, e))?;
        }
        Ok(())
    }

    pub(crate) fn dir(&self) -> PathBuf {
        match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        }
    }

    fn open_error(&self, e: std::io::Error) -> Error {
        match e.raw_os_error().map(rustix::io::Errno::from_raw_os_error) {
            Some(rustix::io::Errno::LOOP) => self.not_a_lock("a symbolic link".into()),
            Some(rustix::io::Errno::ISDIR) => self.not_a_lock("a directory".into()),
            Some(rustix::io::Errno::NOTDIR) => not_a_dir(self.dir()),
            _ => Error::io("open", &self.path, e),
        }
    }

    fn not_a_lock(&self, what: String) -> Error {
        Error::NotALockFile {
            path: self.path.clone(),
            what,
            remedy: "look at it, remove it by hand if it is not needed, or choose another lock path",
        }
    }

    pub(crate) fn dir_error(&self, dir: &Path, action: &'static str, e: std::io::Error) -> Error {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::MissingDirectory {
                dir: dir.to_owned(),
            }
        } else {
            Error::io(action, dir, e)
        }
    }

    pub(crate) fn lock_error(&self, e: std::io::Error) -> Error {
        if file::means_no_mutex(&e) {
            Error::NoMutex {
                path: self.path.clone(),
                source: e,
            }
        } else {
            Error::io("lock", &self.path, e)
        }
    }
}

impl Section {
    pub(crate) fn body(&self) -> &Body {
        &self.body
    }

    /// The file's content, as this section read it.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The open file this section reads and writes, to keep for the next.
    pub(crate) fn opening(&self) -> &Opening {
        &self.opening
    }
}

impl Drop for Section {
    fn drop(&mut self) {
        // OK to ignore: closing the descriptor (at once, unless a lease
        // keeps it) drops the mutex too.
        let _ = file::unlock(&self.opening.file);
    }
}

/// The error for a path on the way to the lock file that is not a directory.
fn not_a_dir(path: PathBuf) -> Error {
    Error::NotALockFile {
        path,
        what: "not a directory".into(),
        remedy: "the lock file's directory must be a directory; choose another lock path",
    }
}

/// A timestamp cut to the microsecond, the precision records keep.
pub(crate) fn micros(t: Timestamp) -> Timestamp {
    Timestamp::from_microsecond(t.as_microsecond()).unwrap_or(t)
}

/// A duration cut to the millisecond, the precision records keep.
pub(crate) fn millis(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
