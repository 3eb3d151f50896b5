//! Dialogue tests of ECN (RFC 3168 §6.1), segment by segment in the style
//! of smoltcp's socket tests: the ECN-setup handshake, the receiver's ECE
//! until CWR, and the sender's one reduction per window with CWR on the
//! next new data.
//!
//! Sizing as in `dialogue_tests`: MSS 1000, ISS 0 (data segment `k` is
//! `seq = 1 + 1000·k`), IW 10, timestamps off, the tests' Reno controller
//! (ssthresh = max(FlightSize/2, 2·SMSS)), one ACK per segment.

use super::testutil::TestReno;
use super::*;
use crate::segment::{Flags, SackBlock, Segment};
use crate::{Ecn, NS_PER_MS};

const MSS: u64 = 1000;

fn cfg(ecn: bool) -> TcpConfig {
    let mut c = TcpConfig::ns2();
    c.mss_bytes = MSS as u32;
    c.timestamps = false;
    c.ecn = ecn;
    c
}

fn receiver(ecn: bool) -> TcpReceiver {
    let c = cfg(ecn);
    TcpReceiver::new(c.clone(), Box::new(FixedRwnd(c.rwnd_bytes)))
}

fn ack(ack: u64, flags: Flags) -> Segment {
    Segment {
        ack,
        flags: Flags::ACK | flags,
        rwnd_bytes: LARGE_RWND_BYTES,
        ..Default::default()
    }
}

fn data(k: u64, flags: Flags) -> Segment {
    Segment {
        seq: 1 + k * MSS,
        ack: 1,
        payload_bytes: MSS as u32,
        flags: Flags::ACK | flags,
        ..Default::default()
    }
}

/// The handshake between a sender and a receiver with `ecn` on each side;
/// returns both ends, established, and the SYN and SYN-ACK flags.
fn handshake(sender_ecn: bool, receiver_ecn: bool) -> (TcpSender, TcpReceiver, Flags, Flags) {
    let mut s = TcpSender::new(cfg(sender_ecn), Box::new(TestReno), None);
    let mut r = receiver(receiver_ecn);
    s.connect(0);
    let syn = s.poll_transmit(0).expect("SYN");
    assert_eq!(s.ecn_codepoint(&syn), Ecn::NotEct, "§6.1.1: the SYN is Not-ECT");
    r.on_segment_ecn(50 * NS_PER_MS, &syn, Ecn::NotEct);
    let syn_ack = r.poll_transmit(50 * NS_PER_MS).expect("SYN-ACK");
    s.on_segment(100 * NS_PER_MS, &syn_ack);
    assert!(s.is_established());
    (s, r, syn.flags, syn_ack.flags)
}

#[test]
fn ecn_is_agreed_only_when_both_ends_want_it() {
    let (s, r, syn, syn_ack) = handshake(true, true);
    assert_eq!(syn, Flags::SYN | Flags::ECE | Flags::CWR, "ECN-setup SYN");
    assert_eq!(syn_ack, Flags::SYN_ACK | Flags::ECE, "ECN-setup SYN-ACK");
    assert!(s.ecn_on() && r.ecn_on());

    let (s, r, syn, syn_ack) = handshake(true, false);
    assert_eq!(
        (syn, syn_ack),
        (Flags::SYN | Flags::ECE | Flags::CWR, Flags::SYN_ACK)
    );
    assert!(!s.ecn_on() && !r.ecn_on());

    let (s, r, syn, syn_ack) = handshake(false, true);
    assert_eq!((syn, syn_ack), (Flags::SYN, Flags::SYN_ACK));
    assert!(!s.ecn_on() && !r.ecn_on());
}

