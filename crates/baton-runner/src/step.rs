//! One step: what to run and under which limits ([`StepSpec`]), and what it
//! came to ([`StepResult`]). The supervision itself is
//! [`crate::Session::run`]'s.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use jiff::Timestamp;

use crate::capture::Output;
use crate::status::Ending;

/// What a step reads on its standard input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    /// The runner's own standard input (an interactive `baton exec`).
    Inherit,
    /// Nothing (`/dev/null`), as for scheduled steps.
    Null,
}

/// A step to run: a program, its arguments and environment, and its limits.
#[derive(Debug)]
pub struct StepSpec {
    /// The program (found on `PATH` when it has no `/`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables added to (or replacing in) the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// Its working directory; the runner's when `None`.
    pub cwd: Option<PathBuf>,
    /// The hard limit: past it the tree is stopped and the step ends as
    /// [`Ending::TimedOut`].
    pub timeout: Option<Duration>,
    /// Between the first signal and SIGKILL when the tree is stopped.
    pub kill_grace: Duration,
    /// The first signal of a stop (SIGTERM unless the caller chose another).
    pub first_signal: i32,
    /// Standard input.
    pub stdin: Stdin,
    /// Standard output and error.
    pub output: Output,
    /// Hand the terminal's foreground to the step while it runs, when the
    /// runner holds it (an interactive `baton exec`).
    pub foreground: bool,
    /// Run the step in a PID namespace of its own, so that its whole tree
    /// dies with the runner however the runner dies (`kill -9` included).
    /// Where the kernel refuses it the step runs uncontained, as with
    /// `false`, and the run is told once ([`crate::Event::Uncontained`]).
    /// Uncontained, a step's process group is the evidence a judge reads
    /// after a killed runner, as it always was. Inside the namespace the
    /// step's own pids are the namespace's (its shell's `$$` is 2); `/proc`
    /// stays the host's.
    pub contain: bool,
}

impl StepSpec {
    /// A step running `program` with `args`, inheriting everything, stopped
    /// with SIGTERM and a 10 s grace, with no timeout.
    pub fn new(program: impl Into<OsString>, args: Vec<OsString>) -> Self {
        Self {
            program: program.into(),
            args,
            env: Vec::new(),
            cwd: None,
            timeout: None,
            kill_grace: Duration::from_secs(10),
            first_signal: crate::signals::SIGTERM,
            stdin: Stdin::Inherit,
            output: Output::Inherit,
            foreground: false,
            contain: true,
        }
    }
}

/// What a step came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepResult {
    /// How it ended.
    pub ending: Ending,
    /// The command's own exit status, when it exited (also after a timeout
    /// or a lost lease, when it exited on the first signal).
    pub code: Option<i32>,
    /// The signal the command died of, when it did.
    pub signal: Option<i32>,
    /// When it started (wall clock).
    pub started: Timestamp,
    /// How long it ran, until its whole tree was gone.
    pub duration: Duration,
    /// A signal the runner received (and passed on) while the step ran.
    pub interrupted: Option<i32>,
}

impl StepResult {
    /// The exit code that stands for this step: the command's own status,
    /// `128 + N`, 124, 76, 126 or 127.
    pub fn exit_code(&self) -> u8 {
        self.ending.exit_code()
    }
}
