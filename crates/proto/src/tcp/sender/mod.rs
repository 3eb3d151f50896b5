//! The TCP data sender: handshake initiator, window and loss recovery.
//!
//! Sequence space (see `segment.rs`): ISS = 0, the SYN occupies 0, data byte
//! `i` has sequence number `1 + i`. Variables follow RFC 793 / 5681 / 6675:
//! `snd_una` (HighACK + 1), `snd_nxt` (next byte to send; rolled back to
//! `snd_una` after an RTO for go-back-N), `snd_max` (HighData + 1, one past
//! the highest byte ever sent).
//!
//! Choices the RFCs leave open:
//! - `recover` (RFC 6582) and RecoveryPoint (RFC 6675) are stored as the
//!   exclusive bound `snd_max` at the time of the event (FreeBSD's
//!   `snd_recover`). Fast retransmit is entered only when the cumulative ACK
//!   is above it, recovery ends when the cumulative ACK reaches it. Its
//!   initial value is the ISS (0), so a loss of the very first data segment
//!   is still recovered by fast retransmit.
//! - SACK after an RTO: the scoreboard is kept (as ns-3 and Linux do; RFC
//!   6675 §5.1 allows it) and go-back-N skips SACKed segments. If the
//!   segment at `snd_una` itself is marked SACKed when the timer fires, the
//!   receiver has reneged and all SACK information is discarded (RFC 2018
//!   §8).
//! - Zero window: when the peer advertises 0 and nothing is outstanding, a
//!   persist timer (the current RTO, doubling per probe) releases one full
//!   segment of new data regardless of the window; its ACK carries the new
//!   window. A window smaller than one segment with nothing outstanding lets
//!   a short segment go (sender SWS avoidance, RFC 1122 §4.2.3.4, simplified).
//! - Limited transmit (RFC 3042) is not implemented.
//! - The third handshake ACK is carried by the first data segment.

mod pacer;
mod timers;

use super::config::{Recovery, TcpConfig};
use super::rtt::RttEstimator;
use super::scoreboard::{LossRule, Scoreboard};
use crate::cc::{AckSample, CcState, CongestionControl, CongestionEvent};
use crate::segment::{Flags, Segment};
use pacer::Pacer;
use timers::{Timer, Timers};

/// Counters kept by the sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Data segments sent, retransmissions included (SYNs not included).
    pub segments_sent: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    pub retransmitted_segments: u64,
    pub retransmitted_bytes: u64,
    /// Payload bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// Loss recovery episodes entered by fast retransmit (NewReno or SACK).
    pub fast_retransmits: u64,
    /// Retransmission timer expirations with data outstanding.
    pub timeouts: u64,
    /// SYNs sent, retransmissions included.
    pub syns_sent: u64,
    /// SYN retransmission timer expirations.
    pub syn_timeouts: u64,
    /// Acceptable ACKs processed.
    pub acks_received: u64,
    /// ACKs counted as duplicate (RFC 5681 §2 or RFC 6675 §2 definition).
    pub dupacks_received: u64,
    /// NewReno partial ACKs (RFC 6582).
    pub partial_acks: u64,
    /// RFC 6675 NextSeg rule 4 rescue retransmissions.
    pub rescue_retransmits: u64,
    /// RTT samples fed to the RFC 6298 estimator.
    pub rtt_samples: u64,
    /// Zero-window probes sent by the persist timer.
    pub window_probes: u64,
    /// Idle restarts (RFC 5681 §4.1).
    pub idle_restarts: u64,
}

impl SenderStats {
    /// Add another connection's counters (a user's successive connections).
    pub fn accumulate(&mut self, o: &SenderStats) {
        let SenderStats {
            segments_sent,
            bytes_sent,
            retransmitted_segments,
            retransmitted_bytes,
            bytes_acked,
            fast_retransmits,
            timeouts,
            syns_sent,
            syn_timeouts,
            acks_received,
            dupacks_received,
            partial_acks,
            rescue_retransmits,
            rtt_samples,
            window_probes,
            idle_restarts,
        } = *o;
        self.segments_sent += segments_sent;
        self.bytes_sent += bytes_sent;
        self.retransmitted_segments += retransmitted_segments;
        self.retransmitted_bytes += retransmitted_bytes;
        self.bytes_acked += bytes_acked;
        self.fast_retransmits += fast_retransmits;
        self.timeouts += timeouts;
        self.syns_sent += syns_sent;
        self.syn_timeouts += syn_timeouts;
        self.acks_received += acks_received;
        self.dupacks_received += dupacks_received;
        self.partial_acks += partial_acks;
        self.rescue_retransmits += rescue_retransmits;
        self.rtt_samples += rtt_samples;
        self.window_probes += window_probes;
        self.idle_restarts += idle_restarts;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Closed,
    SynSent,
    Established,
}

/// What `poll_transmit` would send next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tx {
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
enum RetxKind {
    /// Fast retransmit of snd_una (RFC 5681 / 6582 partial ACK / RFC 6675 (4.3)).
    Una,
    /// Go-back-N after an RTO.
    GoBack,
    /// RFC 6675 NextSeg rule 1 or 3.
    NextSeg,
    /// RFC 6675 NextSeg rule 4.
    Rescue,
}

/// Zero-window probing (RFC 1122 §4.2.2.17); its deadline is
/// [`Timer::Persist`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Persist {
    /// Expirations since the window last opened: the interval doubles per
    /// probe, up to the maximum RTO.
    backoff: u32,
    /// The timer fired with nothing outstanding: one segment may go
    /// regardless of the window.
    probe_due: bool,
}

