//! What a step came to, and the exit code that stands for it. This is the one
//! place where a process's end becomes a number: the command's own status,
//! `128 + N` for death by signal N, 124 for a timeout (as `timeout(1)`), 76
//! for a lost lease, 126 and 127 for a command that could not be executed or
//! found (as shells do).

use std::io;
use std::path::Path;

/// The exit code of a run whose lease was lost while it ran.
pub const LEASE_LOST: u8 = 76;
/// The exit code of a step stopped for a later run of its job, when its
/// command has no status of its own: 128 + SIGTERM, the first signal such
/// a stop sends.
pub const REPLACED: u8 = 143;
/// The exit code of a step stopped by its timeout.
pub const TIMED_OUT: u8 = 124;

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The command exited with this status.
    Exited(i32),
    /// The command died of this signal.
    Signaled(i32),
    /// The step ran past its timeout and its tree was stopped.
    TimedOut,
    /// The lease was lost; the step's tree was stopped (or it never started).
    LeaseLost,
    /// The run was asked to stop for a later run of its job
    /// ([`crate::StopAsk`]); the step's tree was stopped (or it never
    /// started). The lease is still held.
    Replaced,
    /// The command could not be started.
    NotStarted(SpawnFailure),
}

impl Ending {
    /// Whether the step succeeded (exited 0).
    pub fn success(&self) -> bool {
        *self == Self::Exited(0)
    }

    /// The exit code that stands for this ending.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Exited(c) => u8::try_from(*c).unwrap_or(1),
            Self::Signaled(s) => exit_code_of(None, Some(*s)),
            Self::TimedOut => TIMED_OUT,
            Self::LeaseLost => LEASE_LOST,
            Self::Replaced => REPLACED,
            Self::NotStarted(f) => f.exit_code(),
        }
    }

    /// In words: `exited with status 3`, `died of signal 9 (SIGKILL)`, ….
    pub fn describe(&self) -> String {
        match self {
            Self::Exited(c) => format!("exited with status {c}"),
            Self::Signaled(s) => format!("died of signal {s} ({})", signal_name(*s)),
            Self::TimedOut => "timed out and was stopped".into(),
            Self::LeaseLost => "was stopped because the lease was lost".into(),
            Self::Replaced => "was stopped for a later run of its job (replaced)".into(),
            Self::NotStarted(f) => format!("could not be started: {}", f.message),
        }
    }
}

/// `code`, or `128 + signal`.
pub fn exit_code_of(code: Option<i32>, signal: Option<i32>) -> u8 {
    match (code, signal) {
        (Some(c), _) => u8::try_from(c).unwrap_or(1),
        (None, Some(s)) => u8::try_from(128 + s).unwrap_or(255),
        (None, None) => 1,
    }
}

/// A signal's name, `SIGTERM` for 15.
pub fn signal_name(s: i32) -> String {
    const NAMES: [&str; 31] = [
        "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2",
        "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG",
        "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS",
    ];
    usize::try_from(s - 1)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("signal {s}"), |n| format!("SIG{n}"))
}

/// A signal's number, from a name (`TERM`, `SIGTERM`, `term`) or a number.
pub fn signal_number(text: &str) -> Option<i32> {
    if let Ok(n) = text.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let upper = text.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    (1..=31).find(|&n| signal_name(n) == format!("SIG{name}"))
}

/// Why a command could not be started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnKind {
    /// No such command (127).
    NotFound,
    /// It exists but cannot be executed, or its `#!` interpreter is missing
    /// (126).
    NotExecutable,
    /// Anything else (a failure of the runner itself).
    Other,
}

/// A command that could not be started, with a message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnFailure {
    /// The kind.
    pub kind: SpawnKind,
    /// What happened, naming the command.
    pub message: String,
}

