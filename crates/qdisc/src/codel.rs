//! CoDel, Controlled Delay (RFC 8289), as the RFC's pseudo-code in §5
//! writes it (docs/models/queues.md, "CoDel").
//!
//! CoDel acts at dequeue. A packet's sojourn is dequeue time − enqueue time.
//! When the sojourn has stayed at or above TARGET for INTERVAL (and more
//! than one MTU is queued), CoDel enters the dropping state, drops, and
//! schedules further drops at `drop_next += INTERVAL/√count` until the
//! sojourn falls below TARGET (the control law, RFC 8289 §3.3 and §5.5).
//!
//! ECN (`ecn`): where the control law drops an ECT packet, CoDel marks it
//! CE and sends it instead (RFC 8289 §5: "packets are dropped (or ECN
//! marked)"), counting the mark as the drop in `count` and `drop_next`,
//! and stops there for this dequeue, as Linux's `codel_dequeue` does
//! (include/net/codel_impl.h, `params->ecn`). A full buffer still drops.

use crate::droptail::{Fifo, Limit};
use crate::{Dequeue, Enqueue, Qdisc, QdiscStats, QueuedPacket, TimeNs};

/// CoDel parameters (RFC 8289 §4.2–4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoDelParams {
    /// TARGET: acceptable standing queue delay, ns (RFC 8289 §4.4: 5 ms).
    pub target_ns: u64,
    /// INTERVAL: the time a standing queue may last before drops start,
    /// about a worst-case RTT, ns (RFC 8289 §4.3: 100 ms).
    pub interval_ns: u64,
    /// `maxpacket` in the RFC pseudo-code: with at most this many bytes
    /// left queued, CoDel does not drop (RFC 8289 §5.4).
    pub mtu_bytes: u32,
    /// Physical buffer size; an arrival that does not fit is tail-dropped
    /// (RFC 8289 §5.2, enqueue).
    pub limit: Limit,
    /// Mark ECT packets CE instead of dropping them (RFC 3168 §7).
    pub ecn: bool,
}

impl Default for CoDelParams {
    /// RFC 8289's recommended TARGET 5 ms and INTERVAL 100 ms, a 1500-byte
    /// MTU and a 1000-packet buffer (Linux's default limit).
    fn default() -> Self {
        CoDelParams {
            target_ns: 5_000_000,
            interval_ns: 100_000_000,
            mtu_bytes: 1500,
            limit: Limit::Packets(1000),
            ecn: false,
        }
    }
}

impl CoDelParams {
    /// Check every field; the message names the bad field and what is
    /// expected.
    pub fn validate(&self) -> Result<(), String> {
        if self.target_ns == 0 {
            return Err("target_ns must be greater than 0".to_string());
        }
        if self.interval_ns == 0 {
            return Err("interval_ns must be greater than 0".to_string());
        }
        if self.target_ns >= self.interval_ns {
            return Err(format!(
                "target_ns must be less than interval_ns (target_ns = {}, interval_ns = {})",
                self.target_ns, self.interval_ns
            ));
        }
        if self.mtu_bytes == 0 {
            return Err("mtu_bytes must be greater than 0".to_string());
        }
        self.limit.validate()
    }
}

/// What RFC 8289 §5.4 `dodequeue` returns: the head packet and whether the
/// sojourn has been above TARGET for at least INTERVAL.
struct Dodequeue<P> {
    pkt: P,
    enq_ns: TimeNs,
    ok_to_drop: bool,
}

/// CoDel queue.
#[derive(Debug, Clone)]
pub struct CoDel<P> {
    params: CoDelParams,
    fifo: Fifo<P>,
    /// RFC `first_above_time_`; `None` where the RFC uses 0.
    first_above_ns: Option<TimeNs>,
    /// RFC `drop_next_`: when the next drop is due while dropping.
    drop_next_ns: TimeNs,
    /// RFC `count_`: drops since entering the dropping state (carried over
    /// on a quick re-entry).
    count: u64,
    /// RFC `lastcount_`: `count` at the last entry into the dropping state.
    lastcount: u64,
    /// RFC `dropping_`.
    dropping: bool,
}

