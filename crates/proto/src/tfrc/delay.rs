//! DFlow's one-way-delay filters (tfrc-dflow spec; draft-ohanlon-rmcat-dflow).
//!
//! OWD = receive time − send timestamp, on two unsynchronised clocks: only
//! differences of OWDs are used, so any constant offset cancels.
//!
//! - base_delay: the minimum OWD over the last base_period, kept as a
//!   sliding window of [`BASE_BUCKETS`] sub-period minima (each bucket spans
//!   base_period/10, so the window is re-evaluated every tenth of it; a
//!   bucket counts while any part of it lies inside the window).
//! - current_delay: the minimum OWD over a current_period, evaluated when the
//!   period ends (tumbling windows: the first sample at or after
//!   start + current_period closes the period and opens the next). A
//!   period's verdict therefore comes at most one period (50 ms by default)
//!   after the samples that caused it.

/// Sub-period minima in the base window.
pub const BASE_BUCKETS: usize = 10;
const RING: usize = BASE_BUCKETS + 2;

/// The verdict of one closed current period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PeriodEnd {
    /// current_delay: min OWD over the period (clock offset included).
    pub current_delay_ns: i64,
    /// base_delay at the end of the period (clock offset included).
    pub base_delay_ns: i64,
    /// current − base, ≥ 0.
    pub queueing_delay_ns: u64,
    /// current_delay rose since the previous period (the gradient test).
    pub rising: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct OwdFilter {
    /// (bucket start, min OWD in it), ring; `newest` is the open bucket.
    buckets: [(u64, i64); RING],
    len: usize,
    newest: usize,
    period_start_ns: Option<u64>,
    /// Min OWD of the open current period (i64::MAX: none yet).
    period_min_ns: i64,
    prev_period_min_ns: Option<i64>,
}

impl Default for OwdFilter {
    fn default() -> Self {
        Self {
            buckets: [(0, i64::MAX); RING],
            len: 0,
            newest: 0,
            period_start_ns: None,
            period_min_ns: i64::MAX,
            prev_period_min_ns: None,
        }
    }
}

impl OwdFilter {
    /// Feed one OWD sample at receiver time `now_ns`. Returns the verdict on
    /// the current period this sample closes, if it closes one.
    pub fn on_sample(
        &mut self,
        now_ns: u64,
        owd_ns: i64,
        base_period_ns: u64,
        current_period_ns: u64,
    ) -> Option<PeriodEnd> {
        let mut ended = None;
        match self.period_start_ns {
            Some(start) if now_ns.saturating_sub(start) >= current_period_ns => {
                if self.period_min_ns != i64::MAX {
                    let current = self.period_min_ns;
                    let base = self.base_delay_ns(now_ns, base_period_ns).unwrap_or(current);
                    let q = (current as i128 - base as i128).clamp(0, u64::MAX as i128) as u64;
                    ended = Some(PeriodEnd {
                        current_delay_ns: current,
                        base_delay_ns: base,
                        queueing_delay_ns: q,
                        rising: self.prev_period_min_ns.is_some_and(|prev| current > prev),
                    });
                    self.prev_period_min_ns = Some(current);
                }
                self.period_start_ns = Some(now_ns);
                self.period_min_ns = i64::MAX;
            }
            Some(_) => {}
            None => self.period_start_ns = Some(now_ns),
        }
        self.period_min_ns = self.period_min_ns.min(owd_ns);
        self.add_to_base(now_ns, owd_ns, base_period_ns);
        ended
    }

    fn add_to_base(&mut self, now_ns: u64, owd_ns: i64, base_period_ns: u64) {
        let bucket_ns = (base_period_ns / BASE_BUCKETS as u64).max(1);
        if self.len == 0 || now_ns.saturating_sub(self.buckets[self.newest].0) >= bucket_ns {
            self.newest = (self.newest + 1) % RING;
            self.buckets[self.newest] = (now_ns, owd_ns);
            self.len = (self.len + 1).min(RING);
        } else {
            let b = &mut self.buckets[self.newest].1;
            *b = (*b).min(owd_ns);
        }
    }

