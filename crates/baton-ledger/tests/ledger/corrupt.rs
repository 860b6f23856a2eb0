//! A corrupt database is moved aside, whole and once, and never stops the
//! ledger.

use baton_store::ledger::{Records, Recovered, Reset};
use baton_store::words::AttemptOutcome;
use std::os::unix::fs::FileExt;
use std::path::Path;

use baton_ledger::Error;
use baton_ledger::Ledger;

use crate::support::{self, Scene, at, attempt, finished, scheduled};

/// Bytes that are no SQLite database.
fn garbage(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 13) as u8).collect()
}

/// A ledger with enough history to fill many pages, closed.
fn populate(scene: &Scene) {
    let mut ledger = scene.open();
    for i in 0..120 {
        let run = scheduled("big", &format!("{i:016x}"), 60 * i);
        ledger.begin_run(&run).unwrap();
        ledger
            .record_attempt(&attempt(
                &run,
                1,
                "a-step-with-a-long-name",
                AttemptOutcome::Ok,
                run.started,
            ))
            .unwrap();
        ledger.finish_run(&finished(&run, 5, true), 1_000).unwrap();
    }
}

/// The one recovery `ledger` reports, whose reason says `why`.
fn recovered_once(ledger: &mut Ledger, why: &str) -> Recovered {
    let mut recovered = ledger.take_recovered();
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    let one = recovered.remove(0);
    assert!(one.reason.contains(why), "{}", one.reason);
    one
}

/// The ledger works after recovery: it writes and reads back.
fn assert_works(ledger: &mut Ledger) {
    let run = scheduled("after", "00000000000000d1", 0);
    ledger.begin_run(&run).unwrap();
    ledger.finish_run(&finished(&run, 1, true), 10).unwrap();
    assert_eq!(ledger.history("after", 10).unwrap().len(), 1);
}

#[test]
fn garbage_is_moved_aside_on_open() {
    let scene = Scene::new();
    let bytes = garbage(100);
    std::fs::write(scene.db(), &bytes).unwrap();
    let mut ledger = Ledger::open(scene.dir(), "2026-11-29T03:15:00Z".parse().unwrap()).unwrap();
    let recovered = recovered_once(&mut ledger, "not a database");
    assert_eq!(
        recovered.moved_to,
        scene.dir().join("baton.db.corrupt-20261129T031500Z")
    );
    assert_eq!(std::fs::read(&recovered.moved_to).unwrap(), bytes);
    assert_eq!(scene.corrupt_files(), [recovered.moved_to]);
    assert!(ledger.take_recovered().is_empty());
    assert_works(&mut ledger);
}

#[test]
fn a_database_cut_short_is_found_on_open() {
    let scene = Scene::new();
    populate(&scene);
    let len = std::fs::metadata(scene.db()).unwrap().len();
    assert!(
        len > 8 * 4096,
        "the ledger should span many pages, not {len} bytes"
    );
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(scene.db())
        .unwrap();
    file.set_len(4096).unwrap();
    drop(file);
    let bytes = std::fs::read(scene.db()).unwrap();

    let mut ledger = scene.open();
    let recovered = recovered_once(&mut ledger, "malformed");
    assert_eq!(std::fs::read(&recovered.moved_to).unwrap(), bytes);
    assert!(ledger.history("big", 10).unwrap().is_empty());
    assert_works(&mut ledger);
}

/// Overwrites every page but the header page and the schema's (which
/// outgrew the first page) in place: the file keeps its size, so only
/// reading the tables shows the damage.
fn overwrite_all_but_the_header(scene: &Scene) -> Vec<u8> {
    let raw = rusqlite::Connection::open(scene.db()).unwrap();
    raw.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )
    .unwrap();
    let schema: Vec<i64> = raw
        .prepare("SELECT pageno FROM dbstat WHERE name = 'sqlite_schema'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    drop(raw);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(scene.db())
        .unwrap();
    let pages = file.metadata().unwrap().len() / 4096;
    for page in 2..=pages {
        if !schema.contains(&(page as i64)) {
            file.write_all_at(&[0xA5; 4096], (page - 1) * 4096).unwrap();
        }
    }
    drop(file);
    std::fs::read(scene.db()).unwrap()
}

#[test]
fn damage_behind_a_sound_header_is_found_on_open() {
    let scene = Scene::new();
    populate(&scene);
    let damaged = overwrite_all_but_the_header(&scene);
    let mut ledger = scene.open();
    // Found by the probe, before any call reads a table.
    let recovered = recovered_once(&mut ledger, "read a table");
    assert_eq!(std::fs::read(&recovered.moved_to).unwrap(), damaged);
    assert_works(&mut ledger);
}

#[test]
fn a_schema_missing_a_table_is_moved_aside() {
    let scene = Scene::new();
    populate(&scene);
    scene.tamper("DROP TABLE steps");
    let mut ledger = scene.open();
    recovered_once(&mut ledger, "no table steps");
    assert_works(&mut ledger);
}

#[test]
fn a_newer_schema_is_refused_and_left_alone() {
    for version in [6, 99] {
        let scene = Scene::new();
        scene.open();
        scene.tamper(&format!("PRAGMA user_version = {version}"));
        let before = std::fs::read(scene.db()).unwrap();
        let err = Ledger::open(scene.dir(), at(0)).unwrap_err();
        assert!(
            matches!(err, Error::UnknownSchema { found, supported: 5, .. } if found == version),
            "{err:?}"
        );
        assert!(
            err.to_string().contains(&scene.db().display().to_string()),
            "{err}"
        );
        assert!(!err.to_string().contains("corrupt"), "{err}");
        assert_eq!(std::fs::read(scene.db()).unwrap(), before);
        assert!(scene.corrupt_files().is_empty());
    }
}

