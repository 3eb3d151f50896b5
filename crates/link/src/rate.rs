//! Piecewise-constant rate processes: a fixed schedule or a generator
//! (a two-state Markov good/bad channel, or a rate drawn per interval).
//!
//! A process is read through a [`RateCursor`] that only moves forward in
//! time and yields one constant-rate segment at a time; generators draw
//! their next segment when the cursor reaches it, from their own seeded
//! stream, so a run never pre-generates (or stores) a whole trace and the
//! same seed always gives the same rates.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, LogNormal};
use rand_pcg::Pcg64Mcg;
use std::sync::Arc;

/// How a rate distribution for per-interval draws is given.
#[derive(Debug, Clone, PartialEq)]
pub enum RateDist {
    /// Uniform in [lo, hi] bits per second.
    Uniform { lo_bps: f64, hi_bps: f64 },
    /// Log-normal with this median (bits/s) and log-space σ.
    LogNormal { median_bps: f64, sigma: f64 },
    /// An empirical distribution: one of these rates, equally likely.
    Values(Arc<[f64]>),
}

/// A time-varying rate.
#[derive(Debug, Clone, PartialEq)]
pub enum RateSource {
    Constant {
        rate_bps: u64,
    },
    /// (start time ns, rate bps) points; the first at 0, times increasing;
    /// the last rate holds for ever.
    Schedule(Arc<[(u64, u64)]>),
    /// A continuous-time two-state chain (Gilbert-Elliott style): exponential
    /// dwell times with these means in the good and the bad state. The first
    /// state is drawn from the stationary law (good with probability
    /// mean_good / (mean_good + mean_bad)), as `latlab trace gen markov`.
    Markov {
        good_bps: u64,
        bad_bps: u64,
        mean_good_ns: u64,
        mean_bad_ns: u64,
    },
    /// A new rate drawn from `dist` every `interval_ns`.
    PerInterval {
        interval_ns: u64,
        dist: RateDist,
    },
}

