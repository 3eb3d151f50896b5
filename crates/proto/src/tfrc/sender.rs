//! The TFRC data sender (RFC 5348 §4) and DFlow's rate law.
//!
//! The sender is a media-like source that always has data: it sends packets
//! of s = `segment_bytes`, spaced s/X apart (RFC 5348 §4.6 without the
//! granularity slack δ: in virtual time the driver can wake exactly; a
//! late poll sends at once and the next packet follows one interval later,
//! without a catch-up burst). When X changes, the next send time is
//! recomputed from the last send.
//!
//! Rate control:
//! - Start (RFC 5348 §4.2): X = s per second, no-feedback timer 2 s. There
//!   is no handshake RTT, so the first feedback supplies the first R.
//! - Feedback (RFC 5348 §4.3): R_sample = (now − t_recvdata) − t_delay;
//!   R = R_sample first, then q·R + (1 − q)·R_sample. X_recv_set (initially
//!   {∞}) gets X_recv; entries older than 2R are dropped; recv_limit =
//!   2·max(X_recv_set). The source is never data-limited, so the
//!   data-limited branches of step 4 (and the "don't halve below
//!   recover_rate after idle" branch of §4.4) never apply and are not
//!   implemented.
//!   - p > 0: X = max(min(X_Bps, recv_limit), s/t_mbi).
//!   - p = 0 (slow start): if now − tld ≥ R: X = max(min(2X, recv_limit),
//!     W_init/R), tld = now, with W_init = min(4s, max(2s, 4380))
//!     (RFC 3390). The first feedback therefore sets X = W_init/R.
//!   - The no-feedback timer restarts at max(4R, 2s/X).
//! - No-feedback timer expiry (RFC 5348 §4.4): without any feedback yet,
//!   X = max(X/2, s/t_mbi) and the timer restarts at max(2 s, 2s/X); with
//!   p = 0, X = max(X/2, s/t_mbi); otherwise if X_Bps > 2·X_recv the limit
//!   becomes X_recv, else X_Bps/2 (Update_Limits: X_recv_set = {limit/2},
//!   so recv_limit = limit), and X is recomputed as in §4.3 step 4.
//!   X_recv there is the largest finite entry of X_recv_set.
//! - Oscillation reduction (RFC 5348 §4.5, optional, off by default):
//!   R_sqmean = q2·R_sqmean + (1 − q2)·sqrt(R_sample), q2 = 0.9, and packets
//!   are paced at X_inst = X·R_sqmean/sqrt(R_sample).
//! - DFlow (p > 0): X_eq = X_Bps(p); if X_eq > X, X grows by one packet per
//!   RTT (dX/dt = s/R², applied per feedback over the time since the last
//!   one, at most 2R, and not past X_eq); otherwise X = X_eq at once. Both
//!   are then bounded by recv_limit and s/t_mbi as in TFRC. Slow start and
//!   the no-feedback timer are TFRC's.
//!
//! Malformed feedback (p or X_recv NaN or negative, a t_recvdata in the
//! future or before this sender existed, t_delay longer than the time since
//! t_recvdata) is not used for an RTT sample; without a previous RTT it is
//! ignored altogether (counted in `feedback_ignored`). p > 1 is taken as 1.

use super::equation::throughput_bytes_per_s;
use super::{TfrcConfig, TfrcData, TfrcFeedback, TfrcMode};
use crate::NS_PER_SEC;

/// Entries kept in X_recv_set (two RTTs of once-per-RTT feedback need 3;
/// more frequent reports overwrite the oldest).
const X_RECV_SET_CAP: usize = 16;

/// RFC 5348 §4.5: q2 for R_sqmean.
const OSC_Q2: f64 = 0.9;

/// Counters kept by the sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TfrcSenderStats {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    /// Feedback packets used.
    pub feedback_received: u64,
    /// Feedback packets ignored as malformed.
    pub feedback_ignored: u64,
    /// No-feedback timer expirations.
    pub no_feedback_timeouts: u64,
}

