//! `latlab-net proxy`: the MPTCP-to-TCP converter of a split-connection
//! proxy. Clients reach it over MPTCP (plain TCP clients fall back on the
//! same listener); it opens a plain TCP connection to the server and
//! relays both directions with splice(2), so MPTCP clients get multipath
//! in front of a legacy server (crates/net/README.md, "latlab-net proxy").
//!
//! Upstream choice: a fixed `--to` address (HAProxy's tcp mode), an HTTP
//! forward proxy (`--mode http`: absolute-URI requests and CONNECT), or
//! SOCKS 5 (`--mode socks5`, RFC 1928). One thread runs a mio event loop
//! over every connection; one more resolves names.
//!
//! - [`args`]: flags and the TOML file.
//! - [`sock`]: the MPTCP listener, splice, SO_LINGER and rlimit calls.
//! - [`relay`]: one direction of a connection (splice through a pipe).
//! - [`http`], [`socks5`]: the first request of the two proxy modes.
//! - [`resolve`]: getaddrinfo on its own thread.
//! - [`event_loop`]: accept, connect, relay, timers, drain on SIGTERM.
//! - [`events`], [`metrics`]: the JSON-lines log and the Prometheus text.
//! - [`mptcp_observer`]: per-subflow statistics and throttling driven by
//!   the kernel's path-manager events (`--throttle`, `--mptcp-log`)
//! - [`observer`]: the per-connection hook for MPTCP subflow statistics
//!   and throttling.

pub mod args;
pub mod event_loop;
pub mod events;
pub mod http;
pub mod metrics;
pub mod mptcp_observer;
pub mod observer;
pub mod relay;
pub mod resolve;
pub mod sock;
pub mod socks5;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use observer::{AcceptedConnection, ConnectionObserver, NoObserver};

/// Where connections go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProxyMode {
    Fixed(SocketAddr),
    Http,
    Socks5,
}

impl ProxyMode {
    pub fn name(&self) -> &'static str {
        match self {
            ProxyMode::Fixed(_) => "fixed",
            ProxyMode::Http => "http",
            ProxyMode::Socks5 => "socks5",
        }
    }
}

/// Validated settings of one run (see [`args::ProxyArgs`] for each one's meaning).
#[derive(Clone, Debug)]
pub struct ProxyOptions {
    pub listen: SocketAddr,
    pub mode: ProxyMode,
    pub mptcp: bool,
    pub max_connections: usize,
    pub buffer_bytes: usize,
    /// The send buffer fixed on MPTCP client sockets (None: autotuning).
    pub mptcp_sndbuf_bytes: Option<usize>,
    pub max_header_bytes: usize,
    pub connect_timeout_ns: u64,
    pub idle_timeout_ns: Option<u64>,
    pub grace_ns: u64,
    pub events: Option<PathBuf>,
    pub metrics: Option<SocketAddr>,
    pub quiet: bool,
    /// Per-subflow statistics and throttling ([`mptcp_observer`]).
    pub mptcp_observer: mptcp_observer::MptcpOptions,
}

/// Run until SIGINT/SIGTERM and the drain that follows.
pub fn run(opts: &ProxyOptions) -> Result<(), String> {
    if !opts.mptcp_observer.is_active() {
        return run_with_observer(opts, &mut NoObserver);
    }
    let mut observer = mptcp_observer::MptcpObserver::start(&opts.mptcp_observer)?;
    let ran = run_with_observer(opts, &mut observer);
    // Stopping removes every throttle rule, also when the proxy failed.
    let stopped = observer.stop();
    ran.and(stopped)
}

/// [`run`], calling `observer` on every connection's accept, upstream
/// establishment and close (the seam for subflow statistics/throttling).
pub fn run_with_observer(opts: &ProxyOptions, observer: &mut dyn ConnectionObserver) -> Result<(), String> {
    event_loop::Proxy::start(opts, observer)?.run()
}
