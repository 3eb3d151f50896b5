//! A time-varying transmitter: "when may the next packet start, and when
//! has its last byte left?"
//!
//! Two service models:
//! - **Opportunities** (a Mahimahi trace), exactly as Mahimahi's
//!   `LinkQueue::rationalize`: each opportunity carries up to 1500 bytes
//!   from the head of the queue. A packet is taken from the queue at an
//!   opportunity; if it is larger than what is left of that opportunity,
//!   its remaining bytes are carried by the next ones and it departs at the
//!   opportunity that carries its last byte; the bytes left after it serve
//!   the next queued packet at that same opportunity. Bytes of an
//!   opportunity that finds the queue empty are lost, not banked.
//! - **Rate** (a schedule or a generator): a fluid transmitter whose
//!   serialisation time integrates the piecewise-constant rate; idle
//!   capacity is lost too.
//!
//! Both answer in O(1) or O(log n) arithmetic; nothing here iterates over
//! idle opportunities, so a simulator spends at most one event per
//! opportunity that carries a packet.

use crate::rate::{RateCursor, RateSource, BITNS_PER_BYTE};
use crate::trace::{TraceSchedule, OPPORTUNITY_BYTES};
use std::sync::Arc;

#[derive(Debug, Clone)]
enum Service {
    Opportunities {
        trace: Arc<TraceSchedule>,
        /// The first opportunity not yet used up ...
        next: u64,
        /// ... and the bytes it has left.
        left: u32,
    },
    Rate(RateCursor),
}

/// A transmitter whose capacity follows a trace or a rate process.
#[derive(Debug, Clone)]
pub struct Transmitter {
    service: Service,
    /// Separate forward-only readers for capacity questions, so that a
    /// transmission far ahead never stops a question about an earlier time.
    capacity: Option<RateCursor>,
    offered: Option<RateCursor>,
}

impl Transmitter {
    pub fn trace(trace: Arc<TraceSchedule>) -> Self {
        Transmitter {
            service: Service::Opportunities {
                trace,
                next: 0,
                left: OPPORTUNITY_BYTES,
            },
            capacity: None,
            offered: None,
        }
    }

    /// A rate process; generators draw from a stream seeded by `seed`
    /// (every reader replays the same stream, so all see the same rates).
    pub fn rate(source: RateSource, seed: u64) -> Self {
        let c = RateCursor::new(source, seed);
        Transmitter {
            service: Service::Rate(c.clone()),
            capacity: Some(c.clone()),
            offered: Some(c),
        }
    }

    /// Long-run mean capacity, bits/s.
    pub fn nominal_bps(&self) -> u64 {
        match &self.service {
            Service::Opportunities { trace, .. } => trace.mean_rate_bps().round() as u64,
            Service::Rate(c) => c.source().nominal_bps(),
        }
    }

