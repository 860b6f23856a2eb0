//! `baton render`: a thin adapter from parsed arguments to
//! `baton_sched::render`, and from its artefacts to stdout or files.
//!
//! The arguments first become [`Options`]: the configuration loaded, the
//! binary (`--bin`, else this binary; for GitHub, whose runner is another
//! machine, `--bin` must be given) and the configuration's host path
//! checked to be absolute, the
//! host's zone checked, the clock read once (through the clock chokepoint)
//! and the environment variables baton reads collected. For cron and
//! systemd, a state directory from `--state-dir` or `BATON_STATE_DIR` that
//! is not the file's is refused: the rendered lines and units pass neither
//! (a pinned one would outlive the file's next edit), so the file's
//! `state_dir` is the one the host uses. Every refusal
//! happens there or in the renderer, as lines on stderr and exit 2, before
//! anything is written. [`write_all`] is the one place that writes
//! artefacts: each through a temporary file renamed over its name, so a
//! reader sees an old file or a whole new one; then it removes the files of
//! an earlier render of the same target that this one did not write (a
//! removed job's timer), naming each on stderr, and touches no other file.
//! On stdout, a write that fails (a full disk, a closed pipe) is exit 125.
//!
//! The configuration's path is normalised lexically (`a/../a/./baton.toml`
//! is `a/baton.toml`). For GitHub it is the path inside the repository:
//! `--config-path-as` relative to the checkout, else the configuration's
//! path below the repository (the nearest directory up with a `.git`).

use std::path::{Path, PathBuf};

use baton_lease::{Clock, SystemClock};
use baton_sched::config::Source;
use baton_sched::render::{self, Artefact, Options, Target};

use crate::cli::{RenderArgs, RenderTarget};
use crate::exit::Exit;

/// `baton render`.
pub fn run(state: Option<&Path>, a: &RenderArgs) -> Exit {
    let target = match a.target {
        RenderTarget::Cron => Target::Cron,
        RenderTarget::Systemd => Target::Systemd,
        RenderTarget::Github => Target::Github,
        RenderTarget::Env => Target::Env,
    };
    let refuse = |message: String| {
        say!("baton render: {message}");
        Exit::Usage
    };
    if target == Target::Env && a.per_job {
        return refuse(
            "--per-job has no meaning for env: the reference lists variables, not jobs".into(),
        );
    }
    let mut c = match crate::sched_cmd::load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if matches!(target, Target::Cron | Target::Systemd) {
        match state_dir_the_host_uses(&mut c) {
            Ok(None) => {}
            Ok(Some(why)) => return refuse(why),
            Err(e) => return e,
        }
    }
    let bin = match &a.bin {
        Some(p) => p.clone(),
        // A runner is not this machine: the binary that renders is not there.
        None if target == Target::Github => {
            return refuse(
                "github needs --bin PATH: where baton is on the runner (the workflow runs \
                 on ubuntu-latest and installs nothing: a step you add before baton's puts it \
                 there, or a self-hosted runner that has it, with `runs-on: self-hosted`); this \
                 machine's binary is not on a runner"
                    .into(),
            );
        }
        None => match std::env::current_exe() {
            Ok(p) => p,
            Err(e) => return refuse(format!("failed to find this binary (give --bin PATH): {e}")),
        },
    };
    if !bin.is_absolute() {
        return refuse(format!("--bin {} is not an absolute path", bin.display()));
    }
    let config = match (target, &a.config_path_as) {
        (Target::Github, Some(p)) if p.is_absolute() => {
            return refuse(format!(
                "--config-path-as {} is absolute: for github it is the configuration's \
                 path inside the repository, relative to the checkout",
                p.display()
            ));
        }
        (Target::Github, Some(p)) => normalise(p),
        (Target::Github, None) => match in_repository(&normalise(&c.path)) {
            Some(p) => p,
            None => {
                return refuse(format!(
                    "{} is in no git repository: give its path inside the repository \
                     the workflow checks out (--config-path-as PATH, relative)",
                    c.path.display()
                ));
            }
        },
        (_, Some(p)) if !p.is_absolute() => {
            return refuse(format!(
                "--config-path-as {} is not an absolute path",
                p.display()
            ));
        }
        (_, Some(p)) => normalise(p),
        (_, None) => normalise(&c.path),
    };
    let host_zone = match &a.host_tz {
        Some(z) => match jiff::tz::TimeZone::get(z) {
            Ok(_) => z.clone(),
            Err(e) => return refuse(format!("--host-tz {z:?} is not a time zone: {e}")),
        },
        None => system_zone(),
    };
    let config_source = if a.file.config.is_some() {
        Source::Flag("--config".into())
    } else if std::env::var_os("BATON_CONFIG").is_some_and(|v| !v.is_empty()) {
        Source::Env("BATON_CONFIG".into())
    } else {
        Source::Default
    };
    let environment = render::env::names()
        .into_iter()
        .filter_map(|n| std::env::var(&n).ok().map(|v| (n, v)))
        .collect();
    let path = match bin.parent().and_then(Path::to_str) {
        Some(dir) if !["/usr/local/bin", "/usr/bin", "/bin"].contains(&dir) => {
            format!("{dir}:/usr/local/bin:/usr/bin:/bin")
        }
        _ => "/usr/local/bin:/usr/bin:/bin".to_owned(),
    };
    let opts = Options {
        bin,
        config,
        config_source,
        per_job: a.per_job,
        host_zone,
        path,
        now: SystemClock.wall(),
        environment,
    };
    let artefacts = match render::render(target, &c, &opts) {
        Ok(a) => a,
        Err(e) => {
            for line in e.to_string().lines() {
                say!("baton render: {line}");
            }
            return Exit::Usage;
        }
    };
    match &a.out {
        Some(dir) => match write_all(dir, &artefacts) {
            Ok(()) => match remove_stale(dir, target, &artefacts) {
                Ok(()) => Exit::Ok,
                Err(e) => {
                    say!("baton render: {e}");
                    Exit::Failure
                }
            },
            Err(e) => {
                say!("baton render: {e}");
                Exit::Failure
            }
        },
        None => {
            let many = artefacts.len() > 1;
            let mut text = String::new();
            for (i, art) in artefacts.iter().enumerate() {
                if many {
                    let gap = if i > 0 { "\n" } else { "" };
                    text.push_str(&format!("{gap}# ==> {} <==\n", art.name));
                }
                text.push_str(&art.text);
            }
            match crate::say::try_to_stdout(&text) {
                Ok(()) => Exit::Ok,
                Err(e) => {
                    say!("baton render: failed to write standard output: {e}");
                    Exit::Failure
                }
            }
        }
    }
}

