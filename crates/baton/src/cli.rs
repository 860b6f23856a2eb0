//! The command line, first stage: what clap parses. Nothing here is trusted
//! yet; [`crate::exec::config`] and the lock commands turn these arguments
//! into validated configurations before anything runs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Run a scheduled job at most once at a time.
#[derive(Debug, Parser)]
#[command(name = "baton", version, about, propagate_version = true)]
pub struct Cli {
    /// The state directory (default: $BATON_STATE_DIR, /var/lib/baton for
    /// root, else $XDG_STATE_HOME/baton or ~/.local/state/baton).
    #[arg(long, global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: Cmd,
}

/// The commands.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // Parsed once.
pub enum Cmd {
    /// Run COMMAND while holding a lease; skip it when the lock is not free.
    #[command(after_long_help = EXEC_HELP)]
    Exec(ExecArgs),
    /// Inspect and break locks.
    #[command(subcommand)]
    Lock(LockCmd),
}

/// `baton exec`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["name", "lock"])))]
pub struct ExecArgs {
    /// The lock's name: STATE_DIR/locks/NAME.lock.
    #[arg(long, short = 'n', value_name = "NAME")]
    pub name: Option<String>,
    /// The lock file's path, instead of a name.
    #[arg(long, value_name = "PATH")]
    pub lock: Option<PathBuf>,
    /// Wait up to DUR for the lock before giving up (polling with backoff).
    #[arg(long, value_name = "DUR")]
    pub wait: Option<String>,
    /// How long one renewal keeps the lease; baton renews every third of it.
    #[arg(long, value_name = "DUR", default_value = "30s")]
    pub ttl: String,
    /// Kill the command's process group at DUR and exit 124.
    #[arg(long, value_name = "DUR")]
    pub timeout: Option<String>,
    /// A soft budget: past it, alert once ("overrunning") and change nothing.
    #[arg(long, value_name = "DUR")]
    pub max_runtime: Option<String>,
    /// Between SIGTERM and SIGKILL when baton stops the command's group.
    #[arg(long, value_name = "DUR", default_value = "10s")]
    pub kill_grace: String,
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
    /// Run CMD (through sh -c) with a JSON alert on its stdin for every
    /// skipped, hung, orphaned, conflicting, lost, overrunning, timed-out or
    /// failed run.
    #[arg(long, value_name = "CMD")]
    pub alert_command: Option<String>,
    /// A run id to record and export (default: random).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// The command and its arguments.
    #[arg(required = true, last = true, value_name = "COMMAND")]
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
    /// The lock file, by path.
    #[arg(long, value_name = "PATH")]
    pub lock: Option<PathBuf>,
    /// First stop a same-host holder and its job (SIGTERM, then SIGKILL after
    /// --grace), then break.
    #[arg(long, conflicts_with = "force")]
    pub kill: bool,
    /// Break whatever is there, a foreign version included.
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
Exit codes:
  N       the command's own exit status
  128+N   the command died of signal N
  75      the lock was not free (busy, hung, orphaned, or a version conflict);
          the command did not run (--busy-exit changes it)
  76      the lease was lost while the command ran; the command's group was
          stopped before the lease could be taken by anyone else
  124     the command ran past --timeout and was stopped
  125     baton failed (bad option, unusable state directory, I/O error)
  126     the command cannot be executed
  127     the command was not found

The command runs in a process group of its own, with BATON_LOCK, BATON_TOKEN,
BATON_FENCE and BATON_RUN_ID in its environment. It starts only once that
group is written into the lease, so a crash of baton can never leave it
running unrecorded.

Orphans: when the command exits, whatever it left running in its process
group (a backgrounded child) is stopped too (SIGTERM, then SIGKILL after
--kill-grace) before the lease is released. If something in the group cannot
be stopped, the lease is not released: it stays \"orphaned\" and refuses every
later run until the group is empty. The lease is never free while the job may
still run.

Self-fencing: baton renews every ttl/3. If a renewal finds the lease gone or
replaced, or baton could not renew for a whole TTL, it stops the group
(SIGTERM, then SIGKILL after --kill-grace) and exits 76. baton refuses options
that break kill-grace + min(ttl/10, 1s) + 1.1s <= takeover-grace, which is
what makes a holder on another host stop its job before anyone may take its
lease over.

Signals: SIGINT, SIGTERM and SIGHUP sent to baton go to the command's group;
baton waits for the group, then releases.";
