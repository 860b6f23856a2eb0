//! The command line, first stage: what clap parses. Nothing here is trusted
//! yet; [`crate::exec::config`] and the lock commands turn these arguments
//! into validated configurations before anything runs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Run a scheduled job at most once at a time.
#[derive(Debug, Parser)]
#[command(name = "baton", version, about, propagate_version = true)]
pub struct Cli {
    /// The state directory, an absolute path (default: $BATON_STATE_DIR,
    /// /var/lib/baton for root, else $XDG_STATE_HOME/baton or
    /// ~/.local/state/baton).
    #[arg(long, global = true, value_name = "DIR", value_parser = absolute_dir)]
    pub state_dir: Option<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: Cmd,
}

/// `--state-dir`: an absolute path, as `BATON_STATE_DIR` must be. A
/// relative one would name another directory, and so other locks, for each
/// directory a run is started from: two runs of one job at once.
fn absolute_dir(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    if p.is_absolute() {
        Ok(p)
    } else {
        Err(format!(
            "{s:?} is a relative path: a state directory must be absolute, or runs started \
             from different directories would use different locks"
        ))
    }
}

/// `baton exec` alone: the same arguments as [`Cli`]'s for that one
/// command, so that the path a crontab runs every minute builds a parser of
/// one command, not of every command. Whatever this parser cannot take as
/// it is (help, a usage error, a global option before `exec`) is parsed
/// again by [`Cli`], which says it as for every command.
#[derive(Debug, Parser)]
#[command(name = "baton", version, propagate_version = true)]
pub struct ExecOnly {
    /// As [`Cli::state_dir`].
    #[arg(long, global = true, value_name = "DIR", value_parser = absolute_dir)]
    pub state_dir: Option<PathBuf>,

    /// The one command.
    #[command(subcommand)]
    pub command: ExecOnlyCmd,
}

/// The one command of [`ExecOnly`].
#[derive(Debug, Subcommand)]
pub enum ExecOnlyCmd {
    /// As [`Cmd::Exec`].
    Exec(ExecArgs),
}

