//! The proxy's one event-loop thread (mio, edge-triggered epoll).
//!
//! Each connection is one slab entry with two tokens: `key·2` for the
//! client socket, `key·2 + 1` for the upstream socket. Any event on either
//! drives the whole connection as far as it can go without blocking
//! (handshake → resolve → connect → relay), so no readiness is lost under
//! edge triggering: every step retries until the kernel says EAGAIN, or
//! stops on a full pipe whose draining is retried in the same turn.
//! Timers (connect and idle timeouts, the lingering close of a refused
//! client, the drain after SIGTERM) are checked by a sweep every
//! [`TICK_NS`], which is cheap next to the per-byte work even at 10^4
//! connections.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use mio::net::{TcpListener as MioListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;

use super::events::{ConnectionRecord, EventLog};
use super::metrics::Metrics;
use super::observer::{AcceptedConnection, ConnectionObserver};
use super::relay::{is_reset, PipePool, Pump, PumpError, COPY_CHUNK_BYTES};
use super::resolve::{self, Resolver};
use super::sock::{self, ListenProtocol};
use super::{http, socks5, ProxyMode, ProxyOptions};
use crate::clock;

const LISTENER: Token = Token(usize::MAX - 1);
const METRICS_LISTENER: Token = Token(usize::MAX - 2);
const WAKER: Token = Token(usize::MAX - 3);
/// Metrics clients' tokens start here (connection tokens stay far below).
const METRICS_CLIENT_BASE: usize = 1 << 40;
/// Timer sweep period.
pub const TICK_NS: u64 = 50_000_000;
/// How long a refused client may take to read the refusal and close.
const LINGER_NS: u64 = 1_000_000_000;
const LISTEN_BACKLOG: i32 = 4096;
/// Empty pipes kept for reuse (two fds each).
const SPARE_PIPES: usize = 64;

/// What woke a connection: which socket and what it reported. A relaying
/// connection runs only the pumps this concerns, so a small message costs
/// no EAGAIN probe of the idle direction: the client readable runs the
/// up pump (client → upstream), the upstream readable the down pump.
/// Writable matters only to a pump held back by a full destination: epoll
/// reports EPOLLOUT with every wakeup of a socket with room in its send
/// buffer (the mask is polled afresh when the event is collected), so it
/// says nothing new to a pump that is not waiting for it; a pump that is
/// waiting got EAGAIN from send, and the kernel wakes the socket when
/// room comes back. `All` (an accept, an established connect, a
/// resolver answer, an error) runs both, each to EAGAIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wake {
    All,
    Socket {
        upstream: bool,
        readable: bool,
        writable: bool,
        /// Readable and not read-closed: a short read drains the source.
        read_open: bool,
    },
}

impl Wake {
    fn from_event(ev: &mio::event::Event) -> Wake {
        if ev.is_error() {
            return Wake::All;
        }
        Wake::Socket {
            upstream: ev.token().0 & 1 == 1,
            readable: ev.is_readable() || ev.is_read_closed(),
            writable: ev.is_writable() || ev.is_write_closed(),
            read_open: ev.is_readable() && !ev.is_read_closed(),
        }
    }