impl SpawnFailure {
    /// 127, 126, or 125 for a failure of the runner itself.
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            SpawnKind::NotFound => 127,
            SpawnKind::NotExecutable => 126,
            SpawnKind::Other => 125,
        }
    }

    /// As [`SpawnFailure::classify`], for `program` started in `cwd`: a
    /// working directory that is missing, not a directory or not
    /// searchable is named as the cause (the kernel's error is the same
    /// `ENOENT` or `EACCES` as for the program itself).
    pub fn classify_in(program: &std::ffi::OsStr, cwd: Option<&Path>, e: &io::Error) -> Self {
        let mut f = Self::classify(program, e);
        let Some(dir) =
            cwd.filter(|_| f.kind != SpawnKind::Other || e.kind() == io::ErrorKind::NotADirectory)
        else {
            return f;
        };
        let problem = match std::fs::metadata(dir) {
            Err(m) if m.kind() == io::ErrorKind::NotFound => Some("does not exist"),
            Err(m) if m.kind() == io::ErrorKind::PermissionDenied => {
                Some("cannot be reached (permission denied)")
            }
            Ok(m) if !m.is_dir() => Some("is not a directory"),
            _ if e.kind() == io::ErrorKind::PermissionDenied
                && rustix::fs::access(dir, rustix::fs::Access::EXEC_OK).is_err() =>
            {
                Some("cannot be entered (permission denied)")
            }
            _ => None,
        };
        if let Some(problem) = problem {
            f.message = format!(
                "{}: its working directory {} {problem} (the step's `cwd`)",
                Path::new(program).display(),
                dir.display()
            );
        }
        f
    }

    /// Classifies the error `spawn` gave for `program`. `ENOENT` for a file
    /// that exists means its `#!` interpreter is missing, which is not the
    /// same as the command missing.
    pub fn classify(program: &std::ffi::OsStr, e: &io::Error) -> Self {
        let shown = Path::new(program).display().to_string();
        let errno = e.raw_os_error().map(rustix::io::Errno::from_raw_os_error);
        match (e.kind(), errno) {
            (io::ErrorKind::NotFound, _) => match resolve(program) {
                Some(path) => {
                    let interp = interpreter(&path);
                    Self {
                        kind: SpawnKind::NotExecutable,
                        message: match interp {
                            Some(i) => format!(
                                "{shown}: its interpreter {i:?} (from its #! line) was not found"
                            ),
                            None => format!(
                                "{shown}: exists, but the kernel could not find what it needs to \
                                 run it (a missing interpreter or loader): {e}"
                            ),
                        },
                    }
                }
                None => Self {
                    kind: SpawnKind::NotFound,
                    message: format!("{shown}: command not found"),
                },
            },
            (io::ErrorKind::PermissionDenied, _) => Self {
                kind: SpawnKind::NotExecutable,
                message: format!("{shown}: permission denied (is it executable?)"),
            },
            (_, Some(rustix::io::Errno::NOEXEC)) => Self {
                kind: SpawnKind::NotExecutable,
                message: format!("{shown}: not an executable format (a script without #!?)"),
            },
            (_, Some(rustix::io::Errno::ISDIR)) => Self {
                kind: SpawnKind::NotExecutable,
                message: format!("{shown}: is a directory"),
            },
            _ => Self {
                kind: SpawnKind::Other,
                message: format!("failed to start {shown}: {e}"),
            },
        }
    }
}

/// Where `program` would be found: itself when it names a path, else the
/// first executable regular file of that name on `$PATH`.
fn resolve(program: &std::ffi::OsStr) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let p = Path::new(program);
    let is_file = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file());
    if p.components().count() > 1 || program.as_encoded_bytes().contains(&b'/') {
        return is_file(p).then(|| p.to_owned());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(p)).find(|c| {
        std::fs::metadata(c).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The interpreter a script's `#!` line names.
fn interpreter(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let end = line.iter().position(|&b| b == b'\n').unwrap_or(line.len());
    let text = String::from_utf8_lossy(&line[..end]);
    text.split_ascii_whitespace().next().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings_map_to_the_documented_codes() {
        assert_eq!(Ending::Exited(3).exit_code(), 3);
        assert_eq!(Ending::Signaled(9).exit_code(), 137);
        assert_eq!(Ending::TimedOut.exit_code(), 124);
        assert_eq!(Ending::LeaseLost.exit_code(), 76);
        assert!(Ending::Exited(0).success());
        assert!(!Ending::Signaled(15).success());
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_number("TERM"), Some(15));
        assert_eq!(signal_number("sigint"), Some(2));
        assert_eq!(signal_number("9"), Some(9));
        assert_eq!(signal_number("NOPE"), None);
        assert_eq!(signal_number("0"), None);
    }

    #[test]
    fn a_missing_interpreter_is_not_a_missing_script() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s.sh");
        std::fs::write(&script, "#!/nonexistent/interp -x\necho hi\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = std::process::Command::new(&script).spawn().unwrap_err();
        let f = SpawnFailure::classify(script.as_os_str(), &e);
        assert_eq!(f.kind, SpawnKind::NotExecutable, "{}", f.message);
        assert!(f.message.contains("/nonexistent/interp"), "{}", f.message);
        let missing = dir.path().join("missing");
        let e = std::process::Command::new(&missing).spawn().unwrap_err();
        let f = SpawnFailure::classify(missing.as_os_str(), &e);
        assert_eq!(f.kind, SpawnKind::NotFound);
        assert_eq!(f.exit_code(), 127);
    }

    #[test]
    fn a_missing_working_directory_is_named_not_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        let e = std::process::Command::new("/bin/sh")
            .current_dir(&gone)
            .spawn()
            .unwrap_err();
        let f = SpawnFailure::classify_in("/bin/sh".as_ref(), Some(&gone), &e);
        assert!(f.message.contains("working directory"), "{}", f.message);
        assert!(f.message.contains("does not exist"), "{}", f.message);
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let e = std::process::Command::new("/bin/sh")
            .current_dir(&file)
            .spawn()
            .unwrap_err();
        let f = SpawnFailure::classify_in("/bin/sh".as_ref(), Some(&file), &e);
        assert!(f.message.contains("is not a directory"), "{}", f.message);
        // A working directory that is there leaves the program's own cause.
        let missing = dir.path().join("missing");
        let e = std::process::Command::new(&missing)
            .current_dir(dir.path())
            .spawn()
            .unwrap_err();
        let f = SpawnFailure::classify_in(missing.as_os_str(), Some(dir.path()), &e);
        assert_eq!(f.kind, SpawnKind::NotFound, "{}", f.message);
        assert!(!f.message.contains("working directory"), "{}", f.message);
    }
}
