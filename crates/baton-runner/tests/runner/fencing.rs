//! Self-fencing: when a renewal finds the lease lost, or none has got
//! through for a whole TTL, the running step's whole tree (detached
//! processes included) is stopped before a judge on another host may take
//! the lease over, and nothing more runs under it. A command that had
//! already exited keeps its own ending.

use std::time::Duration;

use baton_lease::{BreakMode, Broken, FileMutex, Outcome, Sharing};
use baton_runner::{Ending, Event, Finish, Paused, SKEW_ALLOWANCE, Session, SessionConfig, TICK};
use baton_store::{Renewal, Restated};

use crate::support::{
    Calls, Dir, Events, PATIENCE, Sleepers, Store, What, alive, eventually, forever, kill,
    lock_file, now, read_pid, record, sh, start, wait_file, write_pid, written,
};

listed!(TESTS:
    a_lost_lease_stops_the_running_step_and_its_whole_tree_contained,
    a_lost_lease_stops_the_running_step_and_its_whole_tree_uncontained,
    a_renewal_that_never_answers_stops_the_step_within_its_ttl_contained,
    a_renewal_that_never_answers_stops_the_step_within_its_ttl_uncontained,
    a_command_that_exited_before_the_loss_keeps_its_own_ending,
    a_forced_break_is_seen_and_the_new_holder_is_left_alone,
    a_lock_file_whose_mutex_is_kept_elsewhere_self_fences,
    a_pause_stopped_past_the_ttl_ends_lost_once_the_renewal_on_waking_finds_it_taken,
);

/// The shortest takeover grace the project accepts for this session and
/// kill grace: what a judge on another host waits past the TTL.
fn takeover_grace(s: &Session<'_>, kill_grace: Duration) -> Duration {
    let grace = kill_grace + s.lease().renew_wait() + TICK + SKEW_ALLOWANCE;
    s.check_self_fencing(kill_grace, grace, ("ttl", "kill_grace", "takeover_grace"))
        .unwrap();
    grace
}

/// When the store began recording the step's group: no record it wrote is
/// older, so a judge counts the TTL from no earlier.
fn recorded_at(calls: &Calls) -> Duration {
    calls
        .of(|w| matches!(w, What::Record(_)))
        .first()
        .expect("the step's group was never recorded")
        .start
}

/// Nothing more runs under a lost lease: no step, no pause, no restated
/// run, no withdrawn claim, and the store is asked nothing more.
fn nothing_more_runs(s: &mut Session<'_>, calls: &Calls, dir: &Dir) {
    let asked = calls.all().len();
    let later = dir.path("later");
    let r = s.run(sh(&format!("echo ran > {}", later.display()), true));
    assert_eq!(r.ending, Ending::LeaseLost);
    assert!(!later.exists(), "a step ran after the lease was lost");
    assert_eq!(s.pause(PATIENCE), Paused::LeaseLost);
    // Refused (lost, or not confirmed while a renewal hangs): never done.
    assert!(matches!(
        s.restate(None, None, None),
        Ok(Restated::Lost(_) | Restated::Unconfirmed(_))
    ));
    let once = baton_lease::Once {
        key: "job".into(),
        at: 1,
    };
    assert!(!s.withdraw(&once).unwrap());
    let since: Vec<What> = calls.all()[asked..].iter().map(|c| c.what).collect();
    assert!(
        since.is_empty(),
        "the store was asked {since:?} after the loss"
    );
}

fn a_lost_lease_stops_the_running_step_and_its_whole_tree_contained() {
    a_lost_lease_stops_the_running_step_and_its_whole_tree(true);
}

fn a_lost_lease_stops_the_running_step_and_its_whole_tree_uncontained() {
    a_lost_lease_stops_the_running_step_and_its_whole_tree(false);
}

/// What a loss came to, beyond what every loss guarantees.
struct Stopped {
    /// Before the step was asked to run, and once it returned.
    before: Duration,
    returned: Duration,
    /// Why the session found the lease lost.
    lost: String,
    events: Vec<Event>,
}

/// Runs a step that leaves [`Sleepers`] running, under `store` (whose
/// lease has `ttl`) until a loss stops it, and checks what every loss
/// guarantees: the step ends lease-lost, with no status of its own; its
/// whole tree is gone, and gone before a judge elsewhere may take the
/// lease; nothing more runs under it; the loss is reported once.
fn stopped_by_a_loss(
    store: Store,
    calls: &Calls,
    ttl: Duration,
    dir: &Dir,
    contain: bool,
) -> Stopped {
    let sleepers = Sleepers::in_dir(&dir.path(""));
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    let spec = sh(&format!("{}; wait", sleepers.start(false)), contain);
    let grace = takeover_grace(&s, spec.kill_grace);
    let before = now();
    let r = s.run(spec);
    let returned = now();
    assert_eq!(r.ending, Ending::LeaseLost);
    assert_eq!((r.code, r.exit_code()), (None, 76));
    sleepers.assert_gone("the loss of its lease");
    assert!(
        returned <= recorded_at(calls) + ttl + grace,
        "the step's tree was gone only after a judge elsewhere could take the lease"
    );
    let lost = s.lost().expect("the loss was forgotten").to_owned();
    nothing_more_runs(&mut s, calls, dir);
    assert!(matches!(s.finish(), Finish::Lost(_)));
    assert_eq!(
        events.count(|e| matches!(e, Event::LeaseLost { .. })),
        1,
        "{:?}",
        events.0
    );
    Stopped {
        before,
        returned,
        lost,
        events: events.0,
    }
}

