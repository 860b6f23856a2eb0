//! `baton lock show`: each lock's record in words, and the verdict now.
//! Pure rendering over [`baton_lease::Inspection`]; printing is the caller's.

use std::time::Duration;

use baton_lease::record::Body;
use baton_lease::{Inspection, Verdict};
use jiff::Timestamp;
use serde::Serialize;

use crate::cli::ShowArgs;
use crate::exit::Exit;
use baton_sched::units::show_duration as show;

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

/// How to name the lock in a suggested command: `NAME` or `--lock PATH`.
fn arg(label: &str, path: &std::path::Path) -> String {
    if baton_sched::state::state_dir::check_name(label).is_ok() {
        label.to_owned()
    } else {
        format!("--lock {}", path.display())
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
        Some(Body::NotALock(_)) => s.state = "not-a-lock",
    }
    let a = arg(label, &i.path);
    s.detail = match &i.verdict {
        Verdict::Absent => {
            "no lock file: nothing has run under this lock (is the name right?)".into()
        }
        Verdict::Free(_) => "free".into(),
        Verdict::Live { holder, skew: None } => match holder.renewed() {
            Some(r) => format!("held by {holder}; renewed {}", ago(now, r)),
            None => format!("held by {holder}"),
        },
        Verdict::Live {
            holder,
            skew: Some(k),
        } => format!(
            "held by {holder}; its stamp is {} in this host's future (clock skew)",
            baton_lease::human_signed(*k)
        ),
        Verdict::Hung { holder, lapsed } => format!(
            "the holder is alive but has not renewed for {}: {holder}; `baton lock break --kill {a}` \
             stops it and its job, then breaks the lease",
            show(*lapsed)
        ),
        Verdict::Orphaned {
            holder,
            pgid,
            strangers: Some(s),
        } => format!(
            "the holder is gone and its job's group {pgid} still has members, but {s}: {holder}; \
             nothing is signalled or broken on its own (a job's processes may change user): check \
             them (`ps -o pid,user,args -g {pgid}`), and once sure nothing of the job runs, \
             `baton lock break --force {a}` breaks the lease"
        ),
        Verdict::Orphaned {
            holder,
            pgid,
            strangers: None,
        } => format!(
            "the holder is gone but its job's group {pgid} still runs: {holder}; the lease frees \
             itself once the group is empty, or `baton lock break --kill {a}` stops the group"
        ),
        Verdict::Dead { holder, evidence } => {
            format!("the holder is dead ({evidence}): {holder}; the next run takes it")
        }
        Verdict::Expired { holder, age } => format!(
            "expired {} after its holder's last renewal: {holder}; the next run takes it",
            baton_lease::human_signed(*age)
        ),
        Verdict::Writing { age } => format!(
            "empty for {}: a record is being written",
            baton_lease::human_signed(*age)
        ),
        Verdict::Abandoned { age } => format!(
            "empty for {} (flock(1) leaves such files; or a writer died): the next run takes it",
            baton_lease::human_signed(*age)
        ),
        Verdict::Refused(baton_lease::Foreign::Version(v)) => format!(
            "a lease of {v}: refused at any age, never judged; stop every instance of the other \
             lock implementation, then `baton lock break --force {a}`"
        ),
        Verdict::Refused(baton_lease::Foreign::Unreadable(why)) => format!(
            "a damaged record ({why}): refused; make sure nothing runs under this lock, then \
             `baton lock break --force {a}` replaces it with a free one (keeping its fence)"
        ),
        Verdict::Refused(baton_lease::Foreign::NotALock(why)) => format!(
            "no lock record ({why}): look at the file and remove it by hand if it is not needed"
        ),
    };
    s
}

/// The exit code for one inspection.
pub fn exit_for(i: &Inspection) -> Exit {
    match &i.verdict {
        Verdict::Absent => Exit::NoSuchLock,
        Verdict::Refused(_) => Exit::Unjudgeable,
        _ => Exit::Ok,
    }
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

/// `baton lock show`: inspects each lock named, prints, returns the exit code
/// (the worst of the locks shown).
pub fn run(state: Option<&std::path::Path>, a: &ShowArgs) -> Exit {
    let targets = if a.all {
        super::all(state)
    } else if a.names.is_empty() && a.lock.is_empty() {
        Err((
            Exit::Usage,
            "name a lock, give --lock PATH, or use --all".into(),
        ))
    } else {
        super::targets(state, &a.names, &a.lock)
    };
    let targets = match targets {
        Ok(t) => t,
        Err((code, e)) => {
            say!("baton lock show: {e}");
            return code;
        }
    };
    use baton_lease::Clock;
    let now = baton_lease::SystemClock.wall();
    let mut all = Vec::new();
    let mut exit = Exit::Ok;
    for t in &targets {
        let lock = match super::lock_at(&t.path, &a.v2_stale_after) {
            Ok(l) => l,
            Err(e) => {
                say!("baton lock show: {e}");
                return Exit::Usage;
            }
        };
        match lock.inspect() {
            Ok(i) => {
                exit = exit.worst(exit_for(&i));
                all.push(shown(&t.label, &i, now));
            }
            Err(e) => {
                say!("baton lock show: {}: {e}", t.label);
                exit = exit.worst(Exit::of_error(&e));
            }
        }
    }
    if a.json {
        match serde_json::to_string_pretty(&all) {
            Ok(j) => outln!("{j}"),
            Err(e) => {
                say!("baton lock show: failed to encode JSON: {e}");
                return Exit::Failure;
            }
        }
    } else {
        out!("{}", render(&all));
    }
    exit
}
