//! RTAC, receiver-side TCP adaptive queue control (S. Im, C. Joo, T. Lee,
//! S. Bahk), Algorithm 1.
//!
//! The receiver emulates an AQM and advertises the window a Reno sender
//! would hold under that AQM's price, so the flow stays TCP-friendly
//! without filling the buffer. Reno's utility gives, at equilibrium,
//! `w = sqrt(a)·(RTT/RTT_m)/sqrt(q)` packets for a path price q (a = 3/2);
//! the emulated price grows with the estimated bottleneck queue Q̂:
//!
//! - on each data segment with a valid RTT sample (timestamps, or the
//!   window method without them; [`ReceiverRtt`]):
//!   `RTT ← (1 − β)·RTT + β·sample`, RTT_m = the smallest sample;
//! - on copy to the application, once per RTT: `pkts` = packets copied
//!   since the last update, `ŵ ← α·ŵ + (1 − α)·pkts`,
//!   `Q̂ = (RTT − RTT_m*)·ŵ/RTT`, `q̂ = K·(Q̂ + 1)`,
//!   `rwnd = sqrt(a)·(RTT/RTT_m*)/sqrt(q̂)` packets.
//!
//! RTT_m* = RTT_m + Δ: the minimum RTT measured on LTE and Wi-Fi falls
//! below the unloaded RTT (frame timing, link-layer retransmissions), which
//! would read as a standing queue; Δ compensates (the study: 18 ms LTE,
//! 8 ms Wi-Fi). Q̂ is never negative.
//!
//! K sets the operating point θ = RTT*/RTT_m (in flight θ·BDP): setting
//! rwnd = θ·BDP at RTT = θ·RTT_m gives `K = a/(θ − 1)·(1/BDP)³`
//! (BDP in packets; the "+1" in q̂ makes the fixed point a hair lower,
//! θ·BDP/sqrt(1 + 1/((θ − 1)·BDP))). Give K directly (`k`, the study's
//! 3·10⁻⁷ for LTE is the default), or `theta` with the bottleneck's
//! `link_rate_bps`, and K is computed at each update from BDP =
//! link rate × RTT_m*. The window is capped by `tcp_rmem_max` and is at
//! least two segments. It only binds when the sender's cwnd exceeds it,
//! so the sender's own congestion control still reacts to a congested
//! network.

use super::rtt::{DeliveryPerRtt, ReceiverRtt};
use super::{
    set_window_knob, validate_windows, window_bytes, RwndController, RwndParams, SegmentArrival,
    DEFAULT_INITIAL_RWND_BYTES, DEFAULT_RMEM_MAX_BYTES, INITIAL_RWND_ABOUT, RMEM_MAX_ABOUT,
};
use crate::knobs::{knob_real, Knob, Knobs};
use crate::tcp::config::TcpConfig;
use crate::TimeNs;

/// a in Reno's utility (equilibrium w = sqrt(2/(3p))·... gives a = 3/2).
const RENO_A: f64 = 1.5;

/// The study's K for LTE.
pub const DEFAULT_K: f64 = 3e-7;

/// RTAC's constants (the study's in [`Default`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RtacParams {
    /// α: weight of the old window estimate (study 1/8).
    pub alpha: f64,
    /// β: weight of a new RTT sample (study 1/8).
    pub beta: f64,
    /// K, the emulated AQM's price gain; None = from `theta` (or the default).
    pub k: Option<f64>,
    /// θ, the operating point RTT*/RTT_m; needs `link_rate_bps`.
    pub theta: Option<f64>,
    /// The bottleneck rate that, with RTT_m*, gives the BDP for K(θ).
    pub link_rate_bps: Option<f64>,
    /// Δ, added to the measured minimum RTT, ms.
    pub delta_ms: f64,
    pub rmem_max_bytes: u64,
    pub initial_rwnd_bytes: u64,
}

impl Default for RtacParams {
    fn default() -> Self {
        RtacParams {
            alpha: 0.125,
            beta: 0.125,
            k: None,
            theta: None,
            link_rate_bps: None,
            delta_ms: 0.0,
            rmem_max_bytes: DEFAULT_RMEM_MAX_BYTES,
            initial_rwnd_bytes: DEFAULT_INITIAL_RWND_BYTES,
        }
    }
}

