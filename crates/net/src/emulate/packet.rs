//! Packets read from a TUN device: what is a well-formed IP packet, which
//! flow it belongs to, and a bounded pool of buffers that holds them while
//! they are queued or propagating.
//!
//! The pool is the emulator's memory bound: it never holds more than
//! `max_packets` buffers. The queue disciplines bound what is queued; the
//! delay lines hold at most rate × delay worth of packets; a packet that
//! finds the pool full anyway is dropped and counted (`no_buffer`), never
//! stored.

use latlab_link::{PacketRef, RouteEcn};
use latlab_qdisc::Ecn;

/// Why a packet read from a TUN device is not forwarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// Neither IPv4 nor IPv6 (the version nibble says something else, or
    /// the packet is empty).
    NotIp,
    /// An IPv4/IPv6 packet whose header is truncated or inconsistent with
    /// the bytes read.
    Malformed,
}

/// Check that `bytes` hold one IPv4 or IPv6 packet: a complete header whose
/// length fields fit what was read (RFC 791 §3.1, RFC 8200 §3). Trailing
/// bytes past the IP total length are tolerated, as a router would.
pub fn check_ip(bytes: &[u8]) -> Result<(), Reject> {
    let Some(&first) = bytes.first() else {
        return Err(Reject::NotIp);
    };
    match first >> 4 {
        4 => {
            if bytes.len() < 20 {
                return Err(Reject::Malformed);
            }
            let ihl_bytes = usize::from(first & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([bytes[2], bytes[3]]));
            if ihl_bytes < 20 || ihl_bytes > total || total > bytes.len() {
                return Err(Reject::Malformed);
            }
            Ok(())
        }
        6 => {
            if bytes.len() < 40 {
                return Err(Reject::Malformed);
            }
            let payload = usize::from(u16::from_be_bytes([bytes[4], bytes[5]]));
            // A zero payload length with a jumbogram option is not carried
            // on a 1500-byte link; treat it as the header alone.
            if 40 + payload > bytes.len() {
                return Err(Reject::Malformed);
            }
            Ok(())
        }
        _ => Err(Reject::NotIp),
    }
}

/// A flow identifier for disciplines that classify: FNV-1a over the
/// addresses, the protocol and (for TCP/UDP without options past the
/// bytes read) the ports. Only called on packets [`check_ip`] accepted.
pub fn flow_hash(bytes: &[u8]) -> u32 {
    let (addrs, proto, l4) = match bytes[0] >> 4 {
        4 => {
            let ihl = usize::from(bytes[0] & 0x0f) * 4;
            (&bytes[12..20], bytes[9], ihl)
        }
        _ => (&bytes[8..40], bytes[6], 40),
    };
    let mut h: u32 = 0x811c_9dc5;
    let mut mix = |b: u8| {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    };
    addrs.iter().copied().for_each(&mut mix);
    mix(proto);
    // TCP (6) and UDP (17): the ports are the first four bytes.
    if (proto == 6 || proto == 17) && bytes.len() >= l4 + 4 {
        bytes[l4..l4 + 4].iter().copied().for_each(&mut mix);
    }
    h
}

/// The ECN field of an IP packet (RFC 3168 §5): the low two bits of the
/// IPv4 TOS byte or of the IPv6 Traffic Class. Only called on packets
/// [`check_ip`] accepted.
pub fn ip_ecn(bytes: &[u8]) -> Ecn {
    match bytes[0] >> 4 {
        4 => Ecn::from_bits(bytes[1]),
        // Traffic Class: the low nibble of byte 0 and the high nibble of byte 1.
        _ => Ecn::from_bits(bytes[1] >> 4),
    }
}

