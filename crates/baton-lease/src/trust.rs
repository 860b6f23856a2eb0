//! Who may have prepared the files baton writes: its locks, and beside them
//! in the state directory its ledger and its logs.
//!
//! A lock is only as safe as the directory it lives in: a user who can write
//! the directory can delete a holder's lock file while its job runs (the next
//! run overlaps it), plant a live-looking record that skips every run, or put
//! a symbolic link where a log should be. So, as ssh's `StrictModes` does,
//! baton refuses a lock file, or a directory on the way to it, that a user
//! other than the invoking one or root owns or can write. A directory that
//! others may write is accepted only with the sticky bit (`/tmp`,
//! `/run/lock`), and only where the caller allows it: there, nobody but its
//! owner can remove or rename an entry. The same rules hold for every other
//! file baton writes ([`Role`]): it must be a regular file (never a symbolic
//! link, a named pipe, a socket, a device or a directory), owned by the
//! invoking user or root, and writable by nobody else. Group-write bits are
//! the owner's own only when no ACL entry lets another user or group write
//! (the crate's `acl` module reads them): with an ACL, those bits are its
//! mask.
//!
//! This module decides from metadata and never opens, creates or changes
//! anything. [`crate::Lock`] checks the lock file and its directory on every
//! open; callers that choose a directory (a state directory) check the whole
//! path to it once with [`check_dir_path`]; callers that write other files
//! check what they opened with [`check_meta`].

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why a file or directory is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is {why}: {remedy}", path.display())]
pub struct Untrusted {
    /// The file or directory.
    pub path: PathBuf,
    /// What is wrong with it.
    pub why: String,
    /// What to do.
    pub remedy: String,
}

/// Whether a directory that others may write is accepted when it has the
/// sticky bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sticky {
    /// Accepted (a shared directory such as `/tmp` or `/run/lock`).
    Allowed,
    /// Refused: the directory must be writable by its owner alone.
    Refused,
}

/// What a file baton writes is for: the words of a refusal depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A lock file.
    LockFile,
    /// The SQLite ledger (`baton.db` and the files SQLite keeps beside it).
    Ledger,
    /// A log, or a marker baton keeps beside its logs.
    Log,
    /// A configuration file (`baton.toml`, a `jobs.d/` drop-in): baton
    /// reads it rather than writes it, but it names the commands baton
    /// runs, as whoever runs baton.
    Config,
}

/// The user this process acts as.
pub fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn owner_ok(uid: u32) -> bool {
    uid == 0 || uid == me()
}

fn owner_name(uid: u32) -> String {
    if uid == 0 {
        "root".into()
    } else {
        format!("uid {uid}")
    }
}

/// Who may own what baton trusts: `root`, or `uid N or root`.
fn trusted_owners() -> String {
    match me() {
        0 => "root".into(),
        uid => format!("{} or root", owner_name(uid)),
    }
}

