//! The TFRC data receiver (RFC 5348 §5–6), with DFlow's delay-based
//! congestion events.
//!
//! Loss detection (RFC 5348 §5.1): a packet is lost once NDUPACK packets
//! with higher sequence numbers have arrived. A reorder window of
//! [`REORDER_WINDOW`] sequence numbers past the lowest unresolved one is
//! tracked in a fixed ring; a packet further ahead first resolves the whole
//! window (its holes are declared lost at once, without waiting for NDUPACK
//! later packets) and the gap up to it is treated as one lost run. A packet
//! below the resolved point (a duplicate, or one already declared lost) is
//! counted in `late_packets` and otherwise ignored.
//!
//! Loss events (RFC 5348 §5.2): a lost packet's send time is interpolated
//! linearly between the received packets around it; it starts a new event if
//! that time is more than R after the start of the current event, R being
//! the RTT carried in the most recent data packet. A run of lost packets is
//! handled arithmetically (only event starts are computed), so a gap of any
//! length costs O(events), at most 64 events per run (beyond that, the rest of
//! the run joins the last event; the history holds only the last 9 anyway).
//!
//! Loss event rate (RFC 5348 §5.3–5.4, see `history`); the first event's
//! synthetic interval is 1/p for the p at which the equation gives the
//! current receive rate (RFC 5348 §6.3.1; f(p) = 2, i.e. X_target = s/(2R),
//! when no rate or RTT is known yet).
//!
//! Feedback (RFC 5348 §6.1–6.2): on the first data packet; then when the
//! feedback timer (R_m, the RTT in the latest data packet) expires and data
//! arrived since the last report; and at once when p increases or a new
//! congestion event (loss or delay) starts. While no RTT is known, every
//! data packet is answered (the sender sends one packet per second then).
//! If the timer expires with no data received, it stops; the next data
//! packet is answered at once. X_recv is the data received over the last
//! R_m: the bytes since the last report over the time since it when that is
//! at least R_m, otherwise the bytes since the last report plus the
//! proportional share of the previous report interval, over R_m (this keeps
//! early reports — after a loss — from under-reporting; Linux uses the bytes
//! since the last report over max(elapsed, R_m) instead).
//!
//! DFlow: every packet's OWD feeds the base/current filters (see `delay`);
//! when a current period ends with current − base > cd_thresh (and, if
//! enabled, current delay rising), a delay congestion event starts at the
//! highest sequence number received — subject to the same one-per-RTT rule
//! as loss events, whose history it shares. The filters also run in plain
//! TFRC mode (with DFlow's default periods), for the delay statistics only.

use super::delay::OwdFilter;
use super::equation::loss_event_rate_for_rate;
use super::history::LossIntervalHistory;
use super::{DflowParams, TfrcConfig, TfrcData, TfrcFeedback, TfrcMode};

/// Sequence numbers tracked beyond the lowest unresolved one.
pub const REORDER_WINDOW: usize = 1024;

/// Cap on new events computed for one run of lost packets.
const MAX_EVENTS_PER_RUN: u32 = 64;

/// Highest sequence number accepted; larger ones are counted as malformed
/// (keeps all sequence arithmetic clear of overflow).
pub const MAX_SEQ: u64 = u64::MAX - 4 * REORDER_WINDOW as u64;

/// Counters and latest measurements of the receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TfrcReceiverStats {
    /// Data packets received (duplicates inside the reorder window excluded).
    pub packets_received: u64,
    pub bytes_received: u64,
    /// Packets declared lost (RFC 5348 §5.1).
    pub packets_lost: u64,
    /// Congestion events started by losses.
    pub loss_events: u64,
    /// Congestion events started by queueing delay (DFlow).
    pub delay_events: u64,
    /// Duplicates detected inside the reorder window.
    pub duplicates: u64,
    /// Packets that arrived below the resolved point (late or duplicate).
    pub late_packets: u64,
    /// Packets ignored because their sequence number exceeded [`MAX_SEQ`].
    pub malformed: u64,
    pub feedback_sent: u64,
    /// OWD of the latest packet: receiver clock − sender timestamp, ns
    /// (includes the clock offset; only differences are meaningful).
    pub last_owd_ns: i64,
    /// Latest OWD minus the base delay, ns.
    pub last_queueing_delay_ns: u64,
    /// Queueing delay (current − base) of the latest closed current period.
    pub last_period_queueing_delay_ns: u64,
    /// Loss event rate p as last computed.
    pub p: f64,
}

