//! Where a run's story goes: the ledger, the dated logs, and the alerts'
//! surfaces. One value per process, shared by the run and the
//! runner's event reports (on one thread, through `Rc<RefCell<…>>`).
//!
//! Nothing here may stop a run under way: a log that cannot be written, or
//! a ledger that fails, is said once on stderr and in the envelope, and the
//! run goes on (whether a run may start is the run's own question:
//! `crate::engine::run_record`). The lease's occurrence claim, not the ledger, is
//! what keeps an occurrence from running twice. What must hold before a run starts (its
//! logs can be written, the ledger's files can be trusted) is checked before
//! its lease is taken, where a refusal loses nothing ([`crate::ops::tick::preflight`],
//! [`crate::engine::run`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_lease::Clock;
use baton_store::ledger::Records;
use baton_store::words::AlertKind;
use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::config::OtlpEndpoint;
use crate::config::{Command, Config};
use crate::engine::alerts::Alert;
use crate::engine::kept_queue::KeptQueue;
use crate::engine::pending::Pending;
use crate::engine::trace::{Export, RunTrace, Span, TraceParent};
use crate::engine::webhook::{Delivery, Webhook};
use crate::state::logs::Logs;

/// The ledger, the logs and the alert command of one process.
pub struct Surfaces {
    /// The logs.
    pub logs: Logs,
    ledger: Option<Box<dyn Records>>,
    ledger_failed: bool,
    /// Ledger files left for fresh ones so far (see [`Surfaces::ledger_resets`]).
    ledger_resets: u64,
    /// Alerts raised while a step runs, for the ledger once it may block.
    deferred: Vec<baton_store::ledger::NewAlert>,
    /// Alerts the ledger did not take, for the process's end or their
    /// run's end slot.
    unwritten: Vec<baton_store::ledger::NewAlert>,
    /// Where an alert raised while a step runs is written at once, on a
    /// thread and a ledger connection of its own
    /// ([`Surfaces::write_step_alerts_apart`]); `None`: deferred.
    apart: Option<Arc<Config>>,
    /// Those writes under way: each gives its row back when it failed.
    writing: Vec<std::thread::JoinHandle<Option<baton_store::ledger::NewAlert>>>,
    alert_command: Option<Command>,
    /// `[scheduler]`'s webhook: for an alert of no job's, or of a job not
    /// in the configuration.
    webhook: Option<Webhook>,
    /// Each job's webhook (its own, or the one it inherits).
    job_webhooks: BTreeMap<String, Option<Webhook>>,
    /// Deliveries held rather than posted ([`Surfaces::open_holding`]).
    held: Option<Vec<Delivery>>,
    pending: Pending,
    clock: Arc<dyn Clock>,
    log_failed: bool,
    /// Set while the logs' set-aside files are being reported.
    reporting_set_aside: bool,
    /// The ledger could not be opened, and no run may start without it.
    runs_refused: bool,
    /// Told of each run once its start is recorded ([`Surfaces::on_start`]).
    on_start: Option<OnStart>,
    /// The ledger was written by a newer baton: nothing in it was read.
    ledger_newer: bool,
    /// What was read with the store's clock, until a tick takes it.
    overview: Option<baton_store::ledger::Overview>,
    /// The queue of a lock's jobs as the last run under it recorded its
    /// end, until the next look before the release takes it.
    queue_at_end: KeptQueue,
    /// Each job's zone, for the instants a line on stderr names.
    zones: BTreeMap<String, TimeZone>,
    /// The scheduler's zone, for a line of no job's.
    zone: TimeZone,
    /// Where runs' spans are sent (`[telemetry] otlp_endpoint`); none: no
    /// run is traced.
    otlp: Option<OtlpEndpoint>,
    /// The trace context this process was started with (`TRACEPARENT`),
    /// until the first run takes it ([`Surfaces::trace_run`]).
    trace_parent: Option<TraceParent>,
}

