//! MPTCP Linked Increases Algorithm, LIA (RFC 6356): each subflow runs
//! slow start, fast recovery and RTO as TCP does and halves its window on
//! loss, but its congestion-avoidance increase is coupled to the other
//! subflows so that the connection (1) does at least as well as a single
//! TCP on its best path, (2) takes no more than a single TCP would from any
//! shared bottleneck, and (3) moves traffic off congested paths.
//!
//! RFC 6356 §3, in bytes: for each ACK of `acked` bytes on subflow i in
//! congestion avoidance,
//!
//! ```text
//! cwnd_i += min(alpha · acked · MSS_i / cwnd_total, acked · MSS_i / cwnd_i)
//! alpha   = cwnd_total · max_i(cwnd_i / rtt_i²) / (Σ_i cwnd_i / rtt_i)²
//! ```
//!
//! The increase is written as the standard additive increase
//! [`cong_avoid_ai`] of one MSS per `w` acknowledged bytes, with
//! `w = max(cwnd_total / alpha, cwnd_i)` — the same form as Linux's
//! `mptcp_ccc_cong_avoid` (`snd_cwnd_cnt` against the larger of the two
//! denominators), which avoids rounding a fraction of a byte per ACK.
//! Without a coupling view (a single-path connection) `alpha = 1` and
//! `cwnd_total = cwnd_i`, so LIA is NewReno.
//!
//! Alpha is refreshed as Linux's LIA does (the out-of-tree multipath-tcp
//! kernel, `net/mptcp/mptcp_coupled.c`): `mptcp_ccc_recalc_alpha` runs
//! after every ACK in slow start, after each congestion-avoidance increase
//! of one MSS (`snd_cwnd++`), on `CA_EVENT_LOSS` and, through
//! `forced_update`, at the first ACK after any change of congestion state;
//! between those, an ACK in congestion avoidance only compares
//! `snd_cwnd_cnt` against the kept `max(cwnd_total / alpha, cwnd_i)`. Here
//! the controller asks for [`CouplingRefresh::OnWindowChange`]: the
//! connection gives it a fresh view before the first ACK after any
//! subflow's window (cwnd, or ssthresh in fast recovery), congestion state
//! or establishment changed, and the controller works `cwnd_total / alpha`
//! out of it at once and keeps only that. The reason is cost per ACK: a
//! view of every subflow built before each ACK, and alpha worked out from
//! it, cost MPTCP about 36 instructions per packet-hop (of about 1045,
//! `benches/mptcp_speed.py --callgrind`) for a value that moves with the
//! windows; between window changes only the RTT estimates move it, and
//! Linux ignores that too. One difference: Linux keeps alpha at the
//! connection (the meta socket), so one subflow's recalculation serves the
//! others at once; here each subflow's controller works it out from the
//! view it is given at its own next ACK.

use super::{
    cong_avoid_ai, halve_flight, slow_start, AckSample, CcState, CongestionControl, CongestionEvent,
    ControllerParams, CouplingRefresh, Knob, SubflowCoupling,
};
use crate::knobs::Knobs;
use crate::TimeNs;

/// LIA has no constants: RFC 6356 fixes the increase and the decrease.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiaParams;

impl Knobs for LiaParams {
    const KNOBS: &'static [Knob] = &[];

