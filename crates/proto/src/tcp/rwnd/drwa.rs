//! DRWA, Dynamic Receive Window Adjustment (H. Jiang, Y. Wang, K. Lee,
//! I. Rhee, "Tackling Bufferbloat in 3G/4G Networks", IMC 2012, Algorithm 1).
//!
//! Once per receiver RTT estimate, on copy to the application:
//!
//! - `ŵ ← α·ŵ + (1 − α)·bytes_this_RTT` (α = 7/8; the first ŵ is the
//!   first RTT's bytes);
//! - `rwnd ← λ·(RTT_min/RTT_est)·ŵ` (λ = 3).
//!
//! RTT_est is the receiver's estimate ([`ReceiverRtt`]: timestamps with
//! gain 1/8, else the window method) and RTT_min the smallest value it has
//! taken (the paper: "if RTT_est < RTT_min then RTT_min ← RTT_est").
//! While RTT_est stays below λ·RTT_min the window grows (by up to
//! (λ − 1)·(1 − α) = 25 % per RTT) and above it shrinks. When the window
//! binds, the bytes per RTT equal the window, so the fixed point is
//! rwnd = λ·RTT_min·C (λ BDPs in flight, RTT_est = λ·RTT_min at a
//! bottleneck of rate C): Vegas at the receiver. Like Vegas it yields to loss-based flows that
//! share its buffer. The window is capped by `tcp_rmem_max` (DRWA runs on
//! top of Linux's buffer) and is at least two segments.

use super::rtt::{DeliveryPerRtt, ReceiverRtt};
use super::{
    set_window_knob, validate_windows, window_bytes, RwndController, RwndParams, SegmentArrival,
    DEFAULT_INITIAL_RWND_BYTES, DEFAULT_RMEM_MAX_BYTES, INITIAL_RWND_ABOUT, RMEM_MAX_ABOUT,
};
use crate::knobs::{knob_real, Knob, Knobs};
use crate::tcp::config::TcpConfig;
use crate::TimeNs;

/// The RTT gain of the receiver's estimate (Linux's, which DRWA reuses).
const RTT_GAIN: f64 = 0.125;

/// DRWA's constants (the paper's in [`Default`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrwaParams {
    /// λ: how far above the current delivery the window may open.
    pub lambda: f64,
    /// α: weight of the old estimate in the EWMA of per-RTT delivery.
    pub alpha: f64,
    pub rmem_max_bytes: u64,
    pub initial_rwnd_bytes: u64,
}

impl Default for DrwaParams {
    fn default() -> Self {
        DrwaParams {
            lambda: 3.0,
            alpha: 0.875,
            rmem_max_bytes: DEFAULT_RMEM_MAX_BYTES,
            initial_rwnd_bytes: DEFAULT_INITIAL_RWND_BYTES,
        }
    }
}

impl Knobs for DrwaParams {
    const KNOBS: &'static [Knob] = &[
        Knob {
            key: "lambda",
            about: "window over delivery at RTT_min, (1, 100]; default 3",
        },
        Knob {
            key: "alpha",
            about: "EWMA weight of the old delivery estimate, [0, 1); default 0.875",
        },
        Knob {
            key: "rmem_max_bytes",
            about: RMEM_MAX_ABOUT,
        },
        Knob {
            key: "initial_rwnd_bytes",
            about: INITIAL_RWND_ABOUT,
        },
    ];

    fn set(&mut self, key: &str, value: f64) -> Option<()> {
        match key {
            "lambda" => self.lambda = knob_real(value, |v| v > 1.0 && v <= 100.0)?,
            "alpha" => self.alpha = knob_real(value, |v| (0.0..1.0).contains(&v))?,
            _ => return set_window_knob(key, value, &mut self.rmem_max_bytes, &mut self.initial_rwnd_bytes),
        }
        Some(())
    }

    fn validate(&self) -> Result<(), String> {
        if !(self.lambda > 1.0 && self.lambda <= 100.0) {
            return Err(format!("drwa lambda must be in (1, 100], got {}", self.lambda));
        }
        if !(0.0..1.0).contains(&self.alpha) {
            return Err(format!("drwa alpha must be in [0, 1), got {}", self.alpha));
        }
        validate_windows("drwa", self.rmem_max_bytes, self.initial_rwnd_bytes)
    }
}

impl RwndParams for DrwaParams {
    fn build(&self, cfg: &TcpConfig) -> Box<dyn RwndController> {
        Box::new(Drwa::new(*self, cfg.mss_bytes as u64))
    }
}

