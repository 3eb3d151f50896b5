//! End-to-end tests of sender and receiver over the test wire.

use super::testutil::{Harness, TestReno, XorShift};
use super::*;
use crate::segment::{Flags, SackBlock, Segment};
use crate::{NS_PER_MS, NS_PER_SEC};

const MBPS: u64 = 1_000_000;

fn ns2() -> TcpConfig {
    TcpConfig::ns2()
}

fn sack_cfg() -> TcpConfig {
    let mut c = TcpConfig::ns2();
    c.recovery = Recovery::Sack;
    c.sack = true;
    c
}

fn fack_cfg() -> TcpConfig {
    let mut c = sack_cfg();
    c.recovery = Recovery::Fack;
    c
}

/// Data segment number `k` (0-based) in ns-2 sizing.
fn seq_of(k: u64, mss: u64) -> u64 {
    1 + k * mss
}

/// Drop the first transmission of the listed data segments.
fn drop_first_tx(mss: u64, which: &[u64]) -> super::testutil::DropFn {
    let seqs: Vec<u64> = which.iter().map(|&k| seq_of(k, mss)).collect();
    Box::new(move |_, s: &Segment| s.payload_bytes > 0 && !s.is_retransmit && seqs.contains(&s.seq))
}

#[test]
fn handshake_and_transfer_exact_bytes() {
    for cfg in [ns2(), sack_cfg(), fack_cfg(), TcpConfig::linux()] {
        let n = 100_000u64;
        let mut h = Harness::new(cfg.clone(), Some(n), 8 * MBPS, 10 * NS_PER_MS);
        h.start();
        let (t0, syn) = h.sent[0];
        assert_eq!(t0, 0);
        assert!(syn.is_syn() && syn.seq == 0 && syn.payload_bytes == 0);
        let done = h.run_until_complete(60 * NS_PER_SEC).expect("completes");
        let synack = h.acks[0].1;
        assert!(synack.is_syn() && synack.has_ack() && synack.ack == 1 && synack.seq == 0);
        // First data segment carries the handshake's ACK.
        let first = h.data_sent().next().unwrap().1;
        assert_eq!(first.seq, 1);
        assert!(first.has_ack() && first.ack == 1);
        let st = h.snd.stats();
        assert_eq!(h.rcv.stats().bytes_delivered, n);
        assert_eq!(st.bytes_acked, n);
        assert_eq!(st.bytes_sent, n);
        let mss = cfg.mss_bytes as u64;
        assert_eq!(st.segments_sent, n.div_ceil(mss));
        assert_eq!(st.retransmitted_segments, 0);
        assert_eq!(st.timeouts, 0);
        assert!(h.snd.is_complete());
        assert!(done > 0);
        assert_eq!(h.rcv.rcv_nxt(), 1 + n);
        // After completion nothing more is sent.
        let before = h.sent.len();
        h.run_until(done + 10 * NS_PER_SEC);
        assert_eq!(h.sent.len(), before);
        assert_eq!(h.snd.next_timeout(), None);
    }
}

#[test]
fn zero_byte_flow_completes_at_handshake() {
    let mut h = Harness::new(ns2(), Some(0), 8 * MBPS, 10 * NS_PER_MS);
    h.start();
    let done = h.run_until_complete(NS_PER_SEC).unwrap();
    assert_eq!(done, 2 * (10 * NS_PER_MS + 40_000));
    assert_eq!(h.snd.stats().segments_sent, 0);
}

#[test]
fn slow_start_doubles_per_rtt() {
    // Fast link: the window, not the link, limits each round.
    let cfg = ns2();
    let mss = cfg.mss_bytes as u64;
    let mut h = Harness::new(cfg, None, 10_000 * MBPS, 50 * NS_PER_MS);
    h.start();
    h.run_until(2 * 50 * NS_PER_MS + NS_PER_MS); // handshake done
    let rtt = h.snd.srtt_ns();
    assert!(rtt > 100 * NS_PER_MS && rtt < 101 * NS_PER_MS);
    let t_hs = h.data_sent().next().unwrap().0;
    let mut expected = 10u64;
    for round in 0..6u64 {
        let lo = t_hs + round * rtt;
        let hi = lo + rtt / 2;
        h.run_until(hi);
        let count = h.data_sent().filter(|(t, _)| *t >= lo && *t < hi).count() as u64;
        assert_eq!(count, expected, "round {round}");
        assert_eq!(h.snd.cwnd_bytes(), expected * mss, "round {round}");
        expected *= 2;
    }
}

#[test]
fn rto_after_handshake_matches_rfc6298() {
    let mut h = Harness::new(ns2(), None, 8 * MBPS, 50 * NS_PER_MS);
    h.start();
    h.run_until(101 * NS_PER_MS);
    // R = 2·(50 ms + 40 µs for a 40-byte packet at 8 Mb/s) = 100.08 ms.
    let r = 100_080_000;
    assert_eq!(h.snd.srtt_ns(), r);
    assert_eq!(h.snd.min_rtt_ns(), r);
    // RTO = SRTT + 4·RTTVAR = R + 4·R/2 = 3R.
    assert_eq!(h.snd.rto_ns(), 3 * r);
}

#[test]
fn syn_loss_retransmits_after_initial_rto() {
    let mut h = Harness::new(ns2(), Some(9600), 8 * MBPS, 50 * NS_PER_MS);
    h.drop_fwd = Box::new(|t, s| s.is_syn() && t == 0);
    h.start();
    let done = h.run_until_complete(10 * NS_PER_SEC).unwrap();
    let st = h.snd.stats();
    assert_eq!(st.syn_timeouts, 1);
    assert_eq!(st.syns_sent, 2);
    assert_eq!(h.sent[1].0, NS_PER_SEC);
    // Timestamps identify the answered SYN: RTT from the second one.
    assert!(h.snd.min_rtt_ns() < 101 * NS_PER_MS);
    assert!(done > NS_PER_SEC && done < NS_PER_SEC + 400 * NS_PER_MS);
    assert_eq!(h.rcv.stats().bytes_delivered, 9600);
}

