//! Packets in flight live in a slab; queues, wires and events hold indices.
//!
//! The slab grows to the peak number of packets in flight and then recycles
//! slots through a free list, so the steady state allocates nothing.

use latlab_proto::tfrc::{TfrcData, TfrcFeedback};
use latlab_proto::Segment;

/// What a packet carries.
#[derive(Clone, Copy, Debug)]
pub enum Payload {
    Tcp(Segment),
    /// A UDP datagram: its sequence number and send time (for loss and delay).
    Udp {
        seq: u64,
        sent_ns: u64,
    },
    /// A TFRC/DFlow data packet (sender→receiver).
    TfrcData(TfrcData),
    /// A TFRC/DFlow feedback report (receiver→sender).
    TfrcFeedback(TfrcFeedback),
}

/// A packet: a payload plus where it is on its path.
///
/// Cache-line aligned: the slab's buffer is otherwise only 16-byte aligned,
/// and a 128-byte packet would span three lines instead of two.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub struct Packet {
    pub payload: Payload,
    /// The flow's connection generation when the packet was sent.
    pub conn: u32,
    pub flow: u32,
    /// True for sender→receiver (data), false for receiver→sender (ACKs).
    pub forward: bool,
    /// MPTCP: the subflow the segment belongs to (0 for other transports).
    /// It fits in the struct's padding: the size stays 128 bytes.
    pub subflow: u8,
    pub wire_bytes: u32,
}

pub use latlab_link::PacketRef;
use latlab_link::RouteEcn;

// The hot path copies packets into and out of the slab, and queues hold
// `PacketRef`s: a field added to `Segment`, a TFRC header or `Packet` must
// not grow them silently. If one of these fails, the change costs memory
// traffic on every hop: measure (`latlab bench`) and update the figure on
// purpose, saying why in the commit. (A `PacketRef` of 16 bytes costs
// nothing over 12: queues and wires pair it with a u64 time, 24 bytes
// either way.)
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Packet>() == 128);
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<PacketRef>() == 16);

#[derive(Debug, Default)]
pub struct PacketSlab {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketSlab {
    /// Store `pkt`; its handle starts at `route` (position and ECN field).
    pub fn insert(&mut self, pkt: Packet, route: RouteEcn) -> PacketRef {
        let r = |idx| PacketRef {
            idx,
            wire_bytes: pkt.wire_bytes,
            flow: pkt.flow,
            route,
        };
        match self.free.pop() {
            Some(idx) => {
                self.slots[idx as usize] = pkt;
                r(idx)
            }
            None => {
                self.slots.push(pkt);
                r(self.slots.len() as u32 - 1)
            }
        }
    }

    pub fn get(&self, r: PacketRef) -> &Packet {
        &self.slots[r.idx as usize]
    }

    pub fn get_mut(&mut self, r: PacketRef) -> &mut Packet {
        &mut self.slots[r.idx as usize]
    }

    /// Ask the cache for slot `idx` (the packet is delivered next).
    #[inline(always)]
    pub fn prefetch(&self, idx: u32) {
        if let Some(p) = self.slots.get(idx as usize) {
            crate::prefetch::lines(p, 2);
        }
    }

    pub fn remove(&mut self, r: PacketRef) -> Packet {
        self.free.push(r.idx);
        self.slots[r.idx as usize]
    }

    /// Release a packet without reading it (a drop): its slot is not touched.
    #[inline]
    pub fn free(&mut self, r: PacketRef) {
        self.free.push(r.idx);
    }

    /// Packets currently allocated.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}
