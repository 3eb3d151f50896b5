//! NewReno congestion control: the window arithmetic of RFC 5681 §3.1 that
//! RFC 6582 keeps unchanged. Fast retransmit / fast recovery (the NewReno
//! part proper, RFC 6582 §3.2) lives in the sender; this controller only grows
//! the window on ACKs and picks ssthresh after a congestion event.

use super::{
    cong_avoid_ai, halve_flight, knob_flag, slow_start, AckSample, CcState, CongestionControl,
    CongestionEvent, ControllerParams, Knob,
};
use crate::knobs::Knobs;
use crate::TimeNs;

/// NewReno's constants are RFC 5681's (ssthresh = FlightSize/2, one SMSS per
/// RTT); the one knob picks the form of the congestion-avoidance increase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NewRenoParams {
    /// RFC 5681 §3.1 eq. (3): cwnd += max(1, ⌊SMSS·SMSS/cwnd⌋) bytes per ACK
    /// of new data, whatever it acknowledges (ns-3 3.44
    /// `TcpNewReno::CongestionAvoidance`). Off (default): byte counting, the
    /// RECOMMENDED form (RFC 5681 §3.1, RFC 3465).
    pub per_ack_increase: bool,
}

impl Knobs for NewRenoParams {
    const KNOBS: &'static [Knob] = &[Knob {
        key: "per_ack_increase",
        about: "0 or 1; default 0 (byte counting; 1: cwnd += SMSS^2/cwnd per ACK, RFC 5681 eq. 3, as ns-3)",
    }];

    fn set(&mut self, key: &str, value: f64) -> Option<()> {
        match key {
            "per_ack_increase" => self.per_ack_increase = knob_flag(value)?,
            _ => return None,
        }
        Some(())
    }

    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

impl ControllerParams for NewRenoParams {
    fn build(&self, _mss_bytes: u64) -> Box<dyn CongestionControl> {
        Box::new(NewReno {
            per_ack_increase: self.per_ack_increase,
            ..NewReno::new()
        })
    }
}

/// NewReno (RFC 5681 / RFC 6582) window growth.
///
/// Congestion avoidance uses the byte-counting variant of RFC 5681 §3.1
/// (RFC 3465 §2.1, appropriate byte counting): newly acknowledged bytes
/// accumulate in `bytes_acked_ca`; whenever the counter reaches cwnd it is
/// reduced by cwnd and cwnd grows by one SMSS. This is exactly +1 SMSS per
/// cwnd's worth of ACKed data (one RTT when cwnd-limited), independent of
/// ACK size (delayed or stretch ACKs) and without the integer rounding loss of
/// `cwnd += SMSS*SMSS/cwnd`. At most one SMSS is added per ACK (the RFC's
/// rule); a remainder larger than cwnd is kept and spent on later ACKs, so
/// growth is delayed rather than lost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NewReno {
    /// RFC 5681 §3.1 `bytes_acked`: ACKed bytes not yet turned into growth.
    bytes_acked_ca: u64,
    /// [`NewRenoParams::per_ack_increase`].
    per_ack_increase: bool,
}

impl NewReno {
    pub fn new() -> Self {
        Self {
            bytes_acked_ca: 0,
            per_ack_increase: false,
        }
    }

