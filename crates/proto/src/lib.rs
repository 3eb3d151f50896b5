//! Sans-IO transport protocol state machines: TCP sender and receiver
//! ([`tcp`]), congestion controllers ([`cc`]), receiver-window controllers
//! (`tcp::rwnd`), MPTCP connections and the MPTCP-to-TCP proxy ([`mptcp`]),
//! TFRC and DFlow ([`tfrc`]).
//!
//! Nothing in this crate knows whether time is virtual or real. The driving
//! contract, the same for every endpoint (after quinn-proto):
//!
//! - feed it what happened: `on_segment(now_ns, seg)` (TFRC: `on_data`,
//!   `on_feedback`) and `on_timeout(now_ns)` once the time it asked for has come;
//! - ask it what to do: `poll_transmit(now_ns)` until it returns `None`
//!   (TFRC's receiver: `poll_feedback`), then `next_timeout()` for when to call
//!   again;
//! - `now_ns` is nanoseconds on any monotonic clock ([`TimeNs`]); the machine
//!   never reads a clock, sleeps or does I/O.
//!
//! The simulator drives these machines in virtual time; the real-network tools
//! (`latlab-net`) drive them from sockets. Congestion controllers are narrower
//! still: the sender calls their hooks (on ACK, on loss, on RTT sample), in the
//! spirit of Linux's `tcp_congestion_ops`, and they own only their own state.

pub mod cc;
pub mod knobs;
pub mod mptcp;
pub mod segment;
pub mod tcp;
pub mod tfrc;

/// The IP header's ECN field (RFC 3168 §5), as the queues read and mark it.
pub use latlab_qdisc::Ecn;
pub use segment::{Dss, DssPresent, Flags, SackBlock, Segment, MAX_SACK_BLOCKS, MAX_SACK_BLOCKS_WITH_DSS};

/// Nanoseconds since an arbitrary epoch. The engine never uses floating-point time.
pub type TimeNs = u64;

pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_SEC: u64 = 1_000_000_000;
