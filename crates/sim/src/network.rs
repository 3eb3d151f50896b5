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
use latlab_link::Medium;
use latlab_qdisc::QdiscStats;

#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
}

/// The link service (crates/link) over the simulator's packet handles.
pub type LinkQueue = latlab_link::LinkQueue<PacketRef>;
pub type LinkService = latlab_link::LinkService<PacketRef>;
pub use latlab_link::{LinkCounters, LinkRate, Service};

/// A shared access medium and the links of its members (index = member).
pub struct SharedMedium {
    /// The scheduler, with the time its `MediumWake` is pending.
    pub medium: Medium<PacketRef>,
    pub links: Vec<u32>,
}

pub type MediumKind = latlab_link::MediumKind<PacketRef>;

/// The scheduler's fields read as the medium's own (`medium.kind`).
impl std::ops::Deref for SharedMedium {
    type Target = Medium<PacketRef>;
    fn deref(&self) -> &Medium<PacketRef> {
        &self.medium
    }
}

pub use latlab_link::{member_queue_view, QueueView};

/// The queue of `link` (see [`QueueView`]).
pub fn queue_view(link: &Link, media: &[SharedMedium]) -> QueueView {
    match link.service {
        Service::Shared { medium, member } => member_queue_view(&media[medium as usize].medium.kind, member),
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

/// A link: its service (crates/link) first, in the order a packet's hop
/// touches it, then what only the simulator keeps, cold. Aligned to a
/// cache line (`repr(C)` keeps the order): a hop reads the first four
/// lines of its link and nothing else of it, and an arrival none (the
/// wire's end is in [`crate::wire::Wires`]). At 10k flows the links do not
/// fit in cache, so every line a hop spans is a miss.
#[repr(C, align(64))]
pub struct Link {
    pub svc: LinkService,
    /// Boxed: almost no link captures, and the writer is large. Read on a
    /// departure only while some link captures (`Simulation::capturing`).
    pub pcap: Option<Box<PcapWriter>>,
    /// A per-packet record, opt-in (`Simulation::trace_link`).
    pub trace: Option<Box<crate::sim::LinkTrace>>,
    /// Whether the link's time series is recorded.
    pub sampled: bool,
    /// Departures at the start of the measurement window (for utilisation).
    pub window_start_departures_bytes: u64,
    pub src: u32,
    pub dst: u32,
    pub access: AccessCounters,
    pub name: String,
}

/// The service's fields read as the link's own (`link.counters`, `link.qdisc`).
impl std::ops::Deref for Link {
    type Target = LinkService;
    fn deref(&self) -> &LinkService {
        &self.svc
    }
}

impl std::ops::DerefMut for Link {
    fn deref_mut(&mut self) -> &mut LinkService {
        &mut self.svc
    }
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
        match &mut self.svc.service {
            Service::Fixed => None,
            Service::Varying(tx) => Some(tx.offered_bytes_until(t_ns)),
            Service::Shared { medium, member } => Some(match &mut media[*medium as usize].medium.kind {
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
    use std::mem::{align_of, offset_of};
    assert!(align_of::<Link>() == 64);
    assert!(offset_of!(Link, svc) == 0);
    assert!(offset_of!(LinkService, counters) + std::mem::size_of::<LinkCounters>() <= 128);
    assert!(offset_of!(LinkService, tx_scheduled) < 256);
};
