//! The seam for per-connection MPTCP work: subflow statistics
//! (MPTCP_INFO, MPTCP_TCPINFO, MPTCP_SUBFLOW_ADDRS), path-manager events
//! and per-subflow throttling attach here, outside the relay.
//!
//! The event loop calls the observer on its own thread: `on_accept` right
//! after a client's connection is accepted (before any byte is relayed),
//! `on_established` when its upstream connection is up, `on_tick` every
//! loop turn that runs the timers (about every 50 ms), and `on_close` just
//! before the client socket is closed. The fds stay valid until
//! `on_close` returns; an observer must not close them, and must not block.

use std::net::SocketAddr;
use std::os::fd::RawFd;

use super::events::ConnectionRecord;

/// What the proxy knows about a client connection when it is accepted.
#[derive(Clone, Debug)]
pub struct AcceptedConnection {
    /// The proxy's connection id (also in the event log and metrics).
    pub id: u64,
    /// The accepted socket (IPPROTO_MPTCP, or plain TCP on fallback).
    pub client_fd: RawFd,
    pub client_addr: SocketAddr,
    /// The proxy's local address of this connection.
    pub local_addr: Option<SocketAddr>,
    /// TCP_IS_MPTCP: an MPTCP connection that has not fallen back.
    pub client_mptcp: bool,
}

pub trait ConnectionObserver {
    fn on_accept(&mut self, _conn: &AcceptedConnection) {}
    /// The upstream TCP connection of `id` is established.
    fn on_established(&mut self, _id: u64, _client_fd: RawFd, _upstream_fd: RawFd) {}
    /// Periodic work (sampling statistics); `now_ns` is CLOCK_MONOTONIC.
    fn on_tick(&mut self, _now_ns: u64) {}
    /// The connection ends; `record` is its event-log line.
    fn on_close(&mut self, _id: u64, _client_fd: RawFd, _record: &ConnectionRecord) {}
    /// More lines for `--metrics` (Prometheus text format), after the
    /// proxy's own.
    fn render_metrics(&self, _out: &mut String) {}
}

/// The default: does nothing.
pub struct NoObserver;

impl ConnectionObserver for NoObserver {}
