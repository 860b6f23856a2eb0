//! Who this process is, read once per process and shared: host name, machine
//! id, boot id, pid namespace, pid and start time. A record stamped with these
//! lets any process on the same machine judge the holder on evidence.
//!
//! The cache is keyed by pid, so a forked child never stamps its parent's
//! identity: each use costs one `getpid`, and nothing more.
//!
//! [`Observer::here`], the judge's standpoint in this process, is defined
//! here rather than beside [`Observer`]: it reads this process's facts, and
//! [`crate::decide`] reads nothing but what it is handed.

use std::sync::{Arc, Mutex};

use crate::decide::Observer;
use crate::sys::process::{self, SelfFacts};

/// This process's facts, and the same facts as a judge's standpoint.
#[derive(Debug)]
pub(crate) struct Local {
    pub(crate) me: SelfFacts,
    pub(crate) observer: Observer,
}

static CACHE: Mutex<Option<Arc<Local>>> = Mutex::new(None);

/// This process's facts.
pub(crate) fn local() -> Arc<Local> {
    let pid = std::process::id();
    if let Some(f) = cached().filter(|f| f.me.pid == pid) {
        return f;
    }
    // Read outside the lock, so a fork while it is held cannot strand a
    // child that uses the library.
    let me = process::self_facts();
    let observer = Observer {
        host: me.host.clone(),
        machine: me.machine.clone(),
        boot: me.boot.clone(),
        pidns: me.pidns,
    };
    let f = Arc::new(Local { me, observer });
    *CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&f));
    f
}

impl Observer {
    /// The process this code runs in.
    pub fn here() -> Self {
        local().observer.clone()
    }
}

fn cached() -> Option<Arc<Local>> {
    CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}
