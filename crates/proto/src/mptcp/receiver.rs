//! The receiving side of an MPTCP connection (sans-IO): N unmodified
//! [`TcpReceiver`]s, one per subflow, under one data-level receive buffer.
//!
//! A data segment's DSS mapping places it in the data sequence space. If it
//! does not fit the connection-level buffer it is discarded before its
//! subflow's receiver sees it, so the subflow sender recovers it as a loss
//! (RFC 8684 §3.3.4); otherwise the data goes to the buffer (delivered to
//! the application in data order) and the segment to its subflow receiver
//! (subflow-level ACK, SACK, delayed ACK as in TCP). Every ACK leaving on
//! any subflow carries the Data ACK and advertises the connection-level
//! window (RFC 8684 §3.3.4: the window is shared and relative to DATA_ACK).
//!
//! Driving it: `on_segment(now, i, seg)` for a segment that arrived on
//! subflow i, then `poll_transmit(now)` until `None`, then a timer at
//! `next_timeout()` (delayed ACKs), `on_timeout(now)` when it fires.

use super::recv_buffer::{Arrival, RecvBuffer, RecvBufferStats};
use crate::segment::{Dss, Segment};
use crate::tcp::{FixedRwnd, TcpConfig, TcpReceiver};

/// Connection-level counters of the receiver (the buffer's are in
/// [`RecvBufferStats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MptcpReceiverStats {
    /// Data segments without a DSS mapping (discarded: RFC 8684 §3.3.1
    /// requires one for every byte).
    pub unmapped_segments: u64,
}

/// The receiving side of an MPTCP connection.
pub struct MptcpReceiver {
    subflows: Vec<TcpReceiver>,
    buffer: RecvBuffer,
    /// Subflow to poll first next time, so no subflow's ACKs starve.
    next_poll: usize,
    /// Segments queued in the subflow receivers, all together: a poll
    /// round finds one exactly when this is not zero, so the call that
    /// ends every poll loop need not go round.
    queued_segments: usize,
    stats: MptcpReceiverStats,
}

impl MptcpReceiver {
    /// A receiver whose connection-level buffer holds `buffer_bytes`.
    pub fn new(buffer_bytes: u64) -> Self {
        MptcpReceiver {
            subflows: Vec::new(),
            buffer: RecvBuffer::new(buffer_bytes),
            next_poll: 0,
            queued_segments: 0,
            stats: MptcpReceiverStats::default(),
        }
    }

    /// Add a listening subflow receiver; returns its index (the same as the
    /// sender's for the same path).
    pub fn add_subflow(&mut self, cfg: TcpConfig) -> usize {
        // The advertised window is replaced by the connection's on every
        // ACK; the subflow's own policy only fills the field.
        let rwnd = Box::new(FixedRwnd(self.buffer.window_bytes()));
        self.subflows.push(TcpReceiver::new(cfg, rwnd));
        self.subflows.len() - 1
    }

    pub fn subflow(&self, i: usize) -> Option<&TcpReceiver> {
        self.subflows.get(i)
    }

    pub fn subflow_count(&self) -> usize {
        self.subflows.len()
    }

    pub fn buffer(&self) -> &RecvBuffer {
        &self.buffer
    }

    /// The buffer's counters up to `now_ns` (HOL blocking, drops, delivery).
    pub fn buffer_stats(&self, now_ns: u64) -> RecvBufferStats {
        self.buffer.stats(now_ns)
    }

    pub fn stats(&self) -> MptcpReceiverStats {
        self.stats
    }

    /// Bytes delivered to the application in data order.
    pub fn bytes_delivered(&self) -> u64 {
        self.buffer.data_ack()
    }

    /// A segment arrived on subflow `i`.
    pub fn on_segment(&mut self, now_ns: u64, i: usize, seg: &Segment) {
        let Some(rcv) = self.subflows.get_mut(i) else {
            return;
        };
        if seg.payload_bytes > 0 && !seg.is_syn() {
            let Some(data_seq) = seg.dss().and_then(|d| d.data_seq) else {
                self.stats.unmapped_segments += 1;
                return;
            };
            if self.buffer.offer(now_ns, data_seq, seg.payload_bytes as u64) == Arrival::Dropped {
                return;
            }
        }
        let before = rcv.queued_segments();
        rcv.on_segment(now_ns, seg);
        self.queued_segments = self.queued_segments - before + rcv.queued_segments();
    }

    /// The next ACK (or SYN-ACK) to send and its subflow.
    // Inlined into the driver's loop, as the sender's.
    #[inline]
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        if self.queued_segments == 0 {
            return None;
        }
        let n = self.subflows.len();
        // Round robin from `next_poll` (< n), wrapping without a division.
        let mut i = self.next_poll;
        for _ in 0..n {
            if i >= n {
                i = 0;
            }
            if let Some(mut seg) = self.subflows[i].poll_transmit(now_ns) {
                self.next_poll = if i + 1 >= n { 0 } else { i + 1 };
                self.queued_segments -= 1;
                seg.rwnd_bytes = self.buffer.window_bytes();
                seg.set_dss(Dss {
                    data_seq: None,
                    data_ack: Some(self.buffer.data_ack()),
                });
                return Some((i, seg));
            }
            i += 1;
        }
        debug_assert!(false, "{} segments counted, none queued", self.queued_segments);
        self.queued_segments = 0;
        None
    }

    /// The earliest delayed-ACK deadline of any subflow.
    #[inline]
    pub fn next_timeout(&self) -> Option<u64> {
        // `filter_map(..).min()` as a plain loop over a sentinel: asked
        // after every segment, and the iterator chain cost about twice as
        // many instructions. A deadline of u64::MAX is reported as such.
        let mut earliest = u64::MAX;
        let mut any = false;
        for r in &self.subflows {
            if let Some(d) = r.next_timeout() {
                earliest = earliest.min(d);
                any = true;
            }
        }
        any.then_some(earliest)
    }

    pub fn on_timeout(&mut self, now_ns: u64) {
        for r in &mut self.subflows {
            let before = r.queued_segments();
            r.on_timeout(now_ns);
            self.queued_segments = self.queued_segments - before + r.queued_segments();
        }
    }
}
