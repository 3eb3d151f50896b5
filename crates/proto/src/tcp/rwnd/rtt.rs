//! The receiver's RTT estimate, as Linux keeps it in `tp->rcv_rtt_est`.
//!
//! A receiver sends no data, so it cannot time its own segments. Two ways
//! remain, and a connection uses whichever its sender allows:
//!
//! - **Timestamps** (RFC 7323; Linux `tcp_rcv_rtt_measure_ts`): the
//!   receiver stamped each ACK with its clock (TSval), and the sender
//!   echoes the latest one (TSecr) on the data it sends in response, so
//!   `now − TSecr` on arrival is one RTT, queueing on the forward path
//!   included. As Linux: only the first segment carrying a given TSecr
//!   gives a sample (the rest of the burst an ACK released would add their
//!   spacing at the bottleneck), and only a full-size segment (a short one
//!   may have waited in the sender for the application). Samples are
//!   averaged with gain β: `rtt ← (1 − β)·rtt + β·sample` (Linux β = 1/8).
//! - **Without timestamps** (Linux `tcp_rcv_rtt_measure`, after Dynamic
//!   Right-Sizing, Fisk & Feng 2001): the time the stream takes to advance
//!   by the window advertised when the measurement began. The sender
//!   cannot send more than a window per RTT, so this is an upper bound on
//!   the RTT; the estimate is the running minimum of these samples.
//!
//! The estimator also keeps the minimum of its samples and the minimum of
//! its estimate (DRWA's RTT_min is the latter).

use super::SegmentArrival;
use crate::TimeNs;

/// The receiver's RTT estimator.
#[derive(Clone, Debug)]
pub struct ReceiverRtt {
    /// β: weight of a new timestamp sample.
    gain: f64,
    /// A segment at least this long gives a timestamp sample.
    mss_bytes: u64,
    rtt_ns: Option<f64>,
    min_sample_ns: Option<u64>,
    min_estimate_ns: Option<u64>,
    /// The sender echoes timestamps (decided by the first data segment).
    timestamps: bool,
    last_tsecr_ns: Option<u64>,
    /// Without timestamps: bytes copied so far, and the measurement under
    /// way (its start, and the copied total that ends it).
    copied_bytes: u64,
    window_start_ns: Option<TimeNs>,
    window_end_copied_bytes: u64,
}

impl ReceiverRtt {
    /// An estimator with timestamp gain `gain` (β) for a stream of
    /// `mss_bytes` segments.
    pub fn new(gain: f64, mss_bytes: u64) -> Self {
        ReceiverRtt {
            gain,
            mss_bytes,
            rtt_ns: None,
            min_sample_ns: None,
            min_estimate_ns: None,
            timestamps: false,
            last_tsecr_ns: None,
            copied_bytes: 0,
            window_start_ns: None,
            window_end_copied_bytes: 0,
        }
    }

    /// The estimate, ns (None before the first sample).
    pub fn rtt_ns(&self) -> Option<f64> {
        self.rtt_ns
    }

    /// The smallest sample so far, ns.
    pub fn min_sample_ns(&self) -> Option<u64> {
        self.min_sample_ns
    }

    /// The smallest value the estimate has taken, ns.
    pub fn min_estimate_ns(&self) -> Option<u64> {
        self.min_estimate_ns
    }

    /// A data segment arrived; returns the timestamp sample it gave, if any.
    pub fn on_segment(&mut self, a: &SegmentArrival) -> Option<u64> {
        // A TSecr of 0 echoes nothing (RFC 7323 §3.2: a SYN's).
        let ecr = a.ts_ecr_ns.filter(|&e| e > 0)?;
        self.timestamps = true;
        if self.last_tsecr_ns == Some(ecr) {
            return None;
        }
        self.last_tsecr_ns = Some(ecr);
        if (a.payload_bytes as u64) < self.mss_bytes || a.now_ns <= ecr {
            return None;
        }
        let sample = a.now_ns - ecr;
        let rtt = match self.rtt_ns {
            None => sample as f64,
            Some(r) => (1.0 - self.gain) * r + self.gain * sample as f64,
        };
        self.record(sample, rtt);
        Some(sample)
    }

    /// `bytes` were copied to the application while `window_bytes` was
    /// advertised; without timestamps, returns the window-based sample
    /// this completed, if any.
    pub fn on_copied(&mut self, now_ns: TimeNs, bytes: u64, window_bytes: u64) -> Option<u64> {
        self.copied_bytes += bytes;
        if self.timestamps {
            return None;
        }
        let mut sample = None;
        if let Some(start) = self.window_start_ns {
            if self.copied_bytes < self.window_end_copied_bytes {
                return None;
            }
            let s = now_ns.saturating_sub(start).max(1);
            let rtt = self.rtt_ns.map_or(s as f64, |r| r.min(s as f64));
            self.record(s, rtt);
            sample = Some(s);
        }
        self.window_start_ns = Some(now_ns);
        self.window_end_copied_bytes = self.copied_bytes + window_bytes;
        sample
    }

