//! The file at `baton.db` changes under an open connection, or is not a file.

use baton_store::ledger::{Records, Reset};
use std::path::Path;

use baton_ledger::Error;
use baton_ledger::Ledger;

use crate::support::{Scene, at, known_jobs};

/// Renames `baton.db` and its side files, as a recovering process does.
fn move_aside(scene: &Scene, to: &Path) {
    for suffix in ["-wal", "-shm"] {
        let from = format!("{}{suffix}", scene.db().display());
        let _ = std::fs::rename(from, format!("{}{suffix}", to.display()));
    }
    std::fs::rename(scene.db(), to).unwrap();
}

fn job_names(db: &Path) -> Vec<String> {
    let raw = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut stmt = raw.prepare("SELECT job FROM jobs ORDER BY job").unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_connection_follows_the_path_after_a_move() {
    let scene = Scene::new();
    let mut old = scene.open();
    old.see_jobs(&["before"], at(0)).unwrap();

    let moved = scene.dir().join("elsewhere.db");
    move_aside(&scene, &moved);
    // Another process creates the new ledger and writes to it.
    let mut other = scene.open();
    other.see_jobs(&["other"], at(1)).unwrap();

    // The old connection's next write goes to the new file, not the moved one.
    old.see_jobs(&["after"], at(2)).unwrap();
    assert_eq!(known_jobs(&mut old), ["after", "other"]);
    drop(old);
    // Closing the connection to the moved file deleted none of the new
    // ledger's files: everything written is still there for a newcomer.
    let mut newcomer = scene.open();
    assert_eq!(known_jobs(&mut newcomer), ["after", "other"]);
    drop((newcomer, other));
    assert_eq!(job_names(&moved), ["before"]);
}

#[test]
fn a_connection_recreates_a_removed_ledger() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    ledger.see_jobs(&["before"], at(0)).unwrap();
    move_aside(&scene, &scene.dir().join("gone.db"));
    ledger.see_jobs(&["after"], at(1)).unwrap();
    assert!(scene.db().exists());
    assert_eq!(ledger.jobs().unwrap().len(), 1);
    // A file moved away by someone else is not a corrupt one, but what it
    // held is not in the fresh one: the caller is told it was lost.
    let told = ledger.take_recovered();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].how, Reset::Lost);
    assert!(told[0].how.alerts());
    assert_eq!(told[0].moved_to, scene.db());
    assert!(told[0].reason.contains("removed or replaced"), "{told:?}");
    assert!(ledger.take_recovered().is_empty(), "told once");
}

/// A file another process moved aside as corrupt (`baton.db.corrupt-…`,
/// same inode) is followed without a second alert: the mover raised it.
#[test]
fn a_connection_follows_a_file_moved_aside_as_corrupt_without_alerting_it() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    ledger.see_jobs(&["before"], at(0)).unwrap();
    move_aside(
        &scene,
        &scene.dir().join("baton.db.corrupt-20261206T120000Z"),
    );
    ledger.see_jobs(&["after"], at(1)).unwrap();
    let told = ledger.take_recovered();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].how, Reset::Followed);
    assert!(!told[0].how.alerts());
}

/// An operator removes `baton.db` alone while a connection has it open:
/// the fresh ledger must not inherit the old `-wal` and `-shm`, which that
/// connection still uses.
#[test]
fn a_database_removed_alone_leaves_its_side_files_aside() {
    let scene = Scene::new();
    let mut old = scene.open();
    old.see_jobs(&["before"], at(0)).unwrap();
    std::fs::remove_file(scene.db()).unwrap();

    let mut fresh = scene.open();
    assert!(fresh.take_recovered().is_empty());
    fresh.see_jobs(&["fresh"], at(1)).unwrap();
    old.see_jobs(&["old"], at(2)).unwrap();
    drop((old, fresh));

    let mut newcomer = scene.open();
    assert_eq!(known_jobs(&mut newcomer), ["fresh", "old"]);
    let aside: Vec<_> = std::fs::read_dir(scene.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("baton.db.orphaned-"))
        .collect();
    assert_eq!(aside.len(), 2, "{aside:?}");
    assert!(newcomer.take_recovered().is_empty());
}

