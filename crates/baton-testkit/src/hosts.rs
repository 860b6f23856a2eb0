//! "Hosts" made of real Linux namespaces, for tests of baton on several
//! machines without several machines.
//!
//! A [`Host`] runs commands under `unshare --uts --pid --fork --mount-proc`:
//! a host name of its own (UTS namespace), a pid namespace of its own (its
//! processes cannot see, signal or be seen by those of other hosts, and
//! their pids repeat across hosts), and, in a mount namespace of its own,
//! its own `/etc/machine-id` and kernel boot id bind-mounted over the real
//! ones. baton reads those files the way it reads them on a real machine;
//! nothing in the product knows it is being tested.
//!
//! The first process of each command is the host's pid 1, a small init
//! (Python, as Debian ships it) that starts the command as its child and
//! reaps every process of the namespace until none is left: killing it with
//! SIGKILL ([`HostProcess::kill_host`]) takes every process of that host
//! with it, as when a machine dies; so does killing the `unshare` process
//! that started it (`--kill-child`). A command that exits, or is killed,
//! does not take what it left behind down with it: the host lives until
//! the last of those processes has ended, as a real machine does. (A pid 1
//! that exited with its command would kill every orphan, and hide exactly
//! the processes a killed supervisor leaves running.)
//!
//! Namespaces need root (or user namespaces); [`available`] says whether
//! this machine can make them, and tests that need them fail with a message
//! saying so rather than pass without testing.

use std::path::Path;
use std::process::{Child, Command};