/// The TFRC / DFlow receiver (sans-IO).
pub struct TfrcReceiver {
    cfg: TfrcConfig,
    /// DFlow parameters, or DFlow's defaults (statistics only) for TFRC.
    dflow: DflowParams,
    dflow_events: bool,
    started: bool,
    /// Lowest sequence number not yet resolved (received or lost).
    base_seq: u64,
    /// Highest sequence number received, and its send timestamp.
    highest_seq: u64,
    highest_ts_ns: u64,
    /// Highest resolved received packet (seq, send timestamp): the left
    /// neighbour for interpolating a lost run.
    last_resolved: (u64, u64),
    /// Reorder window: send timestamp of received packets, indexed by
    /// seq % REORDER_WINDOW; None = not (yet) received.
    window: Box<[Option<u64>]>,
    /// Received packets in [base_seq, highest_seq].
    received_in_window: u64,
    /// R_m: the sender's RTT estimate from the latest data packet (0: none).
    rtt_ns: u64,
    history: LossIntervalHistory,
    p: f64,
    // Receive rate (RFC 5348 §6.2).
    last_feedback_ns: u64,
    bytes_since_feedback: u64,
    prev_interval_bytes: u64,
    prev_interval_ns: u64,
    data_since_feedback: bool,
    /// (send timestamp, arrival time) of the latest data packet.
    last_data: (u64, u64),
    feedback_deadline_ns: Option<u64>,
    feedback_due: bool,
    owd: OwdFilter,
    stats: TfrcReceiverStats,
}

impl TfrcReceiver {
    /// A receiver for `cfg` (invalid fields are replaced by defaults; call
    /// `cfg.validate()` first to reject them instead).
    pub fn new(cfg: TfrcConfig) -> Self {
        let cfg = cfg.sanitized();
        let (dflow, dflow_events) = match cfg.mode {
            TfrcMode::DFlow(p) => (p, true),
            TfrcMode::Tfrc => (DflowParams::default(), false),
        };
        Self {
            cfg,
            dflow,
            dflow_events,
            started: false,
            base_seq: 0,
            highest_seq: 0,
            highest_ts_ns: 0,
            last_resolved: (0, 0),
            window: vec![None; REORDER_WINDOW].into_boxed_slice(),
            received_in_window: 0,
            rtt_ns: 0,
            history: LossIntervalHistory::default(),
            p: 0.0,
            last_feedback_ns: 0,
            bytes_since_feedback: 0,
            prev_interval_bytes: 0,
            prev_interval_ns: 0,
            data_since_feedback: false,
            last_data: (0, 0),
            feedback_deadline_ns: None,
            feedback_due: false,
            owd: OwdFilter::default(),
            stats: TfrcReceiverStats::default(),
        }
    }

    pub fn config(&self) -> &TfrcConfig {
        &self.cfg
    }

    pub fn stats(&self) -> TfrcReceiverStats {
        self.stats
    }

    /// p: the loss (congestion) event rate as last computed.
    pub fn loss_event_rate(&self) -> f64 {
        self.p
    }

    /// R_m: the RTT carried by the latest data packet (0 before one did).
    pub fn rtt_ns(&self) -> u64 {
        self.rtt_ns
    }

    /// Highest sequence number received (None before the first packet).
    pub fn highest_seq(&self) -> Option<u64> {
        self.started.then_some(self.highest_seq)
    }

    /// The receive rate X_recv over the last R_m as of `now_ns`, bytes/s.
    pub fn x_recv_bytes_per_s(&self, now_ns: u64) -> f64 {
        let elapsed = now_ns.saturating_sub(self.last_feedback_ns);
        let bytes = self.bytes_since_feedback as f64;
        let r = self.rtt_ns;
        let rate_ns = if r == 0 || elapsed >= r {
            if elapsed == 0 {
                0.0
            } else {
                bytes / elapsed as f64
            }
        } else if self.prev_interval_ns > 0 {
            // Add the share of the previous interval that falls in the last
            // R_m (assuming it was received evenly).
            let share = ((r - elapsed) as f64 / self.prev_interval_ns as f64).min(1.0);
            let covered = elapsed as f64 + share * self.prev_interval_ns as f64;
            let b = bytes + share * self.prev_interval_bytes as f64;
            if covered > 0.0 {
                b / covered
            } else {
                0.0
            }
        } else {
            bytes / r as f64
        };
        rate_ns * 1e9
    }

