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
    /// ECN-Echo (RFC 3168 §6.1): the receiver saw Congestion Experienced.
    pub const ECE: Flags = Flags(0x40);
    /// Congestion Window Reduced (RFC 3168 §6.1): the sender has reduced.
    pub const CWR: Flags = Flags(0x80);

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
    /// Which fields of an MPTCP DSS option the segment carries (RFC 8684
    /// §3.3); read and write it through [`Segment::dss`] and
    /// [`Segment::set_dss`]. Plain TCP leaves it empty.
    pub dss_present: DssPresent,
}

/// The parts of an MPTCP Data Sequence Signal option (RFC 8684 §3.3) the
/// model uses: the data sequence number of the segment's first payload byte
/// (the mapping; the subflow sequence number and length are the segment's
/// own `seq` and `payload_bytes`, one mapping per segment) and the
/// connection-level cumulative acknowledgement (Data ACK).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dss {
    /// Data sequence number of the first payload byte (the DSN mapping).
    pub data_seq: Option<u64>,
    /// Data ACK: the next data sequence number the receiver expects.
    pub data_ack: Option<u64>,
}

/// Presence bits of the DSS option's fields: one byte, so that `Segment`
/// (and the simulator's packet) keeps its size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DssPresent(pub u8);

impl DssPresent {
    const DATA_SEQ: u8 = 0x01;
    const DATA_ACK: u8 = 0x02;

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// SACK blocks that fit next to timestamps and a DSS option with a mapping
/// or a Data ACK in the 40-byte option space (RFC 8684 §3.3: the DSS option
/// takes the room of one SACK block; Linux trims SACK the same way).
pub const MAX_SACK_BLOCKS_WITH_DSS: usize = MAX_SACK_BLOCKS - 1;

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

    /// The MPTCP DSS option, if the segment carries one.
    pub fn dss(&self) -> Option<Dss> {
        if self.dss_present.is_empty() {
            return None;
        }
        // Stored in the last SACK slot, which a segment with a DSS option
        // never uses (see `set_dss`).
        let slot = self.sack[MAX_SACK_BLOCKS - 1];
        let has = |bit: u8| self.dss_present.0 & bit != 0;
        Some(Dss {
            data_seq: has(DssPresent::DATA_SEQ).then_some(slot.start),
            data_ack: has(DssPresent::DATA_ACK).then_some(slot.end),
        })
    }

    /// Attach an MPTCP DSS option. As on the wire, the option takes the room
    /// of the third SACK block: at most [`MAX_SACK_BLOCKS_WITH_DSS`] blocks
    /// are kept (the first ones, the most recently changed, RFC 2018 §4).
    pub fn set_dss(&mut self, dss: Dss) {
        let mut present = 0;
        let mut slot = SackBlock::default();
        if let Some(seq) = dss.data_seq {
            present |= DssPresent::DATA_SEQ;
            slot.start = seq;
        }
        if let Some(ack) = dss.data_ack {
            present |= DssPresent::DATA_ACK;
            slot.end = ack;
        }
        self.dss_present = DssPresent(present);
        if present != 0 {
            self.sack_len = self.sack_len.min(MAX_SACK_BLOCKS_WITH_DSS as u8);
            self.sack[MAX_SACK_BLOCKS - 1] = slot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dss_round_trips_and_trims_sack() {
        let mut seg = Segment {
            sack_len: 3,
            sack: [
                SackBlock { start: 10, end: 20 },
                SackBlock { start: 30, end: 40 },
                SackBlock { start: 50, end: 60 },
            ],
            ..Default::default()
        };
        assert_eq!(seg.dss(), None);
        seg.set_dss(Dss {
            data_seq: None,
            data_ack: Some(7_000),
        });
        assert_eq!(
            seg.dss(),
            Some(Dss {
                data_seq: None,
                data_ack: Some(7_000)
            })
        );
        assert_eq!(seg.sack_blocks(), &seg.sack[..2]);
        assert_eq!(seg.sack_blocks()[1], SackBlock { start: 30, end: 40 });
        let both = Dss {
            data_seq: Some(u64::MAX),
            data_ack: Some(0),
        };
        seg.set_dss(both);
        assert_eq!(seg.dss(), Some(both));
    }

    #[test]
    fn dss_does_not_grow_the_segment() {
        // The simulator copies segments on every hop; the option lives in
        // the SACK slot it displaces plus one presence byte in padding.
        #[cfg(target_pointer_width = "64")]
        assert_eq!(std::mem::size_of::<Segment>(), 112);
    }
}
