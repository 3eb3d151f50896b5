//! MPTCP Opportunistic Linked Increases Algorithm, OLIA (Khalili, Gast,
//! Popovic, Le Boudec, "MPTCP is not Pareto-optimal", CoNEXT 2012 / IEEE
//! ToN 2013; Linux out-of-tree `mptcp_olia.c`). Like LIA it keeps TCP's
//! slow start, recovery, RTO and halving on loss; its congestion-avoidance
//! increase for each acknowledged segment on path r is
//!
//! ```text
//! w_r += (w_r / rtt_r²) / (Σ_p w_p / rtt_p)²  +  ε_r / w_r      (segments)
//! ```
//!
//! The first term is the Kelly–Voice optimal coupling; ε_r moves window
//! from the paths with the largest windows (set M) to the paths that look
//! best but do not have the largest windows (B \ M), where the best paths
//! maximise ℓ_p / rtt_p² (ℓ_p: bytes between losses, a TCP's rate ∝
//! √ℓ / rtt). With n paths: ε_r = 1/(n·|B\M|) on B \ M, −1/(n·|M|) on M
//! when B \ M is not empty, 0 otherwise.
//!
//! The window moves in whole segments: the increase accumulates in a
//! fractional counter (Linux `mptcp_snd_cwnd_cnt`), and cwnd gains or loses
//! one MSS when it passes +1 or −1. Without a coupling view OLIA is NewReno
//! (one path: ε = 0 and the first term is 1/w).

use super::{
    halve_flight, slow_start, AckSample, CcState, CongestionControl, CongestionEvent, ControllerParams,
    CouplingRefresh, Knob, SubflowCoupling,
};
use crate::knobs::Knobs;
use crate::TimeNs;

/// OLIA has no constants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OliaParams;

impl Knobs for OliaParams {
    const KNOBS: &'static [Knob] = &[];

    fn set(&mut self, _key: &str, _value: f64) -> Option<()> {
        None
    }

    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

impl ControllerParams for OliaParams {
    fn build(&self, _mss_bytes: u64) -> Box<dyn CongestionControl> {
        Box::new(Olia::new())
    }
}

/// ε_r for every subflow of the view (Linux `mptcp_get_epsilon`). Subflows
/// without an RTT are not paths yet and get 0.
pub fn olia_epsilons(subflows: &[SubflowCoupling]) -> Vec<f64> {
    let usable = |s: &SubflowCoupling| s.srtt_ns > 0;
    let quality = |s: &SubflowCoupling| {
        let rtt = s.srtt_ns as f64;
        s.loss_interval_bytes as f64 / (rtt * rtt)
    };
    let n = subflows.iter().filter(|s| usable(s)).count();
    let max_cwnd = subflows
        .iter()
        .filter(|s| usable(s))
        .map(|s| s.cwnd_bytes)
        .max()
        .unwrap_or(0);
    let best = subflows
        .iter()
        .filter(|s| usable(s))
        .map(quality)
        .fold(f64::NEG_INFINITY, f64::max);
    let in_m = |s: &SubflowCoupling| usable(s) && s.cwnd_bytes == max_cwnd;
    let in_b_not_m = |s: &SubflowCoupling| usable(s) && !in_m(s) && quality(s) == best;
    let m = subflows.iter().filter(|s| in_m(s)).count();
    let b_not_m = subflows.iter().filter(|s| in_b_not_m(s)).count();
    subflows
        .iter()
        .map(|s| {
            if b_not_m == 0 {
                0.0
            } else if in_b_not_m(s) {
                1.0 / (n * b_not_m) as f64
            } else if in_m(s) {
                -1.0 / (n * m) as f64
            } else {
                0.0
            }
        })
        .collect()
}

/// The OLIA controller of one subflow.
#[derive(Clone, Debug, PartialEq)]
pub struct Olia {
    /// Fractional window change in segments not yet applied.
    cnt_segments: f64,
    /// From the latest coupling view: ε_r, and (Σ_p w_p / rtt_p)² with
    /// windows in segments and RTTs in seconds; `coupled` false before any.
    epsilon: f64,
    sum_rate_sq: f64,
    srtt_s: f64,
    coupled: bool,
}

impl Default for Olia {
    fn default() -> Self {
        Self::new()
    }
}

impl Olia {
    pub fn new() -> Self {
        Olia {
            cnt_segments: 0.0,
            epsilon: 0.0,
            sum_rate_sq: 0.0,
            srtt_s: 0.0,
            coupled: false,
        }
    }

