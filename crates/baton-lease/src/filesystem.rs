//! Whether the lock's `flock` can be trusted on the filesystem a path is
//! on: a question asked before anything is relied on (`baton doctor`), not
//! on every acquisition.
//!
//! A lease is only as good as its mutex. On a local filesystem `flock(2)`
//! is the kernel's own, between every process of the host. On a network
//! filesystem it is emulated, or not shared: NFS turns it into POSIX locks
//! through the server's lock manager, which a server restart or a
//! partition loses silently; CIFS/SMB, 9p, AFS and the FUSE network
//! filesystems (sshfs, s3fs, rclone, …) lock on the client only, so two
//! hosts that share the directory both take the same lock. The lock itself
//! refuses only where `flock` fails outright (`Error::NoMutex`); this
//! module names the filesystems where it may *succeed* and still not
//! exclude, from `statfs(2)`'s magic number and, for FUSE (whose magic is
//! the same for every filesystem), the mount table's subtype.
//!
//! It decides from what the kernel reports and never opens, creates or
//! locks anything.

use std::io;
use std::path::{Path, PathBuf};

use crate::sys::kernel;

/// The filesystem a path is on, and what that means for `flock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filesystem {
    /// `statfs(2)`'s `f_type`.
    pub magic: u32,
    /// Its name: the mount table's type (`ext4`, `nfs4`, `fuse.sshfs`), else
    /// the magic number's (`nfs`), else the number in hexadecimal.
    pub name: String,
    /// The path whose filesystem this is: the one asked about, or its
    /// nearest ancestor that exists.
    pub path: PathBuf,
    /// Whether `flock` there excludes every process that shares the files.
    pub locking: Locking,
}

/// Whether `flock` can be trusted on a filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locking {
    /// A local filesystem: the kernel's own `flock`.
    Local,
    /// A network filesystem: `flock` is emulated or kept on one client only.
    /// The text says why, for a refusal.
    Network(String),
    /// Neither known to be local nor known to be shared (another FUSE
    /// filesystem, an unknown magic number). The text says why.
    Unsure(String),
}

/// The filesystem `path` is on (or, when `path` does not exist yet, its
/// nearest ancestor that does).
///
/// # Errors
///
/// When `statfs(2)` fails on a path that exists (permission denied on the
/// way), or no ancestor exists (a relative path with none left).
pub fn of(path: &Path) -> io::Result<Filesystem> {
    let mut at = path;
    let magic = loop {
        match kernel::fs_magic(at) {
            Ok(m) => break m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => match at.parent() {
                Some(p) if !p.as_os_str().is_empty() => at = p,
                _ => return Err(e),
            },
            Err(e) => return Err(e),
        }
    };
    let real = std::fs::canonicalize(at).unwrap_or_else(|_| at.to_owned());
    let mount = kernel::mountinfo()
        .ok()
        .and_then(|text| mount_type_in(&text, &real));
    Ok(classify(magic, mount.as_deref(), at))
}

/// Local filesystems baton knows by their magic number.
const LOCAL: &[(u32, &str)] = &[
    (0xEF53, "ext4"),
    (0x5846_5342, "xfs"),
    (0x9123_683E, "btrfs"),
    (0x0102_1994, "tmpfs"),
    (0x8584_58F6, "ramfs"),
    (0x794C_7630, "overlay"),
    (0x2FC1_2FC1, "zfs"),
    (0xF2F5_2010, "f2fs"),
    (0xCA45_1A4E, "bcachefs"),
    (0x5265_4973, "reiserfs"),
    (0x3153_464A, "jfs"),
    (0x3434, "nilfs"),
    (0x4D44, "vfat"),
    (0x2011_BAB0, "exfat"),
    (0x7366_746E, "ntfs3"),
    (0x7371_7368, "squashfs"),
    (0x9660, "iso9660"),
];