/// What kind of file a type is, in words (`a named pipe`).
pub fn kind(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_file() {
        "a regular file"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Checks a lock file's owner and mode (from its `fstat`).
///
/// # Errors
///
/// When another user owns it, or its group or others may write it.
pub fn check_file(path: &Path, uid: u32, mode: u32) -> Result<(), Untrusted> {
    check_owned(path, uid, mode, Role::LockFile)
}

/// Checks the owner and mode of a file baton writes, from its `fstat` (or
/// its `lstat`, for a file another program opens).
///
/// # Errors
///
/// When another user owns it, or its group or others may write it.
pub fn check_owned(path: &Path, uid: u32, mode: u32, role: Role) -> Result<(), Untrusted> {
    let shown = path.display();
    if !owner_ok(uid) {
        let remedy = match role {
            Role::LockFile => "a lock file another user controls could be rewritten under a \
                               running job; remove it once nothing runs under it, or choose \
                               another lock path"
                .to_owned(),
            Role::Ledger => format!(
                "another user could rewrite the records runs are decided by (pauses, the queue, \
                 watermarks); `chown {} {shown}` once you trust what it holds, or move it aside",
                owner_name(me())
            ),
            Role::Log => format!(
                "another user could rewrite what baton logs there, or point it elsewhere; \
                 remove it (baton creates it afresh) or `chown {} {shown}`",
                owner_name(me())
            ),
            Role::Config => format!(
                "another user could make baton run any command as {}; `chown {} {shown}` once \
                 you have read what it says",
                owner_name(me()),
                owner_name(me())
            ),
        };
        return Err(Untrusted {
            path: path.to_owned(),
            why: format!("owned by {}, not by {}", owner_name(uid), trusted_owners()),
            remedy,
        });
    }
    if mode & 0o022 != 0 {
        let remedy = match role {
            Role::LockFile => format!("`chmod go-w {shown}`, or choose another lock path"),
            Role::Ledger => format!("`chmod 0600 {shown}`"),
            Role::Log => format!("`chmod go-w {shown}`"),
            Role::Config => format!(
                "another user could make baton run any command as {}; `chmod go-w {shown}`",
                owner_name(me())
            ),
        };
        return Err(Untrusted {
            path: path.to_owned(),
            why: format!(
                "writable by its group or by others (mode {:04o})",
                mode & 0o7777
            ),
            remedy,
        });
    }
    Ok(())
}

/// Checks a file baton writes (not a lock file, whose opening refuses what
/// is no lock file itself): a regular file, then its owner and mode.
/// `meta` is its `fstat`, or its `lstat` (a symbolic link is refused, never
/// followed).
///
/// # Errors
///
/// When it is not a regular file, another user owns it, or its group or
/// others may write it.
pub fn check_meta(path: &Path, meta: &std::fs::Metadata, role: Role) -> Result<(), Untrusted> {
    let t = meta.file_type();
    if !t.is_file() {
        let why = if t.is_symlink() {
            "a symbolic link, which baton never follows".to_owned()
        } else {
            format!("{}, not a regular file", kind(t))
        };
        let remedy = match role {
            Role::Log => "remove it (baton creates the file afresh); nothing was written to it",
            Role::Ledger | Role::LockFile | Role::Config => {
                "nothing was opened: remove it, or put the file itself there"
            }
        };
        return Err(Untrusted {
            path: path.to_owned(),
            why,
            remedy: remedy.into(),
        });
    }
    check_owned(path, meta.uid(), meta.mode(), role)
}

/// Whether group `gid` is its owner's own, as Debian and most distributions
/// give each user (a "user private group", which makes a umask of 002
/// harmless): `/etc/group` names it after the user, lists no member, and it
/// is the user's primary group in `/etc/passwd`, and nobody else's. A group
/// that cannot be read there (from a directory service) is not taken for
/// one: what cannot be checked is not trusted.
pub fn private_group(uid: u32, gid: u32) -> bool {
    let (Ok(passwd), Ok(group)) = (
        std::fs::read_to_string("/etc/passwd"),
        std::fs::read_to_string("/etc/group"),
    ) else {
        return false;
    };
    private_group_in(&passwd, &group, uid, gid)
}

/// [`private_group`], on the text of `/etc/passwd` and `/etc/group`.
fn private_group_in(passwd: &str, group: &str, uid: u32, gid: u32) -> bool {
    let users: Vec<(&str, u32, u32)> = passwd
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            Some((
                *f.first()?,
                f.get(2)?.parse().ok()?,
                f.get(3)?.parse().ok()?,
            ))
        })
        .collect();
    let Some(&(name, _, primary)) = users.iter().find(|u| u.1 == uid) else {
        return false;
    };
    let alone = users.iter().filter(|u| u.2 == gid).all(|u| u.1 == uid);
    let listed = group.lines().any(|l| {
        let f: Vec<&str> = l.split(':').collect();
        f.first() == Some(&name)
            && f.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(gid)
            && f.get(3)
                .is_none_or(|m| m.trim().is_empty() || m.trim() == name)
    });
    primary == gid && alone && listed
}

/// Whether mode `mode` with group `gid` lets someone other than owner
/// `uid` write: others may, or a group that is not the owner's own.
fn others_may_write(uid: u32, gid: u32, mode: u32) -> bool {
    mode & 0o002 != 0 || (mode & 0o020 != 0 && !private_group(uid, gid))
}

