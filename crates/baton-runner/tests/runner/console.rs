//! The console: what the runner's process writes never blocks it, whatever
//! its reader does. Past what can wait in its buffer, text is dropped and
//! counted, and once the reader catches up one line says how much was
//! lost: every byte is either written or counted.
//!
//! A writer's standard error is its process's own, so each test starts a
//! writer of its own ([`crate::harness::role`]).

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Child;

use baton_runner::console;

use crate::harness::role;
use crate::support::{Dir, PATIENCE, eventually, written};
use baton_testkit::process::full_pipe;

listed!(TESTS:
    writing_to_a_stderr_nobody_reads_never_blocks,
    writing_to_a_stderr_whose_reader_is_gone_ends_quietly,
    what_stdout_lost_is_said_on_stderr_never_in_stdout,
);

listed!(ROLES: flood_stderr, flood_stdout);

/// What a writer writes: `LINES` lines of `LINE` bytes.
const LINE: usize = 1024;
const LINES: usize = 1024;

/// A writer ([`flood_stderr`], [`flood_stdout`]), killed when a failed
/// test leaves it blocked.
struct Writer(Child);

impl Writer {
    /// Starts [`flood_stderr`] with `stderr` as its standard error, and
    /// waits until it has written everything.
    fn start(dir: &Dir, stderr: OwnedFd) -> Self {
        Self::start_with(dir, "console::flood_stderr", |c| c.stderr(stderr))
    }

    /// Starts the writer `name`, its standard streams set by `streams`,
    /// and waits until it has written everything.
    fn start_with(
        dir: &Dir,
        name: &str,
        streams: impl FnOnce(&mut std::process::Command) -> &mut std::process::Command,
    ) -> Self {
        let mut c = role(name);
        c.arg(dir.path(""));
        let child = streams(&mut c).spawn().unwrap();
        let writer = Self(child);
        eventually("the writer to be done writing", || {
            written(&dir.path("written"))
        });
        writer
    }

    /// Lets it end, and checks that it ended well.
    fn finish(mut self, dir: &Dir) {
        std::fs::write(dir.path("go"), "1\n").unwrap();
        let status = baton_testkit::wait_for_exit(&mut self.0, "the writer");
        assert!(status.success(), "{status}");
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Writes `LINES` lines to standard error through the console, says so in
/// `DIR/written`, waits for `DIR/go`, then flushes and says `end`.
fn flood_stderr() {
    flood(|b| {
        console::stderr(b);
    });
}

/// As [`flood_stderr`], to standard output.
fn flood_stdout() {
    flood(|b| {
        console::stdout(b);
    });
}

/// What [`flood_stderr`] and [`flood_stdout`] do, through `write`.
fn flood(write: impl Fn(&[u8])) {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap());
    let mut line = vec![b'y'; LINE - 1];
    line.push(b'\n');
    for _ in 0..LINES {
        write(&line);
    }
    std::fs::write(dir.join("written"), "1\n").unwrap();
    eventually("the test to read", || dir.join("go").exists());
    console::flush(PATIENCE);
    write(b"end\n");
    console::flush(PATIENCE);
}

/// Everything read from `fd` until its writers are gone, on a thread.
fn read_all(fd: OwnedFd) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        std::fs::File::from(fd).read_to_end(&mut all).unwrap();
        String::from_utf8(all).unwrap()
    })
}

/// Standard output may be data piped on: the line that says how much of
/// it was lost goes to standard error, and standard output holds only what
/// was written to it.
fn what_stdout_lost_is_said_on_stderr_never_in_stdout() {
    let dir = Dir::new();
    let (r, w) = full_pipe();
    let (er, ew) = rustix::pipe::pipe().unwrap();
    let writer = Writer::start_with(&dir, "console::flood_stdout", |c| c.stdout(w).stderr(ew));
    let (out, err) = (read_all(r), read_all(er));
    writer.finish(&dir);
    let out = out.join().unwrap();
    let err = err.join().unwrap();
    let lines: Vec<&str> = out.trim_start_matches('x').lines().collect();
    assert_eq!(lines.last(), Some(&"end"));
    assert!(!out.contains("baton: "), "the note went into the data");
    let kept = lines
        .iter()
        .filter(|l| l.len() == LINE - 1 && l.bytes().all(|b| b == b'y'))
        .count();
    let dropped: usize = err
        .lines()
        .find_map(|l| {
            l.strip_prefix("baton: ")?
                .split_once(" bytes were not written to standard output")
        })
        .unwrap_or_else(|| panic!("no note on stderr: {err:?}"))
        .0
        .parse()
        .unwrap();
    assert!(dropped > 0, "nothing was dropped: was the pipe read?");
    assert_eq!(
        kept * LINE + dropped,
        LINES * LINE,
        "bytes were lost uncounted"
    );
}

fn writing_to_a_stderr_nobody_reads_never_blocks() {
    let dir = Dir::new();
    let (r, w) = full_pipe();
    // Every line is handed over while nobody reads.
    let writer = Writer::start(&dir, w);
    let reader = read_all(r);
    writer.finish(&dir);
    let text = reader.join().unwrap();
    let text = text.trim_start_matches('x');
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"end"));
    let kept = lines
        .iter()
        .filter(|l| l.len() == LINE - 1 && l.bytes().all(|b| b == b'y'));
    let kept = kept.count();
    let notes: Vec<&&str> = lines.iter().filter(|l| l.starts_with("baton: ")).collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    let dropped: usize = notes[0]
        .strip_prefix("baton: ")
        .and_then(|n| n.split_once(" bytes were not written to standard error"))
        .unwrap_or_else(|| panic!("{}", notes[0]))
        .0
        .parse()
        .unwrap();
    assert!(dropped > 0, "nothing was dropped: was the pipe read?");
    assert_eq!(
        kept * LINE + dropped,
        LINES * LINE,
        "bytes were lost without being counted"
    );
}

fn writing_to_a_stderr_whose_reader_is_gone_ends_quietly() {
    let dir = Dir::new();
    let (r, w) = rustix::pipe::pipe().unwrap();
    drop(r);
    Writer::start(&dir, w).finish(&dir);
}
