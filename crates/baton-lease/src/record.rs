//! The lease record: one line of `key=value` fields, `version=3` first.
//!
//! This module owns the on-disk format and nothing else: it turns bytes into a
//! [`Body`] (never panicking, whatever the bytes) and records into one line of
//! text that parses back to the same record. Fields are found by key, never by
//! position; unknown keys are ignored (a reader that ignores a new field still
//! judges correctly); a duplicate key, a malformed value, a NUL byte or a line
//! longer than [`MAX_RECORD_BYTES`] makes the body [`Body::Unreadable`], which
//! is refused, never broken. Only the first line counts: writers end a record
//! with `\n`, so a rewrite that was cut short before its trim still reads as
//! the new record. What a body *means* for a contender is
//! [`crate::decide`]'s business.
//!
//! ```text
//! version=3 state=held fence=1764433649123456 token=9f3c1ab27de40518 pid=48213 host=ci-1 …
//! version=3 state=free fence=1764433649123456 at=2026-11-29T16:27:29.123456Z
//! version=2 pid=48213 at=2026-08-05T19:00:00+05:30 token=9f3c1ab27de40518   (Scheduler Lock v2)
//! pid=48213 at=2026-08-05T19:00:00+05:30                                     (v1: refused)
//! ```

use std::fmt::Write as _;
use std::time::Duration;

use jiff::Timestamp;

use crate::claims::Claims;
use crate::token::{Fence, Token};

pub use crate::value::{MAX_CLAIMS_BYTES, MAX_VALUE_BYTES, is_valid_value};

/// The record format this build writes and judges.
pub const VERSION: u32 = 3;
/// Scheduler Lock v2's format, which this build judges by v2's own rule.
pub const V2: u32 = 2;
/// The most bytes ever read from a lock file: room for every other field
/// and [`MAX_CLAIMS_BYTES`] of claims. A longer first line is no lock record.
/// (Builds before the claims field could grow read at most 4096 bytes and
/// take a longer file for no lock file at all: they refuse it, never judge
/// or write it.)
pub const MAX_RECORD_BYTES: usize = 65_536;

/// A lease held by a baton (v3) holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// This acquisition's fence.
    pub fence: Fence,
    /// This acquisition's token.
    pub token: Token,
    /// The holder's pid, in its own pid namespace.
    pub pid: u32,
    /// The holder's host name.
    pub host: String,
    /// When the lease was taken (holder's wall clock).
    pub acquired: Timestamp,
    /// When the lease was last renewed (holder's wall clock).
    pub renewed: Timestamp,
    /// How long a renewal keeps the lease fresh.
    pub ttl: Duration,
    /// The run this lease belongs to, if the holder named one.
    pub run: Option<String>,
    /// The holder's `/etc/machine-id`.
    pub machine: Option<String>,
    /// The holder's boot id.
    pub boot: Option<String>,
    /// The inode of the holder's pid namespace.
    pub pidns: Option<u64>,
    /// The holder's start time in clock ticks after boot (`/proc/PID/stat`
    /// field 22), so a reused pid is not taken for the holder.
    pub pstart: Option<u64>,
    /// The holder's boot clock at the last renewal, to the millisecond.
    pub renewed_boot: Option<Duration>,
    /// The process group of the job the holder runs, once it has one.
    pub pgid: Option<u32>,
    /// The start time of the job group's leader, so a group id reused by an
    /// unrelated group is not taken for the job.
    pub jstart: Option<u64>,
    /// What leads the job's group (`jinit=1`: the init of the step's own
    /// pid namespace). Records without the field name a command-led group.
    pub leader: Leader,
    /// The holder's real user id, so a judge can say when a group it finds
    /// is made only of other users' processes. Display only: it never
    /// decides a verdict.
    pub uid: Option<u32>,
    /// The takeover grace the holder's self-fencing needs: a judge that
    /// cannot check the holder waits at least this long past the TTL.
    pub grace: Option<Duration>,
    /// A caller-supplied occurrence (for example the schedule slot started).
    pub occ: Option<String>,
    /// The holder's executable (`/proc/PID/exe`), so an operator's stop can
    /// tell the holder from an unrelated process that reuses its pid.
    pub exe: Option<String>,
    /// The holder's soft runtime budget: a contender that finds the lease
    /// held past it reports an overrunning holder rather than a healthy one.
    pub budget: Option<Duration>,
    /// The occurrences each job last started under this lock.
    pub claims: Claims,
}