/// Set Congestion Experienced in the IP header of an ECT packet (RFC 3168
/// §5), as a router that marks does; for IPv4 the header checksum is
/// updated incrementally (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')). A
/// Not-ECT packet or one already CE is left alone. Returns whether the
/// header changed.
pub fn set_ip_ce(bytes: &mut [u8]) -> bool {
    if !ip_ecn(bytes).is_ect() {
        return false;
    }
    match bytes[0] >> 4 {
        4 => {
            let old_word = u16::from_be_bytes([bytes[0], bytes[1]]);
            bytes[1] |= Ecn::Ce.bits();
            let new_word = u16::from_be_bytes([bytes[0], bytes[1]]);
            let hc = u16::from_be_bytes([bytes[10], bytes[11]]);
            let mut sum = u32::from(!hc) + u32::from(!old_word) + u32::from(new_word);
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            bytes[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        }
        _ => bytes[1] |= Ecn::Ce.bits() << 4,
    }
    true
}

/// Fixed-size buffers for packets in flight, addressed by index (the `idx`
/// of the [`PacketRef`] the queues hold). Grows on demand up to
/// `max_packets`, never beyond.
pub struct Pool {
    slot_bytes: usize,
    max_packets: usize,
    data: Vec<u8>,
    len: Vec<u32>,
    /// When the packet was read from its TUN device (ns since the start).
    read_ns: Vec<u64>,
    free: Vec<u32>,
}

impl Pool {
    pub fn new(slot_bytes: usize, max_packets: usize) -> Self {
        Pool {
            slot_bytes,
            max_packets,
            data: Vec::new(),
            len: Vec::new(),
            read_ns: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Copy `bytes` (at most `slot_bytes`) into a free buffer; None when
    /// the pool is full.
    pub fn insert(&mut self, bytes: &[u8], read_ns: u64) -> Option<PacketRef> {
        debug_assert!(bytes.len() <= self.slot_bytes);
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                let n = self.len.len();
                if n >= self.max_packets {
                    return None;
                }
                self.data.resize((n + 1) * self.slot_bytes, 0);
                self.len.push(0);
                self.read_ns.push(0);
                n as u32
            }
        };
        let i = idx as usize;
        let start = i * self.slot_bytes;
        self.data[start..start + bytes.len()].copy_from_slice(bytes);
        self.len[i] = bytes.len() as u32;
        self.read_ns[i] = read_ns;
        Some(PacketRef {
            idx,
            wire_bytes: bytes.len() as u32,
            flow: flow_hash(bytes),
            // The emulator forwards along its own line of hops; the
            // simulator's route table is not used. The queues read (and
            // mark) the packet's own ECN field.
            route: RouteEcn::new(0, ip_ecn(bytes)),
        })
    }

    pub fn bytes(&self, idx: u32) -> &[u8] {
        let i = idx as usize;
        let start = i * self.slot_bytes;
        &self.data[start..start + self.len[i] as usize]
    }

    /// A queue marked the packet (its handle says CE): write CE into its
    /// IP header. Returns whether the header changed.
    pub fn set_ce(&mut self, idx: u32) -> bool {
        let i = idx as usize;
        let start = i * self.slot_bytes;
        set_ip_ce(&mut self.data[start..start + self.len[i] as usize])
    }

    pub fn read_ns(&self, idx: u32) -> u64 {
        self.read_ns[idx as usize]
    }

    pub fn release(&mut self, idx: u32) {
        self.free.push(idx);
    }

    /// Buffers currently holding a packet.
    pub fn in_use(&self) -> usize {
        self.len.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4(total: u16, ihl: u8) -> Vec<u8> {
        let mut p = vec![0u8; usize::from(total).max(20)];
        p[0] = 0x40 | ihl;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[9] = 17;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p
    }

    /// The IPv4 header checksum from scratch (RFC 791): 0 over a header
    /// whose checksum field is right.
    fn header_sum(h: &[u8]) -> u16 {
        let mut sum: u32 = h
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn a_mark_sets_ce_and_keeps_the_ipv4_checksum_valid() {
        for tos in [0x02u8, 0x01, 0xb8 | 0x02, 0xfd] {
            let mut p = ipv4(40, 5);
            p[1] = tos;
            p[8] = 64;
            let c = header_sum(&p[..20]);
            p[10..12].copy_from_slice(&c.to_be_bytes());
            assert_eq!(header_sum(&p[..20]), 0);
            assert!(ip_ecn(&p).is_ect());
            assert!(set_ip_ce(&mut p));
            assert_eq!((ip_ecn(&p), p[1] & !0b11), (Ecn::Ce, tos & !0b11), "tos {tos:#x}");
            assert_eq!(header_sum(&p[..20]), 0, "checksum after marking tos {tos:#x}");
            // Already CE: nothing to change.
            assert!(!set_ip_ce(&mut p));
        }
        // Not-ECT is never marked.
        let mut p = ipv4(40, 5);
        assert!(!set_ip_ce(&mut p));
        assert_eq!(ip_ecn(&p), Ecn::NotEct);
        // IPv6: the ECN bits of the Traffic Class (byte 1's high nibble).
        let mut v6 = vec![0u8; 48];
        v6[0] = 0x60;
        v6[1] = 0x20; // ECT(0)
        assert_eq!(ip_ecn(&v6), Ecn::Ect0);
        assert!(set_ip_ce(&mut v6));
        assert_eq!((v6[0], v6[1], ip_ecn(&v6)), (0x60, 0x30, Ecn::Ce));
    }

    #[test]
    fn the_pool_hands_the_queues_the_packets_ecn_field() {
        let mut pool = Pool::new(100, 4);
        let mut p = ipv4(40, 5);
        p[1] = 0x02;
        let r = pool.insert(&p, 0).unwrap();
        assert_eq!(r.route.ecn(), Ecn::Ect0);
        assert!(pool.set_ce(r.idx));
        assert_eq!(ip_ecn(pool.bytes(r.idx)), Ecn::Ce);
    }

    #[test]
    fn accepts_ip_and_rejects_the_rest() {
        assert_eq!(check_ip(&ipv4(28, 5)), Ok(()));
        let mut v6 = vec![0u8; 48];
        v6[0] = 0x60;
        v6[4..6].copy_from_slice(&8u16.to_be_bytes());
        assert_eq!(check_ip(&v6), Ok(()));
        assert_eq!(check_ip(&[]), Err(Reject::NotIp));
        assert_eq!(check_ip(&[0x50; 40]), Err(Reject::NotIp));
        assert_eq!(check_ip(&ipv4(28, 5)[..19]), Err(Reject::Malformed));
        assert_eq!(check_ip(&ipv4(28, 4)), Err(Reject::Malformed)); // IHL < 5
        let mut long = ipv4(28, 5);
        long[2..4].copy_from_slice(&100u16.to_be_bytes()); // claims more than read
        assert_eq!(check_ip(&long), Err(Reject::Malformed));
        v6[4..6].copy_from_slice(&100u16.to_be_bytes());
        assert_eq!(check_ip(&v6), Err(Reject::Malformed));
        assert_eq!(check_ip(&v6[..39]), Err(Reject::Malformed));
    }

    #[test]
    fn flows_differ_by_ports() {
        let a = ipv4(28, 5);
        let mut b = a.clone();
        b[20] = 1;
        assert_eq!(flow_hash(&a), flow_hash(&a.clone()));
        assert_ne!(flow_hash(&a), flow_hash(&b));
    }

    #[test]
    fn pool_is_bounded_and_reuses_buffers() {
        let mut pool = Pool::new(64, 2);
        let a = pool.insert(&ipv4(28, 5), 7).unwrap();
        let b = pool.insert(&ipv4(40, 5), 8).unwrap();
        assert_eq!((a.wire_bytes, b.wire_bytes), (28, 40));
        assert!(pool.insert(&ipv4(28, 5), 9).is_none());
        assert_eq!(pool.in_use(), 2);
        assert_eq!(pool.bytes(b.idx).len(), 40);
        assert_eq!(pool.read_ns(a.idx), 7);
        pool.release(a.idx);
        let c = pool.insert(&ipv4(30, 5), 10).unwrap();
        assert_eq!(c.idx, a.idx);
        assert_eq!(pool.bytes(c.idx).len(), 30);
    }
}