#[test]
fn new_data_is_ect0_and_retransmissions_and_syns_are_not() {
    let (mut s, _, _, _) = handshake(true, true);
    let s0 = s.poll_transmit(100 * NS_PER_MS).expect("S0");
    assert_eq!((s0.seq, s0.is_retransmit), (1, false));
    assert_eq!(s.ecn_codepoint(&s0), Ecn::Ect0);
    while s.poll_transmit(100 * NS_PER_MS).is_some() {}
    // No ACK: the RTO (300 ms after the handshake's 100 ms sample) resends S0.
    let due = s.next_timeout().expect("RTO armed");
    s.on_timeout(due);
    let rx = s.poll_transmit(due).expect("retransmission");
    assert_eq!((rx.seq, rx.is_retransmit), (1, true));
    assert_eq!(
        s.ecn_codepoint(&rx),
        Ecn::NotEct,
        "§6.1.5: retransmissions are Not-ECT"
    );
    assert!(
        !rx.flags.contains(Flags::CWR),
        "§6.1.5: no CWR on a retransmission"
    );

    // Without ECN agreed nothing is ECT.
    let (mut s, _, _, _) = handshake(true, false);
    let s0 = s.poll_transmit(100 * NS_PER_MS).expect("S0");
    assert_eq!(s.ecn_codepoint(&s0), Ecn::NotEct);
}

#[test]
fn receiver_sets_ece_from_a_ce_segment_until_cwr() {
    let (_, mut r, _, _) = handshake(true, true);
    let mut t = 200 * NS_PER_MS;
    let mut exchange = |k: u64, flags: Flags, ecn: Ecn| {
        t += NS_PER_MS;
        r.on_segment_ecn(t, &data(k, flags), ecn);
        let a = r.poll_transmit(t).expect("one ACK per segment");
        assert_eq!(a.ack, 1 + (k + 1) * MSS);
        assert!(r.poll_transmit(t).is_none());
        a.flags
    };
    let (ack, ece) = (Flags::ACK, Flags::ACK | Flags::ECE);
    assert_eq!(exchange(0, Flags::default(), Ecn::Ect0), ack);
    assert_eq!(exchange(1, Flags::default(), Ecn::Ce), ece, "CE → ECE");
    assert_eq!(exchange(2, Flags::default(), Ecn::Ect0), ece, "ECE until CWR");
    assert_eq!(exchange(3, Flags::default(), Ecn::Ect0), ece, "ECE until CWR");
    assert_eq!(exchange(4, Flags::CWR, Ecn::Ect0), ack, "CWR ends the echo");
    assert_eq!(exchange(5, Flags::default(), Ecn::Ect0), ack);
    assert_eq!(
        exchange(6, Flags::CWR, Ecn::Ce),
        ece,
        "a CE segment with CWR echoes again"
    );
    assert_eq!(exchange(7, Flags::default(), Ecn::Ect0), ece);
    assert_eq!(r.stats().ce_segments, 2);

    // A receiver that did not agree to ECN never echoes.
    let (_, mut plain, _, _) = handshake(true, false);
    plain.on_segment_ecn(t, &data(0, Flags::default()), Ecn::Ce);
    assert_eq!(plain.poll_transmit(t).expect("ACK").flags, Flags::ACK);
}