impl<P: QueuedPacket> CoDel<P> {
    /// A CoDel queue. Parameters are not checked here (call
    /// [`CoDelParams::validate`] or use [`CoDel::try_new`]); invalid ones
    /// never panic.
    pub fn new(params: CoDelParams) -> Self {
        CoDel {
            params,
            fifo: Fifo::new(),
            first_above_ns: None,
            drop_next_ns: 0,
            count: 0,
            lastcount: 0,
            dropping: false,
        }
    }

    /// [`CoDel::new`] after [`CoDelParams::validate`].
    pub fn try_new(params: CoDelParams) -> Result<Self, String> {
        params.validate()?;
        Ok(Self::new(params))
    }

    pub fn params(&self) -> &CoDelParams {
        &self.params
    }

    /// Whether CoDel is in its dropping state.
    pub fn is_dropping(&self) -> bool {
        self.dropping
    }

    /// RFC `count_`.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Drop the head packet outside CoDel's control law (FQ-CoDel's
    /// overflow drop from the fattest queue, RFC 8290 §4.1.1): it is counted
    /// as a drop and pushed onto `dropped`. False if the queue is empty.
    pub(crate) fn drop_head(&mut self, dropped: &mut Vec<P>) -> bool {
        match self.fifo.pop_front() {
            Some((pkt, _)) => {
                self.fifo.drop_dequeued(pkt, dropped);
                true
            }
            None => false,
        }
    }

    /// RFC 8289 §5.5 `dequeue`, with `beside_bytes` more bytes counted in
    /// the "more than one MTU queued" test of `dodequeue`. FQ-CoDel passes
    /// the backlog of its other queues, as Linux's fq_codel hands CoDel the
    /// whole discipline's backlog: a flow queue holding a single packet
    /// behind a busy link is still a standing queue for that flow.
    pub(crate) fn dequeue_beside(
        &mut self,
        now_ns: TimeNs,
        dropped: &mut Vec<P>,
        beside_bytes: u64,
    ) -> Dequeue<P> {
        let now = now_ns;
        let Some(mut r) = self.dodequeue(now, beside_bytes) else {
            // An empty queue ends the dropping state.
            self.dropping = false;
            return Dequeue::Empty;
        };

        if self.dropping {
            if !r.ok_to_drop {
                // Sojourn went below TARGET: leave the dropping state.
                self.dropping = false;
            }
            // Drop as many packets as the control law says are due; each
            // drop shortens the gap to the next (INTERVAL/√count), which is
            // what makes the drop rate rise until the queue is controlled.
            while self.dropping && now >= self.drop_next_ns {
                self.count = self.count.saturating_add(1);
                if self.mark(&mut r.pkt) {
                    // A mark stands for the drop and ends this dequeue.
                    self.drop_next_ns = self.control_law(self.drop_next_ns, self.count);
                    break;
                }
                self.fifo.drop_dequeued(r.pkt, dropped);
                match self.dodequeue(now, beside_bytes) {
                    None => {
                        self.dropping = false;
                        return Dequeue::Empty;
                    }
                    Some(next) => {
                        r = next;
                        if r.ok_to_drop {
                            self.drop_next_ns = self.control_law(self.drop_next_ns, self.count);
                        } else {
                            self.dropping = false;
                        }
                    }
                }
            }
        } else if r.ok_to_drop {
            // Sojourn has been above TARGET for INTERVAL: enter the dropping
            // state with one drop (or mark).
            let marked = self.mark(&mut r.pkt);
            let next = if marked {
                None
            } else {
                self.fifo.drop_dequeued(r.pkt, dropped);
                self.dodequeue(now, beside_bytes)
            };
            self.dropping = true;
            // If we were dropping recently (drop_next is at most INTERVAL
            // after the last drop, so now − drop_next approximates the time
            // since it), resume near the drop rate that controlled the queue
            // last time instead of restarting at 1 (RFC 8289 §5.5; §5.6
            // notes this is the Linux variant). Saturating: now < drop_next
            // counts as "recent", as the RFC's signed arithmetic does.
            let delta = self.count.saturating_sub(self.lastcount);
            let recent = now.saturating_sub(self.drop_next_ns) < self.params.interval_ns.saturating_mul(16);
            self.count = if delta > 1 && recent { delta } else { 1 };
            self.drop_next_ns = self.control_law(now, self.count);
            self.lastcount = self.count;
            match next {
                _ if marked => {}
                None => return Dequeue::Empty,
                Some(n) => r = n,
            }
        }
        self.fifo.depart(now, r.pkt, r.enq_ns)
    }

