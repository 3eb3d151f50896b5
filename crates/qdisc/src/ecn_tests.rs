//! ECN marking at each AQM (RFC 3168 §7): the same overload offered as
//! Not-ECT and as ECT(0) traffic. Where the Not-ECT run has AQM drops, the
//! ECT run has CE marks and no AQM drop while the buffer has room; a full
//! buffer drops either kind.
//!
//! The overload: 1000-byte packets arriving every `gap_ns`, one dequeue per
//! millisecond (a 8 Mbit/s link), open loop (no sender reacts).

use crate::droptail::test_util::{assert_conserved, TestPkt};
use crate::{
    CoDel, CoDelParams, Dequeue, Ecn, Enqueue, FqCoDel, FqCoDelParams, Limit, Pie, PieParams, Qdisc,
    QueuedPacket, Red, RedParams,
};

const MS: u64 = 1_000_000;

/// What one overload run did.
#[derive(Debug, Default)]
struct Run {
    arrivals: u64,
    /// Dropped by the AQM (RED/PIE early drops, CoDel's dequeue drops).
    aqm_drops: u64,
    /// Every drop, overflow included.
    drops: u64,
    marks: u64,
    departed: u64,
    departed_ce: u64,
}

fn overload<Q: Qdisc<TestPkt>>(q: &mut Q, ect: bool, gap_ns: u64, duration_ns: u64) -> Run {
    let mut run = Run::default();
    let mut dropped = Vec::new();
    let (mut next_arrival, mut next_service) = (0, MS);
    let mut seq = 0;
    while next_arrival < duration_ns || next_service < duration_ns {
        if next_arrival <= next_service && next_arrival < duration_ns {
            let pkt = if ect {
                TestPkt::ect(seq, 1000)
            } else {
                TestPkt::new(seq, 1000)
            };
            seq += 1;
            let _ = q.enqueue(next_arrival, pkt);
            next_arrival += gap_ns;
        } else {
            if let Dequeue::Packet { pkt, .. } = q.dequeue(next_service, &mut dropped) {
                run.departed += 1;
                run.departed_ce += u64::from(pkt.ecn() == Ecn::Ce);
            }
            next_service += MS;
        }
    }
    let s = q.stats();
    run.arrivals = s.arrivals_pkts;
    run.aqm_drops = s.drops_early_pkts + s.drops_dequeue_pkts;
    run.drops = s.drops_pkts();
    run.marks = s.marks_pkts;
    assert_conserved(q);
    run
}

/// The two runs of one discipline: Not-ECT then ECT(0).
fn both<Q: Qdisc<TestPkt>>(make: impl Fn() -> Q, gap_ns: u64, duration_ns: u64) -> (Run, Run) {
    let plain = overload(&mut make(), false, gap_ns, duration_ns);
    let ect = overload(&mut make(), true, gap_ns, duration_ns);
    (plain, ect)
}

/// The common claims: the Not-ECT run drops and never marks; the ECT run
/// marks, drops nothing while the buffer has room, every mark reaches the
/// output or is still queued, and no less leaves the queue.
fn marks_replace_drops(name: &str, plain: &Run, ect: &Run) {
    eprintln!("{name}: not-ECT {plain:?}\n{name}: ECT     {ect:?}");
    assert!(plain.aqm_drops > 0 && plain.marks == 0, "{name}: {plain:?}");
    assert!(ect.marks > 0, "{name}: {ect:?}");
    assert_eq!(
        ect.drops, 0,
        "{name}: an ECT packet dropped with room left: {ect:?}"
    );
    assert!(
        ect.departed_ce <= ect.marks && ect.departed_ce > 0,
        "{name}: {ect:?}"
    );
    assert!(
        ect.departed >= plain.departed,
        "{name}: fewer departures with ECN"
    );
}

fn red(ecn: bool) -> RedParams {
    RedParams {
        limit: Limit::Packets(1000),
        min_th: 5.0,
        max_th: 60.0,
        max_p: 0.1,
        w_q: 0.02,
        gentle: false,
        byte_mode: false,
        mean_pkt_size_bytes: 1000,
        link_rate_bps: 8_000_000,
        wait: true,
        ecn,
    }
}

#[test]
fn red_marks_ect_where_it_drops_early() {
    let (plain, ect) = both(|| Red::new(red(true), 7), 900_000, 500 * MS);
    marks_replace_drops("red", &plain, &ect);
    // With `ecn` off an ECT packet is dropped as before.
    let off = overload(&mut Red::new(red(false), 7), true, 900_000, 500 * MS);
    assert_eq!((off.marks, off.aqm_drops), (0, plain.aqm_drops));
}