#[test]
fn sender_reduces_once_per_window_and_marks_the_next_new_segment_cwr() {
    let (mut s, _, _, _) = handshake(true, true);
    let mut now = 100 * NS_PER_MS;
    // IW 10: S0..S9, all ECT(0), no CWR.
    for k in 0..10 {
        let seg = s.poll_transmit(now).expect("initial window");
        assert_eq!(seg.seq, 1 + k * MSS);
        assert_eq!(s.ecn_codepoint(&seg), Ecn::Ect0);
        assert!(!seg.flags.contains(Flags::CWR));
    }
    assert!(s.poll_transmit(now).is_none());
    assert_eq!(s.cwnd_bytes(), 10 * MSS);

    // A burst of CE marks in one window: every ACK of S0..S4 carries ECE.
    // The first is a congestion event: ssthresh = cwnd = FlightSize/2 =
    // (10 − 1 acked)·MSS/2; no retransmission; no growth on the others.
    now += 100 * NS_PER_MS;
    s.on_segment(now, &ack(1 + MSS, Flags::ECE));
    assert_eq!((s.cwnd_bytes(), s.ssthresh_bytes()), (4500, 4500));
    assert_eq!(s.stats().ecn_reductions, 1);
    for k in 2..=5 {
        s.on_segment(now, &ack(1 + k * MSS, Flags::ECE));
        assert_eq!(s.cwnd_bytes(), 4500, "ACK of S{}: once per window", k - 1);
        assert!(s.poll_transmit(now).is_none(), "flight 10−{k} segments ≥ cwnd");
    }
    // S5 and S6 acked without ECE (the marks were on S0..S4): congestion
    // avoidance from 4500, flight 3000 → room for one segment. The next
    // new segment, S10, carries CWR, is ECT(0), is not a resend.
    s.on_segment(now, &ack(1 + 6 * MSS, Flags::default()));
    assert!(s.poll_transmit(now).is_none(), "flight 4000 + 1000 > cwnd");
    s.on_segment(now, &ack(1 + 7 * MSS, Flags::default()));
    let s10 = s.poll_transmit(now).expect("S10");
    assert_eq!((s10.seq, s10.is_retransmit), (1 + 10 * MSS, false));
    assert!(
        s10.flags.contains(Flags::CWR),
        "§6.1.2: CWR on the first new data"
    );
    assert_eq!(s.ecn_codepoint(&s10), Ecn::Ect0);
    let next = s.poll_transmit(now);
    assert!(next.is_none_or(|n| !n.flags.contains(Flags::CWR)), "CWR once");

    // ECE on the ACKs up to S9 (sent before the reduction) is the same
    // window's echo: no second reduction, even at the window's edge.
    for k in 8..=10 {
        s.on_segment(now, &ack(1 + k * MSS, Flags::ECE));
        while s.poll_transmit(now).is_some() {}
    }
    assert_eq!(s.stats().ecn_reductions, 1);
    assert_eq!(s.stats().retransmitted_segments, 0, "ECN never retransmits");
    assert_eq!(s.stats().ece_acks_received, 8);
    // An ECE ACK of S10, sent after the reduction, is a new window's mark.
    let cwnd = s.cwnd_bytes();
    s.on_segment(now, &ack(1 + 11 * MSS, Flags::ECE));
    assert_eq!(s.stats().ecn_reductions, 2);
    assert!(s.cwnd_bytes() < cwnd);
}

/// Sender and receiver back to back, one data segment marked CE on the
/// way: the whole RFC 3168 loop, each segment checked.
#[test]
fn the_ce_ece_cwr_loop_end_to_end() {
    let (mut s, mut r, _, _) = handshake(true, true);
    let mut now = 100 * NS_PER_MS;
    let mut window = Vec::new();
    while let Some(seg) = s.poll_transmit(now) {
        window.push((seg, s.ecn_codepoint(&seg)));
    }
    assert_eq!(window.len(), 10);
    now += 50 * NS_PER_MS;
    let mut acks = Vec::new();
    for (i, &(seg, ecn)) in window.iter().enumerate() {
        // A queue on the path marks S3.
        let ecn = if i == 3 { Ecn::Ce } else { ecn };
        r.on_segment_ecn(now, &seg, ecn);
        acks.extend(std::iter::from_fn(|| r.poll_transmit(now)));
    }
    let ece: Vec<bool> = acks.iter().map(|a| a.flags.contains(Flags::ECE)).collect();
    assert_eq!(
        ece,
        [false, false, false, true, true, true, true, true, true, true]
    );
    now += 50 * NS_PER_MS;
    let mut sent = Vec::new();
    for a in &acks {
        s.on_segment(now, a);
        sent.extend(std::iter::from_fn(|| s.poll_transmit(now)));
    }
    // Slow start grew cwnd by one MSS on each of the three ACKs before the
    // mark, each sending two new segments (S10..S15, before the cut: no
    // CWR); the ECE ACK of S3 halved the flight (S4..S15, 12 segments)
    // once; the six ECE ACKs after it changed nothing.
    assert_eq!(sent.len(), 6);
    assert!(sent.iter().all(|g| !g.flags.contains(Flags::CWR)));
    assert_eq!((s.ssthresh_bytes(), s.cwnd_bytes()), (6000, 6000));
    assert_eq!(s.stats().ecn_reductions, 1);
    // S10..S15 reach the receiver, which still echoes (no CWR yet); the
    // first new segment they release carries CWR, and only that one.
    now += 50 * NS_PER_MS;
    let mut acks = Vec::new();
    for g in &sent {
        r.on_segment_ecn(now, g, s.ecn_codepoint(g));
        acks.extend(std::iter::from_fn(|| r.poll_transmit(now)));
    }
    assert!(acks.iter().all(|a| a.flags.contains(Flags::ECE)));
    now += 50 * NS_PER_MS;
    let mut after = Vec::new();
    for a in &acks {
        s.on_segment(now, a);
        after.extend(std::iter::from_fn(|| s.poll_transmit(now)));
    }
    assert_eq!(
        s.stats().ecn_reductions,
        1,
        "the echo of one window, answered once"
    );
    let cwr: Vec<bool> = after.iter().map(|g| g.flags.contains(Flags::CWR)).collect();
    assert_eq!(
        cwr.first(),
        Some(&true),
        "first new segment after the cut: {after:?}"
    );
    assert!(cwr[1..].iter().all(|&c| !c));
    assert_eq!(after[0].seq, 1 + 16 * MSS);
    // The CWR segment ends the receiver's echo.
    now += 50 * NS_PER_MS;
    r.on_segment_ecn(now, &after[0], Ecn::Ect0);
    let a = r.poll_transmit(now).expect("ACK");
    assert!(!a.flags.contains(Flags::ECE));
}

