//! A state directory per test, and helpers to run the real `baton`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub use baton_testkit::{eventually, pause};

pub const BATON: &str = env!("CARGO_BIN_EXE_baton");

pub struct Env {
    pub tmp: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        Self {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    pub fn state(&self) -> PathBuf {
        self.tmp.path().join("state")
    }

    pub fn lock(&self, name: &str) -> PathBuf {
        self.state().join("locks").join(format!("{name}.lock"))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// `text` with this test's directory taken out, for a check that a
    /// word is absent: the directory's random name (`.tmpPT9UTC`) may
    /// hold any short word.
    pub fn without_dir(&self, text: &str) -> String {
        text.replace(&self.tmp.path().display().to_string(), "TMP")
    }

    /// `baton ARGS` with this state directory.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BATON);
        c.env("BATON_STATE_DIR", self.state()).args(args);
        c
    }

    /// Runs to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).stdin(Stdio::null()).output().unwrap()
    }

    /// Starts in the background, output captured.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// `baton exec --name NAME EXTRA... -- sh -c SCRIPT`.
    pub fn exec_sh(&self, name: &str, extra: &[&str], script: &str) -> Output {
        let mut args = vec!["exec", "--name", name];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        self.run(&args)
    }

    /// Starts `baton exec` of a job that sleeps `secs` seconds, and returns
    /// once the job is running (so the lease is held).
    pub fn hold(&self, name: &str, extra: &[&str], secs: u32) -> Child {
        let started = self.path(&format!("{name}.started"));
        let _ = std::fs::remove_file(&started);
        let child = self.spawn_sh(
            name,
            extra,
            &format!("echo up > {}; sleep {secs}", started.display()),
        );
        wait_for_file(&started);
        child
    }

    /// Ends a [`Env::hold`]: SIGTERM to baton, which forwards it to the job
    /// and releases. Returns baton's exit code (143: the job died of it).
    pub fn end(&self, mut holder: Child) -> i32 {
        signal(holder.id() as i32, rustix::process::Signal::TERM);
        holder.wait().unwrap().code().unwrap_or(-1)
    }

