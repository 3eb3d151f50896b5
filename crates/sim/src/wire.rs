//! Packets propagating on links.
//!
//! Each link's wire is a FIFO (equal delays keep departure order; a cell
//! delivers each user's packets in order) with one `Arrive` event pending
//! for its head only. The FIFOs are threaded through one array indexed by
//! the packet's slab index, not kept in a ring buffer per link: a packet is
//! on at most one wire at a time, so its slot is its place in that wire.
//!
//! Why: at 10k flows a per-link ring was two cache misses on every hop (the
//! ring's slot written at departure, read back at arrival, each ring in its
//! own allocation), and the ring's bookkeeping sat in the link's first
//! cache line, a third. The slots here are few (the packets in flight) and
//! reused most-recently-freed first, so they stay warm; each link's end of
//! its wire is 8 bytes in one dense array; and the `Arrive` event names the
//! packet and its next [`Hop`] (the next link of its route, or its flow at
//! the route's end), looked up when the packet left. So while the event
//! before it runs, the engine can ask the cache for everything the arrival
//! will touch (see `Simulation::prefetch`), and an arrival does not read
//! the route table.

use crate::packet::PacketRef;
use crate::routing::RouteTable;
use latlab_link::RouteEcn;

/// No packet: an empty wire's tail, a wire's last packet's successor.
const NONE: u32 = u32::MAX;

/// Where a packet goes when it reaches the far end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// Into this link, the next of its route.
    Link(u32),
    /// To its flow's endpoint: the route ends here.
    Deliver { flow: u32 },
}

impl Hop {
    const DELIVER: u32 = 1 << 30;
    /// Largest link or flow index a hop can name (2^30 - 1): far past what
    /// the memory budget admits (a link alone is 384 bytes).
    pub const MAX_INDEX: u32 = Self::DELIVER - 1;

    /// Where `pkt`, leaving the link at its route position, goes next.
    #[inline]
    pub fn after(routes: &RouteTable, pkt: PacketRef) -> Hop {
        match routes.link_at(pkt.route_pos() + 1) {
            RouteTable::END => Hop::Deliver { flow: pkt.flow },
            link => Hop::Link(link),
        }
    }

    /// The hop in 31 bits (the event queue packs it beside a tag bit).
    #[inline(always)]
    pub fn to_bits(self) -> u32 {
        match self {
            Hop::Link(link) => {
                debug_assert!(link <= Self::MAX_INDEX, "link index above 2^30");
                link
            }
            Hop::Deliver { flow } => {
                debug_assert!(flow <= Self::MAX_INDEX, "flow index above 2^30");
                Self::DELIVER | flow
            }
        }
    }

    #[inline(always)]
    pub fn from_bits(bits: u32) -> Hop {
        if bits & Self::DELIVER == 0 {
            Hop::Link(bits)
        } else {
            Hop::Deliver {
                flow: bits & Self::MAX_INDEX,
            }
        }
    }
}

/// A link's end of its wire: which packet is last, and how many propagate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Wire {
    tail: u32,
    len: u32,
}

impl Default for Wire {
    fn default() -> Self {
        Wire { tail: NONE, len: 0 }
    }
}

/// A packet on a wire: its handle (less the index, which is the slot's),
/// its link, and the packet behind it on the same wire with that packet's
/// arrival time and next hop (so the follower's `Arrive` is scheduled
/// without reading the follower's slot).
// Aligned to its size: a `Vec`'s buffer is only 16-byte aligned (glibc
// puts a large one 16 bytes past a page), and unaligned, every other slot
// would straddle two cache lines.
#[derive(Debug, Clone, Copy)]
#[repr(align(32))]
struct Slot {
    /// When `next` reaches the far node (set when `next` is pushed).
    next_arrival_ns: u64,
    wire_bytes: u32,
    flow: u32,
    /// The route position and the ECN field, as the handle has them.
    route: RouteEcn,
    link: u32,
    next: u32,
    /// `next`'s hop, as [`Hop::to_bits`].
    next_hop: u32,
}

const EMPTY: Slot = Slot {
    next_arrival_ns: 0,
    wire_bytes: 0,
    flow: 0,
    route: RouteEcn::new(0, latlab_qdisc::Ecn::NotEct),
    link: NONE,
    next: NONE,
    next_hop: 0,
};

// Two slots per cache line.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Slot>() == 32);

/// Every link's wire: its end (one per link) and its packets (one slot
/// per packet slab index).
#[derive(Debug, Default)]
pub struct Wires {
    ends: Vec<Wire>,
    slots: Vec<Slot>,
}

/// What [`Wires::pop`] hands back.
pub struct Popped {
    pub pkt: PacketRef,
    /// The new head of the wire: its arrival time, slab index and hop.
    pub following: Option<(u64, u32, Hop)>,
}