/// An ECN-agreed sender (`recovery`, SACK on with SACK recovery) that has
/// sent S0..S9 at 100 ms and taken the ECE ACK of S0 at 200 ms: one
/// reduction, ssthresh = cwnd = 4500 (FlightSize 9000 / 2), CWR due.
fn reduced_by_ece(recovery: Recovery) -> TcpSender {
    let mut c = cfg(true);
    c.recovery = recovery;
    c.sack = recovery.uses_sack();
    reduced_by_ece_with(c)
}

fn reduced_by_ece_with(c: TcpConfig) -> TcpSender {
    let mut s = TcpSender::new(c.clone(), Box::new(TestReno), None);
    let mut r = TcpReceiver::new(c.clone(), Box::new(FixedRwnd(c.rwnd_bytes)));
    s.connect(0);
    let syn = s.poll_transmit(0).expect("SYN");
    r.on_segment_ecn(50 * NS_PER_MS, &syn, Ecn::NotEct);
    s.on_segment(
        100 * NS_PER_MS,
        &r.poll_transmit(50 * NS_PER_MS).expect("SYN-ACK"),
    );
    assert!(s.ecn_on());
    let now = 100 * NS_PER_MS;
    let sent = std::iter::from_fn(|| s.poll_transmit(now)).count();
    assert_eq!(sent, 10);
    s.on_segment(200 * NS_PER_MS, &ack(1 + MSS, Flags::ECE));
    assert_eq!((s.ssthresh_bytes(), s.cwnd_bytes()), (4500, 4500));
    assert_eq!(s.stats().ecn_reductions, 1);
    s
}

/// RFC 3168 §6.1.2: "the TCP sender's congestion window should be reduced
/// only once in response to a series of dropped and/or CE packets from a
/// single window of data". After the ECE reduction, S5 (sent before it) is
/// lost: three duplicate ACKs start a fast retransmit of S5, Not-ECT and
/// without CWR, but ssthresh stays at the ECN reduction's 4500 (a second
/// reduction would give FlightSize 5000 / 2 = 2500), as Linux's
/// `tcp_enter_recovery` leaves ssthresh alone in TCP_CA_CWR.
#[test]
fn a_loss_in_the_window_of_an_ecn_reduction_does_not_reduce_again() {
    for recovery in [Recovery::NewReno, Recovery::Sack] {
        let mut s = reduced_by_ece(recovery);
        let now = 210 * NS_PER_MS;
        // S1..S4 acked, each ACK still ECE (no CWR has reached the
        // receiver): no growth, flight 5000 > cwnd 4500, nothing sent.
        for k in 2..=5 {
            s.on_segment(now, &ack(1 + k * MSS, Flags::ECE));
            assert!(s.poll_transmit(now).is_none());
        }
        // S5 lost: S6, S7, S8 arrive, three duplicate ACKs of S5.
        for k in 6..=8 {
            let mut a = ack(1 + 5 * MSS, Flags::ECE);
            if recovery.uses_sack() {
                a.sack[0] = SackBlock {
                    start: 1 + 6 * MSS,
                    end: 1 + (k + 1) * MSS,
                };
                a.sack_len = 1;
            }
            s.on_segment(now, &a);
        }
        assert_eq!(s.stats().fast_retransmits, 1, "{recovery:?}");
        assert_eq!(
            s.ssthresh_bytes(),
            4500,
            "{recovery:?}: one reduction for the window"
        );
        assert_eq!(s.stats().ecn_reductions, 1);
        let rx = s.poll_transmit(now).expect("fast retransmit of S5");
        assert_eq!((rx.seq, rx.is_retransmit), (1 + 5 * MSS, true), "{recovery:?}");
        assert_eq!(s.ecn_codepoint(&rx), Ecn::NotEct, "§6.1.5");
        assert!(
            !rx.flags.contains(Flags::CWR),
            "§6.1.5: no CWR on a retransmission"
        );
    }
}