/// Damage deeper than the probe reads is found by the call that reads it:
/// that call recovers and is answered by the fresh ledger.
#[test]
fn corruption_found_by_a_call_recovers_and_retries_once() {
    let scene = Scene::new();
    populate(&scene);
    let mut ledger = Ledger::open(scene.dir(), at(0)).unwrap();
    assert!(ledger.take_recovered().is_empty());
    // Another connection commits, so this one drops its cached pages at its
    // next read, then every page but the header page is overwritten.
    let raw = rusqlite::Connection::open(scene.db()).unwrap();
    // As the ledger's own connections do: this one must not delete the new
    // ledger's `-wal` by name when it closes after the move.
    raw.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )
    .unwrap();
    raw.execute_batch("INSERT INTO alerts (time, kind, message, json) VALUES (0, 'x', 'x', '{}')")
        .unwrap();
    let damaged = overwrite_all_but_the_header(&scene);

    let history = ledger.history("big", 1_000).unwrap();
    assert!(history.is_empty(), "answered from the fresh ledger");
    let recovered = recovered_once(&mut ledger, "read the history of job big");
    assert_eq!(std::fs::read(&recovered.moved_to).unwrap(), damaged);
    assert_works(&mut ledger);
    drop(raw);
}

/// One opener: opens the ledger when the parent says go, writes, and
/// reports how many files it moved aside.
pub fn opener_child() {
    let dir = support::env("STATE_DIR");
    let out = support::env("OUT");
    support::wait_for_go();
    let mut ledger = Ledger::open(Path::new(&dir), at(0)).unwrap();
    ledger.see_jobs(&["opened"], at(0)).unwrap();
    std::fs::write(out, ledger.take_recovered().len().to_string()).unwrap();
}

#[test]
fn processes_opening_a_corrupt_database_at_once_move_it_once() {
    const OPENERS: usize = 4;
    let scene = Scene::new();
    let bytes = garbage(8192);
    std::fs::write(scene.db(), &bytes).unwrap();
    let reported: usize = support::run_children(&scene, "opener", OPENERS)
        .iter()
        .map(|out| out.parse::<usize>().unwrap())
        .sum();
    assert_eq!(reported, 1, "one process reports the recovery");
    let moved = scene.corrupt_files();
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(std::fs::read(&moved[0]).unwrap(), bytes);
    let mut ledger = scene.open();
    assert!(ledger.take_recovered().is_empty());
    assert!(ledger.job("opened").unwrap().is_some());
}

/// A ledger emptied while no process has it open (`: > baton.db`, a disk
/// that lost the file's blocks) is no new ledger: baton never leaves an
/// empty one of its own, so it is moved aside with its log and said, like
/// any other damage, never taken for a first use.
#[test]
fn an_emptied_ledger_is_moved_aside_and_said_never_taken_for_new() {
    let scene = Scene::new();
    populate(&scene);
    let wal = std::fs::read(format!("{}-wal", scene.db().display())).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(scene.db())
        .unwrap()
        .set_len(0)
        .unwrap();

    let mut ledger = Ledger::open(scene.dir(), "2026-11-29T03:15:00Z".parse().unwrap()).unwrap();
    let recovered = recovered_once(&mut ledger, "empty");
    assert_eq!(recovered.how, Reset::Corrupt);
    assert!(
        recovered.reason.contains("0 bytes"),
        "the reason says what was found: {}",
        recovered.reason
    );
    assert_eq!(
        recovered.moved_to,
        scene.dir().join("baton.db.corrupt-20261129T031500Z")
    );
    assert_eq!(std::fs::metadata(&recovered.moved_to).unwrap().len(), 0);
    // Its log went with it, whole: what it held is still there to read.
    assert_eq!(
        std::fs::read(format!("{}-wal", recovered.moved_to.display())).unwrap(),
        wal
    );
    assert!(ledger.history("big", 10).unwrap().is_empty());
    assert_works(&mut ledger);
    drop(ledger);
    // Told once: the fresh ledger is no empty file.
    let mut again = scene.open();
    assert!(again.take_recovered().is_empty());
}

/// A ledger is never an empty file of baton's own, even for an instant: it
/// is built whole beside its path and put there in one step, so an empty
/// `baton.db` is always someone else's doing. A creation cut short by a
/// crash leaves only its scratch file, which the next creation replaces.
#[test]
fn a_new_ledger_is_put_in_place_whole() {
    let scene = Scene::new();
    let scratch = scene.dir().join(".baton.db.new");
    std::fs::write(&scratch, garbage(100)).unwrap();
    std::fs::write(format!("{}-journal", scratch.display()), garbage(10)).unwrap();
    let mut ledger = scene.open();
    assert!(ledger.take_recovered().is_empty());
    assert!(std::fs::metadata(scene.db()).unwrap().len() > 0);
    assert_works(&mut ledger);
    let left: Vec<String> = std::fs::read_dir(scene.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".baton.db.new"))
        .collect();
    assert!(left.is_empty(), "no scratch file is left: {left:?}");
}