/// What leads a job's process group, as its holder started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Leader {
    /// The job's command (or a process it started) leads the group: the
    /// group may outlive its leader, so members are evidence on their own.
    #[default]
    Command,
    /// The init of a pid namespace that holds every process of the step
    /// (`baton-runner`'s `contain`). The kernel kills every process of the
    /// namespace when its init exits, and init becomes a zombie only once
    /// they are all gone: when this leader (verified by `jstart=`) is gone
    /// or a zombie, nothing of the step runs, whatever the group id names.
    NamespaceInit,
}

/// A released lock: the file stays so its fence and occurrence survive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Free {
    /// The version the marker declared (2 or 3).
    pub version: u32,
    /// The fence of the last acquisition (absent in a v2 marker).
    pub fence: Option<Fence>,
    /// When the lock was released.
    pub released: Option<Timestamp>,
    /// The last occurrence started under this lock.
    pub occ: Option<String>,
    /// The occurrences each job last started under this lock.
    pub claims: Claims,
}

/// A Scheduler Lock v2 lease (seed 003 §5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2Lease {
    /// `pid=`, when readable.
    pub pid: Option<u32>,
    /// `at=`, when readable; v2 falls back to the file's mtime otherwise.
    pub at: Option<Timestamp>,
    /// `token=`, as written.
    pub token: Option<String>,
}

/// What a lease of a version this build does not judge declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForeignVersion {
    /// No `version=` field: Scheduler Lock v1, inferred.
    InferredV1,
    /// A declared number other than 2 or 3.
    Declared(u32),
    /// A `version=` value that is not a number.
    Unreadable(String),
}

impl std::fmt::Display for ForeignVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InferredV1 => f.write_str("v1 (inferred: the record has no version= field)"),
            Self::Declared(n) => write!(f, "v{n} (declared)"),
            Self::Unreadable(s) => write!(f, "an unreadable version ({s:?})"),
        }
    }
}

/// What a lock file says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // A held lease is the common case; boxing it buys nothing.
pub enum Body {
    /// Nothing, or only white space: a file being written right now, or left
    /// unwritten by a crash.
    Empty,
    /// A free marker.
    Free(Free),
    /// A baton lease.
    Held(Held),
    /// A Scheduler Lock v2 lease.
    V2(V2Lease),
    /// A lease of a version this build refuses to judge.
    Foreign(ForeignVersion),
    /// A lock record that cannot be read (a field out of range, a duplicate
    /// key, a record cut short); the reason says why. Refused, never judged;
    /// an operator may break it by force.
    Unreadable(String),
    /// Bytes that are no lock record at all (a text file, binary data):
    /// never judged and never overwritten, not even by force.
    NotALock(String),
}

impl Body {
    /// Reads a body from a lock file's first bytes. Never panics.
    pub fn parse(bytes: &[u8]) -> Body {
        let line = match bytes.iter().position(|&b| b == b'\n') {
            Some(end) => &bytes[..end],
            None if bytes.len() >= MAX_RECORD_BYTES => {
                return Body::NotALock(format!(
                    "its first line is longer than {MAX_RECORD_BYTES} bytes"
                ));
            }
            None => bytes,
        };
        if line.contains(&0) {
            return Body::NotALock("it contains a NUL byte".into());
        }
        let Ok(line) = std::str::from_utf8(line) else {
            return Body::NotALock("it is not text".into());
        };
        if line.bytes().all(|b| b.is_ascii_whitespace()) {
            return Body::Empty;
        }
        if let Some(why) = not_a_lock(line) {
            return Body::NotALock(why);
        }
        let fields = match Fields::split(line) {
            Ok(f) => f,
            Err(why) => return Body::Unreadable(why.to_string()),
        };
        let body = fields.classify();
        // This build ends every record with a newline; one without it was
        // cut short (a torn write), and its last field may be a prefix.
        let terminated = line.len() < bytes.len();
        match body {
            Body::Held(_)
            | Body::Free(Free {
                version: VERSION, ..
            }) if !terminated => {
                Body::Unreadable("the record has no end of line: it was cut short".into())
            }
            other => other,
        }
    }
}

