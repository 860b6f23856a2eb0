//! A key's guard: which lock a key (a scheduler's job) last started a run
//! under, that run's fence, and the newest occurrence it claimed, in a
//! small file of its own beside the lock files, so that a key never runs
//! under two locks at once, whatever lock it is given from one run to the
//! next, and an occurrence it started under one lock is not started again
//! under another.
//!
//! A lock excludes the runs that use it; a job whose lock is renamed while
//! it runs would otherwise start beside itself under the new one. So a run
//! that holds a lease takes its key's guard ([`Lock::take_guard`]): under
//! the guard file's own `flock`, it reads the lock and fence the guard
//! names; when that is another lock whose lease is still held under that
//! fence by a holder not provably gone (live, hung or orphaned, judged by
//! [`crate::decide`] as any contender would), the key runs there, and the
//! answer is [`Guarded::Elsewhere`], changing nothing; otherwise the guard
//! is rewritten to name this lock and this fence. A claim of an occurrence
//! at or before the one the guard keeps is refused ([`Guarded::Claimed`]),
//! as the lock's own claims refuse it: the lock's claims are per lock, and
//! the guard's follows the key. [`Lock::guard_of`] asks the same questions
//! without writing, to refuse before a lease is taken. A guard that names
//! another slot of the same lock ([`crate::slot`], `max_concurrent`) is not
//! another lock: its run goes on beside this one by design, and only the
//! guard's claim is asked. A guard that names another lock is judged with
//! every slot of that lock, since the key's runs in its other slots took
//! the guard before the one it names.
//!
//! Two runs of one key under two locks cannot both pass: the guard's mutex
//! orders their takes, and the second finds the first's lock held under the
//! fence the guard names. The order of mutexes is always the guard's, then
//! (to judge) another lock file's, never the reverse: nothing takes a guard
//! inside a lock file's critical section.
//!
//! The file is one line, `guard=1 lock=NAME fence=N [claim=SECS]`, rewritten
//! in place like a lock record; `NAME` is a lock file in the guard's
//! directory. It
//! is created owner-only, never through a symbolic link, and refused when
//! another user owns it or can write it. A guard that cannot be read is an
//! error ([`Error::UnreadableGuard`]): what it named is unknown, so nothing
//! runs until an operator removes it. What it does not cover: a guard
//! deleted while its key runs, like a lock file deleted under its holder
//! (the scheduler asks its ledger for a live run of the key before it
//! starts one; `baton exec` has nothing else to ask).

use std::path::{Path, PathBuf};

use crate::decide::Verdict;
use crate::error::Error;
use crate::lock::Lock;
use crate::record::Body;
use crate::sys::file::{self, Mode};
use crate::token::Fence;
use crate::trust;

/// The most bytes a guard file holds.
const MAX_GUARD_BYTES: usize = 512;

/// What a key's guard said.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // Made once per run; boxing it buys nothing.
pub enum Guarded {
    /// The key runs under no other lock now. After [`Lock::take_guard`], the
    /// guard names this lock and fence.
    Clear,
    /// The key's run under another lock is still in flight: that lock file,
    /// and what a contender for it would be told of its holder.
    Elsewhere {
        /// The other lock file.
        lock: PathBuf,
        /// Its holder, judged now (live, hung or orphaned).
        verdict: Verdict,
    },
    /// The key already claimed this occurrence or a later one (`at`), under
    /// whichever lock: it has started, and must not start again.
    Claimed {
        /// The newest occurrence the key claimed.
        at: i64,
    },
}

/// What a take of a key's guard changed ([`Lock::take_guard_undoably`]):
/// the fence it named and the claim it held before and after, for
/// [`Lock::withdraw_guard`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardTaken {
    /// The fence of the run that took it.
    pub fence: Fence,
    /// The claim the guard held before.
    pub before: Option<i64>,
    /// The claim it holds since.
    pub claim: Option<i64>,
}

/// What a guard file names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Named {
    lock: String,
    fence: Fence,
    claim: Option<i64>,
}

/// Why a guard file's bytes name no lock: the `why` of
/// [`Error::UnreadableGuard`].
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum Unnamed {
    /// Bytes that are not UTF-8.
    #[error("it is not text")]
    NotText,
    /// A word that is no field of a guard.
    #[error("{0:?} is no field of a guard")]
    Field(String),
    /// A line missing a field, or with one out of range.
    #[error("{0:?} is not `guard=1 lock=NAME fence=N [claim=SECS]`")]
    Line(String),
}

impl Named {
    fn render(&self) -> String {
        let claim = self
            .claim
            .map(|c| format!(" claim={c}"))
            .unwrap_or_default();
        format!("guard=1 lock={} fence={}{claim}\n", self.lock, self.fence)
    }

