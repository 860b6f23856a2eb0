//! A command as the configuration writes it: a string for `/bin/sh -c`,
//! or a program and its arguments (`alert_command`, a step's `run`).
//!
//! This module owns the type and the argv it stands for. It must never
//! read a configuration (the reader does) nor start a process (the
//! runner does).

/// A command: a string for `/bin/sh -c`, or a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Run by `/bin/sh -c`.
    Shell(String),
    /// Run directly.
    Argv(Vec<String>),
}

impl Command {
    /// The program and its arguments.
    pub fn argv(&self) -> Vec<String> {
        match self {
            Command::Shell(s) => vec!["/bin/sh".into(), "-c".into(), s.clone()],
            Command::Argv(a) => a.clone(),
        }
    }
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Shell(s) => write!(f, "{s:?}"),
            Command::Argv(a) => write!(f, "{a:?}"),
        }
    }
}