/// The TFRC / DFlow sender (sans-IO).
pub struct TfrcSender {
    cfg: TfrcConfig,
    dflow: bool,
    /// s, bytes.
    s_bytes: f64,
    /// X: allowed sending rate, bytes/s.
    x_bytes_per_s: f64,
    /// R, ns (0 before the first feedback).
    rtt_ns: f64,
    /// p from the latest feedback.
    p: f64,
    /// X_recv from the latest feedback, bytes/s.
    x_recv_bytes_per_s: f64,
    /// X_recv_set: (time, X_recv bytes/s).
    x_recv_set: [(u64, f64); X_RECV_SET_CAP],
    x_recv_len: usize,
    /// tld: when X was last doubled in slow start.
    tld_ns: Option<u64>,
    feedback_seen: bool,
    created_ns: u64,
    no_feedback_deadline_ns: u64,
    next_seq: u64,
    last_send_ns: Option<u64>,
    next_send_ns: u64,
    /// RFC 5348 §4.5 R_sqmean (sqrt of seconds) and the latest sqrt(R_sample).
    r_sqmean: f64,
    sqrt_r_sample: f64,
    /// DFlow: when the rate was last updated in congestion avoidance.
    last_ca_update_ns: Option<u64>,
    stats: TfrcSenderStats,
}

impl TfrcSender {
    /// A sender created at `now_ns` (sender clock); the first packet may go
    /// at once. Invalid config fields are replaced by defaults (call
    /// `cfg.validate()` first to reject them instead).
    pub fn new(cfg: TfrcConfig, now_ns: u64) -> Self {
        let cfg = cfg.sanitized();
        let s_bytes = cfg.segment_bytes as f64;
        let mut x_recv_set = [(0, 0.0); X_RECV_SET_CAP];
        // RFC 5348 §4.2: X_recv_set starts as {Infinity}.
        x_recv_set[0] = (now_ns, f64::INFINITY);
        Self {
            dflow: matches!(cfg.mode, TfrcMode::DFlow(_)),
            s_bytes,
            // RFC 5348 §4.2: one packet per second until the first feedback.
            x_bytes_per_s: s_bytes,
            rtt_ns: 0.0,
            p: 0.0,
            x_recv_bytes_per_s: 0.0,
            x_recv_set,
            x_recv_len: 1,
            tld_ns: None,
            feedback_seen: false,
            created_ns: now_ns,
            no_feedback_deadline_ns: now_ns.saturating_add(cfg.initial_no_feedback_ns),
            next_seq: 0,
            last_send_ns: None,
            next_send_ns: now_ns,
            r_sqmean: 0.0,
            sqrt_r_sample: 0.0,
            last_ca_update_ns: None,
            stats: TfrcSenderStats::default(),
            cfg,
        }
    }

    pub fn config(&self) -> &TfrcConfig {
        &self.cfg
    }

    pub fn stats(&self) -> TfrcSenderStats {
        self.stats
    }

    /// The allowed sending rate X, bits/s.
    pub fn rate_bps(&self) -> f64 {
        self.x_bytes_per_s * 8.0
    }

    /// The allowed sending rate X, bytes/s.
    pub fn rate_bytes_per_s(&self) -> f64 {
        self.x_bytes_per_s
    }

    /// The rate packets are actually paced at (X, or X_inst with
    /// oscillation reduction), bytes/s.
    pub fn pacing_rate_bytes_per_s(&self) -> f64 {
        if self.cfg.oscillation_reduction && self.r_sqmean > 0.0 && self.sqrt_r_sample > 0.0 {
            self.x_bytes_per_s * self.r_sqmean / self.sqrt_r_sample
        } else {
            self.x_bytes_per_s
        }
    }

    /// R, ns (0 before the first feedback).
    pub fn rtt_ns(&self) -> u64 {
        self.rtt_ns.round() as u64
    }

    /// p from the latest feedback.
    pub fn loss_event_rate(&self) -> f64 {
        self.p
    }

    /// X_recv from the latest feedback, bits/s.
    pub fn x_recv_bps(&self) -> f64 {
        self.x_recv_bytes_per_s * 8.0
    }

    /// True until the first feedback reports p > 0.
    pub fn in_slow_start(&self) -> bool {
        self.p == 0.0
    }

    /// The no-feedback timer's deadline.
    pub fn no_feedback_deadline_ns(&self) -> u64 {
        self.no_feedback_deadline_ns
    }

    fn min_rate(&self) -> f64 {
        // s/t_mbi (RFC 5348 §4.3).
        self.s_bytes * NS_PER_SEC as f64 / self.cfg.t_mbi_ns as f64
    }