/// What [`Surfaces::on_start`] calls.
pub type OnStart = Box<dyn FnMut(&RunStart)>;

/// A run whose start the ledger has just recorded, as [`Surfaces::on_start`]
/// tells it: before its first step runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStart {
    /// The job.
    pub job: String,
    /// The run's id.
    pub run_id: String,
    /// Its occurrence (seconds since 1970); `None` for a run by hand.
    pub occurrence: Option<i64>,
    /// The lease's fence.
    pub fence: u64,
}

/// The most alerts the ledger did not take that a process keeps for its
/// next use of the ledger; the oldest beyond it are in `alerts.log` only.
const UNWRITTEN_MAX: usize = 100;

/// As [`crate::store::existing_records`], for a view that reads the ledger
/// (`status`, `history`, the page, `/metrics`): a ledger its open found
/// corrupt and moved aside is alerted (`ledger-corrupt`) on every surface,
/// as a tick alerts it, before the view reads the fresh one. The view
/// writes nothing else; the move itself is the ledger's, under its repair
/// mutex, once between all processes.
pub fn existing_records_alerting(
    config: &Config,
    now: Timestamp,
) -> Option<Result<Box<dyn Records>, baton_store::ledger::Error>> {
    let mut ledger = match crate::store::existing_records(config, now)? {
        Ok(l) => l,
        Err(e) => return Some(Err(e)),
    };
    let moved = ledger.take_recovered();
    if moved.is_empty() {
        return Some(Ok(ledger));
    }
    let clock: Arc<dyn Clock> = Arc::new(baton_lease::SystemClock);
    let mut s = Surfaces::opened(config, clock, Some(ledger), false);
    s.report_recovered(moved);
    s.into_ledger().map(Ok)
}

impl Surfaces {
    /// The surfaces of `config`'s state directory; opens the ledger (a
    /// corrupt one is moved aside and reported as an alert).
    pub fn open(config: &Config, clock: Arc<dyn Clock>) -> Self {
        Self::open_with(config, clock, None)
    }

    /// As [`Surfaces::open`], with a ledger already open on `config`'s state
    /// directory (a long-lived process keeps one between uses; see
    /// [`Surfaces::into_ledger`]).
    pub fn open_with(
        config: &Config,
        clock: Arc<dyn Clock>,
        ledger: Option<Box<dyn Records>>,
    ) -> Self {
        Self::opened(config, clock, ledger, false)
    }

    /// As [`Surfaces::open_with`], but every webhook delivery is held, not
    /// posted, until [`Surfaces::take_held`] hands it over: for a decision
    /// whose runs must start (be forked from a single-threaded process)
    /// before any webhook is posted, so that a receiver that stalls never
    /// delays a run's start. Alert commands run as ever.
    pub fn open_holding(
        config: &Config,
        clock: Arc<dyn Clock>,
        ledger: Option<Box<dyn Records>>,
    ) -> Self {
        Self::opened(config, clock, ledger, true)
    }