    fn record(&mut self, sample_ns: u64, rtt_ns: f64) {
        self.rtt_ns = Some(rtt_ns);
        self.min_sample_ns = Some(self.min_sample_ns.map_or(sample_ns, |m| m.min(sample_ns)));
        let est = rtt_ns.round() as u64;
        self.min_estimate_ns = Some(self.min_estimate_ns.map_or(est, |m| m.min(est)));
    }
}

/// Bytes copied to the application in the current measurement period, which
/// ends once an RTT has passed since it began: Linux tcp_rcv_space_adjust's
/// `rcvq_space`, and DRWA's and RTAC's once-per-RTT update.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeliveryPerRtt {
    start_ns: Option<TimeNs>,
    bytes: u64,
}

impl DeliveryPerRtt {
    /// The first period begins at the first segment or copy.
    pub(crate) fn begin(&mut self, now_ns: TimeNs) {
        self.start_ns.get_or_insert(now_ns);
    }

    pub(crate) fn add(&mut self, now_ns: TimeNs, bytes: u64) {
        self.begin(now_ns);
        self.bytes += bytes;
    }

    /// The period's bytes if at least `rtt_ns` has passed since it began;
    /// the next period then begins now.
    pub(crate) fn take_if_rtt_passed(&mut self, now_ns: TimeNs, rtt_ns: f64) -> Option<u64> {
        let start = self.start_ns?;
        if (now_ns.saturating_sub(start) as f64) < rtt_ns {
            return None;
        }
        self.start_ns = Some(now_ns);
        Some(std::mem::take(&mut self.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn seg(now_ns: u64, payload_bytes: u32, ecr: Option<u64>) -> SegmentArrival {
        SegmentArrival {
            now_ns,
            payload_bytes,
            ts_val_ns: ecr.map(|_| now_ns),
            ts_ecr_ns: ecr,
        }
    }

    #[test]
    fn timestamp_samples_are_averaged_with_gain_beta() {
        let mut r = ReceiverRtt::new(0.125, 1000);
        assert_eq!(r.on_segment(&seg(100 * MS, 1000, Some(20 * MS))), Some(80 * MS));
        assert_eq!(r.rtt_ns(), Some(80e6));
        // 0.875·80 + 0.125·40 = 75 ms.
        assert_eq!(r.on_segment(&seg(200 * MS, 1000, Some(160 * MS))), Some(40 * MS));
        assert_eq!(r.rtt_ns(), Some(75e6));
        // 0.875·75 + 0.125·120 = 80.625 ms.
        r.on_segment(&seg(400 * MS, 1200, Some(280 * MS)));
        assert_eq!(r.rtt_ns(), Some(80.625e6));
        assert_eq!(r.min_sample_ns(), Some(40 * MS));
        assert_eq!(r.min_estimate_ns(), Some(75 * MS));
    }

    #[test]
    fn one_sample_per_echo_and_only_from_full_segments() {
        let mut r = ReceiverRtt::new(0.125, 1000);
        assert_eq!(r.on_segment(&seg(100 * MS, 1000, Some(50 * MS))), Some(50 * MS));
        // The rest of the burst echoes the same TSval: no sample.
        assert_eq!(r.on_segment(&seg(101 * MS, 1000, Some(50 * MS))), None);
        // A short segment consumes its echo without a sample (as Linux).
        assert_eq!(r.on_segment(&seg(150 * MS, 999, Some(120 * MS))), None);
        assert_eq!(r.on_segment(&seg(151 * MS, 1000, Some(120 * MS))), None);
        // A SYN's zero echo is ignored.
        assert_eq!(r.on_segment(&seg(152 * MS, 1000, Some(0))), None);
        assert_eq!(r.rtt_ns(), Some(50e6));
        // With timestamps the window method stays off.
        assert_eq!(r.on_copied(300 * MS, 1 << 20, 1000), None);
        assert_eq!(r.on_copied(900 * MS, 1 << 20, 1000), None);
    }

    #[test]
    fn without_timestamps_the_time_to_advance_one_window_is_a_running_minimum() {
        let mut r = ReceiverRtt::new(0.125, 1000);
        assert_eq!(r.on_segment(&seg(0, 1000, None)), None);
        // Measurement starts at t = 10 ms, ends once 10 000 more bytes are copied.
        assert_eq!(r.on_copied(10 * MS, 1000, 10_000), None);
        assert_eq!(r.on_copied(50 * MS, 9_999, 10_000), None);
        assert_eq!(r.on_copied(70 * MS, 1, 20_000), Some(60 * MS));
        assert_eq!(r.rtt_ns(), Some(60e6));
        // Next: from 70 ms until 20 000 bytes: 90 ms (larger, the minimum stays).
        assert_eq!(r.on_copied(160 * MS, 20_000, 20_000), Some(90 * MS));
        assert_eq!(r.rtt_ns(), Some(60e6));
        assert_eq!(r.on_copied(200 * MS, 20_000, 20_000), Some(40 * MS));
        assert_eq!(r.rtt_ns(), Some(40e6));
        assert_eq!(r.min_sample_ns(), Some(40 * MS));
    }
}
