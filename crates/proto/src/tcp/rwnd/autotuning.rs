//! Linux receive-buffer auto-tuning: Dynamic Right-Sizing (Fisk & Feng,
//! 2001) as `tcp_rcv_space_adjust` does it (net/ipv4/tcp_input.c).
//!
//! Once per receiver RTT estimate (measured on copy to the application),
//! the bytes copied in that RTT are compared with the largest such count so
//! far (`rcvq_space.space`); when larger, the buffer and the window grow to
//! twice it (room for the sender to double its window in slow start and
//! still be covered), never beyond `tcp_rmem[2]`:
//!
//! `rwnd = min(max(2·ŵ*, initial), tcp_rmem_max)`, ŵ* the largest per-RTT
//! delivery so far.
//!
//! The window never shrinks: auto-tuning sizes a buffer and only grows it.
//! Left out of Linux's rule: its 16-segment cushion and the extra growth
//! term for a sender still in slow start (`rcvwin += 16·advmss`,
//! `grow = rcvwin·(copied − space)/space`), and the buffer-to-window
//! overhead ratio (the window here is the whole buffer). A sender whose
//! window is at least twice its delivery is not limited by this receiver,
//! so on a bloated path the flow fills the buffer until `tcp_rmem_max` or
//! a loss stops it: the bufferbloat DRWA and RTAC set out to remove.

use super::rtt::{DeliveryPerRtt, ReceiverRtt};
use super::{
    set_window_knob, validate_windows, RwndController, RwndParams, SegmentArrival,
    DEFAULT_INITIAL_RWND_BYTES, DEFAULT_RMEM_MAX_BYTES, INITIAL_RWND_ABOUT, RMEM_MAX_ABOUT,
};
use crate::knobs::{Knob, Knobs};
use crate::tcp::config::TcpConfig;
use crate::TimeNs;

/// Linux's receiver RTT gain (`tcp_rcv_rtt_update`: 1/8).
const LINUX_RCV_RTT_GAIN: f64 = 0.125;

/// Auto-tuning's constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutotuningParams {
    /// `tcp_rmem[2]`: the largest window, bytes.
    pub rmem_max_bytes: u64,
    /// The window until the first adjustment, bytes.
    pub initial_rwnd_bytes: u64,
}

impl Default for AutotuningParams {
    fn default() -> Self {
        AutotuningParams {
            rmem_max_bytes: DEFAULT_RMEM_MAX_BYTES,
            initial_rwnd_bytes: DEFAULT_INITIAL_RWND_BYTES,
        }
    }
}

impl Knobs for AutotuningParams {
    const KNOBS: &'static [Knob] = &[
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
        set_window_knob(key, value, &mut self.rmem_max_bytes, &mut self.initial_rwnd_bytes)
    }

    fn validate(&self) -> Result<(), String> {
        validate_windows("autotuning", self.rmem_max_bytes, self.initial_rwnd_bytes)
    }
}

impl RwndParams for AutotuningParams {
    fn build(&self, cfg: &TcpConfig) -> Box<dyn RwndController> {
        Box::new(Autotuning::new(*self, cfg.mss_bytes as u64))
    }
}

/// The auto-tuning receiver.
#[derive(Clone, Debug)]
pub struct Autotuning {
    p: AutotuningParams,
    rtt: ReceiverRtt,
    rwnd_bytes: u64,
    /// ŵ*: the most bytes copied in one RTT so far (`rcvq_space.space`).
    space_bytes: u64,
    /// Bytes copied in the current RTT (`copied_seq − rcvq_space.seq`).
    delivered: DeliveryPerRtt,
    /// Bytes copied in the last whole RTT measured: Linux's per-RTT count
    /// before it is folded into ŵ* (None before the first).
    last_rtt_bytes: Option<u64>,
}

impl Autotuning {
    pub fn new(p: AutotuningParams, mss_bytes: u64) -> Self {
        Autotuning {
            p,
            rtt: ReceiverRtt::new(LINUX_RCV_RTT_GAIN, mss_bytes),
            rwnd_bytes: p.initial_rwnd_bytes.min(p.rmem_max_bytes),
            space_bytes: 0,
            delivered: DeliveryPerRtt::default(),
            last_rtt_bytes: None,
        }
    }

