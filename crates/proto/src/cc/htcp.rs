//! H-TCP (D. Leith and R. Shorten, "H-TCP: TCP for high-speed and
//! long-distance networks", PFLDnet 2004; Linux `net/ipv4/tcp_htcp.c`).
//!
//! The additive increase grows with the time Δ since the last congestion
//! event, so a flow that has not seen a loss for a while probes faster, and
//! the backoff adapts to the path's buffering:
//!
//! - α(Δ) = 1 for Δ ≤ Δ_L = 1 s, else 1 + 10(Δ − Δ_L) + ((Δ − Δ_L)/2)²
//!   (segments per RTT).
//! - RTT scaling (Linux `use_rtt_scaling`, on by default): α(Δ) is scaled by
//!   minRTT/100 ms, the ratio bounded to [0.1, 2], so flows with different
//!   RTTs gain window at similar rates in time; as in Linux the scaled value
//!   is never below 1.
//! - α = 2(1 − β)·α(Δ), which keeps H-TCP's average window like Reno's for
//!   Δ ≤ Δ_L whatever β is; per ACK cwnd += α·acked/cwnd (the shared
//!   additive increase [`cong_avoid_ai`] with w = cwnd/α).
//! - At a congestion event β = minRTT/maxRTT clamped to [0.5, 0.8] (a full
//!   buffer doubles the RTT and gets 0.5; a small buffer gets a gentler
//!   backoff, so the link stays busy); ssthresh = max(β·cwnd, 2 segments).
//!   β is 0.5 at the first congestion event (there is no maxRTT worth the
//!   name yet; Linux `modeswitch`) and, with the bandwidth switch on (Linux
//!   `use_bandwidth_switch`, default), whenever the maximum throughput
//!   measured since the previous event differs from the one before by more
//!   than 20%: a changed path gets the Reno backoff so flows converge.
//!
//! Measurements, as Linux: minRTT is the smallest RTT sample; maxRTT grows
//! only from samples taken outside loss recovery and by at most 20 ms per
//! sample (an outlier does not set it), and after each congestion event it
//! fades 5% toward minRTT (routing changes). Throughput is the ACKed bytes
//! over at least one minRTT and about one window, smoothed (3·B + B_new)/4,
//! reset during the first 3 minRTTs after an event.
//!
//! Differences from Linux, by design:
//! - α(Δ) and the RTT scale are continuous (Linux truncates α(Δ) to whole
//!   segments and scales in 1/8 steps) and α is re-evaluated on every ACK
//!   (Linux after each one-segment increase).
//! - Δ runs from the congestion event and restarts when fast recovery ends
//!   (Linux restarts it on the return to the Open state, i.e. also after a
//!   timeout's recovery; here the timeout itself starts it).
//! - β adapts at any minRTT (Linux requires minRTT > 10 ms, a limit of its
//!   jiffies clock).
//! - The handshake's RTT sample is not used (a bare SYN lacks a data
//!   segment's serialization time, as for Vegas and LEDBAT).
//! - At most one segment is added per ACK, the rest carried (see
//!   [`cong_avoid_ai`]); Linux also adds at most one per ACK but drops the
//!   remainder.

use super::{
    cong_avoid_ai, knob_flag, slow_start, AckSample, CcState, CongestionControl, CongestionEvent,
    ControllerParams, Knob,
};
use crate::knobs::Knobs;
use crate::{TimeNs, NS_PER_MS, NS_PER_SEC};

/// Δ_L: the low-speed period after a congestion event (Leith & Shorten: 1 s).
pub const HTCP_DELTA_L_NS: u64 = NS_PER_SEC;
/// Smallest and largest backoff factor β (Linux BETA_MIN, BETA_MAX).
pub const HTCP_BETA_MIN: f64 = 0.5;
pub const HTCP_BETA_MAX: f64 = 0.8;
/// Reference RTT of the RTT scaling (Linux: HZ/10).
const RTT_REF_NS: u64 = 100 * NS_PER_MS;
/// Largest step by which one RTT sample raises maxRTT (Linux: 20 ms).
const MAX_RTT_STEP_NS: u64 = 20 * NS_PER_MS;

