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
    /// `prior_delivered` of the last ACK, for an ACK within its round.
    last_prior: u64,
}

/// What a sample says beyond the defaults of [`Drive::round`].
#[derive(Clone, Copy)]
struct Round {
    segs: u64,
    in_flight: u64,
    prior_in_flight: u64,
    losses: u64,
    app_limited: bool,
    /// 0: the ACK carries no RTT sample.
    rtt_ns: u64,
    ca_state: CaState,
    /// The ACKed data was sent before the last round began (its
    /// `prior_delivered` is the last ACK's): no new round starts.
    same_round: bool,
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
        same_round: false,
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
            last_prior: 0,
        }
    }

    /// One ACK closing one round trip.
    fn ack(&mut self, r: Round) -> bool {
        self.ack_after(STEP, r)
    }

    /// One ACK `elapsed_ns` after the last.
    fn ack_after(&mut self, elapsed_ns: u64, r: Round) -> bool {
        self.now += elapsed_ns;
        let prior = if r.same_round {
            self.last_prior
        } else {
            self.delivered
        };
        self.last_prior = prior;
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
            rtt_ns: (r.rtt_ns > 0).then_some(r.rtt_ns),
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

    /// ACK `r` each round until the pacing gain is `gain` (×256); a
    /// PROBE_BW cycle is 8 phases, so a gain it has is reached within 2
    /// cycles, else the test fails rather than loop.
    fn until_gain(&mut self, gain: u64, r: Round) {
        for _ in 0..2 * CYCLE_LEN {
            if self.b.pacing_gain() == gain {
                return;
            }
            self.ack(r);
        }
        assert_eq!(self.b.pacing_gain(), gain, "gain not reached in 2 cycles");
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
fn the_first_srtt_sets_the_initial_rate_again() {
    // bbr_set_pacing_rate: `if (unlikely(!bbr->has_seen_rtt &&
    // tp->srtt_us)) bbr_init_pacing_rate_from_rtt(sk)`. A connection whose
    // handshake gave no RTT sample starts at high_gain · cwnd over a nominal
    // 1 ms; the first srtt sets it again from the real RTT, once.
    let mut b = Bbr::new(MSS);
    let mut st = CcState {
        cwnd_bytes: 10 * MSS,
        ssthresh_bytes: u64::MAX,
        mss_bytes: MSS,
    };
    let mut delivered = 0;
    let mut ack = |b: &mut Bbr, st: &mut CcState, now_ns: u64, srtt_ns: u64| {
        delivered += 1;
        let rs = RateSample {
            now_ns,
            delivered_segs: 1,
            interval_ns: RTT,
            prior_delivered_segs: delivered - 1,
            acked_sacked_segs: 1,
            rtt_ns: (srtt_ns > 0).then_some(srtt_ns),
            srtt_ns,
            in_flight_segs: 9,
            prior_in_flight_segs: 10,
            conn_delivered_segs: delivered,
            delivered_ns: now_ns,
            ..RateSample::default()
        };
        b.on_rate_sample(st, &rs);
        b.pacing_rate_bytes_per_s() as f64
    };
    // 10 segments per ms · 739/256 · 99 %; a second ACK without an RTT
    // sample (cwnd is 11 by then) keeps it.
    let nominal = ack(&mut b, &mut st, RTT, 0);
    let expect = 10.0 * MSS as f64 / 0.001 * 739.0 / 256.0 * 0.99;
    assert!((nominal - expect).abs() / expect < 0.001, "{nominal} vs {expect}");
    assert_eq!(ack(&mut b, &mut st, RTT + NS_PER_MS, 0), nominal);
    // srtt 100 ms: 12 segments (cwnd now) per 100 ms at the high gain.
    let from_srtt = ack(&mut b, &mut st, RTT + 2 * NS_PER_MS, RTT);
    let expect = 12.0 * MSS as f64 / 0.1 * 739.0 / 256.0 * 0.99;
    assert!(
        (from_srtt - expect).abs() / expect < 0.001,
        "{from_srtt} vs {expect}"
    );
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
    d.until_gain(320, round(100));
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
    d.until_gain(
        320,
        Round {
            prior_in_flight: 140,
            ..round(100)
        },
    );
    d.ack(Round {
        prior_in_flight: 140,
        ..round(100)
    });
    assert_eq!(d.b.pacing_gain(), 192);
    // Less than min_rtt later, inflight one above BDP + budget (100 + 3
    // TSO bursts of 2): the phase goes on...
    d.ack_after(
        30 * NS_PER_MS,
        Round {
            prior_in_flight: 107,
            ..round(100)
        },
    );
    assert_eq!(d.b.pacing_gain(), 192);
    // ...and ends once inflight is down to it (`bbr_is_next_cycle_phase`:
    // `is_full_length || inflight <= bbr_inflight(sk, bw, BBR_UNIT)`).
    d.ack_after(
        30 * NS_PER_MS,
        Round {
            prior_in_flight: 106,
            ..round(100)
        },
    );
    assert_eq!(d.b.pacing_gain(), 256);
}

#[test]
fn pacing_rate_is_gain_times_bw_less_one_percent() {
    let mut d = Drive::to_probe_bw(3);
    d.until_gain(
        256,
        Round {
            prior_in_flight: 140,
            ..round(100)
        },
    );
    // bw = 100 segments / 100 ms = 1 000 000 B/s; at gain 1 less 1 %.
    let rate = d.b.pacing_rate_bytes_per_s() as f64;
    assert!((rate - 990_000.0).abs() < 100.0, "{rate}");
    d.until_gain(
        320,
        Round {
            prior_in_flight: 140,
            ..round(100)
        },
    );
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
    d.until_gain(
        256,
        Round {
            prior_in_flight: 140,
            ..round(100)
        },
    );
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
    // bbr_cwnd_min_target = 4.
    assert_eq!(d.cwnd_segs(), 4);
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
        assert_eq!(d.cwnd_segs(), 4);
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
    // The first loss starts sampling; two intervals of 4 rounds follow
    // (bbr_lt_intvl_min_rtts = 4), the first 3 rounds after that loss.
    assert_eq!(rounds, 8);
    let lt = d.b.lt_bw_bytes_per_s().unwrap() as f64;
    // 80 segments per 101 ms round.
    let expect = 80.0 * MSS as f64 / 0.101;
    assert!((lt - expect).abs() / expect < 0.05, "{lt} vs {expect}");
    assert_eq!(d.b.pacing_gain(), 256, "paces at lt_bw, gain 1");
    assert_eq!(d.b.bw_bytes_per_s(), lt as u64);
    // lt_bw is used for 48 rounds, then gain cycling resumes.
    // Without lt_bw the gain would cycle through 5/4 and 3/4 here
    // (`bbr_update_gains`: pacing_gain = BBR_UNIT while lt_use_bw).
    for _ in 0..47 {
        d.ack(round(80));
        assert!(d.b.lt_bw_bytes_per_s().is_some());
        assert_eq!(d.b.pacing_gain(), 256);
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
fn a_timeout_is_a_loss_for_long_term_sampling() {
    // bbr_set_state(sk, TCP_CA_Loss): `struct rate_sample rs = { .losses =
    // 1 }; ... bbr_lt_bw_sampling(sk, &rs)`: an RTO starts long-term
    // sampling as a loss would.
    let mut d = Drive::to_probe_bw(3);
    assert!(!d.b.lt_is_sampling);
    d.st.cwnd_bytes = MSS;
    d.b.ssthresh_on_loss(&d.st, CongestionEvent::Timeout, 0, d.now);
    assert!(d.b.lt_is_sampling);
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

// ----- rules the mutation check (benches/mutation/bbr_mutants.py) found
// unpinned: one rule per test.

#[test]
fn a_cruise_phase_lasts_min_rtt() {
    // bbr_is_next_cycle_phase: `is_full_length = tcp_stamp_us_delta(
    // tp->delivered_mstamp, bbr->cycle_mstamp) > bbr->min_rtt_us`; at gain 1
    // nothing else ends a phase.
    let mut d = Drive::to_probe_bw(3);
    d.until_gain(
        256,
        Round {
            prior_in_flight: 140,
            ..round(100)
        },
    );
    let idx = d.b.cycle_idx();
    // 60 ms and 100 ms into the phase (min_rtt is 100 ms): not over.
    d.ack_after(60 * NS_PER_MS, round(100));
    assert_eq!(d.b.cycle_idx(), idx);
    d.ack_after(40 * NS_PER_MS, round(100));
    assert_eq!(d.b.cycle_idx(), idx);
    // Past min_rtt: the next phase.
    d.ack_after(NS_PER_MS, round(100));
    assert_eq!(d.b.cycle_idx(), (idx + 1) % CYCLE_LEN);
}

#[test]
fn the_probe_phase_aims_at_five_quarters_bdp_not_bdp() {
    // bbr_is_next_cycle_phase: the 5/4 phase ends when `inflight >=
    // bbr_inflight(sk, bw, bbr->pacing_gain)`: 5/4·BDP 125, + 3 TSO bursts
    // of 2, rounded to even, + 2 in this phase = 134, where inflight is
    // the prior inflight + one TSO burst (bbr_packets_in_net_at_edt).
    let mut d = Drive::to_probe_bw(3);
    d.until_gain(320, round(100));
    // Above BDP + budget (106), below 5/4·BDP: keep probing.
    for _ in 0..3 {
        d.ack(Round {
            prior_in_flight: 120,
            ..round(100)
        });
        assert_eq!(d.b.pacing_gain(), 320);
    }
    d.ack(Round {
        prior_in_flight: 131,
        ..round(100)
    });
    assert_eq!(d.b.pacing_gain(), 320);
    d.ack(Round {
        prior_in_flight: 132,
        ..round(100)
    });
    assert_eq!(d.b.pacing_gain(), 192);
}

#[test]
fn growth_of_exactly_a_quarter_keeps_startup_going() {
    // bbr_check_full_bw_reached: `if (bbr_max_bw(sk) >= bw_thresh)` resets
    // the count. 3125 segments per 100 ms is 524 288 in BW_UNIT, so these
    // rates scale exactly: 12 500 → 15 625 is +25 % to the unit.
    let mut d = Drive::new(1);
    d.ack(round(12_500));
    d.ack(round(15_625));
    assert_eq!(d.b.full_bw, d.b.max_bw(), "counted as growth");
    d.ack(round(15_625));
    d.ack(round(15_625));
    assert!(!d.b.full_bw_reached(), "2 flat rounds after the growth");
    d.ack(round(15_625));
    assert!(d.b.full_bw_reached(), "3 flat rounds");
}

#[test]
fn growth_restarts_the_count_of_flat_rounds() {
    // bbr_check_full_bw_reached: growth sets `bbr->full_bw_cnt = 0`.
    let mut d = Drive::new(1);
    d.ack(round(100));
    d.ack(round(100));
    d.ack(round(100));
    assert!(!d.b.full_bw_reached(), "2 flat rounds");
    d.ack(round(130));
    d.ack(round(130));
    d.ack(round(130));
    assert!(!d.b.full_bw_reached(), "2 flat rounds since the growth");
    d.ack(round(130));
    assert!(d.b.full_bw_reached());
}

#[test]
fn full_pipe_counts_rounds_not_acks() {
    // bbr_check_full_bw_reached returns unless `rs->... bbr->round_start`:
    // the ACKs within a round do not count.
    let mut d = Drive::new(1);
    d.ack(round(100));
    for _ in 0..6 {
        d.ack_after(
            NS_PER_MS,
            Round {
                same_round: true,
                ..round(100)
            },
        );
        assert!(!d.b.full_bw_reached(), "ACKs within one round");
    }
    d.ack(round(100));
    d.ack(round(100));
    assert!(!d.b.full_bw_reached(), "2 flat rounds");
    d.ack(round(100));
    assert!(d.b.full_bw_reached(), "3 flat rounds");
}

#[test]
fn probe_rtt_lasts_a_round_as_well_as_200_ms() {
    // bbr_update_min_rtt: at 4 packets in flight PROBE_RTT stamps its end
    // 200 ms on and a round on (`bbr->next_rtt_delivered =
    // tp->delivered`); bbr_check_probe_rtt_done runs only once
    // `probe_rtt_round_done`.
    let mut d = Drive::to_probe_bw(3);
    while d.b.mode() != BbrMode::ProbeRtt {
        d.ack(Round {
            rtt_ns: RTT + 10 * NS_PER_MS,
            prior_in_flight: 140,
            ..round(100)
        });
        assert!(d.now < 12 * NS_PER_SEC, "no PROBE_RTT");
    }
    let at4 = Round {
        in_flight: 4,
        prior_in_flight: 4,
        app_limited: true,
        ..round(4)
    };
    d.ack(at4);
    // 300 ms of ACKs of data sent before the round began: still probing.
    for _ in 0..3 {
        d.ack(Round {
            same_round: true,
            ..at4
        });
        assert_eq!(d.b.mode(), BbrMode::ProbeRtt);
    }
    // The round ends: PROBE_RTT too.
    d.ack(at4);
    assert_eq!(d.b.mode(), BbrMode::ProbeBw);
}

#[test]
fn an_rtt_at_or_below_min_rtt_is_the_new_min_rtt_at_once() {
    // bbr_update_min_rtt: `if (rs->rtt_us >= 0 && (rs->rtt_us <=
    // bbr->min_rtt_us || filter_expired))` the sample is min_rtt and its
    // time the filter's stamp, expired or not.
    let mut d = Drive::to_probe_bw(3);
    d.ack(Round {
        rtt_ns: 90 * NS_PER_MS,
        ..round(100)
    });
    assert_eq!(d.b.min_rtt_ns(), 90 * NS_PER_MS);
    assert_eq!(d.b.min_rtt_stamp_ns, d.now);
    d.ack(Round {
        rtt_ns: 95 * NS_PER_MS,
        ..round(100)
    });
    assert_eq!(d.b.min_rtt_ns(), 90 * NS_PER_MS, "a higher sample is not");
    d.ack(Round {
        rtt_ns: 90 * NS_PER_MS,
        ..round(100)
    });
    assert_eq!(d.b.min_rtt_stamp_ns, d.now, "an equal one restarts the 10 s");
}

#[test]
fn probe_rtt_begins_only_once_ten_seconds_have_passed() {
    // bbr_update_min_rtt: `filter_expired = after(tcp_jiffies32,
    // bbr->min_rtt_stamp + bbr_min_rtt_win_sec * HZ)`: strictly after.
    let mut d = Drive::to_probe_bw(3);
    let stamp = d.b.min_rtt_stamp_ns;
    let slower = Round {
        rtt_ns: RTT + 10 * NS_PER_MS,
        ..round(100)
    };
    d.ack_after(stamp + 10 * NS_PER_SEC - d.now, slower);
    assert_eq!(d.b.mode(), BbrMode::ProbeBw, "at 10 s");
    d.ack_after(1, slower);
    assert_eq!(d.b.mode(), BbrMode::ProbeRtt, "just after 10 s");
}

#[test]
fn probe_rtt_ends_only_once_200_ms_have_passed() {
    // bbr_check_probe_rtt_done: `after(tcp_jiffies32,
    // bbr->probe_rtt_done_stamp)`: strictly after the 200 ms.
    let mut d = Drive::to_probe_bw(3);
    d.ack_after(
        10 * NS_PER_SEC + 1,
        Round {
            rtt_ns: RTT + 10 * NS_PER_MS,
            ..round(100)
        },
    );
    assert_eq!(d.b.mode(), BbrMode::ProbeRtt);
    let at4 = Round {
        in_flight: 4,
        prior_in_flight: 4,
        app_limited: true,
        ..round(4)
    };
    d.ack(at4); // inflight at 4: 200 ms and a round from now
    let done = d.now + 200 * NS_PER_MS;
    d.ack_after(100 * NS_PER_MS, at4); // the round is over
    assert_eq!(d.b.mode(), BbrMode::ProbeRtt);
    d.ack_after(done - d.now, at4);
    assert_eq!(d.b.mode(), BbrMode::ProbeRtt, "at 200 ms");
    d.ack_after(1, at4);
    assert_eq!(d.b.mode(), BbrMode::ProbeBw, "just after 200 ms");
}

#[test]
fn after_an_idle_restart_probe_rtt_waits_for_data_delivered() {
    // bbr_cwnd_event(CA_EVENT_TX_START) sets idle_restart; bbr_update_min_rtt
    // enters PROBE_RTT only `!bbr->idle_restart`, which `if (rs->delivered
    // > 0) bbr->idle_restart = 0;` clears. ACKs without RTT samples keep
    // the filter expired throughout.
    let mut d = Drive::to_probe_bw(3);
    d.now += 11 * NS_PER_SEC;
    let now = d.now;
    d.b.on_tx_start(&mut d.st, now, true);
    let nothing = Round {
        rtt_ns: 0,
        in_flight: 10,
        prior_in_flight: 10,
        ..round(0)
    };
    for _ in 0..2 {
        d.ack(nothing);
        assert_eq!(d.b.mode(), BbrMode::ProbeBw, "nothing delivered yet");
    }
    let data = Round {
        rtt_ns: 0,
        ..round(100)
    };
    d.ack(data);
    assert_eq!(d.b.mode(), BbrMode::ProbeBw, "delivered: restart over");
    d.ack(data);
    assert_eq!(d.b.mode(), BbrMode::ProbeRtt);
}

#[test]
fn leaving_probe_rtt_restarts_the_ten_seconds() {
    // bbr_check_probe_rtt_done: `bbr->min_rtt_stamp = tcp_jiffies32` on
    // exit, so the next PROBE_RTT comes 10 s after this one ends even when
    // no sample in it was a new minimum (here PROBE_RTT's samples, 120 ms,
    // are above the 110 ms min_rtt the expired filter took at entry).
    let mut d = Drive::to_probe_bw(3);
    let slower = |rtt_ms: u64| Round {
        rtt_ns: rtt_ms * NS_PER_MS,
        prior_in_flight: 140,
        ..round(100)
    };
    while d.b.mode() != BbrMode::ProbeRtt {
        d.ack(slower(110));
        assert!(d.now < 12 * NS_PER_SEC, "no PROBE_RTT");
    }
    let entered = d.now;
    let at4 = Round {
        in_flight: 4,
        prior_in_flight: 4,
        app_limited: true,
        rtt_ns: 120 * NS_PER_MS,
        ..round(4)
    };
    while d.b.mode() == BbrMode::ProbeRtt {
        d.ack(at4);
        assert!(d.now < entered + NS_PER_SEC, "PROBE_RTT never ends");
    }
    let left = d.now;
    while d.b.mode() != BbrMode::ProbeRtt {
        d.ack(slower(120));
        assert!(d.now < left + 11 * NS_PER_SEC, "no second PROBE_RTT");
    }
    assert!(
        d.now > left + 10 * NS_PER_SEC,
        "again {} ms after leaving",
        (d.now - left) / NS_PER_MS
    );
}

/// The lossy rounds of a policed flow: `segs` delivered, `losses` lost.
fn lossy(segs: u64, losses: u64) -> Round {
    Round {
        losses,
        ..round(segs)
    }
}

/// Whether lt_bw is in use after each ACK of `rounds`.
fn lt_in_use_after(d: &mut Drive, rounds: &[Round]) -> Vec<bool> {
    rounds
        .iter()
        .map(|r| {
            d.ack(*r);
            d.b.lt_bw_bytes_per_s().is_some()
        })
        .collect()
}

#[test]
fn lossy_intervals_within_an_eighth_are_a_policer_at_their_average() {
    // bbr_lt_bw_interval_done: `diff * BBR_UNIT <= bbr_lt_bw_ratio *
    // bbr->lt_bw` (1/8), then `bbr->lt_bw = (bw + bbr->lt_bw) >> 1`. The
    // first loss starts sampling; intervals of 4 rounds: 3 rounds of 100
    // segments after it, then 4 of 110 (+10 %).
    let mut d = Drive::to_probe_bw(3);
    let mut rounds = vec![lossy(100, 25); 4];
    rounds.extend([lossy(110, 25); 4]);
    let in_use = lt_in_use_after(&mut d, &rounds);
    assert_eq!(in_use, [false, false, false, false, false, false, false, true]);
    // (100·3/303 ms + 110·4/404 ms) / 2 segments of 1000 B per ms.
    let expect = (300.0 / 0.303 + 440.0 / 0.404) / 2.0 * MSS as f64;
    let lt = d.b.lt_bw_bytes_per_s().unwrap() as f64;
    assert!((lt - expect).abs() / expect < 0.005, "{lt} vs {expect}");
}

#[test]
fn lossy_intervals_more_than_an_eighth_apart_are_no_policer() {
    // The same with +15 % in the second interval: not consistent, but it
    // becomes the reference for the next, which is (two in a row).
    let mut d = Drive::to_probe_bw(3);
    let mut rounds = vec![lossy(100, 25); 4];
    rounds.extend([lossy(115, 25); 8]);
    let in_use = lt_in_use_after(&mut d, &rounds);
    assert_eq!(in_use.iter().position(|&u| u), Some(11), "{in_use:?}");
}

#[test]
fn an_interval_is_lossy_from_twenty_percent_loss() {
    // bbr_lt_bw_sampling: `if (lost << BBR_SCALE) < bbr_lt_loss_thresh *
    // delivered` (50/256 = 19.5 %) the interval is not lossy and sampling
    // goes on.
    let mut d = Drive::to_probe_bw(3);
    let in_use = lt_in_use_after(&mut d, &[lossy(100, 19); 16]);
    assert!(in_use.iter().all(|&u| !u), "19 % loss: {in_use:?}");
    let mut d = Drive::to_probe_bw(3);
    let in_use = lt_in_use_after(&mut d, &[lossy(100, 20); 8]);
    assert_eq!(in_use.last(), Some(&true), "20 % loss: {in_use:?}");
}

#[test]
fn an_interval_at_exactly_the_loss_threshold_is_lossy() {
    // bbr_lt_bw_sampling: not lossy only `if ((lost << BBR_SCALE) <
    // bbr_lt_loss_thresh * delivered)`: 25 of 128 is 50/256 exactly.
    let mut d = Drive::to_probe_bw(3);
    let in_use = lt_in_use_after(&mut d, &[lossy(128, 25); 8]);
    assert_eq!(in_use.last(), Some(&true), "{in_use:?}");
}

#[test]
fn an_interval_of_one_millisecond_is_measured() {
    // bbr_lt_bw_sampling: `if (t < 1) return; /* interval is less than one
    // ms, so wait */` (t in whole ms of delivered_mstamp): 1 ms is enough.
    // Rounds 250 µs apart from a whole millisecond on: each interval of 4
    // rounds spans 1 ms (the first delivers 3 rounds' data in it, the
    // next two 4 rounds', and those two are consistent).
    let mut d = Drive::to_probe_bw(3);
    assert_eq!(d.now % NS_PER_MS, 0);
    let mut in_use = Vec::new();
    for _ in 0..12 {
        d.ack_after(NS_PER_MS / 4, lossy(80, 20));
        in_use.push(d.b.lt_bw_bytes_per_s().is_some());
    }
    assert_eq!(in_use.iter().position(|&u| u), Some(11), "{in_use:?}");
}

#[test]
fn an_interval_too_long_for_linux_s_u32_microseconds_restarts_sampling() {
    // bbr_lt_bw_sampling: `if (t >= ~0U / USEC_PER_MSEC) {
    // bbr_reset_lt_bw_sampling(sk); return; }` (about 71.6 minutes).
    // Rounds 25 minutes apart: the first interval (3 rounds, 75 minutes)
    // restarts sampling, and so does every later one. 10^5 segments a
    // round, so that the intervals' bw (about 1100 in BW_UNIT) would be
    // consistent, were they measured.
    let mut d = Drive::to_probe_bw(3);
    for i in 0..12 {
        d.ack_after(25 * 60 * NS_PER_SEC, lossy(100_000, 25_000));
        assert_eq!(d.b.lt_bw_bytes_per_s(), None, "round {i}");
    }
}

#[test]
fn a_sampling_interval_may_last_sixteen_rounds_not_seventeen() {
    // bbr_lt_bw_sampling: an interval ends at a loss after 4 to
    // 4·bbr_lt_intvl_min_rtts = 16 rounds; past 16 sampling restarts.
    let policed = |len: usize| {
        let mut d = Drive::to_probe_bw(3);
        // A loss starts the first interval (its first round); rounds
        // without loss up to the `len`th, which loses over 20 % of what
        // the interval delivered; then a second interval of `len` rounds
        // the same way.
        let heavy = lossy(80, 20 * len as u64);
        let mut rounds = vec![lossy(80, 10)];
        rounds.extend(vec![round(80); len - 2]);
        rounds.push(heavy);
        rounds.extend(vec![round(80); len - 1]);
        rounds.push(heavy);
        lt_in_use_after(&mut d, &rounds).iter().any(|&u| u)
    };
    assert!(policed(12));
    assert!(policed(16));
    assert!(!policed(17));
}

#[test]
fn slow_lossy_intervals_within_4_kbit_s_are_a_policer() {
    // bbr_lt_bw_interval_done: intervals more than 1/8 apart are still
    // consistent if `bbr_rate_bytes_per_sec(sk, diff, BBR_UNIT) <=
    // bbr_lt_bw_diff` (4 kbit/s = 500 B/s). Rounds of 1.1 s (the same RTT
    // samples, so min_rtt stays fresh) with 1 or 2 segments of 1000 B.
    let slow = |second: [u64; 4]| {
        let mut d = Drive::to_probe_bw(3);
        let segs = [1, 1, 1, 1].into_iter().chain(second);
        segs.map(|s| {
            d.ack_after(NS_PER_SEC + STEP, lossy(s, 1));
            d.b.lt_bw_bytes_per_s()
        })
        .last()
        .unwrap()
    };
    // 3 segments in 3.3 s, then 5 in 4.4 s: 909 and 1136 B/s, 25 % apart,
    // 227 B/s (1.8 kbit/s) apart.
    let lt = slow([1, 1, 1, 2]).expect("a policer") as f64;
    // Within one BW_UNIT step: 2^-24 segments per µs is 60 B/s here.
    let expect = (3000.0 / 3.303 + 5000.0 / 4.404) / 2.0;
    assert!((lt - expect).abs() < 60.0, "{lt} vs {expect}");
    // 3 segments in 3.3 s, then 8 in 4.4 s: 909 and 1817 B/s, 7.3 kbit/s
    // apart.
    assert_eq!(slow([2, 2, 2, 2]), None);
}

#[test]
fn lt_bw_lasts_48_rounds_not_48_acks() {
    // bbr_lt_bw_sampling: while lt_bw is used, `if (bbr->mode ==
    // BBR_PROBE_BW && bbr->round_start && ++bbr->lt_rtt_cnt >=
    // bbr_lt_bw_max_rtts)`: only round starts count.
    let mut d = Drive::to_probe_bw(3);
    let in_use = lt_in_use_after(&mut d, &[lossy(80, 20); 8]);
    assert_eq!(in_use.last(), Some(&true));
    for i in 0..47 {
        d.ack(round(80));
        for _ in 0..2 {
            d.ack_after(
                NS_PER_MS,
                Round {
                    same_round: true,
                    ..round(80)
                },
            );
        }
        assert!(d.b.lt_bw_bytes_per_s().is_some(), "round {i}");
    }
    d.ack(round(80));
    assert_eq!(d.b.lt_bw_bytes_per_s(), None);
}

#[test]
fn one_lossy_interval_alone_is_no_policer() {
    // bbr_lt_bw_interval_done compares with the previous interval only `if
    // (bbr->lt_bw)`: the first interval is kept as the reference, however
    // slow (here 1 segment per 3.1 s round, 2.6 kbit/s, under the 4 kbit/s
    // that makes two intervals consistent).
    let mut d = Drive::to_probe_bw(3);
    for _ in 0..7 {
        d.ack_after(3 * NS_PER_SEC + STEP, lossy(1, 1));
        assert_eq!(d.b.lt_bw_bytes_per_s(), None);
    }
    assert!(d.b.lt_bw > 0, "the first interval ended");
}

#[test]
fn an_app_limited_sample_restarts_long_term_sampling() {
    // bbr_lt_bw_sampling: `if (rs->is_app_limited) { bbr_reset_lt_bw_sampling(sk); return; }`:
    // the policer pattern that engages at round 8 restarts at round 6, so
    // sampling starts again at round 7's loss and engages at round 14.
    let mut d = Drive::to_probe_bw(3);
    let mut rounds = vec![lossy(80, 20); 14];
    rounds[5].app_limited = true;
    let in_use = lt_in_use_after(&mut d, &rounds);
    assert_eq!(in_use.iter().position(|&u| u), Some(13), "{in_use:?}");
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
