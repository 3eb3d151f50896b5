//! PIE, Proportional Integral controller Enhanced (RFC 8033).
//!
//! PIE drops arriving packets at random with a probability it updates every
//! T_UPDATE (15 ms) from the queueing delay: up in proportion to how far the
//! delay is above QDELAY_REF and to how fast it grew (alpha, beta; §4.2),
//! with the gains scaled down while the probability is small (the
//! auto-tuning table of §4.2), the step capped at 2 % once the probability
//! is at least 10 % (§5.5), and a 2 % decay per update while the queue stays
//! empty (§4.2). A burst allowance (MAX_BURST, 150 ms) lets a new burst in
//! without drops (§4.4), and no packet is dropped while the delay is below
//! half the target with a small probability, or with at most two packets'
//! worth of bytes queued (§4.1).
//!
//! Delay estimate: the timestamp variant (§4.3, the RFC's pseudo-code in
//! Appendix A): the sojourn of the packet last dequeued, 0 once the queue
//! has emptied (as Linux). The departure-rate estimator of §5.2 is not
//! implemented, nor the optional de-randomization (§5.4) and the
//! active/inactive switch (§5.3).
//!
//! ECN (`ecn`, RFC 8033 §5.1): a random drop of an ECT packet becomes a
//! CE mark while the drop probability is at most 10 %; above that ECT
//! packets are dropped too, so that unresponsive ECN traffic cannot fill
//! the queue. A full buffer always drops.
//!
//! There is no timer in a sans-IO queue: the updates due at T_UPDATE, 2
//! T_UPDATE, … after the first arrival are run, in order, by the first
//! enqueue or dequeue at or after each, which is what a periodic timer
//! would have done (an idle queue's decay included).

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::droptail::{Fifo, Limit};
use crate::{Dequeue, Ecn, Enqueue, Qdisc, QdiscStats, QueuedPacket, TimeNs, Verdict};

/// PIE parameters (RFC 8033 §4, the recommended values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PieParams {
    /// QDELAY_REF, the target queueing delay, ns (15 ms).
    pub target_ns: u64,
    /// T_UPDATE, the drop probability's update period, ns (15 ms).
    pub t_update_ns: u64,
    /// alpha, Hz (0.125): weight of the delay's distance from the target.
    pub alpha: f64,
    /// beta, Hz (1.25): weight of the delay's change since the last update.
    pub beta: f64,
    /// MAX_BURST, ns (150 ms).
    pub max_burst_ns: u64,
    /// MEAN_PKTSIZE, bytes: with at most two of these queued, no drop (§4.1).
    pub mean_pkt_size_bytes: u32,
    /// Physical buffer; an arrival that does not fit is tail-dropped.
    pub limit: Limit,
    /// Mark ECT packets CE instead of dropping them while the drop
    /// probability is at most 10 % (§5.1).
    pub ecn: bool,
}

impl Default for PieParams {
    /// RFC 8033's values and Linux's 1000-packet limit.
    fn default() -> Self {
        PieParams {
            target_ns: 15_000_000,
            t_update_ns: 15_000_000,
            alpha: 0.125,
            beta: 1.25,
            max_burst_ns: 150_000_000,
            mean_pkt_size_bytes: 1500,
            limit: Limit::Packets(1000),
            ecn: false,
        }
    }
}

impl PieParams {
    /// Check every field; the message names the bad field and what is
    /// expected.
    pub fn validate(&self) -> Result<(), String> {
        if self.target_ns == 0 {
            return Err("target_ns must be greater than 0".to_string());
        }
        if self.t_update_ns == 0 {
            return Err("t_update_ns must be greater than 0".to_string());
        }
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} must be a finite number ≥ 0 (got {v})"));
            }
        }
        if self.mean_pkt_size_bytes == 0 {
            return Err("mean_pkt_size_bytes must be greater than 0".to_string());
        }
        self.limit.validate()
    }
}

