//! A token-bucket shaper (Linux `tbf`, and the rate/ceil bucket of one HTB
//! class): packets leave no faster than `rate_bps` on average, with bursts
//! of at most `burst_bytes` back to back after an idle period; what waits
//! sits in a tail-drop FIFO.
//!
//! Tokens are kept as Linux `sch_tbf` keeps them, in nanoseconds of
//! transmission time at the rate: the bucket holds at most
//! `t(burst_bytes)` and fills at one ns per ns; a packet of L bytes costs
//! `t(L) = ⌈8·L·10⁹ / rate_bps⌉` ns and leaves when the bucket holds that
//! much. So the departure of the head packet is
//! `max(now, t_c + t(L) − tokens)`, all integer. The bucket starts full.
//!
//! A packet larger than the burst could never leave: it is dropped on
//! arrival (Linux `tbf` would segment a GSO packet, else drop it). Not
//! modelled: `tbf`'s second (peak-rate) bucket, and HTB's borrowing between
//! classes (a lone class's rate is its ceil, which is what a per-subflow
//! throttle uses).

use crate::droptail::{Fifo, Limit};
use crate::{Dequeue, Enqueue, Qdisc, QdiscStats, QueuedPacket, TimeNs};

/// Token-bucket parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenBucketParams {
    /// Long-run rate, bits per second (counting `size_bytes` of packets).
    pub rate_bps: u64,
    /// Bucket depth: bytes that may leave back to back after an idle
    /// period. At least the largest packet (one MTU is HTB's default with
    /// high-resolution timers: `tc` sets burst = rate/HZ + MTU).
    pub burst_bytes: u64,
    /// The FIFO in front of the bucket; an arrival that does not fit is
    /// tail-dropped.
    pub limit: Limit,
}

impl TokenBucketParams {
    /// Check every field; the message names the bad field.
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_bps == 0 {
            return Err("rate_bps must be greater than 0".to_string());
        }
        if self.burst_bytes == 0 {
            return Err("burst_bytes must be greater than 0".to_string());
        }
        self.limit.validate()
    }

    /// Transmission time of `bytes` at the rate, ns, rounded up.
    pub fn tx_ns(&self, bytes: u64) -> u64 {
        let ns = (u128::from(bytes) * 8 * 1_000_000_000).div_ceil(u128::from(self.rate_bps.max(1)));
        ns.min(u128::from(u64::MAX)) as u64
    }
}

/// The token-bucket shaper.
#[derive(Debug, Clone)]
pub struct TokenBucket<P> {
    params: TokenBucketParams,
    fifo: Fifo<P>,
    /// The head packet, taken out of `fifo` to read its size (`Fifo` has no
    /// peek); it still counts as queued.
    head: Option<(P, TimeNs)>,
    /// Bucket depth, ns of transmission at the rate.
    bucket_ns: u64,
    /// Tokens at `t_c_ns`, ns.
    tokens_ns: u64,
    /// Last time the tokens were brought up to date (Linux `t_c`).
    t_c_ns: TimeNs,
    /// Arrivals larger than the burst (counted in the drops too).
    oversize_drops_pkts: u64,
}

impl<P: QueuedPacket> TokenBucket<P> {
    /// A full bucket at time 0. Parameters are not checked here (call
    /// [`TokenBucketParams::validate`] or use [`TokenBucket::try_new`]);
    /// invalid ones never panic.
    pub fn new(params: TokenBucketParams) -> Self {
        let bucket_ns = params.tx_ns(params.burst_bytes);
        TokenBucket {
            params,
            fifo: Fifo::new(),
            head: None,
            bucket_ns,
            tokens_ns: bucket_ns,
            t_c_ns: 0,
            oversize_drops_pkts: 0,
        }
    }

    /// [`TokenBucket::new`] after [`TokenBucketParams::validate`].
    pub fn try_new(params: TokenBucketParams) -> Result<Self, String> {
        params.validate()?;
        Ok(Self::new(params))
    }

    pub fn params(&self) -> &TokenBucketParams {
        &self.params
    }

    /// Arrivals dropped because they were larger than the burst.
    pub fn oversize_drops_pkts(&self) -> u64 {
        self.oversize_drops_pkts
    }

    /// Tokens now, ns of transmission time (for measurement and tests).
    pub fn tokens_ns(&self, now_ns: TimeNs) -> u64 {
        self.tokens_at(now_ns)
    }