impl Knobs for RtacParams {
    const KNOBS: &'static [Knob] = &[
        Knob {
            key: "alpha",
            about: "EWMA weight of the old window estimate, [0, 1); default 0.125",
        },
        Knob {
            key: "beta",
            about: "EWMA gain of a new RTT sample, (0, 1]; default 0.125",
        },
        Knob {
            key: "k",
            about: "price gain K, (0, 1]; default 3e-7 unless theta is set",
        },
        Knob {
            key: "theta",
            about: "operating point RTT*/RTT_min, (1, 10], with link_rate_bps (K = 1.5/(theta-1)/BDP^3)",
        },
        Knob {
            key: "link_rate_bps",
            about: "bottleneck rate for theta's BDP, bits/s, (0, 1e12]",
        },
        Knob {
            key: "delta_ms",
            about: "compensation added to the minimum RTT, ms, [0, 10000]; default 0",
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
            "alpha" => self.alpha = knob_real(value, |v| (0.0..1.0).contains(&v))?,
            "beta" => self.beta = knob_real(value, |v| v > 0.0 && v <= 1.0)?,
            "k" => self.k = Some(knob_real(value, |v| v > 0.0 && v <= 1.0)?),
            "theta" => self.theta = Some(knob_real(value, |v| v > 1.0 && v <= 10.0)?),
            "link_rate_bps" => self.link_rate_bps = Some(knob_real(value, |v| v > 0.0 && v <= 1e12)?),
            "delta_ms" => self.delta_ms = knob_real(value, |v| (0.0..=10_000.0).contains(&v))?,
            _ => return set_window_knob(key, value, &mut self.rmem_max_bytes, &mut self.initial_rwnd_bytes),
        }
        Some(())
    }

    fn validate(&self) -> Result<(), String> {
        if !(0.0..1.0).contains(&self.alpha) {
            return Err(format!("rtac alpha must be in [0, 1), got {}", self.alpha));
        }
        if !(self.beta > 0.0 && self.beta <= 1.0) {
            return Err(format!("rtac beta must be in (0, 1], got {}", self.beta));
        }
        if let Some(k) = self.k {
            if !(k > 0.0 && k <= 1.0) {
                return Err(format!("rtac k must be in (0, 1], got {k}"));
            }
            if self.theta.is_some() || self.link_rate_bps.is_some() {
                return Err("rtac takes either k or theta with link_rate_bps, not both".to_string());
            }
        }
        match (self.theta, self.link_rate_bps) {
            (Some(_), None) => {
                return Err("rtac theta needs link_rate_bps (K = 1.5/(theta-1)/BDP^3 needs the BDP)".into())
            }
            (None, Some(_)) => return Err("rtac link_rate_bps is only used with theta".into()),
            (Some(t), Some(r)) if !(t > 1.0 && t <= 10.0 && r > 0.0 && r <= 1e12) => {
                return Err(format!("rtac theta ({t}) or link_rate_bps ({r}) out of range"))
            }
            _ => {}
        }
        if !(0.0..=10_000.0).contains(&self.delta_ms) {
            return Err(format!(
                "rtac delta_ms must be in [0, 10000], got {}",
                self.delta_ms
            ));
        }
        validate_windows("rtac", self.rmem_max_bytes, self.initial_rwnd_bytes)
    }
}

impl RwndParams for RtacParams {
    fn build(&self, cfg: &TcpConfig) -> Box<dyn RwndController> {
        Box::new(Rtac::new(*self, cfg.mss_bytes as u64))
    }
}

/// The RTAC receiver.
#[derive(Clone, Debug)]
pub struct Rtac {
    p: RtacParams,
    mss_bytes: u64,
    rtt: ReceiverRtt,
    rwnd_bytes: u64,
    /// ŵ, packets per RTT (None before the first count).
    w_pkts: Option<f64>,
    /// Q̂, packets, at the last update.
    queue_pkts: f64,
    /// Bytes copied since the last update.
    delivered: DeliveryPerRtt,
}

impl Rtac {
    pub fn new(p: RtacParams, mss_bytes: u64) -> Self {
        Rtac {
            p,
            mss_bytes: mss_bytes.max(1),
            rtt: ReceiverRtt::new(p.beta, mss_bytes),
            rwnd_bytes: p.initial_rwnd_bytes.min(p.rmem_max_bytes),
            w_pkts: None,
            queue_pkts: 0.0,
            delivered: DeliveryPerRtt::default(),
        }
    }

    /// ŵ, packets per RTT.
    pub fn w_pkts(&self) -> Option<f64> {
        self.w_pkts
    }

    /// Q̂, the estimated bottleneck queue at the last update, packets.
    pub fn queue_pkts(&self) -> f64 {
        self.queue_pkts
    }

    /// K for a compensated minimum RTT of `rtt_m_ns`.
    fn k(&self, rtt_m_ns: f64) -> f64 {
        match (self.p.k, self.p.theta, self.p.link_rate_bps) {
            (Some(k), _, _) => k,
            (None, Some(theta), Some(rate_bps)) => {
                let bdp_pkts = (rate_bps * rtt_m_ns / 1e9 / (8.0 * self.mss_bytes as f64)).max(1.0);
                RENO_A / (theta - 1.0) / bdp_pkts.powi(3)
            }
            _ => DEFAULT_K,
        }
    }
}