    /// `None` for an empty file (just created, nothing named yet).
    fn parse(bytes: &[u8]) -> Result<Option<Self>, Unnamed> {
        let text = std::str::from_utf8(bytes).map_err(|_| Unnamed::NotText)?;
        let line = text.lines().next().unwrap_or("").trim();
        if line.is_empty() {
            return Ok(None);
        }
        let (mut version, mut lock, mut fence, mut claim) = (None, None, None, Ok(None));
        for word in line.split_ascii_whitespace() {
            match word.split_once('=') {
                Some(("guard", v)) => version = Some(v),
                Some(("lock", v)) => lock = Some(v),
                Some(("fence", v)) => fence = v.parse::<u64>().ok().filter(|&f| f > 0),
                Some(("claim", v)) => claim = v.parse::<i64>().map(Some),
                _ => return Err(Unnamed::Field(word.to_owned())),
            }
        }
        match (version, lock, fence, claim) {
            (Some("1"), Some(lock), Some(fence), Ok(claim)) if valid_name(lock) => {
                Ok(Some(Named {
                    lock: lock.to_owned(),
                    fence: Fence::new(fence),
                    claim,
                }))
            }
            _ => Err(Unnamed::Line(line.to_owned())),
        }
    }
}

/// The error of a guard that could not be opened: what stands at its path
/// when it is no file (a symbolic link, never followed; a directory), else
/// the I/O error.
fn refused(guard: &Path, action: &'static str, e: std::io::Error) -> Error {
    let what = match e.raw_os_error().map(rustix::io::Errno::from_raw_os_error) {
        Some(rustix::io::Errno::LOOP) => "it is a symbolic link, which baton never follows",
        Some(rustix::io::Errno::ISDIR) => "it is a directory",
        _ => return Error::io(action, guard, e),
    };
    Error::UnreadableGuard {
        path: guard.to_owned(),
        why: what.into(),
    }
}

/// A lock file's name as a guard may name it: one path component.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_graphic() && b != b'/')
}

impl Lock {
    /// Whether the key whose guard is the file `guard` (in this lock's
    /// directory) runs under another lock now, or (for `occurrence`) already
    /// claimed it or a later one. Changes nothing; a missing guard is
    /// [`Guarded::Clear`].
    ///
    /// # Errors
    ///
    /// I/O failures, an untrusted guard, [`Error::UnreadableGuard`], or an
    /// error judging the other lock: then whether the key runs elsewhere is
    /// unknown, and it must not start.
    pub fn guard_of(&self, guard: &Path, occurrence: Option<i64>) -> Result<Guarded, Error> {
        match self.open_guard(guard, Mode::Shared)? {
            None => Ok(Guarded::Clear),
            Some((_f, _len, named)) => self.judge_guard(named.as_ref(), occurrence),
        }
    }

    /// Takes the guard `guard` (in this lock's directory) for the run that
    /// holds this lock's lease under `fence`, and claims `occurrence` for
    /// it: [`Guarded::Elsewhere`] when the key's run under another lock is
    /// in flight, [`Guarded::Claimed`] when the key claimed that occurrence
    /// or a later one (either way nothing changed), else the guard names
    /// this lock, `fence` and the newer of its claim and `occurrence` from
    /// now on.
    ///
    /// # Errors
    ///
    /// As [`Lock::guard_of`], and failures to create or write the guard.
    pub fn take_guard(
        &self,
        guard: &Path,
        fence: Fence,
        occurrence: Option<i64>,
    ) -> Result<Guarded, Error> {
        self.take_guard_undoably(guard, fence, occurrence)
            .map(|(found, _)| found)
    }

    /// [`Lock::take_guard`], saying also, when the guard was taken, what
    /// it claimed before and now ([`GuardTaken`]), so that a run that does
    /// not start after all can take its claim back
    /// ([`Lock::withdraw_guard`]).
    ///
    /// # Errors
    ///
    /// As [`Lock::take_guard`].
    pub fn take_guard_undoably(
        &self,
        guard: &Path,
        fence: Fence,
        occurrence: Option<i64>,
    ) -> Result<(Guarded, Option<GuardTaken>), Error> {
        let (f, len, named) = self.open_guard_exclusive(guard)?;
        let found = self.judge_guard(named.as_ref(), occurrence)?;
        if found != Guarded::Clear {
            return Ok((found, None));
        }
        let before = named.and_then(|n| n.claim);
        let mine = Named {
            lock: self.file_name()?,
            fence,
            claim: before.max(occurrence),
        };
        self.write_guard(guard, &f, len, &mine)?;
        let taken = GuardTaken {
            fence,
            before,
            claim: mine.claim,
        };
        Ok((Guarded::Clear, Some(taken)))
        // The guard's mutex ends with `f`.
    }