/// Refuses `path` when its ACL lets a user other than its owner, or a group
/// that is not the owner's own, write it (`risk` says what they could then
/// do). The group bits of a mode with an ACL are the ACL's mask: only when
/// they allow writing can a named entry write.
fn acl_refusal(path: &Path, meta: &std::fs::Metadata, risk: &str) -> Result<(), Untrusted> {
    if meta.mode() & 0o020 == 0 {
        return Ok(());
    }
    let uid = meta.uid();
    let who = match crate::acl::writers(path) {
        Ok(w) => w
            .users
            .iter()
            .find(|&&u| u != uid)
            .map(|&u| owner_name(u))
            .or_else(|| {
                w.groups
                    .iter()
                    .find(|&&g| !private_group(uid, g))
                    .map(|g| format!("gid {g}"))
            }),
        Err(e) => Some(format!("whoever its ACL names (it cannot be read: {e})")),
    };
    match who {
        None => Ok(()),
        Some(who) => Err(Untrusted {
            path: path.to_owned(),
            why: format!(
                "writable by {who} through its ACL (mode {:04o}, with an ACL)",
                meta.mode() & 0o7777
            ),
            remedy: format!("{risk}; remove the entry (`setfacl -b {}`)", path.display()),
        }),
    }
}

/// Checks a configuration file (`baton.toml`, a drop-in), from its
/// `fstat`: a regular file, owned by this user or root, that nobody else
/// may write (its group may, when it is the owner's own group).
///
/// # Errors
///
/// As [`check_meta`].
pub fn check_config(path: &Path, meta: &std::fs::Metadata) -> Result<(), Untrusted> {
    if meta.is_file() {
        acl_refusal(
            path,
            meta,
            "another user could make baton run any command as whoever runs it",
        )?;
    }
    if meta.is_file() && !others_may_write(meta.uid(), meta.gid(), meta.mode()) {
        // Owner still checked; the group's bit is the owner's own.
        return check_owned(path, meta.uid(), meta.mode() & !0o020, Role::Config);
    }
    check_meta(path, meta, Role::Config)
}

/// Checks one directory's owner and mode.
///
/// # Errors
///
/// When another user owns it, or its group or others may write it (unless
/// `sticky` allows a sticky directory).
pub fn check_dir_meta(
    path: &Path,
    meta: &std::fs::Metadata,
    sticky: Sticky,
) -> Result<(), Untrusted> {
    let mode = meta.mode();
    if !owner_ok(meta.uid()) {
        return Err(Untrusted {
            path: path.to_owned(),
            why: format!(
                "a directory owned by {}, not by {}",
                owner_name(meta.uid()),
                trusted_owners()
            ),
            remedy: "another user could delete or replace the files baton keeps in it; `chown` \
                     it, or use a directory you own (for the state directory, --state-dir or \
                     BATON_STATE_DIR; for the configuration, move it)"
                .into(),
        });
    }
    acl_refusal(
        path,
        meta,
        "another user could delete or replace the files baton keeps in it",
    )?;
    let shared = others_may_write(meta.uid(), meta.gid(), mode);
    let sticky_ok = sticky == Sticky::Allowed && mode & 0o1000 != 0;
    if shared && !sticky_ok {
        return Err(Untrusted {
            path: path.to_owned(),
            why: format!(
                "a directory writable by its group or by others (mode {:04o})",
                mode & 0o7777
            ),
            remedy: format!(
                "another user could delete or replace the files baton keeps in it; `chmod go-w \
                 {}`, or use another directory",
                path.display()
            ),
        });
    }
    Ok(())
}

/// Checks `dir` and every directory above it, after resolving symbolic
/// links ([`check_links`] first): each must be owned by this user or root
/// and writable by nobody else. The first `strict` of them (`dir`, then its parent, …) may not be
/// shared at all; those above may be sticky and shared (as `/tmp` is), since
/// nobody can then move what is below them away.
///
/// # Errors
///
/// The first directory on the path that fails, or an I/O error (reported as
/// untrusted: what cannot be checked is not trusted).
pub fn check_dir_path(dir: &Path, strict: usize) -> Result<(), Untrusted> {
    check_links(dir)?;
    let real = std::fs::canonicalize(dir).map_err(|e| Untrusted {
        path: dir.to_owned(),
        why: format!("not a directory that can be checked ({e})"),
        remedy: "create it, or choose another directory".into(),
    })?;
    for (depth, p) in real.ancestors().enumerate() {
        let meta = std::fs::metadata(p).map_err(|e| Untrusted {
            path: p.to_owned(),
            why: format!("not readable ({e})"),
            remedy: "fix its permissions, or choose another directory".into(),
        })?;
        if !meta.is_dir() {
            return Err(Untrusted {
                path: p.to_owned(),
                why: "not a directory".into(),
                remedy: "choose another directory".into(),
            });
        }
        let sticky = if depth < strict {
            Sticky::Refused
        } else {
            Sticky::Allowed
        };
        check_dir_meta(p, &meta, sticky)?;
    }
    Ok(())
}

