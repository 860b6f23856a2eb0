//! One trial: one scenario, one implementation, one size, run for real.
//!
//! The parent prepares the lock (free, or a dead holder's lease), spawns the
//! contenders, waits until every one is ready, sends them one start instant
//! a little in the future, and then only listens: every count in the
//! [`TrialRecord`] comes from an event a contender reported at the moment it
//! happened. Its own interventions are the scenario's: closing stdins once
//! every single-decision contender has decided, `kill -9` at random wins in
//! the kill -9 churn, SIGSTOP and SIGCONT around the stopped holder.
//!
//! How an overlap is seen, per scenario:
//!
//! - free lock, stale recovery, threads: every winner claims the witness and
//!   holds it until all have decided, so a second winner is both a
//!   duplicate acquisition and a witness overlap.
//! - churn, stale + churn: each acquisition is witnessed; a claim that meets
//!   a live holder's witness is an overlap.
//! - kill -9 churn: as churn; a killed holder's witness names a dead pid,
//!   which is no overlap: the parent removes it after reaping the victim
//!   (see [`crate::witness`]).
//! - slow live holder, SIGSTOPped holder: the long holder claims the witness
//!   for its whole run (stopped or not, it is alive), so every contender
//!   that wins meanwhile is a duplicate acquisition and an overlap.
//!
//! With N slots (`--slots N`) the lock admits N holders and the witness has
//! N names: a single decision's duplicates are the winners beyond N, the
//! long holders are N (all stopped in the SIGSTOP scenario), and an overlap
//! is a claim that finds N live holders. Contenders report the most holders
//! they saw at once ([`Event::Held`]); an overlap counts as N + 1.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_lease::{Clock, SystemClock};
use rustix::process::Signal;

use super::pool::{Msg, Pool};
use crate::algo;
use crate::config::{Config, Impl, Scenario};
use crate::contend::Role;
use crate::event::Event;
use crate::results::TrialRecord;
use crate::rng::Rng;
use crate::witness;

/// How long spawning and readying the contenders may take.
const READY_PATIENCE: Duration = Duration::from_secs(120);
/// The pid a forged stale lease names (seed 003 §7.3's example).
const FORGED_PID: u32 = 999_999;

/// Runs one trial.
pub(crate) fn run(
    exe: &Path,
    cfg: &Config,
    imp: Impl,
    scenario: Scenario,
    procs: usize,
    index: u32,
) -> TrialRecord {
    let rounds = if scenario.churns() { cfg.rounds } else { 1 };
    let mut rec = TrialRecord::new(imp, scenario, procs, rounds, index);
    rec.slots = cfg.slots;
    let dir = cfg.dir.join(format!(
        "{}-{}-{procs}-{index}",
        imp.name(),
        scenario.label().replace([' ', '+'], "")
    ));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        rec.error(format!("failed to create {}: {e}", dir.display()));
        return rec;
    }
    let mut t = Trial {
        cfg,
        imp,
        scenario,
        procs,
        exe: exe.to_owned(),
        pool: Pool::new(exe, &dir),
        dir: dir.clone(),
        rec,
        kids: Vec::new(),
        killer: None,
        start: Duration::ZERO,
    };
    if let Err(e) = t.play() {
        t.rec.error(e);
    }
    t.finish();
    let rec = t.rec.clone();
    drop(t);
    // OK to ignore: a leftover trial directory is in a temporary directory.
    let _ = std::fs::remove_dir_all(&dir);
    rec
}

#[derive(Default, Clone)]
struct Kid {
    ready: bool,
    decided: Option<bool>,
    eof: bool,
    wins: u64,
    late_us: Option<u64>,
    timed: bool,
}

/// When the kill -9 churn kills: at these win ordinals (counted over all
/// contenders), drawn at random from the first half of the expected wins,
/// the contender that reported the win is killed, wherever it then is
/// (holding, releasing, or already trying again).
struct Killer {
    at: std::collections::BTreeSet<u64>,
    seen: u64,
}

struct Trial<'a> {
    cfg: &'a Config,
    imp: Impl,
    scenario: Scenario,
    procs: usize,
    exe: PathBuf,
    pool: Pool,
    dir: PathBuf,
    rec: TrialRecord,
    kids: Vec<Kid>,
    killer: Option<Killer>,
    start: Duration,
}

