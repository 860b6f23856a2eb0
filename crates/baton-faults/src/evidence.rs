//! What the jobs themselves wrote, read back: their event log (`start`,
//! `beat`, `end` lines, in the order the kernel appended them), the
//! fence-checking sinks' logs, the failpoints' hit log, and what baton
//! recorded (`history --json`, the missed alerts of `alerts.log`). Parsing
//! only; judging is [`crate::check`]'s.

use std::collections::BTreeMap;
use std::path::Path;

/// One run as its job saw it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Seen {
    pub(crate) job: String,
    pub(crate) occurrence: String,
    pub(crate) run_id: String,
    pub(crate) fence: u64,
    pub(crate) host: String,
    /// Its `lock` (the job's `FAULTS_LOCK`).
    pub(crate) lock: String,
    /// The slot of its lock it ran under (`BATON_SLOT`; 1 without
    /// `max_concurrent`).
    pub(crate) slot: u32,
    /// Line numbers in the event log of its first and last line.
    pub(crate) first: usize,
    pub(crate) last: usize,
    /// Attempts started (one `start` line each).
    pub(crate) attempts: u32,
    /// The exit code its last attempt said it ends with, if it got there.
    pub(crate) end: Option<i32>,
}

/// The event log: every run, in the order of their first line.
pub(crate) fn runs(path: &Path) -> Vec<Seen> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut by_id: BTreeMap<String, Seen> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["start", job, occ, run, fence, host, lock, slot, ..] => {
                let e = by_id.entry((*run).to_owned()).or_insert_with(|| Seen {
                    job: (*job).to_owned(),
                    occurrence: (*occ).to_owned(),
                    run_id: (*run).to_owned(),
                    fence: fence.parse().unwrap_or(0),
                    host: (*host).to_owned(),
                    lock: (*lock).to_owned(),
                    slot: slot.parse().unwrap_or(1),
                    first: n,
                    last: n,
                    attempts: 0,
                    end: None,
                });
                e.attempts += 1;
                e.last = n;
                e.end = None;
            }
            ["beat", run, ..] => {
                if let Some(e) = by_id.get_mut(*run) {
                    e.last = n;
                }
            }
            ["end", run, rc, ..] => {
                if let Some(e) = by_id.get_mut(*run) {
                    e.last = n;
                    e.end = rc.parse().ok();
                }
            }
            _ => {}
        }
    }
    let mut out: Vec<Seen> = by_id.into_values().collect();
    out.sort_by_key(|s| s.first);
    out
}

/// The number of lines in the event log so far (a mark for "after now").
pub(crate) fn mark(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// One write that reached a sink, or that it refused.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Write {
    pub(crate) fence: u64,
    pub(crate) token: String,
    pub(crate) run_id: String,
    pub(crate) rejected: bool,
}

/// A sink's log.
pub(crate) fn writes(path: &Path) -> Vec<Write> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (rejected, f) = match f.first() {
                Some(&"REJECTED") => (true, &f[1..]),
                _ => (false, &f[..]),
            };
            Some(Write {
                fence: f.first()?.parse().ok()?,
                token: (*f.get(1)?).to_owned(),
                run_id: (*f.get(2)?).to_owned(),
                rejected,
            })
        })
        .collect()
}

/// One failpoint's action, as the failpoint build logged it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hit {
    pub(crate) point: String,
    pub(crate) action: String,
    pub(crate) pid: u32,
    pub(crate) host: String,
}

/// The hit log.
pub(crate) fn hits(path: &Path) -> Vec<Hit> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some(Hit {
                point: (*f.first()?).to_owned(),
                action: (*f.get(1)?).to_owned(),
                pid: f.get(2)?.parse().ok()?,
                host: f.get(3).map_or_else(String::new, |h| (*h).to_owned()),
            })
        })
        .collect()
}

/// One run as `baton history --json` records it.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub(crate) struct Recorded {
    pub(crate) run_id: String,
    pub(crate) job: String,
    pub(crate) occurrence: Option<String>,
    pub(crate) verdict: Option<String>,
    pub(crate) exit_code: Option<i32>,
    pub(crate) fence: Option<u64>,
    pub(crate) host: Option<String>,
    pub(crate) pid: Option<u32>,
    #[serde(default)]
    pub(crate) attempts: Vec<serde_json::Value>,
}

/// `history --json`'s array.
///
/// # Errors
///
/// When it is not that array.
pub(crate) fn recorded(json: &[u8]) -> Result<Vec<Recorded>, String> {
    serde_json::from_slice(json).map_err(|e| {
        format!(
            "history --json is not a list of runs ({e}): {}",
            String::from_utf8_lossy(json)
                .chars()
                .take(300)
                .collect::<String>()
        )
    })
}

