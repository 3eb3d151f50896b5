//! The TCP data receiver: passive open, in-order delivery, cumulative and
//! selective acknowledgements, delayed ACKs and RFC 7323 timestamps.
//!
//! The application reads every in-order byte at once, so the receive buffer
//! holds only out-of-order data and the advertised window is whatever the
//! receiver-window controller ([`RwndController`], module `rwnd`) says: a
//! constant ([`FixedRwnd`], the default) or an adaptive controller that
//! uses the window as a control knob. The controller sees every data
//! segment (size and timestamps) and every in-order delivery. Data beyond
//! the advertised window is accepted rather than dropped: with an
//! always-empty buffer there is nothing to protect, and a zero-window probe
//! is then simply delivered.

use std::collections::VecDeque;

use super::config::TcpConfig;
use super::rwnd::{RwndController, SegmentArrival};
use crate::segment::{Flags, SackBlock, Segment, MAX_SACK_BLOCKS};

#[cfg(doc)]
use super::rwnd::FixedRwnd;

/// Counters kept by the receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Payload bytes delivered in order to the application.
    pub bytes_delivered: u64,
    /// Data segments received (duplicates included).
    pub segments_received: u64,
    /// Data segments carrying nothing new.
    pub duplicate_segments: u64,
    /// Data segments that arrived above a hole.
    pub out_of_order_segments: u64,
    /// ACKs sent (SYN-ACKs included).
    pub acks_sent: u64,
    /// SYN-ACKs sent.
    pub syn_acks_sent: u64,
    /// ACKs sent because the delayed-ACK timer expired.
    pub delayed_ack_timeouts: u64,
}

/// Bound on stored out-of-order ranges; a segment that would need more is
/// dropped (a peer cannot make the receiver allocate without bound).
const MAX_OOO_RANGES: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Listen,
    Established,
}

/// The TCP receiver state machine (sans-IO).
pub struct TcpReceiver {
    cfg: TcpConfig,
    rwnd: Box<dyn RwndController>,
    state: State,
    /// Initial receive sequence number (the peer's SYN).
    irs: u64,
    rcv_nxt: u64,
    /// Out-of-order data: sorted, disjoint, non-adjacent `[start, end)`
    /// ranges, all above `rcv_nxt`.
    ooo: Vec<(u64, u64)>,
    /// Blocks of the last SACK option sent, most recent first (RFC 2018 §4).
    sack_recent: [SackBlock; MAX_SACK_BLOCKS],
    sack_recent_len: usize,
    /// RFC 7323 §4.3 Last.ACK.sent and TS.Recent.
    last_ack_sent: u64,
    ts_recent: Option<u64>,
    /// In-order segments received since the last ACK (delayed ACK).
    unacked_segments: u32,
    delack_deadline: Option<u64>,
    out: VecDeque<Segment>,
    stats: ReceiverStats,
}

