//! Sans-IO transport protocol state machines.
//!
//! Nothing in this crate knows whether time is virtual or real: every entry
//! point takes `now_ns` (nanoseconds on some monotonic clock) and returns what
//! the endpoint wants to do. The simulator drives these machines in virtual
//! time; the real-network tools drive them from sockets.
//!
//! The shape follows quinn-proto: feed events in (`on_segment`,
//! `on_timeout`), poll actions out (`poll_transmit`, `next_timeout`).

pub mod cc;
pub mod knobs;
pub mod mptcp;
pub mod segment;
pub mod tcp;
pub mod tfrc;

pub use segment::{Dss, DssPresent, Flags, SackBlock, Segment, MAX_SACK_BLOCKS, MAX_SACK_BLOCKS_WITH_DSS};

/// Nanoseconds since an arbitrary epoch. The engine never uses floating-point time.
pub type TimeNs = u64;

pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_SEC: u64 = 1_000_000_000;
