//! The failpoint sweep: every write and wait of a run (the claim, the
//! start record, an attempt's start and end, the end record, the
//! watermark, the queue, a renewal, the release, a request that the run in
//! flight be replaced and its stop) × every fault there: the
//! process at the point killed with `kill -9` (a tick's worker, the
//! supervisor of the run), its parent tick killed, the job's tree killed, a
//! stall, and the disk filling at that point (the state directory on a
//! small tmpfs, filled the moment the point is reached, freed once the
//! run is over).
//!
//! One host, lock files and the SQLite ledger. The faulty tick is the
//! failpoint build; honest ticks of the binary under test race it, so a
//! fault that frees the lock too early, or loses a claim, shows as a
//! second run beside the first or an occurrence run twice; then a later
//! occurrence must still run, and history must say what the jobs saw.

use std::time::Duration;

use crate::job::JobDef;
use crate::scenario::common::{self, Local};
use crate::scenario::{Need, Run, Scenario};
use crate::tmpfs::Tmpfs;
use crate::trial::{Trial, pause_ms, secs};

const NEEDS: &[Need] = &[Need::Root, Need::Failpoints];

/// `(scenario, point, action)`: `enospc` is a stall during which the disk
/// fills.
const SWEEP: &[(&str, &str, &str)] = &[
    ("failpoint-claim-kill", "claim", "kill"),
    ("failpoint-claim-kill-tick", "claim", "kill-parent"),
    ("failpoint-claim-stall", "claim", "stall"),
    ("failpoint-claim-enospc", "claim", "enospc"),
    ("failpoint-start-record-kill", "start-record", "kill"),
    (
        "failpoint-start-record-kill-tick",
        "start-record",
        "kill-parent",
    ),
    ("failpoint-start-record-stall", "start-record", "stall"),
    ("failpoint-start-record-enospc", "start-record", "enospc"),
    ("failpoint-attempt-start-kill", "attempt-start", "kill"),
    ("failpoint-attempt-start-stall", "attempt-start", "stall"),
    ("failpoint-attempt-start-enospc", "attempt-start", "enospc"),
    ("failpoint-attempt-end-kill", "attempt-end", "kill"),
    (
        "failpoint-attempt-end-kill-tick",
        "attempt-end",
        "kill-parent",
    ),
    ("failpoint-attempt-end-stall", "attempt-end", "stall"),
    ("failpoint-attempt-end-enospc", "attempt-end", "enospc"),
    ("failpoint-end-record-kill", "end-record", "kill"),
    (
        "failpoint-end-record-kill-tick",
        "end-record",
        "kill-parent",
    ),
    ("failpoint-end-record-stall", "end-record", "stall"),
    ("failpoint-end-record-enospc", "end-record", "enospc"),
    ("failpoint-watermark-kill", "watermark", "kill"),
    ("failpoint-watermark-stall", "watermark", "stall"),
    ("failpoint-watermark-enospc", "watermark", "enospc"),
    ("failpoint-queue-kill", "queue", "kill"),
    ("failpoint-queue-stall", "queue", "stall"),
    ("failpoint-queue-enospc", "queue", "enospc"),
    ("failpoint-renewal-kill", "renewal", "kill"),
    ("failpoint-renewal-kill-tick", "renewal", "kill-parent"),
    ("failpoint-renewal-kill-job", "renewal", "kill-job"),
    ("failpoint-renewal-stall", "renewal", "stall"),
    ("failpoint-renewal-enospc", "renewal", "enospc"),
    ("failpoint-release-kill", "release", "kill"),
    ("failpoint-release-kill-tick", "release", "kill-parent"),
    ("failpoint-release-stall", "release", "stall"),
    ("failpoint-release-enospc", "release", "enospc"),
    ("failpoint-replace-ask-kill", "replace-ask", "kill"),
    (
        "failpoint-replace-ask-kill-tick",
        "replace-ask",
        "kill-parent",
    ),
    ("failpoint-replace-ask-stall", "replace-ask", "stall"),
    ("failpoint-replace-stop-kill", "replace-stop", "kill"),
    (
        "failpoint-replace-stop-kill-tick",
        "replace-stop",
        "kill-parent",
    ),
    (
        "failpoint-replace-stop-kill-job",
        "replace-stop",
        "kill-job",
    ),
    ("failpoint-replace-stop-stall", "replace-stop", "stall"),
];