    /// Takes back the claim a take of the guard made ([`GuardTaken`]), for
    /// a run that took it and then did not start (its start could be
    /// recorded nowhere): the guard claims what it claimed before, so that
    /// a later run, under this lock or another, may start the occurrence.
    /// Only while the guard still names this lock, the take's fence and its
    /// claim (nothing took it since); `true` when the claim was taken
    /// back.
    ///
    /// # Errors
    ///
    /// As [`Lock::take_guard`].
    pub fn withdraw_guard(&self, guard: &Path, taken: &GuardTaken) -> Result<bool, Error> {
        if taken.claim == taken.before {
            return Ok(false);
        }
        let (f, len, named) = self.open_guard_exclusive(guard)?;
        let ours = Named {
            lock: self.file_name()?,
            fence: taken.fence,
            claim: taken.claim,
        };
        if named.as_ref() != Some(&ours) {
            return Ok(false);
        }
        let back = Named {
            claim: taken.before,
            ..ours
        };
        self.write_guard(guard, &f, len, &back)?;
        Ok(true)
    }

    /// Opens the guard and takes its mutex to change it.
    fn open_guard_exclusive(
        &self,
        guard: &Path,
    ) -> Result<(std::fs::File, u64, Option<Named>), Error> {
        self.open_guard(guard, Mode::Exclusive)?.ok_or_else(|| {
            Error::io(
                "open",
                guard,
                std::io::Error::other("it was replaced again and again while it was read"),
            )
        })
    }

    /// Writes `named` over the guard `f` (of `len` bytes), under its mutex.
    fn write_guard(
        &self,
        guard: &Path,
        f: &std::fs::File,
        len: u64,
        named: &Named,
    ) -> Result<(), Error> {
        file::write_in_place(f, &named.render(), len, MAX_GUARD_BYTES)
            .map_err(|e| Error::io("write", guard, e))?;
        if self.options().fsync {
            file::sync(f).map_err(|e| Error::io("sync", guard, e))?;
        }
        Ok(())
    }