/// How many symbolic links [`check_links`] follows in one path, as the
/// kernel's own limit (`ELOOP`).
const MAX_LINKS: usize = 40;

/// Checks every symbolic link met on the way to `path`, followed as the
/// kernel follows them: each must be owned by this user or root, and the
/// directory it sits in writable by nobody else unless it is sticky. A
/// link another user owns (in `/tmp`, say) could be pointed elsewhere at
/// any moment, between two runs or during one, and with it every lock and
/// record below it; the directories the path finally resolves to are
/// checked by [`check_dir_path`], but a link is not among them.
///
/// # Errors
///
/// The first link that fails, or one that cannot be read (what cannot be
/// checked is not trusted).
pub fn check_links(path: &Path) -> Result<(), Untrusted> {
    use std::path::Component;
    let unreadable = |p: &Path, e: std::io::Error| Untrusted {
        path: p.to_owned(),
        why: format!("not a path that can be checked ({e})"),
        remedy: "create it, or choose another directory".into(),
    };
    let mut todo: Vec<std::ffi::OsString> = Vec::new();
    let push_all = |todo: &mut Vec<std::ffi::OsString>, p: &Path| {
        for c in p.components().rev() {
            todo.push(c.as_os_str().to_owned());
        }
    };
    push_all(&mut todo, path);
    let mut at = PathBuf::new();
    let mut links = 0;
    while let Some(part) = todo.pop() {
        match Path::new(&part).components().next() {
            Some(Component::RootDir) => {
                at = PathBuf::from("/");
                continue;
            }
            Some(Component::CurDir) | None => continue,
            Some(Component::ParentDir) => {
                at.pop();
                continue;
            }
            Some(Component::Prefix(_) | Component::Normal(_)) => {}
        }
        let next = at.join(&part);
        let meta = match std::fs::symlink_metadata(&next) {
            Ok(m) => m,
            // Nothing there yet (or a file on the way, which whoever
            // creates the directory names): whatever is created there is
            // checked once it exists.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(());
            }
            Err(e) => return Err(unreadable(&next, e)),
        };
        if !meta.file_type().is_symlink() {
            at = next;
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(Untrusted {
                path: path.to_owned(),
                why: format!("a path through more than {MAX_LINKS} symbolic links"),
                remedy: "give the directory's own path".into(),
            });
        }
        if !owner_ok(meta.uid()) {
            return Err(Untrusted {
                path: next,
                why: format!(
                    "a symbolic link owned by {}, not by {}",
                    owner_name(meta.uid()),
                    trusted_owners()
                ),
                remedy: "its owner could point it elsewhere at any moment, and every lock and \
                         record below it with it; give the directory's own path, or replace \
                         the link with one you own"
                    .into(),
            });
        }
        let dir_meta = std::fs::metadata(&at).map_err(|e| unreadable(&at, e))?;
        check_dir_meta(&at, &dir_meta, Sticky::Allowed)?;
        let target = std::fs::read_link(&next).map_err(|e| unreadable(&next, e))?;
        push_all(&mut todo, &target);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_group_is_its_owners_own_only_when_nobody_else_can_be_in_it() {
        let passwd = "root:x:0:0::/root:/bin/sh\nann:x:1000:1000::/home/ann:/bin/sh\n\
                      bob:x:1001:1001::/home/bob:/bin/sh\ncarl:x:1002:1001::/:/bin/sh\n\
                      dee:x:1003:100::/:/bin/sh\n";
        let group = "root:x:0:\nann:x:1000:\nbob:x:1001:\nusers:x:100:dee\nops:x:2000:ann,bob\n";
        assert!(private_group_in(passwd, group, 1000, 1000));
        assert!(private_group_in(passwd, group, 0, 0));
        // Another user's primary group too.
        assert!(!private_group_in(passwd, group, 1001, 1001));
        // A shared group, by name or by members.
        assert!(!private_group_in(passwd, group, 1003, 100));
        assert!(!private_group_in(passwd, group, 1000, 2000));
        // Not the user's primary group, or not in /etc/group at all.
        assert!(!private_group_in(passwd, group, 1000, 1001));
        assert!(!private_group_in(passwd, group, 1000, 4242));
    }

    #[test]
    fn group_or_world_writable_files_are_refused() {
        let p = Path::new("/x.lock");
        assert!(check_file(p, me(), 0o100600).is_ok());
        assert!(check_file(p, me(), 0o100644).is_ok());
        assert!(check_file(p, 0, 0o100644).is_ok());
        let e = check_file(p, me(), 0o100666).unwrap_err();
        assert!(
            e.to_string().contains("writable by its group or by others"),
            "{e}"
        );
        assert!(check_file(p, me(), 0o100620).is_err());
    }

    #[test]
    fn a_file_owned_by_another_user_is_refused() {
        let other = if me() == 65534 { 65533 } else { 65534 };
        let e = check_file(Path::new("/x.lock"), other, 0o100600).unwrap_err();
        assert!(e.to_string().contains("owned by uid"), "{e}");
    }

    #[test]
    fn the_trusted_owners_are_named_once_each() {
        let other = if me() == 65534 { 65533 } else { 65534 };
        let e = check_owned(Path::new("/s/baton.db"), other, 0o100600, Role::Ledger).unwrap_err();
        let text = e.to_string();
        assert!(!text.contains("root or root"), "{text}");
        if me() == 0 {
            assert!(
                text.contains(&format!("owned by uid {other}, not by root:")),
                "{text}"
            );
        } else {
            assert!(
                text.contains(&format!("not by uid {} or root:", me())),
                "{text}"
            );
        }
    }

    #[test]
    fn only_a_regular_file_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "").unwrap();
        let meta = std::fs::symlink_metadata(&file).unwrap();
        assert!(check_meta(&file, &meta, Role::Log).is_ok());
        let link = tmp.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let e = check_meta(&link, &std::fs::symlink_metadata(&link).unwrap(), Role::Log);
        assert!(e.unwrap_err().why.contains("symbolic link"));
        let e = check_meta(
            tmp.path(),
            &std::fs::metadata(tmp.path()).unwrap(),
            Role::Log,
        );
        assert_eq!(e.unwrap_err().why, "a directory, not a regular file");
    }

    #[test]
    fn links_are_followed_as_the_kernel_follows_them_and_a_loop_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        std::fs::create_dir_all(base.join("a/b")).unwrap();
        // A relative link with `..`, and a link to a link.
        std::os::unix::fs::symlink("../a/b", base.join("a/up")).unwrap();
        std::os::unix::fs::symlink(base.join("a/up"), base.join("l")).unwrap();
        check_links(&base.join("l/c/d")).unwrap();
        assert_eq!(
            std::fs::canonicalize(base.join("l")).unwrap(),
            std::fs::canonicalize(base.join("a/b")).unwrap()
        );
        std::os::unix::fs::symlink(base.join("loop2"), base.join("loop1")).unwrap();
        std::os::unix::fs::symlink(base.join("loop1"), base.join("loop2")).unwrap();
        let e = check_links(&base.join("loop1/x")).unwrap_err();
        assert!(e.why.contains("symbolic links"), "{e}");
    }

    #[test]
    fn a_link_in_a_directory_others_may_write_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::symlink(tmp.path(), open.join("l")).unwrap();
        let e = check_links(&open.join("l/x")).unwrap_err();
        assert!(e.why.contains("writable by its group or by others"), "{e}");
        // Sticky, as /tmp: only the link's owner may replace it.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        check_links(&open.join("l/x")).unwrap();
    }

    #[test]
    fn a_shared_directory_needs_the_sticky_bit_and_permission() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("d");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(check_dir_path(&d, 0).is_err());
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(check_dir_path(&d, 0).is_ok());
        assert!(check_dir_path(&d, 1).is_err());
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(check_dir_path(&d, 1).is_ok());
        // Below a shared sticky directory (as below /tmp), a private one is fine.
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let inner = d.join("inner");
        std::fs::create_dir(&inner).unwrap();
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(check_dir_path(&inner, 1).is_ok());
        // Below a shared directory without the sticky bit, nothing is safe.
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_dir_path(&inner, 1).unwrap_err();
        assert_eq!(e.path, std::fs::canonicalize(&d).unwrap());
    }
}