#[test]
fn a_symlink_at_the_path_is_refused_and_not_followed() {
    let scene = Scene::new();
    let target_dir = tempfile::tempdir().unwrap();
    let target = target_dir.path().join("real.db");
    std::fs::write(&target, b"precious").unwrap();
    std::os::unix::fs::symlink(&target, scene.db()).unwrap();

    let err = Ledger::open(scene.dir(), at(0)).unwrap_err();
    assert!(matches!(err, Error::Symlink { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&scene.db().display().to_string()),
        "{err}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    let beside: Vec<_> = std::fs::read_dir(target_dir.path()).unwrap().collect();
    assert_eq!(beside.len(), 1, "nothing was created beside the target");

    // A dangling one is not followed either: nothing is created at its target.
    std::fs::remove_file(&target).unwrap();
    let err = Ledger::open(scene.dir(), at(0)).unwrap_err();
    assert!(matches!(err, Error::Symlink { .. }), "{err:?}");
    assert!(!target.exists());
    assert!(
        std::fs::symlink_metadata(scene.db())
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_symlink_planted_under_an_open_ledger_is_refused() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let target_dir = tempfile::tempdir().unwrap();
    let target = target_dir.path().join("real.db");
    std::fs::write(&target, b"precious").unwrap();
    move_aside(&scene, &scene.dir().join("aside.db"));
    std::os::unix::fs::symlink(&target, scene.db()).unwrap();
    let err = ledger.see_jobs(&["x"], at(0)).unwrap_err();
    assert!(matches!(sqlite(&err), Error::Symlink { .. }), "{err:?}");
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
}

#[test]
fn a_missing_state_directory_is_named() {
    let scene = Scene::new();
    let missing = scene.dir().join("nope");
    let err = Ledger::open(&missing, at(0)).unwrap_err();
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );
}

/// Whoever could write the ledger could rewrite what runs are decided by:
/// a database, or a file SQLite keeps beside it, that others may write or
/// another user owns is refused before SQLite opens anything, and left as
/// it is.
#[test]
fn a_ledger_others_could_write_is_refused_and_left_alone() {
    use std::os::unix::fs::PermissionsExt;
    let scene = Scene::new();
    scene.open().see_jobs(&["x"], at(0)).unwrap();
    let wal = scene.dir().join("baton.db-wal");
    for (file, mode) in [
        (scene.db(), 0o666),
        (scene.db(), 0o620),
        (wal.clone(), 0o606),
    ] {
        let before = std::fs::read(&file).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        for err in [
            Ledger::check(scene.dir()).unwrap_err(),
            Ledger::open(scene.dir(), at(0)).unwrap_err(),
        ] {
            assert!(matches!(err, Error::Untrusted(_)), "{mode:o}: {err:?}");
            assert!(err.is_refused_file());
            assert!(
                err.to_string().contains(&file.display().to_string()),
                "{err}"
            );
        }
        assert_eq!(std::fs::read(&file).unwrap(), before, "{mode:o}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    Ledger::check(scene.dir()).unwrap();
    // An open ledger refuses the file the moment it is found loose.
    let mut ledger = scene.open();
    std::fs::set_permissions(scene.db(), std::fs::Permissions::from_mode(0o646)).unwrap();
    let err = ledger.jobs().unwrap_err();
    assert!(matches!(sqlite(&err), Error::Untrusted(_)), "{err:?}");
    if rustix::process::geteuid().is_root() {
        std::fs::set_permissions(scene.db(), std::fs::Permissions::from_mode(0o600)).unwrap();
        let nobody = rustix::process::Uid::from_raw(65534);
        rustix::fs::chown(scene.db(), Some(nobody), None).unwrap();
        let err = Ledger::open(scene.dir(), at(0)).unwrap_err();
        assert!(err.to_string().contains("owned by uid 65534"), "{err}");
    }
}

#[test]
fn a_named_pipe_beside_the_ledger_is_refused_without_blocking() {
    let scene = Scene::new();
    scene.open().see_jobs(&["x"], at(0)).unwrap();
    let shm = scene.dir().join("baton.db-shm");
    std::fs::remove_file(&shm).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &shm,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let err = Ledger::open(scene.dir(), at(0)).unwrap_err();
    assert!(matches!(err, Error::NotAFile { .. }), "{err:?}");
    assert!(err.to_string().contains("a named pipe"), "{err}");
}

#[test]
fn a_state_directory_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let scene = Scene::new();
    std::fs::set_permissions(scene.dir(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = Ledger::open(scene.dir(), at(0)).unwrap_err();
    assert!(matches!(err, Error::Untrusted(_)), "{err:?}");
    assert!(!scene.db().exists(), "nothing was created");
}

/// The SQLite ledger's own error behind what a call of the ledger said.
fn sqlite(e: &baton_store::ledger::Error) -> &Error {
    e.source_error()
        .and_then(|s| s.downcast_ref::<Error>())
        .unwrap_or_else(|| panic!("not the SQLite ledger's error: {e:?}"))
}

/// `baton.db-wal` removed alone while connections have it open: they go on
/// writing into the removed log, which no newcomer can read (SQLite's shared
/// memory still counts its frames), and what it held since the last
/// checkpoint would be gone once they close. The next call of a connection
/// that had it finds its log gone, copies what the log holds into the
/// database, moves the database aside as corrupt (it is no longer safe to
/// share: newcomers would pair it with another log) and says so, once; the
/// others follow without a second alert.
#[test]
fn a_log_removed_alone_is_found_kept_in_the_file_moved_aside_and_said_once() {
    let scene = Scene::new();
    let mut old = scene.open();
    let mut other = scene.open();
    old.see_jobs(&["before"], at(0)).unwrap();
    std::fs::remove_file(format!("{}-wal", scene.db().display())).unwrap();
    // Until then a newcomer cannot read the file (the shared memory counts
    // frames its new, empty log does not have): refused, never misread.
    let err = Ledger::open(scene.dir(), at(1)).unwrap_err();
    assert!(err.to_string().contains("disk I/O error"), "{err}");
    old.see_jobs(&["after"], at(1)).unwrap();
    let told = old.take_recovered();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].how, Reset::Corrupt);
    assert!(told[0].reason.contains("baton.db-wal"), "{told:?}");
    assert!(told[0].moved_to.exists(), "{told:?}");
    assert_eq!(known_jobs(&mut old), ["after"]);
    // Another connection that had the removed log follows, silently.
    other.see_jobs(&["other"], at(2)).unwrap();
    let followed = other.take_recovered();
    assert_eq!(followed.len(), 1, "{followed:?}");
    assert_eq!(followed[0].how, Reset::Followed);
    let mut newcomer = scene.open();
    assert!(newcomer.take_recovered().is_empty());
    assert_eq!(known_jobs(&mut newcomer), ["after", "other"]);
    drop((old, other, newcomer));
    // What the removed log held is in the file moved aside.
    assert_eq!(job_names(&told[0].moved_to), ["before"]);
}
