//! BBR's rules one at a time, driven by hand-made rate samples: one sample
//! per round trip, each `delivered` segments over one RTT of 100 ms (so a
//! bw of `n` segments per round is `n`·10 segments/s, and BDP = `n`).

use super::*;

const MSS: u64 = 1000;
const RTT: u64 = 100 * NS_PER_MS;
/// Samples are this far apart: a little more than min_rtt, so each gain
/// phase that lasts "at least min_rtt" lasts exactly one sample.
const STEP: u64 = RTT + NS_PER_MS;

struct Drive {
    b: Bbr,
    st: CcState,
    now: u64,
    delivered: u64,
    lost: u64,
}

/// What a sample says beyond the defaults of [`Drive::round`].
#[derive(Clone, Copy)]
struct Round {
    segs: u64,
    in_flight: u64,
    prior_in_flight: u64,
    losses: u64,
    app_limited: bool,
    rtt_ns: u64,
    ca_state: CaState,
}

fn round(segs: u64) -> Round {
    Round {
        segs,
        in_flight: segs,
        prior_in_flight: segs,
        losses: 0,
        app_limited: false,
        rtt_ns: RTT,
        ca_state: CaState::Open,
    }
}

impl Drive {
    /// Established with a 100 ms handshake RTT and IW 10.
    fn new(seed: u64) -> Self {
        let mut b = Bbr::new(MSS);
        b.set_seed(seed);
        let st = CcState {
            cwnd_bytes: 10 * MSS,
            ssthresh_bytes: u64::MAX,
            mss_bytes: MSS,
        };
        let syn = AckSample {
            now_ns: RTT,
            rtt_ns: Some(RTT),
            srtt_ns: RTT,
            min_rtt_ns: RTT,
            ..Default::default()
        };
        b.on_rtt_sample(&st, &syn);
        Drive {
            b,
            st,
            now: RTT,
            delivered: 0,
            lost: 0,
        }
    }

    /// One ACK closing one round trip.
    fn ack(&mut self, r: Round) -> bool {
        self.now += STEP;
        let prior = self.delivered;
        self.delivered += r.segs;
        self.lost += r.losses;
        let rs = RateSample {
            now_ns: self.now,
            delivered_segs: r.segs,
            interval_ns: RTT,
            prior_delivered_segs: prior,
            acked_sacked_segs: r.segs,
            losses_segs: r.losses,
            is_app_limited: r.app_limited,
            rtt_ns: Some(r.rtt_ns),
            srtt_ns: RTT,
            prior_in_flight_segs: r.prior_in_flight,
            in_flight_segs: r.in_flight,
            conn_delivered_segs: self.delivered,
            conn_lost_segs: self.lost,
            delivered_ns: self.now,
            next_send_ns: 0,
            ca_state: r.ca_state,
        };
        self.b.on_rate_sample(&mut self.st, &rs)
    }

    fn cwnd_segs(&self) -> u64 {
        self.st.cwnd_bytes / MSS
    }

    /// Startup with bw doubling from 10 to 80, then 100 (+25 %), then
    /// flat at 100 until the pipe is full: in DRAIN (inflight held high).
    fn to_drain(seed: u64) -> Self {
        let mut d = Drive::new(seed);
        for segs in [10, 20, 40, 80, 100, 100, 100] {
            d.ack(round(segs));
            assert_eq!(d.b.mode(), BbrMode::Startup);
        }
        d.ack(Round {
            in_flight: 250,
            ..round(100)
        });
        assert_eq!(d.b.mode(), BbrMode::Drain);
        d
    }

    /// On into PROBE_BW at bw 100 segments per round.
    fn to_probe_bw(seed: u64) -> Self {
        let mut d = Drive::to_drain(seed);
        d.ack(round(100));
        assert_eq!(d.b.mode(), BbrMode::ProbeBw);
        d
    }
}

#[test]
fn startup_uses_the_high_gain_for_pacing_and_cwnd() {
    let mut d = Drive::new(1);
    d.ack(round(10));
    assert_eq!(d.b.mode(), BbrMode::Startup);
    assert_eq!(d.b.mode_name(), Some("startup"));
    // bbr_high_gain = 256·2885/1000 + 1 = 739 (2.885 = 2/ln 2).
    assert_eq!((d.b.pacing_gain(), d.b.cwnd_gain()), (739, 739));
}

