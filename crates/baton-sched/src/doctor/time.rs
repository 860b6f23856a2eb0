//! Time: whether the kernel keeps its clock synchronised (`adjtimex`, as
//! `timedatectl` reads it), and the zone database: where jiff finds it,
//! its version when it says one, and that every zone the configuration
//! names loads from it.

use std::collections::BTreeSet;
use std::path::Path;

use baton_lease::timesync::{self, KernelSync};

use super::finding::Finding;
use crate::config::{Config, Source};

/// The kernel's synchronisation state, judged.
pub(super) fn sync() -> Finding {
    match timesync::kernel_sync() {
        Ok(k) => sync_finding(&k),
        Err(e) => Finding::warn(
            "time-sync",
            format!("the kernel's synchronisation state cannot be read (adjtimex: {e})"),
            "check the clock's synchronisation by other means (`timedatectl status`, `chronyc \
             tracking`)",
        ),
    }
}

fn sync_finding(k: &KernelSync) -> Finding {
    const CHECK: &str = "time-sync";
    let ms = |us: i64| format!("{:.1}ms", us as f64 / 1000.0);
    if k.synchronised() {
        Finding::ok(
            CHECK,
            format!(
                "the kernel's clock is synchronised ({}, estimated error {}, maximum error {})",
                k.state_word(),
                ms(k.est_error_us),
                ms(k.max_error_us)
            ),
        )
    } else {
        Finding::warn(
            CHECK,
            format!(
                "the kernel says nothing keeps its clock synchronised ({}{}, maximum error {}): \
                 a drifting clock skews what is due, and judges other hosts' leases wrongly",
                k.state_word(),
                if k.status & 0x0040 != 0 {
                    ", STA_UNSYNC"
                } else {
                    ""
                },
                ms(k.max_error_us)
            ),
            "run an NTP client: `timedatectl set-ntp true` (systemd-timesyncd), or install \
             chrony; `timedatectl status` then says \"System clock synchronized: yes\"",
        )
    }
}

/// The zone database and the zones `c` names (or, without a valid
/// configuration, the system's).
pub(super) fn zones(c: Option<&Config>) -> Vec<Finding> {
    const CHECK: &str = "zones";
    let db = jiff::tz::db();
    if db.is_definitively_empty() {
        return vec![Finding::fail(
            CHECK,
            "no time zone database was found (TZDIR, /usr/share/zoneinfo)",
            "install the tzdata package, or set TZDIR to a zoneinfo directory",
        )];
    }
    let source = describe(db);
    let mut found = Vec::new();
    let mut names = BTreeSet::new();
    if let Some(c) = c {
        names.insert(c.settings.timezone.value.name.clone());
        for j in c.jobs.values() {
            names.insert(j.timezone.value.name.clone());
        }
    }
    // The system's zone without an IANA name is called by its rule or
    // `localtime`, which no database holds: its own warning below says so.
    let nameless = jiff::tz::TimeZone::try_system()
        .ok()
        .filter(|tz| tz.iana_name().is_none())
        .map(|_| crate::config::keys::nameless_system_zone());
    let bad: Vec<&String> = names
        .iter()
        .filter(|n| db.get(n).is_err() && nameless.as_ref() != Some(*n))
        .collect();
    for n in &bad {
        found.push(Finding::fail(
            CHECK,
            format!("{n} is not in the zone database ({source})"),
            "install or update the tzdata package, or name another zone",
        ));
    }
    let system_default = c.is_none_or(|c| c.settings.timezone.source == Source::Default);
    if system_default && let Some(f) = system_zone() {
        found.push(f);
    }
    if found.is_empty() {
        let list: Vec<&str> = names.iter().map(String::as_str).collect();
        let zones = if list.is_empty() {
            String::new()
        } else {
            format!("; {} load", list.join(", "))
        };
        found.push(Finding::ok(CHECK, format!("{source}{zones}")));
    }
    found
}

/// A problem with the system's zone, which a configuration that names no
/// zone uses.
fn system_zone() -> Option<Finding> {
    let fix = "set [scheduler] timezone to an IANA name (\"Europe/Berlin\"), or make \
               /etc/localtime a link into the zone database";
    match jiff::tz::TimeZone::try_system() {
        Err(e) => Some(Finding::warn(
            "zones",
            format!("the system's zone cannot be read ({e}): baton uses UTC"),
            fix,
        )),
        Ok(tz) if tz.iana_name().is_none() => Some(Finding::warn(
            "zones",
            format!(
                "the system's zone has no IANA name: baton calls it {:?}, and a host or a \
                 rendered unit elsewhere cannot name the same zone",
                crate::config::keys::nameless_system_zone()
            ),
            fix,
        )),
        Ok(_) => None,
    }
}

/// Where the database is, and its version when it says one.
fn describe(db: &jiff::tz::TimeZoneDatabase) -> String {
    // jiff names its source only in its `Debug`: `TimeZoneDatabase(
    // ZoneInfo(/usr/share/zoneinfo))`, `…(Concatenated(…))`, `…(Bundled(…))`.
    let debug = format!("{db:?}");
    let inner = debug
        .strip_prefix("TimeZoneDatabase(")
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(&debug);
    if let Some(dir) = inner
        .strip_prefix("ZoneInfo(")
        .and_then(|s| s.strip_suffix(')'))
    {
        return match version(Path::new(dir)) {
            Some(v) => format!("zone database {dir}, version {v}"),
            None => format!("zone database {dir} (its version is not recorded)"),
        };
    }
    format!("zone database {inner}")
}

/// The version a zoneinfo directory records: `tzdata.zi`'s first line
/// (`# version 2025b`), else `+VERSION`.
fn version(dir: &Path) -> Option<String> {
    let zi = std::fs::read_to_string(dir.join("tzdata.zi")).ok();
    if let Some(v) = zi
        .as_deref()
        .and_then(|t| t.lines().next())
        .and_then(|l| l.strip_prefix("# version "))
    {
        return Some(v.trim().to_owned());
    }
    let v = std::fs::read_to_string(dir.join("+VERSION")).ok()?;
    let v = v.trim();
    (!v.is_empty()).then(|| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::super::finding::Status;
    use super::*;

    #[test]
    fn an_unsynchronised_clock_is_a_warning_with_the_fix() {
        let k = KernelSync {
            state: 5,
            status: 0x0041,
            max_error_us: 16_000_000,
            est_error_us: 0,
        };
        let f = sync_finding(&k);
        assert_eq!(f.status, Status::Warn);
        assert!(
            f.message.contains("TIME_ERROR, STA_UNSYNC"),
            "{}",
            f.message
        );
        assert!(f.fix.unwrap().contains("timedatectl set-ntp true"));
        let k = KernelSync {
            state: 0,
            status: 0x2001,
            max_error_us: 1500,
            est_error_us: 200,
        };
        assert_eq!(sync_finding(&k).status, Status::Ok);
    }

    #[test]
    fn the_version_comes_from_tzdata_zi_or_plus_version() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(version(dir.path()), None);
        std::fs::write(dir.path().join("+VERSION"), "2024a\n").unwrap();
        assert_eq!(version(dir.path()).as_deref(), Some("2024a"));
        std::fs::write(dir.path().join("tzdata.zi"), "# version 2025b\n# x\n").unwrap();
        assert_eq!(version(dir.path()).as_deref(), Some("2025b"));
    }
}