/// A `missed` alert's range: the occurrences it says were not run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Missed {
    pub(crate) job: String,
    pub(crate) reason: String,
    pub(crate) first: String,
    pub(crate) last: String,
}

/// The `missed` alerts of an `alerts.log` that still hold: a
/// `missed-withdrawn` alert (baton took back ranges a clock ahead recorded)
/// cancels every earlier `missed` alert of its job whose range lies within
/// the one it names. Only a regular file is read: a scenario may have
/// planted a FIFO there, which would block its reader.
pub(crate) fn missed(path: &Path) -> Vec<Missed> {
    let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
    let text = if regular {
        std::fs::read_to_string(path).unwrap_or_default()
    } else {
        String::new()
    };
    let mut out: Vec<Missed> = Vec::new();
    for v in text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    {
        let range = || {
            let m = &v["missed"];
            Some(Missed {
                job: v["job"].as_str()?.to_owned(),
                reason: v["reason"].as_str().unwrap_or("").to_owned(),
                first: m["first"].as_str()?.to_owned(),
                last: m["last"].as_str()?.to_owned(),
            })
        };
        if v["kind"] == "missed" {
            out.extend(range());
        } else if v["kind"] == "missed-withdrawn"
            && let Some(w) = range()
        {
            out.retain(|m| !(m.job == w.job && w.first <= m.first && m.last <= w.last));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_log_reads_as_runs_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("events");
        std::fs::write(
            &p,
            "start j 2026-01-01T00:00:01Z r1 10 h j 1 1.0\nbeat r1 1.1\n\
             start j 2026-01-01T00:00:02Z r2 11 h j 2 1.2\nbeat r1 1.3\nend r2 0 1.4\n\
             garbage\nstart j manual r3 12 h j 1 2\nend r3 1 2.1\n",
        )
        .unwrap();
        let r = runs(&p);
        assert_eq!(r.len(), 3);
        assert_eq!(
            (r[0].run_id.as_str(), r[0].first, r[0].last, r[0].end),
            ("r1", 0, 3, None)
        );
        assert_eq!(
            (r[1].run_id.as_str(), r[1].end, r[1].slot),
            ("r2", Some(0), 2)
        );
        assert_eq!((r[2].occurrence.as_str(), r[2].end), ("manual", Some(1)));
        assert_eq!(mark(&p), 8);
        let s = dir.path().join("sink");
        std::fs::write(&s, "10 tok1 r1 h\nREJECTED 9 tok0 r0 h\n").unwrap();
        let w = writes(&s);
        assert_eq!(w.len(), 2);
        assert!(w[1].rejected && w[1].fence == 9);
    }

    #[test]
    fn a_withdrawal_cancels_the_missed_alerts_within_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("alerts.log");
        let line = |kind: &str, job: &str, first: &str, last: &str| {
            format!(
                "{{\"kind\":\"{kind}\",\"job\":\"{job}\",\"reason\":\"superseded\",\
                 \"missed\":{{\"first\":\"{first}\",\"last\":\"{last}\"}}}}\n"
            )
        };
        let text = [
            line(
                "missed",
                "j",
                "2026-01-01T00:00:01Z",
                "2026-01-01T00:00:05Z",
            ),
            line(
                "missed",
                "j",
                "2026-01-01T00:00:10Z",
                "2026-01-02T00:00:00Z",
            ),
            line(
                "missed",
                "k",
                "2026-01-01T00:00:10Z",
                "2026-01-01T00:00:20Z",
            ),
            line(
                "missed-withdrawn",
                "j",
                "2026-01-01T00:00:10Z",
                "2026-01-02T00:00:00Z",
            ),
            line(
                "missed",
                "j",
                "2026-01-01T00:00:10Z",
                "2026-01-01T00:00:12Z",
            ),
        ]
        .concat();
        std::fs::write(&p, text).unwrap();
        let m = missed(&p);
        let spans: Vec<_> = m
            .iter()
            .map(|m| (m.job.as_str(), m.first.as_str()))
            .collect();
        assert_eq!(
            spans,
            [
                ("j", "2026-01-01T00:00:01Z"),
                ("k", "2026-01-01T00:00:10Z"),
                ("j", "2026-01-01T00:00:10Z"),
            ]
        );
        assert_eq!(m[2].last, "2026-01-01T00:00:12Z");
    }
}
