//! DropTail: a FIFO with a hard limit; an arriving packet that does not fit
//! is dropped (docs/models/queues.md, "DropTail").
//!
//! This file also holds [`Fifo`], the accounted FIFO that RED and CoDel are
//! built on, so that the three disciplines keep `QdiscStats` the same way.

use std::collections::VecDeque;

use crate::{Dequeue, Enqueue, Qdisc, QdiscStats, QueuedPacket, TimeNs};

/// The physical size of a buffer, in packets or in bytes (a scenario says
/// which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// At most this many bytes queued. A packet is admitted only if it fits
    /// entirely: `len_bytes + size_bytes <= limit`.
    Bytes(u64),
    /// At most this many packets queued, whatever their size.
    Packets(u64),
}

impl Limit {
    /// A zero limit would drop every packet, which is never what a scenario
    /// means; reject it with a message naming the field.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            Limit::Bytes(0) => Err("limit must be greater than 0 bytes".to_string()),
            Limit::Packets(0) => Err("limit must be greater than 0 packets".to_string()),
            _ => Ok(()),
        }
    }

    /// Whether a packet of `size_bytes` fits into a queue that now holds
    /// `len_pkts` packets and `len_bytes` bytes.
    pub fn admits(&self, len_pkts: usize, len_bytes: u64, size_bytes: u32) -> bool {
        match *self {
            Limit::Bytes(max) => len_bytes.saturating_add(u64::from(size_bytes)) <= max,
            Limit::Packets(max) => (len_pkts as u64) < max,
        }
    }
}

/// A FIFO of `(packet, enqueue time)` with byte count and [`QdiscStats`].
///
/// Every packet that enters through `arrive_*` leaves through exactly one of
/// `depart` or `drop_dequeued` after `pop_front`, which keeps
/// arrivals = departures + drops + queued.
#[derive(Debug, Clone)]
#[repr(C)] // the deque, then the counters every packet updates (see `DropTail`)
pub(crate) struct Fifo<P> {
    pkts: VecDeque<(P, TimeNs)>,
    stats: QdiscStats,
    bytes: u64,
}

impl<P: QueuedPacket> Fifo<P> {
    /// The deque starts empty and grows to the largest backlog it sees (it
    /// never shrinks, so there is no allocation per packet after warm-up).
    /// Reserving the limit up front would cost ~100 KB per queue, which a
    /// topology with thousands of rarely-busy access links cannot afford.
    pub(crate) fn new() -> Self {
        Fifo {
            pkts: VecDeque::new(),
            bytes: 0,
            stats: QdiscStats::default(),
        }
    }

    pub(crate) fn len_pkts(&self) -> usize {
        self.pkts.len()
    }

    pub(crate) fn len_bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn count_arrival(&mut self, size: u64) {
        self.stats.arrivals_pkts = self.stats.arrivals_pkts.saturating_add(1);
        self.stats.arrivals_bytes = self.stats.arrivals_bytes.saturating_add(size);
    }

    /// Tail drop: queue the packet if it fits under `limit`, else drop it.
    pub(crate) fn tail_drop_enqueue(&mut self, limit: Limit, now: TimeNs, pkt: P) -> Enqueue<P> {
        if limit.admits(self.len_pkts(), self.len_bytes(), pkt.size_bytes()) {
            self.arrive_and_queue(now, pkt)
        } else {
            self.arrive_and_drop(pkt)
        }
    }

    /// Count an arrival and queue it, stamped with `now`.
    pub(crate) fn arrive_and_queue(&mut self, now: TimeNs, pkt: P) -> Enqueue<P> {
        let size = u64::from(pkt.size_bytes());
        self.count_arrival(size);
        self.bytes = self.bytes.saturating_add(size);
        self.pkts.push_back((pkt, now));
        Enqueue::Queued
    }

