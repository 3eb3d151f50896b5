//! TCP Westwood+ (S. Mascolo, C. Casetti, M. Gerla, M. Y. Sanadidi, R. Wang,
//! "TCP Westwood: bandwidth estimation for enhanced transport over wireless
//! links", MobiCom 2001; L. A. Grieco and S. Mascolo, "Performance
//! evaluation and comparison of Westwood+, New Reno, and Vegas TCP
//! congestion control", CCR 2004; Linux `net/ipv4/tcp_westwood.c`).
//!
//! The sender estimates the bandwidth its ACKs report and, after a loss,
//! sets ssthresh to the window that bandwidth needs at the path's minimum
//! RTT (its share of the pipe, without the queue) instead of halving:
//!
//! - Bandwidth samples (Westwood+: one per RTT, not per ACK, so ACK
//!   compression does not inflate them): the bytes ACKed over an interval
//!   of at least max(RTT, 50 ms), divided by its length. Each sample goes
//!   through Linux's two 7/8 low-pass filters:
//!   bw_ns = (7·bw_ns + sample)/8, bw_est = (7·bw_est + bw_ns)/8; the first
//!   sample fills both.
//! - After a congestion event ssthresh = max(bw_est·RTT_min/MSS, 2) whole
//!   segments (Linux `tcp_westwood_bw_rttmin`). After fast recovery
//!   cwnd = ssthresh (recomputed then, Linux `CA_EVENT_COMPLETE_CWR`); after
//!   a timeout the sender sets cwnd = 1 segment and RTT_min is re-learnt from
//!   the next sample (Linux `CA_EVENT_LOSS`, since the path may have
//!   changed).
//! - Window growth is NewReno's (Linux uses `tcp_reno_cong_avoid`).
//!
//! Details:
//! - RTT is the latest sample, RTT_min the smallest since the start or the
//!   last timeout. The handshake's sample is not used (a bare SYN lacks a
//!   data segment's serialization time, as for Vegas and LEDBAT).
//! - An interval closes on the first ACK after it has lasted more than
//!   max(RTT, 50 ms); that ACK's bytes open the next one (Linux order).
//! - ACKed bytes are counted on every ACK that reaches the controller: ACKs
//!   with an RTT or delay sample (`on_rtt_sample`, in or out of recovery) and
//!   ACKs of new data outside recovery (`on_ack`). Without timestamps,
//!   partial ACKs during recovery carry no sample and are not seen, so the
//!   interval spanning a recovery under-counts. Linux also counts each
//!   duplicate ACK as one delivered segment (corrected on the cumulative
//!   ACK); here only cumulatively ACKed bytes count.
//! - Linux sets ssthresh by Reno's halving when fast recovery starts and
//!   by bw_est·RTT_min when it ends; here the Westwood+ value is used from
//!   the start, as the papers describe ("ssthresh = BWE·RTT_min/seg_size"
//!   upon three duplicate ACKs), and recomputed at the end.
//! - With no estimate yet (a loss in the first RTTs) ssthresh is 2 segments,
//!   as in Linux.

use super::{AckSample, CcState, CongestionControl, CongestionEvent, ControllerParams, Knob, NewReno};
use crate::knobs::Knobs;
use crate::{TimeNs, NS_PER_MS, NS_PER_SEC};

/// Shortest bandwidth-sampling interval (Linux TCP_WESTWOOD_RTT_MIN, 50 ms).
pub const WESTWOOD_MIN_INTERVAL_NS: u64 = 50 * NS_PER_MS;

/// Westwood+ has no constants to set: the filter gains and the 50 ms
/// interval floor are Linux's fixed values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WestwoodParams;

impl Knobs for WestwoodParams {
    const KNOBS: &'static [Knob] = &[];

    fn set(&mut self, _key: &str, _value: f64) -> Option<()> {
        None
    }

    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

impl ControllerParams for WestwoodParams {
    fn build(&self, mss_bytes: u64) -> Box<dyn CongestionControl> {
        Box::new(Westwood::new(mss_bytes))
    }
}

/// TCP Westwood+ window control.
#[derive(Clone, Debug)]
pub struct Westwood {
    /// Window growth (NewReno's).
    reno: NewReno,
    /// SMSS given at construction; used only if the state's MSS is 0.
    mss_bytes: u64,
    /// First-stage filtered bandwidth, bytes/s (Linux bw_ns_est).
    bw_ns_bps: f64,
    /// Bandwidth estimate, bytes/s (Linux bw_est); 0 before a sample.
    bw_est_bps: f64,
    /// Bytes ACKed in the current interval (Linux bk).
    interval_bytes: u64,
    /// Start of the current interval (Linux rtt_win_sx); None before the
    /// first ACK.
    interval_start_ns: Option<TimeNs>,
    /// Latest RTT sample and the smallest since the start or the last
    /// timeout, ns (0: none yet).
    rtt_ns: u64,
    rtt_min_ns: u64,
    /// Take RTT_min afresh from the next sample (after a timeout).
    reset_rtt_min: bool,
}

impl Westwood {
    pub fn new(mss_bytes: u64) -> Self {
        Self {
            reno: NewReno::new(),
            mss_bytes,
            bw_ns_bps: 0.0,
            bw_est_bps: 0.0,
            interval_bytes: 0,
            interval_start_ns: None,
            rtt_ns: 0,
            rtt_min_ns: 0,
            reset_rtt_min: false,
        }
    }

