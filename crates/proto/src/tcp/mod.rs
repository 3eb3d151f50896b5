//! TCP as sans-IO state machines: a data sender ([`TcpSender`]) and a data
//! receiver ([`TcpReceiver`]) for one-directional bulk or finite transfers.
//!
//! Driving either end: after every `connect`, `on_segment` or `on_timeout`,
//! call `poll_transmit(now)` until it returns `None`, send what it returned,
//! then arm a timer at `next_timeout()`. `on_timeout` may be called early or
//! spuriously; it acts only on what is due.
//!
//! The pieces: [`config`] (parameters and presets), `rtt` (RFC 6298),
//! `scoreboard` (per-segment SACK scoreboard, RFC 6675), `sender`
//! (handshake, windows, NewReno RFC 6582 and SACK RFC 6675 recovery, RTO,
//! pacing), `receiver` (delivery, SACK generation RFC 2018, delayed ACK
//! RFC 5681 §4.2, timestamps RFC 7323) and [`rwnd`] (the receiver-window
//! controllers: fixed, Linux auto-tuning, DRWA, RTAC).
//!
//! Design notes (details in the module docs of `sender` and `scoreboard`):
//! - The scoreboard is a `VecDeque` of per-segment records (seq, len,
//!   SACKed/lost/retransmitted bits) from `snd_una` to HighData: push on
//!   send, pop on cumulative ACK, binary search for SACK blocks, running
//!   SACK totals for an O(1) IsLost(HighACK + 1); one O(window) SetPipe pass
//!   per ACK only while in SACK recovery.
//! - After an RTO the SACK scoreboard is kept (ns-3/Linux style) and
//!   go-back-N skips SACKed segments; it is discarded only if the segment at
//!   `snd_una` was SACKed (receiver reneging).
//! - Zero window: a persist timer (RTO, doubling) releases one full segment
//!   regardless of the window; the receiver accepts it (its buffer is always
//!   drained by the application) and its ACK carries the current window.
//! - No per-packet heap allocation in steady state: the scoreboard, the
//!   receiver's out-of-order ranges and ACK queue grow once and are reused.

pub mod config;
mod receiver;
mod rtt;
pub mod rwnd;
mod scoreboard;
mod sender;

#[cfg(test)]
mod dialogue_tests;
#[cfg(test)]
mod ecn_dialogue_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod testutil;

pub use config::{DelayedAck, Pacing, Recovery, TcpConfig, LARGE_RWND_BYTES};
pub use receiver::{ReceiverStats, TcpReceiver};
pub use rtt::RttEstimator;
pub use rwnd::{FixedRwnd, RwndController, RwndSpec, RwndSpecError, SegmentArrival};
pub use sender::{CaState, NewChunk, SenderStats, TcpSender};