    /// Mark `pkt` CE instead of dropping it, if ECN is on and it is ECT.
    fn mark(&mut self, pkt: &mut P) -> bool {
        let marked = crate::try_mark(self.params.ecn, pkt);
        if marked {
            self.fifo.count_mark();
        }
        marked
    }

    /// RFC 8289 §5.5 `control_law`: `t + INTERVAL/√count`. The square root
    /// and division are done in f64 and the result truncated to whole ns
    /// (as the RFC's C++ `(time_t)` conversion does); e.g. 100 ms/√2 =
    /// 70 710 678 ns. Saturates instead of overflowing.
    fn control_law(&self, t: TimeNs, count: u64) -> TimeNs {
        let step = self.params.interval_ns as f64 / (count.max(1) as f64).sqrt();
        // `as` from f64 saturates (and maps NaN to 0): never panics.
        t.saturating_add(step as u64)
    }

    /// RFC 8289 §5.4 `dodequeue`: take the head; `ok_to_drop` once the
    /// sojourn has been ≥ TARGET, with more than one MTU still queued, for
    /// at least INTERVAL.
    ///
    /// `beside_bytes` are bytes queued outside this queue that count as
    /// part of the standing queue: 0 for CoDel on its own; FQ-CoDel passes
    /// the other flow queues' backlog (see [`CoDel::dequeue_beside`]).
    fn dodequeue(&mut self, now: TimeNs, beside_bytes: u64) -> Option<Dodequeue<P>> {
        let Some((pkt, enq_ns)) = self.fifo.pop_front() else {
            self.first_above_ns = None;
            return None;
        };
        let sojourn = now.saturating_sub(enq_ns);
        let mut ok_to_drop = false;
        // `len_bytes` is what is left after taking this packet, as the RFC's
        // `bytes()` after `queue_t::dequeue()`: a single MTU-sized packet
        // behind this one is not a standing queue.
        let backlog = self.fifo.len_bytes().saturating_add(beside_bytes);
        if sojourn < self.params.target_ns || backlog <= u64::from(self.params.mtu_bytes) {
            // Went below (or stayed below) TARGET: must stay above for a
            // whole INTERVAL before dropping.
            self.first_above_ns = None;
        } else {
            match self.first_above_ns {
                None => self.first_above_ns = Some(now.saturating_add(self.params.interval_ns)),
                Some(t) => ok_to_drop = now >= t,
            }
        }
        Some(Dodequeue {
            pkt,
            enq_ns,
            ok_to_drop,
        })
    }
}

