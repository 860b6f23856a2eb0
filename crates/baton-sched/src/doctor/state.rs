//! The state directory: that it is a directory only this user or root can
//! change (and so are `locks/`, `logs/`, `ends/` and the directories above
//! them, as every run demands), its owner and mode, and the filesystem it
//! is on: a network filesystem, where `flock` may succeed and still not
//! exclude, is refused with the reason.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use baton_lease::filesystem::{self, Locking};
use baton_lease::trust;

use super::finding::Finding;
use crate::config::Config;

const CHECK: &str = "state-dir";
const FS: &str = "filesystem";

/// The subdirectories a run creates and checks.
const SUBDIRS: [&str; 3] = ["locks", "logs", "ends"];

/// Checks the state directory of `c`.
pub(super) fn check(c: &Config) -> Vec<Finding> {
    let dir = &c.settings.state_dir.value;
    let from = c.settings.state_dir.provenance();
    let mut found = vec![directory(dir, &from)];
    found.push(on_filesystem(dir, crate::store::shared(c)));
    found
}

fn directory(dir: &Path, from: &str) -> Finding {
    let shown = dir.display();
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // The first run creates it; what is above it must already be
            // trusted then.
            let Some(above) = dir.ancestors().skip(1).find(|a| a.exists()) else {
                return Finding::fail(
                    CHECK,
                    format!("{shown} ({from}) does not exist, and nothing above it does"),
                    "give state_dir an absolute path",
                );
            };
            return match trust::check_dir_path(above, 0) {
                Ok(()) => Finding::ok(
                    CHECK,
                    format!("{shown} ({from}) does not exist yet: the first run creates it (0700)"),
                ),
                Err(u) => Finding::fail(
                    CHECK,
                    format!("{shown} ({from}) does not exist yet, and cannot be made safely: {u}"),
                    u.remedy,
                ),
            };
        }
        Err(e) => {
            return Finding::fail(
                CHECK,
                format!("failed to inspect {shown} ({from}): {e}"),
                "fix the permissions of the directories on the way to it",
            );
        }
    };
    if !meta.is_dir() && !meta.file_type().is_symlink() {
        return Finding::fail(
            CHECK,
            format!(
                "{shown} ({from}) is {}, not a directory",
                trust::kind(meta.file_type())
            ),
            "remove it, or set state_dir to a directory",
        );
    }
    let subs: Vec<_> = SUBDIRS
        .iter()
        .map(|s| dir.join(s))
        .filter(|s| s.is_dir())
        .collect();
    let trusted = if subs.is_empty() {
        trust::check_dir_path(dir, 1)
    } else {
        subs.iter().try_for_each(|s| trust::check_dir_path(s, 2))
    };
    let meta = std::fs::metadata(dir).unwrap_or(meta);
    let (uid, mode) = (meta.uid(), meta.mode() & 0o7777);
    let owner = user_name(uid);
    if let Err(u) = trusted {
        let me = trust::me();
        let hint = if me == 0 && uid != 0 {
            format!(
                "; if baton runs as {owner}, run the doctor as that user (`sudo -u {owner} baton \
                 doctor`)"
            )
        } else {
            String::new()
        };
        return Finding::fail(
            CHECK,
            format!(
                "{shown} ({from}) is refused: {} is {}",
                u.path.display(),
                u.why
            ),
            format!("{}{hint}", u.remedy),
        );
    }
    Finding::ok(
        CHECK,
        format!("{shown} ({from}): owner {owner}, mode {mode:04o}"),
    )
}

fn on_filesystem(dir: &Path, store: bool) -> Finding {
    judge_filesystem(dir, filesystem::of(dir), store)
}

/// What the filesystem `found` under `dir` means for baton (with `store`,
/// the leases and the ledger are in PostgreSQL): a pure function of what
/// the kernel reported.
fn judge_filesystem(
    dir: &Path,
    found: std::io::Result<filesystem::Filesystem>,
    store: bool,
) -> Finding {
    let fs = match found {
        Ok(fs) => fs,
        Err(e) => {
            return Finding::warn(
                FS,
                format!("failed to read the filesystem of {}: {e}", dir.display()),
                "check that the directories on the way to it can be searched",
            );
        }
    };
    let at = if fs.path == dir {
        String::new()
    } else {
        format!(" (at {}, which exists)", fs.path.display())
    };
    let local = "put state_dir on a local filesystem; for schedulers on several hosts, share \
                 leases through [store] url (PostgreSQL), never through a shared directory";
    match fs.locking {
        Locking::Local => Finding::ok(
            FS,
            format!(
                "{}{at}: {}, local: flock is the kernel's own",
                dir.display(),
                fs.name
            ),
        ),
        Locking::Network(why) => {
            let what = if store {
                "baton's logs and run files there rely on it"
            } else {
                "the lock files and the ledger there rely on it"
            };
            Finding::fail(
                FS,
                format!(
                    "{}{at} is on {}, a network filesystem, where flock is not trusted: {why}; \
                     {what}",
                    dir.display(),
                    fs.name
                ),
                local,
            )
        }
        Locking::Unsure(why) => Finding::warn(
            FS,
            format!("{}{at}: {why}", dir.display()),
            format!("if it is not local, {local}"),
        ),
    }
}