    /// The bandwidth estimate bw_est, bytes/s (0 before the first sample).
    pub fn bw_est_bps(&self) -> f64 {
        self.bw_est_bps
    }

    /// RTT_min in ns (0 before the first sample).
    pub fn rtt_min_ns(&self) -> u64 {
        self.rtt_min_ns
    }

    fn mss_of(&self, state: &CcState) -> u64 {
        if state.mss_bytes > 0 {
            state.mss_bytes
        } else {
            self.mss_bytes.max(1)
        }
    }

    /// max(bw_est·RTT_min/MSS, 2) whole segments, in bytes.
    fn bw_rtt_min_bytes(&self, mss: u64) -> u64 {
        let bdp_bytes = self.bw_est_bps * self.rtt_min_ns as f64 / NS_PER_SEC as f64;
        let segments = (bdp_bytes / mss as f64) as u64; // `as` saturates; NaN → 0
        segments.max(2).saturating_mul(mss)
    }

    /// One ACK of `acked_bytes` at `now_ns` (Linux `westwood_update_window`
    /// then `bk += acked`).
    fn count(&mut self, now_ns: TimeNs, acked_bytes: u64) {
        let start_ns = *self.interval_start_ns.get_or_insert(now_ns);
        let delta_ns = now_ns.saturating_sub(start_ns);
        if self.rtt_ns > 0 && delta_ns > self.rtt_ns.max(WESTWOOD_MIN_INTERVAL_NS) {
            let sample_bps = self.interval_bytes as f64 * NS_PER_SEC as f64 / delta_ns as f64;
            if self.bw_ns_bps == 0.0 && self.bw_est_bps == 0.0 {
                self.bw_ns_bps = sample_bps;
                self.bw_est_bps = sample_bps;
            } else {
                self.bw_ns_bps = (7.0 * self.bw_ns_bps + sample_bps) / 8.0;
                self.bw_est_bps = (7.0 * self.bw_est_bps + self.bw_ns_bps) / 8.0;
            }
            self.interval_bytes = 0;
            self.interval_start_ns = Some(now_ns);
        }
        self.interval_bytes = self.interval_bytes.saturating_add(acked_bytes);
    }
}

impl CongestionControl for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    fn on_rtt_sample(&mut self, _state: &CcState, ack: &AckSample) {
        // Not the handshake's sample (acked_bytes = 0, see module docs).
        if ack.acked_bytes == 0 {
            return;
        }
        if let Some(rtt) = ack.rtt_ns {
            self.rtt_ns = rtt;
            if self.reset_rtt_min || self.rtt_min_ns == 0 || rtt < self.rtt_min_ns {
                self.rtt_min_ns = rtt;
                self.reset_rtt_min = false;
            }
        }
        self.count(ack.now_ns, ack.acked_bytes);
    }

    fn on_ack(&mut self, state: &mut CcState, ack: &AckSample) {
        // An ACK with a sample was counted in on_rtt_sample.
        if ack.rtt_ns.is_none() && ack.one_way_delay_ns.is_none() {
            self.count(ack.now_ns, ack.acked_bytes);
        }
        self.reno.on_ack(state, ack);
    }

    fn ssthresh_on_loss(
        &mut self,
        state: &CcState,
        event: CongestionEvent,
        flight_bytes: u64,
        now_ns: TimeNs,
    ) -> u64 {
        // NewReno's own bookkeeping (its byte counter restarts).
        let _ = self.reno.ssthresh_on_loss(state, event, flight_bytes, now_ns);
        if event == CongestionEvent::Timeout {
            self.reset_rtt_min = true;
        }
        self.bw_rtt_min_bytes(self.mss_of(state))
    }