/// The window of the ECN reduction ends when the data outstanding at it is
/// acknowledged; a loss after that is a new congestion event and reduces.
#[test]
fn a_loss_after_the_ecn_window_reduces_again() {
    let mut s = reduced_by_ece(Recovery::NewReno);
    let mut now = 210 * NS_PER_MS;
    // S1..S9 acked without ECE: the window of the reduction is over; the
    // new data sent on the way (S10.., the first with CWR) is in flight.
    let mut sent = Vec::new();
    for k in 2..=10 {
        s.on_segment(now, &ack(1 + k * MSS, Flags::default()));
        sent.extend(std::iter::from_fn(|| s.poll_transmit(now)));
    }
    assert!(sent[0].flags.contains(Flags::CWR) && sent[0].seq == 1 + 10 * MSS);
    let flight = s.snd_max() - s.snd_una();
    // The first of them is lost: three duplicate ACKs.
    now += 10 * NS_PER_MS;
    for _ in 0..3 {
        s.on_segment(now, &ack(1 + 10 * MSS, Flags::default()));
    }
    assert_eq!(s.stats().fast_retransmits, 1);
    assert_eq!(s.ssthresh_bytes(), (flight / 2).max(2 * MSS));
}

/// RFC 3168 §6.1.2 for a timeout in the window of an ECN reduction: the
/// window falls to one segment (RFC 5681 §3.1) and the window is
/// resent, but ssthresh, "decreased within the last round trip time", is
/// held (Linux's `tcp_enter_loss` in TCP_CA_CWR).
#[test]
fn a_timeout_in_the_window_of_an_ecn_reduction_holds_ssthresh() {
    let mut s = reduced_by_ece(Recovery::NewReno);
    // S1..S4 acked (ECE still echoed), then nothing: FlightSize 5000, so a
    // second reduction would give 2500.
    let now = 210 * NS_PER_MS;
    for k in 2..=5 {
        s.on_segment(now, &ack(1 + k * MSS, Flags::ECE));
        assert!(s.poll_transmit(now).is_none());
    }
    let due = s.next_timeout().expect("RTO armed");
    s.on_timeout(due);
    assert_eq!(s.stats().timeouts, 1);
    assert_eq!((s.cwnd_bytes(), s.ssthresh_bytes()), (MSS, 4500));
    let rx = s.poll_transmit(due).expect("go-back-N from S5");
    assert_eq!((rx.seq, rx.is_retransmit), (1 + 5 * MSS, true));
    assert_eq!(s.ecn_codepoint(&rx), Ecn::NotEct);
}