#[test]
fn syn_ack_loss_duplicate_syn_retriggers_syn_ack() {
    let mut cfg = ns2();
    cfg.timestamps = false;
    let mut h = Harness::new(cfg, Some(9600), 8 * MBPS, 50 * NS_PER_MS);
    h.drop_rev = Box::new(|t, s| s.is_syn() && t < NS_PER_SEC);
    h.start();
    // The second SYN leaves at 1 s; its SYN-ACK arrives ~100 ms later.
    h.run_until(NS_PER_SEC + 150 * NS_PER_MS);
    assert!(h.snd.is_established());
    // Karn: no sample from the retransmitted SYN; RFC 6298 §5: RTO is
    // re-initialized to 3 s when data transmission begins.
    assert_eq!(h.snd.stats().rtt_samples, 0);
    assert_eq!(h.snd.rto_ns(), 3 * NS_PER_SEC);
    h.run_until_complete(10 * NS_PER_SEC).unwrap();
    assert_eq!(h.rcv.stats().syn_acks_sent, 2);
    assert_eq!(h.snd.stats().syn_timeouts, 1);
    assert_eq!(h.rcv.stats().bytes_delivered, 9600);
    assert!(h.snd.stats().rtt_samples >= 1);
}

#[test]
fn single_drop_one_fast_retransmit_newreno() {
    let cfg = ns2();
    let mss = cfg.mss_bytes as u64;
    let n = 300 * mss;
    let mut h = Harness::new(cfg, Some(n), 8 * MBPS, 20 * NS_PER_MS);
    h.drop_fwd = drop_first_tx(mss, &[60]);
    h.start();
    h.run_until_complete(60 * NS_PER_SEC).unwrap();
    let st = h.snd.stats();
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.timeouts, 0);
    assert_eq!(st.retransmitted_segments, 1);
    assert_eq!(st.partial_acks, 0);
    assert_eq!(h.rcv.stats().bytes_delivered, n);
    assert_eq!(h.recovery.len(), 2);
    let enter = h.recovery[0];
    let exit = h.recovery[1];
    assert!(enter.entering && !exit.entering);
    // RFC 5681: ssthresh = FlightSize/2, cwnd = ssthresh + 3·SMSS.
    assert_eq!(enter.ssthresh_after, enter.flight_before / 2);
    assert_eq!(enter.cwnd_after, enter.ssthresh_after + 3 * mss);
    // RFC 6582 full ACK: cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS).
    assert_eq!(
        exit.cwnd_after,
        exit.ssthresh_after.min(exit.flight_after.max(mss) + mss)
    );
    assert!(exit.cwnd_after * 2 <= enter.cwnd_before + 2 * mss);
    // The retransmission is the dropped segment.
    let rtx: Vec<_> = h.data_sent().filter(|(_, s)| s.is_retransmit).collect();
    assert_eq!(rtx.len(), 1);
    assert_eq!(rtx[0].1.seq, seq_of(60, mss));
}

/// Multiple drops in one window: NewReno needs one RTT per loss (partial
/// ACKs), SACK repairs them in about one RTT.
/// `n` bytes over an 8 Mb/s, 100 ms RTT path with the window capped at
/// `cfg.rwnd_bytes` (TestReno, a fixed receive window), dropping the first
/// transmission of the listed segments; run to completion.
fn window_limited_with_drops(cfg: &TcpConfig, n: u64, drops: &[u64]) -> Harness {
    let mut h = Harness::with(
        cfg.clone(),
        Box::new(TestReno),
        Box::new(FixedRwnd(cfg.rwnd_bytes)),
        Some(n),
        8 * MBPS,
        50 * NS_PER_MS,
    );
    h.drop_fwd = drop_first_tx(cfg.mss_bytes as u64, drops);
    h.start();
    h.run_until_complete(60 * NS_PER_SEC).unwrap();
    h
}

#[test]
fn multiple_drops_newreno_vs_sack() {
    let drops = [100u64, 102, 104];
    let mut durations = Vec::new();
    for cfg in [ns2(), sack_cfg()] {
        let mut cfg = cfg;
        let mss = cfg.mss_bytes as u64;
        // A window of 40 segments spread by an 8 Mb/s bottleneck over a
        // 100 ms RTT: the ACK clock is even, as in congestion avoidance.
        cfg.rwnd_bytes = 40 * mss;
        // RFC 6298's 1 s minimum: with 200 ms the Impatient timer of RFC
        // 6582 (reset on the first partial ACK only) races the third RTT.
        cfg.min_rto_ns = NS_PER_SEC;
        let n = 400 * mss;
        let h = window_limited_with_drops(&cfg, n, &drops);
        let st = h.snd.stats();
        assert_eq!(st.fast_retransmits, 1, "{:?}", cfg.recovery);
        assert_eq!(st.timeouts, 0, "{:?}", cfg.recovery);
        let rtx: Vec<(u64, u64)> = h
            .data_sent()
            .filter(|x| x.1.is_retransmit)
            .map(|x| (x.0, (x.1.seq - 1) / mss))
            .collect();
        // A window-limited SACK sender may also spend RFC 6675's one rescue
        // retransmission (NextSeg rule 4) on the highest un-SACKed segment.
        assert!(st.rescue_retransmits <= 1);
        assert_eq!(
            st.retransmitted_segments - st.rescue_retransmits,
            3,
            "{:?} {st:?} {rtx:?}",
            cfg.recovery
        );
        assert_eq!(h.rcv.stats().bytes_delivered, n);
        assert_eq!(h.recovery.len(), 2);
        let rtt = h.snd.min_rtt_ns() as f64;
        let d = h.recovery[1].t - h.recovery[0].t;
        // Span from the first to the last repair of a dropped segment.
        let repairs: Vec<u64> = rtx.iter().filter(|x| drops.contains(&x.1)).map(|x| x.0).collect();
        assert_eq!(repairs.len(), 3);
        let span = (repairs[2] - repairs[0]) as f64 / rtt;
        durations.push((d as f64 / rtt, span));
        if cfg.recovery == Recovery::NewReno {
            assert_eq!(st.partial_acks, 2);
        }
    }
    // NewReno: one retransmission per round trip, three round trips.
    let (nr_dur, nr_span) = durations[0];
    assert!(nr_dur > 2.5 && nr_dur < 3.5, "{durations:?}");
    assert!(nr_span > 1.8 && nr_span < 2.5, "{durations:?}");
    // SACK: all three repairs leave within the first round trip of recovery
    // (the recovery itself lasts until they are acknowledged).
    let (sack_dur, sack_span) = durations[1];
    assert!(sack_span < 1.0, "{durations:?}");
    assert!(sack_dur < 2.0, "{durations:?}");
}