    /// When the head packet may leave (`None` when empty): the time the
    /// caller should call `dequeue` again. Pure.
    pub fn next_wakeup(&self) -> Option<TimeNs> {
        let (pkt, _) = self.head.as_ref()?;
        let need = self.params.tx_ns(u64::from(pkt.size_bytes()));
        Some(self.t_c_ns.saturating_add(need.saturating_sub(self.tokens_ns)))
    }

    fn tokens_at(&self, now_ns: TimeNs) -> u64 {
        let elapsed = now_ns.saturating_sub(self.t_c_ns);
        self.tokens_ns.saturating_add(elapsed).min(self.bucket_ns)
    }

    /// Bring the tokens up to `now` (a clock that steps back adds none).
    fn refill(&mut self, now_ns: TimeNs) {
        if now_ns > self.t_c_ns {
            self.tokens_ns = self.tokens_at(now_ns);
            self.t_c_ns = now_ns;
        }
    }
}

impl<P: QueuedPacket + Send> Qdisc<P> for TokenBucket<P> {
    fn name(&self) -> &'static str {
        "token_bucket"
    }

    fn enqueue(&mut self, now_ns: TimeNs, pkt: P) -> Enqueue<P> {
        if u64::from(pkt.size_bytes()) > self.params.burst_bytes {
            self.oversize_drops_pkts += 1;
            return self.fifo.arrive_and_drop(pkt);
        }
        if !self
            .params
            .limit
            .admits(self.len_pkts(), self.len_bytes(), pkt.size_bytes())
        {
            return self.fifo.arrive_and_drop(pkt);
        }
        let queued = self.fifo.arrive_and_queue(now_ns, pkt);
        if self.head.is_none() {
            self.head = self.fifo.pop_front();
        }
        queued
    }

    fn dequeue(&mut self, now_ns: TimeNs, _dropped: &mut Vec<P>) -> Dequeue<P> {
        self.refill(now_ns);
        let Some((pkt, enq_ns)) = self.head else {
            return Dequeue::Empty;
        };
        let need = self.params.tx_ns(u64::from(pkt.size_bytes()));
        if self.tokens_ns < need {
            return Dequeue::Wait(self.t_c_ns.saturating_add(need - self.tokens_ns));
        }
        self.tokens_ns -= need;
        self.head = self.fifo.pop_front();
        let now = now_ns.max(self.t_c_ns);
        self.fifo.depart(now, pkt, enq_ns)
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

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    /// 8 Mbit/s: one byte per microsecond, so a 1000-byte packet costs 1 ms.
    fn tbf(burst_bytes: u64, limit_bytes: u64) -> TokenBucket<TestPkt> {
        TokenBucket::try_new(TokenBucketParams {
            rate_bps: 8_000_000,
            burst_bytes,
            limit: Limit::Bytes(limit_bytes),
        })
        .unwrap()
    }

    /// Dequeue whenever the shaper says, from `start`: (seq, departure).
    fn drain(q: &mut TokenBucket<TestPkt>, start: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut now = start;
        let mut dropped = Vec::new();
        loop {
            match q.dequeue(now, &mut dropped) {
                Dequeue::Packet { pkt, .. } => out.push((pkt.seq, now)),
                Dequeue::Wait(t) => {
                    assert!(t > now, "wait {t} at {now}");
                    assert_eq!(q.next_wakeup(), Some(t));
                    now = t;
                }
                Dequeue::Empty => {
                    assert!(dropped.is_empty());
                    return out;
                }
            }
        }
    }

    #[test]
    fn a_burst_leaves_at_the_hand_computed_schedule() {
        // Bucket 1500 B = 1.5 ms of tokens, full at t = 0. Five 1000-byte
        // packets at t = 0: #0 at 0 (0.5 ms left); #1 needs 1 ms, has 0.5:
        // 0.5 ms; then one every 1 ms: 1.5, 2.5, 3.5 ms.
        let mut q = tbf(1500, 10_000);
        for k in 0..5 {
            assert_eq!(q.enqueue(0, TestPkt::new(k, 1000)), Enqueue::Queued);
        }
        let got = drain(&mut q, 0);
        let want: Vec<(u64, u64)> = vec![
            (0, 0),
            (1, 500 * US),
            (2, 1500 * US),
            (3, 2500 * US),
            (4, 3500 * US),
        ];
        assert_eq!(got, want);
        assert_conserved(&q);
    }

    #[test]
    fn tokens_refill_to_the_burst_during_idle_time_and_no_further() {
        let mut q = tbf(1500, 10_000);
        q.enqueue(0, TestPkt::new(0, 1000));
        q.enqueue(0, TestPkt::new(1, 1000));
        assert_eq!(drain(&mut q, 0), vec![(0, 0), (1, 500 * US)]);
        // Idle 10 ms: the bucket is full again (1.5 ms, not 10), so of three
        // packets at 10.5 ms, #2 and #3 leave at 10.5 and 11.0, #4 at 12.0.
        assert_eq!(q.tokens_ns(10_500 * US), 1500 * US);
        for k in 2..5 {
            q.enqueue(10_500 * US, TestPkt::new(k, 1000));
        }
        assert_eq!(
            drain(&mut q, 10_500 * US),
            vec![(2, 10_500 * US), (3, 11 * MS), (4, 12 * MS)]
        );
    }

    #[test]
    fn a_mixed_size_train_is_paced_at_the_rate() {
        // Sizes 1500, 500, 1500, 40: bucket 1500 B (1.5 ms).
        // #0 at 0 (tokens 0); #1 needs 0.5 ms → 0.5 ms; #2 needs 1.5 → 2.0;
        // #3 needs 0.04 → 2.04 ms.
        let mut q = tbf(1500, 10_000);
        for (k, size) in [1500u32, 500, 1500, 40].into_iter().enumerate() {
            q.enqueue(0, TestPkt::new(k as u64, size));
        }
        assert_eq!(
            drain(&mut q, 0),
            vec![(0, 0), (1, 500 * US), (2, 2000 * US), (3, 2040 * US)]
        );
    }

    #[test]
    fn the_fifo_tail_drops_and_oversize_packets_are_refused() {
        // Limit 2500 B: two 1000-byte packets fit, the third does not.
        let mut q = tbf(1500, 2500);
        assert_eq!(q.enqueue(0, TestPkt::new(0, 1000)), Enqueue::Queued);
        assert_eq!(q.enqueue(0, TestPkt::new(1, 1000)), Enqueue::Queued);
        assert!(matches!(q.enqueue(0, TestPkt::new(2, 1000)), Enqueue::Dropped(_)));
        // Larger than the bucket: it could never leave.
        assert!(matches!(q.enqueue(0, TestPkt::new(3, 1501)), Enqueue::Dropped(_)));
        assert_eq!(q.oversize_drops_pkts(), 1);
        assert_eq!(q.stats().drops_enqueue_pkts, 2);
        assert_conserved(&q);
        assert_eq!(drain(&mut q, 0), vec![(0, 0), (1, 500 * US)]);
        assert_conserved(&q);
    }

    #[test]
    fn long_run_rate_is_the_configured_rate() {
        // 1000 packets of 1250 B offered faster than 10 Mbit/s: the last
        // leaves at (total − burst)/rate, within one packet.
        let mut q = TokenBucket::try_new(TokenBucketParams {
            rate_bps: 10_000_000,
            burst_bytes: 1500,
            limit: Limit::Bytes(u64::MAX),
        })
        .unwrap();
        for k in 0..1000 {
            q.enqueue(k * 100 * US, TestPkt::new(k, 1250));
        }
        let out = drain(&mut q, 0);
        assert_eq!(out.len(), 1000);
        // First packet free (full bucket), 1 ms per packet after, and the
        // 250 B of tokens left after it shave 0.2 ms off the second.
        assert_eq!(out[1], (1, 800 * US));
        assert_eq!(out[999].1, 800 * US + 998 * MS);
    }

    #[test]
    fn validate_names_the_bad_field() {
        let ok = TokenBucketParams {
            rate_bps: 1,
            burst_bytes: 1,
            limit: Limit::Packets(1),
        };
        assert!(ok.validate().is_ok());
        let e = TokenBucketParams { rate_bps: 0, ..ok }.validate().unwrap_err();
        assert!(e.contains("rate_bps"), "{e}");
        let e = TokenBucketParams { burst_bytes: 0, ..ok }.validate().unwrap_err();
        assert!(e.contains("burst_bytes"), "{e}");
        let e = TokenBucketParams {
            limit: Limit::Bytes(0),
            ..ok
        }
        .validate()
        .unwrap_err();
        assert!(e.contains("limit"), "{e}");
    }
}
