//! `baton doctor`: a thin adapter from its arguments
//! ([`crate::cli::DoctorArgs`]) to `baton_sched::doctor`, whose report is
//! printed as text or JSON. The checks themselves live in the library.

use std::path::Path;

use baton_lease::SystemClock;
use baton_sched::config::{self, Overrides};
use baton_sched::doctor::{self, Host};

use crate::cli::DoctorArgs;
use crate::exit::Exit;

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