/// Network and cluster filesystems, with why `flock` is not trusted there.
const NETWORK: &[(u32, &str, &str)] = &[
    (
        0x6969,
        "nfs",
        "NFS emulates flock with POSIX locks through the server's lock manager, which a server \
         restart or a network partition can lose while the holder still runs",
    ),
    (
        0xFF53_4D42,
        "cifs",
        "CIFS/SMB keeps flock on this client only (or maps it to the server's byte-range locks, \
         depending on mount options)",
    ),
    (
        0xFE53_4D42,
        "smb2",
        "CIFS/SMB keeps flock on this client only (or maps it to the server's byte-range locks, \
         depending on mount options)",
    ),
    (0x517B, "smb", "SMB keeps flock on this client only"),
    (0x0102_1997, "9p", "9p keeps flock on this client only"),
    (0x5346_414F, "afs", "AFS keeps flock on this client only"),
    (0x6B41_4653, "afs", "AFS keeps flock on this client only"),
    (
        0x00C3_6400,
        "ceph",
        "CephFS locks through its metadata servers, with its own failure modes that baton does \
         not judge",
    ),
    (0x7375_7245, "coda", "Coda keeps flock on this client only"),
    (0x564C, "ncpfs", "NCP keeps flock on this client only"),
    (
        0x0BD0_0BD0,
        "lustre",
        "Lustre's flock is off unless mounted with -o flock, and local with -o localflock",
    ),
    (
        0x7461_636F,
        "ocfs2",
        "OCFS2's flock is cluster-wide only through its cluster stack, which baton does not \
         judge",
    ),
    (
        0x0116_1970,
        "gfs2",
        "GFS2's flock is cluster-wide only through its cluster stack, which baton does not judge",
    ),
    (
        0x2003_0528,
        "orangefs",
        "OrangeFS keeps flock on this client only",
    ),
];

/// FUSE's magic number, the same for every FUSE filesystem.
const FUSE: u32 = 0x6573_5546;

/// FUSE filesystems that reach another machine: the kernel keeps `flock`
/// on this client, so nothing excludes a process on another host.
const FUSE_NETWORK: &[&str] = &[
    "sshfs",
    "s3fs",
    "rclone",
    "gcsfuse",
    "goofys",
    "glusterfs",
    "ceph-fuse",
    "juicefs",
    "mfs",
    "moosefs",
    "lizardfs",
    "seaweedfs",
    "blobfuse",
    "blobfuse2",
    "davfs",
    "curlftpfs",
    "smbnetfs",
];

/// What `magic` (and, for FUSE, the mount table's type) says about `flock`:
/// a pure function of what the kernel reported.
pub fn classify(magic: u32, mount_type: Option<&str>, path: &Path) -> Filesystem {
    let path = path.to_owned();
    let named = |fallback: &str| mount_type.unwrap_or(fallback).to_owned();
    if magic == FUSE {
        let name = named("fuse");
        let sub = name
            .strip_prefix("fuse.")
            .or_else(|| name.strip_prefix("fuseblk."))
            .unwrap_or("");
        let locking = if FUSE_NETWORK.contains(&sub) {
            Locking::Network(format!(
                "{name} reaches another machine, and the kernel keeps flock on a FUSE \
                 filesystem on this client only: a process on another host that shares the \
                 files takes the same lock"
            ))
        } else {
            Locking::Unsure(format!(
                "{name} is a FUSE filesystem: flock there is kept by this kernel alone, which \
                 excludes this host's processes only; if it reaches another machine, a process \
                 there takes the same lock"
            ))
        };
        return Filesystem {
            magic,
            name,
            path,
            locking,
        };
    }
    if let Some((_, n, why)) = NETWORK.iter().find(|(m, ..)| *m == magic) {
        return Filesystem {
            magic,
            name: named(n),
            path,
            locking: Locking::Network((*why).to_owned()),
        };
    }
    if let Some((_, n)) = LOCAL.iter().find(|(m, _)| *m == magic) {
        return Filesystem {
            magic,
            name: named(n),
            path,
            locking: Locking::Local,
        };
    }
    let name = named(&format!("0x{magic:x}"));
    Filesystem {
        locking: Locking::Unsure(format!(
            "{name} (magic 0x{magic:x}) is a filesystem baton does not know: it cannot tell \
             whether flock there excludes every process that shares the files"
        )),
        magic,
        name,
        path,
    }
}

