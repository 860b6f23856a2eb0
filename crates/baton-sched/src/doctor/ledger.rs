//! The SQLite ledger, examined without being changed: SQLite's full
//! integrity check, and its schema version against this build's (an older
//! one is migrated in place by the next run; a newer one is refused).

use std::path::Path;

use baton_ledger::Examined;

use super::finding::Finding;

const CHECK: &str = "ledger";

/// What the examination of the ledger in `state_dir` says.
pub(super) fn finding(
    state_dir: &Path,
    ledger: &Result<Option<Examined>, baton_ledger::Error>,
) -> Finding {
    let e = match ledger {
        Ok(Some(e)) => e,
        Ok(None) => {
            return Finding::ok(
                CHECK,
                format!(
                    "no ledger yet: the first run creates {}",
                    state_dir.join("baton.db").display()
                ),
            );
        }
        Err(e) => {
            return Finding::fail(
                CHECK,
                format!("the ledger cannot be used: {e}"),
                "fix what the message names; the scheduler's runs and `baton status` open the \
                 ledger the same way",
            );
        }
    };
    let path = e.path.display();
    if !e.sound() {
        let damage = e.damage.first().map_or("", String::as_str);
        let more = match e.damage.len() {
            0 | 1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return Finding::fail(
            CHECK,
            format!("{path} is damaged: {damage}{more}"),
            format!(
                "stop what runs baton on this state directory, then move the ledger aside with \
                 its -wal and -shm (`mv {path} {path}.damaged`, and the same for {path}-wal and \
                 {path}-shm): the next run starts a fresh one (the history is lost; the lock \
                 files still keep each occurrence from running twice)"
            ),
        );
    }
    match e.version {
        Some(v) if v == e.supported => {
            Finding::ok(CHECK, format!("{path}: integrity ok, schema version {v}"))
        }
        Some(v) if v < e.supported => Finding::warn(
            CHECK,
            format!(
                "{path}: integrity ok, schema version {v}, older than this baton's {}",
                e.supported
            ),
            "nothing to do: the next run (or `baton status`) migrates it in place, keeping \
             every record",
        ),
        Some(v) => Finding::fail(
            CHECK,
            format!(
                "{path}: schema version {v}, newer than this baton's {}: a newer baton wrote it, \
                 and this one refuses it",
                e.supported
            ),
            "upgrade baton on this host to the version that wrote it",
        ),
        None => Finding::fail(
            CHECK,
            format!("{path}: its schema version cannot be read"),
            "move it aside as for a damaged ledger",
        ),
    }
}