/// FACK against RFC 6675 SACK on a burst of three drops: FACK sees
/// snd.fack − snd.una > 3 segments on the first SACK after the burst and
/// recovers at once; RFC 6675 waits for three SACKed segments (or three
/// duplicate ACKs), two segment times later. Both repair the burst within a
/// round trip, with one window reduction and no timeout.
#[test]
fn fack_enters_recovery_earlier_than_sack_on_a_burst() {
    let drops = [100u64, 101, 102];
    let mut entered = Vec::new();
    for cfg in [sack_cfg(), fack_cfg()] {
        let mut cfg = cfg;
        let mss = cfg.mss_bytes as u64;
        cfg.rwnd_bytes = 40 * mss;
        let n = 400 * mss;
        let h = window_limited_with_drops(&cfg, n, &drops);
        let st = h.snd.stats();
        assert_eq!(st.fast_retransmits, 1, "{:?}", cfg.recovery);
        assert_eq!(st.timeouts, 0, "{:?}", cfg.recovery);
        assert_eq!(h.rcv.stats().bytes_delivered, n);
        let rtt = h.snd.min_rtt_ns();
        let repairs: Vec<u64> = h
            .data_sent()
            .filter(|x| x.1.is_retransmit && drops.contains(&((x.1.seq - 1) / mss)))
            .map(|x| x.0)
            .collect();
        assert_eq!(repairs.len(), 3, "{:?}", cfg.recovery);
        assert!(repairs[2] - repairs[0] < rtt, "{:?} {repairs:?}", cfg.recovery);
        let enter = h.recovery[0];
        assert_eq!(enter.ssthresh_after, enter.flight_before / 2);
        entered.push(enter.t);
    }
    // The ACKs of segments 103, 104, 105 arrive at least one data segment
    // time (1040 B at 8 Mb/s = 1.04 ms) apart: FACK leads by two of them,
    // at most, since the window-limited sender sends in pairs per delayed ACK.
    let seg_ns = 1_040_000;
    let lead = entered[0].saturating_sub(entered[1]);
    assert!(
        lead >= seg_ns && lead <= 4 * seg_ns,
        "SACK {} FACK {}",
        entered[0],
        entered[1]
    );
}

#[test]
fn sack_recovery_single_drop_sets_cwnd_to_ssthresh() {
    let cfg = sack_cfg();
    let mss = cfg.mss_bytes as u64;
    let n = 300 * mss;
    let mut h = Harness::new(cfg, Some(n), 8 * MBPS, 20 * NS_PER_MS);
    h.drop_fwd = drop_first_tx(mss, &[60]);
    h.start();
    h.run_until_complete(60 * NS_PER_SEC).unwrap();
    let st = h.snd.stats();
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.retransmitted_segments, 1);
    assert_eq!(st.timeouts, 0);
    let enter = h.recovery[0];
    assert_eq!(enter.ssthresh_after, enter.flight_before / 2);
    assert_eq!(enter.cwnd_after, enter.ssthresh_after);
    assert_eq!(h.rcv.stats().bytes_delivered, n);
}

#[test]
fn whole_window_lost_recovers_by_rto() {
    for cfg in [ns2(), sack_cfg()] {
        let mss = cfg.mss_bytes as u64;
        let n = 30 * mss;
        let mut h = Harness::new(cfg.clone(), Some(n), 8 * MBPS, 50 * NS_PER_MS);
        h.drop_fwd = drop_first_tx(mss, &(0..10).collect::<Vec<_>>());
        h.start();
        let done = h.run_until_complete(60 * NS_PER_SEC).unwrap();
        let st = h.snd.stats();
        assert_eq!(st.timeouts, 1);
        assert_eq!(st.fast_retransmits, 0);
        assert_eq!(h.rcv.stats().bytes_delivered, n);
        let (t, cwnd, ssthresh) = h.timeouts[0];
        // RTO armed at the first data send (after the handshake) for 3R.
        let r = 100_080_000;
        let first_send = h.data_sent().next().unwrap().0;
        assert_eq!(t, first_send + 3 * r);
        assert_eq!(cwnd, mss);
        assert_eq!(ssthresh, 5 * mss);
        assert!(done > t);
        assert_eq!(st.retransmitted_segments, 10);
    }
}

#[test]
fn repeated_timeouts_back_off_and_hold_ssthresh() {
    let cfg = ns2();
    let mss = cfg.mss_bytes as u64;
    let mut h = Harness::new(cfg, Some(20 * mss), 8 * MBPS, 50 * NS_PER_MS);
    // Lose the first segment three times.
    let mut lost = 0;
    h.drop_fwd = Box::new(move |_, s| {
        if s.seq == 1 && s.payload_bytes > 0 && lost < 3 {
            lost += 1;
            true
        } else {
            false
        }
    });
    h.start();
    h.run_until_complete(60 * NS_PER_SEC).unwrap();
    assert!(h.timeouts.len() >= 2);
    let gaps: Vec<u64> = h.timeouts.windows(2).map(|w| w[1].0 - w[0].0).collect();
    for g in gaps.windows(2) {
        assert_eq!(g[1], 2 * g[0]);
    }
    let ss: Vec<u64> = h.timeouts.iter().map(|x| x.2).collect();
    assert!(ss.iter().all(|&s| s == ss[0]), "{ss:?}");
    assert_eq!(h.rcv.stats().bytes_delivered, 20 * mss);
}

