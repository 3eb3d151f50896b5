//! Round-trip time estimation and the retransmission timeout, RFC 6298.
//!
//! Integer nanoseconds throughout. The RFC's gains (α = 1/8, β = 1/4) are
//! applied with integer division, which truncates below 1 ns.

/// RFC 6298 estimator: SRTT, RTTVAR and RTO with exponential backoff.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt_ns: u64,
    rttvar_ns: u64,
    min_rtt_ns: u64,
    /// The last measurement R fed in (0 before the first): read by the
    /// simulator's per-sample latency histogram, not by the estimator.
    latest_ns: u64,
    has_sample: bool,
    /// RTO from the estimator, before backoff.
    base_rto_ns: u64,
    /// Number of consecutive backoffs (RFC 6298 (5.5)).
    backoff: u32,
    min_rto_ns: u64,
    max_rto_ns: u64,
    granularity_ns: u64,
}

impl RttEstimator {
    pub fn new(initial_rto_ns: u64, min_rto_ns: u64, max_rto_ns: u64, granularity_ns: u64) -> Self {
        RttEstimator {
            srtt_ns: 0,
            rttvar_ns: 0,
            min_rtt_ns: 0,
            latest_ns: 0,
            has_sample: false,
            // RFC 6298 (2.1): until a sample is made, RTO = 1 s (configurable).
            base_rto_ns: initial_rto_ns.min(max_rto_ns.max(1)),
            backoff: 0,
            min_rto_ns,
            max_rto_ns: max_rto_ns.max(1),
            granularity_ns,
        }
    }

    /// Feed one RTT measurement R (ns). Resets the backoff: a new sample
    /// recomputes RTO from SRTT and RTTVAR (RFC 6298 §5, note after (5.7)).
    pub fn on_sample(&mut self, r_ns: u64) {
        self.latest_ns = r_ns;
        if !self.has_sample {
            // RFC 6298 (2.2): SRTT = R, RTTVAR = R/2.
            self.srtt_ns = r_ns;
            self.rttvar_ns = r_ns / 2;
            self.min_rtt_ns = r_ns;
            self.has_sample = true;
        } else {
            // RFC 6298 (2.3): RTTVAR first, with the old SRTT.
            let err = self.srtt_ns.abs_diff(r_ns);
            self.rttvar_ns = ((3 * self.rttvar_ns as u128 + err as u128) / 4) as u64;
            self.srtt_ns = ((7 * self.srtt_ns as u128 + r_ns as u128) / 8) as u64;
            self.min_rtt_ns = self.min_rtt_ns.min(r_ns);
        }
        // RFC 6298 (2.3)/(2.4)/(2.5): RTO = SRTT + max(G, K·RTTVAR), K = 4,
        // rounded up to the minimum and capped at the maximum.
        let var = self.granularity_ns.max(self.rttvar_ns.saturating_mul(4));
        self.base_rto_ns = self
            .srtt_ns
            .saturating_add(var)
            .max(self.min_rto_ns)
            .min(self.max_rto_ns);
        self.backoff = 0;
    }

    /// Drop the backoff without a sample: RTO from SRTT and RTTVAR again
    /// (ns-3's NewAck; RFC 6298 keeps it until a new sample).
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// RFC 6298 (5.5): the timer expired, back off RTO ×2 (capped at max).
    pub fn backoff(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    /// RFC 6298 §5 last paragraph: after the SYN was retransmitted and no
    /// sample was taken, RTO is re-initialized to 3 s when data begins.
    pub fn reinit_after_syn_loss(&mut self) {
        if !self.has_sample {
            self.base_rto_ns = self.base_rto_ns.max(3_000_000_000).min(self.max_rto_ns);
        }
        self.backoff = 0;
    }

    /// Consecutive backoffs since the last sample.
    pub fn backoff_count(&self) -> u32 {
        self.backoff
    }

    /// The current RTO, including backoff.
    pub fn rto_ns(&self) -> u64 {
        let shift = self.backoff.min(63);
        let mut rto = self.base_rto_ns;
        for _ in 0..shift {
            rto = rto.saturating_mul(2);
            if rto >= self.max_rto_ns {
                return self.max_rto_ns;
            }
        }
        rto.min(self.max_rto_ns)
    }

    pub fn srtt_ns(&self) -> u64 {
        self.srtt_ns
    }

    pub fn rttvar_ns(&self) -> u64 {
        self.rttvar_ns
    }

    pub fn min_rtt_ns(&self) -> u64 {
        self.min_rtt_ns
    }

    /// The last measurement R (0 before the first).
    pub fn latest_ns(&self) -> u64 {
        self.latest_ns
    }

    pub fn has_sample(&self) -> bool {
        self.has_sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn initial_rto_before_sample() {
        let r = RttEstimator::new(1000 * MS, 200 * MS, 60_000 * MS, MS);
        assert_eq!(r.rto_ns(), 1000 * MS);
        assert!(!r.has_sample());
    }

    #[test]
    fn rfc6298_hand_computed() {
        let mut r = RttEstimator::new(1000 * MS, 0, 60_000 * MS, MS);
        // First sample R = 100 ms: SRTT = 100, RTTVAR = 50, RTO = 100 + 200 = 300 ms.
        r.on_sample(100 * MS);
        assert_eq!(r.srtt_ns(), 100 * MS);
        assert_eq!(r.rttvar_ns(), 50 * MS);
        assert_eq!(r.rto_ns(), 300 * MS);
        // Second sample R' = 200 ms: RTTVAR = 3/4·50 + 1/4·|100−200| = 62.5 ms,
        // SRTT = 7/8·100 + 1/8·200 = 112.5 ms, RTO = 112.5 + 250 = 362.5 ms.
        r.on_sample(200 * MS);
        assert_eq!(r.rttvar_ns(), 62_500_000);
        assert_eq!(r.srtt_ns(), 112_500_000);
        assert_eq!(r.rto_ns(), 362_500_000);
        // Third sample R' = 100 ms: RTTVAR = 3/4·62.5 + 1/4·12.5 = 50 ms,
        // SRTT = 7/8·112.5 + 1/8·100 = 110.9375 ms, RTO = 310.9375 ms.
        r.on_sample(100 * MS);
        assert_eq!(r.rttvar_ns(), 50_000_000);
        assert_eq!(r.srtt_ns(), 110_937_500);
        assert_eq!(r.rto_ns(), 310_937_500);
        assert_eq!(r.min_rtt_ns(), 100 * MS);
    }

    #[test]
    fn granularity_min_max_and_backoff() {
        // Constant samples drive RTTVAR towards 0; G then bounds the variance term.
        let mut r = RttEstimator::new(1000 * MS, 0, 60_000 * MS, 10 * MS);
        for _ in 0..200 {
            r.on_sample(50 * MS);
        }
        assert_eq!(r.srtt_ns(), 50 * MS);
        assert_eq!(r.rto_ns(), 60 * MS);
        // Min RTO 200 ms rounds it up.
        let mut r = RttEstimator::new(1000 * MS, 200 * MS, 60_000 * MS, MS);
        r.on_sample(10 * MS);
        assert_eq!(r.rto_ns(), 200 * MS);
        // Backoff doubles, capped at max; a new sample restores.
        r.backoff();
        assert_eq!(r.rto_ns(), 400 * MS);
        r.backoff();
        assert_eq!(r.rto_ns(), 800 * MS);
        for _ in 0..20 {
            r.backoff();
        }
        assert_eq!(r.rto_ns(), 60_000 * MS);
        r.on_sample(10 * MS);
        assert_eq!(r.rto_ns(), 200 * MS);
    }
}
