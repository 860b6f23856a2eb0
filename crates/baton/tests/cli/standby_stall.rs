//! The PostgreSQL store with a synchronous standby that stops answering:
//! every commit on the primary then waits for it, and the server's
//! `statement_timeout` does not end that wait (it is over by the time a
//! commit waits). Only baton's own deadlines do.
//!
//! What must hold: the run in flight cannot renew, so it stops its job (it
//! never runs on without a lease it can confirm); nothing starts while
//! commits wait, and no command hangs; once the standby is back, runs go on.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use baton_testkit::replica::{Mode, Replicated};

use crate::support::{code, eventually, pause, stderr};

/// Renewals every third of a 4 s TTL, each waiting at most a second; a
/// holder that cannot renew kills its job within TTL + renewal wait + kill
/// grace of its last renewal.
const POLICY: &str = "ttl = \"4s\"\nkill_grace = \"1s\"\ntakeover_grace = \"4s\"\n";

/// A configuration of its own state directory (a host of its own) on
/// `url`: `beat` rewrites `beat` every 100 ms for a minute, `mark` touches
/// `marker`.
fn config(dir: &Path, host: &str, url: &str, beat: &Path, marker: &Path) -> PathBuf {
    let state = dir.join(format!("state-{host}"));
    let file = dir.join(format!("{host}.toml"));
    std::fs::write(
        &file,
        format!(
            "[scheduler]\nstate_dir = {state:?}\ntimezone = \"UTC\"\n{POLICY}\n\
             [store]\nurl = {url:?}\n\n\
             [jobs.beat]\nschedule = \"0 0 1 1 *\"\n\
             run = \"for i in $(seq 600); do date +%s%N > {beat}; sleep 0.1; done\"\n\
             [jobs.mark]\nschedule = \"0 0 1 1 *\"\nrun = \"touch {marker}\"\n",
            beat = beat.display(),
            marker = marker.display(),
        ),
    )
    .unwrap();
    file
}

fn baton(config: &Path, args: &[&str]) -> Command {
    crate::support::baton_on(config, args)
}

/// Runs `baton ARGS` to its end, which must come (a command that waits on
/// the stalled commit for ever is a failure, not a slow test).
fn finished(config: &Path, args: &[&str]) -> std::process::Output {
    let mut child = baton(config, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    baton_testkit::wait_for_exit(&mut child, &format!("`baton {}` to end", args.join(" ")));
    child.wait_with_output().unwrap()
}

/// The beat's last value, when there is one.
fn last_beat(beat: &Path) -> Option<String> {
    std::fs::read_to_string(beat).ok()
}

/// Whether the beat has stopped: unchanged for a second.
fn beat_stopped(beat: &Path) -> bool {
    let before = last_beat(beat);
    pause(1_000);
    last_beat(beat) == before
}

#[test]
fn a_stalled_synchronous_standby_stops_the_run_in_flight_and_starts_nothing() {
    let pair = Replicated::start(Mode::Synchronous);
    let dir = tempfile::tempdir().unwrap();
    let beat = dir.path().join("beat");
    let marker = dir.path().join("marker");
    let one = config(dir.path(), "one", &pair.url(), &beat, &marker);
    let two = config(dir.path(), "two", &pair.url(), &beat, &marker);
    let o = finished(&one, &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    let mut holder = baton(&one, &["run", "beat"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually("the job to beat", || last_beat(&beat).is_some());
    assert!(!beat_stopped(&beat), "the job stopped before the stall");

    // The standby goes away: every commit on the primary now waits.
    pair.standby().stop_for_now();
    eventually("the run in flight to stop its job", || beat_stopped(&beat));
    let status = baton_testkit::wait_for_exit(&mut holder, "the run in flight to end");
    let said = std::io::read_to_string(holder.stderr.take().unwrap()).unwrap();
    assert_ne!(status.code(), Some(0), "a run that lost its lease: {said}");
    eprintln!("the run in flight said: {said}");

    // Nothing starts while commits wait, from this host or another, and
    // every command ends.
    for config in [&one, &two] {
        let o = finished(config, &["run", "mark"]);
        assert_ne!(
            code(&o),
            0,
            "a run started on a stalled store: {}",
            stderr(&o)
        );
        let o = finished(config, &["run", "beat"]);
        assert_ne!(
            code(&o),
            0,
            "a run started on a stalled store: {}",
            stderr(&o)
        );
    }
    assert!(!marker.exists(), "a job ran while no commit could land");
    assert!(
        beat_stopped(&beat),
        "the job beat again while no commit could land"
    );

    // The standby is back: runs go on (the first commits may still be
    // draining).
    pair.standby().start_again();
    eventually("a run once the standby is back", || {
        code(&finished(&two, &["run", "mark"])) == 0
    });
    assert!(marker.exists());
}