#[test]
fn tail_loss_without_dupacks_uses_rto() {
    let cfg = ns2();
    let mss = cfg.mss_bytes as u64;
    let mut h = Harness::new(cfg, Some(12 * mss), 8 * MBPS, 50 * NS_PER_MS);
    h.drop_fwd = drop_first_tx(mss, &[11]);
    h.start();
    h.run_until_complete(60 * NS_PER_SEC).unwrap();
    assert_eq!(h.snd.stats().timeouts, 1);
    assert_eq!(h.rcv.stats().bytes_delivered, 12 * mss);
}

#[test]
fn karn_rtt_without_timestamps() {
    let mut cfg = ns2();
    cfg.timestamps = false;
    let mss = cfg.mss_bytes as u64;
    let n = 200 * mss;
    let mut h = Harness::new(cfg, Some(n), 8 * MBPS, 20 * NS_PER_MS);
    h.drop_fwd = drop_first_tx(mss, &[50]);
    h.start();
    h.run_until_complete(60 * NS_PER_SEC).unwrap();
    assert!(h.sent.iter().all(|(_, s)| s.ts_val_ns.is_none()));
    let st = h.snd.stats();
    assert!(st.rtt_samples > 3);
    // One timed segment at a time: far fewer samples than ACKs.
    assert!(st.rtt_samples * 4 < st.acks_received);
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(h.rcv.stats().bytes_delivered, n);
    assert!(h.snd.min_rtt_ns() >= 40 * NS_PER_MS);
}

#[test]
fn timestamps_sample_every_ack() {
    let cfg = ns2();
    let mss = cfg.mss_bytes as u64;
    let mut h = Harness::new(cfg, Some(50 * mss), 8 * MBPS, 20 * NS_PER_MS);
    h.start();
    h.run_until_complete(60 * NS_PER_SEC).unwrap();
    let st = h.snd.stats();
    // One from the handshake and one per ACK of new data.
    assert_eq!(st.rtt_samples, 1 + 50);
}

fn rcv_with(cfg: TcpConfig) -> TcpReceiver {
    let w = cfg.rwnd_bytes;
    let mut r = TcpReceiver::new(cfg, Box::new(FixedRwnd(w)));
    let syn = Segment {
        seq: 0,
        flags: Flags::SYN,
        ts_val_ns: Some(1),
        ..Default::default()
    };
    r.on_segment(0, &syn);
    let sa = r.poll_transmit(0).unwrap();
    assert!(sa.is_syn() && sa.ack == 1);
    assert_eq!(sa.ts_ecr_ns, Some(1));
    assert!(r.poll_transmit(0).is_none());
    r
}

fn data(k: u64, mss: u64, ts: u64) -> Segment {
    Segment {
        seq: seq_of(k, mss),
        ack: 1,
        payload_bytes: mss as u32,
        flags: Flags::ACK,
        ts_val_ns: Some(ts),
        ts_ecr_ns: Some(0),
        ..Default::default()
    }
}

#[test]
fn delayed_ack_every_second_segment_and_on_timer() {
    let mut cfg = TcpConfig::linux();
    cfg.delayed_ack = Some(DelayedAck {
        segments: 2,
        timeout_ns: 200 * NS_PER_MS,
    });
    let mss = cfg.mss_bytes as u64;
    let mut r = rcv_with(cfg);
    let ms = NS_PER_MS;
    r.on_segment(10 * ms, &data(0, mss, 10));
    assert!(r.poll_transmit(10 * ms).is_none());
    assert_eq!(r.next_timeout(), Some(210 * ms));
    r.on_segment(11 * ms, &data(1, mss, 11));
    let a = r.poll_transmit(11 * ms).unwrap();
    assert_eq!(a.ack, seq_of(2, mss));
    // RFC 7323 §4.3: echo the earliest unacknowledged segment's TSval.
    assert_eq!(a.ts_ecr_ns, Some(10));
    assert_eq!(r.next_timeout(), None);
    r.on_segment(20 * ms, &data(2, mss, 20));
    assert!(r.poll_transmit(20 * ms).is_none());
    r.on_timeout(100 * ms); // early: nothing
    assert!(r.poll_transmit(100 * ms).is_none());
    r.on_timeout(220 * ms);
    let a = r.poll_transmit(220 * ms).unwrap();
    assert_eq!(a.ack, seq_of(3, mss));
    assert_eq!(a.ts_ecr_ns, Some(20));
    assert_eq!(r.stats().delayed_ack_timeouts, 1);
    // Out of order: immediate ACK; filling the hole: immediate ACK.
    r.on_segment(230 * ms, &data(4, mss, 230));
    let a = r.poll_transmit(230 * ms).unwrap();
    assert_eq!(a.ack, seq_of(3, mss));
    assert_eq!(
        a.sack_blocks(),
        &[SackBlock {
            start: seq_of(4, mss),
            end: seq_of(5, mss)
        }]
    );
    assert_eq!(a.ts_ecr_ns, Some(20));
    r.on_segment(240 * ms, &data(3, mss, 240));
    let a = r.poll_transmit(240 * ms).unwrap();
    assert_eq!(a.ack, seq_of(5, mss));
    assert_eq!(a.sack_len, 0);
    assert_eq!(a.ts_ecr_ns, Some(240));
    // Duplicate: immediate ACK.
    r.on_segment(250 * ms, &data(1, mss, 250));
    assert_eq!(r.poll_transmit(250 * ms).unwrap().ack, seq_of(5, mss));
    let st = r.stats();
    assert_eq!(st.bytes_delivered, 5 * mss);
    assert_eq!(st.segments_received, 6);
    assert_eq!(st.duplicate_segments, 1);
    assert_eq!(st.out_of_order_segments, 1);
    assert_eq!(st.acks_sent, 1 + 5);
}