#[test]
fn startup_keeps_the_initial_rate_until_the_bw_estimate_exceeds_it() {
    // Initial rate: high_gain · 10 segments / 100 ms (srtt) · 99 %.
    let d0 = Drive::new(1);
    let init = d0.b.pacing_rate_bytes_per_s();
    let expect = 10.0 * MSS as f64 / 0.1 * 739.0 / 256.0 * 0.99;
    assert!(
        (init as f64 - expect).abs() / expect < 0.001,
        "{init} vs {expect}"
    );
    let mut d = Drive::new(1);
    d.ack(round(2)); // 2 segments per round: far below the initial rate
    assert_eq!(d.b.pacing_rate_bytes_per_s(), init);
    d.ack(round(40));
    assert!(d.b.pacing_rate_bytes_per_s() > init);
}

#[test]
fn full_pipe_after_three_rounds_without_a_quarter_more_bw() {
    let mut d = Drive::new(1);
    // 30 % growth per round keeps STARTUP going (more than 25 %).
    let mut segs = 10.0f64;
    for _ in 0..12 {
        d.ack(round(segs as u64));
        segs *= 1.3;
        assert!(!d.b.full_bw_reached());
    }
    let flat = segs as u64;
    d.ack(round(flat));
    assert!(!d.b.full_bw_reached(), "bw grew 30 %: full_bw follows");
    // Then flat: rounds 1 and 2 without growth are not enough...
    d.ack(round(flat));
    assert!(!d.b.full_bw_reached(), "1 flat round");
    d.ack(round(flat));
    assert!(!d.b.full_bw_reached(), "2 flat rounds");
    // ...the third is.
    d.ack(round(flat));
    assert!(d.b.full_bw_reached(), "3 flat rounds");
}

#[test]
fn growth_under_a_quarter_counts_as_flat() {
    let mut d = Drive::new(1);
    d.ack(round(100));
    for (i, segs) in [110u64, 115, 120].into_iter().enumerate() {
        // Each under 5/4 of full_bw (100), the bw of the last growth.
        d.ack(round(segs));
        assert_eq!(d.b.full_bw_reached(), i == 2, "round {i}");
    }
}

#[test]
fn app_limited_rounds_neither_fill_the_pipe_nor_lower_bw() {
    let mut d = Drive::new(1);
    d.ack(round(100));
    let bw = d.b.bw_bytes_per_s();
    for _ in 0..15 {
        d.ack(Round {
            app_limited: true,
            ..round(50)
        });
    }
    assert!(!d.b.full_bw_reached());
    assert_eq!(d.b.bw_bytes_per_s(), bw, "app-limited samples never lower bw");
    // Samples that are not app-limited replace it once the 10-round
    // window has passed.
    for _ in 0..11 {
        d.ack(round(50));
    }
    assert!(d.b.bw_bytes_per_s() < bw);
}

#[test]
fn drain_uses_the_inverse_gain_and_leaves_at_bdp() {
    let mut d = Drive::to_drain(1);
    assert_eq!(d.b.mode_name(), Some("drain"));
    // bbr_drain_gain = 256·1000/2885 = 88; cwnd keeps the high gain.
    assert_eq!((d.b.pacing_gain(), d.b.cwnd_gain()), (88, 739));
    // ssthresh = bbr_inflight(bw, 1) = BDP 100 + 3 TSO bursts of 2 = 106.
    assert_eq!(d.st.ssthresh_bytes, 106 * MSS);
    // Inflight still above BDP + budget: stay.
    d.ack(Round {
        in_flight: 107,
        ..round(100)
    });
    assert_eq!(d.b.mode(), BbrMode::Drain);
    d.ack(Round {
        in_flight: 106,
        ..round(100)
    });
    assert_eq!(d.b.mode(), BbrMode::ProbeBw);
    assert_eq!(d.b.cwnd_gain(), 512);
}

#[test]
fn probe_bw_starts_at_a_seeded_random_phase_never_the_drain_phase() {
    let mut seen = [0u32; CYCLE_LEN];
    for seed in 0..200 {
        let d = Drive::to_probe_bw(seed);
        seen[d.b.cycle_idx()] += 1;
        // The same seed, the same phase.
        assert_eq!(Drive::to_probe_bw(seed).b.cycle_idx(), d.b.cycle_idx());
    }
    assert_eq!(seen[1], 0, "never the 3/4 phase: {seen:?}");
    for (idx, n) in seen.iter().enumerate() {
        assert!(idx == 1 || *n > 0, "phase {idx} never drawn: {seen:?}");
    }
}

