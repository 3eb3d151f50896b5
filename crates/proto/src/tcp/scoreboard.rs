//! The sender's per-segment record of outstanding data: the RFC 6675
//! scoreboard, kept for every recovery mode (NewReno uses only the segment
//! boundaries and the retransmitted bits).
//!
//! Records sit in a `VecDeque` in sequence order, contiguous, the first one
//! starting at `snd_una`. Sending new data pushes at the back, a cumulative
//! ACK pops at the front: O(1) amortised per segment outside recovery. A SACK
//! block is located by binary search and marks whole records it covers; the
//! totals (`sacked_segs`, `sacked_bytes`, `high_sack_end`) are kept
//! incrementally so that `IsLost(HighACK + 1)` is O(1). During recovery one
//! backward pass per ACK recomputes the lost marks and `pipe` (RFC 6675
//! SetPipe); see [`Scoreboard::set_pipe`].
//!
//! Segment boundaries never change except when a cumulative ACK ends inside
//! a record (the front record is trimmed); retransmissions resend exactly
//! one record, so SACK blocks from our receiver always align with records.

use std::collections::VecDeque;

pub(crate) const SACKED: u8 = 1;
/// RFC 6675 IsLost() was true at the last SetPipe.
pub(crate) const LOST: u8 = 2;
/// Sent more than once (for measurement and Karn's rule).
pub(crate) const RETRANSMITTED: u8 = 4;

/// Which un-SACKed segments count as lost (RFC 6675 IsLost()).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LossRule {
    /// RFC 6675 §4: DupThresh discontiguous SACKed segments above, or more
    /// than (DupThresh − 1)·SMSS SACKed bytes above.
    Rfc6675 { dupthresh: u32, mss: u64 },
    /// FACK: anything below snd.fack, i.e. with any SACKed byte above it.
    /// Recovery starts once snd.fack − snd.una > DupThresh·SMSS.
    Fack { dupthresh: u32, mss: u64 },
}