impl<P: QueuedPacket + Send> Qdisc<P> for CoDel<P> {
    fn name(&self) -> &'static str {
        "codel"
    }

    fn enqueue(&mut self, now_ns: TimeNs, pkt: P) -> Enqueue<P> {
        // RFC 8289 §5.2: timestamp on arrival; tail-drop if the buffer is
        // full (CoDel itself never drops on enqueue).
        self.fifo.tail_drop_enqueue(self.params.limit, now_ns, pkt)
    }

    /// RFC 8289 §5.5 `dequeue`.
    fn dequeue(&mut self, now_ns: TimeNs, dropped: &mut Vec<P>) -> Dequeue<P> {
        self.dequeue_beside(now_ns, dropped, 0)
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

    fn ecn_marking(&self) -> bool {
        self.params.ecn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::droptail::test_util::*;

    const MS: u64 = 1_000_000;
    const MTU: u32 = 1500;

    /// Drives CoDel so that every packet taken from the head at dequeue
    /// instant `d` (sent or dropped) has sojourn exactly `sojourn(d)`: for
    /// each instant, a batch of `1 + drops expected at d` MTU-sized packets
    /// is enqueued at `d − sojourn(d)`. Enqueues at the same time as a
    /// dequeue go first.
    struct Script {
        q: CoDel<TestPkt>,
        /// (time, 0 = enqueue batch / 1 = dequeue, instant, batch size)
        events: Vec<(u64, u8, u64, usize)>,
        pos: usize,
        sojourn: Box<dyn Fn(u64) -> u64>,
        seq: u64,
        /// (instant, packets dropped then)
        drops: Vec<(u64, usize)>,
    }

    impl Script {
        fn new(
            params: CoDelParams,
            mut instants: Vec<u64>,
            sojourn: impl Fn(u64) -> u64 + 'static,
            expected_drop_instants: &[u64],
        ) -> Self {
            instants.sort_unstable();
            instants.dedup();
            let mut events = Vec::new();
            let mut last_enq = 0;
            for &d in &instants {
                let s = sojourn(d);
                let enq = d - s;
                assert!(enq >= last_enq, "script not FIFO at {d}");
                last_enq = enq;
                let batch = 1 + usize::from(expected_drop_instants.contains(&d));
                events.push((enq, 0, d, batch));
                events.push((d, 1, d, batch));
            }
            events.sort_unstable();
            Script {
                q: CoDel::new(params),
                events,
                pos: 0,
                sojourn: Box::new(sojourn),
                seq: 0,
                drops: Vec::new(),
            }
        }

        fn run_until(&mut self, t_end: u64) {
            let mut dropped = Vec::new();
            while let Some(&(t, kind, d, batch)) = self.events.get(self.pos) {
                if t > t_end {
                    break;
                }
                self.pos += 1;
                if kind == 0 {
                    for _ in 0..batch {
                        let r = self.q.enqueue(t, TestPkt::new(self.seq, MTU));
                        assert_eq!(r, Enqueue::Queued);
                        self.seq += 1;
                    }
                } else {
                    dropped.clear();
                    let r = self.q.dequeue(t, &mut dropped);
                    if !dropped.is_empty() {
                        self.drops.push((d, dropped.len()));
                    }
                    match r {
                        Dequeue::Packet { sojourn_ns, .. } => {
                            assert_eq!(sojourn_ns, (self.sojourn)(d), "sojourn at {d}");
                        }
                        other => panic!("expected a packet at {d}, got {other:?}"),
                    }
                }
                assert_conserved(&self.q);
            }
        }

        fn drop_instants(&self) -> Vec<u64> {
            assert!(self.drops.iter().all(|&(_, n)| n == 1), "{:?}", self.drops);
            self.drops.iter().map(|&(d, _)| d).collect()
        }
    }

    /// Every ms from `from` to `to` inclusive, plus each expected drop
    /// instant and the nanosecond before it (to show drops happen exactly
    /// at, not before, the scheduled time).
    fn instants(from: u64, to: u64, drops: &[u64]) -> Vec<u64> {
        let mut v: Vec<u64> = (from / MS..=to / MS).map(|k| k * MS).collect();
        for &e in drops {
            v.push(e);
            v.push(e - 1);
        }
        v
    }

    // Drop schedule for a sojourn that rises above TARGET at 10 ms and
    // stays there (INTERVAL = 100 ms): first_above = 10 + 100 = 110 ms,
    // then drop_next += 100 ms/√count, truncated to ns:
    //   100/√2 = 70.710678, 100/√3 = 57.735026, 100/√4 = 50,
    //   100/√5 = 44.721359, 100/√6 = 40.824829, 100/√7 = 37.796447 (ms).
    const E1: u64 = 110_000_000; // enter, count = 1
    const E2: u64 = 210_000_000; // count 2
    const E3: u64 = 280_710_678; // count 3
    const E4: u64 = 338_445_704; // count 4
    const E5: u64 = 388_445_704; // count 5
    const E6: u64 = 433_167_063; // count 6
    const E7: u64 = 473_991_892; // count 7
    const AFTER_E7: u64 = 511_788_339;

    #[test]
    fn constant_sojourn_above_target_follows_the_control_law() {
        let expected = [E1, E2, E3, E4, E5, E6, E7];
        // Dequeue instants run on to 510 ms so that the queue is still deep
        // (ten MTUs) at 500 ms.
        let mut s = Script::new(
            CoDelParams::default(),
            instants(10 * MS, 510 * MS, &expected),
            |_| 10 * MS,
            &expected,
        );
        s.run_until(E1 - 1);
        assert!(s.drops.is_empty());
        assert!(!s.q.is_dropping());
        s.run_until(500 * MS);
        assert_eq!(s.drop_instants(), expected);
        assert!(s.q.is_dropping());
        assert_eq!(s.q.count(), 7);
        assert_eq!(s.q.lastcount, 1);
        assert_eq!(s.q.drop_next_ns, AFTER_E7);
        let st = s.q.stats();
        assert_eq!(st.drops_dequeue_pkts, 7);
        assert_eq!(st.drops_enqueue_pkts, 0);
        assert_eq!(st.drops_bytes, 7 * u64::from(MTU));
    }

    /// Dequeues every 100 µs from 390 to 420 ms, so that when the sojourn
    /// falls to 1 ms at 400 ms about ten MTUs are still queued: dropping
    /// ends because of the sojourn, not because the queue ran short.
    fn dense_around_400ms() -> impl Iterator<Item = u64> {
        (3900..4200).map(|k| k * MS / 10)
    }

    /// Phase A: sojourn 10 ms until 400 ms (drops E1..E5, count 5), then
    /// 1 ms (leave dropping) until `rise_at`, then rising by 1 ms per ms
    /// back to 10 ms.
    fn reentry_sojourn(rise_at: u64) -> impl Fn(u64) -> u64 {
        move |d| {
            if d < 400 * MS {
                10 * MS
            } else if d < rise_at {
                MS
            } else {
                (MS + (d - rise_at) / MS * MS).min(10 * MS)
            }
        }
    }

    #[test]
    fn quick_reentry_resumes_with_count_delta() {
        // Sojourn reaches TARGET again at 424 ms (1 ms + 4 ms), so
        // first_above = 524 ms. There: δ = count − lastcount = 5 − 1 = 4 > 1
        // and now − drop_next = 524 − 433.167063 ms < 16·INTERVAL, so
        // count = 4 and drop_next = 524 + 100/√4 = 574 ms; then count 5,
        // drop_next = 574 + 44.721359 = 618.721359 ms; then count 6.
        let expected = [E1, E2, E3, E4, E5, 524 * MS, 574 * MS, 618_721_359];
        let mut times = instants(10 * MS, 650 * MS, &expected);
        times.extend(dense_around_400ms());
        let mut s = Script::new(
            CoDelParams::default(),
            times,
            reentry_sojourn(420 * MS),
            &expected,
        );
        s.run_until(400 * MS - 1);
        assert!(s.q.is_dropping());
        assert_eq!(s.q.count(), 5);
        s.run_until(400 * MS);
        assert!(s.q.len_bytes() > 5 * u64::from(MTU));
        assert!(!s.q.is_dropping(), "sojourn 1 ms < TARGET leaves dropping");
        assert_eq!(s.q.count(), 5, "count is kept for a quick re-entry");
        s.run_until(524 * MS - 1);
        assert!(!s.q.is_dropping());
        s.run_until(524 * MS);
        assert!(s.q.is_dropping());
        assert_eq!(s.q.count(), 4);
        assert_eq!(s.q.lastcount, 4);
        assert_eq!(s.q.drop_next_ns, 574 * MS);
        s.run_until(650 * MS);
        assert_eq!(s.drop_instants(), expected);
        assert_eq!(s.q.count(), 6);
        assert_eq!(s.q.drop_next_ns, 618_721_359 + 40_824_829);
    }

    #[test]
    fn late_reentry_restarts_count_at_one() {
        // Rise again at 2500 ms: first_above = 2504 + 100 = 2604 ms, and
        // now − drop_next = 2604 − 433.167 ms > 16·INTERVAL = 1.6 s, so
        // count = 1: drops at 2604 and 2704 ms, then drop_next = 2704 +
        // 70.710678 ms.
        let expected = [E1, E2, E3, E4, E5, 2604 * MS, 2704 * MS];
        let mut times = instants(10 * MS, 2750 * MS, &expected);
        times.extend(dense_around_400ms());
        let mut s = Script::new(
            CoDelParams::default(),
            times,
            reentry_sojourn(2500 * MS),
            &expected,
        );
        s.run_until(2604 * MS);
        assert_eq!(s.q.count(), 1);
        assert_eq!(s.q.lastcount, 1);
        s.run_until(2750 * MS);
        assert_eq!(s.drop_instants(), expected);
        assert_eq!(s.q.count(), 2);
        assert_eq!(s.q.drop_next_ns, 2704 * MS + 70_710_678);
    }

    #[test]
    fn drops_at_coarse_dequeue_times_keep_the_schedule() {
        // Dequeues every 20 ms (d = 50, 70, ...), sojourn 50 ms: two more
        // MTUs stay queued behind each head, so the queue counts as
        // standing. first_above = 50 + 100 = 150 ms; drop_next advances
        // from drop_next, not from the (late) dequeue that performs the
        // drop: 250, 320.710678, 378.445704, 428.445704, 473.167063 ms;
        // drops happen at the first dequeue at or after each.
        let expected = [150 * MS, 250 * MS, 330 * MS, 390 * MS, 430 * MS, 490 * MS];
        let times: Vec<u64> = (0..25).map(|k| 50 * MS + k * 20 * MS).collect();
        let mut s = Script::new(CoDelParams::default(), times, |_| 50 * MS, &expected);
        s.run_until(520 * MS);
        assert_eq!(s.drop_instants(), expected);
        assert_eq!(s.q.count(), 6);
    }

    #[test]
    fn no_drops_below_target() {
        // Sojourn 1 ns below TARGET with a deep queue (five MTUs) for 10 s.
        let target = CoDelParams::default().target_ns;
        let mut s = Script::new(
            CoDelParams::default(),
            instants(5 * MS, 10_000 * MS, &[]),
            move |_| target - 1,
            &[],
        );
        s.run_until(u64::MAX);
        assert!(s.drops.is_empty());
        assert_eq!(s.q.stats().drops_pkts(), 0);
        assert!(s.q.first_above_ns.is_none());
    }

    #[test]
    fn no_drops_with_at_most_one_mtu_queued() {
        // Dequeues every 30 ms with sojourn 50 ms: behind each head exactly
        // one MTU-sized packet is queued, which is not a standing queue.
        let times: Vec<u64> = (0..400).map(|k| 50 * MS + k * 30 * MS).collect();
        let mut s = Script::new(CoDelParams::default(), times, |_| 50 * MS, &[]);
        s.run_until(u64::MAX);
        assert!(s.drops.is_empty());
        assert_eq!(s.q.stats().drops_pkts(), 0);
    }

    #[test]
    fn one_dequeue_drops_every_packet_that_is_due() {
        let mut q = CoDel::new(CoDelParams::default());
        for seq in 0..100 {
            q.enqueue(0, TestPkt::new(seq, MTU));
        }
        let mut d = Vec::new();
        assert!(matches!(q.dequeue(10 * MS, &mut d), Dequeue::Packet { pkt, .. } if pkt.seq == 0));
        assert!(d.is_empty());
        // first_above = 110 ms: enter dropping, drop seq 1, send seq 2.
        assert!(
            matches!(q.dequeue(E1, &mut d), Dequeue::Packet { pkt, sojourn_ns } if pkt.seq == 2 && sojourn_ns == E1)
        );
        assert_eq!(d, vec![TestPkt::new(1, MTU)]);
        // At 400 ms the drops due at 210, 280.71, 338.45 and 388.45 ms all
        // happen now; the next is at 433.17 ms.
        d.clear();
        assert!(matches!(q.dequeue(400 * MS, &mut d), Dequeue::Packet { pkt, .. } if pkt.seq == 7));
        assert_eq!(d.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![3, 4, 5, 6]);
        assert_eq!(q.count(), 5);
        assert_eq!(q.drop_next_ns, E6);
        assert_eq!(q.stats().drops_dequeue_pkts, 5);
        assert_conserved(&q);
    }

    #[test]
    fn draining_the_queue_leaves_dropping_state() {
        let mut q = CoDel::new(CoDelParams::default());
        for seq in 0..5 {
            q.enqueue(0, TestPkt::new(seq, MTU));
        }
        let mut d = Vec::new();
        q.dequeue(10 * MS, &mut d); // seq 0; first_above = 110 ms
        q.dequeue(E1, &mut d); // drops seq 1, sends seq 2
        assert!(q.is_dropping());
        assert_eq!(d.len(), 1);
        // Taking seq 3 leaves one MTU (seq 4): not ok_to_drop, so dropping
        // ends at drop_next although the sojourn is far above TARGET.
        assert!(matches!(q.dequeue(E2, &mut d), Dequeue::Packet { pkt, .. } if pkt.seq == 3));
        assert!(!q.is_dropping());
        assert_eq!(d.len(), 1);
        assert!(matches!(q.dequeue(E2, &mut d), Dequeue::Packet { pkt, .. } if pkt.seq == 4));
        assert_eq!(q.dequeue(E2, &mut d), Dequeue::Empty);
        assert!(!q.is_dropping());
        assert_eq!(q.stats().departures_pkts, 4);
        assert_conserved(&q);

        // An empty queue also ends the dropping state directly. (A tiny
        // MTU lets CoDel drop with a single packet behind the head.)
        let mut q = CoDel::new(CoDelParams {
            mtu_bytes: 100,
            ..CoDelParams::default()
        });
        for seq in 0..3 {
            q.enqueue(0, TestPkt::new(seq, MTU));
        }
        q.dequeue(10 * MS, &mut d);
        q.dequeue(E1, &mut d); // drops seq 1, sends seq 2: queue now empty
        assert!(q.is_dropping());
        assert_eq!(q.dequeue(E1 + 1, &mut d), Dequeue::Empty);
        assert!(!q.is_dropping());
        assert_conserved(&q);
    }

    #[test]
    fn limit_tail_drops_on_enqueue() {
        let p = CoDelParams {
            limit: Limit::Packets(3),
            ..CoDelParams::default()
        };
        let mut q = CoDel::new(p);
        for seq in 0..5 {
            let r = q.enqueue(0, TestPkt::new(seq, 100));
            assert_eq!(r == Enqueue::Queued, seq < 3);
        }
        assert_eq!(q.stats().drops_enqueue_pkts, 2);
        assert_eq!(q.stats().drops_dequeue_pkts, 0);
        assert_eq!(q.stats().drops_bytes, 200);
        assert_conserved(&q);
    }

    #[test]
    fn randomized_conservation_invariant() {
        for seed in 0..8 {
            let p = CoDelParams {
                limit: Limit::Packets(200),
                ..CoDelParams::default()
            };
            let mut q = CoDel::new(p);
            random_invariant_run(&mut q, seed, 50_000);
            assert!(q.stats().drops_dequeue_pkts > 0);
            let p = CoDelParams {
                target_ns: 1,
                interval_ns: 2,
                mtu_bytes: 1,
                limit: Limit::Bytes(30_000),
                ecn: true,
            };
            let mut q = CoDel::new(p);
            random_invariant_run(&mut q, seed, 20_000);
        }
    }

    #[test]
    fn validate_names_the_bad_field() {
        assert!(CoDelParams::default().validate().is_ok());
        let d = CoDelParams::default();
        let cases = [
            (CoDelParams { target_ns: 0, ..d }, "target_ns"),
            (CoDelParams { interval_ns: 0, ..d }, "interval_ns"),
            (
                CoDelParams {
                    target_ns: 200_000_000,
                    ..d
                },
                "target_ns must be less than interval_ns",
            ),
            (CoDelParams { mtu_bytes: 0, ..d }, "mtu_bytes"),
            (
                CoDelParams {
                    limit: Limit::Bytes(0),
                    ..d
                },
                "limit",
            ),
        ];
        for (p, field) in cases {
            let e = p.validate().unwrap_err();
            assert!(e.contains(field), "{e:?} should name {field}");
            assert!(CoDel::<TestPkt>::try_new(p).is_err());
        }
    }

    #[test]
    fn extreme_params_do_not_panic() {
        let cases = [
            CoDelParams {
                target_ns: 0,
                interval_ns: 0,
                mtu_bytes: 0,
                limit: Limit::Packets(50),
                ecn: false,
            },
            CoDelParams {
                target_ns: u64::MAX,
                interval_ns: u64::MAX,
                mtu_bytes: u32::MAX,
                limit: Limit::Bytes(u64::MAX),
                ecn: true,
            },
            CoDelParams {
                interval_ns: u64::MAX,
                ..CoDelParams::default()
            },
        ];
        for p in cases {
            let mut q = CoDel::new(p);
            random_invariant_run(&mut q, 3, 5_000);
            let mut d = Vec::new();
            for seq in 0..10 {
                q.enqueue(u64::MAX - 5, TestPkt::new(1_000_000 + seq, 1));
            }
            for _ in 0..12 {
                q.dequeue(u64::MAX, &mut d);
            }
            assert_conserved(&q);
        }
    }
}
