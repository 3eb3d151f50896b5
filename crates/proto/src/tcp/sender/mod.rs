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
//!
//! The state is explicit, each part a type that carries its own data, so
//! that combinations the protocol cannot be in cannot be written down:
//! `state::Handshake` (closed, SYN-SENT, established) and
//! `state::CongestionState` (open, disorder, fast recovery with its
//! NewReno or SACK data, loss after an RTO: Linux's `icsk_ca_state`); the
//! timers are one table of deadlines (`timers`), pacing is its own type
//! (`pacer`). `transmit` decides and builds what leaves, `ack` processes an
//! ACK in steps, `timeout` handles expiry.

mod ack;
mod ecn;
mod pacer;
mod rate;
mod state;
mod stats;
mod timeout;
mod timers;
mod transmit;

use super::config::{Recovery, TcpConfig};
use super::rtt::RttEstimator;
use super::scoreboard::{LossRule, Scoreboard};
use crate::cc::{CcState, CongestionControl};
use pacer::Pacer;
use rate::RateEstimator;
pub use state::CaState;
use state::{CongestionState, Handshake};
pub use stats::SenderStats;
use timers::{Timer, Timers};
pub use transmit::NewChunk;

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
///
/// Laid out in declaration order (`repr(C)`): with a thousand flows the
/// sender's lines are out of the L1 cache by the time its next ACK comes,
/// so every line an ACK or a send touches is a miss. The configuration
/// ends with the flags read per packet (see [`TcpConfig`]), then come the
/// fields the ACK and send paths of an open connection read or write,
/// then the counters, the per-packet ones first ([`SenderStats`]); the
/// rest (handshake RTT, Karn's timed segment, used only without
/// timestamps or on rare events) lies beyond. An ACK then touches
/// bytes 96 to 624 only, 528 bytes: nine 64-byte lines unless the sender
/// starts 24 bytes into a line (the simulator's flow puts it 32 bytes
/// in). The test `hot_fields_are_contiguous` holds the span.
#[repr(C)]
pub struct TcpSender {
    cfg: TcpConfig,
    // ----- read or written per ACK or data segment -----
    handshake: Handshake,
    last_now_ns: u64,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    /// RFC 6582 `recover` / RFC 6675 RecoveryPoint, exclusive (snd_max).
    recover: u64,
    peer_rwnd: u64,
    /// One past the last data byte of the application's stream.
    data_end: u64,
    mss: u64,
    ccs: CcState,
    cc: Box<dyn CongestionControl>,
    /// The delivery-rate estimator, only for a controller that asks for
    /// rate samples (which then also sets cwnd in every state and paces).
    rate: Option<Box<RateEstimator>>,
    ca: CongestionState,
    timers: Timers,
    persist: Persist,
    finite: bool,
    /// The application holds more data than it has handed over (an MPTCP
    /// connection gives a subflow one segment at a time): an idle window
    /// is then not application-limited. False for a plain TCP flow.
    app_has_more: bool,
    /// TSval of the peer's latest segment, echoed in TSecr.
    ts_recent: Option<u64>,
    completed_at_ns: Option<u64>,
    last_data_send_ns: Option<u64>,
    pacer: Pacer,
    ecn: ecn::EcnSender,
    rtt: RttEstimator,
    sb: Scoreboard,
    stats: SenderStats,
    // ----- read on rare events only -----
    /// Time from the last SYN sent to the SYN-ACK (the handshake RTT).
    handshake_rtt_ns: Option<u64>,
    /// Karn's rule without timestamps: (end seq, send time) of the timed segment.
    timed: Option<(u64, u64)>,
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
        let rate = cc.wants_rate_samples().then(Box::default);
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
            handshake: Handshake::Closed,
            handshake_rtt_ns: None,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            recover: 0,
            peer_rwnd: cfg.rwnd_bytes,
            ca: CongestionState::Open,
            sb: Scoreboard::default(),
            rtt,
            timed: None,
            timers: Timers::default(),
            persist: Persist::default(),
            pacer: Pacer::new(cfg.pacing),
            rate,
            last_data_send_ns: None,
            last_now_ns: 0,
            ts_recent: None,
            completed_at_ns: None,
            app_has_more: false,
            ecn: ecn::EcnSender::default(),
            stats: SenderStats::default(),
            cfg,
        }
    }

    /// Queue a SYN (active open). Does nothing unless the sender is closed.
    pub fn connect(&mut self, now_ns: u64) {
        self.last_now_ns = self.last_now_ns.max(now_ns);
        if self.handshake != Handshake::Closed {
            return;
        }
        self.handshake = Handshake::SynSent {
            syn_due: true,
            sent_ns: 0,
            retransmitted: false,
        };
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

    /// Tell the sender whether its application holds more data than it has
    /// handed over with [`add_app_bytes`](Self::add_app_bytes). An MPTCP
    /// connection hands each subflow one segment at a time, so a subflow
    /// never has data waiting; without this, RFC 7661's test would find it
    /// application-limited whenever cwnd is not a whole number of segments
    /// and its window would stop growing.
    pub fn set_app_has_more(&mut self, more: bool) {
        self.app_has_more = more;
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

    /// The segment size the sender uses (the configured MSS, at least 1).
    pub fn mss_bytes(&self) -> u64 {
        self.mss
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

    /// The last RTT sample the estimator took (0 before the first); a new
    /// one arrived when `stats().rtt_samples` moved.
    pub fn latest_rtt_ns(&self) -> u64 {
        self.rtt.latest_ns()
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
        match self.ca.sack() {
            Some(s) => s.pipe,
            None => self.snd_nxt.saturating_sub(self.snd_una),
        }
    }

    pub fn in_recovery(&self) -> bool {
        self.ca.recovery().is_some()
    }

    /// Open, disorder, recovery or loss (Linux's `icsk_ca_state`).
    pub fn ca_state(&self) -> CaState {
        self.ca.ca_state()
    }

    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }

    /// The controller, for a multipath connection that gives a coupled
    /// controller its view of the other subflows
    /// ([`CongestionControl::on_coupling`]) before an ACK.
    pub fn cc_mut(&mut self) -> &mut dyn CongestionControl {
        self.cc.as_mut()
    }

    /// Penalise this subflow for holding up a multipath connection's
    /// receive window (Raiciu et al., NSDI'12 §4.2; Linux
    /// `mptcp_rcv_buf_optimization`): halve cwnd, and halve ssthresh too
    /// unless in slow start. Only in the open state (Linux `TCP_CA_Open`).
    /// Returns whether the window was reduced.
    pub fn penalise(&mut self) -> bool {
        if self.ca != CongestionState::Open {
            return false;
        }
        let prior_cwnd = self.ccs.cwnd_bytes;
        self.ccs.cwnd_bytes = (prior_cwnd / 2).max(self.mss);
        if prior_cwnd >= self.ccs.ssthresh_bytes {
            self.ccs.ssthresh_bytes = (self.ccs.ssthresh_bytes / 2).max(2 * self.mss);
        }
        true
    }

    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    pub fn is_established(&self) -> bool {
        self.handshake == Handshake::Established
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

    /// RFC 5681 FlightSize: sent but not cumulatively acknowledged.
    fn flight_size(&self) -> u64 {
        self.snd_max.saturating_sub(self.snd_una)
    }

    /// The RFC 6675 pipe as ns-3's BytesInFlight() counts it, for
    /// `ssthresh_from_pipe`: in SACK recovery the recovery's pipe; after a
    /// timeout the un-SACKed bytes the go-back-N has resent (everything
    /// older counts as lost); otherwise the un-SACKed bytes IsLost() does not
    /// mark.
    fn pipe_for_ssthresh(&self) -> u64 {
        match &self.ca {
            CongestionState::Recovery(_) => match self.ca.sack() {
                Some(s) => s.pipe,
                None => self.flight_size(),
            },
            CongestionState::Loss { .. } => self.sb.unsacked_below(self.snd_nxt),
            CongestionState::Open | CongestionState::Disorder { .. } => {
                self.sb.pipe_estimate(self.loss_rule())
            }
        }
    }

    /// The bytes the window is checked against outside SACK recovery:
    /// RFC 5681 FlightSize up to `seq_end` (the candidate segment's start
    /// for the go-back-N, `snd_max` for new data), or with
    /// `window_from_pipe` the pipe as ns-3's BytesInFlight() counts it
    /// (see [`pipe_for_ssthresh`](Self::pipe_for_ssthresh)).
    fn window_flight(&self, seq_end: u64) -> u64 {
        if self.cfg.window_from_pipe
            && (self.sb.sacked_bytes() > 0 || matches!(self.ca, CongestionState::Loss { .. }))
        {
            self.pipe_for_ssthresh()
        } else {
            seq_end.saturating_sub(self.snd_una)
        }
    }

    /// A rate-based controller always paces (Linux BBR asks for pacing in
    /// `bbr_init`); otherwise the configured pacer once there is an RTT.
    fn pacing_active(&self) -> bool {
        self.rate.is_some() || self.pacer.is_active(&self.rtt)
    }

    /// The controller sets cwnd in every state (Linux `cong_control`): the
    /// recovery algorithms leave the window alone.
    fn cc_sets_cwnd(&self) -> bool {
        self.rate.is_some()
    }

    /// Segments in flight (Linux `tcp_packets_in_flight`).
    fn in_flight_segs(&self) -> u64 {
        self.flight_bytes().div_ceil(self.mss)
    }

    fn data_waiting(&self) -> bool {
        self.snd_max < self.data_end
    }

    /// RFC 7661 / Linux `tcp_is_cwnd_limited`: the window was not what held
    /// the sender back, because the application had nothing more to send or
    /// the peer's window is the smaller limit, and the flight did not fill
    /// cwnd. Pacing does not count: a paced sender is still cwnd-limited.
    fn not_cwnd_limited(&self, prior_flight: u64) -> bool {
        let rwnd_limited = self.peer_rwnd < self.ccs.cwnd_bytes;
        let app_limited = !self.data_waiting() && !self.app_has_more;
        (app_limited || rwnd_limited) && prior_flight < self.ccs.cwnd_bytes
    }

    /// RFC 6298 (5.1): start the timer if it is not running.
    fn arm_rto_if_idle(&mut self, now_ns: u64) {
        if !self.timers.is_armed(Timer::Rto) {
            self.timers
                .set(Timer::Rto, now_ns.saturating_add(self.rtt.rto_ns()));
        }
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

    fn check_complete(&mut self, now_ns: u64) {
        if self.finite && self.completed_at_ns.is_none() && self.snd_una >= self.data_end {
            self.completed_at_ns = Some(now_ns);
            self.timers.stop(Timer::Rto);
            self.timers.stop(Timer::Persist);
        }
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;
    use std::mem::offset_of;

    /// The fields an ACK or a send of an open connection reads lie together
    /// (see `TcpSender`'s layout): the configuration's per-packet part, the
    /// sender's own fields, the per-packet counters; the cold fields after.
    #[test]
    fn hot_fields_are_contiguous() {
        let cfg_hot = offset_of!(TcpConfig, rwnd_bytes);
        for flag in [
            offset_of!(TcpConfig, recovery),
            offset_of!(TcpConfig, timestamps),
            offset_of!(TcpConfig, idle_restart),
            offset_of!(TcpConfig, window_from_pipe),
            offset_of!(TcpConfig, rto_backoff_reset_on_ack),
        ] {
            assert!(flag > cfg_hot, "a per-packet flag before rwnd_bytes");
        }
        let per_packet_counters = [
            offset_of!(SenderStats, acks_received),
            offset_of!(SenderStats, rtt_samples),
            offset_of!(SenderStats, bytes_acked),
            offset_of!(SenderStats, segments_sent),
            offset_of!(SenderStats, bytes_sent),
        ];
        let counters_end = per_packet_counters.iter().max().unwrap() + 8;
        assert_eq!(counters_end, 40, "the per-packet counters come first");
        let hot_start = offset_of!(TcpSender, cfg) + cfg_hot;
        let hot_end = offset_of!(TcpSender, stats) + counters_end;
        assert_eq!((hot_start, hot_end), (96, 624));
        assert!(offset_of!(TcpSender, handshake_rtt_ns) >= hot_end);
        assert!(offset_of!(TcpSender, timed) >= hot_end);
    }
}