/// RFC 8033 §4.2's auto-tuning: the factor alpha and beta are divided by
/// while the drop probability is below each bound, so that a small
/// probability moves in small steps.
const AUTO_TUNING: [(f64, f64); 6] = [
    (0.000_001, 2048.0),
    (0.000_01, 512.0),
    (0.000_1, 128.0),
    (0.001, 32.0),
    (0.01, 8.0),
    (0.1, 2.0),
];

/// Above this probability a single update adds at most `MAX_STEP` (§5.5).
const CAP_FROM_PROB: f64 = 0.1;
const MAX_STEP: f64 = 0.02;
/// The multiplier per update while the queue stays empty (§4.2: 98 %).
const IDLE_DECAY: f64 = 0.98;
/// Below this probability (and delay below half the target) no early drop (§4.1).
const SAFE_PROB: f64 = 0.2;
/// Up to this drop probability an ECT packet is marked instead (§5.1: "if
/// the drop probability is below 10 %, ... mark").
const MARK_ECN_TH: f64 = 0.1;

/// PIE queue.
#[derive(Debug, Clone)]
pub struct Pie<P> {
    params: PieParams,
    fifo: Fifo<P>,
    /// RFC `drop_prob_`.
    drop_prob: f64,
    /// RFC `current_qdelay`: the latest delay sample, ns.
    qdelay_ns: u64,
    /// RFC `qdelay_old_`: the sample at the last update, ns.
    qdelay_old_ns: u64,
    /// RFC `burst_allowance_`, ns.
    burst_allowance_ns: u64,
    /// When the next T_UPDATE is due (`None` before the first arrival).
    next_update_ns: Option<TimeNs>,
    rng: Pcg64Mcg,
}

impl<P: QueuedPacket> Pie<P> {
    /// A PIE queue drawing its random drops from `Pcg64Mcg::seed_from_u64(seed)`,
    /// one draw per arrival that reaches the random test. Parameters are not
    /// checked here (see [`PieParams::validate`]).
    pub fn new(params: PieParams, seed: u64) -> Self {
        Pie {
            params,
            fifo: Fifo::new(),
            drop_prob: 0.0,
            qdelay_ns: 0,
            qdelay_old_ns: 0,
            burst_allowance_ns: params.max_burst_ns,
            next_update_ns: None,
            rng: Pcg64Mcg::seed_from_u64(seed),
        }
    }

    /// [`Pie::new`] after [`PieParams::validate`].
    pub fn try_new(params: PieParams, seed: u64) -> Result<Self, String> {
        params.validate()?;
        Ok(Self::new(params, seed))
    }

    pub fn params(&self) -> &PieParams {
        &self.params
    }

    /// RFC `drop_prob_`.
    pub fn drop_prob(&self) -> f64 {
        self.drop_prob
    }

    /// RFC `burst_allowance_`, ns.
    pub fn burst_allowance_ns(&self) -> u64 {
        self.burst_allowance_ns
    }

    /// RFC `current_qdelay`, ns.
    pub fn qdelay_ns(&self) -> u64 {
        self.qdelay_ns
    }

