//! Job control at a terminal: `baton exec` typed at an interactive shell
//! hands its command the terminal, and Ctrl-Z, `fg` and `bg` then work as
//! for any command: the command stopped from the terminal stops baton with
//! it (the shell gets its prompt back, the lease is kept), and continued,
//! baton continues it. A stop that outlasts the lease ends the run as a
//! lost lease, the command never running again.
//!
//! The shell is a real `bash -i` on a pseudo-terminal of script(1), typed
//! into through script's standard input, so ^Z reaches the terminal's line
//! discipline as a key would.

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};

use rustix::process::Signal;

use crate::support::{BATON, Env, alive, eventually, signal, state_of, verdict, wait_for_file};

/// An interactive shell on a terminal of its own.
struct Terminal {
    shell: Child,
    keys: ChildStdin,
}

impl Terminal {
    fn open(env: &Env) -> Self {
        let mut shell = Command::new("script")
            .args(["-qec", "bash --norc --noprofile -i", "/dev/null"])
            .env("BATON_STATE_DIR", env.state())
            .env("PS1", "$ ")
            .env("HISTFILE", "/dev/null")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let keys = shell.stdin.take().unwrap();
        Self { shell, keys }
    }

    fn type_in(&mut self, keys: &str) {
        self.keys.write_all(keys.as_bytes()).unwrap();
        self.keys.flush().unwrap();
    }

    /// What the shell says `$?` is, once the job in the foreground is done
    /// with or stopped.
    fn status(&mut self, env: &Env, name: &str) -> String {
        let file = env.path(name);
        self.type_in(&format!("echo \"$?\" > {}\n", file.display()));
        wait_for_file(&file).trim().to_owned()
    }

    fn close(mut self) {
        self.type_in("exit\n");
        baton_testkit::wait_for_exit(&mut self.shell, "the interactive shell to exit");
    }
}

impl Drop for Terminal {
    /// A test that failed midway leaves no shell behind: its terminal
    /// hangs up, and the shell's jobs with it.
    fn drop(&mut self) {
        let _ = self.shell.kill();
        let _ = self.shell.wait();
    }
}

/// Types the `baton exec` of a command that says it is up, then reads a
/// line from the terminal and writes what it got; returns baton's pid once
/// the command is up.
fn start(env: &Env, term: &mut Terminal, options: &str) -> i32 {
    start_then(env, term, options, "")
}

/// [`start`], with `end` at the end of the command line (`&`).
fn start_then(env: &Env, term: &mut Terminal, options: &str, end: &str) -> i32 {
    let up = env.path("up");
    let got = env.path("got");
    term.type_in(&format!(
        "{BATON} exec --name tty {options} -- sh -c 'echo up > {}; read a; echo \"got:$a\" > {}' \
         {end}\n",
        up.display(),
        got.display()
    ));
    wait_for_file(&up);
    baton_of(env)
}

/// The pid of the `baton` whose command line names this test's directory
/// (not its step's init, a copy of it by another name).
fn baton_of(env: &Env) -> i32 {
    let dir = env.tmp.path().display().to_string();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if comm.trim() == "baton" && cmdline.starts_with(BATON) && cmdline.contains(&dir) {
            return pid;
        }
    }
    panic!("no baton process names {dir}");
}

/// Ctrl-Z: baton is seen stopped with its command, and the shell, its
/// prompt back, says the job was stopped by SIGTSTP (128 + 20).
fn ctrl_z(env: &Env, term: &mut Terminal, baton: i32) {
    term.type_in("\x1a");
    eventually("baton to be stopped with its command", || {
        state_of(baton) == Some('T')
    });
    assert_eq!(term.status(env, "stopped"), "148");
}

/// `fg`: baton runs again, and its command, in the foreground, reads
/// `word` from the terminal; both end well and the lock is free.
fn fg_and_answer(env: &Env, term: &mut Terminal, baton: i32, word: &str) {
    term.type_in("fg\n");
    eventually("baton to run again", || {
        state_of(baton).is_some_and(|s| s != 'T')
    });
    term.type_in(&format!("{word}\n"));
    assert_eq!(
        wait_for_file(&env.path("got")).trim(),
        format!("got:{word}")
    );
    assert_eq!(term.status(env, "done"), "0");
    assert_eq!(verdict(env, "tty"), "free");
}

#[test]
fn ctrl_z_stops_baton_with_its_command_and_fg_continues_both() {
    let env = Env::new();
    let mut term = Terminal::open(&env);
    let baton = start(&env, &mut term, "");
    // The command waits in `read` at the terminal it was handed; ^Z stops
    // it, and baton stops with it.
    ctrl_z(&env, &mut term, baton);
    assert_eq!(
        verdict(&env, "tty"),
        "live",
        "a stopped run keeps its lease"
    );
    // fg: baton continues, hands the command the terminal again, and the
    // command reads what is typed next.
    fg_and_answer(&env, &mut term, baton, "hello");
    term.close();
}

#[test]
fn bg_leaves_the_terminal_to_the_shell_until_the_command_reads_it() {
    let env = Env::new();
    let mut term = Terminal::open(&env);
    let baton = start(&env, &mut term, "");
    ctrl_z(&env, &mut term, baton);
    // bg: baton runs on in the background, its command with it, which is
    // stopped again by its read of the terminal (SIGTTIN), and baton with
    // it: the shell still has the terminal.
    term.type_in("bg\n");
    eventually("baton to be stopped again by its command's read", || {
        baton_testkit::pause(100);
        state_of(baton) == Some('T')
    });
    assert_eq!(
        term.status(&env, "shell"),
        "0",
        "the shell kept the terminal"
    );
    fg_and_answer(&env, &mut term, baton, "later");
    term.close();
}

