//! The daemon's clock: sleeps until the next due instant of any job, then
//! ticks. No polling interval and no wake-up in between: a `timerfd` armed
//! on `CLOCK_REALTIME` at that instant (absolute, `TFD_TIMER_CANCEL_ON_SET`).
//!
//! A step of the wall clock cancels the timer at once; a suspend ends with
//! the realtime clock past the instant, so the timer fires on resume. On
//! every wake the wall clock's advance is compared with the boot clock's:
//! a jump is said, the tick decides what it means (catch-up rules), and the
//! next instant is planned from the new now. A reload wakes it to plan
//! again, and ticks at once. This module only sleeps and wakes; deciding
//! is [`crate::tick`]'s.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use baton_sched::config::Config;
use jiff::Timestamp;
use rustix::time::{Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};
use tokio::io::unix::AsyncFd;

use crate::state::Daemon;

/// A wall-clock difference from the boot clock's advance larger than this
/// is a jump worth saying.
const JUMP: Duration = Duration::from_secs(2);

/// The next instant after `after` at which any job of `config` is due: an
/// occurrence moved on by its job's jitter ([`baton_sched::config::Job::starts_at`]).
pub(crate) fn next_due(config: &Config, after: Timestamp) -> Option<Timestamp> {
    if !config.enabled() {
        return None;
    }
    config
        .jobs
        .values()
        .filter_map(|j| {
            j.when
                .value
                .schedule
                .next_after(j.due_clock(after), &j.timezone.value.tz)
                .map(|t| j.starts_at(t))
        })
        .min()
}

/// How many times in a row the same instant is tried again when the
/// clock the ticks decide by had not reached it ([`early_by`]).
const EARLY_RETRIES: u32 = 5;

/// How long to wait before deciding the instant `next` again, when the
/// tick its timer woke decided at `decided_at`, before it: a shared store's
/// clock, which the timer is armed for through an offset measured a round
/// trip at a time, may not have reached the instant when this host's did,
/// and then nothing was due yet. Without another try the occurrence would
/// wait for the next one and be missed as superseded. Waits past the
/// shortfall by a millisecond. `None` when the decision was made at or
/// after the instant (or none was made), or further short of it than
/// [`EARLY_AT_MOST`]: then the instant was planned on another clock, and is
/// planned again from the deciding clock's now ([`plan_from`]).
pub(crate) fn early_by(next: Timestamp, decided_at: Option<Timestamp>) -> Option<Duration> {
    let at = decided_at?;
    if at >= next || next.duration_since(at) > EARLY_AT_MOST {
        return None;
    }
    let short = Duration::try_from(next.duration_since(at)).unwrap_or(Duration::ZERO);
    Some(short + Duration::from_millis(1))
}

/// Where the clock plans its next instant from, after the instant `next`
/// came and its tick decided at `decided_at` on the clock the ticks decide
/// by (`None`: nothing was decided, the store unreachable). A tick decides
/// everything due at or before its now, so a decision plans on from that
/// now: past the instant that came when the deciding clock is at or past
/// it (a store whose clock runs ahead of the one `next` was planned on
/// would otherwise be ticked once per instant between them, back to back),
/// and back to it when that clock had not reached it (the instant was
/// planned on another clock: this host's, before a shared store's was
/// measured, or a stale measurement; planning on from it would run ahead
/// of the store by the clocks' difference and leave the schedule asleep
/// that long). With no decision, on from the instant that came, so that it
/// is not tried again at once.
pub(crate) fn plan_from(
    next: Option<Timestamp>,
    from: Timestamp,
    decided_at: Option<Timestamp>,
) -> Option<Timestamp> {
    decided_at.or_else(|| next.map(|n| n.max(from)))
}

/// How far short of an instant a decision may be and still be tried again
/// for it ([`early_by`]): a measurement of a shared store's clock is off by
/// up to a round trip.
const EARLY_AT_MOST: jiff::SignedDuration = jiff::SignedDuration::from_secs(1);