macro_rules! sweep_fns {
    ($($i:literal),*) => {
        [$( |t: &mut Trial<'_>| run(t, SWEEP[$i].1, SWEEP[$i].2) ),*]
    };
}

const RUNS: [Run; 41] = sweep_fns!(
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
    26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40
);

/// The sweep's scenarios.
pub(crate) fn scenarios() -> Vec<Scenario> {
    SWEEP
        .iter()
        .zip(RUNS)
        .map(|(&(name, _, _), run)| Scenario {
            name,
            what: "a failpoint of a tick's run: the fault at that write or wait, while honest \
                   ticks race; one run at a time, each occurrence once, true records, no wedge",
            needs: NEEDS,
            cost: 1,
            run,
        })
        .collect()
}

fn run(t: &mut Trial<'_>, point: &str, action: &str) -> Result<(), String> {
    let fs = Tmpfs::mount(&t.path("state"), 4096)?;
    let mut job = JobDef::every_second("j", t.rng.range(5, 10) as u32);
    if point == "watermark" {
        job.settle = true;
        let fp = t.shared.failpoints.clone().unwrap_or_default();
        t.settle_with(&fp)?;
    }
    if point == "queue" {
        job.overlap = Some("queue");
        job.beats = 12;
    }
    if point == "renewal" {
        job.beats = t.rng.range(15, 25) as u32;
    }
    if point.starts_with("replace-") {
        // Runs of 2 s and more, due every second: each occurrence asks the
        // run in flight to stop.
        job.overlap = Some("replace");
        job.beats = t.rng.range(20, 30) as u32;
    }
    let l = Local::new(t, Some(t.path("state")), "", vec![job]);
    let stall = t.rng.range(1500, 3500);
    let fault = match action {
        "stall" => format!("{point}=stall:{stall}"),
        "enospc" => format!("{point}=stall:1500"),
        a => format!("{point}={a}"),
    };
    // The faulty tick is not the first to see the job: it has a run to
    // reach its point in.
    common::sighted(t, &l.config)?;
    // The asking side of a request: an honest tick holds a run first, and
    // the faulty one comes for the next second's occurrence.
    if point == "replace-ask" {
        let c = t.baton(&l.config, &["tick"]);
        if t.spawn(c, "holder-tick").is_none() {
            return Err("the holder's tick did not start".into());
        }
        let events = t.events();
        if !t.until(secs(15), |_| crate::evidence::mark(&events) > 0) {
            return Err("the holder's run never started".into());
        }
        common::next_second();
    }
    // The point in a run that has a queue to drain, or renews, comes later.
    let faulty = t.faulty(&l.config, &["tick"], &fault);
    let Some(pid) = t.spawn(faulty, "faulty-tick") else {
        return Err("the faulty tick did not start".into());
    };
    // The honest ticks race once the faulty one has its run (or has hit
    // its point before the run started), so that it is the faulty one
    // that reaches the point.
    let events = t.events();
    let hits = t.hits_log();
    let before = crate::evidence::mark(&events);
    t.until(secs(15), |t| {
        crate::evidence::mark(&events) > before || hits.exists() || t.ended(pid)
    });
    // With `enospc`, the disk fills the moment the point is reached, which
    // may be while the honest ticks race (a queued occurrence is taken only
    // once a tick has queued it).
    let span = Duration::from_millis(t.rng.range(2500, 4000));
    let until = std::time::Instant::now() + span;
    let mut filled = false;
    loop {
        if action == "enospc" && !filled && hits.exists() {
            fs.fill();
            filled = true;
        }
        if std::time::Instant::now() >= until {
            break;
        }
        let _ = common::tick(t, &l.config);
        let gap = t.rng.range(200, 500);
        pause_ms(gap);
    }
    if action == "enospc" && !filled && t.await_hit(secs(10)).is_some() {
        fs.fill();
    }
    if t.wait_for(pid, secs(40)).is_none() {
        t.v.wedge("the faulty tick did not end within 40 s".into());
    }
    fs.free();
    t.count_hits();
    pause_ms(100);
    common::finish(t, &l);
    drop(fs);
    Ok(())
}
