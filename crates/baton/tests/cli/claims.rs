//! What keeps an occurrence from running twice when one of its two records
//! is gone: the lock's claims with no usable ledger (every job sharing the
//! lock keeps its claim, however many and however long their names), and
//! the ledger with a lock file whose claims it does not know.

use baton_store::ledger::Records;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::policies::read_lines;
use crate::sched::Sched;
use crate::support::{code, stderr, stdout};

/// A ledger this build refuses to open, as one written by a later baton is
/// refused: a valid SQLite file whose schema version (`PRAGMA user_version`,
/// four bytes at offset 60 of the header) is 99. No run starts: none could
/// be recorded.
pub(crate) fn foreign_ledger(s: &Sched) {
    use std::os::unix::fs::PermissionsExt;
    let state = s.env.state();
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let now = baton_lease::Clock::wall(&baton_lease::SystemClock);
    let mut l = baton_ledger::Ledger::open(&state, now).unwrap();
    l.checkpoint().unwrap();
    drop(l);
    // Checkpointed: the file holds everything; the write-ahead log goes.
    for side in ["baton.db-wal", "baton.db-shm"] {
        let _ = std::fs::remove_file(state.join(side));
    }
    let db = state.join("baton.db");
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[60..64].copy_from_slice(&99u32.to_be_bytes());
    std::fs::write(&db, bytes).unwrap();
    let o = s.run(&["status"]);
    assert!(
        stderr(&o).contains("schema version is 99"),
        "the ledger is still usable: {}{}",
        stdout(&o),
        stderr(&o)
    );
}