impl ExecOnly {
    /// `args` as [`Cli`] would parse them, when they are `baton exec …`
    /// that this parser takes whole; `None` for anything else.
    pub fn parse(args: &[std::ffi::OsString]) -> Option<Cli> {
        if args.get(1).is_none_or(|a| a != "exec") {
            return None;
        }
        let ExecOnly { state_dir, command } = ExecOnly::try_parse_from(args).ok()?;
        let ExecOnlyCmd::Exec(exec) = command;
        Some(Cli {
            state_dir,
            command: Cmd::Exec(exec),
        })
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // Parsed once.
pub enum Cmd {
    /// Run COMMAND while holding a lease; skip it when the lock is not free.
    #[command(after_long_help = EXEC_HELP)]
    Exec(ExecArgs),
    /// Inspect and break locks.
    #[command(subcommand, after_long_help = LOCK_HELP)]
    Lock(LockCmd),
    /// Run every job of baton.toml that is due now (what a crontab runs every
    /// minute); silent unless something fails.
    #[command(after_long_help = SCHED_HELP)]
    Tick(TickArgs),
    /// Run a job now, by hand, under its lock (a busy lock is an alert, exit 1).
    #[command(after_long_help = SCHED_HELP)]
    Run(RunArgs),
    /// Show each job's state, last runs, next run and holder; exit 1 when a
    /// job is HUNG, OVERDUE, FAILING, CRASHED or UNKNOWN.
    #[command(after_long_help = SCHED_HELP)]
    Status(StatusArgs),
    /// Show every effective setting and where it came from; exit 2 when the
    /// configuration is invalid.
    #[command(after_long_help = SCHED_HELP)]
    Config(ConfigArgs),
    /// Show a job's runs (or every job's), newest first, with each step's
    /// attempts.
    #[command(after_long_help = SCHED_HELP)]
    History(HistoryArgs),
    /// Pause a job: its occurrences are missed (reason "paused") until
    /// `baton resume`, --until TIME or --for DUR; a run in flight goes on.
    #[command(after_long_help = SCHED_HELP)]
    Pause(PauseArgs),
    /// End a job's pause.
    #[command(after_long_help = SCHED_HELP)]
    Resume(ResumeArgs),
    /// Run a job's past occurrences in a range, oldest first, one at a time,
    /// under its lock; those that already ran are not run again.
    #[command(after_long_help = SCHED_HELP)]
    Backfill(BackfillArgs),
    /// Read or settle an incremental job's watermark (settle only from the
    /// run that holds the job's lease).
    #[command(subcommand, after_long_help = SCHED_HELP)]
    Watermark(WatermarkCmd),
    /// Show a schedule's next occurrences, in its zone and in UTC, and what
    /// daylight saving does to them.
    #[command(after_long_help = CALENDAR_HELP)]
    Calendar(CalendarArgs),
    /// Serve the schedules: an in-process clock, an HTTP tick and API, a
    /// status page and Prometheus metrics, until SIGTERM.
    #[command(after_long_help = DAEMON_HELP)]
    Daemon(DaemonArgs),
    /// Create, migrate and check the PostgreSQL store's schema ([store] url),
    /// where schedulers on several hosts share leases, claims and the ledger.
    // The text above is the command's help, shown as written: `[store]` is
    // the configuration's table, not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[command(subcommand, after_long_help = STORE_HELP)]
    Store(StoreCmd),
    /// One run for the daemon (internal): the configuration on stdin, what
    /// the lock decided as the first line of stdout.
    #[command(name = "__run", hide = true)]
    Worker(WorkerArgs),
    /// Print what starts baton on a host: a crontab, systemd units, GitHub
    /// workflows, or the environment variables baton reads.
    #[command(after_long_help = RENDER_HELP)]
    Render(RenderArgs),
    /// Check this host and say what is wrong and how to fix it; exit 1 when
    /// a check fails.
    #[command(after_long_help = DOCTOR_HELP)]
    Doctor(DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell):
    /// commands, options and the configuration's job names. Exit 2 when it
    /// cannot be written whole (a full disk).
    Completions(CompletionsArgs),
    /// Print a manual page (roff), for `man -l -`: baton(1), or COMMAND's
    /// (`baton man exec` is baton-exec(1)); or write every page into a
    /// directory with --dir. Exit 2 when a page cannot be printed whole (a
    /// full disk); 125 when --dir cannot be written, or is another user's.
    Man(ManArgs),
    /// Print the status page (HTML), the one the daemon serves at `GET /`.
    /// Hidden: it is for tests and for looking at the page without a daemon.
    #[command(name = "__page", hide = true)]
    Page(PageArgs),
    /// Print the metrics `GET /metrics` will serve (Prometheus text 0.0.4, or
    /// OpenMetrics with --openmetrics). Hidden: it exists so that tests read
    /// them before the daemon serves them.
    #[command(name = "__metrics", hide = true)]
    Metrics(MetricsArgs),
    /// Send an HTTP step's request (from $BATON_HTTP_REQUEST); what the
    /// scheduler runs for a step with `http = { … }`, never typed by hand.
    #[command(name = "__http", hide = true)]
    Http,
}

/// `baton daemon`.
#[derive(Debug, Args)]
pub struct DaemonArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// Listen on ADDR (IP:PORT, or HOST:PORT: every address the name
    /// resolves to) instead of `[daemon] listen` (default 127.0.0.1:8677).
    /// Any address but loopback needs `token_file`; without one, the TCP API
    /// is read-only (changes go over the socket).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<baton_sched::config::Listen>,
    /// How the daemon writes its log on stderr: `text`, one plain line per
    /// event, or `json`, one JSON object per line (timestamp, level,
    /// message, fields, target). The runs it starts write theirs the same
    /// way.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t)]
    pub log_format: crate::log::LogFormat,
}

/// `baton doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// One JSON object on stdout: `healthy`, and `checks`, each with
    /// `check`, `status` (ok, warn, fail), `message` and `fix`.
    #[arg(long)]
    pub json: bool,
}

/// `baton store`.
#[derive(Debug, Subcommand)]
pub enum StoreCmd {
    /// Create the schema or bring it to this build's version; print the
    /// versions applied, or that it is up to date. Safe when several hosts
    /// migrate at once.
    Migrate(StoreArgs),
    /// Print the schema's version and whether it is this build's; exit 1
    /// unless it is.
    Status(StoreStatusArgs),
}

/// `baton store status`.
#[derive(Debug, Args)]
pub struct StoreStatusArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// One JSON object on stdout: store, schema_version (0: no schema),
    /// build_version, current, and verdict (current, missing, behind,
    /// newer). Nothing on stdout when the store cannot be read.
    #[arg(long)]
    pub json: bool,
}

/// `baton store migrate` and `baton store status`.
#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(flatten)]
    pub file: ConfigFile,
}

/// `baton __run`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The job.
    #[arg(long)]
    pub job: String,
    /// A scheduled occurrence, in seconds since 1970.
    #[arg(long, conflicts_with_all = ["queue", "manual"])]
    pub at: Option<i64>,
    /// Only the job's queue.
    #[arg(long, conflicts_with = "manual")]
    pub queue: bool,
    /// A run by hand.
    #[arg(long)]
    pub manual: bool,
    /// How to write stderr: the daemon's own `--log-format`.
    #[arg(long, value_enum, default_value_t)]
    pub log_format: crate::log::LogFormat,
}