    /// min OWD over the buckets that overlap [now − base_period, now].
    pub fn base_delay_ns(&self, now_ns: u64, base_period_ns: u64) -> Option<i64> {
        if self.len == 0 {
            return None;
        }
        let window_start = now_ns.saturating_sub(base_period_ns);
        let mut min = self.buckets[self.newest].1;
        // A bucket ends where the next newer one starts.
        let mut end = self.buckets[self.newest].0;
        for j in 1..self.len {
            if end < window_start {
                break;
            }
            let b = self.buckets[(self.newest + RING - j) % RING];
            min = min.min(b.1);
            end = b.0;
        }
        Some(min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn periods_close_and_measure_queueing() {
        let mut f = OwdFilter::default();
        let base_period = 1_000 * MS;
        let period = 50 * MS;
        // 20 ms path, a sample every 10 ms.
        let mut t = 0;
        let mut verdicts = Vec::new();
        for i in 0..30u64 {
            // Queue builds from 100 ms: +2 ms per sample.
            let q = if t >= 100 * MS { 2 * (i - 10) * MS } else { 0 };
            if let Some(v) = f.on_sample(t, (20 * MS + q) as i64, base_period, period) {
                verdicts.push(v);
            }
            t += 10 * MS;
        }
        // Periods [0,50), [50,100), … close at 50, 100, …, 250 ms.
        assert_eq!(verdicts.len(), 5);
        assert_eq!(verdicts[0].queueing_delay_ns, 0);
        assert_eq!(verdicts[1].queueing_delay_ns, 0);
        // [100,150): samples with q = 0, 2, 4, 6, 8 ms → min 0.
        assert_eq!(verdicts[2].queueing_delay_ns, 0);
        // [150,200): q = 10..18 → 10 ms; rising.
        assert_eq!(verdicts[3].queueing_delay_ns, 10 * MS);
        assert!(verdicts[3].rising);
        assert_eq!(verdicts[3].base_delay_ns, 20 * MS as i64);
    }

    #[test]
    fn base_window_forgets_old_minima() {
        let mut f = OwdFilter::default();
        let base_period = 1_000 * MS;
        f.on_sample(0, 10 * MS as i64, base_period, 50 * MS);
        for i in 1..=300u64 {
            f.on_sample(i * 10 * MS, 30 * MS as i64, base_period, 50 * MS);
        }
        // At 3 s the 10 ms sample of t = 0 is long out of the 1 s window.
        assert_eq!(f.base_delay_ns(3_000 * MS, base_period), Some(30 * MS as i64));
        // Within the window it counts.
        let mut g = OwdFilter::default();
        g.on_sample(0, 10 * MS as i64, base_period, 50 * MS);
        g.on_sample(900 * MS, 30 * MS as i64, base_period, 50 * MS);
        assert_eq!(g.base_delay_ns(900 * MS, base_period), Some(10 * MS as i64));
    }

    #[test]
    fn offsets_and_extremes() {
        for off in [0i64, 1_000_000_000_000, -1_000_000_000_000] {
            let mut f = OwdFilter::default();
            let mut out = Vec::new();
            for i in 0..100u64 {
                let owd = off + (20 + (i % 17)) as i64 * MS as i64;
                if let Some(v) = f.on_sample(i * 7 * MS, owd, 500 * MS, 50 * MS) {
                    out.push((v.queueing_delay_ns, v.rising));
                }
            }
            assert!(!out.is_empty());
            if off == 0 {
                continue;
            }
            let mut g = OwdFilter::default();
            let mut reference = Vec::new();
            for i in 0..100u64 {
                let owd = (20 + (i % 17)) as i64 * MS as i64;
                if let Some(v) = g.on_sample(i * 7 * MS, owd, 500 * MS, 50 * MS) {
                    reference.push((v.queueing_delay_ns, v.rising));
                }
            }
            assert_eq!(out, reference);
        }
        let mut f = OwdFilter::default();
        for (t, d) in [(u64::MAX, i64::MIN), (0, i64::MAX), (5, 0), (u64::MAX, i64::MAX)] {
            f.on_sample(t, d, u64::MAX, 1);
            f.on_sample(t, d, 0, u64::MAX);
        }
    }
}
