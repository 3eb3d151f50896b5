//! The optimal edge pacer (docs/models/edge-pacer.md).
//!
//! The pacer accepts any traffic and releases the smoothest output such that
//! no packet is held longer than the delay bound d. In the curves of the
//! model page: A(t) is the cumulative bits admitted, packet k arrives at
//! a_k and brings the total to B_k, the deadline curve is D(t) = A(t − d),
//! and the pacer's fluid exit curve S(t) stays between them.
//!
//! **Fluid.** At time t the smoothest feasible continuation from
//! P0 = (t, S(t)) runs along the upper concave chain (hull) over the deadline
//! points (a_k + d, B_k) of the packets not yet reached by S; the fluid rate
//! is the slope of the chain's first edge,
//! r(t) = max over those k of (B_k − S(t)) / (a_k + d − t),
//! capped at the link rate. The hull is kept in a deque exactly as the
//! model page says: an arrival pops dominated points from the back (O(1)
//! amortised), and the fluid pops the front point when it reaches it.
//! Between events S advances at the current rate; nothing is done per
//! nanosecond.
//!
//! **Packets.** Packet k is released when the fluid has passed all of it,
//! S ≥ B_k (the first of the model's two choices). That gives the full
//! spacing (a lone packet leaves exactly at its deadline) and, because the
//! chain lies on or above every deadline point, S reaches B_k by a_k + d.
//! Releasing at S ≥ B_(k−1) would cut delay but lets a lone packet out at
//! once.
//!
//! Two further release rules make the guarantee hold for the packets as the
//! link actually sends them, not only for the fluid:
//! - *Link feasibility.* The link sends one packet at a time at its rate C,
//!   so a big packet released just before a small one can push the small
//!   one past its deadline although the fluid met it. The pacer therefore
//!   also releases the head k once `now ≥ e_k`, the latest start that still
//!   lets a FIFO link of rate C start every queued packet j ≥ k by its
//!   deadline: e_k = min over queued j ≥ k of (a_j + d − Σ_(k≤i<j) tx_i),
//!   with tx_i the link's serialisation time in whole ns, rounded up as the
//!   simulator's link does. This is a sliding-window minimum (a monotone
//!   deque, O(1) amortised) in integer arithmetic, and e_k ≤ a_k + d, so it
//!   is also the guard against float rounding in the fluid: a packet is
//!   never released after its deadline unless the link was busy or the
//!   caller was late. Guarantee: if, whenever a packet arrives, a FIFO link
//!   of rate C could still start every queued packet by its deadline (the
//!   link keeps up), then no packet starts transmission after its deadline.
//! - *Saturation.* When the fluid rate is capped (the smoothest feasible
//!   rate is at least the link rate) there is nothing to smooth, and the
//!   pacer is work-conserving: back-to-back arrivals leave back-to-back.
//!
//! The fluid never depends on when packets actually leave; the two rules
//! above only release packets earlier than the fluid would.
//!
//! **Online versus offline.** The fluid rate at every instant is the lowest
//! feasible rate given what has arrived (the first hull edge). The offline
//! taut string, which knows future arrivals, can have a lower peak: a packet
//! of L bits at 0 and another at d/2 give the online pacer L/d then 1.5·L/d,
//! while the offline string runs at 4/3·L/d throughout. So the online peak
//! is never below the offline minimum, equals it when every burst of
//! arrivals is known by the time its first packet arrives (arrivals in
//! instantaneous bursts more than d apart), and exceeds it otherwise (see
//! the tests).
//!
//! d = 0 disables pacing: the pacer is a FIFO with the same tail-drop limit.
//!
//! Rates are f64 in bits per ns; times are integer ns.

use std::collections::VecDeque;

use crate::droptail::{Fifo, Limit};
use crate::{Dequeue, Enqueue, Qdisc, QdiscStats, QueuedPacket, TimeNs};

/// Edge pacer parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgePacerParams {
    /// d: no packet is held longer than this, ns. 0 disables pacing.
    pub delay_bound_ns: u64,
    /// Rate of the outgoing link, bits per second: the fluid rate cap and
    /// the serialisation rate assumed by the link-feasibility rule.
    pub link_rate_bps: u64,
    /// Physical buffer size; an arrival that does not fit is tail-dropped.
    pub limit: Limit,
}

impl EdgePacerParams {
    /// Check every field; the message names the bad field.
    pub fn validate(&self) -> Result<(), String> {
        if self.link_rate_bps == 0 {
            return Err("link_rate_bps must be greater than 0".to_string());
        }
        self.limit.validate()
    }
}

/// A deadline point (a_k + d, B_k).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    x_ns: u64,
    y_bits: u64,
}