/// What `baton render` renders.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RenderTarget {
    /// A crontab.
    Cron,
    /// systemd units.
    Systemd,
    /// GitHub Actions workflows, one per job.
    Github,
    /// The environment variables baton reads.
    Env,
}

/// `baton render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// What to render.
    #[arg(value_enum, value_name = "TARGET")]
    pub target: RenderTarget,
    #[command(flatten)]
    pub file: ConfigFile,
    /// One entry per job, at the job's own schedule, instead of one driver
    /// (`baton tick` every minute, or `baton daemon`).
    #[arg(long)]
    pub per_job: bool,
    /// The baton binary the artefacts run, an absolute path (default: this
    /// binary; required for github, whose runner is another machine).
    #[arg(long, value_name = "PATH")]
    pub bin: Option<PathBuf>,
    /// Write one file per artefact into DIR (created when missing) instead
    /// of printing them.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The configuration file's path on the host, absolute, when it is not
    /// where --config reads it: the artefacts name it, and paths beside it
    /// (a relative state_dir) are rendered beside it. For github, its path
    /// inside the repository, relative to the checkout.
    #[arg(long, value_name = "PATH")]
    pub config_path_as: Option<PathBuf>,
    /// The host's zone, an IANA name, for `CRON_TZ=` (default: this
    /// system's).
    #[arg(long, value_name = "ZONE")]
    pub host_tz: Option<String>,
}

/// `--config`, shared by the scheduler's commands.
#[derive(Debug, Args)]
pub struct ConfigFile {
    /// The configuration file (default: $BATON_CONFIG, else ./baton.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// `baton tick`.
#[derive(Debug, Args)]
pub struct TickArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// Only these jobs (default: every job).
    #[arg(value_name = "JOB", add = crate::job_completer::jobs())]
    pub jobs: Vec<String>,
    /// One JSON object on stdout: enabled, started (job, occurrence, queue,
    /// exit, signal, run), missed (job, reason, first, last, count,
    /// at_least), alerted, exit.
    #[arg(long)]
    pub json: bool,
}

/// `baton run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// The job.
    #[arg(value_name = "JOB", add = crate::job_completer::jobs())]
    pub job: String,
    /// One JSON object on stdout (job, outcome, run, exit) instead of the
    /// steps' output, which stays in the job's log.
    #[arg(long)]
    pub json: bool,
}

/// `baton status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// Only this job.
    #[arg(value_name = "JOB", add = crate::job_completer::jobs())]
    pub job: Option<String>,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `baton __page`.
#[derive(Debug, Args)]
pub struct PageArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// Seconds between the page's reloads (0: never).
    #[arg(long, value_name = "SECS", default_value_t = baton_sched::views::page::DEFAULT_REFRESH_SECS)]
    pub refresh: u32,
    /// Print this job's page (`GET /jobs/JOB`) instead.
    #[arg(long, value_name = "JOB", add = crate::job_completer::jobs())]
    pub job: Option<String>,
}

/// `baton __metrics`.
#[derive(Debug, Args)]
pub struct MetricsArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// Print OpenMetrics 1.0 (what `Accept: application/openmetrics-text`
    /// gets) instead of Prometheus's text format 0.0.4.
    #[arg(long)]
    pub openmetrics: bool,
}

/// `baton config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `baton history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// The job (default: every job, their runs merged, newest first).
    #[arg(value_name = "JOB", add = crate::job_completer::jobs())]
    pub job: Option<String>,
    /// How many runs (without JOB: in all), 1 or more.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 20,
        value_parser = clap::value_parser!(u32).range(1..),
    )]
    pub limit: u32,
    /// One JSON array on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `baton pause`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("end").args(["for_", "until"])))]
pub struct PauseArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// The job.
    #[arg(value_name = "JOB", add = crate::job_completer::jobs())]
    pub job: String,
    /// End the pause after DUR (15m, 2h, 1d).
    #[arg(long = "for", value_name = "DUR")]
    pub for_: Option<String>,
    /// End the pause at TIME: RFC 3339, or a date and time in the job's zone.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Why, shown by `status`.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// One JSON object on stdout: job, pause (since, until, reason, by) and
    /// the pause it replaced (or null).
    #[arg(long)]
    pub json: bool,
}

/// `baton resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// The job.
    #[arg(value_name = "JOB", add = crate::job_completer::jobs())]
    pub job: String,
    /// One JSON object on stdout: job, resumed (false when it was not
    /// paused) and the pause that ended (or null).
    #[arg(long)]
    pub json: bool,
}