    fn set(&mut self, _key: &str, _value: f64) -> Option<()> {
        None
    }

    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

impl ControllerParams for LiaParams {
    fn build(&self, _mss_bytes: u64) -> Box<dyn CongestionControl> {
        Box::new(Lia::new())
    }
}

/// RFC 6356 §3's alpha for a connection's subflows: `cwnd_total ·
/// max_i(cwnd_i / rtt_i²) / (Σ_i cwnd_i / rtt_i)²`. `None` when no subflow
/// has a window and an RTT (nothing to couple to).
pub fn lia_alpha(subflows: &[SubflowCoupling]) -> Option<f64> {
    lia_alpha_and_total(subflows).0
}

/// [`lia_alpha`] and Σ cwnd_i (bytes) over the subflows with an RTT.
fn lia_alpha_and_total(subflows: &[SubflowCoupling]) -> (Option<f64>, u64) {
    let mut total = 0.0;
    let mut best = 0.0f64;
    let mut sum_rate = 0.0;
    let mut total_bytes = 0u64;
    for s in subflows.iter().filter(|s| s.srtt_ns > 0) {
        total_bytes += s.cwnd_bytes;
        if s.cwnd_bytes == 0 {
            continue;
        }
        let w = s.cwnd_bytes as f64;
        let rtt = s.srtt_ns as f64;
        total += w;
        best = best.max(w / (rtt * rtt));
        sum_rate += w / rtt;
    }
    let alpha = (sum_rate > 0.0).then(|| total * best / (sum_rate * sum_rate));
    (alpha, total_bytes)
}

/// The LIA controller of one subflow.
#[derive(Clone, Debug, PartialEq)]
pub struct Lia {
    /// Acknowledged bytes not yet turned into growth (as NewReno's).
    credit_bytes: u64,
    /// Alpha from the latest coupling view (1 before any, or when the view
    /// had nothing to couple to).
    alpha: f64,
    /// `⌈cwnd_total / alpha⌉` from the latest coupling view, bytes: the
    /// coupled term of [`Lia::bytes_per_mss_increase`]; 0 before any view
    /// or when it had nothing to couple to (the subflow then runs as
    /// NewReno).
    coupled_bytes: u64,
}

impl Default for Lia {
    fn default() -> Self {
        Self::new()
    }
}

impl Lia {
    pub fn new() -> Self {
        Lia {
            credit_bytes: 0,
            alpha: 1.0,
            coupled_bytes: 0,
        }
    }

