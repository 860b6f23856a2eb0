//! Bad input: every malformed path or file is a typed error or a refusal
//! with a message naming it, never a panic and never a silent break.

use baton_lease::{Claim, Error, Lock, Outcome};

use crate::support::Dir;

#[test]
fn a_symlink_at_the_lock_path_is_refused() {
    let dir = Dir::new();
    std::fs::write(dir.path("target"), "version=3 state=free\n").unwrap();
    std::os::unix::fs::symlink(dir.path("target"), dir.lock()).unwrap();
    let e = Lock::new(dir.lock()).try_acquire().unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotALockFile { ref what, .. } if what == "a symbolic link"
        ),
        "{e}"
    );
    assert!(e.to_string().contains(dir.lock().to_str().unwrap()));
    assert!(Lock::new(dir.lock()).inspect().is_err());
}

#[test]
fn a_directory_at_the_lock_path_is_refused() {
    let dir = Dir::new();
    std::fs::create_dir(dir.lock()).unwrap();
    let e = Lock::new(dir.lock()).try_acquire().unwrap_err();
    assert!(matches!(e, Error::NotALockFile { .. }), "{e}");
}

#[test]
fn a_missing_directory_is_named() {
    let dir = Dir::new();
    let path = dir.path("nowhere").join("job.lock");
    let e = Lock::new(&path).try_acquire().unwrap_err();
    match &e {
        Error::MissingDirectory { dir: d } => assert_eq!(d, &dir.path("nowhere")),
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("does not exist"));
}

#[test]
fn a_file_for_a_directory_is_named() {
    let dir = Dir::new();
    std::fs::write(dir.path("file"), "").unwrap();
    let e = Lock::new(dir.path("file").join("job.lock"))
        .try_acquire()
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotALockFile { ref what, .. } if what == "not a directory"
        ),
        "{e}"
    );
}

/// Makes a directory unwritable, even for root: mode 0555, and the immutable
/// attribute where the filesystem has it (root ignores modes). Undone on drop.
struct ReadOnly<'a>(&'a std::path::Path);

impl<'a> ReadOnly<'a> {
    fn new(dir: &'a std::path::Path) -> Self {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        if rustix::process::geteuid().is_root() {
            let ok = std::process::Command::new("chattr")
                .arg("+i")
                .arg(dir)
                .status()
                .is_ok_and(|s| s.success());
            assert!(
                ok,
                "running as root, this test needs chattr +i (e2fsprogs) on an ext4-like filesystem"
            );
        }
        Self(dir)
    }
}

impl Drop for ReadOnly<'_> {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(self.0)
            .status();
        let _ = std::fs::set_permissions(self.0, std::fs::Permissions::from_mode(0o755));
    }
}

#[test]
fn a_read_only_directory_refuses_creation_but_an_existing_file_still_works() {
    let dir = Dir::new();
    drop(Lock::new(dir.path("existing.lock")).try_acquire().unwrap());
    let _ro = ReadOnly::new(dir.tmp.path());
    let e = Lock::new(dir.lock()).try_acquire().unwrap_err();
    assert!(
        e.to_string().contains("failed to create a lock file in"),
        "{e}"
    );
    assert!(
        e.to_string().contains(dir.tmp.path().to_str().unwrap()),
        "{e}"
    );
    // Writes are in place, so a lock file that exists keeps working.
    let Outcome::Acquired(lease) = Lock::new(dir.path("existing.lock")).try_acquire().unwrap()
    else {
        panic!("the existing lock file could not be used")
    };
    assert_eq!(lease.release().unwrap(), baton_lease::Release::Released);
}

#[test]
fn garbage_nul_bytes_and_huge_files_are_refused_untouched() {
    let dir = Dir::new();
    let mut huge = b"version=3 ".to_vec();
    huge.extend(std::iter::repeat_n(b'x', 1 << 20));
    let not_locks: Vec<Vec<u8>> = vec![b"\0\0\0\0".to_vec(), b"\xff\xfe\xfd".to_vec(), huge];
    for bytes in not_locks {
        std::fs::write(dir.lock(), &bytes).unwrap();
        let e = Lock::new(dir.lock()).try_acquire().unwrap_err();
        assert!(matches!(e, Error::NotALockFile { .. }), "{e}");
        assert_eq!(std::fs::read(dir.lock()).unwrap(), bytes);
    }
    let cases: Vec<Vec<u8>> = vec![
        b"version=3 state=held fence=1 fence=2\n".to_vec(),
        b"version=3 state=held fence=18446744073709551616 token=0011223344556677\n".to_vec(),
    ];
    for bytes in cases {
        std::fs::write(dir.lock(), &bytes).unwrap();
        let outcome = Lock::new(dir.lock()).try_acquire().unwrap();
        assert!(
            matches!(outcome, Outcome::VersionConflict(_)),
            "{}",
            outcome.describe()
        );
        assert_eq!(std::fs::read(dir.lock()).unwrap(), bytes);
    }
}

#[test]
fn claim_values_that_cannot_be_written_are_errors() {
    let dir = Dir::new();
    for bad in ["", "has space", "new\nline", &"x".repeat(129)] {
        let claim = Claim {
            run: Some(bad.to_owned()),
            ..Claim::default()
        };
        let e = Lock::new(dir.lock()).try_acquire_as(&claim).unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidField {
                    field: "run id",
                    ..
                }
            ),
            "{e}"
        );
    }
    assert!(
        !dir.lock().exists(),
        "a refused claim must not create the file"
    );
}

#[test]
fn a_fifo_at_the_lock_path_is_refused_without_blocking() {
    let dir = Dir::new();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.lock())
        .status()
        .unwrap();
    assert!(made.success());
    // Opening a FIFO for reading would block until a writer came; the lock
    // opens without blocking and refuses what is not a regular file.
    let e = Lock::new(dir.lock()).inspect().unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotALockFile { ref what, .. } if what == "a named pipe"
        ),
        "{e}"
    );
    let e = Lock::new(dir.lock()).try_acquire().unwrap_err();
    assert!(matches!(e, Error::NotALockFile { .. }), "{e}");
}