#[test]
fn the_gain_cycle_is_five_quarters_three_quarters_then_six_times_one() {
    let mut d = Drive::to_probe_bw(3);
    // Inflight high enough for the 5/4 phase to end on time (≥ 5/4·BDP
    // + budget), not so low that the 3/4 phase ends early.
    let mut gains = Vec::new();
    for _ in 0..16 {
        d.ack(Round {
            prior_in_flight: 140,
            in_flight: 140,
            ..round(100)
        });
        gains.push(d.b.pacing_gain());
    }
    let start = gains.iter().position(|&g| g == 320).expect("a 5/4 phase");
    let cycle: Vec<u64> = gains[start..start + 8].to_vec();
    assert_eq!(cycle, vec![320, 192, 256, 256, 256, 256, 256, 256], "{gains:?}");
}

#[test]
fn the_probe_phase_lasts_until_inflight_reaches_five_quarters_bdp_or_a_loss() {
    let mut d = Drive::to_probe_bw(3);
    while d.b.pacing_gain() != 320 {
        d.ack(round(100));
    }
    // More than min_rtt passes, but inflight stays at BDP: keep probing.
    for _ in 0..3 {
        d.ack(round(100));
        assert_eq!(d.b.pacing_gain(), 320);
    }
    // A loss ends it.
    d.ack(Round {
        losses: 1,
        ..round(100)
    });
    assert_eq!(d.b.pacing_gain(), 192);
}

#[test]
fn the_drain_phase_ends_early_once_inflight_is_down_to_bdp() {
    let mut d = Drive::to_probe_bw(3);
    while d.b.pacing_gain() != 320 {
        d.ack(Round {
            prior_in_flight: 140,
            ..round(100)
        });
    }
    d.ack(Round {
        prior_in_flight: 140,
        ..round(100)
    });
    assert_eq!(d.b.pacing_gain(), 192);
    // Less than min_rtt later, inflight at BDP + budget: phase over.
    d.now -= STEP / 2;
    d.ack(Round {
        prior_in_flight: 106,
        ..round(100)
    });
    assert_eq!(d.b.pacing_gain(), 256);
}

#[test]
fn pacing_rate_is_gain_times_bw_less_one_percent() {
    let mut d = Drive::to_probe_bw(3);
    while d.b.pacing_gain() != 256 {
        d.ack(Round {
            prior_in_flight: 140,
            ..round(100)
        });
    }
    // bw = 100 segments / 100 ms = 1 000 000 B/s; at gain 1 less 1 %.
    let rate = d.b.pacing_rate_bytes_per_s() as f64;
    assert!((rate - 990_000.0).abs() < 100.0, "{rate}");
    while d.b.pacing_gain() != 320 {
        d.ack(Round {
            prior_in_flight: 140,
            ..round(100)
        });
    }
    let rate = d.b.pacing_rate_bytes_per_s() as f64;
    assert!((rate - 1_237_500.0).abs() < 100.0, "{rate}");
}

#[test]
fn cwnd_is_twice_bdp_plus_budget_and_aggregation_in_probe_bw() {
    let mut d = Drive::to_probe_bw(3);
    for _ in 0..20 {
        d.ack(Round {
            prior_in_flight: 140,
            ..round(100)
        });
    }
    while d.b.pacing_gain() != 256 {
        d.ack(Round {
            prior_in_flight: 140,
            ..round(100)
        });
    }
    // 2·BDP = 200, + 3·2 TSO segments, + extra_acked (ACKs arrive exactly
    // at bw here: none beyond the epoch's first ACK of 100 segments, capped
    // at 100 ms of bw = 100).
    let extra = d.b.extra_acked_max().min(100);
    assert_eq!(d.cwnd_segs(), 200 + 6 + extra);
    assert!(extra <= 100);
}