fn a_lost_lease_stops_the_running_step_and_its_whole_tree(contain: bool) {
    let ttl = Duration::from_millis(1500);
    let (store, calls) = Store::new(ttl);
    let dir = Dir::new();
    // The first renewal, once the whole tree runs, finds the lease lost.
    let sleepers = Sleepers::in_dir(&dir.path(""));
    let store = store.on_renew(move |_| {
        eventually("the step's tree to run", || sleepers.started());
        Ok(Renewal::Lost("the record names another holder".into()))
    });
    let stopped = stopped_by_a_loss(store, &calls, ttl, &dir, contain);
    assert!(stopped.lost.contains("another holder"), "{}", stopped.lost);
}

fn a_renewal_that_never_answers_stops_the_step_within_its_ttl_contained() {
    a_renewal_that_never_answers_stops_the_step_within_its_ttl(true);
}

fn a_renewal_that_never_answers_stops_the_step_within_its_ttl_uncontained() {
    a_renewal_that_never_answers_stops_the_step_within_its_ttl(false);
}

fn a_renewal_that_never_answers_stops_the_step_within_its_ttl(contain: bool) {
    let ttl = Duration::from_secs(2);
    // The store hangs at the first renewal, and for good.
    let (store, calls) = Store::new(ttl);
    let store = store.on_renew(|_| forever());
    let stopped = stopped_by_a_loss(store, &calls, ttl, &Dir::new(), contain);
    // Not before a whole TTL went by without a renewal (and, checked
    // above, done before a judge elsewhere may take the lease).
    assert!(
        stopped.returned >= stopped.before + ttl,
        "the step was stopped although the lease was renewed less than a TTL ago"
    );
    assert!(stopped.lost.contains("could not renew"), "{}", stopped.lost);
    let renewals = calls.renewals();
    assert_eq!(renewals.len(), 1, "{renewals:?}");
    assert_eq!(renewals[0].end, None, "the stop waited for the renewal");
    // A renewal under way may still land: the lease is left to lapse.
    assert!(calls.of(|w| w == What::Release).is_empty());
    assert!(
        !stopped
            .events
            .iter()
            .any(|e| matches!(e, Event::RenewTrouble { .. })),
        "a renewal that never answered was told as answered"
    );
}

fn a_command_that_exited_before_the_loss_keeps_its_own_ending() {
    let ttl = Duration::from_millis(900);
    let dir = Dir::new();
    let (left, exited) = (dir.path("left"), dir.path("exited"));
    // The command exits 3 and leaves a process deaf to SIGTERM, which says
    // when the command is gone; only then is the lease found lost.
    let leftover = format!(
        "sh -c 'trap \"\" TERM; {}; while kill -0 $1 2>/dev/null; do sleep 0.01; done; echo gone \
         > {}; exec sleep 120' leftover $$ &",
        write_pid(&left),
        exited.display()
    );
    let (store, calls) = Store::new(ttl);
    let store = store.on_renew({
        let exited = exited.clone();
        move |_| {
            eventually("the command to exit", || written(&exited));
            Ok(Renewal::Lost("the record names another holder".into()))
        }
    });
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    let mut spec = sh(&format!("{leftover} {}; exit 3", wait_file(&left)), true);
    // The leftover is stopped after the grace, long after the first
    // renewal is due.
    spec.kill_grace = Duration::from_secs(2);
    let r = s.run(spec);
    assert_eq!(r.ending, Ending::Exited(3), "{:?}", s.lost());
    assert_eq!((r.code, r.exit_code()), (Some(3), 3));
    assert!(s.lost().is_some());
    assert!(!alive(read_pid(&left)), "the leftover outlived the lease");
    nothing_more_runs(&mut s, &calls, &dir);
    let _ = s.finish();
    assert_eq!(events.count(|e| matches!(e, Event::LeaseLost { .. })), 1);
    assert_eq!(events.count(|e| matches!(e, Event::Leftovers { .. })), 1);
}

