//! Nodes and unidirectional links.
//!
//! A link is a queue discipline in front of a transmitter of a given rate,
//! followed by a wire of fixed propagation delay.
//!
//! A packet that starts serialisation goes on the wire at once, stamped with
//! its arrival time (end of serialisation + delay); the transmitter only
//! remembers when it becomes free (`busy_until_ns`). A `TxDone` event is
//! scheduled only while packets wait in the queue, so a packet crossing an
//! idle link costs one event (its arrival), not two. The wire is a FIFO
//! (equal delays keep departure order) with one `Arrive` event pending for
//! its head only, which keeps the agenda small.

use crate::packet::PacketRef;
use crate::pcap::PcapWriter;
use latlab_qdisc::{Qdisc, QdiscStats};
use rand_pcg::Pcg64Mcg;
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
}

/// How a link's rate is given. Time-varying rates (traces) fit here later.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LinkRate {
    Fixed { rate_bps: u64 },
}

impl LinkRate {
    /// Serialisation time of `wire_bytes` starting at `now_ns`, nanoseconds.
    #[inline]
    pub fn tx_time_ns(&self, _now_ns: u64, wire_bytes: u32) -> u64 {
        match *self {
            LinkRate::Fixed { rate_bps } => {
                // bits · 1e9 / rate, rounded up so that a link never runs faster than its rate.
                (wire_bytes as u64 * 8 * 1_000_000_000).div_ceil(rate_bps)
            }
        }
    }

    pub fn nominal_bps(&self) -> u64 {
        match *self {
            LinkRate::Fixed { rate_bps } => rate_bps,
        }
    }
}

/// Per-link counters kept outside the queue discipline.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkCounters {
    /// Packets offered to the link (before random loss and the queue).
    pub arrivals_pkts: u64,
    pub arrivals_bytes: u64,
    /// Packets removed by the link's random-loss model.
    pub lost_pkts: u64,
    /// Packets whose serialisation started (they are on the wire from then).
    pub departures_pkts: u64,
    pub departures_bytes: u64,
    /// Since the last sample: sojourn times of dequeued packets.
    pub sojourn_sum_ns: u64,
    pub sojourn_count: u64,
    pub sojourn_max_ns: u64,
}

pub struct Link {
    pub name: String,
    pub src: u32,
    pub dst: u32,
    pub rate: LinkRate,
    pub delay_ns: u64,
    pub qdisc: Box<dyn Qdisc<PacketRef>>,
    /// Random independent loss probability, and its stream.
    pub loss_prob: f64,
    pub loss_rng: Pcg64Mcg,
    /// The transmitter is busy until this time.
    pub busy_until_ns: u64,
    /// A `TxDone` event is pending (at `busy_until_ns`).
    pub tx_scheduled: bool,
    /// A `LinkWake` is pending at this time.
    pub wake_at: Option<u64>,
    /// Packets propagating, with their arrival times at `dst`.
    pub wire: VecDeque<(u64, PacketRef)>,
    pub counters: LinkCounters,
    /// Departures at the start of the measurement window (for utilisation).
    pub window_start_departures_bytes: u64,
    /// Boxed: almost no link captures, and the writer is large.
    pub pcap: Option<Box<PcapWriter>>,
    /// Whether the link's time series is recorded.
    pub sampled: bool,
}

impl Link {
    pub fn qdisc_stats(&self) -> &QdiscStats {
        self.qdisc.stats()
    }

    /// Packets waiting in the queue (a packet being serialised is on the wire).
    pub fn held_pkts(&self) -> u64 {
        self.qdisc.len_pkts() as u64
    }
}
