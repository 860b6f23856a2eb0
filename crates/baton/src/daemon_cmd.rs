//! `baton daemon`: a thin adapter from its arguments to
//! `baton_daemon::serve`, after the store's schema is made ready
//! ([`crate::store_cmd::before_daemon`]), and from how serving ended to an
//! exit code.
//!
//! It never serves anything itself: the daemon, its clock and its API are
//! the library's.

use std::path::Path;

use baton_sched::config;

use crate::cli::DaemonArgs;
use crate::exit::Exit;

/// `baton daemon`.
pub fn run(state: Option<&Path>, a: &DaemonArgs) -> Exit {
    // The store's schema is migrated once, before serving; a reload does
    // not migrate again.
    let c = match crate::sched_cmd::load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if let Err(e) = crate::store_cmd::before_daemon(&c) {
        return e;
    }
    // The daemon reads and keeps its own copy; this one goes now.
    drop(c);
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            say!("baton daemon: failed to find the baton binary to run jobs with: {e}");
            return Exit::Failure;
        }
    };
    let opts = baton_daemon::Options {
        config_path: config::locate(a.file.config.as_deref()),
        state_dir: state.map(Path::to_owned),
        listen: a.listen.clone(),
        exe,
        log_format_json: a.log_format == crate::log::LogFormat::Json,
    };
    Exit::of_daemon(baton_daemon::serve(opts, crate::sched_cmd::clock()))
}
