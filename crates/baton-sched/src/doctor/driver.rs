//! What drives baton on this host: a cron line or a systemd unit that runs
//! `baton tick` or `baton daemon`. Found by reading the places cron and
//! systemd read (`/etc/crontab`, `/etc/cron.d/`, this user's crontab, the
//! system and user unit directories), never by asking a daemon; a unit
//! counts as enabled when a `.wants/` or `.requires/` link names it or its
//! timer.
//!
//! Every system path is read below [`Host::root`] (`/` on a real host), so
//! tests can plant the files; this user's crontab is asked of `crontab -l`
//! (through the runner, which starts every process) when the spool cannot
//! be read and the root is `/`.

use std::io::{Read as _, Seek as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::finding::Finding;

const CHECK: &str = "driver";

/// Where to look for what drives baton.
#[derive(Debug, Clone)]
pub struct Host {
    /// Prefixed to every system path (`/etc/crontab`, `/etc/systemd/…`):
    /// `/` on a real host, a directory for tests.
    pub root: PathBuf,
    /// Where this user's systemd units are (`$XDG_CONFIG_HOME/systemd/user`
    /// or `~/.config/systemd/user`), when known.
    pub user_units: Option<PathBuf>,
    /// This user's name, for their crontab in the spool.
    pub user: Option<String>,
    /// Whether `crontab -l` may be run when the spool cannot be read.
    pub run_crontab: bool,
}

/// The variable that moves the root [`Host::from_env`] reads system paths
/// below, for tests (undocumented in `--help`: a real host has one root).
pub const ROOT_VARIABLE: &str = "BATON_DOCTOR_ROOT";

impl Host {
    /// This host, as this process sees it: root `/` (or
    /// `$BATON_DOCTOR_ROOT`, for tests, and then no `crontab -l`), this
    /// user's units in `$XDG_CONFIG_HOME/systemd/user` (else
    /// `~/.config/systemd/user`), and this user's name from `/etc/passwd`
    /// (else `$USER`).
    pub fn from_env() -> Self {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let moved = var(ROOT_VARIABLE);
        let config_home = var("XDG_CONFIG_HOME")
            .filter(|p| p.is_absolute())
            .or_else(|| var("HOME").map(|h| h.join(".config")));
        let uid = baton_lease::trust::me();
        let user = super::state::passwd_name(uid)
            .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()));
        Self {
            run_crontab: moved.is_none(),
            root: moved.unwrap_or_else(|| PathBuf::from("/")),
            user_units: config_home.map(|c| c.join("systemd/user")),
            user,
        }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }
}

/// A command that runs `baton tick` or `baton daemon`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Driver {
    /// Where: `FILE:LINE` for a cron line, the unit's name and file for a
    /// unit.
    place: String,
    /// `tick` or `daemon`.
    command: String,
    /// The configuration it names (`--config`, `BATON_CONFIG=`), if any.
    config: Option<String>,
    /// For a unit: whether it is enabled.
    enabled: Option<bool>,
    /// The unit's name, to enable it.
    unit: Option<String>,
}

/// Looks for what drives the configuration at `config`.
pub(super) fn check(host: &Host, config: &Path) -> Finding {
    let mut drivers = Vec::new();
    cron(host, &mut drivers);
    units(host, &mut drivers);
    judge(&drivers, config)
}