    /// ε_r from the latest coupling view.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The window change, in segments, per acknowledged segment for a
    /// window of `cwnd_bytes`: `(w/rtt²)/(Σ_p w_p/rtt_p)² + ε/w` with
    /// windows in segments. The view keeps windows in bytes, and the
    /// coupled term in segments is MSS · (W/rtt²)/(Σ W_p/rtt_p)² with W in
    /// bytes (all subflows of a connection share the MSS in this model).
    pub fn increase_per_segment(&self, cwnd_bytes: u64, mss_bytes: u64) -> f64 {
        let mss = mss_bytes.max(1) as f64;
        let w_segments = (cwnd_bytes as f64 / mss).max(1.0);
        let unusable = |x: f64| x.is_nan() || x <= 0.0;
        if !self.coupled || unusable(self.sum_rate_sq) || unusable(self.srtt_s) {
            return 1.0 / w_segments;
        }
        let coupled = (cwnd_bytes as f64 / (self.srtt_s * self.srtt_s)) / self.sum_rate_sq * mss;
        coupled + self.epsilon / w_segments
    }
}

impl CongestionControl for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }

    fn coupling_refresh(&self) -> CouplingRefresh {
        // Linux `mptcp_olia_cong_avoid` reads every path per ACK.
        CouplingRefresh::EveryAck
    }

    fn on_coupling(&mut self, subflows: &[SubflowCoupling], me: usize) {
        let Some(mine) = subflows.get(me) else {
            self.coupled = false;
            return;
        };
        if mine.srtt_ns == 0 {
            self.coupled = false;
            return;
        }
        // Σ_p W_p / rtt_p in bytes per second.
        let sum: f64 = subflows
            .iter()
            .filter(|s| s.srtt_ns > 0)
            .map(|s| s.cwnd_bytes as f64 / (s.srtt_ns as f64 * 1e-9))
            .sum();
        self.sum_rate_sq = sum * sum;
        self.srtt_s = mine.srtt_ns as f64 * 1e-9;
        self.epsilon = olia_epsilons(subflows)[me];
        self.coupled = true;
    }

    fn on_ack(&mut self, state: &mut CcState, ack: &AckSample) {
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
        let mss = state.mss_bytes.max(1) as f64;
        let per_segment = self.increase_per_segment(state.cwnd_bytes, state.mss_bytes);
        self.cnt_segments += per_segment * acked_bytes as f64 / mss;
        if self.cnt_segments >= 1.0 {
            state.cwnd_bytes = state.cwnd_bytes.saturating_add(state.mss_bytes);
            self.cnt_segments -= 1.0;
        } else if self.cnt_segments <= -1.0 {
            state.cwnd_bytes = state
                .cwnd_bytes
                .saturating_sub(state.mss_bytes)
                .max(state.mss_bytes);
            self.cnt_segments += 1.0;
        }
    }

    fn ssthresh_on_loss(
        &mut self,
        state: &CcState,
        _event: CongestionEvent,
        flight_bytes: u64,
        _now_ns: TimeNs,
    ) -> u64 {
        // Linux OLIA uses tcp_reno_ssthresh: halve.
        self.cnt_segments = 0.0;
        halve_flight(state, flight_bytes)
    }

    fn on_idle_restart(&mut self, _state: &mut CcState, _now_ns: TimeNs) {
        self.cnt_segments = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NS_PER_MS;

    const MSS: u64 = 1000;

    fn sub(cwnd_segments: u64, rtt_ms: u64, loss_interval_bytes: u64) -> SubflowCoupling {
        SubflowCoupling {
            cwnd_bytes: cwnd_segments * MSS,
            srtt_ns: rtt_ms * NS_PER_MS,
            loss_interval_bytes,
        }
    }

    fn ca_state(cwnd_segments: u64) -> CcState {
        CcState {
            cwnd_bytes: cwnd_segments * MSS,
            ssthresh_bytes: 2 * MSS,
            mss_bytes: MSS,
        }
    }

    /// Path A: 20 segments, 20 ms, ℓ = 100 kB; path B: 10 segments, 20 ms,
    /// ℓ = 300 kB. M = {A} (largest window), B's ℓ/rtt² is the best, so
    /// B \ M = {B}; n = 2: ε_A = −1/2, ε_B = +1/2. Σ w/rtt = 30/20 = 1.5
    /// per ms, squared 2.25. Per acknowledged segment:
    /// A: (20/400)/2.25 − 0.5/20 = 0.02222 − 0.025 = −1/360;
    /// B: (10/400)/2.25 + 0.5/10 = 0.01111 + 0.05 = 0.06111 (= 11/180).
    fn paths() -> [SubflowCoupling; 2] {
        [sub(20, 20, 100_000), sub(10, 20, 300_000)]
    }

    #[test]
    fn epsilon_sets_match_a_hand_computation() {
        assert_eq!(olia_epsilons(&paths()), vec![-0.5, 0.5]);
        // The best path already has the largest window: no transfer.
        assert_eq!(
            olia_epsilons(&[sub(20, 20, 300_000), sub(10, 20, 100_000)]),
            vec![0.0, 0.0]
        );
        // Three paths, two largest windows, one best path outside M.
        let e = olia_epsilons(&[sub(20, 20, 1), sub(20, 20, 1), sub(5, 10, 50)]);
        assert_eq!(e, vec![-1.0 / 6.0, -1.0 / 6.0, 1.0 / 3.0]);
    }

    #[test]
    fn increase_matches_a_hand_computation() {
        let mut b = Olia::new();
        b.on_coupling(&paths(), 1);
        let mut st = ca_state(10);
        let seg = AckSample {
            acked_bytes: MSS,
            ..Default::default()
        };
        // 11/180 per segment: 16 segments give 0.978, the 17th 1.039.
        for _ in 0..16 {
            b.on_ack(&mut st, &seg);
        }
        assert_eq!(st.cwnd_bytes, 10 * MSS);
        b.on_ack(&mut st, &seg);
        assert_eq!(st.cwnd_bytes, 11 * MSS);

        // A shrinks by one segment per 360 acknowledged (its window is
        // handed to B). Keep the view fixed: 359 ACKs leave the window.
        let mut a = Olia::new();
        a.on_coupling(&paths(), 0);
        let mut st = ca_state(20);
        for _ in 0..359 {
            a.on_ack(&mut st, &seg);
        }
        assert_eq!(st.cwnd_bytes, 20 * MSS);
        a.on_ack(&mut st, &seg);
        a.on_ack(&mut st, &seg);
        assert_eq!(st.cwnd_bytes, 19 * MSS);
    }

    #[test]
    fn single_path_olia_is_reno_like() {
        // One path: the coupled term is (w/r²)/(w/r)² = 1/w, ε = 0.
        let mut cc = Olia::new();
        cc.on_coupling(&[sub(10, 30, 5_000)], 0);
        assert_eq!(cc.epsilon(), 0.0);
        let mut st = ca_state(10);
        let seg = AckSample {
            acked_bytes: MSS,
            ..Default::default()
        };
        for _ in 0..9 {
            cc.on_ack(&mut st, &seg);
        }
        assert_eq!(st.cwnd_bytes, 10 * MSS);
        cc.on_ack(&mut st, &seg);
        cc.on_ack(&mut st, &seg);
        assert_eq!(st.cwnd_bytes, 11 * MSS);
        assert!((Olia::new().increase_per_segment(10 * MSS, MSS) - 0.1).abs() < 1e-12);
    }
}