/// The type the mount table gives the mount `path` (absolute, links
/// resolved) is on: the longest mount point that contains it, the last
/// mounted when several are stacked.
pub fn mount_type_in(mountinfo: &str, path: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(point) = left.split(' ').nth(4) else {
            continue;
        };
        let Some(kind) = right.split(' ').next() else {
            continue;
        };
        let point = unescape(point);
        if !path.starts_with(&point) {
            continue;
        }
        let depth = Path::new(&point).components().count();
        if best.as_ref().is_none_or(|(d, _)| depth >= *d) {
            best = Some((depth, kind.to_owned()));
        }
    }
    best.map(|(_, k)| k)
}

/// The mount table's octal escapes (`\040` for a space) undone.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("/var/lib/baton")
    }

    #[test]
    fn network_filesystems_are_refused_with_their_reason() {
        for (magic, name) in [
            (0x6969, "nfs"),
            (0xFF53_4D42, "cifs"),
            (0xFE53_4D42, "smb2"),
            (0x0102_1997, "9p"),
        ] {
            let f = classify(magic, None, p());
            assert_eq!(f.name, name);
            let Locking::Network(why) = &f.locking else {
                panic!("{name}: {:?}", f.locking)
            };
            assert!(why.contains("flock"), "{why}");
        }
        let f = classify(0x6969, Some("nfs4"), p());
        assert_eq!(f.name, "nfs4");
    }

    #[test]
    fn fuse_is_judged_by_its_subtype() {
        let f = classify(FUSE, Some("fuse.sshfs"), p());
        assert!(matches!(f.locking, Locking::Network(_)), "{f:?}");
        let f = classify(FUSE, Some("fuse.bindfs"), p());
        assert!(matches!(f.locking, Locking::Unsure(_)), "{f:?}");
        let f = classify(FUSE, None, p());
        assert!(matches!(f.locking, Locking::Unsure(_)), "{f:?}");
    }

    #[test]
    fn local_and_unknown_filesystems() {
        assert_eq!(classify(0xEF53, Some("ext4"), p()).locking, Locking::Local);
        assert_eq!(classify(0x0102_1994, None, p()).name, "tmpfs");
        let f = classify(0x1234_5678, None, p());
        assert_eq!(f.name, "0x12345678");
        assert!(matches!(f.locking, Locking::Unsure(_)), "{f:?}");
    }

    #[test]
    fn the_longest_mount_point_wins() {
        let table = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
40 27 0:50 / /mnt/nfs rw - nfs4 srv:/x rw\n\
41 27 0:51 / /mnt/nfs\\040two rw shared:1 - fuse.sshfs u@h: rw\n";
        let at = |s: &str| mount_type_in(table, Path::new(s));
        assert_eq!(at("/var/lib/baton").as_deref(), Some("ext4"));
        assert_eq!(at("/mnt/nfs/state").as_deref(), Some("nfs4"));
        assert_eq!(at("/mnt/nfs two/state").as_deref(), Some("fuse.sshfs"));
        // A name that only begins like a mount point is not inside it.
        assert_eq!(at("/mnt/nfsx").as_deref(), Some("ext4"));
    }

    #[test]
    fn this_hosts_temporary_directory_has_a_filesystem() {
        let dir = tempfile::tempdir().unwrap();
        let f = of(&dir.path().join("not/yet")).unwrap();
        assert_eq!(f.path, dir.path());
        assert!(!f.name.is_empty());
    }
}