#[test]
fn recovery_conserves_packets_for_a_round_then_restores_cwnd() {
    let mut d = Drive::to_probe_bw(3);
    for _ in 0..4 {
        d.ack(round(100));
    }
    let before = d.cwnd_segs();
    // The sender enters fast recovery: ssthresh hook saves cwnd.
    let ss =
        d.b.ssthresh_on_loss(&d.st, CongestionEvent::FastRetransmit, 0, d.now);
    assert_eq!(ss, d.st.ssthresh_bytes, "BBR keeps ssthresh");
    d.ack(Round {
        segs: 5,
        in_flight: 50,
        prior_in_flight: 55,
        losses: 1,
        ca_state: CaState::Recovery,
        ..round(5)
    });
    assert_eq!(d.cwnd_segs(), 50 + 5, "cwnd = inflight + acked");
    d.ack(Round {
        segs: 5,
        in_flight: 52,
        prior_in_flight: 57,
        ca_state: CaState::Recovery,
        ..round(5)
    });
    assert!(d.cwnd_segs() >= 52 + 5);
    d.ack(round(100));
    // Restored to the cwnd before recovery, capped by the target.
    let target =
        d.b.quantization_budget(d.b.bdp(d.b.max_bw(), CWND_GAIN) + d.b.ack_aggregation_cwnd());
    assert_eq!(
        d.cwnd_segs(),
        before.min(target),
        "before {before}, target {target}"
    );
    assert!(d.cwnd_segs() > 200);
}

#[test]
fn probe_rtt_after_ten_seconds_without_a_lower_rtt() {
    let mut d = Drive::to_probe_bw(3);
    let entered_at = d.now;
    let cwnd_before;
    loop {
        let cwnd = d.cwnd_segs();
        d.ack(Round {
            rtt_ns: RTT + 10 * NS_PER_MS,
            prior_in_flight: 140,
            ..round(100)
        });
        if d.b.mode() == BbrMode::ProbeRtt {
            cwnd_before = cwnd;
            break;
        }
        assert!(d.now < entered_at + 11 * NS_PER_SEC, "no PROBE_RTT");
    }
    assert!(d.now > RTT + 10 * NS_PER_SEC, "entered at {}", d.now);
    assert_eq!(d.b.mode_name(), Some("probe_rtt"));
    assert_eq!(d.cwnd_segs(), CWND_MIN_TARGET);
    assert_eq!((d.b.pacing_gain(), d.b.cwnd_gain()), (256, 256));
    // The next ACK finds inflight at 4: 200 ms and one round from now.
    let at4 = Round {
        in_flight: 4,
        prior_in_flight: 4,
        app_limited: true,
        ..round(4)
    };
    assert!(d.ack(at4), "PROBE_RTT marks the connection app-limited");
    let done_at = d.now + 200 * NS_PER_MS;
    while d.now + STEP <= done_at {
        d.ack(at4);
        assert_eq!(d.b.mode(), BbrMode::ProbeRtt);
        assert_eq!(d.cwnd_segs(), CWND_MIN_TARGET);
    }
    d.ack(at4);
    assert_eq!(
        d.b.mode(),
        BbrMode::ProbeBw,
        "the pipe was full: back to PROBE_BW"
    );
    assert!(d.cwnd_segs() >= cwnd_before.min(d.b.inflight(d.b.max_bw(), CWND_GAIN)));
    // min_rtt's stamp was refreshed: no PROBE_RTT for another 10 s.
    let left = d.now;
    while d.now < left + 9 * NS_PER_SEC {
        d.ack(Round {
            rtt_ns: RTT + 20 * NS_PER_MS,
            ..round(100)
        });
        assert_ne!(d.b.mode(), BbrMode::ProbeRtt);
    }
}

#[test]
fn probe_rtt_returns_to_startup_when_the_pipe_was_never_full() {
    let mut d = Drive::new(1);
    let mut segs = 10.0f64;
    while d.b.mode() != BbrMode::ProbeRtt {
        d.ack(Round {
            rtt_ns: RTT + 10 * NS_PER_MS,
            ..round(segs as u64)
        });
        segs *= 1.3;
        assert!(d.now < 12 * NS_PER_SEC);
    }
    let at4 = Round {
        in_flight: 4,
        app_limited: true,
        ..round(4)
    };
    for _ in 0..4 {
        d.ack(at4);
    }
    assert_eq!(d.b.mode(), BbrMode::Startup);
}