/// Sequence number beyond which an infinite flow never gets.
const INFINITE_DATA_END: u64 = u64::MAX / 4;

/// The TCP sender state machine (sans-IO).
pub struct TcpSender {
    cfg: TcpConfig,
    cc: Box<dyn CongestionControl>,
    ccs: CcState,
    mss: u64,
    /// One past the last data byte of the application's stream.
    data_end: u64,
    finite: bool,
    state: State,
    syn_pending: bool,
    syn_sent_ns: u64,
    syn_retransmitted: bool,
    /// Time from the last SYN sent to the SYN-ACK (the handshake RTT).
    handshake_rtt_ns: Option<u64>,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    peer_rwnd: u64,
    rtt: RttEstimator,
    timers: Timers,
    /// snd_una when the RTO last fired (RFC 5681 §3.1: ssthresh is held
    /// constant on repeated timeouts of the same segment).
    rto_una: Option<u64>,
    persist: Persist,
    /// Karn's rule without timestamps: (end seq, send time) of the timed segment.
    timed: Option<(u64, u64)>,
    sb: Scoreboard,
    dupacks: u32,
    /// RFC 6582 `recover` / RFC 6675 RecoveryPoint, exclusive (snd_max).
    recover: u64,
    in_recovery: bool,
    /// A fast retransmission of the segment at snd_una is due.
    retransmit_una: bool,
    /// NewReno: the first partial ACK of this episode has been seen.
    partial_ack_seen: bool,
    /// RFC 6675 pipe (bytes), valid in SACK recovery.
    pipe: u64,
    /// RFC 6675 HighRxt and RescueRxt (inclusive sequence numbers).
    high_rxt: Option<u64>,
    rescue_rxt: Option<u64>,
    pacer: Pacer,
    last_data_send_ns: Option<u64>,
    last_now_ns: u64,
    /// TSval of the peer's latest segment, echoed in TSecr.
    ts_recent: Option<u64>,
    completed_at_ns: Option<u64>,
    stats: SenderStats,
}

impl TcpSender {
    /// A sender for `app_bytes` of data (`None` = infinite bulk data).
    pub fn new(cfg: TcpConfig, cc: Box<dyn CongestionControl>, app_bytes: Option<u64>) -> Self {
        let mss = (cfg.mss_bytes as u64).max(1);
        let iw = (cfg.initial_window_segments as u64).max(1) * mss;
        let rtt = RttEstimator::new(
            cfg.initial_rto_ns,
            cfg.min_rto_ns,
            cfg.max_rto_ns,
            cfg.rto_granularity_ns,
        );
        let (data_end, finite) = match app_bytes {
            Some(n) => (1u64.saturating_add(n).min(INFINITE_DATA_END), true),
            None => (INFINITE_DATA_END, false),
        };
        TcpSender {
            ccs: CcState {
                cwnd_bytes: iw,
                // RFC 5681 §3.1: initial ssthresh arbitrarily high.
                ssthresh_bytes: u64::MAX,
                mss_bytes: mss,
            },
            cc,
            mss,
            data_end,
            finite,
            state: State::Closed,
            syn_pending: false,
            syn_sent_ns: 0,
            syn_retransmitted: false,
            handshake_rtt_ns: None,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            peer_rwnd: cfg.rwnd_bytes,
            rtt,
            timers: Timers::default(),
            rto_una: None,
            persist: Persist::default(),
            timed: None,
            sb: Scoreboard::default(),
            dupacks: 0,
            recover: 0,
            in_recovery: false,
            retransmit_una: false,
            partial_ack_seen: false,
            pipe: 0,
            high_rxt: None,
            rescue_rxt: None,
            pacer: Pacer::new(cfg.pacing),
            last_data_send_ns: None,
            last_now_ns: 0,
            ts_recent: None,
            completed_at_ns: None,
            stats: SenderStats::default(),
            cfg,
        }
    }

