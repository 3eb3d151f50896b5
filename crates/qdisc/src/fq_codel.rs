//! FQ-CoDel, flow queueing with CoDel (RFC 8290).
//!
//! Arrivals are hashed by flow into one of `flows` queues (RFC 8290 §4.1);
//! each queue is a [`CoDel`] queue of its own (§4.3: CoDel runs per queue
//! on the sojourn of that queue's packets). A deficit round robin
//! scheduler with a `quantum_bytes` quantum serves the queues from two
//! lists (§4.2): queues that just became active go to the end of
//! `new_flows` and are served first; a queue that has used up its deficit
//! gets a quantum more and goes to the end of `old_flows`. A new queue that
//! empties moves to the end of `old_flows` rather than leaving the lists,
//! so that a flow cannot regain the priority of a new one by sending one
//! packet at a time (§4.2, "to prevent starvation"); an old queue that
//! empties leaves them.
//!
//! When the total backlog exceeds the limit, the head packet of the queue
//! with the largest backlog in bytes is dropped (§4.1.1). One packet per
//! overflow: the batch drop of Linux and ns-3 (up to 64 packets, or half
//! the fattest queue) is not done.
//!
//! Each queue's CoDel judges its own packets' sojourn, but its "no drop
//! with at most one MTU queued" rule looks at the whole discipline's
//! backlog, as Linux's fq_codel does (ns-3's per-flow CoDel queue discs
//! look at the flow's own): a flow that gets a tenth of the link holds one
//! or two packets, each waiting well above TARGET, and that is a standing
//! queue when the link is busy. With the per-queue rule, ten CUBIC flows
//! on a 10 Mbit/s link sat at 20.7 ms mean sojourn instead of near 5 ms.
//!
//! ECN (`ecn`, RFC 8290 §4.2 and §5.2.7, on by default in Linux's
//! fq_codel): each queue's CoDel marks ECT packets CE where it would drop
//! them (see [`CoDel`]); the overflow drop from the fattest queue is always
//! a drop, ECT or not.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::codel::{CoDel, CoDelParams};
use crate::droptail::Limit;
use crate::{Dequeue, Enqueue, Qdisc, QdiscStats, QueuedPacket, TimeNs};

/// FQ-CoDel parameters (RFC 8290 §5.1–5.2, Linux's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FqCoDelParams {
    /// Number of flow queues the hash spreads flows over (§5.2.2: 1024).
    pub flows: u32,
    /// DRR quantum, bytes (§5.2.3: 1514, one Ethernet frame).
    pub quantum_bytes: u32,
    /// Total buffer over all queues (§5.2.4; Linux: 10240 packets).
    pub limit: Limit,
    /// Each queue's CoDel TARGET, INTERVAL and MTU (§5.2.1: CoDel's
    /// defaults, 5 ms and 100 ms). CoDel's own `limit` is not used: the
    /// limit above is shared.
    pub target_ns: u64,
    pub interval_ns: u64,
    pub mtu_bytes: u32,
    /// Mark ECT packets CE instead of dropping them at dequeue.
    pub ecn: bool,
}

/// The largest number of queues: flow indices are kept as `u32` and a
/// scan for the fattest queue on overflow is linear in the count.
pub const FQ_CODEL_MAX_FLOWS: u32 = 65_536;

impl Default for FqCoDelParams {
    fn default() -> Self {
        let codel = CoDelParams::default();
        FqCoDelParams {
            flows: 1024,
            quantum_bytes: 1514,
            limit: Limit::Packets(10_240),
            target_ns: codel.target_ns,
            interval_ns: codel.interval_ns,
            mtu_bytes: codel.mtu_bytes,
            ecn: false,
        }
    }
}

impl FqCoDelParams {
    /// Check every field; the message names the bad field and what is
    /// expected.
    pub fn validate(&self) -> Result<(), String> {
        if self.flows == 0 || self.flows > FQ_CODEL_MAX_FLOWS {
            return Err(format!(
                "flows must be between 1 and {FQ_CODEL_MAX_FLOWS} (got {})",
                self.flows
            ));
        }
        if self.quantum_bytes == 0 {
            return Err("quantum_bytes must be greater than 0".to_string());
        }
        self.limit.validate()?;
        self.codel().validate()
    }

