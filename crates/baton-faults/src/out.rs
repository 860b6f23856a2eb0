//! The one place the campaign prints: the report on stdout, progress,
//! failures and errors on stderr, the JSON record to its file. Jobs write
//! their own evidence files; nothing else in the crate writes to a
//! terminal.

use std::io::Write;
use std::path::Path;

/// A progress line on stderr.
pub(crate) fn progress(line: &str) {
    // OK to ignore: progress is a courtesy.
    let _ = writeln!(std::io::stderr().lock(), "baton-faults: {line}");
}

/// An error on stderr.
pub(crate) fn error(line: &str) {
    // OK to ignore: nowhere left to report a failure to report.
    let _ = writeln!(std::io::stderr().lock(), "baton-faults: error: {line}");
}

/// The human report on stdout.
pub(crate) fn report(text: &str) {
    let mut o = std::io::stdout().lock();
    // OK to ignore: a closed stdout (a pipe to `head`) is the reader's choice.
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

/// Writes the JSON record.
///
/// # Errors
///
/// When the file cannot be written.
pub(crate) fn write_json(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("failed to write {}: {e}", path.display()))
}
