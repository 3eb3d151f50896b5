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
//!
//! An application that does not read at once (a proxy whose relay is full
//! stops reading its socket) is the opt-in [`TcpReceiver::set_application_reads`]:
//! in-order bytes then wait in the receive buffer until
//! [`TcpReceiver::read`], and the advertised window is the controller's
//! window (the buffer) less the unread bytes, so a reader that stops closes
//! the window and back-pressures the sender. Off by default, and then
//! nothing of the above changes.

use std::collections::VecDeque;

use super::config::TcpConfig;
use super::rwnd::{RwndController, SegmentArrival};
use crate::segment::{Flags, SackBlock, Segment, MAX_SACK_BLOCKS};
use crate::Ecn;

#[cfg(doc)]
use super::rwnd::FixedRwnd;

/// Counters kept by the receiver.
///
/// Laid out in declaration order (`repr(C)`): the three that every data
/// segment moves come first, so that in `TcpReceiver` they share the
/// lines of its per-segment fields, which they follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct ReceiverStats {
    /// Data segments received (duplicates included).
    pub segments_received: u64,
    /// Payload bytes delivered in order to the application.
    pub bytes_delivered: u64,
    /// ACKs sent (SYN-ACKs included).
    pub acks_sent: u64,
    /// Data segments carrying nothing new.
    pub duplicate_segments: u64,
    /// Data segments that arrived above a hole.
    pub out_of_order_segments: u64,
    /// SYN-ACKs sent.
    pub syn_acks_sent: u64,
    /// ACKs sent because the delayed-ACK timer expired.
    pub delayed_ack_timeouts: u64,
    /// Data segments that arrived with Congestion Experienced (RFC 3168).
    pub ce_segments: u64,
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
///
/// Laid out in declaration order (`repr(C)`), as `TcpSender` is: the
/// configuration ends with what is read per segment (see [`TcpConfig`]),
/// then come the fields every data segment reads or writes, then the
/// counters, the per-segment ones first; the SACK blocks last sent (read
/// only while data is out of order) and the application-read state lie
/// beyond. A data segment then touches bytes 72 to 288 only, 216 bytes:
/// four 64-byte lines where the simulator's flow puts the receiver (at
/// the start of a line). The test `per_segment_fields_are_contiguous`
/// holds the span.
#[repr(C)]
pub struct TcpReceiver {
    cfg: TcpConfig,
    // ----- read or written per data segment -----
    rwnd: Box<dyn RwndController>,
    out: VecDeque<Segment>,
    /// Initial receive sequence number (the peer's SYN).
    irs: u64,
    rcv_nxt: u64,
    /// RFC 7323 §4.3 Last.ACK.sent.
    last_ack_sent: u64,
    /// Out-of-order data: sorted, disjoint, non-adjacent `[start, end)`
    /// ranges, all above `rcv_nxt`.
    ooo: Vec<(u64, u64)>,
    /// RFC 7323 §4.3 TS.Recent.
    ts_recent: Option<u64>,
    delack_deadline: Option<u64>,
    sack_recent_len: usize,
    /// In-order segments received since the last ACK (delayed ACK).
    unacked_segments: u32,
    state: State,
    /// The application reads on demand ([`Self::set_application_reads`]).
    app_reads: bool,
    /// ECN agreed in the handshake (RFC 3168 §6.1.1).
    ecn_on: bool,
    /// Set ECE on every ACK: a CE segment arrived and no CWR since
    /// (RFC 3168 §6.1.3).
    ece_due: bool,
    stats: ReceiverStats,
    // ----- read only with data out of order (SACK) or application reads -----
    /// Blocks of the last SACK option sent, most recent first (RFC 2018 §4).
    sack_recent: [SackBlock; MAX_SACK_BLOCKS],
    /// In-order bytes delivered but not yet read (only with `app_reads`).
    unread_bytes: u64,
    /// RCV.NXT + RCV.WND of the last segment sent (only with `app_reads`):
    /// the right edge the peer knows, which the window never moves left of.
    adv_right_edge: u64,
    /// ACKs sent only because a read opened the window.
    window_updates: u64,
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
            app_reads: false,
            unread_bytes: 0,
            adv_right_edge: 0,
            window_updates: 0,
            ecn_on: false,
            ece_due: false,
        }
    }

    /// Let the application read on demand: from now on in-order bytes wait
    /// in the receive buffer until [`Self::read`] takes them, and the window
    /// advertised is the controller's window (the buffer's size) less the
    /// unread bytes, as a socket whose reader has stopped advertises less
    /// and less (RFC 793 RCV.WND). Call it before the first segment. As in
    /// the default mode, a segment beyond the window (the sender's
    /// zero-window probe carries a full segment) is still accepted, so the
    /// unread bytes can exceed the buffer by that probe.
    pub fn set_application_reads(&mut self, on: bool) {
        self.app_reads = on;
    }

    /// In-order bytes the application has not read yet (always 0 unless
    /// [`Self::set_application_reads`]).
    pub fn unread_bytes(&self) -> u64 {
        self.unread_bytes
    }

    /// ACKs sent only because a read opened a closing window.
    pub fn window_updates_sent(&self) -> u64 {
        self.window_updates
    }

    /// The application reads up to `max_bytes` of the unread in-order
    /// bytes; returns how many it took. If the window the peer knows has
    /// fallen to half the buffer or less and the read at least doubles it,
    /// a window update is sent at once (Linux `tcp_cleanup_rbuf`), else the
    /// next ACK carries the larger window.
    pub fn read(&mut self, now_ns: u64, max_bytes: u64) -> u64 {
        let n = self.unread_bytes.min(max_bytes);
        if n == 0 {
            return 0;
        }
        self.unread_bytes -= n;
        self.rwnd.on_copied(now_ns, n);
        if self.state == State::Established && self.out.is_empty() {
            let known = self.adv_right_edge.saturating_sub(self.rcv_nxt);
            let now_wnd = self.window_at(self.rcv_nxt);
            if known.saturating_mul(2) <= self.rwnd.rwnd_bytes()
                && now_wnd > known
                && now_wnd >= known.saturating_mul(2)
            {
                self.window_updates += 1;
                self.push_ack(now_ns, None);
            }
        }
        n
    }

    /// The window to advertise with acknowledgement number `ack` when the
    /// application reads on demand: from `ack` to the buffer's right edge
    /// (bytes read so far + buffer), with receiver silly-window avoidance
    /// (RFC 1122 §4.2.3.3: no window smaller than min(buffer/2, MSS)), and
    /// never left of the edge already advertised (RFC 793: do not shrink).
    fn window_at(&self, ack: u64) -> u64 {
        let buffer = self.rwnd.rwnd_bytes();
        let read_to = self.rcv_nxt.saturating_sub(self.unread_bytes);
        let mut wnd = read_to.saturating_add(buffer).saturating_sub(ack);
        if wnd < (buffer / 2).min(self.cfg.mss_bytes as u64) {
            wnd = 0;
        }
        wnd.max(self.adv_right_edge.saturating_sub(ack))
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

    /// A segment arrived whose IP header had ECN field `ecn`.
    ///
    /// RFC 3168 §6.1.3: after a CE data segment every ACK carries ECE
    /// until a segment with CWR arrives; a CWR segment that is itself CE
    /// keeps ECE on.
    pub fn on_segment_ecn(&mut self, now_ns: u64, seg: &Segment, ecn: Ecn) {
        if self.ecn_on && self.state == State::Established && seg.payload_bytes > 0 && !seg.is_syn() {
            if seg.flags.contains(Flags::CWR) {
                self.ece_due = false;
            }
            if ecn == Ecn::Ce {
                self.ece_due = true;
                self.stats.ce_segments += 1;
            }
        }
        self.on_segment(now_ns, seg);
    }

    /// ECN was agreed in the handshake.
    pub fn ecn_on(&self) -> bool {
        self.ecn_on
    }

    /// A segment arrived (its IP header Not-ECT, or a driver that does not
    /// read the ECN field: see [`Self::on_segment_ecn`]).
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
            if self.app_reads {
                // Copied when the application reads it (`read`).
                self.unread_bytes += self.rcv_nxt - before;
            } else {
                // The application reads at once: delivered is copied.
                self.rwnd.on_copied(now_ns, self.rcv_nxt - before);
            }
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
        // RFC 3168 §6.1.1: an ECN-setup SYN has ECE and CWR; the ECN-setup
        // SYN-ACK answers with ECE alone.
        let ecn_setup = Flags::ECE | Flags::CWR;
        self.ecn_on = self.cfg.ecn && seg.flags.contains(ecn_setup);
        let synack = Segment {
            seq: 0,
            ack: self.irs.saturating_add(1),
            payload_bytes: 0,
            flags: if self.ecn_on {
                Flags::SYN_ACK | Flags::ECE
            } else {
                Flags::SYN_ACK
            },
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
            flags: if self.ece_due {
                Flags::ACK | Flags::ECE
            } else {
                Flags::ACK
            },
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

    /// Segments queued: as many calls of [`poll_transmit`](Self::poll_transmit)
    /// return one each (with none queued it returns `None` and changes
    /// nothing).
    pub fn queued_segments(&self) -> usize {
        self.out.len()
    }

    /// Next segment to send (SYN-ACK or ACK).
    pub fn poll_transmit(&mut self, _now_ns: u64) -> Option<Segment> {
        let mut seg = self.out.pop_front()?;
        if self.app_reads {
            // The window as it is when the segment leaves: the application
            // may have read since the ACK was queued.
            seg.rwnd_bytes = self.window_at(seg.ack);
            self.adv_right_edge = self.adv_right_edge.max(seg.ack.saturating_add(seg.rwnd_bytes));
        }
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

#[cfg(test)]
mod app_read_tests {
    use super::*;
    use crate::tcp::FixedRwnd;

    const MSS: u32 = 1448;

    /// A receiver without delayed ACKs, its buffer `segments` MSS, past
    /// the handshake (SYN at 0, data from 1).
    fn receiver(app_reads: bool, segments: u64) -> TcpReceiver {
        let mut cfg = TcpConfig::linux();
        cfg.delayed_ack = None;
        let buffer = segments * MSS as u64;
        let mut r = TcpReceiver::new(cfg, Box::new(FixedRwnd(buffer)));
        r.set_application_reads(app_reads);
        r.on_segment(
            0,
            &Segment {
                flags: Flags::SYN,
                ..Default::default()
            },
        );
        let synack = r.poll_transmit(0).unwrap();
        assert_eq!(synack.rwnd_bytes, buffer);
        r
    }

    fn data(k: u64) -> Segment {
        Segment {
            seq: 1 + k * MSS as u64,
            ack: 1,
            payload_bytes: MSS,
            flags: Flags::ACK,
            ..Default::default()
        }
    }

    #[test]
    fn by_default_the_application_reads_at_once_and_the_window_stays() {
        let mut r = receiver(false, 4);
        for k in 0..10 {
            r.on_segment(k, &data(k));
            assert_eq!(r.poll_transmit(k).unwrap().rwnd_bytes, 4 * MSS as u64);
        }
        assert_eq!(r.unread_bytes(), 0);
        assert_eq!(r.read(10, u64::MAX), 0);
    }

    #[test]
    fn unread_bytes_close_the_window_and_a_read_reopens_it() {
        let mss = MSS as u64;
        let mut r = receiver(true, 4);
        // Each segment left unread takes one MSS off the window.
        for k in 0..4 {
            r.on_segment(k, &data(k));
            let ack = r.poll_transmit(k).unwrap();
            assert_eq!(ack.ack, 1 + (k + 1) * mss);
            assert_eq!(ack.rwnd_bytes, (3 - k) * mss, "after segment {k}");
        }
        assert_eq!(r.unread_bytes(), 4 * mss);
        assert_eq!(r.stats().bytes_delivered, 4 * mss);
        // A small read (half an MSS) is not worth a window update (receiver
        // SWS avoidance), and the next ACK would still say 0.
        assert_eq!(r.read(5, mss / 2), mss / 2);
        assert_eq!(r.poll_transmit(5), None);
        // Reading three segments' worth opens the window from 0: an update.
        assert_eq!(r.read(6, 3 * mss), 3 * mss);
        let upd = r.poll_transmit(6).unwrap();
        assert_eq!((upd.ack, upd.rwnd_bytes), (1 + 4 * mss, 3 * mss + mss / 2));
        assert_eq!(r.window_updates_sent(), 1);
        assert_eq!(r.unread_bytes(), mss / 2);
    }

    #[test]
    fn the_window_never_moves_its_right_edge_left() {
        // Buffer 4 MSS, nothing read: the edge stays at 1 + 4 MSS while the
        // window closes; a probe beyond it is accepted (as in the default
        // mode) and ACKed with window 0.
        let mss = MSS as u64;
        let mut r = receiver(true, 4);
        let mut edges = Vec::new();
        for k in 0..5 {
            r.on_segment(k, &data(k));
            let ack = r.poll_transmit(k).unwrap();
            edges.push(ack.ack + ack.rwnd_bytes);
        }
        assert_eq!(r.unread_bytes(), 5 * mss);
        // Half a segment read leaves 3.5 MSS unread, a window of half an
        // MSS (silly): still window 0 at the probe's end, 1 + 5 MSS.
        assert_eq!(r.read(5, 3 * mss / 2), 3 * mss / 2);
        r.on_segment(6, &data(0)); // a duplicate: ACKed at once
        let ack = r.poll_transmit(6).unwrap();
        edges.push(ack.ack + ack.rwnd_bytes);
        let edge = 1 + 4 * mss;
        assert_eq!(edges, [edge, edge, edge, edge, edge + mss, edge + mss]);
        // A full segment of room: the edge moves to where reading put it.
        r.read(7, mss);
        r.on_segment(8, &data(0));
        let ack = r.poll_transmit(8).unwrap();
        assert_eq!(ack.ack + ack.rwnd_bytes, 1 + 4 * mss + 5 * mss / 2);
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;
    use std::mem::offset_of;

    /// The fields a data segment reads lie together (see `TcpReceiver`'s
    /// layout): the configuration's per-segment part, the receiver's own
    /// fields, the per-segment counters; the rest after.
    #[test]
    fn per_segment_fields_are_contiguous() {
        let cfg_hot = offset_of!(TcpConfig, delayed_ack);
        for flag in [
            offset_of!(TcpConfig, sack),
            offset_of!(TcpConfig, timestamps),
            offset_of!(TcpConfig, ecn),
            offset_of!(TcpConfig, rwnd_bytes),
        ] {
            assert!(flag > cfg_hot, "a per-segment field before delayed_ack");
        }
        let counters_end = [
            offset_of!(ReceiverStats, segments_received),
            offset_of!(ReceiverStats, bytes_delivered),
            offset_of!(ReceiverStats, acks_sent),
        ]
        .into_iter()
        .max()
        .unwrap()
            + 8;
        assert_eq!(counters_end, 24, "the per-segment counters come first");
        let hot_start = offset_of!(TcpReceiver, cfg) + cfg_hot;
        let hot_end = offset_of!(TcpReceiver, stats) + counters_end;
        assert_eq!((hot_start, hot_end), (72, 288));
        assert!(offset_of!(TcpReceiver, sack_recent) >= hot_end);
        assert!(offset_of!(TcpReceiver, unread_bytes) >= hot_end);
    }
}
