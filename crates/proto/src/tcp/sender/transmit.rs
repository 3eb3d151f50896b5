//! What to send next: the SYN, a retransmission (fast, go-back-N after an
//! RTO, RFC 6675 NextSeg) or new data, within cwnd, the peer's window and
//! the pacer's release time.

use super::state::{CongestionState, Handshake, SackRecovery};
use super::timers::Timer;
use super::TcpSender;
use crate::segment::{Flags, Segment};

/// New data a sender has room for, as [`TcpSender::new_chunk`] decided it:
/// its length, and whether it goes as a zero-window probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewChunk {
    len: u32,
    probe: bool,
}

impl NewChunk {
    pub fn len_bytes(self) -> u32 {
        self.len
    }
}

/// What `poll_transmit` would send next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tx {
    Syn,
    /// Retransmit the record at `idx`.
    Retransmit {
        idx: usize,
        kind: RetxKind,
    },
    /// New data `[snd_max, snd_max + len)`.
    New {
        len: u32,
        probe: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RetxKind {
    /// Fast retransmit of snd_una (RFC 5681 / 6582 partial ACK / RFC 6675 (4.3)).
    Una,
    /// Go-back-N after an RTO.
    GoBack,
    /// RFC 6675 NextSeg rule 1 or 3.
    NextSeg,
    /// RFC 6675 NextSeg rule 4.
    Rescue,
}

impl TcpSender {
    /// The next segment to send now, or `None`.
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<Segment> {
        self.last_now_ns = self.last_now_ns.max(now_ns);
        self.maybe_idle_restart(now_ns);
        let Some(tx) = self.choose() else {
            self.maybe_arm_persist(now_ns);
            if self.rate.is_some() {
                self.check_app_limited();
            }
            return None;
        };
        if tx != Tx::Syn && self.pacing_active() && now_ns < self.pacer.release_ns() {
            return None;
        }
        self.commit(tx, now_ns)
    }

    /// [`poll_transmit`](Self::poll_transmit) for a caller that often asks
    /// a sender with nothing to send (an MPTCP connection asks every
    /// subflow for what it owes before scheduling new data): the same
    /// result and the same effect, but O(1) when [`owes_nothing`](Self::owes_nothing).
    pub fn poll_owed(&mut self, now_ns: u64) -> Option<Segment> {
        if self.owes_nothing() {
            // All `poll_transmit` would have done: idle restart and the
            // persist timer need data waiting, and `choose` finds nothing.
            self.last_now_ns = self.last_now_ns.max(now_ns);
            return None;
        }
        self.poll_transmit(now_ns)
    }

    /// Certainly nothing to send, whatever the window: no SYN due, and once
    /// established no data waiting, no go-back-N in progress and no fast
    /// recovery (whose retransmissions do not wait for new data). Then
    /// `choose` returns `None`; the converse need not hold.
    pub fn owes_nothing(&self) -> bool {
        match self.handshake {
            Handshake::Established => {
                !self.data_waiting() && self.snd_nxt >= self.snd_max && self.ca.recovery().is_none()
            }
            Handshake::SynSent { syn_due, .. } => !syn_due,
            Handshake::Closed => true,
        }
    }

    /// Earliest of the retransmission/persist deadline and the pacing
    /// release time (only when a segment is waiting for its pacing slot).
    pub fn next_timeout(&self) -> Option<u64> {
        let mut t = self.timers.next_deadline();
        let release = self.pacer.release_ns();
        if self.pacing_active() && release > self.last_now_ns {
            if let Some(tx) = self.choose() {
                if tx != Tx::Syn {
                    t = Some(t.map_or(release, |x| x.min(release)));
                }
            }
        }
        t
    }

    /// RFC 5681 §4.1: restart from at most the initial window after an idle
    /// period longer than the RTO.
    fn maybe_idle_restart(&mut self, now_ns: u64) {
        if !(self.handshake == Handshake::Established
            && self.cfg.idle_restart
            && self.snd_max == self.snd_una
            && self.data_waiting())
        {
            return;
        }
        let Some(last) = self.last_data_send_ns else {
            return;
        };
        if now_ns.saturating_sub(last) > self.rtt.rto_ns() {
            let iw = self.cfg.initial_window_bytes().max(self.mss);
            self.ccs.cwnd_bytes = self.ccs.cwnd_bytes.min(iw);
            self.cc.on_idle_restart(&mut self.ccs, now_ns);
            self.ccs.cwnd_bytes = self.ccs.cwnd_bytes.max(self.mss);
            self.last_data_send_ns = None;
            self.stats.idle_restarts += 1;
        }
    }

    /// Zero window with nothing outstanding: arm the persist timer, its
    /// interval the RTO doubled per unanswered probe (RFC 1122 §4.2.2.17).
    fn maybe_arm_persist(&mut self, now_ns: u64) {
        if self.handshake == Handshake::Established
            && self.data_waiting()
            && self.snd_max == self.snd_una
            && self.peer_rwnd == 0
            && !self.timers.is_armed(Timer::Persist)
            && !self.persist.probe_due
        {
            let mut t = self.rtt.rto_ns();
            for _ in 0..self.persist.backoff.min(32) {
                t = t.saturating_mul(2).min(self.cfg.max_rto_ns);
            }
            self.timers.set(Timer::Persist, now_ns.saturating_add(t));
        }
    }

    /// Decide what to send next, ignoring pacing. Pure: `poll_transmit`
    /// commits the decision, `next_timeout` only asks whether there is one.
    pub(super) fn choose(&self) -> Option<Tx> {
        self.choose_for(self.data_end)
    }

    /// `choose` as if the application's stream ended at `data_end` (the
    /// MPTCP scheduler asks what one more chunk would do, see
    /// [`TcpSender::new_data_len`]).
    fn choose_for(&self, data_end: u64) -> Option<Tx> {
        match self.handshake {
            Handshake::SynSent { syn_due: true, .. } => return Some(Tx::Syn),
            Handshake::Established => {}
            _ => return None,
        }
        if let CongestionState::Recovery(r) = &self.ca {
            let outstanding = self.snd_max > self.snd_una;
            if r.retransmit_una && outstanding && self.sb.len() > 0 {
                // RFC 5681 §3.2 step 2 / RFC 6582 partial ACK / RFC 6675
                // (4.3): retransmitted regardless of cwnd.
                return Some(Tx::Retransmit {
                    idx: 0,
                    kind: RetxKind::Una,
                });
            }
        }
        if let Some(s) = self.ca.sack() {
            return self.next_seg(s, data_end);
        }
        if self.snd_nxt < self.snd_max {
            if let Some(tx) = self.go_back_n() {
                return tx;
            }
            // Everything left below snd_max is SACKed: continue with new data.
        }
        self.new_data(data_end)
    }

    /// The payload length `poll_transmit(now_ns)` would send as new data if
    /// the application offered `extra_bytes` more than it has: `None` when
    /// data is already waiting, when something else (a retransmission) goes
    /// first, or when the window or the pacer holds new data back. Pure; an
    /// MPTCP scheduler uses it to give a subflow exactly one segment's worth.
    pub fn new_data_len(&self, now_ns: u64, extra_bytes: u64) -> Option<u32> {
        self.new_chunk(now_ns, extra_bytes).map(NewChunk::len_bytes)
    }

    /// [`new_data_len`](Self::new_data_len) with the whole decision, for
    /// [`send_chunk`](Self::send_chunk). The answer depends on
    /// `extra_bytes` only through `min(extra_bytes, mss_bytes())` (the
    /// offer is all past `snd_max`, and no segment takes more than one MSS
    /// of it), which lets a caller offer at most one segment's worth.
    #[inline]
    pub fn new_chunk(&self, now_ns: u64, extra_bytes: u64) -> Option<NewChunk> {
        if self.data_waiting() || !self.finite || extra_bytes == 0 {
            return None;
        }
        if self.pacing_active() && now_ns < self.pacer.release_ns() {
            return None;
        }
        let data_end = self
            .data_end
            .saturating_add(extra_bytes)
            .min(super::INFINITE_DATA_END);
        // The usual state (established, no recovery, no go-back-N):
        // `choose_for` would go straight to `new_data`.
        let tx = if matches!(self.handshake, Handshake::Established)
            && self.snd_nxt >= self.snd_max
            && self.ca.recovery().is_none()
        {
            self.new_data(data_end)
        } else {
            self.choose_for(data_end)
        };
        match tx {
            Some(Tx::New { len, probe }) => Some(NewChunk { len, probe }),
            _ => None,
        }
    }

    /// Hand over the chunk [`new_chunk`](Self::new_chunk) found room for
    /// and send it: the same segment and the same effect as
    /// `add_app_bytes(chunk.len_bytes())` then `poll_transmit(now_ns)`,
    /// without deciding again. `chunk` must come from `new_chunk(now_ns, _)`
    /// on this sender with nothing done to it in between; then
    /// `poll_transmit` would decide exactly `chunk`: the offer grew by the
    /// chunk's length, so `new_data` finds the same length, and an idle
    /// restart (cwnd down to at most the initial window, nothing in flight)
    /// still leaves room for one segment.
    #[inline]
    pub fn send_chunk(&mut self, now_ns: u64, chunk: NewChunk) -> Segment {
        self.add_app_bytes(chunk.len as u64);
        self.last_now_ns = self.last_now_ns.max(now_ns);
        self.maybe_idle_restart(now_ns);
        let tx = Tx::New {
            len: chunk.len,
            probe: chunk.probe,
        };
        debug_assert_eq!(self.choose(), Some(tx), "send_chunk: the chunk is stale");
        self.commit(tx, now_ns).expect("new data is always committed")
    }

    /// Go-back-N after an RTO from `snd_nxt`, skipping SACKed segments, in
    /// slow start (RFC 5681 §3.1). `None`: nothing left to resend below
    /// `snd_max`; `Some(None)`: the window holds the next one back.
    fn go_back_n(&self) -> Option<Option<Tx>> {
        let idx = self.sb.index_of(self.snd_nxt);
        let Some(idx) = idx else { return Some(None) };
        let idx = if self.cfg.recovery.uses_sack() {
            self.sb.next_unsacked_from(idx)?
        } else {
            idx
        };
        let Some(rec) = self.sb.get(idx) else {
            return Some(None);
        };
        let in_flight = self.window_flight(rec.seq);
        let rwnd_ok = rec.end() <= self.snd_una.saturating_add(self.peer_rwnd);
        if (in_flight + rec.len as u64 <= self.ccs.cwnd_bytes && rwnd_ok) || self.persist.probe_due {
            return Some(Some(Tx::Retransmit {
                idx,
                kind: RetxKind::GoBack,
            }));
        }
        Some(None)
    }

    /// New data at `snd_max` within cwnd (RFC 5681 FlightSize counts from
    /// snd_una) and the peer's window; a zero-window probe when due; a
    /// short segment into a window smaller than one with nothing
    /// outstanding (sender SWS avoidance, RFC 1122 §4.2.3.4, simplified).
    // Inlined: `new_chunk` (an MPTCP subflow's question, once or more per
    // segment) would otherwise pay a call for a few comparisons.
    #[inline]
    fn new_data(&self, data_end: u64) -> Option<Tx> {
        if self.snd_max >= data_end {
            return None;
        }
        let len = (data_end - self.snd_max).min(self.mss) as u32;
        let in_flight = self.window_flight(self.snd_max);
        let right_edge = self.snd_una.saturating_add(self.peer_rwnd);
        let cwnd_ok = in_flight + len as u64 <= self.ccs.cwnd_bytes;
        if cwnd_ok && self.snd_max + len as u64 <= right_edge {
            return Some(Tx::New { len, probe: false });
        }
        if self.persist.probe_due {
            return Some(Tx::New { len, probe: true });
        }
        if cwnd_ok && self.snd_max == self.snd_una && right_edge > self.snd_max {
            let short = (right_edge - self.snd_max).min(len as u64) as u32;
            return Some(Tx::New {
                len: short,
                probe: false,
            });
        }
        None
    }

    /// RFC 6675 §4 NextSeg(), gated by step (C): cwnd − pipe ≥ 1 SMSS.
    fn next_seg(&self, s: &SackRecovery, data_end: u64) -> Option<Tx> {
        if self.ccs.cwnd_bytes < s.pipe.saturating_add(self.mss) {
            return None;
        }
        // Rules 1 and 3 share one candidate: the first un-SACKed segment
        // above HighRxt and below the highest SACKed octet.
        let hole = self.sb.first_hole_above(s.high_rxt);
        if let Some(idx) = hole {
            if self.sb.get(idx).is_some_and(|r| r.lost()) {
                // Rule 1.
                return Some(Tx::Retransmit {
                    idx,
                    kind: RetxKind::NextSeg,
                });
            }
        }
        // Rule 2: new data if the receiver's window allows.
        if self.snd_max < data_end {
            let len = (data_end - self.snd_max).min(self.mss) as u32;
            if self.snd_max + len as u64 <= self.snd_una.saturating_add(self.peer_rwnd) {
                return Some(Tx::New { len, probe: false });
            }
        }
        // Rule 3.
        if let Some(idx) = hole {
            return Some(Tx::Retransmit {
                idx,
                kind: RetxKind::NextSeg,
            });
        }
        // Rule 4: one rescue retransmission per recovery episode, once
        // HighACK > RescueRxt (HighACK = snd_una − 1).
        let rescue_ok = self.cfg.rescue_retransmission
            && match s.rescue_rxt {
                None => true,
                Some(r) => self.snd_una.saturating_sub(1) > r,
            };
        if rescue_ok {
            if let Some(idx) = self.sb.last_unsacked() {
                return Some(Tx::Retransmit {
                    idx,
                    kind: RetxKind::Rescue,
                });
            }
        }
        None
    }

    fn base_segment(&self, now_ns: u64) -> Segment {
        let ts = self.cfg.timestamps;
        Segment {
            seq: 0,
            ack: 0,
            payload_bytes: 0,
            flags: Flags::ACK,
            rwnd_bytes: self.cfg.rwnd_bytes,
            ts_val_ns: if ts { Some(now_ns) } else { None },
            ts_ecr_ns: if ts { self.ts_recent } else { None },
            ..Default::default()
        }
    }

    /// Commit a decision from `choose` and build the segment.
    fn commit(&mut self, tx: Tx, now_ns: u64) -> Option<Segment> {
        let mut seg = self.base_segment(now_ns);
        let was_idle = self.rate.is_some() && self.snd_max == self.snd_una;
        match tx {
            Tx::Syn => {
                self.commit_syn(now_ns, &mut seg);
                return Some(seg);
            }
            Tx::Retransmit { idx, kind } => self.commit_retransmit(idx, kind, &mut seg)?,
            Tx::New { len, probe } => self.commit_new(len, probe, now_ns, &mut seg),
        }
        // The first data segment also completes the handshake (carries ACK).
        seg.ack = 1;
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += seg.payload_bytes as u64;
        if self.rate.is_some() {
            self.rate_on_send(&seg, now_ns, was_idle);
        } else if self.pacing_active() {
            let gap = self
                .pacer
                .gap_ns(&self.ccs, self.rtt.srtt_ns(), self.cfg.wire_bytes(&seg));
            self.pacer.on_send(now_ns, gap);
        }
        self.last_data_send_ns = Some(now_ns);
        self.arm_rto_if_idle(now_ns);
        Some(seg)
    }

    fn commit_syn(&mut self, now_ns: u64, seg: &mut Segment) {
        let again = self.stats.syns_sent > 0;
        let mut retransmitted = again;
        if let Handshake::SynSent {
            syn_due,
            sent_ns,
            retransmitted: r,
        } = &mut self.handshake
        {
            *syn_due = false;
            *r |= again;
            *sent_ns = now_ns;
            retransmitted = *r;
        }
        self.stats.syns_sent += 1;
        seg.seq = 0;
        seg.flags = self.ecn_syn_flags();
        seg.ts_ecr_ns = if self.cfg.timestamps { Some(0) } else { None };
        seg.is_retransmit = retransmitted;
        self.snd_max = 1;
        self.snd_nxt = 1;
        self.arm_rto_if_idle(now_ns);
    }

    fn commit_retransmit(&mut self, idx: usize, kind: RetxKind, seg: &mut Segment) -> Option<()> {
        let rec = *self.sb.get(idx)?;
        self.sb.mark_retransmitted(idx);
        seg.seq = rec.seq;
        seg.payload_bytes = rec.len;
        seg.is_retransmit = true;
        // Karn's rule (RFC 6298 §3): no sample from a retransmitted
        // segment, so stop timing.
        self.timed = None;
        let top = rec.end() - 1;
        let recover = self.recover;
        match kind {
            RetxKind::Una => {
                if let Some(r) = self.ca.recovery_mut() {
                    r.retransmit_una = false;
                }
                if let Some(s) = self.ca.sack_mut() {
                    if s.high_rxt.is_none() {
                        // RFC 6675 (4.3).
                        s.high_rxt = Some(top);
                        s.rescue_rxt = Some(top);
                    }
                    s.pipe += rec.len as u64;
                }
            }
            RetxKind::GoBack => {
                self.snd_nxt = rec.end();
                self.persist.probe_due = false;
            }
            RetxKind::NextSeg => {
                if let Some(s) = self.ca.sack_mut() {
                    // RFC 6675 (C.2), (C.4).
                    s.high_rxt = Some(top);
                    s.pipe += rec.len as u64;
                }
            }
            RetxKind::Rescue => {
                if let Some(s) = self.ca.sack_mut() {
                    // RFC 6675 rule 4: RescueRxt = RecoveryPoint; HighRxt unchanged.
                    s.rescue_rxt = Some(recover.saturating_sub(1));
                    s.pipe += rec.len as u64;
                }
                self.stats.rescue_retransmits += 1;
            }
        }
        self.stats.retransmitted_segments += 1;
        self.stats.retransmitted_bytes += rec.len as u64;
        Some(())
    }

    fn commit_new(&mut self, len: u32, probe: bool, now_ns: u64, seg: &mut Segment) {
        seg.seq = self.snd_max;
        seg.payload_bytes = len;
        self.ecn_mark_new_data(seg, probe);
        self.sb.push(self.snd_max, len);
        self.snd_max += len as u64;
        self.snd_nxt = self.snd_max;
        if let Some(s) = self.ca.sack_mut() {
            s.pipe += len as u64; // RFC 6675 (C.4)
        }
        // The flag first: with timestamps `timed`, in the sender's cold
        // lines, is not read.
        if !self.cfg.timestamps && self.timed.is_none() {
            self.timed = Some((self.snd_max, now_ns));
        }
        if probe {
            self.persist.probe_due = false;
            self.stats.window_probes += 1;
        }
    }

    /// A data segment of a rate-based controller's sender left: record it
    /// for the delivery-rate estimator (`tcp_rate_skb_sent`), tell the
    /// controller when it restarts from nothing in flight
    /// (`CA_EVENT_TX_START`), and pace the next one at the controller's rate
    /// (Linux's internal pacing, `tcp_update_skb_after_send`: the packet's
    /// length over `sk_pacing_rate`, counted from the first 10 data
    /// segments on, `data_segs_out >= 10`). The length paced is the TCP
    /// payload's, as Linux's: `tcp_update_skb_after_send` is given the
    /// original skb, without the headers pushed on its clone, so the packet
    /// rate is pacing_gain · bw · 99 % exactly.
    #[cold]
    fn rate_on_send(&mut self, seg: &Segment, now_ns: u64, was_idle: bool) {
        let Some(rate) = self.rate.as_deref_mut() else {
            return;
        };
        let end = seg.seq + seg.payload_bytes as u64;
        rate.on_send(seg.seq, end, now_ns, seg.is_retransmit);
        let app_limited = rate.is_app_limited();
        if was_idle && !seg.is_retransmit {
            self.cc.on_tx_start(&mut self.ccs, now_ns, app_limited);
        }
        let rate_bytes_per_s = self.cc.pacing_rate_bytes_per_s();
        if self.stats.segments_sent >= LINUX_UNPACED_SEGMENTS && rate_bytes_per_s > 0 {
            let len = seg.payload_bytes as u128;
            let gap = len * crate::NS_PER_SEC as u128 / rate_bytes_per_s as u128;
            self.pacer.on_send(now_ns, gap.min(u64::MAX as u128) as u64);
        }
    }

    /// `tcp_rate_check_app_limited`: nothing to send while the window has
    /// room marks the delivery-rate samples application-limited.
    fn check_app_limited(&mut self) {
        let app_limited = !self.data_waiting() && !self.app_has_more;
        let in_flight = self.in_flight_segs();
        if app_limited && self.flight_bytes() < self.ccs.cwnd_bytes {
            if let Some(rate) = self.rate.as_deref_mut() {
                rate.mark_app_limited(in_flight);
            }
        }
    }
}

/// Linux paces a connection from its 10th data segment on
/// (`tcp_update_skb_after_send`: `tp->data_segs_out >= 10`, counted after
/// the segment that sets the next departure time).
const LINUX_UNPACED_SEGMENTS: u64 = 10;
