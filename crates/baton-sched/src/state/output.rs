//! A step attempt's output on its way to the job's log, within the step's
//! `output_limit`: the start and the end of it are kept, where a failing
//! command's usage line and its last error are, and what lay between is
//! cut, with a note saying how much.
//!
//! The first half of the limit is written as it comes, in whole lines (a
//! line longer than 64 KiB as it is). What comes after it is held in
//! memory, the newest half of the limit and no more, and written when the
//! output ends, after the note: so a supervisor killed with `kill -9`
//! leaves the start in the log and loses the end it held. The tail starts
//! on a line of its own when a line break is in it. A run in a slot of a
//! job that may run several at once (`max_concurrent`) tags each line it
//! writes with its slot ([`slot_tag`]), so that runs side by side in one
//! dated log can be told apart (a line longer than 64 KiB is then written
//! as lines of at most that, each tagged). Nothing here may stop a run: a log write
//! that fails is kept for the caller to say.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use jiff::Timestamp;

use crate::state::logs::Logs;

/// A line longer than this goes to the log as it is, unfinished.
const LONG_LINE: usize = 64 * 1024;

/// The tag each line of output of a run in slot `slot` starts with in the
/// job's log (`[slot 2] `), for a job that may run several at once or a run
/// left in a slot above its job's `max_concurrent`; `None` for the others,
/// whose lines are written as they come.
#[must_use]
pub fn slot_tag(max_concurrent: u32, slot: u32) -> Option<String> {
    (max_concurrent > 1 || slot > 1).then(|| format!("[slot {slot}] "))
}

/// A step attempt's output on its way to the job's log: the first half of
/// `limit` kept as it comes, the last half kept at the end, and a note in
/// between saying how much was cut. With `tee`, the output is also copied
/// to this process's standard output as it comes.
pub struct OutputSink {
    logs: Logs,
    job: String,
    at: Timestamp,
    limit: u64,
    /// Room left for the start.
    head_room: u64,
    /// The start not yet written (an unfinished line).
    partial: Vec<u8>,
    /// The newest bytes after the start, at most `tail_room`.
    tail: VecDeque<u8>,
    tail_room: usize,
    /// The last byte dropped from the tail's front: whether the tail
    /// starts a line.
    dropped_last: Option<u8>,
    kept: u64,
    cut: u64,
    tee: bool,
    /// Bytes not copied to standard output: its reader was too far behind.
    not_teed: u64,
    failed: Option<String>,
    done: Arc<Mutex<Option<Captured>>>,
    /// What each line written starts with ([`slot_tag`]).
    tag: Option<String>,
    /// Whether the next byte written starts a line.
    line_start: bool,
}

/// What became of an attempt's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// Bytes kept (its start and its end).
    pub kept: u64,
    /// Bytes cut between them (over the limit).
    pub cut: u64,
    /// A write that failed, if one did.
    pub failed: Option<String>,
}

impl OutputSink {
    /// A sink for one attempt of `job` that started at `at`. The returned
    /// cell holds the summary once the output has ended.
    pub fn new(
        logs: Logs,
        job: &str,
        at: Timestamp,
        limit: u64,
        tee: bool,
    ) -> (Self, Arc<Mutex<Option<Captured>>>) {
        let done = Arc::new(Mutex::new(None));
        let tail = limit / 2;
        (
            Self {
                logs,
                job: job.to_owned(),
                at,
                limit,
                head_room: limit - tail,
                partial: Vec::new(),
                tail: VecDeque::new(),
                tail_room: usize::try_from(tail).unwrap_or(usize::MAX),
                dropped_last: None,
                kept: 0,
                cut: 0,
                tee,
                not_teed: 0,
                failed: None,
                done: Arc::clone(&done),
                tag: None,
                line_start: true,
            },
            done,
        )
    }

    /// Starts each line this sink writes with `tag` ([`slot_tag`]).
    #[must_use]
    pub fn tagged(mut self, tag: Option<String>) -> Self {
        self.tag = tag;
        self
    }

    fn write(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let tagged;
        let bytes = match &self.tag {
            None => bytes,
            Some(tag) => {
                let mut out = Vec::with_capacity(bytes.len() + tag.len());
                for &b in bytes {
                    if self.line_start {
                        out.extend_from_slice(tag.as_bytes());
                    }
                    out.push(b);
                    self.line_start = b == b'\n';
                }
                // A line longer than `LONG_LINE` goes out in pieces: each
                // ends its own line here, so that another slot's lines and
                // frames never land inside it, and the rest is tagged anew.
                if !self.line_start {
                    out.push(b'\n');
                    self.line_start = true;
                }
                tagged = out;
                &tagged
            }
        };
        if let Err(e) = self.logs.job_lines(&self.job, self.at, bytes)
            && self.failed.is_none()
        {
            self.failed = Some(format!("the output log is not written: {e}"));
        }
    }