/// H-TCP switches (Linux module parameters; both on by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HtcpParams {
    /// Scale α(Δ) by minRTT/100 ms bounded to [0.1, 2] (Linux
    /// `use_rtt_scaling`).
    pub rtt_scaling: bool,
    /// Back off by 0.5 when the maximum throughput changed by more than 20%
    /// between congestion events (Linux `use_bandwidth_switch`).
    pub bandwidth_switch: bool,
}

impl Default for HtcpParams {
    fn default() -> Self {
        Self {
            rtt_scaling: true,
            bandwidth_switch: true,
        }
    }
}

impl Knobs for HtcpParams {
    const KNOBS: &'static [Knob] = &[
        Knob {
            key: "rtt_scaling",
            about: "scale alpha by minRTT/100 ms within [0.1, 2], 0 or 1; default 1",
        },
        Knob {
            key: "bandwidth_switch",
            about: "beta = 0.5 when throughput changed by more than 20%, 0 or 1; default 1",
        },
    ];

    fn set(&mut self, key: &str, value: f64) -> Option<()> {
        match key {
            "rtt_scaling" => self.rtt_scaling = knob_flag(value)?,
            "bandwidth_switch" => self.bandwidth_switch = knob_flag(value)?,
            _ => return None,
        }
        Some(())
    }

    /// Two switches: every combination is valid.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

impl ControllerParams for HtcpParams {
    fn build(&self, mss_bytes: u64) -> Box<dyn CongestionControl> {
        Box::new(Htcp::new(*self, mss_bytes))
    }
}

/// α(Δ) of Leith & Shorten, in segments per RTT, before the 2(1 − β) factor
/// and the RTT scaling: 1 for Δ ≤ Δ_L = 1 s, else
/// 1 + 10(Δ − Δ_L) + ((Δ − Δ_L)/2)².
pub fn htcp_alpha_of_delta(delta_ns: u64) -> f64 {
    if delta_ns <= HTCP_DELTA_L_NS {
        return 1.0;
    }
    let d = (delta_ns - HTCP_DELTA_L_NS) as f64 / NS_PER_SEC as f64;
    1.0 + 10.0 * d + (d / 2.0) * (d / 2.0)
}

/// H-TCP window control.
#[derive(Clone, Debug)]
pub struct Htcp {
    params: HtcpParams,
    /// SMSS given at construction; used only if the state's MSS is 0.
    mss_bytes: u64,
    /// α in segments per RTT, as last evaluated.
    alpha: f64,
    /// β, the backoff factor of the last congestion event.
    beta: f64,
    /// A congestion event has set β (Linux `modeswitch`): the next one may
    /// adapt it.
    modeswitch: bool,
    /// Smallest and largest RTT, ns (0: no sample yet).
    min_rtt_ns: u64,
    max_rtt_ns: u64,
    /// When Δ started: the last congestion event or the end of its fast
    /// recovery; the first hook call before any event.
    last_cong_ns: Option<TimeNs>,
    /// Additive-increase credit, bytes ([`cong_avoid_ai`]).
    credit_bytes: u64,
    /// Throughput measurement: bytes ACKed since `count_start_ns`.
    count_bytes: u64,
    count_start_ns: Option<TimeNs>,
    /// Smoothed throughput, its maximum since the last event, and that
    /// maximum at the event before (bytes/s; Linux Bi, maxB, old_maxB).
    throughput_bps: f64,
    max_throughput_bps: f64,
    old_max_throughput_bps: f64,
}

impl Htcp {
    pub fn new(params: HtcpParams, mss_bytes: u64) -> Self {
        Self {
            params,
            mss_bytes,
            alpha: 1.0,
            beta: HTCP_BETA_MIN,
            modeswitch: false,
            min_rtt_ns: 0,
            max_rtt_ns: 0,
            last_cong_ns: None,
            credit_bytes: 0,
            count_bytes: 0,
            count_start_ns: None,
            throughput_bps: 0.0,
            max_throughput_bps: 0.0,
            old_max_throughput_bps: 0.0,
        }
    }