/// Slope from (x0, y0) to `p`, bits per ns. A point at or before x0 that is
/// still above y0 is due now or overdue: +∞.
fn slope(x0: u64, y0: f64, p: Point) -> f64 {
    let dy = p.y_bits as f64 - y0;
    if p.x_ns > x0 {
        dy / (p.x_ns - x0) as f64
    } else if dy > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

/// The optimal edge pacer.
#[derive(Debug, Clone)]
pub struct EdgePacer<P> {
    params: EdgePacerParams,
    fifo: Fifo<P>,
    /// The head packet, taken out of `fifo` so that it can be inspected; it
    /// still counts as queued (`Fifo` has no peek).
    head: Option<(P, TimeNs)>,
    /// Largest `now` seen: a caller whose clock steps back is treated as
    /// calling at this time.
    last_now_ns: TimeNs,
    link_bits_per_ns: f64,

    /// P0: where the current fluid segment starts (ns, bits).
    p0_ns: TimeNs,
    p0_bits: f64,
    /// Fluid rate, bits per ns, ≤ the link rate.
    rate: f64,
    /// The smoothest feasible rate is at or above the link rate.
    capped: bool,
    /// Upper concave chain over the deadline points not yet reached by S:
    /// x increasing, slopes decreasing.
    hull: VecDeque<Point>,
    peak_rate: f64,

    /// B of the last admitted packet, and Σ tx_i over admitted packets.
    admitted_bits: u64,
    admitted_tx_ns: u64,
    admitted_pkts: u64,
    /// The same sums over released packets (so B_(head−1) = released_bits).
    released_bits: u64,
    released_tx_ns: u64,
    released_pkts: u64,
    /// Sliding-window minimum of v_j = a_j + d − Σ_(i<j) tx_i over queued
    /// packets: (packet index, v_j), indices increasing, v increasing.
    /// e_head = front v + released_tx_ns.
    latest_start: VecDeque<(u64, i128)>,
    late_pkts: u64,
}

impl<P: QueuedPacket> EdgePacer<P> {
    /// An edge pacer. Parameters are not checked here (call
    /// [`EdgePacerParams::validate`] or use [`EdgePacer::try_new`]); invalid
    /// ones never panic.
    pub fn new(params: EdgePacerParams) -> Self {
        EdgePacer {
            params,
            fifo: Fifo::new(),
            head: None,
            last_now_ns: 0,
            link_bits_per_ns: params.link_rate_bps as f64 / 1e9,
            p0_ns: 0,
            p0_bits: 0.0,
            rate: 0.0,
            capped: false,
            hull: VecDeque::new(),
            peak_rate: 0.0,
            admitted_bits: 0,
            admitted_tx_ns: 0,
            admitted_pkts: 0,
            released_bits: 0,
            released_tx_ns: 0,
            released_pkts: 0,
            latest_start: VecDeque::new(),
            late_pkts: 0,
        }
    }

    /// [`EdgePacer::new`] after [`EdgePacerParams::validate`].
    pub fn try_new(params: EdgePacerParams) -> Result<Self, String> {
        params.validate()?;
        Ok(Self::new(params))
    }

    pub fn params(&self) -> &EdgePacerParams {
        &self.params
    }

    /// Current fluid release rate, bits per second.
    pub fn rate_bps(&self) -> f64 {
        self.rate * 1e9
    }

    /// Highest fluid release rate so far, bits per second.
    pub fn peak_rate_bps(&self) -> f64 {
        self.peak_rate * 1e9
    }

    /// Packets released after their deadline (arrival + d): only when the
    /// link could not keep up or the caller called `dequeue` late.
    pub fn late_pkts(&self) -> u64 {
        self.late_pkts
    }

    /// Serialisation time at the link rate, ns, rounded up (as the
    /// simulator's fixed-rate link).
    fn tx_ns(&self, size_bytes: u32) -> u64 {
        let bits = u128::from(size_bytes) * 8 * 1_000_000_000;
        let t = bits.div_ceil(u128::from(self.params.link_rate_bps.max(1)));
        u64::try_from(t).unwrap_or(u64::MAX)
    }

    /// Rate of the first hull edge from P0, capped at the link rate.
    fn set_rate(&mut self) {
        match self.hull.front() {
            None => {
                self.rate = 0.0;
                self.capped = false;
            }
            Some(&h) => {
                let s = slope(self.p0_ns, self.p0_bits, h);
                self.capped = s >= self.link_bits_per_ns;
                self.rate = if self.capped { self.link_bits_per_ns } else { s };
                self.peak_rate = self.peak_rate.max(self.rate);
            }
        }
    }

    /// When the fluid reaches `y_bits` on the current segment (rounded up
    /// to whole ns). Uncapped, the first hull point is reached exactly at
    /// its x.
    fn reach_ns(&self, y_bits: u64) -> TimeNs {
        let dy = y_bits as f64 - self.p0_bits;
        if dy <= 0.0 {
            return self.p0_ns;
        }
        let at = if self.rate > 0.0 {
            // `as` saturates (inf → u64::MAX): never panics.
            self.p0_ns.saturating_add((dy / self.rate).ceil() as u64)
        } else {
            TimeNs::MAX
        };
        match self.hull.front() {
            Some(h) if !self.capped && y_bits >= h.y_bits => h.x_ns,
            Some(h) if !self.capped => at.min(h.x_ns),
            _ => at,
        }
    }

    /// Advance the fluid to `now`: every hull point it reaches becomes P0
    /// and is popped (docs/models/edge-pacer.md: "the fluid reaches H[0]").
    fn advance(&mut self, now: TimeNs) {
        while let Some(&h) = self.hull.front() {
            let at = self.reach_ns(h.y_bits);
            if at > now {
                break;
            }
            self.p0_ns = at;
            self.p0_bits = h.y_bits as f64;
            self.hull.pop_front();
            self.set_rate();
        }
    }

    /// S(now), for `now` before the next hull point is reached.
    fn fluid_bits(&self, now: TimeNs) -> f64 {
        let s = self.p0_bits + self.rate * now.saturating_sub(self.p0_ns) as f64;
        match self.hull.front() {
            Some(h) => s.min(h.y_bits as f64),
            None => self.p0_bits,
        }
    }

    fn monotone_now(&mut self, now: TimeNs) -> TimeNs {
        self.last_now_ns = self.last_now_ns.max(now);
        self.last_now_ns
    }

    /// Book-keeping for an admitted packet (d > 0).
    fn admit(&mut self, now: TimeNs, size_bytes: u32) {
        let deadline = now.saturating_add(self.params.delay_bound_ns);
        let index = self.admitted_pkts;
        self.admitted_pkts += 1;

        // Link feasibility: v = deadline − Σ tx of the packets before it.
        let v = i128::from(deadline) - i128::from(self.admitted_tx_ns);
        while self.latest_start.back().is_some_and(|&(_, b)| b >= v) {
            self.latest_start.pop_back();
        }
        self.latest_start.push_back((index, v));
        self.admitted_tx_ns = self.admitted_tx_ns.saturating_add(self.tx_ns(size_bytes));

        let bits = u64::from(size_bytes) * 8;
        self.admitted_bits = self.admitted_bits.saturating_add(bits);
        if bits == 0 {
            // Same y as the point before it, later or equal x: dominated.
            return;
        }

        // Fluid: P0 = (now, S(now)), then the model's pop rule for the new
        // deadline point q.
        self.advance(now);
        self.p0_bits = self.fluid_bits(now);
        self.p0_ns = now;
        let q = Point {
            x_ns: deadline,
            y_bits: self.admitted_bits,
        };
        while let Some(&last) = self.hull.back() {
            let n = self.hull.len();
            let before = if n >= 2 {
                let p = self.hull[n - 2];
                slope(p.x_ns, p.y_bits as f64, last)
            } else {
                slope(self.p0_ns, self.p0_bits, last)
            };
            if before <= slope(last.x_ns, last.y_bits as f64, q) {
                self.hull.pop_back();
            } else {
                break;
            }
        }
        self.hull.push_back(q);
        self.set_rate();
    }

    fn release(&mut self, now: TimeNs, pkt: P, enq_ns: TimeNs) -> Dequeue<P> {
        if self.params.delay_bound_ns > 0 {
            let index = self.released_pkts;
            self.released_pkts += 1;
            self.released_bits = self.released_bits.saturating_add(u64::from(pkt.size_bytes()) * 8);
            self.released_tx_ns = self.released_tx_ns.saturating_add(self.tx_ns(pkt.size_bytes()));
            if self.latest_start.front().is_some_and(|&(i, _)| i == index) {
                self.latest_start.pop_front();
            }
        }
        if now > enq_ns.saturating_add(self.params.delay_bound_ns) {
            self.late_pkts += 1;
        }
        self.fifo.depart(now, pkt, enq_ns)
    }
}

impl<P: QueuedPacket + Send> Qdisc<P> for EdgePacer<P> {
    fn name(&self) -> &'static str {
        "edge_pacer"
    }

    fn enqueue(&mut self, now_ns: TimeNs, pkt: P) -> Enqueue<P> {
        let now = self.monotone_now(now_ns);
        if !self
            .params
            .limit
            .admits(self.len_pkts(), self.len_bytes(), pkt.size_bytes())
        {
            return self.fifo.arrive_and_drop(pkt);
        }
        if self.params.delay_bound_ns > 0 {
            self.admit(now, pkt.size_bytes());
        }
        self.fifo.arrive_and_queue(now, pkt)
    }

    fn dequeue(&mut self, now_ns: TimeNs, _dropped: &mut Vec<P>) -> Dequeue<P> {
        let now = self.monotone_now(now_ns);
        if self.head.is_none() {
            self.head = self.fifo.pop_front();
        }
        let Some((pkt, enq_ns)) = self.head else {
            return Dequeue::Empty;
        };
        if self.params.delay_bound_ns == 0 {
            self.head = None;
            return self.release(now, pkt, enq_ns);
        }

        self.advance(now);
        // Rule 2, link feasibility (integer ns): e_head ≤ deadline.
        let latest = self
            .latest_start
            .front()
            .map_or(i128::from(TimeNs::MAX), |&(_, v)| {
                (v + i128::from(self.released_tx_ns)).clamp(0, i128::from(TimeNs::MAX))
            }) as TimeNs;
        // Rule 1, the fluid has passed the packet: S ≥ B_head. If B_head
        // lies beyond the first hull point, wake at that point and look
        // again (the segment after it has another rate).
        let b_head = self.released_bits.saturating_add(u64::from(pkt.size_bytes()) * 8);
        let fluid_at = match self.hull.front() {
            None => now, // S has reached every admitted bit.
            Some(h) if b_head <= h.y_bits => self.reach_ns(b_head),
            Some(h) => self.reach_ns(h.y_bits),
        };
        let fluid_passed = fluid_at <= now && self.hull.front().is_none_or(|h| b_head <= h.y_bits);
        // Rule 3: saturated, so work-conserving.
        if self.capped || fluid_passed || latest <= now {
            self.head = None;
            return self.release(now, pkt, enq_ns);
        }
        // Both are > now here (reached hull points were popped).
        Dequeue::Wait(fluid_at.min(latest).max(now.saturating_add(1)))
    }

    fn len_pkts(&self) -> usize {
        self.fifo.len_pkts() + usize::from(self.head.is_some())
    }

    fn len_bytes(&self) -> u64 {
        self.fifo.len_bytes() + self.head.map_or(0, |(p, _)| u64::from(p.size_bytes()))
    }

    fn stats(&self) -> &QdiscStats {
        self.fifo.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::droptail::test_util::*;
    use crate::DropTail;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    /// splitmix64: a small local PRNG for the property tests.
    struct Prng(u64);

    impl Prng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        /// Uniform in [lo, hi].
        fn range(&mut self, lo: u64, hi: u64) -> u64 {
            lo + self.next() % (hi - lo + 1)
        }
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
        /// Exponential with the given mean, whole ns.
        fn exp(&mut self, mean: f64) -> u64 {
            (-mean * (1.0 - self.unit()).ln()) as u64
        }
    }

    fn params(d: u64, rate_bps: u64) -> EdgePacerParams {
        EdgePacerParams {
            delay_bound_ns: d,
            link_rate_bps: rate_bps,
            limit: Limit::Packets(1_000_000),
        }
    }

    fn tx_ns(size: u32, rate_bps: u64) -> u64 {
        (u64::from(size) * 8 * 1_000_000_000).div_ceil(rate_bps)
    }

    /// Arrivals (time ns, size bytes), times non-decreasing, sizes 40–1500.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Traffic {
        /// Poisson, mean gap `gap_ns`.
        Light { gap_ns: u64 },
        /// Bursts of 1–`max_burst` packets, 0–`spread_ns` apart inside a
        /// burst, exponential gaps of mean `gap_ns` between bursts.
        Bursty {
            max_burst: u64,
            spread_ns: u64,
            gap_ns: u64,
        },
    }

    fn arrivals(rng: &mut Prng, traffic: Traffic, n: usize) -> Vec<(u64, u32)> {
        let mut t = rng.range(0, 10 * US);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            match traffic {
                Traffic::Light { gap_ns } => {
                    out.push((t, rng.range(40, 1500) as u32));
                    t += rng.exp(gap_ns as f64);
                }
                Traffic::Bursty {
                    max_burst,
                    spread_ns,
                    gap_ns,
                } => {
                    for _ in 0..rng.range(1, max_burst) {
                        out.push((t, rng.range(40, 1500) as u32));
                        t += rng.range(0, spread_ns);
                    }
                    t += rng.exp(gap_ns as f64);
                }
            }
        }
        out.truncate(n);
        out
    }

    /// What a link did with one arrival sequence.
    struct Run {
        /// Start of transmission of each packet (None: dropped).
        starts: Vec<Option<u64>>,
        /// At every arrival, a FIFO link of rate C starting then could
        /// still start every queued packet by its deadline.
        link_keeps_up: bool,
        pacer: EdgePacer<TestPkt>,
    }

    /// Drive the pacer as a link of rate `p.link_rate_bps` does: call
    /// `dequeue` on each arrival when the transmitter is free, when it
    /// frees up, and at the `Wait` times; also at `extra_calls` (sorted),
    /// which must not change anything.
    fn drive(p: EdgePacerParams, arr: &[(u64, u32)], extra_calls: &[u64]) -> Run {
        let rate = p.link_rate_bps;
        let mut q = EdgePacer::new(p);
        let mut starts = vec![None; arr.len()];
        let mut mirror: VecDeque<usize> = VecDeque::new();
        let mut free_at = 0u64;
        let mut call_at: Option<u64> = None;
        let mut link_keeps_up = true;
        let (mut i, mut j) = (0, 0);
        let mut dropped = Vec::new();
        let mut call = |q: &mut EdgePacer<TestPkt>,
                        now: u64,
                        mirror: &mut VecDeque<usize>,
                        free_at: &mut u64,
                        call_at: &mut Option<u64>,
                        starts: &mut Vec<Option<u64>>| {
            match q.dequeue(now, &mut dropped) {
                Dequeue::Packet { pkt, sojourn_ns } => {
                    let k = pkt.seq as usize;
                    assert_eq!(mirror.pop_front(), Some(k), "FIFO order");
                    assert_eq!(sojourn_ns, now - arr[k].0);
                    starts[k] = Some(now);
                    *free_at = now + tx_ns(pkt.size, rate);
                    *call_at = (q.len_pkts() > 0).then_some(*free_at);
                }
                Dequeue::Wait(t) => {
                    assert!(t > now, "Wait({t}) at {now}");
                    *call_at = Some(call_at.map_or(t, |c| c.min(t)));
                }
                Dequeue::Empty => assert_eq!(q.len_pkts(), 0),
            }
            assert!(dropped.is_empty());
        };
        loop {
            let ta = arr.get(i).map(|a| a.0).unwrap_or(u64::MAX);
            let tc = call_at.unwrap_or(u64::MAX);
            let te = extra_calls.get(j).copied().unwrap_or(u64::MAX);
            if ta == u64::MAX && tc == u64::MAX {
                break;
            }
            if ta <= tc && ta <= te {
                let (now, size) = arr[i];
                if q.enqueue(now, TestPkt::new(i as u64, size)) == Enqueue::Queued {
                    mirror.push_back(i);
                }
                i += 1;
                let mut f = now.max(free_at);
                for &k in &mirror {
                    link_keeps_up &= f <= arr[k].0 + p.delay_bound_ns;
                    f += tx_ns(arr[k].1, rate);
                }
                if free_at <= now {
                    call(&mut q, now, &mut mirror, &mut free_at, &mut call_at, &mut starts);
                } else if call_at.is_none() {
                    call_at = Some(free_at);
                }
            } else if tc <= te {
                call_at = None;
                if free_at <= tc {
                    call(&mut q, tc, &mut mirror, &mut free_at, &mut call_at, &mut starts);
                } else {
                    call_at = Some(free_at);
                }
            } else {
                j += 1;
                if free_at <= te && q.len_pkts() > 0 {
                    call(&mut q, te, &mut mirror, &mut free_at, &mut call_at, &mut starts);
                }
            }
            assert_conserved(&q);
        }
        assert_eq!(q.len_pkts(), 0);
        Run {
            starts,
            link_keeps_up,
            pacer: q,
        }
    }

    /// Offline reference: the peak slope of the taut string (shortest path)
    /// from (a_1, 0) between the deadline curve D(t) = A(t − d), which the
    /// path must reach at each corner (a_k + d, B_k), and the arrival curve
    /// A(t), which it must stay under at each corner (a_k, B_(k−1)). O(n²)
    /// funnel: extend the feasible slope interval corner by corner; when it
    /// closes, the string bends at the corner that set the violated bound.
    fn offline_peak_bits_per_ns(arr: &[(u64, u32)], d: u64) -> f64 {
        // (x, y, is_upper)
        let mut corners = Vec::with_capacity(2 * arr.len());
        let mut b = 0u64;
        for &(a, size) in arr {
            corners.push((a as f64, b as f64, true));
            b += u64::from(size) * 8;
            corners.push(((a + d) as f64, b as f64, false));
        }
        corners.sort_by(|u, v| u.0.total_cmp(&v.0));
        let end_x = corners.iter().filter(|c| !c.2).map(|c| c.0).fold(0.0, f64::max);
        let (mut px, mut py) = (arr[0].0 as f64, 0.0);
        let mut peak: f64 = 0.0;
        loop {
            let (mut lo, mut lo_pt) = (f64::NEG_INFINITY, (px, py));
            let (mut hi, mut hi_pt) = (f64::INFINITY, (px, py));
            let mut bend = None;
            for &(x, y, is_upper) in corners.iter().filter(|c| c.0 > px) {
                let s = (y - py) / (x - px);
                if is_upper && s < hi {
                    if s < lo {
                        bend = Some((lo_pt, lo));
                        break;
                    }
                    (hi, hi_pt) = (s, (x, y));
                } else if !is_upper && s > lo {
                    if s > hi {
                        bend = Some((hi_pt, hi));
                        break;
                    }
                    (lo, lo_pt) = (s, (x, y));
                }
            }
            let ((x, y), s) = match bend {
                Some(b) => b,
                None if lo > f64::NEG_INFINITY => (lo_pt, lo),
                None => return peak,
            };
            peak = peak.max(s);
            (px, py) = (x, y);
            if bend.is_none() && px >= end_x {
                return peak;
            }
        }
    }

    /// Brute force of the model's r(t): max over admitted k with B_k > S of
    /// (B_k − S) / (a_k + d − t).
    fn brute_force_rate(q: &EdgePacer<TestPkt>, arr: &[(u64, u32)], upto: usize, d: u64, now: u64) -> f64 {
        let s = q.fluid_bits(now);
        let mut b = 0u64;
        let mut r: f64 = 0.0;
        for &(a, size) in &arr[..upto] {
            b += u64::from(size) * 8;
            if b as f64 > s {
                r = r.max(slope(
                    now,
                    s,
                    Point {
                        x_ns: a + d,
                        y_bits: b,
                    },
                ));
            }
        }
        r
    }

    fn traffic_mix(rng: &mut Prng, d: u64) -> Traffic {
        match rng.range(0, 3) {
            0 => Traffic::Light { gap_ns: 2 * d },
            1 => Traffic::Light { gap_ns: d / 8 },
            2 => Traffic::Bursty {
                max_burst: 20,
                spread_ns: 20 * US,
                gap_ns: d,
            },
            _ => Traffic::Bursty {
                max_burst: 5,
                spread_ns: d / 4,
                gap_ns: d / 2,
            },
        }
    }

    #[test]
    fn no_packet_starts_after_its_deadline_when_the_link_keeps_up() {
        let mut rng = Prng(1);
        let (mut runs, mut kept_up, mut pkts) = (0, 0, 0);
        let (mut late_overload, mut worst_overload_ns, mut worst_excess_over_fifo_ns) = (0, 0, 0);
        for rate in [10_000_000u64, 100_000_000] {
            for d in [2 * MS, 5 * MS, 20 * MS] {
                for _ in 0..40 {
                    let traffic = traffic_mix(&mut rng, d);
                    let arr = arrivals(&mut rng, traffic, 300);
                    let run = drive(params(d, rate), &arr, &[]);
                    runs += 1;
                    assert!(run.starts.iter().all(Option::is_some));
                    let late = arr
                        .iter()
                        .zip(&run.starts)
                        .filter(|(a, s)| s.unwrap() > a.0 + d)
                        .count();
                    assert_eq!(late as u64, run.pacer.late_pkts());
                    if run.link_keeps_up {
                        kept_up += 1;
                        pkts += arr.len();
                        assert_eq!(late, 0, "{traffic:?} d {d} rate {rate}");
                    } else {
                        late_overload += late;
                        let worst = arr
                            .iter()
                            .zip(&run.starts)
                            .map(|(a, s)| s.unwrap().saturating_sub(a.0 + d))
                            .max()
                            .unwrap_or(0);
                        worst_overload_ns = worst_overload_ns.max(worst);
                        // A FIFO on the same link, measured against the same
                        // deadlines.
                        let fifo = drive(params(0, rate), &arr, &[]);
                        let fifo_worst = arr
                            .iter()
                            .zip(&fifo.starts)
                            .map(|(a, s)| s.unwrap().saturating_sub(a.0 + d))
                            .max()
                            .unwrap_or(0);
                        worst_excess_over_fifo_ns =
                            worst_excess_over_fifo_ns.max(worst.saturating_sub(fifo_worst));
                    }
                    let s = run.pacer.stats();
                    assert_eq!(s.arrivals_pkts, s.departures_pkts);
                }
            }
        }
        println!(
            "link kept up in {kept_up} of {runs} runs ({pkts} packets, none late); \
             overloaded runs: {late_overload} late packets, worst {worst_overload_ns} ns late, \
             at most {worst_excess_over_fifo_ns} ns later than a FIFO's worst"
        );
        // Not vacuous: most runs are ones the link can carry.
        assert!(kept_up * 3 >= runs * 2, "{kept_up} of {runs}");
        assert!(pkts > 40_000);
    }

    #[test]
    fn no_packet_is_released_late_by_the_fluid_alone() {
        // A very fast link (serialisation ~0): the releases are the fluid's
        // own, and every packet leaves by its deadline.
        let mut rng = Prng(2);
        for _ in 0..200 {
            let d = rng.range(1, 20) * MS;
            let traffic = traffic_mix(&mut rng, d);
            let arr = arrivals(&mut rng, traffic, 300);
            let run = drive(params(d, 1_000_000_000_000_000), &arr, &[]);
            assert!(run.link_keeps_up);
            assert_eq!(run.pacer.late_pkts(), 0);
            for (a, s) in arr.iter().zip(&run.starts) {
                assert!(s.unwrap() <= a.0 + d);
            }
        }
    }

    #[test]
    fn calling_dequeue_early_or_often_changes_nothing() {
        let mut rng = Prng(3);
        for _ in 0..60 {
            let d = 5 * MS;
            let traffic = traffic_mix(&mut rng, d);
            let arr = arrivals(&mut rng, traffic, 200);
            let end = arr.last().unwrap().0 + 2 * d;
            let mut extra: Vec<u64> = (0..2000).map(|_| rng.range(0, end)).collect();
            extra.sort_unstable();
            let base = drive(params(d, 20_000_000), &arr, &[]);
            let busy = drive(params(d, 20_000_000), &arr, &extra);
            assert_eq!(base.starts, busy.starts);
        }
    }

    #[test]
    fn fluid_rate_is_the_first_hull_edge() {
        // (2a) At every arrival the deque's rate equals the model's r(t),
        // computed by brute force over all points not yet reached.
        let mut rng = Prng(4);
        for _ in 0..200 {
            let d = rng.range(1, 20) * MS;
            let traffic = traffic_mix(&mut rng, d);
            let arr = arrivals(&mut rng, traffic, 300);
            let mut q = EdgePacer::new(params(d, u64::MAX));
            for (k, &(a, size)) in arr.iter().enumerate() {
                q.enqueue(a, TestPkt::new(k as u64, size));
                let r = brute_force_rate(&q, &arr, k + 1, d, a);
                assert!((q.rate - r).abs() <= 1e-9 * r, "{} vs {r}", q.rate);
                // The deque holds x increasing, slopes decreasing.
                let h = &q.hull;
                for w in 1..h.len() {
                    assert!(h[w - 1].x_ns <= h[w].x_ns && h[w - 1].y_bits < h[w].y_bits);
                }
                for w in 2..h.len() {
                    let s1 = slope(h[w - 2].x_ns, h[w - 2].y_bits as f64, h[w - 1]);
                    let s2 = slope(h[w - 1].x_ns, h[w - 1].y_bits as f64, h[w]);
                    assert!(s1 > s2);
                }
            }
        }
    }

    fn online_peak(arr: &[(u64, u32)], d: u64) -> f64 {
        let mut q = EdgePacer::new(params(d, u64::MAX));
        for (k, &(a, size)) in arr.iter().enumerate() {
            q.enqueue(a, TestPkt::new(k as u64, size));
        }
        q.peak_rate
    }

    /// Relative tolerance for online-versus-offline peak rates: both are
    /// slopes of integer points computed in f64 (~1e-15 relative error).
    const PEAK_TOL: f64 = 1e-9;

    #[test]
    fn online_peak_equals_offline_when_bursts_are_known_on_arrival() {
        // Bursts arrive at one instant each, more than d apart: the online
        // pacer knows each whole burst when it starts, so its peak is the
        // offline minimum.
        let mut rng = Prng(5);
        for _ in 0..300 {
            let d = rng.range(1, 20) * MS;
            let arr = arrivals(
                &mut rng,
                Traffic::Bursty {
                    max_burst: 30,
                    spread_ns: 0,
                    gap_ns: 3 * d,
                },
                200,
            );
            // Make every inter-burst gap exceed d.
            let mut shifted = Vec::with_capacity(arr.len());
            let mut extra = 0;
            for w in 0..arr.len() {
                if w > 0 && arr[w].0 != arr[w - 1].0 {
                    extra += d + 1;
                }
                shifted.push((arr[w].0 + extra, arr[w].1));
            }
            let on = online_peak(&shifted, d);
            let off = offline_peak_bits_per_ns(&shifted, d);
            assert!((on - off).abs() <= PEAK_TOL * off, "online {on} offline {off}");
        }
    }

    #[test]
    fn online_peak_is_never_below_the_offline_minimum() {
        let mut rng = Prng(6);
        let (mut n, mut equal, mut max_ratio, mut sum_ratio) = (0, 0, 1.0f64, 0.0);
        for _ in 0..400 {
            let d = rng.range(1, 20) * MS;
            let traffic = traffic_mix(&mut rng, d);
            let arr = arrivals(&mut rng, traffic, 300);
            let on = online_peak(&arr, d);
            let off = offline_peak_bits_per_ns(&arr, d);
            assert!(on >= off * (1.0 - PEAK_TOL), "online {on} below offline {off}");
            n += 1;
            equal += usize::from(on <= off * (1.0 + PEAK_TOL));
            max_ratio = max_ratio.max(on / off);
            sum_ratio += on / off;
        }
        println!(
            "online/offline peak over {n} random sequences: equal in {equal}, mean ratio {:.4}, max {:.4}",
            sum_ratio / n as f64,
            max_ratio
        );
    }

    #[test]
    fn online_can_exceed_offline_when_a_later_arrival_surprises_it() {
        // L bits at 0, L bits at d/2: online L/d then 1.5·L/d; offline the
        // straight line to (1.5·d, 2L) at 4/3·L/d, which stays under A.
        let (d, size) = (10 * MS, 1000u32);
        let arr = [(0, size), (d / 2, size)];
        let l = 8.0 * f64::from(size);
        assert!((online_peak(&arr, d) - 1.5 * l / d as f64).abs() < 1e-12);
        assert!((offline_peak_bits_per_ns(&arr, d) - 4.0 / 3.0 * l / d as f64).abs() < 1e-12);
    }

    #[test]
    fn offline_reference_checks() {
        // One packet: L/d. Two at once: 2L/d. Two d apart: L/d.
        let d = 4 * MS;
        let l = 8000.0 / d as f64;
        assert!((offline_peak_bits_per_ns(&[(0, 1000)], d) - l).abs() < 1e-15);
        assert!((offline_peak_bits_per_ns(&[(0, 1000), (0, 1000)], d) - 2.0 * l).abs() < 1e-15);
        assert!((offline_peak_bits_per_ns(&[(0, 1000), (d, 1000)], d) - l).abs() < 1e-15);
        // A staircase of equal packets every d/4: the string runs from
        // (0, 0) to the last deadline point at 4L/(7d/4)... the peak is
        // B_k/(a_k + d) maximised over k: k = 4 gives 4L/(1.75·d).
        let arr: Vec<_> = (0..4).map(|k| (k * d / 4, 1000)).collect();
        assert!((offline_peak_bits_per_ns(&arr, d) - 4.0 * l / 1.75).abs() < 1e-12);
    }

    #[test]
    fn a_lone_packet_leaves_at_its_deadline() {
        let d = 7 * MS;
        let run = drive(params(d, 10_000_000), &[(12_345, 1500)], &[]);
        assert_eq!(run.starts, vec![Some(12_345 + d)]);
        let run = drive(params(d, 10_000_000), &[(0, 40), (3 * d, 1500)], &[]);
        assert_eq!(run.starts, vec![Some(d), Some(4 * d)]);
    }

    #[test]
    fn light_load_isolated_packets_all_leave_at_their_deadlines() {
        let mut rng = Prng(7);
        let d = 3 * MS;
        let mut t = 0;
        let arr: Vec<_> = (0..500)
            .map(|_| {
                t += d + 200 * US + rng.exp(d as f64);
                (t, rng.range(40, 1500) as u32)
            })
            .collect();
        let run = drive(params(d, 100_000_000), &arr, &[]);
        for (a, s) in arr.iter().zip(&run.starts) {
            assert_eq!(s.unwrap(), a.0 + d);
        }
    }

    #[test]
    fn a_burst_is_spread_over_the_delay_bound() {
        // n packets at one instant: packet k leaves when S = B_k, with S
        // at B_n/d: at ⌈d·B_k/B_n⌉.
        let d = 10 * MS;
        let sizes = [1500u32, 40, 700, 1500, 1200];
        let arr: Vec<_> = sizes.iter().map(|&s| (MS, s)).collect();
        let run = drive(params(d, 1_000_000_000), &arr, &[]);
        let total: u64 = sizes.iter().map(|&s| u64::from(s)).sum();
        let mut b = 0;
        for (k, &s) in sizes.iter().enumerate() {
            b += u64::from(s);
            let expect = MS + (d * b).div_ceil(total);
            let got = run.starts[k].unwrap();
            assert!(got.abs_diff(expect) <= 1, "packet {k}: {got} vs {expect}");
        }
        assert_eq!(run.starts[4], Some(MS + d));
    }

    #[test]
    fn a_later_arrival_brings_the_release_forward() {
        let d = 10 * MS;
        let mut q = EdgePacer::new(params(d, 1_000_000_000));
        let mut dr = Vec::new();
        q.enqueue(0, TestPkt::new(0, 1000));
        assert_eq!(q.dequeue(0, &mut dr), Dequeue::Wait(d));
        q.enqueue(d / 2, TestPkt::new(1, 1000));
        // S(d/2) = 4000 bits; rate to (1.5d, 16000) = 12000/d: packet 0
        // (B = 8000) at d/2 + 4000/(12000/d) = d/2 + d/3.
        let Dequeue::Wait(t) = q.dequeue(d / 2, &mut dr) else {
            panic!()
        };
        assert!(t.abs_diff(d / 2 + d / 3) <= 1, "{t}");
        assert!(t < d);
        assert!(
            matches!(q.dequeue(t, &mut dr), Dequeue::Packet { pkt, sojourn_ns } if pkt.seq == 0 && sojourn_ns == t)
        );
        assert_eq!(q.dequeue(t, &mut dr), Dequeue::Wait(d / 2 + d));
    }

    /// Total idle time of the transmitter between the first start and the
    /// last finish, and the number of idle gaps.
    fn idle(run: &Run, arr: &[(u64, u32)], rate: u64) -> (u64, usize) {
        let mut spans: Vec<(u64, u64)> = run
            .starts
            .iter()
            .zip(arr)
            .map(|(s, a)| (s.unwrap(), s.unwrap() + tx_ns(a.1, rate)))
            .collect();
        spans.sort_unstable();
        let (mut total, mut gaps) = (0, 0);
        for w in spans.windows(2) {
            assert!(w[1].0 >= w[0].1, "transmissions overlap");
            if w[1].0 > w[0].1 {
                total += w[1].0 - w[0].1;
                gaps += 1;
            }
        }
        (total, gaps)
    }

    #[test]
    fn saturating_burst_leaves_back_to_back() {
        // 20 × 1500 B at once needs 48 Mb/s to meet d = 5 ms on a 10 Mb/s
        // link: the fluid is capped and the pacer is work-conserving.
        let rate = 10_000_000;
        let arr: Vec<_> = (0..20).map(|_| (MS, 1500)).collect();
        let run = drive(params(5 * MS, rate), &arr, &[]);
        let tx = tx_ns(1500, rate);
        for (k, s) in run.starts.iter().enumerate() {
            assert_eq!(*s, Some(MS + k as u64 * tx));
        }
    }

    #[test]
    fn arrivals_faster_than_the_link_leave_back_to_back() {
        let mut rng = Prng(8);
        let rate = 10_000_000;
        let d = 2 * MS;
        for _ in 0..20 {
            // Arrivals at twice the link rate, random sizes.
            let mut t = MS;
            let arr: Vec<_> = (0..300)
                .map(|_| {
                    let size = rng.range(40, 1500) as u32;
                    let a = (t, size);
                    t += tx_ns(size, rate) / 2;
                    a
                })
                .collect();
            let run = drive(params(d, rate), &arr, &[]);
            let (idle_ns, gaps) = idle(&run, &arr, rate);
            // The pacer never holds more than d, and once the fluid is
            // capped, it does not hold at all.
            assert!(idle_ns <= d, "{idle_ns}");
            let first = run.starts[0].unwrap();
            let last_back_to_back = run
                .starts
                .iter()
                .zip(&arr)
                .map(|(s, a)| (s.unwrap(), a.1))
                .collect::<Vec<_>>();
            let mut gap_after = 0;
            for w in last_back_to_back.windows(2) {
                if w[1].0 > w[0].0 + tx_ns(w[0].1, rate) {
                    gap_after = w[0].0;
                }
            }
            assert!(gap_after < first + d, "gap at {gap_after}, {gaps} gaps");
        }
    }

    #[test]
    fn arrivals_at_the_link_rate_converge_to_back_to_back() {
        // Equal packets arriving exactly at the link rate: the fluid rate
        // rises towards C but never needs to exceed it; the output idles
        // less than d in total and the spacing shrinks to none.
        let rate = 10_000_000;
        let d = 5 * MS;
        let tx = tx_ns(1000, rate);
        let arr: Vec<_> = (0..2000).map(|k| (k * tx, 1000)).collect();
        let run = drive(params(d, rate), &arr, &[]);
        let (idle_ns, _) = idle(&run, &arr, rate);
        assert!(idle_ns <= d, "{idle_ns}");
        assert_eq!(run.pacer.late_pkts(), 0);
        let s: Vec<u64> = run.starts.iter().map(|s| s.unwrap()).collect();
        let tail_gap = s[1999] - s[1000] - 999 * tx;
        assert!(tail_gap < tx, "idle {tail_gap} ns over the last 1000 packets");
    }

    #[test]
    fn zero_delay_bound_is_a_fifo() {
        for seed in 0..4 {
            let p = EdgePacerParams {
                delay_bound_ns: 0,
                link_rate_bps: 10_000_000,
                limit: Limit::Packets(50),
            };
            let mut q = EdgePacer::new(p);
            random_invariant_run(&mut q, seed, 20_000);
            // Same answers as DropTail, call for call.
            let mut a = EdgePacer::new(p);
            let mut b = DropTail::new(Limit::Packets(50));
            let mut rng = Prng(seed);
            let mut now = 0;
            let mut dr = Vec::new();
            for seq in 0..20_000 {
                now += rng.range(0, 2 * MS);
                if rng.unit() < 0.6 {
                    let pkt = TestPkt::new(seq, rng.range(40, 1500) as u32);
                    assert_eq!(a.enqueue(now, pkt), b.enqueue(now, pkt));
                } else {
                    assert_eq!(a.dequeue(now, &mut dr), b.dequeue(now, &mut dr));
                }
                assert_eq!(a.stats(), b.stats());
            }
        }
    }

    #[test]
    fn stats_conserve_with_drops_and_holding() {
        let mut rng = Prng(9);
        for limit in [Limit::Packets(10), Limit::Bytes(8000)] {
            let p = EdgePacerParams {
                delay_bound_ns: 3 * MS,
                link_rate_bps: 10_000_000,
                limit,
            };
            let arr = arrivals(
                &mut rng,
                Traffic::Bursty {
                    max_burst: 30,
                    spread_ns: 10 * US,
                    gap_ns: 3 * MS,
                },
                3000,
            );
            // `drive` checks arrivals = departures + drops + queued after
            // every step; the limit must have dropped something.
            let run = drive(p, &arr, &[]);
            let s = run.pacer.stats();
            assert!(s.drops_enqueue_pkts > 0);
            assert_eq!(s.arrivals_pkts, s.departures_pkts + s.drops_pkts());
            let dropped = run.starts.iter().filter(|s| s.is_none()).count() as u64;
            assert_eq!(dropped, s.drops_enqueue_pkts);
        }
    }

    #[test]
    fn validate_names_the_bad_field() {
        assert!(params(MS, 1).validate().is_ok());
        assert!(params(0, 1).validate().is_ok());
        let e = params(MS, 0).validate().unwrap_err();
        assert!(e.contains("link_rate_bps"), "{e}");
        let p = EdgePacerParams {
            limit: Limit::Bytes(0),
            ..params(MS, 1)
        };
        assert!(p.validate().unwrap_err().contains("limit"));
        assert!(EdgePacer::<TestPkt>::try_new(p).is_err());
    }

    #[test]
    fn extreme_params_do_not_panic() {
        let cases = [
            params(u64::MAX, 1),
            params(1, u64::MAX),
            params(u64::MAX, u64::MAX),
            params(1, 0),
            params(MS, 1),
        ];
        for p in cases {
            let mut q = EdgePacer::new(p);
            let mut rng = Prng(10);
            let mut dr = Vec::new();
            let mut now = 0u64;
            for seq in 0..5000 {
                now = now.saturating_add(rng.range(0, MS));
                if rng.unit() < 0.5 {
                    q.enqueue(now, TestPkt::new(seq, rng.range(0, 1500) as u32));
                } else {
                    q.dequeue(now, &mut dr);
                }
                assert_conserved(&q);
            }
            for seq in 0..10 {
                q.enqueue(u64::MAX - 5, TestPkt::new(seq, 1500));
            }
            for _ in 0..100 {
                q.dequeue(u64::MAX, &mut dr);
            }
            // A clock that steps back is treated as standing still.
            q.enqueue(0, TestPkt::new(0, 100));
            q.dequeue(0, &mut dr);
            assert_conserved(&q);
        }
    }
}