    /// W_init/R with W_init = min(4s, max(2s, 4380)) (RFC 5348 §4.2).
    fn initial_rate(&self) -> f64 {
        let w_init = (4.0 * self.s_bytes).min((2.0 * self.s_bytes).max(4380.0));
        if self.rtt_ns > 0.0 {
            w_init * NS_PER_SEC as f64 / self.rtt_ns
        } else {
            self.s_bytes
        }
    }

    fn recv_limit(&self) -> f64 {
        let max = self.x_recv_set[..self.x_recv_len]
            .iter()
            .fold(0.0_f64, |m, &(_, x)| m.max(x));
        2.0 * max
    }

    /// The largest finite X_recv in the set (∞ if there is none).
    fn max_finite_x_recv(&self) -> f64 {
        let m = self.x_recv_set[..self.x_recv_len]
            .iter()
            .filter(|(_, x)| x.is_finite())
            .fold(f64::NEG_INFINITY, |m, &(_, x)| m.max(x));
        if m.is_finite() {
            m
        } else {
            f64::INFINITY
        }
    }

    /// Update X_recv_set (RFC 5348 §4.3): add X_recv, drop entries older
    /// than two RTTs.
    fn update_x_recv_set(&mut self, now_ns: u64, x_recv: f64) {
        let two_r = 2.0 * self.rtt_ns;
        let mut kept = 0;
        for i in 0..self.x_recv_len {
            let (t, x) = self.x_recv_set[i];
            if now_ns.saturating_sub(t) as f64 <= two_r {
                self.x_recv_set[kept] = (t, x);
                kept += 1;
            }
        }
        if kept == X_RECV_SET_CAP {
            self.x_recv_set.copy_within(1.., 0);
            kept -= 1;
        }
        self.x_recv_set[kept] = (now_ns, x_recv);
        self.x_recv_len = kept + 1;
    }

    fn equation_rate(&self) -> f64 {
        throughput_bytes_per_s(self.s_bytes, self.rtt_ns, self.p)
    }

    /// RFC 5348 §4.3 step 4 for p > 0 (TFRC), or DFlow's rule.
    fn congestion_avoidance_rate(&mut self, now_ns: u64) {
        let x_eq = self.equation_rate();
        let mut x = if self.dflow {
            if x_eq > self.x_bytes_per_s {
                // One packet per RTT: dX/dt = s/R².
                let r_s = self.rtt_ns / NS_PER_SEC as f64;
                let dt_s = match self.last_ca_update_ns {
                    Some(t) => (now_ns.saturating_sub(t) as f64 / NS_PER_SEC as f64).min(2.0 * r_s),
                    None => r_s,
                };
                let grow = if r_s > 0.0 {
                    self.s_bytes * dt_s / (r_s * r_s)
                } else {
                    0.0
                };
                (self.x_bytes_per_s + grow).min(x_eq)
            } else {
                x_eq
            }
        } else {
            x_eq
        };
        x = x.min(self.recv_limit());
        self.last_ca_update_ns = Some(now_ns);
        self.set_rate(x);
    }

    /// X = max(x, s/t_mbi); NaN leaves X unchanged.
    fn set_rate(&mut self, x: f64) {
        if !x.is_nan() {
            self.x_bytes_per_s = x.max(self.min_rate());
        }
        self.reschedule();
    }

    /// Inter-packet interval at the pacing rate, ns (≥ 1).
    fn ipi_ns(&self) -> u64 {
        let ipi = self.s_bytes * NS_PER_SEC as f64 / self.pacing_rate_bytes_per_s();
        if ipi.is_finite() && ipi >= 1.0 {
            ipi.round().min(u64::MAX as f64 / 4.0) as u64
        } else if ipi.is_finite() || ipi.is_nan() {
            1
        } else {
            u64::MAX / 4
        }
    }

    fn reschedule(&mut self) {
        if let Some(last) = self.last_send_ns {
            self.next_send_ns = last.saturating_add(self.ipi_ns());
        }
    }

    /// Restart the no-feedback timer for max(4R, 2s/X) (RFC 5348 §4.3
    /// step 5 and §4.4 step 2), or max(initial, 2s/X) without an RTT.
    fn restart_no_feedback_timer(&mut self, now_ns: u64) {
        let two_packets_ns = 2.0 * self.s_bytes * NS_PER_SEC as f64 / self.x_bytes_per_s;
        let floor_ns = if self.feedback_seen {
            4.0 * self.rtt_ns
        } else {
            self.cfg.initial_no_feedback_ns as f64
        };
        let t = floor_ns.max(two_packets_ns);
        let t = if t.is_finite() {
            t.min(u64::MAX as f64 / 4.0) as u64
        } else {
            u64::MAX / 4
        };
        self.no_feedback_deadline_ns = now_ns.saturating_add(t.max(1));
    }