impl Trial<'_> {
    fn play(&mut self) -> Result<(), String> {
        algo::prepare_free(self.imp, &self.dir, &self.cfg.timing, self.cfg.slots)?;
        if self.scenario.starts_stale() {
            self.seed_stale()?;
        }
        match self.scenario {
            Scenario::Free | Scenario::Stale => self.single_decision(),
            Scenario::Churn | Scenario::StaleChurn | Scenario::Kill9Churn => self.churn(),
            Scenario::Threads => self.threads(),
            Scenario::SlowHolder | Scenario::Sigstop => self.long_holder(),
        }
    }

    fn single_decision(&mut self) -> Result<(), String> {
        let all = self.spawn_n(Role::Once, self.procs)?;
        self.start_all(&all)?;
        let deadline = self.deadline();
        self.pump(deadline, |t| {
            all.iter()
                .all(|&i| t.kids[i].decided.is_some() || t.kids[i].eof)
        });
        for &i in &all {
            self.pool.close(i);
        }
        self.pump(deadline, |t| all.iter().all(|&i| t.kids[i].eof));
        let winners = all
            .iter()
            .filter(|&&i| self.kids[i].decided == Some(true))
            .count() as u64;
        self.rec.winners = winners;
        self.rec.duplicates = winners.saturating_sub(u64::from(self.cfg.slots));
        Ok(())
    }

    fn churn(&mut self) -> Result<(), String> {
        let all = self.spawn_n(Role::Churn, self.procs)?;
        if self.scenario == Scenario::Kill9Churn {
            let n = self.procs as u64;
            let victims = (n / 4).max(1).min(n.saturating_sub(1));
            let half = (n * u64::from(self.cfg.rounds) / 2).max(1);
            let mut rng = Rng::from_kernel();
            let mut at = std::collections::BTreeSet::new();
            while (at.len() as u64) < victims.min(half) {
                at.insert(1 + rng.next_u64() % half);
            }
            self.killer = Some(Killer { at, seen: 0 });
        }
        self.start_all(&all)?;
        let deadline = self.deadline();
        self.pump(deadline, |t| all.iter().all(|&i| t.kids[i].eof));
        self.rec.winners = all.iter().map(|&i| self.kids[i].wins).sum();
        Ok(())
    }

    fn threads(&mut self) -> Result<(), String> {
        let one = self.spawn(Role::Threads)?;
        self.start_all(&[one])?;
        let deadline = self.deadline();
        self.pump(deadline, |t| t.kids[one].eof);
        let winners = self.rec.winners; // counted per Decided event
        self.rec.duplicates = winners.saturating_sub(1);
        Ok(())
    }

    fn long_holder(&mut self) -> Result<(), String> {
        // One long holder per slot, one after the other, each on a free slot.
        let mut holders = Vec::new();
        for _ in 0..self.cfg.slots {
            holders.push(self.take_one_slot()?);
        }
        let stop = self.scenario == Scenario::Sigstop;
        if stop {
            for &h in &holders {
                self.pool.signal(h, Signal::STOP)?;
            }
        }
        let polls = self.spawn_n(Role::Poll, self.procs)?;
        self.start_all(&polls)?;
        let deadline = self.deadline();
        self.pump(deadline, |t| polls.iter().all(|&i| t.kids[i].eof));
        if stop {
            for &h in &holders {
                self.pool.signal(h, Signal::CONT)?;
            }
            // Let them renew (or learn they lost) before they are told to let go.
            SystemClock.sleep(self.cfg.timing.baton_renew * 3 + Duration::from_millis(20));
        }
        for &h in &holders {
            self.pool.close(h);
        }
        self.pump(deadline, |t| holders.iter().all(|&h| t.kids[h].eof));
        let wins: u64 = polls.iter().map(|&i| self.kids[i].wins).sum();
        self.rec.winners = holders.len() as u64 + wins;
        self.rec.duplicates = wins;
        Ok(())
    }

    /// Starts a long holder and waits until it holds a slot of a lock that
    /// has one free.
    fn take_one_slot(&mut self) -> Result<usize, String> {
        let h = self.spawn(Role::Holder)?;
        self.kids[h].timed = false;
        let ready_by = SystemClock.boot() + READY_PATIENCE;
        self.pump(ready_by, |t| t.kids[h].ready || t.kids[h].eof);
        let now = SystemClock.boot().as_millis();
        self.pool.tell(h, &format!("go {now}"));
        self.pump(ready_by, |t| t.kids[h].decided.is_some() || t.kids[h].eof);
        if self.kids[h].decided != Some(true) {
            return Err("the long holder did not acquire a free lock".into());
        }
        Ok(h)
    }

    /// A dead holder's lease: a real baton holder killed with `kill -9`, or
    /// an exhibit's lease forged 24 hours old.
    fn seed_stale(&mut self) -> Result<(), String> {
        if !self.imp.is_baton() {
            return algo::forge_stale(
                self.imp,
                &self.dir,
                &self.cfg.timing,
                FORGED_PID,
                SystemClock.wall(),
            );
        }
        let mut pool = Pool::new(&self.exe, &self.dir);
        let args = self.args(Role::Crash);
        let c = pool.spawn(&args)?;
        let by = SystemClock.boot() + READY_PATIENCE;
        let mut won = false;
        loop {
            let left = by.saturating_sub(SystemClock.boot());
            let Some((_, line)) = pool.recv(left) else {
                return Err("the crashing holder never finished".into());
            };
            match line.as_deref().map(Event::parse) {
                None => break,
                Some(Ok(Event::Ready)) => {
                    pool.tell(c, &format!("go {}", SystemClock.boot().as_millis()))
                }
                Some(Ok(Event::Decided { won: w })) => won = w,
                Some(_) => {}
            }
        }
        let status = pool.reap(c)?;
        use std::os::unix::process::ExitStatusExt;
        if !won || status.signal() != Some(Signal::KILL.as_raw()) {
            return Err(format!(
                "the crashing holder did not die holding the lease (won {won}, {status})"
            ));
        }
        Ok(())
    }

    fn args(&self, role: Role) -> Vec<OsString> {
        self.args_on(role, 0)
    }

    /// A contender's arguments; in the store, it stands on `host`.
    fn args_on(&self, role: Role, host: usize) -> Vec<OsString> {
        let t = &self.cfg.timing;
        let ms = |d: Duration| d.as_millis().to_string();
        let mut give_up = self.cfg.trial_timeout.min(Duration::from_secs(120));
        if self.imp.wedges() {
            // A churn round holds for microseconds: waiting two long-holder
            // windows for a slot is being wedged, reported as the defect.
            give_up = give_up.min(t.hold_for * 2);
        }
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |k: &str, v: String| {
            a.push(k.into());
            a.push(v.into());
        };
        push("--impl", self.imp.name().into());
        push("--role", role.name().into());
        push("--dir", self.dir.display().to_string());
        push("--rounds", self.cfg.rounds.to_string());
        push("--threads", self.procs.to_string());
        push("--give-up-ms", ms(give_up));
        push("--ttl-ms", ms(t.baton_ttl));
        push("--renew-ms", ms(t.baton_renew));
        push("--step-timeout-ms", ms(t.step_timeout));
        push("--seed-ttl-ms", ms(t.seed_ttl));
        push("--hold-ms", ms(t.hold_for));
        push("--poll-ms", ms(t.poll));
        push("--grace-ms", ms(t.takeover_grace));
        if self.cfg.slots > 1 {
            push("--slots", self.cfg.slots.to_string());
        }
        if let Some(url) = &self.cfg.store {
            push("--store", url.clone());
            push("--host", host.to_string());
        }
        a
    }

    /// Spawns a contender; in the store, contender `i` stands on host
    /// `i % hosts` (the long holder, the first, on this machine).
    fn spawn(&mut self, role: Role) -> Result<usize, String> {
        let args = self.args_on(role, self.kids.len() % self.cfg.hosts.max(1));
        let i = self.pool.spawn(&args)?;
        self.kids.push(Kid {
            timed: true,
            ..Kid::default()
        });
        debug_assert_eq!(i + 1, self.kids.len());
        Ok(i)
    }

    fn spawn_n(&mut self, role: Role, n: usize) -> Result<Vec<usize>, String> {
        (0..n).map(|_| self.spawn(role)).collect()
    }

    /// Waits for `idx` to be ready, then sends them all one start instant.
    fn start_all(&mut self, idx: &[usize]) -> Result<(), String> {
        let by = SystemClock.boot() + READY_PATIENCE;
        if !self.pump(by, |t| {
            idx.iter().all(|&i| t.kids[i].ready || t.kids[i].eof)
        }) {
            return Err(format!("{} contenders were not ready in time", idx.len()));
        }
        let margin = Duration::from_millis(20) + Duration::from_micros(300) * idx.len() as u32;
        let at = SystemClock.boot() + margin;
        self.start = Duration::from_millis(u64::try_from(at.as_millis()).unwrap_or(u64::MAX));
        let line = format!("go {}", self.start.as_millis());
        for &i in idx {
            self.pool.tell(i, &line);
        }
        Ok(())
    }

    fn deadline(&self) -> Duration {
        self.start + self.cfg.trial_timeout
    }

    /// Absorbs events until `done` holds or the boot clock passes `by`.
    fn pump(&mut self, by: Duration, done: impl Fn(&Self) -> bool) -> bool {
        while !done(self) {
            let left = by.saturating_sub(SystemClock.boot());
            if left.is_zero() {
                return false;
            }
            if let Some(m) = self.pool.recv(left.min(Duration::from_millis(200))) {
                self.absorb(m);
            }
        }
        true
    }

    fn absorb(&mut self, (i, line): Msg) {
        let Some(line) = line else {
            self.kids[i].eof = true;
            self.rec.secs = (SystemClock.boot().saturating_sub(self.start)).as_secs_f64();
            match self.pool.reap(i) {
                Ok(s) if s.success() || self.pool.was_killed(i) => {}
                Ok(s) => {
                    let err = self.pool.stderr(i);
                    self.rec.error(format!(
                        "contender pid {} ended with {s}: {err}",
                        self.pool.pid(i)
                    ));
                }
                Err(e) => self.rec.error(e),
            }
            return;
        };
        let ev = match Event::parse(&line) {
            Ok(e) => e,
            Err(e) => return self.rec.error(format!("unreadable line {line:?}: {e}")),
        };
        match ev {
            Event::Ready => self.kids[i].ready = true,
            Event::Decided { won } => {
                // The threads contender reports one decision per thread.
                if self.kids[i].decided != Some(true) {
                    self.kids[i].decided = Some(won);
                }
                if won && self.scenario == Scenario::Threads {
                    self.rec.winners += 1;
                }
            }
            Event::Win => {
                self.kids[i].wins += 1;
                self.maybe_kill(i);
            }
            Event::Overlap { .. } => {
                self.rec.overlaps += 1;
                if self.cfg.slots > 1 {
                    self.rec.max_holders = self.rec.max_holders.max(self.cfg.slots + 1);
                }
            }
            Event::Held { holders } => self.rec.max_holders = self.rec.max_holders.max(holders),
            Event::Displaced => self.rec.displaced += 1,
            Event::Defect { kind, .. } => *self.rec.defects.entry(kind).or_insert(0) += 1,
            Event::Error { detail } => self.rec.error(detail),
            Event::Done {
                late_us, gave_up, ..
            } => {
                self.kids[i].late_us = Some(late_us);
                if gave_up {
                    self.rec.gave_up += 1;
                }
            }
        }
    }

    /// kill -9 churn: kills the contender behind a chosen win (see
    /// [`Killer`]), keeping at least one contender alive.
    fn maybe_kill(&mut self, i: usize) {
        let alive = self
            .kids
            .iter()
            .enumerate()
            .filter(|(j, k)| !k.eof && !self.pool.was_killed(*j))
            .count();
        let Some(k) = self.killer.as_mut() else {
            return;
        };
        k.seen += 1;
        if !k.at.contains(&k.seen) || alive <= 1 || self.pool.was_killed(i) || self.kids[i].eof {
            return;
        }
        let pid = self.pool.pid(i);
        if let Err(e) = self.pool.kill9(i) {
            return self.rec.error(e);
        }
        self.rec.killed += 1;
        match witness::remove_dead_owners(&self.dir.join("witness"), self.cfg.slots, pid) {
            Ok(true) => self.rec.killed_holding += 1,
            Ok(false) => {}
            Err(e) => self.rec.error(e.to_string()),
        }
    }

    fn finish(&mut self) {
        let stragglers: Vec<usize> = (0..self.kids.len())
            .filter(|&i| !self.kids[i].eof)
            .collect();
        for &i in &stragglers {
            // Stopped ones too: SIGKILL ends a stopped process.
            let _ = self.pool.kill9(i); // OK to ignore: the count below says it.
        }
        self.rec.never_finished = stragglers.len() as u64;
        let late = self
            .kids
            .iter()
            .filter(|k| k.timed)
            .filter_map(|k| k.late_us)
            .max()
            .unwrap_or(0);
        self.rec.late_max_ms = late as f64 / 1000.0;
        debug_assert!(self.pool.len() == self.kids.len());
    }
}
