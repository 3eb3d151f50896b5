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
//! its head only, which keeps the agenda small; its packets are threaded
//! through [`crate::wire::Wires`].

use crate::packet::PacketRef;
use crate::pcap::PcapWriter;
use latlab_link::{LteCell, Transmitter, WifiAp};
use latlab_qdisc::{Dequeue, DropTail, Enqueue, Qdisc, QdiscStats, TimeNs};
use rand_pcg::Pcg64Mcg;

#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
}

/// A link's nominal rate: its fixed rate, or for a time-varying link its
/// long-run mean (the `links` table's `rate_bps`).
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

/// A link's queue discipline. DropTail, by far the most common, sits
/// inline in the link: no pointer to chase and no virtual call per packet
/// (at 10k flows the boxed queue was a cache miss of its own on every hop).
pub enum LinkQueue {
    DropTail(DropTail<PacketRef>),
    Other(Box<dyn Qdisc<PacketRef>>),
}

impl LinkQueue {
    /// The queue as a trait object, for users outside the simulator's hot
    /// loop (the real-time emulator drives any discipline the same way).
    pub fn into_boxed(self) -> Box<dyn Qdisc<PacketRef>> {
        match self {
            LinkQueue::DropTail(q) => Box::new(q),
            LinkQueue::Other(q) => q,
        }
    }

    pub fn as_dyn(&self) -> &dyn Qdisc<PacketRef> {
        match self {
            LinkQueue::DropTail(q) => q,
            LinkQueue::Other(q) => q.as_ref(),
        }
    }

    #[inline]
    pub fn enqueue(&mut self, now_ns: TimeNs, pkt: PacketRef) -> Enqueue<PacketRef> {
        match self {
            LinkQueue::DropTail(q) => q.enqueue(now_ns, pkt),
            LinkQueue::Other(q) => q.enqueue(now_ns, pkt),
        }
    }

    #[inline]
    pub fn dequeue(&mut self, now_ns: TimeNs, dropped: &mut Vec<PacketRef>) -> Dequeue<PacketRef> {
        match self {
            LinkQueue::DropTail(q) => q.dequeue(now_ns, dropped),
            LinkQueue::Other(q) => q.dequeue(now_ns, dropped),
        }
    }

    #[inline]
    pub fn len_pkts(&self) -> usize {
        match self {
            LinkQueue::DropTail(q) => q.len_pkts(),
            LinkQueue::Other(q) => q.len_pkts(),
        }
    }

    pub fn stats(&self) -> &QdiscStats {
        self.as_dyn().stats()
    }
}