/// Why a first line is no lock record of any version, if it is not: a lock
/// record (v1, v2, v3) is a line of `key=value` words, and names at least
/// one of the keys every version writes.
fn not_a_lock(line: &str) -> Option<String> {
    let mut known = false;
    for word in line.split_ascii_whitespace() {
        let Some((k, _)) = word.split_once('=') else {
            return Some(format!(
                "its first line has {:?}, which is no key=value field",
                clip(word)
            ));
        };
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Some(format!(
                "its first line has {:?}, which is no field name",
                clip(k)
            ));
        }
        known |= matches!(k, "version" | "state" | "pid" | "at" | "token" | "fence");
    }
    (!known).then(|| "its first line names none of version=, state=, pid=, at=, token=".into())
}

/// How many keys this build reads.
const KNOWN_KEYS: usize = 24;

/// The slot of a key this build reads; `None` for any other key.
fn slot(key: &str) -> Option<usize> {
    Some(match key {
        "version" => 0,
        "state" => 1,
        "fence" => 2,
        "token" => 3,
        "pid" => 4,
        "host" => 5,
        "at" => 6,
        "renewed" => 7,
        "ttl_ms" => 8,
        "run" => 9,
        "machine" => 10,
        "boot" => 11,
        "pidns" => 12,
        "pstart" => 13,
        "bt_ms" => 14,
        "pgid" => 15,
        "occ" => 16,
        "jstart" => 17,
        "grace_ms" => 18,
        "exe" => 19,
        "budget_ms" => 20,
        "claims" => 21,
        "jinit" => 22,
        "uid" => 23,
        _ => return None,
    })
}

/// Why the fields of a line make no record this build reads: the reason of
/// [`Body::Unreadable`].
#[derive(Debug, thiserror::Error)]
enum Unreadable {
    /// A word without `=`.
    #[error("{0:?} is not a key=value field")]
    NotAField(String),
    /// A key that is empty or not made of letters, digits and `_`.
    #[error("{0:?} is not a field name")]
    NotAName(String),
    /// A value longer than its key allows.
    #[error("the value of {0}= is longer than {1} bytes")]
    TooLong(String, usize),
    /// An empty value, or one that is not printable ASCII.
    #[error("the value of {0}= is empty or not printable ASCII")]
    NotPrintable(String),
    /// A key given twice.
    #[error("the field {0}= appears twice")]
    Twice(String),
    /// A `state=` other than `held` in a version 3 lease.
    #[error("state={0} is not a known state")]
    State(String),
    /// A version 3 record without `state=`.
    #[error("a version 3 record without state=")]
    NoState,
    /// A version 3 lease without a field it needs.
    #[error("a version 3 lease without {0}=")]
    Missing(String),
    /// A value that does not parse, or is out of its range.
    #[error("{0}={1} is out of range")]
    OutOfRange(String, String),
}

/// The fields of one line: a slot per known key, and the names of unknown
/// keys (kept only to catch a duplicate).
struct Fields<'a> {
    known: [Option<&'a str>; KNOWN_KEYS],
    unknown: Vec<&'a str>,
}

