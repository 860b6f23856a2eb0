//! baton-faults: the fault campaign. It drives the real `baton` binary
//! (`tick`, `run`, `exec`, `daemon`, `backfill`, `history --json`, `status
//! --json`) from outside, as cron, a person or a fleet would, while it
//! injects the faults a real fleet sees: processes killed with `kill -9`
//! at every write and wait of a run (failpoints, in a build of baton made
//! for the campaign only), stalls, a full disk, a clock an hour off, a
//! blocked standard error, files planted in the state directory, a
//! PostgreSQL connection frozen or cut, a backend terminated, the server
//! restarted or restored from a backup.
//!
//! Each trial then checks the invariants against evidence baton did not
//! write: every job appends its start, its heartbeats and its end to a log
//! of its own and writes through a sink that refuses a lower fence, and the
//! checker compares that with what `baton history` and the alerts say (see
//! [`check`]). A failing trial prints the command that replays it.
//!
//! Why a binary of its own: it needs root, namespaces, a throwaway
//! PostgreSQL and a failpoint build of baton; nothing of it belongs in the
//! product, which it only ever executes.
//!
//! Map: [`cli`] (the command line, to a validated [`plan::Plan`]),
//! [`campaign`] (trials, in parallel), [`scenario`] (what each fault is:
//! setup, injection, the evidence to check), [`trial`] (one trial's
//! directory, processes and baton commands), [`job`] (the job and sink
//! scripts), [`evidence`] (reading what they wrote), [`check`] (the
//! invariants), [`results`], [`render`] and [`out`] (the one place that
//! prints), [`exit`].

#![allow(clippy::disallowed_methods)] // An instrument waits for real processes in real time.

mod campaign;
mod check;
mod cli;
mod evidence;
mod exit;
mod job;
mod out;
mod plan;
mod procs;
mod render;
mod results;
mod rng;
mod scenario;
mod tmpfs;
mod trial;

use std::process::ExitCode;

use clap::Parser;

use crate::exit::Exit;

fn main() -> ExitCode {
    let args = match cli::Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            // OK to ignore: clap prints help, version or the usage error itself.
            let _ = e.print();
            return ExitCode::from(match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ => Exit::Usage.code(),
            });
        }
    };
    if args.list {
        out::report(&render::table::scenarios(&scenario::all()));
        return ExitCode::SUCCESS;
    }
    let plan = match args.plan() {
        Ok(p) => p,
        Err(e) => {
            out::error(&e);
            return ExitCode::from(Exit::Usage.code());
        }
    };
    ExitCode::from(campaign::run(&plan).code())
}