    /// Opens the guard (creating it empty for an exclusive take), takes its
    /// mutex in `mode` (held until the file is dropped) and reads it: the
    /// file, its length, what it names. `None` for a shared look at a
    /// guard that does not exist, or one replaced under every attempt.
    #[allow(clippy::type_complexity)] // A private triple, used twice.
    fn open_guard(
        &self,
        guard: &Path,
        mode: Mode,
    ) -> Result<Option<(std::fs::File, u64, Option<Named>)>, Error> {
        let write = mode == Mode::Exclusive;
        for _ in 0..crate::lock::REOPEN_ATTEMPTS {
            let f = match file::open(guard, write) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !write => return Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    match file::create_new(guard) {
                        Ok(f) => f,
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                        Err(e) => return Err(refused(guard, "create", e)),
                    }
                }
                Err(e) => return Err(refused(guard, "open", e)),
            };
            if let Some(waited) = self.take_mutex(&f, mode)? {
                return Err(Error::MutexTimeout {
                    path: guard.to_owned(),
                    waited,
                });
            }
            let meta = file::meta(&f).map_err(|e| Error::io("inspect", guard, e))?;
            let unreadable = |why: String| Error::UnreadableGuard {
                path: guard.to_owned(),
                why,
            };
            if !meta.regular {
                return Err(unreadable(meta.kind.to_owned()));
            }
            trust::check_file(guard, meta.uid, meta.mode)?;
            let at_path = file::identity_at(guard).map_err(|e| Error::io("inspect", guard, e))?;
            if at_path != Some(meta.id) {
                continue; // Removed or replaced between open and lock.
            }
            if meta.len > MAX_GUARD_BYTES as u64 {
                return Err(unreadable(format!("a file of {} bytes", meta.len)));
            }
            let bytes = file::read_head(&f, meta.len, MAX_GUARD_BYTES)
                .map_err(|e| Error::io("read", guard, e))?;
            let named = Named::parse(&bytes).map_err(|why| unreadable(why.to_string()))?;
            return Ok(Some((f, meta.len, named)));
        }
        Ok(None)
    }

    /// Whether the lock `named` names is another lock, held under its fence
    /// by a holder that may still run (judged with this lock's options and
    /// evidence), then whether its claim covers `occurrence`.
    fn judge_guard(
        &self,
        named: Option<&Named>,
        occurrence: Option<i64>,
    ) -> Result<Guarded, Error> {
        let Some(named) = named else {
            return Ok(Guarded::Clear);
        };
        let here = self.file_name()?;
        if named.lock == here {
            // This lock's own lease excludes its other runs, and its own
            // claims refuse an occurrence started under it, by themselves
            // (and tell a contender that the holder runs that occurrence
            // now, before it is recorded anywhere else: the guard cannot).
            return Ok(Guarded::Clear);
        }
        if !crate::slot::same_lock(&named.lock, &here) {
            if let Some(elsewhere) = self.held_elsewhere(named)? {
                return Ok(elsewhere);
            }
            if let Some(elsewhere) = self.other_slot_held(&named.lock)? {
                return Ok(elsewhere);
            }
        }
        // Another slot of this lock (`max_concurrent`): its runs beside
        // this one are what the slots are for, but what it claimed is the
        // key's, and the guard is the one record every slot's run passes.
        self.claimed_in_guard(named, occurrence)
    }

    /// The lock `named` names, when its lease is still held under the
    /// guard's fence by a holder that may still run.
    fn held_elsewhere(&self, named: &Named) -> Result<Option<Guarded>, Error> {
        let other = self.beside(&named.lock);
        let seen = other.inspect()?;
        let held_there = matches!(&seen.body, Some(Body::Held(h)) if h.fence == named.fence);
        if held_there && !seen.verdict.claimable() {
            return Ok(Some(Guarded::Elsewhere {
                lock: seen.path,
                verdict: seen.verdict,
            }));
        }
        Ok(None)
    }

    /// Another slot of the lock `named` (the guard's, not this one) held
    /// by a holder that may still run. The guard names only the slot whose
    /// run took it last; the key's runs in its other slots
    /// (`max_concurrent`) took it before and may run on, under fences it no
    /// longer names. Slots 2 and up belong to the key alone (a lock with
    /// slots is never shared), but slot 1 may be another key's now, and a
    /// holder's record does not say whose run it is: any holder not
    /// provably gone is taken for the key's, so the key waits for that
    /// lock to be let go rather than run beside itself.
    fn other_slot_held(&self, named: &str) -> Result<Option<Guarded>, Error> {
        let (base, named_slot) = crate::slot::slot_of(named);
        for k in (1..=crate::slot::MOST).filter(|&k| k != named_slot) {
            let other = self.beside(&format!("{}.lock", crate::slot::slot_name(base, k)));
            if !other.path().exists() {
                continue;
            }
            let seen = other.inspect()?;
            if matches!(&seen.body, Some(Body::Held(_))) && !seen.verdict.claimable() {
                return Ok(Some(Guarded::Elsewhere {
                    lock: seen.path,
                    verdict: seen.verdict,
                }));
            }
        }
        Ok(None)
    }

    /// Whether the guard's claim covers `occurrence`.
    fn claimed_in_guard(&self, named: &Named, occurrence: Option<i64>) -> Result<Guarded, Error> {
        // That run is over, or its holder provably gone: what it claimed
        // started, under the other lock.
        // As a lock's claims refuse (`Claims::refuses`): a claim far in the
        // future stands for the occurrence it names, not for those before.
        let now = self.now().wall.as_second();
        let ahead = |at: i64| at > now.saturating_add(crate::claims::FUTURE_TOLERANCE);
        match (named.claim, occurrence) {
            (Some(at), Some(wanted)) if at == wanted || (at > wanted && !ahead(at)) => {
                Ok(Guarded::Claimed { at })
            }
            _ => Ok(Guarded::Clear),
        }
    }

    fn file_name(&self) -> Result<String, Error> {
        self.path()
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| valid_name(n))
            .map(str::to_owned)
            .ok_or_else(|| Error::InvalidField {
                field: "lock file name",
                value: self.path().display().to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_round_trips_and_anything_else_is_refused() {
        let mut n = Named {
            lock: "db.lock".into(),
            fence: Fence::new(42),
            claim: None,
        };
        assert_eq!(Named::parse(n.render().as_bytes()), Ok(Some(n.clone())));
        n.claim = Some(1_767_225_600);
        assert_eq!(Named::parse(n.render().as_bytes()), Ok(Some(n.clone())));
        assert_eq!(Named::parse(b""), Ok(None));
        assert_eq!(Named::parse(b"   \n"), Ok(None));
        for bad in [
            &b"guard=2 lock=a fence=1\n"[..],
            b"guard=1 lock=../x fence=1\n",
            b"guard=1 lock=a fence=0\n",
            b"guard=1 lock=a\n",
            b"guard=1 lock=a fence=1 extra=1\n",
            b"guard=1 lock=a fence=1 claim=x\n",
            b"\xff",
        ] {
            assert!(
                Named::parse(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