/// `baton backfill`.
#[derive(Debug, Args)]
pub struct BackfillArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// The job.
    #[arg(value_name = "JOB", add = crate::job_completer::jobs())]
    pub job: String,
    /// The first instant of the range: RFC 3339, or a date and time in the
    /// job's zone.
    #[arg(long, value_name = "TIME")]
    pub from: String,
    /// The last instant of the range (inclusive; at most now).
    #[arg(long, value_name = "TIME")]
    pub to: String,
    /// List what would run, and what ran already; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run: one JSON array on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also run the occurrences whose records cannot rule out that they
    /// ran: the ledger has no record of them (it was lost, moved aside or
    /// not writable) while the lock's claim says the job started up to or
    /// past them, or the ledger cannot be read. Only for occurrences you
    /// know did not run.
    #[arg(long)]
    pub force: bool,
}

/// `baton calendar`: an expression or a job, exactly one.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("schedule").required(true).args(["expr", "job"])))]
pub struct CalendarArgs {
    /// The schedule: a cron expression, quoted ("30 2 * * *"), a macro
    /// (@daily), or an interval (every:15m, every 15m, @every 15m). Several
    /// words are joined with spaces.
    #[arg(value_name = "EXPR", num_args = 1..)]
    pub expr: Vec<String>,
    /// A job of baton.toml instead of EXPR: its schedule, in its own zone.
    #[arg(long, value_name = "NAME", add = crate::job_completer::jobs())]
    pub job: Option<String>,
    /// The configuration file, with --job (default: $BATON_CONFIG, else
    /// ./baton.toml).
    #[arg(long, value_name = "FILE", conflicts_with = "expr")]
    pub config: Option<PathBuf>,
    /// The time zone, an IANA name such as Europe/Berlin (default: the
    /// system's). Not with --job, which uses the job's own zone.
    #[arg(long, value_name = "ZONE", conflicts_with = "job")]
    pub tz: Option<String>,
    /// List the occurrences strictly after TIME, in RFC 3339
    /// (2026-03-08T00:00:00-05:00, or 2026-03-08T05:00:00Z; default: now).
    #[arg(long, value_name = "TIME")]
    pub from: Option<String>,
    /// How many occurrences, from 1 to 1000.
    #[arg(
        long,
        value_name = "N",
        default_value_t = baton_sched::views::calendar::DEFAULT_COUNT,
        value_parser = clap::value_parser!(u32).range(1..=i64::from(baton_sched::views::calendar::MAX_COUNT)),
    )]
    pub count: u32,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `baton watermark`.
#[derive(Debug, Subcommand)]
pub enum WatermarkCmd {
    /// Print the job's watermark (nothing, or --default, before the first
    /// settle).
    Get(WatermarkGetArgs),
    /// Store a new watermark; accepted only from the run that holds the
    /// job's lease (its BATON_TOKEN), else refused with exit 1.
    Settle(WatermarkSettleArgs),
}

/// `baton watermark get`.
#[derive(Debug, Args)]
pub struct WatermarkGetArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// The job.
    #[arg(value_name = "JOB", add = crate::job_completer::jobs())]
    pub job: String,
    /// What to print when no watermark was settled yet.
    #[arg(long, value_name = "VALUE")]
    pub default: Option<String>,
    /// One JSON object on stdout (value, settled, run_id, fence).
    #[arg(long)]
    pub json: bool,
}

/// `baton watermark settle`.
#[derive(Debug, Args)]
pub struct WatermarkSettleArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// The job.
    #[arg(value_name = "JOB", add = crate::job_completer::jobs())]
    pub job: String,
    /// The new value (up to 4096 bytes).
    #[arg(value_name = "VALUE")]
    pub value: String,
}

/// `baton man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (`exec`, `lock show`); none for
    /// baton(1).
    #[arg(value_name = "COMMAND", conflicts_with = "dir")]
    pub command: Vec<String>,
    /// Write every page into DIR (created when missing; refused when
    /// another user owns or can write it) as baton.1 and baton-COMMAND.1,
    /// and print each path written: `baton man --dir
    /// /usr/local/share/man/man1`.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `baton completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `baton exec`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["name", "lock"])))]