    /// RFC 8033 §4.2 (Appendix A `calculate_drop_prob`): one T_UPDATE step.
    fn update(&mut self) {
        let s = |ns: u64| ns as f64 * 1e-9;
        let (cur, old, target) = (self.qdelay_ns, self.qdelay_old_ns, self.params.target_ns);
        let mut p = self.params.alpha * (s(cur) - s(target)) + self.params.beta * (s(cur) - s(old));
        if let Some(&(_, div)) = AUTO_TUNING.iter().find(|&&(bound, _)| self.drop_prob < bound) {
            p /= div;
        }
        if self.drop_prob >= CAP_FROM_PROB && p > MAX_STEP {
            p = MAX_STEP;
        }
        self.drop_prob += p;
        if cur == 0 && old == 0 {
            self.drop_prob *= IDLE_DECAY;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        self.qdelay_old_ns = cur;
        self.burst_allowance_ns = self.burst_allowance_ns.saturating_sub(self.params.t_update_ns);
    }

    /// An update leaves nothing to change: the queue has been idle long
    /// enough that every further update is the identity.
    fn settled(&self) -> bool {
        self.drop_prob == 0.0
            && self.qdelay_ns == 0
            && self.qdelay_old_ns == 0
            && self.burst_allowance_ns == 0
    }

    /// Run every update due at or before `now`, in order.
    fn catch_up(&mut self, now: TimeNs) {
        let t = self.params.t_update_ns.max(1);
        let Some(mut next) = self.next_update_ns else {
            self.next_update_ns = Some(now.saturating_add(t));
            return;
        };
        while next <= now {
            if self.settled() {
                // Skip the identity updates arithmetically.
                next = next.saturating_add((now - next) / t * t);
                next = next.saturating_add(t);
                break;
            }
            self.update();
            next = next.saturating_add(t);
            if next == u64::MAX {
                break;
            }
        }
        self.next_update_ns = Some(next);
    }

    /// The drop decision for an arrival (RFC 8033 Appendix A `enque` and
    /// `drop_early`, §4.1 and §4.4), and the one place a congestion signal
    /// is chosen: an ECT packet is marked instead of dropped while the
    /// probability is at most MARK_ECN_TH (§5.1).
    fn verdict(&mut self, ecn: Ecn) -> Verdict {
        let half = self.params.target_ns / 2;
        // §4.4: the burst allowance is restored once the queue is calm.
        if self.drop_prob == 0.0 && self.qdelay_ns < half && self.qdelay_old_ns < half {
            self.burst_allowance_ns = self.params.max_burst_ns;
        }
        if self.burst_allowance_ns > 0 {
            return Verdict::Enqueue;
        }
        // §4.1: stay work conserving.
        let small = 2 * u64::from(self.params.mean_pkt_size_bytes);
        if (self.qdelay_old_ns < half && self.drop_prob < SAFE_PROB) || self.fifo.len_bytes() <= small {
            return Verdict::Enqueue;
        }
        let u: f64 = self.rng.random();
        if u >= self.drop_prob {
            Verdict::Enqueue
        } else if self.params.ecn && ecn.is_ect() && self.drop_prob <= MARK_ECN_TH {
            Verdict::Mark
        } else {
            Verdict::Drop
        }
    }
}

impl<P: QueuedPacket + Send> Qdisc<P> for Pie<P> {
    fn name(&self) -> &'static str {
        "pie"
    }

    fn enqueue(&mut self, now_ns: TimeNs, mut pkt: P) -> Enqueue<P> {
        self.catch_up(now_ns);
        let fits = self
            .params
            .limit
            .admits(self.fifo.len_pkts(), self.fifo.len_bytes(), pkt.size_bytes());
        if !fits {
            return self.fifo.arrive_and_drop(pkt);
        }
        match self.verdict(pkt.ecn()) {
            Verdict::Enqueue => self.fifo.arrive_and_queue(now_ns, pkt),
            Verdict::Mark => {
                pkt.set_ce();
                self.fifo.count_mark();
                self.fifo.arrive_and_queue(now_ns, pkt)
            }
            Verdict::Drop => {
                let r = self.fifo.arrive_and_drop(pkt);
                self.fifo.count_early_drop();
                r
            }
        }
    }