impl RwndController for Rtac {
    fn name(&self) -> &'static str {
        "rtac"
    }

    fn on_segment(&mut self, a: &SegmentArrival) {
        self.delivered.begin(a.now_ns);
        self.rtt.on_segment(a);
    }

    fn on_copied(&mut self, now_ns: TimeNs, bytes: u64) {
        self.rtt.on_copied(now_ns, bytes, self.rwnd_bytes);
        self.delivered.add(now_ns, bytes);
        let (Some(rtt_ns), Some(min_ns)) = (self.rtt.rtt_ns(), self.rtt.min_sample_ns()) else {
            return;
        };
        let Some(copied) = self.delivered.take_if_rtt_passed(now_ns, rtt_ns) else {
            return;
        };
        let pkts = copied as f64 / self.mss_bytes as f64;
        let w = match self.w_pkts {
            None => pkts,
            Some(w) => self.p.alpha * w + (1.0 - self.p.alpha) * pkts,
        };
        self.w_pkts = Some(w);
        let rtt_m_ns = min_ns as f64 + self.p.delta_ms * 1e6;
        self.queue_pkts = ((rtt_ns - rtt_m_ns) * w / rtt_ns).max(0.0);
        let price = self.k(rtt_m_ns) * (self.queue_pkts + 1.0);
        let rwnd_pkts = RENO_A.sqrt() * (rtt_ns / rtt_m_ns) / price.sqrt();
        self.rwnd_bytes = window_bytes(
            rwnd_pkts * self.mss_bytes as f64,
            self.mss_bytes,
            self.p.rmem_max_bytes,
        );
    }

    fn rwnd_bytes(&self) -> u64 {
        self.rwnd_bytes
    }

    fn rtt_ns(&self) -> Option<u64> {
        self.rtt.rtt_ns().map(|r| r.round() as u64)
    }

    fn window_est_bytes(&self) -> Option<f64> {
        self.w_pkts.map(|w| w * self.mss_bytes as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    use super::super::timestamped_arrival as ts;

    #[test]
    fn algorithm_1_by_hand() {
        let p = RtacParams {
            k: Some(1e-4),
            ..Default::default()
        };
        let mut r = Rtac::new(p, 1000);
        r.on_segment(&ts(110 * MS, 10 * MS)); // RTT = RTT_m = 100 ms
        r.on_copied(150 * MS, 20_000);
        assert_eq!(r.rwnd_bytes(), 65_535);
        // pkts = 40, ŵ = 40, Q̂ = 0, q̂ = 1e-4: rwnd = sqrt(1.5)/0.01 = 122.47 packets.
        r.on_copied(210 * MS, 20_000);
        assert_eq!(r.w_pkts(), Some(40.0));
        assert_eq!(r.rwnd_bytes(), 122_474);
        // A 200 ms sample: RTT = 0.875·100 + 0.125·200 = 112.5 ms; RTT_m 100.
        r.on_segment(&ts(250 * MS, 50 * MS));
        // At 330 ms: pkts = 80, ŵ = 0.125·40 + 0.875·80 = 75,
        // Q̂ = 12.5·75/112.5 = 8.333, q̂ = 9.333e-4,
        // rwnd = sqrt(1.5)·1.125/sqrt(9.333e-4) = 45.100 packets.
        r.on_copied(330 * MS, 80_000);
        assert_eq!(r.w_pkts(), Some(75.0));
        assert_eq!(r.window_est_bytes(), Some(75_000.0));
        assert_eq!(r.rtt_ns(), Some(112_500_000));
        assert!((r.queue_pkts() - 25.0 / 3.0).abs() < 1e-9);
        assert_eq!(r.rwnd_bytes(), 45_100);
    }

    #[test]
    fn theta_sets_the_fixed_point_at_theta_bdp() {
        // 8 Mb/s, RTT_m 100 ms, 1000-byte packets: BDP 100 packets. θ = 1.5.
        let p = RtacParams {
            alpha: 0.0,
            beta: 1.0,
            theta: Some(1.5),
            link_rate_bps: Some(8e6),
            ..Default::default()
        };
        let mut r = Rtac::new(p, 1000);
        r.on_segment(&ts(110 * MS, 10 * MS)); // RTT_m 100 ms
        r.on_segment(&ts(300 * MS, 150 * MS)); // RTT 150 ms = θ·RTT_m
                                               // 150 packets per 150 ms: in flight θ·BDP with Q̂ = 50.
        r.on_copied(300 * MS, 150_000);
        assert_eq!(r.queue_pkts(), 50.0);
        // K = 1.5/0.5/100³ = 3e-6; rwnd = 150/sqrt(1 + 1/50) = 148.52 packets.
        assert_eq!(r.rwnd_bytes(), 148_522);
    }

    #[test]
    fn delta_raises_rtt_min_and_the_queue_estimate_never_goes_negative() {
        let p = RtacParams {
            k: Some(1e-4),
            delta_ms: 50.0,
            ..Default::default()
        };
        let mut r = Rtac::new(p, 1000);
        r.on_segment(&ts(110 * MS, 10 * MS)); // RTT 100 ms, RTT_m* = 150 ms
        r.on_copied(210 * MS, 40_000);
        assert_eq!(r.queue_pkts(), 0.0);
        // rwnd = sqrt(1.5)·(100/150)/0.01 = 81.65 packets.
        assert_eq!(r.rwnd_bytes(), 81_650);
    }
}
