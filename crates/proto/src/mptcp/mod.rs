//! Multipath TCP (RFC 8684) as sans-IO state machines: a connection of N
//! subflows, each an unmodified TCP sender/receiver pair from [`crate::tcp`]
//! with its own sequence space, RTT estimator, loss recovery and RTO, under
//! a data-level byte stream.
//!
//! The pieces, one idea each:
//! - `dss`: data-sequence mappings (subflow sequence range → data sequence
//!   range), one per segment, carried in the segment's DSS option
//!   ([`Segment::dss`](crate::Segment::dss)).
//! - `scheduler`: which subflow gets the next segment's worth of data
//!   (lowest SRTT with room, Linux's default; round-robin as a baseline;
//!   backup subflows only when no regular subflow is usable).
//! - `recv_buffer`: the shared data-level receive buffer, delivery in data
//!   order, its window, head-of-line blocking measurements, drops.
//! - `subflow`: a sending subflow (TCP sender + mappings + loss history).
//! - `summary`: the compact per-subflow view the sender's poll loop and
//!   scheduler read (usable, SRTT, may owe, known lack of room).
//! - `connection`: the sending side ([`MptcpSender`]): data sequence space,
//!   Data ACK, connection-level window, reinjection, coupled congestion
//!   control's view, NSDI'12 opportunistic retransmission and penalisation.
//! - `receiver`: the receiving side ([`MptcpReceiver`]).
//! - `proxy`: the MPTCP-to-TCP proxy ([`MptcpProxy`]): a split connection,
//!   a bounded relay with conversion delays, per-subflow throttling.
//!
//! Coupled congestion control lives with the other controllers: LIA
//! ([`crate::cc::Lia`], RFC 6356) and OLIA ([`crate::cc::Olia`]); any other
//! controller on a subflow runs uncoupled.
//!
//! Not modelled: MP_CAPABLE/MP_JOIN keys and tokens (subflows open with a
//! plain TCP handshake, all at `connect`), ADD_ADDR and the path manager,
//! DSS checksums, DATA_FIN, fallback to TCP.

mod connection;
mod dss;
mod proxy;
mod receiver;
mod recv_buffer;
mod scheduler;
mod subflow;
mod summary;

#[cfg(test)]
mod proxy_tests;
#[cfg(test)]
mod tests;

pub use connection::{MptcpConfig, MptcpSender, MptcpSenderStats};
pub use dss::{DssMap, Mapping};
pub use proxy::{MptcpProxy, ProxyConfig, ProxyOutput, ProxyStats, ShapedSegment, ThrottleConfig};
pub use receiver::{MptcpReceiver, MptcpReceiverStats};
pub use recv_buffer::{Arrival, RecvBuffer, RecvBufferStats};
pub use scheduler::{Scheduler, SchedulerState, SubflowView};
pub use subflow::SenderSubflow;