#[test]
fn ack_every_segment_without_delayed_ack() {
    let cfg = ns2();
    let mss = cfg.mss_bytes as u64;
    let mut r = rcv_with(cfg);
    for k in 0..5 {
        r.on_segment(k, &data(k, mss, k));
        assert_eq!(r.poll_transmit(k).unwrap().ack, seq_of(k + 1, mss));
    }
}

#[test]
fn sack_block_order_rfc2018() {
    let cfg = sack_cfg();
    let mss = cfg.mss_bytes as u64;
    let mut r = rcv_with(cfg);
    let blk = |a: u64, b: u64| SackBlock {
        start: seq_of(a, mss),
        end: seq_of(b, mss),
    };
    r.on_segment(1, &data(0, mss, 1));
    r.poll_transmit(1).unwrap();
    // Segments 1, 3, 5, 7 lost.
    r.on_segment(2, &data(2, mss, 2));
    assert_eq!(r.poll_transmit(2).unwrap().sack_blocks(), &[blk(2, 3)]);
    r.on_segment(3, &data(4, mss, 3));
    assert_eq!(r.poll_transmit(3).unwrap().sack_blocks(), &[blk(4, 5), blk(2, 3)]);
    r.on_segment(4, &data(6, mss, 4));
    assert_eq!(
        r.poll_transmit(4).unwrap().sack_blocks(),
        &[blk(6, 7), blk(4, 5), blk(2, 3)]
    );
    r.on_segment(5, &data(8, mss, 5));
    assert_eq!(
        r.poll_transmit(5).unwrap().sack_blocks(),
        &[blk(8, 9), blk(6, 7), blk(4, 5)]
    );
    // Segment 3 fills the gap between 2 and 4: first block is the merged one.
    r.on_segment(6, &data(3, mss, 6));
    assert_eq!(
        r.poll_transmit(6).unwrap().sack_blocks(),
        &[blk(2, 5), blk(8, 9), blk(6, 7)]
    );
    // Segment 1 advances the cumulative ACK past [2, 5).
    r.on_segment(7, &data(1, mss, 7));
    let a = r.poll_transmit(7).unwrap();
    assert_eq!(a.ack, seq_of(5, mss));
    assert_eq!(a.sack_blocks(), &[blk(8, 9), blk(6, 7)]);
}

/// The exact lossless slow-start model of docs/models/latency-model.md.
fn exact_model_ns(n_segs: u64, iw: u64, r_ns: u64, t_ns: u64) -> u64 {
    // Q = max(0, ceil(log2 x)), x = (R + T)/(I·T): smallest q with 2^q·I·T ≥ R + T.
    let mut q = 0u32;
    while (1u64 << q) * iw * t_ns < r_ns + t_ns {
        q += 1;
    }
    // K = ceil(log2(1 + O/(I·S))): smallest k with I·(2^k − 1) ≥ n.
    let mut k = 0u32;
    while iw * ((1u64 << k) - 1) < n_segs {
        k += 1;
    }
    let p = q.min(k - 1) as u64;
    2 * r_ns + n_segs * t_ns + p * (r_ns + t_ns) - ((1u64 << p) - 1) * iw * t_ns
}

#[test]
fn lossless_completion_matches_exact_model() {
    let rate = 8 * MBPS;
    let one_way = 50 * NS_PER_MS;
    let mut max_err = 0;
    for iw in [1u32, 3, 10] {
        let mut cfg = ns2();
        cfg.initial_window_segments = iw;
        let mss = cfg.mss_bytes as u64;
        let probe = super::testutil::Link::new(rate, one_way);
        let t = probe.tx_ns(mss as u32 + cfg.header_bytes); // S/C = 1 ms
        let ack_t = probe.tx_ns(cfg.header_bytes);
        // The RTT a data segment sees: propagation both ways + ACK serialization.
        let r = 2 * one_way + ack_t;
        for n in 1..=1000u64 {
            let mut h = Harness::new(cfg.clone(), Some(n * mss), rate, one_way);
            h.start();
            let done = h.run_until_complete(600 * NS_PER_SEC).unwrap();
            let model = exact_model_ns(n, iw as u64, r, t);
            let err = done.abs_diff(model);
            max_err = max_err.max(err);
            assert!(err <= t, "I={iw} n={n}: simulated {done} ns, model {model} ns");
            assert_eq!(h.snd.stats().timeouts, 0);
        }
    }
    // The only difference: the SYN-ACK's serialization (40 B = 40 µs).
    assert!(max_err <= 40_000, "max error {max_err} ns");
}

#[test]
fn pacing_spreads_window_over_rtt() {
    let mut cfg = ns2();
    cfg.pacing = Some(Pacing {
        ss_factor: 2.0,
        ca_factor: 1.2,
    });
    let mss = cfg.mss_bytes as u64;
    let mut h = Harness::new(cfg.clone(), None, 10_000 * MBPS, 50 * NS_PER_MS);
    h.start();
    h.run_until(150 * NS_PER_MS);
    let srtt = h.snd.srtt_ns();
    let cwnd = 10 * mss;
    let expected = (1000.0 * srtt as f64 / (2.0 * cwnd as f64)).round() as u64;
    let sends: Vec<u64> = h.data_sent().map(|x| x.0).take(10).collect();
    assert_eq!(sends.len(), 10);
    for w in sends.windows(2) {
        assert_eq!(w[1] - w[0], expected);
    }
    // The initial window leaves over srtt/2 (factor 2), not in one burst.
    assert!(sends[9] - sends[0] >= srtt * 4 / 10);
}

