//! The job's process group as evidence, for a holder known to be gone: does
//! anything of its job still run, and if something seems to, is it likely
//! the job at all?
//!
//! It owns one rule and one report. The rule: a group whose leader is the
//! init of the step's own pid namespace (`jinit=1`) and whose leader, the
//! one the record names by its start time, is gone (or a zombie, or its pid
//! now someone else's) holds nothing of the step, because the kernel kills
//! every process of a pid namespace when its init exits and leaves init a
//! zombie only once they are gone. Such a group is no evidence of life,
//! whoever runs in it now. The report: for any other group that still has
//! members, when its leader is gone and every member runs as another user
//! than the holder, it says so ([`Strangers`]), for a person to act on.
//! The report never changes a verdict: a job's processes may change user
//! (a setuid program), so members are evidence whoever owns them.
//!
//! It never reads the kernel itself: [`Liveness`] answers, and an answer it
//! cannot give counts as "runs" (fail closed).

use crate::liveness::{GroupState, Liveness, ProcessState};
use crate::record::{Held, Leader};

/// A user, by id, with its name when the system has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The user id.
    pub uid: u32,
    /// Its name (`/etc/passwd`), when known.
    pub name: Option<String>,
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "uid {}", self.uid)?;
        if let Some(n) = &self.name {
            write!(f, " ({n})")?;
        }
        Ok(())
    }
}

/// A job group whose leader is gone and whose every running member belongs
/// to a user other than the holder: most likely the group id was reused by
/// another user's processes after the job's group emptied. Only a report:
/// the lease stays refused (a job's processes may have changed user), and an
/// operator who has checked breaks it (`baton lock break --force`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strangers {
    /// The holder's user, as the record names it.
    pub holder: Owner,
    /// The users the group's running members belong to.
    pub members: Vec<Owner>,
}

impl std::fmt::Display for Strangers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("its leader is gone and every member belongs to ")?;
        for (i, m) in self.members.iter().enumerate() {
            if i > 0 {
                f.write_str(" or ")?;
            }
            write!(f, "{m}")?;
        }
        write!(
            f,
            ", not to the holder's {}: most likely another user's processes reusing the group id, \
             not the job",
            self.holder
        )
    }
}

/// What the job's group says of a gone holder's job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Group {
    /// Nothing of the job runs in it.
    Empty,
    /// Something may run: the job, unless `strangers` says otherwise.
    Runs {
        /// Set when every member is another user's and the leader is gone.
        strangers: Option<Strangers>,
    },
}

/// Judges group `pgid`, which the record `h` names as its job's.
pub(super) fn judge(h: &Held, pgid: u32, live: &dyn Liveness) -> Group {
    let leader_gone = || {
        h.jstart.is_some_and(|start| {
            matches!(
                live.process(pgid, start),
                ProcessState::Gone | ProcessState::Zombie | ProcessState::Reused
            )
        })
    };
    if h.leader == Leader::NamespaceInit && leader_gone() {
        return Group::Empty;
    }
    if live.group(pgid, h.jstart) == GroupState::Empty {
        return Group::Empty;
    }
    let strangers = match h.uid {
        Some(uid) if h.leader == Leader::Command && leader_gone() => strangers(uid, pgid, live),
        _ => None,
    };
    Group::Runs { strangers }
}

fn strangers(holder: u32, pgid: u32, live: &dyn Liveness) -> Option<Strangers> {
    let uids = live.group_owners(pgid)?;
    if uids.is_empty() || uids.contains(&holder) {
        return None;
    }
    let owner = |uid| Owner {
        uid,
        name: live.user_name(uid),
    };
    Some(Strangers {
        holder: owner(holder),
        members: uids.into_iter().map(owner).collect(),
    })
}