pub struct ExecArgs {
    /// The lock's name: STATE_DIR/locks/NAME.lock.
    #[arg(long, short = 'n', value_name = "NAME")]
    pub name: Option<String>,
    /// The lock file's path, instead of a name (made absolute once).
    #[arg(long, value_name = "PATH")]
    pub lock: Option<PathBuf>,
    /// Run CMD through `$SHELL -c`, as `flock -c` does (`/bin/sh -c` when
    /// SHELL is unset or empty; cron sets SHELL=/bin/sh unless the crontab
    /// says otherwise), instead of a COMMAND after `--`.
    #[arg(
        short = 'c',
        long = "command",
        value_name = "CMD",
        conflicts_with = "command"
    )]
    pub shell: Option<String>,
    /// Wait up to DUR for the lock before giving up (polling with backoff).
    #[arg(long, value_name = "DUR")]
    pub wait: Option<String>,
    /// How long one renewal keeps the lease; baton renews every third of it.
    #[arg(long, value_name = "DUR", default_value = "30s")]
    pub ttl: String,
    /// Stop the command's whole process tree at DUR and exit 124; 0 means no
    /// limit, as in timeout(1).
    #[arg(long, value_name = "DUR")]
    pub timeout: Option<String>,
    /// A soft budget: past it, alert once ("overrunning") and change
    /// nothing; 0 means none.
    #[arg(long, value_name = "DUR")]
    pub max_runtime: Option<String>,
    /// Between the first signal and SIGKILL when baton stops the command.
    #[arg(long, value_name = "DUR", default_value = "10s")]
    pub kill_grace: String,
    /// The first signal of a stop (timeout, lost lease, leftovers), by name
    /// or number, as `timeout -s`.
    #[arg(long, short = 's', value_name = "SIG", default_value = "TERM")]
    pub signal: String,
    /// How long past its TTL a holder that cannot be checked from here (another
    /// host or pid namespace) is still respected.
    #[arg(long, value_name = "DUR", default_value = "30s")]
    pub takeover_grace: String,
    /// When a Scheduler Lock v2 lease is stale.
    #[arg(long, value_name = "DUR", default_value = "2h")]
    pub v2_stale_after: String,
    /// The exit code when the lock is not free.
    #[arg(long, value_name = "N", default_value_t = crate::exit::BUSY_DEFAULT)]
    pub busy_exit: u8,
    /// Run CMD (through sh -c) with a JSON alert on its stdin for each event
    /// of the kinds chosen by --alert-on.
    #[arg(long, value_name = "CMD")]
    pub alert_command: Option<String>,
    /// The kinds that alert (stderr line and --alert-command), comma
    /// separated: busy, hung, orphaned, version-conflict, lease-lost,
    /// overrunning, timeout, failed, uncontained; or all, or none. Default:
    /// all but busy.
    #[arg(long, value_name = "KIND,...")]
    pub alert_on: Option<String>,
    /// No stderr lines for alerts or notes (errors are still printed).
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also print the events that do not alert (a skip because a healthy
    /// holder runs).
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// A cgroup v2 directory delegated to baton: the command runs in a cgroup
    /// of its own below it, and is stopped with cgroup.freeze and
    /// cgroup.kill. One that cannot be used (not a cgroup, another user's,
    /// writable by others) is said, and the command runs as without it.
    #[arg(long, value_name = "DIR")]
    pub cgroup: Option<PathBuf>,
    /// A run id to record and export (default: random).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Run the command without a PID namespace of its own. By default its
    /// whole tree dies with baton, even when baton is killed with kill -9;
    /// without one a killed baton leaves its job running (the lease reads
    /// orphaned while the job's group has members; lock break --kill stops
    /// them), and processes it detached from its group go unseen. Inside
    /// the namespace the command's own pid ($$) is the namespace's; use this
    /// option when the command must publish its pid to the host.
    #[arg(long)]
    pub no_contain: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

/// `baton lock …`.
#[derive(Debug, Subcommand)]
pub enum LockCmd {
    /// Show locks: state, holder, the verdict now, fence, renewal, occurrence.
    Show(ShowArgs),
    /// Break a lease that is provably dead (or, with --kill or --force, more).
    Break(BreakArgs),
}

/// `baton lock show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Lock names.
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Use the state directory of this baton.toml (a scheduler's locks).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Lock files, by path.
    #[arg(long, value_name = "PATH")]
    pub lock: Vec<PathBuf>,
    /// Every lock in the state directory.
    #[arg(long)]
    pub all: bool,
    /// One JSON array on stdout.
    #[arg(long)]
    pub json: bool,
    /// When a Scheduler Lock v2 lease is stale (as `exec --v2-stale-after`).
    #[arg(long, value_name = "DUR", default_value = "2h")]
    pub v2_stale_after: String,
}

/// `baton lock break`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["name", "lock"])))]
pub struct BreakArgs {
    /// The lock's name.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// Use the state directory of this baton.toml (a scheduler's locks).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The lock file, by path.
    #[arg(long, value_name = "PATH")]
    pub lock: Option<PathBuf>,
    /// First stop a same-host holder and its job (SIGTERM, then SIGKILL after
    /// --grace), then break. Only processes verified to be the record's are
    /// signalled.
    #[arg(long, conflicts_with = "force")]
    pub kill: bool,
    /// Break whatever lease is there, a foreign version or a damaged record
    /// included (never a file that is no lock record).
    #[arg(long)]
    pub force: bool,
    /// Between SIGTERM and SIGKILL, with --kill.
    #[arg(long, value_name = "DUR", default_value = "10s")]
    pub grace: String,
    /// When a Scheduler Lock v2 lease is stale (as `exec --v2-stale-after`).
    #[arg(long, value_name = "DUR", default_value = "2h")]
    pub v2_stale_after: String,
}

const EXEC_HELP: &str = "\
Durations (DUR): a number of seconds (30, 0.5), or numbers with units ms, s,
m, h, d, combined: 250ms, 30s, 15m, 2h, 1d, 1h30m.

Exit codes:
  N       the command's own exit status
  128+N   the command died of signal N
  75      the lock was not free (busy, hung, orphaned, or a version conflict);
          the command did not run (--busy-exit changes it)
  76      the lease was lost while the command ran; the command's tree was
          stopped before the lease could be taken by anyone else (or the
          command had ended on its own and its release found the lease lost:
          the lease-lost alert says how it ended)
  124     the command ran past --timeout and its tree was stopped
  125     baton failed: bad option, unusable or untrusted state directory,
          a lock path that is no lock file, an I/O error
  126     the command cannot be executed (or its #! interpreter is missing)
  127     the command was not found

The command runs in a process group of its own, with BATON_LOCK,
BATON_TOKEN, BATON_FENCE and BATON_RUN_ID in its environment. BATON_FENCE
only grows: each run's fence is larger than every earlier one's for this
lock (it is not a count). The command starts only once its group is written
into the lease, so a crash of baton can never leave it running unrecorded.
When standard input is a terminal, the command gets the terminal's
foreground while it runs, and job control works as for any command: Ctrl-Z
stops baton with it (the shell gets its prompt back), `fg` continues both;
SIGTSTP sent to baton stops its command too, where a shell controls baton's
process group. A stop longer than the TTL renews the lease before the
command runs again; one past the TTL, the renewal wait and the kill grace
ends the run as a lost lease (exit 76).

Orphans: when the command exits, whatever it left running, in its process
group or detached from it (setsid, a double fork), is stopped too: the first
signal (--signal), then after --kill-grace every process is frozen with
SIGSTOP (rescanning until nothing new appears, so nothing can fork away) and
killed with SIGKILL, until none is left. baton never releases the lease, and
never exits, while any of them still runs.

Self-fencing: baton renews every ttl/3. If a renewal finds the lease gone or
replaced, or baton could not renew for a whole TTL, it stops the command's
tree and exits 76. baton refuses options that break kill-grace + min(ttl/10,
1s) + 1.1s <= takeover-grace, which is what makes a holder on another host
stop its job before anyone may take its lease over.

Signals: SIGINT, SIGTERM and SIGHUP sent to baton go to the command's group;
baton waits for the tree, then releases. SIGUSR1, SIGUSR2 and SIGALRM go to
the command's group and stop nothing.

Quiet skips: a skip because a healthy holder runs prints nothing and raises
no alert, as flock -n; --verbose prints it, --alert-on busy alerts it. A skip
because the holder is hung, orphaned, of another version, or past its own
--max-runtime alerts.

Alerts: each is one line on stderr (unless --quiet) and, with
--alert-command, one JSON object on the command's stdin, ending in a newline:
  kind     busy, hung, orphaned, version-conflict, lease-lost, overrunning,
           timeout, failed
  lock     the lock file; name: the lock's name, or null
  holder   for skips: {pid, host, run, fence, acquired, renewed}, or null
  run_id   this run's id (null for a skip); fence: this run's fence, or null
  time     RFC 3339; message: the stderr line; status: the exit status, for
           failed
The alert command runs through sh -c in a process group of its own, with its
stdout on baton's stderr. After 10 s its whole group is stopped (SIGTERM,
then SIGKILL a second later). Its failure never changes baton's exit code.";

const LOCK_HELP: &str = "\
Exit codes of `baton lock show` and `baton lock break`:
  0    done: every lock shown; broken, or nothing to break (a free lock)
  1    break refused: the lease is not provably dead (live, hung, orphaned,
       being written), or --kill could not verify what it would signal
  2    bad arguments
  3    no such lock: no lock file at that name or path
  4    the record cannot be judged: a damaged record or another version's
       lease (show describes it; break needs --force)
  125  not a lock file (a directory, a symlink, a file whose content is no
       lock record), an untrusted state directory, or an I/O error; the same
       code `baton exec` gives for it";

const SCHED_HELP: &str = "\
Exit codes of the scheduler's commands (tick, run, status, config, history,
pause, resume, backfill, watermark):
  0  every step and check succeeded, nothing was due, or the kill switch is
     off (status: no job is hung, overdue, failing, crashed or unknown)
  1  a step or check failed, occurrences were missed, the lock was not free,
     or its holder was hung, orphaned or of another version (an alert was
     raised); status: a job is HUNG, OVERDUE, FAILING, CRASHED or UNKNOWN
     (the ledger or the state directory could not be read); watermark
     settle: refused (not the run that holds the job's lease)
  2  the configuration or the arguments could not be honoured, or the ledger
     would not record a run's start or could not be read by a tick (nothing
     ran)

