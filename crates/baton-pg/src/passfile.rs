//! libpq's password file (the file `PGPASSFILE` names): one
//! `host:port:database:user:password` line per server, read as libpq reads
//! it, and looked up once per host a URL names.
//!
//! A field of `*` matches anything; `\:` and `\\` stand for `:` and `\`;
//! the first line that matches wins; a blank line or one starting with `#`
//! is skipped, as is a line of fewer than five fields. A host given as a
//! unix socket's directory matches that directory or the word `localhost`.
//!
//! This module parses and matches; it never reads the environment (the
//! caller names the file) and never decides what a missing line means: a
//! host without a line is tried without a password, as libpq tries it.

use std::path::Path;

use crate::error::Error;
use crate::warning::{self, Warning};

/// The most bytes of a password file read.
const MAX_BYTES: u64 = 1 << 20;

/// A password file, read whole.
pub(crate) struct PassFile {
    text: String,
}

impl PassFile {
    /// Reads `path`; with a warning when its group or others may read it
    /// (it is used all the same, as `[store] password_file` is).
    ///
    /// # Errors
    ///
    /// [`Error::PasswordFile`] when it cannot be read.
    pub(crate) fn read(path: &Path) -> Result<(Self, Option<Warning>), Error> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let failed = |cause| Error::PasswordFile {
            path: path.to_owned(),
            cause,
        };
        // Never blocked by a named pipe, nor fed without end by a device.
        let flags = rustix::fs::OFlags::NONBLOCK.bits() as i32;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(path)
            .map_err(failed)?;
        if !file.metadata().map_err(failed)?.is_file() {
            return Err(failed(std::io::Error::other(
                "not a regular file (a pipe, a device or a directory): name the file itself",
            )));
        }
        let mut text = String::new();
        (&mut file)
            .take(MAX_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(failed)?;
        if text.len() as u64 > MAX_BYTES {
            return Err(failed(std::io::Error::other(format!(
                "larger than {MAX_BYTES} bytes: a password file is a few lines"
            ))));
        }
        Ok((Self { text }, warning::password_file(path)))
    }

    /// The password of the first line that matches `host`, `port`, `db`
    /// and `user`; `None` when none does.
    pub(crate) fn lookup(&self, host: &str, port: u16, db: &str, user: &str) -> Option<String> {
        let port = port.to_string();
        for line in self.text.lines() {
            if line.trim_start().starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let fields = split(line);
            let [h, p, d, u, pw] = fields.as_slice() else {
                continue;
            };
            let hit = |pattern: &str, value: &str| pattern == "*" || pattern == value;
            // libpq matches a unix socket's directory, or the word localhost.
            let host_hit = hit(h, host) || (h == "localhost" && host.starts_with('/'));
            if host_hit && hit(p, &port) && hit(d, db) && hit(u, user) {
                return Some(pw.clone());
            }
        }
        None
    }
}

/// The five fields of a line, `\:` and `\\` unescaped.
fn split(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(next), Some(f)) = (chars.next(), fields.last_mut()) {
                    f.push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(f) = fields.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> PassFile {
        PassFile {
            text: text.to_owned(),
        }
    }

    #[test]
    fn the_first_matching_line_wins_with_wildcards_and_escapes() {
        let f = file(
            "# comment\n\nshort:line\nother:5432:*:u:no\nh:5432:d:u:first\\:half\\\\\n\
             h:*:*:*:second\n*:*:*:*:any\n",
        );
        assert_eq!(
            f.lookup("h", 5432, "d", "u").as_deref(),
            Some("first:half\\")
        );
        assert_eq!(f.lookup("h", 6000, "d", "u").as_deref(), Some("second"));
        assert_eq!(f.lookup("x", 1, "d", "v").as_deref(), Some("any"));
        assert_eq!(file("h:1:d:u:p\n").lookup("h", 2, "d", "u"), None);
    }

    #[test]
    fn a_host_field_may_name_its_port_and_a_socket_matches_localhost() {
        let f = file("db1\\:x:5432:*:*:escaped\nlocalhost:5432:*:*:sock\n");
        assert_eq!(
            f.lookup("db1:x", 5432, "d", "u").as_deref(),
            Some("escaped")
        );
        assert_eq!(
            f.lookup("/run/postgresql", 5432, "d", "u").as_deref(),
            Some("sock")
        );
        assert_eq!(f.lookup("db2", 5432, "d", "u"), None);
    }
}