    /// α in segments per RTT, as last evaluated.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// β of the last congestion event (0.5 before the first).
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// minRTT and maxRTT in ns (0 before a sample).
    pub fn min_rtt_ns(&self) -> u64 {
        self.min_rtt_ns
    }

    pub fn max_rtt_ns(&self) -> u64 {
        self.max_rtt_ns
    }

    /// Maximum smoothed throughput since the last congestion event, bytes/s.
    pub fn max_throughput_bps(&self) -> f64 {
        self.max_throughput_bps
    }

    fn mss_of(&self, state: &CcState) -> u64 {
        if state.mss_bytes > 0 {
            state.mss_bytes
        } else {
            self.mss_bytes.max(1)
        }
    }

    /// Δ in ns at `now_ns` (0 before the clock started).
    fn delta_ns(&self, now_ns: TimeNs) -> u64 {
        self.last_cong_ns.map_or(0, |t| now_ns.saturating_sub(t))
    }

    /// α = 2(1 − β)·max(1, α(Δ)·s), s = minRTT/100 ms bounded to [0.1, 2]
    /// with RTT scaling (Linux `htcp_alpha_update`).
    fn update_alpha(&mut self, now_ns: TimeNs) {
        let mut factor = htcp_alpha_of_delta(self.delta_ns(now_ns));
        if self.params.rtt_scaling && self.min_rtt_ns > 0 {
            let scale = (self.min_rtt_ns as f64 / RTT_REF_NS as f64).clamp(0.1, 2.0);
            factor = (factor * scale).max(1.0);
        }
        self.alpha = 2.0 * (1.0 - self.beta) * factor;
    }

    /// β at a congestion event (Linux `htcp_beta_update`).
    fn update_beta(&mut self) {
        if self.params.bandwidth_switch {
            let max_b = self.max_throughput_bps;
            let old_max_b = self.old_max_throughput_bps;
            self.old_max_throughput_bps = max_b;
            // Linux between(5·maxB, 4·old_maxB, 6·old_maxB): within ±20%.
            if !(5.0 * max_b >= 4.0 * old_max_b && 5.0 * max_b <= 6.0 * old_max_b) {
                self.beta = HTCP_BETA_MIN;
                self.modeswitch = false;
                return;
            }
        }
        if self.modeswitch && self.min_rtt_ns > 0 && self.max_rtt_ns > 0 {
            let ratio = self.min_rtt_ns as f64 / self.max_rtt_ns as f64;
            self.beta = ratio.clamp(HTCP_BETA_MIN, HTCP_BETA_MAX);
        } else {
            self.beta = HTCP_BETA_MIN;
            self.modeswitch = true;
        }
    }

    /// Throughput over about one window and at least one minRTT (Linux
    /// `measure_achieved_throughput`, outside loss recovery).
    fn measure_throughput(&mut self, state: &CcState, mss: u64, ack: &AckSample) {
        let now_ns = ack.now_ns;
        let start_ns = *self.count_start_ns.get_or_insert(now_ns);
        self.count_bytes = self.count_bytes.saturating_add(ack.acked_bytes);
        let window_bytes = state
            .cwnd_bytes
            .saturating_sub((self.alpha.floor() as u64).max(1).saturating_mul(mss));
        let elapsed_ns = now_ns.saturating_sub(start_ns);
        if self.count_bytes >= window_bytes && self.min_rtt_ns > 0 && elapsed_ns >= self.min_rtt_ns {
            let sample_bps = self.count_bytes as f64 * NS_PER_SEC as f64 / elapsed_ns as f64;
            if self.delta_ns(now_ns) / self.min_rtt_ns <= 3 {
                // Just after a backoff: start afresh.
                self.throughput_bps = sample_bps;
                self.max_throughput_bps = sample_bps;
            } else {
                self.throughput_bps = (3.0 * self.throughput_bps + sample_bps) / 4.0;
                self.max_throughput_bps = self.max_throughput_bps.max(self.throughput_bps);
            }
            self.count_bytes = 0;
            self.count_start_ns = Some(now_ns);
        }
    }