Configuration: --config FILE, else $BATON_CONFIG, else ./baton.toml.
BATON_<KEY> overrides each [scheduler] key; BATON_ENABLED=false is the kill
switch, checked before anything is touched.";

const CALENDAR_HELP: &str = "\
Each occurrence is shown on the zone's wall clock (with its abbreviation
and offset) and in UTC; it is computed exactly as `baton tick` and
`baton status` compute it. Daylight saving, as cron users expect it:
  - a fixed time that does not exist on a spring-forward day (30 2 * * * in
    New York on 2026-03-08) runs once, at the first instant after the gap
    (03:00 EDT);
  - a fixed time that occurs twice on a fall-back day (30 1 * * * on
    2026-11-01) runs once, at its first occurrence (01:30 EDT);
  - wildcard and step fields (*, */15) follow real elapsed time through
    both transitions, so no hour is doubled or lost: nothing runs in the
    wall-clock hour that is skipped, and the wall-clock hour shown twice
    runs twice, once in each real hour;
  - lists of fixed times are fixed times: each runs once, and those a gap
    swallows (0,30 2 * * * on 2026-03-08) run once together, at the jump;
  - nothing ever comes out of order or twice.
An interval (every:15m) counts elapsed time since 1970-01-01T00:00:00Z and
ignores zones. An occurrence daylight saving moved carries a note.