    /// Base period for DFlow: base_period_rtts·R, at least two current
    /// periods; unbounded (min over everything) while R is unknown.
    fn base_period_ns(&self) -> u64 {
        if self.rtt_ns == 0 {
            return u64::MAX;
        }
        let p = (self.dflow.base_period_rtts * self.rtt_ns as f64).min(u64::MAX as f64 / 2.0) as u64;
        p.max(self.dflow.current_period_ns.saturating_mul(2))
    }

    /// A data packet arrived at `now_ns` (receiver clock).
    pub fn on_data(&mut self, now_ns: u64, pkt: &TfrcData) {
        if pkt.seq > MAX_SEQ {
            self.stats.malformed += 1;
            return;
        }
        if self.started && self.is_duplicate(pkt.seq) {
            self.stats.duplicates += 1;
            return;
        }
        if pkt.rtt_ns > 0 {
            self.rtt_ns = pkt.rtt_ns;
        }
        let payload = pkt.payload_bytes as u64;
        // DFlow's notional OWD: receiver clock minus sender timestamp.
        let owd = (now_ns as i128 - pkt.send_ts_ns as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        self.stats.packets_received += 1;
        self.stats.bytes_received = self.stats.bytes_received.saturating_add(payload);
        self.bytes_since_feedback = self.bytes_since_feedback.saturating_add(payload);
        self.data_since_feedback = true;
        self.last_data = (pkt.send_ts_ns, now_ns);

        if !self.started {
            self.started = true;
            self.base_seq = pkt.seq + 1;
            self.highest_seq = pkt.seq;
            self.highest_ts_ns = pkt.send_ts_ns;
            self.last_resolved = (pkt.seq, pkt.send_ts_ns);
            self.last_feedback_ns = now_ns;
            // RFC 5348 §6.3: answer the first data packet at once.
            self.feedback_due = true;
        } else {
            self.on_seq(pkt.seq, pkt.send_ts_ns);
        }

        // DFlow delay filters.
        let base_period = self.base_period_ns();
        let verdict = self
            .owd
            .on_sample(now_ns, owd, base_period, self.dflow.current_period_ns);
        self.stats.last_owd_ns = owd;
        if let Some(base) = self.owd.base_delay_ns(now_ns, base_period) {
            self.stats.last_queueing_delay_ns =
                (owd as i128 - base as i128).clamp(0, u64::MAX as i128) as u64;
        }
        if let Some(v) = verdict {
            self.stats.last_period_queueing_delay_ns = v.queueing_delay_ns;
            let congested =
                v.queueing_delay_ns > self.dflow.cd_thresh_ns && (!self.dflow.gradient_test || v.rising);
            if self.dflow_events && congested && self.history.is_new_event(self.highest_ts_ns, self.rtt_ns) {
                self.start_event(now_ns, self.highest_seq, self.highest_ts_ns);
                self.stats.delay_events += 1;
            }
        }

        // RFC 5348 §6.1 steps 3–4: recompute p; report at once if it rose.
        let p_prev = self.p;
        self.p = self.history.loss_event_rate(self.highest_seq);
        self.stats.p = self.p;
        if self.p > p_prev {
            self.feedback_due = true;
        }
        // Feedback timer: while no RTT is known, answer every packet.
        if self.feedback_deadline_ns.is_none() && !self.feedback_due {
            if self.rtt_ns == 0 || now_ns.saturating_sub(self.last_feedback_ns) >= self.rtt_ns {
                self.feedback_due = true;
            } else {
                self.feedback_deadline_ns = Some(self.last_feedback_ns.saturating_add(self.rtt_ns));
            }
        }
    }

    /// A packet already received and still inside the reorder window.
    fn is_duplicate(&self, seq: u64) -> bool {
        seq >= self.base_seq
            && seq - self.base_seq < REORDER_WINDOW as u64
            && self.window[(seq % REORDER_WINDOW as u64) as usize].is_some()
    }

    /// Loss detection for a (non-duplicate) packet after the first.
    fn on_seq(&mut self, seq: u64, ts: u64) {
        if seq < self.base_seq {
            // Already resolved (late after being declared lost, or an old
            // duplicate); its bytes still arrived.
            self.stats.late_packets += 1;
            return;
        }
        if seq - self.base_seq >= REORDER_WINDOW as u64 {
            // Too far ahead: resolve the whole window, then the gap up to
            // `seq` is one run of lost packets.
            self.resolve(true);
            if seq > self.highest_seq.saturating_add(1) {
                let first = self.highest_seq + 1;
                self.lost_run(
                    first,
                    seq - first,
                    (self.highest_seq, self.highest_ts_ns),
                    (seq, ts),
                );
            }
            self.base_seq = seq + 1;
            self.highest_seq = seq;
            self.highest_ts_ns = ts;
            self.last_resolved = (seq, ts);
            return;
        }
        let slot = (seq % REORDER_WINDOW as u64) as usize;
        self.window[slot] = Some(ts);
        self.received_in_window += 1;
        if seq > self.highest_seq {
            self.highest_seq = seq;
            self.highest_ts_ns = ts;
        }
        self.resolve(false);
    }

    /// Advance `base_seq` over received packets and over holes that have
    /// NDUPACK received packets above them (all of them, if `force`).
    fn resolve(&mut self, force: bool) {
        let ndupack = self.cfg.ndupack as u64;
        while self.base_seq <= self.highest_seq && self.received_in_window > 0 {
            let slot = (self.base_seq % REORDER_WINDOW as u64) as usize;
            if let Some(ts) = self.window[slot].take() {
                self.last_resolved = (self.base_seq, ts);
                self.received_in_window -= 1;
                self.base_seq += 1;
                continue;
            }
            // A hole: every received packet in the window is above it.
            if !force && self.received_in_window < ndupack {
                break;
            }
            // The run of holes ends at the next received packet (one exists:
            // received_in_window > 0 and all are above base_seq).
            let mut end = self.base_seq + 1;
            let right = loop {
                let s = (end % REORDER_WINDOW as u64) as usize;
                if let Some(ts) = self.window[s] {
                    break (end, ts);
                }
                end += 1;
            };
            let first = self.base_seq;
            self.lost_run(first, end - first, self.last_resolved, right);
            self.base_seq = end;
        }
        if self.received_in_window == 0 && self.base_seq <= self.highest_seq {
            // Only reachable if the window bookkeeping was bypassed; keep
            // the invariant base_seq = highest + 1 when nothing is pending.
            self.base_seq = self.highest_seq.saturating_add(1);
        }
    }

    /// `count` consecutive packets from `first` are lost; `left`/`right` are
    /// the received packets (seq, send ts) around them. Interpolate send
    /// times (RFC 5348 §5.2) and start a loss event at each lost packet sent
    /// more than R after the start of the current event.
    fn lost_run(&mut self, first: u64, count: u64, left: (u64, u64), right: (u64, u64)) {
        if count == 0 {
            return;
        }
        self.stats.packets_lost = self.stats.packets_lost.saturating_add(count);
        let end = first.saturating_add(count); // exclusive
        let (s0, t0) = left;
        let (s1, t1) = right;
        let dseq = s1.saturating_sub(s0).max(1) as u128;
        let dts = t1.saturating_sub(t0) as u128; // 0 if timestamps went backwards
        let interp = |seq: u64| -> u64 {
            let k = seq.saturating_sub(s0) as u128;
            (t0 as u128 + (dts * k / dseq).min(u64::MAX as u128)).min(u64::MAX as u128) as u64
        };
        // First packet of the run with interpolated send time > `after`:
        // t0 + ⌊dts·k/dseq⌋ > after ⟺ k ≥ ⌈(after − t0 + 1)·dseq/dts⌉.
        let first_after = |after: u64, from: u64| -> u64 {
            if after < t0 {
                return from;
            }
            if dts == 0 {
                return end;
            }
            let k = ((after - t0) as u128 + 1) * dseq;
            let k = k.div_ceil(dts);
            let s = (s0 as u128 + k).min(u64::MAX as u128) as u64;
            s.max(from)
        };
        let rtt = self.rtt_ns;
        // Called from on_data after last_data was set to this arrival.
        let now_ns = self.last_data.1;
        let mut seq = first;
        let mut events = 0;
        let mut steps = 0;
        // Each step either starts an event or jumps past the current one,
        // so 2·MAX_EVENTS_PER_RUN steps suffice; the cap is a safeguard.
        while seq < end && events < MAX_EVENTS_PER_RUN && steps < 4 * MAX_EVENTS_PER_RUN {
            steps += 1;
            let t = interp(seq);
            if self.history.is_new_event(t, rtt) {
                self.start_event(now_ns, seq, t);
                self.stats.loss_events += 1;
                events += 1;
                seq = first_after(t.saturating_add(rtt), seq + 1);
            } else {
                let start_ts = self.history.last_event_ts().unwrap_or(t);
                seq = first_after(start_ts.saturating_add(rtt), seq + 1);
            }
        }
    }

    /// Start a congestion event; seed the first interval from X_recv.
    fn start_event(&mut self, now_ns: u64, seq: u64, send_ts_ns: u64) {
        let s = self.cfg.segment_bytes as f64;
        let rtt = self.rtt_ns as f64;
        let x_recv = self.x_recv_bytes_per_s(now_ns);
        // RFC 5348 §6.3.1: I_1 = 1/p with X(p) = X_recv.
        self.history
            .start_event(seq, send_ts_ns, || 1.0 / loss_event_rate_for_rate(s, rtt, x_recv));
        // RFC 5348 §6.1 and the brief: report a new event at once.
        self.feedback_due = true;
    }

    /// The next feedback report, if one is due at `now_ns`.
    pub fn poll_feedback(&mut self, now_ns: u64) -> Option<TfrcFeedback> {
        if !self.started {
            return None;
        }
        self.check_timer(now_ns);
        if !self.feedback_due {
            return None;
        }
        let x_recv = self.x_recv_bytes_per_s(now_ns);
        self.p = self.history.loss_event_rate(self.highest_seq);
        self.stats.p = self.p;
        let fb = TfrcFeedback {
            t_recvdata_ns: self.last_data.0,
            t_delay_ns: now_ns.saturating_sub(self.last_data.1),
            x_recv_bps: x_recv * 8.0,
            p: self.p,
        };
        self.prev_interval_bytes = self.bytes_since_feedback;
        self.prev_interval_ns = now_ns.saturating_sub(self.last_feedback_ns);
        self.bytes_since_feedback = 0;
        self.last_feedback_ns = now_ns;
        self.data_since_feedback = false;
        self.feedback_due = false;
        // RFC 5348 §6.2: next report after R_m.
        self.feedback_deadline_ns = (self.rtt_ns > 0).then(|| now_ns.saturating_add(self.rtt_ns));
        self.stats.feedback_sent += 1;
        Some(fb)
    }

    fn check_timer(&mut self, now_ns: u64) {
        if let Some(d) = self.feedback_deadline_ns {
            if now_ns >= d {
                self.feedback_deadline_ns = None;
                if self.data_since_feedback {
                    self.feedback_due = true;
                }
            }
        }
    }

    /// When the feedback timer next expires (receiver clock).
    pub fn next_timeout(&self) -> Option<u64> {
        self.feedback_deadline_ns
    }

    /// Handle an expired feedback timer; `poll_feedback` returns the report.
    pub fn on_timeout(&mut self, now_ns: u64) {
        self.check_timer(now_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfrc::equation::throughput_bytes_per_s;

    const MS: u64 = 1_000_000;

    fn data(seq: u64, send_ts_ns: u64, rtt_ns: u64) -> TfrcData {
        TfrcData {
            seq,
            send_ts_ns,
            rtt_ns,
            payload_bytes: 1200,
        }
    }

    /// Packets every `gap` ns from seq 0 with constant one-way delay `owd`,
    /// skipping `lost`; collects the feedback.
    fn feed(
        rx: &mut TfrcReceiver,
        n: u64,
        gap: u64,
        owd: impl Fn(u64) -> u64,
        lost: &[u64],
        rtt: u64,
    ) -> Vec<(u64, TfrcFeedback)> {
        let mut out = Vec::new();
        for seq in 0..n {
            let sent = 1_000 * MS + seq * gap;
            if !lost.contains(&seq) {
                rx.on_data(sent + owd(seq), &data(seq, sent, rtt));
                if let Some(fb) = rx.poll_feedback(sent + owd(seq)) {
                    out.push((seq, fb));
                }
            }
        }
        out
    }

    #[test]
    fn losses_within_one_rtt_are_one_event() {
        let mut rx = TfrcReceiver::new(TfrcConfig::default());
        // 10 ms between packets, R = 100 ms: 12, 15 and 20 fall within one
        // RTT of 10; 30 starts a new event; 35 joins it.
        feed(
            &mut rx,
            100,
            10 * MS,
            |_| 20 * MS,
            &[10, 12, 15, 20, 30, 35],
            100 * MS,
        );
        let st = rx.stats();
        assert_eq!(st.packets_lost, 6);
        assert_eq!(st.loss_events, 2);
        assert_eq!(st.packets_received, 94);
        // A burst of 5 consecutive losses is one event too.
        let mut rx = TfrcReceiver::new(TfrcConfig::default());
        feed(
            &mut rx,
            100,
            10 * MS,
            |_| 20 * MS,
            &[40, 41, 42, 43, 44],
            100 * MS,
        );
        assert_eq!(rx.stats().loss_events, 1);
        assert_eq!(rx.stats().packets_lost, 5);
    }

    #[test]
    fn loss_needs_ndupack_later_packets_and_tolerates_reordering() {
        let mut rx = TfrcReceiver::new(TfrcConfig::default());
        for seq in [0u64, 1, 3, 4] {
            rx.on_data(seq * MS, &data(seq, seq * MS, 50 * MS));
        }
        assert_eq!(rx.stats().packets_lost, 0); // two later packets only
        rx.on_data(5 * MS, &data(2, 2 * MS, 50 * MS)); // reordered, not lost
        rx.on_data(6 * MS, &data(5, 5 * MS, 50 * MS));
        rx.on_data(7 * MS, &data(7, 7 * MS, 50 * MS));
        rx.on_data(8 * MS, &data(8, 8 * MS, 50 * MS));
        assert_eq!(rx.stats().packets_lost, 0);
        rx.on_data(9 * MS, &data(9, 9 * MS, 50 * MS)); // third after 6
        assert_eq!(rx.stats().packets_lost, 1);
        rx.on_data(10 * MS, &data(6, 6 * MS, 50 * MS)); // too late
        assert_eq!(rx.stats().late_packets, 1);
        rx.on_data(11 * MS, &data(11, 11 * MS, 50 * MS)); // 10 missing
        rx.on_data(12 * MS, &data(11, 11 * MS, 50 * MS));
        assert_eq!(rx.stats().duplicates, 1);
        assert_eq!(rx.stats().packets_received, 11); // late ones count
    }

    #[test]
    fn first_interval_is_seeded_from_x_recv() {
        let mut rx = TfrcReceiver::new(TfrcConfig::default());
        // 1200 B every 1 ms = 1.2 MB/s, R = 50 ms; loss at 500.
        let fbs = feed(&mut rx, 520, MS, |_| 20 * MS, &[500], 50 * MS);
        assert_eq!(rx.stats().loss_events, 1);
        let p = rx.loss_event_rate();
        assert!(p > 0.0);
        // The equation at the seeded p gives the receive rate back: I_mean
        // = max(I_0, I_1) = I_1 = 1/p_seed while I_0 is short.
        // (The receive rate over the last R includes the lost packet: 2%.)
        let x = throughput_bytes_per_s(1200.0, 50.0 * MS as f64, p);
        assert!((x - 1.2e6).abs() / 1.2e6 < 0.04, "X(p) = {x}");
        // …and that report went out at once, at packet 503 (NDUPACK = 3).
        let (seq, fb) = fbs.iter().find(|(_, fb)| fb.p > 0.0).unwrap();
        assert_eq!(*seq, 503);
        assert_eq!(fb.p, p);
        assert!((fb.x_recv_bps / 8.0 - 1.2e6).abs() / 1.2e6 < 0.04);
    }

    #[test]
    fn feedback_once_per_rtt_and_at_once_on_new_event() {
        let mut rx = TfrcReceiver::new(TfrcConfig::default());
        // 1 s of packets every 1 ms, R = 50 ms: the first packet plus one
        // report per 50 ms.
        let fbs = feed(&mut rx, 1000, MS, |_| 20 * MS, &[], 50 * MS);
        assert!((20..=22).contains(&fbs.len()), "{}", fbs.len());
        for w in fbs.windows(2).skip(1) {
            assert!(w[1].0 - w[0].0 >= 50, "{:?}", (w[0].0, w[1].0));
        }
        // X_recv reports 1.2 MB/s.
        let x = fbs.last().unwrap().1.x_recv_bps / 8.0;
        assert!((x - 1.2e6).abs() / 1.2e6 < 0.01, "{x}");
        // t_delay = receive-to-report time (0 here: reports are made on
        // arrival) and t_recvdata echoes the sender's timestamp.
        let (seq, fb) = fbs.last().unwrap();
        assert_eq!(fb.t_recvdata_ns, 1_000 * MS + seq * MS);
        assert_eq!(fb.t_delay_ns, 0);
        // Timer-driven reports, with the driver calling on_timeout.
        let mut rx = TfrcReceiver::new(TfrcConfig::default());
        rx.on_data(0, &data(0, 0, 50 * MS));
        assert!(rx.poll_feedback(0).is_some());
        rx.on_data(10 * MS, &data(1, 10 * MS, 50 * MS));
        assert!(rx.poll_feedback(10 * MS).is_none());
        assert_eq!(rx.next_timeout(), Some(50 * MS));
        rx.on_timeout(50 * MS);
        let fb = rx.poll_feedback(50 * MS).unwrap();
        assert_eq!(fb.t_delay_ns, 40 * MS);
        // No data since: the timer stops, and the next packet is answered.
        rx.on_timeout(100 * MS);
        assert!(rx.poll_feedback(100 * MS).is_none());
        assert_eq!(rx.next_timeout(), None);
        rx.on_data(300 * MS, &data(2, 300 * MS, 50 * MS));
        assert!(rx.poll_feedback(300 * MS).is_some());
    }

    #[test]
    fn immediate_feedback_on_each_new_loss_event() {
        let mut rx = TfrcReceiver::new(TfrcConfig::default());
        let fbs = feed(&mut rx, 2000, MS, |_| 20 * MS, &[500, 1500], 50 * MS);
        assert_eq!(rx.stats().loss_events, 2);
        let seqs: Vec<u64> = fbs.iter().map(|f| f.0).collect();
        assert!(seqs.contains(&503) && seqs.contains(&1503), "{seqs:?}");
    }

    #[test]
    fn huge_gaps_are_bounded_work() {
        let mut rx = TfrcReceiver::new(TfrcConfig::default());
        rx.on_data(0, &data(0, 0, 10 * MS));
        rx.on_data(1, &data(u64::MAX / 2, 100 * crate::NS_PER_SEC, 10 * MS));
        let st = rx.stats();
        assert_eq!(st.packets_lost, u64::MAX / 2 - 1);
        assert!(st.loss_events >= 1 && st.loss_events <= MAX_EVENTS_PER_RUN as u64);
        rx.on_data(2, &data(MAX_SEQ, 0, u64::MAX));
        rx.on_data(3, &data(MAX_SEQ, 0, u64::MAX));
        rx.on_data(4, &data(u64::MAX, 0, u64::MAX));
        assert_eq!(rx.stats().malformed, 1);
        assert_eq!(rx.stats().duplicates, 0); // MAX_SEQ resolved: late
        assert_eq!(rx.stats().late_packets, 1);
        assert!(rx.loss_event_rate() <= 1.0);
    }

    fn dflow_rx(cd_thresh_ms: u64) -> TfrcReceiver {
        TfrcReceiver::new(TfrcConfig {
            mode: TfrcMode::DFlow(DflowParams {
                cd_thresh_ns: cd_thresh_ms * MS,
                ..DflowParams::default()
            }),
            ..TfrcConfig::default()
        })
    }

    /// Queueing delay `high_ms` during the last 400 ms of every second
    /// (one packet per ms), else 0.
    fn square_wave(high_ms: u64) -> impl Fn(u64) -> u64 {
        move |seq| {
            let q = if seq % 1000 >= 600 { high_ms } else { 0 };
            (20 + q) * MS
        }
    }

    /// Queueing delay ramps to `peak_ms` after 2 s and stays for 3 s.
    fn delay_profile(peak_ms: u64) -> impl Fn(u64) -> u64 {
        move |seq| {
            let t_ms = seq; // one packet per ms
            let q = if t_ms < 2000 {
                0
            } else {
                ((t_ms - 2000) / 10).min(peak_ms)
            };
            (20 + q) * MS
        }
    }

    #[test]
    fn dflow_delay_above_threshold_makes_events_at_most_one_per_rtt() {
        // 80 ms of queueing for 400 ms of every second, R = 100 ms.
        let mut rx = dflow_rx(50);
        let profile = square_wave(80);
        let mut event_seqs = Vec::new();
        for seq in 0..5000u64 {
            let sent = 1_000 * MS + seq * MS;
            let before = rx.stats().delay_events;
            rx.on_data(sent + profile(seq), &data(seq, sent, 100 * MS));
            if rx.stats().delay_events > before {
                event_seqs.push(seq);
            }
            rx.poll_feedback(sent + profile(seq));
        }
        let st = rx.stats();
        assert_eq!(st.loss_events, 0);
        // Every event inside a high phase, at most one per RTT (100
        // packets), 2–4 per 400 ms phase.
        assert!((10..=20).contains(&event_seqs.len()), "{event_seqs:?}");
        for w in event_seqs.windows(2) {
            assert!(w[1] - w[0] > 100, "{event_seqs:?}");
        }
        assert!(event_seqs.iter().all(|s| s % 1000 >= 600), "{event_seqs:?}");
        assert!(rx.loss_event_rate() > 0.0);
        assert_eq!(st.last_queueing_delay_ns, 80 * MS);
        // Below the threshold: none.
        let mut rx = dflow_rx(50);
        feed(&mut rx, 5000, MS, square_wave(45), &[], 100 * MS);
        assert_eq!(rx.stats().delay_events, 0);
        assert_eq!(rx.loss_event_rate(), 0.0);
        // Plain TFRC never makes delay events, but measures the delay.
        let mut rx = TfrcReceiver::new(TfrcConfig::default());
        feed(&mut rx, 5000, MS, square_wave(80), &[], 100 * MS);
        assert_eq!(rx.stats().delay_events, 0);
        assert_eq!(rx.stats().last_queueing_delay_ns, 80 * MS);
    }

    #[test]
    fn dflow_is_blind_to_clock_offset() {
        let run = |offset: i64| {
            let mut rx = dflow_rx(50);
            let profile = delay_profile(120);
            let mut out = Vec::new();
            for seq in 0..5000u64 {
                if seq % 97 == 13 {
                    continue; // some losses too
                }
                let sent = 3_000_000 * MS + seq * MS;
                let now = (sent as i64 + profile(seq) as i64 + offset) as u64;
                rx.on_data(now, &data(seq, sent, 100 * MS));
                if let Some(fb) = rx.poll_feedback(now) {
                    out.push((seq, fb.p.to_bits(), fb.x_recv_bps.to_bits(), fb.t_delay_ns));
                }
            }
            let mut st = rx.stats();
            st.last_owd_ns -= offset;
            (out, st)
        };
        let reference = run(0);
        assert!(reference.1.delay_events > 0 && reference.1.loss_events > 0);
        for offset in [1_000_000_000_000i64, -1_000_000_000_000] {
            assert_eq!(run(offset), reference, "offset {offset}");
        }
    }

    #[test]
    fn malformed_data_does_not_panic() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        for cfg in [TfrcConfig::default(), TfrcConfig::dflow()] {
            let mut rx = TfrcReceiver::new(cfg);
            for i in 0..20_000u64 {
                let pick = |rng: &mut rand_pcg::Pcg64| match rng.random_range(0..4) {
                    0 => 0,
                    1 => u64::MAX,
                    2 => rng.random_range(0..2000),
                    _ => rng.random(),
                };
                let d = TfrcData {
                    seq: if i % 3 == 0 { pick(&mut rng) } else { i / 2 },
                    send_ts_ns: pick(&mut rng),
                    rtt_ns: pick(&mut rng),
                    payload_bytes: rng.random(),
                };
                let now = pick(&mut rng);
                rx.on_data(now, &d);
                if let Some(fb) = rx.poll_feedback(now) {
                    assert!(fb.p >= 0.0 && fb.p <= 1.0);
                    assert!(!fb.x_recv_bps.is_nan());
                }
                rx.on_timeout(pick(&mut rng));
                let _ = rx.next_timeout();
            }
        }
    }
}