    /// An arrival that leaves at once (the queue is empty and the
    /// transmitter idle): the counters of `arrive_and_queue` followed by
    /// `pop_front` and `depart` at the same instant, without touching the
    /// deque's storage.
    #[inline]
    pub(crate) fn arrive_and_depart(&mut self, now: TimeNs, pkt: P) -> Dequeue<P> {
        debug_assert!(self.pkts.is_empty());
        self.count_arrival(u64::from(pkt.size_bytes()));
        self.depart(now, pkt, now)
    }

    /// Count an arrival and drop it on the spot.
    pub(crate) fn arrive_and_drop(&mut self, pkt: P) -> Enqueue<P> {
        let size = u64::from(pkt.size_bytes());
        self.count_arrival(size);
        self.stats.drops_enqueue_pkts = self.stats.drops_enqueue_pkts.saturating_add(1);
        self.stats.drops_bytes = self.stats.drops_bytes.saturating_add(size);
        Enqueue::Dropped(pkt)
    }

    /// Take the head packet and its enqueue time. The caller must hand it to
    /// `depart` or `drop_dequeued`.
    pub(crate) fn pop_front(&mut self) -> Option<(P, TimeNs)> {
        let (pkt, enq) = self.pkts.pop_front()?;
        self.bytes = self.bytes.saturating_sub(u64::from(pkt.size_bytes()));
        Some((pkt, enq))
    }

    /// Count a departure; sojourn = now − enqueue time (saturating, so a
    /// caller whose clock steps back gets 0 rather than a panic).
    pub(crate) fn depart(&mut self, now: TimeNs, pkt: P, enq: TimeNs) -> Dequeue<P> {
        self.stats.departures_pkts = self.stats.departures_pkts.saturating_add(1);
        self.stats.departures_bytes = self
            .stats
            .departures_bytes
            .saturating_add(u64::from(pkt.size_bytes()));
        Dequeue::Packet {
            pkt,
            sojourn_ns: now.saturating_sub(enq),
        }
    }

    /// Count a drop at dequeue (CoDel) and hand the packet to the caller.
    /// Count an arrival dropped early by an active queue manager (the
    /// packet must already have gone through [`Self::arrive_and_drop`]).
    pub(crate) fn count_early_drop(&mut self) {
        self.stats.drops_early_pkts = self.stats.drops_early_pkts.saturating_add(1);
    }

    /// Count an ECN mark (the packet was queued or departs with CE set).
    pub(crate) fn count_mark(&mut self) {
        self.stats.marks_pkts = self.stats.marks_pkts.saturating_add(1);
    }

    pub(crate) fn drop_dequeued(&mut self, pkt: P, dropped: &mut Vec<P>) {
        self.stats.drops_dequeue_pkts = self.stats.drops_dequeue_pkts.saturating_add(1);
        self.stats.drops_bytes = self.stats.drops_bytes.saturating_add(u64::from(pkt.size_bytes()));
        dropped.push(pkt);
    }
}

/// FIFO with tail drop.
///
/// `repr(C)`: the limit, the deque and the arrival and departure counters
/// come first and span 80 bytes, which a driver can lay out over two
/// cache lines (see latlab-link's `LinkService`).
#[derive(Debug, Clone)]
#[repr(C)]
pub struct DropTail<P> {
    limit: Limit,
    fifo: Fifo<P>,
}

impl<P: QueuedPacket> DropTail<P> {
    pub fn new(limit: Limit) -> Self {
        DropTail {
            limit,
            fifo: Fifo::new(),
        }
    }

    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// A packet arrives while the queue is empty and the transmitter is
    /// free: exactly `enqueue(now, pkt)` then `dequeue(now)` (same counters,
    /// sojourn 0), but the FIFO's storage is never touched, which spares a
    /// simulator a cache miss per packet on every idle hop. Returns
    /// `Dequeue::Packet` when the packet leaves, `Dequeue::Empty` when the
    /// limit drops it (the caller still holds it).
    #[inline]
    pub fn enqueue_and_dequeue_empty(&mut self, now_ns: TimeNs, pkt: P) -> Dequeue<P> {
        debug_assert_eq!(self.fifo.len_pkts(), 0);
        if self.limit.admits(0, 0, pkt.size_bytes()) {
            self.fifo.arrive_and_depart(now_ns, pkt)
        } else {
            let _ = self.fifo.arrive_and_drop(pkt);
            Dequeue::Empty
        }
    }
}

