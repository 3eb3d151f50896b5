//! The packet handle both drivers queue: a slot index into the driver's own
//! packet store plus what a discipline and a route need. The simulator and
//! the emulator carry the same handle, so their links serve identical
//! values.

use latlab_qdisc::QueuedPacket;

/// The handle queues and wires hold: slab index plus what a discipline
/// needs and where the packet is on its path. Forwarding reads only the
/// handle: the slab entry is touched when the packet is sent and when it is
/// delivered, not at every hop (at 10k flows the slab does not fit in cache).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRef {
    pub idx: u32,
    pub wire_bytes: u32,
    pub flow: u32,
    /// Position in the route table of the link the packet is on or next enters.
    pub route_pos: u32,
}

impl QueuedPacket for PacketRef {
    fn size_bytes(&self) -> u32 {
        self.wire_bytes
    }
    fn flow_id(&self) -> u32 {
        self.flow
    }
}
