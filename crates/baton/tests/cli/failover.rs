//! The PostgreSQL store failing over, with synchronous replication: jobs
//! run by many `baton tick` and `baton run` processes of three state
//! directories, through a URL naming the primary and its standby; mid-run
//! the primary is stopped as a crash stops it and the standby promoted.
//!
//! What must hold: no two runs of one job overlap (each run writes its
//! start and end, with the time, to one log); no occurrence runs twice;
//! the fences each job's runs hold, and those the new primary's ledger
//! records, only grow; no finished run's record is lost, neither one
//! recorded before the failover nor one a process said it recorded
//! (exit 0); and ticks after the failover run on the new primary.
//!
//! The same campaign with asynchronous replication and a lag: only the
//! overlap (none) and the fences are asserted; what the failover lost is
//! counted and printed, the figures BENCHMARKS reports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use baton_testkit::pg::PgServer;
use baton_testkit::replica::{Mode, Replicated};

use crate::support::{code, eventually, pause, stderr, stdout};

/// Renewals every third of a 4 s TTL; a holder that cannot renew kills its
/// job within TTL + renewal wait + kill grace.
const POLICY: &str = "ttl = \"4s\"\nkill_grace = \"1s\"\ntakeover_grace = \"4s\"\n";

const JOBS: [&str; 3] = ["alpha", "beta", "gamma"];

/// One line of the jobs' log.
#[derive(Debug, Clone)]
struct Line {
    end: bool,
    at: u128,
    job: String,
    run: String,
    /// Start lines: the occurrence, the fence and the process's mark.
    occurrence: String,
    fence: u64,
    mark: String,
}

fn read_log(path: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let end = f[0] == "end";
            Line {
                end,
                at: f[1].parse().unwrap_or_else(|_| panic!("{l:?}")),
                job: f[2].to_owned(),
                run: f[3].to_owned(),
                occurrence: if end { String::new() } else { f[4].to_owned() },
                fence: if end { 0 } else { f[5].parse().unwrap() },
                mark: if end { String::new() } else { f[6].to_owned() },
            }
        })
        .collect()
}

/// The job every entry runs: a start line, 1.5 s of work, an end line
/// (also when it is told to stop).
fn job_script(dir: &Path, log: &Path) -> PathBuf {
    let script = dir.join("job.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nlog={log}\n\
             echo \"start $(date +%s%N) $BATON_JOB $BATON_RUN_ID $BATON_OCCURRENCE $BATON_FENCE \
             ${{MARK:-none}}\" >> $log\n\
             trap 'echo \"end $(date +%s%N) $BATON_JOB $BATON_RUN_ID stopped\" >> $log; exit 143' \
             TERM INT\n\
             sleep 1.5 & wait $!\n\
             echo \"end $(date +%s%N) $BATON_JOB $BATON_RUN_ID done\" >> $log\n",
            log = log.display()
        ),
    )
    .unwrap();
    script
}

fn config(dir: &Path, host: &str, url: &str, script: &Path) -> PathBuf {
    config_with(dir, host, url, script, "")
}

/// As [`config`], with `more` (jobs' tables) at its end.
fn config_with(dir: &Path, host: &str, url: &str, script: &Path, more: &str) -> PathBuf {
    let state = dir.join(format!("state-{host}"));
    let file = dir.join(format!("{host}.toml"));
    let mut text = format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n{POLICY}\n[store]\nurl = {url:?}\n\n",
        state.display()
    );
    for job in JOBS {
        text.push_str(&format!(
            "[jobs.{job}]\nschedule = \"every:2s\"\nrun = \"sh {}\"\n",
            script.display()
        ));
    }
    text.push_str(more);
    std::fs::write(&file, text).unwrap();
    file
}

fn baton(config: &Path, args: &[&str]) -> Command {
    crate::support::baton_on(config, args)
}

/// What one process said when it ended.
#[derive(Debug)]
struct Ended {
    mark: String,
    args: String,
    code: i32,
    said: String,
}

/// A run as `server`'s ledger has it.
#[derive(Debug)]
struct Recorded {
    job: String,
    fence: i64,
    finished: bool,
    /// Its attempts' rows.
    attempts: usize,
}

/// Every run in `server`'s ledger by id, in the order they started.
fn recorded(server: &PgServer) -> BTreeMap<String, Recorded> {
    server
        .sql(
            "SELECT r.run_id, r.job, coalesce(r.fence, -1), r.finished IS NOT NULL, \
             (SELECT count(*) FROM baton.attempts a WHERE a.run_id = r.run_id) \
             FROM baton.runs r",
        )
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            let run = Recorded {
                job: f[1].to_owned(),
                fence: f[2].parse().unwrap(),
                finished: f[3] == "t",
                attempts: f[4].parse().unwrap(),
            };
            (f[0].to_owned(), run)
        })
        .collect()
}

