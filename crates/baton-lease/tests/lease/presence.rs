//! A holder's presence outside the filesystem: a lock file moved away from
//! its path with its directory, or removed, under a live holder process
//! still refuses a second holder at the path, and only until the holder
//! ends, however it ends.

use baton_lease::{Busy, Lock, Outcome, Release, Renewal};
use rustix::process::{Pid, Signal, kill_process};

use crate::support::{Dir, Holder};

/// A holder of a lock in a process of its own, running a job (a holder
/// takes its presence before it names its job's group, so before its job
/// runs), renewing rarely (the window a presence closes is the one before
/// its next renewal).
struct Running {
    holder: Option<Holder>,
    job: i32,
}

impl Running {
    fn start(lock: &std::path::Path) -> Running {
        let holder = Holder::spawn(
            "hold",
            lock,
            &["--ttl-ms", "60000", "--renew-ms", "20000", "--child"],
        );
        assert!(holder.next().starts_with("acquired"));
        let child = holder.next();
        let job = child
            .strip_prefix("child ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("expected the job's pid, got {child:?}"));
        Running {
            holder: Some(holder),
            job,
        }
    }

    fn pid(&self) -> i32 {
        self.holder.as_ref().map_or(0, Holder::pid)
    }

    /// Closes the holder's stdin: it releases, and says how.
    fn finish(mut self) -> String {
        self.holder.take().map(Holder::finish).unwrap_or_default()
    }

    fn kill9(mut self) {
        if let Some(h) = self.holder.take() {
            h.kill9();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // The job outlives its holder (its group is its own): the test's to end.
        if let Some(p) = Pid::from_raw(self.job) {
            let _ = kill_process(p, Signal::KILL);
        }
    }
}

/// A holder of `state/job.lock` in `dir`; then `mv state state.old`, and a
/// fresh `state/` made in its place. Returns the lock path and the holder.
fn holder_moved_away(dir: &Dir) -> (std::path::PathBuf, Running) {
    let state = dir.path("state");
    std::fs::create_dir(&state).unwrap();
    let path = state.join("job.lock");
    let h = Running::start(&path);
    std::fs::rename(&state, dir.path("state.old")).unwrap();
    std::fs::create_dir(&state).unwrap();
    (path, h)
}

fn refused_by(lock: &Lock, pid: i32) {
    match lock.try_acquire().unwrap() {
        Outcome::Busy(Busy::Elsewhere { pid: p }) => assert_eq!(p, pid as u32),
        other => panic!("a second holder beside a live one: {}", other.describe()),
    }
}

fn taken(lock: &Lock) {
    match lock.try_acquire().unwrap() {
        Outcome::Acquired(_) => {}
        other => panic!("the lock stayed refused: {}", other.describe()),
    }
}

#[test]
fn a_directory_moved_away_under_a_live_holder_refuses_a_second_holder_at_its_path() {
    let dir = Dir::new();
    let (path, h) = holder_moved_away(&dir);
    let lock = Lock::new(&path);
    refused_by(&lock, h.pid());
    // Refused again: nothing was left at the path by the refusal.
    refused_by(&lock, h.pid());
    assert_eq!(std::fs::read_dir(dir.path("state")).unwrap().count(), 0);
    h.kill9();
    taken(&lock);
}

#[test]
fn a_lock_file_removed_under_a_live_holder_refuses_a_second_holder_until_it_lets_go() {
    let dir = Dir::new();
    let h = Running::start(&dir.lock());
    std::fs::remove_file(dir.lock()).unwrap();
    let lock = Lock::new(dir.lock());
    refused_by(&lock, h.pid());
    // Its release finds its file gone and lets go of its presence.
    assert!(h.finish().starts_with("lost"));
    taken(&lock);
}

#[test]
fn a_lease_released_leaves_no_presence_behind() {
    let dir = Dir::new();
    let h = Running::start(&dir.lock());
    assert_eq!(h.finish(), "released");
    std::fs::remove_file(dir.lock()).unwrap();
    let lock = Lock::new(dir.lock());
    taken(&lock);
    // Nor does this process's own lease, renewed (so standing) and let go.
    let Outcome::Acquired(mut mine) = lock.try_acquire().unwrap() else {
        panic!("free");
    };
    assert_eq!(mine.renew().unwrap(), Renewal::Renewed);
    assert_eq!(mine.release().unwrap(), Release::Released);
    std::fs::remove_file(dir.lock()).unwrap();
    taken(&lock);
}

#[test]
fn a_record_at_the_path_decides_over_a_presence() {
    // A lease broken by force (its holder alive) is taken over at once, as
    // before presences: the record, judged under the mutex, decides.
    let dir = Dir::new();
    let h = Running::start(&dir.lock());
    let lock = Lock::new(dir.lock());
    assert!(matches!(
        lock.break_lease(baton_lease::BreakMode::Force).unwrap(),
        baton_lease::Broken::Freed { .. }
    ));
    taken(&lock);
    drop(h);
}

#[test]
fn another_spelling_of_the_path_finds_the_same_presence() {
    // `..` and doubled slashes name one lock: the presence is named by the
    // directory's real path (a symbolic link for the directory is refused
    // as a lock's directory anyway).
    let dir = Dir::new();
    let state = dir.path("state");
    std::fs::create_dir(&state).unwrap();
    let h = Running::start(&state.join("job.lock"));
    std::fs::remove_file(state.join("job.lock")).unwrap();
    for spelled in [
        dir.path("state/../state/job.lock"),
        dir.path("./state//job.lock"),
    ] {
        refused_by(&Lock::new(&spelled), h.pid());
    }
    h.kill9();
    taken(&Lock::new(dir.path("state/../state/job.lock")));
}

#[test]
fn a_contender_in_a_child_pid_namespace_is_refused_too() {
    // The kernel names a listener outside the contender's pid namespace
    // pid 0; the refusal stands (a scheduled job calling `baton exec`
    // runs in its step's own namespace).
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: unshare --pid needs root");
        return;
    }
    let dir = Dir::new();
    let (path, h) = holder_moved_away(&dir);
    let out = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--kill-child", "--"])
        .arg(crate::support::HOLDER)
        .arg("hold")
        .arg(&path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.starts_with("not-acquired busy: a process in another pid namespace holds"),
        "{said}"
    );
    drop(h);
}