/// Runs `n` quiet `baton tick`s at once, each first given to `each` (its
/// number and command), and waits for them all.
pub(crate) fn ticks_at_once(s: &Sched, n: usize, each: impl Fn(usize, &mut Command)) {
    let ticks: Vec<_> = (0..n)
        .map(|i| {
            let mut c = s.cmd(&["tick"]);
            each(i, &mut c);
            c.stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut t in ticks {
        t.wait().unwrap();
    }
}

/// How many times each job appears in `file`.
fn counts(file: &Path) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for l in std::fs::read_to_string(file).unwrap_or_default().lines() {
        *out.entry(l.to_owned()).or_insert(0) += 1;
    }
    out
}

/// A job name of 60 characters.
fn long_name(i: usize) -> String {
    format!("job-{i:02}-{}", "x".repeat(54))
}

#[test]
fn twenty_jobs_with_long_names_on_one_lock_each_run_once_with_the_ledger_lost_every_round() {
    let env = crate::support::Env::new();
    let ran = env.path("ran");
    let s = Sched { env };
    // One occurrence a year, caught up for 400 days: the same occurrence of
    // every job stays due through the test, and with the ledger lost before
    // every round each tick finds each one due again; only the lock's
    // claims say it started.
    let mut toml = String::new();
    for i in 0..20 {
        toml.push_str(&format!(
            "[jobs.{}]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\nlock = \"shared\"\n\
             run = \"echo $BATON_JOB >> {}; sleep 0.05\"\n",
            long_name(i),
            ran.display()
        ));
    }
    s.write(&toml);
    let names: Vec<String> = (0..20).map(long_name).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    crate::sched::known_since(&s, &names, crate::sched::before_new_year());
    for round in 0..4 {
        fresh_ledger(&s);
        ticks_at_once(&s, 6, |_, _| {});
        let c = counts(&ran);
        assert!(c.values().all(|&n| n == 1), "round {round}: {c:?}");
    }
    // One tick at a time until every job has had its turn at the lock.
    for _ in 0..40 {
        if counts(&ran).len() == 20 {
            break;
        }
        fresh_ledger(&s);
        s.run(&["tick"]);
    }
    let c = counts(&ran);
    assert_eq!(c.len(), 20, "{c:?}");
    assert!(c.values().all(|&n| n == 1), "{c:?}");
    // The lock file names every job's claim.
    let record = std::fs::read_to_string(s.env.state().join("locks/shared.lock")).unwrap();
    for i in 0..20 {
        assert!(record.contains(&format!("{}@", long_name(i))), "{record}");
    }
}

#[test]
fn a_lock_shared_by_more_jobs_than_its_record_can_claim_is_refused_at_load() {
    let env = crate::support::Env::new();
    let s = Sched { env };
    let mut toml = String::new();
    for i in 0..900 {
        toml.push_str(&format!(
            "[jobs.j{i:03}{}]\nevery = \"1h\"\nlock = \"crowded\"\nrun = \"true\"\n",
            "y".repeat(60)
        ));
    }
    s.write(&toml);
    for args in [&["config"][..], &["tick"]] {
        let o = s.run(args);
        assert_eq!(code(&o), 2, "{args:?}: {}{}", stdout(&o), stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("crowded") && err.contains("900 jobs"),
            "{args:?}: {err}"
        );
    }
    assert!(
        !s.env.state().join("locks").exists(),
        "a refused configuration touched the state directory"
    );
}

fn at(secs: i64) -> String {
    jiff::Timestamp::from_second(secs).unwrap().to_string()
}

/// The configuration of an hourly job `h` (with `extra` keys) that appends
/// its occurrence to `ran`.
fn hourly(ran: &Path, extra: &str) -> String {
    format!(
        "[jobs.h]\nevery = \"1h\"\ncatch_up_window = \"6h\"\n{extra}\
         run = \"echo $BATON_OCCURRENCE >> {}\"\n",
        ran.display()
    )
}

/// [`hourly_after_downtime`] catching up on all five hours in one tick
/// (checked), then its ledger lost: the lock's claims are the one record of
/// what ran. The five occurrences, oldest first.
fn five_ran_then_ledger_lost() -> (Sched, std::path::PathBuf, Vec<String>) {
    let (s, ran, newest) = hourly_after_downtime("catch_up = \"all\"\n");
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let want: Vec<String> = (0..5).rev().map(|i| at(newest - i * 3600)).collect();
    assert_eq!(read_lines(&ran), want);
    lose_ledger(&s);
    (s, ran, want)
}

/// An hourly job `h` (with `extra` keys) that appends its occurrence to
/// the returned file, down for five hours: its ledger decided up to five
/// hours before the newest occurrence, which is returned too.
fn hourly_after_downtime(extra: &str) -> (Sched, std::path::PathBuf, i64) {
    let env = crate::support::Env::new();
    let ran = env.path("ran");
    let s = Sched { env };
    s.write(&hourly(&ran, extra));
    let t0 = baton_lease::Clock::wall(&baton_lease::SystemClock);
    let newest = t0.as_second() / 3600 * 3600;
    crate::policies::downtime(
        &s,
        "h",
        t0 - jiff::SignedDuration::from_hours(8),
        newest - 5 * 3600,
    );
    (s, ran, newest)
}

/// [`lose_ledger`], and a fresh ledger made at once, so that ticks started
/// together do not race to create it (a tick that cannot open its ledger
/// runs nothing). The fresh one still knows the jobs the lost one had seen,
/// since when it saw them, as a copy from before their runs would: only
/// their decisions are lost, and the lock's claims are the one record of
/// what ran. (A ledger that knew nothing would run nothing for the past.)
pub(crate) fn fresh_ledger(s: &Sched) {
    use std::os::unix::fs::PermissionsExt;
    let state = s.env.state();
    let now = baton_lease::Clock::wall(&baton_lease::SystemClock);
    let seen: Vec<(String, jiff::Timestamp)> = if state.join("baton.db").exists() {
        let mut old = baton_ledger::Ledger::open(&state, now).unwrap();
        old.jobs()
            .unwrap()
            .into_iter()
            .map(|j| (j.job, j.first_seen))
            .collect()
    } else {
        Vec::new()
    };
    lose_ledger(s);
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut fresh = baton_ledger::Ledger::open(&state, now).unwrap();
    for (job, at) in &seen {
        fresh.see_jobs(&[job.as_str()], *at).unwrap();
    }
    fresh.checkpoint().unwrap();
}

/// Moves the ledger aside, as an operator does with one he cannot trust
/// (or as a lost disk does): the next command starts a fresh one.
pub(crate) fn lose_ledger(s: &Sched) {
    let state = s.env.state();
    for name in ["baton.db", "baton.db-wal", "baton.db-shm"] {
        let from = state.join(name);
        if from.exists() {
            // Replacing what an earlier loss moved aside.
            std::fs::rename(&from, state.join(format!("{name}.lost"))).unwrap();
        }
    }
}

#[test]
fn a_backfill_after_the_ledger_was_lost_never_runs_what_the_lock_says_may_have_run() {
    // Down for five hours: the tick catches up on all of them, oldest
    // first, and the lock's claim ends at the newest.
    let (s, ran, want) = five_ran_then_ledger_lost();
    let (from, to) = (want[0].clone(), want[4].clone());
    // The fresh ledger knows none of them; the claim says they may have run.
    let o = s.run(&["backfill", "h", "--from", &from, "--to", &to, "--dry-run"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).matches("not run").count(), 5, "{}", stdout(&o));
    assert!(stdout(&o).contains("--force"), "{}", stdout(&o));
    let o = s.run(&["backfill", "h", "--from", &from, "--to", &to]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(read_lines(&ran), want, "a backfill ran them again");
    let err = stderr(&o);
    assert_eq!(err.matches(" not run: ").count(), 5, "{err}");
    assert!(
        err.contains("claim") && err.contains("--force"),
        "it says why and how to force: {err}"
    );
    // A ledger a newer baton wrote is refused outright (exit 2), even with
    // --force. (One that cannot be read at all, busy or failing, rules out
    // nothing: `backfill::tests`.)
    foreign_ledger(&s);
    let o = s.run(&["backfill", "h", "--from", &from, "--to", &to, "--force"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        read_lines(&ran),
        want,
        "a backfill ran them past a newer ledger"
    );
    assert!(stderr(&o).contains("upgrade baton"), "{}", stderr(&o));
    // --force runs what it is told, saying so.
    lose_ledger(&s);
    let o = s.run(&["backfill", "h", "--from", &from, "--to", &from, "--force"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    let mut again = want.clone();
    again.push(from.clone());
    assert_eq!(read_lines(&ran), again);
}

#[test]
fn a_backfill_after_the_ledger_was_lost_and_the_lock_renamed_never_runs_what_ran() {
    // The claims are in the lock the job ran under; after a rename the
    // job's guard still names that lock and its claim.
    let (s, ran, want) = five_ran_then_ledger_lost();
    s.write(&hourly(&ran, "catch_up = \"all\"\nlock = \"renamed\"\n"));
    let (from, to) = (want[0].clone(), want[4].clone());
    let o = s.run(&["backfill", "h", "--from", &from, "--to", &to, "--dry-run"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).matches("not run").count(), 5, "{}", stdout(&o));
    let o = s.run(&["backfill", "h", "--from", &from, "--to", &to]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(read_lines(&ran), want, "a backfill ran them again");
    assert_eq!(
        stderr(&o).matches(" not run: ").count(),
        5,
        "{}",
        stderr(&o)
    );
}

#[test]
fn occurrences_the_ledger_records_missed_are_backfilled_behind_the_claim() {
    // catch_up = "latest": the newest runs (and is claimed); the four
    // before it are recorded missed.
    let (s, ran, newest) = hourly_after_downtime("");
    s.run(&["tick"]);
    assert_eq!(read_lines(&ran), vec![at(newest)]);
    let o = s.run(&[
        "backfill",
        "h",
        "--from",
        &at(newest - 4 * 3600),
        "--to",
        &at(newest),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut want: Vec<String> = vec![at(newest)];
    want.extend((1..5).rev().map(|i| at(newest - i * 3600)));
    assert_eq!(read_lines(&ran), want);
}

#[test]
fn a_backfill_on_postgresql_after_its_ledger_rows_were_lost_respects_the_stores_claims() {
    let pg = baton_testkit::pg::PgServer::start();
    let (s, ran) = hourly_on(&pg);
    let hour = baton_testkit::wall_seconds() / 3600 * 3600;
    crate::sched::pg_known_since(&pg, &["h"], jiff::Timestamp::from_second(hour - 1).unwrap());
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let first = read_lines(&ran);
    assert_eq!(first.len(), 1, "{first:?}");
    // The ledger's rows are gone (a restore of only part of the database,
    // a hand's TRUNCATE); the lease row's claims are not.
    pg.sql("TRUNCATE baton.runs, baton.attempts, baton.occurrences, baton.jobs, baton.missed");
    let range = ["backfill", "h", "--from", &first[0], "--to", &first[0]];
    // The lock is free: its row's claims are read all the same.
    let o = s.run(&[&range[..], &["--dry-run"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("not run"), "{}", stdout(&o));
    let o = s.run(&range);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    assert_eq!(read_lines(&ran), first, "the backfill ran it again");
}

/// A backfill of three past hours on the PostgreSQL store runs all three
/// under its one lease, oldest first, and exits 0. The first run's end
/// used to carry the lease's release (a run's end foresees it when no
/// queue waits, and a backfill's next occurrences are in no queue): the
/// second found its lease lost, and the summary said 1 ran, 2 not run,
/// exit 0.
#[test]
fn a_backfill_on_postgresql_runs_its_whole_range_under_one_lease() {
    let pg = baton_testkit::pg::PgServer::start();
    let (s, ran) = hourly_on(&pg);
    let hour = baton_testkit::wall_seconds() / 3600 * 3600;
    let (from, to) = (at(hour - 3 * 3600), at(hour - 3600));
    let o = s.run(&["backfill", "h", "--from", &from, "--to", &to, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["ran"].as_u64(), v["not_run"].as_u64()),
        (Some(3), Some(0)),
        "{v}"
    );
    assert!(!stderr(&o).contains("lease lost"), "{}", stderr(&o));
    let want: Vec<String> = (1..=3).rev().map(|i| at(hour - i * 3600)).collect();
    assert_eq!(read_lines(&ran), want);
}

/// A scheduler of one hourly job `h` on `pg`'s store, migrated; each run
/// appends its occurrence to the returned file.
fn hourly_on(pg: &baton_testkit::pg::PgServer) -> (Sched, std::path::PathBuf) {
    let env = crate::support::Env::new();
    let ran = env.path("ran");
    let s = Sched { env };
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n[store]\nurl = {:?}\n\
         [jobs.h]\nevery = \"1h\"\nrun = \"echo $BATON_OCCURRENCE >> {}\"\n",
        pg.url(),
        ran.display()
    ));
    s.migrate();
    (s, ran)
}