fn judge(drivers: &[Driver], config: &Path) -> Finding {
    let shown = config.display();
    if drivers.is_empty() {
        return Finding::warn(
            CHECK,
            "nothing drives baton: no cron line and no systemd unit runs `baton tick` or \
             `baton daemon`, so no job runs on its schedule",
            format!(
                "install one: `baton render systemd --config {shown} --out \
                 /etc/systemd/system` then `systemctl enable --now baton.service`; or add the \
                 line `baton render cron --config {shown}` prints to a crontab"
            ),
        );
    }
    let ours = |d: &Driver| match &d.config {
        None => true,
        Some(c) => {
            let p = Path::new(c);
            p == config || std::fs::canonicalize(p).is_ok_and(|real| real == config)
        }
    };
    let mine: Vec<&Driver> = drivers.iter().filter(|d| ours(d)).collect();
    let list = |ds: &[&Driver]| {
        ds.iter()
            .map(|d| {
                let state = match d.enabled {
                    Some(true) => ", enabled",
                    Some(false) => ", not enabled",
                    None => "",
                };
                let named = d
                    .config
                    .as_deref()
                    .map(|c| format!(" --config {c}"))
                    .unwrap_or_default();
                format!("{} (baton {}{named}{state})", d.place, d.command)
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    if mine.is_empty() {
        let all: Vec<&Driver> = drivers.iter().collect();
        return Finding::warn(
            CHECK,
            format!(
                "what drives baton names another configuration, not {shown}: {}",
                list(&all)
            ),
            format!("make one of them name --config {shown}, or install one that does"),
        );
    }
    let running: Vec<&Driver> = mine
        .iter()
        .copied()
        .filter(|d| d.enabled != Some(false))
        .collect();
    if running.is_empty() {
        let units: Vec<&str> = mine.iter().filter_map(|d| d.unit.as_deref()).collect();
        return Finding::warn(
            CHECK,
            format!("found, but not enabled: {}", list(&mine)),
            format!("`systemctl enable --now {}`", units.join(" ")),
        );
    }
    Finding::ok(CHECK, list(&mine))
}

// ---- cron -------------------------------------------------------------------

fn cron(host: &Host, out: &mut Vec<Driver>) {
    read_crontab(&host.path("/etc/crontab"), out);
    if let Ok(dir) = std::fs::read_dir(host.path("/etc/cron.d")) {
        let mut files: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for f in files {
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
            // As cron itself: no hidden files, no editor or package leftovers.
            if name.is_some_and(|n| n.starts_with('.') || n.ends_with('~') || n.contains(".dpkg-"))
            {
                continue;
            }
            read_crontab(&f, out);
        }
    }
    let Some(user) = &host.user else { return };
    let spool = [
        host.path(&format!("/var/spool/cron/crontabs/{user}")),
        host.path(&format!("/var/spool/cron/{user}")),
    ];
    let mut read = false;
    for p in &spool {
        if let Some(text) = read_regular(p) {
            parse_crontab(&text, &p.display().to_string(), out);
            read = true;
        }
    }
    if !read
        && host.run_crontab
        && let Some(text) = crontab_l()
    {
        parse_crontab(&text, &format!("crontab of {user}"), out);
    }
}

fn read_crontab(path: &Path, out: &mut Vec<Driver>) {
    if let Some(text) = read_regular(path) {
        parse_crontab(&text, &path.display().to_string(), out);
    }
}

/// The longest crontab or unit file read.
const MAX_READ: u64 = 1 << 20;

/// The text of the regular file at `path` (a link is followed), at most
/// [`MAX_READ`] bytes of it; `None` for anything else. Opened without
/// blocking and judged by what was opened: a named pipe planted in
/// `/etc/cron.d` or a unit directory never hangs the doctor, and a device
/// is never read without end.
fn read_regular(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_READ).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The lines of a crontab that run baton's drivers. The user field of a
/// system crontab (`/etc/crontab`, `/etc/cron.d/`) is a word like any
/// other: [`found_in`] looks past it.
fn parse_crontab(text: &str, place: &str, out: &mut Vec<Driver>) {
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || is_assignment(t) {
            continue;
        }
        if let Some((command, config)) = found_in(&words(t)) {
            out.push(Driver {
                place: format!("{place}:{}", i + 1),
                command,
                config,
                enabled: None,
                unit: None,
            });
        }
    }
}

/// `NAME=value` at the start of a crontab line (an environment setting).
fn is_assignment(t: &str) -> bool {
    let name_end = t.find('=').unwrap_or(0);
    name_end > 0
        && t[..name_end]
            .trim_end()
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// This user's crontab, as `crontab -l` prints it (run through the
/// runner, bounded in time); `None` when there is none or no `crontab`.
fn crontab_l() -> Option<String> {
    let fd =
        rustix::fs::memfd_create("baton-doctor-crontab", rustix::fs::MemfdFlags::CLOEXEC).ok()?;
    let out = std::fs::File::from(fd);
    let stdout = std::process::Stdio::from(out.try_clone().ok()?);
    let cmd = baton_runner::HookCommand::Argv(vec!["crontab".into(), "-l".into()]);
    let outcome = std::thread::scope(|s| {
        s.spawn(|| baton_runner::hook::run(&cmd, &[], &[], stdout, Duration::from_secs(5)))
            .join()
            .ok()
    })?;
    if outcome != baton_runner::HookOutcome::Done {
        return None;
    }
    let mut out = out;
    out.rewind().ok()?;
    let mut text = String::new();
    out.read_to_string(&mut text).ok()?;
    Some(text)
}

// ---- systemd ------------------------------------------------------------------

/// The unit directories, the administrator's first (a unit there overrides
/// the package's of the same name).
fn unit_dirs(host: &Host) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = [
        "/etc/systemd/system",
        "/run/systemd/system",
        "/usr/local/lib/systemd/system",
        "/usr/lib/systemd/system",
        "/lib/systemd/system",
    ]
    .iter()
    .map(|d| host.path(d))
    .collect();
    if let Some(u) = &host.user_units {
        dirs.push(u.clone());
    }
    dirs
}

fn units(host: &Host, out: &mut Vec<Driver>) {
    let dirs = unit_dirs(host);
    let mut seen = std::collections::BTreeSet::new();
    for dir in &dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for f in files {
            let Some(name) = f.file_name().map(|n| n.to_string_lossy().into_owned()) else {
                continue;
            };
            if !name.ends_with(".service") || !seen.insert(name.clone()) {
                continue;
            }
            let Some(text) = read_regular(&f) else {
                continue;
            };
            if let Some((command, config)) = unit_driver(&text) {
                out.push(Driver {
                    place: format!("{name} ({})", f.display()),
                    command,
                    config,
                    enabled: Some(enabled(&dirs, &name)),
                    unit: Some(name),
                });
            }
        }
    }
}

/// What a unit's `ExecStart=` runs, when it is a baton driver, and the
/// configuration it names (on the command line or in `Environment=`).
fn unit_driver(text: &str) -> Option<(String, Option<String>)> {
    let mut env_config = None;
    let mut found = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("Environment=") {
            for w in words(v) {
                if let Some(c) = w.strip_prefix("BATON_CONFIG=") {
                    env_config = Some(c.to_owned());
                }
            }
        }
        if let Some(v) = t.strip_prefix("ExecStart=") {
            let v = v.trim_start_matches(['-', '@', ':', '+', '!']);
            if found.is_none() {
                found = found_in(&words(v));
            }
        }
    }
    let (command, config) = found?;
    Some((command, config.or(env_config)))
}