/// Each job's run fences in `server`'s ledger, in the order the runs
/// started.
fn ledger_fences(server: &PgServer) -> BTreeMap<String, Vec<i64>> {
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for l in server
        .sql("SELECT job, fence FROM baton.runs ORDER BY job, started, fence")
        .lines()
    {
        let (job, fence) = l.split_once('|').unwrap();
        out.entry(job.to_owned())
            .or_default()
            .push(fence.parse().unwrap());
    }
    out
}

fn lease_fences(server: &PgServer) -> BTreeMap<String, i64> {
    server
        .sql("SELECT name, fence FROM baton.leases")
        .lines()
        .map(|l| {
            let (n, f) = l.split_once('|').unwrap();
            (n.to_owned(), f.parse().unwrap())
        })
        .collect()
}

/// Workers that each run one `baton` command again and again, `every` ms
/// apart, each run marked (`MARK`), until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    workers: Vec<std::thread::JoinHandle<Vec<Ended>>>,
}

impl Load {
    /// One worker per plan: its configuration, its arguments, its pause.
    fn start(plans: Vec<(PathBuf, Vec<&'static str>, u64)>) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let workers = plans
            .into_iter()
            .enumerate()
            .map(|(w, (config, args, every))| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut ended = Vec::new();
                    let mut n = 0;
                    while !stop.load(Ordering::SeqCst) {
                        let mark = format!("w{w}-{n}");
                        n += 1;
                        let o = baton(&config, &args).env("MARK", &mark).output().unwrap();
                        ended.push(Ended {
                            mark,
                            args: args.join(" "),
                            code: code(&o),
                            said: format!("{}{}", stdout(&o), stderr(&o)),
                        });
                        pause(every);
                    }
                    ended
                })
            })
            .collect();
        Load { stop, workers }
    }

    /// Stops every worker after its command in flight; what each said.
    fn stop(self) -> Vec<Ended> {
        self.stop.store(true, Ordering::SeqCst);
        self.workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    }
}

/// Whether a run has started and not yet ended.
fn in_flight(lines: &[Line]) -> bool {
    let ended: BTreeSet<&str> = lines
        .iter()
        .filter(|l| l.end)
        .map(|l| l.run.as_str())
        .collect();
    lines
        .iter()
        .any(|l| !l.end && !ended.contains(l.run.as_str()))
}

/// The log and the processes that failed (exit neither 0 nor 75), for a
/// failed assertion's message.
fn context(lines: &[Line], ended: &[Ended]) -> String {
    let failures: Vec<String> = ended
        .iter()
        .filter(|e| e.code != 0 && e.code != 75)
        .map(|e| format!("{} ({}) exit {}: {}", e.args, e.mark, e.code, e.said))
        .collect();
    format!("log: {lines:#?}\nprocesses that failed: {failures:#?}")
}

/// `job`'s starts, having checked the guarantee on them: every run ended,
/// no two overlap (each ends before the next starts), and the fences they
/// held grow from run to run.
fn one_at_a_time<'a>(lines: &'a [Line], job: &str, context: &str) -> Vec<&'a Line> {
    let starts: Vec<&Line> = lines.iter().filter(|l| l.job == job && !l.end).collect();
    let mut spans: Vec<(u128, u128, &str)> = starts
        .iter()
        .map(|s| {
            let end = lines
                .iter()
                .find(|l| l.end && l.run == s.run)
                .unwrap_or_else(|| panic!("run {} of {job} never ended\n{context}", s.run));
            (s.at, end.at, s.run.as_str())
        })
        .collect();
    spans.sort();
    for w in spans.windows(2) {
        assert!(
            w[0].1 < w[1].0,
            "runs {} and {} of {job} overlap\n{context}",
            w[0].2,
            w[1].2
        );
    }
    let mut by_start = starts.clone();
    by_start.sort_by_key(|s| s.at);
    for w in by_start.windows(2) {
        assert!(
            w[0].fence < w[1].fence,
            "{job}: fence {} after {}\n{context}",
            w[1].fence,
            w[0].fence
        );
    }
    starts
}