    /// Leaving the Open state (congestion event) or returning to it: the
    /// throughput count starts again.
    fn restart_count(&mut self, now_ns: TimeNs) {
        self.count_bytes = 0;
        self.count_start_ns = Some(now_ns);
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }

    fn on_rtt_sample(&mut self, _state: &CcState, ack: &AckSample) {
        self.last_cong_ns.get_or_insert(ack.now_ns);
        // Not the handshake's sample (see the module docs).
        if let (Some(rtt), true) = (ack.rtt_ns, ack.acked_bytes > 0) {
            if self.min_rtt_ns == 0 || rtt < self.min_rtt_ns {
                self.min_rtt_ns = rtt;
            }
        }
    }

    fn on_ack(&mut self, state: &mut CcState, ack: &AckSample) {
        self.last_cong_ns.get_or_insert(ack.now_ns);
        let mss = self.mss_of(state);
        // maxRTT from samples outside recovery (on_ack is only called
        // there), rising by at most 20 ms per sample (Linux `measure_rtt`).
        if let Some(rtt) = ack.rtt_ns {
            if self.max_rtt_ns < self.min_rtt_ns {
                self.max_rtt_ns = self.min_rtt_ns;
            }
            if self.max_rtt_ns < rtt && rtt <= self.max_rtt_ns.saturating_add(MAX_RTT_STEP_NS) {
                self.max_rtt_ns = rtt;
            }
        }
        if self.params.bandwidth_switch {
            self.measure_throughput(state, mss, ack);
        }
        // RFC 7661: no growth while application-limited.
        if ack.app_limited || ack.acked_bytes == 0 {
            return;
        }
        let mut acked_bytes = ack.acked_bytes;
        if state.in_slow_start() {
            acked_bytes = slow_start(state, acked_bytes);
            if acked_bytes == 0 || state.in_slow_start() {
                return;
            }
        }
        // cwnd += α·acked/cwnd: one segment per cwnd/α bytes ACKed.
        self.update_alpha(ack.now_ns);
        let w_bytes = (state.cwnd_bytes as f64 / self.alpha).ceil() as u64;
        cong_avoid_ai(state, &mut self.credit_bytes, w_bytes, acked_bytes);
    }

    fn ssthresh_on_loss(
        &mut self,
        state: &CcState,
        _event: CongestionEvent,
        _flight_bytes: u64,
        now_ns: TimeNs,
    ) -> u64 {
        // Linux htcp_param_update: β, then maxRTT fades 5% toward minRTT.
        self.update_beta();
        if self.min_rtt_ns > 0 && self.max_rtt_ns > self.min_rtt_ns {
            // In u128: a spread near u64::MAX ns (a bogus sample) must not
            // overflow; the result is at most the spread, so it fits.
            let spread_ns = u128::from(self.max_rtt_ns - self.min_rtt_ns);
            self.max_rtt_ns = self.min_rtt_ns + (spread_ns * 95 / 100) as u64;
        }
        // A new Δ begins; α restarts from α(0) with the new β.
        self.last_cong_ns = Some(now_ns);
        self.update_alpha(now_ns);
        self.credit_bytes = 0;
        self.restart_count(now_ns);
        // ssthresh = max(β·cwnd, 2 segments) (Linux htcp_recalc_ssthresh).
        let mss = self.mss_of(state);
        ((state.cwnd_bytes as f64 * self.beta) as u64).max(mss.saturating_mul(2))
    }

    fn on_recovery_exit(&mut self, _state: &mut CcState, now_ns: TimeNs) {
        // Linux htcp_state(TCP_CA_Open): Δ counts from the end of recovery.
        self.last_cong_ns = Some(now_ns);
        self.restart_count(now_ns);
    }