/// Why the clock woke.
enum Woke {
    /// The instant came.
    Due,
    /// The wall clock was set.
    Stepped,
    /// The configuration changed: plan again (never the timer's).
    Replan,
}

/// How long before `local` (an instant on this host's clock) this
/// process's wall clock `now` is: the span the clock also sleeps on the
/// monotonic clock beside its timer. The kernel's realtime clock, which the
/// timer follows, and the one this process reads may disagree (a process
/// shown a clock off the system's, as libfaketime does): a timer that fires
/// early waits out the rest (ticking at once would find nothing due and arm
/// the same instant again, in a loop that holds a core until the clocks
/// agree), and one that would fire late is not waited for. `None` once it
/// has come.
fn short_of(local: Timestamp, now: Timestamp) -> Option<Duration> {
    (now < local).then(|| Duration::try_from(local.duration_since(now)).unwrap_or(Duration::ZERO))
}

struct Timer {
    fd: AsyncFd<OwnedFd>,
}

impl Timer {
    fn new() -> std::io::Result<Self> {
        let fd = rustix::time::timerfd_create(
            TimerfdClockId::Realtime,
            TimerfdFlags::CLOEXEC | TimerfdFlags::NONBLOCK,
        )?;
        // `new` is deprecated because a borrowed descriptor could be closed
        // under it; an `OwnedFd` moved in stays open and the same for the
        // `AsyncFd`'s whole life, which is what `register` asks callers to
        // promise (in an unsafe block this crate does not allow).
        #[allow(deprecated)]
        let fd = AsyncFd::new(fd)?;
        Ok(Self { fd })
    }

    /// Arms the timer at `at` (disarms it for `None`).
    fn arm(&self, at: Option<Timestamp>) -> std::io::Result<()> {
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let value = match at {
            None => zero,
            Some(t) => {
                let secs = t.as_second();
                let nanos = i64::from(t.subsec_nanosecond());
                // An instant at or before the epoch would disarm the timer:
                // one nanosecond after it fires at once instead.
                if secs <= 0 && nanos <= 0 {
                    Timespec {
                        tv_sec: 0,
                        tv_nsec: 1,
                    }
                } else {
                    Timespec {
                        tv_sec: secs,
                        tv_nsec: nanos,
                    }
                }
            }
        };
        rustix::time::timerfd_settime(
            self.fd.get_ref(),
            TimerfdTimerFlags::ABSTIME | TimerfdTimerFlags::CANCEL_ON_SET,
            &Itimerspec {
                it_interval: zero,
                it_value: value,
            },
        )?;
        Ok(())
    }

    async fn wait(&self) -> std::io::Result<Woke> {
        loop {
            let mut guard = self.fd.readable().await?;
            let mut buf = [0u8; 8];
            match guard
                .try_io(|fd| rustix::io::read(fd.get_ref(), &mut buf).map_err(std::io::Error::from))
            {
                Ok(Ok(_)) => return Ok(Woke::Due),
                Ok(Err(e))
                    if e.raw_os_error() == Some(rustix::io::Errno::CANCELED.raw_os_error()) =>
                {
                    return Ok(Woke::Stepped);
                }
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => {}
            }
        }
    }
}

/// Sleeps `span` on the monotonic clock; never ends for `None`.
async fn after(span: Option<Duration>) {
    match span {
        Some(span) => tokio::time::sleep(span).await,
        None => std::future::pending().await,
    }
}

