//! `baton lock show`: each lock's record in words, and the verdict now.
//! Pure rendering over [`baton_lease::Inspection`]; printing is the caller's.

use std::time::Duration;

use baton_lease::record::Body;
use baton_lease::{Inspection, Verdict};
use jiff::Timestamp;
use serde::Serialize;

use crate::cli::ShowArgs;
use crate::duration::show;
use crate::exit::Exit;

/// One lock, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct Shown {
    /// Name or path as given.
    pub lock: String,
    /// The file.
    pub path: String,
    /// The verdict now: absent, free, live, hung, orphaned, dead, expired,
    /// writing, abandoned, foreign-version, unreadable.
    pub verdict: &'static str,
    /// `held`, `free`, `absent`, `v2`, `foreign`, `empty`, `unreadable`.
    pub state: &'static str,
    /// The holder's pid.
    pub pid: Option<u32>,
    /// The holder's host.
    pub host: Option<String>,
    /// The run id.
    pub run: Option<String>,
    /// The fence (last issued, for a free lock).
    pub fence: Option<u64>,
    /// When the lease was taken.
    pub acquired: Option<String>,
    /// When it was last renewed.
    pub renewed: Option<String>,
    /// The job's process group.
    pub pgid: Option<u32>,
    /// The last occurrence started under the lock.
    pub occurrence: Option<String>,
    /// Why: the evidence or the reason for the verdict.
    pub detail: String,
    /// The record's first line as read.
    pub raw: Option<String>,
}

fn ago(now: Timestamp, t: Timestamp) -> String {
    match Duration::try_from(now.duration_since(t)) {
        Ok(d) => format!("{} ago", show(d)),
        Err(_) => format!(
            "{} in the future",
            show(Duration::try_from(t.duration_since(now)).unwrap_or_default())
        ),
    }
}

/// Describes one inspection.
pub fn shown(label: &str, i: &Inspection, now: Timestamp) -> Shown {
    let mut s = Shown {
        lock: label.to_owned(),
        path: i.path.display().to_string(),
        verdict: i.verdict.word(),
        state: "absent",
        pid: None,
        host: None,
        run: None,
        fence: None,
        acquired: None,
        renewed: None,
        pgid: None,
        occurrence: None,
        detail: String::new(),
        raw: i.raw.clone(),
    };
    match &i.body {
        None => {}
        Some(Body::Held(h)) => {
            s.state = "held";
            s.pid = Some(h.pid);
            s.host = Some(h.host.clone());
            s.run = h.run.clone();
            s.fence = Some(h.fence.get());
            s.acquired = Some(h.acquired.to_string());
            s.renewed = Some(h.renewed.to_string());
            s.pgid = h.pgid;
            s.occurrence = h.occ.clone();
        }
        Some(Body::Free(f)) => {
            s.state = "free";
            s.fence = f.fence.map(|f| f.get());
            s.occurrence = f.occ.clone();
        }
        Some(Body::V2(v)) => {
            s.state = "v2";
            s.pid = v.pid;
            s.acquired = v.at.map(|t| t.to_string());
        }
        Some(Body::Empty) => s.state = "empty",
        Some(Body::Foreign(_)) => s.state = "foreign",
        Some(Body::Unreadable(_)) => s.state = "unreadable",
    }
    s.detail = match &i.verdict {
        Verdict::Absent => "no lock file: nothing has run under this lock".into(),
        Verdict::Free(_) => "free".into(),
        Verdict::Live { holder, skew: None } => match holder.renewed() {
            Some(r) => format!("held by {holder}; renewed {}", ago(now, r)),
            None => format!("held by {holder}"),
        },
        Verdict::Live {
            holder,
            skew: Some(k),
        } => format!("held by {holder}; its stamp is {k} in this host's future (clock skew)"),
        Verdict::Hung { holder, lapsed } => format!(
            "the holder is alive but has not renewed for {}: {holder}",
            show(*lapsed)
        ),
        Verdict::Orphaned { holder, pgid } => {
            format!("the holder is gone but its job's group {pgid} still runs: {holder}")
        }
        Verdict::Dead { holder, evidence } => {
            format!("the holder is dead ({evidence}): {holder}; the next run takes it")
        }
        Verdict::Expired { holder, age } => {
            format!("expired {age} after its holder's last renewal: {holder}")
        }
        Verdict::Writing { age } => format!("empty for {age}: a record is being written"),
        Verdict::Abandoned { age } => {
            format!("empty for {age}: its writer died; the next run takes it")
        }
        Verdict::Refused(baton_lease::Foreign::Version(v)) => format!(
            "a lease of {v}: refused, never judged; stop the other implementation, then `baton lock break --force`"
        ),
        Verdict::Refused(baton_lease::Foreign::Unreadable(why)) => {
            format!("unreadable ({why}): refused; `baton lock break --force` once nothing runs")
        }
    };
    s
}

/// The human form: one block per lock.
pub fn render(all: &[Shown]) -> String {
    let mut out = String::new();
    for s in all {
        out.push_str(&format!("{}  {}\n", s.lock, s.verdict));
        out.push_str(&format!("  file      {}\n", s.path));
        if let Some(f) = s.fence {
            out.push_str(&format!("  fence     {f}\n"));
        }
        if let Some(o) = &s.occurrence {
            out.push_str(&format!("  last occ  {o}\n"));
        }
        out.push_str(&format!("  {}\n", s.detail));
    }
    out
}

/// `baton lock show`: inspects each lock named, prints, returns the exit code.
pub fn run(state: Option<&std::path::Path>, a: &ShowArgs) -> Exit {
    let targets = if a.all {
        super::all(state)
    } else if a.names.is_empty() && a.lock.is_empty() {
        Err("name a lock, give --lock PATH, or use --all".into())
    } else {
        super::targets(state, &a.names, &a.lock)
    };
    let targets = match targets {
        Ok(t) => t,
        Err(e) => {
            say!("baton lock show: {e}");
            return Exit::LockUsage;
        }
    };
    use baton_lease::Clock;
    let now = baton_lease::SystemClock.wall();
    let mut all = Vec::new();
    let mut failed = false;
    for t in &targets {
        let inspected = super::lock_at(&t.path, &a.v2_stale_after)
            .and_then(|l| l.inspect().map_err(|e| e.to_string()));
        match inspected {
            Ok(i) => all.push(shown(&t.label, &i, now)),
            Err(e) => {
                say!("baton lock show: {}: {e}", t.label);
                failed = true;
            }
        }
    }
    if a.json {
        match serde_json::to_string_pretty(&all) {
            Ok(j) => outln!("{j}"),
            Err(e) => {
                say!("baton lock show: failed to encode JSON: {e}");
                return Exit::LockUsage;
            }
        }
    } else {
        out!("{}", render(&all));
    }
    if failed { Exit::Refused } else { Exit::Ok }
}