/// A user's name from `/etc/passwd`, else `uid N`.
fn user_name(uid: u32) -> String {
    passwd_name(uid).unwrap_or_else(|| format!("uid {uid}"))
}

/// A user's name in `/etc/passwd`.
pub(super) fn passwd_name(uid: u32) -> Option<String> {
    if uid == 0 {
        return Some("root".into());
    }
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        let id = f.nth(1)?;
        (id.parse() == Ok(uid)).then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::super::finding::Status;
    use super::*;

    /// Every network filesystem baton knows, by `statfs(2)` magic (or, for
    /// FUSE, the mount table's type): the list the refusal must cover.
    const NETWORK: &[(u32, Option<&str>, &str)] = &[
        (0x6969, None, "nfs"),
        (0x6969, Some("nfs4"), "nfs4"),
        (0xFF53_4D42, None, "cifs"),
        (0xFE53_4D42, None, "smb2"),
        (0x517B, None, "smb"),
        (0x0102_1997, None, "9p"),
        (0x5346_414F, None, "afs"),
        (0x6B41_4653, None, "afs"),
        (0x00C3_6400, None, "ceph"),
        (0x7375_7245, None, "coda"),
        (0x564C, None, "ncpfs"),
        (0x0BD0_0BD0, None, "lustre"),
        (0x7461_636F, None, "ocfs2"),
        (0x0116_1970, None, "gfs2"),
        (0x2003_0528, None, "orangefs"),
        (FUSE, Some("fuse.sshfs"), "fuse.sshfs"),
        (FUSE, Some("fuse.s3fs"), "fuse.s3fs"),
        (FUSE, Some("fuse.rclone"), "fuse.rclone"),
        (FUSE, Some("fuse.glusterfs"), "fuse.glusterfs"),
        (FUSE, Some("fuse.ceph-fuse"), "fuse.ceph-fuse"),
        (FUSE, Some("fuse.juicefs"), "fuse.juicefs"),
        (FUSE, Some("fuse.davfs"), "fuse.davfs"),
    ];

    const FUSE: u32 = 0x6573_5546;

    fn judged(magic: u32, mount: Option<&str>, store: bool) -> Finding {
        let dir = Path::new("/srv/baton");
        judge_filesystem(dir, Ok(filesystem::classify(magic, mount, dir)), store)
    }

    #[test]
    fn every_network_filesystem_fails_with_its_reason_and_the_way_out() {
        for &(magic, mount, name) in NETWORK {
            let f = judged(magic, mount, false);
            assert_eq!(f.status, Status::Fail, "{name}: {f:?}");
            assert_eq!(f.check, "filesystem");
            assert!(
                f.message.starts_with(&format!(
                    "/srv/baton is on {name}, a network filesystem, where flock is not trusted: "
                )),
                "{name}: {}",
                f.message
            );
            assert!(
                f.message
                    .ends_with("the lock files and the ledger there rely on it"),
                "{}",
                f.message
            );
            assert!(
                f.fix.as_deref().unwrap().contains("local filesystem"),
                "{f:?}"
            );
            // With a store, the leases are elsewhere; the logs still fail.
            let f = judged(magic, mount, true);
            assert_eq!(f.status, Status::Fail, "{name}: {f:?}");
            assert!(f.message.ends_with("logs and run files there rely on it"));
        }
    }

    #[test]
    fn a_local_filesystem_passes_and_one_baton_does_not_know_warns() {
        assert_eq!(judged(0xEF53, Some("ext4"), false).status, Status::Ok);
        assert_eq!(judged(0x0102_1994, None, false).status, Status::Ok);
        assert_eq!(
            judged(FUSE, Some("fuse.bindfs"), false).status,
            Status::Warn
        );
        assert_eq!(judged(0x1234_5678, None, false).status, Status::Warn);
        let dir = Path::new("/srv/baton");
        let unreadable = Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert_eq!(
            judge_filesystem(dir, unreadable, false).status,
            Status::Warn
        );
    }
}
