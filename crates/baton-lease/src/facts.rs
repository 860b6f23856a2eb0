//! Who this process is, read once per process and shared: host name, machine
//! id, boot id, pid namespace, pid and start time. A record stamped with these
//! lets any process on the same machine judge the holder on evidence.
//!
//! The cache is keyed by pid, so a forked child never stamps its parent's
//! identity.

use std::sync::{Arc, Mutex};

use crate::sys::process::{self, SelfFacts};

static CACHE: Mutex<Option<Arc<SelfFacts>>> = Mutex::new(None);

/// This process's facts.
pub(crate) fn local() -> Arc<SelfFacts> {
    let pid = std::process::id();
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match &*cache {
        Some(f) if f.pid == pid => Arc::clone(f),
        _ => {
            let f = Arc::new(process::self_facts());
            *cache = Some(Arc::clone(&f));
            f
        }
    }
}