    /// Alpha from the latest coupling view (1 before any).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Acknowledged bytes that earn one MSS of growth for a subflow with
    /// window `cwnd_bytes`: `max(cwnd_total / alpha, cwnd_i)` (RFC 6356 §3's
    /// min of the two increases, inverted), with alpha and cwnd_total from
    /// the latest coupling view.
    pub fn bytes_per_mss_increase(&self, cwnd_bytes: u64) -> u64 {
        self.coupled_bytes.max(cwnd_bytes)
    }
}

/// `⌈cwnd_total / alpha⌉` in bytes, 0 when there is nothing to couple to.
fn coupled_bytes(alpha: Option<f64>, cwnd_total_bytes: u64) -> u64 {
    let Some(alpha) = alpha else {
        return 0;
    };
    if cwnd_total_bytes == 0 || alpha.is_nan() || alpha <= 0.0 {
        return 0;
    }
    let coupled = cwnd_total_bytes as f64 / alpha;
    if coupled >= u64::MAX as f64 {
        u64::MAX
    } else {
        // ⌈coupled⌉ without a call to libm's `ceil`: the quotient is
        // positive and below 2^64, where truncation is exact, so the
        // ceiling is the truncation plus one if anything was cut.
        let whole = coupled as u64;
        whole + u64::from((whole as f64) < coupled)
    }
}

impl CongestionControl for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }

    fn coupling_refresh(&self) -> CouplingRefresh {
        // Linux `mptcp_ccc_recalc_alpha`'s points (module comment).
        CouplingRefresh::OnWindowChange
    }

    fn on_coupling(&mut self, subflows: &[SubflowCoupling], _me: usize) {
        let (alpha, cwnd_total_bytes) = lia_alpha_and_total(subflows);
        self.coupled_bytes = coupled_bytes(alpha, cwnd_total_bytes);
        self.alpha = if self.coupled_bytes == 0 {
            1.0
        } else {
            alpha.unwrap_or(1.0)
        };
    }

    fn on_ack(&mut self, state: &mut CcState, ack: &AckSample) {
        // RFC 7661: do not grow a window the application is not using.
        if ack.app_limited || ack.acked_bytes == 0 {
            return;
        }
        let mut acked_bytes = ack.acked_bytes;
        if state.in_slow_start() {
            // RFC 6356 §3: slow start is not coupled.
            acked_bytes = slow_start(state, acked_bytes);
            if acked_bytes == 0 || state.in_slow_start() {
                return;
            }
        }
        let w_bytes = self.bytes_per_mss_increase(state.cwnd_bytes);
        cong_avoid_ai(state, &mut self.credit_bytes, w_bytes, acked_bytes);
    }

    fn ssthresh_on_loss(
        &mut self,
        state: &CcState,
        _event: CongestionEvent,
        flight_bytes: u64,
        _now_ns: TimeNs,
    ) -> u64 {
        // RFC 6356 §3: "cwnd_i is halved", as in TCP (RFC 5681 eq. (4)).
        self.credit_bytes = 0;
        halve_flight(state, flight_bytes)
    }

    fn on_idle_restart(&mut self, _state: &mut CcState, _now_ns: TimeNs) {
        self.credit_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NS_PER_MS;

    const MSS: u64 = 1000;

    fn sub(cwnd_segments: u64, rtt_ms: u64) -> SubflowCoupling {
        SubflowCoupling {
            cwnd_bytes: cwnd_segments * MSS,
            srtt_ns: rtt_ms * NS_PER_MS,
            loss_interval_bytes: 0,
        }
    }

    #[test]
    fn alpha_matches_a_hand_computation() {
        // cwnd 10 and 20 segments, RTT 10 and 40 ms. In segments and ms:
        // total = 30; max(10/100, 20/1600) = 0.1; Σ w/rtt = 1 + 0.5 = 1.5;
        // alpha = 30 · 0.1 / 1.5² = 4/3. Units cancel, so bytes and ns give
        // the same number.
        let alpha = lia_alpha(&[sub(10, 10), sub(20, 40)]).unwrap();
        assert!((alpha - 4.0 / 3.0).abs() < 1e-12, "{alpha}");
        // Equal paths: alpha = 2w·(w/r²)/(2w/r)² = 1/2.
        let alpha = lia_alpha(&[sub(10, 20), sub(10, 20)]).unwrap();
        assert!((alpha - 0.5).abs() < 1e-12, "{alpha}");
        // One path: alpha = 1 (TCP).
        assert!((lia_alpha(&[sub(17, 33)]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(lia_alpha(&[]), None);
    }

    #[test]
    fn increase_is_the_smaller_of_coupled_and_tcp() {
        // Subflow 0 of the 4/3 example: alpha·MSS/total = (4/3)/30 = 2/45
        // MSS per acked MSS, less than TCP's 1/10: one MSS of growth per
        // 22.5 MSS acknowledged.
        let mut cc = Lia::new();
        cc.on_coupling(&[sub(10, 10), sub(20, 40)], 0);
        assert_eq!(cc.bytes_per_mss_increase(10 * MSS), 22_500);
        let mut st = CcState {
            cwnd_bytes: 10 * MSS,
            ssthresh_bytes: 5 * MSS,
            mss_bytes: MSS,
        };
        let ack = AckSample {
            acked_bytes: 500,
            ..Default::default()
        };
        for _ in 0..44 {
            cc.on_ack(&mut st, &ack);
        }
        assert_eq!(st.cwnd_bytes, 10 * MSS, "22 000 bytes acked: no growth yet");
        cc.on_ack(&mut st, &ack);
        assert_eq!(st.cwnd_bytes, 11 * MSS, "22 500 bytes acked: one MSS");
        // Subflow 1 (cwnd 20, RTT 40): TCP's 1/20 per MSS is larger than
        // alpha's 2/45, so the coupled term binds there too: w = 22.5 MSS.
        cc.on_coupling(&[sub(10, 10), sub(20, 40)], 1);
        assert_eq!(cc.bytes_per_mss_increase(20 * MSS), 22_500);
        // A subflow whose own window exceeds total/alpha grows as TCP: paths
        // of 1 segment / 1 ms and 100 segments / 100 ms give Σ w/r = 2 per
        // ms, max w/r² = 1, total/alpha = 2²/1 = 4 segments. The large
        // window (100 > 4) grows by TCP's 1/100; the small one by 1/4.
        let paths = [sub(1, 1), sub(100, 100)];
        assert!((lia_alpha(&paths).unwrap() - 25.25).abs() < 1e-9);
        cc.on_coupling(&paths, 1);
        assert_eq!(cc.bytes_per_mss_increase(100 * MSS), 100 * MSS);
        cc.on_coupling(&paths, 0);
        let w = cc.bytes_per_mss_increase(MSS);
        assert!((4 * MSS..=4 * MSS + 1).contains(&w), "{w}");
    }

    #[test]
    fn uncoupled_lia_is_newreno() {
        let mut lia = Lia::new();
        let mut reno = super::super::NewReno::new();
        let mut a = CcState {
            cwnd_bytes: 10 * MSS,
            ssthresh_bytes: 4 * MSS,
            mss_bytes: MSS,
        };
        let mut b = a;
        let ack = AckSample {
            acked_bytes: 700,
            ..Default::default()
        };
        for _ in 0..500 {
            lia.on_ack(&mut a, &ack);
            reno.on_ack(&mut b, &ack);
        }
        assert_eq!(a, b);
        assert_eq!(
            lia.ssthresh_on_loss(&a, CongestionEvent::FastRetransmit, 30 * MSS, 0),
            15 * MSS
        );
    }
}
