//! The campaign's job and its fence-checking sink: two shell scripts a
//! trial writes into its directory, whose output is the evidence the
//! checker trusts.
//!
//! The job appends `start JOB OCCURRENCE RUN FENCE HOST LOCK SLOT UPTIME`
//! when an attempt starts (`SLOT` is `BATON_SLOT`, 1 without
//! `max_concurrent`), a `beat RUN UPTIME` after each write through the
//! sink (every 100 ms), and `end RUN CODE UPTIME` just before it exits
//! with CODE. Appends are single short `write(2)`s to a file opened
//! `O_APPEND` (`>>`), so the log's order is the order in which they
//! happened, across hosts and processes. With `FAULTS_DETACH` set it first
//! detaches itself (`setsid`, in the background) and waits for that copy,
//! as a daemonising job does; with `FAULTS_SETTLE` it settles its watermark
//! to its run id before it ends (`settle RUN CODE`).
//!
//! The sink is a resource that refuses a writer older than one it has
//! seen: under `flock(1)` it compares the fence with the highest so far,
//! appends `FENCE TOKEN RUN HOST`, or `REJECTED FENCE TOKEN RUN HOST` and
//! exits 1. One sink per lease, as fences are per lease: `sink-LOCK` for a
//! lock (its slot 1), `sink-LOCK@K` for its slot K, as baton names them.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The job script, with the trial's paths in it.
pub(crate) fn script(events: &Path, sinks: &Path, sink: &Path, baton: &Path) -> String {
    format!(
        r#"#!/bin/sh
# A fault campaign job: its start, heartbeats and end, and writes through a fence-checking sink.
ev='{ev}'
if [ -n "$FAULTS_DETACH" ]; then
  FAULTS_DETACH= setsid "$0" "$@" &
  wait $!
  exit $?
fi
beats=${{1:-5}}; rc=${{2:-0}}
up() {{ read -r u _ < /proc/uptime; echo "$u"; }}
read -r h < /proc/sys/kernel/hostname
lock=${{FAULTS_LOCK:-$BATON_JOB}}
slot=${{BATON_SLOT:-1}}
lease=$lock
[ "$slot" = 1 ] || lease="$lock@$slot"
echo "start $BATON_JOB $BATON_OCCURRENCE $BATON_RUN_ID $BATON_FENCE $h $lock $slot $(up)" >> "$ev"
i=0
while [ "$i" -lt "$beats" ]; do
  '{sink}' '{sinks}'/"sink-$lease" "$BATON_FENCE" "$BATON_TOKEN" "$BATON_RUN_ID" "$h"
  echo "beat $BATON_RUN_ID $(up)" >> "$ev"
  i=$((i+1))
  sleep 0.1
done
if [ -n "$FAULTS_SETTLE" ]; then
  '{baton}' watermark settle "$BATON_JOB" "$BATON_RUN_ID" >/dev/null 2>&1
  echo "settle $BATON_RUN_ID $? $(up)" >> "$ev"
fi
echo "end $BATON_RUN_ID $rc $(up)" >> "$ev"
exit "$rc"
"#,
        ev = events.display(),
        sink = sink.display(),
        sinks = sinks.display(),
        baton = baton.display(),
    )
}

/// The fence-checking sink.
pub(crate) const SINK: &str = r#"#!/bin/sh
# A resource that refuses a fence lower than the highest it has seen.
exec 9>>"$1.lock"
flock 9
last=$(cat "$1.max" 2>/dev/null || echo 0)
if [ "$2" -lt "$last" ]; then echo "REJECTED $2 $3 $4 $5" >> "$1"; exit 1; fi
echo "$2" > "$1.max"
echo "$2 $3 $4 $5" >> "$1"
"#;

/// Writes an executable script.
///
/// # Errors
///
/// When it cannot be written.
pub(crate) fn install(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text)
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)))
        .map_err(|e| format!("failed to write {}: {e}", path.display()))
}

/// A job of the campaign, as `baton.toml` declares it.
#[derive(Debug, Clone)]
pub(crate) struct JobDef {
    pub(crate) name: String,
    /// Cron, with seconds: `* * * * * *` is due every second.
    pub(crate) schedule: String,
    /// Heartbeats (100 ms apart) before it ends.
    pub(crate) beats: u32,
    /// The exit code it ends with.
    pub(crate) exit: i32,
    /// Its `lock`, when not its name.
    pub(crate) lock: Option<String>,
    /// Its `overlap`, when not the default.
    pub(crate) overlap: Option<&'static str>,
    /// Its `max_concurrent`, when not the default (1).
    pub(crate) slots: Option<u32>,
    /// Whether it settles its watermark.
    pub(crate) settle: bool,
    /// Whether it detaches from its group and session first.
    pub(crate) detach: bool,
    /// More keys of its table.
    pub(crate) extra: String,
}

impl JobDef {
    /// A job due every second that beats `beats` times and exits 0.
    pub(crate) fn every_second(name: &str, beats: u32) -> Self {
        Self {
            name: name.to_owned(),
            schedule: "* * * * * *".into(),
            beats,
            exit: 0,
            lock: None,
            overlap: None,
            slots: None,
            settle: false,
            detach: false,
            extra: String::new(),
        }
    }

    /// Its lock's name.
    pub(crate) fn lock_name(&self) -> &str {
        self.lock.as_deref().unwrap_or(&self.name)
    }

    /// Its `[jobs.NAME]` table, running `script`.
    pub(crate) fn toml(&self, script: &Path) -> String {
        let mut env = format!("FAULTS_LOCK = {:?}", self.lock_name());
        if self.settle {
            env.push_str(", FAULTS_SETTLE = \"1\"");
        }
        if self.detach {
            env.push_str(", FAULTS_DETACH = \"1\"");
        }
        let mut s = format!(
            "[jobs.{}]\nschedule = {:?}\nrun = \"{} {} {}\"\nenv = {{ {env} }}\n",
            self.name,
            self.schedule,
            script.display(),
            self.beats,
            self.exit
        );
        if let Some(l) = &self.lock {
            s.push_str(&format!("lock = {l:?}\n"));
        }
        if let Some(o) = self.overlap {
            s.push_str(&format!("overlap = {o:?}\n"));
        }
        if let Some(n) = self.slots {
            s.push_str(&format!("max_concurrent = {n}\n"));
        }
        s.push_str(&self.extra);
        s.push('\n');
        s
    }
}
