//! `baton render`: a thin adapter from parsed arguments to
//! `baton_sched::render`, and from its artefacts to stdout or files.
//!
//! The arguments first become [`Options`]: the configuration loaded, the
//! binary and the configuration's host path checked to be absolute, the
//! host's zone checked, the clock read once (through the clock chokepoint)
//! and the environment variables baton reads collected. Every refusal
//! happens there or in the renderer, as lines on stderr and exit 2, before
//! anything is written. [`write_all`] is the one place that writes
//! artefacts: each through a temporary file renamed over its name, so a
//! reader sees an old file or a whole new one.

use std::io::Write;
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
    let c = match crate::sched_cmd::load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let bin = match &a.bin {
        Some(p) => p.clone(),
        None => match std::env::current_exe() {
            Ok(p) => p,
            Err(e) => return refuse(format!("failed to find this binary (give --bin PATH): {e}")),
        },
    };
    if !bin.is_absolute() {
        return refuse(format!("--bin {} is not an absolute path", bin.display()));
    }
    let config = a.config_path_as.clone().unwrap_or_else(|| c.path.clone());
    if !config.is_absolute() {
        return refuse(format!(
            "--config-path-as {} is not an absolute path",
            config.display()
        ));
    }
    let host_zone = match &a.host_tz {
        Some(z) => match jiff::tz::TimeZone::get(z) {
            Ok(_) => z.clone(),
            Err(e) => return refuse(format!("--host-tz {z:?} is not a time zone: {e}")),
        },
        None => jiff::tz::TimeZone::try_system()
            .ok()
            .and_then(|tz| tz.iana_name().map(str::to_owned))
            .unwrap_or_else(|| "UTC".to_owned()),
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
            Ok(()) => Exit::Ok,
            Err(e) => {
                say!("baton render: {e}");
                Exit::Failure
            }
        },
        None => {
            let many = artefacts.len() > 1;
            for (i, art) in artefacts.iter().enumerate() {
                if many {
                    out!("{}# ==> {} <==\n", if i > 0 { "\n" } else { "" }, art.name);
                }
                out!("{}", art.text);
            }
            Exit::Ok
        }
    }
}

/// Writes each artefact as `dir/NAME`: a temporary file beside it, written,
/// flushed to disk and renamed over the name.
fn write_all(dir: &Path, artefacts: &[Artefact]) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("failed to create the directory {}: {e}", dir.display()))?;
    for a in artefacts {
        let path = dir.join(&a.name);
        let tmp: PathBuf = dir.join(format!(".{}.tmp-{}", a.name, std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(a.text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        if let Err(e) = write() {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!("failed to write {}: {e}", path.display()));
        }
    }
    Ok(())
}