impl TcpReceiver {
    /// A listening receiver. The advertised window comes from `rwnd` only
    /// (`cfg.rwnd_bytes` is what [`FixedRwnd`] is usually built from).
    pub fn new(cfg: TcpConfig, rwnd: Box<dyn RwndController>) -> Self {
        TcpReceiver {
            cfg,
            rwnd,
            state: State::Listen,
            irs: 0,
            rcv_nxt: 0,
            ooo: Vec::new(),
            sack_recent: [SackBlock::default(); MAX_SACK_BLOCKS],
            sack_recent_len: 0,
            last_ack_sent: 0,
            ts_recent: None,
            unacked_segments: 0,
            delack_deadline: None,
            out: VecDeque::new(),
            stats: ReceiverStats::default(),
        }
    }

    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }

    /// The window the controller advertises now.
    pub fn rwnd_bytes(&self) -> u64 {
        self.rwnd.rwnd_bytes()
    }

    /// The receiver-window controller (its name, its RTT estimate).
    pub fn rwnd_controller(&self) -> &dyn RwndController {
        &*self.rwnd
    }

    /// Next sequence number expected (RCV.NXT).
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Out-of-order ranges currently held.
    pub fn ooo_ranges(&self) -> &[(u64, u64)] {
        &self.ooo
    }

    pub fn on_segment(&mut self, now_ns: u64, seg: &Segment) {
        if seg.is_syn() {
            self.on_syn(now_ns, seg);
            return;
        }
        if self.state != State::Established || seg.payload_bytes == 0 {
            return; // pure ACKs from the sender carry nothing for us
        }
        let seq = seg.seq;
        let Some(end) = seq.checked_add(seg.payload_bytes as u64) else {
            return;
        };
        if seq <= self.irs {
            return; // not data sequence space
        }
        self.stats.segments_received += 1;
        self.rwnd.on_segment(&SegmentArrival {
            now_ns,
            payload_bytes: seg.payload_bytes,
            ts_val_ns: seg.ts_val_ns,
            ts_ecr_ns: seg.ts_ecr_ns,
        });

        // RFC 7323 §4.3 (2): TS.Recent from the segment covering Last.ACK.sent.
        if self.cfg.timestamps {
            if let Some(v) = seg.ts_val_ns {
                if seq <= self.last_ack_sent && self.last_ack_sent < end {
                    self.ts_recent = Some(v);
                }
            }
        }

        if end <= self.rcv_nxt {
            // Entirely old: ACK at once (RFC 793 / RFC 5681 §4.2).
            self.stats.duplicate_segments += 1;
            self.push_ack(now_ns, None);
            return;
        }
        if seq <= self.rcv_nxt {
            // In order (possibly overlapping old data).
            let filled_hole = !self.ooo.is_empty();
            let before = self.rcv_nxt;
            self.rcv_nxt = end;
            let mut drained = 0;
            for &(s, e) in &self.ooo {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                drained += 1;
            }
            self.ooo.drain(..drained);
            self.stats.bytes_delivered += self.rcv_nxt - before;
            // The application reads at once: delivered is copied.
            self.rwnd.on_copied(now_ns, self.rcv_nxt - before);
            if filled_hole {
                // RFC 5681 §4.2: ACK at once for a segment filling (part of) a gap.
                self.push_ack(now_ns, None);
                return;
            }
            self.unacked_segments += 1;
            match self.cfg.delayed_ack {
                Some(d) if self.unacked_segments < d.segments => {
                    if self.delack_deadline.is_none() {
                        self.delack_deadline = Some(now_ns.saturating_add(d.timeout_ns));
                    }
                }
                _ => self.push_ack(now_ns, None),
            }
            return;
        }
        // Out of order: store and ACK at once (RFC 5681 §4.2).
        let range = self.insert_ooo(seq, end);
        if range.is_some() {
            self.stats.out_of_order_segments += 1;
        } else {
            self.stats.duplicate_segments += 1;
        }
        let trigger = range.or_else(|| self.ooo_range_containing(seq));
        self.push_ack(now_ns, trigger);
    }

    fn on_syn(&mut self, now_ns: u64, seg: &Segment) {
        match self.state {
            State::Listen => {
                self.state = State::Established;
                self.irs = seg.seq;
                self.rcv_nxt = seg.seq.saturating_add(1);
            }
            State::Established => {
                if seg.seq != self.irs {
                    return;
                }
            }
        }
        // A (re)transmitted SYN: remember its TSval so that the SYN-ACK
        // echoes the SYN it answers (as Linux does for a retransmitted SYN).
        if self.cfg.timestamps && self.rcv_nxt == self.irs.saturating_add(1) {
            if let Some(v) = seg.ts_val_ns {
                self.ts_recent = Some(v);
            }
        }
        let ts = self.cfg.timestamps;
        let synack = Segment {
            seq: 0,
            ack: self.irs.saturating_add(1),
            payload_bytes: 0,
            flags: Flags::SYN_ACK,
            rwnd_bytes: self.rwnd.rwnd_bytes(),
            ts_val_ns: if ts { Some(now_ns) } else { None },
            ts_ecr_ns: if ts { self.ts_recent } else { None },
            ..Default::default()
        };
        self.last_ack_sent = self.last_ack_sent.max(synack.ack);
        self.stats.syn_acks_sent += 1;
        self.out.push_back(synack);
    }

    /// Insert `[start, end)` (start > rcv_nxt) into the out-of-order store.
    /// Returns the merged range containing it, or `None` when it brought
    /// nothing new (or the store is full).
    fn insert_ooo(&mut self, start: u64, end: u64) -> Option<(u64, u64)> {
        // First range that ends at or after `start` (adjacent ranges merge).
        let i = self.ooo.partition_point(|&(_, e)| e < start);
        // Ranges i..j touch or overlap [start, end).
        let mut j = i;
        while j < self.ooo.len() && self.ooo[j].0 <= end {
            j += 1;
        }
        if j == i + 1 && self.ooo[i].0 <= start && self.ooo[i].1 >= end {
            return None; // already held
        }
        if i == j {
            if self.ooo.len() >= MAX_OOO_RANGES {
                return None;
            }
            self.ooo.insert(i, (start, end));
            return Some((start, end));
        }
        let merged = (start.min(self.ooo[i].0), end.max(self.ooo[j - 1].1));
        self.ooo[i] = merged;
        self.ooo.drain(i + 1..j);
        Some(merged)
    }

    fn ooo_range_containing(&self, seq: u64) -> Option<(u64, u64)> {
        let i = self.ooo.partition_point(|&(_, e)| e <= seq);
        match self.ooo.get(i) {
            Some(&(s, e)) if s <= seq => Some((s, e)),
            _ => None,
        }
    }

    /// Build the SACK option (RFC 2018 §4): first the block holding the
    /// segment that triggered this ACK, then the most recently reported
    /// blocks still held (as their current, possibly grown, ranges), then any
    /// other held ranges in ascending order, up to three.
    fn build_sack(&mut self, trigger: Option<(u64, u64)>) -> ([SackBlock; MAX_SACK_BLOCKS], u8) {
        let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
        let mut n = 0usize;
        if !self.cfg.sack || self.ooo.is_empty() {
            self.sack_recent_len = 0;
            return (blocks, 0);
        }
        let add = |blocks: &mut [SackBlock; MAX_SACK_BLOCKS], n: &mut usize, r: (u64, u64)| {
            if *n < MAX_SACK_BLOCKS && !blocks[..*n].iter().any(|b| b.start == r.0) {
                blocks[*n] = SackBlock { start: r.0, end: r.1 };
                *n += 1;
            }
        };
        if let Some(r) = trigger {
            add(&mut blocks, &mut n, r);
        }
        for k in 0..self.sack_recent_len {
            let b = self.sack_recent[k];
            if b.start < self.rcv_nxt {
                continue; // now cumulatively acknowledged
            }
            if let Some(r) = self.ooo_range_containing(b.start) {
                add(&mut blocks, &mut n, r);
            }
        }
        for &r in &self.ooo {
            if n >= MAX_SACK_BLOCKS {
                break;
            }
            add(&mut blocks, &mut n, r);
        }
        self.sack_recent = blocks;
        self.sack_recent_len = n;
        (blocks, n as u8)
    }

    fn push_ack(&mut self, now_ns: u64, trigger: Option<(u64, u64)>) {
        let (sack, sack_len) = self.build_sack(trigger);
        let ts = self.cfg.timestamps;
        let seg = Segment {
            seq: 1,
            ack: self.rcv_nxt,
            payload_bytes: 0,
            flags: Flags::ACK,
            rwnd_bytes: self.rwnd.rwnd_bytes(),
            ts_val_ns: if ts { Some(now_ns) } else { None },
            ts_ecr_ns: if ts { self.ts_recent } else { None },
            sack,
            sack_len,
            is_retransmit: false,
            dss_present: Default::default(),
        };
        self.last_ack_sent = self.rcv_nxt;
        self.unacked_segments = 0;
        self.delack_deadline = None;
        self.out.push_back(seg);
    }

    /// Next segment to send (SYN-ACK or ACK).
    pub fn poll_transmit(&mut self, _now_ns: u64) -> Option<Segment> {
        let seg = self.out.pop_front()?;
        self.stats.acks_sent += 1;
        Some(seg)
    }

    /// The delayed-ACK deadline, if an ACK is being held.
    pub fn next_timeout(&self) -> Option<u64> {
        self.delack_deadline
    }

    pub fn on_timeout(&mut self, now_ns: u64) {
        if let Some(d) = self.delack_deadline {
            if now_ns >= d {
                self.stats.delayed_ack_timeouts += 1;
                self.push_ack(now_ns, None);
            }
        }
    }
}