    pub fn spawn_sh(&self, name: &str, extra: &[&str], script: &str) -> Child {
        let mut args = vec!["exec", "--name", name];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        self.spawn(&args)
    }
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Waits for a file to exist and returns its trimmed content.
/// A shell snippet that writes the shell's own pid as the host sees it to
/// `path` (a job runs in a PID namespace of its own, where `$$` is the
/// namespace's number; `/proc` is the host's, and the shell opens the
/// redirection itself).
pub fn write_pid(path: &Path) -> String {
    format!(
        "read -r baton_test_pid _ < /proc/self/stat; echo $baton_test_pid > {}",
        path.display()
    )
}

/// A shell snippet that starts `command` in the background and writes its
/// host pid to `path` (`$!` is the namespace's number); with `detach`, in a
/// session of its own.
pub fn background(command: &str, path: &Path, detach: bool) -> String {
    format!(
        "{}sh -c '{}; exec {command}' &",
        if detach { "setsid " } else { "" },
        write_pid(path)
    )
}

/// A shell snippet that waits until `path` holds a line (a pid written by
/// [`background`]).
pub fn wait_pid_file(path: &Path) -> String {
    format!("until [ -s {0} ]; do sleep 0.01; done", path.display())
}

pub fn wait_for_file(p: &Path) -> String {
    eventually(&format!("{} to be written", p.display()), || {
        std::fs::read_to_string(p).is_ok_and(|s| s.ends_with('\n'))
    });
    std::fs::read_to_string(p).unwrap().trim().to_owned()
}

pub fn signal(pid: i32, sig: rustix::process::Signal) {
    let _ = rustix::process::kill_process(rustix::process::Pid::from_raw(pid).unwrap(), sig);
}

/// The `faketime` wrapper, once what dead wrappers left in `/dev/shm` is
/// gone. Each wrapper makes a semaphore and a shared memory named by its
/// pid and refuses to start when they are there already (`sem_open: File
/// exists`); a wrapper killed before its exit leaves them behind, and with
/// pids wrapping at 32,768 a later wrapper may be given the same pid.
pub fn faketime() -> Command {
    if let Ok(dir) = std::fs::read_dir("/dev/shm") {
        for entry in dir.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let pid = name
                .strip_prefix("faketime_shm_")
                .or_else(|| name.strip_prefix("sem.faketime_sem_"))
                .and_then(|p| p.parse::<i32>().ok());
            if let Some(pid) = pid
                && !alive(pid)
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    Command::new("faketime")
}

/// Whether process `pid` still runs code ([`baton_testkit::process::alive`]).
pub fn alive(pid: i32) -> bool {
    baton_testkit::process::alive(pid.unsigned_abs())
}

/// The pids of live processes whose environment carries `BATON_RUN_ID=run`:
/// everything a run started, however it detached.
pub fn processes_of_run(run: &str) -> Vec<i32> {
    let needle = format!("BATON_RUN_ID={run}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == needle.as_bytes()))
                && alive(pid)
        })
        .collect()
}

/// The state letter of process `pid` (`/proc/PID/stat` field 3).
pub fn state_of(pid: i32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit(')').next()?.trim_start().chars().next()
}

/// CPU time (user + system) process `pid` has used so far, in clock ticks.
pub fn cpu_ticks(pid: i32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = s.rsplit(')').next().unwrap().split_whitespace().collect();
    // Fields 14 and 15 of the line are the 12th and 13th after the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// A shell script, as a file (for jobs whose quoting would be unreadable).
pub fn script(env: &Env, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = env.path(name);
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// Whether this test runs as root (some tests need another user's files).
pub fn root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The verdict word `baton lock show --json` gives for NAME.
pub fn verdict(env: &Env, name: &str) -> String {
    let o = env.run(&["lock", "show", name, "--json"]);
    // 0 for a lock that can be judged, 3 for none, 4 for a record that
    // cannot be judged: each still prints its verdict.
    assert!([0, 3, 4].contains(&code(&o)), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v[0]["verdict"].as_str().unwrap().to_owned()
}

/// `command` set to read only `config`: the variables that would add to it
/// or override it (state directory, kill switch, store URL, password)
/// removed, and nothing on standard input.
pub fn only_config(command: &mut Command, config: &Path) {
    command
        .env("BATON_CONFIG", config)
        .env_remove("BATON_STATE_DIR")
        .env_remove("BATON_ENABLED")
        .env_remove("BATON_STORE_URL")
        .env_remove("PGPASSWORD")
        .stdin(Stdio::null());
}

/// `baton ARGS` reading only `config` ([`only_config`]).
pub fn baton_on(config: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BATON);
    c.args(args);
    only_config(&mut c, config);
    c
}

/// `c` run by `wrapper` (a program and its arguments, with `c`'s command
/// line after them): `c`'s environment and directory, the wrapper's
/// program. `wrapper` must name a program.
pub fn wrapped(c: &Command, wrapper: &[&str]) -> Command {
    let (program, before) = wrapper.split_first().expect("a wrapper program");
    let mut w = if *program == "faketime" {
        faketime()
    } else {
        Command::new(program)
    };
    w.args(before).arg(c.get_program()).args(c.get_args());
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => w.env(k, v),
            None => w.env_remove(k),
        };
    }
    if let Some(dir) = c.get_current_dir() {
        w.current_dir(dir);
    }
    w
}

pub use baton_testkit::mkfifo;

/// Gives uid 4242 read and write (and search, on a directory) through an
/// access ACL, as `setfacl -m u:4242:rwX` does: the mode's group bits become
/// the ACL's mask.
pub fn grant_through_acl(path: &Path) {
    let perm: u16 = if path.is_dir() { 7 } else { 6 };
    let mut acl = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (0x01u16, perm, u32::MAX),
        (0x02, perm, 4242),
        (0x04, 0, u32::MAX),
        (0x10, perm, u32::MAX),
        (0x20, 0, u32::MAX),
    ] {
        acl.extend(tag.to_le_bytes());
        acl.extend(perm.to_le_bytes());
        acl.extend(id.to_le_bytes());
    }
    rustix::fs::setxattr(
        path,
        "system.posix_acl_access",
        &acl,
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
}

/// Takes the ACL away again and sets `mode`.
pub fn drop_acl(path: &Path, mode: u32) {
    rustix::fs::removexattr(path, "system.posix_acl_access").unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
}