impl LossRule {
    /// (segments, bytes) thresholds of SACKed data above a segment that make
    /// it lost: lost when `segs ≥ .0` or `bytes > .1`.
    fn thresholds(self) -> (u64, u64) {
        match self {
            LossRule::Rfc6675 { dupthresh, mss } => {
                (dupthresh as u64, (dupthresh as u64).saturating_sub(1) * mss)
            }
            LossRule::Fack { .. } => (1, 0),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SegRec {
    pub seq: u64,
    pub len: u32,
    pub flags: u8,
}

impl SegRec {
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
    pub fn sacked(&self) -> bool {
        self.flags & SACKED != 0
    }
    pub fn lost(&self) -> bool {
        self.flags & LOST != 0
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Scoreboard {
    recs: VecDeque<SegRec>,
    sacked_segs: u64,
    sacked_bytes: u64,
    /// One past the highest SACKed byte; 0 when nothing is SACKed.
    high_sack_end: u64,
}

impl Scoreboard {
    pub fn len(&self) -> usize {
        self.recs.len()
    }

    pub fn get(&self, idx: usize) -> Option<&SegRec> {
        self.recs.get(idx)
    }

    pub fn front(&self) -> Option<&SegRec> {
        self.recs.front()
    }

    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }

    #[cfg(test)]
    pub fn high_sack_end(&self) -> u64 {
        self.high_sack_end
    }

    /// Append a newly sent segment `[seq, seq + len)`; `seq` must be the end
    /// of the last record.
    pub fn push(&mut self, seq: u64, len: u32) {
        debug_assert!(self.recs.back().is_none_or(|r| r.end() == seq));
        self.recs.push_back(SegRec { seq, len, flags: 0 });
    }

    pub fn mark_retransmitted(&mut self, idx: usize) {
        if let Some(r) = self.recs.get_mut(idx) {
            r.flags |= RETRANSMITTED;
        }
    }

    /// Index of the record containing `seq`.
    pub fn index_of(&self, seq: u64) -> Option<usize> {
        let idx = self.recs.partition_point(|r| r.end() <= seq);
        match self.recs.get(idx) {
            Some(r) if r.seq <= seq => Some(idx),
            _ => None,
        }
    }

    /// Index of the first record starting strictly above `seq`.
    fn index_above(&self, seq: u64) -> usize {
        self.recs.partition_point(|r| r.seq <= seq)
    }

    /// Cumulative ACK up to (not including) `ack`: drop covered records and
    /// trim a partially covered front record.
    pub fn ack_to(&mut self, ack: u64) {
        while let Some(front) = self.recs.front() {
            if front.end() <= ack {
                if front.sacked() {
                    self.sacked_segs -= 1;
                    self.sacked_bytes -= front.len as u64;
                }
                self.recs.pop_front();
            } else {
                if front.seq < ack {
                    let cut = ack - front.seq;
                    let f = self.recs.front_mut().expect("front exists");
                    if f.flags & SACKED != 0 {
                        self.sacked_bytes -= cut;
                    }
                    f.seq = ack;
                    f.len -= cut as u32;
                }
                break;
            }
        }
        if self.sacked_segs == 0 {
            self.high_sack_end = 0;
        }
    }

    /// Record a SACK block `[start, end)`: every record it covers entirely
    /// becomes SACKed. Returns the bytes newly SACKed.
    pub fn mark_sacked(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let mut idx = self.recs.partition_point(|r| r.end() <= start);
        let mut newly = 0;
        while let Some(r) = self.recs.get_mut(idx) {
            if r.seq >= end {
                break;
            }
            if r.seq >= start && r.end() <= end && r.flags & SACKED == 0 {
                r.flags |= SACKED;
                newly += r.len as u64;
                self.sacked_segs += 1;
                self.high_sack_end = self.high_sack_end.max(r.end());
            }
            idx += 1;
        }
        self.sacked_bytes += newly;
        newly
    }

    /// Forget all SACK information (e.g. when the receiver reneged).
    pub fn clear_sacks(&mut self) {
        for r in self.recs.iter_mut() {
            r.flags &= !(SACKED | LOST);
        }
        self.sacked_segs = 0;
        self.sacked_bytes = 0;
        self.high_sack_end = 0;
    }

    /// Whether recovery should start at HighACK + 1, from the running totals.
    /// RFC 6675: IsLost(HighACK + 1), DupThresh SACKed segments above it or
    /// more than (DupThresh − 1)·SMSS bytes. FACK: snd.fack − snd.una >
    /// DupThresh·SMSS (Mathis & Mahdavi 1996, §3).
    pub fn front_is_lost(&self, rule: LossRule) -> bool {
        match rule {
            LossRule::Rfc6675 { dupthresh, mss } => {
                self.sacked_segs >= dupthresh as u64
                    || self.sacked_bytes > (dupthresh as u64).saturating_sub(1) * mss
            }
            LossRule::Fack { dupthresh, mss } => match self.recs.front() {
                Some(f) if self.sacked_segs > 0 => {
                    self.high_sack_end.saturating_sub(f.seq) > dupthresh as u64 * mss
                }
                _ => false,
            },
        }
    }

    /// RFC 6675 SetPipe(), one backward pass: marks every un-SACKed record
    /// with IsLost() under `rule` and returns pipe = Σ over un-SACKed
    /// records of len·([not lost] + [≤ HighRxt]). `high_rxt` is RFC 6675
    /// HighRxt (inclusive), `None` before any retransmission in this
    /// recovery episode. Under FACK this is the paper's awnd: data above
    /// snd.fack plus retransmissions still outstanding.
    // Inlined into the ACK path (once per ACK in recovery): left to the
    // compiler, whether it was depended on how the crate's code fell into
    // codegen units, which any unrelated change moved (4 instructions per
    // packet-hop in the MPTCP bench, TCP and MPTCP alike).
    #[inline]
    pub fn set_pipe(&mut self, rule: LossRule, high_rxt: Option<u64>) -> u64 {
        let (seg_limit, byte_limit) = rule.thresholds();
        let mut segs_above = 0u64;
        let mut bytes_above = 0u64;
        let mut pipe = 0u64;
        for r in self.recs.iter_mut().rev() {
            if r.flags & SACKED != 0 {
                segs_above += 1;
                bytes_above += r.len as u64;
                continue;
            }
            let lost = segs_above >= seg_limit || bytes_above > byte_limit;
            if lost {
                r.flags |= LOST;
            } else {
                r.flags &= !LOST;
                pipe += r.len as u64;
            }
            if high_rxt.is_some_and(|h| r.seq <= h) {
                pipe += r.len as u64;
            }
        }
        pipe
    }

    /// SetPipe's count with no retransmission in flight, marks untouched:
    /// un-SACKed records that IsLost() under `rule` would not mark.
    pub fn pipe_estimate(&self, rule: LossRule) -> u64 {
        let (seg_limit, byte_limit) = rule.thresholds();
        let (mut segs_above, mut bytes_above, mut pipe) = (0u64, 0u64, 0u64);
        for r in self.recs.iter().rev() {
            if r.flags & SACKED != 0 {
                segs_above += 1;
                bytes_above += r.len as u64;
            } else if segs_above < seg_limit && bytes_above <= byte_limit {
                pipe += r.len as u64;
            }
        }
        pipe
    }

    /// Un-SACKed bytes of the records starting below `end`.
    pub fn unsacked_below(&self, end: u64) -> u64 {
        self.recs
            .iter()
            .take_while(|r| r.seq < end)
            .filter(|r| r.flags & SACKED == 0)
            .map(|r| r.len as u64)
            .sum()
    }

    /// The first un-SACKed record starting above `high_rxt` (inclusive
    /// HighRxt; `None` = from the start) and below the highest SACKed byte:
    /// the candidate of RFC 6675 NextSeg rules 1 and 3. Because IsLost() is
    /// monotone in the sequence number, lost un-SACKed records form a prefix,
    /// so the first candidate is lost if any candidate is.
    pub fn first_hole_above(&self, high_rxt: Option<u64>) -> Option<usize> {
        let mut idx = match high_rxt {
            Some(h) => self.index_above(h),
            None => 0,
        };
        while let Some(r) = self.recs.get(idx) {
            if r.seq >= self.high_sack_end {
                return None;
            }
            if !r.sacked() {
                return Some(idx);
            }
            idx += 1;
        }
        None
    }

    /// The highest un-SACKed record (RFC 6675 NextSeg rule 4).
    pub fn last_unsacked(&self) -> Option<usize> {
        (0..self.recs.len()).rev().find(|&i| !self.recs[i].sacked())
    }

    /// First record at index ≥ `idx` that is not SACKed.
    pub fn next_unsacked_from(&self, mut idx: usize) -> Option<usize> {
        while let Some(r) = self.recs.get(idx) {
            if !r.sacked() {
                return Some(idx);
            }
            idx += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R6675: LossRule = LossRule::Rfc6675 {
        dupthresh: 3,
        mss: 100,
    };
    const FACK: LossRule = LossRule::Fack {
        dupthresh: 3,
        mss: 100,
    };

    fn board(n: u64, mss: u32) -> Scoreboard {
        let mut sb = Scoreboard::default();
        for i in 0..n {
            sb.push(1 + i * mss as u64, mss);
        }
        sb
    }

    #[test]
    fn ack_and_trim() {
        let mut sb = board(4, 100);
        sb.ack_to(101);
        assert_eq!(sb.len(), 3);
        assert_eq!(sb.front().unwrap().seq, 101);
        sb.ack_to(151);
        assert_eq!(sb.front().unwrap().seq, 151);
        assert_eq!(sb.front().unwrap().len, 50);
        assert_eq!(sb.index_of(250), Some(1));
        assert_eq!(sb.index_of(401), None);
        sb.ack_to(401);
        assert_eq!(sb.len(), 0);
    }

    #[test]
    fn sack_marking_and_lost() {
        let mut sb = board(6, 100);
        // Segment 0 lost; 1, 2, 3 SACKed.
        assert_eq!(sb.mark_sacked(101, 401), 300);
        assert_eq!(sb.mark_sacked(101, 401), 0);
        assert!(sb.front_is_lost(R6675));
        assert_eq!(sb.high_sack_end(), 401);
        let pipe = sb.set_pipe(R6675, None);
        // Segment 0 lost (3 SACKed above): 0; segments 4, 5 in flight: 200.
        assert_eq!(pipe, 200);
        assert!(sb.get(0).unwrap().lost());
        assert_eq!(sb.first_hole_above(None), Some(0));
        assert_eq!(sb.first_hole_above(Some(100)), None);
        // After retransmitting segment 0 (HighRxt = 100): +100.
        assert_eq!(sb.set_pipe(R6675, Some(100)), 300);
        assert_eq!(sb.last_unsacked(), Some(5));
        sb.ack_to(401);
        assert_eq!(sb.sacked_bytes(), 0);
        assert_eq!(sb.high_sack_end(), 0);
    }

    #[test]
    fn pipe_estimate_counts_like_set_pipe_without_marking() {
        let mut sb = board(6, 100);
        sb.mark_sacked(101, 401);
        // Segment 0 lost, 1..3 SACKed, 4 and 5 in flight.
        assert_eq!(sb.pipe_estimate(R6675), 200);
        assert!(!sb.get(0).unwrap().lost(), "no mark set");
        assert_eq!(sb.set_pipe(R6675, None), 200);
        // Un-SACKed bytes below 501: segments 0 and 4.
        assert_eq!(sb.unsacked_below(501), 200);
        assert_eq!(sb.unsacked_below(1), 0);
    }

    #[test]
    fn partial_block_does_not_mark() {
        let mut sb = board(3, 100);
        assert_eq!(sb.mark_sacked(150, 301), 100);
        assert!(!sb.get(0).unwrap().sacked());
        assert!(!sb.get(1).unwrap().sacked());
        assert!(sb.get(2).unwrap().sacked());
    }

    #[test]
    fn fack_counts_every_hole_below_the_forward_ack() {
        // Segments 0..8; 0 and 2 lost, 1 and 3 SACKed: snd.fack = 401.
        let mut sb = board(8, 100);
        sb.mark_sacked(101, 201);
        sb.mark_sacked(301, 401);
        // snd.fack − snd.una = 400 > 3·100 : FACK starts recovery; RFC 6675
        // (2 SACKed segments, 200 bytes ≤ 200) does not yet.
        assert!(sb.front_is_lost(FACK));
        assert!(!sb.front_is_lost(R6675));
        // FACK: 0 and 2 lost, 4..8 in flight: awnd = 400.
        assert_eq!(sb.set_pipe(FACK, None), 400);
        assert!(sb.get(0).unwrap().lost() && sb.get(2).unwrap().lost());
        assert!(!sb.get(4).unwrap().lost());
        // RFC 6675 counts them all in the pipe (too few SACKed above).
        assert_eq!(sb.set_pipe(R6675, None), 600);
        // Retransmitted data (HighRxt covers 0..2) adds retran_data.
        assert_eq!(sb.set_pipe(FACK, Some(300)), 600);
    }

    #[test]
    fn fack_needs_more_than_dupthresh_segments_of_forward_progress() {
        let mut sb = board(8, 100);
        sb.mark_sacked(201, 301); // snd.fack − snd.una = 300, not > 300
        assert!(!sb.front_is_lost(FACK));
        sb.mark_sacked(301, 401);
        assert!(sb.front_is_lost(FACK));
        sb.ack_to(401);
        assert!(!sb.front_is_lost(FACK));
    }
}