--json prints one object: expression, normalized, kind (fixed, wildcard,
every), zone, job (or null), from, exhausted (true when the schedule never
fires again, so fewer were listed), and occurrences: each with local (RFC
3339 with the zone's offset), utc, offset, abbreviation, dst (gap, skipped,
first-of-two, second-of-two, or null) and note (the note in words, or null).

Exit codes:
  0  the occurrences were shown (also when the schedule never fires again)
  2  a bad expression, zone, --from or --count, an unknown job, or a
     configuration that cannot be honoured";

const RENDER_HELP: &str = "\
By default one driver: `cron` is one crontab line running `baton tick` every
minute, `systemd` a `baton daemon` service (Type=notify). baton then decides
in each job's own zone what is due, catches up and deduplicates, so the
default form is right for every schedule and zone.

--per-job gives each enabled job an entry running `baton tick --config FILE
-- JOB` at its schedule: a crontab line (host-zone jobs first; others under
CRON_TZ=, which needs cronie), a systemd timer (OnCalendar= in the job's zone,
Persistent=true). `github` is always per job: a workflow per job, its
schedule converted to UTC cron, the configuration named inside the checkout
(--config-path-as relative to the repository's root, else found from the
enclosing git repository). A schedule a target cannot express faithfully
(daylight saving in UTC-only cron, an interval that does not divide a day, a
sub-minute schedule in cron, times a zone skips or repeats in cron or
OnCalendar=) refuses the job with the reason, and nothing is rendered.

