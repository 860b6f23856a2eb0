//! A TCP proxy that a test can cut, to play a network partition between a
//! client and a server.
//!
//! [`Proxy::start`] listens on `127.0.0.1` at a free port and forwards every
//! connection to the upstream address. [`Proxy::cut`] makes it drop every
//! byte in both directions from then on, keeping the sockets open: the
//! client sees no error and no answer, as behind a partition (not a refused
//! or reset connection). [`Proxy::heal`] forwards again. [`Proxy::mute`]
//! drops only what the server says, so a request arrives (and may commit)
//! while its answer is lost; [`Proxy::sever`] ends every connection open now,
//! as a network that resets them does, and forwards the ones made after.
//! Dropping the proxy shuts every connection down and stops its threads.
//!
//! [`Proxy::turns`] counts round trips: how many times a client sent bytes
//! after the server had last spoken (or first). Pipelined requests sent
//! together count once. It is exact for one client whose requests are
//! written before their answers arrive, which is what it is used for.
//! [`Proxy::delay`] holds each round trip's first bytes back for a while and
//! sends them with whatever else the client wrote meanwhile, as a network
//! with that latency would see them: a batch the client writes in several
//! parts then counts once, however fast the server answers.
//! [`Proxy::connections`] counts the connections it accepted.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A cuttable TCP proxy.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    cut: Arc<AtomicBool>,
    muted: Arc<AtomicBool>,
    stopped: Arc<AtomicBool>,
    turns: Arc<Turns>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    accepted: Arc<AtomicU64>,
}

impl Proxy {
    /// Starts forwarding to `upstream`.
    ///
    /// # Panics
    ///
    /// When no local port can be bound.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("failed to bind the proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let cut = Arc::new(AtomicBool::new(false));
        let muted = Arc::new(AtomicBool::new(false));
        let stopped = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let turns = Arc::new(Turns::default());
        let (c, s, st, t) = (cut.clone(), stopped.clone(), streams.clone(), turns.clone());
        let m = muted.clone();
        let accepted = Arc::new(AtomicU64::new(0));
        let a = accepted.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                a.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let mut list = st.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                for stream in [&client, &server] {
                    if let Ok(clone) = stream.try_clone() {
                        list.push(clone);
                    }
                }
                drop(list);
                let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                let (c1, c2) = (c.clone(), c.clone());
                let (t1, t2) = (t.clone(), t.clone());
                let (m1, m2) = (m.clone(), m.clone());
                std::thread::spawn(move || pump(client, server2, &c1, &m1, &t1, true));
                std::thread::spawn(move || pump(server, client2, &c2, &m2, &t2, false));
            }
        });
        Proxy {
            addr,
            cut,
            muted,
            stopped,
            turns,
            streams,
            accepted,
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// From now on, every byte in either direction is dropped.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    /// From now on, every byte the server sends is dropped; what clients
    /// send still reaches it.
    pub fn mute(&self) {
        self.muted.store(true, Ordering::SeqCst);
    }

    /// Forwards what the server sends again (bytes dropped meanwhile stay
    /// lost).
    pub fn unmute(&self) {
        self.muted.store(false, Ordering::SeqCst);
    }

    /// Ends every connection open now, on both sides; connections made from
    /// now on are forwarded (unless the proxy is cut or muted).
    pub fn sever(&self) {
        let mut list = self
            .streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for s in list.drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Holds each round trip's request back `d` (zero: none), and sends
    /// what the client wrote meanwhile with it (see the module's
    /// description).
    pub fn delay(&self, d: std::time::Duration) {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.turns.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Round trips so far (see the module's description).
    pub fn turns(&self) -> u64 {
        self.turns.count.load(Ordering::SeqCst)
    }

    /// Forwards again (bytes dropped meanwhile stay lost).
    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
        self.muted.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        let list = self
            .streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for s in list.iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// The round-trip counter: who spoke last, and how many times the client
/// spoke after the server.
#[derive(Debug, Default)]
struct Turns {
    client_spoke_last: AtomicBool,
    count: std::sync::atomic::AtomicU64,
    /// [`Proxy::delay`], in milliseconds.
    delay_ms: AtomicU64,
}

/// What `from` has ready now, without waiting, appended to `into`.
fn drain_ready(from: &mut TcpStream, into: &mut Vec<u8>) {
    if from.set_nonblocking(true).is_err() {
        return;
    }
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        into.extend_from_slice(&buf[..n]);
    }
    let _ = from.set_nonblocking(false);
}

fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    cut: &AtomicBool,
    muted: &AtomicBool,
    turns: &Turns,
    client: bool,
) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if cut.load(Ordering::SeqCst) || (!client && muted.load(Ordering::SeqCst)) {
            continue;
        }
        let was_client = turns.client_spoke_last.swap(client, Ordering::SeqCst);
        let mut out = buf[..n].to_vec();
        if client && !was_client {
            turns.count.fetch_add(1, Ordering::SeqCst);
            let delay = turns.delay_ms.load(Ordering::SeqCst);
            if delay > 0 {
                crate::pause(delay);
                drain_ready(&mut from, &mut out);
            }
        }
        if to.write_all(&out).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// A port on `127.0.0.1` that takes TCP connections and never answers them,
/// as a frozen server does: its listener keeps every connection open, for
/// the rest of the test process.
pub fn silent_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener
        .local_addr()
        .expect("the listener's address")
        .port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    port
}
