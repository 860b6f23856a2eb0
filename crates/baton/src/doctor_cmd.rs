//! `baton doctor`: its arguments, and a thin adapter from them to
//! `baton_sched::doctor`, whose report is printed as text or JSON. The
//! checks themselves live in the library.

use std::path::Path;

use baton_lease::SystemClock;
use baton_sched::config::{self, Overrides};
use baton_sched::doctor::{self, Host};

use crate::cli::ConfigFile;
use crate::exit::Exit;

/// `baton doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub file: ConfigFile,
    /// One JSON object on stdout: `healthy`, and `checks`, each with
    /// `check`, `status` (ok, warn, fail), `message` and `fix`.
    #[arg(long)]
    pub json: bool,
}

/// What `baton doctor --help` adds.
pub const HELP: &str = "\
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
  2  bad arguments";

/// `baton doctor`.
pub fn run(state: Option<&Path>, a: &DoctorArgs) -> Exit {
    let path = config::locate(a.file.config.as_deref());
    let over = Overrides::from_env(state.map(Path::to_owned));
    let report = doctor::examine_with(&path, &over, &Host::from_env(), &SystemClock, &daemon);
    if a.json {
        match serde_json::to_string_pretty(&report) {
            Ok(j) => outln!("{j}"),
            Err(e) => {
                say!("baton doctor: failed to encode JSON: {e}");
                return Exit::Failure;
            }
        }
    } else {
        out!("{}", doctor::render(&report));
    }
    if report.healthy {
        Exit::Ok
    } else {
        Exit::Refused
    }
}

/// The `daemon` check: whether `baton daemon` would serve with the
/// configuration's `[daemon]` settings, as its start decides, and what
/// another local user could do with them.
fn daemon(c: &baton_sched::config::Config) -> Vec<doctor::Finding> {
    const CHECK: &str = "daemon";
    match baton_daemon::preflight(c) {
        Ok(p) => {
            let mut found = vec![doctor::Finding::ok(
                CHECK,
                format!("baton daemon would start: it {}", p.summary),
            )];
            found.extend(p.warnings.into_iter().map(|w| {
                doctor::Finding::warn(
                    CHECK,
                    w,
                    "listen on a port below 1024 (the unit then needs \
                     AmbientCapabilities=CAP_NET_BIND_SERVICE), or send changes over the \
                     daemon's socket only and keep the token off TCP",
                )
            }));
            found
        }
        Err(why) => vec![doctor::Finding::fail(
            CHECK,
            format!("baton daemon would refuse to start: {why}"),
            "correct [daemon] as the message says; `baton daemon` refuses the same",
        )],
    }
}