impl From<Box<dyn Qdisc<PacketRef>>> for LinkQueue {
    fn from(q: Box<dyn Qdisc<PacketRef>>) -> Self {
        LinkQueue::Other(q)
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

/// How a link serves its queue.
pub enum Service {
    /// A fixed-rate transmitter (`Link::rate`): the hot path.
    Fixed,
    /// A transmitter over a trace or a rate process (latlab-link), serving
    /// the link's own queue.
    Varying(Box<Transmitter>),
    /// A user's (cell) or station's (AP) downlink of a shared medium: the
    /// medium holds the queue and decides when packets leave; the link
    /// keeps its wire, delay and counters. Its own `qdisc` stays empty.
    Shared { medium: u32, member: u32 },
}

/// A shared access medium and the links of its members (index = member).
pub struct SharedMedium {
    pub kind: MediumKind,
    pub links: Vec<u32>,
    /// A `MediumWake` is pending at this time.
    pub wake_at: Option<u64>,
}

pub enum MediumKind {
    Cell(LteCell<PacketRef>),
    Ap(WifiAp<PacketRef>),
}

/// A link's queue as the tables see it: its own discipline, or its share
/// of a shared medium's queues.
#[derive(Debug, Clone, Copy)]
pub struct QueueView {
    pub name: &'static str,
    pub stats: QdiscStats,
    pub len_pkts: u64,
    pub len_bytes: u64,
    /// Packets taken from the queue but not on the wire yet (a cell user's
    /// packet whose bytes are partly sent).
    pub in_service_pkts: u64,
}

impl QueueView {
    /// A discipline of the link's own (or a member's queue in a cell), with
    /// `in_service_pkts` taken from it and not yet on the wire.
    pub fn of(q: &dyn Qdisc<PacketRef>, in_service_pkts: u64) -> Self {
        QueueView {
            name: q.name(),
            stats: *q.stats(),
            len_pkts: q.len_pkts() as u64,
            len_bytes: q.len_bytes(),
            in_service_pkts,
        }
    }
}

impl MediumKind {
    /// Member `member`'s share of the medium's queues.
    pub fn member_queue_view(&self, member: u32) -> QueueView {
        match self {
            MediumKind::Cell(c) => QueueView::of(c.queue(member), c.in_transit_pkts(member)),
            MediumKind::Ap(ap) => {
                let st = ap.station_stats(member);
                QueueView {
                    name: ap.queue().name(),
                    stats: st.queue,
                    len_pkts: st.queued_pkts,
                    len_bytes: st.queued_bytes,
                    in_service_pkts: 0,
                }
            }
        }
    }
}

/// The queue of `link` (see [`QueueView`]).
pub fn queue_view(link: &Link, media: &[SharedMedium]) -> QueueView {
    match link.service {
        Service::Shared { medium, member } => media[medium as usize].kind.member_queue_view(member),
        _ => QueueView::of(link.qdisc.as_dyn(), 0),
    }
}

/// Capacity accounting of a time-varying or shared link (the `access` tables).
#[derive(Debug, Clone, Copy, Default)]
pub struct AccessCounters {
    /// Capacity offered up to the measurement window's start, and up to the end.
    pub window_start_offered_bytes: u64,
    pub offered_bytes: u64,
}

/// Fields in the order a packet's hop touches them, cold ones last, and
/// aligned to a cache line (`repr(C)` keeps the order): a hop reads the
/// first four lines of its link and nothing else of it, and an arrival
/// none (the wire's end is in [`crate::wire::Wires`]). At 10k flows the links do not fit in cache, so every
/// line a hop spans is a miss.
#[repr(C, align(64))]
pub struct Link {
    // Line 0: the transmitter and how the link serves its queue.
    /// The transmitter is busy until this time.
    pub busy_until_ns: u64,
    pub delay_ns: u64,
    pub rate: LinkRate,
    /// Random independent loss probability (its stream is below).
    pub loss_prob: f64,
    pub service: Service,
    /// Boxed: almost no link captures, and the writer is large.
    pub pcap: Option<Box<PcapWriter>>,
    // Lines 0-1: counters.
    pub counters: LinkCounters,
    // Lines 1-3: the queue, and in the bytes it leaves free, the flags.
    pub qdisc: LinkQueue,
    /// A `TxDone` event is pending (at `busy_until_ns`).
    pub tx_scheduled: bool,
    /// Whether the link's time series is recorded.
    pub sampled: bool,
    // Cold.
    /// A `LinkWake` is pending at this time.
    pub wake_at: Option<u64>,
    /// Departures at the start of the measurement window (for utilisation).
    pub window_start_departures_bytes: u64,
    pub src: u32,
    pub dst: u32,
    pub loss_rng: Pcg64Mcg,
    pub access: AccessCounters,
    pub name: String,
}

impl Link {
    /// Counters of the link's own queue discipline (empty for a member of
    /// a shared medium: see [`queue_view`]).
    pub fn qdisc_stats(&self) -> &QdiscStats {
        self.qdisc.stats()
    }

    /// Packets waiting in the link's own queue (a packet being serialised
    /// is on the wire).
    pub fn held_pkts(&self) -> u64 {
        self.qdisc.len_pkts() as u64
    }

    /// Capacity offered in [0, t): a varying link's transmitter, or a
    /// member's channel; None for a fixed-rate link.
    pub fn offered_bytes_until(&mut self, media: &mut [SharedMedium], t_ns: u64) -> Option<u64> {
        match &mut self.service {
            Service::Fixed => None,
            Service::Varying(tx) => Some(tx.offered_bytes_until(t_ns)),
            Service::Shared { medium, member } => Some(match &mut media[*medium as usize].kind {
                MediumKind::Cell(c) => c.channel_mut(*member).offered_bytes_until(t_ns),
                MediumKind::Ap(ap) => ap.station_tx_mut(*member).offered_bytes_until(t_ns),
            }),
        }
    }
}

// A field added to `Link` or a grown queue must not push the hot fields
// past the first four lines silently: measure (`latlab bench --scale`).
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(align_of::<Link>() == 64);
    assert!(offset_of!(Link, pcap) + 8 <= 64);
    assert!(offset_of!(Link, counters) + size_of::<LinkCounters>() <= 128);
    assert!(offset_of!(Link, qdisc) + size_of::<LinkQueue>() <= offset_of!(Link, tx_scheduled));
    assert!(offset_of!(Link, sampled) < 256);
};