    /// Queue a SYN (active open). Does nothing unless the sender is closed.
    pub fn connect(&mut self, now_ns: u64) {
        self.last_now_ns = self.last_now_ns.max(now_ns);
        if self.state != State::Closed {
            return;
        }
        self.state = State::SynSent;
        self.syn_pending = true;
        self.snd_nxt = 0;
        self.snd_max = 0;
    }

    /// More application data for a finite flow (a request on a persistent
    /// connection). Ignored for infinite flows.
    pub fn add_app_bytes(&mut self, bytes: u64) {
        if !self.finite || bytes == 0 {
            return;
        }
        self.data_end = self.data_end.saturating_add(bytes).min(INFINITE_DATA_END);
        self.completed_at_ns = None;
    }

    // ----- accessors -------------------------------------------------------

    pub fn is_complete(&self) -> bool {
        self.completed_at_ns.is_some()
    }

    pub fn completed_at_ns(&self) -> Option<u64> {
        self.completed_at_ns
    }

    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.ccs.cwnd_bytes
    }

    pub fn ssthresh_bytes(&self) -> u64 {
        self.ccs.ssthresh_bytes
    }

    /// The RTT of the handshake (last SYN sent to SYN-ACK received): the
    /// RTT a new flow sees on a loaded path, before its own data adds to it.
    pub fn handshake_rtt_ns(&self) -> Option<u64> {
        self.handshake_rtt_ns
    }

    pub fn srtt_ns(&self) -> u64 {
        self.rtt.srtt_ns()
    }

    pub fn min_rtt_ns(&self) -> u64 {
        self.rtt.min_rtt_ns()
    }

    pub fn rto_ns(&self) -> u64 {
        self.rtt.rto_ns()
    }

    pub fn peer_rwnd_bytes(&self) -> u64 {
        self.peer_rwnd
    }

    /// Bytes the sender counts as in the network for its window decisions:
    /// RFC 6675 `pipe` during SACK recovery, otherwise `snd_nxt − snd_una`
    /// (equal to RFC 5681 FlightSize except during go-back-N after an RTO).
    pub fn flight_bytes(&self) -> u64 {
        if self.in_sack_recovery() {
            self.pipe
        } else {
            self.snd_nxt.saturating_sub(self.snd_una)
        }
    }

    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }

    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    pub fn is_established(&self) -> bool {
        self.state == State::Established
    }

    /// Highest sequence number sent plus one (RFC 6675 HighData + 1).
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }

    /// Oldest unacknowledged sequence number.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    // ----- helpers ---------------------------------------------------------

    /// IsLost() of the configured recovery (NewReno never asks).
    fn loss_rule(&self) -> LossRule {
        let (dupthresh, mss) = (self.cfg.dupthresh, self.mss);
        match self.cfg.recovery {
            Recovery::Fack => LossRule::Fack { dupthresh, mss },
            Recovery::NewReno | Recovery::Sack => LossRule::Rfc6675 { dupthresh, mss },
        }
    }

    fn in_sack_recovery(&self) -> bool {
        self.in_recovery && self.cfg.recovery.uses_sack()
    }

    /// RFC 5681 FlightSize: sent but not cumulatively acknowledged.
    fn flight_size(&self) -> u64 {
        self.snd_max.saturating_sub(self.snd_una)
    }

    fn pacing_active(&self) -> bool {
        self.pacer.is_active(&self.rtt)
    }

    fn data_waiting(&self) -> bool {
        self.snd_max < self.data_end
    }

    /// Decide what to send next, ignoring pacing. Pure: `poll_transmit`
    /// commits the decision, `next_timeout` only asks whether there is one.
    fn choose(&self) -> Option<Tx> {
        if self.syn_pending {
            return Some(Tx::Syn);
        }
        if self.state != State::Established {
            return None;
        }
        let outstanding = self.snd_max > self.snd_una;
        if self.retransmit_una && outstanding && self.sb.len() > 0 {
            // RFC 5681 §3.2 step 2 / RFC 6582 partial ACK / RFC 6675 (4.3):
            // retransmitted regardless of cwnd.
            return Some(Tx::Retransmit {
                idx: 0,
                kind: RetxKind::Una,
            });
        }
        if self.in_sack_recovery() {
            return self.next_seg();
        }
        let wnd = self.ccs.cwnd_bytes;
        if self.snd_nxt < self.snd_max {
            // Go-back-N after an RTO, skipping SACKed segments.
            let idx = self.sb.index_of(self.snd_nxt)?;
            let idx = if self.cfg.recovery.uses_sack() {
                self.sb.next_unsacked_from(idx)
            } else {
                Some(idx)
            };
            if let Some(idx) = idx {
                let rec = self.sb.get(idx)?;
                let in_flight = rec.seq.saturating_sub(self.snd_una);
                let rwnd_ok = rec.end() <= self.snd_una.saturating_add(self.peer_rwnd);
                if (in_flight + rec.len as u64 <= wnd && rwnd_ok) || self.persist.probe_due {
                    return Some(Tx::Retransmit {
                        idx,
                        kind: RetxKind::GoBack,
                    });
                }
                return None;
            }
            // Everything left below snd_max is SACKed: continue with new data.
        }
        if !self.data_waiting() {
            return None;
        }
        let len = (self.data_end - self.snd_max).min(self.mss) as u32;
        // New data goes at snd_max: RFC 5681 FlightSize counts from snd_una.
        let in_flight = self.snd_max.saturating_sub(self.snd_una);
        let right_edge = self.snd_una.saturating_add(self.peer_rwnd);
        let cwnd_ok = in_flight + len as u64 <= wnd;
        if cwnd_ok && self.snd_max + len as u64 <= right_edge {
            return Some(Tx::New { len, probe: false });
        }
        if self.persist.probe_due {
            return Some(Tx::New { len, probe: true });
        }
        if cwnd_ok && in_flight == 0 && right_edge > self.snd_max {
            // Window smaller than the segment and nothing outstanding.
            let short = (right_edge - self.snd_max).min(len as u64) as u32;
            return Some(Tx::New {
                len: short,
                probe: false,
            });
        }
        None
    }

    /// RFC 6675 §4 NextSeg(), gated by step (C): cwnd − pipe ≥ 1 SMSS.
    fn next_seg(&self) -> Option<Tx> {
        if self.ccs.cwnd_bytes < self.pipe.saturating_add(self.mss) {
            return None;
        }
        // Rules 1 and 3 share one candidate: the first un-SACKed segment
        // above HighRxt and below the highest SACKed octet.
        let hole = self.sb.first_hole_above(self.high_rxt);
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
        if self.data_waiting() {
            let len = (self.data_end - self.snd_max).min(self.mss) as u32;
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
        let rescue_ok = match self.rescue_rxt {
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

    fn arm_rto_if_idle(&mut self, now_ns: u64) {
        // RFC 6298 (5.1): start the timer if it is not running.
        if !self.timers.is_armed(Timer::Rto) {
            self.timers
                .set(Timer::Rto, now_ns.saturating_add(self.rtt.rto_ns()));
        }
    }

    /// Commit a decision from `choose` and build the segment.
    fn commit(&mut self, tx: Tx, now_ns: u64) -> Option<Segment> {
        let mut seg = self.base_segment(now_ns);
        match tx {
            Tx::Syn => {
                self.syn_pending = false;
                if self.stats.syns_sent > 0 {
                    self.syn_retransmitted = true;
                }
                self.stats.syns_sent += 1;
                self.syn_sent_ns = now_ns;
                seg.seq = 0;
                seg.flags = Flags::SYN;
                seg.ts_ecr_ns = if self.cfg.timestamps { Some(0) } else { None };
                seg.is_retransmit = self.syn_retransmitted;
                self.snd_max = 1;
                self.snd_nxt = 1;
                self.arm_rto_if_idle(now_ns);
                return Some(seg);
            }
            Tx::Retransmit { idx, kind } => {
                let rec = *self.sb.get(idx)?;
                self.sb.mark_retransmitted(idx);
                seg.seq = rec.seq;
                seg.payload_bytes = rec.len;
                seg.is_retransmit = true;
                // Karn's rule (RFC 6298 §3): no sample from a retransmitted
                // segment, so stop timing.
                self.timed = None;
                match kind {
                    RetxKind::Una => {
                        self.retransmit_una = false;
                        if self.in_sack_recovery() && self.high_rxt.is_none() {
                            // RFC 6675 (4.3).
                            let top = rec.end() - 1;
                            self.high_rxt = Some(top);
                            self.rescue_rxt = Some(top);
                        }
                        if self.in_sack_recovery() {
                            self.pipe += rec.len as u64;
                        }
                    }
                    RetxKind::GoBack => {
                        self.snd_nxt = rec.end();
                        self.persist.probe_due = false;
                    }
                    RetxKind::NextSeg => {
                        // RFC 6675 (C.2), (C.4).
                        self.high_rxt = Some(rec.end() - 1);
                        self.pipe += rec.len as u64;
                    }
                    RetxKind::Rescue => {
                        // RFC 6675 rule 4: RescueRxt = RecoveryPoint; HighRxt unchanged.
                        self.rescue_rxt = Some(self.recover.saturating_sub(1));
                        self.pipe += rec.len as u64;
                        self.stats.rescue_retransmits += 1;
                    }
                }
                self.stats.retransmitted_segments += 1;
                self.stats.retransmitted_bytes += rec.len as u64;
            }
            Tx::New { len, probe } => {
                seg.seq = self.snd_max;
                seg.payload_bytes = len;
                self.sb.push(self.snd_max, len);
                self.snd_max += len as u64;
                self.snd_nxt = self.snd_max;
                if self.in_sack_recovery() {
                    self.pipe += len as u64; // RFC 6675 (C.4)
                }
                if self.timed.is_none() && !self.cfg.timestamps {
                    self.timed = Some((self.snd_max, now_ns));
                }
                if probe {
                    self.persist.probe_due = false;
                    self.stats.window_probes += 1;
                }
            }
        }
        // The first data segment also completes the handshake (carries ACK).
        seg.ack = 1;
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += seg.payload_bytes as u64;
        if self.pacing_active() {
            let gap = self
                .pacer
                .gap_ns(&self.ccs, self.rtt.srtt_ns(), self.cfg.wire_bytes(&seg));
            self.pacer.on_send(now_ns, gap);
        }
        self.last_data_send_ns = Some(now_ns);
        self.arm_rto_if_idle(now_ns);
        Some(seg)
    }

    /// The next segment to send now, or `None`.
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<Segment> {
        self.last_now_ns = self.last_now_ns.max(now_ns);
        if self.state == State::Established
            && self.cfg.idle_restart
            && self.snd_max == self.snd_una
            && self.data_waiting()
        {
            // RFC 5681 §4.1: restart after an idle period longer than RTO.
            if let Some(last) = self.last_data_send_ns {
                if now_ns.saturating_sub(last) > self.rtt.rto_ns() {
                    let iw = self.cfg.initial_window_bytes().max(self.mss);
                    self.ccs.cwnd_bytes = self.ccs.cwnd_bytes.min(iw);
                    self.cc.on_idle_restart(&mut self.ccs, now_ns);
                    self.ccs.cwnd_bytes = self.ccs.cwnd_bytes.max(self.mss);
                    self.last_data_send_ns = None;
                    self.stats.idle_restarts += 1;
                }
            }
        }
        let Some(tx) = self.choose() else {
            self.maybe_arm_persist(now_ns);
            return None;
        };
        if tx != Tx::Syn && self.pacing_active() && now_ns < self.pacer.release_ns() {
            return None;
        }
        self.commit(tx, now_ns)
    }

    /// Zero window with nothing outstanding: arm the persist timer.
    fn maybe_arm_persist(&mut self, now_ns: u64) {
        if self.state == State::Established
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

    /// Handle expired timers; does nothing if nothing is due.
    pub fn on_timeout(&mut self, now_ns: u64) {
        self.last_now_ns = self.last_now_ns.max(now_ns);
        if self.timers.take_expired(Timer::Persist, now_ns) {
            self.persist.backoff = self.persist.backoff.saturating_add(1);
            if self.state == State::Established && self.snd_max == self.snd_una {
                self.persist.probe_due = true;
            }
        }
        if !self.timers.take_expired(Timer::Rto, now_ns) {
            return;
        }
        match self.state {
            State::Closed => {}
            State::SynSent => {
                // RFC 6298 (5.4)-(5.6) for the SYN.
                self.stats.syn_timeouts += 1;
                self.syn_pending = true;
                self.rtt.backoff();
                self.timers
                    .set(Timer::Rto, now_ns.saturating_add(self.rtt.rto_ns()));
            }
            State::Established => self.on_rto(now_ns),
        }
    }

    fn on_rto(&mut self, now_ns: u64) {
        if self.snd_una >= self.snd_max {
            return; // RFC 6298 (5.2): nothing outstanding, timer off.
        }
        self.stats.timeouts += 1;
        // RFC 5681 §3.1 eq. (4), unless this segment was already
        // retransmitted by the timer, in which case ssthresh is held. Held
        // too when the timer fires during fast recovery, whose entry already
        // reduced ssthresh for this loss (as Linux's tcp_enter_loss does):
        // FlightSize then still spans the window that overflowed, and half of
        // it would raise ssthresh above the recovery's, so that slow start
        // overshoots again and the flow cycles through loss and timeout.
        if self.rto_una != Some(self.snd_una) && !self.in_recovery {
            self.ccs.ssthresh_bytes =
                self.cc
                    .ssthresh_on_loss(&self.ccs, CongestionEvent::Timeout, self.flight_size(), now_ns);
        }
        self.rto_una = Some(self.snd_una);
        // Loss window LW = 1 SMSS.
        self.ccs.cwnd_bytes = self.mss;
        // RFC 6582 §4 / RFC 6675 §5.1: recover = RecoveryPoint = HighData; end recovery.
        self.recover = self.snd_max;
        self.in_recovery = false;
        self.retransmit_una = false;
        self.dupacks = 0;
        self.high_rxt = None;
        self.rescue_rxt = None;
        self.pipe = 0;
        // Go-back-N from snd_una, in slow start.
        self.snd_nxt = self.snd_una;
        self.timed = None;
        if self.cfg.recovery.uses_sack() && self.sb.front().is_some_and(|r| r.sacked()) {
            self.sb.clear_sacks(); // the receiver reneged (RFC 2018 §8)
        }
        // RFC 6298 (5.5), (5.6).
        self.rtt.backoff();
        self.timers
            .set(Timer::Rto, now_ns.saturating_add(self.rtt.rto_ns()));
    }

    /// Process a segment from the receiver (SYN-ACK or ACK).
    pub fn on_segment(&mut self, now_ns: u64, seg: &Segment) {
        self.last_now_ns = self.last_now_ns.max(now_ns);
        if !seg.has_ack() {
            return;
        }
        match self.state {
            State::Closed => {}
            State::SynSent => {
                if seg.is_syn() && seg.ack == 1 {
                    self.on_syn_ack(now_ns, seg);
                }
            }
            State::Established => {
                if !seg.is_syn() {
                    self.on_ack(now_ns, seg);
                }
            }
        }
    }

    fn on_syn_ack(&mut self, now_ns: u64, seg: &Segment) {
        self.state = State::Established;
        self.syn_pending = false;
        self.snd_una = 1;
        self.snd_nxt = 1;
        self.snd_max = 1;
        self.recover = 0; // RFC 6582: recover = ISS
        self.peer_rwnd = seg.rwnd_bytes;
        self.timers.stop(Timer::Rto);
        self.handshake_rtt_ns = Some(now_ns.saturating_sub(self.syn_sent_ns));
        if self.cfg.timestamps {
            self.ts_recent = seg.ts_val_ns;
        }
        // RTT sample from the SYN: from the echoed timestamp when on (it
        // identifies the SYN that was answered), else only if the SYN was
        // not retransmitted (Karn).
        let sample = match seg.ts_ecr_ns {
            Some(ecr) if self.cfg.timestamps && ecr <= now_ns && ecr > 0 => Some(now_ns - ecr),
            _ if !self.syn_retransmitted => Some(now_ns.saturating_sub(self.syn_sent_ns)),
            _ => None,
        };
        match sample {
            Some(r) => {
                self.rtt.on_sample(r);
                self.stats.rtt_samples += 1;
                let s = AckSample {
                    now_ns,
                    rtt_ns: Some(r),
                    srtt_ns: self.rtt.srtt_ns(),
                    min_rtt_ns: self.rtt.min_rtt_ns(),
                    ..Default::default()
                };
                self.cc.on_rtt_sample(&self.ccs, &s);
            }
            None if self.syn_retransmitted => self.rtt.reinit_after_syn_loss(),
            None => {}
        }
        self.check_complete(now_ns);
    }

    fn check_complete(&mut self, now_ns: u64) {
        if self.finite && self.completed_at_ns.is_none() && self.snd_una >= self.data_end {
            self.completed_at_ns = Some(now_ns);
            self.timers.stop(Timer::Rto);
            self.timers.stop(Timer::Persist);
        }
    }

    fn on_ack(&mut self, now_ns: u64, seg: &Segment) {
        let ack = seg.ack;
        // RFC 793 / 5681: ignore ACKs of data never sent and old ACKs.
        if ack > self.snd_max || ack < self.snd_una {
            return;
        }
        self.stats.acks_received += 1;
        let old_rwnd = self.peer_rwnd;
        self.peer_rwnd = seg.rwnd_bytes;
        if self.peer_rwnd > 0 {
            self.timers.stop(Timer::Persist);
            self.persist.backoff = 0;
        }
        if self.cfg.timestamps {
            if let Some(v) = seg.ts_val_ns {
                self.ts_recent = Some(self.ts_recent.map_or(v, |r| r.max(v)));
            }
        }
        let prior_flight = self.flight_bytes();
        let acked = ack - self.snd_una;
        let sack_mode = self.cfg.recovery.uses_sack();

        // RFC 6675 Update(): record SACK blocks (clamped to the outstanding range).
        let mut newly_sacked = 0;
        if sack_mode {
            for b in seg.sack_blocks() {
                let start = b.start.max(ack);
                let end = b.end.min(self.snd_max);
                newly_sacked += self.sb.mark_sacked(start, end);
            }
        }

        // RTT sample: RFC 7323 §4 (every ACK of new data, from TSecr) or
        // Karn's rule with one timed segment (RFC 6298 §3).
        let mut rtt_sample = None;
        if acked > 0 {
            if self.cfg.timestamps {
                if let Some(ecr) = seg.ts_ecr_ns {
                    if ecr <= now_ns && ecr > 0 {
                        rtt_sample = Some(now_ns - ecr);
                    }
                }
            } else if let Some((end, sent)) = self.timed {
                if ack >= end {
                    rtt_sample = Some(now_ns.saturating_sub(sent));
                    self.timed = None;
                }
            }
        }
        if let Some(r) = rtt_sample {
            self.rtt.on_sample(r);
            self.stats.rtt_samples += 1;
        }

        // Duplicate ACK: RFC 5681 §2, or for SACK recovery RFC 6675 §2 (an
        // ACK carrying SACK information for new octets).
        let dup_5681 = acked == 0
            && seg.payload_bytes == 0
            && !seg.flags.contains(Flags::FIN)
            && seg.rwnd_bytes == old_rwnd
            && self.snd_max > self.snd_una;
        let is_dupack = if sack_mode {
            newly_sacked > 0 || (seg.sack_len == 0 && dup_5681)
        } else {
            dup_5681
        };
        if is_dupack {
            self.stats.dupacks_received += 1;
        }

        // Cumulative ACK.
        if acked > 0 {
            self.sb.ack_to(ack);
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            self.stats.bytes_acked += acked;
            self.rto_una = None;
        }

        let mut grow = acked > 0;
        match self.cfg.recovery {
            Recovery::NewReno => {
                if acked > 0 {
                    self.dupacks = 0;
                    if self.in_recovery {
                        grow = false;
                        if ack >= self.recover {
                            // RFC 6582 §3.2 step 3, full ACK, option (1).
                            let fs = self.flight_size().max(self.mss);
                            self.ccs.cwnd_bytes = self.ccs.ssthresh_bytes.min(fs.saturating_add(self.mss));
                            self.in_recovery = false;
                            self.retransmit_una = false;
                            self.cc.on_recovery_exit(&mut self.ccs, now_ns);
                            self.restart_rto(now_ns);
                        } else {
                            // Partial ACK: retransmit, deflate, reset the
                            // timer on the first partial ACK only.
                            self.stats.partial_acks += 1;
                            self.retransmit_una = true;
                            let mut cwnd = self.ccs.cwnd_bytes.saturating_sub(acked);
                            if acked >= self.mss {
                                cwnd += self.mss;
                            }
                            self.ccs.cwnd_bytes = cwnd.max(self.mss);
                            if !self.partial_ack_seen {
                                self.partial_ack_seen = true;
                                self.restart_rto(now_ns);
                            }
                        }
                    } else {
                        self.restart_rto(now_ns);
                    }
                } else if is_dupack {
                    self.dupacks = self.dupacks.saturating_add(1);
                    if self.in_recovery {
                        // RFC 5681 §3.2 step 4: inflate.
                        self.ccs.cwnd_bytes = self.ccs.cwnd_bytes.saturating_add(self.mss);
                    } else if self.dupacks == self.cfg.dupthresh && ack > self.recover {
                        self.enter_newreno_recovery(now_ns);
                    }
                }
            }
            Recovery::Sack | Recovery::Fack => {
                if acked > 0 {
                    self.dupacks = 0;
                    self.restart_rto(now_ns);
                }
                if self.in_recovery {
                    grow = false;
                    if self.snd_una >= self.recover {
                        // RFC 6675 §5 (A): leave recovery; keep the scoreboard.
                        self.in_recovery = false;
                        self.retransmit_una = false;
                        self.cc.on_recovery_exit(&mut self.ccs, now_ns);
                    } else {
                        // (B.1) done above; (B.2) SetPipe.
                        self.pipe = self.sb.set_pipe(self.loss_rule(), self.high_rxt);
                    }
                } else if is_dupack {
                    self.dupacks = self.dupacks.saturating_add(1);
                    let lost = self.sb.front_is_lost(self.loss_rule());
                    if (self.dupacks >= self.cfg.dupthresh || lost) && self.snd_una > self.recover {
                        grow = false;
                        self.enter_sack_recovery(now_ns);
                    }
                }
            }
        }

        // Congestion control hooks.
        let one_way = match (seg.ts_val_ns, seg.ts_ecr_ns) {
            (Some(v), Some(e)) if self.cfg.timestamps && e > 0 => {
                Some((v as i128 - e as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64)
            }
            _ => None,
        };
        if rtt_sample.is_some() || one_way.is_some() || (grow && acked > 0) {
            let flight = self.flight_bytes();
            let sample = AckSample {
                now_ns,
                acked_bytes: acked,
                prior_flight_bytes: prior_flight,
                flight_bytes: flight,
                rtt_ns: rtt_sample,
                srtt_ns: self.rtt.srtt_ns(),
                min_rtt_ns: self.rtt.min_rtt_ns(),
                one_way_delay_ns: one_way,
                app_limited: self.not_cwnd_limited(prior_flight),
            };
            if rtt_sample.is_some() || one_way.is_some() {
                self.cc.on_rtt_sample(&self.ccs, &sample);
            }
            if grow && acked > 0 {
                self.cc.on_ack(&mut self.ccs, &sample);
                self.ccs.cwnd_bytes = self.ccs.cwnd_bytes.max(self.mss);
            }
        }
        self.check_complete(now_ns);
    }

    /// RFC 7661 / Linux `tcp_is_cwnd_limited`: the window was not what held
    /// the sender back, because the application had nothing more to send or
    /// the peer's window is the smaller limit, and the flight did not fill
    /// cwnd. Pacing does not count: a paced sender is still cwnd-limited.
    fn not_cwnd_limited(&self, prior_flight: u64) -> bool {
        let rwnd_limited = self.peer_rwnd < self.ccs.cwnd_bytes;
        (!self.data_waiting() || rwnd_limited) && prior_flight < self.ccs.cwnd_bytes
    }

    /// RFC 6298 (5.2)/(5.3): stop the timer when everything is acked,
    /// otherwise restart it.
    fn restart_rto(&mut self, now_ns: u64) {
        if self.snd_una >= self.snd_max {
            self.timers.stop(Timer::Rto);
        } else {
            self.timers
                .set(Timer::Rto, now_ns.saturating_add(self.rtt.rto_ns()));
        }
    }

    /// RFC 6582 §3.2 steps 1-2 / RFC 5681 §3.2 steps 2-3.
    fn enter_newreno_recovery(&mut self, now_ns: u64) {
        self.recover = self.snd_max;
        self.in_recovery = true;
        self.partial_ack_seen = false;
        self.ccs.ssthresh_bytes = self.cc.ssthresh_on_loss(
            &self.ccs,
            CongestionEvent::FastRetransmit,
            self.flight_size(),
            now_ns,
        );
        self.ccs.cwnd_bytes = self
            .ccs
            .ssthresh_bytes
            .saturating_add(3u64.saturating_mul(self.mss));
        self.retransmit_una = true;
        self.restart_rto_for_fast_retransmit(now_ns);
        self.stats.fast_retransmits += 1;
    }

    /// Restart the retransmission timer as the fast retransmission leaves,
    /// as ns-2 (tcp-reno.cc `dupack_action`: `reset_rtx_timer`) and Linux
    /// (`tcp_xmit_retransmit_queue` re-arms it when the head is resent) do.
    /// RFC 6298 leaves a running timer alone, but then the timer, last
    /// restarted by the ACK before the hole, must outlast DupThresh
    /// duplicate ACKs plus the retransmission's trip through the queue: on a
    /// path whose standing queue keeps the RTT smooth, RTO ≈ SRTT and the
    /// timer fires first, a spurious timeout (and a go-back-N of the whole
    /// window) after the fast retransmit.
    fn restart_rto_for_fast_retransmit(&mut self, now_ns: u64) {
        self.restart_rto(now_ns);
    }

    /// RFC 6675 §5 step (4).
    fn enter_sack_recovery(&mut self, now_ns: u64) {
        // (4.1) RecoveryPoint = HighData.
        self.recover = self.snd_max;
        self.in_recovery = true;
        // (4.2) ssthresh = cwnd = the controller's reduction of FlightSize.
        self.ccs.ssthresh_bytes = self.cc.ssthresh_on_loss(
            &self.ccs,
            CongestionEvent::FastRetransmit,
            self.flight_size(),
            now_ns,
        );
        self.ccs.cwnd_bytes = self.ccs.ssthresh_bytes.max(self.mss);
        // (4.3) retransmit HighACK + 1 (HighRxt and RescueRxt set when sent).
        self.high_rxt = None;
        self.rescue_rxt = None;
        self.retransmit_una = true;
        // (4.4) SetPipe; the retransmission then adds its length (C.4).
        self.pipe = self.sb.set_pipe(self.loss_rule(), None);
        self.restart_rto_for_fast_retransmit(now_ns);
        self.stats.fast_retransmits += 1;
    }
}