/// Runs the clock until the daemon stops.
pub(crate) async fn run(d: Arc<Daemon>) {
    let timer = match Timer::new() {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(
                "failed to create the clock's timer: {e}; only POST /v1/tick and `baton tick` \
                 will start runs"
            );
            return;
        }
    };
    // Once at start: what fell due while no daemon ran is decided now.
    // Instants are planned on the clock the ticks decide by (a shared
    // store's), and the timer is armed for them on this host's.
    let _ = crate::tick::tick(&d, "clock").await;
    let mut from = d.decision_now();
    // This host's clocks, to tell a step or a suspend of its wall clock:
    // never the store's, which may differ from it by any steady amount.
    let (mut wall, mut boot) = (d.clock.wall(), d.clock.boot());
    let mut early = 0;
    // Whether the heap's free memory was given back since the last
    // configuration was planned (reading one frees most of what it built).
    let mut settled = false;
    loop {
        if d.stopping.load(Ordering::SeqCst) {
            return;
        }
        let next = next_due(&d.current().config, from);
        if !settled {
            crate::trim::give_back();
            settled = true;
        }
        let replan = d.replan.notified();
        tokio::pin!(replan);
        replan.as_mut().enable();
        if let Err(e) = timer.arm(next.map(|n| d.local_instant(n))) {
            tracing::error!("failed to arm the clock's timer: {e}");
            return;
        }
        // The instant comes by the kernel's realtime clock (the timer, which
        // also says when that clock is set) or by this process's wall clock
        // (the same span on the monotonic clock), whichever is first: the
        // two disagree when this process is shown a clock off the system's
        // (libfaketime), and the timer alone would then fire late by the
        // whole offset, the occurrences between missed.
        let span = next.map(|n| short_of(d.local_instant(n), d.clock.wall()).unwrap_or_default());
        let mut woke = tokio::select! {
            w = timer.wait() => w,
            () = after(span) => Ok(Woke::Due),
            () = &mut replan => Ok(Woke::Replan),
        };
        if matches!(woke, Ok(Woke::Due))
            && let Some(rest) = next.and_then(|n| short_of(d.local_instant(n), d.clock.wall()))
        {
            woke = tokio::select! {
                () = tokio::time::sleep(rest) => Ok(Woke::Due),
                () = &mut replan => Ok(Woke::Replan),
            };
        }
        if d.stopping.load(Ordering::SeqCst) {
            return;
        }
        let (now_wall, now_boot) = (d.clock.wall(), d.clock.boot());
        let walked = now_wall.duration_since(wall);
        let slept = jiff::SignedDuration::try_from(now_boot.saturating_sub(boot))
            .unwrap_or(jiff::SignedDuration::MAX);
        let drift = (walked - slept).abs();
        if drift > jiff::SignedDuration::try_from(JUMP).unwrap_or_default() {
            tracing::warn!(
                "the wall clock moved {walked:#} while {slept:#} passed (a step or a suspend): \
                 planning again from {now_wall}"
            );
        }
        match woke {
            Ok(Woke::Due) => {
                let ticked = crate::tick::tick(&d, "clock").await;
                let decided_at = match &ticked {
                    Some(Ok(t)) => t.decided_at,
                    _ => None,
                };
                if let Some(wait) = next.and_then(|n| early_by(n, decided_at))
                    && early < EARLY_RETRIES
                {
                    // Decided before the instant by the clock that
                    // decides: the same instant again once it has come.
                    early += 1;
                    tokio::time::sleep(wait).await;
                    (wall, boot) = (d.clock.wall(), d.clock.boot());
                    continue;
                }
                early = 0;
                // From the deciding clock's now, or on from the instant that
                // came when nothing was decided ([`plan_from`]).
                from = plan_from(next, from, decided_at).unwrap_or_else(|| d.decision_now());
            }
            Ok(Woke::Stepped) => {
                tracing::info!("the wall clock was set: planning again");
                let _ = crate::tick::tick(&d, "clock").await;
                from = d.decision_now();
            }
            Ok(Woke::Replan) => {
                // A new configuration is decided at once, as any tick would
                // decide it (a job added over HTTP may be due already).
                let _ = crate::tick::tick(&d, "clock").await;
                from = d.decision_now();
                settled = false;
            }
            Err(e) => {
                tracing::error!("the clock's timer failed: {e}");
                return;
            }
        }
        (wall, boot) = (d.clock.wall(), d.clock.boot());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_that_fires_before_the_instant_by_this_clock_waits_the_rest() {
        let at: Timestamp = "2026-12-05T06:11:50Z".parse().unwrap();
        let hour = jiff::SignedDuration::from_hours(1);
        assert_eq!(short_of(at, at - hour), Some(Duration::from_secs(3600)));
        assert_eq!(short_of(at, at), None);
        assert_eq!(short_of(at, at + hour), None);
    }

    #[test]
    fn an_instant_decided_before_it_came_is_decided_again_once_it_has() {
        let next: Timestamp = "2026-12-05T06:11:50Z".parse().unwrap();
        let ms = |n: i64| jiff::SignedDuration::from_millis(n);
        // The store's clock 2 ms short of it: again 3 ms later.
        assert_eq!(
            early_by(next, Some(next - ms(2))),
            Some(Duration::from_millis(3))
        );
        // At it or past it, or nothing decided: go on to the next.
        assert_eq!(early_by(next, Some(next)), None);
        assert_eq!(early_by(next, Some(next + ms(5))), None);
        assert_eq!(early_by(next, None), None);
        // A second short: still a measurement's error, tried again.
        assert_eq!(
            early_by(next, Some(next - ms(1_000))),
            Some(Duration::from_millis(1_001))
        );
        // Further (a clock that jumped back, a store whose clock runs
        // behind the one the instant was planned on): not tried again, but
        // planned again from that clock's now.
        assert_eq!(early_by(next, Some(next - ms(1_001))), None);
        assert_eq!(early_by(next, Some(next - ms(90_000))), None);
    }

    #[test]
    fn the_plan_goes_on_from_the_deciding_clocks_now_or_from_the_instant_that_came() {
        let t = |s: &str| -> Timestamp { s.parse().unwrap() };
        let (next, from) = (t("2026-12-07T14:21:00Z"), t("2026-12-07T14:20:00Z"));
        // Decided at or after it: on from the decision's now.
        let at = t("2026-12-07T14:21:00.004Z");
        assert_eq!(plan_from(Some(next), from, Some(at)), Some(at));
        // A store an hour ahead of the clock the instant was planned on:
        // past the hour of instants it decided, not one tick for each.
        let ahead = t("2026-12-07T15:21:00.010Z");
        assert_eq!(plan_from(Some(next), from, Some(ahead)), Some(ahead));
        // An hour behind: from the store's now, not an hour ahead of it.
        let behind = t("2026-12-07T13:21:00.010Z");
        assert_eq!(plan_from(Some(next), from, Some(behind)), Some(behind));
        // Nothing decided (the store unreachable): on from the instant, so
        // that it is not the next one again.
        assert_eq!(plan_from(Some(next), from, None), Some(next));
        // Nothing due at all, nothing decided: the caller plans from now.
        assert_eq!(plan_from(None, from, None), None);
    }

    fn config(jobs: &str) -> Config {
        let text = format!("[scheduler]\nstate_dir = \"/nonexistent\"\ntimezone = \"UTC\"\n{jobs}");
        baton_sched::config::parse(
            &text,
            std::path::Path::new("/etc/baton.toml"),
            &baton_sched::config::Overrides::default(),
        )
        .unwrap()
    }

    #[test]
    fn the_timer_wakes_at_an_occurrences_start_not_its_instant() {
        let c =
            config("[jobs.report]\nschedule = \"0 * * * *\"\njitter = \"1h\"\nrun = \"true\"\n");
        let job = &c.jobs["report"];
        let off = jiff::SignedDuration::try_from(job.start_offset()).unwrap();
        assert!(!off.is_zero(), "this name's offset in an hour is not 0");
        let ten: Timestamp = "2026-12-03T10:00:00Z".parse().unwrap();
        let start = ten.checked_add(off).unwrap();
        // Just after 10:00, the 10:00 occurrence has not started: its start
        // is next, not 11:00.
        let after = ten.checked_add(jiff::SignedDuration::from_secs(1)).unwrap();
        let after = after.min(
            start
                .checked_sub(jiff::SignedDuration::from_secs(1))
                .unwrap(),
        );
        assert_eq!(next_due(&c, after), Some(start));
        // At its start, the next is 11:00's.
        let eleven = start
            .checked_add(jiff::SignedDuration::from_hours(1))
            .unwrap();
        assert_eq!(next_due(&c, start), Some(eleven));
    }
}