/// Whether `unshare` can make the namespaces a [`Host`] needs here.
pub fn available() -> bool {
    Command::new("unshare")
        .args(["--uts", "--pid", "--fork", "--mount-proc", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One simulated machine.
#[derive(Debug)]
pub struct Host {
    name: String,
    dir: tempfile::TempDir,
}

/// The script that makes a host's identity, then becomes the host's init
/// ([`INIT`]), which runs the command. `$1` the init's program, `$2` host
/// name, `$3` machine-id file, `$4` boot-id file, then the command.
const ENTER: &str = r#"
set -e
init="$1"
shift
hostname "$1"
if [ -e /etc/machine-id ]; then mount --bind "$2" /etc/machine-id; fi
mount --bind "$3" /proc/sys/kernel/random/boot_id
shift 3
# Debian's interpreter where there is one: a version manager's shim would
# fork a dozen processes of its own before the command starts.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" -c "$init" "$@"
"#;

/// The host's pid 1: starts the command, then reaps every process of the
/// namespace (orphans are handed to it) until none is left, and exits with
/// the command's status.
const INIT: &str = r#"
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    except OSError as e:
        print(f"{sys.argv[1]}: {e}", file=sys.stderr)
        os._exit(127)
code = 0
while True:
    try:
        p, status = os.waitpid(-1, 0)
    except ChildProcessError:
        break
    except InterruptedError:
        continue
    if p == pid:
        code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"#;

impl Host {
    /// A host called `name`, with a machine id and a boot id of its own
    /// (both derived from `name`, so a test's hosts differ from each other
    /// and from the real machine).
    ///
    /// # Panics
    ///
    /// When the identity files cannot be written.
    pub fn new(name: &str) -> Host {
        let dir = tempfile::Builder::new()
            .prefix("baton-host-")
            .tempdir()
            .expect("a directory for the host's identity");
        let digest = fnv(name.as_bytes());
        let machine = format!("{digest:016x}{:016x}\n", fnv(&digest.to_le_bytes()));
        let b = format!("{:016x}{:016x}", digest.rotate_left(17), !digest);
        let boot = format!(
            "{}-{}-{}-{}-{}\n",
            &b[0..8],
            &b[8..12],
            &b[12..16],
            &b[16..20],
            &b[20..32]
        );
        std::fs::write(dir.path().join("machine-id"), machine).expect("write the machine id");
        std::fs::write(dir.path().join("boot_id"), boot).expect("write the boot id");
        Host {
            name: name.to_owned(),
            dir,
        }
    }

    /// A clone of `original`: a machine started from a copy of its disk,
    /// with the same host name and machine id and a boot id of its own.
    ///
    /// # Panics
    ///
    /// When the identity files cannot be written.
    pub fn clone_of(original: &Host) -> Host {
        let mut host = Host::new(&format!("{}-clone", original.name));
        std::fs::write(
            host.dir.path().join("machine-id"),
            format!("{}\n", original.machine_id()),
        )
        .expect("write the machine id");
        host.name.clone_from(&original.name);
        host
    }

    /// The host's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The host's machine id, as its processes read it.
    pub fn machine_id(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("machine-id"))
            .expect("read the machine id")
            .trim()
            .to_owned()
    }

    /// A command that runs `program` on this host. Arguments, environment
    /// and standard streams are set on the returned command as usual.
    pub fn command(&self, program: impl AsRef<Path>) -> HostCommand {
        let mut cmd = Command::new("unshare");
        // --kill-child: when unshare ends (or is killed), the host's pid 1
        // gets SIGKILL, and with it every process of the host.
        cmd.args([
            "--uts",
            "--pid",
            "--fork",
            "--mount-proc",
            "--kill-child",
            "--",
            "sh",
            "-c",
        ])
        .arg(ENTER)
        .arg("baton-host")
        .arg(INIT)
        .arg(&self.name)
        .arg(self.dir.path().join("machine-id"))
        .arg(self.dir.path().join("boot_id"))
        .arg(program.as_ref());
        HostCommand { cmd }
    }
}

/// A command to run on a [`Host`].
#[derive(Debug)]
pub struct HostCommand {
    cmd: Command,
}

impl HostCommand {
    /// The command, to add arguments, environment and streams.
    pub fn inner(&mut self) -> &mut Command {
        &mut self.cmd
    }

    /// The command itself. Killing the process it starts kills the host.
    pub fn into_inner(self) -> Command {
        self.cmd
    }

    /// Adds an argument.
    pub fn arg(&mut self, a: impl AsRef<std::ffi::OsStr>) -> &mut Self {
        self.cmd.arg(a);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// Sets an environment variable.
    pub fn env(
        &mut self,
        k: impl AsRef<std::ffi::OsStr>,
        v: impl AsRef<std::ffi::OsStr>,
    ) -> &mut Self {
        self.cmd.env(k, v);
        self
    }

    /// Starts it.
    ///
    /// # Panics
    ///
    /// When `unshare` cannot be started.
    pub fn spawn(&mut self) -> HostProcess {
        let child = self.cmd.spawn().expect("start unshare");
        HostProcess { child }
    }

    /// Runs it to its end and returns its output.
    ///
    /// # Panics
    ///
    /// When `unshare` cannot be started.
    pub fn output(&mut self) -> std::process::Output {
        self.cmd.output().expect("run unshare")
    }
}

/// A command running on a host.
#[derive(Debug)]
pub struct HostProcess {
    /// The `unshare` process (outside the host's pid namespace).
    pub child: Child,
}

impl HostProcess {
    /// The pid (in this test's namespace) of the host's pid 1, the init
    /// that runs the command, once it exists.
    pub fn init_pid(&self) -> Option<u32> {
        let children = format!("/proc/{0}/task/{0}/children", self.child.id());
        std::fs::read_to_string(children)
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    /// The pid (in this test's namespace) of the command the host's pid 1
    /// runs, once it exists: killing it leaves the host up, as when one
    /// process of a machine is killed.
    pub fn command_pid(&self) -> Option<u32> {
        let init = self.init_pid()?;
        let children = format!("/proc/{init}/task/{init}/children");
        std::fs::read_to_string(children)
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    /// Kills the whole host: SIGKILL to its pid 1, which makes the kernel
    /// kill every process in its pid namespace, as when a machine dies.
    /// Waits for `unshare` to end.
    ///
    /// # Panics
    ///
    /// When the host's pid 1 cannot be found within [`crate::PATIENCE`].
    pub fn kill_host(&mut self) {
        let mut init = None;
        crate::eventually("the host's first process", || {
            init = self.init_pid();
            init.is_some()
        });
        if let Some(pid) = init.and_then(|p| i32::try_from(p).ok())
            && let Some(pid) = rustix::process::Pid::from_raw(pid)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        let _ = self.child.wait();
    }
}

/// FNV-1a, to derive stable identities from a host's name.
fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