    fn on_recovery_exit(&mut self, state: &mut CcState, _now_ns: TimeNs) {
        // Linux CA_EVENT_COMPLETE_CWR: ssthresh = bw_est·RTT_min, cwnd = ssthresh.
        state.ssthresh_bytes = self.bw_rtt_min_bytes(self.mss_of(state));
        state.cwnd_bytes = state.ssthresh_bytes;
    }

    fn on_idle_restart(&mut self, state: &mut CcState, now_ns: TimeNs) {
        self.reno.on_idle_restart(state, now_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    const MS: u64 = NS_PER_MS;

    fn state(cwnd_segments: u64, ssthresh_bytes: u64) -> CcState {
        CcState {
            cwnd_bytes: cwnd_segments * MSS,
            ssthresh_bytes,
            mss_bytes: MSS,
        }
    }

    fn ack(now_ns: TimeNs, acked_bytes: u64, rtt_ns: Option<u64>) -> AckSample {
        AckSample {
            now_ns,
            acked_bytes,
            rtt_ns,
            srtt_ns: rtt_ns.unwrap_or(0),
            ..AckSample::default()
        }
    }

    fn feed(cc: &mut Westwood, st: &mut CcState, a: &AckSample) {
        if a.rtt_ns.is_some() {
            cc.on_rtt_sample(st, a);
        }
        cc.on_ack(st, a);
    }

    /// An ACK stream of one MSS every `gap_ns` from `t0` to `t1`; the RTT
    /// samples alternate between `rtt_min` and 1.5·`rtt_min` (so the interval
    /// length follows the latest RTT and ssthresh the minimum).
    fn stream(cc: &mut Westwood, st: &mut CcState, t0: u64, t1: u64, gap_ns: u64, rtt_min: u64) {
        let mut t = t0;
        let mut k = 0;
        while t < t1 {
            let rtt = if k % 2 == 0 { rtt_min } else { rtt_min * 3 / 2 };
            feed(cc, st, &ack(t, MSS, Some(rtt)));
            t += gap_ns;
            k += 1;
        }
    }

    /// A constant 1 MB/s ACK stream (1000 B every ms) and RTT_min = 100 ms:
    /// every interval sample is exactly 1e6 B/s, so bw_est = 1e6 B/s and
    /// after a loss ssthresh = bw_est·RTT_min = 100 000 B = 100 segments,
    /// whatever cwnd was.
    #[test]
    fn ssthresh_is_bandwidth_times_min_rtt_after_loss() {
        let mut cc = Westwood::new(MSS);
        let mut st = state(300, 300 * MSS);
        stream(&mut cc, &mut st, 0, 2_000 * MS, MS, 100 * MS);
        assert_eq!(cc.rtt_min_ns(), 100 * MS);
        assert!((cc.bw_est_bps() - 1e6).abs() < 1e-6, "bw_est {}", cc.bw_est_bps());
        for event in [CongestionEvent::FastRetransmit, CongestionEvent::Timeout] {
            for cwnd in [150, 400] {
                st.cwnd_bytes = cwnd * MSS;
                assert_eq!(cc.ssthresh_on_loss(&st, event, cwnd * MSS, 2_000 * MS), 100 * MSS);
            }
        }
        // NewReno would have halved: 200 segments from 400.
    }

    /// The two 7/8 filters, hand-computed across a rate step: 1 MB/s, then
    /// 2 MB/s. Intervals close on the first ACK after more than
    /// max(RTT, 50 ms) = 60 ms: every 61 ACKs at one per ms (61 000 B over
    /// 61 ms); at 2 per ms the first interval after the step straddles it.
    #[test]
    fn filters_follow_the_linux_recurrence() {
        let mut cc = Westwood::new(MSS);
        let mut st = state(100, 100 * MSS);
        let rtt = Some(60 * MS);
        // 1 MB/s: 0..=610 ms, ten intervals of 61 ms, all samples 1e6.
        for t in 0..=610 {
            feed(&mut cc, &mut st, &ack(t * MS, MSS, rtt));
        }
        assert!((cc.bw_est_bps() - 1e6).abs() < 1e-6);
        // 2 MB/s from 610.5 ms: one ACK every 0.5 ms.
        let mut samples = Vec::new();
        let mut t = 610 * MS + MS / 2;
        let mut start = 610 * MS;
        let mut bytes = MSS; // the ACK at 610 ms opened the interval
        for _ in 0..400 {
            if t - start > 60 * MS {
                samples.push(bytes as f64 * 1e9 / (t - start) as f64);
                bytes = 0;
                start = t;
            }
            bytes += MSS;
            feed(&mut cc, &mut st, &ack(t, MSS, rtt));
            t += MS / 2;
        }
        assert!(samples.len() >= 3);
        let (mut bw_ns, mut bw_est) = (1e6f64, 1e6f64);
        for s in &samples {
            bw_ns = (7.0 * bw_ns + s) / 8.0;
            bw_est = (7.0 * bw_est + bw_ns) / 8.0;
        }
        assert!(
            (cc.bw_est_bps() - bw_est).abs() < 1e-6,
            "{} vs {bw_est}",
            cc.bw_est_bps()
        );
        assert!(bw_est > 1e6 && bw_est < 2e6);
    }

    #[test]
    fn recovery_exit_sets_cwnd_to_ssthresh() {
        let mut cc = Westwood::new(MSS);
        let mut st = state(300, 300 * MSS);
        stream(&mut cc, &mut st, 0, 2_000 * MS, MS, 100 * MS);
        st.ssthresh_bytes = cc.ssthresh_on_loss(&st, CongestionEvent::FastRetransmit, st.cwnd_bytes, 0);
        st.cwnd_bytes = st.ssthresh_bytes + 3 * MSS;
        cc.on_recovery_exit(&mut st, 2_000 * MS);
        assert_eq!(st.ssthresh_bytes, 100 * MSS);
        assert_eq!(st.cwnd_bytes, 100 * MSS);
    }

    /// After a timeout RTT_min is re-learnt from the next sample, even if it
    /// is larger (the path may have changed).
    #[test]
    fn timeout_resets_rtt_min() {
        let mut cc = Westwood::new(MSS);
        let mut st = state(10, u64::MAX);
        feed(&mut cc, &mut st, &ack(0, MSS, Some(100 * MS)));
        cc.ssthresh_on_loss(&st, CongestionEvent::FastRetransmit, 0, 0);
        feed(&mut cc, &mut st, &ack(MS, MSS, Some(300 * MS)));
        assert_eq!(cc.rtt_min_ns(), 100 * MS);
        cc.ssthresh_on_loss(&st, CongestionEvent::Timeout, 0, 0);
        feed(&mut cc, &mut st, &ack(2 * MS, MSS, Some(300 * MS)));
        assert_eq!(cc.rtt_min_ns(), 300 * MS);
    }

    #[test]
    fn no_estimate_gives_two_segments() {
        let mut cc = Westwood::new(MSS);
        let st = state(50, u64::MAX);
        assert_eq!(
            cc.ssthresh_on_loss(&st, CongestionEvent::FastRetransmit, 50 * MSS, 0),
            2 * MSS
        );
    }

    /// Growth is NewReno's, ACK for ACK.
    #[test]
    fn growth_is_newreno() {
        let mut ww = Westwood::new(MSS);
        let mut reno = NewReno::new();
        let (mut a, mut b) = (state(10, 40 * MSS), state(10, 40 * MSS));
        for i in 0..3000 {
            let x = ack(i * MS, if i % 3 == 0 { 2 * MSS } else { MSS }, Some(50 * MS));
            feed(&mut ww, &mut a, &x);
            reno.on_ack(&mut b, &x);
            assert_eq!(a, b, "ACK {i}");
        }
        assert!(a.cwnd_bytes > 60 * MSS);
    }

    /// Without timestamps only some ACKs carry a sample; the others are
    /// counted by on_ack, none twice.
    #[test]
    fn acks_without_samples_are_counted_once() {
        let mut cc = Westwood::new(MSS);
        let mut st = state(100, 100 * MSS);
        for t in 0..2_000u64 {
            let rtt = (t % 100 == 0).then_some(100 * MS);
            feed(&mut cc, &mut st, &ack(t * MS, MSS, rtt));
        }
        assert!((cc.bw_est_bps() - 1e6).abs() < 1e-6, "bw_est {}", cc.bw_est_bps());
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let mut cc = Westwood::new(0);
        let mut st = CcState {
            cwnd_bytes: 0,
            ssthresh_bytes: 0,
            mss_bytes: 0,
        };
        feed(&mut cc, &mut st, &ack(0, u64::MAX, Some(u64::MAX)));
        feed(&mut cc, &mut st, &ack(u64::MAX, u64::MAX, Some(1)));
        let _ = cc.ssthresh_on_loss(&st, CongestionEvent::Timeout, 0, 0);
        cc.on_recovery_exit(&mut st, 0);
        feed(&mut cc, &mut st, &ack(5, 1, Some(1)));
        let st = CcState {
            cwnd_bytes: u64::MAX,
            ssthresh_bytes: 0,
            mss_bytes: u64::MAX,
        };
        let _ = cc.ssthresh_on_loss(&st, CongestionEvent::FastRetransmit, u64::MAX, 0);
    }
}