    /// (run, short_read_drains) for the up (client → upstream) and the
    /// down (upstream → client) pump, given whether each holds bytes its
    /// destination did not take.
    fn pumps(self, up_held: bool, down_held: bool) -> [(bool, bool); 2] {
        match self {
            Wake::All => [(true, false), (true, false)],
            Wake::Socket {
                upstream,
                readable,
                writable,
                read_open,
            } => {
                // The pump whose source woke reads; the one whose
                // destination woke writes what it holds and then reads on
                // to EAGAIN (its source's edge may have passed meanwhile).
                let from_source = (readable, read_open);
                let (up, down) = if upstream {
                    ((writable && up_held, false), from_source)
                } else {
                    (from_source, (writable && down_held, false))
                };
                [up, down]
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Reading the client's HTTP head or SOCKS request.
    Handshake,
    Resolving,
    Connecting,
    Relaying,
    /// Writing a refusal (400/431/502, a SOCKS failure), then a lingering
    /// close: our FIN, and the client's bytes discarded until its FIN.
    Refusing,
}

/// How the first request asked to be served (what to answer once the
/// upstream is up, or when it fails).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Request {
    Fixed,
    HttpForward,
    HttpConnect,
    Socks,
}

/// Why a connection ends: the record's `close` (an error kind of
/// [`super::metrics::ERROR_KINDS`], or "done"/"client_gone"), and which
/// sides get a reset instead of a FIN.
struct Ending {
    kind: &'static str,
    error: Option<String>,
    reset_client: bool,
    reset_upstream: bool,
}

impl Ending {
    fn clean(kind: &'static str) -> Ending {
        Ending {
            kind,
            error: None,
            reset_client: false,
            reset_upstream: false,
        }
    }
    fn error(kind: &'static str, e: impl ToString) -> Ending {
        Ending {
            kind,
            error: Some(e.to_string()),
            reset_client: false,
            reset_upstream: false,
        }
    }
}

struct Conn {
    id: u64,
    client: TcpStream,
    client_addr: SocketAddr,
    client_mptcp: bool,
    upstream: Option<TcpStream>,
    upstream_addr: Option<SocketAddr>,
    phase: Phase,
    request: Request,
    /// Handshake bytes read so far.
    inbuf: Vec<u8>,
    socks_greeted: bool,
    target: Option<String>,
    /// Addresses still to try, and the last connect error.
    candidates: Vec<SocketAddr>,
    connect_error: Option<io::Error>,
    /// Client → upstream, upstream → client.
    up: Pump,
    down: Pump,
    /// Refusal bytes for the client, and how many are written.
    refusal: Vec<u8>,
    refusal_sent: usize,
    refusal_shut: bool,
    /// The error kind a refusal ends with.
    refusal_kind: &'static str,
    refusal_error: Option<String>,
    accepted_ns: u64,
    accepted_unix_ns: u64,
    connect_start_ns: Option<u64>,
    established_ns: Option<u64>,
    last_activity_ns: u64,
    /// Connect (whole resolve + connect) or linger deadline.
    deadline_ns: u64,
}

struct MetricsClient {
    stream: TcpStream,
    request: Vec<u8>,
}

/// The running proxy.
pub struct Proxy<'o> {
    opts: ProxyOptions,
    observer: &'o mut dyn ConnectionObserver,
    poll: Poll,
    listener: Option<MioListener>,
    metrics_listener: Option<MioListener>,
    metrics_clients: Slab<MetricsClient>,
    conns: Slab<Conn>,
    resolver: Resolver,
    events: EventLog,
    metrics: Metrics,
    pipes: PipePool,
    /// The copying pumps' buffer, shared: a pump keeps no bytes in it
    /// between calls.
    scratch: Vec<u8>,
    next_id: u64,
    /// Accepting stopped on EMFILE/ENFILE: retry at the next tick.
    accept_blocked: bool,
    /// Connections (key, id) whose pump yielded on its turn budget (relay.rs):
    /// driven again after this turn's events, and the next epoll_wait does
    /// not sleep while any are listed.
    yielded: Vec<(usize, u64)>,
    draining_until_ns: Option<u64>,
}

impl<'o> Proxy<'o> {
    /// Bind the listeners, print the ready line.
    pub fn start(opts: &ProxyOptions, observer: &'o mut dyn ConnectionObserver) -> Result<Proxy<'o>, String> {
        sock::raise_nofile_limit();
        let poll = Poll::new().map_err(|e| format!("epoll: {e}"))?;
        let (listener, protocol) = sock::listen(opts.listen, opts.mptcp, LISTEN_BACKLOG)
            .map_err(|e| format!("cannot listen on {}: {e}", opts.listen))?;
        if opts.mptcp && protocol == ListenProtocol::Tcp && !opts.quiet {
            eprintln!(
                "note: the kernel refused an MPTCP socket (net.mptcp.enabled = 0?); listening with plain TCP"
            );
        }
        let listen_addr = listener.local_addr().map_err(|e| e.to_string())?;
        let mut listener = MioListener::from_std(listener);
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(|e| format!("epoll: {e}"))?;
        let mut metrics_addr = None;
        let metrics_listener = match opts.metrics {
            Some(addr) => {
                let l =
                    TcpListener::bind(addr).map_err(|e| format!("cannot listen on --metrics {addr}: {e}"))?;
                l.set_nonblocking(true).map_err(|e| e.to_string())?;
                metrics_addr = Some(l.local_addr().map_err(|e| e.to_string())?);
                let mut l = MioListener::from_std(l);
                poll.registry()
                    .register(&mut l, METRICS_LISTENER, Interest::READABLE)
                    .map_err(|e| format!("epoll: {e}"))?;
                Some(l)
            }
            None => None,
        };
        let waker = Arc::new(Waker::new(poll.registry(), WAKER).map_err(|e| format!("epoll: {e}"))?);
        let resolver = Resolver::start(waker).map_err(|e| format!("resolver thread: {e}"))?;
        let events = EventLog::open(opts.events.as_deref()).map_err(|e| {
            format!(
                "--events {}: {e}",
                opts.events
                    .as_deref()
                    .unwrap_or(std::path::Path::new(""))
                    .display()
            )
        })?;
        let ready = serde_json::json!({
            "event": "ready",
            "listen": listen_addr.to_string(),
            "protocol": protocol.name(),
            "mode": opts.mode.name(),
            "metrics": metrics_addr.map(|a| a.to_string()),
            "pid": std::process::id(),
        });
        println!("{ready}");
        let _ = io::stdout().flush();
        Ok(Proxy {
            opts: opts.clone(),
            observer,
            poll,
            listener: Some(listener),
            metrics_listener,
            metrics_clients: Slab::new(),
            conns: Slab::new(),
            resolver,
            events,
            metrics: Metrics::default(),
            pipes: PipePool::new(opts.buffer_bytes, SPARE_PIPES),
            scratch: vec![0; COPY_CHUNK_BYTES.min(opts.buffer_bytes)],
            next_id: 1,
            accept_blocked: false,
            yielded: Vec::new(),
            draining_until_ns: None,
        })
    }

    /// The loop; returns after SIGINT/SIGTERM once every connection closed
    /// (or the grace period ended).
    pub fn run(mut self) -> Result<(), String> {
        let mut events = Events::with_capacity(1024);
        let mut next_tick = clock::now_ns() + TICK_NS;
        loop {
            let now = clock::now_ns();
            let timeout = match self.yielded.is_empty() {
                true => Duration::from_nanos(next_tick.saturating_sub(now).max(1)),
                false => Duration::ZERO,
            };
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(format!("epoll_wait: {e}"));
                }
            }
            let now = clock::now_ns();
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept(),
                    METRICS_LISTENER => self.accept_metrics(),
                    WAKER => self.resolved(now),
                    Token(t) if t >= METRICS_CLIENT_BASE => self.serve_metrics(t - METRICS_CLIENT_BASE),
                    Token(t) => self.drive(t >> 1, now, Wake::from_event(ev)),
                }
            }
            // After everyone with an event had a turn: those that yielded.
            // Both pumps, to EAGAIN or the budget again (no edge will come
            // for bytes already waiting). The id guards against a key that
            // was closed and reused meanwhile.
            for (key, id) in std::mem::take(&mut self.yielded) {
                if self.conns.get(key).is_some_and(|c| c.id == id) {
                    self.drive(key, now, Wake::All);
                }
            }
            if clock::stop_requested() && self.draining_until_ns.is_none() {
                self.start_drain(now);
            }
            if now >= next_tick {
                next_tick = now + TICK_NS;
                self.tick(now);
                if let Some(until) = self.draining_until_ns {
                    if self.conns.is_empty() || now >= until {
                        break;
                    }
                }
            }
        }
        let keys: Vec<usize> = self.conns.iter().map(|(k, _)| k).collect();
        for key in keys {
            self.close(key, Ending::clean("shutdown"), clock::now_ns());
        }
        self.events.flush().map_err(|e| format!("--events: {e}"))?;
        if !self.opts.quiet {
            let m = &self.metrics;
            eprintln!(
                "proxy: {} connections accepted, {} refused; {} bytes client→server, {} server→client",
                m.accepted, m.refused, m.bytes_c2s, m.bytes_s2c
            );
        }
        Ok(())
    }

    /// SIGTERM: stop accepting; open connections get the grace period.
    fn start_drain(&mut self, now: u64) {
        if let Some(mut l) = self.listener.take() {
            let _ = self.poll.registry().deregister(&mut l);
        }
        self.draining_until_ns = Some(now + self.opts.grace_ns);
        if !self.opts.quiet {
            eprintln!(
                "proxy: stopping: {} connections open, grace {:.1} s",
                self.conns.len(),
                self.opts.grace_ns as f64 * 1e-9
            );
        }
    }

    fn accept(&mut self) {
        loop {
            let Some(listener) = &self.listener else { return };
            let (mut stream, client_addr) = match listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                    // Out of fds: the connection stays in the backlog; no
                    // new edge will come for it, so the tick retries.
                    self.accept_blocked = true;
                    self.metrics.count_error("io_error");
                    return;
                }
                Err(_) => {
                    // ECONNABORTED and the like: that client is gone.
                    self.metrics.count_error("io_error");
                    continue;
                }
            };
            // Each accept gets its own clock reading: a turn may accept many.
            let now = clock::now_ns();
            let id = self.next_id;
            self.next_id += 1;
            let client_mptcp = sock::is_mptcp(stream.as_raw_fd());
            if self.conns.len() >= self.opts.max_connections {
                self.metrics.refused += 1;
                let record = ConnectionRecord {
                    event: "refused",
                    id,
                    mode: self.opts.mode.name(),
                    client: client_addr.to_string(),
                    client_mptcp,
                    accepted_unix_ns: unix_ns(),
                    close: "max_connections",
                    ..Default::default()
                };
                let _ = self.events.write(&record);
                continue;
            }
            let entry = self.conns.vacant_entry();
            let key = entry.key();
            if self
                .poll
                .registry()
                .register(
                    &mut stream,
                    Token(key << 1),
                    Interest::READABLE | Interest::WRITABLE,
                )
                .is_err()
            {
                self.metrics.count_error("io_error");
                continue;
            }
            let _ = stream.set_nodelay(true);
            if let (true, Some(bytes)) = (client_mptcp, self.opts.mptcp_sndbuf_bytes) {
                // A larger buffer than autotuning's keeps a bulk download to
                // an MPTCP client from stalling, and the low-water mark keeps
                // what is not yet sent small (args.rs, --mptcp-sndbuf-bytes).
                // A refusal leaves autotuning, which still works.
                let _ = sock::hold_mptcp_send_buffer(stream.as_raw_fd(), bytes);
            }
            let request = match self.opts.mode {
                ProxyMode::Fixed(_) => Request::Fixed,
                ProxyMode::Http => Request::HttpForward,
                ProxyMode::Socks5 => Request::Socks,
            };
            let info = AcceptedConnection {
                id,
                client_fd: stream.as_raw_fd(),
                client_addr,
                local_addr: stream.local_addr().ok(),
                client_mptcp,
            };
            entry.insert(Conn {
                id,
                client: stream,
                client_addr,
                client_mptcp,
                upstream: None,
                upstream_addr: None,
                phase: Phase::Handshake,
                request,
                inbuf: Vec::new(),
                socks_greeted: false,
                target: None,
                candidates: Vec::new(),
                connect_error: None,
                up: Pump::new(Vec::new()),
                down: Pump::new(Vec::new()),
                refusal: Vec::new(),
                refusal_sent: 0,
                refusal_shut: false,
                refusal_kind: "done",
                refusal_error: None,
                accepted_ns: now,
                accepted_unix_ns: unix_ns(),
                connect_start_ns: None,
                established_ns: None,
                last_activity_ns: now,
                deadline_ns: u64::MAX,
            });
            self.metrics.accepted += 1;
            self.metrics.active += 1;
            self.observer.on_accept(&info);
            if let ProxyMode::Fixed(addr) = self.opts.mode {
                let conn = &mut self.conns[key];
                conn.target = Some(addr.to_string());
                conn.candidates = vec![addr];
                conn.deadline_ns = now + self.opts.connect_timeout_ns;
                if let Err(ending) = self.try_connect(key) {
                    self.close(key, ending, now);
                    continue;
                }
            }
            self.drive(key, now, Wake::All);
        }
    }

    /// Move connection `key` as far as it goes now.
    fn drive(&mut self, key: usize, now: u64, wake: Wake) {
        if !self.conns.contains(key) {
            return;
        }
        if let Err(ending) = self.step(key, now, wake) {
            self.close(key, ending, now);
        }
    }

    /// One drive; Err: close the connection.
    fn step(&mut self, key: usize, now: u64, wake: Wake) -> Result<(), Ending> {
        // A connection that just reached Relaying runs both pumps: the
        // client may have sent while the upstream was connecting.
        let mut wake = wake;
        loop {
            let phase = self.conns[key].phase;
            match phase {
                Phase::Handshake => {
                    if !self.read_handshake(key, now)? {
                        return Ok(());
                    }
                    wake = Wake::All;
                }
                Phase::Resolving => return Ok(()),
                Phase::Connecting => {
                    if !self.check_connect(key, now)? {
                        return Ok(());
                    }
                    wake = Wake::All;
                }
                Phase::Relaying => return self.relay(key, now, wake),
                Phase::Refusing => return self.refuse_step(key),
            }
        }
    }

    /// Read and parse the first request. Ok(true): the phase changed.
    fn read_handshake(&mut self, key: usize, now: u64) -> Result<bool, Ending> {
        let max = self.opts.max_header_bytes;
        let conn = &mut self.conns[key];
        let mut buf = [0u8; 4096];
        let mut eof = false;
        while conn.inbuf.len() < max {
            let want = (max - conn.inbuf.len()).min(buf.len());
            match conn.client.read(&mut buf[..want]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    if conn.inbuf.is_empty() {
                        conn.up.first_in_ns = Some(clock::now_ns());
                    }
                    conn.inbuf.extend_from_slice(&buf[..n]);
                    conn.last_activity_ns = now;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(client_error(e)),
            }
        }
        match conn.request {
            Request::Socks => self.socks_handshake(key, now, eof),
            _ => self.http_handshake(key, now, eof),
        }
    }

    fn http_handshake(&mut self, key: usize, now: u64, eof: bool) -> Result<bool, Ending> {
        let conn = &mut self.conns[key];
        if conn.inbuf.is_empty() && eof {
            return Err(Ending::clean("client_gone"));
        }
        match http::parse(&conn.inbuf, self.opts.max_header_bytes) {
            http::Parsed::Partial if eof => {
                conn.start_refusal(
                    http::error_response(400),
                    "bad_request",
                    "closed inside the request head",
                );
                Ok(true)
            }
            http::Parsed::Partial => Ok(false),
            http::Parsed::Refuse { status, why } => {
                let kind = if status == 431 {
                    "header_too_large"
                } else {
                    "bad_request"
                };
                conn.start_refusal(http::error_response(status), kind, why);
                Ok(true)
            }
            http::Parsed::Tunnel { host, port, rest } => {
                conn.request = Request::HttpConnect;
                let first_in = conn.up.first_in_ns;
                conn.up = Pump::new(rest);
                conn.up.first_in_ns = first_in;
                self.start_connect(key, host, port, now)?;
                Ok(true)
            }
            http::Parsed::Forward { host, port, head } => {
                let first_in = conn.up.first_in_ns;
                conn.up = Pump::new(head);
                conn.up.first_in_ns = first_in;
                conn.down.hold_fin_until_data = true;
                self.start_connect(key, host, port, now)?;
                Ok(true)
            }
        }
    }

    fn socks_handshake(&mut self, key: usize, now: u64, eof: bool) -> Result<bool, Ending> {
        let conn = &mut self.conns[key];
        let parsed = socks5::parse(&conn.inbuf);
        if eof
            && !matches!(
                parsed,
                socks5::Parsed::Connect { .. } | socks5::Parsed::Refuse { .. }
            )
        {
            return Err(Ending::clean("client_gone"));
        }
        match parsed {
            socks5::Parsed::Partial => Ok(false),
            socks5::Parsed::Greeted => {
                if conn.inbuf.len() >= self.opts.max_header_bytes {
                    conn.start_refusal(Vec::new(), "header_too_large", "SOCKS request too large");
                    return Ok(true);
                }
                conn.send_method_reply()?;
                Ok(false)
            }
            socks5::Parsed::Refuse { reply, why } => {
                let kind = if reply.len() == 2 || matches!(reply.get(1), Some(7) | Some(8)) {
                    "unsupported"
                } else {
                    "bad_request"
                };
                if reply.len() > 2 {
                    conn.send_method_reply()?;
                }
                conn.start_refusal(reply, kind, why);
                Ok(true)
            }
            socks5::Parsed::Connect { target, rest } => {
                conn.send_method_reply()?;
                let first_in = conn.up.first_in_ns;
                conn.up = Pump::new(rest);
                conn.up.first_in_ns = first_in;
                let (host, port) = match target {
                    socks5::Target::Addr(a) => (a.ip().to_string(), a.port()),
                    socks5::Target::Domain(d, p) => (d, p),
                };
                self.start_connect(key, host, port, now)?;
                Ok(true)
            }
        }
    }

    /// Resolve `host` (unless literal) and connect.
    fn start_connect(&mut self, key: usize, host: String, port: u16, now: u64) -> Result<(), Ending> {
        let conn = &mut self.conns[key];
        conn.target = Some(if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        });
        conn.deadline_ns = now + self.opts.connect_timeout_ns;
        conn.connect_start_ns = Some(clock::now_ns());
        match resolve::literal(&host, port) {
            Some(addr) => {
                conn.candidates = vec![addr];
                self.try_connect(key)
            }
            None => {
                conn.phase = Phase::Resolving;
                self.resolver.lookup(key, conn.id, host, port);
                Ok(())
            }
        }
    }

    /// Answers from the resolver thread.
    fn resolved(&mut self, now: u64) {
        for answer in self.resolver.take_answers() {
            let Some(conn) = self.conns.get_mut(answer.key) else {
                continue;
            };
            if conn.id != answer.id || conn.phase != Phase::Resolving {
                continue;
            }
            let result = match answer.addrs {
                Ok(addrs) if !addrs.is_empty() => {
                    conn.candidates = addrs;
                    conn.candidates.reverse();
                    self.try_connect(answer.key)
                }
                Ok(_) => {
                    let e = io::Error::new(io::ErrorKind::NotFound, "no address for the name");
                    self.connect_failed(answer.key, "resolve_failed", e)
                }
                Err(e) => {
                    let e = io::Error::new(io::ErrorKind::NotFound, e.to_string());
                    self.connect_failed(answer.key, "resolve_failed", e)
                }
            };
            match result {
                Ok(()) => self.drive(answer.key, now, Wake::All),
                Err(ending) => self.close(answer.key, ending, now),
            }
        }
    }

    /// Start a non-blocking connect to the next candidate address.
    fn try_connect(&mut self, key: usize) -> Result<(), Ending> {
        loop {
            let conn = &mut self.conns[key];
            let Some(addr) = conn.candidates.pop() else {
                let e = conn
                    .connect_error
                    .take()
                    .unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"));
                let kind = connect_error_kind(&e);
                return self.connect_failed(key, kind, e);
            };
            conn.connect_start_ns.get_or_insert_with(clock::now_ns);
            match TcpStream::connect(addr) {
                Ok(mut stream) => {
                    if let Err(e) = self.poll.registry().register(
                        &mut stream,
                        Token(key << 1 | 1),
                        Interest::READABLE | Interest::WRITABLE,
                    ) {
                        return Err(Ending::error("io_error", e));
                    }
                    conn.upstream = Some(stream);
                    conn.upstream_addr = Some(addr);
                    conn.phase = Phase::Connecting;
                    return Ok(());
                }
                Err(e) => conn.connect_error = Some(e),
            }
        }
    }

    /// Whether the upstream connect finished. Ok(true): the phase changed.
    fn check_connect(&mut self, key: usize, now: u64) -> Result<bool, Ending> {
        let conn = &mut self.conns[key];
        let stream = conn.upstream.as_mut().expect("connecting has an upstream");
        if let Some(e) = sock::take_error(stream.as_raw_fd()) {
            let _ = self.poll.registry().deregister(stream);
            conn.upstream = None;
            conn.connect_error = Some(e);
            self.try_connect(key)?;
            return Ok(true);
        }
        match stream.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return Ok(false),
            Err(e) => {
                let _ = self.poll.registry().deregister(stream);
                conn.upstream = None;
                conn.connect_error = Some(e);
                self.try_connect(key)?;
                return Ok(true);
            }
        }
        conn.established_ns = Some(clock::now_ns());
        let _ = stream.set_nodelay(true);
        conn.last_activity_ns = now;
        let upstream_fd = stream.as_raw_fd();
        let bound = stream.local_addr().ok();
        match conn.request {
            Request::HttpConnect => conn.down = Pump::new(http::CONNECT_ESTABLISHED.to_vec()),
            Request::Socks => conn.down = Pump::new(socks5::reply(socks5::REP_SUCCEEDED, bound)),
            Request::Fixed | Request::HttpForward => {}
        }
        // recv(2), not splice(2), from a live MPTCP client (relay.rs says why).
        conn.up.copy_source = conn.client_mptcp;
        conn.phase = Phase::Relaying;
        if let (Some(start), Some(up)) = (conn.connect_start_ns, conn.established_ns) {
            self.metrics.connect_time.observe_ns(up.saturating_sub(start));
        }
        self.observer
            .on_established(conn.id, conn.client.as_raw_fd(), upstream_fd);
        Ok(true)
    }

    /// The upstream cannot be reached: tell the client in its protocol.
    fn connect_failed(&mut self, key: usize, kind: &'static str, e: io::Error) -> Result<(), Ending> {
        let conn = &mut self.conns[key];
        let why = format!("upstream {}: {e}", conn.target.as_deref().unwrap_or("?"));
        match conn.request {
            // A fixed upstream has no reply format: the client sees a FIN.
            Request::Fixed => Err(Ending::error(kind, why)),
            Request::HttpForward | Request::HttpConnect => {
                conn.start_refusal(http::error_response(502), kind, why);
                Ok(())
            }
            Request::Socks => {
                conn.start_refusal(socks5::reply(socks5::reply_code_for(&e), None), kind, why);
                Ok(())
            }
        }
    }

    fn relay(&mut self, key: usize, now: u64, wake: Wake) -> Result<(), Ending> {
        let conn = &mut self.conns[key];
        let client_fd = conn.client.as_raw_fd();
        let upstream_fd = conn
            .upstream
            .as_ref()
            .expect("relaying has an upstream")
            .as_raw_fd();
        let before = (conn.up.bytes_out, conn.down.bytes_out);
        let [(run_up, up_drains), (run_down, down_drains)] =
            wake.pumps(conn.up.buffered_bytes() > 0, conn.down.buffered_bytes() > 0);
        let (pipes, scratch) = (&mut self.pipes, &mut self.scratch[..]);
        let up = match run_up {
            true => conn
                .up
                .run(client_fd, upstream_fd, now, pipes, scratch, up_drains),
            false => Ok(false),
        };
        let down = match run_down {
            true => conn
                .down
                .run(upstream_fd, client_fd, now, pipes, scratch, down_drains),
            false => Ok(false),
        };
        if (conn.up.bytes_out, conn.down.bytes_out) != before || up.as_ref().is_ok_and(|&m| m) {
            conn.last_activity_ns = now;
        }
        let died_before_response = conn.request == Request::HttpForward && conn.down.bytes_in == 0;
        for (result, from_client) in [(up, true), (down, false)] {
            let Err(err) = result else { continue };
            // Which side failed: the source of the up pump is the client.
            let (client_side, e) = match err {
                PumpError::Source(e) => (from_client, e),
                PumpError::Destination(e) => (!from_client, e),
                PumpError::Pipe(e) => return Err(Ending::error("io_error", format!("pipe: {e}"))),
            };
            if !client_side && died_before_response {
                conn.start_refusal(
                    http::error_response(502),
                    "upstream_reset",
                    format!("upstream: {e}"),
                );
                return self.refuse_step(key);
            }
            let reset = is_reset(&e);
            let kind = match (client_side, reset) {
                (true, true) => "client_reset",
                (false, true) => "upstream_reset",
                _ => "io_error",
            };
            // A reset is passed on as a reset (SO_LINGER 0 on the other side).
            return Err(Ending {
                kind,
                error: Some(format!(
                    "{}: {e}",
                    if client_side { "client" } else { "upstream" }
                )),
                reset_client: !client_side && reset,
                reset_upstream: client_side && reset,
            });
        }
        if died_before_response && conn.down.source_eof {
            conn.start_refusal(
                http::error_response(502),
                "upstream_reset",
                "upstream closed before a response",
            );
            return self.refuse_step(key);
        }
        if conn.up.finished() && conn.down.finished() {
            return Err(Ending::clean("done"));
        }
        if conn.up.yielded || conn.down.yielded {
            self.yielded.push((key, conn.id));
        }
        Ok(())
    }

    /// Write the refusal, send our FIN, discard until the client's FIN.
    fn refuse_step(&mut self, key: usize) -> Result<(), Ending> {
        let conn = &mut self.conns[key];
        if let Some(mut up) = conn.upstream.take() {
            let _ = self.poll.registry().deregister(&mut up);
        }
        while conn.refusal_sent < conn.refusal.len() {
            match conn.client.write(&conn.refusal[conn.refusal_sent..]) {
                Ok(n) => conn.refusal_sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(conn.refusal_ending()),
            }
        }
        if !conn.refusal_shut {
            sock::shutdown_write(conn.client.as_raw_fd());
            conn.refusal_shut = true;
        }
        let mut buf = [0u8; 4096];
        loop {
            match conn.client.read(&mut buf) {
                Ok(0) => return Err(conn.refusal_ending()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(conn.refusal_ending()),
            }
        }
    }

    /// Timeouts, the retry of a blocked accept, the observer's tick.
    fn tick(&mut self, now: u64) {
        let idle = self.opts.idle_timeout_ns;
        let mut expired = Vec::new();
        for (key, conn) in self.conns.iter() {
            let late = match conn.phase {
                Phase::Resolving | Phase::Connecting | Phase::Refusing => now >= conn.deadline_ns,
                Phase::Handshake | Phase::Relaying => {
                    idle.is_some_and(|idle| now.saturating_sub(conn.last_activity_ns) >= idle)
                }
            };
            if late {
                expired.push(key);
            }
        }
        for key in expired {
            let conn = &mut self.conns[key];
            match conn.phase {
                Phase::Resolving | Phase::Connecting => {
                    if let Some(mut up) = conn.upstream.take() {
                        let _ = self.poll.registry().deregister(&mut up);
                    }
                    conn.candidates.clear();
                    let e = io::Error::from_raw_os_error(libc::ETIMEDOUT);
                    match self.connect_failed(key, "connect_timeout", e) {
                        Ok(()) => self.drive(key, now, Wake::All),
                        Err(ending) => self.close(key, ending, now),
                    }
                }
                Phase::Refusing => {
                    let ending = conn.refusal_ending();
                    self.close(key, ending, now)
                }
                Phase::Handshake | Phase::Relaying => self.close(key, Ending::clean("idle_timeout"), now),
            }
        }
        if self.accept_blocked {
            self.accept_blocked = false;
            self.accept();
        }
        self.observer.on_tick(now);
        let _ = self.events.flush();
    }

    fn close(&mut self, key: usize, ending: Ending, now: u64) {
        let Some(mut conn) = self.conns.try_remove(key) else {
            return;
        };
        let registry = self.poll.registry();
        let _ = registry.deregister(&mut conn.client);
        if ending.reset_client {
            sock::set_linger_zero(conn.client.as_raw_fd());
        }
        if let Some(up) = conn.upstream.as_mut() {
            let _ = registry.deregister(up);
            if ending.reset_upstream {
                sock::set_linger_zero(up.as_raw_fd());
            }
        }
        let rel = |t: Option<u64>| t.map(|t| t.saturating_sub(conn.accepted_ns));
        let record = ConnectionRecord {
            event: "close",
            id: conn.id,
            mode: self.opts.mode.name(),
            client: conn.client_addr.to_string(),
            client_mptcp: conn.client_mptcp,
            target: conn.target.clone(),
            upstream: conn.upstream_addr.map(|a| a.to_string()),
            accepted_unix_ns: conn.accepted_unix_ns,
            upstream_connect_start_ns: rel(conn.connect_start_ns),
            upstream_established_ns: rel(conn.established_ns),
            c2s_first_in_ns: rel(conn.up.first_in_ns),
            c2s_first_out_ns: rel(conn.up.first_out_ns),
            s2c_first_in_ns: rel(conn.down.first_in_ns),
            s2c_first_out_ns: rel(conn.down.first_out_ns),
            bytes_c2s: conn.up.bytes_out,
            bytes_s2c: conn.down.bytes_out,
            duration_ns: now.saturating_sub(conn.accepted_ns),
            close: ending.kind,
            error: ending.error,
        };
        let m = &mut self.metrics;
        m.active -= 1;
        m.bytes_c2s += conn.up.bytes_out;
        m.bytes_s2c += conn.down.bytes_out;
        if !matches!(ending.kind, "done" | "client_gone") {
            m.count_error(ending.kind);
        }
        if let Some(d) = record.syn_delay_ns() {
            m.syn_delay.observe_ns(d);
        }
        for (first_in, first_out, h) in [
            (conn.up.first_in_ns, conn.up.first_out_ns, &mut m.data_delay_c2s),
            (
                conn.down.first_in_ns,
                conn.down.first_out_ns,
                &mut m.data_delay_s2c,
            ),
        ] {
            if let (Some(i), Some(o)) = (first_in, first_out) {
                h.observe_ns(o.saturating_sub(i));
            }
        }
        self.observer.on_close(conn.id, conn.client.as_raw_fd(), &record);
        if self.events.write(&record).is_err() && !self.opts.quiet {
            eprintln!("warning: --events: write failed");
        }
        // Dropping `conn` closes both sockets (and the pipes).
    }

    fn accept_metrics(&mut self) {
        let Some(listener) = &self.metrics_listener else {
            return;
        };
        loop {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let entry = self.metrics_clients.vacant_entry();
                    let token = Token(METRICS_CLIENT_BASE + entry.key());
                    if self
                        .poll
                        .registry()
                        .register(&mut stream, token, Interest::READABLE)
                        .is_ok()
                    {
                        entry.insert(MetricsClient {
                            stream,
                            request: Vec::new(),
                        });
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// Read the scrape's request head, answer with the text, close.
    fn serve_metrics(&mut self, key: usize) {
        let Some(client) = self.metrics_clients.get_mut(key) else {
            return;
        };
        let mut buf = [0u8; 1024];
        let mut done = false;
        loop {
            match client.stream.read(&mut buf) {
                Ok(0) => {
                    done = true;
                    break;
                }
                Ok(n) => {
                    client.request.extend_from_slice(&buf[..n]);
                    if client.request.windows(4).any(|w| w == b"\r\n\r\n") || client.request.len() > 8192 {
                        done = true;
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    done = true;
                    break;
                }
            }
        }
        if !done {
            return;
        }
        let mut client = self.metrics_clients.remove(key);
        let _ = self.poll.registry().deregister(&mut client.stream);
        let mut m = self.metrics.clone();
        for (_, c) in self.conns.iter() {
            m.bytes_c2s += c.up.bytes_out;
            m.bytes_s2c += c.down.bytes_out;
        }
        let mut body = m.render();
        self.observer.render_metrics(&mut body);
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        // A few KiB into a fresh socket's empty send buffer: one write. The
        // socket is blocking for it, with a bound in case the peer stalls.
        let std_stream: std::net::TcpStream = client.stream.into();
        let _ = std_stream.set_nonblocking(false);
        let _ = std_stream.set_write_timeout(Some(Duration::from_millis(100)));
        let mut s = &std_stream;
        let _ = s.write_all(response.as_bytes());
        let _ = std_stream.shutdown(std::net::Shutdown::Write);
    }
}

impl Conn {
    fn start_refusal(&mut self, reply: Vec<u8>, kind: &'static str, why: impl ToString) {
        self.phase = Phase::Refusing;
        self.refusal = reply;
        self.refusal_sent = 0;
        self.refusal_kind = kind;
        self.refusal_error = Some(why.to_string());
        self.deadline_ns = now_plus_linger();
    }

    fn refusal_ending(&mut self) -> Ending {
        Ending {
            kind: self.refusal_kind,
            error: self.refusal_error.take(),
            reset_client: false,
            reset_upstream: false,
        }
    }

    /// The SOCKS method reply (no authentication), once. Two bytes into a
    /// fresh connection's empty send buffer cannot block.
    fn send_method_reply(&mut self) -> Result<(), Ending> {
        if self.socks_greeted {
            return Ok(());
        }
        self.socks_greeted = true;
        match self.client.write(&socks5::METHOD_REPLY) {
            Ok(2) => Ok(()),
            Ok(_) => Err(Ending::error("io_error", "short write of the SOCKS method reply")),
            Err(e) => Err(client_error(e)),
        }
    }
}

fn client_error(e: io::Error) -> Ending {
    let reset = is_reset(&e);
    Ending {
        kind: if reset { "client_reset" } else { "io_error" },
        error: Some(format!("client: {e}")),
        reset_client: false,
        reset_upstream: reset,
    }
}

fn connect_error_kind(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => "connect_refused",
        Some(libc::ETIMEDOUT) => "connect_timeout",
        Some(libc::ENETUNREACH) | Some(libc::EHOSTUNREACH) => "connect_unreachable",
        _ => "connect_failed",
    }
}

fn now_plus_linger() -> u64 {
    clock::now_ns() + LINGER_NS
}

fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