    /// ŵ*, bytes.
    pub fn space_bytes(&self) -> u64 {
        self.space_bytes
    }
}

impl RwndController for Autotuning {
    fn name(&self) -> &'static str {
        "autotuning"
    }

    fn on_segment(&mut self, a: &SegmentArrival) {
        self.delivered.begin(a.now_ns);
        self.rtt.on_segment(a);
    }

    fn on_copied(&mut self, now_ns: TimeNs, bytes: u64) {
        self.rtt.on_copied(now_ns, bytes, self.rwnd_bytes);
        self.delivered.add(now_ns, bytes);
        // Linux: no adjustment before the first RTT estimate, nor within one.
        let Some(rtt_ns) = self.rtt.rtt_ns() else { return };
        let Some(copied) = self.delivered.take_if_rtt_passed(now_ns, rtt_ns) else {
            return;
        };
        self.last_rtt_bytes = Some(copied);
        if copied > self.space_bytes {
            self.space_bytes = copied;
            let want = self.space_bytes.saturating_mul(2).max(self.p.initial_rwnd_bytes);
            self.rwnd_bytes = self.rwnd_bytes.max(want.min(self.p.rmem_max_bytes));
        }
    }

    fn rwnd_bytes(&self) -> u64 {
        self.rwnd_bytes
    }

    fn rtt_ns(&self) -> Option<u64> {
        self.rtt.rtt_ns().map(|r| r.round() as u64)
    }

    fn window_est_bytes(&self) -> Option<f64> {
        self.last_rtt_bytes.map(|b| b as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    use super::super::timestamped_arrival as ts;

    #[test]
    fn twice_the_largest_delivery_per_rtt_capped_by_rmem_max() {
        let p = AutotuningParams {
            rmem_max_bytes: 150_000,
            initial_rwnd_bytes: 65_535,
        };
        let mut a = Autotuning::new(p, 1000);
        // RTT 100 ms; the first measurement starts at the first segment (110 ms).
        a.on_segment(&ts(110 * MS, 10 * MS));
        a.on_copied(110 * MS, 1000);
        a.on_copied(150 * MS, 20_000);
        assert_eq!(a.rwnd_bytes(), 65_535);
        // 100 ms after the start: 40 000 bytes in the RTT → 80 000.
        a.on_copied(210 * MS, 19_000);
        assert_eq!((a.space_bytes(), a.rwnd_bytes()), (40_000, 80_000));
        assert_eq!(a.window_est_bytes(), Some(40_000.0));
        // Less than the largest so far: nothing changes (the window never shrinks),
        // but the per-RTT estimate is the last RTT's count.
        a.on_copied(310 * MS, 30_000);
        assert_eq!((a.space_bytes(), a.rwnd_bytes()), (40_000, 80_000));
        assert_eq!(a.window_est_bytes(), Some(30_000.0));
        // 100 000 bytes: 200 000 wanted, capped at 150 000.
        a.on_copied(410 * MS, 100_000);
        assert_eq!((a.space_bytes(), a.rwnd_bytes()), (100_000, 150_000));
        assert_eq!(a.rtt_ns(), Some(100 * MS));
    }

    #[test]
    fn no_adjustment_before_an_rtt_estimate() {
        let mut a = Autotuning::new(AutotuningParams::default(), 1000);
        // Without timestamps the first window-based sample needs one window copied.
        a.on_segment(&SegmentArrival {
            now_ns: 0,
            payload_bytes: 1000,
            ..Default::default()
        });
        a.on_copied(0, 1000);
        a.on_copied(50 * MS, 60_000);
        assert_eq!(a.rwnd_bytes(), 65_535);
        // 65 535 bytes copied since 0 ms took 80 ms: RTT 80 ms; 80 ms since
        // the start, 80 535 bytes copied → 161 070.
        a.on_copied(80 * MS, 19_535);
        assert_eq!(a.rtt_ns(), Some(80 * MS));
        assert_eq!(a.rwnd_bytes(), 161_070);
    }
}