    /// The next data packet, if the pacer allows one at `now_ns`.
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<TfrcData> {
        if now_ns < self.next_send_ns {
            return None;
        }
        let pkt = TfrcData {
            seq: self.next_seq,
            send_ts_ns: now_ns,
            rtt_ns: self.rtt_ns(),
            payload_bytes: self.cfg.segment_bytes,
        };
        self.next_seq += 1;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += pkt.payload_bytes as u64;
        self.last_send_ns = Some(now_ns);
        self.next_send_ns = now_ns.saturating_add(self.ipi_ns());
        Some(pkt)
    }

    /// The earlier of the next pacing slot and the no-feedback deadline.
    pub fn next_timeout(&self) -> Option<u64> {
        Some(self.next_send_ns.min(self.no_feedback_deadline_ns))
    }

    /// Handle the no-feedback timer if it expired (RFC 5348 §4.4).
    pub fn on_timeout(&mut self, now_ns: u64) {
        if now_ns < self.no_feedback_deadline_ns {
            return;
        }
        self.stats.no_feedback_timeouts += 1;
        if !self.feedback_seen || self.p == 0.0 {
            // No X_Bps yet: halve X.
            self.set_rate(self.x_bytes_per_s / 2.0);
        } else {
            let x_eq = self.equation_rate();
            let x_recv = self.max_finite_x_recv();
            let limit = if x_eq > 2.0 * x_recv {
                // 2·X_recv was the limit: halve it.
                x_recv
            } else {
                // X_Bps was the limit: halve it.
                x_eq / 2.0
            };
            // Update_Limits(limit).
            let limit = limit.max(self.min_rate());
            self.x_recv_set[0] = (now_ns, limit / 2.0);
            self.x_recv_len = 1;
            let x = if self.dflow {
                self.x_bytes_per_s.min(x_eq)
            } else {
                x_eq
            };
            self.set_rate(x.min(self.recv_limit()));
        }
        self.restart_no_feedback_timer(now_ns);
    }