    /// The delay sample is this packet's sojourn, or 0 once the queue is
    /// empty (RFC 8033 §4.3, timestamp variant).
    fn dequeue(&mut self, now_ns: TimeNs, _dropped: &mut Vec<P>) -> Dequeue<P> {
        self.catch_up(now_ns);
        let Some((pkt, enq)) = self.fifo.pop_front() else {
            self.qdelay_ns = 0;
            return Dequeue::Empty;
        };
        let r = self.fifo.depart(now_ns, pkt, enq);
        self.qdelay_ns = if self.fifo.len_pkts() == 0 {
            0
        } else {
            now_ns.saturating_sub(enq)
        };
        r
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
    const T: u64 = 15 * MS;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1e-12)
    }

    /// A PIE with the given state, its first update due at T.
    fn pie_with(drop_prob: f64, qdelay_ms: u64, qdelay_old_ms: u64) -> Pie<TestPkt> {
        let mut q = Pie::new(PieParams::default(), 1);
        q.drop_prob = drop_prob;
        q.qdelay_ns = qdelay_ms * MS;
        q.qdelay_old_ns = qdelay_old_ms * MS;
        q.next_update_ns = Some(T);
        q
    }

    /// alpha·(cur − ref) + beta·(cur − old), seconds.
    fn raw_step(cur_ms: u64, old_ms: u64) -> f64 {
        let s = |ms: u64| ms as f64 * 1e-3;
        0.125 * (s(cur_ms) - 0.015) + 1.25 * (s(cur_ms) - s(old_ms))
    }

    #[test]
    fn the_update_is_proportional_integral_with_auto_tuning() {
        // Delay 25 ms, 20 ms at the last update: raw step 0.125·0.010 +
        // 1.25·0.005 = 0.0075, divided by the §4.2 table's factor for the
        // current probability.
        let raw = raw_step(25, 20);
        assert!(close(raw, 0.0075));
        for (p0, div) in [
            (0.0, 2048.0),
            (5e-7, 2048.0),
            (5e-6, 512.0),
            (5e-5, 128.0),
            (5e-4, 32.0),
            (5e-3, 8.0),
            (0.05, 2.0),
            (0.15, 1.0),
        ] {
            let mut q = pie_with(p0, 25, 20);
            q.update();
            assert!(
                close(q.drop_prob(), p0 + raw / div),
                "p0 = {p0}: {}",
                q.drop_prob()
            );
            assert_eq!(q.qdelay_old_ns, 25 * MS, "qdelay_old takes the sample");
        }
    }

    #[test]
    fn a_large_step_is_capped_at_two_percent_above_ten_percent() {
        // 200 ms against 100 ms: raw step 0.023 + 0.125 = 0.148.
        let mut q = pie_with(0.3, 200, 100);
        q.update();
        assert!(close(q.drop_prob(), 0.32));
        // Below 10 % the step is halved instead, not capped.
        let mut q = pie_with(0.05, 200, 100);
        q.update();
        assert!(close(q.drop_prob(), 0.05 + raw_step(200, 100) / 2.0));
        // The probability never leaves [0, 1].
        let mut q = pie_with(0.995, 200, 100);
        q.update();
        assert_eq!(q.drop_prob(), 1.0);
        let mut q = pie_with(0.5, 0, 400);
        q.update();
        assert_eq!(q.drop_prob(), 0.0);
    }

    #[test]
    fn an_idle_queue_decays_the_probability_by_two_percent_per_update() {
        // Queue empty: delay 0 now and at the last update. At 15 % the
        // step is −alpha·ref = −0.001875 (no scaling), then the 98 % decay.
        let mut q = pie_with(0.15, 0, 0);
        q.update();
        assert!(
            close(q.drop_prob(), (0.15 - 0.125 * 0.015) * 0.98),
            "{}",
            q.drop_prob()
        );
        // Driven by the clock: a queue emptied at 0 and left idle for 300
        // ms runs the 20 updates due, each decaying.
        let mut q = pie_with(0.5, 0, 0);
        let mut p = 0.5f64;
        for _ in 0..20 {
            p = ((p + (-0.125 * 0.015)) * 0.98).clamp(0.0, 1.0);
        }
        let mut d = Vec::new();
        assert_eq!(q.dequeue(300 * MS, &mut d), Dequeue::Empty);
        assert!(close(q.drop_prob(), p), "{} vs {p}", q.drop_prob());
        assert_eq!(q.next_update_ns, Some(315 * MS));
    }

    #[test]
    fn no_decay_while_a_delay_is_measured() {
        // Delay at target and unchanged: step 0, no decay.
        let mut q = pie_with(0.15, 15, 15);
        q.update();
        assert!(close(q.drop_prob(), 0.15));
    }

    #[test]
    fn updates_run_every_t_update_from_the_first_arrival() {
        let mut q = Pie::new(PieParams::default(), 1);
        q.enqueue(4 * MS, TestPkt::new(0, 1500));
        assert_eq!(q.next_update_ns, Some(19 * MS));
        // A long idle stretch is skipped once the state is settled.
        let mut d = Vec::new();
        q.dequeue(5 * MS, &mut d);
        q.dequeue(3_600_000 * MS + 1, &mut d);
        assert_eq!(q.next_update_ns, Some(3_600_004 * MS));
        assert_eq!(q.drop_prob(), 0.0);
    }

    #[test]
    fn burst_allowance_admits_a_burst_then_runs_out() {
        // High probability, but the burst allowance (150 ms) lets
        // everything in; it shrinks by T_UPDATE per update.
        let mut q = Pie::new(PieParams::default(), 3);
        q.enqueue(0, TestPkt::new(0, 1500));
        q.drop_prob = 0.9;
        q.qdelay_old_ns = 100 * MS;
        q.qdelay_ns = 100 * MS;
        for k in 1..=9u64 {
            // Updates at 15, 30, ... 135 ms: allowance 135, 120, ..., 15 ms.
            assert_eq!(q.enqueue(k * T, TestPkt::new(k, 1500)), Enqueue::Queued);
            assert_eq!(q.burst_allowance_ns(), 150 * MS - k * T);
            q.qdelay_ns = 100 * MS; // keep the delay (no dequeues here)
        }
        // At 150 ms it reaches 0: random drops start.
        let mut drops = 0;
        for k in 10..200u64 {
            if let Enqueue::Dropped(_) = q.enqueue(10 * T + k, TestPkt::new(k, 1500)) {
                drops += 1;
            }
        }
        assert_eq!(q.burst_allowance_ns(), 0);
        assert!(drops > 120, "{drops} drops of 190 at p ≈ 0.9+");
        assert_eq!(q.stats().drops_early_pkts, drops);
    }

    #[test]
    fn the_burst_allowance_is_restored_when_the_queue_is_calm() {
        let mut q = pie_with(0.0, 5, 3);
        q.burst_allowance_ns = 0;
        assert_eq!(q.verdict(Ecn::NotEct), Verdict::Enqueue);
        assert_eq!(q.burst_allowance_ns(), 150 * MS);
        // Not while the probability is positive.
        let mut q = pie_with(0.01, 5, 3);
        q.burst_allowance_ns = 0;
        q.verdict(Ecn::NotEct);
        assert_eq!(q.burst_allowance_ns(), 0);
    }

    /// Fill a PIE (no burst allowance left) with `n` 1500-byte packets.
    fn loaded(drop_prob: f64, qdelay_old_ms: u64, n: u64) -> Pie<TestPkt> {
        let mut q = pie_with(drop_prob, qdelay_old_ms, qdelay_old_ms);
        for s in 0..n {
            q.fifo.arrive_and_queue(0, TestPkt::new(s, 1500));
        }
        q.burst_allowance_ns = 0;
        q
    }

    fn drop_fraction(q: &mut Pie<TestPkt>, trials: u32) -> f64 {
        let drops = (0..trials)
            .filter(|_| q.verdict(Ecn::NotEct) == Verdict::Drop)
            .count();
        drops as f64 / f64::from(trials)
    }

    #[test]
    fn no_early_drop_below_half_the_target_with_a_small_probability() {
        // Delay 7 ms < 7.5 ms and p = 19 %: never.
        assert_eq!(drop_fraction(&mut loaded(0.19, 7, 20), 10_000), 0.0);
        // p = 20 %: the safeguard is off and about 20 % are dropped.
        let f = drop_fraction(&mut loaded(0.2, 7, 20), 10_000);
        assert!((0.18..0.22).contains(&f), "{f}");
        // Delay 8 ms ≥ 7.5 ms with p = 10 %: about 10 %.
        let f = drop_fraction(&mut loaded(0.1, 8, 20), 10_000);
        assert!((0.085..0.115).contains(&f), "{f}");
        // At most two mean packets queued (3000 bytes): never.
        assert_eq!(drop_fraction(&mut loaded(0.9, 100, 2), 10_000), 0.0);
        assert!(drop_fraction(&mut loaded(0.9, 100, 3), 1_000) > 0.8);
    }

    #[test]
    fn the_delay_sample_is_the_sojourn_and_zero_once_empty() {
        let mut q = Pie::new(PieParams::default(), 1);
        let mut d = Vec::new();
        q.enqueue(0, TestPkt::new(0, 1500));
        q.enqueue(MS, TestPkt::new(1, 1500));
        q.dequeue(10 * MS, &mut d);
        assert_eq!(q.qdelay_ns(), 10 * MS);
        q.dequeue(12 * MS, &mut d);
        assert_eq!(q.qdelay_ns(), 0);
    }

    #[test]
    fn same_seed_same_drops() {
        let run = |seed| {
            let mut q = Pie::new(PieParams::default(), seed);
            let mut d = Vec::new();
            let mut out = Vec::new();
            // 2 packets in per packet out: the delay grows and PIE drops.
            for k in 0..20_000u64 {
                out.push(matches!(
                    q.enqueue(k * MS / 2, TestPkt::new(k, 1500)),
                    Enqueue::Dropped(_)
                ));
                if k % 2 == 0 {
                    q.dequeue(k * MS / 2, &mut d);
                }
            }
            out
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
        assert!(run(5).iter().any(|&x| x));
    }

    #[test]
    fn limit_tail_drops_and_conservation() {
        let p = PieParams {
            limit: Limit::Packets(3),
            ..PieParams::default()
        };
        let mut q = Pie::new(p, 0);
        for s in 0..5 {
            assert_eq!(q.enqueue(0, TestPkt::new(s, 100)) == Enqueue::Queued, s < 3);
        }
        assert_eq!(q.stats().drops_early_pkts, 0);
        assert_conserved(&q);
        for seed in 0..6 {
            let mut q = Pie::new(
                PieParams {
                    limit: Limit::Packets(100),
                    ..PieParams::default()
                },
                seed,
            );
            random_invariant_run(&mut q, seed, 40_000);
            assert!(q.stats().drops_early_pkts > 0, "{:?}", q.stats());
        }
    }

    #[test]
    fn validate_names_the_bad_field() {
        let d = PieParams::default();
        assert!(d.validate().is_ok());
        for (p, field) in [
            (PieParams { target_ns: 0, ..d }, "target_ns"),
            (PieParams { t_update_ns: 0, ..d }, "t_update_ns"),
            (PieParams { alpha: -1.0, ..d }, "alpha"),
            (PieParams { beta: f64::NAN, ..d }, "beta"),
            (
                PieParams {
                    mean_pkt_size_bytes: 0,
                    ..d
                },
                "mean_pkt_size_bytes",
            ),
            (
                PieParams {
                    limit: Limit::Bytes(0),
                    ..d
                },
                "limit",
            ),
        ] {
            let e = p.validate().unwrap_err();
            assert!(e.contains(field), "{e:?} should name {field}");
            assert!(Pie::<TestPkt>::try_new(p, 0).is_err());
        }
    }
}