impl<'a> Fields<'a> {
    fn split(line: &'a str) -> Result<Self, Unreadable> {
        let mut f = Fields {
            known: [None; KNOWN_KEYS],
            unknown: Vec::new(),
        };
        // Trim first: a padded record ends in a run of spaces, which the
        // splitter would otherwise walk as a run of empty words.
        for word in line.trim_ascii().split_ascii_whitespace() {
            let Some((k, v)) = word.split_once('=') else {
                return Err(Unreadable::NotAField(clip(word).to_owned()));
            };
            if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(Unreadable::NotAName(clip(k).to_owned()));
            }
            let most = if k == "claims" {
                MAX_CLAIMS_BYTES
            } else {
                MAX_VALUE_BYTES
            };
            if v.len() > most {
                return Err(Unreadable::TooLong(k.to_owned(), most));
            }
            if v.is_empty() || !v.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(Unreadable::NotPrintable(k.to_owned()));
            }
            let seen = match slot(k) {
                Some(i) => f.known[i].replace(v).is_some(),
                None if f.unknown.contains(&k) => true,
                None => {
                    f.unknown.push(k);
                    false
                }
            };
            if seen {
                return Err(Unreadable::Twice(k.to_owned()));
            }
        }
        Ok(f)
    }

    fn get(&self, k: &str) -> Option<&'a str> {
        slot(k).and_then(|i| self.known[i])
    }

    fn classify(&self) -> Body {
        let version = match self.get("version") {
            None => return Body::Foreign(ForeignVersion::InferredV1),
            Some(v) => match parse_version(v) {
                Some(n) => n,
                None => return Body::Foreign(ForeignVersion::Unreadable(clip(v).to_owned())),
            },
        };
        // A free marker is read before anything else, as v2 does (seed 003
        // §8.4): it is the absence of a lease.
        if self.get("state") == Some("free") && (version == V2 || version == VERSION) {
            return match self.free(version) {
                Ok(f) => Body::Free(f),
                Err(why) => Body::Unreadable(why.to_string()),
            };
        }
        match version {
            V2 => Body::V2(V2Lease {
                pid: self.get("pid").and_then(|p| p.parse().ok()),
                at: self.get("at").and_then(|a| a.parse().ok()),
                token: self.get("token").map(str::to_owned),
            }),
            VERSION => match self.held() {
                Ok(h) => Body::Held(h),
                Err(why) => Body::Unreadable(why.to_string()),
            },
            n => Body::Foreign(ForeignVersion::Declared(n)),
        }
    }

    fn free(&self, version: u32) -> Result<Free, Unreadable> {
        Ok(Free {
            version,
            fence: self.opt("fence", parse_fence)?,
            released: self.opt("at", parse_stamp)?,
            occ: self.get("occ").map(str::to_owned),
            claims: self.opt("claims", Claims::parse)?.unwrap_or_default(),
        })
    }

    fn held(&self) -> Result<Held, Unreadable> {
        match self.get("state") {
            Some("held") => {}
            Some(other) => return Err(Unreadable::State(clip(other).to_owned())),
            None => return Err(Unreadable::NoState),
        }
        Ok(Held {
            fence: self.req("fence", parse_fence)?,
            token: self.req("token", |v| v.parse().ok())?,
            pid: self.req("pid", |v| v.parse().ok().filter(|&n| n > 0))?,
            host: self.req("host", |v| Some(v.to_owned()))?,
            acquired: self.req("at", parse_stamp)?,
            renewed: self.req("renewed", parse_stamp)?,
            ttl: self.req("ttl_ms", |v| {
                v.parse().ok().filter(|&n| n > 0).map(Duration::from_millis)
            })?,
            run: self.get("run").map(str::to_owned),
            machine: self.get("machine").map(str::to_owned),
            boot: self.get("boot").map(str::to_owned),
            pidns: self.opt("pidns", |v| v.parse().ok())?,
            pstart: self.opt("pstart", |v| v.parse().ok())?,
            renewed_boot: self.opt("bt_ms", |v| v.parse().ok().map(Duration::from_millis))?,
            pgid: self.opt("pgid", |v| v.parse().ok().filter(|&n| n > 0))?,
            jstart: self.opt("jstart", |v| v.parse().ok())?,
            leader: self
                .opt("jinit", |v| (v == "1").then_some(Leader::NamespaceInit))?
                .unwrap_or_default(),
            uid: self.opt("uid", |v| v.parse().ok())?,
            grace: self.opt("grace_ms", |v| v.parse().ok().map(Duration::from_millis))?,
            occ: self.get("occ").map(str::to_owned),
            exe: self.get("exe").map(str::to_owned),
            budget: self.opt("budget_ms", |v| {
                v.parse().ok().filter(|&n| n > 0).map(Duration::from_millis)
            })?,
            claims: self.opt("claims", Claims::parse)?.unwrap_or_default(),
        })
    }

    fn req<T>(&self, k: &str, f: impl Fn(&str) -> Option<T>) -> Result<T, Unreadable> {
        self.opt(k, f)?
            .ok_or_else(|| Unreadable::Missing(k.to_owned()))
    }

    fn opt<T>(&self, k: &str, f: impl Fn(&str) -> Option<T>) -> Result<Option<T>, Unreadable> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => f(v)
                .map(Some)
                .ok_or_else(|| Unreadable::OutOfRange(k.to_owned(), clip(v).to_owned())),
        }
    }
}