/// Whether a `.wants/` or `.requires/` directory links `service`, or its
/// timer when one exists.
fn enabled(dirs: &[PathBuf], service: &str) -> bool {
    let timer = format!("{}.timer", service.trim_end_matches(".service"));
    let has_timer = dirs.iter().any(|d| d.join(&timer).exists());
    dirs.iter().any(|d| {
        std::fs::read_dir(d).is_ok_and(|entries| {
            entries.filter_map(Result::ok).any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                (n.ends_with(".wants") || n.ends_with(".requires"))
                    && (e.path().join(service).symlink_metadata().is_ok()
                        || (has_timer && e.path().join(&timer).symlink_metadata().is_ok()))
            })
        })
    })
}

// ---- commands ------------------------------------------------------------------

/// A command line's words, quotes removed (as far as a driver needs).
fn words(s: &str) -> Vec<String> {
    s.split_whitespace()
        .map(|w| w.trim_matches(['\'', '"']).to_owned())
        .collect()
}

/// Where the words run `baton tick` or `baton daemon`: the subcommand, and
/// the configuration named by `--config` or a `BATON_CONFIG=` before it.
fn found_in(words: &[String]) -> Option<(String, Option<String>)> {
    let env_config = words
        .iter()
        .find_map(|w| w.strip_prefix("BATON_CONFIG=").map(str::to_owned));
    for (i, w) in words.iter().enumerate() {
        if w.rsplit('/').next() != Some("baton") {
            continue;
        }
        let mut rest = words[i + 1..].iter();
        let mut sub = None;
        while let Some(a) = rest.next() {
            if [";", "&&", "||", "|"].contains(&a.as_str()) {
                break;
            }
            if a == "--state-dir" {
                rest.next();
            } else if !a.starts_with('-') {
                sub = Some(a.clone());
                break;
            }
        }
        let Some(sub) = sub.filter(|s| s == "tick" || s == "daemon") else {
            continue;
        };
        let mut config = None;
        let mut after = rest.clone();
        while let Some(a) = after.next() {
            if [";", "&&", "||", "|", "--"].contains(&a.as_str()) {
                break;
            }
            if a == "--config" {
                config = after.next().cloned();
            } else if let Some(c) = a.strip_prefix("--config=") {
                config = Some(c.to_owned());
            }
        }
        return Some((sub, config.or_else(|| env_config.clone())));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::finding::Status;
    use super::*;

    fn w(s: &str) -> Vec<String> {
        words(s)
    }

    #[test]
    fn a_driver_is_baton_tick_or_daemon_wherever_baton_is_named() {
        let f = |s: &str| found_in(&w(s));
        assert_eq!(
            f("/usr/local/bin/baton tick --config /etc/baton/baton.toml"),
            Some(("tick".into(), Some("/etc/baton/baton.toml".into())))
        );
        // The user field of /etc/cron.d may be the baton user.
        assert_eq!(
            f("baton /usr/bin/baton --state-dir /x daemon"),
            Some(("daemon".into(), None))
        );
        assert_eq!(
            f("BATON_CONFIG=/a.toml baton tick -- job"),
            Some(("tick".into(), Some("/a.toml".into())))
        );
        assert_eq!(f("/usr/bin/baton exec --name x -- tick"), None);
        assert_eq!(f("/usr/bin/batonize tick"), None);
    }

    #[test]
    fn crontabs_skip_comments_and_settings() {
        let mut out = Vec::new();
        parse_crontab(
            "# * * * * * baton tick\nPATH=/usr/bin:/bin\nBATON_CONFIG = /x\n\
             * * * * * root /usr/bin/baton tick --config /etc/b.toml\n",
            "/etc/cron.d/baton",
            &mut out,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].place, "/etc/cron.d/baton:4");
    }

    #[test]
    fn a_unit_names_its_configuration_on_its_command_line_or_in_its_environment() {
        let text = "[Service]\nEnvironment=\"BATON_CONFIG=/etc/b.toml\" X=1\n\
                    ExecStart=-/usr/bin/baton daemon\n";
        assert_eq!(
            unit_driver(text),
            Some(("daemon".into(), Some("/etc/b.toml".into())))
        );
        assert_eq!(unit_driver("[Service]\nExecStart=/bin/true\n"), None);
    }

    #[test]
    fn nothing_found_warns_and_another_configuration_is_said() {
        let config = Path::new("/etc/baton/baton.toml");
        let f = judge(&[], config);
        assert_eq!(f.status, Status::Warn);
        assert!(f.message.starts_with("nothing drives baton"));
        let other = Driver {
            place: "/etc/crontab:3".into(),
            command: "tick".into(),
            config: Some("/srv/other.toml".into()),
            enabled: None,
            unit: None,
        };
        let f = judge(std::slice::from_ref(&other), config);
        assert_eq!(f.status, Status::Warn);
        assert!(f.message.contains("another configuration"), "{}", f.message);
        let unit = Driver {
            place: "baton.service".into(),
            command: "daemon".into(),
            config: Some("/etc/baton/baton.toml".into()),
            enabled: Some(false),
            unit: Some("baton.service".into()),
        };
        let f = judge(&[other, unit.clone()], config);
        assert_eq!(f.status, Status::Warn);
        assert_eq!(
            f.fix.as_deref(),
            Some("`systemctl enable --now baton.service`")
        );
        let on = Driver {
            enabled: Some(true),
            ..unit
        };
        assert_eq!(judge(&[on], config).status, Status::Ok);
    }
}