#[test]
fn pacing_in_congestion_avoidance_uses_ca_factor() {
    let mut cfg = ns2();
    let (ss, ca) = (2.0, 1.2);
    cfg.pacing = Some(Pacing {
        ss_factor: ss,
        ca_factor: ca,
    });
    let mss = cfg.mss_bytes as u64;
    let mut h = Harness::new(cfg, None, 1000 * MBPS, 25 * NS_PER_MS);
    // One drop puts the sender in congestion avoidance.
    h.drop_fwd = drop_first_tx(mss, &[30]);
    h.start();
    // Record (time, cwnd, ssthresh, srtt) at every data send.
    let mut log: Vec<(u64, u64, u64, u64)> = Vec::new();
    let mut seen = 0;
    while h.now < 3 * NS_PER_SEC && h.step() {
        for &(t, s) in &h.sent[seen..] {
            if s.payload_bytes > 0 {
                log.push((t, h.snd.cwnd_bytes(), h.snd.ssthresh_bytes(), h.snd.srtt_ns()));
            }
        }
        seen = h.sent.len();
    }
    let mut exact_ca = 0;
    for w in log.windows(2) {
        let (t0, cwnd, ssthresh, srtt) = w[0];
        let factor = if cwnd < ssthresh { ss } else { ca };
        let gap = (1000.0 * srtt as f64 / (factor * cwnd as f64)).round() as u64;
        let actual = w[1].0 - t0;
        // Never faster than the pacing rate.
        assert!(actual + 1 >= gap, "gap {actual} < {gap} at {t0}");
        if cwnd >= ssthresh && actual == gap {
            exact_ca += 1;
        }
    }
    assert!(exact_ca > 10, "{exact_ca}");
}

#[test]
fn idle_restart_resets_cwnd_to_iw() {
    let mut cfg = ns2();
    cfg.idle_restart = true;
    let mss = cfg.mss_bytes as u64;
    let mut h = Harness::new(cfg, Some(200 * mss), 8 * MBPS, 20 * NS_PER_MS);
    h.start();
    h.run_until_complete(60 * NS_PER_SEC).unwrap();
    assert!(h.snd.cwnd_bytes() > 10 * mss);
    let t = h.now + 5 * NS_PER_SEC;
    h.run_until(t);
    h.snd.add_app_bytes(100 * mss);
    h.poll_sender();
    assert_eq!(h.snd.stats().idle_restarts, 1);
    assert!(!h.snd.is_complete());
    // Exactly IW segments leave at once.
    let burst = h.data_sent().filter(|x| x.0 == t).count();
    assert_eq!(burst, 10);
    h.run_until_complete(120 * NS_PER_SEC).unwrap();
    assert_eq!(h.rcv.stats().bytes_delivered, 300 * mss);
}

/// A receiver window controller that closes the window for one second once
/// 20 segments have been delivered (only data arrivals tell it the time).
struct ClosingWindow {
    mss: u64,
    delivered: u64,
    closed_at: Option<u64>,
    open: bool,
}

impl ClosingWindow {
    fn update(&mut self, now: u64) {
        if self.delivered >= 20 * self.mss && self.closed_at.is_none() {
            self.closed_at = Some(now);
        }
        if let Some(t) = self.closed_at {
            self.open = now >= t + NS_PER_SEC;
        }
    }
}

impl RwndController for ClosingWindow {
    fn name(&self) -> &'static str {
        "closing"
    }
    fn on_segment(&mut self, a: &SegmentArrival) {
        self.update(a.now_ns);
    }
    fn on_copied(&mut self, now: u64, bytes: u64) {
        self.delivered += bytes;
        self.update(now);
    }
    fn rwnd_bytes(&self) -> u64 {
        if self.closed_at.is_some() && !self.open {
            0
        } else {
            1 << 30
        }
    }
}

#[test]
fn zero_window_persist_probes() {
    let cfg = ns2();
    let mss = cfg.mss_bytes as u64;
    let mut h = Harness::with(
        cfg,
        Box::new(TestReno),
        Box::new(ClosingWindow {
            mss,
            delivered: 0,
            closed_at: None,
            open: false,
        }),
        Some(60 * mss),
        8 * MBPS,
        20 * NS_PER_MS,
    );
    h.start();
    h.run_until_complete(120 * NS_PER_SEC).unwrap();
    let st = h.snd.stats();
    assert!(st.window_probes >= 1, "{st:?}");
    assert_eq!(h.rcv.stats().bytes_delivered, 60 * mss);
}

#[test]
fn small_rwnd_limits_flight() {
    let mut cfg = ns2();
    let mss = cfg.mss_bytes as u64;
    cfg.rwnd_bytes = 4 * mss;
    let mut h = Harness::new(cfg, Some(100 * mss), 100 * MBPS, 20 * NS_PER_MS);
    h.start();
    let mut max_flight = 0;
    while !h.snd.is_complete() && h.step() {
        max_flight = max_flight.max(h.snd.snd_max() - h.snd.snd_una());
    }
    assert_eq!(max_flight, 4 * mss);
    assert_eq!(h.rcv.stats().bytes_delivered, 100 * mss);
}

