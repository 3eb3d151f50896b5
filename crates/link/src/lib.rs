//! Sans-IO link service models: "when may the next packet leave, and when
//! does it arrive?"
//!
//! - [`trace`]: Mahimahi delivery-opportunity traces (parse, loop, look up).
//! - [`rate`]: piecewise-constant rate processes (schedules, a Markov
//!   good/bad channel, per-interval draws).
//! - [`transmitter`]: a single queue's transmitter over a trace or a rate.
//! - [`lte`]: an LTE cell downlink (per-user queues, TTI scheduler, HARQ).
//! - [`wifi`]: a Wi-Fi AP downlink (shared FIFO or per-station queues, per-station rate, retries).
//! - [`service`]: one link's service rule (random loss, queue, transmitter,
//!   delay), driven alike by the simulator and the emulator.
//!
//! Nothing here reads a clock: callers pass `now` (virtual time in the
//! simulator, wall time in the emulator) and get times back. Models are
//! generic over the packet handle, like the queue disciplines they hold.
//!
//! The driving contract: a driver asks when the next packet may start and
//! learns when it arrives. A single-queue [`transmitter::Transmitter`] answers
//! `earliest_start_ns(now)` and `transmit(start_ns, bytes)` (the departure
//! time); the shared media queue their own packets and are polled at the time
//! they name: [`lte::LteCell`] takes `enqueue(now, user, pkt)` and runs
//! `run_tti(now, ..)` at `next_tti_ns(now)`, [`wifi::WifiAp`] takes
//! `enqueue(now, station, pkt)` and runs `poll(now, ..)` at
//! `next_wakeup_ns(now)`; both hand out departures and drops.

pub mod lte;
pub mod packet_ref;
pub mod queue_view;
pub mod rate;
pub mod service;
pub mod trace;
pub mod transmitter;
pub mod wifi;

pub use lte::{LteCell, LteConfig, Scheduler};
pub use packet_ref::{PacketRef, RouteEcn};
pub use queue_view::{member_queue_view, QueueView};
pub use rate::{RateDist, RateSource};
pub use service::{
    DropCause, LinkCounters, LinkDeparture, LinkEvents, LinkPacket, LinkQueue, LinkRate, LinkService, Medium,
    MediumKind, Service,
};
pub use trace::{TraceError, TraceSchedule, OPPORTUNITY_BYTES};
pub use transmitter::Transmitter;
pub use wifi::{ApBuffer, Tagged, WifiAp, WifiConfig};

/// A packet leaving a shared access medium (cell or AP) for one of its
/// users or stations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Departure<P> {
    /// User (cell) or station (AP) index.
    pub dest: u32,
    pub pkt: P,
    /// Time it waited in its queue, ns.
    pub sojourn_ns: u64,
    /// When it entered the queue.
    pub enqueued_ns: u64,
    /// When its last byte left the transmitter.
    pub leave_ns: u64,
    /// When the receiver has it, before propagation: after HARQ
    /// retransmissions and jitter (≥ `leave_ns`).
    pub deliver_ns: u64,
    /// The link layer gave up on it (every attempt failed).
    pub lost: bool,
}
