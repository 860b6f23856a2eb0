//! The witness of a lock with N slots: N names, so that N holders at once
//! are legitimate and the (N + 1)th is seen at the instant it appears.
//!
//! The names are spelt as the scheduler spells a lock's slots
//! ([`baton_lease::slot::slot_name`]): `witness`, `witness@2`, …,
//! `witness@N`. A claim links a private file made for this claim alone
//! (its content is the owner's pid and start time and a number no other
//! claim of this process uses) to the first name that is free, trying them
//! in order. When every name exists, the claimant reads them all, then all
//! again: a name whose content is the same both times held the same claim
//! throughout (a claim is linked once and never comes back once removed),
//! so every such name was held at the one instant between the two reads.
//! Every name held then by a live owner while this claimant believes it
//! holds the lock is N + 1 holders at that instant: an overlap, observed
//! there and then, never reconciled afterwards. A name that changed between
//! the reads proves nothing, and the claim starts over.
//!
//! Killed holders are as with one name: a name whose owner is dead is no
//! holder, the claimant never removes it and waits for the parent, which
//! removes a dead owner's name after it killed and reaped that owner.
//!
//! After a successful claim the same double read counts the holders at one
//! instant (the claimant among them), for the report's "most holders at
//! once". It is a lower bound of that instant's holders, never more.
//!
//! This module owns the N names and their reading; it never decides what a
//! trial counts, and never removes a name it does not own.

use std::io;
use std::path::{Path, PathBuf};

use baton_lease::{Clock, SystemClock};

use super::{Claim, DEAD_OWNER_PATIENCE, WitnessError, read_text, unique};
use crate::proc::Owner;

/// The name of slot `k` (1-based) of the witness at `base`.
pub(super) fn name(base: &Path, k: u32) -> PathBuf {
    let file = base
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    base.with_file_name(baton_lease::slot::slot_name(&file, k).as_ref())
}

/// Claims the first free of the `slots` names at `base` for `me`; returns
/// the claim and, when ours, the name to drop.
pub(super) fn claim(
    base: &Path,
    me: &Owner,
    slots: u32,
) -> Result<(Claim, Option<PathBuf>), WitnessError> {
    let private = base.with_extension(format!("{}.{}.own", me.pid, unique()));
    let text = format!("{} {} {}\n", me.pid, me.start, unique());
    std::fs::write(&private, text).map_err(|source| WitnessError::Io {
        what: "write",
        path: private.clone(),
        source,
    })?;
    let got = claim_with(base, &private, slots);
    // OK to ignore: the private file is this claim's alone; a leftover one
    // is in the trial directory, which is removed after the trial.
    let _ = std::fs::remove_file(&private);
    got
}

fn claim_with(
    base: &Path,
    private: &Path,
    slots: u32,
) -> Result<(Claim, Option<PathBuf>), WitnessError> {
    let deadline = SystemClock.boot() + DEAD_OWNER_PATIENCE;
    loop {
        for k in 1..=slots {
            let n = name(base, k);
            match std::fs::hard_link(private, &n) {
                Ok(()) => {
                    let holders = holders(base, slots)?;
                    return Ok((Claim::Ours { holders }, Some(n)));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(WitnessError::Io {
                        what: "link the witness",
                        path: n,
                        source,
                    });
                }
            }
        }
        // Every name existed when it was tried: who held them at one instant?
        let (held, stable) = snapshot(base, slots)?;
        if !stable {
            continue; // a name came or went meanwhile: try them again
        }
        let dead = held.iter().find(|o| !o.is_alive()).copied();
        match dead {
            None => {
                let other = held.first().copied().unwrap_or(Owner { pid: 0, start: 0 });
                return Ok((Claim::Overlap(other), None));
            }
            Some(owner) if SystemClock.boot() > deadline => {
                return Err(WitnessError::DeadOwnerStayed {
                    path: base.to_owned(),
                    owner,
                });
            }
            Some(_) => SystemClock.sleep(std::time::Duration::from_micros(200)),
        }
    }
}

/// How many names held a claim of a live owner at one instant (a lower
/// bound of the holders then).
fn holders(base: &Path, slots: u32) -> Result<u32, WitnessError> {
    let first = read_all(base, slots)?;
    let second = read_all(base, slots)?;
    let live = first
        .iter()
        .zip(&second)
        .filter_map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) if a == b => Some(parse(a)),
            _ => None,
        })
        .filter(Owner::is_alive)
        .count();
    Ok(u32::try_from(live).unwrap_or(u32::MAX))
}

/// The owners of every name, when every name held the same claim across
/// two reads (`true`); otherwise what was read first and `false`.
fn snapshot(base: &Path, slots: u32) -> Result<(Vec<Owner>, bool), WitnessError> {
    let first = read_all(base, slots)?;
    let second = read_all(base, slots)?;
    let stable = first.iter().all(Option::is_some) && first == second;
    let owners = first.iter().flatten().map(|t| parse(t)).collect();
    Ok((owners, stable))
}

fn read_all(base: &Path, slots: u32) -> Result<Vec<Option<String>>, WitnessError> {
    (1..=slots).map(|k| read_text(&name(base, k))).collect()
}

/// A name's owner; anything unparsable is a live owner, towards reporting.
fn parse(text: &str) -> Owner {
    Owner::parse(text).unwrap_or(Owner { pid: 0, start: 0 })
}

/// The parent's half for N names: removes every name `pid` owned. Returns
/// whether there was one.
pub(super) fn remove_dead_owner(base: &Path, slots: u32, pid: u32) -> Result<bool, WitnessError> {
    let mut any = false;
    for k in 1..=slots {
        any |= super::remove_dead_owner_at(&name(base, k), pid)?;
    }
    Ok(any)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_schedulers_slot_names() {
        let b = Path::new("/t/witness");
        assert_eq!(name(b, 1), Path::new("/t/witness"));
        assert_eq!(name(b, 3), Path::new("/t/witness@3"));
    }

    #[test]
    fn n_live_claims_are_no_overlap_and_the_next_is() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("witness");
        let me = Owner::me().unwrap();
        let (a, na) = claim(&base, &me, 2).unwrap();
        assert_eq!(a, Claim::Ours { holders: 1 });
        let (b, nb) = claim(&base, &me, 2).unwrap();
        assert_eq!(b, Claim::Ours { holders: 2 });
        assert_eq!(nb.as_deref(), Some(name(&base, 2).as_path()));
        let (c, nc) = claim(&base, &me, 2).unwrap();
        assert_eq!(c, Claim::Overlap(me));
        assert_eq!(nc, None);
        std::fs::remove_file(na.unwrap()).unwrap();
        let (d, nd) = claim(&base, &me, 2).unwrap();
        assert_eq!(d, Claim::Ours { holders: 2 });
        assert_eq!(nd.as_deref(), Some(base.as_path()), "the first free name");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "no private file stays: {left:?}");
    }

    #[test]
    fn a_dead_owners_name_is_no_holder_and_only_the_parent_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("witness");
        let me = Owner::me().unwrap();
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        std::fs::write(name(&base, 2), format!("{dead} 1 0\n")).unwrap();
        claim(&base, &me, 2).unwrap(); // slot 1, live
        assert!(!remove_dead_owner(&base, 2, dead + 1).unwrap());
        std::thread::scope(|s| {
            let h = s.spawn(|| claim(&base, &me, 2).unwrap().0);
            SystemClock.sleep(std::time::Duration::from_millis(20));
            assert!(remove_dead_owner(&base, 2, dead).unwrap());
            assert_eq!(h.join().unwrap(), Claim::Ours { holders: 2 });
        });
    }
}
