//! Who a POSIX access ACL lets write a file or directory, besides what its
//! mode bits say.
//!
//! With an extended ACL (`setfacl -m u:someone:rw`), the group bits of a
//! file's mode are the ACL's mask, not its group's permissions: a root-owned
//! file of group `root` showing mode `0660` may be writable by any user the
//! ACL names. [`crate::trust`] asks this module before it takes group-write
//! bits for the owner's own group's. This module only reads the
//! `system.posix_acl_access` attribute (never following a link at the last
//! component) and never changes anything.

use std::path::Path;

/// The attribute the kernel keeps a file's access ACL in.
const ACCESS: &str = "system.posix_acl_access";
/// The only version of the attribute's format.
const VERSION: u32 = 2;
/// Entry tags (`linux/posix_acl.h`).
const USER: u16 = 0x02;
const GROUP: u16 = 0x08;
const MASK: u16 = 0x10;
/// The write permission of an entry.
const WRITE: u16 = 0x02;

/// The users and groups an access ACL names, beyond the owner, its group
/// and others, that may write (their entries' write bit, masked).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Writers {
    /// Named users that may write.
    pub(crate) users: Vec<u32>,
    /// Named groups that may write.
    pub(crate) groups: Vec<u32>,
}

/// The named writers of `path`'s access ACL: none when it has no extended
/// ACL, or its filesystem keeps none.
///
/// # Errors
///
/// An attribute that cannot be read or parsed (what cannot be checked is not
/// trusted; callers refuse).
pub(crate) fn writers(path: &Path) -> std::io::Result<Writers> {
    let mut buf = [0u8; 4096];
    let len = match rustix::fs::lgetxattr(path, ACCESS, &mut buf[..]) {
        Ok(len) => len,
        Err(e) if e == rustix::io::Errno::NODATA || e == rustix::io::Errno::NOTSUP => {
            return Ok(Writers::default());
        }
        Err(e) => return Err(e.into()),
    };
    parse(&buf[..len.min(buf.len())])
}

/// [`writers`], on the attribute's bytes.
fn parse(bytes: &[u8]) -> std::io::Result<Writers> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "an unreadable ACL");
    let (head, entries) = bytes.split_at_checked(4).ok_or_else(bad)?;
    if u32::from_le_bytes(head.try_into().map_err(|_| bad())?) != VERSION || entries.len() % 8 != 0
    {
        return Err(bad());
    }
    let entries: Vec<(u16, u16, u32)> = entries
        .chunks_exact(8)
        .map(|e| {
            (
                u16::from_le_bytes([e[0], e[1]]),
                u16::from_le_bytes([e[2], e[3]]),
                u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
            )
        })
        .collect();
    // Without a mask entry, named entries cannot exist; with one, it bounds
    // every named entry.
    let mask = entries.iter().find(|e| e.0 == MASK).map_or(WRITE, |e| e.1);
    let named = |tag: u16| -> Vec<u32> {
        entries
            .iter()
            .filter(|e| e.0 == tag && e.1 & mask & WRITE != 0)
            .map(|e| e.2)
            .collect()
    };
    Ok(Writers {
        users: named(USER),
        groups: named(GROUP),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(entries: &[(u16, u16, u32)]) -> Vec<u8> {
        let mut b = VERSION.to_le_bytes().to_vec();
        for (tag, perm, id) in entries {
            b.extend(tag.to_le_bytes());
            b.extend(perm.to_le_bytes());
            b.extend(id.to_le_bytes());
        }
        b
    }

    #[test]
    fn named_writers_are_found_and_the_mask_bounds_them() {
        let obj = [
            (0x01, 6, u32::MAX),
            (0x04, 4, u32::MAX),
            (0x20, 4, u32::MAX),
        ];
        let with = |extra: &[(u16, u16, u32)]| {
            let mut e = obj.to_vec();
            e.extend_from_slice(extra);
            parse(&acl(&e)).unwrap()
        };
        assert_eq!(with(&[]), Writers::default());
        let w = with(&[
            (USER, 6, 1001),
            (GROUP, 7, 50),
            (USER, 4, 1002),
            (MASK, 6, 0),
        ]);
        assert_eq!((w.users, w.groups), (vec![1001], vec![50]));
        let masked = with(&[(USER, 6, 1001), (MASK, 4, 0)]);
        assert_eq!(masked, Writers::default());
    }

    #[test]
    fn an_unreadable_acl_is_an_error() {
        assert!(parse(&[1, 2]).is_err());
        assert!(parse(&3u32.to_le_bytes()).is_err());
        let mut b = acl(&[(USER, 6, 1)]);
        b.push(0);
        assert!(parse(&b).is_err());
    }

    #[test]
    fn a_file_without_an_acl_has_no_named_writers() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "").unwrap();
        assert_eq!(writers(&f).unwrap(), Writers::default());
    }
}
