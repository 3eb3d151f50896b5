//! Data-sequence mappings (RFC 8684 §3.3.1): which data-level bytes each
//! range of a subflow's own sequence space carries.
//!
//! The sender records one mapping per chunk it hands a subflow (the
//! scheduler gives a subflow exactly one segment's worth at a time, so a
//! segment never spans two mappings and each segment's DSS option carries
//! the mapping of its first byte). A subflow's retransmission of its own
//! sequence numbers resends the same data bytes; a reinjection of data on
//! another subflow is a new mapping there. Mappings leave the table when
//! the subflow acknowledges them.

/// Subflow bytes `[subflow_seq, subflow_seq + len)` carry data bytes
/// `[data_seq, data_seq + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub subflow_seq: u64,
    pub data_seq: u64,
    pub len: u32,
    /// Already queued for reinjection on another subflow (after an RTO).
    pub reinjected: bool,
}

impl Mapping {
    pub fn subflow_end(&self) -> u64 {
        self.subflow_seq + self.len as u64
    }

    pub fn data_end(&self) -> u64 {
        self.data_seq + self.len as u64
    }
}

/// A subflow's outstanding mappings, in subflow-sequence order and
/// contiguous in subflow space.
///
/// A plain vector whose acknowledged prefix is skipped, not removed, one
/// mapping at a time: a mapping is pushed for every segment sent and
/// dropped at the ACK that covers it, and a `VecDeque`'s wrapping index
/// cost more on both than the vector's push and a moved start. The dead
/// prefix is dropped when nothing is outstanding, or shifted out once it
/// is as long as the rest (at most one move per mapping).
#[derive(Clone, Debug, Default)]
pub struct DssMap {
    /// The outstanding mappings are `maps[head..]`.
    maps: Vec<Mapping>,
    head: usize,
}

/// A dead prefix shorter than this is never shifted out (a few mappings
/// moved for nothing).
const MIN_COMPACT_MAPPINGS: usize = 32;

impl DssMap {
    /// The outstanding mappings.
    fn live(&self) -> &[Mapping] {
        &self.maps[self.head..]
    }

    /// Record the next chunk; it must start where the last one ended.
    pub fn push(&mut self, subflow_seq: u64, data_seq: u64, len: u32) {
        debug_assert!(self.live().last().is_none_or(|m| m.subflow_end() == subflow_seq));
        self.maps.push(Mapping {
            subflow_seq,
            data_seq,
            len,
            reinjected: false,
        });
    }

    /// The data sequence number of subflow byte `subflow_seq`.
    pub fn data_seq_of(&self, subflow_seq: u64) -> Option<u64> {
        let live = self.live();
        // New data goes out in the chunk just recorded: try the last one
        // before searching (mappings are disjoint, so the answer is the same).
        if let Some(m) = live.last() {
            if m.subflow_seq <= subflow_seq && subflow_seq < m.subflow_end() {
                return Some(m.data_seq + (subflow_seq - m.subflow_seq));
            }
        }
        let i = live.partition_point(|m| m.subflow_end() <= subflow_seq);
        let m = live.get(i)?;
        (m.subflow_seq <= subflow_seq).then(|| m.data_seq + (subflow_seq - m.subflow_seq))
    }

    /// The subflow acknowledged everything below `subflow_una`.
    pub fn ack_to(&mut self, subflow_una: u64) {
        while self
            .maps
            .get(self.head)
            .is_some_and(|m| m.subflow_end() <= subflow_una)
        {
            self.head += 1;
        }
        if self.head == self.maps.len() {
            self.maps.clear();
            self.head = 0;
        } else if self.head >= MIN_COMPACT_MAPPINGS && 2 * self.head >= self.maps.len() {
            self.maps.drain(..self.head);
            self.head = 0;
        }
    }

    /// The outstanding mapping that carries data byte `data_seq`, if any.
    pub fn carrying(&self, data_seq: u64) -> Option<&Mapping> {
        self.live()
            .iter()
            .find(|m| m.data_seq <= data_seq && data_seq < m.data_end())
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Mapping> {
        self.maps[self.head..].iter_mut()
    }

    pub fn len(&self) -> usize {
        self.maps.len() - self.head
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_and_ack() {
        let mut m = DssMap::default();
        m.push(1, 5_000, 100);
        m.push(101, 0, 100); // a reinjection: data below the previous chunk
        m.push(201, 9_000, 50);
        assert_eq!(m.data_seq_of(1), Some(5_000));
        assert_eq!(m.data_seq_of(150), Some(49));
        assert_eq!(m.data_seq_of(250), Some(9_049));
        assert_eq!(m.data_seq_of(251), None);
        assert_eq!(m.data_seq_of(0), None);
        assert_eq!(m.carrying(60).map(|x| x.subflow_seq), Some(101));
        m.ack_to(150);
        assert_eq!(m.len(), 2, "a partly acknowledged mapping stays");
        m.ack_to(201);
        assert_eq!(m.len(), 1);
        assert_eq!(m.carrying(60), None);
    }
}
