//! baton-stress: the instrument that proves zero double runs, with the
//! broken algorithms as exhibits.
//!
//! It forks N real processes (the binary re-executes itself as every
//! contender), releases them against one boot-clock instant they busy-wait
//! to, and observes overlap with a witness file claimed `O_EXCL`: two
//! holders at once are the kernel's `EEXIST` at the instant it happens (seed
//! 003 §9). The same experiment runs against baton and against faithful
//! transcriptions of the locks it replaces: Scheduler Lock v1 and v2 (seed
//! 003), the seed 000 store and the seed 001 lock. A green run of baton
//! alone would only show that the new code passes; the exhibits racing in
//! the same instrument show that there was something to fix and that the
//! instrument can see it.
//!
//! Why a crate and binary of its own, and not `baton stress`: the exhibits
//! are deliberately broken lock algorithms. They must never be linked into
//! the product binary `baton`, where a wrong import or a feature flag could
//! put one in front of a real schedule; a separate binary that nothing
//! depends on makes that impossible by construction.
//!
//! Map: [`cli`] and [`config`] (two-stage command line), [`campaign`] (the
//! loop), [`parent`] (one trial, its processes), [`contend`] (one
//! contender), [`witness`] (how an overlap is seen), [`algo`] (one face for
//! every implementation), [`exhibits`] (the broken locks), [`latency`],
//! [`results`], [`render`] and [`out`] (the one place that prints), [`exit`],
//! and [`store`] (the PostgreSQL store of `--store`, and its "hosts").

mod algo;
mod campaign;
mod cli;
mod config;
mod contend;
mod event;
mod exhibits;
mod exit;
mod flock;
mod latency;
mod out;
mod parent;
mod proc;
mod render;
mod results;
mod rng;
mod store;
mod witness;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Args, Cmd};
use crate::exit::Exit;

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            // OK to ignore: clap prints help, version or the usage error itself.
            let _ = e.print();
            let code = if e.use_stderr() {
                Exit::Usage
            } else {
                Exit::Clean
            };
            return ExitCode::from(code.code());
        }
    };
    if let Some(Cmd::Contend(c)) = &args.cmd {
        return match c.orders() {
            Ok(o) => ExitCode::from(contend::run(&o)),
            Err(e) => {
                out::error(&e);
                ExitCode::from(Exit::Usage.code())
            }
        };
    }
    ExitCode::from(campaign_main(&args).code())
}

fn campaign_main(args: &Args) -> Exit {
    let dir = match trial_root(args.dir.as_deref()) {
        Ok(d) => d,
        Err(e) => {
            out::error(&e);
            return Exit::Usage;
        }
    };
    let cfg = match args.config(dir.clone()) {
        Ok(c) => c,
        Err(e) => {
            out::error(&e);
            let _ = std::fs::remove_dir_all(&dir); // OK to ignore: it is empty.
            return Exit::Usage;
        }
    };
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            out::error(&format!(
                "failed to find this executable to run contenders: {e}"
            ));
            return Exit::InstrumentBroken;
        }
    };
    let result = campaign::run(&cfg, &exe);
    // OK to ignore: trial directories live in a temporary directory.
    let _ = std::fs::remove_dir_all(&dir);
    let c = match result {
        Ok(c) => c,
        Err(e) => {
            out::error(&e);
            return Exit::InstrumentBroken;
        }
    };
    out::report(&render::table::campaign(&c));
    if let Some(path) = &cfg.json
        && let Err(e) = out::write_json(path, &render::json::campaign(&c))
    {
        out::error(&e);
        return Exit::InstrumentBroken;
    }
    if c.baton_raced() {
        Exit::BatonRaced
    } else if c.baton_broken() {
        Exit::InstrumentBroken
    } else {
        Exit::Clean
    }
}

/// A fresh directory for this campaign's trials, inside `parent` or the
/// system's temporary directory.
fn trial_root(parent: Option<&std::path::Path>) -> Result<PathBuf, String> {
    let base = parent.map_or_else(std::env::temp_dir, std::path::Path::to_path_buf);
    let tag = rng::hex_token(4).map_err(|e| format!("failed to read random bytes: {e}"))?;
    let dir = base.join(format!("baton-stress.{}.{tag}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("failed to create {}: {e}", dir.display()))?;
    Ok(dir)
}