#[test]
fn a_stop_longer_than_the_ttl_goes_on_once_a_renewal_lands() {
    // Nothing renewed the lease while baton was stopped; nothing could take
    // it either (its holder is alive on this host, and init's deadline,
    // the kill grace after the TTL, is not reached): continued, baton
    // renews, then lets the command run on.
    let env = Env::new();
    let mut term = Terminal::open(&env);
    let baton = start(&env, &mut term, "--ttl 1s --kill-grace 20s");
    ctrl_z(&env, &mut term, baton);
    baton_testkit::pause(2_500);
    fg_and_answer(&env, &mut term, baton, "again");
    term.close();
}

#[test]
fn a_stop_past_the_deadline_ends_the_run_as_lost_and_the_command_never_runs_again() {
    // Stopped past the deadline its last renewal set (TTL, renewal wait and
    // kill grace after it): the step's init has killed the command, and
    // continued, baton says the lease was lost.
    let env = Env::new();
    let mut term = Terminal::open(&env);
    let baton = start(&env, &mut term, "--ttl 1s --kill-grace 200ms");
    ctrl_z(&env, &mut term, baton);
    baton_testkit::pause(5_000);
    term.type_in("fg\n");
    assert_eq!(term.status(&env, "lost"), "76");
    assert!(!alive(baton));
    assert!(!env.path("got").exists(), "the command ran on");
    assert_eq!(verdict(&env, "tty"), "free");
    term.close();
}

#[test]
fn ctrl_z_stops_a_command_that_has_no_terminal_with_baton() {
    // The command's input is not the terminal: baton keeps the foreground,
    // and ^Z reaches baton, which stops its command with it (by SIGTSTP's
    // default action it stopped alone, its command running on).
    let env = Env::new();
    let mut term = Terminal::open(&env);
    let up = env.path("up");
    let ticks = env.path("ticks");
    term.type_in(&format!(
        "{BATON} exec --name tty -- sh -c 'echo up > {}; for i in $(seq 30); do echo $i >> {}; \
         sleep 0.1; done' < /dev/null\n",
        up.display(),
        ticks.display()
    ));
    wait_for_file(&up);
    let baton = baton_of(&env);
    ctrl_z(&env, &mut term, baton);
    let count = || {
        std::fs::read_to_string(&ticks)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let before = count();
    baton_testkit::pause(1_000);
    assert_eq!(
        count(),
        before,
        "the command ran on while baton was stopped"
    );
    assert!(before < 30, "{before}");
    term.type_in("fg\n");
    assert_eq!(term.status(&env, "done"), "0");
    assert_eq!(count(), 30);
    assert_eq!(verdict(&env, "tty"), "free");
    term.close();
}

#[test]
fn a_command_of_a_baton_started_in_the_background_waits_for_fg_to_read_the_terminal() {
    // `baton exec … &`: the terminal is the shell's, so the command is
    // stopped by its read of it (SIGTTIN), and baton's job with it, as any
    // background job that reads the terminal; `fg` gives it the terminal.
    // (The command stayed stopped for ever, baton running and renewing.)
    let env = Env::new();
    let mut term = Terminal::open(&env);
    let baton = start_then(&env, &mut term, "", "&");
    eventually("baton to be stopped with its command", || {
        state_of(baton) == Some('T')
    });
    fg_and_answer(&env, &mut term, baton, "foreground");
    term.close();
}

/// The pid of the process whose whole command line is `args`.
fn pid_running(args: &[&str]) -> Option<i32> {
    let want: Vec<u8> = args
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
        let pid = e.file_name().to_string_lossy().parse::<i32>().ok()?;
        (std::fs::read(e.path().join("cmdline")).ok()? == want).then_some(pid)
    })
}

#[test]
fn a_shell_gone_while_part_of_the_command_is_stopped_hangs_it_up_and_frees_the_lock() {
    // The command ignores SIGTSTP and SIGHUP, its child does not (`env
    // --default-signal`): ^Z stops the child alone, which baton cannot see
    // (only its command's own stops reach it), so the shell waits. Then
    // the shell dies: the kernel sends the terminal's foreground group,
    // the command's, SIGHUP, which the stopped child keeps pending and the
    // command ignores. Without baton the kernel would also send the
    // orphaned job SIGHUP and SIGCONT; the command's group, whose parent
    // baton lives on, is no orphan, so baton must.
    // (Before, the stopped child, its command and baton stayed for ever,
    // the lock `live`.)
    let env = Env::new();
    let mut term = Terminal::open(&env);
    let up = env.path("up");
    term.type_in(&format!(
        "{BATON} exec --name tty -- sh -c 'trap \"\" TSTP HUP; echo up > {}; env \
         --default-signal=TSTP,HUP sleep 61.25'\n",
        up.display(),
    ));
    wait_for_file(&up);
    let baton = baton_of(&env);
    let mut child = None;
    eventually("the command's child to start", || {
        child = pid_running(&["sleep", "61.25"]);
        child.is_some()
    });
    let child = child.unwrap();
    term.type_in("\x1a");
    eventually("the child to be stopped", || state_of(child) == Some('T'));
    assert_ne!(
        state_of(baton),
        Some('T'),
        "baton saw no stop of its command"
    );
    // The interactive shell is killed (a terminal emulator that crashed).
    let stat = std::fs::read_to_string(format!("/proc/{baton}/stat")).unwrap();
    let shell: i32 = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    signal(shell, Signal::KILL);
    eventually("baton to end once the shell is gone", || !alive(baton));
    assert!(!alive(child));
    assert_eq!(verdict(&env, "tty"), "free");
}
