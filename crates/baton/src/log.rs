//! The process's one `tracing` subscriber: how the events the libraries
//! emit reach stderr. The libraries emit events where they have no caller
//! to tell (the daemon's lines, the scheduler's messages, a dropped lease
//! that could not be released); only this module decides how they look,
//! and nothing else installs a subscriber.
//!
//! Everything it writes goes through `baton_runner::console`, like every
//! other line baton prints: a stderr nobody reads never blocks a holder.
//! Events below `INFO` are not recorded.
//!
//! Two formats, chosen once per process ([`install`]):
//!
//! - **text** (the default): one plain line per event, `baton: MESSAGE`
//!   (`baton daemon: MESSAGE` for the daemon's own), then the event's
//!   other fields as `key=value`. No timestamp, no level, no colours: a
//!   terminal, cron's mail and journald get the same line, and journald
//!   stamps each line itself.
//! - **json** (`baton daemon --log-format json`, and the runs that daemon
//!   starts): one JSON object per line, `tracing-subscriber`'s: `timestamp`
//!   (UTC), `level`, `message`, the event's other fields, and `target`. The
//!   binary's own messages (`say!`) become events too, so every line is
//!   JSON; only a panic's last words stay plain text.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::level_filters::LevelFilter;
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber, span};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

/// How a process writes its events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Plain lines: `baton: MESSAGE key=value`.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The least severe level recorded.
const LEVEL: Level = Level::INFO;

static JSON: AtomicBool = AtomicBool::new(false);

/// Installs the subscriber for `format`, once for the process (a second
/// call changes nothing). What it installs is [`Lazy`]: the formatting
/// subscriber is built at the first event.
pub fn install(format: LogFormat) {
    let lazy = Lazy::new(move || subscriber(format, || Console));
    if tracing::subscriber::set_global_default(lazy).is_ok() {
        JSON.store(format == LogFormat::Json, Ordering::Relaxed);
    }
}

/// Whether this process writes JSON lines: then `say!`'s lines are events.
pub fn writes_json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// The subscriber that writes `format` to `writer`.
fn subscriber<W>(format: LogFormat, writer: W) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let fmt = tracing_subscriber::fmt()
        .with_max_level(LEVEL)
        .with_writer(writer);
    match format {
        LogFormat::Text => Box::new(fmt.event_format(Plain).finish()),
        LogFormat::Json => Box::new(
            fmt.json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .finish(),
        ),
    }
}

/// A subscriber built at its first use. `tracing-subscriber`'s registry
/// allocates its table of spans when it is made (40,000 instructions: 5% of
/// all that `baton exec -- true` executes), and most processes never emit
/// an event. This one says which events are wanted without it (`INFO` and
/// above, decided once per call site) and builds it for the first event or
/// span.
struct Lazy<S, F> {
    make: F,
    made: OnceLock<S>,
}

impl<S, F: Fn() -> S> Lazy<S, F> {
    fn new(make: F) -> Self {
        Self {
            make,
            made: OnceLock::new(),
        }
    }

    fn get(&self) -> &S {
        self.made.get_or_init(&self.make)
    }
}

impl<S, F> Subscriber for Lazy<S, F>
where
    S: Subscriber,
    F: Fn() -> S + 'static,
{
    fn register_callsite(&self, m: &'static Metadata<'static>) -> Interest {
        if self.enabled(m) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::from_level(LEVEL))
    }

    fn enabled(&self, m: &Metadata<'_>) -> bool {
        *m.level() <= LEVEL
    }

    fn new_span(&self, span: &span::Attributes<'_>) -> span::Id {
        self.get().new_span(span)
    }

    fn record(&self, span: &span::Id, values: &span::Record<'_>) {
        self.get().record(span, values);
    }

    fn record_follows_from(&self, span: &span::Id, follows: &span::Id) {
        self.get().record_follows_from(span, follows);
    }

    fn event(&self, event: &Event<'_>) {
        self.get().event(event);
    }

    fn enter(&self, span: &span::Id) {
        self.get().enter(span);
    }

    fn exit(&self, span: &span::Id) {
        self.get().exit(span);
    }

    fn clone_span(&self, span: &span::Id) -> span::Id {
        self.get().clone_span(span)
    }

    fn try_close(&self, span: span::Id) -> bool {
        self.get().try_close(span)
    }
}

/// Who speaks, by the event's module: the daemon's own lines keep the
/// prefix they always had.
fn prefix(target: &str) -> &'static str {
    match target.strip_prefix("baton_daemon") {
        Some("") => "baton daemon",
        Some(rest) if rest.starts_with("::") => "baton daemon",
        _ => "baton",
    }
}

/// The text format: `PREFIX: MESSAGE key=value`.
struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        write!(w, "{}: ", prefix(event.metadata().target()))?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// Standard error through the non-blocking console. The subscriber formats
/// a whole event before its one write, so a line is never split.
struct Console;

impl std::io::Write for Console {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        baton_runner::console::stderr(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// What a subscriber wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn events() {
        tracing::warn!(path = %"/s/locks/x.lock", "could not release a dropped lease");
        tracing::info!(target: "baton_daemon::clock", "the wall clock was set");
        tracing::info!(target: "baton_daemonish", "not the daemon");
        tracing::debug!("not recorded");
    }

    /// What [`events`] come to through a [`Lazy`] subscriber of `format`.
    fn written(format: LogFormat) -> String {
        let out = Captured::default();
        let w = out.clone();
        let lazy = Lazy::new(move || {
            let w = w.clone();
            subscriber(format, move || w.clone())
        });
        tracing::subscriber::with_default(lazy, events);
        out.text()
    }

    #[test]
    fn text_is_one_plain_line_per_event_prefixed_by_who_speaks() {
        assert_eq!(
            written(LogFormat::Text),
            "baton: could not release a dropped lease path=/s/locks/x.lock\n\
             baton daemon: the wall clock was set\n\
             baton: not the daemon\n"
        );
    }

    #[test]
    fn json_is_one_object_per_line_with_level_message_fields_and_target() {
        let lines: Vec<serde_json::Value> = written(LogFormat::Json)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[0]["level"], "WARN");
        assert_eq!(lines[0]["message"], "could not release a dropped lease");
        assert_eq!(lines[0]["path"], "/s/locks/x.lock");
        assert_eq!(lines[0]["target"], "baton::log::tests");
        assert!(lines[0]["timestamp"].is_string(), "{}", lines[0]);
        assert_eq!(lines[1]["level"], "INFO");
        assert_eq!(lines[1]["target"], "baton_daemon::clock");
    }
}