/// A fence: 1 to [`Fence::MAX`] (the end of year 9999 in microseconds since
/// 1970: fences are microseconds of the wall clock, or one more than the
/// previous fence). A larger number is out of range, so the record is
/// unreadable rather than a fence this build could not follow.
fn parse_fence(v: &str) -> Option<Fence> {
    v.parse()
        .ok()
        .filter(|&n| n > 0 && n <= Fence::MAX.get())
        .map(Fence::new)
}

/// A timestamp, cut to the microsecond records keep.
fn parse_stamp(v: &str) -> Option<Timestamp> {
    let t: Timestamp = v.parse().ok()?;
    Timestamp::from_microsecond(t.as_microsecond()).ok()
}

/// Whether `bytes` (a lock file's content) are `line` (a rendered record,
/// which ends in a newline) as an in-place write leaves it: padded with
/// spaces before its newline, nothing after.
pub(crate) fn is_padded(bytes: &[u8], line: &str) -> bool {
    let body = line.strip_suffix('\n').unwrap_or(line).as_bytes();
    bytes
        .strip_prefix(body)
        .is_some_and(|rest| match rest.split_last() {
            Some((b'\n', pad)) => pad.iter().all(|&b| b == b' '),
            _ => false,
        })
}

/// The fence a record that cannot be read still states, if any: the largest
/// `fence=` number in range on its first line. An operator's forced break
/// keeps it, so a damaged record never lowers the fence.
pub fn salvage_fence(bytes: &[u8]) -> Option<Fence> {
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    let line = String::from_utf8_lossy(&bytes[..end]);
    line.split_ascii_whitespace()
        .filter_map(|w| w.strip_prefix("fence="))
        .filter_map(parse_fence)
        .max()
}

fn parse_version(v: &str) -> Option<u32> {
    let ok = !v.is_empty()
        && v.len() <= 9
        && v.bytes().all(|b| b.is_ascii_digit())
        && !v.starts_with('0');
    if ok { v.parse().ok() } else { None }
}

