//! Reloading the configuration: read the files, validate the whole, and
//! only then put it in force. An invalid configuration is refused, an
//! alert says why, and the old one stays; runs in flight are never
//! touched (each has its own copy). `[daemon]` settings (the address, the
//! token) take effect at the next start.

use std::sync::Arc;

use axum::http::StatusCode;
use baton_sched::alerts::{Alert, Kind};
use baton_sched::config::Snapshot;

use crate::error::ApiError;
use crate::state::{Daemon, Loaded, Settings};

/// What a reload put in force.
#[derive(Debug)]
pub(crate) struct Reloaded {
    /// The jobs now in force.
    pub(crate) jobs: Vec<String>,
    /// What did not take effect, and why.
    pub(crate) notes: Vec<String>,
}

impl Daemon {
    /// Reloads; the jobs now in force, or why not.
    pub(crate) async fn reload(self: &Arc<Self>, why: &'static str) -> Result<Reloaded, ApiError> {
        let _one = self.reloading.lock().await;
        self.reload_locked(why).await
    }

    /// Reloads, the caller holding `reloading`.
    pub(crate) async fn reload_locked(
        self: &Arc<Self>,
        why: &'static str,
    ) -> Result<Reloaded, ApiError> {
        let (path, over) = (self.opts.config_path.clone(), self.over.clone());
        let read = crate::api::blocking(move || {
            let snapshot = Snapshot::read(&path)?;
            let config = snapshot.load(&over)?;
            Ok::<_, baton_sched::config::ConfigError>(Loaded { snapshot, config })
        })
        .await?;
        // The `[daemon]` settings are validated with the rest: a token file
        // that cannot be read refuses the whole reload (fail closed).
        let read = read.and_then(|loaded| {
            let settings = Settings::of(&loaded.config, self.opts.listen).map_err(|e| {
                baton_sched::config::ConfigError::Invalid {
                    at: self.opts.config_path.display().to_string(),
                    key: "daemon".into(),
                    message: e,
                }
            })?;
            Ok((loaded, settings))
        });
        match read {
            Ok((loaded, settings)) => {
                let jobs: Vec<String> = loaded.config.jobs.keys().cloned().collect();
                let mut notes = Vec::new();
                if settings.listen != self.started_with.0 {
                    notes.push(format!(
                        "[daemon] listen = {} takes effect at the next start; still listening on {}",
                        settings.listen, self.bound
                    ));
                }
                let slots = loaded.config.settings.max_parallel.value;
                if slots != self.started_with.1 {
                    notes.push(format!(
                        "max_parallel = {slots} takes effect at the next start; {} in force",
                        self.started_with.1
                    ));
                }
                for n in &notes {
                    crate::say(format_args!("{n}"));
                }
                crate::say(format_args!(
                    "reloaded ({why}): {} job(s) in force",
                    jobs.len()
                ));
                self.set_settings(settings);
                self.install(loaded);
                Ok(Reloaded { jobs, notes })
            }
            Err(e) => {
                let message =
                    format!("reload ({why}) refused, the configuration in force stays: {e}");
                crate::say(format_args!("{message}"));
                self.alert_refused(&message).await;
                Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_config",
                    e.to_string(),
                ))
            }
        }
    }

    /// Raises the `reload-refused` alert on the configuration in force.
    pub(crate) async fn alert_refused(self: &Arc<Self>, message: &str) {
        let loaded = self.current();
        let clock = Arc::clone(&self.clock);
        let message = message.to_owned();
        let _ = crate::api::blocking(move || {
            let mut s = baton_sched::surfaces::Surfaces::open(&loaded.config, Arc::clone(&clock));
            let now = s.now();
            s.alert(&Alert::scheduler(
                Kind::ReloadRefused,
                now.to_string(),
                message,
            ));
            s.finish();
        })
        .await;
    }
}
