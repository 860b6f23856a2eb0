//! What the benches share: the runtime a service would run the scheduler
//! on (multi-threaded, two workers, as many as this machine's cores).

use tokio::runtime::Runtime;

/// A multi-threaded runtime of two workers with its timer and I/O.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a tokio runtime")
}