    /// Keeps `bytes` as the newest of the tail, dropping its oldest.
    fn keep_tail(&mut self, bytes: &[u8]) {
        if bytes.len() >= self.tail_room {
            let drop = bytes.len() - self.tail_room;
            self.cut += (self.tail.len() + drop) as u64;
            if let Some(&b) = bytes[..drop].last() {
                self.dropped_last = Some(b);
            } else if let Some(&b) = self.tail.back() {
                self.dropped_last = Some(b);
            }
            self.tail.clear();
            self.tail.extend(&bytes[drop..]);
            return;
        }
        let over = (self.tail.len() + bytes.len()).saturating_sub(self.tail_room);
        for _ in 0..over {
            self.dropped_last = self.tail.pop_front();
        }
        self.cut += over as u64;
        self.tail.extend(bytes);
    }

    /// The tail as it goes to the log: from its first whole line when it
    /// starts mid-line and a line break follows in it.
    fn tail_text(&mut self) -> Vec<u8> {
        let mut tail: Vec<u8> = std::mem::take(&mut self.tail).into();
        if self.dropped_last.is_some_and(|b| b != b'\n')
            && let Some(i) = tail.iter().position(|&b| b == b'\n')
            && i + 1 < tail.len()
        {
            self.cut += (i + 1) as u64;
            tail.drain(..=i);
        }
        tail
    }
}

