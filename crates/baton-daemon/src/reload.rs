//! Reloading the configuration: read the files, validate the whole, and
//! only then put it in force. An invalid configuration is refused, an
//! alert says why, and the old one stays; runs in flight are never
//! touched (each has its own copy). The token and `shutdown_grace` take
//! effect at once; the address, the socket and its group at the next start.
//!
//! The `[daemon]` settings are judged against the address the daemon is
//! bound to now, as well as the one it would listen on at its next start: a
//! reload never drops the token of a daemon listening off loopback, whatever
//! the new `listen` says.

use std::sync::Arc;

use axum::http::StatusCode;
use baton_sched::config::Snapshot;
use baton_sched::engine::alerts::Alert;
use baton_store::words::AlertKind;

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
        let read = crate::offload::blocking(move || {
            let snapshot = Snapshot::read(&path)?;
            let config = snapshot.load(&over)?;
            Ok::<_, baton_sched::config::ConfigError>(Loaded { snapshot, config })
        })
        .await?;
        // The `[daemon]` settings are validated with the rest: a token file
        // that cannot be read refuses the whole reload (fail closed).
        let read = read.and_then(|loaded| {
            self.same_state_dir(&loaded.config)?;
            let settings = self.settings_for(&loaded.config)?;
            Ok((loaded, settings))
        });
        match read {
            Ok((loaded, settings)) => {
                let jobs: Vec<String> = loaded.config.jobs.keys().cloned().collect();
                let mut notes = Vec::new();
                if settings.listen != self.started_with.0 {
                    notes.push(format!(
                        "[daemon] listen = {} takes effect at the next start; still listening on {}",
                        settings.listen,
                        self.bound_text()
                    ));
                }
                if settings.socket != self.socket || settings.socket_group != self.trust.group {
                    notes.push(format!(
                        "[daemon] socket and socket_group take effect at the next start; still \
                         listening on unix:{} for {}",
                        self.socket.display(),
                        self.trust.describe()
                    ));
                }
                if settings.token.is_none() && self.settings().token.is_some() {
                    notes.push(format!(
                        "without token_file, the TCP API on {} is read-only now; change things \
                         over unix:{}",
                        self.bound_text(),
                        self.socket.display()
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
                    tracing::info!("{n}");
                }
                tracing::info!("reloaded ({why}): {} job(s) in force", jobs.len());
                self.set_settings(settings);
                self.install(loaded);
                Ok(Reloaded { jobs, notes })
            }
            Err(e) => {
                let message =
                    format!("reload ({why}) refused, the configuration in force stays: {e}");
                // The alert prints it, as every alert is printed: once.
                self.alert_refused(&message).await;
                Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_config",
                    e.to_string(),
                ))
            }
        }
    }

    /// The `[daemon]` settings of `config` as this daemon would put them in
    /// force: valid at its next start, and for the address it is bound to
    /// now (which a new `listen` does not change).
    ///
    /// # Errors
    ///
    /// What [`Settings::of`] refuses, or a daemon bound off loopback left
    /// without a token.
    pub(crate) fn settings_for(
        &self,
        config: &baton_sched::config::Config,
    ) -> Result<Settings, baton_sched::config::ConfigError> {
        let invalid = |message: String| baton_sched::config::ConfigError::Invalid {
            at: self.opts.config_path.display().to_string(),
            key: "daemon".into(),
            message,
        };
        let settings =
            Settings::of(config, self.opts.listen.clone()).map_err(|e| invalid(e.to_string()))?;
        if self
            .bound
            .iter()
            .any(|a| crate::state::exposed(*a, settings.token.as_deref()))
        {
            return Err(invalid(format!(
                "this daemon listens on {} until its next start, and off loopback it needs a \
                 token: keep [daemon] token_file (restart the daemon on loopback to do without \
                 one)",
                self.bound_text()
            )));
        }
        Ok(settings)
    }

    /// Refuses a configuration whose `state_dir` is not the one in force:
    /// the locks, the ledger and the logs of the runs in flight are there,
    /// and a run started under the new one would not see them (the same
    /// job would run twice at once).
    fn same_state_dir(
        &self,
        config: &baton_sched::config::Config,
    ) -> Result<(), baton_sched::config::ConfigError> {
        let now = self.current().config.settings.state_dir.value.clone();
        let new = &config.settings.state_dir.value;
        if *new == now {
            return Ok(());
        }
        Err(baton_sched::config::ConfigError::Invalid {
            at: self.opts.config_path.display().to_string(),
            key: "scheduler.state_dir".into(),
            message: format!(
                "state_dir {} is not {}, the one in force: the locks and records of the runs in \
                 flight are there, and a run under another would not see them; restart the \
                 daemon to move it (once no run is in flight)",
                new.display(),
                now.display()
            ),
        })
    }

    /// Raises the `reload-refused` alert on the configuration in force.
    pub(crate) async fn alert_refused(self: &Arc<Self>, message: &str) {
        let loaded = self.current();
        let clock = Arc::clone(&self.clock);
        let message = message.to_owned();
        let _ = crate::offload::blocking(move || {
            let mut s =
                baton_sched::engine::surfaces::Surfaces::open(&loaded.config, Arc::clone(&clock));
            let now = s.now();
            s.alert(&Alert::scheduler(
                AlertKind::ReloadRefused,
                now.to_string(),
                message,
            ));
            s.finish();
        })
        .await;
    }
}