fn clip(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn stamp(out: &mut String, key: &str, t: Timestamp) {
    static PRINTER: jiff::fmt::temporal::DateTimePrinter =
        jiff::fmt::temporal::DateTimePrinter::new().precision(Some(6));
    let _ = write!(out, " {key}=");
    // OK to ignore: writing to a String cannot fail.
    let _ = PRINTER.print_timestamp(&t, &mut *out);
}

impl Held {
    /// The record as one line, ending in `\n`. Optional values that are not
    /// [valid](is_valid_value) are left out rather than corrupting the line.
    pub fn render(&self) -> String {
        let mut s = String::with_capacity(400);
        let _ = write!(
            s,
            "version={VERSION} state=held fence={} token={} pid={}",
            self.fence, self.token, self.pid
        );
        let host = if is_valid_value(&self.host) {
            self.host.as_str()
        } else {
            "_"
        };
        let _ = write!(s, " host={host}");
        stamp(&mut s, "at", self.acquired);
        stamp(&mut s, "renewed", self.renewed);
        let _ = write!(s, " ttl_ms={}", self.ttl.as_millis().max(1));
        opt_field(&mut s, "run", self.run.as_deref());
        opt_field(&mut s, "machine", self.machine.as_deref());
        opt_field(&mut s, "boot", self.boot.as_deref());
        if let Some(v) = self.pidns {
            let _ = write!(s, " pidns={v}");
        }
        if let Some(v) = self.pstart {
            let _ = write!(s, " pstart={v}");
        }
        if let Some(v) = self.renewed_boot {
            let _ = write!(s, " bt_ms={}", v.as_millis());
        }
        if let Some(v) = self.pgid {
            let _ = write!(s, " pgid={v}");
        }
        if let Some(v) = self.jstart {
            let _ = write!(s, " jstart={v}");
        }
        if self.leader == Leader::NamespaceInit {
            s.push_str(" jinit=1");
        }
        if let Some(v) = self.uid {
            let _ = write!(s, " uid={v}");
        }
        if let Some(v) = self.grace {
            let _ = write!(s, " grace_ms={}", v.as_millis());
        }
        opt_field(&mut s, "occ", self.occ.as_deref());
        opt_field(&mut s, "exe", self.exe.as_deref());
        if let Some(v) = self.budget {
            let _ = write!(s, " budget_ms={}", v.as_millis().max(1));
        }
        claims_field(&mut s, &self.claims);
        s.push('\n');
        s
    }
}

impl Free {
    /// The marker as one line, ending in `\n`. Always written as version 3.
    pub fn render(&self) -> String {
        let mut s = format!("version={VERSION} state=free");
        if let Some(f) = self.fence {
            let _ = write!(s, " fence={f}");
        }
        if let Some(t) = self.released {
            stamp(&mut s, "at", t);
        }
        opt_field(&mut s, "occ", self.occ.as_deref());
        claims_field(&mut s, &self.claims);
        s.push('\n');
        s
    }
}

/// `claims=`, when there are claims that fit the field; the lock never
/// hands a writer more ([`Claims::fitted`]).
fn claims_field(out: &mut String, claims: &Claims) {
    if let Some(v) = claims.render().filter(|v| v.len() <= MAX_CLAIMS_BYTES) {
        let _ = write!(out, " claims={v}");
    }
}

fn opt_field(out: &mut String, key: &str, v: Option<&str>) {
    if let Some(v) = v.filter(|v| is_valid_value(v)) {
        let _ = write!(out, " {key}={v}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_padded_record_is_the_one_written_and_anything_else_is_not() {
        let line = sample().render();
        let body = line.trim_end_matches('\n');
        assert!(is_padded(line.as_bytes(), &line));
        assert!(is_padded(format!("{body}    \n").as_bytes(), &line));
        // Torn, extended, changed, or followed by more bytes: not it.
        assert!(!is_padded(body.as_bytes(), &line));
        assert!(!is_padded(format!("{body} x=1\n").as_bytes(), &line));
        assert!(!is_padded(format!("{body}\n\n").as_bytes(), &line));
        assert!(!is_padded(format!("{body}  \t\n").as_bytes(), &line));
        assert!(!is_padded(&line.as_bytes()[1..], &line));
        assert!(!is_padded(b"", &line));
    }

    fn sample() -> Held {
        Held {
            fence: Fence::new(1_764_433_649_123_456),
            token: "9f3c1ab27de40518".parse().unwrap(),
            pid: 48213,
            host: "ci-1".into(),
            acquired: "2026-11-29T16:27:29.123456Z".parse().unwrap(),
            renewed: "2026-11-29T16:27:39Z".parse().unwrap(),
            ttl: Duration::from_secs(30),
            run: Some("r-1".into()),
            machine: Some("0123456789abcdef0123456789abcdef".into()),
            boot: Some("6e1a0c52-7d34-4d6b-9d1e-1d2b3c4d5e6f".into()),
            pidns: Some(4_026_531_836),
            pstart: Some(123_456),
            renewed_boot: Some(Duration::from_millis(9_876_543)),
            pgid: Some(48214),
            jstart: Some(123_999),
            leader: Leader::NamespaceInit,
            uid: Some(1000),
            grace: Some(Duration::from_secs(30)),
            occ: Some("2026-11-29T16:00:00Z".into()),
            exe: Some("/usr/local/bin/baton".into()),
            budget: Some(Duration::from_secs(600)),
            claims: Claims::parse("nightly@1764385200,other@1764380000").unwrap(),
        }
    }

    #[test]
    fn a_record_declares_its_format_first_and_round_trips() {
        let h = sample();
        let line = h.render();
        assert!(line.starts_with("version=3"), "{line}");
        assert_eq!(&line[..9], "version=3");
        assert!(line.ends_with('\n'));
        assert_eq!(line.matches('\n').count(), 1);
        assert_eq!(Body::parse(line.as_bytes()), Body::Held(h));
    }

    #[test]
    fn fields_are_found_by_key_not_position() {
        let line = sample().render();
        let mut words: Vec<&str> = line.split_whitespace().collect();
        words.reverse();
        assert_eq!(
            Body::parse(format!("{}\n", words.join(" ")).as_bytes()),
            Body::Held(sample())
        );
    }

    #[test]
    fn a_record_without_jinit_or_uid_reads_as_before_and_a_bad_jinit_is_unreadable() {
        let line = sample().render();
        let old: Vec<&str> = line
            .split_whitespace()
            .filter(|w| !w.starts_with("jinit=") && !w.starts_with("uid="))
            .collect();
        let Body::Held(h) = Body::parse(format!("{}\n", old.join(" ")).as_bytes()) else {
            panic!("an older record must still parse");
        };
        assert_eq!((h.leader, h.uid), (Leader::Command, None));
        assert!(matches!(
            Body::parse(format!("{} jinit=yes\n", old.join(" ")).as_bytes()),
            Body::Unreadable(_)
        ));
    }

    #[test]
    fn a_free_marker_keeps_fence_and_occurrence() {
        let f = Free {
            version: 3,
            fence: Some(Fence::new(77)),
            released: Some("2026-11-29T16:27:39Z".parse().unwrap()),
            occ: Some("slot-9".into()),
            claims: Claims::parse("a@5").unwrap(),
        };
        let line = f.render();
        assert!(line.starts_with("version=3 state=free"));
        assert_eq!(Body::parse(line.as_bytes()), Body::Free(f));
        // v2's own marker is free as well.
        assert!(matches!(
            Body::parse(b"version=2 state=free\n"),
            Body::Free(Free {
                version: 2,
                fence: None,
                ..
            })
        ));
    }

    #[test]
    fn the_version_table() {
        assert_eq!(
            Body::parse(b"pid=48213 at=2026-08-05T19:00:00+05:30\n"),
            Body::Foreign(ForeignVersion::InferredV1)
        );
        assert_eq!(
            Body::parse(b"pid=48213\n"),
            Body::Foreign(ForeignVersion::InferredV1)
        );
        assert_eq!(
            Body::parse(b"version=1 pid=1\n"),
            Body::Foreign(ForeignVersion::Declared(1))
        );
        assert_eq!(
            Body::parse(b"version=4 pid=1\n"),
            Body::Foreign(ForeignVersion::Declared(4))
        );
        assert_eq!(
            Body::parse(b"version=999\n"),
            Body::Foreign(ForeignVersion::Declared(999))
        );
        assert_eq!(
            Body::parse(b"version=next\n"),
            Body::Foreign(ForeignVersion::Unreadable("next".into()))
        );
        assert_eq!(
            Body::parse(b"version=03\n"),
            Body::Foreign(ForeignVersion::Unreadable("03".into()))
        );
        assert_eq!(
            Body::parse(b"version=9 state=free\n"),
            Body::Foreign(ForeignVersion::Declared(9))
        );
        assert_eq!(Body::parse(b""), Body::Empty);
        assert_eq!(Body::parse(b"  \n"), Body::Empty);
        let v2 = Body::parse(
            b"version=2 pid=48213 at=2026-08-05T19:00:00+05:30 token=9f3c1ab27de40518\n",
        );
        assert_eq!(
            v2,
            Body::V2(V2Lease {
                pid: Some(48213),
                at: Some("2026-08-05T13:30:00Z".parse().unwrap()),
                token: Some("9f3c1ab27de40518".into())
            })
        );
    }

    #[test]
    fn bad_bytes_are_unreadable_never_a_panic() {
        let cases: &[&[u8]] = &[
            b"version=3 state=held",
            b"version=3 state=held fence=0 token=9f3c1ab27de40518",
            b"version=3 version=3",
            b"version=3 state=maybe",
            b"version=3 state=free fence=-1",
            b"version=3 state=free fence=99999999999999999999999",
        ];
        for c in cases {
            assert!(
                matches!(Body::parse(c), Body::Unreadable(_)),
                "{:?}",
                String::from_utf8_lossy(c)
            );
        }
        let max = format!("version=3 state=free fence={}\n", u64::MAX);
        assert!(matches!(Body::parse(max.as_bytes()), Body::Unreadable(_)));
        // A fence past the end of year 9999 in microseconds is out of range,
        // i64::MAX included: this build could never write the next one.
        for f in [i64::MAX as u64, Fence::MAX.get() + 1] {
            let line = format!("version=3 state=free fence={f}\n");
            assert!(
                matches!(Body::parse(line.as_bytes()), Body::Unreadable(_)),
                "{f}"
            );
        }
        let line = format!("version=3 state=free fence={}\n", Fence::MAX.get());
        assert!(matches!(Body::parse(line.as_bytes()), Body::Free(_)));
    }

    #[test]
    fn what_is_no_lock_record_is_told_apart_from_a_damaged_one() {
        let cases: &[&[u8]] = &[
            b"important data\n",
            b"hello world",
            b"version=3\0 state=free",
            b"\xff\xfe",
            b"=x",
            b"foo=bar baz=1\n",
            b"{\"json\": true}\n",
        ];
        for c in cases {
            assert!(
                matches!(Body::parse(c), Body::NotALock(_)),
                "{:?}: {:?}",
                String::from_utf8_lossy(c),
                Body::parse(c)
            );
        }
        let long = vec![b'a'; MAX_RECORD_BYTES];
        assert!(matches!(Body::parse(&long), Body::NotALock(_)));
        // A damaged record is still a lock record.
        assert!(matches!(
            Body::parse(b"version=3 fence=x\n"),
            Body::Unreadable(_)
        ));
        assert!(matches!(Body::parse(b"pid=12\n"), Body::Foreign(_)));
    }

    #[test]
    fn a_record_cut_short_is_unreadable() {
        let line = sample().render();
        let cut = &line.as_bytes()[..line.len() - 3];
        assert!(
            matches!(Body::parse(cut), Body::Unreadable(_)),
            "{:?}",
            Body::parse(cut)
        );
        let free = b"version=3 state=free fence=12";
        assert!(matches!(Body::parse(free), Body::Unreadable(_)));
        // v2 records are taken as v2 wrote them.
        assert!(matches!(Body::parse(b"version=2 pid=1"), Body::V2(_)));
    }

    #[test]
    fn only_the_first_line_counts() {
        let mut bytes = Free {
            version: 3,
            fence: Some(Fence::new(5)),
            released: None,
            occ: None,
            claims: Claims::default(),
        }
        .render()
        .into_bytes();
        bytes.extend_from_slice(b"tail of an older, longer record that was never trimmed");
        assert!(matches!(Body::parse(&bytes), Body::Free(_)));
    }

    #[test]
    fn the_claims_of_hundreds_of_jobs_fit_one_record_and_no_more() {
        let mut h = sample();
        let mates: Vec<String> = (0..700)
            .map(|i| format!("{i:03}{}", "k".repeat(61)))
            .collect();
        for (i, m) in mates.iter().enumerate() {
            let once = crate::Once {
                key: m.clone(),
                at: 1_764_385_200 + i as i64,
            };
            h.claims = h.claims.fitted(&once, &mates, i64::MAX).unwrap();
        }
        let line = h.render();
        assert!(line.len() > 4096 && line.len() <= MAX_RECORD_BYTES);
        assert_eq!(Body::parse(line.as_bytes()), Body::Held(h.clone()));
        // A claims value longer than the field allows is a damaged record.
        let mut value = String::from("k@1");
        for i in 0.. {
            if value.len() > MAX_CLAIMS_BYTES {
                break;
            }
            value.push_str(&format!(",k{i}@1"));
        }
        let long = format!("version=3 state=free fence=5 claims={value}\n");
        match Body::parse(long.as_bytes()) {
            Body::Unreadable(why) => assert!(why.contains("longer than"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Any other field keeps its 256 bytes.
        let run = format!("version=3 state=free fence=5 occ={}\n", "o".repeat(257));
        assert!(matches!(Body::parse(run.as_bytes()), Body::Unreadable(_)));
    }

    #[test]
    fn invalid_optional_values_are_left_out_not_written() {
        let mut h = sample();
        h.run = Some("has space".into());
        h.occ = Some(String::new());
        h.host = "bad host".into();
        let line = h.render();
        assert!(!line.contains("run="));
        assert!(!line.contains("occ="));
        assert!(line.contains(" host=_ "));
        assert!(matches!(Body::parse(line.as_bytes()), Body::Held(_)));
    }
}
