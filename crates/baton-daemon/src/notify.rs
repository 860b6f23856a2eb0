//! systemd's notification protocol (`Type=notify`): `READY=1` once the
//! daemon listens, `STOPPING=1` at shutdown, `WATCHDOG=1` every half of
//! `WATCHDOG_USEC` when systemd asks for it. Without `NOTIFY_SOCKET`
//! nothing is sent. A failure to notify is never fatal.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

fn socket_addr(path: &str) -> Option<std::os::unix::net::SocketAddr> {
    if let Some(name) = path.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).ok()
    } else {
        std::os::unix::net::SocketAddr::from_pathname(path).ok()
    }
}

/// Sends `state` to systemd, if it listens.
pub(crate) fn send(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Some(addr) = socket_addr(&path.to_string_lossy()) else {
        return;
    };
    if let Ok(sock) = UnixDatagram::unbound() {
        let _ = sock.send_to_addr(state.as_bytes(), &addr);
    }
}

/// The watchdog's interval, when systemd set one for this process.
fn interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID")
        && pid.parse::<u32>().ok() != Some(std::process::id())
    {
        return None;
    }
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}

/// Pings the watchdog forever (returns at once without one).
pub(crate) async fn watchdog() {
    let Some(every) = interval() else { return };
    let mut t = tokio::time::interval(every);
    loop {
        t.tick().await;
        send("WATCHDOG=1");
    }
}