impl baton_runner::Sink for OutputSink {
    fn chunk(&mut self, bytes: &[u8]) {
        if self.tee {
            // Never waits on the reader: a supervisor is renewing meanwhile.
            self.not_teed += baton_runner::console::stdout(bytes) as u64;
        }
        let take = usize::try_from(self.head_room)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        self.head_room -= take as u64;
        self.partial.extend_from_slice(&bytes[..take]);
        self.keep_tail(&bytes[take..]);
        // Whole lines go out; a very long line goes out as it is.
        let end = match self.partial.iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if self.partial.len() >= LONG_LINE => self.partial.len(),
            None => return,
        };
        let lines: Vec<u8> = self.partial.drain(..end).collect();
        self.kept += lines.len() as u64;
        self.write(&lines);
    }

    fn end(&mut self) {
        let mut rest = std::mem::take(&mut self.partial);
        self.kept += rest.len() as u64;
        let tail = self.tail_text();
        self.kept += tail.len() as u64;
        let ends_line = |v: &Vec<u8>| v.is_empty() || v.last() == Some(&b'\n');
        if self.cut > 0 {
            // The note on a line of its own (with nothing cut, the start
            // and the end are one text again).
            if !ends_line(&rest) {
                rest.push(b'\n');
            }
            rest.extend_from_slice(
                format!(
                    "[baton: … {} bytes cut: output_limit = {} keeps the first {} and the last \
                     {} …]\n",
                    self.cut,
                    crate::units::show_size(self.limit),
                    crate::units::show_size(self.limit - self.limit / 2),
                    crate::units::show_size(self.limit / 2),
                )
                .as_bytes(),
            );
        }
        rest.extend_from_slice(&tail);
        if !ends_line(&rest) {
            rest.push(b'\n');
        }
        if self.not_teed > 0 {
            rest.extend_from_slice(
                format!(
                    "[baton: {} bytes of this output were not copied to standard output: it was \
                     not being read]\n",
                    self.not_teed
                )
                .as_bytes(),
            );
        }
        self.write(&rest);
        if let Ok(mut d) = self.done.lock() {
            *d = Some(Captured {
                kept: self.kept,
                cut: self.cut,
                failed: self.failed.take(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use baton_runner::Sink;
    use jiff::tz::TimeZone;

    use super::*;

    /// What a sink of `limit` bytes writes of `chunks` to the job's log,
    /// and what it says it kept.
    fn written(limit: u64, chunks: &[&[u8]]) -> (String, Captured) {
        let tmp = tempfile::tempdir().unwrap();
        let l = Logs::new(tmp.path(), TimeZone::UTC);
        let t: Timestamp = "2026-11-29T10:00:00Z".parse().unwrap();
        let (mut s, done) = OutputSink::new(l.clone(), "job", t, limit, false);
        for c in chunks {
            s.chunk(c);
        }
        s.end();
        let text = std::fs::read_to_string(l.dated("job", t)).unwrap();
        let c = done.lock().unwrap().clone().unwrap();
        (text, c)
    }

    #[test]
    fn a_slots_lines_each_start_with_its_tag_however_they_come() {
        let tmp = tempfile::tempdir().unwrap();
        let l = Logs::new(tmp.path(), TimeZone::UTC);
        let t: Timestamp = "2026-11-29T10:00:00Z".parse().unwrap();
        let (s, done) = OutputSink::new(l.clone(), "job", t, 1024, false);
        let mut s = s.tagged(slot_tag(3, 2));
        for c in [&b"one\ntw"[..], b"o\n", b"\nthree", b" and the end"] {
            s.chunk(c);
        }
        s.end();
        let text = std::fs::read_to_string(l.dated("job", t)).unwrap();
        assert_eq!(
            text,
            "[slot 2] one\n[slot 2] two\n[slot 2] \n[slot 2] three and the end\n"
        );
        // What was kept counts the output, not the tags.
        assert_eq!(done.lock().unwrap().clone().unwrap().kept, 26);
        assert_eq!(slot_tag(1, 1), None);
        // A line longer than the longest written whole: in tagged pieces.
        let (s, _) = OutputSink::new(l.clone(), "long", t, 1 << 20, false);
        let mut s = s.tagged(slot_tag(2, 1));
        s.chunk(&vec![b'x'; LONG_LINE + 10]);
        s.chunk(b"y\n");
        s.end();
        let text = std::fs::read_to_string(l.dated("long", t)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{}", text.len());
        assert!(
            lines[0] == format!("[slot 1] {}", "x".repeat(LONG_LINE + 10)),
            "{} bytes",
            lines[0].len()
        );
        assert_eq!(lines[1], "[slot 1] y");
        assert_eq!(slot_tag(1, 3).as_deref(), Some("[slot 3] "));
    }

    #[test]
    fn output_within_the_limit_is_kept_whole() {
        let (text, c) = written(20, &[b"0123456789\n", b"abcdefgh\n"]);
        assert_eq!(text, "0123456789\nabcdefgh\n");
        assert_eq!((c.kept, c.cut), (20, 0));
    }

    #[test]
    fn the_start_and_the_end_are_kept_and_the_middle_cut_with_a_note() {
        let lines: Vec<String> = (0..100).map(|i| format!("line {i:03}\n")).collect();
        let mut chunks: Vec<&[u8]> = vec![b"usage: x\n"];
        chunks.extend(lines.iter().map(String::as_bytes));
        chunks.push(b"error: no\n");
        let (text, c) = written(20, &chunks);
        // The first 10 bytes ("usage: x\n" and one byte of the next line)
        // and the last 10.
        assert_eq!(
            text,
            "usage: x\nl\n[baton: … 899 bytes cut: output_limit = 20B keeps the first 10B and \
             the last 10B …]\nerror: no\n"
        );
        assert_eq!((c.kept, c.cut), (20, 899));
    }

    #[test]
    fn the_tail_starts_on_a_whole_line() {
        let (text, c) = written(20, &[b"usage: x\n", &[b'a'; 23], b"\nlast\n"]);
        // The last 10 bytes are "aaaa\nlast\n": the tail is "last\n".
        assert_eq!(
            text,
            "usage: x\na\n[baton: … 23 bytes cut: output_limit = 20B keeps the first 10B and \
             the last 10B …]\nlast\n"
        );
        assert_eq!((c.kept, c.cut), (15, 23));
    }

    #[test]
    fn a_tail_that_is_one_long_line_is_kept_as_it_is() {
        let (text, c) = written(8, &[b"abcdefghijklmnopqrstuvwxyz"]);
        assert_eq!(
            text,
            "abcd\n[baton: … 18 bytes cut: output_limit = 8B keeps the first 4B and the last \
             4B …]\nwxyz\n"
        );
        assert_eq!(c.cut, 18);
    }

    #[test]
    fn chunks_of_any_size_keep_the_same_ends() {
        let all: Vec<u8> = (0..5000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let mut texts = Vec::new();
        for size in [1, 7, 100, 4096, all.len()] {
            let chunks: Vec<&[u8]> = all.chunks(size).collect();
            texts.push(written(1000, &chunks).0);
        }
        assert!(texts.windows(2).all(|w| w[0] == w[1]), "{texts:?}");
        assert!(texts[0].starts_with("0\n1\n2\n"));
        assert!(texts[0].ends_with("4998\n4999\n"));
    }
}
