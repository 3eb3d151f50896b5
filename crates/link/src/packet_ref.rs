//! The packet handle both drivers queue: a slot index into the driver's own
//! packet store plus what a discipline and a route need. The simulator and
//! the emulator carry the same handle, so their links serve identical
//! values.

use latlab_qdisc::{Ecn, QueuedPacket};

/// The handle queues and wires hold: slab index plus what a discipline
/// needs and where the packet is on its path. Forwarding reads only the
/// handle: the slab entry is touched when the packet is sent and when it is
/// delivered, not at every hop (at 10k flows the slab does not fit in cache).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRef {
    pub idx: u32,
    pub wire_bytes: u32,
    pub flow: u32,
    /// Where the packet is on its route, and its IP ECN field.
    pub route: RouteEcn,
}

impl PacketRef {
    /// Position in the route table of the link the packet is on or next enters.
    #[inline(always)]
    pub fn route_pos(&self) -> u32 {
        self.route.pos()
    }
}

/// A route-table position (low 30 bits) and the packet's ECN codepoint
/// (RFC 3168 §5, the top two bits) in one word, so that the handle stays
/// 16 bytes: queues and wires pair it with a u64 time, and a 17th byte
/// would make every entry 32 bytes instead of 24. 2^30 route positions is
/// far past what the memory budget admits (see `Hop::MAX_INDEX` in the
/// simulator's wire module, the same bound for links and flows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouteEcn(u32);

impl RouteEcn {
    const ECN_SHIFT: u32 = 30;
    /// The largest route position the word holds.
    pub const MAX_POS: u32 = (1 << Self::ECN_SHIFT) - 1;

    #[inline(always)]
    pub const fn new(pos: u32, ecn: Ecn) -> Self {
        debug_assert!(pos <= Self::MAX_POS, "route position above 2^30");
        RouteEcn((pos & Self::MAX_POS) | ((ecn.bits() as u32) << Self::ECN_SHIFT))
    }

    #[inline(always)]
    pub fn pos(self) -> u32 {
        self.0 & Self::MAX_POS
    }

    #[inline(always)]
    pub fn ecn(self) -> Ecn {
        Ecn::from_bits((self.0 >> Self::ECN_SHIFT) as u8)
    }

    /// The next position on the route, the ECN field unchanged.
    #[inline(always)]
    pub fn advance(self) -> Self {
        debug_assert!(self.pos() < Self::MAX_POS, "route position above 2^30");
        RouteEcn(self.0 + 1)
    }

    /// Congestion Experienced set, the position unchanged.
    #[inline(always)]
    pub fn with_ce(self) -> Self {
        RouteEcn(self.0 | (u32::from(Ecn::Ce.bits()) << Self::ECN_SHIFT))
    }
}

impl QueuedPacket for PacketRef {
    fn size_bytes(&self) -> u32 {
        self.wire_bytes
    }
    fn flow_id(&self) -> u32 {
        self.flow
    }
    fn ecn(&self) -> Ecn {
        self.route.ecn()
    }
    fn set_ce(&mut self) {
        self.route = self.route.with_ce();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_and_ecn_share_a_word_without_touching_each_other() {
        for ecn in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            for pos in [0, 1, 12_345, RouteEcn::MAX_POS - 1] {
                let r = RouteEcn::new(pos, ecn);
                assert_eq!((r.pos(), r.ecn()), (pos, ecn));
                assert_eq!((r.advance().pos(), r.advance().ecn()), (pos + 1, ecn));
                assert_eq!((r.with_ce().pos(), r.with_ce().ecn()), (pos, Ecn::Ce));
            }
        }
        assert_eq!(std::mem::size_of::<PacketRef>(), 16);
    }
}