#[test]
fn bulk_flow_through_small_buffer_keeps_link_busy() {
    for cfg in [ns2(), sack_cfg(), TcpConfig::linux()] {
        let rate = 10 * MBPS;
        let one_way = 20 * NS_PER_MS;
        let mut h = Harness::new(cfg.clone(), None, rate, one_way);
        // Buffer of one bandwidth-delay product (50 packets of 1000 B).
        h.fwd.limit_pkts = Some(50);
        h.start();
        let dur = 30 * NS_PER_SEC;
        h.run_until(dur);
        let st = h.snd.stats();
        let delivered = h.rcv.stats().bytes_delivered;
        let wire = cfg.mss_bytes as f64 + cfg.header_bytes as f64;
        let goodput_pkts = delivered as f64 / cfg.mss_bytes as f64;
        let util = goodput_pkts * wire * 8.0 / (rate as f64 * 30.0);
        assert!(util > 0.9, "{:?}: utilisation {util}", cfg.recovery);
        assert!(st.fast_retransmits > 3, "{st:?}");
        assert!(h.fwd.drops > 0);
        // Every byte delivered was sent; in-order delivery only.
        assert_eq!(delivered + 1, h.rcv.rcv_nxt());
        assert!(st.bytes_acked <= delivered);
    }
}

#[test]
fn garbage_segments_never_panic() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for round in 0..200 {
        let cfg = if round % 2 == 0 { ns2() } else { TcpConfig::linux() };
        let mss = cfg.mss_bytes as u64;
        let mut h = Harness::new(cfg, Some(50 * mss), 8 * MBPS, 5 * NS_PER_MS);
        h.start();
        for _ in 0..(round % 40) {
            h.step();
        }
        for _ in 0..200 {
            let pick = |rng: &mut XorShift| match rng.below(4) {
                0 => rng.next_u64(),
                1 => rng.below(200 * mss),
                2 => u64::MAX - rng.below(10),
                _ => rng.below(3),
            };
            let mut seg = Segment {
                seq: pick(&mut rng),
                ack: pick(&mut rng),
                payload_bytes: match rng.below(3) {
                    0 => 0,
                    1 => rng.below(2000) as u32,
                    _ => rng.next_u64() as u32,
                },
                flags: Flags(rng.next_u64() as u8),
                rwnd_bytes: pick(&mut rng),
                ts_val_ns: if rng.below(2) == 0 {
                    Some(pick(&mut rng))
                } else {
                    None
                },
                ts_ecr_ns: if rng.below(2) == 0 {
                    Some(pick(&mut rng))
                } else {
                    None
                },
                sack_len: rng.below(5) as u8,
                ..Default::default()
            };
            for b in seg.sack.iter_mut() {
                b.start = pick(&mut rng);
                b.end = pick(&mut rng);
            }
            seg.sack_len = seg.sack_len.min(3);
            let now = h.now + rng.below(NS_PER_SEC);
            h.snd.on_segment(now, &seg);
            while h.snd.poll_transmit(now).is_some() {}
            h.snd.on_timeout(now + rng.below(10 * NS_PER_SEC));
            while h.snd.poll_transmit(now).is_some() {}
            h.rcv.on_segment(now, &seg);
            while h.rcv.poll_transmit(now).is_some() {}
            let _ = h.snd.next_timeout();
            let _ = h.rcv.next_timeout();
        }
    }
}

#[test]
fn sender_ignores_unacceptable_acks() {
    let cfg = ns2();
    let mut s = TcpSender::new(cfg, Box::new(TestReno), Some(10_000));
    // ACKs before connect or without SYN are ignored.
    s.on_segment(
        0,
        &Segment {
            ack: 5,
            flags: Flags::ACK,
            ..Default::default()
        },
    );
    assert!(s.poll_transmit(0).is_none());
    s.connect(0);
    let syn = s.poll_transmit(0).unwrap();
    assert!(syn.is_syn());
    // A SYN-ACK acknowledging the wrong number is ignored.
    s.on_segment(
        1,
        &Segment {
            ack: 7,
            flags: Flags::SYN_ACK,
            ..Default::default()
        },
    );
    assert!(!s.is_established());
    s.on_segment(
        10,
        &Segment {
            ack: 1,
            flags: Flags::SYN_ACK,
            rwnd_bytes: 1 << 20,
            ..Default::default()
        },
    );
    assert!(s.is_established());
    let mut n = 0;
    while s.poll_transmit(10).is_some() {
        n += 1;
    }
    assert_eq!(n, 10);
    let una = s.snd_una();
    // ACK beyond snd_max: ignored.
    s.on_segment(
        11,
        &Segment {
            ack: 1 << 40,
            flags: Flags::ACK,
            rwnd_bytes: 1 << 20,
            ..Default::default()
        },
    );
    assert_eq!(s.snd_una(), una);
    assert_eq!(s.stats().acks_received, 0);
}

#[test]
fn on_timeout_early_is_a_no_op() {
    let cfg = ns2();
    let mss = cfg.mss_bytes as u64;
    let mut h = Harness::new(cfg, Some(100 * mss), 8 * MBPS, 20 * NS_PER_MS);
    h.start();
    h.run_until(200 * NS_PER_MS);
    let before = h.snd.stats();
    let cwnd = h.snd.cwnd_bytes();
    h.snd.on_timeout(h.now);
    assert_eq!(h.snd.stats(), before);
    assert_eq!(h.snd.stats().timeouts, 0);
    assert_eq!(h.snd.cwnd_bytes(), cwnd);
}