    /// One flow queue's CoDel: unbounded, since the limit is shared.
    fn codel(&self) -> CoDelParams {
        CoDelParams {
            target_ns: self.target_ns,
            interval_ns: self.interval_ns,
            mtu_bytes: self.mtu_bytes,
            limit: Limit::Packets(u64::MAX),
            ecn: self.ecn,
        }
    }
}

/// Which scheduling list a queue is on (RFC 8290 §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowList {
    /// Not on a list: the queue is empty and idle.
    None,
    New,
    Old,
}

#[derive(Debug, Clone)]
struct FlowQueue<P> {
    codel: CoDel<P>,
    /// DRR deficit, bytes; goes negative by at most one packet.
    deficit: i64,
    list: FlowList,
}

/// FQ-CoDel queue.
#[derive(Debug, Clone)]
pub struct FqCoDel<P> {
    params: FqCoDelParams,
    queues: Vec<FlowQueue<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    /// Key of the flow hash, drawn from the seed (Linux perturbs its hash
    /// with a random key at setup; here the key is the run's, so the same
    /// seed gives the same collisions).
    perturbation: u64,
    len_pkts: usize,
    len_bytes: u64,
    stats: QdiscStats,
}

/// SplitMix64's finaliser (Steele, Lea and Flood, 2014): every input bit
/// reaches every output bit, so consecutive flow ids spread over the queues.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The backlog is over the limit (checked after the arrival is queued,
/// RFC 8290 §4.1.1).
fn exceeds(limit: Limit, len_pkts: usize, len_bytes: u64) -> bool {
    match limit {
        Limit::Packets(max) => len_pkts as u64 > max,
        Limit::Bytes(max) => len_bytes > max,
    }
}

impl<P: QueuedPacket + Send> FqCoDel<P> {
    /// An FQ-CoDel queue whose flow hash is keyed from `seed`. Parameters
    /// are not checked here (see [`FqCoDelParams::validate`]); a zero
    /// `flows` is taken as one queue, so nothing panics.
    pub fn new(params: FqCoDelParams, seed: u64) -> Self {
        let n = params.flows.clamp(1, FQ_CODEL_MAX_FLOWS) as usize;
        let codel = params.codel();
        let queue = FlowQueue {
            codel: CoDel::new(codel),
            deficit: 0,
            list: FlowList::None,
        };
        FqCoDel {
            params,
            queues: vec![queue; n],
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            perturbation: Pcg64Mcg::seed_from_u64(seed).random(),
            len_pkts: 0,
            len_bytes: 0,
            stats: QdiscStats::default(),
        }
    }

    /// [`FqCoDel::new`] after [`FqCoDelParams::validate`].
    pub fn try_new(params: FqCoDelParams, seed: u64) -> Result<Self, String> {
        params.validate()?;
        Ok(Self::new(params, seed))
    }

    pub fn params(&self) -> &FqCoDelParams {
        &self.params
    }

    /// The queue a flow hashes to (RFC 8290 §4.1.1): the keyed hash scaled
    /// onto `0..flows` by a multiply-shift (Linux's `reciprocal_scale`).
    pub fn queue_of(&self, flow_id: u32) -> usize {
        let h = mix64(u64::from(flow_id) ^ self.perturbation) >> 32;
        ((h * self.queues.len() as u64) >> 32) as usize
    }

    /// Queue `q`'s DRR deficit, bytes.
    pub fn deficit(&self, q: usize) -> i64 {
        self.queues[q].deficit
    }

    /// The list queue `q` is on.
    pub fn list_of(&self, q: usize) -> FlowList {
        self.queues[q].list
    }

    /// Packets queued in queue `q`.
    pub fn queue_len_pkts(&self, q: usize) -> usize {
        self.queues[q].codel.len_pkts()
    }