impl RateSource {
    /// Check the parameters; the message names the offending field.
    pub fn validate(&self) -> Result<(), String> {
        let finite_pos = |v: f64, what: &str| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "{what}: expected a non-negative finite rate in bits/s, got {v}"
                ))
            }
        };
        match self {
            RateSource::Constant { rate_bps } if *rate_bps == 0 => {
                Err("constant_bps: expected a positive rate in bits/s".into())
            }
            RateSource::Constant { .. } => Ok(()),
            RateSource::Schedule(points) => {
                match points.first() {
                    None => return Err("schedule: expected at least one [t_s, rate_bps] point".into()),
                    Some(&(t, _)) if t != 0 => {
                        return Err("schedule[0]: the first point must be at t_s = 0".into())
                    }
                    _ => {}
                }
                if let Some(i) = points.windows(2).position(|w| w[1].0 <= w[0].0) {
                    return Err(format!(
                        "schedule[{}]: time {} s is not after the previous point's; times must increase",
                        i + 1,
                        points[i + 1].0 as f64 / 1e9
                    ));
                }
                if points.iter().all(|p| p.1 == 0) {
                    return Err("schedule: every rate is 0; expected some positive rate".into());
                }
                Ok(())
            }
            RateSource::Markov {
                good_bps,
                mean_good_ns,
                mean_bad_ns,
                ..
            } => {
                if *good_bps == 0 {
                    return Err("markov.good_bps: expected a positive rate".into());
                }
                if *mean_good_ns == 0 || *mean_bad_ns == 0 {
                    return Err("markov: expected positive mean_good_ms and mean_bad_ms".into());
                }
                Ok(())
            }
            RateSource::PerInterval { interval_ns, dist } => {
                if *interval_ns == 0 {
                    return Err("per_interval.interval_ms: expected a positive interval".into());
                }
                match dist {
                    RateDist::Uniform { lo_bps, hi_bps } => {
                        finite_pos(*lo_bps, "per_interval.uniform_bps")?;
                        finite_pos(*hi_bps, "per_interval.uniform_bps")?;
                        if lo_bps > hi_bps || *hi_bps <= 0.0 {
                            return Err(
                                "per_interval.uniform_bps: expected [min, max] with 0 ≤ min ≤ max, max > 0"
                                    .into(),
                            );
                        }
                    }
                    RateDist::LogNormal { median_bps, sigma } => {
                        if !(median_bps.is_finite() && *median_bps > 0.0) {
                            return Err("per_interval.lognormal.median_bps: expected a positive rate".into());
                        }
                        if !(sigma.is_finite() && *sigma >= 0.0) {
                            return Err("per_interval.lognormal.sigma: expected a non-negative number".into());
                        }
                    }
                    RateDist::Values(v) => {
                        if v.is_empty() {
                            return Err("per_interval.values_bps: expected at least one rate".into());
                        }
                        for x in v.iter() {
                            finite_pos(*x, "per_interval.values_bps")?;
                        }
                        if v.iter().all(|x| *x <= 0.0) {
                            return Err("per_interval.values_bps: expected some positive rate".into());
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// Long-run mean rate, bits/s (the schedule's: its last rate).
    pub fn nominal_bps(&self) -> u64 {
        match self {
            RateSource::Constant { rate_bps } => *rate_bps,
            RateSource::Schedule(p) => p.iter().map(|x| x.1).max().unwrap_or(0),
            RateSource::Markov {
                good_bps,
                bad_bps,
                mean_good_ns,
                mean_bad_ns,
            } => {
                let (g, b) = (*mean_good_ns as f64, *mean_bad_ns as f64);
                ((*good_bps as f64 * g + *bad_bps as f64 * b) / (g + b)).round() as u64
            }
            RateSource::PerInterval { dist, .. } => match dist {
                RateDist::Uniform { lo_bps, hi_bps } => ((lo_bps + hi_bps) / 2.0).round() as u64,
                RateDist::LogNormal { median_bps, sigma } => {
                    (median_bps * (sigma * sigma / 2.0).exp()).round() as u64
                }
                RateDist::Values(v) => (v.iter().sum::<f64>() / v.len() as f64).round() as u64,
            },
        }
    }
}

/// Bit·nanoseconds: rate (bits/s) × time (ns). A packet of `b` bytes needs
/// `b · 8 · 1e9` of them; exact integer arithmetic, no drift.
pub type BitNs = u128;

pub const BITNS_PER_BYTE: BitNs = 8 * 1_000_000_000;

/// A forward-only reader of a rate process.
#[derive(Debug, Clone)]
pub struct RateCursor {
    source: RateSource,
    rng: Pcg64Mcg,
    seg_start_ns: u64,
    /// u64::MAX: the segment never ends.
    seg_end_ns: u64,
    rate_bps: u64,
    /// Work the process offered in [0, seg_start).
    cum_at_start: BitNs,
    /// Schedule: index of the current point. Markov: 1 in the good state.
    state: usize,
}

impl RateCursor {
    pub fn new(source: RateSource, seed: u64) -> Self {
        let mut c = RateCursor {
            source,
            rng: Pcg64Mcg::seed_from_u64(seed),
            seg_start_ns: 0,
            seg_end_ns: 0,
            rate_bps: 0,
            cum_at_start: 0,
            state: 0,
        };
        c.first_segment();
        c
    }

    pub fn source(&self) -> &RateSource {
        &self.source
    }

    fn first_segment(&mut self) {
        match &self.source {
            RateSource::Constant { rate_bps } => {
                self.rate_bps = *rate_bps;
                self.seg_end_ns = u64::MAX;
            }
            RateSource::Schedule(p) => {
                self.rate_bps = p[0].1;
                self.seg_end_ns = p.get(1).map_or(u64::MAX, |x| x.0);
            }
            RateSource::Markov {
                good_bps,
                bad_bps,
                mean_good_ns,
                mean_bad_ns,
            } => {
                let (g, b) = (*mean_good_ns as f64, *mean_bad_ns as f64);
                let good = self.rng.random::<f64>() < g / (g + b);
                self.state = good as usize;
                self.rate_bps = if good { *good_bps } else { *bad_bps };
                self.seg_end_ns = self.dwell();
            }
            RateSource::PerInterval { interval_ns, .. } => {
                self.seg_end_ns = *interval_ns;
                self.rate_bps = self.draw_rate();
            }
        }
    }

    fn dwell(&mut self) -> u64 {
        let RateSource::Markov {
            mean_good_ns,
            mean_bad_ns,
            ..
        } = self.source
        else {
            return u64::MAX;
        };
        let mean = if self.state == 1 {
            mean_good_ns
        } else {
            mean_bad_ns
        };
        let d = Exp::new(1.0 / mean as f64)
            .map(|e| e.sample(&mut self.rng))
            .unwrap_or(mean as f64);
        self.seg_start_ns.saturating_add((d.round() as u64).max(1))
    }

    fn draw_rate(&mut self) -> u64 {
        let RateSource::PerInterval { dist, .. } = &self.source else {
            return self.rate_bps;
        };
        let v = match dist {
            RateDist::Uniform { lo_bps, hi_bps } if lo_bps == hi_bps => *lo_bps,
            RateDist::Uniform { lo_bps, hi_bps } => self.rng.random_range(*lo_bps..=*hi_bps),
            RateDist::LogNormal { median_bps, sigma } => LogNormal::new(median_bps.ln(), *sigma)
                .map(|d| d.sample(&mut self.rng))
                .unwrap_or(*median_bps),
            RateDist::Values(v) => v[self.rng.random_range(0..v.len())],
        };
        v.max(0.0).round() as u64
    }

    /// Move to the next segment.
    fn advance(&mut self) {
        debug_assert!(self.seg_end_ns != u64::MAX);
        self.cum_at_start += self.rate_bps as BitNs * (self.seg_end_ns - self.seg_start_ns) as BitNs;
        self.seg_start_ns = self.seg_end_ns;
        match &self.source {
            RateSource::Constant { .. } => self.seg_end_ns = u64::MAX,
            RateSource::Schedule(p) => {
                self.state += 1;
                self.rate_bps = p[self.state].1;
                self.seg_end_ns = p.get(self.state + 1).map_or(u64::MAX, |x| x.0);
            }
            RateSource::Markov {
                good_bps, bad_bps, ..
            } => {
                self.state = 1 - self.state;
                self.rate_bps = if self.state == 1 { *good_bps } else { *bad_bps };
                self.seg_end_ns = self.dwell();
            }
            RateSource::PerInterval { interval_ns, .. } => {
                self.seg_end_ns = self.seg_start_ns.saturating_add(*interval_ns);
                self.rate_bps = self.draw_rate();
            }
        }
    }

    /// Move forward to the segment holding `t_ns` (never backwards).
    #[inline]
    pub fn seek(&mut self, t_ns: u64) {
        while t_ns >= self.seg_end_ns {
            self.advance();
        }
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Work offered in [0, t) (t at or after the current segment's start).
    pub fn cumulative(&mut self, t_ns: u64) -> BitNs {
        self.seek(t_ns);
        self.cum_at_start
            + self.rate_bps as BitNs * (t_ns.max(self.seg_start_ns) - self.seg_start_ns) as BitNs
    }

    /// The first instant ≥ `t_ns` at which the rate is positive; None if it
    /// is zero for ever from `t_ns`.
    pub fn next_positive(&mut self, t_ns: u64) -> Option<u64> {
        self.seek(t_ns);
        let mut t = t_ns;
        while self.rate_bps == 0 {
            if self.seg_end_ns == u64::MAX {
                return None;
            }
            t = self.seg_end_ns;
            self.advance();
        }
        Some(t)
    }

    /// When `work` bit·ns, started at `start_ns`, are done: integrate the
    /// rate forward (zero-rate stretches pass without progress). None if the
    /// rate stays zero for ever.
    pub fn finish_time(&mut self, start_ns: u64, mut work: BitNs) -> Option<u64> {
        self.seek(start_ns);
        let mut t = start_ns;
        loop {
            let r = self.rate_bps as BitNs;
            if r > 0 {
                if self.seg_end_ns == u64::MAX {
                    return Some(t + work.div_ceil(r) as u64);
                }
                let cap = r * (self.seg_end_ns - t) as BitNs;
                if work <= cap {
                    return Some(t + work.div_ceil(r) as u64);
                }
                work -= cap;
            } else if self.seg_end_ns == u64::MAX {
                return None;
            }
            t = self.seg_end_ns;
            self.advance();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_integrates_across_segments() {
        // 8 Mbit/s for 1 ms, then 0 for 1 ms, then 16 Mbit/s.
        let s = RateSource::Schedule(vec![(0, 8_000_000), (1_000_000, 0), (2_000_000, 16_000_000)].into());
        s.validate().unwrap();
        let mut c = RateCursor::new(s, 1);
        // 1500 B = 12000 bits: 8 Mb/s carries 8000 in the first ms; the
        // rest (4000 bits) at 16 Mb/s takes 250 µs after the gap.
        assert_eq!(c.finish_time(0, 1500 * BITNS_PER_BYTE), Some(2_250_000));
        assert_eq!(c.cumulative(3_000_000), (8_000_000u128 + 16_000_000) * 1_000_000);
        assert_eq!(c.next_positive(2_500_000), Some(2_500_000));
    }

    #[test]
    fn zero_for_ever_never_finishes() {
        let s = RateSource::Schedule(vec![(0, 1_000_000), (1_000_000, 0)].into());
        let mut c = RateCursor::new(s, 1);
        assert_eq!(c.finish_time(0, 2000 * BITNS_PER_BYTE), None);
        assert_eq!(c.next_positive(5_000_000), None);
    }

    #[test]
    fn schedule_errors_name_the_point() {
        let s = RateSource::Schedule(vec![(0, 1), (5, 2), (5, 3)].into());
        assert!(s.validate().unwrap_err().starts_with("schedule[2]"));
        let s = RateSource::Schedule(vec![(1, 1)].into());
        assert!(s.validate().unwrap_err().starts_with("schedule[0]"));
    }

    #[test]
    fn markov_mean_rate_and_determinism() {
        let src = RateSource::Markov {
            good_bps: 20_000_000,
            bad_bps: 2_000_000,
            mean_good_ns: 300_000_000,
            mean_bad_ns: 100_000_000,
        };
        let mut a = RateCursor::new(src.clone(), 7);
        let mut b = RateCursor::new(src.clone(), 7);
        let horizon = 2_000_000_000_000; // 2000 s
        let mean = a.cumulative(horizon) as f64 / horizon as f64;
        assert_eq!(a.cumulative(horizon), b.cumulative(horizon));
        let want = src.nominal_bps() as f64; // 15.5 Mbit/s
        assert!((mean - want).abs() / want < 0.03, "mean {mean} want {want}");
    }

    #[test]
    fn per_interval_draws_stay_in_range() {
        let src = RateSource::PerInterval {
            interval_ns: 10_000_000,
            dist: RateDist::Uniform {
                lo_bps: 1e6,
                hi_bps: 3e6,
            },
        };
        let mut c = RateCursor::new(src, 3);
        let mut seen = Vec::new();
        for k in 0..500u64 {
            c.seek(k * 10_000_000);
            seen.push(c.rate_bps());
        }
        assert!(seen.iter().all(|&r| (1_000_000..=3_000_000).contains(&r)));
        let mean = seen.iter().sum::<u64>() as f64 / seen.len() as f64;
        assert!((mean - 2e6).abs() < 0.1e6, "{mean}");
    }
}