impl Wires {
    /// Empty wires for `links` links.
    pub fn new(links: usize) -> Self {
        Wires {
            ends: vec![Wire::default(); links],
            slots: Vec::new(),
        }
    }

    /// Packets on `link`'s wire.
    pub fn len(&self, link: u32) -> usize {
        self.ends[link as usize].len as usize
    }

    /// Ask the cache for `pkt`'s slot (its `Arrive` is next).
    #[inline(always)]
    pub fn prefetch(&self, pkt: u32) {
        if let Some(s) = self.slots.get(pkt as usize) {
            crate::prefetch::line(s);
        }
    }

    /// Put `pkt` at the tail of `link`'s wire, arriving at `arrival_ns`
    /// and going on to `hop`. Returns true when the wire was empty: the
    /// caller schedules the packet's `Arrive`. Arrival times must not
    /// decrease along a wire. Always inlined: it runs once per packet-hop,
    /// and left to itself the compiler stopped inlining it when the packet
    /// handle moved to latlab-link (dumbbell-1000: +4 % instructions).
    #[inline(always)]
    pub fn push(&mut self, link: u32, pkt: PacketRef, arrival_ns: u64, hop: Hop) -> bool {
        let i = pkt.idx as usize;
        if i >= self.slots.len() {
            self.slots.resize(i + 1, EMPTY);
        }
        self.slots[i] = Slot {
            next_arrival_ns: 0,
            wire_bytes: pkt.wire_bytes,
            flow: pkt.flow,
            route: pkt.route,
            link,
            next: NONE,
            next_hop: 0,
        };
        let wire = &mut self.ends[link as usize];
        let tail = std::mem::replace(&mut wire.tail, pkt.idx);
        wire.len += 1;
        if tail == NONE {
            return true;
        }
        let t = &mut self.slots[tail as usize];
        t.next = pkt.idx;
        t.next_arrival_ns = arrival_ns;
        t.next_hop = hop.to_bits();
        false
    }

    /// Take `pkt`, the head of its wire (its `Arrive` is due).
    #[inline]
    pub fn pop(&mut self, pkt: u32) -> Popped {
        let s = self.slots[pkt as usize];
        let wire = &mut self.ends[s.link as usize];
        wire.len -= 1;
        let following = if s.next == NONE {
            debug_assert_eq!(wire.tail, pkt, "only the tail has no successor");
            wire.tail = NONE;
            None
        } else {
            Some((s.next_arrival_ns, s.next, Hop::from_bits(s.next_hop)))
        };
        Popped {
            pkt: PacketRef {
                idx: pkt,
                wire_bytes: s.wire_bytes,
                flow: s.flow,
                route: s.route,
            },
            following,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(idx: u32) -> PacketRef {
        PacketRef {
            idx,
            wire_bytes: 100 + idx,
            flow: 7,
            route: RouteEcn::new(idx * 2, latlab_qdisc::Ecn::from_bits(idx as u8)),
        }
    }

    #[test]
    fn each_wire_is_a_fifo_and_reports_its_next_head() {
        let mut w = Wires::new(2);
        let (a, b) = (0, 1);
        let deliver = Hop::Deliver { flow: 7 };
        assert!(w.push(a, r(3), 10, Hop::Link(5)));
        assert!(w.push(b, r(0), 12, deliver));
        assert!(!w.push(a, r(1), 15, Hop::Link(8)));
        assert!(!w.push(a, r(2), 15, deliver));
        assert_eq!((w.len(a), w.len(b)), (3, 1));

        let p = w.pop(3);
        assert_eq!((p.pkt, p.following), (r(3), Some((15, 1, Hop::Link(8)))));
        let p = w.pop(0);
        assert_eq!((p.pkt, p.following), (r(0), None));
        assert_eq!(w.len(b), 0);
        // A slot freed by its arrival is reused by another wire's packet.
        assert!(w.push(b, r(3), 20, Hop::Link(4)));
        let p = w.pop(1);
        assert_eq!((p.pkt, p.following), (r(1), Some((15, 2, deliver))));
        let p = w.pop(2);
        assert_eq!((p.pkt, p.following), (r(2), None));
        assert_eq!(w.ends[a as usize], Wire::default());
        // The emptied wire starts over.
        assert!(w.push(a, r(0), 30, Hop::Link(1)));
        let p = w.pop(3);
        assert_eq!((p.pkt, p.following), (r(3), None));
        assert_eq!((w.len(a), w.len(b)), (1, 0));
    }

    #[test]
    fn hops_survive_their_bits() {
        for h in [
            Hop::Link(0),
            Hop::Link(Hop::MAX_INDEX),
            Hop::Deliver { flow: 0 },
            Hop::Deliver { flow: Hop::MAX_INDEX },
        ] {
            assert_eq!(Hop::from_bits(h.to_bits()), h);
            assert!(h.to_bits() < 1 << 31);
        }
    }
}