/// The DRWA receiver.
#[derive(Clone, Debug)]
pub struct Drwa {
    p: DrwaParams,
    mss_bytes: u64,
    rtt: ReceiverRtt,
    rwnd_bytes: u64,
    /// ŵ, bytes per RTT (None before the first RTT's count).
    cwnd_est_bytes: Option<f64>,
    /// Bytes copied in the current RTT.
    delivered: DeliveryPerRtt,
}

impl Drwa {
    pub fn new(p: DrwaParams, mss_bytes: u64) -> Self {
        Drwa {
            p,
            mss_bytes,
            rtt: ReceiverRtt::new(RTT_GAIN, mss_bytes),
            rwnd_bytes: p.initial_rwnd_bytes.min(p.rmem_max_bytes),
            cwnd_est_bytes: None,
            delivered: DeliveryPerRtt::default(),
        }
    }

    /// ŵ, bytes per RTT.
    pub fn cwnd_est_bytes(&self) -> Option<f64> {
        self.cwnd_est_bytes
    }
}

impl RwndController for Drwa {
    fn name(&self) -> &'static str {
        "drwa"
    }

    fn on_segment(&mut self, a: &SegmentArrival) {
        self.delivered.begin(a.now_ns);
        self.rtt.on_segment(a);
    }

    fn on_copied(&mut self, now_ns: TimeNs, bytes: u64) {
        self.rtt.on_copied(now_ns, bytes, self.rwnd_bytes);
        self.delivered.add(now_ns, bytes);
        let (Some(rtt_ns), Some(min_ns)) = (self.rtt.rtt_ns(), self.rtt.min_estimate_ns()) else {
            return;
        };
        let Some(copied) = self.delivered.take_if_rtt_passed(now_ns, rtt_ns) else {
            return;
        };
        let copied = copied as f64;
        let est = match self.cwnd_est_bytes {
            None => copied,
            Some(w) => self.p.alpha * w + (1.0 - self.p.alpha) * copied,
        };
        self.cwnd_est_bytes = Some(est);
        let want = self.p.lambda * (min_ns as f64 / rtt_ns) * est;
        self.rwnd_bytes = window_bytes(want, self.mss_bytes, self.p.rmem_max_bytes);
    }

    fn rwnd_bytes(&self) -> u64 {
        self.rwnd_bytes
    }

    fn rtt_ns(&self) -> Option<u64> {
        self.rtt.rtt_ns().map(|r| r.round() as u64)
    }

    fn window_est_bytes(&self) -> Option<f64> {
        self.cwnd_est_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    use super::super::timestamped_arrival as ts;

    #[test]
    fn lambda_times_delivery_scaled_by_rtt_min_over_rtt() {
        let mut d = Drwa::new(DrwaParams::default(), 1000);
        d.on_segment(&ts(110 * MS, 10 * MS)); // RTT 100 ms
        d.on_copied(110 * MS, 1000);
        d.on_copied(150 * MS, 20_000);
        assert_eq!(d.rwnd_bytes(), 65_535);
        // First RTT: ŵ = 40 000, rwnd = 3·(100/100)·40 000.
        d.on_copied(210 * MS, 19_000);
        assert_eq!(d.cwnd_est_bytes(), Some(40_000.0));
        assert_eq!(d.rwnd_bytes(), 120_000);
        // A 200 ms sample: RTT_est = 0.875·100 + 0.125·200 = 112.5 ms, RTT_min 100.
        d.on_segment(&ts(250 * MS, 50 * MS));
        // 112.5 ms have not passed at 320 ms.
        d.on_copied(320 * MS, 40_000);
        assert_eq!(d.rwnd_bytes(), 120_000);
        // At 330 ms: ŵ = 0.875·40 000 + 0.125·80 000 = 45 000;
        // rwnd = 3·(100/112.5)·45 000 = 120 000.
        d.on_copied(330 * MS, 40_000);
        assert_eq!(d.cwnd_est_bytes(), Some(45_000.0));
        assert_eq!(d.window_est_bytes(), d.cwnd_est_bytes());
        assert_eq!(d.rwnd_bytes(), 120_000);
    }

    #[test]
    fn window_stays_within_two_segments_and_rmem_max() {
        let p = DrwaParams {
            rmem_max_bytes: 100_000,
            ..Default::default()
        };
        let mut d = Drwa::new(p, 1000);
        d.on_segment(&ts(110 * MS, 10 * MS));
        d.on_copied(210 * MS, 50_000); // 150 000 wanted
        assert_eq!(d.rwnd_bytes(), 100_000);
        let mut d = Drwa::new(DrwaParams::default(), 1000);
        d.on_segment(&ts(110 * MS, 10 * MS));
        d.on_copied(210 * MS, 100); // 300 wanted
        assert_eq!(d.rwnd_bytes(), 2000);
    }
}