    /// The queues on `new_flows`, then those on `old_flows`, in order.
    pub fn lists(&self) -> (Vec<u32>, Vec<u32>) {
        (
            self.new_flows.iter().copied().collect(),
            self.old_flows.iter().copied().collect(),
        )
    }

    /// The queue with the largest backlog in bytes (the lowest index on a
    /// tie), RFC 8290 §4.1.1.
    fn fattest(&self) -> usize {
        let mut best = 0;
        for (i, q) in self.queues.iter().enumerate() {
            if q.codel.len_bytes() > self.queues[best].codel.len_bytes() {
                best = i;
            }
        }
        best
    }

    /// Overflow: drop the head of the fattest queue and return it.
    fn drop_from_fattest(&mut self) -> Option<P> {
        let fat = self.fattest();
        let mut dropped = Vec::with_capacity(1);
        if !self.queues[fat].codel.drop_head(&mut dropped) {
            return None;
        }
        let pkt = dropped.pop()?;
        self.forget(pkt.size_bytes());
        self.stats.drops_enqueue_pkts = self.stats.drops_enqueue_pkts.saturating_add(1);
        self.stats.drops_bytes = self.stats.drops_bytes.saturating_add(u64::from(pkt.size_bytes()));
        Some(pkt)
    }

    /// A packet of `size` left the discipline (sent or dropped).
    fn forget(&mut self, size: u32) {
        self.len_pkts = self.len_pkts.saturating_sub(1);
        self.len_bytes = self.len_bytes.saturating_sub(u64::from(size));
    }

    /// The head of `new_flows`, else of `old_flows`, and which it was.
    fn head(&self) -> Option<(usize, FlowList)> {
        if let Some(&q) = self.new_flows.front() {
            return Some((q as usize, FlowList::New));
        }
        self.old_flows.front().map(|&q| (q as usize, FlowList::Old))
    }

    /// Take queue `q` off the head of the list `from`, and put it at the
    /// end of `old_flows` (`to_old`) or on no list.
    fn rotate(&mut self, q: usize, from: FlowList, to_old: bool) {
        match from {
            FlowList::New => self.new_flows.pop_front(),
            _ => self.old_flows.pop_front(),
        };
        if to_old {
            self.old_flows.push_back(q as u32);
            self.queues[q].list = FlowList::Old;
        } else {
            self.queues[q].list = FlowList::None;
        }
    }

    /// Count and hand on what queue `q`'s CoDel dropped at dequeue (the
    /// packets from index `from` of `dropped`).
    fn count_codel_drops(&mut self, dropped: &[P], from: usize) {
        for p in &dropped[from..] {
            self.forget(p.size_bytes());
            self.stats.drops_dequeue_pkts = self.stats.drops_dequeue_pkts.saturating_add(1);
            self.stats.drops_bytes = self.stats.drops_bytes.saturating_add(u64::from(p.size_bytes()));
        }
    }
}