    /// Kind of service, for result tables: "trace" or "rate".
    pub fn kind(&self) -> &'static str {
        match &self.service {
            Service::Opportunities { .. } => "trace",
            Service::Rate(c) => match c.source() {
                RateSource::Constant { .. } => "constant",
                RateSource::Schedule(_) => "schedule",
                RateSource::Markov { .. } => "markov",
                RateSource::PerInterval { .. } => "per-interval",
            },
        }
    }

    /// The earliest time ≥ `now_ns` at which a packet may be taken from the
    /// queue; None if the link never carries anything again.
    #[inline]
    pub fn earliest_start_ns(&mut self, now_ns: u64) -> Option<u64> {
        match &mut self.service {
            Service::Opportunities { trace, next, .. } => {
                let n = (*next).max(trace.first_at_or_after(now_ns));
                Some(trace.time_ns(n))
            }
            Service::Rate(c) => c.next_positive(now_ns),
        }
    }

    /// Send `bytes` from `start_ns` (a time `earliest_start_ns` allowed, or
    /// later): the time its last byte has left; None if never.
    pub fn transmit(&mut self, start_ns: u64, bytes: u32) -> Option<u64> {
        match &mut self.service {
            Service::Opportunities { trace, next, left } => {
                let n = (*next).max(trace.first_at_or_after(start_ns));
                // A partly used opportunity serves only packets taken at its own instant.
                let avail = if n == *next { *left } else { OPPORTUNITY_BYTES };
                let (end_n, end_left) = if bytes <= avail {
                    (n, avail - bytes)
                } else {
                    let rest = bytes - avail;
                    let k = rest.div_ceil(OPPORTUNITY_BYTES);
                    (n + k as u64, k * OPPORTUNITY_BYTES - rest)
                };
                if end_left == 0 {
                    *next = end_n + 1;
                    *left = OPPORTUNITY_BYTES;
                } else {
                    *next = end_n;
                    *left = end_left;
                }
                Some(trace.time_ns(end_n))
            }
            Service::Rate(c) => c.finish_time(start_ns, bytes as u128 * BITNS_PER_BYTE),
        }
    }

    /// Whole bytes the link could carry in [t0, t1) (for slot schedulers:
    /// an LTE TTI). Questions must move forward in time.
    pub fn capacity_bytes(&mut self, t0_ns: u64, t1_ns: u64) -> u64 {
        match (&self.service, &mut self.capacity) {
            (Service::Opportunities { trace, .. }, _) => {
                trace.count_between(t0_ns, t1_ns) * OPPORTUNITY_BYTES as u64
            }
            (_, Some(c)) => {
                let a = c.cumulative(t0_ns) / BITNS_PER_BYTE;
                let b = c.cumulative(t1_ns) / BITNS_PER_BYTE;
                (b - a) as u64
            }
            (_, None) => 0,
        }
    }

    /// Bytes of capacity offered in [0, t) (used or not). Questions must
    /// move forward in time.
    pub fn offered_bytes_until(&mut self, t_ns: u64) -> u64 {
        match (&self.service, &mut self.offered) {
            (Service::Opportunities { trace, .. }, _) => {
                trace.first_at_or_after(t_ns) * OPPORTUNITY_BYTES as u64
            }
            (_, Some(c)) => (c.cumulative(t_ns) / BITNS_PER_BYTE) as u64,
            (_, None) => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx(ms: &[u64]) -> Transmitter {
        Transmitter::trace(Arc::new(TraceSchedule::from_ms(ms.to_vec(), "t").unwrap()))
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn full_sized_packets_take_one_opportunity_each() {
        let mut t = tx(&[1, 1, 3]);
        // Opportunities at 1, 1, 3, then 4, 4, 6 ms, ...
        assert_eq!(t.earliest_start_ns(0), Some(MS));
        assert_eq!(t.transmit(MS, 1500), Some(MS));
        assert_eq!(t.earliest_start_ns(MS), Some(MS));
        assert_eq!(t.transmit(MS, 1500), Some(MS));
        assert_eq!(t.earliest_start_ns(MS), Some(3 * MS));
        assert_eq!(t.transmit(3 * MS, 1500), Some(3 * MS));
        assert_eq!(t.earliest_start_ns(3 * MS), Some(4 * MS));
    }

    #[test]
    fn small_packets_share_an_opportunity_and_leftovers_are_not_banked() {
        let mut t = tx(&[1]);
        // Three 500-byte packets leave at the 1 ms opportunity.
        for _ in 0..3 {
            assert_eq!(t.earliest_start_ns(MS), Some(MS));
            assert_eq!(t.transmit(MS, 500), Some(MS));
        }
        assert_eq!(t.earliest_start_ns(MS), Some(2 * MS));
        // 1000 bytes at 2 ms leave 500; a packet arriving at 2.5 ms does not get them.
        assert_eq!(t.transmit(2 * MS, 1000), Some(2 * MS));
        assert_eq!(t.earliest_start_ns(2 * MS + MS / 2), Some(3 * MS));
        assert_eq!(t.transmit(3 * MS, 1000), Some(3 * MS));
        // A 1000-byte packet at 3 ms with 500 left: its last 500 bytes go at 4 ms,
        // leaving 1000 there for the next packet.
        assert_eq!(t.transmit(3 * MS, 1000), Some(4 * MS));
        assert_eq!(t.earliest_start_ns(4 * MS), Some(4 * MS));
        assert_eq!(t.transmit(4 * MS, 1000), Some(4 * MS));
        assert_eq!(t.earliest_start_ns(4 * MS), Some(5 * MS));
    }

    #[test]
    fn jumbo_packets_span_opportunities() {
        let mut t = tx(&[2, 4]);
        assert_eq!(t.transmit(0, 4000), Some(6 * MS)); // 2, 4, 6 ms carry 1500+1500+1000
        assert_eq!(t.earliest_start_ns(6 * MS), Some(6 * MS)); // 500 left there
    }

    #[test]
    fn rate_transmitter_matches_fixed_rate_arithmetic() {
        let mut t = Transmitter::rate(RateSource::Constant { rate_bps: 10_000_000 }, 1);
        assert_eq!(t.transmit(5, 1500), Some(5 + 1_200_000));
        assert_eq!(t.capacity_bytes(0, MS), 1250);
        assert_eq!(t.offered_bytes_until(1_000_000_000), 1_250_000);
    }
}