    /// Process a feedback packet (RFC 5348 §4.3).
    pub fn on_feedback(&mut self, now_ns: u64, fb: &TfrcFeedback) {
        let well_formed = fb.p.is_finite() && fb.p >= 0.0 && !fb.x_recv_bps.is_nan() && fb.x_recv_bps >= 0.0;
        // Step 1: R_sample = (now − t_recvdata) − t_delay.
        let r_sample = (fb.t_recvdata_ns >= self.created_ns && fb.t_recvdata_ns <= now_ns)
            .then(|| now_ns - fb.t_recvdata_ns)
            .and_then(|elapsed| elapsed.checked_sub(fb.t_delay_ns))
            .map(|r| r.max(1) as f64);
        if !well_formed || (r_sample.is_none() && !self.feedback_seen) {
            self.stats.feedback_ignored += 1;
            return;
        }
        self.stats.feedback_received += 1;
        // Step 2: R.
        if let Some(r) = r_sample {
            self.rtt_ns = if self.feedback_seen {
                let q = self.cfg.rtt_filter_q;
                q * self.rtt_ns + (1.0 - q) * r
            } else {
                r
            };
            // RFC 5348 §4.5 (seconds^½).
            let sqrt_r = (r / NS_PER_SEC as f64).sqrt();
            self.r_sqmean = if self.r_sqmean > 0.0 {
                OSC_Q2 * self.r_sqmean + (1.0 - OSC_Q2) * sqrt_r
            } else {
                sqrt_r
            };
            self.sqrt_r_sample = sqrt_r;
        }
        self.feedback_seen = true;
        self.p = fb.p.min(1.0);
        self.x_recv_bytes_per_s = fb.x_recv_bps / 8.0;
        // Step 4.
        self.update_x_recv_set(now_ns, self.x_recv_bytes_per_s);
        if self.p > 0.0 {
            self.congestion_avoidance_rate(now_ns);
        } else if self
            .tld_ns
            .is_none_or(|t| now_ns.saturating_sub(t) as f64 >= self.rtt_ns)
        {
            // Slow start: double at most once per RTT.
            let x = (2.0 * self.x_bytes_per_s)
                .min(self.recv_limit())
                .max(self.initial_rate());
            self.tld_ns = Some(now_ns);
            self.set_rate(x);
        } else {
            self.reschedule();
        }
        // Step 3 and 5: RTO = max(4R, 2s/X), restart the timer.
        self.restart_no_feedback_timer(now_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfrc::equation::throughput_bytes_per_s;
    use crate::NS_PER_MS;

    const MS: u64 = NS_PER_MS;
    const S: f64 = 1200.0;

    fn fb(t_recvdata_ns: u64, t_delay_ns: u64, x_recv_bytes: f64, p: f64) -> TfrcFeedback {
        TfrcFeedback {
            t_recvdata_ns,
            t_delay_ns,
            x_recv_bps: x_recv_bytes * 8.0,
            p,
        }
    }

    #[test]
    fn starts_at_one_packet_per_second_and_paces() {
        let mut tx = TfrcSender::new(TfrcConfig::default(), 1_000);
        let p0 = tx.poll_transmit(1_000).unwrap();
        assert_eq!(
            (p0.seq, p0.send_ts_ns, p0.rtt_ns, p0.payload_bytes),
            (0, 1_000, 0, 1200)
        );
        assert!(tx.poll_transmit(1_000).is_none());
        assert_eq!(tx.next_timeout(), Some(1_000 + NS_PER_SEC));
        assert_eq!(tx.rate_bps(), 9600.0);
    }

    #[test]
    fn first_feedback_sets_r_and_initial_rate_then_slow_start_doubles() {
        let mut tx = TfrcSender::new(TfrcConfig::default(), 0);
        tx.poll_transmit(0).unwrap();
        // Reported 2 ms after receipt, arriving at 62 ms: R = 60 ms.
        tx.on_feedback(62 * MS, &fb(0, 2 * MS, 0.0, 0.0));
        assert_eq!(tx.rtt_ns(), 60 * MS);
        // W_init = min(4·1200, max(2·1200, 4380)) = 4380 B per R.
        assert!((tx.rate_bytes_per_s() - 4380.0 / 0.06).abs() < 1e-6);
        // The pacer follows the new rate at once.
        assert_eq!(
            tx.next_timeout(),
            Some((1200.0_f64 / (4380.0 / 0.06) * 1e9).round() as u64)
        );
        // Next feedback one RTT later reporting 80 kB/s: X doubles (bounded by
        // 2·X_recv).
        let x1 = tx.rate_bytes_per_s();
        tx.on_feedback(122 * MS, &fb(62 * MS, 0, 80_000.0, 0.0));
        assert!((tx.rate_bytes_per_s() - 2.0 * x1).abs() < 1e-6);
        // Within one RTT of the last doubling: no change.
        tx.on_feedback(140 * MS, &fb(80 * MS, 0, 1e9, 0.0));
        assert!((tx.rate_bytes_per_s() - 2.0 * x1).abs() < 1e-6);
        // Receive limit: doubling is bounded by 2·max(X_recv_set).
        let mut tx = TfrcSender::new(TfrcConfig::default(), 0);
        tx.on_feedback(60 * MS, &fb(0, 0, 0.0, 0.0));
        tx.on_feedback(200 * MS, &fb(140 * MS, 0, 40_000.0, 0.0));
        tx.on_feedback(400 * MS, &fb(340 * MS, 0, 40_000.0, 0.0));
        // ∞ has aged out of the set; 2·40 kB/s < 2X, but the initial rate
        // (4380/0.06 = 73 kB/s) is the floor.
        assert!(
            (tx.rate_bytes_per_s() - 80_000.0).abs() < 1e-6,
            "{}",
            tx.rate_bytes_per_s()
        );
    }

    #[test]
    fn congestion_avoidance_follows_the_equation_and_receive_limit() {
        let mut tx = TfrcSender::new(TfrcConfig::default(), 0);
        tx.on_feedback(100 * MS, &fb(0, 0, 0.0, 0.0));
        tx.on_feedback(200 * MS, &fb(100 * MS, 0, 1e6, 0.01));
        let x_eq = throughput_bytes_per_s(S, 100.0 * MS as f64, 0.01);
        assert!((tx.rate_bytes_per_s() - x_eq).abs() < 1e-6);
        assert!(!tx.in_slow_start());
        // X_recv limits: 2·max(X_recv_set) < X_eq.
        let mut tx = TfrcSender::new(TfrcConfig::default(), 0);
        tx.on_feedback(100 * MS, &fb(0, 0, 0.0, 0.0));
        tx.on_feedback(400 * MS, &fb(300 * MS, 0, 10_000.0, 0.001));
        tx.on_feedback(700 * MS, &fb(600 * MS, 0, 10_000.0, 0.001));
        assert!((tx.rate_bytes_per_s() - 20_000.0).abs() < 1e-6);
        // Floor s/t_mbi.
        let mut tx = TfrcSender::new(TfrcConfig::default(), 0);
        tx.on_feedback(100 * MS, &fb(0, 0, 0.0, 0.0));
        tx.on_feedback(10_000 * MS, &fb(9_900 * MS, 0, 1.0, 1.0));
        assert!((tx.rate_bytes_per_s() - 1200.0 / 64.0).abs() < 1e-9);
    }

    #[test]
    fn no_feedback_timer_halves_the_rate() {
        // Before any feedback: X halves at 2 s, then after max(2 s, 2s/X).
        let mut tx = TfrcSender::new(TfrcConfig::default(), 0);
        assert_eq!(tx.no_feedback_deadline_ns(), 2 * NS_PER_SEC);
        tx.on_timeout(NS_PER_SEC); // early: nothing
        assert_eq!(tx.rate_bytes_per_s(), S);
        tx.on_timeout(2 * NS_PER_SEC);
        assert_eq!(tx.rate_bytes_per_s(), S / 2.0);
        assert_eq!(tx.no_feedback_deadline_ns(), 6 * NS_PER_SEC); // 2s/X = 4 s
        tx.on_timeout(6 * NS_PER_SEC);
        assert_eq!(tx.rate_bytes_per_s(), S / 4.0);
        assert_eq!(tx.stats().no_feedback_timeouts, 2);
        // In congestion avoidance, limited by X_Bps: the limit becomes X_Bps/2.
        let mut tx = TfrcSender::new(TfrcConfig::default(), 0);
        tx.on_feedback(100 * MS, &fb(0, 0, 0.0, 0.0));
        tx.on_feedback(200 * MS, &fb(100 * MS, 0, 1e7, 0.01));
        let x_eq = tx.rate_bytes_per_s();
        // Timer at max(4R, 2s/X) = 400 ms after the feedback.
        assert_eq!(tx.no_feedback_deadline_ns(), 600 * MS);
        tx.on_timeout(600 * MS);
        assert!((tx.rate_bytes_per_s() - x_eq / 2.0).abs() < 1e-6);
        tx.on_timeout(1_000 * MS);
        assert!((tx.rate_bytes_per_s() - x_eq / 4.0).abs() < 1e-6);
        // Limited by 2·X_recv: the limit becomes X_recv (halved rate).
        let mut tx = TfrcSender::new(TfrcConfig::default(), 0);
        tx.on_feedback(100 * MS, &fb(0, 0, 0.0, 0.0));
        tx.on_feedback(400 * MS, &fb(300 * MS, 0, 10_000.0, 0.001));
        tx.on_feedback(700 * MS, &fb(600 * MS, 0, 10_000.0, 0.001));
        assert!((tx.rate_bytes_per_s() - 20_000.0).abs() < 1e-6);
        tx.on_timeout(tx.no_feedback_deadline_ns());
        assert!((tx.rate_bytes_per_s() - 10_000.0).abs() < 1e-6);
        // In slow start (p = 0) with feedback: X halves.
        let mut tx = TfrcSender::new(TfrcConfig::default(), 0);
        tx.on_feedback(100 * MS, &fb(0, 0, 0.0, 0.0));
        let x = tx.rate_bytes_per_s();
        tx.on_timeout(tx.no_feedback_deadline_ns());
        assert!((tx.rate_bytes_per_s() - x / 2.0).abs() < 1e-6);
    }

    #[test]
    fn rtt_filter_and_oscillation_reduction() {
        let cfg = TfrcConfig {
            oscillation_reduction: true,
            ..TfrcConfig::default()
        };
        let mut tx = TfrcSender::new(cfg, 0);
        tx.on_feedback(100 * MS, &fb(0, 0, 0.0, 0.0));
        assert_eq!(tx.pacing_rate_bytes_per_s(), tx.rate_bytes_per_s());
        // R = 0.9·100 + 0.1·200 = 110 ms.
        tx.on_feedback(400 * MS, &fb(200 * MS, 0, 1e9, 0.0));
        assert_eq!(tx.rtt_ns(), 110 * MS);
        // R_sqmean = 0.9·√0.1 + 0.1·√0.2; X_inst = X·R_sqmean/√0.2 < X.
        let sq = 0.9 * 0.1f64.sqrt() + 0.1 * 0.2f64.sqrt();
        let expect = tx.rate_bytes_per_s() * sq / 0.2f64.sqrt();
        assert!((tx.pacing_rate_bytes_per_s() - expect).abs() < 1e-6);
    }

    #[test]
    fn dflow_adds_one_packet_per_rtt_and_drops_to_the_equation() {
        let mut tx = TfrcSender::new(TfrcConfig::dflow(), 0);
        tx.on_feedback(100 * MS, &fb(0, 0, 0.0, 0.0));
        // p small: X_eq far above X; one packet per RTT per feedback.
        tx.on_feedback(200 * MS, &fb(100 * MS, 0, 1e9, 1e-6));
        let x0 = tx.rate_bytes_per_s();
        let base = 4380.0 / 0.1;
        assert!((x0 - (base + S / 0.1)).abs() < 1e-6, "{x0}");
        for i in 1..=10 {
            let now = (200 + 100 * i) * MS;
            tx.on_feedback(now, &fb(now - 100 * MS, 0, 1e9, 1e-6));
        }
        // +s/R each RTT: 10 more packets per RTT.
        assert!((tx.rate_bytes_per_s() - (x0 + 10.0 * S / 0.1)).abs() < 1e-3);
        // p large: X_eq below X → X = X_eq at once.
        tx.on_feedback(1_400 * MS, &fb(1_300 * MS, 0, 1e9, 0.05));
        let x_eq = throughput_bytes_per_s(S, 100.0 * MS as f64, 0.05);
        assert!((tx.rate_bytes_per_s() - x_eq).abs() < 1e-6);
    }

    #[test]
    fn malformed_feedback_is_ignored_and_nothing_panics() {
        let mut tx = TfrcSender::new(TfrcConfig::default(), 1_000);
        for bad in [
            fb(0, 0, 1e6, 0.0),         // before the sender existed
            fb(5_000, 0, 1e6, 0.0),     // from the future
            fb(1_000, 2_000, 1e6, 0.0), // t_delay too long
            fb(1_000, 0, f64::NAN, 0.0),
            fb(1_000, 0, 1e6, f64::NAN),
            fb(1_000, 0, 1e6, -0.5),
            fb(1_000, 0, -1.0, 0.0),
        ] {
            tx.on_feedback(2_000, &bad);
        }
        assert_eq!(tx.stats().feedback_ignored, 7);
        assert_eq!(tx.stats().feedback_received, 0);
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
        for cfg in [
            TfrcConfig::default(),
            TfrcConfig::dflow(),
            TfrcConfig {
                oscillation_reduction: true,
                ..TfrcConfig::default()
            },
        ] {
            let mut tx = TfrcSender::new(cfg, rng.random());
            for _ in 0..20_000 {
                let pick = |rng: &mut rand_pcg::Pcg64| match rng.random_range(0..4) {
                    0 => 0,
                    1 => u64::MAX,
                    2 => rng.random_range(0..10_000_000_000u64),
                    _ => rng.random(),
                };
                let pickf = |rng: &mut rand_pcg::Pcg64| match rng.random_range(0..6) {
                    0 => 0.0,
                    1 => f64::INFINITY,
                    2 => f64::NAN,
                    3 => -1.0,
                    4 => rng.random::<f64>(),
                    _ => rng.random::<f64>() * 1e12,
                };
                let now = pick(&mut rng);
                let f = TfrcFeedback {
                    t_recvdata_ns: pick(&mut rng),
                    t_delay_ns: pick(&mut rng),
                    x_recv_bps: pickf(&mut rng),
                    p: pickf(&mut rng),
                };
                tx.on_feedback(now, &f);
                tx.on_timeout(pick(&mut rng));
                let _ = tx.poll_transmit(pick(&mut rng));
                let _ = tx.next_timeout();
                let x = tx.rate_bytes_per_s();
                assert!(x.is_finite() || x == f64::INFINITY);
                assert!(x >= 1200.0 / 64.0 - 1e-9, "{x}");
            }
        }
    }
}