impl<P: QueuedPacket + Send> Qdisc<P> for FqCoDel<P> {
    fn name(&self) -> &'static str {
        "fq_codel"
    }

    /// RFC 8290 §4.1: classify, timestamp and queue; a queue that was on no
    /// list joins the end of `new_flows` with a full quantum of deficit;
    /// over the limit, the fattest queue loses its head packet, which is
    /// handed back (it is usually not the arriving one).
    fn enqueue(&mut self, now_ns: TimeNs, pkt: P) -> Enqueue<P> {
        let size = pkt.size_bytes();
        self.stats.arrivals_pkts = self.stats.arrivals_pkts.saturating_add(1);
        self.stats.arrivals_bytes = self.stats.arrivals_bytes.saturating_add(u64::from(size));
        let q = self.queue_of(pkt.flow_id());
        // Per-queue CoDel is unbounded: this always queues.
        let _ = self.queues[q].codel.enqueue(now_ns, pkt);
        self.len_pkts += 1;
        self.len_bytes = self.len_bytes.saturating_add(u64::from(size));
        if self.queues[q].list == FlowList::None {
            self.new_flows.push_back(q as u32);
            self.queues[q].list = FlowList::New;
            self.queues[q].deficit = i64::from(self.params.quantum_bytes);
        }
        if exceeds(self.params.limit, self.len_pkts, self.len_bytes) {
            if let Some(victim) = self.drop_from_fattest() {
                return Enqueue::Dropped(victim);
            }
        }
        Enqueue::Queued
    }

    /// RFC 8290 §4.2: serve the head of `new_flows`, else of `old_flows`.
    /// A queue out of deficit gets a quantum and goes to the end of
    /// `old_flows`; otherwise its CoDel gives a packet (charged to the
    /// deficit) or finds the queue empty, which moves a new queue to the
    /// end of `old_flows` and takes an old one off the lists.
    fn dequeue(&mut self, now_ns: TimeNs, dropped: &mut Vec<P>) -> Dequeue<P> {
        while let Some((q, from)) = self.head() {
            if self.queues[q].deficit <= 0 {
                self.queues[q].deficit += i64::from(self.params.quantum_bytes);
                self.rotate(q, from, true);
                continue;
            }
            let before = dropped.len();
            let marks_before = self.queues[q].codel.stats().marks_pkts;
            let beside = self.len_bytes - self.queues[q].codel.len_bytes();
            let r = self.queues[q].codel.dequeue_beside(now_ns, dropped, beside);
            self.count_codel_drops(dropped, before);
            let marks = self.queues[q].codel.stats().marks_pkts - marks_before;
            self.stats.marks_pkts = self.stats.marks_pkts.saturating_add(marks);
            match r {
                Dequeue::Packet { pkt, sojourn_ns } => {
                    let size = pkt.size_bytes();
                    self.queues[q].deficit -= i64::from(size);
                    self.forget(size);
                    self.stats.departures_pkts = self.stats.departures_pkts.saturating_add(1);
                    self.stats.departures_bytes = self.stats.departures_bytes.saturating_add(u64::from(size));
                    return Dequeue::Packet { pkt, sojourn_ns };
                }
                // CoDel never waits; an empty queue leaves its list.
                Dequeue::Empty | Dequeue::Wait(_) => self.rotate(q, from, from == FlowList::New),
            }
        }
        Dequeue::Empty
    }

    fn len_pkts(&self) -> usize {
        self.len_pkts
    }

    fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn ecn_marking(&self) -> bool {
        self.params.ecn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    const MS: u64 = 1_000_000;

    /// A test packet of a flow.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct FPkt {
        flow: u32,
        seq: u64,
        size: u32,
    }

    impl QueuedPacket for FPkt {
        fn size_bytes(&self) -> u32 {
            self.size
        }
        fn flow_id(&self) -> u32 {
            self.flow
        }
    }

    fn pkt(flow: u32, seq: u64, size: u32) -> FPkt {
        FPkt { flow, seq, size }
    }

    /// Two flow ids that hash to different queues under `q`'s key.
    fn two_flows(q: &FqCoDel<FPkt>) -> (u32, u32) {
        let a = 1;
        let b = (2..).find(|&f| q.queue_of(f) != q.queue_of(a)).unwrap();
        (a, b)
    }

    fn sent(q: &mut FqCoDel<FPkt>, now: u64) -> Option<FPkt> {
        let mut d = Vec::new();
        let r = q.dequeue(now, &mut d);
        assert!(d.is_empty(), "unexpected CoDel drops {d:?}");
        match r {
            Dequeue::Packet { pkt, .. } => Some(pkt),
            _ => None,
        }
    }

    fn assert_conserved(q: &FqCoDel<FPkt>) {
        let s = q.stats();
        assert_eq!(
            s.arrivals_pkts,
            s.departures_pkts + s.drops_pkts() + q.len_pkts() as u64
        );
        assert_eq!(
            s.arrivals_bytes,
            s.departures_bytes + s.drops_bytes + q.len_bytes()
        );
        let queued: usize = (0..q.queues.len()).map(|i| q.queue_len_pkts(i)).sum();
        assert_eq!(queued, q.len_pkts());
    }

    #[test]
    fn a_new_flow_joins_new_flows_with_a_quantum() {
        let mut q = FqCoDel::new(FqCoDelParams::default(), 7);
        let (a, b) = two_flows(&q);
        let (qa, qb) = (q.queue_of(a), q.queue_of(b));
        assert_eq!(q.list_of(qa), FlowList::None);
        q.enqueue(0, pkt(a, 0, 1000));
        q.enqueue(0, pkt(a, 1, 1000));
        q.enqueue(0, pkt(b, 2, 1000));
        assert_eq!(q.list_of(qa), FlowList::New);
        assert_eq!(q.deficit(qa), 1514);
        // A second packet of a queued flow does not touch the lists.
        assert_eq!(q.lists(), (vec![qa as u32, qb as u32], vec![]));
    }

    #[test]
    fn drr_charges_bytes_and_refills_one_quantum() {
        // Two backlogged flows of 1000-byte packets, quantum 1514: a
        // queue sends while its deficit is positive (1514 → 514 → −486),
        // then gets 1514 more (1028) at the end of old_flows.
        let mut q = FqCoDel::new(FqCoDelParams::default(), 7);
        let (a, b) = two_flows(&q);
        let (qa, qb) = (q.queue_of(a), q.queue_of(b));
        for s in 0..4 {
            q.enqueue(0, pkt(a, s, 1000));
        }
        for s in 10..14 {
            q.enqueue(0, pkt(b, s, 1000));
        }
        let mut order = Vec::new();
        let mut deficits = Vec::new();
        while let Some(p) = sent(&mut q, 0) {
            order.push(p.flow);
            deficits.push((q.deficit(qa), q.deficit(qb)));
        }
        assert_eq!(order, vec![a, a, b, b, a, a, b, b]);
        assert_eq!(deficits[1], (-486, 1514));
        // A was refilled once (1028) before its third packet.
        assert_eq!(deficits[4].0, 28);
        assert_eq!(deficits[5].0, -972);
        assert_conserved(&q);
    }

    #[test]
    fn a_small_packet_flow_gets_a_quantum_of_bytes_per_round() {
        // 100-byte packets against 1500-byte packets: per round the small
        // flow sends ⌈1514/100⌉ = 16 packets (byte fairness, not packet).
        let mut q = FqCoDel::new(FqCoDelParams::default(), 3);
        let (a, b) = two_flows(&q);
        for s in 0..100 {
            q.enqueue(0, pkt(a, s, 100));
            q.enqueue(0, pkt(b, 1000 + s, 1500));
        }
        let first: Vec<u32> = (0..17).map(|_| sent(&mut q, 0).unwrap().flow).collect();
        assert!(first[..16].iter().all(|&f| f == a), "{first:?}");
        assert_eq!(first[16], b);
    }

    #[test]
    fn an_empty_new_queue_moves_to_the_end_of_old_flows() {
        let mut q = FqCoDel::new(FqCoDelParams::default(), 11);
        let (bulk, sparse) = two_flows(&q);
        let (qb, qs) = (q.queue_of(bulk), q.queue_of(sparse));
        for s in 0..20 {
            q.enqueue(0, pkt(bulk, s, 1500));
        }
        // The bulk queue uses its first quantum and moves to old_flows.
        assert_eq!(sent(&mut q, 0).unwrap().flow, bulk);
        assert_eq!(sent(&mut q, 0).unwrap().flow, bulk);
        q.enqueue(1, pkt(sparse, 100, 200));
        // The sparse (new) flow goes first...
        assert_eq!(sent(&mut q, 1).unwrap().flow, sparse);
        assert_eq!(q.list_of(qs), FlowList::New);
        // ...and once empty is moved behind the bulk queue, not removed.
        assert_eq!(sent(&mut q, 1).unwrap().flow, bulk);
        assert_eq!(q.list_of(qs), FlowList::Old);
        assert_eq!(q.lists(), (vec![], vec![qb as u32, qs as u32]));
        // Its next packet does not make it new again: it waits for its
        // turn on old_flows (no priority from sending one packet at a time).
        q.enqueue(2, pkt(sparse, 101, 200));
        assert_eq!(q.list_of(qs), FlowList::Old);
        assert_eq!(q.lists().0, Vec::<u32>::new());
    }

    #[test]
    fn an_empty_old_queue_leaves_the_lists() {
        let mut q = FqCoDel::new(FqCoDelParams::default(), 5);
        let (a, _) = two_flows(&q);
        let qa = q.queue_of(a);
        q.enqueue(0, pkt(a, 0, 1500));
        assert!(sent(&mut q, 0).is_some());
        // Empty new queue → old_flows → empty old queue → no list.
        assert!(sent(&mut q, 0).is_none());
        assert_eq!(q.list_of(qa), FlowList::None);
        assert_eq!(q.lists(), (vec![], vec![]));
        // A later packet makes it a new flow again, with a fresh quantum.
        q.enqueue(5 * MS, pkt(a, 1, 1500));
        assert_eq!(q.list_of(qa), FlowList::New);
        assert_eq!(q.deficit(qa), 1514);
    }

    #[test]
    fn overflow_drops_the_head_of_the_fattest_queue() {
        let p = FqCoDelParams {
            limit: Limit::Packets(5),
            ..FqCoDelParams::default()
        };
        let mut q = FqCoDel::new(p, 9);
        let (a, b) = two_flows(&q);
        for s in 0..4 {
            assert_eq!(q.enqueue(0, pkt(a, s, 1000)), Enqueue::Queued);
        }
        assert_eq!(q.enqueue(0, pkt(b, 10, 1000)), Enqueue::Queued);
        // The sixth packet (flow b) overflows: a holds the most bytes, so
        // its head (seq 0) goes, and b's packet stays.
        assert_eq!(q.enqueue(0, pkt(b, 11, 1000)), Enqueue::Dropped(pkt(a, 0, 1000)));
        assert_eq!(q.len_pkts(), 5);
        assert_eq!(q.queue_len_pkts(q.queue_of(b)), 2);
        assert_eq!(q.stats().drops_enqueue_pkts, 1);
        assert_conserved(&q);

        // Fattest by bytes, not packets: three 100-byte packets of a
        // against two 1500-byte ones of b.
        let p = FqCoDelParams {
            limit: Limit::Packets(5),
            ..FqCoDelParams::default()
        };
        let mut q = FqCoDel::new(p, 9);
        for s in 0..3 {
            q.enqueue(0, pkt(a, s, 100));
        }
        q.enqueue(0, pkt(b, 10, 1500));
        q.enqueue(0, pkt(b, 11, 1500));
        assert_eq!(q.enqueue(0, pkt(a, 3, 100)), Enqueue::Dropped(pkt(b, 10, 1500)));
        assert_conserved(&q);
    }

    #[test]
    fn codel_runs_per_queue() {
        // A bulk flow keeps a standing queue (enqueued in bulk at 0) while a
        // sparse flow's packets arrive just before they are served: CoDel
        // drops only the bulk flow's packets.
        let mut q = FqCoDel::new(FqCoDelParams::default(), 13);
        let (bulk, sparse) = two_flows(&q);
        for s in 0..2000 {
            q.enqueue(0, pkt(bulk, s, 1500));
        }
        let mut d = Vec::new();
        let mut sparse_sojourns = Vec::new();
        for k in 1..400u64 {
            let now = k * MS;
            if k % 10 == 0 {
                q.enqueue(now - 100_000, pkt(sparse, 10_000 + k, 100));
            }
            if let Dequeue::Packet { pkt, sojourn_ns } = q.dequeue(now, &mut d) {
                if pkt.flow == sparse {
                    sparse_sojourns.push(sojourn_ns);
                }
            }
        }
        assert!(!d.is_empty(), "CoDel should drop from the standing bulk queue");
        assert!(d.iter().all(|p| p.flow == bulk));
        assert_eq!(sparse_sojourns.len(), 39);
        assert!(
            sparse_sojourns.iter().all(|&s| s <= 100_000),
            "{sparse_sojourns:?}"
        );
        assert_eq!(q.stats().drops_dequeue_pkts, d.len() as u64);
        assert_conserved(&q);
    }

    #[test]
    fn a_lone_packet_behind_other_queues_counts_as_a_standing_queue() {
        // One packet at a time in the flow's queue, each 20 ms old when it
        // leaves: CoDel alone never drops (at most one MTU queued); with
        // the other queues' 10 kB beside it, it does (Linux's rule).
        let drops_with = |beside: u64| {
            let mut c = CoDel::new(FqCoDelParams::default().codel());
            let mut d = Vec::new();
            for k in 0..100u64 {
                c.enqueue(k * 30 * MS, pkt(1, k, 1500));
                c.dequeue_beside(k * 30 * MS + 20 * MS, &mut d, beside);
            }
            d.len()
        };
        assert_eq!(drops_with(0), 0);
        assert!(drops_with(10_000) > 10, "{}", drops_with(10_000));
    }

    #[test]
    fn the_hash_is_keyed_by_the_seed_and_spreads_flows() {
        let p = FqCoDelParams::default();
        let q1 = FqCoDel::<FPkt>::new(p, 1);
        let q1b = FqCoDel::<FPkt>::new(p, 1);
        let q2 = FqCoDel::<FPkt>::new(p, 2);
        let map = |q: &FqCoDel<FPkt>| (0..4096).map(|f| q.queue_of(f)).collect::<Vec<_>>();
        assert_eq!(map(&q1), map(&q1b));
        assert_ne!(map(&q1), map(&q2));
        // 10 240 consecutive flow ids over 1024 queues: 10 per queue on
        // average; a hash this good leaves no queue empty or above 30.
        let mut counts = vec![0u32; 1024];
        for f in 0..10_240 {
            counts[q1.queue_of(f)] += 1;
        }
        assert!(counts.iter().all(|&c| (1..=30).contains(&c)), "{counts:?}");
    }

    #[test]
    fn randomized_conservation_invariant() {
        for seed in 0..6 {
            let p = FqCoDelParams {
                flows: 16,
                limit: if seed % 2 == 0 {
                    Limit::Packets(50)
                } else {
                    Limit::Bytes(40_000)
                },
                ..FqCoDelParams::default()
            };
            let mut q = FqCoDel::new(p, seed);
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            let (mut now, mut d) = (0u64, Vec::new());
            for seq in 0..30_000u64 {
                now += rng.random_range(0..2 * MS);
                if rng.random_bool(0.6) {
                    let flow = rng.random_range(0..40);
                    q.enqueue(now, pkt(flow, seq, rng.random_range(40..=1500)));
                } else if let Dequeue::Empty = q.dequeue(now, &mut d) {
                    assert_eq!(q.len_pkts(), 0);
                    assert_eq!(q.lists(), (vec![], vec![]));
                }
                assert_conserved(&q);
            }
            let s = q.stats();
            assert!(s.drops_enqueue_pkts > 0 && s.drops_dequeue_pkts > 0, "{s:?}");
        }
    }

    #[test]
    fn validate_names_the_bad_field() {
        assert!(FqCoDelParams::default().validate().is_ok());
        let d = FqCoDelParams::default();
        for (p, field) in [
            (FqCoDelParams { flows: 0, ..d }, "flows"),
            (FqCoDelParams { flows: 70_000, ..d }, "flows"),
            (
                FqCoDelParams {
                    quantum_bytes: 0,
                    ..d
                },
                "quantum_bytes",
            ),
            (
                FqCoDelParams {
                    limit: Limit::Packets(0),
                    ..d
                },
                "limit",
            ),
            (FqCoDelParams { target_ns: 0, ..d }, "target_ns"),
            (
                FqCoDelParams {
                    target_ns: d.interval_ns,
                    ..d
                },
                "interval_ns",
            ),
        ] {
            let e = p.validate().unwrap_err();
            assert!(e.contains(field), "{e:?} should name {field}");
            assert!(FqCoDel::<FPkt>::try_new(p, 0).is_err());
        }
    }
}
