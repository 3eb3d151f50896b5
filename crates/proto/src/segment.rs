//! The TCP segment as the protocol machines see it.
//!
//! Sequence numbers are 64-bit byte offsets that never wrap (the initial
//! sequence number is 0 and the SYN consumes it, so data byte `i` of the
//! stream has sequence number `1 + i`). A real-network driver maps these to
//! 32-bit wire sequence numbers at its edge; the pcap writer does the same.

/// At most three SACK blocks fit in the 40-byte option space next to the
/// timestamp option (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A half-open range `[start, end)` of sequence space the receiver holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// TCP header flags that the model uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(pub u8);

impl Flags {
    pub const SYN: Flags = Flags(0x02);
    pub const ACK: Flags = Flags(0x10);
    pub const FIN: Flags = Flags(0x01);
    pub const SYN_ACK: Flags = Flags(0x12);

    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

/// One TCP segment: the header fields the model needs, no payload bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// Sequence number of the first byte (or of the SYN).
    pub seq: u64,
    /// Cumulative acknowledgement: the next byte expected (valid with `Flags::ACK`).
    pub ack: u64,
    /// Payload length in bytes (0 for a pure ACK or a bare SYN).
    pub payload_bytes: u32,
    pub flags: Flags,
    /// Advertised receive window in bytes (already scaled).
    pub rwnd_bytes: u64,
    /// RFC 7323 timestamps in nanoseconds of the sender's clock; `None` when off.
    pub ts_val_ns: Option<u64>,
    /// Echo of the peer's most recent `ts_val_ns` (RFC 7323 §4.3 TS.Recent).
    pub ts_ecr_ns: Option<u64>,
    /// SACK blocks, most recently changed first (RFC 2018 §4); `sack_len` are valid.
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub sack_len: u8,
    /// Not on the wire: true when the sender sent this range before. Used
    /// for measurement only; the protocol logic never reads it from a peer.
    pub is_retransmit: bool,
}

impl Segment {
    pub fn is_syn(&self) -> bool {
        self.flags.contains(Flags::SYN)
    }

    pub fn has_ack(&self) -> bool {
        self.flags.contains(Flags::ACK)
    }

    /// Sequence space the segment occupies (a SYN or FIN counts as one).
    pub fn seq_len(&self) -> u64 {
        let mut len = self.payload_bytes as u64;
        if self.flags.contains(Flags::SYN) {
            len += 1;
        }
        if self.flags.contains(Flags::FIN) {
            len += 1;
        }
        len
    }

    /// One past the last sequence number of the segment.
    pub fn end_seq(&self) -> u64 {
        self.seq + self.seq_len()
    }

    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }
}