/// Above max_th RED drops ECT packets too (RFC 3168 §7, Linux `harddrop`):
/// with w_q = 1 the average is the queue itself.
#[test]
fn red_drops_ect_above_max_th() {
    let p = RedParams {
        min_th: 5.0,
        max_th: 10.0,
        w_q: 1.0,
        max_p: 1.0,
        ..red(true)
    };
    let mut q = Red::new(p, 1);
    let mut outcome = Vec::new();
    for seq in 0..20 {
        outcome.push(matches!(
            q.enqueue(0, TestPkt::ect(seq, 1000)),
            Enqueue::Dropped(_)
        ));
    }
    // Queue of 10 or more before the arrival: forced drop, whatever ECN says.
    assert!(outcome[11..].iter().all(|&d| d), "{outcome:?}");
    assert!(q.stats().marks_pkts > 0, "marks between the thresholds");
    assert_eq!(q.stats().drops_early_pkts, 0, "no early drop of an ECT packet");
}

fn codel(ecn: bool) -> CoDelParams {
    CoDelParams {
        ecn,
        ..CoDelParams::default()
    }
}

#[test]
fn codel_marks_ect_where_it_drops() {
    let (plain, ect) = both(|| CoDel::new(codel(true)), 900_000, 2_000 * MS);
    marks_replace_drops("codel", &plain, &ect);
    // CoDel marks at dequeue: every mark leaves at once.
    assert_eq!(ect.departed_ce, ect.marks);
}

#[test]
fn codel_with_ecn_still_drops_a_full_buffer() {
    let p = CoDelParams {
        limit: Limit::Packets(50),
        ..codel(true)
    };
    let r = overload(&mut CoDel::new(p), true, 500_000, 500 * MS);
    assert!(r.drops > 0 && r.aqm_drops == 0, "{r:?}");
}

fn fq(ecn: bool) -> FqCoDelParams {
    FqCoDelParams {
        ecn,
        ..FqCoDelParams::default()
    }
}

#[test]
fn fq_codel_marks_ect_where_it_drops() {
    let (plain, ect) = both(|| FqCoDel::new(fq(true), 3), 900_000, 2_000 * MS);
    marks_replace_drops("fq_codel", &plain, &ect);
    assert_eq!(ect.departed_ce, ect.marks);
}

#[test]
fn fq_codel_overflow_drops_ect_from_the_fattest_queue() {
    let p = FqCoDelParams {
        limit: Limit::Packets(50),
        ..fq(true)
    };
    let r = overload(&mut FqCoDel::new(p, 3), true, 500_000, 500 * MS);
    assert!(r.drops > 0 && r.aqm_drops == 0, "{r:?}");
}

fn pie(ecn: bool) -> PieParams {
    PieParams {
        ecn,
        ..PieParams::default()
    }
}

/// A 2 % overload: open-loop traffic does not slow down when marked, so a
/// harder one drives PIE's probability past 10 % within a second or two
/// (see the next test); bulk TCP in `crates/sim/tests/ecn.rs` is the
/// realistic case.
#[test]
fn pie_marks_ect_while_its_probability_is_at_most_ten_percent() {
    let gap = 980_000;
    let (plain, ect) = both(|| Pie::new(pie(true), 11), gap, 2_000 * MS);
    marks_replace_drops("pie", &plain, &ect);
}

/// RFC 8033 §5.1: above 10 % drop probability PIE drops ECT packets too.
/// A longer overload drives the probability past 10 %; every early drop of
/// an ECT packet happens there, and marks only below.
#[test]
fn pie_drops_ect_above_ten_percent() {
    let mut q = Pie::new(pie(true), 11);
    let mut dropped = Vec::new();
    let (mut marks_above, mut drops_at_or_below, mut drops_above) = (0, 0, 0);
    let mut t = 0;
    for seq in 0..20_000u64 {
        let before = (q.stats().marks_pkts, q.stats().drops_early_pkts);
        let _ = q.enqueue(t, TestPkt::ect(seq, 1000));
        let p = q.drop_prob();
        let (marked, early) = (
            q.stats().marks_pkts > before.0,
            q.stats().drops_early_pkts > before.1,
        );
        if p > 0.1 {
            marks_above += u64::from(marked);
            drops_above += u64::from(early);
        } else {
            drops_at_or_below += u64::from(early);
        }
        if seq % 2 == 1 {
            // With the one below: three departures per four arrivals.
            let _ = q.dequeue(t, &mut dropped);
        }
        t += 800_000;
        if seq % 4 == 3 {
            let _ = q.dequeue(t, &mut dropped);
        }
    }
    assert!(
        q.drop_prob() > 0.1,
        "the overload did not reach 10 %: {}",
        q.drop_prob()
    );
    assert_eq!((marks_above, drops_at_or_below), (0, 0));
    assert!(drops_above > 0 && q.stats().marks_pkts > 0, "{:?}", q.stats());
}
