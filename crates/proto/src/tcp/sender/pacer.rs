//! Pacing (the role of quinn-proto's `Pacer`): data segments leave at
//! factor·cwnd/srtt, the factor larger in slow start than in congestion
//! avoidance (Linux `tcp_update_pacing_rate`: 200 % and 120 %), so a window
//! is spread over a round trip instead of leaving as one burst.

use crate::cc::CcState;
use crate::tcp::config::Pacing;
use crate::tcp::rtt::RttEstimator;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Pacer {
    /// `None`: pacing off.
    cfg: Option<Pacing>,
    /// Earliest time the next data segment may leave.
    next_send_ns: u64,
}

impl Pacer {
    pub fn new(cfg: Option<Pacing>) -> Self {
        Pacer { cfg, next_send_ns: 0 }
    }

    /// Pacing needs an RTT to spread the window over: until the first sample
    /// (or while SRTT is 0) segments leave unpaced.
    pub fn is_active(&self, rtt: &RttEstimator) -> bool {
        self.cfg.is_some() && rtt.has_sample() && rtt.srtt_ns() > 0
    }

    /// Earliest time the next data segment may leave.
    pub fn release_ns(&self) -> u64 {
        self.next_send_ns
    }

    /// Time between two packets of `wire_bytes` at factor·cwnd/srtt.
    pub fn gap_ns(&self, ccs: &CcState, srtt_ns: u64, wire_bytes: u32) -> u64 {
        let Some(p) = self.cfg else { return 0 };
        let factor = if ccs.cwnd_bytes < ccs.ssthresh_bytes {
            p.ss_factor
        } else {
            p.ca_factor
        };
        let cwnd = ccs.cwnd_bytes.max(1) as f64;
        let gap = wire_bytes as f64 * srtt_ns as f64 / (factor * cwnd);
        if gap.is_finite() && gap > 0.0 {
            gap.round().min(u64::MAX as f64 / 2.0) as u64
        } else {
            0
        }
    }

    /// A data segment left at `now_ns`: the next one waits `gap_ns` more.
    /// Counted from the later of now and the previous release time, so a
    /// sender that was idle gets no credit for the pause.
    pub fn on_send(&mut self, now_ns: u64, gap_ns: u64) {
        self.next_send_ns = self.next_send_ns.max(now_ns).saturating_add(gap_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_is_wire_time_at_factor_cwnd_per_srtt() {
        let p = Pacer::new(Some(Pacing {
            ss_factor: 2.0,
            ca_factor: 1.2,
        }));
        let mut ccs = CcState {
            cwnd_bytes: 10_000,
            ssthresh_bytes: u64::MAX,
            mss_bytes: 1000,
        };
        // Slow start: 1000 B · 100 ms / (2 · 10 000 B) = 5 ms.
        assert_eq!(p.gap_ns(&ccs, 100_000_000, 1000), 5_000_000);
        ccs.ssthresh_bytes = 10_000;
        // Congestion avoidance: 1000 · 100 ms / (1.2 · 10 000) = 8.333 ms.
        assert_eq!(p.gap_ns(&ccs, 100_000_000, 1000), 8_333_333);
        assert_eq!(Pacer::new(None).gap_ns(&ccs, 100_000_000, 1000), 0);
    }

    #[test]
    fn release_time_counts_from_the_later_of_now_and_last_release() {
        let mut p = Pacer::new(None);
        p.on_send(100, 10);
        assert_eq!(p.release_ns(), 110);
        p.on_send(105, 10);
        assert_eq!(p.release_ns(), 120);
        p.on_send(500, 10);
        assert_eq!(p.release_ns(), 510);
    }
}