/// Why `c`'s state directory is not the one the rendered crontab or units
/// will use, if it is not: they run `baton … --config FILE` with neither
/// `--state-dir` nor `BATON_STATE_DIR` (a pinned value would beat the
/// file's `state_dir` after its next edit, and split the ledger from the
/// commands run by hand), so the file's `state_dir` decides there, and a
/// render for another directory (a `ReadWritePaths=` naming it) would
/// describe a host that does not exist. When the two agree, the value is
/// rendered as the file gives it (its source too: a unit for a file that
/// names no `state_dir` gives the daemon's user that default).
fn state_dir_the_host_uses(c: &mut baton_sched::config::Config) -> Result<Option<String>, Exit> {
    use baton_sched::config::{self, Overrides};
    let given = &c.settings.state_dir;
    if !matches!(given.source, Source::Flag(_) | Source::Env(_)) {
        return Ok(None);
    }
    let mut over = Overrides::from_env(None);
    over.env.remove("state_dir");
    let file = config::load(&c.path, &over).map_err(|e| {
        say!("baton: {e}");
        Exit::Usage
    })?;
    let theirs = &file.settings.state_dir;
    if theirs.value == given.value {
        c.settings.state_dir.source = theirs.source.clone();
        return Ok(None);
    }
    let unset = match &given.source {
        Source::Env(name) => format!("unset {name}"),
        _ => format!("leave out {}", given.source),
    };
    Ok(Some(format!(
        "{} {} is not the state directory of {} ({}, {}): what this renders runs \
         `baton` with --config only, so it would use that one; set state_dir there (every \
         command then reads it) and {unset}",
        given.source,
        given.value.display(),
        c.path.display(),
        theirs.value.display(),
        match theirs.source {
            Source::Default => "baton's default".to_owned(),
            ref s => format!("state_dir at {s}"),
        },
    )))
}

/// `p` with `.` dropped and each `..` taking away the name before it,
/// without reading the file system.
fn normalise(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in p.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else if !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// `config`'s path relative to the nearest directory above it that holds
/// `.git`: the root of the repository it is in.
fn in_repository(config: &Path) -> Option<PathBuf> {
    let mut dir = config.parent();
    while let Some(d) = dir {
        if d.join(".git").exists() {
            return config.strip_prefix(d).ok().map(Path::to_owned);
        }
        dir = d.parent();
    }
    None
}

/// Removes each file in `dir` that `target` renders ([`render::owns`]) but
/// this render did not write, saying so on stderr; any other file stays.
fn remove_stale(dir: &Path, target: Target, artefacts: &[Artefact]) -> Result<(), String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("failed to read the directory {}: {e}", dir.display()))?;
    let mut stale = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| format!("failed to read the directory {}: {e}", dir.display()))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && render::owns(target, &name) && !artefacts.iter().any(|a| a.name == name) {
            stale.push(entry.path());
        }
    }
    stale.sort();
    for path in stale {
        std::fs::remove_file(&path)
            .map_err(|e| format!("failed to remove {}: {e}", path.display()))?;
        say!(
            "baton render: removed {} (rendered earlier, not by this render)",
            path.display()
        );
    }
    Ok(())
}

/// Writes each artefact as `dir/NAME`: a temporary file beside it, written,
/// flushed to disk and renamed over the name; `dir` first made or checked
/// ([`crate::out_dir`]: not another user's).
fn write_all(dir: &Path, artefacts: &[Artefact]) -> Result<(), String> {
    crate::out_dir::prepare(dir)?;
    for a in artefacts {
        baton_sched::state::atomic::replace(dir, &a.name, a.text.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The zone cron and systemd use on this machine: `/etc/localtime`'s (or
/// `/etc/timezone`'s), not `$TZ`, which is this shell's alone; UTC when
/// neither names one.
fn system_zone() -> String {
    let from_link = std::fs::read_link("/etc/localtime").ok().and_then(|p| {
        let p = p.to_string_lossy().into_owned();
        p.split_once("zoneinfo/").map(|(_, name)| name.to_owned())
    });
    let from_file = || {
        std::fs::read_to_string("/etc/timezone")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let name = from_link
        .or_else(from_file)
        .filter(|n| jiff::tz::TimeZone::get(n).is_ok())
        .unwrap_or_else(|| "UTC".to_owned());
    if std::env::var_os("TZ").is_some() {
        say!(
            "baton render: TZ is set in this shell; the host's zone is taken from /etc/localtime \
             ({name}), which cron and systemd use (give --host-tz to choose)"
        );
    }
    name
}