    /// The webhook deliveries held so far ([`Surfaces::open_holding`]), to
    /// be posted by the caller ([`crate::ops::tick::post_held`]).
    pub fn take_held(&mut self) -> Vec<Delivery> {
        self.held.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn opened(
        config: &Config,
        clock: Arc<dyn Clock>,
        ledger: Option<Box<dyn Records>>,
        hold: bool,
    ) -> Self {
        let state = &config.settings.state_dir.value;
        let logs = Logs::new(state, config.settings.timezone.value.tz.clone());
        let mut s = Self {
            logs,
            ledger: None,
            ledger_failed: false,
            ledger_resets: 0,
            deferred: Vec::new(),
            unwritten: Vec::new(),
            apart: None,
            writing: Vec::new(),
            alert_command: config.settings.alert_command.value.clone(),
            webhook: Webhook::of_scheduler(&config.settings),
            job_webhooks: config
                .jobs
                .iter()
                .map(|(name, job)| (name.clone(), Webhook::of_job(job)))
                .collect(),
            held: hold.then(Vec::new),
            pending: Pending::default(),
            clock,
            log_failed: false,
            reporting_set_aside: false,
            runs_refused: false,
            on_start: None,
            ledger_newer: false,
            overview: None,
            queue_at_end: KeptQueue::default(),
            zones: config
                .jobs
                .iter()
                .map(|(name, job)| (name.clone(), job.timezone.value.tz.clone()))
                .collect(),
            zone: config.settings.timezone.value.tz.clone(),
            otlp: config.telemetry.otlp_endpoint.value.clone(),
            trace_parent: config
                .telemetry
                .otlp_endpoint
                .value
                .as_ref()
                .and_then(|_| TraceParent::from_env()),
        };
        match ledger {
            Some(l) => s.ledger = Some(l),
            // Its first call fails as the open would have: every call's
            // failure is handled here as the open's.
            None => match crate::store::records_pipelined(config, s.clock.wall()) {
                Ok(l) => s.ledger = Some(l),
                // No run starts before its start is recorded: a ledger that
                // cannot be opened (a full disk, a busy repair, files that
                // are refused, a newer baton's schema) refuses every run,
                // and its occurrences are left to a later tick.
                Err(e) => {
                    s.runs_refused = true;
                    s.ledger_newer = e.is_newer_schema();
                    s.warn(&format!(
                        "the ledger is unavailable: {e}; no run starts without it"
                    ));
                }
            },
        }
        if crate::store::shared(config)
            && let Some(l) = s.ledger.as_mut()
        {
            // Several hosts share this store: every decision and every
            // stamp of this process goes by the store's clock, read with
            // what a tick reads first, in the same round trip.
            let read = |l: &mut dyn Records| {
                let o = l.overview()?;
                Ok((o.clock, o))
            };
            match crate::store::decision_clock_with(l.as_mut(), Arc::clone(&s.clock), read) {
                Ok((c, o)) => {
                    s.clock = c;
                    s.overview = Some(o);
                }
                Err(e) => {
                    s.ledger = None;
                    s.runs_refused = true;
                    s.ledger_newer = e.is_newer_schema();
                    s.warn(&format!(
                        "the ledger is unavailable: {e}; no run starts without it"
                    ));
                }
            }
        }
        s.recovered();
        let now = s.now();
        s.logs.set_aside_planted(None, now);
        s.report_set_aside();
        s
    }

    /// What was read with the store's clock when the surfaces opened on a
    /// store several hosts share ([`baton_store::ledger::Records::overview`]),
    /// once: a tick decides from it rather than read it again.
    pub fn take_overview(&mut self) -> Option<baton_store::ledger::Overview> {
        self.overview.take()
    }

    /// The queue as the last run's end read it, for the holder's next look
    /// before the release.
    pub(crate) fn kept_queue(&mut self) -> &mut KeptQueue {
        &mut self.queue_at_end
    }

    /// Whether the ledger is open.
    pub fn has_ledger(&self) -> bool {
        self.ledger.is_some()
    }

    /// Checks that `job`'s output log can be written by a run starting now
    /// (before its lease is taken: see [`crate::state::logs::Logs::check_job`]); a
    /// special file planted there is set aside, and said in an alert.
    ///
    /// # Errors
    ///
    /// Why it cannot.
    pub fn check_job_log(&mut self, job: &str) -> Result<(), crate::state::logs::LogError> {
        let now = self.now();
        self.logs.set_aside_planted(Some(job), now);
        self.report_set_aside();
        self.logs.check_job(job, now)
    }

    /// Whether no run may start: the ledger could not be opened (said when
    /// it failed), so no run's start could be recorded.
    pub fn refuses_runs(&self) -> bool {
        self.runs_refused
    }

    /// Whether the ledger was refused as a newer baton's, when it was
    /// opened or by a call since: nothing may be decided until baton is
    /// upgraded, so nothing should be tried.
    pub fn ledger_is_newer(&self) -> bool {
        self.ledger_newer
    }

    /// Finishes (as [`Surfaces::finish`]) and hands back the open ledger.
    pub fn into_ledger(mut self) -> Option<Box<dyn Records>> {
        self.finish();
        self.ledger.take()
    }

    /// Now, on this process's clock.
    pub fn now(&self) -> Timestamp {
        self.clock.wall()
    }

    /// Now, on the wall clock and on the boot clock: the start of a span
    /// whose end [`Surfaces::since`] stamps.
    pub fn mark(&self) -> Mark {
        Mark {
            wall: self.clock.wall(),
            boot: self.clock.boot(),
        }
    }

    /// The end of a span begun at `mark`: its wall time plus the time the
    /// boot clock counted since. A wall clock stepped meanwhile (an NTP
    /// step, an operator's `date -s`) moves neither the span's length nor
    /// its end before its start or an hour past it; the stamps of a run
    /// stay on its start's timeline.
    pub fn since(&self, mark: Mark) -> Timestamp {
        let spent = self.clock.boot().saturating_sub(mark.boot);
        mark.wall
            .checked_add(spent)
            .unwrap_or_else(|_| self.clock.wall())
    }

    /// The clock.
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.clock)
    }

    /// Bounds each ledger call from now on by `within`, or gives the
    /// store's own deadline back with `None` ([`Records::bound_calls`]):
    /// a run's supervisor renews its lease only between calls.
    pub fn bound_ledger(&mut self, within: Option<std::time::Duration>) {
        if let Some(l) = self.ledger.as_mut() {
            l.bound_calls(within);
        }
    }

    /// Runs `f` on the ledger; a failure is said once and yields `None`.
    pub fn ledger<T>(
        &mut self,
        f: impl FnOnce(&mut dyn Records) -> Result<T, baton_store::ledger::Error>,
    ) -> Option<T> {
        self.flush_deferred();
        let now = self.now();
        let l = self.ledger.as_mut()?;
        // A file found corrupt during `f` is named by this moment.
        l.time_is(now);
        let r = f(l.as_mut());
        self.recovered();
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                if e.is_newer_schema() {
                    // A newer baton migrated it meanwhile: this connection
                    // is not used again, nor kept for a later tick.
                    self.ledger_newer = true;
                    self.ledger = None;
                }
                if !self.ledger_failed {
                    self.ledger_failed = true;
                    self.warn(&format!("failed to write the ledger: {e}"));
                }
                None
            }
        }
    }

    /// Has `f` told of every run of this process once its start is
    /// recorded, before its first step (a backfill's progress). `f` must
    /// not block: the run waits for it.
    pub fn on_start(&mut self, f: OnStart) {
        self.on_start = Some(f);
    }

    /// The run `start` has begun: in the envelope (`note`), and told to
    /// [`Surfaces::on_start`]'s function.
    pub(crate) fn started(&mut self, start: &RunStart, note: &str) {
        self.note(note);
        if let Some(f) = self.on_start.as_mut() {
            f(start);
        }
    }

    /// A line in the envelope log.
    pub fn note(&mut self, line: &str) {
        let now = self.now();
        if let Err(e) = self.logs.envelope(now, line)
            && !self.log_failed
        {
            self.log_failed = true;
            crate::say::warn(format_args!("the envelope log is not written: {e}"));
        }
        self.report_set_aside();
    }

    /// Raises a `log-set-aside` alert for each special file the logs moved
    /// aside (in this process, by any write, a step's output included).
    /// Raised as from inside a step: its ledger row waits for the next use
    /// of the ledger, so a write in a step's supervision never blocks on it.
    fn report_set_aside(&mut self) {
        if self.reporting_set_aside {
            return;
        }
        self.reporting_set_aside = true;
        // Each alert writes the logs again, which may find another planted
        // file; a bound keeps a process planting them from holding us here.
        for _ in 0..8 {
            let moved = self.logs.take_set_aside();
            if moved.is_empty() {
                break;
            }
            for m in moved {
                let mut alert = Alert::scheduler(
                    AlertKind::LogSetAside,
                    self.now().to_string(),
                    m.to_string(),
                );
                if let Some(job) = crate::state::logs::job_of_log(&m.path) {
                    alert.job = job;
                }
                self.alert_in_step(&alert);
            }
        }
        self.reporting_set_aside = false;
    }

    /// A problem of baton's own: on stderr and in the envelope.
    pub fn warn(&mut self, line: &str) {
        self.warn_of("", line);
    }

    /// A problem of baton's own with `job`: as [`Surfaces::warn`], the
    /// instants it names on the job's wall clock on stderr.
    pub fn warn_of(&mut self, job: &str, line: &str) {
        self.say(job, line);
        self.note(&format!("WARNING {line}"));
    }

    /// `line` on stderr, for people: the instants it names (in RFC 3339, as
    /// the envelope and the ledger keep them) on `job`'s wall clock, or the
    /// scheduler's for no job ([`crate::times::human_in`]).
    fn say(&self, job: &str, line: &str) {
        let tz = self.zones.get(job).unwrap_or(&self.zone);
        crate::say::warn(format_args!("{}", crate::times::human_in(line, tz)));
    }

    /// Raises an alert on every surface.
    pub fn alert(&mut self, alert: &Alert) {
        let row = self.alert_unrecorded(alert);
        let _ = self.ledger(|l| l.record_alert(&row));
    }

    /// Raises an alert from inside a running step's supervision (the
    /// runner's reports, which must not block): everywhere at once but the
    /// ledger, which may be a remote store; its row is written before the
    /// next use of the ledger.
    pub fn alert_in_step(&mut self, alert: &Alert) {
        let row = self.alert_unrecorded(alert);
        match &self.apart {
            Some(config) => {
                let config = Arc::clone(config);
                let now = self.now();
                let kept = row.clone();
                let write = std::thread::Builder::new()
                    .name("baton-alert".into())
                    .spawn(move || {
                        let written = crate::store::records(&config, now)
                            .and_then(|mut l| l.record_alert(&row));
                        written.err().map(|_| row)
                    });
                match write {
                    Ok(handle) => self.writing.push(handle),
                    // No thread: the row waits for the ledger's next use.
                    Err(_) => self.deferred.push(kept),
                }
            }
            None => self.deferred.push(row),
        }
    }

    /// Has every alert raised while a step runs written to the ledger at
    /// once, on a thread and a connection of its own, rather than at the
    /// ledger's next use after the step: an `overrunning` alert is then in
    /// the ledger (and so in `status`, the API and the page) while the run
    /// it reports goes on. The step's supervision never waits for it; a
    /// write that fails leaves its row to the ledger's next use.
    pub(crate) fn write_step_alerts_apart(&mut self, config: &Config) {
        if self.apart.is_none() {
            self.apart = Some(Arc::new(config.clone()));
        }
    }

    /// Writes the alerts raised during a step that were deferred to the
    /// ledger's next use. One the ledger did not take (nor its write apart)
    /// is tried again only at the process's end ([`Surfaces::finish`]), or
    /// kept with its run's end in the end slot: never before each later
    /// call, which would double every call's wait while a lease renews
    /// between calls.
    fn flush_deferred(&mut self) {
        self.collect_writes(false);
        let rows = std::mem::take(&mut self.deferred);
        self.write_alerts(rows);
    }

    /// At the process's end: every write apart waited for, and every alert
    /// not written yet tried once more.
    fn flush_all_alerts(&mut self) {
        self.collect_writes(true);
        let mut rows = std::mem::take(&mut self.unwritten);
        rows.append(&mut self.deferred);
        self.write_alerts(rows);
    }

    /// Writes `rows` in order; those after a failure are kept as unwritten.
    fn write_alerts(&mut self, rows: Vec<baton_store::ledger::NewAlert>) {
        if rows.is_empty() {
            return;
        }
        let mut rows = rows.into_iter();
        let Some(l) = self.ledger.as_mut() else {
            self.keep_unwritten(rows);
            return;
        };
        while let Some(row) = rows.next() {
            if let Err(e) = l.record_alert(&row) {
                self.keep_unwritten(std::iter::once(row).chain(rows));
                if !self.ledger_failed {
                    self.ledger_failed = true;
                    self.warn(&format!("failed to write the ledger: {e}"));
                }
                break;
            }
        }
    }

    /// Gathers the writes apart that ended (every one when `all`, waiting
    /// for them): the rows of those that failed are kept as unwritten.
    fn collect_writes(&mut self, all: bool) {
        let (done, going): (Vec<_>, Vec<_>) = std::mem::take(&mut self.writing)
            .into_iter()
            .partition(|h| all || h.is_finished());
        self.writing = going;
        let failed: Vec<_> = done
            .into_iter()
            // A write that panicked loses its row with the thread.
            .filter_map(|h| h.join().ok().flatten())
            .collect();
        self.keep_unwritten(failed.into_iter());
    }

    /// Keeps `rows`, alerts the ledger did not take (at most
    /// [`UNWRITTEN_MAX`], the newest).
    fn keep_unwritten(&mut self, rows: impl Iterator<Item = baton_store::ledger::NewAlert>) {
        self.unwritten.extend(rows);
        let over = self.unwritten.len().saturating_sub(UNWRITTEN_MAX);
        self.unwritten.drain(..over);
    }

    /// The alerts of run `run_id` the ledger has not taken (deferred, or
    /// their writes failed), taken out to be kept with the run's end in its
    /// slot ([`crate::state::end_slot::EndSlot::keep`]) when the ledger
    /// takes that end neither. A write still under way is left to land.
    pub(crate) fn take_unwritten_alerts(
        &mut self,
        run_id: &str,
    ) -> Vec<baton_store::ledger::NewAlert> {
        self.collect_writes(false);
        let of_run = |a: &baton_store::ledger::NewAlert| a.run_id.as_deref() == Some(run_id);
        let mut taken: Vec<_> = self.unwritten.extract_if(.., |a| of_run(a)).collect();
        taken.extend(self.deferred.extract_if(.., |a| of_run(a)));
        taken
    }

    /// The alert on every surface but the ledger; its ledger row.
    fn alert_unrecorded(&mut self, alert: &Alert) -> baton_store::ledger::NewAlert {
        let json = serde_json::to_string(alert).unwrap_or_else(|e| {
            format!(
                "{{\"kind\":\"{}\",\"message\":\"unencodable: {e}\"}}",
                alert.kind.as_str()
            )
        });
        self.say(&alert.job, &alert.message);
        self.note(&format!("ALERT {} {}", alert.kind.as_str(), alert.message));
        if let Err(e) = self.logs.alert(&json) {
            crate::say::warn(format_args!("the alert is not in alerts.log: {e}"));
        }
        self.report_set_aside();
        let row = baton_store::ledger::NewAlert {
            time: self.now(),
            job: (!alert.job.is_empty()).then(|| alert.job.clone()),
            kind: alert.kind,
            run_id: alert.run_id.clone(),
            occurrence: alert
                .occurrence
                .as_deref()
                .and_then(|o| o.parse::<Timestamp>().ok())
                .map(|t| t.as_second()),
            message: alert.message.clone(),
            json: json.clone(),
        };
        if let Some(cmd) = &self.alert_command {
            let mut bytes = json.into_bytes();
            bytes.push(b'\n');
            self.pending.start(cmd, bytes);
        }
        let webhook = match self.job_webhooks.get(&alert.job) {
            Some(of_job) => of_job.as_ref(),
            None => self.webhook.as_ref(),
        };
        if let Some(w) = webhook {
            let delivery = Delivery::of(w.clone(), alert);
            match self.held.as_mut() {
                Some(held) => held.push(delivery),
                None => self.pending.post(delivery, Arc::clone(&self.clock)),
            }
        }
        row
    }

    /// Reports a ledger that was found corrupt and moved aside.
    fn recovered(&mut self) {
        let moved = match self.ledger.as_mut() {
            Some(l) => l.take_recovered(),
            None => return,
        };
        self.report_recovered(moved);
    }

    /// Counts `moved`, ledger files left for fresh ones, and alerts those
    /// found corrupt and moved aside by this process, or removed or
    /// replaced under it (`ledger-corrupt` either way: the records are no
    /// longer what they were).
    fn report_recovered(&mut self, moved: Vec<baton_store::ledger::Recovered>) {
        use baton_store::ledger::Reset;
        for r in moved {
            self.ledger_resets += 1;
            let said = match r.how {
                Reset::Followed => continue,
                Reset::Corrupt => format!(
                    "the ledger was corrupt ({}): it was moved aside to {} and a fresh one \
                     started; the lease's occurrence claims keep past occurrences from running \
                     again",
                    r.reason,
                    r.moved_to.display()
                ),
                Reset::Lost => format!(
                    "the ledger was lost: {}; the runs, decisions and counts it held are not in \
                     the file now at its path (runs in flight record their start and attempts \
                     again there); the lease's occurrence claims keep past occurrences from \
                     running again",
                    r.reason
                ),
            };
            let alert = Alert::scheduler(AlertKind::LedgerCorrupt, self.now().to_string(), said);
            self.alert(&alert);
        }
    }

    /// How many times this process's ledger has been left for a fresh file
    /// ([`baton_store::ledger::Recovered`]): a run whose start was recorded
    /// before the count moved records it again with its end.
    pub(crate) fn ledger_resets(&self) -> u64 {
        self.ledger_resets
    }

    /// The trace of a run that starts at `started`, when runs are traced:
    /// the first run of this process joins the trace context it was
    /// started with, every later one (a queue drained after it, a
    /// backfill's next occurrence) starts a trace of its own. A random
    /// source that cannot be read is said, and the run goes untraced.
    pub(crate) fn trace_run(&mut self, job: &str, started: Timestamp) -> Option<RunTrace> {
        self.otlp.as_ref()?;
        match RunTrace::start(self.trace_parent.take(), started) {
            Ok(t) => Some(t),
            Err(e) => {
                self.warn_of(
                    job,
                    &format!("{job}: failed to read random bytes for a trace: {e}; not traced"),
                );
                None
            }
        }
    }

    /// Sends a run's `spans`, run on `host`, on a thread of their own;
    /// [`Surfaces::finish`] waits for them.
    pub(crate) fn trace_ended(&mut self, host: &str, spans: Vec<Span>) {
        let Some(endpoint) = self.otlp.clone() else {
            return;
        };
        let export = Export {
            endpoint,
            host: host.to_owned(),
            spans,
        };
        self.pending.export(export, Arc::clone(&self.clock));
    }

    /// Waits for the alert commands, the webhook deliveries and the trace
    /// exports; reports their failures.
    pub fn finish(&mut self) {
        self.flush_all_alerts();
        for problem in self.pending.finish() {
            self.warn(&problem);
        }
    }
}

/// A moment on the wall clock and on the boot clock together
/// ([`Surfaces::mark`]).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    /// The wall clock's reading.
    pub wall: Timestamp,
    /// The boot clock's.
    pub boot: std::time::Duration,
}