    fn on_idle_restart(&mut self, _state: &mut CcState, now_ns: TimeNs) {
        // The window was cut to the restart window; credit earned against
        // the old one no longer applies, nor does the throughput count.
        self.credit_bytes = 0;
        self.restart_count(now_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;
    const MS: u64 = NS_PER_MS;
    const S: u64 = NS_PER_SEC;

    fn ca_state(cwnd_segments: u64) -> CcState {
        CcState {
            cwnd_bytes: cwnd_segments * MSS,
            ssthresh_bytes: cwnd_segments * MSS,
            mss_bytes: MSS,
        }
    }

    fn ack(now_ns: TimeNs, rtt_ns: u64) -> AckSample {
        AckSample {
            now_ns,
            acked_bytes: MSS,
            rtt_ns: Some(rtt_ns),
            srtt_ns: rtt_ns,
            min_rtt_ns: rtt_ns,
            ..AckSample::default()
        }
    }

    fn feed(cc: &mut Htcp, st: &mut CcState, a: &AckSample) {
        cc.on_rtt_sample(st, a);
        cc.on_ack(st, a);
    }

    fn no_switches() -> HtcpParams {
        HtcpParams {
            rtt_scaling: false,
            bandwidth_switch: false,
        }
    }

    #[test]
    fn alpha_of_delta_follows_leith_shorten() {
        // Hand-computed: 1 + 10(Δ−1) + ((Δ−1)/2)².
        for (delta_s, expect) in [
            (0.0, 1.0),
            (0.5, 1.0),
            (1.0, 1.0),
            (1.5, 1.0 + 5.0 + 0.0625),
            (2.0, 11.25),
            (3.0, 22.0),
            (5.0, 45.0),
            (11.0, 126.0),
        ] {
            let got = htcp_alpha_of_delta((delta_s * S as f64) as u64);
            assert!((got - expect).abs() < 1e-9, "Δ = {delta_s} s: {got} vs {expect}");
        }
    }

    /// The controller's α after a congestion event at t = 10 s: β = 0.5 at
    /// the first event, so α = 2(1 − 0.5)·α(Δ) = α(Δ), times the RTT scale.
    #[test]
    fn alpha_grows_with_time_since_congestion() {
        for (rtt_scaling, rtt_ms, scale) in [
            (false, 100, 1.0),
            (true, 100, 1.0),
            (true, 40, 0.4),
            (true, 5, 0.1),
            (true, 300, 2.0),
        ] {
            let mut cc = Htcp::new(
                HtcpParams {
                    rtt_scaling,
                    bandwidth_switch: false,
                },
                MSS,
            );
            let mut st = ca_state(100);
            feed(&mut cc, &mut st, &ack(0, rtt_ms * MS));
            st.ssthresh_bytes =
                cc.ssthresh_on_loss(&st, CongestionEvent::FastRetransmit, st.cwnd_bytes, 10 * S);
            assert_eq!(cc.beta(), 0.5);
            st.cwnd_bytes = st.ssthresh_bytes;
            for (delta_s, alpha_delta) in [(0.5, 1.0), (2.0, 11.25), (3.0, 22.0), (5.0, 45.0)] {
                let now = 10 * S + (delta_s * S as f64) as u64;
                feed(&mut cc, &mut st, &ack(now, rtt_ms * MS));
                let expect = f64::max(alpha_delta * scale, 1.0);
                assert!(
                    (cc.alpha() - expect).abs() < 1e-9,
                    "scaling {rtt_scaling}, RTT {rtt_ms} ms, Δ = {delta_s} s: α {} vs {expect}",
                    cc.alpha()
                );
            }
        }
    }

    /// cwnd += α/cwnd per ACK: over n ACKs from W₀ the window reaches
    /// √(W₀² + 2αn), about α per RTT for a cwnd-limited sender (n = W₀ ≫ α).
    /// α(Δ) = 22 at Δ = 3 s.
    #[test]
    fn window_grows_by_alpha_per_rtt() {
        let mut cc = Htcp::new(no_switches(), MSS);
        let mut st = ca_state(2000);
        feed(&mut cc, &mut st, &ack(0, 100 * MS));
        st.ssthresh_bytes = cc.ssthresh_on_loss(&st, CongestionEvent::FastRetransmit, st.cwnd_bytes, 0);
        st.cwnd_bytes = st.ssthresh_bytes;
        // One round of ACKs (one per segment of the window) near Δ = 3 s,
        // over 1 ms so that α stays within 0.03 of α(3 s) = 22.
        let t0 = 3 * S;
        let before = st.cwnd_bytes;
        let acks = st.cwnd_bytes / MSS;
        for i in 0..acks {
            feed(&mut cc, &mut st, &ack(t0 + i * MS / acks, 100 * MS));
        }
        let grown = (st.cwnd_bytes - before) as f64 / MSS as f64;
        let w0 = before as f64 / MSS as f64;
        let expect = (w0 * w0 + 2.0 * 22.0 * acks as f64).sqrt() - w0;
        assert!((expect - 21.76).abs() < 0.01);
        // cong_avoid_ai adds whole segments: within one of the model.
        assert!(
            (grown - expect).abs() <= 1.0,
            "grew {grown} segments in one RTT, model {expect}"
        );
    }

    /// β = minRTT/maxRTT clamped to [0.5, 0.8], from the second event on.
    #[test]
    fn beta_is_rtt_ratio_clamped() {
        for (max_rtt_ms, expect) in [(150, 100.0 / 150.0), (110, 0.8), (300, 0.5), (125, 0.8)] {
            let mut cc = Htcp::new(no_switches(), MSS);
            let mut st = ca_state(100);
            let mut now = 0;
            feed(&mut cc, &mut st, &ack(now, 100 * MS));
            // First event: β = 0.5 whatever the RTTs.
            let ss = cc.ssthresh_on_loss(&st, CongestionEvent::FastRetransmit, st.cwnd_bytes, now);
            assert_eq!(cc.beta(), 0.5);
            assert_eq!(ss, 50 * MSS);
            // The RTT climbs in 10 ms steps (maxRTT follows steps ≤ 20 ms).
            let mut rtt = 100;
            while rtt < max_rtt_ms {
                rtt = (rtt + 10).min(max_rtt_ms);
                now += rtt * MS;
                feed(&mut cc, &mut st, &ack(now, rtt * MS));
            }
            assert_eq!(cc.max_rtt_ns(), max_rtt_ms * MS);
            let ss = cc.ssthresh_on_loss(&st, CongestionEvent::FastRetransmit, st.cwnd_bytes, now);
            assert!(
                (cc.beta() - expect).abs() < 1e-12,
                "maxRTT {max_rtt_ms}: β {}",
                cc.beta()
            );
            assert_eq!(ss, (st.cwnd_bytes as f64 * expect) as u64);
            // maxRTT fades 5% toward minRTT after the event.
            assert_eq!(cc.max_rtt_ns(), 100 * MS + (max_rtt_ms - 100) * MS * 95 / 100);
            // And α restarts at 2(1 − β) (Δ = 0).
            feed(&mut cc, &mut st, &ack(now + MS, 100 * MS));
            assert!((cc.alpha() - 2.0 * (1.0 - expect)).abs() < 1e-12);
        }
    }

    #[test]
    fn max_rtt_ignores_jumps_above_20_ms() {
        let mut cc = Htcp::new(no_switches(), MSS);
        let mut st = ca_state(10);
        feed(&mut cc, &mut st, &ack(0, 100 * MS));
        feed(&mut cc, &mut st, &ack(MS, 150 * MS));
        assert_eq!(cc.max_rtt_ns(), 100 * MS);
        feed(&mut cc, &mut st, &ack(2 * MS, 119 * MS));
        assert_eq!(cc.max_rtt_ns(), 119 * MS);
    }

    /// One round: `acks` ACKs of one segment spread over `rtt_ns`.
    fn round(cc: &mut Htcp, st: &mut CcState, t0: u64, rtt_ns: u64, acks: u64) -> u64 {
        for i in 0..acks {
            feed(cc, st, &ack(t0 + i * rtt_ns / acks, rtt_ns));
        }
        t0 + rtt_ns
    }

    /// With the bandwidth switch, a change of more than 20% in the maximum
    /// throughput between events resets β to 0.5 (and the next event too,
    /// Linux `modeswitch`); a steady one lets β adapt. As in Linux the first
    /// event (no previous maximum) counts as a change, so β first adapts at
    /// the third event.
    #[test]
    fn bandwidth_switch_resets_beta_on_throughput_change() {
        // One congestion cycle: 10 rounds of `acks` segments each, the RTT
        // rising 100 → 127 ms; then a congestion event and its recovery.
        fn cycle(cc: &mut Htcp, st: &mut CcState, mut t: u64, acks: u64) -> u64 {
            for k in 0..10 {
                st.cwnd_bytes = acks * MSS;
                t = round(cc, st, t, 100 * MS + k * 3 * MS, acks);
            }
            assert!(cc.max_throughput_bps() > 0.0);
            cc.ssthresh_on_loss(st, CongestionEvent::FastRetransmit, st.cwnd_bytes, t);
            cc.on_recovery_exit(st, t);
            t
        }
        let run = |third_cycle_acks: u64| {
            let mut cc = Htcp::new(
                HtcpParams {
                    rtt_scaling: false,
                    bandwidth_switch: true,
                },
                MSS,
            );
            let mut st = ca_state(50);
            let t = cycle(&mut cc, &mut st, 0, 50);
            assert_eq!(cc.beta(), 0.5, "first event");
            let t = cycle(&mut cc, &mut st, t, 50);
            assert_eq!(cc.beta(), 0.5, "second event (modeswitch)");
            cycle(&mut cc, &mut st, t, third_cycle_acks);
            cc.beta()
        };
        // Steady: β = 100 ms / 127 ms.
        let beta_steady = run(50);
        assert!((beta_steady - 100.0 / 127.0).abs() < 1e-9, "β {beta_steady}");
        // 30 instead of 50 segments per RTT: a 40% drop.
        assert_eq!(run(30), 0.5);
    }

    #[test]
    fn slow_start_and_app_limited() {
        let mut cc = Htcp::new(HtcpParams::default(), MSS);
        let mut st = CcState {
            cwnd_bytes: 10 * MSS,
            ssthresh_bytes: u64::MAX,
            mss_bytes: MSS,
        };
        for i in 0..10 {
            feed(&mut cc, &mut st, &ack(i * MS, 100 * MS));
        }
        assert_eq!(st.cwnd_bytes, 20 * MSS);
        let mut a = ack(20 * MS, 100 * MS);
        a.app_limited = true;
        feed(&mut cc, &mut st, &a);
        assert_eq!(st.cwnd_bytes, 20 * MSS);
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let mut cc = Htcp::new(HtcpParams::default(), 0);
        let mut st = CcState {
            cwnd_bytes: 0,
            ssthresh_bytes: 0,
            mss_bytes: 0,
        };
        feed(&mut cc, &mut st, &ack(0, 0));
        feed(&mut cc, &mut st, &ack(u64::MAX, u64::MAX));
        let _ = cc.ssthresh_on_loss(&st, CongestionEvent::Timeout, 0, 0);
        feed(&mut cc, &mut st, &ack(5, 1));
        let mut st = CcState {
            cwnd_bytes: u64::MAX,
            ssthresh_bytes: 0,
            mss_bytes: u64::MAX,
        };
        feed(&mut cc, &mut st, &ack(u64::MAX, u64::MAX));
        let _ = cc.ssthresh_on_loss(&st, CongestionEvent::FastRetransmit, u64::MAX, u64::MAX);
        cc.on_recovery_exit(&mut st, 0);
        cc.on_idle_restart(&mut st, 0);
        feed(&mut cc, &mut st, &ack(1, 1));
    }
}
