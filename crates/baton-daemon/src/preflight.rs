//! What `baton doctor` says of a configuration's `[daemon]` settings
//! before any daemon starts: whether `baton daemon` would serve with them
//! (the same refusals a start makes, [`Settings::of`] and the socket's
//! path, [`crate::socket::vet`]), and what another local user could do
//! with them.
//!
//! It binds nothing, connects to nothing and changes nothing: a port in
//! use, or a socket another daemon answers on, is found only by a start.

use baton_sched::config::{Config, Listen};

use crate::state::{Settings, SettingsError};

/// The `[daemon]` settings of a configuration, as a start would take them.
#[derive(Debug, Clone)]
pub struct Preflight {
    /// Where it would listen and where its socket would be, in one line.
    pub summary: String,
    /// What to look at that does not keep it from starting.
    pub warnings: Vec<String>,
}

/// Why a start would refuse a configuration's `[daemon]` settings, said as
/// the start would say it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreflightError {
    /// The settings themselves ([`Settings::of`]).
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The socket's path: the start's refusal to listen there, as it
    /// says it.
    #[error("{0}")]
    Socket(String),
}

/// Whether `baton daemon` would serve with `config`'s `[daemon]` settings.
///
/// # Errors
///
/// [`PreflightError`]: why a start would refuse them, as it would say it.
pub fn preflight(config: &Config) -> Result<Preflight, PreflightError> {
    let settings = Settings::of(config, None)?;
    crate::socket::vet(&settings.socket).map_err(|e| PreflightError::Socket(e.to_string()))?;
    let mut warnings = Vec::new();
    let port = match &settings.listen {
        Listen::Addr(a) => a.port(),
        Listen::Host { port, .. } => *port,
    };
    if settings.token.is_some() && port >= 1024 {
        warnings.push(format!(
            "the TCP port {port} is one any local user may bind while the daemon is not \
             listening (stopped, restarting, or before it starts): whoever holds it then \
             receives the token clients send with their requests"
        ));
    }
    Ok(Preflight {
        summary: format!(
            "listens on {} and unix:{}{}",
            settings.listen,
            settings.socket.display(),
            if settings.token.is_some() {
                ", with a token"
            } else {
                " (TCP read-only: no token)"
            }
        ),
        warnings,
    })
}
