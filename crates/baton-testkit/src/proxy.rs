//! A TCP proxy that a test can cut, to play a network partition between a
//! client and a server.
//!
//! [`Proxy::start`] listens on `127.0.0.1` at a free port and forwards every
//! connection to the upstream address. [`Proxy::cut`] makes it drop every
//! byte in both directions from then on, keeping the sockets open: the
//! client sees no error and no answer, as behind a partition (not a refused
//! or reset connection). [`Proxy::heal`] forwards again. Dropping the proxy
//! shuts every connection down and stops its threads.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A cuttable TCP proxy.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    cut: Arc<AtomicBool>,
    stopped: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
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
        let stopped = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let (c, s, st) = (cut.clone(), stopped.clone(), streams.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
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
                std::thread::spawn(move || pump(client, server2, &c1));
                std::thread::spawn(move || pump(server, client2, &c2));
            }
        });
        Proxy {
            addr,
            cut,
            stopped,
            streams,
        }
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// From now on, every byte in either direction is dropped.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    /// Forwards again (bytes dropped meanwhile stay lost).
    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
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

fn pump(mut from: TcpStream, mut to: TcpStream, cut: &AtomicBool) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if cut.load(Ordering::SeqCst) {
            continue;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