impl<P: QueuedPacket + Send> Qdisc<P> for DropTail<P> {
    fn name(&self) -> &'static str {
        "droptail"
    }

    fn enqueue(&mut self, now_ns: TimeNs, pkt: P) -> Enqueue<P> {
        self.fifo.tail_drop_enqueue(self.limit, now_ns, pkt)
    }

    fn dequeue(&mut self, now_ns: TimeNs, _dropped: &mut Vec<P>) -> Dequeue<P> {
        match self.fifo.pop_front() {
            Some((pkt, enq)) => self.fifo.depart(now_ns, pkt, enq),
            None => Dequeue::Empty,
        }
    }

    fn len_pkts(&self) -> usize {
        self.fifo.len_pkts()
    }

    fn len_bytes(&self) -> u64 {
        self.fifo.len_bytes()
    }

    fn stats(&self) -> &QdiscStats {
        self.fifo.stats()
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    use crate::{Dequeue, Ecn, Enqueue, Qdisc, QdiscStats, QueuedPacket};
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    /// A test packet: a sequence number (to check FIFO order), a size and
    /// an ECN field.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct TestPkt {
        pub seq: u64,
        pub size: u32,
        pub ecn: Ecn,
    }

    impl TestPkt {
        pub fn new(seq: u64, size: u32) -> Self {
            TestPkt {
                seq,
                size,
                ecn: Ecn::NotEct,
            }
        }

        /// An ECN-capable packet, ECT(0).
        pub fn ect(seq: u64, size: u32) -> Self {
            TestPkt {
                ecn: Ecn::Ect0,
                ..Self::new(seq, size)
            }
        }
    }

    impl QueuedPacket for TestPkt {
        fn size_bytes(&self) -> u32 {
            self.size
        }
        fn flow_id(&self) -> u32 {
            0
        }
        fn ecn(&self) -> Ecn {
            self.ecn
        }
        fn set_ce(&mut self) {
            self.ecn = Ecn::Ce;
        }
    }

    /// arrivals = departures + drops + queued, in packets and in bytes.
    pub fn assert_conserved<Q: Qdisc<TestPkt>>(q: &Q) {
        let s: &QdiscStats = q.stats();
        assert_eq!(
            s.arrivals_pkts,
            s.departures_pkts + s.drops_pkts() + q.len_pkts() as u64,
            "packet conservation: {s:?}, queued {}",
            q.len_pkts()
        );
        assert_eq!(
            s.arrivals_bytes,
            s.departures_bytes + s.drops_bytes + q.len_bytes(),
            "byte conservation: {s:?}, queued {}",
            q.len_bytes()
        );
    }

    /// Random arrivals and dequeues with random sizes and time steps; checks
    /// conservation after every operation and that what the caller sees
    /// (queued, dropped, departed) matches the stats.
    pub fn random_invariant_run<Q: Qdisc<TestPkt>>(q: &mut Q, seed: u64, steps: usize) {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut now: u64 = 0;
        let mut dropped = Vec::new();
        let (mut seen_arr, mut seen_dep, mut seen_drop) = (0u64, 0u64, 0u64);
        let mut last_seq: Option<u64> = None;
        for seq in 0..steps as u64 {
            now += rng.random_range(0..2_000_000u64);
            // Bias towards arrivals so the queue fills and limits/AQM engage.
            if rng.random_bool(0.6) {
                let size = rng.random_range(40..=1500u32);
                seen_arr += 1;
                if let Enqueue::Dropped(p) = q.enqueue(now, TestPkt::new(seq, size)) {
                    assert_eq!(p.seq, seq);
                    seen_drop += 1;
                }
            } else {
                dropped.clear();
                let departed = match q.dequeue(now, &mut dropped) {
                    Dequeue::Packet { pkt, .. } => Some(pkt.seq),
                    Dequeue::Empty => {
                        assert_eq!(q.len_pkts(), 0);
                        None
                    }
                    Dequeue::Wait(_) => panic!("work-conserving qdisc answered Wait"),
                };
                // FIFO: packets leave the head (dropped or sent) in arrival
                // order.
                for seq in dropped.iter().map(|p| p.seq).chain(departed) {
                    if let Some(prev) = last_seq {
                        assert!(seq > prev, "out of order: {seq} after {prev}");
                    }
                    last_seq = Some(seq);
                }
                seen_dep += u64::from(departed.is_some());
                seen_drop += dropped.len() as u64;
            }
            assert_conserved(q);
            let s = q.stats();
            assert_eq!(s.arrivals_pkts, seen_arr);
            assert_eq!(s.departures_pkts, seen_dep);
            assert_eq!(s.drops_pkts(), seen_drop);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;

    fn drain(q: &mut DropTail<TestPkt>, now: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut dropped = Vec::new();
        while let Dequeue::Packet { pkt, sojourn_ns } = q.dequeue(now, &mut dropped) {
            out.push((pkt.seq, sojourn_ns));
        }
        assert!(dropped.is_empty());
        out
    }

    #[test]
    fn packet_limit_drops_the_arrival_that_does_not_fit() {
        let mut q = DropTail::new(Limit::Packets(3));
        for seq in 0..5 {
            let r = q.enqueue(seq * 10, TestPkt::new(seq, 100 + seq as u32));
            if seq < 3 {
                assert_eq!(r, Enqueue::Queued);
            } else {
                assert_eq!(r, Enqueue::Dropped(TestPkt::new(seq, 100 + seq as u32)));
            }
        }
        assert_eq!(q.len_pkts(), 3);
        assert_eq!(q.len_bytes(), 100 + 101 + 102);
        let s = *q.stats();
        assert_eq!(s.arrivals_pkts, 5);
        assert_eq!(s.arrivals_bytes, 100 + 101 + 102 + 103 + 104);
        assert_eq!(s.drops_enqueue_pkts, 2);
        assert_eq!(s.drops_dequeue_pkts, 0);
        assert_eq!(s.drops_bytes, 103 + 104);
        assert_conserved(&q);

        // FIFO order and sojourn = dequeue time − enqueue time.
        assert_eq!(drain(&mut q, 100), vec![(0, 100), (1, 90), (2, 80)]);
        assert_eq!(q.stats().departures_pkts, 3);
        assert_eq!(q.stats().departures_bytes, 303);
        assert_eq!(q.dequeue(100, &mut Vec::new()), Dequeue::Empty);
        assert_conserved(&q);
    }

    #[test]
    fn byte_limit_admits_only_packets_that_fit_entirely() {
        let mut q = DropTail::new(Limit::Bytes(3000));
        assert_eq!(q.enqueue(0, TestPkt::new(0, 1500)), Enqueue::Queued);
        assert_eq!(q.enqueue(0, TestPkt::new(1, 1000)), Enqueue::Queued);
        // 2500 + 600 > 3000: dropped although 500 bytes are free.
        assert!(matches!(q.enqueue(0, TestPkt::new(2, 600)), Enqueue::Dropped(_)));
        // 2500 + 500 == 3000: fits exactly.
        assert_eq!(q.enqueue(0, TestPkt::new(3, 500)), Enqueue::Queued);
        // Full: even a 1-byte packet is dropped.
        assert!(matches!(q.enqueue(0, TestPkt::new(4, 1)), Enqueue::Dropped(_)));
        assert_eq!(q.len_bytes(), 3000);
        assert_eq!(q.len_pkts(), 3);
        assert_eq!(q.stats().drops_enqueue_pkts, 2);
        assert_eq!(q.stats().drops_bytes, 601);
        assert_conserved(&q);

        // Room frees up after a departure.
        let mut d = Vec::new();
        assert!(matches!(q.dequeue(5, &mut d), Dequeue::Packet { pkt, sojourn_ns: 5 } if pkt.seq == 0));
        assert_eq!(q.enqueue(6, TestPkt::new(5, 1500)), Enqueue::Queued);
        assert_eq!(q.len_bytes(), 3000);
        assert_conserved(&q);
    }

    #[test]
    fn oversized_packet_is_dropped_by_byte_limit_even_when_empty() {
        let mut q = DropTail::new(Limit::Bytes(1000));
        assert!(matches!(q.enqueue(0, TestPkt::new(0, 1001)), Enqueue::Dropped(_)));
        assert_eq!(q.len_pkts(), 0);
        assert_conserved(&q);
    }

    #[test]
    fn sojourn_saturates_when_clock_steps_back() {
        let mut q = DropTail::new(Limit::Packets(10));
        q.enqueue(1_000, TestPkt::new(0, 100));
        assert_eq!(
            q.dequeue(500, &mut Vec::new()),
            Dequeue::Packet {
                pkt: TestPkt::new(0, 100),
                sojourn_ns: 0
            }
        );
    }

    #[test]
    fn limit_validation_names_the_field() {
        assert!(Limit::Packets(1).validate().is_ok());
        assert!(Limit::Bytes(1).validate().is_ok());
        let e = Limit::Packets(0).validate().unwrap_err();
        assert!(e.contains("limit"), "{e}");
        let e = Limit::Bytes(0).validate().unwrap_err();
        assert!(e.contains("limit") && e.contains("bytes"), "{e}");
    }

    #[test]
    fn zero_limit_drops_everything_without_panicking() {
        let mut q = DropTail::new(Limit::Packets(0));
        assert!(matches!(q.enqueue(0, TestPkt::new(0, 1)), Enqueue::Dropped(_)));
        let mut q = DropTail::new(Limit::Bytes(0));
        assert!(matches!(q.enqueue(0, TestPkt::new(0, 1)), Enqueue::Dropped(_)));
        assert_conserved(&q);
    }

    #[test]
    fn enqueue_and_dequeue_on_an_empty_queue_counts_like_the_two_calls() {
        for limit in [Limit::Bytes(1000), Limit::Bytes(300), Limit::Packets(1)] {
            let (mut fast, mut slow) = (DropTail::new(limit), DropTail::new(limit));
            for (i, size) in [100u32, 500, 1500, 300].into_iter().enumerate() {
                let now = 10 * i as u64;
                let p = TestPkt::new(i as u64, size);
                let got = fast.enqueue_and_dequeue_empty(now, p);
                let want = match slow.enqueue(now, p) {
                    Enqueue::Queued => slow.dequeue(now, &mut Vec::new()),
                    Enqueue::Dropped(_) => Dequeue::Empty,
                };
                assert_eq!(got, want, "limit {limit:?}, packet {i}");
                assert_eq!(fast.stats(), slow.stats(), "limit {limit:?}, packet {i}");
                assert_eq!((fast.len_pkts(), fast.len_bytes()), (0, 0));
            }
        }
    }

    #[test]
    fn randomized_conservation_invariant() {
        for seed in 0..8 {
            let mut q = DropTail::new(Limit::Packets(20));
            random_invariant_run(&mut q, seed, 20_000);
            let mut q = DropTail::new(Limit::Bytes(15_000));
            random_invariant_run(&mut q, seed + 100, 20_000);
            assert!(q.stats().drops_enqueue_pkts > 0);
        }
    }
}