The output is the same for the same input: no timestamps, jobs by name.
With --out, files of an earlier render of the same target that this render
did not write (a removed job's timer) are removed, each named on stderr;
other files are left alone.

Exit codes:
  0    rendered
  2    bad arguments or configuration, or a job the target cannot express
  125  an artefact could not be written under --out (a directory, or a link
       on the way to it, that another user owns or can write is refused),
       or standard output could not be written
";

const STORE_HELP: &str = "\
The store is PostgreSQL, for schedulers on several hosts: [store] url =
\"postgres://USER@HOST:PORT/DATABASE\" (or BATON_STORE_URL), in a schema of
its own named baton. What the URL leaves out comes from PGHOST, PGPORT,
PGUSER and PGDATABASE; the password from the URL, else [store]
password_file (BATON_STORE_PASSWORD_FILE), else PGPASSWORD, else the file
PGPASSFILE names (each host of the URL its own line, as libpq). The
password is never printed. TLS is libpq's: the URL's
sslmode, sslrootcert, sslcert and sslkey, or [store] keys of the same names
(never both); `store status` says whether the connection is encrypted and
whether the server was verified, and until when leases are held back after
a new primary (a failover, a restore).

With [store] url, every run takes its lease, claims its occurrence and
records itself in the store, on every host; nothing falls back to local
files. Run `baton store migrate` once before the first run (`baton daemon`
migrates at start); runs refuse a schema that is not this build's.

Connecting waits at most 5s, a whole call at most 6s; each statement at
most 5s.

Exit codes: 0 done (status: the schema is current); 1 the store could not
be reached or refused (status: the schema is not this build's version); 2
no [store] url, or an invalid configuration.
";

const DAEMON_HELP: &str = "\
The daemon ticks every job at its due instant (no polling), and on
`POST /v1/tick`; `baton tick` from cron may run beside it on the same state
directory: one occurrence still runs once. Every run is a process of its
own, supervised as `baton tick` supervises its runs.

HTTP (JSON, under /v1): GET /v1/jobs, GET /v1/jobs/JOB, GET
/v1/jobs/JOB/runs?limit=N, POST /v1/tick, POST /v1/jobs/JOB/run (409 when
busy), POST /v1/jobs/JOB/pause and /resume, POST /v1/reload (also SIGHUP),
PUT and DELETE /v1/jobs/JOB (drop-in files in jobs.d/), GET /healthz, GET /
(status page), GET /metrics (Prometheus), GET and POST /login, POST /logout
(a browser's session, with a token).

Security: a change (PUT, DELETE, any POST) runs commands as the daemon's
user, so it needs an authenticated caller: over the Unix socket ([daemon]
socket, default STATE_DIR/daemon.sock, mode 0600) the daemon's own user,
root or a member of [daemon] socket_group, as the kernel says
(SO_PEERCRED); over TCP, `Authorization: Bearer TOKEN` ([daemon]
token_file). Without a token the TCP API is read-only (403 read_only), even
on loopback, which every local user reaches. TCP listens on loopback by
default; any other address needs token_file, and then every endpoint but
/healthz and the login's needs the token. A browser logs in at /login with
the token and gets a session cookie (HttpOnly, SameSite=Strict) that opens
reads only: the page, /metrics and the API's GETs. Mutations need
`Content-Type: application/json` (not a DELETE without a body) and no
foreign Origin. Over the socket: `curl --unix-socket PATH
http://localhost/v1/...`. --listen and [daemon] listen take HOST:PORT too:
the name is resolved at start and every address it resolves to is served.

SIGTERM or SIGINT: stop ticking and accepting, let runs finish for up to
[daemon] shutdown_grace (default 60s), then stop them (whole tree) and exit.
With [store] url, the daemon first migrates the store's schema (as `baton
store migrate`) and refuses to start when it cannot.

Exit codes: 0 after a clean shutdown, 1 when [store]'s schema cannot be
migrated, 2 for a configuration that cannot be served (invalid, or a
non-loopback address without token_file), a store whose schema a newer
baton made, or a read-only store (a standby), 125 when the address cannot
be resolved or bound, or the socket cannot be bound (another daemon on it,
a link or a file in its place).
";

const DOCTOR_HELP: &str = "\
Checks, in order: config (every problem of baton.toml and jobs.d/, not only
the first), state-dir (owner, mode, and that nobody but this user or root
can change it), filesystem (a network filesystem, where flock is not
trusted, fails with the reason), locks (each job's lock readable and a
record this build judges), ledger (SQLite's integrity check, the schema
version), store (files; or PostgreSQL: store, store-tls, store-writable,
store-schema, store-clock: reachable, TLS as configured, writable,
migrated, the server's clock within 1s of this host's, failing past 5s),
time-sync (the kernel's NTP state, by adjtimex), zones (the zone database
and every configured zone), driver (a cron line or systemd unit running
`baton tick` or `baton daemon`), daemon (whether `baton daemon` would start
with the [daemon] settings: the token file, socket_group, the socket's
path, an address off loopback without a token; a warning for a token sent
to a TCP port any user may bind) and alert-command (run once with a test
alert: kind \"test\", BATON_ALERT_TEST=1; baton has no webhook setting, so
there is no webhook check). Each prints ok, WARN or FAIL, and a fix: line
for a problem.

The doctor changes nothing it checks: the ledger is opened read-only (SQLite
may create its empty -wal and -shm beside it), nothing is migrated, moved
or repaired, no state directory is created; the alert command is the one
thing it runs.

Exit codes:
  0  no check failed (warnings allowed)
  1  a check failed
  2  bad arguments, or the report could not be written to standard output
     (a full disk: said on stderr)";
