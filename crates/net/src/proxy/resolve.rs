//! Name resolution off the event loop: getaddrinfo blocks (for as long as
//! a DNS server takes), so one resolver thread runs the lookups and hands
//! the answers back through a queue, waking the loop with a mio `Waker`.
//! Literal addresses never reach it.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A lookup's answer, for the connection (`key`, `id`) that asked.
pub struct Answer {
    pub key: usize,
    pub id: u64,
    pub addrs: io::Result<Vec<SocketAddr>>,
}

pub struct Resolver {
    requests: Option<mpsc::Sender<(usize, u64, String, u16)>>,
    answers: Arc<Mutex<Vec<Answer>>>,
    thread: Option<JoinHandle<()>>,
}

impl Resolver {
    pub fn start(waker: Arc<mio::Waker>) -> io::Result<Resolver> {
        let (tx, rx) = mpsc::channel::<(usize, u64, String, u16)>();
        let answers = Arc::new(Mutex::new(Vec::new()));
        let out = Arc::clone(&answers);
        let thread = std::thread::Builder::new()
            .name("resolver".into())
            .spawn(move || {
                for (key, id, host, port) in rx {
                    let addrs = (host.as_str(), port)
                        .to_socket_addrs()
                        .map(|a| a.collect::<Vec<_>>());
                    out.lock()
                        .expect("resolver queue")
                        .push(Answer { key, id, addrs });
                    let _ = waker.wake();
                }
            })?;
        Ok(Resolver {
            requests: Some(tx),
            answers,
            thread: Some(thread),
        })
    }

    /// Ask for `host:port` on behalf of connection (`key`, `id`).
    pub fn lookup(&self, key: usize, id: u64, host: String, port: u16) {
        if let Some(tx) = &self.requests {
            let _ = tx.send((key, id, host, port));
        }
    }

    /// The answers that arrived since the last call.
    pub fn take_answers(&self) -> Vec<Answer> {
        std::mem::take(&mut *self.answers.lock().expect("resolver queue"))
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        // Closing the channel ends the thread after its current lookup.
        self.requests = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A literal IP address (brackets allowed around IPv6) needs no lookup.
pub fn literal(host: &str, port: u16) -> Option<SocketAddr> {
    let h = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    h.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, port))
}