#[test]
fn a_policer_is_detected_from_two_consistent_lossy_intervals() {
    let mut d = Drive::to_probe_bw(3);
    assert_eq!(d.b.lt_bw_bytes_per_s(), None);
    // 25 % of the delivered segments lost every round at 80 per round.
    let lossy = Round {
        losses: 20,
        ..round(80)
    };
    let mut rounds = 0;
    while d.b.lt_bw_bytes_per_s().is_none() {
        d.ack(lossy);
        rounds += 1;
        assert!(rounds <= 12, "no policer found in {rounds} rounds");
    }
    // Two intervals of 4 rounds after the first loss.
    assert!(rounds >= 8, "{rounds}");
    let lt = d.b.lt_bw_bytes_per_s().unwrap() as f64;
    // 80 segments per 101 ms round.
    let expect = 80.0 * MSS as f64 / 0.101;
    assert!((lt - expect).abs() / expect < 0.05, "{lt} vs {expect}");
    assert_eq!(d.b.pacing_gain(), 256, "paces at lt_bw, gain 1");
    assert_eq!(d.b.bw_bytes_per_s(), lt as u64);
    // lt_bw is used for 48 rounds, then gain cycling resumes.
    for _ in 0..47 {
        d.ack(round(80));
        assert!(d.b.lt_bw_bytes_per_s().is_some());
    }
    d.ack(round(80));
    assert_eq!(d.b.lt_bw_bytes_per_s(), None);
    assert_eq!(d.b.mode(), BbrMode::ProbeBw);
}

#[test]
fn lossy_intervals_with_different_rates_are_no_policer() {
    let mut d = Drive::to_probe_bw(3);
    for i in 0..40u64 {
        // Rates alternating by 50 % between intervals.
        let segs = if (i / 4) % 2 == 0 { 60 } else { 90 };
        d.ack(Round {
            losses: segs / 4,
            ..round(segs)
        });
        assert_eq!(d.b.lt_bw_bytes_per_s(), None, "round {i}");
    }
}

#[test]
fn a_timeout_restarts_full_pipe_growth_counting() {
    let mut d = Drive::to_probe_bw(3);
    d.st.cwnd_bytes = MSS; // the sender's loss window
    d.b.ssthresh_on_loss(&d.st, CongestionEvent::Timeout, 0, d.now);
    assert_eq!(d.b.full_bw, 0);
    assert_eq!(d.b.prev_ca_state, CaState::Loss);
}

#[test]
fn with_lt_bw_off_lossy_intervals_never_engage_a_policer_estimate() {
    let mut d = Drive::to_probe_bw(3);
    d.b.lt_bw_enabled = false;
    // The policer pattern of a_policer_is_detected_from_two_consistent_lossy_intervals.
    for i in 0..40 {
        d.ack(Round {
            losses: 20,
            ..round(80)
        });
        assert_eq!(d.b.lt_bw_bytes_per_s(), None, "round {i}");
    }
}

#[test]
fn the_lt_bw_knob_reaches_the_controller() {
    let mut p = BbrParams::default();
    assert!(p.lt_bw);
    assert_eq!(p.set("lt_bw", 0.0), Some(()));
    assert!(!p.lt_bw);
    assert_eq!(p.set("lt_bw", 0.5), None);
    assert_eq!(p.set("lt_bw_max_rtts", 1.0), None);
}

#[test]
fn the_model_sample_reports_bw_min_rtt_gains_and_the_cwnd_target() {
    let mut d = Drive::to_probe_bw(3);
    d.ack(round(100));
    let m = d.b.model_sample().expect("BBR has a model");
    assert_eq!(m.mode, "probe_bw");
    // 100 segments per 100 ms round = 1000 segments/s of 1000 B (less
    // the truncation of BW_UNIT's fixed point).
    assert!(m.bw_bytes_per_s.abs_diff(1_000_000) < 100, "{m:?}");
    assert_eq!(m.min_rtt_ns, Some(RTT));
    assert_eq!(m.pacing_gain, PACING_GAIN[d.b.cycle_idx()] as f64 / 256.0);
    assert_eq!(m.cwnd_gain, 2.0);
    // 2·BDP + extra_acked + 3 TSO bursts of 2 (rounded to even, +2 in the
    // 5/4 phase): the window set_cwnd grows toward, so cwnd sits at it.
    let extra = d.b.ack_aggregation_cwnd();
    assert!(
        (206 + extra..=210 + extra).contains(&m.target_cwnd_segments),
        "{m:?}"
    );
    d.ack(round(100));
    d.ack(round(100));
    let m = d.b.model_sample().expect("BBR has a model");
    assert_eq!(d.cwnd_segs(), m.target_cwnd_segments);
    assert!(!m.lt_bw_in_use);
}
