//! What the examples share: reading their settings from the environment.

use std::time::Duration;

/// The milliseconds in the environment variable `name`, else `default`.
pub fn env_ms(name: &str, default: u64) -> Duration {
    Duration::from_millis(
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default),
    )
}