    /// Bytes counted toward the next congestion-avoidance increment.
    pub fn bytes_acked_ca(&self) -> u64 {
        self.bytes_acked_ca
    }
}

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn on_ack(&mut self, state: &mut CcState, ack: &AckSample) {
        // RFC 7661: do not grow a window the application is not using.
        if ack.app_limited || ack.acked_bytes == 0 {
            return;
        }
        let mut acked_bytes = ack.acked_bytes;
        if state.in_slow_start() {
            // RFC 5681 §3.1 slow start, cwnd += min(N, SMSS); what is left
            // once cwnd reaches ssthresh is counted in congestion avoidance.
            acked_bytes = slow_start(state, acked_bytes);
            if acked_bytes == 0 || state.in_slow_start() {
                return;
            }
        }
        if self.per_ack_increase {
            // RFC 5681 §3.1 eq. (3), once per ACK (ns-3 TcpNewReno).
            let mss = state.mss_bytes.max(1);
            let adder = (mss * mss / state.cwnd_bytes.max(1)).max(1);
            state.cwnd_bytes = state.cwnd_bytes.saturating_add(adder);
            return;
        }
        // RFC 5681 §3.1 congestion avoidance, byte-counting variant: one
        // SMSS per cwnd of ACKed bytes.
        let w_bytes = state.cwnd_bytes;
        cong_avoid_ai(state, &mut self.bytes_acked_ca, w_bytes, acked_bytes);
    }

    fn ssthresh_on_loss(
        &mut self,
        state: &CcState,
        _event: CongestionEvent,
        flight_bytes: u64,
        _now_ns: TimeNs,
    ) -> u64 {
        // RFC 5681 §3.1 eq. (4) and §3.2 step 2: the same rule after a
        // timeout and after three duplicate ACKs.
        self.bytes_acked_ca = 0;
        halve_flight(state, flight_bytes)
    }

    fn on_idle_restart(&mut self, _state: &mut CcState, _now_ns: TimeNs) {
        // The window was cut to the restart window (RFC 5681 §4.1); credit
        // accumulated against the old, larger window no longer applies.
        self.bytes_acked_ca = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    fn state(cwnd_segments: u64, ssthresh_bytes: u64) -> CcState {
        CcState {
            cwnd_bytes: cwnd_segments * MSS,
            ssthresh_bytes,
            mss_bytes: MSS,
        }
    }

    fn ack(acked_bytes: u64) -> AckSample {
        AckSample {
            acked_bytes,
            srtt_ns: 100_000_000,
            ..AckSample::default()
        }
    }

    /// One RTT of a cwnd-limited sender: the window that was open at the
    /// start of the round comes back as ACKs of `ack_bytes` each.
    fn one_round(cc: &mut NewReno, st: &mut CcState, ack_bytes: u64) {
        let mut left = st.cwnd_bytes;
        while left > 0 {
            let a = ack_bytes.min(left);
            cc.on_ack(st, &ack(a));
            left -= a;
        }
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        let mut cc = NewReno::new();
        let mut st = state(10, u64::MAX);
        for round in 1..=6 {
            one_round(&mut cc, &mut st, MSS);
            assert_eq!(st.cwnd_bytes, (10 * MSS) << round, "round {round}");
        }
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_spends_rest_in_ca() {
        let mut cc = NewReno::new();
        let mut st = state(10, 15 * MSS);
        one_round(&mut cc, &mut st, MSS);
        // 5 ACKs take cwnd to ssthresh, the other 5 MSS are counted in CA.
        assert_eq!(st.cwnd_bytes, 15 * MSS);
        assert_eq!(cc.bytes_acked_ca(), 5 * MSS);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_rtt() {
        // One ACK per segment, delayed ACKs (2 MSS), and small ACKs: the
        // byte counter gives exactly +1 MSS per window of ACKed data.
        for ack_bytes in [MSS, 2 * MSS, 500] {
            let mut cc = NewReno::new();
            let mut st = state(20, 20 * MSS);
            for round in 1..=30 {
                one_round(&mut cc, &mut st, ack_bytes);
                assert_eq!(
                    st.cwnd_bytes,
                    (20 + round) * MSS,
                    "ack {ack_bytes} B, round {round}"
                );
            }
        }
    }

    /// `per_ack_increase`: SMSS²/cwnd per ACK, so a round of one ACK per
    /// segment adds a little less than one SMSS (cwnd grows within the
    /// round), and a delayed ACK counts as one ACK.
    #[test]
    fn per_ack_increase_is_rfc5681_equation_3() {
        let params = NewRenoParams {
            per_ack_increase: true,
        };
        let mut cc = NewReno {
            per_ack_increase: params.per_ack_increase,
            ..NewReno::new()
        };
        let mut st = state(3, 3 * MSS);
        cc.on_ack(&mut st, &ack(MSS));
        assert_eq!(st.cwnd_bytes, 3 * MSS + MSS / 3);
        let mut st = state(3, 3 * MSS);
        one_round(&mut cc, &mut st, MSS);
        let grown = st.cwnd_bytes - 3 * MSS;
        assert!(grown < MSS && grown > MSS * 85 / 100, "{grown}");
        let mut st = state(20, 20 * MSS);
        one_round(&mut cc, &mut st, 2 * MSS);
        let grown = st.cwnd_bytes - 20 * MSS;
        assert!(grown < MSS / 2 + 10 && grown > MSS * 45 / 100, "{grown}");
        assert_eq!(cc.bytes_acked_ca(), 0);
    }

    #[test]
    fn ssthresh_is_half_the_flight_with_floor_of_two_segments() {
        let mut cc = NewReno::new();
        let st = state(20, u64::MAX);
        for event in [CongestionEvent::FastRetransmit, CongestionEvent::Timeout] {
            assert_eq!(cc.ssthresh_on_loss(&st, event, 20 * MSS, 0), 10 * MSS);
            assert_eq!(cc.ssthresh_on_loss(&st, event, 3 * MSS, 0), 2 * MSS);
            assert_eq!(cc.ssthresh_on_loss(&st, event, 0, 0), 2 * MSS);
        }
    }

    #[test]
    fn loss_resets_byte_counter() {
        let mut cc = NewReno::new();
        let mut st = state(20, 20 * MSS);
        cc.on_ack(&mut st, &ack(5 * MSS));
        assert_eq!(cc.bytes_acked_ca(), 5 * MSS);
        cc.ssthresh_on_loss(&st, CongestionEvent::FastRetransmit, 20 * MSS, 0);
        assert_eq!(cc.bytes_acked_ca(), 0);
    }

    #[test]
    fn app_limited_acks_do_not_grow_the_window() {
        let mut cc = NewReno::new();
        for ssthresh_bytes in [u64::MAX, 10 * MSS] {
            let mut st = state(10, ssthresh_bytes);
            for _ in 0..100 {
                cc.on_ack(
                    &mut st,
                    &AckSample {
                        app_limited: true,
                        ..ack(MSS)
                    },
                );
            }
            assert_eq!(st.cwnd_bytes, 10 * MSS);
        }
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let mut cc = NewReno::new();
        let mut st = CcState {
            cwnd_bytes: 0,
            ssthresh_bytes: 0,
            mss_bytes: 0,
        };
        cc.on_ack(&mut st, &ack(u64::MAX));
        cc.on_ack(&mut st, &ack(0));
        let mut st = CcState {
            cwnd_bytes: u64::MAX,
            ssthresh_bytes: 0,
            mss_bytes: u64::MAX,
        };
        cc.on_ack(&mut st, &ack(u64::MAX));
        cc.on_ack(&mut st, &ack(u64::MAX));
        let _ = cc.ssthresh_on_loss(&st, CongestionEvent::Timeout, u64::MAX, 0);
    }
}