/// RFC 3168 §6.1.6: "the TCP data sender MUST NOT set either an ECT
/// codepoint or the CWR bit on window probe packets". The window closes
/// right after an ECE reduction: the zero-window probe is new data but
/// Not-ECT and without CWR; CWR and ECT(0) go on the first new segment
/// sent within the window once it opens.
#[test]
fn a_zero_window_probe_is_not_ect_and_leaves_cwr_to_the_next_segment() {
    let mut s = reduced_by_ece(Recovery::NewReno);
    let mut now = 210 * NS_PER_MS;
    // Everything acked, the window closed.
    let mut closed = ack(1 + 10 * MSS, Flags::ECE);
    closed.rwnd_bytes = 0;
    s.on_segment(now, &closed);
    assert!(s.poll_transmit(now).is_none(), "window closed");
    // The persist timer fires: one full segment goes regardless.
    now = s.next_timeout().expect("persist timer");
    s.on_timeout(now);
    let probe = s.poll_transmit(now).expect("window probe");
    assert_eq!((probe.seq, probe.is_retransmit), (1 + 10 * MSS, false));
    assert_eq!(s.stats().window_probes, 1);
    assert_eq!(s.ecn_codepoint(&probe), Ecn::NotEct, "§6.1.6: probes are Not-ECT");
    assert!(!probe.flags.contains(Flags::CWR), "§6.1.6: no CWR on a probe");
    // The probe is acked and the window opens: the next new segment
    // carries the CWR still due, ECT(0).
    now += 100 * NS_PER_MS;
    s.on_segment(now, &ack(1 + 11 * MSS, Flags::default()));
    let next = s.poll_transmit(now).expect("new data in the open window");
    assert_eq!((next.seq, next.is_retransmit), (1 + 11 * MSS, false));
    assert!(
        next.flags.contains(Flags::CWR),
        "§6.1.2: CWR on the next new data"
    );
    assert_eq!(s.ecn_codepoint(&next), Ecn::Ect0);
    // The probe's own codepoint stays Not-ECT when asked again.
    assert_eq!(s.ecn_codepoint(&probe), Ecn::NotEct);
}

/// The recovery that a loss in the window of an ECN reduction starts ends
/// with that window (Linux keeps CWR's `high_seq` as the recovery point):
/// a hole in the data sent after the reduction is a new congestion event,
/// with its own fast retransmit and reduction. DupThresh 2 fits the case in
/// one initial window: S9 and S11 lost, S10..S12 sent after the reduction.
#[test]
fn a_loss_recovery_in_the_ecn_window_ends_with_that_window() {
    let mut c = cfg(true);
    c.dupthresh = 2;
    let mut s = reduced_by_ece_with(c);
    let now = 210 * NS_PER_MS;
    let mut sent = Vec::new();
    for k in 2..=9 {
        s.on_segment(now, &ack(1 + k * MSS, Flags::ECE));
        sent.extend(std::iter::from_fn(|| s.poll_transmit(now)));
    }
    let seqs: Vec<u64> = sent.iter().map(|g| (g.seq - 1) / MSS).collect();
    assert_eq!(seqs, [10, 11, 12], "new data within cwnd 4500");
    // S10 and S12 arrive (S10 carried CWR: no more ECE), two duplicate
    // ACKs of S9: fast retransmit, ssthresh kept.
    for _ in 0..2 {
        s.on_segment(now, &ack(1 + 9 * MSS, Flags::default()));
    }
    assert_eq!((s.stats().fast_retransmits, s.ssthresh_bytes()), (1, 4500));
    let rx: Vec<Segment> = std::iter::from_fn(|| s.poll_transmit(now)).collect();
    assert_eq!((rx[0].seq, rx[0].is_retransmit), (1 + 9 * MSS, true));
    // The retransmitted S9 arrives: the ACK of S10 covers the reduction's
    // window, a full ACK for this recovery (not a partial one up to the
    // data sent later).
    s.on_segment(now, &ack(1 + 11 * MSS, Flags::default()));
    assert!(
        !s.in_recovery(),
        "the episode ends with the window of the reduction"
    );
    // S11's hole: two duplicate ACKs, a new fast retransmit and a new
    // reduction (FlightSize / 2).
    let flight = s.snd_max() - s.snd_una();
    for _ in 0..2 {
        s.on_segment(now, &ack(1 + 11 * MSS, Flags::default()));
    }
    assert_eq!(s.stats().fast_retransmits, 2);
    assert_eq!(s.ssthresh_bytes(), (flight / 2).max(2 * MSS));
    let rx = s.poll_transmit(now).expect("fast retransmit of S11");
    assert_eq!((rx.seq, rx.is_retransmit), (1 + 11 * MSS, true));
}
