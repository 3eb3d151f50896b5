//! The kernel-facing parts of the MPTCP proxy: what the kernel tells about
//! MPTCP connections and their subflows, and per-subflow rate limits.
//!
//! - [`pm_events`]: the path manager's netlink events (connections and
//!   subflows appearing and going, with their 4-tuples).
//! - [`sockopt`]: getsockopt(SOL_MPTCP): the connection token, per-subflow
//!   TCP_INFO and 4-tuples.
//! - [`live`]: the TCP 4-tuples the kernel has now (/proc/net/tcp), to
//!   reconcile throttles whose close events were lost.
//! - [`policy`]: which subflow gets which rate (rules on client address,
//!   interface, port), from TOML or flags.
//! - [`steer`]: the sans-IO bookkeeping that turns events into "throttle this
//!   subflow now" once a connection has two established subflows and the
//!   policy's delay has passed.
//! - [`throttle`]: an HTB class and a u32 filter per throttled subflow on
//!   the egress device, removed with the handle.
//! - [`watch`]: `latlab-net mptcp-watch`, the events as JSON lines.

pub mod live;
pub mod pm_events;
pub mod policy;
pub mod sockopt;
pub mod steer;
pub mod throttle;
pub mod watch;

use std::fmt;
use std::net::SocketAddr;

use serde::Serialize;

/// A subflow's addresses and ports as seen from this host: `local` is this
/// host's end, `remote` the peer's. On the proxy, packets toward the client
/// leave with source `local` and destination `remote`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct FourTuple {
    pub local: SocketAddr,
    pub remote: SocketAddr,
}

impl fmt::Display for FourTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {}", self.local, self.remote)
    }
}