fn a_forced_break_is_seen_and_the_new_holder_is_left_alone() {
    let dir = Dir::new();
    let (lock, lease) = lock_file(&dir.path("job.lock"), Duration::from_millis(900));
    let mut events = Events::default();
    let mut s = start(Box::new(lease), SessionConfig::default(), &mut events);
    let job = dir.path("job");
    // An operator breaks the lease under the running step, and another run
    // takes it.
    let taker = std::thread::spawn({
        let (lock, job) = (lock.clone(), job.clone());
        move || {
            read_pid(&job);
            assert!(matches!(
                lock.break_lease(BreakMode::Force).unwrap(),
                Broken::Freed { .. }
            ));
            match lock.try_acquire().unwrap() {
                Outcome::Acquired(lease) => lease,
                other => panic!("the broken lease could not be taken: {}", other.describe()),
            }
        }
    });
    let r = s.run(sh(&format!("{}; exec sleep 120", write_pid(&job)), true));
    assert_eq!(r.ending, Ending::LeaseLost, "{:?}", s.lost());
    assert!(!alive(read_pid(&job)));
    let taken = taker.join().unwrap();
    // The old run's release is token-checked: the new holder keeps its lease.
    assert!(matches!(s.finish(), Finish::Lost(_)));
    let now_held = record(&lock).expect("the new holder's lease was freed");
    assert_eq!(now_held.token, taken.token());
    assert!(matches!(
        taken.release().unwrap(),
        baton_lease::Release::Released
    ));
    assert_eq!(events.count(|e| matches!(e, Event::LeaseLost { .. })), 1);
}

fn a_lock_file_whose_mutex_is_kept_elsewhere_self_fences() {
    let dir = Dir::new();
    let path = dir.path("job.lock");
    let (_lock, lease) = lock_file(&path, Duration::from_millis(900));
    let mut events = Events::default();
    let mut s = start(Box::new(lease), SessionConfig::default(), &mut events);
    let (job, done) = (dir.path("job"), dir.path("done"));
    // Another open file description keeps the lock file's mutex from the
    // moment the step runs: every renewal waits its while and gives up.
    let keeper = std::thread::spawn({
        let (path, job, done) = (path.clone(), job.clone(), done.clone());
        move || {
            read_pid(&job);
            let held = FileMutex::lock(&path, Sharing::Exclusive, PATIENCE)
                .unwrap()
                .expect("the lock file's mutex could not be taken");
            eventually("the step to end", || done.exists());
            drop(held);
        }
    });
    let r = s.run(sh(&format!("{}; exec sleep 120", write_pid(&job)), true));
    std::fs::write(&done, "1\n").unwrap();
    keeper.join().unwrap();
    assert_eq!(r.ending, Ending::LeaseLost);
    assert!(!alive(read_pid(&job)));
    assert!(s.lost().is_some_and(|w| w.contains("could not renew")));
    assert!(matches!(s.finish(), Finish::Lost(_)));
    assert!(
        events.count(|e| matches!(e, Event::RenewTrouble { .. })) >= 1,
        "{:?}",
        events.0
    );
}

/// A runner stopped (SIGSTOP, Ctrl-Z, a debugger) through a retry's wait,
/// past its lease's TTL, while a judge elsewhere took the lease over: the
/// wait ends as lost once the renewal made on waking answers, never as
/// elapsed, so no next step is begun (and recorded as an attempt) under a
/// lease that is gone.
fn a_pause_stopped_past_the_ttl_ends_lost_once_the_renewal_on_waking_finds_it_taken() {
    let ttl = Duration::from_millis(600);
    let dir = Dir::new();
    let woken = dir.path("woken");
    let me = std::process::id();
    // The first renewal has this process stopped 100 ms later (its answer
    // taken in by then), well within the pause, by a thread of its own.
    // A shell started first sees it stopped (and gives up should this
    // process end first), then lets it be for 4 s: past the pause's end,
    // whenever in the pause it was stopped, and many TTLs.
    // It writes `woken` just before it continues it; every renewal from
    // then on finds the lease taken.
    let (store, calls) = Store::new(ttl);
    let store = store.on_renew({
        let woken = woken.clone();
        move |n| {
            if n == 1 {
                let waker = format!(
                    "while [ -e /proc/{me} ] && ! grep -q '^State:[[:space:]]*T' /proc/{me}/status; \
                     do sleep 0.01; done; sleep 4; echo > {}; kill -CONT {me}",
                    woken.display()
                );
                std::thread::spawn(move || {
                    let Ok(mut waker) = std::process::Command::new("sh")
                        .args(["-c", &waker])
                        .spawn()
                    else {
                        return; // Nothing to continue it: not stopped.
                    };
                    crate::support::pause(100);
                    kill(me, rustix::process::Signal::STOP);
                    // Reaped here, or by the session, the subreaper: then
                    // the wait fails, unread.
                    let _ = waker.wait();
                });
            }
            if written(&woken) {
                Ok(Renewal::Lost("the record names another holder".into()))
            } else {
                Ok(Renewal::Renewed)
            }
        }
    });
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    let paused = s.pause(Duration::from_secs(3));
    assert!(written(&woken), "the process was not stopped in its pause");
    assert_eq!(paused, Paused::LeaseLost, "{:?}", calls.all());
    // Found taken, or not renewed within a renewal's wait of waking (the
    // store's 10 ms): lost either way.
    assert!(s.lost().is_some());
    nothing_more_runs(&mut s, &calls, &dir);
    let _ = s.finish();
    assert_eq!(events.count(|e| matches!(e, Event::LeaseLost { .. })), 1);
}