#[test]
fn production_controllers_complete_and_match_model() {
    use crate::cc::by_name;
    // Bulk transfer through a small buffer with each production controller
    // and both recovery algorithms.
    for name in ["newreno", "cubic"] {
        for cfg in [ns2(), sack_cfg(), TcpConfig::linux()] {
            let mss = cfg.mss_bytes as u64;
            let n = 3000 * mss;
            let mut h = Harness::with(
                cfg.clone(),
                by_name(name, mss).unwrap(),
                Box::new(FixedRwnd(cfg.rwnd_bytes)),
                Some(n),
                10 * MBPS,
                20 * NS_PER_MS,
            );
            h.fwd.limit_pkts = Some(30);
            h.start();
            h.run_until_complete(600 * NS_PER_SEC)
                .unwrap_or_else(|| panic!("{name} {:?} incomplete", cfg.recovery));
            assert_eq!(h.rcv.stats().bytes_delivered, n);
            assert!(h.snd.stats().fast_retransmits > 0);
            assert_eq!(h.snd.cc().name(), name);
        }
    }
    // The exact slow-start model with the production NewReno.
    let rate = 8 * MBPS;
    let one_way = 50 * NS_PER_MS;
    for iw in [1u32, 3, 10] {
        let mut cfg = ns2();
        cfg.initial_window_segments = iw;
        let mss = cfg.mss_bytes as u64;
        for n in [1u64, 2, 7, 30, 100, 333, 1000] {
            let mut h = Harness::with(
                cfg.clone(),
                by_name("newreno", mss).unwrap(),
                Box::new(FixedRwnd(cfg.rwnd_bytes)),
                Some(n * mss),
                rate,
                one_way,
            );
            h.start();
            let done = h.run_until_complete(600 * NS_PER_SEC).unwrap();
            let model = exact_model_ns(n, iw as u64, 2 * one_way + 40_000, 1_000_000);
            assert!(done.abs_diff(model) <= 1_000_000, "I={iw} n={n}");
        }
    }
}

/// `cargo test --release -p latlab-proto tcp::tests::perf -- --ignored --nocapture`
#[test]
#[ignore]
fn perf_five_million_segments() {
    let cfg = TcpConfig::linux();
    let mss = cfg.mss_bytes as u64;
    let mut h = Harness::with(
        cfg.clone(),
        crate::cc::by_name("cubic", mss).unwrap(),
        Box::new(FixedRwnd(cfg.rwnd_bytes)),
        None,
        200 * MBPS,
        10 * NS_PER_MS,
    );
    h.fwd.limit_pkts = Some(100);
    h.start();
    let t = std::time::Instant::now();
    let mut seen = 0;
    while h.snd.stats().segments_sent < 5_000_000 {
        for _ in 0..10_000 {
            h.step();
        }
        // Keep the logs from growing without bound.
        seen += h.sent.len();
        h.sent.clear();
        h.acks.clear();
    }
    let el = t.elapsed();
    eprintln!(
        "{} segments, {} simulated s, {:?} wall, {:?}",
        seen,
        h.now / NS_PER_SEC,
        el,
        h.snd.stats()
    );
}

/// `new_chunk` then `send_chunk` is `add_app_bytes` then `poll_transmit`:
/// two senders, one handed each chunk the first way (as an MPTCP subflow
/// is) and one the second, fed the same ACKs over a lossy path with an
/// idle gap, send the same segments and end in the same state.
#[test]
fn send_chunk_is_add_app_bytes_then_poll_transmit() {
    for cfg in [ns2(), sack_cfg(), fack_cfg(), TcpConfig::linux()] {
        let mss = cfg.mss_bytes as u64;
        let one_way_ns = 10 * NS_PER_MS;
        let mut a = TcpSender::new(cfg.clone(), Box::new(TestReno), Some(0));
        let mut b = TcpSender::new(cfg.clone(), Box::new(TestReno), Some(0));
        let mut rcv = TcpReceiver::new(cfg.clone(), Box::new(FixedRwnd(cfg.rwnd_bytes)));
        // (arrival time, segment), in sending order.
        let mut to_rcv: Vec<(u64, Segment)> = Vec::new();
        let mut to_snd: Vec<(u64, Segment)> = Vec::new();
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut chunks = 0;
        a.connect(0);
        b.connect(0);
        let mut now = 0;
        while now < 4 * NS_PER_SEC {
            for (t, seg) in std::mem::take(&mut to_snd) {
                if t <= now {
                    a.on_segment(now, &seg);
                    b.on_segment(now, &seg);
                } else {
                    to_snd.push((t, seg));
                }
            }
            if a.next_timeout().is_some_and(|t| t <= now) {
                a.on_timeout(now);
                b.on_timeout(now);
            }
            assert_eq!(a.next_timeout(), b.next_timeout());
            let mut out = Vec::new();
            loop {
                // What the sender owes of its own first (SYN, retransmissions).
                let owed = a.poll_transmit(now);
                assert_eq!(owed, b.poll_transmit(now));
                if let Some(seg) = owed {
                    out.push(seg);
                    continue;
                }
                // Then new data, offered in varying amounts (some below one
                // segment), except during an idle gap longer than the RTO.
                if (1_500..2_200).contains(&(now / NS_PER_MS)) {
                    break;
                }
                let want = 1 + rng.below(3 * mss);
                let Some(chunk) = a.new_chunk(now, want) else {
                    assert_eq!(b.new_data_len(now, want), None);
                    break;
                };
                assert_eq!(b.new_data_len(now, want), Some(chunk.len_bytes()));
                let seg = a.send_chunk(now, chunk);
                b.add_app_bytes(chunk.len_bytes() as u64);
                assert_eq!(Some(seg), b.poll_transmit(now));
                chunks += 1;
                out.push(seg);
            }
            for seg in out {
                // One data segment in 25 is lost, retransmissions included.
                if seg.payload_bytes == 0 || rng.below(25) != 0 {
                    to_rcv.push((now + one_way_ns, seg));
                }
            }
            for (t, seg) in std::mem::take(&mut to_rcv) {
                if t <= now {
                    rcv.on_segment(now, &seg);
                } else {
                    to_rcv.push((t, seg));
                }
            }
            if rcv.next_timeout().is_some_and(|t| t <= now) {
                rcv.on_timeout(now);
            }
            while let Some(ack) = rcv.poll_transmit(now) {
                to_snd.push((now + one_way_ns, ack));
            }
            now += NS_PER_MS;
        }
        let st = a.stats();
        assert_eq!(st, b.stats());
        assert_eq!((a.cwnd_bytes(), a.snd_una()), (b.cwnd_bytes(), b.snd_una()));
        assert!(chunks > 100 && st.retransmitted_segments > 0, "{st:?}");
        if cfg.idle_restart {
            assert!(st.idle_restarts > 0, "{st:?}");
        }
    }
}