#[test]
fn ticks_and_runs_through_a_synchronous_failover_never_overlap_repeat_or_lose_a_record() {
    let pair = Replicated::start(Mode::Synchronous);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = dir.join("log");
    let script = job_script(dir, &log);
    let url = pair.url();
    let configs: Vec<PathBuf> = ["h1", "h2", "h3"]
        .iter()
        .map(|h| config(dir, h, &url, &script))
        .collect();
    let o = baton(&configs[0], &["store", "migrate"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));

    // Ticks on every state directory, two workers each, and manual runs
    // of one job, again and again.
    let mut plans: Vec<(PathBuf, Vec<&'static str>, u64)> = Vec::new();
    for c in &configs {
        plans.push((c.clone(), vec!["tick"], 100));
        plans.push((c.clone(), vec!["tick"], 100));
    }
    plans.push((configs[0].clone(), vec!["run", "alpha"], 100));
    plans.push((configs[1].clone(), vec!["run", "beta"], 100));
    let load = Load::start(plans);

    // Let some runs finish, then fail over while runs are in flight.
    eventually("a finished run of every job on the primary", || {
        let runs = recorded(pair.primary());
        JOBS.iter()
            .all(|j| runs.values().any(|r| r.job == *j && r.finished))
    });
    eventually("a run in flight", || in_flight(&read_log(&log)));
    let finished_before: BTreeSet<String> = recorded(pair.primary())
        .into_iter()
        .filter(|(_, r)| r.finished)
        .map(|(id, _)| id)
        .collect();
    let fences_before = lease_fences(pair.primary());
    pair.primary().stop_immediately();
    let crashed_at = now_ns();
    // With no server taking writes, a tick refuses, naming both servers,
    // and runs nothing.
    let o = baton(&configs[2], &["tick"]).output().unwrap();
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    for server in [pair.primary(), pair.standby()] {
        assert!(
            stderr(&o).contains(&format!("127.0.0.1:{}", server.port()))
                && stderr(&o).contains("nothing was run"),
            "{}",
            stderr(&o)
        );
    }
    pause(500);
    pair.promote();
    let promoted_at = now_ns();

    // Ticks go on against the new primary until each job has run there.
    eventually("every job to run after the promotion", || {
        ran_after(&read_log(&log), promoted_at)
    });
    pause(3000);
    let ended = load.stop();
    // Wait for stray runs (none should be left) to write their end.
    pause(2000);

    let lines = read_log(&log);
    let new = recorded(pair.standby());
    let context = context(&lines, &ended);

    for job in JOBS {
        let starts = one_at_a_time(&lines, job, &context);
        // No occurrence runs twice.
        let mut seen = BTreeSet::new();
        for s in starts.iter().filter(|s| s.occurrence != "manual") {
            assert!(
                seen.insert(s.occurrence.as_str()),
                "occurrence {} of {job} ran twice\n{context}",
                s.occurrence
            );
        }
        // The new primary's ledger holds the job's runs with the fences
        // they held, and its lease's fence is not behind the old one's.
        for s in &starts {
            if let Some(r) = new.get(&s.run) {
                assert_eq!(
                    (r.job.as_str(), r.fence),
                    (job, i64::try_from(s.fence).unwrap()),
                    "run {}\n{context}",
                    s.run
                );
            }
        }
        let fences = ledger_fences(pair.standby())
            .remove(job)
            .unwrap_or_default();
        assert!(
            fences.windows(2).all(|w| w[0] < w[1]),
            "{job}: the new primary's ledger has fences {fences:?}\n{context}"
        );
        let after = lease_fences(pair.standby());
        assert!(
            after.get(job) >= fences_before.get(job),
            "{job}: lease fence {:?} on the new primary, {:?} before\n{context}",
            after.get(job),
            fences_before.get(job)
        );
        assert!(
            starts.iter().any(|s| s.at < crashed_at) && starts.iter().any(|s| s.at > promoted_at),
            "{job} ran before the failover and after it\n{context}"
        );
    }

    // No finished run's record is lost: those finished on the old primary,
    // and those of every process that ended well.
    for id in &finished_before {
        assert!(
            new.get(id).is_some_and(|r| r.finished && r.attempts > 0),
            "run {id}, finished before the failover, is not finished on the new primary\n{context}"
        );
    }
    for e in ended.iter().filter(|e| e.code == 0) {
        for s in lines.iter().filter(|l| !l.end && l.mark == e.mark) {
            assert!(
                new.get(&s.run)
                    .is_some_and(|r| r.finished && r.attempts > 0),
                "run {} of {} ({}) exited 0 but is not recorded finished on the new primary\n{context}",
                s.run,
                e.args,
                e.mark
            );
        }
    }
}

/// Whether every job has a run that started after `at` (in nanoseconds
/// since the epoch) and ended. A run in flight through the failover that
/// ends after it does not count: the new primary grants nothing for TTL
/// plus grace after the switch, so the first run started there comes
/// later.
fn ran_after(lines: &[Line], at: u128) -> bool {
    JOBS.iter().all(|j| {
        lines.iter().any(|s| {
            s.job == *j && !s.end && s.at > at && lines.iter().any(|e| e.end && e.run == s.run)
        })
    })
}

/// Now, in nanoseconds since the epoch, read as the jobs read it (`date
/// +%s%N`), so the instants compare with the log's.
fn now_ns() -> u128 {
    let o = Command::new("date").arg("+%s%N").output().unwrap();
    stdout(&o).trim().parse().unwrap()
}

/// The job due every 20 s in the asynchronous campaign.
const SLOW: &str = "delta";

/// The missed ranges (job, first, last) in `server`'s ledger.
fn missed_ranges(server: &PgServer) -> Vec<(String, i64, i64)> {
    server
        .sql("SELECT job, first, last FROM baton.missed")
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (
                f[0].to_owned(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect()
}

/// The claims (`job@occurrence`) in `server`'s store.
fn claims(server: &PgServer) -> BTreeSet<String> {
    server
        .sql("SELECT job || '@' || occurrence FROM baton.claims")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The campaign with **asynchronous** replication and a lag: hosts tick
/// every second and run jobs by hand; the standby is cut off from the
/// primary for a few seconds of grants, claims and records, then the
/// primary crashes and the lagging standby is promoted. No two runs of a
/// job may overlap, and fences still grow; what the failover lost is
/// counted and printed (occurrences run twice, finished runs missing from
/// the new primary's ledger, grants and claims lost), never asserted: it
/// is the measure BENCHMARKS reports.
#[test]
fn ticks_and_runs_through_an_asynchronous_failover_with_lag_never_overlap_and_count_the_losses() {
    let pair = Replicated::start(Mode::Asynchronous);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = dir.join("log");
    let script = job_script(dir, &log);
    let url = pair.url();
    // Besides the jobs due every 2 s, one due every 20 s: its occurrence
    // claimed during the lag is still the one due when the hold ends.
    let slow = format!(
        "[jobs.{SLOW}]\nschedule = \"every:20s\"\nrun = \"sh {}\"\n",
        script.display()
    );
    let configs: Vec<PathBuf> = ["h1", "h2", "h3"]
        .iter()
        .map(|h| config_with(dir, h, &url, &script, &slow))
        .collect();
    let o = baton(&configs[0], &["store", "migrate"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));

    // A tick on each host every second, and manual runs of two jobs.
    let mut plans: Vec<(PathBuf, Vec<&'static str>, u64)> = Vec::new();
    for c in &configs {
        plans.push((c.clone(), vec!["tick"], 1000));
    }
    plans.push((configs[0].clone(), vec!["run", "alpha"], 100));
    plans.push((configs[1].clone(), vec!["run", "beta"], 100));
    let load = Load::start(plans);

    eventually("a finished run of every job on the primary", || {
        let runs = recorded(pair.primary());
        JOBS.iter()
            .all(|j| runs.values().any(|r| r.job == *j && r.finished))
    });
    // The lag begins 6 s before the slow job's next occurrence and lasts
    // until that occurrence is claimed on the primary, and a second more.
    let wait = 20 - (now_ns() / 1_000_000_000 % 20);
    if wait < 6 {
        pause(1000 * (wait as u64 + 14));
    } else {
        pause(1000 * (wait as u64 - 6));
    }
    pair.detach();
    let detached_at = now_ns();
    // What the standby has when it is cut off: nothing more reaches it.
    let replicated: BTreeSet<String> = recorded(pair.standby())
        .into_iter()
        .filter(|(_, r)| r.finished)
        .map(|(id, _)| id)
        .collect();
    let slow_due = (detached_at / 1_000_000_000 / 20 + 1) * 20;
    eventually(
        "the slow job's occurrence to be claimed on the primary",
        || claims(pair.primary()).contains(&format!("{SLOW}@{slow_due}")),
    );
    pause(1000);
    eventually("a run in flight", || in_flight(&read_log(&log)));
    let on_primary = recorded(pair.primary());
    let claims_before = claims(pair.primary());
    let fences_before = lease_fences(pair.primary());
    pair.primary().stop_immediately();
    let crashed_at = now_ns();
    pause(500);
    pair.promote();
    let promoted_at = now_ns();
    // Nothing is granted yet on the new primary: its rows are what it had.
    let fences_promoted = lease_fences(pair.standby());

    eventually("every job to run after the promotion", || {
        ran_after(&read_log(&log), promoted_at)
    });
    pause(3000);
    let ended = load.stop();
    pause(2000);

    let lines = read_log(&log);
    let new = recorded(pair.standby());
    let context = context(&lines, &ended);

    let mut twice = Vec::new();
    let missed = missed_ranges(pair.standby());
    let mut ran_but_missed = Vec::new();
    for job in JOBS.iter().copied().chain([SLOW]) {
        // The guarantee: no two runs of the job overlap.
        let starts = one_at_a_time(&lines, job, &context);
        if job != SLOW {
            assert!(
                starts.iter().any(|s| s.at < crashed_at)
                    && starts.iter().any(|s| s.at > promoted_at),
                "{job} ran before the failover and after it\n{context}"
            );
        }
        // The measures: occurrences that ran more than once, and those
        // that ran but the new primary records as missed.
        for s in starts.iter().filter(|s| s.occurrence != "manual") {
            let at = s
                .occurrence
                .parse::<jiff::Timestamp>()
                .unwrap_or_else(|e| panic!("occurrence {:?}: {e}", s.occurrence))
                .as_second();
            if missed
                .iter()
                .any(|(j, first, last)| j == job && *first <= at && at <= *last)
            {
                ran_but_missed.push(format!("{job}@{at}"));
            }
        }
        let mut seen = BTreeSet::new();
        for s in starts.iter().filter(|s| s.occurrence != "manual") {
            if !seen.insert(s.occurrence.as_str()) {
                twice.push(format!("{job}@{}", s.occurrence));
            }
        }
    }
    // Runs told to stop after the crash (their lease lost or unrenewable).
    let stopped = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("end ") && l.ends_with(" stopped"))
        .filter(|l| {
            l.split(' ')
                .nth(1)
                .and_then(|at| at.parse::<u128>().ok())
                .is_some_and(|at| at > crashed_at)
        })
        .count();

    // What the standby had when it was cut off is kept.
    for id in &replicated {
        assert!(
            new.get(id).is_some_and(|r| r.finished),
            "run {id}, finished and replicated before the lag, is not on the new primary\n{context}"
        );
    }
    // The measure: runs finished (on the old primary, or by a process that
    // exited 0) that the new primary's ledger lacks or has unfinished.
    let finished_lost: Vec<&String> = on_primary
        .iter()
        .filter(|(id, r)| r.finished && !new.get(*id).is_some_and(|n| n.finished))
        .map(|(id, _)| id)
        .collect();
    let exited_well_lost: Vec<String> = ended
        .iter()
        .filter(|e| e.code == 0)
        .flat_map(|e| lines.iter().filter(move |l| !l.end && l.mark == e.mark))
        .filter(|s| !new.get(&s.run).is_some_and(|r| r.finished))
        .map(|s| s.run.clone())
        .collect();
    let claims_after = claims(pair.standby());
    let claims_lost: Vec<&String> = claims_before.difference(&claims_after).collect();
    let grants_lost = fences_before
        .iter()
        .filter(|(name, fence)| fences_promoted.get(*name).is_none_or(|f| f < fence))
        .count();
    if let Some(e) = ended
        .iter()
        .find(|e| e.args.starts_with("run") && e.said.contains("the store's server changed"))
    {
        eprintln!("what a run held back said (exit {}): {}", e.code, e.said);
    }
    let held_back = ended
        .iter()
        .filter(|e| e.said.contains("the store's server changed"))
        .count();
    eprintln!(
        "asynchronous failover after a {} ms lag: {} runs started, 0 overlaps; \
         occurrences run twice: {} {twice:?}; occurrences that ran but are recorded \
         missed on the new primary: {} {ran_but_missed:?}; finished runs missing from the new primary's \
         ledger: {} of the {} that finished on the old primary during the lag \
         {finished_lost:?}, and {} of the runs whose process exited 0 {exited_well_lost:?}; claims lost: {} {claims_lost:?}; \
         locks whose last grant was lost: {grants_lost}; runs stopped after the crash: \
         {stopped}; processes told the server changed: {held_back}; hold after the switch: \
         TTL 4 s + grace 4 s",
        (crashed_at - detached_at) / 1_000_000,
        lines.iter().filter(|l| !l.end).count(),
        twice.len(),
        ran_but_missed.len(),
        finished_lost.len(),
        on_primary
            .iter()
            .filter(|(id, r)| r.finished && !replicated.contains(*id))
            .count(),
        exited_well_lost.len(),
        claims_lost.len(),
    );
    assert!(
        held_back > 0,
        "no process was told the new primary holds grants back\n{context}"
    );
}
